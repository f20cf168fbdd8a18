/* JSON summaries and gnuplot plots of simulation reports; see sim-out.h. */
#include "bench/lib/sim-out.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

#define MAX_SERIES_POINTS 4000
#define MAX_CDF_POINTS    400
#define ALL_BUCKETS       KB_SIM_N_BUCKETS /* CDF over every job */

/* ---- JSON ----------------------------------------------------------------------------------- */

static json_object *stats(double mean, double p50, double p95, double p99)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "mean", json_object_new_double(mean));
    if (p50 >= 0)
        json_object_object_add(o, "p50", json_object_new_double(p50));
    json_object_object_add(o, "p95", json_object_new_double(p95));
    json_object_object_add(o, "p99", json_object_new_double(p99));
    return o;
}

static json_object *run_json(const KbSimNamed *run)
{
    const KbSimReport *r = run->report;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(run->name));
    json_object_object_add(o, "jobs", json_object_new_int64(r->n_jobs));
    json_object_object_add(o, "started", json_object_new_int64(r->n_started));
    json_object_object_add(o, "finished", json_object_new_int64(r->n_finished));
    json_object_object_add(o, "never_started", json_object_new_int64(r->n_jobs - r->n_started));
    json_object_object_add(o, "jct", stats(r->jct_mean, r->jct_p50, r->jct_p95, r->jct_p99));
    json_object_object_add(o, "wait", stats(r->wait_mean, r->wait_p50, r->wait_p95, r->wait_p99));
    json_object_object_add(o, "util_busy", json_object_new_double(r->util_busy));
    json_object_object_add(o, "util_busy_arrivals", json_object_new_double(r->util_busy_arrivals));
    json_object_object_add(o, "makespan", json_object_new_int64(r->makespan));
    json_object_object_add(o, "job_evictions",
                           json_object_new_int64((gint64)r->n_preempted + r->n_reclaimed));
    json_object_object_add(o, "lost_gpu_hours", json_object_new_double(r->lost_gpu_s / 3600));
    json_object *cyc = json_object_new_object();
    json_object_object_add(cyc, "mean", json_object_new_double(r->cycle_us_mean));
    json_object_object_add(cyc, "p99", json_object_new_double(r->cycle_us_p99));
    json_object_object_add(cyc, "max", json_object_new_double(r->cycle_us_max));
    json_object_object_add(o, "cycle_us", cyc);
    json_object_object_add(o, "cycles", json_object_new_int64(r->n_cycles));
    json_object_object_add(o, "cycles_skipped", json_object_new_int64(r->n_cycles_skipped));
    json_object_object_add(o, "wall_s", json_object_new_double(r->wall_s));
    json_object_object_add(o, "cpu_s", json_object_new_double(r->cpu_s));
    json_object *buckets = json_object_new_array();
    for (guint b = 0; b < KB_SIM_N_BUCKETS; b++) {
        const KbSimBucket *k = &r->buckets[b];
        json_object *bo = json_object_new_object();
        json_object_object_add(bo, "gpus", json_object_new_string(kb_sim_bucket_label(b)));
        json_object_object_add(bo, "jobs", json_object_new_int64(k->n_jobs));
        json_object_object_add(bo, "started", json_object_new_int64(k->n_started));
        json_object_object_add(bo, "finished", json_object_new_int64(k->n_finished));
        json_object_object_add(bo, "wait", stats(k->wait_mean, -1, k->wait_p95, k->wait_p99));
        json_object_object_add(bo, "jct", stats(k->jct_mean, -1, k->jct_p95, k->jct_p99));
        json_object_array_add(buckets, bo);
    }
    json_object_object_add(o, "buckets", buckets);
    return o;
}

gboolean kb_sim_write_summary_json(const char *path, const char *about, const KbSimNamed *runs,
                                   guint n, GError **error)
{
    json_object *root = json_object_new_object();
    json_object_object_add(root, "trace", json_object_new_string(about != NULL ? about : ""));
    json_object *arr = json_object_new_array();
    for (guint i = 0; i < n; i++)
        json_object_array_add(arr, run_json(&runs[i]));
    json_object_object_add(root, "configurations", arr);
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
    g_autoptr(GError) err = NULL;
    gboolean ok = g_file_set_contents(path, text, -1, &err);
    json_object_put(root);
    if (!ok) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "--summary-json %s: %s", path, err->message);
        return FALSE;
    }
    return TRUE;
}

/* ---- plot data ------------------------------------------------------------------------------ */

static gboolean write_file(const char *dir, const char *name, GString *text, GError **error)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_file_set_contents(path, text->str, (gssize)text->len, &err)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "--plot: %s: %s", path, err->message);
        return FALSE;
    }
    return TRUE;
}

/* Days since the first submit, GPUs busy, jobs waiting; at most MAX_SERIES_POINTS rows, each
 * bucket of samples shown by its peak (a thinned series must not hide bursts). */
