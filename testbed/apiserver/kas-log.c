/* Pod logs of the in-memory API server (see kas-log.h). */
#include "testbed/apiserver/kas-log.h"

#include <math.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"

#define SIM_RUN_SECONDS  "sim.kube-batchd.io/run-seconds"
#define GPU_IDS          "kube-batchd.io/gpu-ids"
#define STEPS_PER_SECOND 100
#define FOLLOW_POLL_US   (200 * 1000)

/* One run of a container: what its log is made of. */
typedef struct {
    char *container;
    char *image;
    char *node;
    char *gpu_ids; /* may be NULL */
    char *task;    /* "worker 0; cluster ps=2 worker=4", or NULL without TF_CONFIG */
    char *role;    /* replica type label, may be NULL */
    char *started; /* startedAt as written, identifies the run */
    gint64 start;  /* unix seconds */
    gint64 end;    /* finishedAt, 0 while running */
    int exit_code;
    gint64 total_steps; /* from sim.kube-batchd.io/run-seconds, 0 when unknown */
    guint32 seed;
} Run;

static void run_clear(Run *r)
{
    g_free(r->container);
    g_free(r->image);
    g_free(r->node);
    g_free(r->gpu_ids);
    g_free(r->task);
    g_free(r->role);
    g_free(r->started);
    memset(r, 0, sizeof *r);
}

static const char *member(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* "worker 0; cluster ps=2 worker=4" from a TF_CONFIG value, NULL when it does not parse. */
static char *tf_task(const char *tf_config)
{
    json_object *j = tf_config != NULL ? kas_json_parse(tf_config, strlen(tf_config), NULL) : NULL;
    if (j == NULL)
        return NULL;
    GString *s = g_string_new(NULL);
    const char *type = kas_json_get_string(j, "task.type");
    json_object *index = kas_json_get(j, "task.index");
    g_string_append_printf(s, "task %s %d; cluster", type != NULL ? type : "?",
                           index != NULL ? json_object_get_int(index) : 0);
    json_object *cluster = kas_json_get(j, "cluster");
    if (cluster == NULL)
        cluster = kas_json_get(j, "sparseCluster");
    if (json_object_is_type(cluster, json_type_object)) {
        json_object_object_foreach(cluster, role, hosts)
        {
            size_t n = json_object_is_type(hosts, json_type_array) ? json_object_array_length(hosts)
                       : json_object_is_type(hosts, json_type_object)
                               ? (size_t)json_object_object_length(hosts)
                               : 0;
            g_string_append_printf(s, " %s=%zu", role, n);
        }
    }
    json_object_put(j);
    return g_string_free(s, FALSE);
}

static json_object *find_named(json_object *arr, const char *name)
{
    for (size_t i = 0;
         json_object_is_type(arr, json_type_array) && i < json_object_array_length(arr); i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(arr, i), "name"), name) == 0)
            return json_object_array_get_idx(arr, i);
    return NULL;
}

/* Fill @r from the pod for its container @c; FALSE with the kubelet's error when the container
 * has no run to show. */
static gboolean run_from_pod(json_object *pod, const char *pod_name, const char *c,
                             gboolean previous, Run *r, GError **error)
{
    json_object *cs = find_named(kas_json_get(pod, "status.containerStatuses"), c);
    json_object *state = kas_json_get(cs, previous ? "lastState" : "state");
    json_object *running = kas_json_get(state, "running");
    json_object *term = kas_json_get(state, "terminated");
    if (previous && term == NULL) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "previous terminated container \"%s\" in pod \"%s\" not found", c, pod_name);
        return FALSE;
    }
    if (running == NULL && term == NULL) {
        const char *reason = kas_json_get_string(state, "waiting.reason");
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "container \"%s\" in pod \"%s\" is waiting to start: %s", c, pod_name,
                    reason != NULL ? reason : "ContainerCreating");
        return FALSE;
    }
    json_object *at = running != NULL ? running : term;
    const char *started = kas_json_get_string(at, "startedAt");
    json_object *spec = find_named(kas_json_get(pod, "spec.containers"), c);
    json_object *env = find_named(kas_json_get(spec, "env"), "TF_CONFIG");
    json_object *ann = kas_json_get(pod, "metadata.annotations");
    json_object *labels = kas_json_get(pod, "metadata.labels");
    r->container = g_strdup(c);
    r->image = g_strdup(kas_json_get_string(spec, "image"));
    r->node = g_strdup(kas_json_get_string(pod, "spec.nodeName"));
    r->gpu_ids = g_strdup(member(ann, GPU_IDS));
    r->task = tf_task(kas_json_get_string(env, "value"));
    r->role = g_strdup(member(labels, "training.kubeflow.org/replica-type"));
    r->started = g_strdup(started != NULL ? started : "");
    r->start = started != NULL ? kas_time_parse(started) : -1;
    if (r->start < 0)
        r->start = g_get_real_time() / G_USEC_PER_SEC;
    if (term != NULL) {
        const char *fin = kas_json_get_string(term, "finishedAt");
        r->end = fin != NULL ? kas_time_parse(fin) : r->start;
        r->end = MAX(r->end, r->start);
        r->exit_code = json_object_get_int(kas_json_get(term, "exitCode"));
    }
    r->seed = g_str_hash(pod_name) ^ g_str_hash(r->started);
    const char *run = member(ann, SIM_RUN_SECONDS);
    r->total_steps = run != NULL ? (gint64)(g_ascii_strtod(run, NULL) * STEPS_PER_SECOND) : 0;
    return TRUE;
}

