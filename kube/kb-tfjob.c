/*
 * TFJob decoding: both API shapes into one KbTfJob, with validation kept apart from structural
 * decoding (see kb-tfjob.h).
 */
#include "kube/kb-tfjob.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

static const struct {
    const char *v1;
    const char *lower;
    const char *alpha;
} type_names[KB_TF_N_TYPES] = {
        [KB_TF_CHIEF] = {"Chief", "chief", "CHIEF"},
        [KB_TF_MASTER] = {"Master", "master", "MASTER"},
        [KB_TF_WORKER] = {"Worker", "worker", "WORKER"},
        [KB_TF_PS] = {"PS", "ps", "PS"},
        [KB_TF_EVALUATOR] = {"Evaluator", "evaluator", "EVALUATOR"},
};

static const char *const restart_names[] = {
        [KB_TF_RESTART_ALWAYS] = "Always",
        [KB_TF_RESTART_ON_FAILURE] = "OnFailure",
        [KB_TF_RESTART_NEVER] = "Never",
        [KB_TF_RESTART_EXIT_CODE] = "ExitCode",
};

static const char *const cond_names[KB_TF_N_CONDS] = {
        [KB_TF_COND_CREATED] = "Created",       [KB_TF_COND_RUNNING] = "Running",
        [KB_TF_COND_RESTARTING] = "Restarting", [KB_TF_COND_SUCCEEDED] = "Succeeded",
        [KB_TF_COND_FAILED] = "Failed",
};

const char *kb_tf_replica_type_to_string(KbTfReplicaType type)
{
    return type < KB_TF_N_TYPES ? type_names[type].v1 : "Unknown";
}

const char *kb_tf_replica_type_to_lower(KbTfReplicaType type)
{
    return type < KB_TF_N_TYPES ? type_names[type].lower : "unknown";
}

const char *kb_tf_replica_type_to_alpha(KbTfReplicaType type)
{
    return type < KB_TF_N_TYPES ? type_names[type].alpha : "UNKNOWN";
}

gboolean kb_tf_replica_type_parse(const char *s, KbTfReplicaType *type)
{
    if (s == NULL)
        return FALSE;
    for (int i = 0; i < KB_TF_N_TYPES; i++) {
        if (g_ascii_strcasecmp(s, type_names[i].v1) == 0) {
            *type = (KbTfReplicaType)i;
            return TRUE;
        }
    }
    return FALSE;
}

static const char *const api_versions[] = {
        [KB_TF_API_V1] = "kubeflow.org/v1",
        [KB_TF_API_V1ALPHA1] = "kubeflow.org/v1alpha1",
        [KB_TF_API_V1BETA1] = "kubeflow.org/v1beta1",
        [KB_TF_API_V1BETA2] = "kubeflow.org/v1beta2",
};

const char *kb_tf_api_version(KbTfApi api)
{
    return api < G_N_ELEMENTS(api_versions) ? api_versions[api] : "kubeflow.org/v1";
}

gboolean kb_tf_api_parse(const char *api_version, KbTfApi *api)
{
    for (guint i = 0; api_version != NULL && i < G_N_ELEMENTS(api_versions); i++) {
        if (strcmp(api_version, api_versions[i]) == 0) {
            *api = (KbTfApi)i;
            return TRUE;
        }
    }
    return FALSE;
}

const char *kb_tf_restart_policy_to_string(KbTfRestartPolicy policy)
{
    return policy <= KB_TF_RESTART_EXIT_CODE ? restart_names[policy] : "Unknown";
}

const char *kb_tf_condition_type_to_string(KbTfConditionType type)
{
    return type < KB_TF_N_CONDS ? cond_names[type] : "Unknown";
}

/* ---- JSON access with typed errors -------------------------------------------------------- */

static const char *json_type_label(json_type t)
{
    switch (t) {
    case json_type_object:
        return "an object";
    case json_type_array:
        return "a list";
    case json_type_string:
        return "a string";
    case json_type_int:
        return "an integer";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
        return "a number";
    default:
        return "null";
    }
}

/*
 * @obj[@key] when present and not null. Absent or null: TRUE with *out NULL. Present with the
 * wrong type: FALSE with KB_ERROR_DECODE naming @field.
 */
static gboolean member(json_object *obj, const char *key, json_type want, const char *field,
                       json_object **out, GError **error)
{
    json_object *v = NULL;
    *out = NULL;
    if (obj == NULL || !json_object_object_get_ex(obj, key, &v) || v == NULL)
        return TRUE;
    json_type t = json_object_get_type(v);
    /* Integral doubles ("2.0") are what some YAML-to-JSON paths produce. */
    if (want == json_type_int && t == json_type_double) {
        double d = json_object_get_double(v);
        if (d == (double)(gint64)d) {
            *out = v;
            return TRUE;
        }
    }
    if (t != want) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected %s, got %s", field,
                    json_type_label(want), json_type_label(t));
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static gboolean member_int(json_object *obj, const char *key, const char *field, gint64 *out,
                           gboolean *present, GError **error)
{
    json_object *v;
    if (!member(obj, key, json_type_int, field, &v, error))
        return FALSE;
    *present = v != NULL;
    if (v != NULL)
        *out = json_object_get_type(v) == json_type_double ? (gint64)json_object_get_double(v)
                                                           : json_object_get_int64(v);
    return TRUE;
}

