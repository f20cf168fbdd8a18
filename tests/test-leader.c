/*
 * Lease leader election against kb-test-server, whose handler keeps a one-Lease store with
 * resourceVersions and answers 409 to stale writes, as the API server does. Durations are short
 * (lease 1 s, the smallest leaseDurationSeconds; retry 50 ms) so everything runs in seconds.
 */
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-leader.h"
#include "kube/kb-objects.h"
#include "tests/lib/kb-test-server.h"

#define NS         "kube-system"
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases"
#define LEASE_NAME "kube-batchd"

/* ---- the Lease store ----------------------------------------------------------------------- */

typedef struct {
    GMutex lock;
    json_object *lease; /* NULL: absent */
    guint64 rv;
    guint fail_writes; /* answer writes with this status (0: no failure) */
    guint delay_writes_ms;
    gboolean steal_after_get; /* the next GET is followed by another writer taking the lease */
    guint gets, posts, puts, conflicts;
} Store;

static void store_init(Store *s)
{
    memset(s, 0, sizeof(*s));
    g_mutex_init(&s->lock);
}

static void store_clear(Store *s)
{
    g_clear_pointer(&s->lease, json_object_put);
    g_mutex_clear(&s->lock);
}

static void set_rv(Store *s, json_object *obj)
{
    json_object *meta;
    g_autofree char *rv = g_strdup_printf("%" G_GUINT64_FORMAT, ++s->rv);

    if (!json_object_object_get_ex(obj, "metadata", &meta)) {
        meta = json_object_new_object();
        json_object_object_add(obj, "metadata", meta);
    }
    json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
}

static const char *rv_of(json_object *obj)
{
    json_object *meta, *rv;

    if (obj == NULL || !json_object_object_get_ex(obj, "metadata", &meta) ||
        !json_object_object_get_ex(meta, "resourceVersion", &rv))
        return NULL;
    return json_object_get_string(rv);
}

static json_object *spec_of(json_object *lease)
{
    json_object *spec = NULL;

    json_object_object_get_ex(lease, "spec", &spec);
    return spec;
}

/* Another writer took the lease: holder @holder, duration @duration_s, renewed now. */
static void store_put_holder(Store *s, const char *holder, int duration_s, int transitions)
{
    json_object *lease = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *spec = json_object_new_object();
    g_autofree char *now =
            kb_micro_time_format(g_get_real_time() - G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC);

    json_object_object_add(meta, "name", json_object_new_string(LEASE_NAME));
    json_object_object_add(meta, "namespace", json_object_new_string(NS));
    json_object_object_add(lease, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
    json_object_object_add(lease, "kind", json_object_new_string("Lease"));
    json_object_object_add(lease, "metadata", meta);
    json_object_object_add(spec, "holderIdentity", json_object_new_string(holder));
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(duration_s));
    /* An old renewTime: only the local observation decides expiry, never this clock. */
    json_object_object_add(spec, "acquireTime", json_object_new_string(now));
    json_object_object_add(spec, "renewTime", json_object_new_string(now));
    json_object_object_add(spec, "leaseTransitions", json_object_new_int(transitions));
    json_object_object_add(lease, "spec", spec);
    set_rv(s, lease);
    g_clear_pointer(&s->lease, json_object_put);
    s->lease = lease;
}

static KbTestResponse *reply(guint status, json_object *obj)
{
    return kb_test_response_new_body(status, json_object_to_json_string(obj));
}

