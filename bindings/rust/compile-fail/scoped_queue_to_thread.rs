// SPDX-License-Identifier: MIT
// expect: E0277
// A scoped queue (not Send: its transfers are tied to the scope) sent to
// another thread.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    devq::scope(|s| {
        let mut sq = s.on(&mut q);
        std::thread::spawn(move || sq.barrier().submit()).join().unwrap()
    })?;
    Ok(())
}
