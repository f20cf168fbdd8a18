/*
 * The binder against the scripted test server: bindings go out in parallel within the window,
 * outcomes reach the cache (assumed -> binding; a certain failure releases that pod alone; an
 * unknown outcome is retried and keeps the pod's room), events are posted.
 */
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-dra.h"
#include "kube/kb-informer.h"
#include "kube/kb-objects.h"
#include "kube/kb-recorder.h"
#include "scheduler/binder.h"
#include "scheduler/cache.h"
#include "scheduler/dra.h"
#include "tests/lib/kb-test-server.h"

#define NS "team-a"

typedef struct {
    KbTestServer *srv;
    KbClient *client;
    KbCache *cache;
    KbRecorder *recorder;
    KbBinder *binder;
    GArray *placements;
    GPtrArray *outcomes; /* char* "pod:result:rolled" */
} Fixture;

static json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    return o;
}

static void add_node(KbCache *cache, const char *name, int gpus)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%"
            "s\"},"
            "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\","
            "\"nvidia.com/"
            "gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            name, name, gpus);
    json_object *o = parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbNode) node = kb_node_decode(o, FALSE, &error);
    g_assert_no_error(error);
    kb_cache_add_node(cache, node);
    json_object_put(o);
}

static void add_group(KbCache *cache, const char *name, int min_member)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" NS "\",\"uid\":\"g-%s\"},"
            "\"spec\":{\"minMember\":%d}}",
            name, name, min_member);
    json_object *o = parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(o, FALSE, &error);
    g_assert_no_error(error);
    kb_cache_add_pod_group(cache, pg);
    json_object_put(o);
}

static void add_pod(KbCache *cache, const char *name, const char *group)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"" NS
            "\",\"uid\":\"uid-%s\",\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}},"
            "\"spec\":{\"schedulerName\":\"kube-batchd\",\"containers\":[{\"name\":\"c\","
            "\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"}}}]},"
            "\"status\":{\"phase\":\"Pending\"}}",
            name, name, group);
    json_object *o = parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    g_assert_no_error(error);
    kb_cache_add_pod(cache, pod);
    json_object_put(o);
}

/* Assume pod @name onto @node as a cycle would, and add its placement. */
static void place(Fixture *f, const char *name, const char *node, const char *job)
{
    KbTaskInfo *task = kb_cache_lookup_task(f->cache, NS, name);
    KbNodeInfo *ni = kb_cache_lookup_node(f->cache, node);
    g_assert_nonnull(task);
    g_assert_nonnull(ni);
    kb_cache_assume_task(f->cache, task, ni->id);
    KbPlacement pl = {
            .pod = kb_object_ref(task->pod), .node = g_intern_string(node), .job = g_strdup(job)};
    g_array_append_val(f->placements, pl);
}

static void placement_clear(gpointer p)
{
    KbPlacement *pl = p;
    kb_object_unref(pl->pod);
    g_free(pl->job);
    g_free(pl->gpu_ids);
    g_clear_pointer(&pl->claim_writes, g_ptr_array_unref);
}

static void on_done(const KbBindOutcome *out, gpointer data)
{
    Fixture *f = data;
    g_ptr_array_add(f->outcomes,
                    g_strdup_printf("%s:%s:%u", out->pod->meta.name,
                                    kb_bind_result_to_string(out->result), out->n_rolled_back));
}

static void fixture_setup(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    f->srv = kb_test_server_new(NULL, NULL, NULL);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(f->srv));
    f->client = kb_client_new(config, &error);
    g_assert_no_error(error);
    f->cache = kb_cache_new(NULL, NULL);
    f->recorder = kb_recorder_new(f->client, "kube-batchd");
    f->binder = kb_binder_new(f->client, f->cache, f->recorder);
    kb_binder_set_done_func(f->binder, on_done, f);
    f->placements = g_array_new(FALSE, TRUE, sizeof(KbPlacement));
    g_array_set_clear_func(f->placements, placement_clear);
    f->outcomes = g_ptr_array_new_with_free_func(g_free);
    add_node(f->cache, "n1", 8);
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/events", 201,
                           "{\"kind\":\"Event\",\"metadata\":{\"name\":\"e\"}}");
}

/* Iterate until nothing is queued or in flight (binder and recorder), or fail after 10 s. */
static void drain(Fixture *f)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (kb_binder_in_flight(f->binder) > 0 ||
           (kb_binder_queued(f->binder) > 0 && g_get_monotonic_time() < deadline) ||
           kb_recorder_pending(f->recorder) > 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
}

static void fixture_teardown(Fixture *f, gconstpointer data)
{
    drain(f);
    kb_binder_free(f->binder);
    kb_recorder_free(f->recorder);
    kb_client_free(f->client);
    kb_cache_free(f->cache);
    g_array_unref(f->placements);
    g_ptr_array_unref(f->outcomes);
    kb_test_server_free(f->srv);
}

static KbTaskState state_of(Fixture *f, const char *name)
{
    KbTaskInfo *t = kb_cache_lookup_task(f->cache, NS, name);
    g_assert_nonnull(t);
    return t->state;
}

/* The binding requests the server received, "pod->node" in arrival order. */
static GPtrArray *bindings_seen(Fixture *f)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (!g_str_has_suffix(r->path, "/binding"))
            continue;
        json_object *b = kb_test_request_json(r);
        json_object *meta, *target, *name, *uid, *node;
        g_assert_true(json_object_object_get_ex(b, "metadata", &meta));
        g_assert_true(json_object_object_get_ex(meta, "name", &name));
        g_assert_true(json_object_object_get_ex(meta, "uid", &uid));
        g_assert_true(json_object_object_get_ex(b, "target", &target));
        g_assert_true(json_object_object_get_ex(target, "name", &node));
        g_autofree char *want_path = g_strdup_printf("/api/v1/namespaces/" NS "/pods/%s/binding",
                                                     json_object_get_string(name));
        g_assert_cmpstr(r->path, ==, want_path);
        g_autofree char *want_uid = g_strdup_printf("uid-%s", json_object_get_string(name));
        g_assert_cmpstr(json_object_get_string(uid), ==, want_uid);
        g_ptr_array_add(out, g_strdup_printf("%s->%s", json_object_get_string(name),
                                             json_object_get_string(node)));
        json_object_put(b);
    }
    return out;
}

