// SPDX-License-Identifier: MIT
//! Typed buffers and slices, owned non-blocking transfers, futures, and
//! the small guarantees: zero-length transfers are no-ops, zeroed buffers,
//! finish from several threads, scope ordering across lent queues.
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelResult};
use devq::{errno, Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(10);

fn cpu() -> Device {
    Device::open("cpu").expect("cpu device")
}

devq::cpu_kernel! {
    /// y[i] = a * x[i] + y[i] on plain slices.
    fn t_saxpy(g: &Group, args: &Args) -> KernelResult {
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
    /// Adds value 1 to every element of the (atomic) view of argument 0.
    fn t_add(g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<u32>(0)?;
        let d: u32 = args.value(1)?;
        for i in g.items(0) {
            x.set(i, x.get(i) + d);
        }
        Ok(())
    }
}

devq::cpu_kernel! {
    /// Asks for a read-only slice of argument 0 (refused when argument 1,
    /// written, overlaps it).
    fn t_slice_probe(_g: &Group, args: &Args) -> KernelResult {
        let _x: &[u32] = args.slice(0)?;
        Ok(())
    }
}

devq::cpu_kernel! {
    /// Takes argument 0's chunk twice: the second is refused.
    fn t_chunk_twice(_g: &Group, args: &Args) -> KernelResult {
        let _a: &mut [u32] = args.chunk_mut(0)?;
        let _b: &mut [u32] = args.chunk_mut(0)?;
        Ok(())
    }
}

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
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

fn exec_status(dev: &Device, k: &Kernel, args: &[Arg<'_>], launch: Launch) -> devq::Result<()> {
    let mut q = Queue::new(dev)?;
    q.exec(k, args, launch).submit()?;
    q.finish(LONG)
}

#[test]
fn lengths_are_elements_and_slices_address_elements() {
    let dev = cpu();
    let b = Buffer::<u64>::new(&dev, 10).unwrap();
    assert_eq!(b.len(), 10);
    assert_eq!(b.size(), 80);
    assert_eq!(b.slice(2..5).len(), 3);
    assert_eq!(b.slice(2..5).start(), 2);
    assert_eq!(b.slice(..).len(), 10);
    assert_eq!(b.try_slice(8..11).unwrap_err().errno, errno::EINVAL);
    assert!(std::panic::catch_unwind(|| b.slice(11..)).is_err(), "out of range panics as slice indexing does");
    let mut q = Queue::new(&dev).unwrap();
    q.upload(&b, 0, (0..10u64).collect::<Vec<_>>());
    // Elements 6..8 <- elements 0..2 of the same buffer.
    q.copy_slice(b.slice(6..8), b.slice(0..2));
    let out = q.readback(&b);
    q.submit().unwrap();
    assert_eq!(block_on(out).unwrap(), vec![0, 1, 2, 3, 4, 5, 0, 1, 8, 9]);
    // Mismatched lengths are a recording error naming both.
    let e = q.copy_slice(b.slice(0..2), b.slice(0..3)).submit().unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(e.message.contains("2 elements") && e.message.contains("3"), "{}", e.message);
}

#[test]
fn a_slice_is_a_kernel_argument_and_the_kernel_sees_only_it() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &t_add).unwrap();
    let b = Buffer::<u32>::zeroed(&dev, 16).unwrap();
    let mut q = Queue::new(&dev).unwrap();
    q.exec(&k, &[Arg::read_write(b.slice(4..8)), Arg::value(&7u32)], Launch::d1(4, 4));
    let out = q.readback(&b);
    q.submit().unwrap();
    let v = out.wait_owned(LONG);
    let want: Vec<u32> = (0..16).map(|i| if (4..8).contains(&i) { 7 } else { 0 }).collect();
    assert_eq!(v, want);
    // One past the slice is out of range for the kernel: the exec fails.
    let e = exec_status(&dev, &k, &[Arg::read_write(b.slice(4..8)), Arg::value(&1u32)], Launch::d1(5, 5)).unwrap_err();
    assert_eq!(e.errno, errno::EFAULT);
}

/// Pending::wait in one call, for the tests.
trait WaitOwned<T> {
    fn wait_owned(self, t: Duration) -> Vec<T>;
}
impl<T: devq::Pod> WaitOwned<T> for devq::Pending<T> {
    fn wait_owned(mut self, t: Duration) -> Vec<T> {
        self.wait(t).unwrap()
    }
}

#[test]
fn a_kernel_refuses_a_buffer_of_another_element_type() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &t_add).unwrap();
    let wrong = Buffer::<f32>::zeroed(&dev, 4).unwrap();
    let e = exec_status(&dev, &k, &[Arg::read_write(&wrong), Arg::value(&1u32)], Launch::d1(4, 4)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    // Bytes are untyped: any kernel type may view them.
    let bytes = Buffer::<u8>::zeroed(&dev, 16).unwrap();
    exec_status(&dev, &k, &[Arg::read_write(&bytes), Arg::value(&1u32)], Launch::d1(4, 4)).unwrap();
}

