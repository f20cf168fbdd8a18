/* Registry semantics of the in-memory API server (see kas-ops.h). */
#include "testbed/apiserver/kas-ops.h"

#include <string.h>

#include "kube/kb-json.h"
#include "testbed/apiserver/kas-admit.h"
#include "testbed/apiserver/kas-dra.h"
#include "testbed/apiserver/kas-gang.h"
#include "testbed/apiserver/kas-evict.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-pods.h"
#include "testbed/apiserver/kas-podsecurity.h"
#include "testbed/apiserver/kas-schema.h"
#include "testbed/apiserver/kas-status.h"

#define FOREGROUND_FINALIZER "foregroundDeletion"

static gint64 now_seconds(void)
{
    return g_get_real_time() / G_USEC_PER_SEC;
}

static char *now_string(void)
{
    return kas_time_format(now_seconds());
}

static json_object *copy_json(json_object *o)
{
    json_object *c = NULL;
    json_object_deep_copy(o, &c, NULL);
    return c;
}

static gboolean err_not_found(GError **error, const KasRes *res, const char *name)
{
    g_autofree char *q = kas_res_qualified(res);
    g_set_error(error, KAS_ERROR, KAS_ERR_NOT_FOUND, "%s \"%s\" not found", q, name);
    return FALSE;
}

static gboolean err_conflict(GError **error, const KasRes *res, const char *sub, const char *name,
                             const char *why)
{
    g_autofree char *q = kas_res_qualified(res);
    if (sub != NULL) {
        /* details name the subresource: {"name": ..., "kind": "pods/binding"} */
        json_object *d = json_object_new_object();
        kas_json_set_string(d, "name", name);
        if (res->group[0] != '\0')
            kas_json_set_string(d, "group", res->group);
        g_autofree char *kind = g_strdup_printf("%s/%s", res->plural, sub);
        kas_json_set_string(d, "kind", kind);
        kas_status_set(error, KAS_ERR_CONFLICT, d, "Operation cannot be fulfilled on %s/%s \"%s\": %s",
                       q, sub, name, why);
        return FALSE;
    }
    g_set_error(error, KAS_ERROR, KAS_ERR_CONFLICT, "Operation cannot be fulfilled on %s%s%s \"%s\": %s",
                q, sub != NULL ? "/" : "", sub != NULL ? sub : "", name, why);
    return FALSE;
}

static gboolean err_invalid(GError **error, const KasRes *res, const char *name, const char *field,
                            const char *what)
{
    return kas_status_invalid(error, res, name != NULL ? name : "", field, what);
}

/* ---- validation ------------------------------------------------------------------------------------ */

static gboolean dns_label_ok(const char *s, gsize start, gsize end)
{
    if (end <= start || end - start > 63)
        return FALSE;
    if (!g_ascii_isalnum(s[start]) || !g_ascii_isalnum(s[end - 1]))
        return FALSE;
    for (gsize i = start; i < end; i++)
        if (!(g_ascii_islower(s[i]) || g_ascii_isdigit(s[i]) || s[i] == '-'))
            return FALSE;
    return TRUE;
}

static gboolean name_ok(const KasRes *res, const char *name, const char **why)
{
    gsize n = strlen(name);
    if (strcmp(res->group, "rbac.authorization.k8s.io") == 0) {
        /* RBAC names are path segments (ValidateRBACName): "system:discovery" is one. */
        *why = strcmp(name, ".") == 0 ? "may not be '.'"
               : strcmp(name, "..") == 0 ? "may not be '..'"
               : strchr(name, '/') != NULL ? "may not contain '/'"
                                           : "may not contain '%'";
        return n > 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
               strpbrk(name, "/%") == NULL;
    }
    gboolean label_only = res->kind == KAS_KIND_NAMESPACE || res->kind == KAS_KIND_SERVICE;
    if (label_only) {
        *why = "a DNS-1123 label must consist of lower case alphanumeric characters or "
               "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
               "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        return dns_label_ok(name, 0, n);
    }
    *why = "a DNS-1123 subdomain must consist of lower case alphanumeric characters, "
           "'-' or '.', and must start and end with an alphanumeric character (e.g. "
           "'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    if (n == 0 || n > 253)
        return FALSE;
    gsize start = 0;
    for (gsize i = 0; i <= n; i++) {
        if (i == n || name[i] == '.') {
            if (i == start || !g_ascii_isalnum(name[start]) || !g_ascii_isalnum(name[i - 1]))
                return FALSE;
            start = i + 1;
        } else if (!(g_ascii_islower(name[i]) || g_ascii_isdigit(name[i]) || name[i] == '-')) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean check_string_map(const KasRes *res, const char *name, json_object *meta,
                                 const char *field, gboolean is_labels, GError **error)
{
    json_object *m = kas_json_get(meta, field);
    if (m == NULL)
        return TRUE;
    if (!json_object_is_type(m, json_type_object)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "%s in version \"v1\" cannot be handled as a %s: metadata.%s must be a map of strings",
                    res->kind_name, res->kind_name, field);
        return FALSE;
    }
    json_object_object_foreach(m, k, v)
    {
        if (!json_object_is_type(v, json_type_string)) {
            g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                        "%s in version \"v1\" cannot be handled as a %s: metadata.%s[\"%s\"]: "
                        "expected a string",
                        res->kind_name, res->kind_name, field, k);
            return FALSE;
        }
        if (is_labels && json_object_get_string_len(v) > 63) {
            const char *f = "metadata.labels";
            g_autofree char *what = g_strdup_printf(
                "Invalid value: \"%s\": must be no more than 63 characters", json_object_get_string(v));
            return err_invalid(error, res, name, f, what);
        }
        if (strlen(k) == 0 || strlen(k) > 316) {
            g_autofree char *what = g_strdup_printf("Invalid value: \"%s\": name part must be "
                                                    "non-empty and no more than 63 characters", k);
            return err_invalid(error, res, name, is_labels ? "metadata.labels" : "metadata.annotations",
                               what);
        }
    }
    return TRUE;
}

/* apiVersion and kind must match the URL; both are filled in when missing. */
static gboolean check_type(const KasRes *res, const char *version, json_object *obj,
                           GError **error)
{
    if (!json_object_is_type(obj, json_type_object)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the body of the request must be a JSON object");
        return FALSE;
    }
    g_autofree char *want = kas_res_api_version(res, version);
    const char *av = kas_json_get_string(obj, "apiVersion");
    const char *kind = kas_json_get_string(obj, "kind");
    if (av != NULL && strcmp(av, want) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the API version in the data (%s) does not match the expected API version (%s)",
                    av, want);
        return FALSE;
    }
    if (kind != NULL && strcmp(kind, res->kind_name) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "%s in version \"%s\" cannot be handled as a %s: the kind in the body does not "
                    "match the resource",
                    kind, version, res->kind_name);
        return FALSE;
    }
    g_autofree char *storage = kas_res_api_version(res, res->storage_version);
    kas_json_set_string(obj, "apiVersion", storage);
    kas_json_set_string(obj, "kind", res->kind_name);
    json_object *meta = kas_json_get(obj, "metadata");
    if (meta != NULL && !json_object_is_type(meta, json_type_object)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST, "metadata must be an object");
        return FALSE;
    }
    return TRUE;
}

/* ---- pods ------------------------------------------------------------------------------------------ */

static void set_default_string(json_object *obj, const char *key, const char *value)
{
    if (kas_json_get(obj, key) == NULL)
        kas_json_set_string(obj, key, value);
}

/* Guaranteed when every container limits cpu and memory with requests equal to limits. */
static const char *pod_qos(json_object *pod)
{
    json_object *cs = kas_json_get(pod, "spec.containers");
    gboolean any = FALSE, guaranteed = TRUE;
    for (gsize i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs);
         i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        json_object *req = kas_json_get(c, "resources.requests");
        json_object *lim = kas_json_get(c, "resources.limits");
        static const char *const names[] = { "cpu", "memory" };
        for (guint k = 0; k < 2; k++) {
            json_object *r = kas_json_get(req, names[k]), *m = kas_json_get(lim, names[k]);
            if (r != NULL || m != NULL)
                any = TRUE;
            if (m == NULL || r == NULL || !json_object_equal(r, m))
                guaranteed = FALSE;
        }
    }
    if (!any)
        return "BestEffort";
    return guaranteed ? "Guaranteed" : "Burstable";
}

/* The Priority admission plugin: spec.priority (and preemptionPolicy) from the PriorityClass
 * named by spec.priorityClassName, or from the globalDefault class. */
static gboolean pod_priority(KasStore *store, json_object *pod, GError **error)
{
    json_object *spec = kas_json_ensure_object(pod, "spec");
    const char *pcn = kas_json_get_string(spec, "priorityClassName");
    const char *name = kas_json_get_string(pod, "metadata.name");
    KasRes *pcs = kas_store_find_locked(store, "scheduling.k8s.io", "v1", "priorityclasses");
    gint64 value = 0;
    g_autofree char *policy = NULL;
    if (pcn != NULL && pcn[0] != '\0') {
        KasObj *pc = kas_store_get_locked(store, pcs, NULL, pcn);
        if (pc == NULL && strcmp(pcn, "system-cluster-critical") != 0 &&
            strcmp(pcn, "system-node-critical") != 0) {
            g_set_error(error, KAS_ERROR, KAS_ERR_FORBIDDEN,
                        "pods \"%s\" is forbidden: no PriorityClass with name %s was found",
                        name != NULL ? name : "", pcn);
            return FALSE;
        }
        if (pc == NULL) {
            value = strcmp(pcn, "system-node-critical") == 0 ? 2000001000 : 2000000000;
        } else {
            json_object *j = kas_obj_parse(pc);
            value = json_object_get_int64(kas_json_get(j, "value"));
            policy = g_strdup(kas_json_get_string(j, "preemptionPolicy"));
            json_object_put(j);
        }
    } else {
        /* The globalDefault class, if any, as the Priority admission plugin does. */
        KasListOptions lo = { 0 };
        gboolean more;
        guint64 rem;
        g_autoptr(GPtrArray) all = kas_store_list_locked(store, pcs, &lo, &more, &rem);
        for (guint i = 0; i < all->len; i++) {
            KasObj *pc = g_ptr_array_index(all, i);
            json_object *j = kas_obj_parse(pc);
            if (json_object_get_boolean(kas_json_get(j, "globalDefault"))) {
                value = json_object_get_int64(kas_json_get(j, "value"));
                kas_json_set_string(spec, "priorityClassName", pc->name);
                g_free(policy);
                policy = g_strdup(kas_json_get_string(j, "preemptionPolicy"));
            }
            json_object_put(j);
        }
    }
    json_object *given = kas_json_get(spec, "priority");
    if (given != NULL && json_object_get_int64(given) != value) {
        g_set_error(error, KAS_ERROR, KAS_ERR_FORBIDDEN,
                    "pods \"%s\" is forbidden: the integer value of priority (%" G_GINT64_FORMAT
                    ") must not be provided in pod spec; priority admission controller computed "
                    "%" G_GINT64_FORMAT " from the given PriorityClass name",
                    name != NULL ? name : "", json_object_get_int64(given), value);
        return FALSE;
    }
    json_object_object_add(spec, "priority", json_object_new_int64(value));
    if (kas_json_get(spec, "preemptionPolicy") == NULL)
        kas_json_set_string(spec, "preemptionPolicy",
                            policy != NULL ? policy : "PreemptLowerPriority");
    return TRUE;
}

