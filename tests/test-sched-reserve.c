/*
 * The reserve action end to end without an API server: running jobs with expected runtimes, a
 * waiting big gang and smaller jobs in (decoded from JSON with the real decoders), one cycle,
 * placements and PodGroup conditions out.
 */
#include <string.h>

#include "kube/kb-objects.h"
#include "policies/plugin.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/reserve.h"
#include "tests/lib/kb-test-sched.h"

typedef KbTestSched Fx;

#define T_2026 1767225600 /* 2026-01-01T00:00:00Z */
#define NOW    (T_2026 + 10 * 3600)

#define RESERVE    "enqueue, reserve, allocate"
#define NO_RESERVE "enqueue, allocate"
#define MAX_JOBS   6
#define MAX_CHECKS 4

/*
 * A job: PodGroup @name (minMember @n, queue @queue or the default, class @pc) with @n pods of
 * @gpus GPUs. @nodes: NULL for pending pods, else a node per pod (Running there since
 * @started, seconds after T_2026, which is also the creation time of the group and pods).
 * @runtime: the expected-runtime annotation on the pods, or NULL. @deadline: the pods'
 * activeDeadlineSeconds, 0 for none.
 */
typedef struct {
    const char *name;
    const char *queue;
    const char *pc;
    guint n;
    int gpus;
    const char *nodes;
    gint64 started;
    const char *runtime;
    gint64 deadline;
    const char *annotations; /* JSON members on the PodGroup, or NULL */
} JobSpec;

/* After the cycle: @job got @binds placements and, with @message, its condition contains it
 * (or, starting with "!", does not contain the rest). */
typedef struct {
    const char *job;
    guint binds;
    const char *message;
} Check;

typedef struct {
    const char *path;
    const char *actions;
    const char *configurations; /* YAML of a `configurations:` list, or NULL */
    guint n_nodes;              /* nodes n1..nN of 8 GPUs */
    const char *queues;         /* "a,b": queues of weight 1, or NULL */
    JobSpec jobs[MAX_JOBS];
    Check checks[MAX_CHECKS];
    const char *sla; /* the sla plugin's sla-waiting-time (first tier, last), or NULL: no sla */
    const char *proportion; /* proportion's arguments ("{k: v, ...}"), or NULL: its defaults */
} Case;

static void add_node(Fx *fx, const char *name)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":"
            "\"n-%s\"},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"True\"}]}}",
            name, name);
    kb_test_sched_add_node(fx, json);
}

static void add_queue(Fx *fx, const char *name)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":{\"weight\":1}}",
            name, name);
    kb_test_sched_add_queue(fx, json);
}

static void add_priority_class(Fx *fx, const char *name, int value)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"pc-%s\"},\"value\":%d}",
            name, name, value);
    kb_test_sched_add_priority_class(fx, json);
}

static char *timestamp(gint64 t)
{
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(t);
    return g_date_time_format(dt, "%Y-%m-%dT%H:%M:%SZ");
}

static void add_job(Fx *fx, const JobSpec *j)
{
    g_autofree char *ts = timestamp(T_2026 + j->started);
    g_autofree char *q =
            j->queue != NULL ? g_strdup_printf(",\"queue\":\"%s\"", j->queue) : g_strdup("");
    g_autofree char *pc =
            j->pc != NULL ? g_strdup_printf(",\"priorityClassName\":\"%s\"", j->pc) : g_strdup("");
    g_autofree char *gjson = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"team\",\"uid\":\"pg-%s\","
            "\"creationTimestamp\":\"%s\",\"annotations\":{%s}},\"spec\":{\"minMember\":%u%s%s}}",
            j->name, j->name, ts, j->annotations != NULL ? j->annotations : "", j->n, q, pc);
    kb_test_sched_add_pod_group(fx, gjson);
    g_auto(GStrv) nodes = j->nodes != NULL ? g_strsplit(j->nodes, ",", -1) : NULL;
    g_autofree char *rt =
            j->runtime != NULL
                    ? g_strdup_printf(",\"" KB_RESERVE_RUNTIME_ANNOTATION "\":\"%s\"", j->runtime)
                    : g_strdup("");
    g_autofree char *dl =
            j->deadline > 0
                    ? g_strdup_printf(",\"activeDeadlineSeconds\":%" G_GINT64_FORMAT, j->deadline)
                    : g_strdup("");
    for (guint i = 0; i < j->n; i++) {
        g_autofree char *node = nodes != NULL && nodes[i] != NULL
                                        ? g_strdup_printf(",\"nodeName\":\"%s\"", nodes[i])
                                        : g_strdup("");
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%u\","
                "\"namespace\":\"team\",\"uid\":\"u-%s-%u\",\"creationTimestamp\":\"%s\","
                "\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"%s}},\"spec\":{"
                "\"schedulerName\":\"kube-batchd\"%s%s%s,\"containers\":[{\"name\":\"c\","
                "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\","
                "\"nvidia.com/gpu\":%d}}}]},\"status\":{\"phase\":\"%s\"}}",
                j->name, i, j->name, i, ts, j->name, rt, node, pc, dl, j->gpus,
                nodes != NULL ? "Running" : "Pending");
        kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
    }
}

