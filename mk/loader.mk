# SPDX-License-Identifier: MIT
# loader area: plugin loader (lib/loader/), backend report, their tests
# (with purpose-built broken plugins) and the out-of-tree plugin proof.
libdevq_core_la_SOURCES += \
	lib/loader/plugin.c lib/loader/plugin.h lib/loader/plugin_dir.c lib/loader/plugin_dir.h \
	lib/loader/plugin_validate.c lib/loader/plugin_validate.h \
	lib/loader/backend_report.c lib/loader/builtin.h lib/loader/manifest.c lib/loader/manifest.h

# ---- purpose-built test plugins (tests/plugins), loaded from temporary
# folders that each test points DEVQ_PLUGIN_PATH at.  -rpath makes libtool
# build them shared although they are never installed.
DEVQ_TEST_PLUGIN_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere
check_LTLIBRARIES += tests/plugins/devq-fake.la
tests_plugins_devq_fake_la_SOURCES = tests/plugins/fake.c
tests_plugins_devq_fake_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)

DEVQ_BROKEN_SOURCES = tests/plugins/broken.c tests/plugins/stub_ops.h
check_LTLIBRARIES += tests/plugins/devq-noentry.la tests/plugins/devq-initfail.la \
	tests/plugins/devq-nulltable.la tests/plugins/devq-future.la \
	tests/plugins/devq-small.la tests/plugins/devq-nullop.la \
	tests/plugins/devq-badname.la tests/plugins/devq-halfkernel.la \
	tests/plugins/devq-old.la
tests_plugins_devq_noentry_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_noentry_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_NOENTRY
tests_plugins_devq_noentry_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_initfail_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_initfail_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_INITFAIL
tests_plugins_devq_initfail_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_nulltable_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_nulltable_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_NULLTABLE
tests_plugins_devq_nulltable_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_future_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_future_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_FUTURE
tests_plugins_devq_future_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_small_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_small_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_SMALL
tests_plugins_devq_small_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_nullop_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_nullop_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_NULLOP
tests_plugins_devq_nullop_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_badname_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_badname_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_BADNAME
tests_plugins_devq_badname_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_halfkernel_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_halfkernel_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_HALFKERNEL
tests_plugins_devq_halfkernel_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)
tests_plugins_devq_old_la_SOURCES = $(DEVQ_BROKEN_SOURCES)
tests_plugins_devq_old_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_OLD
tests_plugins_devq_old_la_LDFLAGS = $(DEVQ_TEST_PLUGIN_LDFLAGS)

DEVQ_LOADER_TEST_PLUGINS = tests/plugins/devq-fake.la tests/plugins/devq-noentry.la \
	tests/plugins/devq-initfail.la tests/plugins/devq-nulltable.la \
	tests/plugins/devq-future.la tests/plugins/devq-small.la tests/plugins/devq-nullop.la \
	tests/plugins/devq-badname.la tests/plugins/devq-halfkernel.la tests/plugins/devq-old.la
DEVQ_TEST_PLUGIN_CPPFLAGS = -DTEST_PLUGIN_BUILD_DIR='"$(abs_top_builddir)/tests/plugins/.libs"'
EXTRA_DIST += tests/plugins/testdir.h

# ---- the out-of-tree plugin proof: build examples/plugin-null against the
# installed header alone (no -I into this tree) and check that the
# installed devq-info finds it.  Run by 'make installcheck' and distcheck.
EXTRA_DIST += examples/plugin-null/null.c examples/plugin-null/README
installcheck-local: installcheck-plugin-null
installcheck-plugin-null:
	@set -e; d=`mktemp -d "$${TMPDIR:-/tmp}/devq-null-XXXXXX"`; \
	trap 'rm -rf "$$d"' EXIT; \
	echo "  CC       devq-null.so (against $(DESTDIR)$(includedir))"; \
	$(CC) -std=gnu11 -Wall -Werror -shared -fPIC -I'$(DESTDIR)$(includedir)' \
	  -o "$$d/devq-null.so" '$(srcdir)/examples/plugin-null/null.c'; \
	DEVQ_PLUGIN_PATH="$$d" LD_LIBRARY_PATH='$(DESTDIR)$(libdir)' \
	  '$(DESTDIR)$(bindir)/devq-info' > "$$d/out"; \
	cat "$$d/out"; \
	grep -q 'backend null, ABI 1, 1 device$$' "$$d/out" || \
	  { echo "FAIL: installed devq-info does not list the null backend"; exit 1; }; \
	grep -q '^  null:0 ' "$$d/out" || \
	  { echo "FAIL: installed devq-info cannot open null:0"; exit 1; }; \
	echo "PASS: out-of-tree plugin built against the installed header is loaded"
.PHONY: installcheck-plugin-null

man3_MANS += man/man3/devq_device_open.3 man/man3/devq_device_close.3 \
	man/man3/devq_device_info_get.3 man/man3/devq_backends_report.3 \
	man/man3/devq_errmsg.3 man/man3/devq_version.3
man7_MANS += man/man7/devq-plugin.7
