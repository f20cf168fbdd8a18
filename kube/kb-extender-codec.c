/*
 * The extender protocol codec (see the header). Requests are parsed with json-c under a depth
 * limit; answers are written straight into a GString (a filter answer for 5,000 nodes is one
 * pass, no DOM).
 */
#include "kube/kb-extender-codec.h"

#include <string.h>

#include "kube/kb-error.h"

/* ---- helpers ------------------------------------------------------------------------------- */

static json_object *parse_body(const char *body, gsize len, GError **error)
{
    if (len > KB_EXTENDER_MAX_BODY_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "body of %" G_GSIZE_FORMAT " bytes exceeds the limit of %" G_GSIZE_FORMAT, len,
                    KB_EXTENDER_MAX_BODY_BYTES);
        return NULL;
    }
    if (memchr(body, '\0', len) != NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "body: NUL byte in JSON");
        return NULL;
    }
    json_tokener *tok = json_tokener_new_ex(KB_EXTENDER_MAX_DEPTH);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *root = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    gsize off = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr == json_tokener_error_depth) {
        json_object_put(root);
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "body: nesting deeper than %d",
                    KB_EXTENDER_MAX_DEPTH);
        return NULL;
    }
    if (root == NULL || jerr != json_tokener_success) {
        json_object_put(root);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "body: invalid JSON at byte %" G_GSIZE_FORMAT ": %s", off,
                    jerr == json_tokener_continue ? "unexpected end"
                                                  : json_tokener_error_desc(jerr));
        return NULL;
    }
    for (gsize i = off; i < len; i++) {
        if (!g_ascii_isspace(body[i])) {
            json_object_put(root);
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "body: trailing data at byte %" G_GSIZE_FORMAT, i);
            return NULL;
        }
    }
    if (!json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "body: expected a JSON object");
        return NULL;
    }
    return root;
}

/* The member of @obj named @key, compared case-insensitively as Go does; NULL when absent or
 * null. An exact match wins over a case-folded one. */
static json_object *member(json_object *obj, const char *key)
{
    json_object *exact = NULL;
    if (json_object_object_get_ex(obj, key, &exact))
        return exact;
    json_object_object_foreach(obj, k, v)
    {
        if (g_ascii_strcasecmp(k, key) == 0)
            return v;
    }
    return NULL;
}

/* A string member (absent or null: @dflt). FALSE when present with another type or too long. */
static gboolean string_member(json_object *obj, const char *key, const char *dflt, const char **out,
                              GError **error)
{
    json_object *v = member(obj, key);
    if (v == NULL) {
        *out = dflt;
        return TRUE;
    }
    if (!json_object_is_type(v, json_type_string)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected a string, got %s", key,
                    json_type_to_name(json_object_get_type(v)));
        return FALSE;
    }
    if (json_object_get_string_len(v) > KB_EXTENDER_MAX_NAME_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: %d bytes, longer than %d", key,
                    json_object_get_string_len(v), KB_EXTENDER_MAX_NAME_BYTES);
        return FALSE;
    }
    *out = json_object_get_string(v);
    return TRUE;
}

static gboolean check_name(const char *what, json_object *v, GError **error)
{
    if (!json_object_is_type(v, json_type_string)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected a string, got %s", what,
                    json_type_to_name(json_object_get_type(v)));
        return FALSE;
    }
    int n = json_object_get_string_len(v);
    if (n == 0 || n > KB_EXTENDER_MAX_NAME_BYTES) {
        g_set_error(error, KB_ERROR, n == 0 ? KB_ERROR_DECODE : KB_ERROR_LIMIT,
                    "%s: name of %d bytes (1..%d allowed)", what, n, KB_EXTENDER_MAX_NAME_BYTES);
        return FALSE;
    }
    return TRUE;
}

static KbPod *decode_pod(json_object *root, GError **error)
{
    json_object *p = member(root, "Pod");
    if (p == NULL || !json_object_is_type(p, json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Pod: %s",
                    p == NULL ? "missing" : "expected an object");
        return NULL;
    }
    KbPod *pod = kb_pod_decode(p, FALSE, error);
    if (pod == NULL) {
        g_prefix_error(error, "Pod: ");
        return NULL;
    }
    if (pod->meta.name == NULL || pod->meta.namespace_ == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Pod: metadata.%s missing",
                    pod->meta.name == NULL ? "name" : "namespace");
        kb_object_unref(pod);
        return NULL;
    }
    return pod;
}

