// SPDX-License-Identifier: MIT
//! The safe API against the freshly built libdevq on the cpu backend: each
//! test checks a result that a wrong binding would change.
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelError, KernelResult};
use devq::{errno, Arg, Buffer, Device, Kernel, Launch, Queue, Signal, WaitMode};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(10);

fn cpu() -> Device {
    Device::open("cpu").expect("cpu device")
}

devq::cpu_kernel! {
    /// Fails with the errno in value argument 0.
    fn fail_with(_g: &Group, args: &Args) -> KernelResult {
        Err(KernelError(args.value::<i32>(0)?))
    }
}

devq::cpu_kernel! {
    /// Writes one past the end of buffer 0: the View panics, the exec fails.
    fn out_of_range(_g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<u32>(0)?;
        x.set(x.len(), 1);
        Ok(())
    }
}

devq::cpu_kernel! {
    /// Counts the work items it ran into buffer 0 (one per group item).
    fn iota(g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<u64>(0)?;
        let base: u64 = args.value(1)?;
        for i in g.items(0) {
            x.set(i, base + i as u64);
        }
        Ok(())
    }
}

/// Runs one exec on a fresh queue: the errno finish reports (0: success).
fn exec_errno(dev: &Device, k: &Kernel, args: &[Arg<'_>], launch: Launch) -> i32 {
    let mut q = Queue::new(dev).unwrap();
    q.exec(k, args, launch).submit().unwrap();
    q.finish(LONG).err().map_or(0, |e| e.errno)
}

/// The bytes of `b`, read through `q` in a scope.
fn read_back(q: &mut Queue, b: &Buffer) -> Vec<u8> {
    let mut out = vec![0u8; b.size()];
    devq::scope(|s| s.on(q).read(&mut out, b, 0).submit()).unwrap();
    out
}

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

#[test]
fn thread_safety_markers() {
    assert_send::<Queue>();
    assert_send::<Device>();
    assert_sync::<Device>();
    assert_send::<Signal>();
    assert_sync::<Signal>();
    assert_send::<Buffer>();
    assert_sync::<Buffer>();
    assert_send::<Kernel>();
    assert_sync::<Kernel>();
}

#[test]
fn device_info_and_backends() {
    let dev = cpu();
    let i = dev.info().unwrap();
    assert_eq!(i.backend, "cpu");
    assert!(i.has(devq::caps::KERNELS));
    assert!(!devq::version().is_empty());
    let r = devq::backends_report().unwrap();
    assert!(r.iter().any(|b| b.name == "cpu" && b.status == 0 && b.devices >= 1), "{:?}", r);
    // No dev.synchronize here: it reports the failures of every queue of
    // the shared cpu device, including other tests' (tests/resource.rs
    // runs it in a process of its own).
}

#[test]
fn errors_carry_errno_and_the_message_of_the_failing_call() {
    let e = Device::open("no-such-backend").unwrap_err();
    assert!(e.errno > 0);
    assert!(e.message.contains("no-such-backend"), "{}", e.message);
    let s = Signal::new(5).unwrap();
    let e = s.set(3).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL);
    assert!(!e.message.is_empty());
    assert_eq!(s.value(), 5, "a refused set leaves the value");
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn a_recording_error_is_kept_and_returned_by_submit() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::<u8>::new(&dev, 64).unwrap();
    let done = Signal::new(0).unwrap();
    // Out of range: the copy fails at record and submit discards the
    // batch, failing the signal recorded in it.
    let err = q.fill(&b, 0, 64, 1).signal(&done, 1).copy(&b, 32, &b, 0, 64).submit().unwrap_err();
    assert_eq!(err.errno, errno::EINVAL);
    assert!(err.message.contains("copy"), "message names the call: {}", err.message);
    let start = Instant::now();
    assert_eq!(done.wait(1, LONG).unwrap_err().errno, errno::EINVAL, "a discarded batch fails its signals");
    assert!(start.elapsed() < LONG / 2);
    // finish may report the discard once more (the failure model of
    // devq(7) reports a discard there like any failure); then it is gone.
    if let Err(e) = q.finish(LONG) {
        assert_eq!(e.errno, errno::EINVAL, "{}", e);
    }
    // The next batch starts clean.
    q.fill(&b, 0, 64, 2).submit().unwrap();
    q.finish(LONG).unwrap();
}

#[test]
fn a_failing_kernel_fails_finish_and_the_signals_after_it() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let k = Kernel::cpu(&dev, &fail_with).unwrap();
    let s = Signal::new(0).unwrap();
    q.exec(&k, &[Arg::value(&errno::EIO)], Launch::d1(1, 1)).signal(&s, 1).submit().unwrap();
    let e = q.finish(LONG).unwrap_err();
    assert_eq!(e.errno, errno::EIO, "{}", e);
    let w = s.wait(1, LONG).unwrap_err();
    assert_eq!(w.errno, errno::EIO);
    assert_eq!(s.status().unwrap_err().errno, errno::EIO);
}

