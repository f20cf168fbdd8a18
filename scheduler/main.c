/*
 * bin/kube-batchd: flags, logging, the main loop and signals around scheduler/daemon.c.
 *
 *   kube-batchd [--kubeconfig FILE | --master URL] [--scheduler-name NAME]...
 *               [--scheduler-conf FILE [--strict-config]] [--schedule-period 1s]
 *               [--default-queue default]
 *               [--leader-elect] [--lock-object-namespace NS] [--listen-address :8080]
 *               [--log-level info] [--version]
 *               [--extender-address HOST:PORT [--extender-tls-cert F --extender-tls-key F]
 *                [--extender-client-ca-file F | --extender-insecure-allow-unauthenticated]
 *                [--extender-scheduler-name NAME]... [--extender-reservation-timeout 60s]
 *                [--extender-no-requeue]]
 *
 * Exit status: 0 after a clean stop (SIGTERM/SIGINT), 2 for bad flags or configuration, 1 when
 * the daemon cannot start (the listen address is taken, ...).
 */
#include <glib-unix.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-error.h"
#include "kube/kb-httpd.h"
#include "kube/kb-log.h"
#include "kube/kb-proto.h"
#include "scheduler/conf.h"
#include "scheduler/binder.h"
#include "scheduler/daemon.h"

#ifndef KB_VERSION
#define KB_VERSION "unknown"
#endif

/* How long a stop waits for bindings on the wire. */
#define STOP_DEADLINE_MS 5000
/* Longest duration accepted by the duration flags (a day). */
#define MAX_DURATION_MS (24u * 3600u * 1000u)

typedef struct {
    char *kubeconfig;
    char *master;
    char **scheduler_names;
    char *scheduler_conf;
    gboolean strict_config;
    guint period_ms;
    char *default_queue;
    gboolean leader_elect;
    char *lock_namespace;
    char *lock_name;
    guint lease_duration_ms;
    guint renew_deadline_ms;
    guint retry_period_ms;
    char *listen_address;
    gboolean version;
    guint request_timeout_ms; /* 0: the client's default */
    char *content_type;       /* --kube-api-content-type, NULL: protobuf */
    double gang_event_qps;
    gint gang_event_burst;
    double pod_event_qps;
    gint pod_event_burst;
    char *extender_address;
    char *extender_tls_cert;
    char *extender_tls_key;
    char *extender_client_ca;
    gboolean extender_insecure;
    guint extender_ttl_ms;
    char **extender_scheduler_names;
    gboolean extender_no_requeue;
    gint bind_max_in_flight;
} Flags;

static Flags flags = {.period_ms = 1000,
                      .gang_event_qps = KB_BINDER_GANG_EVENT_QPS,
                      .gang_event_burst = KB_BINDER_GANG_EVENT_BURST,
                      .pod_event_qps = KB_BINDER_POD_EVENT_QPS,
                      .pod_event_burst = KB_BINDER_POD_EVENT_BURST,
                      .bind_max_in_flight = KB_BINDER_DEFAULT_MAX_IN_FLIGHT};

/*
 * A Go-style duration ("500ms", "1s", "2m", "1m30s", "1.5s", "1h") into whole milliseconds,
 * which must be at least 1 ms and at most a day. FALSE with a message naming the flag and value.
 */
static gboolean parse_duration(const char *flag, const char *text, guint *out_ms, GError **error)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"ms", 1},
                 {"s", 1e3},   {"m", 60e3},  {"h", 3600e3}};
    const char *p = text;
    double total = 0;

    if (text == NULL || *text == '\0')
        goto bad;
    while (*p != '\0') {
        char *end = NULL;
        if (!g_ascii_isdigit(*p) && *p != '.')
            goto bad;
        double v = g_ascii_strtod(p, &end);
        if (end == p || !isfinite(v))
            goto bad;
        p = end;
        gsize best = 0;
        double scale = 0;
        /* The longest unit that matches ("ms" before "m"). */
        for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
            gsize n = strlen(units[i].unit);
            if (n > best && strncmp(p, units[i].unit, n) == 0) {
                best = n;
                scale = units[i].ms;
            }
        }
        if (best == 0)
            goto bad;
        p += best;
        total += v * scale;
        if (total > MAX_DURATION_MS)
            break;
    }
    if (total < 1 || total > MAX_DURATION_MS) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "%s: duration \"%s\" is out of range (1ms to 24h)", flag, text);
        return FALSE;
    }
    *out_ms = (guint)llround(total);
    return TRUE;
