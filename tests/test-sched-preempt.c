/*
 * The preempt and reclaim actions end to end without an API server: running and waiting gangs in
 * (decoded from JSON with the real decoders), cycles, evictions / placements / conditions out.
 */
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "scheduler/actions.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/reserve.h"
#include "tests/lib/kb-test-sched.h"

/* ---- fixture -------------------------------------------------------------------------------- */

typedef KbTestSched Fx;

static void add_priority_class(Fx *fx, const char *name, int value, gboolean never)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"pc-%s\"},\"value\":%d%s}",
            name, name, value, never ? ",\"preemptionPolicy\":\"Never\"" : "");
    kb_test_sched_add_priority_class(fx, json);
}

/* The jobs of add_job are created from 2026-01-01T00:00:00Z on, one second apart. */
#define T_2026 1767225600

/*
 * @actions: the actions line; tiers are the built-in default's; @configurations: the YAML of a
 * top-level `configurations:` list, or NULL. The clock starts an hour after the jobs' creation
 * times, so the running jobs of the tables are well past the default minimum run time.
 */
static Fx *fx_new_conf(const char *actions, const char *configurations)
{
    const char *def = kb_conf_default_yaml();
    const char *tiers = strstr(def, "tiers:");
    g_assert_nonnull(tiers);
    g_autofree char *yaml =
            g_strdup_printf("actions: \"%s\"\n%s%s%s", actions,
                            configurations != NULL ? "configurations:\n" : "",
                            configurations != NULL ? configurations : "", tiers);
    Fx *fx = kb_test_sched_new(yaml);
    fx->now = T_2026 + 3600;
    add_priority_class(fx, "low", 10, FALSE);
    add_priority_class(fx, "mid", 100, FALSE);
    add_priority_class(fx, "high", 1000, FALSE);
    add_priority_class(fx, "polite", 1000, TRUE);
    return fx;
}

static Fx *fx_new(const char *actions)
{
    return fx_new_conf(actions, NULL);
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

static void add_queue(Fx *fx, const char *name, int weight, gboolean reclaimable)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":{\"weight\":%d,\"reclaimable\":%s}}",
            name, name, weight, reclaimable ? "true" : "false");
    kb_test_sched_add_queue(fx, json);
}

/*
 * A job: PodGroup @name (minMember @min, queue @queue or the default, class @pc) with @n pods
 * "<name>-<i>" of @gpus GPUs each. @nodes: NULL for pending pods, else a comma-separated node per
 * pod (Running there). @ns: NULL for "team".
 */
typedef struct {
    const char *name;
    const char *queue;
    const char *pc;
    guint n;
    int gpus;
    int min;
    const char *nodes;
    const char *ns;
    const char *runtime; /* the group's expected runtime ("24h"), or NULL */
} JobSpec;

static void add_job(Fx *fx, const JobSpec *j)
{
    const char *ns = j->ns != NULL ? j->ns : "team";
    g_autofree char *q =
            j->queue != NULL ? g_strdup_printf(",\"queue\":\"%s\"", j->queue) : g_strdup("");
    g_autofree char *pc =
            j->pc != NULL ? g_strdup_printf(",\"priorityClassName\":\"%s\"", j->pc) : g_strdup("");
    g_autofree char *ann =
            j->runtime != NULL
                    ? g_strdup_printf(",\"annotations\":{\"" KB_RESERVE_RUNTIME_ANNOTATION
                                      "\":\"%s\"}",
                                      j->runtime)
                    : g_strdup("");
    g_autofree char *gjson = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"pg-%s\","
            "\"creationTimestamp\":\"2026-01-01T00:%02u:%02uZ\"%s},\"spec\":{\"minMember\":%d%s%s}"
            "}",
            j->name, ns, j->name, (fx->seq / 60) % 60, fx->seq % 60, ann, j->min, q, pc);
    fx->seq++;
    kb_test_sched_add_pod_group(fx, gjson);
    g_auto(GStrv) nodes = j->nodes != NULL ? g_strsplit(j->nodes, ",", -1) : NULL;
    for (guint i = 0; i < j->n; i++) {
        g_autofree char *node = nodes != NULL && nodes[i] != NULL
                                        ? g_strdup_printf(",\"nodeName\":\"%s\"", nodes[i])
                                        : g_strdup("");
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%u\","
                "\"namespace\":\"%s\",\"uid\":\"u-%s-%u\",\"creationTimestamp\":"
                "\"2026-01-01T00:%02u:%02uZ\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
                "\"%s\"}},\"spec\":{\"schedulerName\":\"kube-batchd\"%s%s,\"containers\":[{"
                "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\","
                "\"nvidia.com/gpu\":%d}}}]},\"status\":{\"phase\":\"%s\"}}",
                j->name, i, ns, j->name, i, (fx->seq / 60) % 60, fx->seq % 60, j->name, node, pc,
                j->gpus, nodes != NULL ? "Running" : "Pending");
        fx->seq++;
        kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
    }
}

static gint str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The evicted pod names of the last cycle, sorted and comma-separated ("" for none). */
static char *evicted(Fx *fx)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < fx->res->evictions->len; i++) {
        const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, i);
        g_ptr_array_add(names, g_strdup(ev->pod->meta.name));
    }
    g_ptr_array_sort(names, str_ptr_cmp);
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < names->len; i++)
        g_string_append_printf(out, "%s%s", i > 0 ? "," : "", (char *)names->pdata[i]);
    return g_string_free(out, FALSE);
}

/*
 * Reclaim's borrowedLongJobsOnly, on in the built-in default. Queue a (weight 1 of 13 with c's 10
 * and the default queue's 1: a long-job limit of 3 x 32 / 13 = 7.4 GPUs) runs three 8-GPU jobs of
 * 24 h (a1, a2, a3, one per node, in that order) and, youngest, an 8-GPU job of 1 h (s1); queue b
 * waits with @b_jobs 8-GPU jobs of 1 h. a1 is a's first long job (within the limit: a gang larger
 * than it may run alone); a2 and a3 run past it on GPUs they borrowed. @yaml: the configuration
 * (NULL: plain reclaim); @a_reclaimable: queue a's spec. Returns the fixture after one cycle.
 */
static Fx *borrowed_fx(const char *yaml, guint b_jobs, gboolean a_reclaimable)
{
    Fx *fx = yaml != NULL ? kb_test_sched_new(yaml) : fx_new("enqueue, allocate, reclaim");
    fx->now = T_2026 + 3600;
    add_queue(fx, "a", 1, a_reclaimable);
    add_queue(fx, "b", 1, TRUE);
    add_queue(fx, "c", 10, TRUE);
    for (guint n = 1; n <= 4; n++) {
        g_autofree char *name = g_strdup_printf("n%u", n);
        add_node(fx, name, 8);
    }
    static const char *const long_nodes[] = {"n1", "n2", "n3"};
    for (guint i = 0; i < G_N_ELEMENTS(long_nodes); i++) {
        g_autofree char *name = g_strdup_printf("a%u", i + 1);
        add_job(fx, &(JobSpec){name, "a", NULL, 1, 8, 1, long_nodes[i], NULL, "24h"});
    }
    add_job(fx, &(JobSpec){"s1", "a", NULL, 1, 8, 1, "n4", NULL, "1h"});
    for (guint i = 0; i < b_jobs; i++) {
        g_autofree char *name = g_strdup_printf("b%u", i + 1);
        add_job(fx, &(JobSpec){name, "b", NULL, 1, 8, 1, NULL, NULL, "1h"});
    }
    kb_test_sched_run(fx);
    return fx;
}

