/*
 * The status writer (see the header). One entry per object with a write queued, in flight or
 * waiting for a retry; the writer is reference counted by the writes in flight so that responses
 * arriving after kb_status_writer_free() only release memory.
 */
#include "scheduler/status-writer.h"

#include <string.h>
#include <math.h>

#include "scheduler/queue-tree.h"

#define DEFAULT_BACKOFF_MS     1000
#define DEFAULT_MAX_BACKOFF_MS 30000

typedef struct {
    char *key; /* "<plural>.<group>|ns/name[|<subresource>]" */
    const KbResourceType *type;
    char *namespace_;
    char *name;
    const char *subresource; /* "status", or NULL: the object itself (queue annotations) */
    KbPatchType patch_type;
    char *body; /* the latest patch text */
    gboolean in_flight;
    gboolean dirty; /* a newer body arrived while a write was in flight */
    guint attempts;
    guint retry_source;
    struct KbStatusWriter *writer;
} Entry;

struct KbStatusWriter {
    gint ref_count;
    gboolean freed;
    KbClient *client;
    KbRecorder *recorder;
    KbQueueTypeFunc queue_type;
    gpointer queue_type_data;
    guint backoff_ms;
    guint max_backoff_ms;
    GHashTable *entries;    /* key -> Entry* (owned) */
    GHashTable *queue_last; /* queue name -> last status body queued (owned strings) */
    /* "plural|queue" -> UsageLast: the decayed usage last queued, and when */
    GHashTable *usage_last;
    /* "plural|queue" -> HistoryLast: when the runtime history was last queued, and the newer
     * samples waiting for KB_STATUS_USAGE_INTERVAL to pass */
    GHashTable *history_last;
    /* A composite's child: "plural.group|ns/name" -> "status\nmessage" of the condition last
     * queued (written from every cycle, not only changed ones: a child's state is not the job's) */
    GHashTable *child_last;
    /* "<plural>.<group>|<member>" of the kb_queue_kept_members whose server dropped the
     * status.<member> we wrote (their CRD's schema prunes what it does not declare): those go
     * into the queue's annotations instead (kb-objects.h, KB_QUEUE_USAGE_ANNOTATION). */
    GHashTable *pruning;
    guint64 counts[KB_STATUS_N_RESULTS];
    guint64 dropped; /* writes refused because KB_STATUS_MAX_ENTRIES were pending */
    gboolean held;   /* kb_status_writer_set_held: queued writes wait */
};

typedef struct {
    gint64 at;  /* the cycle time it was queued at */
    char *text; /* the resourceSeconds written */
} UsageLast;

typedef struct {
    KbStatusWriter *writer;
    const KbResourceType *type;
    char *name;              /* the queue */
    gint64 at;               /* when last queued (the cycle's clock), 0: never */
    KbQueueHistory *pending; /* owned, NULL when nothing waits */
    guint source;            /* the timer that writes what waits once the interval passed */
} HistoryLast;

static void history_last_free(gpointer p)
{
    HistoryLast *l = p;
    if (l->source != 0)
        g_source_remove(l->source);
    g_free(l->name);
    g_free(l->pending);
    g_free(l);
}

static void usage_last_free(gpointer p)
{
    UsageLast *l = p;
    g_free(l->text);
    g_free(l);
}

static void entry_free(gpointer p)
{
    Entry *e = p;
    if (e->retry_source != 0)
        g_source_remove(e->retry_source);
    g_free(e->key);
    g_free(e->namespace_);
    g_free(e->name);
    g_free(e->body);
    g_free(e);
}

static void writer_unref(KbStatusWriter *w)
{
    if (--w->ref_count > 0)
        return;
    g_hash_table_unref(w->entries);
    g_hash_table_unref(w->queue_last);
    g_hash_table_unref(w->usage_last);
    g_hash_table_unref(w->history_last);
    g_hash_table_unref(w->child_last);
    g_hash_table_unref(w->pruning);
    g_free(w);
}

KbStatusWriter *kb_status_writer_new(KbClient *client, KbRecorder *recorder)
{
    KbStatusWriter *w = g_new0(KbStatusWriter, 1);
    w->ref_count = 1;
    w->client = client;
    w->recorder = recorder;
    w->backoff_ms = DEFAULT_BACKOFF_MS;
    w->max_backoff_ms = DEFAULT_MAX_BACKOFF_MS;
    w->entries = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, entry_free);
    w->queue_last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    w->usage_last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, usage_last_free);
    w->history_last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, history_last_free);
    w->child_last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    w->pruning = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return w;
}

static gboolean cancel_retry(gpointer key, gpointer value, gpointer data)
{
    Entry *e = value;
    if (e->retry_source != 0) {
        g_source_remove(e->retry_source);
        e->retry_source = 0;
    }
    /* Entries with a write in flight stay until the response releases the writer. */
    return !e->in_flight;
}

void kb_status_writer_free(KbStatusWriter *writer)
{
    if (writer == NULL)
        return;
    writer->freed = TRUE;
    g_hash_table_foreach_remove(writer->entries, cancel_retry, NULL);
    g_hash_table_remove_all(writer->history_last); /* and their timers */
    writer_unref(writer);
}

