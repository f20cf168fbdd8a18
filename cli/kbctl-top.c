/*
 * kbctl top node: per node the GPUs allocatable and allocated, and which GPU index serves which
 * pod. Indices come from the pods' kube-batchd.io/gpu-ids annotation; the node's index set from
 * its kube-batchd.io/gpu-topology annotation when it lists one, else 0..N-1. A pod holding GPUs
 * without the annotation (bound by another scheduler) is listed apart: its indices are unknown.
 * Then, on a cluster with Dynamic Resource Allocation, each node's published devices and the
 * claim and pods each serves (kbctl-dra.h): MIG devices under their GPU's counter set with the
 * counters consumed and left, a shared GPU's shares with the capacity each consumes.
 */
#include <string.h>

#include "cli/kbctl-out.h"
#include "cli/kbctl-view.h"

#define MAX_GPU_INDEX 64

typedef struct {
    const KbPod *owner[MAX_GPU_INDEX]; /* by GPU index */
    gboolean present[MAX_GPU_INDEX];   /* the node has this index */
    GPtrArray *unindexed;              /* KbPod* holding GPUs without gpu-ids */
} GpuMap;

/* Indices named in a "0,1,5" list into @out (TRUE each); out-of-range ones are ignored. */
static void parse_ids(const char *ids, gboolean *out)
{
    g_auto(GStrv) parts = g_strsplit(ids, ",", -1);
    for (guint i = 0; parts[i] != NULL; i++) {
        guint64 n;
        if (g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 0, MAX_GPU_INDEX - 1, &n, NULL))
            out[n] = TRUE;
    }
}

static void node_indices(const KbNode *node, gboolean *present)
{
    gint64 n = MIN(kbctl_node_gpus(node), MAX_GPU_INDEX);
    const char *topo = g_hash_table_lookup(node->meta.annotations, "kube-batchd.io/gpu-topology");
    g_autoptr(KbctlJson) j = topo != NULL ? json_tokener_parse(topo) : NULL;
    json_object *islands = NULL;
    /* The first level listed (nvlink, pcie or numa) names every index the node has. */
    if (json_object_is_type(j, json_type_object)) {
        json_object_object_foreach(j, level, groups)
        {
            if (islands == NULL && level != NULL && json_object_is_type(groups, json_type_array))
                islands = groups;
        }
    }
    gint64 seen = 0;
    for (size_t g = 0; islands != NULL && g < json_object_array_length(islands); g++) {
        json_object *grp = json_object_array_get_idx(islands, g);
        for (size_t i = 0;
             json_object_is_type(grp, json_type_array) && i < json_object_array_length(grp); i++) {
            gint64 idx = json_object_get_int64(json_object_array_get_idx(grp, i));
            if (idx >= 0 && idx < MAX_GPU_INDEX && !present[idx] && seen < n) {
                present[idx] = TRUE;
                seen++;
            }
        }
    }
    for (gint64 i = 0; i < MAX_GPU_INDEX && seen < n; i++) {
        if (!present[i]) {
            present[i] = TRUE;
            seen++;
        }
    }
}

static void gpu_map(const KbctlWorld *w, const KbNode *node, GpuMap *m)
{
    memset(m, 0, sizeof *m);
    m->unindexed = g_ptr_array_new();
    node_indices(node, m->present);
    for (guint i = 0; i < w->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(w->pods, i);
        if (p->node_name == NULL || strcmp(p->node_name, node->meta.name) != 0 ||
            kb_pod_is_terminated(p) || kbctl_pod_gpus(p) == 0)
            continue;
        const char *ids = kbctl_pod_gpu_ids(p);
        if (ids == NULL) {
            g_ptr_array_add(m->unindexed, (gpointer)p);
            continue;
        }
        gboolean mine[MAX_GPU_INDEX] = {FALSE};
        parse_ids(ids, mine);
        for (guint g = 0; g < MAX_GPU_INDEX; g++)
            if (mine[g])
                m->owner[g] = p;
    }
}

static char *pod_label(const KbPod *p)
{
    const char *job = g_hash_table_lookup(p->meta.labels, KBCTL_LABEL_JOB_NAME);
    if (job != NULL)
        return g_strdup_printf("%s/%s (job %s)", p->meta.namespace_, p->meta.name, job);
    return g_strdup_printf("%s/%s", p->meta.namespace_, p->meta.name);
}

