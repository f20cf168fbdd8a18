/*
 * TFJob model (kube/kb-tfjob), exit codes and restart decisions (operator/tf-replica), and the
 * objects built for a job (operator/tf-build).
 */
#include <glib.h>
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-tfjob.h"
#include "operator/tf-build.h"
#include "operator/tf-replica.h"

static json_object *load(const char *name)
{
    const char *src = g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
    g_autofree char *path = g_build_filename(src, "tests", "data", "operator", name, NULL);
    json_object *o = json_object_from_file(path);
    g_assert_nonnull(o);
    return o;
}

static KbTfJob *decode_file(const char *name)
{
    g_autoptr(GError) error = NULL;
    json_object *o = load(name);
    KbTfJob *job = kb_tfjob_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    g_assert_nonnull(job);
    return job;
}

/* Decodes @text; fails the test on a structural error. */
static KbTfJob *decode_text(const char *text)
{
    g_autoptr(GError) error = NULL;
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    KbTfJob *job = kb_tfjob_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    return job;
}

/* A pod as tf-operator builds it, with a status: @exit_code < 0 means no terminated container. */
static KbPod *make_pod(const KbTfJob *job, KbTfReplicaType t, gint32 index, const char *phase,
                       int exit_code, int restarts)
{
    g_autoptr(GError) error = NULL;
    json_object *pod = tf_build_pod(job, t, index, "kube-batchd");
    json_object *status = json_object_new_object();
    json_object *cs = json_object_new_array(), *c = json_object_new_object();
    json_object *state = json_object_new_object();
    json_object_object_add(status, "phase", json_object_new_string(phase));
    json_object_object_add(c, "name", json_object_new_string("tensorflow"));
    json_object_object_add(c, "restartCount", json_object_new_int(restarts));
    if (exit_code >= 0) {
        json_object *term = json_object_new_object();
        json_object_object_add(term, "exitCode", json_object_new_int(exit_code));
        json_object_object_add(state, "terminated", term);
    } else {
        json_object_object_add(state, "running", json_object_new_object());
    }
    json_object_object_add(c, "state", state);
    json_object_array_add(cs, c);
    json_object_object_add(status, "containerStatuses", cs);
    json_object_object_add(pod, "status", status);
    KbPod *p = kb_pod_decode(pod, FALSE, &error);
    json_object_put(pod);
    g_assert_no_error(error);
    return p;
}

static const char *jstr(json_object *o, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);
    for (guint i = 0; parts[i] != NULL && o != NULL; i++) {
        json_object *next = NULL;
        if (json_object_is_type(o, json_type_array))
            next = json_object_array_get_idx(o, (size_t)g_ascii_strtoull(parts[i], NULL, 10));
        else if (!json_object_object_get_ex(o, parts[i], &next))
            next = NULL;
        o = next;
    }
    return o != NULL ? json_object_get_string(o) : NULL;
}

/* ---- decoding ---------------------------------------------------------------------------------
 */

static void test_decode_seed(void)
{
    g_autoptr(KbTfJob) job = decode_file("seed-v1alpha1.json");
    g_assert_null(job->invalid);
    g_assert_cmpint(job->api, ==, KB_TF_API_V1ALPHA1);
    g_assert_true(job->specs[KB_TF_MASTER].present);
    g_assert_cmpint(job->specs[KB_TF_MASTER].replicas, ==, 1);
    g_assert_cmpint(job->specs[KB_TF_WORKER].replicas, ==, 1);
    g_assert_cmpint(job->specs[KB_TF_PS].replicas, ==, 2);
    g_assert_false(job->specs[KB_TF_CHIEF].present);
    for (int t = KB_TF_MASTER; t <= KB_TF_PS; t++) {
        g_assert_cmpint(job->specs[t].port, ==, 2222);
        g_assert_cmpint(job->specs[t].restart_policy, ==, KB_TF_RESTART_EXIT_CODE);
    }
    g_assert_true(job->specs[KB_TF_MASTER].has_tf_container);
    g_assert_false(job->specs[KB_TF_PS].has_tf_container);
    g_assert_cmpstr(job->tf_image, ==, "tensorflow/tensorflow:1.3.0");
    g_assert_null(job->runtime_id);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_ALL);
    g_assert_cmpstr(job->meta.name, ==, "example-job");
}

static void test_decode_v1alpha1_defaults(void)
{
    g_autoptr(KbTfJob) job = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"kind\":\"TFJob\","
            "\"metadata\":{\"name\":\"tf-smoke-gpu\",\"namespace\":\"default\"},"
            "\"spec\":{\"RuntimeId\":\"76NO\",\"tfImage\":\"tf:1.4\",\"replicaSpecs\":[{"
            "\"template\":"
            "{\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"x\",\"resources\":"
            "{\"limits\":{\"nvidia.com/gpu\":1}}}]}}}]}}");
    g_assert_null(job->invalid);
    g_assert_true(job->specs[KB_TF_MASTER].present);
    g_assert_cmpint(job->specs[KB_TF_MASTER].replicas, ==, 1);
    g_assert_cmpint(job->specs[KB_TF_MASTER].port, ==, 2222);
    g_assert_cmpstr(job->runtime_id, ==, "76no");
    g_assert_cmpstr(job->tf_image, ==, "tf:1.4");
    g_assert_cmpint(job->specs[KB_TF_MASTER].requests.v[KB_RES_GPU], ==, 1000);
}

static void test_decode_v1(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-2ps-4w.json");
    g_assert_null(job->invalid);
    g_assert_cmpint(job->api, ==, KB_TF_API_V1);
    g_assert_cmpint(job->specs[KB_TF_PS].replicas, ==, 2);
    g_assert_cmpint(job->specs[KB_TF_WORKER].replicas, ==, 4);
    g_assert_cmpint(job->specs[KB_TF_PS].restart_policy, ==, KB_TF_RESTART_NEVER);
    g_assert_cmpint(job->specs[KB_TF_WORKER].restart_policy, ==, KB_TF_RESTART_EXIT_CODE);
    g_assert_cmpint(job->specs[KB_TF_WORKER].requests.v[KB_RES_GPU], ==, 4000);
    g_assert_cmpint(job->specs[KB_TF_WORKER].requests.v[KB_RES_CPU], ==, 4000);
    g_assert_cmpint(job->specs[KB_TF_PS].requests.v[KB_RES_MEMORY], ==, 2LL << 30);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_RUNNING);
    g_assert_cmpint(job->backoff_limit, ==, -1);
    g_assert_cmpint(job->ttl_seconds_after_finished, ==, -1);
    g_assert_false(job->dynamic_workers);
}

