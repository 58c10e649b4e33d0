/* SPDX-License-Identifier: MIT */
/* Loader internals: the ops-table validator, the spec and DEVQ_BACKEND
 * parsers, and loading folders of purpose-built broken plugins (each must
 * be skipped with its reason while the others load). */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <devq/devq.h>
#include <devq/devq_plugin.h>
#include "device.h"
#include "device_spec.h"
#include "plugin.h"
#include "manifest.h"
#include "plugin_validate.h"
#include "../plugins/stub_ops.h"
#include "../plugins/testdir.h"
#include "../helpers/check_main.h"

static const struct devq_backend_ops good = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "good",
    STUB_REQUIRED_OPS,
};

/* ---- validator ---- */

START_TEST(validate_accepts_complete_table)
{
    struct devq_backend_ops out;
    char why[256];
    ck_assert_int_eq(devq__plugin_validate(&good, &out, why, sizeof why), 0);
    ck_assert_str_eq(why, "");
    ck_assert_str_eq(out.name, "good");
    ck_assert_ptr_eq(out.fill, good.fill);
    ck_assert_ptr_null(out.kernel_load);
}
END_TEST

START_TEST(validate_refuses_null_table)
{
    struct devq_backend_ops out;
    char why[256];
    ck_assert_int_eq(devq__plugin_validate(NULL, &out, why, sizeof why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "no ops table"));
}
END_TEST

START_TEST(validate_refuses_other_abi_versions_naming_both)
{
    struct devq_backend_ops t = good, out;
    char why[256], want[32];
    t.abi_version = DEVQ_PLUGIN_ABI_VERSION + 1;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -ENOTSUP);
    snprintf(want, sizeof want, "version %u is newer", DEVQ_PLUGIN_ABI_VERSION + 1);
    ck_assert_msg(strstr(why, want), "reason: %s", why);
    snprintf(want, sizeof want, "libdevq's %u", DEVQ_PLUGIN_ABI_VERSION);
    ck_assert_msg(strstr(why, want), "reason: %s", why);
    ck_assert_ptr_null(out.name); /* nothing copied */

    t.abi_version = 0;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -ENOTSUP);
    ck_assert_msg(strstr(why, "version 0"), "reason: %s", why);
}
END_TEST

START_TEST(validate_refuses_table_smaller_than_required_ops)
{
    struct devq_backend_ops t = good, out;
    char why[256];
    t.size = DEVQ_PLUGIN_MIN_TABLE_SIZE - 1;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "size"), "reason: %s", why);
    t.size = 0;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
}
END_TEST

START_TEST(validate_older_table_reads_no_op_past_size)
{
    struct devq_backend_ops t = good, out;
    char why[256];
    t.kernel_load = stub_kernel_load;
    t.kernel_destroy = stub_kernel_destroy;
    t.launch = stub_launch;
    t.size = (uint32_t)offsetof(struct devq_backend_ops, kernel_load);
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
    ck_assert_ptr_null(out.kernel_load);
    ck_assert_ptr_null(out.launch);
    ck_assert_ptr_eq(out.fill, good.fill);
    t.size = (uint32_t)DEVQ_PLUGIN_MIN_TABLE_SIZE; /* exactly the minimum */
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
}
END_TEST

START_TEST(validate_newer_longer_table_is_accepted)
{
    /* Same ABI version, ops appended after ours: copy what we know. */
    size_t big = sizeof(struct devq_backend_ops) + 64;
    struct devq_backend_ops *t = calloc(1, big), out;
    char why[256];
    *t = good;
    t->size = (uint32_t)big;
    memset((char *)t + sizeof *t, 0xAB, 64);
    ck_assert_int_eq(devq__plugin_validate(t, &out, why, sizeof why), 0);
    ck_assert_str_eq(out.name, "good");
    free(t);
}
END_TEST

START_TEST(validate_checks_backend_name)
{
    static const char *const bad[] = { "", "Cpu", "a-b", "cuda 0", "abcdefghijklmnop", "é" };
    struct devq_backend_ops t = good, out;
    char why[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t.name = bad[i];
        ck_assert_msg(devq__plugin_validate(&t, &out, why, sizeof why) == -EINVAL, "'%s'", bad[i]);
        ck_assert_msg(strstr(why, "invalid backend name"), "reason: %s", why);
    }
    t.name = NULL;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    t.name = "abcdefghijklmno"; /* 15: the longest allowed */
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
    t.name = "x_9";
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
}
END_TEST

static const struct {
    size_t off;
    const char *name;
} required[] = {
#define R(f)                                     \
    {                                            \
        offsetof(struct devq_backend_ops, f), #f \
    }
    R(device_count),  R(device_open),    R(device_close), R(device_info),
    R(stream_create), R(stream_destroy), R(event_create), R(event_destroy),
    R(event_record),  R(event_query),    R(event_wait),   R(stream_wait_event),
    R(host_fn),       R(mem_alloc),      R(mem_free),     R(copy),
    R(fill),
#undef R
};

START_TEST(validate_names_each_missing_required_op)
{
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        struct devq_backend_ops t = good, out;
        char why[256], want[64];
        memset((char *)&t + required[i].off, 0, sizeof(void (*)(void)));
        ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
        snprintf(want, sizeof want, "required op '%s' is NULL", required[i].name);
        ck_assert_msg(strstr(why, want), "want '%s', got '%s'", want, why);
        ck_assert_ptr_null(out.device_count); /* refused tables are not handed back */
    }
}
END_TEST

