/* SPDX-License-Identifier: MIT */
/* Process-shared signals: the timeline lives in a sealed memfd mapped
 * MAP_SHARED in every process that holds it, and its futex operations
 * drop FUTEX_PRIVATE_FLAG so that a `set` in one process wakes waiters
 * in another.  The timeline holds no pointer and no lock, so a process
 * that dies leaves it usable (at worst its waiter count stays raised,
 * which only costs other processes a wake syscall per `set`). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.h"
#include "signal_impl.h"

_Static_assert(sizeof(struct devq_timeline) <= DEVQ_SHARED_MAP_SIZE, "timeline fits its page");

void devq__signal_shared_unmap(struct devq_signal *s)
{
    munmap(s->tl, DEVQ_SHARED_MAP_SIZE);
    close(s->memfd);
    s->tl = &s->local;
    s->memfd = -1;
}

/* The page of fd, or NULL with errno set (a NULL the caller tests, not
 * an error code taken from errno that might read as 0). */
static struct devq_timeline *map_timeline(int fd)
{
    void *p = mmap(NULL, DEVQ_SHARED_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

DEVQ_API int devq_signal_create_shared(uint64_t initial, devq_signal **out)
{
    if (!out)
        return devq__err(-EINVAL, "devq_signal_create_shared: out is NULL");
    *out = NULL;
    int fd = memfd_create("devq-signal", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return devq__err(-errno, "devq_signal_create_shared: memfd_create: %m");
    struct devq_timeline *tl = NULL;
    int r = ftruncate(fd, DEVQ_SHARED_MAP_SIZE) ? -errno : 0;
    if (r) {
        close(fd);
        return devq__err(r, "devq_signal_create_shared: ftruncate: %s", strerror(-r));
    }
    /* Seal the size: an importer can then never be handed a truncated
     * mapping (SIGBUS on access). */
    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    tl = map_timeline(fd);
    if (!tl) {
        r = -errno;
        close(fd);
        return devq__err(r, "devq_signal_create_shared: mmap: %s", strerror(-r));
    }
    struct devq_signal *s;
    r = devq__signal_alloc(&s);
    if (r) {
        munmap(tl, DEVQ_SHARED_MAP_SIZE);
        close(fd);
        return r;
    }
    tl->version = DEVQ_TIMELINE_VERSION;
    atomic_store(&tl->value, initial);
    tl->magic = DEVQ_TIMELINE_MAGIC;
    atomic_store(&s->seen_value, initial);
    s->tl = tl;
    s->shared = 1;
    s->memfd = fd;
    devq__signal_number_user(s);
    *out = s;
    return 0;
}

DEVQ_API int devq_signal_export_fd(devq_signal *s, int *fd)
{
    int r = devq__signal_check_user(s, "devq_signal_export_fd");
    if (r)
        return r;
    if (!fd)
        return devq__err(-EINVAL, "devq_signal_export_fd: fd is NULL (%s)", devq__signal_label(s).s);
    *fd = -1;
    if (!s->shared)
        return devq__err(-EINVAL,
                         "devq_signal_export_fd: %s is not shared; "
                         "create it with devq_signal_create_shared",
                         devq__signal_label(s).s);
    if ((r = devq__shared_check(s)))
        return r;
    int d = fcntl(s->memfd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return devq__err(-errno, "devq_signal_export_fd: %s: dup: %m", devq__signal_label(s).s);
    *fd = d;
    return 0;
}

DEVQ_API int devq_signal_import_fd(int fd, devq_signal **out)
{
    if (!out)
        return devq__err(-EINVAL, "devq_signal_import_fd: out is NULL");
    *out = NULL;
    struct stat st;
    if (fd < 0 || fstat(fd, &st))
        return devq__err(-EINVAL,
                         "devq_signal_import_fd: fd %d is not an open file "
                         "descriptor",
                         fd);
    if (!S_ISREG(st.st_mode) || st.st_size != DEVQ_SHARED_MAP_SIZE)
        return devq__err(-EINVAL,
                         "devq_signal_import_fd: fd %d is not a devq shared signal "
                         "(size %lld, expected %u; use an fd from devq_signal_export_fd)",
                         fd, (long long)st.st_size, DEVQ_SHARED_MAP_SIZE);
    struct devq_timeline *tl = map_timeline(fd);
    if (!tl)
        return devq__err(-EINVAL,
                         "devq_signal_import_fd: fd %d: mmap: %m (it must be "
                         "open read-write)",
                         fd);
    if (tl->magic != DEVQ_TIMELINE_MAGIC || tl->version != DEVQ_TIMELINE_VERSION) {
        uint32_t magic = tl->magic, version = tl->version;
        munmap(tl, DEVQ_SHARED_MAP_SIZE);
        return devq__err(-EINVAL,
                         "devq_signal_import_fd: fd %d is not a devq shared signal "
                         "(magic 0x%08x version %u, expected 0x%08x version %u)",
                         fd, magic, version, DEVQ_TIMELINE_MAGIC, DEVQ_TIMELINE_VERSION);
    }
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (mine < 0) {
        int r = devq__err(-errno, "devq_signal_import_fd: dup: %m");
        munmap(tl, DEVQ_SHARED_MAP_SIZE);
        return r;
    }
    struct devq_signal *s;
    int r = devq__signal_alloc(&s);
    if (r) {
        close(mine);
        munmap(tl, DEVQ_SHARED_MAP_SIZE);
        return r;
    }
    s->tl = tl;
    s->shared = 1;
    s->memfd = mine;
    /* From here on the page is judged by what this handle saw of it;
     * one already broken is refused like a foreign file. */
    atomic_store(&s->seen_value, atomic_load(&tl->value));
    if (devq__shared_status(s) == DEVQ_SHARED_CORRUPT && atomic_load(&s->corrupt)) {
        char what[sizeof s->corrupt_what];
        memcpy(what, s->corrupt_what, sizeof what);
        devq__signal_release(s);
        return devq__err(DEVQ_SHARED_CORRUPT,
                         "devq_signal_import_fd: fd %d: the shared "
                         "signal was corrupted by a process sharing it (%s)",
                         fd, what);
    }
    devq__signal_number_user(s); /* names and numbers are this process's own */
    *out = s;
    return 0;
}
