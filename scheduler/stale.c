/* Gangs below their minimum: report, wait out the grace, evict the rest whole; see stale.h. */
#include "scheduler/stale.h"

#include <string.h>

#include "scheduler/cycle.h"

/* What one job's members look like this cycle. */
typedef struct {
    guint healthy;        /* placed on a usable node, not being deleted */
    GPtrArray *evictable; /* KbTaskInfo* bound or running, not being evicted (borrowed) */
    GString *lost;        /* the first lost member, described */
    gboolean named;       /* lost names a pod (else it counts members gone) */
} Members;

static void nodes_update(KbSession *ssn, gboolean *any_lost)
{
    *any_lost = FALSE;
    for (guint n = 0; n < ssn->n_nodes; n++) {
        KbNodeInfo *ni = &ssn->nodes[n];
        if (ni->present && ni->node != NULL && ni->node->ready) {
            ni->lost_since = 0;
            continue;
        }
        if (ni->lost_since == 0)
            ni->lost_since = ssn->now;
        *any_lost = TRUE;
    }
}

/* TRUE when the pods on @node_id count as lost; why into @why (may be NULL). */
static gboolean node_lost(const KbSession *ssn, gint node_id, GString *why)
{
    if (node_id < 0 || (guint)node_id >= ssn->n_nodes)
        return FALSE;
    const KbNodeInfo *ni = &ssn->nodes[node_id];
    if (ni->lost_since == 0)
        return FALSE;
    if (!ni->present || ni->node == NULL) {
        if (why != NULL)
            g_string_append_printf(why, "node %s deleted", ni->name);
        return TRUE;
    }
    if (ssn->now - ni->lost_since < ssn->conf->node_lost_after)
        return FALSE;
    /* No running count in the text: the status would be written again every cycle. */
    if (why != NULL)
        g_string_append_printf(why, "node %s NotReady for %" G_GINT64_FORMAT "s or more", ni->name,
                               ssn->conf->node_lost_after);
    return TRUE;
}

static gboolean placed_state(KbTaskState s)
{
    return s == KB_TASK_ALLOCATED || s == KB_TASK_BINDING || s == KB_TASK_BOUND ||
           s == KB_TASK_RUNNING;
}

static void describe_lost(GString *lost, const KbTaskInfo *t, const char *fmt, const char *what)
{
    if (lost->len > 0)
        return;
    g_string_append_printf(lost, fmt, t->pod->meta.namespace_, t->pod->meta.name);
    if (what != NULL)
        g_string_append_printf(lost, " (%s)", what);
}

static void count_members(KbSession *ssn, const KbJobInfo *job, Members *m)
{
    g_autoptr(GString) why = g_string_new(NULL);
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        g_string_truncate(why, 0);
        if (placed_state(t->state) && !node_lost(ssn, t->node_id, why))
            m->healthy++;
        else if (placed_state(t->state))
            describe_lost(m->lost, t, "pod %s/%s on a lost node", why->str);
        else if (t->state == KB_TASK_FAILED)
            describe_lost(m->lost, t, "pod %s/%s failed", NULL);
        else if (t->state == KB_TASK_RELEASING && !t->evicting)
            describe_lost(m->lost, t, "pod %s/%s is being deleted", NULL);
        else if (t->state == KB_TASK_PENDING)
            describe_lost(m->lost, t, "pod %s/%s was not placed again", NULL);
        if ((t->state == KB_TASK_BOUND || t->state == KB_TASK_RUNNING) && !t->evicting)
            g_ptr_array_add(m->evictable, t);
    }
    m->named = m->lost->len > 0;
    if (!m->named)
        g_string_append_printf(m->lost, "%u member%s gone (pods deleted)",
                               (guint)job->min_member - m->healthy,
                               (guint)job->min_member - m->healthy == 1 ? "" : "s");
}

/* The grace for @job (seconds): the annotation's when valid, else the configuration's; a
 * malformed annotation is described in @note. */
static gint64 job_grace(const KbSession *ssn, const KbJobInfo *job, GString *note)
{
    const char *v = g_hash_table_lookup(job->group->meta.annotations, KB_STALE_GRACE_ANNOTATION);
    gint64 ns = 0;
    g_autoptr(GError) error = NULL;
    if (v == NULL)
        return ssn->conf->stale_gang_grace;
    if (!kb_conf_parse_go_duration(v, &ns, &error) || ns < 0) {
        g_string_append_printf(
                note, "; annotation %s: %s; staleGangGrace %" G_GINT64_FORMAT "s holds",
                KB_STALE_GRACE_ANNOTATION, error != NULL ? error->message : "negative duration",
                ssn->conf->stale_gang_grace);
        return ssn->conf->stale_gang_grace;
    }
    return (ns + G_GINT64_CONSTANT(999999999)) / G_GINT64_CONSTANT(1000000000);
}

/* TRUE when the gang is annotated to be left partly running; a malformed value is noted. */
static gboolean job_tolerates(const KbJobInfo *job, GString *note)
{
    const char *v =
            g_hash_table_lookup(job->group->meta.annotations, KB_TOLERATE_PARTIAL_ANNOTATION);
    if (v == NULL || strcmp(v, "false") == 0)
        return FALSE;
    if (strcmp(v, "true") == 0)
        return TRUE;
    g_string_append_printf(note, "; annotation %s: expected \"true\" or \"false\", got \"%s\"",
                           KB_TOLERATE_PARTIAL_ANNOTATION, v);
    return FALSE;
}

