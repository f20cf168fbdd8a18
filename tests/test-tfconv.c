/*
 * TFJob conversion (kube/kb-tfconv): field-by-field tables between every version, lossless round
 * trips of random jobs through every other version, what cannot be converted, and the
 * ConversionReview answer with its limits.
 */
#include <glib.h>
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-tfconv.h"
#include "kube/kb-tfjob.h"

static json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    return o;
}

static json_object *load(const char *name)
{
    const char *src = g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
    g_autofree char *path = g_build_filename(src, "tests", "data", "operator", name, NULL);
    json_object *o = json_object_from_file(path);
    g_assert_nonnull(o);
    return o;
}

static json_object *at(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (o != NULL)
        json_object_object_get_ex(o, key, &v);
    return v;
}

static void assert_json(json_object *got, const char *want_text)
{
    json_object *want = parse(want_text);
    if (!json_object_equal(got, want))
        g_error("got %s\nwant %s", json_object_to_json_string(got), want_text);
    json_object_put(want);
}

static json_object *convert(json_object *o, KbTfApi to)
{
    g_autoptr(GError) error = NULL;
    json_object *out = kb_tfconv_convert(o, to, &error);
    g_assert_no_error(error);
    g_assert_nonnull(out);
    return out;
}

/* ---- tables ---------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *in;
    KbTfApi to;
    const char *spec;   /* the whole converted spec */
    const char *status; /* the whole converted status, NULL: none */
} Case;

#define TMPL "{\"spec\":{\"containers\":[{\"name\":\"tensorflow\"}]}}"

static const Case cases[] = {
        {"beta1-to-v1",
         "{\"apiVersion\":\"kubeflow.org/v1beta1\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
         "\"backoffLimit\":2,\"ttlSecondsAfterFinished\":5,\"tfReplicaSpecs\":{\"MASTER\":{"
         "\"replicas\":1,\"template\":" TMPL "}}}}",
         KB_TF_API_V1,
         "{\"tfReplicaSpecs\":{\"MASTER\":{\"replicas\":1,\"template\":" TMPL "}},\"runPolicy\":{"
         "\"backoffLimit\":2,\"ttlSecondsAfterFinished\":5,\"cleanPodPolicy\":\"Running\"}}",
         NULL},
        {"beta2-explicit-clean-to-v1",
         "{\"apiVersion\":\"kubeflow.org/v1beta2\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
         "\"cleanPodPolicy\":\"All\",\"activeDeadlineSeconds\":60,\"tfReplicaSpecs\":{}}}",
         KB_TF_API_V1,
         "{\"tfReplicaSpecs\":{},\"runPolicy\":{\"cleanPodPolicy\":\"All\","
         "\"activeDeadlineSeconds\":60}}",
         NULL},
        {"v1-to-beta2",
         "{\"apiVersion\":\"kubeflow.org/"
         "v1\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"runPolicy\":"
         "{\"backoffLimit\":3,\"schedulingPolicy\":{\"queue\":\"q\"}},\"successPolicy\":"
         "\"AllWorkers\",\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":2}}},\"status\":{"
         "\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}",
         KB_TF_API_V1BETA2,
         "{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":2}},\"backoffLimit\":3,"
         "\"cleanPodPolicy\":\"None\"}",
         "{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}"},
        {"seed-alpha-to-v1",
         "{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
         "\"RuntimeId\":\"ab12\",\"tfImage\":\"tf:1\",\"replicaSpecs\":[{\"replicas\":1,"
         "\"tfReplicaType\":\"MASTER\",\"tfPort\":2222,\"template\":" TMPL
         "},{\"replicas\":2,\"tfReplicaType\":\"PS\"}]},\"status\":{\"conditions\":null,"
         "\"phase\":\"Done\",\"state\":\"Succeeded\",\"reason\":\"\",\"controlPaused\":false,"
         "\"replicaStatuses\":[{\"ReplicasStates\":{\"Succeeded\":1},\"state\":\"Succeeded\","
         "\"tf_replica_type\":\"MASTER\"},{\"ReplicasStates\":{\"Running\":2},\"state\":"
         "\"Running\",\"tf_replica_type\":\"PS\"}]}}",
         KB_TF_API_V1,
         "{\"tfReplicaSpecs\":{\"Master\":{\"replicas\":1,\"template\":" TMPL
         ",\"restartPolicy\":\"ExitCode\"},\"PS\":{\"replicas\":2,\"restartPolicy\":\"ExitCode\"}},"
         "\"runPolicy\":{\"cleanPodPolicy\":\"All\"}}",
         "{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\",\"reason\":\"TFJobCreated\"},"
         "{\"type\":\"Succeeded\",\"status\":\"True\",\"reason\":\"TFJobSucceeded\"}],"
         "\"replicaStatuses\":{\"Master\":{\"succeeded\":1},\"PS\":{\"active\":2}}}"},
        {"v1-to-alpha",
         "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
         "\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":4,\"template\":" TMPL
         "},\"Chief\":{\"template\":" TMPL "}}},\"status\":{\"conditions\":[{\"type\":\"Created\","
         "\"status\":\"True\"},{\"type\":\"Failed\",\"status\":\"True\",\"message\":\"boom\"}],"
         "\"replicaStatuses\":{\"Worker\":{\"failed\":1,\"active\":3}},\"startTime\":"
         "\"2026-01-01T00:00:00Z\"}}",
         KB_TF_API_V1ALPHA1,
         "{\"replicaSpecs\":[{\"template\":" TMPL ",\"tfReplicaType\":\"MASTER\"},{\"replicas\":4,"
         "\"template\":" TMPL ",\"tfReplicaType\":\"WORKER\"}]}",
         "{\"startTime\":\"2026-01-01T00:00:00Z\",\"conditions\":null,\"phase\":\"Failed\","
         "\"state\":\"Failed\",\"reason\":\"boom\",\"replicaStatuses\":[{\"ReplicasStates\":{"
         "\"Running\":3,\"Failed\":1},\"state\":\"Failed\",\"tf_replica_type\":\"WORKER\"}]}"},
        {"beta1-to-alpha",
         "{\"apiVersion\":\"kubeflow.org/v1beta1\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
         "\"cleanPodPolicy\":\"Running\",\"tfReplicaSpecs\":{\"master\":{\"template\":" TMPL "}}}}",
         KB_TF_API_V1ALPHA1,
         "{\"replicaSpecs\":[{\"template\":" TMPL ",\"tfReplicaType\":\"MASTER\"}]}", NULL},
};

