/*
 * kbctl queue list|get: what a tenant asks first. Weight and capability come from the Queue's
 * spec; deserved, allocated and the job counts from the status kube-batchd writes on it
 * (scheduler/status-writer.c: state, pending, inqueue, running, unknown, completed, allocated,
 * and per resource its deserved share under `resources`; with proportion's usageHalfLife the
 * decayed usage under `usage`, shown beside the deserved share). A queue whose status has no
 * `allocated` yet (an older kube-batchd) gets it summed from the bound pods of its PodGroups.
 * Queues with spec.parent are shown under their parent.
 */
#include <math.h>
#include <string.h>

#include "cli/kbctl-out.h"
#include "cli/kbctl-view.h"

static const char *queue_name(json_object *q)
{
    return kbctl_json_str(q, "metadata.name");
}

static json_object *find(const KbctlWorld *w, const char *name)
{
    for (guint i = 0; i < w->queues->len; i++)
        if (g_strcmp0(queue_name(g_ptr_array_index(w->queues, i)), name) == 0)
            return g_ptr_array_index(w->queues, i);
    return NULL;
}

/* Queues in tree order (children after their parent, by name) with their depth. */
static void tree_walk(const KbctlWorld *w, const char *parent, guint depth, GPtrArray *order,
                      GArray *depths, GHashTable *done)
{
    for (guint i = 0; i < w->queues->len; i++) {
        json_object *q = g_ptr_array_index(w->queues, i);
        const char *p = kbctl_json_str(q, "spec.parent");
        gboolean root = p == NULL || *p == '\0' || strcmp(p, "root") == 0 || find(w, p) == NULL;
        gboolean mine = parent == NULL ? root : !root && strcmp(p, parent) == 0;
        if (!mine || g_hash_table_contains(done, q))
            continue;
        g_hash_table_add(done, q);
        g_ptr_array_add(order, q);
        g_array_append_val(depths, depth);
        tree_walk(w, queue_name(q), depth + 1, order, depths, done);
    }
}

static char *gpus_cell(gint64 n, const char *none)
{
    return n >= 0 ? g_strdup_printf("%" G_GINT64_FORMAT, n) : g_strdup(none);
}

/* The GPUs queue @q holds as kube-batchd wrote them in status.allocated (parts of GPUs count
 * as the part consumed: "0.994"), else as kbctl_queue_allocated_gpus counts them. */
static char *allocated_gpus_text(const KbctlWorld *w, json_object *q)
{
    json_object *alloc = kbctl_json_get(q, "status.allocated"), *v = NULL;
    if (json_object_is_type(alloc, json_type_object) &&
        json_object_object_get_ex(alloc, KB_RESOURCE_GPU_NAME, &v) &&
        json_object_is_type(v, json_type_string))
        return g_strdup(json_object_get_string(v));
    return gpus_cell(kbctl_queue_allocated_gpus(w, q), "0");
}

/* status.usage.resourceSeconds[@resource] (what kube-batchd writes with proportion's
 * usageHalfLife), in resource-hours; -1 when the queue has none. */
