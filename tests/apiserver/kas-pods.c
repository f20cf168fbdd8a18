/* Pod defaults, admission and validation as kube-apiserver 1.19 (see kas-pods.h). */
#include "tests/apiserver/kas-pods.h"

#include <string.h>

#include "kube/kb-quantity.h"
#include "tests/apiserver/kas-dra.h"
#include "tests/apiserver/kas-gang.h"
#include "tests/apiserver/kas-json.h"

/* ---- defaults ------------------------------------------------------------------------------- */

static void set_default_string(json_object *obj, const char *key, const char *value)
{
    if (kas_json_get(obj, key) == NULL)
        kas_json_set_string(obj, key, value);
}

/* Quantities come back in canonical form ("2000m" -> "2", "1024Mi" -> "1Gi"). A value that does
 * not parse is left alone (the decoder refuses it before this runs). */
static void canonical_quantities(json_object *list)
{
    if (!json_object_is_type(list, json_type_object))
        return;
    json_object_object_foreach(list, k, v)
    {
        KbQuantity q;
        if (!json_object_is_type(v, json_type_string) ||
            !kb_quantity_parse(json_object_get_string(v), &q, NULL))
            continue;
        g_autofree char *s = kb_quantity_format(&q);
        json_object_object_add(list, k, json_object_new_string(s));
    }
}

static void container_defaults(json_object *c)
{
    json_object *res = kas_json_ensure_object(c, "resources");
    json_object *limits = kas_json_get(res, "limits");
    if (json_object_is_type(limits, json_type_object) && json_object_object_length(limits) > 0) {
        json_object *req = kas_json_ensure_object(res, "requests");
        json_object_object_foreach(limits, k, v)
        {
            /* resource names have dots: no kas_json_get() on them */
            if (!json_object_object_get_ex(req, k, NULL))
                json_object_object_add(req, k, json_object_get(v));
        }
    }
    const char *image = kas_json_get_string(c, "image");
    const char *slash = image != NULL ? strrchr(image, '/') : NULL;
    const char *tag_part = slash != NULL ? slash : image;
    gboolean latest = image == NULL ||
                      (strchr(tag_part, ':') == NULL && strchr(image, '@') == NULL) ||
                      g_str_has_suffix(image, ":latest");
    set_default_string(c, "imagePullPolicy", latest ? "Always" : "IfNotPresent");
    set_default_string(c, "terminationMessagePath", "/dev/termination-log");
    set_default_string(c, "terminationMessagePolicy", "File");
}

void kas_pods_canonical(json_object *pod)
{
    static const char *const lists[] = {"containers", "initContainers"};
    for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
        json_object *cs =
                kas_json_get(pod, lists[l][0] == 'c' ? "spec.containers" : "spec.initContainers");
        for (gsize i = 0;
             json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++) {
            json_object *res = kas_json_get(json_object_array_get_idx(cs, i), "resources");
            canonical_quantities(kas_json_get(res, "limits"));
            canonical_quantities(kas_json_get(res, "requests"));
        }
    }
}

void kas_pods_defaults(json_object *pod)
{
    json_object *spec = kas_json_ensure_object(pod, "spec");
    set_default_string(spec, "schedulerName", "default-scheduler");
    set_default_string(spec, "restartPolicy", "Always");
    set_default_string(spec, "dnsPolicy", "ClusterFirst");
    if (kas_json_get(spec, "terminationGracePeriodSeconds") == NULL)
        json_object_object_add(spec, "terminationGracePeriodSeconds", json_object_new_int(30));
    if (kas_json_get(spec, "securityContext") == NULL)
        json_object_object_add(spec, "securityContext", json_object_new_object());
    if (kas_json_get(spec, "enableServiceLinks") == NULL)
        json_object_object_add(spec, "enableServiceLinks", json_object_new_boolean(TRUE));
    static const char *const lists[] = {"containers", "initContainers"};
    for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
        json_object *cs = kas_json_get(spec, lists[l]);
        for (gsize i = 0;
             json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++) {
            json_object *c = json_object_array_get_idx(cs, i);
            if (json_object_is_type(c, json_type_object))
                container_defaults(c);
        }
    }
}

/* Does a toleration in @tols already cover @key with effect NoExecute? */
static gboolean tolerated(json_object *tols, const char *key)
{
    for (gsize i = 0;
         json_object_is_type(tols, json_type_array) && i < json_object_array_length(tols); i++) {
        json_object *t = json_object_array_get_idx(tols, i);
        const char *k = kas_json_get_string(t, "key");
        const char *op = kas_json_get_string(t, "operator");
        const char *eff = kas_json_get_string(t, "effect");
        gboolean key_ok = g_strcmp0(k, key) == 0 ||
                          ((k == NULL || k[0] == '\0') && g_strcmp0(op, "Exists") == 0);
        gboolean eff_ok = eff == NULL || eff[0] == '\0' || strcmp(eff, "NoExecute") == 0;
        if (key_ok && eff_ok)
            return TRUE;
    }
    return FALSE;
}