static KbTestResponse *handle_write(Store *s, const KbTestRequest *req, gboolean create)
{
    json_object *body = json_tokener_parse(req->body);
    KbTestResponse *resp;

    if (body == NULL)
        return kb_test_response_new_status(400, "BadRequest", "malformed body");
    if (create && s->lease != NULL) {
        s->conflicts++;
        resp = kb_test_response_new_status(409, "AlreadyExists", "leases \"x\" already exists");
    } else if (!create && s->lease == NULL) {
        resp = kb_test_response_new_status(404, "NotFound", "leases \"x\" not found");
    } else if (!create && g_strcmp0(rv_of(body), rv_of(s->lease)) != 0) {
        s->conflicts++;
        resp = kb_test_response_new_status(409, "Conflict", "the object has been modified");
    } else {
        set_rv(s, body);
        g_clear_pointer(&s->lease, json_object_put);
        s->lease = json_object_get(body);
        resp = reply(create ? 201 : 200, body);
    }
    json_object_put(body);
    return resp;
}

static KbTestResponse *lease_handler(const KbTestRequest *req, gpointer user_data)
{
    Store *s = user_data;
    KbTestResponse *resp;
    gboolean named = strcmp(req->path, LEASE_PATH "/" LEASE_NAME) == 0;

    g_mutex_lock(&s->lock);
    if (strcmp(req->method, "GET") == 0 && named) {
        s->gets++;
        resp = s->lease != NULL ? reply(200, s->lease)
                                : kb_test_response_new_status(404, "NotFound", "not found");
        if (s->steal_after_get && s->lease != NULL) {
            s->steal_after_get = FALSE;
            store_put_holder(s, "thief", 30, 9);
        }
    } else if (s->fail_writes != 0) {
        resp = kb_test_response_new_status(s->fail_writes, "InternalError", "scripted failure");
    } else if (strcmp(req->method, "POST") == 0 && strcmp(req->path, LEASE_PATH) == 0) {
        s->posts++;
        resp = handle_write(s, req, TRUE);
    } else if (strcmp(req->method, "PUT") == 0 && named) {
        s->puts++;
        resp = handle_write(s, req, FALSE);
    } else {
        resp = kb_test_response_new_status(405, "MethodNotAllowed", "unexpected");
    }
    if (s->delay_writes_ms > 0 && strcmp(req->method, "GET") != 0)
        kb_test_response_set_delay(resp, s->delay_writes_ms);
    g_mutex_unlock(&s->lock);
    return resp;
}

/* A field of the stored lease's spec, as a string ("" when absent). */
static char *store_field(Store *s, const char *field)
{
    json_object *v = NULL;
    char *out;

    g_mutex_lock(&s->lock);
    if (s->lease != NULL && json_object_object_get_ex(spec_of(s->lease), field, &v))
        out = g_strdup(json_object_get_string(v));
    else
        out = g_strdup("");
    g_mutex_unlock(&s->lock);
    return out;
}

static guint store_count(Store *s, const guint *counter)
{
    guint n;

    g_mutex_lock(&s->lock);
    n = *counter;
    g_mutex_unlock(&s->lock);
    return n;
}

/* ---- fixture ------------------------------------------------------------------------------- */

typedef struct {
    Store store;
    KbTestServer *server;
    KbClient *client;
} Fixture;

typedef struct {
    const char *name;
    KbLeader *leader;
    guint started;
    guint stopped;
    gint64 stopped_at;
} Candidate;

static void on_started(gpointer data)
{
    ((Candidate *)data)->started++;
}

static void on_stopped(gpointer data)
{
    Candidate *c = data;

    c->stopped++;
    c->stopped_at = g_get_monotonic_time();
}

static void fixture_setup(Fixture *f, gconstpointer data)
{
    KbConfig config = {0};
    g_autoptr(GError) error = NULL;

    store_init(&f->store);
    f->server = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_set_handler(f->server, "*", LEASE_PATH "*", lease_handler, &f->store, NULL);
    config.server = (char *)kb_test_server_url(f->server);
    f->client = kb_client_new(&config, &error);
    g_assert_no_error(error);
}

static void fixture_teardown(Fixture *f, gconstpointer data)
{
    /* Let responses in flight arrive before the client goes. */
    for (int i = 0; i < 200 && kb_client_pending(f->client) > 0; i++)
        g_main_context_iteration(NULL, TRUE);
    kb_client_free(f->client);
    kb_test_server_free(f->server);
    store_clear(&f->store);
}

