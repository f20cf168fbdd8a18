/*
 * kb-apiserver calling a CRD's conversion webhook as kube-apiserver does (testbed/apiserver/
 * kas-convert): the TFJob CRD with strategy Webhook and storage version v1, a webhook over HTTPS
 * verified against a CA of this run that answers with kube/kb-tfconv (tf-operator's code), or
 * misbehaves on purpose: down, slow, garbage, a wrong uid, a renamed object, changed metadata.
 */
#include <curl/curl.h>
#include <glib.h>
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-tfconv.h"
#include "testbed/apiserver/kas-convert.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-server.h"
#include "tests/lib/kb-test-pki.h"
#include "tests/lib/kb-test-server.h"

typedef enum {
    MODE_OK,
    MODE_GARBAGE,
    MODE_WRONG_UID,
    MODE_RENAME,
    MODE_METADATA,
    MODE_FAILURE,
    MODE_HTTP_500,
    MODE_SLOW,
    MODE_WRONG_VERSION,
    MODE_TOO_FEW,
} Mode;

/* What the webhook does and what it saw (shared with its server thread). */
typedef struct {
    GMutex lock;
    Mode mode;
    guint reviews;
    guint last_objects;
    char *last_desired;
} Hook;

typedef struct {
    KbTestPki *pki;
    KbTestServer *webhook;
    Hook hook;
    KasServer *srv;
} Fixture;

/* ---- the webhook ----------------------------------------------------------------------------- */

static void tamper(Mode mode, json_object *ans)
{
    json_object *objs = kas_json_get(ans, "response.convertedObjects");
    for (gsize i = 0;
         json_object_is_type(objs, json_type_array) && i < json_object_array_length(objs); i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        json_object *meta = kas_json_ensure_object(o, "metadata");
        if (mode == MODE_RENAME)
            kas_json_set_string(meta, "name", "someone-else");
        if (mode == MODE_WRONG_VERSION)
            kas_json_set_string(o, "apiVersion", "kubeflow.org/v1beta1");
        if (mode == MODE_METADATA) {
            kas_json_set_string(kas_json_ensure_object(meta, "labels"), "converted", "yes");
            json_object_object_add(meta, "generation", json_object_new_int(99));
            kas_json_set_string(meta, "creationTimestamp", "1999-01-01T00:00:00Z");
        }
    }
    if (mode == MODE_WRONG_UID)
        kas_json_set_string(kas_json_get(ans, "response"), "uid", "not-the-uid");
    if (mode == MODE_TOO_FEW && json_object_array_length(objs) > 0)
        json_object_array_del_idx(objs, 0, 1);
}

static KbTestResponse *on_convert(const KbTestRequest *req, gpointer data)
{
    Hook *h = data;
    json_object *rq = json_tokener_parse(req->body);
    g_mutex_lock(&h->lock);
    Mode mode = h->mode;
    h->reviews++;
    h->last_objects = (guint)json_object_array_length(kas_json_get(rq, "request.objects"));
    g_free(h->last_desired);
    h->last_desired = g_strdup(kas_json_get_string(rq, "request.desiredAPIVersion"));
    g_mutex_unlock(&h->lock);
    json_object_put(rq);
    if (mode == MODE_HTTP_500)
        return kb_test_response_new_body(500, "upstream exploded");
    if (mode == MODE_GARBAGE)
        return kb_test_response_new_body(200, "<html>hello</html>");
    g_autoptr(GError) error = NULL;
    json_object *ans = kb_tfconv_review(req->body, req->body_len, &error);
    if (ans == NULL)
        return kb_test_response_new_body(400, error->message);
    if (mode == MODE_FAILURE) {
        json_object *result = kas_json_ensure_object(kas_json_get(ans, "response"), "result");
        kas_json_set_string(result, "status", "Failure");
        kas_json_set_string(result, "message", "tfjob default/j: spec: not today");
        json_object_object_del(kas_json_get(ans, "response"), "convertedObjects");
    }
    tamper(mode, ans);
    g_autofree char *text = kas_json_dump(ans);
    json_object_put(ans);
    KbTestResponse *resp = kb_test_response_new_body(200, text);
    if (mode == MODE_SLOW)
        kb_test_response_set_delay(resp, 4000);
    return resp;
}

static void set_mode(Fixture *f, Mode mode)
{
    g_mutex_lock(&f->hook.lock);
    f->hook.mode = mode;
    g_mutex_unlock(&f->hook.lock);
}

static guint reviews(Fixture *f)
{
    g_mutex_lock(&f->hook.lock);
    guint n = f->hook.reviews;
    g_mutex_unlock(&f->hook.lock);
    return n;
}

/* ---- HTTP to kb-apiserver ------------------------------------------------------------------- */

typedef struct {
    long code;
    char *body;
    json_object *json;
} Resp;

static void resp_free(Resp *r)
{
    g_free(r->body);
    json_object_put(r->json);
    g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Resp, resp_free)

