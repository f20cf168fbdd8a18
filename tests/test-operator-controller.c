/*
 * The TFJob controller (operator/controller) against a small object store served by the
 * scripted test server: lists, watches (live events appended to stalled streams), creates (409
 * on duplicates), conditional PUTs (409 on a stale resourceVersion) and deletes, the way the API
 * server answers them. The test plays the kubelet by changing pod phases in the store.
 */
#include <glib.h>
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-recorder.h"
#include "operator/controller.h"
#include "tests/lib/kb-test-server.h"

#define JOB_KEY "tfjobs/research/mnist-dist"

/* ---- the fake API: one store for every resource ------------------------------------------- */

typedef struct {
    GMutex lock;
    GHashTable *objects; /* "plural/ns/name" -> json_object (owned) */
    GPtrArray *watches;  /* Watch* */
    gint64 rv;
    GHashTable *served; /* "group/version" prefixes that exist, e.g. "kubeflow.org/v1" */
    guint creates, conflicts, deletes;
    gboolean hold_job_watch; /* tfjob changes are not sent to watchers (a lagging cache) */
    gboolean fail_job_lists; /* lists of tfjobs answer 500 (a slow or failing TFJob list) */
    guint discoveries;       /* GET /apis/GROUP/VERSION answered so far */
    gboolean fail_discovery; /* discovery answers 503 */
} Store;

typedef struct {
    char *plural;
    char *ns; /* NULL: all namespaces */
    KbTestResponse *resp;
} Watch;

typedef struct {
    char *gv;     /* "v1", "kubeflow.org/v1" */
    char *ns;     /* may be NULL */
    char *plural; /* "pods" */
    char *name;   /* may be NULL */
    char *sub;    /* may be NULL */
} Path;

static void path_clear(Path *p)
{
    g_free(p->gv);
    g_free(p->ns);
    g_free(p->plural);
    g_free(p->name);
    g_free(p->sub);
}

/* /api/v1/... or /apis/GROUP/VERSION/... [namespaces/NS/]PLURAL[/NAME[/SUB]] */
static gboolean parse_path(const char *path, Path *out)
{
    g_auto(GStrv) seg = g_strsplit(path + 1, "/", -1);
    guint n = g_strv_length(seg), i;
    memset(out, 0, sizeof(*out));
    if (n >= 2 && strcmp(seg[0], "api") == 0) {
        out->gv = g_strdup(seg[1]);
        i = 2;
    } else if (n >= 3 && strcmp(seg[0], "apis") == 0) {
        out->gv = g_strdup_printf("%s/%s", seg[1], seg[2]);
        i = 3;
    } else {
        return FALSE;
    }
    if (i + 1 < n && strcmp(seg[i], "namespaces") == 0 && i + 2 < n) {
        out->ns = g_strdup(seg[i + 1]);
        i += 2;
    }
    if (i >= n)
        return FALSE;
    out->plural = g_strdup(seg[i++]);
    if (i < n)
        out->name = g_strdup(seg[i++]);
    if (i < n)
        out->sub = g_strdup(seg[i]);
    return TRUE;
}

static char *store_key(const char *plural, const char *ns, const char *name)
{
    return g_strdup_printf("%s/%s/%s", plural, ns ? ns : "", name);
}

static KbTestResponse *status_resp(guint code, const char *reason, const char *msg)
{
    return kb_test_response_new_status(code, reason, msg);
}

static const char *meta_str(json_object *obj, const char *key)
{
    json_object *m, *v;
    if (!json_object_object_get_ex(obj, "metadata", &m) || !json_object_object_get_ex(m, key, &v))
        return NULL;
    return json_object_get_string(v);
}

/* Called with the lock held. */
static void notify(Store *s, const char *type, const char *plural, json_object *obj)
{
    if (s->hold_job_watch && strcmp(plural, "tfjobs") == 0)
        return;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "type", json_object_new_string(type));
    json_object_object_add(ev, "object", json_object_get(obj));
    g_autofree char *line = g_strdup_printf("%s\n", json_object_to_json_string(ev));
    json_object_put(ev);
    for (guint i = 0; i < s->watches->len; i++) {
        Watch *w = g_ptr_array_index(s->watches, i);
        if (strcmp(w->plural, plural) == 0 &&
            (w->ns == NULL || g_strcmp0(w->ns, meta_str(obj, "namespace")) == 0))
            kb_test_response_append_chunk(w->resp, line);
    }
}

static void bump(Store *s, json_object *obj)
{
    char rv[32];
    g_snprintf(rv, sizeof(rv), "%" G_GINT64_FORMAT, ++s->rv);
    json_object_object_add(json_object_object_get(obj, "metadata"), "resourceVersion",
                           json_object_new_string(rv));
}

static KbTestResponse *do_list(Store *s, const Path *p)
{
    json_object *list = json_object_new_object(), *items = json_object_new_array();
    json_object *meta = json_object_new_object();
    g_autofree char *prefix = g_strdup_printf("%s/", p->plural);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, s->objects);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        if (g_str_has_prefix(k, prefix) &&
            (p->ns == NULL || g_strcmp0(meta_str(v, "namespace"), p->ns) == 0))
            json_object_array_add(items, json_object_get(v));
    }
    char rv[32];
    g_snprintf(rv, sizeof(rv), "%" G_GINT64_FORMAT, s->rv);
    json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(list, "kind", json_object_new_string("List"));
    json_object_object_add(list, "metadata", meta);
    json_object_object_add(list, "items", items);
    KbTestResponse *r = kb_test_response_new_body(200, json_object_to_json_string(list));
    json_object_put(list);
    return r;
}

