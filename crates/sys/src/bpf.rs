//! A BPF object loaded through the system's libbpf (`libbpf.so.1`, opened
//! with `dlopen` when first needed): open an ELF object from memory, set
//! its `.rodata`, choose which programs load, load (libbpf relocates the
//! CO-RE field reads against the kernel's BTF), attach every program by its
//! section (`raw_tp/NAME`), and read or write its maps by file descriptor.
//!
//! Why `dlopen` and not a link-time dependency (libbpf-sys, libbpf-rs):
//! dioscope then builds and runs where libbpf is absent (the raw backend
//! of `--stages` is just unavailable there, and bpftrace is used), with no
//! C library compiled into the build; libbpf's ABI is stable across 1.x,
//! and the dozen functions used here are all in 1.0.

use crate::mmap::FileMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io;
use std::sync::{Mutex, OnceLock};

type Ptr = *mut c_void;
type PrintFn = unsafe extern "C" fn(c_int, *const c_char, Ptr) -> c_int;

/// libbpf's functions used here, resolved once.
struct Lib {
    set_print: unsafe extern "C" fn(Option<PrintFn>) -> Option<PrintFn>,
    open_mem: unsafe extern "C" fn(*const c_void, usize, Ptr) -> Ptr,
    find_map: unsafe extern "C" fn(Ptr, *const c_char) -> Ptr,
    set_initial_value: unsafe extern "C" fn(Ptr, *const c_void, usize) -> c_int,
    initial_value: unsafe extern "C" fn(Ptr, *mut usize) -> *const c_void,
    find_prog: unsafe extern "C" fn(Ptr, *const c_char) -> Ptr,
    set_autoload: unsafe extern "C" fn(Ptr, bool) -> c_int,
    autoload: unsafe extern "C" fn(Ptr) -> bool,
    next_prog: unsafe extern "C" fn(Ptr, Ptr) -> Ptr,
    prog_name: unsafe extern "C" fn(Ptr) -> *const c_char,
    load: unsafe extern "C" fn(Ptr) -> c_int,
    attach: unsafe extern "C" fn(Ptr) -> Ptr,
    link_destroy: unsafe extern "C" fn(Ptr) -> c_int,
    close: unsafe extern "C" fn(Ptr),
    map_fd: unsafe extern "C" fn(Ptr) -> c_int,
    key_size: unsafe extern "C" fn(Ptr) -> u32,
    value_size: unsafe extern "C" fn(Ptr) -> u32,
    lookup: unsafe extern "C" fn(c_int, *const c_void, *mut c_void) -> c_int,
    update: unsafe extern "C" fn(c_int, *const c_void, *const c_void, u64) -> c_int,
    possible_cpus: unsafe extern "C" fn() -> c_int,
}

// SAFETY: the struct holds plain function pointers into a library that is
// never unloaded.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

fn sym(handle: Ptr, name: &str) -> Result<Ptr, String> {
    let c = CString::new(name).expect("no NUL in a symbol name");
    // SAFETY: a valid handle from dlopen and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
    if p.is_null() {
        Err(format!(
            "libbpf.so.1 has no {name} (libbpf older than 1.0?)"
        ))
    } else {
        Ok(p)
    }
}

/// A symbol's address as the function pointer type `F`.
///
/// # Safety
/// `p` must be a function whose C signature `F` spells.
unsafe fn fn_ptr<F: Copy>(p: Ptr) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<Ptr>());
    // SAFETY: same size; the caller vouches for the signature.
    unsafe { std::mem::transmute_copy::<Ptr, F>(&p) }
}

macro_rules! resolve {
    ($h:expr, $($field:ident = $name:literal),* $(,)?) => {
        Lib {
            $(
                // SAFETY: the symbol is libbpf's function of that name, whose
                // C signature the field's type spells (libbpf.h, bpf.h 1.x).
                $field: unsafe { fn_ptr(sym($h, $name)?) },
            )*
        }
    };
}

