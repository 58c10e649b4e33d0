// SPDX-License-Identifier: MIT
//! Graphs through the safe API on the cpu backend: replay equals one-shot
//! batches, parameter changes reach the next submission, a failure fails
//! that submission only, and an exec may be dropped while in flight.
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelError, KernelResult};
use devq::{errno, Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(10);
const N: usize = 256;

devq::cpu_kernel! {
    /// y += a * x, wrapping; a zero in x fails the launch with ERANGE.
    fn axpy(g: &Group, args: &Args) -> KernelResult {
        let x: &[u32] = args.slice(0)?;
        let y: &mut [u32] = args.chunk_mut(1)?;
        let a: u32 = args.value(2)?;
        for (y, x) in y.iter_mut().zip(&x[g.items(0)]) {
            if *x == 0 {
                return Err(KernelError(errno::ERANGE));
            }
            *y = y.wrapping_add(a.wrapping_mul(*x));
        }
        Ok(())
    }
}

fn cpu() -> (Device, Queue, Kernel) {
    let dev = Device::open("cpu").expect("cpu device");
    let q = Queue::new(&dev).unwrap();
    let k = Kernel::cpu(&dev, &axpy).unwrap();
    (dev, q, k)
}

fn xs() -> Vec<u32> {
    (1..=N as u32).collect()
}

fn upload(q: &mut Queue, b: &Buffer<u32>, data: Vec<u32>) {
    q.upload(b, 0, data).submit().unwrap();
}

fn read(q: &mut Queue, b: &Buffer<u32>) -> Vec<u32> {
    let mut p = q.readback(b);
    q.submit().unwrap();
    p.wait(LONG).unwrap()
}

fn args<'a>(x: &'a Buffer<u32>, y: &'a Buffer<u32>, a: &'a u32) -> [Arg<'a>; 3] {
    [Arg::read(x), Arg::chunks(y), Arg::value(a)]
}

#[test]
fn many_submissions_equal_one_shot_batches() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::new(&dev, N).unwrap();
    let (y, z) = (Buffer::<u32>::zeroed(&dev, N).unwrap(), Buffer::<u32>::new(&dev, N).unwrap());
    let (y2, z2) = (Buffer::<u32>::zeroed(&dev, N).unwrap(), Buffer::<u32>::new(&dev, N).unwrap());
    upload(&mut q, &x, xs());
    let (graph, (e, c)) = q
        .capture(|c| {
            let e = c.exec(&k, &args(&x, &y, &3), Launch::d1(N as u32, 64));
            (e, c.copy(&z, 0, &y, 0, N))
        })
        .unwrap();
    assert_eq!((e.id().index(), c.index()), (0, 1));
    let mut exec = graph.instantiate().unwrap();
    let runs = 20;
    for _ in 0..runs {
        exec.submit(&mut q).unwrap();
    }
    for _ in 0..runs {
        q.exec(&k, &args(&x, &y2, &3), Launch::d1(N as u32, 64)).copy(&z2, 0, &y2, 0, N).submit().unwrap();
    }
    let want: Vec<u32> = xs().iter().map(|x| 3 * runs * x).collect();
    assert_eq!(read(&mut q, &y), want);
    assert_eq!(read(&mut q, &z), want);
    assert_eq!(read(&mut q, &y2), want);
    assert_eq!(read(&mut q, &z2), want);
    q.finish(LONG).unwrap();
}

#[test]
fn set_arg_and_set_buffer_reach_the_next_submission() {
    let (dev, mut q, k) = cpu();
    let (x, x2) = (Buffer::<u32>::new(&dev, N).unwrap(), Buffer::<u32>::new(&dev, N).unwrap());
    let (y, yb) = (Buffer::<u32>::zeroed(&dev, N).unwrap(), Buffer::<u32>::zeroed(&dev, N).unwrap());
    upload(&mut q, &x, xs());
    upload(&mut q, &x2, vec![1; N]);
    let (graph, op) = q.capture(|c| c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64))).unwrap();
    let mut exec = graph.instantiate().unwrap();
    drop(graph); // the exec stays valid
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &y), xs());
    // A new value: y += 5x.
    exec.set_arg(op, 2, Arg::value(&5u32)).unwrap();
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &y), xs().iter().map(|x| 6 * x).collect::<Vec<_>>());
    // A new buffer argument: y += 5 * x2.
    exec.set_arg(op, 0, Arg::read(&x2)).unwrap();
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &y), xs().iter().map(|x| 6 * x + 5).collect::<Vec<_>>());
    // Every use of y rebound: yb += 5 * x2, y unchanged.
    exec.set_buffer(&y, &yb).unwrap();
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &yb), vec![5; N]);
    assert_eq!(read(&mut q, &y), xs().iter().map(|x| 6 * x + 5).collect::<Vec<_>>());
    q.finish(LONG).unwrap();
}

