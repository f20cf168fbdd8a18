/* scheduling.k8s.io/v1beta1 Workloads and PodGroups (see kas-gang.h). */
#include "testbed/apiserver/kas-gang.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"

#define DNS_SUBDOMAIN_WHY                                                                          \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "       \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define DNS_LABEL_WHY                                                                              \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

gboolean kas_gang_is(const KasRes *res)
{
    return strcmp(res->group, KAS_GANG_GROUP) == 0 &&
           (strcmp(res->plural, "workloads") == 0 || strcmp(res->plural, "podgroups") == 0 ||
            strcmp(res->plural, "compositepodgroups") == 0);
}

static gboolean is_composite(const KasRes *res)
{
    return strcmp(res->plural, "compositepodgroups") == 0;
}

/* The CompositePodGroup feature: served at v1alpha3 (the same object at every version). */
static gboolean composite_on(const KasRes *res)
{
    return res->versions != NULL && g_strv_contains((const char *const *)res->versions, "v1alpha3");
}

static gboolean label_ok(const char *s, gsize n)
{
    if (n == 0 || n > 63 || !g_ascii_isalnum(s[0]) || !g_ascii_isalnum(s[n - 1]))
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!(g_ascii_islower(s[i]) || g_ascii_isdigit(s[i]) || s[i] == '-'))
            return FALSE;
    return TRUE;
}

static gboolean subdomain_ok(const char *s)
{
    gsize n = strlen(s), start = 0;
    if (n == 0 || n > 253)
        return FALSE;
    for (gsize i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!label_ok(s + start, i - start))
                return FALSE;
            start = i + 1;
        }
    }
    return TRUE;
}

static void check_name(KasFieldErrors *errs, const char *field, json_object *parent,
                       const char *key, gboolean label)
{
    g_autofree char *path = g_strdup_printf("%s.%s", field, key);
    json_object *v = kas_json_get(parent, key);
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (s == NULL || s[0] == '\0') {
        kas_field_errors_add(errs, path, "Required value");
        return;
    }
    if (label ? !label_ok(s, strlen(s)) : !subdomain_ok(s))
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": %s", s,
                              label ? DNS_LABEL_WHY : DNS_SUBDOMAIN_WHY);
}

/* A union of structs: exactly one of @a, @b (declarative validation's union messages). */
static int check_union(KasFieldErrors *errs, const char *field, json_object *u, const char *a,
                       const char *b, gboolean required)
{
    gboolean ha = kas_json_get(u, a) != NULL, hb = kas_json_get(u, b) != NULL;
    if (ha && hb) {
        kas_field_errors_addf(errs, field,
                              "Invalid value: \"{`%s`, `%s`}\": exactly one of `%s`, `%s` is "
                              "required, but multiple fields are set",
                              a, b, a, b);
        return -1;
    }
    if (!ha && !hb) {
        if (required || u != NULL)
            kas_field_errors_addf(errs, field,
                                  "Invalid value: \"\": must specify one of: `%s`, `%s`", a, b);
        return -1;
    }
    return ha ? 0 : 1;
}

static void check_policy(KasFieldErrors *errs, const char *field, json_object *policy)
{
    if (check_union(errs, field, policy, "basic", "gang", TRUE) != 1)
        return;
    g_autofree char *path = g_strdup_printf("%s.gang.minCount", field);
    json_object *mc = kas_json_get(policy, "gang.minCount");
    gint64 n = json_object_is_type(mc, json_type_int) ? json_object_get_int64(mc) : 0;
    if (n == 0)
        kas_field_errors_add(errs, path, "Required value");
    else if (n < 0)
        kas_field_errors_addf(errs, path,
                              "Invalid value: %" G_GINT64_FORMAT ": must be greater than zero", n);
}

/* A composite's schedulingPolicy: gang.minGroupCount is +k8s:required, +k8s:minimum=1. */
static void check_composite_policy(KasFieldErrors *errs, const char *field, json_object *policy)
{
    if (check_union(errs, field, policy, "basic", "gang", TRUE) != 1)
        return;
    g_autofree char *path = g_strdup_printf("%s.gang.minGroupCount", field);
    json_object *mc = kas_json_get(policy, "gang.minGroupCount");
    gint64 n = json_object_is_type(mc, json_type_int) ? json_object_get_int64(mc) : 0;
    if (n == 0)
        kas_field_errors_add(errs, path, "Required value");
    else if (n < 1)
        kas_field_errors_addf(
                errs, path,
                "Invalid value: %" G_GINT64_FORMAT ": must be greater than or equal to 1", n);
}