static gboolean list_length(const char *what, json_object *arr, guint max, GError **error)
{
    if (!json_object_is_type(arr, json_type_array)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an array, got %s", what,
                    json_type_to_name(json_object_get_type(arr)));
        return FALSE;
    }
    if (json_object_array_length(arr) > max) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: %zu entries, more than %u", what,
                    json_object_array_length(arr), max);
        return FALSE;
    }
    return TRUE;
}

/* ---- filter / prioritize ------------------------------------------------------------------- */

static gboolean key_is(const KbJsonStr *key, const char *name)
{
    gsize n = strlen(name);
    return key->len == n && g_ascii_strncasecmp(key->p, name, n) == 0;
}

/* A candidate node's name into @a (within the limits). */
static gboolean add_name(KbExtenderArgs *a, GPtrArray *names, const KbJsonStr *s, const char *field,
                         guint i, GError **error)
{
    if (s->len == 0 || s->len > KB_EXTENDER_MAX_NAME_BYTES || memchr(s->p, '\0', s->len) != NULL) {
        g_set_error(error, KB_ERROR, s->len == 0 ? KB_ERROR_DECODE : KB_ERROR_LIMIT,
                    "%s[%u]: name of %" G_GSIZE_FORMAT " bytes (1..%d allowed)", field, i, s->len,
                    KB_EXTENDER_MAX_NAME_BYTES);
        return FALSE;
    }
    if (names->len >= KB_EXTENDER_MAX_NODES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: more than %u entries", field,
                    KB_EXTENDER_MAX_NODES);
        return FALSE;
    }
    g_ptr_array_add(names, g_string_chunk_insert_len(a->names, s->p, (gssize)s->len));
    return TRUE;
}

static gboolean read_node_names(KbJsonReader *r, KbExtenderArgs *a, GPtrArray *names,
                                GError **error)
{
    int rc;
    KbJsonStr s;
    if (!kb_json_array_begin(r, error))
        return FALSE;
    while ((rc = kb_json_array_next(r, error)) == 1) {
        if (kb_json_peek(r) != KB_JSON_STRING) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "NodeNames[%u]: expected a string",
                        names->len);
            return FALSE;
        }
        if (!kb_json_read_string(r, &s, error) ||
            !add_name(a, names, &s, "NodeNames", names->len, error))
            return FALSE;
    }
    return rc == 0;
}

/* metadata.name of one NodeList item (its text in @span). */
static gboolean item_name(const KbJsonStr *span, KbExtenderArgs *a, GPtrArray *names,
                          GError **error)
{
    KbJsonReader r;
    KbJsonStr key, name = {NULL, 0};
    int rc, rc2 = 0;
    gboolean ok = TRUE;
    kb_json_reader_init(&r, span->p, span->len);
    r.max_depth = KB_EXTENDER_MAX_DEPTH;
    if (!kb_json_object_begin(&r, error)) {
        kb_json_reader_clear(&r);
        return FALSE;
    }
    while (ok && (rc = kb_json_object_next(&r, &key, error)) == 1) {
        if (!KB_JSON_STR_IS(key, "metadata") || kb_json_peek(&r) != KB_JSON_OBJECT) {
            ok = kb_json_skip(&r, error);
            continue;
        }
        ok = kb_json_object_begin(&r, error);
        while (ok && (rc2 = kb_json_object_next(&r, &key, error)) == 1) {
            if (KB_JSON_STR_IS(key, "name") && kb_json_peek(&r) == KB_JSON_STRING) {
                ok = kb_json_read_string(&r, &name, error);
                if (ok)
                    ok = add_name(a, names, &name, "Nodes.items", names->len, error);
            } else {
                ok = kb_json_skip(&r, error);
            }
        }
        ok = ok && rc2 == 0;
    }
    kb_json_reader_clear(&r);
    if (ok && name.p == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Nodes.items[%u].metadata.name: missing",
                    names->len);
        return FALSE;
    }
    return ok;
}

