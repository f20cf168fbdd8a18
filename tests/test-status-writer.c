/* Tests of scheduler/status-writer.c against a scripted HTTP server: held writes; the native
 * PodGroup's condition. */
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-objects.h"
#include "scheduler/cycle.h"
#include "scheduler/queue-tree.h"
#include "scheduler/status-writer.h"
#include "tests/lib/kb-test-server.h"

/* Queue qa, the queue of queue_result(), as its status and object are patched. */
#define QA_STATUS_PATH "/apis/scheduling.volcano.sh/v1beta1/queues/qa/status"
#define QA_OBJECT_PATH "/apis/scheduling.volcano.sh/v1beta1/queues/qa"

#define PATH_PREFIX "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups/"

static KbPodGroup *group_new(const char *name)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\",\"uid\":\"g-%s\"},"
            "\"spec\":{\"minMember\":2}}",
            name, name);
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    g_autoptr(GError) error = NULL;
    KbPodGroup *pg = kb_pod_group_decode(o, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(o);
    return pg;
}

static void status_clear(gpointer p)
{
    KbJobStatus *st = p;
    g_clear_pointer(&st->group, kb_object_unref);
    g_clear_pointer(&st->children, g_array_unref);
    g_free(st->job);
    g_free(st->message);
}

/* A cycle result whose jobs @names changed to phase @phase (running counts @running). */
static KbCycleResult *result_new(const char *const *names, KbJobPhase phase, guint running)
{
    KbCycleResult *r = g_new0(KbCycleResult, 1);
    r->placements = g_array_new(FALSE, TRUE, sizeof(KbPlacement));
    r->job_statuses = g_array_new(FALSE, TRUE, sizeof(KbJobStatus));
    g_array_set_clear_func(r->job_statuses, status_clear);
    r->queue_statuses = g_array_new(FALSE, TRUE, sizeof(KbQueueStatus));
    r->events = g_array_new(FALSE, TRUE, sizeof(KbSchedEvent));
    r->evictions = g_array_new(FALSE, TRUE, sizeof(KbEviction));
    r->now = 1700000000;
    for (guint i = 0; names[i] != NULL; i++) {
        KbJobStatus st = {.group = group_new(names[i]),
                          .job = g_strdup_printf("team-a/%s", names[i]),
                          .phase = phase,
                          .message = g_strdup("m"),
                          .changed = TRUE,
                          .min_member = 2,
                          .n_running = running};
        g_array_append_val(r->job_statuses, st);
    }
    return r;
}

static guint patches(KbTestServer *srv)
{
    guint n = 0;
    for (guint i = 0; i < kb_test_server_request_count(srv); i++) {
        const KbTestRequest *req = kb_test_server_request(srv, i);
        n += strcmp(req->method, "PATCH") == 0;
    }
    return n;
}

/* Run the main loop until @n PATCHes came (at most 20 s). */
static void wait_patches(KbTestServer *srv, guint n)
{
    gint64 until = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (patches(srv) < n && g_get_monotonic_time() < until)
        g_main_context_iteration(NULL, FALSE), g_usleep(1000);
    g_assert_cmpuint(patches(srv), >=, n);
}

/* Wait for @n PATCHes on @srv, then for @w to hold nothing more (their answers handled). */
static void wait_written(KbTestServer *srv, KbStatusWriter *w, guint n)
{
    wait_patches(srv, n);
    while (kb_status_writer_pending(w) > 0)
        g_main_context_iteration(NULL, TRUE);
}

/* Let the main loop run for @ms. */
static void settle(guint ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    while (g_get_monotonic_time() < until)
        g_main_context_iteration(NULL, FALSE), g_usleep(1000);
}

/* A status writer whose client talks to @srv; with @queues, every queue is Volcano's. */
typedef struct {
    KbClient *client;
    KbStatusWriter *w;
} Writer;

static const KbResourceType *volcano_queue(const char *name, gpointer data);

static Writer writer_on(KbTestServer *srv, gboolean queues)
{
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    g_autoptr(GError) error = NULL;
    Writer wr = {.client = kb_client_new(config, &error)};
    g_assert_no_error(error);
    wr.w = kb_status_writer_new(wr.client, NULL);
    if (queues)
        kb_status_writer_set_queue_type_func(wr.w, volcano_queue, NULL);
    return wr;
}

/* The client drops what is in flight when freed (kb-client.h): free the writer first. */
static void writer_done(Writer *wr)
{
    kb_status_writer_free(wr->w);
    kb_client_free(wr->client);
}

/* While held, nothing is written; a newer status of the same group replaces the held one;
 * releasing writes each group once, with its latest status; writes after that flow at once. */
