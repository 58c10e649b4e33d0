/* SPDX-License-Identifier: MIT */
/* Native graph runs (devq_plugin.h's graph_* ops): a run of a graph's
 * launches made once into the driver's reusable form and queued as one
 * stream op per submission.
 *
 * The plugin's handle is wrapped in a refcounted lib object.  The exec
 * holds one reference per run (in its run plan, graph.h); each replay
 * batch holds one more in its reference set until it ends, so
 * graph_destroy is called only after the last submission that may
 * queue the handle.  `unissued` counts the replays submitted that have
 * not yet issued the run (or skipped it): while it is non-zero a
 * parameter update cannot go to the handle in place (graph_update would
 * change what a submission made before the update runs), so the exec
 * makes a new handle instead (copy on write) and drops its reference on
 * the old.  A replay that ends without reaching issue (its queue was
 * destroyed while it was parked) leaves its count behind: updates to
 * that handle then copy, which is only slower. */
#ifndef DEVQ_LIB_GRAPH_NATIVE_H
#define DEVQ_LIB_GRAPH_NATIVE_H

#include <stdatomic.h>
#include <stdint.h>
#include <devq/devq.h>
#include <devq/devq_plugin.h>
#include "native_run.h"

struct graph_rec;

/* At devq_graph_instantiate, on a backend with graph_create: a native
 * handle for each run of r's plan that the backend can make; a run it
 * cannot make (-ENOTSUP, out of memory) stays without one and is
 * replayed as before.  Never fails; devq_errmsg is left as it was. */
void devq__graph_native_make(struct graph_rec *r);
/* Exec op `op`'s arguments changed (set_arg): the run holding it, if
 * native, is updated in place or copied (above). */
void devq__graph_native_changed(struct graph_rec *r, uint32_t op);
/* Every exec op using buf had its argument rebound (set_buffer). */
void devq__graph_native_rebound(struct graph_rec *r, const devq_buffer *buf);
/* Drop r's references on its runs' handles (the exec goes). */
void devq__graph_native_fini(struct graph_rec *r);

#endif