void kas_pods_admit_create(json_object *pod)
{
    json_object *spec = kas_json_ensure_object(pod, "spec");
    static const char *const keys[] = {"node.kubernetes.io/not-ready",
                                       "node.kubernetes.io/unreachable"};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
        json_object *tols = kas_json_get(spec, "tolerations");
        if (tolerated(tols, keys[i]))
            continue;
        if (!json_object_is_type(tols, json_type_array)) {
            tols = json_object_new_array();
            json_object_object_add(spec, "tolerations", tols);
        }
        json_object *t = json_object_new_object();
        kas_json_set_string(t, "key", keys[i]);
        kas_json_set_string(t, "operator", "Exists");
        kas_json_set_string(t, "effect", "NoExecute");
        json_object_object_add(t, "tolerationSeconds", json_object_new_int(300));
        json_object_array_add(tols, t);
    }
}

gboolean kas_pods_gated(json_object *pod)
{
    json_object *g = kas_json_get(pod, "spec.schedulingGates");
    return json_object_is_type(g, json_type_array) && json_object_array_length(g) > 0;
}

/* ---- resources ------------------------------------------------------------------------------ */

/* v1helper.IsNativeResource: no domain, or a kubernetes.io one. */
static gboolean native_resource(const char *name)
{
    return strchr(name, '/') == NULL || strstr(name, "kubernetes.io/") != NULL;
}

static gboolean overcommit_allowed(const char *name)
{
    return native_resource(name) && !g_str_has_prefix(name, "hugepages-");
}

static gboolean integer_resource(const char *name)
{
    return !native_resource(name) && !g_str_has_prefix(name, "requests.");
}

/* Go's %#v of a resource.Quantity parsed from @s (as field.Invalid prints a Quantity value):
 * resource.Quantity{i:resource.int64Amount{value:5, scale:-1}, ...}. Reproduced for plain
 * decimal numbers, which is what a fractional extended resource is in practice; other forms get
 * the quantity's string. */
static char *go_quantity(const char *s)
{
    const char *p = s;
    gboolean neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    gsize whole = strspn(p, "0123456789");
    const char *frac = p[whole] == '.' ? p + whole + 1 : p + whole;
    gsize nfrac = p[whole] == '.' ? strspn(frac, "0123456789") : 0;
    const char *suffix = frac + nfrac;
    int exponent = 0;
    const char *format = "DecimalSI";
    if (strcmp(suffix, "m") == 0)
        exponent = -3;
    else if (strcmp(suffix, "k") == 0)
        exponent = 3;
    else if (strcmp(suffix, "M") == 0)
        exponent = 6;
    else if (strcmp(suffix, "G") == 0)
        exponent = 9;
    else if (suffix[0] != '\0')
        return g_strdup_printf("\"%s\"", s);
    g_autofree char *shifted = g_strdup_printf("%.*s%.*s", (int)whole, p, (int)nfrac, frac);
    if (shifted[0] == '\0' || strlen(shifted) > 18)
        return g_strdup_printf("\"%s\"", s);
    gint64 value = g_ascii_strtoll(shifted, NULL, 10) * (neg ? -1 : 1);
    int scale = exponent - (int)nfrac;
    /* ParseQuantity keeps the string only when it is already canonical */
    gboolean cached = scale % 3 == 0 && !g_str_has_suffix(shifted, "000") && shifted[0] != '0';
    return g_strdup_printf("resource.Quantity{i:resource.int64Amount{value:%" G_GINT64_FORMAT
                           ", scale:%d}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"%s\", "
                           "Format:\"%s\"}",
                           value, scale, cached ? s : "", format);
}

static gint64 milli(const char *s, gboolean *ok)
{
    gint64 v = 0;
    *ok = s != NULL && kb_quantity_parse_milli(s, &v, NULL);
    return v;
}

