// SPDX-License-Identifier: MIT
//! cpu kernels defined in a library crate: compiled into this crate's
//! rlib, exported from no binary that links it.  `tests/run.rs` runs them.
#![forbid(unsafe_code)]

use devq::cpu::{Args, Group, KernelError, KernelResult};

devq::cpu_kernel! {
    /// x[i] = 2 * x[i] + 1
    pub fn double_plus_one(g: &Group, args: &Args) -> KernelResult {
        let x = args.buffer::<u32>(0)?;
        for i in g.items(0) {
            x.set(i, 2 * x.get(i) + 1);
        }
        Ok(())
    }
}

devq::cpu_kernel! {
    /// Fails with ERANGE: its name must reach the error.
    pub fn lib_out_of_room(_g: &Group, _args: &Args) -> KernelResult {
        Err(KernelError(devq::errno::ERANGE))
    }
}