void kb_status_writer_set_queue_type_func(KbStatusWriter *writer, KbQueueTypeFunc func,
                                          gpointer user_data)
{
    writer->queue_type = func;
    writer->queue_type_data = user_data;
}

void kb_status_writer_set_backoff(KbStatusWriter *writer, guint initial_ms, guint max_ms)
{
    writer->backoff_ms = MAX(initial_ms, 1);
    writer->max_backoff_ms = MAX(max_ms, writer->backoff_ms);
}

guint kb_status_writer_pending(const KbStatusWriter *writer)
{
    return g_hash_table_size(writer->entries);
}

guint64 kb_status_writer_count(const KbStatusWriter *writer, KbStatusResult result)
{
    return result < KB_STATUS_N_RESULTS ? writer->counts[result] : 0;
}

const char *kb_status_result_to_string(KbStatusResult result)
{
    switch (result) {
    case KB_STATUS_WRITTEN:
        return "written";
    case KB_STATUS_GONE:
        return "gone";
    case KB_STATUS_RETRIED:
        return "retried";
    case KB_STATUS_FAILED:
    case KB_STATUS_N_RESULTS:
        break;
    }
    return "failed";
}

/* ---- sending ------------------------------------------------------------------------------- */

static void send_entry(KbStatusWriter *w, Entry *e);

static gboolean on_retry(gpointer data)
{
    Entry *e = data;
    e->retry_source = 0;
    send_entry(e->writer, e);
    return G_SOURCE_REMOVE;
}

static void finish(KbStatusWriter *w, Entry *e, KbStatusResult result)
{
    w->counts[result]++;
    g_hash_table_remove(w->entries, e->key);
}

/* A failed attempt: retry later, or give up. */
static void attempt_failed(KbStatusWriter *w, Entry *e, const GError *error)
{
    gboolean retryable =
            kb_error_is_retryable(error) || g_error_matches(error, KB_ERROR, KB_ERROR_CONFLICT);
    e->attempts++;
    if (!retryable || e->attempts >= KB_STATUS_MAX_ATTEMPTS) {
        g_warning("%s %s%s%s: cannot write status (attempt %u, giving up): %s", e->type->plural,
                  e->namespace_ != NULL ? e->namespace_ : "", e->namespace_ != NULL ? "/" : "",
                  e->name, e->attempts, error->message);
        finish(w, e, KB_STATUS_FAILED);
        return;
    }
    w->counts[KB_STATUS_RETRIED]++;
    guint delay = w->backoff_ms;
    for (guint i = 1; i < e->attempts && delay < w->max_backoff_ms; i++)
        delay *= 2;
    delay = MIN(delay, w->max_backoff_ms);
    g_debug("%s %s: status write failed (%s); retry in %u ms", e->type->plural, e->name,
            error->message, delay);
    e->retry_source = g_timeout_add(delay, on_retry, e);
}

typedef struct {
    KbStatusWriter *writer; /* a reference */
    Entry *entry;
} Call;

static void check_pruned(KbStatusWriter *w, const Entry *e, json_object *answer);

static void on_written(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    KbStatusWriter *w = c->writer;
    Entry *e = c->entry;

    e->in_flight = FALSE;
    if (w->freed) {
        g_hash_table_remove(w->entries, e->key);
    } else if (e->dirty) {
        e->dirty = FALSE;
        e->attempts = 0;
        send_entry(w, e);
    } else if (resp->error == NULL) {
        check_pruned(w, e, resp->body);
        finish(w, e, KB_STATUS_WRITTEN);
    } else if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        g_debug("%s %s: gone, status not written", e->type->plural, e->name);
        finish(w, e, KB_STATUS_GONE);
    } else {
        attempt_failed(w, e, resp->error);
    }
    writer_unref(w);
    g_free(c);
}

static void send_entry(KbStatusWriter *w, Entry *e)
{
    const char *ct = e->patch_type == KB_PATCH_STRATEGIC ? "application/strategic-merge-patch+json"
                                                         : "application/merge-patch+json";
    json_object *body = json_tokener_parse(e->body);
    KbRequest req = {.method = "PATCH",
                     .type = e->type,
                     .namespace_ = e->namespace_,
                     .name = e->name,
                     .subresource = e->subresource,
                     .body = body,
                     .content_type = ct};
    Call *c = g_new0(Call, 1);
    c->writer = w;
    c->entry = e;
    w->ref_count++;
    e->in_flight = TRUE;
    kb_client_call_async(w->client, &req, on_written, c);
    json_object_put(body);
}

/* Merge patch @src into merge patch @dst (RFC 7386: objects merge key by key, anything else in
 * @src replaces), so that @dst then says what applying both in turn says. */
static void merge_into(json_object *dst, json_object *src)
{
    json_object_object_foreach(src, k, sv)
    {
        json_object *dv = NULL;
        if (json_object_object_get_ex(dst, k, &dv) && json_object_is_type(dv, json_type_object) &&
            json_object_is_type(sv, json_type_object))
            merge_into(dv, sv);
        else
            json_object_object_add(dst, k, json_object_get(sv));
    }
}

