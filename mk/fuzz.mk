# SPDX-License-Identifier: MIT
# fuzz area: libFuzzer targets for every parser of outside input
# (tests/fuzz), their committed corpora, and the API misuse table test.
#
#  - make check replays every committed corpus file through every target,
#    built with the normal compiler and tests/fuzz/standalone.c
#    (tests/scripts/fuzz-corpora), so a corpus entry that once crashed keeps
#    being checked without clang.
#  - make fuzz builds the libFuzzer binaries with clang into
#    tests/fuzz/fuzz-<target> of the build tree (their own compile of the
#    few lib sources each needs: the gcc build is not touched).
#  - make fuzz-short (CI) runs each for FUZZ_SECONDS on a copy of its
#    corpus; non-zero on a crash, a skip when clang has no fuzzer runtime.
EXTRA_DIST += tests/fuzz/fuzz.h tests/fuzz/run-fuzzers.sh tests/fuzz/corpus tests/fuzz/crashes \
	tests/fuzz/README.md

FUZZ_NAMES = env_number device_spec backend_pref plugin_validate log_level emu_fail cpu_devices \
	signal_page manifest

# ---- replay under the normal compiler (make check) ----
FUZZ_REPLAY_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS) -I$(top_srcdir)/tests/fuzz
check_PROGRAMS += tests/fuzz/replay_env_number tests/fuzz/replay_device_spec \
	tests/fuzz/replay_backend_pref tests/fuzz/replay_plugin_validate \
	tests/fuzz/replay_log_level tests/fuzz/replay_emu_fail tests/fuzz/replay_cpu_devices \
	tests/fuzz/replay_signal_page tests/fuzz/replay_manifest

tests_fuzz_replay_env_number_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_env_number.c
tests_fuzz_replay_env_number_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)
tests_fuzz_replay_env_number_LDADD = $(DEVQ_INTERNAL_LIBS)

tests_fuzz_replay_device_spec_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_device_spec.c
tests_fuzz_replay_device_spec_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)
tests_fuzz_replay_device_spec_LDADD = $(DEVQ_INTERNAL_LIBS)

tests_fuzz_replay_backend_pref_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_backend_pref.c
tests_fuzz_replay_backend_pref_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)
tests_fuzz_replay_backend_pref_LDADD = $(DEVQ_INTERNAL_LIBS)

tests_fuzz_replay_plugin_validate_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_plugin_validate.c
tests_fuzz_replay_plugin_validate_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)
tests_fuzz_replay_plugin_validate_LDADD = $(DEVQ_INTERNAL_LIBS)

# The plugin manifest reader alone (pure libc).
tests_fuzz_replay_manifest_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_manifest.c \
	lib/loader/manifest.c
tests_fuzz_replay_manifest_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)

tests_fuzz_replay_signal_page_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_signal_page.c
tests_fuzz_replay_signal_page_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)
tests_fuzz_replay_signal_page_LDADD = $(DEVQ_INTERNAL_LIBS)

# These two #include the .c file whose static parser they drive (see the
# targets' comments), so they link only what that file needs besides.
tests_fuzz_replay_log_level_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_log_level.c \
	lib/base/env.c lib/base/env_table.c lib/base/device_spec.c lib/base/error.c
tests_fuzz_replay_log_level_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS)
tests_fuzz_replay_log_level_LDADD = $(PTHREAD_LIBS) $(LIBS)
EXTRA_tests_fuzz_replay_log_level_DEPENDENCIES = $(top_srcdir)/lib/base/log.c

tests_fuzz_replay_emu_fail_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_emu_fail.c \
	tests/emu/emu_stream.c tests/emu/emu_mem.c
tests_fuzz_replay_emu_fail_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) -I$(top_srcdir)/tests/emu
tests_fuzz_replay_emu_fail_LDADD = $(PTHREAD_LIBS) $(LIBS)
EXTRA_tests_fuzz_replay_emu_fail_DEPENDENCIES = $(top_srcdir)/tests/emu/emu_engine.c

# The cpu backend alone with the stand-alone test host table.
tests_fuzz_replay_cpu_devices_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_cpu_devices.c \
	tests/helpers/cpu_test_host.c tests/helpers/cpu_test_host.h
tests_fuzz_replay_cpu_devices_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) -I$(top_srcdir)/tests/helpers
tests_fuzz_replay_cpu_devices_LDADD = libdevq_cpu.la $(PTHREAD_LIBS) $(LIBS)

