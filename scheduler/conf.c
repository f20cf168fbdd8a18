/* Scheduler configuration (kube-batch/Volcano format); see conf.h. */
#include "scheduler/conf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kube/kb-error.h"
#include "policies/plugin.h"
#include "scheduler/actions.h"

static const char default_yaml[] = "actions: \"enqueue, reserve, allocate, reclaim\"\n"
                                   "configurations:\n"
                                   "- name: reclaim\n"
                                   "  arguments:\n"
                                   "    borrowedLongJobsOnly: true\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: priority\n"
                                   "  - name: gang\n"
                                   "  - name: conformance\n"
                                   "- plugins:\n"
                                   "  - name: drf\n"
                                   "  - name: predicates\n"
                                   "  - name: proportion\n"
                                   "  - name: nodeorder\n"
                                   "    arguments:\n"
                                   "      nodeorder.leastrequested.weight: 0\n"
                                   "      nodeorder.mostrequested.weight: 1\n"
                                   "      nodeorder.balancedresource.weight: 0\n"
                                   "  - name: gpu-topology\n"
                                   "  - name: fgd\n";

static const char *const switch_names[KB_SWITCH_MAX] = {
        [KB_SWITCH_JOB_ORDER] = "enableJobOrder",
        [KB_SWITCH_JOB_READY] = "enableJobReady",
        [KB_SWITCH_JOB_PIPELINED] = "enableJobPipelined",
        [KB_SWITCH_TASK_ORDER] = "enableTaskOrder",
        [KB_SWITCH_PREEMPTABLE] = "enablePreemptable",
        [KB_SWITCH_RECLAIMABLE] = "enableReclaimable",
        [KB_SWITCH_QUEUE_ORDER] = "enableQueueOrder",
        [KB_SWITCH_PREDICATE] = "enablePredicate",
        [KB_SWITCH_NODE_ORDER] = "enableNodeOrder",
        [KB_SWITCH_JOB_ENQUEUEABLE] = "enableJobEnqueued",
        [KB_SWITCH_ALLOCATABLE] = "enableAllocatable",
};

/*
 * Plugins and actions of Volcano and kube-batch that kube-batchd does not implement, and what
 * it does with them (docs/configuration.md, "Volcano and kube-batch configuration files", has the same table):
 * dropped with a warning saying why it does not apply, or refused because dropping it would
 * silently change what the file means. --strict-config refuses both. Names in neither the
 * registries nor this table are refused as unknown (a typo of "gang" must not drop gangs).
 */
typedef struct {
    const char *name;
    gboolean refuse;
    const char *why;
} Foreign;

static const Foreign foreign_plugins[] = {
        {"overcommit", FALSE,
         "enqueue admits jobs against the idle capacity, with no overcommit factor"},
        {"network-topology-aware", FALSE,
         "HyperNodes are not read; gpu-topology packs gangs by NVLink island and rack"},
        {"task-topology", FALSE,
         "affinity between a job's tasks is a preference; gangs are packed on few nodes"},
        {"resource-strategy-fit", FALSE, "nodes are scored by nodeorder and binpack"},
        {"rescheduling", FALSE, "kube-batchd never evicts running pods to rebalance nodes"},
        {"usage", FALSE, "node usage metrics are not read; nodes are scored by requests"},
        {"resourcequota", FALSE, "the API server enforces ResourceQuotas when pods are created"},
        {"pdb", FALSE,
         "evictions go through the Eviction API, which refuses to break a PodDisruptionBudget"},
        {"numa-aware", TRUE,
         "NUMA placement is a hard constraint: pods would bind where the kubelet's topology "
         "manager rejects them"},
        {"numaaware", TRUE,
         "NUMA placement is a hard constraint: pods would bind where the kubelet's topology "
         "manager rejects them"},
        {"deviceshare", TRUE,
         "shared GPUs (vGPU) need devices chosen by the scheduler: pods would bind without them"},
        {"nodegroup", TRUE,
         "queue affinity to node groups is a hard constraint: jobs would land on other groups' "
         "nodes"},
        {"tdm", TRUE, "revocable-zone nodes would be open to every job at every hour"},
        {"cdp", TRUE,
         "pods would be evicted within their cooldown time (configurations: preempt minRunTime "
         "protects running gangs)"},
        {"capacity", TRUE,
         "queue capacities would not be enforced (the proportion plugin enforces capability "
         "and guarantee)"},
        {"extender", TRUE, "the extender service's filters would be skipped"},
};