/* Queue @body (consumed) as a patch of @subresource ("status" or NULL) of @type @ns/@name. */
static void enqueue_at(KbStatusWriter *w, const KbResourceType *type, const char *namespace_,
                       const char *name, const char *subresource, KbPatchType patch_type,
                       json_object *body)
{
    /* The group too: every PodGroup dialect's plural is "podgroups". */
    g_autofree char *key = g_strdup_printf(
            "%s.%s|%s/%s%s%s", type->plural, type->group, namespace_ != NULL ? namespace_ : "",
            name, subresource != NULL ? "|" : "", subresource != NULL ? subresource : "");
    Entry *e = g_hash_table_lookup(w->entries, key);
    /*
     * A merge patch of the same object not known to be written yet (held, waiting to retry, or
     * in flight and possibly refused) goes into the newer one: what only the older says (a
     * queue's usage or runtime history, written when they change and at most every few
     * seconds) would otherwise be lost with it.
     */
    json_object *older =
            e != NULL && e->patch_type == KB_PATCH_MERGE && patch_type == KB_PATCH_MERGE
                    ? json_tokener_parse(e->body)
                    : NULL;
    if (older != NULL && json_object_is_type(older, json_type_object)) {
        merge_into(older, body);
        json_object_put(body);
        body = older;
    } else {
        json_object_put(older);
    }
    const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);

    if (e == NULL) {
        if (g_hash_table_size(w->entries) >= KB_STATUS_MAX_ENTRIES) {
            w->dropped++;
            w->counts[KB_STATUS_FAILED]++;
            json_object_put(body);
            return;
        }
        e = g_new0(Entry, 1);
        e->key = g_steal_pointer(&key);
        e->type = type;
        e->namespace_ = g_strdup(namespace_);
        e->name = g_strdup(name);
        e->subresource = subresource;
        e->writer = w;
        g_hash_table_insert(w->entries, e->key, e);
    }
    e->patch_type = patch_type;
    g_free(e->body);
    e->body = g_strdup(text);
    e->attempts = 0;
    json_object_put(body);
    if (e->in_flight) {
        e->dirty = TRUE;
        return;
    }
    if (e->retry_source != 0) {
        g_source_remove(e->retry_source);
        e->retry_source = 0;
    }
    if (w->held)
        return; /* sent by kb_status_writer_set_held(FALSE) */
    send_entry(w, e);
}

/* Queue @body (consumed) as the status of @type @ns/@name. */
static void enqueue(KbStatusWriter *w, const KbResourceType *type, const char *namespace_,
                    const char *name, KbPatchType patch_type, json_object *body)
{
    enqueue_at(w, type, namespace_, name, "status", patch_type, body);
}

void kb_status_writer_set_held(KbStatusWriter *writer, gboolean held)
{
    if (writer->held == held)
        return;
    writer->held = held;
    if (held)
        return;
    /* Every entry neither in flight nor waiting for a retry was queued while held. */
    GHashTableIter it;
    gpointer v;
    g_autoptr(GPtrArray) ready = g_ptr_array_new();
    g_hash_table_iter_init(&it, writer->entries);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        Entry *e = v;
        if (!e->in_flight && e->retry_source == 0)
            g_ptr_array_add(ready, e);
    }
    for (guint i = 0; i < ready->len; i++)
        send_entry(writer, g_ptr_array_index(ready, i));
}

/* ---- bodies -------------------------------------------------------------------------------- */

static const KbResourceType *group_type(KbPodGroupDialect dialect)
{
    switch (dialect) {
    case KB_PODGROUP_KUBE_BATCH:
        return &kb_type_pod_groups_kube_batch;
    case KB_PODGROUP_X_K8S:
        return &kb_type_pod_groups_x_k8s;
    case KB_PODGROUP_NATIVE:
        return &kb_type_pod_groups_native;
    case KB_PODGROUP_VOLCANO:
    default:
        return &kb_type_pod_groups_volcano;
    }
}

static json_object *condition_new(const char *type, const char *status, const char *reason,
                                  const char *message, gint64 now)
{
    json_object *c = json_object_new_object();
    g_autofree char *when = kb_time_format(now);
    json_object_object_add(c, "type", json_object_new_string(type));
    json_object_object_add(c, "status", json_object_new_string(status));
    if (reason != NULL)
        json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(message != NULL ? message : ""));
    json_object_object_add(c, "lastTransitionTime", json_object_new_string(when));
    return c;
}

