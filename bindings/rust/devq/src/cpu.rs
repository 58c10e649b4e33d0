// SPDX-License-Identifier: MIT
//! cpu kernels written in Rust, with no `unsafe` in the kernel.
//!
//! [`cpu_kernel!`](crate::cpu_kernel) wraps a Rust function into the
//! `extern "C"` entry the cpu backend calls once per work-group, and
//! [`Kernel::cpu`](crate::Kernel::cpu) loads it.  Execs of such a kernel
//! pass a hidden first argument, a table of each argument's kind and size,
//! so the kernel reads values and buffers checked against their real sizes,
//! ranges, element types and access modes.
//!
//! Work-groups run in parallel on the same buffers, so a kernel gets
//! plain slices only where that is sound:
//! - [`Args::slice`]: `&[T]` of an argument passed [`Arg::read`](crate::Arg::read)
//!   that no other argument of the exec writes;
//! - [`Args::chunk_mut`]: `&mut [T]` of this work-group's elements of an
//!   argument passed [`Arg::chunks`](crate::Arg::chunks), overlapping no
//!   other argument (1-D launches);
//! - otherwise [`Args::buffer`], a [`View`] whose element loads and stores
//!   are relaxed atomics (plain moves on x86-64 and aarch64, but opaque to
//!   the vectoriser), free of data races in Rust's sense.
//!
//! Nothing a kernel does unwinds into C: a panic in the body (an index out
//! of range) fails the exec with `EFAULT`, a [`KernelError`] with its
//! errno (`EIO` for one that is not a valid errno), and
//! [`Queue::finish`](crate::Queue::finish) of the queue that ran it
//! appends the panic's message (or the invalid value) to its error.
use devq_sys as sys;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Range;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Tags the argument table, so a kernel never reads some other first
/// argument as one ("devqRust").
pub(crate) const TABLE_MAGIC: u64 = 0x6465_7671_5275_7374;
const KIND_VALUE: u64 = 0;
/// Kind bit of an [`Arg::chunks`](crate::Arg::chunks) argument.
const KIND_CHUNKED: u64 = 1 << 16;
/// u64 words per argument in the table.
const WORDS: usize = 4;

/// Where a kernel of a queue leaves the text of its failure (a panic's
/// message, a KernelError that is no errno) for that queue's finish.
pub(crate) type Notes = std::sync::Mutex<Option<String>>;

