//! The worker loop on test engines: overlap serialization, latency runs,
//! the clock throttle.

mod overlap {
    use super::super::*;
    use crate::engines::SlotArena;

    /// An engine that completes only as many I/Os as the worker waits for,
    /// oldest first, and counts overlapping pairs in flight at each commit.
    struct Lazy {
        arena: SlotArena,
        staged: Vec<IoDesc>,
        inflight: Vec<IoDesc>,
        done: Vec<Completion>,
        overlaps: u64,
    }

    impl Engine for Lazy {
        fn stage(&mut self, d: IoDesc) {
            self.staged.push(d);
        }
        fn commit(&mut self, min: u32) -> std::io::Result<u32> {
            let n = self.staged.len() as u32;
            self.inflight.append(&mut self.staged);
            for (i, a) in self.inflight.iter().enumerate() {
                for b in &self.inflight[i + 1..] {
                    let (a0, b0) = (a.offset, b.offset);
                    if a.file == b.file && a0 < b0 + b.len as u64 && b0 < a0 + a.len as u64 {
                        self.overlaps += 1;
                    }
                }
            }
            let k = (min as usize).min(self.inflight.len());
            for d in self.inflight.drain(..k) {
                self.done.push(Completion {
                    slot: d.slot,
                    res: d.len as i32,
                });
            }
            Ok(n)
        }
        fn reap(&mut self, out: &mut [Completion]) -> usize {
            let k = out.len().min(self.done.len());
            for (o, c) in out.iter_mut().zip(self.done.drain(..k)) {
                *o = c;
            }
            k
        }
        fn arena(&mut self) -> &mut SlotArena {
            &mut self.arena
        }
    }

    /// Random writes over 8 blocks at depth 8 without a random map: I/Os in
    /// flight overlap all the time unless serialized.
    fn overlaps(serialize: bool) -> (u64, u64) {
        let mut args = vec![
            "--rw=randwrite",
            "--bs=4k",
            "--size=32k",
            "--iodepth=8",
            "--norandommap=1",
            "--io_size=8000k",
            "--iodepth_batch_complete_min=1",
        ];
        if serialize {
            args.push("--serialize_overlap=1");
        }
        let plan = WorkerPlan::for_test(&crate::runner::fixtures::job(&args));
        assert_eq!((plan.depth, plan.complete_min), (8, 1));
        let mut eng = Lazy {
            arena: SlotArena::new(8, 4096).unwrap(),
            staged: Vec::new(),
            inflight: Vec::new(),
            done: Vec::new(),
            overlaps: 0,
        };
        let r = run(
            &mut eng,
            plan,
            now_ns(),
            &AtomicBool::new(false),
            &Progress::default(),
        );
        (eng.overlaps, r.dirs[1].ios)
    }

    #[test]
    fn serialize_overlap_keeps_in_flight_ios_apart() {
        let (without, n) = overlaps(false);
        assert_eq!(n, 2000);
        assert!(without > 100, "the workload overlaps: {without}");
        let (with, n) = overlaps(true);
        assert_eq!(n, 2000, "every I/O still issued");
        assert_eq!(with, 0);
    }
}

mod lat_run {
    use super::super::*;
    use crate::engines::SlotArena;

