/* resource.k8s.io/v1: DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice (see
 * kas-dra.h). */
#include "testbed/apiserver/kas-dra.h"

#include <string.h>

#include "kube/kb-cel.h"
#include "kube/kb-json.h"
#include "kube/kb-quantity.h"
#include "testbed/apiserver/kas-json.h"

#define DNS_SUBDOMAIN_WHY                                                                          \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "       \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define DNS_LABEL_WHY                                                                              \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define C_IDENTIFIER_WHY                                                                           \
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "   \
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "     \
    "for validation is '[A-Za-z_][A-Za-z0-9_]*')"
#define REQUEST_REF_WHY                                                                            \
    "must be the name of a request in the claim or the name of a request and a subrequest "        \
    "separated by '/'"

gboolean kas_dra_is(const KasRes *res)
{
    return strcmp(res->group, KAS_DRA_GROUP) == 0;
}

/* ---- names ---------------------------------------------------------------------------------- */

static gboolean label_chars_ok(const char *s, gsize n)
{
    if (n == 0 || !g_ascii_isalnum(s[0]) || !g_ascii_isalnum(s[n - 1]))
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!(g_ascii_islower(s[i]) || g_ascii_isdigit(s[i]) || s[i] == '-'))
            return FALSE;
    return TRUE;
}

static gboolean subdomain_chars_ok(const char *s, gsize n)
{
    gsize start = 0;
    for (gsize i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!label_chars_ok(s + start, i - start))
                return FALSE;
            start = i + 1;
        }
    }
    return n > 0;
}

static gsize arr_len(json_object *a)
{
    return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static json_object *arr_at(json_object *a, gsize i)
{
    return json_object_array_get_idx(a, i);
}

/* ValidateDNS1123Label of @s at @path. */
static void check_label(KasFieldErrors *errs, const char *path, const char *s)
{
    gsize n = strlen(s);
    if (n > 63)
        kas_field_errors_addf(errs, path,
                              "Invalid value: \"%s\": must be no more than 63 characters", s);
    if (!label_chars_ok(s, n))
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": %s", s, DNS_LABEL_WHY);
}

/* ValidateDNS1123Subdomain of @s at @path. */
static void check_subdomain(KasFieldErrors *errs, const char *path, const char *s)
{
    gsize n = strlen(s);
    if (n > 253)
        kas_field_errors_addf(errs, path,
                              "Invalid value: \"%s\": must be no more than 253 characters", s);
    if (!subdomain_chars_ok(s, n))
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": %s", s, DNS_SUBDOMAIN_WHY);
}

/* A required string member @key of @parent: NULL (and "Required value") when missing or empty. */
static const char *required_string(KasFieldErrors *errs, const char *base, json_object *parent,
                                   const char *key)
{
    const char *s = kas_json_get_string(parent, key);
    if (s != NULL && s[0] != '\0')
        return s;
    g_autofree char *path = g_strdup_printf("%s.%s", base, key);
    kas_field_errors_add(errs, path, "Required value");
    return NULL;
}

/* ValidateCSIDriverName (drivers and attribute domains): at most 63 bytes, a DNS subdomain. */
static void check_driver_name(KasFieldErrors *errs, const char *path, const char *s)
{
    if (s == NULL || s[0] == '\0') {
        kas_field_errors_add(errs, path, "Required value");
        return;
    }
    gsize n = strlen(s);
    if (n > 63)
        kas_field_errors_add(errs, path, "Too long: may not be more than 63 bytes");
    g_autofree char *lower = g_ascii_strdown(s, -1);
    if (n > 253)
        kas_field_errors_addf(errs, path,
                              "Invalid value: \"%s\": must be no more than 253 characters", s);
    if (!subdomain_chars_ok(lower, n))
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": %s", s, DNS_SUBDOMAIN_WHY);
}

static void check_c_identifier(KasFieldErrors *errs, const char *path, const char *s, gsize n)
{
    if (n > 32)
        kas_field_errors_add(errs, path, "Too long: may not be more than 32 bytes");
    gboolean ok = n > 0 && (g_ascii_isalpha(s[0]) || s[0] == '_');
    for (gsize i = 1; ok && i < n; i++)
        ok = g_ascii_isalnum(s[i]) || s[i] == '_';
    if (!ok)
        kas_field_errors_addf(errs, path, "Invalid value: \"%.*s\": %s", (int)n, s,
                              C_IDENTIFIER_WHY);
}

/* validateQualifiedName: "name" or "domain/name"; @full: the domain is required. */
static void check_qualified_name(KasFieldErrors *errs, const char *path, const char *s,
                                 gboolean full)
{
    const char *slash = strchr(s, '/');
    if (slash == NULL) {
        check_c_identifier(errs, path, s, strlen(s));
    } else if (strchr(slash + 1, '/') != NULL) {
        kas_field_errors_addf(errs, path,
                              "Invalid value: \"%s\": must not contain more than one slash", s);
    } else {
        g_autofree char *domain = g_strndup(s, (gsize)(slash - s));
        if (domain[0] == '\0')
            kas_field_errors_add(errs, path, "Invalid value: \"\": the domain must not be empty");
        else
            check_driver_name(errs, path, domain);
        if (slash[1] == '\0')
            kas_field_errors_add(errs, path, "Invalid value: \"\": the name must not be empty");
        else
            check_c_identifier(errs, path, slash + 1, strlen(slash + 1));
    }
    if (full && slash == NULL)
        kas_field_errors_addf(errs, path,
                              "Invalid value: \"%s\": a fully qualified name must be a domain and "
                              "a name separated by a slash",
                              s);
}

/* validatePoolName: at most 253 bytes, '/'-separated DNS subdomains. */
static void check_pool_name(KasFieldErrors *errs, const char *path, const char *s)
{
    if (s == NULL || s[0] == '\0') {
        kas_field_errors_add(errs, path, "Required value");
        return;
    }
    if (strlen(s) > 253)
        kas_field_errors_add(errs, path, "Too long: may not be more than 253 bytes");
    g_auto(GStrv) parts = g_strsplit(s, "/", -1);
    for (guint i = 0; parts[i] != NULL; i++)
        check_subdomain(errs, path, parts[i]);
}

/* validateSet's limit: FALSE (with "Too many") when @a has more than @max items. */
static gboolean check_count(KasFieldErrors *errs, const char *path, json_object *a, gsize max)
{
    gsize n = arr_len(a);
    if (n <= max)
        return TRUE;
    kas_field_errors_addf(errs, path, "Too many: %zu: must have at most %zu items", n, max);
    return FALSE;
}

/* validateSet's uniqueness of the string member @key of @a's items at "<path>[i]". */
/* Element @i's value for check_unique(): its @key, or itself when it is a string (no key). */
static const char *unique_value(json_object *a, gsize i, const char *key)
{
    json_object *it = arr_at(a, i);
    return key != NULL                                 ? kas_json_get_string(it, key)
           : json_object_is_type(it, json_type_string) ? json_object_get_string(it)
                                                       : NULL;
}

/* Lists up to this long are checked pair by pair, without a hash table (a claim's reservedFor,
 * checked on each status write, holds one or a few). */
#define UNIQUE_PAIRWISE 16

/* Has the string @v been seen before element @i of @a (the first @i elements' values)? */
static gboolean seen_before(json_object *a, gsize i, const char *key, const char *v)
{
    for (gsize j = 0; j < i; j++) {
        const char *w = unique_value(a, j, key);
        if (w != NULL && strcmp(w, v) == 0)
            return TRUE;
    }
    return FALSE;
}

static void check_unique(KasFieldErrors *errs, const char *path, json_object *a, const char *key)
{
    gsize n = arr_len(a);
    g_autoptr(GHashTable) seen =
            n > UNIQUE_PAIRWISE ? g_hash_table_new(g_str_hash, g_str_equal) : NULL;
    for (gsize i = 0; i < n; i++) {
        const char *v = unique_value(a, i, key);
        if (v == NULL)
            continue;
        if (seen != NULL ? !g_hash_table_add(seen, (gpointer)v) : seen_before(a, i, key, v)) {
            g_autofree char *f = g_strdup_printf("%s[%zu]", path, i);
            kas_field_errors_addf(errs, f, "Duplicate value: \"%s\"", v);
        }
    }
}

/* ---- selectors and configuration ------------------------------------------------------------ */

/* A CEL selector expression: required, at most 10 KiB, and compiled as the real server does
 * (unless @stored: an unchanged stored expression is not compiled again). A syntax or type error
 * is refused; what is valid CEL but beyond kb-cel (unsupported, or past its depth) is accepted,
 * as kube-apiserver accepts it: kube-batchd reports it on the pods that need it. */
static void check_cel(KasFieldErrors *errs, const char *path, json_object *cel, gboolean stored)
{
    g_autofree char *f = g_strdup_printf("%s.expression", path);
    const char *expr = kas_json_get_string(cel, "expression");
    if (expr == NULL || expr[0] == '\0') {
        kas_field_errors_add(errs, f, "Required value");
        return;
    }
    if (strlen(expr) > KAS_DRA_MAX_CEL_LEN) {
        kas_field_errors_addf(errs, f, "Too long: may not be more than %d bytes",
                              KAS_DRA_MAX_CEL_LEN);
        return;
    }
    if (stored)
        return;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbCelProgram) prog = kb_cel_compile(expr, &error);
    if (prog == NULL && (g_error_matches(error, KB_CEL_ERROR, KB_CEL_ERROR_SYNTAX) ||
                         g_error_matches(error, KB_CEL_ERROR, KB_CEL_ERROR_TYPE)))
        kas_field_errors_addf(errs, f, "Invalid value: \"%s\": compilation failed: %s", expr,
                              error->message);
}

