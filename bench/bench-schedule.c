/*
 * One scheduling cycle in process, no API server: N nodes x 8 GPUs and P pending pods in gangs of
 * 1 to 64 (one PodGroup each, minMember = size), default configuration (enqueue, allocate;
 * priority, gang, conformance, drf, predicates, proportion, nodeorder). Records are built once
 * with the real decoders; only kb_cycle_run is timed.
 *
 * Prints placements per second for the full size (5,000 nodes, 50,000 pods) and for 1/10 of it,
 * and the time ratio (near-linear means 10x the work costs ~10x the time). Figures only.
 *
 * Last, one cycle with Volcano's e2e configuration file (sla, binpack, ignored plugins) and with
 * the default plus sla and binpack, against the default, every job past its sla limit.
 *
 * DRA: 1,000 nodes x 8 GPUs published as ResourceSlices (NVIDIA's DeviceClass selector) and 5,000
 * pods in gangs of 8, each with its own claim of one GPU, against the same run asking
 * nvidia.com/gpu: 1; placements/s of each and their ratio (the cycle only; the claim writes are
 * the binder's, measured by bench-e2e).
 *
 * The fgd plugin (in the default) with its shape histogram full against fgd.weight 0: what its
 * scores cost per cycle.
 *
 * Reclaim: bench-scale kai-reclaim-250's decision in process (500 nodes x 8 GPUs full of 4,000
 * one-GPU jobs of queue filler, a gang of 250 whole-node pods of queue big, weights 1:1): the
 * CPU time of the cycle that chooses the 2,000 victims, with preempt.c's node memo and without
 * (kb_preempt_set_memo), alternated, and whether both chose the same victims.
 *
 * Usage: bench-schedule [nodes pods]   (defaults 5000 50000)
 *        bench-schedule dra            (the DRA rows only)
 *        bench-schedule fgd            (the fgd rows only, full size)
 *        bench-schedule reclaim        (the reclaim rows only)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kb-dra.h"
#include "kube/kb-objects.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/dra.h"
#include "scheduler/actions.h"
#include "scheduler/fragment.h"
#include "testbed/kubelet/kbl-dra.h"
#include "tests/lib/kb-test-confs.h"
#include "tests/lib/kb-test-sched.h"

typedef gpointer (*DecodeFn)(json_object *obj, gboolean keep_raw, GError **error);

static gpointer decode(const char *json, DecodeFn fn)
{
    json_object *o = json_tokener_parse(json);
    g_autoptr(GError) error = NULL;
    gpointer rec = o != NULL ? fn(o, FALSE, &error) : NULL;
    if (rec == NULL)
        g_error("bench: cannot decode %s: %s", json, error != NULL ? error->message : "bad JSON");
    json_object_put(o);
    return rec;
}

static void add_nodes(KbCache *cache, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *json = g_strdup_printf(
                "{\"metadata\":{\"name\":\"node-%05u\",\"uid\":\"n%u\",\"labels\":{\"rack\":\"r%"
                "u\"}},"
                "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
                "\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\","
                "\"status\":\"True\"}]}}",
                i, i, i / 40);
        KbNode *node = decode(json, (DecodeFn)kb_node_decode);
        kb_cache_add_node(cache, node);
        kb_object_unref(node);
    }
}

/* Gangs of 1..64 pods (deterministic pseudo-random sizes) until @n_pods pods exist; with
 * @queues, job i goes to queues[i % n_queues]. */