static void test_table(gconstpointer data)
{
    const Case *c = data;
    json_object *in = parse(c->in);
    json_object *out = convert(in, c->to);
    g_assert_cmpstr(json_object_get_string(at(out, "apiVersion")), ==, kb_tf_api_version(c->to));
    assert_json(at(out, "spec"), c->spec);
    if (c->status != NULL)
        assert_json(at(out, "status"), c->status);
    json_object_put(in);
    json_object_put(out);
}

/* The seed's v1alpha1 job read through v1 is a v1 job with v1alpha1's semantics. */
static void test_seed_through_v1(void)
{
    json_object *seed = load("seed-v1alpha1.json");
    json_object *v1 = convert(seed, KB_TF_API_V1);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTfJob) job = kb_tfjob_decode(v1, FALSE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(job->api, ==, KB_TF_API_V1);
    g_assert_true(job->specs[KB_TF_MASTER].present);
    g_assert_true(job->specs[KB_TF_WORKER].present);
    g_assert_cmpint(job->specs[KB_TF_PS].replicas, ==, 2);
    g_assert_cmpint(job->specs[KB_TF_MASTER].restart_policy, ==, KB_TF_RESTART_EXIT_CODE);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_ALL);
    /* ... and back, exactly as it was. */
    json_object *back = convert(v1, KB_TF_API_V1ALPHA1);
    g_assert_true(json_object_equal(back, seed));
    json_object_put(seed);
    json_object_put(v1);
    json_object_put(back);
}

