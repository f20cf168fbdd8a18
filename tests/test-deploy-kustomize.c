/*
 * deploy/ as an operator installs it: `kubectl apply -k` of the default install and of each
 * overlay (deploy/overlays/: volcano-crds, ha, extender, monitoring) against bin/kb-apiserver
 * with RBAC, checking what each one changes on the server; then kube-batchd and tf-operator run
 * with the command and arguments of the Deployments `kubectl kustomize deploy/` builds (the
 * ConfigMap volume written where the Deployment mounts it), each as its ServiceAccount, and a
 * gang binds. The monitoring overlay's rules pass `promtool check rules`, and every metric its
 * rules and its dashboard query is one the running daemons expose on /metrics.
 *
 * Skipped without kubectl; the promtool case is skipped, loudly, without promtool (Debian's
 * prometheus package: make deps installs it).
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-cluster.h"
#include "tests/lib/kb-test-daemon.h"
#include "tests/lib/kb-test-util.h"

typedef struct {
    KbTestCluster *cluster;
    KbTestDaemon *scheduler;
    KbTestDaemon *operator_;
    char *conf_dir;   /* the ConfigMap volumes of the built Deployments */
    guint sched_port; /* their --listen-address, moved to 127.0.0.1 */
    guint oper_port;
    json_object *rules;     /* the PrometheusRule's spec, as applied */
    json_object *dashboard; /* the dashboard ConfigMap's JSON, as applied */
    gboolean ready;
    gboolean daemons_ready;
} Env;

static char *src(const char *rel)
{
    return g_build_filename(kb_test_src_dir(), rel, NULL);
}

/* `kubectl ARGS` as the admin (ARGS NULL-terminated); a non-zero exit fails the test. Returns
 * standard output (newly allocated). */
static char *admin(Env *e, const char *stdin_text, const char *first, ...)
{
    int st = -1;
    va_list ap;
    va_start(ap, first);
    char *out =
            kb_test_cluster_kubectl_valist(e->cluster, KB_TEST_ADMIN, stdin_text, &st, first, ap);
    va_end(ap);
    g_assert_cmpint(st, ==, 0);
    return out;
}

/* The same, the output parsed as JSON (new reference). */
static json_object *admin_json(Env *e, const char *first, ...)
{
    int st = -1;
    va_list ap;
    va_start(ap, first);
    g_autofree char *out =
            kb_test_cluster_kubectl_valist(e->cluster, KB_TEST_ADMIN, NULL, &st, first, ap);
    va_end(ap);
    g_assert_cmpint(st, ==, 0);
    json_object *obj = json_tokener_parse(out);
    g_assert_nonnull(obj);
    return obj;
}

/* `kubectl apply -k @rel`, retried while the CRDs it creates are not served yet (the objects of
 * a new CRD are refused by the first apply, as on any cluster). */
static void apply_k(Env *e, const char *rel)
{
    g_autofree char *path = src(rel);
    for (int i = 0; i < 60; i++) {
        int st = -1;
        g_autofree char *out = NULL;
        g_autoptr(GError) error = NULL;
        g_assert_true(kb_test_cluster_kubectl(e->cluster, KB_TEST_ADMIN,
                                              (const char *const[]){"apply", "-k", path, NULL},
                                              NULL, &out, NULL, &st, &error));
        if (st == 0)
            return;
        g_usleep(500 * 1000);
    }
    g_test_fail_printf("kubectl apply -k %s kept failing", rel);
}

static void put_json(gpointer obj)
{
    json_object_put(obj);
}

/* The objects `kubectl kustomize @rel` builds, as JSON (array owned by the caller). */
static GPtrArray *built(Env *e, const char *rel)
{
    g_autofree char *path = src(rel);
    g_autofree char *yaml = admin(e, NULL, "kustomize", path, NULL);
    GPtrArray *objs = g_ptr_array_new_with_free_func(put_json);
    g_auto(GStrv) docs = g_strsplit(yaml, "\n---\n", -1);
    for (guint i = 0; docs[i] != NULL; i++) {
        g_autoptr(GError) error = NULL;
        json_object *doc = kas_yaml_to_json(docs[i], strlen(docs[i]), &error);
        g_assert_no_error(error);
        g_ptr_array_add(objs, doc);
    }
    return objs;
}

static json_object *find(GPtrArray *objs, const char *kind, const char *name)
{
    for (guint i = 0; i < objs->len; i++) {
        json_object *o = objs->pdata[i];
        if (g_strcmp0(kas_json_get_string(o, "kind"), kind) == 0 &&
            g_strcmp0(kas_json_get_string(o, "metadata.name"), name) == 0)
            return o;
    }
    return NULL;
}