/* borrowed_fx's cycle: the evicted pods. */
static char *borrowed_case(const char *yaml, guint b_jobs, gboolean a_reclaimable)
{
    Fx *fx = borrowed_fx(yaml, b_jobs, a_reclaimable);
    char *got = evicted(fx);
    for (guint i = 0; i < fx->res->evictions->len; i++) {
        const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, i);
        g_assert_cmpstr(ev->reason, ==, "Reclaimed");
        if (yaml != NULL)
            g_assert_nonnull(strstr(ev->message, "ran past its queue's long-job limit"));
        /* Taken whole, the victim lost its place: Pending, not Completed. */
        g_assert_cmpint(kb_cycle_result_job(fx->res, ev->job)->phase, ==, KB_JOB_PENDING);
    }
    kb_test_sched_free(fx);
    return got;
}

static void test_reclaim_borrowed_only(void)
{
    const char *dflt = kb_conf_default_yaml();
    g_assert_nonnull(strstr(dflt, "borrowedLongJobsOnly: true"));
    /* The youngest job that borrowed goes; plain reclaim takes the youngest job of all. */
    g_autofree char *one = borrowed_case(dflt, 1, TRUE);
    g_assert_cmpstr(one, ==, "a3-0");
    g_autofree char *plain = borrowed_case(NULL, 1, TRUE);
    g_assert_cmpstr(plain, ==, "s1-0");
    /* b deserves 16: both borrowers go, never the job within the limit nor the short one. */
    g_autofree char *three = borrowed_case(dflt, 3, TRUE);
    g_assert_cmpstr(three, ==, "a2-0,a3-0");
    /* Nothing is taken from a queue that is not reclaimable. */
    g_autofree char *fixed = borrowed_case(dflt, 1, FALSE);
    g_assert_cmpstr(fixed, ==, "");
}

/* Before any reclaim, the borrowers' PodGroups say that reclaim may take them back; the job
 * within the limit and the short one say nothing of it. */
static void test_reclaim_borrowed_said(void)
{
    Fx *fx = borrowed_fx(kb_conf_default_yaml(), 0, TRUE);
    static const char borrowed[] = "1/1 tasks placed; on GPUs borrowed past queue \"a\"'s "
                                   "long-job limit: reclaim may take them back for a queue below "
                                   "its deserved share";
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpstr(kb_cycle_result_job(fx->res, "team/a1")->message, ==, "1/1 tasks placed");
    g_assert_cmpstr(kb_cycle_result_job(fx->res, "team/a2")->message, ==, borrowed);
    g_assert_cmpstr(kb_cycle_result_job(fx->res, "team/a3")->message, ==, borrowed);
    g_assert_cmpstr(kb_cycle_result_job(fx->res, "team/s1")->message, ==, "1/1 tasks placed");
    kb_test_sched_free(fx);
    /* Without borrowing (plain reclaim) nobody borrows. */
    fx = borrowed_fx(NULL, 0, TRUE);
    g_assert_cmpstr(kb_cycle_result_job(fx->res, "team/a3")->message, ==, "1/1 tasks placed");
    kb_test_sched_free(fx);
}

/* ---- table: one cycle, which pods are evicted ----------------------------------------------- */

#define MAX_JOBS 5

typedef struct {
    const char *path;
    const char *actions;
    guint n_nodes; /* nodes n1..nN */
    int node_gpus;
    const char *queues; /* "a:1,b:1,c:1:fixed" (fixed: reclaimable false), or NULL */
    JobSpec jobs[MAX_JOBS];
    const char *want;    /* evicted pod names, sorted; "" for none */
    const char *reason;  /* "Preempted" / "Reclaimed" when want is not empty */
    const char *for_job; /* the preemptor job ("team/name") named in the messages */
} EvictCase;

#define PREEMPT "enqueue, allocate, preempt"
#define RECLAIM "enqueue, allocate, reclaim"
#define BOTH    "enqueue, allocate, preempt, reclaim"

