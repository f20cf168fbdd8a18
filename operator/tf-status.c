/*
 * TFJob status: conditions with kubeflow semantics and both API shapes' JSON (see tf-status.h).
 */
#include "operator/tf-status.h"

#include <stdlib.h>
#include <string.h>

void tf_status_init(TfStatus *st, const KbTfJob *job)
{
    memset(st, 0, sizeof(*st));
    for (int c = 0; c < KB_TF_N_CONDS; c++) {
        const KbTfCondition *src = &job->status.conditions[c];
        st->conds[c] = *src;
        st->conds[c].reason = g_strdup(src->reason);
        st->conds[c].message = g_strdup(src->message);
        st->next_seq = MAX(st->next_seq, src->seq + 1);
    }
    st->start_time = job->status.start_time;
    st->completion_time = job->status.completion_time;
    st->restart_count = job->status.restart_count;
    st->workers = kb_tfjob_effective_replicas(job, KB_TF_WORKER);
}

void tf_status_clear(TfStatus *st)
{
    for (int c = 0; c < KB_TF_N_CONDS; c++) {
        g_clear_pointer(&st->conds[c].reason, g_free);
        g_clear_pointer(&st->conds[c].message, g_free);
    }
    g_clear_pointer(&st->decision_reason, g_free);
}

gboolean tf_status_is(const TfStatus *st, KbTfConditionType type)
{
    return st->conds[type].present && st->conds[type].status;
}

const char *tf_status_message(const TfStatus *st, KbTfConditionType type)
{
    return st->conds[type].present ? st->conds[type].message : NULL;
}

static void put_condition(TfStatus *st, KbTfConditionType type, gboolean status, const char *reason,
                          const char *message, gint64 now)
{
    KbTfCondition *c = &st->conds[type];
    if (!c->present || c->status != status)
        c->last_transition = now;
    c->present = TRUE;
    c->status = status;
    c->last_update = now;
    c->seq = st->next_seq++;
    g_free(c->reason);
    c->reason = g_strdup(reason);
    g_free(c->message);
    c->message = g_strdup(message);
}

gboolean tf_status_set_condition(TfStatus *st, KbTfConditionType type, const char *reason,
                                 const char *message, gint64 now)
{
    KbTfCondition *c = &st->conds[type];
    if (tf_status_is(st, KB_TF_COND_FAILED))
        return FALSE;
    if (c->present && c->status && g_strcmp0(c->reason, reason) == 0)
        return FALSE;
    if (type == KB_TF_COND_RUNNING)
        st->conds[KB_TF_COND_RESTARTING].present = FALSE;
    if (type == KB_TF_COND_RESTARTING)
        st->conds[KB_TF_COND_RUNNING].present = FALSE;
    if ((type == KB_TF_COND_SUCCEEDED || type == KB_TF_COND_FAILED) &&
        tf_status_is(st, KB_TF_COND_RUNNING)) {
        KbTfCondition *r = &st->conds[KB_TF_COND_RUNNING];
        r->status = FALSE;
        r->last_transition = now;
        r->last_update = now;
    }
    put_condition(st, type, TRUE, reason, message, now);
    return TRUE;
}

static void add_time(json_object *o, const char *key, gint64 t)
{
    if (t <= 0)
        return;
    char *s = kb_time_format(t);
    json_object_object_add(o, key, json_object_new_string(s));
    g_free(s);
}

