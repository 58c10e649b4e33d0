// SPDX-License-Identifier: MIT
// expect: E0308
// A graph's buffer rebound to a buffer of another element type.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let a = devq::Buffer::<f32>::new(&dev, 4)?;
    let b = devq::Buffer::<u32>::new(&dev, 4)?;
    let (g, _) = q.capture(|c| c.fill(&a, 0, 4, 0))?;
    g.instantiate()?.set_buffer(&a, &b)
}
