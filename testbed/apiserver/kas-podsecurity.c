/*
 * Pod Security admission (see the header). Each check is a function over the pod's JSON that
 * adds its reason and detail to a list when the pod fails it; the table lists them in
 * kube-apiserver's order with their level, first policy version and the baseline check a
 * restricted one replaces.
 */
#include "testbed/apiserver/kas-podsecurity.h"

#include <stdlib.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-status.h"
#include "testbed/apiserver/kas-store.h"

/* ---- helpers: kube-apiserver's pluralize and joinQuote ----------------------------------------
 */

static const char *plural(const char *one, const char *many, guint n)
{
    return n == 1 ? one : many;
}

/* "\"a\", \"b\"" (Go's %q of each, joined). */
static char *join_quote(GPtrArray *items)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < items->len; i++) {
        const char *v = items->pdata[i];
        if (i > 0)
            g_string_append(s, ", ");
        g_string_append_c(s, '"');
        for (const char *p = v; *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                g_string_append_c(s, '\\');
            g_string_append_c(s, *p);
        }
        g_string_append_c(s, '"');
    }
    return g_string_free(s, FALSE);
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A sorted set of strings (sets.String.List()): add keeps one copy. */
static void set_add(GPtrArray *set, const char *v)
{
    for (guint i = 0; i < set->len; i++)
        if (strcmp(set->pdata[i], v) == 0)
            return;
    g_ptr_array_add(set, g_strdup(v));
    g_ptr_array_sort(set, cmp_str);
}

static GPtrArray *strings_new(void)
{
    return g_ptr_array_new_with_free_func(g_free);
}

/* "container \"a\"" / "containers \"a\", \"b\"". */
static char *containers_phrase(GPtrArray *names)
{
    g_autofree char *q = join_quote(names);
    return g_strdup_printf("%s %s", plural("container", "containers", names->len), q);
}

static gboolean is_true(json_object *v)
{
    return v != NULL && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static gboolean is_false(json_object *v)
{
    return v != NULL && json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v);
}

typedef void (*ContainerFunc)(json_object *c, const char *name, gpointer data);

/* visitContainers: initContainers, containers, ephemeralContainers. */
static void each_container(json_object *spec, ContainerFunc fn, gpointer data)
{
    static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
    for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
        json_object *arr = json_object_object_get(spec, lists[l]);
        if (arr == NULL || !json_object_is_type(arr, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *c = json_object_array_get_idx(arr, i);
            if (c == NULL || !json_object_is_type(c, json_type_object))
                continue;
            const char *name = kas_json_get_string(c, "name");
            fn(c, name != NULL ? name : "", data);
        }
    }
}

static json_object *sc_get(json_object *obj, const char *field)
{
    json_object *sc = json_object_object_get(obj, "securityContext");
    return sc != NULL && json_object_is_type(sc, json_type_object) ? kas_json_get(sc, field) : NULL;
}

typedef struct {
    GPtrArray *out; /* "reason (detail)" strings */
    json_object *pod;
    json_object *spec;
    guint minor;
} Eval;

static void fail(Eval *e, const char *reason, char *detail)
{
    g_ptr_array_add(e->out, detail != NULL && detail[0] != '\0'
                                    ? g_strdup_printf("%s (%s)", reason, detail)
                                    : g_strdup(reason));
    g_free(detail);
}

/* Names of containers matching a predicate, with a set of bad values. */
typedef struct {
    GPtrArray *names;
    GPtrArray *values;
    gboolean pod_level;
} Collect;

static void collect_init(Collect *c)
{
    c->names = strings_new();
    c->values = strings_new();
    c->pod_level = FALSE;
}

static void collect_clear(Collect *c)
{
    g_ptr_array_unref(c->names);
    g_ptr_array_unref(c->values);
}

/* ---- baseline -------------------------------------------------------------------------------- */

static const char *const caps_default[] = {
        "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID",     "KILL",   "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SYS_CHROOT", "SETUID", NULL};

static gboolean in_list(const char *const *list, const char *v)
{
    for (guint i = 0; list[i] != NULL; i++)
        if (strcmp(list[i], v) == 0)
            return TRUE;
    return FALSE;
}