static KbTestResponse *do_watch(Store *s, const Path *p)
{
    Watch *w = g_new0(Watch, 1);
    w->plural = g_strdup(p->plural);
    w->ns = g_strdup(p->ns);
    w->resp = kb_test_response_new(200);
    kb_test_response_stall(w->resp);
    g_ptr_array_add(s->watches, w);
    return kb_test_response_ref(w->resp);
}

static KbTestResponse *do_create(Store *s, const Path *p, const char *body)
{
    json_object *obj = json_tokener_parse(body);
    if (obj == NULL)
        return status_resp(400, "BadRequest", "bad body");
    const char *name = meta_str(obj, "name");
    g_autofree char *key = store_key(p->plural, p->ns, name);
    if (g_hash_table_contains(s->objects, key)) {
        json_object_put(obj);
        return status_resp(409, "AlreadyExists", "already exists");
    }
    char uid[32];
    g_snprintf(uid, sizeof(uid), "uid-%" G_GINT64_FORMAT, s->rv + 1);
    json_object *meta = json_object_object_get(obj, "metadata");
    json_object_object_add(meta, "uid", json_object_new_string(uid));
    if (p->ns != NULL)
        json_object_object_add(meta, "namespace", json_object_new_string(p->ns));
    bump(s, obj);
    s->creates += strcmp(p->plural, "events") != 0;
    g_hash_table_insert(s->objects, g_steal_pointer(&key), obj);
    notify(s, "ADDED", p->plural, obj);
    return kb_test_response_new_body(201, json_object_to_json_string(obj));
}

static KbTestResponse *do_update(Store *s, const Path *p, const char *body)
{
    g_autofree char *key = store_key(p->plural, p->ns, p->name);
    json_object *old = g_hash_table_lookup(s->objects, key);
    json_object *obj = json_tokener_parse(body);
    if (old == NULL || obj == NULL) {
        if (obj != NULL)
            json_object_put(obj);
        return status_resp(404, "NotFound", "not found");
    }
    if (g_strcmp0(meta_str(obj, "resourceVersion"), meta_str(old, "resourceVersion")) != 0) {
        json_object_put(obj);
        s->conflicts++;
        return status_resp(409, "Conflict", "the object has been modified");
    }
    json_object *st = NULL;
    if (p->sub != NULL && strcmp(p->sub, "status") == 0) {
        /* The status subresource changes the status only. */
        json_object_object_get_ex(obj, "status", &st);
        json_object *copy = NULL;
        json_object_deep_copy(old, &copy, NULL);
        if (st != NULL)
            json_object_object_add(copy, "status", json_object_get(st));
        json_object_put(obj);
        obj = copy;
    }
    bump(s, obj);
    g_hash_table_replace(s->objects, g_steal_pointer(&key), obj);
    notify(s, "MODIFIED", p->plural, obj);
    return kb_test_response_new_body(200, json_object_to_json_string(obj));
}

static KbTestResponse *do_delete(Store *s, const Path *p)
{
    g_autofree char *key = store_key(p->plural, p->ns, p->name);
    json_object *obj = g_hash_table_lookup(s->objects, key);
    if (obj == NULL)
        return status_resp(404, "NotFound", "not found");
    json_object_get(obj);
    g_hash_table_remove(s->objects, key);
    s->deletes += strcmp(p->plural, "events") != 0;
    bump(s, obj);
    notify(s, "DELETED", p->plural, obj);
    KbTestResponse *r = kb_test_response_new_body(200, json_object_to_json_string(obj));
    json_object_put(obj);
    return r;
}

/* RFC 7386 merge of @patch into @target. */
static void merge(json_object *target, json_object *patch)
{
    json_object_object_foreach(patch, k, v)
    {
        json_object *t = NULL;
        if (v == NULL)
            json_object_object_del(target, k);
        else if (json_object_is_type(v, json_type_object) &&
                 json_object_object_get_ex(target, k, &t) &&
                 json_object_is_type(t, json_type_object))
            merge(t, v);
        else
            json_object_object_add(target, k, json_object_get(v));
    }
}

static KbTestResponse *do_patch(Store *s, const Path *p, const char *body)
{
    g_autofree char *key = store_key(p->plural, p->ns, p->name);
    json_object *obj = g_hash_table_lookup(s->objects, key);
    json_object *patch = json_tokener_parse(body);
    if (obj == NULL || patch == NULL) {
        if (patch != NULL)
            json_object_put(patch);
        return status_resp(404, "NotFound", "not found");
    }
    merge(obj, patch);
    json_object_put(patch);
    bump(s, obj);
    notify(s, "MODIFIED", p->plural, obj);
    return kb_test_response_new_body(200, json_object_to_json_string(obj));
}

/* GET /apis/GROUP/VERSION: an APIResourceList of what the store holds for a served version (the
 * native gang API's podgroups and workloads), 404 for one not served. */
