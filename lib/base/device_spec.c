/* SPDX-License-Identifier: MIT */
/* Parsers for device specs and DEVQ_BACKEND.  Error reasons say what is
 * wrong and what a valid value looks like; callers add the context (the
 * function or the variable). */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "device_spec.h"

static int fail(char *why, size_t why_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why_len)
        vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

int devq__spec_parse(const char *text, size_t len, struct devq_spec *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (!text || len == 0)
        return fail(why, why_len,
                    "empty device spec; use a backend name like 'cpu', "
                    "a device like 'cpu:0', or NULL for the default");
    const char *colon = memchr(text, ':', len);
    size_t nlen = colon ? (size_t)(colon - text) : len;
    if (nlen == 0)
        return fail(why, why_len, "missing backend name before ':'; use e.g. 'cpu:0'");
    if (nlen > 15)
        return fail(why, why_len, "backend name longer than 15 characters");
    for (size_t i = 0; i < nlen; i++)
        if (!name_char(text[i]))
            return fail(why, why_len, "backend name '%.*s' has '%c'; names are [a-z0-9_]", (int)nlen, text,
                        text[i]);
    memcpy(out->name, text, nlen);
    if (!colon)
        return 0;

    const char *p = colon + 1;
    size_t plen = len - nlen - 1;
    if (plen == 0)
        return fail(why, why_len, "missing ordinal after '%s:'; use e.g. '%s:0'", out->name, out->name);
    uint64_t v = 0;
    for (size_t i = 0; i < plen; i++) {
        if (p[i] < '0' || p[i] > '9')
            return fail(why, why_len, "ordinal '%.*s' is not a non-negative integer; use e.g. '%s:0'",
                        (int)(plen > 32 ? 32 : plen), p, out->name);
        v = v * 10 + (uint64_t)(p[i] - '0');
        if (v > UINT32_MAX)
            return fail(why, why_len, "ordinal '%.*s' is too large", (int)(plen > 32 ? 32 : plen), p);
    }
    out->has_ordinal = 1;
    out->ordinal = (uint32_t)v;
    return 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

int devq__backend_pref_parse(const char *text, struct devq_backend_pref *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    const char *p = text ? text : "";
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        p = *end ? end + 1 : end;
        if (a == b)
            continue; /* "cuda,,cpu" and trailing commas are harmless */

        int exclude = *a == '^';
        if (exclude)
            a++;
        struct devq_spec s;
        char inner[192];
        if (devq__spec_parse(a, (size_t)(b - a), &s, inner, sizeof inner) < 0)
            return fail(why, why_len, "entry '%s%.*s': %s", exclude ? "^" : "",
                        (int)(b - a > 32 ? 32 : b - a), a, inner);
        if (exclude) {
            if (s.has_ordinal)
                return fail(why, why_len, "entry '^%s:%u': exclude a whole backend ('^%s')", s.name,
                            s.ordinal, s.name);
            if (out->nexclude == DEVQ_PREF_MAX)
                return fail(why, why_len, "more than %d exclusions", DEVQ_PREF_MAX);
            memcpy(out->exclude[out->nexclude++], s.name, sizeof s.name);
        } else {
            if (out->nwant == DEVQ_PREF_MAX)
                return fail(why, why_len, "more than %d entries", DEVQ_PREF_MAX);
            out->want[out->nwant++] = s;
        }
    }
    return 0;
}

int devq__backend_pref_excludes(const struct devq_backend_pref *p, const char *name)
{
    for (size_t i = 0; i < p->nexclude; i++)
        if (!strcmp(p->exclude[i], name))
            return 1;
    return 0;
}

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
    unsigned m = a < b ? a : b;
    return m < c ? m : c;
}

unsigned devq__edit_distance(const char *a, const char *b)
{
    enum { MAXLEN = 31 };
    size_t n = strnlen(a, MAXLEN), m = strnlen(b, MAXLEN);
    unsigned d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            unsigned cost = a[i - 1] != b[j - 1];
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    }
    return d[n][m];
}