static void test_decode_run_policy(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-chief.json");
    g_assert_null(job->invalid);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_ALL);
    g_assert_cmpint(job->ttl_seconds_after_finished, ==, 100);
    g_assert_cmpint(job->backoff_limit, ==, 2);
    g_assert_cmpint(job->active_deadline_seconds, ==, 3600);
    g_assert_cmpint(job->min_available, ==, 3);
    g_assert_cmpstr(job->queue, ==, "research");
    g_assert_cmpstr(job->priority_class, ==, "high");
    g_assert_cmpint(job->specs[KB_TF_CHIEF].port, ==, 3333);
    g_assert_cmpint(job->specs[KB_TF_CHIEF].restart_policy, ==, KB_TF_RESTART_ON_FAILURE);
    g_assert_cmpstr(job->scheduler_name, ==, "my-scheduler");
    g_assert_true(job->specs[KB_TF_EVALUATOR].present);
}

/* Without cleanPodPolicy, v1 keeps every pod (None, as Kubeflow's training-operator since
 * v1.7); v1alpha1 deletes them all (the seed's CleanUp). */
static void test_decode_clean_pod_policy_defaults(void)
{
    g_autoptr(KbTfJob) v1 = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},"
            "\"spec\":{\"runPolicy\":{\"backoffLimit\":1},\"tfReplicaSpecs\":{\"PS\":{\"template\":"
            "{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}},\"Worker\":{\"template\":"
            "{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}}}}}");
    g_assert_null(v1->invalid);
    g_assert_cmpint(v1->clean_pod_policy, ==, KB_TF_CLEAN_NONE);
    g_autoptr(KbTfJob) empty = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},"
            "\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"\"},\"tfReplicaSpecs\":{\"Worker\":{"
            "\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}}}}}");
    g_assert_cmpint(empty->clean_pod_policy, ==, KB_TF_CLEAN_NONE);
    g_autoptr(KbTfJob) alpha = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"metadata\":{\"name\":\"j\",\"namespace\":"
            "\"d\"},\"spec\":{\"replicaSpecs\":[{\"template\":{\"spec\":{\"containers\":[{\"name\":"
            "\"tensorflow\"}]}}}]}}");
    g_assert_cmpint(alpha->clean_pod_policy, ==, KB_TF_CLEAN_ALL);
}

static void test_decode_legacy_fields(void)
{
    /* Early v1 objects: run policy fields directly in spec, lower-case type keys. */
    g_autoptr(KbTfJob) job = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},"
            "\"spec\":{\"cleanPodPolicy\":\"None\",\"backoffLimit\":5,\"successPolicy\":"
            "\"AllWorkers\",\"tfReplicaSpecs\":{\"worker\":{\"replicas\":2,\"template\":{\"spec\":"
            "{\"containers\":[{\"name\":\"tensorflow\"}]}}}}}}");
    g_assert_null(job->invalid);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_NONE);
    g_assert_cmpint(job->backoff_limit, ==, 5);
    g_assert_true(job->success_all_workers);
    g_assert_cmpint(job->specs[KB_TF_WORKER].replicas, ==, 2);
}

static void test_decode_shape_by_content(void)
{
    /* The CRD serves both versions unconverted: a replicaSpecs list read as v1 is still v1alpha1.
     */
    g_autoptr(KbTfJob) job = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\"},\"spec\":"
            "{\"replicaSpecs\":[{\"tfReplicaType\":\"MASTER\",\"template\":{\"spec\":"
            "{\"containers\":[{\"name\":\"tensorflow\"}]}}}]}}");
    g_assert_cmpint(job->api, ==, KB_TF_API_V1ALPHA1);
    g_assert_null(job->invalid);
}

/* The seed tutorial's v1beta1 job, as written there: `MASTER` in capitals. */
static void test_decode_v1beta1_seed(void)
{
    g_autoptr(KbTfJob) job = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1beta1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":"
            "\"module6-ex1-gpu\",\"namespace\":\"default\"},\"spec\":{\"tfReplicaSpecs\":{"
            "\"MASTER\":"
            "{\"replicas\":1,\"template\":{\"spec\":{\"containers\":[{\"image\":\"tf-mnist:gpu\","
            "\"name\":\"tensorflow\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}],"
            "\"restartPolicy\":\"OnFailure\"}}}}}}");
    g_assert_null(job->invalid);
    g_assert_cmpint(job->api, ==, KB_TF_API_V1BETA1);
    g_assert_cmpstr(kb_tf_api_version(job->api), ==, "kubeflow.org/v1beta1");
    g_assert_true(job->specs[KB_TF_MASTER].present);
    g_assert_cmpint(job->specs[KB_TF_MASTER].replicas, ==, 1);
    g_assert_cmpint(job->specs[KB_TF_MASTER].restart_policy, ==, KB_TF_RESTART_NEVER);
    g_assert_cmpint(job->specs[KB_TF_MASTER].port, ==, KB_TF_DEFAULT_PORT);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_RUNNING);
    g_assert_cmpint(job->specs[KB_TF_MASTER].requests.v[KB_RES_GPU], ==, 1000);
}

/* v1beta1/v1beta2: run policy in spec, cleanPodPolicy defaults to Running; runPolicy and
 * successPolicy are v1's and not read; type keys in any case. */