static KbTestResponse *discovery(Store *s, const char *path)
{
    const char *gv = path + strlen("/apis/");
    g_mutex_lock(&s->lock);
    s->discoveries++;
    gboolean fail = s->fail_discovery, served = g_hash_table_contains(s->served, gv);
    g_mutex_unlock(&s->lock);
    if (fail)
        return status_resp(503, "ServiceUnavailable", "injected: discovery fails");
    if (!served)
        return status_resp(404, "NotFound", "the server could not find the requested resource");
    g_autofree char *body = g_strdup_printf(
            "{\"kind\":\"APIResourceList\",\"groupVersion\":\"%s\",\"resources\":[%s]}", gv,
            strcmp(gv, "scheduling.k8s.io/v1beta1") == 0
                    ? "{\"name\":\"podgroups\",\"namespaced\":true,\"kind\":\"PodGroup\"},"
                      "{\"name\":\"workloads\",\"namespaced\":true,\"kind\":\"Workload\"}"
                    : "");
    return kb_test_response_new_body(200, body);
}

static KbTestResponse *handle(const KbTestRequest *req, gpointer data)
{
    Store *s = data;
    Path p;
    if (g_str_has_prefix(req->path, "/apis/") && strcmp(req->method, "GET") == 0 &&
        strchr(req->path + strlen("/apis/"), '/') != NULL &&
        strchr(strchr(req->path + strlen("/apis/"), '/') + 1, '/') == NULL)
        return discovery(s, req->path);
    if (!parse_path(req->path, &p))
        return status_resp(404, "NotFound", "no such path");
    g_mutex_lock(&s->lock);
    KbTestResponse *r;
    if (!g_hash_table_contains(s->served, p.gv))
        r = status_resp(404, "NotFound", "the server could not find the requested resource");
    else if (strcmp(req->method, "GET") == 0 && p.name == NULL &&
             strstr(req->query, "watch=true") == NULL && s->fail_job_lists &&
             strcmp(p.plural, "tfjobs") == 0)
        r = status_resp(500, "InternalError", "injected: tfjob lists fail");
    else if (strcmp(req->method, "GET") == 0 && p.name == NULL)
        r = strstr(req->query, "watch=true") != NULL ? do_watch(s, &p) : do_list(s, &p);
    else if (strcmp(req->method, "GET") == 0) {
        g_autofree char *key = store_key(p.plural, p.ns, p.name);
        json_object *o = g_hash_table_lookup(s->objects, key);
        r = o != NULL ? kb_test_response_new_body(200, json_object_to_json_string(o))
                      : status_resp(404, "NotFound", "not found");
    } else if (strcmp(req->method, "POST") == 0)
        r = do_create(s, &p, req->body);
    else if (strcmp(req->method, "PUT") == 0)
        r = do_update(s, &p, req->body);
    else if (strcmp(req->method, "DELETE") == 0)
        r = do_delete(s, &p);
    else
        r = do_patch(s, &p, req->body);
    g_mutex_unlock(&s->lock);
    path_clear(&p);
    return r;
}

static void watch_free(gpointer p)
{
    Watch *w = p;
    kb_test_response_unref(w->resp);
    g_free(w->plural);
    g_free(w->ns);
    g_free(w);
}

static void put_json(gpointer p)
{
    json_object_put(p);
}

static Store *store_new(void)
{
    Store *s = g_new0(Store, 1);
    g_mutex_init(&s->lock);
    s->objects = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, put_json);
    s->watches = g_ptr_array_new_with_free_func(watch_free);
    s->served = g_hash_table_new(g_str_hash, g_str_equal);
    static const char *const gvs[] = {"v1",
                                      "kubeflow.org/v1",
                                      "scheduling.volcano.sh/v1beta1",
                                      "kubeflow.org/v1alpha1",
                                      "coordination.k8s.io/v1",
                                      "scheduling.k8s.io/v1"};
    for (guint i = 0; i < G_N_ELEMENTS(gvs); i++)
        g_hash_table_add(s->served, (gpointer)gvs[i]);
    return s;
}

static void store_free(gpointer p)
{
    Store *s = p;
    g_hash_table_unref(s->objects);
    g_ptr_array_unref(s->watches);
    g_hash_table_unref(s->served);
    g_mutex_clear(&s->lock);
    g_free(s);
}

/* ---- the test rig --------------------------------------------------------------------------- */

typedef struct {
    KbTestServer *server;
    Store *store;
    KbClient *client;
    KbRecorder *recorder;
    TfController *controller;
    const char *gang;
} Rig;

static Rig *rig_new(gboolean v1_served)
{
    Rig *r = g_new0(Rig, 1);
    g_autoptr(GError) error = NULL;
    r->server = kb_test_server_new(NULL, NULL, NULL);
    r->store = store_new();
    if (!v1_served)
        g_hash_table_remove(r->store->served, "kubeflow.org/v1");
    kb_test_server_set_handler(r->server, "*", "/api*", handle, r->store, store_free);
    g_autoptr(KbConfig) cfg = kb_config_from_flags(NULL, kb_test_server_url(r->server), &error);
    g_assert_no_error(error);
    r->client = kb_client_new(cfg, &error);
    g_assert_no_error(error);
    r->recorder = kb_recorder_new(r->client, "tf-operator");
    return r;
}

