/*
 * ResourceClaims straight from JSON text (kb_resource_claim_decode_bytes,
 * kb_resource_claim_list_decode_bytes; see kb-dra.h), over kb-json's pull reader as pods are
 * read (kb-pod-fast.c): a scheduler sees each claim two or three times (created, allocated and
 * reserved, released), and a json-c DOM per event was a tenth of kube-batchd's CPU in a DRA run.
 *
 * It reads the claims schedulers and the resource-claim controller write: exactly requests
 * (class, CEL selectors, count or All, adminAccess), constraints, an allocation's results and
 * its node, reservedFor. Anything else it does not judge: firstAvailable, capacity requests,
 * consumed capacity and shares, a node selector of another form, null members, duplicate
 * members, a value of another type or over a limit. Then it fails (KB_ERROR_DECODE, "not read
 * here", or the reader's own error) and the caller decodes the claim with json-c and
 * kb_resource_claim_decode(), which gives the record, or the error in its own words. Whatever it
 * returns is the record kb_resource_claim_decode() gives (tests/test-dra-fast.c).
 *
 * ResourceSlices the same way (kb_resource_slice_decode_bytes, below): kube-batchd lists every
 * slice of the cluster at start, 1,000 of them in bench-e2e --dra, and their json-c trees were a
 * quarter of its CPU before its first binding.
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-dra.h"
#include "kube/kb-error.h"
#include "kube/kb-json.h"
#include "kube/kb-quantity.h"

/* The claim is left to json-c. The message is for debugging only: nobody shows it. */
static gboolean refuse(const char *what, GError **error)
{
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: not read here", what);
    return FALSE;
}

/* The next value is of @type (null included in the refusals). */
static gboolean expect(KbJsonReader *r, KbJsonType type, const char *what, GError **error)
{
    return kb_json_peek(r) == type || refuse(what, error);
}

static gboolean once(guint32 *seen, guint32 bit, const char *what, GError **error)
{
    if ((*seen & bit) != 0)
        return refuse(what, error); /* json-c keeps the last one */
    *seen |= bit;
    return TRUE;
}

/* A string of 1 to @max bytes (@allow_empty: 0 too) into *out. */
static gboolean read_text(KbJsonReader *r, const char *what, gsize max, gboolean allow_empty,
                          KbJsonStr *out, GError **error)
{
    if (!expect(r, KB_JSON_STRING, what, error) || !kb_json_read_string(r, out, error))
        return FALSE;
    if (out->len > max || (out->len == 0 && !allow_empty))
        return refuse(what, error);
    return TRUE;
}

static gboolean read_owned(KbJsonReader *r, const char *what, gsize max, char **out, GError **error)
{
    KbJsonStr s;
    if (!read_text(r, what, max, FALSE, &s, error))
        return FALSE;
    g_free(*out);
    *out = kb_json_str_dup(&s);
    return TRUE;
}

/* As kb_decode_interned(..., TRUE): "" reads as NULL. */
static gboolean read_interned(KbJsonReader *r, const char *what, gsize max, const char **out,
                              GError **error)
{
    KbJsonStr s;
    if (!read_text(r, what, max, TRUE, &s, error))
        return FALSE;
    *out = s.len > 0 ? kb_fast_intern(&s) : NULL;
    return TRUE;
}

/* Array @what of at most @max elements: each element's reader called with its index. */
typedef gboolean (*ElementReader)(KbJsonReader *r, gpointer data, gsize i, GError **error);

static gboolean read_array(KbJsonReader *r, const char *what, gsize max, ElementReader each,
                           gpointer data, GError **error)
{
    int rc;
    gsize i = 0;
    if (!expect(r, KB_JSON_ARRAY, what, error) || !kb_json_array_begin(r, error))
        return FALSE;
    while ((rc = kb_json_array_next(r, error)) == 1) {
        if (i == max)
            return refuse(what, error);
        if (!each(r, data, i++, error))
            return FALSE;
    }
    return rc == 0;
}

/* Element @i into a growing array of @size-byte elements (zeroed), counted in *n. */
static gpointer grow(gpointer *array, guint *n, gsize size)
{
    if ((*n & (*n - 1)) == 0 || *n == 0)
        *array = g_realloc(*array, MAX(*n * 2, 4) * size);
    char *e = (char *)*array + *n * size;
    memset(e, 0, size);
    (*n)++;
    return e;
}

/* ---- spec ----------------------------------------------------------------------------------- */

static gboolean read_selector(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbDeviceSubRequest *s = data;
    KbJsonStr k;
    int rc, cels = 0;
    char **sel = grow((gpointer *)&s->selectors, &s->n_selectors, sizeof(char *));
    if (!expect(r, KB_JSON_OBJECT, "selector", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!KB_JSON_STR_IS(k, "cel")) {
            if (!kb_json_skip(r, error))
                return FALSE;
            continue;
        }
        guint32 seen = 0;
        int rc2;
        if (cels++ > 0 || !expect(r, KB_JSON_OBJECT, "cel", error) ||
            !kb_json_object_begin(r, error))
            return cels > 1 ? refuse("cel", error) : FALSE;
        while ((rc2 = kb_json_object_next(r, &k, error)) == 1) {
            gboolean ok = KB_JSON_STR_IS(k, "expression")
                                  ? once(&seen, 1, "expression", error) &&
                                            read_owned(r, "expression", KB_DRA_MAX_EXPRESSION_LEN,
                                                       sel, error)
                                  : kb_json_skip(r, error);
            if (!ok)
                return FALSE;
        }
        if (rc2 < 0)
            return FALSE;
    }
    return rc == 0 && (*sel != NULL || refuse("selectors[].cel.expression", error));
}

enum { X_CLASS = 1, X_SELECTORS = 2, X_MODE = 4, X_COUNT = 8, X_ADMIN = 16 };

