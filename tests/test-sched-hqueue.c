/*
 * Hierarchical queues: the tree and its shares (scheduler/queue-tree.c) as tables, then the
 * scheduler core end to end (enqueue, allocate, reclaim over decoded Queue objects with
 * spec.parent): the issue's two organisations sharing 32 GPUs, borrowing, reclaim, bad trees.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-objects.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/queue-tree.h"
#include "tests/lib/kb-test-sched.h"

/* ---- the tree alone: GPUs only ------------------------------------------------------------- */

#define NONE (-1)

typedef struct {
    const char *name;
    const char *parent; /* NULL: under the root */
    int weight;
    int cap;           /* GPUs; NONE: unlimited */
    int guar;          /* GPUs */
    int deserved;      /* fixed deserved GPUs; NONE: weight split */
    int demand;        /* GPUs its jobs hold and ask for (leaves) */
    int expect;        /* deserved GPUs */
    const char *fault; /* reason, or NULL */
} QSpec;

typedef struct {
    const char *path;
    int total; /* cluster GPUs */
    QSpec q[8];
} TreeCase;

/* Everyone saturated (demand 100): the issue's figures. */
static const TreeCase tree_cases[] = {
        {"/scheduler/hqueue/share/issue-saturated",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 8, NULL},
          {"teamA1", "orgA", 1, NONE, 0, NONE, 100, 4, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 4, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 24, NULL}}},
        /* The same three leaves read flat: 32 x 1/5, 1/5, 3/5 = 6.4, 6.4, 19.2, rounded up. */
        {"/scheduler/hqueue/share/issue-flat-reading",
         32,
         {{"teamA1", NULL, 1, NONE, 0, NONE, 100, 7, NULL},
          {"teamA2", NULL, 1, NONE, 0, NONE, 100, 7, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 20, NULL}}},
        {"/scheduler/hqueue/share/issue-orgB-idle-teams-borrow-evenly",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 32, NULL},
          {"teamA1", "orgA", 1, NONE, 0, NONE, 100, 16, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 16, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 0, 0, NULL}}},
        /* An idle team lends to its sister team first, not to the other organisation. */
        {"/scheduler/hqueue/share/idle-team-lends-to-sister-first",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 8, NULL},
          {"teamA1", "orgA", 1, NONE, 0, NONE, 0, 0, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 8, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 24, NULL}}},
        /* What a subtree cannot use goes up to the parent's siblings. */
        {"/scheduler/hqueue/share/subtree-short-demand-goes-up",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 3, NULL},
          {"teamA1", "orgA", 1, NONE, 0, NONE, 1, 1, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 2, 2, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 29, NULL}}},
        /* A capped child: its sibling gets the rest of the parent's share. */
        {"/scheduler/hqueue/share/capped-child-redistributes",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 8, NULL},
          {"teamA1", "orgA", 1, 2, 0, NONE, 100, 2, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 6, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 24, NULL}}},
        /* Never beyond an ancestor's capability, even with the other organisation idle. */
        {"/scheduler/hqueue/share/ancestor-capability-caps-borrowing",
         32,
         {{"orgA", NULL, 1, 10, 0, NONE, 0, 10, NULL},
          {"teamA1", "orgA", 1, NONE, 0, NONE, 100, 5, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 5, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 0, 0, NULL}}},
        /* docs/configuration.md's last row (hierarchical queues): org-research capped at 12,
           org-product idle. */
        {"/scheduler/hqueue/share/readme-capped-organisation",
         32,
         {{"org-research", NULL, 1, 12, 0, NONE, 0, 12, NULL},
          {"vision", "org-research", 1, NONE, 0, NONE, 100, 6, NULL},
          {"speech", "org-research", 1, NONE, 0, NONE, 100, 6, NULL},
          {"org-product", NULL, 3, NONE, 0, NONE, 0, 0, NULL},
          {"ranking", "org-product", 1, NONE, 0, NONE, 0, 0, NULL}}},
        {"/scheduler/hqueue/share/guarantee-raises-child",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 8, NULL},
          {"teamA1", "orgA", 1, NONE, 6, NONE, 100, 6, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 2, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 24, NULL}}},
        /* A guarantee below the team raises its organisation too. */
        {"/scheduler/hqueue/share/guarantee-raises-ancestors",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 12, NULL},
          {"teamA1", "orgA", 1, NONE, 12, NONE, 100, 12, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 0, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 20, NULL}}},
        /* Volcano's capacity form: a fixed deserved overrides the weight split... */
        {"/scheduler/hqueue/share/fixed-deserved",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 8, NULL},
          {"teamA1", "orgA", 1, NONE, 0, 6, 100, 6, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 2, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 24, NULL}}},
        /* ... and its queue still borrows what its sister leaves idle. */
        {"/scheduler/hqueue/share/fixed-deserved-borrows",
         32,
         {{"orgA", NULL, 1, NONE, 0, NONE, 0, 8, NULL},
          {"teamA1", "orgA", 1, NONE, 0, 2, 100, 8, NULL},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 0, 0, NULL},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 24, NULL}}},
        /* Five levels, one path: the whole cluster reaches the leaf. */
        {"/scheduler/hqueue/share/deep-path",
         64,
         {{"l1", NULL, 1, NONE, 0, NONE, 0, 64, NULL},
          {"l2", "l1", 1, NONE, 0, NONE, 0, 64, NULL},
          {"l3", "l2", 1, NONE, 0, NONE, 0, 64, NULL},
          {"l4", "l3", 1, NONE, 0, NONE, 0, 64, NULL},
          {"l5", "l4", 1, NONE, 0, NONE, 100, 64, NULL}}},
        /* Bad trees: the queues involved get nothing, the others share as if they were not. */
        {"/scheduler/hqueue/fault/parent-not-found",
         32,
         {{"orgA", "nosuch", 1, NONE, 0, NONE, 0, 0, "ParentNotFound"},
          {"teamA1", "orgA", 1, NONE, 0, NONE, 100, 0, "AncestorInvalid"},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 32, NULL}}},
        {"/scheduler/hqueue/fault/cycle",
         32,
         {{"x", "z", 1, NONE, 0, NONE, 100, 0, "ParentCycle"},
          {"y", "x", 1, NONE, 0, NONE, 100, 0, "ParentCycle"},
          {"z", "y", 1, NONE, 0, NONE, 100, 0, "ParentCycle"},
          {"below", "y", 1, NONE, 0, NONE, 100, 0, "AncestorInvalid"},
          {"self", "self", 1, NONE, 0, NONE, 100, 0, "ParentCycle"},
          {"orgB", NULL, 1, NONE, 0, NONE, 100, 32, NULL}}},
        {"/scheduler/hqueue/fault/guarantees-above-parent",
         32,
         {{"orgA", NULL, 1, NONE, 8, NONE, 0, 0, "GuaranteeExceeded"},
          {"teamA1", "orgA", 1, NONE, 6, NONE, 100, 0, "AncestorInvalid"},
          {"teamA2", "orgA", 1, NONE, 4, NONE, 100, 0, "AncestorInvalid"},
          {"orgB", NULL, 3, NONE, 0, NONE, 100, 32, NULL}}},
        {"/scheduler/hqueue/fault/capability-above-parent",
         32,
         {{"orgA", NULL, 1, 8, 0, NONE, 0, 4, NULL},
          {"teamA1", "orgA", 1, 16, 0, NONE, 100, 0, "CapabilityExceeded"},
          {"teamA2", "orgA", 1, NONE, 0, NONE, 100, 4, NULL},
          {"orgB", NULL, 7, NONE, 0, NONE, 100, 28, NULL}}},
        /* Volcano's root Queue object stands for the root: its fixed capability is ignored. */
        {"/scheduler/hqueue/share/volcano-root-object",
         32,
         {{"root", NULL, 1, 8, 0, NONE, 0, 32, NULL},
          {"a", "root", 1, NONE, 0, NONE, 100, 16, NULL},
          {"b", NULL, 1, NONE, 0, NONE, 100, 16, NULL}}},
        /* A capability above the cluster is no fault: the root grows with the cluster. */
        {"/scheduler/hqueue/share/capability-above-cluster-is-valid",
         16,
         {{"orgA", NULL, 1, 64, 0, NONE, 0, 16, NULL},
          {"teamA1", "orgA", 1, 48, 0, NONE, 100, 16, NULL}}},
};

