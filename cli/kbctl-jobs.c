/* kbctl list, get, why, delete and top job: jobs as data scientists ask about them. */
#include <string.h>
#include <time.h>

#include "cli/kbctl-job.h"
#include "cli/kbctl-out.h"
#include "cli/kbctl-view.h"

#define DELETE_WAIT_S 60

/* The single NAME argument of @k's command. */
static const char *job_name(Kbctl *k, GError **error)
{
    guint n = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n);
    if (n != 1) {
        kbctl_usage_error(error,
                          n == 0 ? "which job? give its NAME (kbctl list shows them)"
                                 : "one job NAME expected, got %u arguments",
                          n);
        return NULL;
    }
    return pos[0];
}

static gboolean no_positional(Kbctl *k, GError **error)
{
    guint n = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n);
    if (n > 0) {
        kbctl_usage_error(error, "unexpected argument \"%s\"", pos[0]);
        return FALSE;
    }
    return TRUE;
}

static KbctlWorld *load(Kbctl *k, const char *ns, const char *job, guint what, GError **error)
{
    KbClient *c = kbctl_client(k, error);
    return c != NULL ? kbctl_world_load(c, ns, job, what, k->now, error) : NULL;
}

static char *nodes_cell(const KbctlJob *j)
{
    if (j->nodes->len == 0)
        return g_strdup("-");
    g_ptr_array_add(j->nodes, NULL);
    char *s = g_strjoinv(",", (char **)j->nodes->pdata);
    g_ptr_array_set_size(j->nodes, j->nodes->len - 1);
    return s;
}

static void print_list_json(Kbctl *k, const KbctlWorld *w, gboolean detail)
{
    g_autoptr(KbctlJson) list = json_object_new_object();
    json_object *items = json_object_new_array();
    for (guint i = 0; i < w->jobs->len; i++)
        json_object_array_add(items, kbctl_job_json(w, g_ptr_array_index(w->jobs, i), detail));
    json_object_object_add(list, "items", items);
    kbctl_print_object(k->out, k->output, list);
}

/* ---- list ---------------------------------------------------------------------------------- */

static void list_row(Kbctl *k, KbctlTable *t, const KbctlJob *j, gboolean all, gboolean wide)
{
    guint running = 0;
    for (guint i = 0; i < j->pods->len; i++)
        running += ((KbPod *)g_ptr_array_index(j->pods, i))->phase == KB_POD_RUNNING;
    g_autofree char *age = kbctl_age(kbctl_json_str(j->raw, "metadata.creationTimestamp"), k->now);
    g_autofree char *req = g_strdup_printf("%" G_GINT64_FORMAT, j->gpus_requested);
    g_autofree char *alloc = g_strdup_printf("%" G_GINT64_FORMAT, j->gpus_allocated);
    g_autofree char *nodes = nodes_cell(j);
    g_autofree char *pods = g_strdup_printf("%u/%u", running, j->pods->len);
    const char *phase = kbctl_json_str(j->group, "status.phase");
    const char *cells[12];
    guint c = 0;
    if (all)
        cells[c++] = j->tf->meta.namespace_;
    cells[c++] = j->tf->meta.name;
    guint status_col = c;
    cells[c++] = j->status;
    cells[c++] = "tfjob";
    cells[c++] = age;
    cells[c++] = req;
    cells[c++] = alloc;
    cells[c++] = j->queue;
    cells[c++] = nodes;
    if (wide) {
        cells[c++] = pods;
        cells[c++] = phase != NULL ? phase : "-";
        cells[c++] = j->tf->priority_class != NULL ? j->tf->priority_class : "-";
    }
    kbctl_table_add(t, cells);
    kbctl_table_colour(t, status_col, kbctl_status_colour(j->status));
}