static gboolean exactly_member(KbJsonReader *r, const KbJsonStr *k, KbDeviceSubRequest *s,
                               guint32 *seen, KbJsonStr *mode, GError **error)
{
    if (KB_JSON_STR_IS(*k, "deviceClassName"))
        return once(seen, X_CLASS, "deviceClassName", error) &&
               read_interned(r, "deviceClassName", KB_MAX_NAME_LEN, &s->device_class, error);
    if (KB_JSON_STR_IS(*k, "selectors"))
        return once(seen, X_SELECTORS, "selectors", error) &&
               read_array(r, "selectors", KB_DRA_MAX_SELECTORS, read_selector, s, error);
    if (KB_JSON_STR_IS(*k, "allocationMode"))
        return once(seen, X_MODE, "allocationMode", error) &&
               read_text(r, "allocationMode", KB_MAX_NAME_LEN, TRUE, mode, error);
    if (KB_JSON_STR_IS(*k, "count")) {
        KbJsonStr text;
        gboolean integer;
        if (!once(seen, X_COUNT, "count", error) || !expect(r, KB_JSON_NUMBER, "count", error) ||
            !kb_json_read_number(r, &text, &integer, error))
            return FALSE;
        s->count = kb_json_integer_value(&text);
        return (integer && s->count >= 1 && s->count <= KB_DRA_MAX_COUNT) || refuse("count", error);
    }
    if (KB_JSON_STR_IS(*k, "adminAccess"))
        return once(seen, X_ADMIN, "adminAccess", error) &&
               (kb_json_peek(r) == KB_JSON_TRUE || kb_json_peek(r) == KB_JSON_FALSE ||
                refuse("adminAccess", error)) &&
               kb_json_read_bool(r, &s->admin_access, error);
    if (KB_JSON_STR_IS(*k, "capacity"))
        return refuse("capacity", error);
    return kb_json_skip(r, error);
}

static gboolean read_exactly(KbJsonReader *r, KbDeviceSubRequest *s, GError **error)
{
    KbJsonStr k, mode = {NULL, 0};
    char mode_buf[16] = "";
    guint32 seen = 0;
    int rc;
    s->count = 1;
    if (!expect(r, KB_JSON_OBJECT, "exactly", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!exactly_member(r, &k, s, &seen, &mode, error))
            return FALSE;
        if ((seen & X_MODE) != 0 && mode_buf[0] == '\0') {
            /* the text may live in the reader's scratch buffer: kept before the next string */
            if (mode.len == 0 || mode.len >= sizeof(mode_buf))
                return refuse("allocationMode", error);
            memcpy(mode_buf, mode.p, mode.len);
            mode_buf[mode.len] = '\0';
        }
    }
    if (rc < 0 || s->device_class == NULL)
        return rc == 0 ? refuse("deviceClassName", error) : FALSE;
    if (mode_buf[0] != '\0' && strcmp(mode_buf, "All") != 0 && strcmp(mode_buf, "ExactCount") != 0)
        return refuse("allocationMode", error);
    s->all = strcmp(mode_buf, "All") == 0;
    if (s->all && (seen & X_COUNT) != 0)
        return refuse("count", error);
    if (s->all)
        s->count = 0;
    return TRUE;
}

static gboolean read_request(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbClaimSpec *spec = data;
    KbDeviceRequest *req = grow((gpointer *)&spec->requests, &spec->n_requests, sizeof *req);
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "request", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "name"))
            ok = once(&seen, 1, "name", error) &&
                 read_owned(r, "name", KB_MAX_NAME_LEN, &req->exactly.name, error);
        else if (KB_JSON_STR_IS(k, "exactly"))
            ok = once(&seen, 2, "exactly", error) && read_exactly(r, &req->exactly, error);
        else if (KB_JSON_STR_IS(k, "firstAvailable"))
            ok = refuse("firstAvailable", error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && (seen == 3 || refuse("request", error));
}

static gboolean read_constraint_request(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbDeviceConstraint *c = data;
    KbJsonStr s;
    if (!read_text(r, "requests[]", G_MAXSIZE, TRUE, &s, error))
        return FALSE;
    char **slot = grow((gpointer *)&c->requests, &c->n_requests, sizeof(char *));
    *slot = kb_json_str_dup(&s);
    return TRUE;
}