/* The version a job was written in, of v1alpha1 and v1, survives every trip between them. */
static void test_written_as(void)
{
    json_object *seed = load("seed-v1alpha1.json");
    json_object *v1 = convert(seed, KB_TF_API_V1);
    g_assert_true(kb_tfconv_written_as_alpha(v1));
    /* read through v1alpha1 and written back through it: still a v1alpha1 job */
    json_object *alpha = convert(v1, KB_TF_API_V1ALPHA1);
    g_assert_true(json_object_equal(alpha, seed));
    json_object *again = convert(alpha, KB_TF_API_V1);
    g_assert_true(kb_tfconv_written_as_alpha(again));
    /* a v1 job read and written back through v1alpha1 stays a v1 job */
    json_object *born = parse("{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\"},"
                              "\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"All\"},"
                              "\"tfReplicaSpecs\":{\"Worker\":{\"restartPolicy\":\"ExitCode\"}}}}");
    g_assert_false(kb_tfconv_written_as_alpha(born));
    json_object *as_alpha = convert(born, KB_TF_API_V1ALPHA1);
    json_object *back = convert(as_alpha, KB_TF_API_V1);
    g_assert_false(kb_tfconv_written_as_alpha(back));
    g_assert_true(json_object_equal(back, born));
    /* through a beta the origin is kept too */
    json_object *beta = convert(v1, KB_TF_API_V1BETA2);
    json_object *v1b = convert(beta, KB_TF_API_V1);
    g_assert_true(kb_tfconv_written_as_alpha(v1b));
    json_object *objs[] = {seed, v1, alpha, again, born, as_alpha, back, beta, v1b};
    for (guint i = 0; i < G_N_ELEMENTS(objs); i++)
        json_object_put(objs[i]);
}

/* A beta job read through v1 decodes with the beta's cleanPodPolicy default made explicit. */
static void test_beta_semantics_through_v1(void)
{
    json_object *in = parse("{\"apiVersion\":\"kubeflow.org/v1beta1\",\"metadata\":{\"name\":\"j\","
                            "\"namespace\":\"d\"},\"spec\":{\"tfReplicaSpecs\":{\"MASTER\":{"
                            "\"template\":" TMPL "}}}}");
    json_object *v1 = convert(in, KB_TF_API_V1);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTfJob) job = kb_tfjob_decode(v1, FALSE, &error);
    g_assert_no_error(error);
    g_assert_null(job->invalid);
    g_assert_cmpint(job->api, ==, KB_TF_API_V1);
    g_assert_cmpint(job->clean_pod_policy, ==, KB_TF_CLEAN_RUNNING);
    json_object_put(in);
    json_object_put(v1);
}

/* The annotation is user-editable: entries of the wrong shape are replaced, never trusted. */
static void test_odd_annotation(void)
{
    json_object *in = parse(
            "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\",\"annotations\":{"
            "\"" KB_TFCONV_ANNOTATION "\":\"{\\\"v1\\\":\\\"x\\\",\\\"v1alpha1\\\":{\\\"to\\\":"
            "7,\\\"spec\\\":[]}}\"}},\"spec\":{\"runPolicy\":{\"schedulingPolicy\":{}},"
            "\"tfReplicaSpecs\":{\"Worker\":{}}}}");
    json_object *alpha = convert(in, KB_TF_API_V1ALPHA1);
    assert_json(at(alpha, "spec"), "{\"replicaSpecs\":[{\"tfReplicaType\":\"WORKER\"}]}");
    json_object *back = convert(alpha, KB_TF_API_V1);
    assert_json(at(back, "spec"), "{\"runPolicy\":{\"schedulingPolicy\":{}},\"tfReplicaSpecs\":{"
                                  "\"Worker\":{}}}");
    json_object_put(in);
    json_object_put(alpha);
    json_object_put(back);
    /* annotations that are not a map are left as they are when there is nothing to keep (between
     * v1 and a beta: v1alpha1 and v1 always keep the version the job was written in) */
    in = parse("{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\",\"annotations\":"
               "\"\"},\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"All\"},\"tfReplicaSpecs\":{"
               "\"Worker\":{\"restartPolicy\":\"ExitCode\"}}}}");
    alpha = convert(in, KB_TF_API_V1BETA1);
    g_assert_cmpstr(json_object_get_string(at(at(alpha, "metadata"), "annotations")), ==, "");
    json_object_put(in);
    json_object_put(alpha);
}

