/* Generated pods; see gen-pods.h. */
#include "bench/lib/gen-pods.h"

#include <stdarg.h>
#include <string.h>

void kb_gen_pod_append(GString *s, guint i)
{
    guint job = i / 16, ns = job % 20, idx = i % 16;
    g_string_append_printf(
        s,
        "{\"metadata\":{\"name\":\"job-%u-worker-%u\",\"generateName\":\"job-%u-worker-\","
        "\"namespace\":\"team-%u\",\"uid\":\"%08x-5b2c-4d1e-9f3a-%012x\",\"resourceVersion\":"
        "\"%u\",\"creationTimestamp\":\"2026-11-22T05:%02u:%02uZ\",\"labels\":{\"app\":"
        "\"trainer\",\"job-name\":\"job-%u\",\"tf-replica-type\":\"worker\",\"tf-replica-index\":"
        "\"%u\",\"controller-uid\":\"%08x-aaaa-4bbb-8ccc-%012x\",\"scheduling.x-k8s.io/pod-group\":"
        "\"job-%u\"},\"annotations\":{\"scheduling.k8s.io/group-name\":\"job-%u\","
        "\"kubectl.kubernetes.io/default-container\":\"tensorflow\",\"prometheus.io/scrape\":"
        "\"true\",\"prometheus.io/port\":\"9090\"},\"ownerReferences\":[{\"apiVersion\":"
        "\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"name\":\"job-%u\",\"uid\":\"%08x-aaaa-4bbb-8ccc-"
        "%012x\",\"controller\":true,\"blockOwnerDeletion\":true}]},",
        job, idx, job, ns, i, i, 1000000 + i, (i / 60) % 60, i % 60, job, idx, job, job, job, job,
        job, job, job);
    g_string_append_printf(
        s,
        "\"spec\":{\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":"
        "\"data-%u\"}},{\"name\":\"kube-api-access-%05u\",\"projected\":{\"sources\":[{"
        "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}}],"
        "\"defaultMode\":420}}],\"containers\":[{\"name\":\"tensorflow\",\"image\":"
        "\"registry.example.com/research/trainer:v%u\",\"command\":[\"python\",\"/app/train.py\"],"
        "\"ports\":[{\"name\":\"tfjob-port\","
        "\"containerPort\":2222,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":"
        "\"INFO\"},{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","
        "\"fieldPath\":\"metadata.name\"}}}],\"resources\":{\"limits\":{\"cpu\":\"8\",\"memory\":"
        "\"32Gi\",\"nvidia.com/gpu\":\"%u\"},\"requests\":{\"cpu\":\"%um\",\"memory\":\"16Gi\","
        "\"nvidia.com/gpu\":\"%u\"}},\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"},"
        "{\"name\":\"kube-api-access-%05u\",\"readOnly\":true,\"mountPath\":"
        "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"terminationMessagePath\":"
        "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":"
        "\"IfNotPresent\"},",
        job, i % 100000, job % 7, 1 + idx % 8, 3500 + idx * 10, 1 + idx % 8,
        i % 100000);
    g_string_append_printf(
        s,
        "{\"name\":\"metrics\",\"image\":\"registry.example.com/metrics-sidecar:1.4\",\"env\":[{"
        "\"name\":\"PORT\",\"value\":\"9090\"}],\"resources\":{\"limits\":{\"cpu\":\"200m\","
        "\"memory\":\"128Mi\"},\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}},"
        "\"volumeMounts\":[{\"name\":\"kube-api-access-%05u\",\"readOnly\":true,\"mountPath\":"
        "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"imagePullPolicy\":\"IfNotPresent\"}],"
        "\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
        "\"ClusterFirst\",\"serviceAccountName\":\"default\",\"nodeName\":\"gpu-node-%u\","
        "\"securityContext\":{},\"schedulerName\":\"kube-batchd\",\"tolerations\":[{\"key\":"
        "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
        "\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
        "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
        "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
        "\"priorityClassName\":\"research\",\"priority\":1000,\"enableServiceLinks\":true,"
        "\"preemptionPolicy\":\"PreemptLowerPriority\"},",
        i % 100000, i % 1000);
    g_string_append_printf(
        s,
        "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Initialized\",\"status\":"
        "\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-22T05:06:00Z\"},{"
        "\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":"
        "\"2026-11-22T05:06:09Z\"},{\"type\":\"ContainersReady\",\"status\":\"True\","
        "\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-22T05:06:09Z\"},{\"type\":"
        "\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":"
        "\"2026-11-22T05:05:59Z\"}],\"hostIP\":\"10.1.%u.%u\",\"podIP\":\"10.244.%u.%u\","
        "\"podIPs\":[{\"ip\":\"10.244.%u.%u\"}],\"startTime\":\"2026-11-22T05:05:59Z\","
        "\"containerStatuses\":[{\"name\":\"metrics\",\"state\":{\"running\":{\"startedAt\":"
        "\"2026-11-22T05:06:05Z\"}},\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":"
        "\"registry.example.com/metrics-sidecar:1.4\",\"imageID\":\"registry.example.com/"
        "metrics-sidecar@sha256:%064x\",\"started\":true},"
        "{\"name\":\"tensorflow\",\"state\":{\"running\":{\"startedAt\":\"2026-11-22T05:06:08Z\"}},"
        "\"lastState\":{},\"ready\":true,\"restartCount\":%u,\"image\":"
        "\"registry.example.com/research/trainer:v%u\",\"imageID\":\"registry.example.com/"
        "research/trainer@sha256:%064x\",\"containerID\":\"containerd://%064x\",\"started\":true}],"
        "\"qosClass\":\"Burstable\"}}",
        (i / 250) % 250, i % 250, (i / 250) % 250, i % 250, (i / 250) % 250, i % 250, job,
        idx % 3, job % 7, job % 7, i + 1);
}

