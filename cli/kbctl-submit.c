/*
 * kbctl submit tf: a kubeflow.org/v1 TFJob for kube-batchd, built from flags.
 *
 * Every replica's pod asks for the kube-batchd scheduler, so tf-operator makes the job a gang
 * (a PodGroup whose minMember is every replica, or chief + PS + --min-workers for an elastic
 * job). Queue and priority class go to runPolicy.schedulingPolicy, the v1 fields tf-operator and
 * Kubeflow's training-operator both read; the elastic bounds go to the kube-batchd.io/min-workers
 * and max-workers annotations (see docs/tf-operator.md). Restart policy ExitCode: retryable exit
 * codes restart a replica, permanent ones fail the job.
 */
#include "cli/kbctl-submit.h"

#include <string.h>

#include "cli/kbctl-out.h"
#include "kube/kb-quantity.h"
#include "kube/kb-tfjob.h"

#define MAX_REPLICAS 10000
#define MAX_GPUS     64
#define SYNC_VOLUME  "sync-dir"

static gboolean dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return FALSE;
    for (size_t i = 0; i < n; i++)
        if (!g_ascii_islower(s[i]) && !g_ascii_isdigit(s[i]) && s[i] != '-')
            return FALSE;
    return TRUE;
}

/* "KEY=VALUE" pairs of flag @flag into @out (a new object per key); usage errors name the flag. */
static gboolean key_values(const char *const *items, const char *flag, json_object *out,
                           GError **error)
{
    for (guint i = 0; items[i] != NULL; i++) {
        const char *eq = strchr(items[i], '=');
        if (eq == NULL || eq == items[i]) {
            kbctl_usage_error(error, "--%s \"%s\": expected KEY=VALUE", flag, items[i]);
            return FALSE;
        }
        g_autofree char *key = g_strndup(items[i], eq - items[i]);
        json_object_object_add(out, key, json_object_new_string(eq + 1));
    }
    return TRUE;
}

static gboolean check_quantity(const char *flag, const char *value, GError **error)
{
    KbQuantity q;
    g_autoptr(GError) local = NULL;
    if (value == NULL)
        return TRUE;
    if (!kb_quantity_parse(value, &q, &local)) {
        kbctl_usage_error(error, "--%s \"%s\": not a quantity (e.g. 4, 500m, 16Gi)", flag, value);
        return FALSE;
    }
    return TRUE;
}

