// SPDX-License-Identifier: MIT
//! A binary built without `-Wl,--export-dynamic` (this package's build.rs
//! adds only an rpath) runs cpu_kernel! kernels of a library crate it
//! links as an rlib: Kernel::cpu passes them by pointer.
use devq::{errno, Arg, Buffer, Device, Kernel, Launch, Queue};
use std::time::Duration;

#[test]
fn a_library_crates_kernel_runs_without_export_dynamic() {
    let dev = Device::open("cpu").unwrap();
    let k = Kernel::cpu(&dev, &devq_kernel_lib::double_plus_one).unwrap();
    let mut q = Queue::new(&dev).unwrap();
    let x = Buffer::<u32>::new(&dev, 1000).unwrap();
    let mut out = q
        .upload(&x, 0, (0..1000u32).collect::<Vec<_>>())
        .exec(&k, &[Arg::read_write(&x)], Launch::d1(1000, 64))
        .readback(&x);
    q.submit().unwrap();
    let out = out.wait(Duration::from_secs(10)).unwrap();
    assert!(out.iter().enumerate().all(|(i, v)| *v == 2 * i as u32 + 1), "{:?}", &out[..8]);
}

#[test]
fn its_failure_names_it() {
    let dev = Device::open("cpu").unwrap();
    let k = Kernel::cpu(&dev, &devq_kernel_lib::lib_out_of_room).unwrap();
    let mut q = Queue::new(&dev).unwrap();
    q.exec(&k, &[], Launch::d1(1, 1)).submit().unwrap();
    let e = q.finish(Duration::from_secs(10)).unwrap_err();
    assert_eq!(e.errno, errno::ERANGE, "{}", e);
    assert!(e.message.contains("'lib_out_of_room'"), "{}", e.message);
}
