# SPDX-License-Identifier: MIT
# The conformance group (tests/conformance/): the backend-agnostic suites,
# one binary, run once per backend of the registry
# tests/conformance/backends (its environment, runner and skip rule) by
# tests/conformance/run-backend.  `make check` runs
# tests/conformance-NAME for every NAME below, a two-line wrapper made
# here: one result line per backend, and `make check
# TESTS=tests/conformance-cpu` runs one.  A new backend: a line in the
# registry and its name here (under its plugin's conditional).
if HAVE_CHECK
check_PROGRAMS += tests/conformance/conformance
tests_conformance_conformance_SOURCES = \
	tests/conformance/conf.h tests/conformance/conf_util.c \
	tests/conformance/conf_kernels.c tests/conformance/conf_main.c \
	tests/conformance/conf_queue.c tests/conformance/conf_failure.c \
	tests/conformance/conf_failmodel.c \
	tests/conformance/conf_deferral.c tests/conformance/conf_memory.c tests/conformance/conf_mem_idle.c \
	tests/conformance/conf_tracker.c tests/conformance/conf_timing.c \
	tests/conformance/conf_hazards.c tests/conformance/conf_race.c \
	tests/conformance/conf_names.c tests/conformance/conf_inline.c \
	tests/conformance/conf_kcheck.c tests/conformance/conf_graph.c \
	tests/conformance/conf_fork.c
tests_conformance_conformance_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# -export-dynamic: kernels are looked up in the running program.
tests_conformance_conformance_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_conformance_conformance_LDADD = libdevq.la $(CHECK_LIBS)

CONFORMANCE_TESTS = tests/conformance-cpu tests/conformance-cpu-2dev
if BUILD_CUDA
CONFORMANCE_TESTS += tests/conformance-cuda-emu
endif
if BUILD_HIP
CONFORMANCE_TESTS += tests/conformance-hip-emu
endif
if BUILD_VULKAN
CONFORMANCE_TESTS += tests/conformance-vulkan
endif
TESTS += $(CONFORMANCE_TESTS)
endif

# Every name of the registry gets its wrapper, listed above or not, so
# that `make tests/conformance-NAME` and a run by hand work for each.
CONFORMANCE_WRAPPERS = tests/conformance-cpu tests/conformance-cpu-2dev \
	tests/conformance-cuda-emu tests/conformance-hip-emu tests/conformance-vulkan
CLEANFILES += $(CONFORMANCE_WRAPPERS)
$(CONFORMANCE_WRAPPERS): $(top_srcdir)/tests/conformance/backends \
		$(top_srcdir)/tests/conformance/run-backend
	@$(MKDIR_P) tests
	$(AM_V_GEN)name=`echo $@ | sed 's|^tests/conformance-||'`; \
	  top_srcdir='$(top_srcdir)' $(SHELL) $(top_srcdir)/tests/conformance/run-backend --list | \
	    grep -qx "$$name" || { echo "$@: no line '$$name' in tests/conformance/backends"; exit 1; }; \
	  { echo '#!/bin/sh'; \
	    echo '# SPDX-License-Identifier: MIT'; \
	    echo "# Made by make (mk/tests-conformance.mk): the conformance suites on $$name."; \
	    echo "exec \"\$${top_srcdir:-$(abs_top_srcdir)}/tests/conformance/run-backend\" $$name \"\$$@\""; \
	  } >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@
EXTRA_DIST += tests/conformance/backends
dist_noinst_SCRIPTS += tests/conformance/run-backend
