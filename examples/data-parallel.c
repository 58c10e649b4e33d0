/* Data-parallel training on 2 (or more) ranks: each rank fits the same
 * linear model to its own shard of the data; every step a forward kernel
 * writes the shard's gradient, an all_reduce averages the gradients over
 * the ranks, an update kernel applies them.  The ranks end with the same
 * weights, equal to the ones that made the data.
 *
 *   mpirun -np 2 examples/data-parallel
 *
 * The three ops of a step go on two queues (compute, comm) with no waits
 * written: the tracker orders them through the buffers (the all_reduce
 * reads and writes `grad`, which the forward kernel wrote and the update
 * reads).  The result is checked three ways: near the weights that made
 * the data, equal on every rank, and equal (to float rounding) to one
 * process training on every shard itself.  Exit 0 when the result is
 * right, 1 when not, 77 when there is no channel engine. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <devq/devq.h>

#define N 256          /* samples per rank */
#define D 8            /* features */
#define STEPS 300

/* grad[d] = 2/N * sum_i (x_i . w - y_i) * x_id; one work-item per d.
 * args: x (N*D), y (N), w (D), grad (D) */
int dp_forward(void *const *args, const devq_cpu_group *g);
int dp_forward(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0], *y = args[1], *w = args[2];
    float *grad = args[3];
    uint32_t d = g->group_id[0];
    if (d >= D)
        return 0;
    float acc = 0;
    for (int i = 0; i < N; i++) {
        float pred = 0;
        for (int k = 0; k < D; k++)
            pred += x[i * D + k] * w[k];
        acc += (pred - y[i]) * x[i * D + d];
    }
    grad[d] = 2.0f * acc / N;
    return 0;
}

/* w[d] -= lr * grad[d]; args: w, grad, &lr */
int dp_update(void *const *args, const devq_cpu_group *g);
int dp_update(void *const *args, const devq_cpu_group *g)
{
    float *w = args[0];
    const float *grad = args[1];
    float lr = *(const float *)args[2];
    uint32_t d = g->group_id[0];
    if (d < D)
        w[d] -= lr * grad[d];
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

#define TRY(x)                                                                  \
    do {                                                                        \
        if ((x) < 0) {                                                          \
            fprintf(stderr, "data-parallel: %s: %s\n", #x, devq_errmsg());     \
            return 1;                                                           \
        }                                                                       \
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
    devq_kernel *fwd, *upd;
    TRY(devq_kernel_load(dev, NULL, 0, "dp_forward", &fwd));
    TRY(devq_kernel_load(dev, NULL, 0, "dp_update", &upd));
    devq_buffer *x, *y, *w, *grad;
    TRY(devq_buffer_alloc(dev, N * D * sizeof(float), NULL, 1, &x));
    TRY(devq_buffer_alloc(dev, N * sizeof(float), NULL, 2, &y));
    TRY(devq_buffer_alloc(dev, D * sizeof(float), NULL, 3, &w));
    TRY(devq_buffer_alloc(dev, D * sizeof(float), NULL, 4, &grad));

    /* This rank's shard: the same inputs on every rank, labels made by
     * weights shifted per rank (w_true + (rank - (size-1)/2) * 0.1), so
     * that each rank alone would fit its own shift and only the averaged
     * gradient reaches w_true: the check below fails without the all_reduce. */
    float w_true[D], *xp = devq_buffer_host_ptr(x), *yp = devq_buffer_host_ptr(y), *wp = devq_buffer_host_ptr(w);
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
    devq_launch l = { .global = { D } };
    for (int step = 0; step < STEPS; step++) {
        devq_arg fa[4] = { DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ), DEVQ_ARG_BUF(w, DEVQ_READ),
                           DEVQ_ARG_BUF(grad, DEVQ_WRITE) };
        devq_arg ua[3] = { DEVQ_ARG_BUF(w, DEVQ_READ_WRITE), DEVQ_ARG_BUF(grad, DEVQ_READ), DEVQ_ARG_VAL(&lr) };
        TRY(devq_queue_exec(compute, fwd, fa, 4, &l));
        TRY(devq_queue_submit(compute));
        TRY(devq_queue_all_reduce(comm, ch, grad, 0, grad, 0, D, DEVQ_F32, DEVQ_AVG));
        TRY(devq_queue_submit(comm));
        TRY(devq_queue_exec(compute, upd, ua, 3, &l));
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
           "weights %s on every rank: %s\n", rank, size, STEPS, err, dref, ok ? "equal" : "NOT equal",
           ok ? "ok" : "FAILED");

    devq_buffer_free(all, NULL);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_buffer_free(w, NULL);
    devq_buffer_free(grad, NULL);
    devq_kernel_destroy(fwd);
    devq_kernel_destroy(upd);
    devq_queue_destroy(compute);
    devq_queue_destroy(comm);
    devq_channel_destroy(ch);
    devq_device_close(dev);
    return ok ? 0 : 1;
}
