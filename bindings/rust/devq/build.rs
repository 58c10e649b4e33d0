// SPDX-License-Identifier: MIT
//! Link settings for this crate's own tests and examples: an rpath to the
//! libdevq devq-sys found.  No --export-dynamic: `cpu_kernel!` kernels
//! reach libdevq by pointer (`devq_kernel_load_fn`), and the tests and
//! examples, built without it, show that programs need no link flags.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(libdir) = std::env::var("DEP_DEVQ_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir);
    }
    // tests/coverage.rs reads devq-sys's declarations from wherever that
    // crate is (a path dependency or a package).
    if let Ok(src) = std::env::var("DEP_DEVQ_SYS_SOURCE") {
        println!("cargo:rustc-env=DEVQ_SYS_SOURCE={}", src);
    }
}
