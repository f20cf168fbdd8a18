/*
 * Connection configuration and the REST client.
 *
 * One KbClient per process talks to one API server. It owns a libcurl multi handle driven from
 * a GMainContext (the thread-default context at creation): asynchronous requests and streams run
 * on it, bounded by max_in_flight, reusing keep-alive connections (HTTP/2 over TLS when offered).
 * Blocking calls (kb_client_call and the helpers around it) use a separate easy handle that shares
 * the connection cache; they are for tests, startup and low-rate controllers.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-error.h"

/* ---- configuration --------------------------------------------------------------------- */

typedef struct {
    char *server;    /* "https://10.0.0.1:6443" or "http://127.0.0.1:8001" */
    char *ca_file;   /* PEM file, or NULL */
    GBytes *ca_data; /* PEM bytes (certificate-authority-data, decoded), or NULL */
    char *cert_file; /* client certificate, or NULL */
    GBytes *cert_data;
    char *key_file; /* client key, or NULL */
    GBytes *key_data;
    char *token;      /* bearer token, or NULL */
    char *token_file; /* re-read when its mtime changes (service-account rotation) */
    gboolean insecure_skip_tls_verify; /* only when the kubeconfig says so explicitly */
    char *user_agent;                  /* default "kube-batchd/<version>" */
    guint timeout_ms;                  /* per-request timeout for non-watch calls; default 30000 */
    /* Ask for gzip-compressed responses (Accept-Encoding: gzip; kube-apiserver compresses those
     * over 128 KiB). Off by default, as in Kubernetes' own control-plane clients since 1.16: next
     * to its API server, a daemon's large lists cost the server more CPU to compress than the
     * network saves. kbctl, which may be far from the cluster, turns it on. */
    gboolean compression;
    /* Send Bindings as JSON rather than protobuf. By default they go as protobuf, as client-go
     * sends built-in objects (kube-scheduler's --kube-api-content-type), which kube-apiserver
     * decodes for less CPU; a server that answers 415 gets JSON from then on. */
    gboolean json_only;
    guint qps_burst;                   /* unused for now: 0 */
} KbConfig;

/* Largest kubeconfig accepted (KB_ERROR_LIMIT beyond). */
#define KB_KUBECONFIG_MAX_BYTES (1 << 20)

/* A plain config for @server (copied, may be NULL) with the defaults filled in (user agent,
 * timeout). Free with kb_config_free(). */
KbConfig *kb_config_new(const char *server);
/* A deep copy of @config, with defaults filled in for unset user_agent and timeout_ms. */
KbConfig *kb_config_copy(const KbConfig *config);

/* Load @path (YAML kubeconfig). @context NULL means current-context. Relative file paths are
 * resolved against the kubeconfig's directory. certificate-authority-data, client-certificate-data
 * and client-key-data are strict base64 of PEM; tokenFile wins over token (as in client-go).
 * Errors (KB_ERROR_CONFIG, KB_ERROR_LIMIT over KB_KUBECONFIG_MAX_BYTES) name the file, the
 * context, the cluster or user, and the field. */
KbConfig *kb_config_load_kubeconfig(const char *path, const char *context, GError **error);

/* The namespace of @context (NULL: current-context) in kubeconfig @path: newly allocated, NULL
 * when the context names none or does not exist (no error then); NULL with the error when the
 * file cannot be read or parsed. kubectl's default namespace. */
char *kb_config_kubeconfig_namespace(const char *path, const char *context, GError **error);

/* In-cluster: KUBERNETES_SERVICE_HOST/PORT, the service-account token file and ca.crt under
 * @sa_dir (NULL means /var/run/secrets/kubernetes.io/serviceaccount). */
KbConfig *kb_config_in_cluster(const char *sa_dir, GError **error);