static const EvictCase evict_cases[] = {
        /* Two of the four elastic low-priority pods are enough: the youngest go. */
        {"/scheduler/preempt/evicts-lower-priority-to-fit",
         PREEMPT,
         1,
         8,
         NULL,
         {{"low", NULL, "low", 4, 2, 1, "n1,n1,n1,n1"}, {"high", NULL, "high", 2, 2, 2, NULL}},
         "low-2,low-3",
         "Preempted",
         "team/high"},
        /* minMember 4: any eviction breaks the gang, so the whole gang goes. */
        {"/scheduler/preempt/whole-gang-below-min",
         PREEMPT,
         1,
         8,
         NULL,
         {{"low", NULL, "low", 4, 2, 4, "n1,n1,n1,n1"}, {"high", NULL, "high", 1, 2, 1, NULL}},
         "low-0,low-1,low-2,low-3",
         "Preempted",
         "team/high"},
        /* Two may go singly (down to minMember 2); the third takes the rest of the gang along. */
        {"/scheduler/preempt/never-splits-a-gang-below-min",
         PREEMPT,
         1,
         8,
         NULL,
         {{"low", NULL, "low", 4, 2, 2, "n1,n1,n1,n1"}, {"high", NULL, "high", 3, 2, 3, NULL}},
         "low-0,low-1,low-2,low-3",
         "Preempted",
         "team/high"},
        /* One 4-GPU pod rather than a 4-pod gang, though the gang is younger. */
        {"/scheduler/preempt/fewest-pods",
         PREEMPT,
         1,
         8,
         NULL,
         {{"big", NULL, "low", 1, 4, 1, "n1"},
          {"gang", NULL, "low", 4, 1, 4, "n1,n1,n1,n1"},
          {"high", NULL, "high", 1, 4, 1, NULL}},
         "big-0",
         "Preempted",
         "team/high"},
        /* Lowest priority first: the mid job stays. */
        {"/scheduler/preempt/lowest-priority-first",
         PREEMPT,
         1,
         8,
         NULL,
         {{"low", NULL, "low", 1, 4, 1, "n1"},
          {"mid", NULL, "mid", 1, 4, 1, "n1"},
          {"high", NULL, "high", 1, 4, 1, NULL}},
         "low-0",
         "Preempted",
         "team/high"},
        /* The node with the fewest victims wins. */
        {"/scheduler/preempt/cheapest-node",
         PREEMPT,
         2,
         8,
         NULL,
         {{"many", NULL, "low", 8, 1, 1, "n1,n1,n1,n1,n1,n1,n1,n1"},
          {"few", NULL, "low", 2, 4, 1, "n2,n2"},
          {"high", NULL, "high", 1, 4, 1, NULL}},
         "few-1",
         "Preempted",
         "team/high"},
        /* The second pod of the gang has nowhere to go even after evicting: nothing evicted. */
        {"/scheduler/preempt/no-fit-no-eviction",
         PREEMPT,
         1,
         8,
         NULL,
         {{"low", NULL, "low", 4, 2, 1, "n1,n1,n1,n1"}, {"high", NULL, "high", 2, 8, 2, NULL}},
         "",
         NULL,
         NULL},
        {"/scheduler/preempt/equal-priority-no-eviction",
         PREEMPT,
         1,
         8,
         NULL,
         {{"other", NULL, "high", 4, 2, 1, "n1,n1,n1,n1"}, {"high", NULL, "high", 1, 2, 1, NULL}},
         "",
         NULL,
         NULL},
        {"/scheduler/preempt/preemption-policy-never",
         PREEMPT,
         1,
         8,
         NULL,
         {{"low", NULL, "low", 4, 2, 1, "n1,n1,n1,n1"}, {"polite", NULL, "polite", 1, 2, 1, NULL}},
         "",
         NULL,
         NULL},
        /* Critical kube-system pods are never victims, whatever their priority. */
        {"/scheduler/preempt/critical-pods-never-evicted",
         PREEMPT,
         1,
         8,
         NULL,
         {{"dns", NULL, "system-cluster-critical", 4, 2, 1, "n1,n1,n1,n1", "kube-system"},
          {"high", NULL, "high", 1, 2, 1, NULL}},
         "",
         NULL,
         NULL},
        {"/scheduler/preempt/critical-pods-spared",
         PREEMPT,
         1,
         8,
         NULL,
         {{"dns", NULL, "system-cluster-critical", 2, 2, 1, "n1,n1", "kube-system"},
          {"low", NULL, "low", 2, 2, 1, "n1,n1"},
          {"high", NULL, "high", 1, 4, 1, NULL}},
         "low-0,low-1",
         "Preempted",
         "team/high"},
        /* preempt stays within a queue. */
        {"/scheduler/preempt/other-queue-untouched",
         PREEMPT,
         1,
         8,
         "a:1,b:1",
         {{"low", "b", "low", 4, 2, 1, "n1,n1,n1,n1"}, {"high", "a", "high", 1, 2, 1, NULL}},
         "",
         NULL,
         NULL},
        /* Queue b borrowed all 16 GPUs; a deserves 8 and gets them back, b keeps its 8. */
        {"/scheduler/reclaim/takes-back-share",
         RECLAIM,
         2,
         8,
         "a:1,b:1",
         {{"borrow", "b", NULL, 16, 1, 1, "n1,n1,n1,n1,n1,n1,n1,n1,n2,n2,n2,n2,n2,n2,n2,n2"},
          {"want", "a", NULL, 8, 1, 8, NULL}},
         "borrow-10,borrow-11,borrow-12,borrow-13,borrow-14,borrow-15,borrow-8,borrow-9",
         "Reclaimed",
         "team/want"},
        /* a needs 12 but b may only be taken down to its share of 8: nothing evicted. */
        {"/scheduler/reclaim/not-below-borrowers-share",
         RECLAIM,
         2,
         8,
         "a:1,b:1",
         {{"borrow", "b", NULL, 16, 1, 1, "n1,n1,n1,n1,n1,n1,n1,n1,n2,n2,n2,n2,n2,n2,n2,n2"},
          {"want", "a", NULL, 12, 1, 12, NULL}},
         "",
         NULL,
         NULL},
        {"/scheduler/reclaim/not-from-non-reclaimable-queue",
         RECLAIM,
         2,
         8,
         "a:1,b:1:fixed",
         {{"borrow", "b", NULL, 16, 1, 1, "n1,n1,n1,n1,n1,n1,n1,n1,n2,n2,n2,n2,n2,n2,n2,n2"},
          {"want", "a", NULL, 8, 1, 8, NULL}},
         "",
         NULL,
         NULL},
        /* Whole gangs: the younger 8-pod gang of b goes, b keeps the other (its share). */
        {"/scheduler/reclaim/whole-gangs",
         RECLAIM,
         2,
         8,
         "a:1,b:1",
         {{"b1", "b", NULL, 8, 1, 8, "n1,n1,n1,n1,n1,n1,n1,n1"},
          {"b2", "b", NULL, 8, 1, 8, "n2,n2,n2,n2,n2,n2,n2,n2"},
          {"want", "a", NULL, 8, 1, 8, NULL}},
         "b2-0,b2-1,b2-2,b2-3,b2-4,b2-5,b2-6,b2-7",
         "Reclaimed",
         "team/want"},
        /* A gang of 16 in b cannot be broken and taking it whole leaves b below its share. */
        {"/scheduler/reclaim/gang-at-share-kept",
         RECLAIM,
         2,
         8,
         "a:1,b:1",
         {{"b1", "b", NULL, 16, 1, 16, "n1,n1,n1,n1,n1,n1,n1,n1,n2,n2,n2,n2,n2,n2,n2,n2"},
          {"want", "a", NULL, 4, 1, 4, NULL}},
         "",
         NULL,
         NULL},
        /* Without the reclaim action a borrowing queue keeps everything. */
        {"/scheduler/reclaim/needs-the-action",
         PREEMPT,
         2,
         8,
         "a:1,b:1",
         {{"borrow", "b", NULL, 16, 1, 1, "n1,n1,n1,n1,n1,n1,n1,n1,n2,n2,n2,n2,n2,n2,n2,n2"},
          {"want", "a", NULL, 8, 1, 8, NULL}},
         "",
         NULL,
         NULL},
        /* Priority does not matter for reclaim: a low-priority job of a starved queue reclaims. */
        {"/scheduler/reclaim/regardless-of-priority",
         BOTH,
         1,
         8,
         "a:1,b:1",
         {{"borrow", "b", "high", 8, 1, 1, "n1,n1,n1,n1,n1,n1,n1,n1"},
          {"want", "a", "low", 4, 1, 4, NULL}},
         "borrow-4,borrow-5,borrow-6,borrow-7",
         "Reclaimed",
         "team/want"},
};

static void setup_case(Fx *fx, const EvictCase *c)
{
    for (guint n = 1; n <= c->n_nodes; n++) {
        g_autofree char *name = g_strdup_printf("n%u", n);
        add_node(fx, name, c->node_gpus);
    }
    g_auto(GStrv) queues = c->queues != NULL ? g_strsplit(c->queues, ",", -1) : NULL;
    for (guint i = 0; queues != NULL && queues[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(queues[i], ":", -1);
        add_queue(fx, f[0], atoi(f[1]), f[2] == NULL || strcmp(f[2], "fixed") != 0);
    }
    for (guint j = 0; j < MAX_JOBS && c->jobs[j].name != NULL; j++)
        add_job(fx, &c->jobs[j]);
}

static void test_evict_case(gconstpointer data)
{
    const EvictCase *c = data;
    Fx *fx = fx_new(c->actions);
    setup_case(fx, c);
    kb_test_sched_run(fx);
    g_autofree char *got = evicted(fx);
    g_assert_cmpstr(got, ==, c->want);
    for (guint i = 0; i < fx->res->evictions->len; i++) {
        const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, i);
        g_assert_cmpstr(ev->reason, ==, c->reason);
        g_assert_cmpstr(ev->preemptor, ==, c->for_job);
        g_assert_nonnull(strstr(ev->message, c->for_job));
        KbTaskInfo *t =
                kb_cache_lookup_task(fx->cache, ev->pod->meta.namespace_, ev->pod->meta.name);
        g_assert_cmpint(t->state, ==, KB_TASK_RELEASING);
    }
    /* Nothing binds onto resources that are still held by the victims. */
    g_assert_cmpuint(fx->res->placements->len, ==, 0);
    kb_test_sched_free(fx);
}

