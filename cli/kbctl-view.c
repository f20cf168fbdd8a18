/* kbctl's joined view of jobs, groups, pods, nodes, queues and events (see kbctl-view.h). */
#include "cli/kbctl-view.h"

#include <stdlib.h>
#include <string.h>

#include "cli/kbctl-out.h"
#include "kube/kb-quantity.h"

/* ---- loading ------------------------------------------------------------------------------- */

/* The items of a list (new reference); NULL without error when the API is not served (404). */
static json_object *list_items(KbClient *c, const KbResourceType *type, const char *ns,
                               const char *selector, GError **error)
{
    KbListOptions opts = {.label_selector = selector};
    GError *local = NULL;
    g_autoptr(KbctlJson) list = kb_client_list(c, type, ns, &opts, &local);
    if (list == NULL) {
        if (g_error_matches(local, KB_ERROR, KB_ERROR_NOT_FOUND)) {
            g_error_free(local);
            return NULL;
        }
        g_propagate_error(error, local);
        return NULL;
    }
    json_object *items = kbctl_json_get(list, "items");
    return json_object_is_type(items, json_type_array) ? json_object_get(items)
                                                       : json_object_new_array();
}

static void json_put(gpointer p)
{
    json_object_put(p);
}

static void job_free(gpointer p)
{
    KbctlJob *j = p;
    kb_tfjob_free(j->tf);
    json_object_put(j->raw);
    g_ptr_array_unref(j->pods);
    g_ptr_array_unref(j->nodes);
    g_free(j->queue);
    g_free(j);
}

void kbctl_world_free(KbctlWorld *w)
{
    if (w == NULL)
        return;
    g_ptr_array_unref(w->jobs);
    g_ptr_array_unref(w->pods);
    g_ptr_array_unref(w->nodes);
    g_ptr_array_unref(w->queues);
    g_hash_table_unref(w->groups);
    g_hash_table_unref(w->native_groups);
    json_object_put(w->events);
    kbctl_dra_free(w->dra);
    g_free(w);
}

const KbctlJob *kbctl_world_job(const KbctlWorld *w, const char *namespace_, const char *name,
                                GError **error)
{
    if (w->jobs->len == 0) {
        g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED, "tfjob %s/%s: could not be decoded",
                    namespace_, name);
        return NULL;
    }
    return g_ptr_array_index(w->jobs, 0);
}

static char *key_of(const char *ns, const char *name)
{
    return g_strdup_printf("%s/%s", ns != NULL ? ns : "", name);
}

static int type_rank(const char *type)
{
    static const char *const order[] = {"chief", "master", "ps", "worker", "evaluator", NULL};
    for (int i = 0; order[i] != NULL; i++)
        if (g_strcmp0(type, order[i]) == 0)
            return i;
    return 5;
}

static int cmp_pods(gconstpointer a, gconstpointer b)
{
    const KbPod *pa = *(KbPod *const *)a, *pb = *(KbPod *const *)b;
    const char *ta = g_hash_table_lookup(pa->meta.labels, KBCTL_LABEL_REPLICA_TYPE);
    const char *tb = g_hash_table_lookup(pb->meta.labels, KBCTL_LABEL_REPLICA_TYPE);
    int r = type_rank(ta) - type_rank(tb);
    if (r != 0)
        return r;
    const char *ia = g_hash_table_lookup(pa->meta.labels, KBCTL_LABEL_REPLICA_INDEX);
    const char *ib = g_hash_table_lookup(pb->meta.labels, KBCTL_LABEL_REPLICA_INDEX);
    gint64 na = ia != NULL ? g_ascii_strtoll(ia, NULL, 10) : 0;
    gint64 nb = ib != NULL ? g_ascii_strtoll(ib, NULL, 10) : 0;
    if (na != nb)
        return na < nb ? -1 : 1;
    return g_strcmp0(pa->meta.name, pb->meta.name);
}