static void rig_start_api(Rig *r, const char *gang, gboolean autoscaling, TfGangApi api)
{
    TfControllerOptions o = {.gang_scheduler = gang,
                             .gang_api = api,
                             .resync_seconds = 1,
                             .enable_autoscaling = autoscaling,
                             .autoscale_seconds = 1};
    r->gang = gang;
    r->controller = tf_controller_new(r->client, r->recorder, NULL, &o);
    tf_controller_start(r->controller);
}

static void rig_start_full(Rig *r, const char *gang, gboolean autoscaling)
{
    rig_start_api(r, gang, autoscaling, TF_GANG_API_VOLCANO);
}

static void rig_start(Rig *r, const char *gang)
{
    rig_start_full(r, gang, FALSE);
}

static void rig_free(Rig *r)
{
    tf_controller_free(r->controller);
    /* Let the events in flight land: a client freed under them drops their callbacks. */
    gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (kb_recorder_pending(r->recorder) > 0 && g_get_monotonic_time() < end)
        g_main_context_iteration(NULL, TRUE);
    kb_recorder_free(r->recorder);
    kb_client_free(r->client);
    kb_test_server_free(r->server); /* frees the store */
    g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Rig, rig_free)

static void put_object(Rig *r, const char *plural, json_object *obj)
{
    g_mutex_lock(&r->store->lock);
    bump(r->store, obj);
    json_object_object_add(json_object_object_get(obj, "metadata"), "uid",
                           json_object_new_string("job-uid-1"));
    g_autofree char *key = store_key(plural, meta_str(obj, "namespace"), meta_str(obj, "name"));
    g_hash_table_replace(r->store->objects, g_steal_pointer(&key), obj);
    notify(r->store, "ADDED", plural, obj);
    g_mutex_unlock(&r->store->lock);
}

static json_object *load(const char *name)
{
    const char *src = g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
    g_autofree char *path = g_build_filename(src, "tests", "data", "operator", name, NULL);
    json_object *o = json_object_from_file(path);
    g_assert_nonnull(o);
    return o;
}

/* Counters of the store, read under its lock. */
static gint64 store_rv(Rig *r)
{
    g_mutex_lock(&r->store->lock);
    gint64 v = r->store->rv;
    g_mutex_unlock(&r->store->lock);
    return v;
}

static guint store_creates(Rig *r)
{
    g_mutex_lock(&r->store->lock);
    guint v = r->store->creates;
    g_mutex_unlock(&r->store->lock);
    return v;
}

static guint count(Rig *r, const char *plural)
{
    g_autofree char *prefix = g_strdup_printf("%s/", plural);
    guint n = 0;
    GHashTableIter it;
    gpointer k;
    g_mutex_lock(&r->store->lock);
    g_hash_table_iter_init(&it, r->store->objects);
    while (g_hash_table_iter_next(&it, &k, NULL))
        n += g_str_has_prefix(k, prefix);
    g_mutex_unlock(&r->store->lock);
    return n;
}

/* The type of the job's last condition, newly allocated, or NULL. */
static char *last_condition(Rig *r, const char *key)
{
    char *out = NULL;
    json_object *st, *conds;
    g_mutex_lock(&r->store->lock);
    json_object *job = g_hash_table_lookup(r->store->objects, key);
    if (job != NULL && json_object_object_get_ex(job, "status", &st) &&
        json_object_object_get_ex(st, "conditions", &conds) &&
        json_object_array_length(conds) > 0) {
        json_object *c = json_object_array_get_idx(conds, json_object_array_length(conds) - 1);
        out = g_strdup(json_object_get_string(json_object_object_get(c, "type")));
    }
    g_mutex_unlock(&r->store->lock);
    return out;
}

static char *job_field(Rig *r, const char *key, const char *section, const char *field)
{
    char *out = NULL;
    json_object *sec, *v;
    g_mutex_lock(&r->store->lock);
    json_object *job = g_hash_table_lookup(r->store->objects, key);
    if (job != NULL && json_object_object_get_ex(job, section, &sec) &&
        json_object_object_get_ex(sec, field, &v))
        out = g_strdup(json_object_get_string(v));
    g_mutex_unlock(&r->store->lock);
    return out;
}

/* Set every pod whose name contains @part to @phase (exit code @code when terminated). */
static void set_pods(Rig *r, const char *part, const char *phase, int code)
{
    g_mutex_lock(&r->store->lock);
    GHashTableIter it;
    gpointer k, v;
    g_autoptr(GPtrArray) hit = g_ptr_array_new();
    g_hash_table_iter_init(&it, r->store->objects);
    while (g_hash_table_iter_next(&it, &k, &v))
        if (g_str_has_prefix(k, "pods/") && strstr(k, part) != NULL)
            g_ptr_array_add(hit, v);
    for (guint i = 0; i < hit->len; i++) {
        json_object *pod = g_ptr_array_index(hit, i);
        json_object *st = json_object_new_object(), *cs = json_object_new_array();
        json_object *c = json_object_new_object(), *state = json_object_new_object();
        json_object_object_add(st, "phase", json_object_new_string(phase));
        json_object_object_add(c, "name", json_object_new_string("tensorflow"));
        if (code >= 0) {
            json_object *t = json_object_new_object();
            json_object_object_add(t, "exitCode", json_object_new_int(code));
            json_object_object_add(state, "terminated", t);
        }
        json_object_object_add(c, "state", state);
        json_object_array_add(cs, c);
        json_object_object_add(st, "containerStatuses", cs);
        json_object_object_add(pod, "status", st);
        bump(r->store, pod);
        notify(r->store, "MODIFIED", "pods", pod);
    }
    g_mutex_unlock(&r->store->lock);
}

