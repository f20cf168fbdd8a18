/* The scheduler's cluster cache; see cache.h. */
#include "scheduler/cache.h"

#include <json-c/json.h>
#include <string.h>

#include "kube/kb-error.h"
#include "scheduler/dra.h"
#include "scheduler/fragment.h"

/* Per node GPU bookkeeping, beside the public KbNodeInfo. */
typedef struct {
    guint32 holders[KB_GPU_MAX]; /* pods counted as holding each index (overlaps are tolerated) */
    KbGpuTopology *topology;     /* KbNodeInfo.gpu_topology */
    char *annotation;            /* the topology annotation last seen (parse and warn once) */
    gint64 n_gpus;               /* the allocatable GPUs the topology was built for */
} NodeGpu;

/* Every pod the cache knows (served or not), keyed "ns/name". */
typedef struct {
    KbPod *pod;           /* ref */
    gint counted_node;    /* node whose `used` includes this pod, -1 when none */
    guint dra_gen;        /* kb_dra_demand_gen its DRA demand was counted at (in padding) */
    KbResources counted;  /* what was added there */
    guint64 counted_gpus; /* GPU indices it holds there (NodeGpu.holders) */
    KbTaskInfo *task;     /* owned by its job; NULL for pods of other schedulers */
    /* The pod's claims' DRA demand (pod_requests), kept while dra_stamp says it is current and
     * the pod's claims (names, templates) stay the same (dra_kept FALSE otherwise). */
    gboolean dra_kept;
    KbDraDemandStamp dra_stamp;
    KbResources dra_demand;
} PodEntry;

struct KbCache {
    const char **served; /* interned, NULL-terminated */
    const char *default_queue;
    GArray *nodes;        /* KbNodeInfo, indexed by id */
    GHashTable *node_ids; /* interned name -> id + 1 */
    GHashTable *pods;     /* char* "ns/name" -> PodEntry* */
    GHashTable *jobs;     /* char* "g:ns/name" or "p:ns/name" -> KbJobInfo* (owned by job_list) */
    GPtrArray *job_list;  /* KbJobInfo*, job->id is the index */
    GHashTable *queues;   /* interned name -> KbQueueInfo* (owned by queue_list) */
    GPtrArray *queue_list;
    GHashTable *priority_classes; /* interned name -> KbPriorityClass* (ref) */
    GHashTable *pvcs;             /* char* "ns/name" -> KbPvc* (ref) */
    /* Workloads (scheduling.k8s.io/v1beta1): "ns/name" -> the queue their label or annotation
     * kube-batchd.io/queue names (interned; "" when none). */
    GHashTable *workload_queues;
    /* v1alpha3 PodGroups that name a parent CompositePodGroup: "ns/name" -> KbPodGroup (ref). */
    GHashTable *children;
    GArray *node_gpus; /* NodeGpu, indexed like nodes */
    guint n_gpu_topology_errors;
    gboolean extender;           /* kb_cache_set_extender */
    const char **extender_names; /* interned, NULL-terminated; NULL: every other name */
    KbHistory *history;          /* runtimes of finished jobs (the reserve action's estimates) */
    KbUsage *usage;              /* decayed usage per queue (proportion, usage.h) */
    KbDra *dra;                  /* DRA classes, claims, slices and held devices (dra.h) */
    KbFragModel *fragment;       /* pod shapes seen (the fgd plugin, fragment.h) */
    /* kb_dra_{capacity,demand}_gen when nodes' DRA capacity and pods' DRA demand were last
     * counted (kb_cache_sync_dra). */
    guint dra_capacity_gen;
    guint dra_demand_gen;
};

static gboolean state_occupies(KbTaskState s)
{
    return s == KB_TASK_ALLOCATED || s == KB_TASK_BINDING || s == KB_TASK_BOUND ||
           s == KB_TASK_RUNNING || s == KB_TASK_RELEASING;
}

/* ---- nodes ---------------------------------------------------------------------------------- */

static guint node_id_for(KbCache *cache, const char *name)
{
    name = g_intern_string(name); /* the table is keyed by interned pointers */
    gpointer v = g_hash_table_lookup(cache->node_ids, name);
    if (v != NULL)
        return GPOINTER_TO_UINT(v) - 1;
    KbNodeInfo ni = {0};
    ni.id = cache->nodes->len;
    ni.name = g_intern_string(name);
    g_array_append_val(cache->nodes, ni);
    g_array_set_size(cache->node_gpus, cache->nodes->len);
    g_hash_table_insert(cache->node_ids, (gpointer)ni.name, GUINT_TO_POINTER(ni.id + 1));
    return ni.id;
}

static KbNodeInfo *node_at(KbCache *cache, guint id)
{
    return &g_array_index(cache->nodes, KbNodeInfo, id);
}

static void node_refresh_idle(KbNodeInfo *ni)
{
    ni->idle = ni->allocatable;
    kb_resources_sub(&ni->idle, &ni->used);
}

static NodeGpu *node_gpu_at(KbCache *cache, guint id)
{
    return &g_array_index(cache->node_gpus, NodeGpu, id);
}

static void node_gpu_clear(NodeGpu *ng)
{
    g_clear_pointer(&ng->topology, g_free);
    g_clear_pointer(&ng->annotation, g_free);
    ng->n_gpus = 0;
}

static void node_copy_islands(KbNodeInfo *ni, const KbGpuTopology *topo)
{
    ni->gpu_topology = topo;
    ni->gpu_all = topo != NULL ? topo->all : 0;
    ni->n_gpu_islands = topo != NULL ? topo->first[1] - topo->first[0] : 0;
    for (guint i = 0; i < MIN(ni->n_gpu_islands, KB_GPU_INLINE_ISLANDS); i++)
        ni->gpu_islands[i] = topo->groups[topo->first[0] + i];
}

/*
 * Rack, zone and GPU topology of @node, parsed here once per change of the annotation or of the
 * GPU count (never in the cycle). A malformed annotation is logged and counted once per value,
 * and the node is one island.
 */
static void node_set_topology(KbCache *cache, KbNodeInfo *ni, KbNode *node)
{
    const char *rack = g_hash_table_lookup(node->meta.labels, KB_RACK_LABEL);
    const char *zone = g_hash_table_lookup(node->meta.labels, KB_ZONE_LABEL);
    ni->rack = rack != NULL ? g_intern_string(rack) : NULL;
    ni->zone = zone != NULL ? g_intern_string(zone) : NULL;
    NodeGpu *ng = node_gpu_at(cache, ni->id);
    const char *text = g_hash_table_lookup(node->meta.annotations, KB_GPU_TOPOLOGY_ANNOTATION);
    gint64 n = MAX(node->allocatable.v[KB_RES_GPU] / KB_GPU_MILLI, 0);
    if (ng->n_gpus == n && g_strcmp0(ng->annotation, text) == 0 && (n == 0 || ng->topology))
        return;
    gboolean seen = g_strcmp0(ng->annotation, text) == 0;
    node_gpu_clear(ng);
    ng->annotation = g_strdup(text);
    ng->n_gpus = n;
    g_autoptr(GError) error = NULL;
    ng->topology = kb_cache_gpu_topology_new(text, n, &error);
    if (error != NULL) {
        if (!seen) {
            g_warning("node %s: annotation %s: %s; treating the node as one GPU island", ni->name,
                      KB_GPU_TOPOLOGY_ANNOTATION, error->message);
            cache->n_gpu_topology_errors++;
        }
        ng->topology = kb_cache_gpu_topology_new(NULL, n, NULL);
    }
    node_copy_islands(ni, ng->topology);
}

static void node_set(KbCache *cache, KbNode *node)
{
    KbNodeInfo *ni = node_at(cache, node_id_for(cache, node->meta.name));
    kb_object_ref(node);
    g_clear_pointer(&ni->node, kb_object_unref);
    ni->node = node;
    ni->present = TRUE;
    ni->allocatable = node->allocatable;
    kb_dra_node_capacity(cache->dra, ni->name, &ni->allocatable);
    node_refresh_idle(ni);
    node_set_topology(cache, ni, node);
}

void kb_cache_add_node(KbCache *cache, KbNode *node)
{
    node_set(cache, node);
}

void kb_cache_update_node(KbCache *cache, KbNode *node)
{
    node_set(cache, node);
}

void kb_cache_delete_node(KbCache *cache, KbNode *node)
{
    KbNodeInfo *ni = kb_cache_lookup_node(cache, node->meta.name);
    if (ni == NULL)
        return;
    /* The slot stays (pods may still name it); a deleted node offers nothing. */
    g_clear_pointer(&ni->node, kb_object_unref);
    ni->present = FALSE;
    kb_resources_clear(&ni->allocatable);
    node_refresh_idle(ni);
    /* Pods still counted here keep their holders; a node that comes back is parsed afresh. */
    node_copy_islands(ni, NULL);
    ni->rack = ni->zone = NULL;
    node_gpu_clear(node_gpu_at(cache, ni->id));
}

