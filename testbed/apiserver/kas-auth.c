/* Authentication and authorization of the in-memory API server (see kas-auth.h). */
#include "testbed/apiserver/kas-auth.h"

#include <string.h>

#include "kube/kb-error.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-proto.h"

#define TOKEN_FILE_MAX   (16 * 1024 * 1024)
#define TOKEN_FIELDS_MAX 64
#define AUTHZ_GROUP      "authorization.k8s.io"

typedef enum { MODE_ALWAYS_ALLOW, MODE_ALWAYS_DENY, MODE_RBAC, MODE_NODE } Mode;

struct KasAuth {
    GHashTable *tokens; /* token -> KasUser* */
    gboolean authn;     /* a token file was given */
    GArray *modes;      /* Mode */
    KasRbac *rbac;      /* with MODE_RBAC */
    gint unauthorized;
    gint forbidden;
};

/* ---- request info (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) -----------------------
 */

/* metainternalversion's bool conversion: present and neither "0" nor "false" (any case). */
static gboolean query_bool(GHashTable *query, const char *key)
{
    const char *v = query != NULL ? g_hash_table_lookup(query, key) : NULL;
    return v != NULL && strcmp(v, "0") != 0 && g_ascii_strcasecmp(v, "false") != 0;
}

/* The value a field selector requires metadata.name to equal exactly, or NULL (newly
 * allocated). Terms are comma-separated; '\' escapes ',', '=', '\'. */
static char *field_selector_name(const char *sel)
{
    if (sel == NULL)
        return NULL;
    GString *term = g_string_new(NULL);
    char *found = NULL;
    for (const char *p = sel;; p++) {
        if (*p == '\\' && p[1] != '\0') {
            g_string_append_c(term, '\\');
            g_string_append_c(term, *++p);
            continue;
        }
        if (*p != ',' && *p != '\0') {
            g_string_append_c(term, *p);
            continue;
        }
        const char *t = term->str;
        const char *v = g_str_has_prefix(t, "metadata.name==")  ? t + 15
                        : g_str_has_prefix(t, "metadata.name=") ? t + 14
                                                                : NULL;
        if (v != NULL && found == NULL) {
            GString *un = g_string_new(NULL);
            for (const char *q = v; *q != '\0'; q++)
                g_string_append_c(un, *q == '\\' && q[1] != '\0' ? *++q : *q);
            found = g_string_free(un, FALSE);
        }
        g_string_truncate(term, 0);
        if (*p == '\0')
            break;
    }
    g_string_free(term, TRUE);
    /* path.IsValidPathSegmentName */
    if (found != NULL &&
        (strcmp(found, ".") == 0 || strcmp(found, "..") == 0 || strpbrk(found, "/%") != NULL)) {
        g_clear_pointer(&found, g_free);
    }
    return found;
}

static const char *verb_of_method(const char *method)
{
    if (strcmp(method, "POST") == 0)
        return "create";
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return "get";
    if (strcmp(method, "PUT") == 0)
        return "update";
    if (strcmp(method, "PATCH") == 0)
        return "patch";
    if (strcmp(method, "DELETE") == 0)
        return "delete";
    return "";
}

/* @parts (n of them) after the API prefix, group and version: the resource part. */
static void parse_resource_parts(KasRequestInfo *info, char **parts, guint n, GHashTable *query)
{
    guint i = 0;
    if (n > 0 && strcmp(parts[0], "namespaces") == 0) {
        if (n > 1) {
            info->ns = g_strdup(parts[1]);
            /* namespaces/NS/status and namespaces/NS/finalize are the namespace's subresources. */
            if (n > 2 && strcmp(parts[2], "status") != 0 && strcmp(parts[2], "finalize") != 0)
                i = 2;
        }
    }
    guint left = n - i;
    gboolean proxy = strcmp(info->verb, "proxy") == 0;
    if (left >= 3 && !proxy)
        info->subresource = g_strdup(parts[i + 2]);
    if (left >= 2)
        info->name = g_strdup(parts[i + 1]);
    if (left >= 1)
        info->resource = g_strdup(parts[i]);
    if ((info->name == NULL || info->name[0] == '\0') && strcmp(info->verb, "get") == 0) {
        g_free(info->verb);
        info->verb = g_strdup(query_bool(query, "watch") ? "watch" : "list");
        g_free(info->name);
        info->name = field_selector_name(query != NULL ? g_hash_table_lookup(query, "fieldSelector")
                                                       : NULL);
    }
    if ((info->name == NULL || info->name[0] == '\0') && strcmp(info->verb, "delete") == 0) {
        g_free(info->verb);
        info->verb = g_strdup("deletecollection");
    }
}