static const Foreign foreign_actions[] = {
        {"shuffle", FALSE,
         "it evicts what the rescheduling plugin picks; kube-batchd does not "
         "reschedule"},
        {"gangpreempt", FALSE, "the preempt action evicts whole gangs; list preempt for it"},
        {"gangreclaim", FALSE, "the reclaim action evicts whole gangs; list reclaim for it"},
        {"elect", FALSE, "Volcano 1.0's election; the sla plugin and the reserve action do it"},
};

static const Foreign *find_foreign(const Foreign *table, gsize n, const char *name)
{
    for (gsize i = 0; i < n; i++) {
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    }
    return NULL;
}

const char *kb_conf_default_yaml(void)
{
    return default_yaml;
}

const char *kb_conf_switch_name(KbConfSwitch sw)
{
    return sw < KB_SWITCH_MAX ? switch_names[sw] : "?";
}

static void conf_plugin_clear(KbConfPlugin *p)
{
    g_free(p->name);
    g_clear_pointer(&p->arguments, g_hash_table_unref);
}

void kb_conf_free(KbConf *conf)
{
    if (conf == NULL)
        return;
    g_strfreev(conf->actions);
    for (guint t = 0; t < conf->n_tiers; t++) {
        for (guint i = 0; i < conf->tiers[t].n_plugins; i++)
            conf_plugin_clear(&conf->tiers[t].plugins[i]);
        g_free(conf->tiers[t].plugins);
    }
    g_free(conf->tiers);
    for (guint i = 0; i < conf->n_configurations; i++)
        conf_plugin_clear(&conf->configurations[i]);
    g_free(conf->configurations);
    g_clear_pointer(&conf->warnings, g_ptr_array_unref);
    g_free(conf);
}

/* ---- YAML document helpers ------------------------------------------------------------------ */

typedef struct {
    yaml_document_t *doc;
    KbConf *conf; /* for its warnings */
    KbConfFlags flags;
    guint warnings_left_out; /* past KB_CONF_MAX_WARNINGS */
} Doc;

/* Add a warning to the configuration, unless the same one is there already. */
static void G_GNUC_PRINTF(2, 3) warn(Doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *w = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    for (guint i = 0; i < d->conf->warnings->len; i++) {
        if (strcmp(d->conf->warnings->pdata[i], w) == 0)
            return;
    }
    if (d->conf->warnings->len >= KB_CONF_MAX_WARNINGS) {
        d->warnings_left_out++;
        return;
    }
    g_ptr_array_add(d->conf->warnings, g_steal_pointer(&w));
}

static yaml_node_t *node_at(Doc *d, int id)
{
    return yaml_document_get_node(d->doc, id);
}

static const char *scalar(yaml_node_t *n)
{
    return n != NULL && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static gulong line_of(yaml_node_t *n)
{
    return (gulong)n->start_mark.line + 1;
}

static gboolean parse_bool(const char *s, gboolean *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "On"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off", "Off"};
    for (guint i = 0; i < G_N_ELEMENTS(yes); i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = TRUE;
            return TRUE;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = FALSE;
            return TRUE;
        }
    }
    return FALSE;
}