#[test]
fn a_panicking_kernel_fails_its_exec_with_efault() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &out_of_range).unwrap();
    let b = Buffer::<u8>::new(&dev, 16).unwrap();
    assert_eq!(exec_errno(&dev, &k, &[Arg::read_write(&b)], Launch::d1(1, 1)), errno::EFAULT);
    // Writing a buffer passed as Access::Read is refused the same way.
    let fill = Kernel::cpu(&dev, &iota).unwrap();
    assert_eq!(exec_errno(&dev, &fill, &[Arg::read(&b), Arg::value(&0u64)], Launch::d1(2, 1)), errno::EFAULT);
    // The same exec with the access it needs succeeds.
    assert_eq!(exec_errno(&dev, &fill, &[Arg::write(&b), Arg::value(&0u64)], Launch::d1(2, 1)), 0);
}

#[test]
fn a_kernel_value_of_the_wrong_size_is_einval() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &iota).unwrap();
    let b = Buffer::<u8>::new(&dev, 64).unwrap();
    assert_eq!(exec_errno(&dev, &k, &[Arg::write(&b), Arg::value(&1u32)], Launch::d1(8, 8)), errno::EINVAL);
}

#[test]
fn buffers_dropped_after_recording_still_serve_the_work() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let k = Kernel::cpu(&dev, &iota).unwrap();
    let out = Buffer::new(&dev, 8 * 64).unwrap();
    let mut host = vec![0u64; 64];
    devq::scope(|s| {
        let mut sq = s.on(&mut q);
        let tmp = sq.alloc(8 * 64, 3)?;
        sq.exec(&k, &[Arg::write(&tmp), Arg::value(&100u64)], Launch::d1(64, 16));
        sq.copy(&out, 0, &tmp, 0, 8 * 64);
        drop(tmp); // freed in stream order after the copy
        drop(k);
        sq.read(&mut host, &out, 0).submit()
    })
    .unwrap();
    assert_eq!(host, (100..164).collect::<Vec<u64>>());
    dev.mem_reap().unwrap();
}

#[test]
fn notify_runs_the_closure_once_with_the_outcome() {
    let s = Signal::new(0).unwrap();
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    let _h = s.notify(2, move |r| tx.send(("reached", r)).unwrap()).unwrap();
    let h2 = s.notify(100, move |r| tx2.send(("cancelled", r)).unwrap()).unwrap();
    s.set(2).unwrap();
    let (what, r) = rx.recv_timeout(LONG).unwrap();
    assert_eq!((what, r), ("reached", Ok(())));
    assert!(h2.cancel().unwrap(), "not run yet, so cancel withdraws it");
    let (what, r) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(what, "cancelled");
    assert_eq!(r.unwrap_err().errno, errno::ECANCELED);
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "each closure runs once");
}

#[test]
fn notify_reports_a_failure() {
    let s = Signal::new(0).unwrap();
    let (tx, rx) = mpsc::channel();
    drop(s.notify(1, move |r| tx.send(r).unwrap()).unwrap()); // released: still runs
    s.fail(errno::ENODEV).unwrap();
    assert_eq!(rx.recv_timeout(LONG).unwrap().unwrap_err().errno, errno::ENODEV);
}

#[test]
fn wait_many_any_and_all() {
    let a = Signal::new(0).unwrap();
    let b = Signal::new(0).unwrap();
    b.set(4).unwrap();
    assert_eq!(Signal::wait_many(&[(&a, 1), (&b, 3)], WaitMode::Any, LONG).unwrap(), 1);
    let e = Signal::wait_many(&[(&a, 1), (&b, 3)], WaitMode::All, Duration::from_millis(10)).unwrap_err();
    assert_eq!(e.errno, errno::ETIMEDOUT);
    a.set(1).unwrap();
    Signal::wait_many(&[(&a, 1), (&b, 3)], WaitMode::All, LONG).unwrap();
}

/// Reads the eventfd until it is readable or `LONG` passes.
fn readable(f: &mut std::fs::File) -> bool {
    let start = Instant::now();
    let mut buf = [0u8; 8];
    while start.elapsed() < LONG {
        match f.read(&mut buf) {
            Ok(8) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            other => panic!("unexpected read result {:?}", other),
        }
    }
    false
}

