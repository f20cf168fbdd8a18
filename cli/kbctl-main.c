/*
 * kbctl's command table, dispatch, --help and bash completion (see kbctl.h). The table is the
 * single source of every command's flags: the parser, the help and the completion script all
 * read it.
 */
#include "cli/kbctl.h"

#include <string.h>
#include <time.h>

#include "cli/kbctl-out.h"

#ifndef KB_VERSION
#define KB_VERSION "unknown"
#endif

/* ---- flags of each command ------------------------------------------------------------------ */

static const KbctlOpt opts_submit_tf[] = {
        {"name", 0, KBCTL_OPT_STRING, "NAME", "job name (required)"},
        {"image", 0, KBCTL_OPT_STRING, "IMAGE", "container image of every replica (required)"},
        {"workers", 'w', KBCTL_OPT_STRING, "N", "worker replicas (default 1)"},
        {"ps", 0, KBCTL_OPT_STRING, "N", "parameter-server replicas (default 0)"},
        {"chief", 0, KBCTL_OPT_BOOL, NULL, "add a Chief replica (same resources as a worker)"},
        {"gpus", 'g', KBCTL_OPT_STRING, "N", "GPUs per worker (and chief) (default 0)"},
        {"cpu", 0, KBCTL_OPT_STRING, "QUANTITY", "CPU per replica, e.g. 4 or 500m"},
        {"memory", 0, KBCTL_OPT_STRING, "QUANTITY", "memory per replica, e.g. 16Gi"},
        {"queue", 'q', KBCTL_OPT_STRING, "QUEUE", "kube-batchd queue (default: the default queue)"},
        {"priority", 'p', KBCTL_OPT_STRING, "CLASS", "PriorityClass of the job"},
        {"min-workers", 0, KBCTL_OPT_STRING, "N",
         "elastic job: start with at least N workers (the gang), grow when GPUs are idle"},
        {"max-workers", 0, KBCTL_OPT_STRING, "N", "elastic job: grow up to N workers"},
        {"env", 'e', KBCTL_OPT_LIST, "KEY=VALUE", "environment variable (repeatable)"},
        {"annotation", 0, KBCTL_OPT_LIST, "KEY=VALUE",
         "pod annotation on every replica (repeatable), e.g. sim.kube-batchd.io/run-seconds=30"},
        {"sync-dir", 0, KBCTL_OPT_STRING, "DIR",
         "mount host directory DIR (a shared filesystem on every node) at DIR and run there"},
        {"scheduler-name", 0, KBCTL_OPT_STRING, "NAME",
         "scheduler of the pods (default " KBCTL_SCHEDULER_NAME ")"},
        {"dry-run", 0, KBCTL_OPT_BOOL, NULL,
         "print the TFJob as YAML (or -o json) and create nothing"},
        {NULL},
};

static const KbctlOpt opts_list[] = {
        {"all-namespaces", 'A', KBCTL_OPT_BOOL, NULL, "jobs of every namespace"},
        {NULL},
};

static const KbctlOpt opts_none[] = {{NULL}};

static const KbctlOpt opts_logs[] = {
        {"replica", 'r', KBCTL_OPT_STRING, "REPLICA",
         "which replica: worker-0, ps-1, chief-0, or a pod name (default: chief, master or "
         "worker-0)"},
        {"follow", 'f', KBCTL_OPT_BOOL, NULL, "keep streaming new lines until the container ends"},
        {"tail", 't', KBCTL_OPT_STRING, "N", "only the last N lines"},
        {"container", 'c', KBCTL_OPT_STRING, "NAME", "container (default tensorflow)"},
        {"timestamps", 0, KBCTL_OPT_BOOL, NULL, "prefix each line with its time"},
        {"previous", 0, KBCTL_OPT_BOOL, NULL, "the previous, terminated container's log"},
        {NULL},
};

static const KbctlOpt opts_delete[] = {
        {"wait", 0, KBCTL_OPT_BOOL, NULL, "return only once the job is gone"},
        {NULL},
};