static gboolean member_string(json_object *obj, const char *key, const char *field,
                              const char **out, GError **error)
{
    json_object *v;
    if (!member(obj, key, json_type_string, field, &v, error))
        return FALSE;
    *out = v != NULL ? json_object_get_string(v) : NULL;
    return TRUE;
}

/* ---- validation messages -------------------------------------------------------------------- */

/* Keeps the first semantic problem: the user fixes one thing at a time, the message stays short. */
static void invalid(KbTfJob *job, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void invalid(KbTfJob *job, const char *fmt, ...)
{
    if (job->invalid != NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    job->invalid = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

/* ---- replica specs -------------------------------------------------------------------------- */

static gboolean container_requests(json_object *c, const char *field, KbResources *out,
                                   GError **error)
{
    json_object *res, *req, *lim;
    g_autofree char *f_res = g_strdup_printf("%s.resources", field);
    g_autofree char *f_req = g_strdup_printf("%s.resources.requests", field);
    g_autofree char *f_lim = g_strdup_printf("%s.resources.limits", field);
    KbResources r, l;
    kb_resources_clear(&r);
    kb_resources_clear(&l);
    if (!member(c, "resources", json_type_object, f_res, &res, error) ||
        !member(res, "requests", json_type_object, f_req, &req, error) ||
        !member(res, "limits", json_type_object, f_lim, &lim, error))
        return FALSE;
    if (req != NULL && !kb_resources_decode(req, f_req, &r, error))
        return FALSE;
    if (lim != NULL && !kb_resources_decode(lim, f_lim, &l, error))
        return FALSE;
    /* As the API server defaults it: a limit stands for a missing request. */
    for (int i = 0; i < KB_RES_MAX; i++)
        if (r.v[i] == 0)
            r.v[i] = l.v[i];
    r.v[KB_RES_PODS] = 0;
    *out = r;
    return TRUE;
}

/*
 * The template's containers: whether one is named "tensorflow", its tfjob-port (v1), and the
 * pod's requests (sum of containers, at least the largest init container).
 */
static gboolean decode_template(KbTfJob *job, KbTfReplicaSpec *rs, const char *field,
                                gint64 *port_out, GError **error)
{
    json_object *spec, *containers, *inits;
    g_autofree char *f_spec = g_strdup_printf("%s.template.spec", field);
    g_autofree char *f_cont = g_strdup_printf("%s.template.spec.containers", field);
    g_autofree char *f_init = g_strdup_printf("%s.template.spec.initContainers", field);
    if (!member(rs->template_, "spec", json_type_object, f_spec, &spec, error) ||
        !member(spec, "containers", json_type_array, f_cont, &containers, error) ||
        !member(spec, "initContainers", json_type_array, f_init, &inits, error))
        return FALSE;
    size_t n = containers != NULL ? json_object_array_length(containers) : 0;
    size_t ni = inits != NULL ? json_object_array_length(inits) : 0;
    if (n > KB_MAX_CONTAINERS || ni > KB_MAX_CONTAINERS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: %zu containers, more than %d", f_cont,
                    MAX(n, ni), KB_MAX_CONTAINERS);
        return FALSE;
    }
    kb_resources_clear(&rs->requests);
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(containers, i);
        g_autofree char *fc = g_strdup_printf("%s[%zu]", f_cont, i);
        const char *name;
        KbResources r;
        if (c == NULL || json_object_get_type(c) != json_type_object) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an object", fc);
            return FALSE;
        }
        if (!member_string(c, "name", fc, &name, error) || !container_requests(c, fc, &r, error))
            return FALSE;
        kb_resources_add(&rs->requests, &r);
        if (g_strcmp0(name, KB_TF_DEFAULT_CONTAINER) != 0)
            continue;
        rs->has_tf_container = TRUE;
        json_object *ports;
        g_autofree char *fp = g_strdup_printf("%s.ports", fc);
        if (!member(c, "ports", json_type_array, fp, &ports, error))
            return FALSE;
        for (size_t p = 0; ports != NULL && p < json_object_array_length(ports); p++) {
            json_object *po = json_object_array_get_idx(ports, p);
            const char *pname = NULL;
            gint64 cport = 0;
            gboolean has = FALSE;
            if (json_object_get_type(po) != json_type_object)
                continue;
            if (!member_string(po, "name", fp, &pname, error) ||
                !member_int(po, "containerPort", fp, &cport, &has, error))
                return FALSE;
            if (has && g_strcmp0(pname, "tfjob-port") == 0)
                *port_out = cport;
        }
    }
    for (size_t i = 0; i < ni; i++) {
        json_object *c = json_object_array_get_idx(inits, i);
        g_autofree char *fc = g_strdup_printf("%s[%zu]", f_init, i);
        KbResources r;
        if (c == NULL || json_object_get_type(c) != json_type_object)
            continue;
        if (!container_requests(c, fc, &r, error))
            return FALSE;
        kb_resources_max(&rs->requests, &r);
    }
    const char *sched = NULL;
    if (!member_string(spec, "schedulerName", f_spec, &sched, error))
        return FALSE;
    if (sched != NULL && *sched != '\0' && job->scheduler_name == NULL)
        job->scheduler_name = g_intern_string(sched);
    return TRUE;
}