static int fake_value_attach(devq_pl_device *d, uint64_t *w, devq_pl_value **o)
{
    (void)d;
    (void)w;
    (void)o;
    return -ENOTSUP;
}
static void fake_value_detach(devq_pl_value *v)
{
    (void)v;
}
static int fake_wait_value(devq_pl_stream *s, devq_pl_value *v, uint64_t x)
{
    (void)s;
    (void)v;
    (void)x;
    return -ENOTSUP;
}
static int fake_alloc_async(devq_pl_stream *s, size_t n, void **p)
{
    (void)s;
    (void)n;
    (void)p;
    return -ENOTSUP;
}
static int fake_kernel_iface(devq_pl_kernel *k, struct devq_pl_kernel_iface *o)
{
    (void)k;
    (void)o;
    return -ENOTSUP;
}
static int fake_graph_create(devq_pl_device *d, const struct devq_pl_launch_entry *e, size_t n,
                             devq_pl_graph **out)
{
    (void)d, (void)e, (void)n, (void)out;
    return -ENOTSUP;
}

static int fake_graph_update(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e)
{
    (void)g, (void)i, (void)e;
    return -ENOTSUP;
}

static int fake_graph_launch(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed)
{
    (void)s, (void)g, (void)failed;
    return -ENOTSUP;
}

static void fake_graph_destroy(devq_pl_graph *g)
{
    (void)g;
}

static int fake_launch_list(devq_pl_stream *s, const struct devq_pl_launch_entry *e, size_t n,
                            const struct devq_pl_launch_entry **failed)
{
    (void)s;
    (void)e;
    (void)n;
    (void)failed;
    return -ENOSYS;
}

static int fake_kernel_load_fn(devq_pl_device *d, devq_cpu_kernel_fn fn, const struct devq_cpu_signature *sig,
                               const char *name, devq_pl_kernel **o)
{
    (void)d;
    (void)fn;
    (void)sig;
    (void)name;
    (void)o;
    return -ENOTSUP;
}

static int fake_signal_tail(devq_pl_stream *s, devq_pl_tail_fn fn, void *arg, uint64_t value)
{
    (void)s, (void)fn, (void)arg, (void)value;
    return -ENOTSUP;
}

static int fake_stream_idle(devq_pl_stream *s)
{
    (void)s;
    return 0;
}

static int fake_chan_create(devq_pl_device *d, int rank, int size, const void *id, size_t id_size,
                            devq_pl_chan **out)
{
    (void)d, (void)rank, (void)size, (void)id, (void)id_size, (void)out;
    return -ENOTSUP;
}

static int fake_chan_enqueue(devq_pl_chan *c, devq_pl_stream *s, const struct devq_eng_op *ops, size_t n)
{
    (void)c, (void)s, (void)ops, (void)n;
    return -ENOTSUP;
}

static void with_kernel_ops(struct devq_backend_ops *t)
{
    t->kernel_load = stub_kernel_load;
    t->kernel_destroy = stub_kernel_destroy;
    t->launch = stub_launch;
}

/* The optional op `field` (set to fake) is refused without the kernel
 * ops, naming itself; taken with them; and absent from a table whose
 * size ends before it (an older plugin). */
#define NEEDS_KERNEL_OPS(field, fake)                                                           \
    do {                                                                                        \
        t = good;                                                                               \
        t.field = fake;                                                                         \
        ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);            \
        ck_assert_msg(strstr(why, #field " is set without the kernel ops"), "reason: %s", why); \
        with_kernel_ops(&t);                                                                    \
        ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);                  \
        ck_assert(out.field == fake);                                                           \
        t.size = (uint32_t)offsetof(struct devq_backend_ops, field);                            \
        ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);                  \
        ck_assert(out.field == NULL);                                                           \
    } while (0)

START_TEST(validate_optional_groups_are_whole)
{
    struct devq_backend_ops t, out;
    char why[256];

    t = good;
    t.kernel_load = stub_kernel_load;
    t.kernel_destroy = stub_kernel_destroy;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "launch NULL"), "reason: %s", why);
    t.launch = stub_launch;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);

    t = good;
    t.value_attach = fake_value_attach;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    t.value_detach = fake_value_detach;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);

    t = good;
    t.stream_wait_value = fake_wait_value;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "value_attach"), "reason: %s", why);

    t = good;
    t.mem_alloc_async = fake_alloc_async;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "mem_free_async"), "reason: %s", why);

    /* Ops that describe, make or run loaded kernels: each only with the
     * kernel ops, and none when the table ends before it. */
    NEEDS_KERNEL_OPS(kernel_iface, fake_kernel_iface);
    NEEDS_KERNEL_OPS(kernel_load_fn, fake_kernel_load_fn);
    NEEDS_KERNEL_OPS(launch_list, fake_launch_list);

    /* signal_tail: only with stream_idle (both read the stream's error
     * latch between host callbacks), and none in an older table. */
    t = good;
    t.stream_idle = NULL;
    t.signal_tail = fake_signal_tail;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "signal_tail is set without stream_idle"), "reason: %s", why);
    t.stream_idle = fake_stream_idle;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
    ck_assert(out.signal_tail == fake_signal_tail && out.stream_idle == fake_stream_idle);
    t.size = (uint32_t)offsetof(struct devq_backend_ops, signal_tail);
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
    ck_assert(out.signal_tail == NULL && out.stream_idle == fake_stream_idle);

    /* Native graphs: all four graph_* entries or none, and only with
     * the kernel ops (they run loaded kernels). */
    t = good;
    with_kernel_ops(&t);
    t.graph_create = fake_graph_create;
    t.graph_launch = fake_graph_launch;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "graph ops incomplete (2 of the 4"), "reason: %s", why);
    t.graph_update = fake_graph_update;
    t.graph_destroy = fake_graph_destroy;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
    ck_assert(out.graph_launch == fake_graph_launch);
    t.kernel_load = NULL;
    t.kernel_destroy = NULL;
    t.launch = NULL;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "graph_* ops are set without the kernel ops"), "reason: %s", why);
    /* A table that ends before them (an older plugin) has none. */
    t.size = (uint32_t)offsetof(struct devq_backend_ops, graph_create);
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), 0);
    ck_assert(out.graph_create == NULL && out.graph_destroy == NULL);

    /* Channels: all nine chan_* entries or none. */
    t = good;
    t.chan_create = fake_chan_create;
    t.chan_enqueue = fake_chan_enqueue;
    ck_assert_int_eq(devq__plugin_validate(&t, &out, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "channel ops incomplete (2 of the 9"), "reason: %s", why);
}
END_TEST