static KbQueueTree *tree_from(const QSpec *q, guint *n)
{
    KbQtreeQueue in[8];
    guint k = 0;
    for (; k < 8 && q[k].name != NULL; k++) {
        memset(&in[k], 0, sizeof(in[k]));
        in[k].name = g_intern_string(q[k].name);
        in[k].parent = q[k].parent != NULL ? g_intern_string(q[k].parent) : NULL;
        in[k].weight = q[k].weight;
        kb_resources_set_unlimited(&in[k].capability);
        for (int s = 0; s < KB_RES_MAX; s++)
            in[k].deserved.v[s] = -1;
        if (q[k].cap != NONE)
            in[k].capability.v[KB_RES_GPU] = (gint64)q[k].cap * KB_GPU_MILLI;
        in[k].guarantee.v[KB_RES_GPU] = (gint64)q[k].guar * KB_GPU_MILLI;
        if (q[k].deserved != NONE)
            in[k].deserved.v[KB_RES_GPU] = (gint64)q[k].deserved * KB_GPU_MILLI;
    }
    *n = k;
    KbQueueTree *t = kb_qtree_new(in, k);
    for (guint i = 0; i < k; i++)
        t->demand[i].v[KB_RES_GPU] = (gint64)q[i].demand * KB_GPU_MILLI;
    return t;
}

static void test_tree_case(gconstpointer data)
{
    const TreeCase *c = data;
    guint n;
    g_autoptr(KbQueueTree) t = tree_from(c->q, &n);
    KbResources total = {{0}};
    total.v[KB_RES_GPU] = (gint64)c->total * KB_GPU_MILLI;
    kb_qtree_compute(t, &total);
    for (guint i = 0; i < n; i++) {
        const QSpec *q = &c->q[i];
        if (t->deserved[i].v[KB_RES_GPU] != (gint64)q->expect * KB_GPU_MILLI ||
            g_strcmp0(kb_qtree_fault_reason(t->fault[i]), q->fault) != 0)
            g_error("%s: queue %s deserves %" G_GINT64_FORMAT " GPUs (want %d), fault %s (want "
                    "%s): %s",
                    c->path, q->name, t->deserved[i].v[KB_RES_GPU], q->expect,
                    kb_qtree_fault_reason(t->fault[i]), q->fault,
                    t->fault_message[i] != NULL ? t->fault_message[i] : "");
        g_assert_cmpint(t->held[i], ==, q->fault != NULL);
    }
}

static const QSpec *case_queues(const char *path)
{
    for (guint i = 0; i < G_N_ELEMENTS(tree_cases); i++) {
        if (strcmp(tree_cases[i].path, path) == 0)
            return tree_cases[i].q;
    }
    g_error("no case %s", path);
}

