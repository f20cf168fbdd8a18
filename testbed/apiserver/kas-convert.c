/* CRD conversion webhooks as kube-apiserver calls them; see kas-convert.h. */
#include "testbed/apiserver/kas-convert.h"

#include <curl/curl.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"

G_DEFINE_QUARK(kas - convert - error - quark, kas_convert_error)

struct KasConvert {
    KasStore *store;
    GHashTable *addresses; /* "ns/name:port" -> "host:port" */
    guint timeout_ms;
    gsize max_response;
};

/* ---- --service-address ------------------------------------------------------------------- */

static gboolean bad_address(GError **error, const char *spec, const char *why)
{
    g_set_error(error, KAS_CONVERT_ERROR, 0,
                "--service-address \"%s\": %s (want NAMESPACE/NAME:PORT=HOST:PORT)", spec, why);
    return FALSE;
}

static gboolean valid_port(const char *s)
{
    char *end = NULL;
    guint64 p = g_ascii_strtoull(s, &end, 10);
    return s[0] != '\0' && *end == '\0' && p >= 1 && p <= 65535;
}

static gboolean add_address(GHashTable *map, const char *spec, GError **error)
{
    const char *eq = strchr(spec, '=');
    if (eq == NULL)
        return bad_address(error, spec, "no '='");
    g_autofree char *svc = g_strndup(spec, (gsize)(eq - spec));
    const char *target = eq + 1;
    const char *slash = strchr(svc, '/');
    const char *colon = strrchr(svc, ':');
    if (slash == NULL || slash == svc || colon == NULL || colon < slash || colon == slash + 1 ||
        !valid_port(colon + 1))
        return bad_address(error, spec, "the service is not NAMESPACE/NAME:PORT");
    const char *tcolon = strrchr(target, ':');
    if (tcolon == NULL || tcolon == target || !valid_port(tcolon + 1))
        return bad_address(error, spec, "the address is not HOST:PORT");
    g_hash_table_replace(map, g_strdup(svc), g_strdup(target));
    return TRUE;
}

KasConvert *kas_convert_new(KasStore *store, const KasConvertOptions *opts, GError **error)
{
    g_autoptr(KasConvert) cv = g_new0(KasConvert, 1);
    cv->store = store;
    cv->addresses = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    cv->timeout_ms =
            opts != NULL && opts->timeout_ms > 0 ? opts->timeout_ms : KAS_CONVERT_TIMEOUT_MS;
    cv->max_response =
            opts != NULL && opts->max_response > 0 ? opts->max_response : KAS_CONVERT_MAX_RESPONSE;
    guint n = 0;
    for (const char *const *a = opts != NULL ? opts->service_addresses : NULL;
         a != NULL && *a != NULL; a++, n++) {
        if (n >= KAS_CONVERT_MAX_ADDRESSES) {
            g_set_error(error, KAS_CONVERT_ERROR, 0, "--service-address: more than %u given",
                        KAS_CONVERT_MAX_ADDRESSES);
            return NULL;
        }
        if (!add_address(cv->addresses, *a, error))
            return NULL;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return g_steal_pointer(&cv);
}

void kas_convert_free(KasConvert *cv)
{
    if (cv == NULL)
        return;
    g_clear_pointer(&cv->addresses, g_hash_table_unref);
    g_free(cv);
}

/* ---- the CRD's conversion stanza ---------------------------------------------------------- */

static gboolean dns1035_label(const char *s)
{
    gsize n = strlen(s);
    if (n == 0 || n > 63 || !g_ascii_islower(s[0]) || s[n - 1] == '-')
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!g_ascii_islower(s[i]) && !g_ascii_isdigit(s[i]) && s[i] != '-')
            return FALSE;
    return TRUE;
}

static void check_url(const char *url, KasFieldErrors *errs)
{
    const char *f = "spec.conversion.webhook.clientConfig.url";
    if (!g_str_has_prefix(url, "https://"))
        kas_field_errors_addf(errs, f,
                              "Invalid value: \"%s\": 'https' is the only allowed URL scheme", url);
    else if (url[8] == '\0' || url[8] == '/')
        kas_field_errors_addf(errs, f, "Invalid value: \"%s\": host must be specified", url);
    if (strchr(url, '@') != NULL)
        kas_field_errors_addf(errs, f,
                              "Invalid value: \"%s\": user information is not permitted in the URL",
                              url);
    if (strchr(url, '#') != NULL)
        kas_field_errors_addf(errs, f,
                              "Invalid value: \"%s\": fragments are not permitted in the URL", url);
    if (strchr(url, '?') != NULL)
        kas_field_errors_addf(
                errs, f, "Invalid value: \"%s\": query parameters are not permitted in the URL",
                url);
}