/* ---- create ------------------------------------------------------------------------------------------ */

static char *random_suffix(void)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    char s[6];
    for (int i = 0; i < 5; i++)
        s[i] = alphabet[g_random_int_range(0, (gint32)sizeof alphabet - 1)];
    s[5] = '\0';
    return g_strdup(s);
}

static gboolean fill_name(KasStore *store, KasRes *res, const char *ns, json_object *meta,
                          GError **error)
{
    const char *name = kas_json_get_string(meta, "name");
    const char *gen = kas_json_get_string(meta, "generateName");
    if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
        for (int tries = 0; tries < 8; tries++) {
            g_autofree char *suffix = random_suffix();
            g_autofree char *cand = g_strdup_printf("%.*s%s", 58, gen, suffix);
            if (kas_store_get_locked(store, res, ns, cand) == NULL) {
                kas_json_set_string(meta, "name", cand);
                break;
            }
        }
        name = kas_json_get_string(meta, "name");
    }
    if (name == NULL || name[0] == '\0')
        return err_invalid(error, res, "", "metadata.name",
                           "Required value: name or generateName is required");
    const char *why = NULL;
    if (!name_ok(res, name, &why)) {
        g_autofree char *what = g_strdup_printf("Invalid value: \"%s\": %s", name, why);
        return err_invalid(error, res, name, "metadata.name", what);
    }
    return TRUE;
}

static gboolean check_namespace(KasStore *store, KasRes *res, const char *url_ns,
                                json_object *meta, const char **ns_out, GError **error)
{
    if (!res->namespaced) {
        json_object_object_del(meta, "namespace");
        *ns_out = NULL;
        return TRUE;
    }
    const char *body_ns = kas_json_get_string(meta, "namespace");
    if (body_ns != NULL && body_ns[0] != '\0' && url_ns != NULL && strcmp(body_ns, url_ns) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");
        return FALSE;
    }
    const char *ns = url_ns != NULL ? url_ns : body_ns;
    if (ns == NULL || ns[0] == '\0')
        ns = "default";
    kas_json_set_string(meta, "namespace", ns);
    *ns_out = kas_json_get_string(meta, "namespace");
    KasRes *nsres = kas_store_find_locked(store, "", "v1", "namespaces");
    if (kas_store_get_locked(store, nsres, NULL, *ns_out) == NULL) {
        g_set_error(error, KAS_ERROR, KAS_ERR_NOT_FOUND, "namespaces \"%s\" not found", *ns_out);
        return FALSE;
    }
    return TRUE;
}

static void crd_status(json_object *crd)
{
    json_object *status = json_object_new_object();
    json_object *conds = json_object_new_array();
    g_autofree char *now = now_string();
    static const char *const types[][3] = {
        { "NamesAccepted", "NoConflicts", "no conflicts found" },
        { "Established", "InitialNamesAccepted", "the initial names have been accepted" },
    };
    for (guint i = 0; i < G_N_ELEMENTS(types); i++) {
        json_object *c = json_object_new_object();
        kas_json_set_string(c, "type", types[i][0]);
        kas_json_set_string(c, "status", "True");
        kas_json_set_string(c, "lastTransitionTime", now);
        kas_json_set_string(c, "reason", types[i][1]);
        kas_json_set_string(c, "message", types[i][2]);
        json_object_array_add(conds, c);
    }
    json_object_object_add(status, "conditions", conds);
    json_object_object_add(status, "acceptedNames", copy_json(kas_json_get(crd, "spec.names")));
    json_object *stored = json_object_new_array();
    json_object *vs = kas_json_get(crd, "spec.versions");
    for (gsize i = 0; json_object_is_type(vs, json_type_array) && i < json_object_array_length(vs); i++) {
        json_object *v = json_object_array_get_idx(vs, i);
        if (json_object_get_boolean(kas_json_get(v, "storage")))
            json_object_array_add(stored, json_object_new_string(kas_json_get_string(v, "name")));
    }
    json_object_object_add(status, "storedVersions", stored);
    json_object_object_add(crd, "status", status);
}

static void service_defaults(KasStore *store, json_object *svc)
{
    json_object *spec = kas_json_ensure_object(svc, "spec");
    set_default_string(spec, "type", "ClusterIP");
    set_default_string(spec, "sessionAffinity", "None");
    if (kas_json_get(spec, "clusterIP") == NULL) {
        guint64 n = kas_store_next_seq_locked(store);
        g_autofree char *ip = g_strdup_printf("10.96.%u.%u", (guint)((n / 250) % 250),
                                              (guint)(n % 250 + 2));
        kas_json_set_string(spec, "clusterIP", ip);
        json_object *ips = json_object_new_array();
        json_object_array_add(ips, json_object_new_string(ip));
        json_object_object_add(spec, "clusterIPs", ips);
    }
}

/* A custom resource as its CRD's schema has it: pruned, then validated. */
static gboolean custom_schema(const KasRes *res, json_object *obj, GError **error)
{
    json_object *schema = kas_schema_of_version(res->crd, res->storage_version);
    kas_schema_prune(schema, obj);
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    kas_schema_validate(schema, obj, errs);
    return kas_field_errors_check(errs, res, kas_json_get_string(obj, "metadata.name"), error);
}

/* Pod Security admission (enforce) from the labels of the pod's namespace. */
static gboolean pod_security(KasStore *store, json_object *pod, GError **error)
{
    KasRes *nsres = kas_store_find_locked(store, "", "v1", "namespaces");
    const char *ns = kas_json_get_string(pod, "metadata.namespace");
    KasObj *nsobj =
            nsres != NULL && ns != NULL ? kas_store_get_locked(store, nsres, NULL, ns) : NULL;
    return nsobj == NULL || kas_psa_admit_pod(nsobj->labels, pod, error);
}

/* Kind-specific defaults and status rules on create. */
static gboolean prepare_create(KasStore *store, KasRes *res, json_object *obj, GError **error)
{
    switch (res->kind) {
    case KAS_KIND_POD: {
        kas_pods_defaults(obj);
        kas_pods_admit_create(obj);
        if (!pod_priority(store, obj, error))
            return FALSE;
        g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
        kas_pods_validate(obj, errs);
        if (!kas_field_errors_check(errs, res, kas_json_get_string(obj, "metadata.name"), error))
            return FALSE;
        if (!pod_security(store, obj, error))
            return FALSE;
        kas_pods_canonical(obj);
        json_object *status = json_object_new_object();
        kas_json_set_string(status, "phase", "Pending");
        kas_json_set_string(status, "qosClass", pod_qos(obj));
        json_object_object_add(obj, "status", status);
        break;
    }
    case KAS_KIND_NAMESPACE: {
        if (!kas_psa_validate_namespace(kas_json_get(obj, "metadata.labels"),
                                        kas_json_get_string(obj, "metadata.name"), error))
            return FALSE;
        json_object *spec = kas_json_ensure_object(obj, "spec");
        json_object *fin = json_object_new_array();
        json_object_array_add(fin, json_object_new_string("kubernetes"));
        json_object_object_add(spec, "finalizers", fin);
        json_object *status = json_object_new_object();
        kas_json_set_string(status, "phase", "Active");
        json_object_object_add(obj, "status", status);
        break;
    }
    case KAS_KIND_SERVICE:
        service_defaults(store, obj);
        json_object_object_add(obj, "status", json_object_new_object());
        kas_json_ensure_object(kas_json_get(obj, "status"), "loadBalancer");
        break;
    case KAS_KIND_CRD:
        kas_schema_crd_defaults(obj);
        if (!kas_store_register_crd_locked(store, obj, error))
            return FALSE;
        crd_status(obj);
        break;
    case KAS_KIND_CUSTOM:
        if (res->has_status)
            json_object_object_del(obj, "status");
        return custom_schema(res, obj, error);
    case KAS_KIND_NODE:
        kas_admit_node_create(obj);
        break;
    default:
        if (kas_gang_is(res))
            return kas_gang_admit_create(store, res, obj, error);
        if (kas_dra_is(res))
            return kas_dra_admit_create(res, obj, error);
        return kas_admit_create(res, obj, error);
    }
    return TRUE;
}