void kas_request_info_parse(KasRequestInfo *info, const char *method, const char *path,
                            GHashTable *query)
{
    memset(info, 0, sizeof *info);
    info->path = g_strdup(path);
    info->verb = g_ascii_strdown(method, -1);
    /* splitPath: trim slashes at both ends, then split. */
    g_autofree char *trimmed = g_strdup(path);
    char *t = trimmed;
    while (*t == '/')
        t++;
    gsize len = strlen(t);
    while (len > 0 && t[len - 1] == '/')
        t[--len] = '\0';
    g_auto(GStrv) parts = len > 0 ? g_strsplit(t, "/", -1) : g_new0(char *, 1);
    guint n = g_strv_length(parts);
    if (n < 3)
        return;
    guint i;
    if (strcmp(parts[0], "api") == 0) {
        info->group = g_strdup("");
        i = 1;
    } else if (strcmp(parts[0], "apis") == 0 && n >= 4) {
        info->group = g_strdup(parts[1]);
        i = 2;
    } else {
        return;
    }
    info->resource_request = TRUE;
    info->version = g_strdup(parts[i++]);
    if (strcmp(parts[i], "proxy") == 0 || strcmp(parts[i], "watch") == 0) {
        /* /{specialVerb}/...: with nothing after it the real server answers 404; the verb
         * stays the method's and no resource is named. */
        if (n - i < 2) {
            g_free(info->verb);
            info->verb = g_strdup(verb_of_method(method));
            return;
        }
        g_free(info->verb);
        info->verb = g_strdup(parts[i++]);
    } else {
        g_free(info->verb);
        info->verb = g_strdup(verb_of_method(method));
    }
    parse_resource_parts(info, parts + i, n - i, query);
}

void kas_request_info_clear(KasRequestInfo *info)
{
    g_free(info->verb);
    g_free(info->path);
    g_free(info->group);
    g_free(info->version);
    g_free(info->ns);
    g_free(info->resource);
    g_free(info->subresource);
    g_free(info->name);
    memset(info, 0, sizeof *info);
}

/* ---- the token file (k8s.io/apiserver/plugin/pkg/authenticator/token/tokenfile) -----------------
 */

/* One CSV record starting at *@p (encoding/csv: quoted fields with "" for a quote); advances *@p
 * past the line. NULL for a blank line. */
static GPtrArray *csv_record(const char **p, const char *end, GError **error)
{
    const char *s = *p;
    GPtrArray *fields = g_ptr_array_new_with_free_func(g_free);
    GString *f = g_string_new(NULL);
    gboolean quoted = FALSE, was_quoted = FALSE, any = FALSE;
    while (s < end) {
        char c = *s++;
        if (quoted) {
            if (c == '"' && s < end && *s == '"') {
                g_string_append_c(f, '"');
                s++;
            } else if (c == '"') {
                quoted = FALSE;
            } else {
                g_string_append_c(f, c);
            }
            continue;
        }
        if (c == '\n')
            break;
        if (c == '\r' && (s == end || *s == '\n'))
            continue;
        any = TRUE;
        if (c == ',') {
            g_ptr_array_add(fields, g_string_free(f, FALSE));
            f = g_string_new(NULL);
            was_quoted = FALSE;
        } else if (c == '"' && f->len == 0 && !was_quoted) {
            quoted = was_quoted = TRUE;
        } else if (c == '"') {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "bare \" in non-quoted field");
            break;
        } else {
            g_string_append_c(f, c);
        }
        if (fields->len > TOKEN_FIELDS_MAX) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "more than %d fields", TOKEN_FIELDS_MAX);
            break;
        }
    }
    if (quoted && (error == NULL || *error == NULL))
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "extraneous or missing \" in quoted-field");
    any = any || was_quoted;
    g_ptr_array_add(fields, g_string_free(f, FALSE));
    *p = s;
    if ((error != NULL && *error != NULL) || !any) {
        g_ptr_array_unref(fields);
        return NULL;
    }
    return fields;
}

