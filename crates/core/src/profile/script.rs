//! Reading `perf script` output into a [`Tally`]: CPU time by owner (our
//! process, kernel threads, interrupts taken while idle), thread, subsystem
//! and function, migrations, and the folded stacks.
//!
//! `perf script -F comm,pid,tid,period,event,ip,sym,dso` prints one header
//! line per sample (`COMM PID/TID PERIOD EVENT:`, where COMM may contain
//! spaces; a sample without a stack carries its one frame on the same line)
//! followed by its stack, one `IP SYMBOL (DSO)` line per frame, leaf first,
//! and a blank line.

use super::subsys::{self, clean_symbol, is_kernel, kernel_subsystem, user_subsystem};
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

/// Who a sample belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A thread of our process (the workers, io_uring's io-wq workers, the
    /// runner's thread).
    Process,
    /// A kernel thread (kworker, ksoftirqd, irq/N): it may be working for
    /// us or for anyone else on the machine.
    KernelThread,
    /// The idle task, inside an interrupt or softirq handler: completions
    /// that arrive while the CPU sleeps.
    IdleIrq,
}

/// Sums over the samples of one or more trials. Times in ns.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub samples: HashMap<Owner, u64>,
    pub ns: HashMap<Owner, u64>,
    /// Kernel-mode part of `ns`.
    pub kernel_ns: HashMap<Owner, u64>,
    /// By owner and thread class ("job b2", "io_uring workers (iou-wrk)").
    pub threads: HashMap<(Owner, String), u64>,
    pub subsystems: HashMap<(Owner, &'static str), u64>,
    /// By owner, function, subsystem, kernel code or not.
    pub functions: HashMap<(Owner, String, &'static str, bool), u64>,
    /// Folded stacks (root first, `;`-separated) → samples.
    pub folded: HashMap<String, u64>,
    /// CPU migrations of our process's threads.
    pub migrations: u64,
    /// Samples of other processes and of the idle task outside interrupts.
    pub ignored_samples: u64,
    /// Samples whose header could not be read (should stay 0).
    pub unparsed: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        fn merge<K: Clone + Eq + std::hash::Hash>(a: &mut HashMap<K, u64>, b: &HashMap<K, u64>) {
            for (k, v) in b {
                *a.entry(k.clone()).or_default() += v;
            }
        }
        merge(&mut self.samples, &o.samples);
        merge(&mut self.ns, &o.ns);
        merge(&mut self.kernel_ns, &o.kernel_ns);
        merge(&mut self.threads, &o.threads);
        merge(&mut self.subsystems, &o.subsystems);
        merge(&mut self.functions, &o.functions);
        merge(&mut self.folded, &o.folded);
        self.migrations += o.migrations;
        self.ignored_samples += o.ignored_samples;
        self.unparsed += o.unparsed;
    }

    pub fn ns_of(&self, o: Owner) -> u64 {
        self.ns.get(&o).copied().unwrap_or(0)
    }
}

/// What the parser needs to know about the process and the machine.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub pid: u32,
    /// Our executable, to tell dioscope's code from libraries.
    pub exe: String,
    /// Our job names: a worker thread is called `NAME.CLONE`.
    pub jobs: Vec<String>,
    /// Thread names read from /proc while the trial's threads lived: perf
    /// does not always learn the name of an io-wq worker.
    pub comms: HashMap<u32, String>,
    /// Kernel threads (PF_KTHREAD) seen when the trial ended.
    pub kthreads: HashSet<u32>,
}

#[derive(Debug, Clone)]
struct Frame {
    ip: u64,
    sym: String,
    dso: String,
}

struct Header {
    comm: String,
    pid: u32,
    tid: u32,
    period: u64,
    clock: bool,
    inline: Option<Frame>,
}

