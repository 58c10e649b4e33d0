/* SPDX-License-Identifier: MIT */
/* devq-trace-svg: render a DEVQ_TRACE file as an SVG timeline.
 *
 * One lane per queue (grouped by device), a box per op (allocations and
 * stream-ordered frees included), an arrow for every wait the tracker
 * inserted, and under each device a lane drawing its bytes-outstanding
 * counter as a step line.  It reads the one-event-per-line layout that
 * libdevq writes; other trace files are not supported.  No dependencies:
 * the SVG is written by hand. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LANES 64
#define WIDTH 1100.0
#define LEFT 200.0
#define LANE_H 34.0
#define TOP 64.0

struct lane { unsigned pid, tid; char name[160]; };
struct slice { int lane; double ts, dur; char name[160]; };
struct flowpt { unsigned long long id; int lane; double ts; int start; };
struct sample { unsigned pid; double ts, v; };

static struct lane lanes[MAX_LANES];
static int nlanes;
static char procs[MAX_LANES][160];
static unsigned proc_pid[MAX_LANES];
static int nprocs;
static struct slice *slices;
static size_t nslices, capslices;
static struct flowpt *flows;
static size_t nflows, capflows;
static struct sample *samples;       /* "bytes outstanding" counters, in file order */
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
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        default: fputc(*s, f);
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
                slices = realloc(slices, capslices * sizeof *slices);
                if (!slices)
                    return -ENOMEM;
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
                flows = realloc(flows, capflows * sizeof *flows);
                if (!flows)
                    return -ENOMEM;
            }
            flows[nflows++] = (struct flowpt){ (unsigned long long)id, l, ts, ph[0] == 's' };
        } else if (ph[0] == 'C') {
            double v = 0;
            const char *a = strstr(line, "\"args\":{");
            if (!field_str(line, "name", name, sizeof name) || strcmp(name, "bytes outstanding") ||
                !a || !field_num(a, "bytes", &v))
                continue;
            field_num(line, "ts", &ts);
            if (nsamples == capsamples) {
                capsamples = capsamples ? capsamples * 2 : 256;
                samples = realloc(samples, capsamples * sizeof *samples);
                if (!samples)
                    return -ENOMEM;
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
        int at = nlanes;   /* after the device's last lane, else at the end */
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

/* A step line of the device's bytes outstanding, scaled to its peak. */
static void draw_counter(FILE *f, int l, double t_min, double span)
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
        double x = LEFT + (samples[i].ts - t_min) / span * (WIDTH - LEFT - 20);
        if (x < LEFT)
            x = LEFT;
        double y = y0 - (peak > 0 ? samples[i].v / peak * h : 0);
        if (first)
            fprintf(f, "%.1f,%.1f ", LEFT, y0);
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", x, last, x, y);
        last = y;
        first = 0;
    }
    fprintf(f, "%.1f,%.1f\"><title>bytes outstanding, peak %s</title></polyline>\n",
            WIDTH - 20, last, p);
}

static void write_svg(FILE *f, const char *title)
{
    add_counter_lanes();
    double t_min = 1e300, t_max = 0;
    for (size_t i = 0; i < nslices; i++) {
        if (slices[i].ts < t_min)
            t_min = slices[i].ts;
        if (slices[i].ts + slices[i].dur > t_max)
            t_max = slices[i].ts + slices[i].dur;
    }
    if (!nslices)
        t_min = 0, t_max = 1;
    double span = t_max > t_min ? t_max - t_min : 1;
    double height = TOP + nlanes * LANE_H + 40;
#define X(t) (LEFT + ((t) - t_min) / span * (WIDTH - LEFT - 20))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", WIDTH, height);
    fprintf(f, "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
               "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333\"/></marker></defs>\n");
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
    xml_text(f, title);
    fprintf(f, "</text>\n<text x=\"10\" y=\"38\" fill=\"#555\">%.3f ms; boxes are ops on each queue's stream, arrows are waits the tracker inserted, the red line is device memory outstanding</text>\n",
            span / 1000.0);
    for (int l = 0; l < nlanes; l++) {
        double y = TOP + l * LANE_H;
        fprintf(f, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"%s\"/>\n", y, WIDTH, LANE_H,
                l % 2 ? "#f4f4f4" : "#fbfbfb");
        if (l == 0 || lanes[l].pid != lanes[l - 1].pid) {
            fprintf(f, "<text x=\"8\" y=\"%.1f\" font-size=\"9\" fill=\"#555\">", y + 10);
            xml_text(f, proc_name(lanes[l].pid));
            fputs("</text>\n", f);
        }
        fprintf(f, "<text x=\"8\" y=\"%.1f\">", y + LANE_H / 2 + 8);
        xml_text(f, lanes[l].name);
        fputs("</text>\n", f);
    }
    for (int k = 0; k <= 10; k++) {
        double t = t_min + span * k / 10;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" fill=\"#777\" text-anchor=\"middle\">%.1f ms</text>\n",
                X(t), TOP - 4, X(t), TOP + nlanes * LANE_H, X(t), TOP + nlanes * LANE_H + 16, (t - t_min) / 1000.0);
    }
    for (size_t i = 0; i < nslices; i++) {
        const struct slice *s = &slices[i];
        double x = X(s->ts), w = X(s->ts + s->dur) - x, y = TOP + s->lane * LANE_H + 5;
        if (w < 1)
            w = 1;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"#222\" stroke-width=\"0.3\"><title>",
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
            draw_counter(f, l, t_min, span);
    for (size_t i = 0; i < nflows; i++) {
        if (!flows[i].start)
            continue;
        for (size_t j = 0; j < nflows; j++)
            if (!flows[j].start && flows[j].id == flows[i].id) {
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1\" marker-end=\"url(#arrow)\"/>\n",
                        X(flows[i].ts), TOP + flows[i].lane * LANE_H + LANE_H / 2, X(flows[j].ts),
                        TOP + flows[j].lane * LANE_H + LANE_H / 2);
                break;
            }
    }
    fputs("</svg>\n", f);
#undef X
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: devq-trace-svg TRACE.json [OUT.svg] [TITLE]\n"
                "Render a DEVQ_TRACE file as an SVG timeline (stdout when OUT is absent or -).\n");
        return argc < 2 ? 2 : 0;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        fprintf(stderr, "devq-trace-svg: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    int r = read_trace(in);
    fclose(in);
    if (r < 0) {
        fprintf(stderr, "devq-trace-svg: out of memory\n");
        return 1;
    }
    if (!nslices) {
        fprintf(stderr, "devq-trace-svg: %s has no op slices (was it written by DEVQ_TRACE?)\n", argv[1]);
        return 1;
    }
    FILE *out = argc > 2 && strcmp(argv[2], "-") ? fopen(argv[2], "w") : stdout;
    if (!out) {
        fprintf(stderr, "devq-trace-svg: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    write_svg(out, argc > 3 ? argv[3] : "devq trace");
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "devq-trace-svg: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    free(slices);
    free(flows);
    free(samples);
    return 0;
}