static gboolean load_tokens(KasAuth *auth, const char *file, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(file, &text, &len, error)) {
        g_prefix_error(error, "--token-auth-file: ");
        return FALSE;
    }
    if (len > TOKEN_FILE_MAX) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "--token-auth-file %s: %zu bytes, more than the limit of %d", file, len,
                    TOKEN_FILE_MAX);
        return FALSE;
    }
    const char *p = text, *end = text + len;
    for (guint line = 1, rec = 0; p < end; line++) {
        g_autoptr(GError) local = NULL;
        g_autoptr(GPtrArray) r = csv_record(&p, end, &local);
        if (local != NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "--token-auth-file %s: line %u: %s", file,
                        line, local->message);
            return FALSE;
        }
        if (r == NULL)
            continue;
        if (r->len < 3) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "--token-auth-file %s: line %u: must have at least 3 columns (token, user "
                        "name, user uid), found %u",
                        file, line, r->len);
            return FALSE;
        }
        rec++;
        const char *token = g_ptr_array_index(r, 0);
        if (token[0] == '\0') {
            g_warning("--token-auth-file %s: record %u (line %u): empty token, skipped", file, rec,
                      line);
            continue;
        }
        if (g_hash_table_contains(auth->tokens, token))
            g_warning("--token-auth-file %s: record %u (line %u): duplicate token, the later one "
                      "counts",
                      file, rec, line);
        g_auto(GStrv) groups = r->len >= 4 ? g_strsplit(g_ptr_array_index(r, 3), ",", -1) : NULL;
        g_hash_table_replace(auth->tokens, g_strdup(token),
                             kas_user_new(g_ptr_array_index(r, 1), g_ptr_array_index(r, 2),
                                          (const char *const *)groups));
    }
    return TRUE;
}

/* ---- authentication
 * ------------------------------------------------------------------------------ */

static void add_group(GPtrArray *groups, const char *g)
{
    for (guint i = 0; i < groups->len; i++)
        if (strcmp(g_ptr_array_index(groups, i), g) == 0)
            return;
    g_ptr_array_add(groups, g_strdup(g));
}

/* @u with the groups a cluster gives it: ServiceAccount groups, then system:authenticated
 * (unless it already is in it or in system:unauthenticated, as AuthenticatedGroupAdder). */
static KasUser *with_groups(const KasUser *u)
{
    g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; u->groups[i] != NULL; i++)
        g_ptr_array_add(groups, g_strdup(u->groups[i]));
    const char *sa = "system:serviceaccount:";
    if (g_str_has_prefix(u->name, sa)) {
        g_auto(GStrv) nn = g_strsplit(u->name + strlen(sa), ":", -1);
        if (g_strv_length(nn) == 2 && nn[0][0] != '\0' && nn[1][0] != '\0') {
            add_group(groups, "system:serviceaccounts");
            g_autofree char *g = g_strdup_printf("system:serviceaccounts:%s", nn[0]);
            add_group(groups, g);
        }
    }
    if (!kas_user_in_group(u, "system:authenticated") &&
        !kas_user_in_group(u, "system:unauthenticated"))
        add_group(groups, "system:authenticated");
    g_ptr_array_add(groups, NULL);
    return kas_user_new(u->name, u->uid, (const char *const *)groups->pdata);
}

