/* SPDX-License-Identifier: MIT */
/* Names (devq(7) NAMES) on every backend: user objects are numbered per
 * process in creation order of the user's objects only, a name set with
 * devq_*_set_name shows up in devq_errmsg(), in DEVQ_LOG=basic wait lines
 * and in DEVQ_TRACE track names, and setting one races safely with
 * threads formatting messages about the object.
 *
 * DEVQ_LOG and DEVQ_TRACE are read once per process, and the numbers are
 * per process: the scenario runs in a fresh copy of this program
 * (CONF_NAMES_CHILD=1, see conf_main.c) with both set, and the case reads
 * what it wrote. */
#include "conf.h"
#include "../helpers/check_main.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the scenario, in the fresh process ---- */

static int child_failed;

#define EXPECT(cond, ...)                                             \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "conf_names child, line %d: ", __LINE__); \
            fprintf(stderr, __VA_ARGS__);                             \
            fputc('\n', stderr);                                      \
            child_failed = 1;                                         \
        }                                                             \
    } while (0)
#define OK(call) EXPECT((call) == 0, "%s: %s", #call, devq_errmsg())
#define SAYS(call, err, text)                              \
    do {                                                   \
        int r_ = (call);                                   \
        EXPECT(r_ == (err) && strstr(devq_errmsg(), text), \
               "%s returned %d (want %d), errmsg '%s' "    \
               "does not say '%s'",                        \
               #call, r_, err, devq_errmsg(), text);       \
    } while (0)

static void scenario(void)
{
    devq_device *dev = conf_open();
    devq_queue *q1, *q2;
    devq_buffer *w;
    /* Queues make signals of their own; none of them may take a number. */
    OK(devq_queue_create(dev, NULL, &q1));
    OK(devq_queue_create(dev, NULL, &q2));
    OK(devq_buffer_alloc(dev, 64 << 10, NULL, 5, &w));
    OK(devq_queue_set_name(q1, "loader"));
    OK(devq_buffer_set_name(w, "weights"));
    /* A cross-queue batch: the tracker orders q2 after q1 (a logged wait). */
    static uint8_t host[64 << 10];
    OK(devq_queue_fill(q1, w, 0, sizeof host, 7));
    OK(devq_queue_submit(q1));
    OK(devq_queue_read(q2, host, w, 0, sizeof host));
    OK(devq_queue_submit(q2));
    OK(devq_queue_finish(q2, 60 * SEC));
    OK(devq_queue_finish(q1, 60 * SEC));

    /* The first signal the user creates is #1, whatever lib made before. */
    devq_signal *s;
    OK(devq_signal_create(0, &s));
    SAYS(devq_signal_set(s, 0), -EINVAL, "devq_signal_set: signal #1: value 0");
    OK(devq_signal_set_name(s, "grads"));
    SAYS(devq_signal_set(s, 0), -EINVAL, "devq_signal_set: signal \"grads\" (#1): value 0");
    OK(devq_queue_set_name(q2, "mixer")); /* after creation: the track is renamed */
    /* A wait the tracker turns into a stream wait (q1 is still busy when
     * q2 submits, so the value is not reached yet), then one bridged (the
     * host sets the value later). */
    devq_kernel *nap = conf_kernel(dev, "sleep_ms");
    uint32_t ms = 300;
    devq_arg nap_arg = DEVQ_ARG_VAL(&ms);
    devq_launch one = conf_launch1(1, 1);
    OK(devq_queue_exec(q1, nap, &nap_arg, 1, &one));
    OK(devq_queue_signal(q1, s, 1));
    OK(devq_queue_submit(q1));
    OK(devq_queue_wait(q2, s, 1));
    OK(devq_queue_submit(q2));
    OK(devq_queue_finish(q2, 60 * SEC));
    OK(devq_queue_wait(q2, s, 5));
    OK(devq_queue_submit(q2));
    SAYS(devq_queue_finish(q2, 0), -ETIMEDOUT, "signal \"grads\" (#1) >= 5");
    SAYS(devq_queue_finish(q2, 0), -ETIMEDOUT, "queue \"mixer\" (#2)");
    OK(devq_signal_set(s, 5));
    OK(devq_queue_finish(q2, 60 * SEC));

    /* Buffers and kernels in recording errors. */
    SAYS(devq_queue_fill(q1, w, 65536, 8, 0), -EINVAL, "outside buffer \"weights\" (#1, tag 5, 64 KiB)");
    EXPECT(devq_queue_submit(q1) == -EINVAL, "sticky fill error not returned");
    devq_kernel *k = conf_kernel(dev, "scale");
    OK(devq_kernel_set_name(k, "scaler"));
    devq_arg bad[2] = { { .buf = w, .access = (enum devq_access)9 }, DEVQ_ARG_VAL(&(float){ 2.0f }) };
    devq_launch l = conf_launch1(16384, 256);
    SAYS(devq_queue_exec(q1, k, bad, 2, &l), -EINVAL, "kernel \"scaler\" (#2, entry ");
    EXPECT(devq_queue_submit(q1) == -EINVAL, "sticky exec error not returned");
    EXPECT(devq_queue_finish(q1, 60 * SEC) == -EINVAL, "discards not reported by finish");
    float two = 2.0f;
    devq_arg good[2] = { DEVQ_ARG_BUF(w, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&two) };
    OK(devq_queue_exec(q1, k, good, 2, &l));
    OK(devq_queue_submit(q1));
    OK(devq_queue_finish(q1, 60 * SEC));

    devq_kernel_destroy(k);
    devq_kernel_destroy(nap);
    OK(devq_buffer_free(w, NULL));
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_signal_destroy(s);
    devq_device_close(dev); /* the last close writes the trace */
}

START_TEST(names_scenario)
{
    scenario();
    ck_assert_msg(!child_failed, "the names scenario failed: its lines above say where");
}
END_TEST

/* Under Check too, so the conf_* helpers may assert. */
int conf_names_child(void)
{
    TCase *tc = tcase_create("scenario");
    tcase_add_test(tc, names_scenario);
    return check_run(check_suite_of("names-scenario", tc, 150));
}

/* ---- the case: run it, then read its log and trace ---- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static void run_child(const char *log, const char *trace)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("CONF_NAMES_CHILD", "1", 1);
        unsetenv("CK_RUN_SUITE"); /* the scenario is a suite of its own */
        unsetenv("CK_RUN_CASE");
        setenv("DEVQ_LOG", "basic", 1);
        setenv("DEVQ_LOG_FILE", log, 1);
        setenv("DEVQ_TRACE", trace, 1);
        execl("/proc/self/exe", "conformance", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    uint64_t deadline = 120 * 1000; /* ms: lavapipe under sanitizers is slow */
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (deadline-- == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ck_abort_msg("the names scenario did not finish in 120 s");
        }
        conf_sleep_ms(1);
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the names scenario failed (status 0x%x; its stderr says what)", status);
}

static void assert_has(const char *what, const char *text, const char *needle)
{
    ck_assert_msg(strstr(text, needle), "%s: '%s' not in:\n%s", what, needle, text);
}

START_TEST(names_in_messages_logs_and_traces)
{
    char log[] = "/tmp/conf-names-log-XXXXXX", trace[] = "/tmp/conf-names-trace-XXXXXX";
    int fl = mkstemp(log), ft = mkstemp(trace);
    ck_assert_int_ge(fl, 0);
    ck_assert_int_ge(ft, 0);
    close(fl);
    close(ft);
    run_child(log, trace);
    const char *text = slurp(log);
    /* DEVQ_LOG=basic: the wait the tracker inserted names both queues and
     * the buffer with its tag; the signal waits name the signal. */
    assert_has("buffer wait", text, "queue #2 waits on queue \"loader\" (#1) @");
    assert_has("buffer wait", text, "for buffer \"weights\" (#1, tag 5, 64 KiB)");
    assert_has("signal wait", text, "queue \"mixer\" (#2) waits on queue \"loader\" (#1) @");
    assert_has("signal wait", text, "for signal \"grads\" (#1) >= 1");
    assert_has("bridged wait", text, "signal \"grads\" (#1) >= 5");
    /* DEVQ_TRACE: tracks are named like the queues, renamed after set_name. */
    text = slurp(trace);
    assert_has("track", text, "\"name\":\"queue \\\"loader\\\" (#1, compute, stream ");
    assert_has("renamed track", text, "\"name\":\"queue \\\"mixer\\\" (#2, compute, stream ");
    assert_has("kernel slice", text, "\"name\":\"scaler\"");
    unlink(log);
    unlink(trace);
}
END_TEST

/* Relative numbers only here: other cases of this process made objects. */
static unsigned number_in(const char *msg, const char *kind)
{
    char head[32];
    snprintf(head, sizeof head, "%s #", kind);
    const char *p = strstr(msg, head);
    ck_assert_msg(p != NULL, "'%s' not in '%s'", head, msg);
    return (unsigned)strtoul(p + strlen(head), NULL, 10);
}

START_TEST(internal_signals_take_no_number)
{
    devq_signal *a = conf_signal(0), *b;
    ck_assert_int_eq(devq_signal_set(a, 0), -EINVAL);
    unsigned na = number_in(devq_errmsg(), "signal");
    /* Queues and a cross-queue batch: lib makes signals of its own. */
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_buffer *buf = conf_buffer(dev, 256);
    ck_assert_int_eq(devq_queue_fill(q1, buf, 0, 256, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_fill(q2, buf, 0, 256, 2), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_queue_finish(q2, 30 * SEC), 0);
    b = conf_signal(0);
    ck_assert_int_eq(devq_signal_set(b, 0), -EINVAL);
    ck_assert_uint_eq(number_in(devq_errmsg(), "signal"), na + 1);
    /* Queues are numbered per process, one after the other. */
    ck_assert_int_eq(devq_queue_set_name(NULL, "x"), -EINVAL);
    devq_queue *q3 = conf_queue(dev);
    ck_assert_int_eq(devq_queue_wait(q3, b, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q3), 0);
    ck_assert_int_eq(devq_queue_finish(q3, 0), -ETIMEDOUT);
    unsigned n3 = number_in(devq_errmsg(), "queue");
    ck_assert_int_eq(devq_queue_wait(q1, b, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_finish(q1, 0), -ETIMEDOUT);
    ck_assert_uint_eq(number_in(devq_errmsg(), "queue"), n3 - 2);
    /* Cleared names print as numbers again. */
    ck_assert_int_eq(devq_queue_set_name(q1, "first"), 0);
    ck_assert_int_eq(devq_queue_finish(q1, 0), -ETIMEDOUT);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "queue \"first\" (#"));
    ck_assert_int_eq(devq_queue_set_name(q1, ""), 0);
    ck_assert_int_eq(devq_queue_finish(q1, 0), -ETIMEDOUT);
    ck_assert_uint_eq(number_in(devq_errmsg(), "queue"), n3 - 2);
    ck_assert_int_eq(devq_signal_set(b, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q1, 30 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q3, 30 * SEC), 0);
    ck_assert_int_eq(devq_buffer_free(buf, NULL), 0);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_queue_destroy(q3);
    devq_signal_destroy(a);
    devq_signal_destroy(b);
    devq_device_close(dev);
}
END_TEST

/* set_name from one thread while others format messages about the same
 * objects: every message holds one whole name, never a torn one (and
 * TSan sees no race). */
static const char *const names[2] = { "alpha-alpha-alpha-alpha", "beta" };

struct race {
    devq_signal *s;
    devq_queue *q;
    devq_buffer *b;
    atomic_int stop;
    char torn[512]; /* the first bad message (formatter) */
};

static void *renamer(void *arg)
{
    struct race *r = arg;
    for (unsigned i = 0; !atomic_load(&r->stop); i++) {
        const char *n = i % 3 == 2 ? NULL : names[i % 2];
        devq_signal_set_name(r->s, n);
        devq_queue_set_name(r->q, n);
        devq_buffer_set_name(r->b, n);
    }
    return NULL;
}

/* 1 when msg names the object whole (one of the names, or unnamed). */
static int whole(int r, int want, const char *msg, const char *kind)
{
    char a[64], b[64], plain[32];
    snprintf(a, sizeof a, "%s \"%s\" (#", kind, names[0]);
    snprintf(b, sizeof b, "%s \"%s\" (#", kind, names[1]);
    snprintf(plain, sizeof plain, "%s #", kind);
    return r == want && (strstr(msg, a) || strstr(msg, b) || strstr(msg, plain));
}

/* Check's asserts belong to the test's thread: note the failure instead. */
static void *formatter(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->stop) && !r->torn[0]) {
        int ok = whole(devq_signal_set(r->s, 0), -EINVAL, devq_errmsg(), "signal") &&
                 whole(devq_queue_finish(r->q, 0), -ETIMEDOUT, devq_errmsg(), "queue") &&
                 whole(devq_queue_fill(r->q, r->b, 1u << 20, 8, 0), -EINVAL, devq_errmsg(), "buffer");
        devq_queue_submit(r->q); /* drops the fill's sticky error */
        if (!ok)
            snprintf(r->torn, sizeof r->torn, "%s", devq_errmsg());
    }
    return NULL;
}