static guint add_jobs_in(KbCache *cache, guint n_pods, GPtrArray *queues)
{
    guint32 seed = 12345;
    guint made = 0, job = 0;
    while (made < n_pods) {
        seed = seed * 1103515245u + 12345u;
        guint size = 1 + (seed >> 16) % 64;
        if (size > n_pods - made)
            size = n_pods - made;
        guint gpus = 1 + (seed >> 8) % 2; /* 1 or 2 GPUs per pod */
        g_autofree char *queue = queues != NULL
                                         ? g_strdup_printf(",\"queue\":\"%s\"",
                                                           (char *)queues->pdata[job % queues->len])
                                         : g_strdup("");
        g_autofree char *pg_json = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/"
                "v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
                "{\"name\":\"job-%u\",\"namespace\":\"ml\",\"uid\":\"pg%u\",\"creationTimestamp\":"
                "\"2026-01-01T00:00:00Z\"},\"spec\":{\"minMember\":%u%s}}",
                job, job, size, queue);
        KbPodGroup *pg = decode(pg_json, (DecodeFn)kb_pod_group_decode);
        kb_cache_add_pod_group(cache, pg);
        kb_object_unref(pg);
        for (guint t = 0; t < size; t++) {
            g_autofree char *json = g_strdup_printf(
                    "{\"metadata\":{\"name\":\"job-%u-%u\",\"namespace\":\"ml\",\"uid\":\"p%u-%u\","
                    "\"annotations\":{\"scheduling.k8s.io/group-name\":\"job-%u\","
                    "\"kube-batchd.io/expected-runtime\":\"%uh\"}},\"spec\":{"
                    "\"schedulerName\":\"kube-batchd\",\"containers\":[{\"name\":\"tensorflow\","
                    "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"32Gi\","
                    "\"nvidia.com/gpu\":%u}}}]},\"status\":{\"phase\":\"Pending\"}}",
                    job, t, job, t, job, 1 + job % 10, gpus);
            KbPod *pod = decode(json, (DecodeFn)kb_pod_decode);
            kb_cache_add_pod(cache, pod);
            kb_object_unref(pod);
        }
        made += size;
        job++;
    }
    return job;
}

static guint add_jobs(KbCache *cache, guint n_pods)
{
    return add_jobs_in(cache, n_pods, NULL);
}

typedef struct {
    double seconds;
    guint placed;
    guint jobs;
} Figures;

static Figures run_one(guint n_nodes, guint n_pods)
{
    g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
    g_autoptr(KbConf) conf = kb_conf_new_default();
    add_nodes(cache, n_nodes);
    guint jobs = add_jobs(cache, n_pods);
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, 1000);
    gint64 t1 = g_get_monotonic_time();
    Figures f = {(double)(t1 - t0) / 1e6, res->placements->len, jobs};
    printf("  %5u nodes x 8 GPUs, %6u pods in %5u gangs: %6u placed, %5u gangs placed, "
           "%4u discarded, cycle %.3f s",
           n_nodes, n_pods, jobs, f.placed, res->n_jobs_placed, res->n_jobs_discarded, f.seconds);
    for (guint i = 0; i < res->n_actions; i++)
        printf(" (%s %.3f s)", conf->actions[i], (double)res->action_us[i] / 1e6);
    printf("\n  -> %.0f pod placements/s\n", f.seconds > 0 ? f.placed / f.seconds : 0.0);
    return f;
}

/*
 * The reserve action's cost: a first default cycle fills the cluster (binds confirmed, so the
 * placed gangs run with their expected runtimes), then a second cycle over the waiting gangs
 * with `enqueue, allocate` and with `enqueue, reserve, allocate` at @max_res reservations.
 */
static void run_reserve(guint n_nodes, guint n_pods)
{
    static const guint maxes[] = {0, 1, 4, 16};
    double base = 0;
    for (guint k = 0; k < G_N_ELEMENTS(maxes); k++) {
        /* A fresh cluster for each configuration: the first cycle's reports change state. */
        g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
        g_autoptr(KbConf) def = kb_conf_new_default();
        add_nodes(cache, n_nodes);
        add_jobs(cache, n_pods);
        g_autoptr(KbCycleResult) first = kb_cycle_run(cache, def, 1000);
        for (guint i = 0; i < first->placements->len; i++) {
            const KbPlacement *pl = &g_array_index(first->placements, KbPlacement, i);
            kb_cache_bind_succeeded(cache, pl->pod->meta.namespace_, pl->pod->meta.name,
                                    pl->pod->meta.uid, 1000);
        }
        if (k == 0)
            printf("  %5u nodes, %u pods running, then a cycle over the waiting gangs:\n", n_nodes,
                   first->placements->len);
        const char *tiers = strstr(kb_conf_default_yaml(), "tiers:");
        g_autofree char *yaml =
                maxes[k] == 0 ? g_strdup_printf("actions: \"enqueue, allocate\"\n%s", tiers)
                              : g_strdup_printf("actions: \"enqueue, reserve, allocate\"\n"
                                                "configurations:\n- name: reserve\n"
                                                "  arguments: {maxReservations: %u}\n%s",
                                                maxes[k], tiers);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbConf) conf = kb_conf_parse(yaml, strlen(yaml), &error);
        g_assert_no_error(error);
        gint64 t0 = g_get_monotonic_time();
        g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, 1060);
        double s = (double)(g_get_monotonic_time() - t0) / 1e6;
        if (k == 0)
            base = s;
        g_autofree char *label = maxes[k] == 0
                                         ? g_strdup("enqueue, allocate")
                                         : g_strdup_printf("reserve, maxReservations %u", maxes[k]);
        printf("    %-28s cycle %.3f s (%.2fx)", label, s, base > 0 ? s / base : 0);
        for (guint i = 0; i < res->n_actions; i++)
            printf(" (%s %.3f s)", conf->actions[i], (double)res->action_us[i] / 1e6);
        printf("\n");
    }
}

