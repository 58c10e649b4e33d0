#version 450
/* SPDX-License-Identifier: MIT */
// y = a*x + y, the kernel of examples/saxpy-vulkan.c and of the vulkan
// rows of bench/bench_vulkan.c.  The argument ABI of devq-vulkan(7):
// buffer arguments are bindings 0, 1, ...; values are push constants, in
// argument order; devq_launch.local is specialization constants 0..2.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { float a; uint n; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < n)
        y[i] = fma(a, x[i], y[i]);
}
