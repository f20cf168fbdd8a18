/*
 * Tests for the in-memory API server (testbed/apiserver/), driven over HTTP with libcurl against a
 * server embedded in the test process: the responses curl users and the project's clients see.
 * kubectl and the bin/kb-apiserver binary are covered by test-apiserver-kubectl.c.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/kb-proto.h"
#include "testbed/apiserver/kas-claims.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"
#include "testbed/apiserver/kas-server.h"

/* ---- HTTP helpers ------------------------------------------------------------------------------
 */

typedef struct {
    long code;
    char *body;
    json_object *json;
    char *retry_after;
    char *content_type;
} Resp;

static void resp_free(Resp *r)
{
    g_free(r->body);
    json_object_put(r->json);
    g_free(r->retry_after);
    g_free(r->content_type);
    g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Resp, resp_free)

static size_t collect_body(char *ptr, size_t size, size_t n, void *data)
{
    g_string_append_len(data, ptr, (gssize)(size * n));
    return size * n;
}

static size_t collect_header(char *ptr, size_t size, size_t n, void *data)
{
    Resp *r = data;
    g_autofree char *h = g_strndup(ptr, size * n);
    g_strstrip(h);
    if (g_ascii_strncasecmp(h, "Retry-After:", 12) == 0)
        r->retry_after = g_strstrip(g_strdup(h + 12));
    return size * n;
}

static Resp *http_len(KasServer *srv, const char *method, const char *path, const char *ctype,
                      const char *body, gsize len);

static Resp *http(KasServer *srv, const char *method, const char *path, const char *ctype,
                  const char *body)
{
    return http_len(srv, method, path, ctype, body, body != NULL ? strlen(body) : 0);
}

/* @method @path with a @len-byte @body (may be NULL) of type @ctype (NULL: JSON). */
static Resp *http_len(KasServer *srv, const char *method, const char *path, const char *ctype,
                      const char *body, gsize len)
{
    Resp *r = g_new0(Resp, 1);
    GString *out = g_string_new(NULL);
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kas_server_url(srv), path, NULL);
    struct curl_slist *hdrs = NULL;
    g_autofree char *ct =
            g_strdup_printf("Content-Type: %s", ctype != NULL ? ctype : "application/json");
    hdrs = curl_slist_append(hdrs, ct);
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    if (body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    CURLcode rc = curl_easy_perform(c);
    g_assert_cmpint(rc, ==, CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    char *ctv = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctv);
    r->content_type = g_strdup(ctv);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    r->body = g_string_free(out, FALSE);
    r->json = json_tokener_parse(r->body);
    return r;
}

static Resp *get(KasServer *srv, const char *path)
{
    return http(srv, "GET", path, NULL, NULL);
}

static Resp *post(KasServer *srv, const char *path, const char *body)
{
    return http(srv, "POST", path, NULL, body);
}

static const char *js(Resp *r, const char *dotted)
{
    return kas_json_get_string(r->json, dotted);
}

static gint64 ji(Resp *r, const char *dotted)
{
    return json_object_get_int64(kas_json_get(r->json, dotted));
}

static void assert_status(Resp *r, long code, const char *reason)
{
    if (r->code != code)
        g_error("expected HTTP %ld, got %ld: %s", code, r->code, r->body);
    if (reason != NULL) {
        g_assert_cmpstr(js(r, "kind"), ==, "Status");
        g_assert_cmpstr(js(r, "reason"), ==, reason);
        g_assert_cmpint(ji(r, "code"), ==, code);
    }
}

/* Watch @path until @max lines arrived or @timeout_ms passed; the lines, without "\n". */
typedef struct {
    GString *buf;
    GPtrArray *lines;
    guint max;
} WatchData;

static size_t watch_body(char *ptr, size_t size, size_t n, void *data)
{
    WatchData *w = data;
    g_string_append_len(w->buf, ptr, (gssize)(size * n));
    char *nl;
    while ((nl = memchr(w->buf->str, '\n', w->buf->len)) != NULL) {
        g_ptr_array_add(w->lines, g_strndup(w->buf->str, (gsize)(nl - w->buf->str)));
        g_string_erase(w->buf, 0, (gssize)(nl - w->buf->str) + 1);
    }
    return w->lines->len >= w->max ? 0 : size * n;
}

static GPtrArray *watch_full(KasServer *srv, const char *path, guint max, long timeout_ms,
                             char **leftover, CURLcode *result)
{
    WatchData w = {g_string_new(NULL), g_ptr_array_new_with_free_func(g_free), max};
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kas_server_url(srv), path, NULL);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    CURLcode rc = curl_easy_perform(c);
    if (result != NULL)
        *result = rc;
    curl_easy_cleanup(c);
    if (leftover != NULL)
        *leftover = g_strdup(w.buf->str);
    g_string_free(w.buf, TRUE);
    return w.lines;
}

static GPtrArray *watch(KasServer *srv, const char *path, guint max, long timeout_ms)
{
    return watch_full(srv, path, max, timeout_ms, NULL, NULL);
}

static char *line_field(const char *line, const char *dotted)
{
    json_object *j = json_tokener_parse(line);
    char *v = g_strdup(kas_json_get_string(j, dotted));
    json_object_put(j);
    return v;
}

/* ---- fixtures -------------------------------------------------------------------------------- */

static KasServer *start_with(void (*tweak)(KasServerOptions *))
{
    KasServerOptions o;
    kas_server_options_init(&o);
    o.kubelet_start_ms = 20;
    o.kubelet_stop_ms = 20;
    if (tweak != NULL)
        tweak(&o);
    g_autoptr(GError) error = NULL;
    KasServer *srv = kas_server_new(&o, &error);
    g_assert_no_error(error);
    return srv;
}

static KasServer *start(void)
{
    return start_with(NULL);
}

static void opt_sim(KasServerOptions *o)
{
    o->simulate_kubelet = TRUE;
}

#define POD_JSON(name, extra_meta, extra_spec)                                                     \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\"" extra_meta       \
    "},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\"}]" extra_spec "}}"

static void create_pod(KasServer *srv, const char *json)
{
    g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods", json);
    assert_status(r, 201, NULL);
}

static void create_node(KasServer *srv, const char *name)
{
    g_autofree char *body = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"}}", name);
    g_autoptr(Resp) r = post(srv, "/api/v1/nodes", body);
    assert_status(r, 201, NULL);
}

static const char BIND_N1[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p1\"},"
        "\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}";

static char *src_path(const char *rel)
{
    const char *top = g_getenv("KB_SRCDIR");
    return g_build_filename(top != NULL ? top : ".", rel, NULL);
}

/* POST the YAML file @rel (relative to the source tree) to @path after converting it. */
static Resp *post_yaml(KasServer *srv, const char *path, const char *rel)
{
    g_autofree char *file = src_path(rel);
    g_autofree char *text = NULL;
    gsize len;
    g_assert_true(g_file_get_contents(file, &text, &len, NULL));
    g_autoptr(GError) error = NULL;
    json_object *j = kas_yaml_to_json(text, len, &error);
    g_assert_no_error(error);
    g_autofree char *body = kas_json_dump(j);
    json_object_put(j);
    return post(srv, path, body);
}

static void create_crd(KasServer *srv)
{
    g_autoptr(Resp) r = post_yaml(srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                  "tests/data/apiserver/crd-tfjob.yaml");
    assert_status(r, 201, NULL);
}

/* Poll GET @path until @dotted equals @want (or is absent when @want is NULL) or 5 s pass. */
static Resp *wait_field(KasServer *srv, const char *path, const char *dotted, const char *want)
{
    for (int i = 0; i < 500; i++) {
        Resp *r = get(srv, path);
        const char *v = r->code == 200 ? js(r, dotted) : NULL;
        if (g_strcmp0(v, want) == 0)
            return r;
        resp_free(r);
        g_usleep(10000);
    }
    g_error("timed out waiting for %s %s == %s", path, dotted, want != NULL ? want : "(none)");
    return NULL;
}

static void wait_gone(KasServer *srv, const char *path)
{
    for (int i = 0; i < 500; i++) {
        g_autoptr(Resp) r = get(srv, path);
        if (r->code == 404)
            return;
        g_usleep(10000);
    }
    g_error("timed out waiting for %s to be deleted", path);
}

/* Wait (at most 5 s) until the server has exactly @n watchers. */
static void wait_watchers(KasServer *srv, guint n)
{
    for (int i = 0; i < 500 && kas_store_watcher_count(kas_server_store(srv)) != n; i++)
        g_usleep(10000);
    g_assert_cmpuint(kas_store_watcher_count(kas_server_store(srv)), ==, n);
}

/* ---- discovery ---------------------------------------------------------------------------------
 */

static void test_discovery_core(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) v = get(srv, "/version");
    g_assert_cmpint(v->code, ==, 200);
    g_assert_cmpstr(js(v, "major"), ==, "1");
    g_autoptr(Resp) api = get(srv, "/api");
    g_assert_cmpstr(js(api, "kind"), ==, "APIVersions");
    g_autoptr(Resp) r = get(srv, "/api/v1");
    g_assert_cmpstr(js(r, "groupVersion"), ==, "v1");
    json_object *res = kas_json_get(r->json, "resources");
    gboolean pods = FALSE, binding = FALSE, eviction = FALSE, status = FALSE;
    for (gsize i = 0; i < json_object_array_length(res); i++) {
        json_object *e = json_object_array_get_idx(res, i);
        const char *n = kas_json_get_string(e, "name");
        if (strcmp(n, "pods") == 0) {
            pods = TRUE;
            g_assert_cmpstr(json_object_get_string(
                                    json_object_array_get_idx(kas_json_get(e, "shortNames"), 0)),
                            ==, "po");
            g_assert_true(json_object_get_boolean(kas_json_get(e, "namespaced")));
        }
        binding |= strcmp(n, "pods/binding") == 0;
        eviction |= strcmp(n, "pods/eviction") == 0 &&
                    g_strcmp0(kas_json_get_string(e, "group"), "policy") == 0;
        status |= strcmp(n, "pods/status") == 0;
    }
    g_assert_true(pods && binding && eviction && status);
    g_autoptr(Resp) groups = get(srv, "/apis");
    g_assert_cmpstr(js(groups, "kind"), ==, "APIGroupList");
    g_assert_nonnull(strstr(groups->body, "coordination.k8s.io"));
    g_assert_nonnull(strstr(groups->body, "scheduling.k8s.io"));
    g_autoptr(Resp) missing = get(srv, "/apis/kubeflow.org/v1");
    assert_status(missing, 404, "NotFound");
}

static void test_discovery_crd_group(void)
{
    g_autoptr(KasServer) srv = start();
    create_crd(srv);
    g_autoptr(Resp) groups = get(srv, "/apis");
    g_assert_nonnull(strstr(groups->body, "\"name\":\"kubeflow.org\""));
    g_autoptr(Resp) g = get(srv, "/apis/kubeflow.org");
    /* v1 is preferred over v1alpha1 whatever the declaration order. */
    g_assert_cmpstr(js(g, "preferredVersion.version"), ==, "v1");
    g_autoptr(Resp) v1 = get(srv, "/apis/kubeflow.org/v1");
    g_assert_nonnull(strstr(v1->body, "\"name\":\"tfjobs/status\""));
    g_assert_nonnull(strstr(v1->body, "\"tfj\""));
    g_autoptr(Resp) oa = get(srv, "/openapi/v3");
    g_assert_cmpint(oa->code, ==, 200);
    /* Built-in group versions are listed for kubectl's field-validation check; CRD groups are
     * not (kubectl looks those up through the CRD list). */
    g_assert_nonnull(kas_json_get(oa->json, "paths.api/v1"));
    g_assert_null(strstr(oa->body, "kubeflow.org"));
    g_autoptr(Resp) core = get(srv, "/openapi/v3/api/v1");
    g_assert_nonnull(strstr(core->body, "fieldValidation"));
}

/* Every list kube-scheduler's informers wait for before they schedule anything (1.19-1.22): a
 * server that answers one of them 404 leaves a real kube-scheduler (the extender's host) idle
 * for ever. */
static void test_discovery_scheduler_informers(void)
{
    static const struct {
        const char *path, *kind;
    } lists[] = {
            {"/api/v1/pods", "PodList"},
            {"/api/v1/nodes", "NodeList"},
            {"/api/v1/services", "ServiceList"},
            {"/api/v1/persistentvolumes", "PersistentVolumeList"},
            {"/api/v1/persistentvolumeclaims", "PersistentVolumeClaimList"},
            {"/api/v1/replicationcontrollers", "ReplicationControllerList"},
            {"/apis/apps/v1/replicasets", "ReplicaSetList"},
            {"/apis/apps/v1/statefulsets", "StatefulSetList"},
            {"/apis/storage.k8s.io/v1/storageclasses", "StorageClassList"},
            {"/apis/storage.k8s.io/v1/csinodes", "CSINodeList"},
            {"/apis/policy/v1beta1/poddisruptionbudgets", "PodDisruptionBudgetList"},
    };
    g_autoptr(KasServer) srv = start();
    for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
        g_autoptr(Resp) r = get(srv, lists[i].path);
        if (r->code != 200)
            g_error("GET %s: HTTP %ld: %s", lists[i].path, r->code, r->body);
        g_assert_cmpstr(js(r, "kind"), ==, lists[i].kind);
    }
    /* ... and the workloads are writable where a real server puts them. */
    g_autoptr(Resp) rs = post(srv, "/apis/apps/v1/namespaces/default/replicasets",
                              "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                              "\"metadata\":{\"name\":\"rs1\"}}");
    assert_status(rs, 201, NULL);
    g_autoptr(Resp) apps = get(srv, "/apis/apps/v1");
    g_assert_nonnull(strstr(apps->body, "\"name\":\"replicasets/status\""));
}

/* ---- create, get, update
 * ------------------------------------------------------------------------- */

static void test_crud_create_get(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/pods", POD_JSON("p1", "", ""));
    assert_status(c, 201, NULL);
    g_assert_nonnull(js(c, "metadata.uid"));
    g_assert_nonnull(js(c, "metadata.creationTimestamp"));
    g_assert_cmpstr(js(c, "status.phase"), ==, "Pending");
    g_assert_cmpstr(js(c, "spec.schedulerName"), ==, "default-scheduler");
    g_autoptr(Resp) g = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpint(g->code, ==, 200);
    g_assert_cmpstr(js(g, "metadata.resourceVersion"), ==, js(c, "metadata.resourceVersion"));
    /* Every write gets a larger resourceVersion from one global counter. */
    g_autoptr(Resp) c2 = post(srv, "/api/v1/namespaces/default/configmaps",
                              "{\"metadata\":{\"name\":\"cm\"},\"data\":{\"a\":\"b\"}}");
    assert_status(c2, 201, NULL);
    g_assert_cmpint(g_ascii_strtoll(js(c2, "metadata.resourceVersion"), NULL, 10), >,
                    g_ascii_strtoll(js(c, "metadata.resourceVersion"), NULL, 10));
}

static void test_crud_already_exists(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods", POD_JSON("p1", "", ""));
    assert_status(r, 409, "AlreadyExists");
    g_assert_cmpstr(js(r, "message"), ==, "pods \"p1\" already exists");
    g_assert_cmpstr(js(r, "details.name"), ==, "p1");
    g_assert_cmpstr(js(r, "details.kind"), ==, "pods");
}

static void test_crud_not_found(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) r = get(srv, "/api/v1/namespaces/default/pods/nope");
    assert_status(r, 404, "NotFound");
    g_assert_cmpstr(js(r, "message"), ==, "pods \"nope\" not found");
    g_autoptr(Resp) ns = post(srv, "/api/v1/namespaces/ghost/pods", POD_JSON("p1", "", ""));
    assert_status(ns, 404, "NotFound");
    g_assert_cmpstr(js(ns, "message"), ==, "namespaces \"ghost\" not found");
    g_autoptr(Resp) res = get(srv, "/api/v1/widgets");
    assert_status(res, 404, "NotFound");
}

static void test_crud_generate_name(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) a = post(srv, "/api/v1/namespaces/default/pods",
                             "{\"metadata\":{\"generateName\":\"job-\"},\"spec\":{\"containers\":[{"
                             "\"name\":\"c\",\"image\":\"busybox:1\"}]}}");
    g_autoptr(Resp) b = post(srv, "/api/v1/namespaces/default/pods",
                             "{\"metadata\":{\"generateName\":\"job-\"},\"spec\":{\"containers\":[{"
                             "\"name\":\"c\",\"image\":\"busybox:1\"}]}}");
    assert_status(a, 201, NULL);
    assert_status(b, 201, NULL);
    g_assert_true(g_str_has_prefix(js(a, "metadata.name"), "job-"));
    g_assert_cmpuint(strlen(js(a, "metadata.name")), ==, 9);
    g_assert_cmpstr(js(a, "metadata.name"), !=, js(b, "metadata.name"));
}

static void test_crud_invalid(void)
{
    g_autoptr(KasServer) srv = start();
    static const struct {
        const char *body;
        long code;
        const char *reason;
    } cases[] = {
            {POD_JSON("Bad_Name", "", ""), 422, "Invalid"},
            {"{\"metadata\":{}}", 422, "Invalid"},
            {"{\"metadata\":{\"name\":\"x\"", 400, "BadRequest"},
            {"[1,2]", 400, "BadRequest"},
            {"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"x\"}}", 400,
             "BadRequest"},
            {"{\"apiVersion\":\"v2\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}", 400,
             "BadRequest"},
            {"{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":1}}}", 400, "BadRequest"},
            {"{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"5\"}}", 500, "InternalError"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods", cases[i].body);
        assert_status(r, cases[i].code, cases[i].reason);
    }
    g_autoptr(Resp) inv =
            post(srv, "/api/v1/namespaces/default/pods", POD_JSON("Bad_Name", "", ""));
    g_assert_nonnull(strstr(js(inv, "message"), "Pod \"Bad_Name\" is invalid: metadata.name"));
}

/* ---- scheduling.k8s.io/v1beta1 (Workload, PodGroup) ---------------------------------------- */

#define PG_PATH "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
#define WL_PATH "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads"
#define PG_JSON(name, spec)                                                                        \
    "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"           \
    "\"name\":\"" name "\"},\"spec\":" spec "}"
#define WL_JSON(name, templates)                                                                   \
    "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"Workload\",\"metadata\":{"           \
    "\"name\":\"" name "\"},\"spec\":{\"podGroupTemplates\":" templates "}}"
#define TPL(name) "{\"name\":\"" name "\",\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}"

static void opt_gang(KasServerOptions *o)
{
    g_assert_true(kas_server_runtime_config(o, "scheduling.k8s.io/v1beta1=true", NULL));
}

/* Off unless enabled, as on a 1.37 server; in discovery once enabled, beside v1. */
static void test_gang_api_runtime_config(void)
{
    {
        g_autoptr(KasServer) srv = start();
        g_autoptr(Resp) r = get(srv, PG_PATH);
        g_assert_cmpint(r->code, ==, 404);
        g_autoptr(Resp) d = get(srv, "/apis/scheduling.k8s.io/v1beta1");
        g_assert_cmpint(d->code, ==, 404);
    }
    g_autoptr(KasServer) srv = start_with(opt_gang);
    g_autoptr(Resp) d = get(srv, "/apis/scheduling.k8s.io/v1beta1");
    g_assert_cmpint(d->code, ==, 200);
    g_assert_nonnull(strstr(d->body, "\"podgroups/status\""));
    g_assert_nonnull(strstr(d->body, "\"workloads\""));
    g_autoptr(Resp) g = get(srv, "/apis/scheduling.k8s.io");
    g_assert_nonnull(strstr(g->body, "\"v1beta1\""));
    g_assert_cmpstr(js(g, "preferredVersion.version"), ==, "v1");
    g_autoptr(GError) error = NULL;
    KasServerOptions o;
    kas_server_options_init(&o);
    g_assert_false(kas_server_runtime_config(&o, "apps/v1=true", &error));
    g_assert_nonnull(strstr(error->message, "\"apps/v1\""));
    g_clear_error(&error);
    g_assert_false(kas_server_runtime_config(&o, "scheduling.k8s.io/v1beta1=maybe", &error));
    g_assert_true(kas_server_runtime_config(&o, "scheduling.k8s.io/v1beta1=false", NULL));
    g_assert_false(o.scheduling_v1beta1);
}

/* Defaults, Priority admission, status subresource, what may and may not change. */
static void test_gang_api_podgroup(void)
{
    g_autoptr(KasServer) srv = start_with(opt_gang);
    g_autoptr(Resp) pc = post(srv, "/apis/scheduling.k8s.io/v1/priorityclasses",
                              "{\"metadata\":{\"name\":\"high\"},\"value\":1000}");
    assert_status(pc, 201, NULL);
    g_autoptr(Resp) c = post(srv, PG_PATH,
                             PG_JSON("pg", "{\"schedulingPolicy\":{\"gang\":{\"minCount\":4}},"
                                           "\"priorityClassName\":\"high\"}"));
    assert_status(c, 201, NULL);
    g_assert_nonnull(kas_json_get(c->json, "spec.disruptionMode.single"));
    g_assert_cmpint(ji(c, "spec.priority"), ==, 1000);
    g_assert_cmpint(ji(c, "metadata.generation"), ==, 1);
    /* minCount may change; the class may not */
    g_autoptr(Resp) u = http(srv, "PUT", PG_PATH "/pg", NULL,
                             PG_JSON("pg", "{\"schedulingPolicy\":{\"gang\":{\"minCount\":3}},"
                                           "\"priorityClassName\":\"high\"}"));
    assert_status(u, 200, NULL);
    g_assert_cmpint(ji(u, "spec.schedulingPolicy.gang.minCount"), ==, 3);
    g_assert_cmpint(ji(u, "spec.priority"), ==, 1000);
    g_assert_cmpint(ji(u, "metadata.generation"), ==, 2);
    g_autoptr(Resp) im = http(srv, "PUT", PG_PATH "/pg", NULL,
                              PG_JSON("pg", "{\"schedulingPolicy\":{\"gang\":{\"minCount\":3}},"
                                            "\"priorityClassName\":\"high\",\"disruptionMode\":"
                                            "{\"all\":{}}}"));
    assert_status(im, 422, "Invalid");
    g_assert_cmpstr(js(im, "message"), ==,
                    "PodGroup.scheduling.k8s.io \"pg\" is invalid: spec.disruptionMode: Invalid "
                    "value: \"object\": field is immutable");
    /* status through its subresource */
    g_autoptr(Resp) st = http(
            srv, "PATCH", PG_PATH "/pg/status", "application/merge-patch+json",
            "{\"status\":{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":"
            "\"False\",\"reason\":\"Unschedulable\",\"message\":\"3/4\",\"lastTransitionTime\":"
            "\"2026-08-20T10:00:00Z\"}]}}");
    assert_status(st, 200, NULL);
    json_object *conds = kas_json_get(st->json, "status.conditions");
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(conds, 0), "reason"), ==,
                    "Unschedulable");
    /* a class that does not exist */
    g_autoptr(Resp) nc = post(srv, PG_PATH,
                              PG_JSON("pg2", "{\"schedulingPolicy\":{\"basic\":{}},"
                                             "\"priorityClassName\":\"nope\"}"));
    assert_status(nc, 403, "Forbidden");
    g_assert_nonnull(strstr(js(nc, "message"), "no PriorityClass with name nope was found"));
}

static void test_gang_api_invalid(void)
{
    g_autoptr(KasServer) srv = start_with(opt_gang);
    static const struct {
        const char *path, *body, *message;
    } cases[] = {
            {PG_PATH, PG_JSON("a", "{}"),
             "PodGroup.scheduling.k8s.io \"a\" is invalid: spec.schedulingPolicy: Invalid value: "
             "\"\": "
             "must specify one of: `basic`, `gang`"},
            {PG_PATH, PG_JSON("a", "{\"schedulingPolicy\":{\"gang\":{}}}"),
             "PodGroup.scheduling.k8s.io \"a\" is invalid: spec.schedulingPolicy.gang.minCount: "
             "Required value"},
            {PG_PATH, PG_JSON("a", "{\"schedulingPolicy\":{\"gang\":{\"minCount\":-2}}}"),
             "PodGroup.scheduling.k8s.io \"a\" is invalid: spec.schedulingPolicy.gang.minCount: "
             "Invalid value: -2: must be greater than zero"},
            {PG_PATH,
             PG_JSON("a", "{\"schedulingPolicy\":{\"basic\":{}},\"disruptionMode\":{\"single\":{},"
                          "\"all\":{}}}"),
             "PodGroup.scheduling.k8s.io \"a\" is invalid: spec.disruptionMode: Invalid value: "
             "\"{`single`, `all`}\": exactly one of `single`, `all` is required, but multiple "
             "fields "
             "are set"},
            {PG_PATH,
             PG_JSON("a", "{\"schedulingPolicy\":{\"basic\":{}},\"workloadRef\":{\"workloadName\":"
                          "\"w\",\"templateName\":\"Bad\"}}"),
             "PodGroup.scheduling.k8s.io \"a\" is invalid: spec.workloadRef.templateName: Invalid "
             "value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
             "characters or '-', and must start and end with an alphanumeric character (e.g. "
             "'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
            {WL_PATH, WL_JSON("w", "[]"),
             "Workload.scheduling.k8s.io \"w\" is invalid: spec.podGroupTemplates: Required value: "
             "must have at least one item"},
            {WL_PATH,
             WL_JSON("w", "[" TPL("a") "," TPL("b") "," TPL("c") "," TPL("d") "," TPL("e") "," TPL(
                                  "f") "," TPL("g") "," TPL("h") "," TPL("i") "]"),
             "Workload.scheduling.k8s.io \"w\" is invalid: spec.podGroupTemplates: Too many: 9: "
             "must "
             "have at most 8 items"},
            {WL_PATH, WL_JSON("w", "[" TPL("a") "," TPL("a") "]"),
             "Workload.scheduling.k8s.io \"w\" is invalid: spec.podGroupTemplates[1]: Duplicate "
             "value: "
             "\"a\""},
            {"/api/v1/namespaces/default/pods",
             POD_JSON("p", "", ",\"schedulingGroup\":{\"podGroupName\":\"Bad_Group\"}"),
             "Pod \"p\" is invalid: spec.schedulingGroup.podGroupName: Invalid value: "
             "\"Bad_Group\": a "
             "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
             "or "
             "'.', and must start and end with an alphanumeric character (e.g. 'example.com', "
             "regex "
             "used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Resp) r = post(srv, cases[i].path, cases[i].body);
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(js(r, "message"), ==, cases[i].message);
    }
    /* eight templates are fine; the list may not change */
    g_autoptr(Resp) w =
            post(srv, WL_PATH,
                 WL_JSON("w8", "[" TPL("a") "," TPL("b") "," TPL("c") "," TPL("d") "," TPL(
                                       "e") "," TPL("f") "," TPL("g") "," TPL("h") "]"));
    assert_status(w, 201, NULL);
    g_autoptr(Resp) wu = http(srv, "PUT", WL_PATH "/w8", NULL, WL_JSON("w8", "[" TPL("a") "]"));
    assert_status(wu, 422, "Invalid");
    g_assert_cmpstr(js(wu, "message"), ==,
                    "Workload.scheduling.k8s.io \"w8\" is invalid: spec.podGroupTemplates: Invalid "
                    "value: \"array\": field is immutable");
    /* a pod's schedulingGroup may not change */
    create_pod(srv, POD_JSON("p2", "", ",\"schedulingGroup\":{\"podGroupName\":\"g1\"}"));
    g_autoptr(Resp) pu =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p2", "application/merge-patch+json",
                 "{\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"g2\"}}}");
    assert_status(pu, 422, "Invalid");
    g_assert_cmpstr(js(pu, "message"), ==,
                    "Pod \"p2\" is invalid: spec.schedulingGroup: Invalid value: \"object\": field "
                    "is immutable");
    /* nor be added to a pod that had none; other changes still list the diff */
    create_pod(srv, POD_JSON("p3", "", ""));
    g_autoptr(Resp) pa =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p3", "application/merge-patch+json",
                 "{\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"g2\"}}}");
    assert_status(pa, 422, "Invalid");
    g_assert_cmpstr(js(pa, "message"), ==,
                    "Pod \"p3\" is invalid: spec.schedulingGroup: Invalid value: \"object\": field "
                    "is immutable");
    g_autoptr(Resp) po = http(srv, "PATCH", "/api/v1/namespaces/default/pods/p2",
                              "application/merge-patch+json", "{\"spec\":{\"hostname\":\"h\"}}");
    assert_status(po, 422, "Invalid");
    g_assert_nonnull(strstr(js(po, "message"), "pod updates may not change fields"));
    g_assert_null(strstr(js(po, "message"), "schedulingGroup"));
}

/* ---- scheduling.k8s.io/v1alpha3: CompositePodGroup ------------------------------------------ */

#define A3 "/apis/scheduling.k8s.io/v1alpha3/namespaces/default"
#define CPG_JSON(name, spec)                                                                       \
    "{\"apiVersion\":\"scheduling.k8s.io/v1alpha3\",\"kind\":\"CompositePodGroup\","               \
    "\"metadata\":{\"name\":\"" name "\"},\"spec\":" spec "}"
#define WREF "\"workloadRef\":{\"workloadName\":\"w\",\"templateName\":\"t\"}"
#define CHILD_JSON(av, name, parent)                                                               \
    "{\"apiVersion\":\"scheduling.k8s.io/" av "\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":"   \
    "\"" name "\"},\"spec\":{\"parentCompositePodGroupName\":\"" parent "\"," WREF ","             \
    "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}}"

