# Benchmarks: each area adds its programs to noinst_PROGRAMS (so they
# always build) and to BENCH_PROGRAMS; 'make bench'
# builds and runs them all.  Results are recorded in bench/RESULTS.md.
bench: $(BENCH_PROGRAMS)
	@for b in $(BENCH_PROGRAMS); do \
	  echo "== $$b"; \
	  DEVQ_PLUGIN_PATH='$(abs_top_builddir)/plugins/cuda/.libs:$(abs_top_builddir)/plugins/hip/.libs' \
	    ./$$b || exit 1; \
	done
.PHONY: bench
EXTRA_DIST += bench/RESULTS.md
