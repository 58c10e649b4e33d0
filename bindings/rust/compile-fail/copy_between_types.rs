// SPDX-License-Identifier: MIT
// expect: E0308
// A copy between buffers of different element types.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let a = devq::Buffer::<f32>::new(&dev, 4)?;
    let b = devq::Buffer::<u32>::new(&dev, 4)?;
    q.copy_slice(a.slice(..), b.slice(..));
    Ok(())
}
