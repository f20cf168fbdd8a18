/* Command-line flags of kbctl (see kbctl.h): kubectl's conventions, --flag VALUE, --flag=VALUE,
 * -f VALUE, -fVALUE, "--" ending the flags; global flags anywhere on the line. */
#include "cli/kbctl.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK(kbctl - error - quark, kbctl_error)

const KbctlOpt kbctl_global_opts[] = {
        {"namespace", 'n', KBCTL_OPT_STRING, "NS",
         "the namespace (default: the kubeconfig context's, else \"default\")"},
        {"output", 'o', KBCTL_OPT_STRING, "FORMAT", "table (default), wide, json, yaml or name"},
        {"kubeconfig", 0, KBCTL_OPT_STRING, "FILE",
         "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)"},
        {"context", 0, KBCTL_OPT_STRING, "NAME", "kubeconfig context (default: current-context)"},
        {"server", 's', KBCTL_OPT_STRING, "URL", "the API server, overriding the kubeconfig's"},
        {"token", 0, KBCTL_OPT_STRING, "TOKEN", "bearer token, overriding the kubeconfig's"},
        {"certificate-authority", 0, KBCTL_OPT_STRING, "FILE",
         "CA certificate file to verify the server with"},
        {"insecure-skip-tls-verify", 0, KBCTL_OPT_BOOL, NULL,
         "do not verify the server's certificate (insecure)"},
        {"help", 'h', KBCTL_OPT_BOOL, NULL, "show this help"},
        {"version", 0, KBCTL_OPT_BOOL, NULL, "print the version (the commit kbctl was built from)"},
        {NULL},
};

struct KbctlArgs {
    GHashTable *values; /* long name -> GPtrArray of char* (BOOL: one "true") */
    GPtrArray *positional;
    GPtrArray *rest;
    GPtrArray *empty;
};

void kbctl_usage_error(GError **error, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *msg = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_set_error_literal(error, KBCTL_ERROR, KBCTL_ERROR_USAGE, msg);
}

void kbctl_args_free(KbctlArgs *args)
{
    if (args == NULL)
        return;
    g_hash_table_unref(args->values);
    g_ptr_array_unref(args->positional);
    g_ptr_array_unref(args->rest);
    g_ptr_array_unref(args->empty);
    g_free(args);
}

static const KbctlOpt *find_in(const KbctlOpt *opts, const char *name, char short_name)
{
    for (const KbctlOpt *o = opts; o != NULL && o->name != NULL; o++) {
        if (name != NULL && strcmp(o->name, name) == 0)
            return o;
        if (name == NULL && short_name != 0 && o->short_name == short_name)
            return o;
    }
    return NULL;
}

static const KbctlOpt *find_opt(const KbctlOpt *opts, const char *name, char short_name)
{
    const KbctlOpt *o = find_in(opts, name, short_name);
    return o != NULL ? o : find_in(kbctl_global_opts, name, short_name);
}

static void add_value(KbctlArgs *args, const KbctlOpt *o, const char *value)
{
    GPtrArray *vals = g_hash_table_lookup(args->values, o->name);
    if (vals == NULL) {
        vals = g_ptr_array_new_null_terminated(1, g_free, TRUE);
        g_hash_table_insert(args->values, (gpointer)o->name, vals);
    }
    if (o->kind != KBCTL_OPT_LIST)
        g_ptr_array_set_size(vals, 0);
    g_ptr_array_add(vals, g_strdup(value));
}

