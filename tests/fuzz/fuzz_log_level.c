/* SPDX-License-Identifier: MIT */
/* DEVQ_LOG (lib/log.c).  The level is parsed by log_init, a static
 * function run once per process through pthread_once, so it is not
 * reachable as a function from outside its file, and lib keeps it that
 * way.  This target compiles lib/log.c into itself (an #include of the
 * .c file: no lib change, no renaming of `static`) and calls log_init
 * afresh for every input, with DEVQ_LOG set to the input through the
 * same devq__getenv lib uses.  DEVQ_LOG_FILE is left unset: opening
 * fuzzer-named files is not this target's business.
 *
 * Properties: the level is one of off/basic/full; exactly the six
 * documented spellings are accepted; anything else is reported by
 * devq__log_config_error() as -EINVAL naming DEVQ_LOG. */
#include "../../lib/base/log.c"
#include <devq/devq.h>
#include "fuzz.h"

static int expected_level(const char *v, int *ok)
{
    *ok = 1;
    if (!*v || !strcmp(v, "off") || !strcmp(v, "0"))
        return DEVQ_LOG_OFF;
    if (!strcmp(v, "basic") || !strcmp(v, "1"))
        return DEVQ_LOG_BASIC;
    if (!strcmp(v, "full") || !strcmp(v, "2"))
        return DEVQ_LOG_FULL;
    *ok = 0;
    return DEVQ_LOG_OFF;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    unsetenv("DEVQ_LOG_FILE");
    if (fuzz_setenv("DEVQ_LOG", text) != 0) {
        free(text);
        return 0;
    }
    /* Fresh process state, as log_init would find it. */
    log_level = DEVQ_LOG_OFF;
    log_error[0] = '\0';
    log_file = NULL;
    log_init();
    int ok, want = expected_level(text, &ok);
    FUZZ_CHECK(log_level == want, "DEVQ_LOG='%s': level %d, want %d", text, log_level, want);
    FUZZ_CHECK(log_file == stderr, "log file changed without DEVQ_LOG_FILE");
    int r = devq__log_config_error();
    if (ok) {
        FUZZ_CHECK(r == 0, "DEVQ_LOG='%s' refused: %s", text, log_error);
    } else {
        FUZZ_CHECK(r == -EINVAL, "DEVQ_LOG='%s' accepted", text);
        FUZZ_CHECK(strstr(devq_errmsg(), "DEVQ_LOG") != NULL, "msg '%s'", devq_errmsg());
        FUZZ_CHECK(strlen(log_error) < sizeof log_error, "message overflow");
    }
    free(text);
    return 0;
}
