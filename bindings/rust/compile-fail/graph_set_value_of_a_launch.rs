// SPDX-License-Identifier: MIT
// expect: E0308
// set_value takes a wait or signal op (ValueOp), not a launch (ExecOp).
fn launch(q: &mut devq::Queue, k: &devq::Kernel, b: &devq::Buffer<u32>) -> devq::Result<()> {
    let (g, op) = q.capture(|c| c.exec(k, &[devq::Arg::read_write(b)], devq::Launch::d1(4, 4)))?;
    g.instantiate()?.set_value(op, 1, 1)
}
fn main() {
    let _ = launch;
}