static void test_held_writes_wait(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", PATH_PREFIX "a/status", 200, "{}");
    kb_test_server_respond(srv, "PATCH", PATH_PREFIX "b/status", 200, "{}");
    kb_test_server_respond(srv, "PATCH", PATH_PREFIX "c/status", 200, "{}");
    Writer wr = writer_on(srv, FALSE);
    KbStatusWriter *w = wr.w;

    kb_status_writer_set_held(w, TRUE);
    const char *ab[] = {"a", "b", NULL};
    g_autoptr(KbCycleResult) r1 = result_new(ab, KB_JOB_INQUEUE, 0);
    kb_status_writer_apply(w, r1);
    g_autoptr(KbCycleResult) r2 = result_new(ab, KB_JOB_RUNNING, 2);
    kb_status_writer_apply(w, r2);
    settle(200);
    g_assert_cmpuint(patches(srv), ==, 0);
    g_assert_cmpuint(kb_status_writer_pending(w), ==, 2);

    kb_status_writer_set_held(w, FALSE);
    wait_written(srv, w, 2);
    g_assert_cmpuint(patches(srv), ==, 2);
    g_assert_cmpuint(kb_status_writer_count(w, KB_STATUS_WRITTEN), ==, 2);
    for (guint i = 0; i < 2; i++) {
        const KbTestRequest *req = kb_test_server_request(srv, i);
        if (strstr(req->body, "\"running\":2") == NULL || strstr(req->body, "Running") == NULL)
            g_error("held write %u is not the latest status: %s", i, req->body);
    }

    const char *c[] = {"c", NULL};
    g_autoptr(KbCycleResult) r3 = result_new(c, KB_JOB_RUNNING, 2);
    kb_status_writer_apply(w, r3);
    wait_patches(srv, 3);
    /* The client drops what is in flight when freed (kb-client.h): let the answer arrive. */
    while (kb_status_writer_pending(w) > 0)
        g_main_context_iteration(NULL, TRUE);
    g_assert_cmpuint(kb_status_writer_count(w, KB_STATUS_WRITTEN), ==, 3);
    writer_done(&wr);
}

/* ---- Queue status: decayed usage ------------------------------------------------------------ */

static const KbResourceType *volcano_queue(const char *name, gpointer data)
{
    return &kb_type_queues_volcano;
}

static void queue_status_clear(gpointer p)
{
    KbQueueStatus *qs = p;
    g_clear_pointer(&qs->queue, kb_object_unref);
    g_free(qs->fault_message);
    g_free(qs->history);
}

/* A cycle result with queue qa only: @running jobs, @gpu_seconds of decayed usage at @now. */
static KbCycleResult *queue_result(gint64 now, guint running, double gpu_seconds)
{
    const char *none[] = {NULL};
    KbCycleResult *r = result_new(none, KB_JOB_RUNNING, 0);
    g_array_set_clear_func(r->queue_statuses, queue_status_clear);
    r->now = now;
    json_object *o = json_tokener_parse("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\","
                                        "\"kind\":\"Queue\",\"metadata\":{\"name\":\"qa\"}}");
    g_autoptr(GError) error = NULL;
    KbQueueStatus qs = {.name = g_intern_string("qa"),
                        .queue = kb_queue_decode(o, FALSE, &error),
                        .weight = 1,
                        .n_running = running,
                        .usage_time = now};
    json_object_put(o);
    g_assert_no_error(error);
    qs.usage[KB_RES_GPU] = gpu_seconds * KB_GPU_MILLI;
    qs.usage[KB_RES_CPU] = 1500; /* milli-core-seconds: 1.5 core-seconds */
    g_array_append_val(r->queue_statuses, qs);
    return r;
}

static const char *last_patch(KbTestServer *srv)
{
    for (guint i = kb_test_server_request_count(srv); i-- > 0;) {
        const KbTestRequest *req = kb_test_server_request(srv, i);
        if (strcmp(req->method, "PATCH") == 0)
            return req->body;
    }
    return NULL;
}

/*
 * status.usage is written with the queue's figures and its time; a change within
 * KB_STATUS_USAGE_INTERVAL waits (the rest of the status does not); after it, the change is
 * written; unchanged figures are not written again.
 */
static void test_queue_usage(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", QA_STATUS_PATH, 200, "{}");
    Writer wr = writer_on(srv, TRUE);
    KbStatusWriter *w = wr.w;
    gint64 t0 = 1795762800; /* 2026-11-27T07:00:00Z */
    static const struct {
        gint64 dt;
        guint running;
        double gpu_seconds;
        const char *usage; /* in the patch; "" no patch; NULL a patch without usage */
    } steps[] = {
            /* GPU-seconds in milli-GPU precision, as parts of GPUs count */
            {0, 1, 3600.25,
             "\"usage\":{\"time\":\"2026-11-27T07:00:00Z\",\"resourceSeconds\":"
             "{\"nvidia.com/gpu\":3600.25,\"cpu\":1.5,\"memory\":0.0}}"},
            {2, 1, 3700, ""},   /* usage changed, too soon */
            {3, 2, 3800, NULL}, /* the status changed: written without usage */
            {KB_STATUS_USAGE_INTERVAL, 2, 3900.0002, "\"time\":\"2026-11-27T07:00:05Z\""},
            {KB_STATUS_USAGE_INTERVAL * 3, 2, 3900, ""}, /* unchanged */
    };
    guint n = 0;
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autoptr(KbCycleResult) r =
                queue_result(t0 + steps[i].dt, steps[i].running, steps[i].gpu_seconds);
        kb_status_writer_apply(w, r);
        if (steps[i].usage != NULL && steps[i].usage[0] == '\0') {
            settle(100);
            g_assert_cmpuint(patches(srv), ==, n);
            continue;
        }
        wait_written(srv, w, ++n);
        const char *body = last_patch(srv);
        if (steps[i].usage == NULL ? strstr(body, "usage") != NULL
                                   : strstr(body, steps[i].usage) == NULL)
            g_error("step %u: %s", i, body);
    }
    g_assert_cmpuint(patches(srv), ==, 3);
    writer_done(&wr);
}

/*
 * status.runtimeHistory is written with the samples the cycle reported (only when they changed)
 * and their time; newer samples within KB_STATUS_USAGE_INTERVAL wait: a cycle after it writes
 * them, and so does a timer when no cycle comes (none runs while nothing waits).
 */
