# SPDX-License-Identifier: MIT
# The unit group: the C unit tests of tests/unit/ (Check suites, most
# against libdevq or its static core) and the helpers of tests/helpers/
# they link or load, registered here and nowhere else (HACKING.md,
# Tests).  Sections follow the areas they test; a test that exists only
# where a plugin is built sits under that plugin's conditional.  The
# wrappers that run a unit program per backend: mk/tests-scripts.mk.

# ---- cpu area (mk/cpu.mk) ----
if HAVE_CHECK
# The backend alone, driven through its ops table with a test host table.
check_PROGRAMS += tests/unit/test_cpu_plugin
TESTS += tests/unit/test_cpu_plugin
tests_unit_test_cpu_plugin_SOURCES = tests/unit/test_cpu_plugin.c \
	tests/helpers/cpu_test_host.c tests/helpers/cpu_test_host.h
tests_unit_test_cpu_plugin_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# -export-dynamic: kernels defined in the test are found with dlopen(NULL).
tests_unit_test_cpu_plugin_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_cpu_plugin_LDADD = libdevq_cpu.la $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
# The cpu backend's native graphs, through its ops table (issue 30).
check_PROGRAMS += tests/unit/test_cpu_graph
TESTS += tests/unit/test_cpu_graph
tests_unit_test_cpu_graph_SOURCES = tests/unit/test_cpu_graph.c \
	tests/helpers/cpu_test_host.c tests/helpers/cpu_test_host.h
tests_unit_test_cpu_graph_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_cpu_graph_LDADD = libdevq_cpu.la $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
# A kernel module built by the test suite for kernel_load from a file.
check_LTLIBRARIES += tests/helpers/cpu_kernels.la
tests_helpers_cpu_kernels_la_SOURCES = tests/helpers/cpu_kernels.c
tests_helpers_cpu_kernels_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere
endif

# ---- cuda area (mk/cuda.mk) ----
if BUILD_CUDA
if HAVE_CHECK
# The emulator alone, called like a real driver.
check_PROGRAMS += tests/unit/test_cuda_emu
TESTS += tests/unit/test_cuda_emu
tests_unit_test_cuda_emu_SOURCES = tests/unit/test_cuda_emu.c
tests_unit_test_cuda_emu_CPPFLAGS = $(GPU_EMU_TEST_CPPFLAGS) -I$(top_srcdir)/plugins/cuda
tests_unit_test_cuda_emu_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_cuda_emu_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_cuda_emu_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
# The plugin-level tests, built once for cuda and hip (mk/tests.mk).
GPU_EMU_TEST_BINS = tests/unit/test_gpu_plugin tests/unit/test_gpu_faults tests/unit/test_gpu_graph
endif
endif
# Device loss seen through lib (fault injected into the emulated driver).
if BUILD_CUDA
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_device_loss
TESTS += tests/unit/test_device_loss
tests_unit_test_device_loss_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_device_loss_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_device_loss_LDADD = libdevq.la $(CHECK_LIBS)
endif
endif
# No false dependency behind a stream held by a device-side wait, and
# in-order completion on a lost device (tests/soak SOAK_XDEV_RELEASE).
if BUILD_CUDA
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_held_alignment
TESTS += tests/unit/test_held_alignment
tests_unit_test_held_alignment_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_held_alignment_LDADD = libdevq.la $(CHECK_LIBS)
endif
endif

# ---- fuzz area (mk/fuzz.mk) ----
# ---- API misuse table (public API, bad arguments) ----
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_misuse
TESTS += tests/unit/test_misuse
tests_unit_test_misuse_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# -export-dynamic: the cpu kernel the table launches is found by name.
tests_unit_test_misuse_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_misuse_LDADD = libdevq.la $(CHECK_LIBS)
endif

# ---- hip area (mk/hip.mk) ----
if BUILD_HIP
if HAVE_CHECK
# The emulator alone, called like the real runtime.
check_PROGRAMS += tests/unit/test_hip_emu
TESTS += tests/unit/test_hip_emu
tests_unit_test_hip_emu_SOURCES = tests/unit/test_hip_emu.c
tests_unit_test_hip_emu_CPPFLAGS = $(GPU_EMU_TEST_CPPFLAGS) $(HIP_CPPFLAGS)
tests_unit_test_hip_emu_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_hip_emu_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
# The plugin-level tests, built once for cuda and hip (mk/tests.mk).
GPU_EMU_TEST_BINS = tests/unit/test_gpu_plugin tests/unit/test_gpu_faults tests/unit/test_gpu_graph
endif
endif
if BUILD_HIP
# The real ROCm runtime, when installed: on a machine without an AMD GPU
# (CI) devq_device_open("hip") must fail with the runtime's reason; it
# skips (77) when libamdhip64.so.5 is absent.
check_PROGRAMS += tests/unit/test_hip_real
TESTS += tests/unit/test_hip_real
tests_unit_test_hip_real_SOURCES = tests/unit/test_hip_real.c
tests_unit_test_hip_real_LDADD = libdevq.la $(PTHREAD_LIBS) $(LIBS)
endif

