/* REST handlers of the in-memory API server (see kas-rest.h). */
#include "testbed/apiserver/kas-rest.h"

#include <string.h>

#include "testbed/apiserver/kas-discovery.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-log.h"
#include "testbed/apiserver/kas-ops.h"
#include "testbed/apiserver/kas-proto.h"
#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-table.h"

#define TABLE_CONTENT_TYPE "application/json;as=Table;v=v1;g=meta.k8s.io"

void kas_reply_init(KasReply *reply)
{
    memset(reply, 0, sizeof *reply);
    reply->body = g_string_new(NULL);
    reply->content_type = "application/json";
}

void kas_reply_clear(KasReply *reply)
{
    if (reply->body != NULL)
        g_string_free(reply->body, TRUE);
    if (reply->watcher != NULL)
        kas_watcher_free(reply->watcher);
    if (reply->render_free != NULL)
        reply->render_free(reply->render_data);
    memset(reply, 0, sizeof *reply);
}

/* The Status of @code with @details (stolen) when @has_details, else the details
 * kube-apiserver gives for @code on @res/@name. */
static void reply_status(KasReply *reply, KasErr code, const char *message, const KasRes *res,
                         const char *name, gboolean has_details, json_object *details_in)
{
    json_object *st = json_object_new_object();
    kas_json_set_string(st, "kind", "Status");
    kas_json_set_string(st, "apiVersion", "v1");
    json_object_object_add(st, "metadata", json_object_new_object());
    kas_json_set_string(st, "status", "Failure");
    kas_json_set_string(st, "message", message);
    kas_json_set_string(st, "reason", kas_err_reason(code));
    json_object *details = has_details ? details_in : json_object_new_object();
    if (has_details || code == KAS_ERR_BAD_REQUEST) {
        /* given, or none: kube-apiserver's BadRequest answers carry no details */
    } else if (name != NULL && name[0] != '\0')
        kas_json_set_string(details, "name", name);
    if (!has_details && code != KAS_ERR_BAD_REQUEST) {
        if (res != NULL && res->group[0] != '\0')
            kas_json_set_string(details, "group", res->group);
        if (res != NULL)
            kas_json_set_string(details, "kind",
                                code == KAS_ERR_INVALID ? res->kind_name : res->plural);
        if (code == KAS_ERR_TOO_MANY || code == KAS_ERR_UNAVAILABLE)
            json_object_object_add(details, "retryAfterSeconds",
                                   json_object_new_int(reply->retry_after > 0 ? (int)reply->retry_after : 1));
    }
    if (has_details && details != NULL)
        json_object_object_add(st, "details", details);
    else if (details != NULL && json_object_object_length(details) > 0)
        json_object_object_add(st, "details", details);
    else
        json_object_put(details);
    json_object_object_add(st, "code", json_object_new_int((int)kas_err_http(code)));
    reply->status = kas_err_http(code);
    reply->content_type = "application/json";
    g_autofree char *s = kas_json_dump(st);
    g_string_assign(reply->body, s);
    json_object_put(st);
}

void kas_reply_error(KasReply *reply, KasErr code, const char *message, const KasRes *res,
                     const char *name)
{
    reply_status(reply, code, message, res, name, FALSE, NULL);
}

void kas_reply_gerror(KasReply *reply, const GError *error, const KasRes *res, const char *name)
{
    if (error == NULL) {
        kas_reply_error(reply, KAS_ERR_INTERNAL, "internal error", res, name);
        return;
    }
    if (error->domain != KAS_ERROR) {
        kas_reply_error(reply, KAS_ERR_BAD_REQUEST, error->message, res, name);
        return;
    }
    gboolean has_details = FALSE;
    json_object *details = NULL;
    g_autofree char *msg = kas_status_split(error->message, &has_details, &details);
    reply_status(reply, (KasErr)error->code, msg, res, name, has_details, details);
}

static void reply_text(KasReply *reply, guint status, const char *ctype, char *text)
{
    reply->status = status;
    reply->content_type = ctype;
    g_string_assign(reply->body, text);
    g_free(text);
}

static const char *q(const KasRequest *req, const char *key)
{
    return req->query != NULL ? g_hash_table_lookup(req->query, key) : NULL;
}