static void test_queue_history(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", QA_STATUS_PATH, 200, "{}");
    Writer wr = writer_on(srv, TRUE);
    KbStatusWriter *w = wr.w;
    gint64 t0 = 1795762800; /* 2026-11-27T07:00:00Z */
    static const struct {
        gint64 dt;
        guint running;
        guint samples;       /* 1-GPU runtimes reported (60, 120, ...); 0: none reported */
        const char *history; /* in the patch; "" no patch; NULL a patch without it */
    } steps[] = {
            {0, 1, 2,
             "\"runtimeHistory\":{\"time\":\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"1\":["
             "60,120]}}"},
            {2, 1, 3, ""},   /* new samples, too soon */
            {3, 2, 0, NULL}, /* the status changed: written without them */
            {KB_STATUS_USAGE_INTERVAL, 2, 0, "\"1\":[60,120,180]"}, /* then written */
            {KB_STATUS_USAGE_INTERVAL + 2, 2, 4, ""},               /* too soon again */
    };
    guint n = 0;
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autoptr(KbCycleResult) r = queue_result(t0 + steps[i].dt, steps[i].running, 3600);
        KbQueueStatus *qs = &g_array_index(r->queue_statuses, KbQueueStatus, 0);
        if (steps[i].samples > 0) {
            qs->history = g_new0(KbQueueHistory, 1);
            qs->history->time = t0 + steps[i].dt;
            qs->history->n[1] = (guint8)steps[i].samples;
            for (guint k = 0; k < steps[i].samples; k++)
                qs->history->runtime[1][k] = 60 * (k + 1);
        }
        kb_status_writer_apply(w, r);
        if (steps[i].history != NULL && steps[i].history[0] == '\0') {
            settle(100);
            g_assert_cmpuint(patches(srv), ==, n);
            continue;
        }
        wait_written(srv, w, ++n);
        const char *body = last_patch(srv);
        if (steps[i].history == NULL ? strstr(body, "runtimeHistory") != NULL
                                     : strstr(body, steps[i].history) == NULL)
            g_error("step %u: %s", i, body);
    }
    /* No cycle comes: the timer writes the last samples once the interval has passed. */
    wait_written(srv, w, ++n);
    const char *body = last_patch(srv);
    if (strstr(body, "\"1\":[60,120,180,240]") == NULL || strstr(body, "usage") != NULL)
        g_error("timer: %s", body);
    /* Nothing new: nothing written. */
    g_autoptr(KbCycleResult) r = queue_result(t0 + 30, 2, 3600);
    kb_status_writer_apply(w, r);
    settle(100);
    g_assert_cmpuint(patches(srv), ==, 4);
    writer_done(&wr);
}

/* The PATCHes sent to @path, in order (borrowed bodies). */
static GPtrArray *patch_bodies(KbTestServer *srv, const char *path)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < kb_test_server_request_count(srv); i++) {
        const KbTestRequest *req = kb_test_server_request(srv, i);
        if (strcmp(req->method, "PATCH") == 0 && strcmp(req->path, path) == 0)
            g_ptr_array_add(out, req->body);
    }
    return out;
}

/* A server that answers queue qa's status patches with @stored (the object as its CRD keeps it)
 * and its annotations patches with a Queue. */
static KbTestServer *pruning_server(const char *stored)
{
    KbTestServer *srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", QA_STATUS_PATH, 200, stored);
    kb_test_server_respond(srv, "PATCH", QA_OBJECT_PATH, 200, "{\"kind\":\"Queue\"}");
    return srv;
}

/* The annotations of qa's first object patch, as patched (*@patch, to put). */
static json_object *first_annotations(KbTestServer *srv, json_object **patch)
{
    g_autoptr(GPtrArray) ob = patch_bodies(srv, QA_OBJECT_PATH);
    g_assert_cmpuint(ob->len, ==, 1);
    *patch = json_tokener_parse(g_ptr_array_index(ob, 0));
    return json_object_object_get(json_object_object_get(*patch, "metadata"), "annotations");
}

/* The text of the annotation @key of @ann parsed (new), NULL when absent. */
static json_object *annotation_json(json_object *ann, const char *key)
{
    const char *text = json_object_get_string(json_object_object_get(ann, key));
    return text != NULL ? json_tokener_parse(text) : NULL;
}

/* A second cycle's result for qa (running 2, usage 7200 GPU-seconds, KB_STATUS_USAGE_INTERVAL
 * after @t0) applied: its status and annotations patch bodies, each the second of its kind. */
static void second_write(KbTestServer *srv, KbStatusWriter *w, gint64 t0, char **status,
                         char **annotations)
{
    g_autoptr(KbCycleResult) r2 = queue_result(t0 + KB_STATUS_USAGE_INTERVAL, 2, 7200);
    kb_status_writer_apply(w, r2);
    wait_written(srv, w, 4);
    g_autoptr(GPtrArray) st2 = patch_bodies(srv, QA_STATUS_PATH);
    g_autoptr(GPtrArray) ob2 = patch_bodies(srv, QA_OBJECT_PATH);
    g_assert_cmpuint(st2->len, ==, 2);
    g_assert_cmpuint(ob2->len, ==, 2);
    *status = g_strdup(g_ptr_array_index(st2, 1));
    *annotations = g_strdup(g_ptr_array_index(ob2, 1));
}

