/*
 * Record life cycle (reference counting and freeing by kind), keys, subresource bodies and
 * API timestamps; see kb-objects.h. The decoders live in kb-meta.c, kb-pod.c, kb-node.c,
 * kb-podgroup.c and kb-cluster.c.
 */
#include "kube/kb-decode.h"
#include "kube/kb-dra.h"
#include "kube/kb-objects.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- life cycle ----------------------------------------------------------------------------- */

gpointer kb_object_ref(gpointer obj)
{
    KbObjectMeta *meta = obj;
    g_return_val_if_fail(meta != NULL, NULL);
    g_atomic_int_inc(&meta->ref_count);
    return obj;
}

void kb_meta_clear(KbObjectMeta *meta)
{
    g_clear_pointer(&meta->name, g_free);
    g_clear_pointer(&meta->uid, g_free);
    g_clear_pointer(&meta->resource_version, g_free);
    g_clear_pointer(&meta->labels, g_hash_table_unref);
    g_clear_pointer(&meta->annotations, g_hash_table_unref);
    for (guint i = 0; i < meta->n_owners; i++) {
        g_free(meta->owners[i].api_version);
        g_free(meta->owners[i].kind);
        g_free(meta->owners[i].name);
        g_free(meta->owners[i].uid);
    }
    g_clear_pointer(&meta->owners, g_free);
    meta->n_owners = 0;
    g_clear_pointer(&meta->raw, json_object_put);
    meta->namespace_ = NULL;
}

static void pod_clear(KbPod *pod)
{
    g_clear_pointer(&pod->node_selector, g_hash_table_unref);
    for (guint t = 0; t < pod->n_affinity_terms; t++) {
        KbNodeSelectorTerm *term = &pod->affinity_terms[t];
        for (guint e = 0; e < term->n_exprs; e++)
            g_free(term->exprs[e].values);
        g_free(term->exprs);
    }
    g_clear_pointer(&pod->affinity_terms, g_free);
    pod->n_affinity_terms = 0;
    g_clear_pointer(&pod->tolerations, g_free);
    pod->n_tolerations = 0;
    for (guint i = 0; i < pod->n_container_statuses; i++) {
        g_free(pod->container_statuses[i].name);
        g_free(pod->container_statuses[i].reason);
    }
    g_clear_pointer(&pod->container_statuses, g_free);
    pod->n_container_statuses = 0;
    g_clear_pointer(&pod->group_name, g_free);
    g_clear_pointer(&pod->scheduling_group, g_free);
    g_clear_pointer(&pod->claims, g_free);
    pod->n_claims = 0;
    kb_pod_resource_claims_free(pod->resource_claims, pod->n_resource_claims);
    pod->resource_claims = NULL;
    pod->n_resource_claims = 0;
    kb_pod_resource_claims_free(pod->claim_statuses, pod->n_claim_statuses);
    pod->claim_statuses = NULL;
    pod->n_claim_statuses = 0;
}

void kb_pod_resource_claims_free(KbPodResourceClaim *claims, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_free(claims[i].claim_name);
        g_free(claims[i].template_name);
    }
    g_free(claims);
}

const char *kb_pod_resource_claim_name(const KbPod *pod, guint i)
{
    const KbPodResourceClaim *c = &pod->resource_claims[i];
    if (c->claim_name != NULL)
        return c->claim_name;
    for (guint j = 0; j < pod->n_claim_statuses; j++) {
        if (g_strcmp0(pod->claim_statuses[j].name, c->name) == 0)
            return pod->claim_statuses[j].claim_name;
    }
    return NULL;
}