static gboolean parse_actions(Doc *d, yaml_node_t *n, KbConf *conf, GError **error)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    if (scalar(n) != NULL) {
        g_auto(GStrv) parts = g_strsplit(scalar(n), ",", -1);
        for (guint i = 0; parts[i] != NULL; i++) {
            char *a = g_strstrip(parts[i]);
            if (*a != '\0')
                g_ptr_array_add(names, g_strdup(a));
        }
    } else if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++) {
            const char *a = scalar(node_at(d, *it));
            if (a == NULL) {
                g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: actions: not a string",
                            line_of(n));
                return FALSE;
            }
            g_ptr_array_add(names, g_strstrip(g_strdup(a)));
        }
    } else {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: actions: expected a string like \"enqueue, allocate\"", line_of(n));
        return FALSE;
    }
    if (names->len > KB_CONF_MAX_ACTIONS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "actions: %u actions, at most %d", names->len,
                    KB_CONF_MAX_ACTIONS);
        return FALSE;
    }
    for (guint i = 0; i < names->len;) {
        const char *a = names->pdata[i];
        if (kb_action_lookup(a) != NULL) {
            i++;
            continue;
        }
        const Foreign *f = find_foreign(foreign_actions, G_N_ELEMENTS(foreign_actions), a);
        if (f == NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "line %lu: actions: unknown action \"%s\" (known: %s)", line_of(n), a,
                        kb_action_names());
            return FALSE;
        }
        if ((d->flags & KB_CONF_STRICT) != 0) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "line %lu: actions: action \"%s\" is not implemented (--strict-config): "
                        "%s",
                        line_of(n), a, f->why);
            return FALSE;
        }
        warn(d, "action \"%s\" ignored: %s", a, f->why);
        g_ptr_array_remove_index(names, i);
    }
    g_ptr_array_add(names, NULL);
    g_strfreev(conf->actions);
    conf->n_actions = names->len - 1;
    conf->actions = (char **)g_ptr_array_steal(names, NULL);
    return TRUE;
}

/* The entry of @ops->arguments that names @key, or NULL. */
static const struct kb_plugin_arg *find_arg(const struct kb_plugin_ops *ops, const char *key)
{
    for (const struct kb_plugin_arg *a = ops->arguments; a != NULL && a->name != NULL; a++) {
        gsize len = strlen(a->name);
        if (len > 0 && a->name[len - 1] == '*') {
            if (strncmp(key, a->name, len - 1) == 0 && key[len - 1] != '\0')
                return a;
        } else if (strcmp(key, a->name) == 0) {
            return a;
        }
    }
    return NULL;
}

static gboolean check_value(const struct kb_plugin_arg *a, const char *v, GError **error)
{
    char *end = NULL;
    gint64 ns = 0;
    switch (a->kind) {
    case KB_ARG_NUMBER:
        g_ascii_strtod(v, &end);
        if (end != v && *end == '\0')
            return TRUE;
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "\"%s\" is not a number", v);
        return FALSE;
    case KB_ARG_GO_DURATION:
        if (!kb_conf_parse_go_duration(v, &ns, error))
            return FALSE;
        if (ns > 0)
            return TRUE;
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "\"%s\" is not a positive duration", v);
        return FALSE;
    case KB_ARG_STRING:
        break;
    }
    return TRUE;
}

/* Argument @k (value node @vn) of plugin @p: checked when the plugin reads it, else a warning
 * (an error with --strict-config). */
static gboolean check_argument(Doc *d, yaml_node_t *vn, const KbConfPlugin *p,
                               const struct kb_plugin_ops *ops, const char *k, GError **error)
{
    const struct kb_plugin_arg *a = find_arg(ops, k);
    if (a == NULL && (d->flags & KB_CONF_STRICT) != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: plugin \"%s\": argument \"%s\" is not implemented "
                    "(--strict-config)",
                    line_of(vn), p->name, k);
        return FALSE;
    }
    if (a == NULL) {
        warn(d, "plugin \"%s\": argument \"%s\" is not supported, ignored", p->name, k);
        return TRUE;
    }
    if (scalar(vn) == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: plugin \"%s\": argument %s: expected a single value", line_of(vn),
                    p->name, k);
        return FALSE;
    }
    if (!check_value(a, scalar(vn), error)) {
        g_prefix_error(error, "line %lu: plugin \"%s\": argument %s: ", line_of(vn), p->name, k);
        return FALSE;
    }
    return TRUE;
}

