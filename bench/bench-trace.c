/*
 * bench-trace: replay a slice of a real GPU cluster trace against scheduler configurations, with
 * the real scheduler core (cache, cycle, actions, plugins) driven by bench/lib/sim.c, and print
 * the figures of each configuration and their ratios against a baseline run in the same process.
 * Figures only: no pass/fail. Output is deterministic except the wall, CPU and cycle times.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "bench/lib/sim-out.h"
#include "bench/lib/fairness.h"
#include "bench/lib/jobtrace.h"
#include "bench/lib/qshare.h"
#include "bench/lib/sim.h"
#include "bench/lib/synth.h"
#include "bench/lib/trace.h"
#include "kube/kb-error.h"
#include "scheduler/conf.h"

#define DEFAULT_TRACE "../shared/traces/philly/philly.csv"
/* --scaling without --synthetic: a steady load of the default synthetic shape. */
#define SCALING_SPEC "jobs=10000"
/* Replays of each size: the least CPU time counts (the machine may be shared). */
#define SCALING_ROUNDS 2

static const char credits[] =
        "Trace: Microsoft Philly GPU cluster trace (Jeon et al., \"Analysis of Large-Scale "
        "Multi-Tenant\n"
        "GPU Clusters for DNN Training Workloads\", USENIX ATC 2019; "
        "github.com/msr-fiddle/philly-traces,\n"
        "CC BY 4.0), as reduced to CSV by the Pollux artifact (Qiao et al., OSDI 2021;\n"
        "github.com/petuum/adaptdl, branch osdi21-artifact, simulator/traces/philly.csv).\n";

/* ---- configurations ------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *about;
    const char *yaml;      /* NULL: the built-in default configuration */
    gboolean single_queue; /* every job in the default queue (FIFO across tenants) */
    const char *actions;   /* with yaml NULL: the default configuration's tiers, these actions */
} Builtin;

static const Builtin builtins[] = {
        {"kube-batchd", "the built-in default configuration", NULL, FALSE},
        {"fifo", "no drf/proportion, one queue: submit order across tenants (gang on)",
         "actions: \"enqueue, allocate\"\n"
         "tiers:\n"
         "- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
         "- plugins:\n  - name: predicates\n  - name: nodeorder\n",
         TRUE},
        {"no-gang", "the default configuration without gang: partial gangs hold GPUs",
         "actions: \"enqueue, allocate\"\n"
         "tiers:\n"
         "- plugins:\n  - name: priority\n  - name: conformance\n"
         "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
         "  - name: nodeorder\n",
         FALSE},
        {"spread",
         "the default configuration with nodeorder spreading (leastrequested) instead of packing",
         "actions: \"enqueue, allocate\"\n"
         "tiers:\n"
         "- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
         "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
         "  - name: nodeorder\n    arguments:\n      nodeorder.leastrequested.weight: 1\n"
         "      nodeorder.mostrequested.weight: 0\n      nodeorder.balancedresource.weight: 1\n"
         "  - name: gpu-topology\n",
         FALSE},
        {"preempt-reclaim",
         "the default configuration with the preempt and reclaim actions (evictions)", NULL, FALSE,
         "enqueue, allocate, preempt, reclaim"},
        {"kube-batch",
         "kube-batch as it shipped: allocate and backfill, no enqueue, nodeorder spreading",
         "actions: \"allocate, backfill\"\n"
         "tiers:\n"
         "- plugins:\n  - name: priority\n  - name: gang\n"
         "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
         "    arguments:\n      longBorrowLimit: 0\n"
         "  - name: nodeorder\n    arguments:\n      nodeorder.leastrequested.weight: 1\n"
         "      nodeorder.mostrequested.weight: 0\n      nodeorder.balancedresource.weight: 0\n",
         FALSE},
        {"kube-batchd+reserve", "the built-in default configuration (a name kept for scripts)",
         NULL, FALSE},
        {"kube-batchd-noreclaim",
         "the default configuration without reclaim (long jobs never borrow past their queues' "
         "limits: the default before round 7)",
         NULL, FALSE, "enqueue, reserve, allocate"},
        {"kube-batchd-noreserve",
         "the default configuration without the reserve action (the default before reserve won)",
         NULL, FALSE, "enqueue, allocate"},
};

typedef struct {
    char *name;
    char *about;
    KbConf *conf;
    gboolean single_queue;
    KbSimReport *report;
    KbQshare *shares; /* --queue-tree: queue shares over the run */
    KbJobTrace *why;  /* --trace-job, --wait-reasons */
    KbFairness *fair; /* --fairness */
    GError *error;
    /* Input shared read-only by the worker threads. */
    const KbTrace *slice;
    KbSimOptions sim;
} Run;

static void run_free(gpointer p)
{
    Run *r = p;
    g_free(r->name);
    g_free(r->about);
    kb_conf_free(r->conf);
    kb_sim_report_free(r->report);
    kb_qshare_free(r->shares);
    kb_jobtrace_free(r->why);
    kb_fairness_free(r->fair);
    g_clear_error(&r->error);
    g_free(r);
}

static char *conf_summary(const KbConf *conf)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < conf->n_actions; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? ", " : "actions: ", conf->actions[i]);
    for (guint t = 0; t < conf->n_tiers; t++) {
        g_string_append(s, t == 0 ? "; tiers: " : " | ");
        for (guint p = 0; p < conf->tiers[t].n_plugins; p++)
            g_string_append_printf(s, "%s%s", p > 0 ? " " : "", conf->tiers[t].plugins[p].name);
    }
    return g_string_free(s, FALSE);
}

static Run *run_builtin(const char *name, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(builtins); i++) {
        const Builtin *b = &builtins[i];
        if (strcmp(b->name, name) != 0)
            continue;
        const char *yaml = b->yaml != NULL ? b->yaml : kb_conf_default_yaml();
        g_autofree char *with_actions = NULL;
        if (b->yaml == NULL && b->actions != NULL) {
            /* Tracks the default's tiers whatever they become. */
            const char *tiers = strstr(yaml, "tiers:");
            g_assert(tiers != NULL);
            yaml = with_actions = g_strdup_printf("actions: \"%s\"\n%s", b->actions, tiers);
        }
        KbConf *conf = kb_conf_parse(yaml, strlen(yaml), error);
        if (conf == NULL) {
            g_prefix_error(error, "configuration %s: ", name);
            return NULL;
        }
        Run *r = g_new0(Run, 1);
        r->name = g_strdup(name);
        r->about = g_strdup(b->about);
        r->conf = conf;
        r->single_queue = b->single_queue;
        return r;
    }
    g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                "unknown configuration \"%s\" (built in: kube-batchd, fifo, no-gang, spread, "
                "preempt-reclaim, kube-batch, kube-batchd+reserve, kube-batchd-noreclaim, "
                "kube-batchd-noreserve; or --conf-file)",
                name);
    return NULL;
}