static void test_errors(void)
{
    static const struct {
        const char *in;
        KbTfApi to;
        int code;
        const char *message;
    } errs[] = {
            {"{\"apiVersion\":\"kubeflow.org/"
             "v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},"
             "\"spec\":{\"tfReplicaSpecs\":{\"Evaluator\":{}}}}",
             KB_TF_API_V1ALPHA1, KB_ERROR_INVALID,
             "tfjob d/j: spec.tfReplicaSpecs.Evaluator: kubeflow.org/v1alpha1 has no Evaluator "
             "replicas"},
            {"{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"metadata\":{\"name\":\"j\",\"namespace\":"
             "\"d\"},\"spec\":{\"replicaSpecs\":[{},{\"tfReplicaType\":\"master\"}]}}",
             KB_TF_API_V1, KB_ERROR_INVALID,
             "tfjob d/j: spec.replicaSpecs[1].tfReplicaType: MASTER given twice"},
            {"{\"apiVersion\":\"kubeflow.org/v1alpha1\",\"metadata\":{\"name\":\"j\",\"namespace\":"
             "\"d\"},\"spec\":{\"replicaSpecs\":[{\"tfReplicaType\":\"BOSS\"}]}}",
             KB_TF_API_V1, KB_ERROR_INVALID,
             "tfjob d/j: spec.replicaSpecs[0].tfReplicaType: unknown replica type \"BOSS\""},
            {"{\"apiVersion\":\"kubeflow.org/"
             "v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},"
             "\"spec\":{\"tfReplicaSpecs\":[]}}",
             KB_TF_API_V1ALPHA1, KB_ERROR_DECODE,
             "tfjob d/j: spec.tfReplicaSpecs: expected an object"},
            {"{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\","
             "\"annotations\":{\"" KB_TFCONV_ANNOTATION "\":\"[1\"}},\"spec\":{}}",
             KB_TF_API_V1BETA1, KB_ERROR_DECODE,
             "tfjob d/j: metadata.annotations[\"" KB_TFCONV_ANNOTATION "\"]: not a JSON object"},
            {"{\"apiVersion\":\"kubeflow.org/"
             "v1\",\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},"
             "\"spec\":7}",
             KB_TF_API_V1BETA1, KB_ERROR_DECODE, "tfjob d/j: spec: expected an object"},
            {"[]", KB_TF_API_V1, KB_ERROR_DECODE, "tfjob: expected an object with metadata"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(errs); i++) {
        g_autoptr(GError) error = NULL;
        json_object *in = parse(errs[i].in);
        json_object *out = kb_tfconv_convert(in, errs[i].to, &error);
        g_assert_null(out);
        g_assert_error(error, KB_ERROR, errs[i].code);
        g_assert_cmpstr(error->message, ==, errs[i].message);
        json_object_put(in);
    }
}

/* ---- round trips of random jobs ---------------------------------------------------------------
 */

static const KbTfApi all_apis[] = {KB_TF_API_V1, KB_TF_API_V1BETA2, KB_TF_API_V1BETA1,
                                   KB_TF_API_V1ALPHA1};

static json_object *random_template(GRand *r)
{
    g_autofree char *t = g_strdup_printf(
            "{\"metadata\":{\"annotations\":{\"a\":\"%d\"}},\"spec\":{\"containers\":[{\"name\":"
            "\"tensorflow\",\"image\":\"tf:%d\"}]}}",
            g_rand_int_range(r, 0, 100), g_rand_int_range(r, 0, 100));
    return parse(t);
}

static void maybe_int(GRand *r, json_object *o, const char *key, int max)
{
    if (g_rand_boolean(r))
        json_object_object_add(o, key, json_object_new_int(g_rand_int_range(r, 0, max)));
}

static json_object *random_alpha_spec(GRand *r)
{
    static const char *const types[] = {"MASTER", "WORKER", "PS"};
    json_object *spec = json_object_new_object(), *list = json_object_new_array();
    for (int t = 0; t < 3; t++) {
        if (t > 0 && g_rand_boolean(r))
            continue;
        json_object *rs = json_object_new_object();
        maybe_int(r, rs, "replicas", 9);
        if (t > 0 || g_rand_boolean(r))
            json_object_object_add(rs, "tfReplicaType", json_object_new_string(types[t]));
        maybe_int(r, rs, "tfPort", 3000);
        json_object_object_add(rs, "template", random_template(r));
        json_object_array_add(list, rs);
    }
    json_object_object_add(spec, "replicaSpecs", list);
    if (g_rand_boolean(r))
        json_object_object_add(spec, "RuntimeId", json_object_new_string("ab12"));
    if (g_rand_boolean(r))
        json_object_object_add(spec, "tfImage", json_object_new_string("tf:1.3"));
    return spec;
}

static json_object *random_map_spec(GRand *r, KbTfApi api)
{
    static const char *const keys[] = {"Chief", "worker", "PS", "Evaluator", "MASTER"};
    static const char *const cleans[] = {"All", "Running", "None"};
    static const char *const restarts[] = {"Never", "OnFailure", "ExitCode", "Always"};
    json_object *spec = json_object_new_object(), *map = json_object_new_object();
    for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
        if (g_rand_boolean(r) || (k == 4 && at(map, "Chief") != NULL))
            continue;
        json_object *rs = json_object_new_object();
        maybe_int(r, rs, "replicas", 9);
        if (g_rand_boolean(r))
            json_object_object_add(rs, "restartPolicy",
                                   json_object_new_string(restarts[g_rand_int_range(r, 0, 4)]));
        json_object_object_add(rs, "template", random_template(r));
        json_object_object_add(map, keys[k], rs);
    }
    json_object_object_add(spec, "tfReplicaSpecs", map);
    json_object *rp = api == KB_TF_API_V1 ? json_object_new_object() : spec;
    if (g_rand_boolean(r))
        json_object_object_add(rp, "cleanPodPolicy",
                               json_object_new_string(cleans[g_rand_int_range(r, 0, 3)]));
    maybe_int(r, rp, "backoffLimit", 5);
    maybe_int(r, rp, "ttlSecondsAfterFinished", 500);
    maybe_int(r, rp, "activeDeadlineSeconds", 500);
    if (api == KB_TF_API_V1) {
        if (g_rand_boolean(r))
            json_object_object_add(rp, "schedulingPolicy",
                                   parse("{\"queue\":\"research\",\"minAvailable\":2}"));
        if (g_rand_boolean(r) || json_object_object_length(rp) > 0)
            json_object_object_add(spec, "runPolicy", rp);
        else
            json_object_put(rp);
        if (g_rand_boolean(r))
            json_object_object_add(spec, "successPolicy", json_object_new_string("AllWorkers"));
    }
    if (g_rand_boolean(r))
        json_object_object_add(spec, "schedulerName", json_object_new_string("kube-batchd"));
    return spec;
}

