# SPDX-License-Identifier: MIT
# tests/gpu: devq on a real NVIDIA GPU.  run.sh (by hand on a machine with
# a GPU, never in `make check`) runs the conformance suites on the device
# with the PTX kernels of conf_kernels.ptx.  That file is generated from
# conf_kernels.cu but committed, since CI has no nvcc: `make gpu-ptx`
# regenerates it where nvcc is (CUDA_HOME, else the --with-cuda dir).
# make check tests it without a GPU: ptx-kernels (everywhere) compares its
# entry points with tests/conformance/conf_kernels.c, ptx-assemble (where
# ptxas is; else skipped) assembles it for a few GPU generations.
EXTRA_DIST += mk/gpu.mk tests/gpu/conf_kernels.cu tests/gpu/conf_kernels.ptx
dist_noinst_SCRIPTS += tests/gpu/gen-ptx.sh tests/gpu/ptx-kernels tests/gpu/ptx-assemble
TESTS += tests/gpu/ptx-kernels tests/gpu/ptx-assemble

# Without CUDA_HOME: the toolkit configure was pointed at (--with-cuda).
.PHONY: gpu-ptx
gpu-ptx:
	@cuda_home=$${CUDA_HOME:-'$(CUDA_TOOLKIT_DIR)'}; \
	CUDA_HOME=$$cuda_home $(SHELL) $(top_srcdir)/tests/gpu/gen-ptx.sh \
	    $(top_srcdir)/tests/gpu/conf_kernels.cu $(top_srcdir)/tests/gpu/conf_kernels.ptx
