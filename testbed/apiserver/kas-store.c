/* The object store, event history and watchers of the in-memory API server (see kas-store.h). */
#include "testbed/apiserver/kas-store.h"

#include <stdlib.h>
#include <string.h>

#include "kube/kb-json.h"
#include "testbed/apiserver/kas-convert.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-schema.h"
#include "testbed/apiserver/kas-status.h"

G_DEFINE_QUARK(kas-error-quark, kas_error)

/* A watch's reader takes its events once this many wait, or once the oldest has waited
 * KasStoreOptions.watch_linger_us (see lingers()). */
#define KAS_WATCH_LINGER_EVENTS 64
#define KAS_WATCH_LINGER_US 1000

static const struct {
    const char *reason;
    guint http;
} err_table[] = {
    [KAS_ERR_BAD_REQUEST] = { "BadRequest", 400 },
    [KAS_ERR_FORBIDDEN] = { "Forbidden", 403 },
    [KAS_ERR_NOT_FOUND] = { "NotFound", 404 },
    [KAS_ERR_METHOD] = { "MethodNotAllowed", 405 },
    [KAS_ERR_NOT_ACCEPTABLE] = { "NotAcceptable", 406 },
    [KAS_ERR_ALREADY_EXISTS] = { "AlreadyExists", 409 },
    [KAS_ERR_CONFLICT] = { "Conflict", 409 },
    [KAS_ERR_EXPIRED] = { "Expired", 410 },
    [KAS_ERR_TOO_LARGE] = { "RequestEntityTooLarge", 413 },
    [KAS_ERR_UNSUPPORTED_TYPE] = { "UnsupportedMediaType", 415 },
    [KAS_ERR_INVALID] = { "Invalid", 422 },
    [KAS_ERR_TOO_MANY] = { "TooManyRequests", 429 },
    [KAS_ERR_INTERNAL] = { "InternalError", 500 },
    [KAS_ERR_UNAVAILABLE] = { "ServiceUnavailable", 503 },
    [KAS_ERR_TIMEOUT] = { "Timeout", 504 },
};

const char *kas_err_reason(KasErr code)
{
    return (guint)code < G_N_ELEMENTS(err_table) ? err_table[code].reason : "InternalError";
}

guint kas_err_http(KasErr code)
{
    return (guint)code < G_N_ELEMENTS(err_table) ? err_table[code].http : 500;
}

KasErr kas_err_from_http(guint http)
{
    for (guint i = 0; i < G_N_ELEMENTS(err_table); i++)
        if (err_table[i].http == http && i != KAS_ERR_ALREADY_EXISTS)
            return (KasErr)i;
    return http >= 500 ? KAS_ERR_INTERNAL : KAS_ERR_BAD_REQUEST;
}

/* ---- built-in resources ------------------------------------------------------------------------ */

static const char *const pod_fields[] = { "spec.nodeName",     "spec.schedulerName",
                                          "status.phase",      "spec.restartPolicy",
                                          "spec.serviceAccountName", "status.podIP",
                                          "status.nominatedNodeName", NULL };
static const char *const node_fields[] = { "spec.unschedulable", NULL };
static const char *const ns_fields[] = { "status.phase", NULL };
static const char *const event_fields[] = {
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid",  "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type", NULL
};
static const char *const secret_fields[] = { "type", NULL };
static const char *const slice_fields[] = { "spec.nodeName", "spec.driver", "spec.pool.name", NULL };

typedef struct {
    KasKind kind;
    const char *group, *version, *plural, *singular, *kind_name, *short_names, *categories;
    gboolean namespaced, has_status;
    const char *const *fields;
    /* Served only where one of these group/versions is enabled (KasStoreOptions.scheduling_*),
     * and at the enabled ones of its versions. 0: always. */
    guint gates;
} Builtin;

#define GATE_V1BETA1  1u
#define GATE_V1ALPHA3 2u

static const Builtin builtins[] = {
    { KAS_KIND_NAMESPACE, "", "v1", "namespaces", "namespace", "Namespace", "ns", NULL, FALSE,
      TRUE, ns_fields },
    { KAS_KIND_NODE, "", "v1", "nodes", "node", "Node", "no", NULL, FALSE, TRUE, node_fields },
    { KAS_KIND_POD, "", "v1", "pods", "pod", "Pod", "po", "all", TRUE, TRUE, pod_fields },
    { KAS_KIND_SERVICE, "", "v1", "services", "service", "Service", "svc", "all", TRUE, TRUE,
      NULL },
    /* where a Service's ports lead: CRD conversion webhooks given as a Service (kas-convert) */
    { KAS_KIND_GENERIC, "", "v1", "endpoints", "endpoints", "Endpoints", "ep", NULL, TRUE, FALSE,
      NULL },
    { KAS_KIND_EVENT, "", "v1", "events", "event", "Event", "ev", NULL, TRUE, FALSE,
      event_fields },
    { KAS_KIND_GENERIC, "", "v1", "configmaps", "configmap", "ConfigMap", "cm", NULL, TRUE, FALSE,
      NULL },
    { KAS_KIND_GENERIC, "", "v1", "secrets", "secret", "Secret", NULL, NULL, TRUE, FALSE,
      secret_fields },
    { KAS_KIND_GENERIC, "", "v1", "persistentvolumeclaims", "persistentvolumeclaim",
      "PersistentVolumeClaim", "pvc", NULL, TRUE, TRUE, NULL },
    { KAS_KIND_GENERIC, "", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "sa",
      NULL, TRUE, FALSE, NULL },
    { KAS_KIND_GENERIC, "", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume",
      "pv", NULL, FALSE, TRUE, NULL },
    { KAS_KIND_GENERIC, "", "v1", "replicationcontrollers", "replicationcontroller",
      "ReplicationController", "rc", "all", TRUE, TRUE, NULL },
    /* What kube-scheduler's informers list and watch besides pods and nodes (it waits for every
     * one of them to sync before it schedules anything), and the workloads that own pods. */
    { KAS_KIND_GENERIC, "apps", "v1", "deployments", "deployment", "Deployment", "deploy", "all",
      TRUE, TRUE, NULL },
    { KAS_KIND_GENERIC, "apps", "v1", "replicasets", "replicaset", "ReplicaSet", "rs", "all",
      TRUE, TRUE, NULL },
    { KAS_KIND_GENERIC, "apps", "v1", "statefulsets", "statefulset", "StatefulSet", "sts", "all",
      TRUE, TRUE, NULL },
    { KAS_KIND_GENERIC, "apps", "v1", "daemonsets", "daemonset", "DaemonSet", "ds", "all", TRUE,
      TRUE, NULL },
    { KAS_KIND_GENERIC, "storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass",
      "sc", NULL, FALSE, FALSE, NULL },
    { KAS_KIND_GENERIC, "storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", NULL, NULL,
      FALSE, FALSE, NULL },
    { KAS_KIND_GENERIC, "storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", NULL,
      NULL, FALSE, FALSE, NULL },
    { KAS_KIND_GENERIC, "coordination.k8s.io", "v1", "leases", "lease", "Lease", NULL, NULL, TRUE,
      FALSE, NULL },
    { KAS_KIND_GENERIC, "scheduling.k8s.io", "v1", "priorityclasses", "priorityclass",
      "PriorityClass", "pc", NULL, FALSE, FALSE, NULL },
    /* Kubernetes' own gang API (1.37: v1beta1, and v1alpha3 with CompositePodGroup; each off
     * unless enabled): kas-gang.c. A Workload or PodGroup is one object served at either version
     * (the two versions of these types carry the same fields). */
    { KAS_KIND_GENERIC, "scheduling.k8s.io", "v1beta1,v1alpha3", "workloads", "workload",
      "Workload", NULL, NULL, TRUE, FALSE, NULL, GATE_V1BETA1 | GATE_V1ALPHA3 },
    { KAS_KIND_GENERIC, "scheduling.k8s.io", "v1beta1,v1alpha3", "podgroups", "podgroup",
      "PodGroup", NULL, NULL, TRUE, TRUE, NULL, GATE_V1BETA1 | GATE_V1ALPHA3 },
    { KAS_KIND_GENERIC, "scheduling.k8s.io", "v1alpha3", "compositepodgroups",
      "compositepodgroup", "CompositePodGroup", NULL, NULL, TRUE, TRUE, NULL, GATE_V1ALPHA3 },
    /* Dynamic Resource Allocation (GA in 1.34, served by default): kas-dra.c */
    { KAS_KIND_GENERIC, "resource.k8s.io", "v1", "deviceclasses", "deviceclass", "DeviceClass",
      NULL, NULL, FALSE, FALSE, NULL },
    { KAS_KIND_GENERIC, "resource.k8s.io", "v1", "resourceclaims", "resourceclaim",
      "ResourceClaim", NULL, NULL, TRUE, TRUE, NULL },
    { KAS_KIND_GENERIC, "resource.k8s.io", "v1", "resourceclaimtemplates",
      "resourceclaimtemplate", "ResourceClaimTemplate", NULL, NULL, TRUE, FALSE, NULL },
    { KAS_KIND_GENERIC, "resource.k8s.io", "v1", "resourceslices", "resourceslice",
      "ResourceSlice", NULL, NULL, FALSE, FALSE, slice_fields },
    { KAS_KIND_GENERIC, "policy", "v1,v1beta1", "poddisruptionbudgets", "poddisruptionbudget",
      "PodDisruptionBudget", "pdb", NULL, TRUE, TRUE, NULL },
    { KAS_KIND_GENERIC, "events.k8s.io", "v1,v1beta1", "events", "event", "Event", "ev", NULL,
      TRUE, FALSE, NULL },
    /* RBAC objects: stored and served; kas-rbac.c evaluates them. */
    { KAS_KIND_GENERIC, "rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole",
      "ClusterRole", NULL, NULL, FALSE, FALSE, NULL },
    { KAS_KIND_GENERIC, "rbac.authorization.k8s.io", "v1", "clusterrolebindings",
      "clusterrolebinding", "ClusterRoleBinding", NULL, NULL, FALSE, FALSE, NULL },
    { KAS_KIND_GENERIC, "rbac.authorization.k8s.io", "v1", "roles", "role", "Role", NULL, NULL,
      TRUE, FALSE, NULL },
    { KAS_KIND_GENERIC, "rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding",
      "RoleBinding", NULL, NULL, TRUE, FALSE, NULL },
    { KAS_KIND_CRD, "apiextensions.k8s.io", "v1", "customresourcedefinitions",
      "customresourcedefinition", "CustomResourceDefinition", "crd,crds", "api-extensions",
      FALSE, TRUE, NULL },
};

