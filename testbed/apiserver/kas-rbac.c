/* RBAC authorization from the stored roles and bindings (see kas-rbac.h). */
#include "testbed/apiserver/kas-rbac.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"
#define SA_PREFIX  "system:serviceaccount:"

/* ---- users ------------------------------------------------------------------------------------
 */

KasUser *kas_user_new(const char *name, const char *uid, const char *const *groups)
{
    KasUser *u = g_new0(KasUser, 1);
    u->name = g_strdup(name);
    u->uid = g_strdup(uid != NULL ? uid : "");
    u->groups = groups != NULL ? g_strdupv((char **)groups) : g_new0(char *, 1);
    return u;
}

KasUser *kas_user_copy(const KasUser *user)
{
    return kas_user_new(user->name, user->uid, (const char *const *)user->groups);
}

void kas_user_free(KasUser *user)
{
    if (user == NULL)
        return;
    g_free(user->name);
    g_free(user->uid);
    g_strfreev(user->groups);
    g_free(user);
}

gboolean kas_user_in_group(const KasUser *user, const char *group)
{
    return user->groups != NULL && g_strv_contains((const char *const *)user->groups, group);
}

/* ---- the compiled policy ------------------------------------------------------------------------
 */

typedef struct {
    char **verbs, **groups, **resources, **names, **urls;
} Rule;

typedef struct {
    GArray *rules; /* Rule */
} Role;

typedef struct {
    char *kind, *name, *ns; /* ns: ServiceAccount subjects only ("" when not given) */
} Subject;

typedef struct {
    char *ns; /* "" for ClusterRoleBindings */
    char *name;
    char *role_kind, *role_name;
    GArray *subjects; /* Subject */
} Binding;

typedef struct {
    gint ref;
    guint64 signature_rv;
    guint signature_count;
    GHashTable *cluster_roles;   /* name -> Role */
    GHashTable *roles;           /* "ns/name" -> Role */
    GPtrArray *cluster_bindings; /* Binding, by name */
    GPtrArray *bindings;         /* Binding, by namespace and name */
} Policy;

struct KasRbac {
    KasStore *store;
    Policy *policy; /* guarded by the store lock */
};

static void rule_clear(gpointer p)
{
    Rule *r = p;
    g_strfreev(r->verbs);
    g_strfreev(r->groups);
    g_strfreev(r->resources);
    g_strfreev(r->names);
    g_strfreev(r->urls);
}

static void role_free(gpointer p)
{
    Role *r = p;
    g_array_unref(r->rules);
    g_free(r);
}

static void subject_clear(gpointer p)
{
    Subject *s = p;
    g_free(s->kind);
    g_free(s->name);
    g_free(s->ns);
}

static void binding_free(gpointer p)
{
    Binding *b = p;
    g_free(b->ns);
    g_free(b->name);
    g_free(b->role_kind);
    g_free(b->role_name);
    g_array_unref(b->subjects);
    g_free(b);
}

static void policy_unref(Policy *p)
{
    if (p == NULL || !g_atomic_int_dec_and_test(&p->ref))
        return;
    g_hash_table_unref(p->cluster_roles);
    g_hash_table_unref(p->roles);
    g_ptr_array_unref(p->cluster_bindings);
    g_ptr_array_unref(p->bindings);
    g_free(p);
}

/* A string array field (strings only; anything else is skipped, as a malformed entry could
 * never match). Never NULL. */
static char **strv_field(json_object *obj, const char *key)
{
    json_object *a = kas_json_get(obj, key);
    GPtrArray *out = g_ptr_array_new();
    if (json_object_is_type(a, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(a); i++) {
            json_object *s = json_object_array_get_idx(a, i);
            if (json_object_is_type(s, json_type_string))
                g_ptr_array_add(out, g_strdup(json_object_get_string(s)));
        }
    }
    g_ptr_array_add(out, NULL);
    return (char **)g_ptr_array_free(out, FALSE);
}

static Role *role_compile(json_object *obj)
{
    Role *role = g_new0(Role, 1);
    role->rules = g_array_new(FALSE, TRUE, sizeof(Rule));
    g_array_set_clear_func(role->rules, rule_clear);
    json_object *rules = kas_json_get(obj, "rules");
    for (size_t i = 0;
         json_object_is_type(rules, json_type_array) && i < json_object_array_length(rules); i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        Rule rule = {
                .verbs = strv_field(r, "verbs"),
                .groups = strv_field(r, "apiGroups"),
                .resources = strv_field(r, "resources"),
                .names = strv_field(r, "resourceNames"),
                .urls = strv_field(r, "nonResourceURLs"),
        };
        g_array_append_val(role->rules, rule);
    }
    return role;
}

