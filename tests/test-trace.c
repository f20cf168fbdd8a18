/*
 * bench/lib/trace (CSV job traces: parsing, limits, sorting, slices, gang shapes) and
 * bench/lib/sim (the trace-driven simulator around the real scheduler core) on hand-made traces
 * whose outcome is known. tests/data/traces/philly-head.csv is the first 200 rows of the Philly
 * trace (Jeon et al., USENIX ATC 2019, CC BY 4.0) as reduced by the Pollux artifact (Qiao et al.,
 * OSDI 2021).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lib/fairness.h"
#include "bench/lib/jobtrace.h"
#include "bench/lib/sim.h"
#include "bench/lib/sim-out.h"
#include "bench/lib/synth.h"
#include "bench/lib/trace.h"
#include "kube/kb-error.h"
#include "scheduler/conf.h"

#define HEADER "timestamp,duration,num_gpus,gpu_time,cluster\n"

static gint64 T0; /* 2017-10-01 00:00:00 UTC */

static KbTrace *parse_ok(const char *csv)
{
    g_autoptr(GError) error = NULL;
    KbTrace *t = kb_trace_parse(csv, strlen(csv), "t.csv", NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(t);
    return t;
}

static void parse_fails(const char *csv, const KbTraceParseOptions *opts, int code,
                        const char *want)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t = kb_trace_parse(csv, strlen(csv), "t.csv", opts, &error);
    g_assert_null(t);
    g_assert_error(error, KB_ERROR, code);
    if (strstr(error->message, want) == NULL)
        g_error("message \"%s\" lacks \"%s\"", error->message, want);
}

/* A buffer over the size limit fails before anything is read (no allocation of that size). */
static void parse_fails_len(gsize len)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t = kb_trace_parse(HEADER, len, "t.csv", NULL, &error);
    g_assert_null(t);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
}

static char *srcdir_path(const char *rel)
{
    const char *src = g_getenv("KB_SRCDIR");
    return g_build_filename(src != NULL ? src : ".", rel, NULL);
}

/* ---- parsing -------------------------------------------------------------------------------- */

static void test_parse_valid(void)
{
    /* Columns in another order, an extra column, CRLF, blank lines, a "T" separator. */
    const char *csv = "cluster,num_gpus,extra,duration,timestamp\r\n"
                      "\r\n"
                      "q1,8,x,66.5,2017-10-01 00:00:10\r\n"
                      "q-2,1,,0,2017-10-01T00:00:05\r\n"
                      "\n";
    g_autoptr(KbTrace) t = parse_ok(csv);
    g_assert_cmpuint(t->n_jobs, ==, 2);
    g_assert_cmpint(t->jobs[0].submit, ==, T0 + 10);
    g_assert_cmpfloat(t->jobs[0].duration, ==, 66.5);
    g_assert_cmpuint(t->jobs[0].num_gpus, ==, 8);
    g_assert_cmpstr(t->jobs[0].queue, ==, "q1");
    g_assert_cmpuint(t->jobs[0].line, ==, 3);
    g_assert_cmpint(t->jobs[1].submit, ==, T0 + 5);
    g_assert_cmpfloat(t->jobs[1].duration, ==, 0);
    g_assert_cmpstr(t->jobs[1].queue, ==, "q-2");
    g_assert_cmpuint(t->jobs[1].line, ==, 4);
    g_assert_cmpuint(t->n_skipped, ==, 0);
}

typedef struct {
    const char *row;
    int code;
    const char *want;
} BadRow;

static const BadRow bad_rows[] = {
        {"2017-10-01 00:00:00,10,1,10,q", -1, NULL}, /* control: valid */
        {"2017-10-01,10,1,10,q", KB_ERROR_DECODE, "t.csv:2: column 1 (timestamp): invalid time"},
        {"2017-02-30 00:00:00,10,1,10,q", KB_ERROR_DECODE, "\"2017-02-30 00:00:00\""},
        {"2017-10-01 24:00:00,10,1,10,q", KB_ERROR_DECODE, "column 1 (timestamp)"},
        {"2017-10-01 00:00:00,-1,1,10,q", KB_ERROR_DECODE, "column 2 (duration): invalid duration"},
        {"2017-10-01 00:00:00,nan,1,10,q", KB_ERROR_DECODE, "\"nan\""},
        {"2017-10-01 00:00:00,inf,1,10,q", KB_ERROR_DECODE, "\"inf\""},
        {"2017-10-01 00:00:00,10s,1,10,q", KB_ERROR_DECODE, "\"10s\""},
        {"2017-10-01 00:00:00,,1,10,q", KB_ERROR_DECODE, "column 2 (duration)"},
        {"2017-10-01 00:00:00,10,0,10,q", KB_ERROR_DECODE,
         "column 3 (num_gpus): invalid GPU count"},
        {"2017-10-01 00:00:00,10,1.5,10,q", KB_ERROR_DECODE, "\"1.5\""},
        {"2017-10-01 00:00:00,10,-2,10,q", KB_ERROR_DECODE, "\"-2\""},
        {"2017-10-01 00:00:00,10,abc,10,q", KB_ERROR_DECODE, "\"abc\""},
        {"2017-10-01 00:00:00,10,1,10,Q1", KB_ERROR_DECODE,
         "column 5 (cluster): invalid queue name"},
        {"2017-10-01 00:00:00,10,1,10,", KB_ERROR_DECODE, "column 5 (cluster)"},
        {"2017-10-01 00:00:00,10,1,10,-q", KB_ERROR_DECODE, "\"-q\""},
        {"2017-10-01 00:00:00,10,1,10,a b", KB_ERROR_DECODE, "\"a b\""},
        {"2017-10-01 00:00:00,10,1,q", KB_ERROR_DECODE, "t.csv:2: 4 fields, the header has 5"},
        {"2017-10-01 00:00:00,10,1,10,q,x", KB_ERROR_DECODE, "6 fields"},
        {"\"2017-10-01 00:00:00\",10,1,10,q", KB_ERROR_DECODE, "quoted fields are not supported"},
};

/* The generic format: aliases, seconds as submit times, optional pods/priority/expected. */
static void test_parse_generic(void)
{
    const char *csv = "submit_time,duration,gpus,pods,queue,priority,expected_duration\n"
                      "0,3600,16,4,research,0,7200\n"
                      "60,10,1,,dev,5,\n";
    g_autoptr(KbTrace) t = parse_ok(csv);
    g_assert_cmpuint(t->n_jobs, ==, 2);
    g_assert_cmpint(t->jobs[0].submit, ==, 0);
    g_assert_cmpuint(t->jobs[0].num_gpus, ==, 16);
    g_assert_cmpuint(t->jobs[0].pods, ==, 4);
    g_assert_cmpstr(t->jobs[0].queue, ==, "research");
    g_assert_cmpfloat(t->jobs[0].expected, ==, 7200);
    g_assert_cmpint(t->jobs[0].priority, ==, 0);
    g_assert_cmpint(t->jobs[1].submit, ==, 60);
    g_assert_cmpuint(t->jobs[1].pods, ==, 0);
    g_assert_cmpint(t->jobs[1].priority, ==, 5);
    g_assert_cmpfloat(t->jobs[1].expected, ==, 0);
    parse_fails("submit_time,duration,gpus,pods,queue\n0,1,16,3,a\n", NULL, KB_ERROR_DECODE,
                "t.csv:2: column 4 (pods): invalid pod count");
    parse_fails("submit_time,duration,gpus,queue,priority\n0,1,1,a,high\n", NULL, KB_ERROR_DECODE,
                "column 5 (priority): invalid priority");
    parse_fails("submit_time,duration,gpus,queue,expected_duration\n0,1,1,a,-3\n", NULL,
                KB_ERROR_DECODE, "column 5 (expected_duration)");
    /* The simulator takes the pod count and the priority as given. */
    g_autoptr(KbConf) conf = kb_conf_new_default();
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 4;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbSimReport) r = kb_sim_run(t, conf, &opts, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(r->jobs[0].n_pods, ==, 4);
    g_assert_true(r->jobs[1].high_priority);
    g_assert_false(r->jobs[0].high_priority);
}

/* --synthetic: deterministic per seed, distributions as asked, bad specs named. */
static void test_synthetic(void)
{
    const char *spec = "jobs=2000,rate=120,sizes=1:3/32:1,duration=exp:600,queues=2,seed=9";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) a = kb_trace_synthetic(spec, &error);
    g_assert_no_error(error);
    g_autoptr(KbTrace) b = kb_trace_synthetic(spec, &error);
    g_assert_cmpuint(a->n_jobs, ==, 2000);
    guint big = 0;
    double dur = 0;
    for (guint i = 0; i < a->n_jobs; i++) {
        g_assert_cmpint(a->jobs[i].submit, ==, b->jobs[i].submit);
        g_assert_cmpuint(a->jobs[i].num_gpus, ==, b->jobs[i].num_gpus);
        g_assert_true(a->jobs[i].num_gpus == 1 || a->jobs[i].num_gpus == 32);
        g_assert_true(strcmp(a->jobs[i].queue, "q0") == 0 || strcmp(a->jobs[i].queue, "q1") == 0);
        if (i > 0)
            g_assert_cmpint(a->jobs[i].submit, >=, a->jobs[i - 1].submit);
        big += a->jobs[i].num_gpus == 32;
        dur += a->jobs[i].duration;
    }
    /* A quarter are 32-GPU jobs; mean duration 600 s; 120 jobs per hour over ~16.7 h. */
    g_assert_cmpuint(big, >, 400);
    g_assert_cmpuint(big, <, 600);
    g_assert_cmpfloat(dur / a->n_jobs, >, 500);
    g_assert_cmpfloat(dur / a->n_jobs, <, 700);
    gint64 span = a->jobs[a->n_jobs - 1].submit - a->jobs[0].submit;
    g_assert_cmpint(span, >, 14 * 3600);
    g_assert_cmpint(span, <, 19 * 3600);
    g_autoptr(KbTrace) other = kb_trace_synthetic("jobs=10,seed=10", &error);
    g_assert_no_error(error);
    static const char *const bad[] = {"jobs=0",     "rate=-1", "sizes=1:0", "duration=weibull:3",
                                      "colour=red", "seed"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) e = NULL;
        g_autoptr(KbTrace) t = kb_trace_synthetic(bad[i], &e);
        g_assert_null(t);
        g_assert_error(e, KB_ERROR, KB_ERROR_INVALID);
        g_assert_nonnull(strstr(e->message, "--synthetic"));
    }
}