/* The messages name the queues and the figures. */
static void test_fault_messages(void)
{
    guint n;
    g_autoptr(KbQueueTree) g =
            tree_from(case_queues("/scheduler/hqueue/fault/guarantees-above-parent"), &n);
    g_assert_cmpstr(g->fault_message[0], ==,
                    "queue \"orgA\": children's guarantees add up to 10 nvidia.com/gpu "
                    "(\"teamA1\" 6, \"teamA2\" 4), more than its guarantee of 8");
    g_autoptr(KbQueueTree) c = tree_from(case_queues("/scheduler/hqueue/fault/cycle"), &n);
    g_assert_cmpstr(c->fault_message[0], ==,
                    "queue \"x\": spec.parent forms a cycle: \"x\" -> \"z\" -> \"y\" -> \"x\"");
    g_assert_cmpstr(c->fault_message[3], ==, "queue \"below\": ancestor queue \"y\" is invalid");
    g_autoptr(KbQueueTree) p =
            tree_from(case_queues("/scheduler/hqueue/fault/parent-not-found"), &n);
    g_assert_cmpstr(p->fault_message[0], ==,
                    "queue \"orgA\": parent queue \"nosuch\" does not exist");
    g_autoptr(KbQueueTree) k =
            tree_from(case_queues("/scheduler/hqueue/fault/capability-above-parent"), &n);
    g_assert_cmpstr(k->fault_message[1], ==,
                    "queue \"teamA1\": capability 16 nvidia.com/gpu is above its parent "
                    "\"orgA\"'s capability of 8");
}

/* The root owns the cluster whatever its size (volcano #4349: a fixed root refused children). */
static void test_root_grows(void)
{
    const QSpec q[] = {{"orgA", NULL, 1, NONE, 0, NONE, 0, 0, NULL},
                       {"teamA1", "orgA", 1, NONE, 0, NONE, 1000, 0, NULL},
                       {"orgB", NULL, 3, NONE, 0, NONE, 1000, 0, NULL},
                       {NULL}};
    guint n;
    g_autoptr(KbQueueTree) t = tree_from(q, &n);
    static const gint64 totals[] = {16 * KB_GPU_MILLI, 64 * KB_GPU_MILLI, 512 * KB_GPU_MILLI};
    for (guint i = 0; i < G_N_ELEMENTS(totals); i++) {
        KbResources total = {{0}};
        total.v[KB_RES_GPU] = totals[i];
        kb_qtree_compute(t, &total);
        g_assert_cmpint(t->deserved[t->root].v[KB_RES_GPU], ==, totals[i]);
        g_assert_cmpint(t->deserved[1].v[KB_RES_GPU], ==, totals[i] / 4);
        g_assert_cmpint(t->deserved[2].v[KB_RES_GPU], ==, totals[i] * 3 / 4);
    }
}

/* Memory in bytes: a queue asking for less than its share deserves exactly what it asks, not
 * one byte less (the rounding's tolerance is relative; at 1.7e12 it once exceeded a byte). */
static void test_memory_share_exact(void)
{
    const QSpec q[] = {{"filler", NULL, 1, NONE, 0, NONE, 0, 0, NULL},
                       {"big", NULL, 1, NONE, 0, NONE, 0, 0, NULL},
                       {NULL}};
    guint n;
    g_autoptr(KbQueueTree) t = tree_from(q, &n);
    const gint64 gi = (gint64)1 << 30;
    t->demand[0].v[KB_RES_MEMORY] = 1600 * gi;
    t->demand[1].v[KB_RES_MEMORY] = 100 * gi;
    KbResources total = {{0}};
    total.v[KB_RES_MEMORY] = 384000 * gi;
    kb_qtree_compute(t, &total);
    g_assert_cmpint(t->deserved[0].v[KB_RES_MEMORY], ==, 1600 * gi);
    g_assert_cmpint(t->deserved[1].v[KB_RES_MEMORY], ==, 100 * gi);
}

typedef struct {
    double avail;
    guint k;
    double w[4], lo[4], hi[4], out[4];
} FillCase;

static void test_waterfill(void)
{
    static const FillCase cases[] = {
            {32, 2, {1, 3}, {0, 0}, {100, 100}, {8, 24}},
            {32, 2, {1, 3}, {0, 0}, {2, 100}, {2, 30}},      /* a capped share's rest moves */
            {32, 2, {1, 3}, {0, 0}, {2, 5}, {2, 5}},         /* not enough demand: idle */
            {32, 2, {1, 3}, {20, 20}, {100, 100}, {20, 20}}, /* floors above avail */
            {32, 3, {1, 1, 1}, {12, 0, 0}, {100, 100, 100}, {12, 10, 10}},
            {10, 3, {1, 1, 2}, {0, 0, 0}, {1, 100, 100}, {1, 3, 6}},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const FillCase *c = &cases[i];
        double out[4];
        kb_qtree_waterfill(c->avail, c->k, c->w, c->lo, c->hi, out);
        for (guint j = 0; j < c->k; j++) {
            if (fabs(out[j] - c->out[j]) > 1e-6)
                g_error("waterfill case %u share %u: %g, want %g", i, j, out[j], c->out[j]);
        }
    }
}

/*
 * Flat setups behave as before the tree: the previous flat water-filling (proportion.c before
 * hierarchical queues, kept here as the reference) against the tree, on random flat queues
 * (weights, capabilities, demands in cpu, memory and GPUs; no guarantees: the old rounds left a
 * guarantee's part of the cluster undistributed, the tree does not).
 */
typedef struct {
    double des[3];
    gboolean meet;
} RefFill;

static const int ref_slots[3] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};