static void check_service(json_object *svc, KasFieldErrors *errs)
{
    const char *name = kas_json_get_string(svc, "name");
    const char *ns = kas_json_get_string(svc, "namespace");
    if (name == NULL || name[0] == '\0')
        kas_field_errors_addf(errs, "spec.conversion.webhook.clientConfig.service.name",
                              "Required value: service name is required");
    if (ns == NULL || ns[0] == '\0')
        kas_field_errors_addf(errs, "spec.conversion.webhook.clientConfig.service.namespace",
                              "Required value: service namespace is required");
    json_object *port = kas_json_get(svc, "port");
    if (port != NULL) {
        gint64 v = json_object_get_int64(port);
        if (!json_object_is_type(port, json_type_int) || v < 1 || v > 65535)
            kas_field_errors_addf(
                    errs, "spec.conversion.webhook.clientConfig.service.port",
                    "Invalid value: %s: port is not valid: must be between 1 and 65535, inclusive",
                    json_object_to_json_string(port));
    }
    const char *path = kas_json_get_string(svc, "path");
    if (path != NULL && path[0] != '/')
        kas_field_errors_addf(errs, "spec.conversion.webhook.clientConfig.service.path",
                              "Invalid value: \"%s\": must start with a '/'", path);
}

static void check_review_versions(json_object *v, KasFieldErrors *errs)
{
    const char *f = "spec.conversion.webhook.conversionReviewVersions";
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0) {
        kas_field_errors_add(errs, f, "Required value: must specify one of v1, v1beta1");
        return;
    }
    gboolean known = FALSE;
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (gsize i = 0; i < json_object_array_length(v); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(v, i));
        g_autofree char *fi = g_strdup_printf("%s[%zu]", f, i);
        if (s == NULL || !dns1035_label(s)) {
            kas_field_errors_addf(errs, fi,
                                  "Invalid value: \"%s\": a DNS-1035 label must consist of lower "
                                  "case alphanumeric characters or '-', start with an alphabetic "
                                  "character, and end with an alphanumeric character",
                                  s != NULL ? s : "");
            continue;
        }
        if (g_hash_table_contains(seen, s))
            kas_field_errors_addf(errs, fi, "Duplicate value: \"%s\"", s);
        g_hash_table_add(seen, (gpointer)s);
        known = known || strcmp(s, "v1") == 0 || strcmp(s, "v1beta1") == 0;
    }
    if (!known)
        kas_field_errors_addf(errs, f,
                              "Invalid value: %s: must include at least one of v1, v1beta1",
                              json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

void kas_convert_check_crd(json_object *crd, KasFieldErrors *errs)
{
    json_object *conv = kas_json_get(crd, "spec.conversion");
    if (conv == NULL)
        return;
    if (!json_object_is_type(conv, json_type_object)) {
        kas_field_errors_add(errs, "spec.conversion", "Invalid value: must be an object");
        return;
    }
    const char *strategy = kas_json_get_string(conv, "strategy");
    json_object *wh = kas_json_get(conv, "webhook");
    if (strategy == NULL || (strcmp(strategy, "None") != 0 && strcmp(strategy, "Webhook") != 0)) {
        kas_field_errors_addf(errs, "spec.conversion.strategy",
                              "Unsupported value: \"%s\": supported values: \"None\", \"Webhook\"",
                              strategy != NULL ? strategy : "");
        return;
    }
    if (strcmp(strategy, "None") == 0) {
        if (wh != NULL)
            kas_field_errors_add(
                    errs, "spec.conversion.webhook",
                    "Forbidden: should not be set when strategy is not set to Webhook");
        return;
    }
    json_object *cc = kas_json_get(wh, "clientConfig");
    if (!json_object_is_type(cc, json_type_object)) {
        kas_field_errors_add(errs, "spec.conversion.webhook.clientConfig",
                             "Required value: required when strategy is set to Webhook");
    } else {
        const char *url = kas_json_get_string(cc, "url");
        json_object *svc = kas_json_get(cc, "service");
        if ((url == NULL) == (svc == NULL))
            kas_field_errors_add(errs, "spec.conversion.webhook.clientConfig",
                                 "Required value: exactly one of url or service is required");
        else if (url != NULL)
            check_url(url, errs);
        else
            check_service(svc, errs);
    }
    check_review_versions(kas_json_get(wh, "conversionReviewVersions"), errs);
    json_object *pu = kas_json_get(crd, "spec.preserveUnknownFields");
    if (pu != NULL && json_object_get_boolean(pu))
        kas_field_errors_add(
                errs, "spec.conversion.strategy",
                "Invalid value: \"Webhook\": must be None if spec.preserveUnknownFields is true");
}

/* ---- the webhook's configuration, copied under the lock -------------------------------------- */

typedef struct {
    json_object *conv; /* spec.conversion, deep copy */
    char *group;
    char *kind;
} Hook;

static void hook_clear(Hook *h)
{
    json_object_put(h->conv);
    g_free(h->group);
    g_free(h->kind);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Hook, hook_clear)

static gboolean hook_of(KasStore *store, KasRes *res, Hook *h)
{
    memset(h, 0, sizeof *h);
    kas_store_lock(store);
    json_object *conv = res->kind == KAS_KIND_CUSTOM && res->crd != NULL
                                ? kas_json_get(res->crd, "spec.conversion")
                                : NULL;
    const char *strategy = kas_json_get_string(conv, "strategy");
    gboolean webhook = strategy != NULL && strcmp(strategy, "Webhook") == 0;
    if (webhook) {
        json_object_deep_copy(conv, &h->conv, NULL);
        h->group = g_strdup(res->group);
        h->kind = g_strdup(res->kind_name);
    }
    kas_store_unlock(store);
    return webhook;
}

gboolean kas_convert_webhook(KasStore *store, KasRes *res)
{
    g_auto(Hook) h = {0};
    return hook_of(store, res, &h);
}

/* ---- one POST ------------------------------------------------------------------------------ */

typedef struct {
    GString *body;
    gsize max;
    gboolean too_big;
} Sink;

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    Sink *s = user;
    if (s->body->len + size * n > s->max) {
        s->too_big = TRUE;
        return 0;
    }
    g_string_append_len(s->body, data, (gssize)(size * n));
    return size * n;
}