/*
 * A server whose Queue CRD prunes status.usage and status.runtimeHistory (Volcano's own CRD
 * declares neither) answers the status patch without them: the writer writes them into the
 * queue's annotations instead, as JSON text, and from then on sends them there only; a server
 * that keeps them (or answers without the object) gets them in the status alone.
 */
static void test_queue_usage_pruned(void)
{
    g_autoptr(KbTestServer) srv =
            pruning_server("{\"kind\":\"Queue\",\"status\":{\"state\":\"Open\",\"running\":1}}");
    Writer wr = writer_on(srv, TRUE);
    KbStatusWriter *w = wr.w;
    gint64 t0 = 1795762800;
    g_autoptr(KbCycleResult) r1 = queue_result(t0, 1, 3600);
    KbQueueStatus *qs = &g_array_index(r1->queue_statuses, KbQueueStatus, 0);
    qs->history = g_new0(KbQueueHistory, 1);
    qs->history->time = t0;
    qs->history->n[1] = 1;
    qs->history->runtime[1][0] = 60;
    kb_status_writer_apply(w, r1);
    /* The status patch, then the annotations patch with what it lost. */
    wait_written(srv, w, 2);
    g_autoptr(GPtrArray) st = patch_bodies(srv, QA_STATUS_PATH);
    g_assert_cmpuint(st->len, ==, 1);
    json_object *patch = NULL;
    json_object *ann = first_annotations(srv, &patch);
    const char *usage =
            json_object_get_string(json_object_object_get(ann, KB_QUEUE_USAGE_ANNOTATION));
    const char *history =
            json_object_get_string(json_object_object_get(ann, KB_QUEUE_HISTORY_ANNOTATION));
    if (usage == NULL || strstr(usage, "\"nvidia.com/gpu\":3600.0") == NULL || history == NULL ||
        strstr(history, "\"runtimeSeconds\":{\"1\":[60]}") == NULL ||
        json_object_object_get(patch, "status") != NULL)
        g_error("annotations patch: %s", json_object_to_json_string(patch));
    json_object_put(patch);

    /* Next usage change: annotations only; the status (running changed) without usage. */
    g_autofree char *status2 = NULL, *ann2 = NULL;
    second_write(srv, w, t0, &status2, &ann2);
    if (strstr(status2, "usage") != NULL || strstr(status2, "\"running\":2") == NULL)
        g_error("status after pruning: %s", status2);
    if (strstr(ann2, "7200") == NULL || strstr(ann2, "runtime-history") != NULL)
        g_error("annotations after pruning: %s", ann2);
    writer_done(&wr);

    /* A server that keeps them: status only. */
    g_autoptr(KbTestServer) keep = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(keep, "PATCH", QA_STATUS_PATH, 200,
                           "{\"status\":{\"usage\":{},\"runtimeHistory\":{},"
                           "\"resources\":{}}}");
    wr = writer_on(keep, TRUE);
    w = wr.w;
    g_autoptr(KbCycleResult) r3 = queue_result(t0, 1, 3600);
    kb_status_writer_apply(w, r3);
    wait_written(keep, w, 1);
    settle(100);
    g_assert_cmpuint(patches(keep), ==, 1);
    writer_done(&wr);
}

/*
 * Each kept member is judged on its own: a server whose CRD declares status.usage but not
 * status.resources nor status.conditions (a fault's Valid condition) keeps usage in the status and
 * gets the other two in the annotations KB_QUEUE_RESOURCES_ANNOTATION and
 * KB_QUEUE_CONDITIONS_ANNOTATION; once the fault is gone its annotation is removed (null).
 */
static void test_queue_resources_conditions_pruned(void)
{
    g_autoptr(KbTestServer) srv =
            pruning_server("{\"kind\":\"Queue\",\"status\":{\"state\":\"Open\",\"usage\":{}}}");
    Writer wr = writer_on(srv, TRUE);
    KbStatusWriter *w = wr.w;
    gint64 t0 = 1795762800;
    g_autoptr(KbCycleResult) r1 = queue_result(t0, 1, 3600);
    KbQueueStatus *qs = &g_array_index(r1->queue_statuses, KbQueueStatus, 0);
    qs->deserved.v[KB_RES_GPU] = 4 * KB_GPU_MILLI;
    qs->fault_reason = kb_qtree_fault_reason(KB_QTREE_FAULT_PARENT_NOT_FOUND);
    qs->fault_message = g_strdup("parent queue \"nosuch\" of queue \"qa\" does not exist");
    qs->fault_since = t0;
    kb_status_writer_apply(w, r1);
    wait_written(srv, w, 2);
    json_object *patch = NULL;
    json_object *ann = first_annotations(srv, &patch);
    json_object *res = annotation_json(ann, KB_QUEUE_RESOURCES_ANNOTATION);
    json_object *conds = annotation_json(ann, KB_QUEUE_CONDITIONS_ANNOTATION);
    json_object *gpu = json_object_object_get(res, "nvidia.com/gpu");
    json_object *valid = json_object_array_get_idx(conds, 0);
    if (g_strcmp0(json_object_get_string(json_object_object_get(gpu, "deserved")), "4") != 0 ||
        g_strcmp0(json_object_get_string(json_object_object_get(valid, "type")), "Valid") != 0 ||
        g_strcmp0(json_object_get_string(json_object_object_get(valid, "status")), "False") != 0 ||
        json_object_object_get(ann, KB_QUEUE_USAGE_ANNOTATION) != NULL)
        g_error("annotations patch: %s", json_object_to_json_string(patch));
    json_object_put(res);
    json_object_put(conds);
    json_object_put(patch);

    /* The fault is gone: the status (usage kept there) without resources or conditions; the
     * annotations with the new figures and the conditions' annotation removed. */
    g_autofree char *status2 = NULL, *ann2 = NULL;
    second_write(srv, w, t0, &status2, &ann2);
    if (strstr(status2, "\"usage\"") == NULL || strstr(status2, "resources") != NULL ||
        strstr(status2, "conditions") != NULL)
        g_error("status after pruning: %s", status2);
    if (strstr(ann2, "\"" KB_QUEUE_CONDITIONS_ANNOTATION "\":null") == NULL ||
        strstr(ann2, KB_QUEUE_RESOURCES_ANNOTATION) == NULL ||
        strstr(ann2, KB_QUEUE_USAGE_ANNOTATION) != NULL)
        g_error("annotations after pruning: %s", ann2);
    writer_done(&wr);
}

