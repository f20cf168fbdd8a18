/*
 * usage: what each queue has used, decayed over time (issue 26, "fair share that remembers"), as
 * Slurm's PriorityDecayHalfLife and Kueue's usageHalfLifeTime do it.
 *
 * Per queue and per resource (cpu, memory, nvidia.com/gpu: kb_qtree_slots) one figure in
 * resource-seconds (GPU-seconds for GPUs). Advancing a queue's figure from its last time t0 to
 * @now while it held H: U(now) = U(t0) 2^(-dt/h) + H h/ln 2 (1 - 2^(-dt/h)), dt = now - t0, h the
 * half-life: the integral of what it held, each second weighted by 2^(-age/h). A queue that held
 * G GPUs for ever tends to G h/ln 2. The cache owns one KbUsage (it lives as long as the cache);
 * the proportion plugin advances it once a cycle with what each queue held since the last one.
 */
#pragma once

#include <glib.h>

#include "kube/kb-resource.h"

typedef struct KbUsage KbUsage;

KbUsage *kb_usage_new(void);
void kb_usage_free(KbUsage *u);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbUsage, kb_usage_free)

/* Decay queue @queue's figures (interned name) to @now and add what it held, @held, since its last
 * time, with half-life @half_life seconds (> 0). The first call for a queue only stamps @now. A
 * @now before the last time changes nothing. */
void kb_usage_advance(KbUsage *u, const char *queue, const KbResources *held, gint64 now,
                      gint64 half_life);
/* Queue @queue's decayed usage of resource slot @slot at its last time, in resource-seconds; 0
 * when unknown. */
double kb_usage_get(const KbUsage *u, const char *queue, int slot);
/* Set the figure (a restart reading it back): @value at time @t. */
void kb_usage_set(KbUsage *u, const char *queue, int slot, double value, gint64 t);
/* The time queue @queue's figures are at (unix seconds), or -1 when it has none. */
gint64 kb_usage_time(const KbUsage *u, const char *queue);
/*
 * Adopt figures read back from the Queue's status (status.usage, written by a kube-batchd that
 * ran before): @values per resource slot (KB_RES_MAX of them) at time @t, but only when @t is
 * later than what @u holds for @queue, so that a leader's own status coming back through its
 * informer changes nothing and a new leader or a restart starts from the last written figures.
 * TRUE when adopted.
 */
gboolean kb_usage_restore(KbUsage *u, const char *queue, const double *values, gint64 t);
