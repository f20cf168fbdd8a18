/*
 * sla: a job's waiting-time limit (Volcano's plugin of that name, same argument and annotations).
 *
 * A job's limit is its annotation KB_SLA_ANNOTATION, else KB_SLA_ANNOTATION_SHORT (on the
 * PodGroup, else on the job's first pod), else the plugin argument KB_SLA_ARGUMENT; each a Go
 * duration ("1h", "90m", "3s"). A job with none has no limit. A job is overdue once it has
 * waited (fewer than minMember tasks placed) past its creation plus its limit.
 *
 *   job order    an overdue job goes before every job that is not; of two overdue jobs, the one
 *                whose limit ran out first. Jobs within their limit: no opinion (the plugins
 *                after this one decide, so fair share still orders them).
 *   reservation  an overdue job may hold a reservation of the reserve action whatever the
 *                action's minWait, minGPUs and minNodes, and is served before the other
 *                candidates of its priority (scheduler/reserve.c).
 *
 * Unlike Volcano, an overdue job is not admitted past the plugins that refuse it (queue share):
 * it waits for capacity at the head of the line, holding a reservation when the reserve action
 * runs, instead of being admitted against capacity that other jobs hold.
 */
#include "policies/plugin.h"

#include <string.h>

typedef struct {
    gint64 global; /* seconds; 0: no limit for jobs without an annotation */
    gint64 now;    /* the session's clock */
} Sla;

/* Seconds of a Go duration, rounded up; 0 when @text is NULL, malformed or not positive. */
static gint64 limit_of(const char *text)
{
    gint64 ns = 0;
    if (text == NULL || !kb_conf_parse_go_duration(text, &ns, NULL) || ns <= 0)
        return 0;
    return (ns + G_GINT64_CONSTANT(999999999)) / 1000000000;
}

static const char *annotation(GHashTable *annotations, const char **key)
{
    static const char *const keys[] = {KB_SLA_ANNOTATION, KB_SLA_ANNOTATION_SHORT};
    for (guint i = 0; annotations != NULL && i < G_N_ELEMENTS(keys); i++) {
        const char *v = g_hash_table_lookup(annotations, keys[i]);
        if (v != NULL) {
            *key = keys[i];
            return v;
        }
    }
    return NULL;
}

/*
 * The job's annotation, parsed once per version of its objects (KbJobInfo.version): the lookup
 * runs for every waiting job in every cycle otherwise. A malformed value is logged once per
 * version and leaves the job to the plugin argument.
 */
static void refresh(KbJobInfo *job)
{
    if (job->sla_version == job->version)
        return;
    const char *key = NULL, *v = NULL;
    if (job->group != NULL)
        v = annotation(job->group->meta.annotations, &key);
    if (v == NULL && job->tasks->len > 0)
        v = annotation(((const KbTaskInfo *)job->tasks->pdata[0])->pod->meta.annotations, &key);
    job->sla_waiting = limit_of(v);
    if (v != NULL && job->sla_waiting == 0)
        g_warning("job %s: annotation %s: \"%s\" is not a positive duration like \"1h30m\" or "
                  "\"90s\", ignored",
                  job->key, key, v);
    job->sla_version = job->version;
}

static gpointer sla_open(KbSession *ssn, const KbConfPlugin *conf)
{
    Sla *sla = g_new0(Sla, 1);
    const char *v = conf != NULL ? g_hash_table_lookup(conf->arguments, KB_SLA_ARGUMENT) : NULL;
    sla->global = limit_of(v); /* the parser refused a malformed one */
    sla->now = ssn->now;
    for (guint j = 0; j < ssn->jobs->len; j++)
        refresh(ssn->jobs->pdata[j]);
    return sla;
}

static gboolean waiting(const KbJobInfo *job)
{
    guint placed = job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
                   job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] +
                   job->n_state[KB_TASK_SUCCEEDED];
    return placed < (guint)job->min_member;
}

gint64 kb_plugin_sla_deadline(gconstpointer state, const KbJobInfo *job)
{
    const Sla *sla = state;
    if (sla == NULL)
        return G_MAXINT64;
    /* A job the session opened over has its memo; one added since has the argument only. */
    gint64 limit = job->sla_version == job->version && job->sla_waiting > 0 ? job->sla_waiting
                                                                            : sla->global;
    if (limit <= 0 || job->creation_timestamp > G_MAXINT64 - limit)
        return G_MAXINT64;
    return job->creation_timestamp + limit;
}

gboolean kb_plugin_sla_overdue(gconstpointer state, const KbJobInfo *job, gint64 now)
{
    gint64 d = kb_plugin_sla_deadline(state, job);
    return d != G_MAXINT64 && now >= d && waiting(job);
}

static int job_order(gpointer state, const KbJobInfo *a, const KbJobInfo *b)
{
    const Sla *sla = state;
    gboolean oa = kb_plugin_sla_overdue(sla, a, sla->now);
    gboolean ob = kb_plugin_sla_overdue(sla, b, sla->now);
    if (oa != ob)
        return oa ? -1 : 1;
    if (!oa)
        return 0;
    gint64 da = kb_plugin_sla_deadline(sla, a), db = kb_plugin_sla_deadline(sla, b);
    return da == db ? 0 : da < db ? -1 : 1;
}

static const struct kb_plugin_arg sla_arguments[] = {
        {KB_SLA_ARGUMENT, KB_ARG_GO_DURATION},
        {NULL, 0},
};

const struct kb_plugin_ops kb_plugin_sla = {
        .name = "sla",
        .arguments = sla_arguments,
        .open = sla_open,
        .close = g_free,
        .job_order = job_order,
};