static char *file_text(const char *rel)
{
    g_autofree char *path = src(rel);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/* The CRD names of deploy/base/crds/ (every file, whether the kustomization lists it or not). */
static GPtrArray *crd_names(void)
{
    g_autofree char *dir = src("deploy/base/crds");
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (const char *f = g_dir_read_name(d); f != NULL; f = g_dir_read_name(d)) {
        if (!g_str_has_suffix(f, ".yaml"))
            continue;
        g_autofree char *rel = g_build_filename("deploy/base/crds", f, NULL);
        g_autofree char *text = file_text(rel);
        g_auto(GStrv) docs = g_strsplit(text, "\n---\n", -1);
        for (guint i = 0; docs[i] != NULL; i++) {
            json_object *doc = kas_yaml_to_json(docs[i], strlen(docs[i]), NULL);
            if (doc != NULL &&
                g_strcmp0(kas_json_get_string(doc, "kind"), "CustomResourceDefinition") == 0)
                g_ptr_array_add(names, g_strdup(kas_json_get_string(doc, "metadata.name")));
            json_object_put(doc);
        }
    }
    return names;
}

/* ---- setup ---------------------------------------------------------------------------------- */

static void test_setup(gconstpointer data)
{
    Env *e = (Env *)data;
    g_autoptr(GError) error = NULL;
    g_autofree char *nodes = src("tests/data/apiserver/nodes.yaml");
    const char *kas_args[] = {"--simulate-kubelet", "--nodes", nodes, NULL};
    e->cluster = kb_test_cluster_start(KB_TEST_CLUSTER_KAS, kas_args, &error);
    g_assert_no_error(error);
    e->ready = TRUE;
}

static gboolean skip_unless(gboolean ok, const char *why)
{
    if (ok)
        return FALSE;
    g_test_skip(why);
    return TRUE;
}

/* ---- the overlays ---------------------------------------------------------------------------- */

/*
 * A cluster that runs Volcano: its CRDs and default queue are there first (created, not
 * applied, and marked). The overlay installs the rest and leaves Volcano's objects alone: no
 * kubectl last-applied annotation on them, the queue's weight unchanged.
 */
static void test_volcano_crds(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->ready, "the cluster did not start"))
        return;
    const char *files[] = {"deploy/base/crds/podgroup-volcano.yaml", "deploy/base/crds/queue-volcano.yaml"};
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *text = file_text(files[i]);
        g_autoptr(GString) s = g_string_new(text);
        g_string_replace(s, "\nmetadata:\n", "\nmetadata:\n  labels: {installed-by: volcano}\n", 1);
        g_free(admin(e, s->str, "create", "-f", "-", NULL));
    }
    const char volcano_queue[] =
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
            "metadata: {name: default}\nspec: {weight: 7, reclaimable: true}\n";
    int st = -1;
    for (int i = 0; i < 60 && st != 0; i++) {
        g_autofree char *out = NULL;
        g_autoptr(GError) error = NULL;
        g_assert_true(kb_test_cluster_kubectl(e->cluster, KB_TEST_ADMIN,
                                              (const char *const[]){"create", "-f", "-", NULL},
                                              volcano_queue, &out, NULL, &st, &error));
        if (st != 0)
            g_usleep(500 * 1000);
    }
    g_assert_cmpint(st, ==, 0);
    g_autoptr(GPtrArray) objs = built(e, "deploy/overlays/volcano-crds");
    g_assert_null(find(objs, "CustomResourceDefinition", "podgroups.scheduling.volcano.sh"));
    g_assert_null(find(objs, "CustomResourceDefinition", "queues.scheduling.volcano.sh"));
    g_assert_null(find(objs, "Queue", "default"));
    g_assert_nonnull(find(objs, "CustomResourceDefinition", "tfjobs.kubeflow.org"));
    apply_k(e, "deploy/overlays/volcano-crds");
    const char *crds[] = {"podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"};
    for (guint i = 0; i < G_N_ELEMENTS(crds); i++) {
        json_object *crd = admin_json(e, "get", "crd", crds[i], "-o", "json", NULL);
        g_assert_cmpstr(kas_json_get_string(crd, "metadata.labels.installed-by"), ==, "volcano");
        json_object *ann = kas_json_get(crd, "metadata.annotations");
        g_assert_true(ann == NULL ||
                      !json_object_object_get_ex(
                              ann, "kubectl.kubernetes.io/last-applied-configuration", NULL));
        json_object_put(crd);
    }
    g_autofree char *weight = admin(e, NULL, "get", "queues.scheduling.volcano.sh", "default", "-o",
                                    "jsonpath={.spec.weight}", NULL);
    g_assert_cmpstr(weight, ==, "7");
    /* What it did install: tf-operator's CRD, by apply. */
    g_autofree char *tf = admin(e, NULL, "get", "crd", "tfjobs.kubeflow.org", "-o",
                                "jsonpath={.metadata.annotations}", NULL);
    g_assert_nonnull(strstr(tf, "last-applied-configuration"));
}

static char *deploy_field(Env *e, const char *name, const char *jsonpath)
{
    g_autofree char *jp = g_strdup_printf("jsonpath=%s", jsonpath);
    return admin(e, NULL, "get", "deployment", name, "-n", "kube-batchd", "-o", jp, NULL);
}

/* The default install: every CRD of deploy/base/crds, RBAC, the queue, the ConfigMap from
 * deploy/base/scheduler.conf, one replica of each daemon, no extender. */
