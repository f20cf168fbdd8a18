/*
 * predicates: the static checks of a node for a task (resource fit is the allocate action's, on
 * the live idle vectors): the node exists and is Ready, is schedulable (or the pod tolerates
 * node.kubernetes.io/unschedulable), its NoSchedule/NoExecute taints are tolerated, and its labels
 * match the pod's nodeSelector and required node affinity.
 */
#include "policies/plugin.h"

#include <string.h>

static gboolean tolerates_unschedulable(const KbPod *pod)
{
    for (guint i = 0; i < pod->n_tolerations; i++) {
        const KbToleration *t = &pod->tolerations[i];
        if (t->effect != KB_EFFECT_ALL && t->effect != KB_EFFECT_NO_SCHEDULE)
            continue;
        if ((t->key == NULL && t->op_exists) ||
            (t->key != NULL && strcmp(t->key, "node.kubernetes.io/unschedulable") == 0))
            return TRUE;
    }
    return FALSE;
}

static gboolean predicate(gpointer state, const KbTaskInfo *task, const KbNodeInfo *ni,
                          KbFitFailure *why)
{
    const KbNode *node = ni->node;
    const KbPod *pod = task->pod;
    KbFitReason r = KB_FIT_OK;
    const KbTaint *taint = NULL;
    if (!ni->present || node == NULL)
        r = KB_FIT_GONE;
    else if (!node->ready)
        r = KB_FIT_NOT_READY;
    else if (node->unschedulable && !tolerates_unschedulable(pod))
        r = KB_FIT_UNSCHEDULABLE;
    else if ((taint = kb_plugin_untolerated_taint(pod, node)) != NULL)
        r = KB_FIT_TAINT;
    else if (!kb_plugin_node_selector_matches(pod, node))
        r = KB_FIT_NODE_SELECTOR;
    else if (!kb_plugin_node_affinity_matches(pod, node))
        r = KB_FIT_AFFINITY;
    if (r == KB_FIT_OK)
        return TRUE;
    if (why != NULL) {
        why->reason = r;
        why->taint = taint;
        why->slot = -1;
    }
    return FALSE;
}

const struct kb_plugin_ops kb_plugin_predicates = {
        .name = "predicates",
        .predicate = predicate,
};
