/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq_mpi.h: a devq channel over the program's own MPI communicator
 * (devq_channel_create_mpi(3), devq-channels(7)).
 *
 * Optional and header-only: libdevq never links MPI, so this header is
 * the only devq file that includes <mpi.h>.  Compile with your MPI's
 * flags (mpicc, or `pkg-config --cflags ompi-c` / `mpich`) as well as
 * devq's.  The devq-mpi engine must be built against the same MPI
 * (Open MPI or MPICH) as the program: the handle says which one it is,
 * and the engine refuses another's. */
#ifndef DEVQ_MPI_H
#define DEVQ_MPI_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <devq/devq.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEVQ_MPI_HANDLE_MAGIC 0x4d504931u   /* "MPI1" */

/* Which MPI's handles these are: an MPI_Comm of Open MPI is a pointer,
 * of MPICH an int, and neither means anything to the other library. */
enum devq_mpi_family { DEVQ_MPI_OTHER = 0, DEVQ_MPI_OPEN_MPI = 1, DEVQ_MPI_MPICH = 2 };
#if defined(OPEN_MPI)
#define DEVQ_MPI_FAMILY DEVQ_MPI_OPEN_MPI
#elif defined(MPICH_VERSION)
#define DEVQ_MPI_FAMILY DEVQ_MPI_MPICH
#else
#define DEVQ_MPI_FAMILY DEVQ_MPI_OTHER
#endif

/* The handle devq_channel_create_from_handle takes on the MPI engine. */
struct devq_mpi_handle {
    uint32_t magic;              /* DEVQ_MPI_HANDLE_MAGIC */
    uint32_t family;             /* DEVQ_MPI_FAMILY of the program */
    uint32_t comm_bytes;         /* sizeof(MPI_Comm) in the program */
    MPI_Comm comm;               /* the program's communicator (devq uses a dup of it) */
};

/* A channel over comm: rank and size are comm's.  Collective over comm
 * (every rank calls it, in the same order as its other collectives on
 * comm); comm stays the program's, devq talks on a duplicate of it.
 * MPI must be initialised with MPI_THREAD_MULTIPLE.  0 or a negative
 * errno, with devq_errmsg() naming the failed step. */
static inline int devq_channel_create_mpi(devq_device *dev, MPI_Comm comm, devq_channel **out)
{
    struct devq_mpi_handle h;
    h.magic = DEVQ_MPI_HANDLE_MAGIC;
    h.family = DEVQ_MPI_FAMILY;
    h.comm_bytes = (uint32_t)sizeof(MPI_Comm);
    h.comm = comm;
    return devq_channel_create_from_handle(dev, &h, sizeof h, out);
}

#ifdef __cplusplus
}
#endif
#endif /* DEVQ_MPI_H */
