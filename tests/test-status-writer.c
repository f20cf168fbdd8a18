/* Tests of scheduler/status-writer.c against a scripted HTTP server: held writes. */
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-objects.h"
#include "scheduler/cycle.h"
#include "scheduler/status-writer.h"
#include "tests/lib/kb-test-server.h"

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

/* Let the main loop run for @ms. */
static void settle(guint ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    while (g_get_monotonic_time() < until)
        g_main_context_iteration(NULL, FALSE), g_usleep(1000);
}

/* While held, nothing is written; a newer status of the same group replaces the held one;
 * releasing writes each group once, with its latest status; writes after that flow at once. */
static void test_held_writes_wait(void)
{
    g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(srv, "PATCH", PATH_PREFIX "a/status", 200, "{}");
    kb_test_server_respond(srv, "PATCH", PATH_PREFIX "b/status", 200, "{}");
    kb_test_server_respond(srv, "PATCH", PATH_PREFIX "c/status", 200, "{}");
    g_autoptr(KbConfig) config = kb_config_new(kb_test_server_url(srv));
    g_autoptr(GError) error = NULL;
    KbClient *client = kb_client_new(config, &error);
    g_assert_no_error(error);
    KbStatusWriter *w = kb_status_writer_new(client, NULL);

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
    wait_patches(srv, 2);
    while (kb_status_writer_pending(w) > 0)
        g_main_context_iteration(NULL, TRUE);
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
    kb_status_writer_free(w);
    kb_client_free(client);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/scheduler/status-writer/held-writes-wait", test_held_writes_wait);
    return g_test_run();
}
