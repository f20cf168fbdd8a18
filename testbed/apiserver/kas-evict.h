/*
 * The Eviction subresource's disruption-budget check, as kube-apiserver's eviction REST (1.19;
 * policy/v1 Evictions are accepted as on 1.22+): a pod that is not Running (Pending, Succeeded,
 * Failed) is evicted whatever its budget says; a Running pod covered by one
 * PodDisruptionBudget is evicted only when the budget's status (written by a disruption
 * controller, which kb-apiserver does not run: a test or a client writes it through /status)
 * has caught up with its generation and allows a disruption, which the eviction then uses up.
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-store.h"

/* Under the store lock: may pod @pod (parsed) of namespace @ns be evicted? FALSE with the real
 * server's 429 (or 500 for several budgets) otherwise; on TRUE the budget's
 * disruptionsAllowed has been decremented. */
gboolean kas_evict_check_locked(KasStore *store, const char *ns, json_object *pod, GError **error);

/* An Eviction body's apiVersion must be policy/v1beta1 or policy/v1 (400 otherwise). */
gboolean kas_evict_check_body(json_object *eviction, GError **error);
