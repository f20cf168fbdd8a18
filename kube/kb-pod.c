/*
 * Pod decoding (kb_pod_decode); see kb-objects.h. Errors carry the pod and the field path:
 * "pod default/p1: spec.containers[0].resources.requests[\"nvidia.com/gpu\"]: invalid quantity
 * \"12Qi\": unknown suffix \"Qi\"".
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"

#define GROUP_ANNOTATION "scheduling.k8s.io/group-name"
#define GROUP_LABEL "scheduling.x-k8s.io/pod-group"
#define DEFAULT_SCHEDULER "default-scheduler"

/* ---- resources ------------------------------------------------------------------------------ */

static gboolean requested_in(int slot, gpointer requests)
{
    return requests != NULL && json_object_object_get_ex(requests, kb_resource_name(slot), NULL);
}

void kb_pod_default_requests(KbResources *requests, const KbResources *limits,
                             KbRequestedFunc requested, gpointer data)
{
    for (int i = 0; i < KB_RES_MAX; i++) {
        if (limits->v[i] != 0 && !requested(i, data))
            requests->v[i] = limits->v[i];
    }
}

void kb_pod_requests_fold_init(KbPodRequestsFold *f)
{
    kb_resources_clear(&f->sum);
    kb_resources_clear(&f->init_peak);
    kb_resources_clear(&f->sidecars);
    kb_resources_clear(&f->pod_requests);
    kb_resources_clear(&f->pod_limits);
    f->pod_requested = 0;
    f->pod_limited = 0;
    f->n_apps = 0;
    kb_resources_clear(&f->overhead);
}

static gboolean pod_level_slot(int slot)
{
    const char *name = kb_resource_name(slot);
    return slot == KB_RES_CPU || slot == KB_RES_MEMORY ||
           (name != NULL && g_str_has_prefix(name, "hugepages-"));
}

void kb_pod_requests_fold_pod_level(KbPodRequestsFold *f, const KbResources *requests,
                                    KbRequestedFunc requested, gpointer req_data,
                                    const KbResources *limits, KbRequestedFunc limited,
                                    gpointer lim_data)
{
    for (int i = 0; i < KB_RES_MAX && i < 32; i++) {
        if (!pod_level_slot(i))
            continue;
        if (requested(i, req_data)) {
            f->pod_requested |= 1u << i;
            f->pod_requests.v[i] = requests->v[i];
        }
        if (limited(i, lim_data)) {
            f->pod_limited |= 1u << i;
            f->pod_limits.v[i] = limits->v[i];
        }
    }
}

void kb_pod_requests_fold_container(KbPodRequestsFold *f, const char *name, const KbResources *r)
{
    if (f->n_apps < KB_MAX_CONTAINERS) {
        f->app_names[f->n_apps] = name;
        f->apps[f->n_apps++] = *r;
    } else {
        kb_resources_add(&f->sum, r);
    }
}

/* What the node holds for app container @name (NULL when no status says). */
static const KbContainerStatus *held_by(const KbPod *pod, const char *name)
{
    for (guint i = 0; name != NULL && i < pod->n_container_statuses; i++) {
        const KbContainerStatus *cs = &pod->container_statuses[i];
        if (cs->held_mask != 0 && g_strcmp0(cs->name, name) == 0)
            return cs;
    }
    return NULL;
}

/* kube-scheduler's rule for a container resized in place: max(spec, status), or the status
 * alone when the resize is infeasible (resources the status does not name keep the spec's). */
static void apply_held(const KbPod *pod, const char *name, KbResources *r)
{
    const KbContainerStatus *cs = held_by(pod, name);
    if (cs == NULL)
        return;
    for (int i = 0; i < KB_RES_MAX && i < 32; i++) {
        if ((cs->held_mask & (1u << i)) == 0)
            continue;
        if (pod->resize_infeasible)
            r->v[i] = cs->held.v[i];
        else
            r->v[i] = MAX(r->v[i], cs->held.v[i]);
    }
}

guint32 kb_pod_resource_mask(json_object *map)
{
    guint32 mask = 0;
    for (int i = 0; map != NULL && i < KB_RES_MAX && i < 32; i++) {
        const char *name = kb_resource_name(i);
        if (name != NULL && json_object_object_get_ex(map, name, NULL))
            mask |= 1u << i;
    }
    return mask;
}

