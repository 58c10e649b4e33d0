# SPDX-License-Identifier: MIT
# The scripts group: the shell-driven tests of tests/scripts/ and the
# wrappers that run a program per backend, under mpirun or under
# tests/scripts/vulkan-run, registered here and nowhere else (HACKING.md,
# Tests).  The programs they run are built by mk/tests-unit.mk or their
# area's fragment.

# ---- channel area (mk/channel.mk) ----
TESTS += tests/scripts/channels-mpi
dist_noinst_SCRIPTS += tests/scripts/channels-mpi tests/scripts/mpi-run
dist_noinst_SCRIPTS += tests/scripts/channels-mpi-netns
dist_noinst_SCRIPTS += tests/scripts/channels-mpi-comm
if BUILD_MPI
TESTS += tests/scripts/channels-mpi-comm
endif
TESTS += tests/scripts/data-parallel-mpi
dist_noinst_SCRIPTS += tests/scripts/data-parallel-mpi

# ---- cuda area (mk/cuda.mk) ----
if BUILD_CUDA
if HAVE_CHECK
TESTS += tests/scripts/gpu-plugin-cuda-emu tests/scripts/gpu-faults-cuda-emu tests/scripts/gpu-graph-cuda-emu
# The conformance graph suite takes the drivers' graphs on cuda and hip
# over the emulators (their call log), and replays without them.
TESTS += tests/scripts/graph-native-emu
endif
endif
# plugins/cuda/cuda_decls.h against the toolkit's cuda.h and cudaTypedefs.h
# (every type, value and signature); skipped (77) without a toolkit.
TESTS += tests/scripts/cuda-decls.sh
dist_noinst_SCRIPTS += tests/scripts/cuda-decls.sh
# plugins/gpu_common/nccl_abi.h (ours too) against a real nccl.h (the
# toolkit's include folder, or NCCL_INCLUDE_DIR); skipped without one.
TESTS += tests/scripts/nccl-decls.sh
dist_noinst_SCRIPTS += tests/scripts/nccl-decls.sh
# The emulated drivers (tests/emu) export exactly the symbols they did
# before their faces shared a front end: every face and HIP variant.
TESTS += tests/scripts/emu-exports.sh
dist_noinst_SCRIPTS += tests/scripts/emu-exports.sh
# The backend-agnostic suites against cuda on the emulated driver:
# mk/tests-conformance.mk.
dist_noinst_SCRIPTS += tests/scripts/gpu-plugin-cuda-emu tests/scripts/gpu-faults-cuda-emu \
	tests/scripts/gpu-graph-cuda-emu tests/scripts/graph-native-emu

# ---- dist area (mk/dist.mk) ----
TESTS += tests/scripts/licence.sh tests/scripts/man-footers.sh

# ---- docs area (mk/docs.mk) ----
# Every function of include/devq/devq.h has a page (or is documented on
# one); every page under man/ is clean under groff -man -ww; every
# example that includes a devq header compiles.  Skips (77)
# without groff.
TESTS += tests/scripts/man-pages.sh
dist_noinst_SCRIPTS += tests/scripts/man-pages.sh
# Examples marked '.\" run: TEXT' are built, run on cpu and must print TEXT.
TESTS += tests/scripts/man-examples-run.sh
dist_noinst_SCRIPTS += tests/scripts/man-examples-run.sh

# ---- fuzz area (mk/fuzz.mk) ----
dist_noinst_SCRIPTS += tests/scripts/fuzz-corpora
TESTS += tests/scripts/fuzz-corpora

# ---- hip area (mk/hip.mk) ----
if BUILD_HIP
if HAVE_CHECK
TESTS += tests/scripts/gpu-plugin-hip-emu tests/scripts/gpu-faults-hip-emu tests/scripts/gpu-graph-hip-emu
endif
endif
dist_noinst_SCRIPTS += tests/scripts/gpu-plugin-hip-emu tests/scripts/gpu-faults-hip-emu \
	tests/scripts/gpu-graph-hip-emu

# ---- lib area (mk/lib.mk) ----
# The layer rule, from the built objects: fails on an upward call or a
# circle of calls larger than 5 files.
TESTS += tests/scripts/layers.sh
dist_noinst_SCRIPTS += tests/scripts/layers.sh
EXTRA_DIST += tests/scripts/layers.py
# The exports: every DEVQ_API function of include/devq/ named in
# lib/libdevq.map, in its release's version node, and exported so.
TESTS += tests/scripts/exports.sh
dist_noinst_SCRIPTS += tests/scripts/exports.sh