static Run *run_file(const char *path, GError **error)
{
    KbConf *conf = kb_conf_load(path, error);
    if (conf == NULL)
        return NULL;
    Run *r = g_new0(Run, 1);
    r->name = g_path_get_basename(path);
    r->about = g_strdup_printf("from %s", path);
    r->conf = conf;
    return r;
}

/* ---- options -------------------------------------------------------------------------------- */

typedef struct {
    char *trace;
    gint jobs, skip, nodes, gpus_per_node, period, max_cycles, show_unfinished, threads;
    double hours, duration_scale, arrival_scale, high_priority, estimate_factor, min_fraction;
    char *from, *pack, *baseline, *restart_cost, *plot_dir, *summary_json, *synthetic;
    char **configs, **conf_files, **weights, **trace_jobs;
    char *queue_tree;
    gboolean skip_bad_rows, no_queues, scaling, no_skip, check_skips, wait_reasons;
    double fairness;                 /* window in hours; 0: no fairness report */
    gint compare_jobs, compare_gpus; /* --compare-jobs, --compare-gpus */
} Opts;

static gboolean parse_options(int argc, char **argv, Opts *o, GError **error)
{
    GOptionEntry entries[] = {
            {"trace", 't', 0, G_OPTION_ARG_FILENAME, &o->trace,
             "Trace CSV (default $KB_TRACE, else " DEFAULT_TRACE ")", "FILE"},
            {"jobs", 'n', 0, G_OPTION_ARG_INT, &o->jobs, "Jobs to replay, by submit time (5000)",
             "N"},
            {"skip", 0, 0, G_OPTION_ARG_INT, &o->skip, "Jobs to skip first (0)", "N"},
            {"from", 0, 0, G_OPTION_ARG_STRING, &o->from, "Start at this submit time (UTC)",
             "\"YYYY-MM-DD HH:MM:SS\""},
            {"hours", 0, 0, G_OPTION_ARG_DOUBLE, &o->hours,
             "Only jobs submitted within H hours of the first (0: no limit)", "H"},
            {"duration-scale", 0, 0, G_OPTION_ARG_DOUBLE, &o->duration_scale,
             "Multiply job durations (1)", "S"},
            {"arrival-scale", 0, 0, G_OPTION_ARG_DOUBLE, &o->arrival_scale,
             "Multiply gaps between submissions (1; < 1 raises the load)", "S"},
            {"nodes", 0, 0, G_OPTION_ARG_INT, &o->nodes, "Nodes (64)", "N"},
            {"gpus-per-node", 0, 0, G_OPTION_ARG_INT, &o->gpus_per_node, "GPUs per node (8)", "G"},
            {"pack", 0, 0, G_OPTION_ARG_STRING, &o->pack,
             "Pods per job: node (largest divisor of the job's GPUs that fits a node, default) or "
             "one (a pod per GPU)",
             "node|one"},
            {"period", 0, 0, G_OPTION_ARG_INT, &o->period, "Scheduling period in seconds (1)", "S"},
            {"config", 'c', 0, G_OPTION_ARG_STRING_ARRAY, &o->configs,
             "Built-in configuration to run, repeatable: kube-batchd, fifo, no-gang, spread, "
             "preempt-reclaim, kube-batch, kube-batchd+reserve, kube-batchd-noreclaim, "
             "kube-batchd-noreserve (default: kube-batch, fifo, kube-batchd-noreserve, "
             "kube-batchd)",
             "NAME"},
            {"conf-file", 'f', 0, G_OPTION_ARG_FILENAME_ARRAY, &o->conf_files,
             "Also run a scheduler configuration file (kube-batch/Volcano format), repeatable",
             "FILE"},
            {"baseline", 'b', 0, G_OPTION_ARG_STRING, &o->baseline,
             "Configuration the ratios divide by (kube-batch when run, else fifo when run, else "
             "the "
             "last one)",
             "NAME"},
            {"weight", 'w', 0, G_OPTION_ARG_STRING_ARRAY, &o->weights,
             "Queue weight, repeatable (default 1)", "QUEUE=W"},
            {"high-priority", 0, 0, G_OPTION_ARG_DOUBLE, &o->high_priority,
             "Fraction of jobs (0..1, chosen by a hash of their trace line) in a PriorityClass of "
             "value 1000, the others 0 (0)",
             "F"},
            {"restart-cost", 0, 0, G_OPTION_ARG_STRING, &o->restart_cost,
             "What an evicted job loses: full (it restarts with its whole duration, default) or "
             "none (it resumes where it was, as if checkpointed)",
             "full|none"},
            {"threads", 'j', 0, G_OPTION_ARG_INT, &o->threads,
             "Replays run in parallel, one configuration per thread (default: CPUs); cycle wall "
             "times then include contention",
             "N"},
            {"estimate-factor", 0, 0, G_OPTION_ARG_DOUBLE, &o->estimate_factor,
             "Jobs announce duration x F as their expected runtime (annotation "
             "kube-batchd.io/expected-runtime; 1: exact, default; 0: no estimates) unless the "
             "trace "
             "has an expected_duration column",
             "F"},
            {"min-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &o->min_fraction,
             "Elastic jobs: minMember = pods x F rounded up (0..1; 0: all pods, default); such a "
             "job starts at its minimum and pods joining later run with it",
             "F"},
            {"synthetic", 0, 0, G_OPTION_ARG_STRING, &o->synthetic,
             "Replay a generated trace instead of a file: jobs=N,rate=PER_HOUR,"
             "sizes=GPUS:WEIGHT/...,duration=exp:MEAN|lognormal:MEDIAN:SIGMA,queues=Q,seed=S "
             "(every key optional; see docs/benchmarks.md)",
             "SPEC"},
            {"plot", 0, 0, G_OPTION_ARG_FILENAME, &o->plot_dir,
             "Write plots (PNG and SVG through gnuplot, with their data and script) into DIR",
             "DIR"},
            {"summary-json", 0, 0, G_OPTION_ARG_FILENAME, &o->summary_json,
             "Write the figures of every configuration as JSON to FILE", "FILE"},
            {"max-cycles", 0, 0, G_OPTION_ARG_INT, &o->max_cycles,
             "Stop a replay after N cycles (0: no limit)", "N"},
            {"unfinished", 0, 0, G_OPTION_ARG_INT, &o->show_unfinished,
             "Unfinished jobs to list per configuration (5)", "N"},
            {"skip-bad-rows", 0, 0, G_OPTION_ARG_NONE, &o->skip_bad_rows,
             "Skip malformed trace rows (counted) instead of failing", NULL},
            {"queue-tree", 0, 0, G_OPTION_ARG_FILENAME, &o->queue_tree,
             "Queue tree file (hierarchical queues; format in bench/lib/qshare.h and "
             "docs/configuration.md): "
             "also reports queue shares against deserved shares per queue and per level",
             "FILE"},
            {"trace-job", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->trace_jobs,
             "Print every change of this job's phase and condition, repeatable (jNNNNNN: the "
             "job's index in the slice, or QUEUE/jNNNNNN)",
             "NAME"},
            {"wait-reasons", 0, 0, G_OPTION_ARG_NONE, &o->wait_reasons,
             "Print the job-hours waited per condition message (digits and names folded)", NULL},
            {"fairness", 0, 0, G_OPTION_ARG_DOUBLE, &o->fairness,
             "Report per window of H hours each queue's GPU-hours received against what its "
             "weight and demand entitled it to, and Jain's index per window (0: off)",
             "H"},
            {"compare-jobs", 0, 0, G_OPTION_ARG_INT, &o->compare_jobs,
             "Job by job against the baseline: per gang size the jobs that waited longer and "
             "shorter (job-hours), and the N jobs that waited longest beyond the baseline's wait "
             "(0: off)",
             "N"},
            {"compare-gpus", 0, 0, G_OPTION_ARG_INT, &o->compare_gpus,
             "--compare-jobs lists only jobs of at least G GPUs (1)", "G"},
            {"no-queues", 0, 0, G_OPTION_ARG_NONE, &o->no_queues, "Do not print per-queue tables",
             NULL},
            {"no-skip", 0, 0, G_OPTION_ARG_NONE, &o->no_skip,
             "Run every due cycle, also while nothing waits (slower; same figures)", NULL},
            {"check-skips", 0, 0, G_OPTION_ARG_NONE, &o->check_skips,
             "Run the cycles skipped while nothing waits and abort unless each did what the "
             "simulator assumes (slower; same figures)",
             NULL},
            {"scaling", 0, 0, G_OPTION_ARG_NONE, &o->scaling,
             "Also replay a steady synthetic load (the --synthetic SPEC, else " SCALING_SPEC
             ") of N and then 10 N jobs with the first configuration and print both CPU times "
             "and their ratio",
             NULL},
            {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("- replay a GPU job trace");
    g_option_context_set_summary(
            ctx, "Replays a slice of a real GPU cluster trace against kube-batchd's "
                 "scheduling policies (the\nreal scheduler core on a simulated "
                 "clock) and prints figures per configuration and ratios\nagainst "
                 "a baseline run in the same invocation.");
    g_option_context_set_description(ctx, credits);
    g_option_context_add_main_entries(ctx, entries, NULL);
    return g_option_context_parse(ctx, &argc, &argv, error);
}

static gboolean parse_weights(char **specs, GHashTable *out, GError **error)
{
    for (guint i = 0; specs != NULL && specs[i] != NULL; i++) {
        const char *eq = strchr(specs[i], '=');
        char *end = NULL;
        long w = eq != NULL ? strtol(eq + 1, &end, 10) : 0;
        if (eq == NULL || eq == specs[i] || end == eq + 1 || *end != '\0' || w < 1 || w > 1000000) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "--weight \"%s\": want QUEUE=W with W in 1..1000000", specs[i]);
            return FALSE;
        }
        g_hash_table_insert(out, g_strndup(specs[i], (gsize)(eq - specs[i])),
                            GINT_TO_POINTER((int)w));
    }
    return TRUE;
}

