/* The resource-claim controller (see kas-claims.h). */
#include "testbed/apiserver/kas-claims.h"

#include <string.h>

#include "kube/kb-json.h"
#include "testbed/apiserver/kas-dra.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"

#define GENERATE_NAME_MAX 57 /* leaves room for 5 random characters in 63 */

static gsize arr_len(json_object *a)
{
    return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

gboolean kas_claims_pod_has_claims(const KasObj *obj)
{
    return strstr(obj->json, "\"resourceClaims\":[{") != NULL;
}

/* isPodDone: finished, or deleted before it was ever bound. */
static gboolean pod_done(json_object *pod)
{
    const char *phase = kas_json_get_string(pod, "status.phase");
    const char *node = kas_json_get_string(pod, "spec.nodeName");
    return g_strcmp0(phase, "Succeeded") == 0 || g_strcmp0(phase, "Failed") == 0 ||
           (kas_json_get(pod, "metadata.deletionTimestamp") != NULL &&
            (node == NULL || node[0] == '\0'));
}

static KasRes *find(KasStore *store, const char *plural)
{
    kas_store_lock(store);
    KasRes *res = strcmp(plural, "pods") == 0
                          ? kas_store_find_locked(store, "", "v1", "pods")
                          : kas_store_find_locked(store, KAS_DRA_GROUP, KAS_DRA_VERSION, plural);
    kas_store_unlock(store);
    return res;
}

/* The parsed object @ns/@name of @res, or NULL. */
static json_object *get_json(KasStore *store, KasRes *res, const char *ns, const char *name)
{
    kas_store_lock(store);
    KasObj *o = kas_store_get_locked(store, res, ns, name);
    json_object *j = o != NULL ? kas_obj_parse(o) : NULL;
    kas_store_unlock(store);
    return j;
}

/* ---- releasing ------------------------------------------------------------------------------ */

/* isPodDone on the stored pod @o of @pods (store lock held): its indexed phase and node and
 * its deletion mark are all it needs, so no pod is parsed. */
static gboolean pod_obj_done(const KasRes *pods, const KasObj *o)
{
    const char *phase = kas_obj_field(pods, o, "status.phase");
    const char *node = kas_obj_field(pods, o, "spec.nodeName");
    return g_strcmp0(phase, "Succeeded") == 0 || g_strcmp0(phase, "Failed") == 0 ||
           (o->deleting && (node == NULL || node[0] == '\0'));
}

/* The length of the JSON value at @v (compact, as stored): up to the comma or bracket that ends
 * it, strings skipped whole. */
static gsize value_len(const char *v)
{
    int depth = 0;
    const char *p = v;
    for (; *p != '\0'; p++) {
        if (*p == '"') {
            for (p++; *p != '\0' && *p != '"'; p++)
                if (*p == '\\' && p[1] != '\0')
                    p++;
            if (*p == '\0')
                break;
        } else if (*p == '[' || *p == '{') {
            depth++;
        } else if (*p == ']' || *p == '}') {
            if (depth == 0)
                break;
            if (--depth == 0)
                return (gsize)(p + 1 - v);
        } else if (*p == ',' && depth == 0) {
            break;
        }
    }
    return (gsize)(p - v);
}

/* Do @a and @b (stored JSON) hold @key (a quoted key and its colon) equally often, with the same
 * values each time? */
static gboolean same_values(const char *a, const char *b, const char *key)
{
    gsize klen = strlen(key);
    for (;;) {
        const char *pa = strstr(a, key), *pb = strstr(b, key);
        if (pa == NULL || pb == NULL)
            return pa == pb;
        pa += klen;
        pb += klen;
        gsize la = value_len(pa), lb = value_len(pb);
        if (la != lb || memcmp(pa, pb, la) != 0)
            return FALSE;
        a = pa + la;
        b = pb + lb;
    }
}

gboolean kas_claims_pod_same(const KasRes *pods, const KasObj *obj, const KasObj *old)
{
    return old != NULL && !obj->deleting && !old->deleting && !pod_obj_done(pods, obj) &&
           !pod_obj_done(pods, old) && strcmp(obj->uid, old->uid) == 0 &&
           same_values(obj->json, old->json, "\"resourceClaims\":") &&
           same_values(obj->json, old->json, "\"resourceClaimStatuses\":");
}

/* Is pod @ns/@name there with @uid and not done? (store lock held) */
static gboolean pod_live_locked(KasStore *store, KasRes *pods, const char *ns, const char *name,
                                const char *uid)
{
    if (name == NULL)
        return FALSE;
    KasObj *o = kas_store_get_locked(store, pods, ns, name);
    return o != NULL && g_strcmp0(o->uid, uid) == 0 && !pod_obj_done(pods, o);
}

static gboolean pod_live(KasStore *store, KasRes *pods, const char *ns, const char *name,
                         const char *uid)
{
    kas_store_lock(store);
    gboolean live = pod_live_locked(store, pods, ns, name, uid);
    kas_store_unlock(store);
    return live;
}

/* Is the reservation @ref still held by a live pod? With @locked the store lock is held. */
static gboolean reservation_live(KasStore *store, KasRes *pods, const char *ns, json_object *ref,
                                 gboolean locked)
{
    const char *group = kas_json_get_string(ref, "apiGroup");
    if (g_strcmp0(kas_json_get_string(ref, "resource"), "pods") != 0 ||
        (group != NULL && group[0] != '\0'))
        return TRUE; /* not ours to judge */
    const char *name = kas_json_get_string(ref, "name"), *uid = kas_json_get_string(ref, "uid");
    return locked ? pod_live_locked(store, pods, ns, name, uid)
                  : pod_live(store, pods, ns, name, uid);
}

typedef struct {
    json_object *valid; /* borrowed */
    guint64 n_before;
} Release;

/* Keep only the live reservations; the last one gone deallocates the claim. */
static gboolean release_cb(json_object *claim, gpointer data)
{
    Release *r = data;
    json_object *st = kas_json_get(claim, "status");
    if (arr_len(kas_json_get(st, "reservedFor")) != r->n_before)
        return FALSE; /* changed meanwhile: the next event syncs again */
    if (json_object_array_length(r->valid) > 0) {
        json_object_object_add(st, "reservedFor", json_object_get(r->valid));
        return TRUE;
    }
    json_object_object_del(st, "reservedFor");
    json_object_object_del(st, "allocation");
    json_object_object_del(st, "devices");
    return TRUE;
}

/* The pod a claim was generated for: its controlling owner, when the annotation says so. */
static gboolean generated_for(json_object *claim, const char **name, const char **uid)
{
    json_object *ann = kas_json_get(claim, "metadata.annotations");
    if (!json_object_is_type(ann, json_type_object) ||
        !json_object_object_get_ex(ann, KAS_DRA_POD_CLAIM_ANNOTATION, NULL))
        return FALSE;
    json_object *owners = kas_json_get(claim, "metadata.ownerReferences");
    for (gsize i = 0; i < arr_len(owners); i++) {
        json_object *o = json_object_array_get_idx(owners, i);
        if (g_strcmp0(kas_json_get_string(o, "kind"), "Pod") == 0 &&
            json_object_get_boolean(kas_json_get(o, "controller"))) {
            *name = kas_json_get_string(o, "name");
            *uid = kas_json_get_string(o, "uid");
            return *name != NULL && *uid != NULL;
        }
    }
    return FALSE;
}

/* Stored claim @o's status.reservedFor (new reference; NULL when it has none), read from its
 * text without building the rest of the claim. */
static json_object *reserved_for_of(const KasObj *o)
{
    g_autofree char *span = NULL;
    KbJsonReader r;
    kb_json_reader_init(&r, o->json, o->len);
    KbJsonStr key, value;
    gboolean ok = kb_json_object_begin(&r, NULL);
    while (ok && span == NULL && kb_json_object_next(&r, &key, NULL) == 1) {
        if (!KB_JSON_STR_IS(key, "status") || kb_json_peek(&r) != KB_JSON_OBJECT) {
            ok = kb_json_skip(&r, NULL);
            continue;
        }
        ok = kb_json_object_begin(&r, NULL);
        while (ok && span == NULL && kb_json_object_next(&r, &key, NULL) == 1) {
            ok = kb_json_skip_span(&r, &value, NULL);
            if (ok && KB_JSON_STR_IS(key, "reservedFor"))
                span = g_strndup(value.p, value.len);
        }
        break;
    }
    kb_json_reader_clear(&r);
    return span != NULL ? kas_json_parse_stored(span) : NULL;
}

/* The next value of @r into *@out as a string (a copy; NULL when it is none), or skipped when
 * @out is NULL; FALSE on bad JSON. */
static gboolean read_opt_string(KbJsonReader *r, char **out)
{
    if (out == NULL)
        return kb_json_skip(r, NULL);
    g_clear_pointer(out, g_free);
    if (kb_json_peek(r) != KB_JSON_STRING)
        return kb_json_skip(r, NULL);
    KbJsonStr s;
    if (!kb_json_read_string(r, &s, NULL))
        return FALSE;
    *out = kb_json_str_dup(&s);
    return TRUE;
}

/* One entry of reservedFor read from the text (the reader at it) and judged as
 * reservation_live() judges it parsed: 1 live, 0 not, -1 bad JSON. */
static int reservation_read(KbJsonReader *r, KasStore *store, KasRes *pods, const char *ns)
{
    if (kb_json_peek(r) != KB_JSON_OBJECT)
        return kb_json_skip(r, NULL) ? 1 : -1; /* no resource: not ours to judge */
    g_autofree char *resource = NULL, *group = NULL, *name = NULL, *uid = NULL;
    KbJsonStr key;
    int rc = 0;
    gboolean ok = kb_json_object_begin(r, NULL);
    while (ok && (rc = kb_json_object_next(r, &key, NULL)) == 1)
        ok = read_opt_string(r, KB_JSON_STR_IS(key, "resource")   ? &resource
                                : KB_JSON_STR_IS(key, "apiGroup") ? &group
                                : KB_JSON_STR_IS(key, "name")     ? &name
                                : KB_JSON_STR_IS(key, "uid")      ? &uid
                                                                  : NULL);
    if (!ok || rc != 0)
        return -1;
    if (g_strcmp0(resource, "pods") != 0 || (group != NULL && group[0] != '\0'))
        return 1;
    return pod_live_locked(store, pods, ns, name, uid) ? 1 : 0;
}

/* kas_claims_reservations_live_locked() read from the claim's text, without building its
 * reservedFor (a claim status write's hook asks it under the store's lock): 1, 0, or -1 when
 * the text is not what a stored claim looks like. */
static int reservations_read(const KasObj *claim, KasStore *store, KasRes *pods)
{
    KbJsonReader r;
    kb_json_reader_init(&r, claim->json, claim->len);
    KbJsonStr key;
    int out = -1;
    gboolean ok = kb_json_object_begin(&r, NULL);
    while (ok && out < 0 && kb_json_object_next(&r, &key, NULL) == 1) {
        if (!KB_JSON_STR_IS(key, "status") || kb_json_peek(&r) != KB_JSON_OBJECT) {
            ok = kb_json_skip(&r, NULL);
            continue;
        }
        ok = kb_json_object_begin(&r, NULL);
        while (ok && out < 0 && kb_json_object_next(&r, &key, NULL) == 1) {
            if (!KB_JSON_STR_IS(key, "reservedFor")) {
                ok = kb_json_skip(&r, NULL);
                continue;
            }
            if (kb_json_peek(&r) != KB_JSON_ARRAY) {
                out = 0; /* none */
                break;
            }
            ok = kb_json_array_begin(&r, NULL);
            int live = 1, n = 0, arc = 0;
            while (ok && live == 1 && (arc = kb_json_array_next(&r, NULL)) == 1) {
                live = reservation_read(&r, store, pods, claim->ns);
                n++;
            }
            out = live < 0 || !ok || arc < 0 ? -1 : live == 1 && n > 0 ? 1 : 0;
            ok = FALSE; /* judged (or bad): stop reading */
        }
        break;
    }
    kb_json_reader_clear(&r);
    return out;
}

gboolean kas_claims_reservations_live_locked(KasStore *store, const KasObj *claim)
{
    KasRes *pods = kas_store_find_locked(store, "", "v1", "pods");
    int read = reservations_read(claim, store, pods);
    if (read >= 0)
        return read == 1;
    json_object *rf = reserved_for_of(claim);
    gboolean live = arr_len(rf) > 0;
    for (gsize i = 0; live && i < arr_len(rf); i++)
        live = reservation_live(store, pods, claim->ns, json_object_array_get_idx(rf, i), TRUE);
    json_object_put(rf);
    return live;
}

/* Is every reservation of claim @ns/@name held by a live pod (and there is one at least)? */
static gboolean all_reservations_live(KasStore *store, KasRes *claims, const char *ns,
                                      const char *name)
{
    kas_store_lock(store);
    KasObj *o = kas_store_get_locked(store, claims, ns, name);
    gboolean live = o != NULL && kas_claims_reservations_live_locked(store, o);
    kas_store_unlock(store);
    return live;
}

void kas_claims_sync_claim(KasStore *store, const char *ns, const char *name)
{
    KasRes *claims = find(store, "resourceclaims"), *pods = find(store, "pods");
    if (all_reservations_live(store, claims, ns, name))
        return;
    json_object *claim = get_json(store, claims, ns, name);
    if (claim == NULL)
        return;
    json_object *rf = kas_json_get(claim, "status.reservedFor");
    json_object *valid = json_object_new_array();
    for (gsize i = 0; i < arr_len(rf); i++) {
        json_object *ref = json_object_array_get_idx(rf, i);
        if (reservation_live(store, pods, ns, ref, FALSE))
            json_object_array_add(valid, json_object_get(ref));
    }
    const char *uid = kas_json_get_string(claim, "metadata.uid");
    if (json_object_array_length(valid) < arr_len(rf)) {
        Release r = {valid, arr_len(rf)};
        kas_ops_mutate(store, claims, ns, name, uid, release_cb, &r);
    }
    const char *pod_name = NULL, *pod_uid = NULL;
    if (json_object_array_length(valid) == 0 && generated_for(claim, &pod_name, &pod_uid)) {
        gboolean unused = !pod_live(store, pods, ns, pod_name, pod_uid);
        KasDeleteOptions del = {.grace_seconds = -1, .precondition_uid = uid};
        if (unused)
            kas_obj_unref(kas_ops_delete(store, claims, ns, name, &del, NULL, NULL));
    }
    json_object_put(valid);
    json_object_put(claim);
}

GPtrArray *kas_claims_pod_claim_names(json_object *pod)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    json_object *spec = kas_json_get(pod, "spec.resourceClaims");
    for (gsize i = 0; i < arr_len(spec); i++) {
        const char *n =
                kas_json_get_string(json_object_array_get_idx(spec, i), "resourceClaimName");
        if (n != NULL)
            g_ptr_array_add(names, g_strdup(n));
    }
    json_object *st = kas_json_get(pod, "status.resourceClaimStatuses");
    for (gsize i = 0; i < arr_len(st); i++) {
        const char *n = kas_json_get_string(json_object_array_get_idx(st, i), "resourceClaimName");
        if (n != NULL)
            g_ptr_array_add(names, g_strdup(n));
    }
    return names;
}

