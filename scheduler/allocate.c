/*
 * allocate: queue order, then job order, then task order, in two rounds. The first places every
 * job up to its minimum (minMember) in a statement that commits only when the gang is ready and
 * otherwise discards every placement; the second grows ready jobs beyond their minimum, one task
 * a turn, so that no gang's extra pods take the room another gang needs to start.
 * A job with sub-groups (subgroup.h) places each sub-group whole or not at all, in both rounds.
 *
 * Performance shape. Nodes sit under a max-tree of their idle vectors (per resource, the largest
 * idle value in each subtree), so a search for a node that fits skips whole ranges of full nodes
 * in O(log n). Tasks of a job that share a template (an equivalence class) share one candidate
 * list: the search collects up to N_CANDIDATES feasible nodes (kube-scheduler's
 * minFeasibleNodesToFind), scores each once, and every task of the class takes the best one;
 * only the node that just received a task is re-checked and re-scored. Searches start where the
 * previous job stopped, so the cost per job does not grow with the cluster. When no node fits,
 * the same tree counts the nodes short of each resource for the condition message.
 */
#include "scheduler/actions.h"
#include "scheduler/dra.h"
#include "scheduler/reserve.h"
#include "scheduler/subgroup.h"

#include <string.h>

#define N_CANDIDATES 100

/* ---- max-tree over node idle vectors -------------------------------------------------------- */

typedef struct {
    guint n;    /* nodes */
    guint size; /* leaves, a power of two >= n */
    int nslots;
    gint64 *max;    /* (2 * size) x nslots */
    guint *present; /* present nodes per tree node */
} MaxTree;

static gint64 *tmax(MaxTree *t, guint node)
{
    return &t->max[(gsize)node * (gsize)t->nslots];
}

static void tree_set_leaf(MaxTree *t, const KbNodeInfo *nodes, guint i)
{
    gint64 *m = tmax(t, t->size + i);
    const KbNodeInfo *ni = &nodes[i];
    for (int s = 0; s < t->nslots; s++)
        m[s] = ni->present ? ni->idle.v[s] : -1;
    t->present[t->size + i] = ni->present ? 1 : 0;
}

static void tree_pull(MaxTree *t, guint node)
{
    gint64 *m = tmax(t, node), *l = tmax(t, 2 * node), *r = tmax(t, 2 * node + 1);
    for (int s = 0; s < t->nslots; s++)
        m[s] = MAX(l[s], r[s]);
    t->present[node] = t->present[2 * node] + t->present[2 * node + 1];
}

static void tree_init(MaxTree *t, const KbNodeInfo *nodes, guint n)
{
    t->n = n;
    t->size = 1;
    while (t->size < MAX(n, 1))
        t->size <<= 1;
    t->nslots = kb_resource_count();
    t->max = g_new(gint64, (gsize)2 * t->size * (gsize)t->nslots);
    t->present = g_new0(guint, 2 * t->size);
    for (guint i = 0; i < t->size; i++) {
        if (i < n) {
            tree_set_leaf(t, nodes, i);
        } else {
            gint64 *m = tmax(t, t->size + i);
            for (int s = 0; s < t->nslots; s++)
                m[s] = -1;
        }
    }
    for (guint k = t->size; k-- > 1;)
        tree_pull(t, k);
}

static void tree_update(MaxTree *t, const KbNodeInfo *nodes, guint i)
{
    tree_set_leaf(t, nodes, i);
    for (guint k = (t->size + i) / 2; k >= 1; k /= 2)
        tree_pull(t, k);
}

/* The first slot where @req exceeds the subtree's best, or -1 when something there may fit. */
static int tree_short(MaxTree *t, guint node, const KbResources *req)
{
    const gint64 *m = tmax(t, node);
    for (int s = 0; s < t->nslots; s++) {
        if (req->v[s] > m[s])
            return s;
    }
    return -1;
}

/* The first leaf >= @from whose subtree bound admits @req, or -1. */
static gint tree_find(MaxTree *t, guint node, guint lo, guint hi, guint from,
                      const KbResources *req)
{
    if (hi <= from || tree_short(t, node, req) >= 0)
        return -1;
    if (hi - lo == 1)
        return lo < t->n ? (gint)lo : -1;
    guint mid = (lo + hi) / 2;
    gint r = tree_find(t, 2 * node, lo, mid, from, req);
    return r >= 0 ? r : tree_find(t, 2 * node + 1, mid, hi, from, req);
}

/* ---- failure counting for messages ---------------------------------------------------------- */

typedef struct {
    KbFitReason reason;
    int slot;
    const KbTaint *taint;
    guint count;
} FitCount;

typedef struct {
    FitCount items[16];
    guint n;
} FitCounts;

static gboolean same_taint(const KbTaint *a, const KbTaint *b)
{
    return a == b || (a != NULL && b != NULL && a->effect == b->effect &&
                      g_strcmp0(a->key, b->key) == 0 && g_strcmp0(a->value, b->value) == 0);
}

static void fit_count(FitCounts *fc, const KbFitFailure *f, guint count)
{
    for (guint i = 0; i < fc->n; i++) {
        FitCount *c = &fc->items[i];
        if (c->reason == f->reason && (f->reason != KB_FIT_RESOURCES || c->slot == f->slot) &&
            (f->reason != KB_FIT_TAINT || same_taint(c->taint, f->taint))) {
            c->count += count;
            return;
        }
    }
    if (fc->n < G_N_ELEMENTS(fc->items))
        fc->items[fc->n++] = (FitCount){f->reason, f->slot, f->taint, count};
}

/* ---- allocate state ------------------------------------------------------------------------- */

typedef struct {
    double score;
    guint node;
    guint stamp;
    guint epoch; /* ssn->score_epoch when scored */
} Cand;

typedef struct {
    GArray *cands; /* Cand */
    guint phase;   /* 0: [start, n), 1: [0, start), 2: done */
    guint start;
    guint pos;
    gboolean used;
} ClassCtx;