static void test_default(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->ready, "the cluster did not start"))
        return;
    apply_k(e, "deploy");
    g_autofree char *crds = admin(e, NULL, "get", "crd", "-o", "name", NULL);
    g_autoptr(GPtrArray) names = crd_names();
    g_assert_cmpuint(names->len, >=, 6);
    g_autoptr(GPtrArray) objs = built(e, "deploy");
    for (guint i = 0; i < names->len; i++) {
        g_test_message("CRD %s", (char *)names->pdata[i]);
        g_assert_nonnull(find(objs, "CustomResourceDefinition", names->pdata[i]));
        g_autofree char *line = g_strdup_printf("customresourcedefinition.apiextensions.k8s.io/%s",
                                                (char *)names->pdata[i]);
        g_assert_nonnull(strstr(crds, line));
    }
    g_autofree char *sas =
            admin(e, NULL, "get", "serviceaccounts", "-n", "kube-batchd", "-o", "name", NULL);
    g_assert_nonnull(strstr(sas, "serviceaccount/kube-batchd\n"));
    g_assert_nonnull(strstr(sas, "serviceaccount/tf-operator\n"));
    g_free(admin(e, NULL, "get", "queues.scheduling.volcano.sh", "default", NULL));
    g_autofree char *conf = admin(e, NULL, "get", "configmap", "kube-batchd-conf", "-n",
                                  "kube-batchd", "-o", "jsonpath={.data.scheduler\\.conf}", NULL);
    g_autofree char *want = file_text("deploy/base/scheduler.conf");
    g_assert_cmpstr(g_strchomp(conf), ==, g_strchomp(want));
    const char *daemons[] = {"kube-batchd", "tf-operator"};
    for (guint i = 0; i < G_N_ELEMENTS(daemons); i++) {
        g_autofree char *r = deploy_field(e, daemons[i], "{.spec.replicas}");
        g_assert_cmpstr(r, ==, "1");
        g_autofree char *img =
                deploy_field(e, daemons[i], "{.spec.template.spec.containers[0].image}");
        g_assert_cmpstr(img, ==, "kube-batchd:latest");
    }
    g_autofree char *args =
            deploy_field(e, "kube-batchd", "{.spec.template.spec.containers[0].args}");
    g_assert_null(strstr(args, "--extender"));
    g_assert_nonnull(strstr(args, "--scheduler-conf=/etc/kube-batchd/scheduler.conf"));
    /* No extender Service. */
    int st = -1;
    g_autofree char *none = NULL;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_test_cluster_kubectl(
            e->cluster, KB_TEST_ADMIN,
            (const char *const[]){"get", "service", "kube-batchd", "-n", "kube-batchd", NULL}, NULL,
            &none, NULL, &st, &error));
    g_assert_cmpint(st, !=, 0);
}

/* ha: two replicas each, a PodDisruptionBudget each, spread over nodes and zones. */
static void test_ha(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->ready, "the cluster did not start"))
        return;
    apply_k(e, "deploy/overlays/ha");
    const char *daemons[] = {"kube-batchd", "tf-operator"};
    for (guint i = 0; i < G_N_ELEMENTS(daemons); i++) {
        g_autofree char *r = deploy_field(e, daemons[i], "{.spec.replicas}");
        g_assert_cmpstr(r, ==, "2");
        g_autofree char *key = deploy_field(
                e, daemons[i],
                "{.spec.template.spec.affinity.podAntiAffinity."
                "preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}");
        g_assert_cmpstr(key, ==, "kubernetes.io/hostname");
        g_autofree char *zone = deploy_field(
                e, daemons[i], "{.spec.template.spec.topologySpreadConstraints[0].topologyKey}");
        g_assert_cmpstr(zone, ==, "topology.kubernetes.io/zone");
        g_autofree char *pdb =
                admin(e, NULL, "get", "poddisruptionbudgets.policy", daemons[i], "-n",
                      "kube-batchd", "-o", "jsonpath={.spec.minAvailable} {.spec.selector}", NULL);
        g_autofree char *want = g_strdup_printf("1 {\"matchLabels\":{\"app\":\"%s\"}}", daemons[i]);
        g_assert_cmpstr(pdb, ==, want);
    }
}

/* extender: the flags, the Secret volume, the port and Service; kube-scheduler's configuration
 * as a ConfigMap, the text of the overlay's kube-scheduler-extender.yaml. */
static void test_extender(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->ready, "the cluster did not start"))
        return;
    apply_k(e, "deploy/overlays/extender");
    g_autofree char *args =
            deploy_field(e, "kube-batchd", "{.spec.template.spec.containers[0].args}");
    const char *flags[] = {"--extender-address=:8888",
                           "--extender-tls-cert-file=/etc/kube-batchd/extender/tls.crt",
                           "--extender-tls-key-file=/etc/kube-batchd/extender/tls.key",
                           "--extender-client-ca-file=/etc/kube-batchd/extender/ca.crt"};
    for (guint i = 0; i < G_N_ELEMENTS(flags); i++)
        g_assert_nonnull(strstr(args, flags[i]));
    /* The base's flags are kept, not replaced. */
    g_assert_nonnull(strstr(args, "--scheduler-name=kube-batchd"));
    g_autofree char *vol = deploy_field(
            e, "kube-batchd",
            "{.spec.template.spec.volumes[?(@.name==\"extender-tls\")].secret.secretName}");
    g_assert_cmpstr(vol, ==, "kube-batchd-extender-tls");
    g_autofree char *port = deploy_field(
            e, "kube-batchd",
            "{.spec.template.spec.containers[0].ports[?(@.name==\"extender\")].containerPort}");
    g_assert_cmpstr(port, ==, "8888");
    g_autofree char *svc = admin(e, NULL, "get", "service", "kube-batchd", "-n", "kube-batchd",
                                 "-o", "jsonpath={.spec.ports[0].port}", NULL);
    g_assert_cmpstr(svc, ==, "8888");
    g_autofree char *cm =
            admin(e, NULL, "get", "configmap", "kube-batchd-extender-scheduler-config", "-n",
                  "kube-system", "-o", "jsonpath={.data.config\\.yaml}", NULL);
    g_autofree char *want = file_text("deploy/overlays/extender/kube-scheduler-extender.yaml");
    g_assert_cmpstr(g_strchomp(cm), ==, g_strchomp(want));
    /* tf-operator is the base's. */
    g_autofree char *oargs =
            deploy_field(e, "tf-operator", "{.spec.template.spec.containers[0].args}");
    g_assert_null(strstr(oargs, "--extender"));
}