static void check_selectors(KasFieldErrors *errs, const char *base, json_object *sels,
                            gboolean stored)
{
    g_autofree char *path = g_strdup_printf("%s.selectors", base);
    if (!check_count(errs, path, sels, KAS_DRA_MAX_SELECTORS))
        return;
    for (gsize i = 0; i < arr_len(sels); i++) {
        g_autofree char *f = g_strdup_printf("%s[%zu].cel", path, i);
        json_object *cel = kas_json_get(arr_at(sels, i), "cel");
        if (!json_object_is_type(cel, json_type_object))
            kas_field_errors_add(errs, f, "Required value");
        else
            check_cel(errs, f, cel, stored);
    }
}

/* validateDeviceConfiguration: opaque {driver, parameters (a JSON object)}. */
static void check_device_config(KasFieldErrors *errs, const char *base, json_object *cfg)
{
    g_autofree char *op = g_strdup_printf("%s.opaque", base);
    json_object *opaque = kas_json_get(cfg, "opaque");
    if (!json_object_is_type(opaque, json_type_object)) {
        kas_field_errors_add(errs, op, "Required value");
        return;
    }
    g_autofree char *dp = g_strdup_printf("%s.driver", op);
    check_driver_name(errs, dp, kas_json_get_string(opaque, "driver"));
    g_autofree char *pp = g_strdup_printf("%s.parameters", op);
    json_object *params = kas_json_get(opaque, "parameters");
    if (params == NULL)
        kas_field_errors_add(errs, pp, "Required value");
    else if (!json_object_is_type(params, json_type_object))
        kas_field_errors_add(errs, pp,
                             "Invalid value: \"<value omitted>\": must be a valid JSON "
                             "object");
}

/* The names a claim's results, constraints and configs may refer to: "req" or "req/sub". */
static gboolean request_ref_ok(json_object *requests, const char *ref)
{
    const char *slash = strchr(ref, '/');
    gsize n = slash != NULL ? (gsize)(slash - ref) : strlen(ref);
    if (slash != NULL && strchr(slash + 1, '/') != NULL)
        return FALSE;
    for (gsize i = 0; i < arr_len(requests); i++) {
        json_object *r = arr_at(requests, i);
        const char *name = kas_json_get_string(r, "name");
        if (name == NULL || strlen(name) != n || strncmp(name, ref, n) != 0)
            continue;
        json_object *fa = kas_json_get(r, "firstAvailable");
        if (slash == NULL)
            return TRUE;
        for (gsize j = 0; j < arr_len(fa); j++)
            if (g_strcmp0(kas_json_get_string(arr_at(fa, j), "name"), slash + 1) == 0)
                return TRUE;
        return FALSE;
    }
    return FALSE;
}

/* validateRequestNameRef over the list @refs at @path. */
static void check_request_refs(KasFieldErrors *errs, const char *path, json_object *refs,
                               json_object *requests)
{
    if (!check_count(errs, path, refs, KAS_DRA_MAX_REQUESTS))
        return;
    for (gsize i = 0; i < arr_len(refs); i++) {
        g_autofree char *f = g_strdup_printf("%s[%zu]", path, i);
        const char *ref = json_object_get_string(arr_at(refs, i));
        if (!request_ref_ok(requests, ref != NULL ? ref : ""))
            kas_field_errors_addf(errs, f, "Invalid value: \"%s\": " REQUEST_REF_WHY,
                                  ref != NULL ? ref : "");
    }
    check_unique(errs, path, refs, NULL);
}

/* ---- claims --------------------------------------------------------------------------------- */

/* v1 defaults of an exact request or a subrequest: ExactCount of 1, tolerations' Equal. */
static void default_request(json_object *r)
{
    if (!json_object_is_type(r, json_type_object))
        return;
    const char *mode = kas_json_get_string(r, "allocationMode");
    if (mode == NULL || mode[0] == '\0') {
        kas_json_set_string(r, "allocationMode", "ExactCount");
        mode = "ExactCount";
    }
    json_object *count = kas_json_get(r, "count");
    if (strcmp(mode, "ExactCount") == 0 && (count == NULL || json_object_get_int64(count) == 0))
        json_object_object_add(r, "count", json_object_new_int64(1));
    json_object *tols = kas_json_get(r, "tolerations");
    for (gsize i = 0; i < arr_len(tols); i++) {
        json_object *t = arr_at(tols, i);
        if (json_object_is_type(t, json_type_object) && kas_json_get(t, "operator") == NULL)
            kas_json_set_string(t, "operator", "Equal");
    }
}

static void default_claim_spec(json_object *spec)
{
    json_object *reqs = kas_json_get(spec, "devices.requests");
    for (gsize i = 0; i < arr_len(reqs); i++) {
        json_object *r = arr_at(reqs, i);
        default_request(kas_json_get(r, "exactly"));
        json_object *fa = kas_json_get(r, "firstAvailable");
        for (gsize j = 0; j < arr_len(fa); j++)
            default_request(arr_at(fa, j));
    }
}

static void check_allocation_mode(KasFieldErrors *errs, const char *base, json_object *r)
{
    const char *mode = kas_json_get_string(r, "allocationMode");
    gint64 count = json_object_get_int64(kas_json_get(r, "count"));
    g_autofree char *cp = g_strdup_printf("%s.count", base);
    g_autofree char *mp = g_strdup_printf("%s.allocationMode", base);
    if (g_strcmp0(mode, "All") == 0) {
        if (count != 0)
            kas_field_errors_addf(errs, cp,
                                  "Invalid value: %" G_GINT64_FORMAT
                                  ": must not be specified when allocationMode is 'All'",
                                  count);
    } else if (g_strcmp0(mode, "ExactCount") == 0) {
        if (count <= 0)
            kas_field_errors_addf(errs, cp,
                                  "Invalid value: %" G_GINT64_FORMAT ": must be greater than zero",
                                  count);
    } else {
        kas_field_errors_addf(errs, mp,
                              "Unsupported value: \"%s\": supported values: \"All\", "
                              "\"ExactCount\"",
                              mode != NULL ? mode : "");
    }
}

static void check_tolerations(KasFieldErrors *errs, const char *base, json_object *tols)
{
    for (gsize i = 0; i < arr_len(tols); i++) {
        const char *op = kas_json_get_string(arr_at(tols, i), "operator");
        if (g_strcmp0(op, "Equal") == 0 || g_strcmp0(op, "Exists") == 0)
            continue;
        g_autofree char *f = g_strdup_printf("%s.tolerations[%zu].operator", base, i);
        kas_field_errors_addf(errs, f,
                              "Unsupported value: \"%s\": supported values: \"Equal\", "
                              "\"Exists\"",
                              op != NULL ? op : "");
    }
}

static void check_capacity_requests(KasFieldErrors *errs, const char *base, json_object *r);

/* What an exact request and a subrequest share: class, selectors, mode, count and capacity. */
static void check_device_request_body(KasFieldErrors *errs, const char *base, json_object *r)
{
    g_autofree char *cp = g_strdup_printf("%s.deviceClassName", base);
    const char *cls = kas_json_get_string(r, "deviceClassName");
    if (cls == NULL || cls[0] == '\0')
        kas_field_errors_add(errs, cp, "Required value");
    else
        check_subdomain(errs, cp, cls);
    check_selectors(errs, base, kas_json_get(r, "selectors"), FALSE);
    check_allocation_mode(errs, base, r);
    check_tolerations(errs, base, kas_json_get(r, "tolerations"));
    check_capacity_requests(errs, base, r);
}

static void check_request(KasFieldErrors *errs, const char *base, json_object *r)
{
    g_autofree char *np = g_strdup_printf("%s.name", base);
    const char *name = kas_json_get_string(r, "name");
    if (name == NULL || name[0] == '\0')
        kas_field_errors_add(errs, np, "Required value");
    else
        check_label(errs, np, name);
    json_object *exactly = kas_json_get(r, "exactly");
    json_object *fa = kas_json_get(r, "firstAvailable");
    gboolean has_fa = arr_len(fa) > 0, has_exactly = exactly != NULL;
    if (!has_fa && !has_exactly) {
        kas_field_errors_add(errs, base,
                             "Required value: exactly one of `exactly` or `firstAvailable` is "
                             "required");
    } else if (has_fa && has_exactly) {
        kas_field_errors_add(errs, base,
                             "Invalid value: null: exactly one of `exactly` or `firstAvailable` "
                             "is required, but multiple fields are set");
    } else if (has_exactly) {
        g_autofree char *ep = g_strdup_printf("%s.exactly", base);
        check_device_request_body(errs, ep, exactly);
    } else {
        g_autofree char *fp = g_strdup_printf("%s.firstAvailable", base);
        if (!check_count(errs, fp, fa, KAS_DRA_MAX_FIRST_AVAIL))
            return;
        for (gsize i = 0; i < arr_len(fa); i++) {
            g_autofree char *sp = g_strdup_printf("%s[%zu]", fp, i);
            json_object *sub = arr_at(fa, i);
            g_autofree char *snp = g_strdup_printf("%s.name", sp);
            const char *sname = kas_json_get_string(sub, "name");
            if (sname == NULL || sname[0] == '\0')
                kas_field_errors_add(errs, snp, "Required value");
            else
                check_label(errs, snp, sname);
            check_device_request_body(errs, sp, sub);
        }
        check_unique(errs, fp, fa, "name");
    }
}