/* ---- printing ------------------------------------------------------------------------------- */

/* "42 s", "3.5 min", "2.25 h", "1.50 d" into @buf. */
static const char *dur(char *buf, gsize n, double s)
{
    if (s < 120)
        g_snprintf(buf, n, "%.0f s", s);
    else if (s < 7200)
        g_snprintf(buf, n, "%.1f min", s / 60);
    else if (s < 2 * 86400)
        g_snprintf(buf, n, "%.2f h", s / 3600);
    else
        g_snprintf(buf, n, "%.2f d", s / 86400);
    return buf;
}

static char *time_str(gint64 t)
{
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(t);
    return dt != NULL ? g_date_time_format(dt, "%Y-%m-%d %H:%M:%S") : g_strdup("?");
}

static void print_header(const char *path, const KbTrace *all, const KbTrace *slice, const Opts *o,
                         const KbSimOptions *sim)
{
    g_autoptr(GPtrArray) queues = kb_trace_queues(slice);
    g_autofree char *t0 = time_str(slice->jobs[0].submit);
    g_autofree char *t1 = time_str(slice->jobs[slice->n_jobs - 1].submit);
    double gpu_s = kb_trace_gpu_seconds(slice);
    guint gpus = sim->n_nodes * sim->gpus_per_node;
    gint64 span = slice->jobs[slice->n_jobs - 1].submit - slice->jobs[0].submit;
    printf("bench-trace: kube-batchd's scheduler core replaying a GPU cluster trace\n%s\n",
           credits);
    printf("file        %s: %u jobs", path, all->n_jobs);
    if (all->n_skipped > 0)
        printf(", %u malformed rows skipped (first: %s)", all->n_skipped, all->first_skipped);
    printf("\nslice       %u jobs (skip %d) submitted %s .. %s UTC, %u queues, %.0f GPU-hours\n",
           slice->n_jobs, o->skip, t0, t1, queues->len, gpu_s / 3600);
    printf("            durations x%g, arrival gaps x%g; offered load %.2f (GPU-time / (GPUs x "
           "submit span))\n",
           o->duration_scale, o->arrival_scale, span > 0 ? gpu_s / ((double)gpus * span) : 0);
    printf("cluster     %u nodes x %u GPUs = %u GPUs; pods: %s packing; cycle every %d s when the "
           "cluster changed\n",
           sim->n_nodes, sim->gpus_per_node, gpus, kb_trace_pack_to_string(sim->pack), o->period);
    if (sim->min_fraction > 0)
        printf("elastic     minMember = pods x %g rounded up: a job starts at its minimum, its "
               "other "
               "pods join when placed\n",
               sim->min_fraction);
    guint n_high = 0;
    for (guint i = 0; i < slice->n_jobs; i++)
        n_high += kb_sim_is_high_priority(slice->jobs[i].line, sim->high_fraction);
    printf("priorities  %u jobs (%.1f%%) high (PriorityClass %s, value %d), the rest 0; an evicted "
           "job restarts with %s\n",
           n_high, slice->n_jobs > 0 ? 100.0 * n_high / slice->n_jobs : 0,
           KB_SIM_HIGH_PRIORITY_CLASS, KB_SIM_HIGH_PRIORITY,
           sim->restart_cost == KB_SIM_RESTART_FULL ? "its full duration (work lost)"
                                                    : "the time it had left (checkpointed)");
}

