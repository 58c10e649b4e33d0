// SPDX-License-Identifier: MIT
//! The README's Rust program, verbatim (the test below fails when the two
//! differ): a typed buffer uploaded from an owned Vec, SAXPY on plain
//! slices on a compute queue, a readback of a slice on a second queue
//! ordered by a signal, awaited with an executor written here.
//! `cargo run --example hello`; `cargo test` runs it as a test.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(dead_code))]

use devq::cpu::{Args, Group, KernelResult};
use devq::{Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};

devq::cpu_kernel! {
    /// y = a*x + y, on plain slices: x shared, this work-group's chunk of y.
    fn saxpy(g: &Group, args: &Args) -> KernelResult {
        let x: &[f32] = args.slice(0)?;
        let y: &mut [f32] = args.chunk_mut(1)?;
        let a: f32 = args.value(2)?;
        for (y, x) in y.iter_mut().zip(&x[g.items(0)]) {
            *y += a * x;
        }
        Ok(())
    }
}

fn main() -> devq::Result<()> {
    let dev = Device::open("cpu")?;
    let (mut compute, mut copy) = (Queue::new(&dev)?, Queue::new(&dev)?);
    let x = Buffer::<f32>::new(&dev, 1024)?;         // lengths in elements
    let y = Buffer::<f32>::zeroed(&dev, 1024)?;      // no stale bytes
    let k = Kernel::cpu(&dev, &saxpy)?;
    let done = Signal::new(0)?;
    let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    compute
        .upload(&x, 0, data)                         // the queue owns the Vec now
        .exec(&k, &[Arg::read(&x), Arg::chunks(&y), Arg::value(&3.0f32)], Launch::d1(1024, 256))
        .signal(&done, 1)
        .submit()?;                                  // returns at once
    // Ordered on the device by the signal; the readback is a future.
    let tail = copy.wait(&done, 1).readback(y.slice(1000..));
    copy.submit()?;
    let tail: Vec<f32> = block_on(tail)?;            // or tail.wait(timeout)
    assert!(tail.iter().enumerate().all(|(i, v)| *v == 3.0 * (1000 + i) as f32));
    println!("y[1010] = {} (expected 3030)", tail[10]);
    Ok(())
}

/// An executor in a dozen lines: devq wakes the task from its notifier
/// thread when the signal behind the future is reached.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut f = Box::pin(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn runs_and_checks_its_result() {
    main().unwrap();
}

#[test]
fn is_the_program_in_the_readme() {
    // The crate's own README (packaged with it); check.sh compares the
    // top-level README's Rust section with it.
    let readme = include_str!("../README.md");
    let block = readme.split("```rust\n").nth(1).and_then(|b| b.split("```").next()).expect("a rust block in README.md");
    assert!(include_str!("hello.rs").contains(block), "README.md's Rust program and examples/hello.rs differ");
}
