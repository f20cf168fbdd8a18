/* A scheduling session and the plugin extension points; see session.h. */
#include "scheduler/session.h"
#include "scheduler/dra.h"

#include <string.h>

#include "policies/plugin.h"
#include "scheduler/reserve.h"

/* Per-job and per-queue figures the plugins read: priorities, queue allocation and requests. */
static void session_refresh_jobs(KbSession *ssn)
{
    guint nq = ssn->queues->len;
    for (guint q = 0; q < nq; q++)
        kb_resources_clear(&((KbQueueInfo *)ssn->queues->pdata[q])->allocated);
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        gint32 maxp = G_MININT32;
        for (guint i = 0; i < job->tasks->len; i++) {
            KbTaskInfo *t = job->tasks->pdata[i];
            t->priority = kb_cache_pod_priority(ssn->cache, t->pod);
            maxp = MAX(maxp, t->priority);
        }
        gboolean found = FALSE;
        const char *pcn = job->group != NULL ? job->group->priority_class_name : NULL;
        gint32 gp = kb_cache_priority_class_value(ssn->cache, pcn, &found);
        job->priority = found || job->tasks->len == 0 ? gp : maxp;
        /* A native PodGroup's priority (admission filled it from its class) is the group's. */
        if (job->group != NULL && job->group->has_priority)
            job->priority = job->group->priority;
        KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi == NULL)
            continue;
        kb_resources_add(&qi->allocated, &job->allocated);
        kb_resources_add(&ssn->request[qi->id], &job->allocated);
        for (guint i = 0; i < job->tasks->len && job->n_state[KB_TASK_PENDING] > 0; i++) {
            KbTaskInfo *t = job->tasks->pdata[i];
            if (t->state == KB_TASK_PENDING)
                kb_resources_add(&ssn->request[qi->id], &t->resreq);
        }
    }
}

/* The queue tree of this cycle: structure and faults, demand and allocation of every node. */
static void session_build_tree(KbSession *ssn)
{
    guint nq = ssn->queues->len;
    g_autofree KbQtreeQueue *in = g_new0(KbQtreeQueue, MAX(nq, 1));
    for (guint q = 0; q < nq; q++) {
        const KbQueueInfo *qi = ssn->queues->pdata[q];
        in[q].name = qi->name;
        in[q].parent = qi->queue != NULL ? qi->queue->parent : NULL;
        in[q].weight = qi->weight;
        in[q].capability = qi->capability;
        in[q].guarantee = qi->guarantee;
        if (qi->queue != NULL) {
            in[q].deserved = qi->queue->deserved;
        } else {
            for (int s = 0; s < KB_RES_MAX; s++)
                in[q].deserved.v[s] = -1;
        }
    }
    ssn->qtree = kb_qtree_new(in, nq);
    for (guint q = 0; q < nq; q++) {
        const KbQueueInfo *qi = ssn->queues->pdata[q];
        ssn->qtree->demand[q] = ssn->request[q];
        kb_qtree_alloc_add(ssn->qtree, q, &qi->allocated, FALSE);
    }
}

