// SPDX-License-Identifier: MIT
//! SAXPY on the cpu backend: the cpu_kernel! on plain slices
//! (`Args::slice` + `Args::chunk_mut`), the same kernel through atomic
//! `View`s, and the same loop in C (bindings/rust/bench/saxpy.c, a shared
//! object given as the first argument) — each exec'd through devq the
//! same way.  `make rust-bench` builds the C kernel and runs this in
//! release mode; it prints ns per element and the C/Rust time ratio
//! (above 1: Rust is faster).  Best of several trials, as the machine may
//! be shared.
use devq::cpu::{Args, Group, KernelResult};
use devq::{Arg, Buffer, Device, Kernel, Launch, Queue};
use std::time::{Duration, Instant};

devq::cpu_kernel! {
    fn bench_saxpy_slices(g: &Group, args: &Args) -> KernelResult {
        let x: &[f32] = args.slice(0)?;
        let y: &mut [f32] = args.chunk_mut(1)?;
        let a: f32 = args.value(2)?;
        for (y, x) in y.iter_mut().zip(&x[g.items(0)]) {
            *y += a * x;
        }
        Ok(())
    }
}

devq::cpu_kernel! {
    fn bench_saxpy_atomics(g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<f32>(0)?;
        let y = args.buffer::<f32>(1)?;
        let a: f32 = args.value(2)?;
        for i in g.items(0) {
            y.set(i, y.get(i) + a * x.get(i));
        }
        Ok(())
    }
}

/// Seconds per exec of each `(kernel, args)`: the best of `trials`
/// rounds of `reps` execs each, the kernels interleaved round by round so
/// that load from other processes hits them alike.
fn time(dev: &Device, runs: &[(&Kernel, &[Arg<'_>])], n: usize, reps: usize, trials: usize) -> devq::Result<Vec<f64>> {
    let mut q = Queue::new(dev)?;
    let launch = Launch::d1(n as u32, (n as u32 / 16).max(1 << 14).min(n as u32));
    for (k, args) in runs {
        q.exec(k, args, launch); // warm-up
    }
    q.submit()?;
    q.finish(Duration::MAX)?;
    let mut best = vec![f64::MAX; runs.len()];
    for _ in 0..trials {
        for (i, (k, args)) in runs.iter().enumerate() {
            let t = Instant::now();
            for _ in 0..reps {
                q.exec(k, args, launch);
            }
            q.submit()?;
            q.finish(Duration::MAX)?;
            best[i] = best[i].min(t.elapsed().as_secs_f64() / reps as f64);
        }
    }
    Ok(best)
}

fn main() -> devq::Result<()> {
    let c_so = std::env::args().nth(1);
    let dev = Device::open("cpu")?;
    let slices = Kernel::cpu(&dev, &bench_saxpy_slices)?;
    let atomics = Kernel::cpu(&dev, &bench_saxpy_atomics)?;
    // SAFETY: saxpy_c reads args[0] and args[2] and writes args[1] within
    // the launch's global size, which is every buffer's length here.
    let c = match &c_so {
        Some(p) => Some(unsafe { Kernel::from_image(&dev, p.as_bytes(), "saxpy_c")? }),
        None => None,
    };
    for &n in &[1usize << 16, 1 << 20, 1 << 24] {
        let x = Buffer::<f32>::new(&dev, n)?;
        let y = Buffer::<f32>::zeroed(&dev, n)?;
        let mut q = Queue::new(&dev)?;
        q.upload(&x, 0, vec![1.5f32; n]).submit()?;
        q.finish(Duration::MAX)?;
        let a = 0.5f32;
        let reps = ((1usize << 26) / n).clamp(4, 1024);
        let ns = |s: f64| s * 1e9 / n as f64;
        let sl = [Arg::read(&x), Arg::chunks(&y), Arg::value(&a)];
        let whole = [Arg::read(&x), Arg::read_write(&y), Arg::value(&a)];
        let mut runs: Vec<(&Kernel, &[Arg<'_>])> = vec![(&slices, &sl), (&atomics, &whole)];
        if let Some(c) = &c {
            runs.push((c, &whole));
        }
        let t = time(&dev, &runs, n, reps, 9)?;
        print!("saxpy n={:>9}: rust slices {:.3} ns/elem, rust atomics {:.3} ns/elem", n, ns(t[0]), ns(t[1]));
        if let Some(rc) = t.get(2) {
            print!(", C {:.3} ns/elem; C/Rust time ratio {:.2} (atomics: {:.2})", ns(*rc), rc / t[0], rc / t[1]);
        }
        println!();
    }
    Ok(())
}
