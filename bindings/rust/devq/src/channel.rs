// SPDX-License-Identifier: MIT
//! `Channel`: this process's rank in a group of processes, for
//! collectives and point-to-point transfers recorded on queues
//! (devq-channels(7); the cpu backend over MPI).
//!
//! The rule MPI and NCCL impose is that every rank records a channel's
//! ops in the same order.  The types carry the part of it Rust can: every
//! collective call (an op on a queue, [`Channel::split`]) takes the
//! channel by `&mut`, so one thread at a time records on it, in program
//! order.  That ranks run the same program is up to the program.
use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::{check, errno, timeout_ns, Error, Result};
use crate::pod::Pod;
use crate::queue::Queue;
use devq_sys as sys;
use std::os::raw::c_void;
use std::ptr;
use std::time::Duration;

/// Element types collectives move and reduce: each maps to a
/// `devq_dtype`.  Implemented for `i8 u8 i32 u32 i64 u64 f32 f64` and the
/// 16-bit float bit patterns [`F16`] and [`Bf16`].
///
/// # Safety
/// `DTYPE` must be the `devq_dtype` whose element has exactly this type's
/// size and layout (libdevq reads and writes `count * size_of::<T>()`
/// bytes).
pub unsafe trait Dtype: Pod {
    /// The `DEVQ_*` element type.
    const DTYPE: sys::devq_dtype;
}

macro_rules! dtype {
    ($($t:ty => $d:ident),*) => {$(
        // SAFETY: the C type of $d is $t (same size, same representation).
        unsafe impl Dtype for $t { const DTYPE: sys::devq_dtype = sys::$d; }
    )*};
}
dtype!(i8 => DEVQ_I8, u8 => DEVQ_U8, i32 => DEVQ_I32, u32 => DEVQ_U32, i64 => DEVQ_I64, u64 => DEVQ_U64,
       f32 => DEVQ_F32, f64 => DEVQ_F64, F16 => DEVQ_F16, Bf16 => DEVQ_BF16);

/// An IEEE half-precision float as its bits (`DEVQ_F16`); reductions on it
/// are done in `f32` by the engine.  No arithmetic here: convert with
/// your own code or crate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(pub u16);

/// A bfloat16 as its bits (`DEVQ_BF16`; the top half of an `f32`, so
/// `Bf16((x.to_bits() >> 16) as u16)` truncates an `f32` to it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(pub u16);

// SAFETY: one u16: no padding, every bit pattern valid.
unsafe impl Pod for F16 {}
// SAFETY: one u16: no padding, every bit pattern valid.
unsafe impl Pod for Bf16 {}

/// How [`Queue::all_reduce`] and [`Queue::reduce_scatter`] combine the
/// ranks' elements.  `Avg` is the sum divided by the group size (integer
/// division for integer types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Prod,
    Min,
    Max,
    Avg,
}

impl Reduce {
    pub(crate) fn raw(self) -> sys::devq_reduce {
        match self {
            Reduce::Sum => sys::DEVQ_SUM,
            Reduce::Prod => sys::DEVQ_PROD,
            Reduce::Min => sys::DEVQ_MIN,
            Reduce::Max => sys::DEVQ_MAX,
            Reduce::Avg => sys::DEVQ_AVG,
        }
    }
}

/// One rank of a group of processes on the device's channel engine.
/// Creating one is collective: every rank of the group creates it, in the
/// same order.  Dropping it releases this handle; batches that still hold
/// ops on it keep the group alive until they complete.
/// `Send + Sync`; recording on it takes `&mut` (see the module docs).
pub struct Channel {
    raw: *mut sys::devq_channel,
    dev: Device,
}

// SAFETY: libdevq's channel functions are thread-safe (rank and size are
// fixed, the timeout is atomic, destroy is reference counted); the calls
// whose order matters take &mut self.
unsafe impl Send for Channel {}
unsafe impl Sync for Channel {}

/// The capacity offered to `devq_channel_id` (NCCL's ids are 128 bytes,
/// the MPI engine's 16).
const ID_CAPACITY: usize = 256;

impl Channel {
    /// The launcher's world: every process one `mpirun` started
    /// (`devq_channel_create(dev, NULL)`).
    pub fn world(dev: &Device) -> Result<Channel> {
        Self::create(dev, ptr::null())
    }

    /// Rank `rank` of a group of `size`, met through `id`: the bytes
    /// [`Channel::id`] returned on rank 0, handed to every rank by the
    /// program.  (With the MPI engine the ranks must still come from one
    /// launcher: the id checks they all meant the same group.)
    pub fn with_id(dev: &Device, rank: i32, size: i32, id: &[u8]) -> Result<Channel> {
        if id.is_empty() {
            return Err(Error::new(
                errno::EINVAL,
                "Channel::with_id: the id is empty; pass the bytes Channel::id returned on rank 0",
            ));
        }
        let desc = sys::devq_channel_desc { rank, size, id: id.as_ptr() as *const c_void, id_size: id.len() };
        Self::create(dev, &desc)
    }

