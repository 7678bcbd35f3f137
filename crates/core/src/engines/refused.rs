//! fio's engines (and `zonemode=zbd`) that dioscope does not have, each with
//! what it needs and the options that only it takes. A job that selects one
//! is refused with "not supported by dioscope: ioengine=NAME (needs …)"
//! before any option is judged, so an engine's own options (`hostname=` for
//! net, `pool=` for rbd) never surface as "unknown option" first.

/// One refused engine (or zone mode) of fio.
#[derive(Debug)]
pub struct Refused {
    /// The option that selects it: `ioengine` or `zonemode`.
    pub key: &'static str,
    /// Its values (fio's names and aliases).
    pub names: &'static [&'static str],
    /// What it needs that dioscope does not do, and what to use instead.
    pub needs: &'static str,
    /// Options only this engine (or these engines) take in fio.
    pub options: &'static [&'static str],
}

impl Refused {
    /// The error for a job that selects it with `value`.
    pub fn message(&self, value: &str) -> String {
        format!(
            "not supported by dioscope: {}={value} (needs {})",
            self.key, self.needs
        )
    }
}

const NET_OPTS: &[&str] = &[
    "hostname",
    "port",
    "interface",
    "ttl",
    "nodelay",
    "protocol",
    "proto",
    "listen",
    "pingpong",
    "window_size",
    "mss",
];
const RPMA_OPTS: &[&str] = &[
    "serverip",
    "port",
    "direct_write_to_pmem",
    "busy_wait_polling",
];

