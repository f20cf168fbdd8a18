/* The REST client: resource paths, requests, response mapping, blocking calls; see kb-client.h.
 * The asynchronous side (libcurl multi on the main loop) is in kb-client-async.c. */
#include "kube/kb-client-private.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "kube/kb-json.h"
#include "kube/kb-proto.h"

#define DEFAULT_MAX_IN_FLIGHT 64
#define DEFAULT_STREAM_IDLE_S 90
#define JSON_MAX_DEPTH        128

/* ---- resource types ------------------------------------------------------------------------ */

const KbResourceType kb_type_pods = {"", "v1", "pods", TRUE};
const KbResourceType kb_type_nodes = {"", "v1", "nodes", FALSE};
const KbResourceType kb_type_namespaces = {"", "v1", "namespaces", FALSE};
const KbResourceType kb_type_services = {"", "v1", "services", TRUE};
const KbResourceType kb_type_events = {"", "v1", "events", TRUE};
const KbResourceType kb_type_configmaps = {"", "v1", "configmaps", TRUE};
const KbResourceType kb_type_pvcs = {"", "v1", "persistentvolumeclaims", TRUE};
const KbResourceType kb_type_leases = {"coordination.k8s.io", "v1", "leases", TRUE};
const KbResourceType kb_type_priority_classes = {"scheduling.k8s.io", "v1", "priorityclasses",
                                                 FALSE};
const KbResourceType kb_type_crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                     FALSE};
const KbResourceType kb_type_pod_groups_kube_batch = {"scheduling.incubator.k8s.io", "v1alpha1",
                                                      "podgroups", TRUE};
const KbResourceType kb_type_pod_groups_volcano = {"scheduling.volcano.sh", "v1beta1", "podgroups",
                                                   TRUE};
const KbResourceType kb_type_pod_groups_x_k8s = {"scheduling.x-k8s.io", "v1alpha1", "podgroups",
                                                 TRUE};
const KbResourceType kb_type_pod_groups_native = {"scheduling.k8s.io", "v1beta1", "podgroups",
                                                  TRUE};
const KbResourceType kb_type_workloads_native = {"scheduling.k8s.io", "v1beta1", "workloads", TRUE};
const KbResourceType kb_type_pod_groups_v1alpha3 = {"scheduling.k8s.io", "v1alpha3", "podgroups",
                                                    TRUE};
const KbResourceType kb_type_composite_pod_groups = {"scheduling.k8s.io", "v1alpha3",
                                                     "compositepodgroups", TRUE};
const KbResourceType kb_type_queues_kube_batch = {"scheduling.incubator.k8s.io", "v1alpha1",
                                                  "queues", FALSE};
const KbResourceType kb_type_queues_volcano = {"scheduling.volcano.sh", "v1beta1", "queues", FALSE};
const KbResourceType kb_type_device_classes = {"resource.k8s.io", "v1", "deviceclasses", FALSE};
const KbResourceType kb_type_resource_claims = {"resource.k8s.io", "v1", "resourceclaims", TRUE};
const KbResourceType kb_type_resource_claim_templates = {"resource.k8s.io", "v1",
                                                         "resourceclaimtemplates", TRUE};
const KbResourceType kb_type_resource_slices = {"resource.k8s.io", "v1", "resourceslices", FALSE};
const KbResourceType kb_type_tfjobs_v1 = {"kubeflow.org", "v1", "tfjobs", TRUE};
const KbResourceType kb_type_tfjobs_v1alpha1 = {"kubeflow.org", "v1alpha1", "tfjobs", TRUE};

static void append_segment(GString *path, const char *segment)
{
    g_string_append_c(path, '/');
    g_string_append_uri_escaped(path, segment, ":@", TRUE);
}

char *kb_resource_path(const KbResourceType *type, const char *namespace_, const char *name,
                       const char *subresource)
{
    GString *path = g_string_new(NULL);
    if (type->group == NULL || *type->group == '\0')
        g_string_append_printf(path, "/api/%s", type->version);
    else
        g_string_append_printf(path, "/apis/%s/%s", type->group, type->version);
    if (type->namespaced && namespace_ != NULL && *namespace_ != '\0') {
        g_string_append(path, "/namespaces");
        append_segment(path, namespace_);
    }
    append_segment(path, type->plural);
    if (name != NULL && *name != '\0') {
        append_segment(path, name);
        if (subresource != NULL && *subresource != '\0')
            append_segment(path, subresource);
    }
    return g_string_free(path, FALSE);
}

/* ---- requests ------------------------------------------------------------------------------ */

static void append_param(GString *query, const char *name, const char *value)
{
    if (value == NULL || *value == '\0')
        return;
    if (query->len > 0)
        g_string_append_c(query, '&');
    g_string_append(query, name);
    g_string_append_c(query, '=');
    g_string_append_uri_escaped(query, value, NULL, FALSE);
}

