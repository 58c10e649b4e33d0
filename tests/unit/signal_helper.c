/* SPDX-License-Identifier: MIT */
/* Helper program exec'd by test_signal_shared: acts on an imported
 * process-shared signal in another process.
 *   signal_helper pingpong FD ROUNDS   wait 2i-1, set 2i, for i in 1..ROUNDS
 *   signal_helper serve FD ROUNDS      set 2i-1, wait 2i, for i in 1..ROUNDS
 *   signal_helper set FD VALUE         set VALUE
 *   signal_helper fail FD              devq_signal_fail(-EIO)
 *   signal_helper recv SOCK VALUE      receive the fd by SCM_RIGHTS, set VALUE
 * Exit status 0 on success; the detail on stderr otherwise. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <devq/devq.h>

#define SEC 1000000000ull

static int recv_fd(int sock)
{
    char byte;
    struct iovec iov = { &byte, 1 };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf
    };
    if (recvmsg(sock, &msg, 0) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static int fail(const char *what)
{
    fprintf(stderr, "signal_helper: %s: %s\n", what, devq_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int fd = atoi(argv[2]);
    if (!strcmp(argv[1], "recv") && (fd = recv_fd(fd)) < 0) {
        fprintf(stderr, "signal_helper: no fd received\n");
        return 1;
    }
    devq_signal *s;
    if (devq_signal_import_fd(fd, &s))
        return fail("import");
    uint64_t n = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
    if (!strcmp(argv[1], "pingpong")) {
        for (uint64_t i = 1; i <= n; i++) {
            if (devq_signal_wait(s, 2 * i - 1, 10 * SEC))
                return fail("wait");
            if (devq_signal_set(s, 2 * i))
                return fail("set");
        }
    } else if (!strcmp(argv[1], "serve")) {
        for (uint64_t i = 1; i <= n; i++) {
            if (devq_signal_set(s, 2 * i - 1))
                return fail("set");
            if (devq_signal_wait(s, 2 * i, 10 * SEC))
                return fail("wait");
        }
    } else if (!strcmp(argv[1], "set") || !strcmp(argv[1], "recv")) {
        if (devq_signal_set(s, n))
            return fail("set");
    } else if (!strcmp(argv[1], "fail")) {
        if (devq_signal_fail(s, -EIO))
            return fail("fail");
    } else {
        return 2;
    }
    devq_signal_destroy(s);
    return 0;
}
