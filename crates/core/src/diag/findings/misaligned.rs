use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// A size or offset the target cannot do direct I/O with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Misaligned {
    /// The option, e.g. `bs` or `offset`.
    pub option: String,
    pub value: u64,
    pub alignment: u64,
    /// Where the alignment comes from (statx or the logical block size).
    pub source: String,
    /// The nearest valid values below and above (below is `None` when
    /// there is no positive one).
    pub lower: Option<u64>,
    pub upper: u64,
}

impl Describe for Misaligned {
    fn severity(&self) -> Severity {
        Severity::Critical
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            option,
            value,
            alignment,
            source,
            lower,
            upper,
        } = self;
        write!(
            f,
            "{option}={value} is not a multiple of {alignment} ({source}): direct \
             I/O fails with EINVAL. Use "
        )?;
        match lower {
            Some(l) => write!(
                f,
                "{option}={l} or {option}={upper}, the nearest valid values."
            ),
            None => write!(f, "{option}={upper}, the nearest valid value."),
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    Misaligned {
        option: "bs".into(),
        value: 1000,
        alignment: 512,
        source: "statx".into(),
        lower: Some(512),
        upper: 1024,
    }
    .into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_nearest_values() {
        let t = super::example().to_string();
        assert!(t.contains("bs=512 or bs=1024"), "{t}");
    }
}
