/*
 * The extender's HTTP side (see the header).
 */
#include "scheduler/extender-server.h"

#include <gio/gio.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "scheduler/claim-write.h"

#define JSON_TYPE "application/json"
#define TEXT_TYPE "text/plain; charset=utf-8"

typedef enum { VERB_FILTER, VERB_PRIORITIZE, VERB_BIND, VERB_PREEMPT, VERB_OTHER, N_VERBS } Verb;
static const char *const verb_names[N_VERBS] = {"filter", "prioritize", "bind", "preempt", "other"};

typedef struct BindCall BindCall;

struct KbExtenderServer {
    KbHttpd *httpd;
    KbExtender *ext;
    KbClient *client;
    KbMetric *requests;
    KbMetric *duration;
    KbMetric *reservations;
    KbMetric *unauthenticated;
    KbMetric *bind_refused;
    KbMetric *claim_writes;
    char *address; /* where it listens, after the loopback rule */
    gint64 (*now_s)(void);
    guint expire_source;
    GHashTable *codes;      /* GUINT code -> guint64 count */
    GPtrArray *binds;       /* BindCall* in flight */
    KbMetrics *own_metrics; /* when the caller gave no registry */
};

/*
 * Bindings still on the wire when their server is freed: their callback (if the client still
 * delivers it) frees them. Reachable from here meanwhile, so nothing counts as leaked.
 */
static GHashTable *orphans;

struct BindCall {
    KbExtenderServer *srv; /* NULL once the server is gone */
    KbHttpdRequest *req;
    KbExtenderBindingArgs *args;
    gint64 start_us;
    char *caller;
    json_object *binding; /* posted once every claim write went through or was adopted */
    GPtrArray *writes;    /* KbClaimWrite* (kb_extender_bind_claim_writes), NULL: none */
    guint next;           /* the write on the wire, or the next one */
    char **written_rv;    /* per write: the resourceVersion our write produced, NULL: not ours */
};

static gint64 wall_now(void)
{
    return g_get_real_time() / G_USEC_PER_SEC;
}

static void count(KbExtenderServer *srv, Verb verb, guint code, gint64 start_us)
{
    char c[8];
    g_snprintf(c, sizeof(c), "%u", code);
    kb_series_inc(kb_metric_with(srv->requests, verb_names[verb], c, NULL));
    if (verb != VERB_OTHER)
        kb_series_add(kb_metric_with(srv->duration, verb_names[verb], NULL),
                      (double)(g_get_monotonic_time() - start_us) / 1e6);
    gpointer k = GUINT_TO_POINTER(code);
    guint64 n = GPOINTER_TO_SIZE(g_hash_table_lookup(srv->codes, k));
    g_hash_table_insert(srv->codes, k, GSIZE_TO_POINTER(n + 1));
}

static void answer(KbExtenderServer *srv, KbHttpdRequest *req, Verb verb, guint code,
                   const char *type, char *body, gint64 start_us)
{
    count(srv, verb, code, start_us);
    kb_httpd_request_respond(req, code, type, body);
}

static void refuse(KbExtenderServer *srv, KbHttpdRequest *req, Verb verb, guint code,
                   const char *why, gint64 start_us)
{
    g_warning("extender: %s %s: %u: %s", kb_httpd_request_method(req), kb_httpd_request_path(req),
              code, why);
    answer(srv, req, verb, code, TEXT_TYPE, g_strdup_printf("%s\n", why), start_us);
}

/* 413 for a limit crossed inside the body (too many nodes, ...), 400 for the rest. */
static guint decode_status(const GError *error)
{
    return g_error_matches(error, KB_ERROR, KB_ERROR_LIMIT) ? 413 : 400;
}

static Verb parse_verb(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *last = slash != NULL ? slash + 1 : path;
    for (int v = 0; v < VERB_OTHER; v++) {
        if (strcmp(last, verb_names[v]) == 0)
            return (Verb)v;
    }
    return VERB_OTHER;
}

/* ---- verbs ----------------------------------------------------------------------------------- */

static void serve_filter(KbExtenderServer *srv, KbHttpdRequest *req, const char *body, gsize len,
                         gint64 start_us)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderArgs) args = kb_extender_args_decode(body, len, &error);
    if (args == NULL) {
        refuse(srv, req, VERB_FILTER, decode_status(error), error->message, start_us);
        return;
    }
    KbExtenderFilter f;
    kb_extender_filter(srv->ext, args, srv->now_s(), &f);
    char *out = kb_extender_filter_result_encode(args, f.why, f.unresolvable, f.error);
    if (f.error != NULL)
        g_message("extender: filter %s/%s: %s", args->pod->meta.namespace_, args->pod->meta.name,
                  f.error);
    kb_extender_filter_clear(&f);
    answer(srv, req, VERB_FILTER, 200, JSON_TYPE, out, start_us);
}

