// SPDX-License-Identifier: MIT
// expect: ok
// The control: the same calls, correct, must compile (so a failure above
// is the error it names, not a broken harness).
fn main() -> devq::Result<()> {
    let dev = devq::Device::open("cpu")?;
    let mut q = devq::Queue::new(&dev)?;
    let buf = devq::Buffer::<f32>::new(&dev, 4)?;
    let input = vec![1f32; 4];
    let mut out = [0f32; 4];
    devq::scope(|s| s.on(&mut q).write(&buf, 0, &input).read(&mut out, &buf, 0).submit())?;
    q.upload(&buf, 0, vec![1f32, 2., 3., 4.]);
    let mut p = q.readback(buf.slice(1..3));
    q.submit()?;
    let v: Vec<f32> = p.wait(std::time::Duration::MAX)?;
    let shared = std::sync::Arc::new(v);
    q.host_fn(move || println!("{:?}", shared));
    println!("{:?}", out);
    Ok(())
}