static double usage_hours(json_object *q, const char *resource)
{
    json_object *res = kbctl_json_get(q, "status.usage.resourceSeconds"), *v = NULL;
    if (res == NULL || !json_object_is_type(res, json_type_object) ||
        !json_object_object_get_ex(res, resource, &v) ||
        !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
        return -1;
    double x = json_object_get_double(v);
    return x >= 0 ? x / 3600 : -1;
}

static char *usage_cell(json_object *q)
{
    double h = usage_hours(q, KB_RESOURCE_GPU_NAME);
    return h >= 0 ? g_strdup_printf("%.1f", h) : g_strdup("-");
}

static json_object *queue_json(const KbctlWorld *w, json_object *q, guint depth)
{
    json_object *o = json_object_new_object();
    kbctl_json_set_str(o, "name", queue_name(q));
    kbctl_json_set_str(o, "parent", kbctl_json_str(q, "spec.parent"));
    kbctl_json_set_int(o, "depth", depth);
    kbctl_json_set_int(o, "weight", kbctl_json_int(q, "spec.weight", 1));
    kbctl_json_set_str(o, "state", kbctl_json_str(q, "status.state"));
    json_object *cap = kbctl_json_get(q, "spec.capability");
    json_object_object_add(o, "capability", cap != NULL ? json_object_get(cap) : NULL);
    json_object_object_add(o, "deserved", kbctl_queue_deserved(q));
    json_object *usage = kbctl_json_get(q, "status.usage");
    json_object_object_add(o, "usage", usage != NULL ? json_object_get(usage) : NULL);
    double gpu_h = usage_hours(q, KB_RESOURCE_GPU_NAME);
    json_object_object_add(o, "usageGpuHours",
                           gpu_h >= 0 ? json_object_new_double(round(gpu_h * 10) / 10) : NULL);
    json_object *alloc = kbctl_json_get(q, "status.allocated");
    if (alloc != NULL) {
        json_object_object_add(o, "allocated", json_object_get(alloc));
    } else {
        json_object *a = json_object_new_object();
        kbctl_json_set_int(a, KB_RESOURCE_GPU_NAME, kbctl_queue_allocated_gpus(w, q));
        json_object_object_add(o, "allocated", a);
    }
    kbctl_json_set_int(o, "allocatedGpus", kbctl_queue_allocated_gpus(w, q));
    kbctl_json_set_int(o, "pendingJobs",
                       kbctl_json_int(q, "status.pending", 0) +
                               kbctl_json_int(q, "status.inqueue", 0));
    kbctl_json_set_int(o, "runningJobs", kbctl_json_int(q, "status.running", 0));
    kbctl_json_set_int(o, "completedJobs", kbctl_json_int(q, "status.completed", 0));
    return o;
}

static KbctlWorld *load(Kbctl *k, GError **error)
{
    KbClient *c = kbctl_client(k, error);
    if (c == NULL)
        return NULL;
    return kbctl_world_load(c, NULL, NULL,
                            KBCTL_LOAD_NO_JOBS | KBCTL_LOAD_ALL_PODS | KBCTL_LOAD_QUEUES, k->now,
                            error);
}

static void add_row(Kbctl *k, KbctlTable *t, const KbctlWorld *w, json_object *q, guint depth,
                    gboolean wide)
{
    g_autofree char *name = g_strdup_printf("%*s%s", (int)depth * 2, "", queue_name(q));
    g_autofree char *weight =
            g_strdup_printf("%" G_GINT64_FORMAT, kbctl_json_int(q, "spec.weight", 1));
    const char *state = kbctl_json_str(q, "status.state");
    if (state == NULL)
        state = kbctl_json_str(q, "spec.state");
    g_autofree char *cap = gpus_cell(kbctl_queue_gpus(q, "spec.capability"), "-");
    g_autofree char *des = gpus_cell(kbctl_queue_deserved_gpus(q), "-");
    g_autofree char *used = usage_cell(q);
    g_autofree char *alloc = allocated_gpus_text(w, q);
    g_autofree char *pending =
            g_strdup_printf("%" G_GINT64_FORMAT, kbctl_json_int(q, "status.pending", 0) +
                                                         kbctl_json_int(q, "status.inqueue", 0));
    g_autofree char *running =
            g_strdup_printf("%" G_GINT64_FORMAT, kbctl_json_int(q, "status.running", 0));
    g_autofree char *capl = kbctl_resource_list_string(kbctl_json_get(q, "spec.capability"));
    json_object *deserved = kbctl_queue_deserved(q);
    g_autofree char *desl = kbctl_resource_list_string(deserved);
    json_object_put(deserved);
    g_autofree char *allocl = kbctl_resource_list_string(kbctl_json_get(q, "status.allocated"));
    const char *st = state != NULL ? state : "Open";
    const char *cells[] = {name,  weight,  st,      cap,  des,  used,
                           alloc, pending, running, capl, desl, allocl};
    kbctl_table_add(t, cells);
    kbctl_table_colour(t, 2, kbctl_status_colour(st));
}

gboolean kbctl_cmd_queue_list(Kbctl *k, GError **error)
{
    guint n_pos = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n_pos);
    if (n_pos > 0) {
        kbctl_usage_error(error, "unexpected argument \"%s\" (kbctl queue get %s shows one queue)",
                          pos[0], pos[0]);
        return FALSE;
    }
    g_autoptr(KbctlWorld) w = load(k, error);
    if (w == NULL)
        return FALSE;
    g_autoptr(GPtrArray) order = g_ptr_array_new();
    g_autoptr(GArray) depths = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GHashTable) done = g_hash_table_new(NULL, NULL);
    tree_walk(w, NULL, 0, order, depths, done);
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        g_autoptr(KbctlJson) o = json_object_new_object();
        json_object *items = json_object_new_array();
        for (guint i = 0; i < order->len; i++)
            json_object_array_add(items, queue_json(w, g_ptr_array_index(order, i),
                                                    g_array_index(depths, guint, i)));
        json_object_object_add(o, "items", items);
        kbctl_print_object(k->out, k->output, o);
        return TRUE;
    }
    if (k->output == KBCTL_OUT_NAME) {
        for (guint i = 0; i < order->len; i++)
            fprintf(k->out, "%s\n", queue_name(g_ptr_array_index(order, i)));
        return TRUE;
    }
    if (order->len == 0) {
        fprintf(stderr, "No queues found (jobs go to kube-batchd's default queue).\n");
        return TRUE;
    }
    gboolean wide = k->output == KBCTL_OUT_WIDE;
    static const char *const headers[] = {
            "NAME",          "WEIGHT",       "STATE",          "GPU(CAPABILITY)",
            "GPU(DESERVED)", "GPU-H(USAGE)", "GPU(ALLOCATED)", "PENDING JOBS",
            "RUNNING JOBS",  "CAPABILITY",   "DESERVED",       "ALLOCATED"};
    g_autoptr(KbctlTable) t = kbctl_table_new(wide ? 12 : 9, headers);
    for (guint i = 0; i < order->len; i++)
        add_row(k, t, w, g_ptr_array_index(order, i), g_array_index(depths, guint, i), wide);
    kbctl_table_print(t, k->out, k->colour, TRUE, 0);
    return TRUE;
}

