/* Synthetic job traces; see synth.h. */
#include "bench/lib/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

#define T_START     1506816000 /* 2017-10-01 00:00:00 UTC */
#define MAX_SIZES   32
#define DEFAULT_MIX "1:70/2:10/4:8/8:6/16:3/32:2/64:1"

typedef struct {
    guint jobs, queues;
    double rate;
    guint32 seed;
    guint sizes[MAX_SIZES];
    double weights[MAX_SIZES];
    guint n_sizes;
    gboolean lognormal;
    double d1, d2; /* exp: mean; lognormal: median, sigma */
} Spec;

static gboolean bad(GError **error, const char *key, const char *value)
{
    g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "--synthetic: %s=%s is not valid", key, value);
    return FALSE;
}

static gboolean number(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return FALSE;
    *out = v;
    return TRUE;
}

static gboolean parse_sizes(Spec *sp, const char *v)
{
    g_auto(GStrv) parts = g_strsplit(v, "/", -1);
    sp->n_sizes = 0;
    for (guint i = 0; parts[i] != NULL; i++) {
        g_auto(GStrv) gw = g_strsplit(parts[i], ":", 2);
        double g = 0, w = 0;
        if (sp->n_sizes >= MAX_SIZES || gw[0] == NULL || gw[1] == NULL ||
            !number(gw[0], 1, KB_TRACE_MAX_GPUS, &g) || g != floor(g) || !number(gw[1], 0, 1e9, &w))
            return FALSE;
        sp->sizes[sp->n_sizes] = (guint)g;
        sp->weights[sp->n_sizes++] = w;
    }
    double total = 0;
    for (guint i = 0; i < sp->n_sizes; i++)
        total += sp->weights[i];
    return sp->n_sizes > 0 && total > 0;
}

static gboolean parse_duration_spec(Spec *sp, const char *v)
{
    g_auto(GStrv) p = g_strsplit(v, ":", 3);
    if (p[0] != NULL && strcmp(p[0], "exp") == 0 && p[1] != NULL && p[2] == NULL) {
        sp->lognormal = FALSE;
        return number(p[1], 1, KB_TRACE_MAX_DURATION, &sp->d1);
    }
    if (p[0] != NULL && strcmp(p[0], "lognormal") == 0 && p[1] != NULL && p[2] != NULL) {
        sp->lognormal = TRUE;
        return number(p[1], 1, KB_TRACE_MAX_DURATION, &sp->d1) && number(p[2], 0, 10, &sp->d2);
    }
    return FALSE;
}

static gboolean spec_parse(const char *text, Spec *sp, GError **error)
{
    *sp = (Spec){.jobs = 1000,
                 .queues = 4,
                 .rate = 60,
                 .seed = 1,
                 .lognormal = TRUE,
                 .d1 = 1800,
                 .d2 = 1.5};
    parse_sizes(sp, DEFAULT_MIX);
    g_auto(GStrv) pairs = g_strsplit(text != NULL ? text : "", ",", -1);
    for (guint i = 0; pairs[i] != NULL; i++) {
        if (*g_strstrip(pairs[i]) == '\0')
            continue;
        char *eq = strchr(pairs[i], '=');
        if (eq == NULL)
            return bad(error, pairs[i], "(no value)");
        *eq = '\0';
        const char *k = pairs[i], *v = eq + 1;
        double x = 0;
        gboolean ok;
        if (strcmp(k, "jobs") == 0)
            ok = number(v, 1, KB_TRACE_DEFAULT_MAX_JOBS, &x) && x == floor(x), sp->jobs = (guint)x;
        else if (strcmp(k, "rate") == 0)
            ok = number(v, 1e-6, 1e7, &sp->rate);
        else if (strcmp(k, "queues") == 0)
            ok = number(v, 1, 1000, &x) && x == floor(x), sp->queues = (guint)x;
        else if (strcmp(k, "seed") == 0)
            ok = number(v, 0, G_MAXUINT32, &x) && x == floor(x), sp->seed = (guint32)x;
        else if (strcmp(k, "sizes") == 0)
            ok = parse_sizes(sp, v);
        else if (strcmp(k, "duration") == 0)
            ok = parse_duration_spec(sp, v);
        else
            ok = FALSE;
        if (!ok)
            return bad(error, k, v);
    }
    return TRUE;
}

static guint pick_size(const Spec *sp, GRand *rng)
{
    double total = 0;
    for (guint i = 0; i < sp->n_sizes; i++)
        total += sp->weights[i];
    double u = g_rand_double(rng) * total;
    for (guint i = 0; i < sp->n_sizes; i++) {
        if (u < sp->weights[i])
            return sp->sizes[i];
        u -= sp->weights[i];
    }
    return sp->sizes[sp->n_sizes - 1];
}

static double pick_duration(const Spec *sp, GRand *rng)
{
    double d;
    if (sp->lognormal) {
        /* Box-Muller: one standard normal. */
        double u1 = 1.0 - g_rand_double(rng), u2 = g_rand_double(rng);
        double z = sqrt(-2.0 * log(u1)) * cos(2 * G_PI * u2);
        d = sp->d1 * exp(sp->d2 * z);
    } else {
        d = -sp->d1 * log(1.0 - g_rand_double(rng));
    }
    return CLAMP(round(d), 1, KB_TRACE_MAX_DURATION);
}

KbTrace *kb_trace_synthetic(const char *spec, GError **error)
{
    Spec sp;
    if (!spec_parse(spec, &sp, error))
        return NULL;
    g_autoptr(GRand) rng = g_rand_new_with_seed(sp.seed);
    const char **names = g_new(const char *, sp.queues);
    for (guint q = 0; q < sp.queues; q++) {
        g_autofree char *n = g_strdup_printf("q%u", q);
        names[q] = g_intern_string(n);
    }
    KbTrace *t = g_new0(KbTrace, 1);
    t->jobs = g_new0(KbTraceJob, sp.jobs);
    t->n_jobs = sp.jobs;
    double clock = 0;
    for (guint i = 0; i < sp.jobs; i++) {
        KbTraceJob *j = &t->jobs[i];
        clock += -3600.0 / sp.rate * log(1.0 - g_rand_double(rng));
        j->submit = T_START + (gint64)clock;
        j->num_gpus = pick_size(&sp, rng);
        j->duration = pick_duration(&sp, rng);
        j->queue = names[g_rand_int_range(rng, 0, (gint32)sp.queues)];
        j->line = i + 2; /* as if a header came first */
    }
    g_free(names);
    return t;
}