#[test]
fn wait_fd_becomes_readable_at_the_value() {
    let s = Signal::new(0).unwrap();
    let mut f = std::fs::File::from(s.wait_fd(3).unwrap());
    let mut buf = [0u8; 8];
    assert_eq!(f.read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    s.set(3).unwrap();
    assert!(readable(&mut f));
}

#[test]
fn shared_signals_cross_an_fd() {
    let a = Signal::new_shared(1).unwrap();
    let fd = a.export_fd().unwrap();
    let b = Signal::import_fd(&fd).unwrap();
    assert_eq!(b.value(), 1);
    a.set(7).unwrap();
    b.wait(7, LONG).unwrap();
    assert!(Signal::new(0).unwrap().export_fd().is_err(), "only shared signals export");
}

#[test]
fn a_process_registers_as_a_producer_once() {
    let s = Signal::new_shared(0).unwrap();
    s.add_producer().unwrap();
    s.add_producer().unwrap();
    s.remove_producer().unwrap();
    assert!(s.remove_producer().is_err(), "not registered any more");
    assert!(Signal::new(0).unwrap().add_producer().is_err(), "only shared signals have producers");
}

#[test]
fn host_fn_runs_in_order_and_a_skipped_one_is_dropped() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    q.host_fn(move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
    .submit()
    .unwrap();
    q.finish(LONG).unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // After a failing op the host function never runs; dropping the queue
    // releases the closure (its captured Arc goes away).
    let k = Kernel::cpu(&dev, &fail_with).unwrap();
    let c = count.clone();
    q.exec(&k, &[Arg::value(&errno::EIO)], Launch::d1(1, 1))
        .host_fn(move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .submit()
        .unwrap();
    assert!(q.finish(LONG).is_err());
    drop(q);
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(Arc::strong_count(&count), 1);
}

#[test]
fn queues_move_between_threads() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::new(&dev, 16).unwrap();
    let s = Signal::new(0).unwrap();
    std::thread::scope(|t| {
        t.spawn(|| q.fill(&b, 0, 16, 9).signal(&s, 1).submit().unwrap());
    });
    s.wait(1, LONG).unwrap();
    assert_eq!(read_back(&mut q, &b), [9u8; 16]);
}

#[test]
fn barrier_and_timestamps() {
    let dev = cpu();
    let mut a = Queue::new(&dev).unwrap();
    let mut b = Queue::new(&dev).unwrap();
    let t0 = a.timestamp().unwrap();
    a.barrier();
    let t1 = a.timestamp().unwrap();
    a.submit().unwrap();
    devq::barrier(&mut [&mut a, &mut b]).unwrap();
    a.submit().unwrap();
    b.submit().unwrap();
    a.finish(LONG).unwrap();
    b.finish(LONG).unwrap();
    let d = t0.elapsed_until(&t1).unwrap();
    assert!(d < LONG);
}

#[test]
fn a_scope_waits_even_when_its_closure_fails() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::new(&dev, 4096).unwrap();
    let data = vec![5u8; 4096];
    let gate = Signal::new(0).unwrap();
    let setter = std::thread::spawn({
        let started = Instant::now();
        move || {
            std::thread::sleep(Duration::from_millis(30));
            started
        }
    });
    let r: devq::Result<()> = devq::scope(|s| {
        s.on(&mut q).write(&b, 0, &data).submit()?;
        Err(devq::Error::new(errno::EPERM, "closure gave up"))
    });
    assert_eq!(r.unwrap_err().errno, errno::EPERM);
    setter.join().unwrap();
    // Unsubmitted work is submitted and finished by the scope.
    let mut out = vec![0u8; 4096];
    devq::scope(|s| {
        s.on(&mut q).wait(&gate, 0).read(&mut out, &b, 0);
        Ok(())
    })
    .unwrap();
    assert_eq!(out, data);
}

#[test]
fn a_scope_with_a_timeout_cancels_what_is_still_pending() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::new(&dev, 64).unwrap();
    let gate = Signal::new(0).unwrap();
    let after = Signal::new(0).unwrap();
    let mut out = [7u8; 64];
    let start = Instant::now();
    let e = devq::scope_with_timeout(Duration::from_millis(50), |s| {
        // Nobody sets the gate: the read would wait for ever.
        s.on(&mut q).fill(&b, 0, 64, 1).wait(&gate, 1).read(&mut out, &b, 0).signal(&after, 1).submit()
    })
    .unwrap_err();
    assert!(start.elapsed() < LONG, "the scope returned in time");
    assert_eq!(e.errno, errno::ETIMEDOUT, "{}", e);
    assert!(e.message.contains("cancelled"), "{}", e.message);
    assert_eq!(out, [7u8; 64], "the cancelled read never ran");
    assert_eq!(after.wait(1, LONG).unwrap_err().errno, errno::ECANCELED);
    // The queue carries on, empty.
    gate.set(1).unwrap();
    q.fill(&b, 0, 64, 3).submit().unwrap();
    q.finish(LONG).unwrap();
    assert_eq!(read_back(&mut q, &b), [3u8; 64]);
}