static gboolean ref_round(guint nq, const int *w, const KbResources *cap, const KbResources *req,
                          RefFill *fill, double *remaining)
{
    double total_weight = 0, inc[3] = {0}, dec[3] = {0};
    for (guint q = 0; q < nq; q++) {
        if (!fill[q].meet)
            total_weight += w[q];
    }
    if (total_weight == 0)
        return FALSE;
    for (guint q = 0; q < nq; q++) {
        if (fill[q].meet)
            continue;
        gboolean satisfied = TRUE, unchanged = TRUE;
        for (guint i = 0; i < 3; i++) {
            int s = ref_slots[i];
            double old = fill[q].des[i];
            double d = old + remaining[i] * w[q] / total_weight;
            d = MIN(d, (double)cap[q].v[s]);
            d = MIN(d, (double)req[q].v[s]);
            fill[q].des[i] = d;
            if ((double)req[q].v[s] > d)
                satisfied = FALSE;
            if (d != old)
                unchanged = FALSE;
            if (d > old)
                inc[i] += d - old;
            else
                dec[i] += old - d;
        }
        fill[q].meet = satisfied || unchanged;
    }
    gboolean left = FALSE;
    for (guint i = 0; i < 3; i++) {
        remaining[i] = MAX(remaining[i] - inc[i] + dec[i], 0);
        left = left || remaining[i] > 1e-6;
    }
    return left;
}

static void test_flat_as_before(void)
{
    GRand *rand = g_rand_new_with_seed(14);
    for (guint round = 0; round < 500; round++) {
        guint nq = (guint)g_rand_int_range(rand, 1, 7);
        int w[8];
        KbResources cap[8], req[8], total = {{0}};
        KbQtreeQueue in[8];
        total.v[KB_RES_CPU] = 1000 * g_rand_int_range(rand, 1, 200);
        total.v[KB_RES_MEMORY] = (gint64)g_rand_int_range(rand, 1, 2000) << 30;
        total.v[KB_RES_GPU] = 8 * g_rand_int_range(rand, 1, 20);
        for (guint q = 0; q < nq; q++) {
            w[q] = g_rand_int_range(rand, 1, 5);
            kb_resources_set_unlimited(&cap[q]);
            kb_resources_clear(&req[q]);
            for (guint i = 0; i < 3; i++) {
                int s = ref_slots[i];
                if (g_rand_boolean(rand))
                    cap[q].v[s] =
                            g_rand_int_range(rand, 0, (gint32)MIN(total.v[s] + 1, G_MAXINT32));
                req[q].v[s] =
                        g_rand_int_range(rand, 0, (gint32)MIN(total.v[s] * 2 / 3 + 1, G_MAXINT32));
            }
            memset(&in[q], 0, sizeof(in[q]));
            static const char *const names[] = {"q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7"};
            in[q].name = g_intern_static_string(names[q]);
            in[q].weight = w[q];
            in[q].capability = cap[q];
            for (int s = 0; s < KB_RES_MAX; s++)
                in[q].deserved.v[s] = -1;
        }
        /* GPUs are counted in milli-GPUs and shared out in whole ones */
        total.v[KB_RES_GPU] *= KB_GPU_MILLI;
        for (guint q = 0; q < nq; q++) {
            req[q].v[KB_RES_GPU] *= KB_GPU_MILLI;
            if (cap[q].v[KB_RES_GPU] != KB_RESOURCE_UNLIMITED)
                cap[q].v[KB_RES_GPU] *= KB_GPU_MILLI;
            in[q].capability = cap[q];
        }
        RefFill fill[8] = {{{0}}};
        double remaining[3];
        for (guint i = 0; i < 3; i++)
            remaining[i] = (double)total.v[ref_slots[i]];
        for (guint r = 0; r < 64 && ref_round(nq, w, cap, req, fill, remaining); r++)
            ;
        g_autoptr(KbQueueTree) t = kb_qtree_new(in, nq);
        for (guint q = 0; q < nq; q++)
            t->demand[q] = req[q];
        kb_qtree_compute(t, &total);
        for (guint q = 0; q < nq; q++) {
            for (guint i = 0; i < 3; i++) {
                int s = ref_slots[i];
                gint64 unit = s == KB_RES_GPU ? KB_GPU_MILLI : 1;
                gint64 ref = (gint64)ceil(fill[q].des[i] / (double)unit - 1e-9) * unit;
                gint64 got = t->deserved[q].v[s];
                /* The old rounds stopped after 64; both round up: allow one unit. */
                if (llabs(ref - got) > unit)
                    g_error("round %u queue %u %s: tree %" G_GINT64_FORMAT
                            ", before %" G_GINT64_FORMAT,
                            round, q, kb_resource_name(s), got, ref);
            }
        }
    }
    g_rand_free(rand);
}

/* ---- the scheduler core -------------------------------------------------------------------- */

typedef KbTestSched Fx;

#define T_2026 1767225600

/* Reclaim with no minimum run time: the tests' victims started a cycle ago. */
static Fx *fx_new(const char *actions)
{
    const char *def = kb_conf_default_yaml();
    const char *tiers = strstr(def, "tiers:");
    g_autofree char *yaml = g_strdup_printf(
            "actions: \"%s\"\nconfigurations:\n- name: reclaim\n  arguments:\n    minRunTime: "
            "\"0\"\n%s",
            actions, tiers);
    Fx *fx = kb_test_sched_new(yaml);
    fx->now = T_2026 + 3600;
    return fx;
}

static void add_node(Fx *fx, const char *name, int gpus)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":"
            "\"n-%s\"},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"True\"}]}}",
            name, name, gpus);
    kb_test_sched_add_node(fx, json);
}

/* Queue @name under @parent (NULL: none) with @weight and @extra spec members ("" or ",..."). */
static void add_queue(Fx *fx, const char *name, const char *parent, int weight, const char *extra)
{
    g_autofree char *p =
            parent != NULL ? g_strdup_printf(",\"parent\":\"%s\"", parent) : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":{\"weight\":%d%s%s}}",
            name, name, weight, p, extra);
    kb_test_sched_add_queue(fx, json);
}

/* The issue's tree: orgA (weight 1) with teamA1, teamA2 (weight 1), orgB (weight 3). */
static void add_issue_tree(Fx *fx, const char *orgB_extra)
{
    add_queue(fx, "orgA", NULL, 1, "");
    add_queue(fx, "teamA1", "orgA", 1, "");
    add_queue(fx, "teamA2", "orgA", 1, "");
    add_queue(fx, "orgB", NULL, 3, orgB_extra);
}