static char *quantity_string(const char *s)
{
    KbQuantity q;
    if (!kb_quantity_parse(s, &q, NULL))
        return g_strdup(s);
    return kb_quantity_format(&q);
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of @map, sorted (new array of borrowed strings). */
static GPtrArray *sorted_keys(json_object *map)
{
    GPtrArray *keys = g_ptr_array_new();
    if (json_object_is_type(map, json_type_object)) {
        json_object_object_foreach(map, k, v)
        {
            (void)v;
            g_ptr_array_add(keys, k);
        }
    }
    g_ptr_array_sort(keys, cmp_str);
    return keys;
}

static void quantity_value(const char *field, const char *name, json_object *v,
                           KasFieldErrors *errs)
{
    const char *s = json_object_get_string(v);
    gboolean ok;
    gint64 m = milli(s, &ok);
    if (!ok)
        return;
    if (m < 0) {
        g_autofree char *qs = quantity_string(s);
        kas_field_errors_addf(errs, field,
                              "Invalid value: \"%s\": must be greater than or equal to 0", qs);
    }
    if (integer_resource(name) && m % 1000 != 0) {
        g_autofree char *gq = go_quantity(s);
        kas_field_errors_addf(errs, field, "Invalid value: %s: must be an integer", gq);
    }
}

/* ValidateResourceRequirements of one container at @path. */
static void validate_resources(const char *path, json_object *res, KasFieldErrors *errs)
{
    json_object *limits = kas_json_get(res, "limits"), *requests = kas_json_get(res, "requests");
    g_autofree char *lim_path = g_strdup_printf("%s.resources.limits", path);
    g_autofree char *req_path = g_strdup_printf("%s.resources.requests", path);
    g_autoptr(GPtrArray) lkeys = sorted_keys(limits);
    for (guint i = 0; i < lkeys->len; i++) {
        const char *k = g_ptr_array_index(lkeys, i);
        g_autofree char *f = g_strdup_printf("%s[%s]", lim_path, k);
        json_object *lv = NULL;
        json_object_object_get_ex(limits, k, &lv);
        quantity_value(f, k, lv, errs);
    }
    g_autoptr(GPtrArray) rkeys = sorted_keys(requests);
    for (guint i = 0; i < rkeys->len; i++) {
        const char *k = g_ptr_array_index(rkeys, i);
        g_autofree char *f = g_strdup_printf("%s[%s]", req_path, k);
        json_object *rv = NULL, *lv = NULL;
        json_object_object_get_ex(requests, k, &rv);
        quantity_value(f, k, rv, errs);
        gboolean rok, lok = FALSE;
        gint64 r = milli(json_object_get_string(rv), &rok);
        gint64 l = 0;
        if (json_object_is_type(limits, json_type_object) &&
            json_object_object_get_ex(limits, k, &lv))
            l = milli(json_object_get_string(lv), &lok);
        g_autofree char *rs = quantity_string(json_object_get_string(rv));
        if (lv != NULL && rok && lok) {
            if (r != l && !overcommit_allowed(k))
                kas_field_errors_addf(errs, req_path,
                                      "Invalid value: \"%s\": must be equal to %s limit", rs, k);
            else if (r > l)
                kas_field_errors_addf(
                        errs, req_path,
                        "Invalid value: \"%s\": must be less than or equal to %s limit", rs, k);
        } else if (lv == NULL && !overcommit_allowed(k)) {
            kas_field_errors_add(
                    errs, lim_path,
                    "Required value: Limit must be set for non overcommitable resources");
        }
    }
}

/* ---- pod-level resources (spec.resources, PodLevelResources, 1.32+) ------------------------ */

/* What pod-level resources may name (component-helpers' IsSupportedPodLevelResource). */
static gboolean pod_level_supported(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           g_str_has_prefix(name, "hugepages-");
}

/* validateResourceName's standard names (the pod-level subset of them). */
static gboolean standard_resource(const char *name)
{
    static const char *const std[] = {
            "cpu",           "memory",          "ephemeral-storage", "pods",
            "storage",       "requests.cpu",    "requests.memory",   "limits.cpu",
            "limits.memory", "requests.storage"};
    for (guint i = 0; i < G_N_ELEMENTS(std); i++)
        if (strcmp(name, std[i]) == 0)
            return TRUE;
    return g_str_has_prefix(name, "hugepages-") || g_str_has_prefix(name, "requests.hugepages-");
}

/* validatePodResourceName: FALSE (and the error) for a name pod-level resources cannot take. */
static gboolean pod_level_name(const char *field, const char *name, KasFieldErrors *errs)
{
    if (strchr(name, '/') == NULL && !standard_resource(name)) {
        kas_field_errors_addf(errs, field,
                              "Invalid value: \"%s\": must be a standard resource type or fully "
                              "qualified",
                              name);
        return FALSE;
    }
    if (pod_level_supported(name))
        return TRUE;
    kas_field_errors_addf(errs, field,
                          "Unsupported value: \"%s\": supported values: \"cpu\", \"hugepages-\", "
                          "\"memory\"",
                          name);
    return FALSE;
}

/* @milli (milli-units) as apimachinery prints a sum that started with @like's format. */
static char *milli_string(gint64 milli, const char *like)
{
    KbQuantity q = {0}, l = {0};
    g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT "m", milli);
    if (!kb_quantity_parse(s, &q, NULL))
        return g_strdup(s);
    if (like != NULL && kb_quantity_parse(like, &l, NULL))
        q.format = l.format;
    return kb_quantity_format(&q);
}

/* validateResourceRequirements for the pod level: names, signs, requests within limits,
 * hugepages limited and paired with cpu or memory. */
