/*
 * The extender's HTTP side: kube-scheduler's extender API on --extender-address over
 * kube/kb-httpd (libmicrohttpd on the main loop), decisions from scheduler/extender.h, bindings
 * through the daemon's client.
 *
 *   POST [PREFIX]/filter      ExtenderArgs -> ExtenderFilterResult
 *   POST [PREFIX]/prioritize  ExtenderArgs -> HostPriorityList
 *   POST [PREFIX]/bind        ExtenderBindingArgs -> ExtenderBindingResult (the claim writes
 *                             kube-batchd's plan makes when kube-scheduler did not allocate the
 *                             pod's claims, then the Binding, are posted before the answer; the
 *                             connection waits for them)
 *   POST [PREFIX]/preempt     ExtenderPreemptionArgs -> ExtenderPreemptionResult
 *
 * PREFIX is whatever path the urlPrefix of kube-scheduler's configuration carries ("" or
 * "/scheduler", ...): the verb is the last path segment. Other verbs: 404; other methods: 405;
 * a body kube-scheduler's types do not decode: 400; a body over KB_EXTENDER_MAX_BODY_BYTES: 413.
 * Each refusal is logged with the reason and counted
 * (kube_batchd_extender_requests_total{verb,code}); the server carries on.
 *
 * Who may call: with a client CA, only holders of a certificate it signed (kube-scheduler's
 * extender tlsConfig certFile/keyFile); any other call gets 401 before its body is read. Without
 * one, loopback only, unless allow_unauthenticated. A bind is further checked against the plan
 * (kb_extender_bind_begin); refusals are answered in the result's Error, logged with the caller's
 * identity (certificate CN and address) and counted by reason.
 *
 * Metrics: kube_batchd_extender_requests_total{verb,code}, kube_batchd_extender_duration_seconds
 * {verb} (decision time, bind round trip included), kube_batchd_extender_reservations (gangs),
 * kube_batchd_extender_unauthenticated_total, kube_batchd_extender_bind_refused_total{reason},
 * kube_batchd_extender_claim_writes_total{result} (a bind's ResourceClaim status writes: written,
 * adopted, undone, failed).
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"
#include "kube/kb-httpd.h"
#include "kube/kb-metrics.h"
#include "scheduler/extender.h"

typedef struct KbExtenderServer KbExtenderServer;

typedef struct {
    const char *address;  /* HOST:PORT */
    const char *tls_cert; /* PEM files; both or neither */
    const char *tls_key;
    /* CA (PEM) that callers' client certificates must chain to (needs tls_cert): a call without
     * a valid one is answered 401 and changes nothing. Without it the server listens on
     * 127.0.0.1 (same port) unless allow_unauthenticated. */
    const char *client_ca;
    gboolean allow_unauthenticated;
    gsize max_body;        /* 0: KB_EXTENDER_MAX_BODY_BYTES */
    gint64 (*now_s)(void); /* clock for reservations; NULL: wall clock */
} KbExtenderServerOptions;

/*
 * Serve @ext (borrowed) on @opts->address. @client (borrowed; NULL: bind answers an Error) posts
 * the bindings. @metrics (may be NULL) gets the families above. Expired reservations are released
 * every second. NULL with KB_ERROR_CONFIG / KB_ERROR_TRANSPORT when the address cannot serve.
 */
KbExtenderServer *kb_extender_server_new(const KbExtenderServerOptions *opts, KbExtender *ext,
                                         KbClient *client, KbMetrics *metrics, GError **error);
guint16 kb_extender_server_port(const KbExtenderServer *srv);
/* The address it listens on ("127.0.0.1:8888" when the loopback rule applied; borrowed). */
const char *kb_extender_server_address(const KbExtenderServer *srv);
/* Requests answered with @code so far (any verb). */
guint64 kb_extender_server_count(const KbExtenderServer *srv, guint code);
/* Bindings still waiting for the API server. */
guint kb_extender_server_binds_in_flight(const KbExtenderServer *srv);
void kb_extender_server_free(KbExtenderServer *srv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbExtenderServer, kb_extender_server_free)
