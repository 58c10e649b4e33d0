# SPDX-License-Identifier: MIT
# signal area: timeline signals and the notifier thread (issue 3).
libdevq_core_la_SOURCES += \
	lib/signal/signal.c lib/signal/signal_wait.c lib/signal/signal_many.c lib/signal/signal_notify.c \
	lib/signal/signal_shared.c lib/signal/signal_page.c lib/signal/signal_peer.c lib/signal/signal_producer.c lib/signal/signal_impl.h lib/signal/signal_int.h \
	lib/signal/signal_name.c \
	lib/signal/notifier.c lib/signal/notifier.h

# Tests.  test_signal, test_signal_notify and test_signal_many reach
# internals (the early-wake counter, devq__notifier_is_current, the
# futex_waitv fallback switch), so they link the static core;
# test_signal_shared uses the public library and execs tests/unit/signal_helper
# in another process.
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_signal tests/unit/test_signal_notify tests/unit/test_signal_many \
	tests/unit/test_signal_shared tests/unit/signal_helper tests/unit/test_signal_corrupt
TESTS += tests/unit/test_signal tests/unit/test_signal_notify tests/unit/test_signal_many \
	tests/unit/test_signal_shared tests/unit/test_signal_corrupt
tests_unit_test_signal_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_signal_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_signal_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
tests_unit_test_signal_notify_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_signal_notify_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_signal_notify_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
tests_unit_test_signal_many_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_signal_many_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_signal_many_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
tests_unit_test_signal_shared_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_signal_shared_LDADD = libdevq.la $(CHECK_LIBS)
tests_unit_signal_helper_LDADD = libdevq.la
# test_signal_corrupt writes the page as another process would: it needs
# the page's layout (lib/signal_impl.h), nothing else of the internals.
tests_unit_test_signal_corrupt_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_signal_corrupt_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_signal_corrupt_LDADD = libdevq.la $(CHECK_LIBS)
endif

# A dead peer never bricks a shared signal (issue 27): real processes
# killed mid-fail (the test hook devq__shared_fail_hook, so it links the
# static core), 16 peers half killed, the peer-lost rule through every
# kind of waiter; tests/scripts/signal-peer-cuda-emu runs its queue-batch case on
# the emulated CUDA driver.
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_signal_peer
TESTS += tests/unit/test_signal_peer
tests_unit_test_signal_peer_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_signal_peer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_signal_peer_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
if BUILD_CUDA
TESTS += tests/scripts/signal-peer-cuda-emu
endif
endif
dist_noinst_SCRIPTS += tests/scripts/signal-peer-cuda-emu

# Benchmark: signal ping-pong vs condvar and raw futex, notify, wait_many.
noinst_PROGRAMS += bench/bench_signal
DEVQ_BENCHES += bench/bench_signal
bench_bench_signal_LDADD = libdevq.la

man3_MANS += man/man3/devq_signal.3 man/man3/devq_signal_create.3 \
	man/man3/devq_signal_destroy.3 man/man3/devq_signal_set.3 \
	man/man3/devq_signal_value.3 man/man3/devq_signal_fail.3 \
	man/man3/devq_signal_status.3 man/man3/devq_signal_wait.3 \
	man/man3/devq_signal_wait_many.3 man/man3/devq_signal_notify.3 \
	man/man3/devq_notify_cancel.3 man/man3/devq_notify_release.3 \
	man/man3/devq_signal_wait_fd.3 man/man3/devq_signal_create_shared.3 \
	man/man3/devq_signal_export_fd.3 man/man3/devq_signal_import_fd.3 \
	man/man3/devq_signal_add_producer.3 man/man3/devq_signal_remove_producer.3