static void opt_alpha(KasServerOptions *o)
{
    g_assert_true(kas_server_runtime_config(
            o, "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true", NULL));
}

static void opt_alpha_only(KasServerOptions *o)
{
    g_assert_true(kas_server_runtime_config(o, "scheduling.k8s.io/v1alpha3=true", NULL));
}

/* v1alpha3 is its own switch: off beside v1beta1; on, it serves compositepodgroups (status
 * subresource) and the same workloads and podgroups; alone, PodGroups at v1alpha3 only. */
static void test_gang_api_v1alpha3_runtime_config(void)
{
    {
        g_autoptr(KasServer) srv = start_with(opt_gang);
        g_autoptr(Resp) d = get(srv, "/apis/scheduling.k8s.io/v1alpha3");
        g_assert_cmpint(d->code, ==, 404);
        g_autoptr(Resp) c = get(srv, A3 "/compositepodgroups");
        g_assert_cmpint(c->code, ==, 404);
    }
    {
        g_autoptr(KasServer) srv = start_with(opt_alpha);
        g_autoptr(Resp) d = get(srv, "/apis/scheduling.k8s.io/v1alpha3");
        g_assert_cmpint(d->code, ==, 200);
        g_assert_nonnull(strstr(d->body, "\"compositepodgroups/status\""));
        g_assert_nonnull(strstr(d->body, "\"podgroups\""));
        g_assert_nonnull(strstr(d->body, "\"workloads\""));
        g_autoptr(Resp) g = get(srv, "/apis/scheduling.k8s.io");
        g_assert_nonnull(strstr(g->body, "\"v1alpha3\""));
        g_assert_nonnull(strstr(g->body, "\"v1beta1\""));
        g_autoptr(Resp) b = get(srv, "/apis/scheduling.k8s.io/v1beta1");
        g_assert_null(strstr(b->body, "compositepodgroups"));
    }
    g_autoptr(KasServer) srv = start_with(opt_alpha_only);
    g_autoptr(Resp) b = get(srv, PG_PATH);
    g_assert_cmpint(b->code, ==, 404);
    g_autoptr(Resp) a = get(srv, A3 "/podgroups");
    g_assert_cmpint(a->code, ==, 200);
    KasServerOptions o;
    kas_server_options_init(&o);
    g_assert_true(kas_server_runtime_config(&o, "scheduling.k8s.io/v1alpha3", NULL));
    g_assert_true(o.scheduling_v1alpha3);
    g_assert_false(o.scheduling_v1beta1);
}

/* Defaults, Priority admission, the status only through its subresource, nothing of the spec
 * may change; the real server's messages for what is invalid. */
static void test_gang_api_composite(void)
{
    g_autoptr(KasServer) srv = start_with(opt_alpha);
    g_autoptr(Resp) pc = post(srv, "/apis/scheduling.k8s.io/v1/priorityclasses",
                              "{\"metadata\":{\"name\":\"high\"},\"value\":1000}");
    assert_status(pc, 201, NULL);
    g_autoptr(Resp) c =
            post(srv, A3 "/compositepodgroups",
                 CPG_JSON("c1", "{" WREF ",\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":3}},"
                                "\"priorityClassName\":\"high\"},\"status\":{\"conditions\":[]}"));
    assert_status(c, 201, NULL);
    g_assert_nonnull(kas_json_get(c->json, "spec.disruptionMode.single"));
    g_assert_cmpint(ji(c, "spec.priority"), ==, 1000);
    g_assert_null(kas_json_get(c->json, "status"));
    g_autoptr(Resp) st =
            http(srv, "PATCH", A3 "/compositepodgroups/c1/status", "application/merge-patch+json",
                 "{\"status\":{\"conditions\":[{\"type\":\"CompositePodGroupInitiallyScheduled\","
                 "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"2/3\","
                 "\"lastTransitionTime\":\"2026-08-20T10:00:00Z\"}]},\"spec\":{\"priority\":5}}");
    assert_status(st, 200, NULL);
    g_assert_cmpint(ji(st, "spec.priority"), ==, 1000);
    g_assert_cmpint(json_object_array_length(kas_json_get(st->json, "status.conditions")), ==, 1);
    g_autoptr(Resp) im =
            http(srv, "PUT", A3 "/compositepodgroups/c1", NULL,
                 CPG_JSON("c1", "{" WREF ",\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":2}},"
                                "\"priorityClassName\":\"high\"}"));
    assert_status(im, 422, "Invalid");
    g_assert_cmpstr(js(im, "message"), ==,
                    "CompositePodGroup.scheduling.k8s.io \"c1\" is invalid: "
                    "spec.schedulingPolicy: Invalid value: \"null\": field is immutable");
    /* labels may change; the priority admission gave stays when left out */
    g_autoptr(Resp) lu =
            http(srv, "PUT", A3 "/compositepodgroups/c1", NULL,
                 "{\"apiVersion\":\"scheduling.k8s.io/v1alpha3\",\"kind\":\"CompositePodGroup\","
                 "\"metadata\":{\"name\":\"c1\",\"labels\":{\"a\":\"b\"}},\"spec\":{" WREF ","
                 "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":3}},\"priorityClassName\":"
                 "\"high\"}}");
    assert_status(lu, 200, NULL);
    static const struct {
        const char *body, *message;
    } bad[] = {
            {CPG_JSON("a", "{" WREF ",\"schedulingPolicy\":{\"gang\":{}}}"),
             "spec.schedulingPolicy.gang.minGroupCount: Required value"},
            {CPG_JSON("a", "{" WREF ",\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":-1}}}"),
             "spec.schedulingPolicy.gang.minGroupCount: Invalid value: -1: must be greater than or "
             "equal to 1"},
            {CPG_JSON("a", "{\"schedulingPolicy\":{\"basic\":{}}}"),
             "spec.workloadRef: Required value"},
            {CPG_JSON("a", "{" WREF ",\"schedulingPolicy\":{\"basic\":{},\"gang\":"
                           "{\"minGroupCount\":1}}}"),
             "spec.schedulingPolicy: Invalid value: \"{`basic`, `gang`}\": exactly one of `basic`, "
             "`gang` is required, but multiple fields are set"},
            {CPG_JSON("a", "{\"parentCompositePodGroupName\":\"Top_1\"," WREF
                           ",\"schedulingPolicy\":{\"basic\":{}}}"),
             "spec.parentCompositePodGroupName: Invalid value: \"Top_1\": a lowercase RFC 1123 "
             "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(Resp) r = post(srv, A3 "/compositepodgroups", bad[i].body);
        assert_status(r, 422, "Invalid");
        g_autofree char *want = g_strdup_printf(
                "CompositePodGroup.scheduling.k8s.io \"a\" is invalid: %s", bad[i].message);
        g_assert_cmpstr(js(r, "message"), ==, want);
    }
    /* a PodGroup's parent name is checked the same way */
    g_autoptr(Resp) pb = post(srv, A3 "/podgroups", CHILD_JSON("v1alpha3", "g", "Bad_Parent"));
    assert_status(pb, 422, "Invalid");
    g_assert_nonnull(strstr(js(pb, "message"), "spec.parentCompositePodGroupName: Invalid value: "
                                               "\"Bad_Parent\": a lowercase RFC 1123 subdomain"));
}

/* One PodGroup, read and watched at both versions with its parent link (the two versions carry
 * the same fields); with v1alpha3 off the link is dropped as a disabled feature's field. */
static void test_gang_api_podgroup_versions(void)
{
    {
        g_autoptr(KasServer) srv = start_with(opt_alpha);
        g_autoptr(Resp) c = post(srv, PG_PATH, CHILD_JSON("v1beta1", "g0", "c1"));
        assert_status(c, 201, NULL);
        g_autoptr(Resp) a = get(srv, A3 "/podgroups/g0");
        g_assert_cmpint(a->code, ==, 200);
        g_assert_cmpstr(js(a, "apiVersion"), ==, "scheduling.k8s.io/v1alpha3");
        g_assert_cmpstr(js(a, "spec.parentCompositePodGroupName"), ==, "c1");
        g_autoptr(Resp) c2 = post(srv, A3 "/podgroups", CHILD_JSON("v1alpha3", "g1", "c1"));
        assert_status(c2, 201, NULL);
        g_autoptr(Resp) l = get(srv, PG_PATH);
        g_assert_cmpstr(js(l, "apiVersion"), ==, "scheduling.k8s.io/v1beta1");
        g_assert_cmpint(json_object_array_length(kas_json_get(l->json, "items")), ==, 2);
        g_assert_cmpstr(
                kas_json_get_string(json_object_array_get_idx(kas_json_get(l->json, "items"), 1),
                                    "spec.parentCompositePodGroupName"),
                ==, "c1");
        /* the link may not change */
        g_autoptr(Resp) u =
                http(srv, "PUT", A3 "/podgroups/g1", NULL, CHILD_JSON("v1alpha3", "g1", "c2"));
        assert_status(u, 422, "Invalid");
        g_assert_nonnull(strstr(js(u, "message"), "spec.parentCompositePodGroupName"));
        /* a Workload of composite templates */
        g_autoptr(Resp) w =
                post(srv, WL_PATH,
                     "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"compositePodGroupTemplates\":[{"
                     "\"name\":\"train\",\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":3}},"
                     "\"podGroupTemplates\":[" TPL("workers") "]}]}}");
        assert_status(w, 201, NULL);
        g_autoptr(Resp) we = post(
                srv, WL_PATH,
                "{\"metadata\":{\"name\":\"w2\"},\"spec\":{\"compositePodGroupTemplates\":[{"
                "\"name\":\"train\",\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":3}}}]}}");
        assert_status(we, 422, "Invalid");
        g_assert_cmpstr(js(we, "message"), ==,
                        "Workload.scheduling.k8s.io \"w2\" is invalid: "
                        "spec.compositePodGroupTemplates[0]: Invalid value: \"train\": must have "
                        "at least one child PodGroupTemplate or CompositePodGroupTemplate");
    }
    g_autoptr(KasServer) srv = start_with(opt_gang);
    g_autoptr(Resp) c = post(srv, PG_PATH, CHILD_JSON("v1beta1", "g0", "c1"));
    assert_status(c, 201, NULL);
    g_assert_null(kas_json_get(c->json, "spec.parentCompositePodGroupName"));
}

#define RES_POD(name, spec_res, cres)                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\"},\"spec\":{"      \
    "\"resources\":" spec_res ",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\","          \
    "\"resources\":" cres "},{\"name\":\"d\",\"image\":\"busybox:1\",\"resources\":" cres "}]}}"

/* ---- resource.k8s.io/v1 (DRA) ------------------------------------------------------------- */

#define DC_PATH  "/apis/resource.k8s.io/v1/deviceclasses"
#define RC_PATH  "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
#define RCT_PATH "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
#define RS_PATH  "/apis/resource.k8s.io/v1/resourceslices"
#define RC_JSON(name, devices)                                                                     \
    "{\"apiVersion\":\"resource.k8s.io/"                                                           \
    "v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"" name                               \
    "\"},\"spec\":{\"devices\":" devices "}}"
#define GPU_REQ(name) "{\"name\":\"" name "\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}"
#define RS_JSON(name, node, devices)                                                               \
    "{\"apiVersion\":\"resource.k8s.io/"                                                           \
    "v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"" name                               \
    "\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"" node "\",\"pool\":{"             \
    "\"name\":\"" node "\",\"resourceSliceCount\":1},\"devices\":" devices "}}"
#define DEV(name) "{\"name\":\"" name "\",\"attributes\":{\"index\":{\"int\":0}}}"

/* GA in 1.34: served without --runtime-config, in discovery with claims' status subresource. */
static void test_dra_discovery(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) d = get(srv, "/apis/resource.k8s.io/v1");
    assert_status(d, 200, NULL);
    static const char *const names[] = {"\"deviceclasses\"", "\"resourceclaims\"",
                                        "\"resourceclaims/status\"", "\"resourceclaimtemplates\"",
                                        "\"resourceslices\""};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
        g_assert_nonnull(strstr(d->body, names[i]));
    g_assert_null(strstr(d->body, "\"resourceslices/status\""));
    json_object *rs = kas_json_get(d->json, "resources");
    for (gsize i = 0; i < json_object_array_length(rs); i++) {
        json_object *r = json_object_array_get_idx(rs, i);
        const char *n = kas_json_get_string(r, "name");
        gboolean ns = json_object_get_boolean(kas_json_get(r, "namespaced"));
        if (strcmp(n, "deviceclasses") == 0 || strcmp(n, "resourceslices") == 0)
            g_assert_false(ns);
        else
            g_assert_true(ns);
    }
    g_autoptr(Resp) g = get(srv, "/apis");
    g_assert_nonnull(strstr(g->body, "\"resource.k8s.io/v1\""));
}

/* v1 defaults, the status subresource and what may change in a claim. */
static void test_dra_claim_status(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c =
            post(srv, RC_PATH,
                 "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"devices\":{\"requests\":[" GPU_REQ(
                         "gpu") "]}},\"status\":{\"reservedFor\":[{\"resource\":"
                                "\"pods\",\"name\":\"x\",\"uid\":\"u\"}]}}");
    assert_status(c, 201, NULL);
    g_assert_cmpstr(js(c, "kind"), ==, "ResourceClaim");
    json_object *req = json_object_array_get_idx(kas_json_get(c->json, "spec.devices.requests"), 0);
    g_assert_cmpstr(kas_json_get_string(req, "exactly.allocationMode"), ==, "ExactCount");
    g_assert_cmpint(json_object_get_int64(kas_json_get(req, "exactly.count")), ==, 1);
    g_assert_null(kas_json_get(c->json, "status.reservedFor"));
    /* reservedFor needs an allocation */
    g_autoptr(Resp) r0 = http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json",
                              "{\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"name\":"
                              "\"p\",\"uid\":\"u1\"}]}}");
    assert_status(r0, 422, "Invalid");
    g_assert_cmpstr(js(r0, "message"), ==,
                    "ResourceClaim.resource.k8s.io \"c\" is invalid: status.reservedFor: "
                    "Forbidden: may not be specified when `allocated` is not set");
    /* a result must name a request of the spec */
    g_autoptr(Resp) bad = http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json",
                               "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{"
                               "\"request\":\"tpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":"
                               "\"n1\",\"device\":\"gpu-0\"}]}}}}");
    assert_status(bad, 422, "Invalid");
    g_assert_cmpstr(js(bad, "message"), ==,
                    "ResourceClaim.resource.k8s.io \"c\" is invalid: "
                    "status.allocation.devices.results[0].request: Invalid value: \"tpu\": must "
                    "be the name of a request in the claim or the name of a request and a "
                    "subrequest separated by '/'");
    const char *alloc = "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"
                        "\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":"
                        "\"gpu-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":"
                        "[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}},"
                        "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u1\"}]}}";
    g_autoptr(Resp) ok =
            http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json", alloc);
    assert_status(ok, 200, NULL);
    json_object *rf = kas_json_get(ok->json, "status.reservedFor");
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(rf, 0), "uid"), ==, "u1");
    /* the allocation may not change once set, only be cleared */
    g_autoptr(Resp) mv = http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json",
                              "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{"
                              "\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\","
                              "\"device\":\"gpu-1\"}]}}}}");
    assert_status(mv, 422, "Invalid");
    g_assert_cmpstr(js(mv, "message"), ==,
                    "ResourceClaim.resource.k8s.io \"c\" is invalid: status.allocation: Invalid "
                    "value: \"object\": field is immutable");
    /* reservedFor: unique */
    g_autoptr(Resp) dup = http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json",
                               "{\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"name\":"
                               "\"p\",\"uid\":\"u1\"},{\"resource\":\"pods\",\"name\":\"p\","
                               "\"uid\":\"u1\"}]}}");
    assert_status(dup, 422, "Invalid");
    g_assert_cmpstr(js(dup, "message"), ==,
                    "ResourceClaim.resource.k8s.io \"c\" is invalid: status.reservedFor[1]: "
                    "Duplicate value: \"u1\"");
    g_autoptr(Resp) clr = http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json",
                               "{\"status\":{\"allocation\":null,\"reservedFor\":null}}");
    assert_status(clr, 200, NULL);
    g_assert_null(kas_json_get(clr->json, "status.allocation"));
    /* the spec is immutable; restating it (without the defaults) is not a change */
    g_autoptr(Resp) same = http(srv, "PUT", RC_PATH "/c", NULL,
                                RC_JSON("c", "{\"requests\":[" GPU_REQ("gpu") "]}"));
    assert_status(same, 200, NULL);
    g_autoptr(Resp) chg = http(srv, "PUT", RC_PATH "/c", NULL,
                               RC_JSON("c", "{\"requests\":[" GPU_REQ("gpu2") "]}"));
    assert_status(chg, 422, "Invalid");
    g_assert_cmpstr(js(chg, "message"), ==,
                    "ResourceClaim.resource.k8s.io \"c\" is invalid: spec: Invalid value: "
                    "\"object\": field is immutable");
}

/* A status PATCH changes the status alone: what it says of metadata (labels, a precondition
 * aside), spec or apiVersion is ignored, a stale resourceVersion in it is a conflict, and a patch
 * that changes nothing writes nothing. */
static void test_dra_claim_status_only(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, RC_PATH, RC_JSON("c", "{\"requests\":[" GPU_REQ("gpu") "]}"));
    assert_status(c, 201, NULL);
    const char *rv = js(c, "metadata.resourceVersion");
    g_autofree char *body = g_strdup_printf(
            "{\"metadata\":{\"resourceVersion\":"
            "\"%s\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"devices\":null},\"extra\":1,"
            "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}},"
            "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u1\"}]}}",
            rv);
    g_autoptr(Resp) ok =
            http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json", body);
    assert_status(ok, 200, NULL);
    g_assert_cmpstr(js(ok, "apiVersion"), ==, "resource.k8s.io/v1");
    g_assert_null(kas_json_get(ok->json, "metadata.labels"));
    g_assert_null(kas_json_get(ok->json, "extra"));
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(
                                                kas_json_get(ok->json, "spec.devices.requests"), 0),
                                        "name"),
                    ==, "gpu");
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(
                                                kas_json_get(ok->json, "status.reservedFor"), 0),
                                        "uid"),
                    ==, "u1");
    g_assert_cmpstr(js(ok, "metadata.resourceVersion"), !=, rv);
    g_autoptr(Resp) got = get(srv, RC_PATH "/c");
    g_assert_cmpstr(json_object_to_json_string(got->json), ==,
                    json_object_to_json_string(ok->json));
    /* the same status again: nothing changes, not even the resourceVersion */
    g_autofree char *again = g_strdup_printf("{\"status\":{\"reservedFor\":[{\"resource\":"
                                             "\"pods\",\"name\":\"p\",\"uid\":\"u1\"}]}}");
    g_autoptr(Resp) same =
            http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json", again);
    assert_status(same, 200, NULL);
    g_assert_cmpstr(js(same, "metadata.resourceVersion"), ==, js(ok, "metadata.resourceVersion"));
    /* the precondition is read from the patch, before anything else is dropped */
    g_autoptr(Resp) stale =
            http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json", body);
    assert_status(stale, 409, "Conflict");
}

/* A status patch whose other members reach into what the stored claim has (labels, a
 * request): the claim keeps them, in the answer and in the store, and the patch's precondition
 * and status apply. */
static void test_dra_claim_status_nested(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, RC_PATH,
                             "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                             "\"metadata\":{\"name\":\"c\",\"labels\":{\"a\":\"b\"}},\"spec\":{"
                             "\"devices\":{\"requests\":[" GPU_REQ("gpu") "]}}}");
    assert_status(c, 201, NULL);
    g_autofree char *body = g_strdup_printf(
            "{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"a\":\"x\",\"n\":"
            "\"y\"}},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"other\"}]}},\"status\":{"
            "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
            "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}}",
            js(c, "metadata.resourceVersion"));
    g_autoptr(Resp) ok =
            http(srv, "PATCH", RC_PATH "/c/status", "application/merge-patch+json", body);
    assert_status(ok, 200, NULL);
    g_autoptr(Resp) got = get(srv, RC_PATH "/c");
    for (guint i = 0; i < 2; i++) {
        json_object *j = i == 0 ? ok->json : got->json;
        g_assert_cmpstr(kas_json_get_string(j, "metadata.labels.a"), ==, "b");
        g_assert_null(kas_json_get(j, "metadata.labels.n"));
        g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(
                                                    kas_json_get(j, "spec.devices.requests"), 0),
                                            "name"),
                        ==, "gpu");
        g_assert_nonnull(kas_json_get(j, "status.allocation.devices.results"));
    }
    g_assert_cmpstr(json_object_to_json_string(got->json), ==,
                    json_object_to_json_string(ok->json));
    /* a first status with a null in it: the null removes nothing and is not stored */
    g_autoptr(Resp) e = post(srv, RC_PATH, RC_JSON("e", "{\"requests\":[" GPU_REQ("gpu") "]}"));
    assert_status(e, 201, NULL);
    g_autoptr(Resp) first =
            http(srv, "PATCH", RC_PATH "/e/status", "application/merge-patch+json",
                 "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
                 "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}],"
                 "\"config\":null}},\"reservedFor\":null}}");
    assert_status(first, 200, NULL);
    g_assert_nonnull(kas_json_get(first->json, "status.allocation.devices.results"));
    g_assert_false(
            json_object_object_get_ex(kas_json_get(first->json, "status"), "reservedFor", NULL));
    g_assert_false(json_object_object_get_ex(kas_json_get(first->json, "status.allocation.devices"),
                                             "config", NULL));
    /* a null status removes it; the rest stays */
    g_autoptr(Resp) cleared = http(srv, "PATCH", RC_PATH "/c/status",
                                   "application/merge-patch+json", "{\"status\":null}");
    assert_status(cleared, 200, NULL);
    g_assert_null(kas_json_get(cleared->json, "status.allocation"));
    g_assert_cmpstr(kas_json_get_string(cleared->json, "metadata.labels.a"), ==, "b");
}

/* @text with each of @from's strings replaced by the one at the same index in @to. */
/* "\"@name\":\"V\"", V the string at @dotted in @o or, when that is an array (conditions),
 * member @name of its first element: as the stored text writes it. Newly allocated. */
static char *member_text(json_object *o, const char *name, const char *dotted)
{
    json_object *at = kas_json_get(o, dotted);
    if (json_object_is_type(at, json_type_array))
        at = json_object_object_get(json_object_array_get_idx(at, 0), name);
    g_assert_true(json_object_is_type(at, json_type_string));
    return g_strdup_printf("\"%s\":\"%s\"", name, json_object_get_string(at));
}

static char *replace_all(const char *text, const char *const *from, const char *const *to, guint n)
{
    g_autofree char *cur = g_strdup(text);
    for (guint i = 0; i < n; i++) {
        g_auto(GStrv) parts = g_strsplit(cur, from[i], -1);
        g_free(cur);
        cur = g_strjoinv(to[i], parts);
    }
    return g_steal_pointer(&cur);
}

/* The claim @i of the splice test: labels, annotations, finalizers, requests and a status that
 * vary with @i (escapes and non-ASCII among them). */
static void splice_case(GRand *rnd, guint i, const char *name, char **claim, char **status)
{
    static const char *const words[] = {"gpu", "a\\\"q", "caf\u00e9", "x/y", "n\\\\b", "\u65e5"};
    GString *c = g_string_new("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                              "\"metadata\":{\"name\":\"");
    g_string_append_printf(c, "%s\"", name);
    if (i % 2 == 0)
        g_string_append_printf(c, ",\"labels\":{\"k%u\":\"v%u\",\"app\":\"t\"}", i, i);
    if (i % 3 == 0)
        g_string_append_printf(c, ",\"annotations\":{\"note\":\"%s %u\"}",
                               words[g_rand_int_range(rnd, 0, G_N_ELEMENTS(words))], i);
    if (i % 5 == 0)
        g_string_append(c, ",\"finalizers\":[\"example.com/keep\"]");
    guint n_req = (guint)g_rand_int_range(rnd, 1, 4);
    g_string_append(c, "},\"spec\":{\"devices\":{\"requests\":[");
    for (guint r = 0; r < n_req; r++) {
        if (r == 0 && i % 3 == 0) /* prioritized alternatives: a result names a subrequest */
            g_string_append(c, "{\"name\":\"r0\",\"firstAvailable\":[{\"name\":\"big\","
                               "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2},{\"name\":"
                               "\"one\",\"deviceClassName\":\"gpu.nvidia.com\"}]}");
        else
            g_string_append_printf(c,
                                   "%s{\"name\":\"r%u\",\"exactly\":{\"deviceClassName\":"
                                   "\"gpu.nvidia.com\",\"count\":%u}}",
                                   r > 0 ? "," : "", r, r + 1);
    }
    g_string_append(c, "]}}");
    if (i % 4 == 1)
        g_string_append(c, ",\"status\":{}");
    g_string_append(c, "}");
    GString *st = g_string_new("{\"metadata\":{},\"status\":{\"allocation\":{\"devices\":{"
                               "\"results\":[");
    for (guint r = 0; r < n_req; r++)
        g_string_append_printf(st,
                               "%s{\"request\":\"r%u%s\",\"driver\":\"gpu.nvidia.com\","
                               "\"pool\":\"node-%u\",\"device\":\"gpu-%u\"}",
                               r > 0 ? "," : "", r, r == 0 && i % 3 == 0 ? "/one" : "", i,
                               g_rand_int_range(rnd, 0, 8));
    g_string_append(st, "]}");
    if (i % 2 == 1)
        g_string_append_printf(st,
                               ",\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":"
                               "[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
                               "[\"node-%u\"]}]}]}",
                               i);
    g_string_append(st, "}");
    guint n_res = (guint)g_rand_int_range(rnd, 0, 3);
    if (n_res > 0 || i % 7 == 0) {
        g_string_append(st, ",\"reservedFor\":[");
        for (guint r = 0; r < n_res; r++)
            g_string_append_printf(st,
                                   "%s{\"resource\":\"pods\",\"name\":\"p-%u-%u\",\"uid\":"
                                   "\"00000000-0000-0000-0000-%012u\"}",
                                   r > 0 ? "," : "", i, r, i * 10 + r);
        g_string_append(st, "]");
    }
    g_string_append(st, "}}");
    *claim = g_string_free(c, FALSE);
    *status = g_string_free(st, FALSE);
}

/* Creates claim @a_claim, named @a_name, and its twin named @b_name (*@ca, *@cb: the answers). */
static void post_twin_claims(KasServer *srv, const char *a_claim, const char *a_name,
                             const char *b_name, Resp **ca, Resp **cb)
{
    const char *from[] = {a_name};
    const char *to[] = {b_name};
    g_autofree char *b_claim = replace_all(a_claim, from, to, 1);
    *ca = post(srv, RC_PATH, a_claim);
    *cb = post(srv, RC_PATH, b_claim);
    assert_status(*ca, 201, NULL);
    assert_status(*cb, 201, NULL);
}

/* Twin claims @a_name and @b_name answered @pa and @pb to the same status write: the answers and
 * the stored claims are the same bytes once b's name, uid, creation time and resourceVersion read
 * as a's. Returns a's stored claim. */
static Resp *assert_twin_claims(KasServer *srv, const char *a_name, const char *b_name,
                                const Resp *pa, const Resp *pb)
{
    g_autofree char *a_path = g_strdup_printf(RC_PATH "/%s", a_name);
    g_autofree char *b_path = g_strdup_printf(RC_PATH "/%s", b_name);
    Resp *ga = get(srv, a_path);
    g_autoptr(Resp) gb = get(srv, b_path);
    g_autofree char *rva =
            g_strdup_printf("\"resourceVersion\":\"%s\"", js(ga, "metadata.resourceVersion"));
    g_autofree char *rvb =
            g_strdup_printf("\"resourceVersion\":\"%s\"", js(gb, "metadata.resourceVersion"));
    const char *bf[] = {b_name, js(gb, "metadata.uid"), js(gb, "metadata.creationTimestamp"), rvb};
    const char *af[] = {a_name, js(ga, "metadata.uid"), js(ga, "metadata.creationTimestamp"), rva};
    g_autofree char *gb_as_a = replace_all(gb->body, bf, af, G_N_ELEMENTS(bf));
    g_autofree char *pb_as_a = replace_all(pb->body, bf, af, G_N_ELEMENTS(bf));
    g_assert_cmpstr(ga->body, ==, gb_as_a);
    g_assert_cmpstr(pa->body, ==, pb_as_a);
    return ga;
}

/* A claim's first status spliced into its stored text is byte for byte what merging it into
 * the parsed claim and printing that makes, over generated claims; answers to a bad status or a
 * stale resourceVersion are the same too. */
