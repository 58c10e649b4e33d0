// SPDX-License-Identifier: MIT
// expect: ok
// The graph calls the failing snippets misuse, used as meant.
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let (a, b) = (devq::Buffer::<u32>::new(&dev, 4)?, devq::Buffer::<u32>::new(&dev, 4)?);
    let s = devq::Signal::new(0)?;
    let (g, op) = q.capture(|c| {
        c.fill(&a, 0, 4, 0);
        c.signal(&s, 1)
    })?;
    let mut e = g.instantiate()?;
    e.set_buffer(&a, &b)?;
    e.set_value(op, 1, 1)?;
    e.submit(&mut q)
}