static char *build_query(const KbRequest *req)
{
    GString *query = g_string_new(NULL);
    const KbListOptions *lo = req->list;
    if (lo != NULL) {
        char num[32];
        append_param(query, "labelSelector", lo->label_selector);
        append_param(query, "fieldSelector", lo->field_selector);
        if (lo->limit > 0) {
            g_snprintf(num, sizeof num, "%" G_GINT64_FORMAT, lo->limit);
            append_param(query, "limit", num);
        }
        append_param(query, "continue", lo->continue_token);
        append_param(query, "resourceVersion", lo->resource_version);
        if (lo->watch)
            append_param(query, "watch", "true");
        if (lo->allow_watch_bookmarks)
            append_param(query, "allowWatchBookmarks", "true");
        if (lo->timeout_seconds > 0) {
            g_snprintf(num, sizeof num, "%u", lo->timeout_seconds);
            append_param(query, "timeoutSeconds", num);
        }
    }
    if (req->query != NULL && *req->query != '\0') {
        if (query->len > 0)
            g_string_append_c(query, '&');
        g_string_append(query, req->query);
    }
    return g_string_free(query, FALSE);
}

/* How long a stream may stay silent. A watch with timeoutSeconds T may be silent for all of T:
 * kube-apiserver sends nothing on a quiet resource, not even bookmarks (its cacher sends them
 * about once a minute, and only for a resource that has seen an event since it started), so
 * only a watch still silent stream_idle_s after the server should have ended it is dead. A dead
 * peer is noticed sooner by TCP keepalive (kb_client_transfer_setup). */
static guint stream_idle_limit(const KbClient *client, const KbRequest *req)
{
    guint extra = 0;
    if (req->list != NULL && req->list->watch)
        extra = req->list->timeout_seconds;
    return client->stream_idle_s + extra;
}

KbTransfer *kb_client_transfer_new_raw(KbClient *client, const KbRequest *req, const char *body,
                                       const char *content_type)
{
    return kb_client_transfer_new_bytes(client, req, body, body != NULL ? strlen(body) : 0,
                                        content_type);
}

KbTransfer *kb_client_transfer_new_bytes(KbClient *client, const KbRequest *req, const void *body,
                                         gsize len, const char *content_type)
{
    KbTransfer *t = g_new0(KbTransfer, 1);
    g_autofree char *path = req->path != NULL ? g_strdup(req->path)
                                              : kb_resource_path(req->type, req->namespace_,
                                                                 req->name, req->subresource);
    g_autofree char *query = build_query(req);
    g_autofree char *target =
            *query != '\0' ? g_strdup_printf("%s?%s", path, query) : g_steal_pointer(&path);
    t->client = client;
    t->urgent = req->urgent;
    t->version_only = req->version_only;
    t->method = g_strdup(req->method != NULL ? req->method : "GET");
    t->url = g_strconcat(client->base_url, target, NULL);
    t->what = g_strdup_printf("%s %s", t->method, target);
    if (body != NULL) {
        t->body = g_malloc(len + 1); /* NUL-terminated for JSON bodies' sake */
        memcpy(t->body, body, len);
        t->body[len] = '\0';
        t->body_len = len;
    }
    t->content_type = g_strdup(content_type != NULL ? content_type : "application/json");
    t->stream = req->stream;
    t->idle_s = stream_idle_limit(client, req);
    t->response = g_byte_array_new();
    return t;
}

