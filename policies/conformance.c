/* conformance: never evict critical pods (system-*-critical classes, or anything in kube-system),
 * neither for preempt nor for reclaim. */
#include "policies/plugin.h"

static gboolean preemptable(gpointer state, const KbTaskInfo *preemptor, GPtrArray *victims)
{
    for (guint i = victims->len; i-- > 0;) {
        const KbTaskInfo *v = victims->pdata[i];
        if (kb_plugin_pod_is_critical(v->pod))
            g_ptr_array_remove_index(victims, i);
    }
    return TRUE;
}

const struct kb_plugin_ops kb_plugin_conformance = {
        .name = "conformance",
        .preemptable = preemptable,
        .reclaimable = preemptable,
};
