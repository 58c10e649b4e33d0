// SPDX-License-Identifier: MIT
//! `Signal`: a monotonic 64-bit timeline, usable by the host and by any
//! queue of any device; a failure is a value waiters receive.
use crate::error::{check, errno, timeout_ns, Error, Result};
use devq_sys as sys;
use std::os::raw::{c_int, c_void};
use std::os::unix::io::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::ptr;
use std::time::Duration;

/// A timeline signal.  `Send + Sync`: every operation is thread-safe.
/// Queues that recorded a wait or signal on it keep it alive, so dropping
/// it early is safe.
pub struct Signal {
    raw: *mut sys::devq_signal,
}

// SAFETY: libdevq signals are thread-safe (futex timelines, DESIGN §2).
unsafe impl Send for Signal {}
unsafe impl Sync for Signal {}

impl Drop for Signal {
    fn drop(&mut self) {
        // SAFETY: created by this crate; destroyed once.
        unsafe { sys::devq_signal_destroy(self.raw) }
    }
}

/// How [`Signal::wait_many`] combines its signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    All,
    Any,
}

/// An error for a failure status a signal or callback carries (no call
/// failed, so there is no devq_errmsg line: the message says what it was).
pub(crate) fn status_error(status: c_int, what: &str) -> Error {
    // checked: a status of i32::MIN must not overflow (this runs inside
    // notify callbacks, where a panic is caught but still a failure).
    let code = status.checked_neg().unwrap_or(errno::EIO);
    let text = std::io::Error::from_raw_os_error(code).to_string();
    Error::new(code, format!("{}: {}", what, text))
}