/* Event bodies posted, as "reason|message". */
static gboolean event_posted(Fixture *f, const char *reason, const char *message_part)
{
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (strcmp(r->method, "POST") != 0 || !g_str_has_suffix(r->path, "/events"))
            continue;
        json_object *e = kb_test_request_json(r);
        json_object *jr, *jm;
        gboolean hit = json_object_object_get_ex(e, "reason", &jr) &&
                       json_object_object_get_ex(e, "message", &jm) &&
                       strcmp(json_object_get_string(jr), reason) == 0 &&
                       strstr(json_object_get_string(jm), message_part) != NULL;
        json_object_put(e);
        if (hit)
            return TRUE;
    }
    return FALSE;
}

static void gang_of_three(Fixture *f)
{
    add_group(f->cache, "g", 3);
    for (int i = 0; i < 3; i++) {
        g_autofree char *name = g_strdup_printf("p%d", i);
        add_pod(f->cache, name, "g");
        place(f, name, "n1", NS "/g");
    }
}

static void test_success(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201,
                           "{\"kind\":\"Status\",\"status\":\"Success\",\"code\":201}");
    gang_of_three(f);
    kb_binder_submit(f->binder, f->placements);
    drain(f);

    g_autoptr(GPtrArray) seen = bindings_seen(f);
    g_assert_cmpuint(seen->len, ==, 3);
    for (int i = 0; i < 3; i++) {
        g_autofree char *want = g_strdup_printf("p%d->n1", i);
        g_assert_true(g_ptr_array_find_with_equal_func(seen, want, g_str_equal, NULL));
        g_autofree char *name = g_strdup_printf("p%d", i);
        g_assert_cmpint(state_of(f, name), ==, KB_TASK_BINDING);
    }
    g_assert_cmpuint(kb_binder_count(f->binder, KB_BIND_SUCCEEDED), ==, 3);
    g_assert_cmpuint(f->outcomes->len, ==, 3);
    /* One event for the gang, on its PodGroup, naming the nodes; per pod within their budget. */
    g_assert_true(event_posted(f, "Scheduled", "bound 3 pods: n1 x3"));
    g_assert_true(event_posted(f, "Scheduled", "Successfully assigned " NS "/p1 to n1"));
    g_assert_cmpuint(kb_binder_events_posted(f->binder), ==, 1 + 3);
    /* Node accounting keeps the three GPUs in use. */
    KbNodeInfo *ni = kb_cache_lookup_node(f->cache, "n1");
    g_assert_cmpint(ni->used.v[KB_RES_GPU], ==, 3000);
}

/* Events have budgets: 4 gangs of 2 with a gang budget of 2 (no refill): two PodGroup events,
 * two dropped and counted; per-pod events within their own budget (3 of 8). Every binding is
 * made whatever the budgets say. */
static void test_event_budgets(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    kb_binder_set_gang_event_budget(f->binder, 0, 2);
    kb_binder_set_pod_event_budget(f->binder, 0, 3);
    for (int g = 0; g < 4; g++) {
        g_autofree char *group = g_strdup_printf("g%d", g);
        g_autofree char *job = g_strdup_printf(NS "/g%d", g);
        add_group(f->cache, group, 2);
        for (int i = 0; i < 2; i++) {
            g_autofree char *name = g_strdup_printf("g%d-%d", g, i);
            add_pod(f->cache, name, group);
            place(f, name, "n1", job);
        }
    }
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_assert_cmpuint(kb_binder_count(f->binder, KB_BIND_SUCCEEDED), ==, 8);
    g_assert_cmpuint(kb_binder_events_posted(f->binder), ==, 2 + 3);
    g_assert_cmpuint(kb_binder_events_over_budget(f->binder), ==, 2 + 5);
    guint n_events = 0;
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++)
        n_events += g_str_has_suffix(kb_test_server_request(f->srv, i)->path, "/events");
    g_assert_cmpuint(n_events, ==, 5);
}

/* A placement with GPU indices: the Binding carries kube-batchd.io/gpu-ids; no PATCH. */
static void test_gpu_ids_in_binding(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    add_group(f->cache, "g", 1);
    add_pod(f->cache, "p0", "g");
    place(f, "p0", "n1", NS "/g");
    g_array_index(f->placements, KbPlacement, 0).gpu_ids = g_strdup("2,3");
    kb_binder_submit(f->binder, f->placements);
    drain(f);

    guint n_bindings = 0;
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        g_assert_cmpstr(r->method, !=, "PATCH");
        if (!g_str_has_suffix(r->path, "/binding"))
            continue;
        n_bindings++;
        json_object *b = kb_test_request_json(r);
        json_object *meta, *ann, *ids;
        g_assert_true(json_object_object_get_ex(b, "metadata", &meta));
        g_assert_true(json_object_object_get_ex(meta, "annotations", &ann));
        g_assert_true(json_object_object_get_ex(ann, "kube-batchd.io/gpu-ids", &ids));
        g_assert_cmpstr(json_object_get_string(ids), ==, "2,3");
        json_object_put(b);
    }
    g_assert_cmpuint(n_bindings, ==, 1);
    g_assert_cmpuint(kb_binder_count(f->binder, KB_BIND_SUCCEEDED), ==, 1);
}

typedef struct {
    guint status;
    const char *reason;
    KbBindResult result;
} FailCase;

static const FailCase fail_cases[] = {
        {409, "Conflict", KB_BIND_CONFLICT},  {404, "NotFound", KB_BIND_NOT_FOUND},
        {403, "Forbidden", KB_BIND_REFUSED},  {422, "Invalid", KB_BIND_REFUSED},
        {400, "BadRequest", KB_BIND_REFUSED},
};

/* p0 binds, p1 fails for certain, p2 (queued behind) binds. The gang is partly bound, so p1
 * keeps its GPU and its binding is sent again after the job's backoff (no other job may take
 * the room and split the gang), whatever the failure, 404 included: a pod that is really gone
 * frees its room when the watch deletes it, and its retry then finds it settled. */
