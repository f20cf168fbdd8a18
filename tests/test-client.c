/* The REST client against the scripted test server: blocking calls, error mapping, limits,
 * credentials, TLS, the asynchronous pool and streams. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

#include "kube/kb-client.h"
#include "tests/lib/kb-test-server.h"

#define POD_P1 "/api/v1/namespaces/default/pods/p1"
#define PODS   "/api/v1/namespaces/default/pods"

static char *srcdir_path(const char *rel)
{
    const char *srcdir = g_getenv("KB_SRCDIR");
    return g_build_filename(srcdir != NULL ? srcdir : ".", rel, NULL);
}

static KbClient *client_for(KbTestServer *srv)
{
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    config->timeout_ms = 5000;
    KbClient *client = kb_client_new(config, NULL);
    g_assert_nonnull(client);
    return client;
}

static json_object *parse(const char *text)
{
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    return obj;
}

static const char *jstr(json_object *obj, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (guint i = 0; parts[i] != NULL; i++)
        if (obj == NULL || !json_object_object_get_ex(obj, parts[i], &obj))
            return NULL;
    return json_object_get_string(obj);
}

static gboolean tick(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

/* Iterate the default main context until *@flag or @timeout_ms. */
static gboolean run_until(const gboolean *flag, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;
    guint ticker = g_timeout_add(10, tick, NULL);
    while (!*flag && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(ticker);
    return *flag;
}

static char *status_body(int code, const char *reason, const char *message)
{
    return g_strdup_printf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                           "\"reason\":\"%s\",\"message\":\"%s\",\"code\":%d}",
                           reason, message, code);
}

/* ---- paths --------------------------------------------------------------------------------- */

static void test_path(void)
{
    static const struct {
        const KbResourceType *type;
        const char *ns, *name, *sub, *want;
    } cases[] = {
            {&kb_type_pods, "default", "p1", NULL, POD_P1},
            {&kb_type_pods, "default", "p1", "binding", POD_P1 "/binding"},
            {&kb_type_pods, NULL, NULL, NULL, "/api/v1/pods"},
            {&kb_type_pods, "kube-system", NULL, NULL, "/api/v1/namespaces/kube-system/pods"},
            {&kb_type_nodes, "ignored", "n1", "status", "/api/v1/nodes/n1/status"},
            {&kb_type_leases, "kube-system", "kube-batchd", NULL,
             "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-batchd"},
            {&kb_type_queues_volcano, NULL, "default", NULL,
             "/apis/scheduling.volcano.sh/v1beta1/queues/default"},
            {&kb_type_pod_groups_x_k8s, "ml", "pg", "status",
             "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/pg/status"},
            {&kb_type_tfjobs_v1alpha1, "ml", NULL, NULL,
             "/apis/kubeflow.org/v1alpha1/namespaces/ml/tfjobs"},
            {&kb_type_crds, NULL, "tfjobs.kubeflow.org", NULL,
             "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org"},
            {&kb_type_priority_classes, NULL, "system:high", NULL,
             "/apis/scheduling.k8s.io/v1/priorityclasses/system:high"},
            {&kb_type_pods, "default", "a b/c", NULL, PODS "/a%20b%2Fc"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path =
                kb_resource_path(cases[i].type, cases[i].ns, cases[i].name, cases[i].sub);
        g_assert_cmpstr(path, ==, cases[i].want);
    }
}

/* ---- blocking calls ------------------------------------------------------------------------ */

static void test_get(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "GET", POD_P1, 200,
                           "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"}}");
    json_object *pod = kb_client_get(client, &kb_type_pods, "default", "p1", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(jstr(pod, "metadata.name"), ==, "p1");
    json_object_put(pod);
    const KbTestRequest *req = kb_test_server_request(srv, 0);
    g_assert_cmpstr(req->method, ==, "GET");
    g_assert_cmpstr(req->target, ==, POD_P1);
    g_assert_cmpstr(kb_test_request_header(req, "Accept"), ==, "application/json");
    g_assert_true(g_str_has_prefix(kb_test_request_header(req, "User-Agent"), "kube-batchd/"));
    g_assert_null(kb_test_request_header(req, "Authorization"));
}

/* No compression unless asked for (the daemons' default); asked for, gzip is requested and a
 * compressed answer decoded, on a reused connection too. */
static void test_compression(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    const char *body = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"}}";
    g_autoptr(GConverter) gz = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1));
    char packed[256];
    gsize read = 0, written = 0;
    g_assert_cmpint(g_converter_convert(gz, body, strlen(body), packed, sizeof packed,
                                        G_CONVERTER_INPUT_AT_END, &read, &written, NULL),
                    ==, G_CONVERTER_FINISHED);
    for (int compression = 0; compression <= 1; compression++) {
        g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
        config->compression = compression;
        g_autoptr(KbClient) client = kb_client_new(config, NULL);
        for (int call = 0; call < 2; call++) {
            KbTestResponse *resp = kb_test_response_new(200);
            if (compression) {
                kb_test_response_set_body(resp, packed, (gssize)written);
                kb_test_response_add_header(resp, "Content-Encoding", "gzip");
            } else {
                kb_test_response_set_body(resp, body, -1);
            }
            kb_test_server_push(srv, "GET", POD_P1, resp);
            g_autoptr(GError) error = NULL;
            json_object *pod = kb_client_get(client, &kb_type_pods, "default", "p1", &error);
            g_assert_no_error(error);
            g_assert_cmpstr(jstr(pod, "metadata.name"), ==, "p1");
            json_object_put(pod);
            guint n = kb_test_server_request_count(srv);
            const char *ae = kb_test_request_header(kb_test_server_request(srv, n - 1),
                                                    "Accept-Encoding");
            if (compression)
                g_assert_cmpstr(ae, ==, "gzip");
            else
                g_assert_null(ae);
        }
    }
}

static void test_list_selectors(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "GET", "/api/v1/pods", 200,
                           "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\"},"
                           "\"items\":[]}");
    KbListOptions lo = {.label_selector = "app=tf,role in (ps,worker)",
                        .field_selector = "spec.schedulerName=kube-batchd",
                        .resource_version = "0"};
    json_object *list = kb_client_list(client, &kb_type_pods, NULL, &lo, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(jstr(list, "metadata.resourceVersion"), ==, "7");
    json_object_put(list);
    const KbTestRequest *req = kb_test_server_request(srv, 0);
    g_autofree char *ls = kb_test_request_query_param(req, "labelSelector");
    g_autofree char *fs = kb_test_request_query_param(req, "fieldSelector");
    g_autofree char *rv = kb_test_request_query_param(req, "resourceVersion");
    g_autofree char *limit = kb_test_request_query_param(req, "limit");
    g_autofree char *watch = kb_test_request_query_param(req, "watch");
    g_assert_cmpstr(ls, ==, "app=tf,role in (ps,worker)");
    g_assert_cmpstr(fs, ==, "spec.schedulerName=kube-batchd");
    g_assert_cmpstr(rv, ==, "0");
    g_assert_null(limit);
    g_assert_null(watch);
    /* Reserved characters are escaped: an '&' in a selector cannot split the query. */
    g_assert_null(strchr(strchr(req->query, '=') + 1, ' '));
}

/* Serves 5 pods in pages of "limit", the continue token being the next index. */
static KbTestResponse *paging_handler(const KbTestRequest *req, gpointer user_data)
{
    g_autofree char *limit_s = kb_test_request_query_param(req, "limit");
    g_autofree char *cont = kb_test_request_query_param(req, "continue");
    int limit = limit_s != NULL ? atoi(limit_s) : 100;
    int start = cont != NULL ? atoi(cont) : 0;
    GString *body = g_string_new("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"42\"");
    if (start + limit < 5)
        g_string_append_printf(body, ",\"continue\":\"%d\"", start + limit);
    g_string_append(body, "},\"items\":[");
    for (int i = start; i < MIN(5, start + limit); i++)
        g_string_append_printf(body, "%s{\"metadata\":{\"name\":\"p%d\"}}", i > start ? "," : "",
                               i);
    g_string_append(body, "]}");
    KbTestResponse *resp = kb_test_response_new_body(200, body->str);
    g_string_free(body, TRUE);
    return resp;
}