static void test_dra_claim_status_splice(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(GRand) rnd = g_rand_new_with_seed(22);
    guint spliced = kas_ops_status_splices();
    guint text_spliced = kas_ops_status_text_splices();
    for (guint i = 0; i < 48; i++) {
        char a_name[16], b_name[16];
        g_snprintf(a_name, sizeof a_name, "a-%03u", i);
        g_snprintf(b_name, sizeof b_name, "b-%03u", i);
        g_autofree char *a_claim = NULL, *a_status = NULL;
        splice_case(rnd, i, a_name, &a_claim, &a_status);
        g_autoptr(Resp) ca = NULL;
        g_autoptr(Resp) cb = NULL;
        post_twin_claims(srv, a_claim, a_name, b_name, &ca, &cb);
        g_autofree char *a_path = g_strdup_printf(RC_PATH "/%s/status", a_name);
        g_autofree char *b_path = g_strdup_printf(RC_PATH "/%s/status", b_name);
        if (i % 6 == 0) {
            /* a stale resourceVersion, results naming no request or no subrequest of r0's
             * firstAvailable, another uid: refused alike */
            const char *bad[] = {
                    "{\"metadata\":{\"resourceVersion\":\"1\"},\"status\":{"
                    "\"reservedFor\":[]}}",
                    "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{"
                    "\"request\":\"nope\",\"driver\":\"gpu.nvidia.com\",\"pool\":"
                    "\"p\",\"device\":\"d\"}]}}}}",
                    "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{"
                    "\"request\":\"r0/nope\",\"driver\":\"gpu.nvidia.com\","
                    "\"pool\":\"p\",\"device\":\"d\"}]}}}}",
                    "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{"
                    "\"request\":\"r0/one/x\",\"driver\":\"gpu.nvidia.com\","
                    "\"pool\":\"p\",\"device\":\"d\"}]}}}}",
                    "{\"metadata\":{\"uid\":\"wrong\"},\"status\":{\"reservedFor\":[]}}"};
            /* b's name and uid read as a's */
            const char *b_id[] = {b_name, js(cb, "metadata.uid")};
            const char *a_id[] = {a_name, js(ca, "metadata.uid")};
            for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
                kas_ops_set_status_splice(TRUE);
                g_autoptr(Resp) ea =
                        http(srv, "PATCH", a_path, "application/merge-patch+json", bad[k]);
                kas_ops_set_status_splice(FALSE);
                g_autoptr(Resp) eb =
                        http(srv, "PATCH", b_path, "application/merge-patch+json", bad[k]);
                kas_ops_set_status_splice(TRUE);
                g_assert_cmpint(ea->code, ==, k == 0 || k == 4 ? 409 : 422);
                g_assert_cmpint(eb->code, ==, ea->code);
                g_autofree char *eb_as_a = replace_all(eb->body, b_id, a_id, 2);
                g_assert_cmpstr(ea->body, ==, eb_as_a);
            }
        }
        /* with the preconditions the scheduler sends (its resourceVersion) or none */
        const char *no_rv[] = {"{\"metadata\":{}"};
        const char *with_rv[] = {"{\"metadata\":{\"resourceVersion\":RV}"};
        const char *rv_mark[] = {"RV"};
        g_autofree char *a_body =
                i % 2 == 0 ? replace_all(a_status, no_rv, with_rv, 1) : g_strdup(a_status);
        g_autofree char *rv_a = g_strdup_printf("\"%s\"", js(ca, "metadata.resourceVersion"));
        g_autofree char *rv_b = g_strdup_printf("\"%s\"", js(cb, "metadata.resourceVersion"));
        const char *rv_a_v[] = {rv_a}, *rv_b_v[] = {rv_b};
        g_autofree char *send_a = replace_all(a_body, rv_mark, rv_a_v, 1);
        g_autofree char *send_b = replace_all(a_body, rv_mark, rv_b_v, 1);
        kas_ops_set_status_splice(TRUE);
        g_autoptr(Resp) pa = http(srv, "PATCH", a_path, "application/merge-patch+json", send_a);
        kas_ops_set_status_splice(FALSE);
        g_autoptr(Resp) pb = http(srv, "PATCH", b_path, "application/merge-patch+json", send_b);
        kas_ops_set_status_splice(TRUE);
        assert_status(pa, 200, NULL);
        assert_status(pb, 200, NULL);
        g_autoptr(Resp) ga = assert_twin_claims(srv, a_name, b_name, pa, pb);
        g_assert_nonnull(kas_json_get(ga->json, "status.allocation.devices.results"));
    }
    /* every first status above went through the splice, the refused ones aside */
    g_assert_cmpuint(kas_ops_status_splices() - spliced, ==, 48);
    /* and from the body's text, not parsed (as kube-batchd writes them) */
    g_assert_cmpuint(kas_ops_status_text_splices() - text_spliced, ==, 48);
}

/* One case of the claim-status-text test: a status patch's body and whether it is read from its
 * text (the rest, valid or not, parsed as before). */
typedef struct {
    const char *body;
    gboolean text;
} TextCase;

#define TC_RESULT(req, drv, pool, dev)                                                             \
    "{\"request\":\"" req "\",\"driver\":\"" drv "\",\"pool\":\"" pool "\",\"device\":\"" dev "\"" \
    "}"
#define TC_GOOD_RESULT TC_RESULT("gpu", "gpu.nvidia.com", "node-1", "gpu-0")
#define TC_SEL                                                                                     \
    "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","       \
    "\"operator\":\"In\",\"values\":[\"node-1\"]}]}]}"
#define TC_POD(n)         "{\"resource\":\"pods\",\"name\":\"p" n "\",\"uid\":\"u" n "\"}"
#define TC_ALLOC(results) "\"allocation\":{\"devices\":{\"results\":[" results "]}," TC_SEL "}"
#define TC_STATUS(inner)  "{\"metadata\":{},\"status\":{" inner "}}"

static const TextCase text_cases[] = {
        /* what kube-batchd sends, with and without its preconditions */
        {TC_STATUS(TC_ALLOC(TC_GOOD_RESULT) ",\"reservedFor\":[" TC_POD("1") "]"), TRUE},
        {"{\"status\":{" TC_ALLOC(TC_GOOD_RESULT) "}}", TRUE},
        {"{\"status\":{\"reservedFor\":[]},\"metadata\":{\"uid\":UID,\"resourceVersion\":RV}}",
         TRUE},
        {TC_STATUS("\"allocation\":{}"), TRUE},
        {TC_STATUS("\"allocation\":{\"devices\":{\"results\":[" TC_GOOD_RESULT
                   "," TC_RESULT("gpu", "Gpu.Nvidia.Com", "a/b.c", "gpu-1") "]}}"),
         TRUE},
        /* valid but not printed back as written, or beyond what the text path reads: parsed */
        {"{\"metadata\":{}, \"status\":{" TC_ALLOC(TC_GOOD_RESULT) "}}", TRUE},
        {TC_STATUS(" " TC_ALLOC(TC_GOOD_RESULT)), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "node-1", "gpu\\u002d0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "node-\\/1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC("{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"p\","
                            "\"device\":\"gpu-0\",\"device\":\"gpu-1\"}")),
         FALSE},
        {TC_STATUS(TC_ALLOC("{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"p\","
                            "\"device\":\"gpu-0\",\"shareID\":"
                            "\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\"}")),
         FALSE},
        {TC_STATUS(TC_ALLOC("{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"p\","
                            "\"device\":\"gpu-0\",\"consumedCapacity\":{\"memory\":\"1Gi\"}}")),
         FALSE},
        {TC_STATUS("\"allocation\":{\"devices\":{\"results\":[]},\"nodeSelector\":{"
                   "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"a\",\"key\":\"b\"}]}]}}"),
         FALSE},
        {TC_STATUS("\"allocation\":{\"devices\":{\"results\":[],\"config\":[]}}"), FALSE},
        {TC_STATUS(TC_ALLOC(TC_GOOD_RESULT) ",\"devices\":[{\"driver\":\"d\",\"pool\":\"p\","
                                            "\"device\":\"x\",\"conditions\":[]}]"),
         FALSE},
        {TC_STATUS("\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u\","
                   "\"apiGroup\":\"\"}]," TC_ALLOC(TC_GOOD_RESULT)),
         FALSE},
        {TC_STATUS("\"reservedFor\":[" TC_POD("1") "," TC_POD("2") "," TC_POD("3") "," TC_POD("4") "," TC_POD("5") "," TC_POD("6") "," TC_POD("7") "," TC_POD("8") "," TC_POD(
                 "9") "," TC_POD("10") "," TC_POD("11") "," TC_POD("12") "," TC_POD("13") "," TC_POD("14") "," TC_POD("15") "," TC_POD("16") "," TC_POD("17") "]," TC_ALLOC(TC_GOOD_RESULT)),
         FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "node-\u00e9", "gpu-0"))), FALSE},
        {TC_STATUS("\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                   "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n\u00e9\"]}]}]}}"),
         FALSE},
        {TC_STATUS("\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                   "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"a\\/b\"]}]}]}}"),
         FALSE},
        {TC_STATUS("\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                   "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"a/b\"]}]}]}}"),
         TRUE},
        {"{\"kind\":\"ResourceClaim\",\"status\":{\"reservedFor\":[]}}", FALSE},
        {"{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"status\":{\"reservedFor\":[]}}", FALSE},
        {"{\"metadata\":{\"uid\":\"u\\u0031\"},\"status\":{\"reservedFor\":[]}}", FALSE},
        {"{\"metadata\":{\"resourceVersion\":RV,\"resourceVersion\":RV},\"status\":{"
         "\"reservedFor\":[]}}",
         FALSE},
        {TC_STATUS(""), FALSE},
        {"{\"status\":null}", FALSE},
        {"{\"status\":{\"reservedFor\":null}}", FALSE},
        {"{\"status\":{\"reservedFor\":[]},\"status\":{\"reservedFor\":[]}}", FALSE},
        /* refused: the same answer, whichever path gave it */
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"status\":{\"reservedFor\":[]}}", TRUE},
        {"{\"metadata\":{\"uid\":\"wrong\"},\"status\":{\"reservedFor\":[]}}", TRUE},
        {"{\"metadata\":{\"resourceVersion\":\"x1\"},\"status\":{\"reservedFor\":[]}}", TRUE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("tpu", "gpu.nvidia.com", "node-1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu/one", "gpu.nvidia.com", "node-1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("", "gpu.nvidia.com", "node-1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu_nvidia!", "node-1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "", "node-1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "a//b", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "node-1", "GPU_0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "node-1", ""))), FALSE},
        {TC_STATUS(TC_ALLOC(
                 TC_RESULT("gpu", "gpu.nvidia.com", "node-1",
                           "d123456789012345678901234567890123456789012345678901234567890123"))),
         FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT(
                 "gpu", "d12345678901234567890123456789012345678901234567890123456789.com",
                 "node-1", "gpu-0"))),
         FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "gpu.nvidia.com", "a/", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC(TC_RESULT("gpu", "-gpu.com", "node-1", "gpu-0"))), FALSE},
        {TC_STATUS(TC_ALLOC("{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"p\"}")),
         FALSE},
        {TC_STATUS(TC_ALLOC("{\"request\":\"gpu\",\"driver\":7,\"pool\":\"p\",\"device\":\"d\"}")),
         FALSE},
        {TC_STATUS("\"reservedFor\":[" TC_POD("1") "]"), FALSE},
        {TC_STATUS(
                 "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"\"}]," TC_ALLOC(
                         TC_GOOD_RESULT)),
         FALSE},
        {TC_STATUS("\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\"}]," TC_ALLOC(
                 TC_GOOD_RESULT)),
         FALSE},
        {TC_STATUS("\"reservedFor\":[" TC_POD("1") "," TC_POD("1") "]," TC_ALLOC(TC_GOOD_RESULT)),
         FALSE},
        {TC_STATUS("\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":[]}}"), FALSE},
        {TC_STATUS("\"allocation\":{\"nodeSelector\":{}}"), FALSE},
        {"{\"status\":", FALSE},
        {"[]", FALSE},
        {"{\"status\":{\"reservedFor\":[]}} x", FALSE},
};

/* A claim status patch whose body is read from its text (kas_ops_claim_status_text: not parsed)
 * answers and stores exactly what the general path does with the parsed body, over bodies it
 * takes and bodies it leaves to the general path: odd forms, a member twice, escapes, and every
 * kind of refusal (preconditions, requests, names, reservations, node selector, malformed). */
static void test_dra_claim_status_text(void)
{
    g_autoptr(KasServer) srv = start();
    guint text_before = kas_ops_status_text_splices();
    guint expect_text = 0;
    /* 33 results: past AllocationResultsMaxSize, refused alike */
    GString *many = g_string_new(TC_STATUS("\"allocation\":{\"devices\":{\"results\":["));
    g_string_truncate(many, many->len - 2);
    for (guint i = 0; i < 33; i++)
        g_string_append_printf(many, "%s" TC_RESULT("gpu", "gpu.nvidia.com", "n", "gpu-%u"),
                               i > 0 ? "," : "", i);
    g_string_append(many, "]}}}}");
    g_autofree char *many_text = g_string_free(many, FALSE);
    for (guint i = 0; i <= G_N_ELEMENTS(text_cases); i++) {
        TextCase c = i < G_N_ELEMENTS(text_cases) ? text_cases[i] : (TextCase){many_text, FALSE};
        char a_name[16], b_name[16];
        g_snprintf(a_name, sizeof a_name, "ta-%03u", i);
        g_snprintf(b_name, sizeof b_name, "tb-%03u", i);
        g_autofree char *a_claim = g_strdup_printf(
                "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":"
                "\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}",
                a_name);
        g_autoptr(Resp) ca = NULL;
        g_autoptr(Resp) cb = NULL;
        post_twin_claims(srv, a_claim, a_name, b_name, &ca, &cb);
        g_autofree char *rv_a = g_strdup_printf("\"%s\"", js(ca, "metadata.resourceVersion"));
        g_autofree char *rv_b = g_strdup_printf("\"%s\"", js(cb, "metadata.resourceVersion"));
        g_autofree char *uid_a = g_strdup_printf("\"%s\"", js(ca, "metadata.uid"));
        g_autofree char *uid_b = g_strdup_printf("\"%s\"", js(cb, "metadata.uid"));
        const char *marks[] = {"RV", "UID"};
        const char *a_vals[] = {rv_a, uid_a}, *b_vals[] = {rv_b, uid_b};
        g_autofree char *send_a = replace_all(c.body, marks, a_vals, 2);
        g_autofree char *send_b = replace_all(c.body, marks, b_vals, 2);
        g_autofree char *a_path = g_strdup_printf(RC_PATH "/%s/status", a_name);
        g_autofree char *b_path = g_strdup_printf(RC_PATH "/%s/status", b_name);
        guint text_at = kas_ops_status_text_splices();
        kas_ops_set_status_splice(TRUE);
        g_autoptr(Resp) pa = http(srv, "PATCH", a_path, "application/merge-patch+json", send_a);
        kas_ops_set_status_splice(FALSE);
        g_autoptr(Resp) pb = http(srv, "PATCH", b_path, "application/merge-patch+json", send_b);
        kas_ops_set_status_splice(TRUE);
        guint took = kas_ops_status_text_splices() - text_at;
        g_test_message("case %u: %ld, read from its text: %u: %s", i, pa->code, took, c.body);
        g_assert_cmpint(pa->code, ==, pb->code);
        /* a refusal by the text path is not a splice: judged by the answer alone */
        if (pa->code == 200)
            g_assert_cmpuint(took, ==, c.text ? 1 : 0);
        expect_text += took;
        resp_free(assert_twin_claims(srv, a_name, b_name, pa, pb));
    }
    /* what kube-batchd sends was read from its text */
    g_assert_cmpuint(kas_ops_status_text_splices() - text_before, ==, expect_text);
    g_assert_cmpuint(expect_text, >=, 6);
}

/* kas_claims_reservations_live_locked (the resource-claim controller's hook, read from the
 * claim's text): every reservation held by a live pod, and one at least; reservations of other
 * resources or API groups are not its to judge. */
static void test_dra_reservations_live(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) p1 = post(srv, "/api/v1/namespaces/default/pods", POD_JSON("p1", "", ""));
    g_autoptr(Resp) p2 = post(srv, "/api/v1/namespaces/default/pods", POD_JSON("p2", "", ""));
    assert_status(p1, 201, NULL);
    assert_status(p2, 201, NULL);
    g_autofree char *live1 = g_strdup_printf(
            "{\"resource\":\"pods\",\"name\":\"p1\",\"uid\":\"%s\"}", js(p1, "metadata.uid"));
    g_autofree char *live2 = g_strdup_printf(
            "{\"uid\":\"%s\",\"name\":\"p2\",\"resource\":\"pods\",\"apiGroup\":\"\"}",
            js(p2, "metadata.uid"));
    const char *stale = "{\"resource\":\"pods\",\"name\":\"p1\",\"uid\":\"other\"}";
    const char *gone = "{\"resource\":\"pods\",\"name\":\"p9\",\"uid\":\"u9\"}";
    const char *other = "{\"resource\":\"jobs\",\"name\":\"j\",\"uid\":\"u8\"}";
    const char *group = "{\"apiGroup\":\"example.com\",\"resource\":\"pods\",\"name\":\"x\","
                        "\"uid\":\"u7\"}";
    struct {
        const char *a, *b; /* reservedFor's entries (NULL: fewer), none at all: no status */
        gboolean status, live;
    } cases[] = {
            {NULL, NULL, FALSE, FALSE},  {live1, NULL, TRUE, TRUE},  {live1, live2, TRUE, TRUE},
            {live1, stale, TRUE, FALSE}, {gone, live1, TRUE, FALSE}, {other, NULL, TRUE, TRUE},
            {group, live2, TRUE, TRUE},  {live2, other, TRUE, TRUE}, {other, gone, TRUE, FALSE},
    };
    KasStore *store = kas_server_store(srv);
    kas_store_lock(store);
    KasRes *claims = kas_store_find_locked(store, "resource.k8s.io", "v1", "resourceclaims");
    kas_store_unlock(store);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *name = g_strdup_printf("c%u", i);
        g_autofree char *path = g_strdup_printf(RC_PATH "/%s/status", name);
        g_autofree char *claim = g_strdup_printf(
                "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
                "\"name\":\"%s\"},\"spec\":{\"devices\":{\"requests\":[" GPU_REQ("gpu") "]}}}",
                name);
        g_autoptr(Resp) c = post(srv, RC_PATH, claim);
        assert_status(c, 201, NULL);
        if (cases[i].status) {
            g_autofree char *body = g_strdup_printf(
                    "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"
                    "\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":"
                    "\"gpu-%u\"}]}},\"reservedFor\":[%s%s%s]}}",
                    i, cases[i].a, cases[i].b != NULL ? "," : "",
                    cases[i].b != NULL ? cases[i].b : "");
            g_autoptr(Resp) w = http(srv, "PATCH", path, "application/merge-patch+json", body);
            assert_status(w, 200, NULL);
        }
        kas_store_lock(store);
        KasObj *o = kas_store_get_locked(store, claims, "default", name);
        gboolean live = kas_claims_reservations_live_locked(store, o);
        kas_store_unlock(store);
        if (live != cases[i].live)
            g_error("case %u: %s, expected %s", i, live ? "live" : "not live",
                    cases[i].live ? "live" : "not live");
    }
}