bad:
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "%s: invalid duration \"%s\" (a number and a unit, e.g. 500ms, 1s, 2m, 1m30s)",
                flag, text != NULL ? text : "");
    return FALSE;
}

static gboolean duration_arg(const char *option_name, const char *value, gpointer data,
                             GError **error)
{
    guint *target = NULL;
    if (strcmp(option_name, "--schedule-period") == 0)
        target = &flags.period_ms;
    else if (strcmp(option_name, "--leader-elect-lease-duration") == 0)
        target = &flags.lease_duration_ms;
    else if (strcmp(option_name, "--leader-elect-renew-deadline") == 0)
        target = &flags.renew_deadline_ms;
    else if (strcmp(option_name, "--extender-reservation-timeout") == 0)
        target = &flags.extender_ttl_ms;
    else if (strcmp(option_name, "--leader-elect-retry-period") == 0)
        target = &flags.retry_period_ms;
    else if (strcmp(option_name, "--request-timeout") == 0)
        target = &flags.request_timeout_ms;
    g_return_val_if_fail(target != NULL, FALSE);
    return parse_duration(option_name, value, target, error);
}

static const GOptionEntry entries[] = {
        {"kubeconfig", 0, 0, G_OPTION_ARG_FILENAME, &flags.kubeconfig,
         "Path to a kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)", "FILE"},
        {"master", 0, 0, G_OPTION_ARG_STRING, &flags.master,
         "API server URL (overrides the kubeconfig's server)", "URL"},
        {"scheduler-name", 0, 0, G_OPTION_ARG_STRING_ARRAY, &flags.scheduler_names,
         "Serve pods with this spec.schedulerName; repeatable (default kube-batchd)", "NAME"},
        {"scheduler-conf", 0, 0, G_OPTION_ARG_FILENAME, &flags.scheduler_conf,
         "Scheduler configuration (actions and plugin tiers; default: built in)", "FILE"},
        {"strict-config", 0, 0, G_OPTION_ARG_NONE, &flags.strict_config,
         "Refuse a --scheduler-conf that names plugins, actions, switches or arguments "
         "kube-batchd does not implement (default: ignore those that do not apply, with a "
         "warning)",
         NULL},
        {"schedule-period", 0, 0, G_OPTION_ARG_CALLBACK, duration_arg,
         "Time between scheduling cycles, e.g. 500ms, 1s, 2m (default 1s)", "DURATION"},
        {"default-queue", 0, 0, G_OPTION_ARG_STRING, &flags.default_queue,
         "Queue of pod groups that name none (default \"default\")", "NAME"},
        {"leader-elect", 0, 0, G_OPTION_ARG_NONE, &flags.leader_elect,
         "Schedule only while holding the leader lease", NULL},
        {"lock-object-namespace", 0, 0, G_OPTION_ARG_STRING, &flags.lock_namespace,
         "Namespace of the leader lease (default kube-system)", "NS"},
        {"lock-object-name", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &flags.lock_name,
         "Name of the leader lease (default kube-batchd)", "NAME"},
        {"leader-elect-lease-duration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_CALLBACK,
         duration_arg, "Lease duration (default 15s)", "DURATION"},
        {"leader-elect-renew-deadline", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_CALLBACK,
         duration_arg, "Renew deadline (default 10s)", "DURATION"},
        {"leader-elect-retry-period", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_CALLBACK, duration_arg,
         "Retry period (default 2s)", "DURATION"},
        {"request-timeout", 0, 0, G_OPTION_ARG_CALLBACK, duration_arg,
         "Give up waiting for an API request's answer after this long (default 30s); a binding "
         "whose answer never came is retried and keeps its room meanwhile",
         "DURATION"},
        {"gang-event-qps", 0, 0, G_OPTION_ARG_DOUBLE, &flags.gang_event_qps,
         "Scheduled events on PodGroups (one per gang, naming its nodes) per second (default 5)",
         "QPS"},
        {"gang-event-burst", 0, 0, G_OPTION_ARG_INT, &flags.gang_event_burst,
         "...and at most this many at once (default 50; 0 with qps 0: none)", "N"},
        {"pod-event-qps", 0, 0, G_OPTION_ARG_DOUBLE, &flags.pod_event_qps,
         "Per-pod Scheduled events of gang members per second (default 1); over budget they "
         "are dropped and counted, bindings never wait for them",
         "QPS"},
        {"pod-event-burst", 0, 0, G_OPTION_ARG_INT, &flags.pod_event_burst,
         "...and at most this many at once (default 10)", "N"},
        {"kube-api-content-type", 0, 0, G_OPTION_ARG_STRING, &flags.content_type,
         "What Bindings are sent as: application/vnd.kubernetes.protobuf (default, as "
         "kube-scheduler; JSON after a 415) or application/json",
         "TYPE"},
        {"bind-max-in-flight", 0, 0, G_OPTION_ARG_INT, &flags.bind_max_in_flight,
         "Bindings on the wire at once (default 64, 1 to 1024; see docs/kube-batchd.md for how it was chosen)",
         "N"},
        {"listen-address", 0, 0, G_OPTION_ARG_STRING, &flags.listen_address,
         "Address of /healthz, /readyz and /metrics (default :8080; empty: none)", "HOST:PORT"},
        {"log-level", 0, 0, G_OPTION_ARG_CALLBACK, kb_log_option_arg,
         "error, warning, info or debug (default info)", "LEVEL"},
        {"version", 0, 0, G_OPTION_ARG_NONE, &flags.version, "Print the version and exit", NULL},
        {"extender-address", 0, 0, G_OPTION_ARG_STRING, &flags.extender_address,
         "Serve kube-scheduler's extender API (filter, prioritize, bind, preempt) here",
         "HOST:PORT"},
        {"extender-tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &flags.extender_tls_cert,
         "Extender over HTTPS: certificate (PEM)", "FILE"},
        {"extender-tls-key", 0, 0, G_OPTION_ARG_FILENAME, &flags.extender_tls_key,
         "Extender over HTTPS: private key (PEM)", "FILE"},
        /* The -file spellings of kube-apiserver/kube-scheduler's own TLS flags, as aliases. */
        {"extender-tls-cert-file", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME,
         &flags.extender_tls_cert, "Same as --extender-tls-cert", "FILE"},
        {"extender-tls-key-file", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME,
         &flags.extender_tls_key, "Same as --extender-tls-key", "FILE"},
        {"extender-client-ca-file", 0, 0, G_OPTION_ARG_FILENAME, &flags.extender_client_ca,
         "Extender callers must present a client certificate signed by this CA (PEM; needs "
         "--extender-tls-cert); others get 401",
         "FILE"},
        {"extender-insecure-allow-unauthenticated", 0, 0, G_OPTION_ARG_NONE,
         &flags.extender_insecure,
         "Without --extender-client-ca-file, serve --extender-address as given instead of on "
         "127.0.0.1: anyone reaching it can bind pods",
         NULL},
        {"extender-scheduler-name", 0, 0, G_OPTION_ARG_STRING_ARRAY,
         &flags.extender_scheduler_names,
         "Extender mode only for pods of this schedulerName (repeat; default: all not served)",
         "NAME"},
        {"extender-no-requeue", 0, 0, G_OPTION_ARG_NONE, &flags.extender_no_requeue,
         "Do not annotate the pods kube-scheduler parked when their gang's plan is made (they "
         "then wait for kube-scheduler's own retry, 60 s or more)",
         NULL},
        {"extender-reservation-timeout", 0, 0, G_OPTION_ARG_CALLBACK, duration_arg,
         "Release a gang's extender reservations not bound within this time (default 60s)",
         "DURATION"},
        {NULL},
};