static int cmp_jobs(gconstpointer a, gconstpointer b)
{
    const KbctlJob *ja = *(KbctlJob *const *)a, *jb = *(KbctlJob *const *)b;
    int r = g_strcmp0(ja->tf->meta.namespace_, jb->tf->meta.namespace_);
    return r != 0 ? r : g_strcmp0(ja->tf->meta.name, jb->tf->meta.name);
}

static int cmp_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

static int cmp_nodes(gconstpointer a, gconstpointer b)
{
    return g_strcmp0((*(KbNode *const *)a)->meta.name, (*(KbNode *const *)b)->meta.name);
}

static int cmp_named_json(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(kbctl_json_str(*(json_object *const *)a, "metadata.name"),
                     kbctl_json_str(*(json_object *const *)b, "metadata.name"));
}

static gboolean load_pods(KbctlWorld *w, KbClient *c, const char *job, guint what, GError **error)
{
    g_autofree char *selector = job != NULL ? g_strdup_printf("%s=%s", KBCTL_LABEL_JOB_NAME, job)
                                            : g_strdup(KBCTL_LABEL_JOB_NAME);
    gboolean all = (what & KBCTL_LOAD_ALL_PODS) != 0;
    GError *local = NULL;
    g_autoptr(KbctlJson) items =
            list_items(c, &kb_type_pods, all ? NULL : w->namespace_, all ? NULL : selector, &local);
    if (local != NULL) {
        g_propagate_prefixed_error(error, local, "listing pods: ");
        return FALSE;
    }
    for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
        g_autoptr(GError) err = NULL;
        KbPod *pod = kb_pod_decode(json_object_array_get_idx(items, i), TRUE, &err);
        if (pod == NULL)
            g_printerr("kbctl: warning: skipping a pod: %s\n", err->message);
        else
            g_ptr_array_add(w->pods, pod);
    }
    return TRUE;
}

static gboolean load_nodes(KbctlWorld *w, KbClient *c, GError **error)
{
    GError *local = NULL;
    g_autoptr(KbctlJson) items = list_items(c, &kb_type_nodes, NULL, NULL, &local);
    if (local != NULL) {
        g_propagate_prefixed_error(error, local, "listing nodes: ");
        return FALSE;
    }
    for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
        g_autoptr(GError) err = NULL;
        KbNode *node = kb_node_decode(json_object_array_get_idx(items, i), TRUE, &err);
        if (node == NULL)
            g_printerr("kbctl: warning: skipping a node: %s\n", err->message);
        else
            g_ptr_array_add(w->nodes, node);
    }
    g_ptr_array_sort(w->nodes, cmp_nodes);
    return TRUE;
}

/* Where the Queue's CRD prunes kube-batchd's status members (Volcano's own CRD), kube-batchd keeps
 * them in annotations (kb_queue_kept_members): each is shown as its status member when the status
 * has none. An annotation that is not JSON of the member's kind is left out. */
static void kept_from_annotations(json_object *q)
{
    json_object *meta = json_object_object_get(q, "metadata");
    json_object *ann = json_object_object_get(meta, "annotations");
    json_object *status = json_object_object_get(q, "status");
    for (guint i = 0; i < KB_QUEUE_N_KEPT_MEMBERS; i++) {
        const KbQueueKeptMember *k = &kb_queue_kept_members[i];
        const char *text = json_object_get_string(json_object_object_get(ann, k->annotation));
        if (text == NULL || json_object_object_get_ex(status, k->member, NULL))
            continue;
        json_object *value = json_tokener_parse(text);
        gboolean list = strcmp(k->member, "conditions") == 0;
        if (value == NULL ||
            !json_object_is_type(value, list ? json_type_array : json_type_object)) {
            json_object_put(value);
            continue;
        }
        if (status == NULL || !json_object_is_type(status, json_type_object)) {
            status = json_object_new_object();
            json_object_object_add(q, "status", status);
        }
        json_object_object_add(status, k->member, value);
    }
}

