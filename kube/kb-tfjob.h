/*
 * TFJob (kubeflow.org/v1, v1beta2, v1beta1 and the seed's v1alpha1) decoded into one normalized
 * model.
 *
 * A `replicaSpecs` list is v1alpha1 whatever apiVersion says (a CRD without conversion hands a
 * stored v1alpha1 object out under every version). A `tfReplicaSpecs` map is v1, or v1beta1 /
 * v1beta2 when apiVersion says so: those are tf-operator 0.4 / 0.5's shape, with the run policy
 * (cleanPodPolicy, ttlSecondsAfterFinished, activeDeadlineSeconds, backoffLimit) directly in spec,
 * no runPolicy or successPolicy, and cleanPodPolicy defaulting to Running. Replica type keys match
 * case-insensitively in every version (`MASTER`, `Master`, `master`), as the seed writes them.
 *
 * Two kinds of problems are told apart:
 *   - a structural problem (not an object, no metadata, a field of the wrong JSON type, a decoder
 *     limit crossed) makes kb_tfjob_decode() fail: the object cannot be handled at all;
 *   - a semantic problem (no replicas, negative replicas, unknown replica type, no `tensorflow`
 *     container where one is required, two masters/chiefs) is kept in job->invalid, so that the
 *     operator can report it in a Failed condition and create nothing.
 * Messages name the job, the field and the value:
 *   "tfjob default/j1: spec.tfReplicaSpecs.Worker.replicas: must not be negative (-2)".
 * Pod and service names must be DNS labels (63 characters): a v1 job whose longest generated name
 * is longer is invalid (metadata.name is named); v1alpha1 truncates the job name to 40 characters
 * in generated names, as the original did.
 *
 * Annotations (on the TFJob's metadata) defined by kube-batchd:
 *   kube-batchd.io/min-workers, kube-batchd.io/max-workers
 *       bounds for dynamic workers (spec.enableDynamicWorker: true); both default to the
 *       Worker replicas, so a job without them never scales.
 *   kube-batchd.io/retryable-exit-codes: "138[,N...]"
 *       exit codes the user declares retryable under restartPolicy ExitCode. The seed reserves
 *       138 for exactly this: without the annotation, 138 is a permanent failure.
 *   kube-batchd.io/queue, kube-batchd.io/priority-class
 *       queue and priority class for the PodGroup when spec.runPolicy.schedulingPolicy does not
 *       name them (v1alpha1 has no schedulingPolicy).
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-objects.h"
#include "kube/kb-resource.h"

#define KB_TF_ANNOTATION_MIN_WORKERS     "kube-batchd.io/min-workers"
#define KB_TF_ANNOTATION_MAX_WORKERS     "kube-batchd.io/max-workers"
#define KB_TF_ANNOTATION_RETRYABLE_CODES "kube-batchd.io/retryable-exit-codes"
#define KB_TF_ANNOTATION_QUEUE           "kube-batchd.io/queue"
#define KB_TF_ANNOTATION_PRIORITY_CLASS  "kube-batchd.io/priority-class"

#define KB_TF_DEFAULT_PORT      2222
#define KB_TF_DEFAULT_CONTAINER "tensorflow"
#define KB_TF_DEFAULT_IMAGE     "tensorflow/tensorflow:1.3.0" /* v1alpha1 tfImage default */

/* Decoder limits (each has a test that crosses it). */
#define KB_TF_MAX_REPLICAS        10000 /* replicas of one type */
#define KB_TF_MAX_REPLICA_SPECS   16    /* entries of v1alpha1 replicaSpecs / v1 tfReplicaSpecs */
#define KB_TF_MAX_RUNTIME_ID_LEN  32
#define KB_TF_MAX_RETRYABLE_CODES 16

typedef enum {
    KB_TF_API_V1,
    KB_TF_API_V1ALPHA1,
    KB_TF_API_V1BETA1,
    KB_TF_API_V1BETA2,
} KbTfApi;

/* In TF_CONFIG order; also the order of status.replicaStatuses in v1alpha1. */
typedef enum {
    KB_TF_CHIEF,
    KB_TF_MASTER,
    KB_TF_WORKER,
    KB_TF_PS,
    KB_TF_EVALUATOR,
    KB_TF_N_TYPES,
} KbTfReplicaType;

typedef enum {
    KB_TF_RESTART_ALWAYS,
    KB_TF_RESTART_ON_FAILURE,
    KB_TF_RESTART_NEVER,
    KB_TF_RESTART_EXIT_CODE,
} KbTfRestartPolicy;

typedef enum {
    KB_TF_CLEAN_RUNNING, /* delete pods still Pending or Running: the v1beta1/v1beta2 default */
    KB_TF_CLEAN_ALL,     /* delete every pod: the v1alpha1 default */
    KB_TF_CLEAN_NONE,    /* delete no pod: the v1 default (as training-operator since v1.7) */
} KbTfCleanPodPolicy;

typedef enum {
    KB_TF_COND_CREATED,
    KB_TF_COND_RUNNING,
    KB_TF_COND_RESTARTING,
    KB_TF_COND_SUCCEEDED,
    KB_TF_COND_FAILED,
    KB_TF_N_CONDS,
} KbTfConditionType;

typedef struct {
    gboolean present;
    gboolean status; /* "True" */
    guint seq;       /* position in status.conditions: the last one is the job's state */
    char *reason;
    char *message;
    gint64 last_update; /* unix seconds */
    gint64 last_transition;
} KbTfCondition;

