/*
 * kb-apiserver against a real kube-apiserver 1.19's recorded answers.
 *
 * tests/data/kube-apiserver-1.19/cases.json (see its README) holds requests sent in order to a
 * real server and its full answers. Every case is replayed, in the same order, against one fresh
 * bin/kb-apiserver started as the recorded server was configured (tests/lib/kb-test-cluster.h:
 * HTTPS with the test CA, static bearer tokens, --authorization-mode RBAC), each sent as its
 * recorded user: `admin` with the token of a system:masters user, `kube-batchd` with the token
 * of the ServiceAccount kube-batchd/kube-batchd (the subject of the recorded ClusterRoleBinding
 * conf-binder), `bad-token` with a token the server does not know. One GTest case per fixture
 * case (/apiserver/replay/NAME) compares the status,
 * `reason`, `message`, `details` and every field of the answer but those that change from run to
 * run (uid, resourceVersion, timestamps, managedFields, selfLink, continue-token contents). Watch
 * answers are compared by event type and object name.
 *
 * Recorded resourceVersions, uids and continue tokens in later requests are translated to the
 * ones our server gave for the same objects (learnt from the answers as they come), so the
 * requests mean the same thing on both servers.
 *
 * Running one case (-p) replays the cases before it first, since each depends on what the
 * earlier ones created.
 */
#include <curl/curl.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-cluster.h"

/* ---- the tables ----------------------------------------------------------------------------- */

/* Where we answer differently on purpose. Each entry states what we answer instead, so the table
 * itself is checked. @restore names a case whose request is sent again afterwards to give the
 * following cases the state the real server had. */
typedef struct {
    const char *name;
    long status;
    const char *reason; /* NULL: none */
    const char *restore;
    const char *why;
} KnownDiff;

static const KnownDiff known_diffs[] = {
        {"eviction-v1", 201, NULL, "pod-priorityclass",
         "policy/v1 Eviction exists since Kubernetes 1.22 and policy/v1beta1 is gone since 1.25; "
         "clients of today's clusters send policy/v1, so we accept it where 1.19 answered 400 (the "
         "pod it evicted is created again for the cases that follow)"},
        {"version", 200, NULL, NULL,
         "/version names the Kubernetes whose contract kb-apiserver follows where it has changed "
         "since 1.19 (policy/v1, spec.schedulingGates), not 1.19: clients that choose an API by "
         "the server's version must see the newer one"},
        {"pod-patch-bad-json", 400, "BadRequest", NULL,
         "a body that is not JSON is the client's error: 400 BadRequest, where 1.19 answered 500 "
         "\"Invalid JSON Patch\" (a flaw of the real server, not a contract: newer servers answer "
         "400 too)"},
};

/* Answers whose recorded form is an artifact of the recording, not of the server. */
typedef struct {
    const char *name;
    const char *path; /* dotted path in the body not compared */
    const char *why;
} FixtureArtifact;

static const FixtureArtifact artifacts[] = {
        {"lease-create", "spec.holderIdentity",
         "the recorder reused this answer as the next request's body and changed holderIdentity to "
         "\"c\" in place before saving it (the server answered the \"a\" it was sent)"},
        {"crd-protected-group-unapproved", "status",
         "the real server's CRD controller fills status (acceptedNames, Established) moments after "
         "the create; the recorded answer caught it before, ours is filled at once"},
        {"crd-other-group", "status", "as crd-protected-group-unapproved"},
};

/* What the recorder did between two cases without recording it, as the next answers show. */
typedef void (*SideAction)(void);
static void side_patch_minimal_label(void);
static void side_lease_first_candidate(void);

typedef struct {
    const char *name; /* done before this case's request */
    SideAction fn;
    const char *why;
} Side;

static const Side sides[] = {
        {"watch-from-list", side_patch_minimal_label,
         "the recorder changed pod minimal (label w=1) while this watch was open: the recorded "
         "event shows it; a watch from the earlier resourceVersion sees the same change"},
        {"lease-put-stale", side_lease_first_candidate,
         "\"two candidates\": the first candidate's update (not recorded) comes before the "
         "second's "
         "stale one"},
};

/* ---- state ---------------------------------------------------------------------------------- */

