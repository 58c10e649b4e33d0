#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `slow_copy`: the first work-item spins for ms
// milliseconds, then copies n bytes src -> dst (a slow reader).
#extension GL_EXT_shader_realtime_clock : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) readonly buffer S { uint src[]; };
layout(binding = 1) buffer D { uint dst[]; };
layout(binding = 0) readonly buffer S4 { uvec4 src4[]; };
layout(binding = 1) buffer D4 { uvec4 dst4[]; };
layout(push_constant) uniform P { uint ms; uint n; };

// llvmpipe (lavapipe, Mesa 22) ends an invocation's loops after 65535
// iterations in all, and its clock keeps only the low 32 bits of
// nanoseconds: the spin checks the clock 128 times per iteration (some
// 3 us on lavapipe, so 60 ms take 20000 iterations) and subtracts 32-bit
// values, right across a wrap.
#define SPIN_CHECK now = clockRealtime2x32EXT().x; if (now - start >= ns) return now - start;
#define SPIN_CHECK8 SPIN_CHECK SPIN_CHECK SPIN_CHECK SPIN_CHECK SPIN_CHECK SPIN_CHECK SPIN_CHECK SPIN_CHECK
#define SPIN_CHECK64 SPIN_CHECK8 SPIN_CHECK8 SPIN_CHECK8 SPIN_CHECK8 SPIN_CHECK8 SPIN_CHECK8 SPIN_CHECK8 SPIN_CHECK8
// Returns the time spun: a loop whose result nobody uses may be compiled
// away (llvmpipe does), so every caller uses it.
uint spin_ns(uint ns)
{
    uint start = clockRealtime2x32EXT().x, now;
    for (;;) {
        SPIN_CHECK64 SPIN_CHECK64
    }
}

void main()
{
    if (gl_GlobalInvocationID != uvec3(0))
        return;
    uint spun = spin_ns(ms * 1000000u);
    if (spun == 0xffffffffu)
        return;   // never (a spin of 4.3 s): uses the result
    uint words = n / 4u, rest = n % 4u;
    // 32 words per iteration, to stay within the loop budget.
#define COPY2V(k) dst4[i + k] = src4[i + k]; dst4[i + k + 1u] = src4[i + k + 1u];
    uint i = 0u, vecs = words / 4u;
    for (; i + 8u <= vecs; i += 8u) {
        COPY2V(0u) COPY2V(2u) COPY2V(4u) COPY2V(6u)
    }
    for (i *= 4u; i < words; i++)
        dst[i] = src[i];
    if (rest != 0u) {
        uint mask = (1u << (8u * rest)) - 1u;
        dst[words] = (dst[words] & ~mask) | (src[words] & mask);
    }
}