/* ---- the store ------------------------------------------------------------------------------------ */

typedef struct {
    KasRes *res;
    KasObj *obj; /* final state (DELETED: with the deletion's resourceVersion) */
    KasObj *old; /* previous state for MODIFIED, else NULL */
    KasEvType type;
} HistEntry;

typedef struct {
    KasObj *obj;
    KasEvType type;
} WItem;

struct KasWatcher {
    KasStore *store;
    KasRes *res;
    char *ns;
    char *api_version;
    KasSelector *labels;
    KasSelector *fields;
    GPtrArray *initial; /* KasObj*, sent first as ADDED */
    guint initial_pos;
    gboolean initial_end_bookmark;
    guint64 start_rv; /* where the watch started: bookmarks must be newer */
    GQueue queue; /* WItem* */
    gint64 first_queued; /* monotonic µs the oldest event in queue arrived, when queue is not empty */
    guint cap;
    gboolean closed;
    char *error_line; /* pending ERROR event */
    GCond cond;
};

struct KasStore {
    GMutex lock;
    guint64 rv;
    GHashTable *res_by_key; /* "group/plural" -> KasRes*, owned */
    GPtrArray *res_order;   /* KasRes*, borrowed */
    HistEntry *ring;
    guint ring_cap, ring_head, ring_len;
    guint64 expired_rv; /* resuming after an rv below this needs events no longer kept */
    guint watch_queue_cap;
    gint64 watch_linger_us;
    guint n_watchers;
    GHashTable *owner_counts; /* uid -> count of objects naming it as owner */
    guint64 seq;
    KasStoreHook hook;
    gpointer hook_data;
    gboolean shutting_down;
};

KasObj *kas_obj_ref(KasObj *obj)
{
    g_atomic_int_inc(&obj->ref);
    return obj;
}

void kas_obj_unref(KasObj *obj)
{
    if (obj == NULL || !g_atomic_int_dec_and_test(&obj->ref))
        return;
    g_free(obj->json);
    g_free(obj->strs);
    g_free(obj->labels);
    g_free(obj->fields);
    g_free(obj->owners);
    g_free(obj);
}

json_object *kas_obj_parse(const KasObj *obj)
{
    return kas_json_parse_stored(obj->json);
}

/* One allocation holding a NULL-terminated pointer array and the strings it points to. */
static char **pack_strv(GPtrArray *strs)
{
    if (strs->len == 0)
        return NULL;
    gsize total = (strs->len + 1) * sizeof(char *);
    for (guint i = 0; i < strs->len; i++)
        total += strlen(g_ptr_array_index(strs, i)) + 1;
    char **v = g_malloc(total);
    char *p = (char *)(v + strs->len + 1);
    for (guint i = 0; i < strs->len; i++) {
        const char *s = g_ptr_array_index(strs, i);
        gsize n = strlen(s) + 1;
        memcpy(p, s, n);
        v[i] = p;
        p += n;
    }
    v[strs->len] = NULL;
    return v;
}