static gboolean q_true(const KasRequest *req, const char *key)
{
    const char *v = q(req, key);
    return v != NULL && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* ---- routing ---------------------------------------------------------------------------------------- */

typedef struct {
    char *group;
    char *version;
    char *ns;
    char *plural;
    char *name;
    char *sub;
    gboolean watch_prefix;
} Route;

static void route_clear(Route *r)
{
    g_free(r->group);
    g_free(r->version);
    g_free(r->ns);
    g_free(r->plural);
    g_free(r->name);
    g_free(r->sub);
}

/* Split "/api/v1/..." or "/apis/G/V/..." as kube-apiserver's RequestInfoFactory does. */
static gboolean route_parse(const char *path, Route *r)
{
    g_auto(GStrv) parts = g_strsplit(path[0] == '/' ? path + 1 : path, "/", -1);
    guint n = g_strv_length(parts);
    while (n > 0 && parts[n - 1][0] == '\0')
        n--;
    guint i;
    if (n >= 2 && strcmp(parts[0], "api") == 0) {
        r->group = g_strdup("");
        r->version = g_strdup(parts[1]);
        i = 2;
    } else if (n >= 3 && strcmp(parts[0], "apis") == 0) {
        r->group = g_strdup(parts[1]);
        r->version = g_strdup(parts[2]);
        i = 3;
    } else {
        return FALSE;
    }
    if (i < n && strcmp(parts[i], "watch") == 0) {
        r->watch_prefix = TRUE;
        i++;
    }
    guint left = n - i;
    if (left == 0)
        return FALSE;
    if (strcmp(parts[i], "namespaces") == 0 && left >= 3 &&
        !(left == 3 && (strcmp(parts[i + 2], "status") == 0 || strcmp(parts[i + 2], "finalize") == 0))) {
        r->ns = g_strdup(parts[i + 1]);
        i += 2;
        left -= 2;
    }
    if (left > 3)
        return FALSE;
    r->plural = g_strdup(parts[i]);
    if (left >= 2)
        r->name = g_strdup(parts[i + 1]);
    if (left >= 3)
        r->sub = g_strdup(parts[i + 2]);
    return r->plural[0] != '\0' && (r->name == NULL || r->name[0] != '\0');
}

/* ---- rendering ------------------------------------------------------------------------------------------ */

typedef struct {
    KasRes *res;
    char *version;
    gboolean table;
    KasTableInclude include;
    KasConvert *convert; /* NULL: the resource has no conversion webhook */
} Render;

static void render_free(gpointer p)
{
    Render *r = p;
    g_free(r->version);
    g_free(r);
}

static gboolean needs_rewrite(const KasRes *res, const char *version)
{
    return strcmp(version, res->storage_version) != 0;
}

/* The object as served at @version (new string). */
static char *obj_text(const KasRes *res, const char *version, KasObj *obj)
{
    if (!needs_rewrite(res, version))
        return g_strndup(obj->json, obj->len);
    json_object *j = kas_obj_parse(obj);
    g_autofree char *av = kas_res_api_version(res, version);
    kas_json_set_string(j, "apiVersion", av);
    char *s = kas_json_dump(j);
    json_object_put(j);
    return s;
}

/* A failed CRD conversion as kube-apiserver answers it: 500, a Status without a reason. */
static void reply_conversion_failed(KasReply *reply, const char *message)
{
    reply->status = 500;
    reply->content_type = "application/json";
    g_autofree char *s = kas_convert_status_json(message);
    g_string_assign(reply->body, s);
}

static void reply_any_error(KasReply *reply, const GError *error, const KasRes *res,
                            const char *name)
{
    if (error != NULL && error->domain == KAS_CONVERT_ERROR)
        reply_conversion_failed(reply, error->message);
    else
        kas_reply_gerror(reply, error, res, name);
}

/* @objs (KasObj*) in @version through the resource's conversion webhook, if it has one; FALSE
 * with the failure answered. */
static gboolean convert_objs(KasConvert *cv, KasRes *res, const char *version, GPtrArray *objs,
                             gboolean list, KasReply *reply)
{
    g_autoptr(GError) error = NULL;
    if (res->kind != KAS_KIND_CUSTOM || kas_convert_objs(cv, res, version, objs, list, &error))
        return TRUE;
    reply_conversion_failed(reply, error->message);
    return FALSE;
}

/* @obj (reference taken) in @version; NULL with the failure answered. */
static KasObj *convert_obj(const KasRestContext *ctx, KasRes *res, const char *version,
                           KasObj *obj, KasReply *reply)
{
    g_autoptr(GPtrArray) one = g_ptr_array_new_with_free_func((GDestroyNotify)kas_obj_unref);
    g_ptr_array_add(one, obj);
    if (!convert_objs(ctx->convert, res, version, one, FALSE, reply))
        return NULL;
    return kas_obj_ref(g_ptr_array_index(one, 0));
}

static char *render_watch_obj(KasRes *res, KasObj *obj_in, gpointer data)
{
    Render *r = data;
    g_autoptr(GPtrArray) one = g_ptr_array_new_with_free_func((GDestroyNotify)kas_obj_unref);
    g_ptr_array_add(one, kas_obj_ref(obj_in));
    g_autoptr(GError) error = NULL;
    if (!kas_convert_objs(r->convert, res, r->version, one, FALSE, &error)) {
        g_autofree char *st = kas_convert_status_json(error->message);
        return g_strdup_printf("!%s", st);
    }
    KasObj *obj = g_ptr_array_index(one, 0);
    if (!r->table)
        return obj_text(res, r->version, obj);
    json_object *j = kas_obj_parse(obj);
    g_autofree char *av = kas_res_api_version(res, r->version);
    kas_json_set_string(j, "apiVersion", av);
    json_object *t = json_object_new_object();
    kas_json_set_string(t, "kind", "Table");
    kas_json_set_string(t, "apiVersion", "meta.k8s.io/v1");
    json_object *meta = json_object_new_object();
    kas_json_set_string(meta, "resourceVersion", kas_json_get_string(j, "metadata.resourceVersion"));
    json_object_object_add(t, "metadata", meta);
    json_object_object_add(t, "columnDefinitions", kas_table_columns(res, r->version));
    json_object *rows = json_object_new_array();
    json_object_array_add(rows, kas_table_row(res, r->version, j, r->include,
                                              g_get_real_time() / G_USEC_PER_SEC));
    json_object_object_add(t, "rows", rows);
    char *s = kas_json_dump(t);
    json_object_put(t);
    json_object_put(j);
    return s;
}

static gboolean wants_table(const KasRequest *req)
{
    return req->accept != NULL && strstr(req->accept, "as=Table") != NULL &&
           strstr(req->accept, "g=meta.k8s.io") != NULL;
}

static KasTableInclude table_include(const KasRequest *req)
{
    const char *v = q(req, "includeObject");
    if (v != NULL && strcmp(v, "None") == 0)
        return KAS_TABLE_OBJECT_NONE;
    if (v != NULL && strcmp(v, "Object") == 0)
        return KAS_TABLE_OBJECT_FULL;
    return KAS_TABLE_OBJECT_METADATA;
}

/* Only JSON is spoken; a client that accepts nothing JSON-like gets 406. */
static gboolean accept_ok(const KasRequest *req)
{
    const char *a = req->accept;
    return a == NULL || a[0] == '\0' || strstr(a, "json") != NULL || strstr(a, "*/*") != NULL;
}

static void reply_object(KasReply *reply, guint status, const KasRequest *req, KasRes *res,
                         const char *version, KasObj *obj)
{
    reply->status = status;
    if (wants_table(req) && strcmp(req->method, "GET") == 0) {
        g_autoptr(GPtrArray) one = g_ptr_array_new();
        g_ptr_array_add(one, obj);
        g_autofree char *t = kas_table_render(res, version, one, obj->rv, NULL, table_include(req));
        g_string_assign(reply->body, t);
        reply->content_type = TABLE_CONTENT_TYPE;
        return;
    }
    if (!needs_rewrite(res, version)) {
        /* sized for the object at once: grown by doubling from empty, an answer of 1-4 KB (a
         * claim status write's, one per DRA pod) took several reallocations */
        if (reply->body->len == 0 && reply->body->allocated_len <= obj->len) {
            g_string_free(reply->body, TRUE);
            reply->body = g_string_sized_new(obj->len + 1);
        }
        g_string_append_len(reply->body, obj->json, (gssize)obj->len);
    } else {
        g_autofree char *s = obj_text(res, version, obj);
        g_string_assign(reply->body, s);
    }
}

static void reply_success_status(KasReply *reply, guint code)
{
    reply->status = code;
    g_string_printf(reply->body,
                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\","
                    "\"code\":%u}",
                    code);
}

/* ---- lists and watches ---------------------------------------------------------------------------------- */

static char *continue_encode(guint64 rv, const char *key)
{
    json_object *j = json_object_new_object();
    kas_json_set_string(j, "v", "meta.k8s.io/v1");
    json_object_object_add(j, "rv", json_object_new_int64((gint64)rv));
    g_autofree char *start = g_strdup_printf("%s%c", key, 1);
    start[strlen(start) - 1] = '\0'; /* "key\0": the next key after @key, as etcd3 does */
    json_object_object_add(j, "start", json_object_new_string_len(start, (int)strlen(key) + 1));
    const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
    char *b = g_base64_encode((const guchar *)s, strlen(s));
    json_object_put(j);
    for (char *c = b; *c != '\0'; c++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
    char *eq = strchr(b, '=');
    if (eq != NULL)
        *eq = '\0';
    return b;
}

/* Go's quoteChar of encoding/json: how a byte is shown in "invalid character ..." errors. */
static char *go_quote_char(guchar c)
{
    if (c == '\'')
        return g_strdup("'\\''");
    if (c == '"')
        return g_strdup("'\"'");
    if (c < 0x20 || c == 0x7f)
        return g_strdup_printf("'\\x%02x'", c);
    if (c >= 0x80 && (c <= 0xa0 || c == 0xad))
        return g_strdup_printf("'\\u%04x'", c);
    if (c >= 0x80) {
        char u[8] = { 0 };
        g_unichar_to_utf8(c, u);
        return g_strdup_printf("'%s'", u);
    }
    return g_strdup_printf("'%c'", c);
}

static gboolean continue_invalid(GError **error, const char *why)
{
    g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                "invalid continue token: continue key is not valid: %s", why);
    return FALSE;
}

/* The start key of a continue token (new string), or NULL with kube-apiserver's messages for a
 * token that is not base64url, not JSON, or not a meta.k8s.io/v1 token. */
static char *continue_decode(const char *token, GError **error)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    gsize n = strlen(token);
    gsize bad = strspn(token, alphabet);
    if (bad < n || n % 4 == 1) {
        g_autofree char *why = g_strdup_printf("illegal base64 data at input byte %zu",
                                               bad < n ? bad : n - 1);
        continue_invalid(error, why);
        return NULL;
    }
    g_autofree char *b = g_strdup(token);
    for (char *c = b; *c != '\0'; c++)
        *c = *c == '-' ? '+' : *c == '_' ? '/' : *c;
    GString *padded = g_string_new(b);
    while (padded->len % 4 != 0)
        g_string_append_c(padded, '=');
    gsize len = 0;
    g_autofree guchar *raw = g_base64_decode(padded->str, &len);
    g_string_free(padded, TRUE);
    gsize first = 0;
    while (first < len && g_ascii_isspace(raw[first]))
        first++;
    if (first == len) {
        continue_invalid(error, "unexpected end of JSON input");
        return NULL;
    }
    if (strchr("{[\"-0123456789tfn", raw[first]) == NULL || raw[first] == '\0') {
        g_autofree char *q = go_quote_char(raw[first]);
        g_autofree char *why = g_strdup_printf("invalid character %s looking for beginning of value", q);
        continue_invalid(error, why);
        return NULL;
    }
    json_object *j = kas_json_parse((const char *)raw, len, NULL);
    if (j == NULL) {
        continue_invalid(error, "unexpected end of JSON input");
        return NULL;
    }
    json_object *start = kas_json_get(j, "start");
    const char *v = kas_json_get_string(j, "v");
    char *out = NULL;
    if (g_strcmp0(v, "meta.k8s.io/v1") != 0) {
        g_autofree char *why = g_strdup_printf("server does not recognize this encoded version \"%s\"",
                                               v != NULL ? v : "");
        continue_invalid(error, why);
    } else if (json_object_get_int64(kas_json_get(j, "rv")) == 0) {
        continue_invalid(error, "incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
    } else if (!json_object_is_type(start, json_type_string) || json_object_get_string_len(start) == 0) {
        continue_invalid(error, "encoded start key empty (version meta.k8s.io/v1)");
    } else {
        out = g_strndup(json_object_get_string(start), (gsize)json_object_get_string_len(start));
    }
    json_object_put(j);
    return out;
}

/* Parse and check the selectors of a list or watch. */
static gboolean parse_selectors(const KasRequest *req, KasRes *res, KasSelector **labels,
                                KasSelector **fields, GError **error)
{
    *labels = kas_label_selector_parse(q(req, "labelSelector"), error);
    if (*labels == NULL) {
        (*error)->domain = KAS_ERROR, (*error)->code = KAS_ERR_BAD_REQUEST;
        if (!g_str_has_prefix((*error)->message, "unable to parse requirement: "))
            g_prefix_error(error, "unable to parse requirement: ");
        return FALSE;
    }
    *fields = kas_field_selector_parse(q(req, "fieldSelector"), error);
    if (*fields == NULL) {
        (*error)->domain = KAS_ERROR, (*error)->code = KAS_ERR_BAD_REQUEST;
        g_clear_pointer(labels, kas_selector_free);
        return FALSE;
    }
    for (const char *const *k = kas_selector_keys(*fields); *k != NULL; k++) {
        if (!kas_res_has_field(res, *k)) {
            g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST, "field label not supported: %s", *k);
            g_clear_pointer(labels, kas_selector_free);
            g_clear_pointer(fields, kas_selector_free);
            return FALSE;
        }
    }
    return TRUE;
}