# ---- loader area (mk/loader.mk) ----
# Programs run from the build tree find the plugins built beside it with
# DEVQ_PLUGIN_PATH unset (saxpy-vulkan runs, devq-info lists them); a copy
# of libdevq.so outside the build tree does not (skips without vulkan).
TESTS += tests/scripts/build-tree-plugins.sh
EXTRA_DIST += tests/scripts/build-tree-plugins.sh

# ---- nccl area (mk/nccl.mk) ----
if BUILD_CUDA
TESTS += tests/scripts/channels-cuda-emu
endif
if BUILD_HIP
TESTS += tests/scripts/channels-hip-emu
endif
dist_noinst_SCRIPTS += tests/scripts/channels-cuda-emu tests/scripts/channels-hip-emu
# The launcher's world and devq_channel_create_mpi on cuda/hip: the MPI
# engine carries rank 0's NCCL/RCCL id (lib/channel/bootstrap.c); the
# program is tests/channel/mpi_comm.c under mpirun (needs MPI too).
dist_noinst_SCRIPTS += tests/scripts/channels-mpi-cuda-emu tests/scripts/channels-mpi-hip-emu
if BUILD_MPI
if BUILD_CUDA
TESTS += tests/scripts/channels-mpi-cuda-emu
endif
endif
if BUILD_MPI
if BUILD_HIP
TESTS += tests/scripts/channels-mpi-hip-emu
endif
endif

# ---- queue area (mk/queue.mk) ----
# Its output: one ratio convention, aligned columns, --compare.
TESTS += tests/scripts/test_devq_bench.sh
dist_noinst_SCRIPTS += tests/scripts/test_devq_bench.sh
TESTS += tests/scripts/test_logging.sh
dist_noinst_SCRIPTS += tests/scripts/test_logging.sh
TESTS += tests/scripts/test_trace.sh
dist_noinst_SCRIPTS += tests/scripts/test_trace.sh
TESTS += tests/scripts/test_mem_trace.sh
dist_noinst_SCRIPTS += tests/scripts/test_mem_trace.sh

# ---- signal area (mk/signal.mk) ----
if HAVE_CHECK
if BUILD_CUDA
TESTS += tests/scripts/signal-peer-cuda-emu
endif
endif
dist_noinst_SCRIPTS += tests/scripts/signal-peer-cuda-emu

# ---- tools area (mk/tools.mk) ----
# devq-info with broken plugins on the path: every one named with its
# reason, valid JSON, the no-accelerator line, -e.  Needs the test plugins
# of mk/loader.mk, which 'make check' builds first.
TESTS += tests/scripts/test_devq_info.sh
EXTRA_DIST += tests/scripts/test_devq_info.sh
# Its SVG of a known trace parsed as XML: lanes, ops, arrows, the break
# for an idle tail, 1-2-5 ticks, the legend; the options.
TESTS += tests/scripts/test_trace_svg.sh
# devq(7), devq-info(1) and the README list exactly the variables of the
# environment table (lib/base/env_table.c), as devq-info -e prints it.
TESTS += tests/scripts/test_env_docs.sh
EXTRA_DIST += tests/scripts/test_env_docs.sh

# ---- vulkan area (mk/vulkan.mk) ----
if BUILD_VULKAN
TESTS += tests/scripts/saxpy-vulkan
endif
if BUILD_VULKAN
TESTS += tests/scripts/vulkan-plugin
endif
if BUILD_VULKAN
TESTS += tests/scripts/vulkan-iface
endif
if BUILD_VULKAN
TESTS += tests/scripts/vulkan-graph
endif
if BUILD_VULKAN
TESTS += tests/scripts/vulkan-copies
endif
if BUILD_VULKAN
TESTS += tests/scripts/vulkan-lost
endif
if BUILD_VULKAN
if HAVE_CHECK
# The conformance suite on the installed Vulkan driver, validation layer
# on, failing on any validation message: mk/tests-conformance.mk.
# A queue whose completion thread cannot start (issue 27, mk/tests.mk).
TESTS += tests/scripts/exhaust-vulkan
# The conformance graph suite on vulkan through the native graph ops.
TESTS += tests/scripts/vulkan-graph-native
endif
endif
dist_noinst_SCRIPTS += tests/scripts/exhaust-vulkan tests/scripts/vulkan-spirv tests/scripts/vulkan-run tests/scripts/saxpy-vulkan tests/scripts/vulkan-plugin \
	tests/scripts/vulkan-iface tests/scripts/vulkan-graph tests/scripts/vulkan-graph-native tests/scripts/vulkan-copies tests/scripts/vulkan-lost
# The committed SPIR-V is what glslc makes of the .comp files today:
# regenerated and compared where glslc is (else skipped).
TESTS += tests/scripts/vulkan-spirv