static char *scalar_string(json_object *v)
{
    if (json_object_is_type(v, json_type_string))
        return g_strdup(json_object_get_string(v));
    if (json_object_is_type(v, json_type_boolean))
        return g_strdup(json_object_get_boolean(v) ? "true" : "false");
    if (v == NULL || json_object_is_type(v, json_type_object) ||
        json_object_is_type(v, json_type_array))
        return NULL;
    return g_strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static KasObj *obj_new(const KasRes *res, json_object *jo)
{
    KasObj *obj = g_new0(KasObj, 1);
    obj->ref = 1;
    json_object *meta = kas_json_get(jo, "metadata");
    const char *ns = kas_json_get_string(meta, "namespace");
    const char *name = kas_json_get_string(meta, "name");
    const char *uid = kas_json_get_string(meta, "uid");
    ns = ns != NULL && res->namespaced ? ns : "";
    name = name != NULL ? name : "";
    uid = uid != NULL ? uid : "";
    obj->strs = g_strdup_printf("%s/%s%c%s%c%s%c%s", ns, name, 0, ns, 0, name, 0, uid);
    obj->key = obj->strs;
    obj->ns = obj->key + strlen(obj->key) + 1;
    obj->name = obj->ns + strlen(obj->ns) + 1;
    obj->uid = obj->name + strlen(obj->name) + 1;
    const char *rv = kas_json_get_string(meta, "resourceVersion");
    obj->rv = rv != NULL ? g_ascii_strtoull(rv, NULL, 10) : 0;
    obj->created = kas_time_parse(kas_json_get_string(meta, "creationTimestamp"));
    obj->deleting = kas_json_get_string(meta, "deletionTimestamp") != NULL;
    json_object *fin = kas_json_get(meta, "finalizers");
    obj->has_finalizers = json_object_is_type(fin, json_type_array) &&
                          json_object_array_length(fin) > 0;

    g_autoptr(GPtrArray) strs = g_ptr_array_new_with_free_func(g_free);
    json_object *labels = kas_json_get(meta, "labels");
    if (json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, k, v)
        {
            char *s = scalar_string(v);
            if (s == NULL)
                continue;
            g_ptr_array_add(strs, g_strdup(k));
            g_ptr_array_add(strs, s);
        }
    }
    obj->labels = pack_strv(strs);
    g_ptr_array_set_size(strs, 0);
    for (const char *const *f = res->field_paths; f != NULL && *f != NULL; f++) {
        char *s = scalar_string(kas_json_get(jo, *f));
        if (s == NULL)
            continue;
        g_ptr_array_add(strs, g_strdup(*f));
        g_ptr_array_add(strs, s);
    }
    obj->fields = pack_strv(strs);
    g_ptr_array_set_size(strs, 0);
    json_object *owners = kas_json_get(meta, "ownerReferences");
    for (gsize i = 0; json_object_is_type(owners, json_type_array) &&
                      i < json_object_array_length(owners);
         i++) {
        const char *ou = kas_json_get_string(json_object_array_get_idx(owners, i), "uid");
        if (ou != NULL)
            g_ptr_array_add(strs, g_strdup(ou));
    }
    obj->owners = pack_strv(strs);
    /* apiVersion and kind first, so that a list can drop them from its items cheaply */
    json_object *ordered = json_object_new_object();
    static const char *const head[] = { "apiVersion", "kind" };
    for (guint i = 0; i < G_N_ELEMENTS(head); i++) {
        json_object *v = NULL;
        if (json_object_object_get_ex(jo, head[i], &v))
            json_object_object_add(ordered, head[i], json_object_get(v));
    }
    json_object_object_foreach(jo, k, v)
    {
        if (strcmp(k, "apiVersion") != 0 && strcmp(k, "kind") != 0)
            json_object_object_add(ordered, k, json_object_get(v));
    }
    obj->json = kas_json_dump(ordered);
    json_object_put(ordered);
    obj->len = strlen(obj->json);
    return obj;
}

gboolean kas_res_has_field(const KasRes *res, const char *field)
{
    if (strcmp(field, "metadata.name") == 0 || strcmp(field, "metadata.namespace") == 0)
        return TRUE;
    for (const char *const *f = res->field_paths; f != NULL && *f != NULL; f++)
        if (strcmp(*f, field) == 0)
            return TRUE;
    return FALSE;
}

const char *kas_obj_field(const KasRes *res, const KasObj *obj, const char *field)
{
    if (strcmp(field, "metadata.name") == 0)
        return obj->name;
    if (strcmp(field, "metadata.namespace") == 0)
        return obj->ns;
    const char *v = kas_selector_lookup_pairs(field, obj->fields);
    if (v != NULL)
        return v;
    return kas_res_has_field(res, field) ? "" : NULL;
}

static int key_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    return strcmp(a, b);
}

static KasRes *res_new(void)
{
    KasRes *res = g_new0(KasRes, 1);
    res->objects = g_tree_new_full(key_cmp, NULL, NULL, (GDestroyNotify)kas_obj_unref);
    res->watchers = g_ptr_array_new();
    res->active = TRUE;
    return res;
}

static void res_free(gpointer p)
{
    KasRes *res = p;
    g_free(res->group);
    g_free(res->plural);
    g_free(res->singular);
    g_free(res->kind_name);
    g_free(res->list_kind);
    g_strfreev(res->versions);
    g_free(res->storage_version);
    g_strfreev(res->short_names);
    g_strfreev(res->categories);
    json_object_put(res->crd);
    g_tree_unref(res->objects);
    g_ptr_array_unref(res->watchers);
    g_free(res);
}

static void add_res(KasStore *store, KasRes *res)
{
    g_hash_table_insert(store->res_by_key, g_strdup_printf("%s/%s", res->group, res->plural), res);
    g_ptr_array_add(store->res_order, res);
}

/* The versions of @b that @enabled (GATE_*) serves, preferred first. */
static char **gated_versions(const Builtin *b, guint enabled)
{
    g_auto(GStrv) all = g_strsplit(b->version, ",", -1);
    GPtrArray *on = g_ptr_array_new();
    for (guint i = 0; all[i] != NULL; i++) {
        guint gate = strcmp(all[i], "v1beta1") == 0    ? GATE_V1BETA1
                     : strcmp(all[i], "v1alpha3") == 0 ? GATE_V1ALPHA3
                                                       : 0;
        if (b->gates == 0 || (gate & enabled) != 0)
            g_ptr_array_add(on, g_strdup(all[i]));
    }
    g_ptr_array_add(on, NULL);
    return (char **)g_ptr_array_free(on, FALSE);
}

static void add_builtins(KasStore *store, guint enabled)
{
    for (guint i = 0; i < G_N_ELEMENTS(builtins); i++) {
        const Builtin *b = &builtins[i];
        if (b->gates != 0 && (b->gates & enabled) == 0)
            continue;
        KasRes *res = res_new();
        res->kind = b->kind;
        res->group = g_strdup(b->group);
        res->plural = g_strdup(b->plural);
        res->singular = g_strdup(b->singular);
        res->kind_name = g_strdup(b->kind_name);
        res->list_kind = g_strdup_printf("%sList", b->kind_name);
        res->versions = gated_versions(b, enabled);
        res->storage_version = g_strdup(res->versions[0]);
        res->short_names = b->short_names != NULL ? g_strsplit(b->short_names, ",", -1)
                                                  : g_new0(char *, 1);
        res->categories = b->categories != NULL ? g_strsplit(b->categories, ",", -1)
                                                : g_new0(char *, 1);
        res->namespaced = b->namespaced;
        res->has_status = b->has_status;
        /* the registries that set metadata.generation */
        res->uses_generation = b->kind == KAS_KIND_CRD ||
                               strcmp(b->plural, "priorityclasses") == 0 || b->gates != 0 ||
                               strcmp(b->plural, "deviceclasses") == 0 ||
                               strcmp(b->plural, "resourceslices") == 0 ||
                               strcmp(b->plural, "poddisruptionbudgets") == 0;
        res->field_paths = b->fields;
        add_res(store, res);
    }
}

