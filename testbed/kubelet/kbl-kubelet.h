/*
 * bin/kb-kubelet's engine: simulated kubelets for a set of nodes, against any API server through
 * kube/ (REST client and a pod informer), like KWOK. The rules (how a node looks Ready, how a pod
 * starts, runs and ends) are testbed/kubelet/kbl-sim.c, the ones kb-apiserver's embedded
 * --simulate-kubelet applies too.
 *
 *   - Registers the nodes of the --nodes file (kb-apiserver's format,
 * testbed/apiserver/kas-nodes.h): creates each (an existing node of that name is adopted), makes
 * its status Ready, removes the node.kubernetes.io/not-ready taint the API server puts on new nodes
 * (the node lifecycle controller's job, absent without a controller manager), renews its Lease in
 * kube-node-lease every heartbeat and posts its status again every status interval.
 *   - Watches all pods, keeps those bound to its nodes: a Pending one goes Running after the
 *     start delay; one whose annotations give a run time exits after it with the annotated code
 *     (kbl-sim.h), restarting in place per restartPolicy; a pod being deleted is confirmed gone
 *     after the stop delay (or its grace period when shorter) with a DELETE of grace period 0 and
 *     the pod's uid as precondition, as a kubelet does.
 *   - With --dra (kbl-dra.h): each node's nvidia.com/gpu become devices of a ResourceSlice of the
 *     driver gpu.nvidia.com instead of an extended resource, and a pod with resource claims
 *     stays Pending until every claim is allocated and reserved for it, with a Warning event
 *     FailedPrepareDynamicResources that names the claim and says what is missing. With --mig as
 *     well, every GPU is partitionable: counter-set slices and one slice per GPU of its MIG
 *     placements and the whole GPU.
 * Pod status writes are PUTs of the status subresource from the informer's copy with its
 * resourceVersion; a 409 reads the pod and tries again from that (at most three times). Until the
 * watch shows a pod at the resourceVersion of our last write of it (or newer), copies of it are
 * not acted on: a lagging watch would otherwise start it again on every older event and resync.
 * At scale (bench-scale runs 5,000 nodes and 150,000 pods): everything after registration is
 * asynchronous on the caller's main loop (kube/'s libcurl multi, at most the client's
 * max-in-flight requests on the wire), so a slow answer delays no other node or pod. Lease
 * renewals (every heartbeat, 10 s as a kubelet's) and the periodic status (a merge patch of the
 * conditions, no read) are spread over their interval in up to 100 slices rather than sent in
 * one burst. Registration (create, read, status, taint) stays blocking, node by node, once.
 * kbl_kubelet_cost() says what all this costs the server.
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"

typedef struct {
    const char *nodes_file;
    guint start_delay_ms; /* bound -> Running (default 100) */
    guint stop_delay_ms;  /* deletion confirmed (default 100) */
    guint heartbeat_ms;   /* Lease renewal (default 10000) */
    guint node_status_ms; /* node status posted again (default 60000) */
    gboolean dra;         /* GPUs as ResourceSlices, pods gated on their claims (kbl-dra.h) */
    gboolean mig;         /* with dra: GPUs MIG-capable, partitionable devices (kbl-dra.h) */
} KblKubeletOptions;

typedef struct KblKubelet KblKubelet;

/* Reads the nodes file. NULL with an error naming the file and the entry when it is invalid or
 * names no node. @client must outlive the kubelet. */
KblKubelet *kbl_kubelet_new(KbClient *client, const KblKubeletOptions *opts, GError **error);
/* Registers the nodes (blocking; FALSE with the first error: the API server refused a node),
 * then starts the pod informer and the timers on the thread-default main context. */
gboolean kbl_kubelet_start(KblKubelet *k, GError **error);
guint kbl_kubelet_n_nodes(const KblKubelet *k);
/* Pods started, finished (Succeeded, Failed or restarted in place) and deletions confirmed. */
void kbl_kubelet_counts(const KblKubelet *k, guint64 *started, guint64 *finished, guint64 *deleted);
/* What the kubelet asked of the server since kbl_kubelet_start(): requests and requests/s in all
 * and by kind (register, lease, node-status, pod-status, pod-delete), one line (caller frees). */
char *kbl_kubelet_cost(const KblKubelet *k);
/* Stop making requests: the timers (leases, node status, pod lifecycle, resync) and the pods'
 * watch. What is in flight still completes on the main loop; kbl_kubelet_free() after that. */
void kbl_kubelet_stop(KblKubelet *k);
void kbl_kubelet_free(KblKubelet *k);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KblKubelet, kbl_kubelet_free)
