/*
 * The binder (see the header). The binder is reference counted: every binding on the wire holds a
 * reference, so a response that arrives after kb_binder_free() finds the binder marked freed and
 * only drops its own data.
 */
#include "scheduler/binder.h"
#include "scheduler/claim-write.h"

#include <string.h>

#include "scheduler/dra.h"

typedef struct {
    KbPod *pod; /* ref */
    char *node;
    char *job;
    char *gpu_ids;  /* "0,1" chosen by gpu-topology, or NULL */
    guint attempts; /* bindings sent so far (retries after unknown outcomes) */
    /* DRA: the claim writes before the binding (KbClaimWrite, a reference), how many are done,
     * and the resourceVersion each done write returned (for its undo). */
    GPtrArray *claim_writes;
    guint n_written;
    char **written_rv;
} Pending;

/* A token bucket for events (see kb_binder_set_gang_event_budget). */
typedef struct {
    double qps;
    double burst;
    double tokens;
    gint64 last_us;
} Bucket;

/* A job's bindings of one batch still without an outcome, and where the bound ones went. */
typedef struct {
    guint outstanding;
    guint bound;
    GHashTable *nodes; /* interned node name -> count */
    GPtrArray *order;  /* interned node names, first-bound order */
} Gang;

/* A placement waiting to be sent again after an unknown outcome. */
typedef struct {
    KbBinder *binder;
    Pending *p;
    guint source;
} Retry;

struct KbBinder {
    gint ref_count;
    gboolean freed;
    gboolean paused;
    KbClient *client;
    KbCache *cache;
    KbRecorder *recorder;
    KbBinderDoneFunc done;
    gpointer done_data;
    gint64 (*now_s)(void);
    guint max_in_flight;
    guint in_flight;
    guint max_attempts;
    guint retry_base_ms;
    GQueue queue; /* Pending* */
    guint64 counts[KB_BIND_N_RESULTS];
    guint64 skipped;
    guint64 retries;
    guint64 resolved_by_watch;
    GList *retrying;   /* Retry*, waiting for their timer */
    GHashTable *gangs; /* job key -> Gang* */
    Bucket gang_budget;
    Bucket pod_budget;
    guint64 events_posted;
    guint64 events_over_budget;
    KbBinderEvictFunc evict_done;
    gpointer evict_data;
    guint evictions_in_flight;
    guint64 evict_counts[KB_EVICT_N_RESULTS];
    guint64 claims_written; /* DRA claim status writes that succeeded */
    guint64 claims_undone;  /* ... undone after a failure */
    guint64 claim_failures; /* claim writes that failed */
    KbInformer *claims;     /* kb_binder_set_claim_informer(), borrowed */
};

typedef struct {
    KbBinder *binder; /* a reference */
    Pending *p;
    gint64 sent_us;
} Call;

static gint64 default_now_s(void)
{
    return g_get_real_time() / G_USEC_PER_SEC;
}

static void pending_free(Pending *p)
{
    kb_object_unref(p->pod);
    g_free(p->node);
    g_free(p->job);
    g_free(p->gpu_ids);
    if (p->claim_writes != NULL) {
        for (guint i = 0; i < p->n_written; i++)
            g_free(p->written_rv[i]);
        g_free(p->written_rv);
        g_ptr_array_unref(p->claim_writes);
    }
    g_free(p);
}

static void retries_clear(KbBinder *b, gboolean give_up_too);

static void gang_free(gpointer p)
{
    Gang *g = p;
    g_hash_table_unref(g->nodes);
    g_ptr_array_unref(g->order);
    g_free(g);
}

static void bucket_init(Bucket *k, double qps, guint burst)
{
    k->qps = MAX(qps, 0.0);
    k->burst = burst;
    k->tokens = burst;
    k->last_us = g_get_monotonic_time();
}

static gboolean bucket_take(Bucket *k)
{
    gint64 now = g_get_monotonic_time();
    k->tokens = MIN(k->burst, k->tokens + k->qps * (double)(now - k->last_us) / 1e6);
    k->last_us = now;
    if (k->tokens < 1.0)
        return FALSE;
    k->tokens -= 1.0;
    return TRUE;
}

static void binder_unref(KbBinder *b)
{
    if (--b->ref_count > 0)
        return;
    g_clear_pointer(&b->gangs, g_hash_table_unref);
    g_queue_clear_full(&b->queue, (GDestroyNotify)pending_free);
    g_free(b);
}

KbBinder *kb_binder_new(KbClient *client, KbCache *cache, KbRecorder *recorder)
{
    KbBinder *b = g_new0(KbBinder, 1);
    b->ref_count = 1;
    b->client = client;
    b->cache = cache;
    b->recorder = recorder;
    b->now_s = default_now_s;
    b->max_in_flight = KB_BINDER_DEFAULT_MAX_IN_FLIGHT;
    b->max_attempts = KB_BINDER_MAX_ATTEMPTS;
    b->retry_base_ms = KB_BINDER_RETRY_BASE_MS;
    b->gangs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, gang_free);
    bucket_init(&b->gang_budget, KB_BINDER_GANG_EVENT_QPS, KB_BINDER_GANG_EVENT_BURST);
    bucket_init(&b->pod_budget, KB_BINDER_POD_EVENT_QPS, KB_BINDER_POD_EVENT_BURST);
    g_queue_init(&b->queue);
    return b;
}

