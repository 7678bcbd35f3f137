//! Which subsystem a function belongs to, from its name (kernel) or its
//! object file (user space).
//!
//! A sample is charged to the subsystem of the first frame, from the leaf
//! outwards, that names one: helpers that every subsystem calls (spin locks,
//! `memcpy`, `copy_page`, RCU, preemption, clock reads, retpoline thunks) are
//! [`GENERIC`] and pass the sample on to their caller, so a
//! `_raw_spin_unlock_irqrestore` called from `try_to_wake_up` counts for the
//! scheduler and a `copy_page` called from zram counts for the driver. The
//! table is docs/PERFORMANCE.md's "Subsystems" list; change both together.

/// The subsystems a profile is grouped by, in the order they are printed
/// when costs tie.
const IO_URING: &str = "io_uring";
pub const AIO: &str = "aio";
const BLOCK: &str = "block";
const FS: &str = "file system";
pub const DRIVER: &str = "driver";
const MEMORY: &str = "page cache & memory";
pub const SCHED: &str = "scheduler";
const SYSCALL: &str = "syscall entry/exit";
const IRQ: &str = "interrupts & timers";
pub const OTHER_KERNEL: &str = "other kernel";
pub const USER_DIOSCOPE: &str = "dioscope (user)";
const USER_LIBC: &str = "libc (user)";
const USER_OTHER: &str = "other user";