#[test]
fn stream_ordered_allocation_and_an_explicit_free_queue() {
    let dev = cpu();
    let mut a = Queue::new(&dev).unwrap();
    let mut b = Queue::new(&dev).unwrap();
    let buf = Buffer::<u8>::on_queue(&mut a, 256, 9).unwrap();
    assert_eq!(buf.size(), 256);
    assert_eq!(buf.device_ptr() as usize % 256, 0, "allocations are 256-byte aligned");
    a.fill(&buf, 0, 256, 4).submit().unwrap();
    buf.free_on(&mut b).unwrap(); // b waits for a's fill before the free
    a.finish(LONG).unwrap();
    b.finish(LONG).unwrap();
    let other = Buffer::<u8>::new(&dev, 16).unwrap();
    assert_eq!(other.free().map_err(|e| e.errno), Ok(()));
}

#[test]
fn resource_stacks_without_installing() {
    let dev = cpu();
    let guarded = devq::Resource::guard(devq::Resource::direct(&dev).unwrap()).unwrap();
    let names: Vec<String> = std::iter::successors(Some(guarded.view()), |r| r.inner()).map(|r| r.name()).collect();
    assert_eq!(names.len(), 2, "{:?}", names);
    assert_eq!(guarded.view().bytes_outstanding(), 0);
    guarded.view().trim().unwrap();
    guarded.view().reap().unwrap();
    let e = guarded.view().usage_by_tag(1).unwrap_err();
    assert_eq!(e.errno, errno::ENOENT, "no stats decorator in the chain: {}", e);
    if !dev.info().unwrap().has(devq::caps::ASYNC_ALLOC) {
        assert_eq!(devq::Resource::native(&dev).unwrap_err().errno, errno::ENOTSUP);
    }
    let csv = std::env::temp_dir().join(format!("devq-rust-{}.csv", std::process::id()));
    let logged = devq::Resource::logging(devq::Resource::pool(&dev).unwrap(), &csv).unwrap();
    drop(logged);
    let _ = std::fs::remove_file(&csv);
}

#[test]
fn a_buffer_a_failed_kernel_would_have_written_is_failed_until_rewritten() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let fail = Kernel::cpu(&dev, &fail_with).unwrap();
    let b = Buffer::<u8>::new(&dev, 64).unwrap();
    let skipped = Buffer::<u8>::new(&dev, 64).unwrap();
    assert_eq!(b.status(), Ok(()));
    // The kernel fails; the fill after it in the batch is skipped.
    q.exec(&fail, &[Arg::value(&errno::EIO), Arg::write(&b)], Launch::d1(1, 1)).fill(&skipped, 0, 64, 1).submit().unwrap();
    assert_eq!(q.finish(LONG).unwrap_err().errno, errno::EIO);
    assert_eq!(b.status().unwrap_err().errno, errno::EIO);
    assert_eq!(skipped.status().unwrap_err().errno, errno::EIO);
    q.fill(&b, 0, 64, 0).submit().unwrap();
    q.finish(LONG).unwrap();
    assert_eq!(b.status(), Ok(()), "a write that does not read clears the failure");
}

#[test]
fn names_show_in_messages_and_bad_names_are_refused() {
    let dev = cpu();
    let s = Signal::new(3).unwrap();
    s.set_name("grads").unwrap();
    let e = s.set(3).unwrap_err();
    assert!(e.message.contains("signal \"grads\" (#"), "{}", e.message);
    let mut q = Queue::new(&dev).unwrap();
    let b = Buffer::<u8>::with_tag(&dev, 64, 5).unwrap();
    q.set_name("loader").unwrap();
    b.set_name("weights").unwrap();
    let e = q.fill(&b, 60, 8, 0).submit().unwrap_err();
    assert!(e.message.contains("buffer \"weights\" (#"), "{}", e.message);
    assert!(e.message.contains("tag 5, 64 bytes)"), "{}", e.message);
    let _ = q.finish(LONG);
    // Cleared: the number again.
    s.set_name("").unwrap();
    let e = s.set(3).unwrap_err();
    assert!(e.message.contains("signal #"), "{}", e.message);
    // Too long, a NUL, a control character.
    assert_eq!(s.set_name(&"x".repeat(64)).unwrap_err().errno, errno::EINVAL);
    s.set_name(&"x".repeat(63)).unwrap();
    assert_eq!(q.set_name("a\0b").unwrap_err().errno, errno::EINVAL);
    assert_eq!(b.set_name("two\nlines").unwrap_err().errno, errno::EINVAL);
}