static void test_dra_invalid(void)
{
    g_autoptr(KasServer) srv = start();
    static const struct {
        const char *path, *body, *message;
    } cases[] = {
            {RC_PATH, RC_JSON("a", "{\"requests\":[{\"name\":\"gpu\"}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: spec.devices.requests[0]: Required "
             "value: exactly one of `exactly` or `firstAvailable` is required"},
            {RC_PATH,
             RC_JSON("a",
                     "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"g\"},"
                     "\"firstAvailable\":[{\"name\":\"s\",\"deviceClassName\":\"g\"}]}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: spec.devices.requests[0]: Invalid "
             "value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple "
             "fields are set"},
            {RC_PATH,
             RC_JSON("a", "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"g\","
                          "\"allocationMode\":\"All\",\"count\":2}}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: "
             "spec.devices.requests[0].exactly.count: "
             "Invalid value: 2: must not be specified when allocationMode is 'All'"},
            {RC_PATH,
             RC_JSON("a", "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"g\","
                          "\"count\":-1}}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: "
             "spec.devices.requests[0].exactly.count: "
             "Invalid value: -1: must be greater than zero"},
            {RC_PATH,
             RC_JSON("a", "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"g\","
                          "\"allocationMode\":\"Some\"}}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: "
             "spec.devices.requests[0].exactly.allocationMode: Unsupported value: \"Some\": "
             "supported values: \"All\", \"ExactCount\""},
            {RC_PATH, RC_JSON("a", "{\"requests\":[{\"name\":\"Gpu\",\"exactly\":{}}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: [spec.devices.requests[0].name: "
             "Invalid value: \"Gpu\": a lowercase RFC 1123 label must consist of lower case "
             "alphanumeric characters or '-', and must start and end with an alphanumeric "
             "character "
             "(e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?'), spec.devices.requests[0].exactly.deviceClassName: "
             "Required value]"},
            {RC_PATH, RC_JSON("a", "{\"requests\":[" GPU_REQ("gpu") "," GPU_REQ("gpu") "]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: spec.devices.requests[1]: Duplicate "
             "value: \"gpu\""},
            {RC_PATH,
             RC_JSON("a",
                     "{\"requests\":[" GPU_REQ("gpu") "],\"constraints\":[{\"requests\":["
                                                      "\"tpu\"],\"matchAttribute\":\"island\"}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: "
             "[spec.devices.constraints[0].requests[0]: "
             "Invalid value: \"tpu\": must be the name of a request in the claim or the name of a "
             "request and a subrequest separated by '/', "
             "spec.devices.constraints[0].matchAttribute: "
             "Invalid value: \"island\": a fully qualified name must be a domain and a name "
             "separated "
             "by a slash]"},
            {RC_PATH,
             RC_JSON("a", "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"g\","
                          "\"selectors\":[{}]}}]}"),
             "ResourceClaim.resource.k8s.io \"a\" is invalid: "
             "spec.devices.requests[0].exactly.selectors[0].cel: Required value"},
            {RCT_PATH,
             "{\"metadata\":{\"name\":\"t\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":[{"
             "\"name\":\"gpu\"}]}}}}",
             "ResourceClaimTemplate.resource.k8s.io \"t\" is invalid: "
             "spec.spec.devices.requests[0]: "
             "Required value: exactly one of `exactly` or `firstAvailable` is required"},
            {DC_PATH,
             "{\"metadata\":{\"name\":\"gpu.example.com\"},\"spec\":{\"config\":[{\"opaque\":{"
             "\"driver\":\"gpu.example.com\",\"parameters\":[1]}}]}}",
             "DeviceClass.resource.k8s.io \"gpu.example.com\" is invalid: "
             "spec.config[0].opaque.parameters: Invalid value: \"<value omitted>\": must be a "
             "valid "
             "JSON object"},
            {RS_PATH,
             "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"pool\":{"
             "\"name\":\"n1\",\"resourceSliceCount\":1}}}",
             "ResourceSlice.resource.k8s.io \"s\" is invalid: spec: Required value: exactly one of "
             "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"},
            {RS_PATH,
             "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":"
             "\"n1\",\"allNodes\":true,\"pool\":{\"name\":\"n1\"}}}",
             "ResourceSlice.resource.k8s.io \"s\" is invalid: [spec.pool.resourceSliceCount: "
             "Invalid "
             "value: 0: must be greater than zero, spec: Invalid value: \"{`nodeName`, "
             "`allNodes`}\": "
             "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
             "required, but multiple fields are set]"},
            {RS_PATH,
             RS_JSON("s", "n1",
                     "[{\"name\":\"gpu-0\",\"attributes\":{\"gpu.nvidia.com/9x\":{\"int\":1},"
                     "\"uuid\":{},\"driverVersion\":{\"version\":\"550.1\"}},\"capacity\":{"
                     "\"memory\":{\"value\":\"80Qi\"}}}]"),
             "ResourceSlice.resource.k8s.io \"s\" is invalid: [spec.devices[0].attributes: Invalid "
             "value: \"9x\": a valid C identifier must start with alphabetic character or '_', "
             "followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or "
             "'MY_NAME',  "
             "or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*'), "
             "spec.devices[0].attributes[uuid]: Invalid value: \"\": exactly one value must be "
             "specified, spec.devices[0].attributes[driverVersion].version: Invalid value: "
             "\"550.1\": must be a string compatible with semver.org spec 2.0.0, "
             "spec.devices[0].capacity[memory].value: Invalid value: \"80Qi\": quantities must "
             "match "
             "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$']"},
            {RS_PATH, RS_JSON("s", "n1", "[" DEV("gpu-0") "," DEV("gpu-0") "]"),
             "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices[1]: Duplicate value: "
             "\"gpu-0\""},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Resp) r = post(srv, cases[i].path, cases[i].body);
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(js(r, "message"), ==, cases[i].message);
    }
}

/* CEL selectors are compiled: syntax and type errors refused with the expression; valid CEL that
 * kb-cel does not implement accepted, as kube-apiserver accepts it. */
static void test_dra_cel(void)
{
    g_autoptr(KasServer) srv = start();
    static const struct {
        const char *path, *body, *prefix;
    } bad[] = {
            {DC_PATH,
             "{\"metadata\":{\"name\":\"syntax\"},\"spec\":{\"selectors\":[{\"cel\":{"
             "\"expression\":\"device.driver == \"}}]}}",
             "DeviceClass.resource.k8s.io \"syntax\" is invalid: spec.selectors[0].cel.expression: "
             "Invalid value: \"device.driver == \": compilation failed: "},
            {RC_PATH,
             RC_JSON("type",
                     "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
                     "\"g\",\"selectors\":[{\"cel\":{\"expression\":\"device.driver\"}}]}}]}"),
             "ResourceClaim.resource.k8s.io \"type\" is invalid: "
             "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "
             "\"device.driver\": compilation failed: "},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(Resp) r = post(srv, bad[i].path, bad[i].body);
        assert_status(r, 422, "Invalid");
        g_assert_true(g_str_has_prefix(js(r, "message"), bad[i].prefix));
    }
    g_autoptr(Resp) ok = post(srv, DC_PATH,
                              "{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{"
                              "\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
                              "'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
                              "'gpu' && device.capacity['gpu.nvidia.com'].memory.compareTo("
                              "quantity('40Gi')) >= 0\"}}]}}");
    assert_status(ok, 201, NULL);
    g_autoptr(Resp) unsupported = post(srv, DC_PATH,
                                       "{\"metadata\":{\"name\":\"bytes\"},\"spec\":{"
                                       "\"selectors\":[{\"cel\":{\"expression\":\"b'abc' == "
                                       "b'abc'\"}}]}}");
    assert_status(unsupported, 201, NULL);
}

/* A list of @n copies of @item (a format with one %u, the index) as "[a,b,...]". */
static char *repeat_list(guint n, const char *item)
{
    GString *s = g_string_new("[");
    for (guint i = 0; i < n; i++) {
        if (i > 0)
            g_string_append_c(s, ',');
        g_string_append_printf(s, item, i);
    }
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

/* ---- partitionable devices and consumable capacity ------------------------------------------ */

#define RS_SPEC(name, node, rest)                                                                  \
    "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":"  \
    "\"" node "\",\"pool\":{\"name\":\"" node "\",\"resourceSliceCount\":2}," rest "}}"
#define COUNTERS_80GB "{\"memory-slice\":{\"value\":\"8\"},\"multiprocessors\":{\"value\":\"98\"}}"
#define MIG_1G(name)                                                                               \
    "{\"name\":\"" name "\",\"consumesCounters\":[{\"counterSet\":\"gpu-0-counters\","             \
    "\"counters\":{\"memory-slice\":{\"value\":\"1\"},\"multiprocessors\":{\"value\":\"14\"}}}]}"

static void expect_invalid(KasServer *srv, const char *path, const char *body, const char *msg)
{
    g_autoptr(Resp) r = post(srv, path, body);
    assert_status(r, 422, "Invalid");
    if (strcmp(js(r, "message"), msg) != 0)
        g_error("%s\n  got:  %s\n  want: %s", body, js(r, "message"), msg);
}

/* A GPU's counter set in one slice, its MIG devices consuming it in another: accepted; each
 * structural rule and limit of sharedCounters and consumesCounters refused with the real
 * message. */
static void test_dra_partitionable(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) cs = post(srv, RS_PATH,
                              RS_SPEC("n1-counters", "n1",
                                      "\"sharedCounters\":[{\"name\":\"gpu-0-counters\","
                                      "\"counters\":" COUNTERS_80GB "}]"));
    assert_status(cs, 201, NULL);
    g_autoptr(Resp) ds = post(srv, RS_PATH,
                              RS_SPEC("n1-devices", "n1",
                                      "\"devices\":[" MIG_1G("gpu-0-mig-1g-10gb-0") "," MIG_1G(
                                              "gpu-0-mig-1g-10gb-1") "]"));
    assert_status(ds, 201, NULL);
    g_assert_cmpstr(
            kas_json_get_string(
                    json_object_array_get_idx(kas_json_get(ds->json, "spec.devices"), 1), "name"),
            ==, "gpu-0-mig-1g-10gb-1");
    const char *pre = "ResourceSlice.resource.k8s.io \"bad\" is invalid: ";
    static const struct {
        const char *rest, *msg;
    } cases[] = {
            {"\"sharedCounters\":[{\"name\":\"Gpu\",\"counters\":" COUNTERS_80GB "}]",
             "spec.sharedCounters[0].name: Invalid value: \"Gpu\": a lowercase RFC 1123 label "
             "must consist of lower case alphanumeric characters or '-', and must start and end "
             "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
            {"\"sharedCounters\":[{\"counters\":" COUNTERS_80GB "}]",
             "spec.sharedCounters[0].name: Required value"},
            {"\"sharedCounters\":[{\"name\":\"g\"}]",
             "spec.sharedCounters[0].counters: Required value"},
            {"\"sharedCounters\":[{\"name\":\"g\",\"counters\":" COUNTERS_80GB "},{\"name\":\"g\","
             "\"counters\":" COUNTERS_80GB "}]",
             "spec.sharedCounters[1].name: Duplicate value: \"g\""},
            {"\"sharedCounters\":[{\"name\":\"g\",\"counters\":{\"mem\":{\"value\":\"8Qi\"}}}]",
             "spec.sharedCounters[0].counters[mem].value: Invalid value: \"8Qi\": quantities must "
             "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
            {"\"sharedCounters\":[{\"name\":\"g\",\"counters\":{\"mem\":{}}}]",
             "spec.sharedCounters[0].counters[mem].value: Required value"},
            {"\"devices\":[{\"name\":\"d\",\"consumesCounters\":[{\"counters\":{\"m\":{\"value\":"
             "\"1\"}}}]}]",
             "spec.devices[0].consumesCounters[0].counterSet: Required value"},
            {"\"devices\":[{\"name\":\"d\",\"consumesCounters\":[{\"counterSet\":\"g\"}]}]",
             "spec.devices[0].consumesCounters[0].counters: Required value"},
            {"\"devices\":[{\"name\":\"d\",\"consumesCounters\":[{\"counterSet\":\"g\","
             "\"counters\":"
             "{\"m\":{\"value\":\"1\"}}},{\"counterSet\":\"g\",\"counters\":{\"m\":{\"value\":"
             "\"1\"}}}]}]",
             "spec.devices[0].consumesCounters[1].counterSet: Duplicate value: \"g\""},
            {"\"devices\":[{\"name\":\"d\",\"consumesCounters\":[{\"counterSet\":\"a\","
             "\"counters\":"
             "{\"m\":{\"value\":\"1\"}}},{\"counterSet\":\"b\",\"counters\":{\"m\":{\"value\":"
             "\"1\"}}},{\"counterSet\":\"c\",\"counters\":{\"m\":{\"value\":\"1\"}}}]}]",
             "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"},
            {"\"sharedCounters\":[{\"name\":\"g\",\"counters\":" COUNTERS_80GB "}],\"devices\":["
             "{\"name\":\"d\"}]",
             "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *body = g_strdup_printf(RS_SPEC("bad", "n2", "%s"), cases[i].rest);
        g_autofree char *want = g_strconcat(pre, cases[i].msg, NULL);
        expect_invalid(srv, RS_PATH, body, want);
    }
    /* limits: 8 counter sets, 32 counters a set, 64 devices once one consumes counters */
    static const struct {
        const char *fmt, *item, *field;
        guint max;
    } limits[] = {
            {RS_SPEC("s%u", "n3", "\"sharedCounters\":%s"),
             "{\"name\":\"g%u\",\"counters\":{\"m\":{\"value\":\"1\"}}}", "spec.sharedCounters", 8},
            {RS_SPEC("s%u", "n3", "\"sharedCounters\":[{\"name\":\"g\",\"counters\":%s}]"),
             "\"m%u\":{\"value\":\"1\"}", "spec.sharedCounters[0].counters", 32},
            {RS_SPEC("s%u", "n3", "\"devices\":%s"),
             "{\"name\":\"d%u\",\"consumesCounters\":[{\"counterSet\":\"g\",\"counters\":{\"m\":{"
             "\"value\":\"1\"}}}]}",
             "spec.devices", 64},
    };
    for (guint i = 0; i < G_N_ELEMENTS(limits); i++) {
        for (guint n = limits[i].max; n <= limits[i].max + 1; n++) {
            g_autofree char *list = repeat_list(n, limits[i].item);
            if (i == 1) {
                list[0] = '{';
                list[strlen(list) - 1] = '}';
            }
            g_autofree char *body = g_strdup_printf(limits[i].fmt, i * 1000 + n, list);
            g_autoptr(Resp) r = post(srv, RS_PATH, body);
            if (n == limits[i].max) {
                assert_status(r, 201, NULL);
                continue;
            }
            assert_status(r, 422, "Invalid");
            g_autofree char *want = g_strdup_printf("%s: Too many: %u: must have at most %u items",
                                                    limits[i].field, n, limits[i].max);
            g_assert_nonnull(strstr(js(r, "message"), want));
        }
    }
}

#define SHARED_DEV(policy)                                                                         \
    "[{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,\"capacity\":{\"memory\":{\"value\":"  \
    "\"80Gi\",\"requestPolicy\":" policy "}}}]"

/* A GPU shared by its memory capacity: each requestPolicy rule; claims' capacity.requests and
 * the status's consumedCapacity and shareID. */
static void test_dra_consumable_capacity(void)
{
    g_autoptr(KasServer) srv = start();
    static const char *const good[] = {
            "{\"default\":\"10Gi\",\"validRange\":{\"min\":\"10Gi\",\"step\":\"10Gi\"}}",
            "{\"default\":\"10Gi\",\"validValues\":[\"10Gi\",\"20Gi\",\"40Gi\",\"80Gi\"]}",
            "{\"default\":\"1Gi\"}",
    };
    for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autofree char *name = g_strdup_printf("ok%u", i);
        g_autofree char *devs = g_strdup_printf(SHARED_DEV("%s"), good[i]);
        g_autofree char *body =
                g_strdup_printf("{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"gpu."
                                "nvidia.com\",\"nodeName\":\"n%u\",\"pool\":{\"name\":\"n%u\","
                                "\"resourceSliceCount\":1},\"devices\":%s}}",
                                name, i, i, devs);
        g_autoptr(Resp) r = post(srv, RS_PATH, body);
        assert_status(r, 201, NULL);
    }
    const char *cp = "spec.devices[0].capacity[memory].requestPolicy";
    static const struct {
        const char *policy, *msg;
    } cases[] = {
            {"{\"validValues\":[\"10Gi\"]}",
             "%s.default: Required value: required when validValues is defined"},
            {"{\"validRange\":{\"min\":\"1Gi\"}}",
             "%s.default: Required value: required when validRange is defined"},
            {"{\"default\":\"1Gi\",\"validRange\":{}}",
             "%s.validRange.min: Required value: required when validRange is defined"},
            {"{\"default\":\"1Gi\",\"validValues\":[\"1Gi\"],\"validRange\":{\"min\":\"1Gi\"}}",
             "%s: Forbidden: exactly one policy can be specified, cannot specify \"validValues\" "
             "and \"validRange\" at the same time"},
            {"{\"default\":\"1Gi\",\"validValues\":[\"160Gi\"]}",
             "[%s.validValues[0]: Invalid value: \"160Gi\": option is larger than capacity value: "
             "80Gi, %s.validValues: Invalid value: \"1Gi\": default value is not valid according "
             "to the requestPolicy]"},
            {"{\"default\":\"1Gi\",\"validValues\":[\"2Gi\",\"1Gi\"]}",
             "%s.validValues[1]: Invalid value: \"1Gi\": values must be sorted in ascending order"},
            {"{\"default\":\"1Gi\",\"validValues\":[\"1Gi\",\"1Gi\"]}",
             "%s.validValues[1]: Duplicate value: \"1073741824\""},
            {"{\"default\":\"2Gi\",\"validRange\":{\"min\":\"160Gi\",\"max\":\"1Gi\"}}",
             "[%s.validRange.min: Invalid value: \"160Gi\": min is larger than capacity value: "
             "80Gi, %s.validRange.default: Invalid value: \"2Gi\": default is less than min: "
             "160Gi, %s.validRange.max: Invalid value: \"160Gi\": min is larger than max: 1Gi, "
             "%s.validRange.default: Invalid value: \"2Gi\": default is more than max: 1Gi]"},
            {"{\"default\":\"1Gi\",\"validRange\":{\"min\":\"1Gi\",\"max\":\"160Gi\"}}",
             "%s.validRange.max: Invalid value: \"160Gi\": max is larger than capacity value: "
             "80Gi"},
            {"{\"default\":\"2Gi\",\"validRange\":{\"min\":\"1Gi\",\"max\":\"10Gi\",\"step\":"
             "\"2Gi\"}}",
             "[%s.validRange.step: Invalid value: \"2Gi\": value is not a multiple of a given step "
             "(2Gi) from (1Gi), %s.validRange.step: Invalid value: \"10Gi\": value is not a "
             "multiple of a given step (2Gi) from (1Gi)]"},
            {"{\"default\":\"0\",\"validRange\":{\"min\":\"-1\",\"step\":\"1\"}}",
             "%s.validRange.min: Invalid value: \"-1\": must be greater than or equal to 0"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *devs = g_strdup_printf(SHARED_DEV("%s"), cases[i].policy);
        g_autofree char *body = g_strdup_printf(RS_JSON("bad", "n9", "%s"), devs);
        g_autofree char *m = g_strdup_printf(cases[i].msg, cp, cp, cp, cp);
        g_autofree char *want =
                g_strconcat("ResourceSlice.resource.k8s.io \"bad\" is invalid: ", m, NULL);
        expect_invalid(srv, RS_PATH, body, want);
    }
    /* a requestPolicy only where the device may be allocated more than once */
    expect_invalid(srv, RS_PATH,
                   RS_JSON("bad", "n9",
                           "[{\"name\":\"gpu-0\",\"capacity\":{\"memory\":{\"value\":\"80Gi\","
                           "\"requestPolicy\":{\"default\":\"1Gi\"}}}}]"),
                   "ResourceSlice.resource.k8s.io \"bad\" is invalid: "
                   "spec.devices[0].capacity[memory].requestPolicy: Forbidden: "
                   "allowMultipleAllocations must be true");
    /* a claim asks for part of a capacity */
    g_autoptr(Resp) c = post(srv, RC_PATH,
                             RC_JSON("half", "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                                             "\"deviceClassName\":\"gpu.nvidia.com\",\"capacity\":"
                                             "{\"requests\":{\"memory\":\"40Gi\"}}}}]}"));
    assert_status(c, 201, NULL);
    expect_invalid(srv, RC_PATH,
                   RC_JSON("bad", "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                                  "\"deviceClassName\":\"g\",\"capacity\":{\"requests\":{"
                                  "\"memory\":\"-4Gi\"}}}}]}"),
                   "ResourceClaim.resource.k8s.io \"bad\" is invalid: "
                   "spec.devices.requests[0].exactly.capacity.requests[memory]: Invalid value: "
                   "\"-4Gi\": must be greater than or equal to 0");
    expect_invalid(srv, RC_PATH,
                   RC_JSON("bad", "{\"requests\":[{\"name\":\"gpu\",\"firstAvailable\":[{\"name\":"
                                  "\"s\",\"deviceClassName\":\"g\",\"capacity\":{\"requests\":{"
                                  "\"memory\":\"lots\"}}}]}]}"),
                   "ResourceClaim.resource.k8s.io \"bad\" is invalid: "
                   "spec.devices.requests[0].firstAvailable[0].capacity.requests[memory]: Invalid "
                   "value: \"lots\": quantities must match the regular expression "
                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    /* the allocation records what it consumed and which share */
    const char *res = "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
                      "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n0\",\"device\":\"gpu-0\","
                      "\"shareID\":\"%s\",\"consumedCapacity\":{\"memory\":\"%s\"}}]}}}}";
    g_autofree char *bad_id = g_strdup_printf(res, "Share-1", "40Gi");
    g_autoptr(Resp) b =
            http(srv, "PATCH", RC_PATH "/half/status", "application/merge-patch+json", bad_id);
    assert_status(b, 422, "Invalid");
    g_assert_cmpstr(js(b, "message"), ==,
                    "ResourceClaim.resource.k8s.io \"half\" is invalid: "
                    "status.allocation.devices.results[0].shareID: Invalid value: \"Share-1\": "
                    "must be a lowercase UUID in 8-4-4-4-12 format");
    g_autofree char *bad_q = g_strdup_printf(res, "0c2f2a9e-6d8b-4c7a-9d21-3f6b1a2e4c5d", "x");
    g_autoptr(Resp) q =
            http(srv, "PATCH", RC_PATH "/half/status", "application/merge-patch+json", bad_q);
    assert_status(q, 422, "Invalid");
    g_assert_nonnull(strstr(js(q, "message"), "status.allocation.devices.results[0]."
                                              "consumedCapacity[memory]: Invalid value: \"x\""));
    g_autofree char *ok = g_strdup_printf(res, "0c2f2a9e-6d8b-4c7a-9d21-3f6b1a2e4c5d", "40Gi");
    g_autoptr(Resp) o =
            http(srv, "PATCH", RC_PATH "/half/status", "application/merge-patch+json", ok);
    assert_status(o, 200, NULL);
    json_object *r0 = json_object_array_get_idx(
            kas_json_get(o->json, "status.allocation.devices.results"), 0);
    g_assert_cmpstr(kas_json_get_string(r0, "consumedCapacity.memory"), ==, "40Gi");
    g_assert_cmpstr(kas_json_get_string(r0, "shareID"), ==, "0c2f2a9e-6d8b-4c7a-9d21-3f6b1a2e4c5d");
}

/* Each limit: at the limit accepted, one past it refused with the real message. */
static void test_dra_limits(void)
{
    g_autoptr(KasServer) srv = start();
    static const struct {
        const char *path, *fmt, *item, *field;
        guint max;
    } cases[] = {
            {RC_PATH, RC_JSON("c%u", "{\"requests\":%s}"),
             "{\"name\":\"r%u\",\"exactly\":{\"deviceClassName\":\"g\"}}", "spec.devices.requests",
             32},
            {RC_PATH,
             RC_JSON("c%u", "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"g\","
                            "\"selectors\":%s}}]}"),
             "{\"cel\":{\"expression\":\"device.driver == 'x%u'\"}}",
             "spec.devices.requests[0].exactly.selectors", 32},
            {RC_PATH, RC_JSON("c%u", "{\"requests\":[{\"name\":\"r\",\"firstAvailable\":%s}]}"),
             "{\"name\":\"s%u\",\"deviceClassName\":\"g\"}",
             "spec.devices.requests[0].firstAvailable", 8},
            {RC_PATH, RC_JSON("c%u", "{\"requests\":[" GPU_REQ("gpu") "],\"constraints\":%s}"),
             "{\"matchAttribute\":\"gpu.nvidia.com/a%u\"}", "spec.devices.constraints", 32},
            {RS_PATH, RS_JSON("s%u", "n1", "%s"), DEV("gpu-%u"), "spec.devices", 128},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (guint n = cases[i].max; n <= cases[i].max + 1; n++) {
            g_autofree char *list = repeat_list(n, cases[i].item);
            g_autofree char *body = g_strdup_printf(cases[i].fmt, i * 1000 + n, list);
            g_autoptr(Resp) r = post(srv, cases[i].path, body);
            if (n == cases[i].max) {
                assert_status(r, 201, NULL);
                continue;
            }
            assert_status(r, 422, "Invalid");
            g_autofree char *want = g_strdup_printf("%s: Too many: %u: must have at most %u items",
                                                    cases[i].field, n, cases[i].max);
            g_assert_nonnull(strstr(js(r, "message"), want));
        }
    }
    /* 32 attributes and capacities per device */
    g_autofree char *attrs = repeat_list(33, "\"a%u\":{\"int\":1}");
    attrs[0] = '{';
    attrs[strlen(attrs) - 1] = '}';
    g_autofree char *dev = g_strdup_printf("[{\"name\":\"d\",\"attributes\":%s}]", attrs);
    g_autofree char *slice = g_strdup_printf(RS_JSON("big", "n2", "%s"), dev);
    g_autoptr(Resp) a = post(srv, RS_PATH, slice);
    assert_status(a, 422, "Invalid");
    g_assert_cmpstr(js(a, "message"), ==,
                    "ResourceSlice.resource.k8s.io \"big\" is invalid: spec.devices[0]: Invalid "
                    "value: 33: the total number of attributes and capacities must not exceed 32");
    /* a CEL expression of at most 10 KiB */
    g_autofree char *pad = g_strnfill(10240 - strlen("device.driver == ''"), 'x');
    for (guint extra = 0; extra <= 1; extra++) {
        g_autofree char *body = g_strdup_printf(
                "{\"metadata\":{\"name\":\"cel%u\"},\"spec\":{\"selectors\":[{\"cel\":{"
                "\"expression\":\"device.driver == '%s%s'\"}}]}}",
                extra, pad, extra ? "y" : "");
        g_autoptr(Resp) r = post(srv, DC_PATH, body);
        assert_status(r, extra ? 422 : 201, extra ? "Invalid" : NULL);
        if (extra)
            g_assert_cmpstr(js(r, "message"), ==,
                            "DeviceClass.resource.k8s.io \"cel1\" is invalid: "
                            "spec.selectors[0].cel.expression: Too long: may not be more than "
                            "10240 bytes");
    }
    /* 256 reservedFor entries */
    g_autoptr(Resp) c =
            post(srv, RC_PATH, RC_JSON("shared", "{\"requests\":[" GPU_REQ("gpu") "]}"));
    assert_status(c, 201, NULL);
    for (guint n = 256; n <= 257; n++) {
        GString *s = g_string_new("[");
        for (guint i = 0; i < n; i++)
            g_string_append_printf(s, "%s{\"resource\":\"pods\",\"name\":\"p%u\",\"uid\":\"u%u\"}",
                                   i > 0 ? "," : "", i, i);
        g_string_append_c(s, ']');
        g_autofree char *rf2 = g_string_free(s, FALSE);
        g_autofree char *body = g_strdup_printf(
                "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
                "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}},"
                "\"reservedFor\":%s}}",
                rf2);
        g_autoptr(Resp) r =
                http(srv, "PATCH", RC_PATH "/shared/status", "application/merge-patch+json", body);
        if (n == 256) {
            assert_status(r, 200, NULL);
            continue;
        }
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(js(r, "message"), ==,
                        "ResourceClaim.resource.k8s.io \"shared\" is invalid: status.reservedFor: "
                        "Too many: 257: must have at most 256 items");
    }
}

/* ResourceSlices by node, driver and pool, as drivers and schedulers list them. */
static void test_dra_slice_fields(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) a = post(srv, RS_PATH, RS_JSON("a", "n1", "[" DEV("gpu-0") "]"));
    assert_status(a, 201, NULL);
    g_assert_cmpint(ji(a, "metadata.generation"), ==, 1);
    g_autoptr(Resp) b = post(srv, RS_PATH, RS_JSON("b", "n2", "[" DEV("gpu-0") "]"));
    assert_status(b, 201, NULL);
    g_autoptr(Resp) l = get(srv, RS_PATH "?fieldSelector=spec.nodeName%3Dn2");
    assert_status(l, 200, NULL);
    g_assert_cmpint(json_object_array_length(kas_json_get(l->json, "items")), ==, 1);
    json_object *it = json_object_array_get_idx(kas_json_get(l->json, "items"), 0);
    g_assert_cmpstr(kas_json_get_string(it, "metadata.name"), ==, "b");
    g_autoptr(Resp) p = get(srv, RS_PATH "?fieldSelector=spec.pool.name%3Dn1,spec.driver%3D"
                                         "gpu.nvidia.com");
    g_assert_cmpint(json_object_array_length(kas_json_get(p->json, "items")), ==, 1);
    g_autoptr(Resp) u = http(srv, "PUT", RS_PATH "/a", NULL, RS_JSON("a", "n3", "[]"));
    assert_status(u, 422, "Invalid");
    g_assert_cmpstr(js(u, "message"), ==,
                    "ResourceSlice.resource.k8s.io \"a\" is invalid: [spec.pool.name: Invalid "
                    "value: \"n3\": field is immutable, spec.nodeName: Invalid value: \"n3\": "
                    "field is immutable]");
    g_autoptr(Resp) bad = get(srv, RS_PATH "?fieldSelector=spec.pool.generation%3D1");
    assert_status(bad, 400, "BadRequest");
}

/* A pod's spec.resourceClaims and status.resourceClaimStatuses. */
static void test_dra_pod_claims(void)
{
    g_autoptr(KasServer) srv = start();
    static const struct {
        const char *body, *message;
    } cases[] = {
            {POD_JSON("p", "", ",\"resourceClaims\":[{\"name\":\"gpu\"}]"),
             "Pod \"p\" is invalid: spec.resourceClaims[0]: Invalid value: "
             "core.PodResourceClaim{Name:\"gpu\", ResourceClaimName:(*string)(nil), "
             "ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, "
             "`resourceClaimTemplateName`"},
            {POD_JSON("p", "",
                      ",\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"a\","
                      "\"resourceClaimTemplateName\":\"b\"}]"),
             "Pod \"p\" is invalid: spec.resourceClaims[0]: Invalid value: {\"name\":\"gpu\","
             "\"resourceClaimName\":\"a\",\"resourceClaimTemplateName\":\"b\"}: at most one of "
             "`resourceClaimName` or `resourceClaimTemplateName` may be specified"},
            {POD_JSON("p", "",
                      ",\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"a\"},"
                      "{\"name\":\"gpu\",\"resourceClaimName\":\"b\"}]"),
             "Pod \"p\" is invalid: spec.resourceClaims[1].name: Duplicate value: \"gpu\""},
            {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
             "\"i\",\"resources\":{\"claims\":[{\"name\":\"tpu\"}]}}],\"resourceClaims\":[{"
             "\"name\":"
             "\"gpu\",\"resourceClaimName\":\"a\"},{\"name\":\"nic\",\"resourceClaimName\":\"b\"}]}"
             "}",
             "Pod \"p\" is invalid: spec.containers[0].resources.claims[0]: Not found: \"tpu\": "
             "must "
             "be one of the names in pod.spec.resourceClaims: gpu, nic"},
            {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
             "\"i\",\"resources\":{\"claims\":[{\"name\":\"tpu\"}]}}]}}",
             "Pod \"p\" is invalid: spec.containers[0].resources.claims[0]: Not found: \"tpu\": "
             "must "
             "be one of the names in pod.spec.resourceClaims which is empty"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods", cases[i].body);
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(js(r, "message"), ==, cases[i].message);
    }
    create_pod(srv, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                    "\"image\":\"i\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],"
                    "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"
                    "\"gpu-template\"}]}}");
    /* the claims are part of the immutable spec */
    g_autoptr(Resp) u =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p", "application/merge-patch+json",
                 "{\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\","
                 "\"resourceClaimName\":\"x\"}]}}");
    assert_status(u, 422, "Invalid");
    g_assert_nonnull(strstr(js(u, "message"), "- \tResourceClaims:  {...},\n"));
    /* statuses name an entry of the spec, once */
    g_autoptr(Resp) s1 = http(srv, "PATCH", "/api/v1/namespaces/default/pods/p/status",
                              "application/merge-patch+json",
                              "{\"status\":{\"resourceClaimStatuses\":[{\"name\":\"nic\","
                              "\"resourceClaimName\":\"p-nic-x\"}]}}");
    assert_status(s1, 422, "Invalid");
    g_assert_cmpstr(js(s1, "message"), ==,
                    "Pod \"p\" is invalid: status.resourceClaimStatuses[0].name: Invalid value: "
                    "\"nic\": must match the name of an entry in `spec.resourceClaims`");
    g_autoptr(Resp) s2 = http(srv, "PATCH", "/api/v1/namespaces/default/pods/p/status",
                              "application/merge-patch+json",
                              "{\"status\":{\"resourceClaimStatuses\":[{\"name\":\"gpu\","
                              "\"resourceClaimName\":\"p-gpu-x\"}]}}");
    assert_status(s2, 200, NULL);
}

static void opt_claims(KasServerOptions *o)
{
    o->resource_claim_controller = TRUE;
}

/* Poll GET @path (at most 5 s) until @ok says yes; returns that response. */
static Resp *wait_until(KasServer *srv, const char *path, gboolean (*ok)(json_object *j))
{
    for (int i = 0; i < 500; i++) {
        Resp *r = get(srv, path);
        if (r->code == 200 && ok(r->json))
            return r;
        resp_free(r);
        g_usleep(10000);
    }
    g_error("timed out waiting for %s", path);
    return NULL;
}

static json_object *first(json_object *j, const char *list)
{
    json_object *a = kas_json_get(j, list);
    return json_object_is_type(a, json_type_array) && json_object_array_length(a) > 0
                   ? json_object_array_get_idx(a, 0)
                   : NULL;
}

static gboolean has_claim_status(json_object *pod)
{
    return first(pod, "status.resourceClaimStatuses") != NULL;
}

static gboolean unreserved(json_object *claim)
{
    return kas_json_get(claim, "status.reservedFor") == NULL;
}

static gboolean reserved_once(json_object *claim)
{
    json_object *rf = kas_json_get(claim, "status.reservedFor");
    return json_object_is_type(rf, json_type_array) && json_object_array_length(rf) == 1;
}

#define RCT_GPU                                                                                    \
    "{\"metadata\":{\"name\":\"gpu-tmpl\"},\"spec\":{\"metadata\":{\"labels\":{\"team\":\"ml\"}}," \
    "\"spec\":{\"devices\":{\"requests\":[" GPU_REQ("gpu") "]}}}}"
#define POD_TMPL(name)                                                                             \
    "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"   \
    "\"i\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],\"resourceClaims\":[{\"name\":"       \
    "\"gpu\",\"resourceClaimTemplateName\":\"gpu-tmpl\"}]}}"
#define POD_PATH "/api/v1/namespaces/default/pods"

/* The status write a scheduler makes: allocated, reserved for @pod (@uid). */
static void reserve(KasServer *srv, const char *claim, const char *pods_json)
{
    g_autofree char *path = g_strdup_printf(RC_PATH "/%s/status", claim);
    g_autofree char *body = g_strdup_printf(
            "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}},"
            "\"reservedFor\":%s}}",
            pods_json);
    g_autoptr(Resp) r = http(srv, "PATCH", path, "application/merge-patch+json", body);
    assert_status(r, 200, NULL);
}

/* A claim per pod from its template, named and owned as kube-controller-manager does it; gone
 * with its pod. Without the controller nothing is generated. */
static void test_dra_controller_template(void)
{
    {
        g_autoptr(KasServer) off = start();
        g_autoptr(Resp) t = post(off, RCT_PATH, RCT_GPU);
        assert_status(t, 201, NULL);
        create_pod(off, POD_TMPL("p"));
        g_usleep(100000);
        g_autoptr(Resp) l = get(off, RC_PATH);
        g_assert_cmpuint(json_object_array_length(kas_json_get(l->json, "items")), ==, 0);
    }
    g_autoptr(KasServer) srv = start_with(opt_claims);
    /* the template comes after the pod: the pod waits for it */
    create_pod(srv, POD_TMPL("train-0"));
    g_autoptr(Resp) t = post(srv, RCT_PATH, RCT_GPU);
    assert_status(t, 201, NULL);
    g_autoptr(Resp) pod = wait_until(srv, POD_PATH "/train-0", has_claim_status);
    json_object *st = first(pod->json, "status.resourceClaimStatuses");
    g_assert_cmpstr(kas_json_get_string(st, "name"), ==, "gpu");
    const char *claim = kas_json_get_string(st, "resourceClaimName");
    g_assert_true(g_str_has_prefix(claim, "train-0-gpu-"));
    g_assert_cmpuint(strlen(claim), ==, strlen("train-0-gpu-") + 5);
    g_autofree char *cpath = g_strdup_printf(RC_PATH "/%s", claim);
    g_autoptr(Resp) c = get(srv, cpath);
    assert_status(c, 200, NULL);
    json_object *ann = kas_json_get(c->json, "metadata.annotations");
    g_assert_cmpstr(json_object_get_string(
                            json_object_object_get(ann, "resource.kubernetes.io/pod-claim-name")),
                    ==, "gpu");
    g_assert_cmpstr(js(c, "metadata.labels.team"), ==, "ml");
    json_object *owner = first(c->json, "metadata.ownerReferences");
    g_assert_cmpstr(kas_json_get_string(owner, "kind"), ==, "Pod");
    g_assert_cmpstr(kas_json_get_string(owner, "uid"), ==, js(pod, "metadata.uid"));
    g_assert_true(json_object_get_boolean(kas_json_get(owner, "controller")));
    json_object *req = first(c->json, "spec.devices.requests");
    g_assert_cmpint(json_object_get_int64(kas_json_get(req, "exactly.count")), ==, 1);
    /* one claim, however often the pod changes */
    g_autoptr(Resp) lbl = http(srv, "PATCH", POD_PATH "/train-0", "application/merge-patch+json",
                               "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
    assert_status(lbl, 200, NULL);
    g_usleep(50000);
    g_autoptr(Resp) l = get(srv, RC_PATH);
    g_assert_cmpuint(json_object_array_length(kas_json_get(l->json, "items")), ==, 1);
    /* reserved, then the pod goes: released, deallocated, deleted */
    g_autofree char *rf = g_strdup_printf("[{\"resource\":\"pods\",\"name\":\"train-0\",\"uid\":"
                                          "\"%s\"}]",
                                          js(pod, "metadata.uid"));
    reserve(srv, claim, rf);
    g_autoptr(Resp) d =
            http(srv, "DELETE", POD_PATH "/train-0", NULL, "{\"gracePeriodSeconds\":0}");
    g_assert_cmpint(d->code, ==, 200);
    wait_gone(srv, cpath);
    /* long names are shortened in proportion, both parts kept: 60 + 3 + 2 > 57, so 60 * 57 / 65
     * of the pod's name and 3 * 57 / 65 of the claim's */
    g_autofree char *long_pod = g_strnfill(60, 'a');
    g_autofree char *lp = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
            "\"i\"}],\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"
            "\"gpu-tmpl\"}]}}",
            long_pod);
    create_pod(srv, lp);
    g_autofree char *lpath = g_strdup_printf(POD_PATH "/%s", long_pod);
    g_autoptr(Resp) lpod = wait_until(srv, lpath, has_claim_status);
    const char *lc = kas_json_get_string(first(lpod->json, "status.resourceClaimStatuses"),
                                         "resourceClaimName");
    g_autofree char *want = g_strdup_printf("%.52s-gp", long_pod);
    g_assert_true(g_str_has_prefix(lc, want));
    g_assert_cmpuint(strlen(lc), ==, 52 + 3 + 5);
}

/* A claim shared by two pods: each finished pod leaves reservedFor; the last one deallocates it;
 * a claim not generated for a pod is never deleted. */
static void test_dra_controller_shared(void)
{
    g_autoptr(KasServer) srv = start_with(opt_claims);
    g_autoptr(Resp) c =
            post(srv, RC_PATH, RC_JSON("shared", "{\"requests\":[" GPU_REQ("gpu") "]}"));
    assert_status(c, 201, NULL);
    const char *pod_fmt = "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"nodeName\":\"n1\","
                          "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],\"resourceClaims\":"
                          "[{\"name\":\"gpu\",\"resourceClaimName\":\"shared\"}]}}";
    g_autofree char *a = g_strdup_printf(pod_fmt, "a");
    g_autofree char *b = g_strdup_printf(pod_fmt, "b");
    g_autoptr(Resp) pa = post(srv, POD_PATH, a);
    assert_status(pa, 201, NULL);
    g_autoptr(Resp) pb = post(srv, POD_PATH, b);
    assert_status(pb, 201, NULL);
    g_autofree char *rf = g_strdup_printf(
            "[{\"resource\":\"pods\",\"name\":\"a\",\"uid\":\"%s\"},{\"resource\":\"pods\","
            "\"name\":\"b\",\"uid\":\"%s\"}]",
            js(pa, "metadata.uid"), js(pb, "metadata.uid"));
    reserve(srv, "shared", rf);
    g_autoptr(Resp) done = http(srv, "PATCH", POD_PATH "/a/status", "application/merge-patch+json",
                                "{\"status\":{\"phase\":\"Succeeded\"}}");
    assert_status(done, 200, NULL);
    g_autoptr(Resp) one = wait_until(srv, RC_PATH "/shared", reserved_once);
    g_assert_cmpstr(kas_json_get_string(first(one->json, "status.reservedFor"), "name"), ==, "b");
    g_assert_nonnull(kas_json_get(one->json, "status.allocation"));
    /* a pod on a node that is being deleted still holds it until it is gone */
    g_autoptr(Resp) d = http(srv, "DELETE", POD_PATH "/b", NULL, "{\"gracePeriodSeconds\":0}");
    g_assert_cmpint(d->code, ==, 200);
    g_autoptr(Resp) none = wait_until(srv, RC_PATH "/shared", unreserved);
    g_assert_null(kas_json_get(none->json, "status.allocation"));
    g_usleep(50000);
    g_autoptr(Resp) still = get(srv, RC_PATH "/shared");
    assert_status(still, 200, NULL);
    /* written reserved for a live pod and for one that never was (or a successor of that name):
     * the controller releases those at once, the live one stays */
    g_autoptr(Resp) c2 = post(srv, RC_PATH, RC_JSON("x", "{\"requests\":[" GPU_REQ("gpu") "]}"));
    assert_status(c2, 201, NULL);
    g_autofree char *live = g_strdup_printf(pod_fmt, "live");
    g_autoptr(Resp) pl = post(srv, POD_PATH, live);
    assert_status(pl, 201, NULL);
    g_autofree char *mixed = g_strdup_printf(
            "[{\"resource\":\"pods\",\"name\":\"ghost\",\"uid\":\"u-ghost\"},{\"resource\":"
            "\"pods\",\"name\":\"live\",\"uid\":\"%s\"},{\"resource\":\"pods\",\"name\":"
            "\"live\",\"uid\":\"u-old\"}]",
            js(pl, "metadata.uid"));
    reserve(srv, "x", mixed);
    g_autoptr(Resp) kept = wait_until(srv, RC_PATH "/x", reserved_once);
    g_assert_cmpstr(kas_json_get_string(first(kept->json, "status.reservedFor"), "uid"), ==,
                    js(pl, "metadata.uid"));
    g_assert_nonnull(kas_json_get(kept->json, "status.allocation"));
}

/* Pod-level spec.resources as the API server validates it (validatePodResources and
 * validatePodResourceConsistency): names, requests within limits, the containers covered. */
static void test_pod_level_resources(void)
{
    g_autoptr(KasServer) srv = start();
    static const struct {
        const char *body, *message;
    } bad[] = {
            {RES_POD("a", "{\"requests\":{\"nvidia.com/gpu\":\"1\"}}", "{}"),
             "Pod \"a\" is invalid: spec.resources.requests[nvidia.com/gpu]: Unsupported value: "
             "\"nvidia.com/gpu\": supported values: \"cpu\", \"hugepages-\", \"memory\""},
            {RES_POD("a", "{\"limits\":{\"cpus\":\"1\"}}", "{}"),
             "Pod \"a\" is invalid: spec.resources.limits[cpus]: Invalid value: \"cpus\": must be "
             "a "
             "standard resource type or fully qualified"},
            {RES_POD("a", "{\"requests\":{\"cpu\":\"2\"},\"limits\":{\"cpu\":\"1\"}}", "{}"),
             "Pod \"a\" is invalid: spec.resources.requests: Invalid value: \"2\": must be less "
             "than "
             "or equal to cpu limit of 1"},
            {RES_POD("a", "{\"requests\":{\"memory\":\"-1Gi\"}}", "{}"),
             "Pod \"a\" is invalid: spec.resources.requests[memory]: Invalid value: \"-1Gi\": must "
             "be greater than or equal to 0"},
            {RES_POD("a", "{\"requests\":{\"cpu\":\"1\"}}", "{\"requests\":{\"cpu\":\"750m\"}}"),
             "Pod \"a\" is invalid: spec.resources.requests[cpu]: Invalid value: \"1\": must be "
             "greater than or equal to aggregate container requests of 1500m"},
            {RES_POD("a", "{\"requests\":{\"memory\":\"4Gi\"}}",
                     "{\"requests\":{\"memory\":\"3Gi\"}}"),
             "Pod \"a\" is invalid: spec.resources.requests[memory]: Invalid value: \"4Gi\": must "
             "be "
             "greater than or equal to aggregate container requests of 6Gi"},
            {RES_POD("a", "{\"limits\":{\"cpu\":\"1\"}}", "{\"limits\":{\"cpu\":\"2\"}}"),
             "Pod \"a\" is invalid: [spec.resources.containers[0][cpu].limits: Invalid value: "
             "\"2\": "
             "must be less than or equal to pod limits of 1, "
             "spec.resources.containers[1][cpu].limits: "
             "Invalid value: \"2\": must be less than or equal to pod limits of 1]"},
            {RES_POD("a", "{\"limits\":{\"hugepages-2Mi\":\"2Mi\"}}", "{}"),
             "Pod \"a\" is invalid: spec.resources: Forbidden: HugePages require cpu or memory"},
            {RES_POD("a",
                     "{\"requests\":{\"hugepages-2Mi\":\"2Mi\",\"memory\":\"1Gi\"},\"limits\":"
                     "{\"hugepages-2Mi\":\"4Mi\"}}",
                     "{}"),
             "Pod \"a\" is invalid: spec.resources.requests: Invalid value: \"2Mi\": must be equal "
             "to hugepages-2Mi limit of 4Mi"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods", bad[i].body);
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(js(r, "message"), ==, bad[i].message);
    }
    /* the pod's request covers its containers', its limit bounds each of theirs */
    g_autoptr(Resp) ok = post(srv, "/api/v1/namespaces/default/pods",
                              RES_POD("b",
                                      "{\"requests\":{\"cpu\":\"2\",\"memory\":\"6Gi\"},"
                                      "\"limits\":{\"cpu\":\"4\"}}",
                                      "{\"requests\":{\"cpu\":\"1\",\"memory\":\"3Gi\"},"
                                      "\"limits\":{\"cpu\":\"4\"}}"));
    assert_status(ok, 201, NULL);
}

static void test_crud_stale_update(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/configmaps",
                             "{\"metadata\":{\"name\":\"cm\"},\"data\":{\"a\":\"1\"}}");
    const char *rv = js(c, "metadata.resourceVersion");
    g_autofree char *upd = g_strdup_printf(
            "{\"metadata\":{\"name\":\"cm\",\"resourceVersion\":\"%s\"},\"data\":{\"a\":\"2\"}}",
            rv);
    g_autoptr(Resp) u1 = http(srv, "PUT", "/api/v1/namespaces/default/configmaps/cm", NULL, upd);
    g_assert_cmpint(u1->code, ==, 200);
    g_assert_cmpstr(js(u1, "data.a"), ==, "2");
    /* The same resourceVersion again is now stale. */
    g_autoptr(Resp) u2 = http(srv, "PUT", "/api/v1/namespaces/default/configmaps/cm", NULL, upd);
    assert_status(u2, 409, "Conflict");
    g_assert_nonnull(strstr(js(u2, "message"), "the object has been modified"));
    g_autoptr(Resp) wrong = http(srv, "PUT", "/api/v1/namespaces/default/configmaps/cm", NULL,
                                 "{\"metadata\":{\"name\":\"other\"}}");
    assert_status(wrong, 400, "BadRequest");
    g_autoptr(Resp) missing = http(srv, "PUT", "/api/v1/namespaces/default/configmaps/none", NULL,
                                   "{\"metadata\":{\"name\":\"none\"}}");
    assert_status(missing, 404, "NotFound");
}

static void test_crud_noop_update(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/configmaps",
                             "{\"metadata\":{\"name\":\"cm\"},\"data\":{\"a\":\"1\"}}");
    g_autoptr(Resp) p = http(srv, "PATCH", "/api/v1/namespaces/default/configmaps/cm",
                             "application/merge-patch+json", "{\"data\":{\"a\":\"1\"}}");
    g_assert_cmpint(p->code, ==, 200);
    /* Nothing changed: no new resourceVersion, no watch event. */
    g_assert_cmpstr(js(p, "metadata.resourceVersion"), ==, js(c, "metadata.resourceVersion"));
}

static void test_crud_pod_spec_immutable(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) img = http(
            srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/json-patch+json",
            "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"busybox:2\"}]");
    g_assert_cmpint(img->code, ==, 200);
    g_autoptr(Resp) bad =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/merge-patch+json",
                 "{\"spec\":{\"nodeName\":\"n1\",\"restartPolicy\":\"Never\"}}");
    assert_status(bad, 422, "Invalid");
}

/* ---- limits
 * ---------------------------------------------------------------------------------------- */

static void opt_small_body(KasServerOptions *o)
{
    o->max_body = 4096;
}

static void test_limits_body(void)
{
    g_autoptr(KasServer) srv = start_with(opt_small_body);
    /* A valid object padded with spaces to exactly the limit is accepted; one more byte is not. */
    GString *ok = g_string_new("{\"metadata\":{\"name\":\"cm\"}}");
    while (ok->len < 4096)
        g_string_append_c(ok, ' ');
    g_autoptr(Resp) a = post(srv, "/api/v1/namespaces/default/configmaps", ok->str);
    assert_status(a, 201, NULL);
    g_string_append_c(ok, ' ');
    g_autoptr(Resp) b = post(srv, "/api/v1/namespaces/default/configmaps", ok->str);
    assert_status(b, 413, "RequestEntityTooLarge");
    g_string_free(ok, TRUE);
}

static void test_limits_default_body(void)
{
    g_autoptr(KasServer) srv = start();
    GString *big = g_string_new("{\"metadata\":{\"name\":\"big\"},\"data\":{\"a\":\"");
    while (big->len < 3 * 1024 * 1024 + 10)
        g_string_append(big, "xxxxxxxxxxxxxxxx");
    g_string_append(big, "\"}}");
    g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/configmaps", big->str);
    assert_status(r, 413, "RequestEntityTooLarge");
    g_string_free(big, TRUE);
    /* The server carries on. */
    g_autoptr(Resp) v = get(srv, "/version");
    g_assert_cmpint(v->code, ==, 200);
}

static void opt_two_conns(KasServerOptions *o)
{
    o->max_connections = 2;
}

static int raw_connect(guint port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
    return fd;
}

static void test_limits_connections(void)
{
    g_autoptr(KasServer) srv = start_with(opt_two_conns);
    int fds[3];
    /* three clients, each in a long watch (connections count once their header is complete) */
    static const char watch_req[] = "GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < 3; i++) {
        fds[i] = raw_connect(kas_server_port(srv));
        g_assert_cmpint(write(fds[i], watch_req, strlen(watch_req)), ==, (gssize)strlen(watch_req));
    }
    /* Wait for each client's answer (a watch's 200 or, beyond the limit, a 429): once it came,
     * the server has read that header and counted the connection. No fixed sleep: on a loaded
     * machine the server's threads may take long to get there. */
    for (int i = 0; i < 3; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        g_assert_cmpint(poll(&p, 1, 30000), ==, 1);
        char buf[64];
        g_assert_cmpint(read(fds[i], buf, sizeof buf), >, 0);
    }
    g_autoptr(Resp) r = get(srv, "/version");
    assert_status(r, 429, "TooManyRequests");
    g_assert_cmpstr(r->retry_after, ==, "1");
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    for (int i = 0; i < 100; i++) {
        g_autoptr(Resp) v = get(srv, "/version");
        if (v->code == 200)
            return;
        g_usleep(20000);
    }
    g_error("the server did not recover after the connections closed");
}

static void opt_header_timeout(KasServerOptions *o)
{
    o->header_timeout = 2;
}

/* Slowloris: connections that never finish their header neither lock clients out nor stay. */
static void test_limits_slowloris(void)
{
    struct rlimit rl;
    g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    /* server and client ends live in this process */
    guint n = (guint)MIN(1200, (rl.rlim_cur - 256) / 2);
    if (n < 1100) {
        g_test_skip("the open-files limit is too low for 1,200 connections");
        return;
    }
    g_autoptr(KasServer) srv = start_with(opt_header_timeout);
    static const char partial[] = "GET /version HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    g_autofree int *fds = g_new(int, n);
    for (guint i = 0; i < n; i++) {
        fds[i] = raw_connect(kas_server_port(srv));
        g_assert_cmpint(write(fds[i], partial, strlen(partial)), ==, (gssize)strlen(partial));
    }
    /* a client still gets its answer while all of them hang */
    g_autoptr(Resp) r = get(srv, "/version");
    assert_status(r, 200, NULL);
    g_autoptr(Resp) r2 = get(srv, "/api/v1/namespaces/default/pods");
    assert_status(r2, 200, NULL);
    /* and the server drops them after the read-header timeout: each reads end of file */
    guint closed = 0;
    for (guint i = 0; i < n; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        char c;
        if (poll(&p, 1, 60000) == 1 && read(fds[i], &c, 1) <= 0)
            closed++;
        close(fds[i]);
    }
    g_assert_cmpuint(closed, ==, n);
}

/* ---- bindings
 * ------------------------------------------------------------------------------------------ */

/* A protobuf Binding {1: ObjectMeta, 2: ObjectReference target} in its "k8s\0" envelope of
 * @kind, for pod p1 with a gpu-ids annotation. */
static GByteArray *proto_binding(const char *kind)
{
    g_autoptr(GByteArray) meta = g_byte_array_new();
    kb_proto_put_string(meta, 1, "p1");
    kb_proto_put_string(meta, 3, "default");
    kb_proto_put_map_entry(meta, 12, "kube-batchd.io/gpu-ids", "3,5");
    g_autoptr(GByteArray) target = g_byte_array_new();
    kb_proto_put_string(target, 1, "Node");
    kb_proto_put_string(target, 3, "n1");
    g_autoptr(GByteArray) binding = g_byte_array_new();
    kb_proto_put_message(binding, 1, meta->data, meta->len);
    kb_proto_put_message(binding, 2, target->data, target->len);
    return kb_proto_envelope("v1", kind, binding);
}

/* kube-apiserver reads protobuf Bindings (client-go and kube-batchd send them): the same 201 and
 * the pod bound with the Binding's annotations. Not an envelope, or another kind: 400 saying
 * which. Other protobuf bodies stay 415 (/apiserver/requests/protobuf-body-415). */
static void test_binding_protobuf(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    const char *path = "/api/v1/namespaces/default/pods/p1/binding";
    g_autoptr(GByteArray) wrong_kind = proto_binding("Pod");
    g_autoptr(Resp) w = http_len(srv, "POST", path, KB_PROTO_CONTENT_TYPE,
                                 (const char *)wrong_kind->data, wrong_kind->len);
    assert_status(w, 400, "BadRequest");
    g_assert_nonnull(strstr(js(w, "message"), "kind \"Pod\" where a Binding was expected"));
    /* The reader's limits: a length past the end, a varint of more than 64 bits, a wire type
     * (3, a group) that no Kubernetes message uses, and no "k8s\0" at all. */
    static const char truncated[] = {'k', '8', 's', 0, 0x12, 0x7f, 0x0a};
    static const char long_varint[] = {'k',  '8',  's',  0,    0x12, 0x80, 0x80, 0x80,
                                       0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    static const char group[] = {'k', '8', 's', 0, 0x0b, 0x0c};
    static const char no_magic[] = {0x0a, 0x00};
    static const struct {
        const char *data;
        gsize len;
    } bad[] = {{truncated, sizeof truncated},
               {long_varint, sizeof long_varint},
               {group, sizeof group},
               {no_magic, sizeof no_magic}};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(Resp) t =
                http_len(srv, "POST", path, KB_PROTO_CONTENT_TYPE, bad[i].data, bad[i].len);
        assert_status(t, 400, "BadRequest");
        g_assert_nonnull(strstr(js(t, "message"), "not a protobuf object"));
    }
    /* A sound envelope around a Binding cut short (ObjectMeta says 5 bytes, 1 follows). */
    static const guint8 cut[] = {0x0a, 0x05, 'p'};
    g_autoptr(GByteArray) cut_msg = g_byte_array_new();
    g_byte_array_append(cut_msg, cut, sizeof cut);
    g_autoptr(GByteArray) cut_body = kb_proto_envelope("v1", "Binding", cut_msg);
    g_autoptr(Resp) c = http_len(srv, "POST", path, KB_PROTO_CONTENT_TYPE,
                                 (const char *)cut_body->data, cut_body->len);
    assert_status(c, 400, "BadRequest");
    g_assert_nonnull(strstr(js(c, "message"), "malformed protobuf Binding"));

    g_autoptr(GByteArray) body = proto_binding("Binding");
    g_autoptr(Resp) a =
            http_len(srv, "POST", path, KB_PROTO_CONTENT_TYPE, (const char *)body->data, body->len);
    assert_status(a, 201, NULL);
    g_assert_cmpstr(js(a, "status"), ==, "Success");
    g_autoptr(Resp) pod = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpstr(js(pod, "spec.nodeName"), ==, "n1");
    g_assert_nonnull(strstr(pod->body, "\"kube-batchd.io/gpu-ids\":\"3,5\""));
}

static void test_binding_twice(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) a = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(a, 201, NULL);
    g_assert_cmpstr(js(a, "status"), ==, "Success");
    g_autoptr(Resp) b = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(b, 409, "Conflict");
    g_assert_cmpstr(js(b, "message"), ==,
                    "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 is already "
                    "assigned to node \"n1\"");
    g_autoptr(Resp) pod = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpstr(js(pod, "spec.nodeName"), ==, "n1");
    g_assert_nonnull(strstr(pod->body, "\"type\":\"PodScheduled\""));
}

/* A pod with node affinity term @term (JSON) in its required terms, or in its one preferred
 * term's preference when @preferred. */
static char *affinity_pod(const char *term, gboolean preferred)
{
    g_autofree char *na =
            preferred ? g_strdup_printf("\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
                                        "\"weight\":1,\"preference\":%s}]",
                                        term)
                      : g_strdup_printf("\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                                        "\"nodeSelectorTerms\":[%s]}",
                                        term);
    return g_strdup_printf(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
            "\"image\":\"i:1\"}],\"affinity\":{\"nodeAffinity\":{%s}}}}",
            na);
}

/* matchFields as kube-apiserver validates them: metadata.name only, In or NotIn, one value;
 * in required terms and in preferred terms alike. A valid one is created (the last case). */
static void test_crud_pod_match_fields(void)
{
    static const struct {
        const char *term;
        gboolean preferred;
        const char *message; /* NULL: created */
    } cases[] = {
            {"{\"matchFields\":[{\"key\":\"metadata.labels\",\"operator\":\"In\",\"values\":"
             "[\"n1\"]}]}",
             FALSE,
             "Pod \"p\" is invalid: spec.affinity.nodeAffinity."
             "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0]."
             "key: Invalid value: \"metadata.labels\": not a valid field selector key"},
            {"{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":"
             "[\"n1\",\"n2\"]}]}",
             FALSE,
             "Pod \"p\" is invalid: spec.affinity.nodeAffinity."
             "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0]."
             "values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
             "for node field selector"},
            {"{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"Exists\"}]}", TRUE,
             "Pod \"p\" is invalid: spec.affinity.nodeAffinity."
             "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0]."
             "operator: Invalid value: \"Exists\": not a valid selector operator"},
            {"{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
             "[\"n1\"]}]}",
             FALSE, NULL},
    };
    g_autoptr(KasServer) srv = start();
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *body = affinity_pod(cases[i].term, cases[i].preferred);
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods", body);
        if (cases[i].message == NULL) {
            assert_status(r, 201, NULL);
            continue;
        }
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(js(r, "message"), ==, cases[i].message);
    }
}

/* Resource rules the recorded cases do not show: a request above its limit, quantities in
 * canonical form, an extended resource as a quantity with a suffix. */
static void test_crud_pod_resources(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) a =
            post(srv, "/api/v1/namespaces/default/pods",
                 "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                 "\"image\":\"i:1\",\"resources\":{\"requests\":{\"cpu\":\"2500m\"},"
                 "\"limits\":{\"cpu\":\"2\"}}}]}}");
    assert_status(a, 422, "Invalid");
    g_assert_cmpstr(js(a, "message"), ==,
                    "Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: "
                    "\"2500m\": must be less than or equal to cpu limit");
    g_autoptr(Resp) b =
            post(srv, "/api/v1/namespaces/default/pods",
                 "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                 "\"image\":\"i:1\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1500m\"}}}]}}");
    assert_status(b, 422, "Invalid");
    g_assert_nonnull(strstr(js(b, "message"),
                            "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "
                            "resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, "
                            "d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1500m\", "
                            "Format:\"DecimalSI\"}: must be an integer"));
    g_autoptr(Resp) c =
            post(srv, "/api/v1/namespaces/default/pods",
                 "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                 "\"image\":\"i:1\",\"resources\":{\"requests\":{\"memory\":\"2048Mi\"},"
                 "\"limits\":{\"cpu\":\"1000m\",\"nvidia.com/gpu\":\"1\"}}}]}}");
    assert_status(c, 201, NULL);
    json_object *res = kas_json_get(
            json_object_array_get_idx(kas_json_get(c->json, "spec.containers"), 0), "resources");
    g_autofree char *got = kas_json_dump(res);
    g_assert_cmpstr(got, ==,
                    "{\"requests\":{\"memory\":\"2Gi\",\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"},"
                    "\"limits\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"}}");
}

/* 256 KiB of annotations in all, for any kind; one byte less is fine. */
static void test_crud_annotations_size(void)
{
    g_autoptr(KasServer) srv = start();
    for (int over = 0; over < 2; over++) {
        /* key "a" + value: 262144 bytes exactly, or one more */
        g_autofree char *v = g_strnfill(262143 + over, 'x');
        g_autofree char *body = g_strdup_printf(
                "{\"metadata\":{\"name\":\"cm%d\",\"annotations\":{\"a\":\"%s\"}}}", over, v);
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/configmaps", body);
        if (over == 0) {
            assert_status(r, 201, NULL);
            continue;
        }
        assert_status(r, 422, "Invalid");
        g_assert_cmpstr(
                js(r, "message"), ==,
                "ConfigMap \"cm1\" is invalid: metadata.annotations: Too long: must have at "
                "most 262144 bytes");
    }
}

/* spec.schedulingGates (1.27+): a gated pod is never bound; gates may be removed, not added. */
static void test_binding_scheduling_gates(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ",\"schedulingGates\":[{\"name\":\"example.com/quota\"}]"));
    g_autoptr(Resp) a = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(a, 409, "Conflict");
    g_assert_cmpstr(js(a, "message"), ==,
                    "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 has non-empty "
                    ".spec.schedulingGates");
    g_assert_cmpstr(js(a, "details.kind"), ==, "pods/binding");
    g_autoptr(Resp) add =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/merge-patch+json",
                 "{\"spec\":{\"schedulingGates\":[{\"name\":\"example.com/quota\"},"
                 "{\"name\":\"more\"}]}}");
    assert_status(add, 422, "Invalid");
    g_assert_nonnull(strstr(add->body, "\"field\":\"spec.schedulingGates[1].name\""));
    g_assert_nonnull(strstr(js(add, "message"),
                            "only deletion is allowed, but found new scheduling gate 'more'"));
    g_autoptr(Resp) rm =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/json-patch+json",
                 "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]");
    assert_status(rm, 200, NULL);
    g_autoptr(Resp) b = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(b, 201, NULL);
}