static char *go_duration(guint ms)
{
    return ms % 1000 == 0 ? g_strdup_printf("%us", ms / 1000) : g_strdup_printf("%ums", ms);
}

/* Where to POST: the URL as shown in errors, and for a service where it really connects. */
typedef struct {
    char *url;
    char *connect_to; /* curl CONNECT_TO "host:port:addr:port", or NULL */
    char *dial;       /* "addr:port" the connection goes to (for "dial tcp" messages) */
} Target;

static void target_clear(Target *t)
{
    g_free(t->url);
    g_free(t->connect_to);
    g_free(t->dial);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Target, target_clear)

/* Service @ns/@name (new reference) and Endpoints (new reference, may be NULL). */
static json_object *service_of(KasStore *store, const char *ns, const char *name, json_object **eps)
{
    kas_store_lock(store);
    KasRes *sres = kas_store_find_locked(store, "", "v1", "services");
    KasRes *eres = kas_store_find_locked(store, "", "v1", "endpoints");
    KasObj *so = sres != NULL ? kas_store_get_locked(store, sres, ns, name) : NULL;
    KasObj *eo = eres != NULL ? kas_store_get_locked(store, eres, ns, name) : NULL;
    json_object *sj = so != NULL ? kas_obj_parse(so) : NULL;
    *eps = eo != NULL ? kas_obj_parse(eo) : NULL;
    kas_store_unlock(store);
    return sj;
}

/* The first ready address of @eps on the port named @port_name ("" or NULL: the subset's only
 * port) as "ip:port" (new string), or NULL. */
static char *endpoint_address(json_object *eps, const char *port_name)
{
    json_object *subsets = kas_json_get(eps, "subsets");
    for (gsize i = 0;
         json_object_is_type(subsets, json_type_array) && i < json_object_array_length(subsets);
         i++) {
        json_object *ss = json_object_array_get_idx(subsets, i);
        json_object *addrs = kas_json_get(ss, "addresses");
        json_object *ports = kas_json_get(ss, "ports");
        if (!json_object_is_type(addrs, json_type_array) || json_object_array_length(addrs) == 0 ||
            !json_object_is_type(ports, json_type_array))
            continue;
        const char *ip = kas_json_get_string(json_object_array_get_idx(addrs, 0), "ip");
        for (gsize k = 0; ip != NULL && k < json_object_array_length(ports); k++) {
            json_object *p = json_object_array_get_idx(ports, k);
            const char *pn = kas_json_get_string(p, "name");
            if (g_strcmp0(pn != NULL ? pn : "", port_name != NULL ? port_name : "") == 0 ||
                json_object_array_length(ports) == 1)
                return g_strdup_printf("%s:%d", ip, json_object_get_int(kas_json_get(p, "port")));
        }
    }
    return NULL;
}

