// SPDX-License-Identifier: MIT
//! Memory resources (`devq_resource.h`): build a device's allocator stack
//! from bases and decorators, install it, and read its statistics.
use crate::device::{Device, DeviceHandle};
use crate::error::{check, Result};
use crate::MemStats;
use devq_sys as sys;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::path::Path;
use std::ptr;
use std::sync::Arc;

/// A resource this program owns (not yet installed on its device).
/// Decorators take ownership of the resource they wrap.
pub struct Resource {
    raw: *mut sys::devq_resource,
    dev: Arc<DeviceHandle>,
}

// SAFETY: "Resources are thread-safe: every built-in resource may be
// called from any thread" (devq_resource.h).
unsafe impl Send for Resource {}
unsafe impl Sync for Resource {}

/// Usage counters of a stats decorator (`devq_mem_usage`).
pub type MemUsage = sys::devq_mem_usage;

type Make = unsafe extern "C" fn(*mut sys::devq_device, *mut *mut sys::devq_resource) -> i32;

impl Resource {
    fn base(dev: &Device, make: Make) -> Result<Resource> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device; out slot.
        check(unsafe { make(dev.raw(), &mut raw) })?;
        Ok(Resource { raw, dev: dev.handle.clone() })
    }

    /// Synchronous backend allocation per call.
    pub fn direct(dev: &Device) -> Result<Resource> {
        Self::base(dev, sys::devq_resource_direct)
    }
    /// devq's stream-ordered pool.
    pub fn pool(dev: &Device) -> Result<Resource> {
        Self::base(dev, sys::devq_resource_pool)
    }
    /// The backend's own stream-ordered allocator (`ENOTSUP` without
    /// `DEVQ_CAP_ASYNC_ALLOC`).
    pub fn native(dev: &Device) -> Result<Resource> {
        Self::base(dev, sys::devq_resource_native)
    }

    /// Wraps `inner` (consumed; on failure it is destroyed).
    fn wrap(inner: Resource, f: impl FnOnce(*mut sys::devq_resource, *mut *mut sys::devq_resource) -> i32) -> Result<Resource> {
        let mut raw = ptr::null_mut();
        let rc = f(inner.raw, &mut raw);
        check(rc)?; // inner drops (is destroyed) on failure
        let dev = inner.dev.clone();
        std::mem::forget(inner); // now owned by the decorator
        Ok(Resource { raw, dev })
    }

    /// One limit for the device: `ENOMEM` past `limit` bytes.
    pub fn budget(inner: Resource, limit: u64) -> Result<Resource> {
        // SAFETY: live inner; out slot.
        Self::wrap(inner, |i, o| unsafe { sys::devq_resource_budget(i, limit, o) })
    }
    /// Current/peak/count per tag and per stream ([`usage_by_tag`](ResourceRef::usage_by_tag)).
    pub fn stats(inner: Resource) -> Result<Resource> {
        // SAFETY: live inner; out slot.
        Self::wrap(inner, |i, o| unsafe { sys::devq_resource_stats(i, o) })
    }
    /// A CSV line per event to `csv_path`.
    pub fn logging(inner: Resource, csv_path: &Path) -> Result<Resource> {
        use std::os::unix::ffi::OsStrExt;
        let p = std::ffi::CString::new(csv_path.as_os_str().as_bytes())
            .map_err(|_| crate::Error::new(crate::errno::EINVAL, "Resource::logging: path contains a NUL byte"))?;
        // SAFETY: live inner; path and out slot valid for the call.
        Self::wrap(inner, |i, o| unsafe { sys::devq_resource_logging(i, p.as_ptr(), o) })
    }
    /// Canaries, poison on free, double and foreign free detection.
    pub fn guard(inner: Resource) -> Result<Resource> {
        // SAFETY: live inner; out slot.
        Self::wrap(inner, |i, o| unsafe { sys::devq_resource_guard(i, o) })
    }

    /// Installs this stack on `dev` (which must be the device it was built
    /// for); the device owns it from then on.  `EBUSY` while allocations
    /// are outstanding on the current stack: the error gives the resource
    /// back, and converts into [`Error`](crate::Error), so
    /// `Resource::pool(&dev)?.install(&dev)?` works in a function
    /// returning [`devq::Result`](crate::Result) (the resource is then
    /// destroyed).
    pub fn install(self, dev: &Device) -> std::result::Result<(), (crate::Error, Resource)> {
        // SAFETY: live device and resource.
        let rc = unsafe { sys::devq_device_set_resource(dev.raw(), self.raw) };
        if rc < 0 {
            return Err((crate::Error::last(rc), self));
        }
        std::mem::forget(self); // the device destroys it
        Ok(())
    }

    /// Read-only view (name, statistics).
    pub fn view(&self) -> ResourceRef<'_> {
        ResourceRef { raw: self.raw, _life: PhantomData }
    }
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resource({:?})", self.view().name())
    }
}

