/*
 * The TFJob reconcile planner (operator/tf-plan), status (operator/tf-status) and autoscaling
 * decisions (operator/tf-autoscale), driven against a tiny in-test cluster that applies each
 * plan's actions the way the API server would.
 */
#include <glib.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-tfconv.h"
#include "kube/kb-tfjob.h"
#include "operator/tf-autoscale.h"
#include "operator/tf-build.h"
#include "operator/tf-plan.h"

#define NOW 1795323600 /* 2026-11-22T05:00:00Z */

/* ---- a fake cluster ------------------------------------------------------------------------- */

typedef struct {
    json_object *job_json; /* the TFJob as stored */
    KbTfJob *job;          /* decoded from job_json */
    GPtrArray *pods;       /* KbPod* */
    GPtrArray *services;   /* KbObjectMeta* */
    KbObjectMeta *pod_group;
    json_object *pod_group_json;
    gboolean job_deleted;
    gint64 now;
    const char *gang; /* gang scheduler name */
    TfGangApi api;
    json_object *workload_json; /* the Workload created (native gang API) */
    guint uid_seq;
} Cluster;

static json_object *load(const char *name)
{
    const char *src = g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
    g_autofree char *path = g_build_filename(src, "tests", "data", "operator", name, NULL);
    json_object *o = json_object_from_file(path);
    g_assert_nonnull(o);
    return o;
}

static void redecode(Cluster *c)
{
    g_autoptr(GError) error = NULL;
    g_clear_pointer(&c->job, kb_tfjob_free);
    c->job = kb_tfjob_decode(c->job_json, FALSE, &error);
    g_assert_no_error(error);
    /* As the controller does: a dynamic job's worker count is what its services say. */
    if (c->services != NULL)
        c->job->status.workers = tf_plan_observed_workers(
                c->job, (KbObjectMeta *const *)c->services->pdata, c->services->len);
}

/* Restarts counted against backoffLimit: what the services recorded. */
static gint32 restarts(Cluster *c)
{
    gint32 n = 0;
    for (guint i = 0; i < c->services->len; i++) {
        KbObjectMeta *m = g_ptr_array_index(c->services, i);
        const char *v = g_hash_table_lookup(m->annotations, TF_ANNOTATION_RESTARTS);
        n += v != NULL ? atoi(v) : 0;
    }
    return n;
}

/* Kubeflow's TFJob schema (training-operator v1.8) keeps only these status fields. */
static void assert_schema_status(Cluster *c, json_object *status)
{
    static const char *const allowed[] = {"conditions", "replicaStatuses", "startTime",
                                          "completionTime", "lastReconcileTime"};
    if (c->job->api != KB_TF_API_V1)
        return;
    json_object_object_foreach(status, key, val)
    {
        (void)val;
        gboolean ok = FALSE;
        for (guint i = 0; i < G_N_ELEMENTS(allowed); i++)
            ok |= strcmp(key, allowed[i]) == 0;
        if (!ok)
            g_test_message("status.%s is not in Kubeflow's TFJob schema", key);
        g_assert_true(ok);
    }
}

static Cluster *cluster_new_json(json_object *job_json)
{
    Cluster *c = g_new0(Cluster, 1);
    c->job_json = job_json;
    c->pods = g_ptr_array_new_with_free_func(kb_object_unref);
    c->services = g_ptr_array_new_with_free_func(kb_object_unref);
    c->now = NOW;
    c->gang = "kube-batchd";
    redecode(c);
    return c;
}

static Cluster *cluster_new(const char *fixture)
{
    return cluster_new_json(load(fixture));
}

static void cluster_free(Cluster *c)
{
    kb_tfjob_free(c->job);
    json_object_put(c->job_json);
    g_ptr_array_unref(c->pods);
    g_ptr_array_unref(c->services);
    if (c->pod_group != NULL)
        kb_object_unref(c->pod_group);
    if (c->pod_group_json != NULL)
        json_object_put(c->pod_group_json);
    if (c->workload_json != NULL)
        json_object_put(c->workload_json);
    g_free(c);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Cluster, cluster_free)

static TfPlan *plan_scaled(Cluster *c, const TfScaleDecision *scale)
{
    TfObservation obs = {
            .job = c->job,
            .pods = (KbPod *const *)c->pods->pdata,
            .n_pods = c->pods->len,
            .services = (KbObjectMeta *const *)c->services->pdata,
            .n_services = c->services->len,
            .pod_group = c->pod_group,
            .now = c->now,
            .gang_scheduler = c->gang,
            .gang_api = c->api,
            .scale = scale,
    };
    return tf_plan_compute(&obs);
}

static TfPlan *plan(Cluster *c)
{
    return plan_scaled(c, NULL);
}

static gint find_pod(Cluster *c, const char *name)
{
    for (guint i = 0; i < c->pods->len; i++)
        if (g_strcmp0(((KbPod *)g_ptr_array_index(c->pods, i))->meta.name, name) == 0)
            return (gint)i;
    return -1;
}

static void add_uid(Cluster *c, json_object *obj)
{
    char uid[32];
    g_snprintf(uid, sizeof(uid), "uid-%u", ++c->uid_seq);
    json_object_object_add(json_object_object_get(obj, "metadata"), "uid",
                           json_object_new_string(uid));
}

/* Replace pod @name with one in @phase: @exit_code < 0 means no terminated container. */
static void set_pod(Cluster *c, const char *name, const char *phase, int exit_code, int restarts,
                    gboolean deleting)
{
    g_autoptr(GError) error = NULL;
    gint i = find_pod(c, name);
    g_assert_cmpint(i, >=, 0);
    KbPod *old = g_ptr_array_index(c->pods, i);
    json_object *pod = NULL;
    json_object_deep_copy(old->meta.raw, &pod, NULL);
    json_object *status = json_object_new_object(), *cs = json_object_new_array();
    json_object *ct = json_object_new_object(), *state = json_object_new_object();
    json_object_object_add(status, "phase", json_object_new_string(phase));
    json_object_object_add(ct, "name", json_object_new_string("tensorflow"));
    json_object_object_add(ct, "restartCount", json_object_new_int(restarts));
    if (exit_code >= 0) {
        json_object *term = json_object_new_object();
        json_object_object_add(term, "exitCode", json_object_new_int(exit_code));
        json_object_object_add(state, "terminated", term);
    }
    json_object_object_add(ct, "state", state);
    json_object_array_add(cs, ct);
    json_object_object_add(status, "containerStatuses", cs);
    json_object_object_add(pod, "status", status);
    if (deleting)
        json_object_object_add(json_object_object_get(pod, "metadata"), "deletionTimestamp",
                               json_object_new_string("2026-11-22T05:00:00Z"));
    KbPod *p = kb_pod_decode(pod, TRUE, &error);
    g_assert_no_error(error);
    json_object_put(pod);
    g_ptr_array_index(c->pods, i) = p;
    kb_object_unref(old);
}

static void set_all_pods(Cluster *c, const char *type_prefix, const char *phase, int exit_code)
{
    for (guint i = 0; i < c->pods->len; i++) {
        KbPod *p = g_ptr_array_index(c->pods, i);
        if (type_prefix == NULL || strstr(p->meta.name, type_prefix) != NULL)
            set_pod(c, p->meta.name, phase, exit_code, 0, FALSE);
    }
}

static void remove_named(GPtrArray *arr, const char *name)
{
    for (guint i = 0; i < arr->len; i++) {
        KbObjectMeta *m = g_ptr_array_index(arr, i);
        if (g_strcmp0(m->name, name) == 0) {
            g_ptr_array_remove_index(arr, i);
            return;
        }
    }
}

