/* Simulated kubelets and grace-period timers (see kas-kubelet.h). */
#include "testbed/apiserver/kas-kubelet.h"

#include "testbed/apiserver/kas-admit.h"

#include <string.h>

#include "testbed/apiserver/kas-claims.h"
#include "testbed/apiserver/kas-dra.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"
#include "testbed/kubelet/kbl-sim.h"

typedef enum {
    JOB_POD_START,
    JOB_POD_FINISH,
    JOB_POD_GONE,
    JOB_NODE_READY,
    JOB_NODE_UNTAINT,
    JOB_POD_CLAIMS, /* the resource-claim controller: a pod */
    JOB_CLAIM_SYNC, /* ... a claim, by name */
    JOB_CLAIMS_NS,  /* ... every pod of a namespace */
} JobKind;

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

static void schedule_named(KasKubelet *k, JobKind kind, const char *ns, const char *name,
                           const char *uid, guint delay_ms)
{
    Job *j = g_new0(Job, 1);
    j->k = k;
    j->kind = kind;
    j->ns = g_strdup(ns);
    j->name = g_strdup(name);
    j->uid = g_strdup(uid);
    j->run_ms = -1;
    GSource *src = delay_ms == 0 ? g_idle_source_new() : g_timeout_source_new(delay_ms);
    g_source_set_callback(src, run_job, j, job_free);
    g_source_attach(src, k->ctx);
    g_source_unref(src);
}

static void schedule(KasKubelet *k, JobKind kind, const KasObj *obj, guint delay_ms)
{
    schedule_named(k, kind, obj->ns, obj->name, obj->uid, delay_ms);
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

/* The resource-claim controller's triggers (kas-claims.h): pods that name claims, claims with
 * reservations, new templates. */
static void claims_hook(KasStore *store, KasKubelet *k, KasRes *res, KasEvType type, KasObj *obj,
                        KasObj *old)
{
    if (res->kind == KAS_KIND_POD) {
        if (!kas_claims_pod_has_claims(obj))
            return;
        if (type != KAS_EV_DELETED) {
            if (type == KAS_EV_MODIFIED && kas_claims_pod_same(res, obj, old))
                return; /* nothing the claims depend on changed */
            schedule(k, JOB_POD_CLAIMS, obj, 0);
            return;
        }
        json_object *j = kas_obj_parse(obj);
        g_autoptr(GPtrArray) names = kas_claims_pod_claim_names(j);
        json_object_put(j);
        for (guint i = 0; i < names->len; i++)
            schedule_named(k, JOB_CLAIM_SYNC, obj->ns, g_ptr_array_index(names, i), NULL, 0);
        return;
    }
    if (!kas_dra_is(res) || type == KAS_EV_DELETED)
        return;
    /* a claim reserved for live pods only (a scheduler's claim write) needs no sync: judged
     * here, it costs no job and no wake-up of the controller's thread per claim written */
    if (strcmp(res->plural, "resourceclaims") == 0 &&
        strstr(obj->json, "\"reservedFor\"") != NULL &&
        !kas_claims_reservations_live_locked(store, obj))
        schedule_named(k, JOB_CLAIM_SYNC, obj->ns, obj->name, NULL, 0);
    else if (strcmp(res->plural, "resourceclaimtemplates") == 0 && type == KAS_EV_ADDED)
        schedule_named(k, JOB_CLAIMS_NS, obj->ns, obj->name, NULL, 0);
}

static void hook(KasStore *store, KasRes *res, KasEvType type, KasObj *obj, KasObj *old,
                 gpointer data)
{
    KasKubelet *k = data;
    if (k->opts.resource_claims)
        claims_hook(store, k, res, type, obj, old);
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

/* ---- pods: the rules are testbed/kubelet/kbl-sim.c, shared with bin/kb-kubelet ------------------ */

static const char *node_internal_ip(KasStore *store, const char *node_name, json_object **keep)
{
    KasRes *nodes = kas_store_find_locked(store, "", "v1", "nodes");
    KasObj *node = nodes != NULL ? kas_store_get_locked(store, nodes, NULL, node_name) : NULL;
    if (node == NULL)
        return NULL;
    *keep = kas_obj_parse(node);
    const char *ip = kbl_sim_node_ip(*keep);
    return ip != NULL ? ip : "10.0.0.1";
}

static void read_run(json_object *pod, Job *j)
{
    KblSimRun run;
    kbl_sim_read_run(pod, &run);
    j->run_ms = run.run_ms;
    j->exit_code = run.exit_code;
}

/* Called under the store lock by kas_ops_mutate. */
static gboolean pod_start(json_object *pod, gpointer data)
{
    Job *j = data;
    if (g_strcmp0(kas_json_get_string(pod, "status.phase"), "Pending") != 0)
        return FALSE;
    json_object *node_json = NULL;
    const char *host_ip = node_internal_ip(j->k->store, kas_json_get_string(pod, "spec.nodeName"),
                                           &node_json);
    if (host_ip == NULL)
        return FALSE; /* no such node: no kubelet will ever start it */
    guint64 n = kas_store_next_seq_locked(j->k->store);
    g_autofree char *pod_ip = g_strdup_printf("10.244.%u.%u", (guint)((n / 250) % 250), (guint)(n % 250 + 2));
    gboolean ok = kbl_sim_pod_start(pod, host_ip, pod_ip, g_get_real_time() / G_USEC_PER_SEC);
    json_object_put(node_json);
    if (ok)
        read_run(pod, j);
    return ok;
}

static gboolean pod_finish(json_object *pod, gpointer data)
{
    Job *j = data;
    read_run(pod, j);
    return kbl_sim_pod_finish(pod, j->exit_code, g_get_real_time() / G_USEC_PER_SEC, &j->restarted);
}

/* ---- nodes ------------------------------------------------------------------------------------------ */

static gboolean node_ready(json_object *node, gpointer data)
{
    Job *j = data;
    guint64 n = kas_store_next_seq_locked(j->k->store);
    g_autofree char *ip = g_strdup_printf("10.0.%u.%u", (guint)((n / 250) % 250), (guint)(n % 250 + 2));
    kbl_sim_node_ready(node, ip, g_get_real_time() / G_USEC_PER_SEC);
    return TRUE;
}

static gboolean renew(json_object *lease, gpointer data)
{
    kbl_sim_lease_renew(lease, g_get_real_time());
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
    json_object *l = kbl_sim_lease_new(node, node_uid, g_get_real_time());
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
            reschedule(j, JOB_POD_FINISH, (guint)MAX(MIN(j->run_ms, G_MAXUINT32 / 2), KBL_SIM_MIN_RERUN_MS));
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
    case JOB_POD_CLAIMS:
        kas_claims_sync_pod(k->store, j->ns, j->name, j->uid);
        break;
    case JOB_CLAIM_SYNC:
        kas_claims_sync_claim(k->store, j->ns, j->name);
        break;
    case JOB_CLAIMS_NS:
        kas_claims_sync_namespace(k->store, j->ns);
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
