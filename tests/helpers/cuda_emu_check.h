/* SPDX-License-Identifier: MIT */
/* The main() of a Check test of libdevq on the emulated CUDA driver:
 * point the cuda plugin at tests/emu's libcuda-emu.so in the build tree,
 * run one test case with a bounded timeout, exit 1 on any failure.  The
 * emulator reads DEVQ_EMU_FAIL once per process; Check forks a child per
 * test, so a test sets its own before opening the device. */
#ifndef DEVQ_TESTS_CUDA_EMU_CHECK_H
#define DEVQ_TESTS_CUDA_EMU_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include "check_main.h"

static inline int cuda_emu_run(TCase *tc, const char *suite)
{
    const char *top = getenv("top_builddir");
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/tests/emu/.libs/libcuda-emu.so", top ? top : ".");
    setenv("DEVQ_CUDA_LIBRARY", lib, 1);
    return check_run(check_suite_of(suite, tc, 60));
}

#endif