KasUser *kas_auth_authenticate(KasAuth *auth, const char *authorization)
{
    static const char *const anon_groups[] = {"system:unauthenticated", NULL};
    if (auth->authn && authorization != NULL) {
        /* bearertoken.go: "Bearer T" (any case), split on single spaces; an empty token is no
         * credential at all. */
        g_autofree char *a = g_strstrip(g_strdup(authorization));
        g_auto(GStrv) parts = g_strsplit(a, " ", -1);
        if (g_strv_length(parts) >= 2 && g_ascii_strcasecmp(parts[0], "bearer") == 0 &&
            parts[1][0] != '\0') {
            const KasUser *u = g_hash_table_lookup(auth->tokens, parts[1]);
            return u != NULL ? with_groups(u) : NULL;
        }
    }
    return kas_user_new("system:anonymous", "", anon_groups);
}

/* ---- authorization
 * ------------------------------------------------------------------------------- */

gboolean kas_auth_authorize(KasAuth *auth, const KasAttrs *attrs, char **reason)
{
    if (kas_user_in_group(attrs->user, "system:masters")) {
        if (reason != NULL)
            *reason = g_strdup("");
        return TRUE;
    }
    g_autoptr(GPtrArray) reasons = g_ptr_array_new_with_free_func(g_free);
    gboolean allowed = FALSE;
    for (guint i = 0; i < auth->modes->len && !allowed; i++) {
        char *why = NULL;
        switch (g_array_index(auth->modes, Mode, i)) {
        case MODE_ALWAYS_ALLOW:
            allowed = TRUE;
            break;
        case MODE_ALWAYS_DENY:
            why = g_strdup("Everything is forbidden.");
            break;
        case MODE_RBAC:
            allowed = kas_rbac_authorize(auth->rbac, attrs, &why);
            break;
        case MODE_NODE:
            break;
        }
        if (allowed)
            g_ptr_array_set_size(reasons, 0);
        if (why != NULL && why[0] != '\0')
            g_ptr_array_add(reasons, why);
        else
            g_free(why);
    }
    if (reason != NULL) {
        g_ptr_array_add(reasons, NULL);
        *reason = g_strjoinv("\n", (char **)reasons->pdata);
    }
    return allowed;
}

/* ---- replies
 * ------------------------------------------------------------------------------------- */

static void status_reply(KasReply *reply, guint code, const char *reason, const char *message,
                         json_object *details)
{
    json_object *st = json_object_new_object();
    kas_json_set_string(st, "kind", "Status");
    kas_json_set_string(st, "apiVersion", "v1");
    json_object_object_add(st, "metadata", json_object_new_object());
    kas_json_set_string(st, "status", "Failure");
    kas_json_set_string(st, "message", message);
    kas_json_set_string(st, "reason", reason);
    if (details != NULL)
        json_object_object_add(st, "details", details);
    json_object_object_add(st, "code", json_object_new_int((int)code));
    reply->status = code;
    reply->content_type = "application/json";
    g_autofree char *s = kas_json_dump(st);
    g_string_assign(reply->body, s);
    json_object_put(st);
}