/* ---- hierarchical queues against flat ones -------------------------------------------------- */

static void add_queue(KbCache *cache, const char *name, const char *parent, guint weight)
{
    g_autofree char *p =
            parent != NULL ? g_strdup_printf(",\"parent\":\"%s\"", parent) : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":{\"weight\":%u%s}}", name,
            name, weight, p);
    KbQueue *q = decode(json, (DecodeFn)kb_queue_decode);
    kb_cache_add_queue(cache, q);
    kb_object_unref(q);
}

/* Queues under @parent at @level of a tree with @fanout[level] children per queue; leaves'
 * names into @leaves. */
static void add_subtree(KbCache *cache, const char *parent, const guint *fanout, guint levels,
                        guint level, GPtrArray *leaves)
{
    for (guint i = 0; i < fanout[level]; i++) {
        g_autofree char *name = g_strdup_printf("%s%s%u", parent != NULL ? parent : "q",
                                                parent != NULL ? "-" : "", i);
        add_queue(cache, name, parent, 1 + i % 3);
        if (level + 1 < levels)
            add_subtree(cache, name, fanout, levels, level + 1, leaves);
        else
            g_ptr_array_add(leaves, g_strdup(name));
    }
}

/* One cycle with jobs spread over 1,000 leaf queues: flat (@deep FALSE) or 5 levels deep. */
static double run_queues(guint n_nodes, guint n_pods, gboolean deep)
{
    static const guint deep_fanout[] = {2, 5, 5, 4, 5}; /* 1,000 leaves at depth 5 */
    static const guint flat_fanout[] = {1000};
    g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
    g_autoptr(KbConf) conf = kb_conf_new_default();
    g_autoptr(GPtrArray) leaves = g_ptr_array_new_with_free_func(g_free);
    add_subtree(cache, NULL, deep ? deep_fanout : flat_fanout, deep ? 5 : 1, 0, leaves);
    add_nodes(cache, n_nodes);
    guint jobs = add_jobs_in(cache, n_pods, leaves);
    /* CPU time of the cycle: the figure that compares, on a machine shared with other work. */
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, 1000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double secs = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    printf("  %-13s %4u queues (%u leaves), %5u nodes, %5u gangs: %6u placed, cycle CPU %.3f s, "
           "wall %.3f s",
           deep ? "5-level tree" : "flat", kb_cache_queues(cache)->len, leaves->len, n_nodes, jobs,
           res->placements->len, secs, (double)res->duration_us / 1e6);
    for (guint i = 0; i < res->n_actions; i++)
        printf(" (%s %.3f s)", conf->actions[i], (double)res->action_us[i] / 1e6);
    printf("\n");
    return secs;
}

/* ---- Volcano's configuration against the default ---------------------------------------- */

#define T_2026 1767225600 /* the jobs' creation time, 2026-01-01T00:00:00Z */

/*
 * One cycle 2 hours after every job was created, with @yaml (NULL: the default): Volcano's e2e
 * file with a 1 h sla limit (every job overdue: the sla order compares deadlines) and binpack
 * beside nodeorder, against the default. CPU time of the cycle.
 */
static double run_conf(const char *label, const char *yaml, guint n_nodes, guint n_pods)
{
    g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf =
            yaml != NULL ? kb_conf_parse(yaml, strlen(yaml), &error) : kb_conf_new_default();
    g_assert_no_error(error);
    add_nodes(cache, n_nodes);
    add_jobs(cache, n_pods);
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, T_2026 + 7200);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double secs = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    printf("  %-34s %6u placed, cycle CPU %.3f s", label, res->placements->len, secs);
    for (guint i = 0; i < res->n_actions; i++)
        printf(" (%s %.3f s)", conf->actions[i], (double)res->action_us[i] / 1e6);
    printf("\n");
    return secs;
}