typedef struct {
    gboolean present;
    gint32 replicas; /* >= 0 (>= 1 for v1alpha1) */
    gint32 port;     /* tfPort / the `tfjob-port` container port; default 2222 */
    KbTfRestartPolicy restart_policy;
    /* The pod template ({"metadata":..., "spec":...}); owned, never NULL for a present spec. */
    json_object *template_;
    gboolean has_tf_container; /* a container named "tensorflow" in the template */
    KbResources requests;      /* one pod's requests (a container's limit stands for a missing
                                * request), for the PodGroup's minResources */
} KbTfReplicaSpec;

/* What the operator wrote last time (decoded back from status, so planning survives restarts). */
typedef struct {
    KbTfCondition conditions[KB_TF_N_CONDS];
    gint64 start_time;      /* 0 when unset */
    gint64 completion_time; /* 0 when unset */
    gint32 restart_count;   /* status.restartCount: pods recreated by the operator */
    gint32 workers;         /* status.autoscaling.workers, 0 when unset */
    json_object *raw;       /* the whole status object (owned), NULL when absent */
} KbTfJobStatus;

typedef struct {
    KbObjectMeta meta; /* kind KB_KIND_TFJOB; free with kb_tfjob_free(), not kb_object_unref() */
    KbTfApi api;
    KbTfReplicaSpec specs[KB_TF_N_TYPES];
    char *runtime_id;           /* v1alpha1 spec.RuntimeId; NULL until the operator assigns one */
    char *tf_image;             /* v1alpha1 spec.tfImage; default KB_TF_DEFAULT_IMAGE */
    const char *scheduler_name; /* interned; spec.schedulerName or a template's; may be NULL */
    KbTfCleanPodPolicy clean_pod_policy;
    gint64 ttl_seconds_after_finished; /* -1 when unset */
    gint32 backoff_limit;              /* -1 when unset */
    gint64 active_deadline_seconds;    /* -1 when unset */
    gboolean success_all_workers;      /* successPolicy: AllWorkers */
    gint32 min_available;              /* schedulingPolicy.minAvailable, 0 when unset */
    const char *queue;                 /* interned, may be NULL */
    const char *priority_class;        /* interned, may be NULL */
    gboolean dynamic_workers;          /* enableDynamicWorker */
    gint32 min_workers, max_workers;   /* meaningful when dynamic_workers */
    gint retryable_codes[KB_TF_MAX_RETRYABLE_CODES]; /* from the annotation */
    guint n_retryable_codes;
    char *invalid; /* NULL for a valid job, else the validation message (names the field) */
    KbTfJobStatus status;
} KbTfJob;

/*
 * Decode @obj (one TFJob item, either version). Returns a new job (free with kb_tfjob_free) or
 * NULL with KB_ERROR_DECODE / KB_ERROR_LIMIT for a structural problem. Semantic problems do not
 * fail: they are in job->invalid. @keep_raw keeps a reference to @obj in meta.raw.
 */
KbTfJob *kb_tfjob_decode(json_object *obj, gboolean keep_raw, GError **error);
void kb_tfjob_free(KbTfJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTfJob, kb_tfjob_free)

/* FALSE with KB_ERROR_INVALID and job->invalid as the message when the job is invalid. */
gboolean kb_tfjob_validate(const KbTfJob *job, GError **error);

/* "Chief", "Master", "Worker", "PS", "Evaluator" (v1 map keys); static strings. */
const char *kb_tf_replica_type_to_string(KbTfReplicaType type);
/* "chief", "master", "worker", "ps", "evaluator": labels, names, TF_CONFIG keys. */
const char *kb_tf_replica_type_to_lower(KbTfReplicaType type);
/* v1alpha1 tfReplicaType: "MASTER", "WORKER", "PS" (others print their v1 name upper-cased). */
const char *kb_tf_replica_type_to_alpha(KbTfReplicaType type);
/* Any spelling of the above, case-insensitive; FALSE for unknown names. */
gboolean kb_tf_replica_type_parse(const char *s, KbTfReplicaType *type);
const char *kb_tf_restart_policy_to_string(KbTfRestartPolicy policy);
const char *kb_tf_condition_type_to_string(KbTfConditionType type);

/* The replicas the operator runs for @type right now: status.autoscaling.workers for dynamic
 * workers once set (clamped to [min, max]), else the spec's. 0 for absent types. */
gint32 kb_tfjob_effective_replicas(const KbTfJob *job, KbTfReplicaType type);
/* "kubeflow.org/v1", "kubeflow.org/v1alpha1", ...: the group/version of @api; static. */
const char *kb_tf_api_version(KbTfApi api);
/* The KbTfApi of an apiVersion string ("kubeflow.org/v1beta2"); FALSE for anything else. */
gboolean kb_tf_api_parse(const char *api_version, KbTfApi *api);

/* TRUE when the job has a Chief or a Master replica spec. */
gboolean kb_tfjob_has_chief(const KbTfJob *job);
/* TRUE when @code was declared retryable in kube-batchd.io/retryable-exit-codes. */
gboolean kb_tfjob_code_is_user_retryable(const KbTfJob *job, int code);
/* TRUE once the status carries a true Succeeded or Failed condition. */
gboolean kb_tfjob_is_finished(const KbTfJob *job);