static void serve_prioritize(KbExtenderServer *srv, KbHttpdRequest *req, const char *body,
                             gsize len, gint64 start_us)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderArgs) args = kb_extender_args_decode(body, len, &error);
    if (args == NULL) {
        refuse(srv, req, VERB_PRIORITIZE, decode_status(error), error->message, start_us);
        return;
    }
    g_autofree gint64 *scores = g_new0(gint64, args->n_nodes + 1);
    kb_extender_prioritize(srv->ext, args, scores);
    answer(srv, req, VERB_PRIORITIZE, 200, JSON_TYPE, kb_extender_priorities_encode(args, scores),
           start_us);
}

static void bind_call_free(BindCall *c)
{
    kb_extender_binding_args_free(c->args);
    g_free(c->caller);
    json_object_put(c->binding);
    if (c->writes != NULL) {
        for (guint i = 0; i < c->writes->len; i++)
            g_free(c->written_rv[i]);
        g_free(c->written_rv);
        g_ptr_array_unref(c->writes);
    }
    g_free(c);
}

/* A callback of a call whose server is gone: forget it. TRUE when that was the case. */
static gboolean orphaned(BindCall *c)
{
    if (c->srv != NULL)
        return FALSE;
    g_hash_table_remove(orphans, c);
    bind_call_free(c);
    return TRUE;
}

/* Undo the claim writes this bind made, last first, each against the version it produced (a
 * claim someone changed since is left alone), as the binder does. */
static void undo_claims(KbExtenderServer *srv, BindCall *c)
{
    for (guint i = c->writes != NULL ? c->writes->len : 0; i-- > 0;) {
        if (c->written_rv[i] == NULL)
            continue;
        const KbClaimWrite *w = c->writes->pdata[i];
        kb_claim_write_undo(srv->client, w, c->written_rv[i], "extender: ");
        kb_extender_claim_written(srv->ext, w, c->args->node, FALSE);
        kb_series_inc(kb_metric_with(srv->claim_writes, "undone", NULL));
        g_clear_pointer(&c->written_rv[i], g_free);
    }
}

/* The bind is over: answer kube-scheduler with @error (NULL: bound). */
static void bind_finish(BindCall *c, const char *error)
{
    KbExtenderServer *srv = c->srv;
    g_ptr_array_remove_fast(srv->binds, c);
    if (error != NULL)
        undo_claims(srv, c);
    kb_extender_bind_end(srv->ext, c->args, error == NULL, srv->now_s());
    if (error != NULL)
        g_warning("extender: binding pod %s/%s to node %s failed: %s", c->args->pod_namespace,
                  c->args->pod_name, c->args->node, error);
    answer(srv, c->req, VERB_BIND, 200, JSON_TYPE,
           kb_extender_binding_result_encode(error != NULL ? error : ""), c->start_us);
    bind_call_free(c);
}

static void on_bound(const KbResponse *resp, gpointer data)
{
    BindCall *c = data;
    if (orphaned(c))
        return;
    bind_finish(c, resp->error != NULL ? resp->error->message : NULL);
}

static void send_next(BindCall *c);

/* After a conflict: the claim as the API server has it now. kube-scheduler's DynamicResources
 * wrote it (its PreBind runs before our bind) when it is allocated on the bind's node and
 * reserved for the pod: adopted, nothing written. Anything else fails the bind. */
static void on_claim_read(const KbResponse *resp, gpointer data)
{
    BindCall *c = data;
    if (orphaned(c))
        return;
    const KbClaimWrite *w = c->writes->pdata[c->next];
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceClaim) claim =
            resp->error == NULL ? kb_resource_claim_decode(resp->body, FALSE, &error) : NULL;
    if (claim != NULL && kb_extender_claim_adoptable(claim, c->args)) {
        g_message("extender: claim %s/%s of pod %s/%s: allocated on %s by another scheduler "
                  "(kube-scheduler's DynamicResources): adopted",
                  w->namespace_, w->name, c->args->pod_namespace, c->args->pod_name, c->args->node);
        kb_series_inc(kb_metric_with(c->srv->claim_writes, "adopted", NULL));
        c->next++;
        send_next(c);
        return;
    }
    kb_series_inc(kb_metric_with(c->srv->claim_writes, "failed", NULL));
    g_autofree char *why = g_strdup_printf(
            "claim %s/%s changed since kube-batchd's plan and is not allocated on node %s and "
            "reserved for pod %s/%s: %s",
            w->namespace_, w->name, c->args->node, c->args->pod_namespace, c->args->pod_name,
            resp->error != NULL ? resp->error->message
            : error != NULL     ? error->message
                                : "its status says otherwise");
    bind_finish(c, why);
}