static void run_volcano(guint n_nodes, guint n_pods)
{
    const char *tiers = strstr(kb_conf_default_yaml(), "tiers:");
    g_autofree char *with_sla =
            g_strdup_printf("actions: \"enqueue, reserve, allocate\"\n%.*s  - name: sla\n"
                            "    arguments: {sla-waiting-time: 1h}\n%s  - name: binpack\n",
                            (int)(strstr(tiers, "- plugins:\n  - name: drf") - tiers), tiers,
                            strstr(tiers, "- plugins:\n  - name: drf"));
    /* Volcano's e2e file with a 1 h limit given to its sla plugin. */
    g_auto(GStrv) at_sla = g_strsplit(kb_test_volcano_ci_conf, "  - name: sla\n", 2);
    g_assert_nonnull(at_sla[1]);
    g_autofree char *volcano_ci_conf = g_strdup_printf(
            "%s  - name: sla\n    arguments: {sla-waiting-time: 1h}\n%s", at_sla[0], at_sla[1]);
    double def = G_MAXDOUBLE, vc = G_MAXDOUBLE, own = G_MAXDOUBLE;
    for (guint rep = 0; rep < 3; rep++) {
        def = MIN(def, run_conf("default", NULL, n_nodes, n_pods));
        vc = MIN(vc, run_conf("Volcano e2e file, sla 1h", volcano_ci_conf, n_nodes, n_pods));
        own = MIN(own, run_conf("default + sla 1h + binpack", with_sla, n_nodes, n_pods));
    }
    printf("best cycle CPU: default %.3f s, Volcano's file %.3f s (%.2fx), default + sla + "
           "binpack %.3f s (%.2fx)\n",
           def, vc, def > 0 ? vc / def : 0.0, own, def > 0 ? own / def : 0.0);
}

/* ---- the fgd plugin's cost ------------------------------------------------------------------ */

/* The default configuration (fgd in it, last in its file), or with fgd.weight 0 when !@on. */
static KbConf *fgd_conf(gboolean on)
{
    if (on)
        return kb_conf_new_default();
    g_autofree char *off = g_strdup_printf("%s    arguments: {fgd.weight: 0}\n",
                                           kb_conf_default_yaml());
    g_autoptr(GError) error = NULL;
    KbConf *conf = kb_conf_parse(off, strlen(off), &error);
    g_assert_no_error(error);
    return conf;
}

/*
 * One cycle of the default configuration (fgd in it) with the cache's shape histogram full
 * (KB_FRAG_MAX_SHAPES shapes of 1 and 2 GPUs and fractions, as after a while in production: on the
 * first cycle it is empty and fgd scores nothing), against fgd.weight 0. CPU time of the cycle.
 */
static double run_fgd_one(const char *label, gboolean on, guint n_nodes, guint n_pods)
{
    g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
    g_autoptr(KbConf) conf = fgd_conf(on);
    KbFragModel *m = kb_cache_fragment(cache);
    for (guint i = 0; i < KB_FRAG_MAX_SHAPES; i++) {
        KbFragShape sh = {1000 * (1 + i % 8), i % 3 == 2 ? 2 : 1, i % 3 == 0 ? 100 + 10 * i : 1000};
        kb_frag_model_observe(m, &sh);
    }
    add_nodes(cache, n_nodes);
    add_jobs(cache, n_pods);
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, 1000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double secs = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    printf("  %-24s %6u placed, cycle CPU %.3f s\n", label, res->placements->len, secs);
    return secs;
}

/*
 * Shares: @n_nodes nodes of 8 GPUs shared by memory (kb-kubelet --dra's slices) and @n_pods
 * one-pod jobs, each a claim of 10, 20 or 40Gi of a GPU's 80Gi, the histogram full of such
 * shapes; with fgd each pod is scored on every node where it fits. Pods placed per second of
 * one cycle.
 */
