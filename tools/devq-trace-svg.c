/* SPDX-License-Identifier: MIT */
/* devq-trace-svg: render a DEVQ_TRACE file as an SVG timeline.
 *
 * One lane per queue (grouped by device), a box per op (allocations and
 * stream-ordered frees included), an arrow for every wait the tracker
 * inserted, and under each device a lane drawing its bytes-outstanding
 * counter as a step line.  It reads the one-event-per-line layout that
 * libdevq writes; other trace files are not supported.  No dependencies:
 * the SVG is written by hand.
 *
 * Long idle stretches (a program that computes on the host for seconds,
 * then frees its buffers at exit) would squeeze the work into a sliver:
 * every gap with no op that is longer than a quarter of the whole span is
 * drawn as a narrow break labelled with its length, so the work fills the
 * picture.  Ticks follow a 1-2-5 series with as many decimals as the step
 * needs, and a legend names every op colour. */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LANES 64
#define WIDTH 1100.0
#define LEFT 200.0
#define LANE_H 34.0
#define TOP 64.0

struct lane {
    unsigned pid, tid;
    char name[160];
};
struct slice {
    int lane;
    double ts, dur;
    char name[160];
};
struct flowpt {
    unsigned long long id;
    int lane;
    double ts;
    int start;
};
struct sample {
    unsigned pid;
    double ts, v;
};

static struct lane lanes[MAX_LANES];
static int nlanes;
static char procs[MAX_LANES][160];
static unsigned proc_pid[MAX_LANES];
static int nprocs;
static struct slice *slices;
static size_t nslices, capslices;
static struct flowpt *flows;
static size_t nflows, capflows;
static struct sample *samples; /* "bytes outstanding" counters, in file order */
static size_t nsamples, capsamples;

static int field_str(const char *line, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(line, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    /* JSON escapes: names may hold quotes (`queue "loader" (#2)`). */
    size_t n = 0;
    for (; *p && *p != '"' && n + 1 < cap; p++) {
        if (*p == '\\' && p[1])
            p++;
        out[n++] = *p;
    }
    out[n] = 0;
    return 1;
}

static int field_num(const char *line, const char *key, double *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return 0;
    *out = strtod(p + strlen(pat), NULL);
    return 1;
}

static int lane_of(unsigned pid, unsigned tid)
{
    for (int i = 0; i < nlanes; i++)
        if (lanes[i].pid == pid && lanes[i].tid == tid)
            return i;
    if (nlanes == MAX_LANES)
        return -1;
    lanes[nlanes] = (struct lane){ .pid = pid, .tid = tid };
    snprintf(lanes[nlanes].name, sizeof lanes[nlanes].name, "track %u", tid);
    return nlanes++;
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        default:
            fputc(*s, f);
        }
}