static void candidate_init(Fixture *f, Candidate *c, const char *name, guint renew_deadline_ms)
{
    KbLeaderOptions opts = {
            .namespace_ = NS,
            .name = LEASE_NAME,
            .identity = name,
            .lease_duration_ms = 1000,
            .renew_deadline_ms = renew_deadline_ms,
            .retry_period_ms = 50,
            .on_started_leading = on_started,
            .on_stopped_leading = on_stopped,
            .user_data = c,
    };

    memset(c, 0, sizeof(*c));
    c->name = name;
    c->leader = kb_leader_new(f->client, &opts);
}

static gboolean tick(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

/* Run the main loop until @done(@data) or @timeout_ms; returns whether it got done. */
static gboolean run_until(gboolean (*done)(gpointer), gpointer data, guint timeout_ms)
{
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    guint id = g_timeout_add(10, tick, NULL);
    gboolean ok;

    while (!(ok = done(data)) && g_get_monotonic_time() < end)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(id);
    return ok;
}

static gboolean never(gpointer data)
{
    return FALSE;
}

static void run_for(guint ms)
{
    run_until(never, NULL, ms);
}

static gboolean server_has_requests(gpointer data)
{
    return kb_test_server_request_count(data) >= 1;
}

static gboolean is_leading(gpointer data)
{
    return kb_leader_is_leading(((Candidate *)data)->leader);
}

static gboolean has_stopped(gpointer data)
{
    return ((Candidate *)data)->stopped > 0;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_acquire_absent(Fixture *f, gconstpointer data)
{
    Candidate a;
    g_autofree char *holder = NULL, *duration = NULL, *transitions = NULL;
    g_autofree char *acquire = NULL, *renew = NULL;
    gint64 acquire_us = 0, renew_us = 0;

    candidate_init(f, &a, "a", 400);
    g_assert_false(kb_leader_is_leading(a.leader));
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 3000));
    g_assert_cmpuint(a.started, ==, 1);
    g_assert_cmpstr(kb_leader_get_holder(a.leader), ==, "a");

    holder = store_field(&f->store, "holderIdentity");
    duration = store_field(&f->store, "leaseDurationSeconds");
    transitions = store_field(&f->store, "leaseTransitions");
    acquire = store_field(&f->store, "acquireTime");
    renew = store_field(&f->store, "renewTime");
    g_assert_cmpstr(holder, ==, "a");
    g_assert_cmpstr(duration, ==, "1");
    g_assert_cmpstr(transitions, ==, "0");
    /* MicroTime: six fractional digits. */
    g_assert_true(kb_micro_time_parse(acquire, &acquire_us));
    g_assert_true(kb_micro_time_parse(renew, &renew_us));
    g_assert_nonnull(strchr(acquire, '.'));
    g_assert_cmpint(llabs(acquire_us - g_get_real_time()), <, 5 * G_USEC_PER_SEC);
    g_assert_cmpuint(store_count(&f->store, &f->store.gets), ==, 1);
    g_assert_cmpuint(store_count(&f->store, &f->store.posts), ==, 1);
    kb_leader_free(a.leader);
}

static void test_renews(Fixture *f, gconstpointer data)
{
    Candidate a;
    g_autofree char *acquire0 = NULL, *renew0 = NULL, *acquire1 = NULL, *renew1 = NULL;

    candidate_init(f, &a, "a", 400);
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 3000));
    acquire0 = store_field(&f->store, "acquireTime");
    renew0 = store_field(&f->store, "renewTime");
    run_for(400);
    acquire1 = store_field(&f->store, "acquireTime");
    renew1 = store_field(&f->store, "renewTime");
    g_assert_true(kb_leader_is_leading(a.leader));
    g_assert_cmpstr(acquire1, ==, acquire0);
    g_assert_cmpstr(renew1, !=, renew0);
    /* Every 50 ms: several renewals, all by PUT on the lease already held (no GET). */
    g_assert_cmpuint(store_count(&f->store, &f->store.puts), >=, 3);
    g_assert_cmpuint(store_count(&f->store, &f->store.gets), ==, 1);
    g_assert_cmpuint(store_count(&f->store, &f->store.conflicts), ==, 0);
    g_assert_cmpuint(a.stopped, ==, 0);
    kb_leader_free(a.leader);
}