static void test_list_paging(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    kb_test_server_set_handler(srv, "GET", "/api/v1/namespaces/ml/pods", paging_handler, NULL,
                               NULL);
    g_autofree char *cont = NULL;
    GString *names = g_string_new(NULL);
    guint pages = 0;
    do {
        g_autoptr(GError) error = NULL;
        KbListOptions lo = {.limit = 2, .continue_token = cont};
        json_object *list = kb_client_list(client, &kb_type_pods, "ml", &lo, &error);
        g_assert_no_error(error);
        json_object *items = json_object_object_get(list, "items");
        for (size_t i = 0; i < json_object_array_length(items); i++)
            g_string_append(names, jstr(json_object_array_get_idx(items, i), "metadata.name"));
        g_free(cont);
        cont = g_strdup(jstr(list, "metadata.continue"));
        json_object_put(list);
        pages++;
    } while (cont != NULL);
    g_assert_cmpuint(pages, ==, 3);
    g_assert_cmpstr(names->str, ==, "p0p1p2p3p4");
    g_string_free(names, TRUE);
    g_autofree char *second_cont =
            kb_test_request_query_param(kb_test_server_request(srv, 1), "continue");
    g_autofree char *second_limit =
            kb_test_request_query_param(kb_test_server_request(srv, 1), "limit");
    g_assert_cmpstr(second_cont, ==, "2");
    g_assert_cmpstr(second_limit, ==, "2");
}

static void test_create(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "POST", PODS, 201,
                           "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"uid\":\"u1\"}}");
    json_object *body = parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"}}");
    json_object *created = kb_client_create(client, &kb_type_pods, "default", body, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(jstr(created, "metadata.uid"), ==, "u1");
    const KbTestRequest *req = kb_test_server_request(srv, 0);
    g_assert_cmpstr(req->method, ==, "POST");
    g_assert_cmpstr(kb_test_request_header(req, "Content-Type"), ==, "application/json");
    json_object *sent = parse(req->body);
    g_assert_true(json_object_equal(sent, body));
    json_object_put(sent);
    json_object_put(body);
    json_object_put(created);
}

/* A one-object store that enforces resourceVersion preconditions on PUT, like the apiserver. */
static KbTestResponse *rv_handler(const KbTestRequest *req, gpointer user_data)
{
    int *rv = user_data;
    json_object *obj = json_tokener_parse(req->body);
    const char *sent = jstr(obj, "metadata.resourceVersion");
    KbTestResponse *resp;
    if (sent != NULL && atoi(sent) != *rv) {
        resp = kb_test_response_new_status(
                409, "Conflict",
                "Operation cannot be fulfilled on pods \\\"p1\\\": the object has been modified; "
                "please apply your changes to the latest version and try again");
    } else {
        (*rv)++;
        g_autofree char *body = g_strdup_printf(
                "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"%d\"}}",
                *rv);
        resp = kb_test_response_new_body(200, body);
    }
    json_object_put(obj);
    return resp;
}

static void test_update_conflict(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    int rv = 5;
    kb_test_server_set_handler(srv, "PUT", POD_P1, rv_handler, &rv, NULL);
    g_autoptr(GError) error = NULL;
    json_object *body = parse("{\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"5\"}}");
    json_object *updated =
            kb_client_update(client, &kb_type_pods, "default", "p1", NULL, body, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(jstr(updated, "metadata.resourceVersion"), ==, "6");
    json_object_put(updated);
    /* The same body again is now stale. */
    updated = kb_client_update(client, &kb_type_pods, "default", "p1", NULL, body, &error);
    g_assert_null(updated);
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFLICT);
    g_assert_nonnull(strstr(error->message, "the object has been modified"));
    g_assert_nonnull(strstr(error->message, "PUT " POD_P1));
    json_object_put(body);
}

static void test_update_status(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "PUT", "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/j/status", 200,
                           "{}");
    json_object *body = parse("{\"status\":{}}");
    json_object *res =
            kb_client_update(client, &kb_type_tfjobs_v1, "ml", "j", "status", body, &error);
    g_assert_no_error(error);
    json_object_put(res);
    json_object_put(body);
}

static void test_patch_content_types(void)
{
    static const struct {
        KbPatchType type;
        const char *patch, *content_type;
    } cases[] = {
            {KB_PATCH_MERGE, "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
             "application/merge-patch+json"},
            {KB_PATCH_JSON, "[{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}]",
             "application/json-patch+json"},
            {KB_PATCH_STRATEGIC, "{\"spec\":{\"containers\":[]}}",
             "application/strategic-merge-patch+json"},
    };
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    kb_test_server_respond(srv, "PATCH", POD_P1 "*", 200, "{\"kind\":\"Pod\"}");
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        json_object *res =
                kb_client_patch(client, &kb_type_pods, "default", "p1", i == 2 ? "status" : NULL,
                                cases[i].type, cases[i].patch, &error);
        g_assert_no_error(error);
        json_object_put(res);
        const KbTestRequest *req = kb_test_server_request(srv, i);
        g_assert_cmpstr(req->method, ==, "PATCH");
        g_assert_cmpstr(req->path, ==, i == 2 ? POD_P1 "/status" : POD_P1);
        g_assert_cmpstr(kb_test_request_header(req, "Content-Type"), ==, cases[i].content_type);
        g_assert_cmpstr(req->body, ==, cases[i].patch);
    }
}

static void test_delete_options(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "DELETE", POD_P1, 200, "{\"kind\":\"Pod\"}");
    KbDeleteOptions opts = {.precondition_uid = "u1",
                            .precondition_resource_version = "9",
                            .propagation_policy = "Foreground"};
    g_assert_true(kb_client_delete(client, &kb_type_pods, "default", "p1", &opts, &error));
    g_assert_no_error(error);
    const KbTestRequest *req = kb_test_server_request(srv, 0);
    g_assert_cmpstr(req->method, ==, "DELETE");
    json_object *body = parse(req->body);
    g_assert_cmpstr(jstr(body, "kind"), ==, "DeleteOptions");
    g_assert_cmpstr(jstr(body, "preconditions.uid"), ==, "u1");
    g_assert_cmpstr(jstr(body, "preconditions.resourceVersion"), ==, "9");
    g_assert_cmpstr(jstr(body, "propagationPolicy"), ==, "Foreground");
    g_assert_null(jstr(body, "gracePeriodSeconds"));
    json_object_put(body);

    /* grace period 0 is sent (immediate deletion); no options at all sends no body. */
    opts = (KbDeleteOptions){.has_grace_period = TRUE, .grace_period_seconds = 0};
    g_assert_true(kb_client_delete(client, &kb_type_pods, "default", "p1", &opts, &error));
    body = parse(kb_test_server_request(srv, 1)->body);
    g_assert_cmpstr(jstr(body, "gracePeriodSeconds"), ==, "0");
    json_object_put(body);
    g_assert_true(kb_client_delete(client, &kb_type_pods, "default", "p1", NULL, &error));
    g_assert_cmpuint(kb_test_server_request(srv, 2)->body_len, ==, 0);
}