void kb_pod_requests_fold_init_container(KbPodRequestsFold *f, const KbResources *r,
                                         const char *restart_policy)
{
    /* kube-scheduler: a sidecar (restartPolicy: Always) runs beside everything after it, and
     * beside the app; a plain init container runs beside the sidecars started before it. */
    if (restart_policy != NULL && strcmp(restart_policy, "Always") == 0) {
        kb_resources_add(&f->sum, r);
        kb_resources_add(&f->sidecars, r);
        kb_resources_max(&f->init_peak, &f->sidecars);
    } else {
        KbResources peak = *r;
        kb_resources_add(&peak, &f->sidecars);
        kb_resources_max(&f->init_peak, &peak);
    }
}

void kb_pod_requests_fold_finish(KbPodRequestsFold *f, KbPod *pod)
{
    KbResources *out = &pod->requests;
    for (guint i = 0; i < f->n_apps; i++) {
        KbResources r = f->apps[i];
        apply_held(pod, f->app_names[i], &r);
        kb_resources_add(&f->sum, &r);
    }
    f->n_apps = 0;
    *out = f->sum;
    kb_resources_max(out, &f->init_peak);
    for (int i = 0; i < KB_RES_MAX && i < 32; i++) {
        if (f->pod_requested & (1u << i))
            out->v[i] = f->pod_requests.v[i];
        else if ((f->pod_limited & (1u << i)) && out->v[i] == 0)
            out->v[i] = f->pod_limits.v[i];
    }
    kb_resources_add(out, &f->overhead);
    out->v[KB_RES_PODS] = 1;
}

/*
 * One container's effective request: its requests, and for each resource it only limits, the
 * limit (the API server's defaulting, applied again in case the object bypassed it). Errors are
 * relative to "resources.".
 */
static gboolean resources_requests(json_object *res, KbResources *out, GError **error)
{
    json_object *req, *lim;
    KbResources limits;

    if (!kb_decode_member(res, "requests", json_type_object, &req, error) ||
        !kb_decode_member(res, "limits", json_type_object, &lim, error))
        return FALSE;
    if (req != NULL && !kb_resources_decode(req, "requests", out, error))
        return FALSE;
    if (lim == NULL)
        return TRUE;
    kb_resources_clear(&limits);
    if (!kb_resources_decode(lim, "limits", &limits, error))
        return FALSE;
    kb_pod_default_requests(out, &limits, requested_in, req);
    return TRUE;
}

static gboolean container_requests(json_object *c, KbResources *out, GError **error)
{
    json_object *res;
    kb_resources_clear(out);
    if (!kb_decode_member(c, "resources", json_type_object, &res, error))
        return FALSE;
    if (res != NULL && !resources_requests(res, out, error)) {
        g_prefix_error(error, "resources.");
        return FALSE;
    }
    return TRUE;
}

/* Requests of the containers in @key, folded as app (@init FALSE) or init containers. */
static gboolean sum_containers(json_object *spec, const char *key, gboolean init,
                               KbPodRequestsFold *fold, GError **error)
{
    json_object *arr;
    gsize n;

    if (!kb_decode_array(spec, key, KB_MAX_CONTAINERS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *c;
        KbResources r;
        if (!kb_decode_element(arr, i, &c, error)) {
            g_prefix_error(error, "%s", key);
            return FALSE;
        }
        const char *policy = NULL, *name = NULL;
        if (!container_requests(c, &r, error) ||
            (init && !kb_decode_string(c, "restartPolicy", KB_MAX_NAME_LEN, &policy, error)) ||
            (!init && !kb_decode_interned(c, "name", KB_MAX_NAME_LEN, TRUE, &name, error))) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            return FALSE;
        }
        if (init)
            kb_pod_requests_fold_init_container(fold, &r, policy);
        else
            kb_pod_requests_fold_container(fold, name, &r);
    }
    return TRUE;
}