static void print_queues(const KbSimReport *r)
{
    double total_w = 0, total_rx = 0;
    for (guint q = 0; q < r->n_queues; q++) {
        total_w += r->queues[q].weight;
        total_rx += r->queues[q].received_gpu_s;
    }
    printf("  %-8s %6s %6s %8s %11s %11s %7s %7s %10s %10s\n", "queue", "weight", "jobs",
           "finished", "demand GPUh", "recvd GPUh", "share", "w.share", "mean JCT", "mean wait");
    for (guint q = 0; q < r->n_queues; q++) {
        const KbSimQueueResult *qr = &r->queues[q];
        char b1[32], b2[32];
        printf("  %-8s %6d %6u %8u %11.0f %11.0f %6.1f%% %6.1f%% %10s %10s\n", qr->name, qr->weight,
               qr->n_jobs, qr->n_finished, qr->demand_gpu_s / 3600, qr->received_gpu_s / 3600,
               total_rx > 0 ? 100 * qr->received_gpu_s / total_rx : 0, 100 * qr->weight / total_w,
               dur(b1, sizeof b1, qr->jct_mean), dur(b2, sizeof b2, qr->wait_mean));
    }
}

static void print_buckets(const KbSimReport *r)
{
    char b[6][32];
    printf("  %-6s %6s %8s %10s %10s %10s %10s %10s %10s\n", "GPUs", "jobs", "started", "wait mean",
           "wait p95", "wait p99", "JCT mean", "JCT p95", "JCT p99");
    for (guint k = 0; k < KB_SIM_N_BUCKETS; k++) {
        const KbSimBucket *x = &r->buckets[k];
        printf("  %-6s %6u %8u %10s %10s %10s %10s %10s %10s\n", kb_sim_bucket_label(k), x->n_jobs,
               x->n_started, dur(b[0], sizeof b[0], x->wait_mean),
               dur(b[1], sizeof b[1], x->wait_p95), dur(b[2], sizeof b[2], x->wait_p99),
               dur(b[3], sizeof b[3], x->jct_mean), dur(b[4], sizeof b[4], x->jct_p95),
               dur(b[5], sizeof b[5], x->jct_p99));
    }
}

static void print_unfinished(const KbSimReport *r, int limit)
{
    guint waiting = 0, running = 0, requeued = 0, shown = 0;
    for (guint i = 0; i < r->n_jobs; i++) {
        if (r->jobs[i].finish < 0 && r->jobs[i].start < 0)
            waiting++;
        else if (r->jobs[i].running)
            running++;
        else if (r->jobs[i].finish < 0)
            requeued++;
    }
    if (waiting + running + requeued == 0)
        return;
    printf("  unfinished jobs      %u never started, %u still running, %u evicted and waiting\n",
           waiting, running, requeued);
    /* The ones that never started say why (the scheduler's last condition). */
    for (guint i = 0; i < r->n_jobs && limit > 0 && shown < (guint)limit; i++) {
        const KbSimJobResult *j = &r->jobs[i];
        if (j->finish >= 0 || j->start >= 0)
            continue;
        g_autofree char *t = time_str(j->submit);
        printf("    #%u %s, %u GPUs in %u pod%s, submitted %s: %s%s%s\n", j->index, j->queue,
               j->num_gpus, j->n_pods, j->n_pods == 1 ? "" : "s", t, j->phase,
               j->reason != NULL ? ", " : "", j->reason != NULL ? j->reason : "");
        if (j->message != NULL)
            printf("      \"%s\"\n", j->message);
        shown++;
    }
}

static void print_run(const Run *run, const Opts *o)
{
    const KbSimReport *r = run->report;
    g_autofree char *summary = conf_summary(run->conf);
    char a[32], b[32], c[32], d[32];
    printf("\n== %s: %s%s\n   %s\n", run->name, run->about,
           run->single_queue ? " (jobs in one queue)" : "", summary);
    printf("  jobs finished        %u / %u (started %u)%s\n", r->n_finished, r->n_jobs,
           r->n_started, r->stopped ? "  [stopped at --max-cycles]" : "");
    printf("  JCT                  mean %s  p50 %s  p95 %s  p99 %s\n",
           dur(a, sizeof a, r->jct_mean), dur(b, sizeof b, r->jct_p50),
           dur(c, sizeof c, r->jct_p95), dur(d, sizeof d, r->jct_p99));
    printf("  queueing delay       mean %s  p50 %s  p95 %s  p99 %s\n",
           dur(a, sizeof a, r->wait_mean), dur(b, sizeof b, r->wait_p50),
           dur(c, sizeof c, r->wait_p95), dur(d, sizeof d, r->wait_p99));
    printf("  makespan             %s (last event %s after the first submit)\n",
           dur(a, sizeof a, (double)r->makespan),
           dur(b, sizeof b, (double)(r->end - r->first_submit)));
    printf("  GPU utilization      %.1f%% running jobs (%.1f%% held by pods) while jobs arrive; "
           "%.1f%% (%.1f%%) over the whole run\n",
           100 * r->util_busy_arrivals, 100 * r->util_alloc_arrivals, 100 * r->util_busy,
           100 * r->util_alloc);
    printf("  partial gangs        %.0f GPU-hours held idle, peak %u GPUs, %u GPUs still held at "
           "the end\n",
           r->partial_gpu_s / 3600, r->partial_gpus_peak, r->partial_gpus_end);
    if (r->jain >= 0)
        printf("  fairness             Jain %.3f (GPUs/weight of waiting queues, over %s with >= 2 "
               "waiting)\n",
               r->jain, dur(a, sizeof a, r->contended_s));
    else
        printf("  fairness             n/a (never two queues waiting at once)\n");
    printf("  evictions            %" G_GUINT64_FORMAT " pods; %u job evictions (%u preempted, %u "
           "reclaimed) of %u jobs (at most %u each); %.0f GPU-hours run then evicted, %.0f lost\n",
           r->n_evicted_pods, r->n_preempted + r->n_reclaimed, r->n_preempted, r->n_reclaimed,
           r->n_jobs_evicted, r->max_job_evictions, r->evicted_gpu_s / 3600, r->lost_gpu_s / 3600);
    printf("  time not running     mean %s per finished job (JCT - time run; includes waits after "
           "evictions)\n",
           dur(a, sizeof a, r->idle_mean));
    if (r->n_high > 0) {
        printf("  high priority        %u jobs: queueing delay mean %s p95 %s; JCT mean %s p95 "
               "%s\n",
               r->n_high, dur(a, sizeof a, r->high_wait_mean), dur(b, sizeof b, r->high_wait_p95),
               dur(c, sizeof c, r->high_jct_mean), dur(d, sizeof d, r->high_jct_p95));
        printf("  other jobs           %u jobs: queueing delay mean %s p95 %s; JCT mean %s p95 "
               "%s\n",
               r->n_jobs - r->n_high, dur(a, sizeof a, r->low_wait_mean),
               dur(b, sizeof b, r->low_wait_p95), dur(c, sizeof c, r->low_jct_mean),
               dur(d, sizeof d, r->low_jct_p95));
    }
    printf("  scheduler            %u cycles (+%u %s: nothing waited), mean %.0f us, p99 %.0f "
           "us, max %.0f us; %" G_GUINT64_FORMAT " pods placed\n",
           r->n_cycles, r->n_cycles_skipped, o->check_skips ? "run and checked" : "skipped",
           r->cycle_us_mean, r->cycle_us_p99, r->cycle_us_max, r->n_placements);
    printf("  replay               CPU time %.2f s (user + system of its thread), wall time %.2f "
           "s, %u cache restarts\n",
           r->cpu_s, r->wall_s, r->n_cache_restarts);
    print_buckets(r);
    if (!o->no_queues)
        print_queues(r);
    if (run->shares != NULL)
        kb_qshare_print(run->shares, r->end);
    if (run->why != NULL && o->wait_reasons)
        kb_jobtrace_print(run->why, 12);
    if (run->fair != NULL)
        kb_fairness_print(run->fair, r->end, stdout);
    print_unfinished(r, o->show_unfinished);
}

