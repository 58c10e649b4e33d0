// SPDX-License-Identifier: MIT
//! Safe Rust API for devq: devices, timeline signals, command queues,
//! stream-ordered device memory and automatic cross-stream ordering.
//!
//! The raw C API is [`sys`] (the `devq-sys` crate); this crate wraps it in
//! RAII types with `Result<T, devq::Error>`, where [`Error`] carries the
//! errno and the `devq_errmsg()` line captured at the call that failed.
//! Ordinary work needs no `unsafe`, kernels included:
//!
//! ```no_run
//! use devq::{cpu::{Args, Group, KernelResult}, Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
//! use std::time::Duration;
//!
//! devq::cpu_kernel! {
//!     fn scale(g: &Group, args: &Args) -> KernelResult {
//!         let x = args.buffer::<f32>(0)?;
//!         let factor: f32 = args.value(1)?;
//!         for i in g.items(0) {
//!             x.set(i, x.get(i) * factor);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! fn main() -> devq::Result<()> {
//!     let dev = Device::open("cpu")?;
//!     let (mut compute, mut copy) = (Queue::new(&dev)?, Queue::new(&dev)?);
//!     let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
//!     let mut out = vec![0f32; 1024];
//!     let buf = Buffer::new(&dev, 4 * 1024)?;
//!     let k = Kernel::cpu(&dev, &scale)?;
//!     let done = Signal::new(0)?;
//!     devq::scope(|s| {
//!         s.on(&mut compute)
//!             .write(&buf, 0, &data)
//!             .exec(&k, &[Arg::read_write(&buf), Arg::value(&3.0f32)], Launch::d1(1024, 256))
//!             .signal(&done, 1)
//!             .submit()?;
//!         // Ordered on the device by the signal: no host round trip.
//!         s.on(&mut copy).wait(&done, 1).read(&mut out, &buf, 0).submit()
//!     })?; // returns once both queues finished: `out` is readable again
//!     assert_eq!(out[10], 30.0);
//!     Ok(())
//! }
//! ```
//!
//! # Linking
//!
//! `devq-sys` finds libdevq with `pkg-config devq`: set `PKG_CONFIG_PATH` to
//! an installed prefix's `lib/pkgconfig` or to a devq build folder (its
//! `devq-uninstalled.pc` names the fresh library).  A program with
//! [`cpu_kernel!`] kernels must export its symbols so the cpu backend finds
//! them, as C programs link with `-rdynamic`: put
//! `println!("cargo:rustc-link-arg=-Wl,--export-dynamic");` in its build.rs.
//!
//! # Threads
//!
//! [`Device`], [`Signal`], [`Buffer`], [`Kernel`], [`Timestamp`],
//! [`Resource`] and [`Notify`] are `Send + Sync` (libdevq is thread-safe
//! there).  [`Queue`] is `Send` but not `Sync` and records through
//! `&mut self`: one recorder at a time, as libdevq requires.
//!
//! # Lifetimes
//!
//! libdevq references every buffer, kernel and signal a batch uses, so
//! those may be dropped as soon as the work is recorded ([`Buffer`]'s drop
//! is a stream-ordered free).  Host memory is different: `devq_queue_write`
//! and `devq_queue_read` use the host pointer when the op executes, so
//! [`ScopedQueue::write`] and [`ScopedQueue::read`] borrow their slices for
//! a [`scope`](fn@crate::scope), which returns only after the work finished
//! ([`scope_with_timeout`] bounds that wait by cancelling what is still
//! pending).
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
//! | `devq_signal_notify` | [`Signal::notify`] (a closure) |
//! | `devq_notify_cancel`, `devq_notify_release` | [`Notify::cancel`]; drop of [`Notify`] |
//! | `devq_signal_wait_fd` | [`Signal::wait_fd`] (an `OwnedFd`) |
//! | `devq_signal_create_shared`, `devq_signal_export_fd`, `devq_signal_import_fd` | [`Signal::new_shared`], [`Signal::export_fd`], [`Signal::import_fd`] |
//! | `devq_buffer_alloc` | [`Buffer::new`], [`Buffer::with_tag`] (synchronous), [`Buffer::on_queue`], [`ScopedQueue::alloc`] |
//! | `devq_buffer_free` | drop of [`Buffer`] (on its alloc queue), [`Buffer::free`], [`Buffer::free_on`] |
//! | `devq_buffer_status` | [`Buffer::status`] |
//! | `devq_signal_set_name`, `devq_queue_set_name`, `devq_buffer_set_name`, `devq_kernel_set_name` | [`Signal::set_name`], [`Queue::set_name`], [`Buffer::set_name`], [`Kernel::set_name`] |
//! | `devq_buffer_size`, `devq_buffer_device_ptr`, `devq_buffer_host_ptr` | [`Buffer::size`], [`Buffer::device_ptr`], [`Buffer::host_ptr`] (raw pointers: using them is up to `unsafe` code) |
//! | `devq_mem_stats_get`, `devq_mem_reap` | [`Device::mem_stats`], [`Device::mem_reap`] |
//! | `devq_kernel_load` | [`Kernel::cpu`] (Rust kernels, safe); [`Kernel::from_process`], [`Kernel::from_image`] (`unsafe`: foreign code runs with whatever arguments an exec passes) |
//! | `devq_kernel_destroy` | drop of [`Kernel`] |
//! | `devq_queue_create`, `devq_queue_destroy` | [`Queue::new`], [`Queue::with_kind`]; drop |
//! | `devq_queue_wait`, `devq_queue_signal`, `devq_queue_exec`, `devq_queue_copy`, `devq_queue_fill`, `devq_queue_barrier`, `devq_queue_host_fn` | the [`Queue`] builder methods (also on [`ScopedQueue`]) |
//! | `devq_queue_write`, `devq_queue_read` | [`ScopedQueue::write`], [`ScopedQueue::read`] only: the host slice must outlive the batch, which a [`scope`](fn@crate::scope) guarantees |
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
mod kernel;
mod pod;
mod queue;
mod resource;
mod scope;
mod signal;
mod timestamp;

pub use buffer::{Access, Buffer};
pub use channel::{Bf16, Channel, Dtype, Reduce, F16};
pub use device::{backends_report, version, BackendReport, Device, DeviceInfo, MemStats, Stats};
pub use error::{errno, Error, Result};
pub use kernel::{Arg, Kernel, Launch};
pub use pod::Pod;
pub use queue::{barrier, Queue, QueueKind};
pub use resource::{device_resource, MemUsage, Resource, ResourceRef};
pub use scope::{scope, scope_with_timeout, Scope, ScopedQueue};
pub use signal::{Notify, Signal, WaitMode};
pub use timestamp::Timestamp;

/// `DEVQ_CAP_*` bits of [`DeviceInfo::caps`].
pub mod caps {
    pub use devq_sys::{
        DEVQ_CAP_ASYNC_ALLOC as ASYNC_ALLOC, DEVQ_CAP_CHANNELS as CHANNELS, DEVQ_CAP_COPY_ENGINE as COPY_ENGINE, DEVQ_CAP_HOST_VISIBLE as HOST_VISIBLE,
        DEVQ_CAP_KERNELS as KERNELS, DEVQ_CAP_PRIORITIES as PRIORITIES, DEVQ_CAP_SKIP_ON_ERROR as SKIP_ON_ERROR,
        DEVQ_CAP_SOFTWARE as SOFTWARE,
        DEVQ_CAP_TIMING as TIMING, DEVQ_CAP_WAIT_VALUE as WAIT_VALUE, DEVQ_CAP_WRITE_VALUE as WRITE_VALUE,
    };
}