#[test]
fn plain_slices_only_where_sound() {
    let dev = cpu();
    let saxpy = Kernel::cpu(&dev, &t_saxpy).unwrap();
    let n = 4096usize;
    let x = Buffer::<f32>::new(&dev, n).unwrap();
    let y = Buffer::<f32>::zeroed(&dev, n).unwrap();
    let mut q = Queue::new(&dev).unwrap();
    q.upload(&x, 0, (0..n).map(|i| i as f32).collect::<Vec<_>>());
    q.exec(&saxpy, &[Arg::read(&x), Arg::chunks(&y), Arg::value(&2.0f32)], Launch::d1(n as u32, 256));
    let out = q.readback(&y);
    q.submit().unwrap();
    let v = out.wait_owned(LONG);
    assert!(v.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));

    // A read slice overlapped by a written argument: refused.
    let probe = Kernel::cpu(&dev, &t_slice_probe).unwrap();
    // (A fresh buffer per case: a failed exec fails the buffers it writes.)
    let u = || Buffer::<u32>::zeroed(&dev, 8).unwrap();
    let u1 = u();
    let e = exec_status(&dev, &probe, &[Arg::read(u1.slice(0..4)), Arg::write(u1.slice(2..6))], Launch::d1(1, 1)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    // Disjoint ranges of one buffer: fine.
    let u2 = u();
    exec_status(&dev, &probe, &[Arg::read(u2.slice(0..4)), Arg::write(u2.slice(4..8))], Launch::d1(1, 1)).unwrap();
    // A slice of an argument passed ReadWrite: refused (other groups write it).
    let e = exec_status(&dev, &probe, &[Arg::read_write(&u())], Launch::d1(1, 1)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    // chunk_mut needs Arg::chunks, a 1-D launch, no overlap, and is taken once.
    let e = exec_status(&dev, &saxpy, &[Arg::read(&x), Arg::read_write(&y), Arg::value(&1.0f32)], Launch::d1(n as u32, 256)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    let e = exec_status(&dev, &saxpy, &[Arg::read(&y), Arg::chunks(&y), Arg::value(&1.0f32)], Launch::d1(n as u32, 256)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL, "chunks overlapping another argument");
    let twice = Kernel::cpu(&dev, &t_chunk_twice).unwrap();
    let e = exec_status(&dev, &twice, &[Arg::chunks(&u())], Launch::d1(8, 4)).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    let (x2, y2) = (Buffer::<f32>::zeroed(&dev, n).unwrap(), Buffer::<f32>::zeroed(&dev, n).unwrap());
    let e = exec_status(&dev, &saxpy, &[Arg::read(&x2), Arg::chunks(&y2), Arg::value(&1.0f32)], Launch::d2([64, 64], [8, 8])).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL, "2-D launch");
}

#[test]
fn owned_uploads_and_readbacks_pipeline_without_blocking() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &t_add).unwrap();
    let mut q = Queue::new(&dev).unwrap();
    let bufs = [Buffer::<u32>::new(&dev, 256).unwrap(), Buffer::<u32>::new(&dev, 256).unwrap()];
    let gate = Signal::new(0).unwrap();
    // Nothing runs before the gate opens: every call below returns while
    // the work is pending, so recording never waits for execution.
    q.wait(&gate, 1);
    let mut pending = Vec::new();
    for it in 0..8u32 {
        let b = &bufs[it as usize % 2];
        q.upload(b, 0, vec![it; 256].into_boxed_slice())
            .exec(&k, &[Arg::read_write(b), Arg::value(&100u32)], Launch::d1(256, 64));
        pending.push(q.readback(b.slice(250..)));
        q.submit().unwrap();
    }
    assert!(pending.iter().all(|p| !p.is_ready()), "nothing ran before the gate");
    assert_eq!(pending[0].try_take().unwrap(), None);
    gate.set(1).unwrap();
    for (it, p) in pending.into_iter().enumerate() {
        assert_eq!(p.wait_owned(LONG), vec![it as u32 + 100; 6]);
    }
}