static void caps_baseline_one(json_object *c, const char *name, gpointer data)
{
    Collect *col = data;
    json_object *add = sc_get(c, "capabilities.add");
    gboolean bad = FALSE;
    for (size_t i = 0; add != NULL && json_object_is_type(add, json_type_array) &&
                       i < json_object_array_length(add);
         i++) {
        const char *cap = json_object_get_string(json_object_array_get_idx(add, i));
        if (cap != NULL && !in_list(caps_default, cap)) {
            bad = TRUE;
            set_add(col->values, cap);
        }
    }
    if (bad)
        g_ptr_array_add(col->names, g_strdup(name));
}

static void check_capabilities_baseline(Eval *e)
{
    Collect col;
    collect_init(&col);
    each_container(e->spec, caps_baseline_one, &col);
    if (col.names->len > 0) {
        g_autofree char *who = containers_phrase(col.names);
        g_autofree char *caps = join_quote(col.values);
        fail(e, "non-default capabilities",
             g_strdup_printf("%s must not include %s in securityContext.capabilities.add", who,
                             caps));
    }
    collect_clear(&col);
}

static void check_host_namespaces(Eval *e)
{
    g_autoptr(GPtrArray) set = strings_new();
    if (is_true(json_object_object_get(e->spec, "hostNetwork")))
        set_add(set, "hostNetwork");
    if (is_true(json_object_object_get(e->spec, "hostPID")))
        set_add(set, "hostPID");
    if (is_true(json_object_object_get(e->spec, "hostIPC")))
        set_add(set, "hostIPC");
    if (set->len == 0)
        return;
    g_ptr_array_add(set, NULL);
    fail(e, "host namespaces", g_strjoinv(", ", (char **)set->pdata));
}

/* Volumes of the pod whose source is @source (NULL: not one of @allowed). */
static void volumes_matching(Eval *e, const char *source, const char *const *allowed,
                             GPtrArray *names, GPtrArray *types)
{
    json_object *vols = json_object_object_get(e->spec, "volumes");
    for (size_t i = 0; vols != NULL && json_object_is_type(vols, json_type_array) &&
                       i < json_object_array_length(vols);
         i++) {
        json_object *v = json_object_array_get_idx(vols, i);
        if (v == NULL || !json_object_is_type(v, json_type_object))
            continue;
        const char *name = kas_json_get_string(v, "name");
        if (source != NULL) {
            if (json_object_object_get(v, source) != NULL)
                g_ptr_array_add(names, g_strdup(name != NULL ? name : ""));
            continue;
        }
        const char *kind = NULL;
        json_object_object_foreach(v, k, val)
        {
            (void)val;
            if (strcmp(k, "name") != 0 && kind == NULL)
                kind = k;
        }
        if (kind != NULL && in_list(allowed, kind))
            continue;
        set_add(names, name != NULL ? name : "");
        if (kind != NULL)
            set_add(types, kind);
    }
}

static void check_host_path_volumes(Eval *e)
{
    g_autoptr(GPtrArray) names = strings_new();
    volumes_matching(e, "hostPath", NULL, names, NULL);
    if (names->len == 0)
        return;
    g_autofree char *q = join_quote(names);
    fail(e, "hostPath volumes",
         g_strdup_printf("%s %s", plural("volume", "volumes", names->len), q));
}

static void host_ports_one(json_object *c, const char *name, gpointer data)
{
    Collect *col = data;
    json_object *ports = json_object_object_get(c, "ports");
    gboolean bad = FALSE;
    for (size_t i = 0; ports != NULL && json_object_is_type(ports, json_type_array) &&
                       i < json_object_array_length(ports);
         i++) {
        json_object *hp = kas_json_get(json_object_array_get_idx(ports, i), "hostPort");
        gint64 port = hp != NULL ? json_object_get_int64(hp) : 0;
        if (port != 0) {
            g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, port);
            set_add(col->values, s);
            bad = TRUE;
        }
    }
    if (bad)
        g_ptr_array_add(col->names, g_strdup(name));
}