typedef struct {
    gboolean done;
    gboolean matched;
    char *report; /* differences and both answers, NULL when matched */
} Result;

static json_object *fixture; /* {"server":..., "cases": [...]} */
static json_object *cases;   /* borrowed */
static Result *results;
static guint next_case;
static KbTestCluster *cluster;
static GHashTable *subst; /* recorded string (rv, uid, continue token) -> ours */
static guint n_matched, n_known, n_replayed;

/* ---- HTTP ----------------------------------------------------------------------------------- */

typedef struct {
    long code;
    GString *body;
    guint want_lines; /* watch: stop after this many lines (0: read to the end) */
    guint lines;
} Resp;

static size_t collect(char *ptr, size_t size, size_t n, void *data)
{
    Resp *r = data;
    g_string_append_len(r->body, ptr, (gssize)(size * n));
    if (r->want_lines > 0) {
        r->lines = 0;
        for (const char *p = r->body->str; (p = strchr(p, '\n')) != NULL; p++)
            r->lines++;
        if (r->lines >= r->want_lines)
            return 0; /* enough events: abort the transfer */
    }
    return size * n;
}

/* @method @path as @who: one of KB_TEST_* (kb-test-cluster.h), or any other string, sent as the
 * bearer token itself. */
static Resp *http(const char *who, const char *method, const char *path, const char *ctype,
                  const char *body, gsize body_len, guint want_lines)
{
    Resp *r = g_new0(Resp, 1);
    r->body = g_string_new(NULL);
    r->want_lines = want_lines;
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strconcat(kb_test_cluster_url(cluster), path, NULL);
    const char *token = kb_test_cluster_token(cluster, who);
    g_autofree char *auth =
            g_strdup_printf("Authorization: Bearer %s", token != NULL ? token : who);
    g_autofree char *ct =
            g_strdup_printf("Content-Type: %s", ctype != NULL ? ctype : "application/json");
    struct curl_slist *hdrs = curl_slist_append(NULL, ct);
    hdrs = curl_slist_append(hdrs, "Expect:");
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    hdrs = curl_slist_append(hdrs, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    g_autofree char *ca =
            g_build_filename(g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".",
                             "tests/data/tls/ca.pem", NULL);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    /* Generous: the machine is loaded. A watch ends by its timeoutSeconds or its event count. */
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && want_lines > 0))
        g_test_message("%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return r;
}

static void resp_free(Resp *r)
{
    g_string_free(r->body, TRUE);
    g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Resp, resp_free)

static json_object *resp_json(Resp *r)
{
    return kas_json_parse(r->body->str, r->body->len, NULL);
}

/* ---- translation of recorded names to ours -------------------------------------------------- */

static const char *translate(const char *recorded)
{
    const char *ours = g_hash_table_lookup(subst, recorded);
    return ours != NULL ? ours : recorded;
}

static void learn(const char *recorded, const char *ours)
{
    if (recorded != NULL && ours != NULL && *recorded != '\0' && strcmp(recorded, ours) != 0)
        g_hash_table_insert(subst, g_strdup(recorded), g_strdup(ours));
}

/* Learn the uids, resourceVersions and continue tokens of @want (recorded) from @got (ours):
 * the same object, list or item by name. */
