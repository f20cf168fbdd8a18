/*
 * tf-operator: runs TFJobs (kubeflow.org/v1 and v1alpha1) with gang scheduling through
 * kube-batchd. See operator/controller.h for what it watches and writes.
 */
#include <glib-unix.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#include "kube/kb-client.h"
#include "kube/kb-httpd.h"
#include "kube/kb-leader.h"
#include "kube/kb-log.h"
#include "kube/kb-metrics.h"
#include "kube/kb-recorder.h"
#include "operator/controller.h"
#include "operator/tf-webhook.h"

#ifndef KB_VERSION
#define KB_VERSION "unknown"
#endif

typedef struct {
    char *kubeconfig;
    char *master;
    char *namespace_;
    char *gang;
    char *gang_api;
    TfGangApi api;
    char *listen;
    char *lease_namespace;
    char *webhook, *webhook_cert, *webhook_key; /* the conversion webhook (tf-webhook.h) */
    gboolean leader_elect;
    gboolean autoscaling;
    gboolean version;
    gint resync;
    gint autoscale_interval;
} Flags;

typedef struct {
    GMainLoop *loop;
    TfController *controller;
    KbLeader *leader;
    int exit_code;
} Daemon;

static gboolean parse_flags(int *argc, char ***argv, Flags *f, GError **error)
{
    GOptionEntry entries[] = {
            {"kubeconfig", 0, 0, G_OPTION_ARG_FILENAME, &f->kubeconfig, "kubeconfig file", "FILE"},
            {"master", 0, 0, G_OPTION_ARG_STRING, &f->master,
             "API server URL (overrides kubeconfig)", "URL"},
            {"namespace", 0, 0, G_OPTION_ARG_STRING, &f->namespace_,
             "only TFJobs of this namespace (default: all)", "NS"},
            {"gang-scheduler-name", 0, 0, G_OPTION_ARG_STRING, &f->gang,
             "scheduler of gang-scheduled pods; \"\" turns gang scheduling off (default "
             "kube-batchd)",
             "NAME"},
            {"gang-api", 0, 0, G_OPTION_ARG_STRING, &f->gang_api,
             "API of the job's gang: auto (native when the server serves scheduling.k8s.io/"
             "v1beta1, else volcano), native, volcano, kube-batch or x-k8s (default auto)",
             "API"},
            {"leader-elect", 0, 0, G_OPTION_ARG_NONE, &f->leader_elect,
             "run only while holding the Lease tf-operator", NULL},
            {"leader-elect-namespace", 0, 0, G_OPTION_ARG_STRING, &f->lease_namespace,
             "namespace of the Lease (default $POD_NAMESPACE, else kube-system)", "NS"},
            {"listen-address", 0, 0, G_OPTION_ARG_STRING, &f->listen,
             "address of /healthz, /readyz and /metrics (default :8081; \"\" turns it off)",
             "ADDR"},
            {"webhook-address", 0, 0, G_OPTION_ARG_STRING, &f->webhook,
             "serve the TFJob conversion webhook (HTTPS, POST /convert) here (default: none)",
             "HOST:PORT"},
            {"webhook-cert-file", 0, 0, G_OPTION_ARG_FILENAME, &f->webhook_cert,
             "the webhook's TLS certificate (PEM)", "FILE"},
            {"webhook-key-file", 0, 0, G_OPTION_ARG_FILENAME, &f->webhook_key,
             "the webhook's TLS private key (PEM)", "FILE"},
            {"enable-autoscaling", 0, 0, G_OPTION_ARG_NONE, &f->autoscaling,
             "grow and shrink dynamic-worker TFJobs", NULL},
            {"autoscale-interval", 0, 0, G_OPTION_ARG_INT, &f->autoscale_interval,
             "seconds between two scaling decisions of one job (default 30)", "N"},
            {"resync-seconds", 0, 0, G_OPTION_ARG_INT, &f->resync,
             "look at every job at least this often (default 30)", "N"},
            {"log-level", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)kb_log_option_arg,
             "error, warning, info (default) or debug", "LEVEL"},
            {"version", 0, 0, G_OPTION_ARG_NONE, &f->version, "print the version and exit", NULL},
            {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- TFJob operator for kube-batchd");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, argc, argv, error))
        return FALSE;
    return tf_gang_api_parse(f->gang_api != NULL ? f->gang_api : "auto", &f->api, error);
}

static gboolean on_signal(gpointer data)
{
    Daemon *d = data;
    g_message("signal received, shutting down");
    g_main_loop_quit(d->loop);
    return G_SOURCE_CONTINUE;
}

static void started_leading(gpointer data)
{
    Daemon *d = data;
    g_message("became leader");
    tf_controller_set_active(d->controller, TRUE);
}

static void stopped_leading(gpointer data)
{
    Daemon *d = data;
    g_warning("lost leadership; standing by");
    tf_controller_set_active(d->controller, FALSE);
    kb_leader_start(d->leader);
}

static gboolean ready(gpointer data, char **reason)
{
    return tf_controller_ready(data, reason);
}

static KbLeader *start_leader(KbClient *client, const Flags *f, Daemon *d)
{
    g_autofree char *identity = kb_leader_default_identity();
    const char *ns = f->lease_namespace != NULL  ? f->lease_namespace
                     : g_getenv("POD_NAMESPACE") ? g_getenv("POD_NAMESPACE")
                                                 : "kube-system";
    KbLeaderOptions lo = {.namespace_ = ns,
                          .name = "tf-operator",
                          .identity = identity,
                          .on_started_leading = started_leading,
                          .on_stopped_leading = stopped_leading,
                          .user_data = d};
    KbLeader *leader = kb_leader_new(client, &lo);
    g_message("leader election on lease %s/tf-operator as %s", ns, identity);
    return leader;
}

static int run(const Flags *f)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = kb_config_from_flags(f->kubeconfig, f->master, &error);
    if (config == NULL) {
        g_printerr("tf-operator: %s\n", error->message);
        return 1;
    }
    g_autoptr(KbClient) client = kb_client_new(config, &error);
    if (client == NULL) {
        g_printerr("tf-operator: %s\n", error->message);
        return 1;
    }
    g_autoptr(KbMetrics) metrics = kb_metrics_new();
    g_autoptr(KbRecorder) recorder = kb_recorder_new(client, "tf-operator");
    TfControllerOptions co = {
            .namespace_ = f->namespace_,
            .gang_scheduler = f->gang != NULL ? f->gang : "kube-batchd",
            .gang_api = f->api,
            .enable_autoscaling = f->autoscaling,
            .resync_seconds = f->resync > 0 ? (guint)f->resync : 30,
            .autoscale_seconds = f->autoscale_interval > 0 ? (guint)f->autoscale_interval : 30};
    Daemon d = {.loop = g_main_loop_new(NULL, FALSE)};
    d.controller = tf_controller_new(client, recorder, metrics, &co);
    g_autoptr(KbHttpd) httpd = NULL;
    const char *listen = f->listen != NULL ? f->listen : ":8081";
    if (*listen != '\0') {
        httpd = kb_httpd_new(listen, metrics, &error);
        if (httpd == NULL) {
            g_printerr("tf-operator: --listen-address %s: %s\n", listen, error->message);
            tf_controller_free(d.controller);
            g_main_loop_unref(d.loop);
            return 1;
        }
        kb_httpd_set_ready_func(httpd, ready, d.controller);
        g_message("serving /healthz, /readyz and /metrics on port %u", kb_httpd_port(httpd));
    }
    g_autoptr(TfWebhook) webhook = NULL;
    if (f->webhook != NULL && *f->webhook != '\0') {
        webhook = tf_webhook_new(f->webhook, f->webhook_cert, f->webhook_key, metrics, &error);
        if (webhook == NULL) {
            g_printerr("tf-operator: --webhook-address %s: %s\n", f->webhook, error->message);
            tf_controller_free(d.controller);
            g_main_loop_unref(d.loop);
            return 1;
        }
        g_message("serving the TFJob conversion webhook (HTTPS, /convert) on port %u",
                  tf_webhook_port(webhook));
    }
    g_message("tf-operator %s: server %s, gang scheduler \"%s\" (gang API %s), namespace %s%s",
              KB_VERSION, kb_client_server(client), co.gang_scheduler,
              tf_gang_api_to_string(co.gang_api), f->namespace_ != NULL ? f->namespace_ : "(all)",
              f->autoscaling ? ", autoscaling on" : "");
    tf_controller_set_active(d.controller, !f->leader_elect);
    tf_controller_start(d.controller);
    if (f->leader_elect) {
        d.leader = start_leader(client, f, &d);
        kb_leader_start(d.leader);
    }
    guint s1 = g_unix_signal_add(SIGINT, on_signal, &d);
    guint s2 = g_unix_signal_add(SIGTERM, on_signal, &d);
    g_main_loop_run(d.loop);
    g_source_remove(s1);
    g_source_remove(s2);
    if (d.leader != NULL) {
        kb_leader_release(d.leader);
        kb_leader_free(d.leader);
    }
    tf_controller_free(d.controller);
    g_main_loop_unref(d.loop);
    return d.exit_code;
}

int main(int argc, char **argv)
{
    Flags f = {0};
    g_autoptr(GError) error = NULL;
    kb_log_init(KB_LOG_INFO);
    if (!parse_flags(&argc, &argv, &f, &error)) {
        g_printerr("tf-operator: %s\n", error->message);
        return 2;
    }
    if (f.version) {
        printf("tf-operator %s\n", KB_VERSION);
        return 0;
    }
    int rc = run(&f);
    g_free(f.kubeconfig);
    g_free(f.master);
    g_free(f.namespace_);
    g_free(f.gang);
    g_free(f.gang_api);
    g_free(f.listen);
    g_free(f.lease_namespace);
    g_free(f.webhook);
    g_free(f.webhook_cert);
    g_free(f.webhook_key);
    return rc;
}
