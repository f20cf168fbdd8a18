/*
 * kbctl logs NAME: a replica's log through the API server's pods/NAME/log, as kubectl logs reads
 * it (follow, tailLines, container, timestamps, previous). The default replica is the one that
 * decides the job's fate: the chief or master, else worker 0.
 */
#include <string.h>

#include "cli/kbctl-out.h"
#include "cli/kbctl-view.h"

#define FOLLOW_IDLE_S 3600

typedef struct {
    GMainLoop *loop;
    FILE *out;     /* NULL: collect into text */
    GString *text; /* with out NULL */
    GError *error;
} LogRead;

static gboolean on_data(const char *data, gsize len, gpointer user_data)
{
    LogRead *r = user_data;
    if (r->out != NULL) {
        fwrite(data, 1, len, r->out);
        fflush(r->out);
    } else {
        g_string_append_len(r->text, data, (gssize)len);
    }
    return TRUE;
}

static void on_done(const KbResponse *resp, gpointer user_data)
{
    LogRead *r = user_data;
    if (resp->error != NULL)
        r->error = g_error_copy(resp->error);
    g_main_loop_quit(r->loop);
}

static const char *default_replica_rank(const KbPod *p)
{
    return g_hash_table_lookup(p->meta.labels, KBCTL_LABEL_REPLICA_TYPE);
}

/* The pod to read: --replica, else chief/master, else worker-0, else the first. */
static const KbPod *pick_pod(const KbctlJob *j, const char *replica, GError **error)
{
    const KbPod *best = NULL;
    int best_rank = 99;
    for (guint i = 0; i < j->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(j->pods, i);
        g_autofree char *name = kbctl_pod_replica(p);
        if (replica != NULL) {
            if (strcmp(name, replica) == 0 || strcmp(p->meta.name, replica) == 0)
                return p;
            continue;
        }
        const char *type = default_replica_rank(p);
        int rank = g_strcmp0(type, "chief") == 0 || g_strcmp0(type, "master") == 0 ? 0
                   : strcmp(name, "worker-0") == 0                                 ? 1
                                                                                   : 2;
        if (rank < best_rank) {
            best = p;
            best_rank = rank;
        }
    }
    if (best != NULL)
        return best;
    const KbObjectMeta *m = &j->tf->meta;
    if (j->pods->len == 0) {
        g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_NOT_FOUND,
                    "tfjob %s/%s: no pods (status %s; kbctl why %s says why)", m->namespace_,
                    m->name, j->status, m->name);
        return NULL;
    }
    g_autoptr(GString) names = g_string_new(NULL);
    for (guint i = 0; i < j->pods->len; i++) {
        g_autofree char *n = kbctl_pod_replica(g_ptr_array_index(j->pods, i));
        g_string_append_printf(names, "%s%s", i > 0 ? ", " : "", n);
    }
    g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_NOT_FOUND,
                "tfjob %s/%s: --replica %s: no such replica (it has %s)", m->namespace_, m->name,
                replica, names->str);
    return NULL;
}

/* "tensorflow" when the pod has that container and none was asked for. */
static const char *pick_container(const KbPod *p, const char *asked)
{
    if (asked != NULL)
        return asked;
    json_object *cs = kbctl_json_get(p->meta.raw, "spec.containers");
    for (size_t i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs);
         i++)
        if (g_strcmp0(kbctl_json_str(json_object_array_get_idx(cs, i), "name"), "tensorflow") == 0)
            return "tensorflow";
    return NULL;
}

static char *log_query(Kbctl *k, const char *container, gint64 tail, gboolean follow)
{
    g_autoptr(GString) q = g_string_new(NULL);
    if (container != NULL) {
        g_string_append(q, "container=");
        g_string_append_uri_escaped(q, container, NULL, FALSE);
    }
    if (follow)
        g_string_append_printf(q, "%sfollow=true", q->len > 0 ? "&" : "");
    if (tail >= 0)
        g_string_append_printf(q, "%stailLines=%" G_GINT64_FORMAT, q->len > 0 ? "&" : "", tail);
    if (kbctl_args_bool(k->args, "timestamps"))
        g_string_append_printf(q, "%stimestamps=true", q->len > 0 ? "&" : "");
    if (kbctl_args_bool(k->args, "previous"))
        g_string_append_printf(q, "%sprevious=true", q->len > 0 ? "&" : "");
    return g_strdup(q->str);
}

gboolean kbctl_cmd_logs(Kbctl *k, GError **error)
{
    guint n = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n);
    gint64 tail = -1;
    gboolean follow = kbctl_args_bool(k->args, "follow");
    gboolean structured = k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML;
    if (n != 1) {
        kbctl_usage_error(error, "which job? give one job NAME (kbctl list shows them)");
        return FALSE;
    }
    if (!kbctl_args_int(k->args, "tail", -1, -1, G_MAXINT32, &tail, error))
        return FALSE;
    if (follow && structured) {
        kbctl_usage_error(error, "-f prints lines as they come: use it with -o table");
        return FALSE;
    }
    KbClient *c = kbctl_client(k, error);
    if (c == NULL)
        return FALSE;
    const char *ns = kbctl_namespace(k);
    g_autoptr(KbctlWorld) w = kbctl_world_load(c, ns, pos[0], 0, k->now, error);
    if (w == NULL)
        return FALSE;
    const KbctlJob *j = kbctl_world_job(w, ns, pos[0], error);
    if (j == NULL)
        return FALSE;
    const KbPod *pod = pick_pod(j, kbctl_args_str(k->args, "replica"), error);
    if (pod == NULL)
        return FALSE;
    const char *container = pick_container(pod, kbctl_args_str(k->args, "container"));
    g_autofree char *query = log_query(k, container, tail, follow);
    KbRequest req = {.method = "GET",
                     .type = &kb_type_pods,
                     .namespace_ = ns,
                     .name = pod->meta.name,
                     .subresource = "log",
                     .query = query,
                     .stream = TRUE};
    LogRead r = {.loop = g_main_loop_new(NULL, FALSE),
                 .out = structured ? NULL : k->out,
                 .text = g_string_new(NULL)};
    if (follow)
        kb_client_set_stream_idle_timeout(c, FOLLOW_IDLE_S);
    kb_client_stream(c, &req, on_data, on_done, &r);
    g_main_loop_run(r.loop);
    g_main_loop_unref(r.loop);
    g_autofree char *text = g_string_free(r.text, FALSE);
    g_autofree char *replica = kbctl_pod_replica(pod);
    if (r.error != NULL) {
        g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED, "tfjob %s/%s: replica %s (pod %s): %s",
                    ns, pos[0], replica, pod->meta.name, kbctl_error_message(r.error));
        g_error_free(r.error);
        return FALSE;
    }
    if (structured) {
        g_autoptr(KbctlJson) o = json_object_new_object();
        kbctl_json_set_str(o, "job", pos[0]);
        kbctl_json_set_str(o, "namespace", ns);
        kbctl_json_set_str(o, "replica", replica);
        kbctl_json_set_str(o, "pod", pod->meta.name);
        kbctl_json_set_str(o, "container", container);
        kbctl_json_set_str(o, "log", text);
        kbctl_print_object(k->out, k->output, o);
    }
    return TRUE;
}
