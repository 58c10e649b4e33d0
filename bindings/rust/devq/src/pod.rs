// SPDX-License-Identifier: MIT
//! `Pod`: element types whose bytes can cross to and from device memory.

/// Plain data: no padding, no pointers, every bit pattern valid.  Host
/// slices of these go to [`write`](crate::ScopedQueue::write) and come
/// back from [`read`](crate::ScopedQueue::read); values of these are
/// kernel arguments.
///
/// # Safety
/// Implement only for types with no padding bytes for which every bit
/// pattern is a valid value.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive number: no padding, every bit pattern valid.
        unsafe impl Pod for $t {}
    )*};
}
pod!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
// SAFETY: an array of Pod has no padding between elements.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// The bytes of a Pod slice.
pub(crate) fn bytes_of<T: Pod>(s: &[T]) -> (*const u8, usize) {
    (s.as_ptr() as *const u8, std::mem::size_of_val(s))
}