static void learn_object(json_object *want, json_object *got)
{
    if (!json_object_is_type(want, json_type_object) || !json_object_is_type(got, json_type_object))
        return;
    learn(kas_json_get_string(want, "metadata.uid"), kas_json_get_string(got, "metadata.uid"));
    learn(kas_json_get_string(want, "metadata.resourceVersion"),
          kas_json_get_string(got, "metadata.resourceVersion"));
    learn(kas_json_get_string(want, "metadata.continue"),
          kas_json_get_string(got, "metadata.continue"));
    json_object *wi = kas_json_get(want, "items"), *gi = kas_json_get(got, "items");
    if (!json_object_is_type(wi, json_type_array) || !json_object_is_type(gi, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(wi); i++) {
        json_object *w = json_object_array_get_idx(wi, i);
        const char *name = kas_json_get_string(w, "metadata.name");
        for (size_t j = 0; name != NULL && j < json_object_array_length(gi); j++) {
            json_object *g = json_object_array_get_idx(gi, j);
            if (g_strcmp0(kas_json_get_string(g, "metadata.name"), name) == 0)
                learn_object(w, g);
        }
    }
}

/* The current resourceVersion of the collection at @path (query stripped). */
static char *current_rv(const char *path)
{
    g_autofree char *base = g_strndup(path, strcspn(path, "?"));
    g_autofree char *p = g_strconcat(base, "?limit=1", NULL);
    g_autoptr(Resp) r = http(KB_TEST_ADMIN, "GET", p, NULL, NULL, 0, 0);
    json_object *j = resp_json(r);
    char *rv = g_strdup(kas_json_get_string(j, "metadata.resourceVersion"));
    json_object_put(j);
    return rv;
}

/* The recorded path with resourceVersion= and continue= translated. A resourceVersion we never
 * saw (the recorder listed it outside the cases) becomes the collection's current one. */
static char *translate_path(const char *path)
{
    const char *q = strchr(path, '?');
    if (q == NULL)
        return g_strdup(path);
    GString *out = g_string_new_len(path, q - path + 1);
    g_auto(GStrv) params = g_strsplit(q + 1, "&", -1);
    for (guint i = 0; params[i] != NULL; i++) {
        if (i > 0)
            g_string_append_c(out, '&');
        const char *eq = strchr(params[i], '=');
        g_autofree char *key = eq != NULL ? g_strndup(params[i], eq - params[i]) : NULL;
        if (key != NULL && strcmp(key, "resourceVersion") == 0 && strcmp(eq + 1, "0") != 0) {
            const char *ours = g_hash_table_lookup(subst, eq + 1);
            g_autofree char *cur = ours == NULL ? current_rv(path) : NULL;
            g_string_append_printf(out, "resourceVersion=%s", ours != NULL ? ours : cur);
        } else if (key != NULL && strcmp(key, "continue") == 0) {
            g_string_append_printf(out, "continue=%s", translate(eq + 1));
        } else {
            g_string_append(out, params[i]);
        }
    }
    return g_string_free(out, FALSE);
}

static void translate_body(json_object *body)
{
    if (!json_object_is_type(body, json_type_object))
        return;
    json_object *md = kas_json_get(body, "metadata");
    if (!json_object_is_type(md, json_type_object))
        return;
    const char *keys[] = {"resourceVersion", "uid"};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
        const char *v = kas_json_get_string(md, keys[i]);
        if (v != NULL)
            kas_json_set_string(md, keys[i], translate(v));
    }
}

/* "<307242 bytes: {\"metadata\": ... \"big\": \"xxxx...>": the recorder's abbreviation of a
 * big body, whose tail is one repeated character closed by "\"}}}". */
static char *expand_body_text(const char *text, gsize *len)
{
    guint64 n = 0;
    const char *rest = NULL;
    if (sscanf(text, "<%" G_GUINT64_FORMAT " bytes: ", &n) == 1 &&
        (rest = strstr(text, "bytes: ")) != NULL && g_str_has_suffix(text, "...>")) {
        rest += strlen("bytes: ");
        gsize plen = strlen(rest) - strlen("...>");
        const char *end = "\"}}}";
        char fill = rest[plen - 1];
        /* the prefix up to the first of the repeated characters */
        gsize keep = plen;
        while (keep > 0 && rest[keep - 1] == fill)
            keep--;
        GString *s = g_string_new_len(rest, (gssize)keep);
        while (s->len + strlen(end) < n)
            g_string_append_c(s, fill);
        g_string_append(s, end);
        *len = s->len;
        return g_string_free(s, FALSE);
    }
    *len = strlen(text);
    return g_strdup(text);
}

/* ---- comparison ----------------------------------------------------------------------------- */

/* Fields that differ from run to run (the fixture README): never compared. */
static gboolean volatile_key(const char *k)
{
    static const char *const keys[] = {"uid",           "resourceVersion", "creationTimestamp",
                                       "managedFields", "selfLink",        "deletionTimestamp"};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
        if (strcmp(k, keys[i]) == 0)
            return TRUE;
    /* event times, condition times, lease times */
    return g_str_has_suffix(k, "Time") || g_str_has_suffix(k, "Timestamp");
}

