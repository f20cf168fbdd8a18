/*
 * Pod Security admission in kb-apiserver (testbed/apiserver/kas-podsecurity.c): the checks and
 * messages of each level as kube-apiserver words them (table), the namespace labels, and, with
 * the real binary and kubectl as the client, deploy/'s Deployments' pod templates admitted into
 * a namespace labelled restricted while a privileged pod is refused.
 */
#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-podsecurity.h"
#include "testbed/apiserver/kas-store.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

/* A pod: "spec" members given as JSON text after the one container's fields. */
static json_object *pod_with(const char *container_extra, const char *spec_extra)
{
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
            "\"image\":\"x\"%s%s}]%s%s}}",
            container_extra[0] != '\0' ? "," : "", container_extra,
            spec_extra[0] != '\0' ? "," : "", spec_extra);
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    return o;
}

#define RESTRICTED_SC                                                                              \
    "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":"          \
    "[\"ALL\"]},\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"

static const struct {
    const char *name;
    KasPsaLevel level;
    guint minor;
    const char *container;
    const char *spec;
    const char *want; /* NULL: allowed */
} cases[] = {
        {"plain pod, baseline", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR, "", "", NULL},
        {"plain pod, privileged level", KAS_PSA_PRIVILEGED, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"privileged\":true}", "\"hostNetwork\":true", NULL},
        {"privileged container", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"privileged\":true}", "",
         "privileged (container \"c\" must not set securityContext.privileged=true)"},
        {"host namespaces, sorted", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR, "",
         "\"hostPID\":true,\"hostNetwork\":true,\"hostIPC\":false",
         "host namespaces (hostNetwork, hostPID)"},
        {"host ports and added capabilities", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR,
         "\"ports\":[{\"containerPort\":80,\"hostPort\":8080},{\"containerPort\":81,\"hostPort\":"
         "443}],\"securityContext\":{\"capabilities\":{\"add\":[\"SYS_ADMIN\",\"CHOWN\","
         "\"NET_ADMIN\"]}}",
         "",
         "non-default capabilities (container \"c\" must not include \"NET_ADMIN\", "
         "\"SYS_ADMIN\" in securityContext.capabilities.add), hostPort (container \"c\" uses "
         "hostPorts 443, 8080)"},
        {"hostPath volume, baseline", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR, "",
         "\"volumes\":[{\"name\":\"root\",\"hostPath\":{\"path\":\"/\"}},{\"name\":\"e\","
         "\"emptyDir\":{}}]",
         "hostPath volumes (volume \"root\")"},
        {"unconfined seccomp, forbidden sysctl, procMount", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"procMount\":\"Unmasked\",\"seccompProfile\":{\"type\":"
         "\"Unconfined\"}}",
         "\"securityContext\":{\"sysctls\":[{\"name\":\"kernel.msgmax\",\"value\":\"1\"},"
         "{\"name\":\"net.ipv4.tcp_syncookies\",\"value\":\"1\"}]}",
         "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\"), "
         "seccompProfile (container \"c\" must not set securityContext.seccompProfile.type to "
         "\"Unconfined\"), forbidden sysctls (kernel.msgmax)"},
        {"seLinux user and type", KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"seLinuxOptions\":{\"type\":\"spc_t\",\"user\":\"root\"}}", "",
         "seLinuxOptions (container \"c\" set forbidden securityContext.seLinuxOptions: type "
         "\"spc_t\"; user may not be set)"},
        {"plain pod, restricted", KAS_PSA_RESTRICTED, KAS_PSA_LATEST_MINOR, "", "",
         "allowPrivilegeEscalation != false (container \"c\" must set "
         "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
         "\"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod "
         "or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or "
         "container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
         "\"Localhost\")"},
        {"restricted pod", KAS_PSA_RESTRICTED, KAS_PSA_LATEST_MINOR, RESTRICTED_SC,
         "\"volumes\":[{\"name\":\"conf\",\"configMap\":{\"name\":\"x\"}},{\"name\":\"tmp\","
         "\"emptyDir\":{}}]",
         NULL},
        {"restricted at the pod level", KAS_PSA_RESTRICTED, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":"
         "[\"ALL\"],\"add\":[\"NET_BIND_SERVICE\"]}}",
         "\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":65532,\"seccompProfile\":"
         "{\"type\":\"Localhost\",\"localhostProfile\":\"p.json\"}}",
         NULL},
        {"restricted: root user, hostPath, bad adds", KAS_PSA_RESTRICTED, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"runAsUser\":0,"
         "\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"SYS_ADMIN\"]},\"runAsNonRoot\":false}",
         "\"securityContext\":{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}},\"volumes\":"
         "[{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}},{\"name\":\"n\",\"nfs\":{\"server\":"
         "\"s\",\"path\":\"/\"}}]",
         "unrestricted capabilities (container \"c\" must not include \"SYS_ADMIN\" in "
         "securityContext.capabilities.add), restricted volume types (volumes \"h\", \"n\" use "
         "restricted volume types \"hostPath\", \"nfs\"), runAsNonRoot != true (container \"c\" "
         "must not set securityContext.runAsNonRoot=false), runAsUser=0 (container \"c\" must "
         "not set runAsUser=0)"},
        {"restricted v1.21: no capability drop yet, the baseline one instead", KAS_PSA_RESTRICTED,
         21,
         "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"runAsNonRoot\":true,"
         "\"runAsUser\":0,\"capabilities\":{\"add\":[\"NET_RAW\"]}}",
         "\"securityContext\":{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}",
         "non-default capabilities (container \"c\" must not include \"NET_RAW\" in "
         "securityContext.capabilities.add)"},
        {"user namespaces relax the user checks", KAS_PSA_RESTRICTED, KAS_PSA_LATEST_MINOR,
         "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":"
         "[\"ALL\"]},\"runAsUser\":0,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}",
         "\"hostUsers\":false", NULL},
};

static void test_checks(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_message("%s", cases[i].name);
        json_object *pod = pod_with(cases[i].container, cases[i].spec);
        g_autofree char *got = kas_psa_violations(cases[i].level, cases[i].minor, pod);
        g_assert_cmpstr(got, ==, cases[i].want);
        json_object_put(pod);
    }
}