static gboolean load_queues(KbctlWorld *w, KbClient *c, GError **error)
{
    const KbResourceType *types[] = {&kb_type_queues_volcano, &kb_type_queues_kube_batch};
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint t = 0; t < G_N_ELEMENTS(types); t++) {
        GError *local = NULL;
        g_autoptr(KbctlJson) items = list_items(c, types[t], NULL, NULL, &local);
        if (local != NULL) {
            g_propagate_prefixed_error(error, local, "listing queues: ");
            return FALSE;
        }
        for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
            json_object *q = json_object_array_get_idx(items, i);
            const char *name = kbctl_json_str(q, "metadata.name");
            if (name == NULL || g_hash_table_contains(seen, name))
                continue;
            g_hash_table_add(seen, (gpointer)name);
            kept_from_annotations(q);
            g_ptr_array_add(w->queues, json_object_get(q));
        }
    }
    g_ptr_array_sort(w->queues, cmp_named_json);
    return TRUE;
}

/* PodGroups of @type into @into ("ns/name" -> object). A server that does not serve @type
 * (404) gives none; so does one that forbids listing it when @optional (a user's RBAC may not
 * reach Kubernetes' own PodGroups: kbctl still shows the rest). */
static gboolean load_group_type(KbctlWorld *w, KbClient *c, const KbResourceType *type,
                                gboolean optional, GHashTable *into, GError **error)
{
    GError *local = NULL;
    g_autoptr(KbctlJson) items = list_items(c, type, w->namespace_, NULL, &local);
    if (local != NULL && optional && g_error_matches(local, KB_ERROR, KB_ERROR_FORBIDDEN)) {
        g_error_free(local);
        return TRUE;
    }
    if (local != NULL) {
        g_propagate_prefixed_error(error, local, "listing %s.%s: ", type->plural, type->group);
        return FALSE;
    }
    for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
        json_object *g = json_object_array_get_idx(items, i);
        const char *name = kbctl_json_str(g, "metadata.name");
        if (name != NULL)
            g_hash_table_replace(into, key_of(kbctl_json_str(g, "metadata.namespace"), name),
                                 json_object_get(g));
    }
    return TRUE;
}

static gboolean load_groups(KbctlWorld *w, KbClient *c, GError **error)
{
    return load_group_type(w, c, &kb_type_pod_groups_volcano, FALSE, w->groups, error) &&
           load_group_type(w, c, &kb_type_pod_groups_native, TRUE, w->native_groups, error);
}

/* The TFJobs in scope (new array reference); KBCTL_ERROR_NOT_FOUND names a missing @job. */
static json_object *load_tfjobs(KbClient *c, const char *ns, const char *job, GError **error)
{
    GError *local = NULL;
    if (job != NULL) {
        json_object *one = kb_client_get(c, &kb_type_tfjobs_v1, ns, job, &local);
        if (one == NULL && g_error_matches(local, KB_ERROR, KB_ERROR_NOT_FOUND)) {
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_NOT_FOUND,
                        "tfjob %s/%s: not found (kbctl list -n %s shows the jobs there)", ns, job,
                        ns);
            g_error_free(local);
            return NULL;
        }
        if (one == NULL) {
            g_propagate_prefixed_error(error, local, "tfjob %s/%s: ", ns, job);
            return NULL;
        }
        json_object *arr = json_object_new_array();
        json_object_array_add(arr, one);
        return arr;
    }
    json_object *items = list_items(c, &kb_type_tfjobs_v1, ns, NULL, &local);
    if (local != NULL) {
        g_propagate_prefixed_error(error, local, "listing tfjobs: ");
        return NULL;
    }
    if (items == NULL)
        g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED,
                    "%s does not serve tfjobs.kubeflow.org/v1: install the CRD "
                    "(kubectl apply -f deploy/base/crds/tfjob.yaml)",
                    kb_client_server(c));
    return items;
}

static void job_compute(KbctlWorld *w, KbctlJob *j);

