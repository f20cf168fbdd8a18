/*
 * The resource-claim controller's part of kube-controller-manager (pkg/controller/resourceclaim),
 * run inside kb-apiserver when --resource-claim-controller is given:
 *
 *  - a pod that names a ResourceClaimTemplate in spec.resourceClaims gets a claim of its own,
 *    generateName "<pod>-<claim>-" (both parts shortened in proportion past 57 bytes), the
 *    template's labels and annotations plus resource.kubernetes.io/pod-claim-name: <claim>, an
 *    ownerReference to the pod (controller, blockOwnerDeletion) and the template's spec; the
 *    pod's status.resourceClaimStatuses then names it. A claim the pod already owns for that
 *    entry is reused (a status write that failed earlier), never made twice. A template that does
 *    not exist yet leaves the pod waiting; its creation resyncs the namespace's pods.
 *  - a pod that is done (Succeeded or Failed, or deleted before it was bound) or gone is removed
 *    from the status.reservedFor of the claims it names; a claim whose last reservation goes is
 *    deallocated in the same write (status.allocation cleared), and a claim generated for a pod
 *    that is done or gone is deleted.
 *
 * The work runs on kas-kubelet's thread (kas-kubelet.c calls in from its store hook); each
 * function takes the store lock itself.
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-store.h"

/* Does @obj (a pod) name any resource claim? Cheap: called under the store lock per pod event. */
gboolean kas_claims_pod_has_claims(const KasObj *obj);

/* Would kas_claims_sync_pod() do for pod @obj exactly what it did for @old, the same pod before
 * this change (NULL: none)? Both live and not being deleted, with the same spec.resourceClaims and
 * status.resourceClaimStatuses: the sync @old's event asked for covers it. Cheap, no parse:
 * called under the store lock per pod event (a bound pod's binding and status writes). */
gboolean kas_claims_pod_same(const KasRes *pods, const KasObj *obj, const KasObj *old);

/* Bring pod @ns/@name (@uid; NULL: whatever pod has the name) in line: its template claims and
 * statuses while it is live, its reservations released when it is done or gone (@uid is then the
 * uid it had). */
void kas_claims_sync_pod(KasStore *store, const char *ns, const char *name, const char *uid);

/* Is every reservation of stored claim @claim held by a live pod, and there is one at least
 * (store lock held)? Then kas_claims_sync_claim() has nothing to do: the common case, a claim
 * just reserved for the pod being bound, decided from the claim's text and the pod index. */
gboolean kas_claims_reservations_live_locked(KasStore *store, const KasObj *claim);

/* Release claim @ns/@name's reservations by pods that are done or gone (deallocating it when the
 * last goes) and delete it when it was generated for a pod that is done or gone. */
void kas_claims_sync_claim(KasStore *store, const char *ns, const char *name);

/* Every claim @pod names: its spec's resourceClaimName and its statuses' generated ones (new
 * array of new strings). For a deleted pod, whose claims are then synced by name. */
GPtrArray *kas_claims_pod_claim_names(json_object *pod);

/* Sync every pod of namespace @ns that names a template (after a template was created). */
void kas_claims_sync_namespace(KasStore *store, const char *ns);