static gboolean read_node_list(KbJsonReader *r, KbExtenderArgs *a, GPtrArray *names, GArray *spans,
                               GError **error)
{
    KbJsonStr key, span;
    int rc, rc2 = 0;
    if (kb_json_peek(r) != KB_JSON_OBJECT) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Nodes: expected a NodeList object");
        return FALSE;
    }
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, error)) == 1) {
        if (!key_is(&key, "items") || kb_json_peek(r) == KB_JSON_NULL) {
            if (!kb_json_skip(r, error))
                return FALSE;
            continue;
        }
        if (!kb_json_array_begin(r, error))
            return FALSE;
        while ((rc2 = kb_json_array_next(r, error)) == 1) {
            if (kb_json_peek(r) != KB_JSON_OBJECT) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                            "Nodes.items[%u]: expected a Node object", names->len);
                return FALSE;
            }
            if (!kb_json_skip_span(r, &span, error) || !item_name(&span, a, names, error))
                return FALSE;
            g_array_append_val(spans, span);
        }
        if (rc2 == -1)
            return FALSE;
    }
    return rc == 0;
}

static gboolean read_args(KbJsonReader *r, KbExtenderArgs *a, GPtrArray *names, GArray *spans,
                          GError **error)
{
    KbJsonStr key, span;
    int rc;
    gboolean have_names = FALSE, have_list = FALSE;
    if (kb_json_peek(r) != KB_JSON_OBJECT) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "body: expected a JSON object");
        return FALSE;
    }
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, error)) == 1) {
        KbJsonType t = kb_json_peek(r);
        gboolean is_null = t == KB_JSON_NULL;
        gboolean ok;
        if (t == KB_JSON_INVALID) {
            ok = kb_json_skip(r, error); /* the reader says what is wrong, and where */
        } else if (key_is(&key, "Pod") && !is_null) {
            if (kb_json_peek(r) != KB_JSON_OBJECT) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Pod: expected an object");
                return FALSE;
            }
            ok = kb_json_skip_span(r, &span, error);
            if (ok) {
                g_clear_pointer(&a->pod, kb_object_unref);
                a->pod = kb_pod_decode_bytes(span.p, span.len, error);
                if (a->pod == NULL)
                    g_prefix_error(error, "Pod: ");
                ok = a->pod != NULL;
            }
        } else if (key_is(&key, "NodeNames") && !is_null) {
            g_ptr_array_set_size(names, 0);
            have_names = ok = read_node_names(r, a, names, error);
        } else if (key_is(&key, "Nodes") && !is_null && !have_names) {
            have_list = ok = read_node_list(r, a, names, spans, error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    if (rc == -1 || !kb_json_finish(r, error))
        return FALSE;
    if (!have_names && !have_list) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "neither NodeNames nor Nodes given (nodeCacheCapable true sends NodeNames, "
                    "false sends Nodes)");
        return FALSE;
    }
    a->node_cache_capable = have_names;
    return TRUE;
}

static gboolean check_pod(KbPod *pod, GError **error)
{
    if (pod == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Pod: missing");
        return FALSE;
    }
    if (pod->meta.name == NULL || pod->meta.namespace_ == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "Pod: metadata.%s missing",
                    pod->meta.name == NULL ? "name" : "namespace");
        return FALSE;
    }
    return TRUE;
}

KbExtenderArgs *kb_extender_args_decode(const char *body, gsize len, GError **error)
{
    if (len > KB_EXTENDER_MAX_BODY_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "body of %" G_GSIZE_FORMAT " bytes exceeds the limit of %" G_GSIZE_FORMAT, len,
                    KB_EXTENDER_MAX_BODY_BYTES);
        return NULL;
    }
    g_autoptr(KbExtenderArgs) a = g_new0(KbExtenderArgs, 1);
    a->body = g_malloc(len + 1);
    memcpy(a->body, body, len);
    a->body[len] = '\0';
    a->names = g_string_chunk_new(4096);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(KbJsonStr));
    KbJsonReader r;
    kb_json_reader_init(&r, a->body, len);
    r.max_depth = KB_EXTENDER_MAX_DEPTH;
    gboolean ok = read_args(&r, a, names, spans, error);
    kb_json_reader_clear(&r);
    if (!ok || !check_pod(a->pod, error))
        return NULL;
    a->n_nodes = names->len;
    g_ptr_array_add(names, NULL);
    a->node_names = (const char **)g_ptr_array_free(g_steal_pointer(&names), FALSE);
    if (!a->node_cache_capable)
        a->node_spans = (KbJsonStr *)(void *)g_array_free(g_steal_pointer(&spans), FALSE);
    return g_steal_pointer(&a);
}

