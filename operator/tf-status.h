/*
 * TFJob status as the operator writes it, built up during one planning pass.
 *
 * v1 (kubeflow common JobStatus): conditions (Created, Running, Restarting, Succeeded, Failed;
 * reasons TFJobCreated, TFJobRunning, TFJobRestarting, TFJobSucceeded, TFJobFailed), in the order
 * they were last set so that the last one is the job's state; replicaStatuses per type with
 * active/succeeded/failed (zeros omitted, as the original); startTime; completionTime.
 * v1alpha1 (the seed's sample output): phase (Creating, Running, CleanUp, Failed, Done), state
 * (Running, Succeeded, Failed), reason, controlPaused, and replicaStatuses as a list of
 * {ReplicasStates: {Running: n, ...}, state, tf_replica_type}, and `conditions: null` as in the
 * sample (kb-tfjob rebuilds the conditions the planner needs from phase, state and reason).
 * Nothing else: Kubeflow's structural TFJob schema prunes any other status field, so restart
 * counts and the worker count of dynamic jobs live elsewhere (see tf-plan.h). restart_count and
 * the autoscaling fields below are this pass's working values, not written.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-tfjob.h"

typedef struct {
    KbTfCondition conds[KB_TF_N_CONDS]; /* strings owned */
    guint next_seq;
    gint64 start_time;
    gint64 completion_time;
    gint32 restart_count;
    /* Replica counts of this pass; when !counted the observed replicaStatuses are kept (a
     * finished job's statuses are frozen, as in the seed's sample output). */
    gboolean counted;
    gint32 active[KB_TF_N_TYPES], succeeded[KB_TF_N_TYPES], failed[KB_TF_N_TYPES];
    gint32 pending[KB_TF_N_TYPES];
    /* Autoscaling: workers is written for dynamic jobs; the decision only when one was made. */
    gint32 workers;
    const char *decision; /* "Grow"/"Shrink" (static) or NULL */
    char *decision_reason;
    gint64 decision_time;
    const char *alpha_phase; /* v1alpha1 phase (static string) */
} TfStatus;

/* Start from what @job's status says. */
void tf_status_init(TfStatus *st, const KbTfJob *job);
void tf_status_clear(TfStatus *st);

/*
 * Set condition @type True, with the kubeflow common semantics: nothing changes once Failed;
 * nothing changes when the condition already has this status and reason; Running and Restarting
 * replace each other; Succeeded/Failed turn Running False. TRUE when the status changed.
 */
gboolean tf_status_set_condition(TfStatus *st, KbTfConditionType type, const char *reason,
                                 const char *message, gint64 now);
/* TRUE when condition @type is present and True. */
gboolean tf_status_is(const TfStatus *st, KbTfConditionType type);
/* The message of condition @type, or NULL. Borrowed. */
const char *tf_status_message(const TfStatus *st, KbTfConditionType type);

/* The status object to PUT for @job (new object). */
json_object *tf_status_to_json(const TfStatus *st, const KbTfJob *job);