static void apply_create(Cluster *c, const TfAction *a)
{
    g_autoptr(GError) error = NULL;
    json_object *body = NULL;
    json_object_deep_copy(a->body, &body, NULL);
    add_uid(c, body);
    if (a->type == TF_ACTION_CREATE_POD) {
        g_assert_cmpint(find_pod(c, a->name), <, 0); /* a duplicate create would 409 */
        json_object *st = json_object_new_object();
        json_object_object_add(st, "phase", json_object_new_string("Pending"));
        json_object_object_add(body, "status", st);
        KbPod *p = kb_pod_decode(body, TRUE, &error);
        g_assert_no_error(error);
        g_ptr_array_add(c->pods, p);
    } else if (a->type == TF_ACTION_CREATE_SERVICE) {
        KbObjectMeta *m = kb_meta_object_decode(body, TRUE, &error);
        g_assert_no_error(error);
        g_ptr_array_add(c->services, m);
    } else {
        g_assert_null(c->pod_group);
        /* The planner reads only the group's metadata. */
        c->pod_group = kb_meta_object_decode(body, FALSE, &error);
        g_assert_no_error(error);
        c->pod_group_json = json_object_get(body);
    }
    json_object_put(body);
}

/* A merge patch of the service's annotations. */
static void record_restart(Cluster *c, const TfAction *a)
{
    for (guint i = 0; i < c->services->len; i++) {
        KbObjectMeta *m = g_ptr_array_index(c->services, i);
        if (g_strcmp0(m->name, a->name) != 0)
            continue;
        json_object *raw = NULL, *meta, *ann, *patch_ann;
        json_object_deep_copy(m->raw, &raw, NULL);
        meta = json_object_object_get(raw, "metadata");
        if (!json_object_object_get_ex(meta, "annotations", &ann)) {
            ann = json_object_new_object();
            json_object_object_add(meta, "annotations", ann);
        }
        patch_ann =
                json_object_object_get(json_object_object_get(a->body, "metadata"), "annotations");
        json_object_object_foreach(patch_ann, k, v)
        {
            json_object_object_add(ann, k, json_object_get(v));
        }
        g_autoptr(GError) error = NULL;
        KbObjectMeta *n = kb_meta_object_decode(raw, TRUE, &error);
        g_assert_no_error(error);
        json_object_put(raw);
        g_ptr_array_index(c->services, i) = n;
        kb_object_unref(m);
        return;
    }
    g_assert_not_reached(); /* a patch of a missing service would 404 */
}

/* Apply every action of @p as the API server would. */
static void apply(Cluster *c, const TfPlan *p)
{
    for (guint i = 0; i < p->actions->len; i++) {
        const TfAction *a = g_ptr_array_index(p->actions, i);
        switch (a->type) {
        case TF_ACTION_CREATE_POD:
        case TF_ACTION_CREATE_SERVICE:
        case TF_ACTION_CREATE_POD_GROUP:
            apply_create(c, a);
            break;
        case TF_ACTION_CREATE_WORKLOAD:
            /* a second create would be a 409: never planned once the group exists */
            g_assert_null(c->workload_json);
            c->workload_json = json_object_get(a->body);
            break;
        case TF_ACTION_DELETE_POD: {
            gint k = find_pod(c, a->name);
            g_assert_cmpint(k, >=, 0);
            g_ptr_array_remove_index(c->pods, k);
            break;
        }
        case TF_ACTION_DELETE_SERVICE:
            remove_named(c->services, a->name);
            break;
        case TF_ACTION_DELETE_POD_GROUP:
            g_clear_pointer(&c->pod_group, kb_object_unref);
            g_clear_pointer(&c->pod_group_json, json_object_put);
            break;
        case TF_ACTION_UPDATE_STATUS:
            assert_schema_status(c, a->body);
            json_object_object_add(c->job_json, "status", json_object_get(a->body));
            break;
        case TF_ACTION_RECORD_RESTART:
            record_restart(c, a);
            break;
        case TF_ACTION_SET_RUNTIME_ID:
            json_object_object_add(json_object_object_get(c->job_json, "spec"), "RuntimeId",
                                   json_object_new_string(a->name));
            break;
        case TF_ACTION_DELETE_JOB:
            c->job_deleted = TRUE;
            break;
        case TF_ACTION_EVENT:
            break;
        }
    }
    redecode(c);
}

/* Plan and apply until nothing changes (at most @rounds times); returns the rounds used. */
static guint settle(Cluster *c, guint rounds)
{
    for (guint r = 0; r < rounds; r++) {
        g_autoptr(TfPlan) p = plan(c);
        guint work = 0;
        for (guint i = 0; i < p->actions->len; i++)
            work += ((TfAction *)g_ptr_array_index(p->actions, i))->type != TF_ACTION_EVENT;
        if (work == 0)
            return r;
        apply(c, p);
    }
    return rounds;
}

static const char *status_str(Cluster *c, const char *key)
{
    json_object *st, *v;
    if (!json_object_object_get_ex(c->job_json, "status", &st) ||
        !json_object_object_get_ex(st, key, &v))
        return NULL;
    return json_object_get_string(v);
}

/* The type of the last condition: what `kubectl get tfjob` shows. */
static const char *last_condition(Cluster *c)
{
    json_object *st, *conds;
    if (!json_object_object_get_ex(c->job_json, "status", &st) ||
        !json_object_object_get_ex(st, "conditions", &conds) ||
        !json_object_is_type(conds, json_type_array) || json_object_array_length(conds) == 0)
        return NULL;
    json_object *last = json_object_array_get_idx(conds, json_object_array_length(conds) - 1);
    return json_object_get_string(json_object_object_get(last, "type"));
}

static const char *condition_message(Cluster *c, KbTfConditionType t)
{
    return c->job->status.conditions[t].present ? c->job->status.conditions[t].message : NULL;
}

static gint replica_count(Cluster *c, const char *type, const char *field)
{
    json_object *st, *rs, *t, *v;
    if (!json_object_object_get_ex(c->job_json, "status", &st) ||
        !json_object_object_get_ex(st, "replicaStatuses", &rs) ||
        !json_object_object_get_ex(rs, type, &t) || !json_object_object_get_ex(t, field, &v))
        return 0;
    return json_object_get_int(v);
}

static gboolean has_event(const TfPlan *p, const char *reason, const char *text)
{
    for (guint i = 0; i < p->actions->len; i++) {
        const TfAction *a = g_ptr_array_index(p->actions, i);
        if (a->type == TF_ACTION_EVENT && g_strcmp0(a->reason, reason) == 0 &&
            (text == NULL || strstr(a->message, text) != NULL))
            return TRUE;
    }
    return FALSE;
}

/* ---- the seed's v1alpha1 example ------------------------------------------------------------ */