static const KbctlOpt opts_wait[] = {
        {"for", 0, KBCTL_OPT_STRING, "STATUS",
         "the status to wait for (default Running; Succeeded also meets Running)"},
        {"timeout", 0, KBCTL_OPT_STRING, "DURATION",
         "give up after this long: 90, 90s, 5m, 1h "
         "(default 300s)"},
        {NULL},
};

/* ---- the table ------------------------------------------------------------------------------ */

const KbctlCommand kbctl_commands[] = {
        {"submit tf",
         "--name NAME --image IMAGE [--workers N] [--ps N] [--chief] [--gpus N] [flags] -- "
         "COMMAND...",
         "submit a distributed TensorFlow job (a kubeflow.org/v1 TFJob) for kube-batchd",
         "The job's pods are placed all at once or not at all (a gang) by kube-batchd, in the\n"
         "queue given. COMMAND runs in the tensorflow container of every replica, with TF_CONFIG\n"
         "set by tf-operator. --dry-run prints the TFJob instead of creating it.\n\n"
         "Example:\n  kbctl submit tf --name mnist --workers 4 --ps 2 --gpus 2 \\\n"
         "      --image tensorflow/tensorflow:1.15.5-gpu -- python /code/mnist.py --epochs 10",
         opts_submit_tf, kbctl_cmd_submit_tf, NULL},
        {"list", "[-A]", "list jobs: status, GPUs requested/allocated, queue, nodes",
         "STATUS is Pending (not placed yet), Waiting (kube-batchd said why: see kbctl why),\n"
         "Starting, Running, Restarting, Succeeded or Failed.",
         opts_list, kbctl_cmd_list, NULL},
        {"get", "NAME",
         "one job: replicas, pods, nodes, GPU ids or DRA devices, why it waits, events", NULL,
         opts_none, kbctl_cmd_get, "jobs"},
        {"why", "NAME", "one paragraph: why the job is in its state and what would let it start",
         NULL, opts_none, kbctl_cmd_why, "jobs"},
        {"logs", "NAME [--replica worker-0] [-f] [--tail N]", "print a replica's log", NULL,
         opts_logs, kbctl_cmd_logs, "jobs"},
        {"delete", "NAME", "delete a job with its pods, services and PodGroup", NULL, opts_delete,
         kbctl_cmd_delete, "jobs"},
        {"wait", "NAME [--for STATUS] [--timeout DURATION]",
         "wait until a job reaches a status (as kubectl wait, for scripts)",
         "Exit 0 once the job's STATUS (as kbctl list shows it) is the one asked for; exit 1\n"
         "when it finished otherwise (Succeeded or Failed), or on timeout, with its status and\n"
         "why it waits.",
         opts_wait, kbctl_cmd_wait, "jobs"},
        {"top node", "",
         "GPUs per node: allocatable, allocated, and which GPU index serves which pod",
         "GPU indices come from the pods' kube-batchd.io/gpu-ids annotation, written by\n"
         "kube-batchd's gpu-topology plugin before it binds a pod. With Dynamic Resource\n"
         "Allocation, each node's devices (ResourceSlices) and the claim and pods each serves\n"
         "(ResourceClaims): MIG devices under their GPU's counter set with the counters\n"
         "consumed and left, a shared GPU's shares with the capacity each consumes.",
         opts_none, kbctl_cmd_top_node, NULL},
        {"top job", "[-A]", "GPUs per running job and how long it has run", NULL, opts_list,
         kbctl_cmd_top_job, NULL},
        {"queue list", "", "queues: weight, capability, deserved and allocated GPUs, jobs",
         "Children (spec.parent) are indented under their parent. DESERVED and ALLOCATED come\n"
         "from the status kube-batchd writes on each Queue, and so does USAGE: the queue's\n"
         "decayed GPU-hours (with proportion's usageHalfLife; - without).",
         opts_none, kbctl_cmd_queue_list, NULL},
        {"queue get", "QUEUE", "one queue: its figures and the jobs in it", NULL, opts_none,
         kbctl_cmd_queue_get, "queues"},
        {"completion", "bash", "print the bash completion script",
         "Load it with:  source <(kbctl completion bash)", opts_none, kbctl_cmd_completion,
         "shells"},
};
const guint kbctl_n_commands = G_N_ELEMENTS(kbctl_commands);