static json_object *random_status(GRand *r, KbTfApi api)
{
    if (g_rand_boolean(r))
        return NULL;
    if (api == KB_TF_API_V1ALPHA1)
        return parse(g_rand_boolean(r)
                             ? "{\"conditions\":null,\"phase\":\"Running\",\"state\":\"Running\","
                               "\"reason\":\"\",\"controlPaused\":false,\"replicaStatuses\":[{"
                               "\"ReplicasStates\":{\"Running\":1},\"state\":\"Running\","
                               "\"tf_replica_type\":\"MASTER\"}]}"
                             : "{\"phase\":\"Failed\",\"state\":\"Failed\",\"reason\":\"x\"}");
    return parse(g_rand_boolean(r)
                         ? "{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\",\"reason\":"
                           "\"TFJobCreated\",\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"},{"
                           "\"type\":\"Running\",\"status\":\"False\"},{\"type\":\"Succeeded\","
                           "\"status\":\"True\"}],\"replicaStatuses\":{\"Worker\":{\"succeeded\":"
                           "2}},\"completionTime\":\"2026-01-01T00:01:00Z\"}"
                         : "{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}");
}

static json_object *random_job(GRand *r, KbTfApi api)
{
    json_object *o = json_object_new_object(), *meta = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string(kb_tf_api_version(api)));
    json_object_object_add(o, "kind", json_object_new_string("TFJob"));
    json_object_object_add(meta, "name", json_object_new_string("j"));
    json_object_object_add(meta, "namespace", json_object_new_string("d"));
    if (g_rand_boolean(r))
        json_object_object_add(meta, "annotations", parse("{\"owner\":\"me\"}"));
    json_object_object_add(o, "metadata", meta);
    json_object_object_add(
            o, "spec", api == KB_TF_API_V1ALPHA1 ? random_alpha_spec(r) : random_map_spec(r, api));
    json_object *status = random_status(r, api);
    if (status != NULL)
        json_object_object_add(o, "status", status);
    return o;
}

static gboolean has_evaluator(json_object *job)
{
    return at(at(at(job, "spec"), "tfReplicaSpecs"), "Evaluator") != NULL;
}

/* @job through @path (a list of versions) and back to its own; NULL when a hop cannot express
 * it (then only v1alpha1 and an Evaluator may be the reason). */