/*
 * https://NAME.NS.svc:PORT/PATH, connecting where --service-address says, or else to the
 * Service's Endpoints (as kube-apiserver with --enable-aggregator-routing), the port found by
 * the Service port's name.
 */
static gboolean service_target(KasConvert *cv, json_object *svc, Target *t, GError **error)
{
    const char *name = kas_json_get_string(svc, "name");
    const char *ns = kas_json_get_string(svc, "namespace");
    const char *path = kas_json_get_string(svc, "path");
    json_object *pj = kas_json_get(svc, "port");
    gint64 port = pj != NULL ? json_object_get_int64(pj) : 443;
    g_autofree char *timeout = go_duration(cv->timeout_ms);
    t->url = g_strdup_printf("https://%s.%s.svc:%" G_GINT64_FORMAT "%s?timeout=%s", name, ns, port,
                             path != NULL ? path : "", timeout);
    json_object *eps = NULL;
    json_object *sj = service_of(cv->store, ns, name, &eps);
    if (sj == NULL) {
        json_object_put(eps);
        g_set_error(error, KAS_CONVERT_ERROR, 0, "service \"%s\" not found", name);
        return FALSE;
    }
    json_object *ports = kas_json_get(sj, "spec.ports");
    json_object *sp = NULL;
    for (gsize i = 0; json_object_is_type(ports, json_type_array) &&
                      i < json_object_array_length(ports) && sp == NULL;
         i++)
        if (json_object_get_int64(kas_json_get(json_object_array_get_idx(ports, i), "port")) ==
            port)
            sp = json_object_array_get_idx(ports, i);
    g_autofree char *key = g_strdup_printf("%s/%s:%" G_GINT64_FORMAT, ns, name, port);
    const char *mapped = g_hash_table_lookup(cv->addresses, key);
    g_autofree char *addr = NULL;
    if (sp == NULL)
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "no service port %" G_GINT64_FORMAT " found for service \"%s\"", port, name);
    else if (mapped != NULL)
        addr = g_strdup(mapped);
    else if (eps == NULL)
        g_set_error(error, KAS_CONVERT_ERROR, 0, "endpoints \"%s\" not found", name);
    else if ((addr = endpoint_address(eps, kas_json_get_string(sp, "name"))) == NULL)
        g_set_error(error, KAS_CONVERT_ERROR, 0, "no endpoints available for service \"%s\"", name);
    json_object_put(sj);
    json_object_put(eps);
    if (addr == NULL)
        return FALSE;
    t->connect_to = g_strdup_printf("%s.%s.svc:%" G_GINT64_FORMAT ":%s", name, ns, port, addr);
    t->dial = g_steal_pointer(&addr);
    return TRUE;
}

/* A transport failure worded as Go's net/http words it (what kube-apiserver's message shows). */
static char *transport_error(CURLcode rc, const char *errbuf, const Target *t)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        return g_strdup_printf("dial tcp %s: connect: connection refused",
                               t->dial != NULL ? t->dial : "");
    case CURLE_OPERATION_TIMEDOUT:
        return g_strdup(
                "context deadline exceeded (Client.Timeout exceeded while awaiting headers)");
    case CURLE_PEER_FAILED_VERIFICATION:
#if LIBCURL_VERSION_NUM < 0x073e00
    case CURLE_SSL_CACERT:
#endif
        return g_strdup_printf("tls: failed to verify certificate: x509: %s", errbuf);
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
        return g_strdup("EOF");
    case CURLE_COULDNT_RESOLVE_HOST:
        return g_strdup_printf("dial tcp: lookup: %s", errbuf);
    default:
        return g_strdup_printf("%s: %s", curl_easy_strerror(rc), errbuf);
    }
}

/* The body of a non-2xx answer as client-go reports it. */
static char *http_error(long code, const GString *body)
{
    g_autoptr(GError) e = NULL;
    json_object *j = kas_json_parse(body->str, body->len, &e);
    const char *msg = kas_json_get_string(j, "message");
    char *out = NULL;
    if (msg != NULL && g_strcmp0(kas_json_get_string(j, "kind"), "Status") == 0)
        out = g_strdup(msg);
    else if (code == 404)
        out = g_strdup("the server could not find the requested resource");
    else if (code == 400)
        out = g_strdup("the server rejected our request for an unknown reason");
    else
        out = g_strdup_printf("an error on the server (\"%.*s\") has prevented the request from "
                              "succeeding",
                              (int)MIN(body->len, 512), body->str);
    json_object_put(j);
    return out;
}

