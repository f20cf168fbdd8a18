/*
 * kb-apiserver's authentication and authorization: bin/kb-apiserver over HTTPS (test CA), with
 * a static token file and --authorization-mode RBAC. The recorded answers of a real
 * kube-apiserver 1.19 for the RBAC and authentication cases (tests/data/kube-apiserver-1.19,
 * cases 73-82, after the earlier cases are replayed as the admin to build the same objects) must
 * come back alike: status, reason, message byte for byte, details. Then cases of our own:
 * namespaces, resourceNames, wildcards, missing roles, anonymous and unknown tokens, policy
 * changes taking effect, access reviews, kubectl as a ServiceAccount; and the request-info
 * parser and token file reader in process.
 */
#include <glib.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testbed/apiserver/kas-auth.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-cluster.h"

static KbTestCluster *cluster;

static const char *srcdir(void)
{
    return g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
}

/* ---- helpers ------------------------------------------------------------------------------------
 */

/* @method @path as @who; returns the parsed answer (NULL when not JSON), *@status its code. */
static json_object *call(const char *who, const char *method, const char *path,
                         const char *content_type, const char *body, guint *status)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *out =
            kb_test_cluster_request(cluster, who, method, path, content_type, body, status, &error);
    g_assert_no_error(error);
    return json_tokener_parse(out);
}

static guint call_status(const char *who, const char *method, const char *path, const char *body)
{
    guint status = 0;
    json_object *j = call(who, method, path, NULL, body, &status);
    json_object_put(j);
    return status;
}

static const char *str(json_object *j, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_string)
                   ? json_object_get_string(v)
                   : NULL;
}

static json_object *field(json_object *j, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(j, key, &v) ? v : NULL;
}

/* A 403 for @who with exactly @message. */
static void assert_forbidden(const char *who, const char *method, const char *path,
                             const char *body, const char *message)
{
    guint status = 0;
    json_object *j = call(who, method, path, NULL, body, &status);
    g_assert_cmpuint(status, ==, 403);
    g_assert_cmpstr(str(j, "reason"), ==, "Forbidden");
    g_assert_cmpstr(str(j, "message"), ==, message);
    json_object_put(j);
}

static void admin_apply(const char *yaml)
{
    const char *args[] = {"apply", "-f", "-", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int st = -1;
    g_autoptr(GError) error = NULL;
    g_assert_true(
            kb_test_cluster_kubectl(cluster, KB_TEST_ADMIN, args, yaml, &out, &err, &st, &error));
    g_assert_no_error(error);
    if (st != 0)
        g_test_message("kubectl apply: %s", err);
    g_assert_cmpint(st, ==, 0);
}

/* ---- the recorded cases -------------------------------------------------------------------------
 */

static json_object *load_cases(void)
{
    g_autofree char *path =
            g_build_filename(srcdir(), "tests/data/kube-apiserver-1.19/cases.json", NULL);
    json_object *all = json_object_from_file(path);
    g_assert_nonnull(all);
    return all;
}

static const char *who_of(const char *user)
{
    if (strcmp(user, "admin") == 0)
        return KB_TEST_ADMIN;
    if (strcmp(user, "kube-batchd") == 0)
        return KB_TEST_SCHEDULER;
    return "not-a-token-of-this-server";
}

/* Send case @c; returns the answer, *@status its code. */
static json_object *send_case(json_object *c, guint *status)
{
    json_object *req = field(c, "request");
    json_object *body = field(req, "body");
    const char *text = str(req, "body_text");
    g_autofree char *b =
            body != NULL ? g_strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN))
                         : g_strdup(text);
    return call(who_of(str(req, "user")), str(req, "method"), str(req, "path"),
                str(req, "content_type"), b, status);
}