static gboolean read_constraint(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbClaimSpec *spec = data;
    KbDeviceConstraint *c = grow((gpointer *)&spec->constraints, &spec->n_constraints, sizeof *c);
    KbJsonStr k, v;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "constraint", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "requests")) {
            ok = once(&seen, 1, "requests", error) &&
                 read_array(r, "requests", KB_DRA_MAX_REQUESTS, read_constraint_request, c, error);
        } else if (KB_JSON_STR_IS(k, "matchAttribute")) {
            ok = once(&seen, 2, "matchAttribute", error) &&
                 read_text(r, "matchAttribute", KB_MAX_LABEL_KEY_LEN, TRUE, &v, error);
            if (ok && v.len > 0)
                c->match_attribute = kb_json_str_dup(&v);
        } else if (KB_JSON_STR_IS(k, "distinctAttribute")) {
            ok = once(&seen, 4, "distinctAttribute", error) &&
                 read_text(r, "distinctAttribute", KB_MAX_LABEL_KEY_LEN, TRUE, &v, error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

static gboolean read_spec(KbJsonReader *r, KbClaimSpec *spec, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc, rc2;
    if (!expect(r, KB_JSON_OBJECT, "spec", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!KB_JSON_STR_IS(k, "devices")) {
            if (!kb_json_skip(r, error))
                return FALSE;
            continue;
        }
        if (!once(&seen, 1, "devices", error) || !expect(r, KB_JSON_OBJECT, "devices", error) ||
            !kb_json_object_begin(r, error))
            return FALSE;
        guint32 dseen = 0;
        while ((rc2 = kb_json_object_next(r, &k, error)) == 1) {
            gboolean ok;
            if (KB_JSON_STR_IS(k, "requests"))
                ok = once(&dseen, 1, "requests", error) &&
                     read_array(r, "requests", KB_DRA_MAX_REQUESTS, read_request, spec, error);
            else if (KB_JSON_STR_IS(k, "constraints"))
                ok = once(&dseen, 2, "constraints", error) &&
                     read_array(r, "constraints", KB_DRA_MAX_REQUESTS, read_constraint, spec,
                                error);
            else
                ok = kb_json_skip(r, error);
            if (!ok)
                return FALSE;
        }
        if (rc2 < 0)
            return FALSE;
    }
    return rc == 0;
}

/* ---- status --------------------------------------------------------------------------------- */

static gboolean read_result(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbResourceClaim *c = data;
    KbDeviceResult *res = grow((gpointer *)&c->results, &c->n_results, sizeof *res);
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "result", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "request"))
            ok = once(&seen, 1, "request", error) &&
                 read_owned(r, "request", KB_MAX_NAME_LEN * 2 + 1, &res->request, error);
        else if (KB_JSON_STR_IS(k, "driver"))
            ok = once(&seen, 2, "driver", error) &&
                 read_interned(r, "driver", KB_MAX_NAME_LEN, &res->driver, error);
        else if (KB_JSON_STR_IS(k, "pool"))
            ok = once(&seen, 4, "pool", error) &&
                 read_interned(r, "pool", KB_MAX_NAME_LEN, &res->pool, error);
        else if (KB_JSON_STR_IS(k, "device"))
            ok = once(&seen, 8, "device", error) &&
                 read_owned(r, "device", KB_MAX_NAME_LEN, &res->device, error);
        else if (KB_JSON_STR_IS(k, "consumedCapacity") || KB_JSON_STR_IS(k, "shareID"))
            ok = refuse("consumedCapacity or shareID", error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && (((seen & 9) == 9) || refuse("request or device", error));
}

/* One object member @key at @r, whose value is read by @inner; any other member refused. */
typedef gboolean (*Inner)(KbJsonReader *r, gpointer data, GError **error);

static gboolean only_member(KbJsonReader *r, const char *key, Inner inner, gpointer data,
                            GError **error)
{
    KbJsonStr k;
    int rc, n = 0;
    if (!expect(r, KB_JSON_OBJECT, key, error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (n++ > 0 || strlen(key) != k.len || memcmp(k.p, key, k.len) != 0)
            return refuse(key, error);
        if (!inner(r, data, error))
            return FALSE;
    }
    return rc == 0 && (n == 1 || refuse(key, error));
}

/* An array of exactly one element, read by @inner. */
static gboolean only_element(KbJsonReader *r, const char *what, Inner inner, gpointer data,
                             GError **error)
{
    int rc, n = 0;
    if (!expect(r, KB_JSON_ARRAY, what, error) || !kb_json_array_begin(r, error))
        return FALSE;
    while ((rc = kb_json_array_next(r, error)) == 1) {
        if (n++ > 0 || !inner(r, data, error))
            return n > 1 ? refuse(what, error) : FALSE;
    }
    return rc == 0 && (n == 1 || refuse(what, error));
}

static gboolean read_node_value(KbJsonReader *r, gpointer data, GError **error)
{
    KbJsonStr s;
    const char **node = data;
    if (!read_text(r, "values[0]", KB_MAX_NAME_LEN, TRUE, &s, error))
        return FALSE;
    g_autofree char *c = kb_json_str_dup(&s);
    *node = s.len > 0 ? g_intern_string(c) : NULL;
    return TRUE;
}

/* matchFields[0]: {"key": "metadata.name", "operator": "In", "values": [node]}, nothing else. */
static gboolean read_field(KbJsonReader *r, gpointer data, GError **error)
{
    KbJsonStr k, v;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "matchFields[0]", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "key"))
            ok = once(&seen, 1, "key", error) &&
                 read_text(r, "key", KB_MAX_NAME_LEN, TRUE, &v, error) &&
                 (KB_JSON_STR_IS(v, KB_NODE_FIELD_NAME) || refuse("key", error));
        else if (KB_JSON_STR_IS(k, "operator"))
            ok = once(&seen, 2, "operator", error) &&
                 read_text(r, "operator", KB_MAX_NAME_LEN, TRUE, &v, error) &&
                 (KB_JSON_STR_IS(v, "In") || refuse("operator", error));
        else if (KB_JSON_STR_IS(k, "values"))
            ok = once(&seen, 4, "values", error) &&
                 only_element(r, "values", read_node_value, data, error);
        else
            ok = refuse("matchFields[0]", error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && (seen == 7 || refuse("matchFields[0]", error));
}

static gboolean read_fields(KbJsonReader *r, gpointer data, GError **error)
{
    return only_element(r, "matchFields", read_field, data, error);
}

static gboolean read_term(KbJsonReader *r, gpointer data, GError **error)
{
    return only_member(r, "matchFields", read_fields, data, error);
}

static gboolean read_terms(KbJsonReader *r, gpointer data, GError **error)
{
    return only_element(r, "nodeSelectorTerms", read_term, data, error);
}

static gboolean read_results(KbJsonReader *r, gpointer data, GError **error)
{
    return read_array(r, "results", KB_DRA_MAX_REQUESTS, read_result, data, error);
}

static gboolean read_allocation(KbJsonReader *r, KbResourceClaim *c, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    c->allocated = TRUE;
    if (!expect(r, KB_JSON_OBJECT, "allocation", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "devices"))
            ok = once(&seen, 1, "devices", error) &&
                 only_member(r, "results", read_results, c, error);
        else if (KB_JSON_STR_IS(k, "nodeSelector"))
            ok = once(&seen, 2, "nodeSelector", error) &&
                 only_member(r, "nodeSelectorTerms", read_terms, &c->node, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

static gboolean read_consumer(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbResourceClaim *c = data;
    KbClaimConsumer *cons = grow((gpointer *)&c->reserved_for, &c->n_reserved_for, sizeof *cons);
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "reservedFor[]", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "resource"))
            ok = once(&seen, 1, "resource", error) &&
                 read_interned(r, "resource", KB_MAX_NAME_LEN, &cons->resource, error);
        else if (KB_JSON_STR_IS(k, "name"))
            ok = once(&seen, 2, "name", error) &&
                 read_owned(r, "name", KB_MAX_NAME_LEN, &cons->name, error);
        else if (KB_JSON_STR_IS(k, "uid"))
            ok = once(&seen, 4, "uid", error) &&
                 read_owned(r, "uid", KB_MAX_NAME_LEN, &cons->uid, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && (((seen & 6) == 6) || refuse("reservedFor[]", error));
}

static gboolean read_status(KbJsonReader *r, KbResourceClaim *c, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "status", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "allocation"))
            ok = once(&seen, 1, "allocation", error) && read_allocation(r, c, error);
        else if (KB_JSON_STR_IS(k, "reservedFor"))
            ok = once(&seen, 2, "reservedFor", error) &&
                 read_array(r, "reservedFor", KB_DRA_MAX_RESERVED_FOR, read_consumer, c, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

/* ---- claims --------------------------------------------------------------------------------- */

static KbObjectMeta *read_claim(KbJsonReader *r, GError **error)
{
    g_autoptr(KbResourceClaim) c = g_new0(KbResourceClaim, 1);
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    kb_meta_init(&c->meta, KB_KIND_RESOURCE_CLAIM);
    if (!expect(r, KB_JSON_OBJECT, "claim", error) || !kb_json_object_begin(r, error))
        return NULL;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "metadata"))
            ok = once(&seen, 1, "metadata", error) &&
                 expect(r, KB_JSON_OBJECT, "metadata", error) &&
                 kb_fast_decode_metadata(r, &c->meta, error);
        else if (KB_JSON_STR_IS(k, "spec"))
            ok = once(&seen, 2, "spec", error) && read_spec(r, &c->spec, error);
        else if (KB_JSON_STR_IS(k, "status"))
            ok = once(&seen, 4, "status", error) && read_status(r, c, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return NULL;
    }
    if (rc < 0 || ((seen & 1) == 0 && !refuse("metadata", error)))
        return NULL;
    return (KbObjectMeta *)g_steal_pointer(&c);
}

