#version 450
// SPDX-License-Identifier: MIT
// test_vulkan_iface.c: a kernel without buffers or push constants.
layout(local_size_x = 1) in;
shared uint s;

void main()
{
    s = gl_LocalInvocationIndex;
}