typedef struct {
    KbSession *ssn;
    MaxTree tree;
    guint *stamp;     /* per node: bumped whenever its idle vector changes */
    guint start;      /* where the next search begins (rotates across jobs) */
    gboolean scoring; /* a node-order plugin is enabled */
    guint n_candidates;
    GArray *ctxs;          /* ClassCtx, reused across jobs */
    GPtrArray *tasks;      /* scratch: pending tasks of the current job */
    GPtrArray *placed;     /* scratch: the statement */
    KbResources max_alloc; /* largest allocatable per slot over present nodes */
    GString *why;
    /* Some present node has taints, is not Ready or is cordoned: a node in a subtree short of
     * resources may fail a predicate first (computed on the first diagnosis). */
    gint special_nodes; /* -1 unknown, 0, 1 */
    /* While placing a gang with a topology constraint (a native PodGroup's
     * schedulingConstraints.topology[0].key): only nodes whose label domain_key is domain. */
    const char *domain_key;
    const char *domain;
    /* The current job's sub-groups (subgroup.h), NULL when it has none. */
    KbSubGroups *sg;
    /* While diagnosing a pod with DRA claims: the shortfall on the node with the most free
     * devices (kb_dra_fits), quoted in the condition. */
    GString *dra_why;
    gint dra_free;
    /* Per node, its devices (kb_dra_node) once looked up (dra_known) while kb_dra_nodes_gen is
     * dra_gen: the candidate search asks about many nodes per gang and would otherwise find each by
     * name. */
    KbDraNode **dra_nodes;
    guint8 *dra_known;
    guint dra_gen;
    KbDraPodFit dra_fit; /* the last pod asked about (kb_dra_fits_on) */
} Alloc;

static void node_changed(Alloc *a, guint node)
{
    a->stamp[node]++;
    tree_update(&a->tree, a->ssn->nodes, node);
}

static gint next_leaf(Alloc *a, ClassCtx *ctx, const KbResources *req)
{
    MaxTree *t = &a->tree;
    while (ctx->phase < 2) {
        guint hi = ctx->phase == 0 ? t->n : ctx->start;
        gint r = ctx->pos < hi ? tree_find(t, 1, 0, t->size, ctx->pos, req) : -1;
        if (r >= 0 && (guint)r < hi) {
            ctx->pos = (guint)r + 1;
            return r;
        }
        ctx->phase++;
        ctx->pos = 0;
    }
    return -1;
}

static gboolean in_domain(const Alloc *a, guint node)
{
    return a->domain_key == NULL ||
           g_strcmp0(kb_session_node_domain(a->ssn, node, a->domain_key), a->domain) == 0;
}

/* kb_dra_fits for @task on @node, the node's devices looked up once per allocate. */
static gboolean dra_fits(Alloc *a, const KbTaskInfo *task, guint node)
{
    KbDra *dra = kb_cache_dra(a->ssn->cache);
    if (a->dra_gen != kb_dra_nodes_gen(dra)) {
        memset(a->dra_known, 0, MAX(a->ssn->n_nodes, 1));
        a->dra_gen = kb_dra_nodes_gen(dra);
    }
    if (!a->dra_known[node]) {
        a->dra_nodes[node] = kb_dra_node(dra, a->ssn->nodes[node].name);
        a->dra_known[node] = 1;
    }
    return kb_dra_fits_on(dra, task->pod, a->ssn->nodes[node].name, a->dra_nodes[node],
                          &a->dra_fit);
}

static gboolean node_fits(Alloc *a, const KbTaskInfo *task, guint node)
{
    return kb_resources_fit(&task->resreq, &a->ssn->nodes[node].idle) &&
           kb_reserve_admits(a->ssn, task, node) &&
           (task->pod->n_resource_claims == 0 || dra_fits(a, task, node));
}

static double score(Alloc *a, const KbTaskInfo *task, guint node)
{
    return a->scoring ? kb_session_node_score(a->ssn, task, &a->ssn->nodes[node]) : 0;
}

/* Collect more feasible nodes for the class of @task; FALSE when the cluster is exhausted. */
static gboolean fill(Alloc *a, ClassCtx *ctx, const KbTaskInfo *task)
{
    guint want =
            a->scoring && kb_session_score_every_node(a->ssn, task) ? G_MAXUINT : a->n_candidates;
    while (ctx->cands->len < want) {
        gint leaf = next_leaf(a, ctx, &task->resreq);
        if (leaf < 0)
            break;
        guint node = (guint)leaf;
        /* node_fits checked the devices: the static predicates remain */
        if (!in_domain(a, node) || !node_fits(a, task, node) ||
            !kb_session_node_predicate(a->ssn, task, &a->ssn->nodes[node], NULL))
            continue;
        Cand c = {score(a, task, node), node, a->stamp[node], a->ssn->score_epoch};
        g_array_append_val(ctx->cands, c);
    }
    if (ctx->phase < 2)
        a->start = ctx->pos % MAX(a->tree.n, 1);
    return ctx->cands->len > 0;
}

/* The best candidate node for @task, or -1. */
static gint pick(Alloc *a, ClassCtx *ctx, const KbTaskInfo *task)
{
    for (;;) {
        gint best = -1;
        for (guint i = 0; i < ctx->cands->len;) {
            Cand *c = &g_array_index(ctx->cands, Cand, i);
            if (c->stamp != a->stamp[c->node]) {
                if (!node_fits(a, task, c->node)) {
                    g_array_remove_index_fast(ctx->cands, i);
                    continue;
                }
                c->score = score(a, task, c->node);
                c->stamp = a->stamp[c->node];
                c->epoch = a->ssn->score_epoch;
            } else if (c->epoch != a->ssn->score_epoch) {
                c->score = score(a, task, c->node);
                c->epoch = a->ssn->score_epoch;
            }
            if (best < 0) {
                best = (gint)i;
            } else {
                Cand *b = &g_array_index(ctx->cands, Cand, best);
                if (c->score > b->score || (c->score == b->score && c->node < b->node))
                    best = (gint)i;
            }
            i++;
        }
        /* A pod's claims are its own (a template's claim per pod, a claim pinned to a node): the
         * class's best candidate is checked again for each pod that has claims. */
        if (best >= 0 && task->pod->n_resource_claims > 0 &&
            !node_fits(a, task, g_array_index(ctx->cands, Cand, best).node)) {
            g_array_remove_index_fast(ctx->cands, (guint)best);
            continue;
        }
        if (best >= 0)
            return (gint)g_array_index(ctx->cands, Cand, best).node;
        if (!fill(a, ctx, task))
            return -1;
    }
}