/* ---- generating ----------------------------------------------------------------------------- */

/* "<pod>-<claim>-", both shortened in proportion when longer than 57 bytes. */
static char *generate_name(const char *pod, const char *claim)
{
    gsize lp = strlen(pod), lc = strlen(claim), total = lp + lc + 2;
    if (total <= GENERATE_NAME_MAX)
        return g_strdup_printf("%s-%s-", pod, claim);
    return g_strdup_printf("%.*s-%.*s", (int)(lp * GENERATE_NAME_MAX / total), pod,
                           (int)(lc * GENERATE_NAME_MAX / total), claim);
}

static json_object *string_map_copy(json_object *m)
{
    json_object *out = NULL;
    if (json_object_is_type(m, json_type_object))
        json_object_deep_copy(m, &out, NULL);
    return out != NULL ? out : json_object_new_object();
}

/* The claim kube-controller-manager makes for @entry of @pod from @tmpl. New reference. */
static json_object *claim_from_template(json_object *pod, json_object *entry, json_object *tmpl)
{
    const char *pod_name = kas_json_get_string(pod, "metadata.name");
    const char *claim_name = kas_json_get_string(entry, "name");
    json_object *c = json_object_new_object();
    kas_json_set_string(c, "apiVersion", KAS_DRA_GROUP "/" KAS_DRA_VERSION);
    kas_json_set_string(c, "kind", "ResourceClaim");
    json_object *meta = kas_json_ensure_object(c, "metadata");
    g_autofree char *gen = generate_name(pod_name, claim_name);
    kas_json_set_string(meta, "generateName", gen);
    json_object *ann = string_map_copy(kas_json_get(tmpl, "spec.metadata.annotations"));
    kas_json_set_string(ann, KAS_DRA_POD_CLAIM_ANNOTATION, claim_name);
    json_object_object_add(meta, "annotations", ann);
    json_object *labels = kas_json_get(tmpl, "spec.metadata.labels");
    if (json_object_is_type(labels, json_type_object))
        json_object_object_add(meta, "labels", string_map_copy(labels));
    json_object *owner = json_object_new_object();
    kas_json_set_string(owner, "apiVersion", "v1");
    kas_json_set_string(owner, "kind", "Pod");
    kas_json_set_string(owner, "name", pod_name);
    kas_json_set_string(owner, "uid", kas_json_get_string(pod, "metadata.uid"));
    json_object_object_add(owner, "controller", json_object_new_boolean(TRUE));
    json_object_object_add(owner, "blockOwnerDeletion", json_object_new_boolean(TRUE));
    json_object *owners = json_object_new_array();
    json_object_array_add(owners, owner);
    json_object_object_add(meta, "ownerReferences", owners);
    json_object *spec = NULL;
    json_object_deep_copy(kas_json_get(tmpl, "spec.spec"), &spec, NULL);
    json_object_object_add(c, "spec", spec != NULL ? spec : json_object_new_object());
    return c;
}