gboolean kbctl_cmd_list(Kbctl *k, GError **error)
{
    if (!no_positional(k, error))
        return FALSE;
    gboolean all = kbctl_args_bool(k->args, "all-namespaces");
    const char *ns = all ? NULL : kbctl_namespace(k);
    g_autoptr(KbctlWorld) w = load(k, ns, NULL, 0, error);
    if (w == NULL)
        return FALSE;
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        print_list_json(k, w, FALSE);
        return TRUE;
    }
    if (k->output == KBCTL_OUT_NAME) {
        for (guint i = 0; i < w->jobs->len; i++)
            fprintf(k->out, "%s\n", ((KbctlJob *)g_ptr_array_index(w->jobs, i))->tf->meta.name);
        return TRUE;
    }
    if (w->jobs->len == 0) {
        if (all)
            fprintf(stderr, "No jobs found.\n");
        else
            fprintf(stderr, "No jobs found in namespace %s.\n", ns);
        return TRUE;
    }
    gboolean wide = k->output == KBCTL_OUT_WIDE;
    const char *headers[12];
    guint n = 0;
    if (all)
        headers[n++] = "NAMESPACE";
    const char *base[] = {"NAME",           "STATUS",         "TRAINER", "AGE",
                          "GPU(REQUESTED)", "GPU(ALLOCATED)", "QUEUE",   "NODE"};
    for (guint i = 0; i < G_N_ELEMENTS(base); i++)
        headers[n++] = base[i];
    if (wide) {
        headers[n++] = "PODS(RUNNING)";
        headers[n++] = "PODGROUP";
        headers[n++] = "PRIORITY";
    }
    g_autoptr(KbctlTable) t = kbctl_table_new(n, headers);
    for (guint i = 0; i < w->jobs->len; i++)
        list_row(k, t, g_ptr_array_index(w->jobs, i), all, wide);
    kbctl_table_print(t, k->out, k->colour, TRUE, 0);
    return TRUE;
}

/* ---- get ----------------------------------------------------------------------------------- */

static void print_field(Kbctl *k, const char *label, const char *value)
{
    g_autofree char *l = g_strdup_printf("%s:", label);
    fprintf(k->out, "%-14s%s\n", l, value != NULL ? value : "<none>");
}

/* Does any pod of @j hold DRA devices (the replicas table then names them). */
static gboolean job_has_devices(const KbctlWorld *w, const KbctlJob *j)
{
    for (guint i = 0; i < j->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(j->pods, i);
        if (kbctl_dra_pod_devices(w->dra, p->meta.namespace_, p->meta.name) != NULL)
            return TRUE;
    }
    return FALSE;
}

static void print_replicas(Kbctl *k, const KbctlWorld *w, const KbctlJob *j)
{
    static const char *const headers[] = {"REPLICA", "POD",      "STATUS", "NODE",   "GPUS",
                                          "GPU IDS", "RESTARTS", "AGE",    "DEVICES"};
    gboolean devices = job_has_devices(w, j);
    g_autoptr(KbctlTable) t = kbctl_table_new(G_N_ELEMENTS(headers) - (devices ? 0 : 1), headers);
    for (guint i = 0; i < j->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(j->pods, i);
        g_autofree char *replica = kbctl_pod_replica(p);
        g_autofree char *gpus = g_strdup_printf("%" G_GINT64_FORMAT, kbctl_pod_gpus(p));
        g_autofree char *restarts = g_strdup_printf("%d", kbctl_pod_restarts(p));
        g_autofree char *age =
                kbctl_age(kbctl_json_str(p->meta.raw, "metadata.creationTimestamp"), k->now);
        const char *ids = kbctl_pod_gpu_ids(p);
        const char *status = kbctl_pod_status(p);
        g_autofree char *devs =
                kbctl_dra_pod_devices_string(w->dra, p->meta.namespace_, p->meta.name);
        const char *cells[] = {replica,
                               p->meta.name,
                               status,
                               p->node_name != NULL ? p->node_name : "-",
                               gpus,
                               ids != NULL ? ids : "-",
                               restarts,
                               age,
                               devs != NULL ? devs : "-"};
        kbctl_table_add(t, cells);
        kbctl_table_colour(t, 2, kbctl_status_colour(status));
    }
    fprintf(k->out, "\nReplicas:\n");
    if (j->pods->len == 0)
        fprintf(k->out, "  (no pods yet)\n");
    else
        kbctl_table_print(t, k->out, k->colour, TRUE, 2);
}