/// Kernel symbol prefixes, checked in order (the first match wins, so the
/// more specific prefixes come first: `io_schedule` before `io_`).
const KERNEL_PREFIXES: &[(&str, &str)] = &[
    // Scheduler first: its names overlap with io_ and wake_.
    ("io_schedule", SCHED),
    ("__schedule", SCHED),
    ("schedule", SCHED),
    ("preempt_schedule", SCHED),
    ("__cond_resched", SCHED),
    ("finish_task_switch", SCHED),
    ("__switch_to", SCHED),
    ("switch_mm", SCHED),
    ("switch_fpu", SCHED),
    ("pick_next", SCHED),
    ("__pick_next", SCHED),
    ("pick_task", SCHED),
    ("put_prev", SCHED),
    ("set_next", SCHED),
    ("try_to_wake_up", SCHED),
    ("wake_up", SCHED),
    ("__wake_up", SCHED),
    ("wake_q", SCHED),
    ("ttwu_", SCHED),
    ("enqueue_", SCHED),
    ("dequeue_", SCHED),
    ("update_curr", SCHED),
    ("update_load", SCHED),
    ("update_cfs", SCHED),
    ("update_rq", SCHED),
    ("reweight", SCHED),
    ("select_task_rq", SCHED),
    ("select_idle", SCHED),
    ("check_preempt", SCHED),
    ("resched", SCHED),
    ("sched_", SCHED),
    ("__sched", SCHED),
    ("psi_", SCHED),
    ("cpuacct", SCHED),
    ("account_", SCHED),
    ("prepare_to_wait", SCHED),
    ("finish_wait", SCHED),
    ("autoremove_wake", SCHED),
    ("default_wake", SCHED),
    ("newidle_balance", SCHED),
    ("sched_balance", SCHED),
    ("load_balance", SCHED),
    ("rcu_note_context_switch", SCHED),
    ("do_idle", SCHED),
    ("cpuidle", SCHED),
    ("default_idle", SCHED),
    ("pv_native_safe_halt", SCHED),
    ("task_work_run", SCHED),
    // libaio's kernel side (before io_: io_submit_one is aio).
    ("aio_", AIO),
    ("io_submit_one", AIO),
    ("__x64_sys_io_submit", AIO),
    ("__x64_sys_io_getevents", AIO),
    ("__x64_sys_io_pgetevents", AIO),
    ("__do_sys_io_submit", AIO),
    ("__do_sys_io_getevents", AIO),
    ("do_io_getevents", AIO),
    ("read_events", AIO),
    ("lookup_ioctx", AIO),
    ("refill_reqs_available", AIO),
    ("user_refill_reqs", AIO),
    ("put_reqs_available", AIO),
    ("get_reqs_available", AIO),
    ("iocb_", AIO),
    // io_uring.
    ("io_uring", IO_URING),
    ("__io_uring", IO_URING),
    ("__x64_sys_io_uring", IO_URING),
    ("__do_sys_io_uring", IO_URING),
    ("io_wq", IO_URING),
    ("io_wqe", IO_URING),
    ("io_worker", IO_URING),
    ("tctx_", IO_URING),
    ("io_", IO_URING),
    ("__io_", IO_URING),
    ("create_io_", IO_URING),
    // Pages pinned for the I/O, slab, page cache.
    ("iov_iter_get_pages", MEMORY),
    ("iov_iter_extract", MEMORY),
    ("__iov_iter_get_pages", MEMORY),
    ("get_user_pages", MEMORY),
    ("__get_user_pages", MEMORY),
    ("pin_user_pages", MEMORY),
    ("unpin_user_page", MEMORY),
    ("internal_get_user_pages", MEMORY),
    ("gup_", MEMORY),
    ("__gup_", MEMORY),
    ("try_grab_", MEMORY),
    ("follow_page", MEMORY),
    ("filemap_", MEMORY),
    ("__filemap_", MEMORY),
    ("folio", MEMORY),
    ("__folio", MEMORY),
    ("page_cache", MEMORY),
    ("pagecache", MEMORY),
    ("invalidate_", MEMORY),
    ("truncate_", MEMORY),
    ("mapping_", MEMORY),
    ("mark_page_accessed", MEMORY),
    ("lru_", MEMORY),
    ("kmem_cache", MEMORY),
    ("__kmem_cache", MEMORY),
    ("kmalloc", MEMORY),
    ("__kmalloc", MEMORY),
    ("kfree", MEMORY),
    ("slab_", MEMORY),
    ("___slab", MEMORY),
    ("__slab", MEMORY),
    ("mempool_", MEMORY),
    ("alloc_pages", MEMORY),
    ("__alloc_pages", MEMORY),
    ("free_unref", MEMORY),
    ("free_pcp", MEMORY),
    ("__free_pages", MEMORY),
    ("get_page_from_freelist", MEMORY),
    ("rmqueue", MEMORY),
    ("handle_mm_fault", MEMORY),
    ("__handle_mm_fault", MEMORY),
    ("do_user_addr_fault", MEMORY),
    ("exc_page_fault", MEMORY),
    ("asm_exc_page_fault", MEMORY),
    ("do_anonymous_page", MEMORY),
    ("shmem_", MEMORY),
    ("vm_", MEMORY),
    ("mm_", MEMORY),
    ("__mm_", MEMORY),
    ("page_", MEMORY),
    ("__page_", MEMORY),
    ("put_page", MEMORY),
    ("get_page", MEMORY),
    // The block layer (blkdev_* is the block device's file operations).
    ("blk", BLOCK),
    ("__blk", BLOCK),
    ("bio", BLOCK),
    ("__bio", BLOCK),
    ("submit_bio", BLOCK),
    ("__submit_bio", BLOCK),
    ("bvec_", BLOCK),
    ("bdev_", BLOCK),
    ("disk_", BLOCK),
    ("part_", BLOCK),
    ("elv_", BLOCK),
    ("dd_", BLOCK),
    ("bfq_", BLOCK),
    ("kyber_", BLOCK),
    ("rq_qos", BLOCK),
    ("__rq_qos", BLOCK),
    ("wbt_", BLOCK),
    ("sbitmap", BLOCK),
    ("__sbitmap", BLOCK),
    ("bio_", BLOCK),
    ("update_io_ticks", BLOCK),
    // Drivers: zram and its allocator and compressors, NVMe, virtio,
    // loop, SCSI/ATA, null_blk, device mapper, md.
    ("zram", DRIVER),
    ("zs_", DRIVER),
    ("zcomp", DRIVER),
    ("lzo", DRIVER),
    ("lz4", DRIVER),
    ("LZ4", DRIVER),
    ("zstd", DRIVER),
    ("ZSTD", DRIVER),
    ("crypto_", DRIVER),
    ("nvme", DRIVER),
    ("virtblk", DRIVER),
    ("virtio", DRIVER),
    ("vring", DRIVER),
    ("vp_", DRIVER),
    ("loop_", DRIVER),
    ("lo_", DRIVER),
    ("scsi", DRIVER),
    ("sd_", DRIVER),
    ("ata_", DRIVER),
    ("ahci", DRIVER),
    ("null_", DRIVER),
    ("dm_", DRIVER),
    ("md_", DRIVER),
    ("raid", DRIVER),
    ("brd_", DRIVER),
    ("pmem", DRIVER),
    // File systems and the VFS (the direct-I/O engines included).
    ("ext4", FS),
    ("xfs", FS),
    ("btrfs", FS),
    ("f2fs", FS),
    ("jbd2", FS),
    ("iomap", FS),
    ("__iomap", FS),
    ("fuse", FS),
    ("nfs", FS),
    ("tmpfs", FS),
    ("vfs_", FS),
    ("__vfs_", FS),
    ("do_iter", FS),
    ("generic_file", FS),
    ("generic_write", FS),
    ("file_", FS),
    ("__file_", FS),
    ("fsnotify", FS),
    ("__fsnotify", FS),
    ("fget", FS),
    ("__fget", FS),
    ("fdget", FS),
    ("__fdget", FS),
    ("fput", FS),
    ("__fput", FS),
    ("rw_verify_area", FS),
    ("security_file", FS),
    ("__blockdev_direct_IO", FS),
    ("dio_", FS),
    ("do_blockdev_direct_IO", FS),
    ("kiocb_", FS),
    ("new_sync_", FS),
    ("ksys_p", FS),
    ("ksys_read", FS),
    ("ksys_write", FS),
    ("do_readv", FS),
    ("do_writev", FS),
    ("do_preadv", FS),
    ("do_pwritev", FS),
    ("__x64_sys_pread", FS),
    ("__x64_sys_pwrite", FS),
    ("__x64_sys_read", FS),
    ("__x64_sys_write", FS),
    ("__x64_sys_fsync", FS),
    ("__x64_sys_fdatasync", FS),
    ("vfs_fsync", FS),
    ("inode_", FS),
    ("touch_atime", FS),
    ("atime_", FS),
    // Getting into and out of the kernel.
    ("entry_SYSCALL", SYSCALL),
    ("do_syscall", SYSCALL),
    ("syscall_", SYSCALL),
    ("x64_sys_call", SYSCALL),
    ("exit_to_user_mode", SYSCALL),
    ("__x64_sys_", SYSCALL),
    ("fpregs_", SYSCALL),
    ("restore_fpregs", SYSCALL),
    ("irqentry_exit_to_user", SYSCALL),
    ("arch_exit_to_user", SYSCALL),
    // Interrupts, softirqs and timers.
    ("asm_common_interrupt", IRQ),
    ("common_interrupt", IRQ),
    ("asm_sysvec", IRQ),
    ("sysvec_", IRQ),
    ("__sysvec", IRQ),
    ("irq", IRQ),
    ("__irq", IRQ),
    ("handle_irq", IRQ),
    ("handle_edge", IRQ),
    ("handle_fasteoi", IRQ),
    ("__handle_irq", IRQ),
    ("__do_softirq", IRQ),
    ("handle_softirqs", IRQ),
    ("do_softirq", IRQ),
    ("__local_bh_enable", IRQ),
    ("run_timer", IRQ),
    ("hrtimer", IRQ),
    ("__hrtimer", IRQ),
    ("tick_", IRQ),
    ("timer", IRQ),
    ("__run_timers", IRQ),
    ("smp_call_function", IRQ),
    ("flush_smp_call", IRQ),
    ("__flush_smp_call", IRQ),
    ("generic_smp_call", IRQ),
    ("perf_", IRQ),
    ("__perf_", IRQ),
];