/* ---- diagnosis: why no node fits ------------------------------------------------------------ */

/* Whether some present node could fail a predicate whatever the task asks (taints, Ready,
 * cordoned). */
static gboolean have_special_nodes(Alloc *a)
{
    if (a->special_nodes < 0) {
        a->special_nodes = 0;
        for (guint i = 0; i < a->ssn->n_nodes && a->special_nodes == 0; i++) {
            const KbNodeInfo *ni = &a->ssn->nodes[i];
            const KbNode *n = ni->node;
            if (ni->present && n != NULL && (n->n_taints > 0 || !n->ready || n->unschedulable))
                a->special_nodes = 1;
        }
    }
    return a->special_nodes == 1;
}

/* Keep the most telling DRA shortfall: the node with the most free devices. */
static void diagnose_devices(Alloc *a, const KbTaskInfo *task, guint node)
{
    g_autoptr(GString) why = g_string_new(NULL);
    gint free = 0;
    if (kb_dra_fits(kb_cache_dra(a->ssn->cache), task->pod, a->ssn->nodes[node].name, why, &free) ||
        (a->dra_why->len > 0 && free <= a->dra_free))
        return;
    g_string_assign(a->dra_why, why->str);
    a->dra_free = free;
}

/* One node, as kube-scheduler reports it: the first failing predicate, else the first resource
 * short, else held by a reservation. */
static void diagnose_node(Alloc *a, const KbTaskInfo *task, guint node, FitCounts *fc)
{
    KbFitFailure f = {KB_FIT_OK, -1, NULL};
    if (!kb_session_predicate(a->ssn, task, &a->ssn->nodes[node], &f)) {
        fit_count(fc, &f, 1);
        if (f.reason == KB_FIT_DEVICES)
            diagnose_devices(a, task, node);
    } else if ((f.slot = kb_resources_first_short(&task->resreq, &a->ssn->nodes[node].idle)) >= 0)
        f.reason = KB_FIT_RESOURCES, fit_count(fc, &f, 1);
    else if (!kb_reserve_admits(a->ssn, task, node))
        f.reason = KB_FIT_RESERVED, fit_count(fc, &f, 1);
}

/*
 * Count why each present node under tree node @node fails @task. A subtree short of a resource
 * is counted whole only when no predicate can fail first there (the task names no selector or
 * affinity and no node is tainted, not Ready or cordoned); otherwise its nodes are looked at one
 * by one, so that a node failing node affinity is never counted as short of a resource because
 * a full neighbour shares its subtree.
 */
static void diagnose_rec(Alloc *a, const KbTaskInfo *task, gboolean exact, guint node, guint lo,
                         guint hi, FitCounts *fc)
{
    MaxTree *t = &a->tree;
    if (t->present[node] == 0)
        return;
    if (hi - lo == 1) {
        diagnose_node(a, task, lo, fc);
        return;
    }
    int s = tree_short(t, node, &task->resreq);
    if (s >= 0 && !exact) {
        KbFitFailure f = {KB_FIT_RESOURCES, s, NULL};
        fit_count(fc, &f, t->present[node]);
        return;
    }
    guint mid = (lo + hi) / 2;
    diagnose_rec(a, task, exact, 2 * node, lo, mid, fc);
    diagnose_rec(a, task, exact, 2 * node + 1, mid, hi, fc);
}

static const char *phrase(KbFitReason r, gboolean one)
{
    switch (r) {
    case KB_FIT_RESOURCES:
        return "short of";
    case KB_FIT_NOT_READY:
        return "not Ready";
    case KB_FIT_UNSCHEDULABLE:
        return "unschedulable";
    case KB_FIT_NODE_SELECTOR:
        return one ? "does not match nodeSelector" : "do not match nodeSelector";
    case KB_FIT_AFFINITY:
        return one ? "does not match node affinity" : "do not match node affinity";
    case KB_FIT_TAINT:
        return one ? "has taint" : "have taint";
    case KB_FIT_RESERVED:
        return one ? "is reserved for a waiting gang" : "are reserved for a waiting gang";
    case KB_FIT_DEVICES:
        return one ? "is short of devices" : "are short of devices";
    default:
        return "cannot be used";
    }
}

/* "no node fits: 5 nodes short of nvidia.com/gpu, 2 nodes have taint dedicated=infra:NoSchedule" */
static void explain_no_node(Alloc *a, const KbTaskInfo *task, GString *out)
{
    int s = kb_resources_first_short(&task->resreq, &a->max_alloc);
    if (s >= 0) {
        g_autofree char *want = kb_resource_format_value(s, task->resreq.v[s]);
        g_autofree char *most = kb_resource_format_value(s, MAX(a->max_alloc.v[s], 0));
        g_string_append_printf(out, "pod %s/%s requests %s %s but no node has more than %s",
                               task->pod->meta.namespace_, task->pod->meta.name, want,
                               kb_resource_name(s), most);
        return;
    }
    FitCounts fc = {0};
    const KbPod *pod = task->pod;
    gboolean exact = pod->n_affinity_terms > 0 || g_hash_table_size(pod->node_selector) > 0 ||
                     pod->n_resource_claims > 0 || have_special_nodes(a);
    g_string_truncate(a->dra_why, 0);
    a->dra_free = -1;
    diagnose_rec(a, task, exact, 1, 0, a->tree.size, &fc);
    g_string_append(out, "no node fits");
    for (guint i = 0; i < fc.n; i++) {
        const FitCount *c = &fc.items[i];
        g_string_append_printf(out, "%s%u node%s %s", i == 0 ? ": " : ", ", c->count,
                               c->count == 1 ? "" : "s", phrase(c->reason, c->count == 1));
        if (c->reason == KB_FIT_RESOURCES) {
            g_string_append_printf(out, " %s", kb_resource_name(c->slot));
        } else if (c->reason == KB_FIT_TAINT) {
            KbFitFailure f = {KB_FIT_TAINT, -1, c->taint};
            g_autofree char *t = kb_fit_failure_to_string(&f);
            g_string_append(out, t + strlen("have taint"));
        }
    }
    if (fc.n == 0)
        g_string_append(out, ": the cluster has no nodes");
    if (a->dra_why->len > 0)
        g_string_append_printf(out, " (%s)", a->dra_why->str);
}