static void series_data(const KbSimReport *r, GString *out)
{
    guint stride = MAX(1, (r->n_samples + MAX_SERIES_POINTS - 1) / MAX_SERIES_POINTS);
    for (guint i = 0; i < r->n_samples; i += stride) {
        guint busy = 0, waiting = 0;
        for (guint k = i; k < MIN(i + stride, r->n_samples); k++) {
            busy = MAX(busy, r->samples[k].gpus_busy);
            waiting = MAX(waiting, r->samples[k].waiting);
        }
        g_string_append_printf(out, "%.5f\t%u\t%u\n",
                               (double)(r->samples[i].t - r->first_submit) / 86400.0, busy,
                               waiting);
    }
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* CDF rows "hours fraction" of the waits (@jct FALSE) or JCTs of the jobs of @bucket. Values
 * below one minute are shown at one minute (log axis). */
static void cdf_data(const KbSimReport *r, guint bucket, gboolean jct, GString *out)
{
    g_autofree double *v = g_new(double, MAX(r->n_jobs, 1));
    guint n = 0;
    for (guint i = 0; i < r->n_jobs; i++) {
        const KbSimJobResult *j = &r->jobs[i];
        if (bucket != ALL_BUCKETS && kb_sim_bucket(j->num_gpus) != bucket)
            continue;
        gint64 end = jct ? j->finish : j->start;
        if (end < 0)
            continue;
        v[n++] = MAX((double)(end - j->submit), 60.0) / 3600.0;
    }
    if (n == 0) {
        /* One point at the axis' origin: gnuplot refuses a panel without any data. */
        g_string_append(out, "# no jobs\n0.0166667\t0\n");
        return;
    }
    qsort(v, n, sizeof(double), double_cmp);
    guint stride = MAX(1, n / MAX_CDF_POINTS);
    for (guint i = 0; i < n; i += stride)
        g_string_append_printf(out, "%.6g\t%.6f\n", v[i], (double)(i + 1) / n);
    g_string_append_printf(out, "%.6g\t1\n", v[n - 1]);
}

static gboolean write_data(const char *dir, const KbSimNamed *runs, guint n, GError **error)
{
    for (guint i = 0; i < n; i++) {
        g_autoptr(GString) s = g_string_new("# days\tgpus_busy\tjobs_waiting\n");
        series_data(runs[i].report, s);
        g_autofree char *name = g_strdup_printf("series-%u.dat", i);
        if (!write_file(dir, name, s, error))
            return FALSE;
        for (guint b = 0; b <= ALL_BUCKETS; b++) {
            for (int jct = 0; jct <= 1; jct++) {
                g_autoptr(GString) c = g_string_new("# hours\tfraction\n");
                cdf_data(runs[i].report, b, jct, c);
                g_autofree char *cn = g_strdup_printf("%s-%u-%u.dat", jct ? "jct" : "wait", i, b);
                if (!write_file(dir, cn, c, error))
                    return FALSE;
            }
        }
    }
    return TRUE;
}

/* ---- the gnuplot script --------------------------------------------------------------------- */

static void plot_lines(GString *gp, const KbSimNamed *runs, guint n, const char *fmt, guint bucket,
                       const char *using, const char *style)
{
    g_string_append(gp, "plot ");
    for (guint i = 0; i < n; i++) {
        g_autofree char *file = g_strdup_printf(fmt, i, bucket);
        g_string_append_printf(gp, "%s'%s' using %s with %s lw 2 title '%s'", i > 0 ? ", " : "",
                               file, using, style, runs[i].name);
    }
    g_string_append(gp, "\n");
}

static void figure(GString *gp, const char *term, const char *out, const char *title)
{
    g_string_append_printf(gp, "set terminal %s\nset output '%s'\nset title \"%s\"\n", term, out,
                           title);
}

static void one_kind(GString *gp, const char *term, const char *ext, const char *title,
                     const KbSimNamed *runs, guint n)
{
    char out[64];
    g_snprintf(out, sizeof out, "gpus-in-use.%s", ext);
    figure(gp, term, out, title);
    g_string_append(gp, "unset logscale\nset xlabel 'days since the first submission'\n"
                        "set ylabel 'GPUs of running jobs'\nset key top right\n");
    plot_lines(gp, runs, n, "series-%u.dat", 0, "1:2", "steps");
    g_snprintf(out, sizeof out, "jobs-waiting.%s", ext);
    figure(gp, term, out, title);
    g_string_append(gp, "set ylabel 'jobs waiting (arrived, not running)'\n");
    plot_lines(gp, runs, n, "series-%u.dat", 0, "1:3", "steps");
    static const char *const kinds[] = {"wait", "jct"};
    static const char *const labels[] = {"queueing delay (hours)", "job completion time (hours)"};
    for (guint k = 0; k < 2; k++) {
        g_snprintf(out, sizeof out, "%s-cdf.%s", kinds[k], ext);
        figure(gp, term, out, title);
        g_string_append_printf(gp,
                               "set logscale x\nset xlabel '%s'\nset ylabel 'fraction of jobs'\n"
                               "set xrange [0.01:*]\nset yrange [0:1]\nset key bottom right\n",
                               labels[k]);
        g_autofree char *fmt = g_strdup_printf("%s-%%u-%%u.dat", kinds[k]);
        plot_lines(gp, runs, n, fmt, ALL_BUCKETS, "1:2", "steps");
        g_snprintf(out, sizeof out, "%s-cdf-by-size.%s", kinds[k], ext);
        figure(gp, term, out, title);
        g_string_append(gp, "set multiplot layout 2,3\n");
        for (guint b = 0; b < KB_SIM_N_BUCKETS; b++) {
            g_string_append_printf(gp, "set title \"%s GPUs\"\n", kb_sim_bucket_label(b));
            plot_lines(gp, runs, n, fmt, b, "1:2", "steps");
        }
        g_string_append(gp, "unset multiplot\nset xrange [*:*]\nset yrange [*:*]\n");
    }
}

static char *script(const char *title, const KbSimNamed *runs, guint n)
{
    GString *gp = g_string_new("# Written by bench-trace --plot; run: gnuplot plots.gp\n"
                               "set grid\nset datafile separator '\\t'\n");
    one_kind(gp, "pngcairo size 1100,600 font ',10'", "png", title, runs, n);
    one_kind(gp, "svg size 1100,600 dynamic font 'sans,10'", "svg", title, runs, n);
    g_string_append(gp, "unset output\n");
    return g_string_free(gp, FALSE);
}

gboolean kb_sim_plot(const char *dir, const char *title, const KbSimNamed *runs, guint n,
                     gboolean *ran, GError **error)
{
    *ran = FALSE;
    if (g_mkdir_with_parents(dir, 0755) != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "--plot %s: %s", dir, g_strerror(errno));
        return FALSE;
    }
    if (!write_data(dir, runs, n, error))
        return FALSE;
    g_autoptr(GString) gp = g_string_new(NULL);
    g_autofree char *text = script(title, runs, n);
    g_string_append(gp, text);
    if (!write_file(dir, "plots.gp", gp, error))
        return FALSE;
    g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
    if (gnuplot == NULL)
        return TRUE;
    const char *argv[] = {gnuplot, "plots.gp", NULL};
    g_autofree char *err_text = NULL;
    gint status = 0;
    g_autoptr(GError) err = NULL;
    if (!g_spawn_sync(dir, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                      &err_text, &status, &err) ||
        !g_spawn_check_wait_status(status, &err)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "--plot: gnuplot failed: %s%s%s",
                    err != NULL ? err->message : "", err_text != NULL ? ": " : "",
                    err_text != NULL ? err_text : "");
        return FALSE;
    }
    *ran = TRUE;
    return TRUE;
}