/// Helpers every subsystem calls: a sample in one is charged to the caller.
const GENERIC: &[&str] = &[
    "_raw_spin",
    "raw_spin",
    "_raw_read",
    "_raw_write",
    "queued_spin",
    "queued_read",
    "queued_write",
    "native_queued",
    "__pv_queued",
    "pv_queued",
    "__raw_callee_save",
    "pv_native_irq",
    "native_irq",
    "native_restore_fl",
    "native_save_fl",
    "arch_local",
    "mutex_",
    "__mutex_",
    "down_",
    "up_",
    "__down",
    "__up",
    "rwsem",
    "memcpy",
    "__memcpy",
    "memset",
    "__memset",
    "memmove",
    "__memmove",
    "copy_page",
    "copy_user",
    "_copy_to_user",
    "_copy_from_user",
    "copy_to_user",
    "copy_from_user",
    "rep_movs",
    "clear_page",
    "clear_user",
    "__rcu",
    "rcu_read",
    "preempt_count",
    "__preempt",
    "migrate_disable",
    "migrate_enable",
    "__x86_indirect",
    "__x86_return",
    "srso_",
    "retbleed",
    "entry_untrain",
    "ktime_get",
    "read_tsc",
    "kvm_clock",
    "pvclock",
    "native_sched_clock",
    "sched_clock",
    "local_clock",
    "refcount_",
    "percpu_ref",
    "__percpu",
    "xas_",
    "xa_",
    "__list_",
    "list_",
    "_find_",
    "find_next",
    "__bitmap",
    "bitmap_",
    "llist_",
    "__llist",
    "__check_object_size",
    "check_heap_object",
    "__virt_addr_valid",
    "__cpu_indicator",
    "__pfx_",
];

