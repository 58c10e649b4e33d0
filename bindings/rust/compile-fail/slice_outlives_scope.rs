// SPDX-License-Identifier: MIT
// expect: E0597
// A host slice that dies inside the scope, before the work that reads it.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let buf = devq::Buffer::<u8>::new(&dev, 16)?;
    devq::scope(|s| {
        let input = vec![1u8; 16];
        s.on(&mut q).write(&buf, 0, &input).submit()
    })?;
    Ok(())
}
