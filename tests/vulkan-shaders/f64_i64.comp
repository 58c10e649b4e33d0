#version 450
// SPDX-License-Identifier: MIT
// test_vulkan.c `f64_i64`: a double and an int64 push constant (the
// features shaderFloat64 and shaderInt64).  The uint before the double
// needs a padding member: std430 puts an 8-byte member at a multiple of 8.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) buffer D { double d[]; };
layout(binding = 1) buffer Q { int64_t q[]; };
layout(push_constant) uniform P {
    uint n;
    uint pad;
    double scale;
    int64_t add;
};

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < n) {
        d[i] = double(i) * scale;
        q[i] = int64_t(i) * add - 1;
    }
}