static void print_events(Kbctl *k, json_object *events)
{
    static const char *const headers[] = {"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"};
    fprintf(k->out, "\nEvents:\n");
    if (json_object_array_length(events) == 0) {
        fprintf(k->out, "  (none)\n");
        return;
    }
    g_autoptr(KbctlTable) t = kbctl_table_new(G_N_ELEMENTS(headers), headers);
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        g_autofree char *age = kbctl_age(kbctl_json_str(e, "lastSeen"), k->now);
        gint64 count = kbctl_json_int(e, "count", 1);
        g_autofree char *seen = count > 1
                                        ? g_strdup_printf("%s (x%" G_GINT64_FORMAT ")", age, count)
                                        : g_strdup(age);
        const char *type = kbctl_json_str(e, "type");
        const char *cells[] = {seen, type, kbctl_json_str(e, "reason"), kbctl_json_str(e, "object"),
                               kbctl_json_str(e, "message")};
        kbctl_table_add(t, cells);
        kbctl_table_colour(
                t, 1, g_strcmp0(type, "Warning") == 0 ? KBCTL_COLOUR_YELLOW : KBCTL_COLOUR_NONE);
    }
    kbctl_table_print(t, k->out, k->colour, TRUE, 2);
}

static void print_waiting(Kbctl *k, const KbctlWorld *w, const KbctlJob *j)
{
    if (j->wait_reason != NULL) {
        g_autofree char *msg = g_strdup_printf("%s: %s", j->wait_reason,
                                               j->wait_message != NULL ? j->wait_message : "");
        g_autofree char *shown = kbctl_colourize(msg, KBCTL_COLOUR_YELLOW, k->colour);
        print_field(k, "Waiting", shown);
    }
    if (strcmp(j->status, "Waiting") != 0 && strcmp(j->status, "Pending") != 0)
        return;
    KbctlShort s;
    kbctl_job_short(w, j, &s);
    if (s.n_unbound == 0)
        return;
    g_autofree char *shortage = g_strdup_printf(
            "%" G_GINT64_FORMAT " GPUs for %u unplaced pods; %" G_GINT64_FORMAT
            " free in the cluster (at most %" G_GINT64_FORMAT " on one node): %u of %u pods fit, "
            "%" G_GINT64_FORMAT " GPUs short",
            s.need_gpus, s.n_unbound, s.free_total, s.free_largest, s.fit_pods, s.n_unbound,
            MAX(s.need_gpus - s.free_total, 0));
    print_field(k, "Needs", shortage);
    g_autofree char *free_gpus = kbctl_free_per_node(w, 8, NULL);
    print_field(k, "Free GPUs", free_gpus);
    g_autofree char *cap = s.queue_capability >= 0
                                   ? g_strdup_printf("%" G_GINT64_FORMAT, s.queue_capability)
                                   : g_strdup("unlimited");
    g_autofree char *des = s.queue_deserved >= 0
                                   ? g_strdup_printf("%" G_GINT64_FORMAT, s.queue_deserved)
                                   : g_strdup("unknown");
    g_autofree char *queue =
            g_strdup_printf("%s: GPUs allocated %" G_GINT64_FORMAT ", deserved %s, capability %s",
                            j->queue, s.queue_allocated, des, cap);
    print_field(k, "Queue GPUs", queue);
}

static void print_job(Kbctl *k, const KbctlWorld *w, const KbctlJob *j)
{
    g_autofree char *status = kbctl_colourize(j->status, kbctl_status_colour(j->status), k->colour);
    g_autofree char *trainer = g_strdup_printf("tfjob (%s)", kb_tf_api_version(j->tf->api));
    g_autofree char *age = kbctl_age(kbctl_json_str(j->raw, "metadata.creationTimestamp"), k->now);
    g_autofree char *ran = j->start_time > 0 ? kbctl_duration(k->now - j->start_time) : NULL;
    g_autofree char *started = ran != NULL ? g_strdup_printf("%s ago", ran) : g_strdup("-");
    g_autofree char *created = g_strdup_printf("%s ago", age);
    g_autofree char *gpus =
            g_strdup_printf("%" G_GINT64_FORMAT " requested, %" G_GINT64_FORMAT " allocated",
                            j->gpus_requested, j->gpus_allocated);
    g_autofree char *nodes = nodes_cell(j);
    g_autofree char *group =
            j->group == NULL
                    ? g_strdup(kb_tfjob_is_finished(j->tf) ? "- (removed when the job ended)"
                                                           : "(none yet)")
                    : g_strdup_printf("%s: phase %s, minMember %" G_GINT64_FORMAT,
                                      kbctl_json_str(j->group, "metadata.name"),
                                      kbctl_json_str(j->group, "status.phase") != NULL
                                              ? kbctl_json_str(j->group, "status.phase")
                                              : "(no status yet)",
                                      kbctl_group_min_member(j->group, 1));
    print_field(k, "Name", j->tf->meta.name);
    print_field(k, "Namespace", j->tf->meta.namespace_);
    print_field(k, "Status", status);
    print_field(k, "Trainer", trainer);
    print_field(k, "Created", created);
    print_field(k, "Started", started);
    print_field(k, "Queue", j->queue);
    print_field(k, "Priority", j->tf->priority_class);
    print_field(k, "GPUs", gpus);
    print_field(k, "Nodes", nodes);
    print_field(k, "PodGroup", group);
    print_waiting(k, w, j);
    print_replicas(k, w, j);
    g_autofree char *why = kbctl_job_why(w, j);
    fprintf(k->out, "\nWhy:\n  %s\n", why);
    g_autoptr(KbctlJson) events = kbctl_job_events(w, j, KBCTL_MAX_EVENTS);
    print_events(k, events);
}