KbSession *kb_session_open(KbCache *cache, const KbConf *conf, gint64 now, KbCycleResult *result)
{
    KbSession *ssn = g_new0(KbSession, 1);
    ssn->cache = cache;
    ssn->conf = conf;
    ssn->now = now;
    ssn->result = result;
    ssn->nodes = kb_cache_nodes(cache, &ssn->n_nodes);
    ssn->jobs = kb_cache_jobs(cache);
    ssn->queues = kb_cache_queues(cache);
    ssn->job_scratch = g_new0(KbJobScratch, MAX(ssn->jobs->len, 1));
    ssn->deserved = g_new(KbResources, MAX(ssn->queues->len, 1));
    ssn->request = g_new0(KbResources, MAX(ssn->queues->len, 1));
    for (guint q = 0; q < ssn->queues->len; q++)
        kb_resources_set_unlimited(&ssn->deserved[q]);
    kb_cache_cluster_allocatable(cache, &ssn->total);
    for (guint i = 0; i < ssn->n_nodes; i++) {
        if (ssn->nodes[i].present)
            kb_resources_max(&ssn->max_alloc, &ssn->nodes[i].allocatable);
    }
    session_refresh_jobs(ssn);
    session_build_tree(ssn);

    guint n = 0;
    for (guint t = 0; t < conf->n_tiers; t++)
        n += conf->tiers[t].n_plugins;
    ssn->plugins = g_new0(KbPluginInstance, MAX(n, 1));
    for (guint t = 0; t < conf->n_tiers; t++) {
        for (guint i = 0; i < conf->tiers[t].n_plugins; i++) {
            const KbConfPlugin *cp = &conf->tiers[t].plugins[i];
            const struct kb_plugin_ops *ops = kb_plugin_lookup(cp->name);
            if (ops == NULL)
                continue; /* kb_conf_parse refuses these; a hand-built conf may not */
            KbPluginInstance *pi = &ssn->plugins[ssn->n_plugins++];
            pi->ops = ops;
            pi->conf = cp;
            pi->tier = t;
            pi->state = ops->open != NULL ? ops->open(ssn, cp) : NULL;
        }
    }
    return ssn;
}

void kb_session_close(KbSession *ssn)
{
    if (ssn == NULL)
        return;
    for (guint i = ssn->n_plugins; i-- > 0;) {
        if (ssn->plugins[i].ops->close != NULL)
            ssn->plugins[i].ops->close(ssn->plugins[i].state);
    }
    for (guint j = 0; j < ssn->jobs->len; j++) {
        if (ssn->job_scratch[j].message != NULL)
            g_string_free(ssn->job_scratch[j].message, TRUE);
    }
    g_free(ssn->job_scratch);
    g_free(ssn->deserved);
    g_free(ssn->request);
    g_free(ssn->pipelined);
    kb_reserve_free(ssn->reserve);
    kb_qtree_free(ssn->qtree);
    g_free(ssn->plugins);
    g_free(ssn);
}

#define ENABLED(pi, fn, sw) ((pi)->ops->fn != NULL && (pi)->conf->enabled[sw])

int kb_session_job_order(KbSession *ssn, const KbJobInfo *a, const KbJobInfo *b)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, job_order, KB_SWITCH_JOB_ORDER)) {
            int r = pi->ops->job_order(pi->state, a, b);
            if (r != 0)
                return r;
        }
    }
    /* Volcano's fallback: older first, then by name, so the order is total and stable. */
    if (a->creation_timestamp != b->creation_timestamp)
        return a->creation_timestamp < b->creation_timestamp ? -1 : 1;
    return strcmp(a->key, b->key);
}

int kb_session_queue_order(KbSession *ssn, const KbQueueInfo *a, const KbQueueInfo *b)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, queue_order, KB_SWITCH_QUEUE_ORDER)) {
            int r = pi->ops->queue_order(pi->state, a, b);
            if (r != 0)
                return r;
        }
    }
    return strcmp(a->name, b->name);
}

int kb_session_task_order(KbSession *ssn, const KbTaskInfo *a, const KbTaskInfo *b)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, task_order, KB_SWITCH_TASK_ORDER)) {
            int r = pi->ops->task_order(pi->state, a, b);
            if (r != 0)
                return r;
        }
    }
    /* Same class together, then by name: deterministic placements. */
    if (a->klass != b->klass)
        return a->klass->index < b->klass->index ? -1 : 1;
    return strcmp(a->pod->meta.name, b->pod->meta.name);
}