# The vulkan plugin's SPIR-V check (validator + reflection), where the
# plugin is built (it needs SPIRV-Tools and SPIRV-Cross).
FUZZ_SPIRV_LIBS = -lspirv-cross-c-shared -lSPIRV-Tools -lstdc++ -lm
if BUILD_VULKAN
check_PROGRAMS += tests/fuzz/replay_spirv
tests_fuzz_replay_spirv_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_spirv.c \
	plugins/vulkan/spirv.c plugins/vulkan/spirv_local.c plugins/vulkan/features.c
tests_fuzz_replay_spirv_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) -I$(top_srcdir)/plugins/vulkan
tests_fuzz_replay_spirv_LDADD = $(FUZZ_SPIRV_LIBS)
FUZZ_NAMES += spirv
FUZZ_BINS_VULKAN = tests/fuzz/fuzz-spirv
endif

# ---- libFuzzer binaries (make fuzz, make fuzz-short) ----
FUZZ_CC = clang
FUZZ_SECONDS = 30
FUZZ_SANITIZE = -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_BUILD_FLAGS = -g -O1 -std=gnu11 $(FUZZ_SANITIZE) -I$(top_srcdir)/include \
	$(DEVQ_LIB_INCLUDES) -I$(top_builddir) -I$(top_srcdir)/tests/fuzz -pthread
FUZZ_BINS = tests/fuzz/fuzz-env_number tests/fuzz/fuzz-device_spec tests/fuzz/fuzz-backend_pref \
	tests/fuzz/fuzz-plugin_validate tests/fuzz/fuzz-log_level tests/fuzz/fuzz-emu_fail \
	tests/fuzz/fuzz-cpu_devices tests/fuzz/fuzz-signal_page tests/fuzz/fuzz-manifest $(FUZZ_BINS_VULKAN)
CLEANFILES += $(FUZZ_BINS) tests/fuzz/fuzz-spirv

FUZZ_SRC_env_number = $(top_srcdir)/tests/fuzz/fuzz_env_number.c $(top_srcdir)/lib/base/env.c \
	$(top_srcdir)/lib/base/env_table.c $(top_srcdir)/lib/base/device_spec.c $(top_srcdir)/lib/base/error.c
FUZZ_SRC_device_spec = $(top_srcdir)/tests/fuzz/fuzz_device_spec.c $(top_srcdir)/lib/base/device_spec.c
FUZZ_SRC_backend_pref = $(top_srcdir)/tests/fuzz/fuzz_backend_pref.c \
	$(top_srcdir)/lib/base/device_spec.c
FUZZ_SRC_plugin_validate = $(top_srcdir)/tests/fuzz/fuzz_plugin_validate.c \
	$(top_srcdir)/lib/loader/plugin_validate.c
FUZZ_SRC_log_level = $(top_srcdir)/tests/fuzz/fuzz_log_level.c $(top_srcdir)/lib/base/env.c \
	$(top_srcdir)/lib/base/env_table.c $(top_srcdir)/lib/base/device_spec.c $(top_srcdir)/lib/base/error.c
FUZZ_SRC_emu_fail = $(top_srcdir)/tests/fuzz/fuzz_emu_fail.c $(top_srcdir)/tests/emu/emu_stream.c \
	$(top_srcdir)/tests/emu/emu_mem.c
FUZZ_SRC_cpu_devices = $(top_srcdir)/tests/fuzz/fuzz_cpu_devices.c $(top_srcdir)/tests/helpers/cpu_test_host.c \
	$(top_srcdir)/plugins/cpu/plugin.c $(top_srcdir)/plugins/cpu/device.c \
	$(top_srcdir)/plugins/cpu/stream.c $(top_srcdir)/plugins/cpu/event.c \
	$(top_srcdir)/plugins/cpu/hostfn.c $(top_srcdir)/plugins/cpu/memory.c \
	$(top_srcdir)/plugins/cpu/kernel.c $(top_srcdir)/plugins/cpu/pool.c \
	$(top_srcdir)/plugins/cpu/graph.c