void kb_binder_free(KbBinder *binder)
{
    if (binder == NULL)
        return;
    binder->freed = TRUE;
    retries_clear(binder, FALSE);
    g_queue_clear_full(&binder->queue, (GDestroyNotify)pending_free);
    binder_unref(binder);
}

void kb_binder_set_claim_informer(KbBinder *binder, KbInformer *claims)
{
    binder->claims = claims;
}

void kb_binder_set_done_func(KbBinder *binder, KbBinderDoneFunc func, gpointer user_data)
{
    binder->done = func;
    binder->done_data = user_data;
}

void kb_binder_set_max_in_flight(KbBinder *binder, guint n)
{
    binder->max_in_flight = MAX(n, 1);
}

void kb_binder_set_gang_event_budget(KbBinder *binder, double qps, guint burst)
{
    bucket_init(&binder->gang_budget, qps, burst);
}

void kb_binder_set_pod_event_budget(KbBinder *binder, double qps, guint burst)
{
    bucket_init(&binder->pod_budget, qps, burst);
}

guint64 kb_binder_events_posted(const KbBinder *binder)
{
    return binder->events_posted;
}

guint64 kb_binder_events_over_budget(const KbBinder *binder)
{
    return binder->events_over_budget;
}

void kb_binder_set_retry(KbBinder *binder, guint max_attempts, guint base_ms)
{
    binder->max_attempts = MAX(max_attempts, 1);
    binder->retry_base_ms = MAX(base_ms, 1);
}

void kb_binder_set_clock(KbBinder *binder, gint64 (*now_s)(void))
{
    binder->now_s = now_s != NULL ? now_s : default_now_s;
}

const char *kb_bind_result_to_string(KbBindResult result)
{
    switch (result) {
    case KB_BIND_SUCCEEDED:
        return "succeeded";
    case KB_BIND_CONFLICT:
        return "conflict";
    case KB_BIND_NOT_FOUND:
        return "not_found";
    case KB_BIND_REFUSED:
        return "refused";
    case KB_BIND_ERROR:
    case KB_BIND_N_RESULTS:
        break;
    }
    return "error";
}

/* What a binding's response says about where the pod is. */
typedef enum {
    V_BOUND,     /* 2xx, or 409 "already assigned to node X" with X our node */
    V_ELSEWHERE, /* 409 "already assigned to node X", another node: the pod lives there */
    V_FAILED,    /* certainly not bound: 404, 400, 403, 422, 409 for another reason */
    V_UNKNOWN,   /* 5xx, 429, timeout, transport: it may or may not have happened */
} Verdict;

/* The node named in kube-apiserver's 409 `pod NAME is already assigned to node "X"` (newly
 * allocated), or NULL. */
static char *assigned_node(const GError *error)
{
    static const char marker[] = "already assigned to node \"";
    const char *at = error != NULL ? strstr(error->message, marker) : NULL;
    if (at == NULL)
        return NULL;
    at += strlen(marker);
    const char *end = strchr(at, '"');
    return end != NULL && end > at ? g_strndup(at, (gsize)(end - at)) : NULL;
}

static Verdict classify(const KbResponse *resp, const char *our_node, KbBindResult *result,
                        char **elsewhere)
{
    *elsewhere = NULL;
    *result = KB_BIND_SUCCEEDED;
    if (resp->error == NULL)
        return V_BOUND;
    if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_CONFLICT) ||
        g_error_matches(resp->error, KB_ERROR, KB_ERROR_ALREADY_EXISTS)) {
        g_autofree char *node = assigned_node(resp->error);
        if (node != NULL && strcmp(node, our_node) == 0)
            return V_BOUND; /* an earlier attempt whose answer was lost did it */
        *result = KB_BIND_CONFLICT;
        if (node != NULL) {
            *elsewhere = g_steal_pointer(&node);
            return V_ELSEWHERE;
        }
        return V_FAILED; /* uid changed (pod recreated), being deleted, ... */
    }
    if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        *result = KB_BIND_NOT_FOUND;
        return V_FAILED;
    }
    if (kb_error_is_retryable(resp->error) || resp->http_status == 0 || resp->http_status >= 500) {
        *result = KB_BIND_ERROR;
        return V_UNKNOWN;
    }
    *result = KB_BIND_REFUSED;
    return V_FAILED;
}

/* "bound 8 pods: n1 x4, n2 x4" (at most 16 nodes named). */
static char *gang_summary(const Gang *g)
{
    GString *s = g_string_new(NULL);
    g_string_printf(s, "bound %u pod%s:", g->bound, g->bound == 1 ? "" : "s");
    for (guint i = 0; i < g->order->len; i++) {
        const char *node = g->order->pdata[i];
        if (i == 16) {
            g_string_append_printf(s, " and %u more nodes", g->order->len - i);
            break;
        }
        g_string_append_printf(s, "%s %s x%u", i == 0 ? "" : ",", node,
                               GPOINTER_TO_UINT(g_hash_table_lookup(g->nodes, node)));
    }
    return g_string_free(s, FALSE);
}