static Binding *binding_compile(json_object *obj, const char *ns)
{
    Binding *b = g_new0(Binding, 1);
    b->ns = g_strdup(ns);
    b->name = g_strdup(kas_json_get_string(obj, "metadata.name"));
    const char *kind = kas_json_get_string(obj, "roleRef.kind");
    const char *name = kas_json_get_string(obj, "roleRef.name");
    b->role_kind = g_strdup(kind != NULL ? kind : "");
    b->role_name = g_strdup(name != NULL ? name : "");
    b->subjects = g_array_new(FALSE, TRUE, sizeof(Subject));
    g_array_set_clear_func(b->subjects, subject_clear);
    json_object *subjects = kas_json_get(obj, "subjects");
    for (size_t i = 0;
         json_object_is_type(subjects, json_type_array) && i < json_object_array_length(subjects);
         i++) {
        json_object *s = json_object_array_get_idx(subjects, i);
        const char *sk = kas_json_get_string(s, "kind");
        const char *sn = kas_json_get_string(s, "name");
        const char *sns = kas_json_get_string(s, "namespace");
        Subject subj = {.kind = g_strdup(sk != NULL ? sk : ""),
                        .name = g_strdup(sn != NULL ? sn : ""),
                        .ns = g_strdup(sns != NULL ? sns : "")};
        g_array_append_val(b->subjects, subj);
    }
    return b;
}

typedef struct {
    guint64 max_rv;
    guint count;
} Sig;

static gboolean sig_visit(gpointer key, gpointer value, gpointer data)
{
    Sig *s = data;
    KasObj *o = value;
    s->max_rv = MAX(s->max_rv, o->rv);
    s->count++;
    return FALSE;
}

static KasRes *rbac_res(KasStore *store, const char *plural)
{
    return kas_store_find_locked(store, RBAC_GROUP, "v1", plural);
}

static const char *const rbac_plurals[] = {"clusterroles", "roles", "clusterrolebindings",
                                           "rolebindings"};

/* Objects of every RBAC resource: changes whenever one of them is written or removed (a write
 * raises the highest resourceVersion, a removal lowers the count). */
static Sig signature_locked(KasStore *store)
{
    Sig s = {0};
    for (guint i = 0; i < G_N_ELEMENTS(rbac_plurals); i++) {
        KasRes *res = rbac_res(store, rbac_plurals[i]);
        if (res != NULL)
            g_tree_foreach(res->objects, sig_visit, &s);
    }
    return s;
}

typedef struct {
    Policy *p;
    int which; /* index into rbac_plurals */
} Fill;

static gboolean fill_visit(gpointer key, gpointer value, gpointer data)
{
    Fill *f = data;
    KasObj *o = value;
    json_object *j = kas_obj_parse(o);
    switch (f->which) {
    case 0:
        g_hash_table_replace(f->p->cluster_roles, g_strdup(o->name), role_compile(j));
        break;
    case 1:
        g_hash_table_replace(f->p->roles, g_strdup_printf("%s/%s", o->ns, o->name),
                             role_compile(j));
        break;
    case 2:
        g_ptr_array_add(f->p->cluster_bindings, binding_compile(j, ""));
        break;
    default:
        g_ptr_array_add(f->p->bindings, binding_compile(j, o->ns));
        break;
    }
    json_object_put(j);
    return FALSE;
}

static Policy *policy_build_locked(KasStore *store, Sig sig)
{
    Policy *p = g_new0(Policy, 1);
    p->ref = 1;
    p->signature_rv = sig.max_rv;
    p->signature_count = sig.count;
    p->cluster_roles = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, role_free);
    p->roles = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, role_free);
    p->cluster_bindings = g_ptr_array_new_with_free_func(binding_free);
    p->bindings = g_ptr_array_new_with_free_func(binding_free);
    for (int i = 0; i < (int)G_N_ELEMENTS(rbac_plurals); i++) {
        KasRes *res = rbac_res(store, rbac_plurals[i]);
        Fill f = {p, i};
        if (res != NULL)
            g_tree_foreach(res->objects, fill_visit, &f);
    }
    return p;
}

/* The current policy (new reference). */
static Policy *policy_get(KasRbac *rbac)
{
    kas_store_lock(rbac->store);
    Sig sig = signature_locked(rbac->store);
    Policy *p = rbac->policy;
    if (p == NULL || p->signature_rv != sig.max_rv || p->signature_count != sig.count) {
        policy_unref(p);
        p = rbac->policy = policy_build_locked(rbac->store, sig);
    }
    g_atomic_int_inc(&p->ref);
    kas_store_unlock(rbac->store);
    return p;
}

