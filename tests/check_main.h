/* SPDX-License-Identifier: MIT */
/* tests/emu/ (the GPU driver split's area) still includes "../check_main.h";
 * the header lives in tests/helpers/ with the other shared helpers.
 * Remove this once tests/emu includes "../helpers/check_main.h". */
#include "helpers/check_main.h"
