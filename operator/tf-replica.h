/*
 * Replica lifecycle decisions: the seed's exit-code table and what each restart policy does with
 * a pod that ended. Pure functions.
 *
 * Exit codes of the `tensorflow` container (seed documents):
 *   0                            success
 *   1, 2, 126, 127, 128, 139     permanent
 *   130, 137, 143                retryable (unexpected system signals)
 *   138                          retryable only when the user says so, with the TFJob annotation
 *                                kube-batchd.io/retryable-exit-codes: "138"; else permanent
 *   anything else                undefined: permanent, and the message says it was undefined
 */
#pragma once

#include <glib.h>

#include "kube/kb-objects.h"
#include "kube/kb-tfjob.h"

typedef enum {
    TF_EXIT_SUCCESS,
    TF_EXIT_PERMANENT,
    TF_EXIT_RETRYABLE,
    TF_EXIT_USER_RETRYABLE, /* 138: retryable when the job declares it */
    TF_EXIT_UNDEFINED,
} TfExitClass;

TfExitClass tf_exit_classify(int code);
/* "container received a SIGKILL", "command not found", ...: static string. */
const char *tf_exit_describe(int code);
/* TRUE when @code restarts the replica under ExitCode for @job (137, or 138 when declared, ...). */
gboolean tf_exit_is_retryable(const KbTfJob *job, int code);

typedef enum {
    TF_REPLICA_KEEP,     /* nothing to do: the pod is alive, or ended well */
    TF_REPLICA_RECREATE, /* delete the pod; the planner creates it again under the same name */
    TF_REPLICA_FAIL,     /* a permanent failure: the replica (and the job) failed */
} TfReplicaDecision;

/*
 * What to do with @pod of a replica under @policy. @why receives a newly allocated explanation
 * for RECREATE and FAIL ("exit code 137 (container received a SIGKILL): retryable"), else NULL.
 */
TfReplicaDecision tf_replica_decide(const KbTfJob *job, KbTfRestartPolicy policy, const KbPod *pod,
                                    char **why);

/* The exit code of the `tensorflow` container (else the first terminated container) of @pod;
 * FALSE when no container has terminated. */
gboolean tf_replica_exit_code(const KbPod *pod, int *code);

/* Container restarts done by the kubelet in place (sum of restartCount). */
gint32 tf_replica_kubelet_restarts(const KbPod *pod);
