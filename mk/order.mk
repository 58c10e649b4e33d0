# SPDX-License-Identifier: MIT
# The order layer (lib/order/): the tracker, the one place cross-stream
# ordering is decided, and the checkpoints of held-up streams it aligns
# to.  Above device, below mem and queue (tests/scripts/layers.py).  Its unit
# test and benchmark (tests/unit/test_tracker, bench/bench_tracker) are
# registered in mk/tests-unit.mk and mk/queue.mk.
libdevq_core_la_SOURCES += \
	lib/order/tracker.c lib/order/tracker.h \
	lib/order/checkpoint.c lib/order/checkpoint.h
EXTRA_DIST += mk/order.mk