/* ---- accounting ----------------------------------------------------------------------------- */

/* Where the pod should be counted, given its object and its task's state. */
static gint pod_desired_node(KbCache *cache, PodEntry *pe)
{
    if (kb_pod_is_terminated(pe->pod))
        return -1;
    if (pe->pod->node_name != NULL)
        return (gint)node_id_for(cache, pe->pod->node_name);
    if (pe->task != NULL &&
        (pe->task->state == KB_TASK_ALLOCATED || pe->task->state == KB_TASK_BINDING))
        return pe->task->node_id;
    return -1;
}

/* The lowest @k indices of @mask (fewer when @mask has fewer). */
static guint64 lowest_bits(guint64 mask, gint64 k)
{
    guint64 out = 0;
    for (; k > 0 && mask != 0; k--) {
        guint64 bit = mask & -mask;
        out |= bit;
        mask &= ~bit;
    }
    return out;
}

static int popcount64(guint64 m)
{
    return __builtin_popcountll(m);
}

/* Add (@delta 1) or remove (-1) the hold of @gpus on node @id. */
static void node_hold_gpus(KbCache *cache, guint id, guint64 gpus, int delta)
{
    NodeGpu *ng = node_gpu_at(cache, id);
    KbNodeInfo *ni = node_at(cache, id);
    for (; gpus != 0; gpus &= gpus - 1) {
        int i = __builtin_ctzll(gpus);
        ng->holders[i] = (guint32)((gint64)ng->holders[i] + delta);
        if (ng->holders[i] > 0)
            ni->gpu_used |= G_GUINT64_CONSTANT(1) << i;
        else
            ni->gpu_used &= ~(G_GUINT64_CONSTANT(1) << i);
    }
}

/*
 * The GPU indices the pod holds on node @node when they are known: for an assumed pod the ones the
 * cycle chose; for a bound pod its gpu-ids annotation, else the ones the cycle chose; else the
 * ones it was already counted with there. 0 when the pod asks no GPU or nothing says which.
 */
static guint64 pod_known_gpus(PodEntry *pe, gint node)
{
    gint64 k = kb_resource_whole_gpus(pe->pod->requests.v[KB_RES_GPU]);
    if (k <= 0)
        return 0;
    guint64 chosen = pe->task != NULL ? pe->task->gpu_ids : 0;
    if (pe->pod->node_name == NULL && popcount64(chosen) == k)
        return chosen; /* assumed: an annotation left by an earlier failed bind is stale */
    const char *text = g_hash_table_lookup(pe->pod->meta.annotations, KB_GPU_IDS_ANNOTATION);
    guint64 ids = 0;
    if (text != NULL && kb_cache_gpu_ids_parse(text, &ids, NULL) && popcount64(ids) == k)
        return ids;
    if (popcount64(chosen) == k)
        return chosen;
    if (pe->counted_node == node && popcount64(pe->counted_gpus) == k)
        return pe->counted_gpus;
    return 0;
}

/*
 * A pod that says nothing about its GPUs (another scheduler's, or bound before gpu-ids existed)
 * is assumed to hold the lowest free indices of its node: the count is exact, the indices an
 * approximation, so that placements never hand out more indices than the node has free.
 */
static guint64 pod_guess_gpus(KbCache *cache, PodEntry *pe, guint node)
{
    const KbNodeInfo *ni = node_at(cache, node);
    guint64 all = ni->gpu_topology != NULL ? ni->gpu_all : G_MAXUINT64;
    return lowest_bits(all & ~ni->gpu_used,
                       kb_resource_whole_gpus(pe->pod->requests.v[KB_RES_GPU]));
}

/* What @pe's pod is counted with: its containers' requests and its claims' DRA demand (dra.h),
 * counted again only when what it was counted from changed (a pod update that leaves its
 * claims alone, the most frequent kind, recounted it twice). */
static KbResources pod_requests(KbCache *cache, PodEntry *pe)
{
    const KbPod *pod = pe->pod;
    KbResources r = pod->requests;
    if (pod->n_resource_claims == 0)
        return r;
    if (!pe->dra_kept || !kb_dra_pod_demand_current(cache->dra, pod, &pe->dra_stamp)) {
        kb_resources_clear(&pe->dra_demand);
        kb_dra_pod_demand_stamped(cache->dra, pod, &pe->dra_demand, &pe->dra_stamp);
        pe->dra_kept = TRUE;
    }
    kb_resources_add(&r, &pe->dra_demand);
    return r;
}

/* @a and @b name the same claims (templates, and the claims made from them), so that what @a's
 * claims demand is @b's while none of these claims changes. */
static gboolean pod_claims_same(const KbPod *a, const KbPod *b)
{
    if (a->n_resource_claims != b->n_resource_claims ||
        g_strcmp0(a->meta.namespace_, b->meta.namespace_) != 0)
        return FALSE;
    for (guint i = 0; i < a->n_resource_claims; i++) {
        if (g_strcmp0(a->resource_claims[i].template_name, b->resource_claims[i].template_name) !=
                    0 ||
            g_strcmp0(kb_pod_resource_claim_name(a, i), kb_pod_resource_claim_name(b, i)) != 0)
            return FALSE;
    }
    return TRUE;
}

static void pod_recount(KbCache *cache, PodEntry *pe)
{
    gint want = pod_desired_node(cache, pe);
    /* The devices a cycle chose for the pod are held while it is placed and not yet seen bound;
     * once bound (or back to pending, or finished) the claims' own status counts them. */
    if (pe->pod->n_resource_claims > 0 && (want < 0 || pe->pod->node_name != NULL))
        kb_dra_release(cache->dra, pe->pod->meta.uid);
    guint64 gpus = want >= 0 ? pod_known_gpus(pe, want) : 0;
    KbResources req = want >= 0 ? pod_requests(cache, pe) : pe->pod->requests;
    if (want == pe->counted_node &&
        (want == -1 || (kb_resources_equal(&pe->counted, &req) && gpus == pe->counted_gpus)))
        return;
    if (pe->counted_node >= 0) {
        KbNodeInfo *ni = node_at(cache, (guint)pe->counted_node);
        kb_resources_sub(&ni->used, &pe->counted);
        ni->n_pods--;
        node_refresh_idle(ni);
        node_hold_gpus(cache, (guint)pe->counted_node, pe->counted_gpus, -1);
        pe->counted_gpus = 0;
    }
    pe->counted_node = want;
    if (want >= 0) {
        KbNodeInfo *ni = node_at(cache, (guint)want);
        pe->counted = req;
        kb_resources_add(&ni->used, &pe->counted);
        ni->n_pods++;
        node_refresh_idle(ni);
        pe->counted_gpus = gpus != 0 ? gpus : pod_guess_gpus(cache, pe, (guint)want);
        node_hold_gpus(cache, (guint)want, pe->counted_gpus, 1);
    }
}

/* Move @task to @state on @node_id, keeping job counters and job allocation in step. */
static void task_set_state(KbTaskInfo *task, KbTaskState state, gint node_id)
{
    KbJobInfo *job = task->job;
    if (state_occupies(task->state))
        kb_resources_sub(&job->allocated, &task->resreq);
    job->n_state[task->state]--;
    /* GPU indices chosen for a node the task leaves (set by the cycle just before assuming). */
    if (node_id < 0 || (task->node_id >= 0 && task->node_id != node_id))
        task->gpu_ids = 0;
    if (state != KB_TASK_ALLOCATED)
        task->bind_refused = FALSE;
    task->state = state;
    task->node_id = node_id;
    job->n_state[state]++;
    if (state_occupies(state))
        kb_resources_add(&job->allocated, &task->resreq);
}

/* @task's requests become @req, its job's allocation following. */
static void task_set_requests(KbTaskInfo *task, const KbResources *req)
{
    gboolean occ = state_occupies(task->state);
    if (occ)
        kb_resources_sub(&task->job->allocated, &task->resreq);
    task->resreq = *req;
    if (occ)
        kb_resources_add(&task->job->allocated, &task->resreq);
}

/* ---- queues and priority classes ------------------------------------------------------------ */

static KbQueueInfo *queue_info_new(KbCache *cache, const char *name)
{
    KbQueueInfo *qi = g_new0(KbQueueInfo, 1);
    qi->name = g_intern_string(name);
    qi->weight = 1;
    kb_resources_set_unlimited(&qi->capability);
    qi->open = TRUE;
    qi->id = cache->queue_list->len;
    g_ptr_array_add(cache->queue_list, qi);
    g_hash_table_insert(cache->queues, (gpointer)qi->name, qi);
    return qi;
}

static void queue_info_free(gpointer p)
{
    KbQueueInfo *qi = p;
    g_clear_pointer(&qi->queue, kb_object_unref);
    g_free(qi->last_fault);
    g_free(qi);
}

