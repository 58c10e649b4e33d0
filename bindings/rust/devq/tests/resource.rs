// SPDX-License-Identifier: MIT
//! A resource stack installed on a fresh device (its own process: cargo
//! runs each tests/*.rs file separately, and install needs a device with
//! nothing allocated).
#![deny(unsafe_code)]
use devq::{errno, Buffer, Device, Resource};

#[test]
fn a_budgeted_stats_stack_counts_and_limits() {
    let dev = Device::open("cpu").unwrap();
    let pool = Resource::pool(&dev).unwrap();
    assert_eq!(pool.view().inner().map(|r| r.name()), None, "a base wraps nothing");
    let stats = Resource::stats(pool).unwrap();
    let top = Resource::budget(stats, 1 << 20).unwrap();
    let chain: Vec<String> =
        std::iter::successors(Some(top.view()), |r| r.inner()).map(|r| r.name()).collect();
    assert_eq!(chain.len(), 3, "{:?}", chain);
    top.install(&dev).map_err(|(e, _)| e).unwrap();

    let b = Buffer::<u8>::with_tag(&dev, 4096, 7).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: no install happens while `r` is used (this test is alone).
    let used = unsafe { devq::device_resource(&dev) }.usage_by_tag(7).unwrap();
    assert_eq!(used.current, 4096);
    assert_eq!(dev.mem_stats().unwrap().bytes_outstanding, 4096);

    let e = Buffer::<u8>::new(&dev, 2 << 20).unwrap_err();
    assert_eq!(e.errno, errno::ENOMEM);
    assert!(e.message.contains("budget"), "{}", e.message);
    drop(b);
    dev.synchronize(std::time::Duration::from_secs(10)).unwrap();
    dev.mem_reap().unwrap();
    assert_eq!(dev.mem_stats().unwrap().bytes_outstanding, 0);
}
