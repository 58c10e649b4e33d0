#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `add`: y[i] += x[i].
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) buffer Y { float y[]; };

void main()
{
    uint j = gl_GlobalInvocationID.x;
    if (j < y.length() && j < x.length())
        y[j] += x[j];
}
