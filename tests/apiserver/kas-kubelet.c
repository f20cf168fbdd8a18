/* Simulated kubelets and grace-period timers (see kas-kubelet.h). */
#include "tests/apiserver/kas-kubelet.h"

#include "tests/apiserver/kas-admit.h"

#include <string.h>

#include "tests/apiserver/kas-json.h"
#include "tests/apiserver/kas-ops.h"

typedef enum { JOB_POD_START, JOB_POD_FINISH, JOB_POD_GONE, JOB_NODE_READY, JOB_NODE_UNTAINT } JobKind;

struct KasKubelet {
    KasStore *store;
    KasKubeletOptions opts;
    GMainContext *ctx;
    GMainLoop *loop;
    GThread *thread;
};

typedef struct {
    KasKubelet *k;
    JobKind kind;
    char *ns;
    char *name;
    char *uid;
    /* filled by the mutation callbacks */
    gint64 run_ms;   /* -1: runs until deleted */
    int exit_code;
    gboolean restarted;
} Job;

static void job_free(gpointer p)
{
    Job *j = p;
    g_free(j->ns);
    g_free(j->name);
    g_free(j->uid);
    g_free(j);
}

static gboolean run_job(gpointer data);

static void schedule(KasKubelet *k, JobKind kind, const KasObj *obj, guint delay_ms)
{
    Job *j = g_new0(Job, 1);
    j->k = k;
    j->kind = kind;
    j->ns = g_strdup(obj->ns);
    j->name = g_strdup(obj->name);
    j->uid = g_strdup(obj->uid);
    j->run_ms = -1;
    GSource *src = delay_ms == 0 ? g_idle_source_new() : g_timeout_source_new(delay_ms);
    g_source_set_callback(src, run_job, j, job_free);
    g_source_attach(src, k->ctx);
    g_source_unref(src);
}

/* Run @j again as @kind after @delay_ms (a copy: the current one is about to be freed). */
static void reschedule(Job *j, JobKind kind, guint delay_ms)
{
    Job *n = g_new0(Job, 1);
    *n = *j;
    n->kind = kind;
    n->ns = g_strdup(j->ns);
    n->name = g_strdup(j->name);
    n->uid = g_strdup(j->uid);
    GSource *src = g_timeout_source_new(delay_ms);
    g_source_set_callback(src, run_job, n, job_free);
    g_source_attach(src, j->k->ctx);
    g_source_unref(src);
}

/* ---- the store hook (called with the store lock held) ---------------------------------------- */

static void hook(KasStore *store, KasRes *res, KasEvType type, KasObj *obj, KasObj *old,
                 gpointer data)
{
    KasKubelet *k = data;
    if (type == KAS_EV_DELETED)
        return;
    if (res->kind == KAS_KIND_NODE) {
        if (k->opts.simulate && type == KAS_EV_ADDED)
            schedule(k, JOB_NODE_READY, obj, 0);
        /* the node lifecycle controller: a Ready node loses the not-ready taint that admission
         * put on it at creation, in a write of its own */
        json_object *j = kas_obj_parse(obj);
        if (kas_admit_node_needs_untaint(j))
            schedule(k, JOB_NODE_UNTAINT, obj, 0);
        json_object_put(j);
        return;
    }
    if (res->kind != KAS_KIND_POD)
        return;
    const char *node = kas_obj_field(res, obj, "spec.nodeName");
    gboolean on_node = node != NULL && node[0] != '\0';
    if (obj->deleting && (old == NULL || !old->deleting)) {
        json_object *j = kas_obj_parse(obj);
        gint64 grace = json_object_get_int64(kas_json_get(j, "metadata.deletionGracePeriodSeconds"));
        json_object_put(j);
        guint grace_ms = (guint)CLAMP(grace, 0, 86400) * 1000;
        schedule(k, JOB_POD_GONE, obj, grace_ms);
        if (k->opts.simulate && on_node && grace_ms > 0)
            schedule(k, JOB_POD_GONE, obj, MIN(grace_ms, k->opts.stop_delay_ms));
        return;
    }
    if (!k->opts.simulate || obj->deleting || !on_node)
        return;
    const char *old_node = old != NULL ? kas_obj_field(res, old, "spec.nodeName") : NULL;
    const char *phase = kas_obj_field(res, obj, "status.phase");
    if ((old_node == NULL || old_node[0] == '\0') && g_strcmp0(phase, "Pending") == 0)
        schedule(k, JOB_POD_START, obj, k->opts.start_delay_ms);
}

/* ---- pods -------------------------------------------------------------------------------------------- */

