/* SPDX-License-Identifier: MIT */
/* DEVQ_EMU_FAIL (tests/emu/emu_engine.c): the emulated drivers' fault
 * injection rules, "func:N:ERROR[,...]".  The parser, parse_faults, is
 * static and runs once from emu_init, so this target compiles the
 * engine file into itself (an #include of the .c file, with no change to
 * it) and calls parse_faults afresh for every input with DEVQ_EMU_FAIL
 * set to the input.  The face is a small stand-in knowing three error
 * names (the engine only asks the face to name errors).  The engine's
 * other files (streams, memory) are linked as they are.
 *
 * Properties: at most EMU_MAX_RULES rules; every kept rule has a
 * function name shorter than its buffer, N >= 1 and a known error; the
 * status is 0 exactly when every non-empty rule was kept; a kept rule
 * fires on exactly its Nth call (checked for small N). */
#include "../emu/emu_engine.c"
#include "fuzz.h"

static const struct {
    const char *name;
    int code;
    bool sticky;
} fuzz_errors[] = {
    { "E_ONE", 1, false },
    { "E_TWO", 2, true },
    { "CUDA_ERROR_OUT_OF_MEMORY", 2, false },
};

static bool fuzz_parse_error(const char *name, int *code, bool *sticky)
{
    for (size_t i = 0; i < sizeof fuzz_errors / sizeof fuzz_errors[0]; i++)
        if (!strcmp(name, fuzz_errors[i].name)) {
            *code = fuzz_errors[i].code;
            *sticky = fuzz_errors[i].sticky;
            return true;
        }
    return false;
}

static const struct emu_face fuzz_face = { .name = "fuzz", .parse_error = fuzz_parse_error };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    if (fuzz_setenv("DEVQ_EMU_FAIL", text) != 0) {
        free(text);
        return 0;
    }
    memset(emu.rules, 0, sizeof emu.rules);
    emu.nrules = 0;
    emu.face = &fuzz_face;
    int st = parse_faults();
    FUZZ_CHECK(st == 0 || st == EMU_E_INVALID_VALUE || st == EMU_E_OUT_OF_MEMORY, "st=%d", st);
    FUZZ_CHECK(emu.nrules >= 0 && emu.nrules <= EMU_MAX_RULES, "nrules=%d", emu.nrules);
    for (int i = 0; i < emu.nrules; i++) {
        struct emu_rule *r = &emu.rules[i];
        FUZZ_CHECK(strnlen(r->func, sizeof r->func) < sizeof r->func, "rule %d name", i);
        FUZZ_CHECK(r->nth >= 1, "rule %d nth=%ld", i, r->nth);
        FUZZ_CHECK(r->fail.code >= 1 && r->fail.code <= 2, "rule %d code=%d", i, r->fail.code);
    }
    /* Count the non-empty comma-separated rules strtok_r sees. */
    int nonempty = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        nonempty += n > 0;
        p += n;
        p += *p == ',';
    }
    FUZZ_CHECK((st == 0) == (emu.nrules == nonempty), "st=%d kept %d of %d rules in '%s'", st, emu.nrules,
               nonempty, text);
    /* The first rule fires on exactly its Nth call when nothing earlier
     * else shares its function name. */
    int shared = 0;
    for (int i = 1; i < emu.nrules; i++)
        shared |= !strcmp(emu.rules[i].func, emu.rules[0].func);
    if (emu.nrules > 0 && !shared && emu.rules[0].nth <= 4) {
        struct emu_rule *r = &emu.rules[0];
        char func[sizeof r->func];
        memcpy(func, r->func, sizeof func);
        long fired_at = 0;
        for (long call = 1; call <= 4; call++) {
            struct emu_fail f = { 0, false };
            if (emu_fault_take(func, &f) && !fired_at)
                fired_at = call;
        }
        FUZZ_CHECK(fired_at == r->nth, "rule '%s:%ld' fired at call %ld", func, r->nth, fired_at);
    }
    memset(emu.rules, 0, sizeof emu.rules);
    emu.nrules = 0;
    free(text);
    return 0;
}
