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
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-dra.h"
#include "kube/kb-error.h"
#include "kube/kb-json.h"

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
    if (s.len == 0) {
        *out = NULL;
        return TRUE;
    }
    g_autofree char *c = kb_json_str_dup(&s);
    *out = g_intern_string(c);
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

KbResourceClaim *kb_resource_claim_decode_bytes(const char *json, gsize len, GError **error)
{
    KbJsonReader r;
    kb_json_reader_init(&r, json, len);
    KbObjectMeta *c = read_claim(&r, error);
    if (c != NULL && !kb_json_finish(&r, error))
        g_clear_pointer(&c, kb_object_unref);
    kb_json_reader_clear(&r);
    return (KbResourceClaim *)c;
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