fn open_lib() -> Result<Lib, String> {
    // SAFETY: a NUL-terminated library name; the handle is never closed.
    let h = unsafe { libc::dlopen(c"libbpf.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err("libbpf.so.1 is not installed (Debian: libbpf1)".into());
    }
    let lib = resolve!(
        h,
        set_print = "libbpf_set_print",
        open_mem = "bpf_object__open_mem",
        find_map = "bpf_object__find_map_by_name",
        set_initial_value = "bpf_map__set_initial_value",
        initial_value = "bpf_map__initial_value",
        find_prog = "bpf_object__find_program_by_name",
        set_autoload = "bpf_program__set_autoload",
        autoload = "bpf_program__autoload",
        next_prog = "bpf_object__next_program",
        prog_name = "bpf_program__name",
        load = "bpf_object__load",
        attach = "bpf_program__attach",
        link_destroy = "bpf_link__destroy",
        close = "bpf_object__close",
        map_fd = "bpf_map__fd",
        key_size = "bpf_map__key_size",
        value_size = "bpf_map__value_size",
        lookup = "bpf_map_lookup_elem",
        update = "bpf_map_update_elem",
        possible_cpus = "libbpf_num_possible_cpus",
    );
    // SAFETY: `log` matches libbpf_print_fn_t.
    unsafe { (lib.set_print)(Some(log)) };
    Ok(lib)
}

fn lib() -> io::Result<&'static Lib> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(open_lib)
        .as_ref()
        .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e.clone()))
}

/// libbpf's last messages (warnings and the verifier's log), kept for an
/// error to quote instead of printed.
static LOG: Mutex<String> = Mutex::new(String::new());
const LOG_KEEP: usize = 4096;

extern "C" {
    fn vsnprintf(buf: *mut c_char, n: usize, fmt: *const c_char, ap: Ptr) -> c_int;
}

unsafe extern "C" fn log(_level: c_int, fmt: *const c_char, ap: Ptr) -> c_int {
    let mut buf = [0 as c_char; 512];
    // SAFETY: libbpf passes its format and va_list; on x86-64 and aarch64
    // a va_list argument is passed as a pointer, as it arrived here.
    let n = unsafe { vsnprintf(buf.as_mut_ptr(), buf.len(), fmt, ap) };
    if n > 0 {
        // SAFETY: vsnprintf NUL-terminates within the buffer.
        let s = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        let mut l = LOG.lock().unwrap_or_else(|e| e.into_inner());
        l.push_str(&s);
        if l.len() > 2 * LOG_KEEP {
            let cut = l.len() - LOG_KEEP;
            let cut = (cut..l.len()).find(|&i| l.is_char_boundary(i)).unwrap_or(0);
            l.drain(..cut);
        }
    }
    0
}

/// libbpf's messages since the last call (its last few KB).
pub fn take_log() -> String {
    std::mem::take(&mut *LOG.lock().unwrap_or_else(|e| e.into_inner()))
}

fn last_errno(ret: c_int) -> io::Error {
    if ret < 0 && ret != -1 {
        io::Error::from_raw_os_error(-ret)
    } else {
        io::Error::last_os_error()
    }
}

