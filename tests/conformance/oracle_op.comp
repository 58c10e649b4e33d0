#version 450
/* SPDX-License-Identifier: MIT */
// conf_kernels.c `oracle_op`, the tracker property test's op: up to three
// buffers with access modes; reads check the version they see (before and
// after an optional delay), writes stamp this op's version.
//
// A shader cannot fail its dispatch, so a wrong version is recorded in the
// data: the op writes POISON into each of its buffers, and any op that
// finds POISON in one of its buffers spreads it to all of its own.  The
// test compares every buffer's final stamp with the sequential reference,
// so a missed hazard anywhere shows there.
#extension GL_EXT_shader_realtime_clock : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(binding = 0) coherent buffer B0 { uint b0[]; };
layout(binding = 1) coherent buffer B1 { uint b1[]; };
layout(binding = 2) coherent buffer B2 { uint b2[]; };
layout(push_constant) uniform P {
    uint modes[3];      // 0 unused, else DEVQ_READ (1) / DEVQ_WRITE (2) / both
    uint expect[3];
    uint me;
    uint delay_us;
};

const uint POISON = 0xffffffffu;

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

uint load(uint k)
{
    return k == 0u ? b0[0] : k == 1u ? b1[0] : b2[0];
}

void store(uint k, uint v)
{
    if (k == 0u) b0[0] = v;
    else if (k == 1u) b1[0] = v;
    else b2[0] = v;
}

bool check()
{
    bool ok = true;
    for (uint k = 0u; k < 3u; k++) {
        if (modes[k] == 0u)
            continue;
        uint v = load(k);
        if (v == POISON || ((modes[k] & 1u) != 0u && v != expect[k]))
            ok = false;
    }
    return ok;
}

void main()
{
    if (gl_GlobalInvocationID != uvec3(0))
        return;
    bool ok = check();
    if (delay_us != 0u)
        ok = spin_ns(delay_us * 1000u) != 0xffffffffu && ok;   // (never 4.3 s)
    ok = ok && check();   // overwritten while we read: a missed WAR
    for (uint k = 0u; k < 3u; k++) {
        if (!ok && modes[k] != 0u)
            store(k, POISON);
        else if ((modes[k] & 2u) != 0u)
            store(k, me);
    }
}