static Fx *fx_for(const Case *c)
{
    const char *def = kb_conf_default_yaml();
    const char *tiers = strstr(def, "tiers:");
    g_assert_nonnull(tiers);
    const char *second = strstr(tiers + 1, "- plugins:\n  - name: drf");
    g_assert_nonnull(second);
    g_autofree char *sla =
            c->sla != NULL
                    ? g_strdup_printf("  - name: sla\n    arguments: {sla-waiting-time: %s}\n",
                                      c->sla)
                    : g_strdup("");
    const char *prop = "  - name: proportion\n";
    const char *at = strstr(second, prop);
    g_assert_nonnull(at);
    at += strlen(prop);
    g_autofree char *args = c->proportion != NULL
                                    ? g_strdup_printf("    arguments: %s\n", c->proportion)
                                    : g_strdup("");
    g_autofree char *yaml = g_strdup_printf("actions: \"%s\"\n%s%s%.*s%s%.*s%s%s", c->actions,
                                            c->configurations != NULL ? "configurations:\n" : "",
                                            c->configurations != NULL ? c->configurations : "",
                                            (int)(second - tiers), tiers, sla, (int)(at - second),
                                            second, args, at);
    Fx *fx = kb_test_sched_new(yaml);
    fx->now = NOW;
    add_priority_class(fx, "low", 10);
    add_priority_class(fx, "high", 1000);
    for (guint i = 1; i <= c->n_nodes; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name);
    }
    g_auto(GStrv) queues = c->queues != NULL ? g_strsplit(c->queues, ",", -1) : NULL;
    for (guint i = 0; queues != NULL && queues[i] != NULL; i++)
        add_queue(fx, queues[i]);
    for (guint i = 0; i < MAX_JOBS && c->jobs[i].name != NULL; i++)
        add_job(fx, &c->jobs[i]);
    return fx;
}

static void test_case(gconstpointer data)
{
    const Case *c = data;
    Fx *fx = fx_for(c);
    kb_test_sched_run(fx);
    for (guint i = 0; i < fx->res->job_statuses->len; i++) {
        const KbJobStatus *st = &g_array_index(fx->res->job_statuses, KbJobStatus, i);
        g_test_message("%s: %s %s", st->job, st->reason != NULL ? st->reason : "-",
                       st->message != NULL ? st->message : "-");
    }
    for (guint i = 0; i < MAX_CHECKS && c->checks[i].job != NULL; i++) {
        const Check *k = &c->checks[i];
        g_autofree char *key = g_strdup_printf("team/%s", k->job);
        g_assert_cmpuint(kb_test_sched_binds(fx, key), ==, k->binds);
        if (k->message == NULL)
            continue;
        const KbJobStatus *st = kb_cycle_result_job(fx->res, key);
        g_assert_nonnull(st);
        const char *msg = st->message != NULL ? st->message : "";
        if (k->message[0] == '!') {
            if (strstr(msg, k->message + 1) != NULL)
                g_error("%s: message \"%s\" contains \"%s\"", k->job, msg, k->message + 1);
        } else if (strstr(msg, k->message) == NULL) {
            g_error("%s: message \"%s\" lacks \"%s\"", k->job, msg, k->message);
        }
    }
    kb_test_sched_free(fx);
}

/* Two busy nodes: n1 frees in 1h, n2 (4 GPUs busy) in 2h. */
#define BUSY_N1                                                                                    \
    {                                                                                              \
        "a1", NULL, NULL, 1, 8, "n1", 9 * 3600, "2h"                                               \
    }
#define BUSY_N2                                                                                    \
    {                                                                                              \
        "a2", NULL, NULL, 1, 4, "n2", 9 * 3600, "3h"                                               \
    }
/* The big gang waits longest. */
#define BIG                                                                                        \
    {                                                                                              \
        "big", NULL, NULL, 2, 8, NULL, 9 * 3600 + 60, "10h"                                        \
    }