static void check_constraint(KasFieldErrors *errs, const char *base, json_object *c,
                             json_object *requests)
{
    g_autofree char *rp = g_strdup_printf("%s.requests", base);
    check_request_refs(errs, rp, kas_json_get(c, "requests"), requests);
    const char *match = kas_json_get_string(c, "matchAttribute");
    const char *distinct = kas_json_get_string(c, "distinctAttribute");
    g_autofree char *mp = g_strdup_printf("%s.matchAttribute", base);
    g_autofree char *dp = g_strdup_printf("%s.distinctAttribute", base);
    if (match != NULL)
        check_qualified_name(errs, mp, match, TRUE);
    else if (distinct != NULL)
        check_qualified_name(errs, dp, distinct, TRUE);
    else
        kas_field_errors_add(errs, mp, "Required value");
}

/* validateDeviceClaim at @base ("spec.devices" or "spec.spec.devices"). */
static void check_device_claim(KasFieldErrors *errs, const char *base, json_object *devices)
{
    json_object *requests = kas_json_get(devices, "requests");
    g_autofree char *rp = g_strdup_printf("%s.requests", base);
    if (check_count(errs, rp, requests, KAS_DRA_MAX_REQUESTS)) {
        for (gsize i = 0; i < arr_len(requests); i++) {
            g_autofree char *f = g_strdup_printf("%s[%zu]", rp, i);
            check_request(errs, f, arr_at(requests, i));
        }
        check_unique(errs, rp, requests, "name");
    }
    json_object *cons = kas_json_get(devices, "constraints");
    g_autofree char *cp = g_strdup_printf("%s.constraints", base);
    if (check_count(errs, cp, cons, KAS_DRA_MAX_CONSTRAINTS))
        for (gsize i = 0; i < arr_len(cons); i++) {
            g_autofree char *f = g_strdup_printf("%s[%zu]", cp, i);
            check_constraint(errs, f, arr_at(cons, i), requests);
        }
    json_object *cfg = kas_json_get(devices, "config");
    g_autofree char *gp = g_strdup_printf("%s.config", base);
    if (check_count(errs, gp, cfg, KAS_DRA_MAX_CONFIGS))
        for (gsize i = 0; i < arr_len(cfg); i++) {
            g_autofree char *f = g_strdup_printf("%s[%zu]", gp, i);
            g_autofree char *r = g_strdup_printf("%s.requests", f);
            check_request_refs(errs, r, kas_json_get(arr_at(cfg, i), "requests"), requests);
            check_device_config(errs, f, arr_at(cfg, i));
        }
}

/* ---- slices --------------------------------------------------------------------------------- */

/* Dot-separated identifiers of a semver pre-release (@pre: numeric ones without leading zeros)
 * or build part. */
static gboolean semver_idents_ok(const char *s, gsize n, gboolean pre)
{
    if (n == 0)
        return FALSE;
    g_autofree char *ids = g_strndup(s, n);
    g_auto(GStrv) parts = g_strsplit(ids, ".", -1);
    for (guint i = 0; parts[i] != NULL; i++) {
        gboolean numeric = parts[i][0] != '\0';
        if (parts[i][0] == '\0')
            return FALSE;
        for (const char *p = parts[i]; *p != '\0'; p++) {
            if (!g_ascii_isalnum(*p) && *p != '-')
                return FALSE;
            numeric = numeric && g_ascii_isdigit(*p);
        }
        if (pre && numeric && parts[i][0] == '0' && parts[i][1] != '\0')
            return FALSE;
    }
    return TRUE;
}

/* semver.org 2.0.0: MAJOR.MINOR.PATCH[-pre.release][+build.meta]. */
static gboolean semver_ok(const char *s)
{
    for (int part = 0; part < 3; part++) {
        if (!g_ascii_isdigit(*s) || (s[0] == '0' && g_ascii_isdigit(s[1])))
            return FALSE;
        while (g_ascii_isdigit(*s))
            s++;
        if (part < 2 && *s++ != '.')
            return FALSE;
    }
    if (*s == '-') {
        gsize n = strcspn(s + 1, "+");
        if (!semver_idents_ok(s + 1, n, TRUE))
            return FALSE;
        s += 1 + n;
    }
    if (*s == '+')
        return semver_idents_ok(s + 1, strlen(s + 1), FALSE);
    return *s == '\0';
}

static void check_attribute(KasFieldErrors *errs, const char *path, json_object *a)
{
    static const char *const kinds[] = {"int", "bool", "string", "version"};
    guint set = 0;
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++)
        set += kas_json_get(a, kinds[i]) != NULL;
    if (set != 1) {
        kas_field_errors_addf(errs, path, "Invalid value: %s: exactly one value must be specified",
                              set == 0 ? "\"\"" : json_object_to_json_string(a));
        return;
    }
    const char *str = kas_json_get_string(a, "string");
    const char *ver = kas_json_get_string(a, "version");
    g_autofree char *sp = g_strdup_printf("%s.string", path);
    g_autofree char *vp = g_strdup_printf("%s.version", path);
    if (str != NULL && strlen(str) > KAS_DRA_MAX_ATTR_VALUE_LEN)
        kas_field_errors_addf(errs, sp, "Too long: may not be more than %d bytes",
                              KAS_DRA_MAX_ATTR_VALUE_LEN);
    if (ver != NULL && !semver_ok(ver))
        kas_field_errors_addf(errs, vp,
                              "Invalid value: \"%s\": must be a string compatible with semver.org "
                              "spec 2.0.0",
                              ver);
    if (ver != NULL && strlen(ver) > KAS_DRA_MAX_ATTR_VALUE_LEN)
        kas_field_errors_addf(errs, vp, "Too long: may not be more than %d bytes",
                              KAS_DRA_MAX_ATTR_VALUE_LEN);
}

/* ---- partitionable devices and consumable capacity ------------------------------------------ */

/* A quantity member @key of @obj at "<base>.<key>": TRUE with @out when present and valid;
 * "Required value" (when @required) or the quantity error otherwise. */
static gboolean quantity_at(KasFieldErrors *errs, const char *base, json_object *obj,
                            const char *key, gboolean required, KbQuantity *out)
{
    g_autofree char *f = key != NULL ? g_strdup_printf("%s.%s", base, key) : g_strdup(base);
    json_object *v = key != NULL ? kas_json_get(obj, key) : obj;
    if (v == NULL) {
        if (required)
            kas_field_errors_add(errs, f, "Required value");
        return FALSE;
    }
    const char *q = json_object_get_string(v);
    if (json_object_is_type(v, json_type_string) && kb_quantity_parse(q, out, NULL))
        return TRUE;
    kas_field_errors_addf(errs, f,
                          "Invalid value: \"%s\": quantities must match the regular expression "
                          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                          q != NULL ? q : "");
    return FALSE;
}

/* Quantities compared in milli-units, as far as they reach (beyond, they saturate). */
static gint64 qm(const KbQuantity *q)
{
    return kb_quantity_milli_value(q);
}

/* A counters map (of a counter set or of a device's consumption) at @path: DNS-label names,
 * each {value: quantity}, 1 to @max entries. */
static void check_counters(KasFieldErrors *errs, const char *path, json_object *counters, gsize max)
{
    gsize n = json_object_is_type(counters, json_type_object) ? json_object_object_length(counters)
                                                              : 0;
    if (n == 0) {
        kas_field_errors_add(errs, path, "Required value");
        return;
    }
    if (n > max) {
        kas_field_errors_addf(errs, path, "Too many: %zu: must have at most %zu items", n, max);
        return;
    }
    json_object_object_foreach(counters, k, v)
    {
        g_autofree char *f = g_strdup_printf("%s[%s]", path, k);
        check_label(errs, f, k);
        KbQuantity q;
        quantity_at(errs, f, v, "value", TRUE, &q);
    }
}

/* validateSet's uniqueness reported at "<path>[i].<key>" (the listMapKey). */
static void check_unique_key(KasFieldErrors *errs, const char *path, json_object *a,
                             const char *key)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (gsize i = 0; i < arr_len(a); i++) {
        const char *v = kas_json_get_string(arr_at(a, i), key);
        if (v == NULL || v[0] == '\0' || g_hash_table_add(seen, (gpointer)v))
            continue;
        g_autofree char *f = g_strdup_printf("%s[%zu].%s", path, i, key);
        kas_field_errors_addf(errs, f, "Duplicate value: \"%s\"", v);
    }
}

/* spec.sharedCounters: at most 8 counter sets of at most 32 counters, names unique labels. */
static void check_shared_counters(KasFieldErrors *errs, json_object *sets)
{
    const char *path = "spec.sharedCounters";
    if (!check_count(errs, path, sets, KAS_DRA_MAX_COUNTER_SETS))
        return;
    for (gsize i = 0; i < arr_len(sets); i++) {
        json_object *s = arr_at(sets, i);
        g_autofree char *f = g_strdup_printf("%s[%zu]", path, i);
        const char *name = required_string(errs, f, s, "name");
        g_autofree char *np = g_strdup_printf("%s.name", f);
        if (name != NULL)
            check_label(errs, np, name);
        g_autofree char *cp = g_strdup_printf("%s.counters", f);
        check_counters(errs, cp, kas_json_get(s, "counters"), KAS_DRA_MAX_SET_COUNTERS);
    }
    check_unique_key(errs, path, sets, "name");
}

