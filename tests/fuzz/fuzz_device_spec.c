/* SPDX-License-Identifier: MIT */
/* devq__spec_parse (lib/device_spec.c): the spec of devq_device_open,
 * "cpu" or "cuda:1", given as len bytes with no terminator; plus
 * devq__edit_distance, which ranks "did you mean" candidates for an
 * unknown backend name.  Properties: an accepted spec has a valid name
 * and, printed back, parses to the same thing; a refused one explains
 * itself; the distance is symmetric and bounded by the longer string. */
#include "config.h"
#include <errno.h>
#include "device_spec.h"
#include "fuzz.h"

static int name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > 15)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_'))
            return 0;
    return 1;
}

static void check_spec(const uint8_t *data, size_t size)
{
    /* An exact-size heap copy: reading one byte past len trips ASan. */
    char *text = size ? malloc(size) : NULL;
    if (size && !text)
        abort();
    if (size)
        memcpy(text, data, size);
    struct devq_spec s;
    char why[96];
    why[0] = '\0';
    int r = devq__spec_parse(text, size, &s, why, sizeof why);
    if (r < 0) {
        FUZZ_CHECK(r == -EINVAL, "r=%d", r);
        FUZZ_CHECK(why[0] != '\0', "refused without a reason");
        FUZZ_CHECK(strlen(why) < sizeof why, "reason overflow");
    } else {
        FUZZ_CHECK(r == 0, "r=%d", r);
        FUZZ_CHECK(name_ok(s.name), "accepted name '%s'", s.name);
        char again[40];
        int n = s.has_ordinal ? snprintf(again, sizeof again, "%s:%u", s.name, s.ordinal)
                              : snprintf(again, sizeof again, "%s", s.name);
        struct devq_spec t;
        FUZZ_CHECK(devq__spec_parse(again, (size_t)n, &t, why, sizeof why) == 0,
                   "'%s' does not parse again: %s", again, why);
        FUZZ_CHECK(!strcmp(s.name, t.name) && s.has_ordinal == t.has_ordinal && s.ordinal == t.ordinal,
                   "'%s' changed on reparse", again);
        /* Only leading zeros may make the reprint shorter than the input. */
        FUZZ_CHECK((size_t)n <= size, "reprint '%s' longer than input", again);
    }
    /* why_len 0 must not write at all. */
    char untouched = 'x';
    devq__spec_parse(text, size, &s, &untouched, 0);
    FUZZ_CHECK(untouched == 'x', "wrote into a zero-length reason");
    free(text);
}

static void check_distance(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t alen = nul ? (size_t)(nul - data) : size / 2;
    char *a = fuzz_cstring(data, alen);
    char *b = fuzz_cstring(data + alen + (nul ? 1 : 0), size - alen - (nul ? 1 : 0));
    unsigned ab = devq__edit_distance(a, b), ba = devq__edit_distance(b, a);
    size_t la = strnlen(a, 31), lb = strnlen(b, 31);
    FUZZ_CHECK(ab == ba, "d(a,b)=%u d(b,a)=%u", ab, ba);
    FUZZ_CHECK(ab <= (la > lb ? la : lb), "d=%u above max length", ab);
    FUZZ_CHECK(ab >= (la > lb ? la - lb : lb - la), "d=%u below length difference", ab);
    FUZZ_CHECK(devq__edit_distance(a, a) == 0, "d(a,a) != 0");
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_spec(data, size);
    check_distance(data, size);
    return 0;
}