/* POST @review to the webhook of @conv; the answer's body (new string) or NULL with the reason. */
static GString *post(KasConvert *cv, json_object *conv, const char *review, GError **error)
{
    json_object *cc = kas_json_get(conv, "webhook.clientConfig");
    g_auto(Target) t = {0};
    const char *url = kas_json_get_string(cc, "url");
    if (url != NULL) {
        g_autofree char *timeout = go_duration(cv->timeout_ms);
        t.url = g_strdup_printf("%s?timeout=%s", url, timeout);
        const char *host = url + strlen("https://");
        gsize n = strcspn(host, "/?#");
        g_autofree char *hp = g_strndup(host, n);
        const char *colon = strrchr(hp, ':');
        const char *bracket = strchr(hp, ']');
        gboolean has_port = colon != NULL && (bracket == NULL || bracket < colon);
        t.dial = has_port ? g_strdup(hp) : g_strdup_printf("%s:443", hp);
    } else if (!service_target(cv, kas_json_get(cc, "service"), &t, error)) {
        return NULL;
    }
    const char *ca64 = kas_json_get_string(cc, "caBundle");
    gsize calen = 0;
    g_autofree guchar *ca = ca64 != NULL ? g_base64_decode(ca64, &calen) : NULL;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, */*");
    struct curl_slist *ct = t.connect_to != NULL ? curl_slist_append(NULL, t.connect_to) : NULL;
    Sink sink = {.body = g_string_new(NULL), .max = cv->max_response};
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, t.url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, review);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kube-apiserver-admission");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)cv->timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (ct != NULL)
        curl_easy_setopt(c, CURLOPT_CONNECT_TO, ct);
    if (ca != NULL) {
        struct curl_blob blob = {.data = ca, .len = calen, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    }
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_slist_free_all(ct);
    curl_easy_cleanup(c);
    g_autofree char *why = NULL;
    if (sink.too_big)
        why = g_strdup_printf("the response is larger than %zu bytes", cv->max_response);
    else if (rc != CURLE_OK)
        why = transport_error(rc, errbuf, &t);
    else if (code < 200 || code > 299)
        why = http_error(code, sink.body);
    if (why != NULL) {
        /* client-go names the URL for transport failures, not for what the webhook answered */
        if (rc == CURLE_OK && !sink.too_big)
            g_set_error_literal(error, KAS_CONVERT_ERROR, 0, why);
        else
            g_set_error(error, KAS_CONVERT_ERROR, 0, "Post \"%s\": %s", t.url, why);
        g_string_free(sink.body, TRUE);
        return NULL;
    }
    return sink.body;
}

static void json_unref(gpointer p)
{
    json_object_put(p);
}

/* ---- the review ------------------------------------------------------------------------------ */

static const char *review_version(json_object *conv)
{
    json_object *v = kas_json_get(conv, "webhook.conversionReviewVersions");
    for (gsize i = 0; json_object_is_type(v, json_type_array) && i < json_object_array_length(v);
         i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(v, i));
        if (g_strcmp0(s, "v1") == 0)
            return "v1";
        if (g_strcmp0(s, "v1beta1") == 0)
            return "v1beta1";
    }
    return NULL;
}

/* response.convertedObjects of the answer (borrowed from *@out), checked as
 * getConvertedObjectsFromResponse checks it. */
static json_object *converted_of(const char *body, gsize len, const char *rv, const char *uid,
                                 json_object **out, GError **error)
{
    g_autoptr(GError) e = NULL;
    json_object *j = kas_json_parse(body, len, &e);
    if (j == NULL) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "couldn't get version/kind; json parse error: %s",
                    e->message);
        return NULL;
    }
    *out = j;
    const char *av = kas_json_get_string(j, "apiVersion");
    const char *kind = kas_json_get_string(j, "kind");
    g_autofree char *want = g_strdup_printf("apiextensions.k8s.io/%s", rv);
    if (strcmp(rv, "v1") == 0 &&
        (g_strcmp0(av, want) != 0 || g_strcmp0(kind, "ConversionReview") != 0)) {
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "expected webhook response of %s, Kind=ConversionReview, got %s, Kind=%s", want,
                    av != NULL ? av : "", kind != NULL ? kind : "");
        return NULL;
    }
    json_object *resp = kas_json_get(j, "response");
    if (!json_object_is_type(resp, json_type_object)) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "no response provided");
        return NULL;
    }
    const char *ruid = kas_json_get_string(resp, "uid");
    if (strcmp(rv, "v1") == 0 && g_strcmp0(ruid, uid) != 0) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "expected response.uid=\"%s\", got \"%s\"", uid,
                    ruid != NULL ? ruid : "");
        return NULL;
    }
    const char *status = kas_json_get_string(resp, "result.status");
    if (g_strcmp0(status, "Success") != 0) {
        const char *msg = kas_json_get_string(resp, "result.message");
        if (msg != NULL && msg[0] != '\0')
            g_set_error_literal(error, KAS_CONVERT_ERROR, 0, msg);
        else
            g_set_error(error, KAS_CONVERT_ERROR, 0,
                        "response.result.status was '%s', not 'Success'",
                        status != NULL ? status : "");
        return NULL;
    }
    json_object *objs = kas_json_get(resp, "convertedObjects");
    if (objs == NULL || json_object_is_type(objs, json_type_null)) {
        objs = json_object_new_array();
        json_object_object_add(resp, "convertedObjects", objs);
    }
    if (!json_object_is_type(objs, json_type_array)) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "response.convertedObjects is not a list");
        return NULL;
    }
    return objs;
}