static void test_parse_malformed(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(bad_rows); i++) {
        g_autofree char *csv = g_strdup_printf(HEADER "%s\n", bad_rows[i].row);
        if (bad_rows[i].code < 0) {
            g_autoptr(KbTrace) t = parse_ok(csv);
            g_assert_cmpuint(t->n_jobs, ==, 1);
        } else {
            parse_fails(csv, NULL, bad_rows[i].code, bad_rows[i].want);
        }
    }
}

static void test_parse_header(void)
{
    parse_fails("", NULL, KB_ERROR_DECODE, "t.csv: empty (no header line)");
    parse_fails("\n\n", NULL, KB_ERROR_DECODE, "empty");
    parse_fails("timestamp,duration,cluster\n", NULL, KB_ERROR_DECODE,
                "t.csv:1: header has no column \"num_gpus\"");
    const char nul[] = HEADER "2017-10-01 00:00:00,1\0,1,1,q\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t = kb_trace_parse(nul, sizeof nul - 1, "t.csv", NULL, &error);
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_nonnull(strstr(error->message, "t.csv:2: NUL byte"));
}

static void test_parse_skip_bad_rows(void)
{
    const char *csv = HEADER "2017-10-01 00:00:00,10,1,10,q\n"
                             "2017-10-01 00:00:01,10,zero,10,q\n"
                             "2017-10-01 00:00:02,10,1,10,Bad\n"
                             "2017-10-01 00:00:03,10,2,20,q\n";
    KbTraceParseOptions opts = {.skip_bad_rows = TRUE};
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t = kb_trace_parse(csv, strlen(csv), "t.csv", &opts, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(t->n_jobs, ==, 2);
    g_assert_cmpuint(t->n_skipped, ==, 2);
    g_assert_nonnull(strstr(t->first_skipped, "t.csv:3: column 3 (num_gpus)"));
    /* Limits are not skipped. */
    const char *big = HEADER "2017-10-01 00:00:00,10,4097,10,q\n";
    parse_fails(big, &opts, KB_ERROR_LIMIT, "more GPUs than 4096");
}

static void test_parse_limits(void)
{
    /* GPUs per job: 4096 passes, 4097 fails. */
    g_autoptr(KbTrace) ok = parse_ok(HEADER "2017-10-01 00:00:00,10,4096,10,q\n");
    g_assert_cmpuint(ok->jobs[0].num_gpus, ==, 4096);
    parse_fails(HEADER "2017-10-01 00:00:00,10,4097,10,q\n", NULL, KB_ERROR_LIMIT,
                "column 3 (num_gpus): more GPUs than 4096");
    /* Duration: one year at most. */
    g_autoptr(KbTrace) year = parse_ok(HEADER "2017-10-01 00:00:00,31622400,1,1,q\n");
    g_assert_cmpuint(year->n_jobs, ==, 1);
    parse_fails(HEADER "2017-10-01 00:00:00,31622401,1,1,q\n", NULL, KB_ERROR_LIMIT,
                "duration over one year");
    /* Line length: 4096 bytes pass (padding in an ignored column), 4097 fail. */
    const char *row = "2017-10-01 00:00:00,10,1,10,q,";
    for (gsize extra = 0; extra <= 1; extra++) {
        g_autofree char *padding = g_strnfill(KB_TRACE_MAX_LINE - strlen(row) + extra, 'x');
        g_autofree char *csv = g_strdup_printf("timestamp,duration,num_gpus,gpu_time,cluster,pad\n"
                                               "%s%s\r\n",
                                               row, padding);
        if (extra == 0) {
            g_autoptr(KbTrace) t = parse_ok(csv);
            g_assert_cmpuint(t->n_jobs, ==, 1);
        } else {
            parse_fails(csv, NULL, KB_ERROR_LIMIT, "t.csv:2: line longer than 4096 bytes");
        }
    }
    /* Columns: 32 pass, 33 fail. */
    for (int n = 32; n <= 33; n++) {
        g_autoptr(GString) csv = g_string_new(HEADER);
        g_string_truncate(csv, csv->len - 1);
        for (int i = 5; i < n; i++)
            g_string_append_printf(csv, ",c%d", i);
        g_string_append(csv, "\n");
        if (n == 32) {
            g_autoptr(KbTrace) t = parse_ok(csv->str);
            g_assert_cmpuint(t->n_jobs, ==, 0);
        } else {
            parse_fails(csv->str, NULL, KB_ERROR_LIMIT, "header has more than 32 columns");
        }
    }
    /* Jobs: max_jobs pass, one more fails. */
    const char *three = HEADER "2017-10-01 00:00:00,1,1,1,q\n2017-10-01 00:00:01,1,1,1,q\n"
                               "2017-10-01 00:00:02,1,1,1,q\n";
    KbTraceParseOptions opts3 = {.max_jobs = 3}, opts2 = {.max_jobs = 2};
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t3 = kb_trace_parse(three, strlen(three), "t.csv", &opts3, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(t3->n_jobs, ==, 3);
    parse_fails(three, &opts2, KB_ERROR_LIMIT, "t.csv:4: more than 2 jobs");
    /* Distinct clusters: 1024 pass, 1025 fail. */
    for (int n = KB_TRACE_MAX_QUEUES; n <= KB_TRACE_MAX_QUEUES + 1; n++) {
        g_autoptr(GString) csv = g_string_new(HEADER);
        for (int i = 0; i < n; i++)
            g_string_append_printf(csv, "2017-10-01 00:00:00,1,1,1,q%d\n", i);
        if (n == KB_TRACE_MAX_QUEUES) {
            g_autoptr(KbTrace) t = parse_ok(csv->str);
            g_assert_cmpuint(t->n_jobs, ==, (guint)n);
        } else {
            parse_fails(csv->str, NULL, KB_ERROR_LIMIT, "more than 1024 distinct clusters");
        }
    }
    /* Queue name length: 63 pass, 64 fail. */
    for (gsize n = 63; n <= 64; n++) {
        g_autofree char *name = g_strnfill(n, 'a');
        g_autofree char *csv = g_strdup_printf(HEADER "2017-10-01 00:00:00,1,1,1,%s\n", name);
        if (n == 63) {
            g_autoptr(KbTrace) t = parse_ok(csv);
            g_assert_cmpuint(t->n_jobs, ==, 1);
        } else {
            parse_fails(csv, NULL, KB_ERROR_DECODE, "invalid queue name");
        }
    }
    /* Whole input. */
    parse_fails_len(KB_TRACE_MAX_BYTES + 1);
}

static void test_load_files(void)
{
    g_autofree char *path = srcdir_path("tests/data/traces/philly-head.csv");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t = kb_trace_load(path, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(t->n_jobs, ==, 200);
    /* First data row of the Philly trace. */
    g_assert_cmpstr(t->jobs[0].queue, ==, "11cb48");
    g_assert_cmpuint(t->jobs[0].num_gpus, ==, 1);
    g_assert_cmpfloat(t->jobs[0].duration, ==, 66.0);
    gint64 want;
    g_assert_true(kb_trace_parse_time("2017-10-09 07:01:55", &want));
    g_assert_cmpint(t->jobs[0].submit, ==, want);

    g_autoptr(GError) missing = NULL;
    g_autoptr(KbTrace) none = kb_trace_load("/nonexistent/trace.csv", NULL, &missing);
    g_assert_null(none);
    g_assert_nonnull(missing);
    g_assert_nonnull(strstr(missing->message, "trace.csv"));
}

/* ---- order, slices, shapes ------------------------------------------------------------------ */

static const char unsorted[] = HEADER "2017-10-01 00:00:30,10,1,10,b\n"
                                      "2017-10-01 00:00:10,20,2,40,a\n"
                                      "2017-10-01 00:00:30,30,4,120,a\n"
                                      "2017-10-01 00:00:00,40,8,320,c\n"
                                      "2017-10-01 01:00:00,50,1,50,b\n";

static void test_sort(void)
{
    g_autoptr(KbTrace) t = parse_ok(unsorted);
    kb_trace_sort(t);
    static const guint lines[] = {5, 3, 2, 4, 6}; /* equal times keep file order */
    for (guint i = 0; i < G_N_ELEMENTS(lines); i++)
        g_assert_cmpuint(t->jobs[i].line, ==, lines[i]);
    g_autoptr(GPtrArray) q = kb_trace_queues(t);
    g_assert_cmpuint(q->len, ==, 3);
    g_assert_cmpstr(q->pdata[0], ==, "a");
    g_assert_cmpstr(q->pdata[2], ==, "c");
    g_assert_cmpfloat(kb_trace_gpu_seconds(t), ==, 10 + 40 + 120 + 320 + 50);
}

static void test_select(void)
{
    g_autoptr(KbTrace) t = parse_ok(unsorted); /* unsorted input is fine */
    g_autoptr(GError) error = NULL;
    KbTraceSelection all = {0};
    g_autoptr(KbTrace) s0 = kb_trace_select(t, &all, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(s0->n_jobs, ==, 5);
    g_assert_cmpuint(s0->jobs[0].line, ==, 5);

    KbTraceSelection cut = {.skip = 1, .max_jobs = 2};
    g_autoptr(KbTrace) s1 = kb_trace_select(t, &cut, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(s1->n_jobs, ==, 2);
    g_assert_cmpuint(s1->jobs[0].line, ==, 3);
    g_assert_cmpuint(s1->jobs[1].line, ==, 2);

    KbTraceSelection from = {.from = T0 + 20, .window = 3600};
    g_autoptr(KbTrace) s2 = kb_trace_select(t, &from, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(s2->n_jobs, ==, 3); /* 00:00:30 twice, 01:00:00 (3570 s after the first) */
    from.window = 3570;
    g_autoptr(KbTrace) s2b = kb_trace_select(t, &from, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(s2b->n_jobs, ==, 2);

    KbTraceSelection scaled = {.duration_scale = 0.5, .arrival_scale = 2};
    g_autoptr(KbTrace) s3 = kb_trace_select(t, &scaled, &error);
    g_assert_no_error(error);
    g_assert_cmpint(s3->jobs[0].submit, ==, T0);
    g_assert_cmpint(s3->jobs[1].submit, ==, T0 + 20);
    g_assert_cmpint(s3->jobs[4].submit, ==, T0 + 7200);
    g_assert_cmpfloat(s3->jobs[0].duration, ==, 20);

    KbTraceSelection late = {.from = T0 + 86400};
    g_autoptr(KbTrace) s4 = kb_trace_select(t, &late, &error);
    g_assert_null(s4);
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
    g_clear_error(&error);
    KbTraceSelection bad = {.duration_scale = -1};
    g_autoptr(KbTrace) s5 = kb_trace_select(t, &bad, &error);
    g_assert_null(s5);
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
}

typedef struct {
    guint gpus, per_node;
    KbTracePack pack;
    guint pods, per_pod;
} ShapeCase;

static const ShapeCase shapes[] = {
        {1, 8, KB_TRACE_PACK_NODE, 1, 1},    {4, 8, KB_TRACE_PACK_NODE, 1, 4},
        {8, 8, KB_TRACE_PACK_NODE, 1, 8},    {12, 8, KB_TRACE_PACK_NODE, 2, 6},
        {16, 8, KB_TRACE_PACK_NODE, 2, 8},   {24, 8, KB_TRACE_PACK_NODE, 3, 8},
        {128, 8, KB_TRACE_PACK_NODE, 16, 8}, {13, 8, KB_TRACE_PACK_NODE, 13, 1},
        {16, 4, KB_TRACE_PACK_NODE, 4, 4},   {16, 8, KB_TRACE_PACK_ONE, 16, 1},
        {2, 1, KB_TRACE_PACK_NODE, 2, 1},
};

static void test_gang_shape(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(shapes); i++) {
        const ShapeCase *c = &shapes[i];
        guint per = 0;
        guint pods = kb_trace_gang_shape(c->gpus, c->per_node, c->pack, &per);
        g_assert_cmpuint(pods, ==, c->pods);
        g_assert_cmpuint(per, ==, c->per_pod);
    }
    KbTracePack p;
    g_assert_true(kb_trace_pack_from_string("one", &p) && p == KB_TRACE_PACK_ONE);
    g_assert_true(kb_trace_pack_from_string("node", &p) && p == KB_TRACE_PACK_NODE);
    g_assert_false(kb_trace_pack_from_string("eight", &p));
}

/* ---- simulator ------------------------------------------------------------------------------ */

static const char gang_only_yaml[] = "actions: \"allocate\"\n"
                                     "tiers:\n- plugins:\n  - name: gang\n"
                                     "- plugins:\n  - name: predicates\n";
static const char no_gang_yaml[] = "actions: \"allocate\"\n"
                                   "tiers:\n- plugins:\n  - name: predicates\n";
static const char fifo_yaml[] = "actions: \"enqueue, allocate\"\n"
                                "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
                                "- plugins:\n  - name: predicates\n  - name: nodeorder\n";

static KbConf *conf_parse(const char *yaml)
{
    g_autoptr(GError) error = NULL;
    KbConf *c = yaml != NULL ? kb_conf_parse(yaml, strlen(yaml), &error) : kb_conf_new_default();
    g_assert_no_error(error);
    return c;
}

/* A trace from "offset_seconds gpus duration queue" lines (offsets from T0, in order). */
static KbTrace *trace_of(const char *const *rows, guint n)
{
    g_autoptr(GString) csv = g_string_new(HEADER);
    for (guint i = 0; i < n; i++) {
        int off, gpus;
        double dur;
        char queue[64];
        if (sscanf(rows[i], "%d %d %lf %63s", &off, &gpus, &dur, queue) != 4)
            g_error("bad test row %s", rows[i]);
        g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(T0 + off);
        g_autofree char *ts = g_date_time_format(dt, "%Y-%m-%d %H:%M:%S");
        g_string_append_printf(csv, "%s,%g,%d,%g,%s\n", ts, dur, gpus, dur * gpus, queue);
    }
    KbTrace *t = parse_ok(csv->str);
    kb_trace_sort(t);
    return t;
}

static KbSimReport *simulate(const KbTrace *t, const char *yaml, guint nodes, guint gpus,
                             KbTracePack pack, gboolean single_queue)
{
    g_autoptr(KbConf) conf = conf_parse(yaml);
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = nodes;
    opts.gpus_per_node = gpus;
    opts.pack = pack;
    opts.single_queue = single_queue;
    g_autoptr(GError) error = NULL;
    KbSimReport *r = kb_sim_run(t, conf, &opts, &error);
    g_assert_no_error(error);
    return r;
}

static void test_sim_gang_too_big(void)
{
    static const char *const rows[] = {"0 16 100 a", "1 4 50 a"};
    g_autoptr(KbTrace) t = trace_of(rows, G_N_ELEMENTS(rows));
    g_autoptr(KbSimReport) r = simulate(t, NULL, 1, 8, KB_TRACE_PACK_NODE, FALSE);
    g_assert_cmpuint(r->n_jobs, ==, 2);
    g_assert_cmpuint(r->n_finished, ==, 1);
    g_assert_cmpuint(r->n_started, ==, 1);
    /* The 16-GPU gang never starts and the scheduler says why; the small job is not blocked. */
    g_assert_cmpint(r->jobs[0].start, ==, -1);
    g_assert_cmpint(r->jobs[0].finish, ==, -1);
    g_assert_cmpuint(r->jobs[0].n_pods, ==, 2);
    g_assert_nonnull(r->jobs[0].reason);
    g_assert_nonnull(r->jobs[0].message);
    g_assert_nonnull(strstr(r->jobs[0].message, "nvidia.com/gpu"));
    g_assert_cmpint(r->jobs[1].start, ==, T0 + 1);
    g_assert_cmpint(r->jobs[1].finish, ==, T0 + 51);
    g_assert_cmpint(r->makespan, ==, 51);
    g_assert_cmpuint(r->partial_gpus_peak, ==, 0);
}

static void test_sim_completion_frees(void)
{
    static const char *const rows[] = {"0 8 100 a", "10 8 49.2 a"};
    g_autoptr(KbTrace) t = trace_of(rows, G_N_ELEMENTS(rows));
    g_autoptr(KbSimReport) r = simulate(t, NULL, 1, 8, KB_TRACE_PACK_NODE, FALSE);
    g_assert_cmpuint(r->n_finished, ==, 2);
    g_assert_cmpint(r->jobs[0].start, ==, T0);
    g_assert_cmpint(r->jobs[0].finish, ==, T0 + 100);
    g_assert_cmpint(r->jobs[1].start, ==, T0 + 100);  /* the GPUs its predecessor freed */
    g_assert_cmpint(r->jobs[1].finish, ==, T0 + 150); /* 49.2 s rounds up to 50 */
    g_assert_cmpfloat(r->wait_mean, ==, 45);
    g_assert_cmpfloat(r->jct_mean, ==, (100 + 140) / 2.0);
    g_assert_cmpfloat(r->jct_p99, ==, 140);
    g_assert_cmpint(r->makespan, ==, 150);
    g_assert_cmpfloat_with_epsilon(r->util_busy, 1.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(r->util_busy_arrivals, 1.0, 1e-9);
    g_assert_cmpuint(r->n_queues, ==, 1);
    g_assert_cmpfloat(r->queues[0].received_gpu_s, ==, 8 * 150);
    g_assert_cmpfloat(r->queues[0].demand_gpu_s, ==, 8 * 100 + 8 * 49.2);
    g_assert_cmpfloat(r->jain, ==, -1); /* one queue: never contended */
}

/* How many of @queue's jobs started at @when. */
static guint started_at(const KbSimReport *r, const char *queue, gint64 when)
{
    guint n = 0;
    for (guint i = 0; i < r->n_jobs; i++) {
        if (strcmp(r->jobs[i].queue, queue) == 0 && r->jobs[i].start == when)
            n++;
    }
    return n;
}

static void two_queue_trace(GPtrArray *rows)
{
    for (int i = 0; i < 16; i++)
        g_ptr_array_add(rows, "0 1 100 a");
    for (int i = 0; i < 8; i++)
        g_ptr_array_add(rows, "1 1 100 b");
}

static void test_sim_two_queues(void)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new();
    two_queue_trace(rows);
    g_autoptr(KbTrace) t = trace_of((const char *const *)rows->pdata, rows->len);

    /* proportion: once a's first jobs end, a and b split the 8 GPUs by weight. */
    g_autoptr(KbSimReport) fair = simulate(t, NULL, 1, 8, KB_TRACE_PACK_NODE, FALSE);
    g_assert_cmpuint(fair->n_finished, ==, 24);
    g_assert_cmpuint(started_at(fair, "a", T0), ==, 8);
    g_assert_cmpuint(started_at(fair, "a", T0 + 100), ==, 4);
    g_assert_cmpuint(started_at(fair, "b", T0 + 100), ==, 4);
    g_assert_cmpuint(started_at(fair, "a", T0 + 200), ==, 4);
    g_assert_cmpuint(started_at(fair, "b", T0 + 200), ==, 4);
    /* Jain: 0.5 while a holds everything (99 s), 1 while they split (100 s). */
    g_assert_cmpfloat_with_epsilon(fair->jain, (0.5 * 99 + 100) / 199, 1e-9);
    g_assert_cmpfloat(fair->queues[1].received_gpu_s, ==, 8 * 100);

    /* One FIFO queue: a's older jobs all go first. */
    g_autoptr(KbSimReport) fifo = simulate(t, fifo_yaml, 1, 8, KB_TRACE_PACK_NODE, TRUE);
    g_assert_cmpuint(fifo->n_finished, ==, 24);
    g_assert_cmpuint(started_at(fifo, "a", T0 + 100), ==, 8);
    g_assert_cmpuint(started_at(fifo, "b", T0 + 200), ==, 8);
    g_assert_cmpfloat_with_epsilon(fifo->jain, 0.5, 1e-9);
    g_assert_cmpfloat(fifo->queues[1].wait_mean, ==, 199);
    g_assert_cmpfloat(fair->queues[1].wait_mean, ==, (99 * 4 + 199 * 4) / 8.0);

    /* Weights: b weighs 3, so it deserves 6 of the 8 GPUs once a's first jobs end. */
    g_autoptr(KbConf) conf = conf_parse(NULL);
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 1;
    g_autoptr(GHashTable) w = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(w, "b", GINT_TO_POINTER(3));
    opts.weights = w;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbSimReport) weighted = kb_sim_run(t, conf, &opts, &error);
    g_assert_no_error(error);
    g_assert_cmpint(weighted->queues[1].weight, ==, 3);
    g_assert_cmpuint(started_at(weighted, "b", T0 + 100), ==, 6);
    g_assert_cmpuint(started_at(weighted, "a", T0 + 100), ==, 2);
}

static void test_sim_partial_gangs(void)
{
    /* X takes 4 of 8 GPUs; Y wants 8 one-GPU pods; Z wants 2. */
    static const char *const rows[] = {"0 4 100 a", "1 8 10 a", "2 2 10 a"};
    g_autoptr(KbTrace) t = trace_of(rows, G_N_ELEMENTS(rows));

    /* gang: Y's 4 placeable pods are discarded, so Z runs at once. */
    g_autoptr(KbSimReport) gang = simulate(t, gang_only_yaml, 1, 8, KB_TRACE_PACK_ONE, FALSE);
    g_assert_cmpuint(gang->n_finished, ==, 3);
    g_assert_cmpfloat(gang->partial_gpu_s, ==, 0);
    g_assert_cmpuint(gang->partial_gpus_peak, ==, 0);
    g_assert_cmpint(gang->jobs[2].start, ==, T0 + 2);
    g_assert_cmpint(gang->jobs[1].start, ==, T0 + 100);

    /* no gang: Y binds 4 pods that hold their GPUs idle for 99 s and Z waits behind them. */
    g_autoptr(KbSimReport) loose = simulate(t, no_gang_yaml, 1, 8, KB_TRACE_PACK_ONE, FALSE);
    g_assert_cmpuint(loose->n_finished, ==, 3);
    g_assert_cmpfloat(loose->partial_gpu_s, ==, 4 * 99);
    g_assert_cmpuint(loose->partial_gpus_peak, ==, 4);
    g_assert_cmpuint(loose->partial_gpus_end, ==, 0);
    g_assert_cmpint(loose->jobs[1].start, ==, T0 + 100);
    g_assert_cmpint(loose->jobs[2].start, ==, T0 + 110);
    g_assert_cmpfloat(loose->util_alloc, >, loose->util_busy);
}

static KbTrace *small_trace(void)
{
    g_autofree char *path = srcdir_path("tests/data/traces/small.csv");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) all = kb_trace_load(path, NULL, &error);
    g_assert_no_error(error);
    KbTraceSelection sel = {0};
    KbTrace *t = kb_trace_select(all, &sel, &error);
    g_assert_no_error(error);
    return t;
}

static void assert_same_jobs(const KbSimReport *a, const KbSimReport *b)
{
    g_assert_cmpuint(a->n_jobs, ==, b->n_jobs);
    g_assert_cmpuint(a->n_finished, ==, b->n_finished);
    for (guint i = 0; i < a->n_jobs; i++) {
        g_assert_cmpint(a->jobs[i].start, ==, b->jobs[i].start);
        g_assert_cmpint(a->jobs[i].finish, ==, b->jobs[i].finish);
    }
    g_assert_cmpfloat_with_epsilon(a->jain, b->jain, 1e-9);
    g_assert_cmpfloat_with_epsilon(a->partial_gpu_s, b->partial_gpu_s, 1e-6);
}

static KbSimReport *simulate_opts(const KbTrace *t, const char *yaml, const KbSimOptions *opts)
{
    g_autoptr(KbConf) conf = conf_parse(yaml);
    g_autoptr(GError) error = NULL;
    KbSimReport *r = kb_sim_run(t, conf, opts, &error);
    g_assert_no_error(error);
    return r;
}

/*
 * Elastic jobs (min_fraction 0.5, a pod per GPU): three 8-GPU jobs of minimum 4 on one 8-GPU
 * node. The first two start at once at their minimum; the third waits for the first to end, and
 * the second grows into the GPUs the first left only after the third took its minimum.
 */
static void test_sim_elastic_minimums(void)
{
    static const char *const rows[] = {"0 8 100 a", "0 8 300 a", "0 8 100 a"};
    g_autoptr(KbTrace) t = trace_of(rows, G_N_ELEMENTS(rows));
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 1;
    opts.pack = KB_TRACE_PACK_ONE;
    opts.min_fraction = 0.5;
    g_autoptr(KbSimReport) r = simulate_opts(t, fifo_yaml, &opts);
    g_assert_cmpuint(r->n_finished, ==, 3);
    g_assert_cmpint(r->jobs[0].start, ==, T0);
    g_assert_cmpint(r->jobs[1].start, ==, T0);
    g_assert_cmpint(r->jobs[2].start, ==, T0 + 100);
    g_assert_cmpint(r->jobs[1].finish, ==, T0 + 300);
    g_assert_cmpint(r->jobs[2].finish, ==, T0 + 200);
    /* Held and working: 8 GPUs from 0 to 200 (4 + 4, then 4 + 4 again), then job 1 alone: its 4
     * and the 4 it grew into at 200 (job 2's), until 300. */
    g_assert_cmpfloat(r->partial_gpu_s, ==, 0);
    g_assert_cmpuint(r->partial_gpus_end, ==, 0);
    g_assert_cmpfloat_with_epsilon(r->util_busy, 1.0, 1e-9);

    /* Rigid gangs (the default): one job at a time. */
    opts.min_fraction = 0;
    g_autoptr(KbSimReport) rigid = simulate_opts(t, fifo_yaml, &opts);
    g_assert_cmpint(rigid->jobs[1].start, ==, T0 + 100);
    g_assert_cmpint(rigid->jobs[2].start, ==, T0 + 400);

    opts.min_fraction = 1.5;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = conf_parse(fifo_yaml);
    g_assert_null(kb_sim_run(t, conf, &opts, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "1.5"));
}

/* Skipping the seconds in which nothing changed gives what a cycle every second gives. */
static void test_sim_idle_seconds(void)
{
    g_autoptr(KbTrace) t = small_trace();
    const char *confs[] = {NULL, no_gang_yaml};
    for (guint c = 0; c < G_N_ELEMENTS(confs); c++) {
        KbSimOptions opts;
        kb_sim_options_init(&opts);
        opts.n_nodes = 2;
        g_autoptr(KbSimReport) events = simulate_opts(t, confs[c], &opts);
        opts.every_period = TRUE;
        g_autoptr(KbSimReport) every = simulate_opts(t, confs[c], &opts);
        g_assert_cmpuint(every->n_cycles, >, events->n_cycles * 10);
        g_assert_cmpuint(events->n_finished, >=, 20);
        assert_same_jobs(events, every);
    }
}

/* Deleting finished jobs, keeping them, or restarting the cache from the live objects changes
 * no decision; runs are deterministic. */
static void test_sim_restart(void)
{
    g_autoptr(KbTrace) t = small_trace();
    const char *confs[] = {NULL, fifo_yaml};
    for (guint c = 0; c < G_N_ELEMENTS(confs); c++) {
        KbSimOptions opts;
        kb_sim_options_init(&opts);
        opts.n_nodes = 2;
        opts.single_queue = confs[c] == fifo_yaml;
        g_autoptr(KbSimReport) deleted = simulate_opts(t, confs[c], &opts);
        g_assert_cmpuint(deleted->n_cache_restarts, ==, 0);
        opts.delete_finished = FALSE;
        opts.restart_after = G_MAXUINT;
        g_autoptr(KbSimReport) kept = simulate_opts(t, confs[c], &opts);
        g_autoptr(KbSimReport) again = simulate_opts(t, confs[c], &opts);
        g_assert_cmpuint(kept->n_cache_restarts, ==, 0);
        assert_same_jobs(kept, again);
        assert_same_jobs(kept, deleted);
        opts.restart_after = 1;
        g_autoptr(KbSimReport) restarted = simulate_opts(t, confs[c], &opts);
        g_assert_cmpuint(restarted->n_cache_restarts, >=, 1);
        assert_same_jobs(kept, restarted);
        if (opts.single_queue)
            g_assert_cmpuint(restarted->n_cache_restarts, >=, 5);
    }
}

/* ---- evictions ------------------------------------------------------------------------------ */

#define NO_MIN_RUN_TIME                                                                            \
    "configurations:\n"                                                                            \
    "- name: preempt\n  arguments: {minRunTime: \"0\"}\n"                                          \
    "- name: reclaim\n  arguments: {minRunTime: \"0\"}\n"

/* The default configuration's tiers with @actions. */
static char *default_with_actions(const char *actions)
{
    const char *tiers = strstr(kb_conf_default_yaml(), "tiers:");
    g_assert_nonnull(tiers);
    /* These cases are about what an eviction does to the replay, so the victims' minimum run
     * time (10m by default, tested in test-sched-preempt) is off. */
    return g_strdup_printf("actions: \"%s\"\n%s%s", actions, tiers, NO_MIN_RUN_TIME);
}

static KbSimReport *simulate_high(const KbTrace *t, const char *yaml, KbTracePack pack,
                                  const gboolean *high, KbSimRestartCost cost)
{
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 1;
    opts.pack = pack;
    opts.high = high;
    opts.restart_cost = cost;
    return simulate_opts(t, yaml, &opts);
}

/*
 * A low-priority job holds the whole node; a high-priority 8-pod gang arrives at 10 s. preempt
 * evicts the low one at 10 s, the gang binds at the next cycle (11 s) and ends at 111 s, and the
 * victim, waiting again, starts over at 111 s: with its full 1000 s it ends at 1111 s, having lost
 * 8 GPUs x 10 s; when it checkpointed, its remaining 990 s end it at 1101 s.
 */
static void test_sim_preempt(void)
{
    static const char *const rows[] = {"0 8 1000 a", "10 8 100 a"};
    static const gboolean high[] = {FALSE, TRUE};
    g_autoptr(KbTrace) t = trace_of(rows, G_N_ELEMENTS(rows));
    g_autofree char *pr = default_with_actions("enqueue, allocate, preempt, reclaim");

    g_autoptr(KbSimReport) r = simulate_high(t, pr, KB_TRACE_PACK_ONE, high, KB_SIM_RESTART_FULL);
    g_assert_cmpuint(r->n_finished, ==, 2);
    g_assert_cmpint(r->jobs[1].start, ==, T0 + 11);
    g_assert_cmpint(r->jobs[1].finish, ==, T0 + 111);
    g_assert_cmpint(r->jobs[0].start, ==, T0);
    g_assert_cmpint(r->jobs[0].last_start, ==, T0 + 111);
    g_assert_cmpint(r->jobs[0].finish, ==, T0 + 1111);
    g_assert_cmpuint(r->jobs[0].n_evictions, ==, 1);
    g_assert_cmpuint(r->jobs[1].n_evictions, ==, 0);
    g_assert_cmpuint(r->n_evicted_pods, ==, 8);
    g_assert_cmpuint(r->n_preempted, ==, 1);
    g_assert_cmpuint(r->n_reclaimed, ==, 0);
    g_assert_cmpuint(r->n_jobs_evicted, ==, 1);
    g_assert_cmpuint(r->max_job_evictions, ==, 1);
    g_assert_cmpint(r->jobs[0].ran, ==, 10 + 1000);
    g_assert_cmpfloat(r->idle_mean, ==, (101 + 1) / 2.0); /* JCT - time run: 1111-1010, 101-100 */
    g_assert_cmpfloat(r->evicted_gpu_s, ==, 8 * 10);
    g_assert_cmpfloat(r->lost_gpu_s, ==, 8 * 10);
    g_assert_cmpuint(r->n_high, ==, 1);
    g_assert_cmpfloat(r->high_wait_mean, ==, 1);
    g_assert_cmpfloat(r->low_jct_mean, ==, 1111);
    g_assert_cmpint(r->makespan, ==, 1111);
    /* Held GPUs over the run: 8 throughout but the second between eviction and bind. */
    g_assert_cmpfloat(r->queues[0].received_gpu_s, ==, 8 * 1110);

    g_autoptr(KbSimReport) kept =
            simulate_high(t, pr, KB_TRACE_PACK_ONE, high, KB_SIM_RESTART_NONE);
    g_assert_cmpint(kept->jobs[1].start, ==, T0 + 11);
    g_assert_cmpint(kept->jobs[0].finish, ==, T0 + 1101);
    g_assert_cmpfloat(kept->evicted_gpu_s, ==, 8 * 10);
    g_assert_cmpfloat(kept->lost_gpu_s, ==, 0);

    /* One pod per job (node packing): one eviction. */
    g_autoptr(KbSimReport) packed =
            simulate_high(t, pr, KB_TRACE_PACK_NODE, high, KB_SIM_RESTART_FULL);
    g_assert_cmpuint(packed->n_evicted_pods, ==, 1);
    g_assert_cmpint(packed->jobs[0].finish, ==, T0 + 1111);

    /* Without preempt (the default configuration) the gang waits for the node. */
    g_autoptr(KbSimReport) plain =
            simulate_high(t, NULL, KB_TRACE_PACK_ONE, high, KB_SIM_RESTART_FULL);
    g_assert_cmpint(plain->jobs[1].start, ==, T0 + 1000);
    g_assert_cmpint(plain->jobs[0].finish, ==, T0 + 1000);
    g_assert_cmpuint(plain->n_evicted_pods, ==, 0);
    g_assert_cmpfloat(plain->lost_gpu_s, ==, 0);

    /* Equal priorities: nothing to preempt for. */
    static const gboolean none[] = {FALSE, FALSE};
    g_autoptr(KbSimReport) equal =
            simulate_high(t, pr, KB_TRACE_PACK_ONE, none, KB_SIM_RESTART_FULL);
    g_assert_cmpint(equal->jobs[1].start, ==, T0 + 1000);
    g_assert_cmpuint(equal->n_evicted_pods, ==, 0);
}

/* How many of @queue's jobs finished at @when. */
static guint finished_at(const KbSimReport *r, const char *queue, gint64 when)
{
    guint n = 0;
    for (guint i = 0; i < r->n_jobs; i++) {
        if (strcmp(r->jobs[i].queue, queue) == 0 && r->jobs[i].finish == when)
            n++;
    }
    return n;
}

/*
 * Queue a borrows the whole node with eight 1-GPU jobs; queue b (equal weight, so it deserves
 * 4 GPUs) asks 4 at 10 s. reclaim evicts four of a's jobs at 10 s (a keeps its share of 4), b's
 * job runs 11..111 s, and the four victims start over at 111 s and end at 1111 s.
 */
static void test_sim_reclaim(void)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new();
    for (int i = 0; i < 8; i++)
        g_ptr_array_add(rows, "0 1 1000 a");
    g_ptr_array_add(rows, "10 4 100 b");
    g_autoptr(KbTrace) t = trace_of((const char *const *)rows->pdata, rows->len);
    g_autofree char *pr = default_with_actions("enqueue, allocate, preempt, reclaim");

    g_autoptr(KbSimReport) r = simulate_high(t, pr, KB_TRACE_PACK_NODE, NULL, KB_SIM_RESTART_FULL);
    g_assert_cmpuint(r->n_finished, ==, 9);
    g_assert_cmpint(r->jobs[8].start, ==, T0 + 11);
    g_assert_cmpint(r->jobs[8].finish, ==, T0 + 111);
    g_assert_cmpuint(finished_at(r, "a", T0 + 1000), ==, 4);
    g_assert_cmpuint(finished_at(r, "a", T0 + 1111), ==, 4);
    g_assert_cmpuint(r->n_reclaimed, ==, 4);
    g_assert_cmpuint(r->n_preempted, ==, 0);
    g_assert_cmpuint(r->n_evicted_pods, ==, 4);
    g_assert_cmpuint(r->n_jobs_evicted, ==, 4);
    g_assert_cmpfloat(r->lost_gpu_s, ==, 4 * 10);
    g_assert_cmpfloat(r->queues[1].wait_mean, ==, 1);

    /* Without reclaim b waits for a's jobs to end. */
    g_autoptr(KbSimReport) plain =
            simulate_high(t, NULL, KB_TRACE_PACK_NODE, NULL, KB_SIM_RESTART_FULL);
    g_assert_cmpint(plain->jobs[8].start, ==, T0 + 1000);
    g_assert_cmpuint(plain->n_evicted_pods, ==, 0);
    g_assert_cmpfloat(r->jain, >, plain->jain);
}

/* On a real slice with a tenth of the jobs high priority: evictions happen, every job still
 * finishes, skipping idle seconds changes nothing and runs are deterministic. */
static void test_sim_evictions_replay(void)
{
    g_autoptr(KbTrace) t = small_trace();
    g_autofree char *pr = default_with_actions("enqueue, allocate, preempt, reclaim");
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 2;
    opts.high_fraction = 0.1;
    g_autoptr(KbSimReport) events = simulate_opts(t, pr, &opts);
    g_autoptr(KbSimReport) again = simulate_opts(t, pr, &opts);
    assert_same_jobs(events, again);
    g_assert_cmpuint(events->n_high, >, 0);
    g_assert_cmpuint(events->n_high, <, events->n_jobs / 2);
    g_assert_cmpuint(events->n_preempted + events->n_reclaimed, >, 0);
    g_assert_cmpuint(events->n_evicted_pods, >=, events->n_preempted + events->n_reclaimed);
    g_assert_cmpfloat(events->lost_gpu_s, >, 0);
    for (guint i = 0; i < events->n_jobs; i++)
        g_assert_false(events->jobs[i].running);
    opts.every_period = TRUE;
    g_autoptr(KbSimReport) every = simulate_opts(t, pr, &opts);
    assert_same_jobs(events, every);
    g_assert_cmpuint(every->n_evicted_pods, ==, events->n_evicted_pods);
}

static void test_sim_high_priority_choice(void)
{
    guint n = 0;
    for (guint line = 2; line < 10002; line++) {
        gboolean h = kb_sim_is_high_priority(line, 0.1);
        g_assert_true(h == kb_sim_is_high_priority(line, 0.1));
        g_assert_false(kb_sim_is_high_priority(line, 0));
        g_assert_true(kb_sim_is_high_priority(line, 1));
        n += h;
    }
    g_assert_cmpuint(n, >, 900);
    g_assert_cmpuint(n, <, 1100);
    KbSimRestartCost c = KB_SIM_RESTART_FULL;
    g_assert_true(kb_sim_restart_cost_from_string("none", &c) && c == KB_SIM_RESTART_NONE);
    g_assert_true(kb_sim_restart_cost_from_string("full", &c) && c == KB_SIM_RESTART_FULL);
    g_assert_false(kb_sim_restart_cost_from_string("half", &c));
    g_assert_cmpstr(kb_sim_restart_cost_to_string(KB_SIM_RESTART_NONE), ==, "none");
}

/* ---- reservations (scheduler/reserve.h) ---------------------------------------------------- */

/* kube-batch as it shipped (bench-trace's "kube-batch" configuration). */
static const char kube_batch_yaml[] =
        "actions: \"allocate, backfill\"\n"
        "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
        "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
        "  - name: nodeorder\n    arguments:\n      nodeorder.leastrequested.weight: 1\n"
        "      nodeorder.mostrequested.weight: 0\n";

static char *reserve_yaml(void)
{
    const char *tiers = strstr(kb_conf_default_yaml(), "tiers:");
    g_assert_nonnull(tiers);
    return g_strdup_printf("actions: \"enqueue, reserve, allocate\"\n%s", tiers);
}

static gint str_offset_cmp(gconstpointer a, gconstpointer b)
{
    int x = atoi(*(char *const *)a), y = atoi(*(char *const *)b);
    return x < y ? -1 : x > y;
}

/*
 * Two nodes of 8 GPUs; 4-GPU jobs of 100 s arrive every 25 s from 0 to 2000 s, so the cluster is
 * never empty; a 16-GPU gang arrives at 10 s. (@extra: more rows.)
 */
static KbTrace *starving_trace(const char *const *extra, guint n_extra)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(g_free);
    for (int off = 0; off <= 2000; off += 25)
        g_ptr_array_add(rows, g_strdup_printf("%d 4 100 a", off));
    g_ptr_array_add(rows, g_strdup("10 16 500 a"));
    for (guint i = 0; i < n_extra; i++)
        g_ptr_array_add(rows, g_strdup(extra[i]));
    /* trace_of wants submit order. */
    g_ptr_array_sort(rows, str_offset_cmp);
    return trace_of((const char *const *)rows->pdata, rows->len);
}

static const KbSimJobResult *job_of(const KbSimReport *r, gint64 submit, guint gpus, gint64 dur)
{
    for (guint i = 0; i < r->n_jobs; i++) {
        const KbSimJobResult *j = &r->jobs[i];
        if (j->submit == T0 + submit && j->num_gpus == gpus &&
            (dur < 0 || (j->finish >= 0 && j->finish - j->last_start == dur)))
            return j;
    }
    g_error("no job submitted at %" G_GINT64_FORMAT " with %u GPUs", submit, gpus);
    return NULL;
}

static KbSimReport *simulate_est(const KbTrace *t, const char *yaml, double factor)
{
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 2;
    opts.estimate_factor = factor;
    return simulate_opts(t, yaml, &opts);
}

/* Under kube-batch the gang waits until the stream of small jobs ends; with a reservation it
 * starts when the capacity it reserved frees (the first small job ends at 100 s). */
static void test_sim_reserve_no_starvation(void)
{
    g_autoptr(KbTrace) t = starving_trace(NULL, 0);
    g_autoptr(KbSimReport) kb = simulate_est(t, kube_batch_yaml, 1);
    g_autofree char *yaml = reserve_yaml();
    g_autoptr(KbSimReport) rs = simulate_est(t, yaml, 1);
    const KbSimJobResult *big_kb = job_of(kb, 10, 16, -1);
    const KbSimJobResult *big_rs = job_of(rs, 10, 16, -1);
    g_assert_cmpint(big_kb->start, >, T0 + 2000);
    g_assert_cmpint(big_rs->start, >=, T0 + 100);
    g_assert_cmpint(big_rs->start, <=, T0 + 101);
    /* Everything ends either way: no deadlock. */
    g_assert_cmpuint(kb->n_finished, ==, kb->n_jobs);
    g_assert_cmpuint(rs->n_finished, ==, rs->n_jobs);
    g_assert_cmpuint(rs->buckets[3].n_started, ==, 1); /* 9-16 GPUs */
    g_assert_cmpfloat(rs->buckets[3].wait_p99, <, kb->buckets[3].wait_p99 / 2);
}

/*
 * A 4-GPU job of 50 s at 20 s ends before the reservation starts (100 s): it backfills at once.
 * The small jobs of 100 s arriving meanwhile would run across the start: they wait for the gang.
 * Without estimates nothing may use the reserved capacity.
 */
static void test_sim_reserve_backfill_in_time(void)
{
    static const char *const extra[] = {"20 4 50 a"};
    g_autoptr(KbTrace) t = starving_trace(extra, G_N_ELEMENTS(extra));
    g_autofree char *yaml = reserve_yaml();
    g_autoptr(KbSimReport) r = simulate_est(t, yaml, 1);
    const KbSimJobResult *big = job_of(r, 10, 16, -1);
    const KbSimJobResult *shortj = job_of(r, 20, 4, 50);
    const KbSimJobResult *longj = job_of(r, 25, 4, 100);
    g_assert_cmpint(shortj->start, ==, T0 + 20);
    g_assert_cmpint(big->start, <=, T0 + 101);
    g_assert_cmpint(longj->start, >=, big->start);
    g_autoptr(KbSimReport) none = simulate_est(t, yaml, 0);
    const KbSimJobResult *short0 = job_of(none, 20, 4, 50);
    const KbSimJobResult *big0 = job_of(none, 10, 16, -1);
    g_assert_cmpint(short0->start, >=, big0->start);
    g_assert_cmpuint(none->n_finished, ==, none->n_jobs);
}

/* With preempt and reclaim too, over two queues and two priorities: everything still ends. */
static void test_sim_reserve_with_evictions(void)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(g_free);
    for (int off = 0; off <= 1500; off += 25)
        g_ptr_array_add(rows, g_strdup_printf("%d %d %d %s", off, off % 50 == 0 ? 4 : 2,
                                              off % 75 == 0 ? 400 : 100, off % 2 ? "a" : "b"));
    g_ptr_array_add(rows, g_strdup("10 16 500 a"));
    g_ptr_array_add(rows, g_strdup("30 16 300 b"));
    g_ptr_array_sort(rows, str_offset_cmp);
    g_autoptr(KbTrace) t = trace_of((const char *const *)rows->pdata, rows->len);
    g_autofree gboolean *high = g_new0(gboolean, t->n_jobs);
    for (guint i = 0; i < t->n_jobs; i++)
        high[i] = i % 7 == 3;
    g_autofree char *yaml = default_with_actions("enqueue, reserve, allocate, preempt, reclaim");
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 2;
    opts.high = high;
    g_autoptr(KbSimReport) r = simulate_opts(t, yaml, &opts);
    g_assert_cmpuint(r->n_finished, ==, r->n_jobs);
    g_assert_cmpuint(r->buckets[3].n_finished, ==, 2);
}

/* ---- skipping the cycles due while nothing waits (bench/lib/sim.c, settle) ------------------ */

/* Every figure and every job's outcome, as bench-trace prints or writes them. */
static void assert_same_report(const KbSimReport *a, const KbSimReport *b)
{
    g_assert_cmpuint(a->n_jobs, ==, b->n_jobs);
    g_assert_cmpuint(a->n_started, ==, b->n_started);
    g_assert_cmpuint(a->n_finished, ==, b->n_finished);
    g_assert_cmpint(a->end, ==, b->end);
    g_assert_cmpint(a->makespan, ==, b->makespan);
    g_assert_cmpuint(a->n_placements, ==, b->n_placements);
    g_assert_cmpuint(a->n_evicted_pods, ==, b->n_evicted_pods);
    g_assert_cmpuint(a->n_preempted, ==, b->n_preempted);
    g_assert_cmpuint(a->n_reclaimed, ==, b->n_reclaimed);
    g_assert_cmpuint(a->partial_gpus_peak, ==, b->partial_gpus_peak);
    const double figures[][2] = {
            {a->jct_mean, b->jct_mean},           {a->jct_p99, b->jct_p99},
            {a->wait_mean, b->wait_mean},         {a->wait_p99, b->wait_p99},
            {a->util_busy, b->util_busy},         {a->util_alloc, b->util_alloc},
            {a->partial_gpu_s, b->partial_gpu_s}, {a->jain, b->jain},
            {a->contended_s, b->contended_s},     {a->lost_gpu_s, b->lost_gpu_s},
            {a->idle_mean, b->idle_mean},         {a->max_unstarted_wait, b->max_unstarted_wait},
    };
    for (guint i = 0; i < G_N_ELEMENTS(figures); i++)
        g_assert_cmpfloat(figures[i][0], ==, figures[i][1]);
    for (guint k = 0; k < KB_SIM_N_BUCKETS; k++)
        g_assert_cmpmem(&a->buckets[k], sizeof a->buckets[k], &b->buckets[k], sizeof b->buckets[k]);
    g_assert_cmpuint(a->n_samples, ==, b->n_samples);
    g_assert_cmpmem(a->samples, a->n_samples * sizeof *a->samples, b->samples,
                    b->n_samples * sizeof *b->samples);
    g_assert_cmpuint(a->n_queues, ==, b->n_queues);
    for (guint q = 0; q < a->n_queues; q++) {
        g_assert_cmpfloat(a->queues[q].received_gpu_s, ==, b->queues[q].received_gpu_s);
        g_assert_cmpfloat(a->queues[q].jct_mean, ==, b->queues[q].jct_mean);
    }
    for (guint i = 0; i < a->n_jobs; i++) {
        const KbSimJobResult *x = &a->jobs[i], *y = &b->jobs[i];
        g_assert_cmpint(x->start, ==, y->start);
        g_assert_cmpint(x->last_start, ==, y->last_start);
        g_assert_cmpint(x->finish, ==, y->finish);
        g_assert_cmpint(x->ran, ==, y->ran);
        g_assert_cmpuint(x->n_evictions, ==, y->n_evictions);
        g_assert_cmpstr(x->phase, ==, y->phase);
        g_assert_cmpstr(x->reason, ==, y->reason);
        g_assert_cmpstr(x->message, ==, y->message);
    }
}

/*
 * The simulator does not run the cycles due while nothing waits. On the head of the Philly trace
 * (a load that comes and goes on 3 nodes) and on a synthetic load, for every kind of
 * configuration (gang or not, one queue, kube-batch's backfill, reservations with announced or
 * history-based runtimes, evictions with high-priority jobs): skipping changes no figure against
 * running every cycle, skips cycles at all, skips exactly the cycles that then do not run, and
 * check_skips (which runs the skipped cycles and aborts unless each did only what the simulator
 * assumes) passes.
 */
static void test_sim_skip_idle_cycles(void)
{
    g_autofree char *path = srcdir_path("tests/data/traces/philly-head.csv");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) philly = kb_trace_load(path, NULL, &error);
    g_assert_no_error(error);
    kb_trace_sort(philly);
    g_autoptr(KbTrace) synth = kb_trace_synthetic("jobs=300,rate=40,seed=3", &error);
    g_assert_no_error(error);
    g_autofree char *reserve = reserve_yaml();
    g_autofree char *evict = default_with_actions("enqueue, allocate, preempt, reclaim");
    g_autofree char *evict_reserve =
            default_with_actions("enqueue, reserve, allocate, preempt, reclaim");
    /* keep: finished jobs stay in the cache, which restarts from the live objects (and the
     * PodGroup phases the simulator wrote) every 16 finished jobs; nothing is skipped then. */
    const struct {
        const char *yaml;
        gboolean single_queue;
        double high;
        gboolean keep;
        double estimate_factor; /* 0: no annotation, reservations estimate from history */
    } confs[] = {{NULL, FALSE, 0, FALSE, 1},         {fifo_yaml, TRUE, 0, FALSE, 1},
                 {no_gang_yaml, FALSE, 0, FALSE, 1}, {kube_batch_yaml, FALSE, 0, FALSE, 1},
                 {reserve, FALSE, 0, FALSE, 1},      {reserve, FALSE, 0, FALSE, 0},
                 {evict, FALSE, 0.3, FALSE, 1},      {evict_reserve, FALSE, 0.3, FALSE, 1},
                 {NULL, FALSE, 0, TRUE, 1},          {evict, FALSE, 0.3, TRUE, 1}};
    const KbTrace *traces[] = {philly, synth};
    for (guint t = 0; t < G_N_ELEMENTS(traces); t++) {
        for (guint c = 0; c < G_N_ELEMENTS(confs); c++) {
            KbSimOptions opts;
            kb_sim_options_init(&opts);
            opts.n_nodes = t == 0 ? 6 : 4;
            opts.single_queue = confs[c].single_queue;
            opts.high_fraction = confs[c].high;
            opts.delete_finished = !confs[c].keep;
            opts.restart_after = confs[c].keep ? 16 : 0;
            opts.estimate_factor = confs[c].estimate_factor;
            g_autoptr(KbSimReport) skip = simulate_opts(traces[t], confs[c].yaml, &opts);
            opts.no_skip = TRUE;
            g_autoptr(KbSimReport) all = simulate_opts(traces[t], confs[c].yaml, &opts);
            opts.no_skip = FALSE;
            opts.check_skips = TRUE;
            g_autoptr(KbSimReport) checked = simulate_opts(traces[t], confs[c].yaml, &opts);
            g_test_message(
                    "trace %u conf %u: %u cycles + %u skipped, %u finished, %u evicted, wait %.0f",
                    t, c, skip->n_cycles, skip->n_cycles_skipped, skip->n_finished,
                    skip->n_preempted + skip->n_reclaimed, skip->wait_mean);
            /* Finished jobs kept in the cache are reported Completed by the next cycle: the
             * simulator does not skip then. */
            if (confs[c].keep)
                g_assert_cmpuint(skip->n_cycles_skipped, ==, 0);
            else
                g_assert_cmpuint(skip->n_cycles_skipped, >, 0);
            g_assert_cmpuint(all->n_cycles_skipped, ==, 0);
            g_assert_cmpuint(skip->n_cycles + skip->n_cycles_skipped, ==, all->n_cycles);
            g_assert_cmpuint(checked->n_cycles, ==, skip->n_cycles);
            g_assert_cmpuint(checked->n_cycles_skipped, ==, skip->n_cycles_skipped);
            g_assert_cmpuint(skip->n_finished, >, skip->n_jobs / 2);
            if (confs[c].keep)
                g_assert_cmpuint(skip->n_cache_restarts, >=, 2);
            assert_same_report(skip, all);
            assert_same_report(checked, all);
        }
    }
    /* Runtimes learnt from history end at the clock of the cycle after the job finished: a load
     * where they decide reservations (skipping without stamping them differed here). */
    g_autoptr(KbTrace) busy = kb_trace_synthetic("jobs=400,rate=40,seed=2", &error);
    g_assert_no_error(error);
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 8;
    opts.estimate_factor = 0;
    g_autoptr(KbSimReport) skip = simulate_opts(busy, NULL, &opts);
    opts.no_skip = TRUE;
    g_autoptr(KbSimReport) all = simulate_opts(busy, NULL, &opts);
    g_assert_cmpuint(skip->n_cycles_skipped, >, 0);
    assert_same_report(skip, all);
}