/* ---- one job -------------------------------------------------------------------------------- */

static gint task_cmp(gconstpointer x, gconstpointer y, gpointer data)
{
    return kb_session_task_order(data, *(KbTaskInfo *const *)x, *(KbTaskInfo *const *)y);
}

static void class_ctx_clear(gpointer data)
{
    g_array_unref(((ClassCtx *)data)->cands);
}

/* An empty array of class contexts (ClassCtx, which own their candidate lists). */
static GArray *class_ctxs_new(void)
{
    GArray *ctxs = g_array_new(FALSE, FALSE, sizeof(ClassCtx));
    g_array_set_clear_func(ctxs, class_ctx_clear);
    return ctxs;
}

/* The context of @task's class in @ctxs (the contexts of @task's job), started if unused. */
static ClassCtx *class_ctx(Alloc *a, GArray *ctxs, const KbTaskInfo *task)
{
    guint idx = task->klass->index;
    while (ctxs->len <= idx) {
        ClassCtx c = {g_array_new(FALSE, FALSE, sizeof(Cand)), 0, 0, 0, FALSE};
        g_array_append_val(ctxs, c);
    }
    ClassCtx *ctx = &g_array_index(ctxs, ClassCtx, idx);
    if (!ctx->used) {
        g_array_set_size(ctx->cands, 0);
        ctx->phase = 0;
        ctx->start = a->start;
        ctx->pos = a->start;
        ctx->used = TRUE;
    }
    return ctx;
}

static guint ready_tasks(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] +
           job->n_state[KB_TASK_SUCCEEDED];
}

static void commit(Alloc *a, KbJobInfo *job)
{
    KbSession *ssn = a->ssn;
    KbJobScratch *js = &ssn->job_scratch[job->id];
    guint first = ssn->result->placements->len;
    for (guint i = 0; i < a->placed->len; i++) {
        KbTaskInfo *t = a->placed->pdata[i];
        KbPlacement p = {kb_object_ref(t->pod), ssn->nodes[t->node_id].name, g_strdup(job->key),
                         kb_cache_gpu_ids_format(t->gpu_ids)};
        g_array_append_val(ssn->result->placements, p);
    }
    kb_cycle_attach_claim_writes(ssn->result, ssn->cache, first);
    if (js->n_placed == 0)
        ssn->result->n_jobs_placed++;
    js->n_placed += a->placed->len;
}

static void discard(Alloc *a)
{
    for (guint i = a->placed->len; i-- > 0;) {
        KbTaskInfo *t = a->placed->pdata[i];
        guint node = (guint)t->node_id;
        kb_session_deallocate(a->ssn, t);
        node_changed(a, node);
    }
    a->ssn->result->n_jobs_discarded++;
}

/* Place @t on the best node, searched with @ctxs; FALSE with @a->why set when it cannot be. */
static gboolean place_task(Alloc *a, GArray *ctxs, KbTaskInfo *t, KbQueueInfo *qi)
{
    KbSession *ssn = a->ssn;
    if (qi != NULL && !kb_session_allocatable(ssn, qi, t, a->why))
        return FALSE;
    gint node = pick(a, class_ctx(a, ctxs, t), t);
    if (node < 0) {
        explain_no_node(a, t, a->why);
        return FALSE;
    }
    kb_session_allocate(ssn, t, &ssn->nodes[node]);
    node_changed(a, (guint)node);
    g_ptr_array_add(a->placed, t);
    return TRUE;
}

/* Whether @job holds its minimum: minMember tasks, and ready for every job_ready plugin. */
static gboolean at_minimum(Alloc *a, const KbJobInfo *job)
{
    return ready_tasks(job) >= (guint)MAX(job->min_member, 0) &&
           kb_session_job_ready(a->ssn, job) && (a->sg == NULL || kb_sub_groups_satisfied(a->sg));
}

/* Undo the statement's placements from @mark on. */
static void rollback(Alloc *a, guint mark)
{
    for (guint i = a->placed->len; i-- > mark;) {
        KbTaskInfo *t = a->placed->pdata[i];
        guint node = (guint)t->node_id;
        kb_session_deallocate(a->ssn, t);
        node_changed(a, node);
    }
    g_ptr_array_set_size(a->placed, mark);
}

/* Candidate lists were filtered by the previous domain: searches start afresh. */
static void reset_ctxs(GArray *ctxs)
{
    for (guint c = 0; c < ctxs->len; c++)
        g_array_index(ctxs, ClassCtx, c).used = FALSE;
}

/* Place pending tasks of @g in @ctxs until it counts; FALSE (nothing left placed) otherwise. */
static gboolean place_sub_group_here(Alloc *a, GArray *ctxs, KbSubGroup *g, KbQueueInfo *qi)
{
    guint mark = a->placed->len;
    guint ready = kb_sub_group_ready(g);
    for (guint i = 0; i < g->tasks->len && ready < g->need; i++) {
        KbTaskInfo *t = g->tasks->pdata[i];
        if (t->state != KB_TASK_PENDING || t->held)
            continue;
        if (!place_task(a, ctxs, t, qi))
            break;
        ready++;
    }
    if (ready >= g->need)
        return TRUE;
    if (a->why->len == 0)
        g_string_append_printf(a->why, "%u of its %u pods exist", g->tasks->len, g->need);
    rollback(a, mark);
    return FALSE;
}

