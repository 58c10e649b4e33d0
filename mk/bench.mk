# Benchmarks: each area adds its programs to noinst_PROGRAMS (so they
# always build) and to DEVQ_BENCHES; 'make bench'
# builds and runs them all.  Results are recorded in bench/RESULTS.md.
bench: $(DEVQ_BENCHES)
	@for b in $(DEVQ_BENCHES); do \
	  echo "== $$b"; \
	  DEVQ_PLUGIN_PATH='$(abs_top_builddir)/plugins/cuda/.libs:$(abs_top_builddir)/plugins/hip/.libs:$(abs_top_builddir)/plugins/vulkan/.libs' \
	    ./$$b || exit 1; \
	done
.PHONY: bench
EXTRA_DIST += bench/RESULTS.md bench/ratios.svg
