/*
 * The reconcile planner: from one observation of a TFJob and what it owns to the list of actions
 * that move it forward. No I/O: the controller executes the actions, tests check them.
 *
 * Guarantees:
 *   - idempotent: an observation that already reflects a plan's creates yields no new creates,
 *     and a status equal to the observed one yields no status update;
 *   - with gang scheduling on, no pod is planned before the PodGroup is observed;
 *   - an invalid job gets a Failed condition naming the field, and nothing else is created;
 *   - a v1alpha1 job first gets its runtime id (that plan holds nothing else).
 * Action order: the Workload (native gang API), the PodGroup, services, pods, restart records,
 * deletes (services before pods), then the status update and the TTL delete (events go last: the
 * controller records them once the rest is written).
 *
 * No decision depends on a status field outside Kubeflow's TFJob schema (conditions,
 * replicaStatuses, startTime, completionTime, lastReconcileTime), which a structural CRD prunes
 * to that, and the v1 status written holds only those fields:
 *   - restarts counted against backoffLimit are kept on the replica's Service, which the operator
 *     owns: annotation kube-batchd.io/restarts (the replica's pods recreated so far, with the
 *     container restarts those pods had), and kube-batchd.io/restarted-pod-uid (the pod whose
 *     restart is already counted, so that a pass repeated after a failure counts it once); the
 *     container restarts of the live pods are added;
 *   - the worker count of a dynamic job is the number of worker services
 *     (tf_plan_observed_workers), the scaling decisions are events.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-objects.h"
#include "kube/kb-tfjob.h"
#include "operator/tf-autoscale.h"
#include "operator/tf-build.h"

typedef enum {
    TF_ACTION_SET_RUNTIME_ID,   /* write spec.RuntimeId = name (v1alpha1) */
    TF_ACTION_CREATE_WORKLOAD,  /* body: the Workload (native gang API) */
    TF_ACTION_CREATE_POD_GROUP, /* body: the PodGroup */
    TF_ACTION_CREATE_SERVICE,   /* body: the Service */
    TF_ACTION_CREATE_POD,       /* body: the Pod */
    TF_ACTION_RECORD_RESTART,   /* name: the replica's Service, body: the merge patch */
    TF_ACTION_DELETE_POD,       /* name */
    TF_ACTION_DELETE_SERVICE,   /* name */
    TF_ACTION_DELETE_POD_GROUP, /* name */
    TF_ACTION_UPDATE_STATUS,    /* body: the new status object */
    TF_ACTION_DELETE_JOB,       /* ttlSecondsAfterFinished passed */
    TF_ACTION_EVENT,            /* event_type, reason, message about the job */
} TfActionType;

#define TF_ANNOTATION_RESTARTS      "kube-batchd.io/restarts"
#define TF_ANNOTATION_RESTARTED_UID "kube-batchd.io/restarted-pod-uid"

typedef struct {
    TfActionType type;
    char *name;
    json_object *body;
    const char *event_type; /* "Normal" or "Warning" */
    char *reason;
    char *message;
} TfAction;

typedef struct {
    const KbTfJob *job;
    KbPod *const *pods; /* the pods the job controls */
    guint n_pods;
    KbObjectMeta *const *services; /* the services the job controls */
    guint n_services;
    const KbObjectMeta *pod_group; /* the job's PodGroup's metadata, NULL when not observed */
    gint64 now;                    /* unix seconds */
    const char *gang_scheduler;    /* NULL or "" turns gang scheduling off */
    TfGangApi gang_api;            /* the group's API, resolved (never TF_GANG_API_AUTO) */
    const TfScaleDecision *scale;  /* an autoscaling decision to apply, or NULL */
} TfObservation;

typedef struct {
    GPtrArray *actions;   /* TfAction*, owned */
    json_object *status;  /* the status this plan leads to (owned) */
    gint64 requeue_after; /* seconds until a deadline or TTL needs another look; -1: none */
} TfPlan;

/* Plan for @obs. Never fails. Free with tf_plan_free. */
TfPlan *tf_plan_compute(const TfObservation *obs);
void tf_plan_free(TfPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TfPlan, tf_plan_free)

/* Helpers for callers and tests: the number of actions of @type; the first action of @type
 * (with @name when non-NULL), borrowed, or NULL. */
guint tf_plan_count(const TfPlan *plan, TfActionType type);
const TfAction *tf_plan_find(const TfPlan *plan, TfActionType type, const char *name);
const char *tf_action_type_to_string(TfActionType type);

/* The workers a dynamic job runs now, as its worker services say (1 + the highest index among
 * those of @job's names, not being deleted); 0 when it has none yet. */
gint32 tf_plan_observed_workers(const KbTfJob *job, KbObjectMeta *const *services, guint n);