/* A queue status held (bindings on the wire) and replaced by a newer one keeps what only the older
 * said: the runtime history written once goes out with the newer status. */
static void test_held_merge_keeps_history(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", QA_STATUS_PATH, 200, "{}");
    Writer wr = writer_on(srv, TRUE);
    KbStatusWriter *w = wr.w;
    gint64 t0 = 1795762800;
    kb_status_writer_set_held(w, TRUE);
    g_autoptr(KbCycleResult) r1 = queue_result(t0, 1, 3600);
    KbQueueStatus *qs = &g_array_index(r1->queue_statuses, KbQueueStatus, 0);
    qs->history = g_new0(KbQueueHistory, 1);
    qs->history->time = t0;
    qs->history->n[1] = 1;
    qs->history->runtime[1][0] = 60;
    kb_status_writer_apply(w, r1);
    g_autoptr(KbCycleResult) r2 = queue_result(t0 + 1, 2, 3600);
    kb_status_writer_apply(w, r2);
    settle(100);
    g_assert_cmpuint(patches(srv), ==, 0);
    kb_status_writer_set_held(w, FALSE);
    wait_written(srv, w, 1);
    const char *body = last_patch(srv);
    if (strstr(body, "\"runtimeSeconds\":{\"1\":[60]}") == NULL ||
        strstr(body, "\"running\":2") == NULL)
        g_error("held: %s", body);
    g_assert_cmpuint(patches(srv), ==, 1);
    writer_done(&wr);
}

/* ---- scheduling.k8s.io/v1beta1: PodGroupInitiallyScheduled --------------------------------- */

static KbPodGroup *native_new(const char *condition)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
            "\"name\":\"g\",\"namespace\":\"team-a\",\"generation\":2},\"spec\":{"
            "\"schedulingPolicy\":{\"gang\":{\"minCount\":4}}},\"status\":{\"conditions\":[%s]}}",
            condition);
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    g_autoptr(GError) error = NULL;
    KbPodGroup *pg = kb_pod_group_decode(o, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(o);
    return pg;
}

static const char *cond_field(json_object *body, const char *field)
{
    json_object *conds =
            json_object_object_get(json_object_object_get(body, "status"), "conditions");
    g_assert_cmpuint(json_object_array_length(conds), ==, 1);
    return json_object_get_string(
            json_object_object_get(json_object_array_get_idx(conds, 0), field));
}

static void test_native_condition(void)
{
    static const char *const unsched =
            "{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"False\",\"reason\":"
            "\"Unschedulable\",\"message\":\"3/4 short\",\"lastTransitionTime\":"
            "\"2026-08-20T10:00:05Z\"}";
    static const char *const done =
            "{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\",\"reason\":"
            "\"Scheduled\",\"message\":\"4/4 pods bound\",\"lastTransitionTime\":"
            "\"2026-08-20T10:01:00Z\"}";
    KbJobStatus st = {0};
    st.min_member = 4;
    st.condition_type = "Unschedulable";
    st.message = g_strdup("3/4 pods placeable: 1 more needs 1 nvidia.com/gpu");

    /* no condition yet: False/Unschedulable with the shortfall */
    st.group = native_new("");
    json_object *b = kb_status_native_group_body(&st, 1787220000);
    g_assert_nonnull(b);
    g_assert_cmpstr(cond_field(b, "type"), ==, "PodGroupInitiallyScheduled");
    g_assert_cmpstr(cond_field(b, "status"), ==, "False");
    g_assert_cmpstr(cond_field(b, "reason"), ==, "Unschedulable");
    g_assert_cmpstr(cond_field(b, "message"), ==, st.message);
    g_assert_cmpstr(cond_field(b, "observedGeneration"), ==, "2");
    json_object_put(b);
    kb_object_unref(st.group);

    /* still False with a new message: the transition time stays */
    st.group = native_new(unsched);
    b = kb_status_native_group_body(&st, 1787220000);
    g_assert_cmpstr(cond_field(b, "lastTransitionTime"), ==, "2026-08-20T10:00:05Z");
    json_object_put(b);
    /* the same message again: nothing to write */
    g_free(st.message);
    st.message = g_strdup("3/4 short");
    g_assert_null(kb_status_native_group_body(&st, 1787220000));

    /* minCount pods bound: True, a new transition time */
    st.initially_scheduled = TRUE;
    st.n_bound = 4;
    st.condition_type = "Scheduled";
    b = kb_status_native_group_body(&st, 1787220000);
    g_assert_cmpstr(cond_field(b, "status"), ==, "True");
    g_assert_cmpstr(cond_field(b, "message"), ==, "4/4 pods bound");
    g_assert_cmpstr(cond_field(b, "lastTransitionTime"), !=, "2026-08-20T10:00:05Z");
    json_object_put(b);
    kb_object_unref(st.group);

    /* True is never reverted, whatever the cycle says later */
    st.group = native_new(done);
    st.initially_scheduled = FALSE;
    st.n_bound = 1;
    st.condition_type = "Unschedulable";
    g_assert_null(kb_status_native_group_body(&st, 1787220000));
    kb_object_unref(st.group);

    /* nothing to say (pending, no reason yet): nothing written */
    st.group = native_new("");
    st.condition_type = NULL;
    g_assert_null(kb_status_native_group_body(&st, 1787220000));
    kb_object_unref(st.group);
    g_free(st.message);
}