/* @remaining: remainingItemCount to report, or -1 for none. */
static void append_list(GString *out, KasRes *res, const char *version, GPtrArray *objs, guint64 rv,
                        const char *cont, gint64 remaining)
{
    g_autofree char *av = kas_res_api_version(res, version);
    g_string_append_printf(out, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%" G_GUINT64_FORMAT "\"",
                           res->list_kind, av, rv);
    if (cont != NULL)
        g_string_append_printf(out, ",\"continue\":\"%s\"", cont);
    if (cont != NULL && remaining >= 0)
        g_string_append_printf(out, ",\"remainingItemCount\":%" G_GINT64_FORMAT, remaining);
    g_string_append(out, "},\"items\":[");
    gboolean rewrite = needs_rewrite(res, version);
    /* Items of built-in lists carry no apiVersion and kind (custom resources' do): stored
     * objects start with both (kas-store), so they are skipped as a prefix. */
    g_autofree char *head = NULL;
    if (res->kind != KAS_KIND_CUSTOM) {
        json_object *h = json_object_new_object();
        g_autofree char *sav = kas_res_api_version(res, res->storage_version);
        kas_json_set_string(h, "apiVersion", sav);
        kas_json_set_string(h, "kind", res->kind_name);
        head = kas_json_dump(h);
        json_object_put(h);
        head[strlen(head) - 1] = ','; /* {"apiVersion":"v1","kind":"Pod", */
    }
    for (guint i = 0; i < objs->len; i++) {
        KasObj *o = g_ptr_array_index(objs, i);
        if (i > 0)
            g_string_append_c(out, ',');
        if (head != NULL && g_str_has_prefix(o->json, head)) {
            g_string_append_c(out, '{');
            g_string_append_len(out, o->json + strlen(head), (gssize)(o->len - strlen(head)));
        } else if (rewrite) {
            g_autofree char *s = obj_text(res, version, o);
            g_string_append(out, s);
        } else {
            g_string_append_len(out, o->json, (gssize)o->len);
        }
    }
    g_string_append(out, "]}");
}

