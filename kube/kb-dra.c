/* resource.k8s.io/v1 records and decoders; see kb-dra.h. */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-dra.h"
#include "kube/kb-error.h"
#include "kube/kb-extender-codec.h"

/* ---- freeing -------------------------------------------------------------------------------- */

static void strv_free(char **v, guint n)
{
    for (guint i = 0; i < n; i++)
        g_free(v[i]);
    g_free(v);
}

static void sub_request_clear(KbDeviceSubRequest *s)
{
    g_free(s->name);
    strv_free(s->selectors, s->n_selectors);
    g_free(s->capacity);
}

static void counter_sets_free(KbCounterSet *sets, guint n)
{
    for (guint i = 0; i < n; i++)
        g_free(sets[i].counters);
    g_free(sets);
}

static void claim_spec_clear(KbClaimSpec *spec)
{
    for (guint i = 0; i < spec->n_requests; i++) {
        KbDeviceRequest *r = &spec->requests[i];
        sub_request_clear(&r->exactly);
        for (guint j = 0; j < r->n_first_available; j++)
            sub_request_clear(&r->first_available[j]);
        g_free(r->first_available);
    }
    g_free(spec->requests);
    for (guint i = 0; i < spec->n_constraints; i++) {
        strv_free(spec->constraints[i].requests, spec->constraints[i].n_requests);
        g_free(spec->constraints[i].match_attribute);
    }
    g_free(spec->constraints);
}

static void device_clear(KbDevice *d)
{
    g_free(d->name);
    for (guint i = 0; i < d->n_attributes; i++)
        g_free((char *)d->attributes[i].string_value);
    g_free(d->attributes);
    for (guint i = 0; d->policies != NULL && i < d->n_capacity; i++)
        g_free(d->policies[i].valid_values);
    g_free(d->policies);
    g_free(d->capacity);
    counter_sets_free(d->consumes, d->n_consumes);
}

void kb_dra_record_clear(KbObjectMeta *meta)
{
    switch (meta->kind) {
    case KB_KIND_RESOURCE_CLAIM: {
        KbResourceClaim *c = (KbResourceClaim *)meta;
        if (c->spec_owner != NULL)
            kb_object_unref(c->spec_owner);
        else
            claim_spec_clear(&c->spec);
        for (guint i = 0; i < c->n_results; i++) {
            g_free(c->results[i].request);
            g_free(c->results[i].device);
            g_free(c->results[i].consumed);
            g_free(c->results[i].share_id);
        }
        g_free(c->results);
        for (guint i = 0; i < c->n_reserved_for; i++) {
            g_free(c->reserved_for[i].name);
            g_free(c->reserved_for[i].uid);
        }
        g_free(c->reserved_for);
        break;
    }
    case KB_KIND_RESOURCE_CLAIM_TEMPLATE:
        claim_spec_clear(&((KbResourceClaimTemplate *)meta)->spec);
        break;
    case KB_KIND_DEVICE_CLASS:
        strv_free(((KbDeviceClass *)meta)->selectors, ((KbDeviceClass *)meta)->n_selectors);
        break;
    case KB_KIND_RESOURCE_SLICE: {
        KbResourceSlice *s = (KbResourceSlice *)meta;
        for (guint i = 0; i < s->n_devices; i++)
            device_clear(&s->devices[i]);
        g_free(s->devices);
        counter_sets_free(s->counter_sets, s->n_counter_sets);
        break;
    }
    default:
        break;
    }
}

/* ---- shared pieces -------------------------------------------------------------------------- */

/* Element @i of array @arr (from kb_decode_array of @key) with errors naming "@key[i]". */
static gboolean element(json_object *arr, const char *key, gsize i, json_object **out,
                        GError **error)
{
    if (kb_decode_element(arr, i, out, error))
        return TRUE;
    g_prefix_error(error, "%s", key);
    return FALSE;
}

/* A required non-empty string member, copied. */
static gboolean required_string(json_object *o, const char *key, gsize max, char **out,
                                GError **error)
{
    const char *s = NULL;
    if (!kb_decode_string(o, key, max, &s, error))
        return FALSE;
    if (s == NULL || *s == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: missing", key);
        return FALSE;
    }
    *out = g_strdup(s);
    return TRUE;
}

/* A quantity given as a string (as the API writes them) into milli-units. */
static gboolean quantity_milli(json_object *v, const char *key, gint64 *out, GError **error)
{
    if (!json_object_is_type(v, json_type_string))
        return kb_decode_type_error(error, key, "a quantity string", v);
    KbQuantity q;
    if (!kb_quantity_parse(json_object_get_string(v), &q, error)) {
        g_prefix_error(error, "%s: ", key);
        return FALSE;
    }
    *out = kb_quantity_milli_value(&q);
    return TRUE;
}

/* Member @key of @o, a map of names to quantities (capacity.requests, consumedCapacity), into
 * @out / @n (at most KB_DRA_MAX_DEVICE_FIELDS entries). */