static void pod_level_requirements(json_object *res, KasFieldErrors *errs)
{
    json_object *limits = kas_json_get(res, "limits"), *requests = kas_json_get(res, "requests");
    gboolean cpu_mem = FALSE, huge = FALSE;
    g_autoptr(GPtrArray) lkeys = sorted_keys(limits);
    for (guint i = 0; i < lkeys->len; i++) {
        const char *k = g_ptr_array_index(lkeys, i);
        g_autofree char *f = g_strdup_printf("spec.resources.limits[%s]", k);
        if (pod_level_name(f, k, errs))
            quantity_value(f, k, json_object_object_get(limits, k), errs);
        huge |= g_str_has_prefix(k, "hugepages-");
        cpu_mem |= strcmp(k, "cpu") == 0 || strcmp(k, "memory") == 0;
    }
    g_autoptr(GPtrArray) rkeys = sorted_keys(requests);
    for (guint i = 0; i < rkeys->len; i++) {
        const char *k = g_ptr_array_index(rkeys, i);
        g_autofree char *f = g_strdup_printf("spec.resources.requests[%s]", k);
        huge |= g_str_has_prefix(k, "hugepages-");
        cpu_mem |= strcmp(k, "cpu") == 0 || strcmp(k, "memory") == 0;
        if (!pod_level_name(f, k, errs))
            continue;
        json_object *rv = json_object_object_get(requests, k), *lv = NULL;
        quantity_value(f, k, rv, errs);
        if (json_object_is_type(limits, json_type_object))
            json_object_object_get_ex(limits, k, &lv);
        gboolean rok, lok = FALSE;
        gint64 r = milli(json_object_get_string(rv), &rok), l = 0;
        if (lv != NULL)
            l = milli(json_object_get_string(lv), &lok);
        g_autofree char *rs = quantity_string(json_object_get_string(rv));
        g_autofree char *ls = lv != NULL ? quantity_string(json_object_get_string(lv)) : NULL;
        if (lv != NULL && rok && lok && r != l && !overcommit_allowed(k))
            kas_field_errors_addf(errs, "spec.resources.requests",
                                  "Invalid value: \"%s\": must be equal to %s limit of %s", rs, k,
                                  ls);
        else if (lv != NULL && rok && lok && r > l)
            kas_field_errors_addf(errs, "spec.resources.requests",
                                  "Invalid value: \"%s\": must be less than or equal to %s limit "
                                  "of %s",
                                  rs, k, ls);
        else if (lv == NULL && !overcommit_allowed(k))
            kas_field_errors_add(
                    errs, "spec.resources.limits",
                    "Required value: Limit must be set for non overcommitable resources");
    }
    if (huge && !cpu_mem)
        kas_field_errors_add(errs, "spec.resources", "Forbidden: HugePages require cpu or memory");
}

/* The containers' @side ("requests" or "limits") of @name summed, as PodRequests/PodLimits
 * aggregate them without pod-level values: the sum over containers, or the largest init
 * container when that is more. FALSE when no container names @name. @like receives the first
 * value seen (borrowed), for the sum's format. */
static gboolean container_aggregate(json_object *spec, const char *side, const char *name,
                                    gint64 *out, const char **like)
{
    gint64 sum = 0, init_max = 0;
    gboolean any = FALSE;
    static const char *const lists[] = {"containers", "initContainers"};
    for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
        json_object *cs = kas_json_get(spec, lists[l]);
        gsize n = json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
        for (gsize i = 0; i < n; i++) {
            json_object *m = kas_json_get(json_object_array_get_idx(cs, i), "resources");
            json_object *v = json_object_is_type(m, json_type_object)
                                     ? json_object_object_get(kas_json_get(m, side), name)
                                     : NULL;
            gboolean ok;
            gint64 q = milli(json_object_get_string(v), &ok);
            if (v == NULL || !ok)
                continue;
            if (!any)
                *like = json_object_get_string(v);
            any = TRUE;
            if (l == 0)
                sum += q;
            else
                init_max = MAX(init_max, q);
        }
    }
    *out = MAX(sum, init_max);
    return any;
}

/* validatePodResourceConsistency: pod-level requests cover the containers' aggregate requests,
 * a pod-level hugepages limit their aggregate limits, and no container's limit passes the pod's. */