void kb_extender_args_free(KbExtenderArgs *args)
{
    if (args == NULL)
        return;
    g_clear_pointer(&args->pod, kb_object_unref);
    g_free(args->node_names);
    g_free(args->node_spans);
    if (args->names != NULL)
        g_string_chunk_free(args->names);
    g_free(args->body);
    g_free(args);
}

/* ---- bind ---------------------------------------------------------------------------------- */

KbExtenderBindingArgs *kb_extender_binding_args_decode(const char *body, gsize len, GError **error)
{
    g_autoptr(KbExtenderBindingArgs) a = g_new0(KbExtenderBindingArgs, 1);
    a->root = parse_body(body, len, error);
    if (a->root == NULL)
        return NULL;
    if (!string_member(a->root, "PodName", "", &a->pod_name, error) ||
        !string_member(a->root, "PodNamespace", "", &a->pod_namespace, error) ||
        !string_member(a->root, "PodUID", "", &a->pod_uid, error) ||
        !string_member(a->root, "Node", "", &a->node, error))
        return NULL;
    const char *missing = a->pod_name[0] == '\0'        ? "PodName"
                          : a->pod_namespace[0] == '\0' ? "PodNamespace"
                          : a->node[0] == '\0'          ? "Node"
                                                        : NULL;
    if (missing != NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: missing or empty", missing);
        return NULL;
    }
    return g_steal_pointer(&a);
}

void kb_extender_binding_args_free(KbExtenderBindingArgs *args)
{
    if (args == NULL)
        return;
    json_object_put(args->root);
    g_free(args);
}

/* ---- preempt ------------------------------------------------------------------------------- */

static gboolean decode_victim(json_object *v, gboolean meta, const char *what,
                              KbExtenderVictim *out, GError **error)
{
    if (!json_object_is_type(v, json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an object", what);
        return FALSE;
    }
    if (meta) {
        json_object *uid = member(v, "UID");
        if (uid == NULL || !check_name(what, uid, error)) {
            if (uid == NULL)
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s.UID: missing", what);
            return FALSE;
        }
        out->uid = json_object_get_string(uid);
        return TRUE;
    }
    json_object *m = NULL, *uid = NULL, *name = NULL, *ns = NULL;
    if (!json_object_object_get_ex(v, "metadata", &m) ||
        !json_object_is_type(m, json_type_object) || !json_object_object_get_ex(m, "uid", &uid) ||
        !json_object_object_get_ex(m, "name", &name)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: metadata.uid and metadata.name needed",
                    what);
        return FALSE;
    }
    if (!check_name(what, uid, error) || !check_name(what, name, error))
        return FALSE;
    out->uid = json_object_get_string(uid);
    out->name = json_object_get_string(name);
    if (json_object_object_get_ex(m, "namespace", &ns)) {
        if (!check_name(what, ns, error))
            return FALSE;
        out->namespace_ = json_object_get_string(ns);
    }
    return TRUE;
}