static void test_certain_failure_keeps_room(Fixture *f, gconstpointer data)
{
    const FailCase *fc = data;
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/p0/binding", 201, "{}");
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/p1/binding",
                        kb_test_response_new_status(fc->status, fc->reason, "pod p1: refused"));
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/p2/binding", 201, "{}");
    kb_binder_set_max_in_flight(f->binder, 1);
    gang_of_three(f);
    kb_binder_submit(f->binder, f->placements);
    drain(f);

    g_autoptr(GPtrArray) seen = bindings_seen(f);
    g_assert_cmpuint(seen->len, ==, 3);
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_BINDING);
    g_assert_cmpint(state_of(f, "p2"), ==, KB_TASK_BINDING);
    g_assert_cmpuint(kb_binder_count(f->binder, fc->result), ==, 1);
    g_assert_cmpint(state_of(f, "p1"), ==, KB_TASK_ALLOCATED);
    g_assert_cmpuint(kb_binder_retrying(f->binder), ==, 1);
    g_autofree char *want = g_strdup_printf("p1:%s:0", kb_bind_result_to_string(fc->result));
    g_assert_true(g_ptr_array_find_with_equal_func(f->outcomes, want, g_str_equal, NULL));
    g_assert_true(event_posted(f, "FailedScheduling", "pod p1: refused"));
    KbNodeInfo *ni = kb_cache_lookup_node(f->cache, "n1");
    g_assert_cmpint(ni->used.v[KB_RES_GPU], ==, 3000);
    KbJobInfo *job = kb_cache_lookup_job(f->cache, NS, "g");
    g_assert_cmpint(job->backoff_until, >, 0);
    g_assert_nonnull(strstr(job->bind_error, "pod p1: refused"));
    if (fc->result != KB_BIND_NOT_FOUND)
        return;
    /* Really gone: the watch's delete frees the GPU, and the retry sends nothing more. */
    KbTaskInfo *t = kb_cache_lookup_task(f->cache, NS, "p1");
    g_assert_nonnull(t);
    kb_cache_delete_pod(f->cache, t->pod);
    g_assert_cmpint(kb_cache_lookup_node(f->cache, "n1")->used.v[KB_RES_GPU], ==, 2000);
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (kb_binder_retrying(f->binder) > 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    drain(f);
    g_autoptr(GPtrArray) after = bindings_seen(f);
    g_assert_cmpuint(after->len, ==, 3);
}

/* Outcome unknown (500, 503, 429): the pod keeps its GPU and the same binding is sent again; a
 * 409 "already assigned" to our node then means the first attempt did it. */
/* A pod alone (a gang of one) refused for certain: nothing of its gang is on a node, so it is
 * released and its job backs off. */
static void test_certain_failure_lone_pod(Fixture *f, gconstpointer data)
{
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/p0/binding",
                        kb_test_response_new_status(403, "Forbidden", "pods/binding forbidden"));
    add_group(f->cache, "g", 1);
    add_pod(f->cache, "p0", "g");
    place(f, "p0", "n1", NS "/g");
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_PENDING);
    g_assert_cmpuint(kb_binder_retrying(f->binder), ==, 0);
    g_assert_cmpint(kb_cache_lookup_node(f->cache, "n1")->used.v[KB_RES_GPU], ==, 0);
    g_assert_cmpint(kb_cache_lookup_job(f->cache, NS, "g")->backoff_until, >, 0);
}

static void test_unknown_outcome_retried(Fixture *f, gconstpointer data)
{
    const char *path = "/api/v1/namespaces/" NS "/pods/p1/binding";
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    kb_test_server_push(f->srv, "POST", path,
                        kb_test_response_new_status(500, "InternalError", "etcd timeout"));
    kb_test_server_push(f->srv, "POST", path,
                        kb_test_response_new_status(503, "ServiceUnavailable", "try later"));
    kb_test_server_push(f->srv, "POST", path,
                        kb_test_response_new_status(409, "Conflict",
                                                    "pod p1 is already assigned to node \"n1\""));
    kb_binder_set_retry(f->binder, 8, 5);
    gang_of_three(f);
    kb_binder_submit(f->binder, f->placements);
    /* While the retry waits, the pod holds its GPU. */
    while (kb_binder_retrying(f->binder) == 0 && kb_binder_in_flight(f->binder) > 0)
        g_main_context_iteration(NULL, TRUE);
    KbNodeInfo *ni = kb_cache_lookup_node(f->cache, "n1");
    g_assert_cmpint(ni->used.v[KB_RES_GPU], ==, 3000);
    while (kb_binder_retrying(f->binder) > 0 || kb_binder_in_flight(f->binder) > 0)
        g_main_context_iteration(NULL, TRUE);
    drain(f);
    g_assert_cmpuint(kb_binder_retries(f->binder), ==, 2);
    g_assert_cmpuint(kb_binder_count(f->binder, KB_BIND_SUCCEEDED), ==, 3);
    for (int i = 0; i < 3; i++) {
        g_autofree char *name = g_strdup_printf("p%d", i);
        g_assert_cmpint(state_of(f, name), ==, KB_TASK_BINDING);
    }
    g_assert_cmpint(ni->used.v[KB_RES_GPU], ==, 3000);
    KbJobInfo *job = kb_cache_lookup_job(f->cache, NS, "g");
    g_assert_cmpuint(job->bind_failures, ==, 0);
}

/* 409 "already assigned" to another node: the pod is held there, not on the node we chose. */
static void test_conflict_elsewhere(Fixture *f, gconstpointer data)
{
    add_node(f->cache, "n2", 8);
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/p0/binding",
                        kb_test_response_new_status(409, "Conflict",
                                                    "pod p0 is already assigned to node \"n2\""));
    add_group(f->cache, "g", 1);
    add_pod(f->cache, "p0", "g");
    place(f, "p0", "n1", NS "/g");
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_assert_cmpuint(kb_binder_count(f->binder, KB_BIND_CONFLICT), ==, 1);
    KbTaskInfo *t = kb_cache_lookup_task(f->cache, NS, "p0");
    g_assert_cmpint(t->state, ==, KB_TASK_BINDING);
    g_assert_cmpint(kb_cache_lookup_node(f->cache, "n1")->used.v[KB_RES_GPU], ==, 0);
    g_assert_cmpint(kb_cache_lookup_node(f->cache, "n2")->used.v[KB_RES_GPU], ==, 1000);
}

/* Nothing listening: the outcome is never known; after the last attempt the pods keep their
 * room (BINDING) until the watch or the assume timeout decides. */
static void test_transport_error(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = kb_config_new("http://127.0.0.1:1");
    g_autoptr(KbClient) dead = kb_client_new(config, &error);
    g_assert_no_error(error);
    g_autoptr(KbBinder) binder = kb_binder_new(dead, f->cache, NULL);
    kb_binder_set_retry(binder, 3, 5);
    add_group(f->cache, "g", 2);
    add_pod(f->cache, "p0", "g");
    add_pod(f->cache, "p1", "g");
    place(f, "p0", "n1", NS "/g");
    place(f, "p1", "n1", NS "/g");
    kb_binder_submit(binder, f->placements);
    while (kb_binder_in_flight(binder) > 0 || kb_binder_retrying(binder) > 0)
        g_main_context_iteration(NULL, TRUE);
    g_assert_cmpuint(kb_binder_count(binder, KB_BIND_ERROR), ==, 2);
    g_assert_cmpuint(kb_binder_retries(binder), ==, 4);
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_BINDING);
    g_assert_cmpint(state_of(f, "p1"), ==, KB_TASK_BINDING);
    g_assert_cmpint(kb_cache_lookup_node(f->cache, "n1")->used.v[KB_RES_GPU], ==, 2000);
}

