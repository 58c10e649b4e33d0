/* SPDX-License-Identifier: MIT */
/* Data-parallel training on 2 (or more) ranks: each rank fits the same
 * model to its own shard of the data, a linear model whose weights are
 * cut in two "layers" (w[0..D/2) and w[D/2..D)) to show the overlap a
 * real network gets.  Every step, on a compute queue, the backward
 * kernel of layer 2 writes its gradient, then layer 1's; on a comm queue
 * an all_reduce averages each layer's gradient over the ranks as soon as
 * it is written, so layer 2's all_reduce runs while layer 1's backward
 * computes; then the update applies both.  The ranks end with the same
 * weights, equal to the ones that made the data.
 *
 *   mpirun -np 2 examples/data-parallel
 *
 * No waits are written: the tracker orders the ops through the buffers
 * (each all_reduce reads and writes its layer's gradient, which a backward
 * kernel wrote and the update reads).  The result is checked three ways:
 * near the weights that made the data, equal on every rank, and equal (to
 * float rounding) to one process training on every shard itself.  Exit 0
 * when the result is right, 1 when not, 77 when there is no channel
 * engine. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <devq/devq.h>

#define N 256 /* samples per rank */
#define D 8   /* features */
#define STEPS 300

/* A layer's backward: grad[j] = 2/N * sum_i (x_i . w - y_i) * x_i(first+j)
 * for the layer's D/2 weights from first on; one work-item per j.  (The
 * forward, x_i . w, is recomputed here: the example keeps one kernel.)
 * args: x (N*D), y (N), w (D), grad (D/2), &first */
int dp_backward(void *const *args, const devq_cpu_group *g);
int dp_backward(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0], *y = args[1], *w = args[2];
    float *grad = args[3];
    int first = *(const int *)args[4];
    uint32_t j = g->group_id[0];
    if (j >= D / 2)
        return 0;
    float acc = 0;
    for (int i = 0; i < N; i++) {
        float pred = 0;
        for (int k = 0; k < D; k++)
            pred += x[i * D + k] * w[k];
        acc += (pred - y[i]) * x[i * D + first + (int)j];
    }
    grad[j] = 2.0f * acc / N;
    return 0;
}

/* w[d] -= lr * grad[d], the two layers' gradients; args: w, g1, g2, &lr */
int dp_update(void *const *args, const devq_cpu_group *g);
int dp_update(void *const *args, const devq_cpu_group *g)
{
    float *w = args[0];
    const float *g1 = args[1], *g2 = args[2];
    float lr = *(const float *)args[3];
    uint32_t d = g->group_id[0];
    if (d < D)
        w[d] -= lr * (d < D / 2 ? g1[d] : g2[d - D / 2]);
    return 0;
}

/* The single-process reference: the same training on every rank's
 * shard in one loop, plain C in the kernels' order; the gradient
 * averaged over the shards as the all_reduce does. */
static void reference(int size, const float *x, const float *w_true, float lr, float *w)
{
    static float y[N], grad[D], avg[D];
    for (int k = 0; k < D; k++)
        w[k] = 0;
    for (int step = 0; step < STEPS; step++) {
        for (int k = 0; k < D; k++)
            avg[k] = 0;
        for (int r = 0; r < size; r++) {
            float shift = (float)(r - (size - 1) / 2.0) * 0.1f;
            for (int i = 0; i < N; i++) {
                y[i] = 0;
                for (int k = 0; k < D; k++)
                    y[i] += x[i * D + k] * (w_true[k] + shift);
            }
            for (int d = 0; d < D; d++) {
                float acc = 0;
                for (int i = 0; i < N; i++) {
                    float pred = 0;
                    for (int k = 0; k < D; k++)
                        pred += x[i * D + k] * w[k];
                    acc += (pred - y[i]) * x[i * D + d];
                }
                grad[d] = 2.0f * acc / N;
            }
            for (int d = 0; d < D; d++)
                avg[d] += grad[d];
        }
        for (int d = 0; d < D; d++)
            w[d] -= lr * (avg[d] / (float)size);
    }
}