KasRbac *kas_rbac_new(KasStore *store)
{
    KasRbac *rbac = g_new0(KasRbac, 1);
    rbac->store = store;
    return rbac;
}

void kas_rbac_free(KasRbac *rbac)
{
    if (rbac == NULL)
        return;
    policy_unref(rbac->policy);
    g_free(rbac);
}

/* ---- rule matching (rbac/v1 evaluation_helpers.go) ----------------------------------------------
 */

static gboolean has(char **v, const char *s)
{
    for (guint i = 0; v[i] != NULL; i++)
        if (strcmp(v[i], s) == 0)
            return TRUE;
    return FALSE;
}

static gboolean has_or_all(char **v, const char *s)
{
    return has(v, "*") || has(v, s);
}

static gboolean resource_matches(const Rule *r, const char *combined, const char *sub)
{
    for (guint i = 0; r->resources[i] != NULL; i++) {
        const char *rr = r->resources[i];
        if (strcmp(rr, "*") == 0 || strcmp(rr, combined) == 0)
            return TRUE;
        /* "*\/scale" matches the scale subresource of every resource. */
        if (sub != NULL && sub[0] != '\0' && g_str_has_prefix(rr, "*/") && strcmp(rr + 2, sub) == 0)
            return TRUE;
    }
    return FALSE;
}

static gboolean url_matches(const Rule *r, const char *path)
{
    for (guint i = 0; r->urls[i] != NULL; i++) {
        const char *u = r->urls[i];
        if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
            return TRUE;
        gsize n = strlen(u);
        if (n > 0 && u[n - 1] == '*') {
            /* strings.TrimRight(rule, "*"): every trailing star goes. */
            while (n > 0 && u[n - 1] == '*')
                n--;
            if (strncmp(path, u, n) == 0)
                return TRUE;
        }
    }
    return FALSE;
}

static gboolean rule_allows(const Rule *r, const KasAttrs *a)
{
    if (!has_or_all(r->verbs, a->verb))
        return FALSE;
    if (!a->resource_request)
        return url_matches(r, a->path != NULL ? a->path : "");
    const char *res = a->resource != NULL ? a->resource : "";
    const char *sub = a->subresource != NULL ? a->subresource : "";
    g_autofree char *combined = sub[0] != '\0' ? g_strdup_printf("%s/%s", res, sub) : g_strdup(res);
    if (!has_or_all(r->groups, a->group != NULL ? a->group : "") ||
        !resource_matches(r, combined, sub))
        return FALSE;
    /* resourceNames restrict to the named objects; a request without a name never matches. */
    return r->names[0] == NULL || has(r->names, a->name != NULL ? a->name : "");
}

/* ---- subjects and bindings (rbac.go, rule.go) ---------------------------------------------------
 */

static gboolean sa_matches(const char *ns, const char *name, const char *user)
{
    if (!g_str_has_prefix(user, SA_PREFIX))
        return FALSE;
    const char *rest = user + strlen(SA_PREFIX);
    gsize n = strlen(ns);
    return strncmp(rest, ns, n) == 0 && rest[n] == ':' && strcmp(rest + n + 1, name) == 0;
}

static const Subject *applies(const Binding *b, const KasUser *u, const char *ns)
{
    for (guint i = 0; i < b->subjects->len; i++) {
        const Subject *s = &g_array_index(b->subjects, Subject, i);
        gboolean ok = FALSE;
        if (strcmp(s->kind, "User") == 0) {
            ok = strcmp(u->name, s->name) == 0;
        } else if (strcmp(s->kind, "Group") == 0) {
            ok = kas_user_in_group(u, s->name);
        } else if (strcmp(s->kind, "ServiceAccount") == 0) {
            /* A RoleBinding may name a ServiceAccount of its own namespace without one. */
            const char *sans = s->ns[0] != '\0' ? s->ns : ns;
            ok = sans[0] != '\0' && sa_matches(sans, s->name, u->name);
        }
        if (ok)
            return s;
    }
    return NULL;
}

static char *describe_subject(const Subject *s, const char *binding_ns)
{
    if (strcmp(s->kind, "ServiceAccount") == 0) {
        /* The real describer prints name/namespace, in that order. */
        g_autofree char *who =
                g_strdup_printf("%s/%s", s->name, s->ns[0] != '\0' ? s->ns : binding_ns);
        return g_strdup_printf("%s \"%s\"", s->kind, who);
    }
    return g_strdup_printf("%s \"%s\"", s->kind, s->name);
}

