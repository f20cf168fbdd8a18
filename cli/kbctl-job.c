/* One job explained (see kbctl-job.h). */
#include "cli/kbctl-job.h"

#include <string.h>

#include "cli/kbctl-out.h"

/* ---- shortage ------------------------------------------------------------------------------ */

static int cmp_gint64_desc(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static json_object *find_queue(const KbctlWorld *w, const char *name)
{
    for (guint i = 0; i < w->queues->len; i++) {
        json_object *q = g_ptr_array_index(w->queues, i);
        if (g_strcmp0(kbctl_json_str(q, "metadata.name"), name) == 0)
            return q;
    }
    return NULL;
}

void kbctl_job_short(const KbctlWorld *w, const KbctlJob *job, KbctlShort *s)
{
    memset(s, 0, sizeof *s);
    g_autoptr(GArray) need = g_array_new(FALSE, FALSE, sizeof(gint64));
    for (guint i = 0; i < job->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(job->pods, i);
        if (!kb_pod_is_terminated(p))
            s->job_gpus += kbctl_pod_gpus(p);
        if (p->node_name != NULL || kb_pod_is_terminated(p))
            continue;
        gint64 g = kbctl_pod_gpus(p);
        s->n_unbound++;
        s->need_gpus += g;
        s->pod_gpus_max = MAX(s->pod_gpus_max, g);
        g_array_append_val(need, g);
    }
    g_autoptr(GArray) free_gpus = g_array_new(FALSE, FALSE, sizeof(gint64));
    for (guint i = 0; i < w->nodes->len; i++) {
        const KbNode *n = g_ptr_array_index(w->nodes, i);
        if (!kbctl_node_ready(n) || kbctl_node_gpus(n) == 0)
            continue;
        gint64 f = MAX(kbctl_node_gpus(n) - kbctl_node_gpus_allocated(w, n), 0);
        s->cluster_gpus += kbctl_node_gpus(n);
        s->node_gpus_max = MAX(s->node_gpus_max, kbctl_node_gpus(n));
        s->free_total += f;
        s->free_largest = MAX(s->free_largest, f);
        g_array_append_val(free_gpus, f);
    }
    /* First fit, largest pod first: a rough answer to "how many of its pods would fit now". */
    g_array_sort(need, cmp_gint64_desc);
    for (guint i = 0; i < need->len; i++) {
        gint64 g = g_array_index(need, gint64, i);
        for (guint n = 0; n < free_gpus->len; n++) {
            if (g_array_index(free_gpus, gint64, n) >= g) {
                g_array_index(free_gpus, gint64, n) -= g;
                s->fit_pods++;
                break;
            }
        }
    }
    json_object *q = find_queue(w, job->queue);
    s->queue_capability = q != NULL ? kbctl_queue_gpus(q, "spec.capability") : -1;
    s->queue_deserved = q != NULL ? kbctl_queue_deserved_gpus(q) : -1;
    s->queue_allocated = q != NULL ? kbctl_queue_allocated_gpus(w, q) : 0;
    s->queue_weight = q != NULL ? kbctl_json_int(q, "spec.weight", 1) : 0;
    s->min_member = (gint32)kbctl_group_min_member(job->group, 0);
}

char *kbctl_free_per_node(const KbctlWorld *w, guint max, json_object *json)
{
    g_autoptr(GString) s = g_string_new(NULL);
    guint named = 0, full = 0, more = 0;
    for (guint i = 0; i < w->nodes->len; i++) {
        const KbNode *n = g_ptr_array_index(w->nodes, i);
        if (!kbctl_node_ready(n) || kbctl_node_gpus(n) == 0)
            continue;
        gint64 f = MAX(kbctl_node_gpus(n) - kbctl_node_gpus_allocated(w, n), 0);
        if (f == 0) {
            full++;
            continue;
        }
        if (json != NULL)
            kbctl_json_set_int(json, n->meta.name, f);
        if (named < max)
            g_string_append_printf(s, "%s%s %" G_GINT64_FORMAT, named > 0 ? ", " : "", n->meta.name,
                                   f);
        else
            more++;
        named++;
    }
    if (more > 0)
        g_string_append_printf(s, " and %u more nodes", more);
    if (named == 0)
        g_string_append(s, "none");
    if (full > 0)
        g_string_append_printf(s, " (%u GPU node%s full)", full, full > 1 ? "s" : "");
    return g_strdup(s->str);
}

typedef struct {
    char *key;
    gint64 gpus;
} Holder;

static int cmp_holders(gconstpointer a, gconstpointer b)
{
    const Holder *x = a, *y = b;
    if (x->gpus != y->gpus)
        return x->gpus < y->gpus ? 1 : -1;
    return g_strcmp0(x->key, y->key);
}

char *kbctl_gpu_holders(const KbctlWorld *w, const KbctlJob *job, guint max)
{
    g_autoptr(GHashTable) by = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autofree char *self = g_strdup_printf("%s/%s", job->tf->meta.namespace_, job->tf->meta.name);
    for (guint i = 0; i < w->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(w->pods, i);
        if (p->node_name == NULL || kb_pod_is_terminated(p) || kbctl_pod_gpus(p) == 0)
            continue;
        const char *jn = g_hash_table_lookup(p->meta.labels, KBCTL_LABEL_JOB_NAME);
        const char *owner = jn != NULL ? jn : p->group_name != NULL ? p->group_name : p->meta.name;
        char *key = g_strdup_printf("%s/%s", p->meta.namespace_, owner);
        if (strcmp(key, self) == 0) {
            g_free(key);
            continue;
        }
        gint64 *n = g_hash_table_lookup(by, key);
        if (n == NULL) {
            n = g_new0(gint64, 1);
            g_hash_table_insert(by, key, n);
        } else {
            g_free(key);
        }
        *n += kbctl_pod_gpus(p);
    }
    g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(Holder));
    GHashTableIter it;
    gpointer k, v;
    gint64 total = 0;
    g_hash_table_iter_init(&it, by);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        Holder h = {k, *(gint64 *)v};
        total += h.gpus;
        g_array_append_val(list, h);
    }
    if (list->len == 0)
        return g_strdup("");
    g_array_sort(list, cmp_holders);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%" G_GINT64_FORMAT " GPUs held by ", total);
    for (guint i = 0; i < list->len && i < max; i++) {
        Holder *h = &g_array_index(list, Holder, i);
        g_string_append_printf(s, "%s%s (%" G_GINT64_FORMAT ")", i > 0 ? ", " : "", h->key,
                               h->gpus);
    }
    if (list->len > max)
        g_string_append_printf(s, " and %u more jobs", list->len - max);
    return g_string_free(s, FALSE);
}