/* A claim @pod_uid already owns for entry @entry_name (a status write failed after the create),
 * or NULL. Newly allocated. */
static char *owned_claim(KasStore *store, KasRes *claims, const char *ns, const char *pod_uid,
                         const char *entry_name)
{
    char *found = NULL;
    kas_store_lock(store);
    if (kas_store_is_owner_locked(store, pod_uid)) {
        KasListOptions lo = {.ns = ns};
        gboolean more;
        guint64 rem;
        g_autoptr(GPtrArray) all = kas_store_list_locked(store, claims, &lo, &more, &rem);
        for (guint i = 0; i < all->len && found == NULL; i++) {
            KasObj *o = g_ptr_array_index(all, i);
            gboolean mine = FALSE;
            for (char **u = o->owners; u != NULL && *u != NULL && !mine; u++)
                mine = strcmp(*u, pod_uid) == 0;
            if (!mine)
                continue;
            json_object *j = kas_obj_parse(o);
            json_object *ann = kas_json_get(j, "metadata.annotations"), *v = NULL;
            if (json_object_is_type(ann, json_type_object) &&
                json_object_object_get_ex(ann, KAS_DRA_POD_CLAIM_ANNOTATION, &v) &&
                g_strcmp0(json_object_get_string(v), entry_name) == 0)
                found = g_strdup(o->name);
            json_object_put(j);
        }
    }
    kas_store_unlock(store);
    return found;
}