static void queue_set(KbCache *cache, KbQueue *queue)
{
    KbQueueInfo *qi = kb_cache_lookup_queue(cache, queue->meta.name);
    if (qi == NULL)
        qi = queue_info_new(cache, queue->meta.name);
    kb_object_ref(queue);
    g_clear_pointer(&qi->queue, kb_object_unref);
    qi->queue = queue;
    qi->weight = queue->weight >= 1 ? queue->weight : 1;
    qi->capability = queue->capability;
    qi->guarantee = queue->guarantee;
    qi->open = queue->open;
    /* Decayed usage a kube-batchd wrote before (a restart, or another leader): adopted when newer
     * than ours, before any cycle reads it. */
    if (queue->usage_time > 0)
        kb_usage_restore(cache->usage, qi->name, queue->usage, queue->usage_time);
    if (queue->history != NULL)
        kb_history_restore(cache->history, qi->name, queue->history);
}

void kb_cache_add_queue(KbCache *cache, KbQueue *queue)
{
    queue_set(cache, queue);
}

void kb_cache_update_queue(KbCache *cache, KbQueue *queue)
{
    queue_set(cache, queue);
}

void kb_cache_delete_queue(KbCache *cache, KbQueue *queue)
{
    KbQueueInfo *qi = kb_cache_lookup_queue(cache, queue->meta.name);
    if (qi == NULL)
        return;
    if (qi->name == cache->default_queue) {
        /* The default queue always exists: back to its implicit settings. */
        g_clear_pointer(&qi->queue, kb_object_unref);
        qi->weight = 1;
        kb_resources_set_unlimited(&qi->capability);
        kb_resources_clear(&qi->guarantee);
        qi->open = TRUE;
        return;
    }
    g_hash_table_remove(cache->queues, qi->name);
    guint id = qi->id;
    g_ptr_array_steal_index_fast(cache->queue_list, id);
    if (id < cache->queue_list->len)
        ((KbQueueInfo *)cache->queue_list->pdata[id])->id = id;
    queue_info_free(qi);
}

void kb_cache_add_pvc(KbCache *cache, KbPvc *pvc)
{
    g_hash_table_replace(cache->pvcs, kb_object_key(&pvc->meta), kb_object_ref(pvc));
}

void kb_cache_update_pvc(KbCache *cache, KbPvc *pvc)
{
    kb_cache_add_pvc(cache, pvc);
}

void kb_cache_delete_pvc(KbCache *cache, KbPvc *pvc)
{
    g_autofree char *key = kb_object_key(&pvc->meta);
    g_hash_table_remove(cache->pvcs, key);
}

KbDra *kb_cache_dra(KbCache *cache)
{
    return cache->dra;
}

KbFragModel *kb_cache_fragment(KbCache *cache)
{
    return cache->fragment;
}

gboolean kb_cache_pod_claims_ready(KbCache *cache, const KbPod *pod, char **why)
{
    for (guint i = 0; i < pod->n_claims; i++) {
        const KbPodClaim *c = &pod->claims[i];
        /* A generic ephemeral volume's claim is named after the pod and the volume. */
        g_autofree char *key = c->claim != NULL
                                       ? g_strdup_printf("%s/%s", pod->meta.namespace_, c->claim)
                                       : g_strdup_printf("%s/%s-%s", pod->meta.namespace_,
                                                         pod->meta.name, c->volume);
        const KbPvc *pvc = g_hash_table_lookup(cache->pvcs, key);
        if (pvc != NULL && g_strcmp0(pvc->phase, "Bound") == 0)
            continue;
        if (why != NULL)
            *why = pvc == NULL ? g_strdup_printf("persistentvolumeclaim \"%s\" not found", key)
                               : g_strdup_printf("persistentvolumeclaim \"%s\" is not bound "
                                                 "(phase %s)",
                                                 key, pvc->phase != NULL ? pvc->phase : "unset");
        return FALSE;
    }
    return TRUE;
}

void kb_cache_add_priority_class(KbCache *cache, KbPriorityClass *pc)
{
    g_hash_table_replace(cache->priority_classes, (gpointer)g_intern_string(pc->meta.name),
                         kb_object_ref(pc));
}

void kb_cache_update_priority_class(KbCache *cache, KbPriorityClass *pc)
{
    kb_cache_add_priority_class(cache, pc);
}

void kb_cache_delete_priority_class(KbCache *cache, KbPriorityClass *pc)
{
    g_hash_table_remove(cache->priority_classes, g_intern_string(pc->meta.name));
}

gint32 kb_cache_priority_class_value(const KbCache *cache, const char *name, gboolean *found)
{
    KbPriorityClass *pc = name != NULL ? g_hash_table_lookup(cache->priority_classes, name) : NULL;
    if (found != NULL)
        *found = pc != NULL;
    if (pc != NULL)
        return pc->value;
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, cache->priority_classes);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        if (((KbPriorityClass *)v)->global_default)
            return ((KbPriorityClass *)v)->value;
    }
    return 0;
}

gboolean kb_cache_priority_class_preempt_never(const KbCache *cache, const char *name)
{
    const KbPriorityClass *pc =
            name != NULL ? g_hash_table_lookup(cache->priority_classes, g_intern_string(name))
                         : NULL;
    return pc != NULL && pc->preempt_never;
}

gint32 kb_cache_pod_priority(const KbCache *cache, const KbPod *pod)
{
    if (pod->has_priority)
        return pod->priority;
    return kb_cache_priority_class_value(cache, pod->priority_class_name, NULL);
}

/* ---- jobs, tasks and equivalence classes ---------------------------------------------------- */

static gboolean str_maps_equal(GHashTable *a, GHashTable *b)
{
    if (g_hash_table_size(a) != g_hash_table_size(b))
        return FALSE;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, a);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        gpointer w;
        if (!g_hash_table_lookup_extended(b, k, NULL, &w) || g_strcmp0(v, w) != 0)
            return FALSE;
    }
    return TRUE;
}

static gboolean terms_equal(const KbPod *a, const KbPod *b)
{
    if (a->n_affinity_terms != b->n_affinity_terms)
        return FALSE;
    for (guint t = 0; t < a->n_affinity_terms; t++) {
        const KbNodeSelectorTerm *x = &a->affinity_terms[t], *y = &b->affinity_terms[t];
        if (x->n_exprs != y->n_exprs)
            return FALSE;
        for (guint e = 0; e < x->n_exprs; e++) {
            const KbSelectorRequirement *r = &x->exprs[e], *s = &y->exprs[e];
            if (r->key != s->key || r->op != s->op || r->match_field != s->match_field ||
                r->n_values != s->n_values)
                return FALSE;
            for (guint i = 0; i < r->n_values; i++) {
                if (g_strcmp0(r->values[i], s->values[i]) != 0)
                    return FALSE;
            }
        }
    }
    return TRUE;
}

static gboolean tolerations_equal(const KbPod *a, const KbPod *b)
{
    if (a->n_tolerations != b->n_tolerations)
        return FALSE;
    for (guint i = 0; i < a->n_tolerations; i++) {
        const KbToleration *x = &a->tolerations[i], *y = &b->tolerations[i];
        if (g_strcmp0(x->key, y->key) != 0 || x->op_exists != y->op_exists ||
            g_strcmp0(x->value, y->value) != 0 || x->effect != y->effect)
            return FALSE;
    }
    return TRUE;
}

/* Same template as far as feasibility and score go. */
static gboolean pods_equivalent(const KbPod *a, const KbPod *b)
{
    return kb_resources_equal(&a->requests, &b->requests) &&
           a->priority_class_name == b->priority_class_name && a->priority == b->priority &&
           a->has_priority == b->has_priority && a->meta.namespace_ == b->meta.namespace_ &&
           str_maps_equal(a->node_selector, b->node_selector) && terms_equal(a, b) &&
           tolerations_equal(a, b);
}

static void class_free(gpointer p)
{
    KbTaskClass *c = p;
    kb_object_unref((gpointer)c->rep);
    g_free(c);
}

static void task_join_class(KbTaskInfo *task)
{
    KbJobInfo *job = task->job;
    for (guint i = 0; i < job->classes->len; i++) {
        KbTaskClass *c = job->classes->pdata[i];
        if (pods_equivalent(c->rep, task->pod) && kb_resources_equal(&c->resreq, &task->resreq)) {
            c->n_tasks++;
            task->klass = c;
            return;
        }
    }
    KbTaskClass *c = g_new0(KbTaskClass, 1);
    c->rep = kb_object_ref(task->pod);
    c->resreq = task->resreq;
    c->n_tasks = 1;
    c->index = job->classes->len;
    g_ptr_array_add(job->classes, c);
    task->klass = c;
}

static void task_leave_class(KbTaskInfo *task)
{
    KbTaskClass *c = task->klass;
    KbJobInfo *job = task->job;
    task->klass = NULL;
    if (--c->n_tasks > 0)
        return;
    guint idx = c->index;
    g_ptr_array_remove_index_fast(job->classes, idx); /* frees c */
    if (idx < job->classes->len)
        ((KbTaskClass *)job->classes->pdata[idx])->index = idx;
}

