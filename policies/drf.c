/*
 * drf: dominant resource fairness inside a queue. A job's share is the largest of
 * allocated/cluster-total over cpu, memory and nvidia.com/gpu; the job with the smaller share goes
 * first. Shares follow job->allocated, which the session keeps current as tasks are placed.
 * preemptable: see preemptable() below.
 */
#include "policies/plugin.h"

typedef struct {
    KbSession *ssn;
} Drf;

static const int drf_slots[] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};

static double share_of(const Drf *d, const KbResources *allocated)
{
    double s = 0;
    for (guint i = 0; i < G_N_ELEMENTS(drf_slots); i++) {
        int slot = drf_slots[i];
        gint64 total = d->ssn->total.v[slot];
        if (total > 0 && allocated->v[slot] > 0)
            s = MAX(s, (double)allocated->v[slot] / (double)total);
    }
    return s;
}

static double share(const Drf *d, const KbJobInfo *job)
{
    return share_of(d, &job->allocated);
}

/*
 * Volcano's drf preemptableFn: a victim may go when its job's share after losing it stays at least
 * the preemptor job's share after gaining the preemptor (victims of one job are counted together).
 */
static gboolean preemptable(gpointer state, const KbTaskInfo *preemptor, GPtrArray *victims)
{
    const Drf *d = state;
    KbResources mine = preemptor->job->allocated;
    kb_resources_add(&mine, &preemptor->resreq);
    double ls = share_of(d, &mine);
    g_autoptr(GHashTable) left = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    g_autoptr(GPtrArray) keep = g_ptr_array_new();
    for (guint i = 0; i < victims->len; i++) {
        KbTaskInfo *v = victims->pdata[i];
        KbResources *r = g_hash_table_lookup(left, v->job);
        if (r == NULL) {
            r = g_memdup2(&v->job->allocated, sizeof(KbResources));
            g_hash_table_insert(left, v->job, r);
        }
        kb_resources_sub(r, &v->resreq);
        double rs = share_of(d, r);
        if (ls < rs || rs - ls > -1e-6)
            g_ptr_array_add(keep, v);
    }
    g_ptr_array_set_size(victims, 0);
    for (guint i = 0; i < keep->len; i++)
        g_ptr_array_add(victims, keep->pdata[i]);
    return TRUE;
}

static gpointer drf_open(KbSession *ssn, const KbConfPlugin *conf)
{
    Drf *d = g_new0(Drf, 1);
    d->ssn = ssn;
    return d;
}

static int job_order(gpointer state, const KbJobInfo *a, const KbJobInfo *b)
{
    double sa = share(state, a), sb = share(state, b);
    if (sa == sb)
        return 0;
    return sa < sb ? -1 : 1;
}

const struct kb_plugin_ops kb_plugin_drf = {
        .name = "drf",
        .open = drf_open,
        .close = g_free,
        .job_order = job_order,
        .preemptable = preemptable,
};