/* The arguments mapping @n into @p; with @ops (a plugin's), each is checked (check_argument). */
static gboolean parse_arguments(Doc *d, yaml_node_t *n, KbConfPlugin *p,
                                const struct kb_plugin_ops *ops, GError **error)
{
    if (n->type != YAML_MAPPING_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: plugin \"%s\": arguments: expected a mapping", line_of(n), p->name);
        return FALSE;
    }
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(d, pr->key));
        const char *v = scalar(node_at(d, pr->value));
        if (k == NULL)
            continue;
        if (g_hash_table_size(p->arguments) >= KB_CONF_MAX_ARGS) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "plugin \"%s\": more than %d arguments",
                        p->name, KB_CONF_MAX_ARGS);
            return FALSE;
        }
        if (ops != NULL && !check_argument(d, node_at(d, pr->value), p, ops, k, error))
            return FALSE;
        /* Non-scalar values (lists, maps) belong to plugins we do not implement: skipped. */
        if (v != NULL)
            g_hash_table_replace(p->arguments, g_strdup(k), g_strdup(v));
    }
    return TRUE;
}

static gboolean parse_plugin_key(Doc *d, const char *k, yaml_node_t *v, KbConfPlugin *p,
                                 GError **error)
{
    if (strcmp(k, "name") == 0)
        return TRUE;
    if (strcmp(k, "arguments") == 0)
        return parse_arguments(d, v, p, kb_plugin_lookup(p->name), error);
    for (int s = 0; s < KB_SWITCH_MAX; s++) {
        if (strcmp(k, switch_names[s]) != 0)
            continue;
        if (scalar(v) == NULL || !parse_bool(scalar(v), &p->enabled[s])) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "line %lu: plugin \"%s\": %s: expected true or false, got \"%s\"",
                        line_of(v), p->name, k, scalar(v) != NULL ? scalar(v) : "(not a scalar)");
            return FALSE;
        }
        return TRUE;
    }
    if (g_str_has_prefix(k, "enable") && (d->flags & KB_CONF_STRICT) != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: plugin \"%s\": switch \"%s\" is not implemented "
                    "(--strict-config)",
                    line_of(v), p->name, k);
        return FALSE;
    }
    if (g_str_has_prefix(k, "enable")) {
        /* Switches of newer Volcano releases (enableBestNode, ...): harmless to ignore. */
        warn(d, "plugin \"%s\": switch \"%s\" is not supported, ignored", p->name, k);
        return TRUE;
    }
    g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: plugin \"%s\": unknown field \"%s\"",
                line_of(v), p->name, k);
    return FALSE;
}

/*
 * A plugin we do not implement: FALSE with an error when it is refused (or unknown), else TRUE
 * with a warning (the caller drops the entry).
 */
static gboolean foreign_plugin(Doc *d, yaml_node_t *n, const char *name, GError **error)
{
    const Foreign *f = find_foreign(foreign_plugins, G_N_ELEMENTS(foreign_plugins), name);
    if (f == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: unknown plugin \"%s\" (known: %s)",
                    line_of(n), name, kb_plugin_names());
        return FALSE;
    }
    if (f->refuse) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: plugin \"%s\" is not implemented and cannot be ignored: %s",
                    line_of(n), name, f->why);
        return FALSE;
    }
    if ((d->flags & KB_CONF_STRICT) != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: plugin \"%s\" is not implemented (--strict-config): %s", line_of(n),
                    name, f->why);
        return FALSE;
    }
    warn(d, "plugin \"%s\" ignored: %s", name, f->why);
    return TRUE;
}

/* One plugin entry into @p; *@skip set (and @p left empty) for a plugin ignored with a
 * warning. */
