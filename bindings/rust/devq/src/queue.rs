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
use crate::buffer::{elems_to_bytes, Buffer, BufferSlice};
use crate::device::Device;
use crate::error::{check, errno, timeout_ns, Error, Result};
use crate::pod::Pod;
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

/// A command queue.  `Send + Sync`: recording takes `&mut self`, so two
/// threads never record at once, while [`finish`](Self::finish) takes
/// `&self` and may be called from several threads at once.  Dropping it
/// waits for its submitted work (`devq_queue_destroy`).
///
/// # Deadlocks
/// A [`host_fn`](Self::host_fn) closure runs on the host thread that
/// executes the queue's work, and ops recorded after it wait for it; a
/// [`Signal::notify`] callback runs on libdevq's one notifier thread.  A
/// closure that blocks on work ordered behind it (on this queue, or on a
/// signal only that work sets) never returns.  So inside either closure
/// every blocking wait of this crate ([`Signal::wait`],
/// [`Signal::wait_many`], [`Queue::finish`], [`Pending::wait`]) with a
/// non-zero timeout fails at once with `EDEADLK` instead of hanging; a
/// zero timeout (a poll) is allowed.  Hand results to other threads with
/// a channel, a [`Notify`](crate::Notify) or a future instead.
pub struct Queue {
    raw: *mut sys::devq_queue,
    desc: sys::devq_queue_desc,
    dev: Device,
    /// The first recording error of the open batch.
    err: Option<Error>,
    /// Host functions not yet run: a skipped one is never called, so the
    /// queue owns them until it is destroyed.
    host_fns: Vec<HostFn>,
    /// The open batch's completion, made by the first owned transfer
    /// recorded in it and signalled at its end by submit.
    batch: Option<Arc<BatchDone>>,
    /// Host memory owned transfers use, kept until their batch is done
    /// (or failed, or the queue is destroyed).
    owned: Vec<(Arc<BatchDone>, Box<dyn Send>)>,
    /// Where this queue's cpu_kernel! execs leave their failure text
    /// (the argument table points here; kept until after destroy).
    notes: Arc<crate::cpu::Notes>,
}

// SAFETY: a libdevq queue may be used from any thread, one recorder at a
// time (enforced by &mut self; libdevq returns -EBUSY otherwise).  The
// &self methods (finish, set_name, device, error) are thread-safe in
// libdevq or read fields no &self method writes; `owned` and `host_fns`
// are only touched through &mut self.
unsafe impl Send for Queue {}
unsafe impl Sync for Queue {}

/// The completion of one submitted batch that owned transfers wait for:
/// its signal reaches 1 at the batch's end, or fails with its failure;
/// `cause` is the error that kept the batch from being submitted.
#[derive(Debug)]
pub(crate) struct BatchDone {
    pub(crate) sig: Signal,
    pub(crate) cause: Mutex<Option<Error>>,
}

