/* bin/kb-apiserver: the in-memory Kubernetes API server (see kas-server.h). */
#include <glib-unix.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testbed/apiserver/kas-server.h"

static const char description[] =
    "Serves the part of the Kubernetes API that kube-batchd, tf-operator and kubectl use, from\n"
    "memory: `kubectl --server http://127.0.0.1:PORT ...` works against it. Prints\n"
    "\"listening on http://HOST:PORT\" once ready; SIGTERM or SIGINT stop it cleanly.\n"
    "\n"
    "Simulated kubelets (--simulate-kubelet): nodes become Ready and renew their Lease; a bound\n"
    "pod goes Pending -> Running, then exits after the pod annotation\n"
    "sim.kube-batchd.io/run-seconds with sim.kube-batchd.io/exit-code (restartPolicy decides\n"
    "between Succeeded/Failed and a container restart); without them it runs until deleted.\n"
    "\n"
    "Fault SPEC (--faults, or POST it to /admin/faults; GET /admin/faults shows the rules):\n"
    "  SPEC := RULE {';' RULE}      RULE := ACTION {',' KEY=VALUE}\n"
    "  ACTION: error=CODE          answer CODE (409, 429, 500, 503, ...) with a Status;\n"
    "                              429 and 503 carry Retry-After (retry=S, default 1)\n"
    "          latency=MS          delay matching requests by MS milliseconds\n"
    "          cut-watch           close matching watch streams after `after=N` events\n"
    "                              (default 0); mid=1 cuts in the middle of the next event\n"
    "          stall-watch=MS      stop sending for MS ms once `after=N` events were sent\n"
    "          expire-history      one-shot: drop the watch history (old RVs get 410)\n"
    "          restart             one-shot: close every watch and drop the history\n"
    "  KEYS:   method=GET|POST|PUT|PATCH|DELETE|*   path=GLOB (shell pattern on the path)\n"
    "          fraction=0..1   count=N (fire at most N times)   retry=S   after=N   mid=0|1\n"
    "  e.g.    --faults 'error=503,method=POST,path=*binding,fraction=0.1;latency=5'\n"
    "\n"
    "Admin endpoints: GET/POST /admin/faults, POST /admin/restart, POST /admin/expire-history,\n"
    "GET /admin/stats (with the counts of 401 and 403 answers). They need no credentials.\n"
    "\n"
    "Security (as kube-apiserver 1.19): --tls-cert-file/--tls-private-key-file serve HTTPS.\n"
    "--token-auth-file reads token,user,uid[,\"group1,group2\"] lines; an unknown bearer token\n"
    "gets 401, no credentials is system:anonymous (group system:unauthenticated); a user\n"
    "system:serviceaccount:NS:NAME is also in system:serviceaccounts and\n"
    "system:serviceaccounts:NS. --authorization-mode RBAC (or Node,RBAC) evaluates the stored\n"
    "ClusterRoles, Roles and their bindings (no aggregation); system:masters may do anything;\n"
    "the bootstrap roles system:discovery, system:basic-user, system:public-info-viewer and\n"
    "cluster-admin exist from the start. POST authorization.k8s.io/v1 selfsubjectaccessreviews\n"
    "and subjectaccessreviews answer what a user may do.\n"
    "\n"
    "CRD conversion webhooks (spec.conversion.strategy Webhook) are called as kube-apiserver calls\n"
    "them, over HTTPS verified against the CRD's caBundle; a webhook given as a Service connects to\n"
    "the address --service-address names for it.\n"
    "\n"
    "Not supported: server-side apply, dry-run, protobuf, client certificates, ServiceAccount\n"
    "token issuing, impersonation, RBAC escalation checks, admission webhooks,\n"
    "CRD schema validation and defaulting, PodDisruptionBudgets (evictions always succeed).\n";

static gboolean on_signal(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_CONTINUE;
}

/*
 * glibc gives threads at most 8 malloc arenas per core (16 on 2 cores); past that they share
 * them and queue on their locks. kb-apiserver runs a thread per connection (a scheduler's 16-64
 * bindings in flight, its watches, the kubelets), and once bindings and claim writes were built
 * outside the store's lock (kas-ops.c) their JSON's mallocs met on the arenas' locks instead:
 * kb-apiserver's CPU per binding in bench-e2e's nvidia.com/gpu run rose from 0.07 ms to 0.08-0.11;
 * 64 arenas took it back to 0.07-0.09, and the DRA run's from 0.18-0.23 to 0.15-0.20.
 * MALLOC_ARENA_MAX or GLIBC_TUNABLES's arena_max still decide when set.
 */
