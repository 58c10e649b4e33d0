# SPDX-License-Identifier: MIT
# The Rust crates in bindings/rust (devq-sys, devq): `make rust-check` runs
# cargo test and cargo doc, offline, against this build's libdevq, found by
# pkg-config through devq-uninstalled.pc, and the channel example on 2
# ranks through tests/mpi-run (skipped without MPI).  Not part of `make check` (cargo
# may be absent); .ci/run runs it.  CARGO=/path/to/cargo picks a toolchain.
CARGO = cargo
rust-check: $(lib_LTLIBRARIES)
	PKG_CONFIG_PATH='$(abs_top_builddir)' \
	CARGO_TARGET_DIR='$(abs_top_builddir)/bindings/rust/target' \
	CARGO='$(CARGO)' \
	DEVQ_MPI_RUN='$(abs_top_srcdir)/tests/mpi-run' MPIRUN='$(MPIRUN)' \
	DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so' \
	LD_LIBRARY_PATH='$(abs_top_builddir)/.libs'"$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	  $(SHELL) $(top_srcdir)/bindings/rust/check.sh
.PHONY: rust-check

EXTRA_DIST += bindings/rust/check.sh bindings/rust/Cargo.toml bindings/rust/Cargo.lock \
	bindings/rust/.gitignore \
	bindings/rust/devq-sys/Cargo.toml bindings/rust/devq-sys/build.rs \
	bindings/rust/devq-sys/src/lib.rs bindings/rust/devq-sys/tests/drift.rs \
	bindings/rust/devq/Cargo.toml bindings/rust/devq/build.rs \
	bindings/rust/devq/src/lib.rs bindings/rust/devq/src/buffer.rs bindings/rust/devq/src/channel.rs \
	bindings/rust/devq/src/cpu.rs bindings/rust/devq/src/device.rs \
	bindings/rust/devq/src/error.rs bindings/rust/devq/src/kernel.rs \
	bindings/rust/devq/src/pod.rs bindings/rust/devq/src/queue.rs \
	bindings/rust/devq/src/resource.rs bindings/rust/devq/src/scope.rs \
	bindings/rust/devq/src/signal.rs bindings/rust/devq/src/timestamp.rs \
	bindings/rust/devq/tests/api.rs bindings/rust/devq/tests/resource.rs \
	bindings/rust/devq/tests/coverage.rs bindings/rust/devq/tests/channel.rs \
	bindings/rust/devq/examples/hello.rs bindings/rust/devq/examples/svod_ping_pong.rs \
	bindings/rust/devq/examples/morok_pipeline.rs \
	bindings/rust/devq/examples/cubecl_two_streams.rs \
	bindings/rust/devq/examples/channel_all_reduce.rs