static gboolean decode_node_victims(json_object *map, gboolean meta, KbExtenderPreemptionArgs *a,
                                    GError **error)
{
    const char *field = meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
    if (!json_object_is_type(map, json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an object", field);
        return FALSE;
    }
    int n = json_object_object_length(map);
    if (n > KB_EXTENDER_MAX_NODES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: %d nodes, more than %d", field, n,
                    KB_EXTENDER_MAX_NODES);
        return FALSE;
    }
    a->meta = meta;
    a->nodes = g_new0(KbExtenderNodeVictims, n + 1);
    json_object_object_foreach(map, node, victims)
    {
        KbExtenderNodeVictims *nv = &a->nodes[a->n_nodes++];
        g_autofree char *what = g_strdup_printf("%s[\"%.64s\"]", field, node);
        if (strlen(node) == 0 || strlen(node) > KB_EXTENDER_MAX_NAME_BYTES) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: node name of %zu bytes", what,
                        strlen(node));
            return FALSE;
        }
        nv->node = node;
        if (victims == NULL)
            continue;
        if (!json_object_is_type(victims, json_type_object)) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an object", what);
            return FALSE;
        }
        json_object *pdb = member(victims, "NumPDBViolations");
        if (pdb != NULL)
            nv->num_pdb_violations = json_object_get_int64(pdb);
        json_object *pods = member(victims, "Pods");
        if (pods == NULL)
            continue;
        g_autofree char *pwhat = g_strdup_printf("%s.Pods", what);
        if (!list_length(pwhat, pods, KB_EXTENDER_MAX_VICTIMS, error))
            return FALSE;
        nv->n_pods = (guint)json_object_array_length(pods);
        nv->pods = g_new0(KbExtenderVictim, nv->n_pods + 1);
        for (guint i = 0; i < nv->n_pods; i++) {
            g_autofree char *vwhat = g_strdup_printf("%s[%u]", pwhat, i);
            if (!decode_victim(json_object_array_get_idx(pods, i), meta, vwhat, &nv->pods[i],
                               error))
                return FALSE;
        }
    }
    return TRUE;
}

KbExtenderPreemptionArgs *kb_extender_preemption_args_decode(const char *body, gsize len,
                                                             GError **error)
{
    g_autoptr(KbExtenderPreemptionArgs) a = g_new0(KbExtenderPreemptionArgs, 1);
    a->root = parse_body(body, len, error);
    if (a->root == NULL)
        return NULL;
    a->pod = decode_pod(a->root, error);
    if (a->pod == NULL)
        return NULL;
    json_object *meta = member(a->root, "NodeNameToMetaVictims");
    json_object *full = member(a->root, "NodeNameToVictims");
    if (meta != NULL) {
        if (!decode_node_victims(meta, TRUE, a, error))
            return NULL;
    } else if (full != NULL) {
        if (!decode_node_victims(full, FALSE, a, error))
            return NULL;
    } else {
        a->nodes = g_new0(KbExtenderNodeVictims, 1);
    }
    return g_steal_pointer(&a);
}

void kb_extender_preemption_args_free(KbExtenderPreemptionArgs *args)
{
    if (args == NULL)
        return;
    for (guint i = 0; args->nodes != NULL && i < args->n_nodes; i++)
        g_free(args->nodes[i].pods);
    g_free(args->nodes);
    g_clear_pointer(&args->pod, kb_object_unref);
    json_object_put(args->root);
    g_free(args);
}

/* ---- encoders ------------------------------------------------------------------------------ */

void kb_extender_append_json_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        /* Runs of plain bytes go in one copy; only the bytes JSON escapes are written apart. */
        g_string_append_len(out, run, (gssize)((const char *)p - run));
        run = (const char *)p + 1;
        switch (*p) {
        case '"':
            g_string_append(out, "\\\"");
            break;
        case '\\':
            g_string_append(out, "\\\\");
            break;
        case '\n':
            g_string_append(out, "\\n");
            break;
        case '\t':
            g_string_append(out, "\\t");
            break;
        case '\r':
            g_string_append(out, "\\r");
            break;
        default:
            g_string_append_printf(out, "\\u%04x", *p);
        }
    }
    g_string_append(out, run);
    g_string_append_c(out, '"');
}

static void append_failed_map(GString *out, const char *key, const KbExtenderArgs *args,
                              const char *const *why, const gboolean *only)
{
    gboolean first = TRUE;
    g_string_append_printf(out, ",\"%s\":{", key);
    for (guint i = 0; i < args->n_nodes; i++) {
        if (why[i] == NULL || (only != NULL && !only[i]))
            continue;
        if (!first)
            g_string_append_c(out, ',');
        first = FALSE;
        kb_extender_append_json_string(out, args->node_names[i]);
        g_string_append_c(out, ':');
        kb_extender_append_json_string(out, why[i]);
    }
    g_string_append_c(out, '}');
}

