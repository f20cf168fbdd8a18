/*
 * TFJob conversion through the v1 hub, with the lossless-round-trip annotation, and the
 * ConversionReview answer (see kb-tfconv.h).
 */
#include "kube/kb-tfconv.h"

#include <string.h>

#include "kube/kb-error.h"

static void json_unref(json_object *o)
{
    if (o != NULL)
        json_object_put(o);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_object, json_unref)

/* spec keys only v1alpha1 has (the rest of an unknown key is copied through) */
static const char *const alpha_only[] = {"RuntimeId", "tfImage", "terminationPolicy"};
/* the run policy fields the betas carry in spec and v1 in spec.runPolicy */
static const char *const run_policy_keys[] = {"cleanPodPolicy", "ttlSecondsAfterFinished",
                                              "activeDeadlineSeconds", "backoffLimit"};

static const char *short_version(KbTfApi api)
{
    return kb_tf_api_version(api) + strlen("kubeflow.org/");
}

static gboolean in_list(const char *key, const char *const *list, guint n)
{
    for (guint i = 0; i < n; i++)
        if (strcmp(key, list[i]) == 0)
            return TRUE;
    return FALSE;
}

static json_object *copy(json_object *o)
{
    json_object *out = NULL;
    if (o == NULL)
        return NULL;
    json_object_deep_copy(o, &out, NULL);
    return out;
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (o != NULL && json_object_is_type(o, json_type_object))
        json_object_object_get_ex(o, key, &v);
    return v;
}

static const char *get_string(json_object *o, const char *key)
{
    json_object *v = get(o, key);
    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static gint64 get_int(json_object *o, const char *key)
{
    json_object *v = get(o, key);
    return v != NULL && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

/* ---- spec ------------------------------------------------------------------------------------ */

static json_object *alpha_specs_to_v1(json_object *list, GError **error)
{
    json_object *map = json_object_new_object();
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *o = json_object_array_get_idx(list, i);
        const char *t = get_string(o, "tfReplicaType");
        KbTfReplicaType type = KB_TF_MASTER;
        if (o == NULL || !json_object_is_type(o, json_type_object)) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "spec.replicaSpecs[%zu]: expected an object", i);
            json_object_put(map);
            return NULL;
        }
        if (t != NULL && *t != '\0' && !kb_tf_replica_type_parse(t, &type)) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "spec.replicaSpecs[%zu].tfReplicaType: unknown replica type \"%s\"", i, t);
            json_object_put(map);
            return NULL;
        }
        const char *key = kb_tf_replica_type_to_string(type);
        if (get(map, key) != NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "spec.replicaSpecs[%zu].tfReplicaType: %s given twice", i,
                        kb_tf_replica_type_to_alpha(type));
            json_object_put(map);
            return NULL;
        }
        json_object *rs = json_object_new_object();
        if (get(o, "replicas") != NULL)
            json_object_object_add(rs, "replicas", copy(get(o, "replicas")));
        if (get(o, "template") != NULL)
            json_object_object_add(rs, "template", copy(get(o, "template")));
        json_object_object_add(rs, "restartPolicy", json_object_new_string("ExitCode"));
        json_object_object_add(map, key, rs);
    }
    return map;
}