/* responsewriters.Forbidden: "<resource[.group]> [\"name\"] is forbidden: User ... cannot ...". */
static void forbidden_reply(KasReply *reply, const KasAttrs *a, const char *reason)
{
    g_autofree char *what = NULL;
    if (!a->resource_request) {
        what = g_strdup_printf("User \"%s\" cannot %s path \"%s\"", a->user->name, a->verb,
                               a->path);
    } else {
        g_autofree char *res = a->subresource != NULL && a->subresource[0] != '\0'
                                       ? g_strdup_printf("%s/%s", a->resource, a->subresource)
                                       : g_strdup(a->resource != NULL ? a->resource : "");
        if (a->ns != NULL && a->ns[0] != '\0')
            what = g_strdup_printf("User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in "
                                   "the namespace \"%s\"",
                                   a->user->name, a->verb, res, a->group, a->ns);
        else
            what = g_strdup_printf("User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at "
                                   "the cluster scope",
                                   a->user->name, a->verb, res, a->group);
    }
    if (reason != NULL && reason[0] != '\0') {
        char *with = g_strdup_printf("%s: %s", what, reason);
        g_free(what);
        what = with;
    }
    const char *group = a->resource_request && a->group != NULL ? a->group : "";
    const char *resource = a->resource_request && a->resource != NULL ? a->resource : "";
    const char *name = a->resource_request && a->name != NULL ? a->name : "";
    g_autofree char *qualified =
            group[0] != '\0' ? g_strdup_printf("%s.%s", resource, group) : g_strdup(resource);
    g_autofree char *message = NULL;
    if (group[0] == '\0' && resource[0] == '\0')
        message = g_strdup_printf("forbidden: %s", what);
    else if (name[0] == '\0')
        message = g_strdup_printf("%s is forbidden: %s", qualified, what);
    else
        message = g_strdup_printf("%s \"%s\" is forbidden: %s", qualified, name, what);
    json_object *details = json_object_new_object();
    if (name[0] != '\0')
        kas_json_set_string(details, "name", name);
    if (group[0] != '\0')
        kas_json_set_string(details, "group", group);
    if (resource[0] != '\0')
        kas_json_set_string(details, "kind", resource);
    status_reply(reply, 403, "Forbidden", message, details);
    g_message("forbidden: %s", message);
}

/* ---- access reviews (pkg/registry/authorization)
 * ------------------------------------------------- */

static const char *const res_attr_keys[] = {"namespace", "verb",        "group", "version",
                                            "resource",  "subresource", "name",  NULL};
static const char *const nonres_attr_keys[] = {"path", "verb", NULL};

/* The attributes object @in (may be NULL) with @keys in the real server's order, empty strings
 * dropped (new), or NULL when @in is not an object. */
static json_object *attrs_echo(json_object *in, const char *const *keys)
{
    if (!json_object_is_type(in, json_type_object))
        return NULL;
    json_object *out = json_object_new_object();
    for (guint i = 0; keys[i] != NULL; i++) {
        const char *v = kas_json_get_string(in, keys[i]);
        if (v != NULL && v[0] != '\0')
            kas_json_set_string(out, keys[i], v);
    }
    return out;
}

/* ---- the protobuf form of a review (k8s.io/api/authorization/v1/generated.proto) ------------- */

static void pb_string(json_object *obj, const char *key, KasPb s)
{
    json_object_object_add(obj, key,
                           json_object_new_string_len((const char *)s.p, (int)(s.end - s.p)));
}

/* Attributes message @b with string fields named by @keys (field i+1 is keys[i]). */
static json_object *pb_attrs(KasPb b, const char *const *keys, gboolean *bad)
{
    json_object *o = json_object_new_object();
    guint num;
    KasPb sub;
    while (kas_pb_next(&b, &num, &sub, bad))
        if (num >= 1 && num <= g_strv_length((char **)keys))
            pb_string(o, keys[num - 1], sub);
    return o;
}

static json_object *pb_spec(KasPb b, gboolean *bad)
{
    json_object *spec = json_object_new_object();
    json_object *groups = json_object_new_array();
    guint num;
    KasPb sub;
    while (kas_pb_next(&b, &num, &sub, bad)) {
        if (num == 1)
            json_object_object_add(spec, "resourceAttributes", pb_attrs(sub, res_attr_keys, bad));
        else if (num == 2)
            json_object_object_add(spec, "nonResourceAttributes",
                                   pb_attrs(sub, nonres_attr_keys, bad));
        else if (num == 3)
            pb_string(spec, "user", sub);
        else if (num == 4)
            json_object_array_add(groups, json_object_new_string_len((const char *)sub.p,
                                                                     (int)(sub.end - sub.p)));
        else if (num == 6)
            pb_string(spec, "uid", sub);
    }
    json_object_object_add(spec, "groups", groups);
    return spec;
}