static json_object *through(json_object *job, KbTfApi from, const KbTfApi *path, guint n)
{
    json_object *cur = json_object_get(job);
    for (guint i = 0; i <= n; i++) {
        KbTfApi to = i < n ? path[i] : from;
        g_autoptr(GError) error = NULL;
        json_object *next = kb_tfconv_convert(cur, to, &error);
        if (next == NULL) {
            g_assert_cmpint(to, ==, KB_TF_API_V1ALPHA1);
            g_assert_true(has_evaluator(cur));
            g_assert_nonnull(strstr(error->message, "Evaluator"));
            json_object_put(cur);
            return NULL;
        }
        g_assert_cmpstr(json_object_get_string(at(next, "apiVersion")), ==, kb_tf_api_version(to));
        json_object_put(cur);
        cur = next;
    }
    return cur;
}

/* Property: any job of any version, converted to any other version (and through v1 and a third
 * one) and back, is exactly what it was, annotations included. */
static void test_round_trips(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(20260425);
    guint checked = 0;
    for (int n = 0; n < 300; n++) {
        for (guint a = 0; a < G_N_ELEMENTS(all_apis); a++) {
            KbTfApi from = all_apis[a];
            json_object *job = random_job(r, from);
            for (guint b = 0; b < G_N_ELEMENTS(all_apis); b++) {
                KbTfApi two[2] = {all_apis[b], all_apis[(b + 1 + n) % G_N_ELEMENTS(all_apis)]};
                KbTfApi three[3] = {KB_TF_API_V1, two[0], KB_TF_API_V1};
                json_object *back1 = through(job, from, two, 1);
                json_object *back2 = through(job, from, two, 2);
                json_object *back3 = through(job, from, three, 3);
                json_object *backs[] = {back1, back2, back3};
                for (guint i = 0; i < G_N_ELEMENTS(backs); i++) {
                    if (backs[i] == NULL)
                        continue;
                    if (!json_object_equal(backs[i], job))
                        g_error("round trip %u of %s via %s: got %s\nwant %s", i,
                                kb_tf_api_version(from), kb_tf_api_version(two[0]),
                                json_object_to_json_string(backs[i]),
                                json_object_to_json_string(job));
                    checked++;
                    json_object_put(backs[i]);
                }
            }
            json_object_put(job);
        }
    }
    g_assert_cmpuint(checked, >, 300 * 4 * 4 * 2);
}

/* A job changed in the other version comes back field by field, and what only its own version
 * can say (v1alpha1's RuntimeId and tfPort, v1's schedulingPolicy) is kept. */
static void test_changed_in_other_version(void)
{
    json_object *seed = load("seed-v1alpha1.json");
    json_object_object_add(at(seed, "spec"), "RuntimeId", json_object_new_string("76no"));
    json_object_object_add(json_object_array_get_idx(at(at(seed, "spec"), "replicaSpecs"), 2),
                           "tfPort", json_object_new_int(2223));
    json_object *v1 = convert(seed, KB_TF_API_V1);
    json_object *spec = at(v1, "spec");
    json_object_object_add(at(at(spec, "tfReplicaSpecs"), "Worker"), "replicas",
                           json_object_new_int(3));
    json_object *alpha = convert(v1, KB_TF_API_V1ALPHA1);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTfJob) job = kb_tfjob_decode(alpha, FALSE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(job->api, ==, KB_TF_API_V1ALPHA1);
    g_assert_cmpint(job->specs[KB_TF_WORKER].replicas, ==, 3);
    g_assert_cmpint(job->specs[KB_TF_PS].replicas, ==, 2);
    g_assert_cmpstr(job->runtime_id, ==, "76no");
    g_assert_cmpint(job->specs[KB_TF_PS].port, ==, 2223);
    json_object_put(seed);
    json_object_put(v1);
    json_object_put(alpha);

    json_object *v1q = parse("{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"j\"},"
                             "\"spec\":{\"runPolicy\":{\"schedulingPolicy\":{\"queue\":\"q\"}},"
                             "\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":1}}}}");
    json_object *beta = convert(v1q, KB_TF_API_V1BETA1);
    json_object_object_add(at(at(at(beta, "spec"), "tfReplicaSpecs"), "Worker"), "replicas",
                           json_object_new_int(5));
    json_object *again = convert(beta, KB_TF_API_V1);
    assert_json(at(again, "spec"),
                "{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":5}},\"runPolicy\":{"
                "\"cleanPodPolicy\":\"None\",\"schedulingPolicy\":{\"queue\":\"q\"}}}");
    json_object_put(v1q);
    json_object_put(beta);
    json_object_put(again);
}

/* ---- ConversionReview -------------------------------------------------------------------------
 */

