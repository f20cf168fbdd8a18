/*
 * CRD conversion webhooks, called as kube-apiserver calls them (apiextensions-apiserver's
 * webhook_converter.go): a CRD with spec.conversion.strategy Webhook has its objects converted
 * by a ConversionReview POSTed over HTTPS to its webhook, to the storage version on create and
 * update, to the requested version on get, list (one review for every item of the answer that is
 * not in that version already) and watch (one review per event); objects already in the wanted
 * version are never sent.
 *
 * The answer is held to kube-apiserver's checks: the ConversionReview kind and version, the
 * response uid, result.status, the number of objects, each object's apiVersion and kind, its
 * name, namespace and uid unchanged; of its metadata only labels and annotations are taken (they
 * must be maps of strings), the rest is the original's. Any failure is
 * "conversion webhook for kubeflow.org/v1, Kind=TFJob failed: ..." (or "... returned invalid
 * ..."), answered as kube-apiserver answers it: 500 with a Status without a reason; a watch sends
 * it as an ERROR event and ends.
 *
 * Where the webhook is:
 *   clientConfig.url      called as given (https only), verified against caBundle, or against
 *                         the system's CAs when there is none;
 *   clientConfig.service  https://NAME.NAMESPACE.svc:PORT/PATH (port 443 by default), with that
 *                         name verified against caBundle. The Service must exist and list the
 *                         port. kb-apiserver has no cluster network, so NAME.NAMESPACE.svc
 *                         connects to the address --service-address NS/NAME:PORT=HOST:PORT
 *                         gives, or else to the Service's Endpoints (the first address of the
 *                         subset with the Service port's name), as kube-apiserver does with
 *                         --enable-aggregator-routing (without it, it dials the cluster IP).
 * Timeout: 30 s (kube-apiserver's webhook client default: a v1 CRD's webhook has no
 * timeoutSeconds), sent as ?timeout=30s as client-go does; KasConvertOptions.timeout_ms changes it.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "testbed/apiserver/kas-ops.h"
#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-store.h"

#define KAS_CONVERT_TIMEOUT_MS    30000
#define KAS_CONVERT_MAX_RESPONSE  (64 * 1024 * 1024) /* a webhook's answer, bytes */
#define KAS_CONVERT_MAX_ADDRESSES 256

#define KAS_CONVERT_ERROR (kas_convert_error_quark())
GQuark kas_convert_error_quark(void);

typedef struct KasConvert KasConvert;

typedef struct {
    const char *const
            *service_addresses; /* "NS/NAME:PORT=HOST:PORT", NULL-terminated; may be NULL */
    guint timeout_ms;           /* 0: KAS_CONVERT_TIMEOUT_MS */
    gsize max_response;         /* 0: KAS_CONVERT_MAX_RESPONSE */
} KasConvertOptions;

/* NULL with an error naming the --service-address value that is malformed. */
KasConvert *kas_convert_new(KasStore *store, const KasConvertOptions *opts, GError **error);
void kas_convert_free(KasConvert *cv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasConvert, kas_convert_free)

/* spec.conversion of a CRD as apiextensions validates it (strategy, webhook, clientConfig with
 * exactly one of url and service, url https without user, query or fragment, service name,
 * namespace, port and path, conversionReviewVersions with v1 or v1beta1 and no duplicates). */
void kas_convert_check_crd(json_object *crd, KasFieldErrors *errs);

/* Does @res (any resource; the lock need not be held) convert through a webhook? */
gboolean kas_convert_webhook(KasStore *store, KasRes *res);

/*
 * Convert the objects of @objs (KasObj*, new references in place of the old ones) to @version
 * of @res with one ConversionReview for those not in @version already. TRUE when nothing needed
 * converting or all were; FALSE with a KAS_CONVERT_ERROR message (the array is then unchanged).
 * @list: the objects are the items of a list (the error messages say "at index N").
 * @cv may be NULL: nothing is converted.
 */
gboolean kas_convert_objs(KasConvert *cv, KasRes *res, const char *version, GPtrArray *objs,
                          gboolean list, GError **error);

/* The same for one parsed object (@obj, replaced by the converted one on success). */
gboolean kas_convert_json(KasConvert *cv, KasRes *res, const char *version, json_object **obj,
                          GError **error);

/*
 * The answer of a webhook (@len bytes of @body) to a ConversionReview @review_version ("v1" or
 * "v1beta1") with @uid about the objects @in (json_object*, borrowed), checked as kube-apiserver
 * checks it (see above) for the desired apiVersion @want_av. Returns the converted objects in order
 * (new array of new references) with their metadata restored, or NULL with the complete message
 * ("conversion webhook for @gvk failed: ..."). For review() and the fuzz target.
 */
GPtrArray *kas_convert_answer(const char *body, gsize len, const char *review_version,
                              const char *uid, GPtrArray *in, const char *want_av, gboolean list,
                              const char *gvk, GError **error);

/* A patch of @res sent in @version, applied as kube-apiserver applies it: the stored object
 * converted to @version, patched, converted back and written (retried on conflict). */
KasObj *kas_convert_patch(KasConvert *cv, KasStore *store, KasRes *res, const char *version,
                          const char *ns, const char *name, KasPatchType type, json_object *patch,
                          gboolean status, GError **error);

/* kube-apiserver's answer to a failed conversion: a Status with @message, code 500, no reason
 * (new string). */
char *kas_convert_status_json(const char *message);