static gboolean parse_restart_policy(const char *s, KbTfRestartPolicy *out)
{
    for (int i = 0; i <= KB_TF_RESTART_EXIT_CODE; i++) {
        if (strcmp(s, restart_names[i]) == 0) {
            *out = (KbTfRestartPolicy)i;
            return TRUE;
        }
    }
    return FALSE;
}

/* Fills @rs from one replica spec object (either version); @field names it in messages. */
static gboolean decode_replica_spec(KbTfJob *job, json_object *o, KbTfReplicaType type,
                                    const char *field, GError **error)
{
    KbTfReplicaSpec *rs = &job->specs[type];
    g_autofree char *f_rep = g_strdup_printf("%s.replicas", field);
    g_autofree char *f_tmpl = g_strdup_printf("%s.template", field);
    g_autofree char *f_rp = g_strdup_printf("%s.restartPolicy", field);
    g_autofree char *f_port = g_strdup_printf("%s.tfPort", field);
    gint64 replicas = 1, port = KB_TF_DEFAULT_PORT, tfport = 0;
    gboolean has_rep = FALSE, has_tfport = FALSE;
    json_object *tmpl;
    const char *rp = NULL;

    if (json_object_get_type(o) != json_type_object) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an object, got %s", field,
                    json_type_label(json_object_get_type(o)));
        return FALSE;
    }
    if (!member_int(o, "replicas", f_rep, &replicas, &has_rep, error) ||
        !member(o, "template", json_type_object, f_tmpl, &tmpl, error) ||
        !member_string(o, "restartPolicy", f_rp, &rp, error) ||
        !member_int(o, "tfPort", f_port, &tfport, &has_tfport, error))
        return FALSE;
    if (!has_rep)
        replicas = 1;
    if (replicas > KB_TF_MAX_REPLICAS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "%s: %" G_GINT64_FORMAT " replicas, more than %d", f_rep, replicas,
                    KB_TF_MAX_REPLICAS);
        return FALSE;
    }
    if (rs->present)
        invalid(job, "%s: replica type %s given twice", field, kb_tf_replica_type_to_string(type));
    rs->present = TRUE;
    if (replicas < 0)
        invalid(job, "%s: must not be negative (%" G_GINT64_FORMAT ")", f_rep, replicas);
    else if (replicas == 0 && job->api == KB_TF_API_V1ALPHA1)
        invalid(job, "%s: must be greater than 0", f_rep);
    rs->replicas = (gint32)MAX(replicas, 0);
    g_clear_pointer(&rs->template_, json_object_put); /* a type given twice: the last wins */
    rs->has_tf_container = FALSE;
    rs->template_ = tmpl != NULL ? json_object_get(tmpl) : json_object_new_object();
    if (!decode_template(job, rs, field, &port, error))
        return FALSE;
    if (has_tfport)
        port = tfport;
    if (port < 1 || port > 65535)
        invalid(job, "%s: port %" G_GINT64_FORMAT " out of range 1-65535",
                has_tfport ? f_port : field, port);
    rs->port = (gint32)CLAMP(port, 1, 65535);

    if (job->api == KB_TF_API_V1ALPHA1) {
        /* The seed's table decides for every v1alpha1 replica: ExitCode semantics. */
        rs->restart_policy = KB_TF_RESTART_EXIT_CODE;
    } else if (rp == NULL || *rp == '\0') {
        rs->restart_policy = KB_TF_RESTART_NEVER; /* the v1 default */
    } else if (!parse_restart_policy(rp, &rs->restart_policy)) {
        invalid(job, "%s: unknown restart policy \"%s\" (Always, OnFailure, Never, ExitCode)", f_rp,
                rp);
    }
    /* A v1alpha1 PS without one gets the standard gRPC server container. */
    gboolean needs_tf = !(job->api == KB_TF_API_V1ALPHA1 && type == KB_TF_PS);
    if (needs_tf && !rs->has_tf_container)
        invalid(job, "%s.template.spec.containers: no container named \"%s\"", field,
                KB_TF_DEFAULT_CONTAINER);
    return TRUE;
}