static void check_host_ports(Eval *e)
{
    Collect col;
    collect_init(&col);
    each_container(e->spec, host_ports_one, &col);
    if (col.names->len > 0) {
        g_autofree char *who = containers_phrase(col.names);
        g_ptr_array_add(col.values, NULL);
        g_autofree char *ports = g_strjoinv(", ", (char **)col.values->pdata);
        g_ptr_array_remove_index(col.values, col.values->len - 1);
        fail(e, "hostPort",
             g_strdup_printf("%s %s %s %s", who, plural("uses", "use", col.names->len),
                             plural("hostPort", "hostPorts", col.values->len), ports));
    }
    collect_clear(&col);
}

static void privileged_one(json_object *c, const char *name, gpointer data)
{
    if (is_true(sc_get(c, "privileged")))
        g_ptr_array_add(((Collect *)data)->names, g_strdup(name));
}

static void check_privileged(Eval *e)
{
    Collect col;
    collect_init(&col);
    each_container(e->spec, privileged_one, &col);
    if (col.names->len > 0) {
        g_autofree char *who = containers_phrase(col.names);
        fail(e, "privileged",
             g_strdup_printf("%s must not set securityContext.privileged=true", who));
    }
    collect_clear(&col);
}

static void proc_mount_one(json_object *c, const char *name, gpointer data)
{
    Collect *col = data;
    json_object *pm = sc_get(c, "procMount");
    const char *v = pm != NULL ? json_object_get_string(pm) : NULL;
    if (v != NULL && strcmp(v, "Default") != 0) {
        g_ptr_array_add(col->names, g_strdup(name));
        set_add(col->values, v);
    }
}

static void check_proc_mount(Eval *e)
{
    Collect col;
    collect_init(&col);
    each_container(e->spec, proc_mount_one, &col);
    if (col.names->len > 0) {
        g_autofree char *who = containers_phrase(col.names);
        g_autofree char *vals = join_quote(col.values);
        fail(e, "procMount",
             g_strdup_printf("%s must not set securityContext.procMount to %s", who, vals));
    }
    collect_clear(&col);
}

typedef struct {
    GPtrArray *setters; /* "pod", "container \"a\"" ... */
    GPtrArray *containers;
    GPtrArray *types;
    gboolean user, role;
    guint minor;
} SeLinux;

static gboolean selinux_bad(SeLinux *s, json_object *opts)
{
    if (opts == NULL || !json_object_is_type(opts, json_type_object))
        return FALSE;
    static const char *const types[] = {"", "container_t", "container_init_t", "container_kvm_t",
                                        NULL};
    gboolean bad = FALSE;
    const char *type = kas_json_get_string(opts, "type");
    if (type != NULL && !in_list(types, type) &&
        !(s->minor >= 31 && strcmp(type, "container_engine_t") == 0)) {
        set_add(s->types, type);
        bad = TRUE;
    }
    const char *user = kas_json_get_string(opts, "user");
    const char *role = kas_json_get_string(opts, "role");
    if (user != NULL && user[0] != '\0') {
        s->user = TRUE;
        bad = TRUE;
    }
    if (role != NULL && role[0] != '\0') {
        s->role = TRUE;
        bad = TRUE;
    }
    return bad;
}

static void selinux_one(json_object *c, const char *name, gpointer data)
{
    SeLinux *s = data;
    if (selinux_bad(s, sc_get(c, "seLinuxOptions")))
        g_ptr_array_add(s->containers, g_strdup(name));
}

static void check_selinux(Eval *e)
{
    SeLinux s = {.setters = strings_new(),
                 .containers = strings_new(),
                 .types = strings_new(),
                 .minor = e->minor};
    if (selinux_bad(&s, sc_get(e->spec, "seLinuxOptions")))
        g_ptr_array_add(s.setters, g_strdup("pod"));
    each_container(e->spec, selinux_one, &s);
    if (s.containers->len > 0)
        g_ptr_array_add(s.setters, containers_phrase(s.containers));
    if (s.setters->len > 0) {
        g_autoptr(GPtrArray) data = strings_new();
        if (s.types->len > 0) {
            g_autofree char *q = join_quote(s.types);
            g_ptr_array_add(data,
                            g_strdup_printf("%s %s", plural("type", "types", s.types->len), q));
        }
        if (s.user)
            g_ptr_array_add(data, g_strdup("user may not be set"));
        if (s.role)
            g_ptr_array_add(data, g_strdup("role may not be set"));
        g_ptr_array_add(data, NULL);
        g_ptr_array_add(s.setters, NULL);
        g_autofree char *who = g_strjoinv(" and ", (char **)s.setters->pdata);
        g_autofree char *what = g_strjoinv("; ", (char **)data->pdata);
        fail(e, "seLinuxOptions",
             g_strdup_printf("%s set forbidden securityContext.seLinuxOptions: %s", who, what));
    }
    g_ptr_array_unref(s.setters);
    g_ptr_array_unref(s.containers);
    g_ptr_array_unref(s.types);
}

