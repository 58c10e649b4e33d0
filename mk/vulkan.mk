# SPDX-License-Identifier: MIT
# vulkan area: the vulkan backend (plugins/vulkan -> devq-vulkan.so), the
# conformance kernels in GLSL (tests/conformance/*.comp, SPIR-V committed
# as *.spv), the conformance suite on the installed driver (lavapipe in
# CI) with the Khronos validation layer on, and devq-vulkan(7).  Built when
# configure finds vulkan/vulkan.h (BUILD_VULKAN); libvulkan.so.1 is loaded
# at run time, so the plugin builds and loads without a driver.
man7_MANS += man/man7/devq-vulkan.7
CONF_SHADERS = scale add step slow_copy add_u32 oracle_op sleep_ms
EXTRA_DIST += $(CONF_SHADERS:%=tests/conformance/%.comp) $(CONF_SHADERS:%=tests/conformance/%.spv) \
	examples/saxpy.comp examples/saxpy.spv

if BUILD_VULKAN
plugin_LTLIBRARIES += plugins/vulkan/devq-vulkan.la
plugins_vulkan_devq_vulkan_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_vulkan_devq_vulkan_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined
# SPIRV-Tools (static, C++: its symbols stay inside the plugin) validates
# and SPIRV-Cross's C API reflects every module (plugins/vulkan/spirv.c).
plugins_vulkan_devq_vulkan_la_LIBADD = $(PTHREAD_LIBS) $(LIBS) -ldl -lspirv-cross-c-shared \
	-lSPIRV-Tools -lstdc++ -lm
plugins_vulkan_devq_vulkan_la_LDFLAGS += -Wl,--exclude-libs,libSPIRV-Tools.a
# Relinked when a reconfigure changes the install folder (config.h), as
# the cuda and hip plugins are (tests/install/two-prefixes.sh).
EXTRA_plugins_vulkan_devq_vulkan_la_DEPENDENCIES = config.h
plugins_vulkan_devq_vulkan_la_SOURCES = \
	plugins/vulkan/vk_plugin.h plugins/vulkan/plugin.c plugins/vulkan/loader.c \
	plugins/vulkan/device.c plugins/vulkan/stream.c plugins/vulkan/completion.c \
	plugins/vulkan/event.c plugins/vulkan/mem.c plugins/vulkan/kernel.c \
	plugins/vulkan/spirv.c plugins/vulkan/spirv_local.c plugins/vulkan/features.c plugins/vulkan/graph.c \
	plugins/gpu_common/gpu_common.h plugins/gpu_common/plugin.c

# The SAXPY example on vulkan:0, checked against C (skips without a device).
noinst_PROGRAMS += examples/saxpy-vulkan
examples_saxpy_vulkan_SOURCES = examples/saxpy-vulkan.c
examples_saxpy_vulkan_LDADD = libdevq.la -lm

# devq against raw Vulkan in the same run (make bench; bench/RESULTS.md).
if HAVE_LIBVULKAN
noinst_PROGRAMS += bench/bench_vulkan
DEVQ_BENCHES += bench/bench_vulkan
bench_bench_vulkan_SOURCES = bench/bench_vulkan.c bench/bench_util.h
bench_bench_vulkan_CPPFLAGS = $(AM_CPPFLAGS) -DBENCH_SAXPY_SPV='"$(abs_top_srcdir)/examples/saxpy.spv"'
bench_bench_vulkan_LDADD = libdevq.la -lvulkan
endif

endif
# Shaders of the plugin's own tests (SPIR-V committed, checked by
# vulkan-spirv) and the corpus of corrupt SPIR-V (make-corpus.py).
VK_TEST_SHADERS = f64_i64 iface_mixed pad_implicit fixed_local no_args uniform_buffer binding_gap
VK_BAD_SPIRV = truncated bad-id-bound bad-magic wrong-version missing-entry unknown-capability
EXTRA_DIST += $(VK_TEST_SHADERS:%=tests/vulkan-shaders/%.comp) $(VK_TEST_SHADERS:%=tests/vulkan-shaders/%.spv) \
	$(VK_BAD_SPIRV:%=tests/vulkan-spirv-bad/%.spv) tests/vulkan-spirv-bad/make-corpus.py

.PHONY: vulkan-spirv
vulkan-spirv:
	@for k in $(CONF_SHADERS:%=tests/conformance/%) $(VK_TEST_SHADERS:%=tests/vulkan-shaders/%) examples/saxpy; do \
	  $(GLSLC) --target-env=vulkan1.3 -O -fshader-stage=compute \
	    -o $(top_srcdir)/$$k.spv $(top_srcdir)/$$k.comp || exit 1; \
	done

# conformance-vulkan points Mesa's shader cache into the build tree.
clean-local: vulkan-clean-local
.PHONY: vulkan-clean-local
vulkan-clean-local:
	-rm -rf tests/mesa-shader-cache