/* Job @name in @queue: a gang of @n pods of @gpus GPUs each (minMember @n), pending. */
static void add_job(Fx *fx, const char *name, const char *queue, guint n, int gpus)
{
    g_autofree char *gjson = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"pg-%s\","
            "\"creationTimestamp\":\"2026-01-01T00:%02u:%02uZ\"},\"spec\":{\"minMember\":%u,"
            "\"queue\":\"%s\"}}",
            name, name, (fx->seq / 60) % 60, fx->seq % 60, n, queue);
    fx->seq++;
    kb_test_sched_add_pod_group(fx, gjson);
    for (guint i = 0; i < n; i++) {
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%u\","
                "\"namespace\":\"ml\",\"uid\":\"u-%s-%u\",\"creationTimestamp\":"
                "\"2026-01-01T00:%02u:%02uZ\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
                "\"%s\"}},\"spec\":{\"schedulerName\":\"kube-batchd\",\"containers\":[{"
                "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\","
                "\"nvidia.com/gpu\":%d}}}]},\"status\":{\"phase\":\"Pending\"}}",
                name, i, name, i, (fx->seq / 60) % 60, fx->seq % 60, name, gpus);
        fx->seq++;
        kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
    }
}

/* @count jobs "<prefix>-<i>" of 2 pods x 1 GPU in @queue. */
static void add_jobs(Fx *fx, const char *prefix, const char *queue, guint count)
{
    for (guint i = 0; i < count; i++) {
        g_autofree char *name = g_strdup_printf("%s-%02u", prefix, i);
        add_job(fx, name, queue, 2, 1);
    }
}

static const KbQueueStatus *queue_status(Fx *fx, const char *name)
{
    for (guint i = 0; i < fx->res->queue_statuses->len; i++) {
        const KbQueueStatus *qs = &g_array_index(fx->res->queue_statuses, KbQueueStatus, i);
        if (strcmp(qs->name, name) == 0)
            return qs;
    }
    g_error("no status for queue %s", name);
}

static gint64 gpus(Fx *fx, const char *queue)
{
    return queue_status(fx, queue)->allocated.v[KB_RES_GPU] / KB_GPU_MILLI;
}

static gint64 deserved(Fx *fx, const char *queue)
{
    return queue_status(fx, queue)->deserved.v[KB_RES_GPU] / KB_GPU_MILLI;
}

/* Delete every pod of the last cycle's evictions (the kubelet stopped them). */
static guint delete_evicted(Fx *fx, GPtrArray *victim_jobs)
{
    g_autoptr(GArray) ev = g_array_ref(fx->res->evictions);
    for (guint i = 0; i < ev->len; i++) {
        const KbEviction *e = &g_array_index(ev, KbEviction, i);
        if (victim_jobs != NULL)
            g_ptr_array_add(victim_jobs, g_strdup(e->job));
        kb_cache_delete_pod(fx->cache, e->pod);
    }
    return ev->len;
}

/* Cycles (binds confirmed, evicted pods gone) until one changes nothing; at most @max. */
static guint settle(Fx *fx, guint max, GPtrArray *victim_jobs)
{
    guint cycles = 0;
    for (; cycles < max; cycles++) {
        kb_test_sched_run(fx);
        guint binds = kb_test_sched_binds(fx, NULL);
        kb_test_sched_confirm_all(fx, FALSE);
        guint evicted = delete_evicted(fx, victim_jobs);
        if (binds == 0 && evicted == 0)
            break;
    }
    kb_test_sched_run(fx); /* figures after the last changes */
    return cycles;
}

static void four_nodes(Fx *fx)
{
    for (guint i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%u", i);
        add_node(fx, n, 8);
    }
}

/* The issue's check: everything saturated, 32 GPUs: 4, 4 and 24 (not 6, 6, 19). */
static void test_saturated(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_issue_tree(fx, "");
    add_jobs(fx, "a1", "teamA1", 16);
    add_jobs(fx, "a2", "teamA2", 16);
    add_jobs(fx, "b", "orgB", 16);
    settle(fx, 40, NULL);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 4);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 4);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 24);
    g_assert_cmpint(gpus(fx, "orgA"), ==, 8); /* a parent's figures are its subtree's */
    g_assert_cmpint(deserved(fx, "teamA1"), ==, 4);
    g_assert_cmpint(deserved(fx, "orgA"), ==, 8);
    g_assert_cmpint(deserved(fx, "orgB"), ==, 24);
    g_assert_cmpint(queue_status(fx, "orgA")->pending.v[KB_RES_GPU], ==, 56000);
    g_assert_cmpstr(queue_status(fx, "teamA1")->parent, ==, "orgA");
    g_assert_cmpstr(queue_status(fx, "orgB")->parent, ==, "root");
    kb_test_sched_free(fx);
}

/* The same queues without parents behave as flat queues always did. */
static void test_saturated_flat(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_queue(fx, "teamA1", NULL, 1, "");
    add_queue(fx, "teamA2", NULL, 1, "");
    add_queue(fx, "orgB", NULL, 3, "");
    add_jobs(fx, "a1", "teamA1", 16);
    add_jobs(fx, "a2", "teamA2", 16);
    add_jobs(fx, "b", "orgB", 16);
    settle(fx, 40, NULL);
    g_assert_cmpint(deserved(fx, "teamA1"), ==, 7);
    g_assert_cmpint(deserved(fx, "teamA2"), ==, 7);
    g_assert_cmpint(deserved(fx, "orgB"), ==, 20);
    g_assert_cmpint(gpus(fx, "teamA1") + gpus(fx, "teamA2") + gpus(fx, "orgB"), ==, 32);
    g_assert_cmpint(gpus(fx, "orgB"), >=, 16); /* a team below 7 may start one gang of 2 */
    g_assert_cmpint(gpus(fx, "teamA1"), >=, 6);
    g_assert_cmpint(gpus(fx, "teamA2"), >=, 6);
    kb_test_sched_free(fx);
}