static const char *color(const char *name)
{
    static const char *palette[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac" };
    unsigned h = 0;
    for (const char *p = name; *p; p++)
        h = h * 31 + (unsigned char)*p;
    return palette[h % 10];
}

static const char *proc_name(unsigned pid)
{
    for (int i = 0; i < nprocs; i++)
        if (proc_pid[i] == pid)
            return procs[i];
    return "device";
}

static int read_trace(FILE *in)
{
    char line[1024];
    while (fgets(line, sizeof line, in)) {
        char ph[8], name[160];
        double pid = 0, tid = 0, ts = 0, dur = 0, id = 0;
        if (!field_str(line, "ph", ph, sizeof ph))
            continue;
        field_num(line, "pid", &pid);
        field_num(line, "tid", &tid);
        if (ph[0] == 'M') {
            char label[160];
            if (!field_str(line, "name", name, sizeof name) || !strstr(line, "\"args\":{\"name\":\""))
                continue;
            const char *a = strstr(line, "\"args\":{");
            field_str(a, "name", label, sizeof label);
            if (!strcmp(name, "process_name") && nprocs < MAX_LANES) {
                proc_pid[nprocs] = (unsigned)pid;
                snprintf(procs[nprocs++], sizeof procs[0], "%s", label);
            } else if (!strcmp(name, "thread_name")) {
                int l = lane_of((unsigned)pid, (unsigned)tid);
                if (l >= 0)
                    snprintf(lanes[l].name, sizeof lanes[l].name, "%s", label);
            }
        } else if (ph[0] == 'X') {
            field_str(line, "name", name, sizeof name);
            field_num(line, "ts", &ts);
            field_num(line, "dur", &dur);
            int l = lane_of((unsigned)pid, (unsigned)tid);
            if (l < 0)
                continue;
            if (nslices == capslices) {
                capslices = capslices ? capslices * 2 : 256;
                void *grown = realloc(slices, capslices * sizeof *slices);
                if (!grown)
                    return -ENOMEM; /* the old array stays owned, not leaked */
                slices = grown;
            }
            slices[nslices] = (struct slice){ .lane = l, .ts = ts, .dur = dur };
            snprintf(slices[nslices++].name, sizeof slices[0].name, "%s", name);
        } else if (ph[0] == 's' || ph[0] == 'f') {
            field_num(line, "id", &id);
            field_num(line, "ts", &ts);
            int l = lane_of((unsigned)pid, (unsigned)tid);
            if (l < 0)
                continue;
            if (nflows == capflows) {
                capflows = capflows ? capflows * 2 : 256;
                void *grown = realloc(flows, capflows * sizeof *flows);
                if (!grown)
                    return -ENOMEM; /* the old array stays owned, not leaked */
                flows = grown;
            }
            flows[nflows++] = (struct flowpt){ (unsigned long long)id, l, ts, ph[0] == 's' };
        } else if (ph[0] == 'C') {
            double v = 0;
            const char *a = strstr(line, "\"args\":{");
            if (!field_str(line, "name", name, sizeof name) || strcmp(name, "bytes outstanding") || !a ||
                !field_num(a, "bytes", &v))
                continue;
            field_num(line, "ts", &ts);
            if (nsamples == capsamples) {
                capsamples = capsamples ? capsamples * 2 : 256;
                void *grown = realloc(samples, capsamples * sizeof *samples);
                if (!grown)
                    return -ENOMEM; /* the old array stays owned, not leaked */
                samples = grown;
            }
            samples[nsamples++] = (struct sample){ (unsigned)pid, ts, v };
        }
    }
    return 0;
}

#define COUNTER_TID 0xffffffffu

static void human(double b, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static double counter_peak(unsigned pid)
{
    double peak = 0;
    for (size_t i = 0; i < nsamples; i++)
        if (samples[i].pid == pid && samples[i].v > peak)
            peak = samples[i].v;
    return peak;
}

/* One counter lane per device with samples, placed after its queues. */
static void add_counter_lanes(void)
{
    for (size_t i = 0; i < nsamples; i++) {
        unsigned pid = samples[i].pid;
        int have = 0;
        for (int l = 0; l < nlanes; l++)
            have |= lanes[l].pid == pid && lanes[l].tid == COUNTER_TID;
        if (have || nlanes == MAX_LANES)
            continue;
        int at = nlanes; /* after the device's last lane, else at the end */
        for (int l = 0; l < nlanes; l++)
            if (lanes[l].pid == pid)
                at = l + 1;
        for (size_t k = 0; k < nslices; k++)
            if (slices[k].lane >= at)
                slices[k].lane++;
        for (size_t k = 0; k < nflows; k++)
            if (flows[k].lane >= at)
                flows[k].lane++;
        memmove(&lanes[at + 1], &lanes[at], (size_t)(nlanes - at) * sizeof lanes[0]);
        lanes[at] = (struct lane){ .pid = pid, .tid = COUNTER_TID };
        char p[32];
        human(counter_peak(pid), p, sizeof p);
        snprintf(lanes[at].name, sizeof lanes[at].name, "bytes outstanding (peak %s)", p);
        nlanes++;
    }
}

/* ---- the time axis: idle gaps collapsed into breaks ---- */

#define MAX_BREAKS 8
#define BREAK_W 28.0
#define PLOT_W (WIDTH - LEFT - 20)

struct gap {
    double from, to;
};
static struct gap breaks[MAX_BREAKS];
static int nbreaks;
static double t_min, t_max, busy_span; /* busy_span: the span less the breaks */

static int by_start(const void *a, const void *b)
{
    double x = ((const struct slice *)a)->ts, y = ((const struct slice *)b)->ts;
    return (x > y) - (x < y);
}

/* The op-free stretches longer than a quarter of the span become breaks
 * (the longest first when there are more than MAX_BREAKS). */
static void find_breaks(void)
{
    t_min = 1e300, t_max = 0;
    for (size_t i = 0; i < nslices; i++) {
        if (slices[i].ts < t_min)
            t_min = slices[i].ts;
        if (slices[i].ts + slices[i].dur > t_max)
            t_max = slices[i].ts + slices[i].dur;
    }
    if (!nslices || t_max <= t_min) {
        t_min = nslices ? t_min : 0;
        t_max = t_min + 1;
    }
    double span = t_max - t_min;
    struct slice *sorted = malloc(nslices * sizeof *sorted);
    nbreaks = 0;
    if (sorted) {
        memcpy(sorted, slices, nslices * sizeof *sorted);
        qsort(sorted, nslices, sizeof *sorted, by_start);
        double end = nslices ? sorted[0].ts + sorted[0].dur : t_min;
        for (size_t i = 1; i < nslices; i++) {
            double gap = sorted[i].ts - end;
            if (gap > span / 4) {
                struct gap g = { end, sorted[i].ts };
                if (nbreaks < MAX_BREAKS)
                    breaks[nbreaks++] = g;
            }
            if (sorted[i].ts + sorted[i].dur > end)
                end = sorted[i].ts + sorted[i].dur;
        }
        free(sorted);
    }
    busy_span = span;
    for (int i = 0; i < nbreaks; i++)
        busy_span -= breaks[i].to - breaks[i].from;
}

/* x of time t: busy time scales to the plot, each break is BREAK_W wide. */
static double x_of(double t)
{
    double w = PLOT_W - nbreaks * BREAK_W, x = LEFT, from = t_min;
    for (int i = 0; i < nbreaks; i++) {
        if (t <= breaks[i].from)
            break;
        x += (breaks[i].from - from) / busy_span * w;
        if (t < breaks[i].to)
            return x + (t - breaks[i].from) / (breaks[i].to - breaks[i].from) * BREAK_W;
        x += BREAK_W;
        from = breaks[i].to;
    }
    if (t < from)
        t = from;
    return x + (t - from) / busy_span * w;
}

/* The break holding time t, or -1. */
static int break_at(double t)
{
    for (int i = 0; i < nbreaks; i++)
        if (t > breaks[i].from && t < breaks[i].to)
            return i;
    return -1;
}

/* 1, 2 or 5 times a power of ten, the first at least `raw`. */
static double nice_step(double raw)
{
    if (!(raw > 0))
        return 1;
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Decimals that tell ticks `step_ms` apart. */
static int decimals_for(double step_ms)
{
    int d = 0;
    for (double s = step_ms; s < 0.999999 && d < 6; s *= 10)
        d++;
    return d;
}

static void duration_text(double us, char *buf, size_t len)
{
    if (us >= 1e6)
        snprintf(buf, len, "%.3g s", us / 1e6);
    else
        snprintf(buf, len, "%.3g ms", us / 1e3);
}

/* A step line of the device's bytes outstanding, scaled to its peak. */
static void draw_counter(FILE *f, int l)
{
    double peak = counter_peak(lanes[l].pid), y0 = TOP + l * LANE_H + LANE_H - 4, h = LANE_H - 10;
    char p[32];
    human(peak, p, sizeof p);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#e15759\" stroke-width=\"1.2\" points=\"");
    double last = y0;
    int first = 1;
    for (size_t i = 0; i < nsamples; i++) {
        if (samples[i].pid != lanes[l].pid)
            continue;
        double x = x_of(samples[i].ts);
        if (x > WIDTH - 20)
            x = WIDTH - 20;
        double y = y0 - (peak > 0 ? samples[i].v / peak * h : 0);
        if (first)
            fprintf(f, "%.1f,%.1f ", LEFT, y0);
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", x, last, x, y);
        last = y;
        first = 0;
    }
    fprintf(f, "%.1f,%.1f\"><title>bytes outstanding, peak %s</title></polyline>\n", WIDTH - 20, last, p);
}

/* Distinct op names in first-seen order, for the legend. */
static size_t legend_names(const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < nslices; i++) {
        size_t k = 0;
        while (k < n && strcmp(out[k], slices[i].name))
            k++;
        if (k == n && n < cap)
            out[n++] = slices[i].name;
    }
    return n;
}

#define LEGEND_MAX 32
#define LEGEND_ROW 18.0

/* Rows the legend takes: op swatches, then the arrow and the counter. */
static int legend_layout(const char **names, size_t n, int draw, FILE *f, double y)
{
    double x = 10;
    int rows = 1;
    for (size_t i = 0; i <= n + 1; i++) {
        const char *label = i < n    ? names[i]
                            : i == n ? "wait the tracker inserted"
                                     : "device memory outstanding";
        double w = 22 + 6.2 * (double)strlen(label) + 16;
        if (x + w > WIDTH - 10 && x > 10) {
            x = 10;
            rows++;
            y += LEGEND_ROW;
        }
        if (draw) {
            fprintf(f, "<g class=\"legend\">");
            if (i < n)
                fprintf(f,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"10\" fill=\"%s\" "
                        "stroke=\"#222\" stroke-width=\"0.3\"/>",
                        x, y - 9, color(label));
            else if (i == n)
                fprintf(f,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
                        "marker-end=\"url(#arrow)\"/>",
                        x, y - 4, x + 16, y - 4);
            else
                fprintf(f,
                        "<polyline fill=\"none\" stroke=\"#e15759\" stroke-width=\"1.2\" "
                        "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>",
                        x, y - 1, x + 8, y - 1, x + 8, y - 9);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 22, y);
            xml_text(f, label);
            fputs("</text></g>\n", f);
        }
        x += w;
    }
    return rows;
}

static void write_svg(FILE *f, const char *title)
{
    add_counter_lanes();
    find_breaks();
    const char *names[LEGEND_MAX];
    size_t nnames = legend_names(names, LEGEND_MAX);
    double axis_y = TOP + nlanes * LANE_H;
    double legend_y = axis_y + 40;
    int legend_rows = legend_layout(names, nnames, 0, NULL, legend_y);
    double height = legend_y + legend_rows * LEGEND_ROW + 6;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n",
            WIDTH, height);
    fprintf(
        f,
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
        "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333\"/></marker></defs>\n");
    fprintf(
        f,
        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
    xml_text(f, title);
    char busy[32], idle[32];
    duration_text(busy_span, busy, sizeof busy);
    duration_text(t_max - t_min - busy_span, idle, sizeof idle);
    fprintf(f, "</text>\n<text x=\"10\" y=\"38\" fill=\"#555\">%s of work", busy);
    if (nbreaks)
        fprintf(f, " (%s idle not drawn: %d break%s)", idle, nbreaks, nbreaks == 1 ? "" : "s");
    fprintf(f, "; boxes are ops on each queue's stream, arrows are waits the tracker inserted, "
               "the red line is device memory outstanding</text>\n");
    for (int l = 0; l < nlanes; l++) {
        double y = TOP + l * LANE_H;
        fprintf(f, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"%s\"/>\n", y, WIDTH,
                LANE_H, l % 2 ? "#f4f4f4" : "#fbfbfb");
        if (l == 0 || lanes[l].pid != lanes[l - 1].pid) {
            fprintf(f, "<text x=\"8\" y=\"%.1f\" font-size=\"9\" fill=\"#555\">", y + 10);
            xml_text(f, proc_name(lanes[l].pid));
            fputs("</text>\n", f);
        }
        fprintf(f, "<text class=\"lane\" x=\"8\" y=\"%.1f\">", y + LANE_H / 2 + 8);
        xml_text(f, lanes[l].name);
        fputs("</text>\n", f);
    }
    /* Ticks at multiples of a 1-2-5 step, about ten over the work. */
    double step = nice_step(busy_span / 10);
    int dec = decimals_for(step / 1000.0);
    for (long k = 0;; k++) {
        double t = t_min + (double)k * step;
        if (t > t_max + step * 1e-9)
            break;
        int b = break_at(t);
        if (b >= 0) { /* skip to the first tick after the break */
            k = (long)ceil((breaks[b].to - t_min) / step) - 1;
            continue;
        }
        double x = x_of(t);
        fprintf(
            f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
            "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" fill=\"#777\" text-anchor=\"middle\">%.*f ms</text>\n",
            x, TOP - 4, x, axis_y, x, axis_y + 16, dec, (t - t_min) / 1000.0);
    }
    for (int i = 0; i < nbreaks; i++) {
        double x = x_of(breaks[i].from);
        char len[32];
        duration_text(breaks[i].to - breaks[i].from, len, sizeof len);
        fprintf(
            f,
            "<g class=\"break\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"white\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" fill=\"#777\" font-size=\"9\" text-anchor=\"middle\">%s idle</text></g>\n",
            x + 2, TOP - 2, BREAK_W - 4, axis_y - TOP + 4, x + BREAK_W / 2, axis_y + 28, len);
    }
    for (size_t i = 0; i < nslices; i++) {
        const struct slice *s = &slices[i];
        double x = x_of(s->ts), w = x_of(s->ts + s->dur) - x, y = TOP + s->lane * LANE_H + 5;
        if (w < 1)
            w = 1;
        fprintf(
            f,
            "<rect class=\"op\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"#222\" stroke-width=\"0.3\"><title>",
            x, y, w, LANE_H - 10, color(s->name));
        xml_text(f, s->name);
        fprintf(f, " (%.3f ms)</title></rect>\n", s->dur / 1000.0);
        if (w > 7.0 * (double)strlen(s->name)) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"white\">", x + 3, y + LANE_H / 2);
            xml_text(f, s->name);
            fputs("</text>\n", f);
        }
    }
    for (int l = 0; l < nlanes; l++)
        if (lanes[l].tid == COUNTER_TID)
            draw_counter(f, l);
    for (size_t i = 0; i < nflows; i++) {
        if (!flows[i].start)
            continue;
        for (size_t j = 0; j < nflows; j++)
            if (!flows[j].start && flows[j].id == flows[i].id) {
                fprintf(
                    f,
                    "<line class=\"wait\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1\" marker-end=\"url(#arrow)\"/>\n",
                    x_of(flows[i].ts), TOP + flows[i].lane * LANE_H + LANE_H / 2, x_of(flows[j].ts),
                    TOP + flows[j].lane * LANE_H + LANE_H / 2);
                break;
            }
    }
    legend_layout(names, nnames, 1, f, legend_y);
    fputs("</svg>\n", f);
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: devq-trace-svg [OPTION]... TRACE.json [OUT.svg] [TITLE]\n"
               "Render a DEVQ_TRACE file as an SVG timeline (to stdout when OUT is absent or -).\n"
               "\n"
               "  -o, --output FILE  write the SVG to FILE (as OUT.svg)\n"
               "  -t, --title TEXT   the picture's title (as TITLE; default \"devq trace\")\n"
               "  -h, --help         print this help and exit\n"
               "  -V, --version      print the version and exit\n"
               "\n"
               "Use -- before a file name that starts with '-'.\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "title", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const char *out_path = NULL, *title = NULL;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":o:t:hV", longopts, NULL)) != -1;) {
        switch (c) {
        case 'o':
            out_path = optarg;
            break;
        case 't':
            title = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("devq-trace-svg %s\n", PACKAGE_VERSION);
            return 0;
        case ':':
            fprintf(stderr, "devq-trace-svg: option '%s' needs a value\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        default:
            if (optopt)
                fprintf(stderr, "devq-trace-svg: unknown option '-%c'\n", optopt);
            else
                fprintf(stderr, "devq-trace-svg: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    int nargs = argc - optind;
    if (nargs < 1 || nargs > 3 || (nargs >= 2 && out_path) || (nargs == 3 && title)) {
        fprintf(stderr, "devq-trace-svg: %s\n",
                nargs < 1 ? "no trace file given"
                          : "too many arguments (OUT and TITLE are given once, by option or in place)");
        usage(stderr);
        return 2;
    }
    const char *trace = argv[optind];
    if (nargs >= 2)
        out_path = argv[optind + 1];
    if (nargs == 3)
        title = argv[optind + 2];
    FILE *in = fopen(trace, "r");
    if (!in) {
        fprintf(stderr, "devq-trace-svg: %s: %s\n", trace, strerror(errno));
        return 1;
    }
    int r = read_trace(in);
    fclose(in);
    if (r < 0) {
        fprintf(stderr, "devq-trace-svg: out of memory\n");
        return 1;
    }
    if (!nslices) {
        fprintf(stderr, "devq-trace-svg: %s has no op slices (was it written by DEVQ_TRACE?)\n", trace);
        return 1;
    }
    FILE *out = out_path && strcmp(out_path, "-") ? fopen(out_path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "devq-trace-svg: %s: %s\n", out_path, strerror(errno));
        return 1;
    }
    write_svg(out, title ? title : "devq trace");
    if (out != stdout ? fclose(out) != 0 : fflush(out) != 0) {
        fprintf(stderr, "devq-trace-svg: %s: %s\n", out_path ? out_path : "stdout", strerror(errno));
        return 1;
    }
    free(slices);
    free(flows);
    free(samples);
    return 0;
}
