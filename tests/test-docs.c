/*
 * The documentation's commands, run: every fenced block of README.md and of the pages in docs/
 * whose info string says `test` (```sh test) is run with bash, in order, as a reader following
 * the pages would, on a cluster set up as the quick start's: kb-apiserver with RBAC, kb-kubelet
 * running deploy/demo/nodes.yaml (4 nodes x 8 GPUs), the CRDs, RBAC and default queue applied,
 * kube-batchd and tf-operator running as their ServiceAccounts with the Deployments' flags.
 *
 * Each block runs in the source directory under `set -euo pipefail` with bin/ first on PATH and
 * KUBECONFIG naming the admin's kubeconfig, so `kbctl ...` and `kubectl ...` work as written; a
 * block fails the test when any of its commands fails. So the docs cannot drift from what the
 * programs do. Blocks that cannot run here (make demo, a real cluster's install) stay unmarked.
 */
#include <glib.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-cluster.h"
#include "tests/lib/kb-test-daemon.h"
#include "tests/lib/kb-test-util.h"

#define BLOCK_TIMEOUT_S 180
#define MAX_BLOCKS      200

typedef struct {
    char *file; /* relative to the source directory */
    guint line; /* of the opening fence */
    char *text;
} Block;

static struct {
    KbTestCluster *cluster;
    KbTestDaemon *kubelet, *scheduler, *operator_;
    GPtrArray *blocks; /* Block* */
    char *home;        /* HOME for the blocks' kubectl cache */
} env;

static void block_free(gpointer p)
{
    Block *b = p;
    g_free(b->file);
    g_free(b->text);
    g_free(b);
}

/* Is @info (what follows ``` on the opening fence) a block to run? Its words include "test". */
static gboolean runnable(const char *info)
{
    g_auto(GStrv) words = g_strsplit_set(info, " \t{},", -1);
    for (guint i = 0; words[i] != NULL; i++)
        if (strcmp(words[i], "test") == 0)
            return TRUE;
    return FALSE;
}

/* Append the runnable blocks of @rel (a Markdown file) to @out. */
static void collect(const char *rel, GPtrArray *out)
{
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_autofree char *md = NULL;
    g_assert_true(g_file_get_contents(path, &md, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(md, "\n", -1);
    Block *open = NULL;
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *l = lines[i];
        gboolean fence = g_str_has_prefix(l, "```");
        if (open == NULL && fence && runnable(l + 3)) {
            open = g_new0(Block, 1);
            open->file = g_strdup(rel);
            open->line = i + 1;
            open->text = g_strdup("");
        } else if (open != NULL && fence) {
            g_ptr_array_add(out, open);
            open = NULL;
        } else if (open != NULL) {
            char *t = g_strconcat(open->text, l, "\n", NULL);
            g_free(open->text);
            open->text = t;
        }
    }
    if (open != NULL)
        g_error("%s:%u: a ```test block is never closed", rel, open->line);
}

static gint by_name(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static GPtrArray *collect_all(void)
{
    GPtrArray *blocks = g_ptr_array_new_with_free_func(block_free);
    collect("README.md", blocks);
    g_autofree char *docs = g_build_filename(kb_test_src_dir(), "docs", NULL);
    g_autoptr(GDir) dir = g_dir_open(docs, 0, NULL);
    g_autoptr(GPtrArray) pages = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; dir != NULL && (n = g_dir_read_name(dir)) != NULL;)
        if (g_str_has_suffix(n, ".md"))
            g_ptr_array_add(pages, g_strconcat("docs/", n, NULL));
    g_ptr_array_sort(pages, by_name);
    for (guint i = 0; i < pages->len; i++)
        collect(g_ptr_array_index(pages, i), blocks);
    g_assert_cmpuint(blocks->len, <=, MAX_BLOCKS);
    return blocks;
}

/* ---- the cluster ------------------------------------------------------------------------------
 */

static char *src(const char *rel)
{
    return g_build_filename(kb_test_src_dir(), rel, NULL);
}

static void apply(const char *rel)
{
    g_autofree char *path = src(rel);
    /* The CRDs of a directory may not be established when the queue that needs them comes. */
    for (int i = 0; i < 60; i++) {
        int status = -1;
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GError) error = NULL;
        const char *args[] = {"apply", "-f", path, NULL};
        g_assert_true(kb_test_cluster_kubectl(env.cluster, KB_TEST_ADMIN, args, NULL, &out, &err,
                                              &status, &error));
        if (status == 0)
            return;
        g_usleep(250 * 1000);
    }
    g_error("kubectl apply -f %s keeps failing", rel);
}

static KbTestDaemon *daemon_as(const char *name, const char *identity, const char *const *flags)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "--kubeconfig");
    g_ptr_array_add(argv, (gpointer)kb_test_cluster_kubeconfig(env.cluster, identity));
    for (guint i = 0; flags[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)flags[i]);
    g_ptr_array_add(argv, NULL);
    KbTestDaemonOptions o = {.log = TRUE, .log_dir = kb_test_cluster_dir(env.cluster)};
    g_autoptr(GError) error = NULL;
    KbTestDaemon *d = kb_test_daemon_start(name, (const char *const *)argv->pdata, &o, &error);
    g_assert_no_error(error);
    return d;
}

