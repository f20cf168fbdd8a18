/*
 * Scheduler configuration in the kube-batch/Volcano format, parsed with libyaml:
 *
 *   actions: "enqueue, allocate"
 *   tiers:
 *   - plugins:
 *     - name: priority
 *     - name: gang
 *       enableJobOrder: false
 *     - name: conformance
 *   - plugins:
 *     - name: drf
 *     - name: predicates
 *     - name: proportion
 *     - name: nodeorder
 *       arguments:
 *         nodeorder.leastrequested.weight: 1
 *         nodeorder.mostrequested.weight: 0
 *         nodeorder.balancedresource.weight: 1
 *
 * Plugins and actions of Volcano and kube-batch that kube-batchd does not implement are decided
 * one by one (the table in conf.c, documented in docs/configuration.md, "Volcano and kube-batch
 * configuration files"): those that do not apply here are dropped from the configuration with
 * one warning each (KbConf.warnings, naming the plugin and why); those whose absence would silently change
 * what the file means (a hard placement constraint, an eviction protection, queue limits) are
 * refused. With KB_CONF_STRICT (kube-batchd --strict-config) everything not implemented is
 * refused: those plugins and actions, switches and arguments.
 *
 * Names no one knows are errors (KB_ERROR_CONFIG naming the value and the line), as are a
 * malformed document, a non-boolean enable* switch, an unknown field and a malformed value of
 * an argument a plugin reads (the plugin's `arguments` table, policies/plugin.h). An enable*
 * switch of newer Volcano releases, or a plugin argument, that we do not implement is a
 * warning. Other top-level keys Volcano knows (metrics) are accepted and ignored.
 *
 * Volcano's per-action `configurations` are kept (name and scalar arguments, as for plugins):
 *
 *   configurations:
 *   - name: preempt
 *     arguments:
 *       minRunTime: 10m        # a gang running for less is not a victim (scheduler/preempt.c)
 *       evictionBackoff: true  # the Nth eviction of a job needs 2^N x minRunTime
 *
 * Entries may name any action (Volcano's enqueue/allocate arguments are kept, unused). The
 * arguments preempt and reclaim know are checked when the file is read (minRunTime with
 * kb_conf_parse_duration, evictionBackoff a boolean), else KB_ERROR_CONFIG names the line, action,
 * key and value. At most
 * KB_CONF_MAX_ACTIONS entries.
 * Limits: KB_CONF_MAX_BYTES of input, KB_CONF_MAX_ACTIONS actions, KB_CONF_MAX_TIERS tiers,
 * KB_CONF_MAX_PLUGINS plugins per tier, KB_CONF_MAX_ARGS arguments per plugin,
 * KB_CONF_MAX_WARNINGS warnings kept (the rest counted in one more).
 */
#pragma once

#include <glib.h>

#define KB_CONF_MAX_BYTES    (1024 * 1024)
#define KB_CONF_MAX_ACTIONS  16
#define KB_CONF_MAX_TIERS    16
#define KB_CONF_MAX_PLUGINS  32
#define KB_CONF_MAX_ARGS     64
#define KB_CONF_MAX_WARNINGS 64 /* more are counted in one last warning */

/* The enable* switches of one plugin entry. */
typedef enum {
    KB_SWITCH_JOB_ORDER,       /* enableJobOrder */
    KB_SWITCH_JOB_READY,       /* enableJobReady */
    KB_SWITCH_JOB_PIPELINED,   /* enableJobPipelined */
    KB_SWITCH_TASK_ORDER,      /* enableTaskOrder */
    KB_SWITCH_PREEMPTABLE,     /* enablePreemptable */
    KB_SWITCH_RECLAIMABLE,     /* enableReclaimable */
    KB_SWITCH_QUEUE_ORDER,     /* enableQueueOrder */
    KB_SWITCH_PREDICATE,       /* enablePredicate */
    KB_SWITCH_NODE_ORDER,      /* enableNodeOrder */
    KB_SWITCH_JOB_ENQUEUEABLE, /* enableJobEnqueued (Volcano) */
    KB_SWITCH_ALLOCATABLE,     /* enableAllocatable (proportion's per-task queue check) */
    KB_SWITCH_MAX
} KbConfSwitch;

typedef struct {
    char *name;                      /* plugin name, validated against the plugin registry */
    gboolean enabled[KB_SWITCH_MAX]; /* TRUE unless the file says false (Volcano's default) */
    GHashTable *arguments;           /* char* -> char* (scalars as written); never NULL */
} KbConfPlugin;

