/* SPDX-License-Identifier: MIT */
/* devq__backend_pref_parse (lib/device_spec.c): the DEVQ_BACKEND
 * preference list, "cuda:1, cpu,,^hip".  Properties: an accepted list
 * holds at most DEVQ_PREF_MAX entries of each kind, every name valid and
 * exclusions found by devq__backend_pref_excludes; printed back it
 * parses to the same list; a refused one says why. */
#include "config.h"
#include <errno.h>
#include "device_spec.h"
#include "fuzz.h"

static int same(const struct devq_backend_pref *a, const struct devq_backend_pref *b)
{
    if (a->nwant != b->nwant || a->nexclude != b->nexclude)
        return 0;
    for (size_t i = 0; i < a->nwant; i++)
        if (strcmp(a->want[i].name, b->want[i].name) || a->want[i].has_ordinal != b->want[i].has_ordinal ||
            a->want[i].ordinal != b->want[i].ordinal)
            return 0;
    for (size_t i = 0; i < a->nexclude; i++)
        if (strcmp(a->exclude[i], b->exclude[i]))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    struct devq_backend_pref p;
    char why[256];
    int r = devq__backend_pref_parse(text, &p, why, sizeof why);
    if (r < 0) {
        FUZZ_CHECK(r == -EINVAL, "r=%d", r);
        FUZZ_CHECK(why[0] != '\0', "refused '%s' without a reason", text);
        free(text);
        return 0;
    }
    FUZZ_CHECK(r == 0, "r=%d", r);
    FUZZ_CHECK(p.nwant <= DEVQ_PREF_MAX && p.nexclude <= DEVQ_PREF_MAX, "counts %zu %zu", p.nwant,
               p.nexclude);
    char again[DEVQ_PREF_MAX * 2 * 32 + 8] = "";
    size_t len = 0;
    for (size_t i = 0; i < p.nwant; i++) {
        FUZZ_CHECK(p.want[i].name[0] && strlen(p.want[i].name) < 16, "want[%zu]", i);
        len += (size_t)(p.want[i].has_ordinal
                            ? snprintf(again + len, sizeof again - len, "%s:%u,", p.want[i].name,
                                       p.want[i].ordinal)
                            : snprintf(again + len, sizeof again - len, "%s,", p.want[i].name));
    }
    for (size_t i = 0; i < p.nexclude; i++) {
        FUZZ_CHECK(p.exclude[i][0] && strnlen(p.exclude[i], 16) < 16, "exclude[%zu]", i);
        FUZZ_CHECK(devq__backend_pref_excludes(&p, p.exclude[i]), "'%s' not excluded", p.exclude[i]);
        len += (size_t)snprintf(again + len, sizeof again - len, " ^%s ,", p.exclude[i]);
    }
    FUZZ_CHECK(len < sizeof again, "reprint truncated");
    struct devq_backend_pref q;
    FUZZ_CHECK(devq__backend_pref_parse(again, &q, why, sizeof why) == 0, "reprint '%s' refused: %s", again,
               why);
    FUZZ_CHECK(same(&p, &q), "reprint '%s' of '%s' differs", again, text);
    free(text);
    return 0;
}