/* --compare-jobs: each configuration's queueing delays against the baseline's, job by job. */
static void print_job_diffs(GPtrArray *runs, const Run *base, const Opts *o)
{
    char a[32], b[32], c[32], d[32];
    for (guint i = 0; i < runs->len; i++) {
        const Run *run = runs->pdata[i];
        if (run == base)
            continue;
        KbSimDiffBucket k[KB_SIM_N_BUCKETS];
        g_autoptr(GArray) top =
                kb_sim_job_diffs(base->report, run->report, (guint)MAX(o->compare_gpus, 1),
                                 (guint)o->compare_jobs, k);
        if (top == NULL)
            continue;
        printf("\n== %s against %s, job by job (queueing delay, differences over a minute)\n",
               run->name, base->name);
        printf("  GPUs   waited longer  job-hours   waited shorter  job-hours\n");
        for (guint x = 0; x < KB_SIM_N_BUCKETS; x++)
            printf("  %-5s  %13u  %9.1f   %14u  %9.1f\n", kb_sim_bucket_label(x), k[x].worse,
                   k[x].worse_s / 3600, k[x].better, k[x].better_s / 3600);
        printf("  longest added waits (jobs of %d+ GPUs): job, queue, GPUs, submitted, ran, wait "
               "%s / %s\n",
               MAX(o->compare_gpus, 1), base->name, run->name);
        for (guint x = 0; x < top->len; x++) {
            const KbSimJobDiff *j = &g_array_index(top, KbSimJobDiff, x);
            printf("    j%06u %s %u GPUs, +%s, ran %s: %s / %s\n", j->index, j->queue, j->gpus,
                   dur(a, sizeof a, (double)j->submit), dur(b, sizeof b, (double)j->ran),
                   dur(c, sizeof c, j->wait_base), dur(d, sizeof d, j->wait));
        }
    }
}

static void ratio(double x, double base)
{
    if (base > 0 && x >= 0)
        printf(" %12.3f", x / base);
    else
        printf(" %12s", "n/a");
}

/* Eviction figures are zero without preempt/reclaim: values, not ratios. */
static void print_eviction_values(GPtrArray *runs)
{
    printf("  %-22s", "evicted pods (value)");
    for (guint i = 0; i < runs->len; i++)
        printf(" %12" G_GUINT64_FORMAT, ((Run *)runs->pdata[i])->report->n_evicted_pods);
    printf("\n  %-22s", "job evictions (value)");
    for (guint i = 0; i < runs->len; i++) {
        const KbSimReport *r = ((Run *)runs->pdata[i])->report;
        printf(" %12u", r->n_preempted + r->n_reclaimed);
    }
    printf("\n  %-22s", "lost GPU-hours (value)");
    for (guint i = 0; i < runs->len; i++)
        printf(" %12.0f", ((Run *)runs->pdata[i])->report->lost_gpu_s / 3600);
    printf("\n");
}

static void print_ratios(GPtrArray *runs, const Run *base)
{
    printf("\n== ratios against %s (value / %s's value; lower is better for times)\n", base->name,
           base->name);
    printf("  %-22s", "");
    for (guint i = 0; i < runs->len; i++)
        printf(" %12s", ((Run *)runs->pdata[i])->name);
    printf("\n");
    static const struct {
        const char *label;
        gsize offset;
        gboolean is_uint;
    } rows[] = {
            {"jobs finished", G_STRUCT_OFFSET(KbSimReport, n_finished), TRUE},
            {"mean JCT", G_STRUCT_OFFSET(KbSimReport, jct_mean), FALSE},
            {"p95 JCT", G_STRUCT_OFFSET(KbSimReport, jct_p95), FALSE},
            {"p99 JCT", G_STRUCT_OFFSET(KbSimReport, jct_p99), FALSE},
            {"mean queueing delay", G_STRUCT_OFFSET(KbSimReport, wait_mean), FALSE},
            {"p95 queueing delay", G_STRUCT_OFFSET(KbSimReport, wait_p95), FALSE},
            {"mean time not running", G_STRUCT_OFFSET(KbSimReport, idle_mean), FALSE},
            {"GPU util. (arrivals)", G_STRUCT_OFFSET(KbSimReport, util_busy_arrivals), FALSE},
            {"GPU util. (whole run)", G_STRUCT_OFFSET(KbSimReport, util_busy), FALSE},
            {"partial-gang GPU-s", G_STRUCT_OFFSET(KbSimReport, partial_gpu_s), FALSE},
            {"fairness (Jain)", G_STRUCT_OFFSET(KbSimReport, jain), FALSE},
            {"mean cycle time", G_STRUCT_OFFSET(KbSimReport, cycle_us_mean), FALSE},
            {"high-prio mean wait", G_STRUCT_OFFSET(KbSimReport, high_wait_mean), FALSE},
            {"high-prio p95 wait", G_STRUCT_OFFSET(KbSimReport, high_wait_p95), FALSE},
            {"high-prio mean JCT", G_STRUCT_OFFSET(KbSimReport, high_jct_mean), FALSE},
            {"other mean JCT", G_STRUCT_OFFSET(KbSimReport, low_jct_mean), FALSE},
    };
    for (guint k = 0; k < G_N_ELEMENTS(rows); k++) {
        printf("  %-22s", rows[k].label);
        for (guint i = 0; i < runs->len; i++) {
            const char *x = (const char *)((Run *)runs->pdata[i])->report + rows[k].offset;
            const char *y = (const char *)base->report + rows[k].offset;
            double xv = rows[k].is_uint ? *(const guint *)x : *(const double *)x;
            double yv = rows[k].is_uint ? *(const guint *)y : *(const double *)y;
            ratio(xv, yv);
        }
        printf("\n");
    }
    printf("  %-22s", "17+ GPUs p99 wait");
    for (guint i = 0; i < runs->len; i++)
        ratio(((Run *)runs->pdata[i])->report->buckets[4].wait_p99,
              base->report->buckets[4].wait_p99);
    printf("\n  %-22s", "17+ GPUs mean wait");
    for (guint i = 0; i < runs->len; i++)
        ratio(((Run *)runs->pdata[i])->report->buckets[4].wait_mean,
              base->report->buckets[4].wait_mean);
    printf("\n");
    printf("  %-22s", "makespan");
    for (guint i = 0; i < runs->len; i++)
        ratio((double)((Run *)runs->pdata[i])->report->makespan, (double)base->report->makespan);
    printf("\n");
    print_eviction_values(runs);
}