GPtrArray *kb_gen_pod_pages(guint n_pods, guint page_items, gsize *total_bytes)
{
    GPtrArray *pages = g_ptr_array_new_with_free_func(g_free);
    *total_bytes = 0;
    for (guint first = 0; first < n_pods; first += page_items) {
        GString *s = g_string_sized_new(page_items * 3000);
        g_string_append_printf(s,
                               "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{"
                               "\"resourceVersion\":\"2000000\",\"continue\":\"page-%u\"},"
                               "\"items\":[",
                               first / page_items + 1);
        for (guint i = first; i < first + page_items && i < n_pods; i++) {
            if (i > first)
                g_string_append_c(s, ',');
            kb_gen_pod_append(s, i);
        }
        g_string_append(s, "]}");
        *total_bytes += s->len;
        g_ptr_array_add(pages, g_string_free(s, FALSE));
    }
    return pages;
}


/* ---- varied pods ---------------------------------------------------------------------------- */

static const char *pick(GRand *rand, const char *const *options, gsize n)
{
    return options[g_rand_int_range(rand, 0, (gint32)n)];
}
#define PICK(rand, array) pick(rand, array, G_N_ELEMENTS(array))

static gboolean chance(GRand *rand, double p)
{
    return g_rand_double(rand) < p;
}

/* "{" members "}" in a shuffled order; frees @members. */
static void append_object(GString *s, GPtrArray *members, GRand *rand)
{
    for (guint i = members->len; i > 1; i--) {
        guint j = (guint)g_rand_int_range(rand, 0, (gint32)i);
        gpointer t = members->pdata[i - 1];
        members->pdata[i - 1] = members->pdata[j];
        members->pdata[j] = t;
    }
    g_string_append_c(s, '{');
    for (guint i = 0; i < members->len; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? "," : "", (const char *)members->pdata[i]);
    g_string_append_c(s, '}');
    g_ptr_array_unref(members);
}

static GPtrArray *members_new(void)
{
    return g_ptr_array_new_with_free_func(g_free);
}

