/* SPDX-License-Identifier: MIT */
/* lib's side of the environment table (env_table.c): the same parsers,
 * with the reason put in devq_errmsg(). */
#include "config.h"
#include <errno.h>
#include "env.h"
#include "env_table.h"
#include "error.h"

const char *devq__getenv(const char *name)
{
    return devq__env_get(name);
}

int devq__parse_uint(const char *var, const char *text, uint64_t max, uint64_t *out)
{
    char msg[DEVQ_ERRMSG_MAX];
    int r = devq__env_uint(var, text, max, out, msg, sizeof msg);
    return r < 0 ? devq__err_str(r, msg) : 0;
}

int devq__parse_size(const char *var, const char *text, uint64_t *out)
{
    char msg[DEVQ_ERRMSG_MAX];
    int r = devq__env_size(var, text, out, msg, sizeof msg);
    return r < 0 ? devq__err_str(r, msg) : 0;
}

int devq__parse_flag(const char *var, const char *text, int *out)
{
    char msg[DEVQ_ERRMSG_MAX];
    int r = devq__env_flag(var, text, out, msg, sizeof msg);
    return r < 0 ? devq__err_str(r, msg) : 0;
}

int devq__env_config_error(void)
{
    char msg[DEVQ_ERRMSG_MAX];
    int r = devq__env_check_all(msg, sizeof msg);
    return r < 0 ? devq__err_str(r, msg) : 0;
}
