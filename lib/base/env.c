#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "error.h"

const char *devq__getenv(const char *name)
{
#ifdef HAVE_SECURE_GETENV
    return secure_getenv(name);
#else
    return getenv(name);
#endif
}

int devq__parse_uint(const char *var, const char *text, uint64_t max, uint64_t *out)
{
    if (!text || !*text)
        return devq__err(-EINVAL, "%s: empty value; expected a number", var);
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return devq__err(-EINVAL, "%s='%.64s': not a non-negative integer", var, text);
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return devq__err(-EINVAL, "%s='%.64s': too large", var, text);
        v = v * 10 + d;
    }
    if (v > max)
        return devq__err(-EINVAL, "%s='%.64s': above the limit %llu", var, text,
                         (unsigned long long)max);
    *out = v;
    return 0;
}

int devq__parse_size(const char *var, const char *text, uint64_t *out)
{
    if (!text || !*text)
        return devq__err(-EINVAL, "%s: empty value; expected a size like 64M", var);
    const char *p = text;
    uint64_t v = 0;
    if (!isdigit((unsigned char)*p))
        return devq__err(-EINVAL, "%s='%.64s': expected a size like 512K, 64M or 2G", var, text);
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return devq__err(-EINVAL, "%s='%.64s': too large", var, text);
        v = v * 10 + d;
        p++;
    }
    unsigned shift = 0;
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; p++; break;
    case 'M': shift = 20; p++; break;
    case 'G': shift = 30; p++; break;
    case 'T': shift = 40; p++; break;
    default: break;
    }
    if (shift && *p == 'i')
        p++;
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p)
        return devq__err(-EINVAL, "%s='%.64s': unknown suffix '%.16s'; use K, M, G or T", var, text, p);
    if (shift && v > (UINT64_MAX >> shift))
        return devq__err(-EINVAL, "%s='%.64s': too large", var, text);
    *out = v << shift;
    return 0;
}