static int compare_seq(gconstpointer a, gconstpointer b)
{
    const KbTfCondition *x = *(const KbTfCondition *const *)a;
    const KbTfCondition *y = *(const KbTfCondition *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static json_object *conditions_json(const TfStatus *st)
{
    const KbTfCondition *order[KB_TF_N_CONDS];
    guint n = 0;
    for (int c = 0; c < KB_TF_N_CONDS; c++)
        if (st->conds[c].present)
            order[n++] = &st->conds[c];
    qsort(order, n, sizeof(order[0]), compare_seq);
    json_object *list = json_object_new_array();
    for (guint i = 0; i < n; i++) {
        const KbTfCondition *c = order[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "type",
                               json_object_new_string(kb_tf_condition_type_to_string(
                                       (KbTfConditionType)(c - st->conds))));
        json_object_object_add(o, "status", json_object_new_string(c->status ? "True" : "False"));
        if (c->reason != NULL)
            json_object_object_add(o, "reason", json_object_new_string(c->reason));
        if (c->message != NULL)
            json_object_object_add(o, "message", json_object_new_string(c->message));
        add_time(o, "lastUpdateTime", c->last_update);
        add_time(o, "lastTransitionTime", c->last_transition);
        json_object_array_add(list, o);
    }
    return list;
}

static void add_nonzero(json_object *o, const char *key, gint32 v)
{
    if (v != 0)
        json_object_object_add(o, key, json_object_new_int(v));
}

static json_object *v1_replica_statuses(const TfStatus *st, const KbTfJob *job)
{
    json_object *rs = json_object_new_object();
    for (int t = 0; t < KB_TF_N_TYPES; t++) {
        if (!job->specs[t].present)
            continue;
        json_object *o = json_object_new_object();
        add_nonzero(o, "active", st->active[t]);
        add_nonzero(o, "succeeded", st->succeeded[t]);
        add_nonzero(o, "failed", st->failed[t]);
        json_object_object_add(rs, kb_tf_replica_type_to_string(t), o);
    }
    return rs;
}

static const char *alpha_replica_state(const TfStatus *st, const KbTfJob *job, int t)
{
    if (st->failed[t] > 0)
        return "Failed";
    if (st->active[t] > 0)
        return "Running";
    if (st->succeeded[t] > 0 && st->succeeded[t] >= kb_tfjob_effective_replicas(job, t))
        return "Succeeded";
    return "Unknown";
}

static json_object *alpha_replica_statuses(const TfStatus *st, const KbTfJob *job)
{
    static const int order[] = {KB_TF_MASTER, KB_TF_CHIEF, KB_TF_WORKER, KB_TF_PS, KB_TF_EVALUATOR};
    json_object *list = json_object_new_array();
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        int t = order[i];
        if (!job->specs[t].present)
            continue;
        json_object *o = json_object_new_object(), *states = json_object_new_object();
        add_nonzero(states, "Running", st->active[t]);
        add_nonzero(states, "Succeeded", st->succeeded[t]);
        add_nonzero(states, "Failed", st->failed[t]);
        add_nonzero(states, "Unknown", st->pending[t]);
        json_object_object_add(o, "ReplicasStates", states);
        json_object_object_add(o, "state", json_object_new_string(alpha_replica_state(st, job, t)));
        json_object_object_add(o, "tf_replica_type",
                               json_object_new_string(kb_tf_replica_type_to_alpha(t)));
        json_object_array_add(list, o);
    }
    return list;
}

/* The observed value of status[@key], a new reference, or NULL. */
static json_object *observed(const KbTfJob *job, const char *key)
{
    json_object *v;
    if (job->status.raw != NULL && json_object_object_get_ex(job->status.raw, key, &v) && v != NULL)
        return json_object_get(v);
    return NULL;
}

json_object *tf_status_to_json(const TfStatus *st, const KbTfJob *job)
{
    json_object *o = json_object_new_object();
    gboolean alpha = job->api == KB_TF_API_V1ALPHA1;
    /* v1alpha1 keeps the seed's `conditions: null`; kb-tfjob rebuilds them from phase/state. */
    json_object_object_add(o, "conditions", alpha ? NULL : conditions_json(st));
    if (st->counted)
        json_object_object_add(o, "replicaStatuses",
                               alpha ? alpha_replica_statuses(st, job)
                                     : v1_replica_statuses(st, job));
    else {
        json_object *rs = observed(job, "replicaStatuses");
        if (rs != NULL)
            json_object_object_add(o, "replicaStatuses", rs);
    }
    add_time(o, "startTime", st->start_time);
    add_time(o, "completionTime", st->completion_time);
    if (alpha) {
        gboolean failed = tf_status_is(st, KB_TF_COND_FAILED);
        const char *state = failed                                   ? "Failed"
                            : tf_status_is(st, KB_TF_COND_SUCCEEDED) ? "Succeeded"
                                                                     : "Running";
        json_object_object_add(
                o, "phase", json_object_new_string(st->alpha_phase ? st->alpha_phase : "Creating"));
        json_object_object_add(o, "state", json_object_new_string(state));
        const char *msg = failed ? tf_status_message(st, KB_TF_COND_FAILED) : NULL;
        json_object_object_add(o, "reason", json_object_new_string(msg ? msg : ""));
        json_object_object_add(o, "controlPaused", json_object_new_boolean(FALSE));
    }
    return o;
}