static void job_free(gpointer p)
{
    KbJobInfo *job = p;
    g_free(job->key);
    g_free(job->name);
    g_clear_pointer(&job->group, kb_object_unref);
    g_ptr_array_unref(job->children);
    g_ptr_array_unref(job->tasks);
    g_ptr_array_unref(job->classes);
    g_free(job->last_reason);
    g_free(job->last_message);
    g_free(job->bind_error);
    g_free(job->stale_message);
    g_free(job->stale_lost);
    g_free(job);
}

/* Kinds of job: 'g' a group, 'c' a composite (its name may be a PodGroup's too), 'p' a pod. */
static char *job_hash_key(char kind, const char *ns, const char *name)
{
    return g_strdup_printf("%c:%s/%s", kind, ns != NULL ? ns : "", name);
}

static char job_kind(const KbJobInfo *job)
{
    return job->is_composite ? 'c' : job->is_group ? 'g' : 'p';
}

static KbJobInfo *job_get_kind(KbCache *cache, char kind, const char *ns, const char *name,
                               gboolean create)
{
    gboolean is_group = kind != 'p';
    g_autofree char *hk = job_hash_key(kind, ns, name);
    KbJobInfo *job = g_hash_table_lookup(cache->jobs, hk);
    if (job != NULL || !create)
        return job;
    job = g_new0(KbJobInfo, 1);
    job->version = 1;
    job->key = g_strdup_printf("%s/%s", ns != NULL ? ns : "", name);
    job->namespace_ = g_intern_string(ns != NULL ? ns : "");
    job->name = g_strdup(name);
    job->is_group = is_group;
    job->is_composite = kind == 'c';
    job->children = g_ptr_array_new_with_free_func(kb_object_unref);
    job->group_missing = is_group;
    job->queue = cache->default_queue;
    job->min_member = 1;
    job->phase = KB_JOB_PENDING;
    job->tasks = g_ptr_array_new();
    job->classes = g_ptr_array_new_with_free_func(class_free);
    job->id = cache->job_list->len;
    g_ptr_array_add(cache->job_list, job);
    g_hash_table_insert(cache->jobs, g_steal_pointer(&hk), job);
    return job;
}

static KbJobInfo *job_get(KbCache *cache, gboolean is_group, const char *ns, const char *name,
                          gboolean create)
{
    return job_get_kind(cache, is_group ? 'g' : 'p', ns, name, create);
}

/* Drop @job when nothing refers to it any more. */
static void job_maybe_remove(KbCache *cache, KbJobInfo *job)
{
    if (job->tasks->len > 0 || job->group != NULL || job->children->len > 0)
        return;
    g_autofree char *hk = job_hash_key(job_kind(job), job->namespace_, job->name);
    g_hash_table_remove(cache->jobs, hk);
    guint id = job->id;
    g_ptr_array_steal_index_fast(cache->job_list, id);
    if (id < cache->job_list->len)
        ((KbJobInfo *)cache->job_list->pdata[id])->id = id;
    job_free(job);
}

/* A native group without a queue of its own takes its Workload's, else the default. */
static const char *group_queue(const KbCache *cache, const KbPodGroup *group)
{
    if (group->queue != NULL)
        return g_intern_string(group->queue);
    if (group->dialect == KB_PODGROUP_NATIVE && group->workload_name != NULL) {
        g_autofree char *key = g_strdup_printf(
                "%s/%s", group->meta.namespace_ != NULL ? group->meta.namespace_ : "",
                group->workload_name);
        const char *q = g_hash_table_lookup(cache->workload_queues, key);
        if (q != NULL && *q != '\0')
            return q;
    }
    return cache->default_queue;
}

static void job_apply_group(KbCache *cache, KbJobInfo *job, KbPodGroup *group)
{
    kb_object_ref(group);
    g_clear_pointer(&job->group, kb_object_unref);
    job->group = group;
    job->version++;
    job->group_missing = FALSE;
    job->min_member = group->min_member >= 1 ? group->min_member : 1;
    job->queue = group_queue(cache, group);
    job->creation_timestamp = group->meta.creation_timestamp;
    if (!job->reported && group->phase != NULL) {
        /* Resume from the phase written by a previous run (or another replica). */
        if (strcmp(group->phase, "Inqueue") == 0)
            job->phase = KB_JOB_INQUEUE;
        else if (strcmp(group->phase, "Running") == 0)
            job->phase = KB_JOB_RUNNING;
    }
}

static KbTaskState task_state_from_pod(const KbPod *pod, KbTaskState current)
{
    if (pod->phase == KB_POD_SUCCEEDED)
        return KB_TASK_SUCCEEDED;
    if (pod->phase == KB_POD_FAILED)
        return KB_TASK_FAILED;
    if (pod->node_name != NULL) {
        if (pod->meta.deletion_timestamp != 0)
            return KB_TASK_RELEASING;
        return pod->phase == KB_POD_RUNNING ? KB_TASK_RUNNING : KB_TASK_BOUND;
    }
    if (current == KB_TASK_ALLOCATED || current == KB_TASK_BINDING)
        return current;
    return KB_TASK_PENDING;
}

static gboolean serves(const KbCache *cache, const char *scheduler_name)
{
    for (guint i = 0; cache->served[i] != NULL; i++) {
        if (cache->served[i] == scheduler_name || g_strcmp0(cache->served[i], scheduler_name) == 0)
            return TRUE;
    }
    return FALSE;
}

void kb_cache_set_extender(KbCache *cache, gboolean enabled)
{
    cache->extender = enabled;
}

void kb_cache_set_extender_names(KbCache *cache, const char *const *names)
{
    g_clear_pointer(&cache->extender_names, g_free);
    guint n = names != NULL ? g_strv_length((char **)names) : 0;
    if (n == 0)
        return;
    cache->extender_names = g_new0(const char *, n + 1);
    for (guint i = 0; i < n; i++)
        cache->extender_names[i] = g_intern_string(names[i]);
}

static gboolean extender_name(const KbCache *cache, const char *scheduler_name)
{
    if (cache->extender_names == NULL)
        return !serves(cache, scheduler_name);
    for (guint i = 0; cache->extender_names[i] != NULL; i++) {
        if (g_strcmp0(cache->extender_names[i], scheduler_name) == 0)
            return !serves(cache, scheduler_name);
    }
    return FALSE;
}

gboolean kb_cache_extender_manages(const KbCache *cache, const KbPod *pod)
{
    return cache->extender && extender_name(cache, pod->scheduler_name) &&
           (pod->group_name != NULL || pod->requests.v[KB_RES_GPU] > 0);
}

gboolean kb_cache_task_is_extender(const KbCache *cache, const KbTaskInfo *task)
{
    return cache->extender && !serves(cache, task->pod->scheduler_name);
}

void kb_cache_foreach_pod(KbCache *cache, KbCachePodFunc func, gpointer user_data)
{
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, cache->pods);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PodEntry *pe = v;
        func(pe->pod, pe->task, pe->counted_node, &pe->counted, user_data);
    }
}

/* The parent CompositePodGroup @pod's PodGroup names (borrowed), or NULL. */
static const char *pod_parent(const KbCache *cache, const KbPod *pod)
{
    if (pod->group_name == NULL || g_hash_table_size(cache->children) == 0)
        return NULL;
    g_autofree char *key = g_strdup_printf(
            "%s/%s", pod->meta.namespace_ != NULL ? pod->meta.namespace_ : "", pod->group_name);
    const KbPodGroup *child = g_hash_table_lookup(cache->children, key);
    return child != NULL ? child->parent : NULL;
}

/* The job @pod belongs in: its group's parent composite, its group, or its own. */
static KbJobInfo *pod_job(KbCache *cache, const KbPod *pod, gboolean create)
{
    const char *parent = pod_parent(cache, pod);
    if (parent != NULL)
        return job_get_kind(cache, 'c', pod->meta.namespace_, parent, create);
    gboolean is_group = pod->group_name != NULL;
    return job_get(cache, is_group, pod->meta.namespace_,
                   is_group ? pod->group_name : pod->meta.name, create);
}

/* A task that may change job: Pending, on no node, not being evicted (nothing placed is lost). */
static gboolean task_movable(const KbTaskInfo *task)
{
    return task->state == KB_TASK_PENDING && task->node_id < 0 && !task->evicting &&
           task->pod->node_name == NULL;
}

/* @task's job is not the one its pod's group now resolves to. */
static gboolean task_misplaced(KbCache *cache, const KbTaskInfo *task, const KbPod *pod)
{
    return pod_job(cache, pod, FALSE) != task->job;
}

