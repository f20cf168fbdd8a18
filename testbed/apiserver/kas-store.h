/*
 * The object store of the in-memory API server: resource types (built-in and from CRDs), objects
 * kept as serialized JSON plus the few fields that lists, selectors and the garbage collector
 * need, one global resourceVersion counter, a bounded event history and the watchers fed from it.
 *
 * One mutex guards everything. Functions named *_locked expect the caller to hold it
 * (kas_store_lock()); the others take it themselves. Objects (KasObj) are immutable once stored
 * and reference counted, so a watcher or a response can keep one after the lock is released.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "testbed/apiserver/kas-select.h"

/* ---- errors: a metav1.Status reason with its HTTP code ------------------------------------ */

#define KAS_ERROR (kas_error_quark())
GQuark kas_error_quark(void);

typedef enum {
    KAS_ERR_BAD_REQUEST,      /* 400 BadRequest */
    KAS_ERR_FORBIDDEN,        /* 403 Forbidden */
    KAS_ERR_NOT_FOUND,        /* 404 NotFound */
    KAS_ERR_METHOD,           /* 405 MethodNotAllowed */
    KAS_ERR_NOT_ACCEPTABLE,   /* 406 NotAcceptable */
    KAS_ERR_ALREADY_EXISTS,   /* 409 AlreadyExists */
    KAS_ERR_CONFLICT,         /* 409 Conflict */
    KAS_ERR_EXPIRED,          /* 410 Expired */
    KAS_ERR_TOO_LARGE,        /* 413 RequestEntityTooLarge */
    KAS_ERR_UNSUPPORTED_TYPE, /* 415 UnsupportedMediaType */
    KAS_ERR_INVALID,          /* 422 Invalid */
    KAS_ERR_TOO_MANY,         /* 429 TooManyRequests */
    KAS_ERR_INTERNAL,         /* 500 InternalError */
    KAS_ERR_UNAVAILABLE,      /* 503 ServiceUnavailable */
    KAS_ERR_TIMEOUT,          /* 504 Timeout */
} KasErr;

const char *kas_err_reason(KasErr code);
guint kas_err_http(KasErr code);
/* The KasErr for an HTTP status (used by injected faults). */
KasErr kas_err_from_http(guint http);

/* ---- resources ------------------------------------------------------------------------------ */

typedef enum {
    KAS_KIND_GENERIC,
    KAS_KIND_POD,
    KAS_KIND_NODE,
    KAS_KIND_NAMESPACE,
    KAS_KIND_EVENT,
    KAS_KIND_SERVICE,
    KAS_KIND_CRD,
    KAS_KIND_CUSTOM, /* an instance of a CRD */
} KasKind;

typedef struct KasRes {
    KasKind kind;
    char *group;        /* "" for core */
    char *plural;
    char *singular;
    char *kind_name;    /* "Pod" */
    char *list_kind;    /* "PodList" */
    char **versions;    /* served versions, preferred (highest priority) first */
    char *storage_version;
    char **short_names;
    char **categories;
    gboolean namespaced;
    gboolean has_status;
    gboolean uses_generation;
    const char *const *field_paths; /* extra field-selector fields (dotted), NULL-terminated */
    json_object *crd;   /* CRD object for custom resources (printer columns), or NULL */
    GTree *objects;     /* "ns/name" -> KasObj* */
    GPtrArray *watchers;
    guint64 last_event_rv; /* of the last event on this resource since the start, 0: none */
    gboolean active;    /* FALSE once its CRD is deleted */
} KasRes;

/* ---- objects -------------------------------------------------------------------------------- */

