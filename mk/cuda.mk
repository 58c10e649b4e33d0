# SPDX-License-Identifier: MIT
# cuda area: the cuda backend (plugins/cuda -> devq-cuda.so), the emulated
# CUDA driver it is tested on (tests/emu, never installed), the plugin
# tests, the PTX example and devq-cuda(7).  Built on Linux by default
# (BUILD_CUDA); nothing here needs a GPU, libcuda or the CUDA toolkit: the
# driver API is declared in plugins/cuda/cuda_decls.h, which
# tests/scripts/cuda-decls.sh checks against a toolkit's cuda.h when there is one.
man7_MANS += man/man7/devq-cuda.7
EXTRA_DIST += tests/gpu/run.sh tests/gpu/bundle.sh tests/gpu/device.sh tests/emu/tsan.supp tests/emu/README.md examples/cuda-saxpy.c

# What the cuda and hip plugins share, compiled into each (hidden; also
# listed in mk/hip.mk).
GPU_COMMON_SOURCES = \
	plugins/gpu_common/gpu_common.h plugins/gpu_common/plugin.c plugins/gpu_common/device.c \
	plugins/gpu_common/hostfn.c plugins/gpu_common/launch.c plugins/gpu_common/evwait.c \
	plugins/gpu_common/nccl.c plugins/gpu_common/nccl_abi.h \
	plugins/gpu_common/driver.h plugins/gpu_common/calls.h plugins/gpu_common/fail.c plugins/gpu_common/stream.c \
	plugins/gpu_common/event.c plugins/gpu_common/mem.c plugins/gpu_common/value.c \
	plugins/gpu_common/kernel.c plugins/gpu_common/open.c plugins/gpu_common/load.c plugins/gpu_common/graph.c \
	plugins/gpu_common/stage.c plugins/gpu_common/stage.h

# The front end both emulated drivers share (tests/emu/emu_face.h),
# compiled into each with EMU_FACE_CUDA or EMU_FACE_HIP (mk/hip.mk).
EMU_FRONT_SOURCES = tests/emu/emu_face.h tests/emu/emu_front_core.c tests/emu/emu_front_stream.c \
	tests/emu/emu_front_mem.c tests/emu/emu_front_graph.c

if BUILD_CUDA
plugin_LTLIBRARIES += plugins/cuda/devq-cuda.la
plugins_cuda_devq_cuda_la_CPPFLAGS = $(AM_CPPFLAGS)
plugins_cuda_devq_cuda_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_cuda_devq_cuda_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined
plugins_cuda_devq_cuda_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
# Relinked when a reconfigure changes the install folder (config.h), so the
# .la names the new one; the sources do not include config.h.
EXTRA_plugins_cuda_devq_cuda_la_DEPENDENCIES = config.h
plugins_cuda_devq_cuda_la_SOURCES = \
	plugins/cuda/cuda_plugin.h plugins/cuda/cuda_decls.h plugins/cuda/plugin.c plugins/cuda/driver.c \
	plugins/cuda/device.c plugins/cuda/calls.c plugins/cuda/kernel.c $(GPU_COMMON_SOURCES)

# The emulated driver: tests/emu/.libs/libcuda-emu.so.  The engine is
# API-neutral (emu_engine.h); emu_front_*.c the front end shared with the
# HIP face, built for CUDA; emu_cuda.c what only CUDA has; emu_module.c
# the kernel images.
check_LTLIBRARIES += tests/emu/libcuda-emu.la
tests_emu_libcuda_emu_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/cuda -DEMU_FACE_CUDA
tests_emu_libcuda_emu_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_libcuda_emu_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere -no-undefined
tests_emu_libcuda_emu_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
tests_emu_libcuda_emu_la_SOURCES = \
	tests/emu/emu_engine.h tests/emu/emu_engine.c tests/emu/emu_stream.c tests/emu/emu_graph.c \
	tests/emu/emu_mem.c tests/emu/emu_module.c $(EMU_FRONT_SOURCES) tests/emu/emu_cuda.c

# The PTX SAXPY example needs a real GPU: built on request only
# (`make examples/cuda-saxpy`, as tests/gpu/run.sh does).
EXTRA_PROGRAMS = examples/cuda-saxpy
examples_cuda_saxpy_SOURCES = examples/cuda-saxpy.c
examples_cuda_saxpy_LDADD = libdevq.la $(PTHREAD_LIBS) -lm
CLEANFILES += examples/cuda-saxpy
endif

AM_TESTS_ENVIRONMENT += CUDA_TOOLKIT_DIR='$(CUDA_TOOLKIT_DIR)'; export CUDA_TOOLKIT_DIR;