typedef gboolean (*Cond)(Rig *r, gconstpointer data);

/* Run the main loop until @cond holds (TRUE) or 10 s pass (FALSE). */
/* Every wait expects its condition: a deadline of 60 s, for a loaded machine (10 s failed once
 * under a full test run at nice 19 beside benchmarks). */
static gboolean wait_for(Rig *r, Cond cond, gconstpointer data)
{
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < end) {
        if (cond(r, data))
            return TRUE;
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return cond(r, data);
}

typedef struct {
    const char *plural;
    guint n;
} CountIs;

static gboolean count_is(Rig *r, gconstpointer data)
{
    const CountIs *c = data;
    return count(r, c->plural) == c->n;
}

typedef struct {
    const char *key;
    const char *type;
} CondIs;

static gboolean condition_is(Rig *r, gconstpointer data)
{
    const CondIs *c = data;
    g_autofree char *t = last_condition(r, c->key);
    return g_strcmp0(t, c->type) == 0;
}

/* The restarts recorded on the replica's service (what backoffLimit counts). */
static gboolean restarted_once(Rig *r, gconstpointer data)
{
    g_autofree char *n = NULL;
    json_object *meta, *ann, *v;
    g_mutex_lock(&r->store->lock);
    json_object *svc =
            g_hash_table_lookup(r->store->objects, "services/research/mnist-dist-worker-2");
    if (svc != NULL && json_object_object_get_ex(svc, "metadata", &meta) &&
        json_object_object_get_ex(meta, "annotations", &ann) &&
        json_object_object_get_ex(ann, "kube-batchd.io/restarts", &v))
        n = g_strdup(json_object_get_string(v));
    g_mutex_unlock(&r->store->lock);
    return g_strcmp0(n, "1") == 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* ---- restarts of the operator, events ------------------------------------------------------ */

static void store_set(Rig *r, gboolean *flag, gboolean value)
{
    g_mutex_lock(&r->store->lock);
    *flag = value;
    g_mutex_unlock(&r->store->lock);
}

static guint store_deletes(Rig *r)
{
    g_mutex_lock(&r->store->lock);
    guint v = r->store->deletes;
    g_mutex_unlock(&r->store->lock);
    return v;
}

/* Run the main loop for @ms. */
static void spin(guint ms)
{
    gint64 end = g_get_monotonic_time() + (gint64)ms * 1000;
    while (g_get_monotonic_time() < end) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

static gboolean controller_ready(Rig *r, gconstpointer data)
{
    g_autofree char *reason = NULL;
    return tf_controller_ready(r->controller, &reason);
}

/* Events recorded with @reason, repeats (the count of an aggregated event) included. */
static guint event_count(Rig *r, const char *reason)
{
    guint n = 0;
    GHashTableIter it;
    gpointer k, v;
    g_mutex_lock(&r->store->lock);
    g_hash_table_iter_init(&it, r->store->objects);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        json_object *why, *cnt;
        if (!g_str_has_prefix(k, "events/") || !json_object_object_get_ex(v, "reason", &why) ||
            g_strcmp0(json_object_get_string(why), reason) != 0)
            continue;
        n += json_object_object_get_ex(v, "count", &cnt) ? MAX(json_object_get_int(cnt), 1) : 1;
    }
    g_mutex_unlock(&r->store->lock);
    return n;
}

static gboolean owner_deleted_events(Rig *r, gconstpointer data)
{
    return event_count(r, "OwnerDeleted") == GPOINTER_TO_UINT(data);
}

static void restart_operator(Rig *r)
{
    g_clear_pointer(&r->controller, tf_controller_free);
    rig_start(r, r->gang);
}

/* An event "REASON:TEXT": reason REASON whose message contains TEXT. */
static gboolean event_with(Rig *r, gconstpointer data)
{
    g_auto(GStrv) rt = g_strsplit(data, ":", 2);
    gboolean found = FALSE;
    GHashTableIter it;
    gpointer k, v;
    g_mutex_lock(&r->store->lock);
    g_hash_table_iter_init(&it, r->store->objects);
    while (!found && g_hash_table_iter_next(&it, &k, &v)) {
        json_object *why, *msg;
        found = g_str_has_prefix(k, "events/") && json_object_object_get_ex(v, "reason", &why) &&
                g_strcmp0(json_object_get_string(why), rt[0]) == 0 &&
                json_object_object_get_ex(v, "message", &msg) &&
                strstr(json_object_get_string(msg), rt[1]) != NULL;
    }
    g_mutex_unlock(&r->store->lock);
    return found;
}

static void test_v1_lifecycle(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    rig_start(r, "kube-batchd");

    g_assert_true(wait_for(r, count_is, &(CountIs){"podgroups", 1}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"services", 6}));
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Created"}));
    char *reason = NULL;
    g_assert_true(tf_controller_ready(r->controller, &reason));

    set_pods(r, "mnist-dist-", "Running", -1);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Running"}));
    set_pods(r, "mnist-dist-worker-0", "Succeeded", 0);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Succeeded"}));
    /* cleanPodPolicy Running: only the finished worker stays; the gang is released. */
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 1}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"podgroups", 0}));
    g_autofree char *done = job_field(r, JOB_KEY, "status", "completionTime");
    g_assert_nonnull(done);
    /* Nothing was ever created twice. */
    g_assert_cmpuint(store_creates(r), ==, 13);
    g_assert_cmpuint(tf_controller_errors(r->controller), ==, 0);
}

