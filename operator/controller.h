/*
 * The TFJob controller: informers on TFJobs (kubeflow.org/v1, else v1alpha1 when only that CRD
 * version is served), on the pods, services and PodGroups the operator created (selected by the
 * label training.kubeflow.org/operator-name=tfjob-controller; Workloads too with the native gang
 * API), a work queue of job keys with
 * rate-limited retries, and the execution of the planner's actions (operator/tf-plan.h) with the
 * REST client. Everything runs on the thread-default GMainContext of the caller.
 *
 * Writes are safe to repeat: a create answered 409 AlreadyExists is already done, a delete
 * answered 404 too; a status PUT answered 409 Conflict is retried once on a fresh read when only
 * metadata or spec changed underneath, else the job is requeued. A deleted TFJob's pods, services
 * and PodGroup are deleted by the controller as well (a cluster without garbage collection, such
 * as the test API server, still ends clean).
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"
#include "kube/kb-metrics.h"
#include "kube/kb-recorder.h"
#include "operator/tf-build.h"

typedef struct {
    const char *namespace_;     /* NULL: every namespace */
    const char *gang_scheduler; /* NULL or "": no PodGroup, pods keep their own scheduler */
    TfGangApi gang_api;         /* default (0) Volcano; AUTO: native when discovery finds
                                 * scheduling.k8s.io/v1beta1 podgroups, else Volcano */
    gboolean enable_autoscaling;
    guint resync_seconds;    /* every job is looked at again at least this often; default 30 */
    guint autoscale_seconds; /* minimum time between two scaling decisions of a job; default 30 */
} TfControllerOptions;

typedef struct TfController TfController;

/* @client must outlive the controller; @recorder and @metrics may be NULL. @opts is copied. */
TfController *tf_controller_new(KbClient *client, KbRecorder *recorder, KbMetrics *metrics,
                                const TfControllerOptions *opts);
/* Start the informers. Jobs are reconciled only while the controller is active. */
void tf_controller_start(TfController *controller);
/* Leader election turns reconciling on and off (default on). Turning it on queues every job. */
void tf_controller_set_active(TfController *controller, gboolean active);
/* Readiness: every informer has synced (a resource that is not served counts as synced). */
gboolean tf_controller_ready(TfController *controller, char **reason);
/* The gang API in use: the option's, or what discovery decided for AUTO (AUTO until it has). */
TfGangApi tf_controller_gang_api(const TfController *controller);
/* Reconcile passes done so far, and those that failed and were retried. */
guint64 tf_controller_reconciles(const TfController *controller);
guint64 tf_controller_errors(const TfController *controller);
void tf_controller_free(TfController *controller);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TfController, tf_controller_free)