/* The fields every group and template has but the scheduling policy. */
static void check_common_fields(KasFieldErrors *errs, const char *field, json_object *spec)
{
    g_autofree char *dm = g_strdup_printf("%s.disruptionMode", field);
    g_autofree char *pp = g_strdup_printf("%s.preemptionPolicy", field);
    g_autofree char *prio = g_strdup_printf("%s.priority", field);
    check_union(errs, dm, kas_json_get(spec, "disruptionMode"), "single", "all", FALSE);
    const char *p = kas_json_get_string(spec, "preemptionPolicy");
    if (p != NULL && strcmp(p, "Never") != 0 && strcmp(p, "PreemptLowerPriority") != 0)
        kas_field_errors_addf(errs, pp,
                              "Unsupported value: \"%s\": supported values: \"Never\", "
                              "\"PreemptLowerPriority\"",
                              p);
    json_object *pv = kas_json_get(spec, "priority");
    if (pv != NULL && json_object_get_int64(pv) > 1000000000)
        kas_field_errors_addf(errs, prio,
                              "Invalid value: %" G_GINT64_FORMAT
                              ": must be less than or equal to 1000000000",
                              json_object_get_int64(pv));
    json_object *topo = kas_json_get(spec, "schedulingConstraints.topology");
    for (gsize i = 0;
         json_object_is_type(topo, json_type_array) && i < json_object_array_length(topo); i++) {
        g_autofree char *t = g_strdup_printf("%s.schedulingConstraints.topology[%zu]", field, i);
        json_object *k = kas_json_get(json_object_array_get_idx(topo, i), "key");
        if (!json_object_is_type(k, json_type_string) || json_object_get_string_len(k) == 0) {
            g_autofree char *kp = g_strdup_printf("%s.key", t);
            kas_field_errors_add(errs, kp, "Required value");
        }
    }
}

/* The fields a PodGroup and a pod group template share. */
static void check_group_fields(KasFieldErrors *errs, const char *field, json_object *spec)
{
    g_autofree char *policy = g_strdup_printf("%s.schedulingPolicy", field);
    check_policy(errs, policy, kas_json_get(spec, "schedulingPolicy"));
    check_common_fields(errs, field, spec);
}

/* spec.parentCompositePodGroupName: a DNS subdomain (+k8s:format=k8s-long-name). */
static void check_parent(KasFieldErrors *errs, json_object *spec)
{
    json_object *p = kas_json_get(spec, "parentCompositePodGroupName");
    if (p == NULL)
        return;
    const char *s = json_object_is_type(p, json_type_string) ? json_object_get_string(p) : "";
    if (!subdomain_ok(s))
        kas_field_errors_addf(errs, "spec.parentCompositePodGroupName", "Invalid value: \"%s\": %s",
                              s, DNS_SUBDOMAIN_WHY);
}

static void check_workload_ref(KasFieldErrors *errs, json_object *spec, gboolean required)
{
    json_object *ref = kas_json_get(spec, "workloadRef");
    if (ref == NULL) {
        if (required)
            kas_field_errors_add(errs, "spec.workloadRef", "Required value");
        return;
    }
    check_name(errs, "spec.workloadRef", ref, "workloadName", FALSE);
    check_name(errs, "spec.workloadRef", ref, "templateName", TRUE);
}

/* A CompositePodGroup's spec, in the order of its fields (declarative validation's). */
static void check_composite(KasFieldErrors *errs, json_object *spec)
{
    check_parent(errs, spec);
    check_workload_ref(errs, spec, TRUE);
    check_composite_policy(errs, "spec.schedulingPolicy", kas_json_get(spec, "schedulingPolicy"));
    check_common_fields(errs, "spec", spec);
}

/*
 * A Workload's compositePodGroupTemplates (CompositePodGroup on): at most 8 at each level, names
 * DNS labels unique over the whole tree, at most 4 levels, each with a child template.
 */