static void flags_clear(void)
{
    g_free(flags.kubeconfig);
    g_free(flags.master);
    g_strfreev(flags.scheduler_names);
    g_free(flags.scheduler_conf);
    g_free(flags.default_queue);
    g_free(flags.lock_namespace);
    g_free(flags.lock_name);
    g_free(flags.listen_address);
    g_free(flags.content_type);
    g_free(flags.extender_address);
    g_free(flags.extender_tls_cert);
    g_free(flags.extender_tls_key);
    g_free(flags.extender_client_ca);
    g_strfreev(flags.extender_scheduler_names);
}

/* Checks the values GOption cannot. */
static gboolean validate(GError **error)
{
    if (flags.gang_event_qps < 0 || flags.pod_event_qps < 0 || flags.gang_event_burst < 0 ||
        flags.pod_event_burst < 0 || flags.gang_event_qps > 1e6 || flags.pod_event_qps > 1e6) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--gang-event-qps/--pod-event-qps (0 to 1e6) and --gang-event-burst/"
                    "--pod-event-burst (0 or more) must not be negative or huge: %g/%d, %g/%d",
                    flags.gang_event_qps, flags.gang_event_burst, flags.pod_event_qps,
                    flags.pod_event_burst);
        return FALSE;
    }
    if (flags.content_type != NULL && strcmp(flags.content_type, "application/json") != 0 &&
        strcmp(flags.content_type, KB_PROTO_CONTENT_TYPE) != 0) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--kube-api-content-type: \"%s\" is neither %s nor application/json",
                    flags.content_type, KB_PROTO_CONTENT_TYPE);
        return FALSE;
    }
    if (flags.bind_max_in_flight < 1 || flags.bind_max_in_flight > KB_BINDER_MAX_IN_FLIGHT_LIMIT) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--bind-max-in-flight: %d is out of range (1 to %d)", flags.bind_max_in_flight,
                    KB_BINDER_MAX_IN_FLIGHT_LIMIT);
        return FALSE;
    }
    for (guint i = 0; flags.scheduler_names != NULL && flags.scheduler_names[i] != NULL; i++) {
        if (flags.scheduler_names[i][0] == '\0') {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--scheduler-name: empty name");
            return FALSE;
        }
    }
    if (flags.default_queue != NULL && flags.default_queue[0] == '\0') {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--default-queue: empty name");
        return FALSE;
    }
    if (flags.lock_namespace != NULL && flags.lock_namespace[0] == '\0') {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--lock-object-namespace: empty namespace");
        return FALSE;
    }
    if (flags.listen_address != NULL && flags.listen_address[0] != '\0') {
        g_autofree char *host = NULL;
        guint16 port = 0;
        if (!kb_httpd_parse_address(flags.listen_address, &host, &port, error)) {
            g_prefix_error(error, "--listen-address: ");
            return FALSE;
        }
    }
    if ((flags.extender_tls_cert != NULL) != (flags.extender_tls_key != NULL) ||
        (flags.extender_tls_cert != NULL && flags.extender_address == NULL)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--extender-tls-cert and --extender-tls-key go together, with "
                    "--extender-address");
        return FALSE;
    }
    if (flags.extender_client_ca != NULL && flags.extender_insecure) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--extender-client-ca-file and --extender-insecure-allow-unauthenticated "
                    "contradict each other");
        return FALSE;
    }
    if (flags.extender_client_ca != NULL && flags.extender_tls_cert == NULL) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--extender-client-ca-file %s needs --extender-tls-cert and "
                    "--extender-tls-key (client certificates are a TLS feature)",
                    flags.extender_client_ca);
        return FALSE;
    }
    if (flags.extender_address != NULL) {
        g_autofree char *host = NULL;
        guint16 port = 0;
        if (!kb_httpd_parse_address(flags.extender_address, &host, &port, error)) {
            g_prefix_error(error, "--extender-address: ");
            return FALSE;
        }
    }
    return TRUE;
}

