// SPDX-License-Identifier: MIT
//! Raw declarations of libdevq's public C API: all of `<devq/devq.h>`,
//! `<devq/devq_resource.h>` and `<devq/devq_cpu.h>` (the plugin ABI, `<devq/devq_plugin.h>`, is for
//! backends and is not here).  Written by hand, one item per C item and in
//! the header's order; `tests/drift.rs` parses the headers and fails when a
//! function, struct field, enum value or constant is missing here or
//! declared differently.  Use the `devq` crate for a safe API.
//!
//! Linking: `build.rs` runs `pkg-config devq`; point `PKG_CONFIG_PATH` at an
//! installed prefix's `lib/pkgconfig` or at a devq build folder.
//!
//! C enums are declared the way bindgen's "consts" style does: a type alias
//! plus one constant per value, so a value the library adds later can never
//! be an invalid Rust enum.
#![allow(non_camel_case_types)]

// std::os::raw rather than core::ffi: core::ffi::c_char is Rust 1.64,
// and Debian 12 has 1.63.
pub use std::os::raw::{c_char, c_int, c_uint, c_void};

/// Declares an opaque C handle type: only ever used behind a pointer.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            // Not Send, not Sync, not Unpin: the safe crate decides.
            _marker: std::marker::PhantomData<(*mut u8, std::marker::PhantomPinned)>,
        }
    )*};
}

pub const DEVQ_VERSION_MAJOR: u32 = 0;
pub const DEVQ_VERSION_MINOR: u32 = 1;
pub const DEVQ_VERSION_PATCH: u32 = 0;

pub const DEVQ_TIMEOUT_INFINITE: u64 = u64::MAX;
/// Longest name `devq_*_set_name` takes, in bytes (devq(7) NAMES).
pub const DEVQ_NAME_MAX: u32 = 63;

opaque!(devq_device, devq_queue, devq_signal, devq_buffer, devq_kernel, devq_notify);

// ---- devices ----
pub const DEVQ_CAP_KERNELS: u64 = 1 << 0;
pub const DEVQ_CAP_TIMING: u64 = 1 << 1;
pub const DEVQ_CAP_ASYNC_ALLOC: u64 = 1 << 2;
pub const DEVQ_CAP_WAIT_VALUE: u64 = 1 << 3;
pub const DEVQ_CAP_WRITE_VALUE: u64 = 1 << 4;
pub const DEVQ_CAP_HOST_VISIBLE: u64 = 1 << 5;
pub const DEVQ_CAP_COPY_ENGINE: u64 = 1 << 6;
pub const DEVQ_CAP_PRIORITIES: u64 = 1 << 7;
pub const DEVQ_CAP_SKIP_ON_ERROR: u64 = 1 << 8;
pub const DEVQ_CAP_SOFTWARE: u64 = 1 << 9;
pub const DEVQ_CAP_CHANNELS: u64 = 1 << 10;
pub const DEVQ_CAP_KERNEL_CHECK: u64 = 1 << 11;
pub const DEVQ_CAP_GRAPH_NATIVE: u64 = 1 << 12;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct devq_device_info {
    pub backend: [c_char; 16],
    pub ordinal: c_int,
    pub name: [c_char; 128],
    pub total_memory: u64,
    pub caps: u64,
    pub compute_units: u32,
}

// ---- backends ----
#[repr(C)]
#[derive(Clone, Copy)]
pub struct devq_backend_report {
    pub name: [c_char; 16],
    pub path: [c_char; 256],
    pub abi_version: u32,
    pub status: c_int,
    pub devices: u32,
    pub reason: [c_char; 256],
}

// ---- timeline signals ----
pub type devq_wait_mode = c_uint;
pub const DEVQ_WAIT_ALL: devq_wait_mode = 0;
pub const DEVQ_WAIT_ANY: devq_wait_mode = 1;

pub type devq_notify_fn = Option<unsafe extern "C" fn(arg: *mut c_void, status: c_int)>;

