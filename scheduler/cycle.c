/* One scheduling cycle: prepare, run the actions, report; see cycle.h. */
#include "scheduler/cycle.h"

#include <string.h>

#include "policies/plugin.h"
#include "scheduler/actions.h"
#include "scheduler/dra.h"
#include "scheduler/reserve.h"
#include "scheduler/session.h"
#include "scheduler/stale.h"

static void placement_clear(gpointer p)
{
    KbPlacement *pl = p;
    g_clear_pointer(&pl->pod, kb_object_unref);
    g_free(pl->job);
    g_free(pl->gpu_ids);
    g_clear_pointer(&pl->claim_writes, g_ptr_array_unref);
}

void kb_cycle_attach_claim_writes(KbCycleResult *result, KbCache *cache, guint first)
{
    guint n = result->placements->len > first ? result->placements->len - first : 0;
    gboolean any = FALSE;
    g_autofree KbPod **pods = g_new0(KbPod *, MAX(n, 1));
    for (guint i = 0; i < n; i++) {
        pods[i] = g_array_index(result->placements, KbPlacement, first + i).pod;
        any |= pods[i]->n_resource_claims > 0;
    }
    if (!any)
        return;
    g_autofree GPtrArray **writes = kb_dra_gang_writes(kb_cache_dra(cache), pods, n);
    for (guint i = 0; i < n; i++)
        g_array_index(result->placements, KbPlacement, first + i).claim_writes = writes[i];
}

static void job_status_clear(gpointer p)
{
    KbJobStatus *js = p;
    g_clear_pointer(&js->group, kb_object_unref);
    g_clear_pointer(&js->pod, kb_object_unref);
    g_free(js->job);
    g_free(js->message);
    g_clear_pointer(&js->children, g_array_unref);
}

static void child_status_clear(gpointer p)
{
    g_clear_pointer(&((KbChildStatus *)p)->group, kb_object_unref);
}

/*
 * A composite's children: each one's pods and bound pods, and whether it was initially scheduled
 * (its minCount bound, now or before: its own condition says True). The composite is once
 * minGroupCount children are (at least one under `basic`), and then for good.
 */
static void report_children(KbJobInfo *job, KbJobStatus *st)
{
    st->children = g_array_new(FALSE, TRUE, sizeof(KbChildStatus));
    g_array_set_clear_func(st->children, child_status_clear);
    for (guint c = 0; c < job->children->len; c++) {
        KbPodGroup *child = job->children->pdata[c];
        KbChildStatus cs = {kb_object_ref(child), 0, 0, FALSE};
        for (guint i = 0; i < job->tasks->len; i++) {
            const KbTaskInfo *t = job->tasks->pdata[i];
            if (g_strcmp0(t->pod->group_name, child->meta.name) != 0)
                continue;
            cs.n_pods++;
            cs.n_bound += t->state == KB_TASK_BINDING || t->state == KB_TASK_BOUND ||
                          t->state == KB_TASK_RUNNING || t->state == KB_TASK_SUCCEEDED;
        }
        cs.initially_scheduled =
                (cs.n_pods > 0 && cs.n_bound >= (guint)MAX(child->min_member, 1)) ||
                g_strcmp0(child->scheduled_status, "True") == 0;
        st->n_children_scheduled += cs.initially_scheduled;
        g_array_append_val(st->children, cs);
    }
    if (st->n_children_scheduled >= (guint)MAX(job->group->min_groups, 1) ||
        g_strcmp0(job->group->scheduled_status, "True") == 0)
        job->initially_scheduled = TRUE;
}

static void queue_status_clear(gpointer p)
{
    KbQueueStatus *qs = p;
    g_clear_pointer(&qs->queue, kb_object_unref);
    g_free(qs->fault_message);
    g_free(qs->history);
}

static void event_clear(gpointer p)
{
    KbSchedEvent *ev = p;
    g_clear_pointer(&ev->object, kb_object_unref);
    g_free(ev->message);
}

static void eviction_clear(gpointer p)
{
    KbEviction *ev = p;
    g_clear_pointer(&ev->pod, kb_object_unref);
    g_free(ev->message);
    g_free(ev->job);
    g_free(ev->preemptor);
    g_clear_pointer(&ev->disrupted_group, kb_object_unref);
}