/* "k8s\0" + runtime.Unknown{raw: SubjectAccessReview{spec}} as the JSON the rest reads. */
static json_object *review_from_protobuf(const guchar *data, gsize len, GError **error)
{
    gboolean bad = FALSE;
    json_object *out = NULL;
    KasPb raw, kind, sub;
    if (kas_pb_unwrap(data, len, &raw, &kind)) {
        guint num;
        out = json_object_new_object();
        while (kas_pb_next(&raw, &num, &sub, &bad))
            if (num == 2)
                json_object_object_add(out, "spec", pb_spec(sub, &bad));
    } else {
        bad = TRUE;
    }
    if (bad) {
        json_object_put(out);
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "malformed protobuf review");
        return NULL;
    }
    return out;
}

static void invalid_review(KasReply *reply, const char *kind, const char *field, const char *value,
                           const char *detail)
{
    g_autofree char *cause = g_strdup_printf("Invalid value: %s: %s", value, detail);
    g_autofree char *msg =
            g_strdup_printf("%s." AUTHZ_GROUP " \"\" is invalid: %s: %s", kind, field, cause);
    json_object *details = json_object_new_object();
    kas_json_set_string(details, "group", AUTHZ_GROUP);
    kas_json_set_string(details, "kind", kind);
    json_object *causes = json_object_new_array();
    json_object *c = json_object_new_object();
    kas_json_set_string(c, "reason", "FieldValueInvalid");
    kas_json_set_string(c, "message", cause);
    kas_json_set_string(c, "field", field);
    json_object_array_add(causes, c);
    json_object_object_add(details, "causes", causes);
    status_reply(reply, 422, "Invalid", msg, details);
}

static gboolean review_user(json_object *spec, KasUser **out, KasReply *reply)
{
    const char *name = kas_json_get_string(spec, "user");
    g_auto(GStrv) groups = NULL;
    json_object *ga = kas_json_get(spec, "groups");
    GPtrArray *g = g_ptr_array_new();
    for (size_t i = 0; json_object_is_type(ga, json_type_array) && i < json_object_array_length(ga);
         i++) {
        json_object *s = json_object_array_get_idx(ga, i);
        if (json_object_is_type(s, json_type_string))
            g_ptr_array_add(g, g_strdup(json_object_get_string(s)));
    }
    g_ptr_array_add(g, NULL);
    groups = (char **)g_ptr_array_free(g, FALSE);
    if ((name == NULL || name[0] == '\0') && groups[0] == NULL) {
        invalid_review(reply, "SubjectAccessReview", "spec.user", "\"\"",
                       "at least one of user or group must be specified");
        return FALSE;
    }
    *out = kas_user_new(name != NULL ? name : "", kas_json_get_string(spec, "uid"),
                        (const char *const *)groups);
    return TRUE;
}