static double run_shares(gboolean on, guint n_nodes, guint n_pods)
{
    g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
    g_autoptr(KbConf) conf = fgd_conf(on);
    g_autoptr(GError) error = NULL;
    KbDra *d = kb_cache_dra(cache);
    KbDeviceClass *dc = decode("{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{}}",
                               (DecodeFn)kb_device_class_decode);
    kb_dra_set_class(d, dc);
    kb_object_unref(dc);
    static const guint gib[] = {10, 20, 40};
    for (guint i = 0; i < G_N_ELEMENTS(gib) * 8; i++) {
        KbFragShape sh = {1000 + 1000 * (i / 3), 1, gib[i % 3] * 1000 / 80};
        kb_frag_model_observe(kb_cache_fragment(cache), &sh);
    }
    for (guint i = 0; i < n_nodes; i++) {
        g_autofree char *json = g_strdup_printf(
                "{\"metadata\":{\"name\":\"node-%05u\",\"uid\":\"n%u\",\"labels\":{"
                "\"kube-batchd.io/gpu-sharing\":\"memory\"}},\"spec\":{},\"status\":{"
                "\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\","
                "\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
                "\"True\"}]}}",
                i, i);
        json_object *o = json_tokener_parse(json);
        KbNode *node = decode(json, (DecodeFn)kb_node_decode);
        kb_cache_add_node(cache, node);
        kb_object_unref(node);
        json_object *slices = kbl_dra_slices(o, FALSE, &error);
        g_assert_no_error(error);
        for (gsize k = 0; k < json_object_array_length(slices); k++) {
            KbResourceSlice *slice =
                    kb_resource_slice_decode(json_object_array_get_idx(slices, k), FALSE, &error);
            g_assert_no_error(error);
            kb_dra_set_slice(d, slice);
            kb_object_unref(slice);
        }
        json_object_put(slices);
        json_object_put(o);
    }
    for (guint j = 0; j < n_pods; j++) {
        g_autofree char *pg_json = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"s%u\",\"namespace\":\"ml\",\"uid\":\"pg%u\"},"
                "\"spec\":{\"minMember\":1}}",
                j, j);
        KbPodGroup *pg = decode(pg_json, (DecodeFn)kb_pod_group_decode);
        kb_cache_add_pod_group(cache, pg);
        kb_object_unref(pg);
        g_autofree char *cj = g_strdup_printf(
                "{\"metadata\":{\"name\":\"s%u\",\"namespace\":\"ml\",\"resourceVersion\":"
                "\"1\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                "\"deviceClassName\":\"gpu.nvidia.com\",\"capacity\":{\"requests\":{"
                "\"memory\":\"%uGi\"}}}}]}}}",
                j, gib[(j * 7) % 3]);
        KbResourceClaim *claim = decode(cj, (DecodeFn)kb_resource_claim_decode);
        kb_dra_set_claim(d, claim);
        kb_object_unref(claim);
        g_autofree char *json = g_strdup_printf(
                "{\"metadata\":{\"name\":\"s%u\",\"namespace\":\"ml\",\"uid\":\"p%u\","
                "\"annotations\":{\"scheduling.k8s.io/group-name\":\"s%u\"}},\"spec\":{"
                "\"schedulerName\":\"kube-batchd\",\"containers\":[{\"name\":\"c\","
                "\"resources\":{\"requests\":{\"cpu\":\"%u\"}}}],\"resourceClaims\":[{"
                "\"name\":\"gpu\",\"resourceClaimName\":\"s%u\"}]},\"status\":{\"phase\":"
                "\"Pending\"}}",
                j, j, j, 1 + j % 8, j);
        KbPod *pod = decode(json, (DecodeFn)kb_pod_decode);
        kb_cache_add_pod(cache, pod);
        kb_object_unref(pod);
    }
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, 1000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double secs = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    printf("  %-24s %5u nodes x 8 shared GPUs, %5u share pods: %5u placed, cycle CPU %.3f s -> "
           "%.0f pods/s\n",
           on ? "default (fgd)" : "fgd.weight 0", n_nodes, n_pods, res->placements->len, secs,
           secs > 0 ? res->placements->len / secs : 0.0);
    return secs > 0 ? res->placements->len / secs : 0.0;
}

static void run_fgd(guint n_nodes, guint n_pods)
{
    printf("fgd (%u nodes, %u pods asking for nvidia.com/gpu, histogram full), best of 3:\n",
           n_nodes, n_pods);
    double on = G_MAXDOUBLE, off = G_MAXDOUBLE;
    for (guint rep = 0; rep < 3; rep++) {
        double a = run_fgd_one("default (fgd)", TRUE, n_nodes, n_pods);
        double b = run_fgd_one("fgd.weight 0", FALSE, n_nodes, n_pods);
        on = MIN(on, a);
        off = MIN(off, b);
    }
    printf("best cycle CPU: fgd %.3f s, without %.3f s (%.2fx)\n", on, off,
           off > 0 ? on / off : 0.0);
    printf("fgd on shared GPUs (every node scored for a share), best of 3:\n");
    double son = 0, soff = 0;
    for (guint rep = 0; rep < 3; rep++) {
        double a = run_shares(TRUE, 250, 2000);
        double b = run_shares(FALSE, 250, 2000);
        son = MAX(son, a);
        soff = MAX(soff, b);
    }
    printf("share pods per second: fgd %.0f, without %.0f (%.2fx)\n", son, soff,
           soff > 0 ? son / soff : 0.0);
}