/* One flag at argv[*i]; consumes its value from the next argument when needed. */
static gboolean parse_flag(KbctlArgs *args, const KbctlOpt *opts, int argc, char **argv, int *i,
                           GError **error)
{
    const char *arg = argv[*i];
    const KbctlOpt *o;
    const char *inline_value = NULL;
    g_autofree char *shown = NULL;
    if (arg[1] == '-') {
        const char *eq = strchr(arg + 2, '=');
        g_autofree char *name = eq != NULL ? g_strndup(arg + 2, eq - arg - 2) : g_strdup(arg + 2);
        inline_value = eq != NULL ? eq + 1 : NULL;
        o = find_opt(opts, name, 0);
        shown = g_strdup_printf("--%s", name);
    } else {
        o = find_opt(opts, NULL, arg[1]);
        inline_value = arg[2] != '\0' ? arg + 2 : NULL;
        if (inline_value != NULL && *inline_value == '=')
            inline_value++;
        shown = g_strdup_printf("-%c", arg[1]);
    }
    if (o == NULL) {
        kbctl_usage_error(error, "unknown flag %s", shown);
        return FALSE;
    }
    if (o->kind == KBCTL_OPT_BOOL) {
        if (inline_value != NULL && strcmp(inline_value, "true") != 0 &&
            strcmp(inline_value, "false") != 0) {
            kbctl_usage_error(error, "%s: invalid value \"%s\": expected true or false", shown,
                              inline_value);
            return FALSE;
        }
        if (inline_value == NULL || strcmp(inline_value, "true") == 0)
            add_value(args, o, "true");
        else
            g_hash_table_remove(args->values, o->name);
        return TRUE;
    }
    if (inline_value == NULL) {
        if (*i + 1 >= argc) {
            kbctl_usage_error(error, "%s: missing value (%s)", shown, o->value);
            return FALSE;
        }
        inline_value = argv[++*i];
    }
    add_value(args, o, inline_value);
    return TRUE;
}

KbctlArgs *kbctl_args_parse(const KbctlOpt *opts, int argc, char **argv, GError **error)
{
    g_autoptr(KbctlArgs) args = g_new0(KbctlArgs, 1);
    args->values =
            g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_ptr_array_unref);
    args->positional = g_ptr_array_new_with_free_func(g_free);
    args->rest = g_ptr_array_new_with_free_func(g_free);
    args->empty = g_ptr_array_new();
    g_ptr_array_add(args->empty, NULL);
    gboolean after_dashes = FALSE;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (after_dashes) {
            g_ptr_array_add(args->rest, g_strdup(a));
        } else if (strcmp(a, "--") == 0) {
            after_dashes = TRUE;
        } else if (a[0] == '-' && a[1] != '\0') {
            if (!parse_flag(args, opts, argc, argv, &i, error))
                return NULL;
        } else {
            g_ptr_array_add(args->positional, g_strdup(a));
        }
    }
    g_ptr_array_add(args->positional, NULL);
    g_ptr_array_add(args->rest, NULL);
    return g_steal_pointer(&args);
}

gboolean kbctl_args_bool(const KbctlArgs *args, const char *name)
{
    return g_hash_table_contains(args->values, name);
}

const char *kbctl_args_str(const KbctlArgs *args, const char *name)
{
    GPtrArray *vals = g_hash_table_lookup(args->values, name);
    return vals != NULL && vals->len > 0 ? g_ptr_array_index(vals, vals->len - 1) : NULL;
}

const char *const *kbctl_args_list(const KbctlArgs *args, const char *name)
{
    GPtrArray *vals = g_hash_table_lookup(args->values, name);
    if (vals == NULL)
        return (const char *const *)args->empty->pdata;
    return (const char *const *)vals->pdata;
}

gboolean kbctl_args_int(const KbctlArgs *args, const char *name, gint64 def, gint64 min, gint64 max,
                        gint64 *out, GError **error)
{
    const char *v = kbctl_args_str(args, name);
    gint64 n;
    *out = def;
    if (v == NULL)
        return TRUE;
    if (!g_ascii_string_to_signed(v, 10, min, max, &n, NULL)) {
        kbctl_usage_error(error,
                          "--%s: invalid value \"%s\": expected an integer from %" G_GINT64_FORMAT
                          " to %" G_GINT64_FORMAT,
                          name, v, min, max);
        return FALSE;
    }
    *out = n;
    return TRUE;
}

const char *const *kbctl_args_positional(const KbctlArgs *args, guint *n)
{
    if (n != NULL)
        *n = args->positional->len - 1;
    return (const char *const *)args->positional->pdata;
}

const char *const *kbctl_args_rest(const KbctlArgs *args, guint *n)
{
    if (n != NULL)
        *n = args->rest->len - 1;
    return (const char *const *)args->rest->pdata;
}