gboolean kb_session_job_ready(KbSession *ssn, const KbJobInfo *job)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, job_ready, KB_SWITCH_JOB_READY) && !pi->ops->job_ready(pi->state, job))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_session_job_pipelined(KbSession *ssn, const KbJobInfo *job)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, job_pipelined, KB_SWITCH_JOB_PIPELINED) &&
            !pi->ops->job_pipelined(pi->state, job))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_session_job_enqueueable(KbSession *ssn, const KbJobInfo *job, GString *why)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, job_enqueueable, KB_SWITCH_JOB_ENQUEUEABLE) &&
            !pi->ops->job_enqueueable(pi->state, job, why))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_session_allocatable(KbSession *ssn, const KbQueueInfo *queue, const KbTaskInfo *task,
                                GString *why)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, allocatable, KB_SWITCH_ALLOCATABLE) &&
            !pi->ops->allocatable(pi->state, queue, task, why))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_session_overused(KbSession *ssn, const KbQueueInfo *queue, GString *why)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (pi->ops->overused != NULL && pi->ops->overused(pi->state, queue, why))
            return TRUE;
    }
    return FALSE;
}

gboolean kb_session_node_predicate(KbSession *ssn, const KbTaskInfo *task, const KbNodeInfo *node,
                                   KbFitFailure *why)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, predicate, KB_SWITCH_PREDICATE) &&
            !pi->ops->predicate(pi->state, task, node, why))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_session_predicate(KbSession *ssn, const KbTaskInfo *task, const KbNodeInfo *node,
                              KbFitFailure *why)
{
    if (!kb_session_node_predicate(ssn, task, node, why))
        return FALSE;
    if (task->pod->n_resource_claims > 0 &&
        !kb_dra_fits(kb_cache_dra(ssn->cache), task->pod, node->name, NULL, NULL)) {
        if (why != NULL)
            *why = (KbFitFailure){KB_FIT_DEVICES, -1, NULL};
        return FALSE;
    }
    return TRUE;
}

gboolean kb_session_has_node_order(KbSession *ssn)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (ENABLED(&ssn->plugins[i], node_score, KB_SWITCH_NODE_ORDER))
            return TRUE;
    }
    return FALSE;
}

gboolean kb_session_score_every_node(KbSession *ssn, const KbTaskInfo *task)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, node_score, KB_SWITCH_NODE_ORDER) && pi->ops->score_every_node != NULL &&
            pi->ops->score_every_node(pi->state, task))
            return TRUE;
    }
    return FALSE;
}

double kb_session_node_score(KbSession *ssn, const KbTaskInfo *task, const KbNodeInfo *node)
{
    double score = 0;
    for (guint i = 0; i < ssn->n_plugins; i++) {
        KbPluginInstance *pi = &ssn->plugins[i];
        if (ENABLED(pi, node_score, KB_SWITCH_NODE_ORDER))
            score += pi->ops->node_score(pi->state, task, node);
    }
    return score;
}

/*
 * Volcano's tiered victim rule (Preemptable / Reclaimable): within a tier every enabled plugin
 * filters @victims in turn; the first tier in which any plugin has a verdict decides, and later
 * tiers are not asked. @reclaim picks the reclaimable hook, otherwise preemptable.
 */
static void victims_by_tier(KbSession *ssn, gboolean reclaim, const KbTaskInfo *claimer,
                            GPtrArray *victims)
{
    KbConfSwitch sw = reclaim ? KB_SWITCH_RECLAIMABLE : KB_SWITCH_PREEMPTABLE;
    guint i = 0;
    while (i < ssn->n_plugins) {
        guint tier = ssn->plugins[i].tier;
        gboolean verdict = FALSE;
        for (; i < ssn->n_plugins && ssn->plugins[i].tier == tier; i++) {
            KbPluginInstance *pi = &ssn->plugins[i];
            gboolean (*hook)(gpointer, const KbTaskInfo *, GPtrArray *) =
                    reclaim ? pi->ops->reclaimable : pi->ops->preemptable;
            if (hook != NULL && pi->conf->enabled[sw] && hook(pi->state, claimer, victims))
                verdict = TRUE;
        }
        if (verdict)
            return;
    }
}