/* 8-pod gangs, one GPU each: through DRA claims (@dra) or nvidia.com/gpu. Returns seconds. */
static double run_dra(guint n_nodes, guint n_pods, gboolean dra)
{
    g_autoptr(KbCache) cache = kb_cache_new(NULL, "default");
    g_autoptr(KbConf) conf = kb_conf_new_default();
    KbDra *d = kb_cache_dra(cache);
    KbDeviceClass *dc = decode("{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{"
                               "\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
                               "'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
                               "'gpu'\"}}]}}",
                               (DecodeFn)kb_device_class_decode);
    kb_dra_set_class(d, dc);
    kb_object_unref(dc);
    /* Each pod's claim is made from this template, as in bench-e2e --dra. */
    KbResourceClaimTemplate *tpl =
            decode("{\"metadata\":{\"name\":\"one-gpu\",\"namespace\":\"ml\"},\"spec\":{"
                   "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                   "\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}}",
                   (DecodeFn)kb_resource_claim_template_decode);
    kb_dra_set_template(d, tpl);
    kb_object_unref(tpl);
    for (guint i = 0; i < n_nodes; i++) {
        g_autofree char *json = g_strdup_printf(
                "{\"metadata\":{\"name\":\"node-%05u\",\"uid\":\"n%u\"},\"spec\":{},"
                "\"status\":{\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":"
                "\"110\"%s},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                i, i, dra ? "" : ",\"nvidia.com/gpu\":\"8\"");
        KbNode *node = decode(json, (DecodeFn)kb_node_decode);
        kb_cache_add_node(cache, node);
        kb_object_unref(node);
        if (!dra)
            continue;
        g_autoptr(GString) s = g_string_new(NULL);
        g_string_printf(s,
                        "{\"metadata\":{\"name\":\"node-%05u-gpu\"},\"spec\":{\"driver\":"
                        "\"gpu.nvidia.com\",\"nodeName\":\"node-%05u\",\"pool\":{\"name\":"
                        "\"node-%05u\"},\"devices\":[",
                        i, i, i);
        for (guint g = 0; g < 8; g++)
            g_string_append_printf(s,
                                   "%s{\"name\":\"gpu-%u\",\"attributes\":{\"type\":{\"string\":"
                                   "\"gpu\"},\"index\":{\"int\":%u},\"kube-batchd.io/"
                                   "nvlinkIsland\":{\"int\":%u}}}",
                                   g == 0 ? "" : ",", g, g, g / 4);
        g_string_append(s, "]}}");
        KbResourceSlice *slice = decode(s->str, (DecodeFn)kb_resource_slice_decode);
        kb_dra_set_slice(d, slice);
        kb_object_unref(slice);
    }
    for (guint job = 0; job * 8 < n_pods; job++) {
        g_autofree char *pg_json = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"job-%u\",\"namespace\":\"ml\",\"uid\":\"pg%u\"},"
                "\"spec\":{\"minMember\":8}}",
                job, job);
        KbPodGroup *pg = decode(pg_json, (DecodeFn)kb_pod_group_decode);
        kb_cache_add_pod_group(cache, pg);
        kb_object_unref(pg);
        for (guint t = 0; t < 8; t++) {
            if (dra) {
                g_autofree char *cj = g_strdup_printf(
                        "{\"metadata\":{\"name\":\"job-%u-%u-gpu\",\"namespace\":\"ml\","
                        "\"resourceVersion\":\"1\"},\"spec\":{\"devices\":{\"requests\":[{"
                        "\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}"
                        "}",
                        job, t);
                KbResourceClaim *claim = decode(cj, (DecodeFn)kb_resource_claim_decode);
                kb_dra_set_claim(d, claim);
                kb_object_unref(claim);
            }
            g_autofree char *claims = g_strdup(dra ? ",\"resourceClaims\":[{\"name\":\"gpu\","
                                                     "\"resourceClaimTemplateName\":\"one-gpu\"}]"
                                                   : "");
            g_autofree char *claim_status =
                    dra ? g_strdup_printf(",\"resourceClaimStatuses\":[{\"name\":\"gpu\","
                                          "\"resourceClaimName\":\"job-%u-%u-gpu\"}]",
                                          job, t)
                        : g_strdup("");
            g_autofree char *json = g_strdup_printf(
                    "{\"metadata\":{\"name\":\"job-%u-%u\",\"namespace\":\"ml\",\"uid\":"
                    "\"p%u-%u\",\"annotations\":{\"scheduling.k8s.io/group-name\":\"job-%u\"}},"
                    "\"spec\":{\"schedulerName\":\"kube-batchd\",\"containers\":[{\"name\":"
                    "\"tensorflow\",\"resources\":{\"requests\":{\"cpu\":\"4\"%s}}}]%s},"
                    "\"status\":{\"phase\":\"Pending\"%s}}",
                    job, t, job, t, job, dra ? "" : ",\"nvidia.com/gpu\":1", claims, claim_status);
            KbPod *pod = decode(json, (DecodeFn)kb_pod_decode);
            kb_cache_add_pod(cache, pod);
            kb_object_unref(pod);
        }
    }
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(KbCycleResult) res = kb_cycle_run(cache, conf, 1000);
    double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
    guint writes = 0;
    for (guint i = 0; i < res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(res->placements, KbPlacement, i);
        writes += p->claim_writes != NULL ? p->claim_writes->len : 0;
    }
    printf("  %-15s %5u nodes x 8 GPUs, %5u pods in gangs of 8: %5u placed, %5u claim writes, "
           "cycle %.3f s -> %.0f pods/s\n",
           dra ? "DRA claims" : "nvidia.com/gpu", n_nodes, n_pods, res->placements->len, writes,
           secs, secs > 0 ? res->placements->len / secs : 0.0);
    return secs > 0 ? res->placements->len / secs : 0.0;
}