static void serve_review(KasAuth *auth, const KasRequest *req, const KasUser *self,
                         gboolean is_self, KasReply *reply)
{
    const char *kind = is_self ? "SelfSubjectAccessReview" : "SubjectAccessReview";
    g_autoptr(GError) error = NULL;
    json_object *body = NULL;
    if (req->content_type != NULL && g_str_has_prefix(req->content_type, KB_PROTO_CONTENT_TYPE)) {
        /* kubectl auth can-i sends protobuf (and accepts JSON back). */
        body = review_from_protobuf((const guchar *)req->body, req->body_len, &error);
    } else if (req->content_type != NULL && strstr(req->content_type, "json") == NULL) {
        g_autofree char *msg = g_strdup_printf(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json, application/yaml, " KB_PROTO_CONTENT_TYPE " (got \"%s\")",
                req->content_type);
        status_reply(reply, 415, "UnsupportedMediaType", msg, NULL);
        return;
    } else {
        body = kas_json_parse(req->body != NULL ? req->body : "", req->body_len, &error);
    }
    if (body == NULL) {
        g_autofree char *msg =
                g_strdup_printf("couldn't decode the request body: %s", error->message);
        status_reply(reply, 400, "BadRequest", msg, NULL);
        return;
    }
    json_object *spec = kas_json_get(body, "spec");
    json_object *ra = attrs_echo(kas_json_get(spec, "resourceAttributes"), res_attr_keys);
    json_object *na = attrs_echo(kas_json_get(spec, "nonResourceAttributes"), nonres_attr_keys);
    g_autoptr(KasUser) user = NULL;
    if ((ra == NULL) == (na == NULL)) {
        const char *field = ra != NULL ? "spec.nonResourceAttributes" : "spec.resourceAttributes";
        const char *detail =
                ra != NULL ? "cannot be specified in combination with resourceAttributes"
                           : "exactly one of nonResourceAttributes or resourceAttributes must be "
                             "specified";
        invalid_review(reply, kind, field, ra != NULL ? "{}" : "\"null\"", detail);
    } else if (is_self || review_user(spec, &user, reply)) {
        KasAttrs a = {.user = is_self ? self : user, .resource_request = ra != NULL};
        json_object *src = ra != NULL ? ra : na;
        a.verb = kas_json_get_string(src, "verb");
        a.verb = a.verb != NULL ? a.verb : "";
        a.path = kas_json_get_string(src, "path");
        a.ns = kas_json_get_string(src, "namespace");
        a.group = kas_json_get_string(src, "group");
        a.group = a.group != NULL ? a.group : "";
        a.version = kas_json_get_string(src, "version");
        a.resource = kas_json_get_string(src, "resource");
        a.subresource = kas_json_get_string(src, "subresource");
        a.name = kas_json_get_string(src, "name");
        g_autofree char *why = NULL;
        gboolean ok = kas_auth_authorize(auth, &a, &why);
        json_object *out = json_object_new_object();
        kas_json_set_string(out, "kind", kind);
        kas_json_set_string(out, "apiVersion", AUTHZ_GROUP "/v1");
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "creationTimestamp", NULL);
        json_object_object_add(out, "metadata", meta);
        json_object *os = json_object_new_object();
        json_object_object_add(os, ra != NULL ? "resourceAttributes" : "nonResourceAttributes",
                               json_object_get(src));
        if (!is_self) {
            if (user->name[0] != '\0')
                kas_json_set_string(os, "user", user->name);
            if (user->groups[0] != NULL)
                json_object_object_add(os, "groups", json_object_get(kas_json_get(spec, "groups")));
            if (user->uid[0] != '\0')
                kas_json_set_string(os, "uid", user->uid);
        }
        json_object_object_add(out, "spec", os);
        json_object *st = json_object_new_object();
        json_object_object_add(st, "allowed", json_object_new_boolean(ok));
        if (why[0] != '\0')
            kas_json_set_string(st, "reason", why);
        json_object_object_add(out, "status", st);
        reply->status = 201;
        reply->content_type = "application/json";
        g_autofree char *s = kas_json_dump(out);
        g_string_assign(reply->body, s);
        json_object_put(out);
    }
    json_object_put(ra);
    json_object_put(na);
    json_object_put(body);
}

/* ---- the hook
 * ------------------------------------------------------------------------------------ */

static gboolean review_path(const KasRequestInfo *ri, gboolean *is_self)
{
    if (!ri->resource_request || strcmp(ri->group, AUTHZ_GROUP) != 0 ||
        strcmp(ri->version, "v1") != 0 || ri->ns != NULL || ri->name != NULL ||
        ri->resource == NULL)
        return FALSE;
    *is_self = strcmp(ri->resource, "selfsubjectaccessreviews") == 0;
    return *is_self || strcmp(ri->resource, "subjectaccessreviews") == 0;
}

