/*
 * Pods as kube-apiserver 1.19 admits them (with the newer spec.schedulingGates of 1.27+):
 * scheme defaults, the DefaultTolerationSeconds admission plugin, canonical quantities, the
 * validation of names, containers, resources and annotation sizes with the real messages, and
 * the rules of pod updates (which spec fields may change, shown as the real server's diff).
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-store.h"

/* Total size of an object's annotations (keys and values), as ValidateAnnotations. */
#define KAS_ANNOTATIONS_MAX (256 * 1024)

/* Defaults every decoded pod gets (create and update): container defaults, requests from
 * limits, securityContext, enableServiceLinks, ... */
void kas_pods_defaults(json_object *pod);

/* Quantities of requests and limits in canonical form ("2000m" -> "2", "1024Mi" -> "1Gi"), as
 * they come back once stored; after validation, whose messages show them as sent. */
void kas_pods_canonical(json_object *pod);

/* What admission adds on create only: the not-ready/unreachable NoExecute tolerations of
 * DefaultTolerationSeconds (300 s). */
void kas_pods_admit_create(json_object *pod);

/* Validate a pod to be created (defaults applied) into @errs. */
void kas_pods_validate(json_object *pod, KasFieldErrors *errs);

/* Validate an update of @old to @new (both defaulted) into @errs: the spec may change only in
 * images, activeDeadlineSeconds, added tolerations and removed schedulingGates. */
void kas_pods_validate_update(json_object *old_pod, json_object *new_pod, KasFieldErrors *errs);

/* Annotation size check shared with other kinds: adds @copies identical TooLong errors when the
 * total passes KAS_ANNOTATIONS_MAX (kube-apiserver 1.19 reports a pod update's four times). */
void kas_annotations_validate(json_object *meta, guint copies, KasFieldErrors *errs);

/* Has the pod scheduling gates (spec.schedulingGates non-empty)? */
gboolean kas_pods_gated(json_object *pod);
