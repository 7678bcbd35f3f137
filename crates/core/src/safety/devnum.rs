//! Block device numbers (`major:minor`), the one identity that survives
//! symlinks, bind mounts and duplicate device nodes.

use serde::Serialize;
use std::fmt;

/// A device number, as `/proc/self/mountinfo` and `/sys/.../dev` print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

impl DevNum {
    /// Split a `dev_t` as returned by `stat` (`st_rdev`, `st_dev`).
    ///
    /// Linux's user-space encoding keeps the low 8 bits of the minor in bits
    /// 0..8, the major's low 12 bits in 8..20, the minor's next 12 bits in
    /// 20..32 and the high halves of both above 32 (glibc's `gnu_dev_major`).
    pub fn from_dev_t(dev: u64) -> DevNum {
        DevNum {
            major: (((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000)) as u32,
            minor: ((dev & 0xff) | ((dev >> 12) & 0xffff_ff00)) as u32,
        }
    }

    /// Parse `"8:1"` (surrounding whitespace allowed, as in sysfs `dev` files).
    pub fn parse(s: &str) -> Option<DevNum> {
        let (ma, mi) = s.trim().split_once(':')?;
        Some(DevNum {
            major: ma.parse().ok()?,
            minor: mi.parse().ok()?,
        })
    }
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_dev_t_like_glibc() {
        // 8:1 (sda1) and 259:0 (first NVMe/extended partition) in the old
        // 16-bit range, and a large minor that needs the high bits.
        assert_eq!(DevNum::from_dev_t(0x0801), DevNum { major: 8, minor: 1 });
        assert_eq!(
            DevNum::from_dev_t(0x10300),
            DevNum {
                major: 259,
                minor: 0
            }
        );
        let big = (7u64 << 8) | 0x34 | (0x12u64 << 20);
        assert_eq!(
            DevNum::from_dev_t(big),
            DevNum {
                major: 7,
                minor: 0x1234
            }
        );
    }

    #[test]
    fn parses_sysfs_dev_files() {
        assert_eq!(DevNum::parse("7:3\n"), Some(DevNum { major: 7, minor: 3 }));
        assert_eq!(DevNum::parse("7-3"), None);
        assert_eq!(DevNum::parse("x:3"), None);
        assert_eq!(
            DevNum {
                major: 259,
                minor: 2
            }
            .to_string(),
            "259:2"
        );
    }
}