/* ---- main ----------------------------------------------------------------------------------- */

static GPtrArray *make_runs(const Opts *o, GError **error)
{
    g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func(run_free);
    static const char *const defaults[] = {"kube-batch", "fifo", "kube-batchd-noreserve",
                                           "kube-batchd", NULL};
    static const char *const with_files[] = {"kube-batchd", NULL};
    const char *const *names = o->configs != NULL      ? (const char *const *)o->configs
                               : o->conf_files != NULL ? with_files
                                                       : defaults;
    for (guint i = 0; names[i] != NULL; i++) {
        Run *r = run_builtin(names[i], error);
        if (r == NULL)
            return NULL;
        g_ptr_array_add(runs, r);
    }
    for (guint i = 0; o->conf_files != NULL && o->conf_files[i] != NULL; i++) {
        Run *r = run_file(o->conf_files[i], error);
        if (r == NULL)
            return NULL;
        g_ptr_array_add(runs, r);
    }
    return g_steal_pointer(&runs);
}

static const Run *find_baseline(GPtrArray *runs, const char *name, GError **error)
{
    const char *want = name != NULL ? name : "kube-batch";
    for (guint i = 0; name == NULL && i < runs->len; i++) {
        if (strcmp(((const Run *)runs->pdata[i])->name, want) == 0)
            return runs->pdata[i];
    }
    want = name != NULL ? name : "fifo";
    for (guint i = 0; i < runs->len; i++) {
        const Run *r = runs->pdata[i];
        if (strcmp(r->name, want) == 0)
            return r;
    }
    if (name == NULL)
        return runs->pdata[runs->len - 1];
    g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                "--baseline %s: no such configuration in this "
                "run",
                name);
    return NULL;
}

static KbTrace *load_slice(const Opts *o, const char *path, KbTrace **all_out, GError **error)
{
    KbTraceParseOptions popts = {.skip_bad_rows = o->skip_bad_rows};
    g_autoptr(KbTrace) all = o->synthetic != NULL ? kb_trace_synthetic(o->synthetic, error)
                                                  : kb_trace_load(path, &popts, error);
    if (all == NULL)
        return NULL;
    KbTraceSelection sel = {.skip = (guint)MAX(o->skip, 0),
                            .max_jobs = (guint)MAX(o->jobs, 0),
                            .window = (gint64)(o->hours * 3600),
                            .duration_scale = o->duration_scale,
                            .arrival_scale = o->arrival_scale};
    if (o->from != NULL && !kb_trace_parse_time(o->from, &sel.from)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                    "--from \"%s\": want \"YYYY-MM-DD HH:MM:SS\"", o->from);
        return NULL;
    }
    KbTrace *slice = kb_trace_select(all, &sel, error);
    if (slice != NULL)
        *all_out = g_steal_pointer(&all);
    return slice;
}

/* A progress bar on stderr while replays run, only when stderr is a terminal. */
typedef struct {
    GMutex lock;
    GPtrArray *runs;
    guint *arrived;
    guint n_jobs;
    gint64 last_us;
} Progress;

static Progress progress;

static void progress_draw(void)
{
    guint64 sum = 0;
    for (guint i = 0; i < progress.runs->len; i++)
        sum += progress.arrived[i];
    double frac =
            progress.n_jobs > 0 ? (double)sum / ((double)progress.n_jobs * progress.runs->len) : 1;
    int width = 40, fill = (int)(frac * width);
    fprintf(stderr, "\rreplaying %u configuration%s [%.*s%*s] %3.0f%%", progress.runs->len,
            progress.runs->len == 1 ? "" : "s", fill, "########################################",
            width - fill, "", 100 * frac);
    fflush(stderr);
}

static void on_progress(gpointer data, guint arrived, guint n_jobs)
{
    guint idx = GPOINTER_TO_UINT(data);
    g_mutex_lock(&progress.lock);
    progress.arrived[idx] = arrived;
    gint64 now = g_get_monotonic_time();
    if (now - progress.last_us > 200000 || arrived == n_jobs) {
        progress.last_us = now;
        progress_draw();
    }
    g_mutex_unlock(&progress.lock);
}

/* Each replay owns its cache, so replays of different configurations can run on their own
 * threads; the core keeps no mutable global state for the resources used here (fixed slots). */
static void replay_one(gpointer data, gpointer user_data)
{
    Run *run = data;
    run->report = kb_sim_run(run->slice, run->conf, &run->sim, &run->error);
}

static void replay_run(GPtrArray *runs, int n);

static void on_cycle(const KbCycleResult *res, gpointer data)
{
    Run *run = data;
    if (run->shares != NULL)
        kb_qshare_on_cycle(res, run->shares);
    if (run->why != NULL)
        kb_jobtrace_on_cycle(res, run->why);
    if (run->fair != NULL)
        kb_fairness_on_cycle(res, run->fair);
}

static void replay_all(GPtrArray *runs, const KbTrace *slice, const KbSimOptions *sim, int threads,
                       const char *const *trace_jobs, gboolean wait_reasons, double fairness)
{
    int n = threads > 0 ? threads : (int)g_get_num_processors();
    n = CLAMP(n, 1, (int)runs->len);
    gboolean bar = isatty(STDERR_FILENO);
    if (bar) {
        progress.runs = runs;
        progress.arrived = g_new0(guint, runs->len);
        progress.n_jobs = slice->n_jobs;
    }
    for (guint i = 0; i < runs->len; i++) {
        Run *run = runs->pdata[i];
        run->slice = slice;
        run->sim = *sim;
        run->sim.single_queue = run->single_queue;
        if (bar) {
            run->sim.progress = on_progress;
            run->sim.progress_data = GUINT_TO_POINTER(i);
        }
        if (sim->queue_specs != NULL)
            run->shares = kb_qshare_new();
        if (trace_jobs != NULL || wait_reasons)
            run->why = kb_jobtrace_new(trace_jobs, wait_reasons,
                                       (gint64)sim->n_nodes * sim->gpus_per_node, stdout);
        if (fairness > 0)
            run->fair = kb_fairness_new((gint64)sim->n_nodes * sim->gpus_per_node,
                                        (gint64)(fairness * 3600));
        if (run->shares != NULL || run->why != NULL || run->fair != NULL) {
            run->sim.on_cycle = on_cycle;
            run->sim.on_cycle_data = run;
        }
    }
    replay_run(runs, n);
    if (bar) {
        fprintf(stderr, "\r%*s\r", 70, "");
        g_clear_pointer(&progress.arrived, g_free);
    }
}