/*
 * Whether kube-apiserver would answer this list from its watch cache, and so ignore its limit
 * (cacher.go, List and GetToList): a resourceVersion is given, no continue token, and either
 * the resourceVersion is "0" or there is no limit (resourceVersionMatch=Exact goes to etcd too,
 * which makes no difference here without a limit). Other lists go to etcd, where the limit
 * pages them. This server's one store is both: it only has to answer with the same shape (the
 * whole list, no continue token, no remainingItemCount).
 * Left out: a resourceVersion newer than the cache's makes kube-apiserver wait up to 3 s and
 * then answer 504 (ResourceVersionTooLarge); here the store is always current.
 */
static gboolean served_from_cache(const KasRequest *req, gboolean has_continue, guint64 limit)
{
    const char *rv = q(req, "resourceVersion");
    if (rv == NULL || rv[0] == '\0' || has_continue)
        return FALSE;
    return strcmp(rv, "0") == 0 || limit == 0;
}

static void do_list(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                    KasReply *reply)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KasSelector) labels = NULL;
    g_autoptr(KasSelector) fields = NULL;
    if (!parse_selectors(req, res, &labels, &fields, &error)) {
        kas_reply_gerror(reply, error, NULL, NULL);
        return;
    }
    KasListOptions lo = { .ns = r->ns, .labels = labels, .fields = fields };
    const char *limit = q(req, "limit");
    if (limit != NULL) {
        char *end = NULL;
        gint64 l = g_ascii_strtoll(limit, &end, 10);
        if (*end != '\0' || l < 0) {
            kas_reply_error(reply, KAS_ERR_BAD_REQUEST, "limit must be a non-negative integer", NULL, NULL);
            return;
        }
        lo.limit = (guint64)l;
    }
    g_autofree char *start = NULL;
    if (q(req, "continue") != NULL && q(req, "continue")[0] != '\0') {
        start = continue_decode(q(req, "continue"), &error);
        if (start == NULL) {
            kas_reply_gerror(reply, error, NULL, NULL);
            return;
        }
        lo.start_after = start;
    }
    if (served_from_cache(req, start != NULL, lo.limit))
        lo.limit = 0;
    gboolean more = FALSE;
    guint64 remaining = 0;
    kas_store_lock(ctx->store);
    g_autoptr(GPtrArray) objs = kas_store_list_locked(ctx->store, res, &lo, &more, &remaining);
    guint64 rv = kas_store_rv_locked(ctx->store);
    kas_store_unlock(ctx->store);
    g_autofree char *cont = NULL;
    if (more && objs->len > 0)
        cont = continue_encode(rv, ((KasObj *)g_ptr_array_index(objs, objs->len - 1))->key);
    if (!convert_objs(ctx->convert, res, r->version, objs, TRUE, reply))
        return;
    reply->status = 200;
    if (wants_table(req)) {
        g_autofree char *t = kas_table_render(res, r->version, objs, rv, cont, table_include(req));
        g_string_assign(reply->body, t);
        reply->content_type = TABLE_CONTENT_TYPE;
        return;
    }
    g_string_set_size(reply->body, 0);
    append_list(reply->body, res, r->version, objs, rv, cont, more ? (gint64)remaining : -1);
}

