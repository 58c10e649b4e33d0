/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* libvulkan.so.1 loaded at run time, the instance, and the entry points.
 *
 * The library is loaded at the first device_count or device_open, so that
 * a machine without Vulkan still loads the plugin and devq-info can say
 * why it has no device.  DEVQ_VULKAN_VALIDATION=1 turns
 * on the Khronos validation layer and prints each message it gives to
 * stderr as "devq-vulkan: validation: ..." (the conformance-vulkan test
 * fails on any). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

#define VK_DEFINE(f) PFN_##f vk_##f;
VK_GLOBAL_FNS(VK_DEFINE)
VK_INSTANCE_FNS(VK_DEFINE)
VK_DEVICE_FNS(VK_DEFINE)
PFN_vkCmdPushDescriptorSetKHR vk_vkCmdPushDescriptorSetKHR;
PFN_vkGetMemoryHostPointerPropertiesEXT vk_vkGetMemoryHostPointerPropertiesEXT;
VkInstance vk_instance;

static pthread_once_t load_once = PTHREAD_ONCE_INIT, atfork_once = PTHREAD_ONCE_INIT;
static int lib_err;
static char lib_msg[512], load_msg[512];
static pthread_mutex_t instance_mu = PTHREAD_MUTEX_INITIALIZER;
static int instance_users;
static pthread_mutex_t teardown_mu = PTHREAD_MUTEX_INITIALIZER;
static bool exiting;
static void *lib;
static PFN_vkGetInstanceProcAddr gipa;
static VkDebugUtilsMessengerEXT messenger;
static PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
static atomic_uint_least64_t validation_count;
static pthread_mutex_t device_fns_mu = PTHREAD_MUTEX_INITIALIZER;
static bool device_fns_loaded;

const char *vk_result_str(VkResult r)
{
    switch (r) {
#define C(x) case x: return #x;
    C(VK_SUCCESS) C(VK_NOT_READY) C(VK_TIMEOUT) C(VK_INCOMPLETE)
    C(VK_ERROR_OUT_OF_HOST_MEMORY) C(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    C(VK_ERROR_INITIALIZATION_FAILED) C(VK_ERROR_DEVICE_LOST) C(VK_ERROR_MEMORY_MAP_FAILED)
    C(VK_ERROR_LAYER_NOT_PRESENT) C(VK_ERROR_EXTENSION_NOT_PRESENT)
    C(VK_ERROR_FEATURE_NOT_PRESENT) C(VK_ERROR_INCOMPATIBLE_DRIVER)
    C(VK_ERROR_TOO_MANY_OBJECTS) C(VK_ERROR_FORMAT_NOT_SUPPORTED) C(VK_ERROR_UNKNOWN)
    C(VK_ERROR_INVALID_EXTERNAL_HANDLE) C(VK_ERROR_INVALID_SHADER_NV)
#undef C
    default: return "VK_ERROR (unknown code)";
    }
}

uint64_t vk_validation_messages(void)
{
    return atomic_load(&validation_count);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)type;
    (void)user;
    atomic_fetch_add(&validation_count, 1);
    fprintf(stderr, "devq-vulkan: validation: %s: %s\n",
            sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
            data && data->pMessage ? data->pMessage : "(no text)");
    return VK_FALSE;
}

static int fail(int err, const char *fmt, const char *a, const char *b)
{
    snprintf(load_msg, sizeof load_msg, fmt, a, b);
    return err;
}

static bool has_layer(const char *name)
{
    uint32_t n = 0;
    if (vk_vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || !n)
        return false;
    VkLayerProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vk_vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(p[i].layerName, name);
    free(p);
    return found;
}

