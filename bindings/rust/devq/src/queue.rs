// SPDX-License-Identifier: MIT
//! `Queue`: an in-order batch recorder on one backend stream, recorded in
//! the builder style of the morok seed:
//! `q.wait(&s, 1).exec(&k, &args, launch).signal(&s, 2).submit()?`.
//!
//! Recording calls return `&mut Self`; the first error is kept (libdevq
//! keeps it sticky too) with the `devq_errmsg()` of the call that failed,
//! and `submit` returns it.  Host memory transfers (`write`, `read`) are
//! recorded in a [`scope`](fn@crate::scope), which makes the host slices
//! outlive the work that uses them.
use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::{check, timeout_ns, Error, Result};
use crate::kernel::{Arg, Kernel, Launch};
use crate::signal::Signal;
use crate::timestamp::Timestamp;
use devq_sys as sys;
use std::os::raw::{c_int, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// COMPUTE runs kernels; COPY gets its own engine where the device has one
/// (`DEVQ_CAP_COPY_ENGINE`) and falls back to a compute stream elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    Compute,
    Copy,
}

type HostFn = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// A command queue.  `Send` (move it to the thread that records) but not
/// `Sync`: recording takes `&mut self`, so two threads never record at
/// once.  Dropping it waits for its submitted work (`devq_queue_destroy`).
pub struct Queue {
    raw: *mut sys::devq_queue,
    desc: sys::devq_queue_desc,
    dev: Device,
    /// The first recording error of the open batch.
    err: Option<Error>,
    /// Host functions not yet run: a skipped one is never called, so the
    /// queue owns them until it is destroyed.
    host_fns: Vec<HostFn>,
}

// SAFETY: a libdevq queue may be used from any thread, one at a time
// (enforced by &mut self; libdevq returns -EBUSY otherwise).
unsafe impl Send for Queue {}

impl Queue {
    /// A compute queue of priority 0.
    pub fn new(dev: &Device) -> Result<Queue> {
        Self::with_kind(dev, QueueKind::Compute, 0)
    }

