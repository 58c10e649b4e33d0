// SPDX-License-Identifier: MIT
//! svod-device's timeline signal, ported: two parties take turns on one
//! signal, each waiting for the other's value before raising it (the
//! host-side ping-pong of svod's CpuTimelineSignal tests), then the same
//! with a device queue as the second party, then the failure and timeout
//! paths a waiter must see.
#![forbid(unsafe_code)]
use devq::{errno, Device, Queue, Signal};
use std::time::Duration;

const ROUNDS: u64 = 200;
const PATIENCE: Duration = Duration::from_secs(10);

/// Host thread "ping" sets odd values, host thread "pong" even ones.
fn host_ping_pong() -> devq::Result<u64> {
    let s = Signal::new(0)?;
    std::thread::scope(|t| {
        let pong = t.spawn(|| -> devq::Result<()> {
            for v in (2..=2 * ROUNDS).step_by(2) {
                s.wait(v - 1, PATIENCE)?;
                s.set(v)?;
            }
            Ok(())
        });
        for v in (1..2 * ROUNDS).step_by(2) {
            s.wait(v - 1, PATIENCE)?;
            s.set(v)?;
        }
        pong.join().expect("pong thread panicked")
    })?;
    Ok(s.value())
}

/// The host pings; a queue pongs: each batch waits for the host's odd value
/// and signals the next even one.  All batches are submitted up front
/// (wait-before-signal is legal: libdevq defers them).
fn device_ping_pong() -> devq::Result<u64> {
    let dev = Device::open("cpu")?;
    let mut q = Queue::new(&dev)?;
    let s = Signal::new(0)?;
    for v in (2..=2 * ROUNDS).step_by(2) {
        q.wait(&s, v - 1).signal(&s, v).submit()?;
    }
    for v in (1..2 * ROUNDS).step_by(2) {
        s.wait(v - 1, PATIENCE)?;
        s.set(v)?;
    }
    q.finish(PATIENCE)?;
    Ok(s.value())
}

/// A waiter past a failure gets the failure, not a hang; a value nobody
/// sets times out.
fn failure_and_timeout() -> devq::Result<(devq::Error, devq::Error)> {
    let s = Signal::new(0)?;
    let timed_out = s.wait(1, Duration::from_millis(20)).unwrap_err();
    std::thread::scope(|t| {
        let waiter = t.spawn(|| s.wait(5, PATIENCE));
        s.fail(errno::EIO)?;
        Ok::<_, devq::Error>((timed_out, waiter.join().unwrap().unwrap_err()))
    })
}

#[cfg_attr(test, allow(dead_code))]
fn main() -> devq::Result<()> {
    println!("host ping-pong: signal at {}", host_ping_pong()?);
    println!("device ping-pong: signal at {}", device_ping_pong()?);
    let (t, f) = failure_and_timeout()?;
    println!("timeout: {}\nfailure: {}", t, f);
    Ok(())
}

#[test]
fn host_threads_take_turns() {
    assert_eq!(host_ping_pong().unwrap(), 2 * ROUNDS);
}

#[test]
fn a_queue_takes_turns_with_the_host() {
    assert_eq!(device_ping_pong().unwrap(), 2 * ROUNDS);
}

#[test]
fn waiters_see_failures_and_timeouts() {
    let (t, f) = failure_and_timeout().unwrap();
    assert_eq!(t.errno, errno::ETIMEDOUT);
    assert!(t.is_timeout());
    assert_eq!(f.errno, errno::EIO, "{}", f);
}