/* monitoring: the Services of the metrics ports, the ServiceMonitor, the rules, the dashboard. */
static void test_monitoring(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->ready, "the cluster did not start"))
        return;
    g_autofree char *crds = src("tests/data/monitoring/crds.yaml");
    g_free(admin(e, NULL, "apply", "-f", crds, NULL));
    apply_k(e, "deploy/overlays/monitoring");
    g_autofree char *ports = admin(e, NULL, "get", "services", "-n", "kube-batchd", "-l",
                                   "app.kubernetes.io/component=metrics", "-o",
                                   "jsonpath={range .items[*]}{.metadata.name}={.spec.ports[0]"
                                   ".targetPort}:{.spec.ports[0].port}{\"\\n\"}{end}",
                                   NULL);
    g_assert_cmpstr(ports, ==,
                    "kube-batchd-metrics=metrics:8080\ntf-operator-metrics=metrics:8081\n");
    /* The ports are the ones the daemons listen on (--listen-address of the Deployments). */
    g_autofree char *sargs =
            deploy_field(e, "kube-batchd", "{.spec.template.spec.containers[0].args}");
    g_assert_nonnull(strstr(sargs, "--listen-address=:8080"));
    g_autofree char *oargs =
            deploy_field(e, "tf-operator", "{.spec.template.spec.containers[0].args}");
    g_assert_nonnull(strstr(oargs, "--listen-address=:8081"));
    g_autofree char *sm = admin(e, NULL, "get", "servicemonitors.monitoring.coreos.com",
                                "kube-batchd", "-n", "kube-batchd", "-o",
                                "jsonpath={.spec.endpoints[0].port} "
                                "{.spec.selector.matchExpressions[0].values}",
                                NULL);
    g_assert_cmpstr(sm, ==, "metrics [\"kube-batchd\",\"tf-operator\"]");
    json_object *rule = admin_json(e, "get", "prometheusrules.monitoring.coreos.com", "kube-batchd",
                                   "-n", "kube-batchd", "-o", "json", NULL);
    e->rules = json_object_get(kas_json_get(rule, "spec"));
    json_object_put(rule);
    g_assert_nonnull(e->rules);
    g_autofree char *dash =
            admin(e, NULL, "get", "configmap", "kube-batchd-dashboard", "-n", "kube-batchd", "-o",
                  "jsonpath={.metadata.labels.grafana_dashboard} "
                  "{.data.kube-batchd\\.json}",
                  NULL);
    g_assert_true(g_str_has_prefix(dash, "1 {"));
    e->dashboard = json_tokener_parse(dash + 2);
    g_assert_nonnull(e->dashboard);
    g_assert_cmpstr(kas_json_get_string(e->dashboard, "uid"), ==, "kube-batchd");
}

/* ---- the daemons as the default install runs them ----------------------------------------- */

/* The files of a volume: each key of @data (base64 for a Secret's) into @dir. */
static void write_volume(const char *dir, json_object *data, gboolean base64)
{
    json_object_object_foreach(data, key, val)
    {
        g_autofree char *f = g_build_filename(dir, key, NULL);
        const char *text = json_object_get_string(val);
        gsize n = strlen(text);
        g_autofree guchar *raw = base64 ? g_base64_decode(text, &n) : NULL;
        g_assert_true(
                g_file_set_contents(f, raw != NULL ? (const char *)raw : text, (gssize)n, NULL));
    }
}

/*
 * The container of Deployment @name in @objs as a command line for this machine: the program is
 * bin/<basename of command[0]>, the ConfigMap volumes (from @objs) and Secret volumes (from the
 * cluster) are written under e->conf_dir and their mount paths in the arguments point there,
 * --listen-address moves to 127.0.0.1:@port, --webhook-address to a free port, and
 * --kubeconfig of @identity goes first (the ServiceAccount's token, as in a pod).
 */