static char *now_string(void)
{
    return kas_time_format(g_get_real_time() / G_USEC_PER_SEC);
}

static void set_condition(json_object *status, const char *type, const char *value,
                          const char *reason)
{
    json_object *conds = kas_json_get(status, "conditions");
    if (!json_object_is_type(conds, json_type_array)) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    json_object *c = NULL;
    for (gsize i = 0; i < json_object_array_length(conds) && c == NULL; i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(conds, i), "type"), type) == 0)
            c = json_object_array_get_idx(conds, i);
    if (c == NULL) {
        c = json_object_new_object();
        kas_json_set_string(c, "type", type);
        json_object_array_add(conds, c);
    }
    if (g_strcmp0(kas_json_get_string(c, "status"), value) != 0) {
        g_autofree char *now = now_string();
        kas_json_set_string(c, "lastTransitionTime", now);
    }
    kas_json_set_string(c, "status", value);
    json_object_object_add(c, "lastProbeTime", NULL);
    if (reason != NULL)
        kas_json_set_string(c, "reason", reason);
    else
        json_object_object_del(c, "reason");
}

static void read_sim_annotations(json_object *pod, Job *j)
{
    const char *run = kas_json_get_string(pod, "metadata.annotations." KAS_SIM_RUN_SECONDS);
    const char *code = NULL;
    json_object *ann = kas_json_get(pod, "metadata.annotations");
    json_object *cv = NULL;
    /* The key contains dots: look it up directly rather than by dotted path. */
    if (json_object_is_type(ann, json_type_object)) {
        json_object *rv = NULL;
        if (json_object_object_get_ex(ann, KAS_SIM_RUN_SECONDS, &rv))
            run = json_object_get_string(rv);
        if (json_object_object_get_ex(ann, KAS_SIM_EXIT_CODE, &cv))
            code = json_object_get_string(cv);
    }
    j->run_ms = -1;
    j->exit_code = code != NULL ? (int)g_ascii_strtoll(code, NULL, 10) : 0;
    if (run != NULL)
        j->run_ms = (gint64)(g_ascii_strtod(run, NULL) * 1000);
    else if (code != NULL)
        j->run_ms = 0;
    if (j->run_ms < -1)
        j->run_ms = 0;
}

static json_object *container_status(json_object *c, const char *uid, const char *now)
{
    json_object *cs = json_object_new_object();
    const char *name = kas_json_get_string(c, "name");
    const char *image = kas_json_get_string(c, "image");
    kas_json_set_string(cs, "name", name != NULL ? name : "");
    kas_json_set_string(cs, "image", image != NULL ? image : "");
    g_autofree char *image_id = g_strdup_printf("sim://%s", image != NULL ? image : "");
    kas_json_set_string(cs, "imageID", image_id);
    g_autofree char *cid = g_strdup_printf("sim://%s-%s", uid, name != NULL ? name : "");
    kas_json_set_string(cs, "containerID", cid);
    json_object_object_add(cs, "ready", json_object_new_boolean(TRUE));
    json_object_object_add(cs, "started", json_object_new_boolean(TRUE));
    json_object_object_add(cs, "restartCount", json_object_new_int(0));
    json_object *state = json_object_new_object();
    json_object *running = json_object_new_object();
    kas_json_set_string(running, "startedAt", now);
    json_object_object_add(state, "running", running);
    json_object_object_add(cs, "state", state);
    json_object_object_add(cs, "lastState", json_object_new_object());
    return cs;
}

static const char *node_internal_ip(KasStore *store, const char *node_name, json_object **keep)
{
    KasRes *nodes = kas_store_find_locked(store, "", "v1", "nodes");
    KasObj *node = nodes != NULL ? kas_store_get_locked(store, nodes, NULL, node_name) : NULL;
    if (node == NULL)
        return NULL;
    *keep = kas_obj_parse(node);
    json_object *as = kas_json_get(*keep, "status.addresses");
    for (gsize i = 0; json_object_is_type(as, json_type_array) && i < json_object_array_length(as); i++) {
        json_object *a = json_object_array_get_idx(as, i);
        if (g_strcmp0(kas_json_get_string(a, "type"), "InternalIP") == 0)
            return kas_json_get_string(a, "address");
    }
    return "10.0.0.1";
}