/* 24 slow bindings with a window of 4: never more than 4 at once, and they do overlap. */
static void test_window(Fixture *f, gconstpointer data)
{
    KbTestResponse *slow = kb_test_response_new_body(201, "{}");
    kb_test_response_set_delay(slow, 30);
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", slow);
    add_node(f->cache, "n2", 100);
    add_group(f->cache, "g", 24);
    for (int i = 0; i < 24; i++) {
        g_autofree char *name = g_strdup_printf("w%d", i);
        add_pod(f->cache, name, "g");
        place(f, name, "n2", NS "/g");
    }
    /* Without a recorder, every request the server sees is a binding: the peak it measures is
     * the binder's window alone, not the window plus the Scheduled events posted meanwhile. */
    kb_binder_free(f->binder);
    f->binder = kb_binder_new(f->client, f->cache, NULL);
    kb_binder_set_done_func(f->binder, on_done, f);
    kb_binder_set_max_in_flight(f->binder, 4);
    kb_binder_submit(f->binder, f->placements);
    g_assert_cmpuint(kb_binder_in_flight(f->binder), ==, 4);
    g_assert_cmpuint(kb_binder_queued(f->binder), ==, 20);
    drain(f);
    g_assert_cmpuint(kb_binder_count(f->binder, KB_BIND_SUCCEEDED), ==, 24);
    g_assert_cmpuint(kb_test_server_max_concurrent(f->srv), <=, 4);
    g_assert_cmpuint(kb_test_server_max_concurrent(f->srv), >=, 2);
}

/* Paused, then dropped: nothing is sent and the gang is pending again. */
static void test_drop_queued(Fixture *f, gconstpointer data)
{
    gang_of_three(f);
    kb_binder_set_paused(f->binder, TRUE);
    kb_binder_submit(f->binder, f->placements);
    g_assert_cmpuint(kb_binder_queued(f->binder), ==, 3);
    g_assert_cmpuint(kb_binder_drop_queued(f->binder), ==, 3);
    kb_binder_set_paused(f->binder, FALSE);
    drain(f);
    g_assert_cmpuint(kb_test_server_request_count(f->srv), ==, 0);
    for (int i = 0; i < 3; i++) {
        g_autofree char *name = g_strdup_printf("p%d", i);
        g_assert_cmpint(state_of(f, name), ==, KB_TASK_PENDING);
    }
    g_assert_cmpuint(f->outcomes->len, ==, 0);
}

/* Freed with bindings on the wire: the late responses are ignored, nothing crashes or leaks. */
static void test_free_in_flight(Fixture *f, gconstpointer data)
{
    KbTestResponse *slow = kb_test_response_new_body(201, "{}");
    kb_test_response_set_delay(slow, 50);
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", slow);
    gang_of_three(f);
    kb_binder_submit(f->binder, f->placements);
    g_assert_cmpuint(kb_binder_in_flight(f->binder), ==, 3);
    g_clear_pointer(&f->binder, kb_binder_free);
    f->binder = kb_binder_new(f->client, f->cache, NULL);
    while (kb_client_pending(f->client) > 0)
        g_main_context_iteration(NULL, TRUE);
    g_assert_cmpuint(f->outcomes->len, ==, 0);
    /* The cache was not told: the pods are still assumed. */
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_ALLOCATED);
}

/* ---- evictions ------------------------------------------------------------------------------ */

/* Pod @name of group g running on n1, chosen as a victim by a cycle; its eviction in @out. */
static void running_victim(Fixture *f, const char *name, GArray *out)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"" NS "\",\"uid\":\"uid-%s\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
            "\"g\"}},\"spec\":{\"schedulerName\":\"kube-batchd\",\"nodeName\":\"n1\","
            "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
            "\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}",
            name, name);
    json_object *o = parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    g_assert_no_error(error);
    kb_cache_add_pod(f->cache, pod);
    json_object_put(o);
    KbTaskInfo *t = kb_cache_lookup_task(f->cache, NS, name);
    kb_cache_evict_task(f->cache, t);
    g_assert_cmpint(t->state, ==, KB_TASK_RELEASING);
    KbEviction ev = {kb_object_ref(t->pod), "Preempted", g_strdup("preempted by job x"),
                     g_strdup(NS "/g"), g_strdup(NS "/x")};
    g_array_append_val(out, ev);
}

static void eviction_clear(gpointer p)
{
    KbEviction *ev = p;
    kb_object_unref(ev->pod);
    g_free(ev->message);
    g_free(ev->job);
    g_free(ev->preemptor);
    g_clear_pointer(&ev->disrupted_group, kb_object_unref);
}

static void on_evict(const KbEvictOutcome *out, gpointer data)
{
    Fixture *f = data;
    g_ptr_array_add(f->outcomes, g_strdup_printf("%s:%s", out->pod->meta.name,
                                                 kb_evict_result_to_string(out->result)));
}

static void evict_and_wait(Fixture *f, GArray *evictions)
{
    kb_binder_set_evict_func(f->binder, on_evict, f);
    kb_binder_evict(f->binder, evictions);
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (kb_binder_evictions_in_flight(f->binder) > 0 || kb_recorder_pending(f->recorder) > 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
}

/* The eviction requests the server received: "version:pod:uid". */
static GPtrArray *evictions_seen(Fixture *f)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (!g_str_has_suffix(r->path, "/eviction"))
            continue;
        json_object *b = kb_test_request_json(r);
        json_object *v, *meta, *name, *opts, *pre, *uid;
        g_assert_true(json_object_object_get_ex(b, "apiVersion", &v));
        g_assert_true(json_object_object_get_ex(b, "metadata", &meta));
        g_assert_true(json_object_object_get_ex(meta, "name", &name));
        g_assert_true(json_object_object_get_ex(b, "deleteOptions", &opts));
        g_assert_true(json_object_object_get_ex(opts, "preconditions", &pre));
        g_assert_true(json_object_object_get_ex(pre, "uid", &uid));
        g_autofree char *want_path = g_strdup_printf("/api/v1/namespaces/" NS "/pods/%s/eviction",
                                                     json_object_get_string(name));
        g_assert_cmpstr(r->path, ==, want_path);
        g_ptr_array_add(out,
                        g_strdup_printf("%s:%s:%s", json_object_get_string(v),
                                        json_object_get_string(name), json_object_get_string(uid)));
        json_object_put(b);
    }
    return out;
}