static void test_binding_missing(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(r, 404, "NotFound");
    g_autoptr(Resp) e = post(srv, "/api/v1/namespaces/default/pods/p1/binding", "{\"target\":{}}");
    g_assert_cmpint(e->code, ==, 422);
}

static void test_binding_deleting(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", ",\"finalizers\":[\"x/y\"]", ""));
    g_autoptr(Resp) d = http(srv, "DELETE", "/api/v1/namespaces/default/pods/p1", NULL, NULL);
    g_assert_cmpint(d->code, ==, 200);
    g_assert_nonnull(js(d, "metadata.deletionTimestamp"));
    g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(r, 409, "Conflict");
    g_assert_nonnull(strstr(js(r, "message"), "is being deleted"));
}

static void test_binding_legacy(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/bindings", BIND_N1);
    assert_status(r, 201, NULL);
    g_autoptr(Resp) pod = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpstr(js(pod, "spec.nodeName"), ==, "n1");
}

/* ---- lists
 * ---------------------------------------------------------------------------------------------- */

static guint list_count(KasServer *srv, const char *path)
{
    g_autoptr(Resp) r = get(srv, path);
    g_assert_cmpint(r->code, ==, 200);
    return (guint)json_object_array_length(kas_json_get(r->json, "items"));
}

static void seed_labelled(KasServer *srv)
{
    create_pod(srv, POD_JSON("a", ",\"labels\":{\"app\":\"web\",\"tier\":\"1\"}", ""));
    create_pod(srv, POD_JSON("b", ",\"labels\":{\"app\":\"db\"}", ""));
    create_pod(srv, POD_JSON("c", ",\"labels\":{\"app\":\"web\"}",
                             ",\"nodeName\":\"n1\",\"schedulerName\":\"kube-batchd\""));
    create_pod(srv, POD_JSON("d", "", ""));
}

static void test_list_label_selectors(void)
{
    g_autoptr(KasServer) srv = start();
    seed_labelled(srv);
    static const struct {
        const char *sel;
        guint n;
    } cases[] = {
            {"app%3Dweb", 2},
            {"app%3D%3Dweb", 2},
            {"app!%3Dweb", 2},
            {"app%20in%20(web,db)", 3},
            {"app%20notin%20(web)", 2},
            {"app", 3},
            {"!app", 1},
            {"app%3Dweb,tier", 1},
            {"tier%3E0", 1},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *p =
                g_strdup_printf("/api/v1/namespaces/default/pods?labelSelector=%s", cases[i].sel);
        g_assert_cmpuint(list_count(srv, p), ==, cases[i].n);
    }
    g_autoptr(Resp) bad = get(srv, "/api/v1/pods?labelSelector=app%20in%20web");
    assert_status(bad, 400, "BadRequest");
}