static const Case cases[] = {
        /* Without reservations the small job takes n2's 4 free GPUs: the big gang waits on. */
        {"/scheduler/reserve/without-small-job-takes-capacity",
         NO_RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"small", 1, NULL}, {"big", 0, "!reserved"}}},
        /* With them, the big gang holds n1 and n2 from 2h on; a 5h job would run across it. */
        {"/scheduler/reserve/long-job-kept-off",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"small", 0, "reserved for a waiting gang"},
          {"big", 0, "reserved 2 nodes, expected start in 2h00m"}}},
        /* A job expected to end before the reservation starts backfills. */
        {"/scheduler/reserve/short-job-backfills",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "90m"}},
         {{"small", 1, NULL}, {"big", 0, "reserved 2 nodes"}}},
        /* Ending exactly when the reservation starts is in time. */
        {"/scheduler/reserve/short-job-ends-at-start",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "2h"}},
         {{"small", 1, NULL}}},
        /* No estimate: never on reserved capacity. */
        {"/scheduler/reserve/no-estimate-no-backfill",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, NULL}},
         {{"small", 0, NULL}, {"big", 0, "reserved 2 nodes"}}},
        /* Capacity outside the reservation stays usable by anyone: the big gang reserves n3
         * (free now) and n1 (free in 1h); n2's free GPUs are not held. */
        {"/scheduler/reserve/unreserved-capacity-used",
         RESERVE,
         NULL,
         3,
         NULL,
         {BUSY_N1,
          {"a2", NULL, NULL, 1, 4, "n2", 9 * 3600, "10h"},
          BIG,
          {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, NULL}},
         {{"small", 1, NULL}, {"big", 0, "reserved 2 nodes, expected start in 1h00m"}}},
        /* Running jobs without estimates: the start is unknown, and nothing backfills. */
        {"/scheduler/reserve/unknown-start",
         RESERVE,
         NULL,
         2,
         NULL,
         {{"a1", NULL, NULL, 1, 8, "n1", 9 * 3600, NULL},
          {"a2", NULL, NULL, 1, 4, "n2", 9 * 3600, NULL},
          BIG,
          {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "1m"}},
         {{"small", 0, NULL}, {"big", 0, "reserved 2 nodes, expected start unknown"}}},
        /* Higher priority first, though younger. */
        {"/scheduler/reserve/priority-first",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1,
          BUSY_N2,
          {"old", NULL, "low", 2, 8, NULL, 9 * 3600 + 60, "1h"},
          {"urgent", NULL, "high", 2, 8, NULL, 9 * 3600 + 600, "1h"}},
         {{"urgent", 0, "reserved 2 nodes"}, {"old", 0, "!reserved"}}},
        /* Conservative backfill: the second reservation may not delay the first. big2 would fit
         * on n1 at 1h but runs 10h, across big's start at 2h; it waits for n3 at 3h. */
        {"/scheduler/reserve/second-reservation-after-first",
         RESERVE,
         "- name: reserve\n  arguments:\n    maxReservations: 2\n    minNodes: 1\n",
         3,
         NULL,
         {BUSY_N1,
          {"a2", NULL, NULL, 1, 8, "n2", 9 * 3600, "3h"},
          {"a3", NULL, NULL, 1, 8, "n3", 9 * 3600, "4h"},
          BIG,
          {"big2", NULL, NULL, 1, 8, NULL, 9 * 3600 + 120, "10h"}},
         {{"big", 0, "reserved 2 nodes, expected start in 2h00m"},
          {"big2", 0, "reserved 1 node, expected start in 3h00m"}}},
        /* One reservation by default. */
        {"/scheduler/reserve/one-by-default",
         RESERVE,
         "- name: reserve\n  arguments:\n    minNodes: 1\n",
         3,
         NULL,
         {BUSY_N1,
          {"a2", NULL, NULL, 1, 8, "n2", 9 * 3600, "3h"},
          {"a3", NULL, NULL, 1, 8, "n3", 9 * 3600, "4h"},
          BIG,
          {"big2", NULL, NULL, 1, 8, NULL, 9 * 3600 + 120, "10h"}},
         {{"big", 0, "reserved 2 nodes"}, {"big2", 0, "!reserved"}}},
        /* A job whose queue would go over its deserved share gets no reservation, so it never
         * holds capacity the other queue is due: b's long job takes n2's free GPUs. */
        {"/scheduler/reserve/over-share-no-reservation",
         RESERVE,
         NULL,
         2,
         "a,b",
         {{"a1", "a", NULL, 1, 8, "n1", 9 * 3600, "2h"},
          {"abig", "a", NULL, 2, 8, NULL, 9 * 3600 + 60, "10h"},
          {"bsmall", "b", NULL, 1, 4, NULL, 9 * 3600 + 120, "10h"}},
         {{"bsmall", 1, NULL}, {"abig", 0, "!reserved"}}},
        /* proportion's long-job limit holds abig back while a1 runs (a would hold 24 GPUs, over
         * 3 x its 32/5 by weight; its deserved share, 24, allows it): it is reserved from a1's
         * end, when the limit lets it start, and b's job starts. Before, abig was reserved from now
         * on two free nodes, which stayed idle while a1 ran (on Philly --skip 5000: up to a day),
         * and bsmall was not admitted beside them. The limit alone: with longEarnedShare (the
         * default) abig, past the limit, is out of a's demand and gets no reservation until a is
         * back within the limit. */
        {"/scheduler/reserve/long-limit-at-start",
         RESERVE,
         NULL,
         4,
         "a,b,c,d",
         {{"a1", "a", NULL, 1, 8, "n1", 9 * 3600, "2h"},
          {"abig", "a", NULL, 2, 8, NULL, 9 * 3600 + 60, "10h"},
          {"bsmall", "b", NULL, 1, 8, NULL, 9 * 3600 + 120, "5h"}},
         {{"abig", 0, "reserved 2 nodes, expected start in 1h00m"}, {"bsmall", 1, NULL}},
         NULL,
         "{longEarnedShare: 0, longClusterLimit: 0}"},
        /* The reserved gang's GPUs are booked in its queue's long-job budget: a's 8-GPU job of
         * 10 h would fit the limit now (16 of 19) but would keep abig over it at its start, so
         * it waits (before, it started, and each such job moved abig's start again: 32-GPU
         * gangs waited 5.7 d on Philly --skip 10000). */
        {"/scheduler/reserve/long-limit-books-gang",
         RESERVE,
         NULL,
         4,
         "a,b,c,d",
         {{"a1", "a", NULL, 1, 8, "n1", 9 * 3600, "2h"},
          {"abig", "a", NULL, 2, 8, NULL, 9 * 3600 + 60, "10h"},
          {"along", "a", NULL, 1, 8, NULL, 9 * 3600 + 90, "10h"},
          {"bsmall", "b", NULL, 1, 8, NULL, 9 * 3600 + 120, "5h"}},
         {{"abig", 0, "reserved 2 nodes, expected start in 1h00m"},
          {"along", 0, "expected to run longer than"},
          {"bsmall", 1, NULL}},
         NULL,
         /* The limit alone: by default along's demand would earn abig room to start now. */
         "{longEarnedShare: 0, longClusterLimit: 0}"},
        /* ... but a job of the queue expected to end before the reserved start is not held by
         * the booking: a1 runs 7 h more, so abig is reserved from then; a's 8-GPU job of 6h30m
         * ends before it and the queue, without the booking, stays within the limit (16 of 19),
         * so it starts (before, the booking held it beside idle GPUs: ee9e8c's 8-GPU jobs of
         * days waited 5 days beside idle GPUs on Philly --skip 50000). */
        {"/scheduler/reserve/long-limit-booking-ends-before",
         RESERVE,
         NULL,
         4,
         "a,b,c,d",
         {{"a1", "a", NULL, 1, 8, "n1", 9 * 3600, "8h"},
          {"abig", "a", NULL, 2, 8, NULL, 9 * 3600 + 60, "10h"},
          {"along", "a", NULL, 1, 8, NULL, 9 * 3600 + 90, "6h30m"}},
         {{"abig", 0, "reserved 2 nodes, expected start in 7h00m"}, {"along", 1, NULL}},
         NULL,
         "{longEarnedShare: 0, longClusterLimit: 0}"}, /* the limit alone, as above */
        /* A queue over its deserved share may borrow GPUs a reservation keeps free, with a job
         * expected to end by the reserved start: a holds 32 of 48 GPUs (deserved 24), b's gang
         * of 24 is reserved from a1's end in 2 h on n1, n5 and n6; a's 4-GPU job of 1 h runs on
         * n5 or n6 meanwhile, its job of 5 h waits (before, both waited beside the idle GPUs:
         * on a synthetic load with 64-GPU gangs, p95 wait 10.0 h against 2.9 h). */
        {"/scheduler/reserve/lend-until-reservation",
         RESERVE,
         NULL,
         6,
         "a,b",
         {{"a1", "a", NULL, 2, 8, "n1,n2", 9 * 3600, "3h"},
          {"a2", "a", NULL, 2, 8, "n3,n4", 9 * 3600, "10h"},
          {"bbig", "b", NULL, 3, 8, NULL, 9 * 3600 + 60, "10h"},
          {"ashort", "a", NULL, 1, 4, NULL, 9 * 3600 + 90, "1h"},
          {"along", "a", NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"bbig", 0, "reserved 3 nodes, expected start in 2h00m"},
          {"ashort", 1, NULL},
          {"along", 0, "deserved share"}}},
        /* activeDeadlineSeconds is an estimate: a job killed within 90m backfills. */
        {"/scheduler/reserve/deadline-backfills",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, NULL, 5400}},
         {{"small", 1, NULL}, {"big", 0, "reserved 2 nodes, expected start in 2h00m"}}},
        /* The deadline caps a longer annotation: the job cannot run past it. */
        {"/scheduler/reserve/deadline-caps-annotation",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h", 3600}},
         {{"small", 1, NULL}}},
        /* A deadline past the reservation's start: kept off like any long job. */
        {"/scheduler/reserve/long-deadline-kept-off",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, NULL, 3 * 3600}},
         {{"small", 0, "reserved for a waiting gang"}, {"big", 0, "reserved 2 nodes"}}},
        /* minWait: a gang that waited less than 2h gets no reservation yet; the long job takes
         * n2's free GPUs. */
        {"/scheduler/reserve/min-wait-not-yet",
         RESERVE,
         "- name: reserve\n  arguments:\n    minWait: 2h\n",
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"small", 1, NULL}, {"big", 0, "!reserved"}}},
        /* ... and once it has waited that long, it gets one (created 9h after T, now 10h). */
        {"/scheduler/reserve/min-wait-reached",
         RESERVE,
         "- name: reserve\n  arguments:\n    minWait: 50m\n",
         2,
         NULL,
         {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"small", 0, "reserved for a waiting gang"}, {"big", 0, "reserved 2 nodes"}}},
        /* By default (minNodes 2) a gang that fits one node gets no reservation: packing frees
         * whole nodes for it. */
        {"/scheduler/reserve/one-node-gang-not-reserved",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1,
          BUSY_N2,
          {"one", NULL, NULL, 1, 8, NULL, 9 * 3600 + 60, "10h"},
          {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"small", 1, NULL}, {"one", 0, "!reserved"}}},
        /* ... unless minNodes is 1: it reserves n1 (free in 1h); n2's free GPUs stay anyone's. */
        {"/scheduler/reserve/one-node-gang-min-nodes-1",
         RESERVE,
         "- name: reserve\n  arguments:\n    minNodes: 1\n",
         2,
         NULL,
         {BUSY_N1,
          BUSY_N2,
          {"one", NULL, NULL, 1, 8, NULL, 9 * 3600 + 60, "10h"},
          {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"small", 1, NULL}, {"one", 0, "reserved 1 node, expected start in 1h00m"}}},
        /* A starving gang goes before an older job that needs no reservation: the older 10h
         * job fits n1 now, but would hold it across the gang's start at 2h. */
        {"/scheduler/reserve/starving-gang-before-older-job",
         RESERVE,
         NULL,
         2,
         NULL,
         {{"a2", NULL, NULL, 1, 8, "n2", 9 * 3600, "3h"},
          {"older", NULL, NULL, 1, 8, NULL, 9 * 3600 + 30, "10h"},
          BIG},
         {{"older", 0, "reserved for a waiting gang"},
          {"big", 0, "reserved 2 nodes, expected start in 2h00m"}}},
        /* A starving gang whose nodes are free now holds them while it starts: the older job
         * that would also fit does not take them. */
        {"/scheduler/reserve/starving-gang-starts-first",
         RESERVE,
         NULL,
         2,
         NULL,
         {{"older", NULL, NULL, 1, 8, NULL, 9 * 3600 + 30, "10h"}, BIG},
         {{"big", 2, NULL}, {"older", 0, NULL}}},
        /* enqueue admits the long job first (job order) against all idle GPUs, the held ones
         * included; it cannot use them, and the short job behind it would never be admitted:
         * the long one goes back to Pending and the short one backfills. */
        {"/scheduler/reserve/admission-around-holds",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1,
          BUSY_N2,
          BIG,
          {"long", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"},
          {"short", NULL, NULL, 1, 4, NULL, 9 * 3600 + 180, "90m"}},
         {{"short", 1, NULL},
          {"long", 0, "expected to run past the reservation's start"},
          {"big", 0, "reserved 2 nodes"}}},
        /* When the reserved capacity is free, the gang starts (admitted though Pending). */
        {"/scheduler/reserve/starts-when-free",
         RESERVE,
         NULL,
         2,
         NULL,
         {BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
         {{"big", 2, NULL}, {"small", 0, NULL}}},
        /* A one-node job needs no reservation (minNodes 2) and takes none... */
        {"/scheduler/reserve/sla/within-limit-no-reservation",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, {"one", NULL, NULL, 1, 8, NULL, 9 * 3600 + 60, "10h"}},
         {{"one", 0, "!reserved"}},
         "2h"},
        /* ... until it has waited past its sla waiting time: then it reserves n1, free in 1h. */
        {"/scheduler/reserve/sla/overdue-reserves",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1, BUSY_N2, {"one", NULL, NULL, 1, 8, NULL, 9 * 3600 + 60, "10h"}},
         {{"one", 0, "reserved 1 node, expected start in 1h00m"}},
         "30m"},
        /* An overdue job (its own limit) goes before an older starving gang of its priority,
         * within the plugin's limit: the one reservation is its own. */
        {"/scheduler/reserve/sla/overdue-before-starving",
         RESERVE,
         NULL,
         2,
         NULL,
         {BUSY_N1,
          BUSY_N2,
          BIG,
          {"one", NULL, NULL, 1, 8, NULL, 9 * 3600 + 120, "10h", 0,
           "\"" KB_SLA_ANNOTATION_SHORT "\":\"30m\""}},
         {{"one", 0, "reserved 1 node, expected start in 1h00m"}, {"big", 0, "!reserved"}},
         "2h"},
};

