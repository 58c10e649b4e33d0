#version 450
// SPDX-License-Identifier: MIT
// test_vulkan_iface.c: two buffers and a push-constant block of members
// of several sizes (float at 0, uint[3] at 4, double at 16: 24 bytes).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) buffer A { float a[]; };
layout(binding = 1) buffer B { double b[]; };
layout(push_constant) uniform P {
    float f;
    uint u[3];
    double x;
};

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < u[0])
        b[i] = double(a[i] * f) + x + double(u[1] + u[2]);
}