static gboolean decode_amounts(json_object *o, const char *key, KbCapacityAmount **out, guint *n,
                               GError **error)
{
    json_object *map;
    if (!kb_decode_member(o, key, json_type_object, &map, error))
        return FALSE;
    if (map == NULL)
        return TRUE;
    gsize len = json_object_object_length(map);
    if (len > KB_DRA_MAX_DEVICE_FIELDS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "%s: %" G_GSIZE_FORMAT " entries, more than %d", key, len,
                    KB_DRA_MAX_DEVICE_FIELDS);
        return FALSE;
    }
    *out = len > 0 ? g_new0(KbCapacityAmount, len) : NULL;
    json_object_object_foreach(map, k, v)
    {
        g_autofree char *f = g_strdup_printf("%s[\"%.64s\"]", key, k);
        if (strlen(k) == 0 || strlen(k) > KB_MAX_LABEL_KEY_LEN) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: invalid name", f);
            return FALSE;
        }
        KbCapacityAmount *a = &(*out)[*n];
        a->name = g_intern_string(k);
        (*n)++;
        if (!quantity_milli(v, f, &a->milli, error))
            return FALSE;
        if (a->milli < 0) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: %s is negative", f,
                        json_object_get_string(v));
            return FALSE;
        }
    }
    return TRUE;
}

/* selectors[].cel.expression of @o into @out / @n. */
static gboolean decode_selectors(json_object *o, char ***out, guint *n, GError **error)
{
    json_object *arr, *sel, *cel;
    gsize len;
    if (!kb_decode_array(o, "selectors", KB_DRA_MAX_SELECTORS, &arr, &len, error))
        return FALSE;
    *out = len > 0 ? g_new0(char *, len) : NULL;
    for (gsize i = 0; i < len; i++) {
        if (!element(arr, "selectors", i, &sel, error))
            return FALSE;
        if (!kb_decode_member(sel, "cel", json_type_object, &cel, error)) {
            g_prefix_error(error, "selectors[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        if (cel == NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "selectors[%" G_GSIZE_FORMAT "].cel: missing (the only selector kind)", i);
            return FALSE;
        }
        if (!required_string(cel, "expression", KB_DRA_MAX_EXPRESSION_LEN, &(*out)[i], error)) {
            g_prefix_error(error, "selectors[%" G_GSIZE_FORMAT "].cel.", i);
            return FALSE;
        }
        (*n)++;
    }
    return TRUE;
}

/* The fields an exactly request and a firstAvailable alternative share. */
static gboolean decode_sub_request(json_object *o, KbDeviceSubRequest *s, GError **error)
{
    const char *mode = NULL;
    gint64 count = 1;
    gboolean has_count = FALSE;
    json_object *cap = NULL;
    if (!kb_decode_member(o, "capacity", json_type_object, &cap, error) ||
        (cap != NULL && !decode_amounts(cap, "requests", &s->capacity, &s->n_capacity, error) &&
         (g_prefix_error(error, "capacity."), TRUE)) ||
        !kb_decode_interned(o, "deviceClassName", KB_MAX_NAME_LEN, TRUE, &s->device_class, error) ||
        !decode_selectors(o, &s->selectors, &s->n_selectors, error) ||
        !kb_decode_string(o, "allocationMode", KB_MAX_NAME_LEN, &mode, error) ||
        !kb_decode_int(o, "count", 1, KB_DRA_MAX_COUNT, &count, &has_count, error) ||
        !kb_decode_bool(o, "adminAccess", &s->admin_access, error))
        return FALSE;
    if (s->device_class == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "deviceClassName: missing");
        return FALSE;
    }
    if (mode != NULL && strcmp(mode, "All") != 0 && strcmp(mode, "ExactCount") != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "allocationMode: unknown mode \"%s\" (ExactCount or All)", mode);
        return FALSE;
    }
    s->all = mode != NULL && strcmp(mode, "All") == 0;
    if (s->all && has_count) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "count: not allowed with allocationMode All");
        return FALSE;
    }
    s->count = s->all ? 0 : count;
    return TRUE;
}