static KbTaskInfo *task_new(KbCache *cache, PodEntry *pe)
{
    KbPod *pod = pe->pod;
    gboolean is_group = pod->group_name != NULL;
    KbJobInfo *job = pod_job(cache, pod, TRUE);
    KbTaskInfo *task = g_new0(KbTaskInfo, 1);
    task->pod = kb_object_ref(pod);
    task->job = job;
    task->node_id = -1;
    task->state = KB_TASK_PENDING;
    task->resreq = pod_requests(cache, pe);
    task->priority = kb_cache_pod_priority(cache, pod);
    task->index = job->tasks->len;
    g_ptr_array_add(job->tasks, task);
    job->version++;
    job->n_state[KB_TASK_PENDING]++;
    if (!is_group && job->creation_timestamp == 0)
        job->creation_timestamp = pod->meta.creation_timestamp;
    task_join_class(task);
    return task;
}

static void task_remove(KbCache *cache, KbTaskInfo *task)
{
    KbJobInfo *job = task->job;
    task_set_state(task, KB_TASK_PENDING, -1);
    job->n_state[KB_TASK_PENDING]--;
    task_leave_class(task);
    guint idx = task->index;
    g_ptr_array_remove_index_fast(job->tasks, idx);
    job->version++;
    if (idx < job->tasks->len)
        ((KbTaskInfo *)job->tasks->pdata[idx])->index = idx;
    kb_object_unref(task->pod);
    g_free(task);
    job_maybe_remove(cache, job);
}

static void pod_entry_free(gpointer p)
{
    PodEntry *pe = p;
    kb_object_unref(pe->pod);
    g_free(pe);
}

static char *pod_key(const char *ns, const char *name)
{
    return g_strdup_printf("%s/%s", ns != NULL ? ns : "", name);
}

static void pod_entry_remove(KbCache *cache, PodEntry *pe)
{
    /* Release node resources first: recount sees a terminated-like state with task gone. */
    if (pe->counted_node >= 0) {
        KbNodeInfo *ni = node_at(cache, (guint)pe->counted_node);
        kb_resources_sub(&ni->used, &pe->counted);
        ni->n_pods--;
        node_refresh_idle(ni);
        node_hold_gpus(cache, (guint)pe->counted_node, pe->counted_gpus, -1);
        pe->counted_gpus = 0;
        pe->counted_node = -1;
    }
    pe->task = NULL;
}

/* A job whose last pod just succeeded is a runtime sample (history.h). */
static void record_finished(KbCache *cache, const KbTaskInfo *task)
{
    const KbJobInfo *job = task->job;
    if (task->bind_time <= 0 || job->n_state[KB_TASK_SUCCEEDED] != job->tasks->len)
        return;
    gint64 gpus = 0;
    for (guint i = 0; i < job->tasks->len; i++)
        gpus += ((const KbTaskInfo *)job->tasks->pdata[i])->resreq.v[KB_RES_GPU];
    kb_history_finished(cache->history, job->queue, kb_resource_whole_gpus(gpus), task->bind_time);
}

KbHistory *kb_cache_history(KbCache *cache)
{
    return cache->history;
}

KbUsage *kb_cache_usage(KbCache *cache)
{
    return cache->usage;
}

void kb_cache_add_pod(KbCache *cache, KbPod *pod)
{
    kb_cache_update_pod(cache, pod);
}

void kb_cache_update_pod(KbCache *cache, KbPod *pod)
{
    g_autofree char *key = pod_key(pod->meta.namespace_, pod->meta.name);
    PodEntry *pe = g_hash_table_lookup(cache->pods, key);
    if (pe != NULL &&
        (g_strcmp0(pe->pod->meta.uid, pod->meta.uid) != 0 ||
         (pe->task != NULL && g_strcmp0(pe->task->pod->group_name, pod->group_name) != 0) ||
         (pe->task != NULL && task_movable(pe->task) && task_misplaced(cache, pe->task, pod)))) {
        /* Recreated under the same name, moved to another group, or its group to another
         * composite while nothing of it is placed: start over. */
        kb_cache_delete_pod(cache, pe->pod);
        pe = NULL;
    }
    if (pe == NULL) {
        pe = g_new0(PodEntry, 1);
        pe->pod = kb_object_ref(pod);
        pe->counted_node = -1;
        if (serves(cache, pod->scheduler_name) || kb_cache_extender_manages(cache, pod))
            pe->task = task_new(cache, pe);
        g_hash_table_insert(cache->pods, g_steal_pointer(&key), pe);
    } else {
        if (pe->dra_kept && !pod_claims_same(pe->pod, pod))
            pe->dra_kept = FALSE;
        kb_object_ref(pod);
        kb_object_unref(pe->pod);
        pe->pod = pod;
    }
    KbTaskInfo *task = pe->task;
    if (task != NULL) {
        if (task->pod != pod) {
            KbResources req = pod_requests(cache, pe);
            gboolean same =
                    pods_equivalent(task->pod, pod) && kb_resources_equal(&req, &task->resreq);
            if (!same)
                task_leave_class(task);
            kb_object_ref(pod);
            kb_object_unref(task->pod);
            task->pod = pod;
            task->job->version++;
            task_set_requests(task, &req);
            task->priority = kb_cache_pod_priority(cache, pod);
            if (!same)
                task_join_class(task);
        }
        KbTaskState st = task_state_from_pod(pod, task->state);
        if (task->evicting && (st == KB_TASK_BOUND || st == KB_TASK_RUNNING))
            st = KB_TASK_RELEASING;
        gint node = -1;
        if (pod->node_name != NULL)
            node = (gint)node_id_for(cache, pod->node_name);
        else if (st == KB_TASK_ALLOCATED || st == KB_TASK_BINDING)
            node = task->node_id;
        KbTaskState was = task->state;
        task_set_state(task, st, node);
        if (st == KB_TASK_SUCCEEDED && was != KB_TASK_SUCCEEDED)
            record_finished(cache, task);
    }
    pod_recount(cache, pe);
    pe->dra_gen = kb_dra_demand_gen(cache->dra);
}

void kb_cache_delete_pod(KbCache *cache, KbPod *pod)
{
    g_autofree char *key = pod_key(pod->meta.namespace_, pod->meta.name);
    PodEntry *pe = g_hash_table_lookup(cache->pods, key);
    if (pe == NULL)
        return;
    KbTaskInfo *task = pe->task;
    if (pe->pod->n_resource_claims > 0)
        kb_dra_release(cache->dra, pe->pod->meta.uid);
    pod_entry_remove(cache, pe);
    if (task != NULL)
        task_remove(cache, task);
    g_hash_table_remove(cache->pods, key);
}

/* Count @pe's DRA demand again (a template, the devices published or its claims' allocation
 * changed). */
static void pod_resync_dra(KbCache *cache, PodEntry *pe, guint dem)
{
    pe->dra_gen = dem;
    KbTaskInfo *task = pe->task;
    KbResources req = pod_requests(cache, pe);
    if (task != NULL && !kb_resources_equal(&req, &task->resreq)) {
        task_leave_class(task);
        task_set_requests(task, &req);
        task_join_class(task);
        task->job->version++;
    }
    pod_recount(cache, pe);
}

void kb_cache_sync_dra(KbCache *cache)
{
    guint cap = kb_dra_capacity_gen(cache->dra), dem = kb_dra_demand_gen(cache->dra);
    if (cap != cache->dra_capacity_gen) {
        cache->dra_capacity_gen = cap;
        for (guint id = 0; id < cache->nodes->len; id++) {
            KbNodeInfo *ni = node_at(cache, id);
            if (!ni->present)
                continue;
            ni->allocatable = ni->node->allocatable;
            kb_dra_node_capacity(cache->dra, ni->name, &ni->allocatable);
            node_refresh_idle(ni);
        }
    }
    /* pods whose claims were seen allocated count what their devices consume */
    g_autoptr(GHashTable) recount = kb_dra_take_recount(cache->dra);
    if (recount != NULL) {
        GHashTableIter it;
        gpointer k;
        g_hash_table_iter_init(&it, recount);
        while (g_hash_table_iter_next(&it, &k, NULL)) {
            PodEntry *pe = g_hash_table_lookup(cache->pods, k);
            if (pe != NULL && pe->pod->n_resource_claims > 0)
                pod_resync_dra(cache, pe, dem);
        }
    }
    if (dem == cache->dra_demand_gen)
        return;
    cache->dra_demand_gen = dem;
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, cache->pods);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PodEntry *pe = v;
        if (pe->pod->n_resource_claims == 0 || pe->dra_gen == dem)
            continue;
        pod_resync_dra(cache, pe, dem);
    }
}

/* ---- pod groups ----------------------------------------------------------------------------- */

/* The group of job (@kind, ns, name) is gone: its pods wait. */
static void job_lose_group(KbCache *cache, char kind, const char *ns, const char *name)
{
    KbJobInfo *job = job_get_kind(cache, kind, ns, name, FALSE);
    if (job == NULL || job->group == NULL)
        return;
    g_clear_pointer(&job->group, kb_object_unref);
    job->version++;
    job->group_missing = TRUE;
    job->queue = cache->default_queue;
    job_maybe_remove(cache, job);
}