static json_object *v1_specs_to_alpha(json_object *map, GError **error)
{
    static const KbTfReplicaType order[] = {KB_TF_CHIEF, KB_TF_MASTER, KB_TF_WORKER, KB_TF_PS,
                                            KB_TF_EVALUATOR};
    json_object *by_type[KB_TF_N_TYPES] = {NULL};
    json_object_object_foreach(map, key, val)
    {
        KbTfReplicaType type;
        if (!kb_tf_replica_type_parse(key, &type)) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "spec.tfReplicaSpecs.%s: unknown replica type \"%s\"", key, key);
            return NULL;
        }
        if (type == KB_TF_EVALUATOR) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "spec.tfReplicaSpecs.%s: kubeflow.org/v1alpha1 has no Evaluator replicas",
                        key);
            return NULL;
        }
        if (val == NULL || !json_object_is_type(val, json_type_object)) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "spec.tfReplicaSpecs.%s: expected an object", key);
            return NULL;
        }
        if (by_type[type] != NULL || (type == KB_TF_CHIEF && by_type[KB_TF_MASTER] != NULL) ||
            (type == KB_TF_MASTER && by_type[KB_TF_CHIEF] != NULL)) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "spec.tfReplicaSpecs.%s: a second %s; kubeflow.org/v1alpha1 has one "
                        "MASTER",
                        key, kb_tf_replica_type_to_alpha(type));
            return NULL;
        }
        by_type[type] = val;
    }
    json_object *list = json_object_new_array();
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        json_object *spec = by_type[order[i]];
        if (spec == NULL)
            continue;
        KbTfReplicaType type = order[i] == KB_TF_CHIEF ? KB_TF_MASTER : order[i];
        json_object *rs = json_object_new_object();
        if (get(spec, "replicas") != NULL)
            json_object_object_add(rs, "replicas", copy(get(spec, "replicas")));
        if (get(spec, "template") != NULL)
            json_object_object_add(rs, "template", copy(get(spec, "template")));
        json_object_object_add(rs, "tfReplicaType",
                               json_object_new_string(kb_tf_replica_type_to_alpha(type)));
        json_object_array_add(list, rs);
    }
    return list;
}

/* @spec (a version's spec, never NULL) in v1. New object or NULL with @error. */
static json_object *spec_to_v1(KbTfApi from, json_object *spec, GError **error)
{
    json_object *out = json_object_new_object(), *rp = NULL;
    if (from == KB_TF_API_V1) {
        json_object_put(out);
        return copy(spec);
    }
    json_object_object_foreach(spec, key, val)
    {
        if (from == KB_TF_API_V1ALPHA1 && strcmp(key, "replicaSpecs") == 0) {
            if (!json_object_is_type(val, json_type_array)) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "spec.replicaSpecs: expected a list");
                json_object_put(out);
                return NULL;
            }
            json_object *map = alpha_specs_to_v1(val, error);
            if (map == NULL) {
                json_object_put(out);
                return NULL;
            }
            json_object_object_add(out, "tfReplicaSpecs", map);
        } else if (from == KB_TF_API_V1ALPHA1 &&
                   in_list(key, alpha_only, G_N_ELEMENTS(alpha_only))) {
            continue;
        } else if (from != KB_TF_API_V1ALPHA1 &&
                   in_list(key, run_policy_keys, G_N_ELEMENTS(run_policy_keys))) {
            if (rp == NULL)
                rp = json_object_new_object();
            json_object_object_add(rp, key, copy(val));
        } else if (from != KB_TF_API_V1ALPHA1 &&
                   (strcmp(key, "runPolicy") == 0 || strcmp(key, "successPolicy") == 0)) {
            continue; /* v1's fields, unknown to the betas: not given meaning in v1 */
        } else {
            json_object_object_add(out, key, copy(val));
        }
    }
    if (rp == NULL)
        rp = json_object_new_object();
    if (get(rp, "cleanPodPolicy") == NULL)
        json_object_object_add(
                rp, "cleanPodPolicy",
                json_object_new_string(from == KB_TF_API_V1ALPHA1 ? "All" : "Running"));
    json_object_object_add(out, "runPolicy", rp);
    return out;
}

