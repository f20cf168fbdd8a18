/* Sub-gangs: see subgroup.h. */
#include "scheduler/subgroup.h"

#include <string.h>

struct KbSubGroups {
    gint ref_count;
    const KbSubGroupPolicy *policies; /* the group's, or &composite */
    guint n_policies;
    KbSubGroupPolicy composite; /* a composite's one policy (name borrowed) */
    GArray *groups;             /* KbSubGroup */
    GHashTable *of_task;        /* KbTaskInfo* -> index + 1 */
};

static gboolean selects(const KbSubGroupPolicy *p, const KbPod *pod)
{
    GHashTable *labels = pod->meta.labels;
    if (p->match_labels != NULL) {
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, p->match_labels);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            if (g_strcmp0(g_hash_table_lookup(labels, k), v) != 0)
                return FALSE;
        }
    }
    for (guint i = 0; i < p->n_keys; i++) {
        if (g_hash_table_lookup(labels, p->keys[i]) == NULL)
            return FALSE;
    }
    return TRUE;
}

/* The interned "policy/value,value" that names the sub-group of @pod under @p. */
static const char *group_key(const KbSubGroupPolicy *p, guint policy, const KbPod *pod)
{
    g_autoptr(GString) s = g_string_new(NULL);
    g_string_append_printf(s, "%u/", policy);
    for (guint i = 0; i < p->n_keys; i++) {
        if (i > 0)
            g_string_append_c(s, ',');
        g_string_append(s, g_hash_table_lookup(pod->meta.labels, p->keys[i]));
    }
    return g_intern_string(s->str);
}

static void sub_group_clear(gpointer data)
{
    KbSubGroup *g = data;
    g_ptr_array_unref(g->tasks);
}

static KbSubGroups *sub_groups_new(void)
{
    KbSubGroups *sg = g_new0(KbSubGroups, 1);
    sg->ref_count = 1;
    sg->groups = g_array_new(FALSE, TRUE, sizeof(KbSubGroup));
    g_array_set_clear_func(sg->groups, sub_group_clear);
    sg->of_task = g_hash_table_new(NULL, NULL);
    return sg;
}

/* The topology key every child names, else NULL (for messages: the placing uses each child's). */
static const char *children_topology_key(const GPtrArray *children)
{
    const char *key = NULL;
    for (guint i = 0; i < children->len; i++) {
        const KbPodGroup *c = children->pdata[i];
        if (c->topology_key == NULL || (key != NULL && key != c->topology_key))
            return NULL;
        key = c->topology_key;
    }
    return key;
}

/* A composite's children that have pods, one sub-group each, in the order of their first task. */
static KbSubGroups *composite_build(const KbJobInfo *job)
{
    const KbPodGroup *pg = job->group;
    KbSubGroups *sg = sub_groups_new();
    sg->composite.name = pg->meta.name;
    sg->composite.min_groups = pg->min_groups;
    sg->composite.topology_key = children_topology_key(job->children);
    sg->policies = &sg->composite;
    sg->n_policies = 1;
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal); /* -> i + 1 */
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        const KbPodGroup *child = NULL;
        for (guint c = 0; c < job->children->len && child == NULL; c++) {
            const KbPodGroup *pc = job->children->pdata[c];
            if (g_strcmp0(pc->meta.name, t->pod->group_name) == 0)
                child = pc;
        }
        if (child == NULL)
            continue;
        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(by_name, child->meta.name));
        if (at == 0) {
            KbSubGroup g = {0, g_intern_string(child->meta.name), g_ptr_array_new(),
                            (guint)MAX(child->min_member, 1), child->topology_key};
            g_array_append_val(sg->groups, g);
            at = sg->groups->len;
            g_hash_table_insert(by_name, child->meta.name, GUINT_TO_POINTER(at));
        }
        g_ptr_array_add(g_array_index(sg->groups, KbSubGroup, at - 1).tasks, t);
        g_hash_table_insert(sg->of_task, t, GUINT_TO_POINTER(at));
    }
    return sg;
}