/* One object, the whole of @json, through @item. */
static KbObjectMeta *decode_one(const char *json, gsize len, KbFastItemDecoder item, GError **error)
{
    KbJsonReader r;
    kb_json_reader_init(&r, json, len);
    KbObjectMeta *o = item(&r, error);
    if (o != NULL && !kb_json_finish(&r, error))
        g_clear_pointer(&o, kb_object_unref);
    kb_json_reader_clear(&r);
    return o;
}

KbResourceClaim *kb_resource_claim_decode_bytes(const char *json, gsize len, GError **error)
{
    return (KbResourceClaim *)decode_one(json, len, read_claim, error);
}

gboolean kb_resource_claim_list_decode_bytes(const char *json, gsize len, GPtrArray *out,
                                             char **resource_version, char **continue_token,
                                             GError **error)
{
    return kb_fast_list_decode(json, len, read_claim, out, resource_version, continue_token, error);
}

/* ---- comparison ----------------------------------------------------------------------------- */

static gboolean strv_eq(const char *field, char **a, guint na, char **b, guint nb, char **why)
{
    if (!kb_eq_int(field, na, nb, why))
        return FALSE;
    for (guint i = 0; i < na; i++) {
        if (!kb_eq_str(field, a[i], b[i], why))
            return FALSE;
    }
    return TRUE;
}

static gboolean amounts_eq(const char *field, const KbCapacityAmount *a, guint na,
                           const KbCapacityAmount *b, guint nb, char **why)
{
    if (!kb_eq_int(field, na, nb, why))
        return FALSE;
    for (guint i = 0; i < na; i++) {
        if (!kb_eq_str(field, a[i].name, b[i].name, why) ||
            !kb_eq_int(field, a[i].milli, b[i].milli, why))
            return FALSE;
    }
    return TRUE;
}

static gboolean sub_request_eq(const KbDeviceSubRequest *a, const KbDeviceSubRequest *b, char **why)
{
    return kb_eq_str("request name", a->name, b->name, why) &&
           kb_eq_str("deviceClassName", a->device_class, b->device_class, why) &&
           strv_eq("selectors", a->selectors, a->n_selectors, b->selectors, b->n_selectors, why) &&
           kb_eq_int("allocationMode All", a->all, b->all, why) &&
           kb_eq_int("count", a->count, b->count, why) &&
           kb_eq_int("adminAccess", a->admin_access, b->admin_access, why) &&
           amounts_eq("capacity.requests", a->capacity, a->n_capacity, b->capacity, b->n_capacity,
                      why);
}