static void test_decode_betas(void)
{
    static const char *const versions[] = {"v1beta1", "v1beta2"};
    for (guint i = 0; i < G_N_ELEMENTS(versions); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"kubeflow.org/%s\",\"metadata\":{\"name\":\"j\",\"namespace\":"
                "\"d\"},\"spec\":{\"backoffLimit\":3,\"activeDeadlineSeconds\":60,"
                "\"ttlSecondsAfterFinished\":10,\"successPolicy\":\"AllWorkers\",\"runPolicy\":"
                "{\"cleanPodPolicy\":\"None\",\"backoffLimit\":9},\"tfReplicaSpecs\":{\"ps\":"
                "{\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}},\"wOrKeR\":"
                "{\"replicas\":3,\"restartPolicy\":\"ExitCode\",\"template\":{\"spec\":"
                "{\"containers\":[{\"name\":\"tensorflow\"}]}}}}}}",
                versions[i]);
        g_autoptr(KbTfJob) job = decode_text(text);
        g_assert_null(job->invalid);
        g_assert_cmpint(job->api, ==, i == 0 ? KB_TF_API_V1BETA1 : KB_TF_API_V1BETA2);
        g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_RUNNING);
        g_assert_cmpint(job->backoff_limit, ==, 3);
        g_assert_cmpint(job->active_deadline_seconds, ==, 60);
        g_assert_cmpint(job->ttl_seconds_after_finished, ==, 10);
        g_assert_false(job->success_all_workers);
        g_assert_cmpint(job->specs[KB_TF_WORKER].replicas, ==, 3);
        g_assert_cmpint(job->specs[KB_TF_WORKER].restart_policy, ==, KB_TF_RESTART_EXIT_CODE);
        g_assert_true(job->specs[KB_TF_PS].present);
    }
    /* A v1 map read through v1alpha1 (no conversion) is still a map job. */
    g_autoptr(KbTfJob) v1 = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"metadata\":{\"name\":\"j\"},\"spec\":"
            "{\"tfReplicaSpecs\":{\"Worker\":{\"template\":{\"spec\":{\"containers\":[{\"name\":"
            "\"tensorflow\"}]}}}}}}");
    g_assert_cmpint(v1->api, ==, KB_TF_API_V1);
    g_assert_null(v1->invalid);
    /* A beta names the field and value it cannot take, as v1 does. */
    g_autoptr(KbTfJob) bad = decode_text(
            "{\"apiVersion\":\"kubeflow.org/v1beta2\",\"metadata\":{\"name\":\"j\",\"namespace\":"
            "\"d\"},\"spec\":{\"cleanPodPolicy\":\"Some\",\"tfReplicaSpecs\":{\"Worker\":{"
            "\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}}}}}");
    g_assert_cmpstr(bad->invalid, ==,
                    "tfjob d/j: spec.cleanPodPolicy: unknown policy \"Some\" (All, Running, None)");
}

static void test_decode_dynamic(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-dynamic.json");
    g_assert_null(job->invalid);
    g_assert_true(job->dynamic_workers);
    g_assert_cmpint(job->min_workers, ==, 2);
    g_assert_cmpint(job->max_workers, ==, 6);
    g_assert_cmpint(kb_tfjob_effective_replicas(job, KB_TF_WORKER), ==, 3);
    job->status.workers = 9; /* clamped to the maximum */
    g_assert_cmpint(kb_tfjob_effective_replicas(job, KB_TF_WORKER), ==, 6);
}

static void test_decode_status(void)
{
    g_autoptr(KbTfJob) job = decode_text(
            "{\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},\"spec\":{\"tfReplicaSpecs\":"
            "{\"Worker\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}}}},"
            "\"status\":{\"startTime\":\"2026-11-22T05:00:00Z\",\"restartCount\":3,\"conditions\":["
            "{\"type\":\"Created\",\"status\":\"True\",\"reason\":\"TFJobCreated\"},"
            "{\"type\":\"Running\",\"status\":\"True\",\"reason\":\"TFJobRunning\",\"message\":"
            "\"m\"}]}}");
    g_assert_true(job->status.conditions[KB_TF_COND_RUNNING].present);
    g_assert_true(job->status.conditions[KB_TF_COND_RUNNING].status);
    g_assert_cmpstr(job->status.conditions[KB_TF_COND_RUNNING].message, ==, "m");
    g_assert_cmpuint(job->status.conditions[KB_TF_COND_RUNNING].seq, >,
                     job->status.conditions[KB_TF_COND_CREATED].seq);
    g_assert_cmpint(job->status.restart_count, ==, 3);
    g_assert_cmpint(job->status.start_time, ==, 1795323600);
    g_assert_false(kb_tfjob_is_finished(job));
}

/* ---- validation: every message names the field ------------------------------------------------
 */

typedef struct {
    const char *name;
    const char *json;
    const char *expect; /* substring of job->invalid */
} InvalidCase;

#define TF   "{\"name\":\"tensorflow\"}"
#define TMPL "\"template\":{\"spec\":{\"containers\":[" TF "]}}"
#define V1(specs)                                                                                  \
    "{\"apiVersion\":\"kubeflow.org/"                                                              \
    "v1\",\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\"},\"spec\":{\"tfReplicaSpecs\":"      \
    "{" specs "}}}"
#define ALPHA(specs)                                                                               \
    "{\"apiVersion\":\"kubeflow.org/"                                                              \
    "v1alpha1\",\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\"},\"spec\":{\"replicaSpecs\":"  \
    "[" specs "]}}"