static int cmp_groups(gconstpointer a, gconstpointer b)
{
    json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
    int r = g_strcmp0(kbctl_json_str(x, "metadata.namespace"),
                      kbctl_json_str(y, "metadata.namespace"));
    return r != 0 ? r
                  : g_strcmp0(kbctl_json_str(x, "metadata.name"),
                              kbctl_json_str(y, "metadata.name"));
}

/* The PodGroups of queue @name (jobs without a queue are in "default"). */
static void queue_jobs(Kbctl *k, const KbctlWorld *w, const char *name, json_object *out_items,
                       KbctlTable *t)
{
    GHashTableIter it;
    gpointer key, val;
    g_autoptr(GPtrArray) groups = g_ptr_array_new();
    g_hash_table_iter_init(&it, w->groups);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        const char *q = kbctl_json_str(val, "spec.queue");
        if (strcmp(q != NULL ? q : "default", name) == 0)
            g_ptr_array_add(groups, val);
    }
    g_ptr_array_sort(groups, cmp_groups);
    for (guint i = 0; i < groups->len; i++) {
        json_object *g = g_ptr_array_index(groups, i);
        const char *ns = kbctl_json_str(g, "metadata.namespace");
        const char *gname = kbctl_json_str(g, "metadata.name");
        gint64 gpus = 0;
        for (guint p = 0; p < w->pods->len; p++) {
            const KbPod *pod = g_ptr_array_index(w->pods, p);
            if (pod->node_name != NULL && !kb_pod_is_terminated(pod) &&
                g_strcmp0(pod->group_name, gname) == 0 && g_strcmp0(pod->meta.namespace_, ns) == 0)
                gpus += kbctl_pod_gpus(pod);
        }
        const char *phase = kbctl_json_str(g, "status.phase");
        json_object *j = json_object_new_object();
        kbctl_json_set_str(j, "namespace", ns);
        kbctl_json_set_str(j, "name", gname);
        kbctl_json_set_str(j, "phase", phase);
        kbctl_json_set_int(j, "minMember", kbctl_json_int(g, "spec.minMember", 1));
        kbctl_json_set_int(j, "gpusAllocated", gpus);
        json_object_array_add(out_items, j);
        g_autofree char *min =
                g_strdup_printf("%" G_GINT64_FORMAT, kbctl_json_int(g, "spec.minMember", 1));
        g_autofree char *cg = g_strdup_printf("%" G_GINT64_FORMAT, gpus);
        g_autofree char *age = kbctl_age(kbctl_json_str(g, "metadata.creationTimestamp"), k->now);
        const char *cells[] = {ns, gname, phase != NULL ? phase : "-", min, cg, age};
        kbctl_table_add(t, cells);
    }
}

/* A queue the tree puts at fault (a parent that does not exist, a cycle) has the condition
 * Valid False from kube-batchd: its reason and message, which say why its jobs wait. */
static void print_fault(Kbctl *k, json_object *q)
{
    json_object *conds = kbctl_json_get(q, "status.conditions");
    if (!json_object_is_type(conds, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kbctl_json_str(c, "type"), "Valid") != 0)
            continue;
        const char *status = kbctl_json_str(c, "status");
        const char *reason = kbctl_json_str(c, "reason");
        const char *message = kbctl_json_str(c, "message");
        fprintf(k->out, "%-14s%s", "Valid:", status != NULL ? status : "Unknown");
        if (reason != NULL)
            fprintf(k->out, " (%s)", reason);
        fputc('\n', k->out);
        if (message != NULL)
            fprintf(k->out, "%-14s%s\n", "", message);
    }
}