/*
 * The gang reserves only nodes its pods may use: n4 is free now but tainted, so the gang waits
 * for n1 (free in 1h) and n2 (in 2h), not for n1 alone. The reservation judges a node's
 * predicates only where a pod fits (reserve.c's eligible()): a tainted node with room must still
 * be judged.
 */
static void test_tainted_node_not_reserved(void)
{
    static const Case c = {"/scheduler/reserve/tainted-node-not-reserved",
                           RESERVE,
                           NULL,
                           3,
                           NULL,
                           {BUSY_N1,
                            {"a2", NULL, NULL, 1, 8, "n2", 9 * 3600, "3h"},
                            {"a3", NULL, NULL, 1, 8, "n3", 9 * 3600, "10h"},
                            BIG},
                           {{NULL, 0, NULL}},
                           NULL};
    Fx *fx = fx_for(&c);
    kb_test_sched_add_node(
            fx, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n4\","
                "\"uid\":\"n-n4\"},\"spec\":{\"taints\":[{\"key\":\"maintenance\",\"effect\":"
                "\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":"
                "\"256Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":"
                "\"Ready\",\"status\":\"True\"}]}}");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "team/big"), ==, 0);
    const KbJobStatus *st = kb_cycle_result_job(fx->res, "team/big");
    g_assert_nonnull(st);
    g_assert_nonnull(st->message);
    g_test_message("big: %s", st->message);
    g_assert_nonnull(strstr(st->message, "reserved 2 nodes, expected start in 2h00m"));
    kb_test_sched_free(fx);
}

