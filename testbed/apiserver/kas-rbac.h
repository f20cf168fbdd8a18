/*
 * RBAC authorization of the in-memory API server, as kube-apiserver's RBAC authorizer
 * (plugin/pkg/auth/authorizer/rbac) decides: the ClusterRoles, Roles, ClusterRoleBindings and
 * RoleBindings stored in the server (rbac.authorization.k8s.io/v1), rules matching on verbs,
 * apiGroups, resources ("pods/binding", a star, a star before "/status"), resourceNames and
 * nonResourceURLs (exact, or a prefix ending in a star). Role aggregation is not evaluated (an
 * aggregated role counts with the rules it has stored). The bootstrap policy a client relies on
 * (cluster-admin for system:masters, system:discovery, system:basic-user,
 * system:public-info-viewer) is created at start.
 *
 * The stored objects are compiled into a snapshot that is rebuilt only when one of them
 * changed, so a decision costs no JSON parsing. Thread-safe.
 */
#pragma once

#include <glib.h>

#include "testbed/apiserver/kas-store.h"

/* An authenticated (or anonymous) user. */
typedef struct {
    char *name;
    char *uid;
    char **groups; /* NULL-terminated */
} KasUser;

KasUser *kas_user_new(const char *name, const char *uid, const char *const *groups);
KasUser *kas_user_copy(const KasUser *user);
void kas_user_free(KasUser *user);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasUser, kas_user_free)
gboolean kas_user_in_group(const KasUser *user, const char *group);

/* What a request asks to do (k8s.io/apiserver's authorizer.Attributes). Strings are borrowed;
 * unused ones may be NULL or "". */
typedef struct {
    const KasUser *user;
    gboolean resource_request;
    const char *verb;
    const char *path; /* non-resource requests */
    const char *ns;
    const char *group;
    const char *version;
    const char *resource;
    const char *subresource;
    const char *name;
} KasAttrs;

typedef struct KasRbac KasRbac;

/* An authorizer over @store (borrowed; it must outlive the authorizer). */
KasRbac *kas_rbac_new(KasStore *store);
void kas_rbac_free(KasRbac *rbac);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasRbac, kas_rbac_free)

/* Create the bootstrap roles and bindings of a 1.19 server (skipping those that exist). */
void kas_rbac_bootstrap(KasStore *store);

/* Does a rule of a binding that applies to the user allow @attrs? *@reason (may be NULL)
 * receives the real authorizer's reason, newly allocated: "RBAC: allowed by ClusterRoleBinding
 * ..." when allowed, "" or "RBAC: <errors of bindings naming missing roles>" when not. */
gboolean kas_rbac_authorize(KasRbac *rbac, const KasAttrs *attrs, char **reason);