// ---- memory ----
pub type devq_access = c_uint;
pub const DEVQ_READ: devq_access = 1;
pub const DEVQ_WRITE: devq_access = 2;
pub const DEVQ_READ_WRITE: devq_access = 3;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct devq_mem_stats {
    pub bytes_outstanding: u64,
    pub bytes_peak: u64,
    pub bytes_reserved: u64,
    pub allocations: u64,
    pub frees: u64,
    pub pending_frees: u64,
}

// ---- kernels ----
#[repr(C)]
#[derive(Clone, Copy)]
pub struct devq_arg {
    pub buf: *mut devq_buffer,
    pub access: devq_access,
    pub value: *const c_void,
    pub size: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct devq_launch {
    pub global: [u32; 3],
    pub local: [u32; 3],
    pub shared_bytes: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct devq_cpu_group {
    pub group_id: [u32; 3],
    pub local_size: [u32; 3],
    pub global_size: [u32; 3],
    pub num_groups: [u32; 3],
}

pub type devq_cpu_kernel_fn =
    Option<unsafe extern "C" fn(args: *const *mut c_void, g: *const devq_cpu_group) -> c_int>;

// ---- <devq/devq_cpu.h>: declared cpu kernels ----
/// A buffer parameter in a [`devq_cpu_signature`]'s list.
pub const DEVQ_CPU_BUFFER: u32 = 0;
pub const DEVQ_CPU_SIGNATURE_MAGIC: u32 = 0x4451_5331;

/// A cpu kernel's declared parameters (`DEVQ_CPU_KERNEL_SIGNATURE`), for
/// [`devq_kernel_load_fn`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct devq_cpu_signature {
    pub magic: u32,
    pub nparams: u32,
    pub params: *const u32,
    pub r#fn: devq_cpu_kernel_fn,
}

// ---- queues ----
pub type devq_queue_kind = c_uint;
pub const DEVQ_QUEUE_COMPUTE: devq_queue_kind = 0;
pub const DEVQ_QUEUE_COPY: devq_queue_kind = 1;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct devq_queue_desc {
    pub kind: devq_queue_kind,
    pub priority: c_int,
}

// ---- timing ----
opaque!(devq_timestamp);

// ---- observability ----
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct devq_stats {
    pub batches_submitted: u64,
    pub batches_completed: u64,
    pub batches_deferred: u64,
    pub waits_inserted: u64,
    pub waits_elided: u64,
    pub events_in_use: u64,
    pub events_pooled: u64,
    pub batches_failed: u64,
    pub wait_cycles: u64,
    pub signal_waits_aligned: u64,
    pub signal_waits_dropped: u64,
    pub signal_waits_native: u64,
    pub batches_run_at_submit: u64,
}

// ---- channels ----
opaque!(devq_channel);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct devq_channel_desc {
    pub rank: c_int,
    pub size: c_int,
    pub id: *const c_void,
    pub id_size: usize,
}

pub type devq_dtype = c_uint;
pub const DEVQ_I8: devq_dtype = 0;
pub const DEVQ_U8: devq_dtype = 1;
pub const DEVQ_I32: devq_dtype = 2;
pub const DEVQ_U32: devq_dtype = 3;
pub const DEVQ_I64: devq_dtype = 4;
pub const DEVQ_U64: devq_dtype = 5;
pub const DEVQ_F16: devq_dtype = 6;
pub const DEVQ_BF16: devq_dtype = 7;
pub const DEVQ_F32: devq_dtype = 8;
pub const DEVQ_F64: devq_dtype = 9;

pub type devq_reduce = c_uint;
pub const DEVQ_SUM: devq_reduce = 0;
pub const DEVQ_PROD: devq_reduce = 1;
pub const DEVQ_MIN: devq_reduce = 2;
pub const DEVQ_MAX: devq_reduce = 3;
pub const DEVQ_AVG: devq_reduce = 4;

// ---- devq_resource.h ----
opaque!(devq_resource, devq_stream);
pub type devq_stream_ref = devq_stream;

pub const DEVQ_STREAM_NONE: u32 = u32::MAX;
pub const DEVQ_RESOURCE_ABI_VERSION: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct devq_resource_ops {
    pub abi_version: u32,
    pub size: u32,
    pub name: *const c_char,
    pub allocate: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            bytes: usize,
            stream: *mut devq_stream_ref,
            tag: u32,
            device_ptr: *mut *mut c_void,
            host_ptr: *mut *mut c_void,
        ) -> c_int,
    >,
    pub deallocate: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            device_ptr: *mut c_void,
            bytes: usize,
            stream: *mut devq_stream_ref,
            tag: u32,
        ) -> c_int,
    >,
    pub bytes_outstanding: Option<unsafe extern "C" fn(state: *mut c_void) -> u64>,
    pub reap_pending: Option<unsafe extern "C" fn(state: *mut c_void) -> c_int>,
    pub supports_use_tracking: Option<unsafe extern "C" fn(state: *mut c_void) -> c_int>,
    pub prepare_use: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            device_ptr: *mut c_void,
            stream: *mut devq_stream_ref,
            access: devq_access,
        ) -> c_int,
    >,
    pub finish_use: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            device_ptr: *mut c_void,
            stream: *mut devq_stream_ref,
            access: devq_access,
        ) -> c_int,
    >,
    pub trim: Option<unsafe extern "C" fn(state: *mut c_void) -> c_int>,
    pub stream_gone: Option<unsafe extern "C" fn(state: *mut c_void, stream: *mut devq_stream_ref)>,
    pub stats: Option<unsafe extern "C" fn(state: *mut c_void, st: *mut devq_mem_stats) -> c_int>,
    pub destroy: Option<unsafe extern "C" fn(state: *mut c_void)>,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct devq_mem_usage {
    pub current: u64,
    pub peak: u64,
    pub count: u64,
}