static int create_instance(bool validation)
{
    uint32_t version = VK_API_VERSION_1_0;
    if (vk_vkEnumerateInstanceVersion)
        vk_vkEnumerateInstanceVersion(&version);
    if (version < VK_API_VERSION_1_3) {
        char v[32];
        snprintf(v, sizeof v, "%u.%u", VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
        return fail(-ENODEV, "vulkan: the Vulkan loader supports only %s%s; devq needs 1.3 "
                    "(timeline semaphores, synchronization2)", v, "");
    }
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    if (validation && !has_layer(layer))
        return fail(-ENODEV, "vulkan: DEVQ_VULKAN_VALIDATION is set but %s is not installed "
                    "(Debian: vulkan-validationlayers)%s", layer, "");
    VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                              .pApplicationName = "devq", .pEngineName = "devq",
                              .apiVersion = VK_API_VERSION_1_3 };
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    VkInstanceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pNext = validation ? &mci : NULL,
                                .pApplicationInfo = &app,
                                .enabledLayerCount = validation, .ppEnabledLayerNames = &layer,
                                .enabledExtensionCount = validation, .ppEnabledExtensionNames = &ext };
    VkResult r = vk_vkCreateInstance(&ci, NULL, &vk_instance);
    if (r != VK_SUCCESS)
        return fail(-ENODEV, "vulkan: vkCreateInstance: %s%s (is a Vulkan driver installed? "
                    "Debian: mesa-vulkan-drivers)", vk_result_str(r), "");
#define VK_INST(f) vk_##f = (PFN_##f)gipa(vk_instance, #f); \
    if (!vk_##f) return fail(-ENODEV, "vulkan: %s missing from the instance%s", #f, "");
    VK_INSTANCE_FNS(VK_INST)
#undef VK_INST
    if (validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)gipa(vk_instance, "vkCreateDebugUtilsMessengerEXT");
        destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)gipa(vk_instance,
                                                                     "vkDestroyDebugUtilsMessengerEXT");
        if (create && destroy_messenger)
            create(vk_instance, &mci, NULL, &messenger);
    }
    return 0;
}

static void load_library(void)
{
    const char *path = vk_host->getenv("DEVQ_VULKAN_LIBRARY");
    if (!path || !*path)
        path = "libvulkan.so.1";
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        lib_err = fail(-ENODEV, "vulkan: cannot load %s: %s (Debian: libvulkan1 and a driver "
                       "such as mesa-vulkan-drivers; DEVQ_VULKAN_LIBRARY names another file)",
                       path, dlerror());
        memcpy(lib_msg, load_msg, sizeof lib_msg);
        return;
    }
    gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    if (gipa) {
#define VK_GLOBAL(f) vk_##f = (PFN_##f)gipa(NULL, #f);
        VK_GLOBAL_FNS(VK_GLOBAL)
#undef VK_GLOBAL
    }
    if (!gipa || !vk_vkCreateInstance) {
        lib_err = fail(-ENODEV, "vulkan: %s is not a Vulkan loader (no %s)", path,
                       gipa ? "vkCreateInstance" : "vkGetInstanceProcAddr");
        memcpy(lib_msg, load_msg, sizeof lib_msg);
    }
}

/* The instance lives while a device is open (or for one device count):
 * a driver may start threads when it enumerates its devices (lavapipe
 * starts llvmpipe's), and a child forked after the last device closed
 * (Check forks a process per test) must make its own rather than inherit
 * one whose threads did not survive the fork. */
static void forget_instance_in_child(void)
{
    pthread_mutex_init(&instance_mu, NULL);
    pthread_mutex_init(&teardown_mu, NULL);
    vk_instance = VK_NULL_HANDLE;
    messenger = VK_NULL_HANDLE;
    instance_users = 0;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, forget_instance_in_child);
}

/* lib may close a device on its notifier thread while the main thread is
 * already in exit(), running the driver's static destructors (lavapipe's
 * LLVM); a device left open has completion threads inside the driver.
 * Either crashes once the driver's statics are gone.  So at exit, before
 * the driver's handlers, the plugin waits for a teardown in progress,
 * stops the completion threads of the devices still open, and skips
 * every later teardown: the process is going anyway.  The handler is
 * registered again at each device open (a driver may register handlers
 * lazily, and handlers run in reverse order), at most 16 times. */