/* A device's consumesCounters: at most 2 entries, one per counter set. The sets themselves are
 * published in other slices of the pool (v1 keeps sharedCounters and devices apart), so, as in
 * kube-apiserver, the reference is resolved by the allocator, not here. */
static void check_consumes_counters(KasFieldErrors *errs, const char *base, json_object *cc)
{
    g_autofree char *path = g_strdup_printf("%s.consumesCounters", base);
    if (!check_count(errs, path, cc, KAS_DRA_MAX_CONSUMPTIONS))
        return;
    for (gsize i = 0; i < arr_len(cc); i++) {
        json_object *c = arr_at(cc, i);
        g_autofree char *f = g_strdup_printf("%s[%zu]", path, i);
        const char *set = required_string(errs, f, c, "counterSet");
        g_autofree char *sp = g_strdup_printf("%s.counterSet", f);
        if (set != NULL)
            check_label(errs, sp, set);
        g_autofree char *cp = g_strdup_printf("%s.counters", f);
        check_counters(errs, cp, kas_json_get(c, "counters"), KAS_DRA_MAX_USE_COUNTERS);
    }
    check_unique_key(errs, path, cc, "counterSet");
}

static void invalid_q(KasFieldErrors *errs, const char *path, const KbQuantity *v, const char *what,
                      const KbQuantity *other)
{
    g_autofree char *vs = kb_quantity_format(v);
    g_autofree char *os = other != NULL ? kb_quantity_format(other) : NULL;
    kas_field_errors_addf(errs, path, "Invalid value: \"%s\": %s%s", vs, what,
                          os != NULL ? os : "");
}

/* requestPolicy.validValues: at most 10, ascending, unique, within the capacity, and the
 * default one of them. */
static void check_valid_values(KasFieldErrors *errs, const char *pp, json_object *vals,
                               const KbQuantity *cap, const KbQuantity *def)
{
    g_autofree char *vp = g_strdup_printf("%s.validValues", pp);
    gsize n = arr_len(vals);
    if (n > KAS_DRA_MAX_VALID_VALUES)
        kas_field_errors_addf(errs, vp, "Too many: %zu: must have at most %d items", n,
                              KAS_DRA_MAX_VALID_VALUES);
    gboolean has_def = FALSE;
    KbQuantity prev = {0};
    for (gsize i = 0; i < n; i++) {
        g_autofree char *f = g_strdup_printf("%s[%zu]", vp, i);
        KbQuantity q;
        if (!quantity_at(errs, f, arr_at(vals, i), NULL, TRUE, &q))
            continue;
        if (qm(&q) > qm(cap))
            invalid_q(errs, f, &q, "option is larger than capacity value: ", cap);
        if (i > 0 && qm(&q) == qm(&prev))
            kas_field_errors_addf(errs, f, "Duplicate value: \"%" G_GINT64_FORMAT "\"",
                                  kb_quantity_value(&q));
        else if (i > 0 && qm(&q) < qm(&prev))
            invalid_q(errs, f, &q, "values must be sorted in ascending order", NULL);
        has_def = has_def || (def != NULL && qm(&q) == qm(def));
        prev = q;
    }
    if (def != NULL && !has_def)
        invalid_q(errs, vp, def, "default value is not valid according to the requestPolicy", NULL);
}

/* requestPolicy.validRange: min required, 0 <= min <= max <= capacity, the default inside, the
 * default and max on the step from min. */
static void check_valid_range(KasFieldErrors *errs, const char *pp, json_object *range,
                              const KbQuantity *cap, const KbQuantity *def)
{
    g_autofree char *rp = g_strdup_printf("%s.validRange", pp);
    g_autofree char *minp = g_strdup_printf("%s.min", rp);
    g_autofree char *maxp = g_strdup_printf("%s.max", rp);
    g_autofree char *stp = g_strdup_printf("%s.step", rp);
    g_autofree char *dp = g_strdup_printf("%s.default", rp);
    KbQuantity min, max, step;
    if (kas_json_get(range, "min") == NULL) {
        kas_field_errors_add(errs, minp, "Required value: required when validRange is defined");
        return;
    }
    if (!quantity_at(errs, rp, range, "min", TRUE, &min))
        return;
    gboolean has_max = quantity_at(errs, rp, range, "max", FALSE, &max);
    gboolean has_step = quantity_at(errs, rp, range, "step", FALSE, &step);
    if (qm(&min) < 0)
        invalid_q(errs, minp, &min, "must be greater than or equal to 0", NULL);
    if (qm(&min) > qm(cap))
        invalid_q(errs, minp, &min, "min is larger than capacity value: ", cap);
    if (def != NULL && qm(def) < qm(&min))
        invalid_q(errs, dp, def, "default is less than min: ", &min);
    if (has_max) {
        if (qm(&min) > qm(&max))
            invalid_q(errs, maxp, &min, "min is larger than max: ", &max);
        if (def != NULL && qm(def) > qm(&max))
            invalid_q(errs, dp, def, "default is more than max: ", &max);
        if (qm(&max) > qm(cap))
            invalid_q(errs, maxp, &max, "max is larger than capacity value: ", cap);
    }
    if (!has_step || qm(&step) <= 0 || qm(&min) < 0)
        return;
    g_autofree char *ss = kb_quantity_format(&step);
    g_autofree char *ms = kb_quantity_format(&min);
    g_autofree char *why =
            g_strdup_printf("value is not a multiple of a given step (%s) from (%s)", ss, ms);
    if (def != NULL && (qm(def) - qm(&min)) % qm(&step) != 0)
        invalid_q(errs, stp, def, why, NULL);
    if (has_max && (qm(&max) - qm(&min)) % qm(&step) != 0)
        invalid_q(errs, stp, &max, why, NULL);
}

/* A device capacity at @path ("...capacity[name]"): its value, and a requestPolicy only on a
 * device with allowMultipleAllocations. */
static void check_capacity(KasFieldErrors *errs, const char *path, json_object *c, gboolean multi)
{
    KbQuantity cap;
    if (!quantity_at(errs, path, c, "value", TRUE, &cap))
        return;
    json_object *pol = kas_json_get(c, "requestPolicy");
    if (pol == NULL)
        return;
    g_autofree char *pp = g_strdup_printf("%s.requestPolicy", path);
    if (!multi) {
        kas_field_errors_add(errs, pp, "Forbidden: allowMultipleAllocations must be true");
        return;
    }
    json_object *vals = kas_json_get(pol, "validValues"), *range = kas_json_get(pol, "validRange");
    if (vals != NULL && range != NULL) {
        kas_field_errors_add(errs, pp,
                             "Forbidden: exactly one policy can be specified, cannot specify "
                             "\"validValues\" and \"validRange\" at the same time");
        return;
    }
    KbQuantity def;
    gboolean has_def = quantity_at(errs, pp, pol, "default", FALSE, &def);
    g_autofree char *dp = g_strdup_printf("%s.default", pp);
    if (!has_def && kas_json_get(pol, "default") == NULL && (vals != NULL || range != NULL))
        kas_field_errors_addf(errs, dp, "Required value: required when %s is defined",
                              vals != NULL ? "validValues" : "validRange");
    if (vals != NULL)
        check_valid_values(errs, pp, vals, &cap, has_def ? &def : NULL);
    else if (range != NULL)
        check_valid_range(errs, pp, range, &cap, has_def ? &def : NULL);
}

/* A claim request's capacity.requests: qualified names to non-negative quantities. */
static void check_capacity_requests(KasFieldErrors *errs, const char *base, json_object *r)
{
    json_object *reqs = kas_json_get(r, "capacity.requests");
    if (!json_object_is_type(reqs, json_type_object))
        return;
    g_autofree char *path = g_strdup_printf("%s.capacity.requests", base);
    json_object_object_foreach(reqs, k, v)
    {
        check_qualified_name(errs, path, k, FALSE);
        g_autofree char *f = g_strdup_printf("%s[%s]", path, k);
        KbQuantity q;
        if (quantity_at(errs, f, v, NULL, TRUE, &q) && qm(&q) < 0)
            invalid_q(errs, f, &q, "must be greater than or equal to 0", NULL);
    }
}

/* An allocation result's consumedCapacity (qualified names to quantities) and shareID (a
 * lowercase UUID, set when the device allows multiple allocations). */
static void check_result_sharing(KasFieldErrors *errs, const char *base, json_object *r)
{
    json_object *cc = kas_json_get(r, "consumedCapacity");
    g_autofree char *cp = g_strdup_printf("%s.consumedCapacity", base);
    if (json_object_is_type(cc, json_type_object)) {
        json_object_object_foreach(cc, k, v)
        {
            check_qualified_name(errs, cp, k, FALSE);
            g_autofree char *f = g_strdup_printf("%s[%s]", cp, k);
            KbQuantity q;
            quantity_at(errs, f, v, NULL, TRUE, &q);
        }
    }
    const char *id = kas_json_get_string(r, "shareID");
    if (id == NULL)
        return;
    gboolean ok = strlen(id) == 36;
    for (gsize i = 0; ok && i < 36; i++)
        ok = (i == 8 || i == 13 || i == 18 || i == 23)
                     ? id[i] == '-'
                     : (g_ascii_isdigit(id[i]) || (id[i] >= 'a' && id[i] <= 'f'));
    g_autofree char *sp = g_strdup_printf("%s.shareID", base);
    if (!ok)
        kas_field_errors_addf(errs, sp,
                              "Invalid value: \"%s\": must be a lowercase UUID in 8-4-4-4-12 "
                              "format",
                              id);
}

