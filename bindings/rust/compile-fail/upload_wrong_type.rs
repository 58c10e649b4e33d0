// SPDX-License-Identifier: MIT
// expect: E0277
// u32 data uploaded into a Buffer<f32>: one element type per buffer
// (a Vec<u32> is not an Into<Vec<f32>>).
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let buf = devq::Buffer::<f32>::new(&dev, 4)?;
    q.upload(&buf, 0, vec![1u32, 2, 3, 4]);
    Ok(())
}
