/*
 * Lease leader election (client-go leaderelection semantics, see the header) as a state machine
 * on the main loop.
 *
 * One attempt (tryAcquireOrRenew) is a chain of asynchronous calls: [fast-path PUT] -> GET ->
 * POST or PUT. Each attempt has a number; a response that arrives for an older attempt (the
 * renew deadline passed meanwhile, or the leader was stopped) is ignored. Pending calls hold a
 * reference on the leader, so kb_leader_free() with requests in flight is safe.
 */
#include "kube/kb-leader.h"

#include <string.h>

#include "kube/kb-objects.h"

#define DEFAULT_LEASE_DURATION_MS 15000
#define DEFAULT_RENEW_DEADLINE_MS 10000
#define DEFAULT_RETRY_PERIOD_MS   2000
#define JITTER_FACTOR             1.2

typedef enum {
    STATE_IDLE,
    STATE_ACQUIRING,
    STATE_LEADING,
} State;

/* LeaderElectionRecord: the Lease spec. */
typedef struct {
    char *holder;
    gint32 duration_s;
    gint64 acquire_us; /* wall clock, unix microseconds */
    gint64 renew_us;
    gint32 transitions;
} Record;

struct KbLeader {
    gint ref_count;
    KbClient *client;
    char *namespace_;
    char *name;
    char *identity;
    guint lease_duration_ms;
    guint renew_deadline_ms;
    guint retry_period_ms;
    void (*on_started_leading)(gpointer user_data);
    void (*on_stopped_leading)(gpointer user_data);
    gpointer user_data;

    State state;
    guint attempt;         /* number of the current attempt; older responses are stale */
    gboolean in_flight;    /* an attempt is waiting for a response */
    guint retry_id;        /* next attempt */
    guint deadline_id;     /* end of the current renewal */
    Record observed;       /* last record seen or written */
    gint64 observed_mono;  /* monotonic time it last changed */
    json_object *lease;    /* the Lease as last returned by the server (for PUT) */
    Record desired;        /* what the current attempt writes */
    GMainContext *context; /* where the timers run: the thread-default one at creation */
};

typedef enum {
    STEP_FAST_UPDATE,
    STEP_GET,
    STEP_CREATE,
    STEP_UPDATE,
} Step;

typedef struct {
    KbLeader *leader; /* a reference */
    guint attempt;
    Step step;
} Call;

static void attempt_start(KbLeader *leader);

/* ---- records ------------------------------------------------------------------------------- */

static void record_clear(Record *r)
{
    g_clear_pointer(&r->holder, g_free);
    memset(r, 0, sizeof(*r));
}

static void record_copy(Record *dst, const Record *src)
{
    record_clear(dst);
    *dst = *src;
    dst->holder = g_strdup(src->holder != NULL ? src->holder : "");
}

static gboolean record_equal(const Record *a, const Record *b)
{
    return g_strcmp0(a->holder, b->holder) == 0 && a->duration_s == b->duration_s &&
           a->acquire_us == b->acquire_us && a->renew_us == b->renew_us &&
           a->transitions == b->transitions;
}

static json_object *record_to_spec(const Record *r)
{
    json_object *spec = json_object_new_object();
    g_autofree char *acquire = kb_micro_time_format(r->acquire_us);
    g_autofree char *renew = kb_micro_time_format(r->renew_us);

    json_object_object_add(spec, "holderIdentity", json_object_new_string(r->holder));
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(r->duration_s));
    json_object_object_add(spec, "acquireTime", json_object_new_string(acquire));
    json_object_object_add(spec, "renewTime", json_object_new_string(renew));
    json_object_object_add(spec, "leaseTransitions", json_object_new_int(r->transitions));
    return spec;
}