/* The job's batch has every outcome: one event on its PodGroup naming the nodes. */
static void gang_event(KbBinder *b, const char *job_key, const Gang *g, const Pending *p)
{
    if (g->bound == 0 || b->recorder == NULL)
        return;
    if (!bucket_take(&b->gang_budget)) {
        b->events_over_budget++;
        return;
    }
    g_auto(GStrv) parts = g_strsplit(job_key, "/", 2);
    KbJobInfo *job = parts[0] != NULL && parts[1] != NULL
                             ? kb_cache_lookup_job(b->cache, parts[0], parts[1])
                             : NULL;
    b->events_posted++;
    if (job != NULL && job->group != NULL) {
        g_autofree char *summary = gang_summary(g);
        kb_recorder_event(b->recorder, &job->group->meta,
                          kb_pod_group_object_api_version(job->group),
                          kb_pod_group_kind(job->group), "Normal", "Scheduled", "%s", summary);
    } else {
        /* A pod without a group: the event kube-scheduler posts. */
        const KbObjectMeta *m = &p->pod->meta;
        kb_recorder_event(b->recorder, m, "v1", "Pod", "Normal", "Scheduled",
                          "Successfully assigned %s/%s to %s", m->namespace_, m->name, p->node);
    }
}

/* One placement of @p's job has its final outcome (@bound_on: the node it is on, or NULL). */
static void gang_settle(KbBinder *b, const Pending *p, const char *bound_on)
{
    Gang *g = g_hash_table_lookup(b->gangs, p->job);
    if (g == NULL)
        return;
    if (bound_on != NULL) {
        const char *node = g_intern_string(bound_on);
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(g->nodes, node));
        if (n == 0)
            g_ptr_array_add(g->order, (gpointer)node);
        g_hash_table_insert(g->nodes, (gpointer)node, GUINT_TO_POINTER(n + 1));
        g->bound++;
    }
    if (--g->outstanding > 0)
        return;
    gang_event(b, p->job, g, p);
    g_hash_table_remove(b->gangs, p->job);
}

static void gang_expect(KbBinder *b, const char *job_key)
{
    Gang *g = g_hash_table_lookup(b->gangs, job_key);
    if (g == NULL) {
        g = g_new0(Gang, 1);
        g->nodes = g_hash_table_new(g_direct_hash, g_direct_equal);
        g->order = g_ptr_array_new();
        g_hash_table_insert(b->gangs, g_strdup(job_key), g);
    }
    g->outstanding++;
}

static void report_done(KbBinder *b, KbBindOutcome *out)
{
    b->counts[out->result]++;
    if (b->done != NULL)
        b->done(out, b->done_data);
}

static void report_bound(KbBinder *b, Pending *p, gint64 latency_us)
{
    const KbObjectMeta *m = &p->pod->meta;
    KbBindOutcome out = {.result = KB_BIND_SUCCEEDED,
                         .pod = p->pod,
                         .node = p->node,
                         .job = p->job,
                         .latency_us = latency_us};
    kb_cache_bind_succeeded(b->cache, m->namespace_, m->name, m->uid, b->now_s());
    /* Per-pod events of group members on their own budget (a pod without a group gets its
     * event as its gang's). */
    if (b->recorder != NULL && p->pod->group_name != NULL) {
        if (bucket_take(&b->pod_budget)) {
            b->events_posted++;
            kb_recorder_event(b->recorder, m, "v1", "Pod", "Normal", "Scheduled",
                              "Successfully assigned %s/%s to %s", m->namespace_, m->name, p->node);
        } else if (b->pod_budget.burst > 0) {
            b->events_over_budget++;
        }
    }
    gang_settle(b, p, p->node);
    report_done(b, &out);
}

