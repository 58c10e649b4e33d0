// SPDX-License-Identifier: MIT
//! Every path from C into Rust, driven with panicking and overflowing
//! inputs: kernel entries (a panicking body, a payload whose drop panics,
//! arithmetic overflow, every KernelError value), host_fn closures, notify
//! callbacks and future wakers.  The process survives each (a panic that
//! unwound into C would abort it), and the op fails with a message.
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelError, KernelResult};
use devq::{errno, Arg, Buffer, Device, Kernel, Launch, Queue, Signal};
use std::sync::{mpsc, Arc};
use std::task::{Context, Wake};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(10);

fn cpu() -> Device {
    Device::open("cpu").expect("cpu device")
}

/// A panic payload whose drop panics again.
struct Bomb;
impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("Bomb dropped");
    }
}

devq::cpu_kernel! {
    /// Returns KernelError(value 0).
    fn p_err(_g: &Group, args: &Args) -> KernelResult {
        Err(KernelError(args.value::<i32>(0)?))
    }
}

devq::cpu_kernel! {
    /// Panics with a message naming value 0.
    fn p_panic(_g: &Group, args: &Args) -> KernelResult {
        let v: u32 = args.value(0)?;
        panic!("kernel body gave up at {}", v);
    }
}

devq::cpu_kernel! {
    /// Panics with a payload whose drop panics.
    fn p_bomb(_g: &Group, _args: &Args) -> KernelResult {
        std::panic::panic_any(Bomb)
    }
}

devq::cpu_kernel! {
    /// i32::MAX + value 0: overflows (a panic in debug builds, wrapping in
    /// release); either way the process lives.
    fn p_overflow(_g: &Group, args: &Args) -> KernelResult {
        let v: i32 = args.value(0)?;
        let r = i32::MAX + v;
        Err(KernelError(r))
    }
}

fn run(dev: &Device, k: &Kernel, args: &[Arg<'_>]) -> devq::Error {
    let mut q = Queue::new(dev).unwrap();
    q.exec(k, args, Launch::d1(4, 1)).submit().unwrap();
    q.finish(LONG).expect_err("the exec must fail")
}

#[test]
fn every_kernel_error_value_fails_the_exec_and_never_aborts() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &p_err).unwrap();
    for (v, want) in [
        (i32::MIN, errno::EIO),
        (i32::MIN + 1, errno::EIO),
        (-1, errno::EIO),
        (0, errno::EIO),
        (4096, errno::EIO),
        (i32::MAX, errno::EIO),
        (errno::ENOMEM, errno::ENOMEM),
        (1, 1),
    ] {
        let e = run(&dev, &k, &[Arg::value(&v)]);
        assert_eq!(e.errno, want, "KernelError({}): {}", v, e);
        if want == errno::EIO {
            assert!(e.message.contains(&format!("KernelError({})", v)), "the message names the value: {}", e.message);
        }
        assert!(e.message.contains("'p_err'"), "the message names the kernel: {}", e.message);
    }
}

#[test]
fn a_panicking_kernel_fails_with_efault_and_its_message() {
    let dev = cpu();
    let k = Kernel::cpu(&dev, &p_panic).unwrap();
    let e = run(&dev, &k, &[Arg::value(&42u32)]);
    assert_eq!(e.errno, errno::EFAULT);
    assert!(e.message.contains("kernel body gave up at 42"), "{}", e.message);
    let bomb = Kernel::cpu(&dev, &p_bomb).unwrap();
    assert_eq!(run(&dev, &bomb, &[]).errno, errno::EFAULT);
    let over = Kernel::cpu(&dev, &p_overflow).unwrap();
    let e = run(&dev, &over, &[Arg::value(&1i32)]);
    assert!(e.errno == errno::EFAULT || e.errno == errno::EIO, "{}", e);
    // Bad arguments: the wrong value size, a missing argument.
    assert_eq!(run(&dev, &k, &[Arg::value(&1u8)]).errno, errno::EINVAL);
    assert_eq!(run(&dev, &k, &[]).errno, errno::EINVAL);
    // The process and the device still work.
    let b = Buffer::<u32>::zeroed(&dev, 4).unwrap();
    let mut q = Queue::new(&dev).unwrap();
    let mut p = q.upload(&b, 0, vec![1u32, 2, 3, 4]).readback(&b);
    q.submit().unwrap();
    assert_eq!(p.wait(LONG).unwrap(), vec![1, 2, 3, 4]);
}