static void check_device(KasFieldErrors *errs, const char *base, json_object *d)
{
    g_autofree char *np = g_strdup_printf("%s.name", base);
    const char *name = kas_json_get_string(d, "name");
    if (name == NULL || name[0] == '\0')
        kas_field_errors_add(errs, np, "Required value");
    else
        check_label(errs, np, name);
    json_object *attrs = kas_json_get(d, "attributes"), *cap = kas_json_get(d, "capacity");
    gboolean multi = json_object_get_boolean(kas_json_get(d, "allowMultipleAllocations"));
    gsize n =
            (json_object_is_type(attrs, json_type_object) ? json_object_object_length(attrs) : 0) +
            (json_object_is_type(cap, json_type_object) ? json_object_object_length(cap) : 0);
    if (n > KAS_DRA_MAX_ATTRS)
        kas_field_errors_addf(errs, base,
                              "Invalid value: %zu: the total number of attributes and capacities "
                              "must not exceed %d",
                              n, KAS_DRA_MAX_ATTRS);
    g_autofree char *ap = g_strdup_printf("%s.attributes", base);
    if (json_object_is_type(attrs, json_type_object)) {
        json_object_object_foreach(attrs, k, v)
        {
            check_qualified_name(errs, ap, k, FALSE);
            g_autofree char *f = g_strdup_printf("%s[%s]", ap, k);
            check_attribute(errs, f, v);
        }
    }
    g_autofree char *cp = g_strdup_printf("%s.capacity", base);
    if (json_object_is_type(cap, json_type_object)) {
        json_object_object_foreach(cap, k, v)
        {
            check_qualified_name(errs, cp, k, FALSE);
            g_autofree char *f = g_strdup_printf("%s[%s]", cp, k);
            check_capacity(errs, f, v, multi);
        }
    }
    if (kas_json_get(d, "consumesCounters") != NULL)
        check_consumes_counters(errs, base, kas_json_get(d, "consumesCounters"));
    static const char *const per_device[] = {"nodeName", "nodeSelector", "allNodes"};
    for (guint i = 0; i < G_N_ELEMENTS(per_device); i++)
        if (kas_json_get(d, per_device[i]) != NULL) {
            kas_field_errors_add(errs, base,
                                 "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` "
                                 "can only be set if `perDeviceNodeSelection` is set to true in "
                                 "the ResourceSlice spec");
            break;
        }
}

/* The slice's node: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection. */
static void check_slice_node(KasFieldErrors *errs, json_object *spec)
{
    g_autoptr(GString) set = g_string_new(NULL);
    json_object *nn = kas_json_get(spec, "nodeName");
    if (nn != NULL) {
        const char *s = json_object_get_string(nn);
        if (s != NULL && s[0] != '\0') {
            g_string_append(set, "`nodeName`");
            check_subdomain(errs, "spec.nodeName", s);
        } else {
            kas_field_errors_add(errs, "spec.nodeName",
                                 "Invalid value: \"\": must be either unset or set to a non-empty "
                                 "string");
        }
    }
    json_object *ns = kas_json_get(spec, "nodeSelector");
    if (ns != NULL) {
        g_string_append(set, set->len > 0 ? ", `nodeSelector`" : "`nodeSelector`");
        if (arr_len(kas_json_get(ns, "nodeSelectorTerms")) != 1)
            kas_field_errors_add(errs, "spec.nodeSelector.nodeSelectorTerms",
                                 "Invalid value: \"array\": must have exactly one node selector "
                                 "term");
    }
    static const char *const flags[] = {"allNodes", "perDeviceNodeSelection"};
    for (guint i = 0; i < G_N_ELEMENTS(flags); i++) {
        json_object *v = kas_json_get(spec, flags[i]);
        if (v == NULL)
            continue;
        if (json_object_get_boolean(v)) {
            g_string_append_printf(set, "%s`%s`", set->len > 0 ? ", " : "", flags[i]);
        } else {
            g_autofree char *f = g_strdup_printf("spec.%s", flags[i]);
            kas_field_errors_add(errs, f,
                                 "Invalid value: false: must be either unset or set to "
                                 "true");
        }
    }
    guint n = 0;
    for (const char *p = set->str; *p != '\0'; p++)
        n += *p == ',';
    if (set->len == 0)
        kas_field_errors_add(errs, "spec",
                             "Required value: exactly one of `nodeName`, `nodeSelector`, "
                             "`allNodes`, `perDeviceNodeSelection` is required");
    else if (n > 0)
        kas_field_errors_addf(errs, "spec",
                              "Invalid value: \"{%s}\": exactly one of `nodeName`, "
                              "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, "
                              "but multiple fields are set",
                              set->str);
}

static void check_slice(KasFieldErrors *errs, json_object *spec)
{
    check_driver_name(errs, "spec.driver", kas_json_get_string(spec, "driver"));
    json_object *pool = kas_json_get(spec, "pool");
    check_pool_name(errs, "spec.pool.name", kas_json_get_string(pool, "name"));
    gint64 count = json_object_get_int64(kas_json_get(pool, "resourceSliceCount"));
    if (count <= 0)
        kas_field_errors_addf(errs, "spec.pool.resourceSliceCount",
                              "Invalid value: %" G_GINT64_FORMAT ": must be greater than zero",
                              count);
    gint64 gen = json_object_get_int64(kas_json_get(pool, "generation"));
    if (gen < 0)
        kas_field_errors_addf(
                errs, "spec.pool.generation",
                "Invalid value: %" G_GINT64_FORMAT ": must be greater than or equal to zero", gen);
    check_slice_node(errs, spec);
    json_object *devs = kas_json_get(spec, "devices");
    if (kas_json_get(spec, "sharedCounters") != NULL && devs != NULL)
        kas_field_errors_add(errs, "spec",
                             "Invalid value: \"\": only one of `sharedCounters` or `devices` is "
                             "allowed");
    if (kas_json_get(spec, "sharedCounters") != NULL)
        check_shared_counters(errs, kas_json_get(spec, "sharedCounters"));
    gboolean advanced = FALSE;
    for (gsize i = 0; i < arr_len(devs); i++)
        advanced = advanced || kas_json_get(arr_at(devs, i), "consumesCounters") != NULL;
    if (!check_count(errs, "spec.devices", devs,
                     advanced ? KAS_DRA_MAX_ADV_DEVICES : KAS_DRA_MAX_DEVICES))
        return;
    for (gsize i = 0; i < arr_len(devs); i++) {
        g_autofree char *f = g_strdup_printf("spec.devices[%zu]", i);
        check_device(errs, f, arr_at(devs, i));
    }
    check_unique(errs, "spec.devices", devs, "name");
}

/* ---- classes -------------------------------------------------------------------------------- */

/* @old_spec: the stored spec on update (NULL on create); unchanged selectors are not compiled
 * again. */
static void check_class(KasFieldErrors *errs, json_object *spec, json_object *old_spec)
{
    json_object *sels = kas_json_get(spec, "selectors");
    gboolean stored =
            old_spec != NULL && json_object_equal(sels, kas_json_get(old_spec, "selectors"));
    check_selectors(errs, "spec", sels, stored);
    json_object *cfg = kas_json_get(spec, "config");
    if (check_count(errs, "spec.config", cfg, KAS_DRA_MAX_CONFIGS))
        for (gsize i = 0; i < arr_len(cfg); i++) {
            g_autofree char *f = g_strdup_printf("spec.config[%zu]", i);
            check_device_config(errs, f, arr_at(cfg, i));
        }
    const char *ext = kas_json_get_string(spec, "extendedResourceName");
    if (ext != NULL && (strchr(ext, '/') == NULL || g_str_has_prefix(ext, "kubernetes.io/") ||
                        g_str_has_prefix(ext, "requests.")))
        kas_field_errors_addf(errs, "spec.extendedResourceName",
                              "Invalid value: \"%s\": must be a valid extended resource name", ext);
}

/* ---- entry points --------------------------------------------------------------------------- */

static gboolean is(const KasRes *res, const char *plural)
{
    return strcmp(res->plural, plural) == 0;
}

/* Defaults and validation of a whole object's spec (create and update alike). */
static void check_object(const KasRes *res, json_object *obj, json_object *old,
                         KasFieldErrors *errs)
{
    json_object *spec = kas_json_get(obj, "spec");
    if (is(res, "deviceclasses")) {
        check_class(errs, spec, old != NULL ? kas_json_get(old, "spec") : NULL);
    } else if (is(res, "resourceslices")) {
        check_slice(errs, spec);
    } else if (is(res, "resourceclaims")) {
        default_claim_spec(spec);
        check_device_claim(errs, "spec.devices", kas_json_get(spec, "devices"));
    } else if (is(res, "resourceclaimtemplates")) {
        json_object *inner = kas_json_get(spec, "spec");
        default_claim_spec(inner);
        check_device_claim(errs, "spec.spec.devices", kas_json_get(inner, "devices"));
    }
}

