# SPDX-License-Identifier: MIT
# Style and static checks (HACKING.md "Style and checks"), none of them
# part of `make check`:
#   make lint     clang-format --dry-run, cppcheck, shellcheck, codespell;
#                 each tool that is not installed is skipped with a message
#   make format   rewrites every C file in place as .clang-format says
#   make analyze  clang-tidy's clang-analyzer-* checks on lib/
#   make analyze-plugins  the same on plugins/
# LINT_FORMAT=error (default) fails on files that differ; =warn only reports them.
# Public headers and hand-aligned tables opt out with clang-format off.
LINT_FORMAT = error
LINT_JOBS = 2
CLANG_FORMAT = clang-format
CLANG_TIDY = clang-tidy
CPPCHECK = cppcheck
SHELLCHECK = shellcheck
CODESPELL = codespell

# The C files the formatter owns, and the shell scripts shellcheck reads
# (*.sh, and any file whose first line runs sh or bash), relative to top_srcdir:
# the tracked ones in a git checkout, else what find sees (a tarball).
LINT_C_DIRS = lib plugins tools tests include bench examples
LINT_SH_DIRS = .ci tests tools bench bindings/rust debian
lint_c_files = if test -e .git; then git ls-files -- $(LINT_C_DIRS) | grep '\.[ch]$$'; \
	else find $(LINT_C_DIRS) -name '*.[ch]' -type f; fi | sort
lint_sh_files = { echo autogen.sh; if test -e .git; then git ls-files -- $(LINT_SH_DIRS); \
	else find $(LINT_SH_DIRS) -type f ! -path '*/target/*' 2>/dev/null; fi; } | \
	while read -r f; do case $$f in *.sh) echo "$$f"; continue;; esac; \
	    head -n1 "$$f" 2>/dev/null | grep -qE '^\#!.*[/ ](ba)?sh( |$$)' && echo "$$f"; done | sort

lint: lint-format lint-cppcheck lint-shellcheck lint-codespell

lint-format:
	@command -v $(CLANG_FORMAT) >/dev/null 2>&1 || { echo "lint: $(CLANG_FORMAT) not found: format check skipped (Debian: clang-format)"; exit 0; }; \
	cd $(top_srcdir) && files=`$(lint_c_files)` && \
	bad=`$(CLANG_FORMAT) --dry-run $$files 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: .*-Wclang-format-violations.*/\1/p' | sort -u`; \
	if test -z "$$bad"; then echo "lint: format: every C file is as .clang-format says"; exit 0; fi; \
	n=`echo "$$bad" | wc -l`; \
	case "$(LINT_FORMAT)" in \
	error) echo "$$bad" | sed 's/^/lint: format: not as .clang-format says: /'; \
	       echo "lint: format: $$n files differ; 'make format' rewrites them"; exit 1;; \
	*)     echo "lint: format: $$n files differ from .clang-format ('make format' rewrites them;" \
	            "not an error while LINT_FORMAT=warn)";; \
	esac

format:
	@command -v $(CLANG_FORMAT) >/dev/null 2>&1 || { echo "format: $(CLANG_FORMAT) not found (Debian: clang-format)"; exit 1; }; \
	cd $(top_srcdir) && $(lint_c_files) | xargs $(CLANG_FORMAT) -i

# Findings that are not bugs are listed, each with why, in the file named
# by --suppressions-list (or, for one line, a cppcheck-suppress comment on it).
lint-cppcheck:
	@command -v $(CPPCHECK) >/dev/null 2>&1 || { echo "lint: $(CPPCHECK) not found: cppcheck check skipped (Debian: cppcheck)"; exit 0; }; \
	cd $(top_srcdir) && $(CPPCHECK) -q -j$(LINT_JOBS) --error-exitcode=1 --std=c11 -D__linux__ \
	    --enable=warning,portability,performance --inline-suppr \
	    --suppressions-list=tools/lint/cppcheck.supp --template=gcc -I include -I lib lib plugins tools && \
	echo "lint: cppcheck: lib plugins tools clean"

# Warnings and errors; shellcheck's style notes (quoting a number, ls in
# a pipe) are left to the author.
lint-shellcheck:
	@command -v $(SHELLCHECK) >/dev/null 2>&1 || { echo "lint: $(SHELLCHECK) not found: shell check skipped (Debian: shellcheck)"; exit 0; }; \
	cd $(top_srcdir) && files=`$(lint_sh_files)` && \
	$(SHELLCHECK) -S warning -f gcc $$files && \
	echo "lint: shellcheck: `echo $$files | wc -w` scripts clean"