static KasObj *create_locked(KasStore *store, KasRes *res, const char *url_ns, json_object *obj,
                             GError **error)
{
    json_object *meta = kas_json_ensure_object(obj, "metadata");
    const char *ns = NULL;
    if (!check_namespace(store, res, url_ns, meta, &ns, error))
        return NULL;
    if (!fill_name(store, res, ns, meta, error))
        return NULL;
    const char *name = kas_json_get_string(meta, "name");
    const char *rv = kas_json_get_string(meta, "resourceVersion");
    if (rv != NULL && rv[0] != '\0') {
        g_set_error(error, KAS_ERROR, KAS_ERR_INTERNAL,
                    "resourceVersion should not be set on objects to be created");
        return NULL;
    }
    if (!check_string_map(res, name, meta, "labels", TRUE, error) ||
        !check_string_map(res, name, meta, "annotations", FALSE, error))
        return NULL;
    if (res->kind != KAS_KIND_POD) {
        /* ValidateObjectMeta's 256 KiB of annotations, for every kind (pods: kas-pods) */
        g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
        kas_annotations_validate(meta, 1, errs);
        if (!kas_field_errors_check(errs, res, name, error))
            return NULL;
    }
    if (kas_store_get_locked(store, res, ns, name) != NULL) {
        g_autofree char *q = kas_res_qualified(res);
        g_set_error(error, KAS_ERROR, KAS_ERR_ALREADY_EXISTS, "%s \"%s\" already exists", q, name);
        return NULL;
    }
    g_autofree char *uid = g_uuid_string_random();
    g_autofree char *now = now_string();
    kas_json_set_string(meta, "uid", uid);
    kas_json_set_string(meta, "creationTimestamp", now);
    static const char *const drop[] = { "deletionTimestamp", "deletionGracePeriodSeconds",
                                        "selfLink", "managedFields", "generation" };
    for (guint i = 0; i < G_N_ELEMENTS(drop); i++)
        json_object_object_del(meta, drop[i]);
    if (res->uses_generation)
        json_object_object_add(meta, "generation", json_object_new_int(1));
    if (!prepare_create(store, res, obj, error))
        return NULL;
    return kas_obj_ref(kas_store_put_locked(store, res, obj));
}

KasObj *kas_ops_create(KasStore *store, KasRes *res, const char *version, const char *ns,
                       json_object *body, GError **error)
{
    json_object *obj = copy_json(body);
    if (!check_type(res, version, obj, error)) {
        json_object_put(obj);
        return NULL;
    }
    kas_store_lock(store);
    KasObj *out = res->active ? create_locked(store, res, ns, obj, error) : NULL;
    if (out == NULL && !res->active)
        err_not_found(error, res, kas_json_get_string(obj, "metadata.name"));
    kas_store_unlock(store);
    json_object_put(obj);
    return out;
}

/* ---- removal and garbage collection --------------------------------------------------------------- */

static KasObj *delete_locked(KasStore *store, KasRes *res, KasObj *cur, const KasDeleteOptions *opts,
                             gboolean *removed, GError **error);

static gboolean has_owner(const KasObj *obj, const char *uid)
{
    for (char **o = obj->owners; o != NULL && *o != NULL; o++)
        if (strcmp(*o, uid) == 0)
            return TRUE;
    return FALSE;
}

typedef struct {
    KasRes *res;
    KasObj *obj;
} Dep;

typedef struct {
    GArray *deps;
    const char *uid;
    KasRes *res;
} DepSearch;

static gboolean collect_deps_cb(gpointer key, gpointer value, gpointer data)
{
    DepSearch *s = data;
    KasObj *obj = value;
    if (has_owner(obj, s->uid)) {
        Dep d = { s->res, kas_obj_ref(obj) };
        g_array_append_val(s->deps, d);
    }
    return FALSE;
}

static GArray *dependents(KasStore *store, const char *uid)
{
    GArray *deps = g_array_new(FALSE, FALSE, sizeof(Dep));
    GPtrArray *all = kas_store_resources_locked(store);
    for (guint i = 0; i < all->len; i++) {
        DepSearch s = { deps, uid, g_ptr_array_index(all, i) };
        g_tree_foreach(s.res->objects, collect_deps_cb, &s);
    }
    return deps;
}

static void deps_free(GArray *deps)
{
    for (guint i = 0; i < deps->len; i++)
        kas_obj_unref(g_array_index(deps, Dep, i).obj);
    g_array_unref(deps);
}

/* Drop the ownerReferences naming @uid from @obj. */
static void orphan_one(KasStore *store, KasRes *res, KasObj *obj, const char *uid)
{
    json_object *j = kas_obj_parse(obj);
    json_object *refs = kas_json_get(j, "metadata.ownerReferences");
    json_object *kept = json_object_new_array();
    for (gsize i = 0; json_object_is_type(refs, json_type_array) && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        const char *ru = kas_json_get_string(r, "uid");
        if (ru == NULL || strcmp(ru, uid) != 0)
            json_object_array_add(kept, json_object_get(r));
    }
    json_object *meta = kas_json_get(j, "metadata");
    if (json_object_array_length(kept) == 0) {
        json_object_put(kept);
        json_object_object_del(meta, "ownerReferences");
    } else {
        json_object_object_add(meta, "ownerReferences", kept);
    }
    kas_store_put_locked(store, res, j);
    json_object_put(j);
}

/* The garbage collector: dependents whose owners are all gone are deleted in the background;
 * those with another live owner only lose the reference. */
static void collect_garbage(KasStore *store, const char *uid, gboolean orphan)
{
    GArray *deps = dependents(store, uid);
    for (guint i = 0; i < deps->len; i++) {
        Dep *d = &g_array_index(deps, Dep, i);
        KasObj *live = kas_store_get_locked(store, d->res, d->obj->ns, d->obj->name);
        if (live == NULL || strcmp(live->uid, d->obj->uid) != 0)
            continue;
        gboolean other_owner = FALSE;
        for (char **o = live->owners; o != NULL && *o != NULL && !other_owner; o++)
            other_owner = strcmp(*o, uid) != 0 && kas_store_find_uid_locked(store, *o, NULL) != NULL;
        if (orphan || other_owner) {
            orphan_one(store, d->res, live, uid);
        } else if (!live->deleting) {
            KasDeleteOptions o = { .grace_seconds = -1, .propagation = "Background" };
            gboolean removed;
            kas_obj_unref(delete_locked(store, d->res, live, &o, &removed, NULL));
        }
    }
    deps_free(deps);
}

static KasObj *remove_and_collect(KasStore *store, KasRes *res, KasObj *cur);

/* An owner deleted in the foreground goes once its last dependent is gone. */
static void foreground_check(KasStore *store, const char *owner_uid)
{
    KasRes *ores = NULL;
    KasObj *owner = kas_store_find_uid_locked(store, owner_uid, &ores);
    if (owner == NULL || !owner->deleting || !owner->has_finalizers)
        return;
    if (strstr(owner->json, "\"" FOREGROUND_FINALIZER "\"") == NULL)
        return;
    GArray *deps = dependents(store, owner_uid);
    guint n = deps->len;
    deps_free(deps);
    if (n > 0)
        return;
    json_object *j = kas_obj_parse(owner);
    json_object *fin = kas_json_get(j, "metadata.finalizers");
    json_object *kept = json_object_new_array();
    for (gsize i = 0; json_object_is_type(fin, json_type_array) && i < json_object_array_length(fin); i++) {
        json_object *f = json_object_array_get_idx(fin, i);
        if (strcmp(json_object_get_string(f), FOREGROUND_FINALIZER) != 0)
            json_object_array_add(kept, json_object_get(f));
    }
    gboolean empty = json_object_array_length(kept) == 0;
    json_object_object_add(kas_json_get(j, "metadata"), "finalizers", kept);
    if (empty)
        json_object_object_del(kas_json_get(j, "metadata"), "finalizers");
    KasObj *now = kas_store_put_locked(store, ores, j);
    json_object_put(j);
    if (empty)
        kas_obj_unref(remove_and_collect(store, ores, now));
}

static void delete_namespace_contents(KasStore *store, const char *ns)
{
    GPtrArray *all = kas_store_resources_locked(store);
    for (guint i = 0; i < all->len; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        if (!res->namespaced)
            continue;
        KasListOptions lo = { .ns = ns };
        gboolean more;
        guint64 rem;
        g_autoptr(GPtrArray) objs = kas_store_list_locked(store, res, &lo, &more, &rem);
        for (guint j = 0; j < objs->len; j++) {
            KasObj *o = g_ptr_array_index(objs, j);
            if (kas_store_get_locked(store, res, o->ns, o->name) == o)
                kas_obj_unref(remove_and_collect(store, res, o));
        }
    }
}

static KasObj *remove_and_collect(KasStore *store, KasRes *res, KasObj *cur)
{
    g_autoptr(KasObj) keep = kas_obj_ref(cur);
    if (res->kind == KAS_KIND_CRD) {
        json_object *j = kas_obj_parse(cur);
        kas_store_unregister_crd_locked(store, j);
        json_object_put(j);
    } else if (res->kind == KAS_KIND_NAMESPACE) {
        delete_namespace_contents(store, cur->name);
    }
    KasObj *final = kas_store_remove_locked(store, res, cur);
    if (kas_store_is_owner_locked(store, cur->uid))
        collect_garbage(store, cur->uid, FALSE);
    for (char **o = cur->owners; o != NULL && *o != NULL; o++)
        foreground_check(store, *o);
    return final;
}

/* ---- delete ------------------------------------------------------------------------------------------ */