/* "Usage:" in `queue get`: the decayed usage kube-batchd last wrote, and when. */
static void print_usage(Kbctl *k, json_object *q)
{
    double gpu = usage_hours(q, KB_RESOURCE_GPU_NAME), cpu = usage_hours(q, "cpu");
    const char *t = kbctl_json_str(q, "status.usage.time");
    if (gpu < 0 && cpu < 0) {
        fprintf(k->out, "%-14s-\n", "Usage:");
        return;
    }
    fprintf(k->out, "%-14s%.1f GPU-hours, %.1f cpu-hours (decayed, as of %s)\n",
            "Usage:", MAX(gpu, 0), MAX(cpu, 0), t != NULL ? t : "-");
}

gboolean kbctl_cmd_queue_get(Kbctl *k, GError **error)
{
    guint n_pos = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n_pos);
    if (n_pos != 1) {
        kbctl_usage_error(error, "one QUEUE name expected (kbctl queue list shows them)");
        return FALSE;
    }
    g_autoptr(KbctlWorld) w = load(k, error);
    if (w == NULL)
        return FALSE;
    json_object *q = find(w, pos[0]);
    if (q == NULL) {
        g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_NOT_FOUND,
                    "queue %s: not found (kbctl queue list shows the queues)", pos[0]);
        return FALSE;
    }
    static const char *const headers[] = {"NAMESPACE",      "JOB", "PHASE", "MIN MEMBERS",
                                          "GPU(ALLOCATED)", "AGE"};
    g_autoptr(KbctlTable) t = kbctl_table_new(G_N_ELEMENTS(headers), headers);
    g_autoptr(KbctlJson) o = queue_json(w, q, 0);
    json_object *jobs = json_object_new_array();
    json_object_object_add(o, "jobs", jobs);
    queue_jobs(k, w, pos[0], jobs, t);
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        kbctl_print_object(k->out, k->output, o);
        return TRUE;
    }
    if (k->output == KBCTL_OUT_NAME) {
        fprintf(k->out, "%s\n", pos[0]);
        return TRUE;
    }
    g_autofree char *cap = kbctl_resource_list_string(kbctl_json_get(q, "spec.capability"));
    g_autofree char *guar = kbctl_resource_list_string(kbctl_json_get(q, "spec.guarantee"));
    json_object *deserved = kbctl_queue_deserved(q);
    g_autofree char *des = kbctl_resource_list_string(deserved);
    json_object_put(deserved);
    g_autofree char *alloc = kbctl_resource_list_string(kbctl_json_get(q, "status.allocated"));
    g_autofree char *held = allocated_gpus_text(w, q);
    g_autofree char *allocg = g_strdup_printf("%s GPUs", held);
    const char *parent = kbctl_json_str(q, "spec.parent");
    const char *state = kbctl_json_str(q, "status.state");
    fprintf(k->out, "%-14s%s\n%-14s%s\n%-14s%" G_GINT64_FORMAT "\n%-14s%s\n", "Name:", pos[0],
            "Parent:", parent != NULL ? parent : "-",
            "Weight:", kbctl_json_int(q, "spec.weight", 1),
            "State:", state != NULL ? state : "Open");
    fprintf(k->out, "%-14s%s\n%-14s%s\n%-14s%s\n%-14s%s\n",
            "Capability:", strcmp(cap, "-") == 0 ? "unlimited" : cap, "Guarantee:", guar,
            "Deserved:", des, "Allocated:", strcmp(alloc, "-") == 0 ? allocg : alloc);
    print_fault(k, q);
    print_usage(k, q);
    fprintf(k->out,
            "%-14s%" G_GINT64_FORMAT " pending, %" G_GINT64_FORMAT " inqueue, %" G_GINT64_FORMAT
            " running, %" G_GINT64_FORMAT " completed\n",
            "Jobs:", kbctl_json_int(q, "status.pending", 0), kbctl_json_int(q, "status.inqueue", 0),
            kbctl_json_int(q, "status.running", 0), kbctl_json_int(q, "status.completed", 0));
    fprintf(k->out, "\nPodGroups in this queue:\n");
    if (json_object_array_length(jobs) == 0)
        fprintf(k->out, "  (none)\n");
    else
        kbctl_table_print(t, k->out, k->colour, TRUE, 2);
    return TRUE;
}
