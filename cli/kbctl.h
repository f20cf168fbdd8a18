/*
 * kbctl: the command line data scientists use to submit, watch and understand their jobs.
 *
 * One process runs one command. The command table (kbctl-cmds.c) names every command, its flags
 * and its handler; the same table drives parsing, --help and `kbctl completion bash`. A handler
 * returns TRUE, or FALSE with an error: KBCTL_ERROR_USAGE exits 2 (a usage mistake, said with the
 * flag and the value), anything else exits 1 (the server said no, or the object does not exist;
 * the message names the object and the field).
 *
 * Output goes to stdout as a table (default), a wide table, JSON, YAML or names (-o). Colours
 * only when stdout is a terminal and NO_COLOR is unset (https://no-color.org), TERM not "dumb".
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>
#include <stdio.h>

#include "kube/kb-client.h"

/* json-c has no autoptr of its own; one here for kbctl's modules. */
typedef json_object KbctlJson;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbctlJson, json_object_put)

#define KBCTL_EXIT_OK    0
#define KBCTL_EXIT_ERROR 1
#define KBCTL_EXIT_USAGE 2

#define KBCTL_ERROR (kbctl_error_quark())
GQuark kbctl_error_quark(void);
typedef enum {
    KBCTL_ERROR_USAGE,     /* exit 2 */
    KBCTL_ERROR_NOT_FOUND, /* exit 1 */
    KBCTL_ERROR_FAILED,    /* exit 1 */
} KbctlErrorCode;

/* The default scheduler name a submitted job asks for. */
#define KBCTL_SCHEDULER_NAME "kube-batchd"

typedef enum {
    KBCTL_OUT_TABLE,
    KBCTL_OUT_WIDE,
    KBCTL_OUT_JSON,
    KBCTL_OUT_YAML,
    KBCTL_OUT_NAME,
} KbctlOutput;

/* ---- flags --------------------------------------------------------------------------------- */

typedef enum {
    KBCTL_OPT_BOOL,   /* --flag */
    KBCTL_OPT_STRING, /* --flag VALUE or --flag=VALUE; the last one wins */
    KBCTL_OPT_LIST,   /* repeatable: every value kept in order */
} KbctlOptKind;

typedef struct {
    const char *name; /* long name without "--" */
    char short_name;  /* 0: none */
    KbctlOptKind kind;
    const char *value; /* placeholder in help ("N"), NULL for BOOL */
    const char *help;
} KbctlOpt;

/* Parsed command line of one command: flags by long name, positional arguments, and what
 * followed "--". */
typedef struct KbctlArgs KbctlArgs;

/*
 * Parse @argv (@argc items, the command words already removed) against @opts (terminated by an
 * entry with name NULL) and the global flags. Returns NULL with KBCTL_ERROR_USAGE for an unknown
 * flag, a missing value, or a value given to a boolean flag.
 */
KbctlArgs *kbctl_args_parse(const KbctlOpt *opts, int argc, char **argv, GError **error);
void kbctl_args_free(KbctlArgs *args);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbctlArgs, kbctl_args_free)

gboolean kbctl_args_bool(const KbctlArgs *args, const char *name);
/* The value of a STRING flag, NULL when not given. Borrowed. */
const char *kbctl_args_str(const KbctlArgs *args, const char *name);
/* The values of a LIST flag (NULL-terminated, possibly empty). Borrowed. */
const char *const *kbctl_args_list(const KbctlArgs *args, const char *name);
/* An integer flag in [@min, @max], @def when not given; KBCTL_ERROR_USAGE names the flag and
 * the value otherwise. */
gboolean kbctl_args_int(const KbctlArgs *args, const char *name, gint64 def, gint64 min, gint64 max,
                        gint64 *out, GError **error);
/* Positional arguments (NULL-terminated) and their count. Borrowed. */
const char *const *kbctl_args_positional(const KbctlArgs *args, guint *n);
/* Arguments after "--" (NULL-terminated, possibly empty). Borrowed. */
const char *const *kbctl_args_rest(const KbctlArgs *args, guint *n);

/* The flags every command takes (terminated by a NULL name). */
extern const KbctlOpt kbctl_global_opts[];

/* ---- the running command -----------------------------------------------------------------------
 */

typedef struct {
    const char *path; /* "submit tf", "list", ... */
    KbctlArgs *args;
    KbctlOutput output;
    gboolean colour;
    FILE *out;
    /* Connection, made on first use by kbctl_client(). */
    KbClient *client;
    char *namespace_;
    gint64 now; /* unix seconds, read once so that every age in one output agrees */
} Kbctl;

/* The client for the configured server (see kbctl-conn.c): flags, $KUBECONFIG, ~/.kube/config,
 * in-cluster. Borrowed; NULL with the configuration error. */
KbClient *kbctl_client(Kbctl *k, GError **error);
/* The namespace: -n, else the kubeconfig context's namespace, else the in-cluster one, else
 * "default". Borrowed. */
const char *kbctl_namespace(Kbctl *k);

/* Set a usage error (exit 2); printf-style message. */
void kbctl_usage_error(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* ---- the command table --------------------------------------------------------------------- */

typedef struct {
    const char *path;    /* "queue list" */
    const char *usage;   /* "NAME [--replica worker-0] [-f] [--tail N]" */
    const char *summary; /* one line */
    const char *help;    /* paragraphs after the usage (may be NULL) */
    const KbctlOpt *opts;
    gboolean (*run)(Kbctl *k, GError **error);
    /* What completes the first positional: NULL, "jobs" or "queues". */
    const char *complete;
} KbctlCommand;

extern const KbctlCommand kbctl_commands[];
extern const guint kbctl_n_commands;

/* Run the command line (argv[0] is the program). Returns the exit code. */
int kbctl_main(int argc, char **argv);

/* Print the help of @cmd (or the top-level help when NULL) to @out. */
void kbctl_print_help(FILE *out, const KbctlCommand *cmd);

/* Command handlers (one module each). */
gboolean kbctl_cmd_submit_tf(Kbctl *k, GError **error);
gboolean kbctl_cmd_list(Kbctl *k, GError **error);
gboolean kbctl_cmd_get(Kbctl *k, GError **error);
gboolean kbctl_cmd_why(Kbctl *k, GError **error);
gboolean kbctl_cmd_delete(Kbctl *k, GError **error);
gboolean kbctl_cmd_wait(Kbctl *k, GError **error);
gboolean kbctl_cmd_logs(Kbctl *k, GError **error);
gboolean kbctl_cmd_top_node(Kbctl *k, GError **error);
gboolean kbctl_cmd_top_job(Kbctl *k, GError **error);
gboolean kbctl_cmd_queue_list(Kbctl *k, GError **error);
gboolean kbctl_cmd_queue_get(Kbctl *k, GError **error);
gboolean kbctl_cmd_completion(Kbctl *k, GError **error);
