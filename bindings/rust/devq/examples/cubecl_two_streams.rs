// SPDX-License-Identifier: MIT
//! cubecl-runtime's MultiStream, ported: two streams share a binding and
//! nobody writes a wait.  Queue A produces a buffer (slowly); queue B
//! consumes it.  devq's tracker sees B read what A wrote and inserts the
//! wait itself (cubecl's "shared bindings" case); a batch on B that uses
//! only B's own buffers gets no wait ("no shared"); and once B has synced
//! with A, reading the same buffer again needs no new wait (cubecl's
//! `last_synced` state).
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelResult};
use devq::{Arg, Buffer, Device, Kernel, Launch, Queue};
use std::time::Duration;

const N: usize = 1024;

devq::cpu_kernel! {
    /// y[i] = 2 i, late: without the inserted wait a consumer reads zeroes.
    fn produce(g: &Group, args: &Args) -> KernelResult {
        let y = args.buffer::<u32>(0)?;
        std::thread::sleep(Duration::from_millis(20));
        for i in g.items(0) {
            y.set(i, 2 * i as u32);
        }
        Ok(())
    }
}

devq::cpu_kernel! {
    /// z[i] = y[i] + 1
    fn consume(g: &Group, args: &Args) -> KernelResult {
        let y = args.buffer::<u32>(0)?;
        let z = args.buffer::<u32>(1)?;
        for i in g.items(0) {
            z.set(i, y.get(i) + 1);
        }
        Ok(())
    }
}

/// Waits the tracker inserted in each of the three cases, and the result.
struct Outcome {
    shared: u64,
    no_shared: u64,
    already_synced: u64,
    z: Vec<u32>,
}

fn inserted(dev: &Device) -> devq::Result<u64> {
    Ok(dev.stats()?.waits_inserted)
}

fn two_streams() -> devq::Result<Outcome> {
    let dev = Device::open("cpu")?;
    let mut a = Queue::new(&dev)?;
    let mut b = Queue::new(&dev)?;
    let produce_k = Kernel::cpu(&dev, &produce)?;
    let consume_k = Kernel::cpu(&dev, &consume)?;
    let y = Buffer::<u32>::new(&dev, N)?;
    let z = Buffer::<u32>::new(&dev, N)?;
    let own = Buffer::<u32>::new(&dev, N)?;
    let launch = Launch::d1(N as u32, 256);

    // B's own buffers first, so that later counts see only the sharing.
    b.fill(&own, 0, N, 0).fill(&z, 0, N, 0).submit()?;
    b.finish(Duration::from_secs(10))?;

    // no shared: B uses only buffers B wrote last.
    let before = inserted(&dev)?;
    b.exec(&consume_k, &[Arg::read(&own), Arg::write(&z)], launch).submit()?;
    b.finish(Duration::from_secs(10))?;
    let no_shared = inserted(&dev)? - before;

    // shared: A writes y, B reads it; no signal between them.
    let before = inserted(&dev)?;
    a.exec(&produce_k, &[Arg::write(&y)], launch).submit()?;
    b.exec(&consume_k, &[Arg::read(&y), Arg::write(&z)], launch).submit()?;
    let shared = inserted(&dev)? - before;

    // already synced: B reads y again; A has not written it since.
    let before = inserted(&dev)?;
    b.exec(&consume_k, &[Arg::read(&y), Arg::write(&z)], launch).submit()?;
    let already_synced = inserted(&dev)? - before;

    let mut out = vec![0u32; N];
    devq::scope(|s| s.on(&mut b).read(&mut out, &z, 0).submit())?;
    a.finish(Duration::from_secs(10))?;
    Ok(Outcome { shared, no_shared, already_synced, z: out })
}

#[cfg_attr(test, allow(dead_code))]
fn main() -> devq::Result<()> {
    let o = two_streams()?;
    println!(
        "waits inserted by the tracker: shared binding {}, no shared binding {}, already synced {}",
        o.shared, o.no_shared, o.already_synced
    );
    println!("z[10] = {} (expected 21)", o.z[10]);
    Ok(())
}

#[test]
fn the_tracker_inserts_exactly_the_needed_wait() {
    let o = two_streams().unwrap();
    assert_eq!(o.no_shared, 0, "no shared binding: no wait");
    assert_eq!(o.shared, 1, "shared binding: one wait");
    assert_eq!(o.already_synced, 0, "already synced: no new wait");
    for (i, v) in o.z.iter().enumerate() {
        assert_eq!(*v, 2 * i as u32 + 1, "element {}", i);
    }
}