/* ---- native PodGroups: disruptionMode ----------------------------------------------------- */

/* Running pod "elastic-@i" on n1 (2 GPUs, PriorityClass low) naming the native group @group. */
static void put_running_native_pod(Fx *fx, int i, const char *group)
{
    g_autofree char *p = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
            "\"elastic-%d\",\"namespace\":\"team\",\"uid\":\"u-e-%d\","
            "\"creationTimestamp\":\"2026-01-01T00:00:0%dZ\"},\"spec\":{\"schedulerName\":"
            "\"kube-batchd\",\"nodeName\":\"n1\",\"priorityClassName\":\"low\","
            "\"schedulingGroup\":{\"podGroupName\":\"%s\"},\"containers\":[{"
            "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":"
            "2}}}]},\"status\":{\"phase\":\"Running\"}}",
            i, i, i, group);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(p));
}

/* A native group of 4 running pods (minCount 1, class low) and a waiting high job that needs
 * one pod's room: disruptionMode single gives one victim, all gives the whole group. */
static void test_native_disruption_mode(void)
{
    for (int all = 0; all < 2; all++) {
        Fx *fx = fx_new("allocate, preempt");
        add_node(fx, "n1", 8);
        g_autofree char *g = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"elastic\",\"namespace\":\"team\",\"uid\":\"pg-e\","
                "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"schedulingPolicy\":{"
                "\"gang\":{\"minCount\":1}},\"priorityClassName\":\"low\",\"disruptionMode\":"
                "{\"%s\":{}}}}",
                all ? "all" : "single");
        kb_test_sched_add_pod_group(fx, g);
        for (int i = 0; i < 4; i++) {
            put_running_native_pod(fx, i, "elastic");
        }
        JobSpec high = {"high", NULL, "high", 1, 2, 1, NULL, NULL};
        add_job(fx, &high);
        kb_test_sched_run(fx);
        g_autofree char *got = evicted(fx);
        if (all)
            g_assert_cmpstr(got, ==, "elastic-0,elastic-1,elastic-2,elastic-3");
        else
            g_assert_cmpuint(fx->res->evictions->len, ==, 1);
        /* The group taken whole is about to be terminated (DisruptionTarget), one pod is not. */
        for (guint i = 0; i < fx->res->evictions->len; i++) {
            const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, i);
            if (all) {
                g_assert_nonnull(ev->disrupted_group);
                g_assert_cmpstr(ev->disrupted_group->meta.name, ==, "elastic");
            } else {
                g_assert_null(ev->disrupted_group);
            }
        }
        kb_test_sched_free(fx);
    }
}

/* A CompositePodGroup with disruptionMode all over one child of 4 running pods: taken whole, as
 * one job; no DisruptionTarget on a group (the composite's status is not written, and its
 * name is no PodGroup's). */
static void test_composite_disruption_all(void)
{
    Fx *fx = fx_new("allocate, preempt");
    add_node(fx, "n1", 8);
    json_object *o = kb_test_sched_parse(
            "{\"apiVersion\":\"scheduling.k8s.io/v1alpha3\",\"kind\":\"CompositePodGroup\","
            "\"metadata\":{\"name\":\"elastic\",\"namespace\":\"team\",\"uid\":\"cpg-e\"},"
            "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":1}},"
            "\"priorityClassName\":\"low\",\"disruptionMode\":{\"all\":{}}}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) cpg = kb_composite_pod_group_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_cache_add_pod_group(fx->cache, cpg);
    kb_test_sched_add_pod_group(
            fx, "{\"apiVersion\":\"scheduling.k8s.io/v1alpha3\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"elastic-c\",\"namespace\":\"team\",\"uid\":\"pg-c\"},"
                "\"spec\":{\"parentCompositePodGroupName\":\"elastic\",\"schedulingPolicy\":{"
                "\"gang\":{\"minCount\":1}}}}");
    for (int i = 0; i < 4; i++) {
        put_running_native_pod(fx, i, "elastic-c");
    }
    JobSpec high = {"high", NULL, "high", 1, 2, 1, NULL, NULL};
    add_job(fx, &high);
    kb_test_sched_run(fx);
    g_autofree char *got = evicted(fx);
    g_assert_cmpstr(got, ==, "elastic-0,elastic-1,elastic-2,elastic-3");
    for (guint i = 0; i < fx->res->evictions->len; i++)
        g_assert_null(g_array_index(fx->res->evictions, KbEviction, i).disrupted_group);
    kb_test_sched_free(fx);
}

/* ---- a preemptor held to one topology domain --------------------------------------------- */

#define RACK "topology.kubernetes.io/rack"

static void add_rack_node(Fx *fx, const char *name, const char *rack, int gpus)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":"
            "\"n-%s\",\"labels\":{\"" RACK "\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":"
            "\"64\",\"memory\":\"256Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            name, name, rack, gpus);
    kb_test_sched_add_node(fx, json);
}

/* A native gang "hi" (class high) of 2 pods of 2 GPUs that must land inside one rack. */
static void add_rack_gang(Fx *fx)
{
    kb_test_sched_add_pod_group(
            fx, "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"hi\",\"namespace\":\"team\",\"uid\":\"pg-hi\","
                "\"creationTimestamp\":\"2026-01-01T00:30:00Z\"},\"spec\":{\"schedulingPolicy\":{"
                "\"gang\":{\"minCount\":2}},\"priorityClassName\":\"high\","
                "\"schedulingConstraints\":{\"topology\":[{\"key\":\"" RACK "\"}]}}}");
    for (int i = 0; i < 2; i++) {
        g_autofree char *p = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"hi-%d\","
                "\"namespace\":\"team\",\"uid\":\"u-hi-%d\",\"creationTimestamp\":"
                "\"2026-01-01T00:30:0%dZ\"},\"spec\":{\"schedulerName\":\"kube-batchd\","
                "\"priorityClassName\":\"high\",\"schedulingGroup\":{\"podGroupName\":\"hi\"},"
                "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
                "\"nvidia.com/gpu\":2}}}]},\"status\":{\"phase\":\"Pending\"}}",
                i, i, i);
        kb_test_sched_put_pod(fx, kb_test_sched_parse(p));
    }
}

/* Each rack has 2 GPUs free and 2 held by a low job: the gang fits in no rack as it is, and
 * across racks without evicting anything. Held to one rack it evicts one low pod, in rack-a. */
static void test_topology_preemptor_one_domain(void)
{
    Fx *fx = fx_new("allocate, preempt");
    add_rack_node(fx, "a1", "rack-a", 4);
    add_rack_node(fx, "b1", "rack-b", 4);
    JobSpec la = {"la", NULL, "low", 1, 2, 1, "a1", NULL};
    JobSpec lb = {"lb", NULL, "low", 1, 2, 1, "b1", NULL};
    add_job(fx, &la);
    add_job(fx, &lb);
    add_rack_gang(fx);
    kb_test_sched_run(fx);
    g_autofree char *got = evicted(fx);
    g_assert_cmpstr(got, ==, "la-0");
    kb_test_sched_free(fx);
}