static gboolean decode_v1_specs(KbTfJob *job, json_object *specs, GError **error)
{
    if (json_object_object_length(specs) > KB_TF_MAX_REPLICA_SPECS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "spec.tfReplicaSpecs: %d entries, more than %d",
                    json_object_object_length(specs), KB_TF_MAX_REPLICA_SPECS);
        return FALSE;
    }
    json_object_object_foreach(specs, key, val)
    {
        g_autofree char *field = g_strdup_printf("spec.tfReplicaSpecs.%s", key);
        KbTfReplicaType type;
        if (!kb_tf_replica_type_parse(key, &type)) {
            invalid(job, "%s: unknown replica type \"%s\" (Chief, Master, Worker, PS, Evaluator)",
                    field, key);
            continue;
        }
        if (!decode_replica_spec(job, val, type, field, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean decode_v1alpha1_specs(KbTfJob *job, json_object *list, GError **error)
{
    size_t n = json_object_array_length(list);
    if (n > KB_TF_MAX_REPLICA_SPECS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "spec.replicaSpecs: %zu entries, more than %d",
                    n, KB_TF_MAX_REPLICA_SPECS);
        return FALSE;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(list, i);
        g_autofree char *field = g_strdup_printf("spec.replicaSpecs[%zu]", i);
        g_autofree char *f_type = g_strdup_printf("%s.tfReplicaType", field);
        const char *t = NULL;
        KbTfReplicaType type = KB_TF_MASTER; /* the v1alpha1 default */
        if (json_object_get_type(o) == json_type_object &&
            !member_string(o, "tfReplicaType", f_type, &t, error))
            return FALSE;
        if (t != NULL && *t != '\0' &&
            (!kb_tf_replica_type_parse(t, &type) ||
             (type != KB_TF_MASTER && type != KB_TF_WORKER && type != KB_TF_PS))) {
            invalid(job, "%s: unknown replica type \"%s\" (MASTER, WORKER, PS)", f_type, t);
            continue;
        }
        if (!decode_replica_spec(job, o, type, field, error))
            return FALSE;
    }
    return TRUE;
}

/* ---- run policy and annotations ---------------------------------------------------------------
 */

static gboolean decode_run_policy(KbTfJob *job, json_object *rp, const char *field, GError **error)
{
    g_autofree char *f_clean = g_strdup_printf("%s.cleanPodPolicy", field);
    g_autofree char *f_ttl = g_strdup_printf("%s.ttlSecondsAfterFinished", field);
    g_autofree char *f_ads = g_strdup_printf("%s.activeDeadlineSeconds", field);
    g_autofree char *f_bl = g_strdup_printf("%s.backoffLimit", field);
    g_autofree char *f_sp = g_strdup_printf("%s.schedulingPolicy", field);
    const char *clean = NULL, *queue = NULL, *prio = NULL;
    gint64 v = 0, min_av = 0;
    gboolean has = FALSE, has_min = FALSE;
    json_object *sp;

    if (!member_string(rp, "cleanPodPolicy", f_clean, &clean, error))
        return FALSE;
    if (clean != NULL && strcmp(clean, "All") == 0)
        job->clean_pod_policy = KB_TF_CLEAN_ALL;
    else if (clean != NULL && strcmp(clean, "Running") == 0)
        job->clean_pod_policy = KB_TF_CLEAN_RUNNING;
    else if (clean != NULL && strcmp(clean, "None") == 0)
        job->clean_pod_policy = KB_TF_CLEAN_NONE;
    else if (clean != NULL && *clean != '\0')
        invalid(job, "%s: unknown policy \"%s\" (All, Running, None)", f_clean, clean);

    if (!member_int(rp, "ttlSecondsAfterFinished", f_ttl, &v, &has, error))
        return FALSE;
    if (has && v < 0)
        invalid(job, "%s: must not be negative (%" G_GINT64_FORMAT ")", f_ttl, v);
    if (has)
        job->ttl_seconds_after_finished = MAX(v, 0);
    if (!member_int(rp, "activeDeadlineSeconds", f_ads, &v, &has, error))
        return FALSE;
    if (has && v <= 0)
        invalid(job, "%s: must be positive (%" G_GINT64_FORMAT ")", f_ads, v);
    if (has)
        job->active_deadline_seconds = MAX(v, 1);
    if (!member_int(rp, "backoffLimit", f_bl, &v, &has, error))
        return FALSE;
    if (has && (v < 0 || v > G_MAXINT32))
        invalid(job, "%s: out of range (%" G_GINT64_FORMAT ")", f_bl, v);
    if (has)
        job->backoff_limit = (gint32)CLAMP(v, 0, G_MAXINT32);

    if (!member(rp, "schedulingPolicy", json_type_object, f_sp, &sp, error))
        return FALSE;
    g_autofree char *f_min = g_strdup_printf("%s.minAvailable", f_sp);
    g_autofree char *f_q = g_strdup_printf("%s.queue", f_sp);
    g_autofree char *f_pc = g_strdup_printf("%s.priorityClass", f_sp);
    if (!member_int(sp, "minAvailable", f_min, &min_av, &has_min, error) ||
        !member_string(sp, "queue", f_q, &queue, error) ||
        !member_string(sp, "priorityClass", f_pc, &prio, error))
        return FALSE;
    if (has_min && (min_av < 0 || min_av > KB_TF_MAX_REPLICAS * KB_TF_N_TYPES))
        invalid(job, "%s: out of range (%" G_GINT64_FORMAT ")", f_min, min_av);
    else if (has_min)
        job->min_available = (gint32)min_av;
    if (queue != NULL && *queue != '\0')
        job->queue = g_intern_string(queue);
    if (prio != NULL && *prio != '\0')
        job->priority_class = g_intern_string(prio);
    return TRUE;
}

static gboolean parse_annotation_int(KbTfJob *job, const char *key, gint64 *out)
{
    const char *s = g_hash_table_lookup(job->meta.annotations, key);
    if (s == NULL)
        return FALSE;
    char *end = NULL;
    errno = 0;
    gint64 v = g_ascii_strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > KB_TF_MAX_REPLICAS) {
        invalid(job, "metadata.annotations[\"%s\"]: \"%s\" is not a number between 0 and %d", key,
                s, KB_TF_MAX_REPLICAS);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static gboolean decode_annotations(KbTfJob *job, GError **error)
{
    const char *s = g_hash_table_lookup(job->meta.annotations, KB_TF_ANNOTATION_RETRYABLE_CODES);
    if (s != NULL) {
        g_auto(GStrv) parts = g_strsplit(s, ",", -1);
        if (g_strv_length(parts) > KB_TF_MAX_RETRYABLE_CODES) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                        "metadata.annotations[\"%s\"]: %u codes, more than %d",
                        KB_TF_ANNOTATION_RETRYABLE_CODES, g_strv_length(parts),
                        KB_TF_MAX_RETRYABLE_CODES);
            return FALSE;
        }
        for (guint i = 0; parts[i] != NULL; i++) {
            char *p = g_strstrip(parts[i]), *end = NULL;
            gint64 code = g_ascii_strtoll(p, &end, 10);
            if (*p == '\0' || end == p || *end != '\0' || code < 0 || code > 255) {
                invalid(job, "metadata.annotations[\"%s\"]: \"%s\" is not an exit code (0-255)",
                        KB_TF_ANNOTATION_RETRYABLE_CODES, p);
                continue;
            }
            job->retryable_codes[job->n_retryable_codes++] = (gint)code;
        }
    }
    const char *q = g_hash_table_lookup(job->meta.annotations, KB_TF_ANNOTATION_QUEUE);
    if (job->queue == NULL && q != NULL && *q != '\0')
        job->queue = g_intern_string(q);
    const char *pc = g_hash_table_lookup(job->meta.annotations, KB_TF_ANNOTATION_PRIORITY_CLASS);
    if (job->priority_class == NULL && pc != NULL && *pc != '\0')
        job->priority_class = g_intern_string(pc);
    return TRUE;
}

/* ---- status -----------------------------------------------------------------------------------
 */

static void decode_time(json_object *o, const char *key, gint64 *out)
{
    json_object *v;
    if (json_object_object_get_ex(o, key, &v) && json_object_get_type(v) == json_type_string)
        kb_time_parse(json_object_get_string(v), out);
}

static const char *string_member(json_object *o, const char *key)
{
    json_object *v;
    if (o != NULL && json_object_object_get_ex(o, key, &v) &&
        json_object_get_type(v) == json_type_string)
        return json_object_get_string(v);
    return NULL;
}

static void set_alpha_condition(KbTfJob *job, KbTfConditionType type, guint seq,
                                const char *message)
{
    KbTfCondition *c = &job->status.conditions[type];
    static const char *const reasons[KB_TF_N_CONDS] = {[KB_TF_COND_CREATED] = "TFJobCreated",
                                                       [KB_TF_COND_RUNNING] = "TFJobRunning",
                                                       [KB_TF_COND_RESTARTING] = "TFJobRestarting",
                                                       [KB_TF_COND_SUCCEEDED] = "TFJobSucceeded",
                                                       [KB_TF_COND_FAILED] = "TFJobFailed"};
    c->present = TRUE;
    c->status = TRUE;
    c->seq = seq;
    c->reason = g_strdup(reasons[type]);
    c->message = g_strdup(message);
}

/*
 * The seed's v1alpha1 status has no conditions (`conditions: null`): rebuild what the planner
 * needs from phase, state, reason and the MASTER's replica state, so that a restarted operator
 * neither repeats events nor forgets that the job ended.
 */
static void alpha_conditions(KbTfJob *job, json_object *status)
{
    const char *phase = string_member(status, "phase");
    const char *state = string_member(status, "state");
    json_object *rs;
    if (phase == NULL)
        return;
    set_alpha_condition(job, KB_TF_COND_CREATED, 1, NULL);
    if (g_strcmp0(state, "Succeeded") == 0)
        set_alpha_condition(job, KB_TF_COND_SUCCEEDED, 3, NULL);
    else if (g_strcmp0(state, "Failed") == 0)
        set_alpha_condition(job, KB_TF_COND_FAILED, 3, string_member(status, "reason"));
    if (!json_object_object_get_ex(status, "replicaStatuses", &rs) ||
        json_object_get_type(rs) != json_type_array)
        return;
    for (size_t i = 0; i < json_object_array_length(rs) && i < KB_TF_MAX_REPLICA_SPECS; i++) {
        json_object *r = json_object_array_get_idx(rs, i);
        if (g_strcmp0(string_member(r, "tf_replica_type"), "MASTER") == 0 &&
            g_strcmp0(string_member(r, "state"), "Running") == 0 &&
            g_strcmp0(state, "Running") == 0)
            set_alpha_condition(job, KB_TF_COND_RUNNING, 2, NULL);
    }
}

/* The status is our own output: tolerate anything, never fail the decode over it. */
static void decode_status(KbTfJob *job, json_object *status)
{
    json_object *conds, *v;
    if (status == NULL || json_object_get_type(status) != json_type_object)
        return;
    job->status.raw = json_object_get(status);
    decode_time(status, "startTime", &job->status.start_time);
    decode_time(status, "completionTime", &job->status.completion_time);
    if (json_object_object_get_ex(status, "restartCount", &v) &&
        json_object_get_type(v) == json_type_int)
        job->status.restart_count = CLAMP(json_object_get_int(v), 0, G_MAXINT32);
    if (json_object_object_get_ex(status, "autoscaling", &v) &&
        json_object_get_type(v) == json_type_object) {
        json_object *w;
        if (json_object_object_get_ex(v, "workers", &w) && json_object_get_type(w) == json_type_int)
            job->status.workers = CLAMP(json_object_get_int(w), 0, KB_TF_MAX_REPLICAS);
    }
    if (!json_object_object_get_ex(status, "conditions", &conds) ||
        json_object_get_type(conds) != json_type_array) {
        if (job->api == KB_TF_API_V1ALPHA1)
            alpha_conditions(job, status);
        return;
    }
    for (size_t i = 0; i < json_object_array_length(conds) && i < 64; i++) {
        json_object *c = json_object_array_get_idx(conds, i), *t, *s, *r, *m;
        if (json_object_get_type(c) != json_type_object ||
            !json_object_object_get_ex(c, "type", &t))
            continue;
        for (int k = 0; k < KB_TF_N_CONDS; k++) {
            if (g_strcmp0(json_object_get_string(t), cond_names[k]) != 0)
                continue;
            KbTfCondition *cond = &job->status.conditions[k];
            g_clear_pointer(&cond->reason, g_free);
            g_clear_pointer(&cond->message, g_free);
            cond->present = TRUE;
            cond->seq = (guint)i + 1;
            cond->status = json_object_object_get_ex(c, "status", &s) &&
                           g_strcmp0(json_object_get_string(s), "True") == 0;
            if (json_object_object_get_ex(c, "reason", &r) &&
                json_object_get_type(r) == json_type_string)
                cond->reason = g_strdup(json_object_get_string(r));
            if (json_object_object_get_ex(c, "message", &m) &&
                json_object_get_type(m) == json_type_string)
                cond->message = g_strdup(json_object_get_string(m));
            decode_time(c, "lastUpdateTime", &cond->last_update);
            decode_time(c, "lastTransitionTime", &cond->last_transition);
        }
    }
}

/* ---- whole-job checks ------------------------------------------------------------------------ */

static void validate_job(KbTfJob *job)
{
    gboolean any = FALSE;
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        any |= job->specs[t].present;
    const char *specs_field =
            job->api != KB_TF_API_V1ALPHA1 ? "spec.tfReplicaSpecs" : "spec.replicaSpecs";
    if (!any)
        invalid(job, "%s: no replica specs", specs_field);
    if (job->specs[KB_TF_CHIEF].present && job->specs[KB_TF_MASTER].present)
        invalid(job, "%s: both Chief and Master given; a job has one chief", specs_field);
    for (int t = KB_TF_CHIEF; t <= KB_TF_MASTER; t++) {
        if (job->specs[t].present && job->specs[t].replicas > 1)
            invalid(job, "%s.%s.replicas: %d masters/chiefs, a job has exactly one", specs_field,
                    kb_tf_replica_type_to_string(t), job->specs[t].replicas);
    }
    if (job->api == KB_TF_API_V1ALPHA1 && any && !job->specs[KB_TF_MASTER].present)
        invalid(job, "spec.replicaSpecs: no MASTER; a job must have one and only one master");

    /* Generated names are DNS labels: the longest is "{job}-evaluator-{index}". */
    if (job->api != KB_TF_API_V1ALPHA1) {
        for (int t = 0; t < KB_TF_N_TYPES; t++) {
            if (!job->specs[t].present)
                continue;
            g_autofree char *longest =
                    g_strdup_printf("%s-%s-%d", job->meta.name, kb_tf_replica_type_to_lower(t),
                                    MAX(job->specs[t].replicas - 1, 0));
            if (strlen(longest) > 63)
                invalid(job,
                        "metadata.name: \"%s\" makes pod name \"%s\" longer than 63 "
                        "characters",
                        job->meta.name, longest);
        }
    }
    if (job->dynamic_workers) {
        gint64 min = job->specs[KB_TF_WORKER].replicas, max = min;
        parse_annotation_int(job, KB_TF_ANNOTATION_MIN_WORKERS, &min);
        parse_annotation_int(job, KB_TF_ANNOTATION_MAX_WORKERS, &max);
        if (!job->specs[KB_TF_WORKER].present)
            invalid(job, "spec.enableDynamicWorker: the job has no Worker replicas");
        else if (min < 1 || max < min)
            invalid(job,
                    "metadata.annotations: %s=%" G_GINT64_FORMAT " and %s=%" G_GINT64_FORMAT
                    " do not make 1 <= min <= max",
                    KB_TF_ANNOTATION_MIN_WORKERS, min, KB_TF_ANNOTATION_MAX_WORKERS, max);
        job->min_workers = (gint32)CLAMP(min, 1, KB_TF_MAX_REPLICAS);
        job->max_workers = (gint32)CLAMP(max, job->min_workers, KB_TF_MAX_REPLICAS);
    }
}

/* ---- decode ---------------------------------------------------------------------------------- */

static gboolean decode_spec(KbTfJob *job, json_object *spec, GError **error)
{
    json_object *v1specs, *alpha_specs, *rp;
    const char *runtime_id = NULL, *image = NULL, *sched = NULL, *success = NULL;
    json_object *dyn;

    if (!member(spec, "tfReplicaSpecs", json_type_object, "spec.tfReplicaSpecs", &v1specs, error) ||
        !member(spec, "replicaSpecs", json_type_array, "spec.replicaSpecs", &alpha_specs, error))
        return FALSE;
    /* A list is v1alpha1 whatever apiVersion says; otherwise apiVersion tells v1 from the
     * betas (and breaks the tie for an empty spec). */
    json_object *av;
    KbTfApi named = KB_TF_API_V1;
    if (job->meta.raw != NULL && json_object_object_get_ex(job->meta.raw, "apiVersion", &av))
        kb_tf_api_parse(json_object_get_string(av), &named);
    if (alpha_specs != NULL && v1specs == NULL)
        job->api = KB_TF_API_V1ALPHA1;
    else if (v1specs != NULL && named == KB_TF_API_V1ALPHA1)
        job->api = KB_TF_API_V1;
    else
        job->api = named;
    gboolean beta = job->api == KB_TF_API_V1BETA1 || job->api == KB_TF_API_V1BETA2;
    /* Without cleanPodPolicy: v1alpha1 deletes every pod (the seed's CleanUp phase); v1beta1 and
     * v1beta2 delete those still running (tf-operator 0.4/0.5's default); v1 keeps them all, as
     * Kubeflow's training-operator defaults to None since v1.7, so that PS pods still running
     * when the chief or worker 0 succeeds are not killed. */
    job->clean_pod_policy = job->api == KB_TF_API_V1ALPHA1 ? KB_TF_CLEAN_ALL
                            : beta                         ? KB_TF_CLEAN_RUNNING
                                                           : KB_TF_CLEAN_NONE;

    if (!member_string(spec, "RuntimeId", "spec.RuntimeId", &runtime_id, error) ||
        !member_string(spec, "tfImage", "spec.tfImage", &image, error) ||
        !member_string(spec, "schedulerName", "spec.schedulerName", &sched, error) ||
        !member_string(spec, "successPolicy", "spec.successPolicy", &success, error) ||
        !member(spec, "enableDynamicWorker", json_type_boolean, "spec.enableDynamicWorker", &dyn,
                error) ||
        !member(spec, "runPolicy", json_type_object, "spec.runPolicy", &rp, error))
        return FALSE;
    if (runtime_id != NULL && strlen(runtime_id) > KB_TF_MAX_RUNTIME_ID_LEN) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "spec.RuntimeId: %zu characters, more than %d",
                    strlen(runtime_id), KB_TF_MAX_RUNTIME_ID_LEN);
        return FALSE;
    }
    if (runtime_id != NULL && *runtime_id != '\0')
        job->runtime_id = g_ascii_strdown(runtime_id, -1);
    job->tf_image = g_strdup(image != NULL && *image != '\0' ? image : KB_TF_DEFAULT_IMAGE);
    if (sched != NULL && *sched != '\0')
        job->scheduler_name = g_intern_string(sched);
    if (beta)
        success = NULL; /* successPolicy came with v1: an unknown field in the betas */
    if (success != NULL && strcmp(success, "AllWorkers") == 0)
        job->success_all_workers = TRUE;
    else if (success != NULL && *success != '\0')
        invalid(job, "spec.successPolicy: unknown policy \"%s\" (\"\", AllWorkers)", success);
    job->dynamic_workers = dyn != NULL && json_object_get_boolean(dyn);

    /* Older v1 objects carry the run policy fields directly in spec. */
    if (!decode_run_policy(job, spec, "spec", error))
        return FALSE;
    if (rp != NULL && !beta && !decode_run_policy(job, rp, "spec.runPolicy", error))
        return FALSE;

    if (job->api == KB_TF_API_V1ALPHA1)
        return alpha_specs == NULL || decode_v1alpha1_specs(job, alpha_specs, error);
    return v1specs == NULL || decode_v1_specs(job, v1specs, error);
}