#[test]
fn a_panicking_host_fn_is_contained_and_later_ops_run() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let after = Signal::new(0).unwrap();
    q.host_fn(|| panic!("host_fn gave up"));
    q.host_fn(|| std::panic::panic_any(Bomb));
    q.signal(&after, 1).submit().unwrap();
    q.finish(LONG).unwrap();
    assert_eq!(after.value(), 1);
}

#[test]
fn a_panicking_notify_callback_and_waker_are_contained() {
    let s = Signal::new(0).unwrap();
    let (tx, rx) = mpsc::channel();
    let _n1 = s.notify(1, |_| panic!("notify gave up")).unwrap();
    let _n2 = s.notify(1, |_| std::panic::panic_any(Bomb)).unwrap();
    let _n3 = s.notify(1, move |r| tx.send(r.is_ok()).unwrap()).unwrap();
    s.set(1).unwrap();
    assert_eq!(rx.recv_timeout(LONG), Ok(true), "the notifier thread survived the panics");
    // A signal failed with something that is not an errno, and i32::MIN.
    let f = Signal::new(0).unwrap();
    assert_eq!(f.fail(i32::MIN).unwrap_err().errno, errno::EINVAL);
    match f.fail(100_000) {
        Err(e) => assert_eq!(e.errno, errno::EINVAL, "{}", e),
        Ok(()) => {
            let (tx, rx) = mpsc::channel();
            let _n = f.notify(1, move |r| tx.send(r.map_err(|e| e.errno)).unwrap()).unwrap();
            assert!(rx.recv_timeout(LONG).unwrap().is_err());
        }
    }
    // A waker that panics when the notifier wakes it.
    struct Angry;
    impl Wake for Angry {
        fn wake(self: Arc<Self>) {
            panic!("waker gave up");
        }
    }
    let g = Signal::new(0).unwrap();
    let waker = Arc::new(Angry).into();
    let mut fut = Box::pin(g.reached(1));
    assert!(std::future::Future::poll(fut.as_mut(), &mut Context::from_waker(&waker)).is_pending());
    g.set(1).unwrap();
    let (tx, rx) = mpsc::channel();
    let _n = g.notify(1, move |_| tx.send(()).unwrap()).unwrap();
    rx.recv_timeout(LONG).unwrap();
}

#[test]
fn blocking_waits_inside_callbacks_are_edeadlk_not_hangs() {
    let dev = cpu();
    let mut q = Queue::new(&dev).unwrap();
    let later = Arc::new(Signal::new(0).unwrap());
    let (tx, rx) = mpsc::channel();
    let (l, t) = (later.clone(), tx.clone());
    // The host_fn waits for a signal set only by an op after it: it would
    // never return.
    q.host_fn(move || {
        let r = l.wait(1, Duration::MAX);
        let poll = l.wait(1, Duration::ZERO);
        t.send((r.map_err(|e| (e.errno, e.message)), poll.map_err(|e| e.errno))).unwrap();
    });
    q.signal(&later, 1).submit().unwrap();
    let (r, poll) = rx.recv_timeout(LONG).unwrap();
    let (code, msg) = r.unwrap_err();
    assert_eq!(code, errno::EDEADLK);
    assert!(msg.contains("host_fn"), "{}", msg);
    assert_eq!(poll, Err(errno::ETIMEDOUT), "a poll is allowed");
    q.finish(LONG).unwrap();
    // A notify callback that blocks.
    let s = Arc::new(Signal::new(0).unwrap());
    let s2 = s.clone();
    let _n = s.notify(1, move |_| tx.send((s2.wait(2, LONG).map_err(|e| (e.errno, e.message)), Ok(()))).unwrap()).unwrap();
    s.set(1).unwrap();
    assert_eq!(rx.recv_timeout(LONG).unwrap().0.unwrap_err().0, errno::EDEADLK);
}