static gboolean pod_is_terminal(json_object *pod)
{
    const char *phase = kas_json_get_string(pod, "status.phase");
    return phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

static void add_finalizer(json_object *meta, const char *f)
{
    json_object *fin = kas_json_get(meta, "finalizers");
    if (!json_object_is_type(fin, json_type_array)) {
        fin = json_object_new_array();
        json_object_object_add(meta, "finalizers", fin);
    }
    for (gsize i = 0; i < json_object_array_length(fin); i++)
        if (g_strcmp0(json_object_get_string(json_object_array_get_idx(fin, i)), f) == 0)
            return;
    json_object_array_add(fin, json_object_new_string(f));
}

/* Set deletionTimestamp @grace seconds from now; returns the stored object (borrowed). */
static KasObj *mark_deleting(KasStore *store, KasRes *res, KasObj *cur, gint64 grace,
                             gboolean foreground)
{
    json_object *j = kas_obj_parse(cur);
    json_object *meta = kas_json_get(j, "metadata");
    g_autofree char *when = kas_time_format(now_seconds() + grace);
    if (kas_json_get(meta, "deletionTimestamp") == NULL)
        kas_json_set_string(meta, "deletionTimestamp", when);
    json_object_object_add(meta, "deletionGracePeriodSeconds", json_object_new_int64(grace));
    if (foreground)
        add_finalizer(meta, FOREGROUND_FINALIZER);
    KasObj *out = kas_store_put_locked(store, res, j);
    json_object_put(j);
    return out;
}

static gint64 pod_grace(KasObj *cur, const KasDeleteOptions *opts)
{
    json_object *j = kas_obj_parse(cur);
    gint64 grace = opts->grace_seconds;
    if (grace < 0) {
        json_object *g = kas_json_get(j, "spec.terminationGracePeriodSeconds");
        grace = g != NULL ? json_object_get_int64(g) : 30;
    }
    const char *node = kas_json_get_string(j, "spec.nodeName");
    /* Unscheduled and finished pods have nothing to stop: they go at once. */
    if (node == NULL || node[0] == '\0' || pod_is_terminal(j))
        grace = 0;
    json_object_put(j);
    return grace < 0 ? 0 : grace;
}

static KasObj *delete_locked(KasStore *store, KasRes *res, KasObj *cur, const KasDeleteOptions *opts,
                             gboolean *removed, GError **error)
{
    *removed = FALSE;
    if (opts->precondition_uid != NULL && strcmp(opts->precondition_uid, cur->uid) != 0) {
        /* the registry's own message, with the kind (not the resource) in details */
        json_object *d = json_object_new_object();
        kas_json_set_string(d, "name", cur->name);
        if (res->group[0] != '\0')
            kas_json_set_string(d, "group", res->group);
        kas_json_set_string(d, "kind", res->kind_name);
        kas_status_set(error, KAS_ERR_CONFLICT, d,
                       "Operation cannot be fulfilled on %s \"%s\": the UID in the precondition "
                       "(%s) does not match the UID in record (%s). The object might have been "
                       "deleted and then recreated",
                       res->kind_name, cur->name, opts->precondition_uid, cur->uid);
        return NULL;
    }
    char rvbuf[32];
    g_snprintf(rvbuf, sizeof rvbuf, "%" G_GUINT64_FORMAT, cur->rv);
    if (opts->precondition_rv != NULL && strcmp(opts->precondition_rv, rvbuf) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_CONFLICT,
                    "Operation cannot be fulfilled on %s \"%s\": Precondition failed: "
                    "ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
                    res->plural, cur->name, opts->precondition_rv, rvbuf);
        return NULL;
    }
    const char *policy = opts->propagation != NULL ? opts->propagation : "Background";
    gint64 grace = res->kind == KAS_KIND_POD ? pod_grace(cur, opts) : 0;
    if (cur->deleting) {
        /* A second delete may only shorten the grace period. */
        if (res->kind == KAS_KIND_POD && opts->grace_seconds == 0) {
            if (!cur->has_finalizers) {
                *removed = TRUE;
                return remove_and_collect(store, res, cur);
            }
            return kas_obj_ref(mark_deleting(store, res, cur, 0, FALSE));
        }
        return kas_obj_ref(cur);
    }
    if (strcmp(policy, "Orphan") == 0 && kas_store_is_owner_locked(store, cur->uid))
        collect_garbage(store, cur->uid, TRUE);
    gboolean foreground = strcmp(policy, "Foreground") == 0 && kas_store_is_owner_locked(store, cur->uid);
    if (grace > 0 || foreground || cur->has_finalizers) {
        KasObj *now = mark_deleting(store, res, cur, grace, foreground);
        g_autoptr(KasObj) keep = kas_obj_ref(now);
        if (foreground) {
            collect_garbage(store, cur->uid, FALSE);
            foreground_check(store, cur->uid);
        }
        KasObj *live = kas_store_get_locked(store, res, cur->ns, cur->name);
        if (live == NULL || strcmp(live->uid, cur->uid) != 0) {
            *removed = TRUE;
            return kas_obj_ref(keep);
        }
        return kas_obj_ref(live);
    }
    *removed = TRUE;
    return remove_and_collect(store, res, cur);
}

KasObj *kas_ops_delete(KasStore *store, KasRes *res, const char *ns, const char *name,
                       const KasDeleteOptions *opts, gboolean *removed, GError **error)
{
    gboolean dummy;
    kas_store_lock(store);
    KasObj *cur = kas_store_get_locked(store, res, ns, name);
    KasObj *out = NULL;
    if (cur == NULL)
        err_not_found(error, res, name);
    else
        out = delete_locked(store, res, cur, opts, removed != NULL ? removed : &dummy, error);
    kas_store_unlock(store);
    return out;
}

void kas_ops_pod_terminated(KasStore *store, const char *ns, const char *name, const char *uid)
{
    kas_store_lock(store);
    KasRes *pods = kas_store_find_locked(store, "", "v1", "pods");
    KasObj *cur = kas_store_get_locked(store, pods, ns, name);
    if (cur != NULL && strcmp(cur->uid, uid) == 0 && cur->deleting) {
        if (cur->has_finalizers)
            mark_deleting(store, pods, cur, 0, FALSE);
        else
            kas_obj_unref(remove_and_collect(store, pods, cur));
    }
    kas_store_unlock(store);
}

/* ---- update and patch ---------------------------------------------------------------------------- */

static void copy_member(json_object *dst, json_object *src, const char *key)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(src, key, &v))
        json_object_object_add(dst, key, json_object_get(v));
    else
        json_object_object_del(dst, key);
}

/* A pod's status as written through pods/status: its resourceClaimStatuses. */
static gboolean pod_status_valid(const KasRes *res, json_object *pod, GError **error)
{
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    kas_dra_validate_pod_status(pod, errs);
    return kas_field_errors_check(errs, res, kas_json_get_string(pod, "metadata.name"), error);
}

/* Defaults and checks of a status update's new state @newj (changed in place) over @curj. */
static gboolean status_admitted(KasRes *res, json_object *curj, json_object *newj, GError **error)
{
    if (res->kind == KAS_KIND_NODE)
        kas_admit_node_status_defaults(newj);
    return (res->kind != KAS_KIND_CUSTOM || custom_schema(res, newj, error)) &&
           (!kas_dra_is(res) || kas_dra_admit_status(res, curj, newj, error)) &&
           (res->kind != KAS_KIND_POD || pod_status_valid(res, newj, error));
}

/* The new state for an update of @curj by @body (both borrowed); new reference or NULL. */
static json_object *updated_object(KasStore *store, KasRes *res, json_object *curj,
                                   json_object *body, gboolean status, GError **error)
{
    json_object *newj;
    if (status) {
        newj = copy_json(curj);
        copy_member(newj, body, "status");
        if (!status_admitted(res, curj, newj, error)) {
            json_object_put(newj);
            return NULL;
        }
        return newj;
    }
    newj = copy_json(body);
    if (res->has_status)
        copy_member(newj, curj, "status");
    json_object *meta = kas_json_ensure_object(newj, "metadata");
    json_object *cmeta = kas_json_get(curj, "metadata");
    static const char *const keep[] = { "uid", "creationTimestamp", "deletionTimestamp",
                                        "deletionGracePeriodSeconds", "generation", "namespace",
                                        "name" };
    for (guint i = 0; i < G_N_ELEMENTS(keep); i++)
        copy_member(meta, cmeta, keep[i]);
    json_object_object_del(meta, "selfLink");
    json_object_object_del(meta, "managedFields");
    const char *name = kas_json_get_string(cmeta, "name");
    if (!check_string_map(res, name, meta, "labels", TRUE, error) ||
        !check_string_map(res, name, meta, "annotations", FALSE, error)) {
        json_object_put(newj);
        return NULL;
    }
    if (res->kind != KAS_KIND_POD) {
        g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
        kas_annotations_validate(meta, 1, errs);
        if (!kas_field_errors_check(errs, res, name, error)) {
            json_object_put(newj);
            return NULL;
        }
    }
    if (res->kind == KAS_KIND_POD) {
        kas_pods_defaults(newj);
        kas_pods_canonical(newj);
        /* set by admission on create; a client's update that leaves them out keeps them */
        static const char *const admitted[] = { "priority", "priorityClassName", "preemptionPolicy" };
        for (guint i = 0; i < G_N_ELEMENTS(admitted); i++)
            if (kas_json_get(kas_json_get(newj, "spec"), admitted[i]) == NULL)
                copy_member(kas_json_get(newj, "spec"), kas_json_get(curj, "spec"), admitted[i]);
        g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
        kas_pods_validate_update(curj, newj, errs);
        if (!kas_field_errors_check(errs, res, name, error)) {
            json_object_put(newj);
            return NULL;
        }
    } else if (res->kind == KAS_KIND_NODE) {
        kas_admit_node_status_defaults(newj);
    } else if (kas_gang_is(res)) {
        if (!kas_gang_admit_update(res, curj, newj, error)) {
            json_object_put(newj);
            return NULL;
        }
    } else if (kas_dra_is(res)) {
        if (!kas_dra_admit_update(res, curj, newj, error)) {
            json_object_put(newj);
            return NULL;
        }
    } else if (res->kind == KAS_KIND_CUSTOM) {
        if (!custom_schema(res, newj, error)) {
            json_object_put(newj);
            return NULL;
        }
    } else if (res->kind == KAS_KIND_CRD) {
        kas_schema_crd_defaults(newj);
        if (!kas_store_register_crd_locked(store, newj, error)) {
            json_object_put(newj);
            return NULL;
        }
    }
    if (res->uses_generation && kas_json_spec_changed(curj, newj)) {
        gint64 gen = json_object_get_int64(kas_json_get(cmeta, "generation"));
        json_object_object_add(meta, "generation", json_object_new_int64(gen + 1));
    }
    return newj;
}

/* An update's preconditions, from its body's metadata strings (each NULL when absent): the name
 * is the URL's, the namespace, uid and resourceVersion (when given) the stored object's. */
