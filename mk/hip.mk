# SPDX-License-Identifier: MIT
# hip area: the hip backend (plugins/hip -> devq-hip.so), the HIP face of
# the emulator it is tested on (tests/emu, never installed), the plugin
# tests and devq-hip(7).  Built when configure finds hip/hip_runtime_api.h
# (BUILD_HIP); nothing here needs a GPU or ROCm at run time.
man7_MANS += man/man7/devq-hip.7

if BUILD_HIP
plugin_LTLIBRARIES += plugins/hip/devq-hip.la
plugins_hip_devq_hip_la_CPPFLAGS = $(AM_CPPFLAGS) $(HIP_CPPFLAGS)
plugins_hip_devq_hip_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_hip_devq_hip_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined
plugins_hip_devq_hip_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
# Relinked when a reconfigure changes the install folder: see mk/cuda.mk.
EXTRA_plugins_hip_devq_hip_la_DEPENDENCIES = config.h
plugins_hip_devq_hip_la_SOURCES = \
	plugins/hip/hip_plugin.h plugins/hip/plugin.c plugins/hip/runtime.c \
	plugins/hip/device.c plugins/hip/calls.c plugins/hip/kernel.c $(GPU_COMMON_SOURCES)

# The emulated runtime: tests/emu/.libs/libamdhip64-emu.so, the same
# API-neutral engine and shared front (EMU_FRONT_SOURCES, built for HIP)
# as libcuda-emu.so with emu_hip.c as its face.  Two
# variants leave functions out (the plugin finds entry points
# with dlsym, so only a library that lacks them can test that path):
# -old has no hipMallocAsync/hipFreeAsync/hipStreamWaitValue64/
# hipStreamWriteValue64, -broken no hipModuleLaunchKernel/hipStreamAddCallback.
HIP_EMU_SOURCES = \
	tests/emu/emu_engine.h tests/emu/emu_engine.c tests/emu/emu_stream.c tests/emu/emu_graph.c \
	tests/emu/emu_mem.c tests/emu/emu_module.c $(EMU_FRONT_SOURCES) tests/emu/emu_hip.c
HIP_EMU_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere -no-undefined
check_LTLIBRARIES += tests/emu/libamdhip64-emu.la tests/emu/libamdhip64-emu-old.la \
	tests/emu/libamdhip64-emu-broken.la
tests_emu_libamdhip64_emu_la_CPPFLAGS = $(AM_CPPFLAGS) $(HIP_CPPFLAGS) -DEMU_FACE_HIP
tests_emu_libamdhip64_emu_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_libamdhip64_emu_la_LDFLAGS = $(HIP_EMU_LDFLAGS)
tests_emu_libamdhip64_emu_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
tests_emu_libamdhip64_emu_la_SOURCES = $(HIP_EMU_SOURCES)
tests_emu_libamdhip64_emu_old_la_CPPFLAGS = $(AM_CPPFLAGS) $(HIP_CPPFLAGS) -DEMU_FACE_HIP -DEMU_HIP_NO_OPTIONAL
tests_emu_libamdhip64_emu_old_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_libamdhip64_emu_old_la_LDFLAGS = $(HIP_EMU_LDFLAGS)
tests_emu_libamdhip64_emu_old_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
tests_emu_libamdhip64_emu_old_la_SOURCES = $(HIP_EMU_SOURCES)
tests_emu_libamdhip64_emu_broken_la_CPPFLAGS = $(AM_CPPFLAGS) $(HIP_CPPFLAGS) -DEMU_FACE_HIP -DEMU_HIP_NO_REQUIRED
tests_emu_libamdhip64_emu_broken_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_libamdhip64_emu_broken_la_LDFLAGS = $(HIP_EMU_LDFLAGS)
tests_emu_libamdhip64_emu_broken_la_LIBADD = $(PTHREAD_LIBS) $(LIBS)
tests_emu_libamdhip64_emu_broken_la_SOURCES = $(HIP_EMU_SOURCES)

# Its tests: mk/tests-unit.mk, mk/tests-scripts.mk, mk/tests-conformance.mk.
endif
