// SPDX-License-Identifier: MIT
//! Only an rpath to the libdevq devq-sys found, so the test runs by hand
//! too.  Deliberately no `-Wl,--export-dynamic`: that is what is tested.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(libdir) = std::env::var("DEP_DEVQ_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir);
    }
}