KasStore *kas_store_new(const KasStoreOptions *opts)
{
    KasStore *store = g_new0(KasStore, 1);
    g_mutex_init(&store->lock);
    store->res_by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, res_free);
    store->res_order = g_ptr_array_new();
    store->ring_cap = opts != NULL && opts->history > 0 ? opts->history : 10000;
    store->ring = g_new0(HistEntry, store->ring_cap);
    store->watch_queue_cap = opts != NULL && opts->watch_queue > 0 ? opts->watch_queue : 10000;
    store->watch_linger_us =
            opts != NULL && opts->watch_linger_us > 0 ? opts->watch_linger_us : KAS_WATCH_LINGER_US;
    store->owner_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    store->rv = 1;
    guint gates = 0;
    if (opts != NULL && opts->scheduling_v1beta1)
        gates |= GATE_V1BETA1;
    if (opts != NULL && opts->scheduling_v1alpha3)
        gates |= GATE_V1ALPHA3;
    add_builtins(store, gates);
    return store;
}

static void hist_clear(HistEntry *e)
{
    kas_obj_unref(e->obj);
    kas_obj_unref(e->old);
    memset(e, 0, sizeof *e);
}

static void drop_history(KasStore *store)
{
    while (store->ring_len > 0) {
        HistEntry *e = &store->ring[store->ring_head];
        hist_clear(e);
        store->ring_head = (store->ring_head + 1) % store->ring_cap;
        store->ring_len--;
    }
    store->expired_rv = store->rv;
}

void kas_store_free(KasStore *store)
{
    if (store == NULL)
        return;
    drop_history(store);
    g_free(store->ring);
    g_ptr_array_unref(store->res_order);
    g_hash_table_unref(store->res_by_key);
    g_hash_table_unref(store->owner_counts);
    g_mutex_clear(&store->lock);
    g_free(store);
}

void kas_store_set_hook(KasStore *store, KasStoreHook hook, gpointer user_data)
{
    kas_store_lock(store);
    store->hook = hook;
    store->hook_data = user_data;
    kas_store_unlock(store);
}

void kas_store_lock(KasStore *store)
{
    g_mutex_lock(&store->lock);
}

void kas_store_unlock(KasStore *store)
{
    g_mutex_unlock(&store->lock);
}

guint64 kas_store_rv_locked(KasStore *store)
{
    return store->rv;
}

guint64 kas_store_next_seq_locked(KasStore *store)
{
    return ++store->seq;
}

char *kas_res_qualified(const KasRes *res)
{
    return res->group[0] == '\0' ? g_strdup(res->plural)
                                 : g_strdup_printf("%s.%s", res->plural, res->group);
}

char *kas_res_api_version(const KasRes *res, const char *version)
{
    return res->group[0] == '\0' ? g_strdup(version)
                                 : g_strdup_printf("%s/%s", res->group, version);
}

/* ---- registry --------------------------------------------------------------------------------------- */

KasRes *kas_store_find_locked(KasStore *store, const char *group, const char *version,
                              const char *plural)
{
    char key[512];
    g_snprintf(key, sizeof key, "%s/%s", group, plural);
    KasRes *res = g_hash_table_lookup(store->res_by_key, key);
    if (res == NULL || !res->active)
        return NULL;
    if (version != NULL && !g_strv_contains((const char *const *)res->versions, version))
        return NULL;
    return res;
}

KasRes *kas_store_find_kind_locked(KasStore *store, const char *group, const char *kind)
{
    for (guint i = 0; i < store->res_order->len; i++) {
        KasRes *res = g_ptr_array_index(store->res_order, i);
        if (res->active && strcmp(res->group, group) == 0 && strcmp(res->kind_name, kind) == 0)
            return res;
    }
    return NULL;
}

GPtrArray *kas_store_resources_locked(KasStore *store)
{
    return store->res_order;
}

/* Kubernetes version priority: GA before beta before alpha, higher numbers first. */
static int version_rank(const char *v, int *major, int *minor)
{
    *major = 0, *minor = 0;
    if (v[0] != 'v' || !g_ascii_isdigit(v[1]))
        return 3;
    char *end = NULL;
    *major = (int)strtol(v + 1, &end, 10);
    if (*end == '\0')
        return 0;
    int rank = g_str_has_prefix(end, "beta") ? 1 : g_str_has_prefix(end, "alpha") ? 2 : 3;
    if (rank < 3)
        *minor = (int)strtol(end + (rank == 1 ? 4 : 5), NULL, 10);
    return rank;
}

static int version_cmp(gconstpointer a, gconstpointer b)
{
    const char *va = *(const char *const *)a, *vb = *(const char *const *)b;
    int ma, na, mb, nb;
    int ra = version_rank(va, &ma, &na), rb = version_rank(vb, &mb, &nb);
    if (ra != rb)
        return ra - rb;
    if (ra == 3)
        return strcmp(va, vb);
    if (ma != mb)
        return mb - ma;
    return nb - na;
}

static char **json_strv(json_object *arr)
{
    GPtrArray *v = g_ptr_array_new();
    for (gsize i = 0; json_object_is_type(arr, json_type_array) && i < json_object_array_length(arr);
         i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (json_object_is_type(e, json_type_string))
            g_ptr_array_add(v, g_strdup(json_object_get_string(e)));
    }
    g_ptr_array_add(v, NULL);
    return (char **)g_ptr_array_free(v, FALSE);
}

static gboolean crd_invalid(GError **error, const char *crd_name, const char *field,
                            const char *value, const char *why)
{
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    if (value != NULL)
        kas_field_errors_addf(errs, field, "Invalid value: \"%s\": %s", value, why);
    else
        kas_field_errors_add(errs, field, why);
    return kas_field_errors_check_kind(errs, "CustomResourceDefinition", "apiextensions.k8s.io",
                                       crd_name, error);
}

/* Check @crd; on success fill *@versions (sorted served versions) and *@storage. */
static gboolean crd_check(json_object *crd, GPtrArray *versions, const char **storage,
                          gboolean *status, GError **error)
{
    const char *name = kas_json_get_string(crd, "metadata.name");
    const char *group = kas_json_get_string(crd, "spec.group");
    const char *plural = kas_json_get_string(crd, "spec.names.plural");
    const char *kind = kas_json_get_string(crd, "spec.names.kind");
    const char *scope = kas_json_get_string(crd, "spec.scope");
    if (group == NULL || strchr(group, '.') == NULL)
        return crd_invalid(error, name, "spec.group", group != NULL ? group : "",
                           "should be a domain with at least one dot");
    if (plural == NULL || plural[0] == '\0')
        return crd_invalid(error, name, "spec.names.plural", NULL, "Required value");
    if (kind == NULL || kind[0] == '\0')
        return crd_invalid(error, name, "spec.names.kind", NULL, "Required value");
    if (scope == NULL || (strcmp(scope, "Namespaced") != 0 && strcmp(scope, "Cluster") != 0))
        return crd_invalid(error, name, "spec.scope", scope != NULL ? scope : "",
                           "must be Namespaced or Cluster");
    g_autofree char *want = g_strdup_printf("%s.%s", plural, group);
    if (name == NULL || strcmp(name, want) != 0)
        return crd_invalid(error, name, "metadata.name", name != NULL ? name : "",
                           "must be spec.names.plural+\".\"+spec.group");
    json_object *vs = kas_json_get(crd, "spec.versions");
    guint n_storage = 0;
    for (gsize i = 0; json_object_is_type(vs, json_type_array) && i < json_object_array_length(vs);
         i++) {
        json_object *v = json_object_array_get_idx(vs, i);
        const char *vn = kas_json_get_string(v, "name");
        json_object *served = kas_json_get(v, "served"), *stor = kas_json_get(v, "storage");
        if (vn == NULL)
            return crd_invalid(error, name, "spec.versions[].name", NULL, "Required value");
        if (json_object_get_boolean(stor)) {
            n_storage++;
            *storage = vn;
            if (kas_json_get(v, "subresources.status") != NULL)
                *status = TRUE;
        }
        if (json_object_get_boolean(served))
            g_ptr_array_add(versions, g_strdup(vn));
    }
    if (n_storage != 1)
        return crd_invalid(error, name, "spec.versions", NULL,
                           "Invalid value: must have exactly one version marked as storage version");
    if (versions->len == 0)
        return crd_invalid(error, name, "spec.versions", NULL,
                           "Invalid value: must have at least one served version");
    g_ptr_array_sort(versions, version_cmp);
    return TRUE;
}

