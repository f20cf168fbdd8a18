/*
 * A small Prometheus registry: counters, gauges and histograms with fixed buckets, each with an
 * optional set of label names, rendered in the text exposition format 0.0.4.
 *
 * Everything runs on one main loop, so nothing here is thread-safe. A metric keeps at most
 * kb_metrics_set_max_series() label sets (default KB_METRICS_MAX_SERIES): past that, new label
 * sets are refused and counted, so that a flood of distinct queue or object names cannot grow
 * memory without bound.
 */
#pragma once

#include <glib.h>

#define KB_METRICS_MAX_SERIES      10000 /* label sets per metric, default */
#define KB_METRICS_MAX_LABEL_VALUE 1024  /* bytes; longer values are refused */
#define KB_METRICS_MAX_LABELS      16    /* label names per metric */
#define KB_METRICS_MAX_BUCKETS     64    /* histogram buckets */

typedef enum {
    KB_METRIC_COUNTER,
    KB_METRIC_GAUGE,
    KB_METRIC_HISTOGRAM,
} KbMetricType;

typedef struct KbMetrics KbMetrics;
typedef struct KbMetric KbMetric; /* one family: a name, a help text, label names */
typedef struct KbSeries KbSeries; /* one label set of a family */

/* Called by kb_metrics_render() before rendering, to refresh gauges computed on demand (cache
 * sizes, queue shares). */
typedef void (*KbMetricsCollectFunc)(KbMetrics *metrics, gpointer user_data);

KbMetrics *kb_metrics_new(void);
void kb_metrics_free(KbMetrics *metrics);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbMetrics, kb_metrics_free)

/* Applies to metrics registered afterwards and to label sets created afterwards. */
void kb_metrics_set_max_series(KbMetrics *metrics, guint max_series);
void kb_metrics_add_collector(KbMetrics *metrics, KbMetricsCollectFunc func, gpointer user_data);
/* Remove what kb_metrics_add_collector(@func, @user_data) added (before @user_data is freed). */
void kb_metrics_remove_collector(KbMetrics *metrics, KbMetricsCollectFunc func, gpointer user_data);

/*
 * Register a family. @name must match [a-zA-Z_:][a-zA-Z0-9_:]*, @label_names is a
 * NULL-terminated array of [a-zA-Z_][a-zA-Z0-9_]* names (NULL or empty for none; "le" is reserved
 * for histograms). Returns a metric owned by the registry, or NULL (with a critical) for an
 * invalid or duplicate name: registration is a programming error, not input.
 * A metric without labels has its single series from the start (rendered as 0).
 */
KbMetric *kb_metrics_counter(KbMetrics *metrics, const char *name, const char *help,
                             const char *const *label_names);
KbMetric *kb_metrics_gauge(KbMetrics *metrics, const char *name, const char *help,
                           const char *const *label_names);
/* @buckets: @n_buckets finite upper bounds in strictly increasing order (+Inf is implicit);
 * NULL uses the Prometheus defaults (.005 .01 .025 .05 .1 .25 .5 1 2.5 5 10). Copied. */
KbMetric *kb_metrics_histogram(KbMetrics *metrics, const char *name, const char *help,
                               const char *const *label_names, const double *buckets,
                               guint n_buckets);
/* The family registered under @name, or NULL. */
KbMetric *kb_metrics_lookup(KbMetrics *metrics, const char *name);

/*
 * The series for @label_values (as many values as the family has label names; NULL for a family
 * without labels), created on first use. Returns a pointer owned by the metric and valid until
 * the series is removed, or NULL when the family is full or a value is longer than
 * KB_METRICS_MAX_LABEL_VALUE (counted by kb_metric_refused()). Every kb_series_* function
 * accepts NULL and then does nothing, so callers need not check.
 */
KbSeries *kb_metric_series(KbMetric *metric, const char *const *label_values);
/* The same with the values as arguments, NULL-terminated: kb_metric_with(m, "q1", "cpu", NULL). */
KbSeries *kb_metric_with(KbMetric *metric, ...) G_GNUC_NULL_TERMINATED;
/* Forget one label set (a deleted queue); FALSE when it did not exist. */
gboolean kb_metric_remove(KbMetric *metric, const char *const *label_values);
/* Forget every label set (a family whose label sets are recomputed on each collection). */
void kb_metric_reset(KbMetric *metric);
guint kb_metric_size(const KbMetric *metric);
/* Label sets refused since registration (family full or value too long). */
guint64 kb_metric_refused(const KbMetric *metric);
KbMetricType kb_metric_type(const KbMetric *metric);

/* Counters: @v must be >= 0 (a negative value is ignored with a warning). */
void kb_series_inc(KbSeries *series);
void kb_series_add(KbSeries *series, double v);
/* Gauges. */
void kb_series_set(KbSeries *series, double v);
void kb_series_sub(KbSeries *series, double v);
/* Histograms: a value lands in every bucket whose bound is >= @v. */
void kb_series_observe(KbSeries *series, double v);
/* Counter or gauge value, histogram sum. */
double kb_series_value(const KbSeries *series);
/* Histogram observation count. */
guint64 kb_series_count(const KbSeries *series);

/* Shorthands for families without labels. */
void kb_metric_inc(KbMetric *metric);
void kb_metric_add(KbMetric *metric, double v);
void kb_metric_set(KbMetric *metric, double v);
void kb_metric_observe(KbMetric *metric, double v);

/*
 * Runs the collectors, then renders every family in text format 0.0.4: families sorted by name,
 * series sorted by label values, "# HELP" and "# TYPE" lines, label values escaped (\\, \", \n),
 * histograms as _bucket{le="..."} (cumulative, ending with +Inf), _sum and _count. Families with
 * no series are left out. Returns a newly allocated string.
 */
char *kb_metrics_render(KbMetrics *metrics);

/* Content-Type of the rendered text. */
#define KB_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Formats @v as Prometheus' Go clients do (shortest round-trip, "1e+06", "+Inf", "NaN") into
 * @buf of at least 32 bytes; returns @buf. */
char *kb_metrics_format_double(double v, char *buf);