char *kb_extender_filter_result_encode(const KbExtenderArgs *args, const char *const *why,
                                       const gboolean *unresolvable, const char *error)
{
    gsize size = 64 + 32 * (gsize)args->n_nodes;
    for (guint i = 0; !args->node_cache_capable && i < args->n_nodes; i++)
        size += why[i] == NULL ? args->node_spans[i].len + 1 : 0;
    for (guint i = 0; i < args->n_nodes; i++)
        size += why[i] != NULL ? 2 * (strlen(why[i]) + strlen(args->node_names[i]) + 6) : 0;
    GString *out = g_string_sized_new(size);
    if (error != NULL && error[0] != '\0') {
        g_string_append(out, "{\"NodeNames\":null,\"Nodes\":null,\"FailedNodes\":null,\"Error\":");
        kb_extender_append_json_string(out, error);
        g_string_append_c(out, '}');
        return g_string_free(out, FALSE);
    }
    gboolean first = TRUE;
    if (args->node_cache_capable) {
        g_string_append(out, "{\"Nodes\":null,\"NodeNames\":[");
        for (guint i = 0; i < args->n_nodes; i++) {
            if (why[i] != NULL)
                continue;
            if (!first)
                g_string_append_c(out, ',');
            first = FALSE;
            kb_extender_append_json_string(out, args->node_names[i]);
        }
    } else {
        g_string_append(out, "{\"NodeNames\":null,\"Nodes\":{\"metadata\":{},\"items\":[");
        for (guint i = 0; i < args->n_nodes; i++) {
            if (why[i] != NULL)
                continue;
            if (!first)
                g_string_append_c(out, ',');
            first = FALSE;
            g_string_append_len(out, args->node_spans[i].p, (gssize)args->node_spans[i].len);
        }
        g_string_append_c(out, ']');
    }
    g_string_append_c(out, args->node_cache_capable ? ']' : '}');
    append_failed_map(out, "FailedNodes", args, why, NULL);
    if (unresolvable != NULL)
        append_failed_map(out, "FailedAndUnresolvableNodes", args, why, unresolvable);
    g_string_append(out, ",\"Error\":\"\"}");
    return g_string_free(out, FALSE);
}

char *kb_extender_priorities_encode(const KbExtenderArgs *args, const gint64 *scores)
{
    GString *out = g_string_sized_new(2 + 40 * (gsize)args->n_nodes);
    g_string_append_c(out, '[');
    for (guint i = 0; i < args->n_nodes; i++) {
        gint64 s = CLAMP(scores[i], 0, KB_EXTENDER_MAX_SCORE);
        if (i > 0)
            g_string_append_c(out, ',');
        g_string_append(out, "{\"Host\":");
        kb_extender_append_json_string(out, args->node_names[i]);
        g_string_append_printf(out, ",\"Score\":%" G_GINT64_FORMAT "}", s);
    }
    g_string_append_c(out, ']');
    return g_string_free(out, FALSE);
}

char *kb_extender_binding_result_encode(const char *error)
{
    GString *out = g_string_new("{\"Error\":");
    kb_extender_append_json_string(out, error != NULL ? error : "");
    g_string_append_c(out, '}');
    return g_string_free(out, FALSE);
}

char *kb_extender_preemption_result_encode(const KbExtenderPreemptionArgs *args,
                                           const gboolean *keep, GPtrArray *const *victims)
{
    GString *out = g_string_new("{\"NodeNameToMetaVictims\":{");
    gboolean first = TRUE;
    for (guint i = 0; i < args->n_nodes; i++) {
        if (!keep[i])
            continue;
        if (!first)
            g_string_append_c(out, ',');
        first = FALSE;
        kb_extender_append_json_string(out, args->nodes[i].node);
        g_string_append(out, ":{\"Pods\":[");
        for (guint j = 0; victims[i] != NULL && j < victims[i]->len; j++) {
            if (j > 0)
                g_string_append_c(out, ',');
            g_string_append(out, "{\"UID\":");
            kb_extender_append_json_string(out, g_ptr_array_index(victims[i], j));
            g_string_append_c(out, '}');
        }
        g_string_append_printf(out, "],\"NumPDBViolations\":%" G_GINT64_FORMAT "}",
                               args->nodes[i].num_pdb_violations);
    }
    g_string_append(out, "}}");
    return g_string_free(out, FALSE);
}
