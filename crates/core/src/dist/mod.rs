//! Distributed runs: `mpirun -np N dioscope run …` (docs/DISTRIBUTED.md).
//!
//! Built only with the `mpi` feature and used only when the process was
//! started by OpenMPI's launcher (`OMPI_COMM_WORLD_SIZE` set); otherwise
//! dioscope never touches MPI. Every rank parses and runs the same jobs;
//! they agree at fixed points (parsed, preflight passed, laid out, each
//! trial's start, each trial's end) and rank 0 merges the measurements —
//! counters summed, latency histograms merged bucket by bucket — into one
//! result.
//!
//! Only the main thread calls MPI (`Threading::Funneled`); the workers never
//! see it. Every wait on another rank is a non-blocking request polled with
//! a deadline (`--rank_timeout`): a rank that stops answering makes the run
//! abort on every rank with a message naming it, never hang. A rank that is
//! killed is noticed by `mpirun` itself, which ends the others and names it.
//!
//! All of this sits in one module (not a crate of its own) because it needs
//! the runner's trial hooks, the command's steps and the result model, and a
//! cargo feature on `dioscope-core` forwarded by the binary is one line each.

pub mod hooks;
pub mod merge;
pub mod run;

use mpi::environment::Universe;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::{Duration, Instant};

const TAG_GATHER: i32 = 11;
const TAG_BCAST: i32 = 12;
/// A rank finished its work (stonewalling): [group, trial, wall ns].
pub(crate) const TAG_DONE: i32 = 13;

/// Default longest wait for another rank in one collective step.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// This process's place in a distributed run.
pub struct Dist {
    world: SimpleCommunicator,
    pub rank: i32,
    pub size: i32,
    pub host: String,
    pub timeout: Duration,
    // Last, so dropped last: finalizes MPI.
    _universe: Universe,
}

impl Dist {
    /// MPI, when this process was started by mpirun; `None` otherwise
    /// (the run is then exactly a single-process one).
    pub fn from_env() -> Option<Dist> {
        std::env::var_os("OMPI_COMM_WORLD_SIZE")?;
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)?;
        let world = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        Some(Dist {
            rank: world.rank(),
            size: world.size(),
            _universe: universe,
            world,
            host,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// `rank R (host H)`, for messages.
    pub fn me(&self) -> String {
        format!("rank {} (host {})", self.rank, self.host)
    }

    /// End the run on every rank now: the message, then MPI_Abort.
    pub fn abort(&self, why: &str) -> ! {
        eprintln!(
            "dioscope: error: {}: {why}; aborting the run on every rank",
            self.me()
        );
        self.world.abort(3)
    }

    /// Poll `f` until it yields, or abort after the timeout naming `what`.
    fn wait_for<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + self.timeout;
        let mut pause = Duration::from_micros(20);
        loop {
            if let Some(x) = f() {
                return x;
            }
            if Instant::now() >= deadline {
                self.abort(&format!(
                    "no answer within {} s while {what} (--rank_timeout sets the limit)",
                    self.timeout.as_secs()
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// Every rank reaches this point (with the timeout).
    pub fn barrier(&self, what: &str) {
        let mut req = Some(self.world.immediate_barrier());
        self.wait_for(&format!("waiting for every rank at {what}"), || {
            match req.take()?.test() {
                Ok(_) => Some(()),
                Err(r) => {
                    req = Some(r);
                    None
                }
            }
        });
    }

    /// Send `bytes` to `rank` without blocking past the timeout.
    fn send_bytes(&self, rank: i32, tag: i32, bytes: &[u8], what: &str) {
        let p = self.world.process_at_rank(rank);
        mpi::request::scope(|scope| {
            let mut req = Some(p.immediate_send_with_tag(scope, bytes, tag));
            self.wait_for(&format!("sending {what} to rank {rank}"), || {
                match req.take()?.test() {
                    Ok(_) => Some(()),
                    Err(r) => {
                        req = Some(r);
                        None
                    }
                }
            });
        });
    }

    fn recv_bytes(&self, rank: i32, tag: i32, what: &str) -> Vec<u8> {
        let p = self.world.process_at_rank(rank);
        let msg = self.wait_for(&format!("waiting for {what} from rank {rank}"), || {
            p.immediate_matched_probe_with_tag(tag)
        });
        msg.matched_receive_vec::<u8>().0
    }

    /// Every rank's `mine`, on rank 0 (in rank order); `None` elsewhere.
    fn gather(&self, mine: Vec<u8>, what: &str) -> Option<Vec<Vec<u8>>> {
        if !self.is_root() {
            self.send_bytes(0, TAG_GATHER, &mine, what);
            return None;
        }
        let mut all = vec![mine];
        for r in 1..self.size {
            all.push(self.recv_bytes(r, TAG_GATHER, what));
        }
        Some(all)
    }

    /// Rank 0's `value` on every rank.
    fn broadcast(&self, value: Vec<u8>, what: &str) -> Vec<u8> {
        if self.is_root() {
            for r in 1..self.size {
                self.send_bytes(r, TAG_BCAST, &value, what);
            }
            value
        } else {
            self.recv_bytes(0, TAG_BCAST, what)
        }
    }

    /// Gather every rank's value to rank 0, let rank 0 decide, broadcast it.
    pub fn decide<T, D>(&self, mine: &T, what: &str, rule: impl FnOnce(Vec<T>) -> D) -> D
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        D: serde::Serialize + serde::de::DeserializeOwned,
    {
        let bytes = serde_json::to_vec(mine).unwrap_or_default();
        let verdict = match self.gather(bytes, what) {
            Some(all) => {
                let vals: Vec<T> = all
                    .iter()
                    .enumerate()
                    .map(|(r, b)| {
                        serde_json::from_slice(b).unwrap_or_else(|e| {
                            self.abort(&format!("unreadable {what} from rank {r}: {e}"))
                        })
                    })
                    .collect();
                serde_json::to_vec(&rule(vals)).unwrap_or_default()
            }
            None => Vec::new(),
        };
        let bytes = self.broadcast(verdict, what);
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| self.abort(&format!("unreadable decision on {what}: {e}")))
    }

    /// Tell every other rank this one finished its work.
    pub(crate) fn send_done(&self, msg: [u64; 3]) {
        for r in 0..self.size {
            if r != self.rank {
                // Three words: sent eagerly, so this returns at once.
                self.world
                    .process_at_rank(r)
                    .send_with_tag(&msg[..], TAG_DONE);
            }
        }
    }

    /// A "done" message from any rank, if one has arrived.
    pub(crate) fn poll_done(&self) -> Option<[u64; 3]> {
        let m = self
            .world
            .any_process()
            .immediate_matched_probe_with_tag(TAG_DONE)?;
        let (v, _) = m.matched_receive_vec::<u64>();
        Some([
            v.first().copied().unwrap_or(0),
            v.get(1).copied().unwrap_or(0),
            v.get(2).copied().unwrap_or(0),
        ])
    }

    /// Wait for one more "done" message (one that was surely sent).
    pub(crate) fn recv_done(&self) -> [u64; 3] {
        self.wait_for("collecting the ranks' done messages", || self.poll_done())
    }
}
