# SPDX-License-Identifier: MIT
# examples: the demo pipeline the README runs, and small programs that show
# one feature each.  Built by 'make' so they never rot.
noinst_PROGRAMS += examples/demo
examples_demo_SOURCES = examples/demo.c
# -export-dynamic: the cpu backend finds the demo's kernels in the program.
examples_demo_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
examples_demo_LDADD = libdevq.la

demo: examples/demo$(EXEEXT)
	./examples/demo
.PHONY: demo

noinst_PROGRAMS += examples/hello examples/epoll
examples_hello_SOURCES = examples/hello.c
examples_hello_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
examples_hello_LDADD = libdevq.la
examples_epoll_SOURCES = examples/epoll.c
examples_epoll_LDADD = libdevq.la

# The inference loop of issue 30: one-shot and as a graph, checked
# against a plain C loop; make check runs its small default size.
noinst_PROGRAMS += examples/inference-loop
examples_inference_loop_SOURCES = examples/inference-loop.c
examples_inference_loop_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
examples_inference_loop_LDADD = libdevq.la -lm

# The examples are tests too: they check their own results.
TESTS += examples/hello examples/epoll examples/inference-loop

# Real output in the README, regenerated from a run (needs python3).
readme: tools/devq-info$(EXEEXT) tools/devq-trace-svg$(EXEEXT) examples/demo$(EXEEXT)
	$(SHELL) $(top_srcdir)/tools/update-readme.sh $(top_srcdir)
.PHONY: readme
dist_noinst_SCRIPTS += tools/update-readme.sh
EXTRA_DIST += docs/demo-trace.svg
