/*
 * Prometheus registry and text exposition format 0.0.4.
 *
 * Numbers are formatted the way Prometheus' Go client formats them (strconv 'g', shortest), so
 * the output is byte-for-byte what a Go exporter with the same values would serve.
 */
#include "kube/kb-metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct KbSeries {
    KbMetric *metric;
    char **values;      /* one per label name, owned */
    double value;       /* counter or gauge value; histogram sum */
    guint64 count;      /* histogram observations */
    guint64 *in_bucket; /* histogram: observations whose smallest bound is bounds[i] */
};

struct KbMetric {
    KbMetrics *registry;
    KbMetricType type;
    char *name;
    char *help;
    char **label_names; /* NULL-terminated, owned */
    guint n_labels;
    double *bounds;
    guint n_bounds;
    GHashTable *series; /* encoded label values -> KbSeries, owned */
    guint max_series;
    guint64 refused;
    gboolean warned;
};

typedef struct {
    KbMetricsCollectFunc func;
    gpointer user_data;
} Collector;

struct KbMetrics {
    GHashTable *by_name; /* name -> KbMetric, owned */
    guint max_series;
    GArray *collectors;
};

static const double default_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

static void series_free(gpointer p)
{
    KbSeries *s = p;

    g_strfreev(s->values);
    g_free(s->in_bucket);
    g_free(s);
}

static void metric_free(gpointer p)
{
    KbMetric *m = p;

    g_hash_table_unref(m->series);
    g_free(m->name);
    g_free(m->help);
    g_strfreev(m->label_names);
    g_free(m->bounds);
    g_free(m);
}

KbMetrics *kb_metrics_new(void)
{
    KbMetrics *metrics = g_new0(KbMetrics, 1);

    metrics->by_name = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, metric_free);
    metrics->max_series = KB_METRICS_MAX_SERIES;
    metrics->collectors = g_array_new(FALSE, FALSE, sizeof(Collector));
    return metrics;
}

void kb_metrics_free(KbMetrics *metrics)
{
    if (metrics == NULL)
        return;
    g_hash_table_unref(metrics->by_name);
    g_array_unref(metrics->collectors);
    g_free(metrics);
}

void kb_metrics_set_max_series(KbMetrics *metrics, guint max_series)
{
    g_return_if_fail(metrics != NULL);
    metrics->max_series = max_series;
}

void kb_metrics_add_collector(KbMetrics *metrics, KbMetricsCollectFunc func, gpointer user_data)
{
    Collector c = {func, user_data};

    g_return_if_fail(metrics != NULL && func != NULL);
    g_array_append_val(metrics->collectors, c);
}

void kb_metrics_remove_collector(KbMetrics *metrics, KbMetricsCollectFunc func, gpointer user_data)
{
    for (guint i = metrics->collectors->len; i > 0; i--) {
        Collector *c = &g_array_index(metrics->collectors, Collector, i - 1);
        if (c->func == func && c->user_data == user_data)
            g_array_remove_index(metrics->collectors, i - 1);
    }
}

/* ---- registration ------------------------------------------------------------------------- */

static gboolean valid_name(const char *name, gboolean colon_ok)
{
    if (name == NULL || name[0] == '\0' || g_ascii_isdigit(name[0]))
        return FALSE;
    for (const char *p = name; *p != '\0'; p++) {
        if (!g_ascii_isalnum(*p) && *p != '_' && !(colon_ok && *p == ':'))
            return FALSE;
    }
    return TRUE;
}

static gboolean valid_labels(const char *metric, const char *const *label_names, gboolean histogram)
{
    guint n = label_names != NULL ? g_strv_length((char **)label_names) : 0;

    if (n > KB_METRICS_MAX_LABELS) {
        g_critical("metric %s: %u label names, at most %d", metric, n, KB_METRICS_MAX_LABELS);
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        if (!valid_name(label_names[i], FALSE) || g_str_has_prefix(label_names[i], "__") ||
            (histogram && strcmp(label_names[i], "le") == 0)) {
            g_critical("metric %s: invalid label name \"%s\"", metric, label_names[i]);
            return FALSE;
        }
        for (guint j = 0; j < i; j++) {
            if (strcmp(label_names[i], label_names[j]) == 0) {
                g_critical("metric %s: duplicate label name \"%s\"", metric, label_names[i]);
                return FALSE;
            }
        }
    }
    return TRUE;
}

static gboolean valid_buckets(const char *metric, const double *bounds, guint n)
{
    if (n == 0 || n > KB_METRICS_MAX_BUCKETS) {
        g_critical("metric %s: %u buckets, expected 1 to %d", metric, n, KB_METRICS_MAX_BUCKETS);
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
            g_critical("metric %s: bucket bounds must be finite and increasing (bucket %u: %g)",
                       metric, i, bounds[i]);
            return FALSE;
        }
    }
    return TRUE;
}