/* ---- spec and DEVQ_BACKEND parsers ---- */

static int parse(const char *text, struct devq_spec *s)
{
    char why[256];
    return devq__spec_parse(text, strlen(text), s, why, sizeof why);
}

START_TEST(spec_parse_accepts_names_and_ordinals)
{
    struct devq_spec s;
    ck_assert_int_eq(parse("cpu", &s), 0);
    ck_assert_str_eq(s.name, "cpu");
    ck_assert_int_eq(s.has_ordinal, 0);
    ck_assert_int_eq(parse("cuda:12", &s), 0);
    ck_assert_str_eq(s.name, "cuda");
    ck_assert_int_eq(s.has_ordinal, 1);
    ck_assert_uint_eq(s.ordinal, 12);
    ck_assert_int_eq(parse("my_gpu2:4294967295", &s), 0);
    ck_assert_uint_eq(s.ordinal, 4294967295u);
}
END_TEST

START_TEST(spec_parse_refuses_malformed)
{
    static const char *const bad[] = { "",       ":0",      "cpu:",           "cpu:x",
                                       "cpu:-1", "cpu:+1",  "cpu:1x",         "CPU",
                                       "cpu 0",  "cpu:0:1", "cpu:4294967296", "abcdefghijklmnop" };
    struct devq_spec s;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(parse(bad[i], &s) == -EINVAL, "'%s' accepted", bad[i]);
    char why[256];
    ck_assert_int_eq(devq__spec_parse("cpu:x", 5, &s, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "'x' is not a non-negative integer"), "reason: %s", why);
}
END_TEST

START_TEST(pref_parse_lists_and_exclusions)
{
    struct devq_backend_pref p;
    char why[256];
    ck_assert_int_eq(devq__backend_pref_parse(" cuda:1 , cpu,,^hip,", &p, why, sizeof why), 0);
    ck_assert_uint_eq(p.nwant, 2);
    ck_assert_str_eq(p.want[0].name, "cuda");
    ck_assert_uint_eq(p.want[0].ordinal, 1);
    ck_assert_str_eq(p.want[1].name, "cpu");
    ck_assert_uint_eq(p.nexclude, 1);
    ck_assert_str_eq(p.exclude[0], "hip");
    ck_assert(devq__backend_pref_excludes(&p, "hip"));
    ck_assert(!devq__backend_pref_excludes(&p, "cpu"));

    ck_assert_int_eq(devq__backend_pref_parse(",,", &p, why, sizeof why), 0);
    ck_assert_uint_eq(p.nwant + p.nexclude, 0);
    ck_assert_int_eq(devq__backend_pref_parse(NULL, &p, why, sizeof why), 0);

    ck_assert_int_eq(devq__backend_pref_parse("cpu,cu da", &p, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "'cu da'"), "reason: %s", why);
    ck_assert_int_eq(devq__backend_pref_parse("^cpu:0", &p, why, sizeof why), -EINVAL);
    ck_assert_int_eq(devq__backend_pref_parse("^", &p, why, sizeof why), -EINVAL);
}
END_TEST

START_TEST(edit_distance_counts_transpositions_once)
{
    ck_assert_uint_eq(devq__edit_distance("cdua", "cuda"), 1);
    ck_assert_uint_eq(devq__edit_distance("cuda", "cuda"), 0);
    ck_assert_uint_eq(devq__edit_distance("kitten", "sitting"), 3);
    ck_assert_uint_eq(devq__edit_distance("", "hip"), 3);
    ck_assert_uint_eq(devq__edit_distance("cpu", "cpus"), 1);
}
END_TEST

/* ---- loading folders ---- */

static const devq_backend_report *report_for(const char *file)
{
    for (size_t i = 0; i < devq__plugin_report_count(); i++) {
        const devq_backend_report *r = devq__plugin_report_at(i);
        const char *base = strrchr(r->path, '/');
        if (base && !strcmp(base + 1, file))
            return r;
    }
    return NULL;
}

/* Reports of files in dir (an installed $(libdir)/devq may add others). */
static size_t reports_under(const char *dir)
{
    size_t n = 0, len = strlen(dir);
    for (size_t i = 0; i < devq__plugin_report_count(); i++)
        n += !strncmp(devq__plugin_report_at(i)->path, dir, len);
    return n;
}

static void expect_skipped(const char *file, int status, const char *reason_part)
{
    const devq_backend_report *r = report_for(file);
    ck_assert_msg(r != NULL, "%s was not tried", file);
    ck_assert_msg(r->status == status, "%s: status %d, want %d (%s)", file, r->status, status, r->reason);
    ck_assert_msg(strstr(r->reason, reason_part), "%s: reason '%s' lacks '%s'", file, r->reason, reason_part);
    ck_assert_str_eq(r->name, "");
    ck_assert_uint_eq(r->devices, 0);
}