fn cname(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// An opened (then loaded, then attached) BPF object; closing it (drop)
/// detaches its programs and frees its maps.
pub struct Object {
    lib: &'static Lib,
    obj: Ptr,
    links: Vec<Ptr>,
}

// SAFETY: libbpf objects are not tied to the thread that opened them; the
// object is used by one owner at a time (`&mut self` for every change).
unsafe impl Send for Object {}

impl Object {
    /// Open an ELF BPF object held in memory (not loaded yet).
    pub fn open(image: &'static [u8]) -> io::Result<Object> {
        let lib = lib()?;
        // SAFETY: the image lives for the whole program; no options.
        let obj =
            unsafe { (lib.open_mem)(image.as_ptr().cast(), image.len(), std::ptr::null_mut()) };
        if obj.is_null() {
            return Err(io::Error::last_os_error());
        }
        Ok(Object {
            lib,
            obj,
            links: Vec::new(),
        })
    }

    fn map_ptr(&self, name: &str) -> io::Result<Ptr> {
        let c = cname(name)?;
        // SAFETY: a live object and a NUL-terminated name.
        let m = unsafe { (self.lib.find_map)(self.obj, c.as_ptr()) };
        if m.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("the BPF object has no map {name}"),
            ));
        }
        Ok(m)
    }

    /// Replace the whole `.rodata` (before [`Object::load`]); its size must
    /// be the object's.
    pub fn set_rodata(&mut self, bytes: &[u8]) -> io::Result<()> {
        let m = self.map_ptr(".rodata")?;
        let mut size = 0usize;
        // SAFETY: a map of this object; libbpf writes the size.
        let cur = unsafe { (self.lib.initial_value)(m, &mut size) };
        if cur.is_null() || size != bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(".rodata is {size} bytes, the configuration {}", bytes.len()),
            ));
        }
        // SAFETY: a buffer of exactly the map's initial value size.
        let r = unsafe { (self.lib.set_initial_value)(m, bytes.as_ptr().cast(), bytes.len()) };
        if r < 0 {
            return Err(last_errno(r));
        }
        Ok(())
    }

    /// Whether the program named `prog` loads (before [`Object::load`]).
    pub fn set_autoload(&mut self, prog: &str, on: bool) -> io::Result<()> {
        let c = cname(prog)?;
        // SAFETY: a live object and a NUL-terminated name.
        let p = unsafe { (self.lib.find_prog)(self.obj, c.as_ptr()) };
        if p.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("the BPF object has no program {prog}"),
            ));
        }
        // SAFETY: a program of this object, not loaded yet.
        let r = unsafe { (self.lib.set_autoload)(p, on) };
        if r < 0 {
            return Err(last_errno(r));
        }
        Ok(())
    }

    /// Create the maps and load the programs (the kernel verifies them).
    pub fn load(&mut self) -> io::Result<()> {
        // SAFETY: a live object, opened and not loaded.
        let r = unsafe { (self.lib.load)(self.obj) };
        if r < 0 {
            return Err(last_errno(r));
        }
        Ok(())
    }

    /// Attach every loaded program where its section says; an error names
    /// the program.
    pub fn attach_all(&mut self) -> io::Result<()> {
        let mut p: Ptr = std::ptr::null_mut();
        loop {
            // SAFETY: a loaded object; `p` is null or its previous program.
            p = unsafe { (self.lib.next_prog)(self.obj, p) };
            if p.is_null() {
                return Ok(());
            }
            // SAFETY: a program of this object.
            if !unsafe { (self.lib.autoload)(p) } {
                continue;
            }
            // SAFETY: a loaded program of this object.
            let link = unsafe { (self.lib.attach)(p) };
            if link.is_null() {
                let e = io::Error::last_os_error();
                // SAFETY: libbpf returns the program's NUL-terminated name.
                let name = unsafe { CStr::from_ptr((self.lib.prog_name)(p)) };
                return Err(io::Error::new(
                    e.kind(),
                    format!("attaching {} failed: {e}", name.to_string_lossy()),
                ));
            }
            self.links.push(link);
        }
    }

    /// A map of the loaded object.
    pub fn map(&self, name: &str) -> io::Result<Map<'_>> {
        let m = self.map_ptr(name)?;
        // SAFETY: a map of this loaded object.
        let (fd, key, value) = unsafe {
            (
                (self.lib.map_fd)(m),
                (self.lib.key_size)(m),
                (self.lib.value_size)(m),
            )
        };
        if fd < 0 {
            return Err(last_errno(fd));
        }
        Ok(Map {
            _obj: std::marker::PhantomData,
            lib: self.lib,
            fd,
            key: key as usize,
            value: value as usize,
        })
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        for l in self.links.drain(..) {
            // SAFETY: a link this object attached, destroyed once.
            unsafe { (self.lib.link_destroy)(l) };
        }
        // SAFETY: the object, closed once (its maps' fds with it).
        unsafe { (self.lib.close)(self.obj) };
    }
}

/// A map of a loaded [`Object`] (its fd closes with the object, which it
/// borrows).
pub struct Map<'a> {
    _obj: std::marker::PhantomData<&'a Object>,
    lib: &'static Lib,
    fd: c_int,
    key: usize,
    value: usize,
}

/// An mmapped array of (user_data, time) pairs a BPF program fills as
/// io_uring completions are posted (`--stages`' `post` map), cut into
/// `parts` blocks of `slots` entries: one block per worker, picked by the
/// tag the worker puts in its user_data's upper half (part + 1).
#[derive(Clone)]
pub struct Posts {
    map: std::sync::Arc<Shared>,
    parts: u32,
    slots: u32,
}

impl Posts {
    /// `map` holds `parts × slots` 16-byte entries (u64 user_data, u64 ns).
    pub fn new(map: FileMap, parts: u32, slots: u32) -> io::Result<Posts> {
        if map.len() < parts as u64 * slots as u64 * 16 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the mapping is smaller than its parts",
            ));
        }
        Ok(Posts {
            map: std::sync::Arc::new(Shared(map)),
            parts,
            slots,
        })
    }

    /// Part `part` (0-based), if there is one.
    pub fn part(&self, part: u32) -> Option<PostPart> {
        (part < self.parts).then(|| PostPart {
            map: self.map.clone(),
            first: part as usize * self.slots as usize * 2,
            slots: self.slots,
            tag: part + 1,
        })
    }
}

/// One worker's block of [`Posts`].
#[derive(Clone)]
pub struct PostPart {
    map: std::sync::Arc<Shared>,
    /// Its first word (u64s from the mapping's start).
    first: usize,
    slots: u32,
    tag: u32,
}

impl std::fmt::Debug for PostPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostPart").field("tag", &self.tag).finish()
    }
}