static void test_held_lease_not_taken(Fixture *f, gconstpointer data)
{
    Candidate a;
    g_autofree char *holder = NULL;

    g_mutex_lock(&f->store.lock);
    store_put_holder(&f->store, "other", 30, 2);
    g_mutex_unlock(&f->store.lock);
    candidate_init(f, &a, "a", 400);
    kb_leader_start(a.leader);
    run_for(500);
    g_assert_false(kb_leader_is_leading(a.leader));
    g_assert_cmpuint(a.started, ==, 0);
    g_assert_cmpstr(kb_leader_get_holder(a.leader), ==, "other");
    holder = store_field(&f->store, "holderIdentity");
    g_assert_cmpstr(holder, ==, "other");
    g_assert_cmpuint(store_count(&f->store, &f->store.gets), >=, 2);
    g_assert_cmpuint(store_count(&f->store, &f->store.puts), ==, 0);
    kb_leader_free(a.leader);
}

static void test_expired_lease_taken_over(Fixture *f, gconstpointer data)
{
    Candidate a;
    g_autofree char *holder = NULL, *transitions = NULL;
    gint64 start = g_get_monotonic_time();

    g_mutex_lock(&f->store.lock);
    store_put_holder(&f->store, "other", 1, 3);
    g_mutex_unlock(&f->store.lock);
    candidate_init(f, &a, "a", 400);
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 4000));
    /* Expiry counts from the local observation, a full leaseDurationSeconds, however old the
     * renewTime in the record is. */
    g_assert_cmpint(g_get_monotonic_time() - start, >=, 1 * G_USEC_PER_SEC);
    holder = store_field(&f->store, "holderIdentity");
    transitions = store_field(&f->store, "leaseTransitions");
    g_assert_cmpstr(holder, ==, "a");
    g_assert_cmpstr(transitions, ==, "4");
    g_assert_cmpuint(a.started, ==, 1);
    kb_leader_free(a.leader);
}

static void test_renew_failure_stops_leading(Fixture *f, gconstpointer data)
{
    Candidate a;
    gint64 failing_since;

    candidate_init(f, &a, "a", 300);
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 3000));
    g_mutex_lock(&f->store.lock);
    f->store.fail_writes = 500;
    g_mutex_unlock(&f->store.lock);
    failing_since = g_get_monotonic_time();
    g_assert_true(run_until(has_stopped, &a, 3000));
    g_assert_cmpuint(a.stopped, ==, 1);
    g_assert_false(kb_leader_is_leading(a.leader));
    /* Not before the renew deadline (the renewal under way may have begun up to one retry period
     * before the failures started), and not long after it. */
    g_assert_cmpint(a.stopped_at - failing_since, >=, (300 - 50) * 1000);
    g_assert_cmpint(a.stopped_at - failing_since, <, 1500 * 1000);
    /* Stopped means stopped: no more attempts. */
    {
        guint before = kb_test_server_request_count(f->server);
        run_for(200);
        g_assert_cmpuint(kb_test_server_request_count(f->server), ==, before);
    }
    kb_leader_free(a.leader);
}