static const char *const broken_kinds[] = { "noentry", "initfail", "nulltable",  "future", "small",
                                            "nullop",  "badname",  "halfkernel", "old" };

static char *folder_with_everything(void)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    for (size_t i = 0; i < sizeof broken_kinds / sizeof broken_kinds[0]; i++)
        testdir_link(dir, broken_kinds[i]);
    testdir_write(dir, "devq-notelf.so", "this is not an ELF file\n");
    testdir_write(dir, "libdevq-ignored.so", "not a plugin name\n");
    testdir_write(dir, "devq-ignored.txt", "not a plugin name\n");
    return dir;
}

START_TEST(loader_skips_each_broken_plugin_with_its_reason)
{
    char *dir = folder_with_everything();
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    ck_assert_int_eq(devq__backends_load(), 0);

    const devq_backend_report *cpu = devq__plugin_report_at(0);
    ck_assert_str_eq(cpu->path, "(built in)");
    ck_assert_msg(cpu->status == 0, "built-in cpu refused: %s", cpu->reason);
    ck_assert_str_eq(cpu->name, "cpu");

    expect_skipped("devq-notelf.so", -ENOEXEC, "cannot load");
    expect_skipped("devq-noentry.so", -ENOEXEC, "no 'devq_plugin_init' symbol");
    expect_skipped("devq-initfail.so", -EIO, "initfail: refusing to start on purpose");
    expect_skipped("devq-nulltable.so", -EINVAL, "no ops table");
    expect_skipped("devq-future.so", -ENOTSUP, "version 99 is newer than this libdevq's 1");
    expect_skipped("devq-small.so", -EINVAL, "ops table size");
    expect_skipped("devq-nullop.so", -EINVAL, "required op 'event_wait' is NULL");
    expect_skipped("devq-badname.so", -EINVAL, "invalid backend name 'Bad-Name'");
    expect_skipped("devq-halfkernel.so", -EINVAL, "kernel ops incomplete");
    ck_assert_uint_eq(report_for("devq-future.so")->abi_version, 99);

    /* Files outside the devq-*.so pattern are not even tried. */
    ck_assert_ptr_null(report_for("libdevq-ignored.so"));
    ck_assert_ptr_null(report_for("devq-ignored.txt"));
    ck_assert_uint_eq(reports_under(dir), 1 + 9 + 1);

    /* ...and none of that stopped the good ones. */
    const devq_backend_report *fake = report_for("devq-fake.so");
    ck_assert_int_eq(fake->status, 0);
    ck_assert_str_eq(fake->name, "fake");
    ck_assert_uint_eq(fake->devices, 2);
    ck_assert_uint_eq(fake->abi_version, DEVQ_PLUGIN_ABI_VERSION);
    ck_assert_ptr_nonnull(devq__backend_find("fake"));
    ck_assert_ptr_nonnull(devq__backend_find("cpu"));
    ck_assert_ptr_null(devq__backend_find("future"));
    ck_assert_str_eq(devq__backend_at(0)->name, "cpu");

    /* Files load in name order within a folder. */
    size_t fake_at = 0, future_at = 0;
    for (size_t i = 0; i < devq__plugin_report_count(); i++) {
        if (devq__plugin_report_at(i) == report_for("devq-fake.so"))
            fake_at = i;
        if (devq__plugin_report_at(i) == report_for("devq-future.so"))
            future_at = i;
    }
    ck_assert_uint_lt(fake_at, future_at);
}
END_TEST

START_TEST(loader_accepts_older_table_without_its_tail)
{
    char *dir = testdir_new();
    testdir_link(dir, "old");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    struct devq_backend *b = devq__backend_find("old");
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(b->ops->kernel_load); /* set in the plugin, but past its size */
    ck_assert_ptr_null(b->ops->launch);
    ck_assert_ptr_nonnull(b->ops->fill);
    ck_assert_int_eq(report_for("devq-old.so")->status, 0);
    ck_assert_uint_eq(b->ndevices, 1);
}
END_TEST

START_TEST(loader_first_backend_of_a_name_wins)
{
    char *a = testdir_new(), *b = testdir_new();
    testdir_link(a, "fake");
    testdir_copy(b, "fake");
    char path[1200];
    snprintf(path, sizeof path, ":%s::%s:", a, b); /* empty entries are ignored */
    setenv("DEVQ_PLUGIN_PATH", path, 1);
    ck_assert_int_eq(devq__backends_load(), 0);
    ck_assert_uint_eq(reports_under(a), 1);
    ck_assert_uint_eq(reports_under(b), 1);
    const devq_backend_report *first = devq__plugin_report_at(1), *second = devq__plugin_report_at(2);
    ck_assert_ptr_nonnull(strstr(first->path, a));
    ck_assert_int_eq(first->status, 0);
    ck_assert_int_eq(second->status, -EEXIST);
    char want[1200];
    snprintf(want, sizeof want, "duplicate backend 'fake' (already loaded from %s/devq-fake.so)", a);
    ck_assert_str_eq(second->reason, want);
    ck_assert_ptr_nonnull(strstr(devq__backend_find("fake")->path, a));
}
END_TEST

START_TEST(loader_searches_a_folder_once)
{
    char *a = testdir_new();
    testdir_link(a, "fake");
    char path[1200];
    snprintf(path, sizeof path, "%s:%s/.:/nonexistent-devq-dir", a, a);
    setenv("DEVQ_PLUGIN_PATH", path, 1);
    ck_assert_int_eq(devq__backends_load(), 0);
    ck_assert_uint_eq(reports_under(a), 1); /* fake once: no self-duplicate */
}
END_TEST