KbTransfer *kb_client_transfer_new(KbClient *client, const KbRequest *req)
{
    const char *body =
            req->body != NULL
                    ? json_object_to_json_string_ext(
                              req->body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
                    : req->body_text;
    return kb_client_transfer_new_raw(client, req, body, req->content_type);
}

void kb_client_transfer_free(KbTransfer *t)
{
    if (t == NULL)
        return;
    g_free(t->url);
    g_free(t->what);
    g_free(t->method);
    g_free(t->body);
    g_free(t->content_type);
    g_free(t->json_fallback);
    g_byte_array_unref(t->response);
    curl_slist_free_all(t->headers);
    g_free(t);
}

/* ---- credentials --------------------------------------------------------------------------- */

/* The bearer token to send now (newly allocated, or NULL). The token file is re-read when its
 * inode, size or mtime changed: the kubelet rotates projected tokens by swapping a symlink. */
static char *current_token(KbClient *client)
{
    const char *file = client->config->token_file;
    struct stat st;
    g_mutex_lock(&client->token_lock);
    if (file != NULL && stat(file, &st) == 0) {
        gint64 mtime_ns = (gint64)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (st.st_dev != client->token_dev || st.st_ino != client->token_ino ||
            st.st_size != client->token_size || mtime_ns != client->token_mtime_ns) {
            g_autofree char *text = NULL;
            g_autoptr(GError) error = NULL;
            if (g_file_get_contents(file, &text, NULL, &error)) {
                g_free(client->token);
                client->token = g_strdup(g_strstrip(text));
                client->token_dev = st.st_dev;
                client->token_ino = st.st_ino;
                client->token_size = st.st_size;
                client->token_mtime_ns = mtime_ns;
                client->token_warned = FALSE;
            } else if (!client->token_warned) {
                client->token_warned = TRUE;
                g_warning("bearer token: %s; keeping the previous token", error->message);
            }
        }
    } else if (file != NULL && !client->token_warned) {
        int err = errno;
        client->token_warned = TRUE;
        g_warning("bearer token file %s: %s; keeping the previous token", file, g_strerror(err));
    }
    char *token = g_strdup(client->token);
    g_mutex_unlock(&client->token_lock);
    return token != NULL && *token != '\0' ? token : (g_free(token), NULL);
}

/* ---- libcurl callbacks --------------------------------------------------------------------- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *user_data)
{
    KbTransfer *t = user_data;
    size_t n = size * nmemb;
    if (t->cancelled)
        return 0;
    t->last_data_us = g_get_monotonic_time();
    if (t->stream) {
        long status = 0;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            t->in_data = TRUE;
            gboolean keep = t->on_data(ptr, n, t->user_data);
            t->in_data = FALSE;
            if (!keep && !t->cancelled)
                kb_stream_cancel((KbStream *)t);
            return t->cancelled ? 0 : n;
        }
    }
    if (t->response->len + n > t->client->max_body) {
        t->over_limit = TRUE;
        return 0;
    }
    g_byte_array_append(t->response, (const guint8 *)ptr, n);
    return n;
}

static size_t on_header(char *buffer, size_t size, size_t nitems, void *user_data)
{
    KbTransfer *t = user_data;
    size_t n = size * nitems;
    static const char name[] = "retry-after:";
    t->last_data_us = g_get_monotonic_time();
    if (n >= 5 && g_ascii_strncasecmp(buffer, "HTTP/", 5) == 0) {
        t->retry_after = 0; /* a new response (after 100 Continue, say) */
    } else if (n > sizeof name - 1 && g_ascii_strncasecmp(buffer, name, sizeof name - 1) == 0) {
        g_autofree char *value = g_strndup(buffer + sizeof name - 1, n - (sizeof name - 1));
        guint64 seconds;
        /* The HTTP-date form is not used by kube-apiserver; only delta-seconds is understood. */
        if (g_ascii_string_to_unsigned(g_strstrip(value), 10, 0, G_MAXUINT, &seconds, NULL))
            t->retry_after = (guint)seconds;
    }
    return n;
}

/* libcurl's low-speed check averages over a 5 s window, so a watch that goes quiet right after
 * an event is only noticed seconds late; this makes the idle timeout exact. */
static int on_progress(void *user_data, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    KbTransfer *t = user_data;
    gint64 idle_us = (gint64)t->idle_s * G_USEC_PER_SEC;
    if (t->stream && g_get_monotonic_time() - t->last_data_us >= idle_us) {
        t->idle_timeout = TRUE;
        return 1;
    }
    return 0;
}

static void share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *user)
{
    KbClient *client = user;
    g_mutex_lock(&client->share_locks[data]);
}

static void share_unlock(CURL *handle, curl_lock_data data, void *user)
{
    KbClient *client = user;
    g_mutex_unlock(&client->share_locks[data]);
}

/* ---- request options ----------------------------------------------------------------------- */

static void set_blob(CURL *easy, CURLoption option, GBytes *bytes)
{
    gsize len;
    struct curl_blob blob = {.flags = CURL_BLOB_COPY};
    blob.data = (void *)g_bytes_get_data(bytes, &len);
    blob.len = len;
    curl_easy_setopt(easy, option, &blob);
}

static void setup_tls(KbTransfer *t)
{
    CURL *e = t->easy;
    const KbConfig *cfg = t->client->config;
    gboolean verify = !cfg->insecure_skip_tls_verify;
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
    if (cfg->ca_data != NULL)
        set_blob(e, CURLOPT_CAINFO_BLOB, cfg->ca_data);
    else if (cfg->ca_file != NULL)
        curl_easy_setopt(e, CURLOPT_CAINFO, cfg->ca_file);
    if (cfg->cert_data != NULL)
        set_blob(e, CURLOPT_SSLCERT_BLOB, cfg->cert_data);
    else if (cfg->cert_file != NULL)
        curl_easy_setopt(e, CURLOPT_SSLCERT, cfg->cert_file);
    if (cfg->key_data != NULL)
        set_blob(e, CURLOPT_SSLKEY_BLOB, cfg->key_data);
    else if (cfg->key_file != NULL)
        curl_easy_setopt(e, CURLOPT_SSLKEY, cfg->key_file);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
}

static void setup_headers(KbTransfer *t)
{
    g_autofree char *token = current_token(t->client);
    curl_slist_free_all(g_steal_pointer(&t->headers));
    t->headers = curl_slist_append(t->headers, "Accept: application/json");
    /* No "Expect: 100-continue" round trip for large bodies. */
    t->headers = curl_slist_append(t->headers, "Expect:");
    if (t->body != NULL) {
        g_autofree char *ct = g_strdup_printf("Content-Type: %s", t->content_type);
        t->headers = curl_slist_append(t->headers, ct);
    }
    if (token != NULL) {
        g_autofree char *auth = g_strdup_printf("Authorization: Bearer %s", token);
        t->headers = curl_slist_append(t->headers, auth);
    }
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
}