/* Called under the store lock by kas_ops_mutate. */
static gboolean pod_start(json_object *pod, gpointer data)
{
    Job *j = data;
    if (kas_json_get_string(pod, "metadata.deletionTimestamp") != NULL ||
        g_strcmp0(kas_json_get_string(pod, "status.phase"), "Pending") != 0)
        return FALSE;
    json_object *node_json = NULL;
    const char *host_ip = node_internal_ip(j->k->store, kas_json_get_string(pod, "spec.nodeName"),
                                           &node_json);
    if (host_ip == NULL)
        return FALSE; /* no such node: no kubelet will ever start it */
    g_autofree char *now = now_string();
    guint64 n = kas_store_next_seq_locked(j->k->store);
    g_autofree char *pod_ip = g_strdup_printf("10.244.%u.%u", (guint)((n / 250) % 250), (guint)(n % 250 + 2));
    json_object *status = kas_json_ensure_object(pod, "status");
    kas_json_set_string(status, "phase", "Running");
    kas_json_set_string(status, "hostIP", host_ip);
    kas_json_set_string(status, "podIP", pod_ip);
    json_object *ips = json_object_new_array();
    json_object *ipo = json_object_new_object();
    kas_json_set_string(ipo, "ip", pod_ip);
    json_object_array_add(ips, ipo);
    json_object_object_add(status, "podIPs", ips);
    kas_json_set_string(status, "startTime", now);
    json_object_put(node_json);
    static const char *const conds[] = { "PodReadyToStartContainers", "Initialized", "Ready",
                                         "ContainersReady", "PodScheduled" };
    for (guint i = 0; i < G_N_ELEMENTS(conds); i++)
        set_condition(status, conds[i], "True", NULL);
    json_object *statuses = json_object_new_array();
    json_object *cs = kas_json_get(pod, "spec.containers");
    const char *uid = kas_json_get_string(pod, "metadata.uid");
    for (gsize i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++)
        json_object_array_add(statuses, container_status(json_object_array_get_idx(cs, i), uid, now));
    json_object_object_add(status, "containerStatuses", statuses);
    read_sim_annotations(pod, j);
    return TRUE;
}

static json_object *terminated(json_object *cs, int code, const char *now)
{
    json_object *t = json_object_new_object();
    json_object_object_add(t, "exitCode", json_object_new_int(code));
    kas_json_set_string(t, "reason", code == 0 ? "Completed" : "Error");
    const char *started = kas_json_get_string(cs, "state.running.startedAt");
    kas_json_set_string(t, "startedAt", started != NULL ? started : now);
    kas_json_set_string(t, "finishedAt", now);
    const char *cid = kas_json_get_string(cs, "containerID");
    if (cid != NULL)
        kas_json_set_string(t, "containerID", cid);
    return t;
}

static gboolean pod_finish(json_object *pod, gpointer data)
{
    Job *j = data;
    if (kas_json_get_string(pod, "metadata.deletionTimestamp") != NULL ||
        g_strcmp0(kas_json_get_string(pod, "status.phase"), "Running") != 0)
        return FALSE;
    read_sim_annotations(pod, j);
    int code = j->exit_code;
    const char *rp = kas_json_get_string(pod, "spec.restartPolicy");
    gboolean restart = rp == NULL || strcmp(rp, "Always") == 0 ||
                       (strcmp(rp, "OnFailure") == 0 && code != 0);
    g_autofree char *now = now_string();
    json_object *status = kas_json_ensure_object(pod, "status");
    json_object *statuses = kas_json_get(status, "containerStatuses");
    for (gsize i = 0; json_object_is_type(statuses, json_type_array) && i < json_object_array_length(statuses); i++) {
        json_object *cs = json_object_array_get_idx(statuses, i);
        json_object *t = terminated(cs, code, now);
        json_object *state = json_object_new_object();
        if (restart) {
            json_object *last = json_object_new_object();
            json_object_object_add(last, "terminated", t);
            json_object_object_add(cs, "lastState", last);
            json_object *running = json_object_new_object();
            kas_json_set_string(running, "startedAt", now);
            json_object_object_add(state, "running", running);
            json_object_object_add(cs, "restartCount",
                                   json_object_new_int(json_object_get_int(kas_json_get(cs, "restartCount")) + 1));
        } else {
            json_object_object_add(state, "terminated", t);
            json_object_object_add(cs, "ready", json_object_new_boolean(FALSE));
            json_object_object_add(cs, "started", json_object_new_boolean(FALSE));
        }
        json_object_object_add(cs, "state", state);
    }
    j->restarted = restart;
    if (!restart) {
        kas_json_set_string(status, "phase", code == 0 ? "Succeeded" : "Failed");
        const char *why = code == 0 ? "PodCompleted" : "PodFailed";
        set_condition(status, "Ready", "False", why);
        set_condition(status, "ContainersReady", "False", why);
        set_condition(status, "PodReadyToStartContainers", "False", NULL);
    }
    return TRUE;
}