static KbMetric *metric_register(KbMetrics *metrics, KbMetricType type, const char *name,
                                 const char *help, const char *const *label_names,
                                 const double *bounds, guint n_bounds)
{
    KbMetric *m;

    g_return_val_if_fail(metrics != NULL, NULL);
    if (!valid_name(name, TRUE)) {
        g_critical("invalid metric name \"%s\"", name != NULL ? name : "(null)");
        return NULL;
    }
    if (g_hash_table_contains(metrics->by_name, name)) {
        g_critical("metric %s registered twice", name);
        return NULL;
    }
    if (!valid_labels(name, label_names, type == KB_METRIC_HISTOGRAM))
        return NULL;
    if (type == KB_METRIC_HISTOGRAM && !valid_buckets(name, bounds, n_bounds))
        return NULL;

    m = g_new0(KbMetric, 1);
    m->registry = metrics;
    m->type = type;
    m->name = g_strdup(name);
    m->help = g_strdup(help != NULL ? help : "");
    m->label_names =
            g_strdupv((char **)(label_names != NULL ? label_names : (const char *const[]){NULL}));
    m->n_labels = g_strv_length(m->label_names);
    if (type == KB_METRIC_HISTOGRAM) {
        m->bounds = g_memdup2(bounds, n_bounds * sizeof(double));
        m->n_bounds = n_bounds;
    }
    m->series = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, series_free);
    m->max_series = MAX(metrics->max_series, 1);
    g_hash_table_insert(metrics->by_name, m->name, m);
    if (m->n_labels == 0)
        kb_metric_series(m, NULL);
    return m;
}

KbMetric *kb_metrics_counter(KbMetrics *metrics, const char *name, const char *help,
                             const char *const *label_names)
{
    return metric_register(metrics, KB_METRIC_COUNTER, name, help, label_names, NULL, 0);
}

KbMetric *kb_metrics_gauge(KbMetrics *metrics, const char *name, const char *help,
                           const char *const *label_names)
{
    return metric_register(metrics, KB_METRIC_GAUGE, name, help, label_names, NULL, 0);
}

KbMetric *kb_metrics_histogram(KbMetrics *metrics, const char *name, const char *help,
                               const char *const *label_names, const double *buckets,
                               guint n_buckets)
{
    if (buckets == NULL) {
        buckets = default_buckets;
        n_buckets = G_N_ELEMENTS(default_buckets);
    }
    return metric_register(metrics, KB_METRIC_HISTOGRAM, name, help, label_names, buckets,
                           n_buckets);
}

KbMetric *kb_metrics_lookup(KbMetrics *metrics, const char *name)
{
    g_return_val_if_fail(metrics != NULL && name != NULL, NULL);
    return g_hash_table_lookup(metrics->by_name, name);
}

/* ---- series ---------------------------------------------------------------------------------- */

/* Length-prefixed values: unambiguous whatever bytes the values hold. NULL when a value is too
 * long. */
static char *series_key(const KbMetric *m, const char *const *values)
{
    GString *key = g_string_new(NULL);

    for (guint i = 0; i < m->n_labels; i++) {
        const char *v = values[i] != NULL ? values[i] : "";
        gsize len = strlen(v);

        if (len > KB_METRICS_MAX_LABEL_VALUE) {
            g_string_free(key, TRUE);
            return NULL;
        }
        g_string_append_printf(key, "%zu:", len);
        g_string_append_len(key, v, len);
    }
    return g_string_free(key, FALSE);
}

static void refuse(KbMetric *m, const char *why)
{
    m->refused++;
    /* Once per family: the counter says how many followed. */
    if (!m->warned) {
        m->warned = TRUE;
        g_warning("metric %s: %s; new label sets are dropped", m->name, why);
    }
}

KbSeries *kb_metric_series(KbMetric *metric, const char *const *label_values)
{
    g_autofree char *key = NULL;
    KbSeries *s;

    g_return_val_if_fail(metric != NULL, NULL);
    g_return_val_if_fail(metric->n_labels == 0 || label_values != NULL, NULL);

    key = series_key(metric, label_values);
    if (key == NULL) {
        refuse(metric, "label value longer than " G_STRINGIFY(KB_METRICS_MAX_LABEL_VALUE) " bytes");
        return NULL;
    }
    s = g_hash_table_lookup(metric->series, key);
    if (s != NULL)
        return s;
    if (g_hash_table_size(metric->series) >= metric->max_series) {
        g_autofree char *why = g_strdup_printf("more than %u label sets", metric->max_series);
        refuse(metric, why);
        return NULL;
    }
    s = g_new0(KbSeries, 1);
    s->metric = metric;
    s->values = g_new0(char *, metric->n_labels + 1);
    for (guint i = 0; i < metric->n_labels; i++)
        s->values[i] = g_strdup(label_values[i] != NULL ? label_values[i] : "");
    if (metric->type == KB_METRIC_HISTOGRAM)
        s->in_bucket = g_new0(guint64, metric->n_bounds);
    g_hash_table_insert(metric->series, g_steal_pointer(&key), s);
    return s;
}

