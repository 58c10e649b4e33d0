#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `scale`: x[i] *= s.  See devq-vulkan(7) for the
// argument ABI: buffers are bindings 0.., values push constants in order.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) buffer X { float x[]; };
layout(push_constant) uniform P { float s; };

void main()
{
    uint j = gl_GlobalInvocationID.x;
    if (j < x.length())
        x[j] *= s;
}
