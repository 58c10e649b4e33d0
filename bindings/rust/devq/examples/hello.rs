// SPDX-License-Identifier: MIT
//! The README's Rust program, verbatim (the test below fails when the two
//! differ): upload, scale on a compute queue, read back on a second queue
//! ordered by a signal, check the result.  `cargo run --example hello`;
//! `cargo test` runs it as a test.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(dead_code))]

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

fn main() -> devq::Result<()> {
    let dev = Device::open("cpu")?;
    let (mut compute, mut copy) = (Queue::new(&dev)?, Queue::new(&dev)?);
    let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let mut out = vec![0f32; 1024];
    let buf = Buffer::new(&dev, 4 * 1024)?;
    let k = Kernel::cpu(&dev, &scale)?;
    let done = Signal::new(0)?;
    devq::scope(|s| {
        s.on(&mut compute)
            .write(&buf, 0, &data)
            .exec(&k, &[Arg::read_write(&buf), Arg::value(&3.0f32)], Launch::d1(1024, 256))
            .signal(&done, 1)
            .submit()?;                              // returns at once
        s.on(&mut copy).wait(&done, 1).read(&mut out, &buf, 0).submit()
    })?;                  // returns once both queues finished: `out` is readable again
    assert!(out.iter().enumerate().all(|(i, v)| *v == 3.0 * i as f32));
    println!("data[10] = {} (expected 30)", out[10]);
    Ok(())
}

#[test]
fn runs_and_checks_its_result() {
    main().unwrap();
}

#[test]
fn is_the_program_in_the_readme() {
    let readme = include_str!("../../../../README.md");
    let block = readme.split("```rust\n").nth(1).and_then(|b| b.split("```").next()).expect("a rust block in README.md");
    assert!(include_str!("hello.rs").contains(block), "README.md's Rust program and examples/hello.rs differ");
}