#[test]
fn refused_changes_are_errors_and_change_nothing() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::new(&dev, N).unwrap();
    let y = Buffer::<u32>::zeroed(&dev, N).unwrap();
    let wide = Buffer::<u64>::new(&dev, N).unwrap();
    let small = Buffer::<u32>::new(&dev, N / 2).unwrap();
    let s = Signal::new(0).unwrap();
    upload(&mut q, &x, xs());
    let (graph, op) = q.capture(|c| c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64))).unwrap();
    let (other, sig_op) = q.capture(|c| c.signal(&s, 1)).unwrap();
    let mut exec = graph.instantiate().unwrap();
    let e = exec.set_arg(op, 0, Arg::read(&wide)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(e.message.contains("element type"), "{}", e.message);
    let e = exec.set_arg(op, 2, Arg::read(&x)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(e.message.contains("between buffer and value"), "{}", e.message);
    let e = exec.set_arg(op, 3, Arg::value(&1u32)).unwrap_err();
    assert!(e.message.contains("no argument 3"), "{}", e.message);
    // libdevq refuses a value of another size: the table is put back.
    let e = exec.set_arg(op, 2, Arg::value(&7u64)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(!e.message.is_empty());
    let e = exec.set_buffer(&y, &small).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(!e.message.is_empty());
    let e = exec.set_value(sig_op, 2, 1).unwrap_err();
    assert!(e.message.contains("another graph"), "{}", e.message);
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &y), xs());
    // The signal graph's own exec takes its op.
    let mut other = other.instantiate().unwrap();
    other.set_value(sig_op, 4, 0).unwrap();
    other.submit(&mut q).unwrap();
    s.wait(4, LONG).unwrap();
    q.finish(LONG).unwrap();
}

#[test]
fn a_failing_submission_fails_its_signal_and_the_next_one_runs() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::new(&dev, N).unwrap();
    let y = Buffer::<u32>::zeroed(&dev, N).unwrap();
    let done = Signal::new(0).unwrap();
    upload(&mut q, &x, xs());
    let (graph, sig) = q
        .capture(|c| {
            c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64));
            c.signal(&done, 1)
        })
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.set_value(sig, 1, 1).unwrap(); // 1, 2, 3 ...
    exec.submit(&mut q).unwrap();
    done.wait(1, LONG).unwrap();
    let mut bad = xs();
    bad[100] = 0;
    upload(&mut q, &x, bad);
    exec.submit(&mut q).unwrap();
    let e = done.wait(2, LONG).unwrap_err();
    assert_eq!(e.errno, errno::ERANGE, "{}", e.message);
    let e = q.finish(LONG).unwrap_err();
    assert_eq!(e.errno, errno::ERANGE, "{}", e.message);
    assert_eq!(y.status().unwrap_err().errno, errno::ERANGE);
    // Rewrite the inputs: the same exec runs normally again.
    upload(&mut q, &x, xs());
    upload(&mut q, &y, vec![0; N]);
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &y), xs());
    q.finish(LONG).unwrap();
    y.status().unwrap();
}

#[test]
fn dropping_an_exec_with_submissions_in_flight() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::new(&dev, N).unwrap();
    let y = Buffer::<u32>::zeroed(&dev, N).unwrap();
    let gate = Signal::new(0).unwrap();
    upload(&mut q, &x, xs());
    let (graph, _) = q
        .capture(|c| {
            c.wait(&gate, 1);
            c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64));
        })
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    for _ in 0..5 {
        exec.submit(&mut q).unwrap();
    }
    // Nothing ran yet: every submission waits for the gate.
    drop(exec);
    drop(graph);
    drop(k);
    gate.set(1).unwrap();
    assert_eq!(read(&mut q, &y), xs().iter().map(|x| 5 * x).collect::<Vec<_>>());
    q.finish(LONG).unwrap();
}