/* @n_jobs: the jobs of the cache, each of which gets a status (no reallocation as they do). */
static KbCycleResult *result_new(gint64 now, guint n_jobs)
{
    KbCycleResult *r = g_new0(KbCycleResult, 1);
    r->now = now;
    r->placements = g_array_new(FALSE, TRUE, sizeof(KbPlacement));
    g_array_set_clear_func(r->placements, placement_clear);
    r->job_statuses = g_array_sized_new(FALSE, TRUE, sizeof(KbJobStatus), n_jobs);
    g_array_set_clear_func(r->job_statuses, job_status_clear);
    r->queue_statuses = g_array_new(FALSE, TRUE, sizeof(KbQueueStatus));
    g_array_set_clear_func(r->queue_statuses, queue_status_clear);
    r->events = g_array_new(FALSE, TRUE, sizeof(KbSchedEvent));
    g_array_set_clear_func(r->events, event_clear);
    r->evictions = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(r->evictions, eviction_clear);
    return r;
}

void kb_cycle_result_free(KbCycleResult *result)
{
    if (result == NULL)
        return;
    g_clear_pointer(&result->placements, g_array_unref);
    g_clear_pointer(&result->job_statuses, g_array_unref);
    g_clear_pointer(&result->queue_statuses, g_array_unref);
    g_clear_pointer(&result->events, g_array_unref);
    g_clear_pointer(&result->evictions, g_array_unref);
    g_free(result);
}

const KbJobStatus *kb_cycle_result_job(const KbCycleResult *result, const char *key)
{
    for (guint i = 0; i < result->job_statuses->len; i++) {
        const KbJobStatus *js = &g_array_index(result->job_statuses, KbJobStatus, i);
        if (strcmp(js->job, key) == 0)
            return js;
    }
    return NULL;
}

static guint occupied(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING];
}

/* ---- before the actions: which jobs can be scheduled at all --------------------------------- */

/* The length of the job's current binding backoff (seconds; see kb_cache_bind_refused). */
static guint backoff_step(const KbJobInfo *job)
{
    guint shift = MIN(job->bind_failures > 0 ? job->bind_failures - 1 : 0, 6u);
    return MIN(1u << shift, (guint)KB_CACHE_BIND_BACKOFF_MAX_S);
}

/*
 * Mark the pending tasks that must not be bound yet: a pod with schedulingGates (kube-scheduler
 * leaves it alone until they are removed), with a claim that does not exist or is not Bound
 * (kube-scheduler keeps it pending), or with a DRA claim that is not created yet or whose class
 * or selector cannot be used (kb_dra_pod_ready). Returns how many; the first reason into @why (static
 * reason, message newly allocated).
 */
static guint hold_tasks(KbSession *ssn, KbJobInfo *job, const char **reason, char **why)
{
    guint held = 0;
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        t->held = FALSE;
        if (t->state != KB_TASK_PENDING)
            continue;
        const KbPod *pod = t->pod;
        g_autofree char *claim = NULL;
        if (pod->n_scheduling_gates > 0) {
            t->held = TRUE;
            if (*why == NULL) {
                *reason = "SchedulingGated";
                *why = g_strdup_printf("pod %s/%s has %u scheduling gate%s (first: \"%s\"): "
                                       "it is not scheduled until they are removed",
                                       pod->meta.namespace_, pod->meta.name,
                                       pod->n_scheduling_gates,
                                       pod->n_scheduling_gates == 1 ? "" : "s",
                                       pod->scheduling_gate != NULL ? pod->scheduling_gate : "");
            }
        } else if (pod->n_claims > 0 && !kb_cache_pod_claims_ready(ssn->cache, pod, &claim)) {
            t->held = TRUE;
            if (*why == NULL) {
                *reason = "VolumeNotBound";
                *why = g_strdup_printf("pod %s/%s: %s", pod->meta.namespace_, pod->meta.name,
                                       claim);
            }
        } else if (pod->n_resource_claims > 0) {
            const char *r = NULL;
            g_autofree char *w = NULL;
            if (!kb_dra_pod_ready(kb_cache_dra(ssn->cache), pod, &r, &w)) {
                t->held = TRUE;
                if (*why == NULL) {
                    *reason = r;
                    *why = g_steal_pointer(&w);
                }
            }
        }
        held += t->held;
    }
    return held;
}