gboolean kbctl_submit_parse(const KbctlArgs *args, KbctlSubmit *s, GError **error)
{
    memset(s, 0, sizeof *s);
    s->name = kbctl_args_str(args, "name");
    s->image = kbctl_args_str(args, "image");
    if (s->name == NULL) {
        kbctl_usage_error(error, "--name is required");
        return FALSE;
    }
    if (!dns_label(s->name) || strlen(s->name) > 48) {
        kbctl_usage_error(error,
                          "--name \"%s\": must be a DNS label of at most 48 characters (lower-case "
                          "letters, digits, '-'; pods are named NAME-worker-N)",
                          s->name);
        return FALSE;
    }
    if (s->image == NULL || *s->image == '\0') {
        kbctl_usage_error(error, "--image is required");
        return FALSE;
    }
    if (!kbctl_args_int(args, "workers", 1, 0, MAX_REPLICAS, &s->workers, error) ||
        !kbctl_args_int(args, "ps", 0, 0, MAX_REPLICAS, &s->ps, error) ||
        !kbctl_args_int(args, "gpus", 0, 0, MAX_GPUS, &s->gpus, error) ||
        !kbctl_args_int(args, "min-workers", -1, 1, MAX_REPLICAS, &s->min_workers, error) ||
        !kbctl_args_int(args, "max-workers", -1, 1, MAX_REPLICAS, &s->max_workers, error))
        return FALSE;
    s->chief = kbctl_args_bool(args, "chief");
    if (s->workers + s->ps + (s->chief ? 1 : 0) == 0) {
        kbctl_usage_error(error, "--workers 0 with no --ps and no --chief: the job has no replica");
        return FALSE;
    }
    if (s->min_workers >= 0 || s->max_workers >= 0) {
        if (s->min_workers < 0)
            s->min_workers = MIN(s->workers, s->max_workers);
        if (s->max_workers < 0)
            s->max_workers = MAX(s->workers, s->min_workers);
        if (s->min_workers > s->workers || s->workers > s->max_workers) {
            kbctl_usage_error(error,
                              "--min-workers %" G_GINT64_FORMAT " --workers %" G_GINT64_FORMAT
                              " --max-workers %" G_GINT64_FORMAT ": need min <= workers <= max",
                              s->min_workers, s->workers, s->max_workers);
            return FALSE;
        }
    }
    s->cpu = kbctl_args_str(args, "cpu");
    s->memory = kbctl_args_str(args, "memory");
    s->queue = kbctl_args_str(args, "queue");
    s->priority = kbctl_args_str(args, "priority");
    s->sync_dir = kbctl_args_str(args, "sync-dir");
    s->scheduler = kbctl_args_str(args, "scheduler-name");
    if (s->scheduler == NULL)
        s->scheduler = KBCTL_SCHEDULER_NAME;
    if (!check_quantity("cpu", s->cpu, error) || !check_quantity("memory", s->memory, error))
        return FALSE;
    if (s->sync_dir != NULL && s->sync_dir[0] != '/') {
        kbctl_usage_error(error, "--sync-dir \"%s\": must be an absolute path", s->sync_dir);
        return FALSE;
    }
    s->env = json_object_new_object();
    s->annotations = json_object_new_object();
    if (!key_values(kbctl_args_list(args, "env"), "env", s->env, error) ||
        !key_values(kbctl_args_list(args, "annotation"), "annotation", s->annotations, error))
        return FALSE;
    s->command = kbctl_args_rest(args, NULL);
    return TRUE;
}

void kbctl_submit_clear(KbctlSubmit *s)
{
    g_clear_pointer(&s->env, json_object_put);
    g_clear_pointer(&s->annotations, json_object_put);
}

static json_object *container(const KbctlSubmit *s, gboolean gpus)
{
    json_object *c = json_object_new_object();
    kbctl_json_set_str(c, "name", KB_TF_DEFAULT_CONTAINER);
    kbctl_json_set_str(c, "image", s->image);
    if (s->command != NULL && s->command[0] != NULL) {
        json_object *cmd = json_object_new_array();
        for (guint i = 0; s->command[i] != NULL; i++)
            json_object_array_add(cmd, json_object_new_string(s->command[i]));
        json_object_object_add(c, "command", cmd);
    }
    if (s->sync_dir != NULL)
        kbctl_json_set_str(c, "workingDir", s->sync_dir);
    if (json_object_object_length(s->env) > 0) {
        json_object *env = json_object_new_array();
        json_object_object_foreach(s->env, k, v)
        {
            json_object *e = json_object_new_object();
            kbctl_json_set_str(e, "name", k);
            json_object_object_add(e, "value", json_object_get(v));
            json_object_array_add(env, e);
        }
        json_object_object_add(c, "env", env);
    }
    json_object *ports = json_object_new_array();
    json_object *port = json_object_new_object();
    kbctl_json_set_str(port, "name", "tfjob-port");
    kbctl_json_set_int(port, "containerPort", KB_TF_DEFAULT_PORT);
    json_object_array_add(ports, port);
    json_object_object_add(c, "ports", ports);
    json_object *limits = json_object_new_object();
    if (s->cpu != NULL)
        kbctl_json_set_str(limits, "cpu", s->cpu);
    if (s->memory != NULL)
        kbctl_json_set_str(limits, "memory", s->memory);
    if (gpus && s->gpus > 0)
        kbctl_json_set_int(limits, KB_RESOURCE_GPU_NAME, s->gpus);
    if (json_object_object_length(limits) > 0) {
        json_object *res = json_object_new_object();
        json_object_object_add(res, "limits", limits);
        json_object_object_add(c, "resources", res);
    } else {
        json_object_put(limits);
    }
    if (s->sync_dir != NULL) {
        json_object *mounts = json_object_new_array();
        json_object *m = json_object_new_object();
        kbctl_json_set_str(m, "name", SYNC_VOLUME);
        kbctl_json_set_str(m, "mountPath", s->sync_dir);
        json_object_array_add(mounts, m);
        json_object_object_add(c, "volumeMounts", mounts);
    }
    return c;
}