/* The condition of @type in @body's patch, NULL when none. */
static json_object *cond_of(json_object *body, const char *type)
{
    json_object *conds =
            json_object_object_get(json_object_object_get(body, "status"), "conditions");
    for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(json_object_get_string(json_object_object_get(c, "type")), type) == 0)
            return c;
    }
    return NULL;
}

/* A native PodGroup whose bound gang lost a member gets GangIncomplete as metav1.Condition has
 * it (True with the stale pass's reason, observedGeneration, a transition time kept while the
 * status stays), False with MembersHealthy once whole again, and nothing when never short. */
static void test_native_gang_incomplete(void)
{
    static const char *const done =
            "{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\",\"reason\":"
            "\"Scheduled\",\"message\":\"4/4 pods bound\",\"lastTransitionTime\":"
            "\"2026-08-20T10:01:00Z\"}";
    static const char *const lost =
            "{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\",\"reason\":"
            "\"Scheduled\",\"message\":\"4/4 pods bound\",\"lastTransitionTime\":"
            "\"2026-08-20T10:01:00Z\"},{\"type\":\"GangIncomplete\",\"status\":\"True\","
            "\"reason\":\"MemberLost\",\"message\":\"3/4 members healthy: pod team-a/w-3\","
            "\"lastTransitionTime\":\"2026-08-20T11:00:00Z\",\"observedGeneration\":2}";
    static const char *const healthy =
            "{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\",\"reason\":"
            "\"Scheduled\",\"message\":\"4/4 pods bound\",\"lastTransitionTime\":"
            "\"2026-08-20T10:01:00Z\"},{\"type\":\"GangIncomplete\",\"status\":\"False\","
            "\"reason\":\"MembersHealthy\","
            "\"message\":\"no member lost\",\"lastTransitionTime\":\"2026-08-20T12:00:00Z\"}";
    KbJobStatus st = {0};
    st.min_member = 4;
    st.n_bound = 3;
    st.initially_scheduled = TRUE;
    st.condition_type = KB_GANG_INCOMPLETE;
    st.condition_status = "True";
    st.reason = "MemberLost";
    st.message = g_strdup("3/4 members healthy: pod team-a/w-3");

    /* short: GangIncomplete True, MemberLost, the message; the initial condition is True */
    st.group = native_new(done);
    json_object *b = kb_status_native_group_body(&st, 1787220000);
    g_assert_nonnull(b);
    g_assert_cmpstr(cond_field(b, "type"), ==, KB_GANG_INCOMPLETE);
    g_assert_cmpstr(cond_field(b, "status"), ==, "True");
    g_assert_cmpstr(cond_field(b, "reason"), ==, "MemberLost");
    g_assert_cmpstr(cond_field(b, "message"), ==, st.message);
    g_assert_cmpstr(cond_field(b, "observedGeneration"), ==, "2");
    json_object_put(b);
    kb_object_unref(st.group);

    /* a group without the initial condition yet: both in one patch */
    st.group = native_new("");
    b = kb_status_native_group_body(&st, 1787220000);
    g_assert_nonnull(cond_of(b, KB_GANG_INCOMPLETE));
    json_object *init = cond_of(b, "PodGroupInitiallyScheduled");
    g_assert_nonnull(init);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(init, "status")), ==, "True");
    json_object_put(b);
    kb_object_unref(st.group);

    /* said already: nothing; evicted after the grace: the reason changes, the time stays */
    st.group = native_new(lost);
    g_assert_null(kb_status_native_group_body(&st, 1787220000));
    st.reason = "GangEvicted";
    g_free(st.message);
    st.message = g_strdup("3/4 members healthy: pod team-a/w-3; evicting the rest");
    b = kb_status_native_group_body(&st, 1787220000);
    g_assert_cmpstr(cond_field(b, "reason"), ==, "GangEvicted");
    g_assert_cmpstr(cond_field(b, "lastTransitionTime"), ==, "2026-08-20T11:00:00Z");
    json_object_put(b);

    /* whole again: False, MembersHealthy, a new transition time */
    st.condition_type = "Scheduled";
    st.reason = "Scheduled";
    st.n_bound = 4;
    b = kb_status_native_group_body(&st, 1787220000);
    g_assert_cmpstr(cond_field(b, "type"), ==, KB_GANG_INCOMPLETE);
    g_assert_cmpstr(cond_field(b, "status"), ==, "False");
    g_assert_cmpstr(cond_field(b, "reason"), ==, "MembersHealthy");
    g_assert_cmpstr(cond_field(b, "lastTransitionTime"), !=, "2026-08-20T11:00:00Z");
    json_object_put(b);
    kb_object_unref(st.group);

    /* False already, or never short: nothing to write */
    st.group = native_new(healthy);
    g_assert_null(kb_status_native_group_body(&st, 1787220000));
    kb_object_unref(st.group);
    st.group = native_new(done);
    g_assert_null(kb_status_native_group_body(&st, 1787220000));
    kb_object_unref(st.group);
    g_free(st.message);
}