static gboolean preconditions_hold(KasRes *res, KasObj *cur, const char *name, const char *bname,
                                   const char *bns, const char *buid, const char *rv,
                                   GError **error)
{
    if (bname == NULL || strcmp(bname, name) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the name of the object (%s) does not match the name on the URL (%s)",
                    bname != NULL ? bname : "", name);
        return FALSE;
    }
    if (res->namespaced && bns != NULL && bns[0] != '\0' && strcmp(bns, cur->ns) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");
        return FALSE;
    }
    if (buid != NULL && buid[0] != '\0' && strcmp(buid, cur->uid) != 0) {
        g_autofree char *why = g_strdup_printf("Precondition failed: UID in precondition: %s, UID "
                                               "in object meta: %s", buid, cur->uid);
        return err_conflict(error, res, NULL, name, why);
    }
    if (rv == NULL || rv[0] == '\0') {
        if (res->kind == KAS_KIND_CUSTOM || res->kind == KAS_KIND_CRD)
            return err_invalid(error, res, name, "metadata.resourceVersion",
                               "Invalid value: 0x0: must be specified for an update");
        return TRUE;
    }
    if (g_ascii_strtoull(rv, NULL, 10) != cur->rv || !g_ascii_isdigit(rv[0]))
        return err_conflict(error, res, NULL, name,
                            "the object has been modified; please apply your changes to the "
                            "latest version and try again");
    return TRUE;
}

static gboolean check_update_preconditions(KasRes *res, KasObj *cur, const char *name,
                                           json_object *body, GError **error)
{
    return preconditions_hold(res, cur, name, kas_json_get_string(body, "metadata.name"),
                              kas_json_get_string(body, "metadata.namespace"),
                              kas_json_get_string(body, "metadata.uid"),
                              kas_json_get_string(body, "metadata.resourceVersion"), error);
}

/* Store @newj over @cur unless nothing changed (@curj, @cur's parsed state; NULL when it is
 * known that something did); removes an object whose last finalizer went. */
static KasObj *commit_update(KasStore *store, KasRes *res, KasObj *cur, json_object *curj,
                             json_object *newj)
{
    char rvbuf[32];
    g_snprintf(rvbuf, sizeof rvbuf, "%" G_GUINT64_FORMAT, cur->rv);
    kas_json_set_string(kas_json_ensure_object(newj, "metadata"), "resourceVersion", rvbuf);
    if (curj != NULL && json_object_equal(newj, curj))
        return kas_obj_ref(cur);
    KasObj *now = kas_store_put_locked(store, res, newj);
    json_object *g = kas_json_get(newj, "metadata.deletionGracePeriodSeconds");
    gboolean grace_done = res->kind != KAS_KIND_POD || (g != NULL && json_object_get_int64(g) == 0);
    if (now->deleting && !now->has_finalizers && grace_done)
        return remove_and_collect(store, res, now);
    return kas_obj_ref(now);
}

/* Update @cur, whose parsed state is @curj (borrowed, not changed), with @body. */
static KasObj *update_parsed_locked(KasStore *store, KasRes *res, KasObj *cur, json_object *curj,
                                    const char *name, json_object *body, gboolean status,
                                    GError **error)
{
    if (!check_update_preconditions(res, cur, name, body, error))
        return NULL;
    json_object *newj = updated_object(store, res, curj, body, status, error);
    KasObj *out = newj != NULL ? commit_update(store, res, cur, curj, newj) : NULL;
    json_object_put(newj);
    return out;
}

/*
 * A status update by @doc, a copy of @curj with a patch applied (borrowed, changed in place):
 * what update_parsed_locked() does with @status, without a second copy of @curj. @doc's members
 * other than the status go back to @curj's (the patch may have touched metadata, spec or the
 * apiVersion; a member it left alone is equal and stays), after the preconditions were read
 * from it. Claim status writes, one per DRA pod bound, spent a tenth of their CPU on that copy.
 */
static KasObj *update_status_in_place_locked(KasStore *store, KasRes *res, KasObj *cur,
                                             json_object *curj, const char *name, json_object *doc,
                                             GError **error)
{
    if (!check_update_preconditions(res, cur, name, doc, error))
        return NULL;
    g_autoptr(GPtrArray) drop = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) reset = g_ptr_array_new_with_free_func(g_free);
    json_object_object_foreach(doc, key, val)
    {
        json_object *cv = NULL;
        if (strcmp(key, "status") == 0)
            continue;
        if (!json_object_object_get_ex(curj, key, &cv))
            g_ptr_array_add(drop, g_strdup(key));
        else if (!json_object_equal(val, cv))
            g_ptr_array_add(reset, g_strdup(key));
    }
    for (guint i = 0; i < drop->len; i++)
        json_object_object_del(doc, g_ptr_array_index(drop, i));
    for (guint i = 0; i < reset->len; i++) {
        const char *k = g_ptr_array_index(reset, i);
        json_object_object_add(doc, k, copy_json(json_object_object_get(curj, k)));
    }
    json_object_object_foreach(curj, ckey, cval)
    {
        if (strcmp(ckey, "status") != 0 && !json_object_object_get_ex(doc, ckey, NULL))
            json_object_object_add(doc, ckey, copy_json(cval));
    }
    if (!status_admitted(res, curj, doc, error))
        return NULL;
    return commit_update(store, res, cur, curj, doc);
}

static KasObj *update_locked(KasStore *store, KasRes *res, const char *ns, const char *name,
                             json_object *body, gboolean status, GError **error)
{
    KasObj *cur = kas_store_get_locked(store, res, ns, name);
    if (cur == NULL || !res->active) {
        err_not_found(error, res, name);
        return NULL;
    }
    json_object *curj = kas_obj_parse(cur);
    KasObj *out = update_parsed_locked(store, res, cur, curj, name, body, status, error);
    json_object_put(curj);
    return out;
}

KasObj *kas_ops_update(KasStore *store, KasRes *res, const char *version, const char *ns,
                       const char *name, json_object *body, gboolean status, GError **error)
{
    json_object *obj = copy_json(body);
    if (!check_type(res, version, obj, error)) {
        json_object_put(obj);
        return NULL;
    }
    kas_store_lock(store);
    KasObj *out = update_locked(store, res, ns, name, obj, status, error);
    kas_store_unlock(store);
    json_object_put(obj);
    return out;
}

/* Does @v hold a null anywhere (a merge patch's "remove")? */
static gboolean has_null(json_object *v)
{
    if (v == NULL)
        return TRUE;
    if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, k, m)
        {
            (void)k;
            if (has_null(m))
                return TRUE;
        }
    } else if (json_object_is_type(v, json_type_array)) {
        for (gsize i = 0; i < json_object_array_length(v); i++)
            if (has_null(json_object_array_get_idx(v, i)))
                return TRUE;
    }
    return FALSE;
}

/*
 * The document a merge patch @patch (an object) of the status subresource makes of @curj,
 * without copying @curj whole: the status is copied and patched; the metadata is a new object
 * sharing @curj's members, with @patch's scalar metadata members (the preconditions: name,
 * namespace, uid, resourceVersion) applied; every other member is shared, with @patch's scalar
 * top-level members (kind, apiVersion, a null) applied over @api_version. A patch's object
 * members other than the status would be put back to @curj's by
 * update_status_in_place_locked() anyway, and merging them here would change @curj through what
 * it shares. A claim status write, one per DRA pod bound, spent a tenth of its CPU copying the
 * claim. New reference, which may share @patch's status (@patch must not change while it
 * lives); @curj is not changed.
 */
static json_object *status_patched(json_object *curj, const char *api_version, json_object *patch)
{
    json_object *doc = json_object_new_object();
    json_object_object_foreach(curj, key, val)
    {
        if (strcmp(key, "status") == 0) {
            json_object_object_add(doc, key, copy_json(val));
        } else if (strcmp(key, "metadata") == 0 && json_object_is_type(val, json_type_object)) {
            json_object *meta = json_object_new_object();
            json_object_object_foreach(val, mk, mv)
            {
                json_object_object_add(meta, mk, json_object_get(mv));
            }
            json_object_object_add(doc, key, meta);
        } else {
            json_object_object_add(doc, key, json_object_get(val));
        }
    }
    kas_json_set_string(doc, "apiVersion", api_version);
    json_object *top = json_object_new_object();
    json_object_object_foreach(patch, pk, pv)
    {
        json_object *meta = NULL, *st = NULL;
        /* a first status (a claim's allocation) is the patch's own when it removes nothing:
         * merged into nothing it would be copied whole, to the same */
        if (strcmp(pk, "status") == 0 && json_object_is_type(pv, json_type_object) &&
            (!json_object_object_get_ex(doc, "status", &st) ||
             (json_object_is_type(st, json_type_object) && json_object_object_length(st) == 0)) &&
            !has_null(pv))
            json_object_object_add(doc, pk, json_object_get(pv));
        else if (strcmp(pk, "status") == 0 || !json_object_is_type(pv, json_type_object))
            json_object_object_add(top, pk, json_object_get(pv));
        else if (strcmp(pk, "metadata") == 0 && json_object_object_get_ex(doc, "metadata", &meta) &&
                 json_object_is_type(meta, json_type_object)) {
            json_object_object_foreach(pv, mk, mv)
            {
                if (mv == NULL)
                    json_object_object_del(meta, mk);
                else if (!json_object_is_type(mv, json_type_object))
                    json_object_object_add(meta, mk, copy_json(mv));
            }
        }
    }
    doc = kas_json_merge_patch(doc, top);
    json_object_put(top);
    return doc;
}

static KasOpsRaceHook race_hook;
static gpointer race_hook_data;
static guint optimistic_retries;

void kas_ops_set_race_hook(KasOpsRaceHook hook, gpointer data)
{
    race_hook = hook;
    race_hook_data = data;
}

guint kas_ops_optimistic_retries(void)
{
    return (guint)g_atomic_int_get(&optimistic_retries);
}

/* Between an optimistic write's read and its commit (tests: a write that races it). */
static void race_point(const char *what, KasObj *cur)
{
    if (race_hook != NULL)
        race_hook(what, cur->ns, cur->name, race_hook_data);
}

static gboolean status_splice = TRUE;
static guint status_splices, status_text_splices;

void kas_ops_set_status_splice(gboolean on)
{
    status_splice = on;
}

guint kas_ops_status_splices(void)
{
    return (guint)g_atomic_int_get(&status_splices);
}

guint kas_ops_status_text_splices(void)
{
    return (guint)g_atomic_int_get(&status_text_splices);
}

/* Where a stored object's text (as obj_new() prints it: no white space) has the members a status
 * splice needs; a span's p is NULL for a member it lacks. */