static void check_composite_templates(KasFieldErrors *errs, const char *field, json_object *list,
                                      GHashTable *seen, guint depth)
{
    gsize n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    if (n > KAS_GANG_MAX_TEMPLATES) {
        kas_field_errors_addf(errs, field, "Too many: %zu: must have at most %d items", n,
                              KAS_GANG_MAX_TEMPLATES);
        return;
    }
    for (gsize i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(list, i);
        g_autofree char *f = g_strdup_printf("%s[%zu]", field, i);
        check_name(errs, f, t, "name", TRUE);
        const char *name = kas_json_get_string(t, "name");
        if (name != NULL && !g_hash_table_add(seen, (gpointer)name)) {
            g_autofree char *nf = g_strdup_printf("%s.name", f);
            kas_field_errors_addf(errs, nf, "Duplicate value: \"%s\"", name);
        }
        g_autofree char *policy = g_strdup_printf("%s.schedulingPolicy", f);
        check_composite_policy(errs, policy, kas_json_get(t, "schedulingPolicy"));
        check_common_fields(errs, f, t);
        json_object *pgs = kas_json_get(t, "podGroupTemplates");
        json_object *cpgs = kas_json_get(t, "compositePodGroupTemplates");
        gsize npg = json_object_is_type(pgs, json_type_array) ? json_object_array_length(pgs) : 0;
        gsize ncpg =
                json_object_is_type(cpgs, json_type_array) ? json_object_array_length(cpgs) : 0;
        if (npg == 0 && ncpg == 0)
            kas_field_errors_addf(errs, f,
                                  "Invalid value: \"%s\": must have at least one child "
                                  "PodGroupTemplate or CompositePodGroupTemplate",
                                  name != NULL ? name : "");
        if (ncpg > 0 && depth + 1 > KAS_GANG_MAX_DEPTH) {
            kas_field_errors_addf(errs, f,
                                  "Invalid value: \"array\": maximum template hierarchy "
                                  "depth is %d",
                                  KAS_GANG_MAX_DEPTH);
            continue;
        }
        for (gsize j = 0; j < npg; j++) {
            json_object *pt = json_object_array_get_idx(pgs, j);
            g_autofree char *pf = g_strdup_printf("%s.podGroupTemplates[%zu]", f, j);
            check_name(errs, pf, pt, "name", TRUE);
            const char *pn = kas_json_get_string(pt, "name");
            if (pn != NULL && !g_hash_table_add(seen, (gpointer)pn)) {
                g_autofree char *nf = g_strdup_printf("%s.name", pf);
                kas_field_errors_addf(errs, nf, "Duplicate value: \"%s\"", pn);
            }
            check_group_fields(errs, pf, pt);
        }
        g_autofree char *cf = g_strdup_printf("%s.compositePodGroupTemplates", f);
        check_composite_templates(errs, cf, cpgs, seen, depth + 1);
    }
}

/* disruptionMode: {single: {}} where not given. */
static void default_disruption(json_object *spec)
{
    if (spec != NULL && kas_json_get(spec, "disruptionMode") == NULL)
        kas_json_ensure_object(kas_json_ensure_object(spec, "disruptionMode"), "single");
}

static void defaults(const KasRes *res, json_object *obj)
{
    json_object *spec = kas_json_get(obj, "spec");
    if (!json_object_is_type(spec, json_type_object))
        return;
    if (strcmp(res->plural, "workloads") != 0) {
        default_disruption(spec);
        return;
    }
    json_object *t = kas_json_get(spec, "podGroupTemplates");
    for (gsize i = 0; json_object_is_type(t, json_type_array) && i < json_object_array_length(t);
         i++)
        default_disruption(json_object_array_get_idx(t, i));
}

static void check_templates(KasFieldErrors *errs, json_object *spec)
{
    json_object *t = kas_json_get(spec, "podGroupTemplates");
    json_object *ct = kas_json_get(spec, "compositePodGroupTemplates");
    gsize n = json_object_is_type(t, json_type_array) ? json_object_array_length(t) : 0;
    if (n == 0 && json_object_is_type(ct, json_type_array) && json_object_array_length(ct) > 0) {
        /* exactly one of the two lists: the composite tree (CompositePodGroup on) */
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
        check_composite_templates(errs, "spec.compositePodGroupTemplates", ct, seen, 1);
        return;
    }
    if (n > 0 && json_object_is_type(ct, json_type_array) && json_object_array_length(ct) > 0) {
        kas_field_errors_add(errs, "spec",
                             "Invalid value: \"{`compositePodGroupTemplates`, "
                             "`podGroupTemplates`}\": exactly one of "
                             "`compositePodGroupTemplates`, `podGroupTemplates` is required, but "
                             "multiple fields are set");
        return;
    }
    if (n == 0) {
        kas_field_errors_add(errs, "spec.podGroupTemplates",
                             "Required value: must have at least one item");
        return;
    }
    if (n > KAS_GANG_MAX_TEMPLATES) {
        kas_field_errors_addf(errs, "spec.podGroupTemplates",
                              "Too many: %zu: must have at most %d items", n,
                              KAS_GANG_MAX_TEMPLATES);
        return;
    }
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (gsize i = 0; i < n; i++) {
        json_object *tp = json_object_array_get_idx(t, i);
        g_autofree char *f = g_strdup_printf("spec.podGroupTemplates[%zu]", i);
        check_name(errs, f, tp, "name", TRUE);
        const char *name = kas_json_get_string(tp, "name");
        if (name != NULL && !g_hash_table_add(seen, (gpointer)name))
            kas_field_errors_addf(errs, f, "Duplicate value: \"%s\"", name);
        check_group_fields(errs, f, tp);
    }
}