static KbTfJob *tfjob_new(void)
{
    KbTfJob *job = g_new0(KbTfJob, 1);
    job->ttl_seconds_after_finished = -1;
    job->backoff_limit = -1;
    job->active_deadline_seconds = -1;
    return job;
}

KbTfJob *kb_tfjob_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbTfJob) job = tfjob_new();
    json_object *spec, *status;

    if (obj == NULL || json_object_get_type(obj) != json_type_object) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "tfjob: expected an object");
        return NULL;
    }
    /* meta.raw is needed while decoding (apiVersion); dropped below unless asked to keep it. */
    if (!kb_meta_decode(obj, KB_KIND_TFJOB, TRUE, &job->meta, error)) {
        g_prefix_error(error, "tfjob: ");
        return NULL;
    }
    if (job->meta.name == NULL || *job->meta.name == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "tfjob: metadata.name: missing");
        return NULL;
    }
    if (!member(obj, "spec", json_type_object, "spec", &spec, error) ||
        !decode_spec(job, spec, error) || !decode_annotations(job, error)) {
        g_prefix_error(error, "tfjob %s/%s: ", job->meta.namespace_ ? job->meta.namespace_ : "",
                       job->meta.name);
        return NULL;
    }
    validate_job(job);
    if (job->invalid != NULL) {
        char *msg =
                g_strdup_printf("tfjob %s/%s: %s", job->meta.namespace_ ? job->meta.namespace_ : "",
                                job->meta.name, job->invalid);
        g_free(job->invalid);
        job->invalid = msg;
    }
    if (json_object_object_get_ex(obj, "status", &status))
        decode_status(job, status);
    if (!keep_raw)
        g_clear_pointer(&job->meta.raw, json_object_put);
    return g_steal_pointer(&job);
}