static void add(GPtrArray *m, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void add(GPtrArray *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(m, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

/* A quantity value as JSON: strings in every suffix style, numbers, null. */
static const char *quantity(GRand *rand, const char *resource)
{
    static const char *const cpu[] = {"\"500m\"", "\"1.5\"", "\"2\"", "\" 250m \"", "1", "0.5",
                                      "\"0\"",    "null",    "\"1e-3\"", "\"100m\""};
    static const char *const mem[] = {"\"2Gi\"", "\"129M\"", "\"1e9\"", "\"512Mi\"", "1073741824",
                                      "\"0\"",   "\"1.5Gi\"", "null"};
    static const char *const count[] = {"\"1\"", "\"2\"", "4", "\"0\"", "\"8\"", "null", "1e0"};
    if (strcmp(resource, "cpu") == 0)
        return PICK(rand, cpu);
    if (strcmp(resource, "memory") == 0 || strcmp(resource, "ephemeral-storage") == 0)
        return PICK(rand, mem);
    return PICK(rand, count);
}

static char *resource_map(GRand *rand)
{
    static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu", "ephemeral-storage",
                                        "example.com/fpga"};
    GPtrArray *m = members_new();
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        if (chance(rand, 0.45))
            add(m, "\"%s\":%s", names[i], quantity(rand, names[i]));
    }
    GString *s = g_string_new(NULL);
    append_object(s, m, rand);
    return g_string_free(s, FALSE);
}

static void add_container(GString *s, GRand *rand, guint i, gboolean init)
{
    GPtrArray *m = members_new();
    add(m, "\"name\":\"c-%u\"", i);
    add(m, "\"image\":\"registry.example.com/img:%u\"", g_rand_int_range(rand, 0, 9));
    if (chance(rand, 0.85)) {
        GPtrArray *res = members_new();
        if (chance(rand, 0.7)) {
            g_autofree char *r = resource_map(rand);
            add(res, "\"requests\":%s", r);
        }
        if (chance(rand, 0.6)) {
            g_autofree char *l = resource_map(rand);
            add(res, "\"limits\":%s", l);
        }
        if (chance(rand, 0.1))
            add(res, "\"claims\":[{\"name\":\"x\"}]");
        GString *r = g_string_new("\"resources\":");
        append_object(r, res, rand);
        g_ptr_array_add(m, g_string_free(r, FALSE));
    }
    if (chance(rand, 0.3))
        add(m, "\"restartPolicy\":%s", chance(rand, 0.7) ? "\"Always\"" : "\"OnFailure\"");
    if (chance(rand, 0.4))
        add(m, "\"env\":[{\"name\":\"A\",\"value\":\"x\\\"y\\\\z \\u00e9\\ud83d\\ude00\"},"
               "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]");
    append_object(s, m, rand);
    (void)init;
}

static void add_containers(GPtrArray *spec, GRand *rand, const char *key, guint max, gboolean init)
{
    guint n = (guint)g_rand_int_range(rand, 0, (gint32)max + 1);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "\"%s\":[", key);
    for (guint i = 0; i < n; i++) {
        if (i > 0)
            g_string_append_c(s, ',');
        add_container(s, rand, i, init);
    }
    g_string_append_c(s, ']');
    g_ptr_array_add(spec, g_string_free(s, FALSE));
}

static void add_affinity(GPtrArray *spec, GRand *rand)
{
    static const char *const reqs[] = {
        "{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}",
        "{\"values\":[\"x\"],\"operator\":\"NotIn\",\"key\":\"disk\"}",
        "{\"key\":\"gpu\",\"operator\":\"Exists\"}",
        "{\"key\":\"gpu\",\"operator\":\"DoesNotExist\",\"values\":null}",
        "{\"key\":\"cores\",\"operator\":\"Gt\",\"values\":[\"8\"]}",
        "{\"key\":\"cores\",\"operator\":\"Lt\",\"values\":[\"64\"]}",
    };
    GString *s = g_string_new("\"affinity\":{\"podAntiAffinity\":{},\"nodeAffinity\":{"
                              "\"preferredDuringSchedulingIgnoredDuringExecution\":[],"
                              "\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                              "\"nodeSelectorTerms\":[");
    guint terms = (guint)g_rand_int_range(rand, 1, 4);
    for (guint t = 0; t < terms; t++) {
        g_string_append_printf(s, "%s{", t > 0 ? "," : "");
        gboolean fields_first = chance(rand, 0.5), fields = chance(rand, 0.3);
        if (fields && fields_first)
            g_string_append(s, "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                               "\"values\":[\"n1\"]}],");
        g_string_append(s, "\"matchExpressions\":[");
        guint n = (guint)g_rand_int_range(rand, 0, 4);
        for (guint i = 0; i < n; i++)
            g_string_append_printf(s, "%s%s", i > 0 ? "," : "", PICK(rand, reqs));
        g_string_append_c(s, ']');
        if (fields && !fields_first)
            g_string_append(s, ",\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
                               "\"NotIn\",\"values\":[\"n2\"]}]");
        g_string_append_c(s, '}');
    }
    g_string_append(s, "]}}}");
    g_ptr_array_add(spec, g_string_free(s, FALSE));
}