/* @spec (v1, never NULL) in @to. New object or NULL with @error. */
static json_object *spec_from_v1(KbTfApi to, json_object *spec, GError **error)
{
    if (to == KB_TF_API_V1)
        return copy(spec);
    json_object *out = json_object_new_object();
    json_object_object_foreach(spec, key, val)
    {
        if (strcmp(key, "runPolicy") == 0 || strcmp(key, "successPolicy") == 0 ||
            in_list(key, run_policy_keys, G_N_ELEMENTS(run_policy_keys)))
            continue;
        if (to == KB_TF_API_V1ALPHA1 && strcmp(key, "tfReplicaSpecs") == 0) {
            if (!json_object_is_type(val, json_type_object)) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                            "spec.tfReplicaSpecs: expected an object");
                json_object_put(out);
                return NULL;
            }
            json_object *list = v1_specs_to_alpha(val, error);
            if (list == NULL) {
                json_object_put(out);
                return NULL;
            }
            json_object_object_add(out, "replicaSpecs", list);
            continue;
        }
        json_object_object_add(out, key, copy(val));
    }
    if (to == KB_TF_API_V1ALPHA1)
        return out;
    /* The betas: runPolicy's four fields (older v1 objects: spec's) in spec. */
    json_object *rp = get(spec, "runPolicy");
    for (guint i = 0; i < G_N_ELEMENTS(run_policy_keys); i++) {
        json_object *v = get(rp, run_policy_keys[i]);
        if (v == NULL)
            v = get(spec, run_policy_keys[i]);
        if (v != NULL)
            json_object_object_add(out, run_policy_keys[i], copy(v));
    }
    /* Each side's default said explicitly only where the other's differs: a beta job without
     * cleanPodPolicy comes back from v1 without one, and carries no annotation. */
    if (get(out, "cleanPodPolicy") == NULL)
        json_object_object_add(out, "cleanPodPolicy", json_object_new_string("None"));
    else if (g_strcmp0(get_string(out, "cleanPodPolicy"), "Running") == 0)
        json_object_object_del(out, "cleanPodPolicy");
    return out;
}

/* ---- status ---------------------------------------------------------------------------------- */

static void add_condition(json_object *conds, const char *type, const char *reason,
                          const char *message)
{
    json_object *c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string(type));
    json_object_object_add(c, "status", json_object_new_string("True"));
    json_object_object_add(c, "reason", json_object_new_string(reason));
    if (message != NULL && *message != '\0')
        json_object_object_add(c, "message", json_object_new_string(message));
    json_object_array_add(conds, c);
}

static void add_count(json_object *o, const char *key, gint64 n)
{
    if (n > 0)
        json_object_object_add(o, key, json_object_new_int64(n));
}

static json_object *status_alpha_to_v1(json_object *status)
{
    static const char *const alpha_keys[] = {"phase",           "state",         "reason",
                                             "replicaStatuses", "controlPaused", "conditions"};
    json_object *out = json_object_new_object();
    json_object_object_foreach(status, key, val)
    {
        if (!in_list(key, alpha_keys, G_N_ELEMENTS(alpha_keys)))
            json_object_object_add(out, key, copy(val));
    }
    const char *phase = get_string(status, "phase"), *state = get_string(status, "state");
    json_object *conds = json_object_new_array();
    if (phase != NULL)
        add_condition(conds, "Created", "TFJobCreated", NULL);
    if (g_strcmp0(state, "Running") == 0 && g_strcmp0(phase, "Creating") != 0)
        add_condition(conds, "Running", "TFJobRunning", NULL);
    else if (g_strcmp0(state, "Succeeded") == 0)
        add_condition(conds, "Succeeded", "TFJobSucceeded", NULL);
    else if (g_strcmp0(state, "Failed") == 0)
        add_condition(conds, "Failed", "TFJobFailed", get_string(status, "reason"));
    json_object_object_add(out, "conditions", conds);
    json_object *rs = get(status, "replicaStatuses");
    if (rs != NULL && json_object_is_type(rs, json_type_array)) {
        json_object *map = json_object_new_object();
        for (size_t i = 0; i < json_object_array_length(rs); i++) {
            json_object *r = json_object_array_get_idx(rs, i), *counts = get(r, "ReplicasStates");
            KbTfReplicaType type;
            if (!kb_tf_replica_type_parse(get_string(r, "tf_replica_type"), &type))
                continue;
            json_object *o = json_object_new_object();
            add_count(o, "active", get_int(counts, "Running"));
            add_count(o, "succeeded", get_int(counts, "Succeeded"));
            add_count(o, "failed", get_int(counts, "Failed"));
            json_object_object_add(map, kb_tf_replica_type_to_string(type), o);
        }
        json_object_object_add(out, "replicaStatuses", map);
    }
    return out;
}