typedef struct KasObj {
    gint ref;
    guint64 rv;
    gint64 created;     /* unix seconds */
    char *json;         /* the full object as served (storage version) */
    gsize len;
    const char *key;    /* "ns/name", or "/name" when cluster-scoped; in strs */
    const char *ns;     /* "" when cluster-scoped; in strs */
    const char *name;   /* in strs */
    const char *uid;    /* in strs */
    char *strs;         /* one block holding key, ns, name, uid */
    char **labels;      /* packed "k, v, ..." NULL-terminated, or NULL */
    char **fields;      /* packed field-selector values "path, value, ...", or NULL */
    char **owners;      /* packed owner uids, or NULL */
    gboolean deleting;  /* deletionTimestamp set */
    gboolean has_finalizers;
} KasObj;

KasObj *kas_obj_ref(KasObj *obj);
void kas_obj_unref(KasObj *obj);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasObj, kas_obj_unref)

/* An object that is not stored (a conversion's result) for @jo (borrowed) of @res; new reference. */
KasObj *kas_obj_new(const KasRes *res, json_object *jo);

/* Parse the stored JSON again (new reference). Never fails for a stored object. */
json_object *kas_obj_parse(const KasObj *obj);

/* Field value for a field selector: metadata.name/namespace or one of the resource's fields;
 * "" when the resource knows the field but the object has no value; NULL when unknown. */
const char *kas_obj_field(const KasRes *res, const KasObj *obj, const char *field);
gboolean kas_res_has_field(const KasRes *res, const char *field);

/* ---- events and watchers -------------------------------------------------------------------- */

typedef enum { KAS_EV_ADDED, KAS_EV_MODIFIED, KAS_EV_DELETED } KasEvType;

typedef struct KasWatcher KasWatcher;
typedef struct KasStore KasStore;

typedef struct {
    const char *ns;            /* NULL: all namespaces */
    KasSelector *labels;       /* may be NULL; owned by the watcher after kas_store_watch */
    KasSelector *fields;       /* may be NULL; owned by the watcher after kas_store_watch */
    const char *api_version;   /* "v1", "kubeflow.org/v1": for bookmarks */
    const char *resource_version; /* NULL, "" or "0": current state first; else resume after it */
    gboolean send_initial;     /* sendInitialEvents=true */
    guint queue_cap;           /* 0: the store default */
} KasWatchOptions;

/* Called with the lock held for every stored change (@old NULL on create, @obj the final state
 * on delete). Must not call back into the store; it may schedule work elsewhere. */
typedef void (*KasStoreHook)(KasStore *store, KasRes *res, KasEvType type, KasObj *obj,
                             KasObj *old, gpointer user_data);

typedef struct {
    guint history;      /* events kept for watch resumption (default 10000) */
    guint watch_queue;  /* events a watcher may fall behind before it is closed (default 10000) */
    guint watch_linger_us; /* how long a watch's reader waits for a batch (default 1000 µs) */
    /* Serve scheduling.k8s.io/v1beta1 (workloads, podgroups): off by default, as on a 1.37
     * server without --runtime-config scheduling.k8s.io/v1beta1=true. */
    gboolean scheduling_v1beta1;
    /* Serve scheduling.k8s.io/v1alpha3 (compositepodgroups; workloads and podgroups at that
     * version too): off by default, as without --runtime-config scheduling.k8s.io/v1alpha3=true
     * (which a 1.37 server needs with the CompositePodGroup feature gate). */
    gboolean scheduling_v1alpha3;
} KasStoreOptions;

KasStore *kas_store_new(const KasStoreOptions *opts);
void kas_store_free(KasStore *store);
void kas_store_set_hook(KasStore *store, KasStoreHook hook, gpointer user_data);

void kas_store_lock(KasStore *store);
void kas_store_unlock(KasStore *store);
guint64 kas_store_rv_locked(KasStore *store);
/*
 * Store @text (@len bytes, borrowed), a JSON text as obj_new() prints it but for
 * metadata.resourceVersion's value, which goes at @rv_at (the store's next resourceVersion,
 * quoted, put in), as the next version of @cur (borrowed) when only what KasObj does not index
 * changed (a status): name, uid, labels, fields, owners, creation and deletion state are @cur's.
 * Emits MODIFIED as kas_store_put_locked() does; returns a new reference to the stored object,
 * or NULL (nothing changed) when @cur is no longer the stored object.
 */