#[test]
fn a_failed_batch_fails_its_readbacks_with_the_cause() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::<u32>::zeroed(&dev, 4).unwrap();
    // A recording error: the batch is discarded at submit; the readback
    // reports that error, it does not hang.
    q.upload(&b, 3, vec![1u32, 2]);
    let mut p = q.readback(&b);
    let e = q.submit().unwrap_err();
    let pe = p.wait(LONG).unwrap_err();
    assert_eq!(pe.errno, e.errno);
    assert!(pe.message.contains("not submitted") && pe.message.contains(&e.message), "{}", pe.message);
    assert_eq!(p.wait(LONG).unwrap_err().errno, errno::EINVAL, "taken once");
    // A failed signal waited on: the readback fails with its errno.
    let s = Signal::new(0).unwrap();
    q.wait(&s, 1);
    let p = q.readback(&b);
    q.submit().unwrap();
    s.fail(errno::EIO).unwrap();
    assert_eq!(block_on(p).unwrap_err().errno, errno::EIO);
    // A readback never submitted fails when the queue goes.
    let p = q.readback(&b);
    drop(q);
    assert_eq!(block_on(p).unwrap_err().errno, errno::ECANCELED);
}

#[test]
fn signal_futures_complete_on_value_and_on_failure() {
    let s = Arc::new(Signal::new(0).unwrap());
    let s2 = s.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        s2.set(3).unwrap();
    });
    block_on(s.reached(2)).unwrap();
    t.join().unwrap();
    block_on(s.reached(3)).unwrap();
    let f = Signal::new(0).unwrap();
    f.fail(errno::EIO).unwrap();
    assert_eq!(block_on(f.reached(1)).unwrap_err().errno, errno::EIO);
    // Many futures, each woken once: count wakes through a custom waker.
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let c = Arc::new(Count(AtomicUsize::new(0)));
    let waker = c.clone().into();
    let g = Signal::new(0).unwrap();
    let mut futs: Vec<_> = (1..=4).map(|v| Box::pin(g.reached(v))).collect();
    for f in futs.iter_mut() {
        assert!(f.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    }
    g.set(4).unwrap();
    // The notifier wakes each; wait for the four wakes, bounded.
    let deadline = std::time::Instant::now() + LONG;
    while c.0.load(Ordering::SeqCst) < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(c.0.load(Ordering::SeqCst), 4);
    for f in futs.iter_mut() {
        assert!(matches!(f.as_mut().poll(&mut Context::from_waker(&waker)), Poll::Ready(Ok(()))));
    }
}

#[test]
fn zero_length_transfers_are_no_ops() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::<u32>::zeroed(&dev, 4).unwrap();
    let empty: [u32; 0] = [];
    let mut none: [u32; 0] = [];
    devq::scope(|s| s.on(&mut q).write(&b, 4, &empty).read(&mut none, &b, 4).submit()).unwrap();
    q.upload(&b, 0, Vec::<u32>::new()).copy(&b, 0, &b, 0, 0).fill(&b, 0, 0, 7);
    let p = q.readback(b.slice(4..));
    q.submit().unwrap();
    assert_eq!(block_on(p).unwrap(), Vec::<u32>::new());
    let p = q.readback(&b);
    q.submit().unwrap();
    assert_eq!(block_on(p).unwrap(), vec![0u32; 4], "zeroed, and the no-ops wrote nothing");
}

#[test]
fn zeroed_buffers_read_zero_even_from_a_reused_pool_block() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    for round in 0..4u8 {
        let b = Buffer::<u8>::zeroed_on(&mut q, 4096, 0).unwrap();
        let p = q.readback(&b);
        q.fill(&b, 0, 4096, 0xa5 ^ round);
        q.submit().unwrap();
        assert!(block_on(p).unwrap().iter().all(|v| *v == 0), "round {}", round);
        // b is freed in stream order here, dirty: the next round may get it.
    }
}

