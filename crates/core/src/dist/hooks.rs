//! The runner's trial hooks of a distributed run: the start barrier,
//! stonewalling, and the agreements after each trial.

use super::Dist;
use crate::job::RankStonewall;
use crate::results::ranks::Window;
use crate::runner::TrialHooks;

/// Wall-clock nanoseconds (comparable between ranks as far as the hosts'
/// clocks agree; on one host exactly).
pub fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// How often a rank looks for another rank's "done" while stonewalling.
const POLL_NS: u64 = 2_000_000;

pub(super) struct DistHooks<'a> {
    d: &'a Dist,
    mode: RankStonewall,
    /// One per trial run, in order.
    pub windows: Vec<Window>,
    cur: Window,
    /// This rank told the others it is done (this trial).
    sent: bool,
    /// Done messages received this trial.
    received: u32,
    /// The first rank's "done" was seen (its own or a message).
    first_seen: bool,
    last: (u64, u64),
}

impl<'a> DistHooks<'a> {
    pub fn new(d: &'a Dist, mode: RankStonewall) -> DistHooks<'a> {
        DistHooks {
            d,
            mode,
            windows: Vec::new(),
            cur: Window::default(),
            sent: false,
            received: 0,
            first_seen: false,
            last: (0, 0),
        }
    }

    fn mark_first(&mut self, ios: u64, bytes: u64) {
        if !self.first_seen {
            self.first_seen = true;
            self.cur.ios_first_done = ios;
            self.cur.bytes_first_done = bytes;
        }
    }
}

impl TrialHooks for DistHooks<'_> {
    fn workers_ready(&mut self, group: u32, trial: u32) {
        self.cur = Window {
            group,
            trial,
            ..Window::default()
        };
        self.sent = false;
        self.received = 0;
        self.first_seen = false;
        self.last = (0, 0);
        // Every rank's workers start together: the windows overlap.
        self.d
            .barrier(&format!("the start of group {group} trial {}", trial + 1));
    }

    fn measure_start(&mut self, _group: u32, _trial: u32) {
        self.cur.start_ns = wall_ns();
    }

    fn poll_every_ns(&self) -> u64 {
        match self.mode {
            RankStonewall::Off => 1_000_000_000,
            _ => POLL_NS,
        }
    }

    fn stop_requested(&mut self, group: u32, trial: u32, ios: u64, bytes: u64, done: bool) -> bool {
        self.last = (ios, bytes);
        if done && self.cur.done_ns == 0 {
            self.cur.done_ns = wall_ns();
        }
        if self.mode == RankStonewall::Off {
            return false;
        }
        if done && !self.sent {
            self.sent = true;
            self.mark_first(ios, bytes);
            self.d
                .send_done([group as u64, trial as u64, self.cur.done_ns]);
        }
        while let Some(_m) = self.d.poll_done() {
            self.received += 1;
            self.mark_first(ios, bytes);
        }
        self.mode == RankStonewall::Stop && self.received > 0
    }

    fn measure_end(&mut self, _group: u32, _trial: u32, ios: u64) {
        self.cur.end_ns = wall_ns();
        if self.cur.done_ns == 0 {
            self.cur.done_ns = self.cur.end_ns;
        }
        self.cur.ios = ios;
        self.cur.bytes = self.last.1;
    }

    fn after_trial(
        &mut self,
        _group: u32,
        _trial: u32,
        _jobs: &[&crate::runner::ResolvedJob],
        _table: &crate::targets::TargetTable,
    ) {
        if self.mode != RankStonewall::Off {
            // Every rank sends one "done" per trial: collect the rest, so
            // none is left over for the next trial.
            while self.received + 1 < self.d.size as u32 {
                self.d.recv_done();
                self.received += 1;
            }
        }
        if !self.first_seen {
            // Not stonewalling: `merge::RankReport::new` fills in the totals.
            self.cur.ios_first_done = u64::MAX;
            self.cur.bytes_first_done = u64::MAX;
        }
        self.windows.push(std::mem::take(&mut self.cur));
    }

    fn agree_stop(&mut self, mine: bool) -> bool {
        self.d.decide(&mine, "the end of a trial", |all| {
            all.into_iter().any(|x| x)
        })
    }

    fn agree_enough(&mut self, mine: bool) -> bool {
        // trials=auto: rank 0 decides (its own trials' spread), all follow.
        self.d.decide(&mine, "trials=auto's decision", |all| all[0])
    }
}