static void test_list_field_selectors(void)
{
    g_autoptr(KasServer) srv = start();
    seed_labelled(srv);
    g_assert_cmpuint(list_count(srv, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1"), ==, 1);
    g_assert_cmpuint(list_count(srv, "/api/v1/pods?fieldSelector=spec.nodeName%3D"), ==, 3);
    g_assert_cmpuint(list_count(srv, "/api/v1/pods?fieldSelector=spec.schedulerName%3Dkube-batchd"),
                     ==, 1);
    g_assert_cmpuint(
            list_count(
                    srv,
                    "/api/v1/pods?fieldSelector=status.phase!%3DSucceeded,status.phase!%3DFailed"),
            ==, 4);
    g_assert_cmpuint(list_count(srv, "/api/v1/pods?fieldSelector=metadata.name%3Db"), ==, 1);
    g_assert_cmpuint(list_count(srv, "/api/v1/pods?fieldSelector=metadata.namespace%3Ddefault"), ==,
                     4);
    g_autoptr(Resp) bad = get(srv, "/api/v1/pods?fieldSelector=spec.bogus%3Dx");
    assert_status(bad, 400, "BadRequest");
    g_assert_cmpstr(js(bad, "message"), ==, "field label not supported: spec.bogus");
}

static void test_list_limit_continue(void)
{
    g_autoptr(KasServer) srv = start();
    const char *names[] = {"e", "a", "d", "b", "c"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *b = g_strdup_printf("{\"metadata\":{\"name\":\"%s\"}}", names[i]);
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/configmaps", b);
        assert_status(r, 201, NULL);
    }
    GString *seen = g_string_new(NULL);
    g_autofree char *cont = NULL;
    guint pages = 0;
    do {
        g_autofree char *p =
                cont != NULL
                        ? g_strdup_printf(
                                  "/api/v1/namespaces/default/configmaps?limit=2&continue=%s", cont)
                        : g_strdup("/api/v1/namespaces/default/configmaps?limit=2");
        g_autoptr(Resp) r = get(srv, p);
        g_assert_cmpint(r->code, ==, 200);
        json_object *items = kas_json_get(r->json, "items");
        g_assert_cmpuint(json_object_array_length(items), <=, 2);
        for (gsize i = 0; i < json_object_array_length(items); i++)
            g_string_append(seen, kas_json_get_string(json_object_array_get_idx(items, i),
                                                      "metadata.name"));
        g_free(cont);
        cont = g_strdup(js(r, "metadata.continue"));
        pages++;
    } while (cont != NULL && pages < 10);
    g_assert_cmpuint(pages, ==, 3);
    g_assert_cmpstr(seen->str, ==, "abcde");
    g_string_free(seen, TRUE);
    g_autoptr(Resp) bad = get(srv, "/api/v1/namespaces/default/configmaps?limit=2&continue=%21%21");
    assert_status(bad, 400, "BadRequest");
}

/* kube-apiserver answers a list at resourceVersion "0", or at another one without a limit, from
 * its watch cache, in one piece: the limit is ignored (cacher.go). With a limit and no
 * resourceVersion, or with any other resourceVersion, etcd pages it. */
static void test_list_rv_from_cache(void)
{
    g_autoptr(KasServer) srv = start();
    for (guint i = 0; i < 3; i++) {
        g_autofree char *b = g_strdup_printf("{\"metadata\":{\"name\":\"c%u\"}}", i);
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/configmaps", b);
        assert_status(r, 201, NULL);
    }
    g_autoptr(Resp) now = get(srv, "/api/v1/namespaces/default/configmaps");
    const char *rv = js(now, "metadata.resourceVersion");
    struct {
        const char *query;
        guint items;
    } cases[] = {
            {"resourceVersion=0&limit=1", 3}, {"resourceVersion=0", 3},
            {"resourceVersion=%s", 3},        {"limit=1", 1},
            {"resourceVersion=&limit=1", 1},  {"resourceVersion=%s&limit=1", 1},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *query = g_strdup_printf(cases[i].query, rv);
        g_autofree char *path = g_strdup_printf("/api/v1/namespaces/default/configmaps?%s", query);
        g_autoptr(Resp) r = get(srv, path);
        g_test_message("%s", path);
        g_assert_cmpint(r->code, ==, 200);
        g_assert_cmpuint(json_object_array_length(kas_json_get(r->json, "items")), ==,
                         cases[i].items);
        gboolean paged = cases[i].items < 3;
        g_assert_true((js(r, "metadata.continue") != NULL) == paged);
        g_assert_true((kas_json_get(r->json, "metadata.remainingItemCount") != NULL) == paged);
    }
}

/* ---- watches
 * --------------------------------------------------------------------------------------------- */

static void test_watch_replay(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/pods", POD_JSON("p1", "", ""));
    const char *rv = js(c, "metadata.resourceVersion");
    g_autoptr(Resp) b = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    create_pod(srv, POD_JSON("p2", "", ""));
    g_autoptr(Resp) d = http(srv, "DELETE", "/api/v1/namespaces/default/pods/p2", NULL, NULL);
    g_autofree char *path =
            g_strdup_printf("/api/v1/namespaces/default/pods?watch=true&resourceVersion=%s", rv);
    g_autoptr(GPtrArray) lines = watch(srv, path, 3, 5000);
    g_assert_cmpuint(lines->len, ==, 3);
    static const char *const want[][2] = {{"MODIFIED", "p1"}, {"ADDED", "p2"}, {"DELETED", "p2"}};
    for (guint i = 0; i < 3; i++) {
        g_autofree char *t = line_field(g_ptr_array_index(lines, i), "type");
        g_autofree char *n = line_field(g_ptr_array_index(lines, i), "object.metadata.name");
        g_assert_cmpstr(t, ==, want[i][0]);
        g_assert_cmpstr(n, ==, want[i][1]);
    }
    g_autofree char *node = line_field(g_ptr_array_index(lines, 0), "object.spec.nodeName");
    g_assert_cmpstr(node, ==, "n1");
}

static void opt_history_3(KasServerOptions *o)
{
    o->watch_history = 3;
}

static void test_watch_expired(void)
{
    g_autoptr(KasServer) srv = start_with(opt_history_3);
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/pods", POD_JSON("p0", "", ""));
    for (int i = 1; i <= 4; i++) {
        g_autofree char *b = g_strdup_printf(POD_JSON("p%d", "", ""), i);
        create_pod(srv, b);
    }
    g_autofree char *path = g_strdup_printf("/api/v1/pods?watch=true&resourceVersion=%s",
                                            js(c, "metadata.resourceVersion"));
    g_autoptr(GPtrArray) lines = watch(srv, path, 5, 5000);
    /* One ERROR event with a 410 Expired Status, then the stream ends. */
    g_assert_cmpuint(lines->len, ==, 1);
    g_autofree char *type = line_field(g_ptr_array_index(lines, 0), "type");
    g_autofree char *reason = line_field(g_ptr_array_index(lines, 0), "object.reason");
    g_assert_cmpstr(type, ==, "ERROR");
    g_assert_cmpstr(reason, ==, "Expired");
    g_assert_nonnull(strstr(g_ptr_array_index(lines, 0), "\"code\":410"));
    g_assert_nonnull(strstr(g_ptr_array_index(lines, 0), "too old resource version"));
    /* Within the history it still replays. */
    g_autoptr(Resp) l = get(srv, "/api/v1/pods?limit=1");
    gint64 recent = g_ascii_strtoll(js(l, "metadata.resourceVersion"), NULL, 10) - 1;
    g_autofree char *p2 =
            g_strdup_printf("/api/v1/pods?watch=true&resourceVersion=%" G_GINT64_FORMAT, recent);
    g_autoptr(GPtrArray) ok = watch(srv, p2, 1, 5000);
    g_autofree char *t2 = line_field(g_ptr_array_index(ok, 0), "type");
    g_assert_cmpstr(t2, ==, "ADDED");
}

static void opt_fast_bookmarks(KasServerOptions *o)
{
    o->bookmark_ms = 100;
}

/* Bookmarks as kube-apiserver's watch cache sends them: one carries the resourceVersion of the
 * resource's last event, and only when that is newer than where the watch started (here a pod
 * the label selector filters out), so a quiet resource gets none at all; one more comes 2 s
 * before the deadline; none without allowWatchBookmarks. */
static void test_watch_bookmark(void)
{
    g_autoptr(KasServer) srv = start_with(opt_fast_bookmarks);
    g_autoptr(Resp) l = get(srv, "/api/v1/pods");
    const char *rv0 = js(l, "metadata.resourceVersion");
    /* Nothing happened to pods: silence, however long. */
    g_autofree char *quiet = g_strdup_printf(
            "/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=%s",
            rv0);
    g_autoptr(GPtrArray) none_yet = watch(srv, quiet, 1, 5000);
    g_assert_cmpuint(none_yet->len, ==, 0);

    g_autofree char *path = g_strdup_printf(
            "/api/v1/pods?watch=true&allowWatchBookmarks=true&labelSelector=app%%3Dother"
            "&resourceVersion=%s",
            rv0);
    g_autoptr(Resp) p = post(srv, "/api/v1/namespaces/default/pods",
                             "{\"metadata\":{\"name\":\"bm\"},\"spec\":{\"containers\":[{"
                             "\"name\":\"c\",\"image\":\"busybox\"}]}}");
    assert_status(p, 201, NULL);
    g_autoptr(GPtrArray) lines = watch(srv, path, 1, 5000);
    g_assert_cmpuint(lines->len, ==, 1);
    g_autofree char *type = line_field(g_ptr_array_index(lines, 0), "type");
    g_autofree char *rv =
            line_field(g_ptr_array_index(lines, 0), "object.metadata.resourceVersion");
    g_autofree char *kind = line_field(g_ptr_array_index(lines, 0), "object.kind");
    g_assert_cmpstr(type, ==, "BOOKMARK");
    g_assert_cmpstr(kind, ==, "Pod");
    g_assert_cmpstr(rv, ==, js(p, "metadata.resourceVersion"));
    /* Without allowWatchBookmarks none arrives. */
    g_autofree char *p2 = g_strdup_printf(
            "/api/v1/"
            "pods?watch=true&timeoutSeconds=1&labelSelector=app%%3Dother&resourceVersion=%s",
            rv0);
    g_autoptr(GPtrArray) none = watch(srv, p2, 1, 5000);
    g_assert_cmpuint(none->len, ==, 0);
}

/* With the real server's period (a minute), a 3 s watch still gets its bookmark 2 s before its
 * deadline. */
static void test_watch_bookmark_before_deadline(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) l = get(srv, "/api/v1/pods");
    g_autoptr(Resp) p = post(srv, "/api/v1/namespaces/default/pods",
                             "{\"metadata\":{\"name\":\"bm\"},\"spec\":{\"containers\":[{"
                             "\"name\":\"c\",\"image\":\"busybox\"}]}}");
    assert_status(p, 201, NULL);
    g_autofree char *path =
            g_strdup_printf("/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=3"
                            "&labelSelector=app%%3Dother&resourceVersion=%s",
                            js(l, "metadata.resourceVersion"));
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GPtrArray) lines = watch(srv, path, 1, 5000);
    gint64 waited = g_get_monotonic_time() - t0;
    g_assert_cmpuint(lines->len, ==, 1);
    g_autofree char *type = line_field(g_ptr_array_index(lines, 0), "type");
    g_assert_cmpstr(type, ==, "BOOKMARK");
    g_assert_cmpint(waited, >=, 900 * G_TIME_SPAN_MILLISECOND);
}

static void test_watch_timeout(void)
{
    g_autoptr(KasServer) srv = start();
    gint64 t0 = g_get_monotonic_time();
    CURLcode rc;
    g_autoptr(GPtrArray) lines =
            watch_full(srv, "/api/v1/pods?watch=true&timeoutSeconds=1&resourceVersion=1", 10, 10000,
                       NULL, &rc);
    /* The server ends the stream cleanly after timeoutSeconds. */
    g_assert_cmpint(rc, ==, CURLE_OK);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 8 * G_USEC_PER_SEC);
}

static void test_watch_initial_state(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    create_pod(srv, POD_JSON("p2", "", ""));
    g_autoptr(GPtrArray) lines = watch(srv, "/api/v1/namespaces/default/pods?watch=1", 2, 5000);
    g_assert_cmpuint(lines->len, ==, 2);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *t = line_field(g_ptr_array_index(lines, i), "type");
        g_assert_cmpstr(t, ==, "ADDED");
    }
    g_autoptr(GPtrArray) init = watch(srv,
                                      "/api/v1/namespaces/default/"
                                      "pods?watch=1&sendInitialEvents=true&allowWatchBookmarks="
                                      "true&resourceVersionMatch=NotOlderThan",
                                      3, 5000);
    g_assert_cmpuint(init->len, ==, 3);
    g_assert_nonnull(strstr(g_ptr_array_index(init, 2), "k8s.io/initial-events-end"));
}

static void test_watch_selector_transition(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/pods",
                             POD_JSON("p1", ",\"labels\":{\"app\":\"web\"}", ""));
    g_autoptr(Resp) p =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/merge-patch+json",
                 "{\"metadata\":{\"labels\":{\"app\":\"db\"}}}");
    g_autoptr(Resp) p2 =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/merge-patch+json",
                 "{\"metadata\":{\"labels\":{\"app\":\"web\"}}}");
    g_autofree char *path =
            g_strdup_printf("/api/v1/pods?watch=1&labelSelector=app%%3Dweb&resourceVersion=%s",
                            js(c, "metadata.resourceVersion"));
    g_autoptr(GPtrArray) lines = watch(srv, path, 2, 5000);
    g_assert_cmpuint(lines->len, ==, 2);
    g_autofree char *t0 = line_field(g_ptr_array_index(lines, 0), "type");
    g_autofree char *t1 = line_field(g_ptr_array_index(lines, 1), "type");
    g_assert_cmpstr(t0, ==, "DELETED");
    g_assert_cmpstr(t1, ==, "ADDED");
}

typedef struct {
    KasServer *srv;
    char *path;
    GPtrArray *lines;
    guint max; /* 0: 1 */
    CURLcode rc;
} WatchThread;

static gpointer watch_thread(gpointer data)
{
    WatchThread *w = data;
    w->lines = watch_full(w->srv, w->path, w->max > 0 ? w->max : 1, 10000, NULL, &w->rc);
    return NULL;
}

static void test_watch_many_watchers(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) l = get(srv, "/api/v1/pods");
    WatchThread ws[10];
    GThread *ts[10];
    for (int i = 0; i < 10; i++) {
        memset(&ws[i], 0, sizeof ws[i]);
        ws[i].srv = srv;
        ws[i].path = g_strdup_printf("/api/v1/pods?watch=1&resourceVersion=%s",
                                     js(l, "metadata.resourceVersion"));
        ts[i] = g_thread_new("w", watch_thread, &ws[i]);
    }
    wait_watchers(srv, 10);
    create_pod(srv, POD_JSON("p1", "", ""));
    for (int i = 0; i < 10; i++) {
        g_thread_join(ts[i]);
        g_assert_cmpuint(ws[i].lines->len, ==, 1);
        g_ptr_array_unref(ws[i].lines);
        g_free(ws[i].path);
    }
}

static void opt_small_queue_stall(KasServerOptions *o)
{
    o->watch_queue = 3;
    o->faults = "stall-watch=500,after=0";
}

/* A burst of changes reaches a waiting watch reader complete and in order, in far fewer reads
 * than events: the reader lingers for a batch of 64 instead of waking once per event (see
 * lingers() in kas-store.c); a reader that asks for one event at a time (the fault paths) is
 * not held. Store level, so that the reads are counted exactly; the linger is a second here so
 * that no machine is slow enough to end one before 64 events are queued. */
typedef struct {
    KasWatcher *w;
    guint want, got, reads;
    GString *out;
} BurstReader;

static gpointer read_burst(gpointer data)
{
    BurstReader *b = data;
    while (b->got < b->want) {
        gsize before = b->out->len;
        KasWatchResult r = kas_watcher_next(b->w, g_get_monotonic_time() + 10 * G_USEC_PER_SEC,
                                            b->out, 256, NULL, NULL);
        if (r != KAS_WATCH_EVENT)
            break;
        b->reads++;
        for (gsize i = before; i < b->out->len; i++)
            b->got += b->out->str[i] == '\n';
    }
    return NULL;
}

/* A pod of the claim tests: @extra_meta and @status (JSON members, may be "") around one
 * template entry. New reference of an object that is not stored. */
static KasObj *claim_pod(KasRes *pods, const char *uid, const char *extra_meta, const char *node,
                         const char *status)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
            "\"default\",\"uid\":\"%s\"%s},\"spec\":{\"nodeName\":\"%s\",\"resourceClaims\":[{"
            "\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]},\"status\":{%s}}",
            uid, extra_meta, node, status);
    json_object *jo = json_tokener_parse(text);
    g_assert_nonnull(jo);
    KasObj *o = kas_obj_new(pods, jo);
    json_object_put(jo);
    return o;
}

/* A new store (@so, or the defaults) and its resource @group/v1 @resource in *@res. */
static KasStore *store_with(const KasStoreOptions *so, const char *group, const char *resource,
                            KasRes **res)
{
    KasStoreOptions defaults = {0};
    KasStore *store = kas_store_new(so != NULL ? so : &defaults);
    kas_store_lock(store);
    *res = kas_store_find_locked(store, group, "v1", resource);
    kas_store_unlock(store);
    g_assert_nonnull(*res);
    return store;
}

/* The resource-claim controller skips a pod event only when nothing its sync reads changed. */
static void test_claims_pod_same(void)
{
    KasRes *pods = NULL;
    KasStore *store = store_with(NULL, "", "pods", &pods);
    /* a claim name no API server allows, to prove strings are skipped whole */
#define STATUSES                                                                                   \
    "\"resourceClaimStatuses\":[{\"name\":\"gpu\",\"resourceClaimName\":\"p-gpu-x]{\\\"y\"}]"
    const char *st = "\"phase\":\"Pending\"," STATUSES;
    g_autoptr(KasObj) created = claim_pod(pods, "u1", "", "", "\"phase\":\"Pending\"");
    g_autoptr(KasObj) named = claim_pod(pods, "u1", "", "", st);
    g_autoptr(KasObj) bound = claim_pod(pods, "u1", ",\"labels\":{\"a\":\"b\"}", "n1", st);
    /* binding and labels change nothing the claims depend on */
    g_assert_true(kas_claims_pod_same(pods, bound, named));
    g_assert_true(kas_claims_pod_same(pods, named, named));
    /* no earlier state, or the statuses changed: synced */
    g_assert_false(kas_claims_pod_same(pods, named, NULL));
    g_assert_false(kas_claims_pod_same(pods, named, created));
    g_assert_false(kas_claims_pod_same(pods, created, named));
    /* done, being deleted or another pod of the name: synced */
    g_autoptr(KasObj) done = claim_pod(pods, "u1", "", "n1", "\"phase\":\"Succeeded\"," STATUSES);
#undef STATUSES
    g_assert_false(kas_claims_pod_same(pods, done, bound));
    g_autoptr(KasObj) deleting =
            claim_pod(pods, "u1", ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"", "n1", st);
    g_assert_false(kas_claims_pod_same(pods, deleting, bound));
    g_autoptr(KasObj) other = claim_pod(pods, "u2", "", "n1", st);
    g_assert_false(kas_claims_pod_same(pods, other, bound));
    /* every occurrence of the key is compared: an annotation of that name that stays the same
     * does not hide a change of the statuses */
    const char *ann = ",\"annotations\":{\"resourceClaimStatuses\":\"[]\"}";
    g_autoptr(KasObj) ann_named = claim_pod(pods, "u1", ann, "", st);
    g_autoptr(KasObj) ann_created = claim_pod(pods, "u1", ann, "", "\"phase\":\"Pending\"");
    g_assert_false(kas_claims_pod_same(pods, ann_named, ann_created));
    g_assert_true(kas_claims_pod_same(pods, ann_named, ann_named));
    kas_store_free(store);
}

static gboolean set_label_cb(json_object *obj, gpointer data)
{
    json_object *labels = kas_json_ensure_object(kas_json_ensure_object(obj, "metadata"), "labels");
    json_object *v = NULL;
    if (json_object_object_get_ex(labels, "mark", &v) &&
        g_strcmp0(json_object_get_string(v), data) == 0)
        return FALSE; /* already so: nothing changed */
    kas_json_set_string(labels, "mark", data);
    return TRUE;
}

static json_object *stored(KasStore *store, KasRes *res, const char *name, guint64 *rv)
{
    kas_store_lock(store);
    KasObj *o = kas_store_get_locked(store, res, "default", name);
    json_object *j = kas_obj_parse(o);
    *rv = o->rv;
    kas_store_unlock(store);
    return j;
}

/* kas_ops_mutate_parsed writes the caller's tree when the object is still at its version, falls
 * back to reading it again when it moved on, and writes nothing when the edit changed nothing or
 * the uid is another object's. */
static void test_mutate_parsed(void)
{
    KasStoreOptions so = {0};
    KasStore *store = kas_store_new(&so);
    kas_store_lock(store);
    KasRes *res = kas_store_find_locked(store, "", "v1", "configmaps");
    json_object *o = json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                        "\"metadata\":{\"name\":\"cm\",\"namespace\":"
                                        "\"default\",\"uid\":\"u1\"},\"data\":{\"k\":\"v\"}}");
    kas_store_put_locked(store, res, o); /* borrowed */
    kas_store_unlock(store);
    json_object_put(o);
    guint64 rv0, rv1, rv2, rv3;
    json_object *mine = stored(store, res, "cm", &rv0);
    /* current: the caller's tree is edited and stored */
    g_assert_true(kas_ops_mutate_parsed(store, res, "default", "cm", NULL, mine, set_label_cb,
                                        (gpointer) "a"));
    json_object_put(mine);
    json_object *now = stored(store, res, "cm", &rv1);
    g_assert_cmpuint(rv1, >, rv0);
    g_assert_cmpstr(kas_json_get_string(now, "metadata.labels.mark"), ==, "a");
    g_assert_cmpstr(kas_json_get_string(now, "data.k"), ==, "v");
    json_object_put(now);
    /* stale: the tree read at rv0 is left alone, the stored object is read again and edited */
    json_object *stale = json_tokener_parse("{\"metadata\":{\"name\":\"cm\",\"namespace\":"
                                            "\"default\",\"uid\":\"u1\",\"resourceVersion\":"
                                            "\"1\"},\"data\":{\"k\":\"old\"}}");
    g_assert_true(kas_ops_mutate_parsed(store, res, "default", "cm", "u1", stale, set_label_cb,
                                        (gpointer) "b"));
    g_assert_null(kas_json_get(stale, "metadata.labels"));
    json_object_put(stale);
    now = stored(store, res, "cm", &rv2);
    g_assert_cmpuint(rv2, >, rv1);
    g_assert_cmpstr(kas_json_get_string(now, "metadata.labels.mark"), ==, "b");
    g_assert_cmpstr(kas_json_get_string(now, "data.k"), ==, "v");
    /* nothing changed, or another object's uid: nothing written */
    g_assert_false(kas_ops_mutate_parsed(store, res, "default", "cm", NULL, now, set_label_cb,
                                         (gpointer) "b"));
    g_assert_false(kas_ops_mutate_parsed(store, res, "default", "cm", "u2", now, set_label_cb,
                                         (gpointer) "c"));
    json_object_put(now);
    now = stored(store, res, "cm", &rv3);
    g_assert_cmpuint(rv3, ==, rv2);
    g_assert_cmpstr(kas_json_get_string(now, "metadata.labels.mark"), ==, "b");
    json_object_put(now);
    kas_store_free(store);
}

/* ---- optimistic writes (bindings, claims' first status) ---------------------------------- */

typedef struct {
    KasStore *store;
    KasRes *res;
    guint races;   /* writes still to make, one per call */
    guint made;    /* writes made */
    char *bind_to; /* NULL: each write sets a label; else the race binds the pod there */
} Racer;

/* The race hook: a write of the object between the optimistic write's read and its commit. */
static void race_write(const char *what, const char *ns, const char *name, gpointer data)
{
    Racer *r = data;
    if (r->races == 0)
        return;
    r->races--;
    r->made++;
    if (r->bind_to != NULL) {
        g_autofree char *b =
                g_strdup_printf("{\"kind\":\"Binding\",\"target\":{\"name\":\"%s\"}}", r->bind_to);
        json_object *binding = json_tokener_parse(b);
        g_autoptr(GError) error = NULL;
        KasOpsRaceHook hook = race_write;
        kas_ops_set_race_hook(NULL, NULL); /* the racing binding itself is not raced */
        g_assert_true(kas_ops_bind(r->store, ns, name, binding, &error));
        g_assert_no_error(error);
        kas_ops_set_race_hook(hook, r);
        json_object_put(binding);
        return;
    }
    kas_store_lock(r->store);
    KasObj *o = kas_store_get_locked(r->store, r->res, ns, name);
    json_object *j = kas_obj_parse(o);
    g_autofree char *v = g_strdup_printf("%u", r->made);
    kas_json_set_string(kas_json_ensure_object(kas_json_ensure_object(j, "metadata"), "labels"),
                        "race", v);
    kas_store_put_locked(r->store, r->res, j);
    kas_store_unlock(r->store);
    json_object_put(j);
}

static void put_json(KasStore *store, KasRes *res, const char *text)
{
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    kas_store_lock(store);
    kas_store_put_locked(store, res, o);
    kas_store_unlock(store);
    json_object_put(o);
}

static char *stored_text(KasStore *store, KasRes *res, const char *name, guint64 *rv)
{
    kas_store_lock(store);
    KasObj *o = kas_store_get_locked(store, res, "default", name);
    char *t = g_strndup(o->json, o->len);
    if (rv != NULL)
        *rv = o->rv;
    kas_store_unlock(store);
    return t;
}

#define RACE_POD(name, uid)                                                                        \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name                       \
    "\",\"namespace\":\"default\",\"uid\":\"" uid "\",\"labels\":{\"app\":\"a\\\"b\"}},"           \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],\"resourceClaims\":[{"            \
    "\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]},\"status\":{\"phase\":"         \
    "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\"}]}}"

static gboolean bind_json(KasStore *store, const char *name, const char *node, GError **error)
{
    g_autofree char *b = g_strdup_printf("{\"kind\":\"Binding\",\"metadata\":{\"annotations\":{"
                                         "\"kube-batchd.io/gpu-ids\":\"0,1\"}},\"target\":{"
                                         "\"name\":\"%s\"}}",
                                         node);
    json_object *binding = json_tokener_parse(b);
    gboolean ok = kas_ops_bind(store, "default", name, binding, error);
    json_object_put(binding);
    return ok;
}

/* A binding written between its read and its commit: the write is kept (not lost under the
 * binding), the binding built again on it; a pod bound meanwhile is a 409 naming that node;
 * a pod written at every try is bound by the last, under the lock, to the same bytes as a
 * binding no one raced. */
