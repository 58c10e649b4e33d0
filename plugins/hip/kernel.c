/* SPDX-License-Identifier: MIT */
/* Kernel images: code objects (an AMDGPU ELF, or a clang offload
 * bundle) for hipModuleLoadData.  Loading and launching are gpu_common's
 * (kernel.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hip_plugin.h"

/* Binary images are passed as they are.  Anything else is taken for
 * text (the emulator's modules) and given a terminating NUL, which a
 * size-delimited image may lack. */
bool hip_kernel_is_binary(const void *image, size_t size)
{
    static const unsigned char elf[4] = { 0x7f, 'E', 'L', 'F' };
    static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";
    return (size >= 4 && memcmp(image, elf, 4) == 0) ||
           (size >= sizeof bundle - 1 && memcmp(image, bundle, sizeof bundle - 1) == 0);
}