/// The mapping of [`Posts`], shared by its parts.
struct Shared(FileMap);

// SAFETY: the mapping is reached only through atomic loads and stores
// (`PostPart::word`), and unmapped when the last holder is gone.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl PostPart {
    /// The tag this part's user_data carry in their upper half.
    pub fn tag(&self) -> u32 {
        self.tag
    }

    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        // SAFETY: `i` is within the part (checked by the caller against
        // `slots`), so within the mapping, which lives as long as `self`;
        // the page-aligned mapping's u64s are aligned, and they are only
        // read and written atomically here (the program's stores are
        // plain 8-byte stores, atomic on every target BPF runs on).
        unsafe {
            &*self
                .map
                .0
                .as_ptr()
                .cast::<std::sync::atomic::AtomicU64>()
                .add(i)
        }
    }

    /// When the completion of slot `slot` of this part, just reaped, was
    /// posted (the program's ns), if its entry is this I/O's; the entry is
    /// cleared, so a completion the program missed is never given an older
    /// one's time. The reap's acquire of the completion queue's tail orders
    /// these loads after the program's stores (it ran as the CQE was filled,
    /// before the tail moved).
    #[inline(always)]
    pub fn take(&self, slot: u32) -> Option<u64> {
        use std::sync::atomic::Ordering::Relaxed;
        if slot >= self.slots {
            return None;
        }
        let at = self.first + slot as usize * 2;
        let ts = self.word(at + 1).load(Relaxed);
        let ud = self.word(at).load(Relaxed);
        if ts == 0 || ud != (u64::from(self.tag) << 32 | u64::from(slot)) {
            return None;
        }
        self.word(at + 1).store(0, Relaxed);
        Some(ts)
    }

    /// Write an entry as the program would (tests).
    pub fn post(&self, slot: u32, ud: u64, ts: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let at = self.first + slot as usize * 2;
        self.word(at).store(ud, Relaxed);
        self.word(at + 1).store(ts, Relaxed);
    }
}

/// How many CPUs a per-CPU map holds a value for (possible CPUs).
pub fn possible_cpus() -> io::Result<usize> {
    let lib = lib()?;
    // SAFETY: no arguments.
    let n = unsafe { (lib.possible_cpus)() };
    if n <= 0 {
        return Err(last_errno(n));
    }
    Ok(n as usize)
}

impl Map<'_> {
    /// The size of one value (per CPU for a per-CPU map).
    pub fn value_size(&self) -> usize {
        self.value
    }

    fn check(&self, key: &[u8], value: usize, per_cpu: bool) -> io::Result<()> {
        let want = if per_cpu {
            self.value.next_multiple_of(8) * possible_cpus()?
        } else {
            self.value
        };
        if key.len() != self.key || value != want {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "map key/value of {}/{} bytes, the map's are {}/{want}",
                    key.len(),
                    value,
                    self.key
                ),
            ));
        }
        Ok(())
    }

    /// Write `value` at `key` (a plain map: one value).
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.check(key, value.len(), false)?;
        // SAFETY: buffers of the map's key and value sizes.
        let r =
            unsafe { (self.lib.update)(self.fd, key.as_ptr().cast(), value.as_ptr().cast(), 0) };
        if r < 0 {
            return Err(last_errno(r));
        }
        Ok(())
    }

    /// Map an array map made with BPF_F_MMAPABLE of `entries` values of
    /// `value` bytes each into this process, readable and writable (the
    /// program's stores are seen here, ours by the program). The mapping
    /// holds the map: it outlives the object and this fd.
    pub fn mmap_array(&self, entries: usize, value: usize) -> io::Result<FileMap> {
        if value != self.value || self.key != 4 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "an array of {value}-byte values, the map's are {} (key {})",
                    self.value, self.key
                ),
            ));
        }
        // SAFETY: a page-sized query.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = (entries * value.next_multiple_of(8)).next_multiple_of(page);
        // The kernel refuses (EINVAL) a length past the map or a map not
        // made mmapable.
        FileMap::new(self.fd, len as u64, true, true)
    }

    /// Read `key` of a per-CPU map: every possible CPU's value, each
    /// rounded up to 8 bytes, into `out`.
    pub fn lookup_per_cpu(&self, key: &[u8], out: &mut [u8]) -> io::Result<()> {
        self.check(key, out.len(), true)?;
        // SAFETY: a key of the map's size, and room for every CPU's value.
        let r = unsafe { (self.lib.lookup)(self.fd, key.as_ptr().cast(), out.as_mut_ptr().cast()) };
        if r < 0 {
            return Err(last_errno(r));
        }
        Ok(())
    }
}