impl Drop for Resource {
    fn drop(&mut self) {
        // SAFETY: owned, not installed; destroyed before its device closes
        // (self.dev keeps the device open).
        unsafe { sys::devq_resource_destroy(self.raw) }
    }
}

impl From<(crate::Error, Resource)> for crate::Error {
    /// The error of a failed [`Resource::install`], dropping the resource.
    fn from((e, _r): (crate::Error, Resource)) -> crate::Error {
        e
    }
}

/// A borrowed resource: the top of a device's stack
/// ([`device_resource`]) or a [`Resource`]'s view.
#[derive(Clone, Copy, Debug)]
pub struct ResourceRef<'a> {
    raw: *mut sys::devq_resource,
    _life: PhantomData<&'a Resource>,
}

/// The top of `dev`'s stack, borrowed from the device.
///
/// # Safety
/// The reference is valid until the next [`Resource::install`] on this
/// device, which any clone of the `Device`, on any thread, may call: Rust
/// cannot tie that, so the caller promises no install happens while the
/// returned reference is in use.
pub unsafe fn device_resource(dev: &Device) -> ResourceRef<'_> {
    // SAFETY: live device; never NULL for an open device.
    ResourceRef { raw: sys::devq_device_resource(dev.raw()), _life: PhantomData }
}

impl<'a> ResourceRef<'a> {
    pub fn name(&self) -> String {
        // SAFETY: live resource; a NUL-terminated name it owns.
        let p = unsafe { sys::devq_resource_name(self.raw) };
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: non-NULL, NUL-terminated.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }
    /// The resource a decorator wraps (`None` for a base).
    pub fn inner(&self) -> Option<ResourceRef<'a>> {
        // SAFETY: live resource.
        let p = unsafe { sys::devq_resource_inner(self.raw) };
        if p.is_null() {
            None
        } else {
            Some(ResourceRef { raw: p, _life: PhantomData })
        }
    }
    pub fn bytes_outstanding(&self) -> u64 {
        // SAFETY: live resource.
        unsafe { sys::devq_resource_bytes_outstanding(self.raw) }
    }
    pub fn supports_use_tracking(&self) -> bool {
        // SAFETY: live resource.
        unsafe { sys::devq_resource_supports_use_tracking(self.raw) == 1 }
    }
    pub fn reap(&self) -> Result<()> {
        // SAFETY: live resource (thread-safe).
        check(unsafe { sys::devq_resource_reap(self.raw) }).map(drop)
    }
    pub fn trim(&self) -> Result<()> {
        // SAFETY: live resource (thread-safe).
        check(unsafe { sys::devq_resource_trim(self.raw) }).map(drop)
    }
    pub fn stats(&self) -> Result<MemStats> {
        let mut st = MemStats::default();
        // SAFETY: live resource; out slot.
        check(unsafe { sys::devq_resource_stats_get(self.raw, &mut st) })?;
        Ok(st)
    }
    /// Usage under `tag`, from the first stats decorator of the chain.
    pub fn usage_by_tag(&self, tag: u32) -> Result<MemUsage> {
        let mut u = MemUsage::default();
        // SAFETY: live resource; out slot.
        check(unsafe { sys::devq_resource_usage_by_tag(self.raw, tag, &mut u) })?;
        Ok(u)
    }
    /// Usage on stream `stream_id` (`None`: synchronous allocations).
    pub fn usage_by_stream(&self, stream_id: Option<u32>) -> Result<MemUsage> {
        let mut u = MemUsage::default();
        let id = stream_id.unwrap_or(sys::DEVQ_STREAM_NONE);
        // SAFETY: live resource; out slot.
        check(unsafe { sys::devq_resource_usage_by_stream(self.raw, id, &mut u) })?;
        Ok(u)
    }
}