/* validateConvertedObject: name, namespace and uid unchanged. */
static char *changed_meta(json_object *in, json_object *out)
{
    static const char *const what[][2] = {{"metadata.name", "name"},
                                          {"metadata.namespace", "namespace"},
                                          {"metadata.uid", "UID"}};
    for (guint i = 0; i < G_N_ELEMENTS(what); i++) {
        const char *a = kas_json_get_string(in, what[i][0]);
        const char *b = kas_json_get_string(out, what[i][0]);
        if (g_strcmp0(a != NULL ? a : "", b != NULL ? b : "") != 0)
            return g_strdup_printf("must have the same %s: %s != %s", what[i][1],
                                   a != NULL ? a : "", b != NULL ? b : "");
    }
    return NULL;
}

/* restoreObjectMeta: the original's metadata with the converted labels and annotations. */
static char *restore_meta(json_object *in, json_object *out)
{
    json_object *rmeta = kas_json_get(out, "metadata");
    if (rmeta == NULL)
        return g_strdup("missing metadata in converted object");
    if (!json_object_is_type(rmeta, json_type_object))
        return g_strdup_printf("invalid metadata of type %s in converted object",
                               json_type_to_name(json_object_get_type(rmeta)));
    json_object *meta = NULL;
    json_object_deep_copy(kas_json_get(in, "metadata"), &meta, NULL);
    if (meta == NULL)
        meta = json_object_new_object();
    static const char *const fields[] = {"labels", "annotations"};
    for (guint i = 0; i < G_N_ELEMENTS(fields); i++) {
        json_object *v = kas_json_get(rmeta, fields[i]);
        if (v == NULL || json_object_is_type(v, json_type_null)) {
            json_object_object_del(meta, fields[i]);
            continue;
        }
        if (!json_object_is_type(v, json_type_object)) {
            json_object_put(meta);
            return g_strdup_printf("invalid metadata.%s of type %s in converted object", fields[i],
                                   json_type_to_name(json_object_get_type(v)));
        }
        json_object_object_foreach(v, k, s)
        {
            if (!json_object_is_type(s, json_type_string)) {
                json_object_put(meta);
                return g_strdup_printf(
                        "metadata.%s[%s] must be a string, but is %s in converted object",
                        fields[i], k, json_type_to_name(json_object_get_type(s)));
            }
        }
        json_object_object_add(meta, fields[i], json_object_get(v));
    }
    json_object_object_add(out, "metadata", meta);
    return NULL;
}

/* Check converted object @out (index @i) against @in and restore its metadata. */
static gboolean check_one(json_object *in, json_object *out, const char *want_av, guint i,
                          gboolean list, const char *gvk, GError **error)
{
    g_autofree char *at =
            list ? g_strdup_printf(" converted object at index %u", i + 1) : g_strdup(" object");
    if (!json_object_is_type(out, json_type_object)) {
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "conversion webhook for %s returned invalid%s: not an object", gvk, at);
        return FALSE;
    }
    const char *av = kas_json_get_string(out, "apiVersion");
    if (g_strcmp0(av, want_av) != 0) {
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "conversion webhook for %s returned invalid%s%s: invalid groupVersion "
                    "(expected %s, received %s)",
                    gvk, list ? at : " object", list ? "" : " at index 0", want_av,
                    av != NULL ? av : "");
        return FALSE;
    }
    const char *k1 = kas_json_get_string(in, "kind"), *k2 = kas_json_get_string(out, "kind");
    if (g_strcmp0(k1, k2) != 0) {
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "conversion webhook for %s returned invalid%s%s: invalid kind (expected %s, "
                    "received %s)",
                    gvk, list ? at : " object", list ? "" : " at index 0", k1 != NULL ? k1 : "",
                    k2 != NULL ? k2 : "");
        return FALSE;
    }
    g_autofree char *why = changed_meta(in, out);
    if (why != NULL) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "conversion webhook for %s returned invalid%s: %s",
                    gvk, at, why);
        return FALSE;
    }
    why = restore_meta(in, out);
    if (why != NULL) {
        g_autofree char *where =
                list ? g_strdup_printf(" in object at index %u", i + 1) : g_strdup("");
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "conversion webhook for %s returned invalid metadata%s: %s", gvk, where, why);
        return FALSE;
    }
    return TRUE;
}

