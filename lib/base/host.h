/* SPDX-License-Identifier: MIT */
#ifndef DEVQ_LIB_HOST_H
#define DEVQ_LIB_HOST_H
#include <devq/devq_plugin.h>
extern const struct devq_host devq__host;
#endif