/* Jobs run in leaf queues of a valid tree only; FALSE (with the reason noted) otherwise. */
static gboolean prepare_job_queue_tree(KbSession *ssn, KbJobInfo *job, const KbQueueInfo *qi)
{
    const KbQueueTree *t = ssn->qtree;
    if (t->held[qi->id]) {
        kb_session_job_note(ssn, job, "QueueInvalid", "queue tree invalid: %s",
                            t->fault_message[qi->id]);
        return FALSE;
    }
    if (!kb_qtree_is_leaf(t, qi->id)) {
        g_autofree char *children = kb_qtree_children_names(t, kb_qtree_figures_node(t, qi->id));
        kb_session_job_note(ssn, job, "QueueNotLeaf",
                            "queue \"%s\" is a parent queue (children %s): jobs run in leaf "
                            "queues only",
                            qi->name, children);
        return FALSE;
    }
    return TRUE;
}

static void prepare_job(KbSession *ssn, KbJobInfo *job)
{
    KbJobScratch *js = &ssn->job_scratch[job->id];
    js->considered = TRUE;
    if (occupied(job) + job->n_state[KB_TASK_SUCCEEDED] >= (guint)job->min_member &&
        job->tasks->len > 0 && job->phase != KB_JOB_COMPLETED)
        job->phase = KB_JOB_RUNNING;
    if (job->group_missing) {
        kb_session_job_note(ssn, job, "PodGroupNotFound",
                            "pod group \"%s\" does not exist (yet): its pods wait", job->key);
        return;
    }
    KbQueueInfo *qi = kb_session_job_queue(ssn, job);
    if (qi == NULL) {
        kb_session_job_note(ssn, job, "QueueNotFound", "queue \"%s\" does not exist", job->queue);
        return;
    }
    if (!qi->open) {
        kb_session_job_note(ssn, job, "QueueClosed", "queue \"%s\" is closed", job->queue);
        return;
    }
    if (!prepare_job_queue_tree(ssn, job, qi))
        return;
    guint members = job->tasks->len - job->n_state[KB_TASK_FAILED];
    if (members < (guint)job->min_member) {
        kb_session_job_note(ssn, job, "NotEnoughPods",
                            "waiting for pods: %u/%d exist (minMember %d)", members,
                            job->min_member, job->min_member);
        return;
    }
    const char *held_reason = NULL;
    g_autofree char *held_why = NULL;
    guint held = hold_tasks(ssn, job, &held_reason, &held_why);
    if (held > 0 && members - held < (guint)job->min_member) {
        kb_session_job_note(ssn, job, held_reason, "%u/%d pods may be bound: %s", members - held,
                            job->min_member, held_why);
        return;
    }
    /* Bindings refused for certain: the job waits out its backoff rather than spin. */
    if (job->backoff_until > ssn->now && job->n_state[KB_TASK_PENDING] > 0) {
        /* No countdown in the message: it would change (and be written) every second. */
        kb_session_job_note(ssn, job, "BindingRefused",
                            "binding refused %u time%s (last: %s); backing off %u s",
                            job->bind_failures, job->bind_failures == 1 ? "" : "s",
                            job->bind_error != NULL ? job->bind_error : "unknown",
                            backoff_step(job));
        return;
    }
    /* A pod asking for more than any node has would hold its gang forever: say so. */
    for (guint c = 0; c < job->classes->len; c++) {
        const KbTaskClass *k = job->classes->pdata[c];
        int s = kb_resources_first_short(&k->resreq, &ssn->max_alloc);
        if (s < 0)
            continue;
        g_autofree char *want = kb_resource_format_value(s, k->resreq.v[s]);
        g_autofree char *most = kb_resource_format_value(s, MAX(ssn->max_alloc.v[s], 0));
        kb_session_job_note(
                ssn, job, "Unschedulable", "pod %s/%s requests %s %s but no node has more than %s",
                k->rep->meta.namespace_, k->rep->meta.name, want, kb_resource_name(s), most);
        return;
    }
    js->ready_to_schedule = TRUE;
}

/* ---- after the actions: phase, condition, events -------------------------------------------- */

