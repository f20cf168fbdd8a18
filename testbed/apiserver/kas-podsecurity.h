/*
 * Pod Security admission, enforce mode, as kube-apiserver (1.25+, the PodSecurity admission
 * plugin of k8s.io/pod-security-admission) applies it on pod create: the namespace's labels
 * pod-security.kubernetes.io/enforce (privileged, baseline, restricted) and
 * pod-security.kubernetes.io/enforce-version (latest, v1.N) choose the level; a pod that fails
 * any check of that level is refused with 403 Forbidden,
 *
 *   pods "x" is forbidden: violates PodSecurity "restricted:latest": <reason> (<detail>), ...
 *
 * with the failed checks in kube-apiserver's order (baseline checks by ID, then restricted ones
 * by ID; a restricted check replaces the baseline check it overrides) and its wording.
 *
 * The checks of the fields kb-apiserver's pods keep: baseline privileged, hostNamespaces
 * (hostNetwork, hostPID, hostIPC), hostPorts, hostPathVolumes, capabilities_baseline,
 * seccompProfile_baseline (fields), procMount, seLinuxOptions, sysctls; restricted
 * allowPrivilegeEscalation, capabilities_restricted, restrictedVolumes, runAsNonRoot, runAsUser,
 * seccompProfile_restricted (fields). Not checked: AppArmor and the alpha seccomp annotations,
 * Windows hostProcess, probe and lifecycle hosts. Warn and audit labels are accepted and do
 * nothing (kb-apiserver sends no warnings), so Deployments' pod templates are never checked,
 * as with enforce on kube-apiserver; only pods are.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#define KAS_PSA_ENFORCE         "pod-security.kubernetes.io/enforce"
#define KAS_PSA_ENFORCE_VERSION "pod-security.kubernetes.io/enforce-version"

typedef enum {
    KAS_PSA_PRIVILEGED,
    KAS_PSA_BASELINE,
    KAS_PSA_RESTRICTED,
} KasPsaLevel;

/* Newest policy version the checks know; "latest" means it. */
#define KAS_PSA_LATEST_MINOR 35

/* The policy of a namespace from its labels (@labels: packed "k, v, ..." NULL-terminated, as
 * KasObj keeps them, or NULL). A label that does not parse means restricted and latest, as
 * kube-apiserver falls back to; *@version_minor is KAS_PSA_LATEST_MINOR for latest, and
 * *@latest tells which was written. */
KasPsaLevel kas_psa_policy(char **labels, guint *version_minor, gboolean *latest);

/* Validate the PodSecurity labels of a namespace being created (@labels_obj: its
 * metadata.labels, may be NULL); FALSE with 422-style field messages in @error (KAS_ERR_INVALID
 * with the causes) when one is not a level or version. */
gboolean kas_psa_validate_namespace(json_object *labels_obj, const char *namespace_name,
                                    GError **error);

/*
 * Enforce on a pod being created in a namespace with @labels. TRUE when allowed; else FALSE
 * with KAS_ERR_FORBIDDEN and kube-apiserver's message.
 */
gboolean kas_psa_admit_pod(char **labels, json_object *pod, GError **error);

/* The failed checks of @pod at @level and @minor, "reason (detail), ..." (newly allocated), or
 * NULL when it passes. */
char *kas_psa_violations(KasPsaLevel level, guint minor, json_object *pod);