/* ---- seccomp (baseline: no bad value set; restricted: a good one set everywhere) ------------ */

static gboolean seccomp_valid(const char *t)
{
    return t != NULL && (strcmp(t, "RuntimeDefault") == 0 || strcmp(t, "Localhost") == 0);
}

typedef struct {
    Collect bad;      /* containers setting a bad type, and the bad values */
    GPtrArray *unset; /* containers setting none without a good pod-level one */
    gboolean pod_good;
} Seccomp;

static void seccomp_one(json_object *c, const char *name, gpointer data)
{
    Seccomp *s = data;
    json_object *prof = sc_get(c, "seccompProfile");
    if (prof != NULL && json_object_is_type(prof, json_type_object)) {
        const char *t = kas_json_get_string(prof, "type");
        if (!seccomp_valid(t)) {
            g_ptr_array_add(s->bad.names, g_strdup(name));
            set_add(s->bad.values, t != NULL ? t : "");
        }
    } else if (!s->pod_good) {
        g_ptr_array_add(s->unset, g_strdup(name));
    }
}

static void check_seccomp(Eval *e, gboolean restricted)
{
    Seccomp s = {.unset = strings_new()};
    collect_init(&s.bad);
    g_autoptr(GPtrArray) setters = strings_new();
    json_object *prof = sc_get(e->spec, "seccompProfile");
    if (prof != NULL && json_object_is_type(prof, json_type_object)) {
        const char *t = kas_json_get_string(prof, "type");
        if (!seccomp_valid(t)) {
            g_ptr_array_add(setters, g_strdup("pod"));
            set_add(s.bad.values, t != NULL ? t : "");
        } else {
            s.pod_good = TRUE;
        }
    }
    each_container(e->spec, seccomp_one, &s);
    if (s.bad.names->len > 0)
        g_ptr_array_add(setters, containers_phrase(s.bad.names));
    if (setters->len > 0) {
        g_autofree char *vals = join_quote(s.bad.values);
        g_ptr_array_add(setters, NULL);
        g_autofree char *who = g_strjoinv(" and ", (char **)setters->pdata);
        fail(e, "seccompProfile",
             g_strdup_printf("%s must not set securityContext.seccompProfile.type to %s", who,
                             vals));
    } else if (restricted && s.unset->len > 0) {
        g_autofree char *who = containers_phrase(s.unset);
        fail(e, "seccompProfile",
             g_strdup_printf("pod or %s must set securityContext.seccompProfile.type to "
                             "\"RuntimeDefault\" or \"Localhost\"",
                             who));
    }
    collect_clear(&s.bad);
    g_ptr_array_unref(s.unset);
}

static void check_seccomp_baseline(Eval *e)
{
    check_seccomp(e, FALSE);
}

static void check_seccomp_restricted(Eval *e)
{
    check_seccomp(e, TRUE);
}

