/* SPDX-License-Identifier: MIT */
/* For make analyze-plugins (mk/lint.mk) alone.  A plugin reports a
 * failure with its host table's error(err, fmt, ...), which records the
 * message and returns err (lib/base/host.c).  Called through a pointer,
 * and variadic, that call is opaque to the analyzer, which then follows
 * each refusal as if it had returned 0.  Under the analyzer the call
 * yields err: `h->error(e, ...)` reads `h->error(e, ...) * 0 + (e)`, the
 * call still made; * and + bind tighter than anything the plugins apply
 * to its result (=, ?:, ||, <, a call's argument).  lib does the same
 * for devq__err (lib/base/error.h).  Include it after every system
 * header: it claims the name error( (glibc's error(3) included). */
#ifndef DEVQ_PLUGIN_ANALYZER_H
#define DEVQ_PLUGIN_ANALYZER_H

#ifdef __clang_analyzer__
#define error(err, ...) error((err), __VA_ARGS__) * 0 + (err)
#endif

#endif
