/*
 * Pods, services, PodGroup and TF_CONFIG for a TFJob (see tf-build.h).
 */
#include "operator/tf-build.h"

#include <string.h>

/* The standard TensorFlow gRPC server a v1alpha1 PS runs when the user gives no container. */
static const char ps_server_script[] =
        "import json, os\n"
        "import tensorflow as tf\n"
        "c = json.loads(os.environ['TF_CONFIG'])\n"
        "s = tf.train.Server(tf.train.ClusterSpec(c['cluster']), job_name=c['task']['type'],\n"
        "                    task_index=c['task']['index'])\n"
        "s.join()\n";

const char *tf_build_api_version(const KbTfJob *job)
{
    return kb_tf_api_version(job->api);
}

char *tf_build_replica_name(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    if (job->api == KB_TF_API_V1ALPHA1)
        return g_strdup_printf("%.40s-%s-%s-%d", job->meta.name, kb_tf_replica_type_to_lower(type),
                               job->runtime_id != NULL ? job->runtime_id : "", index);
    return g_strdup_printf("%s-%s-%d", job->meta.name, kb_tf_replica_type_to_lower(type), index);
}

char *tf_build_runtime_id(void)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    char id[5];
    for (int i = 0; i < 4; i++)
        id[i] = alphabet[g_random_int_range(0, (gint32)sizeof(alphabet) - 1)];
    id[4] = '\0';
    return g_strdup(id);
}

static char *replica_address(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    g_autofree char *name = tf_build_replica_name(job, type, index);
    return g_strdup_printf("%s.%s.svc:%d", name,
                           job->meta.namespace_ != NULL ? job->meta.namespace_ : "default",
                           job->specs[type].port);
}

static json_object *addresses(const KbTfJob *job, KbTfReplicaType type)
{
    json_object *list = json_object_new_array();
    gint32 n = kb_tfjob_effective_replicas(job, type);
    for (gint32 i = 0; i < n; i++) {
        char *a = replica_address(job, type, i);
        json_object_array_add(list, json_object_new_string(a));
        g_free(a);
    }
    return list;
}

static json_object *task(KbTfReplicaType type, gint32 index)
{
    json_object *t = json_object_new_object();
    json_object_object_add(t, "type", json_object_new_string(kb_tf_replica_type_to_lower(type)));
    json_object_object_add(t, "index", json_object_new_int(index));
    return t;
}

static json_object *sparse_cluster(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    json_object *sc = json_object_new_object();
    json_object *workers = json_object_new_object();
    json_object *ps;
    if (type == KB_TF_PS) {
        ps = json_object_new_array();
        char *a = replica_address(job, type, index);
        json_object_array_add(ps, json_object_new_string(a));
        g_free(a);
    } else if (type == KB_TF_WORKER) {
        ps = addresses(job, KB_TF_PS);
        char key[16], *a = replica_address(job, type, index);
        g_snprintf(key, sizeof(key), "%d", index);
        json_object_object_add(workers, key, json_object_new_string(a));
        g_free(a);
    } else {
        ps = json_object_new_array();
    }
    json_object_object_add(sc, "worker", workers);
    json_object_object_add(sc, "ps", ps);
    return sc;
}