gboolean kas_store_register_crd_locked(KasStore *store, json_object *crd, GError **error)
{
    g_autoptr(GPtrArray) versions = g_ptr_array_new_with_free_func(g_free);
    const char *storage = NULL;
    gboolean status = FALSE;
    if (!crd_check(crd, versions, &storage, &status, error))
        return FALSE;
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    kas_schema_check_crd(crd, errs);
    kas_convert_check_crd(crd, errs);
    if (!kas_field_errors_check_kind(errs, "CustomResourceDefinition", "apiextensions.k8s.io",
                                     kas_json_get_string(crd, "metadata.name"), error))
        return FALSE;
    const char *group = kas_json_get_string(crd, "spec.group");
    const char *plural = kas_json_get_string(crd, "spec.names.plural");
    char key[512];
    g_snprintf(key, sizeof key, "%s/%s", group, plural);
    KasRes *res = g_hash_table_lookup(store->res_by_key, key);
    if (res != NULL && res->kind != KAS_KIND_CUSTOM)
        return crd_invalid(error, kas_json_get_string(crd, "metadata.name"), "spec.names.plural",
                           plural, "is already served by a built-in resource");
    if (res == NULL) {
        res = res_new();
        res->kind = KAS_KIND_CUSTOM;
        res->group = g_strdup(group);
        res->plural = g_strdup(plural);
        add_res(store, res);
    }
    const char *singular = kas_json_get_string(crd, "spec.names.singular");
    const char *kind = kas_json_get_string(crd, "spec.names.kind");
    const char *list_kind = kas_json_get_string(crd, "spec.names.listKind");
    g_free(res->singular);
    res->singular = singular != NULL ? g_strdup(singular) : g_ascii_strdown(kind, -1);
    g_free(res->kind_name);
    res->kind_name = g_strdup(kind);
    g_free(res->list_kind);
    res->list_kind = list_kind != NULL ? g_strdup(list_kind) : g_strdup_printf("%sList", kind);
    g_strfreev(res->versions);
    g_ptr_array_add(versions, NULL);
    res->versions = (char **)g_ptr_array_steal(versions, NULL);
    g_free(res->storage_version);
    res->storage_version = g_strdup(storage);
    g_strfreev(res->short_names);
    res->short_names = json_strv(kas_json_get(crd, "spec.names.shortNames"));
    g_strfreev(res->categories);
    res->categories = json_strv(kas_json_get(crd, "spec.names.categories"));
    res->namespaced = strcmp(kas_json_get_string(crd, "spec.scope"), "Namespaced") == 0;
    res->has_status = status;
    res->uses_generation = TRUE;
    /* json_object_deep_copy() copies only into NULL: an updated CRD would keep a freed one */
    g_clear_pointer(&res->crd, json_object_put);
    json_object_deep_copy(crd, &res->crd, NULL);
    res->active = TRUE;
    return TRUE;
}

static void close_watchers_of(KasRes *res)
{
    for (guint i = 0; i < res->watchers->len; i++) {
        KasWatcher *w = g_ptr_array_index(res->watchers, i);
        w->closed = TRUE;
        g_cond_broadcast(&w->cond);
    }
}

static gboolean collect_obj(gpointer key, gpointer value, gpointer data)
{
    g_ptr_array_add(data, kas_obj_ref(value));
    return FALSE;
}

void kas_store_unregister_crd_locked(KasStore *store, json_object *crd)
{
    const char *group = kas_json_get_string(crd, "spec.group");
    const char *plural = kas_json_get_string(crd, "spec.names.plural");
    KasRes *res = kas_store_find_locked(store, group != NULL ? group : "", NULL,
                                        plural != NULL ? plural : "");
    if (res == NULL || res->kind != KAS_KIND_CUSTOM)
        return;
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func((GDestroyNotify)kas_obj_unref);
    g_tree_foreach(res->objects, collect_obj, all);
    for (guint i = 0; i < all->len; i++)
        kas_obj_unref(kas_store_remove_locked(store, res, g_ptr_array_index(all, i)));
    close_watchers_of(res);
    res->active = FALSE;
}

json_object *kas_res_printer_columns(const KasRes *res, const char *version)
{
    json_object *vs = kas_json_get(res->crd, "spec.versions");
    for (gsize i = 0; json_object_is_type(vs, json_type_array) && i < json_object_array_length(vs);
         i++) {
        json_object *v = json_object_array_get_idx(vs, i);
        const char *vn = kas_json_get_string(v, "name");
        if (vn != NULL && strcmp(vn, version) == 0)
            return kas_json_get(v, "additionalPrinterColumns");
    }
    return NULL;
}

/* ---- reads ------------------------------------------------------------------------------------------ */

KasObj *kas_store_get_locked(KasStore *store, KasRes *res, const char *ns, const char *name)
{
    char key[600];
    g_snprintf(key, sizeof key, "%s/%s", res->namespaced && ns != NULL ? ns : "", name);
    return g_tree_lookup(res->objects, key);
}

static gboolean obj_matches(const KasRes *res, const KasObj *obj, const KasSelector *labels,
                            const KasSelector *fields);

typedef struct {
    const KasRes *res;
    const KasObj *obj;
} FieldCtx;

static const char *field_lookup(const char *key, gpointer data)
{
    FieldCtx *c = data;
    return kas_obj_field(c->res, c->obj, key);
}

static gboolean obj_matches(const KasRes *res, const KasObj *obj, const KasSelector *labels,
                            const KasSelector *fields)
{
    if (!kas_selector_empty(labels) &&
        !kas_selector_matches(labels, kas_selector_lookup_pairs, obj->labels))
        return FALSE;
    FieldCtx c = { res, obj };
    return kas_selector_empty(fields) || kas_selector_matches(fields, field_lookup, &c);
}

GPtrArray *kas_store_list_locked(KasStore *store, KasRes *res, const KasListOptions *opts,
                                 gboolean *more, guint64 *remaining)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)kas_obj_unref);
    g_autofree char *prefix = NULL;
    GTreeNode *node;
    if (opts->ns != NULL && res->namespaced)
        prefix = g_strdup_printf("%s/", opts->ns);
    if (opts->start_after != NULL) {
        node = g_tree_upper_bound(res->objects, opts->start_after);
    } else if (prefix != NULL) {
        node = g_tree_lower_bound(res->objects, prefix);
    } else {
        node = g_tree_node_first(res->objects);
    }
    *more = FALSE;
    *remaining = 0;
    for (; node != NULL; node = g_tree_node_next(node)) {
        KasObj *obj = g_tree_node_value(node);
        if (prefix != NULL && !g_str_has_prefix(obj->key, prefix))
            break;
        if (!obj_matches(res, obj, opts->labels, opts->fields))
            continue;
        if (opts->limit > 0 && out->len >= opts->limit) {
            *more = TRUE;
            (*remaining)++;
            continue;
        }
        g_ptr_array_add(out, kas_obj_ref(obj));
    }
    return out;
}