/* Across cycles: the big gang starts once the running jobs end, before the small long job. */
static void test_starts_in_order(void)
{
    static const Case c = {
            "",
            RESERVE,
            NULL,
            2,
            NULL,
            {BUSY_N1, BUSY_N2, BIG, {"small", NULL, NULL, 1, 4, NULL, 9 * 3600 + 120, "5h"}},
            {{NULL}}};
    Fx *fx = fx_for(&c);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    /* The running jobs end: their pods succeed. */
    const char *done[] = {"team/a1-0", "team/a2-0"};
    for (guint i = 0; i < G_N_ELEMENTS(done); i++) {
        json_object *o = g_hash_table_lookup(fx->pods, done[i]);
        g_assert_nonnull(o);
        json_object *status = NULL;
        json_object_object_get_ex(o, "status", &status);
        json_object_object_add(status, "phase", json_object_new_string("Succeeded"));
        kb_test_sched_put_pod(fx, json_object_get(o));
    }
    fx->now = NOW + 2 * 3600;
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "team/big"), ==, 2);
    g_assert_cmpuint(kb_test_sched_binds(fx, "team/small"), ==, 0);
    kb_test_sched_free(fx);
}

static void test_runtime_annotation(void)
{
    static const struct {
        const char *value;
        gint64 want;
    } rows[] = {{"2h30m", 9000},
                {"90", 90},
                {"0", 1},
                {"soon", KB_RESERVE_UNKNOWN},
                {"-5m", KB_RESERVE_UNKNOWN},
                {NULL, KB_RESERVE_UNKNOWN}};
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        Case c = {"",      RESERVE, NULL,
                  1,       NULL,    {{"j", NULL, NULL, 1, 1, NULL, 0, rows[i].value}},
                  {{NULL}}};
        Fx *fx = fx_for(&c);
        KbJobInfo *job = kb_cache_lookup_job(fx->cache, "team", "j");
        g_assert_nonnull(job);
        g_assert_cmpint(kb_reserve_job_runtime(job, NULL), ==, rows[i].want);
        kb_test_sched_free(fx);
    }
}

