//! The worker's waits with nothing in flight: pacing (rates, think time,
//! flow, the latency target's and stepped depth's steps) and a timed
//! replay's next I/O. All cold: a job without them never calls them.

use super::super::pacing::PaceEvent;
use super::{record_error, Clock, SlotMeta, Worker};
use crate::engines::Engine;
use crate::verify::BlockHook;
use std::sync::atomic::Ordering;

impl<E: Engine, H: BlockHook, C: Clock> Worker<'_, E, H, C> {
    /// Nothing in flight and the next replayed I/O not yet due: sleep until it is.
    #[cold]
    pub(super) fn sleep_for_replay(&mut self) {
        let wait = self.replay_due.saturating_sub(self.clk.now());
        // In slices, so a stop is seen soon.
        self.clk.sleep(wait.min(50_000_000));
        self.now = self.clk.now();
        self.check_stop();
    }

    /// Pacing holds back with nothing in flight: think, wait for the rate
    /// or the flow. The sleep ends early on a stop, and never runs past
    /// the job's end.
    #[cold]
    pub(super) fn pace_wait(&mut self) {
        let from = self.clk.now();
        let until = self.pace.wait(from, self.tl.end);
        let mut now = self.clk.now();
        while now < until && !self.stop.load(Ordering::Relaxed) {
            if dioscope_sys::signal::stop_count() > 0 || self.prog.halt.load(Ordering::Relaxed) {
                break;
            }
            self.clk.sleep((until - now).min(20_000_000));
            now = self.clk.now();
        }
        if until <= from {
            // Nothing to wait for (a drained queue, a zero flow_sleep): let others run.
            std::thread::yield_now();
            now = self.clk.now();
        }
        self.pace.woke(from, now);
        self.now = now;
        self.check_stop();
    }

    /// After a batch: the rate floor, the latency target's window.
    #[cold]
    pub(super) fn pace_tick(&mut self) {
        let d = &self.res.dirs;
        let done = [[d[0].ios, d[1].ios], [d[0].bytes, d[1].bytes]];
        let ev = self.pace.tick(self.now, done, self.tl.measuring);
        self.pace_event(ev, None);
    }

    #[cold]
    #[inline(never)]
    pub(super) fn pace_event(&mut self, ev: PaceEvent, slot: Option<u32>) {
        // What was reaped before this event is recorded before it (a reset
        // forgets it, as it did when every I/O was recorded at once).
        self.run.flush(&mut self.res.dirs, self.now);
        match ev {
            PaceEvent::Nothing => {}
            PaceEvent::ResetStats => {
                if self.tl.measuring {
                    self.start_measuring();
                }
            }
            PaceEvent::Done => self.issuing = false,
            PaceEvent::StepRun => {
                self.step_restore();
                if let Some(k) = &mut self.steps {
                    k.run_starts(self.now);
                }
            }
            PaceEvent::StepDrop => {
                // The probe's run: ended, and not part of the measurement.
                if let Some(k) = &mut self.steps {
                    k.in_run = false;
                }
                self.step_restore();
            }
            PaceEvent::StepKeep(m) => {
                if let Some(k) = &mut self.steps {
                    k.run_ends(&self.res.dirs, self.now, Some(m));
                }
                if m.last {
                    self.issuing = false;
                }
            }
            PaceEvent::Fail(errno, msg) => {
                // The I/O that was late, or none (a rate floor).
                let none = SlotMeta {
                    stage_ns: 0,
                    commit_ns: 0,
                    offset: 0,
                    len: 0,
                    file: 0,
                    write: false,
                    prio: 0,
                };
                let m = slot.map_or(&none, |s| &self.slots.meta[s as usize]);
                record_error(&mut self.res, m, -errno);
                if self.res.fatal_errno == 0 {
                    self.res.fatal_errno = errno;
                }
                self.res.setup_note = Some(match self.res.setup_note.take() {
                    Some(a) => format!("{a}; {msg}"),
                    None => msg,
                });
                self.issuing = false;
            }
        }
    }
}