void kb_client_transfer_setup(KbTransfer *t)
{
    CURL *e = t->easy;
    KbClient *client = t->client;
    const KbConfig *cfg = client->config;
    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_SHARE, client->share);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_USERAGENT, cfg->user_agent);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    /* a reused handle keeps its options: set it either way */
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, cfg->compression ? "gzip" : NULL);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->timeout_ms);
    if (t->stream) {
        /* One that receives nothing for its idle time is dead (stream_idle_limit): on_progress
         * says so. libcurl's own low-speed check is what makes it call on_progress every second
         * while nothing arrives; it is given 2 s more than the idle time so that it never ends
         * the stream first, with its own message, on a loaded machine. Keepalive probes after
         * 30 s of silence, every 15 s: a peer gone without a word (a dead node, a dropped NAT
         * entry) is noticed in under 3 minutes rather than at the watch's end. */
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)t->idle_s + 2);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
        t->last_data_us = g_get_monotonic_time();
    } else {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)cfg->timeout_ms);
    }
    if (strcmp(t->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->method);
        gboolean wants_body = strcmp(t->method, "POST") == 0 || strcmp(t->method, "PUT") == 0 ||
                              strcmp(t->method, "PATCH") == 0;
        if (t->body != NULL || wants_body) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body != NULL ? t->body : "");
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->body_len);
        }
    }
    if (g_str_has_prefix(t->url, "https:"))
        setup_tls(t);
    setup_headers(t);
}

/* ---- responses ----------------------------------------------------------------------------- */

void kb_client_response_clear(KbResponse *resp)
{
    g_clear_pointer(&resp->body, json_object_put);
    g_clear_pointer(&resp->resource_version, g_free);
    g_clear_error(&resp->error);
}

/* The top-level object @r is in: its metadata.resourceVersion into *@rv (the first one seen),
 * every other value skipped (and so checked). */