static GPtrArray *daemon_argv(Env *e, GPtrArray *objs, const char *name, const char *identity,
                              guint port, char **program)
{
    json_object *dep = find(objs, "Deployment", name);
    g_assert_nonnull(dep);
    json_object *c =
            json_object_array_get_idx(kas_json_get(dep, "spec.template.spec.containers"), 0);
    json_object *cmd = json_object_object_get(c, "command");
    g_assert_cmpuint(json_object_array_length(cmd), ==, 1);
    const char *path = json_object_get_string(json_object_array_get_idx(cmd, 0));
    g_autofree char *want_path = g_strdup_printf("/usr/bin/%s", name);
    g_assert_cmpstr(path, ==, want_path); /* where make image puts it */
    *program = g_path_get_basename(path);
    /* ConfigMap volumes: mount path -> a directory of their files. */
    g_autoptr(GHashTable) mounts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    json_object *vols = kas_json_get(dep, "spec.template.spec.volumes");
    json_object *vms = json_object_object_get(c, "volumeMounts");
    for (gsize i = 0; vms != NULL && i < json_object_array_length(vms); i++) {
        json_object *vm = json_object_array_get_idx(vms, i);
        const char *vname = kas_json_get_string(vm, "name");
        for (gsize j = 0; vols != NULL && j < json_object_array_length(vols); j++) {
            json_object *v = json_object_array_get_idx(vols, j);
            const char *cm = kas_json_get_string(v, "configMap.name");
            const char *secret = kas_json_get_string(v, "secret.secretName");
            if (g_strcmp0(kas_json_get_string(v, "name"), vname) != 0 ||
                (cm == NULL && secret == NULL))
                continue;
            g_autofree char *dir = g_build_filename(e->conf_dir, name, vname, NULL);
            g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
            if (cm != NULL) {
                json_object *map = find(objs, "ConfigMap", cm);
                g_assert_nonnull(map);
                write_volume(dir, json_object_object_get(map, "data"), FALSE);
            } else {
                /* As the kubelet mounts it: the Secret as the cluster has it. */
                const char *ns = kas_json_get_string(dep, "metadata.namespace");
                json_object *sec =
                        admin_json(e, "get", "secret", secret, "-n", ns, "-o", "json", NULL);
                write_volume(dir, json_object_object_get(sec, "data"), TRUE);
                json_object_put(sec);
            }
            g_hash_table_insert(mounts, g_strdup(kas_json_get_string(vm, "mountPath")),
                                g_steal_pointer(&dir));
        }
    }
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup("--kubeconfig"));
    g_ptr_array_add(argv, g_strdup(kb_test_cluster_kubeconfig(e->cluster, identity)));
    json_object *args = json_object_object_get(c, "args");
    for (gsize i = 0; i < json_object_array_length(args); i++) {
        g_autoptr(GString) a =
                g_string_new(json_object_get_string(json_object_array_get_idx(args, i)));
        if (g_str_has_prefix(a->str, "--listen-address=")) {
            g_string_printf(a, "--listen-address=127.0.0.1:%u", port);
        } else if (g_str_has_prefix(a->str, "--webhook-address=")) {
            g_string_printf(a, "--webhook-address=127.0.0.1:%u", kb_test_free_port());
        } else {
            GHashTableIter it;
            gpointer k, v;
            g_hash_table_iter_init(&it, mounts);
            while (g_hash_table_iter_next(&it, &k, &v))
                g_string_replace(a, k, v, 0);
        }
        g_ptr_array_add(argv, g_string_free(g_steal_pointer(&a), FALSE));
    }
    g_ptr_array_add(argv, NULL);
    return argv;
}

static long http_get(guint port, const char *path, char **body);

static gboolean wait_ready(guint port)
{
    for (int i = 0; i < 300; i++) {
        if (http_get(port, "/readyz", NULL) == 200)
            return TRUE;
        g_usleep(200 * 1000);
    }
    return FALSE;
}

static void test_daemons_start(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->ready, "the cluster did not start"))
        return;
    g_autoptr(GError) error = NULL;
    e->conf_dir = g_dir_make_tmp("kb-deploy-conf-XXXXXX", &error);
    g_assert_no_error(error);
    g_autoptr(GPtrArray) objs = built(e, "deploy");
    /* What the README's install does after apply -k: the conversion webhook's Secret and the
     * CRD's caBundle. */
    g_autofree char *pki = g_build_filename(e->conf_dir, "webhook-pki", NULL);
    g_autofree char *script =
            g_build_filename(kb_test_src_dir(), "deploy", "tfjob-webhook-certs.sh", NULL);
    g_autofree char *kubectl = g_strdup_printf(
            "kubectl --kubeconfig %s", kb_test_cluster_kubeconfig(e->cluster, KB_TEST_ADMIN));
    g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "KUBECTL", kubectl, TRUE);
    const char *certs[] = {"bash", script, pki, "--apply", NULL};
    g_autofree char *cout = NULL, *cerr = NULL;
    int cstatus = -1;
    g_assert_true(g_spawn_sync(NULL, (char **)certs, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, &cout,
                               &cerr, &cstatus, &error));
    if (!g_spawn_check_wait_status(cstatus, NULL))
        g_test_message("tfjob-webhook-certs.sh: %s%s", cout, cerr);
    g_assert_true(g_spawn_check_wait_status(cstatus, NULL));
    e->sched_port = kb_test_free_port();
    e->oper_port = kb_test_free_port();
    KbTestDaemonOptions o = {.log = TRUE, .log_dir = kb_test_cluster_dir(e->cluster)};
    g_autofree char *sprog = NULL, *oprog = NULL;
    g_autoptr(GPtrArray) sargv =
            daemon_argv(e, objs, "kube-batchd", KB_TEST_SCHEDULER, e->sched_port, &sprog);
    g_autoptr(GPtrArray) oargv =
            daemon_argv(e, objs, "tf-operator", KB_TEST_OPERATOR, e->oper_port, &oprog);
    g_autofree char *sline = g_strjoinv(" ", (char **)sargv->pdata);
    g_test_message("%s %s", sprog, sline);
    e->scheduler = kb_test_daemon_start(sprog, (const char *const *)sargv->pdata, &o, &error);
    g_assert_no_error(error);
    e->operator_ = kb_test_daemon_start(oprog, (const char *const *)oargv->pdata, &o, &error);
    g_assert_no_error(error);
    g_assert_true(wait_ready(e->sched_port));
    g_assert_true(wait_ready(e->oper_port));
    e->daemons_ready = TRUE;
}