static void on_claim_written(const KbResponse *resp, gpointer data)
{
    BindCall *c = data;
    if (orphaned(c))
        return;
    const KbClaimWrite *w = c->writes->pdata[c->next];
    if (resp->error == NULL) {
        json_object *meta = json_object_object_get(resp->body, "metadata");
        c->written_rv[c->next] =
                g_strdup(json_object_get_string(json_object_object_get(meta, "resourceVersion")));
        kb_extender_claim_written(c->srv->ext, w, c->args->node, TRUE);
        kb_series_inc(kb_metric_with(c->srv->claim_writes, "written", NULL));
        c->next++;
        send_next(c);
        return;
    }
    if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_CONFLICT)) {
        KbRequest req = {.method = "GET",
                         .type = &kb_type_resource_claims,
                         .namespace_ = w->namespace_,
                         .name = w->name};
        kb_client_call_async(c->srv->client, &req, on_claim_read, c);
        return;
    }
    kb_series_inc(kb_metric_with(c->srv->claim_writes, "failed", NULL));
    g_autofree char *why =
            g_strdup_printf("claim %s/%s: %s", w->namespace_, w->name, resp->error->message);
    bind_finish(c, why);
}

/* The bind's claim writes first, one at a time, then the Binding. */
static void send_next(BindCall *c)
{
    if (c->writes == NULL || c->next >= c->writes->len) {
        KbRequest r = {.method = "POST",
                       .type = &kb_type_pods,
                       .namespace_ = c->args->pod_namespace,
                       .name = c->args->pod_name,
                       .subresource = "binding",
                       .body = c->binding};
        kb_client_call_async(c->srv->client, &r, on_bound, c);
        return;
    }
    const KbClaimWrite *w = c->writes->pdata[c->next];
    kb_claim_write_send(c->srv->client, w, FALSE, on_claim_written, c);
}

/* Who called, for the logs: the client certificate's name, else the address. */
static char *caller(KbHttpdRequest *req)
{
    g_autofree char *address = kb_httpd_request_address(req);
    const char *peer = kb_httpd_request_peer(req);
    if (peer != NULL)
        return g_strdup_printf("%s at %s", peer, address);
    return g_strdup_printf("unauthenticated caller at %s", address);
}

static void serve_bind(KbExtenderServer *srv, KbHttpdRequest *req, const char *body, gsize len,
                       gint64 start_us)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderBindingArgs) args = kb_extender_binding_args_decode(body, len, &error);
    if (args == NULL) {
        refuse(srv, req, VERB_BIND, decode_status(error), error->message, start_us);
        return;
    }
    if (srv->client == NULL) {
        answer(srv, req, VERB_BIND, 200, JSON_TYPE,
               kb_extender_binding_result_encode("kube-batchd has no API server connection"),
               start_us);
        return;
    }
    g_autofree char *why = NULL;
    g_autofree char *who = caller(req);
    const char *reason = NULL;
    json_object *binding = kb_extender_bind_begin(srv->ext, args, &reason, &why);
    if (binding == NULL) {
        g_warning("extender: bind of pod %.253s/%.253s to node %.253s by %s refused (%s): %s",
                  args->pod_namespace, args->pod_name, args->node, who, reason, why);
        kb_series_inc(kb_metric_with(srv->bind_refused, reason, NULL));
        answer(srv, req, VERB_BIND, 200, JSON_TYPE, kb_extender_binding_result_encode(why),
               start_us);
        return;
    }
    g_message("extender: binding pod %s/%s to node %s for %s", args->pod_namespace, args->pod_name,
              args->node, who);
    BindCall *c = g_new0(BindCall, 1);
    c->srv = srv;
    c->req = req;
    c->args = g_steal_pointer(&args);
    c->start_us = start_us;
    c->caller = g_steal_pointer(&who);
    c->binding = binding;
    c->writes = kb_extender_bind_claim_writes(srv->ext, c->args);
    if (c->writes != NULL)
        c->written_rv = g_new0(char *, c->writes->len);
    g_ptr_array_add(srv->binds, c);
    send_next(c);
}