/* The only victim in reach is a low gang with a member in each rack: taking it would evict in
 * rack-b too, so a preemptor held to one rack takes nothing. */
static void test_topology_preemptor_no_victim_outside(void)
{
    Fx *fx = fx_new("allocate, preempt");
    add_rack_node(fx, "a1", "rack-a", 4);
    add_rack_node(fx, "b1", "rack-b", 4);
    JobSpec lg = {"lg", NULL, "low", 2, 2, 2, "a1,b1", NULL};
    add_job(fx, &lg);
    add_rack_gang(fx);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    kb_test_sched_free(fx);
}

/* ---- across cycles -------------------------------------------------------------------------- */

static const JobSpec storm_low = {"low", NULL, "low", 4, 2, 1, "n1,n1,n1,n1"};
static const JobSpec storm_high = {"high", NULL, "high", 2, 2, 2, NULL};

/* Victims releasing: later cycles evict nothing more and bind nothing until they are gone. */
static void test_no_storm(void)
{
    Fx *fx = fx_new(BOTH);
    add_node(fx, "n1", 8);
    add_job(fx, &storm_low);
    add_job(fx, &storm_high);
    kb_test_sched_run(fx);
    g_autofree char *first = evicted(fx);
    g_assert_cmpstr(first, ==, "low-2,low-3");
    const KbJobStatus *st = kb_cycle_result_job(fx->res, "team/high");
    g_assert_nonnull(strstr(st->message, "once evicted pods terminate"));
    g_autoptr(GArray) victims = g_array_ref(fx->res->evictions);
    /* The watch shows the victims again before their deletion (a status update). */
    for (guint i = 0; i < victims->len; i++) {
        const KbEviction *ev = &g_array_index(victims, KbEviction, i);
        g_autofree char *key = g_strdup_printf("team/%s", ev->pod->meta.name);
        json_object *o = NULL;
        json_object_deep_copy(g_hash_table_lookup(fx->pods, key), &o, NULL);
        kb_test_sched_put_pod(fx, o);
    }
    for (guint cycle = 0; cycle < 3; cycle++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 0);
        g_assert_cmpuint(kb_test_sched_binds(fx, "team/high"), ==, 0);
    }
    for (guint i = 0; i < victims->len; i++)
        kb_cache_delete_pod(fx->cache, g_array_index(victims, KbEviction, i).pod);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "team/high"), ==, 2);
    kb_test_sched_free(fx);
}

/* The same for reclaim: the borrowing queue loses 8 pods once, not 8 more every cycle. */
static void test_no_reclaim_storm(void)
{
    Fx *fx = fx_new(BOTH);
    const EvictCase *c = NULL;
    for (guint i = 0; i < G_N_ELEMENTS(evict_cases) && c == NULL; i++) {
        if (strcmp(evict_cases[i].path, "/scheduler/reclaim/takes-back-share") == 0)
            c = &evict_cases[i];
    }
    g_assert_nonnull(c);
    setup_case(fx, c);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 8);
    for (guint cycle = 0; cycle < 3; cycle++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 0);
        g_assert_cmpuint(kb_test_sched_binds(fx, "team/want"), ==, 0);
    }
    KbJobInfo *job = kb_cache_lookup_job(fx->cache, "team", "borrow");
    g_assert_cmpuint(job->n_state[KB_TASK_RUNNING], ==, 8);
    kb_test_sched_free(fx);
}

/* ---- the node memo: the same victims as weighing every node again ---------------------------- */

/* The evicted pod names of the last cycle in the order they were chosen ("" for none). */
static char *evicted_in_order(Fx *fx)
{
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < fx->res->evictions->len; i++) {
        const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, i);
        g_string_append_printf(out, "%s%s/%s>%s", i > 0 ? "," : "", ev->pod->meta.namespace_,
                               ev->pod->meta.name, ev->preemptor);
    }
    return g_string_free(out, FALSE);
}

/*
 * A cluster drawn from @seed: @n_nodes nodes of 8 GPUs filled by running jobs of queues a, b
 * (weights 1:1, reclaimable) and fixed (not), of 1, 2 or 4 GPUs a pod, gangs of 1-4 with a
 * minimum of 1 to all, low or mid priority; then waiting gangs of 2-6 pods of the same shape
 * each (2, 4 or 8 GPUs), high priority, in a, b or c (c deserves a share and holds nothing).
 * Returns the fixture, one cycle of preempt and reclaim run.
 */
static Fx *random_cluster_run(guint32 seed, guint n_nodes)
{
    g_autoptr(GRand) rnd = g_rand_new_with_seed(seed);
    Fx *fx = fx_new_conf(BOTH, "- name: reclaim\n  arguments:\n    minRunTime: 0\n"
                               "- name: preempt\n  arguments:\n    minRunTime: 0\n");
    guint free_gpus[64];
    g_assert_cmpuint(n_nodes, <=, G_N_ELEMENTS(free_gpus));
    for (guint n = 0; n < n_nodes; n++) {
        g_autofree char *name = g_strdup_printf("n%u", n);
        add_node(fx, name, 8);
        free_gpus[n] = 8;
    }
    static const char *const queues[] = {"a", "b", "fixed"};
    add_queue(fx, "a", 1, TRUE);
    add_queue(fx, "b", 1, TRUE);
    add_queue(fx, "fixed", 1, FALSE);
    add_queue(fx, "c", 2, TRUE);
    static const int shapes[] = {1, 2, 4};
    for (guint j = 0; j < 4 * n_nodes; j++) {
        int gpus = shapes[g_rand_int_range(rnd, 0, 3)];
        guint pods = (guint)g_rand_int_range(rnd, 1, 5);
        g_autoptr(GString) nodes = g_string_new(NULL);
        guint placed = 0;
        for (guint p = 0; p < pods; p++) {
            guint n = (guint)g_rand_int_range(rnd, 0, (gint32)n_nodes);
            for (guint k = 0; k < n_nodes && free_gpus[n] < (guint)gpus; k++)
                n = (n + 1) % n_nodes;
            if (free_gpus[n] < (guint)gpus)
                break;
            free_gpus[n] -= (guint)gpus;
            g_string_append_printf(nodes, "%sn%u", placed > 0 ? "," : "", n);
            placed++;
        }
        if (placed == 0)
            break;
        g_autofree char *name = g_strdup_printf("r%u", j);
        JobSpec js = {name,
                      queues[g_rand_int_range(rnd, 0, 3)],
                      g_rand_boolean(rnd) ? "low" : "mid",
                      placed,
                      gpus,
                      g_rand_int_range(rnd, 1, (gint32)placed + 1),
                      nodes->str,
                      NULL};
        add_job(fx, &js);
    }
    static const char *const waiting_queues[] = {"a", "b", "c"};
    static const int wshapes[] = {2, 4, 8};
    guint n_waiting = (guint)g_rand_int_range(rnd, 1, 4);
    for (guint w = 0; w < n_waiting; w++) {
        g_autofree char *name = g_strdup_printf("w%u", w);
        guint pods = (guint)g_rand_int_range(rnd, 2, 7);
        JobSpec js = {name,
                      waiting_queues[g_rand_int_range(rnd, 0, 3)],
                      "high",
                      pods,
                      wshapes[g_rand_int_range(rnd, 0, 3)],
                      (int)pods,
                      NULL,
                      NULL};
        add_job(fx, &js);
    }
    kb_test_sched_run(fx);
    return fx;
}

