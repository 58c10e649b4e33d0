/* SPDX-License-Identifier: MIT */
/* epoll: drive an event loop with devq_signal_wait_fd.  Three queues
 * finish work at different times; one epoll_wait loop learns about each
 * completion (or failure) without a thread per wait and without polling. */
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <devq/devq.h>

static void nap(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg * 1000);
}

int main(void)
{
    devq_device *dev;
    if (devq_device_open("cpu", &dev) < 0)
        return fprintf(stderr, "epoll: %s\n", devq_errmsg()), 1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    devq_queue *q[3];
    devq_signal *s[3];
    int fds[3];
    for (uintptr_t i = 0; i < 3; i++) {
        int fd; /* ours to close */
        if (devq_queue_create(dev, NULL, &q[i]) < 0 || devq_signal_create(0, &s[i]) < 0)
            return fprintf(stderr, "epoll: %s\n", devq_errmsg()), 1;
        devq_queue_host_fn(q[i], nap, (void *)(30 * (3 - i))); /* 90, 60, 30 ms */
        devq_queue_signal(q[i], s[i], 1);
        devq_queue_submit(q[i]);
        if (devq_signal_wait_fd(s[i], 1, &fd) < 0)
            return fprintf(stderr, "epoll: %s\n", devq_errmsg()), 1;
        fds[i] = fd;
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    for (int pending = 3; pending > 0;) {
        struct epoll_event ev;
        int n = epoll_wait(ep, &ev, 1, 5000);
        if (n <= 0)
            return fprintf(stderr, "epoll: timed out\n"), 1;
        int i = (int)ev.data.u64;
        printf("queue %d done: signal value %llu, status %d\n", i,
               (unsigned long long)devq_signal_value(s[i]), devq_signal_status(s[i]));
        epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], NULL);
        close(fds[i]);
        pending--;
    }
    close(ep);
    for (int i = 0; i < 3; i++) {
        devq_queue_destroy(q[i]);
        devq_signal_destroy(s[i]);
    }
    devq_device_close(dev);
    return 0;
}