/*
 * The phase a job's PodGroup shows after the cycle. Completed once nothing of it runs or waits
 * and every pod ended, or it succeeded and what is left is being deleted. A job whose pods are
 * all terminating with none succeeded was evicted (preempt, reclaim, a stale gang) or deleted:
 * it is not done, and it lost its place, so it is Pending and goes through admission again when
 * its controller brings it back (Volcano's scheduler reports an evicted PodGroup so). Reported
 * Completed, an evicted gang read as finished to kbctl and to tf-operator's elastic scaling.
 */
static KbJobPhase final_phase(const KbJobInfo *job)
{
    guint occ = occupied(job), succ = job->n_state[KB_TASK_SUCCEEDED];
    guint pending = job->n_state[KB_TASK_PENDING];
    if (job->tasks->len > 0 && occ == 0 && pending == 0) {
        gboolean torn_down = job->n_state[KB_TASK_RELEASING] > 0 && succ == 0;
        return torn_down ? KB_JOB_PENDING : KB_JOB_COMPLETED;
    }
    if (occ + succ >= (guint)job->min_member && job->tasks->len > 0)
        return KB_JOB_RUNNING;
    if (occ + succ > 0 && (job->phase == KB_JOB_RUNNING || job->phase == KB_JOB_UNKNOWN))
        return KB_JOB_UNKNOWN;
    if (job->phase == KB_JOB_RUNNING || job->phase == KB_JOB_UNKNOWN ||
        job->phase == KB_JOB_COMPLETED)
        return KB_JOB_INQUEUE;
    return job->phase;
}

static void add_event(KbCycleResult *r, KbObjectMeta *obj, const char *api_version,
                      const char *kind, const char *type, const char *reason, const char *msg)
{
    KbSchedEvent ev = {kb_object_ref(obj), api_version, kind, type, reason, g_strdup(msg)};
    g_array_append_val(r->events, ev);
}

static void job_events(KbSession *ssn, const KbJobInfo *job, const KbJobStatus *st)
{
    KbCycleResult *r = ssn->result;
    gboolean scheduled = g_strcmp0(st->reason, "Scheduled") == 0;
    /* A placed gang's event comes from the binder once its bindings are done (naming the nodes,
     * within its budget): one write per gang rather than two. */
    gboolean incomplete = job->stale_reason != NULL;
    if (job->group != NULL && st->reason != NULL && !scheduled)
        add_event(r, &job->group->meta, kb_pod_group_object_api_version(job->group),
                  kb_pod_group_kind(job->group), "Warning",
                  incomplete ? KB_GANG_INCOMPLETE : "Unschedulable", st->message);
    if (scheduled || st->reason == NULL || incomplete)
        return;
    /* Aggregated per job: one FailedScheduling, on the job's first pending pod (the PodGroup
     * has its own event), not one per member. */
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state != KB_TASK_PENDING)
            continue;
        if (st->n_pending > 1) {
            g_autofree char *msg = g_strdup_printf("%s (%u pods of job %s wait)", st->message,
                                                   st->n_pending, job->key);
            add_event(r, &t->pod->meta, "v1", "Pod", "Warning", "FailedScheduling", msg);
        } else {
            add_event(r, &t->pod->meta, "v1", "Pod", "Warning", "FailedScheduling", st->message);
        }
        return;
    }
}

/* @n at the end of [@buf, @end), in decimal with its sign; returns where it starts. */
static char *format_int_back(char *end, gint64 n)
{
    guint64 u = n < 0 ? (guint64)0 - (guint64)n : (guint64)n;
    char *p = end;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    if (n < 0)
        *--p = '-';
    return p;
}

/*
 * g_strdup_printf("%u/%d tasks placed", placed, min_member), without printf: every running job
 * gets this message in every cycle, and formatting it was 13% of a trace replay's time.
 */
static char *tasks_placed_message(guint placed, gint32 min_member)
{
    static const char tail[] = " tasks placed";
    char buf[64];
    char *end = buf + sizeof buf - sizeof tail;
    memcpy(end, tail, sizeof tail);
    char *p = format_int_back(end, min_member);
    *--p = '/';
    p = format_int_back(p, placed);
    return g_strdup(p);
}