/* Poll `kubectl get ... -o jsonpath=...` as the admin until @want is its output (90 s). */
static char *wait_output(Env *e, const char *want, const char *const *args)
{
    char *out = NULL;
    for (int i = 0; i < 450; i++) {
        g_free(out);
        out = NULL;
        int st = -1;
        g_autoptr(GError) error = NULL;
        g_assert_true(kb_test_cluster_kubectl(e->cluster, KB_TEST_ADMIN, args, NULL, &out, NULL,
                                              &st, &error));
        if (st == 0 && strcmp(out, want) == 0)
            break;
        if (!kb_test_daemon_running(e->scheduler) || !kb_test_daemon_running(e->operator_))
            break;
        g_usleep(200 * 1000);
    }
    return out;
}

static void test_gang_binds(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->daemons_ready, "the daemons did not start"))
        return;
    GString *yaml = g_string_new("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                                 "metadata: {name: gang-k, namespace: default}\n"
                                 "spec: {minMember: 4, queue: default}\n");
    for (int i = 0; i < 4; i++)
        g_string_append_printf(yaml,
                               "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: gang-k-%d\n"
                               "  namespace: default\n  labels: {app: gang-k}\n"
                               "  annotations: {scheduling.k8s.io/group-name: gang-k}\nspec:\n"
                               "  schedulerName: kube-batchd\n  containers:\n  - name: c\n"
                               "    image: tf\n    resources: {limits: {nvidia.com/gpu: 4}}\n",
                               i);
    g_free(admin(e, yaml->str, "create", "-f", "-", NULL));
    g_string_free(yaml, TRUE);
    const char *get[] = {
            "get", "pods",       "-n", "default",
            "-l",  "app=gang-k", "-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}",
            NULL};
    g_autofree char *phases = wait_output(e, "Running\nRunning\nRunning\nRunning\n", get);
    g_assert_cmpstr(phases, ==, "Running\nRunning\nRunning\nRunning\n");
    /* tf-operator, from the same build, runs a TFJob through kube-batchd. */
    const char tfjob[] =
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: kust, namespace: default}\n"
            "spec:\n  runPolicy: {cleanPodPolicy: None}\n  tfReplicaSpecs:\n    Worker:\n"
            "      replicas: 2\n      template:\n        metadata:\n"
            "          annotations: {sim.kube-batchd.io/run-seconds: \"1\"}\n"
            "        spec: {containers: [{name: tensorflow, image: tf, resources: {limits: "
            "{nvidia.com/gpu: 1}}}]}\n";
    g_free(admin(e, tfjob, "create", "-f", "-", NULL));
    const char *tf[] = {"get",
                        "tfjobs.kubeflow.org",
                        "kust",
                        "-n",
                        "default",
                        "-o",
                        "jsonpath={.status.conditions[-1:].type}",
                        NULL};
    g_autofree char *cond = wait_output(e, "Succeeded", tf);
    g_assert_cmpstr(cond, ==, "Succeeded");
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

/* GET http://127.0.0.1:@port@path: the status (0 when unreachable), the body into @body. */
static long http_get(guint port, const char *path, char **body)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u%s", port, path);
    GString *buf = g_string_new(NULL);
    long status = 0;
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 3000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (body != NULL)
        *body = g_string_free(buf, FALSE);
    else
        g_string_free(buf, TRUE);
    return status;
}

/* The value of the sample "@series VALUE" on @port's /metrics, or -1. */
static double sample(guint port, const char *series)
{
    g_autofree char *text = NULL;
    if (http_get(port, "/metrics", &text) != 200)
        return -1;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gsize n = strlen(series);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strncmp(lines[i], series, n) == 0 && lines[i][n] == ' ')
            return g_ascii_strtod(lines[i] + n + 1, NULL);
    }
    return -1;
}

static gboolean wait_sample(Env *e, guint port, const char *series, double want)
{
    for (int i = 0; i < 450; i++) {
        if (sample(port, series) == want)
            return TRUE;
        if (!kb_test_daemon_running(e->scheduler))
            return FALSE;
        g_usleep(200 * 1000);
    }
    return FALSE;
}

/*
 * The alerts' own figures, from the running daemons: both lead; a gang that loses a member to a
 * replacement that fits nowhere is partly bound, and once past its stale-gang grace, with a
 * PodDisruptionBudget refusing the eviction of the rest, it counts as past its deadline.
 */
