# SPDX-License-Identifier: MIT
# The queue layer (lib/queue/): queues, batches, recording, issue and
# deferral, hazards, cycles, completion, buffers, kernels, timestamps.
libdevq_core_la_SOURCES += \
	lib/queue/queue_life.c lib/queue/queue_life.h lib/queue/queue_fork.c lib/queue/queue.h lib/queue/cause.h lib/queue/batch_life.c lib/queue/batch_life.h lib/queue/batch.h \
	lib/queue/buffer.h lib/queue/kernel.h lib/queue/timestamp.h lib/queue/completion.h \
	lib/queue/record.c lib/queue/record.h lib/queue/issue.c lib/queue/issue.h lib/queue/defer.c lib/queue/defer.h lib/queue/align.c lib/queue/align.h \
	lib/queue/hazard.c lib/queue/hazard.h lib/queue/completion.c lib/queue/cycle.c lib/queue/cycle.h lib/queue/blocker.c lib/queue/blocker.h \
	lib/queue/buffer.c lib/queue/buffer_fail.c lib/queue/buffer_fail.h lib/queue/batch_walk.c lib/queue/batch_walk.h \
	lib/queue/kernel.c lib/queue/kernel_args.c lib/queue/kernel_args.h \
	lib/queue/barrier.c lib/queue/timestamp.c lib/queue/timestamp_record.c lib/queue/value_wait.c lib/queue/value_wait.h \
	lib/queue/synchronize.c lib/queue/inline.c lib/queue/inline.h lib/queue/straight.c lib/queue/straight.h lib/queue/tail_orphan.c lib/queue/tail_orphan.h \
	lib/queue/graph.c lib/queue/graph.h lib/queue/graph_rec.c lib/queue/graph_exec.c lib/queue/graph_submit.c \
	lib/queue/graph_plan.c lib/queue/graph_native.c lib/queue/graph_native.h lib/queue/native_run.h

# The backend-agnostic conformance suites: mk/tests-conformance.mk.

# Benchmarks (make bench).
noinst_PROGRAMS += bench/bench_tracker
DEVQ_BENCHES += tools/devq-bench bench/bench_tracker
bench_bench_tracker_SOURCES = bench/bench_tracker.c bench/bench_util.h
bench_bench_tracker_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
bench_bench_tracker_CFLAGS = $(AM_CFLAGS) -O2
bench_bench_tracker_LDADD = $(DEVQ_INTERNAL_LIBS)

# devq-bench: the installed benchmark tool (public API, baselines in the same run).
bin_PROGRAMS += tools/devq-bench
tools_devq_bench_SOURCES = tools/devq-bench.c
tools_devq_bench_CFLAGS = $(AM_CFLAGS) $(BENCH_OPENMP_CFLAGS)
tools_devq_bench_LDFLAGS = $(AM_LDFLAGS) -export-dynamic $(DEVQ_TOOL_RPATH) $(BENCH_OPENMP_CFLAGS)
tools_devq_bench_LDADD = libdevq.la
man1_MANS += man/man1/devq-bench.1