/*
 * Sub-group @g whole, inside one domain of its label when it has one (the domain its
 * placed members are in, else each value in turn); FALSE with nothing of it placed otherwise.
 */
static gboolean place_sub_group(Alloc *a, GArray *ctxs, KbSubGroup *g, KbQueueInfo *qi)
{
    if (g->topology_key == NULL)
        return place_sub_group_here(a, ctxs, g, qi);
    KbJobInfo part = {.tasks = g->tasks};
    g_autoptr(GPtrArray) domains = kb_session_job_domains(a->ssn, &part, g->topology_key);
    const char *key = a->domain_key, *domain = a->domain;
    gboolean ok = FALSE;
    a->domain_key = g->topology_key;
    for (guint d = 0; d < domains->len && !ok; d++) {
        a->domain = domains->pdata[d];
        reset_ctxs(ctxs);
        g_string_truncate(a->why, 0);
        ok = place_sub_group_here(a, ctxs, g, qi);
    }
    if (!ok && domains->len == 0)
        g_string_printf(a->why, "no node has the topology label %s", g->topology_key);
    a->domain_key = key;
    a->domain = domain;
    reset_ctxs(ctxs);
    return ok;
}

/*
 * Sub-groups first: for each policy, whole sub-groups until it has its minimum (FALSE with the
 * reason otherwise); then the job's other tasks up to its minimum; then, while the job still
 * falls short of minMember, more whole sub-groups.
 */
static gboolean place_minimum_sub_groups(Alloc *a, KbJobInfo *job, KbQueueInfo *qi)
{
    KbSubGroups *sg = a->sg;
    for (guint p = 0; p < kb_sub_groups_n_policies(sg); p++) {
        const KbSubGroupPolicy *pol = kb_sub_groups_policy(sg, p);
        guint whole = kb_sub_groups_whole(sg, p), want = (guint)MAX(pol->min_groups, 0);
        g_autofree char *last = NULL;
        g_autoptr(GString) shorts = g_string_new(NULL);
        for (guint i = 0; i < kb_sub_groups_count(sg) && whole < want; i++) {
            KbSubGroup *g = kb_sub_groups_get(sg, i);
            if (g->policy != p || kb_sub_group_ready(g) >= g->need)
                continue;
            g_string_truncate(a->why, 0);
            if (place_sub_group(a, a->ctxs, g, qi)) {
                whole++;
                continue;
            }
            g_string_append_printf(shorts, "%s%s", shorts->len > 0 ? ", " : "", g->key);
            if (last == NULL)
                last = g_strdup_printf("%s: %s", g->key, a->why->str);
        }
        if (whole < want && kb_sub_groups_is_composite(sg)) {
            /* a composite's children by name: every one that falls short, why the first does */
            g_string_printf(a->why,
                            "CompositePodGroup \"%s\": %u/%u child PodGroups placeable "
                            "whole%s%s (short: %s%s%s)",
                            pol->name, whole, want,
                            pol->topology_key != NULL ? ", each inside one " : "",
                            pol->topology_key != NULL ? pol->topology_key : "",
                            shorts->len > 0 ? shorts->str : "none with pods",
                            last != NULL ? "; " : "", last != NULL ? last : "");
            return FALSE;
        }
        if (whole < want) {
            g_string_printf(a->why, "sub-group policy \"%s\": %u/%u sub-groups placeable whole%s%s",
                            pol->name, whole, want, pol->topology_key != NULL ? " inside one " : "",
                            pol->topology_key != NULL ? pol->topology_key : "");
            if (last != NULL)
                g_string_append_printf(a->why, " (first short %s)", last);
            return FALSE;
        }
    }
    for (guint i = 0; i < a->tasks->len && !at_minimum(a, job); i++) {
        KbTaskInfo *t = a->tasks->pdata[i];
        if (t->state == KB_TASK_PENDING && kb_sub_groups_of(sg, t) < 0 &&
            !place_task(a, a->ctxs, t, qi))
            return FALSE;
    }
    for (guint i = 0; i < kb_sub_groups_count(sg) && !at_minimum(a, job); i++) {
        KbSubGroup *g = kb_sub_groups_get(sg, i);
        if (kb_sub_group_ready(g) < g->need && !place_sub_group(a, a->ctxs, g, qi))
            return FALSE;
    }
    return TRUE;
}

/* ---- backtracking for gangs with DRA claims -------------------------------------------------- */

/*
 * A member's devices depend on where the others went (a shared claim is pinned to the node of its
 * first user, a constraint narrows an island): when the greedy pass fails, the members are placed
 * again depth first, each trying its feasible nodes best score first (DFS_WIDTH at most), so that
 * an earlier member's choice is taken back when a later one cannot follow; DFS_BUDGET placements
 * at most per gang.
 */
#define DFS_WIDTH  8
#define DFS_BUDGET 256

typedef struct {
    double score;
    guint node;
} DfsCand;

