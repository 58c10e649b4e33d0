/* SPDX-License-Identifier: MIT */
/* devq__plugin_validate (lib/plugin_validate.c): the ops table a plugin
 * hands back, built here from fuzzer bytes:
 *   bytes 0-3  abi_version (small values folded onto 0..2 half the time,
 *              so the version check does not stop every input)
 *   bytes 4-7  size (likewise folded onto the interesting range)
 *   bytes 8-15 bitmask: bit i set = op pointer i is a dummy function,
 *              clear = NULL (ops in table order after `name`)
 *   byte  16   name mode: 0 NULL, else a string of the remaining bytes
 * The table lives in a heap block exactly as long as `size` says (never
 * shorter than the header), so reading past the declared size trips
 * ASan.  The ops are never called.  Properties: the verdict equals an
 * independent reading of the rules; a refusal zeroes *out and explains;
 * success copies exactly the declared bytes. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include "plugin_validate.h"
#include "fuzz.h"

static void dummy_op(void)
{
}

#define HEADER_END offsetof(struct devq_backend_ops, fini)
#define NOPS ((sizeof(struct devq_backend_ops) - HEADER_END) / sizeof(void (*)(void)))

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int op_at(const struct devq_backend_ops *t, size_t i)
{
    void (*fn)(void);
    memcpy(&fn, (const char *)t + HEADER_END + i * sizeof fn, sizeof fn);
    return fn != NULL;
}

#define SET(t, f) ((t)->f != NULL)

/* The rules of plugin_validate.h, restated. */
static int expected(const struct devq_backend_ops *full, uint32_t abi, uint32_t size, int name_ok)
{
    if (abi != DEVQ_PLUGIN_ABI_VERSION)
        return -ENOTSUP;
    if (size < DEVQ_PLUGIN_MIN_TABLE_SIZE)
        return -EINVAL;
    if (!name_ok)
        return -EINVAL;
    const struct devq_backend_ops *t = full;
    if (!(SET(t, device_count) && SET(t, device_open) && SET(t, device_close) && SET(t, device_info) &&
          SET(t, stream_create) && SET(t, stream_destroy) && SET(t, event_create) && SET(t, event_destroy) &&
          SET(t, event_record) && SET(t, event_query) && SET(t, event_wait) && SET(t, stream_wait_event) &&
          SET(t, host_fn) && SET(t, mem_alloc) && SET(t, mem_free) && SET(t, copy) && SET(t, fill)))
        return -EINVAL;
    int k = SET(t, kernel_load) + SET(t, kernel_destroy) + SET(t, launch);
    if (k != 0 && k != 3)
        return -EINVAL;
    if (SET(t, value_attach) != SET(t, value_detach))
        return -EINVAL;
    if ((SET(t, stream_wait_value) || SET(t, stream_write_value)) && !SET(t, value_attach))
        return -EINVAL;
    if (SET(t, kernel_iface) && !SET(t, kernel_load))
        return -EINVAL;
    if (SET(t, kernel_load_fn) && !SET(t, kernel_load))
        return -EINVAL;
    if (SET(t, launch_list) && !SET(t, launch))
        return -EINVAL;
    if (SET(t, signal_tail) && !SET(t, stream_idle))
        return -EINVAL;
    int g = SET(t, graph_create) + SET(t, graph_update) + SET(t, graph_launch) + SET(t, graph_destroy);
    if (g != 0 && g != 4)
        return -EINVAL;
    if (g && !SET(t, launch))
        return -EINVAL;
    if (SET(t, mem_alloc_async) != SET(t, mem_free_async))
        return -EINVAL;
    int c = SET(t, chan_id) + SET(t, chan_create) + SET(t, chan_split) + SET(t, chan_rank) +
            SET(t, chan_size) + SET(t, chan_destroy) + SET(t, chan_enqueue) + SET(t, chan_error) +
            SET(t, chan_abort);
    if (c != 0 && c != 9)
        return -EINVAL;
    return 0;
}

static int valid_name(const char *n)
{
    size_t len = strnlen(n, 16);
    if (len == 0 || len > 15)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_'))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 17)
        return 0;
    uint32_t abi = le32(data), tsize = le32(data + 4);
    if (!(abi & 0x80000000u))
        abi %= 3;
    if (!(tsize & 0x80000000u))
        tsize %= (uint32_t)sizeof(struct devq_backend_ops) + 64;
    uint64_t mask = 0;
    for (int i = 0; i < 8; i++)
        mask |= (uint64_t)data[8 + i] << (8 * i);
    char *name = data[16] ? fuzz_cstring(data + 17, size - 17) : NULL;

    /* The whole table as the plugin means it, then the prefix it declares. */
    struct devq_backend_ops full;
    memset(&full, 0, sizeof full);
    full.abi_version = abi;
    full.size = tsize;
    full.name = name;
    void (*dummy)(void) = dummy_op;
    for (size_t i = 0; i < NOPS && i < 64; i++)
        if (mask >> i & 1)
            memcpy((char *)&full + HEADER_END + i * sizeof dummy, &dummy, sizeof dummy);
    size_t declared = tsize < sizeof full ? tsize : sizeof full;
    size_t alloc = declared < HEADER_END ? HEADER_END : declared;
    struct devq_backend_ops *table = malloc(alloc);
    if (!table)
        abort();
    memcpy(table, &full, alloc);
    /* What lib should see: ops past the declared size read as NULL. */
    struct devq_backend_ops seen;
    memset(&seen, 0, sizeof seen);
    memcpy(&seen, &full, declared < HEADER_END ? HEADER_END : declared);

    struct devq_backend_ops out;
    memset(&out, 0xa5, sizeof out);
    char why[256];
    int r = devq__plugin_validate(table, &out, why, sizeof why);
    int want = expected(&seen, abi, tsize, name && valid_name(name));
    FUZZ_CHECK(r == want, "validate=%d, rules say %d (abi %u size %u mask %llx name %s): %s", r, want, abi,
               tsize, (unsigned long long)mask, name ? name : "(null)", why);
    struct devq_backend_ops zero;
    memset(&zero, 0, sizeof zero);
    if (r < 0) {
        FUZZ_CHECK(why[0] != '\0', "refused without a reason");
        FUZZ_CHECK(!memcmp(&out, &zero, sizeof out), "refusal left *out filled");
    } else {
        FUZZ_CHECK(why[0] == '\0', "success with reason '%s'", why);
        FUZZ_CHECK(!memcmp(&out, &seen, sizeof out), "copy differs from the declared prefix");
        for (size_t i = 0; i < NOPS; i++)
            FUZZ_CHECK(op_at(&out, i) == op_at(&seen, i), "op %zu", i);
        FUZZ_CHECK(devq__backend_name_valid(out.name), "accepted name");
    }
    /* A zero-length reason buffer is never written. */
    char untouched = 'x';
    devq__plugin_validate(table, &out, &untouched, 0);
    FUZZ_CHECK(untouched == 'x', "wrote into a zero-length reason");
    FUZZ_CHECK(devq__plugin_validate(NULL, &out, why, sizeof why) == -EINVAL, "NULL table");
    free(table);
    free(name);
    return 0;
}