static void replay_run(GPtrArray *runs, int n)
{
    if (n == 1) {
        for (guint i = 0; i < runs->len; i++)
            replay_one(runs->pdata[i], NULL);
        return;
    }
    GThreadPool *pool = g_thread_pool_new(replay_one, NULL, n, TRUE, NULL);
    for (guint i = 0; i < runs->len; i++)
        g_thread_pool_push(pool, runs->pdata[i], NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
}

static void opts_clear(Opts *o)
{
    g_free(o->trace);
    g_free(o->from);
    g_free(o->pack);
    g_free(o->baseline);
    g_free(o->restart_cost);
    g_free(o->plot_dir);
    g_free(o->summary_json);
    g_free(o->synthetic);
    g_strfreev(o->configs);
    g_strfreev(o->conf_files);
    g_strfreev(o->weights);
    g_free(o->queue_tree);
    g_strfreev(o->trace_jobs);
}

/* --trace-job names as cache keys ("queue/jNNNNNN"; a bare jNNNNNN gets its job's queue);
 * NULL-terminated, or NULL when none. */
static GPtrArray *trace_job_keys(char **names, const KbTrace *slice)
{
    if (names == NULL)
        return NULL;
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; names[i] != NULL; i++) {
        guint idx;
        if (strchr(names[i], '/') == NULL && names[i][0] == 'j' &&
            sscanf(names[i] + 1, "%u", &idx) == 1 && idx < slice->n_jobs)
            g_ptr_array_add(keys, g_strdup_printf("%s/%s", slice->jobs[idx].queue, names[i]));
        else
            g_ptr_array_add(keys, g_strdup(names[i]));
    }
    g_ptr_array_add(keys, NULL);
    return keys;
}

static int fail(GError *error)
{
    fprintf(stderr, "bench-trace: %s\n", error->message);
    g_error_free(error);
    return 2;
}

static int fail(GError *error);

/* The first configuration on a synthetic trace, the same trace line as @spec, of @n jobs. */
static KbSimReport *scaling_run(const Run *first, const char *spec, guint n,
                                const KbSimOptions *sim, double *days, GError **error)
{
    g_autofree char *with_n = g_strdup_printf("%s,jobs=%u", spec, n);
    g_autoptr(KbTrace) t = kb_trace_synthetic(with_n, error);
    if (t == NULL)
        return NULL;
    *days = (double)(t->jobs[t->n_jobs - 1].submit - t->jobs[0].submit) / 86400;
    KbSimOptions opts = *sim;
    opts.single_queue = first->single_queue;
    opts.progress = NULL;
    opts.on_cycle = NULL;
    opts.queue_specs = NULL;
    return kb_sim_run(t, first->conf, &opts, error);
}

/*
 * --scaling: the first configuration on a steady synthetic load (the --synthetic SPEC, else
 * SCALING_SPEC) of N jobs, then of 10 N jobs at the same arrival rate, sizes and durations (so
 * 10x the simulated time at the same load), one after the other on this thread, SCALING_ROUNDS
 * times; prints both CPU times (the least of the rounds) and their ratio. A load above what the
 * cluster serves is no steady load: its queue, and the cost of every cycle, grow with time.
 */
static int print_scaling(const Run *first, const Opts *o, const KbSimOptions *sim)
{
    const char *spec = o->synthetic != NULL ? o->synthetic : SCALING_SPEC;
    GError *error = NULL;
    g_autoptr(KbTrace) base = kb_trace_synthetic(spec, &error);
    if (base == NULL)
        return fail(error);
    guint n = base->n_jobs;
    if ((guint64)n * 10 > KB_TRACE_DEFAULT_MAX_JOBS) {
        fprintf(stderr, "bench-trace: --scaling: %u jobs: 10x that is over %d\n", n,
                KB_TRACE_DEFAULT_MAX_JOBS);
        return 2;
    }
    printf("\n== scaling (%s, synthetic \"%s\" on %u x %u GPUs, N and 10 N jobs at the same "
           "load; least CPU time of %d rounds)\n",
           first->name, spec, sim->n_nodes, sim->gpus_per_node, SCALING_ROUNDS);
    double days[2] = {0, 0};
    KbSimReport *best[2] = {NULL, NULL};
    for (guint round = 0; round < SCALING_ROUNDS; round++) {
        for (guint k = 0; k < 2; k++) {
            guint jobs = k == 0 ? n : n * 10;
            KbSimReport *r = scaling_run(first, spec, jobs, sim, &days[k], &error);
            if (r == NULL) {
                kb_sim_report_free(best[0]);
                kb_sim_report_free(best[1]);
                return fail(error);
            }
            printf("  round %u: %7u jobs  CPU %.2f s\n", round + 1, jobs, r->cpu_s);
            if (best[k] == NULL || r->cpu_s < best[k]->cpu_s) {
                kb_sim_report_free(best[k]);
                best[k] = r;
            } else {
                kb_sim_report_free(r);
            }
        }
    }
    for (guint k = 0; k < 2; k++) {
        const KbSimReport *r = best[k];
        printf("  %7u jobs (%.1f days submitted)  CPU %.2f s  %u cycles (+%u skipped)  GPU util. "
               "%.1f%%  mean wait %.0f s\n",
               r->n_jobs, days[k], r->cpu_s, r->n_cycles, r->n_cycles_skipped,
               100 * r->util_busy_arrivals, r->wait_mean);
    }
    double ratio = best[0]->cpu_s > 0 ? best[1]->cpu_s / best[0]->cpu_s : 0;
    printf("  %.2fx the CPU time for 10x the jobs (%.1f and %.1f us per job)\n", ratio,
           1e6 * best[0]->cpu_s / n, 1e6 * best[1]->cpu_s / (10.0 * n));
    kb_sim_report_free(best[0]);
    kb_sim_report_free(best[1]);
    return 0;
}

