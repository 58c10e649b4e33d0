/* SPDX-License-Identifier: MIT */
/* DEVQ_LOG / DEVQ_LOG_FILE.  Logging is off unless asked for; nothing in
 * devq prints otherwise. */
#ifndef DEVQ_LIB_LOG_H
#define DEVQ_LIB_LOG_H

#include <stdarg.h>
#include <devq/devq_plugin.h> /* enum devq_log_level */

int devq__log_level(void);
void devq__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void devq__vlog(int level, const char *fmt, va_list ap);
/* 0, or -EINVAL (with detail) when DEVQ_LOG or DEVQ_LOG_FILE is malformed;
 * device open reports it, so a typo does not silently disable logging. */
int devq__log_config_error(void);

#define DEVQ_LOG_ON(level) (devq__log_level() >= (level))

#endif