char *tf_build_tf_config(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    static const KbTfReplicaType order[] = {KB_TF_CHIEF, KB_TF_MASTER, KB_TF_WORKER, KB_TF_PS};
    json_object *cfg = json_object_new_object();
    if (job->dynamic_workers) {
        json_object_object_add(cfg, "sparseCluster", sparse_cluster(job, type, index));
        json_object_object_add(cfg, "task", task(type, index));
    } else {
        json_object *cluster = json_object_new_object();
        for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
            if (job->specs[order[i]].present)
                json_object_object_add(cluster, kb_tf_replica_type_to_lower(order[i]),
                                       addresses(job, order[i]));
        }
        json_object_object_add(cfg, "cluster", cluster);
        json_object_object_add(cfg, "task", task(type, index));
        json_object_object_add(cfg, "environment", json_object_new_string("cloud"));
    }
    char *s = g_strdup(json_object_to_json_string_ext(cfg, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(cfg);
    return s;
}

static gboolean is_master_role(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    if (kb_tfjob_has_chief(job))
        return type == KB_TF_CHIEF || type == KB_TF_MASTER;
    return type == KB_TF_WORKER && index == 0;
}

json_object *tf_build_labels(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    json_object *l = json_object_new_object();
    char idx[16];
    g_snprintf(idx, sizeof(idx), "%d", index);
    json_object_object_add(l, TF_LABEL_JOB_NAME, json_object_new_string(job->meta.name));
    json_object_object_add(l, TF_LABEL_REPLICA_TYPE,
                           json_object_new_string(kb_tf_replica_type_to_lower(type)));
    json_object_object_add(l, TF_LABEL_REPLICA_INDEX, json_object_new_string(idx));
    json_object_object_add(l, TF_LABEL_OPERATOR, json_object_new_string(TF_OPERATOR_NAME));
    if (is_master_role(job, type, index))
        json_object_object_add(l, TF_LABEL_JOB_ROLE, json_object_new_string("master"));
    if (job->api == KB_TF_API_V1ALPHA1) {
        /* The original v1alpha1 operator's labels, for users' existing selectors. */
        json_object_object_add(l, "kubeflow.org", json_object_new_string(""));
        json_object_object_add(l, "tf_job_name", json_object_new_string(job->meta.name));
        json_object_object_add(l, "job_type",
                               json_object_new_string(kb_tf_replica_type_to_alpha(type)));
        json_object_object_add(l, "runtime_id",
                               json_object_new_string(job->runtime_id ? job->runtime_id : ""));
        json_object_object_add(l, "task_index", json_object_new_string(idx));
    }
    return l;
}

json_object *tf_build_owner_ref(const KbTfJob *job)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string(tf_build_api_version(job)));
    json_object_object_add(o, "kind", json_object_new_string("TFJob"));
    json_object_object_add(o, "name", json_object_new_string(job->meta.name));
    json_object_object_add(o, "uid", json_object_new_string(job->meta.uid ? job->meta.uid : ""));
    json_object_object_add(o, "controller", json_object_new_boolean(TRUE));
    json_object_object_add(o, "blockOwnerDeletion", json_object_new_boolean(TRUE));
    return o;
}

/* metadata for an object of the job: name, namespace, labels, ownerReferences. */
static json_object *object_meta(const KbTfJob *job, const char *name, json_object *labels)
{
    json_object *m = json_object_new_object();
    json_object *owners = json_object_new_array();
    json_object_array_add(owners, tf_build_owner_ref(job));
    json_object_object_add(m, "name", json_object_new_string(name));
    if (job->meta.namespace_ != NULL)
        json_object_object_add(m, "namespace", json_object_new_string(job->meta.namespace_));
    json_object_object_add(m, "labels", labels);
    json_object_object_add(m, "ownerReferences", owners);
    return m;
}

/* @parent[@key] as an object, created when absent or of another type. Borrowed. */
static json_object *ensure_object(json_object *parent, const char *key)
{
    json_object *v;
    if (json_object_object_get_ex(parent, key, &v) && json_object_is_type(v, json_type_object))
        return v;
    v = json_object_new_object();
    json_object_object_add(parent, key, v);
    return v;
}

static json_object *ensure_array(json_object *parent, const char *key)
{
    json_object *v;
    if (json_object_object_get_ex(parent, key, &v) && json_object_is_type(v, json_type_array))
        return v;
    v = json_object_new_array();
    json_object_object_add(parent, key, v);
    return v;
}

static json_object *ps_server_container(const KbTfJob *job)
{
    json_object *c = json_object_new_object();
    json_object *cmd = json_object_new_array();
    json_object *ports = json_object_new_array();
    json_object *port = json_object_new_object();
    json_object_array_add(cmd, json_object_new_string("python"));
    json_object_array_add(cmd, json_object_new_string("-c"));
    json_object_array_add(cmd, json_object_new_string(ps_server_script));
    json_object_object_add(port, "name", json_object_new_string(TF_PORT_NAME));
    json_object_object_add(port, "containerPort", json_object_new_int(job->specs[KB_TF_PS].port));
    json_object_array_add(ports, port);
    json_object_object_add(c, "name", json_object_new_string(KB_TF_DEFAULT_CONTAINER));
    json_object_object_add(c, "image", json_object_new_string(job->tf_image));
    json_object_object_add(c, "command", cmd);
    json_object_object_add(c, "ports", ports);
    return c;
}