static void test_evict_accepted(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(evs, eviction_clear);
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v0/eviction", 201,
                           "{\"kind\":\"Status\",\"status\":\"Success\"}");
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v1/eviction",
                        kb_test_response_new_status(404, "NotFound", "pods \"v1\" not found"));
    running_victim(f, "v0", evs);
    running_victim(f, "v1", evs);
    evict_and_wait(f, evs);
    g_autoptr(GPtrArray) seen = evictions_seen(f);
    g_assert_cmpuint(seen->len, ==, 3);
    g_assert_true(g_ptr_array_find_with_equal_func(seen, "policy/v1:v0:uid-v0", g_str_equal, NULL));
    g_assert_cmpuint(kb_binder_evict_count(f->binder, KB_EVICT_ACCEPTED), ==, 1);
    g_assert_cmpint(state_of(f, "v0"), ==, KB_TASK_RELEASING);
    g_assert_true(g_ptr_array_find_with_equal_func(f->outcomes, "v0:accepted", g_str_equal, NULL));
}

/* A server without policy/v1 Eviction (404 without pod details) is asked in policy/v1beta1. */
static void test_evict_v1beta1_fallback(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(evs, eviction_clear);
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v0/eviction",
                        kb_test_response_new_body(404, "404 page not found"));
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v0/eviction",
                        kb_test_response_new_body(201, "{}"));
    running_victim(f, "v0", evs);
    evict_and_wait(f, evs);
    g_autoptr(GPtrArray) seen = evictions_seen(f);
    g_assert_cmpuint(seen->len, ==, 2);
    g_assert_cmpstr(seen->pdata[0], ==, "policy/v1:v0:uid-v0");
    g_assert_cmpstr(seen->pdata[1], ==, "policy/v1beta1:v0:uid-v0");
    g_assert_cmpuint(kb_binder_evict_count(f->binder, KB_EVICT_ACCEPTED), ==, 1);
    g_assert_cmpint(state_of(f, "v0"), ==, KB_TASK_RELEASING);
}

/* A PodDisruptionBudget refuses (429): the pod counts as running again; a warning event. */
static void test_evict_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(evs, eviction_clear);
    kb_test_server_push(
            f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v0/eviction",
            kb_test_response_new_status(429, "TooManyRequests",
                                        "Cannot evict pod as it would violate the pod's "
                                        "disruption budget."));
    running_victim(f, "v0", evs);
    evict_and_wait(f, evs);
    g_assert_cmpuint(kb_binder_evict_count(f->binder, KB_EVICT_REFUSED), ==, 1);
    g_assert_cmpint(state_of(f, "v0"), ==, KB_TASK_RUNNING);
    g_assert_true(event_posted(f, "FailedEviction", "disruption budget"));
    g_assert_cmpstr(f->outcomes->pdata[0], ==, "v0:refused");
}

/* "METHOD path" of every request to a pod's or a podgroup's status or a pod's eviction, in order;
 * each status patch a strategic merge setting DisruptionTarget/PreemptionByScheduler. */
static GPtrArray *disruption_calls(Fixture *f)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (g_str_has_suffix(r->path, "/status")) {
            g_assert_cmpstr(r->method, ==, "PATCH");
            g_assert_cmpstr(kb_test_request_header(r, "Content-Type"), ==,
                            "application/strategic-merge-patch+json");
            json_object *b = kb_test_request_json(r);
            json_object *c = json_object_array_get_idx(
                    json_object_object_get(json_object_object_get(b, "status"), "conditions"), 0);
            g_assert_cmpstr(json_object_get_string(json_object_object_get(c, "type")), ==,
                            "DisruptionTarget");
            g_assert_cmpstr(json_object_get_string(json_object_object_get(c, "status")), ==,
                            "True");
            g_assert_cmpstr(json_object_get_string(json_object_object_get(c, "reason")), ==,
                            "PreemptionByScheduler");
            g_assert_cmpstr(json_object_get_string(json_object_object_get(c, "message")), ==,
                            "preempted by job x");
            json_object_put(b);
        } else if (!g_str_has_suffix(r->path, "/eviction")) {
            continue;
        }
        g_ptr_array_add(out, g_strdup_printf("%s %s", r->method, r->path));
    }
    return out;
}

/* As kube-scheduler does, a native PodGroup taken whole gets its DisruptionTarget condition
 * first, once, before any of its pods is evicted. The pods' own condition is not written: the
 * eviction sets it (kube-apiserver 1.26+ replaces one written before), so it was a second write
 * per victim for nothing. */
static void test_evict_disruption_target(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(evs, eviction_clear);
    kb_test_server_respond(f->srv, "PATCH",
                           "/apis/scheduling.k8s.io/v1beta1/namespaces/" NS "/podgroups/g/status",
                           200, "{}");
    kb_test_server_respond(f->srv, "PATCH", "/api/v1/namespaces/" NS "/pods/*", 200, "{}");
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    json_object *o = parse("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                           "\"metadata\":{\"name\":\"g\",\"namespace\":\"" NS "\"},\"spec\":{"
                           "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},\"disruptionMode\":"
                           "{\"all\":{}}}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) group = kb_pod_group_decode_native(o, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(o);
    running_victim(f, "v0", evs);
    running_victim(f, "v1", evs);
    running_victim(f, "lone", evs);
    for (guint i = 0; i < 2; i++)
        g_array_index(evs, KbEviction, i).disrupted_group = kb_object_ref(group);
    evict_and_wait(f, evs);
    g_autoptr(GPtrArray) calls = disruption_calls(f);
    /* Before: 7, a status PATCH before each pod's eviction too. */
    g_assert_cmpuint(calls->len, ==, 4);
    guint group_at = G_MAXUINT, lone_evict = G_MAXUINT;
    for (guint i = 0; i < calls->len; i++) {
        const char *c = calls->pdata[i];
        g_assert_null(strstr(c, "/pods/lone/status"));
        if (strstr(c, "/podgroups/g/status") != NULL) {
            g_assert_cmpuint(group_at, ==, G_MAXUINT); /* once */
            group_at = i;
        } else if (strstr(c, "/pods/lone/eviction") != NULL) {
            lone_evict = i;
        }
    }
    g_assert_cmpuint(lone_evict, !=, G_MAXUINT);
    for (guint k = 0; k < 2; k++) {
        g_autofree char *ev =
                g_strdup_printf("POST /api/v1/namespaces/" NS "/pods/v%u/eviction", k);
        guint ev_at;
        g_assert_true(g_ptr_array_find_with_equal_func(calls, ev, g_str_equal, &ev_at));
        g_assert_cmpuint(group_at, <, ev_at);
    }
    g_assert_cmpuint(kb_binder_evict_count(f->binder, KB_EVICT_ACCEPTED), ==, 3);
}

/* A condition that cannot be written (403) does not keep the victim (a stale gang's, whose
 * status is written first): it is evicted all the same. */
static void test_evict_disruption_target_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(evs, eviction_clear);
    kb_test_server_push(f->srv, "PATCH", "/api/v1/namespaces/" NS "/pods/v0/status",
                        kb_test_response_new_status(403, "Forbidden", "pods \"v0\" is forbidden"));
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v0/eviction", 201, "{}");
    running_victim(f, "v0", evs);
    g_array_index(evs, KbEviction, 0).reason = KB_GANG_INCOMPLETE;
    evict_and_wait(f, evs);
    g_autoptr(GPtrArray) seen = evictions_seen(f);
    g_assert_cmpuint(seen->len, ==, 1);
    g_assert_cmpuint(kb_binder_evict_count(f->binder, KB_EVICT_ACCEPTED), ==, 1);
}

