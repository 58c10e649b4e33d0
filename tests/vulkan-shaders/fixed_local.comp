#version 450
// SPDX-License-Identifier: MIT
// test_vulkan*.c: a literal local size (64) and three buffers, no push
// constants: c[i] = a[i] + b[i].
layout(local_size_x = 64) in;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 1) buffer B { uint b[]; };
layout(binding = 2) buffer C { uint c[]; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < c.length())
        c[i] = a[i] + b[i];
}
