// SPDX-License-Identifier: MIT
//! `Buffer`: device memory with stream-ordered release.
use crate::device::{Device, DeviceHandle};
use crate::error::{check, Result};
use crate::queue::Queue;
use devq_sys as sys;
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

/// A block of device memory.  Dropping it frees it in stream order
/// (`devq_buffer_free(b, NULL)`): on the queue it was allocated on, after
/// every queue that used it got there, so work already recorded that uses
/// it still runs.  `Send + Sync`.
pub struct Buffer {
    raw: *mut sys::devq_buffer,
    _dev: Arc<DeviceHandle>,
}

// SAFETY: libdevq's buffer functions are thread-safe (the device lock
// covers its tracking state); Rust never touches the memory directly.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    /// `bytes` of device memory, allocated synchronously: usable by every
    /// queue at once.
    pub fn new(dev: &Device, bytes: usize) -> Result<Buffer> {
        Self::alloc(dev, bytes, ptr::null_mut(), 0)
    }

    /// `bytes` of device memory, allocated in `q`'s stream order (usable by
    /// `q` at once, by other queues as the tracker orders them).  `tag`
    /// labels it in memory statistics.
    pub fn on_queue(q: &mut Queue, bytes: usize, tag: u32) -> Result<Buffer> {
        let dev = q.device().clone();
        Self::alloc(&dev, bytes, q.raw(), tag)
    }

    /// A synchronous allocation with a statistics tag.
    pub fn with_tag(dev: &Device, bytes: usize, tag: u32) -> Result<Buffer> {
        Self::alloc(dev, bytes, ptr::null_mut(), tag)
    }

    fn alloc(dev: &Device, bytes: usize, q: *mut sys::devq_queue, tag: u32) -> Result<Buffer> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device, q NULL or a live queue of it; out slot.
        check(unsafe { sys::devq_buffer_alloc(dev.raw(), bytes, q, tag, &mut raw) })?;
        Ok(Buffer { raw, _dev: dev.handle.clone() })
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

impl Drop for Buffer {
    fn drop(&mut self) {
        // A free is never dropped by libdevq (it stays pending and is
        // retried), so an error here loses nothing but the report; use
        // Buffer::free to see it.
        // SAFETY: live buffer, freed once.
        unsafe { sys::devq_buffer_free(self.raw, ptr::null_mut()) };
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({} bytes at {:p})", self.size(), self.device_ptr())
    }
}