/* Lines of a run at @now: start, TF_CONFIG, one step per second, and two final lines once it
 * ended. */
static guint64 run_lines(const Run *r, gint64 now)
{
    gint64 end = r->end > 0 ? r->end : now;
    gint64 steps = MAX(end - r->start, 0);
    return 2 + (guint64)steps + (r->end > 0 ? 2 : 0);
}

static double loss_at(const Run *r, gint64 k)
{
    double noise = sin((double)k * 1.7 + (double)(r->seed % 1000)) * 0.03;
    return 0.05 + 2.25 * exp(-(double)k / 60.0) * (1.0 + noise);
}

/* Append line @i of @r (newline-terminated) to @out, with its time first when @timestamps. */
static void run_line(const Run *r, guint64 i, gint64 now, gboolean timestamps, GString *out)
{
    guint64 n = run_lines(r, now);
    gint64 steps = (gint64)n - 2 - (r->end > 0 ? 2 : 0);
    gint64 t = i < 2 ? r->start : (gint64)i - 1 <= steps ? r->start + (gint64)i - 1 : r->end;
    if (timestamps) {
        g_autofree char *ts = kas_time_format(t);
        /* RFC 3339 with nanoseconds, as the kubelet writes it. */
        g_string_append_printf(out, "%.*s.000000000Z ", (int)strlen(ts) - 1, ts);
    }
    gboolean ps = g_strcmp0(r->role, "ps") == 0;
    if (i == 0) {
        g_string_append_printf(out, "kb-sim: container %s (image %s) started on node %s",
                               r->container, r->image != NULL ? r->image : "?",
                               r->node != NULL ? r->node : "?");
        if (r->gpu_ids != NULL)
            g_string_append_printf(out, ", GPUs %s (" GPU_IDS ")", r->gpu_ids);
    } else if (i == 1) {
        if (r->task != NULL)
            g_string_append_printf(out, "INFO:tensorflow:TF_CONFIG: %s", r->task);
        else
            g_string_append(out, "INFO:tensorflow:no TF_CONFIG: training in a single process");
    } else if ((gint64)i - 1 <= steps) {
        gint64 k = (gint64)i - 1;
        if (ps)
            g_string_append_printf(out,
                                   "INFO:tensorflow:parameter server: %" G_GINT64_FORMAT
                                   " variable updates served",
                                   k * STEPS_PER_SECOND);
        else
            g_string_append_printf(
                    out, "INFO:tensorflow:loss = %.5f, step = %" G_GINT64_FORMAT " (1.000 sec)",
                    loss_at(r, k), k * STEPS_PER_SECOND);
        if (r->total_steps > 0)
            g_string_append_printf(out, " [%" G_GINT64_FORMAT "%% of %" G_GINT64_FORMAT " steps]",
                                   MIN(k * STEPS_PER_SECOND * 100 / r->total_steps, 100),
                                   r->total_steps);
    } else if (i == n - 2) {
        if (r->exit_code == 0 && !ps)
            g_string_append_printf(out, "INFO:tensorflow:Loss for final step: %.5f.",
                                   loss_at(r, steps));
        else if (r->exit_code == 0)
            g_string_append(out, "INFO:tensorflow:parameter server: shutting down");
        else
            g_string_append_printf(
                    out, "ERROR:tensorflow:training stopped after %" G_GINT64_FORMAT " steps",
                    steps * STEPS_PER_SECOND);
    } else {
        g_string_append_printf(out, "kb-sim: container %s exited with code %d", r->container,
                               r->exit_code);
    }
    g_string_append_c(out, '\n');
}

/* The first line to show of @n: the last @tail (-1: all), within KAS_LOG_MAX_LINES. */
static guint64 first_line(guint64 n, gint64 tail)
{
    guint64 keep = tail >= 0 ? MIN((guint64)tail, (guint64)KAS_LOG_MAX_LINES) : KAS_LOG_MAX_LINES;
    return n > keep ? n - keep : 0;
}