#define DETAIL_LOAD                                                                                \
    (KBCTL_LOAD_ALL_PODS | KBCTL_LOAD_NODES | KBCTL_LOAD_QUEUES | KBCTL_LOAD_EVENTS |              \
     KBCTL_LOAD_DRA)

gboolean kbctl_cmd_get(Kbctl *k, GError **error)
{
    const char *name = job_name(k, error);
    if (name == NULL)
        return FALSE;
    g_autoptr(KbctlWorld) w = load(k, kbctl_namespace(k), name, DETAIL_LOAD, error);
    if (w == NULL)
        return FALSE;
    const KbctlJob *j = kbctl_world_job(w, kbctl_namespace(k), name, error);
    if (j == NULL)
        return FALSE;
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        g_autoptr(KbctlJson) o = kbctl_job_json(w, j, TRUE);
        kbctl_print_object(k->out, k->output, o);
    } else if (k->output == KBCTL_OUT_NAME) {
        fprintf(k->out, "%s\n", name);
    } else {
        print_job(k, w, j);
    }
    return TRUE;
}

gboolean kbctl_cmd_why(Kbctl *k, GError **error)
{
    const char *name = job_name(k, error);
    if (name == NULL)
        return FALSE;
    g_autoptr(KbctlWorld) w = load(k, kbctl_namespace(k), name, DETAIL_LOAD, error);
    if (w == NULL)
        return FALSE;
    const KbctlJob *j = kbctl_world_job(w, kbctl_namespace(k), name, error);
    if (j == NULL)
        return FALSE;
    g_autofree char *why = kbctl_job_why(w, j);
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        g_autoptr(KbctlJson) o = json_object_new_object();
        kbctl_json_set_str(o, "name", j->tf->meta.name);
        kbctl_json_set_str(o, "namespace", j->tf->meta.namespace_);
        kbctl_json_set_str(o, "status", j->status);
        kbctl_json_set_str(o, "reason", j->wait_reason);
        kbctl_json_set_str(o, "message", j->wait_message);
        kbctl_json_set_str(o, "why", why);
        kbctl_print_object(k->out, k->output, o);
    } else {
        fprintf(k->out, "%s\n", why);
    }
    return TRUE;
}

/* ---- delete -------------------------------------------------------------------------------- */

static gboolean wait_gone(KbClient *c, const char *ns, const char *name, GError **error)
{
    for (int i = 0; i < DELETE_WAIT_S * 5; i++) {
        GError *local = NULL;
        g_autoptr(KbctlJson) o = kb_client_get(c, &kb_type_tfjobs_v1, ns, name, &local);
        if (o == NULL && g_error_matches(local, KB_ERROR, KB_ERROR_NOT_FOUND)) {
            g_error_free(local);
            return TRUE;
        }
        if (o == NULL) {
            g_propagate_prefixed_error(error, local, "tfjob %s/%s: ", ns, name);
            return FALSE;
        }
        g_usleep(200 * 1000);
    }
    g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED, "tfjob %s/%s: still there after %d s", ns,
                name, DELETE_WAIT_S);
    return FALSE;
}

