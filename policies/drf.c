/*
 * drf: dominant resource fairness inside a queue. A job's share is the largest of
 * allocated/cluster-total over cpu, memory and nvidia.com/gpu; the job with the smaller share goes
 * first. Shares follow job->allocated, which the session keeps current as tasks are placed.
 */
#include "policies/plugin.h"

typedef struct {
    KbSession *ssn;
} Drf;

static const int drf_slots[] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};

static double share(const Drf *d, const KbJobInfo *job)
{
    double s = 0;
    for (guint i = 0; i < G_N_ELEMENTS(drf_slots); i++) {
        int slot = drf_slots[i];
        gint64 total = d->ssn->total.v[slot];
        if (total > 0 && job->allocated.v[slot] > 0)
            s = MAX(s, (double)job->allocated.v[slot] / (double)total);
    }
    return s;
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
};
