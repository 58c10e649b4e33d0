#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `add_u32`: v[i] += n.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) buffer V { uint v[]; };
layout(push_constant) uniform P { uint n; };

void main()
{
    uint j = gl_GlobalInvocationID.x;
    if (j < v.length())
        v[j] += n;
}
