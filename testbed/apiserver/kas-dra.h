/*
 * Dynamic Resource Allocation, resource.k8s.io/v1 (GA in 1.34, served by default): DeviceClass
 * (cluster-scoped), ResourceClaim (namespaced, status subresource), ResourceClaimTemplate
 * (namespaced) and ResourceSlice (cluster-scoped, field selectors spec.nodeName, spec.driver,
 * spec.pool.name), with the v1 defaults and kube-apiserver's validation messages
 * (pkg/apis/resource/validation) for what is handled here: names (DNS labels and subdomains,
 * driver names, qualified attribute names), unions (exactly / firstAvailable, the slice's node
 * fields, one attribute value), limits (32 requests, selectors, constraints and configs, 8
 * firstAvailable, 128 devices per slice, 32 attributes and capacities per device, 256
 * reservedFor, 32 allocation results, 10 KiB CEL expressions), what may not change (a claim's or
 * template's spec, a slice's driver, pool name and node, a claim's allocation once set unless
 * cleared) and the claim status' references to the spec's requests. CEL selector expressions
 * are compiled with kube/kb-cel.h: a syntax or type error is refused ("compilation failed: ..."),
 * valid CEL that kb-cel does not implement is accepted, as the real server accepts it.
 *
 * Not handled: device taints and tolerations beyond their operator, admin access (needs the
 * namespace label), counters, consumable capacity, binding conditions, status.devices' data.
 *
 * Pods: spec.resourceClaims (names, exactly one source, containers' resources.claims naming
 * one) and status.resourceClaimStatuses.
 */
#pragma once

#include <json-c/json.h>

#include "kube/kb-json.h"
#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-store.h"

#define KAS_DRA_GROUP   "resource.k8s.io"
#define KAS_DRA_VERSION "v1"

#define KAS_DRA_MAX_REQUESTS       32    /* DeviceRequestsMaxSize */
#define KAS_DRA_MAX_SELECTORS      32    /* DeviceSelectorsMaxSize */
#define KAS_DRA_MAX_CONSTRAINTS    32    /* DeviceConstraintsMaxSize */
#define KAS_DRA_MAX_CONFIGS        32    /* DeviceConfigMaxSize */
#define KAS_DRA_MAX_FIRST_AVAIL    8     /* FirstAvailableDeviceRequestMaxSize */
#define KAS_DRA_MAX_DEVICES        128   /* ResourceSliceMaxDevices */
#define KAS_DRA_MAX_ATTRS          32    /* ResourceSliceMaxAttributesAndCapacitiesPerDevice */
#define KAS_DRA_MAX_RESERVED_FOR   256   /* ResourceClaimReservedForMaxSize */
#define KAS_DRA_MAX_RESULTS        32    /* AllocationResultsMaxSize */
#define KAS_DRA_MAX_CEL_LEN        10240 /* CELSelectorExpressionMaxLength */
#define KAS_DRA_MAX_ATTR_VALUE_LEN 64    /* DeviceAttributeMaxValueLength */
#define KAS_DRA_MAX_COUNTER_SETS   8     /* ResourceSliceMaxCounterSets */
#define KAS_DRA_MAX_SET_COUNTERS   32    /* ResourceSliceMaxCountersPerCounterSet */
#define KAS_DRA_MAX_CONSUMPTIONS   2     /* ResourceSliceMaxDeviceCounterConsumptionsPerDevice */
#define KAS_DRA_MAX_USE_COUNTERS   32    /* ResourceSliceMaxCountersPerDeviceCounterConsumption */
#define KAS_DRA_MAX_ADV_DEVICES    64    /* ResourceSliceMaxDevicesWithAdvancedFeatures */
#define KAS_DRA_MAX_VALID_VALUES   10    /* CapacityRequestPolicyDiscreteMaxOptions */

/* The annotation kube-controller-manager puts on a claim it made from a pod's template. */
#define KAS_DRA_POD_CLAIM_ANNOTATION "resource.kubernetes.io/pod-claim-name"

/* Is @res one of this API's resources? */
gboolean kas_dra_is(const KasRes *res);

/* A create of @obj in @res (kas_dra_is): defaults, then validation (422). A claim's status is
 * dropped, as the real strategy does. */
gboolean kas_dra_admit_create(const KasRes *res, json_object *obj, GError **error);

/* An update of @old to @new_obj (not the status): defaults, validation, what may not change. */
gboolean kas_dra_admit_update(const KasRes *res, json_object *old, json_object *new_obj,
                              GError **error);

/* An update of a claim's status (@new_obj carries the new status over @old's spec). */
gboolean kas_dra_admit_status(const KasRes *res, json_object *old, json_object *new_obj,
                              GError **error);
/* The text of spec.devices.requests in a stored claim's @spec text (@len bytes) into *@requests
 * ("devices" and "requests" each once): FALSE when the text is anything else. */
gboolean kas_dra_spec_requests(const char *spec, gsize len, KbJsonStr *requests);

/*
 * A claim's first status as the text @text (@len bytes), over a claim whose spec is stored as the
 * text @spec (@spec_len bytes): TRUE only when kas_dra_admit_status() surely accepts it over the
 * claim without a status and not being deleted, and json-c, having parsed it, prints it back as
 * the same bytes (plain strings, no white space, no member twice): allocation.devices.results
 * of request, driver, pool and device, a nodeSelector with terms, reservedFor of resource, name
 * and uid. FALSE for anything else, valid or not: the caller takes the general path then, which
 * answers as it always did.
 */
gboolean kas_dra_first_status_text(const char *text, gsize len, const char *spec, gsize spec_len);

/* A pod's spec.resourceClaims and its containers' resources.claims into @errs. */
void kas_dra_validate_pod(json_object *spec, KasFieldErrors *errs);

/* A pod's status.resourceClaimStatuses against its spec.resourceClaims into @errs. */
void kas_dra_validate_pod_status(json_object *pod, KasFieldErrors *errs);
