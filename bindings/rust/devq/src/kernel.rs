// SPDX-License-Identifier: MIT
//! `Kernel`: a loaded program entry point, and the arguments and launch
//! geometry of an exec.
use crate::buffer::{Access, Buffer};
use crate::cpu::RustKernel;
use crate::device::{Device, DeviceHandle};
use crate::error::{check, cstring, Result};
use crate::pod::Pod;
use devq_sys as sys;
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;

/// A loaded kernel.  `Send + Sync`; queues that recorded an exec keep it
/// alive.
pub struct Kernel {
    raw: *mut sys::devq_kernel,
    /// Defined with `cpu_kernel!`: execs pass the argument table first.
    pub(crate) rust_abi: bool,
    _dev: Arc<DeviceHandle>,
}

// SAFETY: libdevq kernels are immutable once loaded and refcounted.
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

impl Kernel {
    /// A cpu kernel defined in this program with [`cpu_kernel!`](crate::cpu_kernel).
    /// The program must export its symbols (`-Wl,--export-dynamic`; see the
    /// crate docs).
    pub fn cpu(dev: &Device, k: &RustKernel) -> Result<Kernel> {
        // SAFETY: the symbol is the entry cpu_kernel! generated, which
        // reads the argument table Queue::exec passes for rust_abi kernels.
        unsafe { Self::load_raw(dev, ptr::null(), 0, k.symbol(), true) }
    }

    /// A C-ABI kernel (`int fn(void *const *args, const devq_cpu_group *g)`
    /// on the cpu backend) exported by this process under `entry`.
    ///
    /// # Safety
    /// The code runs with the arguments each exec passes: it must be sound
    /// for them (libdevq cannot check what a foreign kernel reads or writes).
    pub unsafe fn from_process(dev: &Device, entry: &str) -> Result<Kernel> {
        let e = cstring(entry, "Kernel::from_process: entry")?;
        Self::load_raw(dev, ptr::null(), 0, e.as_bytes_with_nul(), false)
    }

    /// A kernel from an image: a shared object's path on the cpu backend
    /// (NUL-terminated or not), PTX or a cubin on cuda, a code object on hip.
    ///
    /// # Safety
    /// As [`from_process`](Self::from_process): foreign code.
    pub unsafe fn from_image(dev: &Device, image: &[u8], entry: &str) -> Result<Kernel> {
        let e = cstring(entry, "Kernel::from_image: entry")?;
        let mut owned;
        let mut img = image;
        if dev.info().map(|i| i.backend == "cpu").unwrap_or(false) && !image.contains(&0) {
            // The cpu backend takes a path: give it its NUL.
            owned = image.to_vec();
            owned.push(0);
            img = &owned;
        }
        Self::load_raw(dev, img.as_ptr() as *const c_void, img.len(), e.as_bytes_with_nul(), false)
    }

    unsafe fn load_raw(dev: &Device, image: *const c_void, size: usize, entry: &[u8], rust_abi: bool) -> Result<Kernel> {
        let mut raw = ptr::null_mut();
        check(sys::devq_kernel_load(dev.raw(), image, size, entry.as_ptr() as *const _, &mut raw))?;
        Ok(Kernel { raw, rust_abi, _dev: dev.handle.clone() })
    }

    /// Names it in every libdevq message, `DEVQ_LOG` line and trace track
    /// (`kernel "name" (#3)` instead of `kernel #3`; devq(7) NAMES).  The
    /// name is copied; `""` clears it; more than 63 bytes, a NUL or a
    /// control character is `EINVAL`.
    pub fn set_name(&self, name: &str) -> Result<()> {
        let c = cstring(name, "Kernel::set_name")?;
        // SAFETY: live kernel; c outlives the call (libdevq copies it).
        check(unsafe { sys::devq_kernel_set_name(self.raw, c.as_ptr()) }).map(drop)
    }

    pub(crate) fn raw(&self) -> *mut sys::devq_kernel {
        self.raw
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::devq_kernel {
        self.raw
    }
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({:p}{})", self.raw, if self.rust_abi { ", Rust" } else { "" })
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: loaded by this crate; destroyed once (libdevq keeps it
        // while recorded execs need it).
        unsafe { sys::devq_kernel_destroy(self.raw) }
    }
}

/// One kernel argument: a buffer with its access mode (what the tracker
/// orders by), or a value, copied when the exec is recorded.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Buffer(&'a Buffer, Access),
    Value(&'a [u8]),
}

impl<'a> Arg<'a> {
    pub fn read(b: &'a Buffer) -> Arg<'a> {
        Arg::Buffer(b, Access::Read)
    }
    pub fn write(b: &'a Buffer) -> Arg<'a> {
        Arg::Buffer(b, Access::Write)
    }
    pub fn read_write(b: &'a Buffer) -> Arg<'a> {
        Arg::Buffer(b, Access::ReadWrite)
    }
    /// A value argument: the bytes of `v`.
    pub fn value<T: Pod>(v: &'a T) -> Arg<'a> {
        // SAFETY: Pod has no padding: all size_of::<T>() bytes are initialised.
        Arg::Value(unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) })
    }

    pub(crate) fn raw(&self) -> sys::devq_arg {
        match *self {
            Arg::Buffer(b, acc) => sys::devq_arg { buf: b.raw(), access: acc.raw(), value: ptr::null(), size: 0 },
            Arg::Value(v) => {
                sys::devq_arg { buf: ptr::null_mut(), access: 0, value: v.as_ptr() as *const c_void, size: v.len() }
            }
        }
    }
}

/// Launch geometry: `global` work items and `local` (work-group) size per
/// dimension, and dynamic shared memory bytes (`devq_launch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Launch {
    pub global: [u32; 3],
    pub local: [u32; 3],
    pub shared_bytes: u32,
}

impl Launch {
    pub fn d1(global: u32, local: u32) -> Launch {
        Launch { global: [global, 1, 1], local: [local, 1, 1], shared_bytes: 0 }
    }
    pub fn d2(global: [u32; 2], local: [u32; 2]) -> Launch {
        Launch { global: [global[0], global[1], 1], local: [local[0], local[1], 1], shared_bytes: 0 }
    }
    pub fn d3(global: [u32; 3], local: [u32; 3]) -> Launch {
        Launch { global, local, shared_bytes: 0 }
    }
    /// The same launch with `bytes` of dynamic shared memory.
    pub fn shared(self, bytes: u32) -> Launch {
        Launch { shared_bytes: bytes, ..self }
    }
    pub(crate) fn raw(&self) -> sys::devq_launch {
        sys::devq_launch { global: self.global, local: self.local, shared_bytes: self.shared_bytes }
    }
}