static gboolean record_from_lease(json_object *obj, Record *r, GError **error)
{
    g_autoptr(KbLease) lease = kb_lease_decode(obj, FALSE, error);

    if (lease == NULL)
        return FALSE;
    record_clear(r);
    r->holder = g_strdup(lease->holder_identity != NULL ? lease->holder_identity : "");
    r->duration_s = lease->lease_duration_seconds;
    r->acquire_us = lease->acquire_time_us;
    r->renew_us = lease->renew_time_us;
    r->transitions = lease->lease_transitions;
    return TRUE;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static KbLeader *leader_ref(KbLeader *leader)
{
    g_atomic_int_inc(&leader->ref_count);
    return leader;
}

static void leader_unref(KbLeader *leader)
{
    if (!g_atomic_int_dec_and_test(&leader->ref_count))
        return;
    record_clear(&leader->observed);
    record_clear(&leader->desired);
    g_clear_pointer(&leader->lease, json_object_put);
    g_main_context_unref(leader->context);
    g_free(leader->namespace_);
    g_free(leader->name);
    g_free(leader->identity);
    g_free(leader);
}

KbLeader *kb_leader_new(KbClient *client, const KbLeaderOptions *opts)
{
    KbLeader *leader;

    g_return_val_if_fail(client != NULL && opts != NULL, NULL);
    g_return_val_if_fail(opts->namespace_ != NULL && opts->name != NULL, NULL);
    g_return_val_if_fail(opts->identity != NULL && opts->identity[0] != '\0', NULL);

    leader = g_new0(KbLeader, 1);
    leader->ref_count = 1;
    leader->client = client;
    leader->namespace_ = g_strdup(opts->namespace_);
    leader->name = g_strdup(opts->name);
    leader->identity = g_strdup(opts->identity);
    leader->lease_duration_ms =
            opts->lease_duration_ms > 0 ? opts->lease_duration_ms : DEFAULT_LEASE_DURATION_MS;
    leader->renew_deadline_ms =
            opts->renew_deadline_ms > 0 ? opts->renew_deadline_ms : DEFAULT_RENEW_DEADLINE_MS;
    leader->retry_period_ms =
            opts->retry_period_ms > 0 ? opts->retry_period_ms : DEFAULT_RETRY_PERIOD_MS;
    leader->on_started_leading = opts->on_started_leading;
    leader->on_stopped_leading = opts->on_stopped_leading;
    leader->user_data = opts->user_data;
    leader->observed.holder = g_strdup("");
    leader->context = g_main_context_ref_thread_default();
    return leader;
}

/* A timer on the leader's context (g_timeout_add would use the global default one). */
static guint add_timer(KbLeader *leader, guint ms, GSourceFunc func)
{
    GSource *source = g_timeout_source_new(ms);
    guint id;

    g_source_set_callback(source, func, leader, NULL);
    id = g_source_attach(source, leader->context);
    g_source_unref(source);
    return id;
}

static void remove_timer(KbLeader *leader, guint *id)
{
    GSource *source;

    if (*id == 0)
        return;
    source = g_main_context_find_source_by_id(leader->context, *id);
    if (source != NULL)
        g_source_destroy(source);
    *id = 0;
}

static void clear_timers(KbLeader *leader)
{
    remove_timer(leader, &leader->retry_id);
    remove_timer(leader, &leader->deadline_id);
}

/* Stop all activity: timers off, responses in flight become stale. */
static void stop(KbLeader *leader)
{
    clear_timers(leader);
    leader->attempt++;
    leader->in_flight = FALSE;
    leader->state = STATE_IDLE;
}

void kb_leader_free(KbLeader *leader)
{
    if (leader == NULL)
        return;
    stop(leader);
    leader_unref(leader);
}

gboolean kb_leader_is_leading(const KbLeader *leader)
{
    g_return_val_if_fail(leader != NULL, FALSE);
    return leader->state == STATE_LEADING;
}

const char *kb_leader_get_holder(const KbLeader *leader)
{
    g_return_val_if_fail(leader != NULL, "");
    return leader->observed.holder;
}

char *kb_leader_default_identity(void)
{
    g_autofree char *uuid = g_uuid_string_random();

    return g_strdup_printf("%s_%s", g_get_host_name(), uuid);
}

static gboolean is_leader(const KbLeader *leader)
{
    return strcmp(leader->observed.holder, leader->identity) == 0;
}

/* The observed record is still within its own leaseDurationSeconds, counted locally. */
static gboolean lease_valid(const KbLeader *leader, gint64 now_mono)
{
    return leader->observed_mono + (gint64)leader->observed.duration_s * G_USEC_PER_SEC > now_mono;
}

static void set_observed(KbLeader *leader, const Record *r)
{
    record_copy(&leader->observed, r);
    leader->observed_mono = g_get_monotonic_time();
}

/* ---- scheduling ---------------------------------------------------------------------------- */

static gboolean on_retry(gpointer data)
{
    KbLeader *leader = data;

    leader->retry_id = 0;
    attempt_start(leader);
    return G_SOURCE_REMOVE;
}

static void schedule(KbLeader *leader, guint delay_ms)
{
    remove_timer(leader, &leader->retry_id);
    leader->retry_id = add_timer(leader, delay_ms, on_retry);
}

static void lost(KbLeader *leader, const char *why)
{
    g_warning("lease %s/%s: %s lost leadership: %s", leader->namespace_, leader->name,
              leader->identity, why);
    stop(leader);
    if (leader->on_stopped_leading != NULL)
        leader->on_stopped_leading(leader->user_data);
}

static gboolean on_renew_deadline(gpointer data)
{
    KbLeader *leader = data;
    g_autofree char *why =
            g_strdup_printf("no successful renewal within %u ms", leader->renew_deadline_ms);

    leader->deadline_id = 0;
    lost(leader, why);
    return G_SOURCE_REMOVE;
}

/* Timer of the renew loop: a new renewal starts, with its own deadline. */
static gboolean on_renew(gpointer data)
{
    KbLeader *leader = data;

    leader->retry_id = 0;
    leader->deadline_id = add_timer(leader, leader->renew_deadline_ms, on_renew_deadline);
    attempt_start(leader);
    return G_SOURCE_REMOVE;
}

static void attempt_done(KbLeader *leader, gboolean success)
{
    leader->in_flight = FALSE;
    if (leader->state == STATE_ACQUIRING) {
        if (!success) {
            /* wait.JitterUntil: period plus up to JITTER_FACTOR times the period. */
            double jitter = g_random_double() * JITTER_FACTOR * leader->retry_period_ms;
            schedule(leader, leader->retry_period_ms + (guint)jitter);
            return;
        }
        g_message("lease %s/%s: %s acquired leadership", leader->namespace_, leader->name,
                  leader->identity);
        leader->state = STATE_LEADING;
        remove_timer(leader, &leader->retry_id);
        leader->retry_id = add_timer(leader, leader->retry_period_ms, on_renew);
        if (leader->on_started_leading != NULL)
            leader->on_started_leading(leader->user_data);
        return;
    }
    if (leader->state != STATE_LEADING)
        return;
    if (success) {
        remove_timer(leader, &leader->deadline_id);
        leader->retry_id = add_timer(leader, leader->retry_period_ms, on_renew);
    } else {
        /* Retry within the renewal; the deadline timer ends it. */
        schedule(leader, leader->retry_period_ms);
    }
}

/* ---- one attempt: tryAcquireOrRenew -----------------------------------------------------------
 */

static void on_response(const KbResponse *resp, gpointer data);

static void call(KbLeader *leader, Step step, const char *method, json_object *body)
{
    KbRequest req = {
            .method = method,
            .type = &kb_type_leases,
            .namespace_ = leader->namespace_,
            .name = step == STEP_CREATE ? NULL : leader->name,
            .body = body,
    };
    Call *c = g_new0(Call, 1);

    c->leader = leader_ref(leader);
    c->attempt = leader->attempt;
    c->step = step;
    kb_client_call_async(leader->client, &req, on_response, c);
}

/* The last Lease read or written, with @r as its spec: a PUT conditional on its resourceVersion. */
static json_object *lease_with_spec(const KbLeader *leader, const Record *r)
{
    json_object *body = NULL;

    if (json_object_deep_copy(leader->lease, &body, NULL) != 0)
        return NULL;
    json_object_object_add(body, "spec", record_to_spec(r));
    return body;
}

static void send_update(KbLeader *leader, Step step)
{
    json_object *body = lease_with_spec(leader, &leader->desired);

    if (body == NULL) {
        g_warning("lease %s/%s: cannot copy the lease object", leader->namespace_, leader->name);
        attempt_done(leader, FALSE);
        return;
    }
    call(leader, step, "PUT", body);
    json_object_put(body);
}

static void send_create(KbLeader *leader)
{
    json_object *body = json_object_new_object();
    json_object *meta = json_object_new_object();

    json_object_object_add(meta, "name", json_object_new_string(leader->name));
    json_object_object_add(meta, "namespace", json_object_new_string(leader->namespace_));
    json_object_object_add(body, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
    json_object_object_add(body, "kind", json_object_new_string("Lease"));
    json_object_object_add(body, "metadata", meta);
    json_object_object_add(body, "spec", record_to_spec(&leader->desired));
    call(leader, STEP_CREATE, "POST", body);
    json_object_put(body);
}

static void attempt_start(KbLeader *leader)
{
    gint64 now_us = g_get_real_time();
    Record *d = &leader->desired;

    leader->attempt++;
    leader->in_flight = TRUE;
    record_clear(d);
    d->holder = g_strdup(leader->identity);
    d->duration_s = (gint32)MAX(1, (leader->lease_duration_ms + 999) / 1000);
    d->acquire_us = now_us;
    d->renew_us = now_us;

    /* Fast path: the holder writes over the Lease it wrote last, skipping the GET. */
    if (is_leader(leader) && lease_valid(leader, g_get_monotonic_time()) && leader->lease != NULL) {
        d->acquire_us = leader->observed.acquire_us;
        d->transitions = leader->observed.transitions;
        send_update(leader, STEP_FAST_UPDATE);
        return;
    }
    call(leader, STEP_GET, "GET", NULL);
}

static void written(KbLeader *leader, const KbResponse *resp)
{
    set_observed(leader, &leader->desired);
    g_clear_pointer(&leader->lease, json_object_put);
    if (resp->body != NULL)
        leader->lease = json_object_get(resp->body);
    attempt_done(leader, TRUE);
}

/* After GET: decide whether the Lease may be taken or renewed, and write it. */
static void got_lease(KbLeader *leader, json_object *obj)
{
    g_autoptr(GError) error = NULL;
    Record old = {0};

    if (!record_from_lease(obj, &old, &error)) {
        g_warning("lease %s/%s: %s", leader->namespace_, leader->name, error->message);
        attempt_done(leader, FALSE);
        return;
    }
    g_clear_pointer(&leader->lease, json_object_put);
    leader->lease = json_object_get(obj);
    if (!record_equal(&old, &leader->observed))
        set_observed(leader, &old);
    if (old.holder[0] != '\0' && lease_valid(leader, g_get_monotonic_time()) &&
        !is_leader(leader)) {
        g_debug("lease %s/%s: held by %s and not yet expired", leader->namespace_, leader->name,
                old.holder);
        record_clear(&old);
        attempt_done(leader, FALSE);
        return;
    }
    if (is_leader(leader)) {
        leader->desired.acquire_us = old.acquire_us;
        leader->desired.transitions = old.transitions;
    } else {
        leader->desired.transitions = old.transitions + 1;
    }
    record_clear(&old);
    send_update(leader, STEP_UPDATE);
}

static void handle_response(KbLeader *leader, Step step, const KbResponse *resp)
{
    const char *msg = resp->error != NULL ? resp->error->message : "";

    switch (step) {
    case STEP_FAST_UPDATE:
        if (resp->error == NULL) {
            written(leader, resp);
            return;
        }
        g_warning("lease %s/%s: optimistic renewal failed, reading the lease: %s",
                  leader->namespace_, leader->name, msg);
        call(leader, STEP_GET, "GET", NULL);
        return;
    case STEP_GET:
        if (resp->error == NULL && resp->body != NULL) {
            got_lease(leader, resp->body);
        } else if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
            send_create(leader);
        } else {
            g_warning("lease %s/%s: cannot read the lease: %s", leader->namespace_, leader->name,
                      resp->error != NULL ? msg : "empty response");
            attempt_done(leader, FALSE);
        }
        return;
    case STEP_CREATE:
    case STEP_UPDATE:
        if (resp->error == NULL) {
            written(leader, resp);
            return;
        }
        /* A 409 is the normal outcome of losing a race with another candidate. */
        if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_CONFLICT) ||
            g_error_matches(resp->error, KB_ERROR, KB_ERROR_ALREADY_EXISTS))
            g_debug("lease %s/%s: lost the race: %s", leader->namespace_, leader->name, msg);
        else
            g_warning("lease %s/%s: cannot %s the lease: %s", leader->namespace_, leader->name,
                      step == STEP_CREATE ? "create" : "update", msg);
        attempt_done(leader, FALSE);
        return;
    }
}