/* Cache update and events for one binding whose outcome is final. */
static void report(KbBinder *b, Pending *p, Verdict v, KbBindResult result, const char *elsewhere,
                   const GError *error, gint64 latency_us)
{
    const KbObjectMeta *m = &p->pod->meta;
    const char *why = error != NULL ? error->message : "error";
    KbBindOutcome out = {.result = result,
                         .pod = p->pod,
                         .node = p->node,
                         .job = p->job,
                         .error = error,
                         .latency_us = latency_us};
    switch (v) {
    case V_BOUND:
        report_bound(b, p, latency_us);
        return;
    case V_ELSEWHERE:
        gang_settle(b, p, NULL);
        kb_cache_bind_elsewhere(b->cache, m->namespace_, m->name, m->uid, elsewhere, b->now_s());
        g_warning("pod %s/%s: not bound to %s: it is already on node %s; held there until the "
                  "watch shows it",
                  m->namespace_, m->name, p->node, elsewhere);
        break;
    case V_UNKNOWN:
        gang_settle(b, p, NULL);
        /* Still unknown after every retry: keep the room until the watch (or the assume
         * timeout) says where the pod is. */
        kb_cache_bind_unknown(b->cache, m->namespace_, m->name, m->uid, b->now_s());
        g_warning("pod %s/%s: binding to node %s: outcome unknown after %u attempts (%s); its "
                  "resources stay held until the watch shows the pod",
                  m->namespace_, m->name, p->node, p->attempts, why);
        break;
    case V_FAILED:
        gang_settle(b, p, NULL);
        out.n_rolled_back = 1;
        kb_cache_bind_refused(b->cache, m->namespace_, m->name, m->uid, b->now_s(), why);
        g_warning("pod %s/%s: binding to node %s failed (%s); the pod is placed again, job %s "
                  "backs off",
                  m->namespace_, m->name, p->node, why, p->job);
        if (b->recorder != NULL)
            kb_recorder_event(b->recorder, m, "v1", "Pod", "Warning", "FailedScheduling",
                              "Binding rejected: %s; the pod is placed again (job %s backs off)",
                              why, p->job);
        break;
    }
    report_done(b, &out);
}

static void pump(KbBinder *b);

static guint retry_delay_ms(const KbBinder *b, guint attempts)
{
    guint shift = MIN(attempts > 0 ? attempts - 1 : 0, 10u);
    return MIN(b->retry_base_ms << shift, KB_BINDER_RETRY_MAX_MS);
}

/* The outcome is still unknown: was it settled meanwhile (the watch shows the pod, or it is
 * gone)? Else send the binding again; 409 "already assigned to node <ours>" then says it
 * happened. */
static gboolean on_retry(gpointer data)
{
    Retry *r = data;
    KbBinder *b = r->binder;
    Pending *p = r->p;
    const KbObjectMeta *m = &p->pod->meta;
    b->retrying = g_list_remove(b->retrying, r);
    g_free(r);
    if (!kb_cache_pod_is_assumed(b->cache, m->namespace_, m->name, m->uid)) {
        b->resolved_by_watch++;
        KbTaskInfo *t = kb_cache_lookup_task(b->cache, m->namespace_, m->name);
        if (t != NULL && g_strcmp0(t->pod->meta.uid, m->uid) == 0 && t->pod->node_name != NULL &&
            strcmp(t->pod->node_name, p->node) == 0)
            report_bound(b, p, 0);
        else
            gang_settle(b, p, NULL);
        pending_free(p);
        return G_SOURCE_REMOVE;
    }
    g_queue_push_head(&b->queue, p);
    pump(b);
    return G_SOURCE_REMOVE;
}

static void schedule_retry_in(KbBinder *b, Pending *p, guint delay_ms)
{
    Retry *r = g_new0(Retry, 1);
    r->binder = b;
    r->p = p;
    b->retries++;
    r->source = g_timeout_add(delay_ms, on_retry, r);
    b->retrying = g_list_prepend(b->retrying, r);
}

static void schedule_retry(KbBinder *b, Pending *p)
{
    schedule_retry_in(b, p, retry_delay_ms(b, p->attempts));
}

/*
 * A certain failure of a member whose gang already has others on nodes: keep its room and send
 * the same binding again after the job's backoff, so no other job takes the room and splits the
 * gang for good. A 404 too: a pod that is really gone leaves the cache when the watch shows its
 * deletion, which frees the room, and the retry then finds it settled (on_retry); released at
 * once, a member refused by a 404 for any other reason lost its room to other jobs on a full
 * cluster and left its gang partly bound for good (test-batchd-faults saw it). Returns FALSE
 * when the failure must release the pod instead.
 */
static gboolean defer_failure(KbBinder *b, Pending *p, KbBindResult result, const GError *error)
{
    const KbObjectMeta *m = &p->pod->meta;
    const char *why = error != NULL ? error->message : "error";
    guint delay_s = 0;
    if (!kb_cache_bind_deferred(b->cache, m->namespace_, m->name, m->uid, b->now_s(), why,
                                &delay_s))
        return FALSE;
    g_warning("pod %s/%s: binding to node %s refused (%s); its gang %s is partly bound, so the "
              "pod keeps its room and is bound again in %u s",
              m->namespace_, m->name, p->node, why, p->job, delay_s);
    if (b->recorder != NULL)
        kb_recorder_event(b->recorder, m, "v1", "Pod", "Warning", "FailedScheduling",
                          "Binding rejected: %s; retried in %u s (job %s backs off)", why, delay_s,
                          p->job);
    KbBindOutcome out = {
            .result = result, .pod = p->pod, .node = p->node, .job = p->job, .error = error};
    report_done(b, &out);
    schedule_retry_in(b, p, delay_s * 1000);
    return TRUE;
}

static void undo_claims(KbBinder *b, Pending *p);

