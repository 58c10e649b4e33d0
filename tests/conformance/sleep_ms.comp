#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `sleep_ms`: the first work-item spins for ms
// milliseconds on the device's real-time clock (ns).
#extension GL_EXT_shader_realtime_clock : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(push_constant) uniform P { uint ms; };

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

shared uint spun;

void main()
{
    if (gl_GlobalInvocationID == uvec3(0)) {
        atomicAdd(spun, spin_ns(ms * 1000000u));
    }
}
