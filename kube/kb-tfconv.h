/*
 * TFJob conversion between kubeflow.org/v1alpha1, v1beta1, v1beta2 and v1, and the
 * ConversionReview (apiextensions.k8s.io/v1 and v1beta1) a CRD conversion webhook answers.
 * Pure functions on json-c objects: no I/O, so tests, the fuzz target and tf-operator's webhook
 * run the same code.
 *
 * Every conversion goes through v1 (the hub, the CRD's storage version):
 *   v1alpha1 -> v1  `replicaSpecs` list -> `tfReplicaSpecs` map (MASTER -> Master, WORKER ->
 *                   Worker, PS -> PS); v1alpha1's semantics made explicit: every replica
 *                   `restartPolicy: ExitCode`, `runPolicy.cleanPodPolicy: All`; status phase and
 *                   state -> conditions, the replicaStatuses list -> map;
 *   v1 -> v1alpha1  the reverse; Chief becomes MASTER; Evaluator cannot be expressed (error);
 *   v1beta1/v1beta2 -> v1  cleanPodPolicy, ttlSecondsAfterFinished, activeDeadlineSeconds and
 *                   backoffLimit move from spec into spec.runPolicy; a missing cleanPodPolicy
 *                   becomes Running (the betas' default);
 *   v1 -> v1beta1/v1beta2  the reverse; a missing runPolicy.cleanPodPolicy becomes None (v1's
 *                   default) and Running is left out (the betas' default); runPolicy's other
 *                   fields and successPolicy are not expressible.
 *   Status is the same common.JobStatus in v1 and the betas.
 *
 * Lossless round trips: whatever the target version cannot express is kept in the annotation
 * KB_TFCONV_ANNOTATION, a JSON object keyed by version ("v1alpha1": {"to", "specSum", "spec",
 * "statusSum", "status"}): the source's spec (and status) as it was, and the checksum of what it
 * was converted to. Converting back restores them verbatim while the converted spec (status) is
 * unchanged; once it was changed in the other version, the field-by-field conversion applies.
 * An entry is written only when the field-by-field conversion back would not reproduce the source,
 * except between v1alpha1 and v1: there the version the job was written in always leaves at
 * least an entry without a spec ({"v1alpha1": {"to": "kubeflow.org/v1"}}, see
 * kb_tfconv_written_as_alpha()), which converting back removes.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-tfjob.h"

#define KB_TFCONV_ANNOTATION "kube-batchd.io/tfjob-conversion"

/* ConversionReview decoder limits (each has a test that crosses it). */
#define KB_TFCONV_MAX_BODY    (3 * 1024 * 1024) /* kube-apiserver's own request limit */
#define KB_TFCONV_MAX_DEPTH   64
#define KB_TFCONV_MAX_OBJECTS 10000
#define KB_TFCONV_MAX_UID     128

/*
 * @obj (a TFJob of any version; a `replicaSpecs` list is v1alpha1 whatever apiVersion says)
 * converted to @to. Returns a new object (the caller owns it), or NULL with KB_ERROR_DECODE
 * (malformed object) or KB_ERROR_INVALID (not expressible in @to); messages name the job and
 * the field: "tfjob default/j: spec.tfReplicaSpecs.Evaluator: kubeflow.org/v1alpha1 has no
 * Evaluator replicas".
 */
json_object *kb_tfconv_convert(json_object *obj, KbTfApi to, GError **error);

/*
 * Was @obj (a TFJob in kubeflow.org/v1) written as v1alpha1? TRUE when the annotation has the
 * entry for v1alpha1 that converting from it to v1 always leaves (with the v1alpha1 spec when v1
 * cannot express it, else only {"to": "kubeflow.org/v1"}). tf-operator runs such a job as the
 * v1alpha1 job it is (names, defaults), whatever version the CRD stores.
 */
gboolean kb_tfconv_written_as_alpha(json_object *obj);

/*
 * Answers one ConversionReview request body (@len bytes). Returns the response ConversionReview
 * (new object, same apiVersion as the request, response.uid = request.uid): result Success with
 * convertedObjects in request order, or result Failure with the first object's error message.
 * NULL with KB_ERROR_DECODE or KB_ERROR_LIMIT when the body is not a ConversionReview request at
 * all (the webhook answers 400 with the message).
 */
json_object *kb_tfconv_review(const char *body, size_t len, GError **error);