/* The rules of @b's role, or NULL with the lister's error appended to @errors. */
static const Role *role_of(const Policy *p, const Binding *b, GPtrArray *errors)
{
    const Role *role = NULL;
    if (strcmp(b->role_kind, "ClusterRole") == 0) {
        role = g_hash_table_lookup(p->cluster_roles, b->role_name);
        if (role == NULL)
            g_ptr_array_add(errors, g_strdup_printf("clusterrole." RBAC_GROUP " \"%s\" not found",
                                                    b->role_name));
    } else if (strcmp(b->role_kind, "Role") == 0) {
        /* A ClusterRoleBinding naming a Role looks it up in no namespace: never found. */
        g_autofree char *key = g_strdup_printf("%s/%s", b->ns, b->role_name);
        role = g_hash_table_lookup(p->roles, key);
        if (role == NULL)
            g_ptr_array_add(errors,
                            g_strdup_printf("role." RBAC_GROUP " \"%s\" not found", b->role_name));
    } else {
        g_ptr_array_add(errors,
                        g_strdup_printf("unsupported role reference kind: \"%s\"", b->role_kind));
    }
    return role;
}

static char *allowed_reason(const Binding *b, const Subject *s)
{
    g_autofree char *who = describe_subject(s, b->ns);
    if (b->ns[0] == '\0')
        return g_strdup_printf("RBAC: allowed by ClusterRoleBinding \"%s\" of %s \"%s\" to %s",
                               b->name, b->role_kind, b->role_name, who);
    return g_strdup_printf("RBAC: allowed by RoleBinding \"%s/%s\" of %s \"%s\" to %s", b->name,
                           b->ns, b->role_kind, b->role_name, who);
}

/* Visit @bindings (those of namespace @ns when @ns is not "") as VisitRulesFor does. */
static gboolean visit(const Policy *p, GPtrArray *bindings, const char *ns, const KasAttrs *a,
                      GPtrArray *errors, char **reason)
{
    for (guint i = 0; i < bindings->len; i++) {
        const Binding *b = g_ptr_array_index(bindings, i);
        if (ns[0] != '\0' && strcmp(b->ns, ns) != 0)
            continue;
        const Subject *s = applies(b, a->user, ns);
        if (s == NULL)
            continue;
        const Role *role = role_of(p, b, errors);
        for (guint k = 0; role != NULL && k < role->rules->len; k++) {
            if (rule_allows(&g_array_index(role->rules, Rule, k), a)) {
                if (reason != NULL)
                    *reason = allowed_reason(b, s);
                return TRUE;
            }
        }
    }
    return FALSE;
}

/* utilerrors.NewAggregate(errs).Error(): one message alone, else "[a, b]" without duplicates. */
static char *aggregate(GPtrArray *errors)
{
    if (errors->len == 1)
        return g_strdup(g_ptr_array_index(errors, 0));
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < errors->len; i++) {
        const char *e = g_ptr_array_index(errors, i);
        if (!g_hash_table_add(seen, (gpointer)e))
            continue;
        if (s->len > 0)
            g_string_append(s, ", ");
        g_string_append(s, e);
    }
    if (g_hash_table_size(seen) == 1)
        return g_string_free(s, FALSE);
    g_string_prepend_c(s, '[');
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

gboolean kas_rbac_authorize(KasRbac *rbac, const KasAttrs *a, char **reason)
{
    Policy *p = policy_get(rbac);
    g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);
    char *why = NULL;
    const char *ns = a->ns != NULL ? a->ns : "";
    gboolean ok = visit(p, p->cluster_bindings, "", a, errors, &why) ||
                  (ns[0] != '\0' && visit(p, p->bindings, ns, a, errors, &why));
    policy_unref(p);
    if (!ok && errors->len > 0) {
        g_autofree char *agg = aggregate(errors);
        why = g_strdup_printf("RBAC: %s", agg);
    }
    if (reason != NULL)
        *reason = why != NULL ? why : g_strdup("");
    else
        g_free(why);
    return ok;
}

/* ---- the bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy, 1.19)
 * ---------------- */