static void run_dra_rows(void);

/* A running one-GPU job of queue filler on @node, or (node NULL) the pending gang of queue big. */
static void reclaim_job(KbTestSched *fx, const char *name, const char *queue, guint pods, int gpus,
                        const char *node)
{
    g_autofree char *group = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
            "{\"name\":\"%s\",\"namespace\":\"scale\",\"uid\":\"pg-%s\",\"creationTimestamp\":"
            "\"2026-01-01T00:00:00Z\"},\"spec\":{\"minMember\":%u,\"queue\":\"%s\"}}",
            name, name, pods, queue);
    kb_test_sched_add_pod_group(fx, group);
    for (guint i = 0; i < pods; i++) {
        g_autofree char *where =
                node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", node) : g_strdup("");
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%u\","
                "\"namespace\":\"scale\",\"uid\":\"u-%s-%u\",\"creationTimestamp\":"
                "\"2026-01-01T00:%02u:%02uZ\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
                "\"%s\"}},\"spec\":{\"schedulerName\":\"kube-batchd\"%s,\"containers\":[{"
                "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\","
                "\"nvidia.com/gpu\":%d}}}]},\"status\":{\"phase\":\"%s\"}}",
                name, i, name, i, fx->seq / 60 % 60, fx->seq % 60, name, where, gpus,
                node != NULL ? "Running" : "Pending");
        fx->seq++;
        kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
    }
}

/* One reclaim cycle of kai-reclaim-250's cluster; its CPU seconds, the victims into @victims. */
static double run_reclaim_one(GString *victims)
{
    const char *def = kb_conf_default_yaml();
    g_autofree char *yaml = g_strdup_printf(
            "actions: \"enqueue, allocate, reclaim\"\nconfigurations:\n- name: reclaim\n"
            "  arguments:\n    minRunTime: 0\n%s",
            strstr(def, "tiers:"));
    KbTestSched *fx = kb_test_sched_new(yaml);
    fx->now = 1767225600 + 3600;
    static const char *const queues[] = {"filler", "big"};
    for (guint q = 0; q < G_N_ELEMENTS(queues); q++) {
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                "\"metadata\":{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":{\"weight\":1,"
                "\"reclaimable\":true}}",
                queues[q], queues[q]);
        kb_test_sched_add_queue(fx, json);
    }
    for (guint n = 0; n < 500; n++) {
        g_autofree char *node = g_strdup_printf("n%u", n);
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":"
                "\"n-%s\"},\"status\":{\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
                "\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\","
                "\"status\":\"True\"}]}}",
                node, node);
        kb_test_sched_add_node(fx, json);
        for (guint i = 0; i < 8; i++) {
            g_autofree char *name = g_strdup_printf("filler-%u", n * 8 + i);
            reclaim_job(fx, name, "filler", 1, 1, node);
        }
    }
    reclaim_job(fx, "big", "big", 250, 8, NULL);
    clock_t c0 = clock();
    kb_test_sched_run(fx);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    g_string_truncate(victims, 0);
    for (guint i = 0; i < fx->res->evictions->len; i++)
        g_string_append_printf(victims, "%s,",
                               g_array_index(fx->res->evictions, KbEviction, i).pod->meta.name);
    kb_test_sched_free(fx);
    return secs;
}