/* A gang evicted because it lost a member: DisruptionTarget says GangIncomplete, and the pod gets
 * kube-batchd.io/GangEvicted, which the API server leaves alone, for its controller to read. */
static void test_evict_gang_incomplete(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    g_array_set_clear_func(evs, eviction_clear);
    kb_test_server_respond(f->srv, "PATCH", "/api/v1/namespaces/" NS "/pods/v0/status", 200, "{}");
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/v0/eviction", 201, "{}");
    running_victim(f, "v0", evs);
    g_array_index(evs, KbEviction, 0).reason = KB_GANG_INCOMPLETE;
    evict_and_wait(f, evs);
    g_assert_cmpuint(kb_binder_evict_count(f->binder, KB_EVICT_ACCEPTED), ==, 1);
    gboolean patched = FALSE;
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (!g_str_has_suffix(r->path, "/status"))
            continue;
        json_object *b = kb_test_request_json(r);
        json_object *conds =
                json_object_object_get(json_object_object_get(b, "status"), "conditions");
        g_assert_cmpuint(json_object_array_length(conds), ==, 2);
        static const char *const types[] = {KB_DISRUPTION_TARGET, KB_GANG_EVICTED_CONDITION};
        for (guint c = 0; c < 2; c++) {
            json_object *cond = json_object_array_get_idx(conds, c);
            g_assert_cmpstr(json_object_get_string(json_object_object_get(cond, "type")), ==,
                            types[c]);
            g_assert_cmpstr(json_object_get_string(json_object_object_get(cond, "reason")), ==,
                            KB_GANG_INCOMPLETE);
            g_assert_cmpstr(json_object_get_string(json_object_object_get(cond, "message")), ==,
                            "preempted by job x");
        }
        json_object_put(b);
        patched = TRUE;
    }
    g_assert_true(patched);
}

/* ---- DRA: claim writes before the binding, undone exactly on failure ------------------------- */

#define CLAIMS "/apis/resource.k8s.io/v1/namespaces/" NS "/resourceclaims/"

/* A class, node n1's slice of 4 GPUs, claims @claims (1 GPU each, resourceVersion "3") and pod
 * @name using them; assumed on n1 with its claim writes in a placement. */
/* A claim of dra_pod(): name, uid suffix, resourceVersion, then ",\"status\":{...}" or "". */
#define DRA_CLAIM                                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"             \
    "\"name\":\"%s\",\"namespace\":\"" NS "\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%s\"},"     \
    "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"                         \
    "\"deviceClassName\":\"gpu.nvidia.com\"}}]}}%s}"

static void dra_pod(Fixture *f, const char *name, const char *const *claims)
{
    KbDra *dra = kb_cache_dra(f->cache);
    json_object *o = parse("{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{}}");
    g_autoptr(KbDeviceClass) dc = kb_device_class_decode(o, FALSE, NULL);
    json_object_put(o);
    kb_dra_set_class(dra, dc);
    o = parse("{\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
              "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\"},\"devices\":[{\"name\":\"gpu-0\"},"
              "{\"name\":\"gpu-1\"},{\"name\":\"gpu-2\"},{\"name\":\"gpu-3\"}]}}");
    g_autoptr(KbResourceSlice) slice = kb_resource_slice_decode(o, FALSE, NULL);
    json_object_put(o);
    kb_dra_set_slice(dra, slice);
    g_autoptr(GString) rc = g_string_new(NULL);
    for (guint i = 0; claims[i] != NULL; i++) {
        g_autofree char *text = g_strdup_printf(DRA_CLAIM, claims[i], claims[i], "3", "");
        o = parse(text);
        g_autoptr(KbResourceClaim) c = kb_resource_claim_decode(o, FALSE, NULL);
        json_object_put(o);
        kb_dra_set_claim(dra, c);
        g_string_append_printf(rc, "%s{\"name\":\"r%u\",\"resourceClaimName\":\"%s\"}",
                               i == 0 ? "" : ",", i, claims[i]);
    }
    add_group(f->cache, "g", 1);
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"" NS "\",\"uid\":\"uid-%s\","
            "\"annotations\":{\"scheduling.k8s.io/group-name\":\"g\"}},\"spec\":{\"schedulerName\":"
            "\"kube-batchd\",\"containers\":[{\"name\":\"c\"}],\"resourceClaims\":[%s]},"
            "\"status\":{\"phase\":\"Pending\"}}",
            name, name, rc->str);
    o = parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(o);
    kb_cache_add_pod(f->cache, pod);
    KbTaskInfo *task = kb_cache_lookup_task(f->cache, NS, name);
    g_assert_true(kb_dra_assume(dra, task->pod, "n1"));
    place(f, name, "n1", NS "/g");
    KbPod *pods[] = {task->pod};
    g_autofree GPtrArray **writes = kb_dra_gang_writes(dra, pods, 1);
    g_array_index(f->placements, KbPlacement, f->placements->len - 1).claim_writes = writes[0];
}

/* "METHOD path" of every request but events, in arrival order. */
static char *requests_seen(Fixture *f)
{
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (g_str_has_suffix(r->path, "/events"))
            continue;
        g_string_append_printf(out, "%s%s %s", out->len > 0 ? "; " : "", r->method,
                               r->path + (g_str_has_prefix(r->path, CLAIMS) ? strlen(CLAIMS) : 0));
    }
    return g_string_free(out, FALSE);
}