static void do_watch(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                     KasReply *reply)
{
    g_autoptr(GError) error = NULL;
    KasWatchOptions wo = { .ns = r->ns };
    if (!parse_selectors(req, res, &wo.labels, &wo.fields, &error)) {
        kas_reply_gerror(reply, error, NULL, NULL);
        return;
    }
    g_autofree char *av = kas_res_api_version(res, r->version);
    wo.api_version = av;
    wo.resource_version = q(req, "resourceVersion");
    wo.send_initial = q_true(req, "sendInitialEvents");
    if (r->name != NULL) {
        /* GET .../NAME?watch=true is a watch with a metadata.name field selector. */
        g_autofree char *sel = g_strdup_printf("metadata.name=%s", r->name);
        kas_selector_free(wo.fields);
        wo.fields = kas_field_selector_parse(sel, NULL);
    }
    KasWatcher *w = kas_store_watch(ctx->store, res, &wo, &error);
    kas_selector_free(wo.labels);
    kas_selector_free(wo.fields);
    if (w == NULL) {
        kas_reply_gerror(reply, error, NULL, NULL);
        return;
    }
    gint64 timeout = 0;
    const char *ts = q(req, "timeoutSeconds");
    if (ts != NULL)
        timeout = g_ascii_strtoll(ts, NULL, 10);
    if (timeout <= 0) {
        guint min = ctx->min_watch_timeout > 0 ? ctx->min_watch_timeout : 1800;
        timeout = min + g_random_int_range(0, (gint32)min);
    }
    reply->status = 200;
    reply->watcher = w;
    reply->watch_deadline = g_get_monotonic_time() + timeout * G_USEC_PER_SEC;
    reply->watch_bookmarks = q_true(req, "allowWatchBookmarks");
    gboolean table = wants_table(req);
    gboolean convert = ctx->convert != NULL && kas_convert_webhook(ctx->store, res);
    if (table || convert || needs_rewrite(res, r->version)) {
        Render *rd = g_new0(Render, 1);
        rd->convert = convert ? ctx->convert : NULL;
        rd->res = res;
        rd->version = g_strdup(r->version);
        rd->table = table;
        rd->include = table_include(req);
        reply->render = render_watch_obj;
        reply->render_data = rd;
        reply->render_free = render_free;
    }
    reply->content_type = table ? TABLE_CONTENT_TYPE : "application/json";
}

/* ---- writes ------------------------------------------------------------------------------------------------ */