    /// A channel from a full descriptor: `rank`, `size` both -1 and `id`
    /// `None` is the launcher's world, as [`Channel::world`].
    pub fn from_desc(dev: &Device, rank: i32, size: i32, id: Option<&[u8]>) -> Result<Channel> {
        let (p, n) = id.map_or((ptr::null(), 0), |b| (b.as_ptr() as *const c_void, b.len()));
        let desc = sys::devq_channel_desc { rank, size, id: p, id_size: n };
        Self::create(dev, &desc)
    }

    fn create(dev: &Device, desc: *const sys::devq_channel_desc) -> Result<Channel> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device; desc NULL or valid for the call (its id
        // bytes too: libdevq reads them during the call only).
        check(unsafe { sys::devq_channel_create(dev.raw(), desc, &mut raw) })?;
        Ok(Channel { raw, dev: dev.clone() })
    }

    /// A new rendezvous id, made on rank 0 and handed to every rank for
    /// [`Channel::with_id`].
    pub fn id(dev: &Device) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; ID_CAPACITY];
        let mut n = buf.len();
        // SAFETY: live device; buf holds n bytes; n is in/out.
        check(unsafe { sys::devq_channel_id(dev.raw(), buf.as_mut_ptr() as *mut c_void, &mut n) })?;
        buf.truncate(n);
        Ok(buf)
    }

    /// The ranks that give the same `color` form a new channel, ranked by
    /// `key` (ties by rank here).  Collective: every rank calls it.
    pub fn split(&mut self, color: i32, key: i32) -> Result<Channel> {
        let mut raw = ptr::null_mut();
        // SAFETY: live channel; out slot.
        check(unsafe { sys::devq_channel_split(self.raw, color, key, &mut raw) })?;
        Ok(Channel { raw, dev: self.dev.clone() })
    }

    /// This process's rank, `0..size()`.
    pub fn rank(&self) -> usize {
        // SAFETY: live channel (a live one never fails).
        unsafe { sys::devq_channel_rank(self.raw) }.max(0) as usize
    }

    /// The number of ranks in the group.
    pub fn size(&self) -> usize {
        // SAFETY: live channel.
        unsafe { sys::devq_channel_size(self.raw) }.max(0) as usize
    }

    /// How long one op (or group) waits for its peers before it fails with
    /// `ETIMEDOUT` (default 60 s; `Duration::MAX` waits forever).
    pub fn set_timeout(&self, timeout: Duration) -> Result<()> {
        // SAFETY: live channel.
        check(unsafe { sys::devq_channel_set_timeout(self.raw, timeout_ns(timeout)) }).map(drop)
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The C handle, for calls into `devq_sys`; valid while `self` lives.
    pub fn as_ptr(&mut self) -> *mut sys::devq_channel {
        self.raw
    }

    pub(crate) fn raw(&mut self) -> *mut sys::devq_channel {
        self.raw
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: live channel, released once; batches keep their own
        // references.
        unsafe { sys::devq_channel_destroy(self.raw) }
    }
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Channel(rank {} of {} on {:?})", self.rank(), self.size(), self.dev)
    }
}

/// Byte offset of element `i` of `T`.  One past what a byte offset can
/// hold saturates: libdevq then refuses the range (`EINVAL`, naming the
/// buffer) and the batch keeps that error, as for any bad range.
pub(crate) fn byte_off<T>(i: usize) -> usize {
    i.checked_mul(std::mem::size_of::<T>()).unwrap_or(usize::MAX)
}

/// The channel ops on [`Queue`].  Offsets and counts are in elements of
/// `T` (libdevq checks the ranges against the buffers); every rank
/// records a channel's ops in the same order.
impl Queue {
    fn chan_op<T>(&mut self, offs: [usize; 2], f: impl FnOnce(&mut Self, usize, usize) -> i32) -> &mut Self {
        let rc = f(self, byte_off::<T>(offs[0]), byte_off::<T>(offs[1]));
        self.record_rc(rc);
        self
    }

    /// Every rank's `count` elements at `src_off` of `src`, combined by
    /// `op`, land in every rank's `dst` at `dst_off` (`dst` may be `src`,
    /// at the same offset: in place).
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce<T: Dtype>(
        &mut self,
        ch: &mut Channel,
        dst: &Buffer<T>,
        dst_off: usize,
        src: &Buffer<T>,
        src_off: usize,
        count: usize,
        op: Reduce,
    ) -> &mut Self {
        self.chan_op::<T>([dst_off, src_off], |q, d, s| {
            // SAFETY: live queue, channel and buffers (libdevq references
            // them for the batch); libdevq checks the ranges.
            unsafe { sys::devq_queue_all_reduce(q.raw(), ch.raw(), dst.raw(), d, src.raw(), s, count, T::DTYPE, op.raw()) }
        })
    }

