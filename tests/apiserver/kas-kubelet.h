/*
 * The cluster's moving parts besides the API: simulated kubelets (--simulate-kubelet) and the
 * end of pods' grace periods. Runs on its own thread and GMainContext, fed by the store's hook.
 *
 * With simulation on, every node is made Ready (capacity, conditions, addresses, nodeInfo) and
 * renews its Lease in kube-node-lease; a pod bound to an existing node goes Pending -> Running
 * after the start delay, then, when it carries the annotations
 *   sim.kube-batchd.io/run-seconds: "2.5"   (default 0 when only the exit code is given)
 *   sim.kube-batchd.io/exit-code:   "137"   (default 0 when only the run time is given)
 * its containers exit with that code after that time: restartPolicy Never ends in Succeeded
 * (0) or Failed (non-zero) with containerStatuses[].state.terminated.exitCode set; Always and
 * OnFailure (non-zero) restart the containers (restartCount, lastState.terminated) and run again.
 * Without the annotations a pod runs until deleted. A deleted pod on a simulated node is
 * confirmed gone after the stop delay (or its grace period, if shorter); without simulation a
 * terminating pod is removed when its grace period ends.
 */
#pragma once

#include "tests/apiserver/kas-store.h"

#include "tests/kubelet/kbl-sim.h"

/* The rules themselves are tests/kubelet/kbl-sim.c, shared with the separate bin/kb-kubelet. */
#define KAS_SIM_RUN_SECONDS KBL_SIM_RUN_SECONDS
#define KAS_SIM_EXIT_CODE KBL_SIM_EXIT_CODE

typedef struct {
    gboolean simulate;
    guint start_delay_ms; /* bound -> Running (default 100) */
    guint stop_delay_ms;  /* deletion confirmed by the kubelet (default 100) */
    guint heartbeat_ms;   /* Lease renewal period (default 10000) */
    gboolean resource_claims; /* run the resource-claim controller (kas-claims.h) */
} KasKubeletOptions;

typedef struct KasKubelet KasKubelet;

/* Start the thread and install the store hook. */
KasKubelet *kas_kubelet_new(KasStore *store, const KasKubeletOptions *opts);
/* Remove the hook, stop the thread, drop pending timers. */
void kas_kubelet_free(KasKubelet *k);