static void pod_level_consistency(json_object *spec, json_object *res, KasFieldErrors *errs)
{
    static const char *const sides[] = {"requests", "limits"};
    for (guint s = 0; s < G_N_ELEMENTS(sides); s++) {
        json_object *pod = kas_json_get(res, sides[s]);
        g_autoptr(GPtrArray) keys = sorted_keys(pod);
        for (guint i = 0; i < keys->len; i++) {
            const char *k = g_ptr_array_index(keys, i), *like = NULL;
            const char *v = json_object_get_string(json_object_object_get(pod, k));
            gboolean ok;
            gint64 agg, mine = milli(v, &ok);
            if ((s == 1 && !g_str_has_prefix(k, "hugepages-")) || !ok ||
                !container_aggregate(spec, sides[s], k, &agg, &like) || agg <= mine)
                continue;
            g_autofree char *f = g_strdup_printf("spec.resources.%s[%s]", sides[s], k);
            g_autofree char *ps = quantity_string(v);
            g_autofree char *as = milli_string(agg, like);
            kas_field_errors_addf(errs, f,
                                  "Invalid value: \"%s\": must be greater than or equal to "
                                  "aggregate container %s of %s",
                                  ps, sides[s], as);
        }
    }
    json_object *pod_limits = kas_json_get(res, "limits");
    json_object *cs = kas_json_get(spec, "containers");
    gsize n = json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
    for (gsize i = 0; i < n && json_object_is_type(pod_limits, json_type_object); i++) {
        json_object *lim = kas_json_get(json_object_array_get_idx(cs, i), "resources.limits");
        g_autoptr(GPtrArray) keys = sorted_keys(lim);
        for (guint j = 0; j < keys->len; j++) {
            const char *k = g_ptr_array_index(keys, j);
            const char *cv = json_object_get_string(json_object_object_get(lim, k));
            const char *pv = json_object_get_string(json_object_object_get(pod_limits, k));
            gboolean cok, pok;
            gint64 c = milli(cv, &cok), p = milli(pv, &pok);
            if (pv == NULL || !cok || !pok || c <= p)
                continue;
            /* the path as the API server builds it, from the pod-level resources' path */
            g_autofree char *f = g_strdup_printf("spec.resources.containers[%zu][%s].limits", i, k);
            g_autofree char *cs_ = quantity_string(cv);
            g_autofree char *ps = quantity_string(pv);
            kas_field_errors_addf(errs, f,
                                  "Invalid value: \"%s\": must be less than or equal to pod "
                                  "limits of %s",
                                  cs_, ps);
        }
    }
}

/* validatePodResources: spec.resources of the whole pod. */
static void validate_pod_resources(json_object *spec, KasFieldErrors *errs)
{
    json_object *res = kas_json_get(spec, "resources");
    if (!json_object_is_type(res, json_type_object))
        return;
    if (g_strcmp0(kas_json_get_string(kas_json_get(spec, "os"), "name"), "windows") == 0) {
        kas_field_errors_add(errs, "spec.resources", "Forbidden: may not be set for a windows pod");
        return;
    }
    pod_level_requirements(res, errs);
    pod_level_consistency(spec, res, errs);
}

/* ---- validation ----------------------------------------------------------------------------- */

void kas_annotations_validate(json_object *meta, guint copies, KasFieldErrors *errs)
{
    json_object *ann = kas_json_get(meta, "annotations");
    if (!json_object_is_type(ann, json_type_object))
        return;
    gsize total = 0;
    json_object_object_foreach(ann, k, v)
    {
        total += strlen(k);
        if (json_object_is_type(v, json_type_string))
            total += (gsize)json_object_get_string_len(v);
    }
    if (total <= KAS_ANNOTATIONS_MAX)
        return;
    for (guint i = 0; i < copies; i++)
        kas_field_errors_addf(errs, "metadata.annotations", "Too long: must have at most %d bytes",
                              KAS_ANNOTATIONS_MAX);
}

static void validate_containers(json_object *spec, const char *list, gboolean required,
                                KasFieldErrors *errs)
{
    json_object *cs = kas_json_get(spec, list);
    gsize n = json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
    g_autofree char *base = g_strdup_printf("spec.%s", list);
    if (n == 0 && required) {
        kas_field_errors_add(errs, base, "Required value");
        return;
    }
    for (gsize i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        g_autofree char *path = g_strdup_printf("%s[%zu]", base, i);
        const char *name = kas_json_get_string(c, "name");
        if (name == NULL || name[0] == '\0') {
            g_autofree char *f = g_strdup_printf("%s.name", path);
            kas_field_errors_add(errs, f, "Required value");
        }
        const char *image = kas_json_get_string(c, "image");
        if (image == NULL || image[0] == '\0') {
            g_autofree char *f = g_strdup_printf("%s.image", path);
            kas_field_errors_add(errs, f, "Required value");
        }
        validate_resources(path, kas_json_get(c, "resources"), errs);
    }
}

static void validate_gates(json_object *spec, KasFieldErrors *errs)
{
    json_object *gates = kas_json_get(spec, "schedulingGates");
    gsize n = json_object_is_type(gates, json_type_array) ? json_object_array_length(gates) : 0;
    for (gsize i = 0; i < n; i++) {
        const char *name = kas_json_get_string(json_object_array_get_idx(gates, i), "name");
        g_autofree char *f = g_strdup_printf("spec.schedulingGates[%zu]", i);
        if (name == NULL || name[0] == '\0') {
            kas_field_errors_add(errs, f, "Required value: name part must be non-empty");
            continue;
        }
        for (gsize j = 0; j < i; j++)
            if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(gates, j), "name"), name) ==
                0)
                kas_field_errors_addf(errs, f, "Duplicate value: \"%s\"", name);
    }
}