/* Runs of consecutive indices with the same owner: "0-3  default/a (job a)". */
static void print_map(Kbctl *k, const KbNode *node, const GpuMap *m)
{
    fprintf(k->out, "  %s\n", node->meta.name);
    for (guint g = 0; g < MAX_GPU_INDEX;) {
        if (!m->present[g]) {
            g++;
            continue;
        }
        guint end = g;
        while (end + 1 < MAX_GPU_INDEX && m->present[end + 1] && m->owner[end + 1] == m->owner[g])
            end++;
        g_autofree char *range =
                end > g ? g_strdup_printf("GPU %u-%u", g, end) : g_strdup_printf("GPU %u", g);
        g_autofree char *who = m->owner[g] != NULL ? pod_label(m->owner[g]) : NULL;
        g_autofree char *shown =
                kbctl_colourize(who != NULL ? who : "free",
                                who != NULL ? KBCTL_COLOUR_NONE : KBCTL_COLOUR_DIM, k->colour);
        fprintf(k->out, "    %-10s %s\n", range, shown);
        g = end + 1;
    }
    for (guint i = 0; i < m->unindexed->len; i++) {
        const KbPod *p = g_ptr_array_index(m->unindexed, i);
        g_autofree char *who = pod_label(p);
        fprintf(k->out, "    %-10s %s: %" G_GINT64_FORMAT " GPUs, no kube-batchd.io/gpu-ids\n",
                "GPU ?", who, kbctl_pod_gpus(p));
    }
}

/* ---- DRA devices ---------------------------------------------------------------------------- */

/* "ns/pod (job j)" for a pod key, the job from the pod's label when kbctl loaded it. */
static char *pod_key_label(const KbctlWorld *w, const char *key)
{
    for (guint i = 0; i < w->pods->len; i++) {
        const KbPod *p = g_ptr_array_index(w->pods, i);
        g_autofree char *k = g_strdup_printf("%s/%s", p->meta.namespace_, p->meta.name);
        if (strcmp(k, key) == 0)
            return pod_label(p);
    }
    return g_strdup(key);
}

static char *share_pods(const KbctlWorld *w, const KbctlDraShare *s)
{
    if (s->pods->len == 0)
        return g_strdup("(reserved for no pod)");
    g_autoptr(GString) out = g_string_new(NULL);
    for (guint i = 0; i < s->pods->len; i++) {
        g_autofree char *l = pod_key_label(w, g_ptr_array_index(s->pods, i));
        g_string_append_printf(out, "%s%s", i > 0 ? ", " : "", l);
    }
    return g_strdup(out->str);
}

/* "memory 10Gi, multiprocessors 14" from a name -> quantity object ("-" when empty). */
static char *quantities_text(json_object *o, const char *suffix)
{
    if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) == 0)
        return g_strdup("-");
    g_autoptr(GString) s = g_string_new(NULL);
    json_object_object_foreach(o, name, val)
    {
        json_object *v = NULL;
        const char *q = json_object_is_type(val, json_type_object) &&
                                        json_object_object_get_ex(val, "value", &v)
                                ? json_object_get_string(v)
                                : json_object_get_string(val);
        g_string_append_printf(s, "%s%s %s%s", s->len > 0 ? ", " : "", name, q, suffix);
    }
    return g_strdup(s->str);
}

static void device_rows(const KbctlWorld *w, KbctlTable *t, const KbctlDraDevice *d)
{
    const char *island = d->island != NULL ? d->island : "-";
    const char *product = d->product != NULL ? d->product : "-";
    for (guint i = 0; i < d->shares->len; i++) {
        const KbctlDraShare *s = g_ptr_array_index(d->shares, i);
        g_autofree char *claim = g_strdup_printf("%s (%s)", s->claim, s->request);
        g_autofree char *consumes = d->set != NULL ? quantities_text(d->consumes, "")
                                                   : quantities_text(s->consumed, "");
        g_autofree char *pods = share_pods(w, s);
        const char *cells[] = {d->key, product, island, claim, consumes, pods};
        kbctl_table_add(t, cells);
    }
    if (d->shares->len == 0 || d->multiple) {
        g_autoptr(KbctlJson) left = d->multiple ? kbctl_dra_capacity_left(d) : NULL;
        g_autofree char *free_text = left != NULL ? quantities_text(left, " left") : g_strdup("-");
        const char *cells[] = {d->key, product, island, "free", free_text, "-"};
        kbctl_table_add(t, cells);
        kbctl_table_colour(t, 3, KBCTL_COLOUR_DIM);
    }
}

static KbctlTable *device_table(void)
{
    static const char *const headers[] = {"DEVICE", "PRODUCT",  "ISLAND",
                                          "CLAIM",  "CONSUMES", "POD"};
    return kbctl_table_new(G_N_ELEMENTS(headers), headers);
}