static void test_seed_lifecycle(void)
{
    g_autoptr(Cluster) c = cluster_new("seed-v1alpha1.json");

    /* First the runtime id, alone. */
    g_autoptr(TfPlan) p0 = plan(c);
    g_assert_cmpuint(p0->actions->len, ==, 1);
    g_assert_cmpuint(tf_plan_count(p0, TF_ACTION_SET_RUNTIME_ID), ==, 1);
    apply(c, p0);
    g_assert_nonnull(c->job->runtime_id);

    /* Pin the id for predictable names. */
    json_object_object_add(json_object_object_get(c->job_json, "spec"), "RuntimeId",
                           json_object_new_string("76no"));
    redecode(c);

    /* Then the PodGroup and services, no pod yet. */
    g_autoptr(TfPlan) p1 = plan(c);
    g_assert_cmpuint(tf_plan_count(p1, TF_ACTION_CREATE_POD_GROUP), ==, 1);
    g_assert_cmpuint(tf_plan_count(p1, TF_ACTION_CREATE_SERVICE), ==, 4);
    g_assert_cmpuint(tf_plan_count(p1, TF_ACTION_CREATE_POD), ==, 0);
    const TfAction *pg = tf_plan_find(p1, TF_ACTION_CREATE_POD_GROUP, "example-job");
    g_assert_nonnull(pg);
    g_assert_cmpint(json_object_get_int(json_object_object_get(
                            json_object_object_get(pg->body, "spec"), "minMember")),
                    ==, 4);
    apply(c, p1);
    g_assert_cmpstr(status_str(c, "phase"), ==, "Creating");
    g_assert_cmpstr(status_str(c, "state"), ==, "Running");

    /* Pods: 1 master, 1 worker, 2 PS with the seed's names. */
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_CREATE_POD), ==, 4);
    static const char *const names[] = {"example-job-master-76no-0", "example-job-worker-76no-0",
                                        "example-job-ps-76no-0", "example-job-ps-76no-1"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
        g_assert_nonnull(tf_plan_find(p2, TF_ACTION_CREATE_POD, names[i]));
    apply(c, p2);
    /* One more pass records that every replica exists: phase Running, state Running. */
    g_assert_cmpuint(settle(c, 3), ==, 1);
    g_assert_cmpstr(status_str(c, "phase"), ==, "Running");

    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    g_assert_cmpstr(status_str(c, "phase"), ==, "Running");
    g_assert_true(c->job->status.conditions[KB_TF_COND_RUNNING].present); /* rebuilt */

    /* The master exits 0: the job succeeded, the rest is cleaned up (v1alpha1: All). */
    set_pod(c, "example-job-master-76no-0", "Succeeded", 0, 0, FALSE);
    g_autoptr(TfPlan) p3 = plan(c);
    g_assert_cmpuint(tf_plan_count(p3, TF_ACTION_DELETE_POD), ==, 4);
    g_assert_cmpuint(tf_plan_count(p3, TF_ACTION_DELETE_POD_GROUP), ==, 1);
    g_assert_true(has_event(p3, "TFJobSucceeded", "TFJob default/example-job successfully"));
    apply(c, p3);
    g_assert_cmpstr(status_str(c, "phase"), ==, "CleanUp");
    g_assert_cmpstr(status_str(c, "state"), ==, "Succeeded");
    settle(c, 3);
    g_assert_cmpstr(status_str(c, "phase"), ==, "Done");
    g_assert_cmpuint(c->pods->len, ==, 0);
    g_assert_cmpuint(c->services->len, ==, 0);

    /* replicaStatuses as in the seed's sample output. */
    json_object *rs = json_object_object_get(json_object_object_get(c->job_json, "status"),
                                             "replicaStatuses");
    g_assert_cmpint(json_object_array_length(rs), ==, 3);
    json_object *m = json_object_array_get_idx(rs, 0), *ps = json_object_array_get_idx(rs, 2);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(m, "tf_replica_type")), ==,
                    "MASTER");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(m, "state")), ==, "Succeeded");
    g_assert_cmpint(json_object_get_int(json_object_object_get(
                            json_object_object_get(m, "ReplicasStates"), "Succeeded")),
                    ==, 1);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(ps, "tf_replica_type")), ==,
                    "PS");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(ps, "state")), ==, "Running");
    g_assert_cmpint(json_object_get_int(json_object_object_get(
                            json_object_object_get(ps, "ReplicasStates"), "Running")),
                    ==, 2);
    g_assert_cmpstr(status_str(c, "reason"), ==, "");
    g_assert_cmpstr(status_str(c, "controlPaused"), ==, "false");
    json_object *conds = (json_object *)(void *)1;
    g_assert_true(json_object_object_get_ex(json_object_object_get(c->job_json, "status"),
                                            "conditions", &conds));
    g_assert_null(conds); /* `conditions: null`, as in the sample */
    /* A restarted operator finds nothing to do and no event to repeat. */
    g_autoptr(TfPlan) again = plan(c);
    g_assert_cmpuint(again->actions->len, ==, 0);
}

static void test_seed_events_once(void)
{
    g_autoptr(Cluster) c = cluster_new("seed-v1alpha1.json");
    settle(c, 5);
    set_all_pods(c, NULL, "Running", -1);
    g_autoptr(TfPlan) p = plan(c);
    g_assert_true(has_event(p, "TFJobRunning", NULL));
    apply(c, p);
    /* Rebuilt from phase/state/replicaStatuses: Created and Running are not announced again. */
    g_assert_true(c->job->status.conditions[KB_TF_COND_RUNNING].present);
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_cmpuint(p2->actions->len, ==, 0);
}

/* ---- v1 ----------------------------------------------------------------------------------- */

/* Create the PodGroup, then everything else, and return with all pods Pending. */
static void bring_up(Cluster *c)
{
    settle(c, 5);
}

static void test_v1_creates(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD_GROUP), ==, 1);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
    g_assert_true(has_event(p, "TFJobCreated", "TFJob research/mnist-dist is created."));
    /* The PodGroup is the first action. */
    g_assert_cmpint(((TfAction *)g_ptr_array_index(p->actions, 0))->type, ==,
                    TF_ACTION_CREATE_POD_GROUP);
    apply(c, p);
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_CREATE_POD), ==, 6);
    g_assert_nonnull(tf_plan_find(p2, TF_ACTION_CREATE_POD, "mnist-dist-worker-3"));
    g_assert_nonnull(tf_plan_find(p2, TF_ACTION_CREATE_POD, "mnist-dist-ps-1"));
    apply(c, p2);
    g_assert_cmpuint(c->pods->len, ==, 6);
    g_assert_cmpuint(c->services->len, ==, 6);
    g_assert_cmpstr(last_condition(c), ==, "Created");
    g_assert_cmpstr(status_str(c, "startTime"), ==, "2026-11-22T05:00:00Z");
}

static void test_v1_succeeds(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Running");
    g_assert_cmpint(replica_count(c, "Worker", "active"), ==, 4);
    g_assert_cmpint(replica_count(c, "PS", "active"), ==, 2);
    /* Default success policy: worker 0 decides. */
    c->now += 60;
    set_pod(c, "mnist-dist-worker-0", "Succeeded", 0, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Succeeded");
    g_assert_cmpstr(status_str(c, "completionTime"), ==, "2026-11-22T05:01:00Z");
    /* cleanPodPolicy Running: the running pods went, the finished one stayed. */
    g_assert_cmpuint(c->pods->len, ==, 1);
    g_assert_cmpint(find_pod(c, "mnist-dist-worker-0"), ==, 0);
    g_assert_null(c->pod_group);
    /* As kubeflow common: the replicas active at success count as succeeded. */
    g_assert_cmpint(replica_count(c, "Worker", "succeeded"), ==, 4);
    g_assert_cmpint(replica_count(c, "Worker", "active"), ==, 0);
    /* The Running condition turned False. */
    g_assert_false(c->job->status.conditions[KB_TF_COND_RUNNING].status);
}

static void test_idempotent(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    /* The same observation twice: the same plan. */
    g_autoptr(TfPlan) a = plan(c);
    g_autoptr(TfPlan) b = plan(c);
    g_assert_cmpuint(a->actions->len, ==, b->actions->len);
    for (guint i = 0; i < a->actions->len; i++) {
        const TfAction *x = g_ptr_array_index(a->actions, i), *y = g_ptr_array_index(b->actions, i);
        g_assert_cmpint(x->type, ==, y->type);
        g_assert_cmpstr(x->name, ==, y->name);
    }
    bring_up(c);
    /* Applied: no create or status update again, however often the planner runs. */
    for (int r = 0; r < 3; r++) {
        g_autoptr(TfPlan) p = plan(c);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_SERVICE), ==, 0);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD_GROUP), ==, 0);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_UPDATE_STATUS), ==, 0);
        g_assert_cmpuint(p->actions->len, ==, 0);
    }
}

