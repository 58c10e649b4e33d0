// SPDX-License-Identifier: MIT
//! `Buffer`: device memory with stream-ordered release.
use crate::device::{Device, DeviceHandle};
use crate::error::{check, errno, Error, Result};
use crate::pod::Pod;
use crate::queue::Queue;
use devq_sys as sys;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::Arc;

/// How a kernel uses a buffer argument: the tracker orders work by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    pub(crate) fn raw(self) -> sys::devq_access {
        match self {
            Access::Read => sys::DEVQ_READ,
            Access::Write => sys::DEVQ_WRITE,
            Access::ReadWrite => sys::DEVQ_READ_WRITE,
        }
    }
}

/// Device memory holding `len` elements of `T` (`Buffer` alone is
/// `Buffer<u8>`, plain bytes).  Lengths, offsets and ranges of the typed
/// API are in elements of `T`; only [`size`](Self::size) counts bytes.
/// Dropping it frees it in stream order (`devq_buffer_free(b, NULL)`): on
/// the queue it was allocated on, after every queue that used it got
/// there, so work already recorded that uses it still runs.  `Send +
/// Sync`.
///
/// A fresh buffer's contents are whatever the allocator hands out (a
/// pool may return another buffer's old bytes): use
/// [`zeroed`](Self::zeroed) or [`zeroed_on`](Self::zeroed_on) when a
/// kernel may read before writing.
// repr(C) and no field depending on T: a Buffer<T> has one layout for
// every T, which `bytes` relies on.
#[repr(C)]
pub struct Buffer<T: Pod = u8> {
    raw: *mut sys::devq_buffer,
    _dev: Arc<DeviceHandle>,
    _t: PhantomData<fn() -> T>,
}

// SAFETY: libdevq's buffer functions are thread-safe (the device lock
// covers its tracking state); Rust never touches the memory directly.
unsafe impl<T: Pod> Send for Buffer<T> {}
unsafe impl<T: Pod> Sync for Buffer<T> {}

/// `n` elements of `T` in bytes, or `EINVAL` naming `what`.
pub(crate) fn elems_to_bytes<T>(n: usize, what: &str) -> Result<usize> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return Err(Error::new(errno::EINVAL, format!("{}: element type {} has no size; use a type of at least one byte", what, std::any::type_name::<T>())));
    }
    n.checked_mul(size).ok_or_else(|| {
        Error::new(errno::EINVAL, format!("{}: {} elements of {} overflow a byte count; ask for fewer", what, n, std::any::type_name::<T>()))
    })
}

impl<T: Pod> Buffer<T> {
    /// `len` elements of device memory, allocated synchronously: usable by
    /// every queue at once.  Contents unspecified (see
    /// [`zeroed`](Self::zeroed)).
    pub fn new(dev: &Device, len: usize) -> Result<Buffer<T>> {
        Self::alloc(dev, len, ptr::null_mut(), 0)
    }

    /// `len` elements allocated in `q`'s stream order (usable by `q` at
    /// once, by other queues as the tracker orders them).  `tag` labels it
    /// in memory statistics.
    pub fn on_queue(q: &mut Queue, len: usize, tag: u32) -> Result<Buffer<T>> {
        let dev = q.device().clone();
        Self::alloc(&dev, len, q.raw(), tag)
    }

    /// A synchronous allocation with a statistics tag.
    pub fn with_tag(dev: &Device, len: usize, tag: u32) -> Result<Buffer<T>> {
        Self::alloc(dev, len, ptr::null_mut(), tag)
    }

    /// `len` elements, every byte zero before any queue uses it: the fill
    /// runs on a queue of its own and this returns once it is done.
    pub fn zeroed(dev: &Device, len: usize) -> Result<Buffer<T>> {
        let b = Self::new(dev, len)?;
        let mut q = Queue::new(dev)?;
        q.fill(&b, 0, len, 0).submit()?;
        q.finish(std::time::Duration::MAX)?;
        Ok(b)
    }

