// SPDX-License-Identifier: MIT
//! Graphs: a queue's builder calls recorded once ([`Queue::capture`]),
//! instantiated ([`Graph::instantiate`]) and submitted many times
//! ([`GraphExec::submit`]), with kernel arguments, buffers and signal
//! values changed between submissions (devq_graph_instantiate(3)).
//!
//! Each recording call of a [`Capture`] returns the op's typed number:
//! an [`ExecOp`] for a kernel launch (what [`GraphExec::set_arg`] takes),
//! a [`ValueOp`] for a wait or signal ([`GraphExec::set_value`]), an
//! [`OpId`] for the rest.  An op of one graph given to another graph's
//! exec is `EINVAL`.
//!
//! Host memory transfers and host functions are not recorded into graphs
//! by this crate: a graph's `devq_queue_write` source and `devq_queue_read`
//! destination are used by every submission, which outlives any borrow.
//! Upload before and read back after a submission in ordinary batches of
//! the same queue ([`Queue::upload`], [`Queue::readback`]): the queue runs
//! its batches in order.
use crate::buffer::{Access, Buffer, BufferSlice};
use crate::device::Device;
use crate::error::{check, errno, Error, Result};
use crate::kernel::{Arg, ArgKind, Kernel, Launch};
use crate::pod::Pod;
use crate::queue::{u64_bytes, Queue};
use crate::signal::Signal;
use devq_sys as sys;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the cpu_kernel!s of every graph leave their failure text: never
/// freed, since a submission may still run after its exec, its graph and
/// the queue that captured it are gone (devq_graph_exec_destroy(3)).
static GRAPH_NOTES: crate::cpu::Notes = std::sync::Mutex::new(None);

/// Tells graphs apart, so that an op of one is refused by another's exec.
static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

/// The number of a recorded op in its graph (the 0-based `op` of the C
/// calls) and the graph it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpId {
    graph: u64,
    index: usize,
}

impl OpId {
    /// The op's number in its capture, as devq_graph_exec_set_arg(3)
    /// counts.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// A kernel launch of a graph: its arguments may be replaced
/// ([`GraphExec::set_arg`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecOp(OpId);

/// A wait or signal op of a graph: its value may be changed and advanced
/// per submission ([`GraphExec::set_value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueOp(OpId);

impl ExecOp {
    pub fn id(&self) -> OpId {
        self.0
    }
}

impl ValueOp {
    pub fn id(&self) -> OpId {
        self.0
    }
}

/// What set_arg must keep of a captured argument: buffer or value, and
/// the buffer's access and element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Buffer { access: Access, elem: u64 },
    Value,
}

impl Shape {
    fn of(a: &Arg<'_>) -> Shape {
        match a.kind {
            ArgKind::Buffer { access, elem, .. } => Shape::Buffer { access, elem },
            ArgKind::Value(_) => Shape::Value,
        }
    }
}

/// A captured launch: whether its kernel is a cpu_kernel! (whose first C
/// argument is the argument table, kept here to rewrite it), and its
/// arguments' shapes.
#[derive(Clone, Debug)]
struct ExecInfo {
    index: usize,
    table: Vec<u64>,
    shapes: Vec<Shape>,
}

/// The recorder [`Queue::capture`] lends its closure: the builder calls
/// of [`Queue`], each returning the op it recorded.  Errors are sticky as
/// in a batch: the first one is what `capture` returns, and no graph is
/// made.
pub struct Capture<'q> {
    q: &'q mut Queue,
    graph: u64,
    next: usize,
    execs: Vec<ExecInfo>,
    open: bool,
}

impl std::fmt::Debug for Capture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Capture(graph {}, {} ops, on {:?})", self.graph, self.next, self.q)
    }
}

impl<'q> Capture<'q> {
    fn op(&mut self) -> OpId {
        let id = OpId { graph: self.graph, index: self.next };
        self.next += 1;
        id
    }