/* --summary-json and --plot. */
static int write_outputs(const Opts *o, GPtrArray *runs, const char *path, const KbTrace *slice)
{
    if (o->summary_json == NULL && o->plot_dir == NULL)
        return 0;
    g_autofree KbSimNamed *named = g_new0(KbSimNamed, runs->len);
    for (guint i = 0; i < runs->len; i++) {
        named[i].name = ((Run *)runs->pdata[i])->name;
        named[i].report = ((Run *)runs->pdata[i])->report;
    }
    g_autofree char *base = g_path_get_basename(path);
    g_autofree char *about = g_strdup_printf("%s: %u jobs on %d nodes x %d GPUs", base,
                                             slice->n_jobs, o->nodes, o->gpus_per_node);
    GError *error = NULL;
    if (o->summary_json != NULL &&
        !kb_sim_write_summary_json(o->summary_json, about, named, runs->len, &error))
        return fail(error);
    if (o->plot_dir != NULL) {
        gboolean ran = FALSE;
        if (!kb_sim_plot(o->plot_dir, about, named, runs->len, &ran, &error))
            return fail(error);
        if (ran)
            printf("\nplots       %s/{gpus-in-use,jobs-waiting,wait-cdf,jct-cdf,"
                   "wait-cdf-by-size,jct-cdf-by-size}.{png,svg}\n",
                   o->plot_dir);
        else
            printf("\nplots       gnuplot not found (apt-get install gnuplot-nox): data and "
                   "script written to %s/ (run gnuplot plots.gp there)\n",
                   o->plot_dir);
    }
    return 0;
}

/* Everything after option parsing; @o stays owned by the caller. Returns the exit status. */
static int bench(const Opts *o)
{
    GError *error = NULL;
    KbSimOptions sim;
    kb_sim_options_init(&sim);
    sim.n_nodes = (guint)MAX(o->nodes, 0);
    sim.gpus_per_node = (guint)MAX(o->gpus_per_node, 0);
    sim.period = o->period;
    sim.max_cycles = (guint)MAX(o->max_cycles, 0);
    sim.no_skip = o->no_skip;
    sim.check_skips = o->check_skips;
    if (o->nodes < 1 || o->nodes > KB_SIM_MAX_NODES || o->gpus_per_node < 1 ||
        o->gpus_per_node > KB_SIM_MAX_GPUS_PER_NODE || o->period < 1) {
        fprintf(stderr,
                "bench-trace: --nodes %d / --gpus-per-node %d / --period %d: want 1..%d, "
                "1..%d, >= 1\n",
                o->nodes, o->gpus_per_node, o->period, KB_SIM_MAX_NODES, KB_SIM_MAX_GPUS_PER_NODE);
        return 2;
    }
    if (o->restart_cost != NULL &&
        !kb_sim_restart_cost_from_string(o->restart_cost, &sim.restart_cost)) {
        fprintf(stderr, "bench-trace: --restart-cost %s: want full or none\n", o->restart_cost);
        return 2;
    }
    if (!(o->high_priority >= 0 && o->high_priority <= 1)) {
        fprintf(stderr, "bench-trace: --high-priority %g: want a fraction in 0..1\n",
                o->high_priority);
        return 2;
    }
    sim.high_fraction = o->high_priority;
    if (!(o->estimate_factor >= 0 && o->estimate_factor <= 1000)) {
        fprintf(stderr, "bench-trace: --estimate-factor %g: want 0..1000\n", o->estimate_factor);
        return 2;
    }
    sim.estimate_factor = o->estimate_factor;
    if (o->compare_jobs < 0 || o->compare_gpus < 0) {
        fprintf(stderr, "bench-trace: --compare-jobs %d --compare-gpus %d: want counts >= 0\n",
                o->compare_jobs, o->compare_gpus);
        return 2;
    }
    if (!(o->fairness >= 0 && o->fairness <= 24 * 365)) {
        fprintf(stderr, "bench-trace: --fairness %g: want a window in hours, 0..8760\n",
                o->fairness);
        return 2;
    }
    if (!(o->min_fraction >= 0 && o->min_fraction <= 1)) {
        fprintf(stderr, "bench-trace: --min-fraction %g: want a fraction in 0..1\n",
                o->min_fraction);
        return 2;
    }
    sim.min_fraction = o->min_fraction;
    if (o->pack != NULL && !kb_trace_pack_from_string(o->pack, &sim.pack)) {
        fprintf(stderr, "bench-trace: --pack %s: want node or one\n", o->pack);
        return 2;
    }
    g_autoptr(GHashTable) weights = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (!parse_weights(o->weights, weights, &error))
        return fail(error);
    sim.weights = weights;
    const char *path = o->synthetic != NULL ? "synthetic"
                       : o->trace != NULL   ? o->trace
                                            : g_getenv("KB_TRACE");
    g_autoptr(GHashTable) tree = NULL;
    if (o->queue_tree != NULL && (tree = kb_qshare_load_tree(o->queue_tree, &error)) == NULL)
        return fail(error);
    sim.queue_specs = tree;
    if (path == NULL) {
        path = DEFAULT_TRACE;
        if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
            printf("bench-trace: skipped: no trace at %s (pass --trace FILE or set KB_TRACE)\n",
                   path);
            return 0;
        }
    }
    g_autoptr(KbTrace) all = NULL;
    g_autoptr(KbTrace) slice = load_slice(o, path, &all, &error);
    if (slice == NULL)
        return fail(error);
    g_autoptr(GPtrArray) runs = make_runs(o, &error);
    if (runs == NULL)
        return fail(error);
    const Run *base = find_baseline(runs, o->baseline, &error);
    if (base == NULL)
        return fail(error);
    print_header(path, all, slice, o, &sim);
    g_autoptr(GPtrArray) traced = trace_job_keys(o->trace_jobs, slice);
    replay_all(runs, slice, &sim, o->threads,
               traced != NULL ? (const char *const *)traced->pdata : NULL, o->wait_reasons,
               o->fairness);
    for (guint i = 0; i < runs->len; i++) {
        Run *run = runs->pdata[i];
        if (run->report == NULL) {
            fprintf(stderr, "bench-trace: %s: %s\n", run->name, run->error->message);
            return 2;
        }
        print_run(run, o);
    }
    if (runs->len > 1)
        print_ratios(runs, base);
    if (o->compare_jobs > 0)
        print_job_diffs(runs, base, o);
    int rc = write_outputs(o, runs, path, slice);
    if (rc == 0 && o->scaling)
        rc = print_scaling(runs->pdata[0], o, &sim);
    return rc;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "C");
    Opts o = {.jobs = 5000,
              .nodes = 64,
              .gpus_per_node = 8,
              .period = 1,
              .show_unfinished = 5,
              .duration_scale = 1,
              .arrival_scale = 1,
              .estimate_factor = 1};
    GError *error = NULL;
    int rc = parse_options(argc, argv, &o, &error) ? bench(&o) : fail(error);
    opts_clear(&o);
    return rc;
}