static void test_sim_invalid(void)
{
    g_autoptr(KbTrace) t = parse_ok(unsorted);
    g_autoptr(KbConf) conf = conf_parse(NULL);
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbSimReport) r1 = kb_sim_run(t, conf, &opts, &error);
    g_assert_null(r1);
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "not sorted"));
    g_clear_error(&error);
    kb_trace_sort(t);
    opts.n_nodes = 0;
    g_autoptr(KbSimReport) r2 = kb_sim_run(t, conf, &opts, &error);
    g_assert_null(r2);
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
    g_clear_error(&error);
    opts.n_nodes = 1;
    opts.gpus_per_node = KB_SIM_MAX_GPUS_PER_NODE + 1;
    g_autoptr(KbSimReport) r3 = kb_sim_run(t, conf, &opts, &error);
    g_assert_null(r3);
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
    g_clear_error(&error);
    kb_sim_options_init(&opts);
    opts.high_fraction = 1.01;
    g_autoptr(KbSimReport) r4 = kb_sim_run(t, conf, &opts, &error);
    g_assert_null(r4);
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "1.01"));
    g_clear_error(&error);
    opts.high_fraction = 1;
    g_autoptr(KbSimReport) r5 = kb_sim_run(t, conf, &opts, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(r5->n_high, ==, r5->n_jobs);
}