# ---- loader area (mk/loader.mk) ----
if HAVE_CHECK
# Loader internals: table validation, spec parsing, the report, logging.
check_PROGRAMS += tests/unit/test_loader
TESTS += tests/unit/test_loader
tests_unit_test_loader_SOURCES = tests/unit/test_loader.c
tests_unit_test_loader_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS) $(DEVQ_TEST_PLUGIN_CPPFLAGS)
tests_unit_test_loader_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_loader_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
tests_unit_test_loader_DEPENDENCIES = libdevq_core.la $(DEVQ_LOADER_TEST_PLUGINS)
# The registry through the public API: sharing, races, specs, DEVQ_BACKEND.
check_PROGRAMS += tests/unit/test_device
TESTS += tests/unit/test_device
tests_unit_test_device_SOURCES = tests/unit/test_device.c
tests_unit_test_device_CPPFLAGS = $(AM_CPPFLAGS) $(DEVQ_TEST_PLUGIN_CPPFLAGS)
tests_unit_test_device_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_device_LDADD = libdevq.la $(CHECK_LIBS) $(PTHREAD_LIBS)
tests_unit_test_device_DEPENDENCIES = libdevq.la $(DEVQ_LOADER_TEST_PLUGINS)
# The environment as users meet it: malformed values are -EINVAL naming the
# variable from every open, and the messages of issue 20 item 3.
check_PROGRAMS += tests/unit/test_env
TESTS += tests/unit/test_env
tests_unit_test_env_SOURCES = tests/unit/test_env.c
tests_unit_test_env_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_env_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_env_LDADD = libdevq.la $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# ---- mem area (mk/mem.mk) ----
# Unit tests drive the resources through a fake backend whose events are
# completed by hand, so they link the static core.
MEM_TESTS = tests/unit/test_mem_pool tests/unit/test_mem_decorators tests/unit/test_mem_stack
if HAVE_CHECK
check_PROGRAMS += $(MEM_TESTS)
TESTS += $(MEM_TESTS)
endif
tests_unit_test_mem_pool_SOURCES = tests/unit/test_mem_pool.c tests/helpers/test_mem_fake.c tests/helpers/test_mem_fake.h
tests_unit_test_mem_pool_CPPFLAGS = $(MEM_TEST_CPPFLAGS)
tests_unit_test_mem_pool_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_mem_pool_LDADD = $(MEM_TEST_LDADD)
tests_unit_test_mem_decorators_SOURCES = tests/unit/test_mem_decorators.c tests/helpers/test_mem_fake.c tests/helpers/test_mem_fake.h
tests_unit_test_mem_decorators_CPPFLAGS = $(MEM_TEST_CPPFLAGS)
tests_unit_test_mem_decorators_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_mem_decorators_LDADD = $(MEM_TEST_LDADD)
tests_unit_test_mem_stack_SOURCES = tests/unit/test_mem_stack.c tests/helpers/test_mem_fake.c tests/helpers/test_mem_fake.h
tests_unit_test_mem_stack_CPPFLAGS = $(MEM_TEST_CPPFLAGS)
tests_unit_test_mem_stack_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_mem_stack_LDADD = $(MEM_TEST_LDADD)

# ---- nccl area (mk/nccl.mk) ----
# The emulated libraries alone, called like the real ones: every op, type
# and reduction against a host reference, ranks as threads and as
# processes, stream order, groups, each injected fault.  Tests the RCCL
# face too when hip is built.
if BUILD_CUDA
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_nccl_emu
TESTS += tests/unit/test_nccl_emu
tests_unit_test_nccl_emu_SOURCES = tests/unit/test_nccl_emu.c tests/emu/emu_nccl_reduce.c tests/emu/emu_nccl.h
tests_unit_test_nccl_emu_CPPFLAGS = $(GPU_EMU_TEST_CPPFLAGS) -I$(top_srcdir)/plugins/gpu_common
endif
endif
if BUILD_CUDA
if HAVE_CHECK
if BUILD_HIP
tests_unit_test_nccl_emu_CPPFLAGS += -DTEST_RCCL=1
endif
endif
endif
if BUILD_CUDA
if HAVE_CHECK
tests_unit_test_nccl_emu_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_nccl_emu_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)
EXTRA_tests_unit_test_nccl_emu_DEPENDENCIES = tests/emu/libcuda-emu.la tests/emu/libnccl-emu.la
endif
endif
if BUILD_CUDA
if HAVE_CHECK
if BUILD_HIP
EXTRA_tests_unit_test_nccl_emu_DEPENDENCIES += tests/emu/libamdhip64-emu.la tests/emu/librccl-emu.la
endif
endif
endif