impl BatchDone {
    fn settled(&self) -> bool {
        self.sig.value() >= 1 || self.sig.status().is_err()
    }
    /// The batch can no longer run: fail its signal with `e` and keep `e`
    /// as the cause owned transfers report.
    fn abandon(&self, e: Error) {
        let code = e.errno;
        if let Ok(mut c) = self.cause.lock() {
            c.get_or_insert(e);
        }
        let _ = self.sig.fail(code);
    }
    /// The error a transfer of this batch reports for signal failure `e`.
    pub(crate) fn error(&self, what: &str, e: Error) -> Error {
        let cause = self.cause.lock().ok().and_then(|c| c.clone());
        match cause {
            Some(c) => Error::new(c.errno, format!("{}: its batch was not submitted: {}", what, c.message)),
            None => Error::new(e.errno, format!("{}: its batch failed: {}", what, e.message)),
        }
    }
}

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
        Ok(Queue { raw, desc, dev: dev.clone(), err: None, host_fns: Vec::new(), batch: None, owned: Vec::new(), notes: Arc::new(Mutex::new(None)) })
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
        self.drop_owned();
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
        let notes = Arc::as_ptr(&self.notes);
        self.exec_noting(k, args, launch, notes);
        self
    }

    /// `exec` with a cpu_kernel!'s failure text going to `notes` (which
    /// must outlive every run of the exec); returns the argument table of
    /// a Rust kernel (empty for a foreign one).
    pub(crate) fn exec_noting(&mut self, k: &Kernel, args: &[Arg<'_>], launch: Launch, notes: *const crate::cpu::Notes) -> Vec<u64> {
        let mut table = Vec::new();
        let mut raw: Vec<sys::devq_arg> = Vec::with_capacity(args.len() + 1);
        if k.rust_abi {
            table = crate::cpu::arg_table(args, notes);
            if let Ok(t) = Arg::bytes(u64_bytes(&table)).raw(true) {
                raw.push(t);
            }
        }
        for a in args {
            match a.raw(k.rust_abi) {
                Ok(r) => raw.push(r),
                Err(why) => {
                    self.fail_here(errno::EINVAL, why);
                    return table;
                }
            }
        }
        let l = launch.raw();
        // SAFETY: live queue and kernel; args point at live buffers and at
        // value bytes libdevq copies during the call.
        let rc = unsafe { sys::devq_queue_exec(self.raw, k.raw(), raw.as_ptr(), raw.len(), &l) };
        self.record(rc);
        table
    }

    /// Whether ops or an error are recorded and not submitted.
    pub(crate) fn has_open_batch(&self) -> bool {
        self.err.is_some() || self.batch.is_some()
    }

    /// Takes the open batch's recorded error (a capture ends with it).
    pub(crate) fn take_error(&mut self) -> Option<Error> {
        self.err.take()
    }

    /// Keeps `why` as the open batch's error (a check this crate makes
    /// before calling libdevq).
    pub(crate) fn fail_here(&mut self, code: i32, why: String) -> &mut Self {
        if self.err.is_none() {
            self.err = Some(Error::new(code, why));
        }
        self
    }

    /// Element offset `off` and count `n` of `T` as bytes, or the error
    /// recorded.
    fn byte_span<T: Pod>(&mut self, what: &str, off: usize, n: usize) -> Option<(usize, usize)> {
        match (elems_to_bytes::<T>(off, what), elems_to_bytes::<T>(n, what)) {
            (Ok(o), Ok(b)) => Some((o, b)),
            (Err(e), _) | (_, Err(e)) => {
                self.fail_here(e.errno, e.message);
                None
            }
        }
    }

    /// Copies `n` elements from `src` at element `src_off` to `dst` at
    /// `dst_off`.  `n == 0` records nothing.
    pub fn copy<T: Pod>(&mut self, dst: &Buffer<T>, dst_off: usize, src: &Buffer<T>, src_off: usize, n: usize) -> &mut Self {
        if n == 0 {
            return self;
        }
        let (d, s) = match (self.byte_span::<T>("Queue::copy", dst_off, n), self.byte_span::<T>("Queue::copy", src_off, 0)) {
            (Some(d), Some(s)) => (d, s),
            _ => return self,
        };
        // SAFETY: live queue and buffers; libdevq checks the ranges.
        let rc = unsafe { sys::devq_queue_copy(self.raw, dst.raw(), d.0, src.raw(), s.0, d.1) };
        self.record(rc)
    }

    /// Copies slice `src` into slice `dst`; `EINVAL` (at submit) when their
    /// lengths differ, nothing recorded when both are empty.
    pub fn copy_slice<T: Pod>(&mut self, dst: BufferSlice<'_, T>, src: BufferSlice<'_, T>) -> &mut Self {
        if dst.len() != src.len() {
            let why = format!("Queue::copy_slice: destination has {} elements, source {}; slice both to one length", dst.len(), src.len());
            return self.fail_here(errno::EINVAL, why);
        }
        self.copy(dst.buffer(), dst.start(), src.buffer(), src.start(), src.len())
    }

    /// Sets every byte of `n` elements of `dst` from element `off` to
    /// `byte`.  `n == 0` records nothing.
    pub fn fill<T: Pod>(&mut self, dst: &Buffer<T>, off: usize, n: usize, byte: u8) -> &mut Self {
        if n == 0 {
            return self;
        }
        let (o, b) = match self.byte_span::<T>("Queue::fill", off, n) {
            Some(v) => v,
            None => return self,
        };
        // SAFETY: live queue and buffer; libdevq checks the range.
        let rc = unsafe { sys::devq_queue_fill(self.raw, dst.raw(), o, b, byte) };
        self.record(rc)
    }

    /// The open batch's completion, made on first use.
    fn batch_done(&mut self) -> Result<Arc<BatchDone>> {
        if let Some(b) = &self.batch {
            return Ok(b.clone());
        }
        let b = Arc::new(BatchDone { sig: Signal::new(0)?, cause: Mutex::new(None) });
        self.batch = Some(b.clone());
        Ok(b)
    }

    /// Frees the host memory of owned transfers whose batch is done.
    fn reap_owned(&mut self) {
        self.owned.retain(|(b, _)| !b.settled());
    }

    /// After the queue was destroyed (nothing of it runs any more): the
    /// unsubmitted batch can never complete, and owned memory may go.
    fn drop_owned(&mut self) {
        if let Some(b) = self.batch.take() {
            b.abandon(Error::new(errno::ECANCELED, "the queue was dropped or cancelled before the batch was submitted"));
        }
        self.owned.clear();
    }

    /// Uploads `data` into `dst` from element `off` when the op executes,
    /// without borrowing anything: the queue owns `data` (a `Vec<T>` or a
    /// `Box<[T]>`; no copy is made) until the batch is done, so this needs
    /// no [`scope`](fn@crate::scope) and the caller may go on recording
    /// and submitting (iteration n+1's upload overlaps iteration n's
    /// kernels).  Empty `data` records nothing.
    pub fn upload<T: Pod>(&mut self, dst: &Buffer<T>, off: usize, data: impl Into<Vec<T>>) -> &mut Self {
        let data: Vec<T> = data.into();
        if data.is_empty() {
            return self;
        }
        self.reap_owned();
        let (o, n) = match self.byte_span::<T>("Queue::upload", off, data.len()) {
            Some(v) => v,
            None => return self,
        };
        let done = match self.batch_done() {
            Ok(d) => d,
            Err(e) => return self.fail_here(e.errno, e.message),
        };
        // SAFETY: the Vec's heap block does not move when the Vec does, and
        // the queue keeps it until the batch is done (or the queue is
        // destroyed, which waits for issued work).
        let rc = unsafe { sys::devq_queue_write(self.raw, dst.raw(), o, data.as_ptr() as *const c_void, n) };
        if rc >= 0 {
            self.owned.push((done, Box::new(data)));
        }
        self.record(rc)
    }

    /// Reads `src` (a whole buffer or a [`BufferSlice`]) into a new
    /// `Vec<T>` when the op executes, and returns at once: the
    /// [`Pending`] handle yields the `Vec` once the batch this op is in has
    /// been submitted and is done ([`Pending::wait`], or `.await`: it is a
    /// `Future`), or the batch's failure.  No scope, no borrow: record the
    /// next iteration while this one runs.  An empty `src` yields an empty
    /// `Vec` once the batch is done.
    pub fn readback<'a, T: Pod>(&mut self, src: impl Into<BufferSlice<'a, T>>) -> Pending<T> {
        let src = src.into();
        self.reap_owned();
        let done = match self.batch_done() {
            Ok(d) => d,
            Err(e) => return Pending::failed(e),
        };
        let mut v: Vec<T> = Vec::with_capacity(src.len());
        // SAFETY: Pod: all-zero bytes are a valid T; capacity is len.
        unsafe {
            std::ptr::write_bytes(v.as_mut_ptr(), 0, src.len());
            v.set_len(src.len());
        }
        let slot = Arc::new(Mutex::new(v));
        if !src.is_empty() {
            let (off, n) = src.byte_range();
            let p = slot.lock().map(|mut g| g.as_mut_ptr() as *mut c_void).unwrap_or(ptr::null_mut());
            // SAFETY: the Vec's block stays put and alive (the queue keeps
            // a reference) until the batch is done; nobody reads it before
            // then (Pending takes it only after the batch signal).
            let rc = unsafe { sys::devq_queue_read(self.raw, p, src.buffer().raw(), off, n) };
            self.record(rc);
            if rc >= 0 {
                self.owned.push((done.clone(), Box::new(slot.clone())));
            }
        }
        Pending::new(slot, done)
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
    /// recording error, if any, discards the batch and is returned here
    /// (and by the [`Pending`] handles of its readbacks).
    pub fn submit(&mut self) -> Result<()> {
        let batch = self.batch.take();
        if let Some(b) = &batch {
            // The batch's end: owned transfers of it are done once this is.
            // SAFETY: live queue and signal.
            let rc = unsafe { sys::devq_queue_signal(self.raw, b.sig.raw(), 1) };
            self.record(rc);
        }
        // SAFETY: live queue.
        let rc = unsafe { sys::devq_queue_submit(self.raw) };
        let recorded = self.err.take();
        let r = if rc < 0 {
            let now = Error::last(rc);
            Err(recorded.unwrap_or(now))
        } else {
            match recorded {
                Some(e) => Err(e),
                None => Ok(()),
            }
        };
        if let (Some(b), Err(e)) = (&batch, &r) {
            b.abandon(e.clone());
        }
        self.reap_owned();
        r
    }

    /// Waits until every submitted batch is done; a batch's failure is
    /// reported once.  `&self`: several threads may wait at once.  When a
    /// [`cpu_kernel!`](crate::cpu_kernel) panicked, the error's message
    /// ends with the panic's text.  Inside a host_fn or notify closure a
    /// non-zero timeout is `EDEADLK` (see "Deadlocks" above).
    pub fn finish(&self, timeout: Duration) -> Result<()> {
        crate::signal::no_blocking_in_callback("Queue::finish", timeout)?;
        // SAFETY: live queue.
        check(unsafe { sys::devq_queue_finish(self.raw, timeout_ns(timeout)) }).map(drop).map_err(|e| self.with_kernel_note(e))
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
        // no host function or transfer runs after this and host_fns and
        // owned memory may go.
        unsafe { sys::devq_queue_destroy(self.raw) }
        self.drop_owned();
    }
}