/* ---- nodes ------------------------------------------------------------------------------------------ */

static gboolean node_ready(json_object *node, gpointer data)
{
    Job *j = data;
    json_object *status = kas_json_ensure_object(node, "status");
    json_object *alloc = kas_json_get(status, "allocatable");
    json_object *cap = kas_json_get(status, "capacity");
    if (alloc == NULL && cap != NULL) {
        json_object_object_add(status, "allocatable", json_object_get(cap));
    } else if (alloc == NULL) {
        alloc = json_object_new_object();
        kas_json_set_string(alloc, "cpu", "8");
        kas_json_set_string(alloc, "memory", "32Gi");
        kas_json_set_string(alloc, "pods", "110");
        json_object_object_add(status, "allocatable", alloc);
    }
    if (kas_json_get(status, "capacity") == NULL)
        json_object_object_add(status, "capacity", json_object_get(kas_json_get(status, "allocatable")));
    g_autofree char *now = now_string();
    static const char *const conds[][4] = {
        { "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available" },
        { "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure" },
        { "PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available" },
        { "Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated)" },
    };
    json_object *arr = json_object_new_array();
    for (guint i = 0; i < G_N_ELEMENTS(conds); i++) {
        json_object *c = json_object_new_object();
        kas_json_set_string(c, "type", conds[i][0]);
        kas_json_set_string(c, "status", conds[i][1]);
        kas_json_set_string(c, "lastHeartbeatTime", now);
        kas_json_set_string(c, "lastTransitionTime", now);
        kas_json_set_string(c, "reason", conds[i][2]);
        kas_json_set_string(c, "message", conds[i][3]);
        json_object_array_add(arr, c);
    }
    json_object_object_add(status, "conditions", arr);
    if (kas_json_get(status, "addresses") == NULL) {
        guint64 n = kas_store_next_seq_locked(j->k->store);
        g_autofree char *ip = g_strdup_printf("10.0.%u.%u", (guint)((n / 250) % 250), (guint)(n % 250 + 2));
        json_object *as = json_object_new_array();
        json_object *a = json_object_new_object();
        kas_json_set_string(a, "type", "InternalIP");
        kas_json_set_string(a, "address", ip);
        json_object_array_add(as, a);
        a = json_object_new_object();
        kas_json_set_string(a, "type", "Hostname");
        kas_json_set_string(a, "address", kas_json_get_string(node, "metadata.name"));
        json_object_array_add(as, a);
        json_object_object_add(status, "addresses", as);
    }
    json_object *info = kas_json_ensure_object(status, "nodeInfo");
    kas_json_set_string(info, "kubeletVersion", "v1.32.0-sim");
    kas_json_set_string(info, "kubeProxyVersion", "v1.32.0-sim");
    kas_json_set_string(info, "containerRuntimeVersion", "sim://1.0");
    kas_json_set_string(info, "osImage", "kb-apiserver simulated node");
    kas_json_set_string(info, "kernelVersion", "0.0.0-sim");
    kas_json_set_string(info, "operatingSystem", "linux");
    kas_json_set_string(info, "architecture", "amd64");
    return TRUE;
}

static gboolean renew(json_object *lease, gpointer data)
{
    GDateTime *dt = g_date_time_new_now_utc();
    g_autofree char *base = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S");
    g_autofree char *when = g_strdup_printf("%s.%06dZ", base, g_date_time_get_microsecond(dt));
    g_date_time_unref(dt);
    kas_json_set_string(kas_json_ensure_object(lease, "spec"), "renewTime", when);
    return TRUE;
}

static void renew_lease(KasKubelet *k, const char *node, const char *node_uid)
{
    KasRes *leases;
    kas_store_lock(k->store);
    leases = kas_store_find_locked(k->store, "coordination.k8s.io", "v1", "leases");
    kas_store_unlock(k->store);
    if (kas_ops_mutate(k->store, leases, "kube-node-lease", node, NULL, renew, NULL))
        return;
    json_object *l = json_object_new_object();
    json_object *meta = kas_json_ensure_object(l, "metadata");
    kas_json_set_string(meta, "name", node);
    kas_json_set_string(meta, "namespace", "kube-node-lease");
    json_object *refs = json_object_new_array();
    json_object *ref = json_object_new_object();
    kas_json_set_string(ref, "apiVersion", "v1");
    kas_json_set_string(ref, "kind", "Node");
    kas_json_set_string(ref, "name", node);
    kas_json_set_string(ref, "uid", node_uid);
    json_object_array_add(refs, ref);
    json_object_object_add(meta, "ownerReferences", refs);
    json_object *spec = kas_json_ensure_object(l, "spec");
    kas_json_set_string(spec, "holderIdentity", node);
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(40));
    renew(l, NULL);
    KasObj *o = kas_ops_create(k->store, leases, "v1", "kube-node-lease", l, NULL);
    kas_obj_unref(o);
    json_object_put(l);
}