/*
 * With the memo the victims are the ones weighing every node again for every task chooses, in
 * the same order, on clusters drawn at random (the fewest pods, then GPUs, lowest priority,
 * youngest; the share floors), and the memo did answer.
 */
static void test_memo_same_victims(void)
{
    guint evicting = 0;
    guint64 hits0 = kb_preempt_memo_hits();
    for (guint32 seed = 1; seed <= 60; seed++) {
        guint n_nodes = 4 + seed % 9;
        kb_preempt_set_memo(FALSE);
        Fx *off = random_cluster_run(seed, n_nodes);
        kb_preempt_set_memo(TRUE);
        Fx *on = random_cluster_run(seed, n_nodes);
        g_autofree char *want = evicted_in_order(off);
        g_autofree char *got = evicted_in_order(on);
        if (g_strcmp0(want, got) != 0)
            g_error("seed %u: with the memo \"%s\", without \"%s\"", seed, got, want);
        evicting += want[0] != '\0';
        kb_test_sched_free(off);
        kb_test_sched_free(on);
    }
    /* the draws do evict, and the memo took part */
    g_assert_cmpuint(evicting, >=, 20);
    g_assert_cmpuint(kb_preempt_memo_hits(), >, hits0);
}

/*
 * kai-reclaim-250 in small: 20 nodes full of one-GPU jobs of queue filler, a gang of 10 whole-node
 * pods of queue big (weights 1:1) reclaims. The same 80 victims with and without the memo, and
 * the memo answered for nearly every node after the first task (a node changes only where a
 * task went; the floors leave filler, at 160 GPUs for a share of 80, room until the last).
 */
static void test_memo_reclaim_gang(void)
{
    char *runs[2] = {NULL, NULL};
    guint64 hits[2];
    for (guint memo = 0; memo < 2; memo++) {
        kb_preempt_set_memo(memo == 1);
        guint64 h0 = kb_preempt_memo_hits();
        Fx *fx = fx_new_conf(RECLAIM, "- name: reclaim\n  arguments:\n    minRunTime: 0\n");
        add_queue(fx, "filler", 1, TRUE);
        add_queue(fx, "big", 1, TRUE);
        for (guint n = 0; n < 20; n++) {
            g_autofree char *node = g_strdup_printf("n%u", n);
            add_node(fx, node, 8);
            for (guint i = 0; i < 8; i++) {
                g_autofree char *name = g_strdup_printf("f%u-%u", n, i);
                JobSpec js = {name, "filler", "low", 1, 1, 1, node, NULL};
                add_job(fx, &js);
            }
        }
        JobSpec big = {"big", "big", "low", 10, 8, 10, NULL, NULL};
        add_job(fx, &big);
        kb_test_sched_run(fx);
        runs[memo] = evicted_in_order(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 80);
        hits[memo] = kb_preempt_memo_hits() - h0;
        kb_test_sched_free(fx);
    }
    kb_preempt_set_memo(TRUE);
    g_assert_cmpstr(runs[1], ==, runs[0]);
    g_free(runs[0]);
    g_free(runs[1]);
    g_assert_cmpuint(hits[0], ==, 0);
    /* 10 tasks x 20 nodes weighed: all but the first task's and each task's changed node */
    g_assert_cmpuint(hits[1], >=, 9 * 20 - 2 * 10);
}

/* A refused eviction (a PodDisruptionBudget, say) puts the pod back; a later cycle retries. */
static void test_evict_failed(void)
{
    Fx *fx = fx_new(PREEMPT);
    add_node(fx, "n1", 8);
    add_job(fx, &storm_low);
    add_job(fx, &storm_high);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 2);
    const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, 0);
    g_assert_true(kb_cache_evict_failed(fx->cache, "team", ev->pod->meta.name, ev->pod->meta.uid));
    g_assert_false(kb_cache_evict_failed(fx->cache, "team", ev->pod->meta.name, ev->pod->meta.uid));
    g_assert_false(kb_cache_evict_failed(fx->cache, "team", ev->pod->meta.name, "other-uid"));
    KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "team", ev->pod->meta.name);
    g_assert_cmpint(t->state, ==, KB_TASK_RUNNING);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 1);
    kb_test_sched_free(fx);
}

/* The statement that could not complete leaves every victim running, across cycles too. */
static void test_discard_leaves_victims_running(void)
{
    Fx *fx = fx_new(BOTH);
    add_node(fx, "n1", 8);
    JobSpec low = {"low", NULL, "low", 4, 2, 1, "n1,n1,n1,n1"};
    JobSpec big = {"big", NULL, "high", 2, 8, 2, NULL};
    add_job(fx, &low);
    add_job(fx, &big);
    for (guint cycle = 0; cycle < 2; cycle++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    }
    KbJobInfo *job = kb_cache_lookup_job(fx->cache, "team", "low");
    g_assert_cmpuint(job->n_state[KB_TASK_RUNNING], ==, 4);
    g_assert_cmpuint(job->n_state[KB_TASK_RELEASING], ==, 0);
    kb_test_sched_free(fx);
}

/* The victims get an event naming the preemptor. */
static void test_events(void)
{
    Fx *fx = fx_new(PREEMPT);
    add_node(fx, "n1", 8);
    add_job(fx, &storm_low);
    add_job(fx, &storm_high);
    kb_test_sched_run(fx);
    guint n = 0;
    for (guint i = 0; i < fx->res->events->len; i++) {
        const KbSchedEvent *ev = &g_array_index(fx->res->events, KbSchedEvent, i);
        if (g_strcmp0(ev->reason, "Preempted") != 0)
            continue;
        n++;
        g_assert_cmpstr(ev->kind, ==, "Pod");
        g_assert_nonnull(strstr(ev->message, "team/high"));
    }
    g_assert_cmpuint(n, ==, 2);
    kb_test_sched_free(fx);
}

/* ---- minimum run time ----------------------------------------------------------------------- */

/*
 * A gang that started @age seconds ago (bound by a cycle, bind reported at that time) meets a
 * waiting job that could only start by evicting it.
 */
typedef struct {
    const char *path;
    const char *actions;
    const char *configurations; /* NULL: defaults (10m, backoff) */
    gint64 age;
    gboolean evicted;
    const char *why; /* in the waiting job's condition when not evicted */
} ProtectCase;

#define CONF_1H                                                                                    \
    "- name: preempt\n  arguments:\n    minRunTime: 1h\n"                                          \
    "- name: reclaim\n  arguments:\n    minRunTime: 1h\n"
#define CONF_OFF                                                                                   \
    "- name: preempt\n  arguments:\n    minRunTime: \"0\"\n"                                       \
    "- name: reclaim\n  arguments:\n    minRunTime: \"0\"\n"
#define CONF_90S_FLAT                                                                              \
    "- name: preempt\n  arguments:\n    minRunTime: 1m30s\n    evictionBackoff: false\n"            \
    "- name: reclaim\n  arguments:\n    minRunTime: 90\n    evictionBackoff: false\n"

