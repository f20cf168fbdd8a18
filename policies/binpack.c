/*
 * binpack: prefer the nodes where the task's resources are already most used (best fit), so
 * that whole nodes stay free for large gangs. Volcano's plugin of that name, same arguments:
 *
 *   binpack.weight: 1                      the plugin's score is scaled by this (0: no score)
 *   binpack.cpu: 1                         weight of cpu
 *   binpack.memory: 1                      weight of memory
 *   binpack.resources: nvidia.com/gpu, example.com/foo   other resources scored (weight 1 ...)
 *   binpack.resources.nvidia.com/gpu: 2    ... unless given here
 *
 * Score of a task on a node: over the resources the task requests that have a weight, the
 * weighted mean of (used + request) / allocatable, times 100 x binpack.weight; 0 when one of them
 * would not fit. Negative cpu, memory or resource weights count as 1, as in Volcano. Resources
 * listed that no node or pod has (no slot yet) are skipped for this cycle.
 */
#include "policies/plugin.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    double weight;               /* binpack.weight */
    double per_slot[KB_RES_MAX]; /* resource weights by slot; 0: not scored */
} Binpack;

static double nonneg(const KbConfPlugin *conf, const char *key)
{
    double w = kb_conf_plugin_arg_double(conf, key, 1);
    return w < 0 ? 1 : w;
}

/* The slot of resource @name when one is assigned, else -1 (never assigns one). */
static int known_slot(const char *name)
{
    for (int s = 0; s < kb_resource_count(); s++) {
        if (g_strcmp0(kb_resource_name(s), name) == 0)
            return s;
    }
    return -1;
}

static void read_resources(Binpack *bp, const KbConfPlugin *conf)
{
    const char *list =
            conf != NULL ? g_hash_table_lookup(conf->arguments, "binpack.resources") : NULL;
    if (list == NULL)
        return;
    g_auto(GStrv) names = g_strsplit(list, ",", -1);
    for (guint i = 0; names[i] != NULL; i++) {
        const char *name = g_strstrip(names[i]);
        int s = *name != '\0' ? known_slot(name) : -1;
        if (s < 0 || s == KB_RES_CPU || s == KB_RES_MEMORY)
            continue;
        g_autofree char *key = g_strconcat("binpack.resources.", name, NULL);
        bp->per_slot[s] = nonneg(conf, key);
    }
}

static gpointer binpack_open(KbSession *ssn, const KbConfPlugin *conf)
{
    Binpack *bp = g_new0(Binpack, 1);
    bp->weight = kb_conf_plugin_arg_double(conf, "binpack.weight", 1);
    bp->per_slot[KB_RES_CPU] = nonneg(conf, "binpack.cpu");
    bp->per_slot[KB_RES_MEMORY] = nonneg(conf, "binpack.memory");
    read_resources(bp, conf);
    return bp;
}

static double node_score(gpointer state, const KbTaskInfo *task, const KbNodeInfo *node)
{
    const Binpack *bp = state;
    if (bp->weight == 0)
        return 0;
    double score = 0, weights = 0;
    for (int s = 0; s < KB_RES_MAX; s++) {
        gint64 req = task->resreq.v[s];
        double w = bp->per_slot[s];
        if (req <= 0 || w == 0)
            continue;
        gint64 cap = node->allocatable.v[s];
        if (cap <= 0)
            continue;
        gint64 after = node->used.v[s] + req;
        if (after > cap)
            return 0;
        score += w * (double)after / (double)cap;
        weights += w;
    }
    if (weights > 0)
        score /= weights;
    return score * 100.0 * bp->weight;
}

static const struct kb_plugin_arg binpack_arguments[] = {
        {"binpack.weight", KB_ARG_NUMBER},      {"binpack.cpu", KB_ARG_NUMBER},
        {"binpack.memory", KB_ARG_NUMBER},      {"binpack.resources", KB_ARG_STRING},
        {"binpack.resources.*", KB_ARG_NUMBER}, {NULL, 0},
};

const struct kb_plugin_ops kb_plugin_binpack = {
        .name = "binpack",
        .arguments = binpack_arguments,
        .open = binpack_open,
        .close = g_free,
        .node_score = node_score,
};