impl Queue {
    /// `e` with the failure text a cpu_kernel! of this queue left, if any.
    fn with_kernel_note(&self, mut e: Error) -> Error {
        if let Some(n) = self.notes.lock().ok().and_then(|mut g| g.take()) {
            e.message = format!("{}; the cpu_kernel! {}", e.message, n);
        }
        e
    }
}

/// The result of a [`Queue::readback`]: a `Vec<T>` once the batch is done.
/// Wait with [`wait`](Self::wait), poll with [`try_take`](Self::try_take),
/// or `.await` it (`Future<Output = Result<Vec<T>>>`, woken by
/// `devq_signal_notify`).  Dropping it early is fine: the queue keeps the
/// memory until the read is done.
#[derive(Debug)]
pub struct Pending<T: Pod> {
    slot: Option<Arc<Mutex<Vec<T>>>>,
    done: Option<Arc<BatchDone>>,
    err: Option<Error>,
    waiter: crate::signal::Waiter,
}

impl<T: Pod> Pending<T> {
    fn new(slot: Arc<Mutex<Vec<T>>>, done: Arc<BatchDone>) -> Self {
        Pending { slot: Some(slot), done: Some(done), err: None, waiter: Default::default() }
    }
    fn failed(e: Error) -> Self {
        Pending { slot: None, done: None, err: Some(e), waiter: Default::default() }
    }

