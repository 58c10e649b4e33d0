/* SPDX-License-Identifier: MIT */
/* The page of a process-shared signal, as another process may leave it,
 * followed by a sequence of API calls (lib/signal_page.c validates every
 * read of the page).  The target creates a shared signal, maps its
 * exported fd a second time (the "peer"), copies the chosen fields of
 * the input page into it, then runs the calls; some calls are the peer's
 * (scribble bytes, raise the value, fail by the rules).
 *
 * Input: byte 0 picks which fields the page image overwrites (bit 0
 * magic+version, 1 value, 2 seq+waiters, 3 status, 4 fail state, 5
 * cause); the next offsetof(struct devq_timeline, fail_writer) bytes are the image;
 * then 9-byte calls (an opcode byte, a little-endian 64-bit argument).
 *
 * Properties: every call returns 0 or a negative errno (-4095..-1);
 * every devq_errmsg() after a failed call is terminated within its
 * buffer and printable ASCII; devq_signal_value never goes down; once a
 * call said the signal was corrupted, every later call says so; a run
 * where the peer only played by the rules never says so; notify
 * callbacks get 0 or a negative errno. */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>
#include <devq/devq.h>
#include "signal_impl.h"
#include "fuzz.h"

/* The version-1 part of the page: the corpora were cut to it (the
 * writer record and the producer table after it are signal_peer.c's). */
#define PAGE_BYTES offsetof(struct devq_timeline, fail_writer)
#define CALL_BYTES 9
#define MAX_CALLS 64
#define CORRUPT_TEXT "was corrupted by a process sharing it"

struct run {
    devq_signal *s;
    struct devq_timeline *peer; /* the second mapping */
    int honest;                 /* the peer only played by the rules */
    int corrupt;                /* a call said so */
    uint64_t last_value;
};

static int is_errno(int r)
{
    return r == 0 || (r < 0 && r >= -4095);
}

static void check_msg(void)
{
    const char *m = devq_errmsg();
    size_t n = strnlen(m, 512);
    FUZZ_CHECK(n < 512, "errmsg not terminated");
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(m[i] >= 0x20 && m[i] < 0x7f, "errmsg byte %zu is 0x%02x: %s", i, (unsigned char)m[i], m);
}

/* Every int result goes through here. */
static void check(struct run *run, int r, const char *what)
{
    FUZZ_CHECK(is_errno(r), "%s returned %d", what, r);
    if (r == 0) {
        FUZZ_CHECK(!run->corrupt, "%s returned 0 on a corrupted signal", what);
        return;
    }
    check_msg();
    int says = r == -EBADMSG && strstr(devq_errmsg(), CORRUPT_TEXT);
    if (run->corrupt)
        FUZZ_CHECK(says, "%s returned %d (%s) after the signal was corrupted", what, r, devq_errmsg());
    if (says) {
        FUZZ_CHECK(!run->honest, "%s: an honest peer was called corrupt: %s", what, devq_errmsg());
        run->corrupt = 1;
    }
}

static void check_value(struct run *run)
{
    uint64_t v = devq_signal_value(run->s);
    FUZZ_CHECK(v >= run->last_value, "value went down to %llu from %llu", (unsigned long long)v,
               (unsigned long long)run->last_value);
    run->last_value = v;
}