typedef struct {
    KbConfPlugin *plugins;
    guint n_plugins;
} KbConfTier;

typedef struct {
    char **actions; /* NULL-terminated, validated against the action registry */
    guint n_actions;
    KbConfTier *tiers;
    guint n_tiers;
    /* Top-level `configurations` entries (name: the action; switches unused); may be 0. */
    KbConfPlugin *configurations;
    guint n_configurations;
    /* What the file asks for that kube-batchd ignores, one line each, once each (char*, owned;
     * never NULL): kube-batchd logs them at start. */
    GPtrArray *warnings;
    /* Gangs that lose a member (scheduler/stale.h), seconds: top-level `staleGangGrace` (how long
     * a bound gang may stay below minMember before the rest of it is evicted) and
     * `nodeLostAfter` (how long a node may be NotReady before its pods count as lost). */
    gint64 stale_gang_grace;
    gint64 node_lost_after;
} KbConf;

#define KB_CONF_DEFAULT_STALE_GANG_GRACE 60
#define KB_CONF_DEFAULT_NODE_LOST_AFTER  40

typedef enum {
    KB_CONF_STRICT = 1 << 0, /* refuse whatever is not implemented (--strict-config) */
} KbConfFlags;

/* The built-in default configuration text (deploy/base/scheduler.conf has the same content). */
const char *kb_conf_default_yaml(void);

/* Parse @len bytes of YAML. Returns a new KbConf or NULL with KB_ERROR_CONFIG / KB_ERROR_LIMIT. */
KbConf *kb_conf_parse(const char *text, gsize len, GError **error);
/* The same with @flags (KbConfFlags). */
KbConf *kb_conf_parse_flags(const char *text, gsize len, KbConfFlags flags, GError **error);
/* Read and parse @path; errors are prefixed with the file name. */
KbConf *kb_conf_load(const char *path, GError **error);
KbConf *kb_conf_load_flags(const char *path, KbConfFlags flags, GError **error);
/* The built-in default configuration, parsed. Never NULL. */
KbConf *kb_conf_new_default(void);
void kb_conf_free(KbConf *conf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbConf, kb_conf_free)

/* The first entry for plugin @name in any tier, or NULL. Borrowed. */
const KbConfPlugin *kb_conf_find_plugin(const KbConf *conf, const char *name);
/* TRUE when @action is configured. */
gboolean kb_conf_has_action(const KbConf *conf, const char *action);
/* reclaim is listed with borrowedLongJobsOnly: it takes back only long jobs run past their
 * queues' long-job limits (proportion borrows them idle GPUs; docs/configuration.md). */
gboolean kb_conf_reclaim_borrowed_only(const KbConf *conf);

/*
 * Argument @key of @plugin as a number (integers and decimals), or @def when absent or not a
 * number (a malformed value is logged once with g_warning naming the plugin, key and value).
 */
gdouble kb_conf_plugin_arg_double(const KbConfPlugin *plugin, const char *key, gdouble def);
/* The first `configurations` entry for action @action, or NULL. Borrowed. */
const KbConfPlugin *kb_conf_find_configuration(const KbConf *conf, const char *action);
/*
 * A duration: Go's time.ParseDuration subset "1h30m", "10m", "90s" (units h, m, s; integers), or
 * plain seconds "600". Non-negative, at most 10 years. FALSE with KB_ERROR_CONFIG naming the
 * value otherwise.
 */
gboolean kb_conf_parse_duration(const char *text, gint64 *seconds, GError **error);
/*
 * A duration as Go's time.ParseDuration reads it (what Volcano's files and annotations hold):
 * "1h2m3s4ms5us6ns", "1.5h", "300ms", "-2m", "0"; units ns, us (or µs), ms, s, m, h. Into @ns
 * (nanoseconds). FALSE with KB_ERROR_CONFIG naming the value when malformed or past 290 years.
 */
gboolean kb_conf_parse_go_duration(const char *text, gint64 *ns, GError **error);
/* Argument @key of @entry as a duration in seconds, or @def when @entry or the key is absent or
 * the value malformed (the parser already refused malformed durations it knows of). */
gint64 kb_conf_arg_duration(const KbConfPlugin *entry, const char *key, gint64 def);
/* Argument @key of @entry as a boolean ("true", "false", ...), or @def. */
gboolean kb_conf_arg_bool(const KbConfPlugin *entry, const char *key, gboolean def);
/* The switch's name as written in the file ("enableJobOrder"). Static. */
const char *kb_conf_switch_name(KbConfSwitch sw);