START_TEST(set_name_races_with_messages)
{
    devq_device *dev = conf_open();
    struct race r = { .s = conf_signal(0), .q = conf_queue(dev), .b = conf_buffer(dev, 256) };
    atomic_init(&r.stop, 0);
    ck_assert_int_eq(devq_queue_wait(r.q, r.s, 1), 0); /* a queue that stays busy */
    ck_assert_int_eq(devq_queue_submit(r.q), 0);
    pthread_t t[2];
    ck_assert_int_eq(pthread_create(&t[0], NULL, renamer, &r), 0);
    ck_assert_int_eq(pthread_create(&t[1], NULL, formatter, &r), 0);
    conf_sleep_ms(300);
    atomic_store(&r.stop, 1);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    ck_assert_msg(!r.torn[0], "a message did not name its object whole: %s", r.torn);
    ck_assert_int_eq(devq_signal_set(r.s, 1), 0);
    int fin = devq_queue_finish(r.q, 30 * SEC); /* a discarded batch is reported once */
    ck_assert_msg(fin == 0 || fin == -EINVAL, "%d %s", fin, devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(r.q, 30 * SEC), 0);
    ck_assert_int_eq(devq_buffer_free(r.b, NULL), 0);
    devq_queue_destroy(r.q);
    devq_signal_destroy(r.s);
    devq_device_close(dev);
}
END_TEST

Suite *conf_names_suite(void)
{
    Suite *su = suite_create("names");
    TCase *tc = tcase_create("names");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, names_in_messages_logs_and_traces);
    tcase_add_test(tc, internal_signals_take_no_number);
    tcase_add_test(tc, set_name_races_with_messages);
    suite_add_tcase(su, tc);
    return su;
}
