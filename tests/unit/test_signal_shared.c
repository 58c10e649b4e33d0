/* SPDX-License-Identifier: MIT */
/* Process-shared signals: across fork, across exec'd processes (fd by
 * inheritance and by SCM_RIGHTS), notify and wait_fd woken by another
 * process, failure across processes, import validation, a dead process. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>
#include "../helpers/check_main.h"

#define SEC 1000000000ull

static char helper[PATH_MAX];

static int wait_child(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* fork + exec the helper with fd inherited (close-on-exec cleared). */
static pid_t spawn(const char *mode, int fd, const char *arg)
{
    int fl = fcntl(fd, F_GETFD);
    fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
    char fdbuf[16];
    snprintf(fdbuf, sizeof fdbuf, "%d", fd);
    pid_t pid = fork();
    if (pid == 0) {
        execl(helper, helper, mode, fdbuf, arg, (char *)NULL);
        _exit(127);
    }
    return pid;
}

START_TEST(across_fork)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* The mapping is inherited: the same handle works in the child. */
        for (uint64_t i = 1; i <= 2000; i++) {
            if (devq_signal_wait(s, 2 * i - 1, 10 * SEC) || devq_signal_set(s, 2 * i))
                _exit(1);
        }
        _exit(0);
    }
    for (uint64_t i = 1; i <= 2000; i++) {
        ck_assert_int_eq(devq_signal_set(s, 2 * i - 1), 0);
        ck_assert_msg(devq_signal_wait(s, 2 * i, 10 * SEC) == 0, "%s", devq_errmsg());
    }
    ck_assert_int_eq(wait_child(pid), 0);
    ck_assert_uint_eq(devq_signal_value(s), 4000);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(across_exec)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
    pid_t pid = spawn("pingpong", fd, "2000");
    close(fd);
    for (uint64_t i = 1; i <= 2000; i++) {
        ck_assert_int_eq(devq_signal_set(s, 2 * i - 1), 0);
        ck_assert_msg(devq_signal_wait(s, 2 * i, 10 * SEC) == 0, "%s", devq_errmsg());
    }
    ck_assert_int_eq(wait_child(pid), 0);
    devq_signal_destroy(s);
}
END_TEST

static void cb_count(void *arg, int status)
{
    devq_signal *done = arg;
    /* status 0 raises to 1; anything else fails the tally. */
    if (status)
        devq_signal_fail(done, status);
    else
        devq_signal_set(done, devq_signal_value(done) + 1);
}

/* Two exec'd processes ping-pong with each other; this one only watches
 * (and its notifier is woken by their sets). */
START_TEST(between_two_exec_processes)
{
    devq_signal *s, *done;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_signal_notify(s, 4000, cb_count, done, NULL), 0);
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
    pid_t a = spawn("serve", fd, "2000");
    pid_t b = spawn("pingpong", fd, "2000");
    close(fd);
    ck_assert_msg(devq_signal_wait(s, 4000, 20 * SEC) == 0, "%s", devq_errmsg());
    ck_assert_int_eq(wait_child(a), 0);
    ck_assert_int_eq(wait_child(b), 0);
    ck_assert_uint_eq(devq_signal_value(s), 4000);
    ck_assert_msg(devq_signal_wait(done, 1, 10 * SEC) == 0, "%s", devq_errmsg());
    devq_signal_destroy(s);
    devq_signal_destroy(done);
}
END_TEST

static void send_fd(int sock, int fd)
{
    char byte = 'f';
    struct iovec iov = { &byte, 1 };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf
    };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ck_assert_int_eq(sendmsg(sock, &msg, 0), 1);
}