static void serve_preempt(KbExtenderServer *srv, KbHttpdRequest *req, const char *body, gsize len,
                          gint64 start_us)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderPreemptionArgs) args =
            kb_extender_preemption_args_decode(body, len, &error);
    if (args == NULL) {
        refuse(srv, req, VERB_PREEMPT, decode_status(error), error->message, start_us);
        return;
    }
    g_autofree gboolean *keep = g_new0(gboolean, args->n_nodes + 1);
    g_autofree GPtrArray **victims = g_new0(GPtrArray *, args->n_nodes + 1);
    kb_extender_preempt(srv->ext, args, srv->now_s(), keep, victims);
    char *out = kb_extender_preemption_result_encode(args, keep, victims);
    for (guint i = 0; i < args->n_nodes; i++)
        g_clear_pointer(&victims[i], g_ptr_array_unref);
    answer(srv, req, VERB_PREEMPT, 200, JSON_TYPE, out, start_us);
}

static void handle(KbHttpdRequest *req, gpointer data)
{
    KbExtenderServer *srv = data;
    gint64 start_us = g_get_monotonic_time();
    const char *path = kb_httpd_request_path(req);
    Verb verb = parse_verb(path);
    if (verb == VERB_OTHER) {
        g_autofree char *why = g_strdup_printf("no extender verb at path \"%.128s\" (filter, "
                                               "prioritize, bind, preempt)",
                                               path);
        refuse(srv, req, verb, 404, why, start_us);
        return;
    }
    if (strcmp(kb_httpd_request_method(req), "POST") != 0) {
        refuse(srv, req, verb, 405, "extender verbs take POST", start_us);
        return;
    }
    gsize len = 0;
    const char *body = kb_httpd_request_body(req, &len);
    switch (verb) {
    case VERB_FILTER:
        serve_filter(srv, req, body, len, start_us);
        break;
    case VERB_PRIORITIZE:
        serve_prioritize(srv, req, body, len, start_us);
        break;
    case VERB_BIND:
        serve_bind(srv, req, body, len, start_us);
        break;
    default:
        serve_preempt(srv, req, body, len, start_us);
        break;
    }
}

