// SPDX-License-Identifier: MIT
// expect: E0502 E0503
// Looking at a read's destination before the scope finished it.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let buf = devq::Buffer::<u8>::new(&dev, 16)?;
    let mut out = [0u8; 16];
    devq::scope(|s| {
        s.on(&mut q).read(&mut out, &buf, 0).submit()?;
        println!("{}", out[0]);
        Ok(())
    })?;
    Ok(())
}
