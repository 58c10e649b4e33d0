#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `step`: v[0] must be `expect` and becomes expect + 1.
// A shader cannot fail its dispatch, so a step that sees the wrong value
// writes 0xffffffff instead: no later step matches, and the test's final
// value is wrong.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) buffer V { uint v[]; };
layout(push_constant) uniform P { uint expect; };

void main()
{
    if (gl_GlobalInvocationID != uvec3(0))
        return;
    v[0] = v[0] == expect ? expect + 1u : 0xffffffffu;
}