static void on_bound(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    KbBinder *b = c->binder;
    Pending *p = c->p;

    b->in_flight--;
    if (!b->freed) {
        KbBindResult result;
        g_autofree char *elsewhere = NULL;
        Verdict v = classify(resp, p->node, &result, &elsewhere);
        if (v == V_UNKNOWN && p->attempts < b->max_attempts) {
            schedule_retry(b, g_steal_pointer(&c->p));
        } else if (v == V_FAILED && defer_failure(b, p, result, resp->error)) {
            c->p = NULL; /* now held by the retry */
        } else {
            if (v == V_FAILED || v == V_ELSEWHERE)
                undo_claims(b, p);
            report(b, p, v, result, elsewhere, resp->error, g_get_monotonic_time() - c->sent_us);
        }
        /* The done callback may have freed the binder. */
        if (!b->freed)
            pump(b);
    }
    if (c->p != NULL)
        pending_free(c->p);
    binder_unref(b);
    g_free(c);
}

/* The Binding carries kube-batchd.io/gpu-ids: the API server writes it onto the pod in the
 * binding's own write (one write per pod, no separate PATCH that RBAC must allow), so the device
 * plugin or runtime hook sees the indices when the kubelet starts the pod. */
static void send_binding(Call *c)
{
    const KbObjectMeta *m = &c->p->pod->meta;
    const char *annotations[] = {KB_GPU_IDS_ANNOTATION, c->p->gpu_ids, NULL};
    c->p->attempts++;
    kb_client_bind_async_full(c->binder->client, m->namespace_, m->name, m->uid, c->p->node,
                              c->p->gpu_ids != NULL ? annotations : NULL, on_bound, c);
}

/* ---- DRA claim writes ----------------------------------------------------------------------- */

/* Undo the claim writes made for @p, last first, each against the version it produced. */
static void undo_claims(KbBinder *b, Pending *p)
{
    for (guint i = p->n_written; i-- > 0;) {
        const KbClaimWrite *w = p->claim_writes->pdata[i];
        kb_claim_write_undo(b->client, w, p->written_rv[i], "");
        if (w->allocates)
            kb_dra_claim_written(kb_cache_dra(b->cache), w->namespace_, w->name, FALSE);
        g_clear_pointer(&p->written_rv[i], g_free);
    }
    b->claims_undone += p->n_written;
    p->n_written = 0;
}

static void send_next(Call *c);

static void on_claim_written(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    KbBinder *b = c->binder;
    Pending *p = c->p;
    if (!b->freed) {
        KbClaimWrite *w = p->claim_writes->pdata[p->n_written];
        if (resp->error == NULL) {
            p->written_rv[p->n_written++] = g_strdup(resp->resource_version);
            b->claims_written++;
            /* before the cache hears of the write: as when the watch brings it first */
            if (b->claims != NULL)
                kb_informer_expect_answered(b->claims, w->namespace_, w->name,
                                            resp->resource_version);
            if (w->allocates)
                kb_dra_claim_written(kb_cache_dra(b->cache), w->namespace_, w->name, TRUE);
            send_next(c);
            return;
        }
        /* Refused, changed meanwhile (409) or unknown: nothing of the pod is bound; what was
         * written for it is undone and it is placed again. */
        if (b->claims != NULL)
            kb_informer_expect_answered(b->claims, w->namespace_, w->name, NULL);
        g_autoptr(GError) error =
                g_error_new(resp->error->domain, resp->error->code, "claim %s/%s: %s",
                            w->namespace_, w->name, resp->error->message);
        b->claim_failures++;
        b->in_flight--;
        undo_claims(b, p);
        report(b, p, V_FAILED, KB_BIND_REFUSED, NULL, error, g_get_monotonic_time() - c->sent_us);
        if (!b->freed)
            pump(b);
    } else {
        b->in_flight--;
    }
    pending_free(c->p);
    binder_unref(b);
    g_free(c);
}

/* The pod's claim writes first, one at a time, then its Binding. */
static void send_next(Call *c)
{
    Pending *p = c->p;
    if (p->claim_writes == NULL || p->n_written >= p->claim_writes->len) {
        send_binding(c);
        return;
    }
    KbClaimWrite *w = p->claim_writes->pdata[p->n_written];
    /* its watch event is then taken in without a decode (kb_informer_expect) */
    KbResourceClaim *echo = c->binder->claims != NULL ? kb_claim_write_take_echo(w) : NULL;
    if (echo != NULL)
        kb_informer_expect(c->binder->claims, echo, w->from_rv);
    kb_claim_write_send(c->binder->client, w, TRUE, on_claim_written, c);
}

/* Send queued placements while the window has room; skip those released meanwhile. */
static void pump(KbBinder *b)
{
    while (!b->paused && b->in_flight < b->max_in_flight && !g_queue_is_empty(&b->queue)) {
        Pending *p = g_queue_pop_head(&b->queue);
        const KbObjectMeta *m = &p->pod->meta;
        if (!kb_cache_pod_is_assumed(b->cache, m->namespace_, m->name, m->uid)) {
            b->skipped++;
            gang_settle(b, p, NULL);
            pending_free(p);
            continue;
        }
        Call *c = g_new0(Call, 1);
        c->binder = b;
        b->ref_count++;
        c->p = p;
        c->sent_us = g_get_monotonic_time();
        b->in_flight++;
        send_next(c);
    }
}

