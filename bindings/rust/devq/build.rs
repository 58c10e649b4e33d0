// SPDX-License-Identifier: MIT
//! Link settings for this crate's own tests and examples: an rpath to the
//! libdevq devq-sys found, and --export-dynamic so the cpu backend finds
//! kernels defined with `devq::cpu_kernel!` in the running program
//! (dlsym on the program itself, like `cc -rdynamic`).  Programs that use
//! this crate need the same flag: see the crate docs.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(libdir) = std::env::var("DEP_DEVQ_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir);
    }
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
    // tests/coverage.rs reads devq-sys's declarations from wherever that
    // crate is (a path dependency or a package).
    if let Ok(src) = std::env::var("DEP_DEVQ_SYS_SOURCE") {
        println!("cargo:rustc-env=DEVQ_SYS_SOURCE={}", src);
    }
}