    /// A zero-length op records nothing in C, which would shift the
    /// numbers of the ops after it: refused instead.
    fn nonempty(&mut self, what: &str, n: usize) -> bool {
        if n == 0 {
            let why = format!("{}: 0 elements records no op in a graph; leave the call out", what);
            self.q.fail_here(errno::EINVAL, why);
        }
        n > 0
    }

    /// Later ops of each submission start once `s` reaches `value`
    /// (changed per submission with [`GraphExec::set_value`]).
    pub fn wait(&mut self, s: &Signal, value: u64) -> ValueOp {
        self.q.wait(s, value);
        ValueOp(self.op())
    }

    /// Each submission sets `s` to `value` once its earlier ops are done
    /// (a signal stays failed once a submission failed it).
    pub fn signal(&mut self, s: &Signal, value: u64) -> ValueOp {
        self.q.signal(s, value);
        ValueOp(self.op())
    }

    /// Runs `k` over `launch` with `args` in each submission, as
    /// [`Queue::exec`].
    pub fn exec(&mut self, k: &Kernel, args: &[Arg<'_>], launch: Launch) -> ExecOp {
        let table = self.q.exec_noting(k, args, launch, &GRAPH_NOTES);
        let id = self.op();
        self.execs.push(ExecInfo { index: id.index, table, shapes: args.iter().map(Shape::of).collect() });
        ExecOp(id)
    }

    /// As [`Queue::copy`]; `n == 0` is `EINVAL` here.
    pub fn copy<T: Pod>(&mut self, dst: &Buffer<T>, dst_off: usize, src: &Buffer<T>, src_off: usize, n: usize) -> OpId {
        if self.nonempty("Capture::copy", n) {
            self.q.copy(dst, dst_off, src, src_off, n);
        }
        self.op()
    }

    /// As [`Queue::copy_slice`]; empty slices are `EINVAL` here.
    pub fn copy_slice<T: Pod>(&mut self, dst: BufferSlice<'_, T>, src: BufferSlice<'_, T>) -> OpId {
        if self.nonempty("Capture::copy_slice", dst.len().max(src.len())) {
            self.q.copy_slice(dst, src);
        }
        self.op()
    }

    /// As [`Queue::fill`]; `n == 0` is `EINVAL` here.
    pub fn fill<T: Pod>(&mut self, dst: &Buffer<T>, off: usize, n: usize, byte: u8) -> OpId {
        if self.nonempty("Capture::fill", n) {
            self.q.fill(dst, off, n, byte);
        }
        self.op()
    }

    /// As [`Queue::barrier`].
    pub fn barrier(&mut self) -> OpId {
        self.q.barrier();
        self.op()
    }

    /// The first recording error so far, if any.
    pub fn error(&self) -> Option<&Error> {
        self.q.error()
    }

    /// Ends capture mode: the graph, or the capture's first error.
    fn end(&mut self) -> Result<*mut sys::devq_graph> {
        self.open = false;
        let mut g = ptr::null_mut();
        // SAFETY: live queue in capture mode (begun by Queue::capture).
        let rc = unsafe { sys::devq_queue_end_capture(self.q.raw(), &mut g) };
        let ended = check(rc);
        let crate_err = self.q.take_error();
        match (ended, crate_err) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(e)) => {
                // A check of this crate failed a call libdevq never saw.
                // SAFETY: the graph just made, destroyed once.
                unsafe { sys::devq_graph_destroy(g) };
                Err(Error::new(e.errno, format!("Queue::capture: capture discarded: {}", e.message)))
            }
            (Ok(_), None) => Ok(g),
        }
    }
}

impl Drop for Capture<'_> {
    /// The closure panicked: leave capture mode, dropping the recording.
    fn drop(&mut self) {
        if self.open {
            if let Ok(g) = self.end() {
                // SAFETY: the graph just made, destroyed once.
                unsafe { sys::devq_graph_destroy(g) };
            }
        }
    }
}