/* Pods of group ns/@name whose job no longer matches re-enter the cache (movable ones only). */
static void group_rekey(KbCache *cache, const char *ns, const char *name)
{
    g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func(kb_object_unref);
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, cache->pods);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PodEntry *pe = v;
        if (pe->task != NULL && g_strcmp0(pe->pod->group_name, name) == 0 &&
            g_strcmp0(pe->pod->meta.namespace_, ns) == 0)
            g_ptr_array_add(pods, kb_object_ref(pe->pod));
    }
    for (guint i = 0; i < pods->len; i++)
        kb_cache_update_pod(cache, pods->pdata[i]);
}

/* Child ns/name of a composite: @child (its parent set) from now on, or none when NULL. */
static void child_set(KbCache *cache, const char *ns, const char *name, KbPodGroup *child)
{
    g_autofree char *key = pod_key(ns, name);
    KbPodGroup *old = g_hash_table_lookup(cache->children, key);
    if (old == NULL && child == NULL)
        return;
    g_autofree char *old_parent = old != NULL ? g_strdup(old->parent) : NULL;
    if (old != NULL) {
        KbJobInfo *was = job_get_kind(cache, 'c', ns, old_parent, FALSE);
        if (was != NULL) {
            g_ptr_array_remove(was->children, old);
            was->version++;
        }
    }
    if (child != NULL) {
        KbJobInfo *job = job_get_kind(cache, 'c', ns, child->parent, TRUE);
        g_ptr_array_add(job->children, kb_object_ref(child));
        job->version++;
        g_hash_table_replace(cache->children, g_steal_pointer(&key), kb_object_ref(child));
    } else {
        g_hash_table_remove(cache->children, key);
    }
    if (child == NULL || g_strcmp0(old_parent, child->parent) != 0)
        group_rekey(cache, ns, name);
    /* Looked up again: moving the pods may have dropped it already. */
    KbJobInfo *was = old_parent != NULL ? job_get_kind(cache, 'c', ns, old_parent, FALSE) : NULL;
    if (was != NULL)
        job_maybe_remove(cache, was);
}

void kb_cache_add_pod_group(KbCache *cache, KbPodGroup *group)
{
    const char *ns = group->meta.namespace_, *name = group->meta.name;
    if (group->composite) {
        job_apply_group(cache, job_get_kind(cache, 'c', ns, name, TRUE), group);
        return;
    }
    if (group->parent != NULL) {
        /* A child is no job of its own. */
        job_lose_group(cache, 'g', ns, name);
        child_set(cache, ns, name, group);
        return;
    }
    job_apply_group(cache, job_get(cache, TRUE, ns, name, TRUE), group);
    child_set(cache, ns, name, NULL);
}

void kb_cache_update_pod_group(KbCache *cache, KbPodGroup *group)
{
    kb_cache_add_pod_group(cache, group);
}

void kb_cache_delete_pod_group(KbCache *cache, KbPodGroup *group)
{
    const char *ns = group->meta.namespace_, *name = group->meta.name;
    if (group->composite) {
        job_lose_group(cache, 'c', ns, name);
        return;
    }
    job_lose_group(cache, 'g', ns, name);
    child_set(cache, ns, name, NULL);
}

/* ---- workloads ------------------------------------------------------------------------------ */

/* The native groups of namespace @ns that name workload @name take its queue again. */
static void workload_changed(KbCache *cache, const char *ns, const char *name)
{
    for (guint i = 0; i < cache->job_list->len; i++) {
        KbJobInfo *job = cache->job_list->pdata[i];
        const KbPodGroup *g = job->group;
        if (g == NULL || g->dialect != KB_PODGROUP_NATIVE || g->queue != NULL ||
            g_strcmp0(g->workload_name, name) != 0 || g_strcmp0(g->meta.namespace_, ns) != 0)
            continue;
        const char *q = group_queue(cache, g);
        if (q != job->queue) {
            job->queue = q;
            job->version++;
        }
    }
}

void kb_cache_set_workload(KbCache *cache, const KbObjectMeta *workload)
{
    const char *q = g_hash_table_lookup(workload->labels, KB_QUEUE_LABEL);
    if (q == NULL || *q == '\0')
        q = g_hash_table_lookup(workload->annotations, KB_QUEUE_LABEL);
    g_autofree char *key = pod_key(workload->namespace_, workload->name);
    g_hash_table_replace(cache->workload_queues, g_steal_pointer(&key),
                         (gpointer)g_intern_string(q != NULL ? q : ""));
    workload_changed(cache, workload->namespace_, workload->name);
}

void kb_cache_delete_workload(KbCache *cache, const KbObjectMeta *workload)
{
    g_autofree char *key = pod_key(workload->namespace_, workload->name);
    g_hash_table_remove(cache->workload_queues, key);
    workload_changed(cache, workload->namespace_, workload->name);
}

/* ---- assume, bind outcome, rollback --------------------------------------------------------- */

static PodEntry *pod_entry(KbCache *cache, const char *ns, const char *name, const char *uid)
{
    g_autofree char *key = pod_key(ns, name);
    PodEntry *pe = g_hash_table_lookup(cache->pods, key);
    if (pe == NULL || (uid != NULL && g_strcmp0(pe->pod->meta.uid, uid) != 0))
        return NULL;
    return pe;
}

static PodEntry *task_entry(KbCache *cache, KbTaskInfo *task)
{
    return pod_entry(cache, task->pod->meta.namespace_, task->pod->meta.name, NULL);
}

void kb_cache_assume_task(KbCache *cache, KbTaskInfo *task, guint node_id)
{
    task_set_state(task, KB_TASK_ALLOCATED, (gint)node_id);
    PodEntry *pe = task_entry(cache, task);
    if (pe != NULL)
        pod_recount(cache, pe);
}

void kb_cache_forget_task(KbCache *cache, KbTaskInfo *task)
{
    if (task->state != KB_TASK_ALLOCATED && task->state != KB_TASK_BINDING)
        return;
    task_set_state(task, KB_TASK_PENDING, -1);
    PodEntry *pe = task_entry(cache, task);
    if (pe != NULL)
        pod_recount(cache, pe);
}

gboolean kb_cache_bind_succeeded(KbCache *cache, const char *namespace_, const char *name,
                                 const char *uid, gint64 now)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (pe == NULL || pe->task == NULL)
        return FALSE;
    /* The exponent starts over; a backoff under way (another member refused) still runs. */
    pe->task->job->bind_failures = 0;
    if (pe->task->state != KB_TASK_ALLOCATED) {
        /* The watch showed the binding before its answer came: the job started all the same
         * (without it the job was no runtime sample for the queue history). */
        if (pe->task->bind_time == 0 && pe->task->node_id >= 0)
            pe->task->bind_time = now;
        return FALSE;
    }
    task_set_state(pe->task, KB_TASK_BINDING, pe->task->node_id);
    pe->task->bind_time = now;
    return TRUE;
}

gboolean kb_cache_bind_unknown(KbCache *cache, const char *namespace_, const char *name,
                               const char *uid, gint64 now)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (pe == NULL || pe->task == NULL || pe->task->state != KB_TASK_ALLOCATED)
        return FALSE;
    task_set_state(pe->task, KB_TASK_BINDING, pe->task->node_id);
    pe->task->bind_time = now;
    return TRUE;
}

gboolean kb_cache_bind_elsewhere(KbCache *cache, const char *namespace_, const char *name,
                                 const char *uid, const char *node_name, gint64 now)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (pe == NULL || pe->task == NULL || node_name == NULL)
        return FALSE;
    KbTaskInfo *task = pe->task;
    if (task->state != KB_TASK_ALLOCATED && task->state != KB_TASK_BINDING)
        return FALSE;
    /* The GPU indices chosen for our node mean nothing there (task_set_state clears them). */
    task_set_state(task, KB_TASK_BINDING, (gint)node_id_for(cache, node_name));
    task->bind_time = now;
    pod_recount(cache, pe);
    return TRUE;
}

gboolean kb_cache_bind_failed(KbCache *cache, const char *namespace_, const char *name,
                              const char *uid, guint *n_rolled_back)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (n_rolled_back != NULL)
        *n_rolled_back = 0;
    if (pe == NULL || pe->task == NULL)
        return FALSE;
    KbTaskInfo *failed = pe->task;
    if (failed->state == KB_TASK_ALLOCATED || failed->state == KB_TASK_BINDING) {
        kb_cache_forget_task(cache, failed);
        if (n_rolled_back != NULL)
            *n_rolled_back = 1;
    }
    return TRUE;
}

/* One backoff step per round of failures (members refused together count once). */
static void job_back_off(KbJobInfo *job, gint64 now, const char *message)
{
    if (job->backoff_until <= now) {
        job->bind_failures++;
        guint shift = MIN(job->bind_failures - 1, 6u);
        job->backoff_until = now + MIN((gint64)1 << shift, (gint64)KB_CACHE_BIND_BACKOFF_MAX_S);
    }
    g_free(job->bind_error);
    job->bind_error = g_strdup(message != NULL ? message : "binding refused");
}

