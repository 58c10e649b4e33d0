# SPDX-License-Identifier: MIT
# nccl area: the emulated NCCL and RCCL that the cuda and hip plugins'
# channels (DESIGN.md §11) are tested on, never installed, and their test.
# NCCL and RCCL are not in Debian and need a GPU: like the emulated
# drivers, these libraries keep the real semantics on host threads
# (tests/emu/README.md).  The declarations of the NCCL API the plugins
# use are plugins/gpu_common/nccl_abi.h.

NCCL_EMU_SOURCES = tests/emu/emu_nccl.c tests/emu/emu_nccl.h tests/emu/emu_nccl_reduce.c \
	tests/emu/emu_export.h
NCCL_EMU_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/emu -I$(top_srcdir)/plugins/gpu_common
NCCL_EMU_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere -no-undefined
NCCL_EMU_LIBS = $(PTHREAD_LIBS) -lrt $(LIBS)

# The NCCL face, over libcuda-emu.so's streams: tests/emu/.libs/libnccl-emu.so
# (stands for libnccl.so.2).  The emulated drivers export their engine
# (emu_export.c: devq_emu_engine) so it enqueues on their streams.
if BUILD_CUDA
tests_emu_libcuda_emu_la_SOURCES += tests/emu/emu_export.c tests/emu/emu_export.h
check_LTLIBRARIES += tests/emu/libnccl-emu.la
tests_emu_libnccl_emu_la_CPPFLAGS = $(NCCL_EMU_CPPFLAGS)
tests_emu_libnccl_emu_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_libnccl_emu_la_LDFLAGS = $(NCCL_EMU_LDFLAGS)
tests_emu_libnccl_emu_la_LIBADD = $(NCCL_EMU_LIBS)
tests_emu_libnccl_emu_la_SOURCES = $(NCCL_EMU_SOURCES)
endif

# The RCCL face, over libamdhip64-emu.so's streams: librccl-emu.so (for
# librccl.so.1).
if BUILD_HIP
tests_emu_libamdhip64_emu_la_SOURCES += tests/emu/emu_export.c tests/emu/emu_export.h
check_LTLIBRARIES += tests/emu/librccl-emu.la
tests_emu_librccl_emu_la_CPPFLAGS = $(NCCL_EMU_CPPFLAGS) -DEMU_RCCL
tests_emu_librccl_emu_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_emu_librccl_emu_la_LDFLAGS = $(NCCL_EMU_LDFLAGS)
tests_emu_librccl_emu_la_LIBADD = $(NCCL_EMU_LIBS)
tests_emu_librccl_emu_la_SOURCES = $(NCCL_EMU_SOURCES)
endif

# Channels on the GPU backends over the emulated libraries: the GPU
# channel suite (tests/channel/chan_gpu.c), two ranks as processes, on
# cuda over NCCL and on hip over RCCL (tests/channels-{cuda,hip}-emu).
CHAN_GPU_DEPS =
if BUILD_CUDA
check_PROGRAMS += tests/channel/chan_gpu
CHAN_GPU_DEPS += tests/emu/libcuda-emu.la tests/emu/libnccl-emu.la
else
if BUILD_HIP
check_PROGRAMS += tests/channel/chan_gpu
endif
endif
if BUILD_HIP
CHAN_GPU_DEPS += tests/emu/libamdhip64-emu.la tests/emu/librccl-emu.la
endif
EXTRA_tests_channel_chan_gpu_DEPENDENCIES = $(CHAN_GPU_DEPS)
tests_channel_chan_gpu_SOURCES = tests/channel/chan_gpu.c tests/channel/chan_ref.h plugins/mpi/half.h
tests_channel_chan_gpu_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_channel_chan_gpu_LDADD = libdevq.la

if BUILD_MPI
if BUILD_CUDA
EXTRA_tests_channel_mpi_comm_DEPENDENCIES = $(CHAN_GPU_DEPS)
else
if BUILD_HIP
EXTRA_tests_channel_mpi_comm_DEPENDENCIES = $(CHAN_GPU_DEPS)
endif
endif
endif