/* init and ephemeral containers count; several containers are listed together. */
static void test_all_containers(void)
{
    json_object *pod = json_tokener_parse(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{\"name\":\"i\","
            "\"securityContext\":{\"privileged\":true}}],\"containers\":[{\"name\":\"a\"},"
            "{\"name\":\"b\",\"securityContext\":{\"privileged\":true}}],\"ephemeralContainers\":"
            "[{\"name\":\"e\",\"securityContext\":{\"privileged\":true}}]}}");
    g_autofree char *got = kas_psa_violations(KAS_PSA_BASELINE, KAS_PSA_LATEST_MINOR, pod);
    g_assert_cmpstr(got, ==,
                    "privileged (containers \"i\", \"b\", \"e\" must not set "
                    "securityContext.privileged=true)");
    json_object_put(pod);
}

static void test_labels(void)
{
    guint minor = 0;
    gboolean latest = FALSE;
    g_assert_cmpint(kas_psa_policy(NULL, &minor, &latest), ==, KAS_PSA_PRIVILEGED);
    char *baseline[] = {"other", "x", KAS_PSA_ENFORCE, "baseline", KAS_PSA_ENFORCE_VERSION,
                        "v1.21", NULL};
    g_assert_cmpint(kas_psa_policy(baseline, &minor, &latest), ==, KAS_PSA_BASELINE);
    g_assert_cmpuint(minor, ==, 21);
    g_assert_false(latest);
    /* What does not parse means restricted:latest, as on kube-apiserver. */
    char *bad[] = {KAS_PSA_ENFORCE, "strict", NULL};
    g_assert_cmpint(kas_psa_policy(bad, &minor, &latest), ==, KAS_PSA_RESTRICTED);
    g_assert_true(latest);
    char *bad_version[] = {KAS_PSA_ENFORCE, "baseline", KAS_PSA_ENFORCE_VERSION, "1.21", NULL};
    g_assert_cmpint(kas_psa_policy(bad_version, &minor, &latest), ==, KAS_PSA_RESTRICTED);

    json_object *pod = pod_with("\"securityContext\":{\"privileged\":true}", "");
    g_autoptr(GError) error = NULL;
    g_assert_false(kas_psa_admit_pod(baseline, pod, &error));
    g_assert_error(error, KAS_ERROR, KAS_ERR_FORBIDDEN);
    g_assert_cmpstr(error->message, ==,
                    "pods \"p\" is forbidden: violates PodSecurity \"baseline:v1.21\": privileged "
                    "(container \"c\" must not set securityContext.privileged=true)");
    json_object_put(pod);

    /* A namespace is created only with labels that parse. */
    json_object *labels = json_tokener_parse("{\"pod-security.kubernetes.io/enforce\":\"strict\","
                                             "\"pod-security.kubernetes.io/warn-version\":\"v2\"}");
    g_autoptr(GError) invalid = NULL;
    g_assert_false(kas_psa_validate_namespace(labels, "team", &invalid));
    g_assert_error(invalid, KAS_ERROR, KAS_ERR_INVALID);
    g_assert_nonnull(strstr(invalid->message, "Namespace \"team\" is invalid"));
    g_assert_nonnull(strstr(invalid->message, "metadata.labels[pod-security.kubernetes.io/"
                                              "enforce]: Invalid value: \"strict\""));
    g_assert_nonnull(strstr(invalid->message, "metadata.labels[pod-security.kubernetes.io/"
                                              "warn-version]: Invalid value: \"v2\""));
    json_object_put(labels);
}

/* ---- the binary, kubectl, deploy/ ---------------------------------------------------------- */

static char *kubectl(KbTestApiserver *api, int want_status, const char *stdin_text, char **err_out,
                     const char *const *args)
{
    char *out = NULL, *err = NULL;
    int status = -1;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_test_kubectl(api, args, stdin_text, &out, &err, &status, &error));
    g_assert_no_error(error);
    if (status != want_status)
        g_error("kubectl %s: exit %d (wanted %d)\nstdout: %s\nstderr: %s", args[0], status,
                want_status, out, err);
    if (err_out != NULL)
        *err_out = err;
    else
        g_free(err);
    return out;
}