/* ---- help ---------------------------------------------------------------------------------- */

static void print_opts(FILE *out, const KbctlOpt *opts)
{
    for (const KbctlOpt *o = opts; o->name != NULL; o++) {
        g_autofree char *left =
                o->short_name != 0
                        ? g_strdup_printf("-%c, --%s%s%s", o->short_name, o->name,
                                          o->value != NULL ? " " : "", o->value ? o->value : "")
                        : g_strdup_printf("    --%s%s%s", o->name, o->value != NULL ? " " : "",
                                          o->value ? o->value : "");
        fprintf(out, "  %-34s %s\n", left, o->help);
    }
}

void kbctl_print_help(FILE *out, const KbctlCommand *cmd)
{
    if (cmd == NULL) {
        fprintf(out, "kbctl: submit, watch and understand training jobs scheduled by "
                     "kube-batchd.\n\nUsage: kbctl COMMAND [flags]\n\nCommands:\n");
        for (guint i = 0; i < kbctl_n_commands; i++)
            fprintf(out, "  %-12s %s\n", kbctl_commands[i].path, kbctl_commands[i].summary);
        fprintf(out, "\nGlobal flags:\n");
        print_opts(out, kbctl_global_opts);
        fprintf(out, "\nExit status: 0 ok, 1 the server refused or the object does not exist, 2 "
                     "usage.\nRun 'kbctl COMMAND --help' for a command's flags.\n");
        return;
    }
    fprintf(out, "kbctl %s: %s\n\nUsage: kbctl %s %s\n", cmd->path, cmd->summary, cmd->path,
            cmd->usage);
    if (cmd->help != NULL)
        fprintf(out, "\n%s\n", cmd->help);
    if (cmd->opts[0].name != NULL) {
        fprintf(out, "\nFlags:\n");
        print_opts(out, cmd->opts);
    }
    fprintf(out, "\nGlobal flags:\n");
    print_opts(out, kbctl_global_opts);
}

/*
 * Help for a word that only prefixes commands ("submit", "top", "queue"): each command under it
 * with its usage, summary and flags, as `kubectl create --help` lists what it can create.
 */
static void print_group_help(FILE *out, const char *word)
{
    size_t n = strlen(word);
    fprintf(out, "kbctl %s: one of the commands below.\n", word);
    for (guint i = 0; i < kbctl_n_commands; i++) {
        const KbctlCommand *c = &kbctl_commands[i];
        if (strncmp(c->path, word, n) != 0 || c->path[n] != ' ')
            continue;
        fprintf(out, "\nkbctl %s: %s\n  Usage: kbctl %s %s\n", c->path, c->summary, c->path,
                c->usage);
        if (c->opts[0].name != NULL)
            print_opts(out, c->opts);
    }
    fprintf(out, "\nGlobal flags:\n");
    print_opts(out, kbctl_global_opts);
    fprintf(out, "\nRun 'kbctl %s SUBCOMMAND --help' for one of them in full.\n", word);
}

static gboolean wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return TRUE;
    return FALSE;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static const KbctlOpt *global_opt(const char *arg)
{
    for (const KbctlOpt *o = kbctl_global_opts; o->name != NULL; o++) {
        if (arg[1] == '-') {
            size_t n = strlen(o->name);
            if (strncmp(arg + 2, o->name, n) == 0 && (arg[2 + n] == '\0' || arg[2 + n] == '='))
                return o;
        } else if (o->short_name != 0 && arg[1] == o->short_name) {
            return o;
        }
    }
    return NULL;
}

