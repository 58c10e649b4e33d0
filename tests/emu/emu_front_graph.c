/* SPDX-License-Identifier: MIT */
/* The shared front of the emulated drivers (emu_face.h), part four:
 * graphs of kernel nodes (emu_graph.c), the calls devq's plugins use:
 * create, add a kernel node, instantiate, set an executable graph's
 * kernel node, launch, destroy both.  A kernel node's parameters are each
 * driver's structure (CUDA 12's CUDA_KERNEL_NODE_PARAMS_v2, HIP's
 * hipKernelNodeParams); the HIP -old variant has no graphs. */
#define _GNU_SOURCE
#include "emu_face.h"

#if FACE_HAS_OPTIONAL

#define INVALID_VALUE FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue)
#define INVALID_HANDLE FACE(CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle)
#define NOT_SUPPORTED FACE(CUDA_ERROR_NOT_SUPPORTED, hipErrorNotSupported)

typedef FACE(CUgraph, hipGraph_t) face_graph;
typedef FACE(CUgraphNode, hipGraphNode_t) face_graph_node;
typedef FACE(CUgraphExec, hipGraphExec_t) face_graph_exec;
typedef FACE(CUDA_KERNEL_NODE_PARAMS_v2, hipKernelNodeParams) face_kernel_params;

/* A node's launch from the driver's structure, checked as cuLaunchKernel
 * and hipModuleLaunchKernel check theirs (0 or the face's error). */
static face_result node_call(const face_kernel_params *p, struct emu_kernel_call *c)
{
    if (!p)
        return INVALID_VALUE;
#if defined(EMU_FACE_CUDA)
    const struct emu_kfunc *fn = (const struct emu_kfunc *)p->func;
    if (!fn && p->kern)
        return NOT_SUPPORTED; /* library kernels (cuLibraryLoad*): not emulated */
    const uint32_t grid[3] = { p->gridDimX, p->gridDimY, p->gridDimZ };
    const uint32_t block[3] = { p->blockDimX, p->blockDimY, p->blockDimZ };
#else
    const struct emu_kfunc *fn = (const struct emu_kfunc *)p->func;
    const uint32_t grid[3] = { p->gridDim.x, p->gridDim.y, p->gridDim.z };
    const uint32_t block[3] = { p->blockDim.x, p->blockDim.y, p->blockDim.z };
#endif
    if (!fn || !fn->fn)
        return INVALID_HANDLE;
    if (p->extra)
        return NOT_SUPPORTED;
    if ((uint64_t)block[0] * block[1] * block[2] > FACE_MAX_THREADS || p->sharedMemBytes > FACE_MAX_SHARED)
        return INVALID_VALUE;
    if (fn->nparams && !p->kernelParams)
        return INVALID_VALUE;
    *c = (struct emu_kernel_call){ .fn = fn->fn,
                                   .params = p->kernelParams,
                                   .sizes = fn->sizes,
                                   .deref = fn->deref,
                                   .nparams = fn->nparams };
    for (int d = 0; d < 3; d++) {
        c->grid[d] = grid[d];
        c->block[d] = block[d];
    }
    return 0;
}

EXPORT face_result FACE(cuGraphCreate, hipGraphCreate)(face_graph *graph, unsigned int flags)
{
    CHECK(FACE_STR(cuGraphCreate, hipGraphCreate));
    if (!graph || flags != 0)
        return INVALID_VALUE;
    emu_graph *g;
    int st = emu_graph_create(&g);
    RETURN_MADE(st, graph, (face_graph)g);
}

EXPORT face_result FACE(cuGraphAddKernelNode, hipGraphAddKernelNode)(face_graph_node *node, face_graph graph,
                                                                     const face_graph_node *deps,
                                                                     size_t ndeps,
                                                                     const face_kernel_params *params)
{
    CHECK(FACE_STR(cuGraphAddKernelNode, hipGraphAddKernelNode));
    if (!emu_graph_valid((emu_graph *)graph))
        return INVALID_HANDLE;
    if (!node || (ndeps && !deps))
        return INVALID_VALUE;
    struct emu_kernel_call c;
    face_result r = node_call(params, &c);
    if (r)
        return r;
    emu_graph_node *n;
    int st = emu_graph_add_kernel((emu_graph *)graph, (emu_graph_node *const *)deps, ndeps, &c, &n);
    RETURN_MADE(st, node, (face_graph_node)n);
}

EXPORT face_result FACE(cuGraphInstantiateWithFlags, hipGraphInstantiateWithFlags)(face_graph_exec *exec,
                                                                                   face_graph graph,
                                                                                   unsigned long long flags)
{
    CHECK(FACE_STR(cuGraphInstantiateWithFlags, hipGraphInstantiateWithFlags));
    if (!emu_graph_valid((emu_graph *)graph))
        return INVALID_HANDLE;
    if (!exec || flags != 0) /* no auto-free, upload or device launch */
        return INVALID_VALUE;
    emu_graph_exec *x;
    int st = emu_graph_instantiate((emu_graph *)graph, &x);
    RETURN_MADE(st, exec, (face_graph_exec)x);
}

EXPORT face_result FACE(cuGraphExecKernelNodeSetParams,
                        hipGraphExecKernelNodeSetParams)(face_graph_exec exec, face_graph_node node,
                                                         const face_kernel_params *params)
{
    CHECK(FACE_STR(cuGraphExecKernelNodeSetParams, hipGraphExecKernelNodeSetParams));
    if (!emu_graph_exec_valid((emu_graph_exec *)exec))
        return INVALID_HANDLE;
    struct emu_kernel_call c;
    face_result r = node_call(params, &c);
    if (r)
        return r;
    return emu_front_status(emu_graph_exec_set_kernel((emu_graph_exec *)exec, (emu_graph_node *)node, &c));
}

/* One op in stream order; DEVQ_EMU_FAIL's sticky errors are raised when
 * it runs, others returned here (ASYNC_INJECT), as for a kernel launch. */
EXPORT face_result FACE(cuGraphLaunch, hipGraphLaunch)(face_graph_exec exec, face_stream h)
{
    ASYNC_INJECT(FACE_STR(cuGraphLaunch, hipGraphLaunch), later);
    if (!emu_graph_exec_valid((emu_graph_exec *)exec))
        return INVALID_HANDLE;
    return emu_front_status(emu_graph_launch((emu_graph_exec *)exec, (emu_stream *)h, later));
}

EXPORT face_result FACE(cuGraphExecDestroy, hipGraphExecDestroy)(face_graph_exec exec)
{
    CHECK_CALL();
    return emu_front_status(emu_graph_exec_destroy((emu_graph_exec *)exec));
}

EXPORT face_result FACE(cuGraphDestroy, hipGraphDestroy)(face_graph graph)
{
    CHECK_CALL();
    return emu_front_status(emu_graph_destroy((emu_graph *)graph));
}

#endif
