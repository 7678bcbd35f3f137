//! cpuio: fio's engine that moves no data and burns CPU. Each "I/O" is a
//! busy cycle of `cpuchunks` µs; the job's thinktime after it (set from
//! `cpuload`, as fio's engine does at init) idles for the rest, so one
//! worker uses `cpuload` percent of one CPU. Completions count as I/Os with
//! no bytes, as fio reports them.

use super::one_call::{OneAtATime, OneCall};
use super::{
    flag, int, Caps, EngineDef, EngineOption, EngineOpts, IoDesc, OptionInfo, OptionKind,
    OptionValue, SlotArena, WithEngine,
};
use dioscope_sys::clock::now_ns;
use std::io;
use std::os::fd::RawFd;

pub struct Def;

/// `cpumode=`: how the engine burns its CPU share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuMode {
    /// A loop that only reads the clock.
    #[default]
    Noop,
    /// Sorting arrays (more work per cycle: more power drawn).
    Qsort,
}

/// cpuio's options, with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Percent of one CPU to burn (mandatory).
    pub cpuload: u32,
    /// Length of one busy cycle, µs (`cpuchunks`, fio's 50000).
    pub cpuchunks_us: u32,
    pub cpumode: CpuMode,
    /// End the job once every job that does I/O is done.
    pub exit_on_io_done: bool,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            cpuload: 0,
            cpuchunks_us: 50_000,
            cpumode: CpuMode::Noop,
            exit_on_io_done: false,
        }
    }
}

impl EngineDef for Def {
    type Params = Params;
    const NAMES: &'static [&'static str] = &["cpuio"];
    const HELP: &'static str = "no I/O: each I/O is a busy cycle of cpuchunks µs (a clock loop, or \
         sorting with cpumode=qsort) followed by the idle time that makes the job use cpuload \
         percent of one CPU; counted as I/Os with no bytes; give runtime= (or exit_on_io_done=1 \
         beside I/O jobs)";
    const OWN_OPTIONS: &'static [EngineOption<Params>] = &[
        EngineOption::new(
            OptionInfo::new(
                "cpuload",
                OptionKind::Int,
                "50",
                "cpuio: percent of one CPU each job burns (1-100; mandatory with cpuio; \
                 numjobs=N loads N CPUs)",
            )
            .min(1),
            // fio caps it at 100.
            |p, v| {
                p.cpuload = int(v)?.min(100);
                Ok(())
            },
        ),
        EngineOption::new(
            OptionInfo::new(
                "cpuchunks",
                OptionKind::Int,
                "50000",
                "cpuio: length of one busy cycle in microseconds (fio's default 50000); \
                 each is followed by the idle time that makes the load cpuload",
            )
            .defaults_to("50000")
            .min(1),
            |p, v| {
                p.cpuchunks_us = int(v)?;
                Ok(())
            },
        ),
        EngineOption::new(
            OptionInfo::new(
                "cpumode",
                OptionKind::Choice(&["noop", "qsort"]),
                "qsort",
                "cpuio: burn cycles in a clock-reading loop (noop) or by sorting arrays (qsort, \
                 more power drawn)",
            )
            .defaults_to("noop"),
            |p, v| {
                p.cpumode = match v {
                    OptionValue::Choice("noop") => CpuMode::Noop,
                    OptionValue::Choice("qsort") => CpuMode::Qsort,
                    OptionValue::Choice(o) => {
                        return Err(format!("'{o}' is not a CPU mode: choose noop or qsort"))
                    }
                    o => return Err(format!("{o:?} is not a CPU mode")),
                };
                Ok(())
            },
        ),
        EngineOption::new(
            OptionInfo::new(
                "exit_on_io_done",
                OptionKind::Flag,
                "1",
                "cpuio: end the job once the jobs that do I/O beside it are done",
            )
            .defaults_to("0"),
            |p, v| {
                p.exit_on_io_done = flag(v)?;
                Ok(())
            },
        ),
    ];
    const CAPS: Caps = Caps {
        sync: true,
        real_io: false,
        moves_data: false,
        work_only: true,
        ..Caps::BASE
    };

    fn check(p: &Params) -> Result<(), String> {
        if p.cpuload == 0 {
            return Err("ioengine=cpuio needs cpuload= (the percent of one CPU to burn), for \
                        example cpuload=50"
                .into());
        }
        Ok(())
    }

    fn pause_us(p: &Params) -> Option<u64> {
        let load = p.cpuload.clamp(1, 100) as u64;
        let idle = p.cpuchunks_us as u64 * (100 - load) / load;
        Some(idle)
    }

    fn ends_itself(p: &Params) -> bool {
        p.exit_on_io_done
    }

    fn with<W: WithEngine>(
        arena: SlotArena,
        _: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let p = &opts.job.params.cpuio;
        let mut e = OneAtATime::new(arena, CpuBurn::new(p));
        let out = f.run(&mut e);
        Ok((out, None))
    }
}