/*
 * Send @in (array of json objects, all of @res, none in @version) in one review and return the
 * converted objects in order (new array of new references), checked and with their metadata
 * restored.
 */
static GPtrArray *review(KasConvert *cv, const Hook *h, const char *version, GPtrArray *in,
                         gboolean list, GError **error)
{
    json_object *first = g_ptr_array_index(in, 0);
    g_autofree char *gvk =
            g_strdup_printf("%s, Kind=%s", kas_json_get_string(first, "apiVersion"), h->kind);
    g_autofree char *want_av = g_strdup_printf("%s/%s", h->group, version);
    const char *rv = review_version(h->conv);
    if (rv == NULL) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "no supported conversion review versions");
        return NULL;
    }
    g_autofree char *uid = g_uuid_string_random();
    json_object *req = json_object_new_object();
    g_autofree char *rav = g_strdup_printf("apiextensions.k8s.io/%s", rv);
    kas_json_set_string(req, "kind", "ConversionReview");
    kas_json_set_string(req, "apiVersion", rav);
    json_object *r = json_object_new_object();
    kas_json_set_string(r, "uid", uid);
    kas_json_set_string(r, "desiredAPIVersion", want_av);
    json_object *objs = json_object_new_array();
    for (guint i = 0; i < in->len; i++)
        json_object_array_add(objs, json_object_get(g_ptr_array_index(in, i)));
    json_object_object_add(r, "objects", objs);
    json_object_object_add(req, "request", r);
    g_autofree char *text = kas_json_dump(req);
    json_object_put(req);
    g_autoptr(GError) e = NULL;
    GString *body = post(cv, h->conv, text, &e);
    if (body == NULL) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "conversion webhook for %s failed: %s", gvk,
                    e->message);
        return NULL;
    }
    GPtrArray *out =
            kas_convert_answer(body->str, body->len, rv, uid, in, want_av, list, gvk, error);
    g_string_free(body, TRUE);
    return out;
}

GPtrArray *kas_convert_answer(const char *body, gsize len, const char *review_version,
                              const char *uid, GPtrArray *in, const char *want_av, gboolean list,
                              const char *gvk, GError **error)
{
    g_autoptr(GError) e = NULL;
    json_object *answer = NULL;
    json_object *conv = converted_of(body, len, review_version, uid, &answer, &e);
    if (conv == NULL) {
        g_set_error(error, KAS_CONVERT_ERROR, 0, "conversion webhook for %s failed: %s", gvk,
                    e->message);
        json_object_put(answer);
        return NULL;
    }
    if (json_object_array_length(conv) != in->len) {
        g_set_error(error, KAS_CONVERT_ERROR, 0,
                    "conversion webhook for %s returned %zu objects, expected %u", gvk,
                    json_object_array_length(conv), in->len);
        json_object_put(answer);
        return NULL;
    }
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(json_unref);
    for (guint i = 0; i < in->len; i++) {
        json_object *o = json_object_get(json_object_array_get_idx(conv, i));
        g_ptr_array_add(out, o);
        if (!check_one(g_ptr_array_index(in, i), o, want_av, i, list, gvk, error)) {
            json_object_put(answer);
            return NULL;
        }
    }
    json_object_put(answer);
    return g_steal_pointer(&out);
}