static void test_percentile(void)
{
    double v[10];
    for (int i = 0; i < 10; i++)
        v[i] = 10 - i;
    g_assert_cmpfloat(kb_sim_percentile(v, 10, 50), ==, 5);
    g_assert_cmpfloat(kb_sim_percentile(v, 10, 10), ==, 1);
    g_assert_cmpfloat(kb_sim_percentile(v, 10, 95), ==, 10);
    g_assert_cmpfloat(kb_sim_percentile(v, 10, 100), ==, 10);
    g_assert_cmpfloat(kb_sim_percentile(v, 0, 50), ==, 0);
}

/* --wait-reasons: numbers and quoted names folded; the time between cycles goes to the message a
 * waiting job held, with whether GPUs were idle. */
static void test_jobtrace_fold(void)
{
    g_autofree char *f = kb_jobtrace_fold("queue \"q1\" has 3.5 nvidia.com/gpu left (12/16)");
    g_assert_cmpstr(f, ==, "queue \"Q\" has N nvidia.com/gpu left (N/N)");
    g_autofree char *g = kb_jobtrace_fold("unterminated \"quote");
    g_assert_cmpstr(g, ==, "unterminated ");
}

static void test_jobtrace_reasons(void)
{
    /* One 8-GPU node: the second 8-GPU job waits the 100 s the first runs, the cluster full. */
    static const char *const rows[] = {"0 8 100 a", "0 8 50 a"};
    g_autoptr(KbTrace) t = trace_of(rows, G_N_ELEMENTS(rows));
    g_autoptr(KbConf) conf = conf_parse(NULL);
    g_autofree char *out = NULL;
    gsize len = 0;
    FILE *f = open_memstream(&out, &len);
    const char *const jobs[] = {"a/j000001", NULL};
    g_autoptr(KbJobTrace) jt = kb_jobtrace_new(jobs, TRUE, 8, f);
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 1;
    opts.gpus_per_node = 8;
    opts.on_cycle = kb_jobtrace_on_cycle;
    opts.on_cycle_data = jt;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbSimReport) r = kb_sim_run(t, conf, &opts, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->jobs[1].start - r->jobs[0].start, ==, 100);
    kb_jobtrace_print(jt, 5);
    fclose(f);
    g_assert_nonnull(strstr(out, "trace a/j000001 t="));
    g_assert_nonnull(strstr(out, "Running 1/1 placed"));
    g_assert_nonnull(strstr(out, "[cluster full]"));
    g_assert_cmpfloat(kb_jobtrace_seconds(jt, "[cluster full]"), ==, 100);
    g_assert_cmpfloat(kb_jobtrace_seconds(jt, NULL), ==, 100);
    g_assert_nonnull(strstr(out, "why jobs waited"));
}