static gboolean on_expire(gpointer data)
{
    KbExtenderServer *srv = data;
    kb_extender_expire(srv->ext, srv->now_s());
    kb_series_set(kb_metric_series(srv->reservations, NULL), kb_extender_reservations(srv->ext));
    return G_SOURCE_CONTINUE;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

static void metrics_init(KbExtenderServer *srv, KbMetrics *metrics)
{
    static const char *const verb_code[] = {"verb", "code", NULL};
    static const char *const verb[] = {"verb", NULL};
    srv->requests =
            kb_metrics_counter(metrics, "kube_batchd_extender_requests_total",
                               "Extender calls answered, by verb and HTTP status", verb_code);
    srv->duration = kb_metrics_histogram(metrics, "kube_batchd_extender_duration_seconds",
                                         "Extender call handling time (bind: API round trip "
                                         "included)",
                                         verb, NULL, 0);
    srv->reservations = kb_metrics_gauge(metrics, "kube_batchd_extender_reservations",
                                         "Gangs holding extender reservations", NULL);
    static const char *const reason[] = {"reason", NULL};
    srv->unauthenticated =
            kb_metrics_counter(metrics, "kube_batchd_extender_unauthenticated_total",
                               "Extender calls refused 401: no valid client certificate", NULL);
    srv->bind_refused =
            kb_metrics_counter(metrics, "kube_batchd_extender_bind_refused_total",
                               "Extender binds refused without a write, by reason", reason);
    for (guint i = 0; kb_extender_bind_refusals[i] != NULL; i++)
        kb_metric_with(srv->bind_refused, kb_extender_bind_refusals[i], NULL);
    static const char *const result[] = {"result", NULL};
    srv->claim_writes = kb_metrics_counter(metrics, "kube_batchd_extender_claim_writes_total",
                                           "ResourceClaim status writes of extender binds: "
                                           "written, adopted (kube-scheduler had allocated "
                                           "the claim), undone, failed",
                                           result);
    static const char *const results[] = {"written", "adopted", "undone", "failed", NULL};
    for (guint i = 0; results[i] != NULL; i++)
        kb_metric_with(srv->claim_writes, results[i], NULL);
}

static void on_unauthenticated(const char *method, const char *path, const char *address,
                               const char *why, gpointer data)
{
    KbExtenderServer *srv = data;
    kb_series_inc(kb_metric_series(srv->unauthenticated, NULL));
    count(srv, parse_verb(path), 401, g_get_monotonic_time());
}

/*
 * Without client certificates anyone who reaches the port may bind pods: unless the caller
 * says so explicitly (allow_unauthenticated), listen on loopback only, keeping the port.
 */
static char *effective_address(const KbExtenderServerOptions *opts, GError **error)
{
    g_autofree char *host = NULL;
    guint16 port = 0;
    if (!kb_httpd_parse_address(opts->address, &host, &port, error))
        return NULL;
    if (opts->client_ca != NULL || opts->allow_unauthenticated)
        return g_strdup(opts->address);
    g_autoptr(GInetAddress) ia = host != NULL ? g_inet_address_new_from_string(host) : NULL;
    if (ia != NULL && g_inet_address_get_is_loopback(ia))
        return g_strdup(opts->address);
    g_warning("extender: no client CA (--extender-client-ca-file): listening on 127.0.0.1:%u "
              "instead of %s, as anyone reaching the port could bind pods",
              port, opts->address);
    return g_strdup_printf("127.0.0.1:%u", port);
}

KbExtenderServer *kb_extender_server_new(const KbExtenderServerOptions *opts, KbExtender *ext,
                                         KbClient *client, KbMetrics *metrics, GError **error)
{
    KbHttpdTls tls = {.cert_file = opts->tls_cert,
                      .key_file = opts->tls_key,
                      .client_ca_file = opts->client_ca};
    gsize max_body = opts->max_body > 0 ? opts->max_body : KB_EXTENDER_MAX_BODY_BYTES;
    g_autofree char *address = effective_address(opts, error);
    if (address == NULL)
        return NULL;
    if (opts->client_ca == NULL && opts->allow_unauthenticated)
        g_warning("extender: serving %s without client certificates: anyone who reaches it can "
                  "bind pods kube-batchd plans",
                  address);
    KbHttpd *httpd = kb_httpd_new_full(address, NULL, &tls, max_body, error);
    if (httpd == NULL)
        return NULL;
    KbExtenderServer *srv = g_new0(KbExtenderServer, 1);
    srv->httpd = httpd;
    srv->address = g_steal_pointer(&address);
    srv->ext = ext;
    srv->client = client;
    srv->now_s = opts->now_s != NULL ? opts->now_s : wall_now;
    srv->codes = g_hash_table_new(g_direct_hash, g_direct_equal);
    srv->binds = g_ptr_array_new();
    if (metrics == NULL)
        metrics = srv->own_metrics = kb_metrics_new();
    metrics_init(srv, metrics);
    kb_httpd_set_handler(httpd, handle, srv);
    kb_httpd_set_refused_func(httpd, on_unauthenticated, srv);
    srv->expire_source = g_timeout_add_seconds(1, on_expire, srv);
    return srv;
}

guint16 kb_extender_server_port(const KbExtenderServer *srv)
{
    return kb_httpd_port(srv->httpd);
}

const char *kb_extender_server_address(const KbExtenderServer *srv)
{
    return srv->address;
}

guint64 kb_extender_server_count(const KbExtenderServer *srv, guint code)
{
    return GPOINTER_TO_SIZE(g_hash_table_lookup(srv->codes, GUINT_TO_POINTER(code)));
}

guint kb_extender_server_binds_in_flight(const KbExtenderServer *srv)
{
    return srv->binds->len;
}

void kb_extender_server_free(KbExtenderServer *srv)
{
    if (srv == NULL)
        return;
    if (srv->expire_source != 0)
        g_source_remove(srv->expire_source);
    /* Bindings still on the wire complete into the void; their requests get the httpd's 503. */
    if (srv->binds->len > 0 && orphans == NULL)
        orphans = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < srv->binds->len; i++) {
        BindCall *c = srv->binds->pdata[i];
        c->srv = NULL;
        c->req = NULL;
        g_hash_table_add(orphans, c);
    }
    g_ptr_array_unref(srv->binds);
    kb_httpd_free(srv->httpd);
    g_hash_table_unref(srv->codes);
    g_free(srv->address);
    g_clear_pointer(&srv->own_metrics, kb_metrics_free);
    g_free(srv);
}