/* The estimate is kept on the job between cycles: an update of a pod or the group is seen. */
static void test_runtime_follows_updates(void)
{
    Case c = {"", RESERVE, NULL, 1, NULL, {{"j", NULL, NULL, 1, 1, NULL, 0, "2h"}}, {{NULL}}};
    Fx *fx = fx_for(&c);
    KbJobInfo *job = kb_cache_lookup_job(fx->cache, "team", "j");
    g_assert_nonnull(job);
    g_assert_cmpint(kb_reserve_job_runtime(job, NULL), ==, 7200);
    g_assert_cmpint(kb_reserve_job_runtime(job, NULL), ==, 7200);
    json_object *pod = json_object_get(g_hash_table_lookup(fx->pods, "team/j-0"));
    g_assert_nonnull(pod);
    json_object *meta = NULL, *annotations = NULL, *spec = NULL;
    g_assert_true(json_object_object_get_ex(pod, "metadata", &meta));
    g_assert_true(json_object_object_get_ex(meta, "annotations", &annotations));
    json_object_object_add(annotations, KB_RESERVE_RUNTIME_ANNOTATION,
                           json_object_new_string("30m"));
    kb_test_sched_put_pod(fx, pod);
    g_assert_cmpint(kb_reserve_job_runtime(job, NULL), ==, 1800);
    /* The group's annotation comes first. */
    kb_test_sched_add_pod_group(
            fx, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"j\",\"namespace\":\"team\",\"uid\":\"pg-j\","
                "\"annotations\":{\"" KB_RESERVE_RUNTIME_ANNOTATION "\":\"10m\"}},"
                "\"spec\":{\"minMember\":1}}");
    g_assert_cmpint(kb_reserve_job_runtime(job, NULL), ==, 600);
    pod = json_object_get(g_hash_table_lookup(fx->pods, "team/j-0"));
    g_assert_true(json_object_object_get_ex(pod, "spec", &spec));
    json_object_object_add(spec, "activeDeadlineSeconds", json_object_new_int64(300));
    kb_test_sched_put_pod(fx, pod);
    g_assert_cmpint(kb_reserve_job_runtime(job, NULL), ==, 300);
    kb_test_sched_free(fx);
}

/*
 * Which estimate wins: the annotation, else the queue's history; activeDeadlineSeconds caps
 * either and stands alone when neither exists.
 */
