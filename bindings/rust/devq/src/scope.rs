// SPDX-License-Identifier: MIT
//! Host memory transfers, made safe by a scope.
//!
//! libdevq reads a `write` source and fills a `read` destination when the
//! op executes, not when it is recorded, so the host memory must outlive
//! the batch.  Rust expresses that with a scope, as `std::thread::scope`
//! does for threads: slices handed to [`ScopedQueue::write`] and
//! [`ScopedQueue::read`] are borrowed for the whole scope, and [`scope`](fn@crate::scope)
//! returns only after every queue it lent out has submitted what was
//! recorded and finished it.  Dropping or forgetting a value inside the
//! closure cannot end those borrows early.
use crate::buffer::{elems_to_bytes, Buffer};
use crate::error::{errno, Error, Result};
use crate::kernel::{Arg, Kernel, Launch};
use crate::pod::{bytes_of, Pod};
use crate::queue::Queue;
use crate::signal::Signal;
use devq_sys as sys;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::time::{Duration, Instant};

/// Runs `f`, which records work (including host transfers) on queues lent
/// with [`Scope::on`], then submits every lent queue's open batch (all of
/// them first, so a queue may wait on a signal a later one sets) and waits
/// for all their work (without a time limit: a batch that waits on a signal
/// nobody sets keeps the scope waiting).  Returns `f`'s error, else the
/// first submit or finish error.
///
/// ```no_run
/// # fn main() -> devq::Result<()> {
/// let dev = devq::Device::open("cpu")?;
/// let mut q = devq::Queue::new(&dev)?;
/// let buf = devq::Buffer::new(&dev, 16)?;
/// let input = [1u32, 2, 3, 4];
/// let mut output = [0u32; 4];
/// devq::scope(|s| {
///     s.on(&mut q).write(&buf, 0, &input).read(&mut output, &buf, 0).submit()
/// })?;
/// assert_eq!(output, input);
/// # Ok(()) }
/// ```
///
/// What the borrows rule out (each of these fails to compile):
///
/// A source that dies inside the scope, before the work that reads it:
/// ```compile_fail
/// # fn main() -> devq::Result<()> {
/// # let dev = devq::Device::open("cpu")?;
/// # let mut q = devq::Queue::new(&dev)?;
/// # let buf = devq::Buffer::new(&dev, 16)?;
/// devq::scope(|s| {
///     let input = vec![1u8; 16];
///     s.on(&mut q).write(&buf, 0, &input).submit()
/// })?;
/// # Ok(()) }
/// ```
/// Looking at a destination before the scope finished the read:
/// ```compile_fail
/// # fn main() -> devq::Result<()> {
/// # let dev = devq::Device::open("cpu")?;
/// # let mut q = devq::Queue::new(&dev)?;
/// # let buf = devq::Buffer::new(&dev, 16)?;
/// let mut output = [0u8; 16];
/// devq::scope(|s| {
///     s.on(&mut q).read(&mut output, &buf, 0).submit()?;
///     println!("{}", output[0]);
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
/// Dropping (destroying) a lent queue inside the scope:
/// ```compile_fail
/// # fn main() -> devq::Result<()> {
/// # let dev = devq::Device::open("cpu")?;
/// # let mut q = devq::Queue::new(&dev)?;
/// # let buf = devq::Buffer::new(&dev, 16)?;
/// let input = [1u8; 16];
/// devq::scope(|s| {
///     s.on(&mut q).write(&buf, 0, &input);
///     drop(q);
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
/// Handing a scoped queue to another thread (it is neither `Send` nor
/// `Sync`: its transfers are tied to this scope):
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// # fn main() -> devq::Result<()> {
/// # let dev = devq::Device::open("cpu")?;
/// # let mut q = devq::Queue::new(&dev)?;
/// devq::scope(|s| {
///     send(s.on(&mut q));
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
pub fn scope<'env, F, T>(f: F) -> Result<T>
where
    F: for<'s> FnOnce(&'s Scope<'s, 'env>) -> Result<T>,
{
    scope_with_timeout(Duration::MAX, f)
}

/// [`scope`](fn@crate::scope) with a time limit on the wait at its end.
/// A lent queue whose work has not finished by then has its pending work
/// cancelled, so that nothing touches the borrowed host memory any more:
/// its deferred batches fail with `ECANCELED` (as do the signals they
/// would have set), and the queue carries on empty, as if new.  The scope
/// then returns the `ETIMEDOUT` that names what was pending.  (Work
/// already issued to a device is still waited for: see
/// `devq_queue_destroy(3)`.)
pub fn scope_with_timeout<'env, F, T>(timeout: Duration, f: F) -> Result<T>
where
    F: for<'s> FnOnce(&'s Scope<'s, 'env>) -> Result<T>,
{
    let scope = Scope { queues: RefCell::new(Vec::new()), _s: PhantomData, _env: PhantomData };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&scope)));
    // Whatever f did, its transfers must be over before the borrows end.
    let settled = scope.settle(timeout);
    match r {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(Err(e)) => Err(e),
        Ok(Ok(v)) => settled.map(|_| v),
    }
}