static void run_reclaim(void)
{
    printf("reclaim: kai-reclaim-250's decision (500 nodes, 4,000 one-GPU jobs, a 250 x 8-GPU "
           "gang), one cycle's CPU time, node memo off / on, alternated:\n");
    g_autoptr(GString) off = g_string_new(NULL), on = g_string_new(NULL);
    for (guint rep = 0; rep < 3; rep++) {
        kb_preempt_set_memo(FALSE);
        double t_off = run_reclaim_one(off);
        kb_preempt_set_memo(TRUE);
        guint64 h0 = kb_preempt_memo_hits();
        double t_on = run_reclaim_one(on);
        guint victims = 0;
        for (const char *c = on->str; *c != '\0'; c++)
            victims += *c == ',';
        printf("  off %.3f s, on %.3f s (%.1fx; %" G_GUINT64_FORMAT " choices from the memo), "
               "%u victims, %s\n",
               t_off, t_on, t_on > 0 ? t_off / t_on : 0.0, kb_preempt_memo_hits() - h0, victims,
               strcmp(off->str, on->str) == 0 ? "the same" : "DIFFERENT");
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "reclaim") == 0) {
        run_reclaim();
        return 0;
    }
    guint nodes = 5000, pods = 50000;
    if (argc == 2 && strcmp(argv[1], "dra") == 0) {
        run_dra_rows();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "fgd") == 0) {
        run_fgd(nodes, pods);
        return 0;
    }
    if (argc == 3) {
        nodes = (guint)strtoul(argv[1], NULL, 10);
        pods = (guint)strtoul(argv[2], NULL, 10);
    }
    printf("bench-schedule: one cycle, default plugins, in process\n");
    printf("small (1/10):\n");
    Figures small = run_one(nodes / 10, pods / 10);
    printf("full:\n");
    Figures full = run_one(nodes, pods);
    double ratio = small.seconds > 0 ? full.seconds / small.seconds : 0;
    printf("time ratio full/small: %.1fx for 10x the nodes and pods (target <= ~12x); "
           "placements ratio %.1fx\n",
           ratio, small.placed > 0 ? (double)full.placed / small.placed : 0.0);
    printf("reservations (scheduler/reserve.h):\n");
    run_reserve(nodes, pods);
    printf("queues: 1,000 leaf queues, flat vs 5 levels deep (same nodes, pods, jobs; best of 3, "
           "alternating):\n");
    double flat = G_MAXDOUBLE, deep = G_MAXDOUBLE;
    for (guint rep = 0; rep < 3; rep++) {
        flat = MIN(flat, run_queues(nodes, pods, FALSE));
        deep = MIN(deep, run_queues(nodes, pods, TRUE));
    }
    printf("time ratio tree/flat: %.2fx (best cycle CPU time %.3f s against %.3f s)\n",
           flat > 0 ? deep / flat : 0.0, deep, flat);
    printf("Volcano's configuration (sla, binpack; all jobs past their limit), best of 3:\n");
    run_volcano(nodes, pods);
    run_fgd(nodes, pods);
    run_dra_rows();
    return 0;
}

static void run_dra_rows(void)
{
    printf("DRA (1,000 nodes x 8 GPUs, 5,000 pods in gangs of 8, one GPU each), best of 3:\n");
    double plugin = 0, claims = 0;
    for (guint rep = 0; rep < 3; rep++) {
        plugin = MAX(plugin, run_dra(1000, 5000, FALSE));
        claims = MAX(claims, run_dra(1000, 5000, TRUE));
    }
    printf("DRA / nvidia.com/gpu placements per second: %.2fx (goal >= 0.5x)\n",
           plugin > 0 ? claims / plugin : 0.0);
}