/* ---- follow -------------------------------------------------------------------------------- */

typedef struct {
    KasStore *store;
    KasRes *res;
    char *ns, *name, *uid, *container, *started;
    gboolean timestamps;
    gint64 tail;
    gint64 limit_bytes; /* 0: none */
    gint64 sent;
    guint64 next;
    gboolean begun;
} Follow;

static void follow_free(gpointer p)
{
    Follow *f = p;
    g_free(f->ns);
    g_free(f->name);
    g_free(f->uid);
    g_free(f->container);
    g_free(f->started);
    g_free(f);
}

/* The pod as JSON (new reference) when it is still the pod the stream started on. */
static json_object *follow_pod(Follow *f)
{
    json_object *pod = NULL;
    kas_store_lock(f->store);
    KasObj *obj = kas_store_get_locked(f->store, f->res, f->ns, f->name);
    if (obj != NULL && g_strcmp0(obj->uid, f->uid) == 0)
        pod = kas_obj_parse(obj);
    kas_store_unlock(f->store);
    return pod;
}

/* KasReply.text_stream: new lines into @out; FALSE once the log has ended. */
static gboolean follow_next(gpointer data, GString *out, gint64 wake_us)
{
    Follow *f = data;
    json_object *pod = follow_pod(f);
    Run r = {0};
    gboolean ok = pod != NULL && run_from_pod(pod, f->name, f->container, FALSE, &r, NULL) &&
                  (!f->begun || strcmp(r.started, f->started) == 0);
    json_object_put(pod);
    if (!ok) {
        run_clear(&r);
        return FALSE; /* gone, or the container restarted: the kubelet ends the stream */
    }
    gint64 now = g_get_real_time() / G_USEC_PER_SEC;
    guint64 n = run_lines(&r, now);
    if (!f->begun) {
        f->begun = TRUE;
        f->started = g_strdup(r.started);
        f->next = first_line(n, f->tail);
    }
    gsize before = out->len;
    for (; f->next < n; f->next++)
        run_line(&r, f->next, now, f->timestamps, out);
    f->sent += (gint64)(out->len - before);
    gboolean ended = r.end > 0 && f->next >= n;
    run_clear(&r);
    if (f->limit_bytes > 0 && f->sent >= f->limit_bytes) {
        g_string_truncate(out, out->len - (gsize)(f->sent - f->limit_bytes));
        return out->len > before;
    }
    if (out->len == before && !ended) {
        gint64 left = wake_us - g_get_monotonic_time();
        g_usleep((gulong)CLAMP(left, 1000, FOLLOW_POLL_US));
    }
    return !ended || out->len > before;
}

/* ---- the request --------------------------------------------------------------------------- */

static const char *q(const KasRequest *req, const char *key)
{
    return req->query != NULL ? g_hash_table_lookup(req->query, key) : NULL;
}