impl Queue {
    /// Records the builder calls `f` makes on its [`Capture`] into a
    /// [`Graph`] instead of running them (devq_queue_begin_capture(3)),
    /// and returns it with `f`'s result (typically the ops `f` wants to
    /// change later).  The queue must have nothing recorded and not
    /// submitted (`EBUSY`); a failing recording call makes `capture`
    /// return that error and no graph.
    ///
    /// ```no_run
    /// use devq::cpu::{Args, Group, KernelResult};
    /// use devq::{Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
    /// use std::time::Duration;
    ///
    /// devq::cpu_kernel! {
    ///     /// x = x * s
    ///     fn scale(g: &Group, args: &Args) -> KernelResult {
    ///         let x: &mut [f32] = args.chunk_mut(0)?;
    ///         let s: f32 = args.value(1)?;
    ///         x.iter_mut().for_each(|v| *v *= s);
    ///         let _ = g;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// fn main() -> devq::Result<()> {
    ///     let dev = Device::open("cpu")?;
    ///     let mut q = Queue::new(&dev)?;
    ///     let k = Kernel::cpu(&dev, &scale)?;
    ///     let x = Buffer::<f32>::new(&dev, 1024)?;
    ///     let step = Signal::new(0)?;
    ///     q.upload(&x, 0, vec![1.0f32; 1024]).submit()?;
    ///     // Record once: each op comes back typed.
    ///     let (graph, (launch, done)) = q.capture(|c| {
    ///         let launch = c.exec(&k, &[Arg::chunks(&x), Arg::value(&1.0f32)], Launch::d1(1024, 256));
    ///         let done = c.signal(&step, 1);
    ///         (launch, done)
    ///     })?;
    ///     let mut exec = graph.instantiate()?;
    ///     exec.set_value(done, 1, 1)?;                  // signal 1, 2, 3 ...
    ///     for i in 0..3 {
    ///         let s = 2.0f32 + i as f32;
    ///         exec.set_arg(launch, 1, Arg::value(&s))?; // the next submission's scale
    ///         exec.submit(&mut q)?;                     // returns at once
    ///     }
    ///     step.wait(3, Duration::from_secs(10))?;
    ///     let mut out = q.readback(&x);
    ///     q.submit()?;
    ///     assert!(out.wait(Duration::from_secs(10))?.iter().all(|v| *v == 24.0));
    ///     Ok(())
    /// }
    /// ```
    pub fn capture<R, F>(&mut self, f: F) -> Result<(Graph, R)>
    where
        F: FnOnce(&mut Capture<'_>) -> R,
    {
        if self.has_open_batch() {
            return Err(Error::new(
                errno::EBUSY,
                "Queue::capture: the queue has ops or an error recorded and not submitted; submit them first",
            ));
        }
        // SAFETY: live queue, recorded through &mut self.
        check(unsafe { sys::devq_queue_begin_capture(self.raw()) })?;
        let dev = self.device().clone();
        let graph = NEXT_GRAPH.fetch_add(1, Ordering::Relaxed);
        let mut cap = Capture { q: self, graph, next: 0, execs: Vec::new(), open: true };
        let r = f(&mut cap);
        let raw = cap.end()?;
        let execs = std::mem::take(&mut cap.execs);
        Ok((Graph { raw, id: graph, dev, execs }, r))
    }
}

/// A recording made by [`Queue::capture`]: immutable; make it runnable
/// with [`instantiate`](Self::instantiate).  It holds its own references
/// to the buffers, kernels and signals its ops use (a [`Buffer`] dropped
/// since is freed: instantiating or submitting is then `EINVAL` until
/// [`GraphExec::set_buffer`] rebinds it).  Dropping it leaves its execs
/// valid.
///
/// Host memory transfers and host functions are not recorded into graphs
/// by this crate: a graph's `devq_queue_write` source and
/// `devq_queue_read` destination are used by every submission, long
/// after any borrow could end.  Upload before and read back after a
/// submission in ordinary batches of the same queue ([`Queue::upload`],
/// [`Queue::readback`]): a queue runs its batches in order.
pub struct Graph {
    raw: *mut sys::devq_graph,
    id: u64,
    dev: Device,
    execs: Vec<ExecInfo>,
}

// SAFETY: a graph is immutable once captured; libdevq references count
// atomically, and instantiate only reads it.
unsafe impl Send for Graph {}
unsafe impl Sync for Graph {}

impl Graph {
    /// A runnable copy of the graph (devq_graph_instantiate(3)): its own
    /// parameters, independent of other execs of the same graph.
    /// `EINVAL` when a buffer the graph uses was freed since the capture.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let mut raw = ptr::null_mut();
        // SAFETY: live graph; out slot.
        check(unsafe { sys::devq_graph_instantiate(self.raw, &mut raw) })?;
        Ok(GraphExec { raw, graph: self.id, dev: self.dev.clone(), execs: self.execs.clone() })
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::devq_graph {
        self.raw
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: live graph, destroyed once; its execs stay valid.
        unsafe { sys::devq_graph_destroy(self.raw) }
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({:p}, graph {} on {:?})", self.raw, self.id, self.dev)
    }
}

/// An instantiated [`Graph`]: submitted many times with
/// [`submit`](Self::submit), its parameters changed between submissions.
/// Dropping it is safe with submissions in flight: they finish normally
/// (each holds its own references and copy of the ops).
pub struct GraphExec {
    raw: *mut sys::devq_graph_exec,
    graph: u64,
    dev: Device,
    execs: Vec<ExecInfo>,
}

// SAFETY: an exec is used by one thread at a time, which &mut self
// enforces for every call that uses it.
unsafe impl Send for GraphExec {}
unsafe impl Sync for GraphExec {}

impl GraphExec {
    fn mine(&self, op: OpId, what: &str) -> Result<()> {
        if op.graph == self.graph {
            return Ok(());
        }
        Err(Error::new(errno::EINVAL, format!("{}: op {} was recorded in another graph; pass an op of this exec's graph", what, op.index)))
    }