gboolean kas_convert_objs(KasConvert *cv, KasRes *res, const char *version, GPtrArray *objs,
                          gboolean list, GError **error)
{
    g_auto(Hook) h = {0};
    KasStore *store = cv != NULL ? cv->store : NULL;
    if (store == NULL || !hook_of(store, res, &h))
        return TRUE;
    g_autofree char *want = g_strdup_printf("%s/%s", h.group, version);
    g_autoptr(GPtrArray) in = g_ptr_array_new_with_free_func(json_unref);
    g_autoptr(GArray) at = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < objs->len; i++) {
        json_object *j = kas_obj_parse(g_ptr_array_index(objs, i));
        if (g_strcmp0(kas_json_get_string(j, "apiVersion"), want) == 0) {
            json_object_put(j);
            continue;
        }
        g_ptr_array_add(in, j);
        g_array_append_val(at, i);
    }
    if (in->len == 0)
        return TRUE;
    g_autoptr(GPtrArray) out = review(cv, &h, version, in, list, error);
    if (out == NULL)
        return FALSE;
    for (guint i = 0; i < out->len; i++) {
        guint k = g_array_index(at, guint, i);
        KasObj *o = kas_obj_new(res, g_ptr_array_index(out, i));
        kas_obj_unref(g_ptr_array_index(objs, k));
        objs->pdata[k] = o;
    }
    return TRUE;
}

gboolean kas_convert_json(KasConvert *cv, KasRes *res, const char *version, json_object **obj,
                          GError **error)
{
    g_auto(Hook) h = {0};
    if (cv == NULL || !hook_of(cv->store, res, &h))
        return TRUE;
    g_autofree char *want = g_strdup_printf("%s/%s", h.group, version);
    if (g_strcmp0(kas_json_get_string(*obj, "apiVersion"), want) == 0)
        return TRUE;
    g_autoptr(GPtrArray) in = g_ptr_array_new_with_free_func(json_unref);
    g_ptr_array_add(in, json_object_get(*obj));
    g_autoptr(GPtrArray) out = review(cv, &h, version, in, FALSE, error);
    if (out == NULL)
        return FALSE;
    json_object_put(*obj);
    *obj = json_object_get(g_ptr_array_index(out, 0));
    return TRUE;
}

/* ---- patches in another version -----------------------------------------------------------------
 */

KasObj *kas_convert_patch(KasConvert *cv, KasStore *store, KasRes *res, const char *version,
                          const char *ns, const char *name, KasPatchType type, json_object *patch,
                          gboolean status, GError **error)
{
    for (guint attempt = 0;; attempt++) {
        kas_store_lock(store);
        KasObj *cur = kas_store_get_locked(store, res, ns, name);
        json_object *doc = cur != NULL ? kas_obj_parse(cur) : NULL;
        kas_store_unlock(store);
        if (doc == NULL) {
            g_autofree char *q = kas_res_qualified(res);
            g_set_error(error, KAS_ERROR, KAS_ERR_NOT_FOUND, "%s \"%s\" not found", q, name);
            return NULL;
        }
        g_autofree char *rv = g_strdup(kas_json_get_string(doc, "metadata.resourceVersion"));
        g_autoptr(GError) e = NULL;
        if (!kas_convert_json(cv, res, version, &doc, &e) ||
            !kas_ops_patch_apply(&doc, type, patch, &e)) {
            json_object_put(doc);
            g_propagate_error(error, g_steal_pointer(&e));
            return NULL;
        }
        g_autofree char *want = kas_res_api_version(res, version);
        const char *av = kas_json_get_string(doc, "apiVersion");
        if (av != NULL && strcmp(av, want) != 0) {
            g_set_error(
                    error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "the API version in the data (%s) does not match the expected API version (%s)",
                    av, want);
            json_object_put(doc);
            return NULL;
        }
        kas_json_set_string(doc, "apiVersion", want);
        gboolean same_rv = g_strcmp0(rv, kas_json_get_string(doc, "metadata.resourceVersion")) == 0;
        KasObj *out = NULL;
        if (kas_convert_json(cv, res, res->storage_version, &doc, &e))
            out = kas_ops_update(store, res, res->storage_version, ns, name, doc, status, &e);
        json_object_put(doc);
        if (out != NULL)
            return out;
        /* as kube-apiserver's patcher: a conflict the patch did not ask for is retried */
        if (!same_rv || attempt >= 4 || !g_error_matches(e, KAS_ERROR, KAS_ERR_CONFLICT)) {
            g_propagate_error(error, g_steal_pointer(&e));
            return NULL;
        }
    }
}

char *kas_convert_status_json(const char *message)
{
    json_object *st = json_object_new_object();
    kas_json_set_string(st, "kind", "Status");
    kas_json_set_string(st, "apiVersion", "v1");
    json_object_object_add(st, "metadata", json_object_new_object());
    kas_json_set_string(st, "status", "Failure");
    kas_json_set_string(st, "message", message);
    json_object_object_add(st, "code", json_object_new_int(500));
    char *s = kas_json_dump(st);
    json_object_put(st);
    return s;
}