/// The argument table Queue::exec passes first: magic, count, the address
/// of the queue's [`Notes`] (which the queue keeps until it is destroyed,
/// after its work), then per argument (kind: 0 value or the devq_access
/// bits | KIND_CHUNKED; size in bytes; byte offset in the buffer; element
/// type tag).
pub(crate) fn arg_table(args: &[crate::Arg<'_>], notes: *const Notes) -> Vec<u64> {
    let mut t = vec![TABLE_MAGIC, args.len() as u64, notes as usize as u64];
    for a in args {
        match a.kind {
            crate::kernel::ArgKind::Buffer { off, len, access, chunked, elem, .. } => {
                t.push(access.raw() as u64 | if chunked { KIND_CHUNKED } else { 0 });
                t.push(len as u64);
                t.push(off as u64);
                t.push(elem);
            }
            crate::kernel::ArgKind::Value(v) => {
                t.extend_from_slice(&[KIND_VALUE, v.len() as u64, 0, 0]);
            }
        }
    }
    t
}

fn note(notes: *const Notes, text: String) {
    if notes.is_null() {
        return;
    }
    // SAFETY: the queue that recorded the exec owns the Notes and keeps
    // them until it is destroyed, which waits for this exec.
    if let Ok(mut slot) = unsafe { &*notes }.lock() {
        *slot = Some(text);
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// Why a kernel failed: a positive errno, returned to libdevq negated
/// (the exec fails with it and so does every signal after it).  A value
/// that is not a positive errno (0, negative, `i32::MIN`, above 4095)
/// fails the exec with `EIO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelError(pub i32);

/// What a `cpu_kernel!` body returns.
pub type KernelResult = Result<(), KernelError>;

/// The work-group being run (`devq_cpu_group`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    pub group_id: [u32; 3],
    pub local_size: [u32; 3],
    pub global_size: [u32; 3],
    pub num_groups: [u32; 3],
}

impl Group {
    /// The global indices this group covers along `dim` (clipped to the
    /// global size).
    pub fn items(&self, dim: usize) -> Range<usize> {
        let start = self.group_id[dim] as usize * self.local_size[dim] as usize;
        let end = (start + self.local_size[dim] as usize).min(self.global_size[dim] as usize);
        start..end.max(start)
    }
}

/// A kernel's arguments, checked against the table the exec passed.
#[derive(Debug)]
pub struct Args<'a> {
    ptrs: *const *mut c_void,
    table: *const u64,
    n: usize,
    /// Arguments handed out as `&mut [T]` chunks / as views or slices (by
    /// index, first 64): one argument is never both.
    chunked: Cell<u64>,
    viewed: Cell<u64>,
    /// The 1-D work-group this call runs, for chunk_mut.
    group: Group,
    _life: PhantomData<&'a ()>,
}

impl<'a> Args<'a> {
    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn entry(&self, i: usize) -> Result<Entry, KernelError> {
        if i >= self.n {
            return Err(KernelError(crate::errno::EINVAL));
        }
        // SAFETY: i < n: the table has WORDS * n entries after its header
        // and the argument array n pointers after the table's own (built by
        // Queue::exec for this exec).  Value bytes are not aligned.
        unsafe {
            let w = |k: usize| self.table.add(WORDS * i + k).read_unaligned();
            Ok(Entry { kind: w(0), size: w(1) as usize, off: w(2) as usize, elem: w(3), ptr: *self.ptrs.add(i) })
        }
    }

    /// Value argument `i` as a `T` (`EINVAL` if it is a buffer or its size
    /// is not `size_of::<T>()`).
    pub fn value<T: crate::Pod>(&self, i: usize) -> Result<T, KernelError> {
        let e = self.entry(i)?;
        if e.kind != KIND_VALUE || e.size != std::mem::size_of::<T>() {
            return Err(KernelError(crate::errno::EINVAL));
        }
        // SAFETY: size_of::<T>() bytes of a value argument; Pod: any bits valid.
        Ok(unsafe { (e.ptr as *const T).read_unaligned() })
    }

    /// Buffer argument `i`'s range as (address, element count), checked:
    /// a buffer, of element type `T` or bytes, aligned for `align`.
    fn range<T: crate::Pod>(&self, i: usize, align: usize) -> Result<(Entry, *mut T, usize), KernelError> {
        let e = self.entry(i)?;
        let size = std::mem::size_of::<T>();
        if e.kind == KIND_VALUE || size == 0 || (e.elem != 0 && e.elem != crate::kernel::elem_tag::<T>()) {
            return Err(KernelError(crate::errno::EINVAL));
        }
        let p = (e.ptr as usize).wrapping_add(e.off);
        if p % align != 0 {
            return Err(KernelError(crate::errno::EINVAL));
        }
        Ok((e, p as *mut T, e.size / size))
    }

    fn bit(i: usize) -> u64 {
        if i < 64 {
            1 << i
        } else {
            0
        }
    }

    /// Buffer argument `i` as elements of `T`, loaded and stored as
    /// relaxed atomics (`EINVAL` if it is a value, was passed as a
    /// `Buffer<U>` of another element type, is not aligned for `T`, or was
    /// passed [`Arg::chunks`](crate::Arg::chunks)).
    pub fn buffer<T: Elem>(&self, i: usize) -> Result<View<'a, T>, KernelError> {
        // Atomics of n bytes want n-byte alignment (AtomicU64 is 8-aligned
        // even where u64 is 4-aligned); devq allocations are 256-aligned.
        let align = std::mem::size_of::<T>().max(std::mem::align_of::<T>());
        let (e, p, len) = self.range::<T>(i, align)?;
        if e.kind & KIND_CHUNKED != 0 {
            return Err(KernelError(crate::errno::EINVAL));
        }
        self.viewed.set(self.viewed.get() | Self::bit(i));
        Ok(View { ptr: p as *const T, len, writable: e.kind & sys::DEVQ_WRITE as u64 != 0, _life: PhantomData })
    }

    /// Whether any other buffer argument than `i` overlaps `[lo, hi)` and
    /// (when `writers_only`) may write.
    fn overlaps(&self, i: usize, lo: usize, hi: usize, writers_only: bool) -> Result<bool, KernelError> {
        for j in 0..self.n {
            if j == i {
                continue;
            }
            let e = self.entry(j)?;
            if e.kind == KIND_VALUE || (writers_only && e.kind & (sys::DEVQ_WRITE as u64 | KIND_CHUNKED) == 0) {
                continue;
            }
            let a = (e.ptr as usize).wrapping_add(e.off);
            let b = a.wrapping_add(e.size);
            if a < hi && lo < b {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Buffer argument `i` as a plain `&[T]`, which the compiler can
    /// vectorise.  Sound because the argument was passed
    /// [`Arg::read`](crate::Arg::read) (so no work-group writes it) and no
    /// other argument of the exec that may be written overlaps it; else
    /// `EINVAL`.  (Other queues' writers are ordered around the exec by
    /// the tracker.)
    pub fn slice<T: crate::Pod>(&self, i: usize) -> Result<&'a [T], KernelError> {
        let (e, p, len) = self.range::<T>(i, std::mem::align_of::<T>())?;
        if e.kind != sys::DEVQ_READ as u64 || self.overlaps(i, p as usize, p as usize + e.size, true)? {
            return Err(KernelError(crate::errno::EINVAL));
        }
        self.viewed.set(self.viewed.get() | Self::bit(i));
        // SAFETY: in bounds and aligned (checked), nobody writes it while
        // the exec runs (see above), and the exec keeps the memory alive.
        Ok(unsafe { std::slice::from_raw_parts(p, len) })
    }

    /// This work-group's elements `g.items(0)` of argument `i` as a plain
    /// `&mut [T]`.  Sound because the argument was passed
    /// [`Arg::chunks`](crate::Arg::chunks) (only this call, of all
    /// work-groups, touches these elements), it overlaps no other argument,
    /// the launch is 1-D and this call takes it once; otherwise `EINVAL`
    /// (`ERANGE` when the group's items run past the argument's range).
    pub fn chunk_mut<T: crate::Pod>(&self, i: usize) -> Result<&'a mut [T], KernelError> {
        let (e, p, len) = self.range::<T>(i, std::mem::align_of::<T>())?;
        let g = &self.group;
        if e.kind & KIND_CHUNKED == 0
            || i >= 64
            || g.num_groups[1] > 1
            || g.num_groups[2] > 1
            || (self.chunked.get() | self.viewed.get()) & Self::bit(i) != 0
            || self.overlaps(i, p as usize, p as usize + e.size, false)?
        {
            return Err(KernelError(crate::errno::EINVAL));
        }
        let items = g.items(0);
        if items.end > len {
            return Err(KernelError(crate::errno::ERANGE));
        }
        self.chunked.set(self.chunked.get() | Self::bit(i));
        // SAFETY: in bounds and aligned (checked); work-groups of a 1-D
        // launch have disjoint items, no other argument overlaps, and this
        // is the only reference to them this call hands out.
        Ok(unsafe { std::slice::from_raw_parts_mut(p.add(items.start), items.len()) })
    }
}

#[derive(Clone, Copy)]
struct Entry {
    kind: u64,
    size: usize,
    off: usize,
    elem: u64,
    ptr: *mut c_void,
}

/// A buffer seen from a kernel: bounds-checked element loads and stores.
#[derive(Debug)]
pub struct View<'a, T: Elem> {
    ptr: *const T,
    len: usize,
    writable: bool,
    _life: PhantomData<&'a T>,
}