/* ---- events -------------------------------------------------------------------------------- */

static const char *event_time(json_object *ev)
{
    const char *t = kbctl_json_str(ev, "lastTimestamp");
    if (t == NULL)
        t = kbctl_json_str(ev, "eventTime");
    if (t == NULL)
        t = kbctl_json_str(ev, "firstTimestamp");
    if (t == NULL)
        t = kbctl_json_str(ev, "metadata.creationTimestamp");
    return t != NULL ? t : "";
}

static int cmp_events(gconstpointer a, gconstpointer b)
{
    /* RFC 3339 in UTC sorts as text; MicroTime has more digits but the same prefix. */
    return strcmp(event_time(*(json_object *const *)a), event_time(*(json_object *const *)b));
}

static gboolean event_about(const KbctlJob *job, json_object *ev)
{
    const char *ns = kbctl_json_str(ev, "involvedObject.namespace");
    const char *kind = kbctl_json_str(ev, "involvedObject.kind");
    const char *name = kbctl_json_str(ev, "involvedObject.name");
    const char *jn = job->tf->meta.name;
    if (g_strcmp0(ns, job->tf->meta.namespace_) != 0 || name == NULL || kind == NULL)
        return FALSE;
    if (strcmp(kind, "TFJob") == 0 || strcmp(kind, "PodGroup") == 0)
        return strcmp(name, jn) == 0;
    if (strcmp(kind, "Pod") != 0)
        return FALSE;
    for (guint i = 0; i < job->pods->len; i++)
        if (strcmp(((KbPod *)g_ptr_array_index(job->pods, i))->meta.name, name) == 0)
            return TRUE;
    /* A pod already gone (cleaned up, or recreated under the same name) still counts. */
    return g_str_has_prefix(name, jn) && name[strlen(jn)] == '-';
}