typedef struct {
    GMainLoop *loop;
    int signals;
} SignalState;

static gboolean on_signal(gpointer data)
{
    SignalState *st = data;
    if (st->signals++ > 0) {
        g_warning("second signal: exiting without waiting");
        exit(1);
    }
    g_message("signal received: shutting down");
    g_main_loop_quit(st->loop);
    return G_SOURCE_CONTINUE;
}

static int run(KbConf *conf)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = kb_config_from_flags(flags.kubeconfig, flags.master, &error);
    if (config == NULL) {
        kb_conf_free(conf);
        g_printerr("kube-batchd: %s\n", error->message);
        return 2;
    }
    if (flags.request_timeout_ms != 0)
        config->timeout_ms = flags.request_timeout_ms;
    config->json_only = g_strcmp0(flags.content_type, "application/json") == 0;
    KbDaemonOptions opts = {
            .config = config,
            .scheduler_names = (const char *const *)flags.scheduler_names,
            .schedule_period_ms = flags.period_ms,
            .default_queue = flags.default_queue,
            .leader_elect = flags.leader_elect,
            .lock_namespace = flags.lock_namespace,
            .lock_name = flags.lock_name,
            .lease_duration_ms = flags.lease_duration_ms,
            .renew_deadline_ms = flags.renew_deadline_ms,
            .retry_period_ms = flags.retry_period_ms,
            .listen_address = flags.listen_address != NULL ? flags.listen_address : ":8080",
            .bind_max_in_flight = (guint)flags.bind_max_in_flight,
            .event_budgets_set = TRUE,
            .gang_event_qps = flags.gang_event_qps,
            .gang_event_burst = (guint)flags.gang_event_burst,
            .pod_event_qps = flags.pod_event_qps,
            .pod_event_burst = (guint)flags.pod_event_burst,
            .extender_address = flags.extender_address,
            .extender_tls_cert = flags.extender_tls_cert,
            .extender_tls_key = flags.extender_tls_key,
            .extender_client_ca = flags.extender_client_ca,
            .extender_insecure = flags.extender_insecure,
            .extender_scheduler_names = (const char *const *)flags.extender_scheduler_names,
            .extender_reservation_ttl_s = (flags.extender_ttl_ms + 999) / 1000,
            .extender_no_requeue = flags.extender_no_requeue,
    };
    g_autoptr(KbDaemon) daemon = kb_daemon_new(&opts, conf, &error);
    if (daemon == NULL) {
        g_printerr("kube-batchd: %s\n", error->message);
        return 1;
    }
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    SignalState st = {.loop = loop};
    guint sigterm = g_unix_signal_add(SIGTERM, on_signal, &st);
    guint sigint = g_unix_signal_add(SIGINT, on_signal, &st);
    if (kb_daemon_http_port(daemon) != 0)
        g_message("serving /healthz, /readyz and /metrics on port %u", kb_daemon_http_port(daemon));
    kb_daemon_start(daemon);
    g_main_loop_run(loop);
    kb_daemon_stop(daemon, STOP_DEADLINE_MS);
    g_source_remove(sigterm);
    g_source_remove(sigint);
    return 0;
}