KbctlWorld *kbctl_world_load(KbClient *client, const char *namespace_, const char *job, guint what,
                             gint64 now, GError **error)
{
    g_autoptr(KbctlWorld) w = g_new0(KbctlWorld, 1);
    w->now = now;
    w->namespace_ = namespace_;
    w->jobs = g_ptr_array_new_with_free_func(job_free);
    w->pods = g_ptr_array_new_with_free_func(kb_object_unref);
    w->nodes = g_ptr_array_new_with_free_func(kb_object_unref);
    w->queues = g_ptr_array_new_with_free_func(json_put);
    w->groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, json_put);
    w->native_groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, json_put);
    g_autoptr(KbctlJson) tfjobs = (what & KBCTL_LOAD_NO_JOBS)
                                          ? json_object_new_array()
                                          : load_tfjobs(client, namespace_, job, error);
    if (tfjobs == NULL)
        return NULL;
    if (!load_groups(w, client, error) || !load_pods(w, client, job, what, error))
        return NULL;
    if ((what & KBCTL_LOAD_NODES) && !load_nodes(w, client, error))
        return NULL;
    if ((what & KBCTL_LOAD_QUEUES) && !load_queues(w, client, error))
        return NULL;
    if (what & KBCTL_LOAD_DRA) {
        /* a job's claims live in its namespace; node views need every claim */
        gboolean every = job == NULL && (what & KBCTL_LOAD_ALL_PODS);
        w->dra = kbctl_dra_load(client, every ? NULL : namespace_, error);
        if (w->dra == NULL)
            return NULL;
    }
    if (what & KBCTL_LOAD_EVENTS) {
        GError *local = NULL;
        w->events = list_items(client, &kb_type_events, namespace_, NULL, &local);
        if (local != NULL) {
            g_propagate_prefixed_error(error, local, "listing events: ");
            return NULL;
        }
    }
    for (size_t i = 0; i < json_object_array_length(tfjobs); i++) {
        json_object *item = json_object_array_get_idx(tfjobs, i);
        g_autoptr(GError) err = NULL;
        KbTfJob *tf = kb_tfjob_decode(item, FALSE, &err);
        if (tf == NULL) {
            g_printerr("kbctl: warning: skipping a tfjob: %s\n", err->message);
            continue;
        }
        KbctlJob *j = g_new0(KbctlJob, 1);
        j->tf = tf;
        j->raw = json_object_get(item);
        j->pods = g_ptr_array_new();
        j->nodes = g_ptr_array_new_with_free_func(g_free);
        job_compute(w, j);
        g_ptr_array_add(w->jobs, j);
    }
    g_ptr_array_sort(w->jobs, cmp_jobs);
    return g_steal_pointer(&w);
}

/* ---- pods and nodes ------------------------------------------------------------------------ */

char *kbctl_pod_replica(const KbPod *pod)
{
    const char *type = g_hash_table_lookup(pod->meta.labels, KBCTL_LABEL_REPLICA_TYPE);
    const char *index = g_hash_table_lookup(pod->meta.labels, KBCTL_LABEL_REPLICA_INDEX);
    if (type == NULL || index == NULL)
        return g_strdup(pod->meta.name);
    return g_strdup_printf("%s-%s", type, index);
}

gint64 kbctl_pod_gpus(const KbPod *pod)
{
    return kb_resource_whole_gpus(pod->requests.v[KB_RES_GPU]);
}

const char *kbctl_pod_gpu_ids(const KbPod *pod)
{
    return g_hash_table_lookup(pod->meta.annotations, KBCTL_ANNOTATION_GPU_IDS);
}

const char *kbctl_pod_status(const KbPod *pod)
{
    if (pod->meta.deletion_timestamp != 0)
        return "Terminating";
    switch (pod->phase) {
    case KB_POD_RUNNING:
        return "Running";
    case KB_POD_SUCCEEDED:
        return "Succeeded";
    case KB_POD_FAILED:
        return "Failed";
    case KB_POD_UNKNOWN:
        return "Unknown";
    case KB_POD_PENDING:
    default:
        return pod->node_name != NULL ? "Starting" : "Pending";
    }
}