/* The matchFields of one node selector term at @path, as kube-apiserver's
 * validateNodeFieldSelectorRequirement checks them: operator In or NotIn with exactly one value,
 * and metadata.name, the only node field selector key. */
static void validate_match_fields(json_object *term, const char *path, KasFieldErrors *errs)
{
    json_object *fields = kas_json_get(term, "matchFields");
    gsize n = json_object_is_type(fields, json_type_array) ? json_object_array_length(fields) : 0;
    for (gsize i = 0; i < n; i++) {
        json_object *req = json_object_array_get_idx(fields, i);
        const char *op = kas_json_get_string(req, "operator");
        json_object *values = kas_json_get(req, "values");
        gsize n_values =
                json_object_is_type(values, json_type_array) ? json_object_array_length(values) : 0;
        g_autofree char *at = g_strdup_printf("%s.matchFields[%zu]", path, i);
        g_autofree char *f_op = g_strdup_printf("%s.operator", at);
        g_autofree char *f_values = g_strdup_printf("%s.values", at);
        g_autofree char *f_key = g_strdup_printf("%s.key", at);
        if (g_strcmp0(op, "In") == 0 || g_strcmp0(op, "NotIn") == 0) {
            if (n_values != 1)
                kas_field_errors_add(errs, f_values,
                                     "Required value: must be only one value when `operator` is "
                                     "'In' or 'NotIn' for node field selector");
        } else {
            kas_field_errors_addf(errs, f_op,
                                  "Invalid value: \"%s\": not a valid selector operator",
                                  op != NULL ? op : "");
        }
        const char *key = kas_json_get_string(req, "key");
        if (g_strcmp0(key, "metadata.name") != 0)
            kas_field_errors_addf(errs, f_key,
                                  "Invalid value: \"%s\": not a valid field selector key",
                                  key != NULL ? key : "");
    }
}

/* matchFields in the node affinity's required terms and preferred terms' preferences. */
static void validate_node_affinity(json_object *spec, KasFieldErrors *errs)
{
    const char *base = "spec.affinity.nodeAffinity";
    json_object *na = kas_json_get(spec, "affinity.nodeAffinity");
    json_object *terms =
            kas_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    gsize n = json_object_is_type(terms, json_type_array) ? json_object_array_length(terms) : 0;
    for (gsize i = 0; i < n; i++) {
        g_autofree char *path = g_strdup_printf(
                "%s.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%zu]", base,
                i);
        validate_match_fields(json_object_array_get_idx(terms, i), path, errs);
    }
    json_object *preferred = kas_json_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
    n = json_object_is_type(preferred, json_type_array) ? json_object_array_length(preferred) : 0;
    for (gsize i = 0; i < n; i++) {
        g_autofree char *path = g_strdup_printf(
                "%s.preferredDuringSchedulingIgnoredDuringExecution[%zu].preference", base, i);
        validate_match_fields(kas_json_get(json_object_array_get_idx(preferred, i), "preference"),
                              path, errs);
    }
}

void kas_pods_validate(json_object *pod, KasFieldErrors *errs)
{
    kas_annotations_validate(kas_json_get(pod, "metadata"), 1, errs);
    json_object *spec = kas_json_get(pod, "spec");
    validate_containers(spec, "initContainers", FALSE, errs);
    validate_containers(spec, "containers", TRUE, errs);
    validate_pod_resources(spec, errs);
    validate_node_affinity(spec, errs);
    validate_gates(spec, errs);
    kas_gang_validate_pod(spec, errs);
    kas_dra_validate_pod(spec, errs);
}

/* ---- updates -------------------------------------------------------------------------------- */

/* core.PodSpec's fields in declaration order (what go-cmp walks), with how a value prints:
 * 's' string, 'p' pointer to a scalar, 'o' pointer to a struct (type name after ':'), 'l' slice,
 * 'm' map. */