/* One cycle's queue figures for the fairness report: @n queues (name, GPUs held, GPUs asked). */
static void fairness_sample(KbFairness *f, gint64 now, const char *const *names, const int *held,
                            const int *asked, guint n)
{
    KbCycleResult r = {.now = now};
    r.queue_statuses = g_array_new(FALSE, TRUE, sizeof(KbQueueStatus));
    for (guint i = 0; i < n; i++) {
        KbQueueStatus qs = {.name = g_intern_string(names[i]),
                            .parent = g_intern_static_string("root"),
                            .weight = 1};
        qs.allocated.v[KB_RES_GPU] = held[i] * KB_GPU_MILLI;
        qs.request.v[KB_RES_GPU] = asked[i] * KB_GPU_MILLI;
        g_array_append_val(r.queue_statuses, qs);
    }
    kb_fairness_on_cycle(&r, f);
    g_array_unref(r.queue_statuses);
}

/* Two equal queues asking for the whole 8 GPUs for a day: one holding all 8 gets 2x what it is
 * entitled to, the other nothing (Jain 0.5); 4 each is fair. Queues asking less than their half
 * are entitled to what they ask. */
static void test_fairness_windows(void)
{
    static const char *const names[] = {"a", "b"};
    static const int all_a[] = {8, 0}, asked[] = {8, 8}, half[] = {4, 4};
    g_autoptr(KbFairness) f = kb_fairness_new(8, 86400);
    fairness_sample(f, 0, names, all_a, asked, 2);
    fairness_sample(f, 86400, names, half, asked, 2);
    KbFairnessSummary s;
    kb_fairness_summary(f, 2 * 86400, &s);
    g_assert_cmpuint(s.n_windows, ==, 2);
    g_assert_cmpfloat_with_epsilon(s.worst_min, 0, 1e-9);
    g_assert_cmpstr(s.worst_queue, ==, "b");
    g_assert_cmpuint(s.worst_min_window, ==, 0);
    g_assert_cmpfloat_with_epsilon(s.worst_mean, 0.5, 1e-9); /* 0 the first day, 1 the second */
    g_assert_cmpfloat_with_epsilon(s.jain_min, 0.5, 1e-9);
    g_assert_cmpfloat_with_epsilon(s.jain_mean, 0.75, 1e-9);

    static const int small_b[] = {6, 2}, asked_small[] = {8, 2};
    g_autoptr(KbFairness) g = kb_fairness_new(8, 86400);
    fairness_sample(g, 0, names, small_b, asked_small, 2);
    kb_fairness_summary(g, 86400, &s);
    g_assert_cmpuint(s.n_windows, ==, 1);
    g_assert_cmpfloat_with_epsilon(s.worst_min, 1, 1e-9); /* b: 2 of 2, a: 6 of 6 */
    g_assert_cmpfloat_with_epsilon(s.jain_min, 1, 1e-9);
}

