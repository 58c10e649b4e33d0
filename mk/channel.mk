# channel area (DESIGN §11): the channel layer of lib/ (lib/channel/, above
# queue), the devq-mpi engine (plugins/mpi/ -> $(plugindir)/engines/devq-mpi.so,
# built when configure finds an MPI by pkg-config; libdevq dlopens it on
# the first channel), the channel suite under mpirun, the benchmark and
# the data-parallel example.
libdevq_core_la_SOURCES += \
	lib/channel/channel.h lib/channel/engine.c lib/channel/channel.c lib/channel/coll.c

enginedir = $(plugindir)/engines
if BUILD_MPI
engine_LTLIBRARIES = plugins/mpi/devq-mpi.la
plugins_mpi_devq_mpi_la_SOURCES = plugins/mpi/mpi.c plugins/mpi/half.h
plugins_mpi_devq_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
plugins_mpi_devq_mpi_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_mpi_devq_mpi_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined
plugins_mpi_devq_mpi_la_LIBADD = $(MPI_LIBS) $(PTHREAD_LIBS)
endif

# The channel suite under mpirun -np 2 (tests/channels-mpi; skips, exit
# 77, without an MPI launcher or the engine).
check_PROGRAMS += tests/channel/chan_suite
tests_channel_chan_suite_SOURCES = tests/channel/chan_suite.c plugins/mpi/half.h
tests_channel_chan_suite_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_channel_chan_suite_LDADD = libdevq.la
TESTS += tests/channels-mpi
dist_noinst_SCRIPTS += tests/channels-mpi tests/mpi-run
AM_TESTS_ENVIRONMENT += MPIRUN='$(MPIRUN)'; export MPIRUN; \
	DEVQ_TEST_MPI_ENGINE='$(abs_top_builddir)/plugins/mpi/.libs/devq-mpi.so'; export DEVQ_TEST_MPI_ENGINE; \
	DEVQ_TEST_SANITIZERS='$(SAN_CFLAGS)'; export DEVQ_TEST_SANITIZERS;

man7_MANS += man/man7/devq-channels.7
man3_MANS += man/man3/devq_channel_create.3 man/man3/devq_channel_id.3 man/man3/devq_channel_destroy.3 \
	man/man3/devq_channel_split.3 man/man3/devq_channel_rank.3 man/man3/devq_channel_size.3 \
	man/man3/devq_channel_set_timeout.3 man/man3/devq_queue_all_reduce.3 man/man3/devq_queue_all_gather.3 \
	man/man3/devq_queue_reduce_scatter.3 man/man3/devq_queue_broadcast.3 man/man3/devq_queue_send.3 \
	man/man3/devq_queue_recv.3

