/* Helpers shared by the integration tests (see kb-test-util.h). */
#include "tests/lib/kb-test-util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/kb-error.h"
#include "testbed/apiserver/kas-json.h"

const char *kb_test_src_dir(void)
{
    const char *d = g_getenv("KB_SRCDIR");
    return d != NULL ? d : ".";
}

const char *kb_test_bin_dir(void)
{
    const char *d = g_getenv("KB_BIN_DIR");
    return d != NULL ? d : "build/default/bin";
}

guint kb_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof sa), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    close(fd);
    return ntohs(sa.sin_port);
}

json_object *kb_test_json_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    json_object *o = json_tokener_parse(text);
    if (o == NULL)
        g_error("bad JSON in test: %s", text);
    return o;
}

void kb_test_create(KbClient *client, const KbResourceType *type, const char *ns, json_object *body)
{
    g_autoptr(GError) error = NULL;
    json_object *r = kb_client_create(client, type, ns, body, &error);
    g_assert_no_error(error);
    json_object_put(r);
    json_object_put(body);
}

void kb_test_create_node(KbClient *client, json_object *node, int gpus)
{
    g_autofree char *status = g_strdup_printf(
            "{\"capacity\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\","
            "\"nvidia.com/gpu\":\"%d\"},\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}",
            gpus, gpus);
    const char *name = json_object_get_string(
            json_object_object_get(json_object_object_get(node, "metadata"), "name"));
    g_autofree char *name_copy = g_strdup(name);
    json_object_object_add(node, "status", kb_test_json_printf("%s", status));
    kb_test_create(client, &kb_type_nodes, NULL, node);
    g_autoptr(GError) error = NULL;
    g_autofree char *patch = g_strdup_printf("{\"status\":%s}", status);
    json_object *r = kb_client_patch(client, &kb_type_nodes, NULL, name_copy, "status",
                                     KB_PATCH_MERGE, patch, &error);
    g_assert_no_error(error);
    json_object_put(r);
}

void kb_test_create_pod_group(KbClient *client, const char *name, int min_member)
{
    kb_test_create(
            client, &kb_type_pod_groups_volcano, "default",
            kb_test_json_printf(
                    "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                    "\"spec\":{\"minMember\":%d}}",
                    name, min_member));
}

void kb_test_create_from_file(KbClient *client, const char *rel)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &text, &len, &error));
    json_object *obj = kas_yaml_to_json(text, len, &error);
    g_assert_no_error(error);
    const char *kind = json_object_get_string(json_object_object_get(obj, "kind"));
    const KbResourceType *type = NULL;
    if (g_strcmp0(kind, "CustomResourceDefinition") == 0)
        type = &kb_type_crds;
    else if (g_strcmp0(kind, "Queue") == 0)
        type = &kb_type_queues_volcano;
    g_assert_nonnull(type);
    kb_test_create(client, type, NULL, obj);
}

void kb_test_install_crds(KbClient *client, const char *const *files, guint wait_ms)
{
    for (guint i = 0; files[i] != NULL; i++)
        kb_test_create_from_file(client, files[i]);
    /* The CRDs may take a moment to be served. */
    gint64 deadline = g_get_monotonic_time() + (gint64)wait_ms * 1000;
    for (;;) {
        g_autoptr(GError) error = NULL;
        json_object *l = kb_client_list(client, &kb_type_queues_volcano, NULL, NULL, &error);
        json_object_put(l);
        if (error == NULL)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(20000);
    }
    kb_test_create_from_file(client, "deploy/base/default-queue.yaml");
}

KbTestDaemon *kb_test_batchd_start(const char *master, guint http_port, const char *const *extra)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *listen = g_strdup_printf("127.0.0.1:%u", http_port);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "--master");
    g_ptr_array_add(argv, (gpointer)master);
    g_ptr_array_add(argv, (gpointer) "--schedule-period");
    g_ptr_array_add(argv, (gpointer) "200ms");
    g_ptr_array_add(argv, (gpointer) "--listen-address");
    g_ptr_array_add(argv, listen);
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, NULL);
    KbTestDaemonOptions opts = {.log = TRUE};
    KbTestDaemon *d =
            kb_test_daemon_start("kube-batchd", (const char *const *)argv->pdata, &opts, &error);
    g_assert_no_error(error);
    return d;
}

KbTestDaemon *kb_test_batchd_startv(const char *master, guint http_port, va_list ap)
{
    g_autoptr(GPtrArray) extra = g_ptr_array_new();
    for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(extra, (gpointer)a);
    g_ptr_array_add(extra, NULL);
    return kb_test_batchd_start(master, http_port, (const char *const *)extra->pdata);
}

gboolean kb_test_pod_parked(json_object *pod)
{
    json_object *conds = pod != NULL ? kas_json_get(pod, "status.conditions") : NULL;
    for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), "PodScheduled") == 0 &&
            g_strcmp0(kas_json_get_string(c, "status"), "False") == 0)
            return TRUE;
    }
    return FALSE;
}

json_object *kb_test_json_parse_whole(const char *text, gsize len, GError **error)
{
    json_tokener *tok = json_tokener_new_ex(128);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    gboolean parsed = obj != NULL && json_tokener_get_error(tok) == json_tokener_success &&
                      json_tokener_get_parse_end(tok) == len;
    json_tokener_free(tok);
    if (parsed)
        return obj;
    json_object_put(obj);
    g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "not JSON");
    return NULL;
}