/* The last true condition of @conds of one of the job states, or NULL. */
static json_object *last_true(json_object *conds)
{
    json_object *last = NULL;
    for (size_t i = 0; conds != NULL && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds);
         i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(get_string(c, "status"), "True") == 0 && get_string(c, "type") != NULL)
            last = c;
    }
    return last;
}

static json_object *status_v1_to_alpha(json_object *status)
{
    json_object *out = json_object_new_object();
    json_object_object_foreach(status, key, val)
    {
        if (strcmp(key, "conditions") != 0 && strcmp(key, "replicaStatuses") != 0)
            json_object_object_add(out, key, copy(val));
    }
    json_object *c = last_true(get(status, "conditions"));
    const char *type = get_string(c, "type");
    const char *phase = "Creating", *state = "Running", *reason = "";
    if (g_strcmp0(type, "Succeeded") == 0)
        phase = "Done", state = "Succeeded";
    else if (g_strcmp0(type, "Failed") == 0) {
        phase = "Failed", state = "Failed";
        reason = get_string(c, "message") != NULL ? get_string(c, "message") : "";
    } else if (g_strcmp0(type, "Running") == 0 || g_strcmp0(type, "Restarting") == 0)
        phase = "Running";
    json_object_object_add(out, "conditions", NULL);
    json_object_object_add(out, "phase", json_object_new_string(phase));
    json_object_object_add(out, "state", json_object_new_string(state));
    json_object_object_add(out, "reason", json_object_new_string(reason));
    json_object *rs = get(status, "replicaStatuses");
    if (rs != NULL && json_object_is_type(rs, json_type_object)) {
        json_object *list = json_object_new_array();
        json_object_object_foreach(rs, rkey, r)
        {
            KbTfReplicaType t;
            if (!kb_tf_replica_type_parse(rkey, &t))
                continue;
            gint64 active = get_int(r, "active"), ok = get_int(r, "succeeded");
            gint64 failed = get_int(r, "failed");
            json_object *o = json_object_new_object(), *states = json_object_new_object();
            add_count(states, "Running", active);
            add_count(states, "Succeeded", ok);
            add_count(states, "Failed", failed);
            json_object_object_add(o, "ReplicasStates", states);
            json_object_object_add(o, "state",
                                   json_object_new_string(failed > 0   ? "Failed"
                                                          : active > 0 ? "Running"
                                                          : ok > 0     ? "Succeeded"
                                                                       : "Unknown"));
            json_object_object_add(o, "tf_replica_type",
                                   json_object_new_string(kb_tf_replica_type_to_alpha(
                                           t == KB_TF_CHIEF ? KB_TF_MASTER : t)));
            json_object_array_add(list, o);
        }
        json_object_object_add(out, "replicaStatuses", list);
    }
    return out;
}

/* ---- field by field, any to any ------------------------------------------------------------ */

static json_object *spec_fieldwise(KbTfApi from, KbTfApi to, json_object *spec, GError **error)
{
    if (from == to)
        return copy(spec);
    g_autoptr(json_object) hub = spec_to_v1(from, spec, error);
    return hub != NULL ? spec_from_v1(to, hub, error) : NULL;
}

static json_object *status_fieldwise(KbTfApi from, KbTfApi to, json_object *status)
{
    if (from == to || (from != KB_TF_API_V1ALPHA1 && to != KB_TF_API_V1ALPHA1))
        return copy(status);
    return from == KB_TF_API_V1ALPHA1 ? status_alpha_to_v1(status) : status_v1_to_alpha(status);
}

/* ---- the annotation -------------------------------------------------------------------------- */