    /// Submits the exec's ops to `q` as one batch, with the parameters it
    /// has now, and returns at once (devq_graph_submit(3)), like
    /// [`Queue::submit`]: learn the outcome from a signal the graph sets,
    /// from [`Queue::finish`] or from a readback recorded after it.  `q`
    /// may be any queue of the graph's device; it must have nothing
    /// recorded and not submitted (`EBUSY`).  A failure inside a
    /// submission fails the signals it sets and the buffers it writes with
    /// the root cause; the exec is unchanged, and the next submission runs
    /// normally once its inputs are rewritten.
    pub fn submit(&mut self, q: &mut Queue) -> Result<()> {
        if q.has_open_batch() {
            return Err(Error::new(
                errno::EBUSY,
                "GraphExec::submit: the queue has ops or an error recorded and not submitted; submit them first",
            ));
        }
        // SAFETY: live queue (recorded through &mut) and exec (&mut self).
        check(unsafe { sys::devq_graph_submit(q.raw(), self.raw) }).map(drop)
    }

    /// Replaces argument `index` of launch `op` from the next submission
    /// on (devq_graph_exec_set_arg(3)): a value of the captured size, or
    /// a buffer (or slice) with the captured access and element type.
    /// Anything else is `EINVAL`, and nothing changes.
    pub fn set_arg(&mut self, op: ExecOp, index: usize, arg: Arg<'_>) -> Result<()> {
        self.mine(op.0, "GraphExec::set_arg")?;
        let (table, shape) = match self.execs.iter().find(|e| e.index == op.0.index) {
            Some(e) => (e.table.clone(), e.shapes.get(index).copied()),
            None => return Err(Error::new(errno::EINVAL, format!("GraphExec::set_arg: op {} is not a launch", op.0.index))),
        };
        let shape = shape.ok_or_else(|| {
            Error::new(errno::EINVAL, format!("GraphExec::set_arg: launch op {} has no argument {}; count from 0", op.0.index, index))
        })?;
        match (shape, Shape::of(&arg)) {
            (Shape::Buffer { elem, .. }, Shape::Buffer { elem: e2, .. }) if elem != e2 => {
                return Err(Error::new(
                    errno::EINVAL,
                    format!("GraphExec::set_arg: argument {} of op {} was captured with another element type; pass a buffer of that type", index, op.0.index),
                ))
            }
            (Shape::Buffer { .. }, Shape::Value) | (Shape::Value, Shape::Buffer { .. }) => {
                return Err(Error::new(
                    errno::EINVAL,
                    format!("GraphExec::set_arg: argument {} of op {} changes between buffer and value; record a new graph", index, op.0.index),
                ))
            }
            _ => {}
        }
        let rust_abi = !table.is_empty();
        let raw = arg.raw(rust_abi).map_err(|why| Error::new(errno::EINVAL, why.replace("Queue::exec", "GraphExec::set_arg")))?;
        if !rust_abi {
            // SAFETY: live exec; raw points at a live buffer or at value
            // bytes libdevq copies during the call.
            return check(unsafe { sys::devq_graph_exec_set_arg(self.raw, op.0.index, index, &raw) }).map(drop);
        }
        // A cpu_kernel! sees the argument through the table (C argument
        // 0): rewrite its entry first, and put it back if the argument is
        // refused.
        let mut new_table = table.clone();
        let entry = crate::cpu::arg_table(&[arg], &GRAPH_NOTES);
        let at = entry.len() - 4;
        let words = 3 + 4 * index;
        new_table[words..words + 4].copy_from_slice(&entry[at..]);
        self.set_table(op.0.index, &new_table)?;
        // SAFETY: as above; the C index is one past the table.
        let r = check(unsafe { sys::devq_graph_exec_set_arg(self.raw, op.0.index, index + 1, &raw) });
        match r {
            Ok(_) => {
                if let Some(e) = self.execs.iter_mut().find(|e| e.index == op.0.index) {
                    e.table = new_table;
                }
                Ok(())
            }
            Err(e) => {
                let _ = self.set_table(op.0.index, &table);
                Err(e)
            }
        }
    }

