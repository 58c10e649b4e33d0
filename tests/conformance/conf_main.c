/* SPDX-License-Identifier: MIT */
/* The conformance runner: every suite, against DEVQ_TEST_DEVICE. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "conf.h"
#include "../helpers/check_main.h"

/* Can the device be opened?  Asked in a child: Check forks each test,
 * and a GPU driver initialized here (cuInit) is unusable in every
 * process forked after it -- the tests would all fail with
 * CUDA_ERROR_NOT_INITIALIZED on a real GPU.  0, or 77 with why in msg. */
static int probe_in_child(char *msg, size_t n)
{
    int fds[2];
    if (pipe(fds) < 0)
        return snprintf(msg, n, "pipe: %s", strerror(errno)), 77;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        devq_device *dev = NULL;
        int r = devq_device_open(conf_backend(), &dev);
        if (r < 0) {
            const char *e = devq_errmsg();
            ssize_t w = write(fds[1], e, strlen(e));
            (void)w;
            _exit(77);
        }
        devq_device_close(dev);
        _exit(0);
    }
    close(fds[1]);
    ssize_t got = pid < 0 ? 0 : read(fds[0], msg, n - 1);
    msg[got > 0 ? got : 0] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return snprintf(msg, n, "fork: %s", strerror(errno)), 77;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (!*msg)
        snprintf(msg, n, "the probing child died (status %#x)", (unsigned)status);
    return 77;
}

int main(void)
{
    if (getenv("CONF_NAMES_CHILD"))
        return conf_names_child();
    char why[512];
    if (probe_in_child(why, sizeof why)) {
        printf("SKIP: cannot open device '%s': %s\n", conf_backend(), why);
        return 77;
    }
    SRunner *sr = srunner_create(conf_queue_suite());
    srunner_add_suite(sr, conf_failure_suite());
    srunner_add_suite(sr, conf_failmodel_suite());
    srunner_add_suite(sr, conf_deferral_suite());
    srunner_add_suite(sr, conf_hazards_suite());
    srunner_add_suite(sr, conf_memory_suite());
    srunner_add_suite(sr, conf_mem_idle_suite());
    srunner_add_suite(sr, conf_tracker_suite());
    srunner_add_suite(sr, conf_timing_suite());
    srunner_add_suite(sr, conf_race_suite());
    srunner_add_suite(sr, conf_names_suite());
    srunner_add_suite(sr, conf_inline_suite());
    srunner_add_suite(sr, conf_kcheck_suite());
    srunner_add_suite(sr, conf_graph_suite());
    srunner_add_suite(sr, conf_fork_suite());
    return check_run_runner(sr);
}