static void test_restart_after_operator_restart(void)
{
    /* A new operator sees the same cluster: the decoded status carries everything it needs. */
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    json_object *copy = NULL;
    json_object_deep_copy(c->job_json, &copy, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTfJob) fresh = kb_tfjob_decode(copy, FALSE, &error);
    json_object_put(copy);
    g_assert_no_error(error);
    TfObservation obs = {.job = fresh,
                         .pods = (KbPod *const *)c->pods->pdata,
                         .n_pods = c->pods->len,
                         .services = (KbObjectMeta *const *)c->services->pdata,
                         .n_services = c->services->len,
                         .pod_group = c->pod_group,
                         .now = c->now + 500,
                         .gang_scheduler = "kube-batchd"};
    g_autoptr(TfPlan) p = tf_plan_compute(&obs);
    g_assert_cmpuint(p->actions->len, ==, 0);
}

static void test_no_pod_before_pod_group(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    for (int r = 0; r < 3; r++) {
        /* The PodGroup create never lands (e.g. the informer has not seen it yet). */
        g_autoptr(TfPlan) p = plan(c);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD_GROUP), ==, 1);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
    }
}

static void test_gang_off(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json");
    c->gang = "";
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD_GROUP), ==, 0);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 4);
    const TfAction *w = tf_plan_find(p, TF_ACTION_CREATE_POD, "chiefjob-worker-1");
    json_object *meta = json_object_object_get(w->body, "metadata");
    json_object *ann = json_object_object_get(meta, "annotations");
    g_assert_true(ann == NULL ||
                  json_object_object_get(ann, "scheduling.k8s.io/group-name") == NULL);
}

/* The value at @path ("a.b.0.c") in @o as a string, or NULL. */
static const char *at(json_object *o, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (guint i = 0; o != NULL && parts[i] != NULL; i++) {
        if (json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, atoi(parts[i]));
        else if (!json_object_object_get_ex(o, parts[i], &o))
            return NULL;
    }
    return o != NULL ? json_object_get_string(o) : NULL;
}

/* --gang-api native: the Workload, then its PodGroup, both owned by the job; the pods name the
 * group in spec.schedulingGroup, not in the annotation. */
static void test_gang_native(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json");
    c->api = TF_GANG_API_NATIVE;
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_WORKLOAD), ==, 1);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD_GROUP), ==, 1);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
    g_assert_cmpint(((TfAction *)g_ptr_array_index(p->actions, 0))->type, ==,
                    TF_ACTION_CREATE_WORKLOAD);
    g_assert_cmpint(((TfAction *)g_ptr_array_index(p->actions, 1))->type, ==,
                    TF_ACTION_CREATE_POD_GROUP);
    json_object *wl = tf_plan_find(p, TF_ACTION_CREATE_WORKLOAD, "chiefjob")->body;
    g_assert_cmpstr(at(wl, "apiVersion"), ==, "scheduling.k8s.io/v1beta1");
    g_assert_cmpstr(at(wl, "kind"), ==, "Workload");
    g_assert_cmpstr(at(wl, "spec.controllerRef.kind"), ==, "TFJob");
    g_assert_cmpstr(at(wl, "spec.controllerRef.name"), ==, "chiefjob");
    g_assert_cmpint(json_object_array_length(json_object_object_get(
                            json_object_object_get(wl, "spec"), "podGroupTemplates")),
                    ==, 1);
    /* minAvailable 3 of the job's 4 replicas */
    g_assert_cmpstr(at(wl, "spec.podGroupTemplates.0.schedulingPolicy.gang.minCount"), ==, "3");
    g_assert_cmpstr(at(wl, "metadata.ownerReferences.0.uid"), ==, c->job->meta.uid);
    json_object *pg = tf_plan_find(p, TF_ACTION_CREATE_POD_GROUP, "chiefjob")->body;
    g_assert_cmpstr(at(pg, "apiVersion"), ==, "scheduling.k8s.io/v1beta1");
    g_assert_cmpstr(at(pg, "spec.workloadRef.workloadName"), ==, "chiefjob");
    g_assert_cmpstr(at(pg, "spec.workloadRef.templateName"), ==,
                    at(wl, "spec.podGroupTemplates.0.name"));
    g_assert_cmpstr(at(pg, "spec.schedulingPolicy.gang.minCount"), ==, "3");
    g_assert_cmpstr(at(pg, "spec.priorityClassName"), ==, "high");
    g_assert_null(at(pg, "spec.minMember"));
    g_assert_null(at(pg, "spec.queue"));
    g_assert_cmpstr(at(pg, "metadata.ownerReferences.0.kind"), ==, "TFJob");
    g_assert_cmpstr(at(pg, "metadata.ownerReferences.0.controller"), ==, "true");
    /* the queue is the label kube-batchd reads on a native group (and its Workload) */
    json_object *labels = json_object_object_get(json_object_object_get(pg, "metadata"), "labels");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, "kube-batchd.io/queue")),
                    ==, "research");
    labels = json_object_object_get(json_object_object_get(wl, "metadata"), "labels");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, "kube-batchd.io/queue")),
                    ==, "research");
    apply(c, p);
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_CREATE_WORKLOAD), ==, 0);
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_CREATE_POD), ==, 4);
    json_object *pod = tf_plan_find(p2, TF_ACTION_CREATE_POD, "chiefjob-worker-1")->body;
    g_assert_cmpstr(at(pod, "spec.schedulingGroup.podGroupName"), ==, "chiefjob");
    json_object *ann =
            json_object_object_get(json_object_object_get(pod, "metadata"), "annotations");
    g_assert_true(ann == NULL ||
                  json_object_object_get(ann, "scheduling.k8s.io/group-name") == NULL);
    apply(c, p2);
    g_assert_cmpuint(settle(c, 3), ==, 0);
}

/* The other dialects: apiVersion and what their schemas hold; pods join by annotation. */
static void test_gang_dialects(void)
{
    static const struct {
        TfGangApi api;
        const char *api_version;
        gboolean queue;
    } cases[] = {
            {TF_GANG_API_VOLCANO, "scheduling.volcano.sh/v1beta1", TRUE},
            {TF_GANG_API_KUBE_BATCH, "scheduling.incubator.k8s.io/v1alpha1", TRUE},
            {TF_GANG_API_X_K8S, "scheduling.x-k8s.io/v1alpha1", FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Cluster) c = cluster_new("v1-chief.json");
        c->api = cases[i].api;
        g_autoptr(TfPlan) p = plan(c);
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_WORKLOAD), ==, 0);
        json_object *pg = tf_plan_find(p, TF_ACTION_CREATE_POD_GROUP, "chiefjob")->body;
        g_assert_cmpstr(at(pg, "apiVersion"), ==, cases[i].api_version);
        g_assert_cmpstr(at(pg, "spec.minMember"), ==, "3");
        g_assert_cmpstr(at(pg, "spec.queue"), ==, cases[i].queue ? "research" : NULL);
        apply(c, p);
        g_autoptr(TfPlan) p2 = plan(c);
        json_object *pod = tf_plan_find(p2, TF_ACTION_CREATE_POD, "chiefjob-worker-1")->body;
        g_assert_null(at(pod, "spec.schedulingGroup"));
        json_object *ann =
                json_object_object_get(json_object_object_get(pod, "metadata"), "annotations");
        g_assert_cmpstr(
                json_object_get_string(json_object_object_get(ann, "scheduling.k8s.io/group-name")),
                ==, "chiefjob");
    }
}

static void test_gang_api_parse(void)
{
    TfGangApi api = TF_GANG_API_VOLCANO;
    g_assert_true(tf_gang_api_parse("auto", &api, NULL));
    g_assert_cmpint(api, ==, TF_GANG_API_AUTO);
    g_assert_true(tf_gang_api_parse("x-k8s", &api, NULL));
    g_assert_cmpint(api, ==, TF_GANG_API_X_K8S);
    g_assert_true(tf_gang_api_parse("native", &api, NULL));
    g_assert_cmpint(api, ==, TF_GANG_API_NATIVE);
    g_autoptr(GError) error = NULL;
    g_assert_false(tf_gang_api_parse("Native", &api, &error));
    g_assert_cmpstr(error->message, ==,
                    "--gang-api: unknown value \"Native\" (auto, native, volcano, kube-batch or "
                    "x-k8s)");
    g_assert_cmpint(api, ==, TF_GANG_API_NATIVE);
}

