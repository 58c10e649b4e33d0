// SPDX-License-Identifier: MIT
// expect: E0521
// The capture recorder cannot outlive the closure capture lends it to.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let mut kept = None;
    let _ = q.capture(|c| kept = Some(c))?;
    Ok(())
}