/*
 * A running job's message: "8/8 tasks placed", and for a long job on GPUs borrowed past its
 * queue's long-job limit (reclaim's borrowedLongJobsOnly, @proportion the plugin's state, NULL
 * when nothing borrows), that reclaim may take them back, so that its users learn it before an
 * eviction does.
 */
static char *running_message(gconstpointer proportion, const KbJobInfo *job)
{
    char *placed =
            tasks_placed_message(occupied(job) + job->n_state[KB_TASK_SUCCEEDED], job->min_member);
    if (proportion == NULL || !kb_plugin_proportion_borrowed(proportion, job))
        return placed;
    char *msg = g_strdup_printf("%s; " KB_BORROWED_NOTE " \"%s\"'s long-job limit: reclaim may "
                                "take them back for a queue below its deserved share",
                                placed, job->queue);
    g_free(placed);
    return msg;
}

static void job_condition(KbSession *ssn, gconstpointer proportion, KbJobInfo *job, KbJobStatus *st)
{
    KbJobScratch *js = &ssn->job_scratch[job->id];
    gboolean ready = occupied(job) + job->n_state[KB_TASK_SUCCEEDED] >= (guint)job->min_member;
    if (ready || job->tasks->len == 0)
        job->pending_since = 0;
    else if (job->pending_since == 0)
        job->pending_since = ssn->now;
    guint refused = 0;
    for (guint i = 0; job->bind_error != NULL && i < job->tasks->len; i++)
        refused += ((const KbTaskInfo *)job->tasks->pdata[i])->bind_refused;
    if (job->stale_reason != NULL) {
        /* A bound gang below its minimum (stale.h): what users must know first. */
        st->condition_type = KB_GANG_INCOMPLETE;
        st->condition_status = "True";
        st->reason = job->stale_reason;
        st->message = g_strdup(job->stale_message);
    } else if (refused > 0) {
        /* Placed, but bindings refused: say so rather than "Scheduled". */
        st->condition_type = "Unschedulable";
        st->condition_status = "True";
        st->reason = "BindingRefused";
        st->message = g_strdup_printf("binding refused %u time%s (last: %s); %u pod%s kept on "
                                      "%s node%s, retried after a backoff of %u s",
                                      MAX(job->bind_failures, 1u),
                                      job->bind_failures > 1 ? "s" : "", job->bind_error, refused,
                                      refused == 1 ? "" : "s", refused == 1 ? "its" : "their",
                                      refused == 1 ? "" : "s", backoff_step(job));
    } else if (js->reason != NULL && !ready) {
        st->condition_type = "Unschedulable";
        st->condition_status = "True";
        st->reason = js->reason;
        g_autofree char *reserved = kb_reserve_describe(ssn, job);
        st->message = reserved != NULL ? g_strdup_printf("%s; %s", js->message->str, reserved)
                                       : g_strdup(js->message->str);
        gint32 timeout = job->group != NULL ? job->group->schedule_timeout_seconds : 0;
        if (timeout > 0 && ssn->now - job->pending_since >= timeout) {
            st->reason = "ScheduleTimeout";
            g_free(st->message);
            st->message = g_strdup_printf("not scheduled within scheduleTimeoutSeconds=%d: %s",
                                          timeout, js->message->str);
        }
    } else if (ready && job->phase == KB_JOB_RUNNING) {
        st->condition_type = "Scheduled";
        st->condition_status = "True";
        st->reason = "Scheduled";
        st->message = running_message(proportion, job);
    }
}