static json_object *replica(const KbctlSubmit *s, gint64 replicas, gboolean gpus)
{
    json_object *r = json_object_new_object();
    kbctl_json_set_int(r, "replicas", replicas);
    kbctl_json_set_str(r, "restartPolicy", "ExitCode");
    json_object *tmpl = json_object_new_object();
    if (json_object_object_length(s->annotations) > 0) {
        json_object *meta = json_object_new_object();
        json_object *ann = NULL;
        json_object_deep_copy(s->annotations, &ann, NULL);
        json_object_object_add(meta, "annotations", ann);
        json_object_object_add(tmpl, "metadata", meta);
    }
    json_object *spec = json_object_new_object();
    kbctl_json_set_str(spec, "schedulerName", s->scheduler);
    json_object *containers = json_object_new_array();
    json_object_array_add(containers, container(s, gpus));
    json_object_object_add(spec, "containers", containers);
    if (s->sync_dir != NULL) {
        json_object *vols = json_object_new_array();
        json_object *v = json_object_new_object();
        json_object *hp = json_object_new_object();
        kbctl_json_set_str(v, "name", SYNC_VOLUME);
        kbctl_json_set_str(hp, "path", s->sync_dir);
        json_object_object_add(v, "hostPath", hp);
        json_object_array_add(vols, v);
        json_object_object_add(spec, "volumes", vols);
    }
    json_object_object_add(tmpl, "spec", spec);
    json_object_object_add(r, "template", tmpl);
    return r;
}

