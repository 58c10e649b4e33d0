/* SPDX-License-Identifier: MIT */
/* "devq-emu-module" text images, shared by the faces that load modules
 * (emu_cuda.c, emu_hip.c).
 *
 *   devq-emu-module [cpu-args]
 *   # one line per kernel: its name, then each parameter: its byte size,
 *   # or "ptr" for a device pointer (8 bytes)
 *   saxpy 4 ptr ptr 4
 *
 * Kernels are functions of this process, found with dlsym(RTLD_DEFAULT)
 * when a face looks them up; see README.md for the calling convention. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "emu_engine.h"

#define MODULE_MAGIC 0x4d4f4455u

struct emu_kmodule {
    uint32_t magic;
    size_t nfuncs;
    struct emu_kfunc funcs[];
};

static const char module_header[] = "devq-emu-module";
static const char cpu_args[] = " cpu-args";

int emu_module_parse(const char *text, emu_kmodule **out)
{
    size_t hl = sizeof module_header - 1;
    if (!text || strncmp(text, module_header, hl) != 0)
        return EMU_E_INVALID_IMAGE;
    bool cpu_style = strncmp(text + hl, cpu_args, sizeof cpu_args - 1) == 0;
    if (cpu_style)
        hl += sizeof cpu_args - 1;
    if (text[hl] != '\n' && text[hl] != '\0')
        return EMU_E_INVALID_IMAGE;
    size_t lines = 1;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    emu_kmodule *m = calloc(1, sizeof *m + lines * sizeof m->funcs[0]);
    if (!m)
        return EMU_E_OUT_OF_MEMORY;
    m->magic = MODULE_MAGIC;
    const char *line = strchr(text, '\n');
    while (line && *++line) {
        const char *end = strchrnul(line, '\n');
        char buf[1024];
        size_t len = (size_t)(end - line);
        if (len >= sizeof buf)
            goto bad;
        memcpy(buf, line, len);
        buf[len] = '\0';
        char *save = NULL, *tok = strtok_r(buf, " \t", &save);
        if (tok && tok[0] != '#') {
            struct emu_kfunc *f = &m->funcs[m->nfuncs++];
            if (strlen(tok) >= sizeof f->name)
                goto bad;
            strcpy(f->name, tok);
            while ((tok = strtok_r(NULL, " \t", &save))) {
                if (f->nparams == EMU_MAX_PARAMS)
                    goto bad;
                if (strcmp(tok, "ptr") == 0) {
                    f->deref[f->nparams] = cpu_style;
                    f->sizes[f->nparams++] = sizeof(void *);
                    continue;
                }
                char *e;
                unsigned long sz = strtoul(tok, &e, 10);
                if (*e || sz == 0 || sz > 4096)
                    goto bad;
                f->sizes[f->nparams++] = sz;
            }
        }
        line = *end ? end : NULL;
    }
    *out = m;
    return EMU_OK;
bad:
    free(m);
    return EMU_E_INVALID_IMAGE;
}

bool emu_module_valid(const emu_kmodule *m)
{
    return m && m->magic == MODULE_MAGIC;
}

int emu_module_unload(emu_kmodule *m)
{
    if (!emu_module_valid(m))
        return EMU_E_INVALID_HANDLE;
    m->magic = 0;
    free(m);
    return EMU_OK;
}

int emu_module_function(emu_kmodule *m, const char *name, struct emu_kfunc **out)
{
    if (!emu_module_valid(m))
        return EMU_E_INVALID_HANDLE;
    if (!name || !out)
        return EMU_E_INVALID_VALUE;
    for (size_t i = 0; i < m->nfuncs; i++) {
        struct emu_kfunc *f = &m->funcs[i];
        if (strcmp(f->name, name) != 0)
            continue;
        void *sym = dlsym(RTLD_DEFAULT, name);
        if (!sym)
            return EMU_E_NOT_FOUND;
        f->fn = (emu_kernel_fn)sym;
        *out = f;
        return EMU_OK;
    }
    return EMU_E_NOT_FOUND;
}