/*
 * What every binary's --kubeconfig/--master flags resolve to: @master alone gives a plain config
 * for that URL; @kubeconfig (or $KUBECONFIG) is loaded, with @master overriding its server;
 * neither tries in-cluster, then ~/.kube/config. The error says which sources were tried.
 * Precisely: @kubeconfig given -> load it (server replaced by @master when given); else @master
 * given -> plain config; else $KUBECONFIG (its first file when it is a list) -> load it; else
 * in-cluster; else ~/.kube/config ($HOME). Empty strings count as not given.
 */
KbConfig *kb_config_from_flags(const char *kubeconfig, const char *master, GError **error);
void kb_config_free(KbConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbConfig, kb_config_free)

/* ---- resources and requests --------------------------------------------------------------- */

/* Where a resource lives: /api/v1/... when group is "" else /apis/GROUP/VERSION/... */
typedef struct {
    const char *group;   /* "" for the core group */
    const char *version; /* "v1" */
    const char *plural;  /* "pods" */
    gboolean namespaced;
} KbResourceType;

extern const KbResourceType kb_type_pods;
extern const KbResourceType kb_type_nodes;
extern const KbResourceType kb_type_namespaces;
extern const KbResourceType kb_type_services;
extern const KbResourceType kb_type_events;
extern const KbResourceType kb_type_configmaps;
extern const KbResourceType kb_type_pvcs;
extern const KbResourceType kb_type_leases;           /* coordination.k8s.io/v1 */
extern const KbResourceType kb_type_priority_classes; /* scheduling.k8s.io/v1 */
extern const KbResourceType kb_type_crds;             /* apiextensions.k8s.io/v1 */
extern const KbResourceType
        kb_type_pod_groups_kube_batch;                  /* scheduling.incubator.k8s.io/v1alpha1 */
extern const KbResourceType kb_type_pod_groups_volcano; /* scheduling.volcano.sh/v1beta1 */
extern const KbResourceType kb_type_pod_groups_x_k8s;   /* scheduling.x-k8s.io/v1alpha1 */
extern const KbResourceType kb_type_pod_groups_native;  /* scheduling.k8s.io/v1beta1 */
extern const KbResourceType kb_type_workloads_native;   /* scheduling.k8s.io/v1beta1 */
extern const KbResourceType kb_type_queues_kube_batch;  /* scheduling.incubator.k8s.io/v1alpha1 */
extern const KbResourceType kb_type_queues_volcano;     /* scheduling.volcano.sh/v1beta1 */
extern const KbResourceType kb_type_tfjobs_v1;          /* kubeflow.org/v1 */
/* resource.k8s.io/v1 (DRA) */
extern const KbResourceType kb_type_device_classes;
extern const KbResourceType kb_type_resource_claims;
extern const KbResourceType kb_type_resource_claim_templates;
extern const KbResourceType kb_type_resource_slices;
extern const KbResourceType kb_type_tfjobs_v1alpha1;    /* kubeflow.org/v1alpha1 */
/* scheduling.k8s.io/v1alpha3 (1.37 alpha, CompositePodGroup): PodGroups there, composites */
extern const KbResourceType kb_type_pod_groups_v1alpha3;
extern const KbResourceType kb_type_composite_pod_groups;

/* "/api/v1/namespaces/NS/pods/NAME/SUB" (any of ns, name, sub may be NULL); newly allocated. */
char *kb_resource_path(const KbResourceType *type, const char *namespace_, const char *name,
                       const char *subresource);

typedef enum {
    KB_PATCH_MERGE,     /* application/merge-patch+json */
    KB_PATCH_JSON,      /* application/json-patch+json */
    KB_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
} KbPatchType;

typedef struct {
    const char *label_selector;
    const char *field_selector;
    gint64 limit; /* 0: no paging */
    const char *continue_token;
    const char *resource_version;
    gboolean watch;
    gboolean allow_watch_bookmarks;
    guint timeout_seconds; /* server-side timeout for watches, 0 = none */
} KbListOptions;