static void add_tolerations(GPtrArray *spec, GRand *rand)
{
    static const char *const tols[] = {
        "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}",
        "{\"operator\":\"Exists\"}",
        "{\"key\":\"team\",\"value\":\"research\",\"effect\":\"NoExecute\",\"tolerationSeconds\":5}",
        "{\"key\":\"team\",\"operator\":\"Equal\",\"value\":\"\",\"effect\":\"\"}",
        "{\"effect\":\"PreferNoSchedule\",\"key\":\"spot\",\"operator\":\"\"}",
        "{\"key\":null,\"value\":null,\"operator\":null,\"effect\":null}",
    };
    GString *s = g_string_new("\"tolerations\":[");
    guint n = (guint)g_rand_int_range(rand, 0, 4);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? "," : "", PICK(rand, tols));
    g_string_append_c(s, ']');
    g_ptr_array_add(spec, g_string_free(s, FALSE));
}

static void add_spec(GString *s, GRand *rand)
{
    static const char *const schedulers[] = {"\"kube-batchd\"", "\"\"", "\"default-scheduler\"",
                                             "null", "\"other\""};
    GPtrArray *m = members_new();
    add_containers(m, rand, "containers", 3, FALSE);
    if (chance(rand, 0.4))
        add_containers(m, rand, "initContainers", 3, TRUE);
    if (chance(rand, 0.8))
        add(m, "\"schedulerName\":%s", PICK(rand, schedulers));
    if (chance(rand, 0.5))
        add(m, "\"nodeName\":\"node-%d\"", g_rand_int_range(rand, 0, 50));
    if (chance(rand, 0.5))
        add(m, "\"priority\":%d", g_rand_int_range(rand, -100, 2000000));
    else if (chance(rand, 0.2))
        add(m, "\"priority\":null");
    if (chance(rand, 0.5))
        add(m, "\"priorityClassName\":\"%s\"", chance(rand, 0.8) ? "research" : "");
    if (chance(rand, 0.2)) {
        g_autofree char *o = resource_map(rand);
        add(m, "\"overhead\":%s", o);
    }
    if (chance(rand, 0.3))
        add(m, "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"A100\",\"zone\":\"z%d\"}",
            g_rand_int_range(rand, 0, 3));
    if (chance(rand, 0.3))
        add_affinity(m, rand);
    if (chance(rand, 0.6))
        add_tolerations(m, rand);
    add(m, "\"volumes\":[{\"name\":\"v\",\"projected\":{\"sources\":[{\"a\":[1,2.5e-3,true,"
           "false,null,{}]}]}}],\"securityContext\":{}");
    g_string_append(s, "\"spec\":");
    append_object(s, m, rand);
}