static gint dfs_cand_cmp(gconstpointer x, gconstpointer y)
{
    const DfsCand *a = x, *b = y;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static gboolean dfs_place(Alloc *a, KbJobInfo *job, KbQueueInfo *qi, guint i, guint *budget)
{
    if (at_minimum(a, job))
        return TRUE;
    if (i >= a->tasks->len || *budget == 0)
        return FALSE;
    KbSession *ssn = a->ssn;
    KbTaskInfo *t = a->tasks->pdata[i];
    if (qi != NULL && !kb_session_allocatable(ssn, qi, t, NULL))
        return FALSE;
    g_autoptr(GArray) cands = g_array_new(FALSE, FALSE, sizeof(DfsCand));
    for (guint n = 0; n < ssn->n_nodes; n++) {
        if (!ssn->nodes[n].present || !in_domain(a, n) || !node_fits(a, t, n) ||
            !kb_session_node_predicate(ssn, t, &ssn->nodes[n], NULL))
            continue;
        DfsCand c = {score(a, t, n), n};
        g_array_append_val(cands, c);
    }
    g_array_sort(cands, dfs_cand_cmp);
    for (guint c = 0; c < MIN(cands->len, DFS_WIDTH) && *budget > 0; c++) {
        guint node = g_array_index(cands, DfsCand, c).node;
        (*budget)--;
        guint mark = a->placed->len;
        kb_session_allocate(ssn, t, &ssn->nodes[node]);
        node_changed(a, node);
        g_ptr_array_add(a->placed, t);
        if (dfs_place(a, job, qi, i + 1, budget))
            return TRUE;
        rollback(a, mark);
    }
    return FALSE;
}

static gboolean has_claims(const GPtrArray *tasks)
{
    for (guint i = 0; i < tasks->len; i++) {
        if (((const KbTaskInfo *)tasks->pdata[i])->pod->n_resource_claims > 0)
            return TRUE;
    }
    return FALSE;
}

/* Place pending tasks in order until the job holds its minimum or one cannot be placed (FALSE). */
static gboolean place_minimum(Alloc *a, KbJobInfo *job, KbQueueInfo *qi)
{
    if (a->sg != NULL)
        return place_minimum_sub_groups(a, job, qi);
    gboolean ok = TRUE;
    for (guint i = 0; ok && i < a->tasks->len && !at_minimum(a, job); i++)
        ok = place_task(a, a->ctxs, a->tasks->pdata[i], qi);
    if (ok || !has_claims(a->tasks))
        return ok;
    rollback(a, 0);
    guint budget = DFS_BUDGET;
    if (dfs_place(a, job, qi, 0, &budget))
        return TRUE;
    /* Nothing either: the greedy pass again, for its count and reason. */
    g_string_truncate(a->why, 0);
    reset_ctxs(a->ctxs);
    ok = TRUE;
    for (guint i = 0; ok && i < a->tasks->len && !at_minimum(a, job); i++)
        ok = place_task(a, a->ctxs, a->tasks->pdata[i], qi);
    return ok;
}

/* A new statement: scratch and reason cleared. */
static void begin_statement(Alloc *a)
{
    g_ptr_array_set_size(a->placed, 0);
    g_string_truncate(a->why, 0);
}

/* a->tasks := @job's pending tasks that no reservation holds back, in task order. */
static void pending_tasks(Alloc *a, KbJobInfo *job)
{
    g_ptr_array_set_size(a->tasks, 0);
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state == KB_TASK_PENDING && !t->held)
            g_ptr_array_add(a->tasks, t);
    }
    g_ptr_array_sort_with_data(a->tasks, task_cmp, a->ssn);
}

/* A ready job with tasks left to place after the first round. */
typedef struct {
    KbJobInfo *job;
    GPtrArray *tasks; /* its pending tasks in task order (the tasks are not owned) */
    guint next;       /* the next to place */
    /* Its own class contexts, kept from turn to turn: in this round nodes only fill up, so a
     * candidate list stays valid (changed nodes are re-checked as within a job), and a job of
     * thousands of extra pods searches the cluster once, not once a pod. */
    GArray *ctxs;
    /* A gang with a topology constraint grows inside its domain (Alloc.domain_key/domain). */
    const char *domain_key;
    const char *domain;
    KbSubGroups *sg; /* ref, NULL when the job has none: those grow a whole sub-group a turn */
} Growing;

typedef enum { MIN_FAILED, MIN_READY, MIN_GROWING } MinResult;

/*
 * One attempt at @job's minimum (inside a->domain when set), in one statement that commits only
 * when the gang is ready. A job that is ready afterwards with tasks left gets @grow filled in (its
 * tasks stolen from a->tasks): MIN_GROWING. On failure *@placeable and *@all say how far it got
 * (a->why says why).
 */
static MinResult try_minimum(Alloc *a, KbJobInfo *job, KbQueueInfo *qi, Growing *grow,
                             guint *placeable, gboolean *all)
{
    KbSession *ssn = a->ssn;
    pending_tasks(a, job);
    for (guint c = 0; c < a->ctxs->len; c++)
        g_array_index(a->ctxs, ClassCtx, c).used = FALSE;
    begin_statement(a);
    guint before = ready_tasks(job);
    *all = place_minimum(a, job, qi);
    if (kb_session_job_ready(ssn, job) && (a->sg == NULL || kb_sub_groups_satisfied(a->sg))) {
        if (a->placed->len > 0)
            commit(a, job);
        if (!*all || a->placed->len == a->tasks->len)
            return MIN_READY;
        /* with sub-groups the placed tasks are not the first ones: growth skips placed tasks */
        *grow = (Growing){job,
                          g_steal_pointer(&a->tasks),
                          a->sg != NULL ? 0 : a->placed->len,
                          class_ctxs_new(),
                          a->domain_key,
                          a->domain,
                          a->sg != NULL ? kb_sub_groups_ref(a->sg) : NULL};
        a->tasks = g_ptr_array_new();
        return MIN_GROWING;
    }
    *placeable = before + a->placed->len;
    discard(a);
    return MIN_FAILED;
}

/*
 * A gang with a topology constraint: its minimum inside one domain of the label, each domain
 * tried in turn (the first that holds the whole gang wins). The note names the domain that got
 * furthest.
 */
