# SPDX-License-Identifier: MIT
# The device layer (lib/device/): the registry, streams, the event pool,
# the device's counters.  The tracker and checkpoints: mk/order.mk.
libdevq_core_la_SOURCES += \
	lib/device/device.c lib/device/device.h \
	lib/device/stream.h lib/device/event_pool.c lib/device/event_pool.h \
	lib/device/stats.c