static const InvalidCase invalid_cases[] = {
        {"no-replicas-v1", V1(""), "tfjob ns/bad: spec.tfReplicaSpecs: no replica specs"},
        {"no-replicas-v1alpha1", ALPHA(""), "spec.replicaSpecs: no replica specs"},
        {"negative-replicas", V1("\"Worker\":{\"replicas\":-2," TMPL "}"),
         "spec.tfReplicaSpecs.Worker.replicas: must not be negative (-2)"},
        {"zero-replicas-v1alpha1", ALPHA("{\"replicas\":0," TMPL "}"),
         "spec.replicaSpecs[0].replicas: must be greater than 0"},
        {"unknown-type-v1", V1("\"Learner\":{" TMPL "}"),
         "spec.tfReplicaSpecs.Learner: unknown replica type \"Learner\""},
        {"unknown-type-v1alpha1", ALPHA("{" TMPL "},{\"tfReplicaType\":\"SCHEDULER\"," TMPL "}"),
         "spec.replicaSpecs[1].tfReplicaType: unknown replica type \"SCHEDULER\""},
        {"no-tf-container-v1",
         V1("\"Worker\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\"}]}}}"),
         "spec.tfReplicaSpecs.Worker.template.spec.containers: no container named \"tensorflow\""},
        {"no-tf-container-v1-ps", V1("\"Worker\":{" TMPL "},\"PS\":{}"),
         "spec.tfReplicaSpecs.PS.template.spec.containers: no container named \"tensorflow\""},
        {"no-tf-container-v1alpha1-worker", ALPHA("{" TMPL "},{\"tfReplicaType\":\"WORKER\"}"),
         "spec.replicaSpecs[1].template.spec.containers: no container named \"tensorflow\""},
        {"chief-and-master", V1("\"Chief\":{" TMPL "},\"Master\":{" TMPL "}"),
         "both Chief and Master given"},
        {"two-masters-v1", V1("\"Master\":{\"replicas\":2," TMPL "}"),
         "spec.tfReplicaSpecs.Master.replicas: 2 masters/chiefs"},
        {"two-chiefs-v1", V1("\"Chief\":{\"replicas\":3," TMPL "}"),
         "spec.tfReplicaSpecs.Chief.replicas: 3 masters/chiefs"},
        {"two-masters-v1alpha1", ALPHA("{" TMPL "},{\"tfReplicaType\":\"MASTER\"," TMPL "}"),
         "spec.replicaSpecs[1]: replica type Master given twice"},
        {"no-master-v1alpha1", ALPHA("{\"tfReplicaType\":\"WORKER\"," TMPL "}"),
         "spec.replicaSpecs: no MASTER"},
        {"restart-policy", V1("\"Worker\":{\"restartPolicy\":\"Sometimes\"," TMPL "}"),
         "spec.tfReplicaSpecs.Worker.restartPolicy: unknown restart policy \"Sometimes\""},
        {"clean-pod-policy",
         "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\"},\"spec\":{\"runPolicy\":"
         "{\"cleanPodPolicy\":\"Some\"},\"tfReplicaSpecs\":{\"Worker\":{" TMPL "}}}}",
         "spec.runPolicy.cleanPodPolicy: unknown policy \"Some\""},
        {"success-policy",
         "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\"},\"spec\":{\"successPolicy\":"
         "\"Any\","
         "\"tfReplicaSpecs\":{\"Worker\":{" TMPL "}}}}",
         "spec.successPolicy: unknown policy \"Any\""},
        {"negative-ttl",
         "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\"},\"spec\":{\"runPolicy\":"
         "{\"ttlSecondsAfterFinished\":-1},\"tfReplicaSpecs\":{\"Worker\":{" TMPL "}}}}",
         "spec.runPolicy.ttlSecondsAfterFinished: must not be negative (-1)"},
        {"port-range",
         V1("\"Worker\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\","
            "\"ports\":"
            "[{\"name\":\"tfjob-port\",\"containerPort\":70000}]}]}}}"),
         "spec.tfReplicaSpecs.Worker: port 70000 out of range"},
        {"long-name",
         "{\"metadata\":{\"name\":\"a-very-long-job-name-that-will-not-fit-in-a-dns-label-xyz\","
         "\"namespace\":\"ns\"},\"spec\":{\"tfReplicaSpecs\":{\"Evaluator\":{" TMPL "}}}}",
         "metadata.name: \"a-very-long-job-name-that-will-not-fit-in-a-dns-label-xyz\" makes pod "
         "name"},
        {"dynamic-min-over-max",
         "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\",\"annotations\":{"
         "\"kube-batchd.io/min-workers\":\"5\",\"kube-batchd.io/max-workers\":\"2\"}},\"spec\":"
         "{\"enableDynamicWorker\":true,\"tfReplicaSpecs\":{\"Worker\":{" TMPL "}}}}",
         "kube-batchd.io/min-workers=5 and kube-batchd.io/max-workers=2"},
        {"dynamic-not-a-number",
         "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\",\"annotations\":{"
         "\"kube-batchd.io/max-workers\":\"many\"}},\"spec\":"
         "{\"enableDynamicWorker\":true,\"tfReplicaSpecs\":{\"Worker\":{" TMPL "}}}}",
         "metadata.annotations[\"kube-batchd.io/max-workers\"]: \"many\" is not a number"},
        {"retryable-code",
         "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ns\",\"annotations\":{"
         "\"kube-batchd.io/retryable-exit-codes\":\"138,x\"}},\"spec\":"
         "{\"tfReplicaSpecs\":{\"Worker\":{" TMPL "}}}}",
         "metadata.annotations[\"kube-batchd.io/retryable-exit-codes\"]: \"x\" is not an exit "
         "code"},
        {"bad-quantity",
         V1("\"Worker\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\","
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"12Qi\"}}}]}}}"),
         NULL /* a structural error, see below */},
};