/// Every refused engine of fio 3.42 (and `zonemode=zbd`).
pub static REFUSED: &[Refused] = &[
    Refused {
        key: "ioengine",
        names: &["sg"],
        needs: "a SCSI generic device and SG_IO pass-through commands; dioscope issues \
                reads and writes through the block layer: use ioengine=io_uring or libaio on the block device",
        options: &["readfua", "writefua", "sg_write_mode", "stream_id"],
    },
    Refused {
        key: "ioengine",
        names: &["io_uring_cmd"],
        needs: "NVMe pass-through commands on a generic character device (/dev/ngXnY); dioscope \
                measures the block layer: use ioengine=io_uring on the block device (/dev/nvmeXnY)",
        options: &[
            "cmd_type",
            "fdp",
            "fdp_pli",
            "fdp_pli_select",
            "dataplacement",
            "plids",
            "pi_act",
            "pi_chk",
            "apptag",
            "apptag_mask",
            "md_per_io_size",
            "write_mode",
        ],
    },
    Refused {
        key: "ioengine",
        names: &["xnvme"],
        needs: "the xNVMe library and an NVMe device; use ioengine=io_uring or libaio on the block device",
        options: &[
            "xnvme_async",
            "xnvme_sync",
            "xnvme_admin",
            "xnvme_dev_nsid",
            "xnvme_dev_subnqn",
            "xnvme_mem",
            "xnvme_iovec",
        ],
    },
    Refused {
        key: "ioengine",
        names: &["spdk", "spdk_bdev"],
        needs: "SPDK's user-space NVMe driver (an external fio plugin, the device unbound from \
                the kernel); dioscope measures kernel I/O paths",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["libblkio"],
        needs: "the libblkio library and a virtio/vhost or io_uring driver behind it; use \
                ioengine=io_uring",
        options: &[
            "libblkio_driver",
            "libblkio_path",
            "libblkio_pre_connect_props",
            "libblkio_num_entries",
            "libblkio_queue_size",
            "libblkio_pre_start_props",
            "libblkio_vectored",
            "libblkio_write_zeroes_on_trim",
            "libblkio_wait_mode",
            "libblkio_force_enable_completion_eventfd",
        ],
    },
    Refused {
        key: "ioengine",
        names: &["libzbc"],
        needs: "the libzbc library and a zoned (ZBC/ZAC) device",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["net", "netsplice"],
        needs: "a network peer (TCP/UDP/unix sockets); dioscope measures local files and \
                block devices: use iperf3 for networks",
        options: NET_OPTS,
    },
    Refused {
        key: "ioengine",
        names: &["rdma"],
        needs: "an RDMA NIC (InfiniBand, RoCE, iWARP) and a peer",
        options: &["hostname", "port", "verb", "bindname"],
    },
    Refused {
        key: "ioengine",
        names: &[
            "librpma_apm_client",
            "librpma_apm_server",
            "librpma_gpspm_client",
            "librpma_gpspm_server",
        ],
        needs: "the librpma library, an RDMA NIC and persistent memory on a peer",
        options: RPMA_OPTS,
    },
    Refused {
        key: "ioengine",
        names: &["rbd"],
        needs: "a Ceph cluster (librbd); map the image with the kernel rbd driver and run \
                dioscope on /dev/rbdN instead",
        options: &["clustername", "rbdname", "clientname", "pool", "busy_poll"],
    },
    Refused {
        key: "ioengine",
        names: &["rados"],
        needs: "a Ceph cluster (librados object store)",
        options: &[
            "clustername",
            "clientname",
            "conf",
            "pool",
            "busy_poll",
            "touch_objects",
        ],
    },
    Refused {
        key: "ioengine",
        names: &["libiscsi"],
        needs: "an iSCSI target (libiscsi); log in with the kernel initiator and run dioscope \
                on the block device instead",
        options: &["initiator"],
    },
    Refused {
        key: "ioengine",
        names: &["nbd"],
        needs: "an NBD server (libnbd); attach it with nbd-client and run dioscope on /dev/nbdN instead",
        options: &["uri"],
    },
    Refused {
        key: "ioengine",
        names: &["dev-dax", "libpmem", "pmemblk"],
        needs: "persistent memory (a DAX device or a DAX-mounted file system) and PMDK",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["libhdfs"],
        needs: "a Hadoop HDFS cluster",
        options: &["namenode", "hdfsdirectory", "chunk_size", "single_instance", "hdfs_use_direct", "port"],
    },
    Refused {
        key: "ioengine",
        names: &["http"],
        needs: "an HTTP/WebDAV, S3 or Swift server (libcurl)",
        options: &[
            "http_host",
            "http_user",
            "http_pass",
            "https",
            "http_mode",
            "http_s3_region",
            "http_s3_key",
            "http_s3_keyid",
            "http_s3_sse_customer_key",
            "http_s3_sse_customer_algorithm",
            "http_s3_storage_class",
            "http_swift_auth_token",
            "http_verbose",
        ],
    },
    Refused {
        key: "ioengine",
        names: &["nfs"],
        needs: "an NFS server reached from user space (libnfs); mount it and run dioscope on a \
                file there instead",
        options: &["nfs_url"],
    },
    Refused {
        key: "ioengine",
        names: &["gfapi", "gfapi_async"],
        needs: "a GlusterFS volume (libgfapi); mount it and run dioscope on a file there instead",
        options: &["volume", "brick"],
    },
    Refused {
        key: "ioengine",
        names: &["dfs"],
        needs: "a DAOS pool and container (libdfs)",
        options: &["pool", "cont", "chunk_size", "object_class", "svcl"],
    },
    Refused {
        key: "ioengine",
        names: &["libcufile"],
        needs: "NVIDIA GPUs with GPUDirect Storage (cuFile, nvidia-fs)",
        options: &["gpu_dev_ids", "cuda_io"],
    },
    Refused {
        key: "ioengine",
        names: &["mtd"],
        needs: "an MTD flash character device (/dev/mtdN) and its erase semantics",
        options: &["skip_bad"],
    },
    Refused {
        key: "ioengine",
        names: &["ime_psync", "ime_psyncv", "ime_aio"],
        needs: "DDN's Infinite Memory Engine client library",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["windowsaio"],
        needs: "Windows (overlapped I/O); on Linux use ioengine=io_uring or libaio",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["solarisaio"],
        needs: "Solaris aio; on Linux use ioengine=io_uring or libaio",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["external"],
        needs: "loading an engine from a shared object built against fio's internals; \
                dioscope's engines are compiled in (docs/ARCHITECTURE.md, \"Engine\")",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["libhipfile"],
        needs: "AMD GPUs with ROCm's hipFile (GPU-direct storage)",
        options: &["gpu_dev_ids", "rocm_io"],
    },
    Refused {
        key: "ioengine",
        names: &["cpp_null"],
        needs: "fio's C++ example engine, built from fio's own sources; use ioengine=null, \
                which measures the same thing (no I/O, the tool's cost per I/O)",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["fusion-aw-sync"],
        needs: "a Fusion-io ioMemory card and its atomic-write library (libnvm-primitives)",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["sgunmap"],
        needs: "a SCSI generic device that takes UNMAP commands through SG_IO; use rw=trim \
                with ioengine=io_uring or libaio on the block device (a discard)",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["sheepdog"],
        needs: "a Sheepdog storage cluster (the engine left fio with Sheepdog itself)",
        options: &["target"],
    },
    Refused {
        key: "ioengine",
        names: &["binject", "bsg"],
        needs: "the Linux block-injection (binject) or bsg pass-through driver; use \
                ioengine=io_uring or libaio on the block device",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["syslet-rw", "guasi", "aio-ring"],
        needs: "an asynchronous interface that never reached mainline Linux (syslets, GUASI, \
                aio rings; fio dropped these engines); use ioengine=io_uring",
        options: &[],
    },
    Refused {
        key: "ioengine",
        names: &["splice"],
        needs: "splice(2)/vmsplice(2) through a pipe, which dioscope does not implement; use \
                ioengine=psync for buffered reads and writes",
        options: &[],
    },
    Refused {
        key: "zonemode",
        names: &["zbd"],
        needs: "a zoned block device (host-managed SMR or ZNS) and zone management \
                (write pointers, resets, open-zone limits); use zonemode=strided for zoned \
                access patterns on a regular device",
        options: &[
            "max_open_zones",
            "job_max_open_zones",
            "zone_reset_threshold",
            "zone_reset_frequency",
            "ignore_zone_limits",
            "read_beyond_wp",
        ],
    },
];