void kb_object_unref(gpointer obj)
{
    KbObjectMeta *meta = obj;
    if (meta == NULL || !g_atomic_int_dec_and_test(&meta->ref_count))
        return;
    switch (meta->kind) {
    case KB_KIND_POD:
        pod_clear(obj);
        break;
    case KB_KIND_NODE:
        g_free(((KbNode *)obj)->taints);
        break;
    case KB_KIND_LEASE:
        g_free(((KbLease *)obj)->holder_identity);
        break;
    case KB_KIND_QUEUE:
        g_free(((KbQueue *)obj)->history);
        break;
    case KB_KIND_POD_GROUP:
        g_free(((KbPodGroup *)obj)->workload_name);
        g_free(((KbPodGroup *)obj)->workload_template);
        g_free(((KbPodGroup *)obj)->scheduled_message);
        g_free(((KbPodGroup *)obj)->scheduled_since);
        g_free(((KbPodGroup *)obj)->incomplete_message);
        g_free(((KbPodGroup *)obj)->incomplete_since);
        g_free(((KbPodGroup *)obj)->parent);
        kb_sub_groups_free(((KbPodGroup *)obj)->sub_groups, ((KbPodGroup *)obj)->n_sub_groups);
        break;
    case KB_KIND_DEVICE_CLASS:
    case KB_KIND_RESOURCE_CLAIM:
    case KB_KIND_RESOURCE_CLAIM_TEMPLATE:
    case KB_KIND_RESOURCE_SLICE:
        kb_dra_record_clear(meta);
        break;
    case KB_KIND_TFJOB:
        /* Allocated and freed by kb-tfjob (kb_tfjob_free): a caller bug, not input. */
        g_critical("kb_object_unref() on a TFJob record: use kb_tfjob_free()");
        return;
    default:
        break;
    }
    kb_meta_clear(meta);
    g_free(obj);
}

char *kb_object_key(const KbObjectMeta *meta)
{
    const char *name = meta->name != NULL ? meta->name : "";
    if (meta->namespace_ == NULL)
        return g_strdup(name);
    return g_strconcat(meta->namespace_, "/", name, NULL);
}

const char *kb_pod_phase_to_string(KbPodPhase phase)
{
    switch (phase) {
    case KB_POD_PENDING:
        return "Pending";
    case KB_POD_RUNNING:
        return "Running";
    case KB_POD_SUCCEEDED:
        return "Succeeded";
    case KB_POD_FAILED:
        return "Failed";
    case KB_POD_UNKNOWN:
        break;
    }
    return "Unknown";
}

gboolean kb_pod_is_terminated(const KbPod *pod)
{
    return pod->phase == KB_POD_SUCCEEDED || pod->phase == KB_POD_FAILED;
}

/* ---- subresource bodies --------------------------------------------------------------------- */

static json_object *new_meta(const char *namespace_, const char *name)
{
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(name));
    if (namespace_ != NULL)
        json_object_object_add(meta, "namespace", json_object_new_string(namespace_));
    return meta;
}

json_object *kb_conditions_patch_new(json_object *condition)
{
    json_object *conds = json_object_new_array();
    json_object_array_add(conds, condition);
    json_object *status = json_object_new_object();
    json_object_object_add(status, "conditions", conds);
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", status);
    return body;
}

json_object *kb_binding_new(const char *namespace_, const char *pod, const char *pod_uid,
                            const char *node)
{
    json_object *b = json_object_new_object();
    json_object *meta = new_meta(namespace_, pod);
    /* With the uid the API server refuses to bind a pod recreated under the same name. */
    if (pod_uid != NULL && *pod_uid != '\0')
        json_object_object_add(meta, "uid", json_object_new_string(pod_uid));
    json_object *target = json_object_new_object();
    json_object_object_add(target, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(target, "kind", json_object_new_string("Node"));
    json_object_object_add(target, "name", json_object_new_string(node));
    json_object_object_add(b, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(b, "kind", json_object_new_string("Binding"));
    json_object_object_add(b, "metadata", meta);
    json_object_object_add(b, "target", target);
    return b;
}

json_object *kb_eviction_new(const char *namespace_, const char *pod, gboolean v1)
{
    json_object *e = json_object_new_object();
    json_object_object_add(e, "apiVersion",
                           json_object_new_string(v1 ? "policy/v1" : "policy/v1beta1"));
    json_object_object_add(e, "kind", json_object_new_string("Eviction"));
    json_object_object_add(e, "metadata", new_meta(namespace_, pod));
    return e;
}

/* ---- times ---------------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static gint64 days_from_civil(gint64 y, int m, int d)
{
    y -= m <= 2;
    gint64 era = (y >= 0 ? y : y - 399) / 400;
    gint64 yoe = y - era * 400;
    gint64 doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    gint64 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(gint64 z, gint64 *y, int *m, int *d)
{
    z += 719468;
    gint64 era = (z >= 0 ? z : z - 146096) / 146097;
    gint64 doe = z - era * 146097;
    gint64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    gint64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    gint64 mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static gboolean read_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return FALSE;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return TRUE;
}

static gboolean expect_char(const char **p, char c)
{
    if (**p != c)
        return FALSE;
    (*p)++;
    return TRUE;
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    gboolean leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/*
 * RFC 3339 "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)" into microseconds since the epoch
 * (fractions beyond microseconds are truncated, as Go's MicroTime does).
 */
static gboolean parse_rfc3339(const char *s, gint64 *unix_us)
{
    const char *p = s;
    int y, mo, d, h, mi, sec, us = 0;

    if (s == NULL || !read_digits(&p, 4, &y) || !expect_char(&p, '-') ||
        !read_digits(&p, 2, &mo) || !expect_char(&p, '-') || !read_digits(&p, 2, &d))
        return FALSE;
    if (*p != 'T' && *p != 't')
        return FALSE;
    p++;
    if (!read_digits(&p, 2, &h) || !expect_char(&p, ':') || !read_digits(&p, 2, &mi) ||
        !expect_char(&p, ':') || !read_digits(&p, 2, &sec))
        return FALSE;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
        return FALSE;
    if (*p == '.') {
        p++;
        int n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n < 6)
                us = us * 10 + (*p - '0');
            n++;
            p++;
        }
        if (n == 0)
            return FALSE;
        for (; n < 6; n++)
            us *= 10;
    }
    gint64 offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (!read_digits(&p, 2, &oh) || !expect_char(&p, ':') || !read_digits(&p, 2, &om) ||
            oh > 23 || om > 59)
            return FALSE;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return FALSE;
    }
    if (*p != '\0')
        return FALSE;
    gint64 secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    *unix_us = secs * G_USEC_PER_SEC + us;
    return TRUE;
}

