/* CSV job traces: loading with limits, sorting, slicing, gang shapes; see trace.h. */
#include "bench/lib/trace.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

enum {
    COL_TIMESTAMP,
    COL_DURATION,
    COL_NUM_GPUS,
    COL_CLUSTER,
    N_REQUIRED,
    COL_PODS = N_REQUIRED, /* optional columns (the generic format) */
    COL_PRIORITY,
    COL_EXPECTED,
    N_COLUMNS
};

/* Names of each column; the second is the generic format's alias. */
static const char *const required_names[N_COLUMNS] = {
        "timestamp", "duration", "num_gpus", "cluster", "pods", "priority", "expected_duration"};
static const char *const alias_names[N_COLUMNS] = {"submit_time", NULL, "gpus", "queue",
                                                   NULL,          NULL, NULL};

typedef struct {
    const char *source;
    const KbTraceParseOptions *opts;
    guint max_jobs;
    guint n_columns;
    int col[N_COLUMNS]; /* field index of each column; -1 for an absent optional one */
    GArray *jobs;       /* KbTraceJob */
    GHashTable *queues; /* interned names seen */
    KbTrace *trace;
} Parser;

void kb_trace_free(KbTrace *trace)
{
    if (trace == NULL)
        return;
    g_free(trace->jobs);
    g_free(trace->first_skipped);
    g_free(trace);
}

/* ---- fields --------------------------------------------------------------------------------- */

static gboolean two_digits(const char *s, int *out)
{
    if (!g_ascii_isdigit(s[0]) || !g_ascii_isdigit(s[1]))
        return FALSE;
    *out = (s[0] - '0') * 10 + (s[1] - '0');
    return TRUE;
}

gboolean kb_trace_parse_time(const char *s, gint64 *unix_seconds)
{
    int c1, c2, mo, d, h, mi, sec;
    size_t n = strlen(s);
    if (n == 20 && s[19] == 'Z')
        n = 19;
    if (n != 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
        s[16] != ':')
        return FALSE;
    if (!two_digits(s, &c1) || !two_digits(s + 2, &c2) || !two_digits(s + 5, &mo) ||
        !two_digits(s + 8, &d) || !two_digits(s + 11, &h) || !two_digits(s + 14, &mi) ||
        !two_digits(s + 17, &sec))
        return FALSE;
    int year = c1 * 100 + c2;
    if (year < 1970 || mo < 1 || mo > 12 || d < 1 || d > g_date_get_days_in_month(mo, year) ||
        h > 23 || mi > 59 || sec > 59)
        return FALSE;
    g_autoptr(GDateTime) dt = g_date_time_new_utc(year, mo, d, h, mi, sec);
    if (dt == NULL)
        return FALSE;
    *unix_seconds = g_date_time_to_unix(dt);
    return TRUE;
}

static gboolean parse_duration(const char *s, double *out)
{
    char *end = NULL;
    if (*s == '\0' || g_ascii_isspace(*s))
        return FALSE;
    errno = 0;
    double v = g_ascii_strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0)
        return FALSE;
    *out = v;
    return TRUE;
}

static gboolean parse_count(const char *s, guint64 *out)
{
    if (*s == '\0')
        return FALSE;
    for (const char *p = s; *p != '\0'; p++) {
        if (!g_ascii_isdigit(*p))
            return FALSE;
    }
    if (strlen(s) > 18)
        return FALSE;
    *out = g_ascii_strtoull(s, NULL, 10);
    return TRUE;
}

static gboolean dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KB_TRACE_MAX_QUEUE_LEN || s[0] == '-' || s[n - 1] == '-')
        return FALSE;
    for (size_t i = 0; i < n; i++) {
        if (!(g_ascii_islower(s[i]) || g_ascii_isdigit(s[i]) || s[i] == '-'))
            return FALSE;
    }
    return TRUE;
}

/* ---- rows ----------------------------------------------------------------------------------- */

static gboolean field_error(Parser *p, guint line, int which, KbErrorCode code, const char *what,
                            const char *value, GError **error)
{
    int col = p->col[which];
    g_set_error(error, KB_ERROR, code, "%s:%u: column %d (%s): %s \"%s\"", p->source, line, col + 1,
                required_names[which], what, value);
    return FALSE;
}