/* A native PodGroup's condition is a strategic merge patch (conditions merge on type, as the
 * built-in type declares): a merge patch would replace the list and drop the DisruptionTarget
 * condition set when the group's pods are evicted. */
static void test_native_write_is_strategic(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH",
                           "/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/podgroups/g/status",
                           200, "{}");
    Writer wr = writer_on(srv, FALSE);
    KbStatusWriter *w = wr.w;
    const char *none[] = {NULL};
    g_autoptr(KbCycleResult) r = result_new(none, KB_JOB_PENDING, 0);
    KbJobStatus st = {.group = native_new(""),
                      .job = g_strdup("team-a/g"),
                      .phase = KB_JOB_PENDING,
                      .condition_type = "Unschedulable",
                      .condition_status = "True",
                      .message = g_strdup("3/4 short"),
                      .changed = TRUE,
                      .min_member = 4};
    g_array_append_val(r->job_statuses, st);
    kb_status_writer_apply(w, r);
    wait_written(srv, w, 1);
    const KbTestRequest *req = kb_test_server_request(srv, 0);
    g_assert_cmpstr(kb_test_request_header(req, "Content-Type"), ==,
                    "application/strategic-merge-patch+json");
    g_assert_nonnull(strstr(req->body, "PodGroupInitiallyScheduled"));
    writer_done(&wr);
}

static KbPodGroup *decode_text(KbPodGroup *(*decode)(json_object *, gboolean, GError **),
                               const char *text)
{
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    g_autoptr(GError) error = NULL;
    KbPodGroup *pg = decode(o, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(o);
    return pg;
}

static KbPodGroup *composite_new(const char *conditions)
{
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"train\",\"namespace\":\"team-a\",\"generation\":1},"
            "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":3}}},"
            "\"status\":{\"conditions\":[%s]}}",
            conditions);
    return decode_text(kb_composite_pod_group_decode, text);
}

static KbChildStatus child_new(int i, guint n_bound)
{
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"train-g%d\",\"namespace\":\"team-a\"},\"spec\":{"
            "\"parentCompositePodGroupName\":\"train\",\"schedulingPolicy\":{\"gang\":{"
            "\"minCount\":2}}}}",
            i);
    KbChildStatus cs = {decode_text(kb_pod_group_decode_v1alpha3, text), 2, n_bound, n_bound >= 2};
    return cs;
}

static void child_clear(gpointer p)
{
    g_clear_pointer(&((KbChildStatus *)p)->group, kb_object_unref);
}

/* The writes of @w since request @from: "path message" lines, in order. */
static char *writes_since(KbStatusWriter *w, KbTestServer *srv, guint from)
{
    while (kb_status_writer_pending(w) > 0)
        g_main_context_iteration(NULL, TRUE);
    GString *out = g_string_new(NULL);
    for (guint i = from; i < kb_test_server_request_count(srv); i++) {
        const KbTestRequest *req = kb_test_server_request(srv, i);
        json_object *b = json_tokener_parse(req->body);
        g_string_append_printf(out, "%s %s %s: %s\n", req->path, cond_field(b, "type"),
                               cond_field(b, "status"), cond_field(b, "message"));
        json_object_put(b);
    }
    return g_string_free(out, FALSE);
}

/* A composite's own condition (CompositePodGroupInitiallyScheduled, at compositepodgroups/status)
 * and its children's (PodGroupInitiallyScheduled at the version they were read at): False with
 * the shortfall, then True for the composite and the children that started, False for the one it
 * started without; a child's unchanged condition is not written again. */