static guint count_prefix(GPtrArray *jobs, const char *prefix)
{
    guint n = 0;
    for (guint i = 0; i < jobs->len; i++)
        n += g_str_has_prefix(jobs->pdata[i], prefix);
    return n;
}

/*
 * The issue's check continued: org B idle, org A's teams borrow all 32 evenly; org B's jobs
 * return: reclaim gives it its 24 back, whole gangs only, and leaves A's teams 4 each.
 */
static void test_borrow_and_reclaim(void)
{
    Fx *fx = fx_new("enqueue, allocate, reclaim");
    four_nodes(fx);
    add_issue_tree(fx, "");
    add_jobs(fx, "a1", "teamA1", 16);
    add_jobs(fx, "a2", "teamA2", 16);
    settle(fx, 40, NULL);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 16);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 16);
    g_assert_cmpint(deserved(fx, "orgA"), ==, 32);

    add_jobs(fx, "b", "orgB", 16);
    g_autoptr(GPtrArray) victims = g_ptr_array_new_with_free_func(g_free);
    settle(fx, 60, victims);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 24);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 4);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 4);
    /* 24 pods evicted, 12 from each team, as whole gangs of 2 (no gang left at 1 pod). */
    g_assert_cmpuint(victims->len, ==, 24);
    g_assert_cmpuint(count_prefix(victims, "ml/a1-"), ==, 12);
    g_assert_cmpuint(count_prefix(victims, "ml/a2-"), ==, 12);
    GPtrArray *jobs = kb_cache_jobs(fx->cache);
    for (guint j = 0; j < jobs->len; j++) {
        const KbJobInfo *job = jobs->pdata[j];
        guint running = job->n_state[KB_TASK_RUNNING];
        if (running != 0 && running != 2)
            g_error("job %s left with %u of its 2 pods running", job->key, running);
    }
    kb_test_sched_free(fx);
}

/*
 * Nearest first: teamA1 comes back while both its sister teamA2 and orgB are over their shares;
 * its first gangs are reclaimed from teamA2 (whose jobs are the older: a flat reclaim takes the
 * youngest first, i.e. orgB's), and only what teamA2 cannot give comes from orgB.
 */
static void test_reclaim_nearest_first(void)
{
    Fx *fx = fx_new("enqueue, allocate, reclaim");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, "");
    add_queue(fx, "teamA1", "orgA", 1, "");
    add_queue(fx, "teamA2", "orgA", 1, "");
    add_queue(fx, "orgB", NULL, 1, "");
    add_jobs(fx, "a2", "teamA2", 6); /* 12 GPUs: orgA deserves 12 of 32, orgB 20 */
    settle(fx, 20, NULL);
    add_jobs(fx, "b", "orgB", 16);
    settle(fx, 20, NULL);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 12);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 20);
    /* teamA1 wants 8: orgA now deserves 16 (8 + 8), orgB 16; teamA2 and orgB are 4 over. */
    add_jobs(fx, "a1", "teamA1", 4);
    kb_test_sched_run(fx);
    g_autoptr(GPtrArray) first = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < fx->res->evictions->len; i++)
        g_ptr_array_add(first, g_strdup(g_array_index(fx->res->evictions, KbEviction, i).job));
    g_assert_cmpuint(first->len, ==, 8);
    g_assert_cmpstr(first->pdata[0], !=, NULL);
    g_assert_true(g_str_has_prefix(first->pdata[0], "ml/a2-"));
    g_assert_cmpuint(count_prefix(first, "ml/a2-"), ==, 4);
    g_assert_cmpuint(count_prefix(first, "ml/b-"), ==, 4);
    delete_evicted(fx, NULL);
    settle(fx, 20, NULL);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 8);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 8);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 16);
    kb_test_sched_free(fx);
}

/* A queue that is not reclaimable is never a victim, wherever it sits in the tree. */
static void test_reclaim_not_reclaimable(void)
{
    Fx *fx = fx_new("enqueue, allocate, reclaim");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, ",\"reclaimable\":false");
    add_queue(fx, "teamA1", "orgA", 1, "");
    add_queue(fx, "teamA2", "orgA", 1, "");
    add_queue(fx, "orgB", NULL, 3, "");
    add_jobs(fx, "a1", "teamA1", 16);
    add_jobs(fx, "a2", "teamA2", 16);
    settle(fx, 40, NULL);
    add_jobs(fx, "b", "orgB", 16);
    g_autoptr(GPtrArray) victims = g_ptr_array_new_with_free_func(g_free);
    settle(fx, 10, victims);
    g_assert_cmpuint(victims->len, ==, 0);
    g_assert_cmpint(gpus(fx, "teamA1") + gpus(fx, "teamA2"), ==, 32);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 0);
    kb_test_sched_free(fx);
}

/* ... but the teams of such a queue still rebalance among themselves. */
static void test_reclaim_within_not_reclaimable(void)
{
    Fx *fx = fx_new("enqueue, allocate, reclaim");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, ",\"reclaimable\":false");
    add_queue(fx, "teamA1", "orgA", 1, "");
    add_queue(fx, "teamA2", "orgA", 1, "");
    add_queue(fx, "orgB", NULL, 3, "");
    add_jobs(fx, "a1", "teamA1", 16);
    add_jobs(fx, "b", "orgB", 16);
    settle(fx, 40, NULL);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 8);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 24);
    add_jobs(fx, "a2", "teamA2", 16);
    g_autoptr(GPtrArray) victims = g_ptr_array_new_with_free_func(g_free);
    settle(fx, 20, victims);
    g_assert_cmpuint(count_prefix(victims, "ml/a1-"), ==, 4);
    g_assert_cmpuint(victims->len, ==, 4);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 4);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 4);
    g_assert_cmpint(gpus(fx, "orgB"), ==, 24);
    kb_test_sched_free(fx);
}