void kb_session_preemptable(KbSession *ssn, const KbTaskInfo *preemptor, GPtrArray *victims)
{
    victims_by_tier(ssn, FALSE, preemptor, victims);
}

void kb_session_reclaimable(KbSession *ssn, const KbTaskInfo *reclaimer, GPtrArray *victims)
{
    victims_by_tier(ssn, TRUE, reclaimer, victims);
}

void kb_session_allocate(KbSession *ssn, KbTaskInfo *task, KbNodeInfo *node)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (ssn->plugins[i].ops->assign_devices != NULL)
            ssn->plugins[i].ops->assign_devices(ssn->plugins[i].state, task, node);
    }
    if (task->pod->n_resource_claims > 0 &&
        !kb_dra_assume(kb_cache_dra(ssn->cache), task->pod, node->name))
        g_warning("pod %s/%s placed on node %s whose devices no longer fit its claims",
                  task->pod->meta.namespace_, task->pod->meta.name, node->name);
    kb_cache_assume_task(ssn->cache, task, node->id);
    kb_reserve_on_allocate(ssn, task, node->id);
    KbQueueInfo *qi = kb_session_job_queue(ssn, task->job);
    if (qi != NULL) {
        kb_resources_add(&qi->allocated, &task->resreq);
        kb_qtree_alloc_add(ssn->qtree, qi->id, &task->resreq, FALSE);
    }
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (ssn->plugins[i].ops->on_allocate != NULL)
            ssn->plugins[i].ops->on_allocate(ssn->plugins[i].state, task);
    }
}

void kb_session_deallocate(KbSession *ssn, KbTaskInfo *task)
{
    if (task->node_id >= 0)
        kb_reserve_on_deallocate(ssn, task, (guint)task->node_id);
    kb_cache_forget_task(ssn->cache, task);
    KbQueueInfo *qi = kb_session_job_queue(ssn, task->job);
    if (qi != NULL) {
        kb_resources_sub(&qi->allocated, &task->resreq);
        kb_qtree_alloc_add(ssn->qtree, qi->id, &task->resreq, TRUE);
    }
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (ssn->plugins[i].ops->on_deallocate != NULL)
            ssn->plugins[i].ops->on_deallocate(ssn->plugins[i].state, task);
    }
}

void kb_session_job_enqueued(KbSession *ssn, const KbJobInfo *job)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (ssn->plugins[i].ops->on_job_enqueued != NULL)
            ssn->plugins[i].ops->on_job_enqueued(ssn->plugins[i].state, job);
    }
}

void kb_session_job_dequeued(KbSession *ssn, const KbJobInfo *job)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (ssn->plugins[i].ops->on_job_dequeued != NULL)
            ssn->plugins[i].ops->on_job_dequeued(ssn->plugins[i].state, job);
    }
}

void kb_session_job_min_request(const KbJobInfo *job, KbResources *out)
{
    kb_resources_clear(out);
    if (job->group != NULL && !kb_resources_is_zero(&job->group->min_resources)) {
        *out = job->group->min_resources;
        return;
    }
    gint32 left = job->min_member;
    for (guint pass = 0; pass < 2 && left > 0; pass++) {
        for (guint i = 0; i < job->tasks->len && left > 0; i++) {
            const KbTaskInfo *t = job->tasks->pdata[i];
            gboolean pending = t->state == KB_TASK_PENDING;
            if (t->state == KB_TASK_FAILED || (pass == 0) == pending)
                continue;
            kb_resources_add(out, &t->resreq);
            left--;
        }
    }
}

void kb_session_job_note(KbSession *ssn, const KbJobInfo *job, const char *reason, const char *fmt,
                         ...)
{
    KbJobScratch *js = &ssn->job_scratch[job->id];
    va_list ap;
    js->reason = reason;
    if (js->message == NULL)
        js->message = g_string_new(NULL);
    g_string_truncate(js->message, 0);
    va_start(ap, fmt);
    g_string_append_vprintf(js->message, fmt, ap);
    va_end(ap);
}