KasObj *kas_store_put_text_locked(KasStore *store, KasRes *res, KasObj *cur, const char *text,
                                  gsize len, gsize rv_at);

/*
 * Optimistic writes: the new version of a stored object is parsed, edited and printed outside
 * the store's lock, from a reference to the stored one, and committed under the lock only if
 * that one is still the stored object (else the caller reads again and retries). Only the
 * resourceVersion needs the lock: its value is a hole in the printed text, filled at commit.
 */
typedef struct {
    KasObj *obj;  /* printed and indexed, resourceVersion "0"; owned */
    gsize rv_at;  /* the offset of metadata.resourceVersion's value ("0", quotes included) */
    gsize rv_len; /* that value's length */
} KasPrepared;

/* @jo (borrowed; its metadata.resourceVersion is set to "0") printed and indexed as
 * kas_store_put_locked() would store it, without the lock. FALSE (nothing set) when the printed
 * text has no metadata.resourceVersion to fill (not an object). */
gboolean kas_store_prepare(const KasRes *res, json_object *jo, KasPrepared *out);
void kas_prepared_clear(KasPrepared *p);
/* Store @p's object in @res as the successor of @expected (the stored object it was made from,
 * borrowed) if that is still the stored object, with the store's next resourceVersion, and emit
 * MODIFIED as kas_store_put_locked() does: a borrowed reference to the stored object (@p is
 * emptied). NULL, nothing changed and @p kept, when @expected was replaced or removed meanwhile. */
KasObj *kas_store_put_prepared_locked(KasStore *store, KasRes *res, KasObj *expected,
                                      KasPrepared *p);
/* A store-wide counter for generated addresses (pod and cluster IPs). */
guint64 kas_store_next_seq_locked(KasStore *store);
/* "pods" for the core group, else "plural.group" (as in Status messages); newly allocated. */
char *kas_res_qualified(const KasRes *res);
/* "v1" or "group/version"; newly allocated. */
char *kas_res_api_version(const KasRes *res, const char *version);

/* ---- resource registry ---------------------------------------------------------------------- */

/* The resource serving @group/@version/@plural (active only), or NULL. Borrowed: resources live
 * as long as the store. */
KasRes *kas_store_find_locked(KasStore *store, const char *group, const char *version,
                              const char *plural);
/* The active resource of @group with kind @kind (any served version), or NULL. */
KasRes *kas_store_find_kind_locked(KasStore *store, const char *group, const char *kind);
/* All resources in registration order (borrowed array of KasRes*, including inactive ones). */
GPtrArray *kas_store_resources_locked(KasStore *store);
/* Register or re-activate the resource described by the CRD @crd (borrowed); FALSE with an
 * Invalid error when the CRD is malformed or its names clash with a built-in resource. */
gboolean kas_store_register_crd_locked(KasStore *store, json_object *crd, GError **error);
/* Stop serving the resource of @crd, deleting its objects. */
void kas_store_unregister_crd_locked(KasStore *store, json_object *crd);
/* The printer columns declared for @version of a custom resource (borrowed array), or NULL. */
json_object *kas_res_printer_columns(const KasRes *res, const char *version);

/* ---- objects: reads ------------------------------------------------------------------------- */

KasObj *kas_store_get_locked(KasStore *store, KasRes *res, const char *ns, const char *name);

typedef struct {
    const char *ns;
    const KasSelector *labels;
    const KasSelector *fields;
    guint64 limit;            /* 0: everything */
    const char *start_after;  /* continue from this key (exclusive), or NULL */
} KasListOptions;

/* Matching objects in key order (new array of new references); *@more tells whether more
 * matching objects follow when the limit was reached, *@remaining how many. */