static void test_optimistic_binding(void)
{
    KasRes *pods = NULL;
    KasStore *store = store_with(NULL, "", "pods", &pods);
    put_json(store, pods, RACE_POD("p1", "u1"));
    put_json(store, pods, RACE_POD("p2", "u2"));
    put_json(store, pods, RACE_POD("p3", "u3"));
    put_json(store, pods, RACE_POD("p4", "u4"));
    Racer r = {.store = store, .res = pods};
    kas_ops_set_race_hook(race_write, &r);
    g_autoptr(GError) error = NULL;

    /* not raced */
    guint retries = kas_ops_optimistic_retries();
    g_assert_true(bind_json(store, "p1", "n1", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kas_ops_optimistic_retries(), ==, retries);

    /* raced once by a label: bound on top of it */
    guint64 rv_after = 0;
    kas_store_lock(store);
    guint64 rv_before = kas_store_rv_locked(store);
    kas_store_unlock(store);
    r.races = 1;
    g_assert_true(bind_json(store, "p2", "n1", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kas_ops_optimistic_retries(), ==, retries + 1);
    g_autofree char *p2 = stored_text(store, pods, "p2", &rv_after);
    g_assert_cmpuint(rv_after, ==, rv_before + 2); /* the label's write, then the binding's */
    json_object *j = json_tokener_parse(p2);
    g_assert_cmpstr(kas_json_get_string(j, "metadata.labels.race"), ==, "1");
    g_assert_cmpstr(kas_json_get_string(j, "spec.nodeName"), ==, "n1");
    g_autofree char *rv_text = g_strdup_printf("%" G_GUINT64_FORMAT, rv_after);
    g_assert_cmpstr(kas_json_get_string(j, "metadata.resourceVersion"), ==, rv_text);
    json_object_put(j);

    /* raced by another binding: a conflict naming the node it went to */
    r.races = 1;
    r.bind_to = (char *)"n9";
    g_assert_false(bind_json(store, "p3", "n1", &error));
    g_assert_error(error, KAS_ERROR, KAS_ERR_CONFLICT);
    g_assert_nonnull(strstr(error->message, "already assigned to node \"n9\""));
    g_clear_error(&error);
    g_autofree char *p3 = stored_text(store, pods, "p3", NULL);
    j = json_tokener_parse(p3);
    g_assert_cmpstr(kas_json_get_string(j, "spec.nodeName"), ==, "n9");
    json_object_put(j);
    r.bind_to = NULL;

    /* raced at every optimistic try: the last try holds the lock and binds */
    r.races = KAS_OPS_OPTIMISTIC_TRIES - 1;
    r.made = 0;
    retries = kas_ops_optimistic_retries();
    g_assert_true(bind_json(store, "p4", "n1", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(r.made, ==, KAS_OPS_OPTIMISTIC_TRIES - 1);
    g_assert_cmpuint(kas_ops_optimistic_retries(), ==, retries + KAS_OPS_OPTIMISTIC_TRIES - 1);
    kas_ops_set_race_hook(NULL, NULL);
    /* p4 as p1 but for its name, uid, the race label, resourceVersion and the condition's time */
    g_autofree char *p1 = stored_text(store, pods, "p1", NULL);
    g_autofree char *p4 = stored_text(store, pods, "p4", NULL);
    json_object *j1 = json_tokener_parse(p1), *j4 = json_tokener_parse(p4);
    g_autofree char *race_label = g_strdup_printf(",\"race\":\"%u\"", r.made);
    /* Whole members: a bare resourceVersion ("13") also matched the time ("01:13:05Z"). */
    g_autofree char *rv4 = member_text(j4, "resourceVersion", "metadata.resourceVersion");
    g_autofree char *rv1 = member_text(j1, "resourceVersion", "metadata.resourceVersion");
    g_autofree char *t4 = member_text(j4, "lastTransitionTime", "status.conditions");
    g_autofree char *t1 = member_text(j1, "lastTransitionTime", "status.conditions");
    const char *from[] = {"\"p4\"", "\"u4\"", race_label, rv4, t4};
    const char *to[] = {"\"p1\"", "\"u1\"", "", rv1, t1};
    g_autofree char *p4_as_p1 = replace_all(p4, from, to, G_N_ELEMENTS(from));
    g_assert_cmpstr(p4_as_p1, ==, p1);
    json_object_put(j1);
    json_object_put(j4);
    kas_store_free(store);
}

#define RACE_CLAIM(name)                                                                           \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"    \
    "\"" name "\",\"namespace\":\"default\",\"uid\":\"c-" name "\"},\"spec\":{\"devices\":{"       \
    "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}"
#define RACE_STATUS(rv)                                                                            \
    "{\"metadata\":{" rv "},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"   \
    "\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}},"              \
    "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u\"}]}}"

/* The claim status write @patch, read from its text (kas_ops_claim_status_text, which must take
 * it) when @text, else parsed. */
static KasObj *claim_status(KasStore *store, KasRes *res, const char *name, const char *patch,
                            gboolean text, GError **error)
{
    if (text) {
        KasObj *o = NULL;
        g_assert_true(kas_ops_claim_status_text(store, res, "default", name, patch, strlen(patch),
                                                &o, error));
        return o;
    }
    json_object *j = json_tokener_parse(patch);
    KasObj *o = kas_ops_patch(store, res, "v1", "default", name, KAS_PATCH_MERGE, j, TRUE, error);
    json_object_put(j);
    return o;
}

/* A claim's first status written between its read and its commit: without a resourceVersion
 * the status goes on top of the write, which is kept; with the one the writer read, a 409. The
 * same read from the body's text (@data TRUE). */
static void test_optimistic_claim_status(gconstpointer data)
{
    gboolean text = GPOINTER_TO_INT(data);
    KasRes *claims = NULL;
    KasStore *store = store_with(NULL, "resource.k8s.io", "resourceclaims", &claims);
    put_json(store, claims, RACE_CLAIM("c1"));
    put_json(store, claims, RACE_CLAIM("c2"));
    Racer r = {.store = store, .res = claims, .races = 1};
    kas_ops_set_race_hook(race_write, &r);
    g_autoptr(GError) error = NULL;
    guint retries = kas_ops_optimistic_retries();
    guint spliced = kas_ops_status_splices();
    guint text_spliced = kas_ops_status_text_splices();
    g_autoptr(KasObj) o = claim_status(store, claims, "c1", RACE_STATUS(""), text, &error);
    g_assert_no_error(error);
    g_assert_nonnull(o);
    g_assert_cmpuint(kas_ops_optimistic_retries(), ==, retries + 1);
    g_assert_cmpuint(kas_ops_status_splices(), ==, spliced + 1);
    g_assert_cmpuint(kas_ops_status_text_splices(), ==, text_spliced + (text ? 1 : 0));
    g_autofree char *c1 = stored_text(store, claims, "c1", NULL);
    g_assert_cmpstr(c1, ==, o->json);
    json_object *j = json_tokener_parse(c1);
    g_assert_cmpstr(kas_json_get_string(j, "metadata.labels.race"), ==, "1");
    g_assert_nonnull(kas_json_get(j, "status.allocation.devices.results"));
    g_autofree char *rv_text = g_strdup_printf("%" G_GUINT64_FORMAT, o->rv);
    g_assert_cmpstr(kas_json_get_string(j, "metadata.resourceVersion"), ==, rv_text);
    json_object_put(j);

    /* the scheduler's precondition: the version it read, written meanwhile */
    guint64 rv = 0;
    g_free(stored_text(store, claims, "c2", &rv));
    g_autofree char *patch =
            g_strdup_printf(RACE_STATUS("\"resourceVersion\":\"%" G_GUINT64_FORMAT "\""), rv);
    r.races = 1;
    g_autoptr(KasObj) refused = claim_status(store, claims, "c2", patch, text, &error);
    g_assert_null(refused);
    g_assert_error(error, KAS_ERROR, KAS_ERR_CONFLICT);
    g_clear_error(&error);
    g_autofree char *c2 = stored_text(store, claims, "c2", NULL);
    j = json_tokener_parse(c2);
    g_assert_null(kas_json_get(j, "status"));
    g_assert_cmpstr(kas_json_get_string(j, "metadata.labels.race"), ==, "2");
    json_object_put(j);
    kas_ops_set_race_hook(NULL, NULL);
    kas_store_free(store);
}

typedef struct {
    KasStore *store;
    guint n_pods;
    guint thread;
    guint bound;
} BindRun;

static gpointer bind_all(gpointer data)
{
    BindRun *b = data;
    for (guint i = 0; i < b->n_pods; i++) {
        g_autofree char *name = g_strdup_printf("p-%03u", (i * 7 + b->thread * 13) % b->n_pods);
        g_autofree char *node = g_strdup_printf("n%u", b->thread);
        g_autoptr(GError) error = NULL;
        if (bind_json(b->store, name, node, &error))
            b->bound++;
        else
            g_assert_error(error, KAS_ERROR, KAS_ERR_CONFLICT);
    }
    return NULL;
}

/* Four threads bind the same pods at once, each to its own node: each pod bound once, to the
 * node whose binding succeeded, one write each, and a watch sees those writes in order. */
static void test_optimistic_concurrent(void)
{
    KasRes *pods = NULL;
    KasStore *store = store_with(NULL, "", "pods", &pods);
    const guint n = 200;
    for (guint i = 0; i < n; i++) {
        g_autofree char *name = g_strdup_printf("p-%03u", i);
        g_autofree char *uid = g_strdup_printf("u-%03u", i);
        const char *from[] = {"\"p\"", "\"u\""};
        g_autofree char *qn = g_strdup_printf("\"%s\"", name);
        g_autofree char *qu = g_strdup_printf("\"%s\"", uid);
        const char *to[] = {qn, qu};
        g_autofree char *text = replace_all(RACE_POD("p", "u"), from, to, 2);
        put_json(store, pods, text);
    }
    kas_store_lock(store);
    guint64 rv0 = kas_store_rv_locked(store);
    kas_store_unlock(store);
    g_autofree char *from_rv = g_strdup_printf("%" G_GUINT64_FORMAT, rv0);
    KasWatchOptions wo = {.api_version = "v1", .resource_version = from_rv};
    g_autoptr(GError) error = NULL;
    KasWatcher *w = kas_store_watch(store, pods, &wo, &error);
    g_assert_no_error(error);
    BindRun runs[4];
    GThread *threads[4];
    for (guint t = 0; t < 4; t++) {
        runs[t] = (BindRun){.store = store, .n_pods = n, .thread = t};
        threads[t] = g_thread_new("bind", bind_all, &runs[t]);
    }
    guint bound = 0;
    for (guint t = 0; t < 4; t++) {
        g_thread_join(threads[t]);
        bound += runs[t].bound;
    }
    g_assert_cmpuint(bound, ==, n);
    kas_store_lock(store);
    g_assert_cmpuint(kas_store_rv_locked(store), ==, rv0 + n);
    kas_store_unlock(store);
    g_autoptr(GString) out = g_string_new(NULL);
    guint64 last = rv0;
    guint events = 0;
    while (events < n) {
        g_string_truncate(out, 0);
        g_assert_cmpint(kas_watcher_next(w, g_get_monotonic_time() + 60 * G_USEC_PER_SEC, out, 64,
                                         NULL, NULL),
                        ==, KAS_WATCH_EVENT);
        g_auto(GStrv) lines = g_strsplit(out->str, "\n", -1);
        for (guint i = 0; lines[i] != NULL && lines[i][0] != '\0'; i++, events++) {
            json_object *ev = json_tokener_parse(lines[i]);
            guint64 rv = g_ascii_strtoull(
                    kas_json_get_string(ev, "object.metadata.resourceVersion"), NULL, 10);
            g_assert_cmpuint(rv, ==, last + 1);
            last = rv;
            g_assert_nonnull(kas_json_get_string(ev, "object.spec.nodeName"));
            json_object_put(ev);
        }
    }
    kas_watcher_free(w);
    kas_store_free(store);
}

static void test_watch_burst_batched(void)
{
    KasRes *res = NULL;
    KasStore *store = store_with(&(KasStoreOptions){.watch_linger_us = G_USEC_PER_SEC}, "",
                                 "configmaps", &res);
    KasWatchOptions wo = {.api_version = "v1", .resource_version = "0"};
    g_autoptr(GError) error = NULL;
    BurstReader b = {
            .w = kas_store_watch(store, res, &wo, &error), .want = 2000, .out = g_string_new(NULL)};
    g_assert_no_error(error);
    GThread *reader = g_thread_new("burst", read_burst, &b);
    for (guint i = 0; i < b.want; i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                "\"cm-%04u\",\"namespace\":\"default\"}}",
                i);
        json_object *o = json_tokener_parse(text);
        kas_store_lock(store);
        kas_store_put_locked(store, res, o);
        kas_store_unlock(store);
        json_object_put(o);
    }
    g_thread_join(reader);
    g_assert_cmpuint(b.got, ==, b.want);
    /* In order, none lost: the i-th line names cm-i. */
    g_auto(GStrv) lines = g_strsplit(b.out->str, "\n", -1);
    for (guint i = 0; i < b.want; i++) {
        g_autofree char *name = g_strdup_printf("\"name\":\"cm-%04u\"", i);
        g_assert_nonnull(strstr(lines[i], name));
    }
    /* 64 a read, the last one short (woken per event, a reader on another core took most of
     * these a few at a time: ~300-400 reads here). */
    g_test_message("%u events in %u reads", b.got, b.reads);
    g_assert_cmpuint(b.reads, <=, (b.want + 63) / 64);

    /* One at a time: taken at once, one per read. */
    g_string_truncate(b.out, 0);
    json_object *o =
            json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                               "\"metadata\":{\"name\":\"one\",\"namespace\":\"default\"}}");
    kas_store_lock(store);
    kas_store_put_locked(store, res, o);
    kas_store_put_locked(store, res, o);
    kas_store_unlock(store);
    json_object_put(o);
    g_assert_cmpint(kas_watcher_next(b.w, g_get_monotonic_time(), b.out, 1, NULL, NULL), ==,
                    KAS_WATCH_EVENT);
    g_assert_cmpuint(strlen(b.out->str), ==, (gsize)(strchr(b.out->str, '\n') - b.out->str) + 1);
    g_string_free(b.out, TRUE);
    kas_watcher_free(b.w);
    kas_store_free(store);
}

static void test_watch_slow_watcher_closed(void)
{
    g_autoptr(KasServer) srv = start_with(opt_small_queue_stall);
    g_autoptr(Resp) l = get(srv, "/api/v1/pods");
    WatchThread w = {srv,
                     g_strdup_printf("/api/v1/pods?watch=1&resourceVersion=%s",
                                     js(l, "metadata.resourceVersion")),
                     NULL, 100, CURLE_OK};
    /* The stream stalls for 500 ms; 10 events overflow its queue of 3, so it is closed. */
    GThread *t = g_thread_new("w", watch_thread, &w);
    wait_watchers(srv, 1);
    for (int i = 0; i < 10; i++) {
        g_autofree char *b = g_strdup_printf(POD_JSON("p%d", "", ""), i);
        create_pod(srv, b);
    }
    /* Other clients are never held up meanwhile. */
    g_autoptr(Resp) v = get(srv, "/version");
    g_assert_cmpint(v->code, ==, 200);
    g_thread_join(t);
    /* The stream ended by itself (not our timeout) with at most the queue's worth of events. */
    g_assert_cmpint(w.rc, ==, CURLE_OK);
    g_assert_cmpuint(w.lines->len, <=, 3);
    g_ptr_array_unref(w.lines);
    g_free(w.path);
    wait_watchers(srv, 0);
}

/* ---- status subresource and generation
 * ---------------------------------------------------------------- */

static void test_status_main_ignores_status(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) p =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1", "application/merge-patch+json",
                 "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"status\":{\"phase\":\"Running\"}}");
    g_assert_cmpint(p->code, ==, 200);
    g_assert_cmpstr(js(p, "status.phase"), ==, "Pending");
    g_assert_cmpstr(js(p, "metadata.labels.a"), ==, "b");
}

static void test_status_subresource(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) p =
            http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1/status",
                 "application/merge-patch+json",
                 "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"status\":{\"phase\":\"Running\"}}");
    g_assert_cmpint(p->code, ==, 200);
    g_assert_cmpstr(js(p, "status.phase"), ==, "Running");
    g_assert_null(js(p, "metadata.labels.a"));
    g_autoptr(Resp) g = get(srv, "/api/v1/namespaces/default/pods/p1/status");
    g_assert_cmpstr(js(g, "status.phase"), ==, "Running");
    g_autoptr(Resp) none = get(srv, "/api/v1/namespaces/default/configmaps/x/status");
    assert_status(none, 404, "NotFound");
}

static void test_status_generation(void)
{
    g_autoptr(KasServer) srv = start();
    create_crd(srv);
    g_autoptr(Resp) c = post(
            srv, "/apis/kubeflow.org/v1/namespaces/default/tfjobs",
            "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"j\"},"
            "\"spec\":{\"x\":1},\"status\":{\"ignored\":true}}");
    assert_status(c, 201, NULL);
    g_assert_cmpint(ji(c, "metadata.generation"), ==, 1);
    g_assert_null(kas_json_get(c->json, "status"));
    g_autoptr(Resp) s =
            http(srv, "PATCH", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/j/status",
                 "application/merge-patch+json", "{\"status\":{\"phase\":\"Running\"}}");
    g_assert_cmpint(ji(s, "metadata.generation"), ==, 1);
    g_autoptr(Resp) m =
            http(srv, "PATCH", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/j",
                 "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}");
    g_assert_cmpint(ji(m, "metadata.generation"), ==, 1);
    g_autoptr(Resp) sp = http(srv, "PATCH", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/j",
                              "application/merge-patch+json",
                              "{\"spec\":{\"x\":2},\"status\":{\"phase\":\"X\"}}");
    g_assert_cmpint(ji(sp, "metadata.generation"), ==, 2);
    g_assert_cmpstr(js(sp, "status.phase"), ==, "Running");
    /* A custom resource update must name its resourceVersion. */
    g_autoptr(Resp) put =
            http(srv, "PUT", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/j", NULL,
                 "{\"apiVersion\":\"kubeflow.org/"
                 "v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"j\"}}");
    assert_status(put, 422, "Invalid");
    /* The other served version shows the same object under its apiVersion. */
    g_autoptr(Resp) alpha = get(srv, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs/j");
    g_assert_cmpstr(js(alpha, "apiVersion"), ==, "kubeflow.org/v1alpha1");
}

/* ---- patches
 * ---------------------------------------------------------------------------------------- */

static void test_patch_types(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, "{\"metadata\":{\"name\":\"p1\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":"
                    "{\"containers\":"
                    "[{\"name\":\"c\",\"image\":\"i:1\"},{\"name\":\"d\",\"image\":\"j:1\"}]}}");
    const char *pp = "/api/v1/namespaces/default/pods/p1";
    g_autoptr(Resp) m = http(srv, "PATCH", pp, "application/merge-patch+json",
                             "{\"metadata\":{\"labels\":{\"a\":null,\"c\":\"3\"}}}");
    g_assert_null(js(m, "metadata.labels.a"));
    g_assert_cmpstr(js(m, "metadata.labels.c"), ==, "3");
    g_autoptr(Resp) j =
            http(srv, "PATCH", pp, "application/json-patch+json",
                 "[{\"op\":\"test\",\"path\":\"/metadata/labels/b\",\"value\":\"2\"},"
                 "{\"op\":\"remove\",\"path\":\"/metadata/labels/b\"},"
                 "{\"op\":\"add\",\"path\":\"/metadata/labels/x~1y\",\"value\":\"z\"}]");
    g_assert_cmpint(j->code, ==, 200);
    g_assert_null(js(j, "metadata.labels.b"));
    g_assert_nonnull(strstr(j->body, "\"x/y\":\"z\""));
    g_autoptr(Resp) jf =
            http(srv, "PATCH", pp, "application/json-patch+json",
                 "[{\"op\":\"test\",\"path\":\"/metadata/labels/c\",\"value\":\"nope\"}]");
    assert_status(jf, 422, "Invalid");
    /* Strategic merge: containers merge by name, the other one is kept. */
    g_autoptr(Resp) s =
            http(srv, "PATCH", pp, "application/strategic-merge-patch+json",
                 "{\"spec\":{\"containers\":[{\"name\":\"d\",\"image\":\"j:2\"}]},"
                 "\"$setElementOrder/containers\":[{\"name\":\"c\"},{\"name\":\"d\"}]}");
    g_assert_cmpint(s->code, ==, 200);
    json_object *cs = kas_json_get(s->json, "spec.containers");
    g_assert_cmpuint(json_object_array_length(cs), ==, 2);
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(cs, 1), "image"), ==, "j:2");
    g_autoptr(Resp) ssa = http(srv, "PATCH", pp, "application/apply-patch+yaml", "{}");
    assert_status(ssa, 415, "UnsupportedMediaType");
    g_autoptr(Resp) miss = http(srv, "PATCH", "/api/v1/namespaces/default/pods/none",
                                "application/merge-patch+json", "{}");
    assert_status(miss, 404, "NotFound");
}

/* A protobuf body (kubectl create namespace/configmap sends one) gets 415 naming what it got,
 * not a JSON parse error about its first byte. */
static void test_protobuf_body_415(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) r = http(srv, "POST", "/api/v1/namespaces",
                             "application/vnd.kubernetes.protobuf", "k8s\x01\x0a\x0f");
    assert_status(r, 415, "UnsupportedMediaType");
    g_assert_nonnull(strstr(js(r, "message"), "application/vnd.kubernetes.protobuf"));
    g_assert_nonnull(strstr(js(r, "message"), "application/json"));
}

/* ---- deletion and garbage collection
 * ---------------------------------------------------------------------- */

static void test_delete_graceful_pod(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ",\"nodeName\":\"n1\",\"terminationGracePeriodSeconds\":1"));
    create_pod(srv, POD_JSON("p2", "", ""));
    /* Bound, no kubelet: terminating until its grace period ends. */
    g_autoptr(Resp) d = http(srv, "DELETE", "/api/v1/namespaces/default/pods/p1", NULL, NULL);
    g_assert_cmpint(d->code, ==, 200);
    g_assert_nonnull(js(d, "metadata.deletionTimestamp"));
    g_assert_cmpint(ji(d, "metadata.deletionGracePeriodSeconds"), ==, 1);
    g_autoptr(Resp) still = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpint(still->code, ==, 200);
    wait_gone(srv, "/api/v1/namespaces/default/pods/p1");
    /* Unscheduled pods go at once. */
    g_autoptr(Resp) d2 = http(srv, "DELETE", "/api/v1/namespaces/default/pods/p2", NULL, NULL);
    g_assert_cmpint(d2->code, ==, 200);
    g_autoptr(Resp) gone = get(srv, "/api/v1/namespaces/default/pods/p2");
    g_assert_cmpint(gone->code, ==, 404);
}

static void test_delete_finalizers(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) c =
            post(srv, "/api/v1/namespaces/default/configmaps",
                 "{\"metadata\":{\"name\":\"cm\",\"finalizers\":[\"example.com/hold\"]}}");
    g_autoptr(Resp) d = http(srv, "DELETE", "/api/v1/namespaces/default/configmaps/cm", NULL, NULL);
    g_assert_nonnull(js(d, "metadata.deletionTimestamp"));
    g_autoptr(Resp) still = get(srv, "/api/v1/namespaces/default/configmaps/cm");
    g_assert_cmpint(still->code, ==, 200);
    g_autoptr(Resp) p =
            http(srv, "PATCH", "/api/v1/namespaces/default/configmaps/cm",
                 "application/merge-patch+json", "{\"metadata\":{\"finalizers\":null}}");
    g_assert_cmpint(p->code, ==, 200);
    g_autoptr(Resp) gone = get(srv, "/api/v1/namespaces/default/configmaps/cm");
    g_assert_cmpint(gone->code, ==, 404);
    g_autoptr(Resp) pre =
            post(srv, "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"c2\"}}");
    g_autoptr(Resp) bad = http(srv, "DELETE", "/api/v1/namespaces/default/configmaps/c2", NULL,
                               "{\"preconditions\":{\"uid\":\"not-it\"}}");
    assert_status(bad, 409, "Conflict");
}

/* A TFJob owning two pods, a service and a PodGroup-like configmap. Returns the job's uid. */
static char *make_owned_job(KasServer *srv)
{
    create_crd(srv);
    g_autoptr(Resp) j =
            post(srv, "/apis/kubeflow.org/v1/namespaces/default/tfjobs",
                 "{\"apiVersion\":\"kubeflow.org/"
                 "v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"job\"},\"spec\":{}}");
    assert_status(j, 201, NULL);
    g_autofree char *owner = g_strdup_printf(
            ",\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
            "\"name\":\"job\",\"uid\":\"%s\",\"controller\":true}]",
            js(j, "metadata.uid"));
    for (int i = 0; i < 2; i++) {
        g_autofree char *p =
                g_strdup_printf("{\"metadata\":{\"name\":\"job-worker-%d\"%s},\"spec\":{"
                                "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\"}]}}",
                                i, owner);
        create_pod(srv, p);
    }
    g_autofree char *svc = g_strdup_printf(
            "{\"metadata\":{\"name\":\"job-worker-0\"%s},\"spec\":{\"ports\":[{\"port\":2222}]}}",
            owner);
    g_autoptr(Resp) s = post(srv, "/api/v1/namespaces/default/services", svc);
    assert_status(s, 201, NULL);
    g_autofree char *cm = g_strdup_printf("{\"metadata\":{\"name\":\"job-pg\"%s}}", owner);
    g_autoptr(Resp) c = post(srv, "/api/v1/namespaces/default/configmaps", cm);
    assert_status(c, 201, NULL);
    return g_strdup(js(j, "metadata.uid"));
}

static void test_gc_cascade(void)
{
    g_autoptr(KasServer) srv = start();
    g_autofree char *uid = make_owned_job(srv);
    g_autoptr(Resp) d = http(srv, "DELETE", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job",
                             NULL, "{\"propagationPolicy\":\"Background\"}");
    g_assert_cmpint(d->code, ==, 200);
    wait_gone(srv, "/api/v1/namespaces/default/pods/job-worker-0");
    wait_gone(srv, "/api/v1/namespaces/default/pods/job-worker-1");
    wait_gone(srv, "/api/v1/namespaces/default/services/job-worker-0");
    wait_gone(srv, "/api/v1/namespaces/default/configmaps/job-pg");
}

static void test_gc_orphan(void)
{
    g_autoptr(KasServer) srv = start();
    g_autofree char *uid = make_owned_job(srv);
    g_autoptr(Resp) d =
            http(srv, "DELETE",
                 "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job?propagationPolicy=Orphan",
                 NULL, NULL);
    g_assert_cmpint(d->code, ==, 200);
    g_autoptr(Resp) pod = get(srv, "/api/v1/namespaces/default/pods/job-worker-0");
    g_assert_cmpint(pod->code, ==, 200);
    g_assert_null(kas_json_get(pod->json, "metadata.ownerReferences"));
}

static void test_gc_foreground(void)
{
    g_autoptr(KasServer) srv = start();
    g_autofree char *uid = make_owned_job(srv);
    g_autoptr(Resp) d = http(srv, "DELETE", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job",
                             NULL, "{\"propagationPolicy\":\"Foreground\"}");
    g_assert_cmpint(d->code, ==, 200);
    /* The dependents went first (unscheduled pods go at once), then the owner. */
    wait_gone(srv, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job");
    g_autoptr(Resp) pods = get(srv, "/api/v1/namespaces/default/pods");
    g_assert_cmpuint(json_object_array_length(kas_json_get(pods->json, "items")), ==, 0);
}

static void test_gc_namespace(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) ns = post(srv, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"team\"}}");
    assert_status(ns, 201, NULL);
    g_autoptr(Resp) p = post(srv, "/api/v1/namespaces/team/pods", POD_JSON("p1", "", ""));
    assert_status(p, 201, NULL);
    g_autoptr(Resp) d = http(srv, "DELETE", "/api/v1/namespaces/team", NULL, NULL);
    g_assert_cmpint(d->code, ==, 200);
    g_autoptr(Resp) gone = get(srv, "/api/v1/namespaces/team/pods/p1");
    g_assert_cmpint(gone->code, ==, 404);
}

/* ---- CRDs
 * ------------------------------------------------------------------------------------------------
 */