json_object *kb_status_pod_group_body(const KbJobStatus *st, KbPodGroupDialect dialect, gint64 now)
{
    json_object *status = json_object_new_object();
    json_object_object_add(status, "phase",
                           json_object_new_string(kb_job_phase_to_string(st->phase)));
    if (st->condition_type != NULL) {
        json_object *conds = json_object_new_array();
        json_object_array_add(conds, condition_new(st->condition_type, st->condition_status,
                                                   st->reason, st->message, now));
        json_object_object_add(status, "conditions", conds);
    }
    json_object_object_add(status, "running", json_object_new_int64(st->n_running));
    json_object_object_add(status, "succeeded", json_object_new_int64(st->n_succeeded));
    json_object_object_add(status, "failed", json_object_new_int64(st->n_failed));
    json_object_object_add(status, "pending", json_object_new_int64(st->n_pending));
    if (dialect == KB_PODGROUP_X_K8S)
        json_object_object_add(status, "scheduled",
                               json_object_new_int64(st->n_allocated + st->n_running));
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", status);
    return body;
}

/* The native PodGroups' API: where @g (a native group or composite) is read and written. */
static const KbResourceType *native_type(const KbPodGroup *g)
{
    return g->composite  ? &kb_type_composite_pod_groups
           : g->v1alpha3 ? &kb_type_pod_groups_v1alpha3
                         : &kb_type_pod_groups_native;
}

/*
 * @g's "initially scheduled" condition (@type) saying @status: NULL when @status is NULL, when
 * the condition is True already (never reverted) or says the same already.
 */
static json_object *initially_body(const KbPodGroup *g, const char *type, const char *status,
                                   const char *reason, const char *message, gint64 now)
{
    if (status == NULL || g_strcmp0(g->scheduled_status, "True") == 0)
        return NULL;
    gboolean same_status = g_strcmp0(g->scheduled_status, status) == 0;
    if (same_status && g_strcmp0(g->scheduled_message, message) == 0)
        return NULL;
    json_object *c = condition_new(type, status, reason, message, now);
    /* metav1.Condition: the transition time moves only when the status does. */
    if (same_status && g->scheduled_since != NULL)
        json_object_object_add(c, "lastTransitionTime", json_object_new_string(g->scheduled_since));
    if (g->meta.generation > 0)
        json_object_object_add(c, "observedGeneration", json_object_new_int64(g->meta.generation));
    return kb_conditions_patch_new(c);
}

/*
 * @st's GangIncomplete condition on a native PodGroup (metav1.Condition: observedGeneration, a
 * transition time that moves only with the status): True with the stale pass's reason
 * (MemberLost, GangEvicted) and message while the gang is short; False, reason MembersHealthy,
 * once it is not, but only over a True (a gang never short has none). NULL when the group says
 * so already.
 */
static json_object *incomplete_condition(const KbJobStatus *st, gint64 now)
{
    const KbPodGroup *g = st->group;
    gboolean short_now = g_strcmp0(st->condition_type, KB_GANG_INCOMPLETE) == 0;
    const char *status = short_now ? "True" : "False";
    g_autofree char *message = NULL;
    if (short_now)
        message = g_strdup(st->message);
    else if (g_strcmp0(g->incomplete_status, "True") == 0)
        message = g_strdup_printf("no member lost (%u/%d pods bound)", st->n_bound, st->min_member);
    else
        return NULL;
    gboolean same_status = g_strcmp0(g->incomplete_status, status) == 0;
    if (same_status && (!short_now || g_strcmp0(g->incomplete_message, message) == 0))
        return NULL;
    json_object *c = condition_new(KB_GANG_INCOMPLETE, status,
                                   short_now ? st->reason : "MembersHealthy", message, now);
    if (same_status && g->incomplete_since != NULL)
        json_object_object_add(c, "lastTransitionTime",
                               json_object_new_string(g->incomplete_since));
    if (g->meta.generation > 0)
        json_object_object_add(c, "observedGeneration", json_object_new_int64(g->meta.generation));
    return c;
}

json_object *kb_status_native_group_body(const KbJobStatus *st, gint64 now)
{
    const char *status = NULL, *reason = NULL;
    g_autofree char *message = NULL;
    if (st->initially_scheduled) {
        status = "True";
        reason = "Scheduled";
        message = g_strdup_printf("%u/%d pods bound", st->n_bound, st->min_member);
    } else if (g_strcmp0(st->condition_type, "Unschedulable") == 0 && st->message != NULL) {
        status = "False";
        reason = "Unschedulable";
        message = g_strdup(st->message);
    }
    json_object *body = initially_body(st->group, KB_POD_GROUP_INITIALLY_SCHEDULED, status, reason,
                                       message, now);
    json_object *incomplete = incomplete_condition(st, now);
    if (incomplete == NULL)
        return body;
    if (body == NULL)
        return kb_conditions_patch_new(incomplete);
    /* Both in one strategic merge patch: the list merges on type. */
    json_object_array_add(
            json_object_object_get(json_object_object_get(body, "status"), "conditions"),
            incomplete);
    return body;
}

json_object *kb_status_composite_body(const KbJobStatus *st, gint64 now)
{
    const KbPodGroup *g = st->group;
    const char *status = NULL, *reason = NULL;
    g_autofree char *message = NULL;
    if (st->initially_scheduled) {
        status = "True";
        reason = "Scheduled";
        message = g_strdup_printf("%u/%d child PodGroups scheduled (%u pods bound)",
                                  st->n_children_scheduled, MAX(g->min_groups, 1), st->n_bound);
    } else if (g_strcmp0(st->condition_type, "Unschedulable") == 0 && st->message != NULL) {
        status = "False";
        reason = "Unschedulable";
        message = g_strdup(st->message);
    }
    return initially_body(g, KB_COMPOSITE_INITIALLY_SCHEDULED, status, reason, message, now);
}