static gboolean has_status(json_object *statuses, const char *name)
{
    for (gsize i = 0; i < arr_len(statuses); i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(statuses, i), "name"), name) ==
            0)
            return TRUE;
    return FALSE;
}

/* Append the new statuses (@data, an array) the pod does not have yet; TRUE when it appended
 * one (kas_ops_mutate_parsed). */
static gboolean add_statuses_cb(json_object *pod, gpointer data)
{
    json_object *add = data;
    json_object *st = kas_json_ensure_object(pod, "status");
    json_object *list = kas_json_get(st, "resourceClaimStatuses");
    if (!json_object_is_type(list, json_type_array)) {
        list = json_object_new_array();
        json_object_object_add(st, "resourceClaimStatuses", list);
    }
    gboolean appended = FALSE;
    for (gsize i = 0; i < arr_len(add); i++) {
        json_object *s = json_object_array_get_idx(add, i);
        if (!has_status(list, kas_json_get_string(s, "name"))) {
            json_object_array_add(list, json_object_get(s));
            appended = TRUE;
        }
    }
    return appended;
}

/* The claim name for template entry @entry of @pod: an owned one, or a new one. NULL when the
 * template does not exist (yet) or the create failed (logged). */
static char *make_claim(KasStore *store, json_object *pod, json_object *entry)
{
    KasRes *claims = find(store, "resourceclaims"), *tmpls = find(store, "resourceclaimtemplates");
    const char *ns = kas_json_get_string(pod, "metadata.namespace");
    const char *entry_name = kas_json_get_string(entry, "name");
    char *name =
            owned_claim(store, claims, ns, kas_json_get_string(pod, "metadata.uid"), entry_name);
    if (name != NULL)
        return name;
    const char *tname = kas_json_get_string(entry, "resourceClaimTemplateName");
    json_object *tmpl = get_json(store, tmpls, ns, tname);
    if (tmpl == NULL)
        return NULL; /* the template's creation resyncs the namespace */
    json_object *claim = claim_from_template(pod, entry, tmpl);
    g_autoptr(GError) error = NULL;
    KasObj *o = kas_ops_create(store, claims, KAS_DRA_VERSION, ns, claim, &error);
    if (o == NULL)
        g_warning("resource-claim controller: pod %s/%s: claim %s from template %s: %s", ns,
                  kas_json_get_string(pod, "metadata.name"), entry_name, tname, error->message);
    else
        name = g_strdup(o->name);
    kas_obj_unref(o);
    json_object_put(claim);
    json_object_put(tmpl);
    return name;
}