static void test_restart_and_delete(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    rig_start(r, "kube-batchd");
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    set_pods(r, "mnist-dist-", "Running", -1);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Running"}));
    /* Exit 137 under ExitCode: the pod is recreated under the same name. */
    guint before = store_creates(r);
    set_pods(r, "mnist-dist-worker-2", "Failed", 137);
    g_assert_true(wait_for(r, restarted_once, NULL));
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_cmpuint(store_creates(r), ==, before + 1);
    /* The Restarting condition was set (Running has replaced it since: other workers run). */
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Running"}));

    /* Deleting the job deletes what it owned. */
    g_mutex_lock(&r->store->lock);
    Path p = {.plural = (char *)"tfjobs", .ns = (char *)"research", .name = (char *)"mnist-dist"};
    kb_test_response_unref(do_delete(r->store, &p));
    g_mutex_unlock(&r->store->lock);
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"services", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"podgroups", 0}));
}

static void test_v1alpha1_only(void)
{
    g_autoptr(Rig) r = rig_new(FALSE);
    put_object(r, "tfjobs", load("seed-v1alpha1.json"));
    rig_start(r, "");
    /* No gang: no PodGroup, pods at once, named with the runtime id the operator wrote. */
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 4}));
    g_assert_cmpuint(count(r, "podgroups"), ==, 0);
    g_autofree char *id = job_field(r, "tfjobs/default/example-job", "spec", "RuntimeId");
    g_assert_nonnull(id);
    g_assert_cmpuint(strlen(id), ==, 4);
    g_autofree char *key = g_strdup_printf("pods/default/example-job-ps-%s-1", id);
    g_mutex_lock(&r->store->lock);
    gboolean found = g_hash_table_contains(r->store->objects, key);
    g_mutex_unlock(&r->store->lock);
    g_assert_true(found);
    set_pods(r, "example-job-", "Running", -1);
    set_pods(r, "example-job-master", "Succeeded", 0);
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 0}));
    g_autofree char *phase = NULL;
    for (int i = 0; i < 1000; i++) {
        g_free(phase);
        phase = job_field(r, "tfjobs/default/example-job", "status", "phase");
        if (g_strcmp0(phase, "Done") == 0)
            break;
        g_main_context_iteration(NULL, FALSE);
        g_usleep(2000);
    }
    g_assert_cmpstr(phase, ==, "Done");
    g_autofree char *state = job_field(r, "tfjobs/default/example-job", "status", "state");
    g_assert_cmpstr(state, ==, "Succeeded");
}

static void test_autoscaling(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    /* One ready node with 16 GPUs, nothing bound: the dynamic job (3 workers of 2 GPUs, 2..6)
     * grows to its maximum. */
    put_object(r, "nodes",
               json_tokener_parse("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":"
                                  "{\"nvidia.com/gpu\":16,\"cpu\":\"64\"},\"conditions\":"
                                  "[{\"type\":\"Ready\",\"status\":\"True\"}]}}"));
    put_object(r, "priorityclasses",
               json_tokener_parse("{\"metadata\":{\"name\":\"urgent\"},\"value\":1000}"));
    put_object(r, "tfjobs", load("v1-dynamic.json"));
    rig_start_full(r, "kube-batchd", TRUE);
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 7}));
    /* Decisions are events; the status keeps nothing Kubeflow's schema would prune. */
    g_autofree char *grown = job_field(r, "tfjobs/default/elastic", "status", "autoscaling");
    g_assert_null(grown);
    g_assert_true(wait_for(r, event_with, "TFJobScaledUp:workers 3 -> 6"));
    /* A group of higher priority waits in the same queue: back to the minimum of 2 workers. */
    put_object(
            r, "podgroups",
            json_tokener_parse("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
                               "\"PodGroup\",\"metadata\":{\"name\":\"urgent-job\",\"namespace\":"
                               "\"other\"},\"spec\":{\"minMember\":4,\"queue\":\"research\","
                               "\"priorityClassName\":\"urgent\"},\"status\":{\"phase\":"
                               "\"Pending\"}}"));
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 3}));
    g_assert_true(wait_for(r, event_with, "TFJobScaledDown:urgent-job (priority 1000 > 0)"));
    /* Restarted, the operator finds the count in the services: no pod comes or goes. */
    guint creates = store_creates(r), deletes = store_deletes(r);
    restart_operator(r);
    g_assert_true(wait_for(r, controller_ready, NULL));
    spin(2500);
    g_assert_cmpuint(store_creates(r), ==, creates);
    g_assert_cmpuint(store_deletes(r), ==, deletes);
    g_assert_cmpuint(count(r, "pods"), ==, 3);
}