/* The generic format's optional columns: pods, priority, expected_duration. */
static gboolean optional_decode(Parser *p, guint line, char **fields, KbTraceJob *job,
                                GError **error)
{
    const char *f;
    guint64 v = 0;
    if (p->col[COL_PODS] >= 0 && *(f = fields[p->col[COL_PODS]]) != '\0') {
        if (!parse_count(f, &v) || v == 0 || v > job->num_gpus || job->num_gpus % v != 0)
            return field_error(p, line, COL_PODS, KB_ERROR_DECODE,
                               "invalid pod count (integer >= 1 dividing num_gpus)", f, error);
        job->pods = (guint32)v;
    }
    if (p->col[COL_PRIORITY] >= 0 && *(f = fields[p->col[COL_PRIORITY]]) != '\0') {
        const char *digits = f[0] == '-' ? f + 1 : f;
        if (!parse_count(digits, &v) || v > G_MAXINT32)
            return field_error(p, line, COL_PRIORITY, KB_ERROR_DECODE, "invalid priority (integer)",
                               f, error);
        job->priority = f[0] == '-' ? -(gint32)v : (gint32)v;
    }
    if (p->col[COL_EXPECTED] >= 0 && *(f = fields[p->col[COL_EXPECTED]]) != '\0') {
        if (!parse_duration(f, &job->expected) || job->expected > KB_TRACE_MAX_DURATION)
            return field_error(p, line, COL_EXPECTED, KB_ERROR_DECODE,
                               "invalid expected duration (seconds >= 0, at most a year)", f,
                               error);
    }
    return TRUE;
}

static gboolean row_decode(Parser *p, guint line, char **fields, KbTraceJob *job, GError **error)
{
    guint64 gpus = 0;
    const char *f;
    job->line = line;
    f = fields[p->col[COL_TIMESTAMP]];
    double secs = 0;
    if (kb_trace_parse_time(f, &job->submit))
        ;
    else if (parse_duration(f, &secs) && secs < 1e11)
        job->submit = (gint64)secs; /* seconds (since the epoch or the trace's start) */
    else
        return field_error(p, line, COL_TIMESTAMP, KB_ERROR_DECODE,
                           "invalid time (want YYYY-MM-DD HH:MM:SS or seconds)", f, error);
    f = fields[p->col[COL_DURATION]];
    if (!parse_duration(f, &job->duration))
        return field_error(p, line, COL_DURATION, KB_ERROR_DECODE,
                           "invalid duration (seconds >= 0)", f, error);
    if (job->duration > KB_TRACE_MAX_DURATION)
        return field_error(p, line, COL_DURATION, KB_ERROR_LIMIT, "duration over one year", f,
                           error);
    f = fields[p->col[COL_NUM_GPUS]];
    if (!parse_count(f, &gpus) || gpus == 0)
        return field_error(p, line, COL_NUM_GPUS, KB_ERROR_DECODE,
                           "invalid GPU count (integer >= 1)", f, error);
    if (gpus > KB_TRACE_MAX_GPUS)
        return field_error(p, line, COL_NUM_GPUS, KB_ERROR_LIMIT,
                           "more GPUs than " G_STRINGIFY(KB_TRACE_MAX_GPUS), f, error);
    job->num_gpus = (guint32)gpus;
    f = fields[p->col[COL_CLUSTER]];
    if (!dns_label(f))
        return field_error(p, line, COL_CLUSTER, KB_ERROR_DECODE,
                           "invalid queue name (lower-case DNS label, at most 63)", f, error);
    job->queue = g_intern_string(f);
    return optional_decode(p, line, fields, job, error);
}

/* Split @buf (modified) at commas into at most KB_TRACE_MAX_COLUMNS + 1 fields. */
static guint split(char *buf, char **fields)
{
    guint n = 0;
    char *s = buf;
    for (;;) {
        fields[n++] = s;
        char *comma = strchr(s, ',');
        if (comma == NULL || n > KB_TRACE_MAX_COLUMNS)
            return n;
        *comma = '\0';
        s = comma + 1;
    }
}

static gboolean header_decode(Parser *p, char *buf, GError **error)
{
    char *fields[KB_TRACE_MAX_COLUMNS + 1];
    guint n = split(buf, fields);
    if (n > KB_TRACE_MAX_COLUMNS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s:1: header has more than %d columns",
                    p->source, KB_TRACE_MAX_COLUMNS);
        return FALSE;
    }
    p->n_columns = n;
    for (guint i = 0; i < n; i++)
        g_strstrip(fields[i]);
    for (int r = 0; r < N_COLUMNS; r++) {
        p->col[r] = -1;
        for (guint i = 0; i < n; i++) {
            if ((strcmp(fields[i], required_names[r]) == 0 ||
                 (alias_names[r] != NULL && strcmp(fields[i], alias_names[r]) == 0)) &&
                p->col[r] < 0)
                p->col[r] = (int)i;
        }
        if (p->col[r] < 0 && r < N_REQUIRED) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "%s:1: header has no column \"%s\" (need timestamp, duration, num_gpus, "
                        "cluster)",
                        p->source, required_names[r]);
            return FALSE;
        }
    }
    return TRUE;
}

