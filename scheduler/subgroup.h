/*
 * Sub-gangs: a job that starts when enough of its parts can start, each part whole.
 *
 * One model for the APIs that describe parts of a job (kube/kb-objects.h KbSubGroupPolicy, read
 * from Volcano's spec.subGroupPolicy): a policy selects some of the job's pods and splits them into
 * sub-groups, one per value tuple of its label keys. A sub-group counts when `need` of its pods
 * hold a node (allocated, binding, bound, running) or succeeded: subGroupSize, or all of its pods.
 * A job is satisfied when every policy has at least min_groups sub-groups that count.
 * The allocate action places each sub-group whole or not at all, inside one domain of the
 * policy's node label when it has one (scheduler/allocate.c).
 *
 * A CompositePodGroup (scheduling.k8s.io/v1alpha3) is the same model: one policy named after the
 * composite with min_groups = minGroupCount, each child PodGroup with pods one sub-group with
 * need = its minCount, inside one domain of the child's own topology key.
 *
 * Built from the cache's records at the start of a job's turn; borrows the job's tasks, so it
 * lives no longer than the session.
 */
#pragma once
#include <glib.h>
#include "scheduler/cache.h"

typedef struct {
    guint policy;     /* index into the group's sub_groups */
    const char *key;  /* interned "value,value" of the policy's keys (for messages) */
    GPtrArray *tasks; /* KbTaskInfo*, borrowed, in the job's task order */
    guint need;       /* tasks that must hold a node for it to count */
    const char *topology_key; /* interned node label it stays inside one domain of, or NULL */
} KbSubGroup;

typedef struct KbSubGroups KbSubGroups;

/* @job's sub-groups, or NULL when its group has no sub-group policy. Free with
 * kb_sub_groups_unref. */
KbSubGroups *kb_sub_groups_build(const KbJobInfo *job);
void kb_sub_groups_unref(KbSubGroups *sg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbSubGroups, kb_sub_groups_unref)
KbSubGroups *kb_sub_groups_ref(KbSubGroups *sg);

guint kb_sub_groups_count(const KbSubGroups *sg);
KbSubGroup *kb_sub_groups_get(const KbSubGroups *sg, guint i);
/* The policy of @sg's job at @i (borrowed). */
const KbSubGroupPolicy *kb_sub_groups_policy(const KbSubGroups *sg, guint i);
guint kb_sub_groups_n_policies(const KbSubGroups *sg);
/* The index of @task's sub-group, -1 when it is in none. */
gint kb_sub_groups_of(const KbSubGroups *sg, const KbTaskInfo *task);
/* Tasks of @g that hold a node or succeeded. */
guint kb_sub_group_ready(const KbSubGroup *g);
/* Sub-groups of @policy that count. */
guint kb_sub_groups_whole(const KbSubGroups *sg, guint policy);
/* Built from a CompositePodGroup (its one policy is the composite, its sub-groups children). */
gboolean kb_sub_groups_is_composite(const KbSubGroups *sg);
/* Every policy has its minimum of sub-groups that count. */
gboolean kb_sub_groups_satisfied(const KbSubGroups *sg);