void kb_binder_submit(KbBinder *binder, const GArray *placements)
{
    for (guint i = 0; placements != NULL && i < placements->len; i++) {
        const KbPlacement *pl = &g_array_index(placements, KbPlacement, i);
        Pending *p = g_new0(Pending, 1);
        p->pod = kb_object_ref(pl->pod);
        p->node = g_strdup(pl->node);
        p->job = g_strdup(pl->job);
        p->gpu_ids = g_strdup(pl->gpu_ids);
        if (pl->claim_writes != NULL && pl->claim_writes->len > 0) {
            p->claim_writes = g_ptr_array_ref(pl->claim_writes);
            p->written_rv = g_new0(char *, pl->claim_writes->len);
        }
        gang_expect(binder, p->job);
        g_queue_push_tail(&binder->queue, p);
    }
    pump(binder);
}

/* A placement given up before its outcome is known: never sent, the pod is free again; sent at
 * least once, it may be bound, so its room stays held until the watch or the assume timeout. */
static void give_up(KbBinder *b, Pending *p)
{
    const KbObjectMeta *m = &p->pod->meta;
    gang_settle(b, p, NULL);
    if (!kb_cache_pod_is_assumed(b->cache, m->namespace_, m->name, m->uid))
        return;
    if (p->attempts > 0)
        kb_cache_bind_unknown(b->cache, m->namespace_, m->name, m->uid, b->now_s());
    else
        kb_cache_bind_failed(b->cache, m->namespace_, m->name, m->uid, NULL);
}

static void retries_clear(KbBinder *b, gboolean give_up_too)
{
    while (b->retrying != NULL) {
        Retry *r = b->retrying->data;
        b->retrying = g_list_delete_link(b->retrying, b->retrying);
        g_source_remove(r->source);
        if (give_up_too)
            give_up(b, r->p);
        pending_free(r->p);
        g_free(r);
    }
}

guint kb_binder_drop_queued(KbBinder *binder)
{
    guint n = g_list_length(binder->retrying);
    Pending *p;

    retries_clear(binder, TRUE);
    while ((p = g_queue_pop_head(&binder->queue)) != NULL) {
        give_up(binder, p);
        pending_free(p);
        n++;
    }
    return n;
}

void kb_binder_set_paused(KbBinder *binder, gboolean paused)
{
    binder->paused = paused;
    if (!paused)
        pump(binder);
}

guint kb_binder_queued(const KbBinder *binder)
{
    return binder->queue.length;
}

guint kb_binder_in_flight(const KbBinder *binder)
{
    return binder->in_flight;
}

guint64 kb_binder_count(const KbBinder *binder, KbBindResult result)
{
    return result < KB_BIND_N_RESULTS ? binder->counts[result] : 0;
}

guint64 kb_binder_claims_written(const KbBinder *binder)
{
    return binder->claims_written;
}

guint64 kb_binder_claims_undone(const KbBinder *binder)
{
    return binder->claims_undone;
}

guint64 kb_binder_claim_failures(const KbBinder *binder)
{
    return binder->claim_failures;
}

guint64 kb_binder_skipped(const KbBinder *binder)
{
    return binder->skipped;
}

guint64 kb_binder_retries(const KbBinder *binder)
{
    return binder->retries;
}

guint kb_binder_retrying(const KbBinder *binder)
{
    return g_list_length(binder->retrying);
}

/* ---- evictions ------------------------------------------------------------------------------ */

static const char *const eviction_versions[] = {"policy/v1", "policy/v1beta1"};

typedef struct {
    KbBinder *binder; /* a reference */
    KbPod *pod;       /* ref */
    const char *reason;
    char *message; /* owned: the DisruptionTarget condition's */
    guint version; /* index into eviction_versions */
} EvictCall;

/* A native PodGroup's DisruptionTarget write, and the evictions of its pods that wait for it. */
typedef struct {
    KbBinder *binder; /* a reference */
    GPtrArray *calls; /* EvictCall*, owned until started */
    char *name;       /* "ns/name" */
} GroupCall;

void kb_binder_set_evict_func(KbBinder *binder, KbBinderEvictFunc func, gpointer user_data)
{
    binder->evict_done = func;
    binder->evict_data = user_data;
}

guint kb_binder_evictions_in_flight(const KbBinder *binder)
{
    return binder->evictions_in_flight;
}

guint64 kb_binder_evict_count(const KbBinder *binder, KbEvictResult result)
{
    return result < KB_EVICT_N_RESULTS ? binder->evict_counts[result] : 0;
}

const char *kb_evict_result_to_string(KbEvictResult result)
{
    switch (result) {
    case KB_EVICT_ACCEPTED:
        return "accepted";
    case KB_EVICT_GONE:
        return "gone";
    case KB_EVICT_REFUSED:
    case KB_EVICT_N_RESULTS:
        break;
    }
    return "refused";
}