// ---- graphs (DEVQ_0.4) ----
opaque!(devq_graph, devq_graph_exec);

extern "C" {
    pub fn devq_errmsg() -> *const c_char;
    pub fn devq_version() -> *const c_char;

    // ---- devices ----
    pub fn devq_device_open(spec: *const c_char, out: *mut *mut devq_device) -> c_int;
    pub fn devq_device_close(dev: *mut devq_device);
    pub fn devq_device_info_get(dev: *mut devq_device, info: *mut devq_device_info) -> c_int;
    pub fn devq_device_synchronize(dev: *mut devq_device, timeout_ns: u64) -> c_int;

    // ---- backends ----
    pub fn devq_backends_report(out: *mut devq_backend_report, cap: usize, n: *mut usize) -> c_int;

    // ---- timeline signals ----
    pub fn devq_signal_create(initial: u64, out: *mut *mut devq_signal) -> c_int;
    pub fn devq_signal_destroy(s: *mut devq_signal);
    pub fn devq_signal_value(s: *const devq_signal) -> u64;
    pub fn devq_signal_set(s: *mut devq_signal, value: u64) -> c_int;
    pub fn devq_signal_fail(s: *mut devq_signal, error: c_int) -> c_int;
    pub fn devq_signal_status(s: *const devq_signal) -> c_int;
    pub fn devq_signal_wait(s: *mut devq_signal, value: u64, timeout_ns: u64) -> c_int;
    pub fn devq_signal_wait_many(
        s: *const *mut devq_signal,
        values: *const u64,
        n: usize,
        mode: devq_wait_mode,
        timeout_ns: u64,
        first_ready: *mut usize,
    ) -> c_int;
    pub fn devq_signal_notify(
        s: *mut devq_signal,
        value: u64,
        fn_: devq_notify_fn,
        arg: *mut c_void,
        handle: *mut *mut devq_notify,
    ) -> c_int;
    pub fn devq_notify_cancel(h: *mut devq_notify) -> c_int;
    pub fn devq_notify_release(h: *mut devq_notify) -> c_int;
    pub fn devq_signal_wait_fd(s: *mut devq_signal, value: u64, fd: *mut c_int) -> c_int;
    pub fn devq_signal_create_shared(initial: u64, out: *mut *mut devq_signal) -> c_int;
    pub fn devq_signal_export_fd(s: *mut devq_signal, fd: *mut c_int) -> c_int;
    pub fn devq_signal_set_name(s: *mut devq_signal, name: *const c_char) -> c_int;
    pub fn devq_queue_set_name(q: *mut devq_queue, name: *const c_char) -> c_int;
    pub fn devq_buffer_set_name(b: *mut devq_buffer, name: *const c_char) -> c_int;
    pub fn devq_kernel_set_name(k: *mut devq_kernel, name: *const c_char) -> c_int;
    pub fn devq_signal_import_fd(fd: c_int, out: *mut *mut devq_signal) -> c_int;
    pub fn devq_signal_add_producer(s: *mut devq_signal) -> c_int;
    pub fn devq_signal_remove_producer(s: *mut devq_signal) -> c_int;

    // ---- memory ----
    pub fn devq_buffer_alloc(
        dev: *mut devq_device,
        bytes: usize,
        q: *mut devq_queue,
        tag: u32,
        out: *mut *mut devq_buffer,
    ) -> c_int;
    pub fn devq_buffer_free(b: *mut devq_buffer, q: *mut devq_queue) -> c_int;
    pub fn devq_buffer_size(b: *const devq_buffer) -> usize;
    pub fn devq_buffer_device_ptr(b: *const devq_buffer) -> *mut c_void;
    pub fn devq_buffer_host_ptr(b: *const devq_buffer) -> *mut c_void;
    pub fn devq_buffer_status(b: *const devq_buffer) -> c_int;
    pub fn devq_mem_stats_get(dev: *mut devq_device, st: *mut devq_mem_stats) -> c_int;
    pub fn devq_mem_reap(dev: *mut devq_device) -> c_int;

    // ---- kernels ----
    pub fn devq_kernel_load(
        dev: *mut devq_device,
        image: *const c_void,
        size: usize,
        entry: *const c_char,
        out: *mut *mut devq_kernel,
    ) -> c_int;
    pub fn devq_kernel_load_fn(
        dev: *mut devq_device,
        kernel: devq_cpu_kernel_fn,
        sig: *const devq_cpu_signature,
        name: *const c_char,
        out: *mut *mut devq_kernel,
    ) -> c_int;
    pub fn devq_kernel_destroy(k: *mut devq_kernel);

    // ---- queues ----
    pub fn devq_queue_create(
        dev: *mut devq_device,
        desc: *const devq_queue_desc,
        out: *mut *mut devq_queue,
    ) -> c_int;
    pub fn devq_queue_destroy(q: *mut devq_queue);
    pub fn devq_queue_wait(q: *mut devq_queue, s: *mut devq_signal, value: u64) -> c_int;
    pub fn devq_queue_signal(q: *mut devq_queue, s: *mut devq_signal, value: u64) -> c_int;
    pub fn devq_queue_exec(
        q: *mut devq_queue,
        k: *mut devq_kernel,
        args: *const devq_arg,
        nargs: usize,
        l: *const devq_launch,
    ) -> c_int;
    pub fn devq_queue_copy(
        q: *mut devq_queue,
        dst: *mut devq_buffer,
        dst_off: usize,
        src: *mut devq_buffer,
        src_off: usize,
        n: usize,
    ) -> c_int;
    pub fn devq_queue_fill(q: *mut devq_queue, dst: *mut devq_buffer, off: usize, n: usize, byte: u8)
        -> c_int;
    pub fn devq_queue_write(
        q: *mut devq_queue,
        dst: *mut devq_buffer,
        off: usize,
        src: *const c_void,
        n: usize,
    ) -> c_int;
    pub fn devq_queue_read(
        q: *mut devq_queue,
        dst: *mut c_void,
        src: *mut devq_buffer,
        off: usize,
        n: usize,
    ) -> c_int;
    pub fn devq_queue_barrier(q: *mut devq_queue) -> c_int;
    pub fn devq_queue_host_fn(
        q: *mut devq_queue,
        fn_: Option<unsafe extern "C" fn(arg: *mut c_void)>,
        arg: *mut c_void,
    ) -> c_int;
    pub fn devq_queue_submit(q: *mut devq_queue) -> c_int;
    pub fn devq_queue_finish(q: *mut devq_queue, timeout_ns: u64) -> c_int;
    pub fn devq_barrier(queues: *const *mut devq_queue, n: usize) -> c_int;

    // ---- timing ----
    pub fn devq_queue_timestamp(q: *mut devq_queue, out: *mut *mut devq_timestamp) -> c_int;
    pub fn devq_timestamp_elapsed(a: *const devq_timestamp, b: *const devq_timestamp, ns: *mut u64)
        -> c_int;
    pub fn devq_timestamp_destroy(ts: *mut devq_timestamp);

    // ---- observability ----
    pub fn devq_stats_get(dev: *mut devq_device, st: *mut devq_stats) -> c_int;

    // ---- channels ----
    pub fn devq_channel_id(dev: *mut devq_device, id: *mut c_void, size: *mut usize) -> c_int;
    pub fn devq_channel_create(
        dev: *mut devq_device,
        desc: *const devq_channel_desc,
        out: *mut *mut devq_channel,
    ) -> c_int;
    pub fn devq_channel_create_from_handle(
        dev: *mut devq_device,
        handle: *const c_void,
        handle_size: usize,
        out: *mut *mut devq_channel,
    ) -> c_int;
    pub fn devq_channel_split(ch: *mut devq_channel, color: c_int, key: c_int, out: *mut *mut devq_channel)
        -> c_int;
    pub fn devq_channel_rank(ch: *const devq_channel) -> c_int;
    pub fn devq_channel_size(ch: *const devq_channel) -> c_int;
    pub fn devq_channel_destroy(ch: *mut devq_channel);
    pub fn devq_queue_all_reduce(
        q: *mut devq_queue,
        ch: *mut devq_channel,
        dst: *mut devq_buffer,
        dst_off: usize,
        src: *mut devq_buffer,
        src_off: usize,
        count: usize,
        type_: devq_dtype,
        op: devq_reduce,
    ) -> c_int;
    pub fn devq_queue_all_gather(
        q: *mut devq_queue,
        ch: *mut devq_channel,
        dst: *mut devq_buffer,
        dst_off: usize,
        src: *mut devq_buffer,
        src_off: usize,
        count: usize,
        type_: devq_dtype,
    ) -> c_int;
    pub fn devq_queue_reduce_scatter(
        q: *mut devq_queue,
        ch: *mut devq_channel,
        dst: *mut devq_buffer,
        dst_off: usize,
        src: *mut devq_buffer,
        src_off: usize,
        count: usize,
        type_: devq_dtype,
        op: devq_reduce,
    ) -> c_int;
    pub fn devq_queue_broadcast(
        q: *mut devq_queue,
        ch: *mut devq_channel,
        buf: *mut devq_buffer,
        off: usize,
        count: usize,
        type_: devq_dtype,
        root: c_int,
    ) -> c_int;
    pub fn devq_queue_send(
        q: *mut devq_queue,
        ch: *mut devq_channel,
        src: *mut devq_buffer,
        off: usize,
        count: usize,
        type_: devq_dtype,
        peer: c_int,
    ) -> c_int;
    pub fn devq_queue_recv(
        q: *mut devq_queue,
        ch: *mut devq_channel,
        dst: *mut devq_buffer,
        off: usize,
        count: usize,
        type_: devq_dtype,
        peer: c_int,
    ) -> c_int;
    pub fn devq_channel_set_timeout(ch: *mut devq_channel, timeout_ns: u64) -> c_int;

    // ---- graphs (DEVQ_0.4) ----
    pub fn devq_queue_begin_capture(q: *mut devq_queue) -> c_int;
    pub fn devq_queue_end_capture(q: *mut devq_queue, out: *mut *mut devq_graph) -> c_int;
    pub fn devq_graph_destroy(g: *mut devq_graph);
    pub fn devq_graph_instantiate(g: *mut devq_graph, out: *mut *mut devq_graph_exec) -> c_int;
    pub fn devq_graph_submit(q: *mut devq_queue, ge: *mut devq_graph_exec) -> c_int;
    pub fn devq_graph_exec_set_arg(
        ge: *mut devq_graph_exec,
        op: usize,
        index: usize,
        arg: *const devq_arg,
    ) -> c_int;
    pub fn devq_graph_exec_set_buffer(
        ge: *mut devq_graph_exec,
        old_buf: *mut devq_buffer,
        new_buf: *mut devq_buffer,
    ) -> c_int;
    pub fn devq_graph_exec_set_value(ge: *mut devq_graph_exec, op: usize, value: u64, step: i64) -> c_int;
    pub fn devq_graph_exec_destroy(ge: *mut devq_graph_exec);

    // ---- devq_resource.h ----
    pub fn devq_stream_ref_id(s: *const devq_stream_ref) -> u32;
    pub fn devq_resource_create(
        dev: *mut devq_device,
        ops: *const devq_resource_ops,
        state: *mut c_void,
        out: *mut *mut devq_resource,
    ) -> c_int;
    pub fn devq_resource_destroy(r: *mut devq_resource);
    pub fn devq_resource_state(r: *const devq_resource) -> *mut c_void;
    pub fn devq_resource_name(r: *const devq_resource) -> *const c_char;
    pub fn devq_resource_inner(r: *const devq_resource) -> *mut devq_resource;
    pub fn devq_resource_direct(dev: *mut devq_device, out: *mut *mut devq_resource) -> c_int;
    pub fn devq_resource_pool(dev: *mut devq_device, out: *mut *mut devq_resource) -> c_int;
    pub fn devq_resource_native(dev: *mut devq_device, out: *mut *mut devq_resource) -> c_int;
    pub fn devq_resource_budget(inner: *mut devq_resource, limit: u64, out: *mut *mut devq_resource)
        -> c_int;
    pub fn devq_resource_stats(inner: *mut devq_resource, out: *mut *mut devq_resource) -> c_int;
    pub fn devq_resource_logging(
        inner: *mut devq_resource,
        csv_path: *const c_char,
        out: *mut *mut devq_resource,
    ) -> c_int;
    pub fn devq_resource_guard(inner: *mut devq_resource, out: *mut *mut devq_resource) -> c_int;
    pub fn devq_resource_allocate(
        r: *mut devq_resource,
        bytes: usize,
        stream: *mut devq_stream_ref,
        tag: u32,
        device_ptr: *mut *mut c_void,
        host_ptr: *mut *mut c_void,
    ) -> c_int;
    pub fn devq_resource_deallocate(
        r: *mut devq_resource,
        device_ptr: *mut c_void,
        bytes: usize,
        stream: *mut devq_stream_ref,
        tag: u32,
    ) -> c_int;
    pub fn devq_resource_bytes_outstanding(r: *mut devq_resource) -> u64;
    pub fn devq_resource_reap(r: *mut devq_resource) -> c_int;
    pub fn devq_resource_trim(r: *mut devq_resource) -> c_int;
    pub fn devq_resource_supports_use_tracking(r: *mut devq_resource) -> c_int;
    pub fn devq_resource_prepare_use(
        r: *mut devq_resource,
        device_ptr: *mut c_void,
        stream: *mut devq_stream_ref,
        access: devq_access,
    ) -> c_int;
    pub fn devq_resource_finish_use(
        r: *mut devq_resource,
        device_ptr: *mut c_void,
        stream: *mut devq_stream_ref,
        access: devq_access,
    ) -> c_int;
    pub fn devq_resource_stats_get(r: *mut devq_resource, st: *mut devq_mem_stats) -> c_int;
    pub fn devq_resource_usage_by_tag(r: *mut devq_resource, tag: u32, u: *mut devq_mem_usage)
        -> c_int;
    pub fn devq_resource_usage_by_stream(
        r: *mut devq_resource,
        stream_id: u32,
        u: *mut devq_mem_usage,
    ) -> c_int;
    pub fn devq_device_set_resource(dev: *mut devq_device, r: *mut devq_resource) -> c_int;
    pub fn devq_device_resource(dev: *mut devq_device) -> *mut devq_resource;
}
