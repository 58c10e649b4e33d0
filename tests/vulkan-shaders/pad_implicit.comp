#version 450
// SPDX-License-Identifier: MIT
// test_vulkan_iface.c: a uint then a double with no padding member:
// std430 puts the double at offset 8, so a launch passes a 4-byte
// padding value between them (devq-vulkan(7) "values").
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) buffer D { double d[]; };
layout(push_constant) uniform P {
    uint n;
    double scale;
};

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < n)
        d[i] = double(i) * scale;
}