static void report_job(KbSession *ssn, gconstpointer proportion, KbJobInfo *job)
{
    KbJobStatus st = {0};
    st.group = job->group != NULL ? kb_object_ref(job->group) : NULL;
    if (!job->is_group && job->tasks->len > 0)
        st.pod = kb_object_ref(((KbTaskInfo *)job->tasks->pdata[0])->pod);
    st.job = g_strdup(job->key);
    st.queue = job->queue;
    job->phase = final_phase(job);
    st.phase = job->phase;
    st.min_member = job->min_member;
    st.n_pending = job->n_state[KB_TASK_PENDING];
    st.n_allocated = job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
                     job->n_state[KB_TASK_BOUND];
    /* Pods the watch shows running (phase Running), not merely placed. */
    st.n_running = job->n_state[KB_TASK_RUNNING];
    st.n_succeeded = job->n_state[KB_TASK_SUCCEEDED];
    st.n_failed = job->n_state[KB_TASK_FAILED];
    st.n_placed = ssn->job_scratch[job->id].n_placed;
    st.n_bound = job->n_state[KB_TASK_BINDING] + job->n_state[KB_TASK_BOUND] +
                 job->n_state[KB_TASK_RUNNING] + st.n_succeeded;
    if (job->is_composite && job->group != NULL)
        report_children(job, &st);
    else if ((st.n_bound >= (guint)job->min_member && job->tasks->len > 0) ||
             (job->group != NULL && g_strcmp0(job->group->scheduled_status, "True") == 0))
        job->initially_scheduled = TRUE;
    st.initially_scheduled = job->initially_scheduled;
    /* Volcano's PodGroup phases: placed but not yet running is Inqueue; Running once minMember
     * pods run (or ran to completion). The cycle's own phase (placed counts) stays internal. */
    if (st.phase == KB_JOB_RUNNING && st.n_running + st.n_succeeded < (guint)job->min_member)
        st.phase = KB_JOB_INQUEUE;
    job_condition(ssn, proportion, job, &st);
    guint counts[4] = {st.n_pending, st.n_running, st.n_succeeded, st.n_failed};
    gboolean described = !job->reported || job->last_phase != st.phase ||
                         g_strcmp0(job->last_reason, st.reason) != 0 ||
                         g_strcmp0(job->last_message, st.message) != 0;
    /* Counts alone change the status written, not the events posted. Being bound (initially
     * scheduled) is written for Kubernetes' own PodGroups (their condition) and the x-k8s
     * dialect (its scheduled count); a CRD group of the other dialects writes nothing that
     * tells it, so it is no change there (kai-jobs-4000 on kube-apiserver: 3.5 PodGroup status
     * PATCHes per one-pod job, one of them the same status again). */
    gboolean initially_written = job->group == NULL || job->group->dialect == KB_PODGROUP_NATIVE ||
                                 job->group->dialect == KB_PODGROUP_X_K8S;
    st.changed = described || memcmp(counts, job->last_counts, sizeof counts) != 0 ||
                 (initially_written && job->reported_initially != job->initially_scheduled);
    if (st.changed) {
        job->reported = TRUE;
        job->reported_initially = job->initially_scheduled;
        job->last_phase = st.phase;
        g_free(job->last_reason);
        job->last_reason = g_strdup(st.reason);
        g_free(job->last_message);
        job->last_message = g_strdup(st.message);
        memcpy(job->last_counts, counts, sizeof counts);
        if (described)
            job_events(ssn, job, &st);
    }
    ssn->result->n_tasks_pending += st.n_pending;
    g_array_append_val(ssn->result->job_statuses, st);
}

/* A queue-tree fault on the queue's status; the event only when the fault changed. */
static void report_queue_fault(KbSession *ssn, KbQueueInfo *qi, KbQueueStatus *qs)
{
    const KbQueueTree *t = ssn->qtree;
    const char *msg = t->fault_message[qi->id];
    if (msg != NULL) {
        qs->fault_reason = kb_qtree_fault_reason(t->fault[qi->id]);
        qs->fault_message = g_strdup(msg);
    }
    if (g_strcmp0(qi->last_fault, msg) == 0) {
        qs->fault_since = qi->fault_since;
        return;
    }
    g_free(qi->last_fault);
    qi->last_fault = g_strdup(msg);
    qi->fault_since = qs->fault_since = ssn->now;
    if (msg != NULL && qi->queue != NULL)
        add_event(ssn->result, &qi->queue->meta, "scheduling.volcano.sh/v1beta1", "Queue",
                  "Warning", qs->fault_reason, msg);
}

static void report_usage(KbSession *ssn, KbQueueStatus *qs)
{
    KbUsage *u = ssn->cache != NULL ? kb_cache_usage(ssn->cache) : NULL;
    qs->usage_time = u != NULL ? kb_usage_time(u, qs->name) : -1;
    for (int s = 0; s < KB_RES_MAX && qs->usage_time >= 0; s++)
        qs->usage[s] = kb_usage_get(u, qs->name, s);
    KbQueueHistory h;
    if (ssn->cache != NULL && kb_history_export(kb_cache_history(ssn->cache), qs->name, &h))
        qs->history = g_memdup2(&h, sizeof h);
}