/// Features of fio's NVMe engines that take several options of their own:
/// a job that sets one of them without selecting the engine is refused by
/// the feature's name (`pi`), not by the first of its options.
struct Feature {
    pub name: &'static str,
    pub needs: &'static str,
    pub options: &'static [&'static str],
}

static FEATURES: &[Feature] = &[Feature {
    name: "pi",
    needs: "NVMe end-to-end protection information (metadata per I/O, guard/application/\
            reference tags) on a namespace formatted with it, sent by fio's io_uring_cmd \
            or xnvme engines; dioscope's engines transfer data only",
    options: &[
        "md_per_io_size",
        "pi_act",
        "pi_chk",
        "apptag",
        "apptag_mask",
    ],
}];

/// The refused engine or zone mode `key=value` selects, if any
/// (`ioengine=external:/path/x.so` is fio's external engine).
pub fn selected(key: &str, value: &str) -> Option<&'static Refused> {
    let v = value.trim();
    let v = if key == "ioengine" && v.starts_with("external:") {
        "external"
    } else {
        v
    };
    REFUSED
        .iter()
        .find(|r| r.key == key && r.names.contains(&v))
}

/// The refused engines whose own option `opt` is.
fn owners(opt: &str) -> impl Iterator<Item = &'static Refused> + '_ {
    REFUSED.iter().filter(move |r| r.options.contains(&opt))
}

/// Whether `opt` is an option only refused engines take.
pub fn is_refused_option(opt: &str) -> bool {
    owners(opt).next().is_some()
}

/// Whether `key` selects refused values (`zonemode` for `zbd`).
pub fn is_selector(key: &str) -> bool {
    REFUSED.iter().any(|r| r.key == key)
}

/// The error for `opt=` set in a job whose engine dioscope has: name the
/// engines it belongs to.
pub fn option_message(opt: &str) -> Option<String> {
    if let Some(f) = FEATURES.iter().find(|f| f.options.contains(&opt)) {
        return Some(format!(
            "not supported by dioscope: {} ({opt}= asks for it; needs {}); remove it",
            f.name, f.needs
        ));
    }
    let owners: Vec<&Refused> = owners(opt).collect();
    let first = owners.first()?;
    let names: Vec<&str> = owners
        .iter()
        .flat_map(|r| r.names.iter().copied())
        .collect();
    Some(format!(
        "not supported by dioscope: {opt}= (an option of fio's {}={}, which dioscope does not have); remove it",
        first.key,
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::EngineKind;

    #[test]
    fn refused_names_are_not_engines_and_are_listed_once() {
        let mut seen = Vec::new();
        for r in REFUSED {
            assert!(!r.needs.is_empty());
            assert!(r.key == "ioengine" || r.key == "zonemode");
            for n in r.names {
                assert!(
                    EngineKind::parse(n).is_none(),
                    "{n} is both an engine and refused"
                );
                assert!(!seen.contains(&(r.key, *n)), "{n} listed twice");
                seen.push((r.key, *n));
            }
        }
        for k in EngineKind::ALL {
            for o in k.options() {
                assert!(
                    !is_refused_option(o),
                    "{o} is an option of {k:?} and refused"
                );
            }
        }
    }

    #[test]
    fn messages_name_the_engine_and_its_need() {
        let r = selected("ioengine", "net").unwrap();
        assert_eq!(
            r.message("net"),
            format!(
                "not supported by dioscope: ioengine=net (needs {})",
                r.needs
            )
        );
        assert!(selected("ioengine", "external:/tmp/x.so").is_some());
        assert!(selected("ioengine", "psync").is_none());
        assert!(selected("zonemode", "zbd").is_some());
        assert!(selected("zonemode", "strided").is_none());
        let m = option_message("port").unwrap();
        for e in ["ioengine=net", "rdma", "libhdfs"] {
            assert!(m.contains(e), "{m}");
        }
        assert!(option_message("bs").is_none());
        assert!(is_selector("zonemode") && is_selector("ioengine") && !is_selector("rw"));
    }
}
