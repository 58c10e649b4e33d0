/* SPDX-License-Identifier: MIT */
/* The plugin manifest reader (manifest.h): a strict JSON reader for one
 * small format.  Strict because a manifest is outside input that decides
 * which code runs in every devq program: anything that is not exactly
 * JSON (RFC 8259) is refused with its line and column, and nothing in it
 * can make the reader crash, loop or read past the buffer (fuzzed). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "manifest.h"

#define MAX_DEPTH 32

struct reader {
    const char *s;
    size_t n, i;
    char *why;
    size_t whylen;
    int failed;
};

static void note_failure(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first error with its line and column (1-based).  Called
 * as fail(), which yields -EINVAL where the caller can see it (the
 * analyzer does not follow a variadic call's return value). */
#define fail(r, ...) (note_failure((r), __VA_ARGS__), -EINVAL)
static void note_failure(struct reader *r, const char *fmt, ...)
{
    if (r->failed++)
        return;
    size_t line = 1, col = 1;
    for (size_t k = 0; k < r->i && k < r->n; k++) {
        if (r->s[k] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->why, r->whylen, "line %zu, column %zu: %s", line, col, msg);
}

static void skip_ws(struct reader *r)
{
    while (r->i < r->n &&
           (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r'))
        r->i++;
}

static int peek(struct reader *r)
{
    return r->i < r->n ? (unsigned char)r->s[r->i] : -1;
}

static int expect(struct reader *r, char c, const char *what)
{
    skip_ws(r);
    if (peek(r) != c)
        return r->i < r->n ? fail(r, "expected %s", what)
                           : fail(r, "unexpected end of file: expected %s", what);
    r->i++;
    return 0;
}

static int hex4(struct reader *r, unsigned *out)
{
    if (r->n - r->i < 4)
        return fail(r, "\\u needs four hex digits");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = r->s[r->i + (size_t)k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(r, "\\u needs four hex digits");
    }
    r->i += 4;
    *out = v;
    return 0;
}

/* Appends one byte to out (cap bytes with the terminator); a string that
 * does not fit is refused rather than cut (a cut path is another path). */
static int put(struct reader *r, char *out, size_t cap, size_t *len, unsigned char c)
{
    if (!out)
        return 0;
    if (*len + 1 >= cap)
        return fail(r, "string longer than %zu bytes", cap - 1);
    out[(*len)++] = (char)c;
    out[*len] = '\0';
    return 0;
}

static int put_utf8(struct reader *r, char *out, size_t cap, size_t *len, unsigned cp)
{
    unsigned char b[4];
    int n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    for (int k = 0; k < n; k++)
        if (put(r, out, cap, len, b[k]) < 0)
            return -EINVAL;
    return 0;
}

/* A string at r->i (after whitespace); out may be NULL to skip it.  NUL
 * (raw or \u0000) is refused: no C string can hold it. */
static int read_string(struct reader *r, char *out, size_t cap)
{
    size_t len = 0;
    if (out && cap)
        out[0] = '\0';
    if (expect(r, '"', "a string") < 0)
        return -EINVAL;
    for (;;) {
        if (r->i >= r->n)
            return fail(r, "unexpected end of file in a string");
        unsigned char c = (unsigned char)r->s[r->i++];
        if (c == '"')
            return 0;
        if (c < 0x20) {
            r->i--;
            return fail(r, "control character 0x%02x in a string (write it as \\u%04x)", c, c);
        }
        if (c != '\\') {
            if (put(r, out, cap, &len, c) < 0)
                return -EINVAL;
            continue;
        }
        if (r->i >= r->n)
            return fail(r, "unexpected end of file in a string");
        char e = r->s[r->i++];
        unsigned cp;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            cp = (unsigned char)e;
            break;
        case 'b':
            cp = '\b';
            break;
        case 'f':
            cp = '\f';
            break;
        case 'n':
            cp = '\n';
            break;
        case 'r':
            cp = '\r';
            break;
        case 't':
            cp = '\t';
            break;
        case 'u':
            if (hex4(r, &cp) < 0)
                return -EINVAL;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return fail(r, "\\u%04x: a low surrogate without a high one", cp);
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
                    return fail(r, "\\u%04x: a high surrogate without a low one", cp);
                r->i += 2;
                if (hex4(r, &lo) < 0)
                    return -EINVAL;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return fail(r, "\\u%04x\\u%04x: not a surrogate pair", cp, lo);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0)
                return fail(r, "\\u0000 in a string");
            break;
        default:
            r->i--;
            return fail(r, "unknown escape \\%c", e >= 0x20 && e < 0x7f ? e : '?');
        }
        if (put_utf8(r, out, cap, &len, cp) < 0)
            return -EINVAL;
    }
}

/* A JSON number; *integer is set when it has no fraction and no exponent
 * and fits in uint64 (then *value holds it exactly). */
static int read_number(struct reader *r, uint64_t *value, int *integer, int *negative)
{
    skip_ws(r);
    *negative = 0;
    if (peek(r) == '-') {
        *negative = 1;
        r->i++;
    }
    if (peek(r) < '0' || peek(r) > '9')
        return fail(r, "expected a value");
    uint64_t v = 0;
    int fits = 1;
    if (peek(r) == '0') {
        r->i++;
        if (peek(r) >= '0' && peek(r) <= '9')
            return fail(r, "a number may not start with 0");
    } else {
        while (peek(r) >= '0' && peek(r) <= '9') {
            unsigned d = (unsigned)(peek(r) - '0');
            if (v > (UINT64_MAX - d) / 10)
                fits = 0;
            else
                v = v * 10 + d;
            r->i++;
        }
    }
    int plain = 1;
    if (peek(r) == '.') {
        plain = 0;
        r->i++;
        if (peek(r) < '0' || peek(r) > '9')
            return fail(r, "expected a digit after '.'");
        while (peek(r) >= '0' && peek(r) <= '9')
            r->i++;
    }
    if (peek(r) == 'e' || peek(r) == 'E') {
        plain = 0;
        r->i++;
        if (peek(r) == '+' || peek(r) == '-')
            r->i++;
        if (peek(r) < '0' || peek(r) > '9')
            return fail(r, "expected a digit in the exponent");
        while (peek(r) >= '0' && peek(r) <= '9')
            r->i++;
    }
    *integer = plain && fits;
    *value = v;
    return 0;
}

static int read_literal(struct reader *r, const char *word)
{
    size_t len = strlen(word);
    if (r->n - r->i < len || memcmp(r->s + r->i, word, len))
        return fail(r, "expected a value");
    r->i += len;
    return 0;
}

static int skip_value(struct reader *r, int depth);

/* Calls member(key) for each key of an object at r->i, which must read
 * the value; keys seen twice are refused. */
typedef int (*member_fn)(struct reader *r, const char *key, void *ctx, int depth);

static int read_object(struct reader *r, int depth, member_fn member, void *ctx)
{
    if (depth > MAX_DEPTH)
        return fail(r, "nested more than %d deep", MAX_DEPTH);
    if (expect(r, '{', "'{'") < 0)
        return -EINVAL;
    skip_ws(r);
    if (peek(r) == '}') {
        r->i++;
        return 0;
    }
    for (;;) {
        char key[256];
        skip_ws(r);
        if (peek(r) != '"')
            return r->i < r->n ? fail(r, "expected a key in quotes")
                               : fail(r, "unexpected end of file: expected a key");
        if (read_string(r, key, sizeof key) < 0)
            return -EINVAL;
        if (expect(r, ':', "':' after a key") < 0)
            return -EINVAL;
        if (member(r, key, ctx, depth + 1) < 0)
            return -EINVAL;
        skip_ws(r);
        if (peek(r) == ',') {
            r->i++;
            continue;
        }
        if (peek(r) == '}') {
            r->i++;
            return 0;
        }
        return r->i < r->n ? fail(r, "expected ',' or '}'")
                           : fail(r, "unexpected end of file: expected ',' or '}'");
    }
}

static int skip_member(struct reader *r, const char *key, void *ctx, int depth)
{
    (void)key;
    (void)ctx;
    return skip_value(r, depth);
}

static int skip_value(struct reader *r, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(r, "nested more than %d deep", MAX_DEPTH);
    skip_ws(r);
    switch (peek(r)) {
    case '{':
        return read_object(r, depth, skip_member, NULL);
    case '[':
        r->i++;
        skip_ws(r);
        if (peek(r) == ']') {
            r->i++;
            return 0;
        }
        for (;;) {
            if (skip_value(r, depth + 1) < 0)
                return -EINVAL;
            skip_ws(r);
            if (peek(r) == ',') {
                r->i++;
                continue;
            }
            if (peek(r) == ']') {
                r->i++;
                return 0;
            }
            return fail(r, "expected ',' or ']'");
        }
    case '"':
        return read_string(r, NULL, 0);
    case 't':
        return read_literal(r, "true");
    case 'f':
        return read_literal(r, "false");
    case 'n':
        return read_literal(r, "null");
    case -1:
        return fail(r, "unexpected end of file: expected a value");
    default: {
        uint64_t v;
        int integer, negative;
        return read_number(r, &v, &integer, &negative);
    }
    }
}

struct parse_state {
    struct devq_manifest *m;
    int have_format, have_plugin, have_path, have_abi;
};

static int read_small_uint(struct reader *r, const char *key, uint64_t max, uint64_t *out)
{
    uint64_t v;
    int integer, negative;
    skip_ws(r);
    size_t at = r->i;
    if (peek(r) != '-' && (peek(r) < '0' || peek(r) > '9'))
        return fail(r, "\"%s\" must be a whole number", key);
    if (read_number(r, &v, &integer, &negative) < 0)
        return -EINVAL;
    if (!integer || negative || v > max) {
        r->i = at;
        return fail(r, "\"%s\" must be a whole number from 1 to %llu", key, (unsigned long long)max);
    }
    *out = v;
    return 0;
}

static int at_end(struct reader *r)
{
    skip_ws(r);
    return peek(r) == -1 ? fail(r, "unexpected end of file: expected a value") : 0;
}

static int plugin_member(struct reader *r, const char *key, void *ctx, int depth)
{
    struct parse_state *st = ctx;
    if (at_end(r) < 0)
        return -EINVAL;
    if (!strcmp(key, "library_path")) {
        if (st->have_path++)
            return fail(r, "\"library_path\" given twice");
        skip_ws(r);
        if (peek(r) != '"')
            return fail(r, "\"library_path\" must be a string");
        if (read_string(r, st->m->library_path, sizeof st->m->library_path) < 0)
            return -EINVAL;
        if (!st->m->library_path[0])
            return fail(r, "\"library_path\" is empty");
        return 0;
    }
    if (!strcmp(key, "abi_version")) {
        uint64_t v;
        if (st->have_abi++)
            return fail(r, "\"abi_version\" given twice");
        if (read_small_uint(r, key, UINT32_MAX, &v) < 0)
            return -EINVAL;
        if (v == 0)
            return fail(r, "\"abi_version\" must be a whole number from 1 to %u", UINT32_MAX);
        st->m->abi_version = (uint32_t)v;
        return 0;
    }
    return skip_value(r, depth);
}

static int top_member(struct reader *r, const char *key, void *ctx, int depth)
{
    struct parse_state *st = ctx;
    if (at_end(r) < 0)
        return -EINVAL;
    if (!strcmp(key, "file_format_version")) {
        uint64_t v;
        if (st->have_format++)
            return fail(r, "\"file_format_version\" given twice");
        skip_ws(r);
        size_t at = r->i;
        if (read_small_uint(r, key, UINT32_MAX, &v) < 0)
            return -EINVAL;
        if (v != DEVQ_MANIFEST_FORMAT) {
            r->i = at;
            return fail(r, "file_format_version %llu is not %d, the one this libdevq reads",
                        (unsigned long long)v, DEVQ_MANIFEST_FORMAT);
        }
        return 0;
    }
    if (!strcmp(key, "plugin")) {
        if (st->have_plugin++)
            return fail(r, "\"plugin\" given twice");
        skip_ws(r);
        if (peek(r) != '{')
            return fail(r, "\"plugin\" must be an object");
        return read_object(r, depth, plugin_member, st);
    }
    return skip_value(r, depth);
}

int devq__manifest_parse(const char *text, size_t len, struct devq_manifest *out, char *why, size_t whylen)
{
    char scratch[8];
    if (!why || !whylen) {
        why = scratch;
        whylen = sizeof scratch;
    }
    why[0] = '\0';
    memset(out, 0, sizeof *out);
    struct reader r = { .s = text ? text : "", .n = text ? len : 0, .why = why, .whylen = whylen };
    struct parse_state st = { .m = out };
    skip_ws(&r);
    if (peek(&r) != '{')
        return r.i < r.n ? fail(&r, "a manifest is a JSON object ('{')") : fail(&r, "empty file");
    if (read_object(&r, 1, top_member, &st) < 0)
        return -EINVAL;
    skip_ws(&r);
    if (r.i < r.n)
        return fail(&r, "text after the object");
    if (!st.have_format)
        return fail(&r, "no \"file_format_version\"");
    if (!st.have_plugin)
        return fail(&r, "no \"plugin\" object");
    if (!st.have_path)
        return fail(&r, "no \"library_path\" in \"plugin\"");
    if (!st.have_abi)
        return fail(&r, "no \"abi_version\" in \"plugin\"");
    return 0;
}

int devq__manifest_read(const char *path, struct devq_manifest *out, char *resolved, size_t resolved_len,
                        char *why, size_t whylen)
{
    static char buf[DEVQ_MANIFEST_MAX_BYTES + 1]; /* callers hold the loader's lock */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(why, whylen, "%s", strerror(e));
        return -e;
    }
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, sizeof buf - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            snprintf(why, whylen, "%s", strerror(e));
            return -e;
        }
        if (k == 0)
            break;
        n += (size_t)k;
        if (n == sizeof buf)
            break;
    }
    close(fd);
    if (n > DEVQ_MANIFEST_MAX_BYTES) {
        snprintf(why, whylen, "larger than %d bytes", DEVQ_MANIFEST_MAX_BYTES);
        return -EINVAL;
    }
    int r = devq__manifest_parse(buf, n, out, why, whylen);
    if (r < 0)
        return r;
    const char *slash = strrchr(path, '/');
    int len;
    if (out->library_path[0] == '/' || !slash)
        len = snprintf(resolved, resolved_len, "%s", out->library_path);
    else
        len = snprintf(resolved, resolved_len, "%.*s/%s", (int)(slash - path), path, out->library_path);
    if (len < 0 || (size_t)len >= resolved_len) {
        snprintf(why, whylen, "library_path too long");
        return -EINVAL;
    }
    return 0;
}

const char *devq__manifest_dirs(const char *env_value)
{
    return env_value && *env_value ? env_value : DEVQ_MANIFEST_DIRS;
}

int devq__manifest_file_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && name[0] != '.' && !strcmp(name + n - 5, ".json");
}
