/*
 * GET /api/v1/namespaces/NS/pods/NAME/log for the in-memory API server: what kube-apiserver and
 * the kubelet answer, with a synthetic log standing in for the container's output.
 *
 * Query parameters: container, follow, tailLines, timestamps, previous, limitBytes. Errors are
 * kube-apiserver's (pod registry's LogLocation) and the kubelet's, with their messages:
 *   404 pods "p" not found
 *   422 PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal
 * to 0 400 a container name must be specified for pod p, choose one of: [a b] 400 container c is
 * not valid for pod p 400 pod p does not have a host assigned 400 container "c" in pod "p" is
 * waiting to start: ContainerCreating 400 previous terminated container "c" in pod "p" not found
 *
 * The log is a pure function of the pod object and the time, so it needs no state in the
 * simulated kubelet (in-process or a separate kb-kubelet): for the container's current run (its
 * containerStatuses[].state running/terminated startedAt, finishedAt, exitCode; lastState for
 * previous) it writes a start line (image, node, GPU ids from kube-batchd.io/gpu-ids), a TF_CONFIG
 * line, one TensorFlow-like training step line per second run (loss falling, step += 100) and,
 * once the container ended, a final line with its exit code. At most KAS_LOG_MAX_LINES lines are
 * kept (the oldest steps go first, as with kubelet log rotation). follow streams new lines as
 * time passes and ends when the container ends, restarts, or the pod goes away.
 */
#pragma once

#include "testbed/apiserver/kas-rest.h"

#define KAS_LOG_MAX_LINES 10000

/* Serve the log of pod @ns/@name (resource @res) for GET @req into @reply. */
void kas_log_handle(KasStore *store, KasRes *res, const KasRequest *req, const char *ns,
                    const char *name, KasReply *reply);