static const ProtectCase protect_cases[] = {
        {"/scheduler/preempt/min-run/default-protects", PREEMPT, NULL, 599, FALSE,
         "victims protected: running less than 10m (doubled per earlier eviction)"},
        {"/scheduler/preempt/min-run/default-expires", PREEMPT, NULL, 600, TRUE, NULL},
        {"/scheduler/preempt/min-run/configured-protects", PREEMPT, CONF_1H, 3599, FALSE,
         "victims protected: running less than 1h"},
        {"/scheduler/preempt/min-run/configured-expires", PREEMPT, CONF_1H, 3600, TRUE, NULL},
        {"/scheduler/preempt/min-run/zero-disables", PREEMPT, CONF_OFF, 0, TRUE, NULL},
        {"/scheduler/preempt/min-run/mixed-units", PREEMPT, CONF_90S_FLAT, 89, FALSE,
         "victims protected: running less than 1m30s"},
        {"/scheduler/reclaim/min-run/default-protects", RECLAIM, NULL, 599, FALSE,
         "victims protected: running less than 10m (doubled per earlier eviction)"},
        {"/scheduler/reclaim/min-run/default-expires", RECLAIM, NULL, 600, TRUE, NULL},
        {"/scheduler/reclaim/min-run/plain-seconds", RECLAIM, CONF_90S_FLAT, 89, FALSE,
         "victims protected: running less than 1m30s"},
        {"/scheduler/reclaim/min-run/plain-seconds-expire", RECLAIM, CONF_90S_FLAT, 90, TRUE,
         NULL},
};

/* preempt: "low" (4 x 2 GPUs, minMember 4) fills n1, "high" wants 2 GPUs. reclaim: "borrow" of
 * queue b (8 x 1 GPU, minMember 1) fills n1, "want" of queue a wants 4. */
static const JobSpec pv_low = {"low", NULL, "low", 4, 2, 4, NULL};
static const JobSpec pv_high = {"high", NULL, "high", 1, 2, 1, NULL};
static const JobSpec rv_borrow = {"borrow", "b", NULL, 8, 1, 1, NULL};
static const JobSpec rv_want = {"want", "a", NULL, 4, 1, 4, NULL};

/* Run the victim job: one cycle binds it, the binder reports the binds, the watch shows it running.
 * Returns when its bind succeeded. */
static gint64 start_victim(Fx *fx, const char *key, guint n)
{
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, key), ==, n);
    kb_test_sched_confirm_all(fx, FALSE);
    return fx->now;
}

static Fx *protect_setup(const char *actions, const char *configurations, gboolean reclaim,
                         gint64 *started)
{
    Fx *fx = fx_new_conf(actions, configurations);
    add_node(fx, "n1", 8);
    if (reclaim) {
        add_queue(fx, "a", 1, TRUE);
        add_queue(fx, "b", 1, TRUE);
    }
    add_job(fx, reclaim ? &rv_borrow : &pv_low);
    *started = start_victim(fx, reclaim ? "team/borrow" : "team/low", reclaim ? 8 : 4);
    return fx;
}

static void test_protect_case(gconstpointer data)
{
    const ProtectCase *c = data;
    gboolean reclaim = strcmp(c->actions, RECLAIM) == 0;
    gint64 started;
    Fx *fx = protect_setup(c->actions, c->configurations, reclaim, &started);
    add_job(fx, reclaim ? &rv_want : &pv_high);
    fx->now = started + c->age;
    kb_test_sched_run(fx);
    const char *waiter = reclaim ? "team/want" : "team/high";
    g_assert_cmpuint(fx->res->evictions->len, ==, c->evicted ? 4 : 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, waiter), ==, 0);
    const KbJobStatus *st = kb_cycle_result_job(fx->res, waiter);
    g_assert_nonnull(st);
    if (c->evicted) {
        g_assert_nonnull(strstr(st->message, "once evicted pods terminate"));
    } else {
        g_assert_cmpstr(st->condition_type, ==, "Unschedulable");
        g_assert_nonnull(strstr(st->message, c->why));
        KbJobInfo *v = kb_cache_lookup_job(fx->cache, "team", reclaim ? "borrow" : "low");
        g_assert_cmpuint(v->n_state[KB_TASK_RUNNING], ==, reclaim ? 8 : 4);
        /* Still waiting a cycle later, with the same text (the status is not rewritten). */
        fx->now = started + c->age;
        kb_test_sched_run(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 0);
        st = kb_cycle_result_job(fx->res, waiter);
        g_assert_nonnull(strstr(st->message, c->why));
        g_assert_false(st->changed);
    }
    kb_test_sched_free(fx);
}

/* A running pod the scheduler did not bind (seen on a node after a restart): its creation time,
 * a lower bound of its start, counts. */
static void test_protect_unbound_by_us(void)
{
    Fx *fx = fx_new(PREEMPT);
    add_node(fx, "n1", 8);
    JobSpec low = pv_low;
    low.nodes = "n1,n1,n1,n1";
    add_job(fx, &low); /* pods created at T_2026 + 1 .. + 4: the 4th (minMember-th) counts */
    add_job(fx, &pv_high);
    fx->now = T_2026 + 4 + 599;
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    fx->now = T_2026 + 4 + 600;
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 4);
    kb_test_sched_free(fx);
}

/* The victims of the last cycle come back as new pending pods (their controller recreates them);
 * the preemptor's pods finish and go. */
static void restart_victims(Fx *fx, const char *preemptor)
{
    g_autoptr(GArray) victims = g_array_ref(fx->res->evictions);
    for (guint i = 0; i < victims->len; i++) {
        const KbEviction *ev = &g_array_index(victims, KbEviction, i);
        g_autofree char *key = g_strdup_printf("team/%s", ev->pod->meta.name);
        json_object *o = NULL;
        json_object_deep_copy(g_hash_table_lookup(fx->pods, key), &o, NULL);
        kb_cache_delete_pod(fx->cache, ev->pod);
        json_object *meta = json_object_object_get(o, "metadata");
        g_autofree char *uid = g_strdup_printf("%s-again-%" G_GINT64_FORMAT,
                                               json_object_get_string(json_object_object_get(
                                                       meta, "uid")),
                                               fx->now);
        json_object_object_add(meta, "uid", json_object_new_string(uid));
        json_object_object_del(json_object_object_get(o, "spec"), "nodeName");
        json_object_object_add(json_object_object_get(o, "status"), "phase",
                               json_object_new_string("Pending"));
        kb_test_sched_put_pod(fx, o);
    }
    KbJobInfo *job = kb_cache_lookup_job(fx->cache, "team", preemptor);
    while (job != NULL && job->tasks->len > 0) {
        KbTaskInfo *t = job->tasks->pdata[0];
        KbPod *pod = kb_object_ref(t->pod);
        kb_cache_delete_pod(fx->cache, pod);
        kb_object_unref(pod);
        job = kb_cache_lookup_job(fx->cache, "team", preemptor);
    }
}

/*
 * Backoff: the Nth eviction of a job needs 2^N x minRunTime of its new incarnation. The job "low"
 * is evicted after 10m, restarts; the next preemptor must wait 20m, then 40m.
 */
typedef struct {
    const char *path;
    const char *configurations;
    gint64 need[3]; /* run time needed before the 1st, 2nd, 3rd eviction */
} BackoffCase;