/* The pod templates of the Deployments in deploy/base/@file, as pods named after them. */
static GPtrArray *deployment_pods(const char *file)
{
    g_autofree char *path = g_build_filename(kb_test_src_dir(), "deploy", "base", file, NULL);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    GPtrArray *pods = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) docs = g_strsplit(text, "\n---\n", -1);
    for (guint i = 0; docs[i] != NULL; i++) {
        g_autoptr(GError) error = NULL;
        json_object *doc = kas_yaml_to_json(docs[i], strlen(docs[i]), &error);
        g_assert_no_error(error);
        if (g_strcmp0(kas_json_get_string(doc, "kind"), "Deployment") == 0) {
            json_object *tmpl = kas_json_get(doc, "spec.template");
            g_assert_nonnull(tmpl);
            json_object *pod = json_object_new_object();
            json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
            json_object_object_add(pod, "kind", json_object_new_string("Pod"));
            json_object *meta = json_object_new_object();
            json_object_object_add(
                    meta, "name",
                    json_object_new_string(kas_json_get_string(doc, "metadata.name")));
            json_object_object_add(pod, "metadata", meta);
            json_object_object_add(pod, "spec",
                                   json_object_get(json_object_object_get(tmpl, "spec")));
            g_ptr_array_add(pods, g_strdup(json_object_to_json_string(pod)));
            json_object_put(pod);
        }
        json_object_put(doc);
    }
    return pods;
}

static void test_deploy_restricted(void)
{
    if (!kb_test_kubectl_available()) {
        g_test_skip("kubectl is not installed");
        return;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTestApiserver) api = kb_test_apiserver_start(NULL, &error);
    g_assert_no_error(error);
    const char *ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-batchd\n  labels:\n"
                     "    pod-security.kubernetes.io/enforce: restricted\n"
                     "    pod-security.kubernetes.io/enforce-version: latest\n";
    g_free(kubectl(api, 0, ns, NULL, (const char *const[]){"create", "-f", "-", NULL}));
    const char *const files[] = {"kube-batchd.yaml", "tf-operator.yaml"};
    guint n = 0;
    for (guint f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autoptr(GPtrArray) pods = deployment_pods(files[f]);
        for (guint i = 0; i < pods->len; i++, n++) {
            g_autofree char *out =
                    kubectl(api, 0, pods->pdata[i], NULL,
                            (const char *const[]){"create", "-n", "kube-batchd", "-f", "-", NULL});
            g_assert_nonnull(strstr(out, "created"));
        }
    }
    g_assert_cmpuint(n, ==, 2);
    /* The attack of the kind: a privileged pod on the host's network, refused. */
    const char *priv = "apiVersion: v1\nkind: Pod\nmetadata: {name: priv}\nspec:\n"
                       "  hostNetwork: true\n  containers:\n  - name: c\n    image: x\n"
                       "    securityContext: {privileged: true}\n";
    g_autofree char *err = NULL;
    g_free(kubectl(api, 1, priv, &err,
                   (const char *const[]){"create", "-n", "kube-batchd", "-f", "-", NULL}));
    g_assert_nonnull(strstr(err, "Error from server (Forbidden)"));
    g_assert_nonnull(strstr(err, "pods \"priv\" is forbidden: violates PodSecurity "
                                 "\"restricted:latest\": host namespaces (hostNetwork), "
                                 "privileged (container \"c\" must not set "
                                 "securityContext.privileged=true), allowPrivilegeEscalation != "
                                 "false (container \"c\" must set "
                                 "securityContext.allowPrivilegeEscalation=false)"));
    g_autofree char *none =
            kubectl(api, 1, NULL, NULL,
                    (const char *const[]){"get", "pod", "priv", "-n", "kube-batchd", NULL});
    /* The same pod in an unlabelled namespace is admitted (privileged is the default). */
    g_free(kubectl(api, 0, priv, NULL, (const char *const[]){"create", "-f", "-", NULL}));
    /* A label that is no level: the namespace is refused. */
    const char *bad = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bad\n  labels:\n"
                      "    pod-security.kubernetes.io/enforce: strict\n";
    g_autofree char *bad_err = NULL;
    g_free(kubectl(api, 1, bad, &bad_err, (const char *const[]){"create", "-f", "-", NULL}));
    g_assert_nonnull(strstr(bad_err, "Invalid value: \"strict\""));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/apiserver/podsecurity/checks", test_checks);
    g_test_add_func("/apiserver/podsecurity/all-containers", test_all_containers);
    g_test_add_func("/apiserver/podsecurity/labels", test_labels);
    g_test_add_func("/apiserver/podsecurity/deploy-restricted", test_deploy_restricted);
    return g_test_run();
}
