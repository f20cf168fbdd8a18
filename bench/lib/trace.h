/*
 * Job traces for bench/: a CSV of submitted GPU jobs (the Philly trace as reduced by the Pollux
 * artifact: "timestamp,duration,num_gpus,gpu_time,cluster"), loaded with limits, sorted by submit
 * time, cut to a slice, and mapped onto gangs of pods.
 *
 * Format: a header line naming the columns (any order; unknown columns are ignored; the columns
 * timestamp, duration, num_gpus and cluster are required), then one job per line. Fields are
 * separated by commas and not quoted. Lines end with "\n" or "\r\n"; empty lines are skipped.
 *   timestamp  submission time "YYYY-MM-DD HH:MM:SS" (UTC; a "T" separator is accepted too)
 *   duration   run time in seconds, a finite decimal >= 0
 *   num_gpus   gang size in GPUs, an integer >= 1
 *   cluster    the tenant: a DNS label (lower-case alphanumerics and "-", at most 63), used as the
 *              queue and the namespace of the job's pods
 * The generic format adds optional columns and accepts aliases (any order, extra columns ignored):
 *   submit_time        alias of timestamp; either form, or seconds (since the epoch or the
 *                      trace's start) as a decimal number
 *   gpus, queue        aliases of num_gpus, cluster
 *   pods               the gang's pod count, dividing the GPU count (GPUs split evenly); empty
 *                      or absent: one pod per node's worth (kb_trace_gang_shape)
 *   priority           an integer; > 0: the job is high priority in the simulator
 *   expected_duration  seconds the user announces (the simulator's expected-runtime
 *                      annotation); empty, absent or 0: none given
 *   e.g.
 * "submit_time,duration,gpus,pods,queue,priority,expected_duration\n0,3600,16,2,research,0,7200"
 * Errors name the source, the line, the column and the value:
 *   "philly.csv:17: column 3 (num_gpus): invalid integer \"x\"" (KB_ERROR_DECODE);
 * crossing a limit fails with KB_ERROR_LIMIT.
 */
#pragma once

#include <glib.h>

#define KB_TRACE_MAX_BYTES        (256 * 1024 * 1024) /* whole file */
#define KB_TRACE_MAX_LINE         4096                /* bytes per line, line end excluded */
#define KB_TRACE_MAX_COLUMNS      32
#define KB_TRACE_DEFAULT_MAX_JOBS 1000000
#define KB_TRACE_MAX_GPUS         4096            /* per job */
#define KB_TRACE_MAX_DURATION     (366.0 * 86400) /* seconds: one year */
#define KB_TRACE_MAX_QUEUES       1024            /* distinct cluster values */
#define KB_TRACE_MAX_QUEUE_LEN    63

typedef struct {
    gint64 submit;     /* unix seconds, UTC */
    double duration;   /* seconds, >= 0 */
    guint32 num_gpus;  /* >= 1 */
    const char *queue; /* interned */
    guint32 line;      /* line of the source file (for messages) */
    double expected;   /* expected_duration: what the user announces, seconds; 0: none */
    guint32 pods;      /* pods: the gang's pod count (dividing num_gpus); 0: kb_trace_gang_shape */
    gint32 priority;   /* priority: > 0 puts the job in the simulator's high PriorityClass */
} KbTraceJob;

typedef struct {
    KbTraceJob *jobs;
    guint n_jobs;
    guint n_skipped;     /* malformed rows skipped (with skip_bad_rows) */
    char *first_skipped; /* the error of the first skipped row, or NULL */
} KbTrace;

typedef struct {
    guint max_jobs; /* 0: KB_TRACE_DEFAULT_MAX_JOBS; more rows fail with KB_ERROR_LIMIT */
    gboolean
            skip_bad_rows; /* count and skip malformed rows instead of failing; limits still fail */
} KbTraceParseOptions;

/*
 * Parse @len bytes of CSV. @source names the input in messages ("philly.csv"). @opts may be NULL
 * (defaults). Returns a new trace in file order (free with kb_trace_free) or NULL with
 * KB_ERROR_DECODE / KB_ERROR_LIMIT.
 */
KbTrace *kb_trace_parse(const char *text, gsize len, const char *source,
                        const KbTraceParseOptions *opts, GError **error);
/* Read and parse @path (at most KB_TRACE_MAX_BYTES); messages name the file's base name. */
KbTrace *kb_trace_load(const char *path, const KbTraceParseOptions *opts, GError **error);
void kb_trace_free(KbTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTrace, kb_trace_free)

/* Sort by submit time, ties by source line, so that equal inputs give equal orders. */
void kb_trace_sort(KbTrace *trace);

/* Which part of a trace to replay, and how to stretch it. */
typedef struct {
    gint64 from;           /* first submit time kept (unix seconds); 0: from the first job */
    gint64 window;         /* seconds after the first kept submit; 0: no limit */
    guint skip;            /* jobs dropped after @from, before counting @max_jobs */
    guint max_jobs;        /* 0: no limit */
    double duration_scale; /* durations are multiplied by it; 0 means 1 */
    double arrival_scale;  /* gaps between submits are multiplied by it; 0 means 1 */
} KbTraceSelection;

/*
 * A new trace (free with kb_trace_free) holding the selected jobs of @trace in submit order (the
 * input need not be sorted). Scaled submit times keep the first kept job's submit time. Fails with
 * KB_ERROR_INVALID for a negative or non-finite scale, and when nothing is selected.
 */
KbTrace *kb_trace_select(const KbTrace *trace, const KbTraceSelection *sel, GError **error);

/* Distinct queues of @trace, sorted by name (interned strings; free the array only). */
GPtrArray *kb_trace_queues(const KbTrace *trace);

/* Sum of duration x num_gpus over the trace, in GPU-seconds. */
double kb_trace_gpu_seconds(const KbTrace *trace);

/*
 * How a job of @num_gpus GPUs becomes a gang of pods:
 *   KB_TRACE_PACK_NODE  each pod asks for the largest divisor of @num_gpus that fits one node
 *                       (8 GPUs -> 1 pod of 8; 16 -> 2 x 8; 12 on 8-GPU nodes -> 2 x 6; 4 -> 1 x
 * 4), as distributed training runs one worker per server; KB_TRACE_PACK_ONE   one pod per GPU.
 */
typedef enum {
    KB_TRACE_PACK_NODE,
    KB_TRACE_PACK_ONE,
} KbTracePack;

/* Number of pods of the gang; the GPUs of each go to @gpus_per_pod. @gpus_per_node >= 1. */
guint kb_trace_gang_shape(guint num_gpus, guint gpus_per_node, KbTracePack pack,
                          guint *gpus_per_pod);
/* "node" / "one" <-> KbTracePack. FALSE for an unknown name. */
gboolean kb_trace_pack_from_string(const char *s, KbTracePack *out);
const char *kb_trace_pack_to_string(KbTracePack pack);

/* Parse a "YYYY-MM-DD HH:MM:SS" (or "...T...", optional trailing "Z") UTC time. */
gboolean kb_trace_parse_time(const char *s, gint64 *unix_seconds);
