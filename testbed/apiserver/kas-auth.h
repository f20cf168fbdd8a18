/*
 * Authentication and authorization of the in-memory API server, as kube-apiserver 1.19 does
 * them with --token-auth-file, anonymous requests allowed and --authorization-mode:
 *
 *   - the static token file (CSV: token,user,uid[,"group1,group2"]); "Authorization: Bearer T"
 *     with an unknown T gets 401 Unauthorized; no credentials is system:anonymous in group
 *     system:unauthenticated; every authenticated user is in system:authenticated, and a user
 *     named system:serviceaccount:NS:NAME in system:serviceaccounts and
 *     system:serviceaccounts:NS (as a real ServiceAccount token gives);
 *   - the request's attributes parsed as k8s.io/apiserver's RequestInfoFactory does (verb from
 *     the method, list/watch/deletecollection, subresources, metadata.name field selectors);
 *   - authorizers in order: system:masters (always first), then the modes given: AlwaysAllow,
 *     AlwaysDeny, RBAC (kas-rbac.h), Node (accepted; kb-apiserver has no node identities, so it
 *     never has an opinion); a refusal is 403 with the real server's message;
 *   - POST authorization.k8s.io/v1 selfsubjectaccessreviews and subjectaccessreviews.
 *
 * Without a token file and with the default mode (AlwaysAllow) everything is allowed, as before.
 * Thread-safe.
 */
#pragma once

#include <glib.h>

#include "testbed/apiserver/kas-rbac.h"
#include "testbed/apiserver/kas-rest.h"
#include "testbed/apiserver/kas-store.h"

/* The attributes of one request (RequestInfoFactory.NewRequestInfo). */
typedef struct {
    gboolean resource_request;
    char *verb;
    char *path;
    char *group; /* "" for the core group */
    char *version;
    char *ns;
    char *resource;
    char *subresource;
    char *name;
} KasRequestInfo;

/* Parse @method @path (percent-decoded, without the query) with @query (decoded; may be NULL).
 * Never fails: what is not an API resource path is a non-resource request. */
void kas_request_info_parse(KasRequestInfo *info, const char *method, const char *path,
                            GHashTable *query);
void kas_request_info_clear(KasRequestInfo *info);

typedef struct {
    const char *token_file;         /* --token-auth-file; NULL: everyone is anonymous */
    const char *authorization_mode; /* --authorization-mode; NULL: "AlwaysAllow" */
} KasAuthOptions;

typedef struct KasAuth KasAuth;

/* Load the token file and check the modes; NULL with an error naming the file and line, or the
 * unknown mode. @store (borrowed) must outlive the result. */
KasAuth *kas_auth_new(KasStore *store, const KasAuthOptions *opts, GError **error);
void kas_auth_free(KasAuth *auth);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasAuth, kas_auth_free)

/* Is every request allowed without looking (no token file, AlwaysAllow)? */
gboolean kas_auth_is_open(const KasAuth *auth);

/* The user the Authorization header value @authorization (may be NULL) stands for (new), or
 * NULL when the bearer token is unknown (a 401). */
KasUser *kas_auth_authenticate(KasAuth *auth, const char *authorization);

/* Run the authorizers on @attrs; *@reason (may be NULL) receives the union's reason (new). */
gboolean kas_auth_authorize(KasAuth *auth, const KasAttrs *attrs, char **reason);

/* Authenticate and authorize @req, whose Authorization header is @authorization (may be NULL),
 * and answer the access reviews. TRUE when @reply holds the answer (401, 403, a review); FALSE
 * when the request goes on to the REST layer. */
gboolean kas_auth_serve(KasAuth *auth, const KasRequest *req, const char *authorization,
                        KasReply *reply);

/* Requests refused so far with 401 and with 403 (either may be NULL). */
void kas_auth_counts(KasAuth *auth, guint64 *unauthorized, guint64 *forbidden);
