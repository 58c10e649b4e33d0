// SPDX-License-Identifier: MIT
//! `Kernel`: a loaded program entry point, and the arguments and launch
//! geometry of an exec.
use crate::buffer::{Access, Buffer, BufferSlice};
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
    /// A cpu kernel defined with [`cpu_kernel!`](crate::cpu_kernel), here
    /// or in any crate this program links.  libdevq gets the entry by
    /// pointer (`devq_kernel_load_fn`), so no symbol needs to be exported:
    /// no link flags, no build.rs.  `ENOTSUP` on a backend other than cpu.
    pub fn cpu(dev: &Device, k: &RustKernel) -> Result<Kernel> {
        let mut raw = ptr::null_mut();
        // SAFETY: the entry is the one cpu_kernel! generated, which reads
        // the argument table Queue::exec passes for rust_abi kernels; the
        // name is NUL-terminated and copied by libdevq.
        check(unsafe {
            sys::devq_kernel_load_fn(dev.raw(), Some(k.entry()), ptr::null(), k.name_nul().as_ptr() as *const _, &mut raw)
        })?;
        Ok(Kernel { raw, rust_abi: true, _dev: dev.handle.clone() })
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

/// One kernel argument: a buffer range with its access mode (what the
/// tracker orders by), or a value, copied when the exec is recorded.
/// Buffer arguments take a whole [`Buffer`] or a [`BufferSlice`]
/// (`buf.slice(8..16)`); a kernel defined with
/// [`cpu_kernel!`](crate::cpu_kernel) sees exactly that range, typed.
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a> {
    pub(crate) kind: ArgKind<'a>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum ArgKind<'a> {
    Buffer {
        buf: &'a Buffer<u8>,
        /// Byte range inside the buffer.
        off: usize,
        len: usize,
        access: Access,
        /// Split into work-group chunks ([`Arg::chunks`]).
        chunked: bool,
        /// Identifies the element type (0: bytes, any type).
        elem: u64,
    },
    Value(&'a [u8]),
}

/// A tag for `T`, checked by the kernel against the type it asks for
/// (0 for bytes, which any kernel type may view).
pub(crate) fn elem_tag<T: Pod>() -> u64 {
    use std::hash::{Hash, Hasher};
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<u8>() {
        return 0;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::any::TypeId::of::<T>().hash(&mut h);
    h.finish() | 1
}

impl<'a> Arg<'a> {
    fn buffer<T: Pod>(s: BufferSlice<'a, T>, access: Access, chunked: bool) -> Arg<'a> {
        let (off, len) = s.byte_range();
        Arg { kind: ArgKind::Buffer { buf: s.buf.bytes(), off, len, access, chunked, elem: elem_tag::<T>() } }
    }
    /// Read by the kernel.
    pub fn read<T: Pod>(b: impl Into<BufferSlice<'a, T>>) -> Arg<'a> {
        Self::buffer(b.into(), Access::Read, false)
    }
    /// Written by the kernel (its earlier contents are not read).
    pub fn write<T: Pod>(b: impl Into<BufferSlice<'a, T>>) -> Arg<'a> {
        Self::buffer(b.into(), Access::Write, false)
    }
    pub fn read_write<T: Pod>(b: impl Into<BufferSlice<'a, T>>) -> Arg<'a> {
        Self::buffer(b.into(), Access::ReadWrite, false)
    }
    /// Read and written by a [`cpu_kernel!`](crate::cpu_kernel) as plain
    /// `&mut [T]` chunks, one per work-group
    /// ([`Args::chunk_mut`](crate::cpu::Args::chunk_mut)): work-group `g`
    /// gets the elements `g.items(0)` of this range, so groups never
    /// overlap.  Not for foreign kernels (`EINVAL` at the exec).
    pub fn chunks<T: Pod>(b: impl Into<BufferSlice<'a, T>>) -> Arg<'a> {
        Self::buffer(b.into(), Access::ReadWrite, true)
    }
    /// A buffer argument with an explicit mode.
    pub fn with_access<T: Pod>(b: impl Into<BufferSlice<'a, T>>, access: Access) -> Arg<'a> {
        Self::buffer(b.into(), access, false)
    }
    /// A value argument: the bytes of `v`.
    pub fn value<T: Pod>(v: &'a T) -> Arg<'a> {
        // SAFETY: Pod has no padding: all size_of::<T>() bytes are initialised.
        Arg { kind: ArgKind::Value(unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }) }
    }
    /// A value argument from raw bytes.
    pub fn bytes(v: &'a [u8]) -> Arg<'a> {
        Arg { kind: ArgKind::Value(v) }
    }

    /// The C argument, or why a foreign kernel cannot take it.
    pub(crate) fn raw(&self, rust_abi: bool) -> std::result::Result<sys::devq_arg, String> {
        match self.kind {
            ArgKind::Buffer { buf, off, len, access, chunked, .. } => {
                if !rust_abi && (chunked || off != 0 || len != buf.size()) {
                    return Err(format!(
                        "Queue::exec: a foreign kernel gets whole buffers only (this argument is {}); pass the whole buffer and the offset as a value argument, or define the kernel with cpu_kernel!",
                        if chunked { "Arg::chunks".to_string() } else { format!("bytes {}..{} of {}", off, off + len, buf.size()) }
                    ));
                }
                Ok(sys::devq_arg { buf: buf.raw(), access: access.raw(), value: ptr::null(), size: 0 })
            }
            ArgKind::Value(v) => Ok(sys::devq_arg { buf: ptr::null_mut(), access: 0, value: v.as_ptr() as *const c_void, size: v.len() }),
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

#[cfg(test)]
mod tests {
    use super::*;

    mod private {
        // A kernel in a private module, exported nowhere: found by pointer.
        crate::cpu_kernel! {
            pub(super) fn add_one(g: &crate::cpu::Group, args: &crate::cpu::Args) -> crate::cpu::KernelResult {
                let x = args.buffer::<u32>(0)?;
                for i in g.items(0) {
                    x.set(i, x.get(i) + 1);
                }
                Ok(())
            }
        }
    }

    #[test]
    fn a_kernel_nobody_exports_runs_by_pointer() {
        let dev = Device::open("cpu").unwrap();
        assert_eq!(private::add_one.name(), "add_one");
        let k = Kernel::cpu(&dev, &private::add_one).unwrap();
        let mut q = crate::Queue::new(&dev).unwrap();
        let b = Buffer::<u32>::new(&dev, 8).unwrap();
        let mut out = q.upload(&b, 0, vec![1u32, 2, 3, 4, 5, 6, 7, 8]).exec(&k, &[Arg::read_write(&b)], Launch::d1(8, 4)).readback(&b);
        q.submit().unwrap();
        let out = out.wait(std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(out, vec![2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn a_foreign_kernel_gets_whole_buffers_only() {
        let dev = Device::open("cpu").unwrap();
        let b = Buffer::<u32>::new(&dev, 8).unwrap();
        assert!(Arg::read(&b).raw(false).is_ok());
        assert!(Arg::read(b.slice(..)).raw(false).is_ok(), "the whole buffer as a slice");
        let e = Arg::read(b.slice(1..)).raw(false).err().unwrap();
        assert!(e.contains("bytes 4..32 of 32") && e.contains("cpu_kernel!"), "{}", e);
        assert!(Arg::chunks(&b).raw(false).err().unwrap().contains("Arg::chunks"));
        assert!(Arg::read(b.slice(1..)).raw(true).is_ok());
    }
}