static void test_runtime_sources(void)
{
    KbHistory *hist = kb_history_new();
    /* Queue "default", 1-GPU jobs: 10 samples 100..1000 s; the 90th percentile is 900 s. */
    for (int i = 1; i <= 10; i++)
        kb_history_add(hist, "default", 1, i * 100);
    static const struct {
        const char *annotation;
        gint64 deadline;
        gboolean history;
        gint64 want;
    } rows[] = {
            {"2h", 0, FALSE, 7200},                 /* annotation alone */
            {"2h", 0, TRUE, 7200},                  /* annotation beats history */
            {NULL, 0, TRUE, 900},                   /* history alone: its 90th percentile */
            {NULL, 3000, FALSE, 3000},              /* deadline alone */
            {"2h", 3000, TRUE, 3000},               /* deadline caps the annotation */
            {"30m", 3000, FALSE, 1800},             /* a shorter annotation stands */
            {NULL, 600, TRUE, 600},                 /* deadline caps history */
            {NULL, 0, FALSE, KB_RESERVE_UNKNOWN},   /* nothing */
            {"soon", 0, FALSE, KB_RESERVE_UNKNOWN}, /* a bad annotation is none */
    };
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        Case c = {"",      RESERVE,
                  NULL,    1,
                  NULL,    {{"j", NULL, NULL, 1, 1, NULL, 0, rows[i].annotation, rows[i].deadline}},
                  {{NULL}}};
        Fx *fx = fx_for(&c);
        KbJobInfo *job = kb_cache_lookup_job(fx->cache, "team", "j");
        g_assert_nonnull(job);
        g_test_message("row %u", i);
        g_assert_cmpint(kb_reserve_job_runtime(job, rows[i].history ? hist : NULL), ==,
                        rows[i].want);
        kb_test_sched_free(fx);
    }
    kb_history_free(hist);
}

static void test_history(void)
{
    KbHistory *h = kb_history_new();
    /* Too few samples: no estimate. */
    for (int i = 0; i < KB_HISTORY_MIN_SAMPLES - 1; i++)
        kb_history_add(h, "q", 8, 3600);
    g_assert_cmpint(kb_history_estimate(h, "q", 8), ==, -1);
    kb_history_add(h, "q", 8, 7200);
    g_assert_cmpint(kb_history_estimate(h, "q", 8), ==, 7200);
    /* Same bucket (5-8 GPUs), other queue or other bucket: none. */
    g_assert_cmpint(kb_history_estimate(h, "q", 5), ==, 7200);
    g_assert_cmpint(kb_history_estimate(h, "q", 16), ==, -1);
    g_assert_cmpint(kb_history_estimate(h, "other", 8), ==, -1);
    /* Only the last KB_HISTORY_KEEP count: short jobs push the old long ones out. */
    for (int i = 0; i < KB_HISTORY_KEEP; i++)
        kb_history_add(h, "q", 8, 60);
    g_assert_cmpint(kb_history_estimate(h, "q", 8), ==, 60);
    /* Finished jobs are stamped with the next cycle's clock. */
    for (int i = 0; i < KB_HISTORY_MIN_SAMPLES; i++)
        kb_history_finished(h, "r", 1, 1000 + i);
    g_assert_cmpint(kb_history_estimate(h, "r", 1), ==, -1);
    kb_history_stamp(h, 5000);
    g_assert_cmpint(kb_history_estimate(h, "r", 1), ==, 4000);
    kb_history_free(h);
}

/* The samples go out (oldest first, once per change) and come back into a new scheduler's
 * history, which then estimates as the old one did; figures older than its own are not adopted. */
static void test_history_export_restore(void)
{
    KbHistory *h = kb_history_new();
    KbQueueHistory out;
    g_assert_false(kb_history_export(h, "q", &out));
    for (int i = 0; i < KB_HISTORY_KEEP + 3; i++)
        kb_history_finished(h, "q", 4, 1000 - i * 10);
    kb_history_finished(h, "q", 0, 1000);
    kb_history_stamp(h, 2000);
    g_assert_cmpint(kb_history_estimate(h, "q", 4), ==, 1310);
    g_assert_true(kb_history_export(h, "q", &out));
    g_assert_cmpint(out.time, ==, 2000);
    g_assert_cmpuint(out.n[2], ==, KB_HISTORY_KEEP); /* 2-4 GPUs: the newest 32 */
    g_assert_cmpint(out.runtime[2][0], ==, 1030);    /* the oldest kept */
    g_assert_cmpint(out.runtime[2][KB_HISTORY_KEEP - 1], ==, 1340);
    g_assert_cmpuint(out.n[0], ==, 1);
    g_assert_cmpuint(out.n[1] + out.n[3] + out.n[4] + out.n[5], ==, 0);
    /* unchanged since: nothing to export */
    KbQueueHistory again;
    g_assert_false(kb_history_export(h, "q", &again));

    /* a restart: the new history is empty, adopts what was written and estimates the same */
    KbHistory *h2 = kb_history_new();
    g_assert_cmpint(kb_history_estimate(h2, "q", 4), ==, -1);
    g_assert_true(kb_history_restore(h2, "q", &out));
    g_assert_cmpint(kb_history_estimate(h2, "q", 4), ==, 1310);
    /* adopted figures are not exported back; its own write coming back is not adopted again */
    g_assert_false(kb_history_export(h2, "q", &again));
    g_assert_false(kb_history_restore(h2, "q", &out));
    /* a newer sample of its own: exported; an older status does not replace it */
    kb_history_finished(h2, "q", 4, 2500);
    kb_history_stamp(h2, 3000);
    g_assert_true(kb_history_export(h2, "q", &again));
    g_assert_cmpint(again.runtime[2][KB_HISTORY_KEEP - 1], ==, 500);
    g_assert_false(kb_history_restore(h2, "q", &out));
    g_assert_cmpint(kb_history_estimate(h2, "q", 4), ==, 1310);
    /* another sample within the same second is a change of its own, with a later time */
    kb_history_finished(h2, "q", 4, 2900);
    kb_history_stamp(h2, 3000);
    g_assert_true(kb_history_export(h2, "q", &again));
    g_assert_cmpint(again.time, ==, 3001);
    g_assert_cmpint(again.runtime[2][KB_HISTORY_KEEP - 1], ==, 100);
    kb_history_free(h2);
    kb_history_free(h);
}