static json_object *review(const char *body, GError **error)
{
    return kb_tfconv_review(body, strlen(body), error);
}

static void test_review(void)
{
    g_autoptr(GError) error = NULL;
    json_object *resp = review(
            "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
            "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"desiredAPIVersion\":"
            "\"kubeflow.org/v1\",\"objects\":[{\"apiVersion\":\"kubeflow.org/v1beta1\",\"kind\":"
            "\"TFJob\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"tfReplicaSpecs\":{}}},{"
            "\"apiVersion\":\"kubeflow.org/"
            "v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"b\"}}]}}",
            &error);
    g_assert_no_error(error);
    assert_json(
            resp,
            "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
            "\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"convertedObjects\":"
            "[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"a\"},"
            "\"spec\":{\"tfReplicaSpecs\":{},\"runPolicy\":{\"cleanPodPolicy\":\"Running\"}}},"
            "{\"apiVersion\":\"kubeflow.org/"
            "v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"b\"}}],"
            "\"result\":{\"status\":\"Success\"}}}");
    json_object_put(resp);

    /* One object that cannot be converted fails the whole review, naming it and the field. */
    resp = review("{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":\"ConversionReview\","
                  "\"request\":{\"uid\":\"u1\",\"desiredAPIVersion\":\"kubeflow.org/v1alpha1\","
                  "\"objects\":[{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"e\","
                  "\"namespace\":\"ns\"},\"spec\":{\"tfReplicaSpecs\":{\"Evaluator\":{}}}}]}}",
                  &error);
    g_assert_no_error(error);
    assert_json(resp, "{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":"
                      "\"ConversionReview\",\"response\":{\"uid\":\"u1\",\"convertedObjects\":[],"
                      "\"result\":{\"status\":\"Failure\",\"message\":\"tfjob ns/e: "
                      "spec.tfReplicaSpecs.Evaluator: kubeflow.org/v1alpha1 has no Evaluator "
                      "replicas\"}}}");
    json_object_put(resp);

    resp = review("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
                  "\"request\":{\"uid\":\"u2\",\"desiredAPIVersion\":\"kubeflow.org/v2\","
                  "\"objects\":[]}}",
                  &error);
    g_assert_no_error(error);
    g_assert_cmpstr(json_object_get_string(at(at(at(resp, "response"), "result"), "message")), ==,
                    "request.desiredAPIVersion: \"kubeflow.org/v2\" is not a TFJob version "
                    "(kubeflow.org/v1, v1beta2, v1beta1, v1alpha1)");
    json_object_put(resp);
}

typedef struct {
    const char *name;
    const char *body;
    int code;
    const char *message;
} BadReview;

#define REVIEW_HEAD "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","

static const BadReview bad_reviews[] = {
        {"empty", "", KB_ERROR_DECODE, "ConversionReview: truncated JSON"},
        {"truncated", REVIEW_HEAD "\"request\":{", KB_ERROR_DECODE,
         "ConversionReview: truncated JSON"},
        {"trailing", REVIEW_HEAD "\"request\":{}} {}", KB_ERROR_DECODE,
         "ConversionReview: data after the document at byte 80"},
        {"not-review", "{\"kind\":\"AdmissionReview\"}", KB_ERROR_DECODE,
         "not a ConversionReview (apiextensions.k8s.io/v1 or v1beta1)"},
        {"no-request", REVIEW_HEAD "\"request\":7}", KB_ERROR_DECODE,
         "ConversionReview: request: missing"},
        {"no-uid", REVIEW_HEAD "\"request\":{\"objects\":[]}}", KB_ERROR_DECODE,
         "ConversionReview: request.uid: missing"},
        {"no-desired", REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"objects\":[]}}", KB_ERROR_DECODE,
         "ConversionReview: request.desiredAPIVersion: missing"},
        {"objects-not-list",
         REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"desiredAPIVersion\":\"kubeflow.org/v1\","
                     "\"objects\":{}}}",
         KB_ERROR_DECODE, "ConversionReview: request.objects: expected a list"},
};

static void test_review_bad(gconstpointer data)
{
    const BadReview *b = data;
    g_autoptr(GError) error = NULL;
    json_object *resp = review(b->body, &error);
    g_assert_null(resp);
    g_assert_error(error, KB_ERROR, b->code);
    g_assert_cmpstr(error->message, ==, b->message);
}