/* The body of the @n-th request to @suffix. */
static json_object *body_of(Fixture *f, const char *suffix, guint n)
{
    for (guint i = 0; i < kb_test_server_request_count(f->srv); i++) {
        const KbTestRequest *r = kb_test_server_request(f->srv, i);
        if (g_str_has_suffix(r->path, suffix) && n-- == 0)
            return kb_test_request_json(r);
    }
    g_assert_not_reached();
}

static void test_dra_claims_first(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "PATCH", CLAIMS "*", 200,
                           "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"7\"}}");
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    const char *claims[] = {"c0", "c1", NULL};
    dra_pod(f, "p0", claims);
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_autofree char *seen = requests_seen(f);
    g_assert_cmpstr(seen, ==,
                    "PATCH c0/status; PATCH c1/status; POST /api/v1/namespaces/" NS
                    "/pods/p0/binding");
    const KbTestRequest *r = kb_test_server_request(f->srv, 0);
    g_assert_cmpstr(kb_test_request_header(r, "content-type"), ==, "application/merge-patch+json");
    json_object *b = body_of(f, "c1/status", 0);
    g_assert_cmpstr(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"metadata\":{\"resourceVersion\":\"3\"},\"status\":{\"allocation\":{"
                    "\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\","
                    "\"pool\":\"n1\",\"device\":\"gpu-1\"}]},\"nodeSelector\":{"
                    "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
                    "\"operator\":\"In\",\"values\":[\"n1\"]}]}]}},\"reservedFor\":[{\"resource\":"
                    "\"pods\",\"name\":\"p0\",\"uid\":\"uid-p0\"}]}}");
    json_object_put(b);
    g_assert_cmpuint(kb_binder_claims_written(f->binder), ==, 2);
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_BINDING);
    /* written: held even once the pod is seen bound, until the claims are seen allocated */
    g_assert_cmpuint(kb_dra_devices_held(kb_cache_dra(f->cache)), ==, 2);
}

/* "ADDED" or "MODIFIED" watch line of a dra_pod() claim at @rv, with @status ("" or
 * ",\"status\":{...}"). */
static char *claim_event(const char *type, const char *name, const char *rv, const char *status)
{
    g_autofree char *obj = g_strdup_printf(DRA_CLAIM, name, name, rv, status);
    return g_strdup_printf("{\"type\":\"%s\",\"object\":%s}\n", type, obj);
}

/* The binder tells the claims' informer what each write made of its claim: the write's watch
 * event is then taken in as that record, not decoded, and the record is what decoding the event
 * gives. */
static void test_dra_claim_echo(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "PATCH", CLAIMS "*", 200,
                           "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"7\"}}");
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    KbInformerOptions opts = {.type = &kb_type_resource_claims,
                              .decode = (KbDecodeFunc)kb_resource_claim_decode};
    KbInformer *inf = kb_informer_new(f->client, &opts, NULL, NULL);
    const char *claims[] = {"c0", "c1", NULL};
    for (guint i = 0; claims[i] != NULL; i++) {
        g_autofree char *line = claim_event("ADDED", claims[i], "3", "");
        kb_informer_feed_watch(inf, line, strlen(line));
    }
    dra_pod(f, "p0", claims);
    kb_binder_set_claim_informer(f->binder, inf);
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_assert_cmpuint(kb_binder_claims_written(f->binder), ==, 2);
    for (guint i = 0; claims[i] != NULL; i++) {
        g_autofree char *suffix = g_strdup_printf("%s/status", claims[i]);
        json_object *body = body_of(f, suffix, 0);
        g_autofree char *status = g_strdup_printf(
                ",\"status\":%s",
                json_object_to_json_string_ext(json_object_object_get(body, "status"),
                                               JSON_C_TO_STRING_PLAIN));
        json_object_put(body);
        g_autofree char *line = claim_event("MODIFIED", claims[i], "7", status);
        kb_informer_feed_watch(inf, line, strlen(line));
        g_assert_cmpuint(kb_informer_echoes(inf), ==, i + 1);
        g_autofree char *obj = g_strdup_printf(DRA_CLAIM, claims[i], claims[i], "7", status);
        json_object *o = parse(obj);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbResourceClaim) want = kb_resource_claim_decode(o, FALSE, &error);
        g_assert_no_error(error);
        json_object_put(o);
        const KbResourceClaim *got = kb_informer_get(inf, NS, claims[i]);
        g_autofree char *why = NULL;
        if (!kb_resource_claim_equal(got, want, &why))
            g_error("claim %s: %s", claims[i], why);
        g_assert_true(got->allocated);
        g_assert_cmpuint(got->n_reserved_for, ==, 1);
    }
    kb_binder_set_claim_informer(f->binder, NULL);
    kb_informer_free(inf);
}

static void count_done(const KbResponse *resp, gpointer data)
{
    (*(guint *)data)++;
}

/* A pod's claim write is the first half of its binding: it waits ahead of the other requests
 * waiting for the client (a PodGroup's status here), as the binding does, not behind them. */
static void test_dra_claims_urgent(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "PATCH", CLAIMS "*", 200,
                           "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"7\"}}");
    kb_test_server_respond(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/*", 201, "{}");
    kb_test_server_respond(f->srv, "PATCH", "/apis/scheduling.volcano.sh/*", 200, "{}");
    const char *claims[] = {"c0", NULL};
    dra_pod(f, "p0", claims);
    kb_client_set_max_in_flight(f->client, 1);
    guint others = 0;
    for (guint i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("g%u", i);
        KbRequest req = {.method = "PATCH",
                         .type = &kb_type_pod_groups_volcano,
                         .namespace_ = NS,
                         .name = name,
                         .subresource = "status",
                         .body_text = "{\"status\":{}}",
                         .content_type = "application/merge-patch+json"};
        kb_client_call_async(f->client, &req, count_done, &others);
    }
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    while (others < 2)
        g_main_context_iteration(NULL, TRUE);
    g_autofree char *seen = requests_seen(f);
    g_assert_cmpstr(seen, ==,
                    "PATCH /apis/scheduling.volcano.sh/v1beta1/namespaces/" NS
                    "/podgroups/g0/status; PATCH c0/status; POST /api/v1/namespaces/" NS
                    "/pods/p0/binding; PATCH /apis/scheduling.volcano.sh/v1beta1/namespaces/" NS
                    "/podgroups/g1/status");
}

/* The second claim's write is refused: the first is undone against the version its write
 * returned, the binding is never sent, the pod and its devices are free again. */
static void test_dra_claim_refused(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "PATCH", CLAIMS "c0/status", 200,
                           "{\"metadata\":{\"name\":\"c0\",\"resourceVersion\":\"7\"}}");
    kb_test_server_push(
            f->srv, "PATCH", CLAIMS "c1/status",
            kb_test_response_new_status(409, "Conflict", "the object has been modified"));
    const char *claims[] = {"c0", "c1", NULL};
    dra_pod(f, "p0", claims);
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_autofree char *seen = requests_seen(f);
    g_assert_cmpstr(seen, ==, "PATCH c0/status; PATCH c1/status; PATCH c0/status");
    json_object *undo = body_of(f, "c0/status", 1);
    g_assert_cmpstr(json_object_to_json_string_ext(undo, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"status\":{\"allocation\":null,\"reservedFor\":null},\"metadata\":{"
                    "\"resourceVersion\":\"7\"}}");
    json_object_put(undo);
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_PENDING);
    g_assert_cmpuint(kb_dra_devices_held(kb_cache_dra(f->cache)), ==, 0);
    g_assert_cmpuint(kb_binder_claim_failures(f->binder), ==, 1);
    g_assert_cmpuint(kb_binder_claims_undone(f->binder), ==, 1);
    g_assert_true(g_ptr_array_find_with_equal_func(f->outcomes, "p0:refused:1", g_str_equal, NULL));
}

