/*
 * Kubernetes' own gang API, scheduling.k8s.io/v1beta1 (1.37, beta: served only when enabled,
 * as kube-apiserver's --runtime-config scheduling.k8s.io/v1beta1=true): Workload and PodGroup
 * defaults, Priority admission and validation with the real server's messages for the fields
 * handled here (required, immutable, unions, gang.minCount >= 1, at most 8 pod group templates,
 * names), and a pod's spec.schedulingGroup (a DNS subdomain; immutable like the rest of a pod's
 * spec, see kas-pods.c). scheduling.k8s.io/v1alpha3 (alpha, its own --runtime-config) adds
 * CompositePodGroup (gang.minGroupCount >= 1, workloadRef required, the whole spec immutable)
 * and, on PodGroups and Workloads, parentCompositePodGroupName and compositePodGroupTemplates,
 * which are dropped, as a disabled feature's fields are, while v1alpha3 is off.
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-store.h"

#define KAS_GANG_GROUP         "scheduling.k8s.io"
#define KAS_GANG_VERSION       "v1beta1"
#define KAS_GANG_MAX_TEMPLATES 8 /* WorkloadMaxPodGroupTemplates */
#define KAS_GANG_MAX_DEPTH     4 /* WorkloadMaxTreeDepth */

/* Is @res one of the resources of this API (workloads, podgroups, compositepodgroups)? */
gboolean kas_gang_is(const KasRes *res);

/* A create of @obj in @res (kas_gang_is): defaults, Priority admission (a PodGroup's priority
 * from its priorityClassName; 403 when the class does not exist), validation (422). The store
 * is locked. */
gboolean kas_gang_admit_create(KasStore *store, const KasRes *res, json_object *obj,
                               GError **error);

/* An update of @old to @new (not the status): defaults, then what may not change. */
gboolean kas_gang_admit_update(const KasRes *res, json_object *old, json_object *new_obj,
                               GError **error);

/* A pod's spec.schedulingGroup into @errs. */
void kas_gang_validate_pod(json_object *spec, KasFieldErrors *errs);