gboolean kas_auth_serve(KasAuth *auth, const KasRequest *req, const char *authorization,
                        KasReply *reply)
{
    if (kas_auth_is_open(auth) && !g_str_has_prefix(req->path, "/apis/" AUTHZ_GROUP "/"))
        return FALSE;
    g_autoptr(KasUser) user = kas_auth_authenticate(auth, authorization);
    if (user == NULL) {
        g_atomic_int_inc(&auth->unauthorized);
        status_reply(reply, 401, "Unauthorized", "Unauthorized", NULL);
        return TRUE;
    }
    KasRequestInfo ri;
    kas_request_info_parse(&ri, req->method, req->path, req->query);
    KasAttrs a = {.user = user,
                  .resource_request = ri.resource_request,
                  .verb = ri.verb,
                  .path = ri.path,
                  .ns = ri.ns,
                  .group = ri.group != NULL ? ri.group : "",
                  .version = ri.version,
                  .resource = ri.resource,
                  .subresource = ri.subresource,
                  .name = ri.name};
    g_autofree char *why = NULL;
    gboolean answered = TRUE, is_self = FALSE;
    if (!kas_auth_authorize(auth, &a, &why)) {
        g_atomic_int_inc(&auth->forbidden);
        forbidden_reply(reply, &a, why);
    } else if (review_path(&ri, &is_self)) {
        if (strcmp(req->method, "POST") == 0)
            serve_review(auth, req, user, is_self, reply);
        else
            status_reply(reply, 405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", NULL);
    } else {
        answered = FALSE;
    }
    kas_request_info_clear(&ri);
    return answered;
}

/* ---- life cycle
 * ---------------------------------------------------------------------------------- */

static gboolean parse_modes(KasAuth *auth, const char *spec, GError **error)
{
    g_auto(GStrv) names = g_strsplit(spec, ",", -1);
    for (guint i = 0; names[i] != NULL; i++) {
        const char *n = g_strstrip(names[i]);
        Mode m;
        if (strcmp(n, "AlwaysAllow") == 0) {
            m = MODE_ALWAYS_ALLOW;
        } else if (strcmp(n, "AlwaysDeny") == 0) {
            m = MODE_ALWAYS_DENY;
        } else if (strcmp(n, "RBAC") == 0) {
            m = MODE_RBAC;
        } else if (strcmp(n, "Node") == 0) {
            m = MODE_NODE;
        } else {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "--authorization-mode \"%s\": unknown or unsupported mode \"%s\" (this "
                        "server knows AlwaysAllow, AlwaysDeny, RBAC, Node)",
                        spec, n);
            return FALSE;
        }
        for (guint k = 0; k < auth->modes->len; k++) {
            if (g_array_index(auth->modes, Mode, k) == m) {
                g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                            "--authorization-mode \"%s\": mode \"%s\" given twice", spec, n);
                return FALSE;
            }
        }
        g_array_append_val(auth->modes, m);
    }
    return TRUE;
}

KasAuth *kas_auth_new(KasStore *store, const KasAuthOptions *opts, GError **error)
{
    g_autoptr(KasAuth) auth = g_new0(KasAuth, 1);
    auth->tokens =
            g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)kas_user_free);
    auth->modes = g_array_new(FALSE, FALSE, sizeof(Mode));
    auth->rbac = kas_rbac_new(store);
    const char *modes = opts != NULL && opts->authorization_mode != NULL ? opts->authorization_mode
                                                                         : "AlwaysAllow";
    if (!parse_modes(auth, modes, error))
        return NULL;
    if (opts != NULL && opts->token_file != NULL) {
        auth->authn = TRUE;
        if (!load_tokens(auth, opts->token_file, error))
            return NULL;
    }
    return g_steal_pointer(&auth);
}

void kas_auth_free(KasAuth *auth)
{
    if (auth == NULL)
        return;
    g_hash_table_unref(auth->tokens);
    g_array_unref(auth->modes);
    kas_rbac_free(auth->rbac);
    g_free(auth);
}

gboolean kas_auth_is_open(const KasAuth *auth)
{
    return !auth->authn && auth->modes->len > 0 &&
           g_array_index(auth->modes, Mode, 0) == MODE_ALWAYS_ALLOW;
}

void kas_auth_counts(KasAuth *auth, guint64 *unauthorized, guint64 *forbidden)
{
    if (unauthorized != NULL)
        *unauthorized = (guint64)g_atomic_int_get(&auth->unauthorized);
    if (forbidden != NULL)
        *forbidden = (guint64)g_atomic_int_get(&auth->forbidden);
}