# ---- queue area (mk/queue.mk) ----
# Names' numbers, exactly, in a fresh process per case (devq(7) NAMES).
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_names
TESTS += tests/unit/test_names
tests_unit_test_names_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_names_LDADD = libdevq.la $(CHECK_LIBS)
endif
# devq_stats_get's DEVQ_0.1 layout for old programs (symbol versions).
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_stats_abi
TESTS += tests/unit/test_stats_abi
tests_unit_test_stats_abi_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_stats_abi_LDADD = libdevq.la $(CHECK_LIBS) -ldl
endif
# Tracker bookkeeping without a backend (internal API).
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_tracker
TESTS += tests/unit/test_tracker
tests_unit_test_tracker_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_tracker_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_tracker_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
# Allocation failure leaks nothing (the tracker's cross-stream wait, then
# a whole program): libdevq_core linked statically, its malloc, calloc,
# realloc and free wrapped (--wrap).
check_PROGRAMS += tests/unit/test_oom_leaks
TESTS += tests/unit/test_oom_leaks
tests_unit_test_oom_leaks_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_oom_leaks_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free
tests_unit_test_oom_leaks_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
CLEANFILES += test_oom_leaks.trace.json
# A buffer's failure against the order of its writes (internal API).
# Graph submissions count unissued uses as one-shot batches do (issue 30).
check_PROGRAMS += tests/unit/test_graph_counts
TESTS += tests/unit/test_graph_counts
tests_unit_test_graph_counts_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_graph_counts_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_graph_counts_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
# lib's side of native graph runs against a spy backend (issue 30).
check_PROGRAMS += tests/unit/test_graph_native
TESTS += tests/unit/test_graph_native
tests_unit_test_graph_native_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_graph_native_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_graph_native_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS) $(PTHREAD_LIBS)

check_PROGRAMS += tests/unit/test_buffer_gen
TESTS += tests/unit/test_buffer_gen
tests_unit_test_buffer_gen_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_buffer_gen_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_buffer_gen_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
# devq_queue_exec's check against a kernel's declared interface (internal API).
check_PROGRAMS += tests/unit/test_kernel_args
TESTS += tests/unit/test_kernel_args
tests_unit_test_kernel_args_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_kernel_args_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_kernel_args_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
endif
# devq_kernel_load_fn: cpu kernels by function pointer, in a program
# linked without -export-dynamic (nothing found by name); its -ENOTSUP
# case on the emulated CUDA driver skips in a build without cuda.
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_kernel_fn
TESTS += tests/unit/test_kernel_fn
tests_unit_test_kernel_fn_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_kernel_fn_LDADD = libdevq.la $(CHECK_LIBS)
EXTRA_tests_unit_test_kernel_fn_DEPENDENCIES = tests/helpers/cpu_kernels.la
if BUILD_CUDA
EXTRA_tests_unit_test_kernel_fn_DEPENDENCIES += tests/emu/libcuda-emu.la
endif
endif
# The object header alone (lib/base/object.h, internal API): one
# retain/release/destroy path, the deferrer of last releases, the
# registry's unref, the reference set; a bounded stress of concurrent
# retain/release.
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_object
TESTS += tests/unit/test_object
tests_unit_test_object_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_object_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_object_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
endif
# No polling: an idle process with pending notifies and idle queues.
if HAVE_CHECK
check_PROGRAMS += tests/unit/test_idle
TESTS += tests/unit/test_idle
tests_unit_test_idle_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_idle_LDADD = libdevq.la $(CHECK_LIBS)
endif
# Memory in the trace (alloc/free slices, the counter drawn) and the budget
# refusal at DEVQ_LOG=basic; tests/helpers/mem_events is the program it runs.
check_PROGRAMS += tests/helpers/mem_events
tests_helpers_mem_events_SOURCES = tests/helpers/mem_events.c
tests_helpers_mem_events_LDADD = libdevq.la
# No heap growth with the number of batches completed (issue 19); not
# timed; skips under sanitizers and valgrind.
check_PROGRAMS += tests/unit/test_rss_flat
TESTS += tests/unit/test_rss_flat
tests_unit_test_rss_flat_LDADD = libdevq.la

# ---- signal area (mk/signal.mk) ----
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
endif

# ---- tests area (mk/tests.mk) ----
# The plugin-level tests of the GPU backends (tests/emu/gpu_test.h), built
# once when cuda or hip is (mk/cuda.mk and mk/hip.mk set
# GPU_EMU_TEST_BINS) and run per backend by the wrappers
# tests/gpu-{plugin,faults}-{cuda,hip}-emu.  They dlopen the plugin with a
# host table of their own (no libdevq) over the emulated driver.
# -export-dynamic: emulated kernels are functions of the test, found with
# dlsym(RTLD_DEFAULT).
check_PROGRAMS += $(GPU_EMU_TEST_BINS)
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
tests_unit_test_gpu_graph_SOURCES = tests/unit/test_gpu_graph.c tests/emu/test_host.c tests/emu/test_host.h \
	tests/emu/gpu_test.h