fn parse_frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (ip, rest) = line.split_once(char::is_whitespace)?;
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.trim();
    let (sym, dso) = match rest.rfind(" (") {
        Some(i) if rest.ends_with(')') => (&rest[..i], &rest[i + 2..rest.len() - 1]),
        _ => (rest, ""),
    };
    Some(Frame {
        ip,
        sym: sym.trim().to_string(),
        dso: dso.to_string(),
    })
}

fn parse_header(line: &str) -> Option<Header> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    // The first PID/TID token after the command name.
    let at = toks.iter().skip(1).position(|t| {
        t.split_once('/')
            .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
    })? + 1;
    let (pid, tid) = toks[at].split_once('/')?;
    let period = toks.get(at + 1)?.parse().ok()?;
    let event = toks.get(at + 2)?;
    if !event.ends_with(':') {
        return None;
    }
    let inline = (toks.len() > at + 3)
        .then(|| parse_frame(&toks[at + 3..].join(" ")))
        .flatten();
    Some(Header {
        comm: toks[..at].join(" "),
        pid: pid.parse().ok()?,
        tid: tid.parse().ok()?,
        period,
        clock: event.starts_with("cpu-clock"),
        inline,
    })
}

/// The name of a kernel thread's kind: `kworker/0:1H-kblockd` → `kworker`.
fn kthread_class(comm: &str) -> String {
    let c = comm.split('/').next().unwrap_or(comm);
    let c = c
        .trim_end_matches(|ch: char| ch.is_ascii_digit())
        .trim_end_matches('.');
    if c.is_empty() {
        comm.to_string()
    } else {
        c.to_string()
    }
}

/// Kernel threads whose names say so, for the rare one that came and went
/// within a trial.
fn looks_like_kthread(comm: &str) -> bool {
    [
        "kworker/",
        "ksoftirqd/",
        "irq/",
        "kswapd",
        "kcompactd",
        "rcu",
        "migration/",
    ]
    .iter()
    .any(|p| comm.starts_with(p))
}

/// Frames that mean "inside an interrupt": a sample of the idle task with
/// one of these is completion work, not sleep.
fn is_irq_frame(sym: &str) -> bool {
    let s = clean_symbol(sym);
    [
        "asm_common_interrupt",
        "common_interrupt",
        "asm_sysvec",
        "__sysvec",
        "sysvec_",
        "handle_softirqs",
        "__do_softirq",
        "irq_exit",
        "__irq_exit",
        "handle_irq_event",
    ]
    .iter()
    .any(|p| s.starts_with(p))
}

impl Context {
    fn thread_class(&self, tid: u32, comm: &str) -> String {
        let comm = if comm.is_empty() || comm.starts_with(':') {
            self.comms.get(&tid).map(String::as_str).unwrap_or(comm)
        } else {
            comm
        };
        if tid == self.pid {
            return "dioscope main thread".into();
        }
        if comm.starts_with("iou-wrk") {
            return "io_uring workers (iou-wrk)".into();
        }
        if comm.starts_with("iou-sqp") {
            return "io_uring SQPOLL thread (iou-sqp)".into();
        }
        if comm == "perf-ack" {
            return "profiler's reader thread".into();
        }
        // Linux keeps 15 bytes of a thread's name: match a job by prefix.
        if let Some((name, clone)) = comm.rsplit_once('.') {
            if clone.bytes().all(|b| b.is_ascii_digit()) {
                if let Some(j) = self
                    .jobs
                    .iter()
                    .find(|j| j.as_str() == name || (name.len() >= 12 && j.starts_with(name)))
                {
                    return format!("job {j} workers");
                }
            }
        }
        if comm.starts_with(':') || comm.is_empty() {
            return "unnamed threads".into();
        }
        comm.to_string()
    }

    fn frame_name(&self, f: &Frame) -> String {
        if f.sym.is_empty() || f.sym == "[unknown]" {
            let base = f.dso.rsplit('/').next().unwrap_or(&f.dso);
            format!("[unknown in {base}]")
        } else {
            clean_symbol(&f.sym).to_string()
        }
    }

