/* SPDX-License-Identifier: MIT */
/* devq__parse_size and devq__parse_uint (lib/env.c): the values of
 * DEVQ_MEM_BUDGET, DEVQ_TRACE_MAX and every numeric variable.  The first
 * byte picks the parser and, for parse_uint, the limit; the rest is the
 * value.  Properties: success means the value round-trips through an
 * independent reading (strtoull plus the suffix), failure leaves *out
 * alone and names the variable in devq_errmsg(). */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <devq/devq.h>
#include "env.h"
#include "fuzz.h"

static const uint64_t limits[] = { 0, 1, 9, 10, 255, 4096, UINT32_MAX, UINT64_MAX - 1, UINT64_MAX };

/* Reference reading of an all-digit prefix: ok=0 on overflow. */
static uint64_t ref_digits(const char *s, const char **end, int *ok)
{
    uint64_t v = 0;
    *ok = 1;
    while (isdigit((unsigned char)*s)) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            *ok = 0;
        v = v * 10 + d;
        s++;
    }
    *end = s;
    return v;
}

static void check_size(const char *text)
{
    const uint64_t canary = 0xdeadbeefcafef00dull;
    uint64_t out = canary;
    int r = devq__parse_size("DEVQ_FUZZ_SIZE", text, &out);
    if (r < 0) {
        FUZZ_CHECK(r == -EINVAL, "r=%d", r);
        FUZZ_CHECK(out == canary, "failed parse wrote %llu", (unsigned long long)out);
        FUZZ_CHECK(strstr(devq_errmsg(), "DEVQ_FUZZ_SIZE") != NULL, "msg '%s'", devq_errmsg());
        return;
    }
    FUZZ_CHECK(r == 0, "r=%d", r);
    const char *end;
    int ok;
    uint64_t v = ref_digits(text, &end, &ok);
    FUZZ_CHECK(end != text && ok, "accepted '%s'", text);
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    case 'T':
        shift = 40;
        end++;
        break;
    }
    if (shift && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    FUZZ_CHECK(*end == '\0', "accepted trailing '%s'", end);
    FUZZ_CHECK(!shift || v <= (UINT64_MAX >> shift), "overflowing '%s' accepted", text);
    FUZZ_CHECK(out == v << shift, "'%s' -> %llu", text, (unsigned long long)out);
}

static void check_uint(const char *text, uint64_t max)
{
    const uint64_t canary = 0x0123456789abcdefull;
    uint64_t out = canary;
    int r = devq__parse_uint("DEVQ_FUZZ_UINT", text, max, &out);
    const char *end;
    int ok;
    uint64_t v = ref_digits(text, &end, &ok);
    int valid = *text && *end == '\0' && ok && v <= max;
    if (r < 0) {
        FUZZ_CHECK(r == -EINVAL, "r=%d", r);
        FUZZ_CHECK(!valid, "rejected valid '%s' (max %llu)", text, (unsigned long long)max);
        FUZZ_CHECK(out == canary, "failed parse wrote %llu", (unsigned long long)out);
        FUZZ_CHECK(strstr(devq_errmsg(), "DEVQ_FUZZ_UINT") != NULL, "msg '%s'", devq_errmsg());
        return;
    }
    FUZZ_CHECK(r == 0 && valid, "accepted '%s' (max %llu)", text, (unsigned long long)max);
    FUZZ_CHECK(out == v, "'%s' -> %llu", text, (unsigned long long)out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    char *text = fuzz_cstring(data + 1, size - 1);
    if (mode & 0x80)
        check_uint(text, limits[(mode & 0x7f) % (sizeof limits / sizeof limits[0])]);
    else
        check_size(text);
    free(text);
    return 0;
}