KbSubGroups *kb_sub_groups_build(const KbJobInfo *job)
{
    const KbPodGroup *pg = job->group;
    if (pg != NULL && pg->composite)
        return composite_build(job);
    if (pg == NULL || pg->n_sub_groups == 0)
        return NULL;
    KbSubGroups *sg = sub_groups_new();
    sg->policies = pg->sub_groups;
    sg->n_policies = pg->n_sub_groups;
    g_autoptr(GHashTable) by_key = g_hash_table_new(NULL, NULL); /* key -> index + 1 */
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        for (guint p = 0; p < pg->n_sub_groups; p++) {
            const KbSubGroupPolicy *pol = &pg->sub_groups[p];
            if (!selects(pol, t->pod))
                continue;
            const char *key = group_key(pol, p, t->pod);
            guint at = GPOINTER_TO_UINT(g_hash_table_lookup(by_key, key));
            if (at == 0) {
                KbSubGroup g = {p, strchr(key, '/') + 1, g_ptr_array_new(), (guint)pol->size,
                                pol->topology_key};
                g_array_append_val(sg->groups, g);
                at = sg->groups->len;
                g_hash_table_insert(by_key, (gpointer)key, GUINT_TO_POINTER(at));
            }
            g_ptr_array_add(g_array_index(sg->groups, KbSubGroup, at - 1).tasks, t);
            g_hash_table_insert(sg->of_task, t, GUINT_TO_POINTER(at));
            break; /* the first policy that selects the pod has it */
        }
    }
    for (guint i = 0; i < sg->groups->len; i++) {
        KbSubGroup *g = &g_array_index(sg->groups, KbSubGroup, i);
        if (g->need == 0)
            g->need = g->tasks->len;
    }
    return sg;
}

KbSubGroups *kb_sub_groups_ref(KbSubGroups *sg)
{
    sg->ref_count++;
    return sg;
}

void kb_sub_groups_unref(KbSubGroups *sg)
{
    if (sg == NULL || --sg->ref_count > 0)
        return;
    g_array_unref(sg->groups);
    g_hash_table_unref(sg->of_task);
    g_free(sg);
}

guint kb_sub_groups_count(const KbSubGroups *sg)
{
    return sg->groups->len;
}

KbSubGroup *kb_sub_groups_get(const KbSubGroups *sg, guint i)
{
    return &g_array_index(sg->groups, KbSubGroup, i);
}

const KbSubGroupPolicy *kb_sub_groups_policy(const KbSubGroups *sg, guint i)
{
    return &sg->policies[i];
}

gboolean kb_sub_groups_is_composite(const KbSubGroups *sg)
{
    return sg->policies == &sg->composite;
}

guint kb_sub_groups_n_policies(const KbSubGroups *sg)
{
    return sg->n_policies;
}

gint kb_sub_groups_of(const KbSubGroups *sg, const KbTaskInfo *task)
{
    return (gint)GPOINTER_TO_UINT(g_hash_table_lookup(sg->of_task, task)) - 1;
}

guint kb_sub_group_ready(const KbSubGroup *g)
{
    guint n = 0;
    for (guint i = 0; i < g->tasks->len; i++) {
        switch (((const KbTaskInfo *)g->tasks->pdata[i])->state) {
        case KB_TASK_ALLOCATED:
        case KB_TASK_BINDING:
        case KB_TASK_BOUND:
        case KB_TASK_RUNNING:
        case KB_TASK_SUCCEEDED:
            n++;
            break;
        default:
            break;
        }
    }
    return n;
}

guint kb_sub_groups_whole(const KbSubGroups *sg, guint policy)
{
    guint n = 0;
    for (guint i = 0; i < sg->groups->len; i++) {
        const KbSubGroup *g = &g_array_index(sg->groups, KbSubGroup, i);
        n += g->policy == policy && kb_sub_group_ready(g) >= g->need;
    }
    return n;
}

gboolean kb_sub_groups_satisfied(const KbSubGroups *sg)
{
    for (guint p = 0; p < sg->n_policies; p++) {
        if (kb_sub_groups_whole(sg, p) < (guint)MAX(sg->policies[p].min_groups, 0))
            return FALSE;
    }
    return TRUE;
}