static struct devq_pl_device *open_devices[64];
static unsigned atexit_registered;

static void at_exit(void)
{
    pthread_mutex_lock(&teardown_mu);
    if (!exiting) {
        exiting = true;
        for (size_t i = 0; i < sizeof open_devices / sizeof open_devices[0]; i++)
            if (open_devices[i])
                vk_completion_stop_all(open_devices[i]);
    }
    pthread_mutex_unlock(&teardown_mu);
}

void vk_device_opened(struct devq_pl_device *d)
{
    pthread_mutex_lock(&teardown_mu);
    for (size_t i = 0; i < sizeof open_devices / sizeof open_devices[0]; i++)
        if (!open_devices[i]) {
            open_devices[i] = d;
            break;
        }
    if (atexit_registered < 16 && atexit(at_exit) == 0)
        atexit_registered++;
    pthread_mutex_unlock(&teardown_mu);
}

bool vk_teardown_begin(struct devq_pl_device *d)
{
    pthread_mutex_lock(&teardown_mu);
    if (exiting) {
        pthread_mutex_unlock(&teardown_mu);
        return false;
    }
    for (size_t i = 0; i < sizeof open_devices / sizeof open_devices[0]; i++)
        if (open_devices[i] == d)
            open_devices[i] = NULL;
    return true;
}

void vk_teardown_end(void)
{
    pthread_mutex_unlock(&teardown_mu);
}

int vk_load(void)
{
    pthread_once(&load_once, load_library);
    if (lib_err)
        return vk_host->error(lib_err, "%s", lib_msg);
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&instance_mu);
    int err = 0;
    if (!vk_instance) {
        const char *v = vk_host->getenv("DEVQ_VULKAN_VALIDATION");
        err = create_instance(v && *v && strcmp(v, "0") != 0);
        if (err && vk_instance) {
            vk_vkDestroyInstance(vk_instance, NULL);
            vk_instance = VK_NULL_HANDLE;
        }
    }
    if (!err)
        instance_users++;
    pthread_mutex_unlock(&instance_mu);
    return err ? vk_host->error(err, "%s", load_msg) : 0;
}

void vk_release(void)
{
    pthread_mutex_lock(&instance_mu);
    if (instance_users > 0 && --instance_users == 0) {
        if (messenger && destroy_messenger)
            destroy_messenger(vk_instance, messenger, NULL);
        messenger = VK_NULL_HANDLE;
        vk_vkDestroyInstance(vk_instance, NULL);
        vk_instance = VK_NULL_HANDLE;
    }
    pthread_mutex_unlock(&instance_mu);
}

/* Device-level entry points through the loader's trampolines, which
 * dispatch on the device or command buffer passed: one set serves every
 * device, whatever its driver. */
int vk_load_device(void)
{
    pthread_mutex_lock(&device_fns_mu);
    int err = 0;
    if (!device_fns_loaded) {
#define VK_DEV(f) if (!err && !(vk_##f = (PFN_##f)gipa(vk_instance, #f))) \
        err = vk_host->error(-ENODEV, "vulkan: %s missing from the device", #f);
        VK_DEVICE_FNS(VK_DEV)
#undef VK_DEV
        vk_vkCmdPushDescriptorSetKHR =
            (PFN_vkCmdPushDescriptorSetKHR)gipa(vk_instance, "vkCmdPushDescriptorSetKHR");
        vk_vkGetMemoryHostPointerPropertiesEXT = (PFN_vkGetMemoryHostPointerPropertiesEXT)gipa(
            vk_instance, "vkGetMemoryHostPointerPropertiesEXT");
        device_fns_loaded = !err;
    }
    pthread_mutex_unlock(&device_fns_mu);
    return err;
}