static void check_sysctls(Eval *e)
{
    static const struct {
        const char *name;
        guint since;
    } safe[] = {
            {"kernel.shm_rmid_forced", 0},
            {"net.ipv4.ip_local_port_range", 0},
            {"net.ipv4.tcp_syncookies", 0},
            {"net.ipv4.ping_group_range", 0},
            {"net.ipv4.ip_unprivileged_port_start", 0},
            {"net.ipv4.ip_local_reserved_ports", 27},
            {"net.ipv4.tcp_keepalive_time", 29},
            {"net.ipv4.tcp_fin_timeout", 29},
            {"net.ipv4.tcp_keepalive_intvl", 29},
            {"net.ipv4.tcp_keepalive_probes", 29},
            {"net.ipv4.tcp_rmem", 32},
            {"net.ipv4.tcp_wmem", 32},
    };
    json_object *list = sc_get(e->spec, "sysctls");
    g_autoptr(GPtrArray) bad = strings_new();
    for (size_t i = 0; list != NULL && json_object_is_type(list, json_type_array) &&
                       i < json_object_array_length(list);
         i++) {
        const char *name = kas_json_get_string(json_object_array_get_idx(list, i), "name");
        if (name == NULL)
            continue;
        gboolean ok = FALSE;
        for (guint k = 0; k < G_N_ELEMENTS(safe) && !ok; k++)
            ok = strcmp(safe[k].name, name) == 0 && e->minor >= safe[k].since;
        if (!ok)
            g_ptr_array_add(bad, g_strdup(name));
    }
    if (bad->len == 0)
        return;
    g_ptr_array_add(bad, NULL);
    fail(e, "forbidden sysctls", g_strjoinv(", ", (char **)bad->pdata));
}

/* ---- restricted ------------------------------------------------------------------------------ */

static void ape_one(json_object *c, const char *name, gpointer data)
{
    if (!is_false(sc_get(c, "allowPrivilegeEscalation")))
        g_ptr_array_add(((Collect *)data)->names, g_strdup(name));
}

static void check_allow_privilege_escalation(Eval *e)
{
    Collect col;
    collect_init(&col);
    each_container(e->spec, ape_one, &col);
    if (col.names->len > 0) {
        g_autofree char *who = containers_phrase(col.names);
        fail(e, "allowPrivilegeEscalation != false",
             g_strdup_printf("%s must set securityContext.allowPrivilegeEscalation=false", who));
    }
    collect_clear(&col);
}

typedef struct {
    GPtrArray *missing_drop;
    GPtrArray *adding;
    GPtrArray *caps;
} CapsRestricted;

static void caps_restricted_one(json_object *c, const char *name, gpointer data)
{
    CapsRestricted *r = data;
    json_object *caps = sc_get(c, "capabilities");
    if (caps == NULL || !json_object_is_type(caps, json_type_object)) {
        g_ptr_array_add(r->missing_drop, g_strdup(name));
        return;
    }
    json_object *drop = json_object_object_get(caps, "drop");
    gboolean all = FALSE;
    for (size_t i = 0; drop != NULL && json_object_is_type(drop, json_type_array) &&
                       i < json_object_array_length(drop) && !all;
         i++)
        all = g_strcmp0(json_object_get_string(json_object_array_get_idx(drop, i)), "ALL") == 0;
    if (!all)
        g_ptr_array_add(r->missing_drop, g_strdup(name));
    json_object *add = json_object_object_get(caps, "add");
    gboolean bad = FALSE;
    for (size_t i = 0; add != NULL && json_object_is_type(add, json_type_array) &&
                       i < json_object_array_length(add);
         i++) {
        const char *cap = json_object_get_string(json_object_array_get_idx(add, i));
        if (g_strcmp0(cap, "NET_BIND_SERVICE") != 0) {
            bad = TRUE;
            set_add(r->caps, cap != NULL ? cap : "");
        }
    }
    if (bad)
        g_ptr_array_add(r->adding, g_strdup(name));
}

static void check_capabilities_restricted(Eval *e)
{
    CapsRestricted r = {strings_new(), strings_new(), strings_new()};
    each_container(e->spec, caps_restricted_one, &r);
    g_autoptr(GPtrArray) details = strings_new();
    if (r.missing_drop->len > 0) {
        g_autofree char *who = containers_phrase(r.missing_drop);
        g_ptr_array_add(
                details,
                g_strdup_printf("%s must set securityContext.capabilities.drop=[\"ALL\"]", who));
    }
    if (r.adding->len > 0) {
        g_autofree char *who = containers_phrase(r.adding);
        g_autofree char *caps = join_quote(r.caps);
        g_ptr_array_add(details, g_strdup_printf("%s must not include %s in "
                                                 "securityContext.capabilities.add",
                                                 who, caps));
    }
    if (details->len > 0) {
        g_ptr_array_add(details, NULL);
        fail(e, "unrestricted capabilities", g_strjoinv("; ", (char **)details->pdata));
    }
    g_ptr_array_unref(r.missing_drop);
    g_ptr_array_unref(r.adding);
    g_ptr_array_unref(r.caps);
}