guint kas_store_count_locked(KasStore *store, KasRes *res)
{
    return (guint)g_tree_nnodes(res->objects);
}

/* ---- writes and events ---------------------------------------------------------------------------- */

static void owners_add(KasStore *store, KasObj *obj, int delta)
{
    for (char **o = obj != NULL ? obj->owners : NULL; o != NULL && *o != NULL; o++) {
        gpointer cur = g_hash_table_lookup(store->owner_counts, *o);
        int n = GPOINTER_TO_INT(cur) + delta;
        if (n <= 0)
            g_hash_table_remove(store->owner_counts, *o);
        else
            g_hash_table_insert(store->owner_counts, g_strdup(*o), GINT_TO_POINTER(n));
    }
}

gboolean kas_store_is_owner_locked(KasStore *store, const char *uid)
{
    return uid != NULL && g_hash_table_contains(store->owner_counts, uid);
}

typedef struct {
    const char *uid;
    KasObj *found;
} UidSearch;

static gboolean find_uid_cb(gpointer key, gpointer value, gpointer data)
{
    UidSearch *s = data;
    KasObj *obj = value;
    if (strcmp(obj->uid, s->uid) == 0) {
        s->found = obj;
        return TRUE;
    }
    return FALSE;
}

KasObj *kas_store_find_uid_locked(KasStore *store, const char *uid, KasRes **res_out)
{
    for (guint i = 0; i < store->res_order->len; i++) {
        KasRes *res = g_ptr_array_index(store->res_order, i);
        UidSearch s = { uid, NULL };
        g_tree_foreach(res->objects, find_uid_cb, &s);
        if (s.found != NULL) {
            if (res_out != NULL)
                *res_out = res;
            return s.found;
        }
    }
    return NULL;
}

static void watcher_push(KasWatcher *w, KasObj *obj, KasEvType type, gboolean capped)
{
    if (w->closed)
        return;
    if (capped && w->queue.length >= w->cap) {
        /* Too far behind: close it as the watch cache does; the client re-watches. */
        w->closed = TRUE;
        g_cond_broadcast(&w->cond);
        return;
    }
    WItem *it = g_new(WItem, 1);
    it->obj = kas_obj_ref(obj);
    it->type = type;
    g_queue_push_tail(&w->queue, it);
    /* The reader wakes for the first event and when a full batch is waiting; in between it
     * lingers (see kas_watcher_next), so these pushes cost no wakeup. */
    if (w->queue.length == 1)
        w->first_queued = g_get_monotonic_time();
    if (w->queue.length == 1 || w->queue.length == KAS_WATCH_LINGER_EVENTS)
        g_cond_signal(&w->cond);
}

/* The event @w sees for a change, or -1: a change in or out of its selection becomes ADDED or
 * DELETED as in the real watch cache. */
static int effective_type(KasWatcher *w, KasEvType type, KasObj *obj, KasObj *old)
{
    if (w->ns != NULL && strcmp(obj->ns, w->ns) != 0)
        return -1;
    gboolean now = obj_matches(w->res, obj, w->labels, w->fields);
    if (type != KAS_EV_MODIFIED)
        return now ? (int)type : -1;
    gboolean before = old != NULL && obj_matches(w->res, old, w->labels, w->fields);
    if (now && before)
        return KAS_EV_MODIFIED;
    if (now)
        return KAS_EV_ADDED;
    if (before)
        return KAS_EV_DELETED;
    return -1;
}

static void emit(KasStore *store, KasRes *res, KasEvType type, KasObj *obj, KasObj *old)
{
    if (store->ring_len == store->ring_cap) {
        HistEntry *e = &store->ring[store->ring_head];
        store->expired_rv = e->obj->rv;
        hist_clear(e);
        store->ring_head = (store->ring_head + 1) % store->ring_cap;
        store->ring_len--;
    }
    HistEntry *e = &store->ring[(store->ring_head + store->ring_len) % store->ring_cap];
    e->res = res;
    e->obj = kas_obj_ref(obj);
    e->old = old != NULL && type == KAS_EV_MODIFIED ? kas_obj_ref(old) : NULL;
    e->type = type;
    store->ring_len++;
    res->last_event_rv = obj->rv;
    for (guint i = 0; i < res->watchers->len; i++) {
        KasWatcher *w = g_ptr_array_index(res->watchers, i);
        int t = effective_type(w, type, obj, old);
        if (t >= 0)
            watcher_push(w, obj, (KasEvType)t, TRUE);
    }
    if (store->hook != NULL)
        store->hook(store, res, type, obj, old, store->hook_data);
}

KasObj *kas_obj_new(const KasRes *res, json_object *jo)
{
    return obj_new(res, jo);
}

KasObj *kas_store_put_locked(KasStore *store, KasRes *res, json_object *jo)
{
    char rvbuf[32];
    store->rv++;
    g_snprintf(rvbuf, sizeof rvbuf, "%" G_GUINT64_FORMAT, store->rv);
    kas_json_set_string(kas_json_ensure_object(jo, "metadata"), "resourceVersion", rvbuf);
    KasObj *obj = obj_new(res, jo);
    KasObj *old = g_tree_lookup(res->objects, obj->key);
    if (old != NULL)
        kas_obj_ref(old);
    owners_add(store, old, -1);
    owners_add(store, obj, +1);
    g_tree_replace(res->objects, (gpointer)obj->key, obj);
    emit(store, res, old != NULL ? KAS_EV_MODIFIED : KAS_EV_ADDED, obj, old);
    kas_obj_unref(old);
    return obj;
}

/* The span of metadata.resourceVersion's value in @text (as obj_new() prints it). */
static gboolean rv_span(const char *text, gsize len, gsize *at, gsize *n)
{
    KbJsonReader r;
    KbJsonStr key, span = {0}, skipped;
    int rc = 0;
    gboolean ok = TRUE, found = FALSE;
    kb_json_reader_init(&r, text, len);
    if (!kb_json_object_begin(&r, NULL))
        ok = FALSE;
    while (ok && !found && (rc = kb_json_object_next(&r, &key, NULL)) == 1) {
        if (!KB_JSON_STR_IS(key, "metadata")) {
            ok = kb_json_skip_span(&r, &skipped, NULL);
            continue;
        }
        ok = kb_json_object_begin(&r, NULL);
        while (ok && !found && (rc = kb_json_object_next(&r, &key, NULL)) == 1) {
            found = KB_JSON_STR_IS(key, "resourceVersion");
            ok = kb_json_skip_span(&r, found ? &span : &skipped, NULL);
        }
        break;
    }
    kb_json_reader_clear(&r);
    if (!ok || !found || span.p == NULL)
        return FALSE;
    *at = (gsize)(span.p - text);
    *n = span.len;
    return TRUE;
}

gboolean kas_store_prepare(const KasRes *res, json_object *jo, KasPrepared *out)
{
    if (!json_object_is_type(jo, json_type_object))
        return FALSE;
    kas_json_set_string(kas_json_ensure_object(jo, "metadata"), "resourceVersion", "0");
    KasObj *obj = obj_new(res, jo);
    if (!rv_span(obj->json, obj->len, &out->rv_at, &out->rv_len)) {
        kas_obj_unref(obj);
        return FALSE;
    }
    out->obj = obj;
    return TRUE;
}

