//! Does a device carry data? Partition tables and filesystem, swap, LUKS and
//! LVM signatures, found two ways: our own check of the magic bytes in the
//! first [`PROBE_BYTES`] (always available), and `blkid -p` when it is
//! installed (it knows many more formats). Either one finding something is
//! enough to refuse.
//!
//! Every probe opens the device read-only: a read-write open, even one that
//! writes nothing, makes udev run blkid on close (seed 004), which fills the
//! page cache we are trying to keep empty. For the same reason the pages our
//! probes read are dropped again afterwards.

use serde::Serialize;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Bytes read from the start of the device: enough for the btrfs superblock
/// magic at 64 KiB + 64 and a swap signature on 64 KiB pages.
pub const PROBE_BYTES: usize = 70 * 1024;

/// A signature found on a device. Names follow blkid's `TYPE`/`PTTYPE` values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Signature {
    Gpt,
    /// An MBR (DOS) partition table.
    Mbr,
    Ext2,
    Ext3,
    Ext4,
    /// An ext3/4 external journal device.
    Jbd,
    Xfs,
    Btrfs,
    Swap,
    /// A hibernation image in a swap area.
    SwSuspend,
    Luks,
    Lvm2,
    /// Anything else blkid names (vfat, ntfs, zfs_member, ...).
    Other(String),
}

impl Signature {
    /// blkid's name for it.
    pub fn name(&self) -> &str {
        match self {
            Signature::Gpt => "gpt",
            Signature::Mbr => "dos",
            Signature::Ext2 => "ext2",
            Signature::Ext3 => "ext3",
            Signature::Ext4 => "ext4",
            Signature::Jbd => "jbd",
            Signature::Xfs => "xfs",
            Signature::Btrfs => "btrfs",
            Signature::Swap => "swap",
            Signature::SwSuspend => "swsuspend",
            Signature::Luks => "crypto_LUKS",
            Signature::Lvm2 => "LVM2_member",
            Signature::Other(s) => s,
        }
    }

    /// From a blkid `TYPE`/`PTTYPE` value.
    pub fn from_blkid(name: &str) -> Signature {
        [
            Signature::Gpt,
            Signature::Mbr,
            Signature::Ext2,
            Signature::Ext3,
            Signature::Ext4,
            Signature::Jbd,
            Signature::Xfs,
            Signature::Btrfs,
            Signature::Swap,
            Signature::SwSuspend,
            Signature::Luks,
            Signature::Lvm2,
        ]
        .into_iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| Signature::Other(name.to_string()))
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn at(buf: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    buf.get(off..off.checked_add(len)?)
}

fn has(buf: &[u8], off: usize, magic: &[u8]) -> bool {
    at(buf, off, magic.len()) == Some(magic)
}

fn le32(buf: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(at(buf, off, 4)?.try_into().ok()?))
}

/// The page sizes Linux runs with; swap puts its signature at the end of the
/// first page.
const PAGE_SIZES: [usize; 4] = [4096, 8192, 16384, 65536];

fn ext_kind(buf: &[u8]) -> Option<Signature> {
    // Superblock at 1024; s_magic 0xEF53 (little-endian) at +0x38.
    const SB: usize = 1024;
    if at(buf, SB + 0x38, 2)? != [0x53, 0xef] {
        return None;
    }
    let compat = le32(buf, SB + 0x5c)?;
    let incompat = le32(buf, SB + 0x60)?;
    let ro_compat = le32(buf, SB + 0x64)?;
    const INCOMPAT_JOURNAL_DEV: u32 = 0x8;
    const COMPAT_HAS_JOURNAL: u32 = 0x4;
    // What ext3 understands: filetype, recover, meta_bg; and read-only
    // sparse_super, large_file, btree_dir. Anything beyond is ext4.
    const EXT3_INCOMPAT: u32 = 0x2 | 0x4 | 0x10;
    const EXT3_RO_COMPAT: u32 = 0x1 | 0x2 | 0x4;
    Some(if incompat & INCOMPAT_JOURNAL_DEV != 0 {
        Signature::Jbd
    } else if incompat & !EXT3_INCOMPAT != 0 || ro_compat & !EXT3_RO_COMPAT != 0 {
        Signature::Ext4
    } else if compat & COMPAT_HAS_JOURNAL != 0 {
        Signature::Ext3
    } else {
        Signature::Ext2
    })
}

/// The four primary entries of a DOS partition table, if sector 0 holds a
/// plausible one: the 0x55AA boot signature, every boot flag 0x00 or 0x80
/// (a FAT or NTFS boot sector fails this), and at least one entry in use
/// with a non-zero length. Returns the partition type bytes of used entries.
fn mbr_types(buf: &[u8]) -> Option<Vec<u8>> {
    if at(buf, 510, 2)? != [0x55, 0xaa] {
        return None;
    }
    let mut types = Vec::new();
    for i in 0..4 {
        let e = at(buf, 446 + 16 * i, 16)?;
        if e[0] != 0 && e[0] != 0x80 {
            return None;
        }
        let sectors = u32::from_le_bytes([e[12], e[13], e[14], e[15]]);
        if e[4] != 0 && sectors != 0 {
            types.push(e[4]);
        }
    }
    (!types.is_empty()).then_some(types)
}