static void test_invalid(gconstpointer data)
{
    const InvalidCase *c = data;
    g_autoptr(GError) error = NULL;
    json_object *o = json_tokener_parse(c->json);
    g_assert_nonnull(o);
    g_autoptr(KbTfJob) job = kb_tfjob_decode(o, FALSE, &error);
    json_object_put(o);
    if (c->expect == NULL) {
        g_assert_null(job);
        g_assert_nonnull(error);
        g_assert_nonnull(strstr(error->message, "spec.tfReplicaSpecs.Worker"));
        return;
    }
    g_assert_no_error(error);
    g_assert_nonnull(job->invalid);
    if (strstr(job->invalid, c->expect) == NULL)
        g_error("%s: \"%s\" does not contain \"%s\"", c->name, job->invalid, c->expect);
    g_assert_false(kb_tfjob_validate(job, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
}

static void test_valid_ps_without_container(void)
{
    g_autoptr(KbTfJob) job = decode_text(ALPHA("{" TMPL "},{\"tfReplicaType\":\"PS\"}"));
    g_assert_null(job->invalid);
    g_assert_true(kb_tfjob_validate(job, NULL));
}

/* ---- structural errors and limits -------------------------------------------------------------
 */

typedef struct {
    const char *name;
    const char *json;
    int code;
    const char *expect;
} StructCase;

static const StructCase struct_cases[] = {
        {"not-an-object", "[1,2]", KB_ERROR_DECODE, "expected an object"},
        {"no-name", "{\"metadata\":{},\"spec\":{}}", KB_ERROR_DECODE, "metadata.name"},
        {"replicas-string", V1("\"Worker\":{\"replicas\":\"2\"," TMPL "}"), KB_ERROR_DECODE,
         "spec.tfReplicaSpecs.Worker.replicas: expected an integer, got a string"},
        {"specs-list", "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"tfReplicaSpecs\":[]}}",
         KB_ERROR_DECODE, "spec.tfReplicaSpecs: expected an object, got a list"},
        {"template-string", V1("\"Worker\":{\"template\":\"x\"}"), KB_ERROR_DECODE,
         "spec.tfReplicaSpecs.Worker.template: expected an object"},
        {"containers-object", V1("\"Worker\":{\"template\":{\"spec\":{\"containers\":{}}}}"),
         KB_ERROR_DECODE, "spec.tfReplicaSpecs.Worker.template.spec.containers: expected a list"},
        {"spec-entry-not-object", ALPHA("3"), KB_ERROR_DECODE,
         "spec.replicaSpecs[0]: expected an object"},
        {"replicas-over-limit", V1("\"Worker\":{\"replicas\":10001," TMPL "}"), KB_ERROR_LIMIT,
         "spec.tfReplicaSpecs.Worker.replicas: 10001 replicas, more than 10000"},
        {"runtime-id-over-limit",
         "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"RuntimeId\":"
         "\"abcdefghijabcdefghijabcdefghijabc\","
         "\"replicaSpecs\":[{" TMPL "}]}}",
         KB_ERROR_LIMIT, "spec.RuntimeId: 33 characters, more than 32"},
        {"replica-specs-over-limit", ALPHA("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}"),
         KB_ERROR_LIMIT, "spec.replicaSpecs: 17 entries, more than 16"},
        {"retryable-codes-over-limit",
         "{\"metadata\":{\"name\":\"j\",\"annotations\":{\"kube-batchd.io/retryable-exit-codes\":"
         "\"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\"}},\"spec\":{\"tfReplicaSpecs\":"
         "{\"Worker\":{" TMPL "}}}}",
         KB_ERROR_LIMIT, "17 codes, more than 16"},
};

static void test_structural(gconstpointer data)
{
    const StructCase *c = data;
    g_autoptr(GError) error = NULL;
    json_object *o = json_tokener_parse(c->json);
    g_assert_nonnull(o);
    KbTfJob *job = kb_tfjob_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_null(job);
    g_assert_error(error, KB_ERROR, c->code);
    if (strstr(error->message, c->expect) == NULL)
        g_error("%s: \"%s\" does not contain \"%s\"", c->name, error->message, c->expect);
}

static void test_limits_at_bound(void)
{
    /* Exactly at each limit decodes. */
    g_autoptr(KbTfJob) a = decode_text(V1("\"Worker\":{\"replicas\":10000," TMPL "}"));
    g_assert_cmpint(a->specs[KB_TF_WORKER].replicas, ==, 10000);
    g_autoptr(KbTfJob) b =
            decode_text("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"RuntimeId\":"
                        "\"abcdefghijabcdefghijabcdefghijab\",\"replicaSpecs\":[{" TMPL "}]}}");
    g_assert_cmpuint(strlen(b->runtime_id), ==, 32);
}

/* ---- exit codes and restart decisions -----------------------------------------------------------
 */

static void test_exit_classes(void)
{
    static const struct {
        int code;
        TfExitClass cls;
    } table[] = {
            {0, TF_EXIT_SUCCESS},     {1, TF_EXIT_PERMANENT},        {2, TF_EXIT_PERMANENT},
            {126, TF_EXIT_PERMANENT}, {127, TF_EXIT_PERMANENT},      {128, TF_EXIT_PERMANENT},
            {139, TF_EXIT_PERMANENT}, {130, TF_EXIT_RETRYABLE},      {137, TF_EXIT_RETRYABLE},
            {143, TF_EXIT_RETRYABLE}, {138, TF_EXIT_USER_RETRYABLE}, {3, TF_EXIT_UNDEFINED},
            {255, TF_EXIT_UNDEFINED}, {129, TF_EXIT_UNDEFINED},
    };
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_assert_cmpint(tf_exit_classify(table[i].code), ==, table[i].cls);
        gboolean retry = table[i].cls == TF_EXIT_RETRYABLE;
        g_assert_cmpint(tf_exit_is_retryable(NULL, table[i].code), ==, retry);
    }
    g_assert_cmpstr(tf_exit_describe(137), ==, "container received a SIGKILL");
    g_assert_cmpstr(tf_exit_describe(139), ==, "container terminated by SIGSEGV");
}

static void test_exit_138_user_choice(void)
{
    g_autoptr(KbTfJob) plain = decode_file("v1-2ps-4w.json");
    g_autoptr(KbTfJob) opted = decode_text(
            "{\"metadata\":{\"name\":\"j\",\"namespace\":\"d\",\"annotations\":{"
            "\"kube-batchd.io/retryable-exit-codes\":\" 138 \"}},\"spec\":{\"tfReplicaSpecs\":"
            "{\"Worker\":{\"restartPolicy\":\"ExitCode\"," TMPL "}}}}");
    g_assert_false(tf_exit_is_retryable(plain, 138));
    g_assert_true(tf_exit_is_retryable(opted, 138));
    g_assert_false(tf_exit_is_retryable(opted, 0));

    g_autofree char *why = NULL;
    g_autoptr(KbPod) pod = make_pod(plain, KB_TF_WORKER, 0, "Failed", 138, 0);
    g_assert_cmpint(tf_replica_decide(plain, KB_TF_RESTART_EXIT_CODE, pod, &why), ==,
                    TF_REPLICA_FAIL);
    g_assert_nonnull(strstr(why, "not declared in kube-batchd.io/retryable-exit-codes"));
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(tf_replica_decide(opted, KB_TF_RESTART_EXIT_CODE, pod, &why), ==,
                    TF_REPLICA_RECREATE);
}

typedef struct {
    const char *name;
    KbTfRestartPolicy policy;
    const char *phase;
    int exit_code;
    TfReplicaDecision want;
    const char *why; /* substring, NULL for KEEP */
} RestartCase;

static const RestartCase restart_cases[] = {
        {"exit-code/137", KB_TF_RESTART_EXIT_CODE, "Failed", 137, TF_REPLICA_RECREATE,
         "exit code 137 (container received a SIGKILL): retryable"},
        {"exit-code/143", KB_TF_RESTART_EXIT_CODE, "Failed", 143, TF_REPLICA_RECREATE, "retryable"},
        {"exit-code/130", KB_TF_RESTART_EXIT_CODE, "Failed", 130, TF_REPLICA_RECREATE, "retryable"},
        {"exit-code/1", KB_TF_RESTART_EXIT_CODE, "Failed", 1, TF_REPLICA_FAIL,
         "exit code 1 (general error): permanent"},
        {"exit-code/127", KB_TF_RESTART_EXIT_CODE, "Failed", 127, TF_REPLICA_FAIL, "permanent"},
        {"exit-code/139", KB_TF_RESTART_EXIT_CODE, "Failed", 139, TF_REPLICA_FAIL, "SIGSEGV"},
        {"exit-code/undefined", KB_TF_RESTART_EXIT_CODE, "Failed", 42, TF_REPLICA_FAIL,
         "exit code 42 (undefined exit code, no guarantee): permanent"},
        {"exit-code/evicted", KB_TF_RESTART_EXIT_CODE, "Failed", -1, TF_REPLICA_RECREATE,
         "without an exit code"},
        {"exit-code/running", KB_TF_RESTART_EXIT_CODE, "Running", -1, TF_REPLICA_KEEP, NULL},
        {"exit-code/succeeded", KB_TF_RESTART_EXIT_CODE, "Succeeded", 0, TF_REPLICA_KEEP, NULL},
        {"never/137", KB_TF_RESTART_NEVER, "Failed", 137, TF_REPLICA_FAIL, "restartPolicy Never"},
        {"never/1", KB_TF_RESTART_NEVER, "Failed", 1, TF_REPLICA_FAIL, "permanent"},
        {"on-failure/failed-pod", KB_TF_RESTART_ON_FAILURE, "Failed", 1, TF_REPLICA_RECREATE,
         "restartPolicy OnFailure"},
        {"on-failure/running", KB_TF_RESTART_ON_FAILURE, "Running", -1, TF_REPLICA_KEEP, NULL},
        {"always/failed-pod", KB_TF_RESTART_ALWAYS, "Failed", -1, TF_REPLICA_RECREATE,
         "restartPolicy Always"},
        {"always/pending", KB_TF_RESTART_ALWAYS, "Pending", -1, TF_REPLICA_KEEP, NULL},
};

static void test_restart(gconstpointer data)
{
    const RestartCase *c = data;
    g_autoptr(KbTfJob) job = decode_file("v1-2ps-4w.json");
    g_autoptr(KbPod) pod = make_pod(job, KB_TF_WORKER, 1, c->phase, c->exit_code, 0);
    g_autofree char *why = NULL;
    g_assert_cmpint(tf_replica_decide(job, c->policy, pod, &why), ==, c->want);
    if (c->why == NULL) {
        g_assert_null(why);
    } else if (why == NULL || strstr(why, c->why) == NULL) {
        g_error("%s: \"%s\" does not contain \"%s\"", c->name, why ? why : "(null)", c->why);
    }
}

static void test_kubelet_restarts(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-2ps-4w.json");
    g_autoptr(KbPod) pod = make_pod(job, KB_TF_WORKER, 0, "Running", -1, 4);
    int code = -7;
    g_assert_cmpint(tf_replica_kubelet_restarts(pod), ==, 4);
    g_assert_false(tf_replica_exit_code(pod, &code));
    g_assert_cmpint(code, ==, -7);
}

/* ---- names, TF_CONFIG, pods, services, PodGroup -----------------------------------------------
 */

static void test_names(void)
{
    g_autoptr(KbTfJob) v1 = decode_file("v1-2ps-4w.json");
    g_autofree char *a = tf_build_replica_name(v1, KB_TF_WORKER, 3);
    g_autofree char *b = tf_build_replica_name(v1, KB_TF_PS, 0);
    g_assert_cmpstr(a, ==, "mnist-dist-worker-3");
    g_assert_cmpstr(b, ==, "mnist-dist-ps-0");

    g_autoptr(KbTfJob) alpha = decode_file("seed-v1alpha1.json");
    alpha->runtime_id = g_strdup("76no");
    g_autofree char *c = tf_build_replica_name(alpha, KB_TF_PS, 1);
    g_assert_cmpstr(c, ==, "example-job-ps-76no-1");
    /* v1alpha1 truncates the job name to 40 characters, as the original. */
    g_free(alpha->meta.name);
    alpha->meta.name = g_strdup("abcdefghijabcdefghijabcdefghijabcdefghij-tail");
    g_autofree char *d = tf_build_replica_name(alpha, KB_TF_MASTER, 0);
    g_assert_cmpstr(d, ==, "abcdefghijabcdefghijabcdefghijabcdefghij-master-76no-0");
}

static void test_runtime_id(void)
{
    for (int i = 0; i < 50; i++) {
        g_autofree char *id = tf_build_runtime_id();
        g_assert_cmpuint(strlen(id), ==, 4);
        for (int k = 0; k < 4; k++)
            g_assert_true(g_ascii_islower(id[k]) || g_ascii_isdigit(id[k]));
    }
}

static void test_tf_config_v1(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-2ps-4w.json");
    g_autofree char *cfg = tf_build_tf_config(job, KB_TF_WORKER, 1);
    g_assert_cmpstr(cfg, ==,
                    "{\"cluster\":{\"worker\":[\"mnist-dist-worker-0.research.svc:2222\","
                    "\"mnist-dist-worker-1.research.svc:2222\",\"mnist-dist-worker-2.research.svc:"
                    "2222\",\"mnist-dist-worker-3.research.svc:2222\"],\"ps\":["
                    "\"mnist-dist-ps-0.research.svc:2222\",\"mnist-dist-ps-1.research.svc:2222\"]},"
                    "\"task\":{\"type\":\"worker\",\"index\":1},\"environment\":\"cloud\"}");
}

static void test_tf_config_v1alpha1(void)
{
    g_autoptr(KbTfJob) job = decode_file("seed-v1alpha1.json");
    job->runtime_id = g_strdup("76no");
    g_autofree char *cfg = tf_build_tf_config(job, KB_TF_PS, 1);
    json_object *o = json_tokener_parse(cfg);
    g_assert_cmpstr(jstr(o, "cluster/master/0"), ==, "example-job-master-76no-0.default.svc:2222");
    g_assert_cmpstr(jstr(o, "cluster/ps/1"), ==, "example-job-ps-76no-1.default.svc:2222");
    g_assert_cmpstr(jstr(o, "cluster/worker/0"), ==, "example-job-worker-76no-0.default.svc:2222");
    g_assert_cmpstr(jstr(o, "task/type"), ==, "ps");
    g_assert_cmpstr(jstr(o, "task/index"), ==, "1");
    g_assert_cmpstr(jstr(o, "environment"), ==, "cloud");
    json_object_put(o);
}

static void test_tf_config_chief_evaluator(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-chief.json");
    g_autofree char *cfg = tf_build_tf_config(job, KB_TF_EVALUATOR, 0);
    json_object *o = json_tokener_parse(cfg), *cluster;
    g_assert_true(json_object_object_get_ex(o, "cluster", &cluster));
    /* Evaluators are not part of the training cluster. */
    g_assert_false(json_object_object_get_ex(cluster, "evaluator", NULL));
    g_assert_cmpstr(jstr(o, "cluster/chief/0"), ==, "chiefjob-chief-0.ml.svc:3333");
    g_assert_cmpstr(jstr(o, "task/type"), ==, "evaluator");
    json_object_put(o);
}

static void test_tf_config_sparse(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-dynamic.json");
    g_autofree char *w = tf_build_tf_config(job, KB_TF_WORKER, 2);
    g_assert_cmpstr(w, ==,
                    "{\"sparseCluster\":{\"worker\":{\"2\":\"elastic-worker-2.default.svc:2222\"},"
                    "\"ps\":[\"elastic-ps-0.default.svc:2222\"]},\"task\":{\"type\":\"worker\","
                    "\"index\":2}}");
    g_autofree char *ps = tf_build_tf_config(job, KB_TF_PS, 0);
    g_assert_cmpstr(ps, ==,
                    "{\"sparseCluster\":{\"worker\":{},\"ps\":[\"elastic-ps-0.default.svc:2222\"]},"
                    "\"task\":{\"type\":\"ps\",\"index\":0}}");
}

static const char *env_value(json_object *pod, const char *container, const char *var)
{
    json_object *spec, *containers;
    if (!json_object_object_get_ex(pod, "spec", &spec) ||
        !json_object_object_get_ex(spec, "containers", &containers))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(containers); i++) {
        json_object *c = json_object_array_get_idx(containers, i), *env;
        if (g_strcmp0(jstr(c, "name"), container) != 0 ||
            !json_object_object_get_ex(c, "env", &env))
            continue;
        for (size_t e = 0; e < json_object_array_length(env); e++)
            if (g_strcmp0(jstr(json_object_array_get_idx(env, e), "name"), var) == 0)
                return jstr(json_object_array_get_idx(env, e), "value");
    }
    return NULL;
}

