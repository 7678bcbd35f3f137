//! What the kernel itself uses a block device for: mounted filesystems
//! (`/proc/self/mountinfo`) and active swap (`/proc/swaps`).

use super::devnum::DevNum;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;

/// One line of `/proc/self/mountinfo`, reduced to what identifies the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Field 3. For btrfs this is an anonymous `0:N`, not the disk, which is
    /// why [`Mount::source_dev`] is kept as well.
    pub devnum: DevNum,
    pub mount_point: PathBuf,
    pub fstype: String,
    /// The mount source (`/dev/loop3`, `tmpfs`, `server:/export`).
    pub source: String,
    /// The device number behind `source`, when it names a block device.
    pub source_dev: Option<DevNum>,
    /// Per-mount options (`rw,relatime`).
    pub mount_options: String,
    /// File-system options (`rw,discard,space_cache=v2`).
    pub super_options: String,
}

impl Mount {
    pub fn is_on(&self, dev: DevNum) -> bool {
        self.devnum == dev || self.source_dev == Some(dev)
    }
}

/// Undo the kernel's octal escapes (`\040` for space, `\011`, `\012`, `\134`)
/// used in mountinfo and swaps paths.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) if b[i] == b'\\' => {
                let v = d.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Device number of a path when it is a block device node.
pub fn block_devnum(path: &str) -> Option<DevNum> {
    let m = fs::metadata(path).ok()?;
    m.file_type()
        .is_block_device()
        .then(|| DevNum::from_dev_t(m.rdev()))
}

/// Parse mountinfo text: the one mountinfo parser of dioscope (the
/// diagnostics' view in `diag::mounts` is built from it). `resolve` maps a source path to its device number
/// (normally [`block_devnum`]; a stub in tests). Malformed lines are skipped.
pub fn parse_mountinfo(text: &str, resolve: impl Fn(&str) -> Option<DevNum>) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in text.lines() {
        // 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        let (Some(num), Some(mp), Some(opts), Some(fstype), Some(source)) =
            (f.get(2), f.get(4), f.get(5), r.first(), r.get(1))
        else {
            continue;
        };
        let Some(devnum) = DevNum::parse(num) else {
            continue;
        };
        let source = unescape(source);
        let source_dev = if source.starts_with('/') {
            resolve(&source)
        } else {
            None
        };
        out.push(Mount {
            devnum,
            mount_point: PathBuf::from(unescape(mp)),
            fstype: unescape(fstype),
            source,
            source_dev,
            mount_options: opts.to_string(),
            super_options: r.get(2).unwrap_or(&"").to_string(),
        });
    }
    out
}

/// The swap areas listed in `/proc/swaps` (paths, first column).
pub fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(|p| {
            let p = unescape(p);
            p.strip_suffix("(deleted)")
                .map_or(p.clone(), |s| s.trim_end().to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw
40 27 7:3 / /mnt/with\\040space rw,relatime shared:5 master:1 - ext4 /dev/loop3 rw
41 27 0:55 / /mnt/b rw,relatime - btrfs /dev/loop4 rw,space_cache=v2
broken line without separator
";

    fn stub(path: &str) -> Option<DevNum> {
        match path {
            "/dev/loop4" => DevNum::parse("7:4"),
            "/dev/loop3" => DevNum::parse("7:3"),
            _ => None,
        }
    }

    #[test]
    fn mountinfo_fields_and_escapes() {
        let m = parse_mountinfo(MOUNTINFO, stub);
        assert_eq!(m.len(), 4);
        assert_eq!(m[2].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!(m[2].fstype, "ext4");
        assert!(m[2].is_on(DevNum::parse("7:3").unwrap()));
        assert_eq!(m[0].source_dev, None);
    }

    #[test]
    fn btrfs_is_found_through_its_source_not_its_anonymous_devnum() {
        let m = parse_mountinfo(MOUNTINFO, stub);
        let loop4 = DevNum::parse("7:4").unwrap();
        let on: Vec<_> = m.iter().filter(|m| m.is_on(loop4)).collect();
        assert_eq!(on.len(), 1);
        assert_eq!(on[0].mount_point, PathBuf::from("/mnt/b"));
        assert_eq!(on[0].devnum, DevNum::parse("0:55").unwrap());
    }

    #[test]
    fn swaps_paths() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/loop7                              partition\t16380\t\t0\t\t-2\n\
                    /swap\\040file                          file\t\t1024\t\t0\t\t-3\n";
        assert_eq!(parse_swaps(text), ["/dev/loop7", "/swap file"]);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn unescape_leaves_other_backslashes() {
        assert_eq!(unescape("a\\134b"), "a\\b");
        assert_eq!(unescape("a\\x"), "a\\x");
        assert_eq!(unescape("end\\04"), "end\\04");
    }
}