    /// Every rank's `count` elements, in rank order: `dst` receives
    /// `size * count` elements from `dst_off`.
    pub fn all_gather<T: Dtype>(
        &mut self,
        ch: &mut Channel,
        dst: &Buffer<T>,
        dst_off: usize,
        src: &Buffer<T>,
        src_off: usize,
        count: usize,
    ) -> &mut Self {
        self.chan_op::<T>([dst_off, src_off], |q, d, s| {
            // SAFETY: as all_reduce.
            unsafe { sys::devq_queue_all_gather(q.raw(), ch.raw(), dst.raw(), d, src.raw(), s, count, T::DTYPE) }
        })
    }

    /// `src` holds `size * count` elements; block `rank` of their
    /// combination by `op` lands in this rank's `dst` (`count` elements).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_scatter<T: Dtype>(
        &mut self,
        ch: &mut Channel,
        dst: &Buffer<T>,
        dst_off: usize,
        src: &Buffer<T>,
        src_off: usize,
        count: usize,
        op: Reduce,
    ) -> &mut Self {
        self.chan_op::<T>([dst_off, src_off], |q, d, s| {
            // SAFETY: as all_reduce.
            unsafe {
                sys::devq_queue_reduce_scatter(q.raw(), ch.raw(), dst.raw(), d, src.raw(), s, count, T::DTYPE, op.raw())
            }
        })
    }

    /// Rank `root`'s `count` elements at `off` of `buf` replace every
    /// other rank's.
    pub fn broadcast<T: Dtype>(&mut self, ch: &mut Channel, buf: &Buffer<T>, off: usize, count: usize, root: i32) -> &mut Self {
        self.chan_op::<T>([off, 0], |q, o, _| {
            // SAFETY: as all_reduce.
            unsafe { sys::devq_queue_broadcast(q.raw(), ch.raw(), buf.raw(), o, count, T::DTYPE, root) }
        })
    }

    /// Sends `count` elements at `off` of `src` to rank `peer`, which
    /// records the matching [`recv`](Queue::recv).
    pub fn send<T: Dtype>(&mut self, ch: &mut Channel, src: &Buffer<T>, off: usize, count: usize, peer: i32) -> &mut Self {
        self.chan_op::<T>([off, 0], |q, o, _| {
            // SAFETY: as all_reduce.
            unsafe { sys::devq_queue_send(q.raw(), ch.raw(), src.raw(), o, count, T::DTYPE, peer) }
        })
    }

    /// Receives `count` elements from rank `peer` into `dst` at `off`.
    pub fn recv<T: Dtype>(&mut self, ch: &mut Channel, dst: &Buffer<T>, off: usize, count: usize, peer: i32) -> &mut Self {
        self.chan_op::<T>([off, 0], |q, o, _| {
            // SAFETY: as all_reduce.
            unsafe { sys::devq_queue_recv(q.raw(), ch.raw(), dst.raw(), o, count, T::DTYPE, peer) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_map_to_their_c_types() {
        assert_eq!(<f32 as Dtype>::DTYPE, sys::DEVQ_F32);
        assert_eq!(<f64 as Dtype>::DTYPE, sys::DEVQ_F64);
        assert_eq!(<i8 as Dtype>::DTYPE, sys::DEVQ_I8);
        assert_eq!(<u8 as Dtype>::DTYPE, sys::DEVQ_U8);
        assert_eq!(<i32 as Dtype>::DTYPE, sys::DEVQ_I32);
        assert_eq!(<u32 as Dtype>::DTYPE, sys::DEVQ_U32);
        assert_eq!(<i64 as Dtype>::DTYPE, sys::DEVQ_I64);
        assert_eq!(<u64 as Dtype>::DTYPE, sys::DEVQ_U64);
        assert_eq!(<F16 as Dtype>::DTYPE, sys::DEVQ_F16);
        assert_eq!(<Bf16 as Dtype>::DTYPE, sys::DEVQ_BF16);
        assert_eq!(std::mem::size_of::<F16>(), 2);
        assert_eq!(std::mem::size_of::<Bf16>(), 2);
    }

    #[test]
    fn reductions_map_to_their_c_values() {
        let all = [Reduce::Sum, Reduce::Prod, Reduce::Min, Reduce::Max, Reduce::Avg];
        let raw: Vec<sys::devq_reduce> = all.iter().map(|r| r.raw()).collect();
        assert_eq!(raw, vec![sys::DEVQ_SUM, sys::DEVQ_PROD, sys::DEVQ_MIN, sys::DEVQ_MAX, sys::DEVQ_AVG]);
    }

    #[test]
    fn element_offsets_become_byte_offsets_or_saturate() {
        assert_eq!(byte_off::<f64>(3), 24);
        assert_eq!(byte_off::<u8>(7), 7);
        assert_eq!(byte_off::<u32>(usize::MAX / 2), usize::MAX);
    }
}