static void test_pod_v1(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-2ps-4w.json");
    json_object *pod = tf_build_pod(job, KB_TF_WORKER, 0, "kube-batchd");
    g_assert_cmpstr(jstr(pod, "metadata/name"), ==, "mnist-dist-worker-0");
    g_assert_cmpstr(jstr(pod, "metadata/namespace"), ==, "research");
    json_object *labels, *ann, *owners;
    g_assert_true(
            json_object_object_get_ex(json_object_object_get(pod, "metadata"), "labels", &labels));
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, TF_LABEL_JOB_NAME)), ==,
                    "mnist-dist");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, TF_LABEL_REPLICA_TYPE)),
                    ==, "worker");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, TF_LABEL_REPLICA_INDEX)),
                    ==, "0");
    /* No chief: worker 0 has the master role. */
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, TF_LABEL_JOB_ROLE)), ==,
                    "master");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, "team")), ==, "vision");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, TF_LABEL_POD_GROUP)), ==,
                    "mnist-dist");
    ann = json_object_object_get(json_object_object_get(pod, "metadata"), "annotations");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(ann, TF_ANNOTATION_GROUP)), ==,
                    "mnist-dist");
    g_assert_cmpstr(
            json_object_get_string(json_object_object_get(ann, "sim.kube-batchd.io/run-seconds")),
            ==, "10");
    owners = json_object_object_get(json_object_object_get(pod, "metadata"), "ownerReferences");
    g_assert_cmpstr(jstr(owners, "0/kind"), ==, "TFJob");
    g_assert_cmpstr(jstr(owners, "0/apiVersion"), ==, "kubeflow.org/v1");
    g_assert_cmpstr(jstr(owners, "0/uid"), ==, "0b6c2a8e-1111-4c55-9d0e-5a7c0f0e7a01");
    g_assert_cmpstr(jstr(owners, "0/controller"), ==, "true");
    g_assert_cmpstr(jstr(owners, "0/blockOwnerDeletion"), ==, "true");
    g_assert_cmpstr(jstr(pod, "spec/schedulerName"), ==, "kube-batchd");
    /* ExitCode is the operator's business: the kubelet must not restart in place. */
    g_assert_cmpstr(jstr(pod, "spec/restartPolicy"), ==, "Never");
    g_autofree char *cfg = tf_build_tf_config(job, KB_TF_WORKER, 0);
    g_assert_cmpstr(env_value(pod, "tensorflow", "TF_CONFIG"), ==, cfg);
    json_object_put(pod);
    /* The PS of this job is a Never replica with no job role. */
    json_object *ps = tf_build_pod(job, KB_TF_PS, 1, "kube-batchd");
    labels = json_object_object_get(json_object_object_get(ps, "metadata"), "labels");
    g_assert_null(json_object_object_get(labels, TF_LABEL_JOB_ROLE));
    g_assert_cmpstr(jstr(ps, "spec/restartPolicy"), ==, "Never");
    json_object_put(ps);
}