/// Modules whose unnamed functions still have a home.
const MODULES: &[(&str, &str)] = &[
    ("zram", DRIVER),
    ("zsmalloc", DRIVER),
    ("nvme", DRIVER),
    ("nvme_core", DRIVER),
    ("virtio_blk", DRIVER),
    ("loop", DRIVER),
    ("null_blk", DRIVER),
    ("dm_mod", DRIVER),
    ("xfs", FS),
    ("btrfs", FS),
    ("ext4", FS),
    ("f2fs", FS),
];

/// A symbol without the compiler's clone suffixes (`.isra.0`, `.constprop.0`,
/// `.part.0`, `.cold`) and Rust's hash (`::h0123456789abcdef`).
pub fn clean_symbol(sym: &str) -> &str {
    let s = match sym.find('.') {
        // Kernel clones: the suffix starts with a dot; Rust paths have none
        // outside generics, which come with "::" or '<'.
        Some(i) if i > 0 && !sym[..i].contains("::") && !sym.contains('<') => &sym[..i],
        _ => sym,
    };
    match s.rfind("::h") {
        Some(i) if s.len() - i == 19 && s[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => {
            &s[..i]
        }
        _ => s,
    }
}

/// The subsystem a kernel function names, or `None` for a generic helper
/// or an unknown name.
pub fn kernel_subsystem(sym: &str, dso: &str) -> Option<&'static str> {
    let s = clean_symbol(sym);
    if GENERIC.iter().any(|g| s.starts_with(g)) {
        return None;
    }
    if let Some((_, sub)) = KERNEL_PREFIXES.iter().find(|(p, _)| s.starts_with(p)) {
        return Some(sub);
    }
    let module = dso.trim_start_matches('[').trim_end_matches(']');
    MODULES
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, sub)| *sub)
}