/* The cache records a job the scheduler bound when its pods succeed; reserve stamps it. */
/* The watch shows the placed pods bound and Running before the bindings' answers come. */
static void confirm_watch_first(Fx *fx)
{
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        g_autofree char *key = g_strdup_printf("%s/%s", p->pod->meta.namespace_, p->pod->meta.name);
        json_object *copy = NULL;
        json_object_deep_copy(g_hash_table_lookup(fx->pods, key), &copy, NULL);
        json_object_object_add(json_object_object_get(copy, "spec"), "nodeName",
                               json_object_new_string(p->node));
        json_object_object_add(json_object_object_get(copy, "status"), "phase",
                               json_object_new_string("Running"));
        kb_test_sched_put_pod(fx, copy);
        g_assert_false(kb_cache_bind_succeeded(fx->cache, p->pod->meta.namespace_,
                                               p->pod->meta.name, p->pod->meta.uid, fx->now));
    }
}

static void test_history_from_cache(void)
{
    static const Case c = {"", RESERVE, NULL, 1, NULL, {{NULL}}, {{NULL}}};
    Fx *fx = fx_for(&c);
    KbHistory *h = kb_cache_history(fx->cache);
    for (int round = 0; round <= KB_HISTORY_MIN_SAMPLES; round++) {
        /* Stamps the job of the round before, which ended 1800 s after its bind confirmed. */
        kb_test_sched_run(fx);
        if (round == KB_HISTORY_MIN_SAMPLES)
            break;
        g_assert_cmpint(kb_history_estimate(h, "default", 4), ==, -1);
        g_autofree char *name = g_strdup_printf("j%d", round);
        JobSpec j = {name, NULL, NULL, 2, 2, NULL, 9 * 3600, NULL, 0};
        add_job(fx, &j);
        kb_test_sched_run(fx);
        g_autofree char *key = g_strdup_printf("team/%s", name);
        g_assert_cmpuint(kb_test_sched_binds(fx, key), ==, 2);
        /* Every other job: the watch comes first; it is a sample all the same. */
        if (round % 2 == 0)
            kb_test_sched_confirm_all(fx, FALSE);
        else
            confirm_watch_first(fx);
        fx->now += 1800;
        for (int k = 0; k < 2; k++) {
            g_autofree char *pod = g_strdup_printf("team/%s-%d", name, k);
            json_object *o = g_hash_table_lookup(fx->pods, pod);
            g_assert_nonnull(o);
            json_object *copy = NULL;
            json_object_deep_copy(o, &copy, NULL);
            json_object *status = NULL;
            json_object_object_get_ex(copy, "status", &status);
            json_object_object_add(status, "phase", json_object_new_string("Succeeded"));
            kb_test_sched_put_pod(fx, copy);
        }
    }
    g_assert_cmpint(kb_history_estimate(h, "default", 4), ==, 1800);
    /* A job that failed or never ran through the scheduler is no sample: other buckets empty. */
    g_assert_cmpint(kb_history_estimate(h, "default", 1), ==, -1);
    kb_test_sched_free(fx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
        g_test_add_data_func(cases[i].path, &cases[i], test_case);
    g_test_add_func("/scheduler/reserve/starts-in-order", test_starts_in_order);
    g_test_add_func("/scheduler/reserve/tainted-node-not-reserved", test_tainted_node_not_reserved);
    g_test_add_func("/scheduler/reserve/runtime-annotation", test_runtime_annotation);
    g_test_add_func("/scheduler/reserve/runtime-sources", test_runtime_sources);
    g_test_add_func("/scheduler/reserve/runtime-follows-updates", test_runtime_follows_updates);
    g_test_add_func("/scheduler/reserve/history", test_history);
    g_test_add_func("/scheduler/reserve/history-export-restore", test_history_export_restore);
    g_test_add_func("/scheduler/reserve/history-from-cache", test_history_from_cache);
    return g_test_run();
}