gpointer kb_session_plugin_state(KbSession *ssn, const char *name)
{
    for (guint i = 0; i < ssn->n_plugins; i++) {
        if (strcmp(ssn->plugins[i].ops->name, name) == 0)
            return ssn->plugins[i].state;
    }
    return NULL;
}

KbQueueInfo *kb_session_job_queue(KbSession *ssn, const KbJobInfo *job)
{
    return kb_cache_lookup_queue(ssn->cache, job->queue);
}

gboolean kb_session_node_reclaimable(KbSession *ssn, guint x)
{
    const KbQueueInfo *qi = x < ssn->queues->len ? ssn->queues->pdata[x] : NULL;
    return qi == NULL || qi->queue == NULL || qi->queue->reclaimable;
}

static const char *effect_name(KbTaintEffect e)
{
    switch (e) {
    case KB_EFFECT_NO_SCHEDULE:
        return "NoSchedule";
    case KB_EFFECT_PREFER_NO_SCHEDULE:
        return "PreferNoSchedule";
    case KB_EFFECT_NO_EXECUTE:
        return "NoExecute";
    default:
        return "";
    }
}

char *kb_fit_failure_to_string(const KbFitFailure *why)
{
    switch (why->reason) {
    case KB_FIT_RESOURCES:
        return g_strdup_printf("short of %s", kb_resource_name(why->slot) != NULL
                                                      ? kb_resource_name(why->slot)
                                                      : "resources");
    case KB_FIT_NOT_READY:
        return g_strdup("not Ready");
    case KB_FIT_UNSCHEDULABLE:
        return g_strdup("unschedulable");
    case KB_FIT_NODE_SELECTOR:
        return g_strdup("do not match nodeSelector");
    case KB_FIT_AFFINITY:
        return g_strdup("do not match node affinity");
    case KB_FIT_TAINT:
        return g_strdup_printf("have taint %s%s%s:%s", why->taint->key,
                               why->taint->value != NULL ? "=" : "",
                               why->taint->value != NULL ? why->taint->value : "",
                               effect_name(why->taint->effect));
    case KB_FIT_GONE:
        return g_strdup("are gone");
    case KB_FIT_RESERVED:
        return g_strdup("are reserved for a waiting gang");
    case KB_FIT_DEVICES:
        return g_strdup("are short of devices for the pod's claims");
    case KB_FIT_OK:
    default:
        return g_strdup("fit");
    }
}

const char *kb_session_node_domain(const KbSession *ssn, guint node, const char *key)
{
    const KbNodeInfo *ni = &ssn->nodes[node];
    return ni->present && ni->node != NULL ? g_hash_table_lookup(ni->node->meta.labels, key) : NULL;
}

GPtrArray *kb_session_job_domains(const KbSession *ssn, const KbJobInfo *job, const char *key)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < job->tasks->len; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->node_id < 0 || t->state == KB_TASK_PENDING || t->state == KB_TASK_SUCCEEDED ||
            t->state == KB_TASK_FAILED)
            continue;
        /* A member left on a deleted node says nothing: the others' domain holds (stale.h). */
        const KbNodeInfo *ni = &ssn->nodes[t->node_id];
        if (!ni->present || ni->node == NULL)
            continue;
        const char *d = kb_session_node_domain(ssn, (guint)t->node_id, key);
        if (d != NULL)
            g_ptr_array_add(out, (gpointer)d);
        return out;
    }
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint n = 0; n < ssn->n_nodes; n++) {
        const char *d = kb_session_node_domain(ssn, n, key);
        if (d != NULL && g_hash_table_add(seen, (gpointer)d))
            g_ptr_array_add(out, (gpointer)d);
    }
    return out;
}
