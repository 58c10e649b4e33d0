# SPDX-License-Identifier: MIT
# Benchmarks: each area adds its programs to noinst_PROGRAMS (so they
# always build) and to DEVQ_BENCHES; 'make bench'
# builds and runs them all.  Results are recorded in bench/RESULTS.md.
bench: $(DEVQ_BENCHES)
	@for b in $(DEVQ_BENCHES); do \
	  echo "== $$b"; \
	  DEVQ_PLUGIN_PATH='$(abs_top_builddir)/plugins/cuda/.libs:$(abs_top_builddir)/plugins/hip/.libs:$(abs_top_builddir)/plugins/vulkan/.libs' \
	    ./$$b || exit 1; \
	done
.PHONY: bench
EXTRA_DIST += bench/RESULTS.md bench/ratios.svg

# Memory per object (batch, op, buffer handle, signal, queue) and the heap
# and RSS over 10^7 completed batches (issue 19).
noinst_PROGRAMS += bench/bench_footprint
DEVQ_BENCHES += bench/bench_footprint
bench_bench_footprint_SOURCES = bench/bench_footprint.c
bench_bench_footprint_LDADD = libdevq.la

# make bench-check: a regression guard, not a timed test.  The ratio rows
# briefly (devq-bench --quick, bench/bench_vulkan), each compared with the
# ratio recorded in bench/ratios.ref; rows off by more than the file's
# tolerance are printed.  Always exits 0 (.ci/run prints it).  Record a
# new reference on a quiet machine with
# `$(srcdir)/bench/bench-check.sh --write . $(srcdir)/bench/ratios.ref`.
bench-check: tools/devq-bench
	-@$(SHELL) $(srcdir)/bench/bench-check.sh '$(abs_top_builddir)' '$(srcdir)/bench/ratios.ref'
.PHONY: bench-check
EXTRA_DIST += bench/bench-check.sh bench/ratios.ref
# bench-check itself, against stand-in programs with known ratios.
TESTS += tests/scripts/test_bench_check.sh
dist_noinst_SCRIPTS += tests/scripts/test_bench_check.sh

# bench_graph: one graph submission of 1, 64 and 1024 tiny launches on
# cpu, ns and heap calls per submission (issue 30); under callgrind:
# tests/scripts/graph-callgrind.sh.
noinst_PROGRAMS += bench/bench_graph
DEVQ_BENCHES += bench/bench_graph
bench_bench_graph_SOURCES = bench/bench_graph.c bench/bench_util.h
bench_bench_graph_CFLAGS = $(AM_CFLAGS) -O2
bench_bench_graph_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
bench_bench_graph_LDADD = libdevq.la
EXTRA_DIST += bench/graph-callgrind.sh
bench-graph-callgrind: bench/bench_graph
	$(SHELL) $(top_srcdir)/bench/graph-callgrind.sh
.PHONY: bench-graph-callgrind