/* The fields of the answer a client relies on, by kind of answer. */
static void compare_case(json_object *c, json_object *got, guint status)
{
    const char *name = str(c, "name");
    json_object *want = field(field(c, "response"), "body");
    guint want_status = (guint)json_object_get_int(field(field(c, "response"), "status"));
    g_test_message("case %s: %u (recorded %u)", name, status, want_status);
    g_assert_cmpuint(status, ==, want_status);
    const char *kind = str(want, "kind");
    g_assert_cmpstr(str(got, "kind"), ==, kind);
    if (g_strcmp0(kind, "Status") == 0) {
        for (const char *const *k = (const char *const[]){"status", "message", "reason", NULL};
             *k != NULL; k++)
            g_assert_cmpstr(str(got, *k), ==, str(want, *k));
        g_assert_cmpint(json_object_get_int(field(got, "code")), ==,
                        json_object_get_int(field(want, "code")));
        g_assert_true(json_object_equal(field(got, "details"), field(want, "details")));
        return;
    }
    json_object *gm = field(got, "metadata"), *wm = field(want, "metadata");
    g_assert_cmpstr(str(gm, "name"), ==, str(wm, "name"));
    g_assert_cmpstr(str(gm, "namespace"), ==, str(wm, "namespace"));
    for (const char *const *k =
                 (const char *const[]){"rules", "roleRef", "subjects", "status", NULL};
         *k != NULL; k++) {
        if (g_strcmp0(kind, "Pod") == 0 && strcmp(*k, "status") == 0)
            continue; /* the pod's status is the conformance replay's business */
        if (!json_object_equal(field(got, *k), field(want, *k))) {
            g_test_message("%s: %s is %s, recorded %s", name, *k,
                           json_object_to_json_string(field(got, *k)),
                           json_object_to_json_string(field(want, *k)));
            g_test_fail();
        }
    }
}

static gboolean is_watch(json_object *c)
{
    return strstr(str(field(c, "request"), "path"), "watch=") != NULL;
}

static void test_recorded(void)
{
    json_object *all = load_cases();
    json_object *cases = field(all, "cases");
    guint checked = 0;
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        const char *name = str(c, "name");
        gboolean ours = g_str_has_prefix(name, "rbac-") || g_str_has_prefix(name, "authn-") ||
                        strcmp(name, "selfsubjectaccessreview") == 0 ||
                        strcmp(name, "clusterrole-create") == 0 ||
                        strcmp(name, "clusterrolebinding-create") == 0;
        /* The other cases build the objects ours use; their answers are checked by the
         * conformance replay. Watches without a timeout would run for half an hour. */
        if (!ours && is_watch(c))
            continue;
        guint status = 0;
        json_object *got = send_case(c, &status);
        if (ours) {
            compare_case(c, got, status);
            checked++;
        }
        json_object_put(got);
    }
    g_assert_cmpuint(checked, ==, 10);
    json_object_put(all);
}

/* ---- cases of our own ---------------------------------------------------------------------------
 */

static const char own_policy[] =
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm1, namespace: team-a}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm2, namespace: team-a}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n"
        "metadata: {name: pod-reader, namespace: team-a}\n"
        "rules:\n- {apiGroups: [\"\"], resources: [pods], verbs: [get, list]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
        "metadata: {name: nobody-reads-pods, namespace: team-a}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: nobody}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
        "metadata: {name: cm1-reader}\n"
        "rules:\n- {apiGroups: [\"\"], resources: [configmaps], resourceNames: [cm1], "
        "verbs: [get, list, watch]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
        "metadata: {name: nobody-reads-cm1, namespace: team-a}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cm1-reader}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: nobody}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
        "metadata: {name: status-and-nodes}\n"
        "rules:\n- {apiGroups: [\"*\"], resources: [\"*/status\"], verbs: [get]}\n"
        "- {apiGroups: [\"\"], resources: [nodes], verbs: [\"*\"]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
        "metadata: {name: nobody-status-and-nodes}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "
        "status-and-nodes}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: nobody}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
        "metadata: {name: dangling}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: no-such-role}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: nobody}\n";

#define NOBODY "User \"nobody\" cannot "