KbSeries *kb_metric_with(KbMetric *metric, ...)
{
    const char *values[KB_METRICS_MAX_LABELS + 1] = {NULL};
    const char *v;
    guint n = 0;
    va_list ap;

    g_return_val_if_fail(metric != NULL, NULL);
    va_start(ap, metric);
    while ((v = va_arg(ap, const char *)) != NULL && n < KB_METRICS_MAX_LABELS)
        values[n++] = v;
    va_end(ap);
    if (n != metric->n_labels) {
        g_critical("metric %s: %u label values for %u label names", metric->name, n,
                   metric->n_labels);
        return NULL;
    }
    return kb_metric_series(metric, values);
}

gboolean kb_metric_remove(KbMetric *metric, const char *const *label_values)
{
    g_autofree char *key = NULL;

    g_return_val_if_fail(metric != NULL, FALSE);
    key = series_key(metric, label_values);
    return key != NULL && g_hash_table_remove(metric->series, key);
}

void kb_metric_reset(KbMetric *metric)
{
    g_return_if_fail(metric != NULL);
    g_hash_table_remove_all(metric->series);
    if (metric->n_labels == 0)
        kb_metric_series(metric, NULL);
}

guint kb_metric_size(const KbMetric *metric)
{
    g_return_val_if_fail(metric != NULL, 0);
    return g_hash_table_size(metric->series);
}

guint64 kb_metric_refused(const KbMetric *metric)
{
    g_return_val_if_fail(metric != NULL, 0);
    return metric->refused;
}

KbMetricType kb_metric_type(const KbMetric *metric)
{
    g_return_val_if_fail(metric != NULL, KB_METRIC_COUNTER);
    return metric->type;
}

void kb_series_inc(KbSeries *series)
{
    kb_series_add(series, 1);
}

void kb_series_add(KbSeries *series, double v)
{
    if (series == NULL)
        return;
    if (series->metric->type == KB_METRIC_COUNTER && !(v >= 0)) {
        g_warning("metric %s: counter cannot decrease (add %g)", series->metric->name, v);
        return;
    }
    series->value += v;
}

void kb_series_set(KbSeries *series, double v)
{
    if (series == NULL)
        return;
    if (series->metric->type != KB_METRIC_GAUGE) {
        g_warning("metric %s: set on a non-gauge", series->metric->name);
        return;
    }
    series->value = v;
}

void kb_series_sub(KbSeries *series, double v)
{
    if (series == NULL)
        return;
    if (series->metric->type != KB_METRIC_GAUGE) {
        g_warning("metric %s: sub on a non-gauge", series->metric->name);
        return;
    }
    series->value -= v;
}

void kb_series_observe(KbSeries *series, double v)
{
    const KbMetric *m;

    if (series == NULL)
        return;
    m = series->metric;
    if (m->type != KB_METRIC_HISTOGRAM) {
        g_warning("metric %s: observe on a non-histogram", m->name);
        return;
    }
    for (guint i = 0; i < m->n_bounds; i++) {
        if (v <= m->bounds[i]) {
            series->in_bucket[i]++;
            break;
        }
    }
    series->count++;
    series->value += v;
}

double kb_series_value(const KbSeries *series)
{
    return series != NULL ? series->value : 0;
}

guint64 kb_series_count(const KbSeries *series)
{
    return series != NULL ? series->count : 0;
}

void kb_metric_inc(KbMetric *metric)
{
    kb_series_inc(kb_metric_series(metric, NULL));
}

void kb_metric_add(KbMetric *metric, double v)
{
    kb_series_add(kb_metric_series(metric, NULL), v);
}

void kb_metric_set(KbMetric *metric, double v)
{
    kb_series_set(kb_metric_series(metric, NULL), v);
}

void kb_metric_observe(KbMetric *metric, double v)
{
    kb_series_observe(kb_metric_series(metric, NULL), v);
}

/* ---- rendering ------------------------------------------------------------------------------ */