static gboolean spec_eq(const KbClaimSpec *a, const KbClaimSpec *b, char **why)
{
    if (!kb_eq_int("requests.length", a->n_requests, b->n_requests, why) ||
        !kb_eq_int("constraints.length", a->n_constraints, b->n_constraints, why))
        return FALSE;
    for (guint i = 0; i < a->n_requests; i++) {
        const KbDeviceRequest *x = &a->requests[i], *y = &b->requests[i];
        if (!sub_request_eq(&x->exactly, &y->exactly, why) ||
            !kb_eq_int("firstAvailable.length", x->n_first_available, y->n_first_available, why))
            return FALSE;
        for (guint j = 0; j < x->n_first_available; j++) {
            if (!sub_request_eq(&x->first_available[j], &y->first_available[j], why))
                return FALSE;
        }
    }
    for (guint i = 0; i < a->n_constraints; i++) {
        const KbDeviceConstraint *x = &a->constraints[i], *y = &b->constraints[i];
        if (!strv_eq("constraints[].requests", x->requests, x->n_requests, y->requests,
                     y->n_requests, why) ||
            !kb_eq_str("matchAttribute", x->match_attribute, y->match_attribute, why))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_claim_spec_equal(const KbClaimSpec *a, const KbClaimSpec *b)
{
    /* one spec shared by two records of a claim (kb_resource_claim_after_status) */
    if (a->requests == b->requests && a->n_requests == b->n_requests &&
        a->constraints == b->constraints && a->n_constraints == b->n_constraints)
        return TRUE;
    return spec_eq(a, b, NULL);
}

gboolean kb_resource_claim_equal(const KbResourceClaim *a, const KbResourceClaim *b, char **why)
{
    if (!kb_meta_equal(&a->meta, &b->meta, why) || !spec_eq(&a->spec, &b->spec, why) ||
        !kb_eq_int("allocated", a->allocated, b->allocated, why) ||
        !kb_eq_str("allocation node", a->node, b->node, why) ||
        !kb_eq_int("results.length", a->n_results, b->n_results, why) ||
        !kb_eq_int("reservedFor.length", a->n_reserved_for, b->n_reserved_for, why))
        return FALSE;
    for (guint i = 0; i < a->n_results; i++) {
        const KbDeviceResult *x = &a->results[i], *y = &b->results[i];
        if (!kb_eq_str("results[].request", x->request, y->request, why) ||
            !kb_eq_str("results[].driver", x->driver, y->driver, why) ||
            !kb_eq_str("results[].pool", x->pool, y->pool, why) ||
            !kb_eq_str("results[].device", x->device, y->device, why) ||
            !amounts_eq("results[].consumedCapacity", x->consumed, x->n_consumed, y->consumed,
                        y->n_consumed, why) ||
            !kb_eq_str("results[].shareID", x->share_id, y->share_id, why))
            return FALSE;
    }
    for (guint i = 0; i < a->n_reserved_for; i++) {
        const KbClaimConsumer *x = &a->reserved_for[i], *y = &b->reserved_for[i];
        if (!kb_eq_str("reservedFor[].resource", x->resource, y->resource, why) ||
            !kb_eq_str("reservedFor[].name", x->name, y->name, why) ||
            !kb_eq_str("reservedFor[].uid", x->uid, y->uid, why))
            return FALSE;
    }
    return TRUE;
}

/* ---- ResourceSlices ------------------------------------------------------------------------- */

/*
 * The slices kb-kubelet --dra (and --mig) and NVIDIA's driver publish: driver, pool, nodeName or
 * allNodes, devices with attributes, capacity (requestPolicy included), consumesCounters and
 * allowMultipleAllocations, and sharedCounters. Refused as for claims: null or duplicate
 * members, a value of another type, anything over a limit or that kb_resource_slice_decode()
 * would reject, a string holding NUL, devices before the driver (their unqualified names belong
 * to it), an attribute map key written twice.
 */

/* A string without NUL (json-c would cut it there) of at most @max bytes. */
static gboolean read_clean(KbJsonReader *r, const char *what, gsize max, gboolean allow_empty,
                           KbJsonStr *out, GError **error)
{
    return read_text(r, what, max, allow_empty, out, error) &&
           (memchr(out->p, '\0', out->len) == NULL || refuse(what, error));
}

/* A quantity string into milli-units (kb-dra.c's quantity_milli). */
static gboolean read_milli(KbJsonReader *r, const char *what, gint64 *out, GError **error)
{
    KbJsonStr s;
    char buf[64];
    KbQuantity q;
    if (!read_clean(r, what, sizeof buf - 1, TRUE, &s, error))
        return FALSE;
    memcpy(buf, s.p, s.len);
    buf[s.len] = '\0';
    if (!kb_quantity_parse(buf, &q, NULL))
        return refuse(what, error);
    *out = kb_quantity_milli_value(&q);
    return TRUE;
}

/* An integer of at most 18 digits (json-c's clamping never comes into it). */
static gboolean read_int(KbJsonReader *r, const char *what, gint64 *out, GError **error)
{
    KbJsonStr text;
    gboolean integer;
    if (!expect(r, KB_JSON_NUMBER, what, error) || !kb_json_read_number(r, &text, &integer, error))
        return FALSE;
    if (!integer || text.len > 18)
        return refuse(what, error);
    *out = kb_json_integer_value(&text);
    return TRUE;
}

static gboolean read_boolean(KbJsonReader *r, const char *what, gboolean *out, GError **error)
{
    return (kb_json_peek(r) == KB_JSON_TRUE || kb_json_peek(r) == KB_JSON_FALSE ||
            refuse(what, error)) &&
           kb_json_read_bool(r, out, error);
}

/* counters {name: {"value": quantity}}: 1 to KB_DRA_MAX_COUNTERS entries, none negative. */
static gboolean read_counters(KbJsonReader *r, KbCounterSet *set, GError **error)
{
    KbJsonStr k;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "counters", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (set->n_counters == KB_DRA_MAX_COUNTERS || memchr(k.p, '\0', k.len) != NULL)
            return refuse("counters", error);
        const char *interned = kb_fast_intern(&k);
        for (guint i = 0; i < set->n_counters; i++) {
            if (set->counters[i].name == interned)
                return refuse("counters", error);
        }
        KbCounter *c = grow((gpointer *)&set->counters, &set->n_counters, sizeof *c);
        c->name = interned;
        guint32 seen = 0;
        int rc2;
        if (!expect(r, KB_JSON_OBJECT, "counter", error) || !kb_json_object_begin(r, error))
            return FALSE;
        while ((rc2 = kb_json_object_next(r, &k, error)) == 1) {
            gboolean ok = KB_JSON_STR_IS(k, "value")
                                  ? once(&seen, 1, "value", error) &&
                                            read_milli(r, "value", &c->milli, error)
                                  : kb_json_skip(r, error);
            if (!ok)
                return FALSE;
        }
        if (rc2 < 0)
            return FALSE;
        if (seen == 0 || c->milli < 0)
            return refuse("counters[].value", error);
    }
    return rc == 0 && (set->n_counters > 0 || refuse("counters", error));
}

/* A sharedCounters[] ("name") or consumesCounters[] ("counterSet") entry. */
typedef struct {
    const char *name_key;
    KbCounterSet **sets;
    guint *n;
} CounterSets;

static gboolean read_counter_set(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    CounterSets *cs = data;
    KbCounterSet *set = grow((gpointer *)cs->sets, cs->n, sizeof *set);
    KbJsonStr k, v;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "counter set", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (k.len == strlen(cs->name_key) && memcmp(k.p, cs->name_key, k.len) == 0) {
            ok = once(&seen, 1, cs->name_key, error) &&
                 read_clean(r, cs->name_key, KB_MAX_NAME_LEN, FALSE, &v, error);
            if (ok)
                set->name = kb_fast_intern(&v);
        } else if (KB_JSON_STR_IS(k, "counters")) {
            ok = once(&seen, 2, "counters", error) && read_counters(r, set, error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    return rc == 0 && (seen == 3 || refuse("counter set", error));
}

static gboolean read_counter_sets(KbJsonReader *r, const char *key, const char *name_key, gsize max,
                                  KbCounterSet **sets, guint *n, GError **error)
{
    CounterSets cs = {name_key, sets, n};
    return read_array(r, key, max, read_counter_set, &cs, error);
}

/* A map key of attributes or capacity, "domain/name" or "name" (kb-dra.c's qualified_name). */
static gboolean read_qualified(const KbJsonStr *k, const char *driver, const char **domain,
                               const char **name, gboolean *slash, GError **error)
{
    if (k->len == 0 || k->len > KB_MAX_LABEL_KEY_LEN || memchr(k->p, '\0', k->len) != NULL)
        return refuse("attribute or capacity name", error);
    const char *s = memchr(k->p, '/', k->len);
    *slash = s != NULL;
    if (s == NULL) {
        *domain = driver;
        *name = kb_fast_intern(k);
        return TRUE;
    }
    KbJsonStr d = {k->p, (gsize)(s - k->p)}, n = {s + 1, k->len - d.len - 1};
    *domain = kb_fast_intern(&d);
    *name = kb_fast_intern(&n);
    return TRUE;
}

/* The same key met before in this map (json-c keeps one entry, where the first was)? */
static gboolean written_twice(const char *domain, const char *name, gboolean slash,
                              const guint32 slashes, const char *const *domains,
                              const char *const *names, guint n)
{
    for (guint i = 0; i < n; i++) {
        if (domains[i] == domain && names[i] == name && ((slashes >> i) & 1) == (guint32)slash)
            return TRUE;
    }
    return FALSE;
}

/* One attribute value {"int"|"bool"|"string"|"version": v}: exactly one of them. */
static gboolean read_attribute(KbJsonReader *r, KbCelAttribute *a, GError **error)
{
    static const char *const kinds[] = {"int", "bool", "string", "version"};
    KbJsonStr k, v;
    int rc, found = 0;
    if (!expect(r, KB_JSON_OBJECT, "attribute", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        guint kind = G_N_ELEMENTS(kinds);
        for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
            if (k.len == strlen(kinds[i]) && memcmp(k.p, kinds[i], k.len) == 0)
                kind = i;
        }
        if (kind == G_N_ELEMENTS(kinds)) {
            if (!kb_json_skip(r, error))
                return FALSE;
            continue;
        }
        if (found++ > 0)
            return refuse("attribute", error);
        a->type = (KbCelAttrType)kind;
        gboolean ok;
        if (kind == KB_CEL_ATTR_INT)
            ok = read_int(r, "int", &a->int_value, error);
        else if (kind == KB_CEL_ATTR_BOOL)
            ok = read_boolean(r, "bool", &a->bool_value, error);
        else if ((ok = read_clean(r, kinds[kind], KB_DRA_MAX_ATTRIBUTE_LEN, TRUE, &v, error)))
            a->string_value = kb_json_str_dup(&v);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && (found == 1 || refuse("attribute", error));
}

static gboolean read_valid_value(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbCapacityPolicy *p = data;
    gint64 *v = grow((gpointer *)&p->valid_values, &p->n_valid_values, sizeof *v);
    return read_milli(r, "validValues[]", v, error) &&
           (i == 0 || *v > p->valid_values[i - 1] || refuse("validValues", error));
}

static gboolean read_range(KbJsonReader *r, KbCapacityPolicy *p, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    p->has_range = TRUE;
    if (!expect(r, KB_JSON_OBJECT, "validRange", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "min"))
            ok = once(&seen, 1, "min", error) && read_milli(r, "min", &p->min, error);
        else if (KB_JSON_STR_IS(k, "max"))
            ok = once(&seen, 2, "max", error) && read_milli(r, "max", &p->max, error);
        else if (KB_JSON_STR_IS(k, "step"))
            ok = once(&seen, 4, "step", error) && read_milli(r, "step", &p->step, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && ((p->min >= 0 && p->step >= 0 && (p->max == 0 || p->max >= p->min)) ||
                       refuse("validRange", error));
}

static gboolean read_policy(KbJsonReader *r, KbCapacityPolicy *p, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "requestPolicy", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "default"))
            ok = once(&seen, 1, "default", error) &&
                 read_milli(r, "default", &p->default_milli, error);
        else if (KB_JSON_STR_IS(k, "validValues"))
            ok = once(&seen, 2, "validValues", error) &&
                 read_array(r, "validValues", KB_DRA_MAX_VALID_VALUES, read_valid_value, p, error);
        else if (KB_JSON_STR_IS(k, "validRange"))
            ok = once(&seen, 4, "validRange", error) && read_range(r, p, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    p->has_default = (seen & 1) != 0;
    return rc == 0;
}

/* One capacity entry {"value": quantity, "requestPolicy": {...}} of @d, index @i. */
static gboolean read_capacity_value(KbJsonReader *r, KbDevice *d, guint i, GError **error)
{
    KbJsonStr k, v;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "capacity", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "value")) {
            char buf[KB_MAX_NAME_LEN + 1];
            ok = once(&seen, 1, "value", error) &&
                 read_clean(r, "value", KB_MAX_NAME_LEN, TRUE, &v, error);
            if (ok) {
                memcpy(buf, v.p, v.len);
                buf[v.len] = '\0';
                ok = kb_quantity_parse(buf, &d->capacity[i].value, NULL) ||
                     refuse("capacity value", error);
            }
        } else if (KB_JSON_STR_IS(k, "requestPolicy")) {
            /* rare (shared GPUs): room for every capacity, indexed alike, freed up to
             * n_capacity */
            if (d->policies == NULL)
                d->policies = g_new0(KbCapacityPolicy, KB_DRA_MAX_DEVICE_FIELDS);
            ok = once(&seen, 2, "requestPolicy", error) && read_policy(r, &d->policies[i], error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    return rc == 0 && ((seen & 1) != 0 || refuse("capacity value", error));
}

/* One entry of a device's attributes or capacity, @domain/@name its qualified key: appends to
 * @data's array and reads the value. */
typedef gboolean (*QualifiedEntryFunc)(KbJsonReader *r, gpointer data, const char *domain,
                                       const char *name, GError **error);

/*
 * A device's map of qualified names (attributes or capacity, @what): each key read against
 * @driver, none written twice (with or without the driver's domain), at most
 * KB_DRA_MAX_DEVICE_FIELDS with the device's other @fields; @n is the count of the array
 * @entry grows.
 */
static gboolean read_qualified_map(KbJsonReader *r, const char *what, const char *driver,
                                   gpointer data, const guint *n, QualifiedEntryFunc entry,
                                   guint *fields, GError **error)
{
    const char *domains[KB_DRA_MAX_DEVICE_FIELDS], *names[KB_DRA_MAX_DEVICE_FIELDS];
    guint32 slashes = 0;
    KbJsonStr k;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, what, error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        const char *domain, *name;
        gboolean slash;
        if ((*fields)++ == KB_DRA_MAX_DEVICE_FIELDS ||
            !read_qualified(&k, driver, &domain, &name, &slash, error))
            return *fields > KB_DRA_MAX_DEVICE_FIELDS ? refuse(what, error) : FALSE;
        if (written_twice(domain, name, slash, slashes, domains, names, *n))
            return refuse(what, error);
        domains[*n] = domain;
        names[*n] = name;
        slashes |= (guint32)slash << *n;
        if (!entry(r, data, domain, name, error))
            return FALSE;
    }
    return rc == 0;
}

/* A device's attributes as they are read (at most KB_DRA_MAX_DEVICE_FIELDS): copied to the
 * device in one allocation of their size, instead of an array grown (and moved) three or four
 * times for the ten or so attributes a GPU has. */
typedef struct {
    KbCelAttribute items[KB_DRA_MAX_DEVICE_FIELDS];
    guint n;
} AttributeBuf;

static gboolean attribute_entry(KbJsonReader *r, gpointer data, const char *domain,
                                const char *name, GError **error)
{
    AttributeBuf *b = data;
    KbCelAttribute *a = &b->items[b->n++]; /* read_qualified_map bounds the count */
    memset(a, 0, sizeof *a);
    a->domain = domain;
    a->name = name;
    return read_attribute(r, a, error);
}

/* The attributes map of @d: kept whole or in part (read so far, freed with the device) */
static gboolean read_attributes(KbJsonReader *r, const char *driver, KbDevice *d, guint *fields,
                                GError **error)
{
    AttributeBuf b;
    b.n = 0;
    gboolean ok =
            read_qualified_map(r, "attributes", driver, &b, &b.n, attribute_entry, fields, error);
    if (b.n > 0) {
        d->attributes = g_memdup2(b.items, b.n * sizeof(KbCelAttribute));
        d->n_attributes = b.n;
    }
    return ok;
}

static gboolean capacity_entry(KbJsonReader *r, gpointer data, const char *domain, const char *name,
                               GError **error)
{
    KbDevice *d = data;
    KbCelCapacity *c = grow((gpointer *)&d->capacity, &d->n_capacity, sizeof *c);
    c->domain = domain;
    c->name = name;
    return read_capacity_value(r, d, d->n_capacity - 1, error);
}

enum { D_NAME = 1, D_ATTRS = 2, D_CAP = 4, D_CONSUMES = 8, D_MULTIPLE = 16 };

static gboolean device_member(KbJsonReader *r, const KbJsonStr *k, const char *driver, KbDevice *d,
                              guint32 *seen, guint *fields, GError **error)
{
    if (KB_JSON_STR_IS(*k, "name")) {
        KbJsonStr v;
        if (!once(seen, D_NAME, "name", error) ||
            !read_clean(r, "name", KB_MAX_NAME_LEN, FALSE, &v, error))
            return FALSE;
        d->name = kb_json_str_dup(&v);
        return TRUE;
    }
    if (KB_JSON_STR_IS(*k, "attributes"))
        return once(seen, D_ATTRS, "attributes", error) &&
               read_attributes(r, driver, d, fields, error);
    if (KB_JSON_STR_IS(*k, "capacity"))
        return once(seen, D_CAP, "capacity", error) &&
               read_qualified_map(r, "capacity", driver, d, &d->n_capacity, capacity_entry, fields,
                                  error);
    if (KB_JSON_STR_IS(*k, "consumesCounters"))
        return once(seen, D_CONSUMES, "consumesCounters", error) &&
               read_counter_sets(r, "consumesCounters", "counterSet", KB_DRA_MAX_CONSUMES,
                                 &d->consumes, &d->n_consumes, error);
    if (KB_JSON_STR_IS(*k, "allowMultipleAllocations"))
        return once(seen, D_MULTIPLE, "allowMultipleAllocations", error) &&
               read_boolean(r, "allowMultipleAllocations", &d->multiple, error);
    return kb_json_skip(r, error);
}

static gboolean read_device(KbJsonReader *r, gpointer data, gsize i, GError **error)
{
    KbResourceSlice *s = data;
    KbDevice *d = grow((gpointer *)&s->devices, &s->n_devices, sizeof *d);
    KbJsonStr k;
    guint32 seen = 0;
    guint fields = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "device", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!device_member(r, &k, s->driver, d, &seen, &fields, error))
            return FALSE;
    }
    return rc == 0 && (d->name != NULL || refuse("device name", error));
}

static gboolean read_pool(KbJsonReader *r, KbResourceSlice *s, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "pool", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "name"))
            ok = once(&seen, 1, "name", error) &&
                 read_interned(r, "name", KB_MAX_NAME_LEN, &s->pool, error);
        else if (KB_JSON_STR_IS(k, "generation"))
            ok = once(&seen, 2, "generation", error) &&
                 read_int(r, "generation", &s->pool_generation, error) &&
                 (s->pool_generation >= 0 || refuse("generation", error));
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