static gboolean read_members_version(KbJsonReader *r, gboolean in_meta, char **rv, GError **error)
{
    KbJsonStr key;
    int more;
    while ((more = kb_json_object_next(r, &key, error)) == 1) {
        gboolean ok;
        if (!in_meta && KB_JSON_STR_IS(key, "metadata") && kb_json_peek(r) == KB_JSON_OBJECT) {
            ok = kb_json_object_begin(r, error) && read_members_version(r, TRUE, rv, error);
        } else if (in_meta && *rv == NULL && KB_JSON_STR_IS(key, "resourceVersion") &&
                   kb_json_peek(r) == KB_JSON_STRING) {
            KbJsonStr v;
            ok = kb_json_read_string(r, &v, error);
            if (ok)
                *rv = kb_json_str_dup(&v);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    return more == 0;
}

/* A 2xx body's metadata.resourceVersion (KbRequest.version_only): newly allocated, NULL when it
 * has none; FALSE with @error set when the body is not one JSON object. */
static gboolean read_version(const char *data, gsize len, char **rv, GError **error)
{
    KbJsonReader r;
    kb_json_reader_init(&r, data, len);
    r.max_depth = MIN(JSON_MAX_DEPTH, KB_JSON_DEPTH_CAP);
    *rv = NULL;
    gboolean ok = kb_json_object_begin(&r, error) && read_members_version(&r, FALSE, rv, error) &&
                  kb_json_finish(&r, error);
    kb_json_reader_clear(&r);
    if (!ok)
        g_clear_pointer(rv, g_free);
    return ok;
}

/* Parse @len bytes of JSON; NULL with *@error set when malformed. */
static json_object *parse_json(const char *data, gsize len, GError **error)
{
    json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
    json_object *obj = json_tokener_parse_ex(tok, data, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (obj != NULL && jerr == json_tokener_success) {
        while (end < len && g_ascii_isspace(data[end]))
            end++;
        if (end == len)
            return obj;
        json_object_put(obj);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "trailing data at offset %zu", end);
        return NULL;
    }
    json_object_put(obj);
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s at offset %zu",
                jerr == json_tokener_continue ? "truncated JSON" : json_tokener_error_desc(jerr),
                end);
    return NULL;
}

static const char *get_string(json_object *obj, const char *key)
{
    json_object *value = NULL;
    if (obj == NULL || !json_object_object_get_ex(obj, key, &value) ||
        !json_object_is_type(value, json_type_string))
        return NULL;
    return json_object_get_string(value);
}

/* A short printable excerpt of a non-JSON error body. */
static char *excerpt(const GByteArray *body)
{
    gsize n = MIN(body->len, 200);
    GString *s = g_string_sized_new(n + 4);
    for (gsize i = 0; i < n; i++) {
        char c = (char)body->data[i];
        g_string_append_c(s, g_ascii_isprint(c) ? c : ' ');
    }
    if (body->len > n)
        g_string_append(s, "...");
    return g_strstrip(g_string_free(s, FALSE));
}

/* Map a non-2xx response onto @resp: KB_ERROR from the metav1.Status reason and code. */
static void finish_error_status(KbTransfer *t, int status, KbResponse *resp)
{
    json_object *body = parse_json((const char *)t->response->data, t->response->len, NULL);
    const char *kind = get_string(body, "kind");
    const char *reason = NULL, *message = NULL;
    if (body != NULL && g_strcmp0(kind, "Status") == 0) {
        json_object *details = NULL, *retry = NULL;
        reason = get_string(body, "reason");
        message = get_string(body, "message");
        if (t->retry_after == 0 && json_object_object_get_ex(body, "details", &details) &&
            json_object_object_get_ex(details, "retryAfterSeconds", &retry) &&
            json_object_is_type(retry, json_type_int) && json_object_get_int64(retry) > 0)
            resp->retry_after_seconds = (guint)MIN(json_object_get_int64(retry), G_MAXUINT);
    }
    g_autofree char *text = message == NULL ? excerpt(t->response) : NULL;
    KbErrorCode code = kb_error_code_from_http(status, reason);
    g_set_error(&resp->error, KB_ERROR, code, "%s: HTTP %d%s%s: %s", t->what, status,
                reason != NULL ? " " : "", reason != NULL ? reason : "",
                message != NULL ? message : (*text != '\0' ? text : "(empty body)"));
    resp->body = body;
}

void kb_client_transfer_finish(KbTransfer *t, CURLcode rc, KbResponse *resp)
{
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    memset(resp, 0, sizeof *resp);
    resp->retry_after_seconds = t->retry_after;
    if (t->over_limit) {
        resp->http_status = (int)status;
        g_set_error(&resp->error, KB_ERROR, KB_ERROR_LIMIT,
                    "%s: response body over the limit of %zu bytes", t->what, t->client->max_body);
        return;
    }
    if (t->idle_timeout) {
        g_set_error(&resp->error, KB_ERROR, KB_ERROR_TIMEOUT, "%s: nothing received for %u s",
                    t->what, t->idle_s);
        return;
    }
    if (rc != CURLE_OK) {
        gboolean timeout = rc == CURLE_OPERATION_TIMEDOUT;
        g_set_error(&resp->error, KB_ERROR, timeout ? KB_ERROR_TIMEOUT : KB_ERROR_TRANSPORT,
                    "%s: %s%s%s", t->what, curl_easy_strerror(rc), t->errbuf[0] ? ": " : "",
                    t->errbuf);
        return;
    }
    resp->http_status = (int)status;
    if (status < 200 || status >= 300) {
        finish_error_status(t, (int)status, resp);
        return;
    }
    if (t->stream || t->response->len == 0)
        return;
    g_autoptr(GError) error = NULL;
    if (t->version_only) {
        if (!read_version((const char *)t->response->data, t->response->len,
                          &resp->resource_version, &error))
            g_set_error(&resp->error, KB_ERROR, KB_ERROR_DECODE, "%s: HTTP %ld: malformed JSON: %s",
                        t->what, status, error->message);
        return;
    }
    resp->body = parse_json((const char *)t->response->data, t->response->len, &error);
    if (resp->body == NULL)
        g_set_error(&resp->error, KB_ERROR, KB_ERROR_DECODE, "%s: HTTP %ld: malformed JSON: %s",
                    t->what, status, error->message);
}

/* ---- the client ---------------------------------------------------------------------------- */

static gpointer global_init(gpointer data)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return NULL;
}