tests_unit_test_gpu_graph_CPPFLAGS = $(GPU_EMU_TEST_CPPFLAGS)
tests_unit_test_gpu_graph_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_gpu_graph_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_gpu_graph_LDADD = $(GPU_EMU_TEST_LDADD)
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
EXTRA_DIST += tests/helpers/cuda_emu_check.h tests/helpers/check_main.h tests/helpers/host_fns.h tests/helpers/plain_expect.h
endif
endif
if BUILD_CUDA
if HAVE_CHECK
# A batch completing ahead of earlier ones (its end callback could not be
# queued) must not let finish return early.
check_PROGRAMS += tests/unit/test_completion_order
TESTS += tests/unit/test_completion_order
tests_unit_test_completion_order_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_completion_order_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_unit_test_completion_order_LDADD = libdevq.la $(CHECK_LIBS)
EXTRA_tests_unit_test_completion_order_DEPENDENCIES = tests/emu/libcuda-emu.la
# A backend refusing an op of a one-shot batch: the straight line
# (lib/queue/straight.c) fails it as the general path does.
check_PROGRAMS += tests/unit/test_straight_refused
TESTS += tests/unit/test_straight_refused
tests_unit_test_straight_refused_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_straight_refused_LDADD = libdevq.la $(CHECK_LIBS)
EXTRA_tests_unit_test_straight_refused_DEPENDENCIES = tests/emu/libcuda-emu.la
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

# ---- vulkan area (mk/vulkan.mk) ----
if BUILD_VULKAN
# The plugin's own behaviour (kernel_load refusals, unaligned fills and
# copies, launches past maxComputeWorkGroupCount).
check_PROGRAMS += tests/unit/test_vulkan
tests_unit_test_vulkan_SOURCES = tests/unit/test_vulkan.c
tests_unit_test_vulkan_LDADD = libdevq.la
endif
if BUILD_VULKAN
# The plugin alone through its ops table: kernel_iface of several
# shaders, its own launch checks, a hidden feature (-ENOTSUP).
check_PROGRAMS += tests/unit/test_vulkan_iface
tests_unit_test_vulkan_iface_SOURCES = tests/unit/test_vulkan_iface.c tests/helpers/host_fns.h
tests_unit_test_vulkan_iface_LDADD = -ldl
EXTRA_tests_unit_test_vulkan_iface_DEPENDENCIES = plugins/vulkan/devq-vulkan.la
endif
if BUILD_VULKAN
# Native graph runs (graph_* ops) through the plugin's ops table alone:
# reused, re-recorded and destroyed-while-pending command buffers.
check_PROGRAMS += tests/unit/test_vulkan_graph
tests_unit_test_vulkan_graph_SOURCES = tests/unit/test_vulkan_graph.c tests/helpers/host_fns.h
tests_unit_test_vulkan_graph_LDADD = -ldl
EXTRA_tests_unit_test_vulkan_graph_DEPENDENCIES = plugins/vulkan/devq-vulkan.la
endif
if BUILD_VULKAN
# Host copies by import, mapping and staging: the same bytes.
check_PROGRAMS += tests/unit/test_vulkan_copies
tests_unit_test_vulkan_copies_SOURCES = tests/unit/test_vulkan_copies.c
tests_unit_test_vulkan_copies_LDADD = libdevq.la
endif
if BUILD_VULKAN
# Device loss (injected: DEVQ_VULKAN_INJECT_DEVICE_LOST) fails every
# pending signal and buffer.
check_PROGRAMS += tests/unit/test_vulkan_lost
tests_unit_test_vulkan_lost_SOURCES = tests/unit/test_vulkan_lost.c
tests_unit_test_vulkan_lost_LDADD = libdevq.la
endif

# The straight line for one-shot batches (lib/queue/straight.c): taken
# only when its conditions hold (reads the device's internal count).
check_PROGRAMS += tests/unit/test_straight
TESTS += tests/unit/test_straight
tests_unit_test_straight_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_straight_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_straight_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)

# Signal tails (the backend's signal_tail, lib/queue/straight.c): taken
# only when a batch cannot fail but on the stream; failures still reach
# the signal (reads the device's internal count of tails).
check_PROGRAMS += tests/unit/test_tail
TESTS += tests/unit/test_tail
tests_unit_test_tail_CPPFLAGS = $(DEVQ_INTERNAL_CPPFLAGS)
tests_unit_test_tail_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_tail_LDADD = $(DEVQ_INTERNAL_LIBS) $(CHECK_LIBS)