gboolean kas_dra_admit_create(const KasRes *res, json_object *obj, GError **error)
{
    const char *name = kas_json_get_string(obj, "metadata.name");
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    if (is(res, "resourceclaims"))
        json_object_object_del(obj, "status");
    json_object *spec = kas_json_get(obj, "spec");
    if (!json_object_is_type(spec, json_type_object) && !is(res, "deviceclasses")) {
        kas_field_errors_add(errs, "spec", "Required value");
        return kas_field_errors_check(errs, res, name, error);
    }
    check_object(res, obj, NULL, errs);
    return kas_field_errors_check(errs, res, name, error);
}

static void immutable(KasFieldErrors *errs, const char *path, json_object *o, json_object *n)
{
    if (json_object_equal(o, n))
        return;
    if (json_object_is_type(n, json_type_string))
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": field is immutable",
                              json_object_get_string(n));
    else
        kas_field_errors_addf(errs, path, "Invalid value: \"%s\": field is immutable",
                              n == NULL ? "null" : "object");
}

gboolean kas_dra_admit_update(const KasRes *res, json_object *old, json_object *new_obj,
                              GError **error)
{
    const char *name = kas_json_get_string(old, "metadata.name");
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    json_object *spec = kas_json_get(new_obj, "spec"), *old_spec = kas_json_get(old, "spec");
    if (is(res, "resourceclaims") || is(res, "resourceclaimtemplates")) {
        /* the spec is immutable: defaults make an update that restates it equal */
        if (is(res, "resourceclaims"))
            default_claim_spec(spec);
        else
            default_claim_spec(kas_json_get(spec, "spec"));
        immutable(errs, "spec", old_spec, spec);
        return kas_field_errors_check(errs, res, name, error);
    }
    check_object(res, new_obj, old, errs);
    if (is(res, "resourceslices")) {
        immutable(errs, "spec.pool.name", kas_json_get(old_spec, "pool.name"),
                  kas_json_get(spec, "pool.name"));
        immutable(errs, "spec.driver", kas_json_get(old_spec, "driver"),
                  kas_json_get(spec, "driver"));
        immutable(errs, "spec.nodeName", kas_json_get(old_spec, "nodeName"),
                  kas_json_get(spec, "nodeName"));
    }
    return kas_field_errors_check(errs, res, name, error);
}

static void check_reserved_for(KasFieldErrors *errs, json_object *rf)
{
    if (!check_count(errs, "status.reservedFor", rf, KAS_DRA_MAX_RESERVED_FOR))
        return;
    static const char *const keys[] = {"resource", "name", "uid"};
    for (gsize i = 0; i < arr_len(rf); i++) {
        char f[64];
        g_snprintf(f, sizeof f, "status.reservedFor[%zu]", i);
        for (guint k = 0; k < G_N_ELEMENTS(keys); k++)
            required_string(errs, f, arr_at(rf, i), keys[k]);
    }
    check_unique(errs, "status.reservedFor", rf, "uid");
}

static gboolean has_uid(json_object *list, const char *uid)
{
    for (gsize i = 0; i < arr_len(list); i++)
        if (g_strcmp0(kas_json_get_string(arr_at(list, i), "uid"), uid) == 0)
            return TRUE;
    return FALSE;
}

/* validateAllocationResult for a new allocation. */
static void check_allocation(KasFieldErrors *errs, json_object *alloc, json_object *requests)
{
    const char *rp = "status.allocation.devices.results";
    json_object *results = kas_json_get(alloc, "devices.results");
    if (check_count(errs, rp, results, KAS_DRA_MAX_RESULTS)) {
        for (gsize i = 0; i < arr_len(results); i++) {
            json_object *r = arr_at(results, i);
            /* on the stack: one status write per DRA pod validates these (an index has at
             * most 20 digits) */
            char f[80], req[96], drv[96], pool[96], dev[96];
            g_snprintf(f, sizeof f, "%s[%zu]", rp, i);
            g_snprintf(req, sizeof req, "%s.request", f);
            g_snprintf(drv, sizeof drv, "%s.driver", f);
            g_snprintf(pool, sizeof pool, "%s.pool", f);
            g_snprintf(dev, sizeof dev, "%s.device", f);
            const char *ref = kas_json_get_string(r, "request");
            if (ref == NULL || ref[0] == '\0')
                kas_field_errors_add(errs, req, "Required value");
            else if (!request_ref_ok(requests, ref))
                kas_field_errors_addf(errs, req, "Invalid value: \"%s\": " REQUEST_REF_WHY, ref);
            check_driver_name(errs, drv, kas_json_get_string(r, "driver"));
            check_pool_name(errs, pool, kas_json_get_string(r, "pool"));
            const char *d = kas_json_get_string(r, "device");
            if (d == NULL || d[0] == '\0')
                kas_field_errors_add(errs, dev, "Required value");
            else
                check_label(errs, dev, d);
            check_result_sharing(errs, f, r);
        }
    }
    json_object *terms = kas_json_get(alloc, "nodeSelector.nodeSelectorTerms");
    if (kas_json_get(alloc, "nodeSelector") != NULL && arr_len(terms) == 0)
        kas_field_errors_add(errs, "status.allocation.nodeSelector.nodeSelectorTerms",
                             "Required value: must have at least one node selector term");
}

gboolean kas_dra_admit_status(const KasRes *res, json_object *old, json_object *new_obj,
                              GError **error)
{
    if (!is(res, "resourceclaims"))
        return TRUE;
    const char *name = kas_json_get_string(old, "metadata.name");
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    json_object *st = kas_json_get(new_obj, "status"), *old_st = kas_json_get(old, "status");
    json_object *rf = kas_json_get(st, "reservedFor");
    json_object *alloc = kas_json_get(st, "allocation");
    json_object *old_alloc = kas_json_get(old_st, "allocation");
    check_reserved_for(errs, rf);
    if (arr_len(rf) > 0 && alloc == NULL) {
        kas_field_errors_add(errs, "status.reservedFor",
                             "Forbidden: may not be specified when `allocated` is not set");
    } else if (arr_len(rf) > 0 && kas_json_get(old, "metadata.deletionTimestamp") != NULL) {
        json_object *old_rf = kas_json_get(old_st, "reservedFor");
        for (gsize i = 0; i < arr_len(rf); i++)
            if (!has_uid(old_rf, kas_json_get_string(arr_at(rf, i), "uid"))) {
                kas_field_errors_add(errs, "status.reservedFor",
                                     "Forbidden: new entries may not be added while "
                                     "`deallocationRequested` or `deletionTimestamp` are set");
                break;
            }
    }
    if (old_alloc != NULL && alloc != NULL)
        immutable(errs, "status.allocation", old_alloc, alloc);
    else if (alloc != NULL)
        check_allocation(errs, alloc, kas_json_get(new_obj, "spec.devices.requests"));
    return kas_field_errors_check(errs, res, name, error);
}

/* ---- a claim's first status read from its text ---------------------------------------------- */

/* What kas_dra_first_status_text() reads at most: members per object, nesting, a string's bytes
 * (a DNS subdomain's 253, a pool's), reservations checked pair by pair. Anything larger is left
 * to the general path. */
#define TEXT_MAX_KEYS     16
#define TEXT_MAX_DEPTH    8
#define TEXT_MAX_STRING   256
#define TEXT_MAX_RESERVED 16

/* Whether json-c, having parsed @p, prints it back as the same bytes: no white space outside
 * strings and no escape, control character or byte beyond ASCII in them. */
static gboolean text_printed_as_is(const char *p, gsize n)
{
    gboolean in_string = FALSE;
    for (gsize i = 0; i < n; i++) {
        guchar c = (guchar)p[i];
        if (c == '"')
            in_string = !in_string;
        else if (c == '\\' || c < 0x20 || c >= 0x7f || (!in_string && c == ' '))
            return FALSE;
    }
    return !in_string;
}

/* The index in @keys of the member @key, marked in *@seen; -1 when it is none of them or was
 * seen before in its object (json-c keeps a repeated member once: not printed as is). */
static int text_key(KbJsonStr key, const char *const *keys, guint n, guint *seen)
{
    for (guint i = 0; i < n; i++) {
        if (key.len != strlen(keys[i]) || memcmp(key.p, keys[i], key.len) != 0)
            continue;
        if (*seen & (1u << i))
            return -1;
        *seen |= 1u << i;
        return (int)i;
    }
    return -1;
}

/* The next value of @r as a NUL-terminated copy in @buf (TEXT_MAX_STRING bytes): FALSE unless it
 * is a string that fits. */
static gboolean text_string(KbJsonReader *r, char *buf)
{
    KbJsonStr s;
    if (kb_json_peek(r) != KB_JSON_STRING || !kb_json_read_string(r, &s, NULL) ||
        s.len >= TEXT_MAX_STRING)
        return FALSE;
    memcpy(buf, s.p, s.len);
    buf[s.len] = '\0';
    return TRUE;
}

/* Whether @s[@n] equals one of @s[0] to @s[@n - 1]. */
static gboolean text_repeated(const KbJsonStr *s, guint n)
{
    for (guint i = 0; i < n; i++)
        if (s[i].len == s[n].len && memcmp(s[i].p, s[n].p, s[n].len) == 0)
            return TRUE;
    return FALSE;
}