typedef struct {
    KbJsonStr rv;   /* metadata.resourceVersion's value, quotes included */
    KbJsonStr spec; /* the value of each */
    KbJsonStr status;
    gsize end; /* the offset of the closing '}' */
} StoredSpans;

static gboolean read_spans(KbJsonReader *r, StoredSpans *sp)
{
    KbJsonStr key, skipped;
    int rc, mrc = 0;
    if (!kb_json_object_begin(r, NULL))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, NULL)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(key, "metadata")) {
            ok = kb_json_object_begin(r, NULL);
            while (ok && (mrc = kb_json_object_next(r, &key, NULL)) == 1)
                ok = kb_json_skip_span(
                        r, KB_JSON_STR_IS(key, "resourceVersion") ? &sp->rv : &skipped, NULL);
            ok = ok && mrc == 0;
        } else {
            ok = kb_json_skip_span(r,
                                   KB_JSON_STR_IS(key, "spec")     ? &sp->spec
                                   : KB_JSON_STR_IS(key, "status") ? &sp->status
                                                                   : &skipped,
                                   NULL);
        }
        if (!ok)
            return FALSE;
    }
    sp->end = r->pos - 1;
    return rc == 0 && kb_json_finish(r, NULL) && r->buf[sp->end] == '}';
}

static gboolean stored_spans(const KasObj *obj, StoredSpans *sp)
{
    memset(sp, 0, sizeof *sp);
    KbJsonReader r;
    kb_json_reader_init(&r, obj->json, obj->len);
    gboolean ok = read_spans(&r, sp);
    kb_json_reader_clear(&r);
    return ok && sp->rv.p != NULL && sp->rv.p[0] == '"' &&
           (sp->status.p == NULL || (KB_JSON_STR_IS(sp->status, "{}") && sp->status.p > sp->rv.p));
}

/* The patch's status when @patch (an object) holds nothing but a first status with no null in
 * it and string preconditions (metadata.resourceVersion, metadata.uid), else NULL. */
static json_object *first_status_only(json_object *patch)
{
    json_object *st = NULL;
    json_object_object_foreach(patch, k, v)
    {
        if (strcmp(k, "status") == 0) {
            st = v;
        } else if (strcmp(k, "metadata") == 0 && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, mk, mv)
            {
                if ((strcmp(mk, "resourceVersion") != 0 && strcmp(mk, "uid") != 0) ||
                    !json_object_is_type(mv, json_type_string))
                    return NULL;
            }
        } else {
            return NULL;
        }
    }
    if (!json_object_is_type(st, json_type_object) || json_object_object_length(st) == 0 ||
        has_null(st))
        return NULL;
    return st;
}

/* What status admission reads of a claim: a new object holding @meta (its name), @spec and
 * @status (each borrowed, shared; NULL for none). */
static json_object *claim_view(json_object *meta, json_object *spec, json_object *status)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "metadata", json_object_get(meta));
    if (spec != NULL)
        json_object_object_add(o, "spec", json_object_get(spec));
    if (status != NULL)
        json_object_object_add(o, "status", json_object_get(status));
    return o;
}

/* The next value of @r, a claim's requests (@sub) or a request's firstAvailable, as an array of
 * objects holding only each one's name and, with @sub, its firstAvailable read alike: all that
 * validating an allocation reads of the spec (its results' request references). NULL when the
 * value is not such an array of objects with string names. */
static json_object *request_names(KbJsonReader *r, gboolean sub)
{
    if (kb_json_peek(r) != KB_JSON_ARRAY || !kb_json_array_begin(r, NULL))
        return NULL;
    json_object *out = json_object_new_array();
    int rc;
    while ((rc = kb_json_array_next(r, NULL)) == 1) {
        if (kb_json_peek(r) != KB_JSON_OBJECT || !kb_json_object_begin(r, NULL))
            break;
        json_object *o = json_object_new_object();
        json_object_array_add(out, o);
        KbJsonStr key, s;
        int mrc = 0;
        gboolean ok = TRUE;
        while (ok && (mrc = kb_json_object_next(r, &key, NULL)) == 1) {
            if (KB_JSON_STR_IS(key, "name")) {
                ok = kb_json_peek(r) == KB_JSON_STRING && kb_json_read_string(r, &s, NULL);
                if (ok)
                    json_object_object_add(o, "name", json_object_new_string_len(s.p, (int)s.len));
            } else if (sub && KB_JSON_STR_IS(key, "firstAvailable")) {
                json_object *fa = request_names(r, FALSE);
                ok = fa != NULL;
                if (ok)
                    json_object_object_add(o, "firstAvailable", fa);
            } else {
                ok = kb_json_skip(r, NULL);
            }
        }
        if (!ok || mrc != 0)
            break;
    }
    if (rc == 0)
        return out;
    json_object_put(out);
    return NULL;
}

/* What status admission reads of a stored claim's @spec text: {"devices":{"requests":...}} with
 * request_names()' view of the requests, built without parsing the rest (selectors, classes,
 * constraints, configuration). NULL when the text is anything but what a stored claim's spec
 * looks like: the caller parses it whole then. */
static json_object *spec_requests_view(const KbJsonStr *spec)
{
    KbJsonStr span;
    if (!kas_dra_spec_requests(spec->p, spec->len, &span))
        return NULL;
    KbJsonReader r;
    kb_json_reader_init(&r, span.p, span.len);
    json_object *requests = request_names(&r, TRUE);
    gboolean ok = requests != NULL && kb_json_finish(&r, NULL);
    kb_json_reader_clear(&r);
    if (!ok) {
        json_object_put(requests);
        return NULL;
    }
    json_object *devices = json_object_new_object();
    json_object_object_add(devices, "requests", requests);
    json_object *view = json_object_new_object();
    json_object_object_add(view, "devices", devices);
    return view;
}

/* A claim's first status to splice: the patch's preconditions (NULL for none) and its status,
 * parsed (@st) or, when read from the body's text, as that text (@text, @len bytes; @st NULL). */
typedef struct {
    const char *uid, *rv;
    json_object *st;
    const char *text;
    gsize len;
} FirstStatus;

/*
 * A ResourceClaim's first status (a scheduler's allocation and reservation, one write per DRA
 * pod bound) written by a merge patch that holds nothing else but the preconditions, over a
 * stored claim with no status or an empty one: the new text is the stored one with the
 * resourceVersion and the status spliced in, byte for byte what parsing the claim, merging and
 * printing it again makes (test-apiserver /apiserver/dra/claim-status-splice compares both),
 * validated alike (only the spec is parsed, for the allocation's requests). Parsing and
 * printing the whole claim was a third of kb-apiserver's CPU per claim write in
 * bench-e2e --dra. The text is built from @cur (a reference the caller took under the lock)
 * without the lock; *@text gets it, the resourceVersion's value to go at *@rv_at. TRUE when it
 * applies, with *@text or @error set; FALSE when the general path must take the patch (a status
 * given as text that kas_dra_first_status_text() does not vouch for, too).
 */
static gboolean status_spliced_text(KasRes *res, KasObj *cur, const char *name,
                                    const FirstStatus *fs, GString **text, gsize *rv_at,
                                    GError **error)
{
    StoredSpans sp;
    if (!status_splice || strcmp(res->plural, "resourceclaims") != 0 || cur->deleting ||
        !stored_spans(cur, &sp))
        return FALSE;
    if (!preconditions_hold(res, cur, name, name, NULL, fs->uid, fs->rv, error))
        return TRUE;
    const char *st_text = fs->text;
    gsize st_len = fs->len;
    if (fs->st == NULL) {
        /* no spec: no request for a result to name */
        if (sp.spec.p == NULL ||
            !kas_dra_first_status_text(fs->text, fs->len, sp.spec.p, sp.spec.len))
            return FALSE;
    } else {
        json_object *spec = NULL;
        if (sp.spec.p != NULL && (spec = spec_requests_view(&sp.spec)) == NULL) {
            g_autofree char *spec_text = g_strndup(sp.spec.p, sp.spec.len);
            spec = kas_json_parse_stored(spec_text);
        }
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "name", json_object_new_string(cur->name));
        json_object *old = claim_view(meta, spec, NULL), *now = claim_view(meta, spec, fs->st);
        gboolean ok = status_admitted(res, old, now, error);
        json_object_put(old);
        json_object_put(now);
        json_object_put(meta);
        json_object_put(spec);
        if (!ok)
            return TRUE;
        st_text = json_object_to_json_string_ext(fs->st, JSON_C_TO_STRING_PLAIN |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
        st_len = strlen(st_text);
    }
    const char *b = cur->json, *after_rv = sp.rv.p + sp.rv.len;
    GString *t = g_string_sized_new(cur->len + st_len + 32);
    g_string_append_len(t, b, sp.rv.p - b);
    *rv_at = t->len;
    if (sp.status.p != NULL) {
        const char *after_st = sp.status.p + sp.status.len;
        g_string_append_len(t, after_rv, sp.status.p - after_rv);
        g_string_append_len(t, st_text, (gssize)st_len);
        g_string_append_len(t, after_st, b + cur->len - after_st);
    } else {
        g_string_append_len(t, after_rv, b + sp.end - after_rv);
        g_string_append(t, ",\"status\":");
        g_string_append_len(t, st_text, (gssize)st_len);
        g_string_append_len(t, b + sp.end, cur->len - sp.end);
    }
    *text = t;
    return TRUE;
}

/*
 * The claim status splice as an optimistic write (KAS_OPS_OPTIMISTIC_TRIES, kas-ops.h): the text
 * built from the stored claim outside the store's lock, stored under it only if the claim was
 * not written meanwhile, else built again. TRUE when it applies, with *@out (new reference) or
 * @error set; FALSE when the general path, under the lock throughout, must take the patch (also
 * after the last try raced).
 */
