/* Discovery and OpenAPI documents (see kas-discovery.h). */
#include "testbed/apiserver/kas-discovery.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"

static void reply_json(KasReply *reply, json_object *doc)
{
    reply->status = 200;
    reply->content_type = "application/json";
    g_autofree char *s = kas_json_dump(doc);
    g_string_assign(reply->body, s);
    json_object_put(doc);
}

static json_object *strv_json(char **v)
{
    json_object *a = json_object_new_array();
    for (; v != NULL && *v != NULL; v++)
        json_object_array_add(a, json_object_new_string(*v));
    return a;
}

static json_object *verbs(const char *const *v)
{
    json_object *a = json_object_new_array();
    for (; *v != NULL; v++)
        json_object_array_add(a, json_object_new_string(*v));
    return a;
}

static const char *const all_verbs[] = { "create", "delete", "deletecollection", "get", "list",
                                         "patch", "update", "watch", NULL };
static const char *const status_verbs[] = { "get", "patch", "update", NULL };
static const char *const create_verb[] = { "create", NULL };
static const char *const get_verb[] = { "get", NULL };

static json_object *sub_entry(const KasRes *res, const char *sub, const char *kind,
                              const char *const *v, const char *group, const char *version)
{
    json_object *e = json_object_new_object();
    g_autofree char *name = g_strdup_printf("%s/%s", res->plural, sub);
    kas_json_set_string(e, "name", name);
    kas_json_set_string(e, "singularName", "");
    json_object_object_add(e, "namespaced", json_object_new_boolean(res->namespaced));
    if (group != NULL) {
        kas_json_set_string(e, "group", group);
        kas_json_set_string(e, "version", version);
    }
    kas_json_set_string(e, "kind", kind);
    json_object_object_add(e, "verbs", verbs(v));
    return e;
}

static void add_resource(json_object *list, const KasRes *res)
{
    json_object *e = json_object_new_object();
    kas_json_set_string(e, "name", res->plural);
    kas_json_set_string(e, "singularName", res->singular);
    json_object_object_add(e, "namespaced", json_object_new_boolean(res->namespaced));
    kas_json_set_string(e, "kind", res->kind_name);
    json_object_object_add(e, "verbs", verbs(all_verbs));
    if (res->short_names != NULL && res->short_names[0] != NULL)
        json_object_object_add(e, "shortNames", strv_json(res->short_names));
    if (res->categories != NULL && res->categories[0] != NULL)
        json_object_object_add(e, "categories", strv_json(res->categories));
    g_autofree char *hash_src = g_strdup_printf("%s/%s/%s", res->group, res->storage_version, res->kind_name);
    g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, hash_src, -1);
    hash[11] = '\0';
    kas_json_set_string(e, "storageVersionHash", hash);
    json_object_array_add(list, e);
    if (res->has_status)
        json_object_array_add(list, sub_entry(res, "status", res->kind_name, status_verbs, NULL, NULL));
    if (res->kind == KAS_KIND_POD) {
        json_object_array_add(list, sub_entry(res, "binding", "Binding", create_verb, NULL, NULL));
        json_object_array_add(list, sub_entry(res, "eviction", "Eviction", create_verb, "policy", "v1"));
        json_object_array_add(list, sub_entry(res, "log", "Pod", get_verb, NULL, NULL));
    }
}

static gboolean serve_resource_list(const KasRestContext *ctx, const char *group,
                                    const char *version, KasReply *reply)
{
    json_object *doc = json_object_new_object();
    kas_json_set_string(doc, "kind", "APIResourceList");
    kas_json_set_string(doc, "apiVersion", "v1");
    g_autofree char *gv = group[0] == '\0' ? g_strdup(version) : g_strdup_printf("%s/%s", group, version);
    kas_json_set_string(doc, "groupVersion", gv);
    json_object *list = json_object_new_array();
    kas_store_lock(ctx->store);
    GPtrArray *all = kas_store_resources_locked(ctx->store);
    for (guint i = 0; i < all->len; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        if (res->active && strcmp(res->group, group) == 0 &&
            g_strv_contains((const char *const *)res->versions, version))
            add_resource(list, res);
    }
    kas_store_unlock(ctx->store);
    if (json_object_array_length(list) == 0) {
        json_object_put(list);
        json_object_put(doc);
        return FALSE;
    }
    json_object_object_add(doc, "resources", list);
    reply_json(reply, doc);
    return TRUE;
}

/* The versions of @group over its active resources, preferred first (new array of strings). */
static GPtrArray *group_versions(KasStore *store, const char *group)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    GPtrArray *all = kas_store_resources_locked(store);
    for (guint i = 0; i < all->len; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        if (!res->active || strcmp(res->group, group) != 0)
            continue;
        for (char **v = res->versions; *v != NULL; v++) {
            gboolean seen = FALSE;
            for (guint j = 0; j < out->len && !seen; j++)
                seen = strcmp(g_ptr_array_index(out, j), *v) == 0;
            if (!seen)
                g_ptr_array_add(out, g_strdup(*v));
        }
    }
    return out;
}

