# SPDX-License-Identifier: MIT
# Valgrind (memcheck) over the C test programs: `make check-valgrind`.
# The harness is the usual one (same environment, logs in tests/*.log);
# each program runs under libtool --mode=execute valgrind, and any memcheck
# error or definite leak, in the program or a Check fork, fails the test
# (exit 9).  Scripts (the conformance wrappers, mpirun) are not in the list:
# their programs are covered by ASan/UBSan and TSan builds instead, and
# valgrind's serialised threads make the GPU emulators' timeouts flaky.
# test_rss_flat skips itself here (valgrind's allocator is not glibc's);
# test_idle and test_cpu_plugin are left out: they measure wake-ups and
# thread priorities, which valgrind's one-thread-at-a-time scheduler changes.
VALGRIND = valgrind
VALGRIND_FLAGS = -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
	--show-leak-kinds=definite --num-callers=30 \
	--suppressions=$(abs_top_srcdir)/tests/valgrind.supp
VALGRIND_TESTS = tests/unit/test_signal tests/unit/test_signal_many tests/unit/test_signal_notify tests/unit/test_tracker \
	tests/unit/test_misuse tests/unit/test_names tests/unit/test_env tests/unit/test_device \
	tests/unit/test_completion_order tests/unit/test_held_alignment tests/unit/test_strict_notes \
	tests/unit/test_loader tests/unit/test_rss_flat tests/unit/test_kernel_fn
# Memcheck runs threads one at a time, some 20-50x slower: Check's
# per-test timeouts are stretched (still bounded), or a busy machine turns
# test_device's 100-round open race into a timeout (seen in a rehearsal).
check-valgrind:
	CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-4} $(MAKE) $(AM_MAKEFLAGS) check TESTS='$(VALGRIND_TESTS)' LOG_COMPILER='$(LIBTOOL)' \
	  AM_LOG_FLAGS='--mode=execute $(VALGRIND) $(VALGRIND_FLAGS)' DEVQ_TEST_UNDER_VALGRIND=1
.PHONY: check-valgrind
EXTRA_DIST += tests/valgrind.supp