    /// The data once the batch finished and the signal said so: taken out
    /// (a second take is `EINVAL`).
    fn take(&mut self, r: Result<()>) -> Result<Vec<T>> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        let (slot, done) = match (self.slot.take(), self.done.take()) {
            (Some(s), Some(d)) => (s, d),
            _ => return Err(Error::new(errno::EINVAL, "Pending: the data was already taken; take it once")),
        };
        match r {
            Err(e) => Err(done.error("Queue::readback", e)),
            Ok(()) => {
                let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
                Ok(std::mem::take(&mut *g))
            }
        }
    }

    /// Whether `wait` would return at once.
    pub fn is_ready(&self) -> bool {
        self.done.as_ref().map_or(true, |d| d.settled())
    }

    /// The data if the batch is done, `Ok(None)` if not yet.
    pub fn try_take(&mut self) -> Result<Option<Vec<T>>> {
        if !self.is_ready() {
            return Ok(None);
        }
        self.wait(Duration::ZERO).map(Some)
    }

    /// Waits up to `timeout` for the batch: the data, the batch's failure
    /// (with its cause), or `ETIMEDOUT` (wait again later).
    pub fn wait(&mut self, timeout: Duration) -> Result<Vec<T>> {
        let r = match &self.done {
            Some(d) => d.sig.wait(1, timeout),
            None => Ok(()),
        };
        match r {
            Err(e) if e.is_timeout() || e.errno == errno::EDEADLK => Err(e),
            r => self.take(r),
        }
    }
}

impl<T: Pod> std::future::Future for Pending<T> {
    type Output = Result<Vec<T>>;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let me = self.get_mut();
        let done = match &me.done {
            Some(d) => d.clone(),
            None => return std::task::Poll::Ready(me.take(Ok(()))),
        };
        match me.waiter.poll(&done.sig, 1, cx) {
            std::task::Poll::Ready(r) => std::task::Poll::Ready(me.take(r)),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

impl<T: Pod> Unpin for Pending<T> {}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Queue({:p} on {:?})", self.raw, self.dev)
    }
}

pub(crate) fn u64_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64s have no padding; the length covers exactly v.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

unsafe extern "C" fn host_fn_trampoline(arg: *mut c_void) {
    // Nothing here may unwind into C: the closure, its drop and the lock
    // all run inside catch_unwind; a panic payload is forgotten (its drop
    // could panic again) and reported without a panicking print.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: arg is the Arc the queue keeps alive (see host_fn).
        let cell = &*(arg as *const Mutex<Option<Box<dyn FnOnce() + Send>>>);
        let f = cell.lock().ok().and_then(|mut g| g.take());
        if let Some(f) = f {
            let _in = crate::signal::CallbackGuard::enter();
            f();
        }
    }));
    if let Err(payload) = r {
        std::mem::forget(payload);
        crate::signal::report_panic("a Queue::host_fn closure panicked; later ops of its batch ran as if it had returned");
    }
}

/// Makes each queue wait for every other's tail (`devq_barrier`).
pub fn barrier(queues: &mut [&mut Queue]) -> Result<()> {
    let raw: Vec<*mut sys::devq_queue> = queues.iter().map(|q| q.raw).collect();
    // SAFETY: n live queues, each borrowed mutably (no concurrent recording).
    check(unsafe { sys::devq_barrier(raw.as_ptr(), raw.len()) }).map(drop)
}