static gboolean parse_plugin(Doc *d, yaml_node_t *n, KbConfPlugin *p, gboolean *skip,
                             GError **error)
{
    if (n->type != YAML_MAPPING_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: a plugin entry must be a mapping with a name", line_of(n));
        return FALSE;
    }
    for (int s = 0; s < KB_SWITCH_MAX; s++)
        p->enabled[s] = TRUE;
    p->arguments = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(d, pr->key));
        if (k == NULL || strcmp(k, "name") != 0 || scalar(node_at(d, pr->value)) == NULL)
            continue;
        if (p->name != NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "line %lu: plugin \"%s\": name given twice", line_of(node_at(d, pr->key)),
                        p->name);
            return FALSE;
        }
        p->name = g_strdup(scalar(node_at(d, pr->value)));
    }
    if (p->name == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: plugin entry without a name",
                    line_of(n));
        return FALSE;
    }
    if (kb_plugin_lookup(p->name) == NULL) {
        *skip = foreign_plugin(d, n, p->name, error);
        return *skip;
    }
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(d, pr->key));
        if (k != NULL && !parse_plugin_key(d, k, node_at(d, pr->value), p, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean parse_tier(Doc *d, yaml_node_t *n, KbConfTier *tier, GError **error)
{
    yaml_node_t *plugins = NULL;
    if (n->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
             pr++) {
            if (g_strcmp0(scalar(node_at(d, pr->key)), "plugins") == 0)
                plugins = node_at(d, pr->value);
        }
    }
    if (plugins == NULL || plugins->type != YAML_SEQUENCE_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: a tier must be a mapping with a list of plugins", line_of(n));
        return FALSE;
    }
    gsize count = plugins->data.sequence.items.top - plugins->data.sequence.items.start;
    if (count > KB_CONF_MAX_PLUGINS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "line %lu: %zu plugins in a tier, at most %d",
                    line_of(plugins), count, KB_CONF_MAX_PLUGINS);
        return FALSE;
    }
    tier->plugins = g_new0(KbConfPlugin, MAX(count, 1));
    for (gsize i = 0; i < count; i++) {
        KbConfPlugin *p = &tier->plugins[tier->n_plugins++];
        yaml_node_t *pn = node_at(d, plugins->data.sequence.items.start[i]);
        gboolean skip = FALSE;
        if (!parse_plugin(d, pn, p, &skip, error))
            return FALSE;
        if (skip) {
            conf_plugin_clear(p);
            memset(p, 0, sizeof(*p));
            tier->n_plugins--;
        }
    }
    return TRUE;
}

static gboolean parse_tiers(Doc *d, yaml_node_t *n, KbConf *conf, GError **error)
{
    if (n->type != YAML_SEQUENCE_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: tiers: expected a list",
                    line_of(n));
        return FALSE;
    }
    gsize count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count > KB_CONF_MAX_TIERS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "tiers: %zu tiers, at most %d", count,
                    KB_CONF_MAX_TIERS);
        return FALSE;
    }
    conf->tiers = g_new0(KbConfTier, count);
    for (gsize i = 0; i < count; i++) {
        conf->n_tiers++;
        if (!parse_tier(d, node_at(d, n->data.sequence.items.start[i]), &conf->tiers[i], error)) {
            g_prefix_error(error, "tier %zu: ", i + 1);
            return FALSE;
        }
    }
    return TRUE;
}

/* Action arguments that take a duration: checked when the file is read, not at every cycle. */
static const struct {
    const char *action, *key;
    gboolean duration; /* else a boolean */
} typed_args[] = {
        {"preempt", "minRunTime", TRUE},
        {"reclaim", "minRunTime", TRUE},
        {"preempt", "evictionBackoff", FALSE},
        {"reclaim", "evictionBackoff", FALSE},
        {"reclaim", "borrowedLongJobsOnly", FALSE},
};

static gboolean check_configuration(yaml_node_t *n, const KbConfPlugin *c, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(typed_args); i++) {
        const char *v = strcmp(c->name, typed_args[i].action) == 0
                                ? g_hash_table_lookup(c->arguments, typed_args[i].key)
                                : NULL;
        gint64 secs;
        gboolean b;
        if (v == NULL)
            continue;
        if (typed_args[i].duration && !kb_conf_parse_duration(v, &secs, error)) {
            g_prefix_error(error, "line %lu: configurations: \"%s\": %s: ", line_of(n), c->name,
                           typed_args[i].key);
            return FALSE;
        }
        if (!typed_args[i].duration && !parse_bool(v, &b)) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "line %lu: configurations: \"%s\": %s: expected true or false, got \"%s\"",
                        line_of(n), c->name, typed_args[i].key, v);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean parse_configuration(Doc *d, yaml_node_t *n, KbConfPlugin *c, GError **error)
{
    yaml_node_t *args = NULL;
    if (n->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
             pr++) {
            const char *k = scalar(node_at(d, pr->key));
            if (g_strcmp0(k, "name") == 0 && c->name != NULL) {
                g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                            "line %lu: configurations: \"%s\": name given twice",
                            line_of(node_at(d, pr->key)), c->name);
                return FALSE;
            }
            if (g_strcmp0(k, "name") == 0 && scalar(node_at(d, pr->value)) != NULL)
                c->name = g_strdup(scalar(node_at(d, pr->value)));
            else if (g_strcmp0(k, "arguments") == 0)
                args = node_at(d, pr->value);
        }
    }
    if (c->name == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "line %lu: configurations: an entry must be a mapping with a name", line_of(n));
        return FALSE;
    }
    c->arguments = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    if (args != NULL && !parse_arguments(d, args, c, NULL, error))
        return FALSE;
    return check_configuration(n, c, error);
}