static void test_invalid_job(void)
{
    g_autoptr(Cluster) c = cluster_new_json(json_tokener_parse(
            "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"bad\","
            "\"namespace\":\"ns\",\"uid\":\"u\"},\"spec\":{\"tfReplicaSpecs\":{\"Worker\":"
            "{\"replicas\":-1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}}"
            "}}}"));
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_SERVICE), ==, 0);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD_GROUP), ==, 0);
    g_assert_true(has_event(p, "InvalidTFJobSpec", "spec.tfReplicaSpecs.Worker.replicas"));
    apply(c, p);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_FAILED),
                            "spec.tfReplicaSpecs.Worker.replicas: must not be negative (-1)"));
    g_assert_cmpstr(c->job->status.conditions[KB_TF_COND_FAILED].reason, ==, "TFJobFailed");
    g_assert_cmpuint(settle(c, 3), ==, 0);
}

static void test_invalid_v1alpha1_gets_no_runtime_id(void)
{
    g_autoptr(Cluster) c = cluster_new_json(json_tokener_parse(
            "{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":"
            "\"bad\",\"namespace\":\"ns\"},\"spec\":{\"replicaSpecs\":[{\"tfReplicaType\":"
            "\"WORKER\","
            "\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}}]}}"));
    settle(c, 3);
    g_assert_cmpstr(status_str(c, "state"), ==, "Failed");
    g_assert_cmpstr(status_str(c, "phase"), ==, "Failed");
    g_assert_nonnull(strstr(status_str(c, "reason"), "spec.replicaSpecs: no MASTER"));
    g_assert_cmpuint(c->pods->len, ==, 0);
}

/* ---- restarts and failures ------------------------------------------------------------------ */

static void test_exit_137_restarts(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    set_pod(c, "mnist-dist-worker-2", "Failed", 137, 0, FALSE);
    g_autoptr(TfPlan) p = plan(c);
    g_assert_nonnull(tf_plan_find(p, TF_ACTION_DELETE_POD, "mnist-dist-worker-2"));
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_DELETE_SERVICE), ==, 0);
    g_assert_true(has_event(p, "ExitedWithCode", "exit code 137"));
    apply(c, p);
    g_assert_cmpstr(last_condition(c), ==, "Restarting");
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_RESTARTING),
                            "Worker replica 2: exit code 137 (container received a SIGKILL)"));
    g_assert_cmpint(restarts(c), ==, 1);
    /* Recreated under the same name. */
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_nonnull(tf_plan_find(p2, TF_ACTION_CREATE_POD, "mnist-dist-worker-2"));
    apply(c, p2);
    set_pod(c, "mnist-dist-worker-2", "Running", -1, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Running");
    g_assert_cmpint(restarts(c), ==, 1);
}

/* A pass that recorded the restart on the service but failed before deleting the pod: the next
 * pass deletes it without counting it again. */
static void test_restart_counted_once(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    set_pod(c, "mnist-dist-worker-1", "Failed", 143, 0, FALSE);
    g_autoptr(TfPlan) p = plan(c);
    const TfAction *rec = tf_plan_find(p, TF_ACTION_RECORD_RESTART, "mnist-dist-worker-1");
    g_assert_nonnull(rec);
    /* Recorded before the pod goes. */
    guint ri = 0, di = 0;
    for (guint i = 0; i < p->actions->len; i++) {
        const TfAction *a = g_ptr_array_index(p->actions, i);
        ri = a->type == TF_ACTION_RECORD_RESTART ? i : ri;
        di = a->type == TF_ACTION_DELETE_POD ? i : di;
    }
    g_assert_cmpuint(ri, <, di);
    record_restart(c, rec);
    redecode(c);
    g_assert_cmpint(restarts(c), ==, 1);
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_nonnull(tf_plan_find(p2, TF_ACTION_DELETE_POD, "mnist-dist-worker-1"));
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_RECORD_RESTART), ==, 0);
    apply(c, p2);
    settle(c, 3);
    g_assert_cmpint(restarts(c), ==, 1);
    /* The status says nothing of it (Kubeflow's schema would prune it): the count is derived. */
    g_assert_null(status_str(c, "restartCount"));
}

static void test_exit_1_fails(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    set_pod(c, "mnist-dist-worker-1", "Failed", 1, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_FAILED),
                            "TFJob research/mnist-dist has failed because 1 Worker replica(s) "
                            "failed: Worker replica 1: exit code 1 (general error): permanent"));
    g_assert_cmpint(replica_count(c, "Worker", "failed"), ==, 1);
    /* cleanPodPolicy Running: the failed pod stays for its logs; the running ones went. */
    g_assert_cmpuint(c->pods->len, ==, 1);
}

static void test_undefined_code_says_so(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_pod(c, "mnist-dist-worker-0", "Failed", 77, 0, FALSE);
    settle(c, 3);
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_FAILED), "undefined exit code"));
}

static void test_never_fails_on_any_exit(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json"); /* PS: restartPolicy Never */
    bring_up(c);
    set_pod(c, "mnist-dist-ps-0", "Failed", 137, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_FAILED), "1 PS replica(s) failed"));
}

static void test_on_failure_recreates_failed_pod(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json"); /* Chief: OnFailure */
    bring_up(c);
    set_pod(c, "chiefjob-chief-0", "Failed", -1, 0, FALSE);
    g_autoptr(TfPlan) p = plan(c);
    g_assert_nonnull(tf_plan_find(p, TF_ACTION_DELETE_POD, "chiefjob-chief-0"));
    apply(c, p);
    g_assert_cmpstr(last_condition(c), ==, "Restarting");
}

static void test_backoff_limit(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json"); /* backoffLimit 2, workers ExitCode */
    bring_up(c);
    for (int i = 0; i < 2; i++) {
        set_pod(c, "chiefjob-worker-0", "Failed", 143, 0, FALSE);
        settle(c, 3);
        g_assert_cmpstr(last_condition(c), !=, "Failed");
    }
    g_assert_cmpint(restarts(c), ==, 2);
    set_pod(c, "chiefjob-worker-0", "Failed", 143, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(
            strstr(condition_message(c, KB_TF_COND_FAILED), "reached the specified backoff limit"));
}

static void test_backoff_counts_kubelet_restarts(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json"); /* the chief restarts in place */
    bring_up(c);
    set_pod(c, "chiefjob-chief-0", "Running", -1, 3, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_FAILED), "backoff limit (2"));
}

static void test_active_deadline(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json"); /* activeDeadlineSeconds 3600 */
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    c->now += 100;
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpint(p->requeue_after, ==, 3500);
    apply(c, p);
    c->now = NOW + 3600;
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_FAILED),
                            "active longer than specified deadline"));
}

/* kube-batchd evicted pod @name with its gang (condition kube-batchd.io/GangEvicted True): being
 * deleted, or Failed with @exit_code when @deleting is FALSE. */