    /// A queue of `kind`; higher `priority` runs first where the device
    /// honours priorities (`DEVQ_CAP_PRIORITIES`).
    pub fn with_kind(dev: &Device, kind: QueueKind, priority: i32) -> Result<Queue> {
        let desc = sys::devq_queue_desc {
            kind: match kind {
                QueueKind::Compute => sys::DEVQ_QUEUE_COMPUTE,
                QueueKind::Copy => sys::DEVQ_QUEUE_COPY,
            },
            priority,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: live device; desc and out slot valid for the call.
        check(unsafe { sys::devq_queue_create(dev.raw(), &desc, &mut raw) })?;
        Ok(Queue { raw, desc, dev: dev.clone(), err: None, host_fns: Vec::new() })
    }

    /// Gives up on this queue's pending work and continues with a fresh
    /// queue of the same kind: the open batch is discarded, deferred
    /// batches are cancelled (their signals fail with `ECANCELED`) and
    /// issued work is waited for (`devq_queue_destroy`).  If no new queue
    /// can be made, every later call fails with `EINVAL`.
    pub(crate) fn cancel_pending(&mut self) -> Result<()> {
        // SAFETY: live queue (or NULL after an earlier failed recreate,
        // which destroy ignores); nothing of it runs after this returns.
        unsafe { sys::devq_queue_destroy(self.raw) };
        self.raw = ptr::null_mut();
        self.err = None;
        self.host_fns.clear();
        let mut raw = ptr::null_mut();
        // SAFETY: live device; desc and out slot valid for the call.
        check(unsafe { sys::devq_queue_create(self.dev.raw(), &self.desc, &mut raw) })?;
        self.raw = raw;
        Ok(())
    }

    pub(crate) fn raw(&self) -> *mut sys::devq_queue {
        self.raw
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&mut self) -> *mut sys::devq_queue {
        self.raw
    }

    /// Names it in every libdevq message, `DEVQ_LOG` line and trace track
    /// (`queue "name" (#3)` instead of `queue #3`; devq(7) NAMES).  The
    /// name is copied; `""` clears it; more than 63 bytes, a NUL or a
    /// control character is `EINVAL`.
    pub fn set_name(&self, name: &str) -> Result<()> {
        let c = crate::error::cstring(name, "Queue::set_name")?;
        // SAFETY: live queue; naming is not recording (no recorder role),
        // and c outlives the call (libdevq copies it).
        check(unsafe { sys::devq_queue_set_name(self.raw, c.as_ptr()) }).map(drop)
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Keeps the first failure of the open batch.
    pub(crate) fn record_rc(&mut self, rc: c_int) {
        self.record(rc);
    }

    fn record(&mut self, rc: c_int) -> &mut Self {
        if rc < 0 && self.err.is_none() {
            self.err = Some(Error::last(rc));
        }
        self
    }

    /// The first recording error of the open batch, if any (submit
    /// returns it and discards the batch).
    pub fn error(&self) -> Option<&Error> {
        self.err.as_ref()
    }

    /// Later ops start once `s` reaches `value` (a tracker alignment on the
    /// same device, no host round trip).
    pub fn wait(&mut self, s: &Signal, value: u64) -> &mut Self {
        // SAFETY: live queue and signal (libdevq references the signal).
        let rc = unsafe { sys::devq_queue_wait(self.raw, s.raw(), value) };
        self.record(rc)
    }

    /// `s` reaches `value` once every earlier op of the queue is done.
    pub fn signal(&mut self, s: &Signal, value: u64) -> &mut Self {
        // SAFETY: live queue and signal.
        let rc = unsafe { sys::devq_queue_signal(self.raw, s.raw(), value) };
        self.record(rc)
    }

    /// Runs `k` over `launch` with `args`.  Buffer arguments' access modes
    /// are what the tracker orders other queues' work by.
    pub fn exec(&mut self, k: &Kernel, args: &[Arg<'_>], launch: Launch) -> &mut Self {
        let table;
        let mut raw: Vec<sys::devq_arg> = Vec::with_capacity(args.len() + 1);
        if k.rust_abi {
            table = crate::cpu::arg_table(args);
            let bytes = Arg::Value(u64_bytes(&table));
            raw.push(bytes.raw());
        }
        raw.extend(args.iter().map(|a| a.raw()));
        let l = launch.raw();
        // SAFETY: live queue and kernel; args point at live buffers and at
        // value bytes libdevq copies during the call.
        let rc = unsafe { sys::devq_queue_exec(self.raw, k.raw(), raw.as_ptr(), raw.len(), &l) };
        self.record(rc)
    }

    /// Copies `n` bytes from `src` at `src_off` to `dst` at `dst_off`.
    pub fn copy(&mut self, dst: &Buffer, dst_off: usize, src: &Buffer, src_off: usize, n: usize) -> &mut Self {
        // SAFETY: live queue and buffers; libdevq checks the ranges.
        let rc = unsafe { sys::devq_queue_copy(self.raw, dst.raw(), dst_off, src.raw(), src_off, n) };
        self.record(rc)
    }

    /// Sets `n` bytes of `dst` from `off` to `byte`.
    pub fn fill(&mut self, dst: &Buffer, off: usize, n: usize, byte: u8) -> &mut Self {
        // SAFETY: live queue and buffer; libdevq checks the range.
        let rc = unsafe { sys::devq_queue_fill(self.raw, dst.raw(), off, n, byte) };
        self.record(rc)
    }

    /// Later ops see every earlier op's memory effects.
    pub fn barrier(&mut self) -> &mut Self {
        // SAFETY: live queue.
        let rc = unsafe { sys::devq_queue_barrier(self.raw) };
        self.record(rc)
    }

    /// Calls `f` on a host thread once the earlier ops are done (never, if
    /// one of them fails); later ops wait for it to return.
    pub fn host_fn<F: FnOnce() + Send + 'static>(&mut self, f: F) -> &mut Self {
        let cell: HostFn = Arc::new(Mutex::new(Some(Box::new(f))));
        let arg = Arc::as_ptr(&cell) as *mut c_void;
        // SAFETY: the queue keeps `cell` alive until destroy, after which
        // libdevq calls nothing of this queue.
        let rc = unsafe { sys::devq_queue_host_fn(self.raw, Some(host_fn_trampoline), arg) };
        if rc >= 0 {
            self.host_fns.retain(|c| c.lock().map(|g| g.is_some()).unwrap_or(false));
            self.host_fns.push(cell);
        }
        self.record(rc)
    }

    /// Hands the open batch to the device and returns at once; the first
    /// recording error, if any, discards the batch and is returned here.
    pub fn submit(&mut self) -> Result<()> {
        // SAFETY: live queue.
        let rc = unsafe { sys::devq_queue_submit(self.raw) };
        let recorded = self.err.take();
        if rc < 0 {
            let now = Error::last(rc);
            return Err(recorded.unwrap_or(now));
        }
        match recorded {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits until every submitted batch is done; a batch's failure is
    /// reported once.
    pub fn finish(&mut self, timeout: Duration) -> Result<()> {
        // SAFETY: live queue.
        check(unsafe { sys::devq_queue_finish(self.raw, timeout_ns(timeout)) }).map(drop)
    }

    /// Records a device timing point (`DEVQ_CAP_TIMING`).
    pub fn timestamp(&mut self) -> Result<Timestamp> {
        let mut ts = ptr::null_mut();
        // SAFETY: live queue; out slot.
        check(unsafe { sys::devq_queue_timestamp(self.raw, &mut ts) })?;
        Ok(Timestamp::from_raw(ts))
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: live queue, destroyed once; waits for submitted work, so
        // no host function runs after this and host_fns may go.
        unsafe { sys::devq_queue_destroy(self.raw) }
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Queue({:p} on {:?})", self.raw, self.dev)
    }
}

fn u64_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64s have no padding; the length covers exactly v.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

unsafe extern "C" fn host_fn_trampoline(arg: *mut c_void) {
    // SAFETY: arg is the Arc the queue keeps alive (see host_fn).
    let cell = &*(arg as *const Mutex<Option<Box<dyn FnOnce() + Send>>>);
    let f = cell.lock().ok().and_then(|mut g| g.take());
    if let Some(f) = f {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
            eprintln!("devq: a Queue::host_fn closure panicked");
        }
    }
}

/// Makes each queue wait for every other's tail (`devq_barrier`).
pub fn barrier(queues: &mut [&mut Queue]) -> Result<()> {
    let raw: Vec<*mut sys::devq_queue> = queues.iter().map(|q| q.raw).collect();
    // SAFETY: n live queues, each borrowed mutably (no concurrent recording).
    check(unsafe { sys::devq_barrier(raw.as_ptr(), raw.len()) }).map(drop)
}