gint kbctl_pod_restarts(const KbPod *pod)
{
    gint n = 0;
    for (guint i = 0; i < pod->n_container_statuses; i++)
        n += pod->container_statuses[i].restart_count;
    return n;
}

/* Does @pod hold node resources: bound and not finished. */
static gboolean pod_holds(const KbPod *pod)
{
    return pod->node_name != NULL && !kb_pod_is_terminated(pod);
}

gint64 kbctl_node_gpus(const KbNode *node)
{
    return node->allocatable.v[KB_RES_GPU] / KB_GPU_MILLI;
}

gint64 kbctl_node_gpus_allocated(const KbctlWorld *w, const KbNode *node)
{
    gint64 n = 0;
    for (guint i = 0; i < w->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(w->pods, i);
        if (pod_holds(p) && g_strcmp0(p->node_name, node->meta.name) == 0)
            n += kbctl_pod_gpus(p);
    }
    return n;
}

gboolean kbctl_node_ready(const KbNode *node)
{
    return node->ready && !node->unschedulable;
}

/* ---- jobs ---------------------------------------------------------------------------------- */

static gboolean tf_condition(const KbctlJob *j, KbTfConditionType type)
{
    const KbTfCondition *c = &j->tf->status.conditions[type];
    return c->present && c->status;
}

/* The last true condition among those given, by position in status.conditions. */
static gboolean tf_last_is(const KbctlJob *j, KbTfConditionType type)
{
    guint best = 0;
    int which = -1;
    for (int t = 0; t < KB_TF_N_CONDS; t++) {
        const KbTfCondition *c = &j->tf->status.conditions[t];
        if (c->present && c->status && (which == -1 || c->seq >= best)) {
            best = c->seq;
            which = t;
        }
    }
    return which == (int)type;
}

static const char *job_status(const KbctlJob *j)
{
    const char *state = kbctl_json_str(j->raw, "status.state"); /* v1alpha1 */
    if (tf_condition(j, KB_TF_COND_SUCCEEDED) || g_strcmp0(state, "Succeeded") == 0)
        return "Succeeded";
    if (tf_condition(j, KB_TF_COND_FAILED) || g_strcmp0(state, "Failed") == 0)
        return "Failed";
    guint unbound = 0, running = 0, holding = 0;
    for (guint i = 0; i < j->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(j->pods, i);
        if (kb_pod_is_terminated(p))
            continue;
        if (p->node_name == NULL)
            unbound++;
        else
            holding++;
        if (p->phase == KB_POD_RUNNING)
            running++;
    }
    if (j->pods->len == 0 || unbound > 0)
        return j->wait_reason != NULL ? "Waiting" : "Pending";
    if (tf_last_is(j, KB_TF_COND_RESTARTING))
        return "Restarting";
    if (running > 0 || holding == 0)
        return "Running";
    return "Starting";
}

/* The group's Unschedulable and GangIncomplete conditions (status True), if any; on Kubernetes'
 * own PodGroup, PodGroupInitiallyScheduled False says why it waits (reason Unschedulable, or
 * SchedulerError); Scheduled's note that the job runs on borrowed GPUs. */