static void gang_evict_pod(Cluster *c, const char *name, gboolean deleting, int exit_code)
{
    if (!deleting)
        set_pod(c, name, "Failed", exit_code, 0, FALSE);
    gint i = find_pod(c, name);
    g_assert_cmpint(i, >=, 0);
    KbPod *old = g_ptr_array_index(c->pods, i);
    json_object *pod = NULL;
    json_object_deep_copy(old->meta.raw, &pod, NULL);
    json_object *status = json_object_object_get(pod, "status");
    if (status == NULL) {
        status = json_object_new_object();
        json_object_object_add(pod, "status", status);
    }
    json_object *conds = json_object_new_array(), *cond = json_object_new_object();
    json_object_object_add(cond, "type", json_object_new_string(KB_GANG_EVICTED_CONDITION));
    json_object_object_add(cond, "status", json_object_new_string("True"));
    json_object_object_add(cond, "reason", json_object_new_string(KB_GANG_INCOMPLETE));
    json_object_array_add(conds, cond);
    json_object_object_add(status, "conditions", conds);
    if (deleting)
        json_object_object_add(json_object_object_get(pod, "metadata"), "deletionTimestamp",
                               json_object_new_string("2026-11-22T05:00:00Z"));
    g_autoptr(GError) error = NULL;
    KbPod *p = kb_pod_decode(pod, TRUE, &error);
    g_assert_no_error(error);
    g_assert_true(p->gang_evicted);
    json_object_put(pod);
    g_ptr_array_index(c->pods, i) = p;
    kb_object_unref(old);
}

/* Every pod of the job evicted at once; the API server removes them after one pass. */
static void gang_evict_all(Cluster *c)
{
    for (guint i = 0; i < c->pods->len; i++) {
        g_autofree char *name = g_strdup(((KbPod *)c->pods->pdata[i])->meta.name);
        gang_evict_pod(c, name, TRUE, -1);
    }
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
    apply(c, p);
    /* A second look while they are still going counts nothing more. */
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_RECORD_RESTART), ==, 0);
    apply(c, p2);
    g_ptr_array_set_size(c->pods, 0);
    settle(c, 5);
}

/* A gang evicted whole by the scheduler is one retryable failure of the job per round, under
 * backoffLimit (2 here): two rounds restart it, the third fails it. */
static void test_gang_evicted_backoff(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    guint n_pods = c->pods->len;
    g_assert_cmpuint(n_pods, ==, 4);
    for (gint32 round = 1; round <= 2; round++) {
        for (guint i = 0; i < c->pods->len; i++) {
            g_autofree char *name = g_strdup(((KbPod *)c->pods->pdata[i])->meta.name);
            gang_evict_pod(c, name, TRUE, -1);
        }
        g_autoptr(TfPlan) p = plan(c);
        /* every evicted pod's service records it; one counts */
        g_assert_cmpuint(tf_plan_count(p, TF_ACTION_RECORD_RESTART), ==, n_pods);
        g_assert_true(has_event(p, "GangEvicted", "evicted with its whole gang"));
        apply(c, p);
        g_assert_cmpint(restarts(c), ==, round);
        g_assert_cmpstr(last_condition(c), ==, "Restarting");
        g_assert_nonnull(strstr(condition_message(c, KB_TF_COND_RESTARTING),
                                "its gang was evicted whole by the scheduler"));
        g_autoptr(TfPlan) p2 = plan(c);
        g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_RECORD_RESTART), ==, 0);
        g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_CREATE_POD), ==, 0);
        apply(c, p2);
        /* gone: created again, whole */
        g_ptr_array_set_size(c->pods, 0);
        settle(c, 5);
        g_assert_cmpuint(c->pods->len, ==, n_pods);
        set_all_pods(c, NULL, "Running", -1);
        settle(c, 3);
        g_assert_cmpstr(last_condition(c), ==, "Running");
        g_assert_cmpint(restarts(c), ==, round);
    }
    gang_evict_all(c);
    g_assert_cmpstr(last_condition(c), ==, "Failed");
    g_assert_nonnull(
            strstr(condition_message(c, KB_TF_COND_FAILED), "reached the specified backoff limit"));
}

/* A member the eviction stopped is no failure of its own: even an exit code the table calls
 * permanent (1) restarts the job when the pod carries the gang's eviction; without it, it fails
 * the job (test_exit_1_fails). */
static void test_gang_evicted_failed_pod(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    gang_evict_pod(c, "mnist-dist-worker-1", FALSE, 1);
    g_autoptr(TfPlan) p = plan(c);
    g_assert_nonnull(tf_plan_find(p, TF_ACTION_DELETE_POD, "mnist-dist-worker-1"));
    apply(c, p);
    g_assert_cmpstr(last_condition(c), ==, "Restarting");
    g_assert_cmpint(restarts(c), ==, 1);
    settle(c, 3);
    g_assert_cmpint(find_pod(c, "mnist-dist-worker-1"), >=, 0);
    g_assert_cmpstr(last_condition(c), !=, "Failed");
}

static void test_deleting_pod_not_recreated(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-2ps-4w.json");
    bring_up(c);
    set_pod(c, "mnist-dist-worker-1", "Running", -1, 0, TRUE);
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 0);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_DELETE_POD), ==, 0);
}

/* ---- success rules ------------------------------------------------------------------------- */

static void test_chief_decides(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json");
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    settle(c, 3);
    /* Workers finishing does not end a job that has a chief. */
    set_all_pods(c, "-worker-", "Succeeded", 0);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Running");
    set_pod(c, "chiefjob-chief-0", "Succeeded", 0, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Succeeded");
}

static void test_all_workers_policy(void)
{
    json_object *j = load("v1-2ps-4w.json");
    json_object_object_add(json_object_object_get(j, "spec"), "successPolicy",
                           json_object_new_string("AllWorkers"));
    g_autoptr(Cluster) c = cluster_new_json(j);
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    set_pod(c, "mnist-dist-worker-0", "Succeeded", 0, 0, FALSE);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Running");
    set_all_pods(c, "-worker-", "Succeeded", 0);
    settle(c, 3);
    g_assert_cmpstr(last_condition(c), ==, "Succeeded");
}

/* ---- cleanup and TTL ------------------------------------------------------------------------- */

/* The 2 PS, 4 worker job succeeded with cleanPodPolicy @policy (NULL: none given). */
static Cluster *finished_with_policy(const char *policy)
{
    json_object *j = load("v1-2ps-4w.json");
    json_object *rp = json_object_object_get(json_object_object_get(j, "spec"), "runPolicy");
    if (policy != NULL)
        json_object_object_add(rp, "cleanPodPolicy", json_object_new_string(policy));
    else
        json_object_object_del(rp, "cleanPodPolicy");
    Cluster *c = cluster_new_json(j);
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    set_pod(c, "mnist-dist-worker-3", "Succeeded", 0, 0, FALSE);
    set_pod(c, "mnist-dist-worker-0", "Succeeded", 0, 0, FALSE);
    settle(c, 4);
    g_assert_cmpstr(last_condition(c), ==, "Succeeded");
    return c;
}

static void test_cleanup_all(void)
{
    g_autoptr(Cluster) c = finished_with_policy("All");
    g_assert_cmpuint(c->pods->len, ==, 0);
    g_assert_cmpuint(c->services->len, ==, 0);
    g_assert_null(c->pod_group);
}

static void test_cleanup_running(void)
{
    g_autoptr(Cluster) c = finished_with_policy("Running");
    g_assert_cmpuint(c->pods->len, ==, 2);
    g_assert_cmpuint(c->services->len, ==, 2);
    g_assert_null(c->pod_group);
}

static void test_cleanup_none(void)
{
    g_autoptr(Cluster) c = finished_with_policy("None");
    g_assert_cmpuint(c->pods->len, ==, 6);
    g_assert_cmpuint(c->services->len, ==, 6);
    g_assert_null(c->pod_group); /* the gang is over either way */
}

/* A v1 job without cleanPodPolicy deletes no pod when it succeeds (None, as training-operator
 * since v1.7): its PS pods, still running, outlive the success; later plans delete none. */
static void test_cleanup_v1_default(void)
{
    g_autoptr(Cluster) c = finished_with_policy(NULL);
    g_assert_cmpint(c->job->clean_pod_policy, ==, KB_TF_CLEAN_NONE);
    g_assert_cmpuint(c->pods->len, ==, 6);
    g_assert_cmpuint(c->services->len, ==, 6);
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("mnist-dist-ps-%d", i);
        gint at = find_pod(c, name);
        g_assert_cmpint(at, >=, 0);
        g_assert_cmpint(((KbPod *)g_ptr_array_index(c->pods, at))->phase, ==, KB_POD_RUNNING);
    }
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_DELETE_POD), ==, 0);
    g_assert_null(c->pod_group); /* the gang is over either way */
}