    fn take(&self, t: &mut Tally, h: &Header, frames: &[Frame]) {
        let owner = if h.pid == self.pid {
            Owner::Process
        } else if h.pid == 0 {
            if !h.clock || !frames.iter().any(|f| is_irq_frame(&f.sym)) {
                t.ignored_samples += 1;
                return;
            }
            Owner::IdleIrq
        } else if self.kthreads.contains(&h.pid) || looks_like_kthread(&h.comm) {
            Owner::KernelThread
        } else {
            t.ignored_samples += 1;
            return;
        };
        if !h.clock {
            if owner == Owner::Process {
                t.migrations += 1;
            }
            return;
        }
        let Some(leaf) = frames.first() else {
            t.unparsed += 1;
            return;
        };
        let kernel = is_kernel(leaf.ip, &leaf.dso);
        let sub = if kernel {
            frames
                .iter()
                .take_while(|f| is_kernel(f.ip, &f.dso))
                .find_map(|f| kernel_subsystem(&f.sym, &f.dso))
                .unwrap_or(subsys::OTHER_KERNEL)
        } else {
            user_subsystem(&leaf.dso, &self.exe)
        };
        let class = match owner {
            Owner::Process => self.thread_class(h.tid, &h.comm),
            Owner::KernelThread => kthread_class(&h.comm),
            Owner::IdleIrq => "interrupts while idle".into(),
        };
        *t.samples.entry(owner).or_default() += 1;
        *t.ns.entry(owner).or_default() += h.period;
        if kernel {
            *t.kernel_ns.entry(owner).or_default() += h.period;
        }
        *t.subsystems.entry((owner, sub)).or_default() += h.period;
        *t.functions
            .entry((owner, self.frame_name(leaf), sub, kernel))
            .or_default() += h.period;
        let mut stack = class.clone();
        for f in frames.iter().rev() {
            stack.push(';');
            // `;` separates frames and a space ends the stack in the folded
            // format: neither may appear inside a frame.
            stack.push_str(&self.frame_name(f).replace([';', ' '], "_"));
        }
        *t.folded.entry(stack).or_default() += 1;
        *t.threads.entry((owner, class)).or_default() += h.period;
    }

    /// Parse `perf script` output.
    pub fn parse(&self, input: impl BufRead) -> Tally {
        let mut t = Tally::default();
        let mut cur: Option<(Header, Vec<Frame>)> = None;
        for line in input.lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                if let Some((h, f)) = cur.take() {
                    self.take(&mut t, &h, &f);
                }
                continue;
            }
            // Frames are indented with a tab; a header may be indented
            // with spaces (perf right-aligns the command name).
            if line.starts_with('\t') {
                if let (Some((_, f)), Some(fr)) = (cur.as_mut(), parse_frame(&line)) {
                    f.push(fr);
                }
                continue;
            }
            if let Some((h, f)) = cur.take() {
                self.take(&mut t, &h, &f);
            }
            match parse_header(&line) {
                Some(mut h) => {
                    let frames = h.inline.take().into_iter().collect();
                    cur = Some((h, frames));
                }
                None => t.unparsed += 1,
            }
        }
        if let Some((h, f)) = cur.take() {
            self.take(&mut t, &h, &f);
        }
        t
    }

    /// Run `perf script` on one recording and parse what it prints.
    pub fn read(&self, perf: &Path, data: &Path) -> Result<Tally, String> {
        let mut child = Command::new(perf)
            .arg("script")
            .arg("-i")
            .arg(data)
            .args(["-F", "comm,pid,tid,period,event,ip,sym,dso"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run perf script: {e}"))?;
        let out = child.stdout.take().expect("piped stdout");
        // perf's warnings go to a thread so that a full stderr pipe cannot
        // stall it while we read its stdout.
        let mut err = child.stderr.take().expect("piped stderr");
        let errs = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        // perf script takes tens of seconds on a system-wide recording:
        // say how far it is (per --eta, as the trials' line).
        let name = data.file_name().unwrap_or_default().to_string_lossy();
        let counted = Counted {
            inner: out,
            n: 0,
            progress: crate::console::Progress::new(
                format!("post-processing the profile ({name}, perf script)"),
                0,
            ),
        };
        let t = self.parse(std::io::BufReader::new(counted));
        let st = child.wait().map_err(|e| format!("perf script: {e}"))?;
        let errs = errs.join().unwrap_or_default();
        if !st.success() {
            return Err(format!(
                "perf script failed ({st}): {}",
                super::perf::last_lines(&errs, 3)
            ));
        }
        Ok(t)
    }
}

/// A reader that reports how much it has read as it goes.
struct Counted<R> {
    inner: R,
    n: u64,
    progress: crate::console::Progress,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        self.progress.update(self.n);
        Ok(k)
    }
}