int main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) ctx = g_option_context_new("- gang scheduler for Kubernetes");

    kb_log_init(KB_LOG_INFO);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_summary(
            ctx, "Binds the pods whose spec.schedulerName is one of --scheduler-name, each pod\n"
                 "group all at once or not at all, in fair multi-tenant queues.");
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || !validate(&error)) {
        g_printerr("kube-batchd: %s (see --help)\n", error->message);
        flags_clear();
        return 2;
    }
    if (argc > 1) {
        g_printerr("kube-batchd: unexpected argument \"%s\" (see --help)\n", argv[1]);
        flags_clear();
        return 2;
    }
    if (flags.version) {
        printf("kube-batchd %s\n", KB_VERSION);
        flags_clear();
        return 0;
    }
    KbConf *conf;
    if (flags.scheduler_conf != NULL) {
        conf = kb_conf_load_flags(flags.scheduler_conf, flags.strict_config ? KB_CONF_STRICT : 0,
                                  &error);
        if (conf == NULL) {
            g_printerr("kube-batchd: --scheduler-conf: %s\n", error->message);
            flags_clear();
            return 2;
        }
        for (guint i = 0; i < conf->warnings->len; i++)
            g_warning("--scheduler-conf %s: %s", flags.scheduler_conf,
                      (const char *)conf->warnings->pdata[i]);
    } else {
        conf = kb_conf_new_default();
    }
    int rc = run(conf);
    flags_clear();
    return rc;
}