static void check_podgroup(KasFieldErrors *errs, json_object *spec)
{
    check_parent(errs, spec);
    check_group_fields(errs, "spec", spec);
    check_workload_ref(errs, spec, FALSE);
}

/*
 * Fields of the CompositePodGroup feature on a PodGroup or Workload (any version): with the
 * feature off they are dropped, as kube-apiserver drops a disabled feature's fields, unless the
 * stored object (@old_spec, NULL on create) has them already.
 */
static void drop_disabled(const KasRes *res, json_object *spec, json_object *old_spec)
{
    static const char *const gated[] = {"parentCompositePodGroupName",
                                        "compositePodGroupTemplates"};
    if (composite_on(res) || !json_object_is_type(spec, json_type_object))
        return;
    for (guint i = 0; i < G_N_ELEMENTS(gated); i++)
        if (kas_json_get(old_spec, gated[i]) == NULL)
            json_object_object_del(spec, gated[i]);
}

/* Priority admission: a PodGroup's priority from its priorityClassName. */
static gboolean group_priority(KasStore *store, const KasRes *res, json_object *obj, GError **error)
{
    json_object *spec = kas_json_get(obj, "spec");
    const char *pcn = kas_json_get_string(spec, "priorityClassName");
    if (pcn == NULL || pcn[0] == '\0')
        return TRUE;
    KasRes *pcs = kas_store_find_locked(store, "scheduling.k8s.io", "v1", "priorityclasses");
    KasObj *pc = pcs != NULL ? kas_store_get_locked(store, pcs, NULL, pcn) : NULL;
    if (pc == NULL) {
        g_autofree char *q = kas_res_qualified(res);
        g_set_error(error, KAS_ERROR, KAS_ERR_FORBIDDEN,
                    "%s \"%s\" is forbidden: no PriorityClass with name %s was found", q,
                    kas_json_get_string(obj, "metadata.name"), pcn);
        return FALSE;
    }
    json_object *j = kas_obj_parse(pc);
    gint64 value = json_object_get_int64(kas_json_get(j, "value"));
    json_object_put(j);
    json_object *given = kas_json_get(spec, "priority");
    if (given != NULL && json_object_get_int64(given) != value) {
        g_autofree char *q = kas_res_qualified(res);
        g_set_error(error, KAS_ERROR, KAS_ERR_FORBIDDEN,
                    "%s \"%s\" is forbidden: the integer value of priority (%" G_GINT64_FORMAT
                    ") must not be provided in spec; priority admission controller computed "
                    "%" G_GINT64_FORMAT " from the given PriorityClass name",
                    q, kas_json_get_string(obj, "metadata.name"), json_object_get_int64(given),
                    value);
        return FALSE;
    }
    json_object_object_add(spec, "priority", json_object_new_int64(value));
    return TRUE;
}

gboolean kas_gang_admit_create(KasStore *store, const KasRes *res, json_object *obj, GError **error)
{
    const char *name = kas_json_get_string(obj, "metadata.name");
    json_object *spec = kas_json_get(obj, "spec");
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    if (!json_object_is_type(spec, json_type_object)) {
        kas_field_errors_add(errs, "spec", "Required value");
        return kas_field_errors_check(errs, res, name, error);
    }
    defaults(res, obj);
    drop_disabled(res, spec, NULL);
    if (strcmp(res->plural, "podgroups") == 0) {
        json_object_object_del(obj, "status");
        check_podgroup(errs, spec);
    } else if (is_composite(res)) {
        json_object_object_del(obj, "status");
        check_composite(errs, spec);
    } else {
        check_templates(errs, spec);
    }
    if (!kas_field_errors_check(errs, res, name, error))
        return FALSE;
    return strcmp(res->plural, "workloads") == 0 || group_priority(store, res, obj, error);
}