enum { S_DRIVER = 1, S_POOL = 2, S_NODE = 4, S_ALL = 8, S_DEVICES = 16, S_SHARED = 32 };

static gboolean slice_member(KbJsonReader *r, const KbJsonStr *k, KbResourceSlice *s, guint32 *seen,
                             GError **error)
{
    if (KB_JSON_STR_IS(*k, "driver"))
        return once(seen, S_DRIVER, "driver", error) &&
               read_interned(r, "driver", KB_MAX_NAME_LEN, &s->driver, error);
    if (KB_JSON_STR_IS(*k, "pool"))
        return once(seen, S_POOL, "pool", error) && read_pool(r, s, error);
    if (KB_JSON_STR_IS(*k, "nodeName"))
        return once(seen, S_NODE, "nodeName", error) &&
               read_interned(r, "nodeName", KB_MAX_NAME_LEN, &s->node, error);
    if (KB_JSON_STR_IS(*k, "allNodes"))
        return once(seen, S_ALL, "allNodes", error) &&
               read_boolean(r, "allNodes", &s->all_nodes, error);
    if (KB_JSON_STR_IS(*k, "devices"))
        return once(seen, S_DEVICES, "devices", error) &&
               (s->driver != NULL || refuse("devices before driver", error)) &&
               read_array(r, "devices", KB_DRA_MAX_SLICE_DEVICES, read_device, s, error);
    if (KB_JSON_STR_IS(*k, "sharedCounters"))
        return once(seen, S_SHARED, "sharedCounters", error) &&
               read_counter_sets(r, "sharedCounters", "name", KB_DRA_MAX_COUNTER_SETS,
                                 &s->counter_sets, &s->n_counter_sets, error);
    return kb_json_skip(r, error);
}