/* A counter set: its counters consumed and left, then its allocated devices. */
static void print_set(Kbctl *k, const KbctlWorld *w, const KbctlDraSet *set)
{
    guint fit = 0;
    g_autoptr(KbctlJson) counters = kbctl_dra_set_counters(set, &fit);
    g_autoptr(GString) s = g_string_new(NULL);
    json_object_object_foreach(counters, name, c)
    {
        g_string_append_printf(s, "%s%s %s/%s (%s left)", s->len > 0 ? ", " : "", name,
                               kbctl_json_str(c, "consumed"), kbctl_json_str(c, "total"),
                               kbctl_json_str(c, "left"));
    }
    guint allocated = 0;
    g_autoptr(KbctlTable) t = device_table();
    for (guint i = 0; i < set->devices->len; i++) {
        const KbctlDraDevice *d = g_ptr_array_index(set->devices, i);
        if (d->shares->len == 0)
            continue;
        allocated++;
        device_rows(w, t, d);
    }
    fprintf(k->out, "    counter set %s: %s\n", set->key, s->str);
    fprintf(k->out, "      %u of %u devices allocated; %u of the %u free still fit\n", allocated,
            set->devices->len, fit, set->devices->len - allocated);
    if (allocated > 0)
        kbctl_table_print(t, k->out, k->colour, TRUE, 6);
}

static void print_dra_node(Kbctl *k, const KbctlWorld *w, const char *node)
{
    fprintf(k->out, "  %s\n", node);
    g_autoptr(KbctlTable) t = device_table();
    guint rows = 0;
    for (guint i = 0; i < w->dra->devices->len; i++) {
        const KbctlDraDevice *d = g_ptr_array_index(w->dra->devices, i);
        if (g_strcmp0(d->node, node) != 0 || d->set != NULL)
            continue;
        device_rows(w, t, d);
        rows++;
    }
    if (rows > 0)
        kbctl_table_print(t, k->out, k->colour, TRUE, 4);
    for (guint i = 0; i < w->dra->sets->len; i++) {
        const KbctlDraSet *set = g_ptr_array_index(w->dra->sets, i);
        if (g_strcmp0(set->node, node) == 0)
            print_set(k, w, set);
    }
}

static void print_dra(Kbctl *k, const KbctlWorld *w)
{
    gboolean any = FALSE;
    for (guint i = 0; i < w->nodes->len; i++) {
        const KbNode *n = g_ptr_array_index(w->nodes, i);
        if (!kbctl_dra_node_has_devices(w->dra, n->meta.name))
            continue;
        if (!any)
            fprintf(k->out, "\nDRA device -> claim -> pod:\n");
        any = TRUE;
        print_dra_node(k, w, n->meta.name);
    }
    for (guint i = 0; i < w->dra->unknown->len; i++)
        fprintf(k->out, "  warning: %s\n", (char *)g_ptr_array_index(w->dra->unknown, i));
}

static json_object *node_json(const KbctlWorld *w, const KbNode *n, const GpuMap *m)
{
    json_object *o = json_object_new_object();
    gint64 alloc = kbctl_node_gpus_allocated(w, n);
    kbctl_json_set_str(o, "name", n->meta.name);
    json_object_object_add(o, "ready", json_object_new_boolean(kbctl_node_ready(n)));
    kbctl_json_set_str(o, "model", g_hash_table_lookup(n->meta.labels, KBCTL_LABEL_GPU_PRODUCT));
    kbctl_json_set_int(o, "gpusAllocatable", kbctl_node_gpus(n));
    kbctl_json_set_int(o, "gpusAllocated", alloc);
    kbctl_json_set_int(o, "gpusFree", MAX(kbctl_node_gpus(n) - alloc, 0));
    json_object *devices = json_object_new_array();
    for (guint g = 0; g < MAX_GPU_INDEX; g++) {
        if (!m->present[g])
            continue;
        json_object *d = json_object_new_object();
        kbctl_json_set_int(d, "index", g);
        const KbPod *p = m->owner[g];
        if (p != NULL) {
            g_autofree char *pod = g_strdup_printf("%s/%s", p->meta.namespace_, p->meta.name);
            kbctl_json_set_str(d, "pod", pod);
            kbctl_json_set_str(d, "job", g_hash_table_lookup(p->meta.labels, KBCTL_LABEL_JOB_NAME));
        } else {
            kbctl_json_set_str(d, "pod", NULL);
        }
        json_object_array_add(devices, d);
    }
    json_object_object_add(o, "devices", devices);
    json_object *un = json_object_new_array();
    for (guint i = 0; i < m->unindexed->len; i++) {
        const KbPod *p = g_ptr_array_index(m->unindexed, i);
        json_object *d = json_object_new_object();
        g_autofree char *pod = g_strdup_printf("%s/%s", p->meta.namespace_, p->meta.name);
        kbctl_json_set_str(d, "pod", pod);
        kbctl_json_set_int(d, "gpus", kbctl_pod_gpus(p));
        json_object_array_add(un, d);
    }
    json_object_object_add(o, "unindexed", un);
    kbctl_dra_node_json(w->dra, n->meta.name, o);
    return o;
}