static gboolean parse_configurations(Doc *d, yaml_node_t *n, KbConf *conf, GError **error)
{
    if (n->type != YAML_SEQUENCE_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: configurations: expected a list",
                    line_of(n));
        return FALSE;
    }
    gsize count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count > KB_CONF_MAX_ACTIONS) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "configurations: %zu entries, at most %d",
                    count, KB_CONF_MAX_ACTIONS);
        return FALSE;
    }
    conf->configurations = g_new0(KbConfPlugin, MAX(count, 1));
    for (gsize i = 0; i < count; i++) {
        conf->n_configurations++;
        yaml_node_t *cn = node_at(d, n->data.sequence.items.start[i]);
        if (!parse_configuration(d, cn, &conf->configurations[i], error))
            return FALSE;
    }
    return TRUE;
}

static gboolean parse_root(Doc *d, KbConf *conf, GError **error)
{
    yaml_node_t *root = yaml_document_get_root_node(d->doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "expected a mapping with \"actions\" and \"tiers\"");
        return FALSE;
    }
    gboolean have_actions = FALSE, have_tiers = FALSE;
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top;
         pr++) {
        const char *k = scalar(node_at(d, pr->key));
        yaml_node_t *v = node_at(d, pr->value);
        if (g_strcmp0(k, "actions") == 0) {
            if (!parse_actions(d, v, conf, error))
                return FALSE;
            have_actions = TRUE;
        } else if (g_strcmp0(k, "tiers") == 0) {
            if (have_tiers) {
                g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: tiers given twice",
                            line_of(v));
                return FALSE;
            }
            have_tiers = TRUE;
            if (!parse_tiers(d, v, conf, error))
                return FALSE;
        } else if (g_strcmp0(k, "configurations") == 0) {
            if (conf->configurations != NULL) {
                g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                            "line %lu: configurations given twice", line_of(v));
                return FALSE;
            }
            if (!parse_configurations(d, v, conf, error))
                return FALSE;
        } else if (g_strcmp0(k, "staleGangGrace") == 0 || g_strcmp0(k, "nodeLostAfter") == 0) {
            gint64 *out = k[0] == 's' ? &conf->stale_gang_grace : &conf->node_lost_after;
            if (scalar(v) == NULL || !kb_conf_parse_duration(scalar(v), out, error)) {
                if (scalar(v) == NULL)
                    g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "expected a duration");
                g_prefix_error(error, "line %lu: %s: ", line_of(v), k);
                return FALSE;
            }
        } else if (g_strcmp0(k, "metrics") != 0) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "line %lu: unknown field \"%s\"",
                        line_of(v), k != NULL ? k : "?");
            return FALSE;
        }
    }
    if (!have_actions) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "no \"actions\" given");
        return FALSE;
    }
    return TRUE;
}

/* Warnings about what the file combines (each part valid alone). */
static void check_combinations(Doc *d)
{
    if (kb_conf_find_plugin(d->conf, "sla") != NULL && !kb_conf_has_action(d->conf, "reserve"))
        warn(d, "plugin \"sla\": without the reserve action, jobs past their waiting time go "
                "first but hold no reservation");
    if (d->warnings_left_out > 0)
        g_ptr_array_add(d->conf->warnings,
                        g_strdup_printf("%u more warnings left out", d->warnings_left_out));
}

KbConf *kb_conf_parse(const char *text, gsize len, GError **error)
{
    return kb_conf_parse_flags(text, len, 0, error);
}