void kas_prepared_clear(KasPrepared *p)
{
    g_clear_pointer(&p->obj, kas_obj_unref);
}

/* @text (@len bytes) with the @hole bytes at @at replaced by @rv, quoted; newly allocated,
 * its length in *@out_len. */
static char *rv_filled(const char *text, gsize len, gsize at, gsize hole, guint64 rv,
                       gsize *out_len)
{
    char rvbuf[32];
    gsize n = (gsize)g_snprintf(rvbuf, sizeof rvbuf, "\"%" G_GUINT64_FORMAT "\"", rv);
    *out_len = len - hole + n;
    char *out = g_malloc(*out_len + 1);
    memcpy(out, text, at);
    memcpy(out + at, rvbuf, n);
    memcpy(out + at + n, text + at + hole, len - at - hole + 1);
    return out;
}

KasObj *kas_store_put_prepared_locked(KasStore *store, KasRes *res, KasObj *expected,
                                      KasPrepared *p)
{
    KasObj *old = g_tree_lookup(res->objects, p->obj->key);
    if (old == NULL || old != expected)
        return NULL;
    KasObj *obj = g_steal_pointer(&p->obj);
    char *text = rv_filled(obj->json, obj->len, p->rv_at, p->rv_len, store->rv + 1, &obj->len);
    g_free(obj->json);
    obj->json = text;
    obj->rv = ++store->rv;
    kas_obj_ref(old);
    owners_add(store, old, -1);
    owners_add(store, obj, +1);
    g_tree_replace(res->objects, (gpointer)obj->key, obj);
    emit(store, res, KAS_EV_MODIFIED, obj, old);
    kas_obj_unref(old);
    return obj;
}

/* A copy of @v, packed as pack_strv() packs (NULL for NULL). */
static char **strv_copy_packed(char **v)
{
    if (v == NULL)
        return NULL;
    g_autoptr(GPtrArray) strs = g_ptr_array_new();
    for (char **s = v; *s != NULL; s++)
        g_ptr_array_add(strs, *s);
    return pack_strv(strs);
}

KasObj *kas_store_put_text_locked(KasStore *store, KasRes *res, KasObj *cur, const char *text,
                                  gsize len, gsize rv_at)
{
    if (g_tree_lookup(res->objects, cur->key) != cur)
        return NULL;
    KasObj *obj = g_new0(KasObj, 1);
    obj->ref = 1;
    obj->rv = ++store->rv;
    obj->created = cur->created;
    obj->json = rv_filled(text, len, rv_at, 0, obj->rv, &obj->len);
    gsize slen = strlen(cur->key) + strlen(cur->ns) + strlen(cur->name) + strlen(cur->uid) + 4;
    obj->strs = g_memdup2(cur->strs, slen);
    obj->key = obj->strs;
    obj->ns = obj->strs + (cur->ns - cur->strs);
    obj->name = obj->strs + (cur->name - cur->strs);
    obj->uid = obj->strs + (cur->uid - cur->strs);
    obj->labels = strv_copy_packed(cur->labels);
    obj->fields = strv_copy_packed(cur->fields);
    obj->owners = strv_copy_packed(cur->owners);
    obj->deleting = cur->deleting;
    obj->has_finalizers = cur->has_finalizers;
    /* the same owners as @cur's: their counts stand (taking them out and back cost a lookup,
     * a removal and a copy of each under the lock, on each claim status write) */
    g_autoptr(KasObj) old = kas_obj_ref(cur);
    g_tree_replace(res->objects, (gpointer)obj->key, obj);
    emit(store, res, KAS_EV_MODIFIED, obj, old);
    return kas_obj_ref(obj);
}

KasObj *kas_store_remove_locked(KasStore *store, KasRes *res, KasObj *cur)
{
    g_autoptr(KasObj) keep = kas_obj_ref(cur);
    json_object *jo = kas_obj_parse(cur);
    char rvbuf[32];
    store->rv++;
    g_snprintf(rvbuf, sizeof rvbuf, "%" G_GUINT64_FORMAT, store->rv);
    kas_json_set_string(kas_json_ensure_object(jo, "metadata"), "resourceVersion", rvbuf);
    KasObj *final = obj_new(res, jo);
    json_object_put(jo);
    owners_add(store, cur, -1);
    g_tree_remove(res->objects, cur->key);
    emit(store, res, KAS_EV_DELETED, final, NULL);
    return final;
}

/* ---- watches ---------------------------------------------------------------------------------------- */

static void witem_free(gpointer p)
{
    WItem *it = p;
    kas_obj_unref(it->obj);
    g_free(it);
}

static gboolean parse_rv(const char *s, guint64 *out)
{
    char *end = NULL;
    if (s == NULL || !g_ascii_isdigit(s[0]))
        return FALSE;
    *out = g_ascii_strtoull(s, &end, 10);
    return *end == '\0';
}

static char *expired_line(guint64 asked, guint64 oldest)
{
    return g_strdup_printf(
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: %" G_GUINT64_FORMAT
        " (%" G_GUINT64_FORMAT ")\",\"reason\":\"Expired\",\"code\":410}}\n",
        asked, oldest);
}

static void watch_initial(KasStore *store, KasWatcher *w)
{
    KasListOptions lo = { .ns = w->ns, .labels = w->labels, .fields = w->fields };
    gboolean more;
    guint64 remaining;
    w->initial = kas_store_list_locked(store, w->res, &lo, &more, &remaining);
}

static void watch_replay(KasStore *store, KasWatcher *w, guint64 after)
{
    for (guint i = 0; i < store->ring_len; i++) {
        HistEntry *e = &store->ring[(store->ring_head + i) % store->ring_cap];
        if (e->res != w->res || e->obj->rv <= after)
            continue;
        int t = effective_type(w, e->type, e->obj, e->old);
        if (t >= 0)
            watcher_push(w, e->obj, (KasEvType)t, FALSE);
    }
}

KasWatcher *kas_store_watch(KasStore *store, KasRes *res, KasWatchOptions *opts, GError **error)
{
    guint64 after = 0;
    const char *rv = opts->resource_version;
    gboolean from_now = rv == NULL || rv[0] == '\0' || strcmp(rv, "0") == 0;
    if (!from_now && !parse_rv(rv, &after)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "resourceVersion: Invalid value: \"%s\": must be a non-negative integer", rv);
        return NULL;
    }
    KasWatcher *w = g_new0(KasWatcher, 1);
    w->store = store;
    w->res = res;
    w->ns = g_strdup(opts->ns);
    w->api_version = g_strdup(opts->api_version != NULL ? opts->api_version : "v1");
    w->labels = g_steal_pointer(&opts->labels);
    w->fields = g_steal_pointer(&opts->fields);
    g_queue_init(&w->queue);
    g_cond_init(&w->cond);
    kas_store_lock(store);
    w->cap = opts->queue_cap > 0 ? opts->queue_cap : store->watch_queue_cap;
    w->start_rv = opts->send_initial || from_now ? store->rv : after;
    if (opts->send_initial || from_now) {
        watch_initial(store, w);
        w->initial_end_bookmark = opts->send_initial;
    } else if (after < store->expired_rv) {
        w->error_line = expired_line(after, store->expired_rv);
    } else {
        watch_replay(store, w, after);
    }
    if (store->shutting_down)
        w->closed = TRUE;
    g_ptr_array_add(res->watchers, w);
    store->n_watchers++;
    kas_store_unlock(store);
    return w;
}