static void test_delete_precondition_failed(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    g_autofree char *status =
            status_body(409, "Conflict",
                        "Precondition failed: UID in precondition: u1, UID in object meta: u2");
    kb_test_server_respond(srv, "DELETE", POD_P1, 409, status);
    KbDeleteOptions opts = {.precondition_uid = "u1"};
    g_assert_false(kb_client_delete(client, &kb_type_pods, "default", "p1", &opts, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFLICT);
    g_assert_nonnull(strstr(error->message, "Precondition failed"));
}

static void test_bind(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "POST", POD_P1 "/binding", 201,
                           "{\"kind\":\"Status\",\"status\":\"Success\",\"code\":201}");
    g_assert_true(kb_client_bind(client, "default", "p1", "uid-1", "node-7", &error));
    g_assert_no_error(error);
    const KbTestRequest *sent = kb_test_server_request(srv, 0);
    /* protobuf, as client-go sends built-in objects */
    g_assert_cmpstr(kb_test_request_header(sent, "Content-Type"), ==,
                    "application/vnd.kubernetes.protobuf");
    json_object *body = kb_test_request_json(sent);
    g_assert_cmpstr(jstr(body, "kind"), ==, "Binding");
    g_assert_cmpstr(jstr(body, "metadata.name"), ==, "p1");
    g_assert_cmpstr(jstr(body, "metadata.uid"), ==, "uid-1");
    g_assert_cmpstr(jstr(body, "target.kind"), ==, "Node");
    g_assert_cmpstr(jstr(body, "target.name"), ==, "node-7");
    json_object_put(body);

    /* Already bound: the apiserver answers 409 Conflict. */
    g_autofree char *status =
            status_body(409, "Conflict",
                        "Operation cannot be fulfilled on pods/binding \\\"p1\\\": "
                        "pod p1 is already assigned to node \\\"node-3\\\"");
    kb_test_server_respond(srv, "POST", POD_P1 "/binding", 409, status);
    g_assert_false(kb_client_bind(client, "default", "p1", NULL, "node-7", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFLICT);
    g_assert_nonnull(strstr(error->message, "already assigned"));
}

static void test_evict_v1(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "POST", POD_P1 "/eviction", 201, "{\"kind\":\"Status\"}");
    g_assert_true(kb_client_evict(client, "default", "p1", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 1);
    json_object *body = parse(kb_test_server_request(srv, 0)->body);
    g_assert_cmpstr(jstr(body, "apiVersion"), ==, "policy/v1");
    g_assert_cmpstr(jstr(body, "kind"), ==, "Eviction");
    g_assert_cmpstr(jstr(body, "metadata.namespace"), ==, "default");
    json_object_put(body);
}

static void test_evict_fallback(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    g_autofree char *status =
            status_body(400, "BadRequest",
                        "no kind \\\"Eviction\\\" is registered for version "
                        "\\\"policy/v1\\\" in scheme \\\"pkg/api/legacyscheme/scheme.go:30\\\"");
    kb_test_server_respond(srv, "POST", POD_P1 "/eviction", 400, status);
    kb_test_server_respond(srv, "POST", POD_P1 "/eviction", 201, "{\"kind\":\"Status\"}");
    g_assert_true(kb_client_evict(client, "default", "p1", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 2);
    json_object *body = parse(kb_test_server_request(srv, 1)->body);
    g_assert_cmpstr(jstr(body, "apiVersion"), ==, "policy/v1beta1");
    json_object_put(body);
}

static void test_evict_errors(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    /* The pod itself is missing: no second try. */
    kb_test_server_respond(srv, "POST", POD_P1 "/eviction", 404,
                           "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"message\":"
                           "\"pods \\\"p1\\\" not found\",\"details\":{\"name\":\"p1\","
                           "\"kind\":\"pods\"},\"code\":404}");
    g_assert_false(kb_client_evict(client, "default", "p1", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_NOT_FOUND);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 1);
    g_clear_error(&error);
    /* A PodDisruptionBudget refuses: 429, to be retried later, not a version problem. */
    g_autofree char *pdb = status_body(429, "TooManyRequests",
                                       "Cannot evict pod as it would violate the pod's "
                                       "disruption budget.");
    kb_test_server_push(srv, "POST", "/api/v1/namespaces/default/pods/p2/eviction",
                        kb_test_response_new_body(429, pdb));
    g_assert_false(kb_client_evict(client, "default", "p2", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_TOO_MANY_REQUESTS);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 2);
}

/* ---- error mapping and limits -------------------------------------------------------------- */

static void test_error_mapping(void)
{
    static const struct {
        int status;
        const char *reason;
        KbErrorCode code;
    } cases[] = {
            {400, "BadRequest", KB_ERROR_BAD_REQUEST},
            {401, "Unauthorized", KB_ERROR_UNAUTHORIZED},
            {403, "Forbidden", KB_ERROR_FORBIDDEN},
            {404, "NotFound", KB_ERROR_NOT_FOUND},
            {405, "MethodNotAllowed", KB_ERROR_METHOD_NOT_ALLOWED},
            {409, "AlreadyExists", KB_ERROR_ALREADY_EXISTS},
            {409, "Conflict", KB_ERROR_CONFLICT},
            {410, "Expired", KB_ERROR_GONE},
            {410, "Gone", KB_ERROR_GONE},
            {413, "RequestEntityTooLarge", KB_ERROR_TOO_LARGE},
            {422, "Invalid", KB_ERROR_INVALID},
            {429, "TooManyRequests", KB_ERROR_TOO_MANY_REQUESTS},
            {500, "InternalError", KB_ERROR_SERVER},
            {503, "ServiceUnavailable", KB_ERROR_SERVER},
            {504, "Timeout", KB_ERROR_TIMEOUT},
            {418, "Teapot", KB_ERROR_UNKNOWN},
    };
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *name = g_strdup_printf("obj%u", i);
        g_autofree char *path = g_strdup_printf("/api/v1/namespaces/default/configmaps/%s", name);
        g_autofree char *message = g_strdup_printf("message number %u", i);
        kb_test_server_push(srv, "GET", path,
                            kb_test_response_new_status(cases[i].status, cases[i].reason, message));
        json_object *obj = kb_client_get(client, &kb_type_configmaps, "default", name, &error);
        g_assert_null(obj);
        g_assert_error(error, KB_ERROR, (gint)cases[i].code);
        /* The Status message reaches the user, with the request that failed. */
        g_assert_nonnull(strstr(error->message, message));
        g_assert_nonnull(strstr(error->message, path));
    }
}

static void test_error_not_status(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    KbTestResponse *resp = kb_test_response_new_body(502, "<html>Bad gateway\n</html>");
    kb_test_response_add_header(resp, "Content-Type", "text/html");
    kb_test_server_push(srv, "GET", POD_P1, resp);
    g_assert_null(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_SERVER);
    g_assert_nonnull(strstr(error->message, "Bad gateway"));
    g_assert_true(kb_error_is_retryable(error));
}

static void test_429_retry_after(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    guint retry_after = 0;
    KbTestResponse *resp = kb_test_response_new_status(429, "TooManyRequests", "slow down");
    kb_test_response_add_header(resp, "Retry-After", "7");
    kb_test_server_push(srv, "GET", POD_P1, resp);
    KbRequest req = {.method = "GET", .type = &kb_type_pods, .namespace_ = "default", .name = "p1"};
    g_assert_null(kb_client_call(client, &req, &retry_after, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_TOO_MANY_REQUESTS);
    g_assert_cmpuint(retry_after, ==, 7);
    g_clear_error(&error);

    /* No header: the Status details say it (apiserver max-in-flight and PDB answers). */
    kb_test_server_respond(srv, "GET", "/api/v1/namespaces/default/pods/p2", 429,
                           "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":"
                           "\"too many requests\",\"details\":{\"retryAfterSeconds\":3},"
                           "\"code\":429}");
    req.name = "p2";
    retry_after = 0;
    g_assert_null(kb_client_call(client, &req, &retry_after, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_TOO_MANY_REQUESTS);
    g_assert_cmpuint(retry_after, ==, 3);
}

static void test_500_then_success(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    kb_test_server_push(srv, "GET", POD_P1,
                        kb_test_response_new_status(500, "InternalError", "etcd leader changed"));
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{\"kind\":\"Pod\"}");
    json_object *pod = NULL;
    guint attempts = 0;
    while (pod == NULL && attempts < 5) {
        g_autoptr(GError) error = NULL;
        attempts++;
        pod = kb_client_get(client, &kb_type_pods, "default", "p1", &error);
        if (pod == NULL) {
            g_assert_error(error, KB_ERROR, KB_ERROR_SERVER);
            g_assert_true(kb_error_is_retryable(error));
        }
    }
    g_assert_cmpuint(attempts, ==, 2);
    g_assert_cmpstr(jstr(pod, "kind"), ==, "Pod");
    json_object_put(pod);
}

static void test_malformed_json(void)
{
    static const char *const bodies[] = {
            "{\"kind\":\"Pod\"",
            "{\"kind\":\"Pod\"} trailing",
            "not json",
            "{\"a\":[1,2,}",
    };
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    for (guint i = 0; i < G_N_ELEMENTS(bodies); i++) {
        g_autoptr(GError) error = NULL;
        kb_test_server_push(srv, "GET", POD_P1, kb_test_response_new_body(200, bodies[i]));
        g_assert_null(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
        g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
        g_assert_nonnull(strstr(error->message, POD_P1));
    }
    /* An empty 2xx body is not an error: NULL without error. */
    g_autoptr(GError) error = NULL;
    kb_test_server_push(srv, "GET", POD_P1, kb_test_response_new(200));
    g_assert_null(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
    g_assert_no_error(error);
}

static void test_json_depth_limit(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    /* 100 levels (a CRD's openAPIV3Schema nests deep) pass; 1000 do not. */
    for (guint depth = 100; depth <= 1000; depth += 900) {
        g_autoptr(GError) error = NULL;
        GString *body = g_string_new(NULL);
        for (guint i = 0; i < depth; i++)
            g_string_append(body, "{\"a\":");
        g_string_append(body, "1");
        for (guint i = 0; i < depth; i++)
            g_string_append_c(body, '}');
        kb_test_server_push(srv, "GET", POD_P1, kb_test_response_new_body(200, body->str));
        g_string_free(body, TRUE);
        json_object *obj = kb_client_get(client, &kb_type_pods, "default", "p1", &error);
        if (depth == 100) {
            g_assert_no_error(error);
            g_assert_nonnull(obj);
        } else {
            g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
        }
        json_object_put(obj);
    }
}

static void test_body_limit(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    /* {"x":"aaa..."}: 8 bytes of syntax around the string. */
    g_autofree char *fill = g_strnfill(4096 - 8, 'a');
    g_autofree char *body = g_strdup_printf("{\"x\":\"%s\"}", fill);
    g_assert_cmpuint(strlen(body), ==, 4096);
    kb_test_server_respond(srv, "GET", POD_P1, 200, body);
    kb_client_set_max_body_size(client, 4096);
    json_object *obj = kb_client_get(client, &kb_type_pods, "default", "p1", &error);
    g_assert_no_error(error);
    json_object_put(obj);
    kb_client_set_max_body_size(client, 4095);
    g_assert_null(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_nonnull(strstr(error->message, "4095"));
}

static void test_body_limit_default(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    /* One byte over the 64 MiB default, sent as a stream so the server holds no copy. */
    KbTestResponse *resp = kb_test_response_new(200);
    g_autofree char *mib = g_strnfill(1 << 20, ' ');
    for (guint i = 0; i < 64; i++)
        kb_test_response_add_chunk(resp, 0, mib);
    kb_test_response_add_chunk(resp, 0, "1");
    kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
    g_assert_null(kb_client_list(client, &kb_type_pods, NULL, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
}

static void test_request_timeout(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    config->timeout_ms = 200;
    g_autoptr(KbClient) client = kb_client_new(config, NULL);
    g_autoptr(GError) error = NULL;
    KbTestResponse *resp = kb_test_response_new_body(200, "{}");
    kb_test_response_set_delay(resp, 2000);
    kb_test_server_push(srv, "GET", POD_P1, resp);
    gint64 start = g_get_monotonic_time();
    g_assert_null(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_TIMEOUT);
    g_assert_cmpint(g_get_monotonic_time() - start, <, 1500 * G_TIME_SPAN_MILLISECOND);
}

static void test_connection_refused(void)
{
    KbTestServer *srv = kb_test_server_new(NULL, NULL, NULL);
    g_autofree char *url = g_strdup(kb_test_server_url(srv));
    kb_test_server_free(srv);
    g_autoptr(KbConfig) config = kb_config_new(url);
    g_autoptr(KbClient) client = kb_client_new(config, NULL);
    g_autoptr(GError) error = NULL;
    g_assert_null(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_TRANSPORT);
    g_assert_true(kb_error_is_retryable(error));
}

static void test_no_server(void)
{
    g_autoptr(KbConfig) config = kb_config_new(NULL);
    g_autoptr(GError) error = NULL;
    g_assert_null(kb_client_new(config, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
}

static void test_raw_path_and_query(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    g_autofree char *slash = g_strconcat(kb_test_server_url(srv), "/", NULL);
    g_free(config->server);
    config->server = g_strdup(slash); /* a trailing '/' must not double */
    g_autoptr(KbClient) client = kb_client_new(config, NULL);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "GET", "/version", 200, "{\"gitVersion\":\"v1.32.0\"}");
    KbListOptions lo = {.watch = TRUE,
                        .allow_watch_bookmarks = TRUE,
                        .timeout_seconds = 300,
                        .resource_version = "100",
                        .limit = 10};
    KbRequest req = {.method = "GET", .path = "/version", .list = &lo, .query = "pretty=true"};
    json_object *v = kb_client_call(client, &req, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(jstr(v, "gitVersion"), ==, "v1.32.0");
    json_object_put(v);
    g_assert_cmpstr(kb_test_server_request(srv, 0)->target, ==,
                    "/version?limit=10&resourceVersion=100&watch=true&allowWatchBookmarks=true&"
                    "timeoutSeconds=300&pretty=true");
}

/* ---- credentials and connections ----------------------------------------------------------- */

static void test_token_static(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    config->token = g_strdup("abc.def");
    g_autoptr(KbClient) client = kb_client_new(config, NULL);
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{}");
    json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", NULL));
    g_assert_cmpstr(kb_test_request_header(kb_test_server_request(srv, 0), "Authorization"), ==,
                    "Bearer abc.def");
}

static void test_token_rotated(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autofree char *dir = g_dir_make_tmp("kb-token-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "token", NULL);
    g_assert_true(g_file_set_contents(file, "first-token\n", -1, NULL));
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    config->token = g_strdup("static-token"); /* the file wins */
    config->token_file = g_strdup(file);
    g_autoptr(KbClient) client = kb_client_new(config, NULL);
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{}");
    json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", NULL));
    json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", NULL));
    /* g_file_set_contents() replaces the file by rename, like the kubelet's symlink swap. */
    g_assert_true(g_file_set_contents(file, "second-token", -1, NULL));
    json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", NULL));
    /* A file that disappears keeps the last token. */
    g_assert_cmpint(g_unlink(file), ==, 0);
    g_test_expect_message(NULL, G_LOG_LEVEL_WARNING, "*keeping the previous token*");
    json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", NULL));
    g_test_assert_expected_messages();
    static const char *const want[] = {"Bearer first-token", "Bearer first-token",
                                       "Bearer second-token", "Bearer second-token"};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++)
        g_assert_cmpstr(kb_test_request_header(kb_test_server_request(srv, i), "Authorization"), ==,
                        want[i]);
    g_rmdir(dir);
}

static void test_keepalive(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{}");
    for (guint i = 0; i < 5; i++)
        json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", NULL));
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 5);
    g_assert_cmpuint(kb_test_server_connection_count(srv), ==, 1);
}

/* ---- TLS ----------------------------------------------------------------------------------- */

static KbTestServer *tls_server(gboolean client_ca)
{
    g_autofree char *cert = srcdir_path("tests/data/tls/server.pem");
    g_autofree char *key = srcdir_path("tests/data/tls/server-key.pem");
    g_autofree char *ca = srcdir_path("tests/data/tls/ca.pem");
    KbTestServer *srv = kb_test_server_new(cert, key, client_ca ? ca : NULL);
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{\"kind\":\"Pod\"}");
    return srv;
}

static GBytes *read_bytes(const char *rel)
{
    g_autofree char *path = srcdir_path(rel);
    char *data = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    return g_bytes_new_take(data, len);
}

/* GET pod p1 through @config; returns the error (NULL on success). */
static GError *tls_get(KbConfig *config)
{
    GError *error = NULL;
    g_autoptr(KbClient) client = kb_client_new(config, NULL);
    json_object *pod = kb_client_get(client, &kb_type_pods, "default", "p1", &error);
    if (pod != NULL)
        g_assert_cmpstr(jstr(pod, "kind"), ==, "Pod");
    json_object_put(pod);
    return error;
}

static void test_tls_ca_file_and_data(void)
{
    g_autoptr(KbTestServer) srv = tls_server(FALSE);
    g_assert_true(g_str_has_prefix(kb_test_server_url(srv), "https://127.0.0.1:"));
    g_autoptr(KbConfig) by_file = kb_config_new(kb_test_server_url(srv));
    by_file->ca_file = srcdir_path("tests/data/tls/ca.pem");
    g_autoptr(GError) e1 = tls_get(by_file);
    g_assert_no_error(e1);
    g_autoptr(KbConfig) by_data = kb_config_new(kb_test_server_url(srv));
    by_data->ca_data = read_bytes("tests/data/tls/ca.pem");
    g_autoptr(GError) e2 = tls_get(by_data);
    g_assert_no_error(e2);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 2);
}

static void test_tls_unknown_ca(void)
{
    g_autoptr(KbTestServer) srv = tls_server(FALSE);
    g_autoptr(KbConfig) other = kb_config_new(kb_test_server_url(srv));
    other->ca_data = read_bytes("tests/data/tls/other-ca.pem");
    g_autoptr(GError) e1 = tls_get(other);
    g_assert_error(e1, KB_ERROR, KB_ERROR_TRANSPORT);
    /* No CA at all: the system store does not know the test CA either. */
    g_autoptr(KbConfig) none = kb_config_new(kb_test_server_url(srv));
    g_autoptr(GError) e2 = tls_get(none);
    g_assert_error(e2, KB_ERROR, KB_ERROR_TRANSPORT);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 0);
    /* Only an explicit insecure-skip-tls-verify accepts it. */
    other->insecure_skip_tls_verify = TRUE;
    g_autoptr(GError) e3 = tls_get(other);
    g_assert_no_error(e3);
}

static void test_tls_client_cert(void)
{
    g_autoptr(KbTestServer) srv = tls_server(TRUE);
    g_autoptr(KbConfig) files = kb_config_new(kb_test_server_url(srv));
    files->ca_file = srcdir_path("tests/data/tls/ca.pem");
    files->cert_file = srcdir_path("tests/data/tls/client.pem");
    files->key_file = srcdir_path("tests/data/tls/client-key.pem");
    g_autoptr(GError) e1 = tls_get(files);
    g_assert_no_error(e1);
    g_autoptr(KbConfig) blobs = kb_config_new(kb_test_server_url(srv));
    blobs->ca_data = read_bytes("tests/data/tls/ca.pem");
    blobs->cert_data = read_bytes("tests/data/tls/client.pem");
    blobs->key_data = read_bytes("tests/data/tls/client-key.pem");
    g_autoptr(GError) e2 = tls_get(blobs);
    g_assert_no_error(e2);
    g_autoptr(KbConfig) anonymous = kb_config_new(kb_test_server_url(srv));
    anonymous->ca_file = srcdir_path("tests/data/tls/ca.pem");
    g_autoptr(GError) e3 = tls_get(anonymous);
    g_assert_no_error(e3);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 3);
    g_assert_cmpint(kb_test_server_request(srv, 0)->client_cert, ==, 1);
    g_assert_cmpint(kb_test_server_request(srv, 1)->client_cert, ==, 1);
    g_assert_cmpint(kb_test_server_request(srv, 2)->client_cert, ==, 0);
}

static void test_tls_kubeconfig(void)
{
    g_autoptr(KbTestServer) srv = tls_server(TRUE);
    g_autofree char *dir = g_dir_make_tmp("kb-kubeconfig-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "config", NULL);
    g_autoptr(GBytes) ca = read_bytes("tests/data/tls/ca.pem");
    g_autoptr(GBytes) cert = read_bytes("tests/data/tls/client.pem");
    g_autoptr(GBytes) key = read_bytes("tests/data/tls/client-key.pem");
    g_autofree char *ca64 = g_base64_encode(g_bytes_get_data(ca, NULL), g_bytes_get_size(ca));
    g_autofree char *cert64 = g_base64_encode(g_bytes_get_data(cert, NULL), g_bytes_get_size(cert));
    g_autofree char *key64 = g_base64_encode(g_bytes_get_data(key, NULL), g_bytes_get_size(key));
    g_autofree char *yaml =
            g_strdup_printf("apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                            "clusters:\n- name: c\n  cluster:\n    server: %s\n"
                            "    certificate-authority-data: %s\n"
                            "users:\n- name: u\n  user:\n    client-certificate-data: %s\n"
                            "    client-key-data: %s\n"
                            "contexts:\n- name: test\n  context: {cluster: c, user: u}\n",
                            kb_test_server_url(srv), ca64, cert64, key64);
    g_assert_true(g_file_set_contents(path, yaml, -1, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = kb_config_load_kubeconfig(path, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(GError) e1 = tls_get(config);
    g_assert_no_error(e1);
    g_assert_cmpint(kb_test_server_request(srv, 0)->client_cert, ==, 1);
    g_unlink(path);
    g_rmdir(dir);
}

/* ---- asynchronous requests ----------------------------------------------------------------- */

typedef struct {
    guint done;
    guint expected;
    gboolean all_done;
    int last_status;
    GError *last_error;
    char *last_name;
    GString *order;
    KbClient *client; /* for submissions from the callback */
} AsyncState;

static void async_state_clear(AsyncState *st)
{
    g_clear_error(&st->last_error);
    g_free(st->last_name);
    if (st->order != NULL)
        g_string_free(st->order, TRUE);
}

static void on_response(const KbResponse *resp, gpointer user_data)
{
    AsyncState *st = user_data;
    st->done++;
    st->last_status = resp->http_status;
    g_clear_error(&st->last_error);
    g_free(st->last_name);
    st->last_error = resp->error != NULL ? g_error_copy(resp->error) : NULL;
    st->last_name = g_strdup(jstr(resp->body, "metadata.name"));
    if (st->order != NULL && st->last_name != NULL)
        g_string_append_printf(st->order, "%s,", st->last_name);
    st->all_done = st->done >= st->expected;
}

static void test_async_get(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    AsyncState st = {.expected = 2};
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{\"metadata\":{\"name\":\"p1\"}}");
    KbRequest req = {.method = "GET", .type = &kb_type_pods, .namespace_ = "default", .name = "p1"};
    kb_client_call_async(client, &req, on_response, &st);
    g_assert_cmpuint(kb_client_pending(client), ==, 1);
    st.expected = 1;
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_no_error(st.last_error);
    g_assert_cmpint(st.last_status, ==, 200);
    g_assert_cmpstr(st.last_name, ==, "p1");
    g_assert_cmpuint(kb_client_pending(client), ==, 0);

    /* Errors map the same way as for blocking calls. */
    st.all_done = FALSE;
    st.expected = 2;
    req.name = "missing";
    kb_client_call_async(client, &req, on_response, &st);
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_error(st.last_error, KB_ERROR, KB_ERROR_NOT_FOUND);
    g_assert_cmpint(st.last_status, ==, 404);
    async_state_clear(&st);
}

typedef struct {
    gboolean done;
    char *rv;
    gboolean had_body;
    GError *error;
} VersionState;

static void on_version(const KbResponse *resp, gpointer user_data)
{
    VersionState *st = user_data;
    st->done = TRUE;
    g_free(st->rv);
    st->rv = g_strdup(resp->resource_version);
    st->had_body = resp->body != NULL;
    g_clear_error(&st->error);
    st->error = resp->error != NULL ? g_error_copy(resp->error) : NULL;
}

/* KbRequest.version_only: the answer's metadata.resourceVersion without its body, whatever
 * comes around it; a malformed answer is still refused; errors are parsed as always. */
static void test_async_version_only(void)
{
    static const struct {
        const char *body;
        const char *rv; /* NULL: none, or refused when bad */
        gboolean bad;
    } cases[] = {
            {"{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"annotations\":{"
             "\"resourceVersion\":\"1\"},\"resourceVersion\":\"42\"},\"status\":{\"reservedFor\":"
             "[{\"resource\":\"pods\",\"name\":\"p\"}]}}",
             "42", FALSE},
            {"{\"status\":{\"resourceVersion\":\"7\"},\"metadata\":{\"resourceVersion\":\"8\"}}",
             "8", FALSE},
            {"{\"metadata\":{\"name\":\"c\"}}", NULL, FALSE},
            {"{\"metadata\":{\"resourceVersion\":\"9\"},\"spec\":[1,2,}", NULL, TRUE},
            {"{\"metadata\":{\"resourceVersion\":\"9\"}} trailing", NULL, TRUE},
            {"[\"metadata\"]", NULL, TRUE},
    };
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_resource_claims,
                     .namespace_ = "default",
                     .name = "c",
                     .subresource = "status",
                     .content_type = "application/merge-patch+json",
                     .version_only = TRUE};
    const char *path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c/status";
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        VersionState st = {0};
        kb_test_server_push(srv, "PATCH", path, kb_test_response_new_body(200, cases[i].body));
        kb_client_call_async(client, &req, on_version, &st);
        g_assert_true(run_until(&st.done, 5000));
        g_assert_false(st.had_body);
        g_assert_cmpstr(st.rv, ==, cases[i].rv);
        if (cases[i].bad)
            g_assert_error(st.error, KB_ERROR, KB_ERROR_DECODE);
        else
            g_assert_no_error(st.error);
        g_free(st.rv);
        g_clear_error(&st.error);
    }
    /* the parser's depth limit holds for the values skipped: 100 levels pass, 1000 do not */
    for (guint depth = 100; depth <= 1000; depth += 900) {
        g_autoptr(GString) deep = g_string_new("{\"metadata\":{\"resourceVersion\":\"5\"},\"x\":");
        for (guint i = 0; i < depth; i++)
            g_string_append_c(deep, '[');
        for (guint i = 0; i < depth; i++)
            g_string_append_c(deep, ']');
        g_string_append_c(deep, '}');
        VersionState st = {0};
        kb_test_server_push(srv, "PATCH", path, kb_test_response_new_body(200, deep->str));
        kb_client_call_async(client, &req, on_version, &st);
        g_assert_true(run_until(&st.done, 5000));
        if (depth == 100) {
            g_assert_no_error(st.error);
            g_assert_cmpstr(st.rv, ==, "5");
        } else {
            g_assert_error(st.error, KB_ERROR, KB_ERROR_DECODE);
            g_assert_null(st.rv);
        }
        g_free(st.rv);
        g_clear_error(&st.error);
    }
    /* a refusal still says why */
    VersionState st = {0};
    kb_test_server_push(srv, "PATCH", path,
                        kb_test_response_new_body(
                                409, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":"
                                     "\"the object has been modified\"}"));
    kb_client_call_async(client, &req, on_version, &st);
    g_assert_true(run_until(&st.done, 5000));
    g_assert_error(st.error, KB_ERROR, KB_ERROR_CONFLICT);
    g_assert_nonnull(strstr(st.error->message, "the object has been modified"));
    g_assert_null(st.rv);
    g_clear_error(&st.error);
}

static void test_async_copies_request(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    AsyncState st = {.expected = 1};
    kb_test_server_respond(srv, "POST", PODS, 201, "{\"metadata\":{\"name\":\"p9\"}}");
    char ns[] = "default";
    json_object *body = parse("{\"metadata\":{\"name\":\"p9\"}}");
    KbRequest req = {.method = "POST", .type = &kb_type_pods, .namespace_ = ns, .body = body};
    kb_client_call_async(client, &req, on_response, &st);
    /* Everything the request pointed to may go away at once. */
    json_object_put(body);
    memset(ns, 'x', sizeof ns - 1);
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_no_error(st.last_error);
    const KbTestRequest *r = kb_test_server_request(srv, 0);
    g_assert_cmpstr(r->path, ==, PODS);
    g_assert_cmpstr(r->body, ==, "{\"metadata\":{\"name\":\"p9\"}}");
    async_state_clear(&st);
}

static void test_async_max_in_flight(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    AsyncState st = {.expected = 12, .order = g_string_new(NULL)};
    kb_client_set_max_in_flight(client, 3);
    for (guint i = 0; i < st.expected; i++) {
        g_autofree char *path = g_strdup_printf(PODS "/p%u", i);
        g_autofree char *body = g_strdup_printf("{\"metadata\":{\"name\":\"p%u\"}}", i);
        KbTestResponse *resp = kb_test_response_new_body(200, body);
        kb_test_response_set_delay(resp, 60);
        kb_test_server_push(srv, "GET", path, resp);
    }
    for (guint i = 0; i < st.expected; i++) {
        g_autofree char *name = g_strdup_printf("p%u", i);
        KbRequest req = {
                .method = "GET", .type = &kb_type_pods, .namespace_ = "default", .name = name};
        kb_client_call_async(client, &req, on_response, &st);
    }
    g_assert_cmpuint(kb_client_pending(client), ==, 12);
    g_assert_true(run_until(&st.all_done, 10000));
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 12);
    g_assert_cmpuint(kb_test_server_max_concurrent(srv), ==, 3);
    g_assert_cmpuint(kb_client_pending(client), ==, 0);
    /* Queued requests start in submission order (give or take the 3 on the wire at once). */
    for (guint i = 0; i < 12; i++) {
        const char *path = kb_test_server_request(srv, i)->path;
        int n = atoi(path + strlen(PODS "/p"));
        g_assert_cmpint(ABS(n - (int)i), <, 3);
    }
    async_state_clear(&st);
}

/* An urgent request waiting for room goes ahead of the others waiting, after the urgent ones
 * queued before it; one already on the wire is not disturbed. */
static void test_async_urgent(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    AsyncState st = {.expected = 6, .order = g_string_new(NULL)};
    kb_client_set_max_in_flight(client, 1);
    for (guint i = 0; i < st.expected; i++) {
        g_autofree char *path = g_strdup_printf(PODS "/p%u", i);
        KbTestResponse *resp = kb_test_response_new_body(200, "{}");
        kb_test_response_set_delay(resp, i == 0 ? 200 : 10);
        kb_test_server_push(srv, "GET", path, resp);
    }
    /* p0 (on the wire), p1, p2 queued; then p3 and p4 urgent, p5 not */
    for (guint i = 0; i < st.expected; i++) {
        g_autofree char *name = g_strdup_printf("p%u", i);
        KbRequest req = {.method = "GET",
                         .type = &kb_type_pods,
                         .namespace_ = "default",
                         .name = name,
                         .urgent = i == 3 || i == 4};
        kb_client_call_async(client, &req, on_response, &st);
    }
    g_assert_true(run_until(&st.all_done, 10000));
    static const guint want[] = {0, 3, 4, 1, 2, 5};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *path = g_strdup_printf(PODS "/p%u", want[i]);
        g_assert_cmpstr(kb_test_server_request(srv, i)->path, ==, path);
    }
    async_state_clear(&st);
}

static void chain_response(const KbResponse *resp, gpointer user_data)
{
    AsyncState *st = user_data;
    on_response(resp, user_data);
    if (st->done < st->expected) {
        KbRequest req = {
                .method = "GET", .type = &kb_type_pods, .namespace_ = "default", .name = "p1"};
        kb_client_call_async(st->client, &req, chain_response, st);
    }
}

static void test_async_submit_from_callback(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    AsyncState st = {.expected = 4, .client = client};
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{\"metadata\":{\"name\":\"p1\"}}");
    KbRequest req = {.method = "GET", .type = &kb_type_pods, .namespace_ = "default", .name = "p1"};
    kb_client_call_async(client, &req, chain_response, &st);
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 4);
    /* Sequential requests reuse the kept-alive connection. */
    g_assert_cmpuint(kb_test_server_connection_count(srv), ==, 1);
    async_state_clear(&st);
}

static void test_async_bind_and_blocking_mix(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    AsyncState st = {.expected = 3};
    kb_test_server_respond(srv, "POST", PODS "*", 201, "{\"kind\":\"Status\"}");
    kb_test_server_respond(srv, "GET", POD_P1, 200, "{}");
    for (guint i = 0; i < 3; i++) {
        g_autofree char *pod = g_strdup_printf("p%u", i);
        kb_client_bind_async(client, "default", pod, NULL, "n1", on_response, &st);
    }
    /* A blocking call while asynchronous ones are queued does not disturb them. */
    g_autoptr(GError) error = NULL;
    json_object_put(kb_client_get(client, &kb_type_pods, "default", "p1", &error));
    g_assert_no_error(error);
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_no_error(st.last_error);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 4);
    const KbTestRequest *r = kb_test_server_last_request(srv, "POST", PODS "/p2/binding");
    g_assert_nonnull(r);
    json_object *body = kb_test_request_json(r);
    g_assert_cmpstr(jstr(body, "target.name"), ==, "n1");
    json_object_put(body);
    async_state_clear(&st);
}

/* The protobuf Binding byte for byte: "k8s\0", runtime.Unknown {1: TypeMeta {1: "v1",
 * 2: "Binding"}, 2: Binding {1: ObjectMeta {1: name, 3: namespace, 5: uid}, 2: ObjectReference
 * {1: kind, 3: name, 5: apiVersion}}} (k8s.io/api core/v1 and apimachinery's generated.proto;
 * a real kube-apiserver 1.20 took these bodies in test-cluster-rbac's binding step). */
static void test_bind_protobuf_bytes(void)
{
    /* clang-format off: one line per message */
    static const guchar expected[] = {
            'k', '8', 's', 0,
            0x0a, 13, 0x0a, 2, 'v', '1', 0x12, 7, 'B', 'i', 'n', 'd', 'i', 'n', 'g',
            0x12, 42,
            0x0a, 20, 0x0a, 2, 'p', '1', 0x1a, 7, 'd', 'e', 'f', 'a', 'u', 'l', 't',
                      0x2a, 5, 'u', 'i', 'd', '-', '1',
            0x12, 18, 0x0a, 4, 'N', 'o', 'd', 'e', 0x1a, 6, 'n', 'o', 'd', 'e', '-', '7',
                      0x2a, 2, 'v', '1'};
    /* clang-format on */
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_respond(srv, "POST", POD_P1 "/binding", 201, "{\"kind\":\"Status\"}");
    g_assert_true(kb_client_bind(client, "default", "p1", "uid-1", "node-7", &error));
    g_assert_no_error(error);
    const KbTestRequest *r = kb_test_server_request(srv, 0);
    g_assert_cmpmem(r->body, r->body_len, expected, sizeof expected);

    /* Annotations are map entries (ObjectMeta field 12 {1: key, 2: value}), read back whole. */
    const char *annotations[] = {"kube-batchd.io/gpu-ids", "0,1", "a", "", NULL};
    AsyncState st = {.expected = 1};
    kb_client_bind_async_full(client, "default", "p1", NULL, "node-7", annotations, on_response,
                              &st);
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_no_error(st.last_error);
    json_object *body = kb_test_request_json(kb_test_server_request(srv, 1));
    g_assert_cmpstr(jstr(body, "metadata.name"), ==, "p1");
    g_assert_null(jstr(body, "metadata.uid"));
    json_object *meta = NULL, *ann = NULL;
    g_assert_true(json_object_object_get_ex(body, "metadata", &meta));
    g_assert_true(json_object_object_get_ex(meta, "annotations", &ann));
    g_assert_cmpint(json_object_object_length(ann), ==, 2);
    json_object *ids = NULL;
    g_assert_true(json_object_object_get_ex(ann, "kube-batchd.io/gpu-ids", &ids));
    g_assert_cmpstr(json_object_get_string(ids), ==, "0,1");
    g_assert_cmpstr(jstr(ann, "a"), ==, "");
    json_object_put(body);
    async_state_clear(&st);
}

/* A server that does not read protobuf answers 415: the same Binding goes again as JSON at once
 * (no error for the caller, no backoff), and every later one goes as JSON from the start; with
 * KbConfig.json_only none goes as protobuf at all. */
static void test_bind_protobuf_refused(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    g_autoptr(GError) error = NULL;
    kb_test_server_push(srv, "POST", PODS "*",
                        kb_test_response_new_status(415, "UnsupportedMediaType",
                                                    "the body of the request was in an unknown "
                                                    "format"));
    kb_test_server_respond(srv, "POST", PODS "*", 201, "{\"kind\":\"Status\"}");
    AsyncState st = {.expected = 1};
    kb_client_bind_async(client, "default", "p1", NULL, "n1", on_response, &st);
    g_assert_true(run_until(&st.all_done, 5000));
    g_assert_no_error(st.last_error);
    g_assert_cmpint(st.last_status, ==, 201);
    g_assert_true(kb_client_bind(client, "default", "p2", NULL, "n2", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 3);
    static const char *const types[] = {"application/vnd.kubernetes.protobuf", "application/json",
                                        "application/json"};
    static const char *const pods[] = {"p1", "p1", "p2"};
    for (guint i = 0; i < 3; i++) {
        const KbTestRequest *r = kb_test_server_request(srv, i);
        g_assert_cmpstr(kb_test_request_header(r, "Content-Type"), ==, types[i]);
        json_object *body = kb_test_request_json(r);
        g_assert_cmpstr(jstr(body, "metadata.name"), ==, pods[i]);
        json_object_put(body);
    }
    async_state_clear(&st);

    /* The same from a blocking call first. */
    g_autoptr(KbTestServer) srv2 = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client2 = client_for(srv2);
    kb_test_server_push(srv2, "POST", PODS "*",
                        kb_test_response_new_status(415, "UnsupportedMediaType", "no"));
    kb_test_server_respond(srv2, "POST", PODS "*", 201, "{\"kind\":\"Status\"}");
    g_assert_true(kb_client_bind(client2, "default", "p1", NULL, "n1", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kb_test_server_request_count(srv2), ==, 2);
    g_assert_cmpstr(kb_test_request_header(kb_test_server_request(srv2, 1), "Content-Type"), ==,
                    "application/json");

    /* json_only: JSON from the first. */
    g_autoptr(KbTestServer) srv3 = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv3));
    config->json_only = TRUE;
    g_autoptr(KbClient) client3 = kb_client_new(config, NULL);
    kb_test_server_respond(srv3, "POST", PODS "*", 201, "{\"kind\":\"Status\"}");
    g_assert_true(kb_client_bind(client3, "default", "p1", NULL, "n1", &error));
    g_assert_cmpuint(kb_test_server_request_count(srv3), ==, 1);
    g_assert_cmpstr(kb_test_request_header(kb_test_server_request(srv3, 0), "Content-Type"), ==,
                    "application/json");
}

static void test_async_free_with_pending(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    KbClient *client = client_for(srv);
    AsyncState st = {.expected = 1};
    KbTestResponse *resp = kb_test_response_new_body(200, "{}");
    kb_test_response_set_delay(resp, 5000);
    kb_test_server_push(srv, "GET", POD_P1, resp);
    kb_client_set_max_in_flight(client, 1);
    KbRequest req = {.method = "GET", .type = &kb_type_pods, .namespace_ = "default", .name = "p1"};
    kb_client_call_async(client, &req, on_response, &st);
    kb_client_call_async(client, &req, on_response, &st);
    g_assert_true(kb_test_server_wait_requests(srv, 0, 0));
    gboolean never = FALSE;
    run_until(&never, 100);
    kb_client_free(client);
    run_until(&never, 50);
    g_assert_cmpuint(st.done, ==, 0);
}

/* ---- streams ------------------------------------------------------------------------------- */

typedef struct {
    GString *data;
    guint chunks;
    gboolean done;
    GError *error;
    int status;
    guint cancel_after; /* cancel from on_data after this many chunks (0: never) */
    gboolean return_false;
    KbStream *stream;
    KbStream *other; /* cancelled from on_data, when set */
} StreamState;

static void stream_state_clear(StreamState *st)
{
    g_string_free(st->data, TRUE);
    g_clear_error(&st->error);
}

static gboolean on_stream_data(const char *data, gsize len, gpointer user_data)
{
    StreamState *st = user_data;
    g_string_append_len(st->data, data, (gssize)len);
    st->chunks++;
    if (st->other != NULL) {
        kb_stream_cancel(g_steal_pointer(&st->other));
    }
    if (st->cancel_after > 0 && st->chunks >= st->cancel_after) {
        st->done = TRUE; /* for run_until: no on_done comes */
        if (st->return_false)
            return FALSE;
        kb_stream_cancel(g_steal_pointer(&st->stream));
        return FALSE;
    }
    return TRUE;
}

static void on_stream_done(const KbResponse *resp, gpointer user_data)
{
    StreamState *st = user_data;
    g_assert_false(st->done); /* exactly once */
    st->done = TRUE;
    st->status = resp->http_status;
    st->error = resp->error != NULL ? g_error_copy(resp->error) : NULL;
    st->stream = NULL;
}

/* A watch of pods from resourceVersion 10, asking the server to end it after @timeout_s (0: no
 * timeoutSeconds). */
static KbStream *watch_pods_for(KbClient *client, StreamState *st, guint timeout_s)
{
    KbListOptions lo = {.watch = TRUE,
                        .resource_version = "10",
                        .allow_watch_bookmarks = TRUE,
                        .timeout_seconds = timeout_s};
    KbRequest req = {.method = "GET", .type = &kb_type_pods, .list = &lo, .stream = TRUE};
    st->data = g_string_new(NULL);
    st->stream = kb_client_stream(client, &req, on_stream_data, on_stream_done, st);
    return st->stream;
}

static KbStream *watch_pods(KbClient *client, StreamState *st)
{
    return watch_pods_for(client, st, 0);
}

#define EV1 "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}}\n"
#define EV2 "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}}\n"
#define EV3 "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}}\n"

static void test_stream_split(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    static const char all[] = EV1 EV2 EV3;
    /* Split at arbitrary points, including inside a UTF-8-free token and at the newline. */
    static const guint cuts[] = {1, 17, sizeof EV1 - 1, sizeof EV1, 100, 140, sizeof all - 2};
    KbTestResponse *resp = kb_test_response_new(200);
    guint prev = 0;
    for (guint i = 0; i <= G_N_ELEMENTS(cuts); i++) {
        guint end = i < G_N_ELEMENTS(cuts) ? cuts[i] : sizeof all - 1;
        g_autofree char *piece = g_strndup(all + prev, end - prev);
        kb_test_response_add_chunk(resp, i % 2 == 0 ? 5 : 0, piece);
        prev = end;
    }
    kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
    StreamState st = {0};
    watch_pods(client, &st);
    g_assert_true(run_until(&st.done, 5000));
    g_assert_no_error(st.error);
    g_assert_cmpint(st.status, ==, 200);
    g_assert_cmpstr(st.data->str, ==, all);
    g_assert_cmpuint(st.chunks, >, 1);
    g_autofree char *watch = kb_test_request_query_param(kb_test_server_request(srv, 0), "watch");
    g_assert_cmpstr(watch, ==, "true");
    stream_state_clear(&st);
}

static void test_stream_cut(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    KbTestResponse *resp = kb_test_response_new(200);
    kb_test_response_add_chunk(resp, 0, EV1);
    kb_test_response_add_chunk(resp, 20, EV2);
    kb_test_response_cut_after(resp, sizeof EV1 - 1 + 20); /* in the middle of EV2 */
    kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
    StreamState st = {0};
    watch_pods(client, &st);
    g_assert_true(run_until(&st.done, 5000));
    g_assert_error(st.error, KB_ERROR, KB_ERROR_TRANSPORT);
    g_assert_cmpuint(st.data->len, ==, sizeof EV1 - 1 + 20);
    g_assert_true(g_str_has_prefix(st.data->str, EV1));
    stream_state_clear(&st);
}

/* The server sends one event, then nothing while keeping the connection: with a 1 s idle limit
 * and a watch of @timeout_s, the stream fails after @silent_s of silence, not sooner. */
static void check_stall(guint timeout_s, guint silent_s)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    KbTestResponse *resp = kb_test_response_new(200);
    kb_test_response_add_chunk(resp, 0, EV1);
    kb_test_response_stall(resp);
    kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
    kb_client_set_stream_idle_timeout(client, 1);
    StreamState st = {0};
    gint64 start = g_get_monotonic_time();
    watch_pods_for(client, &st, timeout_s);
    g_assert_true(run_until(&st.done, (silent_s + 7) * 1000));
    g_assert_error(st.error, KB_ERROR, KB_ERROR_TIMEOUT);
    g_autofree char *said = g_strdup_printf("nothing received for %u s", silent_s);
    g_assert_nonnull(strstr(st.error->message, said));
    g_assert_cmpstr(st.data->str, ==, EV1);
    g_assert_cmpint(g_get_monotonic_time() - start, >=,
                    (silent_s * 1000 - 100) * G_TIME_SPAN_MILLISECOND);
    stream_state_clear(&st);
}

static void test_stream_stall_timeout(void)
{
    check_stall(0, 1);
}

/* A real kube-apiserver sends nothing at all on a quiet resource, bookmarks included, until the
 * watch's timeoutSeconds: a watch asking for 2 s is not cut at the 1 s idle limit, only once it
 * has been silent for 2 + 1 s. */
static void test_stream_watch_quiet_until_timeout(void)
{
    check_stall(2, 3);
}

static void test_stream_http_error(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    kb_test_server_push(
            srv, "GET", "/api/v1/pods",
            kb_test_response_new_status(410, "Expired", "too old resource version: 10 (500)"));
    StreamState st = {0};
    watch_pods(client, &st);
    g_assert_true(run_until(&st.done, 5000));
    g_assert_error(st.error, KB_ERROR, KB_ERROR_GONE);
    g_assert_nonnull(strstr(st.error->message, "too old resource version"));
    g_assert_cmpint(st.status, ==, 410);
    g_assert_cmpuint(st.chunks, ==, 0); /* the Status body is not watch data */
    stream_state_clear(&st);
}

static void test_stream_cancel_in_data(void)
{
    for (guint mode = 0; mode < 2; mode++) {
        g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
        g_autoptr(KbClient) client = client_for(srv);
        KbTestResponse *resp = kb_test_response_new(200);
        kb_test_response_add_chunk(resp, 0, EV1);
        kb_test_response_add_chunk(resp, 30, EV2);
        kb_test_response_stall(resp);
        kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
        StreamState st = {.cancel_after = 1, .return_false = mode == 1};
        watch_pods(client, &st);
        g_assert_true(run_until(&st.done, 5000));
        g_assert_cmpuint(st.chunks, ==, 1);
        /* The connection closes; no on_done ever runs (it would assert). */
        gboolean never = FALSE;
        run_until(&never, 200);
        g_assert_cmpuint(kb_test_server_concurrent(srv), ==, 0);
        g_assert_cmpuint(kb_client_pending(client), ==, 0);
        stream_state_clear(&st);
    }
}

static void test_stream_cancel_other_and_queued(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    KbTestResponse *resp = kb_test_response_new(200);
    kb_test_response_add_chunk(resp, 50, EV1);
    kb_test_response_stall(resp);
    kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
    kb_client_set_max_in_flight(client, 2);
    StreamState a = {0}, b = {0}, c = {0};
    watch_pods(client, &a);
    watch_pods(client, &b);
    watch_pods(client, &c); /* queued behind the other two */
    g_assert_cmpuint(kb_client_pending(client), ==, 3);
    kb_stream_cancel(c.stream);
    g_assert_cmpuint(kb_client_pending(client), ==, 2);
    /* a's first data cancels b (which may be in the same libcurl call). */
    a.other = b.stream;
    b.stream = NULL;
    gboolean got = FALSE;
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (!got && g_get_monotonic_time() < deadline) {
        run_until(&got, 20);
        got = a.chunks > 0;
    }
    g_assert_true(got);
    gboolean never = FALSE;
    run_until(&never, 100);
    g_assert_cmpuint(kb_client_pending(client), ==, 1);
    g_assert_false(b.done);
    g_assert_false(c.done);
    g_assert_cmpuint(c.chunks, ==, 0);
    kb_stream_cancel(a.stream);
    g_assert_cmpuint(kb_client_pending(client), ==, 0);
    stream_state_clear(&a);
    stream_state_clear(&b);
    stream_state_clear(&c);
}

static void test_stream_live_append(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbClient) client = client_for(srv);
    KbTestResponse *resp = kb_test_response_new(200);
    kb_test_response_add_chunk(resp, 0, EV1);
    kb_test_response_stall(resp);
    kb_test_server_push(srv, "GET", "/api/v1/pods", kb_test_response_ref(resp));
    StreamState st = {0};
    watch_pods(client, &st);
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    gboolean got = FALSE;
    while (!got && g_get_monotonic_time() < deadline) {
        run_until(&got, 20);
        got = st.data->len == sizeof EV1 - 1;
    }
    g_assert_true(got);
    kb_test_response_append_chunk(resp, EV2);
    got = FALSE;
    deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (!got && g_get_monotonic_time() < deadline) {
        run_until(&got, 20);
        got = st.data->len == sizeof EV1 - 1 + sizeof EV2 - 1;
    }
    g_assert_cmpstr(st.data->str, ==, EV1 EV2);
    g_assert_false(st.done);
    kb_stream_cancel(st.stream);
    kb_test_response_unref(resp);
    stream_state_clear(&st);
}

static void test_stream_free_client_open(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    KbClient *client = client_for(srv);
    KbTestResponse *resp = kb_test_response_new(200);
    kb_test_response_add_chunk(resp, 0, EV1);
    kb_test_response_stall(resp);
    kb_test_server_push(srv, "GET", "/api/v1/pods", resp);
    StreamState st = {0};
    watch_pods(client, &st);
    gboolean never = FALSE;
    run_until(&never, 100);
    g_assert_cmpuint(st.chunks, >=, 1);
    kb_client_free(client); /* the open stream goes with it, without on_done */
    run_until(&never, 20);
    g_assert_false(st.done);
    stream_state_clear(&st);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_add_func("/kube/client/path/table", test_path);
    g_test_add_func("/kube/client/get/basic", test_get);
    g_test_add_func("/kube/client/get/compression-only-when-asked", test_compression);
    g_test_add_func("/kube/client/list/selectors", test_list_selectors);
    g_test_add_func("/kube/client/list/paging", test_list_paging);
    g_test_add_func("/kube/client/create/basic", test_create);
    g_test_add_func("/kube/client/update/stale-resource-version", test_update_conflict);
    g_test_add_func("/kube/client/update/status-subresource", test_update_status);
    g_test_add_func("/kube/client/patch/content-types", test_patch_content_types);
    g_test_add_func("/kube/client/delete/options-body", test_delete_options);
    g_test_add_func("/kube/client/delete/precondition-failed", test_delete_precondition_failed);
    g_test_add_func("/kube/client/bind/body-and-conflict", test_bind);
    g_test_add_func("/kube/client/bind/protobuf-bytes", test_bind_protobuf_bytes);
    g_test_add_func("/kube/client/bind/protobuf-refused-415", test_bind_protobuf_refused);
    g_test_add_func("/kube/client/evict/v1", test_evict_v1);
    g_test_add_func("/kube/client/evict/v1beta1-fallback", test_evict_fallback);
    g_test_add_func("/kube/client/evict/errors-no-fallback", test_evict_errors);
    g_test_add_func("/kube/client/errors/status-mapping", test_error_mapping);
    g_test_add_func("/kube/client/errors/not-a-status", test_error_not_status);
    g_test_add_func("/kube/client/errors/429-retry-after", test_429_retry_after);
    g_test_add_func("/kube/client/errors/500-then-success", test_500_then_success);
    g_test_add_func("/kube/client/decode/malformed-json", test_malformed_json);
    g_test_add_func("/kube/client/decode/depth-limit", test_json_depth_limit);
    g_test_add_func("/kube/client/limit/body-size", test_body_limit);
    g_test_add_func("/kube/client/limit/body-size-default", test_body_limit_default);
    g_test_add_func("/kube/client/timeout/request", test_request_timeout);
    g_test_add_func("/kube/client/transport/refused", test_connection_refused);
    g_test_add_func("/kube/client/config/no-server", test_no_server);
    g_test_add_func("/kube/client/request/raw-path-and-query", test_raw_path_and_query);
    g_test_add_func("/kube/client/auth/token", test_token_static);
    g_test_add_func("/kube/client/auth/token-file-rotated", test_token_rotated);
    g_test_add_func("/kube/client/connection/keep-alive", test_keepalive);
    g_test_add_func("/kube/client/tls/ca-file-and-data", test_tls_ca_file_and_data);
    g_test_add_func("/kube/client/tls/unknown-ca-refused", test_tls_unknown_ca);
    g_test_add_func("/kube/client/tls/client-certificate", test_tls_client_cert);
    g_test_add_func("/kube/client/tls/kubeconfig-data", test_tls_kubeconfig);
    g_test_add_func("/kube/client/async/get", test_async_get);
    g_test_add_func("/kube/client/async/copies-request", test_async_copies_request);
    g_test_add_func("/kube/client/async/version-only", test_async_version_only);
    g_test_add_func("/kube/client/async/max-in-flight", test_async_max_in_flight);
    g_test_add_func("/kube/client/async/urgent-first", test_async_urgent);
    g_test_add_func("/kube/client/async/submit-from-callback", test_async_submit_from_callback);
    g_test_add_func("/kube/client/async/bind-and-blocking-mix", test_async_bind_and_blocking_mix);
    g_test_add_func("/kube/client/async/free-with-pending", test_async_free_with_pending);
    g_test_add_func("/kube/client/stream/split-anywhere", test_stream_split);
    g_test_add_func("/kube/client/stream/cut-mid-event", test_stream_cut);
    g_test_add_func("/kube/client/stream/stall-idle-timeout", test_stream_stall_timeout);
    g_test_add_func("/kube/client/stream/watch-quiet-until-timeout",
                    test_stream_watch_quiet_until_timeout);
    g_test_add_func("/kube/client/stream/http-error", test_stream_http_error);
    g_test_add_func("/kube/client/stream/cancel-in-data", test_stream_cancel_in_data);
    g_test_add_func("/kube/client/stream/cancel-other-and-queued",
                    test_stream_cancel_other_and_queued);
    g_test_add_func("/kube/client/stream/live-append", test_stream_live_append);
    g_test_add_func("/kube/client/stream/free-client-open", test_stream_free_client_open);
    return g_test_run();
}