static void test_pod_gang_off_and_template_scheduler(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-chief.json");
    json_object *chief = tf_build_pod(job, KB_TF_CHIEF, 0, "");
    json_object *meta = json_object_object_get(chief, "metadata");
    json_object *labels = json_object_object_get(meta, "labels");
    json_object *ann = json_object_object_get(meta, "annotations");
    g_assert_null(json_object_object_get(labels, TF_LABEL_POD_GROUP));
    g_assert_true(ann == NULL || json_object_object_get(ann, TF_ANNOTATION_GROUP) == NULL);
    /* The template's own scheduler stays. */
    g_assert_cmpstr(jstr(chief, "spec/schedulerName"), ==, "my-scheduler");
    g_assert_cmpstr(jstr(chief, "spec/restartPolicy"), ==, "OnFailure");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, TF_LABEL_JOB_ROLE)), ==,
                    "master");
    json_object_put(chief);
    /* A worker with a chief has no role; with no scheduler anywhere and gang off, none is set. */
    json_object *w = tf_build_pod(job, KB_TF_WORKER, 0, NULL);
    labels = json_object_object_get(json_object_object_get(w, "metadata"), "labels");
    g_assert_null(json_object_object_get(labels, TF_LABEL_JOB_ROLE));
    g_assert_cmpstr(jstr(w, "spec/schedulerName"), ==, "my-scheduler"); /* job-level fallback */
    json_object_put(w);
}

static void test_pod_ps_default_container(void)
{
    g_autoptr(KbTfJob) job = decode_file("seed-v1alpha1.json");
    job->runtime_id = g_strdup("76no");
    json_object *ps = tf_build_pod(job, KB_TF_PS, 0, "kube-batchd");
    g_assert_cmpstr(jstr(ps, "metadata/name"), ==, "example-job-ps-76no-0");
    g_assert_cmpstr(jstr(ps, "spec/containers/0/name"), ==, "tensorflow");
    g_assert_cmpstr(jstr(ps, "spec/containers/0/image"), ==, "tensorflow/tensorflow:1.3.0");
    g_assert_cmpstr(jstr(ps, "spec/containers/0/ports/0/containerPort"), ==, "2222");
    g_assert_nonnull(strstr(jstr(ps, "spec/containers/0/command/2"), "tf.train.Server"));
    g_assert_nonnull(env_value(ps, "tensorflow", "TF_CONFIG"));
    json_object *labels = json_object_object_get(json_object_object_get(ps, "metadata"), "labels");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, "runtime_id")), ==,
                    "76no");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(labels, "job_type")), ==, "PS");
    g_assert_cmpstr(jstr(ps, "metadata/ownerReferences/0/apiVersion"), ==, "kubeflow.org/v1alpha1");
    json_object_put(ps);
    /* The master keeps the user's container and replaces a user-given TF_CONFIG. */
    json_object *m = tf_build_pod(job, KB_TF_MASTER, 0, "kube-batchd");
    g_assert_cmpstr(jstr(m, "spec/containers/0/image"), ==,
                    "gcr.io/tf-on-k8s-dogfood/tf_sample:dc944ff");
    g_assert_cmpint(json_object_array_length(json_object_object_get(
                            json_object_object_get(m, "spec"), "containers")),
                    ==, 1);
    json_object_put(m);
}