/// The signatures our own magic-byte checks find in the first bytes of a
/// device (`head`, normally [`PROBE_BYTES`] long; shorter is fine).
pub fn detect_magic(head: &[u8]) -> Vec<Signature> {
    let mut out = Vec::new();
    // GPT header ("EFI PART") in LBA 1, for 512-byte and 4096-byte sectors.
    let gpt = has(head, 512, b"EFI PART") || has(head, 4096, b"EFI PART");
    if gpt {
        out.push(Signature::Gpt);
    }
    if let Some(types) = mbr_types(head) {
        // A protective MBR (type 0xEE) is part of a GPT; without the GPT
        // header it still says "partitioned".
        if !(gpt && types.contains(&0xee)) {
            out.push(Signature::Mbr);
        }
    }
    if let Some(ext) = ext_kind(head) {
        out.push(ext);
    }
    if has(head, 0, b"XFSB") {
        out.push(Signature::Xfs);
    }
    // Superblock at 64 KiB; magic after csum[32], fsid[16], bytenr, flags.
    if has(head, 0x10000 + 0x40, b"_BHRfS_M") {
        out.push(Signature::Btrfs);
    }
    for page in PAGE_SIZES {
        let off = page - 10;
        if has(head, off, b"SWAPSPACE2") || has(head, off, b"SWAP-SPACE") {
            out.push(Signature::Swap);
            break;
        }
        if [&b"S1SUSPEND"[..], b"S2SUSPEND", b"ULSUSPEND", b"LINHIB0001"]
            .iter()
            .any(|m| has(head, off, m))
        {
            out.push(Signature::SwSuspend);
            break;
        }
    }
    // LUKS1 and LUKS2 primary header at 0; a LUKS2 secondary header at one
    // of its possible offsets still means "encrypted data here".
    if has(head, 0, b"LUKS\xba\xbe")
        || [0x4000, 0x8000, 0x10000]
            .iter()
            .any(|&o| has(head, o, b"SKUL\xba\xbe"))
    {
        out.push(Signature::Luks);
    }
    // LVM2 label: "LABELONE" at the start of one of the first four sectors,
    // with the label type "LVM2 001" 24 bytes in.
    if (0..4).any(|s| has(head, s * 512, b"LABELONE") && has(head, s * 512 + 24, b"LVM2 001")) {
        out.push(Signature::Lvm2);
    }
    out
}

/// Drop the cached pages of an open file or device (best effort: the pages
/// a read-only probe leaves behind would distort the direct I/O to come).
fn drop_cache(f: &File) {
    let _ = dioscope_sys::fs::fadvise_dontneed(f.as_raw_fd());
}

/// Read the first [`PROBE_BYTES`] of `path` read-only and run
/// [`detect_magic`] on them. Works on image files as well as devices.
pub fn probe_magic(path: &Path) -> io::Result<Vec<Signature>> {
    let f = File::open(path)?;
    let mut buf = vec![0u8; PROBE_BYTES];
    let mut len = 0;
    while len < buf.len() {
        match f.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    drop_cache(&f);
    Ok(detect_magic(&buf[..len]))
}

/// The `blkid` executable, if installed (it usually lives in an sbin
/// directory that is not in a normal user's `PATH`).
pub fn find_blkid() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join("blkid"))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Parse `blkid -p -o export` output: the `TYPE` and `PTTYPE` values.
pub fn parse_blkid_export(text: &str) -> Vec<Signature> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("TYPE=")
                .or_else(|| l.strip_prefix("PTTYPE="))
        })
        .map(|v| Signature::from_blkid(v.trim()))
        .collect()
}

