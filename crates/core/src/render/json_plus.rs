//! fio's `json+`: [`super::json`] with the latency histogram bins, which
//! fio's own json+ consumers (`fio_jsonplus_clat2csv`) read.

use super::json::Json;
use super::Format;
use crate::results::RunDoc;

pub const FORMAT: Format<RunDoc> = Format {
    name: "json+",
    aliases: &[],
    help: "json with the latency histogram bins (fio's json+)",
    exporter: &Json { bins: true },
};
