/* SPDX-License-Identifier: MIT */
/* Names of user objects (DESIGN §12, devq(7) NAMES): one number per
 * kind, handed out per process in creation order of the user's objects
 * only (internal ones get 0), an optional name the user sets, and the one
 * way every message, log line and trace track spells an object:
 *
 *     signal #3                         signal "grads" (#3)
 *     buffer #7 (tag 5, 64 KiB)         buffer "w" (#7, tag 5, 64 KiB)
 *     internal signal                   (number 0: lib's own)
 */
#ifndef DEVQ_LIB_NAME_H
#define DEVQ_LIB_NAME_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>

/* DEVQ_NAME_MAX (bytes of a name, without the NUL) is public: devq.h */
#define DEVQ_LABEL_MAX 160 /* a whole label, NUL included */

enum devq_name_kind {
    DEVQ_NAME_SIGNAL,
    DEVQ_NAME_QUEUE,
    DEVQ_NAME_BUFFER,
    DEVQ_NAME_KERNEL,
    DEVQ_NAME_KINDS
};

struct devq_name {
    uint32_t number;              /* 1, 2, ... per kind; 0 = internal */
    char text[DEVQ_NAME_MAX + 1]; /* "" = unnamed; under the name lock */
};

/* A label as a value, so a message can take it inline:
 * devq__err(..., "%s", devq__queue_label(q).s). */
struct devq_label {
    char s[DEVQ_LABEL_MAX];
};

/* The next number of a kind (a user object is being created). */
uint32_t devq__name_number(enum devq_name_kind kind);

/* Set (copy) or clear (NULL or "") a name.  -EINVAL with a devq_errmsg()
 * naming fn and the object when it is too long or holds a control
 * character. */
int devq__name_set(struct devq_name *n, enum devq_name_kind kind, const char *fn, const char *name);

/* Copy of the name ("" when unnamed), safe against a concurrent set. */
void devq__name_get(const struct devq_name *n, char *out, size_t cap);

/* The label: `KIND #N[ (DETAIL)]` or `KIND "NAME" (#N[, DETAIL])`;
 * `internal KIND` for number 0.  detail may be NULL. */
struct devq_label devq__name_label(const struct devq_name *n, enum devq_name_kind kind, const char *detail);

#endif