static json_object *parse_body(const KasRequest *req, KasReply *reply)
{
    if (req->content_type != NULL && strstr(req->content_type, "yaml") != NULL &&
        strstr(req->content_type, "apply-patch") == NULL) {
        kas_reply_error(reply, KAS_ERR_UNSUPPORTED_TYPE,
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/merge-patch+json, "
                        "application/json-patch+json, application/strategic-merge-patch+json",
                        NULL, NULL);
        return NULL;
    }
    if (req->content_type != NULL && strstr(req->content_type, "protobuf") != NULL) {
        /* kube-apiserver reads protobuf bodies of built-in types (kubectl's imperative create
         * commands send them); this server reads only Bindings (parse_binding_body), and says
         * so rather than fail to parse */
        g_autofree char *msg = g_strdup_printf(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json (got \"%s\": this server reads protobuf only for Bindings; "
                "send JSON, as kubectl create -f does)",
                req->content_type);
        kas_reply_error(reply, KAS_ERR_UNSUPPORTED_TYPE, msg, NULL, NULL);
        return NULL;
    }
    g_autoptr(GError) error = NULL;
    json_object *j = kas_json_parse(req->body != NULL ? req->body : "", req->body_len, &error);
    if (j == NULL) {
        g_autofree char *msg = g_strdup_printf("couldn't decode the request body: %s", error->message);
        kas_reply_error(reply, KAS_ERR_BAD_REQUEST, msg, NULL, NULL);
    }
    return j;
}

/* A Binding's body: JSON as any other, or protobuf, as client-go and kube-batchd send it. */
static json_object *parse_binding_body(const KasRequest *req, KasReply *reply)
{
    if (req->content_type == NULL || !g_str_has_prefix(req->content_type, KB_PROTO_CONTENT_TYPE))
        return parse_body(req, reply);
    g_autoptr(GError) error = NULL;
    json_object *binding = kas_proto_binding((const guchar *)(req->body != NULL ? req->body : ""),
                                             req->body_len, &error);
    if (binding == NULL)
        kas_reply_gerror(reply, error, NULL, NULL);
    return binding;
}

static void parse_delete_options(const KasRequest *req, json_object *body, KasDeleteOptions *o)
{
    memset(o, 0, sizeof *o);
    o->grace_seconds = -1;
    const char *g = q(req, "gracePeriodSeconds");
    if (g != NULL)
        o->grace_seconds = g_ascii_strtoll(g, NULL, 10);
    o->propagation = q(req, "propagationPolicy");
    if (q_true(req, "orphanDependents"))
        o->propagation = "Orphan";
    if (body == NULL)
        return;
    json_object *bg = kas_json_get(body, "gracePeriodSeconds");
    if (bg != NULL)
        o->grace_seconds = json_object_get_int64(bg);
    if (kas_json_get_string(body, "propagationPolicy") != NULL)
        o->propagation = kas_json_get_string(body, "propagationPolicy");
    json_object *orphan = kas_json_get(body, "orphanDependents");
    if (orphan != NULL && json_object_get_boolean(orphan))
        o->propagation = "Orphan";
    o->precondition_uid = kas_json_get_string(body, "preconditions.uid");
    o->precondition_rv = kas_json_get_string(body, "preconditions.resourceVersion");
}

static void do_delete(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                      KasReply *reply)
{
    json_object *body = NULL;
    if (req->body_len > 0) {
        body = parse_body(req, reply);
        if (body == NULL)
            return;
    }
    KasDeleteOptions o;
    parse_delete_options(req, body, &o);
    g_autoptr(GError) error = NULL;
    gboolean removed = FALSE;
    g_autoptr(KasObj) obj = kas_ops_delete(ctx->store, res, r->ns, r->name, &o, &removed, &error);
    if (obj != NULL && res->kind == KAS_KIND_CUSTOM) {
        obj = convert_obj(ctx, res, r->version, obj, reply);
        if (obj == NULL) {
            json_object_put(body);
            return;
        }
    }
    if (obj == NULL) {
        kas_reply_gerror(reply, error, res, r->name);
    } else if (removed && res->kind == KAS_KIND_POD && !obj->deleting && !wants_table(req)) {
        /* a pod removed at once went through a graceful delete of 0 seconds: the answer
         * shows it as kube-apiserver's does */
        json_object *j = kas_obj_parse(obj);
        json_object *meta = kas_json_ensure_object(j, "metadata");
        g_autofree char *now = kas_time_format(g_get_real_time() / G_USEC_PER_SEC);
        kas_json_set_string(meta, "deletionTimestamp", now);
        json_object_object_add(meta, "deletionGracePeriodSeconds", json_object_new_int(0));
        g_autofree char *av = kas_res_api_version(res, r->version);
        kas_json_set_string(j, "apiVersion", av);
        reply->status = 200;
        g_autofree char *text = kas_json_dump(j);
        g_string_assign(reply->body, text);
        json_object_put(j);
    } else {
        reply_object(reply, 200, req, res, r->version, obj);
    }
    json_object_put(body);
}

static void do_delete_collection(const KasRestContext *ctx, const KasRequest *req, const Route *r,
                                 KasRes *res, KasReply *reply)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KasSelector) labels = NULL;
    g_autoptr(KasSelector) fields = NULL;
    if (!parse_selectors(req, res, &labels, &fields, &error)) {
        kas_reply_gerror(reply, error, NULL, NULL);
        return;
    }
    KasListOptions lo = { .ns = r->ns, .labels = labels, .fields = fields };
    gboolean more;
    guint64 remaining;
    kas_store_lock(ctx->store);
    g_autoptr(GPtrArray) objs = kas_store_list_locked(ctx->store, res, &lo, &more, &remaining);
    guint64 rv = kas_store_rv_locked(ctx->store);
    kas_store_unlock(ctx->store);
    KasDeleteOptions o;
    parse_delete_options(req, NULL, &o);
    g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func((GDestroyNotify)kas_obj_unref);
    for (guint i = 0; i < objs->len; i++) {
        KasObj *cur = g_ptr_array_index(objs, i);
        KasObj *d = kas_ops_delete(ctx->store, res, cur->ns, cur->name, &o, NULL, NULL);
        if (d != NULL)
            g_ptr_array_add(done, d);
    }
    if (!convert_objs(ctx->convert, res, r->version, done, TRUE, reply))
        return;
    reply->status = 200;
    append_list(reply->body, res, r->version, done, rv, NULL, -1);
}

static gboolean patch_type(const char *ct, KasPatchType *out)
{
    if (ct == NULL)
        return FALSE;
    if (g_str_has_prefix(ct, "application/merge-patch+json"))
        *out = KAS_PATCH_MERGE;
    else if (g_str_has_prefix(ct, "application/json-patch+json"))
        *out = KAS_PATCH_JSON;
    else if (g_str_has_prefix(ct, "application/strategic-merge-patch+json"))
        *out = KAS_PATCH_STRATEGIC;
    else
        return FALSE;
    return TRUE;
}