static void test_undecodable_job(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    put_object(r, "tfjobs",
               json_tokener_parse(
                       "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
                       "\"metadata\":{\"name\":\"typo\",\"namespace\":\"ns\"},"
                       "\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":\"two\"}}}}"));
    rig_start(r, "kube-batchd");
    g_assert_true(wait_for(r, condition_is, &(CondIs){"tfjobs/ns/typo", "Failed"}));
    g_autofree char *st = job_field(r, "tfjobs/ns/typo", "status", "conditions");
    g_assert_nonnull(strstr(st, "spec.tfReplicaSpecs.Worker.replicas: expected an integer"));
    g_assert_true(wait_for(r, event_with, "InvalidTFJobSpec:expected an integer"));
    /* Written once: later passes (resync every second) leave it alone. */
    gint64 rv = store_rv(r);
    gint64 end = g_get_monotonic_time() + 1500 * 1000;
    while (g_get_monotonic_time() < end) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    g_assert_cmpint(store_rv(r), ==, rv);
    g_assert_cmpuint(count(r, "pods"), ==, 0);
}

/* Restarting the operator, with its TFJob list failing while the pods and services are listed,
 * deletes nothing, restarts nothing; a job deleted while it was down is cleaned up after. */
static void test_operator_restart_kills_nothing(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    rig_start(r, "kube-batchd");
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"services", 6}));
    set_pods(r, "mnist-dist-", "Running", -1);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Running"}));
    guint deletes = store_deletes(r), creates = store_creates(r);
    for (int round = 0; round < 3; round++) {
        store_set(r, &r->store->fail_job_lists, TRUE);
        restart_operator(r);
        spin(1500); /* pods, services and groups listed; tfjobs failing */
        char *reason = NULL;
        g_assert_false(tf_controller_ready(r->controller, &reason));
        g_assert_cmpstr(reason, ==, "cache of tfjobs not synced");
        g_free(reason);
        g_assert_cmpuint(store_deletes(r), ==, deletes);
        store_set(r, &r->store->fail_job_lists, FALSE);
        g_assert_true(wait_for(r, controller_ready, NULL));
        spin(1500); /* a resync pass or two */
        g_assert_cmpuint(store_deletes(r), ==, deletes);
        g_assert_cmpuint(store_creates(r), ==, creates);
        g_assert_cmpuint(count(r, "pods"), ==, 6);
        g_assert_cmpuint(count(r, "services"), ==, 6);
        g_assert_cmpuint(count(r, "podgroups"), ==, 1);
        g_autofree char *last = last_condition(r, JOB_KEY);
        g_assert_cmpstr(last, ==, "Running");
        g_assert_cmpuint(event_count(r, "ExitedWithCode"), ==, 0);
        g_assert_cmpuint(event_count(r, "TFJobRestarting"), ==, 0);
    }
    /* The job goes while the operator is down: its children go once it is back. */
    g_clear_pointer(&r->controller, tf_controller_free);
    g_mutex_lock(&r->store->lock);
    Path p = {.plural = (char *)"tfjobs", .ns = (char *)"research", .name = (char *)"mnist-dist"};
    kb_test_response_unref(do_delete(r->store, &p));
    g_mutex_unlock(&r->store->lock);
    rig_start(r, "kube-batchd");
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"services", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"podgroups", 0}));
    /* Each deletion said as an event on the child: 6 pods, 6 services, 1 group. */
    g_assert_true(wait_for(r, owner_deleted_events, GUINT_TO_POINTER(13)));
}

/* The operator's own status writes reach its cache late (a lagging watch): each pass then gets
 * 409 on the status; it reads the job again and records every event once. */
static void test_conflicts_repeat_no_event(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    store_set(r, &r->store->hold_job_watch, TRUE);
    rig_start(r, "kube-batchd");
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Created"}));
    set_pods(r, "mnist-dist-", "Running", -1);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Running"}));
    spin(2500); /* resync passes, each from the stale cache */
    g_assert_cmpuint(r->store->conflicts, >, 0);
    g_assert_cmpuint(event_count(r, "TFJobCreated"), ==, 1);
    g_assert_cmpuint(event_count(r, "TFJobRunning"), ==, 1);
    set_pods(r, "mnist-dist-worker-0", "Failed", 1);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Failed"}));
    spin(2500);
    g_assert_cmpuint(event_count(r, "TFJobFailed"), ==, 1);
}

/* The stored object at @key, as JSON text (newly allocated), or NULL. */
static char *stored(Rig *r, const char *key)
{
    g_mutex_lock(&r->store->lock);
    json_object *o = g_hash_table_lookup(r->store->objects, key);
    char *out = o != NULL ? g_strdup(json_object_to_json_string_ext(
                                    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE))
                          : NULL;
    g_mutex_unlock(&r->store->lock);
    return out;
}

static gboolean discovered_twice(Rig *r, gconstpointer data)
{
    g_mutex_lock(&r->store->lock);
    gboolean twice = r->store->discoveries >= 2;
    g_mutex_unlock(&r->store->lock);
    return twice;
}

/* --gang-api auto on a server that serves scheduling.k8s.io/v1beta1: nothing is created while
 * discovery fails (it is asked again, never guessed); once it answers, the job gets a Workload
 * and a native PodGroup, its pods name the group in spec.schedulingGroup, and the finished job's
 * group and Workload go. */
