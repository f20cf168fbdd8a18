/* Disruption budgets for the Eviction subresource (see kas-evict.h). */
#include "testbed/apiserver/kas-evict.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-status.h"

gboolean kas_evict_check_body(json_object *eviction, GError **error)
{
    const char *av = kas_json_get_string(eviction, "apiVersion");
    if (av == NULL || strcmp(av, "policy/v1beta1") == 0 || strcmp(av, "policy/v1") == 0)
        return TRUE;
    const char *slash = strrchr(av, '/');
    g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                "Eviction in version \"%s\" cannot be handled as a Eviction: no kind \"Eviction\" "
                "is registered for version \"%s\"",
                slash != NULL ? slash + 1 : av, av);
    return FALSE;
}

/* The label selector of a budget as selector text ("k=v,k2 in (a,b)"), NULL when it has none
 * (a budget without selector selects nothing, as in policy/v1). */
static char *selector_text(json_object *sel)
{
    if (!json_object_is_type(sel, json_type_object))
        return NULL;
    GString *s = g_string_new(NULL);
    json_object *ml = kas_json_get(sel, "matchLabels");
    if (json_object_is_type(ml, json_type_object)) {
        json_object_object_foreach(ml, k, v)
        {
            g_string_append_printf(s, "%s%s=%s", s->len > 0 ? "," : "", k,
                                   json_object_get_string(v));
        }
    }
    json_object *me = kas_json_get(sel, "matchExpressions");
    for (gsize i = 0; json_object_is_type(me, json_type_array) && i < json_object_array_length(me);
         i++) {
        json_object *e = json_object_array_get_idx(me, i);
        const char *key = kas_json_get_string(e, "key"), *op = kas_json_get_string(e, "operator");
        if (key == NULL || op == NULL)
            continue;
        if (s->len > 0)
            g_string_append_c(s, ',');
        if (strcmp(op, "Exists") == 0) {
            g_string_append(s, key);
        } else if (strcmp(op, "DoesNotExist") == 0) {
            g_string_append_printf(s, "!%s", key);
        } else {
            g_string_append_printf(s, "%s %s (", key, strcmp(op, "In") == 0 ? "in" : "notin");
            json_object *vals = kas_json_get(e, "values");
            for (gsize j = 0;
                 json_object_is_type(vals, json_type_array) && j < json_object_array_length(vals);
                 j++)
                g_string_append_printf(s, "%s%s", j > 0 ? "," : "",
                                       json_object_get_string(json_object_array_get_idx(vals, j)));
            g_string_append_c(s, ')');
        }
    }
    return g_string_free(s, FALSE);
}

static const char *label_lookup(const char *key, gpointer data)
{
    json_object *labels = data, *v = NULL;
    if (!json_object_is_type(labels, json_type_object) ||
        !json_object_object_get_ex(labels, key, &v))
        return NULL;
    return json_object_get_string(v);
}

static gboolean budget_matches(json_object *pdb, json_object *pod)
{
    g_autofree char *text = selector_text(kas_json_get(pdb, "spec.selector"));
    if (text == NULL || text[0] == '\0')
        return FALSE;
    g_autoptr(KasSelector) sel = kas_label_selector_parse(text, NULL);
    return sel != NULL &&
           kas_selector_matches(sel, label_lookup, kas_json_get(pod, "metadata.labels"));
}

static gboolean too_many(GError **error, const char *cause)
{
    json_object *d = json_object_new_object();
    json_object *causes = json_object_new_array();
    json_object *c = json_object_new_object();
    kas_json_set_string(c, "reason", "DisruptionBudget");
    kas_json_set_string(c, "message", cause);
    json_object_array_add(causes, c);
    json_object_object_add(d, "causes", causes);
    kas_status_set(error, KAS_ERR_TOO_MANY, d,
                   "Cannot evict pod as it would violate the pod's disruption budget.");
    return FALSE;
}

gboolean kas_evict_check_locked(KasStore *store, const char *ns, json_object *pod, GError **error)
{
    const char *phase = kas_json_get_string(pod, "status.phase");
    if (g_strcmp0(phase, "Succeeded") == 0 || g_strcmp0(phase, "Failed") == 0 ||
        g_strcmp0(phase, "Pending") == 0 || phase == NULL)
        return TRUE;
    KasRes *pdbs = kas_store_find_locked(store, "policy", NULL, "poddisruptionbudgets");
    if (pdbs == NULL)
        return TRUE;
    KasListOptions lo = {.ns = ns};
    gboolean more;
    guint64 rem;
    g_autoptr(GPtrArray) all = kas_store_list_locked(store, pdbs, &lo, &more, &rem);
    json_object *match = NULL;
    guint n = 0;
    for (guint i = 0; i < all->len; i++) {
        json_object *j = kas_obj_parse(g_ptr_array_index(all, i));
        if (budget_matches(j, pod) && n++ == 0)
            match = json_object_get(j);
        json_object_put(j);
    }
    if (n > 1) {
        json_object_put(match);
        g_set_error(error, KAS_ERROR, KAS_ERR_INTERNAL,
                    "This pod has more than one PodDisruptionBudget, which the eviction "
                    "subresource does not support.");
        return FALSE;
    }
    if (match == NULL)
        return TRUE;
    const char *name = kas_json_get_string(match, "metadata.name");
    gint64 gen = json_object_get_int64(kas_json_get(match, "metadata.generation"));
    gint64 observed = json_object_get_int64(kas_json_get(match, "status.observedGeneration"));
    gint64 allowed = json_object_get_int64(kas_json_get(match, "status.disruptionsAllowed"));
    gboolean ok = FALSE;
    if (observed < gen) {
        g_autofree char *c = g_strdup_printf("The disruption budget %s is still being processed by "
                                             "the server.",
                                             name);
        too_many(error, c);
    } else if (allowed <= 0) {
        g_autofree char *c = g_strdup_printf(
                "The disruption budget %s needs %" G_GINT64_FORMAT
                " healthy pods and has %" G_GINT64_FORMAT " currently",
                name, json_object_get_int64(kas_json_get(match, "status.desiredHealthy")),
                json_object_get_int64(kas_json_get(match, "status.currentHealthy")));
        too_many(error, c);
    } else {
        /* the eviction uses up one disruption, as the real registry writes the budget first */
        json_object_object_add(kas_json_ensure_object(match, "status"), "disruptionsAllowed",
                               json_object_new_int64(allowed - 1));
        kas_store_put_locked(store, pdbs, match);
        ok = TRUE;
    }
    json_object_put(match);
    return ok;
}