typedef struct {
    const char *precondition_uid;
    const char *precondition_resource_version;
    const char *propagation_policy; /* "Foreground", "Background", "Orphan", or NULL */
    /* Zero-initialized options leave the grace period to the server; set has_grace_period to send
     * grace_period_seconds (0 deletes immediately). */
    gboolean has_grace_period;
    gint64 grace_period_seconds;
} KbDeleteOptions;

typedef struct {
    const char *method;         /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const KbResourceType *type; /* NULL when path is given */
    const char *namespace_;
    const char *name;
    const char *subresource;   /* "status", "binding", "eviction", ... */
    const char *path;          /* raw path ("/version"), overrides type/ns/name */
    const KbListOptions *list; /* query parameters for GET/watch */
    const char *query;         /* extra raw query string (without '?'), may be NULL */
    json_object *body;         /* serialized as the request body; not consumed */
    const char *body_text;     /* without @body: sent as is (JSON text), not consumed */
    const char *content_type;  /* default application/json */
    gboolean stream;           /* a watch: no overall timeout, low-speed timeout instead */
    /* Asynchronous only: queued ahead of every waiting request without it (after the urgent ones
     * queued earlier). The scheduler's bindings and evictions are, so that they never wait behind
     * thousands of status writes (kai-reclaim-250 on kube-apiserver: the first eviction 13-34 s
     * after the job arrived, behind 4,000 PodGroup status PATCHes). */
    gboolean urgent;
    /* A 2xx answer's body is not parsed into KbResponse.body: only its metadata.resourceVersion
     * is read (into KbResponse.resource_version), the body checked as JSON on the way. For
     * writes whose answer is needed for nothing else: the binder's claim status writes, whose
     * full claim cost kube-batchd a parse per pod. Errors are parsed as always. */
    gboolean version_only;
} KbRequest;

typedef struct {
    int http_status;           /* 0 on transport errors */
    json_object *body;         /* parsed response body (may be NULL); owned by the response */
    GError *error;             /* NULL on 2xx; else a KB_ERROR mapped from metav1.Status */
    guint retry_after_seconds; /* from Retry-After or Status.details.retryAfterSeconds */
    char *resource_version;    /* KbRequest.version_only: metadata.resourceVersion, or NULL */
} KbResponse;

typedef struct KbClient KbClient;

/* Largest response body of a non-stream request (KB_ERROR_LIMIT beyond), by default. */
#define KB_CLIENT_MAX_BODY_BYTES ((gsize)64 << 20)

/* A client for @config (copied). Never fails for a valid config (KB_ERROR_CONFIG without a
 * server URL); errors surface per request. */
KbClient *kb_client_new(const KbConfig *config, GError **error);
/* Requests still queued or in flight are dropped without their callbacks. Not from inside a
 * callback of this client. */
void kb_client_free(KbClient *client);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbClient, kb_client_free)

/* At most @n asynchronous requests and streams on the wire at once (default 64); the rest queue
 * in submission order. */
void kb_client_set_max_in_flight(KbClient *client, guint n);
/* Low-speed limit for streams: a stream that receives nothing (not even a bookmark or chunk) for
 * @seconds fails with KB_ERROR_TIMEOUT (default 90). A watch with timeoutSeconds T may be silent
 * for T + @seconds: a real API server sends nothing at all on a quiet resource until T. */
void kb_client_set_stream_idle_timeout(KbClient *client, guint seconds);
/* Largest response body accepted for non-stream requests (default KB_CLIENT_MAX_BODY_BYTES);
 * a larger one fails with KB_ERROR_LIMIT. */
void kb_client_set_max_body_size(KbClient *client, gsize bytes);
const char *kb_client_server(const KbClient *client);

/* ---- blocking calls (tests, startup, low-rate controllers) ------------------------------------
 */

/* Performs @req and returns the parsed body of a 2xx response (new reference; NULL for an empty
 * body), or NULL with the mapped error. @retry_after receives Retry-After on 429 (may be NULL). */
json_object *kb_client_call(KbClient *client, const KbRequest *req, guint *retry_after,
                            GError **error);

