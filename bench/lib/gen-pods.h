/*
 * Generated pods for benchmarks and tests, as the API server writes them (compact JSON, its field
 * order, items without kind).
 *
 * kb_gen_pod_append(): pod number @i of a realistic TFJob fleet, about 4 KB: labels, annotations,
 * an ownerReference, two containers with env, resources and volumeMounts, the default
 * tolerations, and a status with conditions and container statuses. Deterministic in @i.
 *
 * kb_gen_pod_append_varied(): a pod drawn from @rand that exercises every field the decoders
 * read (init containers and sidecars, limits without requests, overhead, numbers as quantities,
 * node selectors, required node affinity, tolerations, terminated and waiting containers,
 * deletion timestamps, escaped and non-ASCII strings, nulls, members in shuffled order).
 */
#pragma once

#include <glib.h>

void kb_gen_pod_append(GString *s, guint i);
void kb_gen_pod_append_varied(GString *s, GRand *rand);

/* PodList pages of @page_items pods 0..@n_pods-1 (kb_gen_pod_append), as the API server answers
 * a paged list; *total_bytes is their size. The array frees its strings. */
GPtrArray *kb_gen_pod_pages(guint n_pods, guint page_items, gsize *total_bytes);