/// The user-space subsystem of an object file: dioscope itself, the C
/// library, or something else (the vDSO, another library).
pub fn user_subsystem(dso: &str, exe: &str) -> &'static str {
    let base = dso.rsplit('/').next().unwrap_or(dso);
    if !exe.is_empty() && (dso == exe || base == exe.rsplit('/').next().unwrap_or(exe)) {
        USER_DIOSCOPE
    } else if base.starts_with("libc.so")
        || base.starts_with("libc-")
        || base.starts_with("ld-linux")
    {
        USER_LIBC
    } else {
        USER_OTHER
    }
}

/// Whether a frame is kernel code: perf names the kernel image
/// `[kernel.kallsyms]` and modules `[name]`; failing that, the address.
pub fn is_kernel(ip: u64, dso: &str) -> bool {
    (dso.starts_with('[') && dso != "[unknown]" && dso != "[vdso]" && dso != "[vsyscall]")
        || ip >= 0xffff_8000_0000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_pick_the_specific_subsystem() {
        let k = "[kernel.kallsyms]";
        assert_eq!(kernel_subsystem("io_schedule", k), Some(SCHED));
        assert_eq!(kernel_subsystem("io_submit_one", k), Some(AIO));
        assert_eq!(kernel_subsystem("io_issue_sqe", k), Some(IO_URING));
        assert_eq!(kernel_subsystem("zs_obj_read_begin", k), Some(DRIVER));
        assert_eq!(kernel_subsystem("blkdev_direct_IO", k), Some(BLOCK));
        assert_eq!(kernel_subsystem("submit_bio_noacct", k), Some(BLOCK));
        assert_eq!(kernel_subsystem("iomap_dio_rw", k), Some(FS));
        assert_eq!(kernel_subsystem("ext4_file_read_iter", k), Some(FS));
        assert_eq!(
            kernel_subsystem("finish_task_switch.isra.0", k),
            Some(SCHED)
        );
        assert_eq!(kernel_subsystem("iov_iter_extract_pages", k), Some(MEMORY));
        assert_eq!(kernel_subsystem("do_syscall_64", k), Some(SYSCALL));
        assert_eq!(
            kernel_subsystem("__sysvec_apic_timer_interrupt", k),
            Some(IRQ)
        );
        // Generic helpers defer to their caller.
        assert_eq!(kernel_subsystem("_raw_spin_unlock_irqrestore", k), None);
        assert_eq!(kernel_subsystem("copy_page", k), None);
        // Unknown names in a known module.
        assert_eq!(kernel_subsystem("some_static_fn", "[zram]"), Some(DRIVER));
        assert_eq!(kernel_subsystem("some_static_fn", k), None);
    }

    #[test]
    fn symbols_lose_clone_suffixes_and_rust_hashes() {
        assert_eq!(
            clean_symbol("finish_task_switch.isra.0"),
            "finish_task_switch"
        );
        assert_eq!(clean_symbol("copy_page.cold"), "copy_page");
        assert_eq!(
            clean_symbol("dioscope_core::runner::worker::run::h0123456789abcdef"),
            "dioscope_core::runner::worker::run"
        );
        assert_eq!(
            clean_symbol("<a::B as c::D>::stage"),
            "<a::B as c::D>::stage"
        );
    }

    #[test]
    fn user_objects() {
        let exe = "/x/target/debug/dioscope";
        assert_eq!(user_subsystem(exe, exe), USER_DIOSCOPE);
        assert_eq!(
            user_subsystem("/usr/lib/x86_64-linux-gnu/libc.so.6", exe),
            USER_LIBC
        );
        assert_eq!(user_subsystem("[vdso]", exe), USER_OTHER);
        assert!(is_kernel(0xffffffff8169754c, "[kernel.kallsyms]"));
        assert!(is_kernel(0x1000, "[zram]"));
        assert!(!is_kernel(0x101829, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(!is_kernel(0x101829, "[unknown]"));
    }
}