/* Put TF_CONFIG into the tensorflow container's env, replacing a user-given one. */
static void set_tf_config(json_object *containers, const char *tf_config)
{
    for (size_t i = 0; i < json_object_array_length(containers); i++) {
        json_object *c = json_object_array_get_idx(containers, i), *name;
        if (!json_object_is_type(c, json_type_object) ||
            !json_object_object_get_ex(c, "name", &name) ||
            g_strcmp0(json_object_get_string(name), KB_TF_DEFAULT_CONTAINER) != 0)
            continue;
        json_object *env = ensure_array(c, "env");
        json_object *fresh = json_object_new_array();
        for (size_t e = 0; e < json_object_array_length(env); e++) {
            json_object *ev = json_object_array_get_idx(env, e), *n;
            if (json_object_object_get_ex(ev, "name", &n) &&
                g_strcmp0(json_object_get_string(n), "TF_CONFIG") == 0)
                continue;
            json_object_array_add(fresh, json_object_get(ev));
        }
        json_object *var = json_object_new_object();
        json_object_object_add(var, "name", json_object_new_string("TF_CONFIG"));
        json_object_object_add(var, "value", json_object_new_string(tf_config));
        json_object_array_add(fresh, var);
        json_object_object_add(c, "env", fresh);
        return;
    }
}

static void merge_string_map(json_object *dst, json_object *src)
{
    json_object_object_foreach(src, k, v) json_object_object_add(dst, k, json_object_get(v));
}

json_object *tf_build_pod(const KbTfJob *job, KbTfReplicaType type, gint32 index,
                          const char *gang_scheduler)
{
    return tf_build_pod_in(job, type, index, gang_scheduler, TF_GANG_API_VOLCANO);
}

json_object *tf_build_pod_in(const KbTfJob *job, KbTfReplicaType type, gint32 index,
                             const char *gang_scheduler, TfGangApi api)
{
    const KbTfReplicaSpec *rs = &job->specs[type];
    g_autofree char *name = tf_build_replica_name(job, type, index);
    g_autofree char *tf_config = tf_build_tf_config(job, type, index);
    json_object *tmpl = NULL, *tmeta, *v;
    if (rs->template_ == NULL || json_object_deep_copy(rs->template_, &tmpl, NULL) != 0) {
        g_clear_pointer(&tmpl, json_object_put);
        tmpl = json_object_new_object();
    }
    json_object *pod = json_object_new_object();
    json_object *labels = tf_build_labels(job, type, index);
    json_object *meta = object_meta(job, name, labels);
    json_object *annotations = ensure_object(meta, "annotations");

    /* The template's labels and annotations first: ours win on conflicts. */
    if (json_object_object_get_ex(tmpl, "metadata", &tmeta) &&
        json_object_is_type(tmeta, json_type_object)) {
        json_object *user_labels = json_object_new_object();
        if (json_object_object_get_ex(tmeta, "labels", &v) &&
            json_object_is_type(v, json_type_object))
            merge_string_map(user_labels, v);
        merge_string_map(user_labels, labels);
        json_object_object_add(meta, "labels", user_labels);
        labels = user_labels;
        if (json_object_object_get_ex(tmeta, "annotations", &v) &&
            json_object_is_type(v, json_type_object))
            merge_string_map(annotations, v);
    }
    json_object *spec = ensure_object(tmpl, "spec");
    json_object *containers = ensure_array(spec, "containers");
    if (!rs->has_tf_container && type == KB_TF_PS)
        json_object_array_add(containers, ps_server_container(job));
    set_tf_config(containers, tf_config);

    json_object_object_add(
            spec, "restartPolicy",
            json_object_new_string(rs->restart_policy == KB_TF_RESTART_EXIT_CODE
                                           ? "Never"
                                           : kb_tf_restart_policy_to_string(rs->restart_policy)));
    gboolean gang = gang_scheduler != NULL && *gang_scheduler != '\0';
    const char *sched = NULL;
    if (!(json_object_object_get_ex(spec, "schedulerName", &v) &&
          json_object_get_string_len(v) > 0)) {
        sched = job->scheduler_name != NULL ? job->scheduler_name : gang ? gang_scheduler : NULL;
        if (sched != NULL)
            json_object_object_add(spec, "schedulerName", json_object_new_string(sched));
    }
    if (gang && api == TF_GANG_API_NATIVE) {
        /* Immutable once created: a pod never moves to another group. */
        json_object *sg = json_object_new_object();
        json_object_object_add(sg, "podGroupName", json_object_new_string(job->meta.name));
        json_object_object_add(spec, "schedulingGroup", sg);
    } else if (gang) {
        json_object_object_add(annotations, TF_ANNOTATION_GROUP,
                               json_object_new_string(job->meta.name));
        json_object_object_add(labels, TF_LABEL_POD_GROUP, json_object_new_string(job->meta.name));
    }
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    json_object_object_add(pod, "metadata", meta);
    json_object_object_add(pod, "spec", json_object_get(spec));
    json_object_put(tmpl);
    return pod;
}

