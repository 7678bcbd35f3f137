//! fio options dioscope accepts for fio's job files although they change
//! nothing it does, each saying what dioscope does instead (the help starts
//! with "Accepted", which `dioscope options --fio-compat` reads as
//! "accepted with a note"). Each is exempt from the "every option reaches
//! code" audit with the same reason (job/audit.rs).

use super::*;

pub(super) static ACCEPTED: &[OptDef] = &[
    OptDef {
        name: "disk_util",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Output,
        example: "1",
        help: "Accepted for fio's job files: dioscope always reads the devices' statistics \
               (/sys/block/*/stat) around every trial, so disk_util=0 still reports them",
        apply: job!(|_, v| {
            parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "create_fsync",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Targets,
        example: "1",
        help: "Accepted for fio's job files: dioscope always fsyncs a file it lays out, before \
               any trial (fio's default, create_fsync=1), so 0 measures the same",
        apply: job!(|_, v| {
            parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "unique_filename",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Targets,
        example: "1",
        help: "Accepted for fio's job files: fio prefixes file names with the client's address \
               in client/server mode, which dioscope does not have (ranks of an MPI run use \
               their own names: docs/DISTRIBUTED.md)",
        apply: job!(|_, v| {
            parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "hugepage-size",
        aliases: &["hugepage_size"],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Buffers,
        example: "2m",
        help: "Accepted for fio's job files: dioscope's mem=mmaphuge and shmhuge buffers use \
               the system's default huge page size (Hugepagesize in /proc/meminfo)",
        apply: job!(|_, v| {
            parse_size(v)?;
            Ok(())
        }),
    },
];
