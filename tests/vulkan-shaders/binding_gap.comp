#version 450
// SPDX-License-Identifier: MIT
// test_vulkan.c: bindings 0 and 2, none at 1 (refused at load: devq
// binds buffer arguments to bindings 0..n-1).
layout(local_size_x = 1) in;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 2) buffer C { uint c[]; };

void main()
{
    c[0] = a[0];
}
