/* SPDX-License-Identifier: MIT */
/* hello: the smallest useful devq program.  A kernel scales a buffer on
 * one queue; a second queue reads the result after a timeline signal.
 * Build against an installed devq:
 *   cc -rdynamic hello.c $(pkg-config --cflags --libs devq) -o hello */
#include <stdio.h>
#include <devq/devq.h>

/* A cpu kernel: called once per work-group. */
int scale(void *const *args, const devq_cpu_group *g);
int scale(void *const *args, const devq_cpu_group *g)
{
    float *x = args[0];
    float factor = *(const float *)args[1];
    for (uint32_t i = 0; i < g->local_size[0]; i++)
        x[g->group_id[0] * g->local_size[0] + i] *= factor;
    return 0;
}

int main(void)
{
    devq_device *dev;
    devq_queue *compute, *copy;
    devq_buffer *buf;
    devq_kernel *k;
    devq_signal *done;
    float data[1024], factor = 3.0f;
    for (int i = 0; i < 1024; i++)
        data[i] = (float)i;

    if (devq_device_open("cpu", &dev) < 0 || devq_queue_create(dev, NULL, &compute) < 0 ||
        devq_queue_create(dev, NULL, &copy) < 0 || devq_buffer_alloc(dev, sizeof data, NULL, 0, &buf) < 0 ||
        devq_kernel_load(dev, NULL, 0, "scale", &k) < 0 || devq_signal_create(0, &done) < 0) {
        fprintf(stderr, "hello: %s\n", devq_errmsg());
        return 1;
    }
    devq_arg args[] = { DEVQ_ARG_BUF(buf, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&factor) };
    devq_launch launch = { .global = { 1024 }, .local = { 256 } };
    devq_queue_write(compute, buf, 0, data, sizeof data);
    devq_queue_exec(compute, k, args, 2, &launch);
    devq_queue_signal(compute, done, 1);
    if (devq_queue_submit(compute) < 0)
        return fprintf(stderr, "hello: %s\n", devq_errmsg()), 1;

    devq_queue_wait(copy, done, 1); /* ordered on the device */
    devq_queue_read(copy, data, buf, 0, sizeof data);
    devq_queue_submit(copy);
    if (devq_queue_finish(copy, 5000000000ull) < 0)
        return fprintf(stderr, "hello: %s\n", devq_errmsg()), 1;
    printf("data[10] = %g (expected 30)\n", data[10]);

    devq_signal_destroy(done);
    devq_kernel_destroy(k);
    devq_buffer_free(buf, NULL);
    devq_queue_destroy(copy);
    devq_queue_destroy(compute);
    devq_device_close(dev);
    return data[10] == 30.0f ? 0 : 1;
}