static json_object *group_json(KasStore *store, const char *group)
{
    g_autoptr(GPtrArray) vs = group_versions(store, group);
    if (vs->len == 0)
        return NULL;
    json_object *g = json_object_new_object();
    kas_json_set_string(g, "name", group);
    json_object *arr = json_object_new_array();
    for (guint i = 0; i < vs->len; i++) {
        json_object *v = json_object_new_object();
        g_autofree char *gv = g_strdup_printf("%s/%s", group, (char *)g_ptr_array_index(vs, i));
        kas_json_set_string(v, "groupVersion", gv);
        kas_json_set_string(v, "version", g_ptr_array_index(vs, i));
        json_object_array_add(arr, v);
    }
    json_object_object_add(g, "versions", arr);
    json_object_object_add(g, "preferredVersion", json_object_get(json_object_array_get_idx(arr, 0)));
    return g;
}

static void serve_groups(const KasRestContext *ctx, KasReply *reply)
{
    json_object *doc = json_object_new_object();
    kas_json_set_string(doc, "kind", "APIGroupList");
    kas_json_set_string(doc, "apiVersion", "v1");
    json_object *groups = json_object_new_array();
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    kas_store_lock(ctx->store);
    GPtrArray *all = kas_store_resources_locked(ctx->store);
    for (guint i = 0; i < all->len; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        if (!res->active || res->group[0] == '\0' || g_hash_table_contains(seen, res->group))
            continue;
        g_hash_table_add(seen, res->group);
        json_object *g = group_json(ctx->store, res->group);
        if (g != NULL)
            json_object_array_add(groups, g);
    }
    kas_store_unlock(ctx->store);
    json_object_object_add(doc, "groups", groups);
    reply_json(reply, doc);
}

static void serve_version(KasReply *reply)
{
    json_object *doc = json_object_new_object();
    kas_json_set_string(doc, "major", "1");
    kas_json_set_string(doc, "minor", "32");
    kas_json_set_string(doc, "gitVersion", "v1.32.0-kb-apiserver");
    kas_json_set_string(doc, "gitCommit", "0000000000000000000000000000000000000000");
    kas_json_set_string(doc, "gitTreeState", "clean");
    kas_json_set_string(doc, "buildDate", "2025-01-01T00:00:00Z");
    kas_json_set_string(doc, "goVersion", "go1.23.0");
    kas_json_set_string(doc, "compiler", "gc");
    kas_json_set_string(doc, "platform", "linux/amd64");
    reply_json(reply, doc);
}

static void serve_api(const KasRestContext *ctx, KasReply *reply)
{
    json_object *doc = json_object_new_object();
    kas_json_set_string(doc, "kind", "APIVersions");
    json_object *vs = json_object_new_array();
    json_object_array_add(vs, json_object_new_string("v1"));
    json_object_object_add(doc, "versions", vs);
    json_object *addrs = json_object_new_array();
    json_object *a = json_object_new_object();
    kas_json_set_string(a, "clientCIDR", "0.0.0.0/0");
    g_autofree char *addr = g_strdup_printf("127.0.0.1:%u", ctx->port);
    kas_json_set_string(a, "serverAddress", addr);
    json_object_array_add(addrs, a);
    json_object_object_add(doc, "serverAddressByClientCIDRs", addrs);
    reply_json(reply, doc);
}

/* ---- OpenAPI v3: just enough for kubectl's field validation check ----------------------------- */

/* The built-in group versions (CRD groups stay out: kubectl checks those through the CRD list). */
static GPtrArray *builtin_gvs(KasStore *store)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    GPtrArray *all = kas_store_resources_locked(store);
    for (guint i = 0; i < all->len; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        if (!res->active || res->kind == KAS_KIND_CUSTOM)
            continue;
        char *gv = res->group[0] == '\0' ? g_strdup_printf("api/%s", res->storage_version)
                                         : g_strdup_printf("apis/%s/%s", res->group, res->storage_version);
        gboolean seen = FALSE;
        for (guint j = 0; j < out->len && !seen; j++)
            seen = strcmp(g_ptr_array_index(out, j), gv) == 0;
        if (seen)
            g_free(gv);
        else
            g_ptr_array_add(out, gv);
    }
    return out;
}

static void serve_openapi_root(const KasRestContext *ctx, KasReply *reply)
{
    json_object *doc = json_object_new_object();
    json_object *paths = json_object_new_object();
    kas_store_lock(ctx->store);
    g_autoptr(GPtrArray) gvs = builtin_gvs(ctx->store);
    kas_store_unlock(ctx->store);
    for (guint i = 0; i < gvs->len; i++) {
        json_object *e = json_object_new_object();
        g_autofree char *url = g_strdup_printf("/openapi/v3/%s?hash=KBAPISERVER1",
                                               (char *)g_ptr_array_index(gvs, i));
        kas_json_set_string(e, "serverRelativeURL", url);
        json_object_object_add(paths, g_ptr_array_index(gvs, i), e);
    }
    json_object_object_add(doc, "paths", paths);
    reply_json(reply, doc);
}

