/*
 * Defaults and validation of the smaller kinds as kube-apiserver 1.19 applies them on create:
 * the TaintNodesByCondition admission plugin's not-ready taint and a Node's status defaults,
 * PriorityClass and PodDisruptionBudget defaults, Event validation (core/v1 and
 * events.k8s.io/v1).
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-store.h"

#define KAS_TAINT_NOT_READY "node.kubernetes.io/not-ready"

/* A new Node: the not-ready NoSchedule taint (removed by the node lifecycle emulation in
 * kas-kubelet once the node reports Ready) and status defaults. */
void kas_admit_node_create(json_object *node);

/* The fields of a Node's status that are always there (daemonEndpoints, nodeInfo). */
void kas_admit_node_status_defaults(json_object *node);

/* Is @node Ready=True while still carrying the not-ready taint? */
gboolean kas_admit_node_needs_untaint(json_object *node);
/* Remove the not-ready taint; TRUE when there was one. */
gboolean kas_admit_node_untaint(json_object *node, gpointer unused);

/* Kind-specific defaults and checks of a create of @obj in @res (not pods, nodes, CRDs). */
gboolean kas_admit_create(const KasRes *res, json_object *obj, GError **error);