static const struct {
    const char *json, *go, *type;
} spec_fields[] = {
        {"volumes", "Volumes", "l"},
        {"initContainers", "InitContainers", "l"},
        {"containers", "Containers", "l"},
        {"ephemeralContainers", "EphemeralContainers", "l"},
        {"restartPolicy", "RestartPolicy", "s"},
        {"terminationGracePeriodSeconds", "TerminationGracePeriodSeconds", "p"},
        {"activeDeadlineSeconds", "ActiveDeadlineSeconds", "p"},
        {"dnsPolicy", "DNSPolicy", "s"},
        {"nodeSelector", "NodeSelector", "m"},
        {"serviceAccountName", "ServiceAccountName", "s"},
        {"automountServiceAccountToken", "AutomountServiceAccountToken", "p"},
        {"nodeName", "NodeName", "s"},
        {"securityContext", "SecurityContext", "o:core.PodSecurityContext"},
        {"imagePullSecrets", "ImagePullSecrets", "l"},
        {"hostname", "Hostname", "s"},
        {"subdomain", "Subdomain", "s"},
        {"setHostnameAsFQDN", "SetHostnameAsFQDN", "p"},
        {"affinity", "Affinity", "o:core.Affinity"},
        {"schedulerName", "SchedulerName", "s"},
        {"tolerations", "Tolerations", "l"},
        {"hostAliases", "HostAliases", "l"},
        {"priorityClassName", "PriorityClassName", "s"},
        {"priority", "Priority", "p"},
        {"preemptionPolicy", "PreemptionPolicy", "p"},
        {"dnsConfig", "DNSConfig", "o:core.PodDNSConfig"},
        {"readinessGates", "ReadinessGates", "l"},
        {"runtimeClassName", "RuntimeClassName", "p"},
        {"overhead", "Overhead", "m"},
        {"enableServiceLinks", "EnableServiceLinks", "p"},
        {"topologySpreadConstraints", "TopologySpreadConstraints", "l"},
        /* newer than 1.19 (SPEC_FIELDS_1_19): listed only up to the last one set */
        {"os", "OS", "o:core.PodOS"},
        {"schedulingGates", "SchedulingGates", "l"},
        {"resourceClaims", "ResourceClaims", "l"},
};

static void go_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_c(out, '\\');
        g_string_append_c(out, *p);
    }
    g_string_append_c(out, '"');
}

/* How go-cmp prints the value of field @i of a spec given as JSON (@v may be NULL). Structs and
 * non-empty collections are abbreviated ({...}): go-cmp would expand them. */
static void go_value(GString *out, guint i, json_object *v)
{
    const char *t = spec_fields[i].type;
    if (t[0] == 's') {
        go_string(out, v != NULL ? json_object_get_string(v) : "");
    } else if (v == NULL) {
        g_string_append(out, "nil");
    } else if (t[0] == 'p') {
        if (json_object_is_type(v, json_type_string)) {
            g_string_append(out, "&\"");
            g_string_append(out, json_object_get_string(v));
            g_string_append_c(out, '"');
        } else {
            g_string_append_printf(out, "&%s", json_object_to_json_string(v));
        }
    } else if (t[0] == 'o') {
        g_string_append_printf(out, "&%s{%s}", t + 2,
                               json_object_object_length(v) > 0 ? "..." : "");
    } else {
        g_string_append(out, "{...}");
    }
}

/* The fields of 1.19's core.PodSpec: its answers, recorded in tests/data/kube-apiserver-1.19,
 * count only these. */
#define SPEC_FIELDS_1_19 30

/* go-cmp's report of cmp.Diff(new, old) over core.PodSpec: changed fields as -new/+old, two
 * unchanged fields of context around them, longer runs elided as "... // N identical fields". */
static char *spec_diff(json_object *new_spec, json_object *old_spec)
{
    guint n = G_N_ELEMENTS(spec_fields);
    while (n > SPEC_FIELDS_1_19 && kas_json_get(new_spec, spec_fields[n - 1].json) == NULL &&
           kas_json_get(old_spec, spec_fields[n - 1].json) == NULL)
        n--;
    gboolean changed[G_N_ELEMENTS(spec_fields)], shown[G_N_ELEMENTS(spec_fields)];
    for (guint i = 0; i < n; i++) {
        json_object *a = kas_json_get(new_spec, spec_fields[i].json);
        json_object *b = kas_json_get(old_spec, spec_fields[i].json);
        changed[i] = !json_object_equal(a, b);
        shown[i] = FALSE;
    }
    for (guint i = 0; i < n; i++)
        for (guint j = i >= 2 ? i - 2 : 0; changed[i] && j <= i + 2 && j < n; j++)
            shown[j] = TRUE;
    gsize width = 0;
    for (guint i = 0; i < n; i++)
        if (shown[i])
            width = MAX(width, strlen(spec_fields[i].go) + 1);
    GString *out = g_string_new("  core.PodSpec{\n");
    guint run = 0;
    for (guint i = 0; i <= n; i++) {
        if (i < n && !shown[i]) {
            run++;
            continue;
        }
        if (run > 0)
            g_string_append_printf(out, "  \t... // %u identical fields\n", run);
        run = 0;
        if (i == n)
            break;
        const char *tags[2] = {changed[i] ? "- " : "  ", "+ "};
        json_object *vals[2] = {kas_json_get(new_spec, spec_fields[i].json),
                                kas_json_get(old_spec, spec_fields[i].json)};
        for (guint side = 0; side < (changed[i] ? 2u : 1u); side++) {
            g_string_append_printf(out, "%s\t%s:%*s", tags[side], spec_fields[i].go,
                                   (int)(width - strlen(spec_fields[i].go)), "");
            go_value(out, i, vals[side]);
            g_string_append(out, ",\n");
        }
    }
    g_string_append(out, "  }\n");
    return g_string_free(out, FALSE);
}

