// SPDX-License-Identifier: MIT
//! `Timestamp`: a device timing point recorded in a queue's batch.
use crate::error::{check, Result};
use devq_sys as sys;
use std::time::Duration;

/// A device timing point from [`Queue::timestamp`](crate::Queue::timestamp).
#[derive(Debug)]
pub struct Timestamp {
    raw: *mut sys::devq_timestamp,
}

// SAFETY: a timestamp is read-only once recorded; libdevq synchronises.
unsafe impl Send for Timestamp {}
unsafe impl Sync for Timestamp {}

impl Timestamp {
    pub(crate) fn from_raw(raw: *mut sys::devq_timestamp) -> Timestamp {
        Timestamp { raw }
    }

    /// Device time from `self` to `later` once both were reached (`EAGAIN`
    /// before).
    pub fn elapsed_until(&self, later: &Timestamp) -> Result<Duration> {
        let mut ns = 0u64;
        // SAFETY: two live timestamps; out slot.
        check(unsafe { sys::devq_timestamp_elapsed(self.raw, later.raw, &mut ns) })?;
        Ok(Duration::from_nanos(ns))
    }
}

impl Drop for Timestamp {
    fn drop(&mut self) {
        // SAFETY: created by devq_queue_timestamp; destroyed once.
        unsafe { sys::devq_timestamp_destroy(self.raw) }
    }
}
