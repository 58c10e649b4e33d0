# SPDX-License-Identifier: MIT
# tools area: devq-info (installed), like fi_info / vulkaninfo.
bin_PROGRAMS += tools/devq-info
# The environment table and the plugin-folder rule are compiled in: they
# are lib's own code (hidden in libdevq.so), pure libc, so devq-info
# prints and checks exactly what lib does.
tools_devq_info_SOURCES = tools/devq-info.c lib/base/env_table.c lib/base/device_spec.c lib/loader/plugin_dir.c \
	lib/loader/manifest.c
tools_devq_info_CPPFLAGS = $(AM_CPPFLAGS) $(DEVQ_LIB_INCLUDES)
tools_devq_info_LDADD = libdevq.la $(LIBS)
tools_devq_info_LDFLAGS = $(AM_LDFLAGS) $(DEVQ_TOOL_RPATH)
man1_MANS += man/man1/devq-info.1

# devq-trace-svg: render a DEVQ_TRACE file as an SVG timeline.
bin_PROGRAMS += tools/devq-trace-svg
tools_devq_trace_svg_SOURCES = tools/devq-trace-svg.c
tools_devq_trace_svg_LDADD = -lm
man1_MANS += man/man1/devq-trace-svg.1
EXTRA_DIST += tests/scripts/test_trace_svg.sh tests/trace-svg/known.json

# Relocatable install: configure, build and install to two prefixes in a row
# from one build folder (no 'make clean'), then run each copy's devq-info
# and the README's pkg-config-built program.  Builds from scratch in a
# temporary folder (about 2 minutes on 2 cores), so it is not part of
# 'make check'; .ci/run runs it.
EXTRA_DIST += tests/install/two-prefixes.sh tests/install/debian.sh
check-install:
	$(top_srcdir)/tests/install/two-prefixes.sh $(top_srcdir)
.PHONY: check-install
