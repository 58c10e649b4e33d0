// SPDX-License-Identifier: MIT
//! morok-device's hardware queue, ported: the builder pipeline
//! `q.wait(&s, 1).exec(&k, &args, launch).signal(&s, 2).submit()?` on a
//! copy queue and a compute queue.  Chunks are uploaded on the copy queue,
//! transformed on the compute queue as each upload's signal arrives, and
//! read back on the copy queue as each kernel's signal arrives; buffers are
//! allocated in stream order on the queue that first uses them and dropped
//! while the work is still queued (freed in stream order).
#![forbid(unsafe_code)]
use devq::cpu::{Args, Group, KernelResult};
use devq::{Arg, Buffer, Device, Kernel, Launch, Queue, QueueKind, Signal};

const CHUNKS: usize = 4;
const N: usize = 4096;

devq::cpu_kernel! {
    /// y[i] = a * x[i] + b
    fn affine(g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<u32>(0)?;
        let y = args.buffer::<u32>(1)?;
        let a: u32 = args.value(2)?;
        let b: u32 = args.value(3)?;
        for i in g.items(0) {
            y.set(i, a * x.get(i) + b);
        }
        Ok(())
    }
}

fn pipeline() -> devq::Result<(Vec<Vec<u32>>, devq::Stats)> {
    let dev = Device::open("cpu")?;
    let mut copy = Queue::with_kind(&dev, QueueKind::Copy, 0)?;
    let mut compute = Queue::with_kind(&dev, QueueKind::Compute, 1)?;
    let k = Kernel::cpu(&dev, &affine)?;
    let uploaded = Signal::new(0)?;
    let computed = Signal::new(0)?;
    let inputs: Vec<Vec<u32>> = (0..CHUNKS).map(|c| (0..N as u32).map(|i| i + c as u32).collect()).collect();
    let mut outputs = vec![vec![0u32; N]; CHUNKS];
    let (a, b) = (3u32, 7u32);

    devq::scope(|s| {
        let mut cp = s.on(&mut copy);
        let mut cq = s.on(&mut compute);
        for (c, (input, output)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
            let v = c as u64 + 1;
            let x = cq.alloc::<u32>(N, 1)?;
            let y = Buffer::<u32>::new(&dev, N)?;
            cp.write(&x, 0, input).signal(&uploaded, v).submit()?;
            cq.wait(&uploaded, v)
                .exec(&k, &[Arg::read(&x), Arg::write(&y), Arg::value(&a), Arg::value(&b)], Launch::d1(N as u32, 256))
                .signal(&computed, v)
                .submit()?;
            cp.wait(&computed, v).read(output, &y, 0).submit()?;
            // x and y drop here: freed in stream order after their last use.
        }
        Ok(())
    })?;
    Ok((outputs, dev.stats()?))
}

#[cfg_attr(test, allow(dead_code))]
fn main() -> devq::Result<()> {
    let (out, st) = pipeline()?;
    println!("chunk 0: {:?}...", &out[0][..4]);
    println!("batches: {} submitted, {} completed", st.batches_submitted, st.batches_completed);
    Ok(())
}

#[test]
fn every_chunk_goes_through_the_pipeline() {
    let (out, st) = pipeline().unwrap();
    for (c, chunk) in out.iter().enumerate() {
        for (i, v) in chunk.iter().enumerate() {
            assert_eq!(*v, 3 * (i as u32 + c as u32) + 7, "chunk {} element {}", c, i);
        }
    }
    assert!(st.batches_completed >= 3 * CHUNKS as u64, "{:?}", st);
}