START_TEST(loader_reports_missing_driver_as_loaded_without_devices)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    setenv("DEVQ_FAKE_DRIVER_MISSING", "1", 1);
    const devq_backend_report *r = report_for("devq-fake.so");
    ck_assert_int_eq(r->status, 0);
    ck_assert_uint_eq(r->devices, 0);
    ck_assert_str_eq(r->reason, "fake: libfake.so.1 not found (DEVQ_FAKE_DRIVER_MISSING=1)");
    struct devq_backend *b = devq__backend_find("fake");
    ck_assert_int_eq(b->count_status, -ENODEV);
}
END_TEST

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no log file %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int count_lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char tmp[2048];
        snprintf(tmp, sizeof tmp, "%.*s", (int)len, line);
        if (strstr(tmp, a) && (!b || strstr(tmp, b)))
            n++;
        line = end ? end + 1 : NULL;
    }
    return n;
}

START_TEST(loader_full_log_names_every_file_tried)
{
    char *dir = folder_with_everything();
    char log[1100];
    snprintf(log, sizeof log, "%s/loader.log", dir);
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    setenv("DEVQ_LOG", "full", 1);
    setenv("DEVQ_LOG_FILE", log, 1);
    ck_assert_int_eq(devq__backends_load(), 0);
    const char *text = slurp(log);
    ck_assert_int_eq(count_lines_with(text, "devq-fake.so: loaded backend 'fake'", NULL), 1);
    ck_assert_int_eq(count_lines_with(text, "devq-future.so: skipped:", "version 99"), 1);
    ck_assert_int_eq(count_lines_with(text, "devq-notelf.so: skipped:", NULL), 1);
    ck_assert_int_eq(count_lines_with(text, "loader: ", ": skipped: "), 9);
    ck_assert_int_eq(count_lines_with(text, "(built in): loaded backend 'cpu'", NULL), 1);
}
END_TEST

START_TEST(loader_basic_log_names_only_skips)
{
    char *dir = folder_with_everything();
    char log[1100];
    snprintf(log, sizeof log, "%s/loader.log", dir);
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    setenv("DEVQ_LOG", "basic", 1);
    setenv("DEVQ_LOG_FILE", log, 1);
    ck_assert_int_eq(devq__backends_load(), 0);
    const char *text = slurp(log);
    ck_assert_int_eq(count_lines_with(text, "loaded backend", NULL), 0);
    ck_assert_int_eq(count_lines_with(text, "loader: ", ": skipped: "), 9);
}
END_TEST

/* Opening the cpu by name loads no plugin file (a GPU plugin's init loads
 * its driver); anything that needs the list (enumeration, reports, other
 * names) loads them all, once, and the cpu backend is the same one. */
START_TEST(opening_cpu_loads_no_plugin_file)
{
    char *dir = folder_with_everything();
    char log[1100];
    snprintf(log, sizeof log, "%s/loader.log", dir);
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    setenv("DEVQ_LOG", "full", 1);
    setenv("DEVQ_LOG_FILE", log, 1);
    devq_device *cpu, *cpu0;
    ck_assert_int_eq(devq_device_open("cpu", &cpu), 0);
    ck_assert_int_eq(devq_device_open("cpu:0", &cpu0), 0);
    ck_assert_ptr_eq(cpu, cpu0);
    const char *text = slurp(log);
    ck_assert_int_eq(count_lines_with(text, "(built in): loaded backend 'cpu'", NULL), 1);
    ck_assert_int_eq(count_lines_with(text, "devq-fake.so", NULL), 0);
    ck_assert_int_eq(count_lines_with(text, "skipped", NULL), 0);
    /* Now something needs every backend. */
    devq_device *fake;
    ck_assert_int_eq(devq_device_open("fake", &fake), 0);
    text = slurp(log);
    ck_assert_int_eq(count_lines_with(text, "devq-fake.so: loaded backend 'fake'", NULL), 1);
    ck_assert_int_eq(count_lines_with(text, "loader: ", ": skipped: "), 9);
    ck_assert_int_eq(count_lines_with(text, "(built in): loaded backend 'cpu'", NULL), 1);
    ck_assert_str_eq(devq__backend_at(0)->name, "cpu");
    ck_assert_ptr_eq(devq__backend_find("cpu"), devq__backend_at(0));
    devq_device_close(fake);
    devq_device_close(cpu0);
    devq_device_close(cpu);
}
END_TEST

START_TEST(loader_without_plugin_path_has_cpu)
{
    unsetenv("DEVQ_PLUGIN_PATH");
    ck_assert_int_eq(devq__backends_load(), 0);
    ck_assert_uint_ge(devq__backend_count(), 1);
    ck_assert_str_eq(devq__backend_at(0)->name, "cpu");
    ck_assert_ptr_null(devq__backend_at(devq__backend_count()));
    ck_assert_ptr_null(devq__backend_find(NULL));
}
END_TEST


/* Out of descriptors during the first scan (issue 27): the open says so,
 * names the folder and is not a verdict: once descriptors come back the
 * next open searches again and finds the plugin. */
START_TEST(scan_out_of_descriptors_is_retried)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    struct rlimit old, low;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 32;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64], nfds = 0;
    for (int fd; nfds < 64 && (fd = dup(0)) >= 0;)
        fds[nfds++] = fd;
    ck_assert_int_eq(errno, EMFILE);

    devq_device *d = NULL;
    ck_assert_int_eq(devq_device_open("fake", &d), -EMFILE);
    ck_assert_ptr_null(d);
    char want[1200];
    snprintf(want, sizeof want, "could not open the plugin folder %s: too many open files", dir);
    ck_assert_msg(strstr(devq_errmsg(), want), "message: %s", devq_errmsg());
    ck_assert_ptr_null(strstr(devq_errmsg(), "not installed"));
    ck_assert_int_eq(devq_device_open("fake", &d), -EMFILE); /* still short: still said */

    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    ck_assert_int_eq(devq_device_open("fake", &d), 0);
    ck_assert_str_eq(devq__backend_find("fake")->name, "fake");
    ck_assert_uint_eq(reports_under(dir), 1);
    ck_assert_str_eq(devq__plugin_report_at(0)->path, "(built in)");
    devq_device_close(d);
}
END_TEST