GPtrArray *kas_store_list_locked(KasStore *store, KasRes *res, const KasListOptions *opts,
                                 gboolean *more, guint64 *remaining);
guint kas_store_count_locked(KasStore *store, KasRes *res);

/* ---- objects: writes (the caller has checked the semantics, see kas-ops.h) -------------------- */

/* Store @obj (borrowed; metadata.resourceVersion is set here) as the new state of its key and
 * emit ADDED or MODIFIED. Returns the stored object (borrowed, valid under the lock). */
KasObj *kas_store_put_locked(KasStore *store, KasRes *res, json_object *obj);
/* Remove @cur's key (rewriting its resourceVersion) and emit DELETED. Returns the final state
 * (new reference). */
KasObj *kas_store_remove_locked(KasStore *store, KasRes *res, KasObj *cur);
/* Is @uid the uid of a stored object that something names as its owner? */
gboolean kas_store_is_owner_locked(KasStore *store, const char *uid);
/* Find a stored object by uid over every resource (slow: a scan), or NULL. */
KasObj *kas_store_find_uid_locked(KasStore *store, const char *uid, KasRes **res_out);

/* ---- watches ------------------------------------------------------------------------------- */

/* Start a watch on @res. The watcher gets the initial state or the history after the given
 * resourceVersion; a version older than the history queues one ERROR event (410 Expired).
 * Returns a new watcher or NULL with BadRequest for an unparsable resourceVersion. */
KasWatcher *kas_store_watch(KasStore *store, KasRes *res, KasWatchOptions *opts, GError **error);

typedef enum {
    KAS_WATCH_EVENT,    /* *line is one event, "\n" terminated */
    KAS_WATCH_TIMEOUT,  /* nothing before the deadline */
    KAS_WATCH_CLOSED,   /* the watcher was closed (shutdown, restart, overflow, CRD gone) */
} KasWatchResult;

/* Wait until @deadline (monotonic µs) for the next event and append it to @out as one line
 * ({"type":...,"object":...}); @render (may be NULL) turns an object into the JSON to send
 * (new string) instead of the stored JSON; a render that cannot render @obj returns '!' followed
 * by a Status object, which is sent as an ERROR event ending the watch. Appends at most @max_events events; when that is 64
 * or more, a few queued events are held until 64 wait or the oldest has waited the store's
 * watch_linger_us, so that a stream of changes goes out in batches. */
typedef char *(*KasWatchRender)(KasRes *res, KasObj *obj, gpointer data);
KasWatchResult kas_watcher_next(KasWatcher *w, gint64 deadline, GString *out, guint max_events,
                                KasWatchRender render, gpointer render_data);
/* Append a BOOKMARK event to @out and return TRUE, or FALSE when there is none to send. As
 * kube-apiserver's watch cache: a periodic bookmark carries the resourceVersion of the last event
 * on the watcher's resource and goes only when that event is newer than where the watcher
 * started (so a resource without events since the server started gets none), and never while
 * events are pending (it would overtake them). @initial_events_end (sendInitialEvents) is sent
 * whatever, at the store's resourceVersion. */
gboolean kas_watcher_bookmark(KasWatcher *w, GString *out, gboolean initial_events_end);
void kas_watcher_close(KasWatcher *w);
void kas_watcher_free(KasWatcher *w);
KasRes *kas_watcher_res(KasWatcher *w);
/* Number of open watchers (for /metrics and tests). */
guint kas_store_watcher_count(KasStore *store);

/* Close every watcher (a simulated restart or shutdown). With @forget_history the history is
 * dropped too, so resuming from any earlier resourceVersion gives 410. */
void kas_store_close_watchers(KasStore *store, gboolean forget_history);
/* Drop the event history: resuming from any earlier resourceVersion gives 410. */
void kas_store_expire_history(KasStore *store);
/* Mark the store as shutting down: every watcher wakes and closes. */
void kas_store_shutdown(KasStore *store);