/* Any value made of strings, arrays and objects (no member twice) within @depth levels. */
static gboolean text_plain_value(KbJsonReader *r, guint depth)
{
    KbJsonType t = kb_json_peek(r);
    int rc;
    if (t == KB_JSON_STRING)
        return kb_json_skip(r, NULL);
    if (depth == 0)
        return FALSE;
    if (t == KB_JSON_ARRAY) {
        if (!kb_json_array_begin(r, NULL))
            return FALSE;
        while ((rc = kb_json_array_next(r, NULL)) == 1)
            if (!text_plain_value(r, depth - 1))
                return FALSE;
        return rc == 0;
    }
    if (t != KB_JSON_OBJECT || !kb_json_object_begin(r, NULL))
        return FALSE;
    KbJsonStr keys[TEXT_MAX_KEYS];
    guint n = 0;
    while ((rc = kb_json_object_next(r, &keys[n], NULL)) == 1) {
        if (text_repeated(keys, n))
            return FALSE;
        if (++n == TEXT_MAX_KEYS || !text_plain_value(r, depth - 1))
            return FALSE;
    }
    return rc == 0;
}

/* check_driver_name() would find nothing wrong with @s (at most TEXT_MAX_STRING bytes). */
static gboolean text_driver_ok(const char *s)
{
    gsize n = strlen(s);
    char lower[TEXT_MAX_STRING];
    if (n == 0 || n > 63)
        return FALSE;
    for (gsize i = 0; i < n; i++)
        lower[i] = g_ascii_tolower(s[i]);
    return subdomain_chars_ok(lower, n);
}

/* check_pool_name() would find nothing wrong with @s: '/'-separated DNS subdomains. */
static gboolean text_pool_ok(const char *s)
{
    gsize n = strlen(s);
    if (n == 0 || n > 253)
        return FALSE;
    for (const char *p = s;;) {
        const char *slash = strchr(p, '/');
        gsize part = slash != NULL ? (gsize)(slash - p) : strlen(p);
        if (!subdomain_chars_ok(p, part))
            return FALSE;
        if (slash == NULL)
            return TRUE;
        p = slash + 1;
    }
}

gboolean kas_dra_spec_requests(const char *spec, gsize len, KbJsonStr *requests)
{
    KbJsonReader r;
    kb_json_reader_init(&r, spec, len);
    KbJsonStr key;
    int rc = 0, drc = 0;
    gboolean devices = FALSE;
    gboolean ok = kb_json_peek(&r) == KB_JSON_OBJECT && kb_json_object_begin(&r, NULL);
    requests->p = NULL;
    while (ok && (rc = kb_json_object_next(&r, &key, NULL)) == 1) {
        if (!KB_JSON_STR_IS(key, "devices")) {
            ok = kb_json_skip(&r, NULL);
            continue;
        }
        ok = !devices && kb_json_peek(&r) == KB_JSON_OBJECT && kb_json_object_begin(&r, NULL);
        devices = TRUE;
        while (ok && (drc = kb_json_object_next(&r, &key, NULL)) == 1)
            ok = KB_JSON_STR_IS(key, "requests")
                         ? requests->p == NULL && kb_json_peek(&r) == KB_JSON_ARRAY &&
                                   kb_json_skip_span(&r, requests, NULL)
                         : kb_json_skip(&r, NULL);
        ok = ok && drc == 0;
    }
    ok = ok && rc == 0 && requests->p != NULL && kb_json_finish(&r, NULL);
    kb_json_reader_clear(&r);
    return ok;
}

/* Whether the array @list (@len bytes of text) of objects with string names holds one named
 * @name (@n bytes); its firstAvailable's text then in *@fa (p NULL when it has none) if @fa is
 * not NULL. FALSE also when the text is not such an array. */
static gboolean text_named_entry(const char *list, gsize len, const char *name, gsize n,
                                 KbJsonStr *fa)
{
    KbJsonReader r;
    kb_json_reader_init(&r, list, len);
    gboolean found = FALSE, ok = kb_json_array_begin(&r, NULL);
    while (ok && !found && kb_json_array_next(&r, NULL) == 1) {
        KbJsonStr key, s, sub = {0};
        gboolean named = FALSE;
        int mrc = 0;
        ok = kb_json_peek(&r) == KB_JSON_OBJECT && kb_json_object_begin(&r, NULL);
        while (ok && (mrc = kb_json_object_next(&r, &key, NULL)) == 1) {
            if (KB_JSON_STR_IS(key, "name")) {
                ok = kb_json_peek(&r) == KB_JSON_STRING && kb_json_read_string(&r, &s, NULL);
                named = ok && s.len == n && memcmp(s.p, name, n) == 0;
            } else {
                ok = fa != NULL && KB_JSON_STR_IS(key, "firstAvailable")
                             ? kb_json_skip_span(&r, &sub, NULL)
                             : kb_json_skip(&r, NULL);
            }
        }
        found = ok && mrc == 0 && named;
        if (found && fa != NULL)
            *fa = sub;
    }
    kb_json_reader_clear(&r);
    return found;
}

/* request_ref_ok() over the claim's spec as stored text (@spec, @len bytes): TRUE when @ref names
 * one of its requests or a firstAvailable subrequest of one; FALSE also when the text is not
 * what a stored spec looks like (the general path judges then). */
static gboolean text_request_ref_ok(const char *spec, gsize len, const char *ref)
{
    const char *slash = strchr(ref, '/');
    gsize n = slash != NULL ? (gsize)(slash - ref) : strlen(ref);
    KbJsonStr requests, fa = {0};
    if ((slash != NULL && strchr(slash + 1, '/') != NULL) ||
        !kas_dra_spec_requests(spec, len, &requests) ||
        !text_named_entry(requests.p, requests.len, ref, n, slash != NULL ? &fa : NULL))
        return FALSE;
    return slash == NULL ||
           (fa.p != NULL && text_named_entry(fa.p, fa.len, slash + 1, strlen(slash + 1), NULL));
}

/* An allocation's result: request, driver, pool and device, each valid (as check_allocation
 * judges them), and nothing else. */
static gboolean text_result(KbJsonReader *r, const char *spec, gsize spec_len)
{
    static const char *const keys[] = {"request", "driver", "pool", "device"};
    char v[G_N_ELEMENTS(keys)][TEXT_MAX_STRING];
    guint seen = 0;
    KbJsonStr key;
    int rc, k;
    if (kb_json_peek(r) != KB_JSON_OBJECT || !kb_json_object_begin(r, NULL))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, NULL)) == 1)
        if ((k = text_key(key, keys, G_N_ELEMENTS(keys), &seen)) == -1 || !text_string(r, v[k]))
            return FALSE;
    /* check_label() of the device: at most 63 bytes, a DNS label */
    return rc == 0 && seen == (1u << G_N_ELEMENTS(keys)) - 1 && v[0][0] != '\0' &&
           text_request_ref_ok(spec, spec_len, v[0]) && text_driver_ok(v[1]) &&
           text_pool_ok(v[2]) && strlen(v[3]) <= 63 && label_chars_ok(v[3], strlen(v[3]));
}

/* A node selector of any members made of strings, arrays and objects, its nodeSelectorTerms
 * an array of at least one (check_allocation's "Required value" otherwise). */
static gboolean text_node_selector(KbJsonReader *r)
{
    KbJsonStr keys[TEXT_MAX_KEYS];
    guint n = 0, terms = 0;
    gboolean have_terms = FALSE;
    int rc, arc;
    if (kb_json_peek(r) != KB_JSON_OBJECT || !kb_json_object_begin(r, NULL))
        return FALSE;
    while ((rc = kb_json_object_next(r, &keys[n], NULL)) == 1) {
        if (text_repeated(keys, n))
            return FALSE;
        if (!KB_JSON_STR_IS(keys[n], "nodeSelectorTerms")) {
            if (++n == TEXT_MAX_KEYS || !text_plain_value(r, TEXT_MAX_DEPTH))
                return FALSE;
            continue;
        }
        if (++n == TEXT_MAX_KEYS || kb_json_peek(r) != KB_JSON_ARRAY ||
            !kb_json_array_begin(r, NULL))
            return FALSE;
        while ((arc = kb_json_array_next(r, NULL)) == 1) {
            terms++;
            if (!text_plain_value(r, TEXT_MAX_DEPTH))
                return FALSE;
        }
        if (arc != 0)
            return FALSE;
        have_terms = TRUE;
    }
    return rc == 0 && have_terms && terms > 0;
}

/* An allocation: devices.results (at most KAS_DRA_MAX_RESULTS) and a nodeSelector with terms. */
static gboolean text_allocation(KbJsonReader *r, const char *spec, gsize spec_len)
{
    static const char *const keys[] = {"devices", "nodeSelector"};
    guint seen = 0, dseen = 0, n = 0;
    KbJsonStr key;
    int rc, drc = 0;
    if (kb_json_peek(r) != KB_JSON_OBJECT || !kb_json_object_begin(r, NULL))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, NULL)) == 1) {
        int k = text_key(key, keys, G_N_ELEMENTS(keys), &seen);
        if (k == 1) {
            if (!text_node_selector(r))
                return FALSE;
            continue;
        }
        if (k != 0 || kb_json_peek(r) != KB_JSON_OBJECT || !kb_json_object_begin(r, NULL))
            return FALSE;
        static const char *const dk[] = {"results"};
        while ((drc = kb_json_object_next(r, &key, NULL)) == 1) {
            if (text_key(key, dk, 1, &dseen) != 0 || kb_json_peek(r) != KB_JSON_ARRAY ||
                !kb_json_array_begin(r, NULL))
                return FALSE;
            int arc;
            while ((arc = kb_json_array_next(r, NULL)) == 1)
                if (++n > KAS_DRA_MAX_RESULTS || !text_result(r, spec, spec_len))
                    return FALSE;
            if (arc != 0)
                return FALSE;
        }
        if (drc != 0)
            return FALSE;
    }
    return rc == 0;
}

