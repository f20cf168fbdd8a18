/* Action registry; see actions.h. */
#include "scheduler/actions.h"

#include <string.h>

static const struct kb_action_ops *const registry[] = {
        &kb_action_enqueue,
        &kb_action_allocate,
        &kb_action_preempt,
        &kb_action_reclaim,
        &kb_action_reserve,
        &kb_action_backfill,
};

const struct kb_action_ops *kb_action_lookup(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(registry); i++) {
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    }
    return NULL;
}

const char *kb_action_names(void)
{
    return "enqueue, allocate, preempt, reclaim, reserve, backfill";
}