static void munge_images(json_object *munged, json_object *old_spec, const char *list)
{
    json_object *mc = kas_json_get(munged, list), *oc = kas_json_get(old_spec, list);
    if (!json_object_is_type(mc, json_type_array) || !json_object_is_type(oc, json_type_array) ||
        json_object_array_length(mc) != json_object_array_length(oc))
        return;
    for (gsize i = 0; i < json_object_array_length(mc); i++) {
        json_object *img = kas_json_get(json_object_array_get_idx(oc, i), "image");
        json_object *c = json_object_array_get_idx(mc, i);
        if (json_object_is_type(c, json_type_object) && img != NULL)
            json_object_object_add(c, "image", json_object_get(img));
    }
}

/* Only deletions of scheduling gates (1.27+). */
static void validate_gates_update(json_object *new_spec, json_object *old_spec,
                                  KasFieldErrors *errs)
{
    json_object *ng = kas_json_get(new_spec, "schedulingGates");
    json_object *og = kas_json_get(old_spec, "schedulingGates");
    for (gsize i = 0; json_object_is_type(ng, json_type_array) && i < json_object_array_length(ng);
         i++) {
        const char *name = kas_json_get_string(json_object_array_get_idx(ng, i), "name");
        gboolean old = FALSE;
        for (gsize j = 0;
             json_object_is_type(og, json_type_array) && j < json_object_array_length(og) && !old;
             j++)
            old = g_strcmp0(kas_json_get_string(json_object_array_get_idx(og, j), "name"), name) ==
                  0;
        if (!old) {
            g_autofree char *f = g_strdup_printf("spec.schedulingGates[%zu].name", i);
            kas_field_errors_addf(errs, f,
                                  "Forbidden: only deletion is allowed, but found new scheduling "
                                  "gate '%s'",
                                  name != NULL ? name : "");
        }
    }
}

/* Tolerations may only be added to (existing ones kept as they are, or a NoExecute one's
 * tolerationSeconds shortened): when so, the munged spec takes the old list. */
static gboolean tolerations_added_only(json_object *new_tols, json_object *old_tols)
{
    gsize on =
            json_object_is_type(old_tols, json_type_array) ? json_object_array_length(old_tols) : 0;
    for (gsize i = 0; i < on; i++) {
        json_object *o = json_object_array_get_idx(old_tols, i);
        gboolean found = FALSE;
        for (gsize j = 0; json_object_is_type(new_tols, json_type_array) &&
                          j < json_object_array_length(new_tols) && !found;
             j++)
            found = json_object_equal(o, json_object_array_get_idx(new_tols, j));
        if (!found)
            return FALSE;
    }
    return TRUE;
}

void kas_pods_validate_update(json_object *old_pod, json_object *new_pod, KasFieldErrors *errs)
{
    kas_annotations_validate(kas_json_get(new_pod, "metadata"), 4, errs);
    json_object *old_spec = kas_json_get(old_pod, "spec"),
                *new_spec = kas_json_get(new_pod, "spec");
    validate_gates(new_spec, errs);
    validate_gates_update(new_spec, old_spec, errs);
    json_object *munged = NULL;
    json_object_deep_copy(new_spec, &munged, NULL);
    if (munged == NULL)
        munged = json_object_new_object();
    munge_images(munged, old_spec, "containers");
    munge_images(munged, old_spec, "initContainers");
    /* ValidateImmutableField on spec.schedulingGroup: its own error, not a line of the diff
     * below (a pod never moves to another group, nor joins or leaves one). */
    json_object *old_sg = kas_json_get(old_spec, "schedulingGroup");
    if (!json_object_equal(kas_json_get(new_spec, "schedulingGroup"), old_sg))
        kas_field_errors_add(errs, "spec.schedulingGroup",
                             "Invalid value: \"object\": field is immutable");
    static const char *const free_keys[] = {"activeDeadlineSeconds", "schedulingGates",
                                            "schedulingGroup"};
    for (guint i = 0; i < G_N_ELEMENTS(free_keys); i++) {
        json_object *v = kas_json_get(old_spec, free_keys[i]);
        if (v != NULL)
            json_object_object_add(munged, free_keys[i], json_object_get(v));
        else
            json_object_object_del(munged, free_keys[i]);
    }
    if (tolerations_added_only(kas_json_get(new_spec, "tolerations"),
                               kas_json_get(old_spec, "tolerations"))) {
        json_object *v = kas_json_get(old_spec, "tolerations");
        if (v != NULL)
            json_object_object_add(munged, "tolerations", json_object_get(v));
        else
            json_object_object_del(munged, "tolerations");
    }
    if (!json_object_equal(munged, old_spec)) {
        g_autofree char *diff = spec_diff(munged, old_spec);
        kas_field_errors_addf(errs, "spec",
                              "Forbidden: pod updates may not change fields other than "
                              "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                              "`spec.activeDeadlineSeconds` or `spec.tolerations` (only additions "
                              "to existing tolerations)\n%s",
                              diff);
    }
    json_object_put(munged);
}
