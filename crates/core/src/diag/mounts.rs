//! /proc/self/mountinfo: which mount holds a path, with its device, file
//! system and options. Below both [`super::device`] (resolving a file to its
//! block device) and [`super::env`] (the file system a target is on).

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    pub dev: (u32, u32),
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
    /// Per-mount options (`rw,relatime`).
    pub mount_options: String,
    /// File-system options (`rw,discard,space_cache=v2`).
    pub super_options: String,
}

impl Mount {
    /// Whether `opt` is among the mount or file-system options.
    pub fn has_option(&self, opt: &str) -> bool {
        self.mount_options
            .split(',')
            .chain(self.super_options.split(','))
            .any(|o| o == opt)
    }
}

/// Parse the text of /proc/self/mountinfo, skipping malformed lines: a
/// view of the one parser, [`crate::safety::mounts::parse_mountinfo`]
/// (without resolving sources to devices, which the diagnostics do not need).
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    crate::safety::mounts::parse_mountinfo(text, |_| None)
        .into_iter()
        .map(|m| Mount {
            dev: (m.devnum.major, m.devnum.minor),
            mount_point: m.mount_point,
            fs_type: m.fstype,
            source: m.source,
            mount_options: m.mount_options,
            super_options: m.super_options,
        })
        .collect()
}

pub fn read_mountinfo() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|s| parse_mountinfo(&s))
        .unwrap_or_default()
}

/// The mount that contains `path`: the longest mount point that is a
/// component-wise prefix of its canonical path; of equal ones the last
/// mounted (it hides the others).
pub fn mount_for(mounts: &[Mount], path: &Path) -> Option<Mount> {
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut best: Option<&Mount> = None;
    for m in mounts {
        if canon.starts_with(&m.mount_point)
            && match best {
                None => true,
                Some(b) => m.mount_point.components().count() >= b.mount_point.components().count(),
            }
        {
            best = Some(m);
        }
    }
    best.cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
40 27 0:35 / /mnt/my\\040disk rw,noatime - btrfs /dev/loop3 rw,space_cache=v2,subvolid=5,subvol=/
41 40 0:36 / /mnt/my\\040disk/inner rw - xfs /dev/loop4 rw,attr2
bad line
";

    #[test]
    fn mountinfo_parsing_and_longest_prefix() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 4);
        assert_eq!(m[2].mount_point, PathBuf::from("/mnt/my disk"));
        assert_eq!(m[2].dev, (0, 35));
        assert_eq!(m[2].source, "/dev/loop3");
        assert!(m[2].has_option("space_cache=v2"));
        assert!(m[2].has_option("noatime"));
        assert!(!m[2].has_option("nodatasum"));
        let f = |p: &str| mount_for(&m, Path::new(p)).unwrap().fs_type;
        assert_eq!(f("/mnt/my disk/inner/x"), "xfs");
        assert_eq!(f("/mnt/my disk/innerx"), "btrfs");
        assert_eq!(f("/etc/hostname-that-does-not-exist"), "ext4");
    }

    #[test]
    fn octal_escapes() {
        assert_eq!(crate::safety::mounts::unescape("a\\040b\\134c"), "a b\\c");
    }
}