static const char bootstrap_roles[] =
        "["
        "{\"name\":\"cluster-admin\",\"rules\":[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
        "\"verbs\":[\"*\"]},{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]},"
        "{\"name\":\"system:discovery\",\"rules\":[{\"nonResourceURLs\":[\"/api\",\"/api/*\","
        "\"/apis\",\"/apis/*\",\"/healthz\",\"/livez\",\"/openapi\",\"/openapi/*\",\"/readyz\","
        "\"/version\",\"/version/\"],\"verbs\":[\"get\"]}]},"
        "{\"name\":\"system:basic-user\",\"rules\":[{\"apiGroups\":[\"authorization.k8s.io\"],"
        "\"resources\":[\"selfsubjectaccessreviews\",\"selfsubjectrulesreviews\"],"
        "\"verbs\":[\"create\"]}]},"
        "{\"name\":\"system:public-info-viewer\",\"rules\":[{\"nonResourceURLs\":[\"/healthz\","
        "\"/livez\",\"/readyz\",\"/version\",\"/version/\"],\"verbs\":[\"get\"]}]}"
        "]";

/* ClusterRoleBinding name (= ClusterRole name) -> groups. */
static const struct {
    const char *name;
    const char *groups[3];
} bootstrap_bindings[] = {
        {"cluster-admin", {"system:masters", NULL}},
        {"system:discovery", {"system:authenticated", NULL}},
        {"system:basic-user", {"system:authenticated", NULL}},
        {"system:public-info-viewer", {"system:authenticated", "system:unauthenticated", NULL}},
};

static json_object *bootstrap_meta(const char *name)
{
    json_object *meta = json_object_new_object();
    kas_json_set_string(meta, "name", name);
    json_object *labels = kas_json_ensure_object(meta, "labels");
    kas_json_set_string(labels, "kubernetes.io/bootstrapping", "rbac-defaults");
    json_object *ann = kas_json_ensure_object(meta, "annotations");
    kas_json_set_string(ann, "rbac.authorization.kubernetes.io/autoupdate", "true");
    return meta;
}

static void bootstrap_create(KasStore *store, const char *plural, json_object *obj)
{
    kas_store_lock(store);
    KasRes *res = rbac_res(store, plural);
    kas_store_unlock(store);
    if (res == NULL)
        return;
    g_autoptr(GError) error = NULL;
    KasObj *o = kas_ops_create(store, res, "v1", NULL, obj, &error);
    if (o != NULL)
        kas_obj_unref(o);
    else if (!g_error_matches(error, KAS_ERROR, KAS_ERR_ALREADY_EXISTS))
        g_warning("rbac bootstrap: %s %s: %s", plural, kas_json_get_string(obj, "metadata.name"),
                  error->message);
}

void kas_rbac_bootstrap(KasStore *store)
{
    json_object *roles = json_tokener_parse(bootstrap_roles);
    for (size_t i = 0; i < json_object_array_length(roles); i++) {
        json_object *r = json_object_array_get_idx(roles, i);
        json_object *obj = json_object_new_object();
        kas_json_set_string(obj, "apiVersion", RBAC_GROUP "/v1");
        kas_json_set_string(obj, "kind", "ClusterRole");
        json_object_object_add(obj, "metadata", bootstrap_meta(kas_json_get_string(r, "name")));
        json_object_object_add(obj, "rules", json_object_get(kas_json_get(r, "rules")));
        bootstrap_create(store, "clusterroles", obj);
        json_object_put(obj);
    }
    json_object_put(roles);
    for (guint i = 0; i < G_N_ELEMENTS(bootstrap_bindings); i++) {
        json_object *obj = json_object_new_object();
        kas_json_set_string(obj, "apiVersion", RBAC_GROUP "/v1");
        kas_json_set_string(obj, "kind", "ClusterRoleBinding");
        json_object_object_add(obj, "metadata", bootstrap_meta(bootstrap_bindings[i].name));
        json_object *ref = kas_json_ensure_object(obj, "roleRef");
        kas_json_set_string(ref, "apiGroup", RBAC_GROUP);
        kas_json_set_string(ref, "kind", "ClusterRole");
        kas_json_set_string(ref, "name", bootstrap_bindings[i].name);
        json_object *subjects = json_object_new_array();
        for (guint k = 0; bootstrap_bindings[i].groups[k] != NULL; k++) {
            json_object *s = json_object_new_object();
            kas_json_set_string(s, "apiGroup", RBAC_GROUP);
            kas_json_set_string(s, "kind", "Group");
            kas_json_set_string(s, "name", bootstrap_bindings[i].groups[k]);
            json_object_array_add(subjects, s);
        }
        json_object_object_add(obj, "subjects", subjects);
        bootstrap_create(store, "clusterrolebindings", obj);
        json_object_put(obj);
    }
}