static void test_service(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-chief.json");
    json_object *svc = tf_build_service(job, KB_TF_CHIEF, 0);
    g_assert_cmpstr(jstr(svc, "kind"), ==, "Service");
    g_assert_cmpstr(jstr(svc, "metadata/name"), ==, "chiefjob-chief-0");
    g_assert_cmpstr(jstr(svc, "spec/clusterIP"), ==, "None");
    g_assert_cmpstr(jstr(svc, "spec/ports/0/port"), ==, "3333");
    g_assert_cmpstr(jstr(svc, "spec/ports/0/name"), ==, "tfjob-port");
    json_object *sel = json_object_object_get(json_object_object_get(svc, "spec"), "selector");
    g_assert_cmpint(json_object_object_length(sel), ==, 3);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(sel, TF_LABEL_REPLICA_TYPE)), ==,
                    "chief");
    g_assert_cmpstr(jstr(svc, "metadata/ownerReferences/0/name"), ==, "chiefjob");
    json_object_put(svc);
}

static void test_pod_group(void)
{
    g_autoptr(KbTfJob) job = decode_file("v1-2ps-4w.json");
    json_object *pg = tf_build_pod_group(job);
    g_assert_cmpstr(jstr(pg, "apiVersion"), ==, "scheduling.volcano.sh/v1beta1");
    g_assert_cmpstr(jstr(pg, "metadata/name"), ==, "mnist-dist");
    g_assert_cmpstr(jstr(pg, "spec/minMember"), ==, "6");
    json_object *mr = json_object_object_get(json_object_object_get(pg, "spec"), "minResources");
    g_assert_cmpint(json_object_get_int(json_object_object_get(mr, "nvidia.com/gpu")), ==, 16);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(mr, "cpu")), ==, "18");
    g_assert_null(json_object_object_get(json_object_object_get(pg, "spec"), "queue"));
    g_assert_cmpstr(jstr(pg, "metadata/ownerReferences/0/controller"), ==, "true");
    json_object_put(pg);

    /* minAvailable 3 of chief + 2 workers + evaluator: queue and priority class carried. */
    g_autoptr(KbTfJob) chief = decode_file("v1-chief.json");
    pg = tf_build_pod_group(chief);
    g_assert_cmpstr(jstr(pg, "spec/minMember"), ==, "3");
    g_assert_cmpstr(jstr(pg, "spec/queue"), ==, "research");
    g_assert_cmpstr(jstr(pg, "spec/priorityClassName"), ==, "high");
    mr = json_object_object_get(json_object_object_get(pg, "spec"), "minResources");
    g_assert_cmpint(json_object_get_int(json_object_object_get(mr, "nvidia.com/gpu")), ==, 2);
    json_object_put(pg);

    /* Dynamic workers: the gang is the fixed part plus the minimum worker count. */
    g_autoptr(KbTfJob) dyn = decode_file("v1-dynamic.json");
    g_assert_cmpint(tf_build_min_member(dyn), ==, 3);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/kube/tfjob/decode/seed-v1alpha1", test_decode_seed);
    g_test_add_func("/kube/tfjob/decode/v1alpha1-defaults", test_decode_v1alpha1_defaults);
    g_test_add_func("/kube/tfjob/decode/v1-2ps-4w", test_decode_v1);
    g_test_add_func("/kube/tfjob/decode/run-policy", test_decode_run_policy);
    g_test_add_func("/kube/tfjob/decode/legacy-fields", test_decode_legacy_fields);
    g_test_add_func("/kube/tfjob/decode/clean-pod-policy-defaults",
                    test_decode_clean_pod_policy_defaults);
    g_test_add_func("/kube/tfjob/decode/shape-by-content", test_decode_shape_by_content);
    g_test_add_func("/kube/tfjob/decode/v1beta1-seed", test_decode_v1beta1_seed);
    g_test_add_func("/kube/tfjob/decode/betas", test_decode_betas);
    g_test_add_func("/kube/tfjob/decode/dynamic-workers", test_decode_dynamic);
    g_test_add_func("/kube/tfjob/decode/status", test_decode_status);
    for (guint i = 0; i < G_N_ELEMENTS(invalid_cases); i++) {
        g_autofree char *path = g_strdup_printf("/kube/tfjob/invalid/%s", invalid_cases[i].name);
        g_test_add_data_func(path, &invalid_cases[i], test_invalid);
    }
    g_test_add_func("/kube/tfjob/invalid/ps-without-container-is-valid-v1alpha1",
                    test_valid_ps_without_container);
    for (guint i = 0; i < G_N_ELEMENTS(struct_cases); i++) {
        g_autofree char *path = g_strdup_printf("/kube/tfjob/structural/%s", struct_cases[i].name);
        g_test_add_data_func(path, &struct_cases[i], test_structural);
    }
    g_test_add_func("/kube/tfjob/structural/limits-at-bound", test_limits_at_bound);
    g_test_add_func("/operator/replica/exit-classes", test_exit_classes);
    g_test_add_func("/operator/replica/exit-138-user-choice", test_exit_138_user_choice);
    for (guint i = 0; i < G_N_ELEMENTS(restart_cases); i++) {
        g_autofree char *path =
                g_strdup_printf("/operator/replica/restart/%s", restart_cases[i].name);
        g_test_add_data_func(path, &restart_cases[i], test_restart);
    }
    g_test_add_func("/operator/replica/kubelet-restarts", test_kubelet_restarts);
    g_test_add_func("/operator/build/names", test_names);
    g_test_add_func("/operator/build/runtime-id", test_runtime_id);
    g_test_add_func("/operator/build/tf-config/v1", test_tf_config_v1);
    g_test_add_func("/operator/build/tf-config/v1alpha1", test_tf_config_v1alpha1);
    g_test_add_func("/operator/build/tf-config/chief-evaluator", test_tf_config_chief_evaluator);
    g_test_add_func("/operator/build/tf-config/sparse", test_tf_config_sparse);
    g_test_add_func("/operator/build/pod/v1", test_pod_v1);
    g_test_add_func("/operator/build/pod/gang-off", test_pod_gang_off_and_template_scheduler);
    g_test_add_func("/operator/build/pod/ps-default-container", test_pod_ps_default_container);
    g_test_add_func("/operator/build/service", test_service);
    g_test_add_func("/operator/build/pod-group", test_pod_group);
    return g_test_run();
}