static void setup(void)
{
    g_autoptr(GError) error = NULL;
    const char *kas[] = {"--runtime-config", "scheduling.k8s.io/v1beta1=true", NULL};
    env.cluster = kb_test_cluster_start(KB_TEST_CLUSTER_KAS, kas, &error);
    g_assert_no_error(error);
    g_autofree char *nodes = src("deploy/demo/nodes.yaml");
    const char *kubelet[] = {"--nodes", nodes, NULL};
    env.kubelet = daemon_as("kb-kubelet", KB_TEST_ADMIN, kubelet);
    apply("deploy/base/crds");
    apply("deploy/base/rbac.yaml");
    apply("deploy/base/default-queue.yaml");
    g_autofree char *conf = src("deploy/base/scheduler.conf");
    const char *sched[] = {"--scheduler-conf",
                           conf,
                           "--leader-elect",
                           "--lock-object-namespace",
                           "kube-batchd",
                           "--schedule-period",
                           "200ms",
                           "--listen-address",
                           "127.0.0.1:0",
                           NULL};
    env.scheduler = daemon_as("kube-batchd", KB_TEST_SCHEDULER, sched);
    const char *oper[] = {"--gang-scheduler-name", "kube-batchd",
                          "--leader-elect",        "--leader-elect-namespace",
                          "kube-batchd",           "--listen-address",
                          "127.0.0.1:0",           NULL};
    env.operator_ = daemon_as("tf-operator", KB_TEST_OPERATOR, oper);
    env.home = g_dir_make_tmp("kb-docs-home.XXXXXX", &error);
    g_assert_no_error(error);
}

static void teardown(void)
{
    g_clear_pointer(&env.operator_, kb_test_daemon_free);
    g_clear_pointer(&env.scheduler, kb_test_daemon_free);
    g_clear_pointer(&env.kubelet, kb_test_daemon_free);
    g_clear_pointer(&env.cluster, kb_test_cluster_free);
    if (env.home != NULL) {
        g_autofree char *rm = g_strdup_printf("rm -rf '%s'", env.home);
        g_assert_cmpint(system(rm), ==, 0);
        g_clear_pointer(&env.home, g_free);
    }
}

/* ---- the cases --------------------------------------------------------------------------------
 */

static void test_run_block(gconstpointer data)
{
    const Block *b = data;
    g_autofree char *bin = g_strdup(kb_test_bin_dir());
    g_autofree char *path = g_strdup_printf("%s:%s", bin, g_getenv("PATH"));
    g_autofree char *script = g_strdup_printf("set -euo pipefail\n%s", b->text);
    g_autofree char *timeout = g_strdup_printf("%d", BLOCK_TIMEOUT_S);
    const char *argv[] = {"timeout", "-k", "5", timeout, "bash", "-c", script, NULL};
    g_auto(GStrv) envp = g_get_environ();
    envp = g_environ_setenv(envp, "PATH", path, TRUE);
    envp = g_environ_setenv(envp, "HOME", env.home, TRUE);
    envp = g_environ_setenv(envp, "KUBECONFIG",
                            kb_test_cluster_kubeconfig(env.cluster, KB_TEST_ADMIN), TRUE);
    envp = g_environ_setenv(envp, "NO_COLOR", "1", TRUE);
    g_autofree char *out = NULL, *err = NULL;
    int wait_status = 0;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_spawn_sync(kb_test_src_dir(), (char **)argv, envp, G_SPAWN_SEARCH_PATH, NULL,
                               NULL, &out, &err, &wait_status, &error));
    g_assert_no_error(error);
    gboolean ok = g_spawn_check_wait_status(wait_status, NULL);
    if (!ok)
        g_test_message(
                "%s:%u failed (wait status %d)\n---- block\n%s---- stdout\n%s---- stderr\n%s",
                b->file, b->line, wait_status, b->text, out, err);
    g_assert_true(ok);
}

/* The README's quick start is marked: a page without runnable blocks would make this suite
 * pass by running nothing. */
static void test_readme_has_blocks(void)
{
    guint n = 0;
    for (guint i = 0; i < env.blocks->len; i++)
        n += strcmp(((Block *)g_ptr_array_index(env.blocks, i))->file, "README.md") == 0;
    g_assert_cmpuint(n, >=, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    env.blocks = collect_all();
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/docs/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_test_add_func("/docs/readme-has-runnable-blocks", test_readme_has_blocks);
    for (guint i = 0; i < env.blocks->len; i++) {
        const Block *b = g_ptr_array_index(env.blocks, i);
        g_autofree char *name = g_strdup_printf("/docs/%s/line-%u", b->file, b->line);
        g_test_add_data_func(name, b, test_run_block);
    }
    setup();
    int rc = g_test_run();
    teardown();
    g_ptr_array_unref(env.blocks);
    return rc;
}