/* A renewal stuck in a slow request still ends at the deadline, not when the request returns. */
static void test_renew_deadline_with_hung_request(Fixture *f, gconstpointer data)
{
    Candidate a;
    gint64 slow_since;

    candidate_init(f, &a, "a", 300);
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 3000));
    g_mutex_lock(&f->store.lock);
    f->store.delay_writes_ms = 1500;
    g_mutex_unlock(&f->store.lock);
    slow_since = g_get_monotonic_time();
    g_assert_true(run_until(has_stopped, &a, 3000));
    g_assert_cmpint(a.stopped_at - slow_since, <, 1000 * 1000);
    g_assert_false(kb_leader_is_leading(a.leader));
    /* The late response must not revive it. */
    run_for(1700);
    g_assert_false(kb_leader_is_leading(a.leader));
    g_assert_cmpuint(a.started, ==, 1);
    g_assert_cmpuint(a.stopped, ==, 1);
    kb_leader_free(a.leader);
}

static void test_lease_taken_by_another(Fixture *f, gconstpointer data)
{
    Candidate a;

    candidate_init(f, &a, "a", 300);
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 3000));
    /* Someone else writes the lease (a forced takeover). */
    g_mutex_lock(&f->store.lock);
    store_put_holder(&f->store, "usurper", 30, 7);
    g_mutex_unlock(&f->store.lock);
    g_assert_true(run_until(has_stopped, &a, 3000));
    g_assert_cmpstr(kb_leader_get_holder(a.leader), ==, "usurper");
    g_assert_cmpuint(store_count(&f->store, &f->store.conflicts), >=, 1);
    kb_leader_free(a.leader);
}

/* Optimistic concurrency: the PUT after a GET carries its resourceVersion; a write in between
 * makes it a 409, and the candidate backs off instead of overwriting. */
static void test_stale_write_conflicts(Fixture *f, gconstpointer data)
{
    Candidate a;
    g_autofree char *holder = NULL;

    g_mutex_lock(&f->store.lock);
    store_put_holder(&f->store, "", 1, 5); /* released: free to take */
    f->store.steal_after_get = TRUE;
    g_mutex_unlock(&f->store.lock);
    candidate_init(f, &a, "a", 300);
    kb_leader_start(a.leader);
    run_for(400);
    g_assert_false(kb_leader_is_leading(a.leader));
    g_assert_cmpuint(store_count(&f->store, &f->store.conflicts), ==, 1);
    holder = store_field(&f->store, "holderIdentity");
    g_assert_cmpstr(holder, ==, "thief");
    g_assert_cmpstr(kb_leader_get_holder(a.leader), ==, "thief");
    kb_leader_free(a.leader);
}

static void test_release(Fixture *f, gconstpointer data)
{
    Candidate a;
    g_autofree char *holder = NULL, *duration = NULL, *transitions = NULL;

    candidate_init(f, &a, "a", 400);
    kb_leader_start(a.leader);
    g_assert_true(run_until(is_leading, &a, 3000));
    run_for(120); /* a renewal or two in flight or done */
    kb_leader_release(a.leader);
    g_assert_false(kb_leader_is_leading(a.leader));
    holder = store_field(&f->store, "holderIdentity");
    duration = store_field(&f->store, "leaseDurationSeconds");
    transitions = store_field(&f->store, "leaseTransitions");
    g_assert_cmpstr(holder, ==, "");
    g_assert_cmpstr(duration, ==, "1");
    g_assert_cmpstr(transitions, ==, "0");
    g_assert_cmpuint(a.stopped, ==, 0);
    /* No attempts after release. */
    {
        guint before = kb_test_server_request_count(f->server);
        run_for(200);
        g_assert_cmpuint(kb_test_server_request_count(f->server), <=, before + 1);
        g_assert_false(kb_leader_is_leading(a.leader));
    }
    kb_leader_free(a.leader);
}

typedef struct {
    Candidate *c[2];
    gboolean both;
} Pair;

static gboolean check_pair(gpointer data)
{
    Pair *p = data;

    if (kb_leader_is_leading(p->c[0]->leader) && kb_leader_is_leading(p->c[1]->leader))
        p->both = TRUE;
    return G_SOURCE_CONTINUE;
}