gboolean kbctl_cmd_top_node(Kbctl *k, GError **error)
{
    guint n_pos = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n_pos);
    if (n_pos > 0) {
        kbctl_usage_error(error, "unexpected argument \"%s\"", pos[0]);
        return FALSE;
    }
    KbClient *c = kbctl_client(k, error);
    if (c == NULL)
        return FALSE;
    g_autoptr(KbctlWorld) w = kbctl_world_load(c, NULL, NULL,
                                               KBCTL_LOAD_NO_JOBS | KBCTL_LOAD_ALL_PODS |
                                                       KBCTL_LOAD_NODES | KBCTL_LOAD_DRA,
                                               k->now, error);
    if (w == NULL)
        return FALSE;
    g_autoptr(GArray) maps = g_array_new(FALSE, TRUE, sizeof(GpuMap));
    g_array_set_size(maps, w->nodes->len);
    for (guint i = 0; i < w->nodes->len; i++)
        gpu_map(w, g_ptr_array_index(w->nodes, i), &g_array_index(maps, GpuMap, i));
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML) {
        g_autoptr(KbctlJson) o = json_object_new_object();
        json_object *items = json_object_new_array();
        for (guint i = 0; i < w->nodes->len; i++)
            json_object_array_add(items, node_json(w, g_ptr_array_index(w->nodes, i),
                                                   &g_array_index(maps, GpuMap, i)));
        json_object_object_add(o, "items", items);
        kbctl_print_object(k->out, k->output, o);
    } else if (k->output == KBCTL_OUT_NAME) {
        for (guint i = 0; i < w->nodes->len; i++)
            fprintf(k->out, "%s\n", ((KbNode *)g_ptr_array_index(w->nodes, i))->meta.name);
    } else {
        gboolean wide = k->output == KBCTL_OUT_WIDE;
        static const char *const headers[] = {
                "NODE",           "STATUS",    "MODEL", "GPU(ALLOCATABLE)",
                "GPU(ALLOCATED)", "GPU(FREE)", "RACK"};
        g_autoptr(KbctlTable) t = kbctl_table_new(wide ? 7 : 6, headers);
        gint64 tot = 0, used = 0;
        for (guint i = 0; i < w->nodes->len; i++) {
            const KbNode *n = g_ptr_array_index(w->nodes, i);
            gint64 a = kbctl_node_gpus(n), u = kbctl_node_gpus_allocated(w, n);
            g_autofree char *ca = g_strdup_printf("%" G_GINT64_FORMAT, a);
            g_autofree char *cu = g_strdup_printf("%" G_GINT64_FORMAT, u);
            g_autofree char *cf = g_strdup_printf("%" G_GINT64_FORMAT, MAX(a - u, 0));
            const char *model = g_hash_table_lookup(n->meta.labels, KBCTL_LABEL_GPU_PRODUCT);
            const char *rack = g_hash_table_lookup(n->meta.labels, "topology.kubernetes.io/rack");
            const char *status = kbctl_node_ready(n) ? "Ready" : "NotReady";
            const char *cells[] = {n->meta.name, status, model != NULL ? model : "-", ca,
                                   cu,           cf,     rack != NULL ? rack : "-"};
            kbctl_table_add(t, cells);
            kbctl_table_colour(t, 1, kbctl_status_colour(status));
            tot += a;
            used += u;
        }
        kbctl_table_print(t, k->out, k->colour, TRUE, 0);
        fprintf(k->out,
                "\n%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT " GPUs allocated in the cluster\n", used,
                tot);
        if (tot > 0) /* DRA nodes advertise no nvidia.com/gpu: their devices follow */
            fprintf(k->out, "\nGPU index -> pod:\n");
        for (guint i = 0; i < w->nodes->len; i++)
            if (kbctl_node_gpus(g_ptr_array_index(w->nodes, i)) > 0)
                print_map(k, g_ptr_array_index(w->nodes, i), &g_array_index(maps, GpuMap, i));
        print_dra(k, w);
    }
    for (guint i = 0; i < maps->len; i++)
        g_ptr_array_unref(g_array_index(maps, GpuMap, i).unindexed);
    return TRUE;
}
