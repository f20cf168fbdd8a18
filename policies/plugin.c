/* Plugin registry and the matching helpers the plugins share; see plugin.h. */
#include "policies/plugin.h"

#include <stdlib.h>
#include <string.h>

static const struct kb_plugin_ops *const registry[] = {
        &kb_plugin_priority,    &kb_plugin_gang,         &kb_plugin_drf,
        &kb_plugin_proportion,  &kb_plugin_predicates,   &kb_plugin_nodeorder,
        &kb_plugin_conformance, &kb_plugin_gpu_topology, &kb_plugin_sla,
        &kb_plugin_binpack,     &kb_plugin_fgd,
};

const struct kb_plugin_ops *kb_plugin_lookup(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(registry); i++) {
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    }
    return NULL;
}

const char *kb_plugin_names(void)
{
    return "priority, gang, drf, proportion, predicates, nodeorder, conformance, gpu-topology, "
           "sla, binpack";
}

gboolean kb_plugin_node_selector_matches(const KbPod *pod, const KbNode *node)
{
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, pod->node_selector);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        gpointer have;
        if (!g_hash_table_lookup_extended(node->meta.labels, k, NULL, &have) ||
            g_strcmp0(have, v) != 0)
            return FALSE;
    }
    return TRUE;
}

static gboolean parse_int(const char *s, gint64 *out)
{
    char *end = NULL;
    if (s == NULL || *s == '\0')
        return FALSE;
    *out = g_ascii_strtoll(s, &end, 10);
    return *end == '\0';
}

/* A matchFields requirement: the node's name In or NotIn its one value. The decoders admit no
 * other key, operator or count; should one get here all the same, it matches no node, as
 * kube-scheduler's term with a parse error does. */
static gboolean field_matches(const KbSelectorRequirement *r, const KbNode *node)
{
    if (strcmp(r->key, KB_NODE_FIELD_NAME) != 0 || r->n_values != 1)
        return FALSE;
    gboolean same = g_strcmp0(node->meta.name, r->values[0]) == 0;
    switch (r->op) {
    case KB_SELECTOR_IN:
        return same;
    case KB_SELECTOR_NOT_IN:
        return !same;
    default:
        return FALSE;
    }
}

static gboolean requirement_matches(const KbSelectorRequirement *r, const KbNode *node)
{
    if (r->match_field)
        return field_matches(r, node);
    gpointer v = NULL;
    gboolean has = g_hash_table_lookup_extended(node->meta.labels, r->key, NULL, &v);
    switch (r->op) {
    case KB_SELECTOR_IN:
    case KB_SELECTOR_NOT_IN: {
        gboolean in = FALSE;
        for (guint i = 0; has && i < r->n_values && !in; i++)
            in = g_strcmp0(r->values[i], v) == 0;
        return r->op == KB_SELECTOR_IN ? in : !in;
    }
    case KB_SELECTOR_EXISTS:
        return has;
    case KB_SELECTOR_DOES_NOT_EXIST:
        return !has;
    case KB_SELECTOR_GT:
    case KB_SELECTOR_LT: {
        gint64 have, want;
        if (!has || r->n_values != 1 || !parse_int(v, &have) || !parse_int(r->values[0], &want))
            return FALSE;
        return r->op == KB_SELECTOR_GT ? have > want : have < want;
    }
    }
    return FALSE;
}

gboolean kb_plugin_node_affinity_matches(const KbPod *pod, const KbNode *node)
{
    if (pod->n_affinity_terms == 0)
        return TRUE;
    /* Terms are ORed; the requirements of a term (matchExpressions and matchFields) are ANDed;
     * an empty term matches nothing. */
    for (guint t = 0; t < pod->n_affinity_terms; t++) {
        const KbNodeSelectorTerm *term = &pod->affinity_terms[t];
        gboolean all = term->n_exprs > 0;
        for (guint e = 0; e < term->n_exprs && all; e++)
            all = requirement_matches(&term->exprs[e], node);
        if (all)
            return TRUE;
    }
    return FALSE;
}

static gboolean tolerates(const KbPod *pod, const KbTaint *taint)
{
    for (guint i = 0; i < pod->n_tolerations; i++) {
        const KbToleration *t = &pod->tolerations[i];
        if (t->effect != KB_EFFECT_ALL && t->effect != taint->effect)
            continue;
        if (t->key == NULL || *t->key == '\0') {
            if (t->op_exists)
                return TRUE;
            continue;
        }
        if (strcmp(t->key, taint->key) != 0)
            continue;
        if (t->op_exists)
            return TRUE;
        const char *tv = t->value != NULL ? t->value : "";
        const char *nv = taint->value != NULL ? taint->value : "";
        if (strcmp(tv, nv) == 0)
            return TRUE;
    }
    return FALSE;
}

const KbTaint *kb_plugin_untolerated_taint(const KbPod *pod, const KbNode *node)
{
    for (guint i = 0; i < node->n_taints; i++) {
        const KbTaint *taint = &node->taints[i];
        if (taint->effect != KB_EFFECT_NO_SCHEDULE && taint->effect != KB_EFFECT_NO_EXECUTE)
            continue;
        if (!tolerates(pod, taint))
            return taint;
    }
    return NULL;
}

gboolean kb_plugin_pod_is_critical(const KbPod *pod)
{
    const char *pc = pod->priority_class_name;
    if (g_strcmp0(pc, "system-cluster-critical") == 0 || g_strcmp0(pc, "system-node-critical") == 0)
        return TRUE;
    return g_strcmp0(pod->meta.namespace_, "kube-system") == 0;
}