static void test_namespaces(void)
{
    admin_apply(own_policy);
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-a/pods", NULL), ==,
                     200);
    /* A Role in team-a grants nothing in team-b nor across namespaces; the binding naming a
     * missing role adds the real authorizer's reason. */
    assert_forbidden(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-b/pods", NULL,
                     "pods is forbidden: " NOBODY "list resource \"pods\" in API group \"\" in "
                     "the namespace \"team-b\": RBAC: clusterrole.rbac.authorization.k8s.io "
                     "\"no-such-role\" not found");
    assert_forbidden(KB_TEST_NOBODY, "GET", "/api/v1/pods", NULL,
                     "pods is forbidden: " NOBODY "list resource \"pods\" in API group \"\" at "
                     "the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "
                     "\"no-such-role\" not found");
    /* get and list only: a watch is another verb. */
    assert_forbidden(KB_TEST_NOBODY, "GET",
                     "/api/v1/namespaces/team-a/pods?watch=1&timeoutSeconds=1", NULL,
                     "pods is forbidden: " NOBODY "watch resource \"pods\" in API group \"\" in "
                     "the namespace \"team-a\": RBAC: clusterrole.rbac.authorization.k8s.io "
                     "\"no-such-role\" not found");
}

static void test_resource_names(void)
{
    g_assert_cmpuint(
            call_status(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-a/configmaps/cm1", NULL),
            ==, 200);
    assert_forbidden(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-a/configmaps/cm2", NULL,
                     "configmaps \"cm2\" is forbidden: " NOBODY "get resource \"configmaps\" in "
                     "API group \"\" in the namespace \"team-a\": RBAC: "
                     "clusterrole.rbac.authorization.k8s.io \"no-such-role\" not found");
    /* A list names no object, unless a field selector pins metadata.name. */
    g_assert_cmpuint(
            call_status(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-a/configmaps", NULL), ==,
            403);
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET",
                                 "/api/v1/namespaces/team-a/configmaps?fieldSelector=metadata."
                                 "name%3Dcm1",
                                 NULL),
                     ==, 200);
}

static void test_wildcards(void)
{
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", "/api/v1/nodes", NULL), ==, 200);
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-a", NULL), ==,
                     403);
    /* "*\/status" in any group: a namespace's status, but not the namespace. */
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", "/api/v1/namespaces/team-a/status", NULL),
                     ==, 200);
    assert_forbidden(KB_TEST_NOBODY, "DELETE", "/api/v1/namespaces/team-a/configmaps/cm1", NULL,
                     "configmaps \"cm1\" is forbidden: " NOBODY "delete resource \"configmaps\" "
                     "in API group \"\" in the namespace \"team-a\": RBAC: "
                     "clusterrole.rbac.authorization.k8s.io \"no-such-role\" not found");
}

static void test_changes_take_effect(void)
{
    const char *path = "/api/v1/namespaces/team-a/pods";
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", path, NULL), ==, 200);
    g_assert_cmpuint(call_status(KB_TEST_ADMIN, "DELETE",
                                 "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/"
                                 "rolebindings/nobody-reads-pods",
                                 NULL),
                     ==, 200);
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", path, NULL), ==, 403);
    admin_apply(own_policy);
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", path, NULL), ==, 200);
}

static void test_authentication(void)
{
    guint status = 0;
    json_object *j = call("no-such-token", "GET", "/api/v1/pods", NULL, NULL, &status);
    g_assert_cmpuint(status, ==, 401);
    g_assert_cmpstr(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                    "\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\","
                    "\"code\":401}");
    json_object_put(j);
    /* No credentials: system:anonymous, who may read the version and health, not discovery. */
    g_assert_cmpuint(call_status(NULL, "GET", "/version", NULL), ==, 200);
    g_assert_cmpuint(call_status(NULL, "GET", "/healthz", NULL), ==, 200);
    assert_forbidden(NULL, "GET", "/api", NULL,
                     "forbidden: User \"system:anonymous\" cannot get path \"/api\"");
    assert_forbidden(NULL, "GET", "/api/v1/namespaces/default/pods", NULL,
                     "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" "
                     "in API group \"\" in the namespace \"default\"");
    /* Any authenticated user has discovery. */
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", "/api", NULL), ==, 200);
    g_assert_cmpuint(call_status(KB_TEST_NOBODY, "GET", "/apis", NULL), ==, 200);
    g_assert_cmpuint(call_status(KB_TEST_SCHEDULER, "GET", "/api/v1", NULL), ==, 200);
    /* The admin endpoints count what was refused. */
    g_autoptr(GError) error = NULL;
    g_autofree char *stats = kb_test_cluster_request(cluster, NULL, "GET", "/admin/stats", NULL,
                                                     NULL, &status, &error);
    g_assert_no_error(error);
    json_object *s = json_tokener_parse(stats);
    g_assert_cmpint(json_object_get_int(field(s, "unauthorized")), >=, 2);
    g_assert_cmpint(json_object_get_int(field(s, "forbidden")), >=, 10);
    json_object_put(s);
}

