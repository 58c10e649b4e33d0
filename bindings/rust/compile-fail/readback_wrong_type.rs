// SPDX-License-Identifier: MIT
// expect: E0308
// A readback of a Buffer<f32> taken as Vec<u32>.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let buf = devq::Buffer::<f32>::new(&dev, 4)?;
    let mut p = q.readback(&buf);
    let v: Vec<u32> = p.wait(std::time::Duration::MAX)?;
    drop(v);
    Ok(())
}
