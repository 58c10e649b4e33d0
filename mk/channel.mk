# SPDX-License-Identifier: MIT
# channel area (DESIGN §11): the channel layer of lib/ (lib/channel/, above
# queue), the devq-mpi engine (plugins/mpi/ -> $(plugindir)/engines/devq-mpi.so,
# built when configure finds an MPI by pkg-config; libdevq dlopens it on
# the first channel), the channel suite under mpirun, the benchmark and
# the data-parallel example.
libdevq_core_la_SOURCES += \
	lib/channel/channel.h lib/channel/engine.c lib/channel/channel.c lib/channel/coll.c \
	lib/channel/stream.c lib/channel/bootstrap.c

enginedir = $(plugindir)/engines
if BUILD_MPI
engine_LTLIBRARIES = plugins/mpi/devq-mpi.la
plugins_mpi_devq_mpi_la_SOURCES = plugins/mpi/mpi.c plugins/mpi/half.h
plugins_mpi_devq_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
plugins_mpi_devq_mpi_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_mpi_devq_mpi_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined
plugins_mpi_devq_mpi_la_LIBADD = $(MPI_LIBS) $(PTHREAD_LIBS)
endif

# The channel suite under mpirun -np 2 (tests/scripts/channels-mpi; skips, exit
# 77, without an MPI launcher or the engine).
check_PROGRAMS += tests/channel/chan_suite
tests_channel_chan_suite_SOURCES = tests/channel/chan_suite.c tests/channel/chan_ref.h plugins/mpi/half.h
tests_channel_chan_suite_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_channel_chan_suite_LDADD = libdevq.la
TESTS += tests/scripts/channels-mpi
dist_noinst_SCRIPTS += tests/scripts/channels-mpi tests/scripts/mpi-run
AM_TESTS_ENVIRONMENT += MPIRUN='$(MPIRUN)'; export MPIRUN; \
	DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so'; export DEVQ_TEST_MPI_ENGINE; \
	DEVQ_TEST_SANITIZERS='$(SAN_CFLAGS)'; export DEVQ_TEST_SANITIZERS;

# Channels across simulated hosts (network namespaces, Open MPI over TCP
# only): not in make check (it needs root and ~1 minute); make
# check-netns runs it (a skip, exit 77, is not a failure there), .ci/run has it as its own stage.  chan_kill is its
# rank killed mid-collective.
check_PROGRAMS += tests/channel/chan_kill
tests_channel_chan_kill_SOURCES = tests/channel/chan_kill.c
tests_channel_chan_kill_LDADD = libdevq.la
dist_noinst_SCRIPTS += tests/scripts/channels-mpi-netns
EXTRA_DIST += tests/netns/hosts.sh
check-netns: tests/channel/chan_suite tests/channel/chan_kill examples/data-parallel
	MPIRUN='$(MPIRUN)' DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so' \
	  top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' $(abs_top_srcdir)/tests/scripts/channels-mpi-netns; \
	  rc=$$?; test $$rc = 77 && rc=0; exit $$rc
.PHONY: check-netns

# devq_mpi.h (header-only, installed always: it needs <mpi.h> only where
# a program includes it) and its test: a program that initialises MPI
# itself makes channels over split sub-communicators (needs MPI to build).
devqinclude_HEADERS += include/devq/devq_mpi.h
dist_noinst_SCRIPTS += tests/scripts/channels-mpi-comm
if BUILD_MPI
check_PROGRAMS += tests/channel/mpi_comm
tests_channel_mpi_comm_SOURCES = tests/channel/mpi_comm.c tests/channel/chan_ref.h plugins/mpi/half.h
tests_channel_mpi_comm_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_channel_mpi_comm_LDADD = libdevq.la $(MPI_LIBS)
TESTS += tests/scripts/channels-mpi-comm
endif
AM_TESTS_ENVIRONMENT += DEVQ_TEST_MPI_CFLAGS='$(MPI_CFLAGS)'; export DEVQ_TEST_MPI_CFLAGS; \
	DEVQ_TEST_MPI_LIBS='$(MPI_LIBS)'; export DEVQ_TEST_MPI_LIBS;

# The data-parallel example (README "Channels"): 2 ranks, result checked.
noinst_PROGRAMS += examples/data-parallel
examples_data_parallel_SOURCES = examples/data-parallel.c
examples_data_parallel_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
examples_data_parallel_LDADD = libdevq.la -lm
TESTS += tests/scripts/data-parallel-mpi
dist_noinst_SCRIPTS += tests/scripts/data-parallel-mpi

man7_MANS += man/man7/devq-channels.7
man3_MANS += man/man3/devq_channel_create.3 man/man3/devq_channel_create_mpi.3 \
	man/man3/devq_channel_create_from_handle.3 man/man3/devq_channel_id.3 man/man3/devq_channel_destroy.3 \
	man/man3/devq_channel_split.3 man/man3/devq_channel_rank.3 man/man3/devq_channel_size.3 \
	man/man3/devq_channel_set_timeout.3 man/man3/devq_queue_all_reduce.3 man/man3/devq_queue_all_gather.3 \
	man/man3/devq_queue_reduce_scatter.3 man/man3/devq_queue_broadcast.3 man/man3/devq_queue_send.3 \
	man/man3/devq_queue_recv.3

# make bench: devq's all_reduce against MPI_Allreduce on 2 ranks
# (bench/RESULTS.md); the program links MPI itself for the baseline.
if BUILD_MPI
noinst_PROGRAMS += bench/bench_channel
bench_bench_channel_SOURCES = bench/bench_channel.c bench/bench_util.h
bench_bench_channel_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
bench_bench_channel_CFLAGS = $(AM_CFLAGS) -O2
bench_bench_channel_LDADD = libdevq.la $(MPI_LIBS)
noinst_SCRIPTS = bench/bench_channel_run bench/bench_channel_tcp_run
CLEANFILES += bench/bench_channel_run bench/bench_channel_tcp_run
DEVQ_BENCHES += bench/bench_channel_run bench/bench_channel_tcp_run
dist_noinst_SCRIPTS += bench/bench_channel_tcp
# The same over TCP between 2 simulated hosts (root; says why and does
# nothing where namespaces cannot be made).
bench/bench_channel_tcp_run: Makefile
	$(AM_V_GEN)mkdir -p bench && { \
	  echo '#!/bin/sh'; \
	  echo '# Generated by make: bench_channel on 2 simulated hosts over TCP (bench/bench_channel_tcp).'; \
	  echo "MPIRUN='$(MPIRUN)' DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so' top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' exec '$(abs_top_srcdir)/bench/bench_channel_tcp' \"\$$@\""; \
	} > $@ && chmod +x $@
bench/bench_channel_run: Makefile
	$(AM_V_GEN)mkdir -p bench && { \
	  echo '#!/bin/sh'; \
	  echo '# Generated by make: bench_channel on 2 ranks (tests/scripts/mpi-run).'; \
	  echo "OMPI_MCA_btl_vader_single_copy_mechanism= MPIRUN='$(MPIRUN)' DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so' top_builddir='$(abs_top_builddir)' exec '$(abs_top_srcdir)/tests/scripts/mpi-run' '$(abs_top_builddir)/bench/bench_channel' \"\$$@\""; \
	} > $@ && chmod +x $@
endif