#define TRY(x)                                                             \
    do {                                                                   \
        if ((x) < 0) {                                                     \
            fprintf(stderr, "data-parallel: %s: %s\n", #x, devq_errmsg()); \
            return 1;                                                      \
        }                                                                  \
    } while (0)

int main(void)
{
    devq_device *dev;
    TRY(devq_device_open("cpu", &dev));
    devq_device_info info;
    TRY(devq_device_info_get(dev, &info));
    if (!(info.caps & DEVQ_CAP_CHANNELS)) {
        fprintf(stderr, "data-parallel: no channel engine on %s (build devq with MPI)\n", info.backend);
        return 77;
    }
    devq_channel *ch;
    TRY(devq_channel_create(dev, NULL, &ch));
    int rank = devq_channel_rank(ch), size = devq_channel_size(ch);

    devq_queue *compute, *comm;
    TRY(devq_queue_create(dev, NULL, &compute));
    TRY(devq_queue_create(dev, NULL, &comm));
    devq_kernel *bwd, *upd;
    TRY(devq_kernel_load(dev, NULL, 0, "dp_backward", &bwd));
    TRY(devq_kernel_load(dev, NULL, 0, "dp_update", &upd));
    devq_buffer *x, *y, *w, *g1, *g2;
    TRY(devq_buffer_alloc(dev, N * D * sizeof(float), NULL, 1, &x));
    TRY(devq_buffer_alloc(dev, N * sizeof(float), NULL, 2, &y));
    TRY(devq_buffer_alloc(dev, D * sizeof(float), NULL, 3, &w));
    TRY(devq_buffer_alloc(dev, D / 2 * sizeof(float), NULL, 4, &g1));
    TRY(devq_buffer_alloc(dev, D / 2 * sizeof(float), NULL, 6, &g2));

    /* This rank's shard: the same inputs on every rank, labels made by
     * weights shifted per rank (w_true + (rank - (size-1)/2) * 0.1), so
     * that each rank alone would fit its own shift and only the averaged
     * gradient reaches w_true: the check below fails without the all_reduce. */
    float w_true[D], *xp = devq_buffer_host_ptr(x), *yp = devq_buffer_host_ptr(y),
                     *wp = devq_buffer_host_ptr(w);
    float shift = (float)(rank - (size - 1) / 2.0) * 0.1f;
    for (int k = 0; k < D; k++)
        w_true[k] = (float)(k + 1) / D - 0.5f;
    srand(1234);
    for (int i = 0; i < N; i++) {
        yp[i] = 0;
        for (int k = 0; k < D; k++) {
            xp[i * D + k] = (float)((double)rand() / RAND_MAX * 2 - 1);
            yp[i] += xp[i * D + k] * (w_true[k] + shift);
        }
    }
    for (int k = 0; k < D; k++)
        wp[k] = 0;

    const float lr = 0.2f;
    const int first1 = 0, first2 = D / 2;
    devq_launch lh = { .global = { D / 2 } }, l = { .global = { D } };
    for (int step = 0; step < STEPS; step++) {
        devq_arg b2[5] = { DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ), DEVQ_ARG_BUF(w, DEVQ_READ),
                           DEVQ_ARG_BUF(g2, DEVQ_WRITE), DEVQ_ARG_VAL(&first2) };
        devq_arg b1[5] = { DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ), DEVQ_ARG_BUF(w, DEVQ_READ),
                           DEVQ_ARG_BUF(g1, DEVQ_WRITE), DEVQ_ARG_VAL(&first1) };
        devq_arg ua[4] = { DEVQ_ARG_BUF(w, DEVQ_READ_WRITE), DEVQ_ARG_BUF(g1, DEVQ_READ),
                           DEVQ_ARG_BUF(g2, DEVQ_READ), DEVQ_ARG_VAL(&lr) };
        /* Layer 2's backward, then its all_reduce on the comm queue while
         * layer 1's backward runs on the compute queue. */
        TRY(devq_queue_exec(compute, bwd, b2, 5, &lh));
        TRY(devq_queue_submit(compute));
        TRY(devq_queue_all_reduce(comm, ch, g2, 0, g2, 0, D / 2, DEVQ_F32, DEVQ_AVG));
        TRY(devq_queue_submit(comm));
        TRY(devq_queue_exec(compute, bwd, b1, 5, &lh));
        TRY(devq_queue_submit(compute));
        TRY(devq_queue_all_reduce(comm, ch, g1, 0, g1, 0, D / 2, DEVQ_F32, DEVQ_AVG));
        TRY(devq_queue_submit(comm));
        /* The update reads both gradients: it waits for both all_reduces. */
        TRY(devq_queue_exec(compute, upd, ua, 4, &l));
        TRY(devq_queue_submit(compute));
    }
    TRY(devq_queue_finish(compute, 60ull * 1000000000ull));
    TRY(devq_queue_finish(comm, 60ull * 1000000000ull));

    /* Every rank must hold the same weights: gather them and compare. */
    devq_buffer *all;
    TRY(devq_buffer_alloc(dev, (size_t)size * D * sizeof(float), NULL, 5, &all));
    TRY(devq_queue_all_gather(comm, ch, all, 0, w, 0, D, DEVQ_F32));
    TRY(devq_queue_submit(comm));
    TRY(devq_queue_finish(comm, 60ull * 1000000000ull));
    const float *ap = devq_buffer_host_ptr(all);
    int ok = 1;
    float err = 0;
    for (int k = 0; k < D; k++) {
        err = fmaxf(err, fabsf(wp[k] - w_true[k]));
        for (int r = 0; r < size; r++)
            ok &= ap[r * D + k] == wp[k];
    }
    ok &= err < 1e-3f;
    /* Against one process doing all the shards' work: equal but for the
     * order MPI adds the ranks' gradients in (float rounding). */
    float ref[D], dref = 0;
    reference(size, xp, w_true, lr, ref);
    for (int k = 0; k < D; k++)
        dref = fmaxf(dref, fabsf(wp[k] - ref[k]));
    ok &= dref < 1e-5f;
    printf("rank %d of %d: %d steps, max |w - w_true| = %.2g, max |w - single-process w| = %.2g, "
           "weights %s on every rank: %s\n",
           rank, size, STEPS, err, dref, ok ? "equal" : "NOT equal", ok ? "ok" : "FAILED");

    devq_buffer_free(all, NULL);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_buffer_free(w, NULL);
    devq_buffer_free(g1, NULL);
    devq_buffer_free(g2, NULL);
    devq_kernel_destroy(bwd);
    devq_kernel_destroy(upd);
    devq_queue_destroy(compute);
    devq_queue_destroy(comm);
    devq_channel_destroy(ch);
    devq_device_close(dev);
    return ok ? 0 : 1;
}