json_object *kb_status_child_body(const KbJobStatus *st, const KbChildStatus *cs, gint64 now)
{
    const KbPodGroup *g = cs->group;
    const char *status = NULL, *reason = NULL;
    g_autofree char *message = NULL;
    if (cs->initially_scheduled) {
        status = "True";
        reason = "Scheduled";
        message = g_strdup_printf("%u/%d pods bound", cs->n_bound, MAX(g->min_member, 1));
    } else if (g_strcmp0(st->condition_type, "Unschedulable") == 0 && st->message != NULL) {
        /* the composite's shortfall names the children that fall short */
        status = "False";
        reason = "Unschedulable";
        message = g_strdup(st->message);
    } else if (st->initially_scheduled && cs->n_pods > 0) {
        status = "False";
        reason = "Unschedulable";
        message = g_strdup_printf(
                "CompositePodGroup \"%s\" started without it (%u/%d child PodGroups "
                "scheduled); its %d pods are placed together once they fit",
                st->group->meta.name, st->n_children_scheduled, MAX(st->group->min_groups, 1),
                MAX(g->min_member, 1));
    }
    return initially_body(g, KB_POD_GROUP_INITIALLY_SCHEDULED, status, reason, message, now);
}

gboolean kb_status_writer_native_error(KbStatusWriter *writer, json_object *group,
                                       const char *message, gint64 now)
{
    json_object *meta = json_object_object_get(group, "metadata");
    const char *ns = json_object_get_string(json_object_object_get(meta, "namespace"));
    const char *name = json_object_get_string(json_object_object_get(meta, "name"));
    json_object *conds =
            json_object_object_get(json_object_object_get(group, "status"), "conditions");
    if (name == NULL)
        return FALSE;
    for (size_t i = 0;
         json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *type = json_object_get_string(json_object_object_get(c, "type"));
        if (g_strcmp0(type, KB_POD_GROUP_INITIALLY_SCHEDULED) != 0)
            continue;
        const char *st = json_object_get_string(json_object_object_get(c, "status"));
        const char *msg = json_object_get_string(json_object_object_get(c, "message"));
        /* never reverted; and said once (our own write comes back as an update) */
        if (g_strcmp0(st, "True") == 0 || g_strcmp0(msg, message) == 0)
            return FALSE;
    }
    json_object *c = condition_new(KB_POD_GROUP_INITIALLY_SCHEDULED, "False", "SchedulerError",
                                   message, now);
    enqueue(writer, &kb_type_pod_groups_native, ns, name, KB_PATCH_STRATEGIC,
            kb_conditions_patch_new(c));
    return TRUE;
}

/* PodScheduled=False on a gang of one that cannot be placed (strategic merge keys on type). */
static json_object *pod_condition_body(const KbJobStatus *st, gint64 now)
{
    json_object *conds = json_object_new_array();
    json_object_array_add(
            conds, condition_new("PodScheduled", "False", "Unschedulable", st->message, now));
    json_object *status = json_object_new_object();
    json_object_object_add(status, "conditions", conds);
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", status);
    return body;
}

/* A composite's children: each one's condition when it differs from what was last queued. */
static void apply_children(KbStatusWriter *w, const KbJobStatus *st, gint64 now)
{
    for (guint i = 0; i < st->children->len; i++) {
        const KbChildStatus *cs = &g_array_index(st->children, KbChildStatus, i);
        const KbObjectMeta *m = &cs->group->meta;
        json_object *body = kb_status_child_body(st, cs, now);
        if (body == NULL)
            continue;
        json_object *c = json_object_array_get_idx(
                json_object_object_get(json_object_object_get(body, "status"), "conditions"), 0);
        g_autofree char *said = g_strdup_printf(
                "%s\n%s", json_object_get_string(json_object_object_get(c, "status")),
                json_object_get_string(json_object_object_get(c, "message")));
        const KbResourceType *type = native_type(cs->group);
        g_autofree char *key = g_strdup_printf("%s.%s|%s/%s", type->plural, type->group,
                                               m->namespace_ != NULL ? m->namespace_ : "", m->name);
        if (g_strcmp0(g_hash_table_lookup(w->child_last, key), said) == 0) {
            json_object_put(body);
            continue;
        }
        g_hash_table_replace(w->child_last, g_steal_pointer(&key), g_steal_pointer(&said));
        enqueue(w, type, m->namespace_, m->name, KB_PATCH_STRATEGIC, body);
    }
}

