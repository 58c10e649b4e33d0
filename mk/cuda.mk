# cuda area: the cuda backend (plugins/cuda -> devq-cuda.so), the emulated
# CUDA driver it is tested on (tests/emu, never installed), the plugin
# tests, the PTX example and devq-cuda(7).  Built when configure finds
# cuda.h (BUILD_CUDA); nothing here needs a GPU or libcuda.
man7_MANS += man/man7/devq-cuda.7
EXTRA_DIST += tests/gpu/run.sh tests/emu/tsan.supp tests/emu/README.md examples/cuda-saxpy.c

if BUILD_CUDA
plugin_LTLIBRARIES += plugins/cuda/devq-cuda.la
plugins_cuda_devq_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
plugins_cuda_devq_cuda_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_cuda_devq_cuda_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined
plugins_cuda_devq_cuda_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
plugins_cuda_devq_cuda_la_SOURCES = \
	plugins/cuda/cuda_plugin.h plugins/cuda/plugin.c plugins/cuda/driver.c \
	plugins/cuda/device.c plugins/cuda/stream.c plugins/cuda/event.c \
	plugins/cuda/mem.c plugins/cuda/value.c plugins/cuda/kernel.c

# The emulated driver: tests/emu/.libs/libcuda-emu.so.  The engine is
# API-neutral (emu_engine.h); emu_cuda.c is its CUDA face.
check_LTLIBRARIES += tests/emu/libcuda-emu.la
tests_emu_libcuda_emu_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_emu_libcuda_emu_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_libcuda_emu_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere -no-undefined
tests_emu_libcuda_emu_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
tests_emu_libcuda_emu_la_SOURCES = \
	tests/emu/emu_engine.h tests/emu/emu_engine.c tests/emu/emu_stream.c \
	tests/emu/emu_mem.c tests/emu/emu_cuda.c

# Plugin-level tests: they dlopen devq-cuda.so with a host table of their
# own (no libdevq) and point DEVQ_CUDA_LIBRARY at the emulator.
# -export-dynamic: emulated kernels are functions of the test, found with
# dlsym(RTLD_DEFAULT).
CUDA_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/emu \
	-DTEST_BUILD_DIR='"$(abs_top_builddir)"'
CUDA_TEST_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
if HAVE_CHECK
check_PROGRAMS += tests/test_cuda_emu tests/test_cuda_plugin tests/test_cuda_faults
TESTS += tests/test_cuda_emu tests/test_cuda_plugin tests/test_cuda_faults
# The emulator alone, called like a real driver.
tests_test_cuda_emu_SOURCES = tests/test_cuda_emu.c
tests_test_cuda_emu_CPPFLAGS = $(CUDA_TEST_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_test_cuda_emu_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_cuda_emu_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_test_cuda_emu_LDADD = $(CUDA_TEST_LDADD)
tests_test_cuda_plugin_SOURCES = tests/test_cuda_plugin.c tests/emu/test_host.c tests/emu/test_host.h \
	tests/emu/cuda_test.h
tests_test_cuda_plugin_CPPFLAGS = $(CUDA_TEST_CPPFLAGS)
tests_test_cuda_plugin_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_cuda_plugin_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_test_cuda_plugin_LDADD = $(CUDA_TEST_LDADD)
tests_test_cuda_faults_SOURCES = tests/test_cuda_faults.c tests/emu/test_host.c tests/emu/test_host.h \
	tests/emu/cuda_test.h
tests_test_cuda_faults_CPPFLAGS = $(CUDA_TEST_CPPFLAGS)
tests_test_cuda_faults_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_cuda_faults_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_test_cuda_faults_LDADD = $(CUDA_TEST_LDADD)
endif

# The PTX SAXPY example needs a real GPU: built on request only
# (`make examples/cuda-saxpy`, as tests/gpu/run.sh does).
EXTRA_PROGRAMS = examples/cuda-saxpy
examples_cuda_saxpy_SOURCES = examples/cuda-saxpy.c
examples_cuda_saxpy_LDADD = libdevq.la $(PTHREAD_LIBS) -lm
CLEANFILES += examples/cuda-saxpy
endif

# The backend-agnostic suites against cuda on the emulated driver.
if BUILD_CUDA
if HAVE_CHECK
TESTS += tests/conformance-cuda-emu
endif
endif
dist_noinst_SCRIPTS += tests/conformance-cuda-emu

# Device loss seen through lib (fault injected into the emulated driver).
if BUILD_CUDA
if HAVE_CHECK
check_PROGRAMS += tests/test_device_loss
TESTS += tests/test_device_loss
tests_test_device_loss_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_device_loss_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_test_device_loss_LDADD = libdevq.la $(CHECK_LIBS)
endif
endif