KbConf *kb_conf_parse_flags(const char *text, gsize len, KbConfFlags flags, GError **error)
{
    if (len > KB_CONF_MAX_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "scheduler configuration is %zu bytes, at most %d", len, KB_CONF_MAX_BYTES);
        return NULL;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "invalid YAML at line %lu: %s",
                    (gulong)parser.problem_mark.line + 1,
                    parser.problem != NULL ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        return NULL;
    }
    g_autoptr(KbConf) conf = g_new0(KbConf, 1);
    conf->warnings = g_ptr_array_new_with_free_func(g_free);
    conf->stale_gang_grace = KB_CONF_DEFAULT_STALE_GANG_GRACE;
    conf->node_lost_after = KB_CONF_DEFAULT_NODE_LOST_AFTER;
    Doc d = {&doc, conf, flags, 0};
    gboolean ok = parse_root(&d, conf, error);
    if (ok)
        check_combinations(&d);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return ok ? g_steal_pointer(&conf) : NULL;
}

KbConf *kb_conf_load(const char *path, GError **error)
{
    return kb_conf_load_flags(path, 0, error);
}

KbConf *kb_conf_load_flags(const char *path, KbConfFlags flags, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, error))
        return NULL;
    KbConf *conf = kb_conf_parse_flags(text, len, flags, error);
    if (conf == NULL)
        g_prefix_error(error, "%s: ", path);
    return conf;
}

KbConf *kb_conf_new_default(void)
{
    g_autoptr(GError) error = NULL;
    KbConf *conf = kb_conf_parse(default_yaml, strlen(default_yaml), &error);
    if (conf == NULL)
        g_error("built-in scheduler configuration: %s", error->message);
    return conf;
}

const KbConfPlugin *kb_conf_find_plugin(const KbConf *conf, const char *name)
{
    for (guint t = 0; t < conf->n_tiers; t++) {
        for (guint i = 0; i < conf->tiers[t].n_plugins; i++) {
            if (strcmp(conf->tiers[t].plugins[i].name, name) == 0)
                return &conf->tiers[t].plugins[i];
        }
    }
    return NULL;
}

gboolean kb_conf_has_action(const KbConf *conf, const char *action)
{
    for (guint i = 0; i < conf->n_actions; i++) {
        if (strcmp(conf->actions[i], action) == 0)
            return TRUE;
    }
    return FALSE;
}

gboolean kb_conf_reclaim_borrowed_only(const KbConf *conf)
{
    return conf != NULL && kb_conf_has_action(conf, "reclaim") &&
           kb_conf_arg_bool(kb_conf_find_configuration(conf, "reclaim"), "borrowedLongJobsOnly",
                            FALSE);
}

gdouble kb_conf_plugin_arg_double(const KbConfPlugin *plugin, const char *key, gdouble def)
{
    const char *v = plugin != NULL ? g_hash_table_lookup(plugin->arguments, key) : NULL;
    if (v == NULL)
        return def;
    char *end = NULL;
    gdouble d = g_ascii_strtod(v, &end);
    if (end == v || *end != '\0') {
        g_warning("scheduler configuration: plugin \"%s\": argument %s: \"%s\" is not a number",
                  plugin->name, key, v);
        return def;
    }
    return d;
}

const KbConfPlugin *kb_conf_find_configuration(const KbConf *conf, const char *action)
{
    for (guint i = 0; i < conf->n_configurations; i++) {
        if (strcmp(conf->configurations[i].name, action) == 0)
            return &conf->configurations[i];
    }
    return NULL;
}

#define DURATION_MAX_SECONDS (10LL * 366 * 24 * 3600)