static void add_status(GString *s, GRand *rand)
{
    static const char *const phases[] = {"\"Pending\"", "\"Running\"", "\"Succeeded\"",
                                         "\"Failed\"",  "\"Unknown\"", "\"\"",
                                         "\"Weird\"",   "null"};
    static const char *const states[] = {
        "{\"running\":{\"startedAt\":\"2026-11-22T05:06:05Z\"}}",
        "{\"waiting\":{\"reason\":\"ContainerCreating\",\"message\":\"m\"}}",
        "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"signal\":9}}",
        "{\"waiting\":{\"reason\":\"CrashLoopBackOff\"},\"terminated\":{\"exitCode\":1}}",
        "{\"terminated\":{\"exitCode\":-1,\"reason\":null},\"running\":null}",
        "{}",
    };
    GPtrArray *m = members_new();
    if (chance(rand, 0.9))
        add(m, "\"phase\":%s", PICK(rand, phases));
    guint n = (guint)g_rand_int_range(rand, 0, 3);
    GString *cs = g_string_new("\"containerStatuses\":[");
    for (guint i = 0; i < n; i++)
        g_string_append_printf(cs, "%s{\"name\":\"c-%u\",\"restartCount\":%d,\"state\":%s,"
                               "\"lastState\":{},\"ready\":true}",
                               i > 0 ? "," : "", i, g_rand_int_range(rand, 0, 5),
                               PICK(rand, states));
    g_string_append_c(cs, ']');
    g_ptr_array_add(m, g_string_free(cs, FALSE));
    add(m, "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null}]");
    g_string_append(s, "\"status\":");
    append_object(s, m, rand);
}

static void add_metadata(GString *s, GRand *rand)
{
    static const char *const namespaces[] = {"\"default\"", "\"research\"", "\"\"", "null",
                                             "\"team-\\u0041\""};
    static const char *const times[] = {"\"2026-11-22T05:05:48Z\"", "\"2026-11-22T07:05:48+02:00\"",
                                        "\"2026-11-22T05:05:48.5Z\"", "null"};
    guint id = (guint)g_rand_int(rand);
    GPtrArray *m = members_new();
    add(m, "\"name\":\"p-%u%s\"", id, chance(rand, 0.1) ? "\\u00e9" : "");
    if (chance(rand, 0.9))
        add(m, "\"namespace\":%s", PICK(rand, namespaces));
    add(m, "\"uid\":\"%08x-0000-4000-8000-%012x\"", id, id);
    add(m, "\"resourceVersion\":\"%u\"", id % 1000000);
    if (chance(rand, 0.5))
        add(m, "\"generation\":%d", g_rand_int_range(rand, 0, 10));
    add(m, "\"creationTimestamp\":%s", PICK(rand, times));
    if (chance(rand, 0.15))
        add(m, "\"deletionTimestamp\":\"2026-11-23T00:00:00Z\"");
    GString *labels = g_string_new("\"labels\":{\"app\":\"trainer\"");
    if (chance(rand, 0.5))
        g_string_append_printf(labels, ",\"scheduling.x-k8s.io/pod-group\":\"%s\"",
                               chance(rand, 0.8) ? "job-x" : "");
    if (chance(rand, 0.5))
        g_string_append_printf(labels, ",\"idx\":\"%u\",\"q\":\"a\\\"b\\\\c\\/d\\u00e9\"", id % 16);
    g_string_append_c(labels, '}');
    g_ptr_array_add(m, g_string_free(labels, FALSE));
    if (chance(rand, 0.6))
        add(m, "\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\",\"note\":\"\\t\\n\"}",
            chance(rand, 0.8) ? "job-y" : "");
    if (chance(rand, 0.5))
        add(m, "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
               "\"name\":\"j\",\"uid\":\"u-%u\",\"controller\":%s,\"blockOwnerDeletion\":true}]",
            id, chance(rand, 0.5) ? "true" : "false");
    if (chance(rand, 0.3))
        add(m, "\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:spec\":{\"f:a\":{}}}}]");
    g_string_append(s, "\"metadata\":");
    append_object(s, m, rand);
}

void kb_gen_pod_append_varied(GString *s, GRand *rand)
{
    GString *meta = g_string_new(NULL), *spec = g_string_new(NULL), *status = g_string_new(NULL);
    add_metadata(meta, rand);
    add_spec(spec, rand);
    add_status(status, rand);
    GPtrArray *m = members_new();
    g_ptr_array_add(m, g_string_free(meta, FALSE));
    g_ptr_array_add(m, g_string_free(spec, FALSE));
    if (chance(rand, 0.9))
        g_ptr_array_add(m, g_string_free(status, FALSE));
    else
        g_string_free(status, TRUE);
    if (chance(rand, 0.5))
        add(m, "\"kind\":\"Pod\",\"apiVersion\":\"v1\"");
    append_object(s, m, rand);
}
