/* SPDX-License-Identifier: MIT */
/* An inference loop, one-shot and as a graph (devq_graph_instantiate(3)).
 *
 * Each step computes x = 0.5 * W x + p_t (a matrix-vector product on a
 * cpu kernel, then a copy back into x).  Step t's parameters p_t are
 * uploaded on a second queue into one of two parameter buffers while the
 * compute queue runs the step before: the tracker orders the upload
 * after the step that last read that buffer and the step after the
 * upload, with no explicit wait.  The graph is recorded once; each step
 * rebinds its parameter buffer (devq_graph_exec_set_buffer) and submits
 * it.  Both runs are checked against a plain C loop and timed.
 *
 *   inference-loop [N [STEPS]]   (default 64 and 200: what make check runs) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        int r_ = (x);                                                              \
        if (r_ < 0) {                                                              \
            fprintf(stderr, "inference-loop: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* y[i] = 0.5 * sum_j W[i][j] x[j] + p[i], one row per work-item. */
int inference_matvec(void *const *a, const devq_cpu_group *g);
int inference_matvec(void *const *a, const devq_cpu_group *g)
{
    const float *w = a[0], *x = a[1], *p = a[2];
    float *y = a[3];
    uint32_t n = *(const uint32_t *)a[4];
    for (uint32_t l = 0; l < g->local_size[0]; l++) {
        uint32_t i = g->group_id[0] * g->local_size[0] + l;
        if (i >= n)
            continue;
        float s = 0;
        for (uint32_t j = 0; j < n; j++)
            s += w[(size_t)i * n + j] * x[j];
        y[i] = 0.5f * s + p[i];
    }
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(inference_matvec, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER,
                          DEVQ_CPU_BUFFER, DEVQ_CPU_VALUE(uint32_t));

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct model {
    uint32_t n, steps;
    float *w, *params; /* params: steps rows of n */
    devq_device *dev;
    devq_queue *compute, *upload;
    devq_kernel *matvec;
    devq_buffer *w_buf, *x_buf, *y_buf, *p_buf[2];
};

/* The reference: the same arithmetic in a plain C loop. */
static void reference(const struct model *m, float *x)
{
    float *y = malloc(m->n * sizeof *y);
    memset(x, 0, m->n * sizeof *x);
    for (uint32_t t = 0; t < m->steps; t++) {
        for (uint32_t i = 0; i < m->n; i++) {
            float s = 0;
            for (uint32_t j = 0; j < m->n; j++)
                s += m->w[(size_t)i * m->n + j] * x[j];
            y[i] = 0.5f * s + m->params[(size_t)t * m->n + i];
        }
        memcpy(x, y, m->n * sizeof *x);
    }
    free(y);
}

/* Step t's parameters into their buffer, on the upload queue. */
static void upload(struct model *m, uint32_t t)
{
    CHECK(
        devq_queue_write(m->upload, m->p_buf[t % 2], 0, &m->params[(size_t)t * m->n], m->n * sizeof(float)));
    CHECK(devq_queue_submit(m->upload));
}

/* One step's ops on the compute queue (recorded per step, or once). */
static void record_step(struct model *m, devq_buffer *p)
{
    devq_arg a[5] = { DEVQ_ARG_BUF(m->w_buf, DEVQ_READ), DEVQ_ARG_BUF(m->x_buf, DEVQ_READ),
                      DEVQ_ARG_BUF(p, DEVQ_READ), DEVQ_ARG_BUF(m->y_buf, DEVQ_WRITE), DEVQ_ARG_VAL(&m->n) };
    devq_launch l = { .global = { m->n, 1, 1 }, .local = { 16, 1, 1 } };
    CHECK(devq_queue_exec(m->compute, m->matvec, a, 5, &l));
    CHECK(devq_queue_copy(m->compute, m->x_buf, 0, m->y_buf, 0, m->n * sizeof(float)));
}

static void reset_state(struct model *m)
{
    CHECK(devq_queue_fill(m->compute, m->x_buf, 0, m->n * sizeof(float), 0));
    CHECK(devq_queue_submit(m->compute));
    CHECK(devq_queue_finish(m->compute, DEVQ_TIMEOUT_INFINITE));
}

static void read_state(struct model *m, float *x)
{
    CHECK(devq_queue_read(m->compute, x, m->x_buf, 0, m->n * sizeof(float)));
    CHECK(devq_queue_submit(m->compute));
    CHECK(devq_queue_finish(m->compute, DEVQ_TIMEOUT_INFINITE));
    CHECK(devq_queue_finish(m->upload, DEVQ_TIMEOUT_INFINITE));
}

static double run_one_shot(struct model *m, float *x)
{
    reset_state(m);
    double t0 = now_ms();
    for (uint32_t t = 0; t < m->steps; t++) {
        upload(m, t);
        record_step(m, m->p_buf[t % 2]);
        CHECK(devq_queue_submit(m->compute));
    }
    read_state(m, x);
    return now_ms() - t0;
}

static double run_graph(struct model *m, float *x)
{
    reset_state(m);
    double t0 = now_ms();
    devq_graph *g;
    devq_graph_exec *ge;
    CHECK(devq_queue_begin_capture(m->compute));
    record_step(m, m->p_buf[0]);
    CHECK(devq_queue_end_capture(m->compute, &g));
    CHECK(devq_graph_instantiate(g, &ge));
    devq_graph_destroy(g);
    devq_buffer *bound = m->p_buf[0];
    for (uint32_t t = 0; t < m->steps; t++) {
        upload(m, t);
        CHECK(devq_graph_exec_set_buffer(ge, bound, m->p_buf[t % 2]));
        bound = m->p_buf[t % 2];
        CHECK(devq_graph_submit(m->compute, ge));
    }
    devq_graph_exec_destroy(ge);
    read_state(m, x);
    return now_ms() - t0;
}

static int compare(const char *what, const float *got, const float *want, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (fabsf(got[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i]))) {
            fprintf(stderr, "inference-loop: %s: x[%u] = %g, the C loop gives %g\n", what, i, got[i],
                    want[i]);
            return 1;
        }
    return 0;
}

