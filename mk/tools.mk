# tools area: devq-info (installed), like fi_info / vulkaninfo.
bin_PROGRAMS += tools/devq-info
tools_devq_info_SOURCES = tools/devq-info.c
tools_devq_info_LDADD = libdevq.la
man1_MANS += man/man1/devq-info.1

# devq-info with broken plugins on the path: every one named with its
# reason, valid JSON, the no-accelerator line, -e.  Needs the test plugins
# of mk/loader.mk, which 'make check' builds first.
TESTS += tests/test_devq_info.sh
EXTRA_DIST += tests/test_devq_info.sh

# devq-trace-svg: render a DEVQ_TRACE file as an SVG timeline.
bin_PROGRAMS += tools/devq-trace-svg
tools_devq_trace_svg_SOURCES = tools/devq-trace-svg.c
man1_MANS += man/man1/devq-trace-svg.1