static void test_reviews(void)
{
    guint status = 0;
    const char *ssar = "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":"
                       "\"SelfSubjectAccessReview\",\"spec\":{\"resourceAttributes\":{"
                       "\"namespace\":\"x\",\"verb\":\"create\",\"resource\":\"pods\","
                       "\"subresource\":\"binding\"}}}";
    json_object *j =
            call(KB_TEST_SCHEDULER, "POST",
                 "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", NULL, ssar, &status);
    g_assert_cmpuint(status, ==, 201);
    json_object *st = field(j, "status");
    g_assert_true(json_object_get_boolean(field(st, "allowed")));
    g_assert_cmpstr(str(st, "reason"), ==,
                    "RBAC: allowed by ClusterRoleBinding \"conf-binder\" of ClusterRole "
                    "\"conf-binder\" to ServiceAccount \"kube-batchd/kube-batchd\"");
    json_object_put(j);
    /* SubjectAccessReview: the admin asks about another user. */
    const char *sar = "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":"
                      "\"SubjectAccessReview\",\"spec\":{\"user\":\"nobody\",\"groups\":["
                      "\"system:authenticated\"],\"nonResourceAttributes\":{\"path\":"
                      "\"/apis/x\",\"verb\":\"get\"}}}";
    j = call(KB_TEST_ADMIN, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", NULL, sar,
             &status);
    g_assert_cmpuint(status, ==, 201);
    g_assert_cmpstr(str(field(j, "status"), "reason"), ==,
                    "RBAC: allowed by ClusterRoleBinding \"system:discovery\" of ClusterRole "
                    "\"system:discovery\" to Group \"system:authenticated\"");
    json_object_put(j);
    /* A ServiceAccount may not ask about others; neither attributes is invalid. */
    g_assert_cmpuint(call_status(KB_TEST_SCHEDULER, "POST",
                                 "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar),
                     ==, 403);
    g_assert_cmpuint(call_status(KB_TEST_SCHEDULER, "POST",
                                 "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                 "{\"spec\":{}}"),
                     ==, 422);
}

static void test_kubectl_as_service_account(void)
{
    if (!kb_test_kubectl_available()) {
        g_test_skip("kubectl is not installed");
        return;
    }
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int st = -1;
    const char *get[] = {"get", "pods", "-n", "conformance", "-o", "name", NULL};
    g_assert_true(kb_test_cluster_kubectl(cluster, KB_TEST_SCHEDULER, get, NULL, &out, &err, &st,
                                          &error));
    g_assert_cmpint(st, ==, 0);
    g_assert_nonnull(strstr(out, "pod/kb-0"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *can[] = {"auth", "can-i", "patch", "pods", "-n", "conformance", NULL};
    g_assert_true(kb_test_cluster_kubectl(cluster, KB_TEST_SCHEDULER, can, NULL, &out, &err, &st,
                                          &error));
    g_test_message("kubectl auth can-i: %s / %s", out, err);
    g_assert_cmpstr(g_strstrip(out), ==, "no");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    /* The server's certificate verifies only against the test CA. */
    g_autofree char *other = g_build_filename(srcdir(), "tests/data/tls/other-ca.pem", NULL);
    g_autofree char *ca_flag = g_strdup_printf("--certificate-authority=%s", other);
    const char *wrong_ca[] = {ca_flag, "get", "pods", "-n", "conformance", NULL};
    g_assert_true(kb_test_cluster_kubectl(cluster, KB_TEST_SCHEDULER, wrong_ca, NULL, &out, &err,
                                          &st, &error));
    g_assert_cmpint(st, !=, 0);
    g_assert_nonnull(strstr(err, "certificate"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *nodes[] = {"get", "nodes", NULL};
    g_assert_true(kb_test_cluster_kubectl(cluster, KB_TEST_SCHEDULER, nodes, NULL, &out, &err, &st,
                                          &error));
    g_assert_cmpint(st, !=, 0);
    g_assert_nonnull(strstr(err, "nodes is forbidden: User "
                                 "\"system:serviceaccount:kube-batchd:kube-batchd\" cannot list "
                                 "resource \"nodes\""));
}

/* ---- in process ---------------------------------------------------------------------------------
 */

static void test_request_info(void)
{
    static const struct {
        const char *method, *path, *query;
        gboolean resource;
        const char *verb, *group, *ns, *resource_, *sub, *name;
    } cases[] = {
            {"GET", "/api/v1/pods", NULL, TRUE, "list", "", NULL, "pods", NULL, NULL},
            {"GET", "/api/v1/namespaces/a/pods", "watch=1", TRUE, "watch", "", "a", "pods", NULL,
             NULL},
            {"GET", "/api/v1/namespaces/a/pods", "watch=false", TRUE, "list", "", "a", "pods", NULL,
             NULL},
            {"GET", "/api/v1/namespaces/a/pods/p", "watch=true", TRUE, "get", "", "a", "pods", NULL,
             "p"},
            {"GET", "/api/v1/watch/namespaces/a/pods/p", NULL, TRUE, "watch", "", "a", "pods", NULL,
             "p"},
            {"POST", "/api/v1/namespaces/a/pods/p/binding", NULL, TRUE, "create", "", "a", "pods",
             "binding", "p"},
            {"PATCH", "/apis/kubeflow.org/v1/namespaces/a/tfjobs/j/status", NULL, TRUE, "patch",
             "kubeflow.org", "a", "tfjobs", "status", "j"},
            {"DELETE", "/api/v1/namespaces/a/pods", NULL, TRUE, "deletecollection", "", "a", "pods",
             NULL, NULL},
            {"PUT", "/api/v1/namespaces/a", NULL, TRUE, "update", "", "a", "namespaces", NULL, "a"},
            {"PUT", "/api/v1/namespaces/a/finalize", NULL, TRUE, "update", "", "a", "namespaces",
             "finalize", "a"},
            {"GET", "/api/v1/nodes", "fieldSelector=metadata.name%3Dn1", TRUE, "list", "", NULL,
             "nodes", NULL, "n1"},
            {"GET", "/api/v1", NULL, FALSE, "get", NULL, NULL, NULL, NULL, NULL},
            {"GET", "/apis/batch/v1", NULL, FALSE, "get", NULL, NULL, NULL, NULL, NULL},
            {"POST", "/version", NULL, FALSE, "post", NULL, NULL, NULL, NULL, NULL},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GHashTable) q = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        if (cases[i].query != NULL) {
            g_auto(GStrv) kv = g_strsplit(cases[i].query, "=", 2);
            g_autofree char *v = g_uri_unescape_string(kv[1], NULL);
            g_hash_table_insert(q, g_strdup(kv[0]), g_steal_pointer(&v));
        }
        KasRequestInfo ri;
        kas_request_info_parse(&ri, cases[i].method, cases[i].path, q);
        g_test_message("%s %s", cases[i].method, cases[i].path);
        g_assert_cmpint(ri.resource_request, ==, cases[i].resource);
        g_assert_cmpstr(ri.verb, ==, cases[i].verb);
        g_assert_cmpstr(ri.group, ==, cases[i].group);
        g_assert_cmpstr(ri.ns, ==, cases[i].ns);
        g_assert_cmpstr(ri.resource, ==, cases[i].resource_);
        g_assert_cmpstr(ri.subresource, ==, cases[i].sub);
        g_assert_cmpstr(ri.name, ==, cases[i].name);
        kas_request_info_clear(&ri);
    }
}

static void test_token_file(void)
{
    g_autoptr(GError) error = NULL;
    KasStore *store = kas_store_new(NULL);
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("kb-tokens-XXXXXX.csv", &path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    g_assert_true(g_file_set_contents(
            path,
            "t1,alice,u1,\"dev,ops\"\r\n\nt2,system:serviceaccount:ns1:sa,u2\n\"t\"\"3\",bob,u3\n",
            -1, NULL));
    KasAuthOptions o = {.token_file = path, .authorization_mode = "Node,RBAC"};
    g_autoptr(KasAuth) a = kas_auth_new(store, &o, &error);
    g_assert_no_error(error);
    g_autoptr(KasUser) alice = kas_auth_authenticate(a, "Bearer t1");
    g_assert_cmpstr(alice->name, ==, "alice");
    const char *ag[] = {"dev", "ops", "system:authenticated", NULL};
    g_assert_true(g_strv_equal((const char *const *)alice->groups, ag));
    g_autoptr(KasUser) sa = kas_auth_authenticate(a, "bearer t2");
    const char *sg[] = {"system:serviceaccounts", "system:serviceaccounts:ns1",
                        "system:authenticated", NULL};
    g_assert_true(g_strv_equal((const char *const *)sa->groups, sg));
    g_autoptr(KasUser) bob = kas_auth_authenticate(a, "Bearer t\"3");
    g_assert_cmpstr(bob->name, ==, "bob");
    g_assert_null(kas_auth_authenticate(a, "Bearer t4"));
    g_autoptr(KasUser) anon = kas_auth_authenticate(a, NULL);
    g_assert_cmpstr(anon->name, ==, "system:anonymous");
    g_autoptr(KasUser) basic = kas_auth_authenticate(a, "Basic dXNlcjpwdw==");
    g_assert_cmpstr(basic->name, ==, "system:anonymous");
    g_clear_pointer(&a, kas_auth_free);
    /* Errors name the file's line. */
    g_assert_true(g_file_set_contents(path, "t1,alice,u1\nt2,bob\n", -1, NULL));
    g_assert_null(kas_auth_new(store, &o, &error));
    g_assert_nonnull(strstr(error->message, "line 2: must have at least 3 columns"));
    g_clear_error(&error);
    g_assert_true(g_file_set_contents(path, "t1,\"alice,u1\n", -1, NULL));
    g_assert_null(kas_auth_new(store, &o, &error));
    g_assert_nonnull(strstr(error->message, "line 1: extraneous or missing \""));
    g_clear_error(&error);
    KasAuthOptions bad = {.authorization_mode = "RBAC,ABAC"};
    g_assert_null(kas_auth_new(store, &bad, &error));
    g_assert_nonnull(strstr(error->message, "unsupported mode \"ABAC\""));
    remove(path);
    kas_store_free(store);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/apiserver/auth/request-info", test_request_info);
    g_test_add_func("/apiserver/auth/token-file", test_token_file);
    g_test_add_func("/apiserver/auth/recorded", test_recorded);
    g_test_add_func("/apiserver/auth/namespaces", test_namespaces);
    g_test_add_func("/apiserver/auth/resource-names", test_resource_names);
    g_test_add_func("/apiserver/auth/wildcards", test_wildcards);
    g_test_add_func("/apiserver/auth/changes-take-effect", test_changes_take_effect);
    g_test_add_func("/apiserver/auth/authentication", test_authentication);
    g_test_add_func("/apiserver/auth/reviews", test_reviews);
    g_test_add_func("/apiserver/auth/kubectl-service-account", test_kubectl_as_service_account);
    g_autoptr(GError) error = NULL;
    cluster = kb_test_cluster_start(KB_TEST_CLUSTER_KAS, NULL, &error);
    g_assert_no_error(error);
    int rc = g_test_run();
    kb_test_cluster_free(cluster);
    return rc;
}
