#version 450
// SPDX-License-Identifier: MIT
// test_vulkan.c: a uniform buffer is outside devq's ABI (refused at load).
layout(local_size_x = 1) in;
layout(binding = 0) uniform U { uint u; };
layout(binding = 1) buffer V { uint v[]; };

void main()
{
    v[0] = u;
}