static gboolean status_spliced(KasStore *store, KasRes *res, const char *ns, const char *name,
                               const FirstStatus *fs, KasObj **out, GError **error)
{
    *out = NULL;
    for (guint i = 0; i + 1 < KAS_OPS_OPTIMISTIC_TRIES; i++) {
        kas_store_lock(store);
        KasObj *cur = kas_store_get_locked(store, res, ns, name);
        if (cur == NULL || !res->active) {
            kas_store_unlock(store);
            return FALSE;
        }
        g_autoptr(KasObj) read = kas_obj_ref(cur);
        kas_store_unlock(store);
        GString *t = NULL;
        gsize rv_at = 0;
        if (!status_spliced_text(res, read, name, fs, &t, &rv_at, error))
            return FALSE;
        if (t == NULL)
            return TRUE; /* refused */
        race_point("claim status", read);
        kas_store_lock(store);
        *out = kas_store_put_text_locked(store, res, read, t->str, t->len, rv_at);
        kas_store_unlock(store);
        g_string_free(t, TRUE);
        if (*out != NULL) {
            g_atomic_int_inc(&status_splices);
            if (fs->st == NULL)
                g_atomic_int_inc(&status_text_splices);
            return TRUE;
        }
        g_atomic_int_inc(&optimistic_retries);
    }
    return FALSE;
}

/* The members of a merge patch's text that holds nothing but a status (an object, not empty)
 * and string preconditions (metadata.resourceVersion, metadata.uid), each once and written
 * without escapes: the preconditions copied into @uid and @rv (@size bytes each), the status's
 * text in *@status. FALSE for any other body (the caller parses it then). */
static gboolean body_first_status(const char *body, gsize len, char *uid, char *rv, gsize size,
                                  gboolean *has_uid, gboolean *has_rv, KbJsonStr *status)
{
    KbJsonReader r;
    kb_json_reader_init(&r, body, len);
    KbJsonStr key, v;
    int rc = -1, mrc = 0;
    gboolean ok = kb_json_peek(&r) == KB_JSON_OBJECT && kb_json_object_begin(&r, NULL);
    gboolean meta = FALSE;
    status->p = NULL;
    *has_uid = *has_rv = FALSE;
    while (ok && (rc = kb_json_object_next(&r, &key, NULL)) == 1) {
        if (KB_JSON_STR_IS(key, "status") && status->p == NULL) {
            ok = kb_json_peek(&r) == KB_JSON_OBJECT && kb_json_skip_span(&r, status, NULL);
            continue;
        }
        ok = KB_JSON_STR_IS(key, "metadata") && !meta && kb_json_peek(&r) == KB_JSON_OBJECT &&
             kb_json_object_begin(&r, NULL);
        meta = TRUE;
        while (ok && (mrc = kb_json_object_next(&r, &key, NULL)) == 1) {
            gboolean is_uid = KB_JSON_STR_IS(key, "uid");
            gboolean *has = is_uid ? has_uid : has_rv;
            ok = (is_uid || KB_JSON_STR_IS(key, "resourceVersion")) && !*has &&
                 kb_json_peek(&r) == KB_JSON_STRING && kb_json_read_string(&r, &v, NULL) &&
                 v.len < size && v.p >= body && v.p + v.len <= body + len &&
                 memchr(v.p, '\0', v.len) == NULL;
            if (ok) {
                memcpy(is_uid ? uid : rv, v.p, v.len);
                (is_uid ? uid : rv)[v.len] = '\0';
                *has = TRUE;
            }
        }
        ok = ok && mrc == 0;
    }
    ok = ok && rc == 0 && kb_json_finish(&r, NULL) && status->p != NULL && status->len > 2;
    kb_json_reader_clear(&r);
    return ok;
}

gboolean kas_ops_claim_status_text(KasStore *store, KasRes *res, const char *ns, const char *name,
                                   const char *body, gsize len, KasObj **out, GError **error)
{
    char uid[128], rv[64];
    gboolean has_uid, has_rv;
    FirstStatus fs = {0};
    KbJsonStr st;
    *out = NULL;
    if (!status_splice || strcmp(res->plural, "resourceclaims") != 0 || body == NULL ||
        !body_first_status(body, len, uid, rv, sizeof rv, &has_uid, &has_rv, &st))
        return FALSE;
    fs.uid = has_uid ? uid : NULL;
    fs.rv = has_rv ? rv : NULL;
    fs.text = st.p;
    fs.len = st.len;
    return status_spliced(store, res, ns, name, &fs, out, error);
}

gboolean kas_ops_patch_apply(json_object **doc, KasPatchType type, json_object *patch,
                             GError **error)
{
    if (type == KAS_PATCH_JSON) {
        if (kas_json_patch_apply(doc, patch, error))
            return TRUE;
        GError *e = *error;
        e->domain = KAS_ERROR;
        e->code = KAS_ERR_INVALID;
        return FALSE;
    }
    if (!json_object_is_type(patch, json_type_object)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the body of a merge patch must be a JSON object");
        return FALSE;
    }
    *doc = type == KAS_PATCH_STRATEGIC ? kas_json_strategic_merge(*doc, patch)
                                       : kas_json_merge_patch(*doc, patch);
    return TRUE;
}

KasObj *kas_ops_patch(KasStore *store, KasRes *res, const char *version, const char *ns,
                      const char *name, KasPatchType type, json_object *patch, gboolean status,
                      GError **error)
{
    KasObj *spliced = NULL;
    FirstStatus fs = {0};
    if (status && type == KAS_PATCH_MERGE && strcmp(res->plural, "resourceclaims") == 0 &&
        json_object_is_type(patch, json_type_object) &&
        (fs.st = first_status_only(patch)) != NULL) {
        /* the patch's metadata holds at most these two, as strings (first_status_only) */
        fs.uid = kas_json_get_string(patch, "metadata.uid");
        fs.rv = kas_json_get_string(patch, "metadata.resourceVersion");
        if (status_spliced(store, res, ns, name, &fs, &spliced, error))
            return spliced;
    }
    kas_store_lock(store);
    KasObj *cur = kas_store_get_locked(store, res, ns, name);
    if (cur == NULL || !res->active) {
        kas_store_unlock(store);
        err_not_found(error, res, name);
        return NULL;
    }
    /* parsed once: the patch applies to a copy, the update compares against the original */
    json_object *curj = kas_obj_parse(cur);
    /* DRA kinds only: their status admission reads what the status shares (kas-dra.c) */
    gboolean status_merge = status && type == KAS_PATCH_MERGE && kas_dra_is(res) &&
                            json_object_is_type(patch, json_type_object) &&
                            json_object_is_type(curj, json_type_object);
    g_autofree char *av = kas_res_api_version(res, version);
    json_object *doc = NULL;
    gboolean ok = TRUE;
    if (status_merge) {
        doc = status_patched(curj, av, patch);
    } else {
        doc = copy_json(curj);
        kas_json_set_string(doc, "apiVersion", av);
        ok = kas_ops_patch_apply(&doc, type, patch, error);
    }
    KasObj *out = NULL;
    if (ok && check_type(res, version, doc, error))
        out = status ? update_status_in_place_locked(store, res, cur, curj, name, doc, error)
                     : update_parsed_locked(store, res, cur, curj, name, doc, status, error);
    kas_store_unlock(store);
    json_object_put(doc);
    json_object_put(curj);
    return out;
}

/* ---- binding and eviction ----------------------------------------------------------------------- */

static void set_pod_condition(json_object *pod, const char *type, const char *value)
{
    json_object *status = kas_json_ensure_object(pod, "status");
    json_object *conds = kas_json_get(status, "conditions");
    if (!json_object_is_type(conds, json_type_array)) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    g_autofree char *now = now_string();
    json_object *c = NULL;
    for (gsize i = 0; i < json_object_array_length(conds) && c == NULL; i++) {
        json_object *e = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(e, "type"), type) == 0)
            c = e;
    }
    if (c == NULL) {
        c = json_object_new_object();
        kas_json_set_string(c, "type", type);
        json_object_array_add(conds, c);
    }
    if (g_strcmp0(kas_json_get_string(c, "status"), value) != 0)
        kas_json_set_string(c, "lastTransitionTime", now);
    kas_json_set_string(c, "status", value);
    json_object_object_add(c, "lastProbeTime", NULL);
}

/* The checks of a Binding against the stored pod @cur (409s). */
static gboolean bind_admitted(KasRes *pods, KasObj *cur, const char *name, json_object *binding,
                              GError **error)
{
    const char *buid = kas_json_get_string(binding, "metadata.uid");
    const char *brv = kas_json_get_string(binding, "metadata.resourceVersion");
    if ((buid != NULL && buid[0] != '\0' && strcmp(buid, cur->uid) != 0) ||
        (brv != NULL && brv[0] != '\0' && g_ascii_strtoull(brv, NULL, 10) != cur->rv))
        return err_conflict(error, pods, "binding", name,
                            "the object has been modified; please apply your changes to the "
                            "latest version and try again");
    if (cur->deleting) {
        g_autofree char *why = g_strdup_printf("pod %s is being deleted, cannot be assigned to a host",
                                               name);
        return err_conflict(error, pods, "binding", name, why);
    }
    const char *node = kas_obj_field(pods, cur, "spec.nodeName");
    if (node != NULL && node[0] != '\0') {
        g_autofree char *why = g_strdup_printf("pod %s is already assigned to node \"%s\"", name, node);
        return err_conflict(error, pods, "binding", name, why);
    }
    return TRUE;
}

/* @cur (a stored pod, borrowed) bound to @target as @binding says: a new tree, or NULL and
 * @error (409) when the pod has scheduling gates. Needs no lock: stored objects are immutable. */
static json_object *bound_pod(KasRes *pods, KasObj *cur, const char *name, const char *target,
                              json_object *binding, GError **error)
{
    json_object *j = kas_obj_parse(cur);
    if (kas_pods_gated(j)) {
        /* 1.27+: a pod with scheduling gates is never bound */
        json_object_put(j);
        g_autofree char *why = g_strdup_printf("pod %s has non-empty .spec.schedulingGates", name);
        err_conflict(error, pods, "binding", name, why);
        return NULL;
    }
    kas_json_set_string(kas_json_ensure_object(j, "spec"), "nodeName", target);
    json_object *ann = kas_json_get(binding, "metadata.annotations");
    if (json_object_is_type(ann, json_type_object)) {
        json_object *pann = kas_json_ensure_object(kas_json_get(j, "metadata"), "annotations");
        json_object_object_foreach(ann, k, v)
        {
            json_object_object_add(pann, k, json_object_get(v));
        }
    }
    set_pod_condition(j, "PodScheduled", "True");
    return j;
}