static int compare_keys(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* @o with object keys sorted at every level: a real API server re-serializes with sorted keys. */
static void canonical(json_object *o, GString *out)
{
    if (o == NULL || !json_object_is_type(o, json_type_object)) {
        if (o != NULL && json_object_is_type(o, json_type_array)) {
            g_string_append_c(out, '[');
            for (size_t i = 0; i < json_object_array_length(o); i++) {
                canonical(json_object_array_get_idx(o, i), out);
                g_string_append_c(out, ',');
            }
            g_string_append_c(out, ']');
        } else {
            g_string_append(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        }
        return;
    }
    g_autoptr(GPtrArray) keys = g_ptr_array_new();
    json_object_object_foreach(o, key, val)
    {
        (void)val;
        g_ptr_array_add(keys, key);
    }
    g_ptr_array_sort(keys, compare_keys);
    g_string_append_c(out, '{');
    for (guint i = 0; i < keys->len; i++) {
        json_object *k = json_object_new_string(keys->pdata[i]);
        g_string_append(out, json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN));
        json_object_put(k);
        g_string_append_c(out, ':');
        canonical(get(o, keys->pdata[i]), out);
        g_string_append_c(out, ',');
    }
    g_string_append_c(out, '}');
}

static char *checksum(json_object *o)
{
    g_autoptr(GString) s = g_string_new(NULL);
    canonical(o, s);
    return g_compute_checksum_for_string(G_CHECKSUM_SHA256, s->str, (gssize)s->len);
}

/* The stash: the annotation's object (new), an empty one when absent; NULL when malformed. */
static json_object *stash_read(json_object *obj, GError **error)
{
    const char *s = get_string(get(get(obj, "metadata"), "annotations"), KB_TFCONV_ANNOTATION);
    if (s == NULL)
        return json_object_new_object();
    json_tokener *tok = json_tokener_new_ex(KB_TFCONV_MAX_DEPTH);
    json_object *st = json_tokener_parse_ex(tok, s, (int)MIN(strlen(s), (size_t)G_MAXINT));
    gboolean complete = json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    if (st == NULL || !complete || !json_object_is_type(st, json_type_object)) {
        json_object_put(st);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "metadata.annotations[\"%s\"]: not a JSON object", KB_TFCONV_ANNOTATION);
        return NULL;
    }
    return st;
}

/*
 * The stashed @what ("spec"/"status") of version @to when it is still good for @current in
 * @from (a new reference), else NULL.
 */
static json_object *stash_take(json_object *stash, KbTfApi from, KbTfApi to, const char *what,
                               json_object *current)
{
    json_object *e = get(stash, short_version(to));
    g_autofree char *sum_key = g_strdup_printf("%sSum", what);
    const char *sum = get_string(e, sum_key);
    if (e == NULL || g_strcmp0(get_string(e, "to"), kb_tf_api_version(from)) != 0 || sum == NULL ||
        get(e, what) == NULL)
        return NULL;
    g_autofree char *now = checksum(current);
    return strcmp(now, sum) == 0 ? copy(get(e, what)) : NULL;
}

/* Records @orig (in @from) under the stash when @converted (in @to) does not give it back. */
static void stash_put(json_object *stash, KbTfApi from, KbTfApi to, const char *what,
                      json_object *orig, json_object *converted)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(json_object) back = NULL;
    if (g_strcmp0(what, "spec") == 0)
        back = spec_fieldwise(to, from, converted, &e);
    else
        back = status_fieldwise(to, from, converted);
    if (back != NULL && json_object_equal(back, orig))
        return;
    const char *v = short_version(from);
    json_object *entry = get(stash, v);
    if (entry == NULL || !json_object_is_type(entry, json_type_object)) {
        /* absent, or not ours (the annotation is user-editable): a fresh entry */
        entry = json_object_new_object();
        json_object_object_add(stash, v, entry);
    }
    g_autofree char *sum_key = g_strdup_printf("%sSum", what);
    json_object_object_add(entry, "to", json_object_new_string(kb_tf_api_version(to)));
    g_autofree char *sum = checksum(converted);
    json_object_object_add(entry, sum_key, json_object_new_string(sum));
    json_object_object_add(entry, what, copy(orig));
}