/* --compare-jobs: per bucket the jobs that waited longer or shorter than in the baseline (by over
 * a minute), and those with the most added wait; a job never started waits until the end. */
static void test_job_diffs(void)
{
    KbSimJobResult a[4] = {{.index = 0, .queue = "q", .num_gpus = 1, .submit = 100, .start = 100},
                           {.index = 1, .queue = "q", .num_gpus = 1, .submit = 100, .start = 130},
                           {.index = 2, .queue = "r", .num_gpus = 32, .submit = 200, .start = 900},
                           {.index = 3, .queue = "r", .num_gpus = 4, .submit = 300, .start = 400}};
    KbSimJobResult b[4];
    memcpy(b, a, sizeof a);
    b[0].start = 400; /* 300 s longer */
    b[1].start = 150; /* 20 s: no difference */
    b[2].start = 250; /* 650 s shorter */
    b[3].start = -1;  /* never: waits until the end, 1000 */
    KbSimReport base = {.n_jobs = 4, .first_submit = 100, .end = 1300, .jobs = a};
    KbSimReport r = {.n_jobs = 4, .first_submit = 100, .end = 1300, .jobs = b};
    KbSimDiffBucket k[KB_SIM_N_BUCKETS];
    g_autoptr(GArray) top = kb_sim_job_diffs(&base, &r, 1, 5, k);
    g_assert_nonnull(top);
    g_assert_cmpuint(k[0].worse, ==, 1);
    g_assert_cmpfloat(k[0].worse_s, ==, 300);
    g_assert_cmpuint(k[0].better, ==, 0);
    g_assert_cmpuint(k[kb_sim_bucket(32)].better, ==, 1);
    g_assert_cmpfloat(k[kb_sim_bucket(32)].better_s, ==, 650);
    g_assert_cmpuint(k[kb_sim_bucket(4)].worse, ==, 1);
    g_assert_cmpuint(top->len, ==, 2);
    const KbSimJobDiff *d = &g_array_index(top, KbSimJobDiff, 0);
    g_assert_cmpuint(d->index, ==, 3); /* 900 s added, then job 0's 300 */
    g_assert_cmpfloat(d->wait, ==, 1000);
    g_assert_cmpint(d->submit, ==, 200);
    g_assert_cmpuint(g_array_index(top, KbSimJobDiff, 1).index, ==, 0);
    g_autoptr(GArray) big = kb_sim_job_diffs(&base, &r, 17, 5, k);
    g_assert_cmpuint(big->len, ==, 0); /* the only 32-GPU job waited less */
    r.n_jobs = 3;
    g_assert_null(kb_sim_job_diffs(&base, &r, 1, 5, k));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_assert_true(kb_trace_parse_time("2017-10-01 00:00:00", &T0));
    g_test_add_func("/bench/trace/parse/valid", test_parse_valid);
    g_test_add_func("/bench/trace/parse/malformed", test_parse_malformed);
    g_test_add_func("/bench/trace/parse/generic", test_parse_generic);
    g_test_add_func("/bench/trace/synthetic", test_synthetic);
    g_test_add_func("/bench/trace/parse/header", test_parse_header);
    g_test_add_func("/bench/trace/parse/skip-bad-rows", test_parse_skip_bad_rows);
    g_test_add_func("/bench/trace/parse/limits", test_parse_limits);
    g_test_add_func("/bench/trace/load/files", test_load_files);
    g_test_add_func("/bench/trace/sort", test_sort);
    g_test_add_func("/bench/trace/select", test_select);
    g_test_add_func("/bench/trace/gang-shape", test_gang_shape);
    g_test_add_func("/bench/sim/gang-larger-than-cluster", test_sim_gang_too_big);
    g_test_add_func("/bench/jobtrace/fold", test_jobtrace_fold);
    g_test_add_func("/bench/jobtrace/reasons", test_jobtrace_reasons);
    g_test_add_func("/bench/fairness/windows", test_fairness_windows);
    g_test_add_func("/bench/sim/job-diffs", test_job_diffs);
    g_test_add_func("/bench/sim/completion-frees-gpus", test_sim_completion_frees);
    g_test_add_func("/bench/sim/two-queues", test_sim_two_queues);
    g_test_add_func("/bench/sim/partial-gangs", test_sim_partial_gangs);
    g_test_add_func("/bench/sim/elastic-minimums", test_sim_elastic_minimums);
    g_test_add_func("/bench/sim/idle-seconds-change-nothing", test_sim_idle_seconds);
    g_test_add_func("/bench/sim/cache-restart", test_sim_restart);
    g_test_add_func("/bench/sim/evictions/preempt-restarts-victim", test_sim_preempt);
    g_test_add_func("/bench/sim/evictions/reclaim-returns-share", test_sim_reclaim);
    g_test_add_func("/bench/sim/evictions/replay", test_sim_evictions_replay);
    g_test_add_func("/bench/sim/evictions/high-priority-choice", test_sim_high_priority_choice);
    g_test_add_func("/bench/sim/reserve/no-starvation", test_sim_reserve_no_starvation);
    g_test_add_func("/bench/sim/reserve/backfill-in-time", test_sim_reserve_backfill_in_time);
    g_test_add_func("/bench/sim/reserve/with-evictions", test_sim_reserve_with_evictions);
    g_test_add_func("/bench/sim/skip-idle-cycles-changes-nothing", test_sim_skip_idle_cycles);
    g_test_add_func("/bench/sim/invalid", test_sim_invalid);
    g_test_add_func("/bench/sim/percentile", test_percentile);
    return g_test_run();
}