static void apply_job(KbStatusWriter *w, const KbJobStatus *st, gint64 now)
{
    if (st->group != NULL && st->group->composite) {
        const KbObjectMeta *m = &st->group->meta;
        json_object *body = st->changed ? kb_status_composite_body(st, now) : NULL;
        if (body != NULL)
            enqueue(w, native_type(st->group), m->namespace_, m->name, KB_PATCH_STRATEGIC, body);
        if (st->children != NULL)
            apply_children(w, st, now);
        return;
    }
    if (!st->changed)
        return;
    if (st->group != NULL && st->group->dialect == KB_PODGROUP_NATIVE) {
        const KbObjectMeta *m = &st->group->meta;
        json_object *body = kb_status_native_group_body(st, now);
        if (body != NULL)
            enqueue(w, native_type(st->group), m->namespace_, m->name, KB_PATCH_STRATEGIC, body);
    } else if (st->group != NULL) {
        const KbObjectMeta *m = &st->group->meta;
        enqueue(w, group_type(st->group->dialect), m->namespace_, m->name, KB_PATCH_MERGE,
                kb_status_pod_group_body(st, st->group->dialect, now));
    } else if (st->pod != NULL && g_strcmp0(st->condition_type, "Unschedulable") == 0 &&
               st->pod->node_name == NULL) {
        const KbObjectMeta *m = &st->pod->meta;
        enqueue(w, &kb_type_pods, m->namespace_, m->name, KB_PATCH_STRATEGIC,
                pod_condition_body(st, now));
    }
}

/* Every resource kube-batchd knows, zeros included: the status is a merge patch, where a
 * resource left out would keep its old value. */
static json_object *resource_list(const KbResources *r)
{
    json_object *map = json_object_new_object();
    for (int slot = 0; slot < kb_resource_count(); slot++) {
        const char *name = kb_resource_name(slot);
        if (name == NULL || r->v[slot] == KB_RESOURCE_UNLIMITED)
            continue;
        g_autofree char *value = kb_resource_format_value(slot, r->v[slot]);
        json_object_object_add(map, name, json_object_new_string(value));
    }
    return map;
}

/*
 * Hierarchical queues: Volcano's `allocated` map, per resource {deserved, allocated, pending}
 * under `resources` (every resource kube-batchd knows), the parent, and
 * a `Valid` condition while the queue tree is at fault (null clears it). No timestamps but the
 * fault's own, so that an unchanged queue gives the same text and is not written again.
 */
static void queue_resources(json_object *status, const KbQueueStatus *qs)
{
    json_object *res = json_object_new_object();
    for (int s = 0; s < kb_resource_count(); s++) {
        /* every resource, zeros included: a resource left out of the merge patch would keep
         * its old figures */
        if (kb_resource_name(s) == NULL)
            continue;
        json_object *r = json_object_new_object();
        g_autofree char *d = kb_resource_format_value(s, qs->deserved.v[s]);
        g_autofree char *a = kb_resource_format_value(s, qs->allocated.v[s]);
        g_autofree char *p = kb_resource_format_value(s, qs->pending.v[s]);
        json_object_object_add(r, "deserved", json_object_new_string(d));
        json_object_object_add(r, "allocated", json_object_new_string(a));
        json_object_object_add(r, "pending", json_object_new_string(p));
        json_object_object_add(res, kb_resource_name(s), r);
    }
    json_object_object_add(status, "resources", res);
    json_object_object_add(status, "allocated", resource_list(&qs->allocated));
    if (qs->parent != NULL)
        json_object_object_add(status, "parent", json_object_new_string(qs->parent));
    if (qs->fault_message == NULL) {
        json_object_object_add(status, "conditions", NULL);
        return;
    }
    json_object *conds = json_object_new_array();
    json_object_array_add(conds, condition_new("Valid", "False", qs->fault_reason,
                                               qs->fault_message, qs->fault_since));
    json_object_object_add(status, "conditions", conds);
}

static char *pruning_key(const KbResourceType *type, const char *member)
{
    return g_strdup_printf("%s.%s|%s", type->plural, type->group, member);
}

/*
 * Queue @body (consumed: {"status": {...}}) for queue @name of @type; the kb_queue_kept_members
 * that @type's server prunes go into a merge patch of the queue's annotations instead (a null
 * member, as `conditions` when the fault is gone, removes its annotation); the status patch is
 * left out when nothing else is in it.
 */