START_TEST(scm_rights)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(3, &s), 0);
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    pid_t pid = spawn("recv", sv[1], "42");
    close(sv[1]);
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
    send_fd(sv[0], fd);
    close(fd);
    ck_assert_msg(devq_signal_wait(s, 42, 10 * SEC) == 0, "%s", devq_errmsg());
    ck_assert_int_eq(wait_child(pid), 0);
    close(sv[0]);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(notify_and_fd_from_other_process)
{
    devq_signal *s, *done;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_signal_notify(s, 7, cb_count, done, NULL), 0);
    int pfd;
    ck_assert_int_eq(devq_signal_wait_fd(s, 7, &pfd), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 0), -ETIMEDOUT);
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
    /* The notifier is asleep by now; only the helper's set can wake it. */
    pid_t pid = spawn("set", fd, "7");
    close(fd);
    ck_assert_int_eq(wait_child(pid), 0);
    ck_assert_msg(devq_signal_wait(done, 1, 10 * SEC) == 0, "%s", devq_errmsg());
    struct pollfd p = { .fd = pfd, .events = POLLIN };
    ck_assert_int_eq(poll(&p, 1, 10000), 1);
    close(pfd);
    devq_signal_destroy(s);
    devq_signal_destroy(done);
}
END_TEST

/* More shared signals with pending notifies than one futex_waitv takes
 * (127 a thread): each is watched, and a set in another process runs
 * every callback (issue 27: the 128th used to be -ENOTSUP). */
#define MANY_WATCHED 300
START_TEST(many_watched_from_other_process)
{
    static devq_signal *sigs[MANY_WATCHED];
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    for (int i = 0; i < MANY_WATCHED; i++) {
        ck_assert_int_eq(devq_signal_create_shared(0, &sigs[i]), 0);
        int r = devq_signal_notify(sigs[i], 1, cb_count, done, NULL);
        ck_assert_msg(r == 0, "notify on shared signal %d: %d %s", i, r, devq_errmsg());
    }
    ck_assert_int_eq(devq_signal_wait(done, 1, 0), -ETIMEDOUT);
    pid_t pid = fork();
    if (pid == 0) {
        /* Set each through a handle of the child's own, imported: the
         * inherited one holds a copy of the parent's registrations, and
         * delivering those would start threads in a child of a threaded
         * process (TSan refuses).  Only the parent's watchers see these
         * sets in the parent. */
        for (int i = MANY_WATCHED - 1; i >= 0; i--) {
            int fd;
            devq_signal *mine;
            if (devq_signal_export_fd(sigs[i], &fd) || devq_signal_import_fd(fd, &mine) ||
                devq_signal_set(mine, 1))
                _exit(1);
            devq_signal_destroy(mine);
            close(fd);
        }
        _exit(0);
    }
    ck_assert_int_eq(wait_child(pid), 0);
    ck_assert_msg(devq_signal_wait(done, MANY_WATCHED, 10 * SEC) == 0, "%llu of %d callbacks ran: %s",
                  (unsigned long long)devq_signal_value(done), MANY_WATCHED, devq_errmsg());
    ck_assert_uint_eq(devq_signal_value(done), MANY_WATCHED);
    for (int i = 0; i < MANY_WATCHED; i++)
        devq_signal_destroy(sigs[i]);
    devq_signal_destroy(done);
}
END_TEST

START_TEST(shared_destroy_cancels_notify)
{
    devq_signal *s, *done;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    devq_notify *h;
    ck_assert_int_eq(devq_signal_notify(s, 9, cb_count, done, &h), 0);
    devq_signal_destroy(s);
    /* Run on the notifier with -ECANCELED (cb_count fails `done` with it);
     * the handle is still ours to give back. */
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), -ECANCELED);
    ck_assert_int_eq(devq_notify_cancel(h), -EALREADY);
    devq_signal_destroy(done);
}
END_TEST