/* The same job written as kubeflow.org/v1beta1 (run policy in spec, no cleanPodPolicy): the
 * betas' default, Running, deletes the PS pods still running when the job succeeds. Read in its
 * own version, and read through v1 after conversion (the default made explicit), alike. */
static void test_cleanup_beta_default(gconstpointer data)
{
    gboolean through_v1 = GPOINTER_TO_INT(data);
    json_object *j = load("v1-2ps-4w.json");
    json_object *spec = json_object_object_get(j, "spec");
    json_object_object_del(spec, "runPolicy");
    json_object_object_add(j, "apiVersion", json_object_new_string("kubeflow.org/v1beta1"));
    if (through_v1) {
        g_autoptr(GError) error = NULL;
        json_object *v1 = kb_tfconv_convert(j, KB_TF_API_V1, &error);
        g_assert_no_error(error);
        json_object_put(j);
        j = v1;
    }
    g_autoptr(Cluster) c = cluster_new_json(j);
    g_assert_cmpint(c->job->api, ==, through_v1 ? KB_TF_API_V1 : KB_TF_API_V1BETA1);
    g_assert_cmpint(c->job->clean_pod_policy, ==, KB_TF_CLEAN_RUNNING);
    bring_up(c);
    set_all_pods(c, NULL, "Running", -1);
    set_pod(c, "mnist-dist-worker-3", "Succeeded", 0, 0, FALSE);
    set_pod(c, "mnist-dist-worker-0", "Succeeded", 0, 0, FALSE);
    settle(c, 4);
    g_assert_cmpstr(last_condition(c), ==, "Succeeded");
    g_assert_cmpuint(c->pods->len, ==, 2);
    g_assert_cmpint(find_pod(c, "mnist-dist-ps-0"), <, 0);
    g_assert_cmpint(find_pod(c, "mnist-dist-worker-0"), >=, 0);
}

static void test_ttl(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-chief.json"); /* ttlSecondsAfterFinished 100 */
    bring_up(c);
    set_pod(c, "chiefjob-chief-0", "Succeeded", 0, 0, FALSE);
    settle(c, 3);
    g_assert_false(c->job_deleted);
    c->now += 40;
    g_autoptr(TfPlan) p = plan(c);
    g_assert_cmpint(p->requeue_after, ==, 60);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_DELETE_JOB), ==, 0);
    c->now += 60;
    g_autoptr(TfPlan) p2 = plan(c);
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_DELETE_JOB), ==, 1);
    /* The job deletion comes last. */
    g_assert_cmpint(((TfAction *)g_ptr_array_index(p2->actions, p2->actions->len - 1))->type, ==,
                    TF_ACTION_DELETE_JOB);
}

/* ---- dynamic workers ------------------------------------------------------------------------ */

static void test_scale_up_and_down(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-dynamic.json");
    bring_up(c);
    g_assert_cmpuint(c->pods->len, ==, 4); /* 1 PS + 3 workers */
    TfScaleDecision grow = {.kind = TF_SCALE_GROW, .workers = 5, .reason = "idle GPUs"};
    g_autoptr(TfPlan) p = plan_scaled(c, &grow);
    g_assert_cmpuint(tf_plan_count(p, TF_ACTION_CREATE_POD), ==, 2);
    g_assert_nonnull(tf_plan_find(p, TF_ACTION_CREATE_POD, "elastic-worker-4"));
    g_assert_true(has_event(p, "TFJobScaledUp", "workers 3 -> 5"));
    apply(c, p);
    g_assert_cmpint(c->job->status.workers, ==, 5);
    g_assert_cmpuint(settle(c, 3), ==, 0); /* the count persists in the services */
    g_assert_cmpuint(c->pods->len, ==, 6);

    TfScaleDecision shrink = {.kind = TF_SCALE_SHRINK, .workers = 1, .reason = "pressure"};
    g_autoptr(TfPlan) p2 = plan_scaled(c, &shrink);
    /* Clamped to the minimum of 2: workers 2, 3, 4 go, highest index first. */
    g_assert_cmpuint(tf_plan_count(p2, TF_ACTION_DELETE_POD), ==, 3);
    g_assert_nonnull(tf_plan_find(p2, TF_ACTION_DELETE_POD, "elastic-worker-2"));
    g_assert_nonnull(tf_plan_find(p2, TF_ACTION_DELETE_SERVICE, "elastic-worker-4"));
    g_assert_null(tf_plan_find(p2, TF_ACTION_DELETE_POD, "elastic-worker-1"));
    g_assert_true(has_event(p2, "TFJobScaledDown", "pressure"));
    apply(c, p2);
    /* The count is the services': nothing of it lives in the status. */
    g_assert_cmpint(c->job->status.workers, ==, 2);
    g_assert_null(
            json_object_object_get(json_object_object_get(c->job_json, "status"), "autoscaling"));
    g_assert_cmpuint(settle(c, 3), ==, 0);
    g_assert_cmpuint(c->pods->len, ==, 3);
}

/* A shrink that stops half-way (the first failed delete ends a pass) must not grow back: the
 * services, which say how many workers the job has, go before the pods. */
static void test_shrink_interrupted(void)
{
    g_autoptr(Cluster) c = cluster_new("v1-dynamic.json");
    bring_up(c);
    TfScaleDecision grow = {.kind = TF_SCALE_GROW, .workers = 5, .reason = "idle GPUs"};
    g_autoptr(TfPlan) p = plan_scaled(c, &grow);
    apply(c, p);
    settle(c, 3);
    g_assert_cmpuint(c->pods->len, ==, 6);
    TfScaleDecision shrink = {.kind = TF_SCALE_SHRINK, .workers = 2, .reason = "pressure"};
    g_autoptr(TfPlan) p2 = plan_scaled(c, &shrink);
    guint n = 0;
    while (n < p2->actions->len &&
           ((TfAction *)g_ptr_array_index(p2->actions, n))->type != TF_ACTION_DELETE_POD &&
           ((TfAction *)g_ptr_array_index(p2->actions, n))->type != TF_ACTION_DELETE_SERVICE)
        n++;
    g_assert_cmpuint(n, <, p2->actions->len);
    TfActionType first = ((TfAction *)g_ptr_array_index(p2->actions, n))->type;
    while (n < p2->actions->len && ((TfAction *)g_ptr_array_index(p2->actions, n))->type == first)
        n++;
    g_ptr_array_set_size(p2->actions, n); /* the pass failed on the other kind of delete */
    apply(c, p2);
    g_autoptr(TfPlan) p3 = plan(c);
    g_assert_cmpuint(tf_plan_count(p3, TF_ACTION_CREATE_POD), ==, 0);
    g_assert_cmpuint(tf_plan_count(p3, TF_ACTION_CREATE_SERVICE), ==, 0);
    apply(c, p3);
    settle(c, 3);
    g_assert_cmpuint(c->pods->len, ==, 3); /* 1 PS + 2 workers */
    g_assert_cmpint(c->job->status.workers, ==, 2);
}

/* ---- autoscaling decisions --------------------------------------------------------------------
 */

static KbTfJob *dynamic_job(void)
{
    g_autoptr(GError) error = NULL;
    json_object *j = load("v1-dynamic.json");
    KbTfJob *job = kb_tfjob_decode(j, FALSE, &error);
    json_object_put(j);
    g_assert_no_error(error);
    return job;
}

