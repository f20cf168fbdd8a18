/*
 * Exit-code classification and per-policy restart decisions (see tf-replica.h).
 */
#include "operator/tf-replica.h"

#include <string.h>

TfExitClass tf_exit_classify(int code)
{
    switch (code) {
    case 0:
        return TF_EXIT_SUCCESS;
    case 1:
    case 2:
    case 126:
    case 127:
    case 128:
    case 139:
        return TF_EXIT_PERMANENT;
    case 130:
    case 137:
    case 143:
        return TF_EXIT_RETRYABLE;
    case 138:
        return TF_EXIT_USER_RETRYABLE;
    default:
        return TF_EXIT_UNDEFINED;
    }
}

const char *tf_exit_describe(int code)
{
    switch (code) {
    case 0:
        return "success";
    case 1:
        return "general error";
    case 2:
        return "misuse of shell builtins";
    case 126:
        return "command invoked cannot execute";
    case 127:
        return "command not found";
    case 128:
        return "invalid argument to exit";
    case 139:
        return "container terminated by SIGSEGV";
    case 130:
        return "container terminated by Control-C";
    case 137:
        return "container received a SIGKILL";
    case 143:
        return "container received a SIGTERM";
    case 138:
        return "reserved for user-specified retryable errors";
    default:
        return "undefined exit code";
    }
}

gboolean tf_exit_is_retryable(const KbTfJob *job, int code)
{
    TfExitClass c = tf_exit_classify(code);
    if (c == TF_EXIT_RETRYABLE)
        return TRUE;
    /* The annotation may name 138 (the seed's reserved code) or any other code. */
    return c != TF_EXIT_SUCCESS && job != NULL && kb_tfjob_code_is_user_retryable(job, code);
}

gboolean tf_replica_exit_code(const KbPod *pod, int *code)
{
    const KbContainerStatus *first = NULL;
    for (guint i = 0; i < pod->n_container_statuses; i++) {
        const KbContainerStatus *cs = &pod->container_statuses[i];
        if (!cs->terminated)
            continue;
        if (g_strcmp0(cs->name, KB_TF_DEFAULT_CONTAINER) == 0) {
            *code = cs->exit_code;
            return TRUE;
        }
        if (first == NULL)
            first = cs;
    }
    if (first == NULL)
        return FALSE;
    *code = first->exit_code;
    return TRUE;
}

gint32 tf_replica_kubelet_restarts(const KbPod *pod)
{
    gint64 sum = 0;
    for (guint i = 0; i < pod->n_container_statuses; i++)
        sum += MAX(pod->container_statuses[i].restart_count, 0);
    return (gint32)MIN(sum, G_MAXINT32);
}

static char *exit_text(int code, const char *verdict)
{
    TfExitClass c = tf_exit_classify(code);
    if (c == TF_EXIT_UNDEFINED)
        return g_strdup_printf("exit code %d (undefined exit code, no guarantee): %s", code,
                               verdict);
    if (c == TF_EXIT_USER_RETRYABLE && strcmp(verdict, "permanent") == 0)
        return g_strdup_printf("exit code %d (%s; not declared in %s): %s", code,
                               tf_exit_describe(code), KB_TF_ANNOTATION_RETRYABLE_CODES, verdict);
    return g_strdup_printf("exit code %d (%s): %s", code, tf_exit_describe(code), verdict);
}

TfReplicaDecision tf_replica_decide(const KbTfJob *job, KbTfRestartPolicy policy, const KbPod *pod,
                                    char **why)
{
    int code = 0;
    gboolean has_code;

    *why = NULL;
    if (pod->phase != KB_POD_FAILED)
        return TF_REPLICA_KEEP;
    has_code = tf_replica_exit_code(pod, &code);
    switch (policy) {
    case KB_TF_RESTART_NEVER:
        *why = has_code ? exit_text(code, "permanent (restartPolicy Never)")
                        : g_strdup("pod failed (restartPolicy Never)");
        return TF_REPLICA_FAIL;
    case KB_TF_RESTART_ALWAYS:
    case KB_TF_RESTART_ON_FAILURE:
        /* The kubelet restarts containers in place; a Failed pod was evicted or lost its node. */
        *why = g_strdup_printf("pod failed as a whole (restartPolicy %s)",
                               kb_tf_restart_policy_to_string(policy));
        return TF_REPLICA_RECREATE;
    case KB_TF_RESTART_EXIT_CODE:
    default:
        if (!has_code) {
            /* No container ended: evicted, node lost. A system failure, worth a retry. */
            *why = g_strdup("pod failed without an exit code (evicted or node lost): retryable");
            return TF_REPLICA_RECREATE;
        }
        if (tf_exit_is_retryable(job, code)) {
            *why = exit_text(code, "retryable");
            return TF_REPLICA_RECREATE;
        }
        *why = exit_text(code, "permanent");
        return TF_REPLICA_FAIL;
    }
}