static void setup(struct model *m)
{
    m->w = malloc((size_t)m->n * m->n * sizeof *m->w);
    m->params = malloc((size_t)m->steps * m->n * sizeof *m->params);
    if (!m->w || !m->params) {
        fprintf(stderr, "inference-loop: out of memory\n");
        exit(1);
    }
    srand(7);
    for (size_t i = 0; i < (size_t)m->n * m->n; i++) /* |0.5 W| < 1: x stays bounded */
        m->w[i] = ((float)(rand() % 1000) / 1000.0f - 0.5f) / (float)m->n;
    for (size_t i = 0; i < (size_t)m->steps * m->n; i++)
        m->params[i] = (float)(rand() % 1000) / 1000.0f;
    CHECK(devq_device_open("cpu", &m->dev));
    CHECK(devq_queue_create(m->dev, NULL, &m->compute));
    CHECK(devq_queue_create(m->dev, NULL, &m->upload));
    CHECK(devq_kernel_load(m->dev, NULL, 0, "inference_matvec", &m->matvec));
    size_t vec = m->n * sizeof(float);
    CHECK(devq_buffer_alloc(m->dev, (size_t)m->n * vec, NULL, 0, &m->w_buf));
    CHECK(devq_buffer_alloc(m->dev, vec, NULL, 0, &m->x_buf));
    CHECK(devq_buffer_alloc(m->dev, vec, NULL, 0, &m->y_buf));
    CHECK(devq_buffer_alloc(m->dev, vec, NULL, 0, &m->p_buf[0]));
    CHECK(devq_buffer_alloc(m->dev, vec, NULL, 0, &m->p_buf[1]));
    CHECK(devq_queue_write(m->compute, m->w_buf, 0, m->w, (size_t)m->n * vec));
    CHECK(devq_queue_submit(m->compute));
}

static void teardown(struct model *m)
{
    devq_buffer *bufs[] = { m->w_buf, m->x_buf, m->y_buf, m->p_buf[0], m->p_buf[1] };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        CHECK(devq_buffer_free(bufs[i], NULL));
    devq_kernel_destroy(m->matvec);
    devq_queue_destroy(m->upload);
    devq_queue_destroy(m->compute);
    devq_device_close(m->dev);
    free(m->w);
    free(m->params);
}

int main(int argc, char **argv)
{
    struct model m = { .n = argc > 1 ? (uint32_t)atoi(argv[1]) : 64,
                       .steps = argc > 2 ? (uint32_t)atoi(argv[2]) : 200 };
    if (m.n < 1 || m.steps < 1) {
        fprintf(stderr, "usage: inference-loop [N [STEPS]]\n");
        return 2;
    }
    setup(&m);
    float *want = malloc(m.n * sizeof *want), *one = malloc(m.n * sizeof *one),
          *gr = malloc(m.n * sizeof *gr);
    reference(&m, want);
    double t_one = run_one_shot(&m, one);
    double t_graph = run_graph(&m, gr);
    int bad = compare("one-shot", one, want, m.n) + compare("graph", gr, want, m.n);
    printf("inference loop, %u x %u, %u steps: one-shot %.2f ms, graph %.2f ms (%.2fx)%s\n", m.n, m.n,
           m.steps, t_one, t_graph, t_graph > 0 ? t_one / t_graph : 0.0,
           bad ? "" : "; both match the C loop");
    free(want);
    free(one);
    free(gr);
    teardown(&m);
    return bad ? 1 : 0;
}
