// SPDX-License-Identifier: MIT
//! Safe Rust API for devq: devices, timeline signals, command queues,
//! stream-ordered device memory and automatic cross-stream ordering.
//!
//! The raw C API is [`sys`] (the `devq-sys` crate); this crate wraps it in
//! RAII types with `Result<T, devq::Error>`, where [`Error`] carries the
//! errno and the `devq_errmsg()` line captured at the call that failed.
//! Ordinary work needs no `unsafe`, kernels included.  Typed buffers,
//! owned transfers and an async wait (with an executor written in the
//! example itself: no runtime needed):
//!
//! ```no_run
//! use devq::cpu::{Args, Group, KernelResult};
//! use devq::{Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
//! use std::future::Future;
//! use std::sync::Arc;
//! use std::task::{Context, Poll, Wake};
//!
//! devq::cpu_kernel! {
//!     /// y = a*x + y, on plain slices: x shared, this work-group's chunk of y.
//!     fn saxpy(g: &Group, args: &Args) -> KernelResult {
//!         let x: &[f32] = args.slice(0)?;
//!         let y: &mut [f32] = args.chunk_mut(1)?;
//!         let a: f32 = args.value(2)?;
//!         for (y, x) in y.iter_mut().zip(&x[g.items(0)]) {
//!             *y += a * x;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! fn main() -> devq::Result<()> {
//!     let dev = Device::open("cpu")?;
//!     let (mut compute, mut copy) = (Queue::new(&dev)?, Queue::new(&dev)?);
//!     let x = Buffer::<f32>::new(&dev, 1024)?;         // lengths in elements
//!     let y = Buffer::<f32>::zeroed(&dev, 1024)?;      // no stale bytes
//!     let k = Kernel::cpu(&dev, &saxpy)?;
//!     let done = Signal::new(0)?;
//!     let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
//!     compute
//!         .upload(&x, 0, data)                         // the queue owns the Vec now
//!         .exec(&k, &[Arg::read(&x), Arg::chunks(&y), Arg::value(&3.0f32)], Launch::d1(1024, 256))
//!         .signal(&done, 1)
//!         .submit()?;                                  // returns at once
//!     // Ordered on the device by the signal; the readback is a future.
//!     let tail = copy.wait(&done, 1).readback(y.slice(1000..));
//!     copy.submit()?;
//!     let tail: Vec<f32> = block_on(tail)?;            // or tail.wait(timeout)
//!     assert!(tail.iter().enumerate().all(|(i, v)| *v == 3.0 * (1000 + i) as f32));
//!     Ok(())
//! }
//!
//! /// An executor in a dozen lines: devq wakes the task from its notifier
//! /// thread when the signal behind the future is reached.
//! fn block_on<F: Future>(f: F) -> F::Output {
//!     struct Unpark(std::thread::Thread);
//!     impl Wake for Unpark {
//!         fn wake(self: Arc<Self>) {
//!             self.0.unpark();
//!         }
//!     }
//!     let waker = Arc::new(Unpark(std::thread::current())).into();
//!     let mut f = Box::pin(f);
//!     loop {
//!         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
//!             return v;
//!         }
//!         std::thread::park();
//!     }
//! }
//! ```
//!
//! # Typed buffers
//!
//! [`Buffer<T>`](Buffer) holds elements of a [`Pod`] type (`Buffer` alone
//! is `Buffer<u8>`, bytes).  Every length, offset and count of the typed
//! API is in elements of `T`; only [`Buffer::size`] counts bytes.
//! [`Buffer::slice`] gives a [`BufferSlice`], usable as a kernel argument
//! ([`Arg::read`] and friends take a buffer or a slice) and in
//! [`Queue::copy_slice`].  Uploads, copies and readbacks check `T` at
//! compile time; a [`cpu_kernel!`] checks at run time that it views a
//! buffer argument as the `T` it was created with (bytes may be viewed as
//! anything).  Zero-length transfers, copies and fills are no-ops.
//!
//! # Owned, non-blocking transfers
//!
//! [`Queue::upload`] takes a `Vec<T>` or `Box<[T]>` and keeps it until the
//! batch is done; [`Queue::readback`] returns a [`Pending`] that yields a
//! new `Vec<T>` once the batch is done (or its failure, with the root
//! cause).  Neither borrows anything, so a loop records and submits
//! iteration n+1 while iteration n runs, as wgpu's `map_async` or cudarc's
//! async copies allow.  Borrowed host slices go through a
//! [`scope`](fn@crate::scope) instead ([`ScopedQueue::write`],
//! [`ScopedQueue::read`]), which finishes every lent queue before the
//! borrows end.
//!
//! # Async
//!
//! [`Signal::reached`] and [`Pending`] are [`std::future::Future`]s woken
//! by a `devq_signal_notify` callback: any executor drives them, and none
//! is required (the example above carries its own).  Dropping a future
//! cancels its callback.
//!
//! # Kernels
//!
//! [`cpu_kernel!`] kernels read their arguments checked against the
//! exec's real sizes, ranges, element types and access modes.
//! [`cpu::Args::slice`] gives a plain `&[T]` of an argument passed
//! [`Arg::read`] that nothing in the exec writes, and
//! [`cpu::Args::chunk_mut`] this work-group's disjoint `&mut [T]` of an
//! argument passed [`Arg::chunks`]: loops over them vectorise (`make
//! rust-bench` compares SAXPY with the same loop in C).  Other arguments
//! are [`cpu::View`]s of relaxed atomics.  Nothing a kernel does unwinds
//! into C: a panic fails the exec with `EFAULT` (its text is appended to
//! [`Queue::finish`]'s error), a [`cpu::KernelError`] with its errno
//! (`EIO` when it is not one).  The same holds for every path from C into
//! this crate: host functions, notify callbacks, wakers.
//!
//! # Graphs
//!
//! [`Queue::capture`] records a closure's builder calls (kernel launches,
//! copies, fills, waits, signals, barriers) into a [`Graph`] once; each
//! call returns its op, typed ([`ExecOp`] for a launch, [`ValueOp`] for a
//! wait or signal).  [`Graph::instantiate`] makes a [`GraphExec`], which
//! [`GraphExec::submit`] hands to any queue of the device as one batch and
//! returns at once; between submissions [`GraphExec::set_arg`],
//! [`GraphExec::set_buffer`] and [`GraphExec::set_value`] change what the
//! next one runs.  Uploads and readbacks go in ordinary batches around
//! the submissions.
//!
//! # Deadlocks
//!
//! A [`Queue::host_fn`] closure runs on the host thread that executes the
//! queue's work, and later ops wait for it; a [`Signal::notify`] callback
//! (and so every future's waker) runs on libdevq's single notifier thread.
//! A closure that blocks on work ordered behind it never returns, so
//! inside either every blocking wait of this crate ([`Signal::wait`],
//! [`Signal::wait_many`], [`Queue::finish`], [`Pending::wait`]) with a
//! non-zero timeout fails with `EDEADLK` at once; polls (a zero timeout)
//! are allowed.  Send results to another thread (a channel, a future)
//! instead.  What the crate cannot see: a closure that blocks on something
//! else (a lock, a channel) that only later work releases.
//!
//! # Linking
//!
//! `devq-sys` finds libdevq with `pkg-config devq`: set `PKG_CONFIG_PATH` to
//! an installed prefix's `lib/pkgconfig` or to a devq build folder (its
//! `devq-uninstalled.pc` names the fresh library).  That is all: a
//! [`cpu_kernel!`] kernel is handed to libdevq by pointer
//! (`devq_kernel_load_fn`), not found by name, so it may be defined in
//! any crate or module and the final binary needs no link flags (no
//! `-Wl,--export-dynamic`, no build.rs).
//!
//! # Threads
//!
//! [`Device`], [`Signal`], [`Buffer`], [`Kernel`], [`Timestamp`],
//! [`Resource`], [`Notify`] and [`Queue`] are `Send + Sync` (libdevq is
//! thread-safe there).  [`Queue`] records through `&mut self`, one
//! recorder at a time as libdevq requires, and [`Queue::finish`] takes
//! `&self`: several threads may wait at once.  [`Graph`] and
//! [`GraphExec`] are `Send + Sync` too: a graph is immutable (several
//! threads may instantiate it), and every call that uses an exec takes
//! `&mut self`, one thread at a time as libdevq requires.
//!
//! # Lifetimes
//!
//! libdevq references every buffer, kernel and signal a batch uses, so
//! those may be dropped as soon as the work is recorded ([`Buffer`]'s drop
//! is a stream-ordered free).  Host memory is different: `devq_queue_write`
//! and `devq_queue_read` use the host pointer when the op executes, so
//! either the queue owns it ([`Queue::upload`], [`Queue::readback`]) or
//! [`ScopedQueue::write`] and [`ScopedQueue::read`] borrow their slices for
//! a [`scope`](fn@crate::scope), which submits every lent queue and then
//! returns only after all their work finished ([`scope_with_timeout`]
//! bounds that wait by cancelling what is still pending).
//!
//! # Every C function and its counterpart
//!
//! | C (`devq.h`, `devq_resource.h`) | here |
//! |---|---|
//! | `devq_errmsg` | captured into [`Error::message`] by every failing call |
//! | `devq_version` | [`version`] |
//! | `devq_device_open`, `devq_device_close` | [`Device::open`], [`Device::open_default`]; drop of the last clone |
//! | `devq_device_info_get` | [`Device::info`] |
//! | `devq_device_synchronize` | [`Device::synchronize`] |
//! | `devq_backends_report` | [`backends_report`] |
//! | `devq_signal_create`, `devq_signal_destroy` | [`Signal::new`]; drop |
//! | `devq_signal_value`, `devq_signal_set`, `devq_signal_fail`, `devq_signal_status`, `devq_signal_wait` | [`Signal::value`], [`Signal::set`], [`Signal::fail`], [`Signal::status`], [`Signal::wait`] |
//! | `devq_signal_wait_many` | [`Signal::wait_many`] |
//! | `devq_signal_notify` | [`Signal::notify`] (a closure); [`Signal::reached`] (a future) |
//! | `devq_notify_cancel`, `devq_notify_release` | [`Notify::cancel`]; drop of [`Notify`] |
//! | `devq_signal_wait_fd` | [`Signal::wait_fd`] (an `OwnedFd`) |
//! | `devq_signal_create_shared`, `devq_signal_export_fd`, `devq_signal_import_fd` | [`Signal::new_shared`], [`Signal::export_fd`], [`Signal::import_fd`] |
//! | `devq_signal_add_producer`, `devq_signal_remove_producer` | [`Signal::add_producer`], [`Signal::remove_producer`] |
//! | `devq_buffer_alloc` | [`Buffer::new`], [`Buffer::with_tag`], [`Buffer::zeroed`] (synchronous), [`Buffer::on_queue`], [`Buffer::zeroed_on`], [`ScopedQueue::alloc`]; lengths in elements of `T` |
//! | `devq_buffer_free` | drop of [`Buffer`] (on its alloc queue), [`Buffer::free`], [`Buffer::free_on`] |
//! | `devq_buffer_status` | [`Buffer::status`] |
//! | `devq_signal_set_name`, `devq_queue_set_name`, `devq_buffer_set_name`, `devq_kernel_set_name` | [`Signal::set_name`], [`Queue::set_name`], [`Buffer::set_name`], [`Kernel::set_name`] |
//! | `devq_buffer_size`, `devq_buffer_device_ptr`, `devq_buffer_host_ptr` | [`Buffer::size`], [`Buffer::device_ptr`], [`Buffer::host_ptr`] (raw pointers: using them is up to `unsafe` code) |
//! | `devq_mem_stats_get`, `devq_mem_reap` | [`Device::mem_stats`], [`Device::mem_reap`] |
//! | `devq_kernel_load` | [`Kernel::from_process`], [`Kernel::from_image`] (`unsafe`: foreign code runs with whatever arguments an exec passes) |
//! | `devq_kernel_load_fn` | [`Kernel::cpu`] (Rust kernels, safe: the [`cpu_kernel!`] entry by pointer) |
//! | `devq_kernel_destroy` | drop of [`Kernel`] |
//! | `devq_queue_create`, `devq_queue_destroy` | [`Queue::new`], [`Queue::with_kind`]; drop |
//! | `devq_queue_wait`, `devq_queue_signal`, `devq_queue_exec`, `devq_queue_copy`, `devq_queue_fill`, `devq_queue_barrier`, `devq_queue_host_fn` | the [`Queue`] builder methods (also on [`ScopedQueue`]); [`Queue::copy_slice`] |
//! | `devq_queue_write`, `devq_queue_read` | owned: [`Queue::upload`], [`Queue::readback`] (a [`Pending`]); borrowed: [`ScopedQueue::write`], [`ScopedQueue::read`], whose slices a [`scope`](fn@crate::scope) keeps alive until the batch is done |
//! | `devq_queue_submit`, `devq_queue_finish` | [`Queue::submit`], [`Queue::finish`] |
//! | `devq_barrier` | [`barrier`] |
//! | `devq_queue_timestamp`, `devq_timestamp_elapsed`, `devq_timestamp_destroy` | [`Queue::timestamp`], [`Timestamp::elapsed_until`]; drop |
//! | `devq_stats_get` | [`Device::stats`] |
//! | `devq_resource_direct`, `devq_resource_pool`, `devq_resource_native` | [`Resource::direct`], [`Resource::pool`], [`Resource::native`] |
//! | `devq_resource_budget`, `devq_resource_stats`, `devq_resource_logging`, `devq_resource_guard` | [`Resource::budget`], [`Resource::stats`], [`Resource::logging`], [`Resource::guard`] |
//! | `devq_resource_destroy` | drop of [`Resource`] |
//! | `devq_device_set_resource` | [`Resource::install`] |
//! | `devq_device_resource` | [`device_resource`] (`unsafe`: the reference dies at the next install, which another clone of the device on another thread may do; Rust cannot tie that) |
//! | `devq_resource_name`, `devq_resource_inner`, `devq_resource_bytes_outstanding`, `devq_resource_supports_use_tracking`, `devq_resource_reap`, `devq_resource_trim`, `devq_resource_stats_get`, `devq_resource_usage_by_tag`, `devq_resource_usage_by_stream` | [`ResourceRef`] methods |
//! | `devq_channel_create`, `devq_channel_id`, `devq_channel_destroy` | [`Channel::world`] (desc NULL), [`Channel::with_id`], [`Channel::from_desc`], [`Channel::id`]; drop |
//! | `devq_channel_split`, `devq_channel_rank`, `devq_channel_size`, `devq_channel_set_timeout` | [`Channel::split`], [`Channel::rank`], [`Channel::size`], [`Channel::set_timeout`] |
//! | `devq_queue_all_reduce`, `devq_queue_all_gather`, `devq_queue_reduce_scatter`, `devq_queue_broadcast`, `devq_queue_send`, `devq_queue_recv` | [`Queue::all_reduce`], [`Queue::all_gather`], [`Queue::reduce_scatter`], [`Queue::broadcast`], [`Queue::send`], [`Queue::recv`] (also on [`ScopedQueue`]), generic over [`Dtype`]: offsets and counts in elements; the channel is taken `&mut`, so one thread records on it at a time, in program order |
//! | `devq_queue_begin_capture`, `devq_queue_end_capture`, `devq_graph_destroy` | [`Queue::capture`] (a closure recording on a [`Capture`], whose calls return typed [`ExecOp`], [`ValueOp`], [`OpId`]); drop of [`Graph`]; host transfers and host functions are not captured (see [`Graph`]) |
//! | `devq_graph_instantiate`, `devq_graph_submit`, `devq_graph_exec_destroy` | [`Graph::instantiate`], [`GraphExec::submit`] (non-blocking, like [`Queue::submit`]); drop of [`GraphExec`], safe with submissions in flight |
//! | `devq_graph_exec_set_arg`, `devq_graph_exec_set_buffer`, `devq_graph_exec_set_value` | [`GraphExec::set_arg`] (an [`Arg`] of the captured kind and element type), [`GraphExec::set_buffer`] (same `T`), [`GraphExec::set_value`] |
//! | `devq_channel_create_from_handle` | not wrapped: its handle is an engine's (for MPI an `MPI_Comm` inside a `struct devq_mpi_handle`, filled by the C header `devq_mpi.h`), and this crate links no MPI; use `devq_sys` with your MPI crate's communicator |
//! | `devq_resource_create`, `devq_resource_state` | not wrapped: writing an allocator means handing raw device memory to libdevq through a C vtable; use `devq_sys` (a safe trait would still need `unsafe` for every entry) |
//! | `devq_resource_allocate`, `devq_resource_deallocate`, `devq_resource_prepare_use`, `devq_resource_finish_use`, `devq_stream_ref_id` | not wrapped: raw memory and stream handles for resource authors, whose stream refs exist only inside resource callbacks; [`Buffer`] is the safe allocation path; use `devq_sys` |
//!
//! `tests/coverage.rs` fails when a function of `devq-sys` is missing from
//! this table.
#![warn(missing_debug_implementations)]