/* One data line (copied into @buf); FALSE with @error set for a malformed row. */
static gboolean row_parse(Parser *p, guint line, char *buf, GError **error)
{
    char *fields[KB_TRACE_MAX_COLUMNS + 1];
    if (strchr(buf, '"') != NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s:%u: quoted fields are not supported",
                    p->source, line);
        return FALSE;
    }
    guint n = split(buf, fields);
    if (n != p->n_columns) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s:%u: %u field%s, the header has %u",
                    p->source, line, n, n == 1 ? "" : "s", p->n_columns);
        return FALSE;
    }
    KbTraceJob job = {0};
    if (!row_decode(p, line, fields, &job, error))
        return FALSE;
    if (p->jobs->len >= p->max_jobs) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s:%u: more than %u jobs", p->source, line,
                    p->max_jobs);
        return FALSE;
    }
    if (!g_hash_table_contains(p->queues, job.queue)) {
        if (g_hash_table_size(p->queues) >= KB_TRACE_MAX_QUEUES) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s:%u: more than %d distinct clusters",
                        p->source, line, KB_TRACE_MAX_QUEUES);
            return FALSE;
        }
        g_hash_table_add(p->queues, (gpointer)job.queue);
    }
    g_array_append_val(p->jobs, job);
    return TRUE;
}

/* A malformed row either fails the parse or, with skip_bad_rows, is counted. Limits always fail. */
static gboolean row_handle(Parser *p, guint line, char *buf, GError **error)
{
    g_autoptr(GError) local = NULL;
    if (row_parse(p, line, buf, &local))
        return TRUE;
    if (!p->opts->skip_bad_rows || local->code == KB_ERROR_LIMIT) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (p->trace->n_skipped++ == 0)
        p->trace->first_skipped = g_strdup(local->message);
    return TRUE;
}

static gboolean lines_parse(Parser *p, const char *text, gsize len, GError **error)
{
    g_autofree char *buf = g_malloc(KB_TRACE_MAX_LINE + 1);
    gboolean have_header = FALSE;
    gsize pos = 0;
    for (guint line = 1; pos < len; line++) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        gsize n = nl != NULL ? (gsize)(nl - start) : len - pos;
        pos += n + (nl != NULL ? 1 : 0);
        if (n > 0 && start[n - 1] == '\r')
            n--;
        if (n > KB_TRACE_MAX_LINE) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s:%u: line longer than %d bytes",
                        p->source, line, KB_TRACE_MAX_LINE);
            return FALSE;
        }
        if (memchr(start, '\0', n) != NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s:%u: NUL byte in line", p->source,
                        line);
            return FALSE;
        }
        memcpy(buf, start, n);
        buf[n] = '\0';
        if (n == 0)
            continue;
        if (!have_header) {
            if (!header_decode(p, buf, error))
                return FALSE;
            have_header = TRUE;
        } else if (!row_handle(p, line, buf, error)) {
            return FALSE;
        }
    }
    if (!have_header) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: empty (no header line)", p->source);
        return FALSE;
    }
    return TRUE;
}

KbTrace *kb_trace_parse(const char *text, gsize len, const char *source,
                        const KbTraceParseOptions *opts, GError **error)
{
    static const KbTraceParseOptions defaults = {0};
    if (len > KB_TRACE_MAX_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: %" G_GSIZE_FORMAT " bytes, more than %d",
                    source, len, KB_TRACE_MAX_BYTES);
        return NULL;
    }
    g_autoptr(KbTrace) trace = g_new0(KbTrace, 1);
    g_autoptr(GArray) jobs = g_array_new(FALSE, TRUE, sizeof(KbTraceJob));
    g_autoptr(GHashTable) queues = g_hash_table_new(g_direct_hash, g_direct_equal);
    Parser p = {.source = source,
                .opts = opts != NULL ? opts : &defaults,
                .jobs = jobs,
                .queues = queues,
                .trace = trace};
    p.max_jobs = p.opts->max_jobs > 0 ? p.opts->max_jobs : KB_TRACE_DEFAULT_MAX_JOBS;
    if (!lines_parse(&p, text, len, error))
        return NULL;
    trace->n_jobs = jobs->len;
    trace->jobs = (KbTraceJob *)(void *)g_array_free(g_steal_pointer(&jobs), FALSE);
    return g_steal_pointer(&trace);
}