/* FALSE when the event became an ERROR event that ends the watch. */
static gboolean append_event(GString *out, KasEvType type, KasRes *res, KasObj *obj,
                             KasWatchRender render, gpointer data)
{
    static const char *const names[] = { "ADDED", "MODIFIED", "DELETED" };
    g_autofree char *s = render != NULL ? render(res, obj, data) : NULL;
    if (s != NULL && s[0] == '!') {
        /* the object could not be rendered (a failed conversion): the watch ends with it */
        g_string_append_printf(out, "{\"type\":\"ERROR\",\"object\":%s}\n", s + 1);
        return FALSE;
    }
    g_string_append(out, "{\"type\":\"");
    g_string_append(out, names[type]);
    g_string_append(out, "\",\"object\":");
    if (s != NULL)
        g_string_append(out, s);
    else
        g_string_append_len(out, obj->json, (gssize)obj->len);
    g_string_append(out, "}\n");
    return TRUE;
}

static void append_bookmark(KasWatcher *w, GString *out, guint64 rv, gboolean initial_end)
{
    g_string_append_printf(out,
                           "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
                           "\"metadata\":{\"resourceVersion\":\"%" G_GUINT64_FORMAT
                           "\",\"creationTimestamp\":null%s}}}\n",
                           w->res->kind_name, w->api_version, rv,
                           initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
                                       : "");
}

/* Whether the reader of @w should wait a little longer before taking its queue: while fewer
 * events than a batch wait and the oldest arrived less than the store's linger ago. Under a
 * stream of changes one write then carries many events instead of one each, which is what a
 * thread per watch costs least with (a wakeup, a poll and a send per event were most of what
 * a watched binding cost this server); a lone event waits at most the linger. Waits on the
 * condition (the caller holds the lock) and returns TRUE when it waited. */
static gboolean lingers(KasWatcher *w, guint max_events, gint64 deadline)
{
    if (max_events < KAS_WATCH_LINGER_EVENTS || w->queue.length == 0 ||
        w->queue.length >= KAS_WATCH_LINGER_EVENTS || w->closed || w->error_line != NULL ||
        w->store->shutting_down)
        return FALSE;
    gint64 until = MIN(w->first_queued + w->store->watch_linger_us, deadline);
    if (g_get_monotonic_time() >= until)
        return FALSE;
    g_cond_wait_until(&w->cond, &w->store->lock, until);
    return TRUE;
}

KasWatchResult kas_watcher_next(KasWatcher *w, gint64 deadline, GString *out, guint max_events,
                                KasWatchRender render, gpointer render_data)
{
    KasStore *store = w->store;
    g_autoptr(GPtrArray) batch = g_ptr_array_new_with_free_func(witem_free);
    kas_store_lock(store);
    for (;;) {
        if (w->error_line != NULL) {
            g_string_append(out, w->error_line);
            g_clear_pointer(&w->error_line, g_free);
            w->closed = TRUE;
            g_queue_clear_full(&w->queue, witem_free);
            kas_store_unlock(store);
            return KAS_WATCH_EVENT;
        }
        while (w->initial != NULL && w->initial_pos < w->initial->len && batch->len < max_events) {
            WItem *it = g_new(WItem, 1);
            it->obj = kas_obj_ref(g_ptr_array_index(w->initial, w->initial_pos++));
            it->type = KAS_EV_ADDED;
            g_ptr_array_add(batch, it);
        }
        if (w->initial != NULL && w->initial_pos >= w->initial->len)
            g_clear_pointer(&w->initial, g_ptr_array_unref);
        if (w->initial == NULL && batch->len == 0 && lingers(w, max_events, deadline))
            continue;
        while (w->initial == NULL && batch->len < max_events && w->queue.length > 0)
            g_ptr_array_add(batch, g_queue_pop_head(&w->queue));
        if (batch->len > 0)
            break;
        if (w->initial_end_bookmark) {
            w->initial_end_bookmark = FALSE;
            append_bookmark(w, out, store->rv, TRUE);
            kas_store_unlock(store);
            return KAS_WATCH_EVENT;
        }
        if (w->closed || store->shutting_down) {
            kas_store_unlock(store);
            return KAS_WATCH_CLOSED;
        }
        if (!g_cond_wait_until(&w->cond, &store->lock, deadline) && w->queue.length == 0 &&
            w->error_line == NULL && !w->closed && !store->shutting_down) {
            kas_store_unlock(store);
            return KAS_WATCH_TIMEOUT;
        }
    }
    kas_store_unlock(store);
    /* Rendering happens outside the lock: stored objects are immutable. */
    for (guint i = 0; i < batch->len; i++) {
        WItem *it = g_ptr_array_index(batch, i);
        if (!append_event(out, it->type, w->res, it->obj, render, render_data)) {
            kas_store_lock(store);
            w->closed = TRUE;
            g_queue_clear_full(&w->queue, witem_free);
            kas_store_unlock(store);
            break;
        }
    }
    return KAS_WATCH_EVENT;
}

gboolean kas_watcher_bookmark(KasWatcher *w, GString *out, gboolean initial_events_end)
{
    kas_store_lock(w->store);
    gboolean idle = w->queue.length == 0 && w->initial == NULL && w->error_line == NULL;
    guint64 rv = initial_events_end ? w->store->rv : w->res->last_event_rv;
    gboolean send = idle && (initial_events_end || rv > w->start_rv);
    if (send)
        append_bookmark(w, out, rv, initial_events_end);
    kas_store_unlock(w->store);
    return send;
}

void kas_watcher_close(KasWatcher *w)
{
    kas_store_lock(w->store);
    w->closed = TRUE;
    g_cond_broadcast(&w->cond);
    kas_store_unlock(w->store);
}

KasRes *kas_watcher_res(KasWatcher *w)
{
    return w->res;
}

void kas_watcher_free(KasWatcher *w)
{
    if (w == NULL)
        return;
    KasStore *store = w->store;
    kas_store_lock(store);
    if (g_ptr_array_remove_fast(w->res->watchers, w))
        store->n_watchers--;
    g_queue_clear_full(&w->queue, witem_free);
    kas_store_unlock(store);
    g_clear_pointer(&w->initial, g_ptr_array_unref);
    g_free(w->error_line);
    g_free(w->ns);
    g_free(w->api_version);
    kas_selector_free(w->labels);
    kas_selector_free(w->fields);
    g_cond_clear(&w->cond);
    g_free(w);
}

guint kas_store_watcher_count(KasStore *store)
{
    kas_store_lock(store);
    guint n = store->n_watchers;
    kas_store_unlock(store);
    return n;
}

void kas_store_close_watchers(KasStore *store, gboolean forget_history)
{
    kas_store_lock(store);
    for (guint i = 0; i < store->res_order->len; i++)
        close_watchers_of(g_ptr_array_index(store->res_order, i));
    if (forget_history)
        drop_history(store);
    kas_store_unlock(store);
}

void kas_store_expire_history(KasStore *store)
{
    kas_store_lock(store);
    drop_history(store);
    kas_store_unlock(store);
}

void kas_store_shutdown(KasStore *store)
{
    kas_store_lock(store);
    store->shutting_down = TRUE;
    for (guint i = 0; i < store->res_order->len; i++)
        close_watchers_of(g_ptr_array_index(store->res_order, i));
    kas_store_unlock(store);
}
