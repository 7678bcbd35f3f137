//! The environment a result was measured in (kernel, clock, CPU, memory,
//! NUMA placement, and per target its file system, device and queue
//! limits) and the block devices under a target, as plain data: the
//! diagnosis (`diag::env`, `diag::device`) reads them from /proc and /sys,
//! the result carries them under `"dioscope": {"environment": …}`, and a
//! result read back has them typed.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Kernel {
    /// `uname -r`.
    pub release: Option<String>,
    /// `uname -v`.
    pub version: Option<String>,
    pub arch: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    pub model: Option<String>,
    /// Online CPUs.
    pub count: usize,
    /// Distinct scaling governors with the number of CPUs using each; empty
    /// when the kernel exposes no cpufreq (common in VMs).
    pub governors: Vec<(String, usize)>,
}

/// The block layer's limits for a device (`/sys/block/<dev>/queue`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueLimits {
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    pub max_sectors_kb: Option<u32>,
    pub max_hw_sectors_kb: Option<u32>,
    pub nr_requests: Option<u32>,
    /// The active I/O scheduler (the one in brackets).
    pub scheduler: Option<String>,
    pub rotational: Option<bool>,
    /// Whether the queue supports polled I/O (hipri).
    pub io_poll: Option<bool>,
    /// `write back` or `write through` (queue/write_cache).
    #[serde(default)]
    pub write_cache: Option<String>,
    /// Merging: 0 on, 1 only simple, 2 off (queue/nomerges).
    #[serde(default)]
    pub nomerges: Option<u32>,
    /// Completion CPU: 0 any, 1 same group, 2 the submitting CPU.
    #[serde(default)]
    pub rq_affinity: Option<u32>,
}

/// The device that serves a target's I/O, as the environment records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceInfo {
    pub name: String,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    pub queue: QueueLimits,
    /// Firmware revision (NVMe `firmware_rev`, SCSI/ATA `rev`).
    #[serde(default)]
    pub firmware: Option<String>,
    /// The NUMA node the device's controller hangs off (-1: none).
    #[serde(default)]
    pub numa_node: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FsInfo {
    pub fs_type: String,
    pub block_size: Option<u64>,
    #[serde(with = "crate::osstr::serde_path")]
    pub mount_point: PathBuf,
    pub source: String,
    pub mount_options: String,
    pub super_options: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
    Other,
    #[default]
    Missing,
}

/// What the environment knows about one target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetEnv {
    #[serde(with = "crate::osstr::serde_path")]
    pub path: PathBuf,
    pub kind: TargetKind,
    /// The file system a target file is on (`None` for block devices).
    pub fs: Option<FsInfo>,
    /// The device the I/O reaches first: the target device itself, or the
    /// device (disk, not partition) under the file system.
    pub device: Option<DeviceInfo>,
    /// Every device under the target (see [`resolve`]).
    pub devices: Vec<BlockDev>,
    /// Direct-I/O alignment (memory, offset) from statx `STATX_DIOALIGN`.
    pub dio_align: Option<(u32, u32)>,
}

/// The whole environment of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub kernel: Kernel,
    pub clock: ClockInfo,
    pub cpu: Cpu,
    pub mem_total_bytes: Option<u64>,
    pub targets: Vec<TargetEnv>,
    /// NUMA placement: how many nodes, and where this run was allowed to
    /// run and allocate (so two results can be compared knowing it).
    pub numa: Numa,
}

/// NUMA nodes and the placement the process was given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Numa {
    /// Online nodes (`/sys/devices/system/node/node*`); 0 when unknown.
    pub nodes: usize,
    /// `Cpus_allowed_list` and `Mems_allowed_list` of /proc/self/status.
    pub cpus_allowed: Option<String>,
    pub mems_allowed: Option<String>,
}

/// The clock latencies are measured with: what it is, its resolution, and
/// what one reading costs here (so a reader can judge sub-µs figures).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockInfo {
    pub source: String,
    pub kernel_clocksource: Option<String>,
    pub resolution_ns: u64,
    /// Mean cost of one reading, from 100 000 back-to-back readings.
    pub cost_ns: f64,
    /// Readings per I/O batch in the worker loop (stage/commit, reap).
    pub reads_per_batch: u32,
}

/// How a device relates to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DevRole {
    /// The target itself is this block device.
    Target,
    /// The device holding the file system the target file is on.
    Filesystem,
    /// The whole disk a partition belongs to.
    ParentDisk,
    /// A device under a loop device's backing file.
    LoopBacking,
    /// A component of a device-mapper or md device.
    Slave,
}

/// One block device under a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDev {
    /// Kernel name (`sda1`, `loop0`, `nvme0n1`).
    pub name: String,
    pub major: u32,
    pub minor: u32,
    /// The sysfs directory holding its `stat` file.
    #[serde(with = "crate::osstr::serde_path")]
    pub sysfs: PathBuf,
    pub role: DevRole,
    pub is_partition: bool,
    /// For a loop device: its backing file.
    #[serde(with = "crate::osstr::serde_opt_path")]
    pub backing_file: Option<PathBuf>,
}

impl DevRole {
    /// The JSON name (`filesystem`, `parent_disk`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            DevRole::Target => "target",
            DevRole::Filesystem => "filesystem",
            DevRole::ParentDisk => "parent_disk",
            DevRole::LoopBacking => "loop_backing",
            DevRole::Slave => "slave",
        }
    }
}
