// SPDX-License-Identifier: MIT
//! Finds libdevq with the `pkg-config` command (no crates: this must build
//! offline).  PKG_CONFIG_PATH selects the copy: an installed prefix's
//! lib/pkgconfig, or a build folder, whose devq-uninstalled.pc points at
//! the freshly built library and the source tree's headers.
use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let cmd = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(&cmd)
        .args(args)
        .arg("devq")
        .output()
        .map_err(|e| format!("cannot run '{}': {} (install pkg-config or set PKG_CONFIG)", cmd, e))?;
    if !out.status.success() {
        return Err(format!(
            "'{} {} devq' failed: {}",
            cmd,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    let found = pkg_config(&["--variable=libdir"])
        .and_then(|lib| pkg_config(&["--variable=includedir"]).map(|inc| (lib, inc)));
    let (libdir, includedir) = match found {
        Ok(v) => v,
        Err(why) => {
            eprintln!(
                "devq-sys: libdevq not found: {}\n\
                 devq-sys: set PKG_CONFIG_PATH to the folder holding devq.pc \
                 (an installed prefix's lib/pkgconfig, or a devq build folder)",
                why
            );
            std::process::exit(1);
        }
    };
    println!("cargo:rustc-link-search=native={}", libdir);
    println!("cargo:rustc-link-lib=dylib=devq");
    // Exposed to dependents' build scripts as DEP_DEVQ_LIBDIR / _INCLUDE.
    println!("cargo:libdir={}", libdir);
    println!("cargo:include={}", includedir);
    // devq's coverage test reads this crate's declarations (as
    // DEP_DEVQ_SYS_SOURCE in devq's build script: works from a package too).
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:sys_source={}/src/lib.rs", manifest);
    // The drift test reads the headers this crate was built against.
    println!("cargo:rustc-env=DEVQ_INCLUDE_DIR={}", includedir);
    // This crate's own tests run against the same library without
    // LD_LIBRARY_PATH.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir);
}