static void check_restricted_volumes(Eval *e)
{
    static const char *const allowed[] = {"configMap", "csi",       "downwardAPI",
                                          "emptyDir",  "ephemeral", "persistentVolumeClaim",
                                          "projected", "secret",    NULL};
    g_autoptr(GPtrArray) names = strings_new();
    g_autoptr(GPtrArray) types = strings_new();
    volumes_matching(e, NULL, allowed, names, types);
    if (names->len == 0)
        return;
    g_autofree char *qn = join_quote(names);
    g_autofree char *qt = join_quote(types);
    fail(e, "restricted volume types",
         g_strdup_printf("%s %s %s %s %s", plural("volume", "volumes", names->len), qn,
                         plural("uses", "use", names->len),
                         plural("restricted volume type", "restricted volume types", types->len),
                         qt));
}

/* hostUsers: false (user namespaces) relaxes runAsNonRoot and runAsUser from 1.25. */
static gboolean user_namespaced(Eval *e)
{
    return e->minor >= 25 && is_false(json_object_object_get(e->spec, "hostUsers"));
}

typedef struct {
    GPtrArray *explicit_bad;
    GPtrArray *implicit_bad;
    gboolean pod_true;
} NonRoot;

static void non_root_one(json_object *c, const char *name, gpointer data)
{
    NonRoot *n = data;
    json_object *v = sc_get(c, "runAsNonRoot");
    if (v != NULL) {
        if (!is_true(v))
            g_ptr_array_add(n->explicit_bad, g_strdup(name));
    } else if (!n->pod_true) {
        g_ptr_array_add(n->implicit_bad, g_strdup(name));
    }
}

static void check_run_as_non_root(Eval *e)
{
    if (user_namespaced(e))
        return;
    NonRoot n = {strings_new(), strings_new(), FALSE};
    g_autoptr(GPtrArray) setters = strings_new();
    json_object *pod = sc_get(e->spec, "runAsNonRoot");
    if (pod != NULL) {
        if (!is_true(pod))
            g_ptr_array_add(setters, g_strdup("pod"));
        else
            n.pod_true = TRUE;
    }
    each_container(e->spec, non_root_one, &n);
    if (n.explicit_bad->len > 0)
        g_ptr_array_add(setters, containers_phrase(n.explicit_bad));
    if (setters->len > 0) {
        g_ptr_array_add(setters, NULL);
        g_autofree char *who = g_strjoinv(" and ", (char **)setters->pdata);
        fail(e, "runAsNonRoot != true",
             g_strdup_printf("%s must not set securityContext.runAsNonRoot=false", who));
    } else if (n.implicit_bad->len > 0) {
        g_autofree char *who = containers_phrase(n.implicit_bad);
        fail(e, "runAsNonRoot != true",
             g_strdup_printf("pod or %s must set securityContext.runAsNonRoot=true", who));
    }
    g_ptr_array_unref(n.explicit_bad);
    g_ptr_array_unref(n.implicit_bad);
}

static gboolean is_zero(json_object *v)
{
    return v != NULL && json_object_is_type(v, json_type_int) && json_object_get_int64(v) == 0;
}

static void run_as_user_one(json_object *c, const char *name, gpointer data)
{
    if (is_zero(sc_get(c, "runAsUser")))
        g_ptr_array_add(((Collect *)data)->names, g_strdup(name));
}

static void check_run_as_user(Eval *e)
{
    if (user_namespaced(e))
        return;
    Collect col;
    collect_init(&col);
    g_autoptr(GPtrArray) setters = strings_new();
    if (is_zero(sc_get(e->spec, "runAsUser")))
        g_ptr_array_add(setters, g_strdup("pod"));
    each_container(e->spec, run_as_user_one, &col);
    if (col.names->len > 0)
        g_ptr_array_add(setters, containers_phrase(col.names));
    if (setters->len > 0) {
        g_ptr_array_add(setters, NULL);
        g_autofree char *who = g_strjoinv(" and ", (char **)setters->pdata);
        fail(e, "runAsUser=0", g_strdup_printf("%s must not set runAsUser=0", who));
    }
    collect_clear(&col);
}