static void stash_write(json_object *out, json_object *stash)
{
    json_object *meta = get(out, "metadata"), *ann = get(meta, "annotations");
    if (json_object_object_length(stash) == 0) {
        if (ann != NULL && json_object_is_type(ann, json_type_object)) {
            json_object_object_del(ann, KB_TFCONV_ANNOTATION);
            if (json_object_object_length(ann) == 0)
                json_object_object_del(meta, "annotations");
        }
        return;
    }
    if (ann == NULL || !json_object_is_type(ann, json_type_object)) {
        ann = json_object_new_object();
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(
            ann, KB_TFCONV_ANNOTATION,
            json_object_new_string(json_object_to_json_string_ext(stash, JSON_C_TO_STRING_PLAIN)));
}

/* ---- one object ------------------------------------------------------------------------------ */

static KbTfApi source_api(json_object *obj)
{
    KbTfApi api = KB_TF_API_V1;
    kb_tf_api_parse(get_string(obj, "apiVersion"), &api);
    json_object *spec = get(obj, "spec");
    if (get(spec, "replicaSpecs") != NULL && get(spec, "tfReplicaSpecs") == NULL)
        return KB_TF_API_V1ALPHA1;
    return api;
}

static void copy_missing(json_object *dst, json_object *src, const char *key)
{
    json_object *v = get(src, key);
    if (v != NULL && get(dst, key) == NULL)
        json_object_object_add(dst, key, copy(v));
}

/*
 * A spec changed in the other version is converted field by field; what only @to could say is
 * taken back from its stale stash entry @old: v1alpha1's RuntimeId, tfImage, terminationPolicy
 * and per-replica tfPort, v1's successPolicy and runPolicy's other fields.
 */
static void overlay(KbTfApi to, json_object *conv, json_object *old)
{
    if (to == KB_TF_API_V1ALPHA1) {
        for (guint i = 0; i < G_N_ELEMENTS(alpha_only); i++)
            copy_missing(conv, old, alpha_only[i]);
        json_object *list = get(conv, "replicaSpecs"), *olist = get(old, "replicaSpecs");
        if (list == NULL || olist == NULL || !json_object_is_type(olist, json_type_array))
            return;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            json_object *rs = json_object_array_get_idx(list, i);
            for (size_t k = 0; k < json_object_array_length(olist); k++) {
                json_object *o = json_object_array_get_idx(olist, k);
                const char *t = get_string(o, "tfReplicaType");
                if (g_ascii_strcasecmp(t != NULL && *t != '\0' ? t : "MASTER",
                                       get_string(rs, "tfReplicaType")) == 0)
                    copy_missing(rs, o, "tfPort");
            }
        }
    } else if (to == KB_TF_API_V1) {
        copy_missing(conv, old, "successPolicy");
        json_object *rp = get(conv, "runPolicy"), *orp = get(old, "runPolicy");
        if (rp == NULL || orp == NULL || !json_object_is_type(orp, json_type_object))
            return;
        json_object_object_foreach(orp, key, val)
        {
            (void)val;
            if (!in_list(key, run_policy_keys, G_N_ELEMENTS(run_policy_keys)))
                copy_missing(rp, orp, key);
        }
    }
}