/* The server does not serve Eviction in this policy version (kb_client_evict's test). */
static gboolean eviction_version_unknown(const KbResponse *resp)
{
    if (resp->http_status == 400 && resp->error != NULL)
        return strstr(resp->error->message, "no kind") != NULL ||
               strstr(resp->error->message, "is not registered") != NULL;
    if (resp->http_status == 404) {
        json_object *details = NULL, *kind = NULL;
        if (resp->body == NULL || !json_object_object_get_ex(resp->body, "details", &details) ||
            !json_object_object_get_ex(details, "kind", &kind))
            return TRUE;
        return g_strcmp0(json_object_get_string(kind), "pods") != 0;
    }
    return FALSE;
}

static void send_eviction(EvictCall *c);

static void evict_call_done(EvictCall *c)
{
    KbBinder *b = c->binder;
    b->evictions_in_flight--;
    kb_object_unref(c->pod);
    g_free(c->message);
    binder_unref(b);
    g_free(c);
}

static void evict_report(KbBinder *b, EvictCall *c, const KbResponse *resp)
{
    const KbObjectMeta *m = &c->pod->meta;
    KbEvictOutcome out = {.pod = c->pod, .reason = c->reason};
    if (resp->error == NULL) {
        out.result = KB_EVICT_ACCEPTED;
    } else if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        out.result = KB_EVICT_GONE;
    } else {
        out.result = KB_EVICT_REFUSED;
        out.error = resp->error;
        kb_cache_evict_failed(b->cache, m->namespace_, m->name, m->uid);
        g_warning("pod %s/%s: eviction (%s) refused: %s; it keeps running", m->namespace_, m->name,
                  c->reason, resp->error->message);
        if (b->recorder != NULL)
            kb_recorder_event(b->recorder, m, "v1", "Pod", "Warning", "FailedEviction",
                              "Eviction (%s) refused: %s", c->reason, resp->error->message);
    }
    b->evict_counts[out.result]++;
    if (b->evict_done != NULL)
        b->evict_done(&out, b->evict_data);
}

static void on_evicted(const KbResponse *resp, gpointer data)
{
    EvictCall *c = data;
    KbBinder *b = c->binder;
    if (!b->freed && resp->error != NULL && c->version + 1 < G_N_ELEMENTS(eviction_versions) &&
        eviction_version_unknown(resp)) {
        c->version++;
        send_eviction(c);
        return;
    }
    if (!b->freed)
        evict_report(b, c, resp);
    evict_call_done(c);
}

/*
 * The condition kube-scheduler sets on a victim (pod or native PodGroup) before it deletes it:
 * {"status": {"conditions": [DisruptionTarget True PreemptionByScheduler]}}, a strategic merge
 * patch (both types merge conditions on their type). New object.
 */
static json_object *condition_true(const char *type, const char *reason, const char *message)
{
    g_autofree char *when = kb_time_format(g_get_real_time() / G_USEC_PER_SEC);
    json_object *c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string(type));
    json_object_object_add(c, "status", json_object_new_string("True"));
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(message));
    json_object_object_add(c, "lastTransitionTime", json_object_new_string(when));
    return c;
}

/* A gang evicted whole because it lost a member (@reason KB_GANG_INCOMPLETE) also gets
 * KB_GANG_EVICTED_CONDITION, which the API server leaves alone: its controller reads it. */
static json_object *disruption_body(const char *message, const char *reason)
{
    gboolean gang = g_strcmp0(reason, KB_GANG_INCOMPLETE) == 0;
    json_object *body = kb_conditions_patch_new(condition_true(
            KB_DISRUPTION_TARGET, gang ? KB_GANG_INCOMPLETE : KB_PREEMPTION_BY_SCHEDULER, message));
    if (gang) {
        json_object *status = json_object_object_get(body, "status");
        json_object_array_add(json_object_object_get(status, "conditions"),
                              condition_true(KB_GANG_EVICTED_CONDITION, reason, message));
    }
    return body;
}

/* Whatever became of the condition, the eviction says what becomes of the pod. */
static void on_pod_disrupted(const KbResponse *resp, gpointer data)
{
    EvictCall *c = data;
    const KbObjectMeta *m = &c->pod->meta;
    if (resp->error != NULL && !g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND))
        g_warning("pod %s/%s: condition DisruptionTarget not set: %s; evicting all the same",
                  m->namespace_, m->name, resp->error->message);
    if (c->binder->freed)
        evict_call_done(c);
    else
        send_eviction(c);
}

static void patch_status_async(KbBinder *b, const KbResourceType *type, const KbObjectMeta *m,
                               const char *message, const char *reason, KbResponseFunc func,
                               gpointer data)
{
    json_object *body = disruption_body(message, reason);
    KbRequest req = {.method = "PATCH",
                     .type = type,
                     .namespace_ = m->namespace_,
                     .name = m->name,
                     .subresource = "status",
                     .body = body,
                     .content_type = "application/strategic-merge-patch+json",
                     .urgent = TRUE};
    kb_client_call_async(b->client, &req, func, data);
    json_object_put(body);
}