/* ---- the registry ---------------------------------------------------------------------------- */

typedef struct {
    const char *id;
    KasPsaLevel level;
    guint since;           /* first policy version (1.since) */
    const char *overrides; /* the baseline check this one replaces at restricted */
    void (*check)(Eval *e);
} Check;

/* kube-apiserver's order: baseline by ID, then restricted by ID (byte order). */
static const Check checks[] = {
        {"capabilities_baseline", KAS_PSA_BASELINE, 0, NULL, check_capabilities_baseline},
        {"hostNamespaces", KAS_PSA_BASELINE, 0, NULL, check_host_namespaces},
        {"hostPathVolumes", KAS_PSA_BASELINE, 0, NULL, check_host_path_volumes},
        {"hostPorts", KAS_PSA_BASELINE, 0, NULL, check_host_ports},
        {"privileged", KAS_PSA_BASELINE, 0, NULL, check_privileged},
        {"procMount", KAS_PSA_BASELINE, 0, NULL, check_proc_mount},
        {"seLinuxOptions", KAS_PSA_BASELINE, 0, NULL, check_selinux},
        {"seccompProfile_baseline", KAS_PSA_BASELINE, 19, NULL, check_seccomp_baseline},
        {"sysctls", KAS_PSA_BASELINE, 0, NULL, check_sysctls},
        {"allowPrivilegeEscalation", KAS_PSA_RESTRICTED, 8, NULL, check_allow_privilege_escalation},
        {"capabilities_restricted", KAS_PSA_RESTRICTED, 22, "capabilities_baseline",
         check_capabilities_restricted},
        {"restrictedVolumes", KAS_PSA_RESTRICTED, 0, "hostPathVolumes", check_restricted_volumes},
        {"runAsNonRoot", KAS_PSA_RESTRICTED, 0, NULL, check_run_as_non_root},
        {"runAsUser", KAS_PSA_RESTRICTED, 23, NULL, check_run_as_user},
        {"seccompProfile_restricted", KAS_PSA_RESTRICTED, 19, "seccompProfile_baseline",
         check_seccomp_restricted},
};

/* Is baseline check @id replaced by a restricted check that applies at @minor? */
static gboolean overridden(const char *id, guint minor)
{
    for (guint i = 0; i < G_N_ELEMENTS(checks); i++)
        if (checks[i].overrides != NULL && strcmp(checks[i].overrides, id) == 0 &&
            minor >= checks[i].since)
            return TRUE;
    return FALSE;
}

char *kas_psa_violations(KasPsaLevel level, guint minor, json_object *pod)
{
    if (level == KAS_PSA_PRIVILEGED)
        return NULL;
    json_object *spec = json_object_object_get(pod, "spec");
    if (spec == NULL || !json_object_is_type(spec, json_type_object))
        return NULL; /* validation refuses it */
    Eval e = {.out = strings_new(), .pod = pod, .spec = spec, .minor = minor};
    for (guint i = 0; i < G_N_ELEMENTS(checks); i++) {
        const Check *c = &checks[i];
        if (c->level > level || minor < c->since)
            continue;
        if (level == KAS_PSA_RESTRICTED && c->level == KAS_PSA_BASELINE && overridden(c->id, minor))
            continue;
        c->check(&e);
    }
    char *joined = NULL;
    if (e.out->len > 0) {
        g_ptr_array_add(e.out, NULL);
        joined = g_strjoinv(", ", (char **)e.out->pdata);
    }
    g_ptr_array_unref(e.out);
    return joined;
}

/* ---- labels ---------------------------------------------------------------------------------- */

static gboolean parse_level(const char *v, KasPsaLevel *out)
{
    if (strcmp(v, "privileged") == 0)
        *out = KAS_PSA_PRIVILEGED;
    else if (strcmp(v, "baseline") == 0)
        *out = KAS_PSA_BASELINE;
    else if (strcmp(v, "restricted") == 0)
        *out = KAS_PSA_RESTRICTED;
    else
        return FALSE;
    return TRUE;
}