static gboolean either_leading(gpointer data)
{
    Pair *p = data;

    return kb_leader_is_leading(p->c[0]->leader) || kb_leader_is_leading(p->c[1]->leader);
}

static void test_two_candidates(Fixture *f, gconstpointer data)
{
    Candidate a, b;
    Pair p = {{&a, &b}, FALSE};
    guint check;
    Candidate *winner, *loser;
    g_autofree char *holder = NULL, *transitions = NULL;

    candidate_init(f, &a, "a", 400);
    candidate_init(f, &b, "b", 400);
    check = g_timeout_add(2, check_pair, &p);
    kb_leader_start(a.leader);
    kb_leader_start(b.leader);
    g_assert_true(run_until(either_leading, &p, 3000));
    winner = kb_leader_is_leading(a.leader) ? &a : &b;
    loser = winner == &a ? &b : &a;
    /* Longer than the lease duration: the leader keeps renewing, the other never takes over. */
    run_for(1500);
    g_assert_false(p.both);
    g_assert_true(kb_leader_is_leading(winner->leader));
    g_assert_false(kb_leader_is_leading(loser->leader));
    g_assert_cmpuint(loser->started, ==, 0);
    g_assert_cmpstr(kb_leader_get_holder(loser->leader), ==, winner->name);

    /* The leader steps down; the other takes over at its next attempt, well before the lease
     * would have expired. */
    kb_leader_release(winner->leader);
    g_assert_true(run_until(is_leading, loser, 700));
    g_assert_false(p.both);
    holder = store_field(&f->store, "holderIdentity");
    transitions = store_field(&f->store, "leaseTransitions");
    g_assert_cmpstr(holder, ==, loser->name);
    g_assert_cmpstr(transitions, ==, "1");
    g_source_remove(check);
    kb_leader_free(a.leader);
    kb_leader_free(b.leader);
}

static void test_free_with_request_in_flight(Fixture *f, gconstpointer data)
{
    Candidate a;

    g_mutex_lock(&f->store.lock);
    f->store.delay_writes_ms = 200;
    g_mutex_unlock(&f->store.lock);
    candidate_init(f, &a, "a", 400);
    kb_leader_start(a.leader);
    g_assert_true(run_until(server_has_requests, f->server, 2000));
    run_for(60); /* GET answered, POST in flight */
    kb_leader_free(a.leader);
    run_for(400); /* the response arrives for a freed leader */
    g_assert_cmpuint(a.started, ==, 0);
}

static void test_default_identity(void)
{
    g_autofree char *a = kb_leader_default_identity();
    g_autofree char *b = kb_leader_default_identity();
    g_autofree char *prefix = g_strdup_printf("%s_", g_get_host_name());

    g_assert_true(g_str_has_prefix(a, prefix));
    g_assert_cmpuint(strlen(a), ==, strlen(prefix) + 36);
    g_assert_cmpstr(a, !=, b);
}

#define ADD(path, fn)                                                                              \
    g_test_add("/kube/leader/" path, Fixture, NULL, fixture_setup, fn, fixture_teardown)

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    ADD("acquire/absent-lease", test_acquire_absent);
    ADD("acquire/held-lease-not-taken", test_held_lease_not_taken);
    ADD("acquire/expired-lease-taken-over", test_expired_lease_taken_over);
    ADD("acquire/stale-write-conflicts", test_stale_write_conflicts);
    ADD("renew/keeps-acquire-time", test_renews);
    ADD("renew/failure-stops-leading", test_renew_failure_stops_leading);
    ADD("renew/deadline-with-hung-request", test_renew_deadline_with_hung_request);
    ADD("renew/lease-taken-by-another", test_lease_taken_by_another);
    ADD("release/clears-holder", test_release);
    ADD("two-candidates/never-both-lead", test_two_candidates);
    ADD("free-with-request-in-flight", test_free_with_request_in_flight);
    g_test_add_func("/kube/leader/default-identity", test_default_identity);
    return g_test_run();
}