impl<'a, T: Elem> View<'a, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`; panics (failing the exec) when out of range.
    pub fn get(&self, i: usize) -> T {
        assert!(i < self.len, "kernel read index {} of a {}-element buffer", i, self.len);
        // SAFETY: in bounds, aligned (checked in Args::buffer), memory the
        // exec's buffer argument keeps alive.
        unsafe { T::load(self.ptr.add(i)) }
    }

    /// Stores `v` at `i`; panics (failing the exec) when out of range or
    /// when the argument was passed `Access::Read`.
    pub fn set(&self, i: usize, v: T) {
        assert!(self.writable, "kernel writes a buffer passed as Access::Read");
        assert!(i < self.len, "kernel write index {} of a {}-element buffer", i, self.len);
        // SAFETY: as in get.
        unsafe { T::store(self.ptr.add(i), v) }
    }
}

/// Element types a kernel may load and store (numbers of 1, 2, 4 or 8
/// bytes: each access is one relaxed atomic operation).
///
/// # Safety
/// `load`/`store` must be atomic accesses of exactly `size_of::<Self>()` bytes.
pub unsafe trait Elem: crate::Pod {
    #[doc(hidden)]
    unsafe fn load(p: *const Self) -> Self;
    #[doc(hidden)]
    unsafe fn store(p: *const Self, v: Self);
}

macro_rules! elem {
    ($($t:ty => $a:ty, $to:expr, $from:expr;)*) => {$(
        // SAFETY: $a has the size and alignment of $t (std documents it).
        unsafe impl Elem for $t {
            unsafe fn load(p: *const Self) -> Self {
                let f: fn(_) -> $t = $from;
                f((*(p as *const $a)).load(Ordering::Relaxed))
            }
            unsafe fn store(p: *const Self, v: Self) {
                let f: fn($t) -> _ = $to;
                (*(p as *const $a)).store(f(v), Ordering::Relaxed)
            }
        }
    )*};
}

elem! {
    u8 => AtomicU8, |v| v, |v| v;
    i8 => AtomicI8, |v| v, |v| v;
    u16 => AtomicU16, |v| v, |v| v;
    i16 => AtomicI16, |v| v, |v| v;
    u32 => AtomicU32, |v| v, |v| v;
    i32 => AtomicI32, |v| v, |v| v;
    u64 => AtomicU64, |v| v, |v| v;
    i64 => AtomicI64, |v| v, |v| v;
    f32 => AtomicU32, f32::to_bits, f32::from_bits;
    f64 => AtomicU64, f64::to_bits, f64::from_bits;
}

/// The C entry of a [`cpu_kernel!`](crate::cpu_kernel): what the cpu
/// backend calls once per work-group.
pub type KernelEntry = unsafe extern "C" fn(*const *mut c_void, *const sys::devq_cpu_group) -> c_int;

/// A kernel defined with [`cpu_kernel!`](crate::cpu_kernel): what
/// [`Kernel::cpu`](crate::Kernel::cpu) loads.  It carries the entry
/// itself, which libdevq takes by pointer (`devq_kernel_load_fn`): no
/// symbol is looked up, so it works wherever the kernel is defined (this
/// crate, a library crate, a private module) and however the final binary
/// is linked.
#[derive(Clone, Copy)]
pub struct RustKernel {
    name: &'static str,
    entry: KernelEntry,
}

impl std::fmt::Debug for RustKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RustKernel").field("name", &self.name()).finish()
    }
}

impl RustKernel {
    /// # Safety
    /// `entry` must be the entry `cpu_kernel!` generated (it reads the
    /// argument table `Queue::exec` passes first); `name` ends in a NUL.
    #[doc(hidden)]
    pub const unsafe fn __new(name: &'static str, entry: KernelEntry) -> RustKernel {
        RustKernel { name, entry }
    }

    pub(crate) fn name_nul(&self) -> &'static [u8] {
        self.name.as_bytes()
    }

    pub(crate) fn entry(&self) -> KernelEntry {
        self.entry
    }

    /// The kernel's name in libdevq's messages, logs and traces: the name
    /// given to `cpu_kernel!`.
    pub fn name(&self) -> &'static str {
        self.name.trim_end_matches('\0')
    }
}

/// The body of every `cpu_kernel!` entry: never unwinds, whatever the
/// body or the arguments do.
///
/// # Safety
/// `args` and `g` as the cpu backend passes them for an exec recorded by
/// `Queue::exec` of a `Kernel::cpu` kernel (table first).
#[doc(hidden)]
pub unsafe fn __run(
    args: *const *mut c_void,
    g: *const sys::devq_cpu_group,
    body: fn(&Group, &Args<'_>) -> KernelResult,
) -> c_int {
    if args.is_null() || g.is_null() || (*args).is_null() {
        return -crate::errno::EINVAL;
    }
    let table = *args as *const u64;
    // The table is at least 16 bytes when Queue::exec built it.
    if table.read_unaligned() != TABLE_MAGIC {
        return -crate::errno::EINVAL;
    }
    let g = &*g;
    let group = Group { group_id: g.group_id, local_size: g.local_size, global_size: g.global_size, num_groups: g.num_groups };
    let n = table.add(1).read_unaligned() as usize;
    let notes = table.add(2).read_unaligned() as usize as *const Notes;
    let a = Args {
        ptrs: args.add(1),
        table: table.add(3),
        n,
        chunked: Cell::new(0),
        viewed: Cell::new(0),
        group,
        _life: PhantomData,
    };
    // Everything that may panic (the body, the error's conversion) runs
    // inside catch_unwind; the payload is forgotten, not dropped, since a
    // payload whose drop panics would unwind from here.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| errno_of(body(&group, &a), notes))) {
        Ok(rc) => rc,
        Err(payload) => {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| note(notes, format!("panicked: {}", panic_text(&*payload)))));
            std::mem::forget(payload);
            -crate::errno::EFAULT
        }
    }
}

/// The return code for a kernel's result: 0, or a negative errno (`-EIO`
/// for anything that is not a positive errno, noted for the host).
pub(crate) fn errno_of(r: KernelResult, notes: *const Notes) -> c_int {
    match r {
        Ok(()) => 0,
        Err(KernelError(e)) if (1..4096).contains(&e) => -e,
        Err(KernelError(e)) => {
            note(notes, format!("returned KernelError({}), which is not a positive errno, so the exec failed with EIO", e));
            -crate::errno::EIO
        }
    }
}

/// Defines a cpu kernel in Rust, with no `unsafe`:
///
/// ```no_run
/// devq::cpu_kernel! {
///     /// x[i] *= factor
///     pub fn scale(g: &devq::cpu::Group, args: &devq::cpu::Args) -> devq::cpu::KernelResult {
///         let x = args.buffer::<f32>(0)?;
///         let factor: f32 = args.value(1)?;
///         for i in g.items(0) {
///             x.set(i, x.get(i) * factor);
///         }
///         Ok(())
///     }
/// }
/// ```
///
/// `scale` is then a [`RustKernel`] constant for
/// [`Kernel::cpu`](crate::Kernel::cpu), which hands libdevq the entry by
/// pointer: nothing is exported or looked up by name, so the kernel may
/// live in a library crate or a private module, and the final binary
/// needs no link flags.  Messages name the kernel `scale`.  Being a
/// constant, the name cannot also be a local: `let scale = ...` is a
/// pattern against it and does not compile.
#[macro_export]
macro_rules! cpu_kernel {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($g:ident : $gt:ty, $a:ident : $at:ty) -> $rt:ty $body:block) => {
        $(#[$meta])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::cpu::RustKernel = {
            fn body($g: $gt, $a: $at) -> $rt $body
            extern "C" fn entry(
                args: *const *mut ::std::os::raw::c_void,
                group: *const $crate::sys::devq_cpu_group,
            ) -> ::std::os::raw::c_int {
                // SAFETY: the cpu backend calls this with an exec's
                // arguments; Kernel::cpu execs put the table first.
                unsafe { $crate::cpu::__run(args, group, body) }
            }
            // SAFETY: `entry` is the entry generated above.
            unsafe { $crate::cpu::RustKernel::__new(concat!(stringify!($name), "\0"), entry) }
        };
    };
}
