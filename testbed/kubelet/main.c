/*
 * bin/kb-kubelet: simulated kubelets for the nodes of a file, against any API server (see
 * testbed/kubelet/kbl-kubelet.h). Prints "registered N nodes" on standard output once the nodes
 * are Ready; SIGTERM or SIGINT stop it.
 */
#include <glib-unix.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>

#include "kube/kb-client.h"
#include "kube/kb-log.h"
#include "testbed/kubelet/kbl-kubelet.h"

#ifndef KB_VERSION
#define KB_VERSION "unknown"
#endif

static const char description[] =
        "Registers the nodes of FILE (kb-apiserver's --nodes format: Node objects, or `nodes:`\n"
        "templates with count, name, allocatable, labels, annotations, taints), keeps them Ready\n"
        "(node Leases in kube-node-lease, status), and runs the pods bound to them: Pending ->\n"
        "Running after --start-delay; with the pod annotations sim.kube-batchd.io/run-seconds and\n"
        "sim.kube-batchd.io/exit-code the containers exit with that code after that time\n"
        "(restartPolicy decides between Succeeded/Failed and a restart in place); without them a\n"
        "pod runs until deleted. A deleted pod is confirmed gone (DELETE, grace period 0) after\n"
        "--stop-delay or its grace period, whichever is shorter.\n";

static gboolean on_signal(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_CONTINUE;
}

/* A timer that only wakes the loop up, so that a wait on it sees its deadline. */
static gboolean keep_waking(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
    g_autofree char *master = NULL, *kubeconfig = NULL, *nodes = NULL;
    gint start_ms = 100, stop_ms = 100, heartbeat = 10000, status_s = 60;
    gboolean version = FALSE, dra = FALSE, mig = FALSE;
    kb_log_init(KB_LOG_INFO);
    GOptionEntry entries[] = {
            {"master", 0, 0, G_OPTION_ARG_STRING, &master, "API server URL (overrides kubeconfig)",
             "URL"},
            {"kubeconfig", 0, 0, G_OPTION_ARG_FILENAME, &kubeconfig, "kubeconfig file", "FILE"},
            {"nodes", 0, 0, G_OPTION_ARG_FILENAME, &nodes, "the nodes to run (required)", "FILE"},
            {"start-delay", 0, 0, G_OPTION_ARG_INT, &start_ms,
             "ms from binding to Running (default 100)", "MS"},
            {"stop-delay", 0, 0, G_OPTION_ARG_INT, &stop_ms,
             "ms to confirm a pod deletion (default 100)", "MS"},
            {"heartbeat-interval", 0, 0, G_OPTION_ARG_INT, &heartbeat,
             "ms between node Lease renewals (default 10000)", "MS"},
            {"node-status-interval", 0, 0, G_OPTION_ARG_INT, &status_s,
             "seconds between node status posts (default 60)", "S"},
            {"dra", 0, 0, G_OPTION_ARG_NONE, &dra,
             "publish each node's nvidia.com/gpu as a ResourceSlice of the gpu.nvidia.com DRA "
             "driver (no longer an extended resource) and start a pod with resource claims only "
             "once each is allocated and reserved for it",
             NULL},
            {"mig", 0, 0, G_OPTION_ARG_NONE, &mig,
             "with --dra: publish every GPU as MIG-capable, as NVIDIA's driver does on Kubernetes "
             "1.35+ (a counter set per GPU of memory slices, multiprocessors and memory; a device "
             "per placement of 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb and 7g.80gb consuming them; the "
             "whole GPU consuming all); nodes labelled kube-batchd.io/gpu-sharing=memory publish "
             "shared GPUs instead, with or without --mig",
             NULL},
            {"log-level", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)kb_log_option_arg,
             "error, warning, info (default) or debug", "LEVEL"},
            {"version", 0, 0, G_OPTION_ARG_NONE, &version, "print the version and exit", NULL},
            {NULL},
    };
    g_autoptr(GOptionContext) oc =
            g_option_context_new("--nodes FILE - simulated kubelets against any API server");
    g_option_context_add_main_entries(oc, entries, NULL);
    g_option_context_set_description(oc, description);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(oc, &argc, &argv, &error)) {
        g_printerr("kb-kubelet: %s\n", error->message);
        return 2;
    }
    if (version) {
        printf("kb-kubelet %s\n", KB_VERSION);
        return 0;
    }
    if (mig && !dra) {
        g_printerr("kb-kubelet: --mig needs --dra\n");
        return 2;
    }
    if (start_ms < 0 || stop_ms < 0 || heartbeat <= 0 || status_s <= 0) {
        g_printerr("kb-kubelet: delays must not be negative, intervals must be positive\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    g_autoptr(KbConfig) config = kb_config_from_flags(kubeconfig, master, &error);
    if (config == NULL) {
        g_printerr("kb-kubelet: %s\n", error->message);
        return 2;
    }
    g_autoptr(KbClient) client = kb_client_new(config, &error);
    if (client == NULL) {
        g_printerr("kb-kubelet: %s\n", error->message);
        return 2;
    }
    KblKubeletOptions o = {.nodes_file = nodes,
                           .start_delay_ms = (guint)MAX(start_ms, 1),
                           .stop_delay_ms = (guint)MAX(stop_ms, 1),
                           .heartbeat_ms = (guint)heartbeat,
                           .node_status_ms = (guint)status_s * 1000,
                           .dra = dra,
                           .mig = mig};
    g_autoptr(KblKubelet) k = kbl_kubelet_new(client, &o, &error);
    if (k == NULL) {
        g_printerr("kb-kubelet: %s\n", error->message);
        return 2;
    }
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    guint s1 = g_unix_signal_add(SIGTERM, on_signal, loop);
    guint s2 = g_unix_signal_add(SIGINT, on_signal, loop);
    if (!kbl_kubelet_start(k, &error)) {
        g_printerr("kb-kubelet: %s\n", error->message);
        g_source_remove(s1);
        g_source_remove(s2);
        return 1;
    }
    g_message("kb-kubelet %s: %u nodes on %s", KB_VERSION, kbl_kubelet_n_nodes(k),
              kb_client_server(client));
    printf("registered %u nodes\n", kbl_kubelet_n_nodes(k));
    fflush(stdout);
    g_main_loop_run(loop);
    g_source_remove(s1);
    g_source_remove(s2);
    /* Let the writes in flight end (their callbacks own what they carry: freeing the client with
     * them pending would drop it), at most 5 s; nothing new is sent once stopped. */
    kbl_kubelet_stop(k);
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    guint wake = g_timeout_add(100, keep_waking, NULL);
    while (kb_client_pending(client) > 0 && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(wake);
    guint64 started, finished, deleted;
    kbl_kubelet_counts(k, &started, &finished, &deleted);
    g_message("stopping: %" G_GUINT64_FORMAT " pods started, %" G_GUINT64_FORMAT
              " finished, %" G_GUINT64_FORMAT " deletions confirmed",
              started, finished, deleted);
    g_autofree char *cost = kbl_kubelet_cost(k);
    g_message("cost to the server: %s", cost);
    return 0;
}
