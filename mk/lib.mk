# SPDX-License-Identifier: MIT
# libdevq.so: the core.  Sources go into the convenience library
# libdevq_core.la, which libdevq.la wraps with the export map; internal unit
# tests (tracker, pool) link libdevq_core.la statically to reach devq__*
# functions that the shared library hides.  Only devq_* is exported
# (lib/libdevq.map plus -fvisibility=hidden); the cpu backend is built in
# (mk/cpu.mk).
# lib/ is cut in layers, one folder each (DESIGN §10, HACKING.md):
# base <- signal <- device (+ loader) <- order <- mem <- queue <- channel <- device_state.c.
# Headers are found by name from every folder; tests/scripts/layers.sh checks
# from the built objects that no file calls upward.
DEVQ_LIB_INCLUDES = -I$(top_srcdir)/lib -I$(top_srcdir)/lib/base -I$(top_srcdir)/lib/signal \
	-I$(top_srcdir)/lib/loader -I$(top_srcdir)/lib/device -I$(top_srcdir)/lib/order \
	-I$(top_srcdir)/lib/mem \
	-I$(top_srcdir)/lib/queue -I$(top_srcdir)/lib/channel
noinst_LTLIBRARIES += libdevq_core.la
libdevq_core_la_CPPFLAGS = $(AM_CPPFLAGS) $(DEVQ_LIB_INCLUDES)
libdevq_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libdevq_core_la_LIBADD =
libdevq_core_la_SOURCES = \
	lib/base/error.c lib/base/error.h \
	lib/base/env.c lib/base/env.h lib/base/env_table.c lib/base/env_table.h \
	lib/base/device_spec.c lib/base/device_spec.h \
	lib/base/log.c lib/base/log.h \
	lib/base/futex.c lib/base/futex.h \
	lib/base/host.c lib/base/host.h lib/base/grow.h \
	lib/base/trace.c lib/base/trace.h \
	lib/base/name.c lib/base/name.h \
	lib/base/object.c lib/base/object.h lib/base/fork.c lib/base/fork.h \
	lib/device_state.c

lib_LTLIBRARIES += libdevq.la
libdevq_la_SOURCES =
# Force the C linker for a library with no sources of its own.
nodist_EXTRA_libdevq_la_SOURCES = dummy.c
libdevq_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(DEVQ_LT_VERSION) \
	-Wl,--version-script=$(top_srcdir)/lib/libdevq.map -no-undefined
libdevq_la_LIBADD = libdevq_core.la $(PTHREAD_LIBS)
libdevq_la_DEPENDENCIES = libdevq_core.la $(top_srcdir)/lib/libdevq.map
EXTRA_DIST += lib/libdevq.map

# For tests and tools that call devq__* internals.
DEVQ_INTERNAL_CPPFLAGS = $(AM_CPPFLAGS) $(DEVQ_LIB_INCLUDES)
DEVQ_INTERNAL_LIBS = libdevq_core.la $(PTHREAD_LIBS) $(LIBS)

# The checker reads exactly the objects of these sources.
AM_TESTS_ENVIRONMENT += DEVQ_CORE_SOURCES='$(libdevq_core_la_SOURCES)'; export DEVQ_CORE_SOURCES;

