/* SPDX-License-Identifier: MIT */
/* devq__manifest_parse (lib/loader/manifest.c): a plugin manifest, any
 * bytes, given as size bytes with no terminator.  Properties: it never
 * reads past the input (an exact-size heap copy trips ASan), an accepted
 * manifest has a non-empty library_path with no NUL and an ABI of at
 * least 1, a refused one says where ("line L, column C: ..."), and the
 * answer does not depend on bytes after size. */
#include "config.h"
#include <errno.h>
#include "fuzz.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > DEVQ_MANIFEST_MAX_BYTES)
        return 0;
    char *text = malloc(size ? size : 1);
    if (!text)
        abort();
    if (size)
        memcpy(text, data, size);
    struct devq_manifest m;
    char why[300];
    int r = devq__manifest_parse(text, size, &m, why, sizeof why);
    if (r == 0) {
        size_t len = strnlen(m.library_path, sizeof m.library_path);
        FUZZ_CHECK(len > 0 && len < sizeof m.library_path, "library_path length %zu", len);
        FUZZ_CHECK(m.abi_version >= 1, "abi_version %u", m.abi_version);
        FUZZ_CHECK(why[0] == '\0', "accepted with a reason: %s", why);
    } else {
        FUZZ_CHECK(r == -EINVAL, "returned %d", r);
        FUZZ_CHECK(!strncmp(why, "line ", 5) && strstr(why, ", column "), "reason '%s'", why);
    }
    /* The same bytes followed by garbage, parsed with the same size. */
    char *longer = malloc(size + 8);
    if (!longer)
        abort();
    if (size)
        memcpy(longer, data, size);
    memcpy(longer + size, "}]\"x\0\\u", 8);
    struct devq_manifest m2;
    char why2[300];
    int r2 = devq__manifest_parse(longer, size, &m2, why2, sizeof why2);
    FUZZ_CHECK(r2 == r && !strcmp(why, why2), "depends on bytes past size: %d/%d", r, r2);
    FUZZ_CHECK(r != 0 || !strcmp(m.library_path, m2.library_path), "library_path differs");
    free(longer);
    free(text);
    return 0;
}