static void test_crd_lifecycle(void)
{
    g_autoptr(KasServer) srv = start();
    create_crd(srv);
    g_autoptr(Resp) crd =
            get(srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org");
    g_assert_nonnull(strstr(crd->body, "\"type\":\"Established\",\"status\":\"True\""));
    g_autoptr(Resp) c = post_yaml(srv, "/apis/kubeflow.org/v1alpha1/namespaces/default/tfjobs",
                                  "tests/data/apiserver/tfjob-seed.yaml");
    assert_status(c, 201, NULL);
    g_assert_cmpstr(js(c, "apiVersion"), ==, "kubeflow.org/v1alpha1");
    g_autoptr(Resp) l = get(srv, "/apis/kubeflow.org/v1/tfjobs");
    g_assert_cmpstr(js(l, "kind"), ==, "TFJobList");
    g_assert_cmpuint(json_object_array_length(kas_json_get(l->json, "items")), ==, 1);
    g_autoptr(Resp) d =
            http(srv, "DELETE",
                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org",
                 NULL, NULL);
    g_assert_cmpint(d->code, ==, 200);
    g_autoptr(Resp) after = get(srv, "/apis/kubeflow.org/v1/tfjobs");
    /* the group is served no more: the mux's plain answer, as kube-apiserver's */
    assert_status(after, 404, NULL);
    g_assert_cmpstr(after->body, ==, "404 page not found\n");
    g_autoptr(Resp) bad = post(srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                               "{\"metadata\":{\"name\":\"wrong\"},\"spec\":{\"group\":\"a.b\","
                               "\"scope\":\"Namespaced\","
                               "\"names\":{\"plural\":\"xs\",\"kind\":\"X\"},\"versions\":[{"
                               "\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
    assert_status(bad, 422, "Invalid");
}

static void test_crd_project_files(void)
{
    g_autofree char *dir = src_path("deploy/base/crds");
    GDir *d = g_dir_open(dir, 0, NULL);
    if (d == NULL) {
        g_test_skip("deploy/base/crds/ is not there yet");
        return;
    }
    g_autoptr(KasServer) srv = start();
    const char *name;
    guint n = 0;
    while ((name = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_suffix(name, ".yaml"))
            continue;
        g_autofree char *rel = g_build_filename("deploy/base/crds", name, NULL);
        g_autoptr(Resp) r =
                post_yaml(srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", rel);
        if (r->code != 201)
            g_error("%s: %s", rel, r->body);
        n++;
    }
    g_dir_close(d);
    g_assert_cmpuint(n, >, 0);
    g_autoptr(Resp) pg =
            post(srv, "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
                 "{\"apiVersion\":\"scheduling.volcano.sh/"
                 "v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"pg\"},\"spec\":{"
                 "\"minMember\":2}}");
    assert_status(pg, 201, NULL);
}

/* A Running pod covered by a PodDisruptionBudget (policy/v1) is evicted only while the budget's
 * status allows it; each eviction uses one disruption up. */
static void test_eviction_budget(void)
{
    g_autoptr(KasServer) srv = start();
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("p%d", i);
        g_autofree char *body = g_strdup_printf("{\"metadata\":{\"name\":\"%s\",\"labels\":{"
                                                "\"app\":\"a\"}},\"spec\":{\"containers\":"
                                                "[{\"name\":\"c\",\"image\":\"busybox:1\"}]}}",
                                                name);
        create_pod(srv, body);
        g_autofree char *path = g_strdup_printf("/api/v1/namespaces/default/pods/%s/status", name);
        g_autoptr(Resp) st = http(srv, "PATCH", path, "application/merge-patch+json",
                                  "{\"status\":{\"phase\":\"Running\"}}");
        assert_status(st, 200, NULL);
    }
    g_autoptr(Resp) pdb = post(srv, "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                               "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"minAvailable\":1,"
                               "\"selector\":{\"matchLabels\":{\"app\":\"a\"}}}}");
    assert_status(pdb, 201, NULL);
    g_assert_cmpint(ji(pdb, "status.disruptionsAllowed"), ==, 0);
    static const char EVICT[] = "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
                                "\"metadata\":{\"name\":\"p0\"}}";
    /* no disruption controller has looked at the budget yet */
    g_autoptr(Resp) e0 = post(srv, "/api/v1/namespaces/default/pods/p0/eviction", EVICT);
    assert_status(e0, 429, "TooManyRequests");
    g_assert_nonnull(
            strstr(e0->body, "The disruption budget b is still being processed by the server."));
    /* what a disruption controller would write: one disruption allowed */
    g_autoptr(Resp) w =
            http(srv, "PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/b/status",
                 "application/merge-patch+json",
                 "{\"status\":{\"observedGeneration\":1,\"disruptionsAllowed\":1,"
                 "\"currentHealthy\":2,\"desiredHealthy\":1,\"expectedPods\":2}}");
    assert_status(w, 200, NULL);
    g_autoptr(Resp) e1 = post(srv, "/api/v1/namespaces/default/pods/p0/eviction", EVICT);
    assert_status(e1, 201, NULL);
    g_autoptr(Resp) e2 = post(srv, "/api/v1/namespaces/default/pods/p1/eviction",
                              "{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"Eviction\","
                              "\"metadata\":{\"name\":\"p1\"}}");
    assert_status(e2, 429, "TooManyRequests");
    g_assert_nonnull(
            strstr(e2->body, "The disruption budget b needs 1 healthy pods and has 2 currently"));
    g_autoptr(Resp) after =
            get(srv, "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets/b");
    g_assert_cmpint(ji(after, "status.disruptionsAllowed"), ==, 0);
    g_assert_cmpstr(js(after, "apiVersion"), ==, "policy/v1beta1");
}

/* TaintNodesByCondition: a new node is tainted not-ready until it reports Ready. */
static void test_node_not_ready_taint(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_node(srv, "n1");
    for (int i = 0; i < 1000; i++) {
        g_autoptr(Resp) n = get(srv, "/api/v1/nodes/n1");
        if (strstr(n->body, "node.kubernetes.io/not-ready") == NULL) {
            g_assert_nonnull(strstr(n->body, "\"type\":\"Ready\",\"status\":\"True\""));
            return;
        }
        g_usleep(20000);
    }
    g_error("the not-ready taint stayed on a Ready node");
}

/* ---- simulated kubelet
 * ------------------------------------------------------------------------------------- */

#define SIM_POD(name, run, code, policy)                                                           \
    "{\"metadata\":{\"name\":\"" name                                                              \
    "\",\"annotations\":{\"sim.kube-batchd.io/run-seconds\":\"" run                                \
    "\",\"sim.kube-batchd.io/exit-code\":\"" code "\"}},\"spec\":{\"restartPolicy\":\"" policy     \
    "\",\"containers\":[{\"name\":\"tensorflow\",\"image\":\"tf:1\"}]}}"

static void bind_pod(KasServer *srv, const char *pod, const char *node)
{
    g_autofree char *path = g_strdup_printf("/api/v1/namespaces/default/pods/%s/binding", pod);
    g_autofree char *body = g_strdup_printf("{\"target\":{\"name\":\"%s\"}}", node);
    g_autoptr(Resp) r = post(srv, path, body);
    assert_status(r, 201, NULL);
}

static void test_kubelet_node_ready(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_node(srv, "n1");
    g_autoptr(Resp) n =
            wait_field(srv, "/api/v1/nodes/n1", "status.nodeInfo.kubeletVersion", "v1.32.0-sim");
    g_assert_nonnull(strstr(n->body, "\"type\":\"Ready\",\"status\":\"True\""));
    g_assert_cmpstr(js(n, "status.allocatable.pods"), ==, "110");
    g_autoptr(Resp) lease =
            wait_field(srv, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                       "spec.holderIdentity", "n1");
}

static void test_kubelet_succeeded(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_node(srv, "n1");
    create_pod(srv, SIM_POD("p1", "0.2", "0", "Never"));
    g_autoptr(Resp) pending = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpstr(js(pending, "status.phase"), ==, "Pending");
    bind_pod(srv, "p1", "n1");
    g_autoptr(Resp) running =
            wait_field(srv, "/api/v1/namespaces/default/pods/p1", "status.phase", "Running");
    g_assert_nonnull(js(running, "status.podIP"));
    g_autoptr(Resp) done =
            wait_field(srv, "/api/v1/namespaces/default/pods/p1", "status.phase", "Succeeded");
    json_object *cs =
            json_object_array_get_idx(kas_json_get(done->json, "status.containerStatuses"), 0);
    g_assert_cmpint(json_object_get_int(kas_json_get(cs, "state.terminated.exitCode")), ==, 0);
    g_assert_cmpstr(kas_json_get_string(cs, "state.terminated.reason"), ==, "Completed");
}

static void test_kubelet_failed_exit_code(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_node(srv, "n1");
    create_pod(srv, SIM_POD("p1", "0.1", "137", "Never"));
    bind_pod(srv, "p1", "n1");
    g_autoptr(Resp) done =
            wait_field(srv, "/api/v1/namespaces/default/pods/p1", "status.phase", "Failed");
    json_object *cs =
            json_object_array_get_idx(kas_json_get(done->json, "status.containerStatuses"), 0);
    g_assert_cmpint(json_object_get_int(kas_json_get(cs, "state.terminated.exitCode")), ==, 137);
    g_assert_cmpstr(kas_json_get_string(cs, "state.terminated.reason"), ==, "Error");
}

static void test_kubelet_restart_on_failure(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_node(srv, "n1");
    create_pod(srv, SIM_POD("p1", "0.1", "1", "OnFailure"));
    bind_pod(srv, "p1", "n1");
    for (int i = 0; i < 300; i++) {
        g_autoptr(Resp) r = get(srv, "/api/v1/namespaces/default/pods/p1");
        json_object *all = kas_json_get(r->json, "status.containerStatuses");
        json_object *cs = json_object_is_type(all, json_type_array)
                                  ? json_object_array_get_idx(all, 0)
                                  : NULL;
        if (cs != NULL && json_object_get_int(kas_json_get(cs, "restartCount")) >= 1) {
            g_assert_cmpstr(js(r, "status.phase"), ==, "Running");
            g_assert_cmpint(json_object_get_int(kas_json_get(cs, "lastState.terminated.exitCode")),
                            ==, 1);
            return;
        }
        g_usleep(10000);
    }
    g_error("the container was never restarted");
}

static void test_kubelet_runs_until_deleted(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_node(srv, "n1");
    create_pod(srv, POD_JSON("p1", "", ""));
    bind_pod(srv, "p1", "n1");
    g_autoptr(Resp) r =
            wait_field(srv, "/api/v1/namespaces/default/pods/p1", "status.phase", "Running");
    /* Graceful deletion is confirmed by the kubelet long before the 30 s grace period. */
    g_autoptr(Resp) d = http(srv, "DELETE", "/api/v1/namespaces/default/pods/p1", NULL, NULL);
    g_assert_nonnull(js(d, "metadata.deletionTimestamp"));
    wait_gone(srv, "/api/v1/namespaces/default/pods/p1");
}

static void test_kubelet_unknown_node(void)
{
    g_autoptr(KasServer) srv = start_with(opt_sim);
    create_pod(srv, POD_JSON("p1", "", ""));
    bind_pod(srv, "p1", "ghost");
    g_usleep(200000);
    g_autoptr(Resp) r = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpstr(js(r, "status.phase"), ==, "Pending");
}

static void opt_nodes_file(KasServerOptions *o)
{
    static char *path;
    g_free(path);
    path = src_path("tests/data/apiserver/nodes.yaml");
    o->nodes_file = path;
    o->simulate_kubelet = TRUE;
}

static void test_nodes_file(void)
{
    g_autoptr(KasServer) srv = start_with(opt_nodes_file);
    g_autoptr(Resp) l =
            get(srv, "/api/v1/nodes?labelSelector=topology.kubernetes.io%2Frack%3Drack-1");
    json_object *items = kas_json_get(l->json, "items");
    g_assert_cmpuint(json_object_array_length(items), ==, 2);
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(items, 0), "metadata.name"), ==,
                    "gpu-2");
    g_autoptr(Resp) n = get(srv, "/api/v1/nodes/gpu-0");
    g_assert_cmpstr(kas_json_get_string(kas_json_get(n->json, "status.allocatable"), "cpu"), ==,
                    "64");
    g_assert_nonnull(strstr(n->body, "\"nvidia.com/gpu\":\"8\""));
    g_assert_nonnull(strstr(n->body, "kube-batchd.io/gpu-topology"));
    g_assert_cmpuint(list_count(srv, "/api/v1/nodes"), ==, 5);
}

static void test_nodes_file_bad(void)
{
    g_autofree char *path = g_build_filename(g_get_tmp_dir(), "kas-bad-nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(path, "nodes:\n- count: 200000\n", -1, NULL));
    KasServerOptions o;
    kas_server_options_init(&o);
    o.nodes_file = path;
    g_autoptr(GError) error = NULL;
    g_autoptr(KasServer) srv = kas_server_new(&o, &error);
    g_assert_null(srv);
    g_assert_nonnull(strstr(error->message, "limit"));
    g_unlink(path);
}

/* ---- faults
 * ---------------------------------------------------------------------------------------------- */

static void test_faults_error_retry_after(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) set =
            post(srv, "/admin/faults", "error=429,retry=3,method=POST,path=*binding,count=2");
    g_assert_cmpint(set->code, ==, 200);
    create_pod(srv, POD_JSON("p1", "", ""));
    for (int i = 0; i < 2; i++) {
        g_autoptr(Resp) r = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
        assert_status(r, 429, "TooManyRequests");
        g_assert_cmpstr(r->retry_after, ==, "3");
    }
    /* count=2: the third attempt goes through. */
    g_autoptr(Resp) ok = post(srv, "/api/v1/namespaces/default/pods/p1/binding", BIND_N1);
    assert_status(ok, 201, NULL);
    g_autoptr(Resp) desc = get(srv, "/admin/faults");
    g_assert_nonnull(strstr(desc->body, "\"fired\":2"));
}

static void test_faults_5xx_fraction(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) set =
            post(srv, "/admin/faults", "error=503,method=GET,path=/api/v1/pods,fraction=0.5");
    guint failed = 0;
    for (int i = 0; i < 40; i++) {
        g_autoptr(Resp) r = get(srv, "/api/v1/pods");
        g_assert_true(r->code == 200 || r->code == 503);
        failed += r->code == 503;
    }
    g_assert_cmpuint(failed, >, 5);
    g_assert_cmpuint(failed, <, 35);
    g_autoptr(Resp) other = get(srv, "/api/v1/nodes");
    g_assert_cmpint(other->code, ==, 200);
    g_autoptr(Resp) clear = post(srv, "/admin/faults", "");
    g_autoptr(Resp) fine = get(srv, "/api/v1/pods");
    g_assert_cmpint(fine->code, ==, 200);
}

static void test_faults_bad_spec(void)
{
    g_autoptr(KasServer) srv = start();
    static const char *const bad[] = {"error=abc", "explode", "latency=5,fraction=2",
                                      "error=503,colour=red"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(Resp) r = post(srv, "/admin/faults", bad[i]);
        assert_status(r, 400, "BadRequest");
    }
    KasServerOptions o;
    kas_server_options_init(&o);
    o.faults = "cut-watch,after=x";
    g_autoptr(GError) error = NULL;
    g_assert_null(kas_server_new(&o, &error));
    g_assert_nonnull(strstr(error->message, "after"));
}

static void test_faults_latency(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) set = post(srv, "/admin/faults", "latency=300,path=/version");
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(Resp) r = get(srv, "/version");
    g_assert_cmpint(r->code, ==, 200);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 300000);
}

static void test_faults_cut_watch_mid_event(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    create_pod(srv, POD_JSON("p2", "", ""));
    create_pod(srv, POD_JSON("p3", "", ""));
    g_autoptr(Resp) set = post(srv, "/admin/faults", "cut-watch,after=1,mid=1");
    char *leftover = NULL;
    CURLcode rc;
    g_autoptr(GPtrArray) lines =
            watch_full(srv, "/api/v1/namespaces/default/pods?watch=1", 10, 5000, &leftover, &rc);
    /* One whole event, then half of the next one, then the connection drops. */
    g_assert_cmpuint(lines->len, ==, 1);
    g_assert_cmpint(rc, !=, CURLE_OK);
    g_assert_cmpuint(strlen(leftover), >, 10);
    g_assert_null(json_tokener_parse(leftover));
    g_free(leftover);
}

static void test_faults_restart(void)
{
    g_autoptr(KasServer) srv = start();
    g_autoptr(Resp) l = get(srv, "/api/v1/pods");
    WatchThread w = {srv,
                     g_strdup_printf("/api/v1/pods?watch=1&resourceVersion=%s",
                                     js(l, "metadata.resourceVersion")),
                     NULL, 100, CURLE_OK};
    GThread *t = g_thread_new("w", watch_thread, &w);
    wait_watchers(srv, 1);
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) r = post(srv, "/admin/restart", "");
    g_assert_cmpint(r->code, ==, 200);
    g_thread_join(t);
    g_ptr_array_unref(w.lines);
    g_free(w.path);
    /* Data is kept; resuming from before the restart needs a relist (410). */
    g_autoptr(Resp) pod = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpint(pod->code, ==, 200);
    g_autofree char *p2 = g_strdup_printf("/api/v1/pods?watch=1&resourceVersion=%s",
                                          js(l, "metadata.resourceVersion"));
    g_autoptr(GPtrArray) lines = watch(srv, p2, 1, 5000);
    g_assert_nonnull(strstr(g_ptr_array_index(lines, 0), "\"code\":410"));
    wait_watchers(srv, 0);
}

/* ---- tables and odds and ends
 * ----------------------------------------------------------------------------- */

static void test_table_pods(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ",\"nodeName\":\"n1\""));
    Resp *r = g_new0(Resp, 1);
    GString *out = g_string_new(NULL);
    CURL *c = curl_easy_init();
    g_autofree char *url =
            g_strconcat(kas_server_url(srv), "/api/v1/namespaces/default/pods", NULL);
    struct curl_slist *h = curl_slist_append(
            NULL, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    g_assert_cmpint(curl_easy_perform(c), ==, CURLE_OK);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    r->body = g_string_free(out, FALSE);
    r->json = json_tokener_parse(r->body);
    g_assert_cmpstr(js(r, "kind"), ==, "Table");
    json_object *cols = kas_json_get(r->json, "columnDefinitions");
    static const char *const names[] = {"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
        g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(cols, i), "name"), ==,
                        names[i]);
    json_object *cells =
            kas_json_get(json_object_array_get_idx(kas_json_get(r->json, "rows"), 0), "cells");
    g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(cells, 0)), ==, "p1");
    g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(cells, 1)), ==, "0/1");
    g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(cells, 6)), ==, "n1");
    resp_free(r);
}

static void test_eviction(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ""));
    g_autoptr(Resp) r = post(
            srv, "/api/v1/namespaces/default/pods/p1/eviction",
            "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"p1\"}}");
    assert_status(r, 201, NULL);
    g_autoptr(Resp) gone = get(srv, "/api/v1/namespaces/default/pods/p1");
    g_assert_cmpint(gone->code, ==, 404);
    g_autoptr(Resp) log = get(srv, "/api/v1/namespaces/default/pods/p1/log");
    assert_status(log, 404, "NotFound");
}

/* The DisruptionTarget conditions of pod @name (default), as "reason:message" each; newly
 * allocated, NULL when the pod is gone. */
static char *disruption_targets(KasServer *srv, const char *name)
{
    g_autofree char *path = g_strdup_printf("/api/v1/namespaces/default/pods/%s", name);
    g_autoptr(Resp) r = get(srv, path);
    if (r->code == 404)
        return NULL;
    assert_status(r, 200, NULL);
    GString *out = g_string_new(NULL);
    json_object *conds = kas_json_get(r->json, "status.conditions");
    for (gsize i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), "DisruptionTarget") == 0)
            g_string_append_printf(
                    out, "%s%s:%s:%s", out->len > 0 ? "," : "", kas_json_get_string(c, "status"),
                    kas_json_get_string(c, "reason"), kas_json_get_string(c, "message"));
    }
    return g_string_free(out, FALSE);
}

/*
 * As kube-apiserver 1.26+ (PodDisruptionConditions): the eviction sets the pod's DisruptionTarget
 * (EvictionByEvictionAPI), replacing one a scheduler wrote before, then deletes it (here with a
 * grace period: the marked pod stays, showing both). A uid precondition that does not hold
 * writes nothing.
 */
static void test_eviction_disruption_target(void)
{
    g_autoptr(KasServer) srv = start();
    create_pod(srv, POD_JSON("p1", "", ",\"nodeName\":\"n1\""));
    create_pod(srv, POD_JSON("p2", "", ",\"nodeName\":\"n1\""));
    g_autoptr(Resp) st = http(srv, "PATCH", "/api/v1/namespaces/default/pods/p1/status",
                              "application/strategic-merge-patch+json",
                              "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                              "\"DisruptionTarget\",\"status\":\"True\",\"reason\":"
                              "\"PreemptionByScheduler\",\"message\":\"by job x\"}]}}");
    assert_status(st, 200, NULL);
    g_autoptr(Resp) r = post(
            srv, "/api/v1/namespaces/default/pods/p1/eviction",
            "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"p1\"}}");
    assert_status(r, 201, NULL);
    g_autoptr(Resp) p1 = get(srv, "/api/v1/namespaces/default/pods/p1");
    assert_status(p1, 200, NULL);
    g_assert_nonnull(js(p1, "metadata.deletionTimestamp"));
    g_autofree char *cond = disruption_targets(srv, "p1");
    g_assert_cmpstr(cond, ==, "True:EvictionByEvictionAPI:Eviction API: evicting");

    g_autoptr(Resp) wrong = post(srv, "/api/v1/namespaces/default/pods/p2/eviction",
                                 "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
                                 "\"metadata\":{\"name\":\"p2\"},\"deleteOptions\":{"
                                 "\"preconditions\":{\"uid\":\"not-its-uid\"}}}");
    assert_status(wrong, 409, "Conflict");
    g_autofree char *none = disruption_targets(srv, "p2");
    g_assert_cmpstr(none, ==, "");
    g_autoptr(Resp) p2 = get(srv, "/api/v1/namespaces/default/pods/p2");
    g_assert_null(js(p2, "metadata.deletionTimestamp"));
}

static void test_yaml_limits(void)
{
    g_autoptr(GError) error = NULL;
    GString *deep = g_string_new(NULL);
    for (int i = 0; i <= KAS_JSON_MAX_DEPTH; i++)
        g_string_append(deep, "[");
    json_object *j = kas_yaml_to_json(deep->str, deep->len, &error);
    g_assert_null(j);
    g_assert_nonnull(error);
    g_clear_error(&error);
    j = kas_json_parse(deep->str, deep->len, &error);
    g_assert_null(j);
    g_assert_nonnull(error);
    g_string_free(deep, TRUE);
    g_clear_error(&error);
    j = kas_yaml_to_json("a: &x 1\nb: *x\n", 14, &error);
    g_assert_null(j);
    g_assert_nonnull(strstr(error->message, "aliases"));
}

/* Both parsers keep one tokener per thread: what a malformed, truncated or too deep text left in
 * it must not change how the next text parses. */
static void test_json_tokener_reused(void)
{
    g_autoptr(GString) deep = g_string_new(NULL);
    for (int i = 0; i < KAS_JSON_MAX_DEPTH; i++)
        g_string_append(deep, "[");
    for (int i = 0; i < KAS_JSON_MAX_DEPTH; i++)
        g_string_append(deep, "]");
    const char *bad[] = {"{\"a\": [1, 2", "{\"a\": tru}", "[[[[", "{\"a\": 1} x", "\"open"};
    for (guint round = 0; round < 3; round++) {
        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
            g_autoptr(GError) error = NULL;
            g_assert_null(kas_json_parse(bad[i], strlen(bad[i]), &error));
            g_assert_nonnull(error);
            g_clear_error(&error);
            if (strcmp(bad[i], "{\"a\": 1} x") != 0)
                g_assert_null(kas_json_parse_stored(bad[i]));
            json_object *ok = kas_json_parse("{\"b\": 12}", 9, &error);
            g_assert_no_error(error);
            g_assert_cmpstr(json_object_to_json_string(ok), ==, "{ \"b\": 12 }");
            json_object_put(ok);
            json_object *st = kas_json_parse_stored("{\"c\": [true]}");
            g_assert_cmpstr(json_object_to_json_string(st), ==, "{ \"c\": [ true ] }");
            json_object_put(st);
            /* The depth stays each parser's own: 64 for bodies, json-c's 32 for stored text. */
            json_object *d = kas_json_parse(deep->str, deep->len, &error);
            g_assert_no_error(error);
            g_assert_nonnull(d);
            json_object_put(d);
            g_assert_null(kas_json_parse_stored(deep->str));
        }
    }
    /* A number at the very end of a body still ends the value. */
    g_autoptr(GError) error = NULL;
    json_object *n = kas_json_parse("42", 2, &error);
    g_assert_no_error(error);
    g_assert_cmpint(json_object_get_int(n), ==, 42);
    json_object_put(n);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    curl_global_init(CURL_GLOBAL_ALL);
    g_test_add_func("/apiserver/discovery/core", test_discovery_core);
    g_test_add_func("/apiserver/json/tokener-reused", test_json_tokener_reused);
    g_test_add_func("/apiserver/discovery/crd-group", test_discovery_crd_group);
    g_test_add_func("/apiserver/discovery/scheduler-informers", test_discovery_scheduler_informers);
    g_test_add_func("/apiserver/crud/create-get", test_crud_create_get);
    g_test_add_func("/apiserver/crud/already-exists-409", test_crud_already_exists);
    g_test_add_func("/apiserver/crud/not-found-404", test_crud_not_found);
    g_test_add_func("/apiserver/crud/generate-name", test_crud_generate_name);
    g_test_add_func("/apiserver/crud/invalid", test_crud_invalid);
    g_test_add_func("/apiserver/gang-api/runtime-config", test_gang_api_runtime_config);
    g_test_add_func("/apiserver/gang-api/podgroup", test_gang_api_podgroup);
    g_test_add_func("/apiserver/gang-api/invalid", test_gang_api_invalid);
    g_test_add_func("/apiserver/gang-api/v1alpha3/runtime-config",
                    test_gang_api_v1alpha3_runtime_config);
    g_test_add_func("/apiserver/gang-api/v1alpha3/composite", test_gang_api_composite);
    g_test_add_func("/apiserver/gang-api/v1alpha3/podgroup-versions",
                    test_gang_api_podgroup_versions);
    g_test_add_func("/apiserver/dra/discovery", test_dra_discovery);
    g_test_add_func("/apiserver/dra/claim-status", test_dra_claim_status);
    g_test_add_func("/apiserver/dra/claim-status-only", test_dra_claim_status_only);
    g_test_add_func("/apiserver/dra/claim-status-nested", test_dra_claim_status_nested);
    g_test_add_func("/apiserver/dra/claim-status-splice", test_dra_claim_status_splice);
    g_test_add_func("/apiserver/dra/claim-status-text", test_dra_claim_status_text);
    g_test_add_func("/apiserver/dra/reservations-live", test_dra_reservations_live);
    g_test_add_func("/apiserver/ops/mutate-parsed", test_mutate_parsed);
    g_test_add_func("/apiserver/ops/optimistic-binding", test_optimistic_binding);
    g_test_add_data_func("/apiserver/ops/optimistic-claim-status", GINT_TO_POINTER(FALSE),
                         test_optimistic_claim_status);
    g_test_add_data_func("/apiserver/ops/optimistic-claim-status-text", GINT_TO_POINTER(TRUE),
                         test_optimistic_claim_status);
    g_test_add_func("/apiserver/ops/optimistic-concurrent", test_optimistic_concurrent);
    g_test_add_func("/apiserver/dra/invalid", test_dra_invalid);
    g_test_add_func("/apiserver/dra/limits", test_dra_limits);
    g_test_add_func("/apiserver/dra/partitionable", test_dra_partitionable);
    g_test_add_func("/apiserver/dra/consumable-capacity", test_dra_consumable_capacity);
    g_test_add_func("/apiserver/dra/cel", test_dra_cel);
    g_test_add_func("/apiserver/dra/slice-field-selectors", test_dra_slice_fields);
    g_test_add_func("/apiserver/dra/pod-claims", test_dra_pod_claims);
    g_test_add_func("/apiserver/dra/controller/template-claims", test_dra_controller_template);
    g_test_add_func("/apiserver/dra/controller/shared-claim", test_dra_controller_shared);
    g_test_add_func("/apiserver/pods/pod-level-resources", test_pod_level_resources);
    g_test_add_func("/apiserver/crud/stale-update-409", test_crud_stale_update);
    g_test_add_func("/apiserver/crud/noop-update", test_crud_noop_update);
    g_test_add_func("/apiserver/crud/pod-spec-immutable", test_crud_pod_spec_immutable);
    g_test_add_func("/apiserver/limits/body-limit-crossed", test_limits_body);
    g_test_add_func("/apiserver/limits/default-3mib-413", test_limits_default_body);
    g_test_add_func("/apiserver/limits/connections-429", test_limits_connections);
    g_test_add_func("/apiserver/limits/slowloris", test_limits_slowloris);
    g_test_add_func("/apiserver/binding/scheduling-gates", test_binding_scheduling_gates);
    g_test_add_func("/apiserver/binding/protobuf", test_binding_protobuf);
    g_test_add_func("/apiserver/crud/pod-resources", test_crud_pod_resources);
    g_test_add_func("/apiserver/crud/pod-match-fields", test_crud_pod_match_fields);
    g_test_add_func("/apiserver/crud/annotations-size", test_crud_annotations_size);
    g_test_add_func("/apiserver/eviction/budget", test_eviction_budget);
    g_test_add_func("/apiserver/kubelet/not-ready-taint", test_node_not_ready_taint);
    g_test_add_func("/apiserver/binding/twice-201-then-409", test_binding_twice);
    g_test_add_func("/apiserver/binding/missing-404", test_binding_missing);
    g_test_add_func("/apiserver/binding/deleting-409", test_binding_deleting);
    g_test_add_func("/apiserver/binding/legacy-bindings", test_binding_legacy);
    g_test_add_func("/apiserver/list/label-selectors", test_list_label_selectors);
    g_test_add_func("/apiserver/list/field-selectors", test_list_field_selectors);
    g_test_add_func("/apiserver/list/limit-continue", test_list_limit_continue);
    g_test_add_func("/apiserver/list/rv-from-cache-ignores-limit", test_list_rv_from_cache);
    g_test_add_func("/apiserver/requests/protobuf-body-415", test_protobuf_body_415);
    g_test_add_func("/apiserver/watch/replay-from-rv", test_watch_replay);
    g_test_add_func("/apiserver/watch/expired-410", test_watch_expired);
    g_test_add_func("/apiserver/watch/bookmark", test_watch_bookmark);
    g_test_add_func("/apiserver/watch/bookmark-before-deadline",
                    test_watch_bookmark_before_deadline);
    g_test_add_func("/apiserver/watch/timeout-seconds", test_watch_timeout);
    g_test_add_func("/apiserver/watch/initial-state", test_watch_initial_state);
    g_test_add_func("/apiserver/watch/selector-transition", test_watch_selector_transition);
    g_test_add_func("/apiserver/watch/many-watchers", test_watch_many_watchers);
    g_test_add_func("/apiserver/watch/slow-watcher-closed", test_watch_slow_watcher_closed);
    g_test_add_func("/apiserver/watch/burst-batched", test_watch_burst_batched);
    g_test_add_func("/apiserver/claims/pod-same", test_claims_pod_same);
    g_test_add_func("/apiserver/status/main-ignores-status", test_status_main_ignores_status);
    g_test_add_func("/apiserver/status/subresource-only-status", test_status_subresource);
    g_test_add_func("/apiserver/status/generation", test_status_generation);
    g_test_add_func("/apiserver/patch/types", test_patch_types);
    g_test_add_func("/apiserver/delete/graceful-pod", test_delete_graceful_pod);
    g_test_add_func("/apiserver/delete/finalizers-preconditions", test_delete_finalizers);
    g_test_add_func("/apiserver/gc/cascade", test_gc_cascade);
    g_test_add_func("/apiserver/gc/orphan", test_gc_orphan);
    g_test_add_func("/apiserver/gc/foreground", test_gc_foreground);
    g_test_add_func("/apiserver/gc/namespace", test_gc_namespace);
    g_test_add_func("/apiserver/crd/lifecycle", test_crd_lifecycle);
    g_test_add_func("/apiserver/crd/project-files", test_crd_project_files);
    g_test_add_func("/apiserver/kubelet/node-ready", test_kubelet_node_ready);
    g_test_add_func("/apiserver/kubelet/succeeded", test_kubelet_succeeded);
    g_test_add_func("/apiserver/kubelet/failed-exit-code", test_kubelet_failed_exit_code);
    g_test_add_func("/apiserver/kubelet/restart-on-failure", test_kubelet_restart_on_failure);
    g_test_add_func("/apiserver/kubelet/runs-until-deleted", test_kubelet_runs_until_deleted);
    g_test_add_func("/apiserver/kubelet/unknown-node", test_kubelet_unknown_node);
    g_test_add_func("/apiserver/nodes-file/templates", test_nodes_file);
    g_test_add_func("/apiserver/nodes-file/limit", test_nodes_file_bad);
    g_test_add_func("/apiserver/faults/error-retry-after-count", test_faults_error_retry_after);
    g_test_add_func("/apiserver/faults/5xx-fraction", test_faults_5xx_fraction);
    g_test_add_func("/apiserver/faults/bad-spec", test_faults_bad_spec);
    g_test_add_func("/apiserver/faults/latency", test_faults_latency);
    g_test_add_func("/apiserver/faults/cut-watch-mid-event", test_faults_cut_watch_mid_event);
    g_test_add_func("/apiserver/faults/restart", test_faults_restart);
    g_test_add_func("/apiserver/table/pods", test_table_pods);
    g_test_add_func("/apiserver/eviction", test_eviction);
    g_test_add_func("/apiserver/eviction/disruption-target", test_eviction_disruption_target);
    g_test_add_func("/apiserver/decoders/limits", test_yaml_limits);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