static gboolean decode_request(json_object *o, KbDeviceRequest *r, GError **error)
{
    json_object *exactly, *first, *alt;
    gsize n;
    if (!required_string(o, "name", KB_MAX_NAME_LEN, &r->exactly.name, error) ||
        !kb_decode_member(o, "exactly", json_type_object, &exactly, error) ||
        !kb_decode_array(o, "firstAvailable", KB_DRA_MAX_SUBREQUESTS, &first, &n, error))
        return FALSE;
    if ((exactly == NULL) == (n == 0)) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "exactly one of exactly and firstAvailable is required");
        return FALSE;
    }
    if (exactly != NULL) {
        if (!decode_sub_request(exactly, &r->exactly, error)) {
            g_prefix_error(error, "exactly.");
            return FALSE;
        }
        return TRUE;
    }
    r->first_available = g_new0(KbDeviceSubRequest, n);
    for (gsize i = 0; i < n; i++) {
        if (!element(first, "firstAvailable", i, &alt, error))
            return FALSE;
        r->n_first_available++;
        if (!required_string(alt, "name", KB_MAX_NAME_LEN, &r->first_available[i].name, error) ||
            !decode_sub_request(alt, &r->first_available[i], error)) {
            g_prefix_error(error, "firstAvailable[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_constraint(json_object *o, KbDeviceConstraint *c, GError **error)
{
    json_object *arr;
    const char *match = NULL, *distinct = NULL;
    gsize n;
    if (!kb_decode_array(o, "requests", KB_DRA_MAX_REQUESTS, &arr, &n, error) ||
        !kb_decode_string(o, "matchAttribute", KB_MAX_LABEL_KEY_LEN, &match, error) ||
        !kb_decode_string(o, "distinctAttribute", KB_MAX_LABEL_KEY_LEN, &distinct, error))
        return FALSE;
    c->requests = n > 0 ? g_new0(char *, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(v, json_type_string)) {
            g_autofree char *idx = g_strdup_printf("requests[%" G_GSIZE_FORMAT "]", i);
            return kb_decode_type_error(error, idx, "a string", v);
        }
        c->requests[c->n_requests++] = g_strdup(json_object_get_string(v));
    }
    if (match == NULL || *match == '\0') {
        /* distinctAttribute (1.34 alpha) and any later kind: decoded, refused by the allocator
         * with a reason, never ignored. */
        return TRUE;
    }
    c->match_attribute = g_strdup(match);
    return TRUE;
}

/* A ResourceClaimSpec ({"devices": {...}}); errors relative to it. */
static gboolean decode_claim_spec(json_object *spec, KbClaimSpec *out, GError **error)
{
    json_object *devices, *arr, *o;
    gsize n;
    if (!kb_decode_member(spec, "devices", json_type_object, &devices, error))
        return FALSE;
    if (devices == NULL)
        return TRUE;
    if (!kb_decode_array(devices, "requests", KB_DRA_MAX_REQUESTS, &arr, &n, error)) {
        g_prefix_error(error, "devices.");
        return FALSE;
    }
    out->requests = n > 0 ? g_new0(KbDeviceRequest, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        if (!element(arr, "requests", i, &o, error)) {
            g_prefix_error(error, "devices.");
            return FALSE;
        }
        out->n_requests++;
        if (!decode_request(o, &out->requests[i], error)) {
            g_prefix_error(error, "devices.requests[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    if (!kb_decode_array(devices, "constraints", KB_DRA_MAX_REQUESTS, &arr, &n, error)) {
        g_prefix_error(error, "devices.");
        return FALSE;
    }
    out->constraints = n > 0 ? g_new0(KbDeviceConstraint, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        if (!element(arr, "constraints", i, &o, error)) {
            g_prefix_error(error, "devices.");
            return FALSE;
        }
        out->n_constraints++;
        if (!decode_constraint(o, &out->constraints[i], error)) {
            g_prefix_error(error, "devices.constraints[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

/* ---- DeviceClass ---------------------------------------------------------------------------- */

KbDeviceClass *kb_device_class_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbDeviceClass) dc = g_new0(KbDeviceClass, 1);
    json_object *spec = NULL;
    if (!kb_meta_decode(obj, KB_KIND_DEVICE_CLASS, keep_raw, &dc->meta, error) ||
        !kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        (spec != NULL && !decode_selectors(spec, &dc->selectors, &dc->n_selectors, error) &&
         (g_prefix_error(error, "spec."), TRUE))) {
        kb_decode_prefix_object(error, "deviceclass", &dc->meta);
        return NULL;
    }
    return g_steal_pointer(&dc);
}

/* ---- ResourceClaim -------------------------------------------------------------------------- */

static gboolean decode_share_id(json_object *o, char **out, GError **error)
{
    const char *id = NULL;
    if (!kb_decode_string(o, "shareID", 36, &id, error))
        return FALSE;
    *out = id != NULL && *id != '\0' ? g_strdup(id) : NULL;
    return TRUE;
}

static gboolean decode_result(json_object *o, KbDeviceResult *r, GError **error)
{
    return required_string(o, "request", KB_MAX_NAME_LEN * 2 + 1, &r->request, error) &&
           kb_decode_interned(o, "driver", KB_MAX_NAME_LEN, TRUE, &r->driver, error) &&
           kb_decode_interned(o, "pool", KB_MAX_NAME_LEN, TRUE, &r->pool, error) &&
           required_string(o, "device", KB_MAX_NAME_LEN, &r->device, error) &&
           decode_amounts(o, "consumedCapacity", &r->consumed, &r->n_consumed, error) &&
           decode_share_id(o, &r->share_id, error);
}

/* nodeSelector.nodeSelectorTerms[0].matchFields[0]: metadata.name In [node], the one form a
 * scheduler writes; anything else leaves the node NULL. */
static gboolean decode_allocation_node(json_object *alloc, KbResourceClaim *c, GError **error)
{
    json_object *sel, *terms, *fields, *values;
    if (!kb_decode_member(alloc, "nodeSelector", json_type_object, &sel, error))
        return FALSE;
    if (sel == NULL)
        return TRUE;
    terms = json_object_object_get(sel, "nodeSelectorTerms");
    if (!json_object_is_type(terms, json_type_array) || json_object_array_length(terms) != 1)
        return TRUE;
    fields = json_object_object_get(json_object_array_get_idx(terms, 0), "matchFields");
    if (!json_object_is_type(fields, json_type_array) || json_object_array_length(fields) != 1)
        return TRUE;
    json_object *f = json_object_array_get_idx(fields, 0);
    values = json_object_object_get(f, "values");
    if (g_strcmp0(json_object_get_string(json_object_object_get(f, "key")), KB_NODE_FIELD_NAME) ==
                0 &&
        g_strcmp0(json_object_get_string(json_object_object_get(f, "operator")), "In") == 0 &&
        json_object_is_type(values, json_type_array) && json_object_array_length(values) == 1 &&
        json_object_is_type(json_object_array_get_idx(values, 0), json_type_string)) {
        const char *node = json_object_get_string(json_object_array_get_idx(values, 0));
        if (strlen(node) > KB_MAX_NAME_LEN)
            return kb_decode_check_length("nodeSelector.nodeSelectorTerms[0].matchFields[0]."
                                          "values[0]",
                                          strlen(node), KB_MAX_NAME_LEN, error);
        c->node = *node != '\0' ? g_intern_string(node) : NULL;
    }
    return TRUE;
}

static gboolean decode_allocation(json_object *alloc, KbResourceClaim *c, GError **error)
{
    json_object *devices, *arr, *o;
    gsize n;
    c->allocated = TRUE;
    if (!kb_decode_member(alloc, "devices", json_type_object, &devices, error) ||
        !decode_allocation_node(alloc, c, error))
        return FALSE;
    if (devices == NULL)
        return TRUE;
    if (!kb_decode_array(devices, "results", KB_DRA_MAX_REQUESTS, &arr, &n, error)) {
        g_prefix_error(error, "devices.");
        return FALSE;
    }
    c->results = n > 0 ? g_new0(KbDeviceResult, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        if (!element(arr, "results", i, &o, error)) {
            g_prefix_error(error, "devices.");
            return FALSE;
        }
        c->n_results++;
        if (!decode_result(o, &c->results[i], error)) {
            g_prefix_error(error, "devices.results[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_claim_status(json_object *status, KbResourceClaim *c, GError **error)
{
    json_object *alloc, *arr, *o;
    gsize n;
    if (!kb_decode_member(status, "allocation", json_type_object, &alloc, error))
        return FALSE;
    if (alloc != NULL && !decode_allocation(alloc, c, error)) {
        g_prefix_error(error, "allocation.");
        return FALSE;
    }
    if (!kb_decode_array(status, "reservedFor", KB_DRA_MAX_RESERVED_FOR, &arr, &n, error))
        return FALSE;
    c->reserved_for = n > 0 ? g_new0(KbClaimConsumer, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        KbClaimConsumer *r = &c->reserved_for[i];
        if (!element(arr, "reservedFor", i, &o, error))
            return FALSE;
        c->n_reserved_for++;
        if (!kb_decode_interned(o, "resource", KB_MAX_NAME_LEN, TRUE, &r->resource, error) ||
            !required_string(o, "name", KB_MAX_NAME_LEN, &r->name, error) ||
            !required_string(o, "uid", KB_MAX_NAME_LEN, &r->uid, error)) {
            g_prefix_error(error, "reservedFor[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

KbResourceClaim *kb_resource_claim_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbResourceClaim) c = g_new0(KbResourceClaim, 1);
    json_object *spec = NULL, *status = NULL;
    if (!kb_meta_decode(obj, KB_KIND_RESOURCE_CLAIM, keep_raw, &c->meta, error) ||
        !kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        !kb_decode_member(obj, "status", json_type_object, &status, error) ||
        (spec != NULL && !decode_claim_spec(spec, &c->spec, error) &&
         (g_prefix_error(error, "spec."), TRUE)) ||
        (status != NULL && !decode_claim_status(status, c, error) &&
         (g_prefix_error(error, "status."), TRUE))) {
        kb_decode_prefix_object(error, "resourceclaim", &c->meta);
        return NULL;
    }
    return g_steal_pointer(&c);
}

KbResourceClaimTemplate *kb_resource_claim_template_decode(json_object *obj, gboolean keep_raw,
                                                           GError **error)
{
    g_autoptr(KbResourceClaimTemplate) t = g_new0(KbResourceClaimTemplate, 1);
    json_object *spec = NULL, *inner = NULL;
    if (!kb_meta_decode(obj, KB_KIND_RESOURCE_CLAIM_TEMPLATE, keep_raw, &t->meta, error) ||
        !kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        (spec != NULL && !kb_decode_member(spec, "spec", json_type_object, &inner, error) &&
         (g_prefix_error(error, "spec."), TRUE)) ||
        (inner != NULL && !decode_claim_spec(inner, &t->spec, error) &&
         (g_prefix_error(error, "spec.spec."), TRUE))) {
        kb_decode_prefix_object(error, "resourceclaimtemplate", &t->meta);
        return NULL;
    }
    return g_steal_pointer(&t);
}

gboolean kb_resource_claim_reserved_for(const KbResourceClaim *claim, const char *uid)
{
    for (guint i = 0; i < claim->n_reserved_for; i++) {
        if (g_strcmp0(claim->reserved_for[i].uid, uid) == 0)
            return TRUE;
    }
    return FALSE;
}

/* ---- ResourceSlice -------------------------------------------------------------------------- */

/* "domain/name" or "name" (the driver's domain) into interned parts. */
static gboolean qualified_name(const char *key, const char *driver, const char **domain,
                               const char **name, GError **error)
{
    if (strlen(key) > KB_MAX_LABEL_KEY_LEN || *key == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "invalid name \"%.64s\"", key);
        return FALSE;
    }
    const char *slash = strchr(key, '/');
    if (slash == NULL) {
        *domain = driver;
        *name = g_intern_string(key);
        return TRUE;
    }
    g_autofree char *d = g_strndup(key, slash - key);
    *domain = g_intern_string(d);
    *name = g_intern_string(slash + 1);
    return TRUE;
}

/* One attribute value: exactly one of int, bool, string, version. */
static gboolean decode_attribute(json_object *v, KbCelAttribute *a, GError **error)
{
    static const char *const kinds[] = {"int", "bool", "string", "version"};
    guint found = 0;
    for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
        json_object *x = json_object_object_get(v, kinds[k]);
        if (x == NULL)
            continue;
        if (found++ > 0)
            break;
        a->type = (KbCelAttrType)k;
        if (k == KB_CEL_ATTR_INT &&
            !kb_decode_int(v, "int", G_MININT64, G_MAXINT64, &a->int_value, NULL, error))
            return FALSE;
        if (k == KB_CEL_ATTR_BOOL && !kb_decode_bool(v, "bool", &a->bool_value, error))
            return FALSE;
        if (k >= KB_CEL_ATTR_STRING) {
            const char *s = NULL;
            if (!kb_decode_string(v, kinds[k], KB_DRA_MAX_ATTRIBUTE_LEN, &s, error))
                return FALSE;
            a->string_value = g_strdup(s != NULL ? s : "");
        }
    }
    if (found != 1) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "exactly one of int, bool, string and version is required");
        return FALSE;
    }
    return TRUE;
}

/* A quantity member @key of @o (absent: *@has FALSE). */
static gboolean optional_quantity(json_object *o, const char *key, gint64 *out, gboolean *has,
                                  GError **error)
{
    json_object *v = NULL;
    *has = json_object_object_get_ex(o, key, &v) && v != NULL;
    return !*has || quantity_milli(v, key, out, error);
}

/* capacity[x].requestPolicy: default, validValues (ascending) or validRange. */
static gboolean decode_policy(json_object *pol, KbCapacityPolicy *p, GError **error)
{
    json_object *vals, *range;
    gsize n;
    gboolean has;
    if (!optional_quantity(pol, "default", &p->default_milli, &p->has_default, error) ||
        !kb_decode_array(pol, "validValues", KB_DRA_MAX_VALID_VALUES, &vals, &n, error) ||
        !kb_decode_member(pol, "validRange", json_type_object, &range, error))
        return FALSE;
    p->valid_values = n > 0 ? g_new0(gint64, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        g_autofree char *f = g_strdup_printf("validValues[%" G_GSIZE_FORMAT "]", i);
        if (!quantity_milli(json_object_array_get_idx(vals, i), f, &p->valid_values[i], error))
            return FALSE;
        p->n_valid_values++;
        if (i > 0 && p->valid_values[i] <= p->valid_values[i - 1]) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: not in ascending order", f);
            return FALSE;
        }
    }
    if (range == NULL)
        return TRUE;
    p->has_range = TRUE;
    if (!optional_quantity(range, "min", &p->min, &has, error) ||
        !optional_quantity(range, "max", &p->max, &has, error) ||
        !optional_quantity(range, "step", &p->step, &has, error)) {
        g_prefix_error(error, "validRange.");
        return FALSE;
    }
    if (p->min < 0 || p->step < 0 || (p->max != 0 && p->max < p->min)) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "validRange: min, max and step must be 0 <= min <= max, step >= 0");
        return FALSE;
    }
    return TRUE;
}

/* counters {name: {value}} of @o into @set (at most KB_DRA_MAX_COUNTERS). */
static gboolean decode_counters(json_object *o, KbCounterSet *set, GError **error)
{
    json_object *map;
    if (!kb_decode_member(o, "counters", json_type_object, &map, error))
        return FALSE;
    gsize len = map != NULL ? json_object_object_length(map) : 0;
    if (len == 0 || len > KB_DRA_MAX_COUNTERS) {
        g_set_error(error, KB_ERROR, len == 0 ? KB_ERROR_DECODE : KB_ERROR_LIMIT,
                    "counters: %" G_GSIZE_FORMAT " entries, wanted 1 to %d", len,
                    KB_DRA_MAX_COUNTERS);
        return FALSE;
    }
    set->counters = g_new0(KbCounter, len);
    json_object_object_foreach(map, k, v)
    {
        g_autofree char *f = g_strdup_printf("counters[\"%.64s\"].value", k);
        KbCounter *c = &set->counters[set->n_counters++];
        c->name = g_intern_string(k);
        if (!json_object_is_type(v, json_type_object))
            return kb_decode_type_error(error, f, "an object", v);
        if (!quantity_milli(json_object_object_get(v, "value"), f, &c->milli, error))
            return FALSE;
        if (c->milli < 0) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: negative", f);
            return FALSE;
        }
    }
    return TRUE;
}

/* sharedCounters (@name_key "name") or consumesCounters ("counterSet") of @o. */
static gboolean decode_counter_sets(json_object *o, const char *key, const char *name_key,
                                    gsize max, KbCounterSet **out, guint *n, GError **error)
{
    json_object *arr, *e;
    gsize len;
    if (!kb_decode_array(o, key, max, &arr, &len, error))
        return FALSE;
    *out = len > 0 ? g_new0(KbCounterSet, len) : NULL;
    for (gsize i = 0; i < len; i++) {
        if (!element(arr, key, i, &e, error))
            return FALSE;
        (*n)++;
        if (!kb_decode_interned(e, name_key, KB_MAX_NAME_LEN, TRUE, &(*out)[i].name, error) ||
            ((*out)[i].name == NULL &&
             (g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: missing", name_key), TRUE)) ||
            !decode_counters(e, &(*out)[i], error)) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_device_maps(json_object *o, const char *driver, KbDevice *d, GError **error)
{
    json_object *attrs, *cap;
    if (!kb_decode_member(o, "attributes", json_type_object, &attrs, error) ||
        !kb_decode_member(o, "capacity", json_type_object, &cap, error))
        return FALSE;
    gsize n = (attrs != NULL ? json_object_object_length(attrs) : 0) +
              (cap != NULL ? json_object_object_length(cap) : 0);
    if (n > KB_DRA_MAX_DEVICE_FIELDS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "attributes and capacity: %" G_GSIZE_FORMAT " entries, more than %d", n,
                    KB_DRA_MAX_DEVICE_FIELDS);
        return FALSE;
    }
    d->attributes = attrs != NULL ? g_new0(KbCelAttribute, json_object_object_length(attrs)) : NULL;
    d->capacity = cap != NULL ? g_new0(KbCelCapacity, json_object_object_length(cap)) : NULL;
    if (attrs != NULL) {
        json_object_object_foreach(attrs, key, v)
        {
            KbCelAttribute *a = &d->attributes[d->n_attributes];
            if (!json_object_is_type(v, json_type_object)) {
                kb_decode_type_error(error, key, "an object", v);
                g_prefix_error(error, "attributes.");
                return FALSE;
            }
            d->n_attributes++;
            if (!qualified_name(key, driver, &a->domain, &a->name, error) ||
                !decode_attribute(v, a, error)) {
                g_prefix_error(error, "attributes[\"%.64s\"]: ", key);
                return FALSE;
            }
        }
    }
    if (cap != NULL) {
        json_object_object_foreach(cap, key, v)
        {
            KbCelCapacity *c = &d->capacity[d->n_capacity];
            const char *text = NULL;
            if (!json_object_is_type(v, json_type_object) ||
                !kb_decode_string(v, "value", KB_MAX_NAME_LEN, &text, error) ||
                !qualified_name(key, driver, &c->domain, &c->name, error) ||
                !kb_quantity_parse(text != NULL ? text : "", &c->value, error)) {
                if (error != NULL && *error == NULL)
                    kb_decode_type_error(error, key, "an object", v);
                g_prefix_error(error, "capacity[\"%.64s\"]: ", key);
                return FALSE;
            }
            /* counted first: a policy decoded in part is freed with the device */
            d->n_capacity++;
            json_object *pol = json_object_object_get(v, "requestPolicy");
            if (pol != NULL) {
                if (d->policies == NULL)
                    d->policies = g_new0(KbCapacityPolicy, json_object_object_length(cap));
                if (!json_object_is_type(pol, json_type_object) ||
                    !decode_policy(pol, &d->policies[d->n_capacity - 1], error)) {
                    if (error != NULL && *error == NULL)
                        kb_decode_type_error(error, "requestPolicy", "an object", pol);
                    g_prefix_error(error, "capacity[\"%.64s\"].requestPolicy.", key);
                    return FALSE;
                }
            }
        }
    }
    return TRUE;
}

static gboolean decode_slice_spec(json_object *spec, KbResourceSlice *s, GError **error)
{
    json_object *pool, *arr, *o;
    gsize n;
    if (!kb_decode_interned(spec, "driver", KB_MAX_NAME_LEN, TRUE, &s->driver, error) ||
        !kb_decode_member(spec, "pool", json_type_object, &pool, error) ||
        !kb_decode_interned(spec, "nodeName", KB_MAX_NAME_LEN, TRUE, &s->node, error) ||
        !kb_decode_bool(spec, "allNodes", &s->all_nodes, error) ||
        !kb_decode_array(spec, "devices", KB_DRA_MAX_SLICE_DEVICES, &arr, &n, error))
        return FALSE;
    if (s->driver == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "driver: missing");
        return FALSE;
    }
    if (pool != NULL &&
        (!kb_decode_interned(pool, "name", KB_MAX_NAME_LEN, TRUE, &s->pool, error) ||
         !kb_decode_int(pool, "generation", 0, G_MAXINT64, &s->pool_generation, NULL, error))) {
        g_prefix_error(error, "pool.");
        return FALSE;
    }
    s->devices = n > 0 ? g_new0(KbDevice, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        if (!element(arr, "devices", i, &o, error))
            return FALSE;
        s->n_devices++;
        KbDevice *d = &s->devices[i];
        if (!required_string(o, "name", KB_MAX_NAME_LEN, &d->name, error) ||
            !decode_device_maps(o, s->driver, d, error) ||
            !decode_counter_sets(o, "consumesCounters", "counterSet", KB_DRA_MAX_CONSUMES,
                                 &d->consumes, &d->n_consumes, error) ||
            !kb_decode_bool(o, "allowMultipleAllocations", &d->multiple, error)) {
            g_prefix_error(error, "devices[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return decode_counter_sets(spec, "sharedCounters", "name", KB_DRA_MAX_COUNTER_SETS,
                               &s->counter_sets, &s->n_counter_sets, error);
}

KbResourceSlice *kb_resource_slice_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbResourceSlice) s = g_new0(KbResourceSlice, 1);
    json_object *spec = NULL;
    if (!kb_meta_decode(obj, KB_KIND_RESOURCE_SLICE, keep_raw, &s->meta, error) ||
        !kb_decode_member(obj, "spec", json_type_object, &spec, error)) {
        kb_decode_prefix_object(error, "resourceslice", &s->meta);
        return NULL;
    }
    if (spec == NULL || !decode_slice_spec(spec, s, error)) {
        if (spec == NULL)
            g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "missing");
        g_prefix_error(error, "spec.");
        kb_decode_prefix_object(error, "resourceslice", &s->meta);
        return NULL;
    }
    return g_steal_pointer(&s);
}

/* ---- the status a scheduler writes ---------------------------------------------------------- */

/* @milli as a quantity: binary suffixes for whole GiB / MiB (memory), plain units otherwise. */
static char *milli_text(gint64 milli)
{
    if (milli % 1000 != 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "m", milli);
    gint64 v = milli / 1000;
    if (v != 0 && v % (G_GINT64_CONSTANT(1) << 30) == 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "Gi", v >> 30);
    if (v != 0 && v % (G_GINT64_CONSTANT(1) << 20) == 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "Mi", v >> 20);
    return g_strdup_printf("%" G_GINT64_FORMAT, v);
}

gboolean kb_capacity_name_is(const char *written, const char *driver, const char *domain,
                             const char *name)
{
    const char *slash = strchr(written, '/');
    if (slash == NULL)
        return g_strcmp0(domain, driver) == 0 && strcmp(written, name) == 0;
    gsize dl = (gsize)(slash - written);
    return domain != NULL && strncmp(written, domain, dl) == 0 && domain[dl] == '\0' &&
           strcmp(slash + 1, name) == 0;
}

/* The reservations a status write for @pods leaves on @claim, in the order it writes them,
 * borrowed into @out (room for claim->n_reserved_for + @n_pods): the claim's own but @pods[0]'s,
 * then @pods[0] and each other of @pods not reserved before. Returns how many. */
static guint written_consumers(const KbResourceClaim *claim, const KbClaimConsumer *pods,
                               guint n_pods, const KbClaimConsumer **out)
{
    guint n = 0;
    for (guint i = 0; i < claim->n_reserved_for; i++) {
        if (n_pods == 0 || g_strcmp0(claim->reserved_for[i].uid, pods[0].uid) != 0)
            out[n++] = &claim->reserved_for[i];
    }
    for (guint i = 0; i < n_pods; i++) {
        if (i == 0 || !kb_resource_claim_reserved_for(claim, pods[i].uid))
            out[n++] = &pods[i];
    }
    return n;
}

static void append_consumer(GString *out, const char *name, const char *uid)
{
    g_string_append(out, "{\"resource\":\"pods\",\"name\":");
    kb_extender_append_json_string(out, name);
    g_string_append(out, ",\"uid\":");
    kb_extender_append_json_string(out, uid);
    g_string_append_c(out, '}');
}

static void append_results(GString *out, const KbDeviceResult *results, guint n_results)
{
    g_string_append(out, "\"devices\":{\"results\":[");
    for (guint i = 0; i < n_results; i++) {
        const KbDeviceResult *r = &results[i];
        g_string_append(out, i == 0 ? "{\"request\":" : ",{\"request\":");
        kb_extender_append_json_string(out, r->request);
        g_string_append(out, ",\"driver\":");
        kb_extender_append_json_string(out, r->driver);
        g_string_append(out, ",\"pool\":");
        kb_extender_append_json_string(out, r->pool);
        g_string_append(out, ",\"device\":");
        kb_extender_append_json_string(out, r->device);
        if (r->n_consumed > 0) {
            g_string_append(out, ",\"consumedCapacity\":{");
            for (guint c = 0; c < r->n_consumed; c++) {
                g_autofree char *q = milli_text(r->consumed[c].milli);
                if (c > 0)
                    g_string_append_c(out, ',');
                kb_extender_append_json_string(out, r->consumed[c].name);
                g_string_append_c(out, ':');
                kb_extender_append_json_string(out, q);
            }
            g_string_append_c(out, '}');
        }
        if (r->share_id != NULL) {
            g_string_append(out, ",\"shareID\":");
            kb_extender_append_json_string(out, r->share_id);
        }
        g_string_append_c(out, '}');
    }
    g_string_append(out, "]}");
}

char *kb_resource_claim_status_text(const KbResourceClaim *claim, const KbDeviceResult *results,
                                    guint n_results, const char *node, const KbClaimConsumer *pods,
                                    guint n_pods)
{
    GString *out = g_string_sized_new(512);
    g_string_append(out, "{\"metadata\":{");
    if (claim->meta.resource_version != NULL) {
        g_string_append(out, "\"resourceVersion\":");
        kb_extender_append_json_string(out, claim->meta.resource_version);
    }
    g_string_append(out, "},\"status\":{");
    if (results != NULL) {
        g_string_append(out, "\"allocation\":{");
        append_results(out, results, n_results);
        if (node != NULL) {
            g_string_append(out, ",\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                                 "\"key\":\"" KB_NODE_FIELD_NAME "\",\"operator\":\"In\","
                                 "\"values\":[");
            kb_extender_append_json_string(out, node);
            g_string_append(out, "]}]}]}");
        }
        g_string_append(out, "},");
    }
    g_string_append(out, "\"reservedFor\":[");
    g_autofree const KbClaimConsumer **order =
            g_new(const KbClaimConsumer *, claim->n_reserved_for + n_pods + 1);
    guint n = written_consumers(claim, pods, n_pods, order);
    for (guint i = 0; i < n; i++) {
        if (i > 0)
            g_string_append_c(out, ',');
        append_consumer(out, order[i]->name, order[i]->uid);
    }
    g_string_append(out, "]}}");
    return g_string_free(out, FALSE);
}

/* @src's metadata into @dst (an empty record): strings copied, labels and annotations shared
 * (never changed once decoded), raw left out (the byte decoders keep none either). */
static void meta_copy(KbObjectMeta *dst, const KbObjectMeta *src)
{
    dst->name = g_strdup(src->name);
    dst->namespace_ = src->namespace_;
    dst->uid = g_strdup(src->uid);
    dst->resource_version = NULL;
    dst->generation = src->generation;
    dst->creation_timestamp = src->creation_timestamp;
    dst->deletion_timestamp = src->deletion_timestamp;
    dst->labels = src->labels != NULL ? g_hash_table_ref(src->labels) : NULL;
    dst->annotations = src->annotations != NULL ? g_hash_table_ref(src->annotations) : NULL;
    kb_meta_init(dst, src->kind);
    if (src->n_owners > 0) {
        dst->owners = g_new0(KbOwnerRef, src->n_owners);
        dst->n_owners = src->n_owners;
        for (guint i = 0; i < src->n_owners; i++) {
            dst->owners[i].api_version = g_strdup(src->owners[i].api_version);
            dst->owners[i].kind = g_strdup(src->owners[i].kind);
            dst->owners[i].name = g_strdup(src->owners[i].name);
            dst->owners[i].uid = g_strdup(src->owners[i].uid);
            dst->owners[i].controller = src->owners[i].controller;
        }
    }
}

KbResourceClaim *kb_resource_claim_after_status(const KbResourceClaim *claim,
                                                const KbDeviceResult *results, guint n_results,
                                                const char *node, const KbClaimConsumer *pods,
                                                guint n_pods)
{
    KbResourceClaim *c = g_new0(KbResourceClaim, 1);
    meta_copy(&c->meta, &claim->meta);
    c->spec = claim->spec;
    c->spec_owner = kb_object_ref(claim->spec_owner != NULL ? claim->spec_owner
                                                            : (KbObjectMeta *)&claim->meta);
    if (results == NULL) {
        results = claim->results;
        n_results = claim->n_results;
        node = claim->node;
        c->allocated = claim->allocated;
    } else {
        c->allocated = TRUE;
    }
    c->node = node != NULL ? g_intern_string(node) : NULL;
    c->n_results = n_results;
    c->results = n_results > 0 ? g_new0(KbDeviceResult, n_results) : NULL;
    for (guint i = 0; i < n_results; i++) {
        const KbDeviceResult *r = &results[i];
        KbDeviceResult *d = &c->results[i];
        d->request = g_strdup(r->request);
        d->driver = r->driver;
        d->pool = r->pool;
        d->device = g_strdup(r->device);
        d->consumed = r->n_consumed > 0
                              ? g_memdup2(r->consumed, r->n_consumed * sizeof *r->consumed)
                              : NULL;
        d->n_consumed = r->n_consumed;
        d->share_id = g_strdup(r->share_id);
    }
    /* the order kb_resource_claim_status_text writes them in */
    const char *pods_resource = g_intern_static_string("pods");
    g_autofree const KbClaimConsumer **order =
            g_new(const KbClaimConsumer *, claim->n_reserved_for + n_pods + 1);
    guint n = written_consumers(claim, pods, n_pods, order);
    c->reserved_for = g_new0(KbClaimConsumer, n + 1);
    for (guint i = 0; i < n; i++)
        c->reserved_for[i] = (KbClaimConsumer){.resource = pods_resource,
                                               .name = g_strdup(order[i]->name),
                                               .uid = g_strdup(order[i]->uid)};
    c->n_reserved_for = n;
    if (c->n_reserved_for == 0)
        g_clear_pointer(&c->reserved_for, g_free);
    return c;
}

json_object *kb_resource_claim_status_new(const KbResourceClaim *claim,
                                          const KbDeviceResult *results, guint n_results,
                                          const char *node, const char *pod_name,
                                          const char *pod_uid)
{
    KbClaimConsumer pod = {.resource = "pods", .name = (char *)pod_name, .uid = (char *)pod_uid};
    g_autofree char *text = kb_resource_claim_status_text(claim, results, n_results, node, &pod, 1);
    return json_tokener_parse(text);
}