thread_local! {
    /// Depth of host_fn / notify closures running on this thread.
    static IN_CALLBACK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks the current thread as running a host_fn or notify closure.
pub(crate) struct CallbackGuard(());

impl CallbackGuard {
    pub(crate) fn enter() -> CallbackGuard {
        IN_CALLBACK.with(|c| c.set(c.get().saturating_add(1)));
        CallbackGuard(())
    }
}

impl Drop for CallbackGuard {
    fn drop(&mut self) {
        IN_CALLBACK.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// `EDEADLK` for a blocking wait inside a host_fn or notify closure (see
/// "Deadlocks" on [`Queue`](crate::Queue)); polls pass.
pub(crate) fn no_blocking_in_callback(what: &str, timeout: Duration) -> Result<()> {
    if timeout.is_zero() || IN_CALLBACK.with(|c| c.get()) == 0 {
        return Ok(());
    }
    Err(Error::new(
        errno::EDEADLK,
        format!(
            "{}: a blocking wait inside a Queue::host_fn or Signal::notify closure could wait for work ordered behind that closure; \
             poll with Duration::ZERO, or send the result to another thread (a channel, a Notify, a future)",
            what
        ),
    ))
}

/// Reports a caught panic on stderr without a print that could panic.
pub(crate) fn report_panic(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "devq: {}", what);
}

#[derive(Debug)]
struct WakeState {
    fired: bool,
    waker: Option<std::task::Waker>,
}

/// The state of a future waiting on a signal: a `devq_signal_notify`
/// callback that wakes the task's waker.  Cancelled when dropped.
#[derive(Debug, Default)]
pub(crate) struct Waiter {
    armed: Option<(Notify, std::sync::Arc<std::sync::Mutex<WakeState>>)>,
}

impl Waiter {
    pub(crate) fn poll(&mut self, sig: &Signal, value: u64, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<()>> {
        use std::task::Poll;
        // SAFETY: live signal; a zero timeout never blocks.
        let rc = unsafe { sys::devq_signal_wait(sig.raw(), value, 0) };
        if rc >= 0 {
            return Poll::Ready(Ok(()));
        }
        if rc != -errno::ETIMEDOUT {
            return Poll::Ready(Err(Error::last(rc)));
        }
        if let Some((_, st)) = &self.armed {
            let mut g = st.lock().unwrap_or_else(|p| p.into_inner());
            if !g.fired {
                g.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            // Fired, yet not reached: the callback was cancelled (never
            // by us while armed); arm again below.
        }
        let st = std::sync::Arc::new(std::sync::Mutex::new(WakeState { fired: false, waker: Some(cx.waker().clone()) }));
        let st2 = st.clone();
        let n = sig.notify(value, move |_| {
            let w = st2.lock().map(|mut g| {
                g.fired = true;
                g.waker.take()
            });
            if let Ok(Some(w)) = w {
                w.wake();
            }
        });
        match n {
            Ok(n) => {
                self.armed = Some((n, st));
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some((n, _)) = self.armed.take() {
            let _ = n.cancel();
        }
    }
}

/// A `Future` that completes when a signal reaches a value (`Ok`) or
/// fails (`Err` with the failure): [`Signal::reached`].  Woken by a
/// `devq_signal_notify` callback, so any executor drives it; dropping it
/// cancels the callback.
#[derive(Debug)]
pub struct SignalFuture<'a> {
    sig: &'a Signal,
    value: u64,
    waiter: Waiter,
}

impl<'a> std::future::Future for SignalFuture<'a> {
    type Output = Result<()>;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<()>> {
        let me = self.get_mut();
        me.waiter.poll(me.sig, me.value, cx)
    }
}

impl Signal {
    /// A signal at `initial`.
    pub fn new(initial: u64) -> Result<Signal> {
        let mut raw = ptr::null_mut();
        // SAFETY: out slot.
        check(unsafe { sys::devq_signal_create(initial, &mut raw) })?;
        Ok(Signal { raw })
    }

    /// A process-shared signal, for [`export_fd`](Self::export_fd).
    pub fn new_shared(initial: u64) -> Result<Signal> {
        let mut raw = ptr::null_mut();
        // SAFETY: out slot.
        check(unsafe { sys::devq_signal_create_shared(initial, &mut raw) })?;
        Ok(Signal { raw })
    }

    /// Opens the shared signal another process exported (the fd is
    /// duplicated: the caller keeps its own).
    pub fn import_fd(fd: impl AsFd) -> Result<Signal> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live fd for the duration of the call; out slot.
        check(unsafe { sys::devq_signal_import_fd(fd.as_fd().as_raw_fd(), &mut raw) })?;
        Ok(Signal { raw })
    }

    pub(crate) fn raw(&self) -> *mut sys::devq_signal {
        self.raw
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::devq_signal {
        self.raw
    }

    pub fn value(&self) -> u64 {
        // SAFETY: live signal.
        unsafe { sys::devq_signal_value(self.raw) }
    }

    /// Names it in every libdevq message, `DEVQ_LOG` line and trace track
    /// (`signal "name" (#3)` instead of `signal #3`; devq(7) NAMES).  The
    /// name is copied; `""` clears it; more than 63 bytes, a NUL or a
    /// control character is `EINVAL`.
    pub fn set_name(&self, name: &str) -> Result<()> {
        let c = crate::error::cstring(name, "Signal::set_name")?;
        // SAFETY: live signal; c outlives the call (libdevq copies it).
        check(unsafe { sys::devq_signal_set_name(self.raw, c.as_ptr()) }).map(drop)
    }

    /// Raises the value; `EINVAL` if `value` is not above the current one.
    pub fn set(&self, value: u64) -> Result<()> {
        // SAFETY: live signal.
        check(unsafe { sys::devq_signal_set(self.raw, value) }).map(drop)
    }

    /// Fails the signal with `errno` (positive, e.g. `errno::EIO`): every
    /// present and future waiter gets it.
    pub fn fail(&self, errno: i32) -> Result<()> {
        // i32::MIN has no negation: refused like any other non-errno.
        let status = errno.checked_neg().unwrap_or(0);
        // SAFETY: live signal.
        check(unsafe { sys::devq_signal_fail(self.raw, status) }).map(drop)
    }

    /// `Ok` or the failure the signal carries.
    pub fn status(&self) -> Result<()> {
        // SAFETY: live signal.
        match unsafe { sys::devq_signal_status(self.raw) } {
            0 => Ok(()),
            s => Err(status_error(s, "signal failed")),
        }
    }

    /// Waits until the value reaches `value` (`ETIMEDOUT`, or the signal's
    /// failure).  `Duration::ZERO` polls; `Duration::MAX` waits forever.
    /// Inside a host_fn or notify closure a non-zero timeout is `EDEADLK`
    /// (see "Deadlocks" on [`Queue`](crate::Queue)).
    pub fn wait(&self, value: u64, timeout: Duration) -> Result<()> {
        no_blocking_in_callback("Signal::wait", timeout)?;
        // SAFETY: live signal.
        check(unsafe { sys::devq_signal_wait(self.raw, value, timeout_ns(timeout)) }).map(drop)
    }

    /// Waits for all or any of `(signal, value)`; returns the index of the
    /// first one reached.
    pub fn wait_many(waits: &[(&Signal, u64)], mode: WaitMode, timeout: Duration) -> Result<usize> {
        no_blocking_in_callback("Signal::wait_many", timeout)?;
        let sigs: Vec<*mut sys::devq_signal> = waits.iter().map(|(s, _)| s.raw).collect();
        let values: Vec<u64> = waits.iter().map(|(_, v)| *v).collect();
        let mode = match mode {
            WaitMode::All => sys::DEVQ_WAIT_ALL,
            WaitMode::Any => sys::DEVQ_WAIT_ANY,
        };
        let mut first = 0usize;
        // SAFETY: arrays of n live signals and n values; out slot.
        check(unsafe {
            sys::devq_signal_wait_many(sigs.as_ptr(), values.as_ptr(), sigs.len(), mode, timeout_ns(timeout), &mut first)
        })?;
        Ok(first)
    }

    /// A `Future` that completes when the value reaches `value` (`Ok`) or
    /// the signal fails (`Err`).  Needs no runtime: a
    /// `devq_signal_notify` callback wakes the task, so any executor
    /// drives it (see the crate docs for one in a dozen lines).
    pub fn reached(&self, value: u64) -> SignalFuture<'_> {
        SignalFuture { sig: self, value, waiter: Waiter::default() }
    }

    /// Runs `f` once, on libdevq's notifier thread, when the value reaches
    /// `value` (`Ok`), the signal fails (`Err`), or the returned [`Notify`]
    /// is cancelled (`Err` with `ECANCELED`); [`reached`](Self::reached) is
    /// the same as a `Future`.  `f` must not block for long:
    /// it holds up every other notification; a blocking wait of this crate
    /// inside it fails with `EDEADLK` (see "Deadlocks" on
    /// [`Queue`](crate::Queue)).  A panic in `f` is caught and reported on
    /// stderr.
    pub fn notify<F>(&self, value: u64, f: F) -> Result<Notify>
    where
        F: FnOnce(Result<()>) + Send + 'static,
    {
        let boxed: Box<Box<dyn FnOnce(Result<()>) + Send>> = Box::new(Box::new(f));
        let arg = Box::into_raw(boxed) as *mut c_void;
        let mut h = ptr::null_mut();
        // SAFETY: trampoline takes ownership of arg when it runs, which
        // libdevq promises exactly once after a successful call.
        let rc = unsafe { sys::devq_signal_notify(self.raw, value, Some(notify_trampoline), arg, &mut h) };
        if rc < 0 {
            let e = Error::last(rc);
            // SAFETY: the call failed, so the callback never runs: the box is ours.
            drop(unsafe { Box::from_raw(arg as *mut Box<dyn FnOnce(Result<()>) + Send>) });
            return Err(e);
        }
        Ok(Notify { raw: h })
    }

    /// A new fd that polls readable when the value reaches `value` or the
    /// signal fails (then [`status`](Self::status) says which).
    pub fn wait_fd(&self, value: u64) -> Result<OwnedFd> {
        let mut fd: c_int = -1;
        // SAFETY: live signal; out slot.
        check(unsafe { sys::devq_signal_wait_fd(self.raw, value, &mut fd) })?;
        // SAFETY: a new fd the caller owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// An fd another process passes to [`import_fd`](Self::import_fd)
    /// (shared signals only).
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let mut fd: c_int = -1;
        // SAFETY: live signal; out slot.
        check(unsafe { sys::devq_signal_export_fd(self.raw, &mut fd) })?;
        // SAFETY: a new fd the caller owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Registers this process as a producer of a shared signal: once every
    /// registered producer died with a waited-for value not reached,
    /// waiters fail with `EOWNERDEAD` (devq_signal_add_producer(3)).
    pub fn add_producer(&self) -> Result<()> {
        // SAFETY: live signal.
        check(unsafe { sys::devq_signal_add_producer(self.raw) }).map(drop)
    }

    /// Ends this process's registration as a producer; `ENOENT` if it
    /// was not registered.
    pub fn remove_producer(&self) -> Result<()> {
        // SAFETY: live signal.
        check(unsafe { sys::devq_signal_remove_producer(self.raw) }).map(drop)
    }
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signal(value {}, {:?})", self.value(), self.status())
    }
}

unsafe extern "C" fn notify_trampoline(arg: *mut c_void, status: c_int) {
    // Nothing may unwind into C: the conversion, the closure and its drop
    // run inside catch_unwind, and the payload is forgotten.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        // SAFETY: arg is the box notify() leaked; libdevq calls this once.
        let f = Box::from_raw(arg as *mut Box<dyn FnOnce(Result<()>) + Send>);
        let r = if status == 0 {
            Ok(())
        } else if status == -errno::ECANCELED {
            Err(status_error(status, "notify cancelled"))
        } else {
            Err(status_error(status, "signal failed"))
        };
        let _in = CallbackGuard::enter();
        f(r)
    }));
    if let Err(payload) = r {
        std::mem::forget(payload);
        report_panic("a Signal::notify callback panicked");
    }
}

/// The handle of a [`Signal::notify`] callback.  Dropping it keeps the
/// callback (`devq_notify_release`); [`cancel`](Self::cancel) withdraws it.
#[derive(Debug)]
pub struct Notify {
    raw: *mut sys::devq_notify,
}

// SAFETY: cancel and release are thread-safe in libdevq.
unsafe impl Send for Notify {}
unsafe impl Sync for Notify {}

impl Notify {
    /// `Ok(true)`: the callback will run with `ECANCELED`; `Ok(false)`: it
    /// already ran or is running.
    pub fn cancel(self) -> Result<bool> {
        let raw = self.raw;
        std::mem::forget(self); // cancel gives the handle back, not release
        // SAFETY: a live handle, given back exactly once.
        match unsafe { sys::devq_notify_cancel(raw) } {
            0 => Ok(true),
            rc if rc == -errno::EALREADY => Ok(false),
            rc => Err(Error::last(rc)),
        }
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        // SAFETY: a live handle, given back exactly once.
        unsafe { sys::devq_notify_release(self.raw) };
    }
}