static void immutable(KasFieldErrors *errs, json_object *old_spec, json_object *new_spec,
                      const char *key)
{
    json_object *o = kas_json_get(old_spec, key), *n = kas_json_get(new_spec, key);
    if (json_object_equal(o, n))
        return;
    g_autofree char *path = g_strdup_printf("spec.%s", key);
    if (json_object_is_type(n, json_type_string))
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": field is immutable",
                              json_object_get_string(n));
    else if (json_object_is_type(n, json_type_int))
        kas_field_errors_addf(errs, path, "Invalid value: %s: field is immutable",
                              json_object_get_string(n));
    else
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": field is immutable",
                              json_object_is_type(n, json_type_array) ? "array"
                              : n == NULL                             ? "null"
                                                                      : "object");
}

gboolean kas_gang_admit_update(const KasRes *res, json_object *old, json_object *new_obj,
                               GError **error)
{
    static const char *const podgroup_fixed[] = {
            "workloadRef",      "schedulingConstraints",      "resourceClaims",
            "disruptionMode",   "priorityClassName",          "priority",
            "preemptionPolicy", "parentCompositePodGroupName"};
    static const char *const workload_fixed[] = {"podGroupTemplates", "compositePodGroupTemplates"};
    const char *name = kas_json_get_string(old, "metadata.name");
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    json_object *spec = kas_json_get(new_obj, "spec");
    if (!json_object_is_type(spec, json_type_object)) {
        kas_field_errors_add(errs, "spec", "Required value");
        return kas_field_errors_check(errs, res, name, error);
    }
    defaults(res, new_obj);
    json_object *old_spec = kas_json_get(old, "spec");
    drop_disabled(res, spec, old_spec);
    gboolean pg = strcmp(res->plural, "podgroups") == 0;
    if (is_composite(res)) {
        if (kas_json_get(spec, "priority") == NULL && kas_json_get(old_spec, "priority") != NULL)
            json_object_object_add(spec, "priority",
                                   json_object_get(kas_json_get(old_spec, "priority")));
        /* its whole spec is +k8s:immutable: validate.Immutable says so without the value */
        static const char *const composite_fixed[] = {"parentCompositePodGroupName",
                                                      "workloadRef",
                                                      "schedulingPolicy",
                                                      "schedulingConstraints",
                                                      "disruptionMode",
                                                      "priorityClassName",
                                                      "priority",
                                                      "preemptionPolicy"};
        for (guint i = 0; i < G_N_ELEMENTS(composite_fixed); i++) {
            if (json_object_equal(kas_json_get(old_spec, composite_fixed[i]),
                                  kas_json_get(spec, composite_fixed[i])))
                continue;
            g_autofree char *path = g_strdup_printf("spec.%s", composite_fixed[i]);
            kas_field_errors_add(errs, path, "Invalid value: \"null\": field is immutable");
        }
    } else if (pg) {
        /* Priority admission's value is kept when a client leaves it out. */
        if (kas_json_get(spec, "priority") == NULL && kas_json_get(old_spec, "priority") != NULL)
            json_object_object_add(spec, "priority",
                                   json_object_get(kas_json_get(old_spec, "priority")));
        check_podgroup(errs, spec);
        for (guint i = 0; i < G_N_ELEMENTS(podgroup_fixed); i++)
            immutable(errs, old_spec, spec, podgroup_fixed[i]);
    } else {
        for (guint i = 0; i < G_N_ELEMENTS(workload_fixed); i++)
            immutable(errs, old_spec, spec, workload_fixed[i]);
        if (kas_json_get(old_spec, "controllerRef") != NULL)
            immutable(errs, old_spec, spec, "controllerRef");
    }
    return kas_field_errors_check(errs, res, name, error);
}

void kas_gang_validate_pod(json_object *spec, KasFieldErrors *errs)
{
    json_object *sg = kas_json_get(spec, "schedulingGroup");
    if (sg == NULL)
        return;
    const char *n = kas_json_get_string(sg, "podGroupName");
    if (n == NULL) {
        /* a union of one member: it must be given */
        kas_field_errors_add(errs, "spec.schedulingGroup",
                             "Invalid value: \"\": must specify one of: `podGroupName`");
        return;
    }
    if (!subdomain_ok(n))
        kas_field_errors_addf(errs, "spec.schedulingGroup.podGroupName",
                              "Invalid value: \"%s\": %s", n, DNS_SUBDOMAIN_WHY);
}
