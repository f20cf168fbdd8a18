/*
 * The simulated kubelet's rules, shared by kb-apiserver's embedded --simulate-kubelet
 * (testbed/apiserver/kas-kubelet.c) and the separate bin/kb-kubelet (testbed/kubelet/kbl-kubelet.c):
 * what a node's status looks like once its kubelet is up, how a bound pod starts, how its
 * containers end, and the node Lease. Pure functions on JSON objects: no I/O, no clock (the
 * caller passes the time), so both runners make the same objects.
 *
 * A pod's run is read from its annotations:
 *   sim.kube-batchd.io/run-seconds: "2.5"   (default 0 when only the exit code is given)
 *   sim.kube-batchd.io/exit-code:   "137"   (default 0 when only the run time is given)
 * Without either the pod runs until deleted. When its containers exit, restartPolicy Never (and
 * OnFailure with code 0) ends the pod Succeeded (0) or Failed (non-zero) with
 * containerStatuses[].state.terminated.exitCode; Always (the default) and OnFailure with a
 * non-zero code restart the containers in place (restartCount + 1, lastState.terminated) and run
 * them again, for the same time again (at least KBL_SIM_MIN_RERUN_MS).
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#define KBL_SIM_RUN_SECONDS "sim.kube-batchd.io/run-seconds"
#define KBL_SIM_EXIT_CODE   "sim.kube-batchd.io/exit-code"
/* A restarted container runs at least this long before it exits again. */
#define KBL_SIM_MIN_RERUN_MS 1000
/* The taint the API server puts on a new node until it is Ready. */
#define KBL_SIM_NOT_READY_TAINT "node.kubernetes.io/not-ready"

typedef struct {
    gint64 run_ms; /* -1: runs until deleted */
    int exit_code;
} KblSimRun;

/* The run @pod's annotations ask for. */
void kbl_sim_read_run(json_object *pod, KblSimRun *out);

/* A bound, Pending pod that is not being deleted becomes Running: phase, hostIP, podIP(s),
 * startTime, the Ready conditions and a running status per container. FALSE (and @pod untouched)
 * when it is not such a pod. @now: unix seconds. */
gboolean kbl_sim_pod_start(json_object *pod, const char *host_ip, const char *pod_ip, gint64 now);

/* The Running pod's containers exit with @exit_code. FALSE (untouched) when the pod is not
 * Running or is being deleted. *@restarted: the containers were restarted in place. */
gboolean kbl_sim_pod_finish(json_object *pod, int exit_code, gint64 now, gboolean *restarted);

/* The node's status once its kubelet runs: allocatable and capacity (each defaulting to the
 * other, else 8 CPUs, 32Gi, 110 pods), the four conditions with Ready True, addresses
 * (InternalIP @ip and Hostname, unless the node has addresses) and nodeInfo. */
void kbl_sim_node_ready(json_object *node, const char *ip, gint64 now);

/* The node's InternalIP (borrowed from @node), NULL when it has none. */
const char *kbl_sim_node_ip(json_object *node);

/* TRUE when @node's spec.taints holds KBL_SIM_NOT_READY_TAINT; then *@rest receives the other
 * taints (a new array). */
gboolean kbl_sim_node_not_ready_taint(json_object *node, json_object **rest);

/* "2024-01-02T03:04:05.000006Z" for @now_us (newly allocated), as Lease renewTime wants. */
char *kbl_sim_micro_time(gint64 now_us);

/* A node Lease in kube-node-lease held by @node (owned by the Node @node_uid), renewed at
 * @now_us; and the renewal of an existing one. */
json_object *kbl_sim_lease_new(const char *node, const char *node_uid, gint64 now_us);
void kbl_sim_lease_renew(json_object *lease, gint64 now_us);