static void ensure_claims(KasStore *store, KasRes *pods, json_object *pod)
{
    json_object *entries = kas_json_get(pod, "spec.resourceClaims");
    json_object *statuses = kas_json_get(pod, "status.resourceClaimStatuses");
    json_object *add = json_object_new_array();
    for (gsize i = 0; i < arr_len(entries); i++) {
        json_object *e = json_object_array_get_idx(entries, i);
        const char *ename = kas_json_get_string(e, "name");
        if (kas_json_get_string(e, "resourceClaimTemplateName") == NULL ||
            has_status(statuses, ename))
            continue;
        g_autofree char *claim = make_claim(store, pod, e);
        if (claim == NULL)
            continue;
        json_object *s = json_object_new_object();
        kas_json_set_string(s, "name", ename);
        kas_json_set_string(s, "resourceClaimName", claim);
        json_object_array_add(add, s);
    }
    /* The pod was parsed for this sync: written from that tree unless it changed meanwhile. */
    if (json_object_array_length(add) > 0)
        kas_ops_mutate_parsed(store, pods, kas_json_get_string(pod, "metadata.namespace"),
                              kas_json_get_string(pod, "metadata.name"),
                              kas_json_get_string(pod, "metadata.uid"), pod, add_statuses_cb, add);
    json_object_put(add);
}