static void test_autoscale_grow(void)
{
    g_autoptr(KbTfJob) job = dynamic_job(); /* 3 workers x 2 GPUs, 2..6 */
    TfScaleDecision d;
    tf_autoscale_decide(job, 0, NULL, 0, 5, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_GROW);
    g_assert_cmpint(d.workers, ==, 5); /* 5 idle GPUs hold 2 more workers */
    g_assert_nonnull(strstr(d.reason, "5 idle GPUs and nothing waits in queue research"));
    tf_autoscale_decide(job, 0, NULL, 0, 100, &d);
    g_assert_cmpint(d.workers, ==, 6); /* capped at the maximum */
}

static void test_autoscale_no_grow_when_queue_busy(void)
{
    g_autoptr(KbTfJob) job = dynamic_job();
    TfWaitingGroup w[] = {{.name = "ns/other", .queue = "research", .priority = 0}};
    TfScaleDecision d;
    tf_autoscale_decide(job, 0, w, 1, 16, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_NONE);
    g_assert_nonnull(strstr(d.reason, "1 group(s) wait in queue research"));
    /* A group waiting in another queue does not hold this one back. */
    w[0].queue = "default";
    tf_autoscale_decide(job, 0, w, 1, 16, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_GROW);
}

static void test_autoscale_no_idle_gpu(void)
{
    g_autoptr(KbTfJob) job = dynamic_job();
    TfScaleDecision d;
    tf_autoscale_decide(job, 0, NULL, 0, 1, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_NONE);
    g_assert_cmpint(d.workers, ==, 3);
}

static void test_autoscale_shrink(void)
{
    g_autoptr(KbTfJob) job = dynamic_job();
    job->status.workers = 6;
    TfWaitingGroup w[] = {
            {.name = "ns/urgent", .queue = "research", .priority = 100, .gpus_needed = 3}};
    TfScaleDecision d;
    tf_autoscale_decide(job, 10, w, 1, 0, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_SHRINK);
    g_assert_cmpint(d.workers, ==, 4); /* 3 GPUs: two 2-GPU workers */
    g_assert_nonnull(
            strstr(d.reason, "group ns/urgent (priority 100 > 10) waits in queue research"));
    /* Unknown need: all the way to the minimum. */
    w[0].gpus_needed = 0;
    tf_autoscale_decide(job, 10, w, 1, 0, &d);
    g_assert_cmpint(d.workers, ==, 2);
}

static void test_autoscale_shrink_rules(void)
{
    g_autoptr(KbTfJob) job = dynamic_job();
    TfWaitingGroup w[] = {{.name = "ns/low", .queue = "research", .priority = 5}};
    TfScaleDecision d;
    /* Equal or lower priority does not shrink. */
    job->status.workers = 5;
    tf_autoscale_decide(job, 5, w, 1, 0, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_NONE);
    /* At the minimum nothing shrinks. */
    job->status.workers = 2;
    w[0].priority = 50;
    tf_autoscale_decide(job, 5, w, 1, 0, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_NONE);
    g_assert_nonnull(strstr(d.reason, "at its minimum of 2 workers"));
}

static void test_autoscale_not_dynamic(void)
{
    g_autoptr(GError) error = NULL;
    json_object *j = load("v1-2ps-4w.json");
    g_autoptr(KbTfJob) job = kb_tfjob_decode(j, FALSE, &error);
    json_object_put(j);
    TfScaleDecision d;
    tf_autoscale_decide(job, 0, NULL, 0, 64, &d);
    g_assert_cmpint(d.kind, ==, TF_SCALE_NONE);
    g_assert_nonnull(strstr(d.reason, "enableDynamicWorker is off"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/operator/plan/seed-v1alpha1/lifecycle", test_seed_lifecycle);
    g_test_add_func("/operator/plan/seed-v1alpha1/events-once", test_seed_events_once);
    g_test_add_func("/operator/plan/v1/creates-2ps-4w", test_v1_creates);
    g_test_add_func("/operator/plan/v1/succeeds", test_v1_succeeds);
    g_test_add_func("/operator/plan/idempotent/same-observation", test_idempotent);
    g_test_add_func("/operator/plan/idempotent/operator-restart",
                    test_restart_after_operator_restart);
    g_test_add_func("/operator/plan/gang/no-pod-before-pod-group", test_no_pod_before_pod_group);
    g_test_add_func("/operator/plan/gang/off", test_gang_off);
    g_test_add_func("/operator/plan/gang/native", test_gang_native);
    g_test_add_func("/operator/plan/gang/dialects", test_gang_dialects);
    g_test_add_func("/operator/plan/gang/api-flag", test_gang_api_parse);
    g_test_add_func("/operator/plan/invalid/v1", test_invalid_job);
    g_test_add_func("/operator/plan/invalid/v1alpha1", test_invalid_v1alpha1_gets_no_runtime_id);
    g_test_add_func("/operator/plan/restart/counted-once", test_restart_counted_once);
    g_test_add_func("/operator/plan/restart/gang-evicted-under-backoff-limit",
                    test_gang_evicted_backoff);
    g_test_add_func("/operator/plan/restart/gang-evicted-failed-pod", test_gang_evicted_failed_pod);
    g_test_add_func("/operator/plan/restart/exit-137", test_exit_137_restarts);
    g_test_add_func("/operator/plan/restart/exit-1-fails", test_exit_1_fails);
    g_test_add_func("/operator/plan/restart/undefined-code", test_undefined_code_says_so);
    g_test_add_func("/operator/plan/restart/never", test_never_fails_on_any_exit);
    g_test_add_func("/operator/plan/restart/on-failure", test_on_failure_recreates_failed_pod);
    g_test_add_func("/operator/plan/restart/backoff-limit", test_backoff_limit);
    g_test_add_func("/operator/plan/restart/backoff-kubelet", test_backoff_counts_kubelet_restarts);
    g_test_add_func("/operator/plan/restart/deleting-pod", test_deleting_pod_not_recreated);
    g_test_add_func("/operator/plan/deadline", test_active_deadline);
    g_test_add_func("/operator/plan/success/chief-decides", test_chief_decides);
    g_test_add_func("/operator/plan/success/all-workers", test_all_workers_policy);
    g_test_add_func("/operator/plan/cleanup/all", test_cleanup_all);
    g_test_add_func("/operator/plan/cleanup/running", test_cleanup_running);
    g_test_add_func("/operator/plan/cleanup/none", test_cleanup_none);
    g_test_add_func("/operator/plan/cleanup/v1-default-none", test_cleanup_v1_default);
    g_test_add_data_func("/operator/plan/cleanup/v1beta1-default-running", GINT_TO_POINTER(FALSE),
                         test_cleanup_beta_default);
    g_test_add_data_func("/operator/plan/cleanup/v1beta1-through-v1-running", GINT_TO_POINTER(TRUE),
                         test_cleanup_beta_default);
    g_test_add_func("/operator/plan/ttl", test_ttl);
    g_test_add_func("/operator/plan/scale/up-and-down", test_scale_up_and_down);
    g_test_add_func("/operator/plan/scale/shrink-interrupted", test_shrink_interrupted);
    g_test_add_func("/operator/autoscale/grow", test_autoscale_grow);
    g_test_add_func("/operator/autoscale/queue-busy", test_autoscale_no_grow_when_queue_busy);
    g_test_add_func("/operator/autoscale/no-idle-gpu", test_autoscale_no_idle_gpu);
    g_test_add_func("/operator/autoscale/shrink", test_autoscale_shrink);
    g_test_add_func("/operator/autoscale/shrink-rules", test_autoscale_shrink_rules);
    g_test_add_func("/operator/autoscale/not-dynamic", test_autoscale_not_dynamic);
    return g_test_run();
}
