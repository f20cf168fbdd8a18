/*
 * Differential fuzz target for kb-apiserver's claim status write read from the body's text
 * (testbed/apiserver/kas-ops: kas_ops_claim_status_text, kas-dra: kas_dra_first_status_text): any
 * bytes are the body of a merge patch of a claim's status. Two stores hold the same claims; the
 * text path writes to one, and whenever it takes the body (written or refused), the general path
 * (the body parsed by json-c, merged, validated, printed) must give the other store the same
 * answer: the same stored bytes, or the same error. A body the text path leaves must leave its
 * store as it was. It must never crash or leak.
 */
#include <stdint.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"
#include "testbed/apiserver/kas-store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A claim as the resource-claim controller makes it, with a request that has prioritized
 * alternatives (results may name "r1/big" or "r1/one"). */
#define CLAIM                                                                                      \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"    \
    "\"c\",\"namespace\":\"default\",\"uid\":\"7a1c0d2e-0000-4000-8000-000000000001\","            \
    "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"                                             \
    "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"     \
    "\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\",\"count\":1}},{\"name\":\"r1\","         \
    "\"firstAvailable\":[{\"name\":\"big\",\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2},"   \
    "{\"name\":\"one\",\"deviceClassName\":\"gpu.nvidia.com\"}]}]}}}"

typedef struct {
    KasStore *store;
    KasRes *claims;
} Side;

static void side_init(Side *s)
{
    KasStoreOptions so = {0};
    s->store = kas_store_new(&so);
    kas_store_lock(s->store);
    s->claims = kas_store_find_locked(s->store, "resource.k8s.io", "v1", "resourceclaims");
    json_object *o = json_tokener_parse(CLAIM);
    kas_store_put_locked(s->store, s->claims, o);
    kas_store_unlock(s->store);
    json_object_put(o);
}

/* The stored claim's text (newly allocated) and resourceVersion. */
static char *stored(Side *s, guint64 *rv)
{
    kas_store_lock(s->store);
    KasObj *o = kas_store_get_locked(s->store, s->claims, "default", "c");
    char *t = g_strndup(o->json, o->len);
    *rv = o->rv;
    kas_store_unlock(s->store);
    return t;
}

/* The claim put back as it was created (no status), in both stores alike. */
static void side_reset(Side *s)
{
    json_object *o = json_tokener_parse(CLAIM);
    kas_store_lock(s->store);
    kas_store_put_locked(s->store, s->claims, o);
    kas_store_unlock(s->store);
    json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Side a, b;
    if (a.store == NULL) {
        side_init(&a);
        side_init(&b);
    }
    const char *body = (const char *)data;
    guint64 rv_before, rv_after;
    g_autofree char *before = stored(&a, &rv_before);
    KasObj *oa = NULL;
    GError *ea = NULL;
    if (!kas_ops_claim_status_text(a.store, a.claims, "default", "c", body, size, &oa, &ea)) {
        g_autofree char *after = stored(&a, &rv_after);
        if (oa != NULL || ea != NULL || rv_after != rv_before || strcmp(after, before) != 0)
            __builtin_trap();
        return 0;
    }
    if ((oa == NULL) == (ea == NULL))
        __builtin_trap();
    /* taken: the body must parse, and the general path must answer alike */
    GError *perr = NULL;
    json_object *patch = kas_json_parse(body, size, &perr);
    if (patch == NULL)
        __builtin_trap();
    GError *eb = NULL;
    kas_ops_set_status_splice(FALSE);
    KasObj *ob = kas_ops_patch(b.store, b.claims, "v1", "default", "c", KAS_PATCH_MERGE, patch,
                               TRUE, &eb);
    kas_ops_set_status_splice(TRUE);
    json_object_put(patch);
    if ((oa == NULL) != (ob == NULL))
        __builtin_trap();
    if (oa != NULL &&
        (oa->rv != ob->rv || oa->len != ob->len || memcmp(oa->json, ob->json, oa->len) != 0))
        __builtin_trap();
    if (ea != NULL &&
        (ea->domain != eb->domain || ea->code != eb->code || strcmp(ea->message, eb->message) != 0))
        __builtin_trap();
    if (oa != NULL) {
        kas_obj_unref(oa);
        kas_obj_unref(ob);
        side_reset(&a);
        side_reset(&b);
    }
    g_clear_error(&ea);
    g_clear_error(&eb);
    return 0;
}
