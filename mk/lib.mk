# libdevq.so: the core.  Only devq_* is exported (lib/libdevq.map plus
# -fvisibility=hidden); the cpu backend is built in (mk/cpu.mk).
lib_LTLIBRARIES += libdevq.la
libdevq_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib
libdevq_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libdevq_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(DEVQ_LT_VERSION) \
	-Wl,--version-script=$(top_srcdir)/lib/libdevq.map -no-undefined
libdevq_la_LIBADD = $(PTHREAD_LIBS)
libdevq_la_DEPENDENCIES = $(top_srcdir)/lib/libdevq.map
libdevq_la_SOURCES = \
	lib/error.c lib/error.h \
	lib/env.c lib/env.h \
	lib/log.c lib/log.h \
	lib/futex.c lib/futex.h \
	lib/host.c lib/host.h \
	lib/device.h lib/signal.h lib/notifier.h
EXTRA_DIST += lib/libdevq.map
