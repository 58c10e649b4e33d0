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
	plugins/cpu/memory.c plugins/cpu/kernel.c plugins/cpu/pool.c \
	plugins/cpu/launch.h plugins/cpu/graph.c plugins/plugin_ref.h
libdevq_core_la_LIBADD += libdevq_cpu.la

# Man page.
man7_MANS += man/man7/devq-cpu.7

# Raw op throughput, launch bandwidth vs a hand-written pthread loop.
noinst_PROGRAMS += bench/bench_cpu_ops
DEVQ_BENCHES += bench/bench_cpu_ops
bench_bench_cpu_ops_SOURCES = bench/bench_cpu_ops.c \
	tests/helpers/cpu_test_host.c tests/helpers/cpu_test_host.h
bench_bench_cpu_ops_CFLAGS = $(AM_CFLAGS) -O2
bench_bench_cpu_ops_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
bench_bench_cpu_ops_LDADD = libdevq_cpu.la $(PTHREAD_LIBS) $(LIBS)