static gboolean q_true(const KasRequest *req, const char *key)
{
    const char *v = q(req, key);
    return v != NULL && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* 422 as kube-apiserver words it for PodLogOptions: kind PodLogOptions, one cause naming the
 * field, so that kubectl prints "The PodLogOptions \"p\" is invalid: tailLines: ...". */
static void reply_invalid(KasReply *reply, const char *pod, const char *field, gint64 value,
                          const char *detail)
{
    g_autofree char *what =
            g_strdup_printf("Invalid value: %" G_GINT64_FORMAT ": %s", value, detail);
    g_autofree char *msg =
            g_strdup_printf("PodLogOptions \"%s\" is invalid: %s: %s", pod, field, what);
    kas_reply_error(reply, KAS_ERR_INVALID, msg, NULL, pod);
    json_object *st = kas_json_parse(reply->body->str, reply->body->len, NULL);
    json_object *details = kas_json_get(st, "details");
    if (details == NULL) {
        details = json_object_new_object();
        json_object_object_add(st, "details", details);
    }
    kas_json_set_string(details, "kind", "PodLogOptions");
    json_object *causes = json_object_new_array();
    json_object *cause = json_object_new_object();
    kas_json_set_string(cause, "reason", "FieldValueInvalid");
    kas_json_set_string(cause, "message", what);
    kas_json_set_string(cause, "field", field);
    json_object_array_add(causes, cause);
    json_object_object_add(details, "causes", causes);
    g_autofree char *text = kas_json_dump(st);
    g_string_assign(reply->body, text);
    json_object_put(st);
}

/* tailLines and limitBytes; -1 when absent. FALSE with the reply filled in. */
static gboolean parse_int_param(const KasRequest *req, const char *key, const char *pod,
                                gint64 *out, KasReply *reply)
{
    const char *v = q(req, key);
    *out = -1;
    if (v == NULL)
        return TRUE;
    if (!g_ascii_string_to_signed(v, 10, G_MININT64, G_MAXINT64, out, NULL)) {
        g_autofree char *msg = g_strdup_printf("couldn't decode query parameter %s: "
                                               "strconv.ParseInt: parsing \"%s\": invalid syntax",
                                               key, v);
        kas_reply_error(reply, KAS_ERR_BAD_REQUEST, msg, NULL, NULL);
        return FALSE;
    }
    if (*out < 0 || (*out == 0 && strcmp(key, "limitBytes") == 0)) {
        reply_invalid(reply, pod, key, *out,
                      strcmp(key, "limitBytes") == 0 ? "must be greater than 0"
                                                     : "must be greater than or equal to 0");
        return FALSE;
    }
    return TRUE;
}

/* The container to read (newly allocated), per LogLocation's rules. */
static char *pick_container(json_object *pod, const char *name, const char *asked, GError **error)
{
    json_object *cs = kas_json_get(pod, "spec.containers");
    size_t n = json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
    if (asked != NULL && *asked != '\0') {
        if (find_named(cs, asked) == NULL &&
            find_named(kas_json_get(pod, "spec.initContainers"), asked) == NULL) {
            g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                        "container %s is not valid for pod %s", asked, name);
            return NULL;
        }
        return g_strdup(asked);
    }
    if (n == 1)
        return g_strdup(kas_json_get_string(json_object_array_get_idx(cs, 0), "name"));
    if (n == 0) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "a container name must be specified for pod %s", name);
        return NULL;
    }
    g_autoptr(GString) names = g_string_new(NULL);
    for (size_t i = 0; i < n; i++)
        g_string_append_printf(names, "%s%s", i > 0 ? " " : "",
                               kas_json_get_string(json_object_array_get_idx(cs, i), "name"));
    g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                "a container name must be specified for pod %s, choose one of: [%s]", name,
                names->str);
    return NULL;
}

void kas_log_handle(KasStore *store, KasRes *res, const KasRequest *req, const char *ns,
                    const char *name, KasReply *reply)
{
    g_autoptr(GError) error = NULL;
    gint64 tail, limit;
    if (!parse_int_param(req, "tailLines", name, &tail, reply) ||
        !parse_int_param(req, "limitBytes", name, &limit, reply))
        return;
    kas_store_lock(store);
    KasObj *obj = kas_store_get_locked(store, res, ns, name);
    json_object *pod = obj != NULL ? kas_obj_parse(obj) : NULL;
    g_autofree char *uid = obj != NULL ? g_strdup(obj->uid) : NULL;
    kas_store_unlock(store);
    if (pod == NULL) {
        g_autofree char *msg = g_strdup_printf("pods \"%s\" not found", name);
        kas_reply_error(reply, KAS_ERR_NOT_FOUND, msg, res, name);
        return;
    }
    g_autofree char *container = pick_container(pod, name, q(req, "container"), &error);
    const char *node = kas_json_get_string(pod, "spec.nodeName");
    Run r = {0};
    if (container != NULL && (node == NULL || *node == '\0'))
        g_set_error(&error, KAS_ERROR, KAS_ERR_BAD_REQUEST, "pod %s does not have a host assigned",
                    name);
    gboolean ok = error == NULL &&
                  run_from_pod(pod, name, container, q_true(req, "previous"), &r, &error);
    json_object_put(pod);
    if (!ok) {
        kas_reply_gerror(reply, error, res, name);
        run_clear(&r);
        return;
    }
    reply->status = 200;
    reply->content_type = "text/plain";
    gboolean follow = q_true(req, "follow") && !q_true(req, "previous") && r.end == 0;
    if (follow) {
        Follow *f = g_new0(Follow, 1);
        f->store = store;
        f->res = res;
        f->ns = g_strdup(ns);
        f->name = g_strdup(name);
        f->uid = g_steal_pointer(&uid);
        f->container = g_strdup(container);
        f->timestamps = q_true(req, "timestamps");
        f->tail = tail;
        f->limit_bytes = MAX(limit, 0);
        reply->text_stream = follow_next;
        reply->render_data = f;
        reply->render_free = follow_free;
        reply->watch_deadline = G_MAXINT64 / 2;
        run_clear(&r);
        return;
    }
    gint64 now = g_get_real_time() / G_USEC_PER_SEC;
    guint64 n = run_lines(&r, now);
    for (guint64 i = first_line(n, tail); i < n; i++)
        run_line(&r, i, now, q_true(req, "timestamps"), reply->body);
    if (limit > 0 && (gint64)reply->body->len > limit)
        g_string_truncate(reply->body, (gsize)limit);
    run_clear(&r);
}