START_TEST(failure_from_other_process)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
    pid_t pid = spawn("fail", fd, NULL);
    close(fd);
    ck_assert_int_eq(devq_signal_wait(s, 1, 10 * SEC), -EIO);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "devq_signal_fail(-EIO) called on signal #"));
    ck_assert_int_eq(devq_signal_status(s), -EIO);
    ck_assert_int_eq(devq_signal_set(s, 5), -EIO);
    ck_assert_int_eq(wait_child(pid), 0);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(import_validation)
{
    devq_signal *s = NULL;
    ck_assert_int_eq(devq_signal_import_fd(-1, &s), -EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(devq_signal_import_fd(0, NULL), -EINVAL);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    ck_assert_int_eq(devq_signal_import_fd(pipefd[0], &s), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "is not a devq shared signal"));
    close(pipefd[0]);
    close(pipefd[1]);
    int m = memfd_create("not-a-signal", MFD_CLOEXEC);
    ck_assert_int_eq(ftruncate(m, 100), 0);
    ck_assert_int_eq(devq_signal_import_fd(m, &s), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "size 100"));
    ck_assert_int_eq(ftruncate(m, 4096), 0);
    ck_assert_int_eq(devq_signal_import_fd(m, &s), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "magic"));
    close(m);

    devq_signal *priv;
    ck_assert_int_eq(devq_signal_create(0, &priv), 0);
    int fd = 5;
    ck_assert_int_eq(devq_signal_export_fd(priv, &fd), -EINVAL);
    ck_assert_int_eq(fd, -1);
    char want[128];
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "is not shared; create it with "
                                                "devq_signal_create_shared"));
    snprintf(want, sizeof want, "signal #");
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), want));
    devq_signal_destroy(priv);

    /* A good import sees the same timeline. */
    devq_signal *a, *b;
    ck_assert_int_eq(devq_signal_create_shared(11, &a), 0);
    ck_assert_int_eq(devq_signal_export_fd(a, &fd), 0);
    ck_assert_int_eq(devq_signal_import_fd(fd, &b), 0);
    close(fd);
    ck_assert_uint_eq(devq_signal_value(b), 11);
    ck_assert_int_eq(devq_signal_set(a, 12), 0);
    ck_assert_uint_eq(devq_signal_value(b), 12);
    ck_assert_int_eq(devq_signal_set(b, 12), -EINVAL);
    devq_signal_destroy(a);
    ck_assert_int_eq(devq_signal_set(b, 13), 0); /* mapping outlives a */
    devq_signal_destroy(b);
}
END_TEST

START_TEST(dead_process_leaves_it_usable)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    pid_t pid = fork();
    if (pid == 0) {
        devq_signal_wait(s, 100, DEVQ_TIMEOUT_INFINITE); /* killed while asleep */
        _exit(3);
    }
    struct timespec ts = { 0, 50000000 };
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    ck_assert_int_eq(wait_child(pid), 128 + SIGKILL);
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 0), 0);
    pid = fork();
    if (pid == 0)
        _exit(devq_signal_wait(s, 2, 10 * SEC) == 0 ? 0 : 1);
    ck_assert_int_eq(devq_signal_set(s, 2), 0);
    ck_assert_int_eq(wait_child(pid), 0);
    devq_signal_destroy(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("signal_shared");
    TCase *tc = tcase_create("shared");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, across_fork);
    tcase_add_test(tc, across_exec);
    tcase_add_test(tc, scm_rights);
    tcase_add_test(tc, between_two_exec_processes);
    tcase_add_test(tc, notify_and_fd_from_other_process);
    tcase_add_test(tc, many_watched_from_other_process);
    tcase_add_test(tc, failure_from_other_process);
    tcase_add_test(tc, shared_destroy_cancels_notify);
    tcase_add_test(tc, import_validation);
    tcase_add_test(tc, dead_process_leaves_it_usable);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    (void)argc;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 99;
    self[n] = 0;
    /* Under libtool the real binary may sit in .libs/ with an lt- prefix;
     * the helper is linked statically beside the test's source name. */
    char *dir = dirname(self);
    if (!strcmp(basename(dir), ".libs"))
        dir = dirname(dir);
    snprintf(helper, sizeof helper, "%s/signal_helper", dir);
    (void)argv;
    return check_run(suite());
}