static const KbJobStatus *job_status(Fx *fx, const char *key)
{
    const KbJobStatus *st = kb_cycle_result_job(fx->res, key);
    g_assert_nonnull(st);
    return st;
}

/* Jobs run in leaf queues only: a job naming a parent queue waits and says so. */
static void test_job_in_parent_queue(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_issue_tree(fx, "");
    add_job(fx, "misplaced", "orgA", 2, 1);
    add_job(fx, "fine", "teamA1", 2, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/misplaced"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/fine"), ==, 2);
    const KbJobStatus *st = job_status(fx, "ml/misplaced");
    g_assert_cmpstr(st->reason, ==, "QueueNotLeaf");
    g_assert_cmpstr(st->message, ==,
                    "queue \"orgA\" is a parent queue (children \"teamA1\", \"teamA2\"): jobs run "
                    "in leaf queues only");
    /* Volcano's root Queue object is the root: no jobs there, and it shows the root's figures. */
    add_queue(fx, "root", NULL, 1, ",\"capability\":{\"nvidia.com/gpu\":\"4\"}");
    add_job(fx, "at-root", "root", 1, 1);
    add_jobs(fx, "b", "orgB", 8);
    kb_test_sched_confirm_all(fx, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpstr(job_status(fx, "ml/at-root")->reason, ==, "QueueNotLeaf");
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/b-07"), ==, 2); /* the root's 4 GPUs: ignored */
    kb_test_sched_confirm_all(fx, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpint(gpus(fx, "root"), ==, 18);
    g_assert_cmpint(deserved(fx, "root"), ==, 32);
    g_assert_null(queue_status(fx, "root")->parent);
    kb_test_sched_free(fx);
}

static guint queue_events(Fx *fx, const char *reason)
{
    guint n = 0;
    for (guint i = 0; i < fx->res->events->len; i++) {
        const KbSchedEvent *ev = &g_array_index(fx->res->events, KbSchedEvent, i);
        n += strcmp(ev->kind, "Queue") == 0 && strcmp(ev->reason, reason) == 0;
    }
    return n;
}

/* A cycle in parents is reported on its queues (once) and blocks nobody else. */
static void test_cycle_reported(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_issue_tree(fx, "");
    add_queue(fx, "x", "y", 1, "");
    add_queue(fx, "y", "x", 1, "");
    add_job(fx, "stuck", "x", 2, 1);
    add_jobs(fx, "a1", "teamA1", 2);
    add_jobs(fx, "b", "orgB", 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/stuck"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 8);
    const KbJobStatus *st = job_status(fx, "ml/stuck");
    g_assert_cmpstr(st->reason, ==, "QueueInvalid");
    g_assert_cmpstr(st->message, ==,
                    "queue tree invalid: queue \"x\": spec.parent forms a cycle: \"x\" -> \"y\" "
                    "-> \"x\"");
    const KbQueueStatus *qs = queue_status(fx, "y");
    g_assert_cmpstr(qs->fault_reason, ==, "ParentCycle");
    g_assert_cmpstr(qs->fault_message, ==,
                    "queue \"y\": spec.parent forms a cycle: \"x\" -> \"y\" -> \"x\"");
    g_assert_null(queue_status(fx, "orgB")->fault_reason);
    g_assert_cmpuint(queue_events(fx, "ParentCycle"), ==, 2);
    kb_test_sched_confirm_all(fx, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpuint(queue_events(fx, "ParentCycle"), ==, 0); /* reported once */
    /* Fixed: y under orgB; x's job runs. */
    add_queue(fx, "y", "orgB", 1, "");
    kb_test_sched_run(fx);
    g_assert_null(queue_status(fx, "x")->fault_reason);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/stuck"), ==, 2);
    kb_test_sched_free(fx);
}

/* Children's guarantees above their parent's: reported with the figures, the subtree holds. */
static void test_guarantee_fault(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, ",\"guarantee\":{\"resource\":{\"nvidia.com/gpu\":\"8\"}}");
    add_queue(fx, "teamA1", "orgA", 1, ",\"guarantee\":{\"resource\":{\"nvidia.com/gpu\":\"6\"}}");
    add_queue(fx, "teamA2", "orgA", 1, ",\"guarantee\":{\"resource\":{\"nvidia.com/gpu\":\"6\"}}");
    add_queue(fx, "orgB", NULL, 3, "");
    add_jobs(fx, "a1", "teamA1", 1);
    add_jobs(fx, "b", "orgB", 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/a1-00"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/b-00"), ==, 2);
    const KbQueueStatus *qs = queue_status(fx, "orgA");
    g_assert_cmpstr(qs->fault_reason, ==, "GuaranteeExceeded");
    g_assert_cmpstr(qs->fault_message, ==,
                    "queue \"orgA\": children's guarantees add up to 12 nvidia.com/gpu "
                    "(\"teamA1\" 6, \"teamA2\" 6), more than its guarantee of 8");
    g_assert_cmpstr(queue_status(fx, "teamA1")->fault_reason, ==, "AncestorInvalid");
    g_assert_cmpuint(queue_events(fx, "GuaranteeExceeded"), ==, 1);
    kb_test_sched_free(fx);
}

/*
 * Enqueue checks every ancestor's capability (volcano #4118 checked the leaf only): orgA is
 * capped at 8 GPUs, its team is not; a 12-GPU job waits and names orgA, an 8-GPU one starts.
 */
static void test_enqueue_ancestor_capability(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, ",\"capability\":{\"nvidia.com/gpu\":\"8\"}");
    add_queue(fx, "teamA1", "orgA", 1, "");
    add_job(fx, "big", "teamA1", 12, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/big"), ==, 0);
    const KbJobStatus *st = job_status(fx, "ml/big");
    g_assert_cmpstr(st->reason, ==, "NotEnoughResources");
    g_assert_cmpstr(st->message, ==,
                    "not admitted: queue \"orgA\" (an ancestor of \"teamA1\") has 8 "
                    "nvidia.com/gpu left of its capability, the job needs 12 to start");
    add_job(fx, "fits", "teamA1", 8, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/fits"), ==, 8);
    kb_test_sched_free(fx);
}

/* Allocate holds the ancestor's capability too (without enqueue, nothing reserved first). */
static void test_allocate_ancestor_capability(void)
{
    Fx *fx = fx_new("allocate");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, ",\"capability\":{\"nvidia.com/gpu\":\"6\"}");
    add_queue(fx, "teamA1", "orgA", 1, "");
    add_queue(fx, "teamA2", "orgA", 1, "");
    add_jobs(fx, "a1", "teamA1", 4);
    add_jobs(fx, "a2", "teamA2", 4);
    settle(fx, 20, NULL);
    g_assert_cmpint(gpus(fx, "orgA"), ==, 6);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 4);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 2);
    kb_test_sched_free(fx);
}

