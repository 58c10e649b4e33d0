// SPDX-License-Identifier: MIT
//! `Device`: one ordinal of one backend, shared by everything made on it.
use crate::error::{check, cstring, fixed_str, timeout_ns, Result};
use devq_sys as sys;
use std::ffi::CStr;
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

/// The C handle, closed when the last Rust owner (the `Device` and every
/// queue, buffer, kernel and resource made on it) is gone.
pub(crate) struct DeviceHandle(pub(crate) *mut sys::devq_device);

// SAFETY: libdevq's device functions are thread-safe (DESIGN §2: a
// refcounted, lock-protected registry entry).
unsafe impl Send for DeviceHandle {}
unsafe impl Sync for DeviceHandle {}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        // SAFETY: opened by devq_device_open; this is its one close.
        unsafe { sys::devq_device_close(self.0) }
    }
}

/// A device (`cpu`, `cuda:1`, ...).  Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Device {
    pub(crate) handle: Arc<DeviceHandle>,
}

/// What [`Device::info`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// "cpu", "cuda", "hip"
    pub backend: String,
    pub ordinal: i32,
    pub name: String,
    pub total_memory: u64,
    /// `DEVQ_CAP_*` bits (see [`caps`](crate::caps)).
    pub caps: u64,
    /// cores / SMs / CUs; 0 if unknown
    pub compute_units: u32,
}

impl DeviceInfo {
    /// Whether every bit of `cap` (a [`caps`](crate::caps) constant) is set.
    pub fn has(&self, cap: u64) -> bool {
        self.caps & cap == cap
    }
}

/// Counters of [`Device::stats`] (`devq_stats`).
pub type Stats = sys::devq_stats;
/// Counters of [`Device::mem_stats`] (`devq_mem_stats`).
pub type MemStats = sys::devq_mem_stats;

/// One plugin file the loader tried ([`backends_report`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendReport {
    /// backend name, or "" when the file was not loaded
    pub name: String,
    /// file tried, or "(built in)"
    pub path: String,
    pub abi_version: u32,
    /// 0 loaded; negative errno: skipped
    pub status: i32,
    pub devices: u32,
    /// why skipped, or why it has no device; "" otherwise
    pub reason: String,
}

impl Device {
    /// Opens a device by spec: `"cpu"`, `"cuda:1"`, ...
    pub fn open(spec: &str) -> Result<Device> {
        let spec = cstring(spec, "Device::open: spec")?;
        Self::open_raw(spec.as_ptr())
    }

    /// Opens the first available device, or the first of `$DEVQ_BACKEND`.
    pub fn open_default() -> Result<Device> {
        Self::open_raw(ptr::null())
    }

    fn open_raw(spec: *const std::os::raw::c_char) -> Result<Device> {
        let mut dev = ptr::null_mut();
        // SAFETY: spec is NULL or a NUL-terminated string; dev is an out slot.
        check(unsafe { sys::devq_device_open(spec, &mut dev) })?;
        Ok(Device { handle: Arc::new(DeviceHandle(dev)) })
    }

    pub(crate) fn raw(&self) -> *mut sys::devq_device {
        self.handle.0
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::devq_device {
        self.raw()
    }

    pub fn info(&self) -> Result<DeviceInfo> {
        // SAFETY: devq_device_info is plain data; all zeroes is valid.
        let mut i: sys::devq_device_info = unsafe { std::mem::zeroed() };
        // SAFETY: live device, valid out pointer.
        check(unsafe { sys::devq_device_info_get(self.raw(), &mut i) })?;
        Ok(DeviceInfo {
            backend: fixed_str(&i.backend),
            ordinal: i.ordinal,
            name: fixed_str(&i.name),
            total_memory: i.total_memory,
            caps: i.caps,
            compute_units: i.compute_units,
        })
    }

    /// Waits until every queue of the device is idle.
    pub fn synchronize(&self, timeout: Duration) -> Result<()> {
        // SAFETY: live device.
        check(unsafe { sys::devq_device_synchronize(self.raw(), timeout_ns(timeout)) }).map(drop)
    }

    /// Tracker, batch and event-pool counters.
    pub fn stats(&self) -> Result<Stats> {
        let mut st = Stats::default();
        // SAFETY: live device, valid out pointer.
        check(unsafe { sys::devq_stats_get(self.raw(), &mut st) })?;
        Ok(st)
    }

    /// Memory counters of the device's resource stack.
    pub fn mem_stats(&self) -> Result<MemStats> {
        let mut st = MemStats::default();
        // SAFETY: live device, valid out pointer.
        check(unsafe { sys::devq_mem_stats_get(self.raw(), &mut st) })?;
        Ok(st)
    }

    /// Processes stream-ordered frees whose streams have reached them.
    pub fn mem_reap(&self) -> Result<()> {
        // SAFETY: live device.
        check(unsafe { sys::devq_mem_reap(self.raw()) }).map(drop)
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.info() {
            Ok(i) => write!(f, "Device({}:{} {:?})", i.backend, i.ordinal, i.name),
            Err(_) => write!(f, "Device({:p})", self.raw()),
        }
    }
}

/// The library's version string (`devq_version()`).
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::devq_version()) }.to_str().unwrap_or("?")
}

/// Every plugin file the loader tried, in search order, and why any was
/// skipped (what `devq-info` prints).
pub fn backends_report() -> Result<Vec<BackendReport>> {
    let mut n = 0usize;
    // SAFETY: out may be NULL with cap 0 to count.
    check(unsafe { sys::devq_backends_report(ptr::null_mut(), 0, &mut n) })?;
    // SAFETY: plain data, zeroes valid.
    let mut v: Vec<sys::devq_backend_report> = vec![unsafe { std::mem::zeroed() }; n];
    let mut got = 0usize;
    // SAFETY: v has room for n reports.
    check(unsafe { sys::devq_backends_report(v.as_mut_ptr(), n, &mut got) })?;
    v.truncate(got.min(n));
    Ok(v.iter()
        .map(|r| BackendReport {
            name: fixed_str(&r.name),
            path: fixed_str(&r.path),
            abi_version: r.abi_version,
            status: r.status,
            devices: r.devices,
            reason: fixed_str(&r.reason),
        })
        .collect())
}