static size_t collect(char *ptr, size_t size, size_t n, void *data)
{
    g_string_append_len(data, ptr, (gssize)(size * n));
    return size * n;
}

static Resp *http(Fixture *f, const char *method, const char *path, const char *ctype,
                  const char *body)
{
    Resp *r = g_new0(Resp, 1);
    GString *out = g_string_new(NULL);
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kas_server_url(f->srv), path, NULL);
    g_autofree char *ct =
            g_strdup_printf("Content-Type: %s", ctype != NULL ? ctype : "application/json");
    struct curl_slist *hdrs = curl_slist_append(NULL, ct);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (body != NULL)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    g_assert_cmpint(curl_easy_perform(c), ==, CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    r->body = g_string_free(out, FALSE);
    r->json = json_tokener_parse(r->body);
    return r;
}

static Resp *get(Fixture *f, const char *path)
{
    return http(f, "GET", path, NULL, NULL);
}

static const char *js(Resp *r, const char *dotted)
{
    return kas_json_get_string(r->json, dotted);
}

static void assert_code(Resp *r, long code)
{
    if (r->code != code)
        g_test_message("answer: %s", r->body);
    g_assert_cmpint(r->code, ==, code);
}

/* A failed conversion as kube-apiserver answers it: 500, a Status without a reason, @prefix. */
static void assert_conversion_failed(Resp *r, const char *prefix)
{
    assert_code(r, 500);
    g_assert_cmpstr(js(r, "kind"), ==, "Status");
    g_assert_cmpstr(js(r, "status"), ==, "Failure");
    g_assert_null(kas_json_get(r->json, "reason"));
    g_assert_cmpint(json_object_get_int(kas_json_get(r->json, "code")), ==, 500);
    if (!g_str_has_prefix(js(r, "message"), prefix))
        g_test_message("message: %s", js(r, "message"));
    g_assert_true(g_str_has_prefix(js(r, "message"), prefix));
}

/* ---- set-up ------------------------------------------------------------------------------------
 */

static char *src_path(const char *rel)
{
    const char *top = g_getenv("KB_SRCDIR");
    return g_build_filename(top != NULL ? top : ".", rel, NULL);
}

static json_object *yaml_file(const char *rel)
{
    g_autofree char *file = src_path(rel);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(file, &text, &len, NULL));
    g_autoptr(GError) error = NULL;
    json_object *j = kas_yaml_to_json(text, len, &error);
    g_assert_no_error(error);
    return j;
}

static char *ca_bundle(Fixture *f, const char *file)
{
    g_autofree char *pem = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(kb_test_pki_path(f->pki, file), &pem, &len, NULL));
    return g_base64_encode((const guchar *)pem, len);
}

/* The shipped TFJob CRD with a webhook at @client_config (stolen). */
static char *crd_with(json_object *client_config)
{
    json_object *crd = yaml_file("deploy/base/crds/tfjob.yaml");
    json_object *conv = json_object_new_object();
    kas_json_set_string(conv, "strategy", "Webhook");
    json_object *wh = json_object_new_object();
    json_object_object_add(wh, "clientConfig", client_config);
    json_object *rv = json_object_new_array();
    json_object_array_add(rv, json_object_new_string("v1"));
    json_object_object_add(wh, "conversionReviewVersions", rv);
    json_object_object_add(conv, "webhook", wh);
    json_object_object_add(kas_json_get(crd, "spec"), "conversion", conv);
    char *s = kas_json_dump(crd);
    json_object_put(crd);
    return s;
}

static json_object *url_config(Fixture *f, const char *ca_file)
{
    json_object *cc = json_object_new_object();
    g_autofree char *url = g_strdup_printf("%s/convert", kb_test_server_url(f->webhook));
    kas_json_set_string(cc, "url", url);
    g_autofree char *ca = ca_bundle(f, ca_file);
    kas_json_set_string(cc, "caBundle", ca);
    return cc;
}

static void start(Fixture *f, guint timeout_ms, gboolean map_service)
{
    g_mutex_init(&f->hook.lock);
    f->pki = kb_test_pki_new();
    f->webhook = kb_test_server_new(kb_test_pki_path(f->pki, "server.pem"),
                                    kb_test_pki_path(f->pki, "server-key.pem"), NULL);
    kb_test_server_set_handler(f->webhook, "POST", "/convert", on_convert, &f->hook, NULL);
    KasServerOptions o;
    kas_server_options_init(&o);
    g_autofree char *addr = g_strdup_printf("kube-batchd/tf-operator-webhook:443=127.0.0.1:%u",
                                            kb_test_server_port(f->webhook));
    const char *addrs[] = {addr, NULL};
    o.service_addresses = map_service ? addrs : NULL;
    o.conversion_timeout_ms = timeout_ms;
    g_autoptr(GError) error = NULL;
    f->srv = kas_server_new(&o, &error);
    g_assert_no_error(error);
}