    /// `len` elements allocated and zero-filled in `q`'s stream order:
    /// returns at once; `q`'s later work (and other queues', as the
    /// tracker orders them) sees zeros.  The fill joins `q`'s open batch.
    pub fn zeroed_on(q: &mut Queue, len: usize, tag: u32) -> Result<Buffer<T>> {
        let b = Self::on_queue(q, len, tag)?;
        q.fill(&b, 0, len, 0);
        Ok(b)
    }

    fn alloc(dev: &Device, len: usize, q: *mut sys::devq_queue, tag: u32) -> Result<Buffer<T>> {
        let bytes = elems_to_bytes::<T>(len, "Buffer::new")?;
        let mut raw = ptr::null_mut();
        // SAFETY: live device, q NULL or a live queue of it; out slot.
        check(unsafe { sys::devq_buffer_alloc(dev.raw(), bytes, q, tag, &mut raw) })?;
        Ok(Buffer { raw, _dev: dev.handle.clone(), _t: PhantomData })
    }

    /// Number of elements of `T`.
    pub fn len(&self) -> usize {
        self.size() / std::mem::size_of::<T>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole buffer as a [`BufferSlice`].
    pub fn all(&self) -> BufferSlice<'_, T> {
        BufferSlice { buf: self, start: 0, len: self.len() }
    }

    /// Elements `range` of the buffer, for kernel arguments
    /// ([`Arg::read`](crate::Arg::read) and friends) and copies.  Panics
    /// when the range is outside the buffer, as slice indexing does; see
    /// [`try_slice`](Self::try_slice).
    pub fn slice<R: RangeBounds<usize>>(&self, range: R) -> BufferSlice<'_, T> {
        match self.try_slice(range) {
            Ok(s) => s,
            Err(e) => panic!("{}", e.message),
        }
    }

    /// As [`slice`](Self::slice), with `EINVAL` instead of a panic.
    pub fn try_slice<R: RangeBounds<usize>>(&self, range: R) -> Result<BufferSlice<'_, T>> {
        let len = self.len();
        let start = match range.start_bound() {
            Bound::Included(&s) => Some(s),
            Bound::Excluded(&s) => s.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => Some(len),
        };
        match (start, end) {
            (Some(s), Some(e)) if s <= e && e <= len => Ok(BufferSlice { buf: self, start: s, len: e - s }),
            _ => Err(Error::new(
                errno::EINVAL,
                format!("Buffer::slice: range {:?}..{:?} is outside a buffer of {} elements; slice within 0..{}", range.start_bound(), range.end_bound(), len, len),
            )),
        }
    }

    /// The same memory seen as bytes (`Buffer<u8>`), for byte-level copies
    /// and fills.
    pub fn bytes(&self) -> &Buffer<u8> {
        // SAFETY: Buffer is repr(C) with no field depending on T (see the
        // struct), so every Buffer<T> has the layout of Buffer<u8>.
        unsafe { &*(self as *const Buffer<T> as *const Buffer<u8>) }
    }

    pub(crate) fn raw(&self) -> *mut sys::devq_buffer {
        self.raw
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::devq_buffer {
        self.raw
    }

    pub fn size(&self) -> usize {
        // SAFETY: live buffer.
        unsafe { sys::devq_buffer_size(self.raw) }
    }

    /// The device address (for handing to foreign code; never dereferenced
    /// here).
    pub fn device_ptr(&self) -> *mut std::os::raw::c_void {
        // SAFETY: live buffer.
        unsafe { sys::devq_buffer_device_ptr(self.raw) }
    }

    /// The host address when the memory is host-visible
    /// (`DEVQ_CAP_HOST_VISIBLE`).  Reading or writing through it is
    /// `unsafe`: queues may be using the memory.
    pub fn host_ptr(&self) -> Option<*mut std::os::raw::c_void> {
        // SAFETY: live buffer.
        let p = unsafe { sys::devq_buffer_host_ptr(self.raw) };
        if p.is_null() {
            None
        } else {
            Some(p)
        }
    }

    /// Names it in every libdevq message, `DEVQ_LOG` line and trace track
    /// (`buffer "name" (#3)` instead of `buffer #3`; devq(7) NAMES).  The
    /// name is copied; `""` clears it; more than 63 bytes, a NUL or a
    /// control character is `EINVAL`.
    pub fn set_name(&self, name: &str) -> Result<()> {
        let c = crate::error::cstring(name, "Buffer::set_name")?;
        // SAFETY: live buffer; c outlives the call (libdevq copies it).
        check(unsafe { sys::devq_buffer_set_name(self.raw, c.as_ptr()) }).map(drop)
    }

    /// `Ok`, or the failure the buffer's last writer left: an op that
    /// failed or was skipped while it would have written the buffer (see
    /// the failure model in devq(7)).  A later successful write clears it.
    pub fn status(&self) -> Result<()> {
        // SAFETY: live buffer.
        match unsafe { sys::devq_buffer_status(self.raw) } {
            0 => Ok(()),
            s => Err(crate::signal::status_error(s, "buffer failed")),
        }
    }

    /// Frees now in `q`'s stream order instead of the alloc queue's, and
    /// reports the error a drop would have to swallow.
    pub fn free_on(self, q: &mut Queue) -> Result<()> {
        let (raw, _dev) = self.into_parts();
        // SAFETY: live buffer, freed once; q a live queue.
        check(unsafe { sys::devq_buffer_free(raw, q.raw()) }).map(drop)
    }

    /// Frees on the alloc queue (as drop does), reporting any error.
    pub fn free(self) -> Result<()> {
        let (raw, _dev) = self.into_parts();
        // SAFETY: live buffer, freed once.
        check(unsafe { sys::devq_buffer_free(raw, ptr::null_mut()) }).map(drop)
    }

    /// The handle and the device reference, without running Drop.
    fn into_parts(self) -> (*mut sys::devq_buffer, Arc<DeviceHandle>) {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: me is never dropped, so the Arc is moved out exactly once.
        (me.raw, unsafe { ptr::read(&me._dev) })
    }
}