static void on_response(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    KbLeader *leader = c->leader;

    if (c->attempt == leader->attempt && leader->in_flight)
        handle_response(leader, c->step, resp);
    leader_unref(leader);
    g_free(c);
}

void kb_leader_start(KbLeader *leader)
{
    g_return_if_fail(leader != NULL);
    if (leader->state != STATE_IDLE)
        return;
    g_message("lease %s/%s: %s attempting to acquire", leader->namespace_, leader->name,
              leader->identity);
    leader->state = STATE_ACQUIRING;
    attempt_start(leader);
}

/* ---- release --------------------------------------------------------------------------------- */

/* One PUT of the released record; on a 409 (a renewal of ours landed first) re-read once. */
gboolean kb_leader_busy(const KbLeader *leader)
{
    return leader != NULL && leader->in_flight;
}

void kb_leader_release(KbLeader *leader)
{
    g_return_if_fail(leader != NULL);
    stop(leader);
    for (int tries = 0; tries < 2 && is_leader(leader) && leader->lease != NULL; tries++) {
        g_autoptr(GError) error = NULL;
        gint64 now_us = g_get_real_time();
        Record r = {.holder = "",
                    .duration_s = 1,
                    .acquire_us = now_us,
                    .renew_us = now_us,
                    .transitions = leader->observed.transitions};
        json_object *body = lease_with_spec(leader, &r);
        Record seen = {0};
        json_object *res;
        json_object *fresh;

        if (body == NULL)
            return;
        res = kb_client_update(leader->client, &kb_type_leases, leader->namespace_, leader->name,
                               NULL, body, &error);
        json_object_put(body);
        if (res != NULL) {
            g_message("lease %s/%s: %s released the lease", leader->namespace_, leader->name,
                      leader->identity);
            set_observed(leader, &r);
            g_clear_pointer(&leader->lease, json_object_put);
            leader->lease = res;
            return;
        }
        if (!g_error_matches(error, KB_ERROR, KB_ERROR_CONFLICT)) {
            g_warning("lease %s/%s: cannot release: %s", leader->namespace_, leader->name,
                      error->message);
            return;
        }
        g_clear_error(&error);
        fresh = kb_client_get(leader->client, &kb_type_leases, leader->namespace_, leader->name,
                              &error);
        if (fresh == NULL) {
            g_warning("lease %s/%s: cannot release: %s", leader->namespace_, leader->name,
                      error->message);
            return;
        }
        g_clear_pointer(&leader->lease, json_object_put);
        leader->lease = fresh;
        if (!record_from_lease(fresh, &seen, &error)) {
            g_warning("lease %s/%s: %s", leader->namespace_, leader->name, error->message);
            return;
        }
        set_observed(leader, &seen);
        record_clear(&seen);
    }
}
