/*
 * nodeorder: kube-scheduler's resource scores, each 0..100, weighted by the plugin arguments
 * (Volcano's keys, with or without the "nodeorder." prefix):
 *   leastrequested.weight   (default 1)  free fraction after placing the task: spreads
 *   mostrequested.weight    (default 0)  used fraction after placing: packs
 *   balancedresource.weight (default 1)  1 - spread of the used fractions: keeps cpu/memory even
 * Resources scored: cpu and memory, plus nvidia.com/gpu when the task asks for GPUs (so GPU pods
 * spread or pack by GPUs rather than by the cpu they happen to request).
 */
#include "policies/plugin.h"

#include <math.h>

typedef struct {
    double least, most, balanced;
} NodeOrder;

static double arg(const KbConfPlugin *conf, const char *name, double def)
{
    g_autofree char *full = g_strconcat("nodeorder.", name, NULL);
    return kb_conf_plugin_arg_double(conf, full, kb_conf_plugin_arg_double(conf, name, def));
}

static gpointer nodeorder_open(KbSession *ssn, const KbConfPlugin *conf)
{
    NodeOrder *no = g_new0(NodeOrder, 1);
    no->least = arg(conf, "leastrequested.weight", 1);
    no->most = arg(conf, "mostrequested.weight", 0);
    no->balanced = arg(conf, "balancedresource.weight", 1);
    return no;
}

static double node_score(gpointer state, const KbTaskInfo *task, const KbNodeInfo *node)
{
    const NodeOrder *no = state;
    int slots[3] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};
    int n = task->resreq.v[KB_RES_GPU] > 0 ? 3 : 2;
    double frac[3], least = 0, most = 0, mean = 0;
    for (int i = 0; i < n; i++) {
        int s = slots[i];
        double cap = (double)node->allocatable.v[s];
        double req = (double)(node->used.v[s] + task->resreq.v[s]);
        double f = cap > 0 ? req / cap : 1.0;
        if (f > 1.0)
            f = 1.0;
        frac[i] = f;
        least += (1.0 - f) * 100.0;
        most += f * 100.0;
        mean += f;
    }
    least /= n;
    most /= n;
    mean /= n;
    double var = 0;
    for (int i = 0; i < n; i++)
        var += (frac[i] - mean) * (frac[i] - mean);
    double balanced = (1.0 - sqrt(var / n)) * 100.0;
    return no->least * least + no->most * most + no->balanced * balanced;
}

static const struct kb_plugin_arg nodeorder_arguments[] = {
        {"leastrequested.weight", KB_ARG_NUMBER},
        {"mostrequested.weight", KB_ARG_NUMBER},
        {"balancedresource.weight", KB_ARG_NUMBER},
        {"nodeorder.leastrequested.weight", KB_ARG_NUMBER},
        {"nodeorder.mostrequested.weight", KB_ARG_NUMBER},
        {"nodeorder.balancedresource.weight", KB_ARG_NUMBER},
        {NULL, 0},
};

const struct kb_plugin_ops kb_plugin_nodeorder = {
        .name = "nodeorder",
        .arguments = nodeorder_arguments,
        .open = nodeorder_open,
        .close = g_free,
        .node_score = node_score,
};
