// SPDX-License-Identifier: MIT
// expect: E0505
// A buffer slice used after its buffer was dropped.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let buf = devq::Buffer::<f32>::new(&dev, 4)?;
    let s = buf.slice(1..3);
    drop(buf);
    let _p = q.readback(s);
    Ok(())
}