/* "latest" or "v1.N" (N without leading zeros, at most 3 digits). */
static gboolean parse_version(const char *v, guint *minor, gboolean *latest)
{
    if (strcmp(v, "latest") == 0) {
        *minor = KAS_PSA_LATEST_MINOR;
        *latest = TRUE;
        return TRUE;
    }
    if (strncmp(v, "v1.", 3) != 0)
        return FALSE;
    const char *n = v + 3;
    gsize len = strlen(n);
    if (len == 0 || len > 3 || (len > 1 && n[0] == '0') || strspn(n, "0123456789") != len)
        return FALSE;
    *minor = MIN((guint)atoi(n), KAS_PSA_LATEST_MINOR);
    *latest = FALSE;
    return TRUE;
}

KasPsaLevel kas_psa_policy(char **labels, guint *version_minor, gboolean *latest)
{
    KasPsaLevel level = KAS_PSA_PRIVILEGED;
    *version_minor = KAS_PSA_LATEST_MINOR;
    *latest = TRUE;
    for (guint i = 0; labels != NULL && labels[i] != NULL && labels[i + 1] != NULL; i += 2) {
        if (strcmp(labels[i], KAS_PSA_ENFORCE) == 0 && !parse_level(labels[i + 1], &level)) {
            /* Unparsable: the strictest reading. */
            level = KAS_PSA_RESTRICTED;
            *version_minor = KAS_PSA_LATEST_MINOR;
            *latest = TRUE;
            return level;
        }
        if (strcmp(labels[i], KAS_PSA_ENFORCE_VERSION) == 0 &&
            !parse_version(labels[i + 1], version_minor, latest)) {
            *version_minor = KAS_PSA_LATEST_MINOR;
            *latest = TRUE;
            return KAS_PSA_RESTRICTED;
        }
    }
    return level;
}

gboolean kas_psa_validate_namespace(json_object *labels_obj, const char *namespace_name,
                                    GError **error)
{
    if (labels_obj == NULL || !json_object_is_type(labels_obj, json_type_object))
        return TRUE;
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    static const char *const modes[] = {"enforce", "audit", "warn", NULL};
    for (guint m = 0; modes[m] != NULL; m++) {
        g_autofree char *lk = g_strdup_printf("pod-security.kubernetes.io/%s", modes[m]);
        g_autofree char *vk = g_strdup_printf("pod-security.kubernetes.io/%s-version", modes[m]);
        const char *lv = json_object_get_string(json_object_object_get(labels_obj, lk));
        const char *vv = json_object_get_string(json_object_object_get(labels_obj, vk));
        KasPsaLevel level;
        guint minor;
        gboolean latest;
        g_autofree char *lf = g_strdup_printf("metadata.labels[%s]", lk);
        g_autofree char *vf = g_strdup_printf("metadata.labels[%s]", vk);
        if (lv != NULL && !parse_level(lv, &level))
            kas_field_errors_addf(errs, lf,
                                  "Invalid value: \"%s\": must be one of privileged, baseline, "
                                  "restricted",
                                  lv);
        if (vv != NULL && !parse_version(vv, &minor, &latest))
            kas_field_errors_addf(errs, vf, "Invalid value: \"%s\": must be \"latest\" or \"v1.x\"",
                                  vv);
    }
    return kas_field_errors_check_kind(errs, "Namespace", "", namespace_name, error);
}

gboolean kas_psa_admit_pod(char **labels, json_object *pod, GError **error)
{
    guint minor;
    gboolean latest;
    KasPsaLevel level = kas_psa_policy(labels, &minor, &latest);
    g_autofree char *why = kas_psa_violations(level, minor, pod);
    if (why == NULL)
        return TRUE;
    static const char *const names[] = {"privileged", "baseline", "restricted"};
    const char *version = "latest";
    for (guint i = 0; !latest && labels[i] != NULL && labels[i + 1] != NULL; i += 2)
        if (strcmp(labels[i], KAS_PSA_ENFORCE_VERSION) == 0)
            version = labels[i + 1];
    const char *name = kas_json_get_string(pod, "metadata.name");
    g_set_error(error, KAS_ERROR, KAS_ERR_FORBIDDEN,
                "pods \"%s\" is forbidden: violates PodSecurity \"%s:%s\": %s",
                name != NULL ? name : "", names[level], version, why);
    return FALSE;
}
