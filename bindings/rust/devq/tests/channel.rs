// SPDX-License-Identifier: MIT
//! Channels without MPI: with no engine installed every channel call
//! that needs one is ENOTSUP naming the engine and the fix, the device's
//! CHANNELS bit is clear, and bad descriptors are EINVAL before any
//! engine is looked for.  (The engine path is pointed at a file that
//! does not exist, so an engine installed on this machine does not
//! change the result; every test sets the same value before the first
//! channel call of the process.)
use devq::{caps, errno, Channel, Device};

fn cpu_without_engine() -> Device {
    std::env::set_var("DEVQ_MPI_ENGINE", "/nonexistent/devq-mpi.so");
    Device::open("cpu").unwrap()
}

#[test]
fn without_an_engine_channels_are_enotsup_with_the_fix() {
    let dev = cpu_without_engine();
    assert!(!dev.info().unwrap().has(caps::CHANNELS), "CHANNELS set without an engine");
    let e = Channel::world(&dev).unwrap_err();
    assert_eq!(e.errno, errno::ENOTSUP, "{}", e);
    assert!(e.message.contains("devq_channel_create") && e.message.contains("/nonexistent/devq-mpi.so"), "{}", e);
    assert!(e.message.contains("DEVQ_MPI_ENGINE"), "the fix is not named: {}", e);
    let e = Channel::id(&dev).unwrap_err();
    assert_eq!(e.errno, errno::ENOTSUP, "{}", e);
    assert!(e.message.contains("devq_channel_id"), "{}", e);
}

#[test]
fn bad_descriptors_are_einval_naming_the_fields() {
    let dev = cpu_without_engine();
    let e = Channel::from_desc(&dev, 2, 2, None).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL, "{}", e);
    assert!(e.message.contains("rank 2 / size 2"), "{}", e);
    let e = Channel::from_desc(&dev, -1, -1, Some(&[1, 2, 3])).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL, "{}", e);
    assert!(e.message.contains("rank -1"), "{}", e);
    let e = Channel::with_id(&dev, 0, 2, &[]).unwrap_err();
    assert_eq!(e.errno, errno::EINVAL, "{}", e);
    assert!(e.message.contains("Channel::with_id") && e.message.contains("empty"), "{}", e);
}

#[test]
fn a_good_descriptor_reaches_the_engine_check() {
    let dev = cpu_without_engine();
    let e = Channel::with_id(&dev, 0, 2, &[7u8; 16]).unwrap_err();
    assert_eq!(e.errno, errno::ENOTSUP, "{}", e);
    let e = Channel::from_desc(&dev, -1, -1, None).unwrap_err();
    assert_eq!(e.errno, errno::ENOTSUP, "{}", e);
}
