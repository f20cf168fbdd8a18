/*
 * Pod decoding throughput: how many pods per second one core turns from the API server's JSON
 * into KbPod records (json-c parse + kb_pod_decode), against a baseline measured in the same run
 * (json-c parse alone), with the ratio.
 *
 * Input: N realistic pods (default 100,000; argv[1] overrides) of about 4 KB each, as
 * PodList pages of 500 items the way the API server answers the informer's paged list (kind,
 * apiVersion, metadata.resourceVersion and continue, items without kind). Each pod has labels,
 * annotations, an ownerReference, two containers with env, resources and volumeMounts, the
 * default tolerations, and a status with conditions and container statuses.
 *
 * Prints figures only: no pass/fail on timing.
 */
#include <glib.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "kube/kb-objects.h"

#define PAGE_ITEMS 500
#define REPEATS 3

static void append_pod(GString *s, guint i)
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

/* PodList pages of PAGE_ITEMS pods, as the API server returns them to a paged list. */
static GPtrArray *make_pages(guint n_pods, gsize *total_bytes)
{
    GPtrArray *pages = g_ptr_array_new_with_free_func(g_free);
    *total_bytes = 0;
    for (guint first = 0; first < n_pods; first += PAGE_ITEMS) {
        GString *s = g_string_sized_new(PAGE_ITEMS * 3000);
        g_string_append_printf(s,
                               "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{"
                               "\"resourceVersion\":\"2000000\",\"continue\":\"page-%u\"},"
                               "\"items\":[",
                               first / PAGE_ITEMS + 1);
        for (guint i = first; i < first + PAGE_ITEMS && i < n_pods; i++) {
            if (i > first)
                g_string_append_c(s, ',');
            append_pod(s, i);
        }
        g_string_append(s, "]}");
        *total_bytes += s->len;
        g_ptr_array_add(pages, g_string_free(s, FALSE));
    }
    return pages;
}

static guint decode_items(json_object *doc)
{
    json_object *items = json_object_object_get(doc, "items");
    gsize n = json_object_array_length(items);
    for (gsize i = 0; i < n; i++) {
        GError *error = NULL;
        KbPod *pod = kb_pod_decode(json_object_array_get_idx(items, i), FALSE, &error);
        if (pod == NULL) {
            g_printerr("%s\n", error->message);
            exit(1);
        }
        kb_object_unref(pod);
    }
    return (guint)n;
}

/* Seconds spent in kb_pod_decode alone: each page is parsed outside the timed part. */
static double run_decode_only(GPtrArray *pages)
{
    json_tokener *tok = json_tokener_new_ex(128);
    gint64 spent = 0;
    for (guint p = 0; p < pages->len; p++) {
        json_tokener_reset(tok);
        json_object *doc = json_tokener_parse_ex(tok, g_ptr_array_index(pages, p), -1);
        gint64 start = g_get_monotonic_time();
        decode_items(doc);
        spent += g_get_monotonic_time() - start;
        json_object_put(doc);
    }
    json_tokener_free(tok);
    return (double)spent / G_USEC_PER_SEC;
}

/* Seconds to parse every page (and, with @decode, decode every item into a KbPod). */
static double run(GPtrArray *pages, gboolean decode, guint *decoded)
{
    json_tokener *tok = json_tokener_new_ex(128);
    gint64 start = g_get_monotonic_time();
    *decoded = 0;
    for (guint p = 0; p < pages->len; p++) {
        const char *text = g_ptr_array_index(pages, p);
        json_tokener_reset(tok);
        json_object *doc = json_tokener_parse_ex(tok, text, -1);
        if (doc == NULL) {
            g_printerr("page %u: %s\n", p, json_tokener_error_desc(json_tokener_get_error(tok)));
            exit(1);
        }
        if (decode)
            *decoded += decode_items(doc);
        json_object_put(doc);
    }
    double secs = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
    json_tokener_free(tok);
    return secs;
}

int main(int argc, char **argv)
{
    guint n_pods = argc > 1 ? (guint)g_ascii_strtoull(argv[1], NULL, 10) : 100000;
    gsize bytes;
    if (n_pods == 0)
        n_pods = 100000;
    g_autoptr(GPtrArray) pages = make_pages(n_pods, &bytes);
    printf("bench-decode: %u pods in %u PodList pages of %d, %.1f MB (%.0f bytes/pod)\n", n_pods,
           pages->len, PAGE_ITEMS, bytes / 1e6, (double)bytes / n_pods);

    /* Best of REPEATS for each, alternating so that both see the same machine state. */
    double parse_best = G_MAXDOUBLE, full_best = G_MAXDOUBLE, decode_only = G_MAXDOUBLE;
    guint decoded = 0;
    for (int r = 0; r < REPEATS; r++) {
        double p = run(pages, FALSE, &decoded);
        double f = run(pages, TRUE, &decoded);
        double d = run_decode_only(pages);
        parse_best = MIN(parse_best, p);
        full_best = MIN(full_best, f);
        decode_only = MIN(decode_only, d);
    }
    printf("  baseline json-c parse only : %8.3f s  %10.0f pods/s  %7.1f MB/s\n", parse_best,
           n_pods / parse_best, bytes / 1e6 / parse_best);
    printf("  parse + kb_pod_decode      : %8.3f s  %10.0f pods/s  %7.1f MB/s  (%u pods)\n",
           full_best, decoded / full_best, bytes / 1e6 / full_best, decoded);
    printf("  kb_pod_decode alone        : %8.3f s  %10.0f pods/s\n", decode_only,
           decoded / decode_only);
    printf("  ratio parse+decode / parse : %8.2f x the baseline's time (decode alone is %.0f%% "
           "of it)\n",
           full_best / parse_best, 100.0 * decode_only / parse_best);
    return 0;
}
