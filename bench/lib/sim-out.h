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