/// One worker's CPU burner.
struct CpuBurn {
    chunk_ns: u64,
    mode: CpuMode,
    exit_on_io_done: bool,
    /// qsort's array and the generator that refills it.
    keys: Vec<u32>,
    rng: u64,
}

impl CpuBurn {
    pub fn new(p: &Params) -> CpuBurn {
        CpuBurn {
            chunk_ns: p.cpuchunks_us as u64 * 1000,
            mode: p.cpumode,
            exit_on_io_done: p.exit_on_io_done,
            keys: match p.cpumode {
                CpuMode::Qsort => vec![0; 4096],
                CpuMode::Noop => Vec::new(),
            },
            rng: 0x2545_f491_4f6c_dd1d,
        }
    }

    /// Use `chunk_ns` of this thread's CPU time. Counted in CPU time, not
    /// wall time, so a busy machine stretches the cycle rather than
    /// shrinking the load (the thread's clock is a system call: read every
    /// 100 µs of spinning).
    fn burn(&mut self) {
        let cpu0 = dioscope_sys::proc::usage_thread();
        loop {
            let slice_end = now_ns() + 100_000;
            self.spin_until(slice_end);
            let used = dioscope_sys::proc::usage_thread().since(&cpu0).cpu_us() * 1000;
            if used >= self.chunk_ns {
                return;
            }
        }
    }

    fn spin_until(&mut self, end: u64) {
        match self.mode {
            CpuMode::Noop => {
                while now_ns() < end {
                    std::hint::spin_loop();
                }
            }
            CpuMode::Qsort => {
                while now_ns() < end {
                    for k in &mut self.keys {
                        // xorshift: fresh keys each round, so each sort works.
                        self.rng ^= self.rng << 13;
                        self.rng ^= self.rng >> 7;
                        self.rng ^= self.rng << 17;
                        *k = self.rng as u32;
                    }
                    self.keys.sort_unstable();
                    std::hint::black_box(&self.keys);
                }
            }
        }
    }
}

impl OneCall for CpuBurn {
    const MOVES_BYTES: bool = false;
    const CAN_END: bool = true;

    fn ended(&self) -> bool {
        self.exit_on_io_done && super::io_jobs_running() == 0
    }

    fn call(&mut self, _: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        self.burn();
        Ok(d.len as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{Completion, Engine};

    #[test]
    fn a_cycle_burns_its_chunk_and_the_pause_makes_the_load() {
        let p = Params {
            cpuload: 25,
            cpuchunks_us: 20_000,
            cpumode: CpuMode::Qsort,
            ..Params::default()
        };
        assert_eq!(Def::pause_us(&p), Some(60_000));
        let full = Params {
            cpuload: 100,
            ..p.clone()
        };
        assert_eq!(Def::pause_us(&full), Some(0));
        assert!(Def::check(&Params::default()).is_err());
        let mut e = OneAtATime::new(SlotArena::new(1, 4096).unwrap(), CpuBurn::new(&p));
        let cpu0 = dioscope_sys::proc::usage_thread();
        let t0 = now_ns();
        e.stage(IoDesc {
            slot: 0,
            write: false,
            file: 0,
            offset: 0,
            len: 4096,
            prio: 0,
        });
        assert_eq!(e.commit(1).unwrap(), 1);
        let wall = now_ns() - t0;
        let cpu = dioscope_sys::proc::usage_thread().since(&cpu0).cpu_us();
        assert!(wall >= 20_000_000, "{wall} ns");
        // The cycle is 20 ms of CPU time, however busy the machine.
        assert!((20_000..30_000).contains(&cpu), "{cpu} µs of CPU in a 20 ms cycle");
        let mut out = [Completion::default(); 1];
        assert_eq!(e.reap(&mut out), 1);
        assert_eq!(out[0].res, 4096);
    }
}