static void group_wait(KbctlJob *j)
{
    json_object *conds = kbctl_json_get(j->group, "status.conditions");
    for (size_t i = 0;
         json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kbctl_json_str(c, "type"), KB_GANG_INCOMPLETE) == 0 &&
            g_strcmp0(kbctl_json_str(c, "status"), "True") == 0) {
            j->incomplete_reason = kbctl_json_str(c, "reason");
            j->incomplete_message = kbctl_json_str(c, "message");
            if (j->incomplete_reason == NULL)
                j->incomplete_reason = KB_GANG_INCOMPLETE;
        }
        const char *msg = kbctl_json_str(c, "message");
        if (g_strcmp0(kbctl_json_str(c, "type"), "Scheduled") == 0 &&
            g_strcmp0(kbctl_json_str(c, "status"), "True") == 0 && msg != NULL)
            j->borrowed_note = strstr(msg, KB_BORROWED_NOTE);
        gboolean native_wait =
                g_strcmp0(kbctl_json_str(c, "type"), "PodGroupInitiallyScheduled") == 0 &&
                g_strcmp0(kbctl_json_str(c, "status"), "False") == 0;
        if (native_wait || (g_strcmp0(kbctl_json_str(c, "type"), "Unschedulable") == 0 &&
                            g_strcmp0(kbctl_json_str(c, "status"), "True") == 0)) {
            j->wait_reason = kbctl_json_str(c, "reason");
            j->wait_message = kbctl_json_str(c, "message");
            if (j->wait_reason == NULL)
                j->wait_reason = "Unschedulable";
        }
    }
}

/* A pod's status.startTime (unix seconds), 0 when unset. */
static gint64 pod_start_time(const KbPod *p)
{
    gint64 t = 0;
    const char *s = kbctl_json_str(p->meta.raw, "status.startTime");
    return s != NULL && kb_time_parse(s, &t) ? t : 0;
}

static void job_compute(KbctlWorld *w, KbctlJob *j)
{
    const KbObjectMeta *m = &j->tf->meta;
    g_autofree char *key = key_of(m->namespace_, m->name);
    j->group = g_hash_table_lookup(w->groups, key);
    for (guint i = 0; i < w->pods->len; i++) {
        KbPod *p = g_ptr_array_index(w->pods, i);
        if (g_strcmp0(p->meta.namespace_, m->namespace_) == 0 &&
            g_strcmp0(g_hash_table_lookup(p->meta.labels, KBCTL_LABEL_JOB_NAME), m->name) == 0)
            g_ptr_array_add(j->pods, p);
    }
    g_ptr_array_sort(j->pods, cmp_pods);
    /* Pods that name Kubernetes' own PodGroup are scheduled as that gang (spec.schedulingGroup
     * wins over the annotation): its conditions are the job's. */
    for (guint i = 0; i < j->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(j->pods, i);
        if (p->scheduling_group == NULL)
            continue;
        g_autofree char *native = key_of(p->meta.namespace_, p->scheduling_group);
        json_object *g = g_hash_table_lookup(w->native_groups, native);
        if (g != NULL)
            j->group = g;
        break;
    }
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        j->gpus_requested += (gint64)kb_tfjob_effective_replicas(j->tf, t) *
                             kb_resource_whole_gpus(j->tf->specs[t].requests.v[KB_RES_GPU]);
    /* Started: when its first pod started on a node (tf-operator's status.startTime is set when
     * it creates the pods, long before a waiting gang runs). */
    for (guint i = 0; i < j->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(j->pods, i);
        gint64 st = pod_start_time(p);
        if (st > 0 && (j->start_time == 0 || st < j->start_time))
            j->start_time = st;
        if (!pod_holds(p))
            continue;
        j->gpus_allocated += kbctl_pod_gpus(p);
        gboolean seen = FALSE;
        for (guint n = 0; n < j->nodes->len && !seen; n++)
            seen = strcmp(g_ptr_array_index(j->nodes, n), p->node_name) == 0;
        if (!seen)
            g_ptr_array_add(j->nodes, g_strdup(p->node_name));
    }
    g_ptr_array_sort(j->nodes, cmp_strings);
    if (j->start_time == 0 && kb_tfjob_is_finished(j->tf))
        j->start_time = j->tf->status.start_time;
    const char *q = kbctl_json_str(j->group, "spec.queue");
    if (q == NULL && j->group != NULL) {
        json_object *labels = kbctl_json_get(j->group, "metadata.labels");
        q = json_object_get_string(json_object_object_get(labels, KB_QUEUE_LABEL));
    }
    j->queue = g_strdup(q != NULL ? q : j->tf->queue != NULL ? j->tf->queue : "default");
    group_wait(j);
    j->status = job_status(j);
}