static void test_gang_api_auto_native(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    g_hash_table_add(r->store->served, (gpointer) "scheduling.k8s.io/v1beta1");
    r->store->fail_discovery = TRUE;
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    rig_start_api(r, "kube-batchd", FALSE, TF_GANG_API_AUTO);
    g_assert_true(wait_for(r, discovered_twice, NULL));
    g_autofree char *reason = NULL;
    g_assert_false(tf_controller_ready(r->controller, &reason));
    g_assert_nonnull(strstr(reason, "discovery of scheduling.k8s.io/v1beta1"));
    g_assert_cmpint(tf_controller_gang_api(r->controller), ==, TF_GANG_API_AUTO);
    g_assert_cmpuint(store_creates(r), ==, 0);
    g_mutex_lock(&r->store->lock);
    r->store->fail_discovery = FALSE;
    g_mutex_unlock(&r->store->lock);

    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_cmpint(tf_controller_gang_api(r->controller), ==, TF_GANG_API_NATIVE);
    g_assert_cmpuint(count(r, "workloads"), ==, 1);
    g_autofree char *pg = stored(r, "podgroups/research/mnist-dist");
    g_assert_nonnull(strstr(pg, "\"apiVersion\":\"scheduling.k8s.io/v1beta1\""));
    g_assert_nonnull(strstr(pg, "\"workloadName\":\"mnist-dist\""));
    g_assert_nonnull(strstr(pg, "\"minCount\":6"));
    g_autofree char *pod = stored(r, "pods/research/mnist-dist-worker-3");
    g_assert_nonnull(strstr(pod, "\"schedulingGroup\":{\"podGroupName\":\"mnist-dist\"}"));
    g_assert_null(strstr(pod, "scheduling.k8s.io/group-name"));

    set_pods(r, "mnist-dist-", "Running", -1);
    set_pods(r, "mnist-dist-worker-0", "Succeeded", 0);
    g_assert_true(wait_for(r, condition_is, &(CondIs){JOB_KEY, "Succeeded"}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"podgroups", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"workloads", 0}));
    g_assert_cmpuint(tf_controller_errors(r->controller), ==, 0);
}

/* --gang-api auto where the server has no scheduling.k8s.io/v1beta1 (404): today's Volcano
 * PodGroup, and pods that join it by annotation. */
static void test_gang_api_auto_volcano(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    rig_start_api(r, "kube-batchd", FALSE, TF_GANG_API_AUTO);
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_cmpint(tf_controller_gang_api(r->controller), ==, TF_GANG_API_VOLCANO);
    g_assert_cmpuint(count(r, "workloads"), ==, 0);
    g_autofree char *pg = stored(r, "podgroups/research/mnist-dist");
    g_assert_nonnull(strstr(pg, "\"apiVersion\":\"scheduling.volcano.sh/v1beta1\""));
    g_autofree char *pod = stored(r, "pods/research/mnist-dist-worker-3");
    g_assert_null(strstr(pod, "schedulingGroup"));
    g_assert_nonnull(strstr(pod, "\"scheduling.k8s.io/group-name\":\"mnist-dist\""));
}

/* A TFJob deleted while the operator was away: its native PodGroup and Workload are deleted with
 * its pods (the test server has no garbage collector). */
static void test_gang_native_orphans(void)
{
    g_autoptr(Rig) r = rig_new(TRUE);
    g_hash_table_add(r->store->served, (gpointer) "scheduling.k8s.io/v1beta1");
    put_object(r, "tfjobs", load("v1-2ps-4w.json"));
    rig_start_api(r, "kube-batchd", FALSE, TF_GANG_API_NATIVE);
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 6}));
    g_assert_cmpuint(count(r, "workloads"), ==, 1);
    g_mutex_lock(&r->store->lock);
    json_object *job = g_hash_table_lookup(r->store->objects, JOB_KEY);
    json_object_get(job);
    g_hash_table_remove(r->store->objects, JOB_KEY);
    notify(r->store, "DELETED", "tfjobs", job);
    json_object_put(job);
    g_mutex_unlock(&r->store->lock);
    g_assert_true(wait_for(r, count_is, &(CountIs){"workloads", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"podgroups", 0}));
    g_assert_true(wait_for(r, count_is, &(CountIs){"pods", 0}));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_add_func("/operator/controller/v1-lifecycle", test_v1_lifecycle);
    g_test_add_func("/operator/controller/restart-and-delete", test_restart_and_delete);
    g_test_add_func("/operator/controller/v1alpha1-only", test_v1alpha1_only);
    g_test_add_func("/operator/controller/autoscaling", test_autoscaling);
    g_test_add_func("/operator/controller/undecodable-job", test_undecodable_job);
    g_test_add_func("/operator/controller/restart-kills-nothing",
                    test_operator_restart_kills_nothing);
    g_test_add_func("/operator/controller/conflicts-repeat-no-event",
                    test_conflicts_repeat_no_event);
    g_test_add_func("/operator/controller/gang-api/auto-native", test_gang_api_auto_native);
    g_test_add_func("/operator/controller/gang-api/auto-volcano", test_gang_api_auto_volcano);
    g_test_add_func("/operator/controller/gang-api/native-orphans", test_gang_native_orphans);
    return g_test_run();
}