#[test]
fn finish_from_several_threads_at_once() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let gate = Signal::new(0).unwrap();
    q.wait(&gate, 1).submit().unwrap();
    let q = &q;
    std::thread::scope(|t| {
        let hs: Vec<_> = (0..3).map(|_| t.spawn(move || q.finish(LONG))).collect();
        std::thread::sleep(Duration::from_millis(10));
        gate.set(1).unwrap();
        for h in hs {
            h.join().unwrap().unwrap();
        }
    });
}

#[test]
fn scope_submits_every_lent_queue_before_waiting_on_any() {
    // The first lent queue waits on a signal the second sets: submitting
    // and finishing in lending order would wait forever (or time out).
    let dev = cpu();
    let (mut a, mut b) = (Queue::new(&dev).unwrap(), Queue::new(&dev).unwrap());
    // (a touches nothing b writes: the tracker would order b after a.)
    let s = Signal::new(0).unwrap();
    let buf = Buffer::<u32>::zeroed(&dev, 4).unwrap();
    let other = Buffer::<u32>::zeroed(&dev, 4).unwrap();
    let mut out = [9u32; 4];
    let input = [5u32; 4];
    let (mut got_b, mut got_a) = ([0u32; 4], [9u32; 4]);
    devq::scope_with_timeout(LONG, |sc| {
        sc.on(&mut a).wait(&s, 1).read(&mut out, &buf, 0);
        sc.on(&mut b).write(&other, 0, &input).signal(&s, 1).read(&mut got_b, &other, 0);
        Ok(())
    })
    .unwrap();
    assert_eq!((out, got_b), ([0; 4], input));
    // devq::scope (no timeout) too.
    let s = Signal::new(0).unwrap();
    devq::scope(|sc| {
        sc.on(&mut a).wait(&s, 1).read(&mut got_a, &buf, 0);
        sc.on(&mut b).signal(&s, 1);
        Ok(())
    })
    .unwrap();
    assert_eq!(got_a, [0; 4]);
}

#[test]
fn resource_install_works_with_the_question_mark() {
    fn install(dev: &Device) -> devq::Result<()> {
        devq::Resource::pool(dev)?.install(dev)?;
        Ok(())
    }
    let dev = cpu();
    // Buffers are outstanding on this shared device or not; either way the
    // error, if any, is a devq::Error with its message.
    let _b = Buffer::<u8>::new(&dev, 64).unwrap();
    let e = install(&dev).unwrap_err();
    assert_eq!(e.errno, errno::EBUSY, "{}", e);
}

#[test]
fn concurrent_owned_pipelines_and_futures_stress() {
    // Bounded: 4 threads x 50 iterations, each an upload, a kernel and a
    // readback awaited as a future, two iterations in flight per thread;
    // plus futures on one signal raised by another thread.
    let dev = cpu();
    let k = Kernel::cpu(&dev, &t_add).unwrap();
    let s = Signal::new(0).unwrap();
    std::thread::scope(|t| {
        for th in 0..4u32 {
            let (dev, k) = (&dev, &k);
            t.spawn(move || {
                let mut q = Queue::new(dev).unwrap();
                let bufs = [Buffer::<u32>::new(dev, 64).unwrap(), Buffer::<u32>::new(dev, 64).unwrap()];
                let mut prev: Option<(u32, devq::Pending<u32>)> = None;
                for it in 0..50u32 {
                    let b = &bufs[it as usize % 2];
                    q.upload(b, 0, vec![it * 10 + th; 64]).exec(k, &[Arg::read_write(b), Arg::value(&1u32)], Launch::d1(64, 16));
                    let p = q.readback(b.slice(60..));
                    q.submit().unwrap();
                    if let Some((pit, pp)) = prev.take() {
                        assert_eq!(block_on(pp).unwrap(), vec![pit * 10 + th + 1; 4], "thread {} iteration {}", th, pit);
                    }
                    prev = Some((it, p));
                }
                let (pit, pp) = prev.unwrap();
                assert_eq!(block_on(pp).unwrap(), vec![pit * 10 + th + 1; 4]);
            });
        }
        let s = &s;
        // Each waiter awaits 25 values in turn while the main thread raises
        // the signal through them.
        let waiters: Vec<_> = (0..4u64).map(|w| t.spawn(move || (1..=25u64).all(|v| block_on(s.reached(v * 4 - w)).is_ok()))).collect();
        for v in 1..=100u64 {
            s.set(v).unwrap();
        }
        for w in waiters {
            assert!(w.join().unwrap());
        }
    });
}