json_object *kbctl_submit_tfjob(const KbctlSubmit *s, const char *namespace_)
{
    json_object *job = json_object_new_object();
    kbctl_json_set_str(job, "apiVersion", "kubeflow.org/v1");
    kbctl_json_set_str(job, "kind", "TFJob");
    json_object *meta = json_object_new_object();
    kbctl_json_set_str(meta, "name", s->name);
    kbctl_json_set_str(meta, "namespace", namespace_);
    json_object *labels = json_object_new_object();
    kbctl_json_set_str(labels, "app.kubernetes.io/managed-by", "kbctl");
    json_object_object_add(meta, "labels", labels);
    gboolean elastic = s->min_workers >= 0;
    if (elastic) {
        json_object *ann = json_object_new_object();
        g_autofree char *min = g_strdup_printf("%" G_GINT64_FORMAT, s->min_workers);
        g_autofree char *max = g_strdup_printf("%" G_GINT64_FORMAT, s->max_workers);
        kbctl_json_set_str(ann, KB_TF_ANNOTATION_MIN_WORKERS, min);
        kbctl_json_set_str(ann, KB_TF_ANNOTATION_MAX_WORKERS, max);
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(job, "metadata", meta);
    json_object *spec = json_object_new_object();
    if (elastic)
        json_object_object_add(spec, "enableDynamicWorker", json_object_new_boolean(TRUE));
    json_object *policy = json_object_new_object();
    if (s->queue != NULL)
        kbctl_json_set_str(policy, "queue", s->queue);
    if (s->priority != NULL)
        kbctl_json_set_str(policy, "priorityClass", s->priority);
    if (elastic)
        kbctl_json_set_int(policy, "minAvailable", s->min_workers + s->ps + (s->chief ? 1 : 0));
    if (json_object_object_length(policy) > 0) {
        json_object *run = json_object_new_object();
        json_object_object_add(run, "schedulingPolicy", policy);
        json_object_object_add(spec, "runPolicy", run);
    } else {
        json_object_put(policy);
    }
    json_object *specs = json_object_new_object();
    if (s->chief)
        json_object_object_add(specs, "Chief", replica(s, 1, TRUE));
    if (s->ps > 0)
        json_object_object_add(specs, "PS", replica(s, s->ps, FALSE));
    if (s->workers > 0)
        json_object_object_add(specs, "Worker", replica(s, s->workers, TRUE));
    json_object_object_add(spec, "tfReplicaSpecs", specs);
    json_object_object_add(job, "spec", spec);
    return job;
}

static void print_created(Kbctl *k, const KbctlSubmit *s, const char *ns)
{
    gint64 gpus = s->gpus * (s->workers + (s->chief ? 1 : 0));
    fprintf(k->out, "tfjob.kubeflow.org/%s created in namespace %s: ", s->name, ns);
    if (s->chief)
        fprintf(k->out, "1 chief, ");
    if (s->ps > 0)
        fprintf(k->out, "%" G_GINT64_FORMAT " ps, ", s->ps);
    fprintf(k->out, "%" G_GINT64_FORMAT " workers", s->workers);
    if (s->gpus > 0)
        fprintf(k->out, " x %" G_GINT64_FORMAT " GPUs", s->gpus);
    fprintf(k->out, " (%" G_GINT64_FORMAT " GPUs in all), queue %s", gpus,
            s->queue != NULL ? s->queue : "default");
    if (s->min_workers >= 0)
        fprintf(k->out, ", elastic %" G_GINT64_FORMAT "-%" G_GINT64_FORMAT " workers",
                s->min_workers, s->max_workers);
    fprintf(k->out, "\nFollow it with: kbctl get %s%s%s\n", s->name,
            strcmp(ns, "default") != 0 ? " -n " : "", strcmp(ns, "default") != 0 ? ns : "");
}

gboolean kbctl_cmd_submit_tf(Kbctl *k, GError **error)
{
    guint n_pos = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n_pos);
    if (n_pos > 0) {
        kbctl_usage_error(error, "unexpected argument \"%s\" (the command goes after \"--\")",
                          pos[0]);
        return FALSE;
    }
    g_auto(KbctlSubmit) s = {0};
    if (!kbctl_submit_parse(k->args, &s, error))
        return FALSE;
    const char *ns = kbctl_namespace(k);
    g_autoptr(KbctlJson) job = kbctl_submit_tfjob(&s, ns);
    if (kbctl_args_bool(k->args, "dry-run")) {
        kbctl_print_object(k->out, k->output == KBCTL_OUT_JSON ? KBCTL_OUT_JSON : KBCTL_OUT_YAML,
                           job);
        return TRUE;
    }
    KbClient *c = kbctl_client(k, error);
    if (c == NULL)
        return FALSE;
    GError *local = NULL;
    g_autoptr(KbctlJson) created = kb_client_create(c, &kb_type_tfjobs_v1, ns, job, &local);
    if (created == NULL) {
        if (g_error_matches(local, KB_ERROR, KB_ERROR_ALREADY_EXISTS))
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED,
                        "tfjob %s/%s: already exists (kbctl delete %s first, or choose another "
                        "--name)",
                        ns, s.name, s.name);
        else
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED, "tfjob %s/%s: %s", ns, s.name,
                        kbctl_error_message(local));
        g_error_free(local);
        return FALSE;
    }
    if (k->output == KBCTL_OUT_JSON || k->output == KBCTL_OUT_YAML)
        kbctl_print_object(k->out, k->output, created);
    else if (k->output == KBCTL_OUT_NAME)
        fprintf(k->out, "tfjob.kubeflow.org/%s\n", s.name);
    else
        print_created(k, &s, ns);
    return TRUE;
}