/// Ask `blkid -p` (low-level probing, no cache) what `path` carries. `None`
/// when blkid is missing or failed; an empty list when it found nothing.
pub fn probe_blkid(blkid: &Path, path: &Path) -> Option<Vec<Signature>> {
    let out = Command::new(blkid)
        .args(["-p", "-o", "export"])
        .arg(path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    // blkid reads through the page cache: drop what it left.
    if let Ok(f) = File::open(path) {
        drop_cache(&f);
    }
    match out.status.code() {
        Some(0) => Some(parse_blkid_export(&String::from_utf8_lossy(&out.stdout))),
        // Nothing found.
        Some(2) => Some(Vec::new()),
        // Several signatures that contradict each other: still data.
        Some(8) => Some(vec![Signature::Other(
            "ambivalent (several signatures)".into(),
        )]),
        _ => None,
    }
}

/// Every signature found on `path` by our magic-byte check and, when
/// `use_blkid` and it is installed, by blkid.
pub fn probe(path: &Path, use_blkid: bool) -> io::Result<Vec<Signature>> {
    let mut found = probe_magic(path)?;
    let blkid = if use_blkid { find_blkid() } else { None };
    if let Some(more) = blkid.and_then(|b| probe_blkid(&b, path)) {
        for s in more {
            if !found.contains(&s) {
                found.push(s);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank() -> Vec<u8> {
        vec![0u8; PROBE_BYTES]
    }

    fn put(buf: &mut [u8], off: usize, bytes: &[u8]) {
        buf[off..off + bytes.len()].copy_from_slice(bytes);
    }

    fn mbr_entry(buf: &mut [u8], i: usize, boot: u8, kind: u8, sectors: u32) {
        let e = 446 + 16 * i;
        buf[e] = boot;
        buf[e + 4] = kind;
        put(buf, e + 8, &2048u32.to_le_bytes());
        put(buf, e + 12, &sectors.to_le_bytes());
        put(buf, 510, &[0x55, 0xaa]);
    }

    #[test]
    fn blank_and_short_buffers_carry_nothing() {
        assert!(detect_magic(&blank()).is_empty());
        assert!(detect_magic(&[]).is_empty());
        assert!(detect_magic(&[0xff; 100]).is_empty());
    }

    #[test]
    fn mbr_needs_plausible_entries() {
        let mut b = blank();
        put(&mut b, 510, &[0x55, 0xaa]);
        assert!(detect_magic(&b).is_empty(), "boot signature alone");
        mbr_entry(&mut b, 0, 0x80, 0x83, 10_000);
        assert_eq!(detect_magic(&b), [Signature::Mbr]);
        // A FAT boot sector has code where the boot flags would be.
        b[446 + 16] = 0x4e;
        assert!(detect_magic(&b).is_empty());
    }

    #[test]
    fn gpt_absorbs_its_protective_mbr() {
        let mut b = blank();
        mbr_entry(&mut b, 0, 0, 0xee, u32::MAX);
        assert_eq!(detect_magic(&b), [Signature::Mbr], "protective MBR alone");
        put(&mut b, 512, b"EFI PART");
        assert_eq!(detect_magic(&b), [Signature::Gpt]);
        let mut b4k = blank();
        put(&mut b4k, 4096, b"EFI PART");
        assert_eq!(detect_magic(&b4k), [Signature::Gpt]);
    }

    #[test]
    fn ext_generations_by_feature_flags() {
        let sb = |compat: u32, incompat: u32, ro: u32| {
            let mut b = blank();
            put(&mut b, 1024 + 0x38, &[0x53, 0xef]);
            put(&mut b, 1024 + 0x5c, &compat.to_le_bytes());
            put(&mut b, 1024 + 0x60, &incompat.to_le_bytes());
            put(&mut b, 1024 + 0x64, &ro.to_le_bytes());
            detect_magic(&b)
        };
        assert_eq!(sb(0, 0x2, 0x3), [Signature::Ext2]);
        assert_eq!(sb(0x4, 0x2, 0x3), [Signature::Ext3]);
        assert_eq!(sb(0x4, 0x2 | 0x40, 0x3), [Signature::Ext4], "extents");
        assert_eq!(
            sb(0x4, 0x2, 0x3 | 0x400),
            [Signature::Ext4],
            "metadata_csum"
        );
        assert_eq!(sb(0, 0x8, 0), [Signature::Jbd]);
    }

    #[test]
    fn one_magic_each() {
        let cases: [(usize, &[u8], Signature); 8] = [
            (0, b"XFSB", Signature::Xfs),
            (0x10040, b"_BHRfS_M", Signature::Btrfs),
            (4086, b"SWAPSPACE2", Signature::Swap),
            (65526, b"SWAPSPACE2", Signature::Swap),
            (16374, b"S1SUSPEND", Signature::SwSuspend),
            (0, b"LUKS\xba\xbe", Signature::Luks),
            (0x4000, b"SKUL\xba\xbe", Signature::Luks),
            (512, b"LABELONE", Signature::Lvm2),
        ];
        for (off, magic, want) in cases {
            let mut b = blank();
            put(&mut b, off, magic);
            if want == Signature::Lvm2 {
                put(&mut b, off + 24, b"LVM2 001");
            }
            assert_eq!(
                detect_magic(&b),
                std::slice::from_ref(&want),
                "{want} at {off}"
            );
        }
        let mut b = blank();
        put(&mut b, 0, b"LABELONE");
        assert!(detect_magic(&b).is_empty(), "LABELONE without LVM2 type");
        // Truncated just before the btrfs magic ends.
        let mut b = blank();
        put(&mut b, 0x10040, b"_BHRfS_M");
        assert!(detect_magic(&b[..0x10047]).is_empty());
    }

    #[test]
    fn blkid_export_output() {
        let text = "DEVNAME=/dev/loop0\nPTUUID=cf5a\nPTTYPE=gpt\n";
        assert_eq!(parse_blkid_export(text), [Signature::Gpt]);
        let text = "DEVNAME=/dev/loop1\nUUID=1\nBLOCK_SIZE=4096\nTYPE=ext4\nUSAGE=filesystem\n";
        assert_eq!(parse_blkid_export(text), [Signature::Ext4]);
        assert_eq!(
            parse_blkid_export("TYPE=vfat\n"),
            [Signature::Other("vfat".into())]
        );
        assert_eq!(Signature::from_blkid("LVM2_member"), Signature::Lvm2);
    }
}