static void on_notify(void *arg, int status)
{
    (void)arg;
    FUZZ_CHECK(is_errno(status), "notify callback got %d", status);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void load_page(struct run *run, uint8_t mask, const uint8_t *img)
{
    struct devq_timeline t;
    memset(&t, 0, sizeof t);
    memcpy(&t, img, PAGE_BYTES);
    struct devq_timeline *p = run->peer;
    if (mask & 1) {
        p->magic = t.magic;
        p->version = t.version;
    }
    if (mask & 2)
        atomic_store(&p->value, atomic_load(&t.value));
    if (mask & 4) {
        atomic_store(&p->seq, atomic_load(&t.seq));
        atomic_store(&p->waiters, atomic_load(&t.waiters));
    }
    if (mask & 8)
        atomic_store(&p->status, atomic_load(&t.status));
    if (mask & 16)
        atomic_store(&p->fail_state, atomic_load(&t.fail_state));
    if (mask & 32)
        memcpy(p->cause, t.cause, sizeof p->cause);
    /* A value moved, by itself, is what a peer's set does. */
    run->honest = !(mask & ~2u);
}

/* The peer, by the rules: raise the value, or fail once. */
static void peer_raise(struct run *run, uint64_t v)
{
    uint64_t cur = atomic_load(&run->peer->value);
    while (cur < v && !atomic_compare_exchange_weak(&run->peer->value, &cur, v))
        ;
    atomic_fetch_add(&run->peer->seq, 1);
}

static void peer_fail(struct run *run, uint64_t arg)
{
    uint32_t expect = FAIL_NONE;
    if (!atomic_compare_exchange_strong(&run->peer->fail_state, &expect, FAIL_WRITING))
        return;
    /* Any bytes: the cause is the peer's to write (with a terminator). */
    for (size_t i = 0; i + 1 < sizeof run->peer->cause; i++)
        run->peer->cause[i] = (char)((arg >> (8 * (i % 8))) + i);
    run->peer->cause[sizeof run->peer->cause - 1] = 0;
    atomic_store(&run->peer->status, -(int)(arg % 4095) - 1);
    atomic_store(&run->peer->fail_state, FAIL_DONE);
    atomic_fetch_add(&run->peer->seq, 1);
}

static void scribble(struct run *run, uint64_t arg)
{
    size_t off = (size_t)(arg & 0xff) % PAGE_BYTES;
    size_t len = (size_t)((arg >> 40) % 4) + 1;
    uint32_t data = (uint32_t)(arg >> 8);
    if (off + len > PAGE_BYTES)
        len = PAGE_BYTES - off;
    memcpy((char *)run->peer + off, &data, len);
    /* seq, waiters and the cause are the peer's to change. */
    size_t seq = offsetof(struct devq_timeline, seq);
    size_t cause = offsetof(struct devq_timeline, cause);
    if (!((off >= seq && off + len <= seq + 8) || off >= cause))
        run->honest = 0;
}

static void call(struct run *run, uint8_t op, uint64_t arg)
{
    devq_signal *s = run->s;
    switch (op % 14) {
    case 0:
        check(run, devq_signal_status(s), "status");
        break;
    case 1:
        check_value(run);
        break;
    case 2:
        check(run, devq_signal_set(s, arg), "set");
        break;
    case 3:
        check(run, devq_signal_set(s, devq_signal_value(s) + 1 + arg % 4), "set above");
        break;
    case 4:
        check(run, devq_signal_wait(s, arg, 0), "wait(0)");
        break;
    case 5:
        check(run, devq_signal_wait(s, devq_signal_value(s) + arg % 2, 1000), "wait(1us)");
        break;
    case 6: {
        devq_signal *other;
        if (devq_signal_create(arg >> 32, &other))
            abort();
        devq_signal *v[2] = { s, other };
        uint64_t want[2] = { arg & 0xffff, arg >> 48 };
        size_t first = 7;
        check(run, devq_signal_wait_many(v, want, 2, arg & 1 ? DEVQ_WAIT_ANY : DEVQ_WAIT_ALL, 0, &first),
              "wait_many");
        devq_signal_destroy(other);
        break;
    }
    case 7:
        check(run, devq_signal_fail(s, arg & 1 ? (int)(arg >> 1) : -(int)(arg % 4095) - 1), "fail");
        break;
    case 8: {
        devq_notify *h = NULL;
        int r = devq_signal_notify(s, arg >> 1, on_notify, NULL, &h);
        check(run, r, "notify");
        if (!r) {
            /* Handle calls, not signal calls: 0 even when it is corrupted. */
            r = arg & 1 ? devq_notify_release(h) : devq_notify_cancel(h);
            FUZZ_CHECK(r == 0 || r == -EALREADY, "notify cancel/release returned %d", r);
        }
        break;
    }
    case 9: {
        int fd = -1;
        int r = devq_signal_wait_fd(s, arg, &fd);
        check(run, r, "wait_fd");
        if (!r) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            poll(&p, 1, 0);
            close(fd);
        }
        break;
    }
    case 10: {
        int fd = -1;
        int r = devq_signal_export_fd(s, &fd);
        check(run, r, "export_fd");
        if (!r) {
            devq_signal *t = NULL;
            r = devq_signal_import_fd(fd, &t);
            FUZZ_CHECK(is_errno(r), "import_fd returned %d", r);
            if (r)
                check_msg();
            FUZZ_CHECK(!r || run->corrupt || !run->honest || r != -EBADMSG,
                       "import of an honest page refused: %s", devq_errmsg());
            devq_signal_destroy(t);
            close(fd);
        }
        break;
    }
    case 11:
        scribble(run, arg);
        break;
    case 12:
        peer_raise(run, arg);
        break;
    case 13:
        peer_fail(run, arg);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run run = { 0 };
    if (devq_signal_create_shared(0, &run.s))
        abort();
    int fd;
    if (devq_signal_export_fd(run.s, &fd))
        abort();
    run.peer = mmap(NULL, DEVQ_SHARED_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (run.peer == MAP_FAILED)
        abort();
    uint8_t img[PAGE_BYTES] = { 0 };
    uint8_t mask = size ? data[0] : 0;
    size_t n = size > 1 ? size - 1 : 0;
    memcpy(img, data + 1, n < PAGE_BYTES ? n : PAGE_BYTES);
    load_page(&run, mask, img);
    size_t at = 1 + PAGE_BYTES;
    for (int i = 0; i < MAX_CALLS && at < size; i++, at += CALL_BYTES) {
        uint8_t c[CALL_BYTES] = { 0 };
        memcpy(c, data + at, size - at < CALL_BYTES ? size - at : CALL_BYTES);
        call(&run, c[0], le64(c + 1));
    }
    check(&run, devq_signal_status(run.s), "final status");
    check_value(&run);
    devq_signal_destroy(run.s);
    munmap(run.peer, DEVQ_SHARED_MAP_SIZE);
    return 0;
}