/* The binding is refused for certain after the claims were written: both are undone. */
static void test_dra_binding_refused(Fixture *f, gconstpointer data)
{
    kb_test_server_respond(f->srv, "PATCH", CLAIMS "*", 200,
                           "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"9\"}}");
    kb_test_server_push(f->srv, "POST", "/api/v1/namespaces/" NS "/pods/p0/binding",
                        kb_test_response_new_status(403, "Forbidden", "pods/binding forbidden"));
    const char *claims[] = {"c0", "c1", NULL};
    dra_pod(f, "p0", claims);
    kb_binder_submit(f->binder, f->placements);
    drain(f);
    g_autofree char *seen = requests_seen(f);
    g_assert_cmpstr(seen, ==,
                    "PATCH c0/status; PATCH c1/status; POST /api/v1/namespaces/" NS
                    "/pods/p0/binding; PATCH c1/status; PATCH c0/status");
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_PENDING);
    g_assert_cmpuint(kb_dra_devices_held(kb_cache_dra(f->cache)), ==, 0);
    g_assert_cmpuint(kb_binder_claims_undone(f->binder), ==, 2);
}

/* Unknown outcome of the binding: retried without writing the claims again. */
static void test_dra_binding_retried(Fixture *f, gconstpointer data)
{
    const char *path = "/api/v1/namespaces/" NS "/pods/p0/binding";
    kb_test_server_respond(f->srv, "PATCH", CLAIMS "*", 200,
                           "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"9\"}}");
    kb_test_server_push(f->srv, "POST", path,
                        kb_test_response_new_status(503, "ServiceUnavailable", "try later"));
    kb_test_server_respond(f->srv, "POST", path, 201, "{}");
    kb_binder_set_retry(f->binder, 8, 5);
    const char *claims[] = {"c0", NULL};
    dra_pod(f, "p0", claims);
    kb_binder_submit(f->binder, f->placements);
    while (kb_binder_retrying(f->binder) > 0 || kb_binder_in_flight(f->binder) > 0)
        g_main_context_iteration(NULL, TRUE);
    drain(f);
    g_autofree char *seen = requests_seen(f);
    g_assert_cmpstr(seen, ==,
                    "PATCH c0/status; POST /api/v1/namespaces/" NS
                    "/pods/p0/binding; POST /api/v1/namespaces/" NS "/pods/p0/binding");
    g_assert_cmpint(state_of(f, "p0"), ==, KB_TASK_BINDING);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

#define ADD(path, fn, data) g_test_add(path, Fixture, data, fixture_setup, fn, fixture_teardown)
    ADD("/scheduler/binder/success", test_success, NULL);
    ADD("/scheduler/binder/gpu-ids/in-binding-annotations", test_gpu_ids_in_binding, NULL);
    ADD("/scheduler/binder/events/budgets", test_event_budgets, NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(fail_cases); i++) {
        g_autofree char *path = g_strdup_printf("/scheduler/binder/failure/%u-member-keeps-room",
                                                fail_cases[i].status);
        ADD(path, test_certain_failure_keeps_room, &fail_cases[i]);
    }
    ADD("/scheduler/binder/failure/lone-pod-released", test_certain_failure_lone_pod, NULL);
    ADD("/scheduler/binder/failure/unknown-outcome-retried-keeps-room",
        test_unknown_outcome_retried, NULL);
    ADD("/scheduler/binder/failure/409-elsewhere-held-there", test_conflict_elsewhere, NULL);
    ADD("/scheduler/binder/failure/transport-keeps-room", test_transport_error, NULL);
    ADD("/scheduler/binder/window", test_window, NULL);
    ADD("/scheduler/binder/drop-queued", test_drop_queued, NULL);
    ADD("/scheduler/binder/free-in-flight", test_free_in_flight, NULL);
    ADD("/scheduler/binder/evict/accepted-or-gone", test_evict_accepted, NULL);
    ADD("/scheduler/binder/evict/v1beta1-fallback", test_evict_v1beta1_fallback, NULL);
    ADD("/scheduler/binder/evict/refused-keeps-running", test_evict_refused, NULL);
    ADD("/scheduler/binder/evict/disruption-target-first", test_evict_disruption_target, NULL);
    ADD("/scheduler/binder/evict/disruption-target-refused-still-evicts",
        test_evict_disruption_target_refused, NULL);
    ADD("/scheduler/binder/evict/gang-incomplete-condition", test_evict_gang_incomplete, NULL);
    ADD("/scheduler/binder/dra/claims-written-before-binding", test_dra_claims_first, NULL);
    ADD("/scheduler/binder/dra/claim-writes-urgent", test_dra_claims_urgent, NULL);
    ADD("/scheduler/binder/dra/claim-echo-taken-in", test_dra_claim_echo, NULL);
    ADD("/scheduler/binder/dra/claim-refused-undoes-the-others", test_dra_claim_refused, NULL);
    ADD("/scheduler/binder/dra/binding-refused-undoes-claims", test_dra_binding_refused, NULL);
    ADD("/scheduler/binder/dra/binding-retried-claims-once", test_dra_binding_retried, NULL);
#undef ADD
    return g_test_run();
}