json_object *kb_client_get(KbClient *client, const KbResourceType *type, const char *namespace_,
                           const char *name, GError **error);
/* One page of a list: the List object (items, metadata.resourceVersion, metadata.continue). */
json_object *kb_client_list(KbClient *client, const KbResourceType *type, const char *namespace_,
                            const KbListOptions *opts, GError **error);
json_object *kb_client_create(KbClient *client, const KbResourceType *type, const char *namespace_,
                              json_object *body, GError **error);
/* PUT; the body's metadata.resourceVersion makes it conditional (409 Conflict when stale).
 * @subresource NULL or "status". */
json_object *kb_client_update(KbClient *client, const KbResourceType *type, const char *namespace_,
                              const char *name, const char *subresource, json_object *body,
                              GError **error);
json_object *kb_client_patch(KbClient *client, const KbResourceType *type, const char *namespace_,
                             const char *name, const char *subresource, KbPatchType patch_type,
                             const char *patch, GError **error);
gboolean kb_client_delete(KbClient *client, const KbResourceType *type, const char *namespace_,
                          const char *name, const KbDeleteOptions *opts, GError **error);
/* POST pods/NAME/binding. */
gboolean kb_client_bind(KbClient *client, const char *namespace_, const char *pod,
                        const char *pod_uid, const char *node, GError **error);
/* POST pods/NAME/eviction with policy/v1, falling back to policy/v1beta1 when the server
 * does not know v1 (404 on the kind / 400 "no kind Eviction is registered"). */
gboolean kb_client_evict(KbClient *client, const char *namespace_, const char *pod, GError **error);

/* ---- asynchronous requests and streams on the main loop ------------------------------------- */

/* Called once on the client's main context. @resp is owned by the client and valid only during
 * the call (take a reference to resp->body with json_object_get to keep it). */
typedef void (*KbResponseFunc)(const KbResponse *resp, gpointer user_data);

/* Queue @req; @req and everything it points to is copied before return. */
void kb_client_call_async(KbClient *client, const KbRequest *req, KbResponseFunc callback,
                          gpointer user_data);
/* Asynchronous binding, for the binder (urgent, see KbRequest). */
void kb_client_bind_async(KbClient *client, const char *namespace_, const char *pod,
                          const char *pod_uid, const char *node, KbResponseFunc callback,
                          gpointer user_data);
/* The same, the Binding carrying @annotations (NULL-terminated key, value pairs; may be NULL) in
 * its metadata: the API server copies them onto the pod in the binding's own write. */
void kb_client_bind_async_full(KbClient *client, const char *namespace_, const char *pod,
                               const char *pod_uid, const char *node,
                               const char *const *annotations, KbResponseFunc callback,
                               gpointer user_data);

/* Number of asynchronous requests queued or in flight. */
guint kb_client_pending(const KbClient *client);

typedef struct KbStream KbStream;
/* Raw bytes of a 2xx streaming response as they arrive (any split). Return FALSE to cancel:
 * the same as kb_stream_cancel() (no on_done; the stream is freed). Runs inside libcurl: what it
 * does to the client (cancel, submit) takes effect when libcurl returns. */
typedef gboolean (*KbStreamDataFunc)(const char *data, gsize len, gpointer user_data);
/* The stream ended: @resp->error is NULL on a clean end of stream, else the failure (HTTP error
 * status with its metav1.Status body, timeout, transport). Called exactly once, unless the stream
 * was cancelled with kb_stream_cancel(). */
typedef void (*KbStreamDoneFunc)(const KbResponse *resp, gpointer user_data);

KbStream *kb_client_stream(KbClient *client, const KbRequest *req, KbStreamDataFunc on_data,
                           KbStreamDoneFunc on_done, gpointer user_data);
/* Stop a stream; no callback runs afterwards. Frees the stream. Safe from inside on_data (of this
 * or another stream) and a no-op from inside its own on_done (it is freed after on_done). */
void kb_stream_cancel(KbStream *stream);