/*
 * One try of a binding: the checks against the stored pod under the store's lock, the new pod
 * parsed, edited and printed outside it, and stored under it again only if the pod was not
 * written meanwhile (*@raced set: the caller tries again). The last try (@locked) does it all
 * under the lock, so a pod written without pause still gets an answer. Parsing and printing a
 * pod under the lock that every request takes serialised kb-apiserver's threads: with a claim
 * write before each binding (bench-e2e --dra) they waited on it more than they ran.
 */
static gboolean bind_try(KasStore *store, const char *ns, const char *name, const char *target,
                         json_object *binding, gboolean locked, gboolean *raced, GError **error)
{
    kas_store_lock(store);
    KasRes *pods = kas_store_find_locked(store, "", "v1", "pods");
    KasObj *cur = kas_store_get_locked(store, pods, ns, name);
    if (cur == NULL || !bind_admitted(pods, cur, name, binding, error)) {
        kas_store_unlock(store);
        return cur == NULL ? err_not_found(error, pods, name) : FALSE;
    }
    if (locked) {
        json_object *j = bound_pod(pods, cur, name, target, binding, error);
        if (j != NULL)
            kas_store_put_locked(store, pods, j);
        kas_store_unlock(store);
        json_object_put(j);
        return j != NULL;
    }
    g_autoptr(KasObj) read = kas_obj_ref(cur);
    kas_store_unlock(store);
    json_object *j = bound_pod(pods, read, name, target, binding, error);
    if (j == NULL)
        return FALSE;
    KasPrepared prep = {0};
    gboolean ok = kas_store_prepare(pods, j, &prep);
    json_object_put(j);
    if (!ok) {
        *raced = TRUE; /* not printable as expected: the locked try */
        return FALSE;
    }
    race_point("binding", read);
    kas_store_lock(store);
    *raced = kas_store_put_prepared_locked(store, pods, read, &prep) == NULL;
    kas_store_unlock(store);
    kas_prepared_clear(&prep);
    if (*raced)
        g_atomic_int_inc(&optimistic_retries);
    return !*raced;
}

gboolean kas_ops_bind(KasStore *store, const char *ns, const char *name, json_object *binding,
                      GError **error)
{
    if (!json_object_is_type(binding, json_type_object)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST, "the body must be a Binding object");
        return FALSE;
    }
    const char *kind = kas_json_get_string(binding, "kind");
    if (kind != NULL && strcmp(kind, "Binding") != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "%s in version \"v1\" cannot be handled as a Binding", kind);
        return FALSE;
    }
    const char *target = kas_json_get_string(binding, "target.name");
    const char *bname = kas_json_get_string(binding, "metadata.name");
    if (name == NULL)
        name = bname;
    if (name == NULL || name[0] == '\0') {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST, "name is required for a Binding");
        return FALSE;
    }
    if (bname != NULL && bname[0] != '\0' && strcmp(bname, name) != 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "name in URL does not match name in Binding object");
        return FALSE;
    }
    if (target == NULL || target[0] == '\0') {
        g_set_error(error, KAS_ERROR, KAS_ERR_INVALID,
                    "Binding \"%s\" is invalid: target.name: Required value", name);
        return FALSE;
    }
    for (guint i = 0;; i++) {
        gboolean raced = FALSE;
        if (bind_try(store, ns, name, target, binding, i + 1 == KAS_OPS_OPTIMISTIC_TRIES, &raced,
                     error))
            return TRUE;
        if (!raced)
            return FALSE;
    }
}

/*
 * As kube-apiserver's eviction does since PodDisruptionConditions (1.26 on by default): the pod
 * gets DisruptionTarget True (reason EvictionByEvictionAPI), replacing a condition of that type,
 * in an update of its own before the delete. Skipped when the preconditions do not hold (the
 * delete then says why). Returns the pod to delete (a reference), @opts' resourceVersion
 * precondition moved to the updated pod's in @rvbuf.
 */
static KasObj *mark_disruption_target(KasStore *store, KasRes *pods, KasObj *cur, json_object *curj,
                                      KasDeleteOptions *opts, char *rvbuf, gsize rvbuf_size)
{
    g_snprintf(rvbuf, rvbuf_size, "%" G_GUINT64_FORMAT, cur->rv);
    if ((opts->precondition_uid != NULL && strcmp(opts->precondition_uid, cur->uid) != 0) ||
        (opts->precondition_rv != NULL && strcmp(opts->precondition_rv, rvbuf) != 0))
        return kas_obj_ref(cur);
    json_object *j = copy_json(curj);
    set_pod_condition(j, "DisruptionTarget", "True");
    json_object *conds = kas_json_get(j, "status.conditions");
    for (gsize i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), "DisruptionTarget") == 0) {
            kas_json_set_string(c, "reason", "EvictionByEvictionAPI");
            kas_json_set_string(c, "message", "Eviction API: evicting");
        }
    }
    KasObj *now = commit_update(store, pods, cur, curj, j);
    json_object_put(j);
    if (opts->precondition_rv != NULL) {
        g_snprintf(rvbuf, rvbuf_size, "%" G_GUINT64_FORMAT, now->rv);
        opts->precondition_rv = rvbuf;
    }
    return now;
}

gboolean kas_ops_evict(KasStore *store, const char *ns, const char *name, json_object *eviction,
                       GError **error)
{
    if (!kas_evict_check_body(eviction, error))
        return FALSE;
    KasDeleteOptions opts = { .grace_seconds = -1 };
    json_object *dopts = kas_json_get(eviction, "deleteOptions");
    json_object *g = kas_json_get(dopts, "gracePeriodSeconds");
    if (g != NULL)
        opts.grace_seconds = json_object_get_int64(g);
    opts.precondition_uid = kas_json_get_string(dopts, "preconditions.uid");
    opts.precondition_rv = kas_json_get_string(dopts, "preconditions.resourceVersion");
    opts.propagation = kas_json_get_string(dopts, "propagationPolicy");
    kas_store_lock(store);
    KasRes *pods = kas_store_find_locked(store, "", "v1", "pods");
    KasObj *cur = kas_store_get_locked(store, pods, ns, name);
    KasObj *out = NULL;
    if (cur == NULL) {
        err_not_found(error, pods, name);
    } else {
        json_object *j = kas_obj_parse(cur);
        gboolean removed;
        /* a pod already being deleted is not counted against its budget again */
        if (cur->deleting || kas_evict_check_locked(store, ns, j, error)) {
            char rvbuf[32];
            g_autoptr(KasObj) marked =
                    mark_disruption_target(store, pods, cur, j, &opts, rvbuf, sizeof rvbuf);
            KasObj *live = kas_store_get_locked(store, pods, ns, name);
            if (live != NULL && strcmp(live->uid, marked->uid) == 0)
                out = delete_locked(store, pods, live, &opts, &removed, error);
            else
                out = kas_obj_ref(marked); /* the update finished a deletion under way */
        }
        json_object_put(j);
    }
    kas_store_unlock(store);
    kas_obj_unref(out);
    return out != NULL;
}

/* ---- controllers ------------------------------------------------------------------------------------ */

gboolean kas_ops_mutate(KasStore *store, KasRes *res, const char *ns, const char *name,
                        const char *uid, KasMutateFn fn, gpointer data)
{
    gboolean wrote = FALSE;
    kas_store_lock(store);
    KasObj *cur = kas_store_get_locked(store, res, ns, name);
    if (cur != NULL && (uid == NULL || strcmp(uid, cur->uid) == 0)) {
        json_object *curj = kas_obj_parse(cur);
        json_object *j = copy_json(curj);
        if (fn(j, data) && !json_object_equal(j, curj)) {
            kas_obj_unref(commit_update(store, res, cur, curj, j));
            wrote = TRUE;
        }
        json_object_put(j);
        json_object_put(curj);
    }
    kas_store_unlock(store);
    return wrote;
}

gboolean kas_ops_mutate_parsed(KasStore *store, KasRes *res, const char *ns, const char *name,
                               const char *uid, json_object *obj, KasMutateFn fn, gpointer data)
{
    const char *rv = kas_json_get_string(obj, "metadata.resourceVersion");
    kas_store_lock(store);
    KasObj *cur = kas_store_get_locked(store, res, ns, name);
    gboolean current = cur != NULL && (uid == NULL || strcmp(uid, cur->uid) == 0) && rv != NULL &&
                       g_ascii_isdigit(rv[0]) && g_ascii_strtoull(rv, NULL, 10) == cur->rv;
    gboolean wrote = FALSE;
    if (current && fn(obj, data)) {
        /* no former state to compare with: @fn said it changed something */
        kas_obj_unref(commit_update(store, res, cur, NULL, obj));
        wrote = TRUE;
    }
    kas_store_unlock(store);
    if (!current)
        return kas_ops_mutate(store, res, ns, name, uid, fn, data);
    return wrote;
}

void kas_ops_bootstrap(KasStore *store)
{
    static const char *const names[] = { "default", "kube-system", "kube-public", "kube-node-lease" };
    kas_store_lock(store);
    KasRes *nsres = kas_store_find_locked(store, "", "v1", "namespaces");
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        json_object *ns = json_object_new_object();
        kas_json_set_string(ns, "apiVersion", "v1");
        kas_json_set_string(ns, "kind", "Namespace");
        kas_json_set_string(kas_json_ensure_object(ns, "metadata"), "name", names[i]);
        kas_obj_unref(create_locked(store, nsres, NULL, ns, NULL));
        json_object_put(ns);
    }
    /* The API server's own Service, as every cluster has it. */
    KasRes *svcres = kas_store_find_locked(store, "", "v1", "services");
    json_object *svc = json_tokener_parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"kubernetes\","
        "\"labels\":{\"component\":\"apiserver\",\"provider\":\"kubernetes\"}},\"spec\":{"
        "\"clusterIP\":\"10.96.0.1\",\"clusterIPs\":[\"10.96.0.1\"],\"ports\":[{\"name\":\"https\","
        "\"port\":443,\"protocol\":\"TCP\",\"targetPort\":6443}]}}");
    kas_obj_unref(create_locked(store, svcres, "default", svc, NULL));
    json_object_put(svc);
    kas_store_unlock(store);
}