static void do_patch(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                     gboolean status, KasReply *reply)
{
    KasPatchType type;
    if (!patch_type(req->content_type, &type) &&
        (req->content_type == NULL || !g_str_has_prefix(req->content_type, "application/apply-patch"))) {
        /* kube-apiserver's answer to a patch type it does not know, empty details included */
        g_autoptr(GError) e = NULL;
        kas_status_set(&e, KAS_ERR_UNSUPPORTED_TYPE, json_object_new_object(),
                       "415: Unsupported Media Type");
        kas_reply_gerror(reply, e, NULL, NULL);
        return;
    }
    if (!patch_type(req->content_type, &type)) {
        const char *ct = req->content_type != NULL ? req->content_type : "";
        g_autofree char *msg = g_strdup_printf(
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/strategic-merge-patch+json (got \"%s\"; server-side apply is not "
            "supported by this server)",
            ct);
        kas_reply_error(reply, KAS_ERR_UNSUPPORTED_TYPE, msg, NULL, NULL);
        return;
    }
    g_autoptr(GError) error = NULL;
    gboolean convert = ctx->convert != NULL && strcmp(r->version, res->storage_version) != 0 &&
                       kas_convert_webhook(ctx->store, res);
    /* a scheduler's claim allocation (one per DRA pod) read from its text, not parsed */
    g_autoptr(KasObj) spliced = NULL;
    if (status && type == KAS_PATCH_MERGE && !convert && req->content_type != NULL &&
        strstr(req->content_type, "yaml") == NULL &&
        strstr(req->content_type, "protobuf") == NULL &&
        kas_ops_claim_status_text(ctx->store, res, r->ns, r->name, req->body, req->body_len,
                                  &spliced, &error)) {
        if (spliced == NULL)
            reply_any_error(reply, error, res, r->name);
        else
            reply_object(reply, 200, req, res, r->version, spliced);
        return;
    }
    json_object *patch = parse_body(req, reply);
    if (patch == NULL)
        return;
    g_autoptr(KasObj) obj =
            convert ? kas_convert_patch(ctx->convert, ctx->store, res, r->version, r->ns, r->name,
                                        type, patch, status, &error)
                    : kas_ops_patch(ctx->store, res, r->version, r->ns, r->name, type, patch,
                                    status, &error);
    json_object_put(patch);
    if (obj != NULL && res->kind == KAS_KIND_CUSTOM)
        obj = convert_obj(ctx, res, r->version, obj, reply);
    else if (obj == NULL)
        reply_any_error(reply, error, res, r->name);
    if (obj != NULL)
        reply_object(reply, 200, req, res, r->version, obj);
}

/* A body written in @version of a resource with a conversion webhook is converted to the storage
 * version first (*@body replaced, *@version_out the storage version), as kube-apiserver encodes it
 * for storage. A body naming another apiVersion or kind is left as it is, for the usual error. */
static gboolean to_storage_version(const KasRestContext *ctx, KasRes *res, const char *version,
                                   json_object **body, const char **version_out, GError **error)
{
    *version_out = version;
    if (ctx->convert == NULL || strcmp(version, res->storage_version) == 0 ||
        !json_object_is_type(*body, json_type_object) || !kas_convert_webhook(ctx->store, res))
        return TRUE;
    g_autofree char *want = kas_res_api_version(res, version);
    const char *av = kas_json_get_string(*body, "apiVersion");
    const char *kind = kas_json_get_string(*body, "kind");
    if ((av != NULL && strcmp(av, want) != 0) || (kind != NULL && strcmp(kind, res->kind_name) != 0))
        return TRUE;
    kas_json_set_string(*body, "apiVersion", want);
    kas_json_set_string(*body, "kind", res->kind_name);
    if (!kas_convert_json(ctx->convert, res, res->storage_version, body, error))
        return FALSE;
    *version_out = res->storage_version;
    return TRUE;
}

static void do_write(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                     gboolean status, KasReply *reply)
{
    json_object *body = parse_body(req, reply);
    if (body == NULL)
        return;
    g_autoptr(GError) error = NULL;
    gboolean create = strcmp(req->method, "POST") == 0;
    const char *version = r->version;
    if (!to_storage_version(ctx, res, r->version, &body, &version, &error)) {
        reply_any_error(reply, error, res, r->name);
        json_object_put(body);
        return;
    }
    KasObj *obj = create ? kas_ops_create(ctx->store, res, version, r->ns, body, &error)
                         : kas_ops_update(ctx->store, res, version, r->ns, r->name, body, status,
                                          &error);
    if (obj != NULL && res->kind == KAS_KIND_CUSTOM)
        obj = convert_obj(ctx, res, r->version, obj, reply);
    else if (obj == NULL) {
        const char *name = r->name != NULL ? r->name : kas_json_get_string(body, "metadata.name");
        kas_reply_gerror(reply, error, res, name);
    }
    if (obj != NULL) {
        reply_object(reply, create ? 201 : 200, req, res, r->version, obj);
        kas_obj_unref(obj);
    }
    json_object_put(body);
}

/* ---- pod subresources -------------------------------------------------------------------------------------- */

static void do_pod_sub(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                       KasReply *reply)
{
    g_autoptr(GError) error = NULL;
    if (strcmp(r->sub, "log") == 0) {
        if (strcmp(req->method, "GET") != 0)
            goto method;
        kas_log_handle(ctx->store, res, req, r->ns, r->name, reply);
        return;
    }
    if (strcmp(r->sub, "binding") != 0 && strcmp(r->sub, "eviction") != 0) {
        kas_reply_error(reply, KAS_ERR_NOT_FOUND, "the server could not find the requested resource",
                        NULL, NULL);
        return;
    }
    if (strcmp(req->method, "POST") != 0)
        goto method;
    json_object *body = r->sub[0] == 'b' ? parse_binding_body(req, reply) : parse_body(req, reply);
    if (body == NULL)
        return;
    gboolean ok = r->sub[0] == 'b' ? kas_ops_bind(ctx->store, r->ns, r->name, body, &error)
                                   : kas_ops_evict(ctx->store, r->ns, r->name, body, &error);
    json_object_put(body);
    if (!ok)
        kas_reply_gerror(reply, error, res, r->name);
    else
        reply_success_status(reply, 201);
    return;
method:
    kas_reply_error(reply, KAS_ERR_METHOD, "the server does not allow this method on the requested resource",
                    res, r->name);
}

/* ---- dispatch ------------------------------------------------------------------------------------------------ */

static void do_collection(const KasRestContext *ctx, const KasRequest *req, const Route *r,
                          KasRes *res, KasReply *reply)
{
    if (strcmp(req->method, "GET") == 0) {
        if (r->watch_prefix || q_true(req, "watch"))
            do_watch(ctx, req, r, res, reply);
        else
            do_list(ctx, req, r, res, reply);
    } else if (strcmp(req->method, "POST") == 0 && (r->ns != NULL || !res->namespaced)) {
        do_write(ctx, req, r, res, FALSE, reply);
    } else if (strcmp(req->method, "DELETE") == 0) {
        do_delete_collection(ctx, req, r, res, reply);
    } else {
        kas_reply_error(reply, KAS_ERR_METHOD,
                        "the server does not allow this method on the requested resource", res, NULL);
    }
}

static void do_item(const KasRestContext *ctx, const KasRequest *req, const Route *r, KasRes *res,
                    gboolean status, KasReply *reply)
{
    const char *m = req->method;
    if (strcmp(m, "GET") == 0 && (r->watch_prefix || q_true(req, "watch"))) {
        do_watch(ctx, req, r, res, reply);
    } else if (strcmp(m, "GET") == 0) {
        kas_store_lock(ctx->store);
        KasObj *obj = kas_store_get_locked(ctx->store, res, r->ns, r->name);
        if (obj != NULL)
            kas_obj_ref(obj);
        kas_store_unlock(ctx->store);
        if (obj == NULL) {
            g_autofree char *qn = kas_res_qualified(res);
            g_autofree char *msg = g_strdup_printf("%s \"%s\" not found", qn, r->name);
            kas_reply_error(reply, KAS_ERR_NOT_FOUND, msg, res, r->name);
            return;
        }
        obj = convert_obj(ctx, res, r->version, obj, reply);
        if (obj == NULL)
            return;
        reply_object(reply, 200, req, res, r->version, obj);
        kas_obj_unref(obj);
    } else if (strcmp(m, "PUT") == 0) {
        do_write(ctx, req, r, res, status, reply);
    } else if (strcmp(m, "PATCH") == 0) {
        do_patch(ctx, req, r, res, status, reply);
    } else if (strcmp(m, "DELETE") == 0 && !status) {
        do_delete(ctx, req, r, res, reply);
    } else {
        kas_reply_error(reply, KAS_ERR_METHOD,
                        "the server does not allow this method on the requested resource", res, r->name);
    }
}

static void not_found(KasReply *reply)
{
    kas_reply_error(reply, KAS_ERR_NOT_FOUND, "the server could not find the requested resource",
                    NULL, NULL);
}

/* Does any active resource serve @group/@version? Paths outside every served group/version get
 * the Go mux's plain "404 page not found", as kube-apiserver answers them. */
static gboolean group_version_served(KasStore *store, const char *group, const char *version)
{
    gboolean served = FALSE;
    kas_store_lock(store);
    GPtrArray *all = kas_store_resources_locked(store);
    for (guint i = 0; i < all->len && !served; i++) {
        KasRes *res = g_ptr_array_index(all, i);
        served = res->active && strcmp(res->group, group) == 0 &&
                 g_strv_contains((const char *const *)res->versions, version);
    }
    kas_store_unlock(store);
    return served;
}

void kas_rest_handle(const KasRestContext *ctx, const KasRequest *req, KasReply *reply)
{
    if ((g_str_has_prefix(req->path, "/api/") || g_str_has_prefix(req->path, "/apis/")) &&
        !accept_ok(req)) {
        kas_reply_error(reply, KAS_ERR_NOT_ACCEPTABLE,
                        "only the following media types are accepted: application/json, "
                        "application/json;as=Table;v=v1;g=meta.k8s.io",
                        NULL, NULL);
        return;
    }
    if (kas_discovery_handle(ctx, req, reply))
        return;
    if (strcmp(req->path, "/healthz") == 0 || strcmp(req->path, "/livez") == 0 ||
        strcmp(req->path, "/readyz") == 0) {
        reply_text(reply, 200, "text/plain", g_strdup("ok"));
        return;
    }
    Route r = { 0 };
    if (!route_parse(req->path, &r)) {
        route_clear(&r);
        not_found(reply);
        return;
    }
    kas_store_lock(ctx->store);
    KasRes *res = kas_store_find_locked(ctx->store, r.group, r.version, r.plural);
    kas_store_unlock(ctx->store);
    if (res != NULL && r.ns != NULL && !res->namespaced)
        res = NULL;
    if (res == NULL && r.group[0] == '\0' && strcmp(r.plural, "bindings") == 0 && r.ns != NULL &&
        r.name == NULL && strcmp(req->method, "POST") == 0) {
        /* The legacy POST namespaces/NS/bindings, name taken from the Binding. */
        json_object *body = parse_binding_body(req, reply);
        g_autoptr(GError) error = NULL;
        if (body != NULL && !kas_ops_bind(ctx->store, r.ns, NULL, body, &error))
            kas_reply_gerror(reply, error, NULL, kas_json_get_string(body, "metadata.name"));
        else if (body != NULL)
            reply_success_status(reply, 201);
        json_object_put(body);
    } else if (res == NULL && !group_version_served(ctx->store, r.group, r.version)) {
        reply_text(reply, 404, "text/plain; charset=utf-8", g_strdup("404 page not found\n"));
    } else if (res == NULL) {
        not_found(reply);
    } else if (r.name == NULL) {
        do_collection(ctx, req, &r, res, reply);
    } else if (r.sub == NULL) {
        do_item(ctx, req, &r, res, FALSE, reply);
    } else if (strcmp(r.sub, "status") == 0 && res->has_status) {
        do_item(ctx, req, &r, res, TRUE, reply);
    } else if (res->kind == KAS_KIND_POD) {
        do_pod_sub(ctx, req, &r, res, reply);
    } else {
        not_found(reply);
    }
    route_clear(&r);
}
