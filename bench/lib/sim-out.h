/*
 * Simulation reports for machines and eyes: a JSON summary of several configurations' reports,
 * and plots through gnuplot (Debian package gnuplot-nox, found on PATH at run time; make check
 * does not need it).
 *
 * kb_sim_write_summary_json: @path gets {"trace": @about, "configurations": [{"name", "jobs",
 * "finished", "started", "jct": {"mean","p50","p95","p99"}, "wait": {...}, "util_busy",
 * "util_busy_arrivals", "makespan", "cycle_us": {"mean","p99","max"}, "wall_s",
 * "never_started", "buckets": [{"gpus": "1", "jobs", "started", "finished", "wait":
 * {"mean","p95","p99"}, "jct": {...}}, ...]}]}; times in seconds.
 *
 * kb_sim_plot: into directory @dir (created), the data files (*.dat, tab-separated) and a
 * gnuplot script plots.gp, then runs gnuplot on it when it is installed, which writes, each as
 * PNG and SVG:
 *   gpus-in-use       GPUs of running jobs over time, one line per configuration
 *   jobs-waiting      jobs arrived and not running over time
 *   wait-cdf, jct-cdf queueing delay and JCT CDFs (log time axis), one line per configuration
 *   wait-cdf-by-size, jct-cdf-by-size  the same per gang-size bucket (one panel each)
 * Without gnuplot it writes the data and the script, sets *@ran FALSE and returns TRUE.
 */
#pragma once

#include <glib.h>

#include "bench/lib/sim.h"

typedef struct {
    const char *name;
    const KbSimReport *report;
} KbSimNamed;

gboolean kb_sim_write_summary_json(const char *path, const char *about, const KbSimNamed *runs,
                                   guint n, GError **error);
gboolean kb_sim_plot(const char *dir, const char *title, const KbSimNamed *runs, guint n,
                     gboolean *ran, GError **error);

/*
 * Job by job, where @r's queueing delays differ from @base's (two replays of the same trace):
 * per gang-size bucket, the jobs that waited more than a minute longer (worse) or shorter
 * (better) and the job-hours of the difference; and the jobs with the most added wait. A job
 * that never started waits until the report's end.
 */
typedef struct {
    guint index; /* in the trace: j%06u */
    const char *queue;
    guint gpus;
    gint64 submit; /* seconds after the first submit */
    gint64 ran;    /* seconds run, all attempts */
    double wait_base, wait;
} KbSimJobDiff;

typedef struct {
    guint worse, better;
    double worse_s, better_s; /* job-seconds of the differences */
} KbSimDiffBucket;

/* Fills @buckets (KB_SIM_N_BUCKETS) and returns the @n jobs of at least @min_gpus GPUs with the
 * most added wait, most first (KbSimJobDiff; fewer when fewer waited longer); NULL when the two
 * reports are not of the same trace. */
GArray *kb_sim_job_diffs(const KbSimReport *base, const KbSimReport *r, guint min_gpus, guint n,
                         KbSimDiffBucket *buckets);