impl<T: Pod> Drop for Buffer<T> {
    fn drop(&mut self) {
        // A free is never dropped by libdevq (it stays pending and is
        // retried), so an error here loses nothing but the report; use
        // Buffer::free to see it.
        // SAFETY: live buffer, freed once.
        unsafe { sys::devq_buffer_free(self.raw, ptr::null_mut()) };
    }
}

impl<T: Pod> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer<{}>({} elements, {} bytes at {:p})", std::any::type_name::<T>(), self.len(), self.size(), self.device_ptr())
    }
}

/// Elements `start..start + len` of a [`Buffer`]: a kernel argument
/// ([`Arg::read`](crate::Arg::read) etc.) or a copy's source or
/// destination ([`Queue::copy_slice`](crate::Queue::copy_slice)).
/// `Copy`; borrows the buffer.
#[derive(Debug)]
pub struct BufferSlice<'a, T: Pod = u8> {
    pub(crate) buf: &'a Buffer<T>,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

impl<'a, T: Pod> Clone for BufferSlice<'a, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<'a, T: Pod> Copy for BufferSlice<'a, T> {}

impl<'a, T: Pod> BufferSlice<'a, T> {
    pub fn buffer(&self) -> &'a Buffer<T> {
        self.buf
    }
    /// First element, in the buffer's elements.
    pub fn start(&self) -> usize {
        self.start
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Byte offset and byte length in the buffer (cannot overflow: the
    /// range is inside the buffer).
    pub(crate) fn byte_range(&self) -> (usize, usize) {
        let sz = std::mem::size_of::<T>();
        (self.start * sz, self.len * sz)
    }
}

impl<'a, T: Pod> From<&'a Buffer<T>> for BufferSlice<'a, T> {
    fn from(b: &'a Buffer<T>) -> Self {
        b.all()
    }
}