static json_object *patch_op(const KasRes *res)
{
    json_object *op = json_object_new_object();
    json_object *gvk = json_object_new_object();
    kas_json_set_string(gvk, "group", res->group);
    kas_json_set_string(gvk, "version", res->storage_version);
    kas_json_set_string(gvk, "kind", res->kind_name);
    json_object_object_add(op, "x-kubernetes-group-version-kind", gvk);
    json_object *params = json_object_new_array();
    static const char *const names[] = { "dryRun", "fieldManager", "fieldValidation", "force" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        json_object *p = json_object_new_object();
        kas_json_set_string(p, "name", names[i]);
        kas_json_set_string(p, "in", "query");
        json_object *schema = json_object_new_object();
        kas_json_set_string(schema, "type", strcmp(names[i], "force") == 0 ? "boolean" : "string");
        json_object_object_add(p, "schema", schema);
        json_object_array_add(params, p);
    }
    json_object_object_add(op, "parameters", params);
    json_object *resp = json_object_new_object();
    json_object *ok = json_object_new_object();
    kas_json_set_string(ok, "description", "OK");
    json_object_object_add(resp, "200", ok);
    json_object_object_add(op, "responses", resp);
    return op;
}

/* /openapi/v3/api/v1 or /openapi/v3/apis/G/V: a PATCH operation per resource. */
static gboolean serve_openapi_gv(const KasRestContext *ctx, const char *gvpath, KasReply *reply)
{
    json_object *doc = json_object_new_object();
    kas_json_set_string(doc, "openapi", "3.0.0");
    json_object *info = json_object_new_object();
    kas_json_set_string(info, "title", "Kubernetes");
    kas_json_set_string(info, "version", "v1.32.0-kb-apiserver");
    json_object_object_add(doc, "info", info);
    json_object *paths = json_object_new_object();
    kas_store_lock(ctx->store);
    GPtrArray *all = kas_store_resources_locked(ctx->store);
    for (guint i = 0; i < all->len; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        if (!res->active || res->kind == KAS_KIND_CUSTOM)
            continue;
        g_autofree char *gv = res->group[0] == '\0'
                                  ? g_strdup_printf("api/%s", res->storage_version)
                                  : g_strdup_printf("apis/%s/%s", res->group, res->storage_version);
        if (strcmp(gv, gvpath) != 0)
            continue;
        g_autofree char *p = g_strdup_printf("/%s/%s%s/{name}", gv,
                                             res->namespaced ? "namespaces/{namespace}/" : "", res->plural);
        json_object *item = json_object_new_object();
        json_object_object_add(item, "patch", patch_op(res));
        json_object_object_add(paths, p, item);
    }
    kas_store_unlock(ctx->store);
    if (json_object_object_length(paths) == 0) {
        json_object_put(paths);
        json_object_put(doc);
        return FALSE;
    }
    json_object_object_add(doc, "paths", paths);
    json_object *comps = json_object_new_object();
    json_object_object_add(comps, "schemas", json_object_new_object());
    json_object_object_add(doc, "components", comps);
    reply_json(reply, doc);
    return TRUE;
}

gboolean kas_discovery_handle(const KasRestContext *ctx, const KasRequest *req, KasReply *reply)
{
    const char *p = req->path;
    if (strcmp(req->method, "GET") != 0)
        return FALSE;
    if (strcmp(p, "/version") == 0 || strcmp(p, "/version/") == 0) {
        serve_version(reply);
        return TRUE;
    }
    if (strcmp(p, "/api") == 0 || strcmp(p, "/api/") == 0) {
        serve_api(ctx, reply);
        return TRUE;
    }
    if (strcmp(p, "/api/v1") == 0 || strcmp(p, "/api/v1/") == 0)
        return serve_resource_list(ctx, "", "v1", reply);
    if (strcmp(p, "/apis") == 0 || strcmp(p, "/apis/") == 0) {
        serve_groups(ctx, reply);
        return TRUE;
    }
    if (strcmp(p, "/openapi/v3") == 0 || strcmp(p, "/openapi/v3/") == 0) {
        serve_openapi_root(ctx, reply);
        return TRUE;
    }
    if (g_str_has_prefix(p, "/openapi/v3/"))
        return serve_openapi_gv(ctx, p + strlen("/openapi/v3/"), reply);
    if (g_str_has_prefix(p, "/apis/")) {
        g_auto(GStrv) parts = g_strsplit(p + 6, "/", -1);
        guint n = g_strv_length(parts);
        if (n > 0 && parts[n - 1][0] == '\0')
            n--;
        if (n == 1) {
            kas_store_lock(ctx->store);
            json_object *g = group_json(ctx->store, parts[0]);
            kas_store_unlock(ctx->store);
            if (g == NULL)
                return FALSE;
            kas_json_set_string(g, "kind", "APIGroup");
            kas_json_set_string(g, "apiVersion", "v1");
            reply_json(reply, g);
            return TRUE;
        }
        if (n == 2)
            return serve_resource_list(ctx, parts[0], parts[1], reply);
    }
    return FALSE;
}
