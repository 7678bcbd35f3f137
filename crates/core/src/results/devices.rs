//! Device accounting as plain data: a device's `/proc/diskstats`-style
//! counters, the metrics derived from them per application I/O, and one
//! device's report for a trial or a whole run (`"dioscope": {"devices":
//! …, "device_totals": …}`). The diagnosis (`diag::device`) reads and
//! derives them.

use super::environment::DevRole;
use serde::{Deserialize, Serialize};

/// The counters of `/sys/block/<dev>/stat` (Documentation/block/stat.rst).
/// Sectors are 512 bytes whatever the device's sector size; times are ms.
/// Kernels before 4.18 have no discard fields and before 5.5 no flush fields;
/// those read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskStat {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks_ms: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ticks_ms: u64,
    pub in_flight: u64,
    pub io_ticks_ms: u64,
    pub time_in_queue_ms: u64,
    pub discard_ios: u64,
    pub discard_merges: u64,
    pub discard_sectors: u64,
    pub discard_ticks_ms: u64,
    pub flush_ios: u64,
    pub flush_ticks_ms: u64,
}

/// What a device did during an interval, per application I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMetrics {
    /// Read + write requests completed by the device (discards and flushes
    /// are counted separately).
    pub requests: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    pub bytes: u64,
    /// Device requests per application I/O; `None` when the application did
    /// no I/O.
    pub requests_per_io: Option<f64>,
    /// Bytes per device request; `None` without requests.
    pub avg_request_bytes: Option<f64>,
    /// Requests merged into others by the block layer.
    pub merges: u64,
    /// Share of the wall time the device had I/O in flight, in % (can exceed
    /// what the device can do in parallel: 100 % does not mean saturated on
    /// SSDs, which serve many requests at once).
    pub util_pct: Option<f64>,
    /// Mean time a request spent in the queue and device, in ms.
    pub avg_wait_ms: Option<f64>,
    pub discards: u64,
    pub flushes: u64,
}

/// One device's accounting for one trial, for the JSON and the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    pub device: String,
    pub role: DevRole,
    pub delta: DiskStat,
    pub metrics: DeviceMetrics,
}