/// Kernel threads now running (PF_KTHREAD in /proc/PID/stat's flags).
pub fn kernel_threads() -> HashSet<u32> {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let mut out = HashSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // The fields after the command name (which may hold spaces and
        // parentheses) start after its last ')': state is the first, flags
        // the seventh.
        let flags = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(6))
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        if flags & PF_KTHREAD != 0 {
            out.insert(pid);
        }
    }
    out
}

/// CPU migrations of each of our threads so far (`se.nr_migrations` in
/// /proc/self/task/TID/sched).
pub fn our_migrations() -> HashMap<u32, u64> {
    let mut out = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let n = std::fs::read_to_string(e.path().join("sched"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("se.nr_migrations"))
                        .and_then(|l| l.rsplit(':').next())
                        .and_then(|v| v.trim().parse().ok())
                });
            if let Some(n) = n {
                out.insert(tid, n);
            }
        }
    }
    out
}

/// Our threads' names by thread id.
pub fn our_threads() -> HashMap<u32, String> {
    let mut out = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            if let (Some(tid), Ok(c)) = (
                e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()),
                std::fs::read_to_string(e.path().join("comm")),
            ) {
                out.insert(tid, c.trim().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
b2.0 100/101     250000 cpu-clock/period=250000/: \n\
\tffffffff8169754c zs_obj_read_begin ([kernel.kallsyms])\n\
\tffffffff81d77b24 zram_submit_bio ([kernel.kallsyms])\n\
\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])\n\
\t          101829 syscall (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
\n\
:102 100/102     250000 cpu-clock/period=250000/: \n\
\tffffffff822010c9 _raw_spin_unlock_irqrestore ([kernel.kallsyms])\n\
\tffffffff81390000 try_to_wake_up ([kernel.kallsyms])\n\
\tffffffff81390001 io_req_task_complete ([kernel.kallsyms])\n\
\n\
b2.0 100/101     250000 cpu-clock/period=250000/: \n\
\t          2c15e7 dioscope_core::runner::worker::run::h0123456789abcdef (/x/dioscope)\n\
\t           891f5 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
\n\
             b2.0 100/101          1 cpu-migrations/period=1,call-graph=no/:  ffffffff821f8914 __schedule ([kernel.kallsyms])\n\
lto cgu.10 13828/14363     250000 cpu-clock/period=250000/: \n\
\t          2c15e7 foo (/usr/bin/rustc)\n\
\n\
kworker/0:1H-kblockd    55/55     250000 cpu-clock/period=250000/: \n\
\tffffffff81af69a4 blk_mq_run_work_fn ([kernel.kallsyms])\n\
\n\
swapper     0/0         250000 cpu-clock/period=250000/: \n\
\tffffffff821f2c2b pv_native_safe_halt ([kernel.kallsyms])\n\
\tffffffff821f4735 default_idle ([kernel.kallsyms])\n\
\n\
swapper     0/0         250000 cpu-clock/period=250000/: \n\
\tffffffff81d77000 nvme_irq ([kernel.kallsyms])\n\
\tffffffff81000e46 asm_common_interrupt ([kernel.kallsyms])\n\
\tffffffff821f4735 default_idle ([kernel.kallsyms])\n\
\n";

    fn ctx() -> Context {
        Context {
            pid: 100,
            exe: "/x/dioscope".into(),
            jobs: vec!["b2".into()],
            comms: [(102, "iou-wrk-101".to_string())].into_iter().collect(),
            kthreads: HashSet::new(),
        }
    }

    #[test]
    fn samples_are_owned_classified_and_summed() {
        let t = ctx().parse(SCRIPT.as_bytes());
        assert_eq!(t.unparsed, 0);
        assert_eq!(t.samples[&Owner::Process], 3);
        assert_eq!(t.ns_of(Owner::Process), 750_000);
        assert_eq!(t.kernel_ns[&Owner::Process], 500_000);
        assert_eq!(t.migrations, 1);
        assert_eq!(t.ns_of(Owner::KernelThread), 250_000);
        assert_eq!(t.ns_of(Owner::IdleIrq), 250_000);
        // rustc and the idle loop are not ours.
        assert_eq!(t.ignored_samples, 2);
        let sub = |s: &str| t.subsystems.get(&(Owner::Process, s)).copied().unwrap_or(0);
        assert_eq!(sub(subsys::DRIVER), 250_000);
        // A spin lock under try_to_wake_up is the scheduler's.
        assert_eq!(sub(subsys::SCHED), 250_000);
        assert_eq!(sub(subsys::USER_DIOSCOPE), 250_000);
        assert!(t.functions.contains_key(&(
            Owner::Process,
            "dioscope_core::runner::worker::run".to_string(),
            subsys::USER_DIOSCOPE,
            false
        )));
        // The io-wq worker's name came from /proc, not from perf.
        assert_eq!(
            t.threads[&(Owner::Process, "io_uring workers (iou-wrk)".to_string())],
            250_000
        );
        assert_eq!(
            t.threads[&(Owner::Process, "job b2 workers".to_string())],
            500_000
        );
        assert_eq!(
            t.threads[&(Owner::KernelThread, "kworker".to_string())],
            250_000
        );
        assert_eq!(
            t.folded["job b2 workers;syscall;entry_SYSCALL_64_after_hwframe;zram_submit_bio;zs_obj_read_begin"],
            1
        );
        // Every sample is in exactly one function, one subsystem and one
        // thread class.
        for o in [Owner::Process, Owner::KernelThread, Owner::IdleIrq] {
            let f: u64 = t
                .functions
                .iter()
                .filter(|(k, _)| k.0 == o)
                .map(|(_, v)| v)
                .sum();
            let s: u64 = t
                .subsystems
                .iter()
                .filter(|(k, _)| k.0 == o)
                .map(|(_, v)| v)
                .sum();
            let c: u64 = t
                .threads
                .iter()
                .filter(|(k, _)| k.0 == o)
                .map(|(_, v)| v)
                .sum();
            assert_eq!(f, t.ns_of(o));
            assert_eq!(s, t.ns_of(o));
            assert_eq!(c, t.ns_of(o));
        }
    }

    #[test]
    fn headers_with_spaces_in_the_command() {
        let h =
            parse_header("lto cgu.10 13828/14363     250000 cpu-clock/period=250000/: ").unwrap();
        assert_eq!(
            (h.comm.as_str(), h.pid, h.tid, h.period),
            ("lto cgu.10", 13828, 14363, 250000)
        );
        assert!(h.clock);
        assert!(parse_header("garbage").is_none());
        assert_eq!(kthread_class("kworker/0:1H-kblockd"), "kworker");
        assert_eq!(kthread_class("ksoftirqd/1"), "ksoftirqd");
    }
}