static gboolean strings_match(const char *want, const char *got)
{
    if (strcmp(want, got) == 0)
        return TRUE;
    /* recorded uids inside messages ("the UID in record (...)") */
    g_autofree char *w = g_strdup(want);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, subst);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        if (strlen(k) < 20 || strstr(w, k) == NULL)
            continue;
        g_auto(GStrv) parts = g_strsplit(w, k, -1);
        g_free(w);
        w = g_strjoinv(v, parts);
    }
    return strcmp(w, got) == 0;
}

static void cmp_json(json_object *want, json_object *got, const char *path, const char *ignore,
                     GString *diffs);

static void cmp_object(json_object *want, json_object *got, const char *path, const char *ignore,
                       GString *diffs)
{
    json_object_object_foreach(want, k, wv)
    {
        if (volatile_key(k))
            continue;
        g_autofree char *p = *path != '\0' ? g_strdup_printf("%s.%s", path, k) : g_strdup(k);
        json_object *gv = NULL;
        if (!json_object_object_get_ex(got, k, &gv)) {
            if (strcmp(k, "continue") == 0 || wv != NULL)
                g_string_append_printf(diffs, "  %s: missing (recorded %s)\n", p,
                                       json_object_to_json_string(wv));
            continue;
        }
        if (strcmp(k, "continue") == 0)
            continue; /* present on both: its contents differ by design */
        cmp_json(wv, gv, p, ignore, diffs);
    }
    json_object_object_foreach(got, k2, gv2)
    {
        if (volatile_key(k2) || json_object_object_get_ex(want, k2, NULL))
            continue;
        g_autofree char *p = *path != '\0' ? g_strdup_printf("%s.%s", path, k2) : g_strdup(k2);
        if (ignore != NULL && strcmp(ignore, p) == 0)
            continue;
        g_string_append_printf(diffs, "  %s: unexpected %s\n", p, json_object_to_json_string(gv2));
    }
}

static void cmp_json(json_object *want, json_object *got, const char *path, const char *ignore,
                     GString *diffs)
{
    if (ignore != NULL && strcmp(ignore, path) == 0)
        return;
    json_type wt = json_object_get_type(want), gt = json_object_get_type(got);
    gboolean same_type = wt == gt || ((wt == json_type_int || wt == json_type_double) &&
                                      (gt == json_type_int || gt == json_type_double));
    if (!same_type) {
        g_string_append_printf(diffs, "  %s: recorded %s, ours %s\n", path,
                               json_object_to_json_string(want), json_object_to_json_string(got));
        return;
    }
    switch (wt) {
    case json_type_object:
        cmp_object(want, got, path, ignore, diffs);
        return;
    case json_type_array: {
        size_t wn = json_object_array_length(want), gn = json_object_array_length(got);
        if (wn != gn)
            g_string_append_printf(diffs, "  %s: %zu items recorded, ours %zu\n", path, wn, gn);
        for (size_t i = 0; i < MIN(wn, gn); i++) {
            g_autofree char *p = g_strdup_printf("%s[%zu]", path, i);
            cmp_json(json_object_array_get_idx(want, i), json_object_array_get_idx(got, i), p,
                     ignore, diffs);
        }
        return;
    }
    case json_type_string:
        if (!strings_match(json_object_get_string(want), json_object_get_string(got)))
            g_string_append_printf(diffs, "  %s: recorded %s\n  %*s  ours     %s\n", path,
                                   json_object_to_json_string(want), (int)strlen(path), "",
                                   json_object_to_json_string(got));
        return;
    case json_type_null:
        return;
    default:
        if (strcmp(json_object_to_json_string(want), json_object_to_json_string(got)) != 0)
            g_string_append_printf(diffs, "  %s: recorded %s, ours %s\n", path,
                                   json_object_to_json_string(want),
                                   json_object_to_json_string(got));
    }
}

/* Watch answers: one JSON event per line, compared by type and object name: in order, except
 * for a watch from resourceVersion 0, whose initial ADDED events come in no particular order
 * (the recorder kept only the first few). */