json_object *kbctl_job_events(const KbctlWorld *w, const KbctlJob *job, guint max)
{
    g_autoptr(GPtrArray) mine = g_ptr_array_new();
    for (size_t i = 0; w->events != NULL && i < json_object_array_length(w->events); i++) {
        json_object *ev = json_object_array_get_idx(w->events, i);
        if (event_about(job, ev))
            g_ptr_array_add(mine, ev);
    }
    g_ptr_array_sort(mine, cmp_events);
    json_object *out = json_object_new_array();
    for (guint i = mine->len > max ? mine->len - max : 0; i < mine->len; i++) {
        json_object *ev = g_ptr_array_index(mine, i);
        json_object *e = json_object_new_object();
        const char *kind = kbctl_json_str(ev, "involvedObject.kind");
        g_autofree char *lower = g_ascii_strdown(kind, -1);
        g_autofree char *obj =
                g_strdup_printf("%s/%s", lower, kbctl_json_str(ev, "involvedObject.name"));
        kbctl_json_set_str(e, "lastSeen", event_time(ev));
        kbctl_json_set_str(e, "type", kbctl_json_str(ev, "type"));
        kbctl_json_set_str(e, "reason", kbctl_json_str(ev, "reason"));
        kbctl_json_set_str(e, "object", obj);
        kbctl_json_set_str(e, "message", kbctl_json_str(ev, "message"));
        kbctl_json_set_int(e, "count", kbctl_json_int(ev, "count", 1));
        json_object_array_add(out, e);
    }
    return out;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static json_object *replicas_json(const KbctlWorld *w, const KbctlJob *job)
{
    json_object *arr = json_object_new_array();
    for (guint i = 0; i < job->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(job->pods, i);
        json_object *r = json_object_new_object();
        g_autofree char *replica = kbctl_pod_replica(p);
        kbctl_json_set_str(r, "replica", replica);
        kbctl_json_set_str(r, "pod", p->meta.name);
        kbctl_json_set_str(r, "status", kbctl_pod_status(p));
        kbctl_json_set_str(r, "node", p->node_name);
        kbctl_json_set_int(r, "gpus", kbctl_pod_gpus(p));
        kbctl_json_set_str(r, "gpuIds", kbctl_pod_gpu_ids(p));
        json_object *devs = json_object_new_array();
        GPtrArray *held = kbctl_dra_pod_devices(w->dra, p->meta.namespace_, p->meta.name);
        for (guint d = 0; held != NULL && d < held->len; d++)
            json_object_array_add(
                    devs,
                    json_object_new_string(((KbctlDraDevice *)g_ptr_array_index(held, d))->key));
        json_object_object_add(r, "devices", devs);
        kbctl_json_set_int(r, "restarts", kbctl_pod_restarts(p));
        kbctl_json_set_str(r, "startTime", kbctl_json_str(p->meta.raw, "status.startTime"));
        json_object_array_add(arr, r);
    }
    return arr;
}

static json_object *short_json(const KbctlWorld *w, const KbctlShort *s)
{
    json_object *o = json_object_new_object();
    json_object *per_node = json_object_new_object();
    g_free(kbctl_free_per_node(w, 0, per_node));
    json_object_object_add(o, "gpusFreePerNode", per_node);
    kbctl_json_set_int(o, "unplacedPods", s->n_unbound);
    kbctl_json_set_int(o, "gpusNeeded", s->need_gpus);
    kbctl_json_set_int(o, "gpusFree", s->free_total);
    kbctl_json_set_int(o, "gpusFreeLargestNode", s->free_largest);
    kbctl_json_set_int(o, "podsThatFitNow", s->fit_pods);
    kbctl_json_set_int(o, "gpusShort", MAX(s->need_gpus - s->free_total, 0));
    kbctl_json_set_int(o, "clusterGpus", s->cluster_gpus);
    kbctl_json_set_int(o, "largestNodeGpus", s->node_gpus_max);
    json_object *q = json_object_new_object();
    kbctl_json_set_int(q, "weight", s->queue_weight);
    kbctl_json_set_int(q, "capabilityGpus", s->queue_capability);
    kbctl_json_set_int(q, "deservedGpus", s->queue_deserved);
    kbctl_json_set_int(q, "allocatedGpus", s->queue_allocated);
    json_object_object_add(o, "queue", q);
    return o;
}

static json_object *group_json(const KbctlJob *job)
{
    if (job->group == NULL)
        return NULL;
    json_object *g = json_object_new_object();
    kbctl_json_set_str(g, "name", kbctl_json_str(job->group, "metadata.name"));
    kbctl_json_set_str(g, "phase", kbctl_json_str(job->group, "status.phase"));
    kbctl_json_set_int(g, "minMember", kbctl_group_min_member(job->group, 1));
    json_object *conds = kbctl_json_get(job->group, "status.conditions");
    if (conds != NULL)
        json_object_object_add(g, "conditions", json_object_get(conds));
    return g;
}

json_object *kbctl_job_json(const KbctlWorld *w, const KbctlJob *job, gboolean detail)
{
    const KbObjectMeta *m = &job->tf->meta;
    json_object *o = json_object_new_object();
    kbctl_json_set_str(o, "name", m->name);
    kbctl_json_set_str(o, "namespace", m->namespace_);
    kbctl_json_set_str(o, "status", job->status);
    kbctl_json_set_str(o, "trainer", "tfjob");
    kbctl_json_set_str(o, "apiVersion", kb_tf_api_version(job->tf->api));
    kbctl_json_set_str(o, "created", kbctl_json_str(job->raw, "metadata.creationTimestamp"));
    if (job->start_time > 0) {
        g_autofree char *t = kb_time_format(job->start_time);
        kbctl_json_set_str(o, "started", t);
    }
    kbctl_json_set_int(o, "gpusRequested", job->gpus_requested);
    kbctl_json_set_int(o, "gpusAllocated", job->gpus_allocated);
    kbctl_json_set_str(o, "queue", job->queue);
    kbctl_json_set_str(o, "priorityClass", job->tf->priority_class);
    json_object *nodes = json_object_new_array();
    for (guint i = 0; i < job->nodes->len; i++)
        json_object_array_add(nodes, json_object_new_string(g_ptr_array_index(job->nodes, i)));
    json_object_object_add(o, "nodes", nodes);
    if (!detail)
        return o;
    json_object_object_add(o, "replicas", replicas_json(w, job));
    json_object *g = group_json(job);
    if (g != NULL)
        json_object_object_add(o, "podGroup", g);
    if (job->wait_reason != NULL || strcmp(job->status, "Pending") == 0 ||
        strcmp(job->status, "Waiting") == 0) {
        json_object *wt = json_object_new_object();
        KbctlShort s;
        kbctl_job_short(w, job, &s);
        kbctl_json_set_str(wt, "reason", job->wait_reason);
        kbctl_json_set_str(wt, "message", job->wait_message);
        json_object_object_add(wt, "short", short_json(w, &s));
        json_object_object_add(o, "waiting", wt);
    }
    g_autofree char *why = kbctl_job_why(w, job);
    kbctl_json_set_str(o, "why", why);
    json_object_object_add(o, "events", kbctl_job_events(w, job, KBCTL_MAX_EVENTS));
    return o;
}

/* ---- why ----------------------------------------------------------------------------------- */

static char *join_nodes(const KbctlJob *job)
{
    g_autoptr(GString) s = g_string_new(NULL);
    for (guint i = 0; i < job->nodes->len; i++)
        g_string_append_printf(s, "%s%s",
                               i == 0                     ? ""
                               : i + 1 == job->nodes->len ? " and "
                                                          : ", ",
                               (char *)g_ptr_array_index(job->nodes, i));
    return g_strdup(s->str);
}

static const char *tf_message(const KbctlJob *job, KbTfConditionType type)
{
    const KbTfCondition *c = &job->tf->status.conditions[type];
    return c->present && c->message != NULL ? c->message : NULL;
}

static void why_finished(GString *s, const KbctlWorld *w, const KbctlJob *job)
{
    gboolean ok = strcmp(job->status, "Succeeded") == 0;
    const char *msg = tf_message(job, ok ? KB_TF_COND_SUCCEEDED : KB_TF_COND_FAILED);
    g_string_append_printf(s, "It %s", ok ? "succeeded" : "failed");
    if (msg != NULL) {
        size_t n = strlen(msg);
        g_string_append_printf(s, ": %.*s", (int)(n > 0 && msg[n - 1] == '.' ? n - 1 : n), msg);
    }
    gint64 end = job->tf->status.completion_time;
    if (end > 0 && job->start_time > 0) {
        g_autofree char *d = kbctl_duration(end - job->start_time);
        g_string_append_printf(s, " (ran %s)", d);
    }
    g_string_append(s, ". Nothing waits: its GPUs are free again.");
}

static void why_waiting(GString *s, const KbctlWorld *w, const KbctlJob *job)
{
    KbctlShort sh;
    kbctl_job_short(w, job, &sh);
    const char *phase = kbctl_json_str(job->group, "status.phase");
    if (job->wait_reason != NULL)
        g_string_append_printf(s, "It waits: kube-batchd says %s: \"%s\" (PodGroup phase %s). ",
                               job->wait_reason, job->wait_message != NULL ? job->wait_message : "",
                               phase != NULL ? phase : "unknown");
    else
        g_string_append_printf(s, "It waits for kube-batchd to place it (PodGroup phase %s). ",
                               phase != NULL ? phase : "not set yet");
    if (sh.n_unbound == 0) {
        g_string_append(s, "Its pods are not created yet.");
        return;
    }
    g_string_append_printf(s,
                           "It needs %" G_GINT64_FORMAT " GPUs at once for its %u unplaced pods "
                           "(up to %" G_GINT64_FORMAT " per pod",
                           sh.need_gpus, sh.n_unbound, sh.pod_gpus_max);
    if (sh.min_member > 0)
        g_string_append_printf(s, "; a gang of at least %d", sh.min_member);
    g_string_append_printf(s,
                           "); the cluster has %" G_GINT64_FORMAT
                           " free GPUs (at most %" G_GINT64_FORMAT
                           " on one node), enough for %u of them. ",
                           sh.free_total, sh.free_largest, sh.fit_pods);
    if (sh.queue_capability >= 0)
        g_string_append_printf(
                s, "Queue %s caps GPUs at %" G_GINT64_FORMAT " and holds %" G_GINT64_FORMAT ". ",
                job->queue, sh.queue_capability, sh.queue_allocated);
    if (sh.queue_deserved >= 0)
        g_string_append_printf(
                s, "Queue %s deserves %" G_GINT64_FORMAT " GPUs and holds %" G_GINT64_FORMAT ". ",
                job->queue, sh.queue_deserved, sh.queue_allocated);
    g_autofree char *holders = kbctl_gpu_holders(w, job, 3);
    if (sh.pod_gpus_max > sh.node_gpus_max)
        g_string_append_printf(s,
                               "It can never start as it is: a pod asks %" G_GINT64_FORMAT
                               " GPUs and no Ready node has more than %" G_GINT64_FORMAT
                               "; submit it with fewer GPUs per worker.",
                               sh.pod_gpus_max, sh.node_gpus_max);
    else if (sh.job_gpus > sh.cluster_gpus)
        g_string_append_printf(s,
                               "It can never start as it is: it needs %" G_GINT64_FORMAT
                               " GPUs at once and the cluster has %" G_GINT64_FORMAT
                               " in all; submit it with fewer workers or GPUs per worker.",
                               sh.job_gpus, sh.cluster_gpus);
    else if (sh.queue_capability >= 0 && sh.job_gpus > sh.queue_capability)
        g_string_append_printf(s,
                               "It can never start as it is: it needs %" G_GINT64_FORMAT
                               " GPUs and queue %s is capped at %" G_GINT64_FORMAT
                               "; raise the queue's capability or use fewer GPUs.",
                               sh.job_gpus, job->queue, sh.queue_capability);
    else if (sh.queue_capability >= 0 && sh.queue_allocated + sh.need_gpus > sh.queue_capability)
        g_string_append_printf(s,
                               "It starts when its queue holds at most %" G_GINT64_FORMAT
                               " GPUs (other jobs of queue %s finish), or when the queue's "
                               "capability is raised.",
                               MAX(sh.queue_capability - sh.need_gpus, 0), job->queue);
    else if (sh.fit_pods < sh.n_unbound && sh.need_gpus > sh.free_total)
        g_string_append_printf(s,
                               "It starts when %" G_GINT64_FORMAT
                               " more GPUs are free on nodes that can take whole pods%s%s.",
                               sh.need_gpus - sh.free_total, holders[0] != '\0' ? ": " : "",
                               holders);
    else if (sh.fit_pods < sh.n_unbound)
        g_string_append_printf(s,
                               "Enough GPUs are free but spread over nodes: it starts when "
                               "nodes have room for whole pods (%" G_GINT64_FORMAT
                               " GPUs each)%s%s.",
                               sh.pod_gpus_max, holders[0] != '\0' ? "; " : "", holders);
    else
        g_string_append(s, "Its pods fit the free GPUs now: it should start at kube-batchd's next "
                           "cycle (unless its queue is over its share, see kbctl queue list).");
}

char *kbctl_job_why(const KbctlWorld *w, const KbctlJob *job)
{
    const KbObjectMeta *m = &job->tf->meta;
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "Job %s/%s is %s. ", m->namespace_, m->name, job->status);
    if (strcmp(job->status, "Succeeded") == 0 || strcmp(job->status, "Failed") == 0) {
        why_finished(s, w, job);
    } else if (job->tf->invalid != NULL) {
        g_string_append_printf(s, "It is invalid and will not run: %s.", job->tf->invalid);
    } else if (job->group == NULL && job->pods->len == 0) {
        g_string_append(s, "It has no PodGroup and no pods yet: tf-operator creates them. Is "
                           "tf-operator running and watching this namespace?");
    } else if (job->incomplete_reason != NULL) {
        /* A bound gang short of members: kube-batchd evicts the rest after a grace. */
        g_string_append_printf(s,
                               "Its gang is incomplete (%s): %s. kube-batchd evicts a gang left "
                               "short past its grace so that tf-operator restarts it whole.",
                               job->incomplete_reason,
                               job->incomplete_message != NULL ? job->incomplete_message : "");
    } else if (strcmp(job->status, "Waiting") == 0 || strcmp(job->status, "Pending") == 0) {
        why_waiting(s, w, job);
        if (job->wait_reason == NULL && job->pods->len > 0) {
            const KbPod *p = g_ptr_array_index(job->pods, 0);
            g_string_append_printf(s,
                                   " If nothing changes, check that kube-batchd runs and serves "
                                   "the scheduler name its pods ask for (%s).",
                                   p->scheduler_name);
        }
    } else {
        g_autofree char *state = g_ascii_strdown(job->status, -1);
        g_autofree char *nodes = join_nodes(job);
        g_string_append_printf(s,
                               "It is %s: its %u pods are placed on %s and hold %" G_GINT64_FORMAT
                               " GPUs; nothing waits.",
                               state, job->pods->len, nodes[0] != '\0' ? nodes : "no node",
                               job->gpus_allocated);
        if (job->borrowed_note != NULL)
            g_string_append_printf(s, " It runs %s.", job->borrowed_note);
    }
    return g_string_free(s, FALSE);
}