    fn splitmix(s: &mut u64) -> u64 {
        *s = s.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    #[test]
    fn runs_record_what_each_io_would() {
        // Reaps of I/Os from a few batches, in shuffled order and both
        // directions (so runs start, continue and break everywhere):
        // recording by runs must give every histogram the state of
        // recording each I/O on its own.
        let mut s = 17;
        let (mut by_run, mut by_io) = (
            [DirStats::default(), DirStats::default()],
            [DirStats::default(), DirStats::default()],
        );
        let mut run = LatRun::default();
        let mut now = 1_000_000u64;
        for _ in 0..3_000 {
            now += 1 + splitmix(&mut s) % 200_000;
            // Batches staged before `now`: (stage, commit).
            let batches: Vec<(u64, u64)> = (0..1 + splitmix(&mut s) % 4)
                .map(|_| {
                    let stage = now - 2_000 - splitmix(&mut s) % 150_000;
                    (stage, stage + splitmix(&mut s) % 2_000)
                })
                .collect();
            let n = 1 + splitmix(&mut s) % 32;
            for _ in 0..n {
                let (stage_ns, commit_ns) =
                    batches[(splitmix(&mut s) % batches.len() as u64) as usize];
                let m = SlotMeta {
                    stage_ns,
                    commit_ns,
                    offset: 0,
                    len: 4096,
                    file: 0,
                    write: splitmix(&mut s).is_multiple_of(5),
                    prio: 0,
                };
                run.add(&mut by_run, &m, now);
                let st = &mut by_io[m.write as usize];
                st.slat.record(m.commit_ns - m.stage_ns);
                st.clat.record(now - m.commit_ns);
                st.lat.record(now - m.stage_ns);
            }
            run.flush(&mut by_run, now);
            assert_eq!(run.n, 0);
        }
        for d in 0..2 {
            for (a, b) in [
                (&by_run[d].slat, &by_io[d].slat),
                (&by_run[d].clat, &by_io[d].clat),
                (&by_run[d].lat, &by_io[d].lat),
            ] {
                let (pa, pb) = (a.to_parts(), b.to_parts());
                assert!(pb.n > 1_000, "direction {d}: {} samples", pb.n);
                assert_eq!(
                    (&pa.buckets, pa.n, pa.min, pa.max, pa.sum),
                    (&pb.buckets, pb.n, pb.min, pb.max, pb.sum),
                    "direction {d}"
                );
                assert!((pa.sum_sq - pb.sum_sq).abs() <= pb.sum_sq * 1e-12);
            }
        }
    }

    /// Completes, at each commit, a pseudo-random share (at least `min`) of
    /// what is in flight, in a shuffled order: reaps mix batches.
    struct Bulk {
        arena: SlotArena,
        inflight: Vec<IoDesc>,
        done: Vec<Completion>,
        seed: u64,
        multi_reaps: u64,
    }

    impl Engine for Bulk {
        fn stage(&mut self, d: IoDesc) {
            self.inflight.push(d);
        }
        fn commit(&mut self, min: u32) -> std::io::Result<u32> {
            let have = self.inflight.len() as u64;
            let k = (min as u64 + splitmix(&mut self.seed) % (have + 1)).min(have) as usize;
            for _ in 0..k {
                let i = (splitmix(&mut self.seed) % self.inflight.len().min(6) as u64) as usize;
                let d = self.inflight.remove(i);
                self.done.push(Completion {
                    slot: d.slot,
                    res: d.len as i32,
                });
            }
            Ok(0)
        }
        fn reap(&mut self, out: &mut [Completion]) -> usize {
            let k = out.len().min(self.done.len());
            for (o, c) in out.iter_mut().zip(self.done.drain(..k)) {
                *o = c;
            }
            if k > 1 {
                self.multi_reaps += 1;
            }
            k
        }
        fn arena(&mut self) -> &mut SlotArena {
            &mut self.arena
        }
    }

    #[test]
    fn every_io_is_in_each_histogram_once_and_lat_is_slat_plus_clat() {
        let plan = WorkerPlan::for_test(&crate::runner::fixtures::job(&[
            "--rw=randrw",
            "--rwmixread=60",
            "--bs=4k",
            "--size=1g",
            "--iodepth=16",
            "--iodepth_batch_complete_min=4",
            "--norandommap=1",
            "--io_size=80000k",
        ]));
        assert_eq!((plan.depth, plan.complete_min, plan.read_pct), (16, 4, 60));
        let mut eng = Bulk {
            arena: SlotArena::new(16, 4096).unwrap(),
            inflight: Vec::new(),
            done: Vec::new(),
            seed: 5,
            multi_reaps: 0,
        };
        let r = run(
            &mut eng,
            plan,
            now_ns(),
            &AtomicBool::new(false),
            &Progress::default(),
        );
        assert!(
            eng.multi_reaps > 500,
            "{} reaps of several I/Os",
            eng.multi_reaps
        );
        assert_eq!(r.dirs[0].ios + r.dirs[1].ios, 20_000);
        for d in &r.dirs {
            assert!(d.ios > 5_000);
            assert_eq!(
                (d.slat.count(), d.clat.count(), d.lat.count()),
                (d.ios, d.ios, d.ios)
            );
            // Each I/O's total latency is its submission plus completion
            // latency: the sums agree exactly, however it was recorded.
            assert_eq!(d.lat.sum_ns(), d.slat.sum_ns() + d.clat.sum_ns());
            assert!(d.lat.max() >= d.clat.max() && d.lat.min() >= d.clat.min());
        }
    }
}

mod gtod_reduce {
    #[test]
    fn gtod_reduce_interval_adapts_both_ways() {
        // A fast loop (100 ns between readings) backs off to the cap...
        let mut e = 1;
        for _ in 0..20 {
            e = super::super::adapt_every(e, 100);
        }
        assert_eq!(e, 4096);
        // ...and a slow device (50 µs a batch) comes back to every batch.
        for _ in 0..20 {
            e = super::super::adapt_every(e, 50_000);
        }
        assert_eq!(e, 1);
        assert_eq!(super::super::adapt_every(8, 5_000), 8);
    }
}
