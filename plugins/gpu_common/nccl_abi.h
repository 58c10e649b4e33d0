/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* The part of the NCCL C API (NCCL 2.x, nccl.h) that devq's channels use,
 * declared from NCCL's public documentation: no NCCL header is needed to
 * build the cuda and hip plugins, which dlopen libnccl.so.2 (NCCL) or
 * librccl.so.1 (RCCL, same names and values) and resolve these entry
 * points with dlsym.  Values match real NCCL 2.x.
 *
 * Streams are `void *`: cudaStream_t (CUstream) and hipStream_t are both
 * pointers, so one declaration serves NCCL and RCCL. */
#ifndef DEVQ_NCCL_ABI_H
#define DEVQ_NCCL_ABI_H

#include <stddef.h>

#define NCCL_UNIQUE_ID_BYTES 128
/* ncclGetVersion's code: X*10000 + Y*100 + Z since 2.9 (X*1000+Y*100+Z before). */
#define DEVQ_NCCL_VERSION(X, Y, Z) \
    (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
/* ncclCommSplit's color for "not in any new communicator". */
#define NCCL_SPLIT_NOCOLOR (-1)

typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef struct ncclComm *ncclComm_t;
/* ncclConfig_t is opaque here: devq passes NULL (the defaults). */
typedef struct devq_nccl_config ncclConfig_t;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,     /* NCCL >= 2.13 */
    ncclInProgress = 7,      /* NCCL >= 2.14, non-blocking communicators */
    ncclNumResults = 8
} ncclResult_t;

typedef enum {
    ncclInt8 = 0, ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2, ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6, ncclHalf = 6,
    ncclFloat32 = 7, ncclFloat = 7,
    ncclFloat64 = 8, ncclDouble = 8,
    ncclBfloat16 = 9         /* NCCL built with CUDA >= 11; always in RCCL */
} ncclDataType_t;

typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4              /* NCCL >= 2.10 */
} ncclRedOp_t;

/* Entry points, as function pointer types for dlsym. */
typedef ncclResult_t (*ncclGetVersion_fn)(int *version);
typedef ncclResult_t (*ncclGetUniqueId_fn)(ncclUniqueId *uniqueId);
typedef ncclResult_t (*ncclCommInitRank_fn)(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                            int rank);
/* NCCL >= 2.18 */
typedef ncclResult_t (*ncclCommSplit_fn)(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                         ncclConfig_t *config);
typedef ncclResult_t (*ncclCommDestroy_fn)(ncclComm_t comm);
typedef ncclResult_t (*ncclCommAbort_fn)(ncclComm_t comm);
typedef ncclResult_t (*ncclCommGetAsyncError_fn)(ncclComm_t comm, ncclResult_t *asyncError);
typedef ncclResult_t (*ncclCommCount_fn)(const ncclComm_t comm, int *count);
typedef ncclResult_t (*ncclCommUserRank_fn)(const ncclComm_t comm, int *rank);
typedef const char *(*ncclGetErrorString_fn)(ncclResult_t result);
typedef const char *(*ncclGetLastError_fn)(ncclComm_t comm);   /* NCCL >= 2.13 */

typedef ncclResult_t (*ncclAllReduce_fn)(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         void *stream);
typedef ncclResult_t (*ncclAllGather_fn)(const void *sendbuff, void *recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm, void *stream);
typedef ncclResult_t (*ncclReduceScatter_fn)(const void *sendbuff, void *recvbuff,
                                             size_t recvcount, ncclDataType_t datatype,
                                             ncclRedOp_t op, ncclComm_t comm, void *stream);
typedef ncclResult_t (*ncclBroadcast_fn)(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         void *stream);
typedef ncclResult_t (*ncclSend_fn)(const void *sendbuff, size_t count, ncclDataType_t datatype,
                                    int peer, ncclComm_t comm, void *stream);
typedef ncclResult_t (*ncclRecv_fn)(void *recvbuff, size_t count, ncclDataType_t datatype,
                                    int peer, ncclComm_t comm, void *stream);
typedef ncclResult_t (*ncclGroupStart_fn)(void);
typedef ncclResult_t (*ncclGroupEnd_fn)(void);

#endif