static gboolean read_slice_spec(KbJsonReader *r, KbResourceSlice *s, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!expect(r, KB_JSON_OBJECT, "spec", error) || !kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!slice_member(r, &k, s, &seen, error))
            return FALSE;
    }
    return rc == 0 && (s->driver != NULL || refuse("driver", error));
}

static KbObjectMeta *read_slice(KbJsonReader *r, GError **error)
{
    g_autoptr(KbResourceSlice) s = g_new0(KbResourceSlice, 1);
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    kb_meta_init(&s->meta, KB_KIND_RESOURCE_SLICE);
    if (!expect(r, KB_JSON_OBJECT, "slice", error) || !kb_json_object_begin(r, error))
        return NULL;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "metadata"))
            ok = once(&seen, 1, "metadata", error) &&
                 expect(r, KB_JSON_OBJECT, "metadata", error) &&
                 kb_fast_decode_metadata(r, &s->meta, error);
        else if (KB_JSON_STR_IS(k, "spec"))
            ok = once(&seen, 2, "spec", error) && read_slice_spec(r, s, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return NULL;
    }
    if (rc < 0 || (seen != 3 && !refuse("metadata and spec", error)))
        return NULL;
    return (KbObjectMeta *)g_steal_pointer(&s);
}

KbResourceSlice *kb_resource_slice_decode_bytes(const char *json, gsize len, GError **error)
{
    return (KbResourceSlice *)decode_one(json, len, read_slice, error);
}