static void report_queues(KbSession *ssn)
{
    gboolean proportion = kb_session_plugin_state(ssn, "proportion") != NULL;
    const KbQueueTree *t = ssn->qtree;
    g_autofree KbResources *request = g_new0(KbResources, ssn->queues->len + 1);
    for (guint q = 0; q < ssn->queues->len; q++) {
        for (gint x = (gint)q; x >= 0; x = t->parent[x])
            kb_resources_add(&request[x], &ssn->request[q]);
    }
    for (guint q = 0; q < ssn->queues->len; q++) {
        KbQueueInfo *qi = ssn->queues->pdata[q];
        guint f = kb_qtree_figures_node(t, q);
        KbQueueStatus qs = {0};
        qs.name = qi->name;
        qs.queue = qi->queue != NULL ? kb_object_ref(qi->queue) : NULL;
        qs.weight = qi->weight;
        qs.allocated = t->alloc[f];
        if (proportion)
            qs.deserved = t->deserved[f];
        for (int s = 0; s < KB_RES_MAX; s++) {
            if (qs.deserved.v[s] == KB_RESOURCE_UNLIMITED)
                qs.deserved.v[s] = 0;
        }
        qs.capability = qi->capability;
        qs.guarantee = qi->guarantee;
        qs.request = request[f];
        qs.pending = request[f];
        kb_resources_sub(&qs.pending, &qs.allocated);
        for (int s = 0; s < KB_RES_MAX; s++)
            qs.pending.v[s] = MAX(qs.pending.v[s], 0);
        qs.parent = f == t->root ? NULL
                    : t->parent[q] >= 0
                            ? t->name[t->parent[q]]
                            : (qi->queue != NULL && qi->queue->parent != NULL ? qi->queue->parent
                                                                              : t->name[t->root]);
        report_queue_fault(ssn, qi, &qs);
        report_usage(ssn, &qs);
        g_array_append_val(ssn->result->queue_statuses, qs);
    }
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi == NULL)
            continue;
        KbQueueStatus *qs = &g_array_index(ssn->result->queue_statuses, KbQueueStatus, qi->id);
        switch (job->phase) {
        case KB_JOB_PENDING:
            qs->n_pending++;
            break;
        case KB_JOB_INQUEUE:
            qs->n_inqueue++;
            break;
        case KB_JOB_RUNNING:
            qs->n_running++;
            break;
        case KB_JOB_UNKNOWN:
            qs->n_unknown++;
            break;
        case KB_JOB_COMPLETED:
            qs->n_completed++;
            break;
        }
    }
}

KbCycleResult *kb_cycle_run(KbCache *cache, const KbConf *conf, gint64 now)
{
    gint64 t0 = g_get_monotonic_time();
    kb_cache_sync_dra(cache);
    KbCycleResult *result = result_new(now, kb_cache_jobs(cache)->len);
    KbSession *ssn = kb_session_open(cache, conf, now, result);
    for (guint j = 0; j < ssn->jobs->len; j++)
        prepare_job(ssn, ssn->jobs->pdata[j]);
    result->n_jobs = ssn->jobs->len;
    for (guint i = 0; i < conf->n_actions; i++) {
        const struct kb_action_ops *action = kb_action_lookup(conf->actions[i]);
        gint64 ta = g_get_monotonic_time();
        if (action != NULL)
            action->execute(ssn);
        if (i < G_N_ELEMENTS(result->action_us))
            result->action_us[result->n_actions++] = g_get_monotonic_time() - ta;
    }
    kb_stale_run(ssn);
    /* proportion's state when some job runs on borrowed GPUs, else NULL (most cycles). */
    gconstpointer proportion = kb_session_plugin_state(ssn, "proportion");
    if (kb_plugin_proportion_n_borrowed(proportion) == 0)
        proportion = NULL;
    for (guint j = 0; j < ssn->jobs->len; j++)
        report_job(ssn, proportion, ssn->jobs->pdata[j]);
    report_queues(ssn);
    kb_session_close(ssn);
    result->duration_us = g_get_monotonic_time() - t0;
    return result;
}