/// Lends queues for host transfers; see [`scope`](fn@crate::scope).
#[derive(Debug)]
pub struct Scope<'s, 'env: 's> {
    queues: RefCell<Vec<*mut Queue>>,
    // Invariant in both, as std::thread::Scope.
    _s: PhantomData<&'s mut &'s ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'s, 'env> Scope<'s, 'env> {
    /// Lends `q` to the scope for its whole length: record on the returned
    /// [`ScopedQueue`]; the scope submits and finishes it at the end.
    pub fn on(&'s self, q: &'s mut Queue) -> ScopedQueue<'s> {
        let q: *mut Queue = q;
        self.queues.borrow_mut().push(q);
        ScopedQueue { q, _s: PhantomData }
    }

    /// Submits every lent queue's open batch, then finishes them all: a
    /// queue may wait on a signal a queue lent after it sets, so no queue
    /// is waited for before every one was submitted.
    fn settle(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now().checked_add(timeout);
        let queues = self.queues.borrow();
        let mut first: Option<Error> = None;
        // The same queue may have been lent twice (one after the other):
        // settle it once.
        let mut seen: Vec<*mut Queue> = Vec::with_capacity(queues.len());
        for &q in queues.iter() {
            if !seen.contains(&q) {
                seen.push(q);
            }
        }
        for &q in &seen {
            // SAFETY: lent for 's, which ends after this; no ScopedQueue can
            // be used any more (they cannot leave the closure).
            let q = unsafe { &mut *q };
            if let Err(e) = q.submit() {
                first.get_or_insert(e);
            }
        }
        for &q in &seen {
            // SAFETY: as above.
            let q = unsafe { &mut *q };
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(Instant::now()));
            let mut f = q.finish(left);
            // Only a timeout leaves work running (finish reports failures
            // once every batch completed).
            if let Err(e) = &f {
                if e.is_timeout() {
                    let why = e.message.clone();
                    f = Err(match q.cancel_pending() {
                        Ok(()) => Error::new(errno::ETIMEDOUT, format!("scope: {}; its pending batches were cancelled", why)),
                        Err(re) => Error::new(errno::ETIMEDOUT, format!("scope: {}; cancelled, and the queue is lost: {}", why, re)),
                    });
                }
            }
            if let Err(e) = f {
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A queue lent to a [`scope`](fn@crate::scope): the [`Queue`] recording calls plus host
/// transfers whose slices stay borrowed until the scope has finished.
#[derive(Debug)]
pub struct ScopedQueue<'s> {
    // One raw pointer, shared with the Scope that finishes the queue.
    q: *mut Queue,
    // Invariant in 's: were it covariant, a ScopedQueue<'s> would shrink to
    // a shorter lifetime and accept slices that die inside the scope.
    _s: PhantomData<&'s mut &'s mut Queue>,
}

impl<'s> ScopedQueue<'s> {
    fn q(&mut self) -> &mut Queue {
        // SAFETY: lent to the scope for 's; only this handle records on it.
        unsafe { &mut *self.q }
    }

    fn q_ref(&self) -> &Queue {
        // SAFETY: as q, shared.
        unsafe { &*self.q }
    }

    /// Copies `src` into `dst` from element `off` when the op executes.
    /// An empty `src` records nothing.
    pub fn write<T: Pod>(&mut self, dst: &Buffer<T>, off: usize, src: &'s [T]) -> &mut Self {
        if src.is_empty() {
            return self;
        }
        let (p, n) = bytes_of(src);
        let q = self.q();
        let off = match elems_to_bytes::<T>(off, "ScopedQueue::write") {
            Ok(o) => o,
            Err(e) => {
                q.fail_here(e.errno, e.message);
                return self;
            }
        };
        // SAFETY: src is borrowed until the scope has finished this queue.
        let rc = unsafe { sys::devq_queue_write(q.raw(), dst.raw(), off, p as *const c_void, n) };
        q.record_rc(rc);
        self
    }

    /// Fills `dst` from `src` at element `off` when the op executes; `dst`
    /// is readable again after the scope.  An empty `dst` records nothing.
    pub fn read<T: Pod>(&mut self, dst: &'s mut [T], src: &Buffer<T>, off: usize) -> &mut Self {
        if dst.is_empty() {
            return self;
        }
        let n = std::mem::size_of_val(dst);
        let p = dst.as_mut_ptr() as *mut c_void;
        let q = self.q();
        let off = match elems_to_bytes::<T>(off, "ScopedQueue::read") {
            Ok(o) => o,
            Err(e) => {
                q.fail_here(e.errno, e.message);
                return self;
            }
        };
        // SAFETY: dst is borrowed mutably until the scope has finished this
        // queue; Pod: any bytes written are valid values.
        let rc = unsafe { sys::devq_queue_read(q.raw(), p, src.raw(), off, n) };
        q.record_rc(rc);
        self
    }

    /// As [`Queue::upload`] (owned: not tied to the scope).
    pub fn upload<T: Pod>(&mut self, dst: &Buffer<T>, off: usize, data: impl Into<Vec<T>>) -> &mut Self {
        self.q().upload(dst, off, data);
        self
    }

    /// As [`Queue::readback`].
    pub fn readback<'a, T: Pod>(&mut self, src: impl Into<crate::BufferSlice<'a, T>>) -> crate::Pending<T> {
        self.q().readback(src)
    }

    pub fn wait(&mut self, s: &Signal, value: u64) -> &mut Self {
        self.q().wait(s, value);
        self
    }
    pub fn signal(&mut self, s: &Signal, value: u64) -> &mut Self {
        self.q().signal(s, value);
        self
    }
    pub fn exec(&mut self, k: &Kernel, args: &[Arg<'_>], launch: Launch) -> &mut Self {
        self.q().exec(k, args, launch);
        self
    }
    pub fn copy<T: Pod>(&mut self, dst: &Buffer<T>, dst_off: usize, src: &Buffer<T>, src_off: usize, n: usize) -> &mut Self {
        self.q().copy(dst, dst_off, src, src_off, n);
        self
    }
    pub fn copy_slice<T: Pod>(&mut self, dst: crate::BufferSlice<'_, T>, src: crate::BufferSlice<'_, T>) -> &mut Self {
        self.q().copy_slice(dst, src);
        self
    }
    pub fn fill<T: Pod>(&mut self, dst: &Buffer<T>, off: usize, n: usize, byte: u8) -> &mut Self {
        self.q().fill(dst, off, n, byte);
        self
    }
    pub fn barrier(&mut self) -> &mut Self {
        self.q().barrier();
        self
    }
    pub fn host_fn<F: FnOnce() + Send + 'static>(&mut self, f: F) -> &mut Self {
        self.q().host_fn(f);
        self
    }
    /// As [`Queue::all_reduce`].
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce<T: crate::Dtype>(
        &mut self,
        ch: &mut crate::Channel,
        dst: &Buffer<T>,
        dst_off: usize,
        src: &Buffer<T>,
        src_off: usize,
        count: usize,
        op: crate::Reduce,
    ) -> &mut Self {
        self.q().all_reduce::<T>(ch, dst, dst_off, src, src_off, count, op);
        self
    }
    /// As [`Queue::all_gather`].
    pub fn all_gather<T: crate::Dtype>(
        &mut self,
        ch: &mut crate::Channel,
        dst: &Buffer<T>,
        dst_off: usize,
        src: &Buffer<T>,
        src_off: usize,
        count: usize,
    ) -> &mut Self {
        self.q().all_gather::<T>(ch, dst, dst_off, src, src_off, count);
        self
    }
    /// As [`Queue::reduce_scatter`].
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_scatter<T: crate::Dtype>(
        &mut self,
        ch: &mut crate::Channel,
        dst: &Buffer<T>,
        dst_off: usize,
        src: &Buffer<T>,
        src_off: usize,
        count: usize,
        op: crate::Reduce,
    ) -> &mut Self {
        self.q().reduce_scatter::<T>(ch, dst, dst_off, src, src_off, count, op);
        self
    }
    /// As [`Queue::broadcast`].
    pub fn broadcast<T: crate::Dtype>(
        &mut self,
        ch: &mut crate::Channel,
        buf: &Buffer<T>,
        off: usize,
        count: usize,
        root: i32,
    ) -> &mut Self {
        self.q().broadcast::<T>(ch, buf, off, count, root);
        self
    }
    /// As [`Queue::send`].
    pub fn send<T: crate::Dtype>(&mut self, ch: &mut crate::Channel, src: &Buffer<T>, off: usize, count: usize, peer: i32) -> &mut Self {
        self.q().send::<T>(ch, src, off, count, peer);
        self
    }
    /// As [`Queue::recv`].
    pub fn recv<T: crate::Dtype>(&mut self, ch: &mut crate::Channel, dst: &Buffer<T>, off: usize, count: usize, peer: i32) -> &mut Self {
        self.q().recv::<T>(ch, dst, off, count, peer);
        self
    }
    /// As [`Queue::submit`]; the scope also submits at its end.
    pub fn submit(&mut self) -> Result<()> {
        self.q().submit()
    }
    /// As [`Queue::finish`].
    pub fn finish(&self, timeout: Duration) -> Result<()> {
        self.q_ref().finish(timeout)
    }
    /// `len` elements allocated in this queue's stream order, as [`Buffer::on_queue`].
    pub fn alloc<T: Pod>(&mut self, len: usize, tag: u32) -> Result<Buffer<T>> {
        Buffer::on_queue(self.q(), len, tag)
    }

    /// As [`Queue::timestamp`].  (There is no `&mut Queue` accessor: a
    /// `mem::swap` through it would carry recorded transfers out of the
    /// scope.)
    pub fn timestamp(&mut self) -> Result<crate::Timestamp> {
        self.q().timestamp()
    }
}