void kas_claims_sync_pod(KasStore *store, const char *ns, const char *name, const char *uid)
{
    KasRes *pods = find(store, "pods");
    json_object *pod = get_json(store, pods, ns, name);
    if (pod != NULL && uid != NULL && g_strcmp0(kas_json_get_string(pod, "metadata.uid"), uid) != 0)
        g_clear_pointer(&pod, json_object_put); /* another pod of the name */
    if (pod != NULL && !pod_done(pod) && kas_json_get(pod, "metadata.deletionTimestamp") == NULL) {
        ensure_claims(store, pods, pod);
    } else if (pod != NULL) {
        g_autoptr(GPtrArray) names = kas_claims_pod_claim_names(pod);
        for (guint i = 0; i < names->len; i++)
            kas_claims_sync_claim(store, ns, g_ptr_array_index(names, i));
    }
    json_object_put(pod);
}

void kas_claims_sync_namespace(KasStore *store, const char *ns)
{
    KasRes *pods = find(store, "pods");
    g_autoptr(GPtrArray) todo = g_ptr_array_new_with_free_func(g_free);
    kas_store_lock(store);
    KasListOptions lo = {.ns = ns};
    gboolean more;
    guint64 rem;
    g_autoptr(GPtrArray) all = kas_store_list_locked(store, pods, &lo, &more, &rem);
    g_ptr_array_set_free_func(all, (GDestroyNotify)kas_obj_unref);
    for (guint i = 0; i < all->len; i++) {
        KasObj *o = g_ptr_array_index(all, i);
        if (strstr(o->json, "\"resourceClaimTemplateName\"") != NULL)
            g_ptr_array_add(todo, g_strdup(o->name));
    }
    kas_store_unlock(store);
    for (guint i = 0; i < todo->len; i++)
        kas_claims_sync_pod(store, ns, g_ptr_array_index(todo, i), NULL);
}
