# SPDX-License-Identifier: MIT
# signal area: timeline signals and the notifier thread (issue 3).
libdevq_core_la_SOURCES += \
	lib/signal/signal.c lib/signal/signal_wait.c lib/signal/signal_many.c lib/signal/signal_notify.c \
	lib/signal/signal_shared.c lib/signal/signal_page.c lib/signal/signal_peer.c lib/signal/signal_producer.c lib/signal/signal_impl.h lib/signal/signal_int.h \
	lib/signal/signal_name.c \
	lib/signal/notifier.c lib/signal/notifier.h

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
