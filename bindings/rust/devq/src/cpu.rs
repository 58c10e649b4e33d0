// SPDX-License-Identifier: MIT
//! cpu kernels written in Rust, with no `unsafe` in the kernel.
//!
//! [`cpu_kernel!`](crate::cpu_kernel) wraps a Rust function into the
//! `extern "C"` entry the cpu backend calls once per work-group, and
//! [`Kernel::cpu`](crate::Kernel::cpu) loads it.  Execs of such a kernel
//! pass a hidden first argument, a table of each argument's kind and size,
//! so the kernel reads values and buffers checked against their real sizes
//! and access modes.  Buffer elements are read and written with relaxed
//! atomic loads and stores (plain moves on x86-64 and aarch64): work-groups
//! run in parallel on the same buffer, and this keeps that free of data
//! races in Rust's sense.  A panic in a kernel (an index out of range) is
//! caught and fails the exec with `EFAULT`.
use devq_sys as sys;
use std::marker::PhantomData;
use std::ops::Range;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Tags the argument table, so a kernel never reads some other first
/// argument as one ("devqRust").
pub(crate) const TABLE_MAGIC: u64 = 0x6465_7671_5275_7374;
const KIND_VALUE: u64 = 0;

/// The argument table Queue::exec passes first: magic, count, then per
/// argument (kind: 0 value or the devq_access bits, size in bytes).
pub(crate) fn arg_table(args: &[crate::Arg<'_>]) -> Vec<u64> {
    let mut t = vec![TABLE_MAGIC, args.len() as u64];
    for a in args {
        match *a {
            crate::Arg::Buffer(b, acc) => {
                t.push(acc.raw() as u64);
                t.push(b.size() as u64);
            }
            crate::Arg::Value(v) => {
                t.push(KIND_VALUE);
                t.push(v.len() as u64);
            }
        }
    }
    t
}

/// Why a kernel failed: a positive errno, returned to libdevq negated
/// (the exec fails with it and so does every signal after it).
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

    fn entry(&self, i: usize) -> Result<(u64, usize, *mut c_void), KernelError> {
        if i >= self.n {
            return Err(KernelError(crate::errno::EINVAL));
        }
        // SAFETY: i < n: the table has 2n entries after its header and the
        // argument array n pointers after the table's own (built by
        // Queue::exec for this exec).  Value bytes are not aligned.
        unsafe {
            let kind = self.table.add(2 * i).read_unaligned();
            let size = self.table.add(2 * i + 1).read_unaligned() as usize;
            Ok((kind, size, *self.ptrs.add(i)))
        }
    }

    /// Value argument `i` as a `T` (`EINVAL` if it is a buffer or its size
    /// is not `size_of::<T>()`).
    pub fn value<T: crate::Pod>(&self, i: usize) -> Result<T, KernelError> {
        let (kind, size, p) = self.entry(i)?;
        if kind != KIND_VALUE || size != std::mem::size_of::<T>() {
            return Err(KernelError(crate::errno::EINVAL));
        }
        // SAFETY: size_of::<T>() bytes of a value argument; Pod: any bits valid.
        Ok(unsafe { (p as *const T).read_unaligned() })
    }

    /// Buffer argument `i` as elements of `T` (`EINVAL` if it is a value
    /// or its address is not aligned to `T`'s size).
    pub fn buffer<T: Elem>(&self, i: usize) -> Result<View<'a, T>, KernelError> {
        let (kind, size, p) = self.entry(i)?;
        // Atomics of n bytes want n-byte alignment (AtomicU64 is 8-aligned
        // even where u64 is 4-aligned); devq allocations are 256-aligned.
        let align = std::mem::size_of::<T>().max(std::mem::align_of::<T>());
        if kind == KIND_VALUE || (p as usize) % align != 0 {
            return Err(KernelError(crate::errno::EINVAL));
        }
        Ok(View {
            ptr: p as *const T,
            len: size / std::mem::size_of::<T>(),
            writable: kind & sys::DEVQ_WRITE as u64 != 0,
            _life: PhantomData,
        })
    }
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

/// A kernel defined with [`cpu_kernel!`](crate::cpu_kernel): what
/// [`Kernel::cpu`](crate::Kernel::cpu) loads.
#[derive(Clone, Copy, Debug)]
pub struct RustKernel {
    symbol: &'static str,
}

impl RustKernel {
    /// # Safety
    /// `symbol` (NUL-terminated) must name an entry generated by
    /// `cpu_kernel!`.
    #[doc(hidden)]
    pub const unsafe fn __new(symbol: &'static str) -> RustKernel {
        RustKernel { symbol }
    }

    pub(crate) fn symbol(&self) -> &'static [u8] {
        self.symbol.as_bytes()
    }

    /// The exported symbol name.
    pub fn name(&self) -> &'static str {
        self.symbol.trim_end_matches('\0')
    }
}

/// The body of every `cpu_kernel!` entry.
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
    let a = Args { ptrs: args.add(1), table: table.add(2), n: table.add(1).read_unaligned() as usize, _life: PhantomData };
    let g = &*g;
    let group = Group { group_id: g.group_id, local_size: g.local_size, global_size: g.global_size, num_groups: g.num_groups };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&group, &a))) {
        Ok(Ok(())) => 0,
        Ok(Err(KernelError(e))) => -e.abs().max(1),
        Err(_) => -crate::errno::EFAULT,
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
/// [`Kernel::cpu`](crate::Kernel::cpu); the entry is exported as
/// `devq_rust_kernel_scale` (names must be unique in the program).  Being a
/// constant, the name cannot also be a local: `let scale = ...` is a
/// pattern against it and does not compile.
#[macro_export]
macro_rules! cpu_kernel {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($g:ident : $gt:ty, $a:ident : $at:ty) -> $rt:ty $body:block) => {
        $(#[$meta])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::cpu::RustKernel = {
            fn body($g: $gt, $a: $at) -> $rt $body
            #[export_name = concat!("devq_rust_kernel_", stringify!($name))]
            extern "C" fn entry(
                args: *const *mut ::std::os::raw::c_void,
                group: *const $crate::sys::devq_cpu_group,
            ) -> ::std::os::raw::c_int {
                // SAFETY: the cpu backend calls this with an exec's
                // arguments; Kernel::cpu execs put the table first.
                unsafe { $crate::cpu::__run(args, group, body) }
            }
            let _ = entry;
            // SAFETY: the symbol is `entry` above.
            unsafe { $crate::cpu::RustKernel::__new(concat!("devq_rust_kernel_", stringify!($name), "\0")) }
        };
    };
}