static void cmp_watch(json_object *events, Resp *r, GString *diffs)
{
    g_auto(GStrv) lines = g_strsplit(r->body->str, "\n", -1);
    g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func(g_free);
    size_t n = json_object_array_length(events);
    gboolean all_added = TRUE;
    for (size_t i = 0; i < n; i++)
        all_added = all_added &&
                    g_strcmp0(kas_json_get_string(json_object_array_get_idx(events, i), "type"),
                              "ADDED") == 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        json_object *ev = kas_json_parse(lines[i], strlen(lines[i]), NULL);
        const char *type = kas_json_get_string(ev, "type");
        if (ev == NULL || g_strcmp0(type, "BOOKMARK") == 0) {
            json_object_put(ev);
            continue;
        }
        const char *name = kas_json_get_string(ev, "object.metadata.name");
        g_ptr_array_add(got, g_strdup_printf("%s %s", type, name));
        /* learn from the recorded event of the same object */
        for (size_t j = 0; j < n; j++) {
            json_object *wev = json_object_array_get_idx(events, j);
            if (g_strcmp0(kas_json_get_string(wev, "object.metadata.name"), name) == 0)
                learn_object(kas_json_get(wev, "object"), kas_json_get(ev, "object"));
        }
        json_object_put(ev);
    }
    for (size_t i = 0; i < n; i++) {
        json_object *ev = json_object_array_get_idx(events, i);
        g_autofree char *want = g_strdup_printf("%s %s", kas_json_get_string(ev, "type"),
                                                kas_json_get_string(ev, "object.metadata.name"));
        if (all_added) {
            gboolean found = FALSE;
            for (guint j = 0; j < got->len && !found; j++)
                found = strcmp(g_ptr_array_index(got, j), want) == 0;
            if (!found)
                g_string_append_printf(diffs, "  event %zu: recorded %s, not among ours\n", i,
                                       want);
            continue;
        }
        const char *have = i < got->len ? g_ptr_array_index(got, i) : "(none)";
        if (strcmp(want, have) != 0)
            g_string_append_printf(diffs, "  event %zu: recorded %s, ours %s\n", i, want, have);
    }
}

static int cmp_item_names(const void *a, const void *b)
{
    json_object *const *x = a, *const *y = b;
    return g_strcmp0(kas_json_get_string(*x, "metadata.name"),
                     kas_json_get_string(*y, "metadata.name"));
}

static void sort_items(json_object *list)
{
    json_object *items = kas_json_get(list, "items");
    if (json_object_is_type(items, json_type_array))
        json_object_array_sort(items, cmp_item_names);
}

/* ---- replay --------------------------------------------------------------------------------- */

static json_object *case_named(const char *name, guint *index)
{
    for (size_t i = 0; i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        if (g_strcmp0(kas_json_get_string(c, "name"), name) == 0) {
            if (index != NULL)
                *index = (guint)i;
            return c;
        }
    }
    return NULL;
}

static const KnownDiff *known_diff(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(known_diffs); i++)
        if (strcmp(known_diffs[i].name, name) == 0)
            return &known_diffs[i];
    return NULL;
}

/* The identity (kb-test-cluster.h) of a recorded user; any other user is an unknown token. */
static const char *who_of(const char *user)
{
    if (g_strcmp0(user, "admin") == 0)
        return KB_TEST_ADMIN;
    if (g_strcmp0(user, "kube-batchd") == 0)
        return KB_TEST_SCHEDULER;
    return "not-a-token-of-this-server";
}

/* Send @c's request; the answer in *@resp. */
static Resp *send_case(json_object *c)
{
    json_object *req = kas_json_get(c, "request");
    const char *method = kas_json_get_string(req, "method");
    g_autofree char *path = translate_path(kas_json_get_string(req, "path"));
    const char *name = kas_json_get_string(c, "name");
    for (guint i = 0; i < G_N_ELEMENTS(sides); i++)
        if (strcmp(sides[i].name, name) == 0)
            sides[i].fn();
    g_autofree char *body = NULL;
    gsize len = 0;
    json_object *jb = kas_json_get(req, "body");
    const char *text = kas_json_get_string(req, "body_text");
    if (text != NULL) {
        body = expand_body_text(text, &len);
    } else if (jb != NULL) {
        json_object *copy = NULL;
        json_object_deep_copy(jb, &copy, NULL);
        translate_body(copy);
        body = kas_json_dump(copy);
        len = strlen(body);
        json_object_put(copy);
    }
    guint want_lines = 0;
    json_object *events = kas_json_get(c, "response.events");
    /* a watch without timeoutSeconds stays open: read as many events as were recorded */
    if (events != NULL && strstr(path, "timeoutSeconds=") == NULL)
        want_lines = (guint)json_object_array_length(events);
    /* a watch from 0 sends every object first: read them all (its recorded events are a few) */
    if (events != NULL && strstr(path, "resourceVersion=0") != NULL)
        want_lines = 0;
    return http(who_of(kas_json_get_string(req, "user")), method, path,
                kas_json_get_string(req, "content_type"), body, len, want_lines);
}