gboolean kb_cache_bind_deferred(KbCache *cache, const char *namespace_, const char *name,
                                const char *uid, gint64 now, const char *message, guint *delay_s)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (pe == NULL || pe->task == NULL || pe->task->state != KB_TASK_ALLOCATED)
        return FALSE;
    KbTaskInfo *task = pe->task;
    KbJobInfo *job = task->job;
    gboolean others = job->n_state[KB_TASK_BINDING] + job->n_state[KB_TASK_BOUND] +
                              job->n_state[KB_TASK_RUNNING] >
                      0;
    for (guint i = 0; i < job->tasks->len && !others; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        others = t != task && t->state == KB_TASK_ALLOCATED && !t->bind_refused;
    }
    if (!others) {
        /* Every member refused: nothing of the gang is bound, nothing to keep room for. */
        for (guint i = 0; i < job->tasks->len; i++) {
            KbTaskInfo *t = job->tasks->pdata[i];
            if (t != task && t->state == KB_TASK_ALLOCATED && t->bind_refused)
                kb_cache_forget_task(cache, t);
        }
        return FALSE;
    }
    task->bind_refused = TRUE;
    job_back_off(job, now, message);
    *delay_s = (guint)MAX(job->backoff_until - now, (gint64)1);
    return TRUE;
}

gboolean kb_cache_bind_refused(KbCache *cache, const char *namespace_, const char *name,
                               const char *uid, gint64 now, const char *message)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (pe == NULL || pe->task == NULL)
        return FALSE;
    KbJobInfo *job = pe->task->job;
    kb_cache_bind_failed(cache, namespace_, name, uid, NULL);
    job_back_off(job, now, message);
    return TRUE;
}

void kb_cache_evict_task(KbCache *cache, KbTaskInfo *task)
{
    if (task->state != KB_TASK_BOUND && task->state != KB_TASK_RUNNING)
        return;
    task->evicting = TRUE;
    task_set_state(task, KB_TASK_RELEASING, task->node_id);
}

void kb_cache_job_evicted(KbCache *cache, KbJobInfo *job, gint64 now)
{
    (void)cache;
    job->n_evictions++;
    job->last_evicted = now;
}

static gint start_cmp(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
    return x < y ? -1 : x > y;
}

gint64 kb_cache_job_start_time(const KbJobInfo *job)
{
    guint need = job->min_member >= 1 ? (guint)job->min_member : 1;
    g_autoptr(GArray) starts = g_array_sized_new(FALSE, FALSE, sizeof(gint64), job->tasks->len);
    for (guint i = 0; i < job->tasks->len; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state != KB_TASK_BINDING && t->state != KB_TASK_BOUND &&
            t->state != KB_TASK_RUNNING && t->state != KB_TASK_SUCCEEDED)
            continue;
        gint64 start = t->bind_time != 0 ? t->bind_time : t->pod->meta.creation_timestamp;
        g_array_append_val(starts, start);
    }
    if (starts->len < need)
        return 0;
    g_array_sort(starts, start_cmp);
    return g_array_index(starts, gint64, need - 1);
}

gboolean kb_cache_evict_failed(KbCache *cache, const char *namespace_, const char *name,
                               const char *uid)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    if (pe == NULL || pe->task == NULL || !pe->task->evicting)
        return FALSE;
    KbTaskInfo *task = pe->task;
    task->evicting = FALSE;
    KbTaskState st = task_state_from_pod(pe->pod, task->state);
    task_set_state(task, st, st == KB_TASK_PENDING ? -1 : task->node_id);
    return TRUE;
}

gboolean kb_cache_pod_is_assumed(KbCache *cache, const char *namespace_, const char *name,
                                 const char *uid)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, uid);
    return pe != NULL && pe->task != NULL && pe->task->state == KB_TASK_ALLOCATED;
}

guint kb_cache_expire_assumed(KbCache *cache, gint64 now, gint64 ttl_seconds)
{
    guint n = 0;
    for (guint j = 0; j < cache->job_list->len; j++) {
        KbJobInfo *job = cache->job_list->pdata[j];
        if (job->n_state[KB_TASK_BINDING] == 0)
            continue;
        for (guint i = 0; i < job->tasks->len; i++) {
            KbTaskInfo *t = job->tasks->pdata[i];
            if (t->state == KB_TASK_BINDING && t->bind_time + ttl_seconds < now) {
                kb_cache_forget_task(cache, t);
                n++;
            }
        }
    }
    return n;
}

/* ---- GPU annotations ------------------------------------------------------------------------ */

static const char *const gpu_level_names[KB_GPU_N_LEVELS] = {"nvlink", "pcie", "numa"};

/* One level of the topology annotation (a list of disjoint, non-empty lists of indices). */
static gboolean gpu_level_parse(json_object *level, const char *name, guint64 *groups, guint *n,
                                GError **error)
{
    if (!json_object_is_type(level, json_type_array)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "\"%s\": not a list of lists of GPU indices",
                    name);
        return FALSE;
    }
    guint64 seen = 0;
    gsize len = json_object_array_length(level);
    for (gsize g = 0; g < len; g++) {
        json_object *group = json_object_array_get_idx(level, g);
        gsize glen =
                json_object_is_type(group, json_type_array) ? json_object_array_length(group) : 0;
        if (glen == 0) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "\"%s\"[%zu]: not a non-empty list of GPU indices", name, g);
            return FALSE;
        }
        guint64 mask = 0;
        for (gsize i = 0; i < glen; i++) {
            json_object *v = json_object_array_get_idx(group, i);
            gint64 idx = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
            if (idx < 0 || idx >= KB_GPU_MAX) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                            "\"%s\"[%zu][%zu]: %s is not a GPU index 0..%d", name, g, i,
                            json_object_to_json_string(v), KB_GPU_MAX - 1);
                return FALSE;
            }
            guint64 bit = G_GUINT64_CONSTANT(1) << idx;
            if ((seen | mask) & bit) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                            "\"%s\"[%zu][%zu]: GPU %" G_GINT64_FORMAT " is listed twice", name, g,
                            i, idx);
                return FALSE;
            }
            mask |= bit;
        }
        seen |= mask;
        groups[(*n)++] = mask; /* disjoint and non-empty: never more than KB_GPU_MAX */
    }
    return TRUE;
}

/* The annotation's levels into @groups (KB_GPU_N_LEVELS x KB_GPU_MAX) and @n. */
static gboolean gpu_topology_parse(const char *text, guint64 *groups, guint *n, GError **error)
{
    gsize len = strlen(text);
    if (len > KB_GPU_TOPOLOGY_MAX_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%zu bytes, more than the limit of %d", len,
                    KB_GPU_TOPOLOGY_MAX_BYTES);
        return FALSE;
    }
    json_tokener *tok = json_tokener_new_ex(4); /* object > level > group > index */
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    gsize end = obj != NULL ? (gsize)json_tokener_get_parse_end(tok) : 0;
    while (end < len && g_ascii_isspace(text[end]))
        end++;
    gboolean complete =
            obj != NULL && json_tokener_get_error(tok) == json_tokener_success && end == len;
    json_tokener_free(tok);
    if (!complete || !json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "not a JSON object: \"%.64s%s\"", text,
                    len > 64 ? "..." : "");
        return FALSE;
    }
    gboolean ok = TRUE;
    for (int l = 0; l < KB_GPU_N_LEVELS && ok; l++) {
        json_object *level = NULL;
        if (json_object_object_get_ex(obj, gpu_level_names[l], &level))
            ok = gpu_level_parse(level, gpu_level_names[l], groups + l * KB_GPU_MAX, &n[l], error);
    }
    json_object_put(obj);
    return ok;
}

KbGpuTopology *kb_cache_gpu_topology_new(const char *annotation, gint64 n_gpus, GError **error)
{
    guint64 groups[KB_GPU_N_LEVELS * KB_GPU_MAX];
    guint n[KB_GPU_N_LEVELS] = {0};
    if (annotation != NULL && !gpu_topology_parse(annotation, groups, n, error))
        return NULL;
    guint64 all =
            n_gpus >= KB_GPU_MAX ? G_MAXUINT64 : (G_GUINT64_CONSTANT(1) << MAX(n_gpus, 0)) - 1;
    for (int l = 0; l < KB_GPU_N_LEVELS; l++) {
        for (guint i = 0; i < n[l]; i++)
            all |= groups[l * KB_GPU_MAX + i];
    }
    if (all == 0)
        return NULL;
    /* Without an annotation the node is one island; a GPU no island names is an island alone. */
    guint64 islands = 0;
    for (guint i = 0; i < n[0]; i++)
        islands |= groups[i];
    if (annotation == NULL) {
        groups[n[0]++] = all;
    } else {
        for (guint64 rest = all & ~islands; rest != 0; rest &= rest - 1)
            groups[n[0]++] = rest & -rest;
    }
    KbGpuTopology *topo = g_malloc0(sizeof(KbGpuTopology) + sizeof(guint64) * (n[0] + n[1] + n[2]));
    topo->all = all;
    for (int l = 0; l < KB_GPU_N_LEVELS; l++) {
        topo->first[l + 1] = topo->first[l] + n[l];
        memcpy(&topo->groups[topo->first[l]], groups + l * KB_GPU_MAX, sizeof(guint64) * n[l]);
    }
    return topo;
}

