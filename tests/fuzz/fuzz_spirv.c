/* SPDX-License-Identifier: MIT */
/* Fuzz target: the vulkan plugin's SPIR-V check (plugins/vulkan/spirv.c:
 * SPIRV-Tools' validator, then SPIRV-Cross reflection of a valid module,
 * then the feature check), on a device that needs no driver: limits and
 * features are set here.  Property: any bytes give 0 or a negative errno
 * with a message, and an accepted module's interface is within devq's
 * ABI (bindings, push-constant members inside the block, a local size
 * a launch can divide by).  Seeded with the conformance and test shaders
 * (tests/fuzz/corpus/spirv). */
#include "fuzz.h"
#include "vk_plugin.h"
#include "../helpers/host_fns.h"

static int host_log_level(void)
{
    return DEVQ_LOG_OFF;
}
static const struct devq_host fuzz_host = HOST_FNS_TABLE;
const struct devq_host *vk_host = &fuzz_host;
/* features.c's device-creation half needs it; never called here. */
PFN_vkGetPhysicalDeviceFeatures2 vk_vkGetPhysicalDeviceFeatures2;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct devq_pl_device d;
    static struct vk_iface f;
    d.props.limits.maxPushConstantsSize = 256;
    /* Every other entry point: features on (as lavapipe has them), so
     * the accepted modules get reflected, except Float64's feature. */
    d.features = ~1u;
    snprintf(d.props.deviceName, sizeof d.props.deviceName, "fuzz");
    /* A copy of exactly size bytes: a read past the end trips ASan. */
    void *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    host_errbuf[0] = 0;
    int r = vk_spirv_check(&d, copy, size, "main", &f);
    FUZZ_CHECK(r <= 0, "vk_spirv_check returned %d", r);
    if (r < 0)
        FUZZ_CHECK(host_errbuf[0], "error %d without a message", r);
    else {
        FUZZ_CHECK(f.nbuf <= VK_MAX_BUFFERS, "%u buffers", f.nbuf);
        FUZZ_CHECK(f.pc_size <= 256 && f.nvalues <= VK_MAX_VALUES, "block %u bytes, %u members", f.pc_size,
                   f.nvalues);
        for (uint32_t i = 0; i < f.nvalues; i++) {
            FUZZ_CHECK((uint64_t)f.values[i].offset + f.values[i].size <= f.pc_size,
                       "member %u at %u (%u bytes) outside the %u-byte block", i, f.values[i].offset,
                       f.values[i].size, f.pc_size);
            FUZZ_CHECK(i == 0 || f.values[i - 1].offset <= f.values[i].offset, "members out of offset order");
        }
        FUZZ_CHECK(f.ncaps <= VK_MAX_CAPS, "%u capabilities", f.ncaps);
        for (int k = 0; k < 3; k++)
            FUZZ_CHECK(f.local[k] || f.local_spec_id[k] != UINT32_MAX, "a fixed local size of 0");
    }
    free(copy);
    return 0;
}
