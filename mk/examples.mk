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
