/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq channel engines: the ABI between libdevq and a module that moves
 * bytes between processes from the host (devq-mpi).  NCCL and RCCL run on
 * the device's streams instead: they are the cuda and hip plugins'
 * chan_* entries (devq_plugin.h), which lib/channel/stream.c drives.
 *
 * An engine is a shared object exporting devq_engine_init().  libdevq
 * loads it only when a channel is created (so libdevq never links the
 * engine's library), checks abi_version and size as it does for backend
 * plugins (devq-plugin(7)), and drives it from lib/channel/: ordering,
 * grouping, timeouts and failures stay in lib, the engine only starts
 * non-blocking ops and reports whether they are done.
 *
 * Buffers are given as pointers the engine can read and write from the
 * host (the cpu backend's device pointers).  All entries return 0 or a
 * negative errno and report details with host->error. */
#ifndef DEVQ_ENGINE_H
#define DEVQ_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include <devq/devq_plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEVQ_ENGINE_ABI_VERSION 1

typedef struct devq_eng_comm devq_eng_comm;   /* one rank of a group */
typedef struct devq_eng_req  devq_eng_req;    /* one started op */

/* The ops (struct devq_eng_op, enum devq_eng_op_kind) are declared in
 * devq_plugin.h: the cuda and hip plugins' channel entries take them too. */

struct devq_engine_ops {
    uint32_t abi_version;        /* DEVQ_ENGINE_ABI_VERSION */
    uint32_t size;               /* sizeof(struct devq_engine_ops) */
    const char *name;            /* "mpi" */
    /* Rendezvous id of a new group (rank 0), at most *size bytes. */
    int  (*comm_id)(void *id, size_t *size);
    /* rank/size -1 with id NULL: the launcher's world. */
    int  (*comm_create)(int rank, int size, const void *id, size_t id_size, devq_eng_comm **out);
    int  (*comm_split)(devq_eng_comm *c, int color, int key, devq_eng_comm **out);
    int  (*comm_rank)(const devq_eng_comm *c);
    int  (*comm_size)(const devq_eng_comm *c);
    void (*comm_destroy)(devq_eng_comm *c);
    /* Start one op (never blocks for peers). */
    int  (*start)(devq_eng_comm *c, const struct devq_eng_op *op, devq_eng_req **out);
    /* Progress: *done = 1 once finished (then the request is freed);
     * a negative return is the op's failure (the request is freed). */
    int  (*test)(devq_eng_req *r, int *done);
    /* Give up on an op that is not done (timeout, peer failed).  The
     * engine may not be able to withdraw it: the communicator is then
     * unusable and lib fails the channel's later ops. */
    void (*abandon)(devq_eng_req *r);
    /* Appended after ABI 1 first shipped (lib reads it only when size
     * covers it; NULL or absent: -ENOTSUP).  A group from the program's
     * own handle of the engine's library (devq_channel_create_from_handle;
     * for MPI a struct devq_mpi_handle, devq_mpi.h).  Collective over
     * that group. */
    int  (*comm_from_handle)(const void *handle, size_t handle_size, devq_eng_comm **out);
    /* Appended with comm_from_handle's successors (read only when size
     * covers both; NULL or absent: a rank that drops out is seen by its
     * peers only when their ops time out).  Peer notices: when this rank
     * will take no further part in the group's ops (an op it skipped, an
     * input that failed, a timeout), notice_send tells every peer why,
     * in one line, without blocking and at most once per comm
     * (best effort: a notice is advice, the timeout stays the bound).
     * notice_poll never blocks: 1 with the sender's rank and its text
     * (cut to cap) when a notice has arrived, else 0. */
    int  (*notice_send)(devq_eng_comm *c, const char *why);
    int  (*notice_poll)(devq_eng_comm *c, int *from, char *why, size_t cap);
};
/* The part of struct devq_engine_ops every ABI 1 engine has. */
#define DEVQ_ENGINE_OPS_MIN_SIZE offsetof(struct devq_engine_ops, comm_from_handle)
/* An engine whose table reaches this far has peer notices. */
#define DEVQ_ENGINE_OPS_NOTICE_SIZE (offsetof(struct devq_engine_ops, notice_poll) + sizeof(void *))

typedef int (*devq_engine_init_fn)(const struct devq_host *host, uint32_t host_abi,
                                   const struct devq_engine_ops **ops);
#define DEVQ_ENGINE_INIT_SYMBOL "devq_engine_init"

int devq_engine_init(const struct devq_host *host, uint32_t host_abi,
                     const struct devq_engine_ops **ops);

#ifdef __cplusplus
}
#endif
#endif /* DEVQ_ENGINE_H */