static char *pretty(const char *text)
{
    json_object *j = kas_json_parse(text, strlen(text), NULL);
    char *s = j != NULL ? g_strdup(json_object_to_json_string_ext(
                                  j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE))
                        : g_strdup(text);
    json_object_put(j);
    if (strlen(s) > 6000)
        strcpy(s + 5980, "\n... (cut)");
    return s;
}

static void replay_one(guint index)
{
    json_object *c = json_object_array_get_idx(cases, index);
    Result *res = &results[index];
    const char *name = kas_json_get_string(c, "name");
    res->done = TRUE;
    n_replayed++;
    g_autoptr(Resp) r = send_case(c);
    json_object *resp = kas_json_get(c, "response");
    long want_status = json_object_get_int(kas_json_get(resp, "status"));
    json_object *want = kas_json_get(resp, "body");
    g_autoptr(GString) diffs = g_string_new(NULL);
    const KnownDiff *kd = known_diff(name);
    json_object *got = resp_json(r);

    if (kd != NULL) {
        /* the table is checked too: we answer what it says */
        if (r->code != kd->status)
            g_string_append_printf(diffs, "  status: known difference says %ld, ours %ld\n",
                                   kd->status, r->code);
        if (g_strcmp0(kd->reason, kas_json_get_string(got, "reason")) != 0)
            g_string_append_printf(diffs, "  reason: known difference says %s, ours %s\n",
                                   kd->reason, kas_json_get_string(got, "reason"));
        if (kd->restore != NULL) {
            json_object *rc = case_named(kd->restore, NULL);
            g_autoptr(Resp) rr = send_case(rc);
            json_object *rj = resp_json(rr);
            learn_object(kas_json_get(rc, "response.body"), rj);
            json_object_put(rj);
            if (rr->code >= 300)
                g_string_append_printf(diffs, "  restoring with %s: %ld\n", kd->restore, rr->code);
        }
        if (diffs->len == 0)
            n_known++;
    } else {
        if (r->code != want_status)
            g_string_append_printf(diffs, "  status: recorded %ld, ours %ld\n", want_status,
                                   r->code);
        const char *ignore = NULL;
        for (guint i = 0; i < G_N_ELEMENTS(artifacts); i++)
            if (strcmp(artifacts[i].name, name) == 0)
                ignore = artifacts[i].path;
        json_object *events = kas_json_get(resp, "events");
        if (events != NULL) {
            cmp_watch(events, r, diffs);
        } else if (json_object_is_type(want, json_type_string)) {
            const char *w = json_object_get_string(want);
            if (strcmp(w, "<omitted>") != 0 && strcmp(w, r->body->str) != 0)
                g_string_append_printf(diffs, "  body: recorded \"%s\", ours \"%s\"\n", w,
                                       r->body->str);
        } else if (want != NULL) {
            if (got == NULL) {
                g_string_append(diffs, "  body: ours is not JSON\n");
            } else {
                if (strstr(kas_json_get_string(c, "request.path"), "resourceVersion=0") != NULL) {
                    /* served from the watch cache: items in no particular order */
                    sort_items(want);
                    sort_items(got);
                }
                cmp_json(want, got, "", ignore, diffs);
            }
            learn_object(want, got);
        }
        if (diffs->len == 0)
            n_matched++;
    }
    json_object_put(got);
    res->matched = diffs->len == 0;
    if (!res->matched) {
        g_autofree char *w = want != NULL ? pretty(json_object_to_json_string(want)) : NULL;
        if (kas_json_get(resp, "events") != NULL)
            w = pretty(json_object_to_json_string(resp));
        g_autofree char *o = pretty(r->body->str);
        res->report = g_strdup_printf("case %s (%s):\n%s--- recorded (status %ld):\n%s\n"
                                      "--- ours (status %ld):\n%s\n",
                                      name, kas_json_get_string(c, "why"), diffs->str, want_status,
                                      w, r->code, o);
    }
}

