/* Nodes from a file at startup (see kas-nodes.h). */
#include "testbed/apiserver/kas-nodes.h"
#include "testbed/apiserver/kas-status.h"

#include <string.h>

#include "kube/kb-error.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"

static char *expand(const char *tmpl, gint64 i, gint64 n, gint64 rack)
{
    GString *s = g_string_new(NULL);
    for (const char *p = tmpl; *p != '\0'; p++) {
        if (g_str_has_prefix(p, "{i}")) {
            g_string_append_printf(s, "%" G_GINT64_FORMAT, i);
            p += 2;
        } else if (g_str_has_prefix(p, "{n}")) {
            g_string_append_printf(s, "%" G_GINT64_FORMAT, n);
            p += 2;
        } else if (g_str_has_prefix(p, "{rack}")) {
            g_string_append_printf(s, "%" G_GINT64_FORMAT, rack);
            p += 5;
        } else {
            g_string_append_c(s, *p);
        }
    }
    return g_string_free(s, FALSE);
}

static json_object *expand_map(json_object *m, gint64 i, gint64 n, gint64 rack)
{
    json_object *out = json_object_new_object();
    json_object_object_foreach(m, k, v)
    {
        g_autofree char *e = expand(json_object_get_string(v), i, n, rack);
        kas_json_set_string(out, k, e);
    }
    return out;
}

static json_object *quantities(json_object *m)
{
    /* Quantities may be written as YAML numbers: the API wants strings. */
    json_object *out = json_object_new_object();
    json_object_object_foreach(m, k, v)
    {
        kas_json_set_string(out, k, json_object_get_string(v));
    }
    return out;
}

static json_object *template_node(json_object *t, gint64 i, gint64 n)
{
    json_object *per = kas_json_get(t, "nodesPerRack");
    gint64 per_rack = per != NULL ? json_object_get_int64(per) : 0;
    gint64 rack = per_rack > 0 ? i / per_rack : 0;
    const char *name_t = kas_json_get_string(t, "name");
    g_autofree char *name = expand(name_t != NULL ? name_t : "node-{n}", i, n, rack);
    json_object *node = json_object_new_object();
    kas_json_set_string(node, "apiVersion", "v1");
    kas_json_set_string(node, "kind", "Node");
    json_object *meta = kas_json_ensure_object(node, "metadata");
    kas_json_set_string(meta, "name", name);
    json_object *labels = kas_json_get(t, "labels");
    json_object *l = json_object_is_type(labels, json_type_object) ? expand_map(labels, i, n, rack)
                                                                   : json_object_new_object();
    kas_json_set_string(l, "kubernetes.io/hostname", name);
    json_object_object_add(meta, "labels", l);
    json_object *ann = kas_json_get(t, "annotations");
    if (json_object_is_type(ann, json_type_object))
        json_object_object_add(meta, "annotations", expand_map(ann, i, n, rack));
    json_object *spec = kas_json_ensure_object(node, "spec");
    json_object *taints = kas_json_get(t, "taints");
    if (taints != NULL)
        json_object_object_add(spec, "taints", json_object_get(taints));
    if (json_object_get_boolean(kas_json_get(t, "unschedulable")))
        json_object_object_add(spec, "unschedulable", json_object_new_boolean(TRUE));
    json_object *alloc = kas_json_get(t, "allocatable");
    json_object *cap = kas_json_get(t, "capacity");
    if (alloc != NULL || cap != NULL) {
        json_object *status = kas_json_ensure_object(node, "status");
        json_object_object_add(status, "allocatable", quantities(alloc != NULL ? alloc : cap));
        json_object_object_add(status, "capacity", quantities(cap != NULL ? cap : alloc));
    }
    return node;
}

/* Append the nodes of the templates in @list to @out. */
static gboolean expand_templates(json_object *list, json_object *out, GError **error)
{
    gint64 n = 0;
    for (gsize e = 0; e < json_object_array_length(list); e++) {
        json_object *t = json_object_array_get_idx(list, e);
        if (!json_object_is_type(t, json_type_object)) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "nodes[%zu]: not a mapping", e);
            return FALSE;
        }
        json_object *c = kas_json_get(t, "count");
        gint64 count = c != NULL ? json_object_get_int64(c) : 1;
        if (count < 0 || n + count > KAS_NODES_MAX) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "nodes[%zu].count: %" G_GINT64_FORMAT
                        " nodes would exceed the limit of %d", e, count, KAS_NODES_MAX);
            return FALSE;
        }
        for (gint64 i = 0; i < count; i++, n++)
            json_object_array_add(out, template_node(t, i, n));
    }
    return TRUE;
}

json_object *kas_nodes_parse(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, error))
        return NULL;
    if (len > KAS_NODES_MAX_FILE) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: larger than %d bytes", path, KAS_NODES_MAX_FILE);
        return NULL;
    }
    json_object *doc = kas_yaml_to_json(text, len, error);
    if (doc == NULL) {
        g_prefix_error(error, "%s: ", path);
        return NULL;
    }
    json_object *out = json_object_new_array();
    gboolean ok = TRUE;
    json_object *templates = kas_json_get(doc, "nodes");
    json_object *items = json_object_is_type(doc, json_type_array) ? doc : kas_json_get(doc, "items");
    if (json_object_is_type(templates, json_type_array)) {
        ok = expand_templates(templates, out, error);
    } else if (json_object_is_type(items, json_type_array)) {
        if (json_object_array_length(items) > KAS_NODES_MAX) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "more than %d nodes", KAS_NODES_MAX);
            ok = FALSE;
        }
        for (gsize i = 0; ok && i < json_object_array_length(items); i++)
            json_object_array_add(out, json_object_get(json_object_array_get_idx(items, i)));
    } else if (g_strcmp0(kas_json_get_string(doc, "kind"), "Node") == 0) {
        json_object_array_add(out, json_object_get(doc));
    } else {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "expected a \"nodes:\" list of templates, a Node, or a list of Nodes");
        ok = FALSE;
    }
    json_object_put(doc);
    if (!ok) {
        json_object_put(out);
        g_prefix_error(error, "%s: ", path);
        return NULL;
    }
    return out;
}

static gboolean create_node(KasStore *store, KasRes *nodes, json_object *node, GError **error)
{
    g_autoptr(GError) e = NULL;
    KasObj *o = kas_ops_create(store, nodes, "v1", NULL, node, &e);
    kas_obj_unref(o);
    if (o == NULL) {
        /* the message alone: the Status details it may carry are for HTTP answers */
        gboolean has;
        json_object *details = NULL;
        g_autofree char *msg = kas_status_split(e->message, &has, &details);
        json_object_put(details);
        g_set_error_literal(error, e->domain, e->code, msg);
    }
    return o != NULL;
}

gint64 kas_nodes_load(KasStore *store, const char *path, GError **error)
{
    json_object *nodes_json = kas_nodes_parse(path, error);
    if (nodes_json == NULL)
        return -1;
    kas_store_lock(store);
    KasRes *nodes = kas_store_find_locked(store, "", "v1", "nodes");
    kas_store_unlock(store);
    gint64 n = 0;
    for (gsize i = 0; i < json_object_array_length(nodes_json) && n >= 0; i++, n++) {
        if (!create_node(store, nodes, json_object_array_get_idx(nodes_json, i), error))
            n = -1;
    }
    json_object_put(nodes_json);
    if (n < 0)
        g_prefix_error(error, "%s: ", path);
    return n;
}