/* Indices in @argv of the first two words that are not flags or global flags' values. */
static guint command_words(int argc, char **argv, int *idx)
{
    guint n = 0;
    for (int i = 1; i < argc && n < 2; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (a[0] == '-' && a[1] != '\0') {
            const KbctlOpt *o = global_opt(a);
            gboolean inline_value = strchr(a, '=') != NULL || (a[1] != '-' && a[2] != '\0');
            if (o != NULL && o->kind != KBCTL_OPT_BOOL && !inline_value)
                i++;
            continue;
        }
        idx[n++] = i;
    }
    return n;
}

static const KbctlCommand *find_command(const char *path)
{
    for (guint i = 0; i < kbctl_n_commands; i++)
        if (strcmp(kbctl_commands[i].path, path) == 0)
            return &kbctl_commands[i];
    return NULL;
}

/* The commands starting with "@word " ("top node", "top job"), as "node|job" (@sep "|"); NULL
 * if none. */
static char *subcommands(const char *word, const char *sep)
{
    g_autoptr(GString) s = g_string_new(NULL);
    size_t n = strlen(word);
    for (guint i = 0; i < kbctl_n_commands; i++) {
        const char *p = kbctl_commands[i].path;
        if (strncmp(p, word, n) == 0 && p[n] == ' ')
            g_string_append_printf(s, "%s%s", s->len > 0 ? sep : "", p + n + 1);
    }
    return s->len > 0 ? g_strdup(s->str) : NULL;
}

static gboolean parse_output(Kbctl *k, GError **error)
{
    static const char *const names[] = {"table", "wide", "json", "yaml", "name"};
    const char *o = kbctl_args_str(k->args, "output");
    if (o == NULL)
        return TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        if (strcmp(o, names[i]) == 0) {
            k->output = (KbctlOutput)i;
            return TRUE;
        }
    }
    kbctl_usage_error(error, "-o %s: unknown output format; use table, wide, json, yaml or name",
                      o);
    return FALSE;
}

static int usage(const char *path, const char *message)
{
    fprintf(stderr, "kbctl%s%s: %s\nRun 'kbctl%s%s --help' for usage.\n", path ? " " : "",
            path ? path : "", message, path ? " " : "", path ? path : "");
    return KBCTL_EXIT_USAGE;
}

/* Which command @argv names; a usage message in @why when none. */
static const KbctlCommand *resolve(int argc, char **argv, int *idx, guint *n_words, char **why)
{
    guint n = command_words(argc, argv, idx);
    *n_words = 0;
    if (n == 0) {
        *why = g_strdup("no command given");
        return NULL;
    }
    if (n == 2) {
        g_autofree char *two = g_strdup_printf("%s %s", argv[idx[0]], argv[idx[1]]);
        const KbctlCommand *c = find_command(two);
        if (c != NULL) {
            *n_words = 2;
            return c;
        }
    }
    const KbctlCommand *c = find_command(argv[idx[0]]);
    g_autofree char *subs = subcommands(argv[idx[0]], "|");
    if (c != NULL) {
        *n_words = 1;
        return c;
    }
    if (subs != NULL)
        *why = n == 2 ? g_strdup_printf("unknown command \"%s %s\"; use %s %s", argv[idx[0]],
                                        argv[idx[1]], argv[idx[0]], subs)
                      : g_strdup_printf("%s what? use %s %s", argv[idx[0]], argv[idx[0]], subs);
    else
        *why = g_strdup_printf("unknown command \"%s\"", argv[idx[0]]);
    return NULL;
}