/* The first scan raced by many threads: one scan, every thread sees the
 * finished list (each file reported once), every open works. */
static void *open_fake_thread(void *arg)
{
    devq_device *d = NULL;
    int r = devq_device_open("fake:1", &d);
    *(int *)arg = r;
    if (r == 0)
        devq_device_close(d);
    return NULL;
}

START_TEST(first_scan_raced_by_threads_runs_once)
{
    char *dir = folder_with_everything();
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    pthread_t th[8];
    int rc[8];
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, open_fake_thread, &rc[i]), 0);
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(rc[i], 0);
    }
    ck_assert_uint_eq(reports_under(dir), 11); /* fake, 9 broken, notelf: once each */
    ck_assert_ptr_nonnull(report_for("devq-notelf.so"));
}
END_TEST

/* ---- plugin manifests (manifest.c) ---- */

#define GOOD_PLUGIN "\"plugin\": {\"library_path\": \"devq-x.so\", \"abi_version\": 1}"

static int manifest_parse_str(const char *text, struct devq_manifest *m, char *why, size_t len)
{
    return devq__manifest_parse(text, strlen(text), m, why, len);
}

START_TEST(manifest_reads_the_format)
{
    struct devq_manifest m;
    char why[300];
    ck_assert_int_eq(manifest_parse_str("{\"file_format_version\": 1, " GOOD_PLUGIN "}", &m, why, sizeof why),
                     0);
    ck_assert_str_eq(m.library_path, "devq-x.so");
    ck_assert_uint_eq(m.abi_version, 1);
    ck_assert_str_eq(why, "");
    /* Unknown keys (any JSON value) are skipped; escapes are decoded. */
    const char *rich =
        "\n{ \"comment\": [1, -2.5e3, {\"x\": null}, true, false, \"\\\"\"],\r\n"
        "  \"file_format_version\": 1,\t\"plugin\": { \"vendor\": {},\n"
        "    \"library_path\": \"/opt/a\\/b\\u00e9\\ud83d\\ude00.so\", \"abi_version\": 7 } }\n";
    ck_assert_int_eq(manifest_parse_str(rich, &m, why, sizeof why), 0);
    ck_assert_str_eq(m.library_path, "/opt/a/b\xc3\xa9\xf0\x9f\x98\x80.so");
    ck_assert_uint_eq(m.abi_version, 7);
}
END_TEST

START_TEST(manifest_refuses_anything_else_with_line_and_column)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        { "", "empty file" },
        { "   \n", "empty file" },
        { "[]", "a manifest is a JSON object" },
        { "{\"file_format_version\": 2, " GOOD_PLUGIN "}", "file_format_version 2 is not 1" },
        { "{\"file_format_version\": 1}", "no \"plugin\" object" },
        { "{\"plugin\": {\"library_path\": \"a\", \"abi_version\": 1}}", "no \"file_format_version\"" },
        { "{\"file_format_version\": 1, \"plugin\": {\"abi_version\": 1}}", "no \"library_path\"" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\"}}", "no \"abi_version\"" },
        { "{\"file_format_version\": 1, \"plugin\": []}", "\"plugin\" must be an object" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": 3, \"abi_version\": 1}}",
          "\"library_path\" must be a string" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"\", \"abi_version\": 1}}",
          "\"library_path\" is empty" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\", \"abi_version\": 1.0}}",
          "\"abi_version\" must be a whole number" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\", \"abi_version\": -1}}",
          "\"abi_version\" must be a whole number" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\", \"abi_version\": 0}}",
          "\"abi_version\" must be a whole number" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\", \"abi_version\": \"1\"}}",
          "\"abi_version\" must be a whole number" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\", \"abi_version\": 4294967296}}",
          "\"abi_version\" must be a whole number" },
        { "{\"file_format_version\": 1, \"file_format_version\": 1, " GOOD_PLUGIN "}", "given twice" },
        { "{\"file_format_version\": 1, " GOOD_PLUGIN "} x", "text after the object" },
        { "{\"file_format_version\": 1, " GOOD_PLUGIN "}{}", "text after the object" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a",
          "unexpected end of file in a string" },
        { "{\"file_format_version\": 1, \"plugin\": {\"library_path\": \"a\",",
          "unexpected end of file: expected a key" },
        { "{\"file_format_version\": 1,\n \"plugin\" {}}", "line 2, column 11: expected ':' after a key" },
        { "{\"a\": 1,}", "expected a key in quotes" },
        { "{'a': 1}", "expected a key in quotes" },
        { "{\"a\": 01}", "may not start with 0" },
        { "{\"a\": 1.}", "expected a digit after '.'" },
        { "{\"a\": 1e}", "expected a digit in the exponent" },
        { "{\"a\": tru}", "expected a value" },
        { "{\"a\": [1 2]}", "expected ',' or ']'" },
        { "{\"a\": 1 \"b\": 2}", "expected ',' or '}'" },
        { "{\"a\": \"\\x\"}", "unknown escape \\x" },
        { "{\"a\": \"\\u12\"}", "four hex digits" },
        { "{\"a\": \"\\u0000\"}", "\\u0000 in a string" },
        { "{\"a\": \"\\udc00\"}", "a low surrogate without a high one" },
        { "{\"a\": \"\\ud800x\"}", "a high surrogate without a low one" },
        { "{\"a\": \"tab\there\"}", "control character 0x09" },
        { "{\"a\": \"line\nbreak\"}", "control character 0x0a" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct devq_manifest m;
        char why[300];
        ck_assert_msg(manifest_parse_str(bad[i].text, &m, why, sizeof why) == -EINVAL, "accepted: %s",
                      bad[i].text);
        ck_assert_msg(strstr(why, bad[i].why) && !strncmp(why, "line ", 5), "%s: reason '%s' lacks '%s'",
                      bad[i].text, why, bad[i].why);
    }
    /* Nesting is bounded (no deep recursion on hostile input). */
    char deep[400] = "{\"a\": ";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    struct devq_manifest m;
    char why[300];
    ck_assert_int_eq(manifest_parse_str(deep, &m, why, sizeof why), -EINVAL);
    ck_assert_msg(strstr(why, "nested more than"), "%s", why);
    /* A NUL byte inside the given length is a control character. */
    ck_assert_int_eq(devq__manifest_parse("{\"a\": \"x\0y\"}", 12, &m, why, sizeof why), -EINVAL);
    /* No terminator needed: the parser stops at len. */
    ck_assert_int_eq(devq__manifest_parse("{\"file_format_version\": 1, " GOOD_PLUGIN "}garbage",
                                          strlen("{\"file_format_version\": 1, " GOOD_PLUGIN "}"), &m, why,
                                          sizeof why),
                     0);
}
END_TEST