static void job_reset(KbJobInfo *job, gboolean whole)
{
    job->stale_whole = whole;
    job->stale_since = 0;
    job->stale_retry_at = 0;
    job->stale_rounds = 0;
    g_clear_pointer(&job->stale_lost, g_free);
}

static void evict_rest(KbSession *ssn, KbJobInfo *job, const Members *m, const char *message)
{
    for (guint i = 0; i < m->evictable->len; i++) {
        KbTaskInfo *t = m->evictable->pdata[i];
        KbEviction ev = {kb_object_ref(t->pod), KB_GANG_INCOMPLETE, g_strdup(message),
                         g_strdup(job->key),    g_strdup(job->key), NULL};
        g_array_append_val(ssn->result->evictions, ev);
        KbSchedEvent sev = {kb_object_ref(&t->pod->meta),
                            "v1",
                            "Pod",
                            "Warning",
                            KB_GANG_INCOMPLETE,
                            g_strdup(message)};
        g_array_append_val(ssn->result->events, sev);
        kb_cache_evict_task(ssn->cache, t);
    }
    kb_cache_job_evicted(ssn->cache, job, ssn->now);
    guint shift = MIN(job->stale_rounds, 5u);
    job->stale_rounds++;
    job->stale_retry_at = ssn->now + MIN((gint64)1 << shift, (gint64)KB_STALE_RETRY_MAX_S);
}

/* The verdict for a gang short of healthy members (@m), its grace started at stale_since. */
static void judge(KbSession *ssn, KbJobInfo *job, const Members *m)
{
    g_autoptr(GString) note = g_string_new(NULL);
    gint64 grace = job_grace(ssn, job, note);
    gboolean tolerate = job_tolerates(job, note);
    g_autoptr(GString) msg = g_string_new(NULL);
    /* The member lost first stays named while the rest goes. */
    if (job->stale_lost == NULL || (m->named && m->evictable->len > 0)) {
        g_free(job->stale_lost);
        job->stale_lost = g_strdup(m->lost->str);
    }
    g_string_append_printf(msg, "%u/%d members healthy: %s", m->healthy, job->min_member,
                           job->stale_lost);
    job->stale_reason = "MemberLost";
    if (tolerate) {
        g_string_append_printf(msg, "; left partly running (%s)", KB_TOLERATE_PARTIAL_ANNOTATION);
    } else if (ssn->now - job->stale_since < grace) {
        g_string_append_printf(msg,
                               "; the rest is evicted if still short after %" G_GINT64_FORMAT
                               "s (staleGangGrace)",
                               grace);
    } else {
        job->stale_reason = "GangEvicted";
        g_string_append_printf(msg,
                               "; short for more than %" G_GINT64_FORMAT
                               "s (staleGangGrace): evicting the rest of the gang so that its "
                               "controller restarts it whole",
                               grace);
        if (job->stale_rounds > 0 && m->evictable->len > 0)
            g_string_append_printf(msg, " (an eviction was refused; round %u after a backoff)",
                                   job->stale_rounds + 1);
        if (m->evictable->len > 0 && ssn->now >= job->stale_retry_at)
            evict_rest(ssn, job, m, msg->str);
    }
    g_string_append(msg, note->str);
    g_free(job->stale_message);
    job->stale_message = g_string_free(g_steal_pointer(&msg), FALSE);
}

static void stale_job(KbSession *ssn, KbJobInfo *job, gboolean any_lost)
{
    job->stale_reason = NULL;
    g_clear_pointer(&job->stale_message, g_free);
    if (job->group == NULL || job->min_member <= 1)
        return;
    /* Placed by this cycle counts: a gang may lose a node before the next cycle sees it bound. */
    guint on_nodes = job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
                     job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] +
                     job->n_state[KB_TASK_RELEASING];
    guint placed = on_nodes - job->n_state[KB_TASK_RELEASING];
    /* A member that succeeded: the job is finishing, its members leave one by one. */
    if (on_nodes == 0 || job->n_state[KB_TASK_SUCCEEDED] > 0) {
        job_reset(job, FALSE);
        return;
    }
    if (!any_lost && placed >= (guint)job->min_member) {
        job_reset(job, TRUE);
        return;
    }
    Members m = {0, g_ptr_array_new(), g_string_new(NULL), FALSE};
    count_members(ssn, job, &m);
    /* After a restart of kube-batchd, the phase its predecessor wrote says the gang ran whole. */
    if (!job->stale_whole && !job->reported && g_strcmp0(job->group->phase, "Running") == 0)
        job->stale_whole = TRUE;
    if (m.healthy >= (guint)job->min_member) {
        job_reset(job, TRUE);
    } else if (job->stale_whole) {
        if (job->stale_since == 0)
            job->stale_since = ssn->now;
        judge(ssn, job, &m);
    }
    g_ptr_array_unref(m.evictable);
    g_string_free(m.lost, TRUE);
}

void kb_stale_run(KbSession *ssn)
{
    gboolean any_lost;
    nodes_update(ssn, &any_lost);
    for (guint j = 0; j < ssn->jobs->len; j++)
        stale_job(ssn, ssn->jobs->pdata[j], any_lost);
}