/* Converts @what of @obj into @out; FALSE with @error. */
static gboolean convert_part(json_object *obj, json_object *out, json_object *stash, KbTfApi from,
                             KbTfApi to, const char *what, GError **error)
{
    json_object *cur = get(obj, what);
    if (cur == NULL)
        return TRUE;
    if (!json_object_is_type(cur, json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an object", what);
        return FALSE;
    }
    json_object *conv = stash_take(stash, from, to, what, cur);
    if (conv == NULL && strcmp(what, "spec") == 0) {
        conv = spec_fieldwise(from, to, cur, error);
        json_object *old = get(get(stash, short_version(to)), "spec");
        if (conv != NULL && old != NULL && json_object_is_type(old, json_type_object))
            overlay(to, conv, old);
    } else if (conv == NULL)
        conv = status_fieldwise(from, to, cur);
    if (conv == NULL)
        return FALSE;
    json_object_object_add(out, what, conv);
    return TRUE;
}

/* Conversions between v1alpha1 and v1 record the version the job was written in. */
static gboolean marks_origin(KbTfApi from, KbTfApi to)
{
    return (from == KB_TF_API_V1ALPHA1 && to == KB_TF_API_V1) ||
           (from == KB_TF_API_V1 && to == KB_TF_API_V1ALPHA1);
}

json_object *kb_tfconv_convert(json_object *obj, KbTfApi to, GError **error)
{
    if (obj == NULL || !json_object_is_type(obj, json_type_object) ||
        !json_object_is_type(get(obj, "metadata"), json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "tfjob: expected an object with metadata");
        return NULL;
    }
    json_object *meta = get(obj, "metadata");
    const char *ns = get_string(meta, "namespace"), *name = get_string(meta, "name");
    KbTfApi from = source_api(obj);
    if (from != to && from != KB_TF_API_V1 && to != KB_TF_API_V1) {
        /* Through the hub in two full steps, so that the stash entries recorded against v1
         * (the storage version, where every entry is made) are used on the way. */
        g_autoptr(json_object) hub = kb_tfconv_convert(obj, KB_TF_API_V1, error);
        return hub != NULL ? kb_tfconv_convert(hub, to, error) : NULL;
    }
    g_autoptr(json_object) out = copy(obj);
    json_object_object_add(out, "apiVersion", json_object_new_string(kb_tf_api_version(to)));
    if (from == to)
        return g_steal_pointer(&out);
    g_autoptr(json_object) stash = stash_read(obj, error);
    if (stash == NULL || !convert_part(obj, out, stash, from, to, "spec", error) ||
        !convert_part(obj, out, stash, from, to, "status", error)) {
        g_prefix_error(error, "tfjob %s/%s: ", ns != NULL ? ns : "", name != NULL ? name : "");
        return NULL;
    }
    /* an entry for @to: the job was written in @to and comes back to it */
    gboolean born_to = json_object_is_type(get(stash, short_version(to)), json_type_object);
    json_object_object_del(stash, short_version(to));
    const char *parts[] = {"spec", "status"};
    for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
        if (get(obj, parts[i]) != NULL)
            stash_put(stash, from, to, parts[i], get(obj, parts[i]), get(out, parts[i]));
    }
    if (marks_origin(from, to) && !born_to &&
        !json_object_is_type(get(stash, short_version(from)), json_type_object)) {
        /* which of v1alpha1 and v1 the job was written in, even when nothing else needs keeping
         * (an entry without a spec): tf-operator runs a job written as v1alpha1 as one (its pod
         * names, its PS container) whatever version the CRD stores it in */
        json_object *mark = json_object_new_object();
        json_object_object_add(mark, "to", json_object_new_string(kb_tf_api_version(to)));
        json_object_object_add(stash, short_version(from), mark);
    }
    stash_write(out, stash);
    return g_steal_pointer(&out);
}

gboolean kb_tfconv_written_as_alpha(json_object *obj)
{
    if (g_strcmp0(get_string(obj, "apiVersion"), kb_tf_api_version(KB_TF_API_V1)) != 0 ||
        get(get(obj, "spec"), "replicaSpecs") != NULL)
        return FALSE;
    const char *s = get_string(get(get(obj, "metadata"), "annotations"), KB_TFCONV_ANNOTATION);
    if (s == NULL)
        return FALSE;
    g_autoptr(GError) error = NULL;
    g_autoptr(json_object) stash = stash_read(obj, &error);
    json_object *e = get(stash, "v1alpha1");
    return json_object_is_type(e, json_type_object) &&
           g_strcmp0(get_string(e, "to"), kb_tf_api_version(KB_TF_API_V1)) == 0;
}

/* ---- ConversionReview ------------------------------------------------------------------------ */

static json_object *review_response(const char *api_version, const char *uid, json_object *objs,
                                    const char *failure)
{
    json_object *doc = json_object_new_object(), *resp = json_object_new_object();
    json_object *result = json_object_new_object();
    json_object_object_add(doc, "apiVersion", json_object_new_string(api_version));
    json_object_object_add(doc, "kind", json_object_new_string("ConversionReview"));
    json_object_object_add(resp, "uid", json_object_new_string(uid));
    json_object_object_add(resp, "convertedObjects", objs != NULL ? objs : json_object_new_array());
    json_object_object_add(result, "status",
                           json_object_new_string(failure == NULL ? "Success" : "Failure"));
    if (failure != NULL)
        json_object_object_add(result, "message", json_object_new_string(failure));
    json_object_object_add(resp, "result", result);
    json_object_object_add(doc, "response", resp);
    return doc;
}

