/*
 * The semantics of kube-apiserver's registry on top of the store: create (generateName, uid,
 * defaults, namespace checks), update (optimistic concurrency, status subresource rules,
 * generation), patch (merge, JSON, strategic), delete (preconditions, finalizers, graceful pod
 * deletion, propagation policies and the garbage collector's cascade), pods/binding and
 * pods/eviction. Errors are KAS_ERROR with the reason kube-apiserver gives.
 *
 * Every function takes the store lock itself and returns new references.
 */
#pragma once

#include "testbed/apiserver/kas-store.h"

typedef enum {
    KAS_PATCH_MERGE,
    KAS_PATCH_JSON,
    KAS_PATCH_STRATEGIC,
} KasPatchType;

typedef struct {
    gint64 grace_seconds;         /* -1: the object's default */
    const char *propagation;      /* "Background" (default), "Foreground", "Orphan" or NULL */
    const char *precondition_uid; /* may be NULL */
    const char *precondition_rv;  /* may be NULL */
} KasDeleteOptions;

/* Create @body (borrowed) in namespace @ns (NULL for cluster-scoped resources). */
KasObj *kas_ops_create(KasStore *store, KasRes *res, const char *version, const char *ns,
                       json_object *body, GError **error);

/* Replace the object (or only its status when @status is TRUE) with @body (borrowed). */
KasObj *kas_ops_update(KasStore *store, KasRes *res, const char *version, const char *ns,
                       const char *name, json_object *body, gboolean status, GError **error);

KasObj *kas_ops_patch(KasStore *store, KasRes *res, const char *version, const char *ns,
                      const char *name, KasPatchType type, json_object *patch, gboolean status,
                      GError **error);

/* Apply @patch of @type to *@doc (replaced); FALSE with @error set (KAS_ERROR) when it does not
 * apply. */
gboolean kas_ops_patch_apply(json_object **doc, KasPatchType type, json_object *patch,
                             GError **error);

/* Whether a claim's first status by a merge patch is spliced into the stored text (the
 * default) or merged into the parsed claim and printed again, as other patches are: the same
 * bytes either way; tests compare the two. */
void kas_ops_set_status_splice(gboolean on);
/* How many statuses were spliced so far; of them, how many from the body's text. */
guint kas_ops_status_splices(void);
guint kas_ops_status_text_splices(void);

/*
 * A status merge patch of the claim @ns/@name whose body (@body, @len bytes) holds nothing but
 * a first status and string preconditions, spliced from the body's text without parsing it
 * (kas_dra_first_status_text() vouches for it; the general path does the rest): TRUE with
 * *@out (new reference) or @error set, the same answer as kas_ops_patch() with the parsed body
 * gives; FALSE when the caller must parse the body and call kas_ops_patch(). Off with
 * kas_ops_set_status_splice(FALSE).
 */
gboolean kas_ops_claim_status_text(KasStore *store, KasRes *res, const char *ns, const char *name,
                                   const char *body, gsize len, KasObj **out, GError **error);

/*
 * A binding and a claim's first status (one each per DRA pod) are optimistic writes
 * (kas_store_prepare()): the new object is built outside the store's lock and committed only if
 * the one it was built from is still stored, else built again; the last of
 * KAS_OPS_OPTIMISTIC_TRIES tries holds the lock throughout.
 */
#define KAS_OPS_OPTIMISTIC_TRIES 4
/* Called between an optimistic write's read of @ns/@name and its commit, without the lock, with
 * @what "binding" or "claim status" (tests: a write racing it). NULL: none. */
typedef void (*KasOpsRaceHook)(const char *what, const char *ns, const char *name, gpointer data);
void kas_ops_set_race_hook(KasOpsRaceHook hook, gpointer data);
/* How many optimistic tries found their object written meanwhile, since the start. */
guint kas_ops_optimistic_retries(void);

/* Delete; returns the object as it is afterwards (terminating, or its final state when it was
 * removed: *@removed tells which; may be NULL). */
KasObj *kas_ops_delete(KasStore *store, KasRes *res, const char *ns, const char *name,
                       const KasDeleteOptions *opts, gboolean *removed, GError **error);

/* POST pods/NAME/binding (or namespaces/NS/bindings when @name is NULL: the name comes from
 * the Binding). */
gboolean kas_ops_bind(KasStore *store, const char *ns, const char *name, json_object *binding,
                      GError **error);

/* POST pods/NAME/eviction: a graceful delete with the Eviction's deleteOptions. */
gboolean kas_ops_evict(KasStore *store, const char *ns, const char *name, json_object *eviction,
                       GError **error);

/* Change an object in place: @fn edits the parsed object and returns FALSE to leave it as is.
 * Nothing is written when @uid (may be NULL) no longer matches or nothing changed. Returns TRUE
 * when a new version was stored. For controllers (kubelet, node lifecycle). */
typedef gboolean (*KasMutateFn)(json_object *obj, gpointer data);
gboolean kas_ops_mutate(KasStore *store, KasRes *res, const char *ns, const char *name,
                        const char *uid, KasMutateFn fn, gpointer data);
/*
 * The same for a caller that holds the object parsed already (@obj, borrowed, changed in place):
 * when the stored object is still at @obj's metadata.resourceVersion, @fn edits @obj, which is
 * stored without being parsed, copied and compared again; @fn must then return TRUE only when
 * it changed something. Otherwise it is kas_ops_mutate() (@obj untouched).
 */
gboolean kas_ops_mutate_parsed(KasStore *store, KasRes *res, const char *ns, const char *name,
                               const char *uid, json_object *obj, KasMutateFn fn, gpointer data);

/* The kubelet (or the end of the grace period) confirms that pod @ns/@name with @uid is gone:
 * removed now unless finalizers hold it. */
void kas_ops_pod_terminated(KasStore *store, const char *ns, const char *name, const char *uid);

/* Create the namespaces every cluster has (default, kube-system, kube-public, kube-node-lease). */
void kas_ops_bootstrap(KasStore *store);