/* spec.resources: the pod-level requests and limits (1.32+, PodLevelResources). */
static gboolean pod_level_resources(json_object *spec, KbPodRequestsFold *fold, GError **error)
{
    json_object *res, *req, *lim;
    KbResources requests, limits;
    if (!kb_decode_member(spec, "resources", json_type_object, &res, error))
        return FALSE;
    if (res == NULL)
        return TRUE;
    kb_resources_clear(&requests);
    kb_resources_clear(&limits);
    if (!kb_decode_member(res, "requests", json_type_object, &req, error) ||
        !kb_decode_member(res, "limits", json_type_object, &lim, error) ||
        (req != NULL && !kb_resources_decode(req, "requests", &requests, error)) ||
        (lim != NULL && !kb_resources_decode(lim, "limits", &limits, error))) {
        g_prefix_error(error, "resources.");
        return FALSE;
    }
    kb_pod_requests_fold_pod_level(fold, &requests, requested_in, req, &limits, requested_in, lim);
    return TRUE;
}

/* Into @fold (finished once the status is read: kb_pod_requests_fold_finish). */
static gboolean decode_requests(json_object *spec, KbPodRequestsFold *fold, GError **error)
{
    json_object *o;

    if (!sum_containers(spec, "containers", FALSE, fold, error) ||
        !sum_containers(spec, "initContainers", TRUE, fold, error) ||
        !pod_level_resources(spec, fold, error))
        return FALSE;
    if (!kb_decode_member(spec, "overhead", json_type_object, &o, error))
        return FALSE;
    if (o != NULL && !kb_resources_decode(o, "overhead", &fold->overhead, error))
        return FALSE;
    return TRUE;
}

/* ---- node affinity -------------------------------------------------------------------------- */

static const struct {
    const char *name;
    KbSelectorOp op;
} selector_ops[] = {
        {"In", KB_SELECTOR_IN},         {"NotIn", KB_SELECTOR_NOT_IN},
        {"Exists", KB_SELECTOR_EXISTS}, {"DoesNotExist", KB_SELECTOR_DOES_NOT_EXIST},
        {"Gt", KB_SELECTOR_GT},         {"Lt", KB_SELECTOR_LT},
};

static gboolean parse_selector_op(const char *s, KbSelectorOp *op)
{
    for (gsize i = 0; i < G_N_ELEMENTS(selector_ops); i++) {
        if (strcmp(s, selector_ops[i].name) == 0) {
            *op = selector_ops[i].op;
            return TRUE;
        }
    }
    return FALSE;
}

static const char *selector_op_name(KbSelectorOp op)
{
    for (gsize i = 0; i < G_N_ELEMENTS(selector_ops); i++) {
        if (selector_ops[i].op == op)
            return selector_ops[i].name;
    }
    return "?";
}

gboolean kb_decode_requirement_head(const char *key, const char *op, KbSelectorRequirement *r,
                                    GError **error)
{
    if (key == NULL || *key == '\0') {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "key: missing");
        return FALSE;
    }
    if (op == NULL || !parse_selector_op(op, &r->op)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "operator: unknown operator \"%s\"",
                    op != NULL ? op : "");
        return FALSE;
    }
    r->key = g_intern_string(key);
    return TRUE;
}

gboolean kb_decode_requirement_value(gsize i, const char *v, gsize len, KbSelectorRequirement *r,
                                     GError **error)
{
    if (len > KB_MAX_NAME_LEN) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "values[%" G_GSIZE_FORMAT "]: %" G_GSIZE_FORMAT " bytes, more than %d", i, len,
                    KB_MAX_NAME_LEN);
        return FALSE;
    }
    /* Grown by doubling: the byte-buffer decoder does not know the count in advance. */
    if ((r->n_values & (r->n_values - 1)) == 0)
        r->values = g_renew(const char *, r->values, MAX(r->n_values * 2, 1));
    r->values[r->n_values++] = g_intern_string(v);
    return TRUE;
}

gboolean kb_decode_requirement_check(const KbSelectorRequirement *r, GError **error)
{
    if (!r->match_field)
        return TRUE;
    if (strcmp(r->key, KB_NODE_FIELD_NAME) != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "key: \"%s\" is not a node field (only " KB_NODE_FIELD_NAME ")", r->key);
        return FALSE;
    }
    if (r->op != KB_SELECTOR_IN && r->op != KB_SELECTOR_NOT_IN) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "operator: \"%s\" is not In or NotIn, as a node field selector needs",
                    selector_op_name(r->op));
        return FALSE;
    }
    if (r->n_values != 1) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "values: %u values, a node field selector takes exactly one", r->n_values);
        return FALSE;
    }
    return TRUE;
}