static char *review_with(const char *uid, guint n_objects, guint depth)
{
    GString *s = g_string_new(REVIEW_HEAD "\"request\":{\"uid\":\"");
    g_string_append_printf(s, "%s\",\"desiredAPIVersion\":\"kubeflow.org/v1\",\"objects\":[", uid);
    for (guint i = 0; i < n_objects; i++)
        g_string_append_printf(s, "%s{\"metadata\":{\"name\":\"j%u\"}}", i > 0 ? "," : "", i);
    g_string_append(s, "]");
    if (depth > 0)
        g_string_append(s, ",\"x\":");
    for (guint i = 0; i < depth; i++)
        g_string_append(s, "[");
    for (guint i = 0; i < depth; i++)
        g_string_append(s, "]");
    g_string_append(s, "}}");
    return g_string_free(s, FALSE);
}

/* Each limit: the bound itself passes, one past it fails with KB_ERROR_LIMIT. */
static void test_review_limits(void)
{
    g_autofree char *uid_ok = g_strnfill(KB_TFCONV_MAX_UID, 'u');
    g_autofree char *uid_long = g_strnfill(KB_TFCONV_MAX_UID + 1, 'u');
    g_autofree char *ok = review_with(uid_ok, KB_TFCONV_MAX_OBJECTS, 0);
    g_autofree char *too_many = review_with("u", KB_TFCONV_MAX_OBJECTS + 1, 0);
    g_autofree char *long_uid = review_with(uid_long, 1, 0);
    /* The document's own nesting is 3 (review, request, objects): the bound is reached with
     * KB_TFCONV_MAX_DEPTH - 2 more lists under request. */
    g_autofree char *deep_ok = review_with("u", 1, KB_TFCONV_MAX_DEPTH - 2);
    g_autofree char *too_deep = review_with("u", 1, KB_TFCONV_MAX_DEPTH - 1);
    g_autoptr(GError) error = NULL;

    json_object *resp = review(ok, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(json_object_array_length(at(at(resp, "response"), "convertedObjects")), ==,
                     KB_TFCONV_MAX_OBJECTS);
    json_object_put(resp);
    resp = review(deep_ok, &error);
    g_assert_no_error(error);
    json_object_put(resp);

    g_assert_null(review(too_many, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_nonnull(strstr(error->message, "request.objects: 10001 objects, more than 10000"));
    g_clear_error(&error);
    g_assert_null(review(long_uid, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_nonnull(strstr(error->message, "request.uid: 129 characters, more than 128"));
    g_clear_error(&error);
    g_assert_null(review(too_deep, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_cmpstr(error->message, ==, "ConversionReview: nested more than 64 deep");
    g_clear_error(&error);

    /* The body size is checked before parsing: the length alone decides. */
    g_autofree char *big = g_strnfill(KB_TFCONV_MAX_BODY + 1, ' ');
    g_assert_null(kb_tfconv_review(big, KB_TFCONV_MAX_BODY + 1, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_cmpstr(error->message, ==, "ConversionReview: 3145729 bytes, more than 3145728");
    g_clear_error(&error);
    memcpy(big, ok, strlen(ok));
    resp = kb_tfconv_review(big, KB_TFCONV_MAX_BODY, &error);
    g_assert_no_error(error);
    json_object_put(resp);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/kube/tfconv/table/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_table);
    }
    g_test_add_func("/kube/tfconv/seed-v1alpha1-through-v1", test_seed_through_v1);
    g_test_add_func("/kube/tfconv/beta-semantics-through-v1", test_beta_semantics_through_v1);
    g_test_add_func("/kube/tfconv/written-as", test_written_as);
    g_test_add_func("/kube/tfconv/errors", test_errors);
    g_test_add_func("/kube/tfconv/odd-annotation", test_odd_annotation);
    g_test_add_func("/kube/tfconv/round-trips", test_round_trips);
    g_test_add_func("/kube/tfconv/changed-in-other-version", test_changed_in_other_version);
    g_test_add_func("/kube/tfconv/review/answer", test_review);
    for (guint i = 0; i < G_N_ELEMENTS(bad_reviews); i++) {
        g_autofree char *path = g_strdup_printf("/kube/tfconv/review/bad/%s", bad_reviews[i].name);
        g_test_add_data_func(path, &bad_reviews[i], test_review_bad);
    }
    g_test_add_func("/kube/tfconv/review/limits", test_review_limits);
    return g_test_run();
}