static void enqueue_queue(KbStatusWriter *w, const KbResourceType *type, const char *name,
                          json_object *body)
{
    json_object *status = json_object_object_get(body, "status");
    json_object *annotations = NULL;
    for (guint i = 0; status != NULL && i < KB_QUEUE_N_KEPT_MEMBERS; i++) {
        const KbQueueKeptMember *k = &kb_queue_kept_members[i];
        g_autofree char *key = pruning_key(type, k->member);
        json_object *v = NULL;
        if (!g_hash_table_contains(w->pruning, key) ||
            !json_object_object_get_ex(status, k->member, &v))
            continue;
        if (annotations == NULL)
            annotations = json_object_new_object();
        json_object_object_add(
                annotations, k->annotation,
                v == NULL ? NULL
                          : json_object_new_string(json_object_to_json_string_ext(
                                    v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
        json_object_object_del(status, k->member);
    }
    if (annotations != NULL) {
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "annotations", annotations);
        json_object *patch = json_object_new_object();
        json_object_object_add(patch, "metadata", meta);
        enqueue_at(w, type, NULL, name, NULL, KB_PATCH_MERGE, patch);
    }
    if (status != NULL && json_object_object_length(status) == 0) {
        json_object_put(body);
        return;
    }
    enqueue(w, type, NULL, name, KB_PATCH_MERGE, body);
}

/*
 * After a status write of @e succeeded with @answer (the object as stored): the
 * kb_queue_kept_members it wrote (not null) that the answer lacks were pruned by the server (a
 * CRD whose schema does not declare them, as Volcano's own Queue CRD): from now on they go into
 * the queue's annotations for @e's type, these ones included.
 */
static void check_pruned(KbStatusWriter *w, const Entry *e, json_object *answer)
{
    /* Only a queue's status carries them (PodGroup writes, the many, are not parsed again). */
    if (e->subresource == NULL || answer == NULL || strcmp(e->type->plural, "queues") != 0)
        return;
    /* An answer without a status is not the object (a real server returns it whole). */
    json_object *stored = json_object_object_get(answer, "status");
    if (stored == NULL || !json_object_is_type(stored, json_type_object))
        return;
    json_object *sent = json_tokener_parse(e->body);
    json_object *sent_status = json_object_object_get(sent, "status");
    json_object *moved = NULL;
    for (guint i = 0; i < KB_QUEUE_N_KEPT_MEMBERS; i++) {
        const KbQueueKeptMember *k = &kb_queue_kept_members[i];
        json_object *v = json_object_object_get(sent_status, k->member);
        if (v == NULL || json_object_object_get_ex(stored, k->member, NULL))
            continue;
        if (moved == NULL)
            moved = json_object_new_object();
        json_object_object_add(moved, k->member, json_object_get(v));
        char *key = pruning_key(e->type, k->member);
        if (g_hash_table_add(w->pruning, key))
            g_message("%s.%s: the API server dropped the status.%s written on queue %s (the "
                      "installed CRD's schema does not declare it, as Volcano's own Queue CRD "
                      "does not): kube-batchd keeps it in the queue's annotation %s from now on",
                      e->type->plural, e->type->group, k->member, e->name, k->annotation);
    }
    json_object_put(sent);
    if (moved == NULL)
        return;
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", moved);
    enqueue_queue(w, e->type, e->name, body);
}

/* {resource: decayed usage in resource-seconds} for @qs (cpu in core-seconds), rounded to whole
 * units (thousandths of a core-second) so that noise does not make a change. */
static json_object *usage_seconds(const KbQueueStatus *qs)
{
    json_object *map = json_object_new_object();
    for (guint i = 0; i < KB_QTREE_N_SLOTS; i++) {
        int slot = kb_qtree_slots[i];
        double v =
                kb_resource_is_milli(slot) ? round(qs->usage[slot]) / 1000 : round(qs->usage[slot]);
        json_object_object_add(map, kb_resource_name(slot), json_object_new_double(v));
    }
    return map;
}

/*
 * Add status.usage ({"time", "resourceSeconds"}) to @status when the decayed usage changed since
 * the last one queued for @key and that was KB_STATUS_USAGE_INTERVAL or more ago (the figures
 * decay every cycle: written every cycle they would flood the API server). TRUE when added.
 */
static gboolean queue_usage(KbStatusWriter *w, const char *key, json_object *status,
                            const KbQueueStatus *qs, gint64 now)
{
    if (qs->usage_time <= 0)
        return FALSE;
    UsageLast *last = g_hash_table_lookup(w->usage_last, key);
    if (last != NULL && now - last->at < KB_STATUS_USAGE_INTERVAL)
        return FALSE;
    json_object *res = usage_seconds(qs);
    const char *text = json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN);
    if (last != NULL && strcmp(last->text, text) == 0) {
        json_object_put(res);
        return FALSE;
    }
    if (last == NULL) {
        last = g_new0(UsageLast, 1);
        g_hash_table_replace(w->usage_last, g_strdup(key), last);
    }
    g_free(last->text);
    last->text = g_strdup(text);
    last->at = now;
    json_object *u = json_object_new_object();
    g_autofree char *t = kb_time_format(qs->usage_time);
    json_object_object_add(u, "time", json_object_new_string(t));
    json_object_object_add(u, "resourceSeconds", res);
    json_object_object_add(status, "usage", u);
    return TRUE;
}

/* {"time", "runtimeSeconds": {bucket: [seconds, oldest first]}} of @h, buckets without samples
 * left out (they never lose any). */
static json_object *history_json(const KbQueueHistory *h)
{
    json_object *buckets = json_object_new_object();
    for (int b = 0; b < KB_QUEUE_HISTORY_BUCKETS; b++) {
        if (h->n[b] == 0)
            continue;
        json_object *arr = json_object_new_array_ext(h->n[b]);
        for (guint i = 0; i < h->n[b]; i++)
            json_object_array_add(arr, json_object_new_int64(h->runtime[b][i]));
        json_object_object_add(buckets, kb_queue_history_buckets[b], arr);
    }
    json_object *o = json_object_new_object();
    g_autofree char *t = kb_time_format(h->time);
    json_object_object_add(o, "time", json_object_new_string(t));
    json_object_object_add(o, "runtimeSeconds", buckets);
    return o;
}

/* What waited for the interval, written without a cycle (none may come while nothing waits). */
static gboolean history_flush(gpointer data)
{
    HistoryLast *l = data;
    l->source = 0;
    if (l->pending == NULL)
        return G_SOURCE_REMOVE;
    json_object *status = json_object_new_object();
    json_object_object_add(status, "runtimeHistory", history_json(l->pending));
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", status);
    l->at = g_get_real_time() / G_USEC_PER_SEC;
    g_clear_pointer(&l->pending, g_free);
    enqueue_queue(l->writer, l->type, l->name, body);
    return G_SOURCE_REMOVE;
}

/*
 * Add status.runtimeHistory (history_json) to @status when the cycle reported newer samples for
 * @key (qs->history: only when they changed) and the last ones were queued
 * KB_STATUS_USAGE_INTERVAL or more ago; samples that come sooner wait, written by the next cycle
 * after the interval or by a timer at its end. TRUE when added.
 */
static gboolean queue_history(KbStatusWriter *w, const KbResourceType *type, const char *key,
                              json_object *status, const KbQueueStatus *qs, gint64 now)
{
    HistoryLast *last = g_hash_table_lookup(w->history_last, key);
    if (qs->history != NULL) {
        if (last == NULL) {
            last = g_new0(HistoryLast, 1);
            last->writer = w;
            last->name = g_strdup(qs->name);
            g_hash_table_replace(w->history_last, g_strdup(key), last);
        }
        last->type = type;
        g_free(last->pending);
        last->pending = g_memdup2(qs->history, sizeof *qs->history);
    }
    if (last == NULL || last->pending == NULL)
        return FALSE;
    gint64 wait = last->at > 0 ? KB_STATUS_USAGE_INTERVAL - (now - last->at) : 0;
    if (wait > 0) {
        if (last->source == 0)
            last->source = g_timeout_add_seconds((guint)wait, history_flush, last);
        return FALSE;
    }
    if (last->source != 0) {
        g_source_remove(last->source);
        last->source = 0;
    }
    json_object_object_add(status, "runtimeHistory", history_json(last->pending));
    last->at = now;
    g_clear_pointer(&last->pending, g_free);
    return TRUE;
}

static void apply_queue(KbStatusWriter *w, const KbQueueStatus *qs, gint64 now)
{
    const KbResourceType *type =
            w->queue_type != NULL ? w->queue_type(qs->name, w->queue_type_data) : NULL;
    if (qs->queue == NULL || type == NULL)
        return;
    json_object *status = json_object_new_object();
    json_object_object_add(status, "state",
                           json_object_new_string(qs->queue->open ? "Open" : "Closed"));
    json_object_object_add(status, "pending", json_object_new_int64(qs->n_pending));
    json_object_object_add(status, "inqueue", json_object_new_int64(qs->n_inqueue));
    json_object_object_add(status, "running", json_object_new_int64(qs->n_running));
    json_object_object_add(status, "unknown", json_object_new_int64(qs->n_unknown));
    json_object_object_add(status, "completed", json_object_new_int64(qs->n_completed));
    queue_resources(status, qs);
    /* The deserved share lives in `resources` alone; clear the top-level copy an older
     * kube-batchd wrote (a merge patch keeps what it does not name). */
    json_object_object_add(status, "deserved", NULL);
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", status);
    const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
    g_autofree char *key = g_strdup_printf("%s|%s", type->plural, qs->name);
    const char *last = g_hash_table_lookup(w->queue_last, key);
    gboolean same = last != NULL && strcmp(last, text) == 0;
    if (!same)
        g_hash_table_replace(w->queue_last, g_strdup(key), g_strdup(text));
    /* Usage and history are left out of the comparison: a merge patch without them keeps the
     * last written. */
    gboolean usage = queue_usage(w, key, status, qs, now);
    if (!queue_history(w, type, key, status, qs, now) && !usage && same) {
        json_object_put(body);
        return;
    }
    enqueue_queue(w, type, qs->name, body);
}

void kb_status_writer_apply(KbStatusWriter *writer, const KbCycleResult *result)
{
    for (guint i = 0; i < result->job_statuses->len; i++) {
        const KbJobStatus *st = &g_array_index(result->job_statuses, KbJobStatus, i);
        apply_job(writer, st, result->now);
    }
    for (guint i = 0; i < result->queue_statuses->len; i++)
        apply_queue(writer, &g_array_index(result->queue_statuses, KbQueueStatus, i), result->now);
    if (writer->recorder == NULL)
        return;
    for (guint i = 0; i < result->events->len; i++) {
        const KbSchedEvent *ev = &g_array_index(result->events, KbSchedEvent, i);
        kb_recorder_event(writer->recorder, ev->object, ev->api_version, ev->kind, ev->type,
                          ev->reason, "%s", ev->message != NULL ? ev->message : "");
    }
}