# The signal area alone (and the base it sits on).
FUZZ_SRC_signal_page = $(top_srcdir)/tests/fuzz/fuzz_signal_page.c $(top_srcdir)/lib/signal/signal.c \
	$(top_srcdir)/lib/signal/signal_wait.c $(top_srcdir)/lib/signal/signal_many.c \
	$(top_srcdir)/lib/signal/signal_notify.c $(top_srcdir)/lib/signal/signal_shared.c \
	$(top_srcdir)/lib/signal/signal_page.c $(top_srcdir)/lib/signal/notifier.c \
	$(top_srcdir)/lib/signal/signal_name.c $(top_srcdir)/lib/signal/signal_peer.c \
	$(top_srcdir)/lib/signal/signal_producer.c $(top_srcdir)/lib/base/object.c \
	$(top_srcdir)/lib/base/name.c \
	$(top_srcdir)/lib/base/futex.c $(top_srcdir)/lib/base/error.c $(top_srcdir)/lib/base/log.c \
	$(top_srcdir)/lib/base/env.c $(top_srcdir)/lib/base/env_table.c $(top_srcdir)/lib/base/device_spec.c
FUZZ_SRC_manifest = $(top_srcdir)/tests/fuzz/fuzz_manifest.c $(top_srcdir)/lib/loader/manifest.c
FUZZ_DEPS = $(top_srcdir)/tests/fuzz/fuzz.h config.h

tests/fuzz/fuzz-env_number: $(FUZZ_SRC_env_number) $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_env_number) -o $@
tests/fuzz/fuzz-device_spec: $(FUZZ_SRC_device_spec) $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_device_spec) -o $@
tests/fuzz/fuzz-backend_pref: $(FUZZ_SRC_backend_pref) $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_backend_pref) -o $@
tests/fuzz/fuzz-plugin_validate: $(FUZZ_SRC_plugin_validate) $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_plugin_validate) -o $@
tests/fuzz/fuzz-log_level: $(FUZZ_SRC_log_level) $(top_srcdir)/lib/base/log.c $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_log_level) -o $@
tests/fuzz/fuzz-emu_fail: $(FUZZ_SRC_emu_fail) $(top_srcdir)/tests/emu/emu_engine.c $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) -I$(top_srcdir)/tests/emu $(FUZZ_SRC_emu_fail) -o $@

tests/fuzz/fuzz-cpu_devices: $(FUZZ_SRC_cpu_devices) $(top_srcdir)/plugins/cpu/cpu.h $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) -I$(top_srcdir)/tests/helpers $(FUZZ_SRC_cpu_devices) -o $@ $(LIBS)

tests/fuzz/fuzz-signal_page: $(FUZZ_SRC_signal_page) $(top_srcdir)/lib/signal/signal_impl.h $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_signal_page) -o $@ $(LIBS)

FUZZ_SRC_spirv = $(top_srcdir)/tests/fuzz/fuzz_spirv.c $(top_srcdir)/plugins/vulkan/spirv.c \
	$(top_srcdir)/plugins/vulkan/spirv_local.c $(top_srcdir)/plugins/vulkan/features.c
tests/fuzz/fuzz-spirv: $(FUZZ_SRC_spirv) $(top_srcdir)/plugins/vulkan/vk_plugin.h $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) -I$(top_srcdir)/plugins/vulkan $(FUZZ_SRC_spirv) -o $@ \
	  $(FUZZ_SPIRV_LIBS)

tests/fuzz/fuzz-manifest: $(FUZZ_SRC_manifest) $(top_srcdir)/lib/loader/manifest.h $(FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_BUILD_FLAGS) $(FUZZ_SRC_manifest) -o $@

.PHONY: fuzz fuzz-short
fuzz: $(FUZZ_BINS)

# Probing the fuzzer runtime first turns "clang or libclang-rt missing"
# into a skip with a reason instead of a build failure.
fuzz-short:
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer,address -o /dev/null - >/dev/null 2>&1; then \
	  echo "fuzz-short: SKIP: '$(FUZZ_CC) -fsanitize=fuzzer,address' does not link" \
	       "(install clang and its fuzzer runtime, e.g. libclang-rt-14-dev)"; \
	  exit 0; \
	fi; \
	$(MAKE) $(AM_MAKEFLAGS) fuzz && \
	$(SHELL) $(top_srcdir)/tests/fuzz/run-fuzzers.sh '$(FUZZ_SECONDS)' '$(top_srcdir)/tests/fuzz' \
	  tests/fuzz $(FUZZ_NAMES)