static void test_composite_status(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", "/apis/scheduling.k8s.io/v1alpha3/*", 200, "{}");
    Writer wr = writer_on(srv, FALSE);
    KbStatusWriter *w = wr.w;
    const char *none[] = {NULL};
    g_autoptr(KbCycleResult) r = result_new(none, KB_JOB_PENDING, 0);
    KbJobStatus st = {.group = composite_new(""),
                      .job = g_strdup("team-a/train"),
                      .phase = KB_JOB_PENDING,
                      .condition_type = "Unschedulable",
                      .condition_status = "True",
                      .message = g_strdup("CompositePodGroup \"train\": 2/3 child PodGroups "
                                          "placeable whole (short: train-g2, train-g3; ...)"),
                      .changed = TRUE,
                      .min_member = 1};
    st.children = g_array_new(FALSE, TRUE, sizeof(KbChildStatus));
    g_array_set_clear_func(st.children, child_clear);
    for (int i = 0; i < 4; i++) {
        KbChildStatus cs = child_new(i, 0);
        g_array_append_val(st.children, cs);
    }
    g_array_append_val(r->job_statuses, st);
    kb_status_writer_apply(w, r);
    g_autofree char *first = writes_since(w, srv, 0);
    g_test_message("%s", first);
    static const char a3[] = "/apis/scheduling.k8s.io/v1alpha3/namespaces/team-a/";
    g_autofree char *want_c = g_strdup_printf(
            "%scompositepodgroups/train/status CompositePodGroupInitiallyScheduled False: "
            "CompositePodGroup \"train\": 2/3",
            a3);
    g_assert_nonnull(strstr(first, want_c));
    for (int i = 0; i < 4; i++) {
        g_autofree char *want =
                g_strdup_printf("%spodgroups/train-g%d/status PodGroupInitiallyScheduled False: "
                                "CompositePodGroup \"train\": 2/3",
                                a3, i);
        g_assert_nonnull(strstr(first, want));
    }
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 5);

    /* the next cycle says the same: nothing is written again */
    KbJobStatus *cur = &g_array_index(r->job_statuses, KbJobStatus, 0);
    cur->changed = FALSE;
    kb_status_writer_apply(w, r);
    g_autofree char *none_again = writes_since(w, srv, 5);
    g_assert_cmpstr(none_again, ==, "");

    /* 3 of 4 children bound whole: True for them and the composite; the fourth waits */
    cur->changed = TRUE;
    cur->initially_scheduled = TRUE;
    cur->condition_type = "Scheduled";
    cur->n_bound = 6;
    cur->n_children_scheduled = 3;
    for (int i = 0; i < 3; i++) {
        KbChildStatus *cs = &g_array_index(cur->children, KbChildStatus, i);
        cs->n_bound = 2;
        cs->initially_scheduled = TRUE;
    }
    kb_status_writer_apply(w, r);
    g_autofree char *second = writes_since(w, srv, 5);
    g_test_message("%s", second);
    g_autofree char *done_c = g_strdup_printf(
            "%scompositepodgroups/train/status CompositePodGroupInitiallyScheduled True: 3/3 "
            "child PodGroups scheduled (6 pods bound)",
            a3);
    g_assert_nonnull(strstr(second, done_c));
    g_autofree char *done_0 = g_strdup_printf(
            "%spodgroups/train-g0/status PodGroupInitiallyScheduled True: 2/2 pods bound", a3);
    g_assert_nonnull(strstr(second, done_0));
    g_autofree char *wait_3 = g_strdup_printf(
            "%spodgroups/train-g3/status PodGroupInitiallyScheduled False: CompositePodGroup "
            "\"train\" started without it (3/3 child PodGroups scheduled)",
            a3);
    g_assert_nonnull(strstr(second, wait_3));
    g_assert_cmpuint(kb_test_server_request_count(srv), ==, 10);

    /* never reverted: a composite that says True already gets nothing */
    kb_object_unref(cur->group);
    cur->group = composite_new("{\"type\":\"CompositePodGroupInitiallyScheduled\",\"status\":"
                               "\"True\",\"message\":\"3/3\"}");
    cur->initially_scheduled = FALSE;
    cur->condition_type = "Unschedulable";
    g_assert_null(kb_status_composite_body(cur, 1700000100));
    /* nor a child whose own condition says True (a PodGroupInitiallyScheduled one) */
    KbChildStatus was = child_new(9, 0);
    kb_object_unref(was.group);
    was.group = decode_text(kb_pod_group_decode_v1alpha3,
                            "{\"metadata\":{\"name\":\"x\",\"namespace\":\"team-a\"},\"spec\":{"
                            "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}},\"status\":{"
                            "\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":"
                            "\"True\"}]}}");
    g_assert_null(kb_status_child_body(cur, &was, 1700000100));
    kb_object_unref(was.group);
    writer_done(&wr);
}

/* A native PodGroup that cannot be read: SchedulerError once, never over True. */
static void test_native_error(void)
{
    g_autoptr(KbClient) client = NULL;
    g_autoptr(KbConfig) config = kb_config_new("http://127.0.0.1:1");
    client = kb_client_new(config, NULL);
    g_assert_nonnull(client);
    KbStatusWriter *w = kb_status_writer_new(client, NULL);
    kb_status_writer_set_held(w, TRUE);
    static const struct {
        const char *conditions;
        gboolean written;
    } cases[] = {
            {"", TRUE},
            {"{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"False\",\"message\":\"old\"}",
             TRUE},
            {"{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"False\",\"message\":\"bad\"}",
             FALSE},
            {"{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\",\"message\":\"4/4\"}",
             FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"metadata\":{\"name\":\"g%u\",\"namespace\":\"team-a\"},\"status\":{"
                "\"conditions\":[%s]}}",
                i, cases[i].conditions);
        json_object *o = json_tokener_parse(text);
        g_assert_nonnull(o);
        g_assert_cmpint(kb_status_writer_native_error(w, o, "bad", 1787220000), ==,
                        cases[i].written);
        json_object_put(o);
    }
    g_assert_cmpuint(kb_status_writer_pending(w), ==, 2);
    kb_status_writer_free(w);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/scheduler/status-writer/held-writes-wait", test_held_writes_wait);
    g_test_add_func("/scheduler/status-writer/queue-usage-throttled", test_queue_usage);
    g_test_add_func("/scheduler/status-writer/queue-runtime-history-throttled", test_queue_history);
    g_test_add_func("/scheduler/status-writer/queue-usage-pruned-to-annotations",
                    test_queue_usage_pruned);
    g_test_add_func("/scheduler/status-writer/queue-resources-conditions-pruned-each",
                    test_queue_resources_conditions_pruned);
    g_test_add_func("/scheduler/status-writer/held-merge-keeps-history",
                    test_held_merge_keeps_history);
    g_test_add_func("/scheduler/status-writer/native-condition", test_native_condition);
    g_test_add_func("/scheduler/status-writer/native-gang-incomplete", test_native_gang_incomplete);
    g_test_add_func("/scheduler/status-writer/native-scheduler-error", test_native_error);
    g_test_add_func("/scheduler/status-writer/composite-and-children", test_composite_status);
    g_test_add_func("/scheduler/status-writer/native-write-is-strategic",
                    test_native_write_is_strategic);
    return g_test_run();
}
