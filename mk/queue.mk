# Queues, the tracker, buffers, kernels and stats (lib side).
libdevq_core_la_SOURCES += \
	lib/tracker.c lib/tracker.h \
	lib/queue.c lib/queue.h lib/record.c lib/submit.c lib/completion.c \
	lib/cycle.c lib/buffer.c lib/kernel.c lib/stats.c lib/mem_weak.c