static gboolean heartbeat(gpointer data)
{
    KasKubelet *k = data;
    g_autoptr(GPtrArray) nodes = NULL;
    kas_store_lock(k->store);
    KasRes *res = kas_store_find_locked(k->store, "", "v1", "nodes");
    KasListOptions lo = { 0 };
    gboolean more;
    guint64 rem;
    nodes = kas_store_list_locked(k->store, res, &lo, &more, &rem);
    kas_store_unlock(k->store);
    for (guint i = 0; i < nodes->len; i++) {
        KasObj *n = g_ptr_array_index(nodes, i);
        renew_lease(k, n->name, n->uid);
    }
    return G_SOURCE_CONTINUE;
}

/* ---- jobs --------------------------------------------------------------------------------------------- */

static gboolean run_job(gpointer data)
{
    Job *j = data;
    KasKubelet *k = j->k;
    kas_store_lock(k->store);
    KasRes *pods = kas_store_find_locked(k->store, "", "v1", "pods");
    KasRes *nodes = kas_store_find_locked(k->store, "", "v1", "nodes");
    kas_store_unlock(k->store);
    switch (j->kind) {
    case JOB_POD_START:
        if (kas_ops_mutate(k->store, pods, j->ns, j->name, j->uid, pod_start, j) && j->run_ms >= 0)
            reschedule(j, JOB_POD_FINISH, (guint)MIN(j->run_ms, G_MAXUINT32 / 2));
        break;
    case JOB_POD_FINISH:
        if (kas_ops_mutate(k->store, pods, j->ns, j->name, j->uid, pod_finish, j) && j->restarted)
            reschedule(j, JOB_POD_FINISH, (guint)MAX(MIN(j->run_ms, G_MAXUINT32 / 2), 1000));
        break;
    case JOB_POD_GONE:
        kas_ops_pod_terminated(k->store, j->ns, j->name, j->uid);
        break;
    case JOB_NODE_UNTAINT:
        kas_ops_mutate(k->store, nodes, NULL, j->name, j->uid, kas_admit_node_untaint, NULL);
        break;
    case JOB_NODE_READY:
        if (kas_ops_mutate(k->store, nodes, NULL, j->name, j->uid, node_ready, j))
            renew_lease(k, j->name, j->uid);
        break;
    }
    return G_SOURCE_REMOVE;
}

static gpointer thread_main(gpointer data)
{
    KasKubelet *k = data;
    g_main_context_push_thread_default(k->ctx);
    g_main_loop_run(k->loop);
    g_main_context_pop_thread_default(k->ctx);
    return NULL;
}

KasKubelet *kas_kubelet_new(KasStore *store, const KasKubeletOptions *opts)
{
    KasKubelet *k = g_new0(KasKubelet, 1);
    k->store = store;
    k->opts = *opts;
    if (k->opts.start_delay_ms == 0)
        k->opts.start_delay_ms = 100;
    if (k->opts.stop_delay_ms == 0)
        k->opts.stop_delay_ms = 100;
    if (k->opts.heartbeat_ms == 0)
        k->opts.heartbeat_ms = 10000;
    k->ctx = g_main_context_new();
    k->loop = g_main_loop_new(k->ctx, FALSE);
    if (k->opts.simulate) {
        GSource *src = g_timeout_source_new(k->opts.heartbeat_ms);
        g_source_set_callback(src, heartbeat, k, NULL);
        g_source_attach(src, k->ctx);
        g_source_unref(src);
    }
    k->thread = g_thread_new("kas-kubelet", thread_main, k);
    kas_store_set_hook(store, hook, k);
    return k;
}

static gboolean quit_loop(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_REMOVE;
}

void kas_kubelet_free(KasKubelet *k)
{
    if (k == NULL)
        return;
    kas_store_set_hook(k->store, NULL, NULL);
    GSource *src = g_idle_source_new();
    g_source_set_callback(src, quit_loop, k->loop, NULL);
    g_source_attach(src, k->ctx);
    g_source_unref(src);
    g_thread_join(k->thread);
    g_main_loop_unref(k->loop);
    g_main_context_unref(k->ctx);
    g_free(k);
}