char *kb_metrics_format_double(double v, char *buf)
{
    char tmp[40];
    int prec;
    int exp;
    const char *e;

    if (isnan(v))
        return strcpy(buf, "NaN");
    if (isinf(v))
        return strcpy(buf, v > 0 ? "+Inf" : "-Inf");
    if (v == 0)
        return strcpy(buf, signbit(v) ? "-0" : "0");
    /* The fewest significant digits that read back as the same double. */
    for (prec = 1; prec < 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
    e = strchr(tmp, 'e');
    exp = atoi(e + 1);
    /* Go's %g with shortest precision switches to an exponent at 1e-05 and 1e+06. */
    if (exp < -4 || exp >= 6)
        return strcpy(buf, tmp);
    snprintf(buf, 32, "%.*f", MAX(prec - 1 - exp, 0), v);
    return buf;
}

static void append_escaped(GString *out, const char *s, gboolean quote)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            g_string_append(out, "\\\\");
        else if (*s == '\n')
            g_string_append(out, "\\n");
        else if (quote && *s == '"')
            g_string_append(out, "\\\"");
        else
            g_string_append_c(out, *s);
    }
}

/* name{labels[,le="bound"]} value */
static void append_sample(GString *out, const KbSeries *s, const char *suffix, const char *le,
                          double value)
{
    const KbMetric *m = s->metric;
    char num[40];

    g_string_append(out, m->name);
    g_string_append(out, suffix);
    if (m->n_labels > 0 || le != NULL) {
        g_string_append_c(out, '{');
        for (guint i = 0; i < m->n_labels; i++) {
            if (i > 0)
                g_string_append_c(out, ',');
            g_string_append_printf(out, "%s=\"", m->label_names[i]);
            append_escaped(out, s->values[i], TRUE);
            g_string_append_c(out, '"');
        }
        if (le != NULL)
            g_string_append_printf(out, "%sle=\"%s\"", m->n_labels > 0 ? "," : "", le);
        g_string_append_c(out, '}');
    }
    g_string_append_c(out, ' ');
    g_string_append(out, kb_metrics_format_double(value, num));
    g_string_append_c(out, '\n');
}

static void append_series(GString *out, const KbSeries *s)
{
    const KbMetric *m = s->metric;
    guint64 cumulative = 0;
    char le[40];

    if (m->type != KB_METRIC_HISTOGRAM) {
        append_sample(out, s, "", NULL, s->value);
        return;
    }
    for (guint i = 0; i < m->n_bounds; i++) {
        cumulative += s->in_bucket[i];
        append_sample(out, s, "_bucket", kb_metrics_format_double(m->bounds[i], le),
                      (double)cumulative);
    }
    append_sample(out, s, "_bucket", "+Inf", (double)s->count);
    append_sample(out, s, "_sum", NULL, s->value);
    append_sample(out, s, "_count", NULL, (double)s->count);
}

static int series_cmp(gconstpointer a, gconstpointer b)
{
    const KbSeries *x = *(const KbSeries *const *)a;
    const KbSeries *y = *(const KbSeries *const *)b;

    for (guint i = 0; i < x->metric->n_labels; i++) {
        int c = strcmp(x->values[i], y->values[i]);
        if (c != 0)
            return c;
    }
    return 0;
}

static const char *type_name(KbMetricType type)
{
    switch (type) {
    case KB_METRIC_COUNTER:
        return "counter";
    case KB_METRIC_GAUGE:
        return "gauge";
    case KB_METRIC_HISTOGRAM:
        return "histogram";
    }
    return "untyped";
}

static void append_family(GString *out, const KbMetric *m)
{
    g_autoptr(GPtrArray) all = g_ptr_array_sized_new(g_hash_table_size(m->series));
    GHashTableIter it;
    gpointer s;

    g_hash_table_iter_init(&it, m->series);
    while (g_hash_table_iter_next(&it, NULL, &s))
        g_ptr_array_add(all, s);
    g_ptr_array_sort(all, series_cmp);

    g_string_append_printf(out, "# HELP %s ", m->name);
    append_escaped(out, m->help, FALSE);
    g_string_append_printf(out, "\n# TYPE %s %s\n", m->name, type_name(m->type));
    for (guint i = 0; i < all->len; i++)
        append_series(out, all->pdata[i]);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *kb_metrics_render(KbMetrics *metrics)
{
    g_autofree gpointer *names = NULL;
    guint n = 0;
    GString *out;

    g_return_val_if_fail(metrics != NULL, NULL);
    for (guint i = 0; i < metrics->collectors->len; i++) {
        Collector *c = &g_array_index(metrics->collectors, Collector, i);
        c->func(metrics, c->user_data);
    }
    out = g_string_sized_new(4096);
    names = g_hash_table_get_keys_as_array(metrics->by_name, &n);
    qsort(names, n, sizeof(gpointer), name_cmp);
    for (guint i = 0; i < n; i++) {
        const KbMetric *m = g_hash_table_lookup(metrics->by_name, names[i]);
        if (g_hash_table_size(m->series) > 0)
            append_family(out, m);
    }
    return g_string_free(out, FALSE);
}