gboolean kb_resource_slice_list_decode_bytes(const char *json, gsize len, GPtrArray *out,
                                             char **resource_version, char **continue_token,
                                             GError **error)
{
    return kb_fast_list_decode(json, len, read_slice, out, resource_version, continue_token, error);
}

/* ---- slice comparison ----------------------------------------------------------------------- */

static gboolean counter_sets_eq(const char *field, const KbCounterSet *a, guint na,
                                const KbCounterSet *b, guint nb, char **why)
{
    if (!kb_eq_int(field, na, nb, why))
        return FALSE;
    for (guint i = 0; i < na; i++) {
        if (!kb_eq_str(field, a[i].name, b[i].name, why) ||
            !kb_eq_int(field, a[i].n_counters, b[i].n_counters, why))
            return FALSE;
        for (guint j = 0; j < a[i].n_counters; j++) {
            if (!kb_eq_str(field, a[i].counters[j].name, b[i].counters[j].name, why) ||
                !kb_eq_int(field, a[i].counters[j].milli, b[i].counters[j].milli, why))
                return FALSE;
        }
    }
    return TRUE;
}

static gboolean policy_eq(const KbCapacityPolicy *a, const KbCapacityPolicy *b, char **why)
{
    static const KbCapacityPolicy none;
    a = a != NULL ? a : &none;
    b = b != NULL ? b : &none;
    if (!kb_eq_int("requestPolicy.default", a->has_default, b->has_default, why) ||
        !kb_eq_int("requestPolicy.default", a->default_milli, b->default_milli, why) ||
        !kb_eq_int("requestPolicy.validValues", a->n_valid_values, b->n_valid_values, why) ||
        !kb_eq_int("requestPolicy.validRange", a->has_range, b->has_range, why) ||
        !kb_eq_int("validRange.min", a->min, b->min, why) ||
        !kb_eq_int("validRange.max", a->max, b->max, why) ||
        !kb_eq_int("validRange.step", a->step, b->step, why))
        return FALSE;
    for (guint i = 0; i < a->n_valid_values; i++) {
        if (!kb_eq_int("requestPolicy.validValues", a->valid_values[i], b->valid_values[i], why))
            return FALSE;
    }
    return TRUE;
}

static gboolean attribute_eq(const KbCelAttribute *a, const KbCelAttribute *b, char **why)
{
    return kb_eq_str("attribute domain", a->domain, b->domain, why) &&
           kb_eq_str("attribute name", a->name, b->name, why) &&
           kb_eq_int("attribute type", a->type, b->type, why) &&
           kb_eq_int("attribute int", a->type == KB_CEL_ATTR_INT ? a->int_value : 0,
                     b->type == KB_CEL_ATTR_INT ? b->int_value : 0, why) &&
           kb_eq_int("attribute bool", a->type == KB_CEL_ATTR_BOOL && a->bool_value,
                     b->type == KB_CEL_ATTR_BOOL && b->bool_value, why) &&
           kb_eq_str("attribute string", a->string_value, b->string_value, why);
}

static gboolean device_eq(const KbDevice *a, const KbDevice *b, char **why)
{
    if (!kb_eq_str("devices[].name", a->name, b->name, why) ||
        !kb_eq_int("attributes.length", a->n_attributes, b->n_attributes, why) ||
        !kb_eq_int("capacity.length", a->n_capacity, b->n_capacity, why) ||
        !kb_eq_int("allowMultipleAllocations", a->multiple, b->multiple, why) ||
        !counter_sets_eq("consumesCounters", a->consumes, a->n_consumes, b->consumes, b->n_consumes,
                         why))
        return FALSE;
    for (guint i = 0; i < a->n_attributes; i++) {
        if (!attribute_eq(&a->attributes[i], &b->attributes[i], why))
            return FALSE;
    }
    for (guint i = 0; i < a->n_capacity; i++) {
        const KbCelCapacity *x = &a->capacity[i], *y = &b->capacity[i];
        if (!kb_eq_str("capacity domain", x->domain, y->domain, why) ||
            !kb_eq_str("capacity name", x->name, y->name, why) ||
            !kb_eq_int("capacity value", x->value.unscaled, y->value.unscaled, why) ||
            !kb_eq_int("capacity value scale", x->value.scale, y->value.scale, why) ||
            !kb_eq_int("capacity value format", x->value.format, y->value.format, why) ||
            !policy_eq(a->policies != NULL ? &a->policies[i] : NULL,
                       b->policies != NULL ? &b->policies[i] : NULL, why))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_resource_slice_equal(const KbResourceSlice *a, const KbResourceSlice *b, char **why)
{
    if (!kb_meta_equal(&a->meta, &b->meta, why) ||
        !kb_eq_str("driver", a->driver, b->driver, why) ||
        !kb_eq_str("pool.name", a->pool, b->pool, why) ||
        !kb_eq_int("pool.generation", a->pool_generation, b->pool_generation, why) ||
        !kb_eq_str("nodeName", a->node, b->node, why) ||
        !kb_eq_int("allNodes", a->all_nodes, b->all_nodes, why) ||
        !kb_eq_int("devices.length", a->n_devices, b->n_devices, why) ||
        !counter_sets_eq("sharedCounters", a->counter_sets, a->n_counter_sets, b->counter_sets,
                         b->n_counter_sets, why))
        return FALSE;
    for (guint i = 0; i < a->n_devices; i++) {
        if (!device_eq(&a->devices[i], &b->devices[i], why))
            return FALSE;
    }
    return TRUE;
}