/* A claim's reservations: at most TEXT_MAX_RESERVED entries of resource, name and uid (each a
 * string, not empty) and nothing else, no uid twice (check_reserved_for); their count in *@n. */
static gboolean text_reserved_for(KbJsonReader *r, guint *n)
{
    static const char *const keys[] = {"resource", "name", "uid"};
    KbJsonStr uids[TEXT_MAX_RESERVED];
    int rc, mrc;
    *n = 0;
    if (kb_json_peek(r) != KB_JSON_ARRAY || !kb_json_array_begin(r, NULL))
        return FALSE;
    while ((rc = kb_json_array_next(r, NULL)) == 1) {
        if (*n == TEXT_MAX_RESERVED || kb_json_peek(r) != KB_JSON_OBJECT ||
            !kb_json_object_begin(r, NULL))
            return FALSE;
        guint seen = 0;
        KbJsonStr key, v;
        while ((mrc = kb_json_object_next(r, &key, NULL)) == 1) {
            int k = text_key(key, keys, G_N_ELEMENTS(keys), &seen);
            if (k == -1 || kb_json_peek(r) != KB_JSON_STRING || !kb_json_read_string(r, &v, NULL) ||
                v.len == 0)
                return FALSE;
            if (k == 2)
                uids[*n] = v;
        }
        if (mrc != 0 || seen != (1u << G_N_ELEMENTS(keys)) - 1)
            return FALSE;
        if (text_repeated(uids, *n))
            return FALSE;
        (*n)++;
    }
    return rc == 0;
}

gboolean kas_dra_first_status_text(const char *text, gsize len, const char *spec, gsize spec_len)
{
    static const char *const keys[] = {"allocation", "reservedFor"};
    if (!text_printed_as_is(text, len))
        return FALSE;
    KbJsonReader r;
    kb_json_reader_init(&r, text, len);
    guint seen = 0, reserved = 0;
    KbJsonStr key;
    int rc = -1;
    gboolean ok = kb_json_peek(&r) == KB_JSON_OBJECT && kb_json_object_begin(&r, NULL);
    while (ok && (rc = kb_json_object_next(&r, &key, NULL)) == 1) {
        int k = text_key(key, keys, G_N_ELEMENTS(keys), &seen);
        ok = k == 0   ? text_allocation(&r, spec, spec_len)
             : k == 1 ? text_reserved_for(&r, &reserved)
                      : FALSE;
    }
    /* not empty (a first status), reservations only beside an allocation */
    ok = ok && rc == 0 && kb_json_finish(&r, NULL) && seen != 0 &&
         (reserved == 0 || (seen & 1u) != 0);
    kb_json_reader_clear(&r);
    return ok;
}

/* ---- pods ----------------------------------------------------------------------------------- */

static gboolean pod_claim_named(json_object *claims, const char *name)
{
    for (gsize i = 0; i < arr_len(claims); i++)
        if (g_strcmp0(kas_json_get_string(arr_at(claims, i), "name"), name) == 0)
            return TRUE;
    return FALSE;
}

static gint str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* validateResourceClaimNames: a container's resources.claims name entries of the pod's. */
static void check_container_claims(KasFieldErrors *errs, const char *base, json_object *cclaims,
                                   json_object *pod_claims)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (gsize i = 0; i < arr_len(cclaims); i++) {
        json_object *c = arr_at(cclaims, i);
        g_autofree char *f = g_strdup_printf("%s[%zu]", base, i);
        const char *name = kas_json_get_string(c, "name");
        if (name == NULL || name[0] == '\0') {
            kas_field_errors_add(errs, f, "Required value");
            continue;
        }
        const char *req = kas_json_get_string(c, "request");
        char *key = g_strdup(name);
        if (req != NULL && req[0] != '\0') {
            g_autofree char *rp = g_strdup_printf("%s.request", f);
            check_label(errs, rp, req);
            g_free(key);
            key = g_strdup_printf("%s/%s", name, req);
        }
        if (!g_hash_table_add(seen, key))
            kas_field_errors_addf(errs, f, "Duplicate value: \"%s\"", name);
        if (pod_claim_named(pod_claims, name))
            continue;
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        for (gsize j = 0; j < arr_len(pod_claims); j++) {
            const char *n = kas_json_get_string(arr_at(pod_claims, j), "name");
            if (n != NULL && n[0] != '\0')
                g_ptr_array_add(names, (gpointer)n);
        }
        g_ptr_array_sort(names, str_ptr_cmp);
        g_ptr_array_add(names, NULL);
        g_autofree char *list = g_strjoinv(", ", (char **)names->pdata);
        if (names->len == 1)
            kas_field_errors_addf(errs, f,
                                  "Not found: \"%s\": must be one of the names in "
                                  "pod.spec.resourceClaims which is empty",
                                  name);
        else
            kas_field_errors_addf(errs, f,
                                  "Not found: \"%s\": must be one of the names in "
                                  "pod.spec.resourceClaims: %s",
                                  name, list);
    }
}

/* The value of a PodResourceClaim error: Go's %#v when neither source is set (what the real
 * server prints); with both set it would print two addresses, so the claim's JSON. */
static char *pod_claim_value(json_object *c)
{
    if (kas_json_get(c, "resourceClaimName") != NULL ||
        kas_json_get(c, "resourceClaimTemplateName") != NULL)
        return g_strdup(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
    const char *n = kas_json_get_string(c, "name");
    return g_strdup_printf("core.PodResourceClaim{Name:\"%s\", ResourceClaimName:(*string)(nil), "
                           "ResourceClaimTemplateName:(*string)(nil)}",
                           n != NULL ? n : "");
}

static void check_pod_claim(KasFieldErrors *errs, const char *base, json_object *c,
                            GHashTable *names)
{
    g_autofree char *np = g_strdup_printf("%s.name", base);
    const char *name = kas_json_get_string(c, "name");
    if (name == NULL || name[0] == '\0') {
        kas_field_errors_add(errs, np, "Required value");
    } else if (g_hash_table_contains(names, name)) {
        kas_field_errors_addf(errs, np, "Duplicate value: \"%s\"", name);
    } else {
        check_label(errs, np, name);
        g_hash_table_add(names, (gpointer)name);
    }
    const char *rc = kas_json_get_string(c, "resourceClaimName");
    const char *rct = kas_json_get_string(c, "resourceClaimTemplateName");
    g_autofree char *v = pod_claim_value(c);
    if (rc != NULL && rct != NULL)
        kas_field_errors_addf(errs, base,
                              "Invalid value: %s: at most one of `resourceClaimName` or "
                              "`resourceClaimTemplateName` may be specified",
                              v);
    if (rc == NULL && rct == NULL)
        kas_field_errors_addf(errs, base,
                              "Invalid value: %s: must specify one of: `resourceClaimName`, "
                              "`resourceClaimTemplateName`",
                              v);
    g_autofree char *rcp = g_strdup_printf("%s.resourceClaimName", base);
    g_autofree char *rctp = g_strdup_printf("%s.resourceClaimTemplateName", base);
    if (rc != NULL)
        check_subdomain(errs, rcp, rc);
    if (rct != NULL)
        check_subdomain(errs, rctp, rct);
}

void kas_dra_validate_pod(json_object *spec, KasFieldErrors *errs)
{
    json_object *claims = kas_json_get(spec, "resourceClaims");
    g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
    for (gsize i = 0; i < arr_len(claims); i++) {
        g_autofree char *f = g_strdup_printf("spec.resourceClaims[%zu]", i);
        check_pod_claim(errs, f, arr_at(claims, i), names);
    }
    static const char *const lists[] = {"initContainers", "containers"};
    for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
        json_object *cs = kas_json_get(spec, lists[l]);
        for (gsize i = 0; i < arr_len(cs); i++) {
            g_autofree char *f = g_strdup_printf("spec.%s[%zu].resources.claims", lists[l], i);
            check_container_claims(errs, f, kas_json_get(arr_at(cs, i), "resources.claims"),
                                   claims);
        }
    }
}

void kas_dra_validate_pod_status(json_object *pod, KasFieldErrors *errs)
{
    json_object *claims = kas_json_get(pod, "spec.resourceClaims");
    json_object *st = kas_json_get(pod, "status.resourceClaimStatuses");
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (gsize i = 0; i < arr_len(st); i++) {
        json_object *s = arr_at(st, i);
        g_autofree char *f = g_strdup_printf("status.resourceClaimStatuses[%zu].name", i);
        const char *name = kas_json_get_string(s, "name");
        if (name == NULL)
            name = "";
        if (!pod_claim_named(claims, name))
            kas_field_errors_addf(errs, f,
                                  "Invalid value: \"%s\": must match the name of an entry in "
                                  "`spec.resourceClaims`",
                                  name);
        if (!g_hash_table_add(seen, (gpointer)name))
            kas_field_errors_addf(errs, f, "Duplicate value: \"%s\"", name);
        const char *rc = kas_json_get_string(s, "resourceClaimName");
        if (rc != NULL)
            check_subdomain(errs, f, rc);
    }
}