static void test_alert_metrics(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->daemons_ready, "the daemons did not start"))
        return;
    g_assert_true(wait_sample(e, e->sched_port, "kube_batchd_leader", 1));
    g_assert_true(wait_sample(e, e->oper_port, "tf_operator_leader", 1));
    g_assert_cmpfloat(sample(e->sched_port, "kube_batchd_informer_synced{informer=\"pods\"}"), ==,
                      1);
    g_assert_cmpfloat(sample(e->sched_port, "kube_batchd_partial_gangs"), ==, 0);
    const char group[] = "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                         "metadata: {name: part, namespace: default, annotations: "
                         "{kube-batchd.io/stale-gang-grace: 1s}}\n"
                         "spec: {minMember: 2, scheduleTimeoutSeconds: 1}\n"
                         "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\n"
                         "metadata: {name: part, namespace: default}\n"
                         "spec: {minAvailable: 2, selector: {matchLabels: "
                         "{scheduling.x-k8s.io/pod-group: part}}}\n";
    GString *yaml = g_string_new(group);
    for (int i = 0; i < 2; i++)
        g_string_append_printf(yaml,
                               "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: part-%d\n"
                               "  namespace: default\n  labels: {scheduling.x-k8s.io/pod-group: "
                               "part}\nspec:\n  schedulerName: kube-batchd\n  containers:\n"
                               "  - name: c\n    image: tf\n    resources: {limits: "
                               "{nvidia.com/gpu: %d}}\n",
                               i, 1);
    g_free(admin(e, yaml->str, "create", "-f", "-", NULL));
    g_string_free(yaml, TRUE);
    /* As a disruption controller would find it: no disruption allowed. */
    g_free(admin(e, NULL, "patch", "poddisruptionbudget", "part", "-n", "default",
                 "--subresource=status", "--type=merge", "-p",
                 "{\"status\":{\"observedGeneration\":1,\"disruptionsAllowed\":0,"
                 "\"currentHealthy\":2,\"desiredHealthy\":2,\"expectedPods\":2}}",
                 NULL));
    const char *get[] = {
            "get", "pods",    "part-0", "part-1",
            "-n",  "default", "-o",     "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}",
            NULL};
    g_autofree char *phases = wait_output(e, "Running\nRunning\n", get);
    g_assert_cmpstr(phases, ==, "Running\nRunning\n");
    g_assert_cmpfloat(sample(e->sched_port, "kube_batchd_partial_gangs"), ==, 0);
    /* part-1 is replaced by a member that fits nowhere: the gang is short. */
    g_free(admin(e, NULL, "delete", "pod", "part-1", "-n", "default", "--wait=false", NULL));
    g_free(admin(e,
                 "apiVersion: v1\nkind: Pod\nmetadata:\n  name: part-2\n  namespace: default\n"
                 "  labels: {scheduling.x-k8s.io/pod-group: part}\nspec:\n"
                 "  schedulerName: kube-batchd\n  containers:\n  - name: c\n    image: tf\n"
                 "    resources: {limits: {nvidia.com/gpu: 64}}\n",
                 "create", "-f", "-", NULL));
    g_assert_true(wait_sample(e, e->sched_port, "kube_batchd_partial_gangs", 1));
    g_assert_true(wait_sample(e, e->sched_port, "kube_batchd_partial_gangs_timed_out", 1));
    /* Gone: nothing partial. */
    g_free(admin(e, NULL, "delete", "pods", "part-0", "part-2", "-n", "default", "--wait=false",
                 NULL));
    g_free(admin(e, NULL, "delete", "podgroups.scheduling.x-k8s.io", "part", "-n", "default",
                 NULL));
    g_free(admin(e, NULL, "delete", "poddisruptionbudget", "part", "-n", "default", NULL));
    g_assert_true(wait_sample(e, e->sched_port, "kube_batchd_partial_gangs", 0));
    g_assert_cmpfloat(sample(e->sched_port, "kube_batchd_partial_gangs_timed_out"), ==, 0);
}

/* ---- the rules and the dashboard ------------------------------------------------------------ */

/* Adds to @names every metric name of ours in the PromQL @expr (histogram series reduced to
 * their family). */
static void expr_metrics(const char *expr, GHashTable *names)
{
    static GRegex *re = NULL;
    if (re == NULL)
        re = g_regex_new("\\b(kube_batchd|tf_operator)_[a-zA-Z0-9_]+", G_REGEX_OPTIMIZE, 0, NULL);
    g_autoptr(GMatchInfo) m = NULL;
    g_regex_match(re, expr, 0, &m);
    for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
        char *name = g_match_info_fetch(m, 0);
        const char *suffixes[] = {"_bucket", "_sum", "_count"};
        for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
            if (g_str_has_suffix(name, suffixes[i])) {
                name[strlen(name) - strlen(suffixes[i])] = '\0';
                break;
            }
        }
        g_hash_table_add(names, name);
    }
}

/* The families "# TYPE name" of @port's /metrics, added to @set. */
static void exposed(guint port, GHashTable *set)
{
    g_autofree char *text = NULL;
    g_assert_cmpint(http_get(port, "/metrics", &text), ==, 200);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (!g_str_has_prefix(lines[i], "# TYPE "))
            continue;
        g_auto(GStrv) f = g_strsplit(lines[i] + strlen("# TYPE "), " ", 2);
        g_hash_table_add(set, g_strdup(f[0]));
    }
}

static guint rule_exprs(json_object *spec, GHashTable *names)
{
    guint n = 0;
    json_object *groups = json_object_object_get(spec, "groups");
    for (gsize g = 0; g < json_object_array_length(groups); g++) {
        json_object *rules = json_object_object_get(json_object_array_get_idx(groups, g), "rules");
        for (gsize r = 0; r < json_object_array_length(rules); r++, n++)
            expr_metrics(kas_json_get_string(json_object_array_get_idx(rules, r), "expr"), names);
    }
    return n;
}

