# SPDX-License-Identifier: MIT
# tests area: see HACKING.md.

GPU_EMU_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/emu \
	-DTEST_BUILD_DIR='"$(abs_top_builddir)"'
GPU_EMU_TEST_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS) $(LIBS)

# ThreadSanitizer's suppressions for `make check` in a TSan build
# (HACKING.md, .ci/run); in the tarball so a TSan build of it can use them.
EXTRA_DIST += tests/tsan.supp