gboolean kb_cache_gpu_ids_parse(const char *text, guint64 *out, GError **error)
{
    gsize len = strlen(text);
    if (len > KB_GPU_IDS_MAX_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%zu bytes, more than the limit of %d", len,
                    KB_GPU_IDS_MAX_BYTES);
        return FALSE;
    }
    guint64 mask = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ')
            p++;
        char *end = NULL;
        guint64 idx = g_ascii_isdigit(*p) ? g_ascii_strtoull(p, &end, 10) : G_MAXUINT64;
        if (end == NULL || idx >= KB_GPU_MAX || (mask & (G_GUINT64_CONSTANT(1) << idx))) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "\"%s\": not a list of distinct GPU indices 0..%d", text, KB_GPU_MAX - 1);
            return FALSE;
        }
        mask |= G_GUINT64_CONSTANT(1) << idx;
        for (p = end; *p == ' '; p++)
            ;
        if (*p == '\0')
            break;
        if (*p++ != ',') {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "\"%s\": not a list of distinct GPU indices 0..%d", text, KB_GPU_MAX - 1);
            return FALSE;
        }
    }
    *out = mask;
    return TRUE;
}

char *kb_cache_gpu_ids_format(guint64 ids)
{
    if (ids == 0)
        return NULL;
    GString *s = g_string_sized_new(24);
    for (int i = 0; i < KB_GPU_MAX; i++) {
        if (ids & (G_GUINT64_CONSTANT(1) << i))
            g_string_append_printf(s, "%s%d", s->len > 0 ? "," : "", i);
    }
    return g_string_free(s, FALSE);
}

guint kb_cache_gpu_topology_errors(const KbCache *cache)
{
    return cache->n_gpu_topology_errors;
}

/* ---- life cycle and queries ----------------------------------------------------------------- */

KbCache *kb_cache_new(const char *const *scheduler_names, const char *default_queue)
{
    KbCache *cache = g_new0(KbCache, 1);
    guint n = scheduler_names != NULL ? g_strv_length((char **)scheduler_names) : 0;
    cache->served = g_new0(const char *, n + 2);
    for (guint i = 0; i < n; i++)
        cache->served[i] = g_intern_string(scheduler_names[i]);
    if (n == 0)
        cache->served[0] = g_intern_static_string("kube-batchd");
    cache->default_queue = g_intern_string(default_queue != NULL ? default_queue : "default");
    cache->nodes = g_array_new(FALSE, TRUE, sizeof(KbNodeInfo));
    cache->node_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
    cache->pods = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, pod_entry_free);
    cache->jobs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    cache->job_list = g_ptr_array_new_with_free_func(job_free);
    cache->history = kb_history_new();
    cache->usage = kb_usage_new();
    cache->dra = kb_dra_new();
    cache->fragment = kb_frag_model_new(KB_CACHE_FRAGMENT_HALF_LIFE);
    /* from now on the pods whose claims are seen allocated are named for recounting (none yet) */
    GHashTable *none = kb_dra_take_recount(cache->dra);
    if (none != NULL)
        g_hash_table_unref(none);
    cache->queues = g_hash_table_new(g_direct_hash, g_direct_equal);
    cache->queue_list = g_ptr_array_new_with_free_func(queue_info_free);
    cache->pvcs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kb_object_unref);
    cache->workload_queues = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    cache->children = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kb_object_unref);
    cache->priority_classes =
            g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, kb_object_unref);
    cache->node_gpus = g_array_new(FALSE, TRUE, sizeof(NodeGpu));
    queue_info_new(cache, cache->default_queue);
    return cache;
}

static void free_task_of_entry(gpointer key, gpointer value, gpointer user_data)
{
    PodEntry *pe = value;
    if (pe->task != NULL) {
        kb_object_unref(pe->task->pod);
        g_free(pe->task);
        pe->task = NULL;
    }
}

void kb_cache_free(KbCache *cache)
{
    if (cache == NULL)
        return;
    g_hash_table_foreach(cache->pods, free_task_of_entry, NULL);
    g_hash_table_unref(cache->pods);
    g_hash_table_unref(cache->jobs);
    g_ptr_array_unref(cache->job_list);
    for (guint i = 0; i < cache->nodes->len; i++) {
        g_clear_pointer(&node_at(cache, i)->node, kb_object_unref);
        node_gpu_clear(node_gpu_at(cache, i));
    }
    g_array_unref(cache->node_gpus);
    g_array_unref(cache->nodes);
    g_hash_table_unref(cache->node_ids);
    g_hash_table_unref(cache->queues);
    g_ptr_array_unref(cache->queue_list);
    g_hash_table_unref(cache->priority_classes);
    g_hash_table_unref(cache->pvcs);
    g_hash_table_unref(cache->workload_queues);
    g_hash_table_unref(cache->children);
    g_free(cache->served);
    g_free(cache->extender_names);
    kb_history_free(cache->history);
    kb_usage_free(cache->usage);
    kb_dra_free(cache->dra);
    kb_frag_model_free(cache->fragment);
    g_free(cache);
}

const char *kb_cache_default_queue(const KbCache *cache)
{
    return cache->default_queue;
}

gboolean kb_cache_serves(const KbCache *cache, const char *scheduler_name)
{
    return scheduler_name != NULL && serves(cache, scheduler_name);
}

KbNodeInfo *kb_cache_nodes(KbCache *cache, guint *n_nodes)
{
    *n_nodes = cache->nodes->len;
    return (KbNodeInfo *)(void *)cache->nodes->data;
}

KbNodeInfo *kb_cache_lookup_node(KbCache *cache, const char *name)
{
    gpointer v = g_hash_table_lookup(cache->node_ids, g_intern_string(name));
    return v != NULL ? node_at(cache, GPOINTER_TO_UINT(v) - 1) : NULL;
}

GPtrArray *kb_cache_jobs(KbCache *cache)
{
    return cache->job_list;
}

KbJobInfo *kb_cache_lookup_job(KbCache *cache, const char *namespace_, const char *name)
{
    KbJobInfo *job = job_get(cache, TRUE, namespace_, name, FALSE);
    if (job == NULL)
        job = job_get_kind(cache, 'c', namespace_, name, FALSE);
    return job != NULL ? job : job_get(cache, FALSE, namespace_, name, FALSE);
}

KbTaskInfo *kb_cache_lookup_task(KbCache *cache, const char *namespace_, const char *name)
{
    PodEntry *pe = pod_entry(cache, namespace_, name, NULL);
    return pe != NULL ? pe->task : NULL;
}

gboolean kb_cache_has_pod(KbCache *cache, const char *namespace_, const char *name)
{
    return pod_entry(cache, namespace_, name, NULL) != NULL;
}

GPtrArray *kb_cache_queues(KbCache *cache)
{
    return cache->queue_list;
}

KbQueueInfo *kb_cache_lookup_queue(KbCache *cache, const char *name)
{
    /* The table is keyed by interned pointers, and the names of jobs (KbJobInfo.queue) already
     * are: try the pointer as it is first, so that the lookup every job makes several times a
     * cycle skips g_intern_string (a global lock and a string hash; 10% of a replay's time). */
    KbQueueInfo *qi = name != NULL ? g_hash_table_lookup(cache->queues, name) : NULL;
    return qi != NULL ? qi : g_hash_table_lookup(cache->queues, g_intern_string(name));
}

void kb_cache_cluster_allocatable(KbCache *cache, KbResources *out)
{
    kb_resources_clear(out);
    for (guint i = 0; i < cache->nodes->len; i++) {
        KbNodeInfo *ni = node_at(cache, i);
        if (ni->present && ni->node != NULL && ni->node->ready && !ni->node->unschedulable)
            kb_resources_add(out, &ni->allocatable);
    }
}

const char *kb_task_state_to_string(KbTaskState state)
{
    static const char *const names[KB_TASK_N_STATES] = {
            "Pending", "Allocated", "Binding", "Bound",
            "Running", "Succeeded", "Failed",  "Releasing",
    };
    return state < KB_TASK_N_STATES ? names[state] : "Unknown";
}

const char *kb_job_phase_to_string(KbJobPhase phase)
{
    switch (phase) {
    case KB_JOB_PENDING:
        return "Pending";
    case KB_JOB_INQUEUE:
        return "Inqueue";
    case KB_JOB_RUNNING:
        return "Running";
    case KB_JOB_COMPLETED:
        return "Completed";
    case KB_JOB_UNKNOWN:
    default:
        return "Unknown";
    }
}