/* The request's parts, checked against the limits; FALSE with @error. */
static gboolean review_request(json_object *doc, const char **av, const char **uid,
                               const char **desired, json_object **objects, GError **error)
{
    json_object *req = get(doc, "request");
    *av = get_string(doc, "apiVersion");
    *uid = get_string(req, "uid");
    *desired = get_string(req, "desiredAPIVersion");
    *objects = get(req, "objects");
    if (g_strcmp0(get_string(doc, "kind"), "ConversionReview") != 0 ||
        (g_strcmp0(*av, "apiextensions.k8s.io/v1") != 0 &&
         g_strcmp0(*av, "apiextensions.k8s.io/v1beta1") != 0)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "not a ConversionReview (apiextensions.k8s.io/v1 or v1beta1)");
        return FALSE;
    }
    if (req == NULL || !json_object_is_type(req, json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "ConversionReview: request: missing");
        return FALSE;
    }
    if (*uid == NULL || **uid == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "ConversionReview: request.uid: missing");
        return FALSE;
    }
    if (strlen(*uid) > KB_TFCONV_MAX_UID) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "ConversionReview: request.uid: %zu characters, more than %d", strlen(*uid),
                    KB_TFCONV_MAX_UID);
        return FALSE;
    }
    if (*desired == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "ConversionReview: request.desiredAPIVersion: missing");
        return FALSE;
    }
    if (*objects == NULL || !json_object_is_type(*objects, json_type_array)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "ConversionReview: request.objects: expected a list");
        return FALSE;
    }
    if (json_object_array_length(*objects) > KB_TFCONV_MAX_OBJECTS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "ConversionReview: request.objects: %zu objects, more than %d",
                    json_object_array_length(*objects), KB_TFCONV_MAX_OBJECTS);
        return FALSE;
    }
    return TRUE;
}

json_object *kb_tfconv_review(const char *body, size_t len, GError **error)
{
    const char *av, *uid, *desired;
    json_object *objects;
    KbTfApi to;
    if (len > KB_TFCONV_MAX_BODY) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "ConversionReview: %zu bytes, more than %d",
                    len, KB_TFCONV_MAX_BODY);
        return NULL;
    }
    json_tokener *tok = json_tokener_new_ex(KB_TFCONV_MAX_DEPTH);
    g_autoptr(json_object) doc = json_tokener_parse_ex(tok, body != NULL ? body : "", (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr == json_tokener_error_depth) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "ConversionReview: nested more than %d deep",
                    KB_TFCONV_MAX_DEPTH);
        return NULL;
    }
    if (doc == NULL || jerr != json_tokener_success) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "ConversionReview: %s",
                    jerr == json_tokener_continue ? "truncated JSON"
                                                  : json_tokener_error_desc(jerr));
        return NULL;
    }
    while (end < len && g_ascii_isspace(body[end]))
        end++;
    if (end < len) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "ConversionReview: data after the document at byte %zu", end);
        return NULL;
    }
    if (!review_request(doc, &av, &uid, &desired, &objects, error))
        return NULL;
    if (!kb_tf_api_parse(desired, &to)) {
        g_autofree char *msg = g_strdup_printf(
                "request.desiredAPIVersion: \"%s\" is not a TFJob version (kubeflow.org/v1, "
                "v1beta2, v1beta1, v1alpha1)",
                desired);
        return review_response(av, uid, NULL, msg);
    }
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(objects); i++) {
        g_autoptr(GError) e = NULL;
        json_object *o = kb_tfconv_convert(json_object_array_get_idx(objects, i), to, &e);
        if (o == NULL) {
            json_object_put(out);
            return review_response(av, uid, NULL, e->message);
        }
        json_object_array_add(out, o);
    }
    return review_response(av, uid, out, NULL);
}
