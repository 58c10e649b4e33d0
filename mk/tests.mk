# SPDX-License-Identifier: MIT
# tests area: see HACKING.md.

# The plugin-level tests of the GPU backends (tests/emu/gpu_test.h), built
# once when cuda or hip is (mk/cuda.mk and mk/hip.mk set
# GPU_EMU_TEST_BINS) and run per backend by the wrappers
# tests/gpu-{plugin,faults}-{cuda,hip}-emu.  They dlopen the plugin with a
# host table of their own (no libdevq) over the emulated driver.
# -export-dynamic: emulated kernels are functions of the test, found with
# dlsym(RTLD_DEFAULT).
check_PROGRAMS += $(GPU_EMU_TEST_BINS)
GPU_EMU_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/emu \
	-DTEST_BUILD_DIR='"$(abs_top_builddir)"'
GPU_EMU_TEST_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
tests_unit_test_gpu_plugin_SOURCES = tests/unit/test_gpu_plugin.c tests/emu/test_host.c tests/emu/test_host.h \
	tests/emu/gpu_test.h
tests_unit_test_gpu_plugin_CPPFLAGS = $(GPU_EMU_TEST_CPPFLAGS)
tests_unit_test_gpu_plugin_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_gpu_plugin_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_gpu_plugin_LDADD = $(GPU_EMU_TEST_LDADD)
tests_unit_test_gpu_faults_SOURCES = tests/unit/test_gpu_faults.c tests/emu/test_host.c tests/emu/test_host.h \
	tests/emu/gpu_test.h
tests_unit_test_gpu_faults_CPPFLAGS = $(GPU_EMU_TEST_CPPFLAGS)
tests_unit_test_gpu_faults_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_gpu_faults_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_gpu_faults_LDADD = $(GPU_EMU_TEST_LDADD)

# Regression tests for the soak's former "known lib bug" notes (lost
# device memory, allocation messages, cause chains, frees whose ordering
# failed); most need the emulated CUDA driver.
if BUILD_CUDA
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_strict_notes
TESTS += tests/unit/test_strict_notes
tests_unit_test_strict_notes_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_strict_notes_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_strict_notes_LDADD = libdevq.la $(CHECK_LIBS)
EXTRA_tests_unit_test_strict_notes_DEPENDENCIES = tests/emu/libcuda-emu.la
# The main() of the Check tests of libdevq on the emulated CUDA driver.
EXTRA_DIST += tests/helpers/cuda_emu_check.h tests/helpers/check_main.h tests/helpers/host_fns.h
# Forwarding headers for tests/emu, which includes them from tests/.
EXTRA_DIST += tests/check_main.h tests/host_fns.h
# A batch completing ahead of earlier ones (its end callback could not be
# queued) must not let finish return early.
check_PROGRAMS += tests/unit/test_completion_order
TESTS += tests/unit/test_completion_order
tests_unit_test_completion_order_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_completion_order_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_completion_order_LDADD = libdevq.la $(CHECK_LIBS)
EXTRA_tests_unit_test_completion_order_DEPENDENCIES = tests/emu/libcuda-emu.la
endif
endif

# Resource exhaustion (issue 27, devq(7) THREADS): tests/helpers/fail_shim.c is an
# LD_PRELOAD shim whose pthread_create and allocation functions fail on
# demand; test_exhaust (no thread can start: the shim, and RLIMIT_NPROC as
# uid 65534) and malloc_sweep (the Nth allocation fails, N swept) re-execute
# themselves with it preloaded.  The shim is built without the sanitizer
# flags: under a sanitizer its functions are bypassed anyway (the
# sanitizer's interceptors come first), and the tests say so.
check_LTLIBRARIES += tests/helpers/libfailshim.la
tests_helpers_libfailshim_la_SOURCES = tests/helpers/fail_shim.c
tests_helpers_libfailshim_la_CFLAGS = -std=gnu11 $(WARN_CFLAGS) $(PTHREAD_CFLAGS)
tests_helpers_libfailshim_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_helpers_libfailshim_la_LIBADD = $(PTHREAD_LIBS) -ldl
check_PROGRAMS += tests/unit/malloc_sweep
TESTS += tests/unit/malloc_sweep
tests_unit_malloc_sweep_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_BUILD_DIR='"$(abs_top_builddir)"'
tests_unit_malloc_sweep_LDADD = libdevq.la -ldl
EXTRA_tests_unit_malloc_sweep_DEPENDENCIES = tests/helpers/libfailshim.la
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_exhaust
TESTS += tests/unit/test_exhaust
tests_unit_test_exhaust_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_BUILD_DIR='"$(abs_top_builddir)"'
tests_unit_test_exhaust_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_exhaust_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_exhaust_LDADD = libdevq.la $(CHECK_LIBS) -ldl
EXTRA_tests_unit_test_exhaust_DEPENDENCIES = tests/helpers/libfailshim.la
endif