static void setup(Fixture *f, gconstpointer data)
{
    start(f, GPOINTER_TO_UINT(data), FALSE);
    g_autofree char *crd = crd_with(url_config(f, "ca.pem"));
    g_autoptr(Resp) r =
            http(f, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, crd);
    assert_code(r, 201);
}

static void teardown(Fixture *f, gconstpointer data)
{
    kas_server_free(f->srv);
    kb_test_server_free(f->webhook);
    kb_test_pki_free(f->pki);
    g_free(f->hook.last_desired);
    g_mutex_clear(&f->hook.lock);
}

static const char JOBS_ALPHA[] = "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs";
static const char JOBS_V1[] = "/apis/kubeflow.org/v1/namespaces/default/tfjobs";

static char *seed_job(const char *name)
{
    json_object *j = yaml_file("tests/data/apiserver/tfjob-seed.yaml");
    kas_json_set_string(kas_json_get(j, "metadata"), "name", name);
    char *s = kas_json_dump(j);
    json_object_put(j);
    return s;
}

static void create_seed(Fixture *f, const char *name)
{
    g_autofree char *body = seed_job(name);
    g_autoptr(Resp) r = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_code(r, 201);
}

/* The stored JSON of default/@name (new reference). */
static json_object *stored(Fixture *f, const char *name)
{
    KasStore *st = kas_server_store(f->srv);
    kas_store_lock(st);
    KasRes *res = kas_store_find_locked(st, "kubeflow.org", "v1", "tfjobs");
    KasObj *o = kas_store_get_locked(st, res, "default", name);
    json_object *j = o != NULL ? kas_obj_parse(o) : NULL;
    kas_store_unlock(st);
    g_assert_nonnull(j);
    return j;
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* A v1alpha1 job is stored as v1 and read back in whichever version is asked for. */
static void test_read_write(Fixture *f, gconstpointer data)
{
    g_autofree char *body = seed_job("example-job");
    g_autoptr(Resp) cr = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_code(cr, 201);
    g_assert_cmpstr(js(cr, "apiVersion"), ==, "kubeflow.org/v1alpha1");
    g_assert_true(
            json_object_is_type(kas_json_get(cr->json, "spec.replicaSpecs"), json_type_array));
    json_object *st = stored(f, "example-job");
    g_assert_cmpstr(kas_json_get_string(st, "apiVersion"), ==, "kubeflow.org/v1");
    g_assert_nonnull(kas_json_get(st, "spec.tfReplicaSpecs.Master"));
    g_assert_null(kas_json_get(st, "spec.replicaSpecs"));
    json_object_put(st);

    guint before = reviews(f);
    g_autoptr(Resp) v1 = get(f, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/example-job");
    assert_code(v1, 200);
    g_assert_cmpstr(js(v1, "apiVersion"), ==, "kubeflow.org/v1");
    g_assert_cmpint(json_object_get_int(kas_json_get(v1->json, "spec.tfReplicaSpecs.PS.replicas")),
                    ==, 2);
    g_assert_cmpuint(reviews(f), ==, before); /* already in v1: no review */

    g_autoptr(Resp) a = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/example-job");
    assert_code(a, 200);
    g_assert_cmpstr(js(a, "apiVersion"), ==, "kubeflow.org/v1alpha1");
    g_assert_true(json_object_is_type(kas_json_get(a->json, "spec.replicaSpecs"), json_type_array));
    g_assert_cmpuint(reviews(f), ==, before + 1);
    g_assert_cmpstr(f->hook.last_desired, ==, "kubeflow.org/v1alpha1");

    g_autoptr(Resp) b1 = get(f, "/apis/kubeflow.org/v1beta1/namespaces/default/tfjobs/example-job");
    assert_code(b1, 200);
    g_assert_cmpstr(js(b1, "apiVersion"), ==, "kubeflow.org/v1beta1");
    g_assert_nonnull(kas_json_get(b1->json, "spec.tfReplicaSpecs.Master"));
    g_assert_cmpstr(js(b1, "metadata.uid"), ==, js(v1, "metadata.uid"));
}

/* A list is converted with one review holding every item not in the wanted version. */
static void test_list_one_review(Fixture *f, gconstpointer data)
{
    create_seed(f, "a");
    create_seed(f, "b");
    create_seed(f, "c");
    guint before = reviews(f);
    g_autoptr(Resp) l = get(f, JOBS_ALPHA);
    assert_code(l, 200);
    g_assert_cmpstr(js(l, "kind"), ==, "TFJobList");
    g_assert_cmpstr(js(l, "apiVersion"), ==, "kubeflow.org/v1alpha1");
    json_object *items = kas_json_get(l->json, "items");
    g_assert_cmpuint(json_object_array_length(items), ==, 3);
    for (gsize i = 0; i < 3; i++) {
        json_object *it = json_object_array_get_idx(items, i);
        g_assert_cmpstr(kas_json_get_string(it, "apiVersion"), ==, "kubeflow.org/v1alpha1");
        g_assert_true(json_object_is_type(kas_json_get(it, "spec.replicaSpecs"), json_type_array));
    }
    g_assert_cmpuint(reviews(f), ==, before + 1);
    g_assert_cmpuint(f->hook.last_objects, ==, 3);
    g_autoptr(Resp) l1 = get(f, JOBS_V1);
    assert_code(l1, 200);
    g_assert_cmpuint(reviews(f), ==, before + 1);
    /* the table kubectl asks for shows the columns of the version read, from converted objects */
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kas_server_url(f->srv), JOBS_ALPHA, NULL);
    GString *out = g_string_new(NULL);
    struct curl_slist *h =
            curl_slist_append(NULL, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    g_assert_cmpint(curl_easy_perform(c), ==, CURLE_OK);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    json_object *t = json_tokener_parse(out->str);
    g_assert_cmpstr(kas_json_get_string(t, "kind"), ==, "Table");
    g_assert_cmpuint(json_object_array_length(kas_json_get(t, "rows")), ==, 3);
    g_assert_cmpstr(
            kas_json_get_string(json_object_array_get_idx(kas_json_get(t, "columnDefinitions"), 1),
                                "name"),
            ==, "Phase");
    json_object_put(t);
    g_string_free(out, TRUE);
}

/* Objects are converted before they are written: a status written through v1alpha1 arrives in
 * v1's shape; a merge patch through v1alpha1 is applied to the v1alpha1 object. */
static void test_update_and_patch(Fixture *f, gconstpointer data)
{
    create_seed(f, "p");
    g_autoptr(Resp) r =
            http(f, "PATCH", "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/p",
                 "application/merge-patch+json",
                 "{\"metadata\":{\"labels\":{\"team\":\"ml\"}},\"spec\":{\"runtimeId\":\"abc\"}}");
    assert_code(r, 200);
    g_assert_cmpstr(js(r, "apiVersion"), ==, "kubeflow.org/v1alpha1");
    g_assert_cmpstr(js(r, "metadata.labels.team"), ==, "ml");
    g_assert_cmpstr(js(r, "spec.runtimeId"), ==, "abc");
    json_object *st = stored(f, "p");
    g_assert_cmpstr(kas_json_get_string(st, "apiVersion"), ==, "kubeflow.org/v1");
    g_assert_cmpstr(kas_json_get_string(st, "metadata.labels.team"), ==, "ml");
    g_assert_nonnull(kas_json_get(st, "spec.tfReplicaSpecs"));
    json_object_put(st);
    /* PUT through v1alpha1 with the object read through v1alpha1 */
    g_autoptr(Resp) a = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/p");
    json_object *status = json_object_new_object();
    kas_json_set_string(status, "phase", "Running");
    kas_json_set_string(status, "state", "Running");
    json_object_object_add(a->json, "status", status);
    g_autofree char *put = kas_json_dump(a->json);
    g_autoptr(Resp) u = http(
            f, "PUT", "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/p/status", NULL, put);
    assert_code(u, 200);
    g_assert_cmpstr(js(u, "status.phase"), ==, "Running");
    st = stored(f, "p");
    g_assert_cmpstr(kas_json_get_string(st, "apiVersion"), ==, "kubeflow.org/v1");
    g_assert_true(json_object_is_type(kas_json_get(st, "status.conditions"), json_type_array));
    json_object_put(st);
    /* a body naming another version than the URL gets the usual 400, no review */
    guint before = reviews(f);
    g_autofree char *body = seed_job("q");
    g_autoptr(Resp) bad = http(f, "POST", JOBS_V1, NULL, body);
    assert_code(bad, 400);
    g_assert_cmpuint(reviews(f), ==, before);
}

/* A watch converts each event; a failure is an ERROR event and the end of the watch. */
static size_t watch_body(char *ptr, size_t size, size_t n, void *data)
{
    g_string_append_len(data, ptr, (gssize)(size * n));
    return size * n;
}

typedef struct {
    Fixture *f;
    char *path;
    GString *out;
    gint done;
} WatchThread;

static gpointer watch_thread(gpointer data)
{
    WatchThread *w = data;
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kas_server_url(w->f->srv), w->path, NULL);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w->out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    g_atomic_int_set(&w->done, 1);
    return NULL;
}

static void test_watch(Fixture *f, gconstpointer data)
{
    create_seed(f, "w");
    WatchThread w = {.f = f,
                     .path = g_strdup_printf("%s?watch=true&timeoutSeconds=20", JOBS_ALPHA),
                     .out = g_string_new(NULL)};
    GThread *t = g_thread_new("watch", watch_thread, &w);
    /* the initial ADDED event, in v1alpha1 */
    for (guint i = 0; i < 2000 && strchr(w.out->str, '\n') == NULL; i++)
        g_usleep(5000);
    g_assert_nonnull(strstr(w.out->str, "\"type\":\"ADDED\""));
    g_assert_nonnull(strstr(w.out->str, "\"apiVersion\":\"kubeflow.org/v1alpha1\""));
    g_assert_nonnull(strstr(w.out->str, "\"replicaSpecs\":["));
    /* the webhook breaks; the next change ends the watch with an ERROR event */
    set_mode(f, MODE_HTTP_500);
    g_autoptr(Resp) r =
            http(f, "PATCH", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/w",
                 "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
    assert_code(r, 200);
    g_thread_join(t);
    g_assert_true(g_atomic_int_get(&w.done));
    g_auto(GStrv) lines = g_strsplit(g_strstrip(w.out->str), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 2);
    json_object *ev = json_tokener_parse(lines[1]);
    g_assert_cmpstr(kas_json_get_string(ev, "type"), ==, "ERROR");
    g_assert_cmpstr(kas_json_get_string(ev, "object.kind"), ==, "Status");
    g_assert_cmpint(json_object_get_int(kas_json_get(ev, "object.code")), ==, 500);
    g_assert_true(g_str_has_prefix(kas_json_get_string(ev, "object.message"),
                                   "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: "
                                   "an error on the server (\"upstream exploded\")"));
    json_object_put(ev);
    g_string_free(w.out, TRUE);
    g_free(w.path);
}

/* A webhook that is down: reads and writes of TFJobs in other versions fail with kube-apiserver's
 * message; v1 (the storage version) and other resources are unaffected. */
static void test_down(Fixture *f, gconstpointer data)
{
    create_seed(f, "d");
    guint port = kb_test_server_port(f->webhook);
    g_clear_pointer(&f->webhook, kb_test_server_free);
    g_autofree char *want = g_strdup_printf(
            "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: Post "
            "\"https://127.0.0.1:%u/convert?timeout=30s\": dial tcp 127.0.0.1:%u: connect: "
            "connection refused",
            port, port);
    g_autoptr(Resp) g = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/d");
    assert_conversion_failed(g, want);
    g_autoptr(Resp) l = get(f, JOBS_ALPHA);
    assert_conversion_failed(l, want);
    g_autofree char *body = seed_job("e");
    g_autoptr(Resp) c = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_conversion_failed(
            c, "conversion webhook for kubeflow.org/v1alpha1, Kind=TFJob failed: Post");
    g_autoptr(Resp) v1 = get(f, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/d");
    assert_code(v1, 200);
    g_autoptr(Resp) ns = http(f, "POST", "/api/v1/namespaces/default/configmaps", NULL,
                              "{\"metadata\":{\"name\":\"cm\"},\"data\":{\"a\":\"b\"}}");
    assert_code(ns, 201);
}

typedef struct {
    Mode mode;
    const char *message; /* prefix; %u is the webhook's port */
} Misbehaviour;

static const Misbehaviour misbehaviours[] = {
        {MODE_GARBAGE, "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: couldn't get "
                       "version/kind; json parse error: "},
        {MODE_WRONG_UID, "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: expected "
                         "response.uid=\""},
        {MODE_RENAME, "conversion webhook for kubeflow.org/v1, Kind=TFJob returned invalid object: "
                      "must have the same name: m != someone-else"},
        {MODE_FAILURE, "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: tfjob "
                       "default/j: spec: not today"},
        {MODE_HTTP_500,
         "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: an error on the "
         "server (\"upstream exploded\") has prevented the request from succeeding"},
        {MODE_WRONG_VERSION, "conversion webhook for kubeflow.org/v1, Kind=TFJob returned invalid "
                             "object at index 0: invalid groupVersion (expected "
                             "kubeflow.org/v1alpha1, received kubeflow.org/v1beta1)"},
        {MODE_TOO_FEW, "conversion webhook for kubeflow.org/v1, Kind=TFJob returned 0 objects, "
                       "expected 1"},
};

static void test_misbehaving(Fixture *f, gconstpointer data)
{
    create_seed(f, "m");
    for (guint i = 0; i < G_N_ELEMENTS(misbehaviours); i++) {
        set_mode(f, misbehaviours[i].mode);
        g_autoptr(Resp) g = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/m");
        assert_conversion_failed(g, misbehaviours[i].message);
    }
    /* in a list the index is given */
    set_mode(f, MODE_RENAME);
    g_autoptr(Resp) l = get(f, JOBS_ALPHA);
    assert_conversion_failed(l,
                             "conversion webhook for kubeflow.org/v1, Kind=TFJob returned invalid "
                             "converted object at index 1: must have the same name");
}

/* Of the metadata a webhook returns only labels and annotations are taken. */
static void test_metadata(Fixture *f, gconstpointer data)
{
    create_seed(f, "md");
    g_autoptr(Resp) v1 = get(f, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/md");
    set_mode(f, MODE_METADATA);
    g_autoptr(Resp) a = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/md");
    assert_code(a, 200);
    g_assert_cmpstr(js(a, "metadata.labels.converted"), ==, "yes");
    g_assert_cmpstr(js(a, "metadata.creationTimestamp"), ==, js(v1, "metadata.creationTimestamp"));
    g_assert_cmpint(json_object_get_int(kas_json_get(a->json, "metadata.generation")), ==,
                    json_object_get_int(kas_json_get(v1->json, "metadata.generation")));
}

/* A webhook slower than the timeout. */
static void test_slow(Fixture *f, gconstpointer data)
{
    create_seed(f, "s");
    set_mode(f, MODE_SLOW);
    g_autoptr(Resp) g = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/s");
    g_autofree char *want = g_strdup_printf(
            "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: Post "
            "\"https://127.0.0.1:%u/convert?timeout=1500ms\": context deadline exceeded",
            kb_test_server_port(f->webhook));
    assert_conversion_failed(g, want);
}

/* The TFJob CRD with its webhook given as Service kube-batchd/tf-operator-webhook. */
static void service_crd(Fixture *f)
{
    json_object *cc = json_object_new_object();
    json_object *svc = json_object_new_object();
    kas_json_set_string(svc, "namespace", "kube-batchd");
    kas_json_set_string(svc, "name", "tf-operator-webhook");
    kas_json_set_string(svc, "path", "/convert");
    json_object_object_add(cc, "service", svc);
    g_autofree char *ca = ca_bundle(f, "ca.pem");
    kas_json_set_string(cc, "caBundle", ca);
    g_autofree char *crd = crd_with(cc);
    g_autoptr(Resp) r =
            http(f, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, crd);
    assert_code(r, 201);
    g_autoptr(Resp) n = http(f, "POST", "/api/v1/namespaces", NULL,
                             "{\"metadata\":{\"name\":\"kube-batchd\"}}");
    assert_code(n, 201);
}

/* clientConfig.service: the Service must exist with the port; its name is verified against the
 * caBundle; it leads to its Endpoints (the port of the Service port's name). */
static void test_service_endpoints(Fixture *f, gconstpointer data)
{
    start(f, 0, FALSE);
    service_crd(f);
    g_autofree char *body = seed_job("v");
    g_autoptr(Resp) c1 = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_conversion_failed(c1, "conversion webhook for kubeflow.org/v1alpha1, Kind=TFJob failed: "
                                 "service \"tf-operator-webhook\" not found");
    g_autoptr(Resp) s = http(f, "POST", "/api/v1/namespaces/kube-batchd/services", NULL,
                             "{\"metadata\":{\"name\":\"tf-operator-webhook\"},\"spec\":{\"ports\":"
                             "[{\"name\":\"webhook\",\"port\":8443,\"targetPort\":8443}]}}");
    assert_code(s, 201);
    g_autoptr(Resp) c2 = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_conversion_failed(c2, "conversion webhook for kubeflow.org/v1alpha1, Kind=TFJob failed: "
                                 "no service port 443 found for service \"tf-operator-webhook\"");
    g_autoptr(Resp) p =
            http(f, "PATCH", "/api/v1/namespaces/kube-batchd/services/tf-operator-webhook",
                 "application/merge-patch+json",
                 "{\"spec\":{\"ports\":[{\"name\":\"webhook\",\"port\":443,"
                 "\"targetPort\":8443}]}}");
    assert_code(p, 200);
    g_autoptr(Resp) c3 = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_conversion_failed(c3, "conversion webhook for kubeflow.org/v1alpha1, Kind=TFJob failed: "
                                 "endpoints \"tf-operator-webhook\" not found");
    g_autofree char *eps = g_strdup_printf(
            "{\"metadata\":{\"name\":\"tf-operator-webhook\"},\"subsets\":[{\"addresses\":[{\"ip\":"
            "\"127.0.0.1\"}],\"ports\":[{\"name\":\"metrics\",\"port\":1},{\"name\":\"webhook\","
            "\"port\":%u}]}]}",
            kb_test_server_port(f->webhook));
    g_autoptr(Resp) e = http(f, "POST", "/api/v1/namespaces/kube-batchd/endpoints", NULL, eps);
    assert_code(e, 201);
    g_autoptr(Resp) c4 = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_code(c4, 201);
    g_autoptr(Resp) a = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/v");
    assert_code(a, 200);
    g_assert_true(json_object_is_type(kas_json_get(a->json, "spec.replicaSpecs"), json_type_array));
}

/* --service-address decides where a Service leads, whatever its Endpoints. */
static void test_service_address(Fixture *f, gconstpointer data)
{
    start(f, 0, TRUE);
    service_crd(f);
    g_autoptr(Resp) s = http(f, "POST", "/api/v1/namespaces/kube-batchd/services", NULL,
                             "{\"metadata\":{\"name\":\"tf-operator-webhook\"},\"spec\":{\"ports\":"
                             "[{\"port\":443,\"targetPort\":8443}]}}");
    assert_code(s, 201);
    create_seed(f, "v");
    g_autoptr(Resp) a = get(f, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/v");
    assert_code(a, 200);
    g_assert_true(json_object_is_type(kas_json_get(a->json, "spec.replicaSpecs"), json_type_array));
}

/* A caBundle that did not sign the webhook's certificate. */
static void test_untrusted(Fixture *f, gconstpointer data)
{
    start(f, 0, FALSE);
    kb_test_pki_issue(f->pki, "other", "other", KB_TEST_CERT_OTHER_CA);
    /* the bundle is a certificate of the unrelated CA's (not the webhook's CA) */
    g_autofree char *crd = crd_with(url_config(f, "other.pem"));
    g_autoptr(Resp) r =
            http(f, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, crd);
    assert_code(r, 201);
    g_autofree char *body = seed_job("u");
    g_autoptr(Resp) c = http(f, "POST", JOBS_ALPHA, NULL, body);
    g_autofree char *want = g_strdup_printf(
            "conversion webhook for kubeflow.org/v1alpha1, Kind=TFJob failed: Post "
            "\"https://127.0.0.1:%u/convert?timeout=30s\": tls: failed to verify certificate: ",
            kb_test_server_port(f->webhook));
    assert_conversion_failed(c, want);
}

/* A CRD updated with the right caBundle: the next call trusts the webhook; the columns stay. */
static void test_ca_rotation(Fixture *f, gconstpointer data)
{
    start(f, 0, FALSE);
    kb_test_pki_issue(f->pki, "other", "other", KB_TEST_CERT_OTHER_CA);
    g_autofree char *crd = crd_with(url_config(f, "other.pem"));
    g_autoptr(Resp) r =
            http(f, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, crd);
    assert_code(r, 201);
    g_autofree char *body = seed_job("r");
    g_autoptr(Resp) c1 = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_code(c1, 500);
    g_autofree char *ca = ca_bundle(f, "ca.pem");
    g_autofree char *patch = g_strdup_printf(
            "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"%s\"}}}}}",
            ca);
    g_autoptr(Resp) p =
            http(f, "PATCH",
                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org",
                 "application/merge-patch+json", patch);
    assert_code(p, 200);
    g_autoptr(Resp) c2 = http(f, "POST", JOBS_ALPHA, NULL, body);
    assert_code(c2, 201);
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kas_server_url(f->srv), JOBS_V1, NULL);
    GString *out = g_string_new(NULL);
    struct curl_slist *h =
            curl_slist_append(NULL, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    g_assert_cmpint(curl_easy_perform(c), ==, CURLE_OK);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    g_assert_nonnull(strstr(out->str, "{\"name\":\"State\""));
    g_string_free(out, TRUE);
}

/* An answer larger than the limit is refused, not read (KasConvertOptions.max_response). */
static void test_response_limit(Fixture *f, gconstpointer data)
{
    KasStore *st = kas_server_store(f->srv);
    kas_store_lock(st);
    KasRes *res = kas_store_find_locked(st, "kubeflow.org", "v1", "tfjobs");
    kas_store_unlock(st);
    g_assert_nonnull(res);
    g_autofree char *text = seed_job("big");
    for (gsize max = 200; max <= 20000; max += 19800) {
        KasConvertOptions co = {.max_response = max};
        g_autoptr(GError) error = NULL;
        g_autoptr(KasConvert) cv = kas_convert_new(st, &co, &error);
        g_assert_no_error(error);
        json_object *job = json_tokener_parse(text);
        gboolean ok = kas_convert_json(cv, res, "v1", &job, &error);
        if (max == 200) {
            g_assert_false(ok);
            g_assert_nonnull(strstr(error->message, "the response is larger than 200 bytes"));
        } else {
            g_assert_no_error(error);
            g_assert_cmpstr(kas_json_get_string(job, "apiVersion"), ==, "kubeflow.org/v1");
        }
        json_object_put(job);
    }
}

/* spec.conversion validated as apiextensions validates it. */
typedef struct {
    const char *conversion; /* JSON */
    const char *cause;      /* expected in the message */
} BadConversion;

static const BadConversion bad_conversions[] = {
        {"{\"strategy\":\"Magic\"}", "spec.conversion.strategy: Unsupported value: \"Magic\": "
                                     "supported values: \"None\", \"Webhook\""},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"]}}",
         "spec.conversion.webhook.clientConfig: Required value: required when strategy is set to "
         "Webhook"},
        {"{\"strategy\":\"None\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"]}}",
         "spec.conversion.webhook: Forbidden: should not be set when strategy is not set to "
         "Webhook"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"http://x/convert\"},"
         "\"conversionReviewVersions\":[\"v1\"]}}",
         "spec.conversion.webhook.clientConfig.url: Invalid value: \"http://x/convert\": 'https' "
         "is "
         "the only allowed URL scheme"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"https://x/c?a=b\"},"
         "\"conversionReviewVersions\":[\"v1\"]}}",
         "query parameters are not permitted in the URL"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"https://x/c\","
         "\"service\":{\"name\":\"a\",\"namespace\":\"b\"}},\"conversionReviewVersions\":[\"v1\"]}"
         "}",
         "spec.conversion.webhook.clientConfig: Required value: exactly one of url or service is "
         "required"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"service\":{\"name\":\"a\","
         "\"namespace\":\"b\",\"port\":70000}},\"conversionReviewVersions\":[\"v1\"]}}",
         "spec.conversion.webhook.clientConfig.service.port: Invalid value: 70000"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"service\":{\"name\":\"a\","
         "\"namespace\":\"b\",\"path\":\"convert\"}},\"conversionReviewVersions\":[\"v1\"]}}",
         "spec.conversion.webhook.clientConfig.service.path: Invalid value: \"convert\": must "
         "start with a '/'"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"https://x/c\"},"
         "\"conversionReviewVersions\":[\"v2\"]}}",
         "spec.conversion.webhook.conversionReviewVersions: Invalid value: [\"v2\"]: must include "
         "at "
         "least one of v1, v1beta1"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"https://x/c\"}}}",
         "spec.conversion.webhook.conversionReviewVersions: Required value: must specify one of "
         "v1, v1beta1"},
        {"{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"https://x/c\","
         "\"caBundle\":\"bm90IGEgY2VydA==\"},\"conversionReviewVersions\":[\"v1\",\"v1\"]}}",
         "spec.conversion.webhook.conversionReviewVersions[1]: Duplicate value: \"v1\""},
};

static void test_crd_validation(void)
{
    KasServerOptions o;
    kas_server_options_init(&o);
    g_autoptr(GError) error = NULL;
    g_autoptr(KasServer) srv = kas_server_new(&o, &error);
    g_assert_no_error(error);
    Fixture f = {.srv = srv};
    for (guint i = 0; i < G_N_ELEMENTS(bad_conversions); i++) {
        json_object *crd = yaml_file("deploy/base/crds/tfjob.yaml");
        json_object_object_add(kas_json_get(crd, "spec"), "conversion",
                               json_tokener_parse(bad_conversions[i].conversion));
        g_autofree char *body = kas_json_dump(crd);
        json_object_put(crd);
        g_autoptr(Resp) r = http(
                &f, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, body);
        assert_code(r, 422);
        if (strstr(js(r, "message"), bad_conversions[i].cause) == NULL)
            g_test_message("case %u: %s", i, js(r, "message"));
        g_assert_nonnull(strstr(js(r, "message"), bad_conversions[i].cause));
        g_assert_true(g_str_has_prefix(js(r, "message"),
                                       "CustomResourceDefinition.apiextensions.k8s.io "
                                       "\"tfjobs.kubeflow.org\" is invalid: "));
    }
}

static void test_service_address_flag(void)
{
    static const char *const bad[] = {
            "kube-system/wh:443",           "wh:443=127.0.0.1:1",
            "kube-system/wh=127.0.0.1:1",   "kube-system/wh:0=127.0.0.1:1",
            "kube-system/wh:443=127.0.0.1", "kube-system/wh:443=h:99999"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        KasServerOptions o;
        kas_server_options_init(&o);
        const char *addrs[] = {bad[i], NULL};
        o.service_addresses = addrs;
        g_autoptr(GError) error = NULL;
        g_autoptr(KasServer) srv = kas_server_new(&o, &error);
        g_assert_null(srv);
        g_assert_nonnull(error);
        g_autofree char *want = g_strdup_printf("--service-address \"%s\": ", bad[i]);
        g_assert_true(g_str_has_prefix(error->message, want));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
#define ADD(path, fn, data)                                                                        \
    g_test_add("/apiserver/convert/" path, Fixture, data, setup, fn, teardown)
    ADD("read-write", test_read_write, NULL);
    ADD("list-one-review", test_list_one_review, NULL);
    ADD("update-and-patch", test_update_and_patch, NULL);
    ADD("watch", test_watch, NULL);
    ADD("down", test_down, NULL);
    ADD("misbehaving", test_misbehaving, NULL);
    ADD("metadata", test_metadata, NULL);
    ADD("slow", test_slow, GUINT_TO_POINTER(1500));
    ADD("response-limit", test_response_limit, NULL);
#undef ADD
    g_test_add("/apiserver/convert/service-endpoints", Fixture, NULL, NULL, test_service_endpoints,
               teardown);
    g_test_add("/apiserver/convert/service-address", Fixture, NULL, NULL, test_service_address,
               teardown);
    g_test_add("/apiserver/convert/untrusted", Fixture, NULL, NULL, test_untrusted, teardown);
    g_test_add("/apiserver/convert/ca-rotation", Fixture, NULL, NULL, test_ca_rotation, teardown);
    g_test_add_func("/apiserver/convert/crd-validation", test_crd_validation);
    g_test_add_func("/apiserver/convert/service-address-flag", test_service_address_flag);
    return g_test_run();
}