static int run(const KbctlCommand *cmd, int argc, char **argv, const int *idx, guint n_words)
{
    g_autoptr(GPtrArray) rest = g_ptr_array_new();
    for (int i = 1; i < argc; i++)
        if (!((n_words > 0 && i == idx[0]) || (n_words > 1 && i == idx[1])))
            g_ptr_array_add(rest, argv[i]);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbctlArgs) args =
            kbctl_args_parse(cmd->opts, (int)rest->len, (char **)rest->pdata, &error);
    if (args == NULL)
        return usage(cmd->path, error->message);
    if (kbctl_args_bool(args, "help")) {
        kbctl_print_help(stdout, cmd);
        return KBCTL_EXIT_OK;
    }
    Kbctl k = {.path = cmd->path, .args = args, .out = stdout, .now = time(NULL)};
    gboolean ok = parse_output(&k, &error);
    k.colour = (k.output == KBCTL_OUT_TABLE || k.output == KBCTL_OUT_WIDE) &&
               kbctl_colour_wanted(stdout);
    ok = ok && cmd->run(&k, &error);
    fflush(stdout);
    g_clear_pointer(&k.client, kb_client_free);
    g_free(k.namespace_);
    if (ok)
        return KBCTL_EXIT_OK;
    if (g_error_matches(error, KBCTL_ERROR, KBCTL_ERROR_USAGE))
        return usage(cmd->path, error->message);
    fprintf(stderr, "kbctl %s: %s\n", cmd->path, error->message);
    return KBCTL_EXIT_ERROR;
}

int kbctl_main(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("kbctl %s\n", KB_VERSION);
            return KBCTL_EXIT_OK;
        }
    }
    int idx[2] = {0, 0};
    guint n_words = 0;
    g_autofree char *why = NULL;
    const KbctlCommand *cmd = resolve(argc, argv, idx, &n_words, &why);
    if (cmd == NULL) {
        gboolean no_word = strcmp(why, "no command given") == 0;
        gboolean help = !no_word && strcmp(argv[idx[0]], "help") == 0;
        if (!no_word && !help && wants_help(argc, argv)) {
            g_autofree char *subs = subcommands(argv[idx[0]], "|");
            if (subs != NULL) {
                print_group_help(stdout, argv[idx[0]]);
                return KBCTL_EXIT_OK;
            }
        }
        if (help || (no_word && wants_help(argc, argv))) {
            kbctl_print_help(stdout, NULL);
            return KBCTL_EXIT_OK;
        }
        if (no_word)
            kbctl_print_help(stderr, NULL);
        return usage(NULL, why);
    }
    return run(cmd, argc, argv, idx, n_words);
}

/* ---- completion ---------------------------------------------------------------------------- */

static void flag_words(GString *s, const KbctlOpt *opts)
{
    for (const KbctlOpt *o = opts; o->name != NULL; o++) {
        g_string_append_printf(s, " --%s", o->name);
        if (o->short_name != 0)
            g_string_append_printf(s, " -%c", o->short_name);
    }
}

static void value_flags(GString *s, const KbctlOpt *opts)
{
    for (const KbctlOpt *o = opts; o->name != NULL; o++) {
        if (o->kind == KBCTL_OPT_BOOL)
            continue;
        g_string_append_printf(s, "%s--%s", s->len > 0 ? "|" : "", o->name);
        if (o->short_name != 0)
            g_string_append_printf(s, "|-%c", o->short_name);
    }
}

static const char completion_head[] =
        "# bash completion for kbctl. Load it with: source <(kbctl completion bash)\n"
        "_kbctl_conn() {\n"
        "    local i w\n"
        "    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do\n"
        "        w=${COMP_WORDS[i]}\n"
        "        case \"$w\" in\n"
        "            -n|--namespace|-s|--server|--kubeconfig|--context|--token)\n"
        "                printf '%s\\n%s\\n' \"$w\" \"${COMP_WORDS[i+1]}\";;\n"
        "            --namespace=*|--server=*|--kubeconfig=*|--context=*|-A|--all-namespaces)\n"
        "                printf '%s\\n' \"$w\";;\n"
        "        esac\n"
        "    done\n"
        "}\n"
        "_kbctl() {\n"
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
        "    local cmd=\"\" i w skip=0 conn\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        w=${COMP_WORDS[i]}\n"
        "        if ((skip)); then skip=0; continue; fi\n"
        "        case \"$w\" in\n"
        "            --) break;;\n";