/* ---- job by job ----------------------------------------------------------------------------- */

static double job_wait(const KbSimReport *r, const KbSimJobResult *j)
{
    return (double)((j->start >= 0 ? j->start : r->end) - j->submit);
}

static gint diff_cmp(gconstpointer x, gconstpointer y)
{
    const KbSimJobDiff *a = x, *b = y;
    double da = a->wait - a->wait_base, db = b->wait - b->wait_base;
    if (da != db)
        return da > db ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

GArray *kb_sim_job_diffs(const KbSimReport *base, const KbSimReport *r, guint min_gpus, guint n,
                         KbSimDiffBucket *buckets)
{
    memset(buckets, 0, sizeof(KbSimDiffBucket) * KB_SIM_N_BUCKETS);
    if (base->n_jobs != r->n_jobs)
        return NULL;
    GArray *all = g_array_new(FALSE, FALSE, sizeof(KbSimJobDiff));
    for (guint i = 0; i < r->n_jobs; i++) {
        const KbSimJobResult *a = &base->jobs[i], *b = &r->jobs[i];
        if (a->index != b->index || a->submit != b->submit || a->num_gpus != b->num_gpus) {
            g_array_unref(all);
            return NULL;
        }
        double wa = job_wait(base, a), wb = job_wait(r, b);
        KbSimDiffBucket *k = &buckets[kb_sim_bucket(b->num_gpus)];
        if (wb > wa + 60)
            k->worse++, k->worse_s += wb - wa;
        else if (wb < wa - 60)
            k->better++, k->better_s += wa - wb;
        if (b->num_gpus < min_gpus || wb <= wa + 60)
            continue;
        KbSimJobDiff d = {
                b->index, b->queue, b->num_gpus, b->submit - r->first_submit, MAX(a->ran, b->ran),
                wa,       wb};
        g_array_append_val(all, d);
    }
    g_array_sort(all, diff_cmp);
    if (all->len > n)
        g_array_set_size(all, n);
    return all;
}
