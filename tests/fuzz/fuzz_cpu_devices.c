/* SPDX-License-Identifier: MIT */
/* DEVQ_CPU_DEVICES, parsed by the cpu backend itself (plugins/cpu,
 * strtoul) when asked for its device count.  The backend is driven
 * through its ops table with the stand-alone test host table
 * (tests/helpers/cpu_test_host.c), as tests/unit/test_cpu_plugin.c does.
 * DEVQ_CPU_THREADS is parsed once per process (its pool is configured
 * once), so it is not reachable per input.
 *
 * Properties: unset or empty means one device; an accepted value is a
 * count in 0..64 equal to its decimal reading; a refused one is -EINVAL
 * with *count 0 and a message naming DEVQ_CPU_DEVICES. */
#include "config.h"
#include <errno.h>
#include "cpu_test_host.h"
#include "fuzz.h"

#define CPU_MAX_DEVICES 64 /* plugins/cpu/device.c; the message says it too */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct devq_backend_ops *ops;
    if (!ops && !(ops = cpu_test_ops()))
        abort();
    char *text = fuzz_cstring(data, size);
    if (fuzz_setenv("DEVQ_CPU_DEVICES", text) != 0) {
        free(text);
        return 0;
    }
    cpu_test_errmsg_clear();
    uint32_t n = 777;
    int r = ops->device_count(&n);
    if (!*text) {
        FUZZ_CHECK(r == 0 && n == 1, "empty value: r=%d n=%u", r, n);
    } else if (r == 0) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(text, &end, 10);
        FUZZ_CHECK(errno == 0 && *end == '\0' && end != text, "accepted '%s'", text);
        FUZZ_CHECK(n <= CPU_MAX_DEVICES && n == v, "'%s' -> %u devices", text, n);
    } else {
        FUZZ_CHECK(r == -EINVAL, "r=%d", r);
        FUZZ_CHECK(n == 0, "refusal left count %u", n);
        FUZZ_CHECK(strstr(cpu_test_errmsg(), "DEVQ_CPU_DEVICES") != NULL, "msg '%s'", cpu_test_errmsg());
    }
    free(text);
    return 0;
}