KbClient *kb_client_new(const KbConfig *config, GError **error)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, global_init, NULL);
    if (config == NULL || config->server == NULL || *config->server == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "no API server URL in the configuration");
        return NULL;
    }
    KbClient *client = g_new0(KbClient, 1);
    client->config = kb_config_copy(config);
    client->base_url = g_strdup(config->server);
    gsize len = strlen(client->base_url);
    while (len > 0 && client->base_url[len - 1] == '/')
        client->base_url[--len] = '\0';
    client->max_body = KB_CLIENT_MAX_BODY_BYTES;
    client->max_in_flight = DEFAULT_MAX_IN_FLIGHT;
    client->stream_idle_s = DEFAULT_STREAM_IDLE_S;
    client->token = g_strdup(config->token);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        g_mutex_init(&client->share_locks[i]);
    g_mutex_init(&client->blocking_lock);
    g_mutex_init(&client->token_lock);

    client->share = curl_share_init();
    curl_share_setopt(client->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(client->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(client->share, CURLSHOPT_USERDATA, client);
    curl_share_setopt(client->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(client->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(client->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    client->easy = curl_easy_init();
    kb_client_async_init(client);
    return client;
}

void kb_client_free(KbClient *client)
{
    if (client == NULL)
        return;
    kb_client_async_fini(client);
    curl_easy_cleanup(client->easy);
    curl_share_cleanup(client->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        g_mutex_clear(&client->share_locks[i]);
    g_mutex_clear(&client->blocking_lock);
    g_mutex_clear(&client->token_lock);
    g_free(client->token);
    g_free(client->base_url);
    kb_config_free(client->config);
    g_free(client);
}

void kb_client_set_max_in_flight(KbClient *client, guint n)
{
    client->max_in_flight = MAX(n, 1);
}

void kb_client_set_stream_idle_timeout(KbClient *client, guint seconds)
{
    client->stream_idle_s = MAX(seconds, 1);
}

void kb_client_set_max_body_size(KbClient *client, gsize bytes)
{
    client->max_body = bytes;
}

const char *kb_client_server(const KbClient *client)
{
    return client->base_url;
}

gboolean kb_client_transfer_fall_back(KbTransfer *t, const KbResponse *resp)
{
    KbClient *client = t->client;
    if (t->json_fallback == NULL)
        return FALSE;
    if (resp->http_status >= 200 && resp->http_status < 300)
        client->protobuf_taken = TRUE;
    if (resp->http_status != 415)
        return FALSE;
    if (!client->protobuf_refused)
        g_warning("kb-client: %s: the server does not read protobuf (415); sending JSON from now "
                  "on",
                  t->what);
    client->protobuf_refused = TRUE;
    g_free(t->body);
    t->body = g_steal_pointer(&t->json_fallback);
    t->body_len = strlen(t->body);
    g_free(t->content_type);
    t->content_type = g_strdup("application/json");
    g_byte_array_set_size(t->response, 0);
    t->over_limit = FALSE;
    t->retry_after = 0;
    t->errbuf[0] = '\0';
    return TRUE;
}

/* ---- blocking calls ------------------------------------------------------------------------ */

/* Perform @t on the blocking handle; @resp receives the outcome (caller clears it). */
static void perform(KbClient *client, KbTransfer *t, KbResponse *resp)
{
    g_mutex_lock(&client->blocking_lock);
    curl_easy_reset(client->easy);
    t->easy = client->easy;
    kb_client_transfer_setup(t);
    CURLcode rc = curl_easy_perform(client->easy);
    kb_client_transfer_finish(t, rc, resp);
    t->easy = NULL;
    g_mutex_unlock(&client->blocking_lock);
}

/* The body of a 2xx response (new reference, or NULL), else NULL with the error. */
static json_object *take_result(KbResponse *resp, guint *retry_after, GError **error)
{
    if (retry_after != NULL)
        *retry_after = resp->retry_after_seconds;
    if (resp->error != NULL) {
        g_propagate_error(error, g_steal_pointer(&resp->error));
        kb_client_response_clear(resp);
        return NULL;
    }
    return g_steal_pointer(&resp->body);
}

json_object *kb_client_call(KbClient *client, const KbRequest *req, guint *retry_after,
                            GError **error)
{
    KbResponse resp;
    g_autoptr(KbTransfer) t = kb_client_transfer_new(client, req);
    t->stream = FALSE; /* a blocking call reads the whole body */
    perform(client, t, &resp);
    return take_result(&resp, retry_after, error);
}

json_object *kb_client_get(KbClient *client, const KbResourceType *type, const char *namespace_,
                           const char *name, GError **error)
{
    KbRequest req = {.method = "GET", .type = type, .namespace_ = namespace_, .name = name};
    return kb_client_call(client, &req, NULL, error);
}

json_object *kb_client_list(KbClient *client, const KbResourceType *type, const char *namespace_,
                            const KbListOptions *opts, GError **error)
{
    KbRequest req = {.method = "GET", .type = type, .namespace_ = namespace_, .list = opts};
    return kb_client_call(client, &req, NULL, error);
}

json_object *kb_client_create(KbClient *client, const KbResourceType *type, const char *namespace_,
                              json_object *body, GError **error)
{
    KbRequest req = {.method = "POST", .type = type, .namespace_ = namespace_, .body = body};
    return kb_client_call(client, &req, NULL, error);
}

json_object *kb_client_update(KbClient *client, const KbResourceType *type, const char *namespace_,
                              const char *name, const char *subresource, json_object *body,
                              GError **error)
{
    KbRequest req = {.method = "PUT",
                     .type = type,
                     .namespace_ = namespace_,
                     .name = name,
                     .subresource = subresource,
                     .body = body};
    return kb_client_call(client, &req, NULL, error);
}

static const char *patch_content_type(KbPatchType patch_type)
{
    switch (patch_type) {
    case KB_PATCH_JSON:
        return "application/json-patch+json";
    case KB_PATCH_STRATEGIC:
        return "application/strategic-merge-patch+json";
    case KB_PATCH_MERGE:
    default:
        return "application/merge-patch+json";
    }
}

json_object *kb_client_patch(KbClient *client, const KbResourceType *type, const char *namespace_,
                             const char *name, const char *subresource, KbPatchType patch_type,
                             const char *patch, GError **error)
{
    KbRequest req = {.method = "PATCH",
                     .type = type,
                     .namespace_ = namespace_,
                     .name = name,
                     .subresource = subresource};
    KbResponse resp;
    g_autoptr(KbTransfer) t =
            kb_client_transfer_new_raw(client, &req, patch, patch_content_type(patch_type));
    perform(client, t, &resp);
    return take_result(&resp, NULL, error);
}

/* Calls @req, dropping the response body, and releases @req->body (the caller's reference).
 * TRUE on success. */
static gboolean call_consuming_body(KbClient *client, const KbRequest *req, GError **error)
{
    GError *local = NULL;
    json_object_put(kb_client_call(client, req, NULL, &local));
    json_object_put(req->body);
    if (local != NULL) {
        g_propagate_error(error, local);
        return FALSE;
    }
    return TRUE;
}

/* A DeleteOptions body for @opts, or NULL when there is nothing to say. */
static json_object *delete_options_body(const KbDeleteOptions *opts)
{
    if (opts == NULL)
        return NULL;
    json_object *body = json_object_new_object();
    json_object_object_add(body, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(body, "kind", json_object_new_string("DeleteOptions"));
    if (opts->precondition_uid != NULL || opts->precondition_resource_version != NULL) {
        json_object *pre = json_object_new_object();
        if (opts->precondition_uid != NULL)
            json_object_object_add(pre, "uid", json_object_new_string(opts->precondition_uid));
        if (opts->precondition_resource_version != NULL)
            json_object_object_add(pre, "resourceVersion",
                                   json_object_new_string(opts->precondition_resource_version));
        json_object_object_add(body, "preconditions", pre);
    }
    if (opts->propagation_policy != NULL)
        json_object_object_add(body, "propagationPolicy",
                               json_object_new_string(opts->propagation_policy));
    if (opts->has_grace_period)
        json_object_object_add(body, "gracePeriodSeconds",
                               json_object_new_int64(opts->grace_period_seconds));
    return body;
}

gboolean kb_client_delete(KbClient *client, const KbResourceType *type, const char *namespace_,
                          const char *name, const KbDeleteOptions *opts, GError **error)
{
    json_object *body = delete_options_body(opts);
    KbRequest req = {
            .method = "DELETE", .type = type, .namespace_ = namespace_, .name = name, .body = body};
    return call_consuming_body(client, &req, error);
}

/* A core/v1 Binding of @namespace_/@pod to @node (new reference). */
static json_object *binding_body(const char *namespace_, const char *pod, const char *pod_uid,
                                 const char *node, const char *const *annotations)
{
    json_object *body = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *target = json_object_new_object();
    json_object_object_add(body, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(body, "kind", json_object_new_string("Binding"));
    json_object_object_add(meta, "name", json_object_new_string(pod));
    json_object_object_add(meta, "namespace", json_object_new_string(namespace_));
    /* The UID makes the binding conditional on the very pod the scheduler saw. */
    if (pod_uid != NULL && *pod_uid != '\0')
        json_object_object_add(meta, "uid", json_object_new_string(pod_uid));
    /* kube-apiserver copies a Binding's annotations onto the pod in the same write. */
    if (annotations != NULL && annotations[0] != NULL) {
        json_object *ann = json_object_new_object();
        for (guint i = 0; annotations[i] != NULL && annotations[i + 1] != NULL; i += 2)
            json_object_object_add(ann, annotations[i], json_object_new_string(annotations[i + 1]));
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(body, "metadata", meta);
    json_object_object_add(target, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(target, "kind", json_object_new_string("Node"));
    json_object_object_add(target, "name", json_object_new_string(node));
    json_object_object_add(body, "target", target);
    return body;
}

/* The same Binding as protobuf (k8s.io/api core/v1 Binding {1: ObjectMeta, 2: ObjectReference
 * target}; ObjectMeta {1: name, 3: namespace, 5: uid, 12: annotations}; ObjectReference
 * {1: kind, 3: name, 5: apiVersion}), in its "k8s\0" envelope (new array). */
static GByteArray *binding_proto(const char *namespace_, const char *pod, const char *pod_uid,
                                 const char *node, const char *const *annotations)
{
    g_autoptr(GByteArray) meta = g_byte_array_new();
    kb_proto_put_string(meta, 1, pod);
    kb_proto_put_string(meta, 3, namespace_);
    if (pod_uid != NULL && *pod_uid != '\0')
        kb_proto_put_string(meta, 5, pod_uid);
    for (guint i = 0; annotations != NULL && annotations[i] != NULL && annotations[i + 1] != NULL;
         i += 2)
        kb_proto_put_map_entry(meta, 12, annotations[i], annotations[i + 1]);
    g_autoptr(GByteArray) target = g_byte_array_new();
    kb_proto_put_string(target, 1, "Node");
    kb_proto_put_string(target, 3, node);
    kb_proto_put_string(target, 5, "v1");
    g_autoptr(GByteArray) binding = g_byte_array_new();
    kb_proto_put_message(binding, 1, meta->data, meta->len);
    kb_proto_put_message(binding, 2, target->data, target->len);
    return kb_proto_envelope("v1", "Binding", binding);
}

/* POST pods/@pod/binding: a transfer with the Binding as protobuf, unless the config says JSON
 * or the server refused protobuf; until the server has taken one, the JSON form goes along
 * (kb_client_transfer_fall_back). */
static KbTransfer *binding_transfer(KbClient *client, const char *namespace_, const char *pod,
                                    const char *pod_uid, const char *node,
                                    const char *const *annotations)
{
    KbRequest req = {.method = "POST",
                     .type = &kb_type_pods,
                     .namespace_ = namespace_,
                     .name = pod,
                     .subresource = "binding"};
    gboolean proto = !client->config->json_only && !client->protobuf_refused;
    g_autofree char *json = NULL;
    if (!proto || !client->protobuf_taken) {
        json_object *body = binding_body(namespace_, pod, pod_uid, node, annotations);
        json = g_strdup(json_object_to_json_string_ext(
                body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(body);
    }
    if (!proto)
        return kb_client_transfer_new_raw(client, &req, json, "application/json");
    g_autoptr(GByteArray) body = binding_proto(namespace_, pod, pod_uid, node, annotations);
    KbTransfer *t = kb_client_transfer_new_bytes(client, &req, body->data, body->len,
                                                 KB_PROTO_CONTENT_TYPE);
    t->json_fallback = g_steal_pointer(&json);
    return t;
}

gboolean kb_client_bind(KbClient *client, const char *namespace_, const char *pod,
                        const char *pod_uid, const char *node, GError **error)
{
    KbResponse resp;
    g_autoptr(KbTransfer) t = binding_transfer(client, namespace_, pod, pod_uid, node, NULL);
    t->stream = FALSE;
    perform(client, t, &resp);
    if (kb_client_transfer_fall_back(t, &resp)) {
        kb_client_response_clear(&resp);
        perform(client, t, &resp);
    }
    GError *local = NULL;
    json_object_put(take_result(&resp, NULL, &local));
    if (local != NULL) {
        g_propagate_error(error, local);
        return FALSE;
    }
    return TRUE;
}

void kb_client_bind_async(KbClient *client, const char *namespace_, const char *pod,
                          const char *pod_uid, const char *node, KbResponseFunc callback,
                          gpointer user_data)
{
    kb_client_bind_async_full(client, namespace_, pod, pod_uid, node, NULL, callback, user_data);
}

void kb_client_bind_async_full(KbClient *client, const char *namespace_, const char *pod,
                               const char *pod_uid, const char *node,
                               const char *const *annotations, KbResponseFunc callback,
                               gpointer user_data)
{
    KbTransfer *t = binding_transfer(client, namespace_, pod, pod_uid, node, annotations);
    t->urgent = TRUE;
    kb_client_queue_async(client, t, callback, user_data);
}

/* TRUE when @resp says the server does not serve Eviction in the version we sent: 400 "no kind
 * \"Eviction\" is registered for version ...", or a 404 that is not about the pod itself. */
static gboolean eviction_version_unknown(const KbResponse *resp)
{
    if (resp->http_status == 400 && resp->error != NULL)
        return strstr(resp->error->message, "no kind") != NULL ||
               strstr(resp->error->message, "is not registered") != NULL;
    if (resp->http_status == 404) {
        json_object *details = NULL;
        if (resp->body == NULL || !json_object_object_get_ex(resp->body, "details", &details))
            return TRUE;
        return g_strcmp0(get_string(details, "kind"), "pods") != 0;
    }
    return FALSE;
}

gboolean kb_client_evict(KbClient *client, const char *namespace_, const char *pod, GError **error)
{
    static const char *const versions[] = {"policy/v1", "policy/v1beta1"};
    KbResponse resp = {0};
    for (guint i = 0; i < G_N_ELEMENTS(versions); i++) {
        json_object *body = json_object_new_object();
        json_object *meta = json_object_new_object();
        json_object_object_add(body, "apiVersion", json_object_new_string(versions[i]));
        json_object_object_add(body, "kind", json_object_new_string("Eviction"));
        json_object_object_add(meta, "name", json_object_new_string(pod));
        json_object_object_add(meta, "namespace", json_object_new_string(namespace_));
        json_object_object_add(body, "metadata", meta);
        KbRequest req = {.method = "POST",
                         .type = &kb_type_pods,
                         .namespace_ = namespace_,
                         .name = pod,
                         .subresource = "eviction",
                         .body = body};
        g_autoptr(KbTransfer) t = kb_client_transfer_new(client, &req);
        json_object_put(body);
        kb_client_response_clear(&resp);
        perform(client, t, &resp);
        if (resp.error == NULL || !eviction_version_unknown(&resp))
            break;
    }
    gboolean ok = resp.error == NULL;
    if (!ok)
        g_propagate_error(error, g_steal_pointer(&resp.error));
    kb_client_response_clear(&resp);
    return ok;
}