gboolean kbctl_cmd_delete(Kbctl *k, GError **error)
{
    const char *name = job_name(k, error);
    if (name == NULL)
        return FALSE;
    KbClient *c = kbctl_client(k, error);
    if (c == NULL)
        return FALSE;
    const char *ns = kbctl_namespace(k);
    KbDeleteOptions opts = {.propagation_policy = "Background"};
    GError *local = NULL;
    if (!kb_client_delete(c, &kb_type_tfjobs_v1, ns, name, &opts, &local)) {
        if (g_error_matches(local, KB_ERROR, KB_ERROR_NOT_FOUND))
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_NOT_FOUND, "tfjob %s/%s: not found", ns,
                        name);
        else
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED, "tfjob %s/%s: %s", ns, name,
                        kbctl_error_message(local));
        g_error_free(local);
        return FALSE;
    }
    if (kbctl_args_bool(k->args, "wait") && !wait_gone(c, ns, name, error))
        return FALSE;
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        g_autoptr(KbctlJson) o = json_object_new_object();
        kbctl_json_set_str(o, "name", name);
        kbctl_json_set_str(o, "namespace", ns);
        kbctl_json_set_str(o, "deleted", "tfjob.kubeflow.org");
        kbctl_print_object(k->out, k->output, o);
    } else if (k->output == KBCTL_OUT_NAME) {
        fprintf(k->out, "tfjob.kubeflow.org/%s\n", name);
    } else {
        fprintf(k->out,
                "tfjob.kubeflow.org/%s deleted (namespace %s; its pods, services and "
                "PodGroup go with it)\n",
                name, ns);
    }
    return TRUE;
}

/* ---- wait ---------------------------------------------------------------------------------- */

#define WAIT_POLL_MS 500

static const char *const job_states[] = {"Pending",    "Waiting",   "Starting", "Running",
                                         "Restarting", "Succeeded", "Failed"};

/* Is @status what `wait --for @want` waits for? Running is also met by a job that has run to
 * Succeeded (it ran; a short job may finish between two polls). */
static gboolean wait_met(const char *status, const char *want)
{
    return strcmp(status, want) == 0 ||
           (strcmp(want, "Running") == 0 && strcmp(status, "Succeeded") == 0);
}

/* Seconds from "90", "90s", "5m" or "1h"; -1 when malformed. */
static gint64 parse_timeout(const char *s)
{
    char *end = NULL;
    gint64 v = g_ascii_strtoll(s, &end, 10);
    if (end == s || v < 0 || v > 24 * 3600)
        return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        return v;
    if (strcmp(end, "m") == 0)
        return v <= 24 * 60 ? v * 60 : -1;
    if (strcmp(end, "h") == 0)
        return v <= 24 ? v * 3600 : -1;
    return -1;
}

/* One look at the job: its status (static) and, for a waiting job, why (newly allocated). */
static const char *poll_job(Kbctl *k, const char *ns, const char *name, char **why, GError **error)
{
    k->now = time(NULL);
    g_autoptr(KbctlWorld) w = load(k, ns, name, 0, error);
    if (w == NULL)
        return NULL;
    const KbctlJob *j = kbctl_world_job(w, ns, name, error);
    if (j == NULL)
        return NULL;
    g_free(*why);
    *why = j->wait_reason != NULL ? g_strdup_printf("%s: %s", j->wait_reason,
                                                    j->wait_message != NULL ? j->wait_message : "")
                                  : NULL;
    return j->status;
}