lint-codespell:
	@command -v $(CODESPELL) >/dev/null 2>&1 || { echo "lint: $(CODESPELL) not found: spelling check skipped (Debian: codespell)"; exit 0; }; \
	cd $(top_srcdir) && $(CODESPELL) --ignore-words=tools/lint/codespell-words.txt \
	    --skip='*.spv,*.svg,*.json,*.ptx,*.lock,*/fuzz/corpus,*/fuzz-corpora,*/target' \
	    lib plugins tools tests include man docs bench examples bindings/rust mk debian .ci \
	    README.md HACKING.md configure.ac Makefile.am && \
	echo "lint: codespell: clean"

# clang-tidy with the analyzer's checks (the same engine as scan-build),
# file by file, with libdevq's own flags and this build's config.h.
# A finding is an error; a justified one is marked NOLINT(check) with why.
# Left out: security.insecureAPI (memcpy/snprintf "use the _s variant",
# C11 Annex K, which glibc lacks) and valist.Uninitialized (clang 14
# reports vsnprintf right after va_start in lib/base's fail() helpers:
# a false positive of that checker with x86-64's array va_list).
LINT_TIDY_CHECKS = -*,clang-analyzer-*,-clang-analyzer-security.insecureAPI.*,-clang-analyzer-valist.Uninitialized
# In plugins/ also left out: optin.mpi (it knows MPI_Wait, not the
# MPI_Test polling of plugins/mpi's bounded waits) and optin.performance
# (a struct's padding is no defect).
LINT_TIDY_PLUGIN_CHECKS = $(LINT_TIDY_CHECKS),-clang-analyzer-optin.mpi.*,-clang-analyzer-optin.performance.*
# $(call tidy_files,SOURCES,CPPFLAGS,CHECKS): the .c files of SOURCES, a
# few per clang-tidy, LINT_JOBS at a time; fails (123) on a finding.
tidy_files = for f in $(1); do case $$f in *.c) echo "$(top_srcdir)/$$f";; esac; done | \
	xargs -r -P$(LINT_JOBS) -n4 sh -c '$(CLANG_TIDY) --quiet --checks="$(3)" --warnings-as-errors="*" \
	    "$$@" -- -std=gnu11 $(DEFS) $(2) $(CPPFLAGS) -pthread' clang-tidy
analyze:
	@command -v $(CLANG_TIDY) >/dev/null 2>&1 || { echo "analyze: $(CLANG_TIDY) not found (Debian: clang-tidy)"; exit 1; }; \
	$(call tidy_files,$(filter lib/%,$(libdevq_core_la_SOURCES) $(libdevq_la_SOURCES)),$(libdevq_core_la_CPPFLAGS),$(LINT_TIDY_CHECKS)) && \
	echo "analyze: clang-tidy (clang-analyzer-*): lib clean"

# The same checks on the backends this build configures, each with its
# own flags: cpu; cuda with gpu_common (which hip and vulkan compile too);
# hip, vulkan and mpi without it.  The host table's error() is opaque to
# the analyzer: plugins/analyzer.h makes it yield its err under it.
analyze-plugins:
	@command -v $(CLANG_TIDY) >/dev/null 2>&1 || { echo "analyze: $(CLANG_TIDY) not found (Debian: clang-tidy)"; exit 1; }; \
	rc=0; \
	{ $(call tidy_files,$(libdevq_cpu_la_SOURCES),$(libdevq_cpu_la_CPPFLAGS),$(LINT_TIDY_PLUGIN_CHECKS)); } || rc=1; \
	{ $(call tidy_files,$(plugins_cuda_devq_cuda_la_SOURCES),$(plugins_cuda_devq_cuda_la_CPPFLAGS),$(LINT_TIDY_PLUGIN_CHECKS)); } || rc=1; \
	{ $(call tidy_files,$(filter-out $(GPU_COMMON_SOURCES),$(plugins_hip_devq_hip_la_SOURCES)),$(plugins_hip_devq_hip_la_CPPFLAGS),$(LINT_TIDY_PLUGIN_CHECKS)); } || rc=1; \
	{ $(call tidy_files,$(filter-out $(GPU_COMMON_SOURCES),$(plugins_vulkan_devq_vulkan_la_SOURCES)),$(AM_CPPFLAGS),$(LINT_TIDY_PLUGIN_CHECKS)); } || rc=1; \
	{ $(call tidy_files,$(plugins_mpi_devq_mpi_la_SOURCES),$(plugins_mpi_devq_mpi_la_CPPFLAGS),$(LINT_TIDY_PLUGIN_CHECKS)); } || rc=1; \
	test $$rc = 0 && echo "analyze: clang-tidy (clang-analyzer-*): plugins clean"

.PHONY: lint lint-format lint-cppcheck lint-shellcheck lint-codespell format analyze analyze-plugins
EXTRA_DIST += mk/lint.mk plugins/analyzer.h tools/lint/cppcheck.supp tools/lint/codespell-words.txt .clang-format .editorconfig
