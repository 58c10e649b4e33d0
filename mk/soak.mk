# SPDX-License-Identifier: MIT
# soak area: a bounded soak test with injected faults (tests/soak).
# Random work on cpu and on cuda over the emulated driver (tests/emu),
# one child process per round; SOAK_SECONDS (default 75) bounds it,
# SOAK_SEED/SOAK_ROUND replay a round.  See tests/soak/README.md.
check_PROGRAMS += tests/soak/soak
TESTS += tests/soak/soak
tests_soak_soak_SOURCES = tests/soak/soak.h tests/soak/soak_round.h tests/soak/soak_main.c \
	tests/soak/soak_round.c tests/soak/soak_check.c tests/soak/soak_model.c tests/soak/soak_kernels.c tests/soak/soak_proc.c \
	tests/soak/soak_peer.c
tests_soak_soak_CFLAGS = $(AM_CFLAGS)
# -export-dynamic: the emulated driver finds the kernels with dlsym.
tests_soak_soak_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
tests_soak_soak_LDADD = libdevq.la $(PTHREAD_LIBS)
# The emulated driver must be built before the soak runs.
EXTRA_tests_soak_soak_DEPENDENCIES = tests/emu/libcuda-emu.la
EXTRA_DIST += tests/soak/README.md
# Reproducers of lib bugs the soak found (not built: see the README).
EXTRA_DIST += tests/soak/repro/fail_position.c tests/soak/repro/early_publish.c \
	tests/soak/repro/parked_reader.c tests/soak/repro/gpu_issue_failure.c \
	tests/soak/repro/gpu_callback_stale.c
