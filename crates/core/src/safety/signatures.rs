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

/// Bytes the original head checks need: the btrfs superblock magic at
/// 64 KiB + 64 and a swap signature on 64 KiB pages. [`probe_magic_fd`]
/// reads more ([`HEAD_BYTES`], [`TAIL_BYTES`]) for the other formats.
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
    fn from_blkid(name: &str) -> Signature {
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
fn detect_magic(head: &[u8]) -> Vec<Signature> {
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

/// The signatures in the last bytes of a range: a GPT backup header, md
/// superblocks kept at the end (0.90, 1.0) and the ZFS labels L2/L3.
/// `tail` holds the last `tail.len()` bytes of a range `size` bytes long.
fn detect_tail(tail: &[u8], size: u64) -> Vec<Signature> {
    let mut out = Vec::new();
    let base = size.saturating_sub(tail.len() as u64);
    let at_abs =
        |abs: u64, magic: &[u8]| -> bool { abs >= base && has(tail, (abs - base) as usize, magic) };
    // The backup GPT header lives in the last LBA.
    if [512u64, 4096]
        .iter()
        .any(|&lba| size >= lba && at_abs(size - lba, b"EFI PART"))
    {
        out.push(Signature::Gpt);
    }
    // md 0.90: 64 KiB-aligned, 64 KiB before the end; md 1.0: 4 KiB-aligned,
    // 8 KiB before the end. Magic 0xa92b4efc in either byte order (0.90 is
    // host-endian).
    let md = |abs: u64| at_abs(abs, &MD_MAGIC_LE) || at_abs(abs, &MD_MAGIC_BE);
    let v090 = (size & !0xffff).checked_sub(0x10000);
    let v10 = size.checked_sub(8192).map(|o| o & !4095);
    if v090.is_some_and(md) || v10.is_some_and(md) {
        out.push(Signature::Other("linux_raid_member".into()));
    }
    // ZFS labels 2 and 3 in the last 512 KiB of the 256 KiB-aligned size.
    let psize = size & !(ZFS_LABEL - 1);
    let zfs = [2u64, 1].iter().any(|&k| {
        psize
            .checked_sub(k * ZFS_LABEL)
            .is_some_and(|l| l >= base && zfs_label(tail, (l - base) as usize))
    });
    if zfs {
        out.push(Signature::Other("zfs_member".into()));
    }
    out
}

const MD_MAGIC_LE: [u8; 4] = [0xfc, 0x4e, 0x2b, 0xa9];
const MD_MAGIC_BE: [u8; 4] = [0xa9, 0x2b, 0x4e, 0xfc];
const ZFS_LABEL: u64 = 256 * 1024;

/// Whether a ZFS vdev label starts at `off` of `buf`: an uberblock with the
/// magic 0x00bab10c (either byte order) in its uberblock ring (second half).
fn zfs_label(buf: &[u8], off: usize) -> bool {
    const LE: [u8; 8] = [0x0c, 0xb1, 0xba, 0, 0, 0, 0, 0];
    const BE: [u8; 8] = [0, 0, 0, 0, 0, 0xba, 0xb1, 0x0c];
    (0..128).any(|i| {
        let o = off + 128 * 1024 + i * 1024;
        has(buf, o, &LE) || has(buf, o, &BE)
    })
}

/// A FAT boot sector: a jump instruction, a plausible BIOS parameter block
/// and one of the FAT type strings (or the boot signature).
fn is_fat(head: &[u8]) -> bool {
    let Some(b) = at(head, 0, 512) else {
        return false;
    };
    let bps = u16::from_le_bytes([b[11], b[12]]);
    let spc = b[13];
    let reserved = u16::from_le_bytes([b[14], b[15]]);
    let fats = b[16];
    (b[0] == 0xeb || b[0] == 0xe9)
        && [512, 1024, 2048, 4096].contains(&bps)
        && spc.is_power_of_two()
        && reserved > 0
        && (1..=2).contains(&fats)
        && (has(head, 54, b"FAT1")
            || has(head, 54, b"FAT ")
            || has(head, 82, b"FAT32")
            || has(head, 510, &[0x55, 0xaa]))
}

/// Signatures that live at the start of a range, beyond [`detect_magic`]'s
/// original set: FAT, exFAT, NTFS, ISO 9660, squashfs, md 1.1/1.2, bcache,
/// ZFS labels 0/1.
fn detect_more(head: &[u8]) -> Vec<Signature> {
    let mut out = Vec::new();
    let other = |s: &str| Signature::Other(s.into());
    if has(head, 3, b"EXFAT   ") {
        out.push(other("exfat"));
    } else if has(head, 3, b"NTFS    ") {
        out.push(other("ntfs"));
    } else if is_fat(head) {
        out.push(other("vfat"));
    }
    if has(head, 0x8001, b"CD001") {
        out.push(other("iso9660"));
    }
    if has(head, 0, b"hsqs") || has(head, 0, b"sqsh") {
        out.push(other("squashfs"));
    }
    if has(head, 0, &MD_MAGIC_LE) || has(head, 4096, &MD_MAGIC_LE) {
        out.push(other("linux_raid_member"));
    }
    const BCACHE: [u8; 16] = [
        0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d,
        0x81,
    ];
    if has(head, 4096 + 24, &BCACHE) {
        out.push(other("bcache"));
    }
    if zfs_label(head, 0) || zfs_label(head, ZFS_LABEL as usize) {
        out.push(other("zfs_member"));
    }
    out
}

/// Drop the cached pages of an open file or device (best effort: the pages
/// a read-only probe leaves behind would distort the direct I/O to come).
fn drop_cache(f: &File) {
    let _ = dioscope_sys::fs::fadvise_dontneed(f.as_raw_fd());
}

/// Bytes read at each end of a probed range.
const HEAD_BYTES: usize = 512 * 1024;
const TAIL_BYTES: usize = 1024 * 1024;

fn read_full(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut len = 0;
    while len < buf.len() {
        match f.read_at(&mut buf[len..], at + len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(len)
}

/// Size in bytes of an open file or block device.
pub fn size_of(f: &File) -> io::Result<u64> {
    use std::os::unix::fs::FileTypeExt;
    let m = f.metadata()?;
    if m.file_type().is_block_device() {
        dioscope_sys::block::size_bytes(f.as_raw_fd())
    } else {
        Ok(m.len())
    }
}

/// Our own magic-byte checks over `len` bytes of `f` from `start`: its head
/// and its tail, read-only, through the descriptor (never a path).
fn probe_magic_fd(f: &File, start: u64, len: u64) -> io::Result<Vec<Signature>> {
    let mut head = vec![0u8; HEAD_BYTES.min(len as usize)];
    let n = read_full(f, &mut head, start)?;
    head.truncate(n);
    let mut found = detect_magic(&head);
    for s in detect_more(&head) {
        if !found.contains(&s) {
            found.push(s);
        }
    }
    let tlen = (TAIL_BYTES as u64).min(len);
    let mut tail = vec![0u8; tlen as usize];
    let n = read_full(f, &mut tail, start + len - tlen)?;
    if n as u64 == tlen {
        for s in detect_tail(&tail, len) {
            if !found.contains(&s) {
                found.push(s);
            }
        }
    }
    drop_cache(f);
    Ok(found)
}

/// Read the head of `path` read-only and run the magic-byte checks on it.
/// Works on image files as well as devices.
pub fn probe_magic(path: &Path) -> io::Result<Vec<Signature>> {
    let f = File::open(path)?;
    let len = size_of(&f)?;
    probe_magic_fd(&f, 0, len)
}

/// The `blkid` executable: the first in `PATH`, then the sbin directories
/// (it usually lives in one that is not in a normal user's `PATH`).
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
fn parse_blkid_export(text: &str) -> Vec<Signature> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("TYPE=")
                .or_else(|| l.strip_prefix("PTTYPE="))
        })
        .map(|v| Signature::from_blkid(v.trim()))
        .collect()
}

/// Whether text is what `blkid -o export` prints: `KEY=value` lines with
/// upper-case keys, DEVNAME among them. Anything else came from another
/// program or another format, and proves nothing.
fn is_blkid_export(text: &str) -> bool {
    let mut devname = false;
    for l in text.lines().filter(|l| !l.is_empty()) {
        let Some((k, _)) = l.split_once('=') else {
            return false;
        };
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        {
            return false;
        }
        devname |= k == "DEVNAME";
    }
    devname
}

/// Ask util-linux's `blkid -p` (low-level probing, no cache) what `len`
/// bytes of `f` from `start` carry. The device is handed over as blkid's
/// standard input, so blkid reads the object we opened, whatever its path
/// points at now. `Err` says why the check could not be made: blkid missing,
/// not util-linux's, not startable, or printing something unexpected.
pub fn probe_blkid_fd(f: &File, start: u64, len: u64) -> Result<Vec<Signature>, String> {
    let blkid = find_blkid()
        .ok_or_else(|| "blkid (util-linux) is not installed; install util-linux".to_string())?;
    let version = Command::new(&blkid)
        .arg("-V")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("{} could not be started: {e}", blkid.display()))?;
    let v = String::from_utf8_lossy(&version.stdout);
    if !version.status.success() || !v.contains("util-linux") {
        return Err(format!(
            "{} is not util-linux's blkid (`blkid -V` printed {:?})",
            blkid.display(),
            v.trim()
        ));
    }
    let stdin = f
        .try_clone()
        .map_err(|e| format!("duplicating the descriptor for blkid: {e}"))?;
    let out = Command::new(&blkid)
        .args(["-p", "-o", "export", "-O", &start.to_string()])
        .args(["-S", &len.to_string(), "/dev/stdin"])
        .stdin(Stdio::from(stdin))
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("{} could not be started: {e}", blkid.display()))?;
    drop_cache(f);
    let text = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) if is_blkid_export(&text) => Ok(parse_blkid_export(&text)),
        Some(2) if text.trim().is_empty() => Ok(Vec::new()),
        Some(8) => Ok(vec![Signature::Other(
            "ambivalent (several signatures)".into(),
        )]),
        code => Err(format!(
            "{} -p gave an unexpected answer (exit {}, output {:?})",
            blkid.display(),
            code.map_or("by signal".into(), |c| c.to_string()),
            text.chars().take(80).collect::<String>()
        )),
    }
}

/// Every signature in `len` bytes of `f` from `start`: our magic-byte check,
/// then blkid. A blkid that cannot answer is an error (fail closed), unless
/// our own check already found something.
pub fn probe_fd(f: &File, start: u64, len: u64) -> Result<Vec<Signature>, String> {
    let mut found =
        probe_magic_fd(f, start, len).map_err(|e| format!("reading the device: {e}"))?;
    match probe_blkid_fd(f, start, len) {
        Ok(more) => {
            for s in more {
                if !found.contains(&s) {
                    found.push(s);
                }
            }
        }
        Err(e) if found.is_empty() => return Err(e),
        Err(_) => {}
    }
    Ok(found)
}

/// Every signature on `path` (opened read-only here), our check and blkid.
pub fn probe(path: &Path, use_blkid: bool) -> io::Result<Vec<Signature>> {
    let f = File::open(path)?;
    let len = size_of(&f)?;
    if !use_blkid {
        return probe_magic_fd(&f, 0, len);
    }
    probe_fd(&f, 0, len).map_err(io::Error::other)
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