#define KAS_MALLOC_ARENAS 64

static void malloc_arenas(void)
{
    const char *tunables = g_getenv("GLIBC_TUNABLES");
    if (g_getenv("MALLOC_ARENA_MAX") == NULL &&
        (tunables == NULL || strstr(tunables, "arena_max") == NULL))
        mallopt(M_ARENA_MAX, KAS_MALLOC_ARENAS);
}

int main(int argc, char **argv)
{
    malloc_arenas();
    KasServerOptions opts;
    kas_server_options_init(&opts);
    g_autofree char *listen = NULL, *nodes = NULL, *faults = NULL;
    g_autofree char *tls_cert = NULL, *tls_key = NULL, *tokens = NULL, *authz = NULL;
    g_autofree char *runtime_config = NULL;
    g_auto(GStrv) service_addresses = NULL;
    gint conversion_timeout = 0;
    gboolean simulate = FALSE, claim_controller = FALSE;
    gint history = (gint)opts.watch_history, queue = (gint)opts.watch_queue;
    gint bookmark = (gint)opts.bookmark_ms, max_conn = (gint)opts.max_connections;
    gint header_timeout = (gint)opts.header_timeout;
    gint start_ms = (gint)opts.kubelet_start_ms, stop_ms = (gint)opts.kubelet_stop_ms;
    gint heartbeat = (gint)opts.heartbeat_ms, watch_timeout = (gint)opts.min_watch_timeout;
    gint64 max_body = (gint64)opts.max_body, seed = 1;
    GOptionEntry entries[] = {
        { "listen", 0, 0, G_OPTION_ARG_STRING, &listen, "Address to serve on (default 127.0.0.1:0: any free port)", "HOST:PORT" },
        { "simulate-kubelet", 0, 0, G_OPTION_ARG_NONE, &simulate, "Run a simulated kubelet for every node", NULL },
        { "nodes", 0, 0, G_OPTION_ARG_FILENAME, &nodes, "Create the nodes described in FILE (YAML or JSON)", "FILE" },
        { "faults", 0, 0, G_OPTION_ARG_STRING, &faults, "Inject faults (syntax below)", "SPEC" },
        { "faults-seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed for fraction= in fault rules (default 1)", "N" },
        { "watch-history", 0, 0, G_OPTION_ARG_INT, &history, "Events kept for watch resumption (default 10000)", "N" },
        { "watch-queue", 0, 0, G_OPTION_ARG_INT, &queue, "Events a watcher may lag before it is closed (default 10000)", "N" },
        { "bookmark-interval", 0, 0, G_OPTION_ARG_INT, &bookmark, "Milliseconds between BOOKMARK events (default 60000, as kube-apiserver)", "MS" },
        { "max-body", 0, 0, G_OPTION_ARG_INT64, &max_body, "Request body limit in bytes (default 3 MiB)", "BYTES" },
        { "max-connections", 0, 0, G_OPTION_ARG_INT, &max_conn, "Open connections before requests get 429 (default 1000)", "N" },
        { "read-header-timeout", 0, 0, G_OPTION_ARG_INT, &header_timeout, "Seconds a connection has to send a complete request header (default 10)", "S" },
        { "min-watch-timeout", 0, 0, G_OPTION_ARG_INT, &watch_timeout, "Watches without timeoutSeconds end after [S, 2S) seconds (default 1800)", "S" },
        { "kubelet-start-delay", 0, 0, G_OPTION_ARG_INT, &start_ms, "Simulated kubelet: ms from binding to Running (default 100)", "MS" },
        { "kubelet-stop-delay", 0, 0, G_OPTION_ARG_INT, &stop_ms, "Simulated kubelet: ms to confirm a pod deletion (default 100)", "MS" },
        { "heartbeat-interval", 0, 0, G_OPTION_ARG_INT, &heartbeat, "Simulated kubelet: ms between Lease renewals (default 10000)", "MS" },
        { "tls-cert-file", 0, 0, G_OPTION_ARG_FILENAME, &tls_cert, "Serve HTTPS with this PEM certificate (chain)", "FILE" },
        { "tls-private-key-file", 0, 0, G_OPTION_ARG_FILENAME, &tls_key, "The PEM private key of --tls-cert-file", "FILE" },
        { "token-auth-file", 0, 0, G_OPTION_ARG_FILENAME, &tokens, "Authenticate bearer tokens from this CSV file (token,user,uid,\"group1,group2\")", "FILE" },
        { "runtime-config", 0, 0, G_OPTION_ARG_STRING, &runtime_config, "Switch API group/versions on or off, as kube-apiserver: scheduling.k8s.io/v1beta1=true serves Workloads and PodGroups, scheduling.k8s.io/v1alpha3=true CompositePodGroups and both at v1alpha3 (off by default)", "GV=BOOL,..." },
        { "service-address", 0, 0, G_OPTION_ARG_STRING_ARRAY, &service_addresses, "Where port PORT of Service NAME in NAMESPACE connects to, for CRD conversion webhooks named by service (repeatable)", "NAMESPACE/NAME:PORT=HOST:PORT" },
        { "conversion-webhook-timeout", 0, 0, G_OPTION_ARG_INT, &conversion_timeout, "Milliseconds a CRD conversion webhook may take (default 30000, as kube-apiserver)", "MS" },
        { "resource-claim-controller", 0, 0, G_OPTION_ARG_NONE, &claim_controller, "Run kube-controller-manager's resource-claim controller: a claim per pod from its ResourceClaimTemplate, reservations of finished pods released, their generated claims deleted", NULL },
        { "authorization-mode", 0, 0, G_OPTION_ARG_STRING, &authz, "Authorizers in order: AlwaysAllow (default), AlwaysDeny, RBAC, Node", "MODES" },
        { NULL },
    };
    g_autoptr(GOptionContext) oc = g_option_context_new("- in-memory Kubernetes API server for tests");
    g_option_context_add_main_entries(oc, entries, NULL);
    g_option_context_set_description(oc, description);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(oc, &argc, &argv, &error)) {
        fprintf(stderr, "kb-apiserver: %s\n", error->message);
        return 2;
    }
    if (history <= 0 || queue <= 0 || bookmark <= 0 || max_conn <= 0 || max_body <= 0 ||
        start_ms < 0 || stop_ms < 0 || heartbeat <= 0 || watch_timeout <= 0 ||
        conversion_timeout < 0) {
        fprintf(stderr, "kb-apiserver: numeric options must be positive\n");
        return 2;
    }
    if (runtime_config != NULL && !kas_server_runtime_config(&opts, runtime_config, &error)) {
        fprintf(stderr, "kb-apiserver: %s\n", error->message);
        return 2;
    }
    if (listen != NULL)
        opts.listen = listen;
    opts.simulate_kubelet = simulate;
    opts.resource_claim_controller = claim_controller;
    opts.nodes_file = nodes;
    opts.faults = faults;
    opts.faults_seed = (guint64)seed;
    opts.watch_history = (guint)history;
    opts.watch_queue = (guint)queue;
    opts.bookmark_ms = (guint)bookmark;
    opts.max_body = (gsize)max_body;
    opts.max_connections = (guint)max_conn;
    opts.header_timeout = (guint)MAX(header_timeout, 1);
    opts.min_watch_timeout = (guint)watch_timeout;
    opts.kubelet_start_ms = (guint)MAX(start_ms, 1);
    opts.kubelet_stop_ms = (guint)MAX(stop_ms, 1);
    opts.heartbeat_ms = (guint)heartbeat;
    opts.tls_cert_file = tls_cert;
    opts.tls_key_file = tls_key;
    opts.token_auth_file = tokens;
    opts.authorization_mode = authz;
    opts.service_addresses = (const char *const *)service_addresses;
    opts.conversion_timeout_ms = (guint)conversion_timeout;
    signal(SIGPIPE, SIG_IGN);
    g_autoptr(KasServer) srv = kas_server_new(&opts, &error);
    if (srv == NULL) {
        fprintf(stderr, "kb-apiserver: %s\n", error->message);
        return 1;
    }
    /* Handlers first: a client may send SIGTERM as soon as it reads the line. */
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    guint s1 = g_unix_signal_add(SIGTERM, on_signal, loop);
    guint s2 = g_unix_signal_add(SIGINT, on_signal, loop);
    printf("listening on %s\n", kas_server_url(srv));
    fflush(stdout);
    g_main_loop_run(loop);
    g_source_remove(s1);
    g_source_remove(s2);
    return 0;
}