static const BackoffCase backoff_cases[] = {
        {"/scheduler/preempt/min-run/backoff-doubles", NULL, {600, 1200, 2400}},
        {"/scheduler/preempt/min-run/backoff-off",
         "- name: preempt\n  arguments:\n    evictionBackoff: false\n",
         {600, 600, 600}},
};

static void test_backoff_case(gconstpointer data)
{
    const BackoffCase *c = data;
    Fx *fx = fx_new_conf(PREEMPT, c->configurations);
    add_node(fx, "n1", 8);
    add_job(fx, &pv_low);
    gint64 started = start_victim(fx, "team/low", 4);
    for (guint round = 0; round < G_N_ELEMENTS(c->need); round++) {
        g_autofree char *name = g_strdup_printf("high%u", round);
        JobSpec high = pv_high;
        high.name = name;
        add_job(fx, &high);
        fx->now = started + c->need[round] - 1;
        kb_test_sched_run(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 0);
        fx->now = started + c->need[round];
        kb_test_sched_run(fx);
        g_assert_cmpuint(fx->res->evictions->len, ==, 4);
        KbJobInfo *low = kb_cache_lookup_job(fx->cache, "team", "low");
        g_assert_cmpuint(low->n_evictions, ==, round + 1);
        restart_victims(fx, name);
        started = start_victim(fx, "team/low", 4);
    }
    kb_test_sched_free(fx);
}

/* configurations: durations and switches are checked when the file is read. */
typedef struct {
    const char *path;
    const char *configurations;
    const char *error; /* NULL: accepted */
} ConfCase;

static const ConfCase conf_cases[] = {
        {"/scheduler/preempt/conf/min-run-ok", "- name: preempt\n  arguments:\n    minRunTime: 1h5m10s\n",
         NULL},
        {"/scheduler/preempt/conf/other-actions-kept",
         "- name: enqueue\n  arguments:\n    overcommit-factor: 1.2\n", NULL},
        {"/scheduler/preempt/conf/min-run-words",
         "- name: preempt\n  arguments:\n    minRunTime: 10 minutes\n", "\"10 minutes\" is not a duration"},
        {"/scheduler/preempt/conf/min-run-negative",
         "- name: reclaim\n  arguments:\n    minRunTime: -5m\n", "reclaim\": minRunTime"},
        {"/scheduler/preempt/conf/min-run-unit-then-number",
         "- name: preempt\n  arguments:\n    minRunTime: 10m5\n", "\"10m5\""},
        {"/scheduler/preempt/conf/min-run-over-limit",
         "- name: preempt\n  arguments:\n    minRunTime: 87841h\n", "at most 10 years"},
        {"/scheduler/preempt/conf/backoff-not-bool",
         "- name: preempt\n  arguments:\n    evictionBackoff: maybe\n", "expected true or false"},
        {"/scheduler/preempt/conf/borrowed-only-not-bool",
         "- name: reclaim\n  arguments:\n    borrowedLongJobsOnly: yes please\n",
         "borrowedLongJobsOnly: expected true or false, got \"yes please\""},
        {"/scheduler/preempt/conf/entry-without-name", "- arguments:\n    minRunTime: 1m\n",
         "with a name"},
        {"/scheduler/preempt/conf/not-a-list", "  minRunTime: 1m\n", "expected a list"},
};

static void test_conf_case(gconstpointer data)
{
    const ConfCase *c = data;
    g_autofree char *yaml = g_strdup_printf("actions: \"preempt\"\nconfigurations:\n%s",
                                            c->configurations);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(yaml, strlen(yaml), &error);
    if (c->error == NULL) {
        g_assert_no_error(error);
        g_assert_nonnull(conf);
        return;
    }
    g_assert_null(conf);
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    if (strstr(error->message, c->error) == NULL)
        g_error("error \"%s\" does not contain \"%s\"", error->message, c->error);
}

static void test_conf_limit(void)
{
    GString *yaml = g_string_new("actions: \"preempt\"\nconfigurations:\n");
    for (guint i = 0; i <= KB_CONF_MAX_ACTIONS; i++)
        g_string_append(yaml, "- name: preempt\n");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(yaml->str, yaml->len, &error);
    g_assert_null(conf);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_string_free(yaml, TRUE);
}

static void test_conf_parses(void)
{
    static const char yaml[] = "actions: \"enqueue, allocate, preempt, reclaim\"\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(yaml, strlen(yaml), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(conf->n_actions, ==, 4);
    g_assert_true(kb_conf_has_action(conf, "preempt"));
    g_assert_true(kb_conf_has_action(conf, "reclaim"));
    g_assert_nonnull(kb_action_lookup("preempt"));
    g_assert_nonnull(kb_action_lookup("reclaim"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    for (guint i = 0; i < G_N_ELEMENTS(evict_cases); i++)
        g_test_add_data_func(evict_cases[i].path, &evict_cases[i], test_evict_case);
    g_test_add_func("/scheduler/preempt/no-storm-across-cycles", test_no_storm);
    g_test_add_func("/scheduler/reclaim/borrowed-long-jobs-only", test_reclaim_borrowed_only);
    g_test_add_func("/scheduler/reclaim/borrowed-said-before", test_reclaim_borrowed_said);
    g_test_add_func("/scheduler/preempt/native-disruption-mode-all", test_native_disruption_mode);
    g_test_add_func("/scheduler/preempt/composite-disruption-mode-all",
                    test_composite_disruption_all);
    g_test_add_func("/scheduler/preempt/topology-evicts-inside-one-domain",
                    test_topology_preemptor_one_domain);
    g_test_add_func("/scheduler/preempt/topology-no-victim-outside-the-domain",
                    test_topology_preemptor_no_victim_outside);
    g_test_add_func("/scheduler/reclaim/no-storm-across-cycles", test_no_reclaim_storm);
    g_test_add_func("/scheduler/preempt/memo/same-victims-random", test_memo_same_victims);
    g_test_add_func("/scheduler/reclaim/memo/gang-same-victims", test_memo_reclaim_gang);
    g_test_add_func("/scheduler/preempt/eviction-failed-retries", test_evict_failed);
    g_test_add_func("/scheduler/preempt/discard-leaves-victims-running",
                    test_discard_leaves_victims_running);
    g_test_add_func("/scheduler/preempt/events-name-preemptor", test_events);
    g_test_add_func("/scheduler/preempt/conf-parses", test_conf_parses);
    for (guint i = 0; i < G_N_ELEMENTS(protect_cases); i++)
        g_test_add_data_func(protect_cases[i].path, &protect_cases[i], test_protect_case);
    g_test_add_func("/scheduler/preempt/min-run/unbound-by-us-creation-time",
                    test_protect_unbound_by_us);
    for (guint i = 0; i < G_N_ELEMENTS(backoff_cases); i++)
        g_test_add_data_func(backoff_cases[i].path, &backoff_cases[i], test_backoff_case);
    for (guint i = 0; i < G_N_ELEMENTS(conf_cases); i++)
        g_test_add_data_func(conf_cases[i].path, &conf_cases[i], test_conf_case);
    g_test_add_func("/scheduler/preempt/conf/too-many-entries", test_conf_limit);
    return g_test_run();
}