/*
 * Whether a victim's own status is written before its eviction: only for a stale gang's pods
 * (GangIncomplete), whose kube-batchd.io/GangEvicted condition tf-operator reads and no server
 * writes. Not DisruptionTarget/PreemptionByScheduler alone, on any server: a kube-apiserver with
 * PodDisruptionConditions (beta and on by default from 1.26, GA in 1.31) sets DisruptionTarget
 * (reason EvictionByEvictionAPI) in the eviction itself, replacing the condition of that type
 * written just before; before 1.25 nothing reads that type, and 1.25 has it alpha, off.
 * kube-scheduler writes it because it deletes its victims; the Eviction API does it for us. It
 * was one write per victim more (2,000 in kai-reclaim-250, a third of the server's writes there);
 * the preemptor and the reason stay in the Preempted/Reclaimed event posted on each victim.
 */
static gboolean writes_pod_condition(const EvictCall *c)
{
    return g_strcmp0(c->reason, KB_GANG_INCOMPLETE) == 0;
}

static void start_eviction(EvictCall *c)
{
    if (!writes_pod_condition(c)) {
        send_eviction(c);
        return;
    }
    patch_status_async(c->binder, &kb_type_pods, &c->pod->meta, c->message, c->reason,
                       on_pod_disrupted, c);
}

static void on_group_disrupted(const KbResponse *resp, gpointer data)
{
    GroupCall *g = data;
    if (resp->error != NULL && !g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND))
        g_warning("podgroup %s: condition DisruptionTarget not set: %s; evicting its pods all "
                  "the same",
                  g->name, resp->error->message);
    for (guint i = 0; i < g->calls->len; i++) {
        if (g->binder->freed)
            evict_call_done(g->calls->pdata[i]);
        else
            start_eviction(g->calls->pdata[i]);
    }
    g_ptr_array_unref(g->calls);
    g_free(g->name);
    binder_unref(g->binder);
    g_free(g);
}

static void send_eviction(EvictCall *c)
{
    const KbObjectMeta *m = &c->pod->meta;
    json_object *body = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(body, "apiVersion",
                           json_object_new_string(eviction_versions[c->version]));
    json_object_object_add(body, "kind", json_object_new_string("Eviction"));
    json_object_object_add(meta, "name", json_object_new_string(m->name));
    json_object_object_add(meta, "namespace", json_object_new_string(m->namespace_));
    json_object_object_add(body, "metadata", meta);
    if (m->uid != NULL) {
        /* The pod we chose, not a successor that took its name meanwhile. */
        json_object *pre = json_object_new_object();
        json_object_object_add(pre, "uid", json_object_new_string(m->uid));
        json_object *opts = json_object_new_object();
        json_object_object_add(opts, "preconditions", pre);
        json_object_object_add(body, "deleteOptions", opts);
    }
    KbRequest req = {.method = "POST",
                     .type = &kb_type_pods,
                     .namespace_ = m->namespace_,
                     .name = m->name,
                     .subresource = "eviction",
                     .body = body,
                     .urgent = TRUE};
    kb_client_call_async(c->binder->client, &req, on_evicted, c);
    json_object_put(body);
}

void kb_binder_evict(KbBinder *binder, const GArray *evictions)
{
    /* KbPodGroup* (borrowed from @evictions) -> GroupCall*: one write per group, first. */
    g_autoptr(GHashTable) groups = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) order = g_ptr_array_new();
    for (guint i = 0; evictions != NULL && i < evictions->len; i++) {
        const KbEviction *ev = &g_array_index(evictions, KbEviction, i);
        EvictCall *c = g_new0(EvictCall, 1);
        c->binder = binder;
        binder->ref_count++;
        c->pod = kb_object_ref(ev->pod);
        c->reason = ev->reason;
        c->message = g_strdup(ev->message != NULL ? ev->message : ev->reason);
        binder->evictions_in_flight++;
        if (ev->disrupted_group == NULL) {
            start_eviction(c);
            continue;
        }
        GroupCall *g = g_hash_table_lookup(groups, ev->disrupted_group);
        if (g == NULL) {
            g = g_new0(GroupCall, 1);
            g->binder = binder;
            binder->ref_count++;
            g->calls = g_ptr_array_new();
            g->name = g_strdup_printf("%s/%s", ev->disrupted_group->meta.namespace_,
                                      ev->disrupted_group->meta.name);
            g_hash_table_insert(groups, ev->disrupted_group, g);
            g_ptr_array_add(order, ev->disrupted_group);
        }
        g_ptr_array_add(g->calls, c);
    }
    for (guint i = 0; i < order->len; i++) {
        const KbPodGroup *pg = order->pdata[i];
        GroupCall *g = g_hash_table_lookup(groups, pg);
        const EvictCall *first = g->calls->pdata[0];
        patch_status_async(binder, &kb_type_pod_groups_native, &pg->meta, first->message,
                           first->reason, on_group_disrupted, g);
    }
}