/*
 * A root that grows with the cluster (volcano #4349: a root with fixed figures refused valid
 * children as the cluster grew): capabilities above today's cluster are valid, and new nodes
 * are shared out at once.
 */
static void test_root_grows_with_cluster(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    add_node(fx, "n0", 8);
    add_node(fx, "n1", 8);
    add_queue(fx, "orgA", NULL, 1, ",\"capability\":{\"nvidia.com/gpu\":\"64\"}");
    add_queue(fx, "teamA1", "orgA", 1, ",\"capability\":{\"nvidia.com/gpu\":\"48\"}");
    add_jobs(fx, "a1", "teamA1", 24);
    settle(fx, 30, NULL);
    g_assert_null(queue_status(fx, "teamA1")->fault_reason);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 16);
    for (guint i = 2; i < 6; i++) {
        g_autofree char *n = g_strdup_printf("n%u", i);
        add_node(fx, n, 8);
    }
    settle(fx, 40, NULL);
    g_assert_cmpint(deserved(fx, "teamA1"), ==, 48);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 48);
    kb_test_sched_free(fx);
}

/* spec.deserved (Volcano's capacity form) decoded and used. */
static void test_fixed_deserved_decoded(void)
{
    Fx *fx = fx_new("enqueue, allocate");
    four_nodes(fx);
    add_queue(fx, "orgA", NULL, 1, "");
    add_queue(fx, "teamA1", "orgA", 1, ",\"deserved\":{\"nvidia.com/gpu\":\"6\"}");
    add_queue(fx, "teamA2", "orgA", 1, "");
    add_queue(fx, "orgB", NULL, 3, "");
    add_jobs(fx, "a1", "teamA1", 16);
    add_jobs(fx, "a2", "teamA2", 16);
    add_jobs(fx, "b", "orgB", 16);
    settle(fx, 40, NULL);
    g_assert_cmpint(deserved(fx, "teamA1"), ==, 6);
    g_assert_cmpint(deserved(fx, "teamA2"), ==, 2);
    g_assert_cmpint(gpus(fx, "teamA1"), ==, 6);
    g_assert_cmpint(gpus(fx, "teamA2"), ==, 2);
    kb_test_sched_free(fx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(tree_cases); i++)
        g_test_add_data_func(tree_cases[i].path, &tree_cases[i], test_tree_case);
    g_test_add_func("/scheduler/hqueue/fault/messages", test_fault_messages);
    g_test_add_func("/scheduler/hqueue/share/root-grows", test_root_grows);
    g_test_add_func("/scheduler/hqueue/share/waterfill", test_waterfill);
    g_test_add_func("/scheduler/hqueue/share/memory-exact", test_memory_share_exact);
    g_test_add_func("/scheduler/hqueue/share/flat-as-before", test_flat_as_before);
    g_test_add_func("/scheduler/hqueue/cycle/issue-saturated", test_saturated);
    g_test_add_func("/scheduler/hqueue/cycle/issue-saturated-flat", test_saturated_flat);
    g_test_add_func("/scheduler/hqueue/cycle/issue-borrow-and-reclaim", test_borrow_and_reclaim);
    g_test_add_func("/scheduler/hqueue/cycle/reclaim-nearest-first", test_reclaim_nearest_first);
    g_test_add_func("/scheduler/hqueue/cycle/reclaim-not-reclaimable",
                    test_reclaim_not_reclaimable);
    g_test_add_func("/scheduler/hqueue/cycle/reclaim-within-not-reclaimable",
                    test_reclaim_within_not_reclaimable);
    g_test_add_func("/scheduler/hqueue/cycle/job-in-parent-queue", test_job_in_parent_queue);
    g_test_add_func("/scheduler/hqueue/cycle/cycle-reported", test_cycle_reported);
    g_test_add_func("/scheduler/hqueue/cycle/guarantee-fault", test_guarantee_fault);
    g_test_add_func("/scheduler/hqueue/cycle/enqueue-ancestor-capability",
                    test_enqueue_ancestor_capability);
    g_test_add_func("/scheduler/hqueue/cycle/allocate-ancestor-capability",
                    test_allocate_ancestor_capability);
    g_test_add_func("/scheduler/hqueue/cycle/root-grows-with-cluster",
                    test_root_grows_with_cluster);
    g_test_add_func("/scheduler/hqueue/cycle/fixed-deserved", test_fixed_deserved_decoded);
    return g_test_run();
}