static MinResult try_domains(Alloc *a, KbJobInfo *job, KbQueueInfo *qi, Growing *grow)
{
    const char *key = job->group->topology_key;
    g_autoptr(GPtrArray) domains = kb_session_job_domains(a->ssn, job, key);
    const char *best = NULL;
    guint best_placeable = 0;
    g_autofree char *best_why = NULL;
    MinResult r = MIN_FAILED;
    a->domain_key = key;
    for (guint d = 0; d < domains->len && r == MIN_FAILED; d++) {
        guint placeable = 0;
        gboolean all = FALSE;
        a->domain = domains->pdata[d];
        r = try_minimum(a, job, qi, grow, &placeable, &all);
        if (r == MIN_FAILED && (best == NULL || placeable > best_placeable)) {
            best = a->domain;
            best_placeable = placeable;
            g_free(best_why);
            best_why = g_strdup(all ? "the job is not ready" : a->why->str);
        }
    }
    a->domain_key = a->domain = NULL;
    if (r != MIN_FAILED)
        return r;
    if (best == NULL)
        kb_session_job_note(a->ssn, job, "NotEnoughResources",
                            "%u/%d tasks placeable: no node has the topology label %s",
                            ready_tasks(job), job->min_member, key);
    else
        kb_session_job_note(a->ssn, job, "NotEnoughResources",
                            "%u/%d tasks placeable inside one %s (best %s): %s", best_placeable,
                            job->min_member, key, best, best_why);
    return MIN_FAILED;
}

/*
 * The first round: place @job up to its minimum (nothing when it is ready already), in one
 * statement that commits only when the gang is ready. A job that is ready afterwards with tasks
 * left gets @grow filled in (its tasks stolen from a->tasks) and TRUE is returned.
 */
static gboolean allocate_minimum_in(Alloc *a, KbJobInfo *job, KbQueueInfo *qi, Growing *grow);

static gboolean allocate_minimum(Alloc *a, KbJobInfo *job, KbQueueInfo *qi, Growing *grow)
{
    a->sg = kb_sub_groups_build(job);
    gboolean r = allocate_minimum_in(a, job, qi, grow);
    g_clear_pointer(&a->sg, kb_sub_groups_unref);
    return r;
}

static gboolean allocate_minimum_in(Alloc *a, KbJobInfo *job, KbQueueInfo *qi, Growing *grow)
{
    if (job->group != NULL && job->group->topology_key != NULL)
        return try_domains(a, job, qi, grow) == MIN_GROWING;
    guint placeable = 0;
    gboolean all = FALSE;
    MinResult r = try_minimum(a, job, qi, grow, &placeable, &all);
    if (r != MIN_FAILED)
        return r == MIN_GROWING;
    if (all)
        kb_session_job_note(a->ssn, job, "NotEnoughPods",
                            "%u/%d tasks placeable: the job is not "
                            "ready (minMember %d)",
                            placeable, job->min_member, job->min_member);
    else if (job->is_composite) /* counted in children: its minMember of 1 says nothing */
        kb_session_job_note(a->ssn, job, "NotEnoughResources", "%s", a->why->str);
    else
        kb_session_job_note(a->ssn, job, "NotEnoughResources", "%u/%d tasks placeable: %s",
                            placeable, job->min_member, a->why->str);
    return FALSE;
}

/*
 * The second round: the next task of a ready job, committed on its own (the gang is whole
 * already). FALSE when the job can grow no further this cycle.
 */
static gboolean grow_one(Alloc *a, Growing *g, KbQueueInfo *qi)
{
    /* tasks a whole sub-group took meanwhile are placed already */
    while (g->next < g->tasks->len &&
           ((KbTaskInfo *)g->tasks->pdata[g->next])->state != KB_TASK_PENDING)
        g->next++;
    if (g->next >= g->tasks->len)
        return FALSE;
    begin_statement(a);
    a->domain_key = g->domain_key;
    a->domain = g->domain;
    KbTaskInfo *t = g->tasks->pdata[g->next];
    gint at = g->sg != NULL ? kb_sub_groups_of(g->sg, t) : -1;
    gboolean placed;
    if (at >= 0) {
        KbSubGroup *sub = kb_sub_groups_get(g->sg, (guint)at);
        a->sg = g->sg;
        if (kb_sub_group_ready(sub) < sub->need) {
            /* a sub-group not yet whole is placed whole */
            placed = place_sub_group(a, g->ctxs, sub, qi);
        } else {
            /* one that is grows inside its domain */
            KbJobInfo part = {.tasks = sub->tasks};
            g_autoptr(GPtrArray) d =
                    sub->topology_key != NULL
                            ? kb_session_job_domains(a->ssn, &part, sub->topology_key)
                            : NULL;
            if (d != NULL && d->len > 0) {
                a->domain_key = sub->topology_key;
                a->domain = d->pdata[0];
                reset_ctxs(g->ctxs);
            }
            placed = place_task(a, g->ctxs, t, qi);
            if (d != NULL)
                reset_ctxs(g->ctxs);
        }
        a->sg = NULL;
    } else {
        placed = place_task(a, g->ctxs, t, qi);
    }
    a->domain_key = a->domain = NULL;
    if (!placed)
        return FALSE;
    commit(a, g->job);
    return ++g->next < g->tasks->len;
}

/* ---- queues and jobs ------------------------------------------------------------------------ */

typedef struct {
    KbQueueInfo *queue;
    GPtrArray *jobs; /* sorted by job order */
    guint next;
    GArray *growing; /* Growing, in job order: the second round's jobs */
    guint grow_next;
} QueueJobs;

static gint job_cmp(gconstpointer x, gconstpointer y, gpointer data)
{
    return kb_session_job_order(data, *(KbJobInfo *const *)x, *(KbJobInfo *const *)y);
}

static GArray *collect(KbSession *ssn)
{
    gboolean skip_pending = kb_conf_has_action(ssn->conf, "enqueue");
    GArray *qs = g_array_new(FALSE, TRUE, sizeof(QueueJobs));
    g_array_set_size(qs, ssn->queues->len);
    for (guint q = 0; q < ssn->queues->len; q++)
        g_array_index(qs, QueueJobs, q).queue = ssn->queues->pdata[q];
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        if (!ssn->job_scratch[j].ready_to_schedule || job->n_state[KB_TASK_PENDING] == 0)
            continue;
        if (skip_pending && job->phase == KB_JOB_PENDING)
            continue;
        KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        QueueJobs *qj = &g_array_index(qs, QueueJobs, qi->id);
        if (qj->jobs == NULL)
            qj->jobs = g_ptr_array_new();
        g_ptr_array_add(qj->jobs, job);
    }
    for (guint q = 0; q < qs->len; q++) {
        QueueJobs *qj = &g_array_index(qs, QueueJobs, q);
        if (qj->jobs != NULL)
            g_ptr_array_sort_with_data(qj->jobs, job_cmp, ssn);
    }
    return qs;
}