static void write_manifest(const char *dir, const char *name, const char *lib, unsigned abi)
{
    char text[4400];
    snprintf(
        text, sizeof text,
        "{\n  \"file_format_version\": 1,\n  \"plugin\": {\"library_path\": \"%s\", \"abi_version\": %u}\n}\n",
        lib, abi);
    testdir_write(dir, name, text);
}

static const devq_backend_report *report_with(const char *part)
{
    for (size_t i = 0; i < devq__plugin_report_count(); i++)
        if (strstr(devq__plugin_report_at(i)->path, part))
            return devq__plugin_report_at(i);
    return NULL;
}

/* Two manifest folders (the administrator's, then the packages'), a
 * plugin outside every plugin folder, bad manifests reported and skipped,
 * a file name in the first folder masking the second's. */
START_TEST(manifests_add_plugins_from_outside_the_plugin_folders)
{
    char *empty = testdir_new(), *admin = testdir_new(), *pkgs = testdir_new(), *lib = testdir_new();
    char fake[1024], future[1024], rel[2048], dirs[2100];
    testdir_built("fake", fake, sizeof fake);
    testdir_built("future", future, sizeof future);
    testdir_link(lib, "fake");
    /* Relative to the manifest's folder. */
    snprintf(rel, sizeof rel, "../%s/devq-fake.so", strrchr(lib, '/') + 1);
    write_manifest(pkgs, "acme-fake.json", rel, DEVQ_PLUGIN_ABI_VERSION);
    write_manifest(pkgs, "future.json", "/nowhere/devq-next.so", DEVQ_PLUGIN_ABI_VERSION + 1);
    write_manifest(pkgs, "gone.json", "/nowhere/devq-gone.so", DEVQ_PLUGIN_ABI_VERSION);
    write_manifest(pkgs, "mismatch.json", future, DEVQ_PLUGIN_ABI_VERSION);
    testdir_write(pkgs, "broken.json", "{ \"file_format_version\": 1,\n  \"plugin\": \n");
    testdir_write(pkgs, "README", "not a manifest: no .json\n");
    /* The administrator's "masked.json" hides the packages' one. */
    write_manifest(admin, "masked.json", "/nowhere/devq-admin.so", DEVQ_PLUGIN_ABI_VERSION);
    write_manifest(pkgs, "masked.json", "/nowhere/devq-package.so", DEVQ_PLUGIN_ABI_VERSION);
    snprintf(dirs, sizeof dirs, "%s:%s", admin, pkgs);
    setenv("DEVQ_PLUGIN_PATH", empty, 1);
    setenv("DEVQ_PLUGIN_MANIFEST_PATH", dirs, 1);

    devq_device *d;
    ck_assert_int_eq(devq_device_open("fake:1", &d), 0);
    const devq_backend_report *r = report_with("devq-fake.so");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, 0);
    ck_assert_str_eq(r->name, "fake");
    ck_assert_ptr_nonnull(strstr(r->path, pkgs)); /* the manifest's folder + the relative path */

    r = report_with("broken.json");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, -EINVAL);
    ck_assert_msg(strstr(r->reason, "bad manifest: line 3, column 1: unexpected end of file"), "%s",
                  r->reason);
    r = report_with("devq-next.so");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, -ENOTSUP);
    ck_assert_uint_eq(r->abi_version, DEVQ_PLUGIN_ABI_VERSION + 1);
    ck_assert_msg(strstr(r->reason, "declares plugin ABI 2, newer than this libdevq's 1: not loaded"), "%s",
                  r->reason);
    r = report_with("devq-gone.so");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, -ENOENT);
    ck_assert_msg(strstr(r->reason, "gone.json: No such file or directory"), "%s", r->reason);
    r = report_with("devq-future.so");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, -EINVAL);
    ck_assert_msg(strstr(r->reason, "ops table is ABI 99 but its manifest"), "%s", r->reason);
    ck_assert_ptr_null(devq__backend_find("future"));
    ck_assert_ptr_nonnull(report_with("devq-admin.so"));
    ck_assert_ptr_null(report_with("devq-package.so")); /* masked */
    ck_assert_ptr_null(report_with("README"));
    devq_device_close(d);
}
END_TEST