gboolean kb_time_parse(const char *s, gint64 *unix_seconds)
{
    gint64 us;
    if (!parse_rfc3339(s, &us))
        return FALSE;
    /* Floor, so that a fraction never moves a time forward across a second. */
    *unix_seconds = us >= 0 ? us / G_USEC_PER_SEC : -((-us + G_USEC_PER_SEC - 1) / G_USEC_PER_SEC);
    return TRUE;
}

gboolean kb_micro_time_parse(const char *s, gint64 *unix_us)
{
    return parse_rfc3339(s, unix_us);
}

/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: what RFC 3339 can write. */
#define MIN_TIME G_GINT64_CONSTANT(-62135596800)
#define MAX_TIME G_GINT64_CONSTANT(253402300799)

static char *format_time(gint64 secs, int us)
{
    secs = CLAMP(secs, MIN_TIME, MAX_TIME);
    gint64 days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    gint64 rem = secs - days * 86400;
    gint64 y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (us < 0)
        return g_strdup_printf("%04" G_GINT64_FORMAT "-%02d-%02dT%02d:%02d:%02dZ", y, m, d,
                               (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
    return g_strdup_printf("%04" G_GINT64_FORMAT "-%02d-%02dT%02d:%02d:%02d.%06dZ", y, m, d,
                           (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), us);
}

char *kb_time_format(gint64 unix_seconds)
{
    return format_time(unix_seconds, -1);
}

char *kb_micro_time_format(gint64 unix_us)
{
    gint64 secs = unix_us / G_USEC_PER_SEC;
    gint64 us = unix_us % G_USEC_PER_SEC;
    if (us < 0) {
        secs--;
        us += G_USEC_PER_SEC;
    }
    return format_time(secs, (int)us);
}

/* ---- comparison ----------------------------------------------------------------------------- */

gboolean kb_eq_differ(char **why, const char *fmt, ...)
{
    if (why != NULL) {
        va_list ap;
        va_start(ap, fmt);
        *why = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return FALSE;
}

gboolean kb_eq_str(const char *field, const char *a, const char *b, char **why)
{
    if (g_strcmp0(a, b) == 0)
        return TRUE;
    return kb_eq_differ(why, "%s: \"%s\" != \"%s\"", field, a != NULL ? a : "(null)",
                        b != NULL ? b : "(null)");
}

gboolean kb_eq_int(const char *field, gint64 a, gint64 b, char **why)
{
    if (a == b)
        return TRUE;
    return kb_eq_differ(why, "%s: %" G_GINT64_FORMAT " != %" G_GINT64_FORMAT, field, a, b);
}

static gboolean tables_eq(const char *field, GHashTable *a, GHashTable *b, char **why)
{
    GHashTableIter it;
    gpointer k, v;
    if (g_hash_table_size(a) != g_hash_table_size(b))
        return kb_eq_differ(why, "%s: %u entries != %u", field, g_hash_table_size(a),
                            g_hash_table_size(b));
    g_hash_table_iter_init(&it, a);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        gpointer bv;
        if (!g_hash_table_lookup_extended(b, k, NULL, &bv))
            return kb_eq_differ(why, "%s[\"%s\"]: missing", field, (const char *)k);
        g_autofree char *f = g_strdup_printf("%s[\"%s\"]", field, (const char *)k);
        if (!kb_eq_str(f, v, bv, why))
            return FALSE;
    }
    return TRUE;
}

static gboolean meta_eq(const KbObjectMeta *a, const KbObjectMeta *b, char **why)
{
    if (!kb_eq_int("kind", a->kind, b->kind, why) || !kb_eq_str("name", a->name, b->name, why) ||
        !kb_eq_str("namespace", a->namespace_, b->namespace_, why) ||
        !kb_eq_str("uid", a->uid, b->uid, why) ||
        !kb_eq_str("resourceVersion", a->resource_version, b->resource_version, why) ||
        !kb_eq_int("generation", a->generation, b->generation, why) ||
        !kb_eq_int("creationTimestamp", a->creation_timestamp, b->creation_timestamp, why) ||
        !kb_eq_int("deletionTimestamp", a->deletion_timestamp, b->deletion_timestamp, why) ||
        !tables_eq("labels", a->labels, b->labels, why) ||
        !tables_eq("annotations", a->annotations, b->annotations, why) ||
        !kb_eq_int("ownerReferences.length", a->n_owners, b->n_owners, why))
        return FALSE;
    for (guint i = 0; i < a->n_owners; i++) {
        const KbOwnerRef *x = &a->owners[i], *y = &b->owners[i];
        if (!kb_eq_str("ownerReferences[].apiVersion", x->api_version, y->api_version, why) ||
            !kb_eq_str("ownerReferences[].kind", x->kind, y->kind, why) ||
            !kb_eq_str("ownerReferences[].name", x->name, y->name, why) ||
            !kb_eq_str("ownerReferences[].uid", x->uid, y->uid, why) ||
            !kb_eq_int("ownerReferences[].controller", x->controller, y->controller, why))
            return FALSE;
    }
    return TRUE;
}

static gboolean terms_eq(const KbPod *a, const KbPod *b, char **why)
{
    if (!kb_eq_int("affinity terms", a->n_affinity_terms, b->n_affinity_terms, why))
        return FALSE;
    for (guint t = 0; t < a->n_affinity_terms; t++) {
        const KbNodeSelectorTerm *x = &a->affinity_terms[t], *y = &b->affinity_terms[t];
        if (!kb_eq_int("affinity term expressions", x->n_exprs, y->n_exprs, why))
            return FALSE;
        for (guint e = 0; e < x->n_exprs; e++) {
            const KbSelectorRequirement *p = &x->exprs[e], *q = &y->exprs[e];
            if (!kb_eq_str("requirement key", p->key, q->key, why) ||
                !kb_eq_int("requirement operator", p->op, q->op, why) ||
                !kb_eq_int("requirement matchField", p->match_field, q->match_field, why) ||
                !kb_eq_int("requirement values", p->n_values, q->n_values, why))
                return FALSE;
            for (guint v = 0; v < p->n_values; v++) {
                if (!kb_eq_str("requirement value", p->values[v], q->values[v], why))
                    return FALSE;
            }
        }
    }
    return TRUE;
}

static gboolean statuses_eq(const KbPod *a, const KbPod *b, char **why)
{
    if (!kb_eq_int("containerStatuses.length", a->n_container_statuses, b->n_container_statuses,
                   why))
        return FALSE;
    for (guint i = 0; i < a->n_container_statuses; i++) {
        const KbContainerStatus *x = &a->container_statuses[i], *y = &b->container_statuses[i];
        if (!kb_eq_str("containerStatuses[].name", x->name, y->name, why) ||
            !kb_eq_int("containerStatuses[].running", x->running, y->running, why) ||
            !kb_eq_int("containerStatuses[].waiting", x->waiting, y->waiting, why) ||
            !kb_eq_int("containerStatuses[].terminated", x->terminated, y->terminated, why) ||
            !kb_eq_int("containerStatuses[].exitCode", x->exit_code, y->exit_code, why) ||
            !kb_eq_str("containerStatuses[].reason", x->reason, y->reason, why) ||
            !kb_eq_int("containerStatuses[].restartCount", x->restart_count, y->restart_count, why))
            return FALSE;
    }
    return TRUE;
}

static gboolean resource_claims_eq(const char *what, const KbPodResourceClaim *a, guint na,
                                   const KbPodResourceClaim *b, guint nb, char **why)
{
    if (na != nb)
        return kb_eq_differ(why, "%s.length: %u != %u", what, na, nb);
    for (guint i = 0; i < na; i++) {
        if (!kb_eq_str(what, a[i].name, b[i].name, why) ||
            !kb_eq_str(what, a[i].claim_name, b[i].claim_name, why) ||
            !kb_eq_str(what, a[i].template_name, b[i].template_name, why))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_meta_equal(const KbObjectMeta *a, const KbObjectMeta *b, char **why)
{
    return meta_eq(a, b, why);
}

gboolean kb_pod_equal(const KbPod *a, const KbPod *b, char **why)
{
    if (!meta_eq(&a->meta, &b->meta, why) ||
        !kb_eq_str("schedulerName", a->scheduler_name, b->scheduler_name, why) ||
        !kb_eq_str("nodeName", a->node_name, b->node_name, why) ||
        !kb_eq_str("priorityClassName", a->priority_class_name, b->priority_class_name, why) ||
        !kb_eq_int("priority", a->priority, b->priority, why) ||
        !kb_eq_int("has_priority", a->has_priority, b->has_priority, why) ||
        !kb_eq_int("activeDeadlineSeconds", a->active_deadline_seconds, b->active_deadline_seconds,
                   why) ||
        !tables_eq("nodeSelector", a->node_selector, b->node_selector, why) ||
        !terms_eq(a, b, why) ||
        !kb_eq_int("tolerations.length", a->n_tolerations, b->n_tolerations, why) ||
        !kb_eq_int("phase", a->phase, b->phase, why) || !statuses_eq(a, b, why) ||
        !kb_eq_str("group", a->group_name, b->group_name, why) ||
        !kb_eq_str("schedulingGroup.podGroupName", a->scheduling_group, b->scheduling_group, why) ||
        !kb_eq_int("schedulingGates.length", a->n_scheduling_gates, b->n_scheduling_gates, why) ||
        !kb_eq_int("gangEvicted", a->gang_evicted, b->gang_evicted, why) ||
        !kb_eq_str("schedulingGates[0].name", a->scheduling_gate, b->scheduling_gate, why) ||
        !kb_eq_int("volumes(claims).length", a->n_claims, b->n_claims, why))
        return FALSE;
    for (guint i = 0; i < a->n_claims; i++) {
        if (!kb_eq_str("volumes[].name", a->claims[i].volume, b->claims[i].volume, why) ||
            !kb_eq_str("volumes[].persistentVolumeClaim.claimName", a->claims[i].claim,
                       b->claims[i].claim, why))
            return FALSE;
    }
    if (!resource_claims_eq("resourceClaims", a->resource_claims, a->n_resource_claims,
                            b->resource_claims, b->n_resource_claims, why) ||
        !resource_claims_eq("status.resourceClaimStatuses", a->claim_statuses, a->n_claim_statuses,
                            b->claim_statuses, b->n_claim_statuses, why))
        return FALSE;
    if (!kb_resources_equal(&a->requests, &b->requests)) {
        g_autofree char *x = kb_resources_to_string(&a->requests);
        g_autofree char *y = kb_resources_to_string(&b->requests);
        return kb_eq_differ(why, "requests: %s != %s", x, y);
    }
    for (guint i = 0; i < a->n_tolerations; i++) {
        const KbToleration *x = &a->tolerations[i], *y = &b->tolerations[i];
        if (!kb_eq_str("tolerations[].key", x->key, y->key, why) ||
            !kb_eq_int("tolerations[].operator", x->op_exists, y->op_exists, why) ||
            !kb_eq_str("tolerations[].value", x->value, y->value, why) ||
            !kb_eq_int("tolerations[].effect", x->effect, y->effect, why))
            return FALSE;
    }
    return TRUE;
}