json_object *tf_build_service(const KbTfJob *job, KbTfReplicaType type, gint32 index)
{
    g_autofree char *name = tf_build_replica_name(job, type, index);
    json_object *svc = json_object_new_object();
    json_object *spec = json_object_new_object();
    json_object *selector = json_object_new_object();
    json_object *ports = json_object_new_array();
    json_object *port = json_object_new_object();
    json_object *labels = tf_build_labels(job, type, index), *v;

    /* The selector picks exactly this replica's pod. */
    static const char *const keys[] = {TF_LABEL_JOB_NAME, TF_LABEL_REPLICA_TYPE,
                                       TF_LABEL_REPLICA_INDEX};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
        if (json_object_object_get_ex(labels, keys[i], &v))
            json_object_object_add(selector, keys[i], json_object_get(v));
    json_object_object_add(port, "name", json_object_new_string(TF_PORT_NAME));
    json_object_object_add(port, "port", json_object_new_int(job->specs[type].port));
    json_object_object_add(port, "targetPort", json_object_new_int(job->specs[type].port));
    json_object_array_add(ports, port);
    json_object_object_add(spec, "clusterIP", json_object_new_string("None"));
    json_object_object_add(spec, "selector", selector);
    json_object_object_add(spec, "ports", ports);
    json_object_object_add(svc, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(svc, "kind", json_object_new_string("Service"));
    json_object_object_add(svc, "metadata", object_meta(job, name, labels));
    json_object_object_add(svc, "spec", spec);
    return svc;
}

static gint32 gang_replicas(const KbTfJob *job, KbTfReplicaType type)
{
    if (type == KB_TF_WORKER && job->dynamic_workers)
        return job->specs[type].present ? job->min_workers : 0;
    return job->specs[type].present ? job->specs[type].replicas : 0;
}

gint32 tf_build_min_member(const KbTfJob *job)
{
    gint64 sum = 0;
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        sum += gang_replicas(job, t);
    if (job->min_available > 0 && job->min_available < sum)
        return job->min_available;
    return (gint32)MAX(sum, 1);
}

static const struct {
    const char *name, *api_version;
} gang_apis[] = {
        [TF_GANG_API_VOLCANO] = {"volcano", "scheduling.volcano.sh/v1beta1"},
        [TF_GANG_API_KUBE_BATCH] = {"kube-batch", "scheduling.incubator.k8s.io/v1alpha1"},
        [TF_GANG_API_X_K8S] = {"x-k8s", "scheduling.x-k8s.io/v1alpha1"},
        [TF_GANG_API_NATIVE] = {"native", "scheduling.k8s.io/v1beta1"},
        [TF_GANG_API_AUTO] = {"auto", NULL},
};

gboolean tf_gang_api_parse(const char *s, TfGangApi *api, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(gang_apis); i++) {
        if (g_strcmp0(s, gang_apis[i].name) == 0) {
            *api = i;
            return TRUE;
        }
    }
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "--gang-api: unknown value \"%s\" (auto, native, volcano, kube-batch or x-k8s)",
                s != NULL ? s : "");
    return FALSE;
}

const char *tf_gang_api_to_string(TfGangApi api)
{
    return (guint)api < G_N_ELEMENTS(gang_apis) ? gang_apis[api].name : "?";
}

const char *tf_gang_api_version(TfGangApi api)
{
    return (guint)api < G_N_ELEMENTS(gang_apis) ? gang_apis[api].api_version : NULL;
}

/* The labels of the job's PodGroup and Workload; the queue label is what kube-batchd reads on a
 * native group (the native API has no queue field). */
static json_object *group_labels(const KbTfJob *job, TfGangApi api)
{
    json_object *labels = json_object_new_object();
    json_object_object_add(labels, TF_LABEL_JOB_NAME, json_object_new_string(job->meta.name));
    json_object_object_add(labels, TF_LABEL_OPERATOR, json_object_new_string(TF_OPERATOR_NAME));
    if (api == TF_GANG_API_NATIVE && job->queue != NULL)
        json_object_object_add(labels, KB_QUEUE_LABEL, json_object_new_string(job->queue));
    return labels;
}

static json_object *gang_policy(const KbTfJob *job)
{
    json_object *policy = json_object_new_object(), *gang = json_object_new_object();
    json_object_object_add(gang, "minCount", json_object_new_int(tf_build_min_member(job)));
    json_object_object_add(policy, "gang", gang);
    return policy;
}