KbTrace *kb_trace_load(const char *path, const KbTraceParseOptions *opts, GError **error)
{
    g_autofree char *base = g_path_get_basename(path);
    g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, error);
    if (map == NULL)
        return NULL;
    const char *text = g_mapped_file_get_contents(map);
    gsize len = g_mapped_file_get_length(map);
    return kb_trace_parse(text != NULL ? text : "", len, base, opts, error);
}

/* ---- order, slices, shapes ------------------------------------------------------------------ */

static gint job_cmp(gconstpointer a, gconstpointer b)
{
    const KbTraceJob *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return 0;
}

void kb_trace_sort(KbTrace *trace)
{
    if (trace->n_jobs > 1)
        qsort(trace->jobs, trace->n_jobs, sizeof(KbTraceJob), job_cmp);
}

static gboolean scale_ok(double s)
{
    return isfinite(s) && s >= 0;
}

KbTrace *kb_trace_select(const KbTrace *trace, const KbTraceSelection *sel, GError **error)
{
    if (!scale_ok(sel->duration_scale) || !scale_ok(sel->arrival_scale)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                    "invalid scale (duration %g, arrival %g): must be finite and >= 0",
                    sel->duration_scale, sel->arrival_scale);
        return NULL;
    }
    double dscale = sel->duration_scale > 0 ? sel->duration_scale : 1.0;
    double ascale = sel->arrival_scale > 0 ? sel->arrival_scale : 1.0;
    g_autofree KbTraceJob *sorted = g_memdup2(trace->jobs, sizeof(KbTraceJob) * trace->n_jobs);
    if (trace->n_jobs > 1)
        qsort(sorted, trace->n_jobs, sizeof(KbTraceJob), job_cmp);
    g_autoptr(KbTrace) out = g_new0(KbTrace, 1);
    out->jobs = g_new0(KbTraceJob, MAX(trace->n_jobs, 1));
    guint skipped = 0;
    gint64 first = 0;
    for (guint i = 0; i < trace->n_jobs; i++) {
        KbTraceJob job = sorted[i];
        if (job.submit < sel->from || skipped++ < sel->skip)
            continue;
        if (out->n_jobs == 0)
            first = job.submit;
        if (sel->window > 0 && job.submit - first >= sel->window)
            break;
        if (sel->max_jobs > 0 && out->n_jobs >= sel->max_jobs)
            break;
        job.duration *= dscale;
        job.submit = first + (gint64)llround((double)(job.submit - first) * ascale);
        out->jobs[out->n_jobs++] = job;
    }
    if (out->n_jobs == 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                    "the selection is empty (%u jobs in the trace, skip %u)", trace->n_jobs,
                    sel->skip);
        return NULL;
    }
    return g_steal_pointer(&out);
}

static gint str_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *kb_trace_queues(const KbTrace *trace)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < trace->n_jobs; i++) {
        if (g_hash_table_add(seen, (gpointer)trace->jobs[i].queue))
            g_ptr_array_add(out, (gpointer)trace->jobs[i].queue);
    }
    g_ptr_array_sort(out, str_cmp);
    return out;
}

double kb_trace_gpu_seconds(const KbTrace *trace)
{
    double s = 0;
    for (guint i = 0; i < trace->n_jobs; i++)
        s += trace->jobs[i].duration * trace->jobs[i].num_gpus;
    return s;
}

guint kb_trace_gang_shape(guint num_gpus, guint gpus_per_node, KbTracePack pack,
                          guint *gpus_per_pod)
{
    guint per = 1;
    num_gpus = MAX(num_gpus, 1);
    if (pack == KB_TRACE_PACK_NODE) {
        for (guint d = MIN(num_gpus, MAX(gpus_per_node, 1)); d >= 1; d--) {
            if (num_gpus % d == 0) {
                per = d;
                break;
            }
        }
    }
    *gpus_per_pod = per;
    return num_gpus / per;
}

gboolean kb_trace_pack_from_string(const char *s, KbTracePack *out)
{
    if (g_strcmp0(s, "node") == 0)
        *out = KB_TRACE_PACK_NODE;
    else if (g_strcmp0(s, "one") == 0)
        *out = KB_TRACE_PACK_ONE;
    else
        return FALSE;
    return TRUE;
}

const char *kb_trace_pack_to_string(KbTracePack pack)
{
    return pack == KB_TRACE_PACK_ONE ? "one" : "node";
}