static void test_metrics_exposed(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->daemons_ready && e->rules != NULL && e->dashboard != NULL,
                    "the daemons did not start or the monitoring overlay is missing"))
        return;
    g_autoptr(GHashTable) have = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    exposed(e->sched_port, have);
    exposed(e->oper_port, have);
    g_autoptr(GHashTable) used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint n_rules = rule_exprs(e->rules, used);
    g_assert_cmpuint(n_rules, >=, 4);
    guint n_queries = 0;
    json_object *panels = json_object_object_get(e->dashboard, "panels");
    for (gsize p = 0; p < json_object_array_length(panels); p++) {
        json_object *targets =
                json_object_object_get(json_object_array_get_idx(panels, p), "targets");
        for (gsize t = 0; t < json_object_array_length(targets); t++, n_queries++)
            expr_metrics(kas_json_get_string(json_object_array_get_idx(targets, t), "expr"), used);
    }
    g_assert_cmpuint(n_queries, >=, 4);
    /* The check can fail: a name nobody exports is found in an expression and is not exposed. */
    g_autoptr(GHashTable) probe = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    expr_metrics("rate(kube_batchd_no_such_total[5m]) + kube_batchd_binds_total", probe);
    g_assert_cmpuint(g_hash_table_size(probe), ==, 2);
    g_assert_false(g_hash_table_contains(have, "kube_batchd_no_such_total"));
    guint missing = 0;
    GHashTableIter it;
    gpointer name;
    g_hash_table_iter_init(&it, used);
    while (g_hash_table_iter_next(&it, &name, NULL)) {
        if (!g_hash_table_contains(have, name)) {
            g_test_message("%s is queried but no daemon exposes it", (char *)name);
            missing++;
        }
    }
    g_printerr("# report: deploy-kustomize: %u rules and %u dashboard queries use %u metrics, "
               "all exposed: %s\n",
               n_rules, n_queries, g_hash_table_size(used), missing == 0 ? "yes" : "no");
    g_assert_cmpuint(missing, ==, 0);
}

static void test_promtool(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless(e->rules != NULL, "the monitoring overlay is missing"))
        return;
    g_autofree char *promtool = g_find_program_in_path("promtool");
    if (promtool == NULL) {
        g_printerr("\n# SKIP /deploy-kustomize/promtool: promtool is NOT INSTALLED, "
                   "the PrometheusRules are NOT CHECKED (apt-get install prometheus, or make "
                   "deps as root)\n\n");
        g_test_skip("promtool not installed");
        return;
    }
    g_autofree char *path = g_build_filename(kb_test_cluster_dir(e->cluster), "rules.json", NULL);
    g_assert_true(g_file_set_contents(
            path,
            json_object_to_json_string_ext(e->rules,
                                           JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
            -1, NULL));
    const char *argv[] = {promtool, "check", "rules", path, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int status = -1;
    g_autoptr(GError) error = NULL;
    g_assert_true(
            g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out, &err, &status, &error));
    g_assert_no_error(error);
    g_test_message("promtool: %s%s", out, err);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree char *want = g_strdup_printf("SUCCESS: %u rules found", rule_exprs(e->rules, names));
    g_assert_nonnull(strstr(out, want));
    /* And a broken rule is refused, so the check can fail. */
    g_assert_true(g_file_set_contents(
            path, "{\"groups\":[{\"name\":\"x\",\"rules\":[{\"alert\":\"A\",\"expr\":\"sum(\"}]}]}",
            -1, NULL));
    g_free(out);
    g_free(err);
    out = err = NULL;
    g_assert_true(
            g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out, &err, &status, &error));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
}

static void test_teardown(gconstpointer data)
{
    Env *e = (Env *)data;
    if (e->operator_ != NULL)
        g_assert_cmpint(kb_test_daemon_stop(e->operator_, 30000), ==, 0);
    if (e->scheduler != NULL)
        g_assert_cmpint(kb_test_daemon_stop(e->scheduler, 30000), ==, 0);
    g_clear_pointer(&e->operator_, kb_test_daemon_free);
    g_clear_pointer(&e->scheduler, kb_test_daemon_free);
    g_clear_pointer(&e->cluster, kb_test_cluster_free);
    g_clear_pointer(&e->rules, put_json);
    g_clear_pointer(&e->dashboard, put_json);
    if (e->conf_dir != NULL) {
        const char *argv[] = {"rm", "-rf", e->conf_dir, NULL};
        g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                     NULL);
    }
    g_clear_pointer(&e->conf_dir, g_free);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    /* A failed check must still stop the daemons and the server. */
    g_test_set_nonfatal_assertions();
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/deploy-kustomize/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    static Env env;
    static const struct {
        const char *name;
        GTestDataFunc fn;
    } steps[] = {{"setup", test_setup},
                 {"volcano-crds", test_volcano_crds},
                 {"default", test_default},
                 {"ha", test_ha},
                 {"extender", test_extender},
                 {"monitoring", test_monitoring},
                 {"start-as-built", test_daemons_start},
                 {"gang-binds", test_gang_binds},
                 {"alert-metrics", test_alert_metrics},
                 {"metrics-exposed", test_metrics_exposed},
                 {"promtool", test_promtool},
                 {"teardown", test_teardown}};
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autofree char *path = g_strdup_printf("/deploy-kustomize/%s", steps[i].name);
        g_test_add_data_func(path, &env, steps[i].fn);
    }
    int rc = g_test_run();
    test_teardown(&env);
    curl_global_cleanup();
    return rc;
}