/* A backend found in a plugin folder wins its name over a manifest's. */
START_TEST(plugin_folders_come_before_manifests)
{
    char *dir = testdir_new(), *pkgs = testdir_new(), *lib = testdir_new(), path[1100];
    testdir_link(dir, "fake");
    testdir_copy(lib, "fake");
    snprintf(path, sizeof path, "%s/devq-fake.so", lib);
    write_manifest(pkgs, "fake.json", path, DEVQ_PLUGIN_ABI_VERSION);
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    setenv("DEVQ_PLUGIN_MANIFEST_PATH", pkgs, 1);
    ck_assert_int_eq(devq__backends_load(), 0);
    ck_assert_ptr_nonnull(strstr(devq__backend_find("fake")->path, dir));
    const devq_backend_report *r = report_with(lib);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, -EEXIST);
}
END_TEST

/* ---- registry internals ---- */

START_TEST(device_lost_keeps_first_cause)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    devq_device *d;
    ck_assert_int_eq(devq_device_open("fake:1", &d), 0);
    struct devq_device *dev = (struct devq_device *)d;
    ck_assert_int_eq(devq__device_lost_check(dev), 0);
    devq__device_set_lost(dev, "fell off the bus");
    devq__device_set_lost(dev, "second cause");
    ck_assert_int_eq(devq__device_lost_check(dev), -ENODEV);
    ck_assert_str_eq(devq_errmsg(), "fake:1: device lost: fell off the bus");
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(d, &info), -ENODEV);
    devq_device_close(d);
}
END_TEST

START_TEST(device_check_and_retain)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    ck_assert_int_eq(devq__device_check(NULL, "devq_thing"), -EINVAL);
    ck_assert_str_eq(devq_errmsg(), "devq_thing: device is NULL");
    struct devq_device bogus = { .obj.magic = 0x12345678 };
    ck_assert_int_eq(devq__device_check(&bogus, "devq_thing"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "is not an open device"));

    devq_device *d;
    ck_assert_int_eq(devq_device_open("fake:0", &d), 0);
    struct devq_device *dev = (struct devq_device *)d;
    ck_assert_int_eq(devq__device_check(dev, "x"), 0);
    ck_assert_int_eq(atomic_load(&dev->obj.refs), 1);
    devq__device_retain(dev);                          /* as a queue would */
    devq_device_close(d);                              /* the user's reference */
    ck_assert_int_eq(devq__device_check(dev, "x"), 0); /* still open */
    struct devq_backend *b = devq__backend_find("fake");
    ck_assert_ptr_eq(b->slots[0], dev);
    devq_device_close(d); /* the queue's */
    ck_assert_ptr_null(b->slots[0]);
}
END_TEST

static Suite *loader_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *t = tcase_create("validate");
    tcase_add_test(t, validate_accepts_complete_table);
    tcase_add_test(t, validate_refuses_null_table);
    tcase_add_test(t, validate_refuses_other_abi_versions_naming_both);
    tcase_add_test(t, validate_refuses_table_smaller_than_required_ops);
    tcase_add_test(t, validate_older_table_reads_no_op_past_size);
    tcase_add_test(t, validate_newer_longer_table_is_accepted);
    tcase_add_test(t, validate_checks_backend_name);
    tcase_add_test(t, validate_names_each_missing_required_op);
    tcase_add_test(t, validate_optional_groups_are_whole);
    suite_add_tcase(s, t);

    t = tcase_create("parse");
    tcase_add_test(t, manifest_reads_the_format);
    tcase_add_test(t, manifest_refuses_anything_else_with_line_and_column);
    tcase_add_test(t, spec_parse_accepts_names_and_ordinals);
    tcase_add_test(t, spec_parse_refuses_malformed);
    tcase_add_test(t, pref_parse_lists_and_exclusions);
    tcase_add_test(t, edit_distance_counts_transpositions_once);
    suite_add_tcase(s, t);

    /* Each test runs in its own forked process: loader state is per
     * process and loads once, so every test sets its environment first. */
    t = tcase_create("load");
    tcase_add_checked_fixture(t, NULL, testdir_cleanup);
    tcase_add_test(t, loader_skips_each_broken_plugin_with_its_reason);
    tcase_add_test(t, loader_accepts_older_table_without_its_tail);
    tcase_add_test(t, loader_first_backend_of_a_name_wins);
    tcase_add_test(t, loader_searches_a_folder_once);
    tcase_add_test(t, loader_reports_missing_driver_as_loaded_without_devices);
    tcase_add_test(t, loader_full_log_names_every_file_tried);
    tcase_add_test(t, loader_basic_log_names_only_skips);
    tcase_add_test(t, loader_without_plugin_path_has_cpu);
    tcase_add_test(t, opening_cpu_loads_no_plugin_file);
    tcase_add_test(t, scan_out_of_descriptors_is_retried);
    tcase_add_test(t, first_scan_raced_by_threads_runs_once);
    tcase_add_test(t, manifests_add_plugins_from_outside_the_plugin_folders);
    tcase_add_test(t, plugin_folders_come_before_manifests);
    suite_add_tcase(s, t);

    t = tcase_create("registry");
    tcase_add_checked_fixture(t, NULL, testdir_cleanup);
    tcase_add_test(t, device_lost_keeps_first_cause);
    tcase_add_test(t, device_check_and_retain);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return check_run_forked(loader_suite(), "test_loader");
}
