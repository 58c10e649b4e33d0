/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the benchmark programs: a clock, medians, and
 * one table format so `make bench` output reads as one report. */
#ifndef DEVQ_BENCH_UTIL_H
#define DEVQ_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* name, devq value, baseline value, unit, ratio meaning */
static inline void bench_row(const char *name, double devq, double base, const char *unit, const char *target)
{
    printf("%-44s %12.1f %12.1f %-8s %6.2fx  %s\n", name, devq, base, unit, base ? devq / base : 0.0, target);
}

static inline void bench_header(const char *title)
{
    printf("\n%s\n%-44s %12s %12s %-8s %7s  %s\n", title, "benchmark", "devq", "baseline", "unit", "ratio",
           "target");
}

#endif