gboolean kbctl_cmd_wait(Kbctl *k, GError **error)
{
    const char *name = job_name(k, error);
    if (name == NULL)
        return FALSE;
    const char *want = kbctl_args_str(k->args, "for");
    if (want == NULL)
        want = "Running";
    gboolean known = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(job_states); i++)
        known |= strcmp(want, job_states[i]) == 0;
    if (!known) {
        kbctl_usage_error(error,
                          "--for %s: not a job status; use Pending, Waiting, Starting, "
                          "Running, Restarting, Succeeded or Failed",
                          want);
        return FALSE;
    }
    const char *t = kbctl_args_str(k->args, "timeout");
    gint64 timeout_s = t != NULL ? parse_timeout(t) : 300;
    if (timeout_s < 0) {
        kbctl_usage_error(error,
                          "--timeout: invalid value \"%s\" (seconds, or 30s, 5m, 1h; at "
                          "most 24h)",
                          t);
        return FALSE;
    }
    const char *ns = kbctl_namespace(k);
    gint64 deadline = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;
    g_autofree char *why = NULL;
    for (;;) {
        const char *status = poll_job(k, ns, name, &why, error);
        if (status == NULL)
            return FALSE;
        if (wait_met(status, want)) {
            if (k->output == KBCTL_OUT_NAME)
                fprintf(k->out, "tfjob.kubeflow.org/%s\n", name);
            else
                fprintf(k->out, "tfjob.kubeflow.org/%s %s\n", name, status);
            return TRUE;
        }
        /* A finished job never becomes anything else. */
        if (strcmp(status, "Succeeded") == 0 || strcmp(status, "Failed") == 0) {
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED,
                        "tfjob %s/%s is %s: it will not become %s", ns, name, status, want);
            return FALSE;
        }
        if (g_get_monotonic_time() >= deadline) {
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED,
                        "tfjob %s/%s: still %s after %s, not %s%s%s", ns, name, status,
                        t != NULL ? t : "300s", want, why != NULL ? "; " : "",
                        why != NULL ? why : "");
            return FALSE;
        }
        g_usleep(WAIT_POLL_MS * 1000);
    }
}

/* ---- top job ------------------------------------------------------------------------------- */

gboolean kbctl_cmd_top_job(Kbctl *k, GError **error)
{
    if (!no_positional(k, error))
        return FALSE;
    gboolean all = kbctl_args_bool(k->args, "all-namespaces");
    const char *ns = all ? NULL : kbctl_namespace(k);
    g_autoptr(KbctlWorld) w = load(k, ns, NULL, 0, error);
    if (w == NULL)
        return FALSE;
    g_autoptr(GPtrArray) busy = g_ptr_array_new();
    for (guint i = 0; i < w->jobs->len; i++) {
        KbctlJob *j = g_ptr_array_index(w->jobs, i);
        if (j->gpus_allocated > 0 || strcmp(j->status, "Running") == 0 ||
            strcmp(j->status, "Starting") == 0 || strcmp(j->status, "Restarting") == 0)
            g_ptr_array_add(busy, j);
    }
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        g_autoptr(KbctlJson) o = json_object_new_object();
        json_object *items = json_object_new_array();
        for (guint i = 0; i < busy->len; i++) {
            KbctlJob *j = g_ptr_array_index(busy, i);
            json_object *e = kbctl_job_json(w, j, FALSE);
            kbctl_json_set_int(e, "runningSeconds", j->start_time > 0 ? k->now - j->start_time : 0);
            json_object_array_add(items, e);
        }
        json_object_object_add(o, "items", items);
        kbctl_print_object(k->out, k->output, o);
        return TRUE;
    }
    if (k->output == KBCTL_OUT_NAME) {
        for (guint i = 0; i < busy->len; i++)
            fprintf(k->out, "%s\n", ((KbctlJob *)g_ptr_array_index(busy, i))->tf->meta.name);
        return TRUE;
    }
    if (busy->len == 0) {
        fprintf(stderr, "No running jobs.\n");
        return TRUE;
    }
    static const char *const headers[] = {"NAMESPACE", "NAME",  "STATUS",     "GPUS",
                                          "PODS",      "NODES", "RUNNING FOR"};
    g_autoptr(KbctlTable) t = kbctl_table_new(G_N_ELEMENTS(headers), headers);
    gint64 total = 0;
    for (guint i = 0; i < busy->len; i++) {
        KbctlJob *j = g_ptr_array_index(busy, i);
        g_autofree char *gpus = g_strdup_printf("%" G_GINT64_FORMAT, j->gpus_allocated);
        g_autofree char *pods = g_strdup_printf("%u", j->pods->len);
        g_autofree char *nodes = nodes_cell(j);
        g_autofree char *ran =
                j->start_time > 0 ? kbctl_duration(k->now - j->start_time) : g_strdup("-");
        const char *cells[] = {
                j->tf->meta.namespace_, j->tf->meta.name, j->status, gpus, pods, nodes, ran};
        kbctl_table_add(t, cells);
        kbctl_table_colour(t, 2, kbctl_status_colour(j->status));
        total += j->gpus_allocated;
    }
    kbctl_table_print(t, k->out, k->colour, TRUE, 0);
    fprintf(k->out, "\n%" G_GINT64_FORMAT " GPUs in use by %u jobs\n", total, busy->len);
    return TRUE;
}