static void test_case(gconstpointer data)
{
    guint index = GPOINTER_TO_UINT(data);
    while (next_case <= index)
        replay_one(next_case++);
    Result *res = &results[index];
    if (!res->matched) {
        g_test_message("%s", res->report);
        g_test_fail();
    }
}

/* ---- side actions --------------------------------------------------------------------------- */

static void side_patch_minimal_label(void)
{
    static const char patch[] = "{\"metadata\":{\"labels\":{\"w\":\"1\"}}}";
    g_autoptr(Resp) r = http(KB_TEST_ADMIN, "PATCH", "/api/v1/namespaces/conformance/pods/minimal",
                             "application/merge-patch+json", patch, strlen(patch), 0);
    if (r->code != 200)
        g_test_message("side action: label patch answered %ld", r->code);
}

static void side_lease_first_candidate(void)
{
    const char *path = "/apis/coordination.k8s.io/v1/namespaces/conformance/leases/kube-batchd";
    g_autoptr(Resp) g = http(KB_TEST_ADMIN, "GET", path, NULL, NULL, 0, 0);
    json_object *lease = resp_json(g);
    if (lease == NULL)
        return;
    json_object *spec = kas_json_ensure_object(lease, "spec");
    kas_json_set_string(spec, "holderIdentity", "b");
    g_autofree char *body = kas_json_dump(lease);
    g_autoptr(Resp) r = http(KB_TEST_ADMIN, "PUT", path, NULL, body, strlen(body), 0);
    if (r->code != 200)
        g_test_message("side action: first candidate's update answered %ld", r->code);
    json_object_put(lease);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    /* Keep going after a failing case: the summary counts them all. */
    g_autofree char **args = g_new0(char *, argc + 2);
    for (int i = 0; i < argc; i++)
        args[i] = argv[i];
    args[argc++] = (char *)"--keep-going";
    argv = args;
    g_test_init(&argc, &argv, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const char *top = g_getenv("KB_SRCDIR");
    g_autofree char *file = g_build_filename(top != NULL ? top : ".",
                                             "tests/data/kube-apiserver-1.19/cases.json", NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) error = NULL;
    if (!g_file_get_contents(file, &text, &len, &error))
        g_error("%s", error->message);
    fixture = kas_json_parse(text, len, &error);
    g_assert_no_error(error);
    cases = kas_json_get(fixture, "cases");
    g_assert_nonnull(cases);
    size_t n = json_object_array_length(cases);
    results = g_new0(Result, n);
    subst = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

    /* the table names real cases, and every recorded user is one we know how to send as */
    for (guint i = 0; i < G_N_ELEMENTS(known_diffs); i++)
        g_assert_nonnull(case_named(known_diffs[i].name, NULL));
    for (size_t i = 0; i < n; i++) {
        const char *user = kas_json_get_string(json_object_array_get_idx(cases, i), "request.user");
        g_assert_true(g_strcmp0(user, "admin") == 0 || g_strcmp0(user, "kube-batchd") == 0 ||
                      g_strcmp0(user, "bad-token") == 0);
    }

    cluster = kb_test_cluster_start(KB_TEST_CLUSTER_KAS, NULL, &error);
    g_assert_no_error(error);
    for (size_t i = 0; i < n; i++) {
        g_autofree char *p =
                g_strdup_printf("/apiserver/replay/%s",
                                kas_json_get_string(json_object_array_get_idx(cases, i), "name"));
        g_test_add_data_func(p, GUINT_TO_POINTER(i), test_case);
    }
    int rc = g_test_run();
    g_print("# replay: %u of %u cases matched the recorded answers (%u of them as known "
            "differences, as listed), as their recorded users\n",
            n_matched + n_known, n_replayed, n_known);
    g_assert_cmpint(kb_test_cluster_stop(cluster), ==, 0);
    kb_test_cluster_free(cluster);
    for (size_t i = 0; i < n; i++)
        g_free(results[i].report);
    g_free(results);
    g_hash_table_unref(subst);
    json_object_put(fixture);
    curl_global_cleanup();
    return rc;
}
