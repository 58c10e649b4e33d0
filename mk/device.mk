# SPDX-License-Identifier: MIT
# The device layer (lib/device/): the registry, streams and their
# checkpoints, the tracker, the event pool, the device's counters.
libdevq_core_la_SOURCES += \
	lib/device/device.c lib/device/device.h \
	lib/device/stream.h lib/device/checkpoint.c lib/device/checkpoint.h \
	lib/device/tracker.c lib/device/tracker.h lib/device/event_pool.c lib/device/event_pool.h \
	lib/device/stats.c

