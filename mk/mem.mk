# SPDX-License-Identifier: MIT
# mem area: the memory resource stack (lib/mem_*.c), devq_resource.h, its
# unit tests (against a fake device: tests/helpers/test_mem_fake.h), man pages and the
# allocator benchmark.
devqinclude_HEADERS += include/devq/devq_resource.h

libdevq_core_la_SOURCES += \
	lib/mem/mem.h lib/mem/mem_resource.c lib/mem/mem_resource.h \
	lib/mem/mem_direct.c lib/mem/mem_native.c lib/mem/mem_pool.c \
	lib/mem/mem_budget.c lib/mem/mem_stats.c lib/mem/mem_logging.c lib/mem/mem_guard.c \
	lib/mem/mem_stack.c lib/mem/mem_lock.c lib/mem/mem_lock.h

MEM_TEST_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS) -I$(top_srcdir)/tests/helpers
MEM_TEST_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)

noinst_PROGRAMS += bench/bench_mem
DEVQ_BENCHES += bench/bench_mem
bench_bench_mem_SOURCES = bench/bench_mem.c tests/helpers/test_mem_fake.c tests/helpers/test_mem_fake.h
bench_bench_mem_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS) -I$(top_srcdir)/tests/helpers
bench_bench_mem_LDADD = $(DEVQ_INTERNAL_LIBS)

MEM_MAN_ALIASES = \
	man/man3/devq_stream_ref_id.3 man/man3/devq_resource_create.3 \
	man/man3/devq_resource_destroy.3 man/man3/devq_resource_state.3 \
	man/man3/devq_resource_name.3 man/man3/devq_resource_inner.3 \
	man/man3/devq_resource_direct.3 man/man3/devq_resource_pool.3 \
	man/man3/devq_resource_native.3 man/man3/devq_resource_budget.3 \
	man/man3/devq_resource_stats.3 man/man3/devq_resource_logging.3 \
	man/man3/devq_resource_guard.3 man/man3/devq_resource_allocate.3 \
	man/man3/devq_resource_deallocate.3 man/man3/devq_resource_bytes_outstanding.3 \
	man/man3/devq_resource_reap.3 man/man3/devq_resource_trim.3 \
	man/man3/devq_resource_supports_use_tracking.3 \
	man/man3/devq_resource_prepare_use.3 man/man3/devq_resource_finish_use.3 \
	man/man3/devq_resource_stats_get.3 man/man3/devq_resource_usage_by_tag.3 \
	man/man3/devq_resource_usage_by_stream.3 man/man3/devq_device_resource.3
man3_MANS += man/man3/devq_resource.3 man/man3/devq_mem_stats_get.3 \
	man/man3/devq_mem_reap.3 man/man3/devq_device_set_resource.3 \
	$(MEM_MAN_ALIASES)
EXTRA_DIST += mk/mem.mk