gint64 kbctl_group_min_member(json_object *group, gint64 fallback)
{
    gint64 n = kbctl_json_int(group, "spec.minMember", -1);
    return n >= 0 ? n : kbctl_json_int(group, "spec.schedulingPolicy.gang.minCount", fallback);
}

/* ---- queues -------------------------------------------------------------------------------- */

static gint64 gpu_of(json_object *list)
{
    json_object *v = NULL;
    if (!json_object_is_type(list, json_type_object) ||
        !json_object_object_get_ex(list, KB_RESOURCE_GPU_NAME, &v))
        return -1;
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    gint64 n = 0;
    if (json_object_is_type(v, json_type_string) &&
        kb_quantity_parse_value(json_object_get_string(v), &n, NULL))
        return n;
    return -1;
}

gint64 kbctl_queue_gpus(json_object *queue, const char *field)
{
    return gpu_of(kbctl_json_get(queue, field));
}

json_object *kbctl_queue_deserved(json_object *queue)
{
    json_object *per_resource = kbctl_json_get(queue, "status.resources");
    if (!json_object_is_type(per_resource, json_type_object)) {
        json_object *old = kbctl_json_get(queue, "status.deserved");
        return old != NULL ? json_object_get(old) : NULL;
    }
    json_object *list = json_object_new_object();
    json_object_object_foreach(per_resource, name, figures)
    {
        json_object *d = NULL;
        if (!json_object_object_get_ex(figures, "deserved", &d) ||
            !json_object_is_type(d, json_type_string))
            continue;
        gint64 v = 0;
        /* Zeros only make the list long, but a GPU share of 0 is a figure, not unknown. */
        if (kb_quantity_parse_value(json_object_get_string(d), &v, NULL) && v == 0 &&
            strcmp(name, KB_RESOURCE_GPU_NAME) != 0)
            continue;
        json_object_object_add(list, name, json_object_get(d));
    }
    return list;
}

gint64 kbctl_queue_deserved_gpus(json_object *queue)
{
    json_object *list = kbctl_queue_deserved(queue);
    gint64 n = gpu_of(list);
    json_object_put(list);
    return n;
}

gint64 kbctl_queue_allocated_gpus(const KbctlWorld *w, json_object *queue)
{
    json_object *alloc = kbctl_json_get(queue, "status.allocated");
    if (alloc != NULL) {
        gint64 n = gpu_of(alloc);
        return n < 0 ? 0 : n;
    }
    /* Older kube-batchd: sum the GPUs of bound pods whose group is in this queue. */
    const char *name = kbctl_json_str(queue, "metadata.name");
    gint64 n = 0;
    for (guint i = 0; i < w->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(w->pods, i);
        if (!pod_holds(p) || p->group_name == NULL)
            continue;
        g_autofree char *key = key_of(p->meta.namespace_, p->group_name);
        json_object *g = g_hash_table_lookup(w->groups, key);
        const char *q = kbctl_json_str(g, "spec.queue");
        if (g != NULL && g_strcmp0(q != NULL ? q : "default", name) == 0)
            n += kbctl_pod_gpus(p);
    }
    return n;
}

char *kbctl_resource_list_string(json_object *list)
{
    if (!json_object_is_type(list, json_type_object) || json_object_object_length(list) == 0)
        return g_strdup("-");
    g_autoptr(GString) s = g_string_new(NULL);
    /* GPUs first: they are what a tenant asks about. */
    json_object *gpu = NULL;
    if (json_object_object_get_ex(list, KB_RESOURCE_GPU_NAME, &gpu))
        g_string_append_printf(s, "gpu %s", json_object_get_string(gpu));
    json_object_object_foreach(list, key, val)
    {
        if (strcmp(key, KB_RESOURCE_GPU_NAME) == 0)
            continue;
        g_string_append_printf(s, "%s%s %s", s->len > 0 ? ", " : "", key,
                               json_object_get_string(val));
    }
    return g_strdup(s->str);
}