static gboolean decode_requirement(json_object *o, KbSelectorRequirement *r, GError **error)
{
    const char *key, *op;
    json_object *values;
    gsize n;

    if (!kb_decode_string(o, "key", KB_MAX_LABEL_KEY_LEN, &key, error) ||
        !kb_decode_string(o, "operator", KB_MAX_NAME_LEN, &op, error) ||
        !kb_decode_requirement_head(key, op, r, error) ||
        !kb_decode_array(o, "values", KB_MAX_LIST_ITEMS, &values, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(values, i);
        if (!json_object_is_type(v, json_type_string)) {
            g_autofree char *field = g_strdup_printf("values[%" G_GSIZE_FORMAT "]", i);
            return kb_decode_type_error(error, field, "a string", v);
        }
        if (!kb_decode_requirement_value(i, json_object_get_string(v),
                                         (gsize)json_object_get_string_len(v), r, error))
            return FALSE;
    }
    return kb_decode_requirement_check(r, error);
}

/* matchExpressions then matchFields of one term, appended to term->exprs. */
static gboolean decode_requirements(json_object *t, const char *key, gboolean field,
                                    KbNodeSelectorTerm *term, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(t, key, KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "%s", key);
            return FALSE;
        }
        KbSelectorRequirement *r = &term->exprs[term->n_exprs++];
        r->match_field = field;
        if (!decode_requirement(o, r, error)) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_term(json_object *t, KbNodeSelectorTerm *term, GError **error)
{
    json_object *exprs, *fields;
    gsize n_exprs, n_fields;
    /* Sized first (both lists within their limit), filled second: the array never moves while
     * entries point into it. */
    if (!kb_decode_array(t, "matchExpressions", KB_MAX_LIST_ITEMS, &exprs, &n_exprs, error) ||
        !kb_decode_array(t, "matchFields", KB_MAX_LIST_ITEMS, &fields, &n_fields, error))
        return FALSE;
    if (n_exprs + n_fields > 0)
        term->exprs = g_new0(KbSelectorRequirement, n_exprs + n_fields);
    return decode_requirements(t, "matchExpressions", FALSE, term, error) &&
           decode_requirements(t, "matchFields", TRUE, term, error);
}

static gboolean decode_terms(json_object *required, KbPod *pod, GError **error)
{
    json_object *terms;
    gsize n;
    if (!kb_decode_array(required, "nodeSelectorTerms", KB_MAX_LIST_ITEMS, &terms, &n, error))
        return FALSE;
    pod->affinity_terms = n > 0 ? g_new0(KbNodeSelectorTerm, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        json_object *t;
        if (!kb_decode_element(terms, i, &t, error)) {
            g_prefix_error(error, "nodeSelectorTerms");
            return FALSE;
        }
        pod->n_affinity_terms++;
        if (!decode_term(t, &pod->affinity_terms[i], error)) {
            g_prefix_error(error, "nodeSelectorTerms[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

/* spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution; the rest of
 * affinity (preferred terms, pod affinity) is not used by the scheduler. */
static gboolean decode_affinity(json_object *spec, KbPod *pod, GError **error)
{
    static const char *const path[] = {"affinity", "nodeAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution"};
    json_object *o = spec;

    for (gsize i = 0; i < G_N_ELEMENTS(path) && o != NULL; i++) {
        if (!kb_decode_member(o, path[i], json_type_object, &o, error)) {
            for (gsize j = i; j > 0; j--)
                g_prefix_error(error, "%s.", path[j - 1]);
            return FALSE;
        }
    }
    if (o != NULL && !decode_terms(o, pod, error)) {
        g_prefix_error(error, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.");
        return FALSE;
    }
    return TRUE;
}

/* ---- tolerations ---------------------------------------------------------------------------- */

static gboolean decode_toleration(json_object *o, KbToleration *t, GError **error)
{
    const char *op, *effect;
    return kb_decode_interned(o, "key", KB_MAX_LABEL_KEY_LEN, TRUE, &t->key, error) &&
           kb_decode_interned(o, "value", KB_MAX_NAME_LEN, TRUE, &t->value, error) &&
           kb_decode_string(o, "operator", KB_MAX_NAME_LEN, &op, error) &&
           kb_decode_string(o, "effect", KB_MAX_NAME_LEN, &effect, error) &&
           kb_decode_toleration_tail(op, effect, t, error);
}

gboolean kb_decode_toleration_tail(const char *op, const char *effect, KbToleration *t,
                                   GError **error)
{
    if (op == NULL || *op == '\0' || strcmp(op, "Equal") == 0) {
        t->op_exists = FALSE;
    } else if (strcmp(op, "Exists") == 0) {
        t->op_exists = TRUE;
    } else {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "operator: unknown operator \"%s\"", op);
        return FALSE;
    }
    if (effect == NULL || *effect == '\0')
        t->effect = KB_EFFECT_ALL;
    else if (!kb_decode_taint_effect(effect, &t->effect)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "effect: unknown effect \"%s\"", effect);
        return FALSE;
    }
    return TRUE;
}

static gboolean decode_tolerations(json_object *spec, KbPod *pod, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(spec, "tolerations", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    pod->tolerations = n > 0 ? g_new0(KbToleration, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "tolerations");
            return FALSE;
        }
        if (!decode_toleration(o, &pod->tolerations[i], error)) {
            g_prefix_error(error, "tolerations[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        pod->n_tolerations++;
    }
    return TRUE;
}

/* ---- volumes and scheduling gates ----------------------------------------------------------- */

/* One spec.volumes[] entry: a claim when it names one (or is ephemeral), else nothing. */
static gboolean decode_volume(json_object *o, KbPod *pod, GError **error)
{
    const char *name = NULL, *claim = NULL;
    json_object *pvc = NULL, *eph = NULL;
    /* Not interned unless kept: most volumes are not claims, and many have random names
     * ("kube-api-access-x7k2p") that would fill the intern table for ever. */
    if (!kb_decode_string(o, "name", KB_MAX_NAME_LEN, &name, error) ||
        !kb_decode_member(o, "persistentVolumeClaim", json_type_object, &pvc, error) ||
        !kb_decode_member(o, "ephemeral", json_type_object, &eph, error))
        return FALSE;
    if (pvc != NULL &&
        !kb_decode_interned(pvc, "claimName", KB_MAX_NAME_LEN, TRUE, &claim, error)) {
        g_prefix_error(error, "persistentVolumeClaim.");
        return FALSE;
    }
    if (claim == NULL && eph == NULL)
        return TRUE;
    pod->claims = g_renew(KbPodClaim, pod->claims, pod->n_claims + 1);
    pod->claims[pod->n_claims++] =
            (KbPodClaim){name != NULL && *name != '\0' ? g_intern_string(name) : NULL, claim};
    return TRUE;
}

static gboolean decode_volumes(json_object *spec, KbPod *pod, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(spec, "volumes", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "volumes");
            return FALSE;
        }
        if (!decode_volume(o, pod, error)) {
            g_prefix_error(error, "volumes[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean kb_pod_resource_claim_check(const KbPodResourceClaim *c, gboolean spec, GError **error)
{
    if (c->name == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "name: missing");
        return FALSE;
    }
    if (spec && (c->claim_name == NULL) == (c->template_name == NULL)) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "exactly one of resourceClaimName and resourceClaimTemplateName is "
                            "required");
        return FALSE;
    }
    return TRUE;
}

/* One spec.resourceClaims[] (@spec) or status.resourceClaimStatuses[] entry into @c. */
static gboolean decode_resource_claim(json_object *o, gboolean spec, KbPodResourceClaim *c,
                                      GError **error)
{
    const char *claim = NULL, *template_ = NULL;
    if (!kb_decode_interned(o, "name", KB_MAX_NAME_LEN, TRUE, &c->name, error) ||
        !kb_decode_string(o, "resourceClaimName", KB_MAX_NAME_LEN, &claim, error) ||
        (spec &&
         !kb_decode_string(o, "resourceClaimTemplateName", KB_MAX_NAME_LEN, &template_, error)))
        return FALSE;
    c->claim_name = claim != NULL && *claim != '\0' ? g_strdup(claim) : NULL;
    c->template_name = template_ != NULL && *template_ != '\0' ? g_strdup(template_) : NULL;
    return kb_pod_resource_claim_check(c, spec, error);
}

/* spec.resourceClaims (@spec) or status.resourceClaimStatuses of @obj into @out / @n. */
static gboolean decode_resource_claims(json_object *obj, gboolean spec, KbPodResourceClaim **out,
                                       guint *n_out, GError **error)
{
    const char *key = spec ? "resourceClaims" : "resourceClaimStatuses";
    json_object *arr;
    gsize n;
    if (!kb_decode_array(obj, key, KB_MAX_POD_RESOURCE_CLAIMS, &arr, &n, error))
        return FALSE;
    *out = n > 0 ? g_new0(KbPodResourceClaim, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "%s", key);
            return FALSE;
        }
        (*n_out)++;
        if (!decode_resource_claim(o, spec, &(*out)[i], error)) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_gates(json_object *spec, KbPod *pod, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(spec, "schedulingGates", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        const char *name = NULL;
        if (!kb_decode_element(arr, i, &o, error) ||
            !kb_decode_interned(o, "name", KB_MAX_NAME_LEN, TRUE, &name, error)) {
            g_prefix_error(error, "schedulingGates[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        if (pod->n_scheduling_gates++ == 0)
            pod->scheduling_gate = name;
    }
    return TRUE;
}

/* spec.schedulingGroup: {podGroupName} names a native PodGroup (an empty name is no group). */
static gboolean decode_scheduling_group(json_object *spec, KbPod *pod, GError **error)
{
    json_object *sg;
    const char *name = NULL;
    if (!kb_decode_member(spec, "schedulingGroup", json_type_object, &sg, error))
        return FALSE;
    if (sg == NULL)
        return TRUE;
    if (!kb_decode_string(sg, "podGroupName", KB_MAX_NAME_LEN, &name, error)) {
        g_prefix_error(error, "schedulingGroup.");
        return FALSE;
    }
    if (name != NULL && *name != '\0')
        pod->scheduling_group = g_strdup(name);
    return TRUE;
}

/* ---- spec and status ------------------------------------------------------------------------ */

static gboolean decode_spec_scalars(json_object *spec, KbPod *pod, GError **error)
{
    gint64 priority = 0, deadline = 0;
    if (!kb_decode_interned(spec, "schedulerName", KB_MAX_NAME_LEN, TRUE, &pod->scheduler_name,
                            error) ||
        !kb_decode_interned(spec, "nodeName", KB_MAX_NAME_LEN, TRUE, &pod->node_name, error) ||
        !kb_decode_interned(spec, "priorityClassName", KB_MAX_NAME_LEN, TRUE,
                            &pod->priority_class_name, error) ||
        !kb_decode_int(spec, "priority", G_MININT32, G_MAXINT32, &priority, &pod->has_priority,
                       error) ||
        !kb_decode_int(spec, "activeDeadlineSeconds", G_MININT64, G_MAXINT64, &deadline, NULL,
                       error))
        return FALSE;
    pod->priority = (gint32)priority;
    pod->active_deadline_seconds = MAX(deadline, 0);
    return TRUE;
}

static gboolean decode_spec(json_object *obj, KbPod *pod, KbPodRequestsFold *fold, GError **error)
{
    json_object *spec;
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error))
        return FALSE;
    if (spec == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "spec: missing");
        return FALSE;
    }
    if (!decode_spec_scalars(spec, pod, error) ||
        !kb_decode_string_map(spec, "nodeSelector", KB_MAX_NAME_LEN, KB_STRING_MAP_INTERNED,
                              pod->node_selector, error) ||
        !decode_requests(spec, fold, error) || !decode_affinity(spec, pod, error) ||
        !decode_tolerations(spec, pod, error) || !decode_volumes(spec, pod, error) ||
        !decode_gates(spec, pod, error) || !decode_scheduling_group(spec, pod, error) ||
        !decode_resource_claims(spec, TRUE, &pod->resource_claims, &pod->n_resource_claims,
                                error)) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    return TRUE;
}

KbPodPhase kb_pod_phase_parse(const char *s)
{
    static const char *const names[] = {
        [KB_POD_PENDING] = "Pending", [KB_POD_RUNNING] = "Running",
        [KB_POD_SUCCEEDED] = "Succeeded", [KB_POD_FAILED] = "Failed",
        [KB_POD_UNKNOWN] = "Unknown",
    };
    /* A pod without a phase yet has just been created: Pending. */
    if (s == NULL || *s == '\0')
        return KB_POD_PENDING;
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        if (strcmp(s, names[i]) == 0)
            return (KbPodPhase)i;
    }
    return KB_POD_UNKNOWN;
}

static gboolean decode_state(json_object *state, KbContainerStatus *cs, GError **error)
{
    json_object *running, *waiting, *terminated;
    const char *reason = NULL;
    gint64 exit_code = 0;

    if (!kb_decode_member(state, "running", json_type_object, &running, error) ||
        !kb_decode_member(state, "waiting", json_type_object, &waiting, error) ||
        !kb_decode_member(state, "terminated", json_type_object, &terminated, error))
        return FALSE;
    cs->running = running != NULL;
    cs->waiting = waiting != NULL;
    cs->terminated = terminated != NULL;
    if (terminated != NULL) {
        if (!kb_decode_int(terminated, "exitCode", G_MININT32, G_MAXINT32, &exit_code, NULL,
                           error) ||
            !kb_decode_string(terminated, "reason", KB_MAX_NAME_LEN, &reason, error)) {
            g_prefix_error(error, "terminated.");
            return FALSE;
        }
        cs->exit_code = (gint)exit_code;
    } else if (waiting != NULL) {
        if (!kb_decode_string(waiting, "reason", KB_MAX_NAME_LEN, &reason, error)) {
            g_prefix_error(error, "waiting.");
            return FALSE;
        }
    }
    cs->reason = g_strdup(reason);
    return TRUE;
}

/* allocatedResources and resources.requests: what the node holds (KbContainerStatus.held). */
static gboolean decode_held(json_object *o, KbContainerStatus *cs, GError **error)
{
    json_object *alloc, *res, *req = NULL;
    KbResources a, b;
    kb_resources_clear(&a);
    kb_resources_clear(&b);
    if (!kb_decode_member(o, "allocatedResources", json_type_object, &alloc, error) ||
        (alloc != NULL && !kb_resources_decode(alloc, "allocatedResources", &a, error)) ||
        !kb_decode_member(o, "resources", json_type_object, &res, error))
        return FALSE;
    if (res != NULL && (!kb_decode_member(res, "requests", json_type_object, &req, error) ||
                        (req != NULL && !kb_resources_decode(req, "requests", &b, error)))) {
        g_prefix_error(error, "resources.");
        return FALSE;
    }
    kb_resources_max(&a, &b);
    cs->held = a;
    cs->held_mask = kb_pod_resource_mask(alloc) | kb_pod_resource_mask(req);
    return TRUE;
}

static gboolean decode_container_status(json_object *o, KbContainerStatus *cs, GError **error)
{
    const char *name;
    gint64 restarts = 0;
    json_object *state;
    if (!kb_decode_string(o, "name", KB_MAX_NAME_LEN, &name, error) ||
        !kb_decode_int(o, "restartCount", 0, G_MAXINT32, &restarts, NULL, error) ||
        !kb_decode_member(o, "state", json_type_object, &state, error))
        return FALSE;
    cs->name = g_strdup(name);
    cs->restart_count = (gint)restarts;
    if (state != NULL && !decode_state(state, cs, error)) {
        g_prefix_error(error, "state.");
        return FALSE;
    }
    return decode_held(o, cs, error);
}

/* status.resize (before 1.33) or the condition PodResizePending (1.33+) says Infeasible. */
static gboolean decode_resize(json_object *status, KbPod *pod, GError **error)
{
    const char *resize = NULL;
    json_object *arr, *c;
    gsize n;
    if (!kb_decode_string(status, "resize", KB_MAX_NAME_LEN, &resize, error) ||
        !kb_decode_array(status, "conditions", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    pod->resize_infeasible = g_strcmp0(resize, "Infeasible") == 0;
    for (gsize i = 0; i < n; i++) {
        const char *type = NULL, *reason = NULL, *cstatus = NULL;
        if (!kb_decode_element(arr, i, &c, error)) {
            g_prefix_error(error, "conditions");
            return FALSE;
        }
        if (!kb_decode_string(c, "type", KB_MAX_NAME_LEN, &type, error) ||
            !kb_decode_string(c, "reason", KB_MAX_NAME_LEN, &reason, error) ||
            !kb_decode_string(c, "status", KB_MAX_NAME_LEN, &cstatus, error)) {
            g_prefix_error(error, "conditions[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        if (g_strcmp0(type, "PodResizePending") == 0 && g_strcmp0(reason, "Infeasible") == 0)
            pod->resize_infeasible = TRUE;
        if (g_strcmp0(type, KB_GANG_EVICTED_CONDITION) == 0 && g_strcmp0(cstatus, "True") == 0)
            pod->gang_evicted = TRUE;
    }
    return TRUE;
}

static gboolean decode_status_fields(json_object *status, KbPod *pod, GError **error)
{
    json_object *arr;
    const char *phase;
    gsize n;

    if (!kb_decode_string(status, "phase", KB_MAX_NAME_LEN, &phase, error) ||
        !kb_decode_array(status, "containerStatuses", KB_MAX_CONTAINERS, &arr, &n, error))
        return FALSE;
    pod->phase = kb_pod_phase_parse(phase);
    if (!decode_resize(status, pod, error) ||
        !decode_resource_claims(status, FALSE, &pod->claim_statuses, &pod->n_claim_statuses, error))
        return FALSE;
    pod->container_statuses = n > 0 ? g_new0(KbContainerStatus, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "containerStatuses");
            return FALSE;
        }
        pod->n_container_statuses++;
        if (!decode_container_status(o, &pod->container_statuses[i], error)) {
            g_prefix_error(error, "containerStatuses[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_status(json_object *obj, KbPod *pod, GError **error)
{
    json_object *status;
    if (!kb_decode_member(obj, "status", json_type_object, &status, error))
        return FALSE;
    if (status != NULL && !decode_status_fields(status, pod, error)) {
        g_prefix_error(error, "status.");
        return FALSE;
    }
    return TRUE;
}

/*
 * Empty tables, one of each kind for every pod: most pods have no node selector, many no labels
 * or no annotations, and an empty GHashTable costs ~250 bytes (150,000 pods: ~35 MiB a table).
 * Nothing writes a decoded pod's tables (records are read-only once decoded), so they can be
 * shared; each pod holds a reference.
 */
static GHashTable *empty_labels, *empty_annotations, *empty_selector;

static void share_if_empty(GHashTable **table, GHashTable **shared)
{
    if (g_hash_table_size(*table) != 0)
        return;
    if (g_once_init_enter(shared)) {
        /* the same functions as the table it stands for (none is ever called) */
        GHashTable *t = g_hash_table_ref(*table);
        g_once_init_leave(shared, t);
    }
    if (*shared == *table)
        return;
    g_hash_table_unref(*table);
    *table = g_hash_table_ref(*shared);
}

void kb_pod_finish(KbPod *pod)
{
    if (pod->scheduler_name == NULL)
        pod->scheduler_name = g_intern_static_string(DEFAULT_SCHEDULER);
    /* The pod's own field (immutable) first: it is what kube-scheduler reads. */
    const char *g = pod->scheduling_group;
    if (g == NULL)
        g = g_hash_table_lookup(pod->meta.annotations, GROUP_ANNOTATION);
    if (g == NULL || *g == '\0')
        g = g_hash_table_lookup(pod->meta.labels, GROUP_LABEL);
    /* Owned: group names come and go with jobs, and interned strings are never freed. */
    pod->group_name = g != NULL && *g != '\0' ? g_strdup(g) : NULL;
    share_if_empty(&pod->meta.labels, &empty_labels);
    share_if_empty(&pod->meta.annotations, &empty_annotations);
    share_if_empty(&pod->node_selector, &empty_selector);
}

KbPod *kb_pod_new(void)
{
    KbPod *pod = g_new0(KbPod, 1);
    kb_meta_init(&pod->meta, KB_KIND_POD);
    pod->node_selector = g_hash_table_new(g_str_hash, g_str_equal);
    return pod;
}

KbPod *kb_pod_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbPod) pod = kb_pod_new();
    KbPodRequestsFold fold;

    kb_pod_requests_fold_init(&fold);
    if (!kb_meta_decode(obj, KB_KIND_POD, keep_raw, &pod->meta, error) ||
        !decode_spec(obj, pod, &fold, error) || !decode_status(obj, pod, error)) {
        kb_decode_prefix_object(error, "pod", &pod->meta);
        return NULL;
    }
    kb_pod_requests_fold_finish(&fold, pod);
    kb_pod_finish(pod);
    return g_steal_pointer(&pod);
}
