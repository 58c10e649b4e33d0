// SPDX-License-Identifier: MIT
//! An all_reduce over the launcher's world, from Rust: run on 2 ranks
//! with `mpirun -np 2 target/debug/examples/channel_all_reduce` (check.sh
//! does when mpirun and the devq-mpi engine are there).  Each rank
//! contributes `(rank + 1) * i`; every rank checks the sum, rank 0's
//! broadcast and its predecessor's token (one ring step of send/recv),
//! and prints one line.
use devq::{Buffer, Channel, Device, Queue, Reduce};
use std::time::Duration;

const N: usize = 4096;

fn main() -> devq::Result<()> {
    let dev = Device::open("cpu")?;
    let mut ch = Channel::world(&dev)?;
    ch.set_timeout(Duration::from_secs(30))?;
    let (rank, size) = (ch.rank(), ch.size());
    let mut q = Queue::new(&dev)?;
    let src = Buffer::<f32>::new(&dev, N)?;
    let sum = Buffer::<f32>::new(&dev, N)?;
    let mine: Vec<f32> = (0..N).map(|i| ((rank + 1) * i) as f32).collect();
    let mut got = vec![0f32; N];
    let mut root = vec![0i64; 8];
    let mut from_prev = vec![0u32; 4];
    let bc = Buffer::<i64>::new(&dev, 8)?;
    let (out, inbox) = (Buffer::<u32>::new(&dev, 4)?, Buffer::<u32>::new(&dev, 4)?);
    let seed: Vec<i64> = (0..8).map(|i| if rank == 0 { 100 + i } else { -1 }).collect();
    let token: Vec<u32> = vec![rank as u32 + 10; 4];
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    devq::scope(|s| {
        let sq = &mut s.on(&mut q);
        sq.write(&src, 0, &mine)
            .write(&bc, 0, &seed)
            .write(&out, 0, &token)
            .all_reduce::<f32>(&mut ch, &sum, 0, &src, 0, N, Reduce::Sum)
            .broadcast::<i64>(&mut ch, &bc, 0, 8, 0);
        // One ring step: even ranks send first, odd ranks receive first.
        if rank % 2 == 0 {
            sq.send::<u32>(&mut ch, &out, 0, 4, next as i32).recv::<u32>(&mut ch, &inbox, 0, 4, prev as i32);
        } else {
            sq.recv::<u32>(&mut ch, &inbox, 0, 4, prev as i32).send::<u32>(&mut ch, &out, 0, 4, next as i32);
        }
        sq.read(&mut got, &sum, 0).read(&mut root, &bc, 0).read(&mut from_prev, &inbox, 0).submit()
    })?;
    let factor = (size * (size + 1) / 2) as f32;
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, factor * i as f32, "rank {}: element {}", rank, i);
    }
    assert_eq!(root, (100..108).collect::<Vec<i64>>(), "rank {}: broadcast", rank);
    assert_eq!(from_prev, vec![prev as u32 + 10; 4], "rank {}: send/recv", rank);
    println!("rank {} of {}: all_reduce, broadcast and send/recv ok (sum[1] = {})", rank, size, got[1]);
    Ok(())
}
