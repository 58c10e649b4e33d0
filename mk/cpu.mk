# SPDX-License-Identifier: MIT
# cpu area: the embedded cpu backend (plugins/cpu), its test and benchmark.
# The backend is a convenience library folded into libdevq_core.la; it
# talks to lib only through <devq/devq_plugin.h> and the host table.
noinst_LTLIBRARIES += libdevq_cpu.la
libdevq_cpu_la_CPPFLAGS = $(AM_CPPFLAGS)
libdevq_cpu_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libdevq_cpu_la_SOURCES = \
	plugins/cpu/cpu.h plugins/cpu/plugin.c plugins/cpu/device.c \
	plugins/cpu/stream.c plugins/cpu/event.c plugins/cpu/hostfn.c \
	plugins/cpu/memory.c plugins/cpu/kernel.c plugins/cpu/pool.c
libdevq_core_la_LIBADD += libdevq_cpu.la

# Man page.
man7_MANS += man/man7/devq-cpu.7

if HAVE_CHECK
# The backend alone, driven through its ops table with a test host table.
check_PROGRAMS += tests/unit/test_cpu_plugin
TESTS += tests/unit/test_cpu_plugin
tests_unit_test_cpu_plugin_SOURCES = tests/unit/test_cpu_plugin.c \
	tests/helpers/cpu_test_host.c tests/helpers/cpu_test_host.h
tests_unit_test_cpu_plugin_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# -export-dynamic: kernels defined in the test are found with dlopen(NULL).
tests_unit_test_cpu_plugin_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_cpu_plugin_LDADD = libdevq_cpu.la $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
# A kernel module built by the test suite for kernel_load from a file.
check_LTLIBRARIES += tests/helpers/cpu_kernels.la
tests_helpers_cpu_kernels_la_SOURCES = tests/helpers/cpu_kernels.c
tests_helpers_cpu_kernels_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere
endif

# Raw op throughput, launch bandwidth vs a hand-written pthread loop.
noinst_PROGRAMS += bench/bench_cpu_ops
DEVQ_BENCHES += bench/bench_cpu_ops
bench_bench_cpu_ops_SOURCES = bench/bench_cpu_ops.c \
	tests/helpers/cpu_test_host.c tests/helpers/cpu_test_host.h
bench_bench_cpu_ops_CFLAGS = $(AM_CFLAGS) -O2
bench_bench_cpu_ops_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
bench_bench_cpu_ops_LDADD = libdevq_cpu.la $(PTHREAD_LIBS) $(LIBS)
