# libdevq.so: the core.  Sources go into the convenience library
# libdevq_core.la, which libdevq.la wraps with the export map; internal unit
# tests (tracker, pool) link libdevq_core.la statically to reach devq__*
# functions that the shared library hides.  Only devq_* is exported
# (lib/libdevq.map plus -fvisibility=hidden); the cpu backend is built in
# (mk/cpu.mk).
noinst_LTLIBRARIES += libdevq_core.la
libdevq_core_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib
libdevq_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libdevq_core_la_LIBADD =
libdevq_core_la_SOURCES = \
	lib/error.c lib/error.h \
	lib/env.c lib/env.h lib/env_table.c lib/env_table.h \
	lib/log.c lib/log.h \
	lib/futex.c lib/futex.h \
	lib/host.c lib/host.h \
	lib/event_pool.c lib/device_state.c \
	lib/device.h lib/signal_int.h lib/notifier.h lib/stream.h \
	lib/event_pool.h lib/mem.h lib/builtin.h

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
DEVQ_INTERNAL_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib
DEVQ_INTERNAL_LIBS = libdevq_core.la $(PTHREAD_LIBS) $(LIBS)