/* "1h30m", "10m", "90s" or plain seconds into @out; FALSE when malformed or too long. */
static gboolean duration_value(const char *p, gint64 *out)
{
    gint64 total = 0;
    gboolean plain = TRUE;
    if (*p == '\0')
        return FALSE;
    while (*p != '\0') {
        if (!g_ascii_isdigit(*p))
            return FALSE;
        gint64 n = 0;
        while (g_ascii_isdigit(*p)) {
            n = n * 10 + (*p++ - '0');
            if (n > DURATION_MAX_SECONDS)
                return FALSE;
        }
        gint64 unit = 1;
        if (*p == 'h' || *p == 'm' || *p == 's') {
            unit = *p == 'h' ? 3600 : *p == 'm' ? 60 : 1;
            p++;
            plain = FALSE;
        } else if (*p != '\0' || !plain || total != 0) {
            return FALSE; /* a number without a unit only stands alone */
        }
        total += n * unit;
        if (total > DURATION_MAX_SECONDS)
            return FALSE;
    }
    *out = total;
    return TRUE;
}

gboolean kb_conf_parse_duration(const char *text, gint64 *seconds, GError **error)
{
    if (duration_value(text, seconds))
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                "\"%s\" is not a duration like \"10m\", \"1h30m\" or \"600\" (at most 10 years)",
                text);
    return FALSE;
}

gint64 kb_conf_arg_duration(const KbConfPlugin *entry, const char *key, gint64 def)
{
    const char *v = entry != NULL ? g_hash_table_lookup(entry->arguments, key) : NULL;
    gint64 secs;
    if (v == NULL || !kb_conf_parse_duration(v, &secs, NULL))
        return def;
    return secs;
}

gboolean kb_conf_arg_bool(const KbConfPlugin *entry, const char *key, gboolean def)
{
    const char *v = entry != NULL ? g_hash_table_lookup(entry->arguments, key) : NULL;
    gboolean b;
    return v != NULL && parse_bool(v, &b) ? b : def;
}

/* Nanoseconds per unit of a Go duration; the unit's length into @len, 0 when none matches. */
static gint64 go_unit(const char *p, gsize *len)
{
    static const struct {
        const char *name;
        gint64 ns;
    } units[] = {
            /* longest first: "ms" before "m", "ns" and "us" before "s" would not match anyway */
            {"ns", 1},
            {"us", 1000},
            {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
            {"\xce\xbcs", 1000}, /* U+03BC Greek mu */
            {"ms", 1000000},
            {"s", G_GINT64_CONSTANT(1000000000)},
            {"m", G_GINT64_CONSTANT(60000000000)},
            {"h", G_GINT64_CONSTANT(3600000000000)},
    };
    for (guint i = 0; i < G_N_ELEMENTS(units); i++) {
        gsize l = strlen(units[i].name);
        if (strncmp(p, units[i].name, l) == 0) {
            *len = l;
            return units[i].ns;
        }
    }
    *len = 0;
    return 0;
}

/* Go's time.ParseDuration, capped at GO_DURATION_MAX_NS; FALSE when malformed or too long. */
#define GO_DURATION_MAX_NS (G_GINT64_CONSTANT(290) * 366 * 24 * 3600 * 1000000000)

static gboolean go_duration_value(const char *p, gint64 *out)
{
    gboolean neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (strcmp(p, "0") == 0) {
        *out = 0;
        return TRUE;
    }
    if (*p == '\0')
        return FALSE;
    double total = 0;
    while (*p != '\0') {
        const char *start = p;
        double v = 0, scale = 1;
        while (g_ascii_isdigit(*p) && p - start < 20)
            v = v * 10 + (*p++ - '0');
        gboolean digits = p > start;
        if (*p == '.') {
            p++;
            for (int k = 0; g_ascii_isdigit(*p); k++, p++) {
                if (k < 18)
                    v += (*p - '0') * (scale /= 10);
                digits = TRUE;
            }
        }
        gsize len;
        gint64 unit = go_unit(p, &len);
        if (!digits || unit == 0)
            return FALSE;
        p += len;
        total += v * (double)unit;
        if (total > (double)GO_DURATION_MAX_NS)
            return FALSE;
    }
    *out = (gint64)total * (neg ? -1 : 1);
    return TRUE;
}

gboolean kb_conf_parse_go_duration(const char *text, gint64 *ns, GError **error)
{
    if (go_duration_value(text, ns))
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                "\"%s\" is not a duration like \"1h30m\", \"90s\" or \"500ms\" (units ns, us, ms, "
                "s, m, h; at most 290 years)",
                text);
    return FALSE;
}