    fn set_table(&mut self, op: usize, table: &[u64]) -> Result<()> {
        let raw = Arg::bytes(u64_bytes(table)).raw(true).map_err(|why| Error::new(errno::EINVAL, why))?;
        // SAFETY: live exec; the table bytes are copied during the call.
        check(unsafe { sys::devq_graph_exec_set_arg(self.raw, op, 0, &raw) }).map(drop)
    }

    /// Uses `new` wherever the graph used `old` (kernel arguments, copies,
    /// fills) from the next submission on (devq_graph_exec_set_buffer(3)):
    /// the same element type, at least as many elements, the same device;
    /// the captured ranges stay.  `EINVAL` otherwise, and nothing changes.
    pub fn set_buffer<T: Pod>(&mut self, old: &Buffer<T>, new: &Buffer<T>) -> Result<()> {
        // SAFETY: live exec and buffers.
        check(unsafe { sys::devq_graph_exec_set_buffer(self.raw, old.raw(), new.raw()) }).map(drop)
    }

    /// The value wait or signal `op` waits for or sets in the next
    /// submission, and what each later submission adds to it
    /// (devq_graph_exec_set_value(3); `step` 0 keeps it).
    pub fn set_value(&mut self, op: ValueOp, value: u64, step: i64) -> Result<()> {
        self.mine(op.0, "GraphExec::set_value")?;
        // SAFETY: live exec.
        check(unsafe { sys::devq_graph_exec_set_value(self.raw, op.0.index, value, step) }).map(drop)
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&mut self) -> *mut sys::devq_graph_exec {
        self.raw
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // SAFETY: live exec, destroyed once; submissions in flight keep
        // their own references and finish normally, and the notes their
        // kernels write to are static.
        unsafe { sys::devq_graph_exec_destroy(self.raw) }
    }
}

impl std::fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GraphExec({:p}, graph {} on {:?})", self.raw, self.graph, self.dev)
    }
}