pub use devq_sys as sys;

mod buffer;
mod channel;
pub mod cpu;
mod device;
mod error;
mod graph;
mod kernel;
mod pod;
mod queue;
mod resource;
mod scope;
mod signal;
mod timestamp;

pub use buffer::{Access, Buffer, BufferSlice};
pub use channel::{Bf16, Channel, Dtype, Reduce, F16};
pub use device::{backends_report, version, BackendReport, Device, DeviceInfo, MemStats, Stats};
pub use error::{errno, Error, Result};
pub use graph::{Capture, ExecOp, Graph, GraphExec, OpId, ValueOp};
pub use kernel::{Arg, Kernel, Launch};
pub use pod::Pod;
pub use queue::{barrier, Pending, Queue, QueueKind};
pub use resource::{device_resource, MemUsage, Resource, ResourceRef};
pub use scope::{scope, scope_with_timeout, Scope, ScopedQueue};
pub use signal::{Notify, Signal, SignalFuture, WaitMode};
pub use timestamp::Timestamp;

/// `DEVQ_CAP_*` bits of [`DeviceInfo::caps`].
pub mod caps {
    pub use devq_sys::{
        DEVQ_CAP_ASYNC_ALLOC as ASYNC_ALLOC, DEVQ_CAP_CHANNELS as CHANNELS, DEVQ_CAP_COPY_ENGINE as COPY_ENGINE, DEVQ_CAP_GRAPH_NATIVE as GRAPH_NATIVE, DEVQ_CAP_HOST_VISIBLE as HOST_VISIBLE,
        DEVQ_CAP_KERNELS as KERNELS, DEVQ_CAP_KERNEL_CHECK as KERNEL_CHECK, DEVQ_CAP_PRIORITIES as PRIORITIES, DEVQ_CAP_SKIP_ON_ERROR as SKIP_ON_ERROR,
        DEVQ_CAP_SOFTWARE as SOFTWARE,
        DEVQ_CAP_TIMING as TIMING, DEVQ_CAP_WAIT_VALUE as WAIT_VALUE, DEVQ_CAP_WRITE_VALUE as WRITE_VALUE,
    };
}
