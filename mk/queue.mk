# SPDX-License-Identifier: MIT
# The queue layer (lib/queue/): queues, batches, recording, issue and
# deferral, hazards, cycles, completion, buffers, kernels, timestamps.
libdevq_core_la_SOURCES += \
	lib/queue/queue.c lib/queue/queue.h lib/queue/batch.c lib/queue/batch.h \
	lib/queue/buffer.h lib/queue/kernel.h lib/queue/timestamp.h lib/queue/completion.h \
	lib/queue/record.c lib/queue/issue.c lib/queue/defer.c lib/queue/align.c \
	lib/queue/hazard.c lib/queue/hazard.h lib/queue/completion.c lib/queue/cycle.c lib/queue/blocker.c lib/queue/blocker.h \
	lib/queue/buffer.c lib/queue/buffer_fail.c lib/queue/batch_walk.c lib/queue/kernel.c lib/queue/kernel_args.c \
	lib/queue/barrier.c lib/queue/timestamp.c lib/queue/value_wait.c lib/queue/value_wait.h \
	lib/queue/synchronize.c lib/queue/inline.c

# The backend-agnostic conformance suites: mk/tests-conformance.mk.

# Names' numbers, exactly, in a fresh process per case (devq(7) NAMES).
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_names
TESTS += tests/unit/test_names
tests_unit_test_names_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_names_LDADD = libdevq.la $(CHECK_LIBS)
endif

# Tracker bookkeeping without a backend (internal API).
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_tracker
TESTS += tests/unit/test_tracker
tests_unit_test_tracker_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_tracker_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_tracker_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)

# A buffer's failure against the order of its writes (internal API).
check_PROGRAMS += tests/unit/test_buffer_gen
TESTS += tests/unit/test_buffer_gen
tests_unit_test_buffer_gen_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_buffer_gen_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_buffer_gen_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)

# devq_queue_exec's check against a kernel's declared interface (internal API).
check_PROGRAMS += tests/unit/test_kernel_args
TESTS += tests/unit/test_kernel_args
tests_unit_test_kernel_args_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_kernel_args_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_kernel_args_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
endif

# Benchmarks (make bench).
noinst_PROGRAMS += bench/bench_tracker
DEVQ_BENCHES += tools/devq-bench bench/bench_tracker
bench_bench_tracker_SOURCES = bench/bench_tracker.c bench/bench_util.h
bench_bench_tracker_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
bench_bench_tracker_CFLAGS = $(AM_CFLAGS) -O2
bench_bench_tracker_LDADD = $(DEVQ_INTERNAL_LIBS)

# No polling: an idle process with pending notifies and idle queues.
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_idle
TESTS += tests/unit/test_idle
tests_unit_test_idle_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_idle_LDADD = libdevq.la $(CHECK_LIBS)
endif

# devq-bench: the installed benchmark tool (public API, baselines in the same run).
bin_PROGRAMS += tools/devq-bench
tools_devq_bench_SOURCES = tools/devq-bench.c
tools_devq_bench_CFLAGS = $(AM_CFLAGS) $(BENCH_OPENMP_CFLAGS)
tools_devq_bench_LDFLAGS = $(AM_LDFLAGS) -export-dynamic $(DEVQ_TOOL_RPATH) $(BENCH_OPENMP_CFLAGS)
tools_devq_bench_LDADD = libdevq.la
man1_MANS += man/man1/devq-bench.1
# Its output: one ratio convention, aligned columns, --compare.
TESTS += tests/scripts/test_devq_bench.sh
dist_noinst_SCRIPTS += tests/scripts/test_devq_bench.sh

TESTS += tests/scripts/test_logging.sh
dist_noinst_SCRIPTS += tests/scripts/test_logging.sh
TESTS += tests/scripts/test_trace.sh
dist_noinst_SCRIPTS += tests/scripts/test_trace.sh
# Memory in the trace (alloc/free slices, the counter drawn) and the budget
# refusal at DEVQ_LOG=basic; tests/helpers/mem_events is the program it runs.
check_PROGRAMS += tests/helpers/mem_events
tests_helpers_mem_events_SOURCES = tests/helpers/mem_events.c
tests_helpers_mem_events_LDADD = libdevq.la
TESTS += tests/scripts/test_mem_trace.sh
dist_noinst_SCRIPTS += tests/scripts/test_mem_trace.sh

# No heap growth with the number of batches completed (issue 19); not
# timed; skips under sanitizers and valgrind.
check_PROGRAMS += tests/unit/test_rss_flat
TESTS += tests/unit/test_rss_flat
tests_unit_test_rss_flat_LDADD = libdevq.la
