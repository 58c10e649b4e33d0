/* SPDX-License-Identifier: MIT */
/* tests/emu/ (the GPU driver split's area) still includes "../host_fns.h";
 * the header lives in tests/helpers/ with the other shared helpers.
 * Remove this once tests/emu includes "../helpers/host_fns.h". */
#include "helpers/host_fns.h"
