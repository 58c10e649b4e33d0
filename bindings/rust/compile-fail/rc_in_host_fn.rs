// SPDX-License-Identifier: MIT
// expect: E0277
// A non-Send value (Rc) moved into a host_fn, which runs on another thread.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let shared = std::rc::Rc::new(1);
    q.host_fn(move || println!("{}", shared));
    Ok(())
}