#[test]
fn capture_errors_leave_the_queue_usable() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::zeroed(&dev, N).unwrap();
    // Recorded and not submitted: no capture.
    q.fill(&x, 0, N, 1);
    let e = q.capture(|c| c.barrier()).unwrap_err();
    assert_eq!(e.errno, errno::EBUSY, "{}", e.message);
    q.submit().unwrap();
    // A recording error ends the capture with it, and no graph.
    let e = q.capture(|c| c.copy(&x, 0, &x, N - 1, 2)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(e.message.contains("capture discarded"), "{}", e.message);
    let e = q.capture(|c| c.fill(&x, 0, 0, 1)).unwrap_err();
    assert!(e.message.contains("0 elements"), "{}", e.message);
    // A panicking closure leaves capture mode.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = q.capture(|c| {
            c.barrier();
            panic!("in capture")
        });
    }));
    assert!(r.is_err());
    // A graph submission needs the queue's open batch submitted first.
    let (graph, _) = q.capture(|c| c.fill(&x, 0, N, 0)).unwrap();
    let mut exec = graph.instantiate().unwrap();
    q.fill(&x, 0, N, 2);
    let e = exec.submit(&mut q).unwrap_err();
    assert_eq!(e.errno, errno::EBUSY, "{}", e.message);
    q.submit().unwrap();
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &x), vec![0; N]);
    // A freed buffer: the graph can no longer be instantiated.
    let y = Buffer::<u32>::zeroed(&dev, N).unwrap();
    let (g2, _) = q.capture(|c| c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64))).unwrap();
    drop(y);
    q.finish(LONG).unwrap();
    assert_eq!(g2.instantiate().unwrap_err().errno, errno::EINVAL);
    q.finish(LONG).unwrap();
}

devq::cpu_kernel! {
    /// Panics: the launch fails with EFAULT, nothing unwinds into C.
    fn panics(_g: &Group, _args: &Args) -> KernelResult {
        panic!("a graph kernel panicked")
    }
}

#[test]
fn a_panicking_graph_kernel_fails_its_submission_with_efault() {
    let (dev, mut q, _) = cpu();
    let k = Kernel::cpu(&dev, &panics).unwrap();
    let done = Signal::new(0).unwrap();
    let (graph, _) = q
        .capture(|c| {
            c.exec(&k, &[], Launch::d1(1, 1));
            c.signal(&done, 1)
        })
        .unwrap();
    graph.instantiate().unwrap().submit(&mut q).unwrap();
    assert_eq!(done.wait(1, LONG).unwrap_err().errno, errno::EFAULT);
    assert_eq!(q.finish(LONG).unwrap_err().errno, errno::EFAULT);
}

#[test]
fn execs_of_one_graph_run_independently_on_their_own_threads_and_queues() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::new(&dev, N).unwrap();
    let y = Buffer::<u32>::zeroed(&dev, N).unwrap();
    upload(&mut q, &x, xs());
    let (graph, op) = q.capture(|c| c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64))).unwrap();
    let runs = 40u32;
    let outs: Vec<Vec<u32>> = std::thread::scope(|s| {
        let hs: Vec<_> = (1..=4u32)
            .map(|t| {
                let (graph, dev, y) = (&graph, &dev, &y);
                s.spawn(move || {
                    let mut q = Queue::new(dev).unwrap();
                    let mine = Buffer::<u32>::zeroed(dev, N).unwrap();
                    let mut exec = graph.instantiate().unwrap();
                    exec.set_buffer(y, &mine).unwrap();
                    exec.set_arg(op, 2, Arg::value(&t)).unwrap();
                    for _ in 0..runs {
                        exec.submit(&mut q).unwrap();
                    }
                    drop(exec);
                    read(&mut q, &mine)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, out) in (1..=4u32).zip(outs) {
        assert_eq!(out, xs().iter().map(|x| t * runs * x).collect::<Vec<_>>(), "thread {}", t);
    }
    assert_eq!(read(&mut q, &y), vec![0; N]);
    q.finish(LONG).unwrap();
}

#[test]
fn set_arg_with_a_slice_moves_the_range_the_kernel_sees() {
    let (dev, mut q, k) = cpu();
    let x = Buffer::<u32>::new(&dev, N).unwrap();
    let big = Buffer::<u32>::new(&dev, 2 * N).unwrap();
    let y = Buffer::<u32>::zeroed(&dev, N).unwrap();
    upload(&mut q, &x, xs());
    upload(&mut q, &big, (0..2 * N as u32).map(|i| if (i as usize) < N { 1 } else { 1000 + i }).collect::<Vec<_>>());
    let (graph, op) = q.capture(|c| c.exec(&k, &args(&x, &y, &1), Launch::d1(N as u32, 64))).unwrap();
    let mut exec = graph.instantiate().unwrap();
    // The second half of big: its offset reaches the kernel through the
    // argument table, not through the C argument.
    exec.set_arg(op, 0, Arg::read(big.slice(N..))).unwrap();
    exec.submit(&mut q).unwrap();
    assert_eq!(read(&mut q, &y), (N as u32..2 * N as u32).map(|i| 1000 + i).collect::<Vec<_>>());
    q.finish(LONG).unwrap();
}
