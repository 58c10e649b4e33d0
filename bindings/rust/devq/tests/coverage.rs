// SPDX-License-Identifier: MIT
//! Every C function devq-sys declares has a row in the crate docs' table
//! (a safe counterpart, or why there is none): adding a function to the
//! headers fails the drift test until devq-sys declares it, then this one
//! until the safe crate answers for it.
#[test]
fn every_c_function_is_in_the_crate_docs_table() {
    let sys = include_str!(env!("DEVQ_SYS_SOURCE"));
    let docs: String = include_str!("../src/lib.rs").lines().filter(|l| l.starts_with("//! |")).collect();
    let missing: Vec<&str> = sys
        .split("pub fn ")
        .skip(1)
        .map(|rest| rest.split('(').next().unwrap())
        .filter(|name| !docs.contains(&format!("`{}`", name)))
        .collect();
    assert!(sys.matches("pub fn ").count() > 60, "devq-sys declarations not found");
    assert!(missing.is_empty(), "not in the table of bindings/rust/devq/src/lib.rs: {:?}", missing);
}