/* TRUE when @i is the first command of the table whose path starts with @word and a space. */
static gboolean first_of_group(guint i, const char *word)
{
    size_t n = strlen(word);
    for (guint j = 0; j < i; j++)
        if (strncmp(kbctl_commands[j].path, word, n) == 0 && kbctl_commands[j].path[n] == ' ')
            return FALSE;
    return TRUE;
}

static void completion_script(GString *s)
{
    g_autoptr(GString) values = g_string_new(NULL);
    g_autoptr(GString) top = g_string_new(NULL);
    value_flags(values, kbctl_global_opts);
    for (guint i = 0; i < kbctl_n_commands; i++) {
        value_flags(values, kbctl_commands[i].opts);
        g_auto(GStrv) words = g_strsplit(kbctl_commands[i].path, " ", 2);
        if (strstr(top->str, words[0]) == NULL)
            g_string_append_printf(top, "%s%s", top->len > 0 ? " " : "", words[0]);
    }
    g_string_append(s, completion_head);
    g_string_append_printf(s, "            %s) skip=1;;\n", values->str);
    g_string_append(s, "            -*) ;;\n"
                       "            *) cmd=\"${cmd:+$cmd }$w\";;\n"
                       "        esac\n"
                       "    done\n"
                       "    mapfile -t conn < <(_kbctl_conn)\n"
                       "    case \"$prev\" in\n"
                       "        -o|--output) COMPREPLY=($(compgen -W \"table wide json yaml "
                       "name\" -- \"$cur\")); return;;\n"
                       "        --kubeconfig|--certificate-authority|--sync-dir) "
                       "COMPREPLY=($(compgen -f -- \"$cur\")); return;;\n"
                       "        -q|--queue) COMPREPLY=($(compgen -W \"$(kbctl \"${conn[@]}\" "
                       "queue list -o name 2>/dev/null)\" -- \"$cur\")); return;;\n");
    g_string_append_printf(s, "        %s) return;;\n", values->str);
    g_string_append(s, "    esac\n    case \"$cmd\" in\n");
    g_string_append_printf(s, "        \"\") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));;\n",
                           top->str);
    for (guint i = 0; i < kbctl_n_commands; i++) {
        const KbctlCommand *c = &kbctl_commands[i];
        g_auto(GStrv) words = g_strsplit(c->path, " ", 2);
        g_autofree char *subs = subcommands(words[0], " ");
        if (words[1] != NULL && first_of_group(i, words[0]))
            g_string_append_printf(s,
                                   "        %s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));;\n",
                                   words[0], subs != NULL ? subs : "");
        g_autoptr(GString) flags = g_string_new(NULL);
        flag_words(flags, c->opts);
        flag_words(flags, kbctl_global_opts);
        const char *what = c->complete == NULL ? "\"\""
                           : strcmp(c->complete, "jobs") == 0
                                   ? "\"$(kbctl \"${conn[@]}\" list -o name 2>/dev/null)\""
                           : strcmp(c->complete, "queues") == 0
                                   ? "\"$(kbctl \"${conn[@]}\" queue list -o name 2>/dev/null)\""
                                   : "bash";
        g_string_append_printf(s,
                               "        \"%s\") if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "
                               "\"%s\" -- \"$cur\")); else COMPREPLY=($(compgen -W %s -- "
                               "\"$cur\")); fi;;\n",
                               c->path, flags->str + 1, what);
        g_string_append_printf(s,
                               "        \"%s \"*) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));;\n",
                               c->path, flags->str + 1);
    }
    g_string_append(s, "    esac\n}\ncomplete -F _kbctl kbctl\n");
}

gboolean kbctl_cmd_completion(Kbctl *k, GError **error)
{
    guint n = 0;
    const char *const *pos = kbctl_args_positional(k->args, &n);
    if (n != 1 || strcmp(pos[0], "bash") != 0) {
        kbctl_usage_error(error, "%s%s: only bash is supported", n == 0 ? "which shell? " : "",
                          n > 0 ? pos[0] : "");
        return FALSE;
    }
    g_autoptr(GString) s = g_string_new(NULL);
    completion_script(s);
    fputs(s->str, k->out);
    return TRUE;
}
