# SPDX-License-Identifier: MIT
# The Rust crates in bindings/rust (devq-sys, devq; devq-kernel-lib, not
# published, checks a library crate's kernels): `make rust-check` runs
# cargo test and cargo doc, offline, against this build's libdevq, found by
# pkg-config through devq-uninstalled.pc, and the channel example on 2
# ranks through tests/scripts/mpi-run (skipped without MPI).  Not part of `make check` (cargo
# may be absent); .ci/run runs it.  CARGO=/path/to/cargo picks a toolchain.
CARGO = cargo
rust-check: $(lib_LTLIBRARIES)
	PKG_CONFIG_PATH='$(abs_top_builddir)' \
	CARGO_TARGET_DIR='$(abs_top_builddir)/bindings/rust/target' \
	CARGO='$(CARGO)' \
	DEVQ_MPI_RUN='$(abs_top_srcdir)/tests/scripts/mpi-run' MPIRUN='$(MPIRUN)' \
	DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so' \
	LD_LIBRARY_PATH='$(abs_top_builddir)/.libs'"$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	  $(SHELL) $(top_srcdir)/bindings/rust/check.sh
.PHONY: rust-check

# SAXPY on the cpu backend: the Rust cpu_kernel! on plain slices, the same
# kernel on atomic views, and the same loop in C (bindings/rust/bench/
# saxpy.c, built here with this build's CC and CFLAGS), each exec'd through
# devq; prints ns per element and the C/Rust time ratio.  Not part of
# `make bench` (cargo may be absent).
rust-bench: $(lib_LTLIBRARIES)
	$(CC) $(CFLAGS) -fPIC -shared -I$(top_srcdir)/include \
	  -o '$(abs_top_builddir)/bindings/rust/saxpy_c.so' $(top_srcdir)/bindings/rust/bench/saxpy.c
	PKG_CONFIG_PATH='$(abs_top_builddir)' \
	CARGO_TARGET_DIR='$(abs_top_builddir)/bindings/rust/target' \
	LD_LIBRARY_PATH='$(abs_top_builddir)/.libs'"$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	  $(CARGO) run --offline --release --manifest-path '$(abs_top_srcdir)/bindings/rust/Cargo.toml' \
	  -p devq --example saxpy_bench -- '$(abs_top_builddir)/bindings/rust/saxpy_c.so'
.PHONY: rust-bench
CLEANFILES += bindings/rust/saxpy_c.so

EXTRA_DIST += bindings/rust/check.sh bindings/rust/Cargo.toml bindings/rust/Cargo.lock \
	bindings/rust/compile-fail.sh bindings/rust/bench/saxpy.c \
	bindings/rust/devq/examples/saxpy_bench.rs \
	bindings/rust/compile-fail/copy_between_types.rs \
	bindings/rust/compile-fail/ok_control.rs \
	bindings/rust/compile-fail/rc_in_host_fn.rs \
	bindings/rust/compile-fail/read_before_scope_ends.rs \
	bindings/rust/compile-fail/readback_wrong_type.rs \
	bindings/rust/compile-fail/scoped_queue_to_thread.rs \
	bindings/rust/compile-fail/slice_outlives_buffer.rs \
	bindings/rust/compile-fail/slice_outlives_scope.rs \
	bindings/rust/compile-fail/upload_wrong_type.rs \
	bindings/rust/.gitignore \
	bindings/rust/devq-sys/Cargo.toml bindings/rust/devq-sys/build.rs \
	bindings/rust/devq-sys/README.md bindings/rust/devq-sys/LICENSE \
	bindings/rust/devq/README.md bindings/rust/devq/LICENSE \
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
	bindings/rust/devq/tests/typed.rs bindings/rust/devq/tests/panic_safety.rs \
	bindings/rust/devq/examples/hello.rs bindings/rust/devq/examples/svod_ping_pong.rs \
	bindings/rust/devq/examples/morok_pipeline.rs \
	bindings/rust/devq/examples/cubecl_two_streams.rs \
	bindings/rust/devq/examples/channel_all_reduce.rs \
	bindings/rust/devq-kernel-lib/Cargo.toml bindings/rust/devq-kernel-lib/build.rs \
	bindings/rust/devq-kernel-lib/src/lib.rs bindings/rust/devq-kernel-lib/tests/run.rs