void kb_tfjob_free(KbTfJob *job)
{
    if (job == NULL)
        return;
    kb_meta_clear(&job->meta);
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        g_clear_pointer(&job->specs[t].template_, json_object_put);
    for (int c = 0; c < KB_TF_N_CONDS; c++) {
        g_free(job->status.conditions[c].reason);
        g_free(job->status.conditions[c].message);
    }
    g_clear_pointer(&job->status.raw, json_object_put);
    g_free(job->runtime_id);
    g_free(job->tf_image);
    g_free(job->invalid);
    g_free(job);
}

gboolean kb_tfjob_validate(const KbTfJob *job, GError **error)
{
    if (job->invalid == NULL)
        return TRUE;
    g_set_error_literal(error, KB_ERROR, KB_ERROR_INVALID, job->invalid);
    return FALSE;
}

gint32 kb_tfjob_effective_replicas(const KbTfJob *job, KbTfReplicaType type)
{
    if (type >= KB_TF_N_TYPES || !job->specs[type].present)
        return 0;
    if (type == KB_TF_WORKER && job->dynamic_workers) {
        gint32 w = job->status.workers > 0 ? job->status.workers : job->specs[type].replicas;
        return CLAMP(w, job->min_workers, job->max_workers);
    }
    return job->specs[type].replicas;
}

gboolean kb_tfjob_has_chief(const KbTfJob *job)
{
    return job->specs[KB_TF_CHIEF].present || job->specs[KB_TF_MASTER].present;
}

gboolean kb_tfjob_code_is_user_retryable(const KbTfJob *job, int code)
{
    for (guint i = 0; i < job->n_retryable_codes; i++)
        if (job->retryable_codes[i] == code)
            return TRUE;
    return FALSE;
}

gboolean kb_tfjob_is_finished(const KbTfJob *job)
{
    const KbTfCondition *s = &job->status.conditions[KB_TF_COND_SUCCEEDED];
    const KbTfCondition *f = &job->status.conditions[KB_TF_COND_FAILED];
    return (s->present && s->status) || (f->present && f->status);
}