json_object *tf_build_workload(const KbTfJob *job)
{
    json_object *wl = json_object_new_object(), *spec = json_object_new_object();
    json_object *ref = json_object_new_object(), *tpl = json_object_new_object();
    json_object *tpls = json_object_new_array();
    json_object_object_add(ref, "apiGroup", json_object_new_string("kubeflow.org"));
    json_object_object_add(ref, "kind", json_object_new_string("TFJob"));
    json_object_object_add(ref, "name", json_object_new_string(job->meta.name));
    json_object_object_add(tpl, "name", json_object_new_string(TF_WORKLOAD_TEMPLATE));
    json_object_object_add(tpl, "schedulingPolicy", gang_policy(job));
    json_object_array_add(tpls, tpl);
    json_object_object_add(spec, "controllerRef", ref);
    json_object_object_add(spec, "podGroupTemplates", tpls);
    json_object_object_add(wl, "apiVersion",
                           json_object_new_string(tf_gang_api_version(TF_GANG_API_NATIVE)));
    json_object_object_add(wl, "kind", json_object_new_string("Workload"));
    json_object_object_add(wl, "metadata",
                           object_meta(job, job->meta.name, group_labels(job, TF_GANG_API_NATIVE)));
    json_object_object_add(wl, "spec", spec);
    return wl;
}

static json_object *native_pod_group(const KbTfJob *job)
{
    json_object *pg = json_object_new_object(), *spec = json_object_new_object();
    json_object *ref = json_object_new_object();
    json_object_object_add(ref, "workloadName", json_object_new_string(job->meta.name));
    json_object_object_add(ref, "templateName", json_object_new_string(TF_WORKLOAD_TEMPLATE));
    json_object_object_add(spec, "workloadRef", ref);
    json_object_object_add(spec, "schedulingPolicy", gang_policy(job));
    if (job->priority_class != NULL)
        json_object_object_add(spec, "priorityClassName",
                               json_object_new_string(job->priority_class));
    json_object_object_add(pg, "apiVersion",
                           json_object_new_string(tf_gang_api_version(TF_GANG_API_NATIVE)));
    json_object_object_add(pg, "kind", json_object_new_string("PodGroup"));
    json_object_object_add(pg, "metadata",
                           object_meta(job, job->meta.name, group_labels(job, TF_GANG_API_NATIVE)));
    json_object_object_add(pg, "spec", spec);
    return pg;
}

json_object *tf_build_pod_group(const KbTfJob *job)
{
    return tf_build_pod_group_in(job, TF_GANG_API_VOLCANO);
}

json_object *tf_build_pod_group_in(const KbTfJob *job, TfGangApi api)
{
    if (api == TF_GANG_API_NATIVE)
        return native_pod_group(job);
    static const KbTfReplicaType order[] = {KB_TF_CHIEF, KB_TF_MASTER, KB_TF_PS, KB_TF_WORKER,
                                            KB_TF_EVALUATOR};
    gint32 min_member = tf_build_min_member(job), left = min_member;
    KbResources min_res;
    kb_resources_clear(&min_res);
    for (guint i = 0; i < G_N_ELEMENTS(order) && left > 0; i++) {
        gint32 n = MIN(gang_replicas(job, order[i]), left);
        for (gint32 k = 0; k < n; k++)
            kb_resources_add(&min_res, &job->specs[order[i]].requests);
        left -= n;
    }
    json_object *pg = json_object_new_object();
    json_object *labels = group_labels(job, api);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "minMember", json_object_new_int(min_member));
    /* scheduler-plugins' schema has neither queue nor priority class */
    if (job->queue != NULL && api != TF_GANG_API_X_K8S)
        json_object_object_add(spec, "queue", json_object_new_string(job->queue));
    if (job->priority_class != NULL && api != TF_GANG_API_X_K8S)
        json_object_object_add(spec, "priorityClassName",
                               json_object_new_string(job->priority_class));
    if (!kb_resources_is_zero(&min_res))
        json_object_object_add(spec, "minResources", kb_resources_encode(&min_res));
    json_object_object_add(pg, "apiVersion", json_object_new_string(tf_gang_api_version(api)));
    json_object_object_add(pg, "kind", json_object_new_string("PodGroup"));
    json_object_object_add(pg, "metadata", object_meta(job, job->meta.name, labels));
    json_object_object_add(pg, "spec", spec);
    return pg;
}
