/*
 * The objects tf-operator creates for a TFJob, as JSON ready to POST: pods, headless services,
 * the PodGroup, and the TF_CONFIG each replica sees. Pure functions of the job.
 *
 * Names (pod = service = the replica's DNS host name):
 *   v1        {job}-{type}-{index}              e.g. mnist-worker-3
 *   v1alpha1  {job:.40}-{type}-{runtimeId}-{index}  e.g. example-job-ps-76no-1
 * {type} is lower-case. The v1alpha1 form is the original operator's (name truncated to 40
 * characters, so that type, runtime id and index still fit a DNS label); it ends with the
 * seed document's ${REPLICA-TYPE}-${RUNTIME_ID}-${INDEX}, so searches by that name still match.
 * Pods are created directly (no Job controller in between): no random suffix.
 *
 * Labels on pods and services: training.kubeflow.org/job-name, replica-type (lower-case),
 * replica-index, operator-name=tfjob-controller, job-role=master on the chief/master (or worker 0
 * without one); v1alpha1 pods also carry the original's kubeflow.org, tf_job_name, job_type,
 * runtime_id and task_index labels.
 * Gang scheduling (a non-empty gang scheduler name): the annotation scheduling.k8s.io/group-name
 * and the label scheduling.x-k8s.io/pod-group name the PodGroup (named after the job); with the
 * native API (scheduling.k8s.io/v1beta1) the pod's spec.schedulingGroup.podGroupName does
 * instead, and a Workload of the job's name holds the group's one template.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-tfjob.h"

#define TF_LABEL_JOB_NAME      "training.kubeflow.org/job-name"
#define TF_LABEL_REPLICA_TYPE  "training.kubeflow.org/replica-type"
#define TF_LABEL_REPLICA_INDEX "training.kubeflow.org/replica-index"
#define TF_LABEL_JOB_ROLE      "training.kubeflow.org/job-role"
#define TF_LABEL_OPERATOR      "training.kubeflow.org/operator-name"
#define TF_OPERATOR_NAME       "tfjob-controller"
#define TF_ANNOTATION_GROUP    "scheduling.k8s.io/group-name"
#define TF_LABEL_POD_GROUP     "scheduling.x-k8s.io/pod-group"
#define TF_PORT_NAME           "tfjob-port"
#define TF_POD_GROUP_API       "scheduling.volcano.sh/v1beta1"
#define TF_WORKLOAD_TEMPLATE   "tfjob"

/* Which API the gang is written in: the PodGroup dialects kube-batchd reads. AUTO is resolved
 * by the controller (native when the server serves scheduling.k8s.io/v1beta1, else Volcano)
 * and never reaches the builders. */
typedef enum {
    TF_GANG_API_VOLCANO,    /* scheduling.volcano.sh/v1beta1 (the zero value) */
    TF_GANG_API_KUBE_BATCH, /* scheduling.incubator.k8s.io/v1alpha1 */
    TF_GANG_API_X_K8S,      /* scheduling.x-k8s.io/v1alpha1 (no queue, no priority class) */
    TF_GANG_API_NATIVE,     /* Workload + PodGroup scheduling.k8s.io/v1beta1 */
    TF_GANG_API_AUTO,
} TfGangApi;

/* "auto", "native", "volcano", "kube-batch" or "x-k8s"; an error naming --gang-api otherwise. */
gboolean tf_gang_api_parse(const char *s, TfGangApi *api, GError **error);
const char *tf_gang_api_to_string(TfGangApi api);
/* The PodGroup apiVersion of @api (static); NULL for AUTO. */
const char *tf_gang_api_version(TfGangApi api);

/* The pod/service name of replica @type/@index (see above); newly allocated. */
char *tf_build_replica_name(const KbTfJob *job, KbTfReplicaType type, gint32 index);
/* "kubeflow.org/v1" or "kubeflow.org/v1alpha1": the version the job was written in. */
const char *tf_build_api_version(const KbTfJob *job);
/* A fresh random v1alpha1 runtime id: 4 characters of [a-z0-9]; newly allocated. */
char *tf_build_runtime_id(void);

/*
 * The TF_CONFIG value for replica @type/@index, a JSON string (newly allocated):
 *   {"cluster":{"chief":[...],"master":[...],"worker":[...],"ps":[...]},
 *    "task":{"type":"worker","index":1},"environment":"cloud"}
 * with "{name}.{namespace}.svc:{port}" addresses, evaluators left out of the cluster as in v1.
 * For dynamic-worker jobs, the sparse form v1 uses:
 *   {"sparseCluster":{"worker":{"3":"..."},"ps":[...]},"task":{...}}
 * (a worker sees itself and every PS; a PS sees itself).
 */
char *tf_build_tf_config(const KbTfJob *job, KbTfReplicaType type, gint32 index);

/* The labels of replica @type/@index (the job role included); a new JSON object. */
json_object *tf_build_labels(const KbTfJob *job, KbTfReplicaType type, gint32 index);
/* One ownerReferences entry pointing at @job (controller, blockOwnerDeletion); new object. */
json_object *tf_build_owner_ref(const KbTfJob *job);

/*
 * The pod of replica @type/@index (new object): the replica's template with the name, labels,
 * owner, restartPolicy (Never for ExitCode, which the operator handles), scheduler name (the
 * template's, else the job's, else @gang_scheduler), the group annotation and label when
 * @gang_scheduler is non-empty, TF_CONFIG in the `tensorflow` container, and for a v1alpha1 PS
 * without one the standard TensorFlow gRPC server container (image spec.tfImage).
 */
json_object *tf_build_pod(const KbTfJob *job, KbTfReplicaType type, gint32 index,
                          const char *gang_scheduler);
/* The same for the gang API @api: with TF_GANG_API_NATIVE, spec.schedulingGroup.podGroupName
 * names the group instead of the annotation and label. tf_build_pod is this with Volcano. */
json_object *tf_build_pod_in(const KbTfJob *job, KbTfReplicaType type, gint32 index,
                             const char *gang_scheduler, TfGangApi api);
/* The headless service of replica @type/@index (new object). */
json_object *tf_build_service(const KbTfJob *job, KbTfReplicaType type, gint32 index);

/* minMember: schedulingPolicy.minAvailable, else the sum of replicas (for dynamic workers, the
 * minimum worker count). */
gint32 tf_build_min_member(const KbTfJob *job);
/* The PodGroup (scheduling.volcano.sh/v1beta1), owned by the job: minMember, queue,
 * priorityClassName, minResources = the requests of the first minMember pods (chief/master,
 * PS, workers, evaluator in that order). New object. */
json_object *tf_build_pod_group(const KbTfJob *job);
/* The job's PodGroup in @api's dialect (new object, owned by the job, named after it). Native:
 * workloadRef to the job's Workload (template TF_WORKLOAD_TEMPLATE), gang.minCount = minMember,
 * priorityClassName, and the queue as the label kube-batchd.io/queue; x-k8s: minMember and
 * minResources only (scheduler-plugins' schema); kube-batch as Volcano. */
json_object *tf_build_pod_group_in(const KbTfJob *job, TfGangApi api);
/* The job's Workload (scheduling.k8s.io/v1beta1, new object, owned by the job, named after it):
 * controllerRef to the TFJob, one pod group template with gang.minCount = minMember, the queue
 * label as on the PodGroup. */
json_object *tf_build_workload(const KbTfJob *job);