static gboolean has_work(const QueueJobs *qj, gboolean growing)
{
    if (growing)
        return qj->growing != NULL && qj->growing->len > 0;
    return qj->jobs != NULL && qj->next < qj->jobs->len;
}

/* The first queue in queue order with work left in the round (@growing: the second). */
static QueueJobs *next_queue(KbSession *ssn, GArray *qs, gboolean growing)
{
    QueueJobs *best = NULL;
    for (guint q = 0; q < qs->len; q++) {
        QueueJobs *qj = &g_array_index(qs, QueueJobs, q);
        if (!has_work(qj, growing))
            continue;
        if (best == NULL || kb_session_queue_order(ssn, qj->queue, best->queue) < 0)
            best = qj;
    }
    return best;
}

static void growing_clear(gpointer data)
{
    Growing *g = data;
    g_ptr_array_unref(g->tasks);
    g_array_unref(g->ctxs);
    g_clear_pointer(&g->sg, kb_sub_groups_unref);
}

static void queue_jobs_clear(QueueJobs *qj)
{
    g_clear_pointer(&qj->jobs, g_ptr_array_unref);
    g_clear_pointer(&qj->growing, g_array_unref);
}

static void alloc_init(Alloc *a, KbSession *ssn)
{
    a->ssn = ssn;
    tree_init(&a->tree, ssn->nodes, ssn->n_nodes);
    a->stamp = g_new0(guint, MAX(ssn->n_nodes, 1));
    a->scoring = kb_session_has_node_order(ssn);
    a->n_candidates = a->scoring ? N_CANDIDATES : 1;
    a->ctxs = class_ctxs_new();
    a->tasks = g_ptr_array_new();
    a->placed = g_ptr_array_new();
    a->why = g_string_new(NULL);
    a->dra_why = g_string_new(NULL);
    a->max_alloc = ssn->max_alloc;
    a->special_nodes = -1;
    a->dra_nodes = g_new0(KbDraNode *, MAX(ssn->n_nodes, 1));
    a->dra_known = g_new0(guint8, MAX(ssn->n_nodes, 1));
    a->dra_gen = kb_dra_nodes_gen(kb_cache_dra(ssn->cache));
}

static void alloc_clear(Alloc *a)
{
    g_array_unref(a->ctxs);
    g_ptr_array_unref(a->tasks);
    g_ptr_array_unref(a->placed);
    g_string_free(a->why, TRUE);
    g_string_free(a->dra_why, TRUE);
    g_free(a->stamp);
    g_free(a->dra_nodes);
    g_free(a->dra_known);
    g_free(a->tree.max);
    g_free(a->tree.present);
}

/*
 * The first round, as Volcano and kube-batch do it: every job in queue order, then job order, is
 * placed up to its minimum (minMember) and no further, so that one gang's extra pods never take
 * the room another gang needs to start. Jobs ready with tasks left join their queue's growing list.
 */
static void allocate_minimums(Alloc *a, GArray *qs)
{
    KbSession *ssn = a->ssn;
    g_autoptr(GString) why = g_string_new(NULL);
    QueueJobs *qj;
    while ((qj = next_queue(ssn, qs, FALSE)) != NULL) {
        g_string_truncate(why, 0);
        if (kb_session_overused(ssn, qj->queue, why)) {
            /* Nothing new for this queue this cycle; its jobs wait with the reason. */
            for (; qj->next < qj->jobs->len; qj->next++) {
                KbJobInfo *job = qj->jobs->pdata[qj->next];
                kb_session_job_note(ssn, job, "NotEnoughResources", "%u/%d tasks placeable: %s",
                                    ready_tasks(job), job->min_member, why->str);
            }
            continue;
        }
        Growing g;
        if (allocate_minimum(a, qj->jobs->pdata[qj->next++], qj->queue, &g)) {
            if (qj->growing == NULL) {
                qj->growing = g_array_new(FALSE, FALSE, sizeof(Growing));
                g_array_set_clear_func(qj->growing, growing_clear);
            }
            g_array_append_val(qj->growing, g);
        }
    }
}

/*
 * The second round: ready jobs grow beyond their minimum one task at a time, taking turns in job
 * order within their queue, the queues in queue order (re-evaluated at each step, as shares
 * change). A job leaves the round at its first task that cannot be placed; a queue, once overused.
 */
static void allocate_growth(Alloc *a, GArray *qs)
{
    KbSession *ssn = a->ssn;
    g_autoptr(GString) why = g_string_new(NULL);
    QueueJobs *qj;
    while ((qj = next_queue(ssn, qs, TRUE)) != NULL) {
        if (kb_session_overused(ssn, qj->queue, why)) {
            g_array_set_size(qj->growing, 0);
            continue;
        }
        if (qj->grow_next >= qj->growing->len)
            qj->grow_next = 0;
        Growing *g = &g_array_index(qj->growing, Growing, qj->grow_next);
        if (grow_one(a, g, qj->queue))
            qj->grow_next++;
        else
            g_array_remove_index(qj->growing, qj->grow_next);
    }
}

static void allocate_execute(KbSession *ssn)
{
    Alloc a = {0};
    alloc_init(&a, ssn);
    GArray *qs = collect(ssn);
    allocate_minimums(&a, qs);
    allocate_growth(&a, qs);
    for (guint q = 0; q < qs->len; q++)
        queue_jobs_clear(&g_array_index(qs, QueueJobs, q));
    g_array_unref(qs);
    alloc_clear(&a);
}

const struct kb_action_ops kb_action_allocate = {
        .name = "allocate",
        .execute = allocate_execute,
};
