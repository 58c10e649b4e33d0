//! The README's pipeline in safe Rust: upload, scale on a compute queue,
//! read back on a second queue ordered by a signal, check the result.
//! `cargo run --example hello`; `cargo test` runs it as a test.
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelResult};
use devq::{Arg, Buffer, Device, Kernel, Launch, Queue, Signal};

devq::cpu_kernel! {
    /// A cpu kernel: called once per work-group.
    fn scale(g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<f32>(0)?;
        let factor: f32 = args.value(1)?;
        for i in g.items(0) {
            x.set(i, x.get(i) * factor);
        }
        Ok(())
    }
}

fn hello() -> devq::Result<Vec<f32>> {
    let dev = Device::open("cpu")?;
    let mut compute = Queue::new(&dev)?;
    let mut copy = Queue::new(&dev)?;
    let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let mut out = vec![0f32; data.len()];
    let buf = Buffer::new(&dev, 4 * data.len())?;
    let k = Kernel::cpu(&dev, &scale)?;
    let done = Signal::new(0)?;
    let factor = 3.0f32;

    devq::scope(|s| {
        s.on(&mut compute)
            .write(&buf, 0, &data)
            .exec(&k, &[Arg::read_write(&buf), Arg::value(&factor)], Launch::d1(1024, 256))
            .signal(&done, 1)
            .submit()?; // returns at once
        s.on(&mut copy)
            .wait(&done, 1) // ordered on the device, no host round trip
            .read(&mut out, &buf, 0)
            .submit()
    })?; // both queues finished: `out` is ours again
    Ok(out)
}

#[cfg_attr(test, allow(dead_code))]
fn main() {
    match hello() {
        Ok(out) => println!("data[10] = {} (expected 30)", out[10]),
        Err(e) => {
            eprintln!("hello: {}", e);
            std::process::exit(1);
        }
    }
}

#[test]
fn scales_every_element() {
    let out = hello().unwrap();
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f32, "element {}", i);
    }
}
