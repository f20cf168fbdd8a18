/*
 * Pod decoding straight from JSON text (kb_pod_decode_bytes, kb_pod_list_decode_bytes); see
 * kb-objects.h. The walk is kb-json's pull reader: members are read in document order and
 * everything the scheduler does not use is skipped (validated, never copied). What a field means
 * (request defaulting, init container peaks, sidecars, overhead, toleration and selector
 * operators, phases, the group) comes from the helpers kb-pod.c uses too (kb-decode.h), so both
 * paths produce the same record; messages are built with the same helpers and paths.
 *
 * Where json-c's decoder reads members in a fixed order that matters (a requirement's key before
 * its values, a container state's terminated before waiting), the member's text is kept as a
 * span and read again once the object has been seen whole.
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-json.h"
#include "kube/kb-objects.h"

/* Continue tokens and resourceVersions of a list. */
#define LIST_TOKEN_MAX 65536

/* ---- typed members -------------------------------------------------------------------------- */

/* "@key: expected @what, got <value>" for the value at the reader (which is skipped). */
static gboolean type_error(KbJsonReader *r, const char *key, const char *what, GError **error)
{
    KbJsonStr span;
    if (!kb_json_skip_span(r, &span, error))
        return FALSE;
    g_autofree char *got = kb_decode_describe_text(span.p, span.len);
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected %s, got %s", key, what, got);
    return FALSE;
}

/* 1 when the next value is of @type, 0 when it is null (consumed: absent), -1 on a type error. */
static int member_of(KbJsonReader *r, KbJsonType type, const char *key, const char *what,
                     GError **error)
{
    KbJsonType t = kb_json_peek(r);
    if (t == type)
        return 1;
    if (t == KB_JSON_NULL)
        return kb_json_read_null(r, error) ? 0 : -1;
    type_error(r, key, what, error);
    return -1;
}

/* A member read twice would count twice here, where json-c keeps the last one: refused. */
static gboolean once(guint32 *seen, guint32 bit, const KbJsonStr *key, GError **error)
{
    if ((*seen & bit) == 0) {
        *seen |= bit;
        return TRUE;
    }
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%.*s: duplicate member", (int)MIN(key->len, 64),
                key->p);
    return FALSE;
}

/* A string member of at most @max bytes: 1 with *out set, 0 when null, -1 on error. */
static int read_str(KbJsonReader *r, const char *key, gsize max, KbJsonStr *out, GError **error)
{
    int rc = member_of(r, KB_JSON_STRING, key, "a string", error);
    if (rc != 1)
        return rc;
    if (!kb_json_read_string(r, out, error) || !kb_decode_check_length(key, out->len, max, error))
        return -1;
    return 1;
}

/* @s NUL-terminated: in @buf when it fits (@size bytes), else in *@heap. */
static const char *cstr(const KbJsonStr *s, char *buf, gsize size, char **heap)
{
    if (s->len < size) {
        memcpy(buf, s->p, s->len);
        buf[s->len] = '\0';
        return buf;
    }
    *heap = g_strndup(s->p, s->len);
    return *heap;
}

/*
 * g_intern_string() takes a global lock and copies; a pod has a dozen interned strings, most of
 * them seen before. A small per-thread cache of the strings interned last answers those without
 * either (interned strings live forever, so cached pointers never dangle).
 */
#define INTERN_CACHE_SIZE 1024

typedef struct {
    const char *s;
    gsize len;
} InternSlot;

static _Thread_local InternSlot intern_cache[INTERN_CACHE_SIZE];

static const char *intern(const KbJsonStr *s)
{
    /* A cheap hash of the length and the first and last 8 bytes: names differ at their ends
     * ("job-12-worker-3", "gpu-node-17"); a collision only costs a miss. */
    guint64 a = 0, b = 0;
    memcpy(&a, s->p, MIN(s->len, 8));
    if (s->len > 8)
        memcpy(&b, s->p + s->len - MIN(s->len - 8, 8), MIN(s->len - 8, 8));
    guint64 h = (a * 0x9E3779B97F4A7C15u) ^ (b * 0xC2B2AE3D27D4EB4Fu) ^ s->len;
    h ^= h >> 29;
    InternSlot *slot = &intern_cache[h % INTERN_CACHE_SIZE];
    if (slot->s != NULL && slot->len == s->len && memcmp(slot->s, s->p, s->len) == 0)
        return slot->s;
    char buf[KB_MAX_LABEL_KEY_LEN + 1];
    g_autofree char *heap = NULL;
    slot->s = g_intern_string(cstr(s, buf, sizeof(buf), &heap));
    slot->len = s->len;
    return slot->s;
}

const char *kb_fast_intern(const KbJsonStr *s)
{
    return intern(s);
}

/* An owned string member (as kb_decode_string + g_strdup); *out stays NULL when null. */
static gboolean read_owned(KbJsonReader *r, const char *key, gsize max, char **out, GError **error)
{
    KbJsonStr s;
    int rc = read_str(r, key, max, &s, error);
    if (rc == 1) {
        g_free(*out);
        *out = g_strndup(s.p, s.len);
    }
    return rc >= 0;
}

/* An interned string member (as kb_decode_interned). */
static gboolean read_interned(KbJsonReader *r, const char *key, gsize max, gboolean empty_is_null,
                              const char **out, GError **error)
{
    KbJsonStr s;
    int rc = read_str(r, key, max, &s, error);
    if (rc == 1)
        *out = empty_is_null && s.len == 0 ? NULL : intern(&s);
    return rc >= 0;
}

/* A string member copied into @buf (NUL-terminated; @max < @size); *present says if it was. */
static gboolean read_small(KbJsonReader *r, const char *key, gsize max, char *buf, gsize size,
                           gboolean *present, GError **error)
{
    KbJsonStr s;
    g_assert(max < size);
    int rc = read_str(r, key, max, &s, error);
    if (rc == 1) {
        memcpy(buf, s.p, s.len);
        buf[s.len] = '\0';
    }
    *present = rc == 1;
    return rc >= 0;
}

static gboolean read_int(KbJsonReader *r, const char *key, gint64 min, gint64 max, gint64 *out,
                         gboolean *present, GError **error)
{
    KbJsonStr text;
    gboolean integer;
    int rc = member_of(r, KB_JSON_NUMBER, key, "an integer", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_read_number(r, &text, &integer, error))
        return FALSE;
    gint64 v = kb_json_integer_value(&text);
    if (!integer || v < min || v > max) {
        g_autofree char *got = kb_decode_describe_text(text.p, text.len);
        if (!integer) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected an integer, got %s", key,
                        got);
            return FALSE;
        }
        return kb_decode_check_range(key, v, got, min, max, error);
    }
    *out = v;
    if (present != NULL)
        *present = TRUE;
    return TRUE;
}

static gboolean read_bool(KbJsonReader *r, const char *key, gboolean *out, GError **error)
{
    KbJsonType t = kb_json_peek(r);
    if (t == KB_JSON_NULL)
        return kb_json_read_null(r, error);
    if (t != KB_JSON_TRUE && t != KB_JSON_FALSE)
        return type_error(r, key, "a boolean", error);
    return kb_json_read_bool(r, out, error);
}

/* "@key: N items, more than @max", N counted by skipping the rest of the array. */
static gboolean too_many(KbJsonReader *r, const char *key, gsize max, GError **error)
{
    gsize n = max;
    int rc;
    do {
        if (!kb_json_skip(r, error))
            return FALSE;
        n++;
    } while ((rc = kb_json_array_next(r, error)) == 1);
    if (rc < 0)
        return FALSE;
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                "%s: %" G_GSIZE_FORMAT " items, more than %" G_GSIZE_FORMAT, key, n, max);
    return FALSE;
}

/*
 * The array member @key: 1 with the reader inside it, 0 when null, -1 on error. Then
 * next_element() gives each element that must be an object, within @max.
 */
static int array_member(KbJsonReader *r, const char *key, GError **error)
{
    int rc = member_of(r, KB_JSON_ARRAY, key, "an array", error);
    if (rc == 1 && !kb_json_array_begin(r, error))
        return -1;
    return rc;
}

/* 1 at the next object element (i counts them), 0 after the array, -1 on error. */
static int next_object(KbJsonReader *r, const char *key, gsize i, gsize max, GError **error)
{
    int rc = kb_json_array_next(r, error);
    if (rc != 1)
        return rc;
    if (i == max) {
        too_many(r, key, max, error);
        return -1;
    }
    if (kb_json_peek(r) != KB_JSON_OBJECT) {
        g_autofree char *idx = g_strdup_printf("[%" G_GSIZE_FORMAT "]", i);
        type_error(r, idx, "an object", error);
        g_prefix_error(error, "%s", key);
        return -1;
    }
    return 1;
}

/* Room for element @n of a growing array of @size-byte elements (zeroed when new). */
static gpointer grow(gpointer array, gsize n, gsize size)
{
    /* Capacities 4, 8, 16, ...: pods have a few tolerations, owners and containers. */
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        gsize cap = MAX(n * 2, 4);
        array = g_realloc_n(array, cap, size);
        memset((char *)array + n * size, 0, (cap - n) * size);
    }
    return array;
}

/* An element decoder for decode_array(): fills the zeroed element @elem (of its own type). */
typedef gboolean (*ElementDecoder)(KbJsonReader *r, gpointer elem, GError **error);

/*
 * Array member @key of objects (at most @max), each decoded by @decode into element i of the
 * growing array *@items of @size-byte elements, *@n counting them. With @count_first an element
 * is counted before it is decoded (the owner's clear function then frees a partial one),
 * otherwise once it decoded. Absent or null: TRUE, nothing added. Errors are prefixed "@key[i].".
 * *@items is updated even on failure (it owns what was decoded).
 */
static gboolean decode_array(KbJsonReader *r, const char *key, gsize max, gsize size,
                             gboolean count_first, ElementDecoder decode, gpointer *items, guint *n,
                             GError **error)
{
    int rc = array_member(r, key, error);
    if (rc != 1)
        return rc == 0;
    for (gsize i = 0; (rc = next_object(r, key, i, max, error)) == 1; i++) {
        *items = grow(*items, *n, size);
        if (count_first)
            (*n)++;
        if (!decode(r, (char *)*items + i * size, error)) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            return FALSE;
        }
        if (!count_first)
            (*n)++;
    }
    /* grow() left room to spare: records are kept for the pod's life (150,000 pods' one
     * container status each at a capacity of 4 held 57 MiB more than needed) */
    if (rc == 0 && *n > 0)
        *items = g_realloc_n(*items, *n, size);
    return rc == 0;
}

/* ---- string maps ---------------------------------------------------------------------------- */

static gboolean read_map(KbJsonReader *r, const char *key, gsize max_value, KbStringMapMode mode,
                         GHashTable *table, GError **error)
{
    KbJsonStr k, v;
    gsize n = 0;
    int rc = member_of(r, KB_JSON_OBJECT, key, "an object", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        char kbuf[KB_MAX_LABEL_KEY_LEN + 1];
        g_autofree char *kheap = NULL;
        const char *kc = cstr(&k, kbuf, sizeof(kbuf), &kheap);
        if (++n > KB_MAX_LABELS) {
            while (kb_json_skip(r, error) && (rc = kb_json_object_next(r, &k, error)) == 1)
                n++;
            return rc == 0 && kb_decode_check_map_size(key, n, error);
        }
        if (!kb_decode_check_map_key(key, kc, k.len, error))
            return FALSE;
        if (kb_json_peek(r) != KB_JSON_STRING) {
            g_autofree char *field = g_strdup_printf("%s[\"%s\"]", key, kc);
            return type_error(r, field, "a string", error);
        }
        if (!kb_json_read_string(r, &v, error))
            return FALSE;
        if (v.len > max_value) {
            g_autofree char *field = g_strdup_printf("%s[\"%s\"]", key, kc);
            return kb_decode_check_length(field, v.len, max_value, error);
        }
        char vbuf[256];
        g_autofree char *vheap = NULL;
        guint before = g_hash_table_size(table);
        gboolean interned = mode != KB_STRING_MAP_OWNED && k.len <= KB_MAX_LABEL_KEY_LEN;
        kb_decode_string_map_insert(table, mode, interned ? intern(&k) : kc, interned,
                                    cstr(&v, vbuf, sizeof(vbuf), &vheap));
        if (g_hash_table_size(table) == before) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s[\"%s\"]: duplicate member", key, kc);
            return FALSE;
        }
    }
    return rc == 0;
}

/* ---- resources ------------------------------------------------------------------------------ */

/* Names of a resource map's entries, for duplicates and for kb_pod_default_requests(). */
typedef struct {
    guint n;
    GPtrArray *copies;              /* names that were not views of the input (escaped ones) */
    KbJsonStr names[KB_MAX_LABELS]; /* left uninitialized past n: 4 KB not to clear per map */
} NameSet;

static void name_set_init(NameSet *set)
{
    set->n = 0;
    set->copies = NULL;
}

static void name_set_clear(NameSet *set)
{
    g_clear_pointer(&set->copies, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(NameSet, name_set_clear)

static gboolean name_set_has(const NameSet *set, const char *name, gsize len)
{
    for (guint i = 0; i < set->n; i++) {
        if (set->names[i].len == len && memcmp(set->names[i].p, name, len) == 0)
            return TRUE;
    }
    return FALSE;
}

static void name_set_add(NameSet *set, const KbJsonReader *r, const KbJsonStr *name)
{
    KbJsonStr s = *name;
    if (s.p < r->buf || s.p >= r->buf + r->len) {
        if (set->copies == NULL)
            set->copies = g_ptr_array_new_with_free_func(g_free);
        s.p = g_strndup(name->p, name->len);
        g_ptr_array_add(set->copies, (gpointer)s.p);
    }
    set->names[set->n++] = s;
}

static gboolean requested_in(int slot, gpointer data)
{
    const char *name = kb_resource_name(slot);
    return name != NULL && name_set_has(data, name, strlen(name));
}

/* The text json-c prints for the number @text (integers normalized, doubles as written). */
static char *number_text(const KbJsonStr *text)
{
    g_autofree char *s = g_strndup(text->p, text->len);
    json_object *v = json_tokener_parse(s);
    char *out = g_strdup(v != NULL ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : s);
    json_object_put(v);
    return out;
}

/* One entry's value, at the reader, for resource @name of map @what. */
static gboolean resource_value(KbJsonReader *r, const char *what, const char *name, gsize name_len,
                               KbResources *out, GError **error)
{
    KbJsonStr v;
    gboolean integer;
    switch (kb_json_peek(r)) {
    case KB_JSON_STRING: {
        char buf[128];
        g_autofree char *heap = NULL;
        return kb_json_read_string(r, &v, error) &&
               kb_resources_decode_entry(what, name, name_len, cstr(&v, buf, sizeof(buf), &heap),
                                         TRUE, FALSE, out, error);
    }
    case KB_JSON_NUMBER: {
        if (!kb_json_read_number(r, &v, &integer, error))
            return FALSE;
        g_autofree char *text = number_text(&v);
        return kb_resources_decode_entry(what, name, name_len, text, FALSE, FALSE, out, error);
    }
    case KB_JSON_NULL:
        return kb_json_read_null(r, error) &&
               kb_resources_decode_entry(what, name, name_len, "0", FALSE, FALSE, out, error);
    default:
        /* The name is checked first, as kb_resources_decode() does. */
        if (!kb_resources_decode_entry(what, name, name_len, "0", FALSE, FALSE, out, error))
            return FALSE;
        g_autofree char *field = g_strdup_printf("%s[\"%s\"]", what, name);
        return type_error(r, field, "a quantity", error);
    }
}

/* A resource map member @what added to @out; entry names into @names. */
static gboolean read_resources(KbJsonReader *r, const char *what, KbResources *out, NameSet *names,
                               GError **error)
{
    KbJsonStr k;
    int rc = member_of(r, KB_JSON_OBJECT, what, "an object", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (names->n == KB_MAX_LABELS) {
            gsize n = names->n + 1;
            while (kb_json_skip(r, error) && (rc = kb_json_object_next(r, &k, error)) == 1)
                n++;
            return rc == 0 && kb_decode_check_map_size(what, n, error);
        }
        char buf[KB_MAX_LABEL_KEY_LEN + 1];
        g_autofree char *heap = NULL;
        const char *name = cstr(&k, buf, sizeof(buf), &heap);
        if (name_set_has(names, k.p, k.len)) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s[\"%.64s\"]: duplicate member", what,
                        name);
            return FALSE;
        }
        name_set_add(names, r, &k);
        if (!resource_value(r, what, name, k.len, out, error))
            return FALSE;
    }
    return rc == 0;
}

enum { RES_REQUESTS = 1, RES_LIMITS = 2 };

/* A container's "resources": requests, defaulted from limits. Errors relative to "resources.". */
static gboolean decode_resources(KbJsonReader *r, KbResources *out, GError **error)
{
    g_auto(NameSet) requested;
    g_auto(NameSet) limited;
    KbResources limits;

    name_set_init(&requested);
    name_set_init(&limited);
    KbJsonStr key;
    guint32 seen = 0;
    int rc;

    kb_resources_clear(&limits);
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(key, "requests"))
            ok = once(&seen, RES_REQUESTS, &key, error) &&
                 read_resources(r, "requests", out, &requested, error);
        else if (KB_JSON_STR_IS(key, "limits"))
            ok = once(&seen, RES_LIMITS, &key, error) &&
                 read_resources(r, "limits", &limits, &limited, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    if (rc < 0)
        return FALSE;
    kb_pod_default_requests(out, &limits, requested_in, &requested);
    return TRUE;
}

enum { C_RESOURCES = 1, C_RESTART_POLICY = 2, C_NAME = 4 };

/* One container object: its effective requests, (init containers) restartPolicy, (app
 * containers) name. */
static gboolean decode_container(KbJsonReader *r, gboolean init, KbResources *out, char *policy,
                                 gboolean *has_policy, const char **name, GError **error)
{
    KbJsonStr key;
    guint32 seen = 0;
    int rc;

    kb_resources_clear(out);
    *has_policy = FALSE;
    *name = NULL;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(key, "resources")) {
            ok = once(&seen, C_RESOURCES, &key, error);
            rc = ok ? member_of(r, KB_JSON_OBJECT, "resources", "an object", error) : -1;
            ok = rc == 0 || (rc == 1 && decode_resources(r, out, error));
            if (!ok && rc == 1)
                g_prefix_error(error, "resources.");
        } else if (!init && KB_JSON_STR_IS(key, "name")) {
            ok = once(&seen, C_NAME, &key, error) &&
                 read_interned(r, "name", KB_MAX_NAME_LEN, TRUE, name, error);
        } else if (init && KB_JSON_STR_IS(key, "restartPolicy")) {
            ok = once(&seen, C_RESTART_POLICY, &key, error) &&
                 read_small(r, "restartPolicy", KB_MAX_NAME_LEN, policy, KB_MAX_NAME_LEN + 1,
                            has_policy, error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

static gboolean decode_containers(KbJsonReader *r, const char *key, gboolean init,
                                  KbPodRequestsFold *fold, GError **error)
{
    int rc = array_member(r, key, error);
    if (rc != 1)
        return rc == 0;
    for (gsize i = 0; (rc = next_object(r, key, i, KB_MAX_CONTAINERS, error)) == 1; i++) {
        KbResources req;
        char policy[KB_MAX_NAME_LEN + 1];
        gboolean has_policy;
        const char *name;
        if (!decode_container(r, init, &req, policy, &has_policy, &name, error)) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            return FALSE;
        }
        if (init)
            kb_pod_requests_fold_init_container(fold, &req, has_policy ? policy : NULL);
        else
            kb_pod_requests_fold_container(fold, name, &req);
    }
    return rc == 0;
}

/* ---- node affinity -------------------------------------------------------------------------- */

/* A reader over @span (text already validated by the reader it came from). */
static void span_reader(KbJsonReader *sub, const KbJsonStr *span)
{
    kb_json_reader_init(sub, span->p, span->len);
}

enum { RQ_KEY = 1, RQ_OP = 2, RQ_VALUES = 4 };

static gboolean decode_values(const KbJsonStr *span, KbSelectorRequirement *req, GError **error)
{
    KbJsonReader sub;
    span_reader(&sub, span);
    int rc = array_member(&sub, "values", error);
    if (rc == 1) {
        gsize i = 0;
        while ((rc = kb_json_array_next(&sub, error)) == 1) {
            KbJsonStr v;
            char buf[KB_MAX_NAME_LEN + 1];
            g_autofree char *heap = NULL;
            if (i == KB_MAX_LIST_ITEMS) {
                too_many(&sub, "values", KB_MAX_LIST_ITEMS, error);
                rc = -1;
                break;
            }
            if (kb_json_peek(&sub) != KB_JSON_STRING) {
                g_autofree char *field = g_strdup_printf("values[%" G_GSIZE_FORMAT "]", i);
                type_error(&sub, field, "a string", error);
                rc = -1;
                break;
            }
            if (!kb_json_read_string(&sub, &v, error) ||
                !kb_decode_requirement_value(i, cstr(&v, buf, sizeof(buf), &heap), v.len, req,
                                             error)) {
                rc = -1;
                break;
            }
            i++;
        }
    }
    kb_json_reader_clear(&sub);
    return rc >= 0;
}

/* One requirement: key and operator first, then values (kept as a span meanwhile). */
static gboolean decode_requirement(KbJsonReader *r, KbSelectorRequirement *req, GError **error)
{
    char key[KB_MAX_LABEL_KEY_LEN + 1], op[KB_MAX_NAME_LEN + 1];
    gboolean has_key = FALSE, has_op = FALSE;
    KbJsonStr k, values = {"null", 4};
    guint32 seen = 0;
    int rc;

    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "key"))
            ok = once(&seen, RQ_KEY, &k, error) &&
                 read_small(r, "key", KB_MAX_LABEL_KEY_LEN, key, sizeof(key), &has_key, error);
        else if (KB_JSON_STR_IS(k, "operator"))
            ok = once(&seen, RQ_OP, &k, error) &&
                 read_small(r, "operator", KB_MAX_NAME_LEN, op, sizeof(op), &has_op, error);
        else if (KB_JSON_STR_IS(k, "values"))
            ok = once(&seen, RQ_VALUES, &k, error) && kb_json_skip_span(r, &values, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 &&
           kb_decode_requirement_head(has_key ? key : NULL, has_op ? op : NULL, req, error) &&
           decode_values(&values, req, error) && kb_decode_requirement_check(req, error);
}

/* The requirements in @span (matchExpressions or matchFields), appended to term->exprs. */
static gboolean decode_requirements(const KbJsonStr *span, const char *key, gboolean field,
                                    KbNodeSelectorTerm *term, GError **error)
{
    KbJsonReader sub;
    span_reader(&sub, span);
    int rc = array_member(&sub, key, error);
    for (gsize i = 0; rc == 1 && (rc = next_object(&sub, key, i, KB_MAX_LIST_ITEMS, error)) == 1;
         i++) {
        KbSelectorRequirement *req = &term->exprs[term->n_exprs++];
        req->match_field = field;
        if (!decode_requirement(&sub, req, error)) {
            g_prefix_error(error, "%s[%" G_GSIZE_FORMAT "].", key, i);
            rc = -1;
        }
    }
    kb_json_reader_clear(&sub);
    return rc >= 0;
}

/* Elements of the array in @span (0 when null or not an array: decoding it reports that). */
static gsize span_length(const KbJsonStr *span)
{
    KbJsonReader sub;
    gsize n = 0;
    span_reader(&sub, span);
    if (kb_json_peek(&sub) == KB_JSON_ARRAY && kb_json_array_begin(&sub, NULL)) {
        while (kb_json_array_next(&sub, NULL) == 1 && kb_json_skip(&sub, NULL))
            n++;
    }
    kb_json_reader_clear(&sub);
    return n;
}

enum { T_EXPRS = 1, T_FIELDS = 2 };

static gboolean decode_term(KbJsonReader *r, gpointer elem, GError **error)
{
    KbNodeSelectorTerm *term = elem;
    KbJsonStr k, exprs = {"null", 4}, fields = {"null", 4};
    guint32 seen = 0;
    int rc;

    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "matchExpressions"))
            ok = once(&seen, T_EXPRS, &k, error) && kb_json_skip_span(r, &exprs, error);
        else if (KB_JSON_STR_IS(k, "matchFields"))
            ok = once(&seen, T_FIELDS, &k, error) && kb_json_skip_span(r, &fields, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    if (rc < 0)
        return FALSE;
    /* Sized first (each list within its limit, or decoding it fails before writing past). */
    gsize n = MIN(span_length(&exprs), KB_MAX_LIST_ITEMS) +
              MIN(span_length(&fields), KB_MAX_LIST_ITEMS);
    if (n > 0)
        term->exprs = g_new0(KbSelectorRequirement, n);
    return decode_requirements(&exprs, "matchExpressions", FALSE, term, error) &&
           decode_requirements(&fields, "matchFields", TRUE, term, error);
}

static gboolean decode_terms(KbJsonReader *r, KbPod *pod, GError **error)
{
    gpointer items = pod->affinity_terms;
    gboolean ok =
            decode_array(r, "nodeSelectorTerms", KB_MAX_LIST_ITEMS, sizeof(KbNodeSelectorTerm),
                         TRUE, decode_term, &items, &pod->n_affinity_terms, error);
    pod->affinity_terms = items;
    return ok;
}

/* spec.affinity, then nodeAffinity, then the required terms: level @level of that path. */
static gboolean decode_affinity(KbJsonReader *r, guint level, KbPod *pod, GError **error)
{
    static const char *const path[] = {"affinity", "nodeAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution"};
    KbJsonStr k;
    guint32 seen = 0;
    int rc = member_of(r, KB_JSON_OBJECT, path[level], "an object", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    const char *next = level + 1 < G_N_ELEMENTS(path) ? path[level + 1] : "nodeSelectorTerms";
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (k.len == strlen(next) && memcmp(k.p, next, k.len) == 0) {
            ok = once(&seen, 1, &k, error) &&
                 (level + 1 < G_N_ELEMENTS(path) ? decode_affinity(r, level + 1, pod, error)
                                                 : decode_terms(r, pod, error));
            if (!ok)
                g_prefix_error(error, "%s.", path[level]);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

/* ---- tolerations ---------------------------------------------------------------------------- */

enum { TL_KEY = 1, TL_VALUE = 2, TL_OP = 4, TL_EFFECT = 8 };

static gboolean decode_toleration(KbJsonReader *r, gpointer elem, GError **error)
{
    KbToleration *t = elem;
    char op[KB_MAX_NAME_LEN + 1], effect[KB_MAX_NAME_LEN + 1];
    gboolean has_op = FALSE, has_effect = FALSE;
    KbJsonStr k;
    guint32 seen = 0;
    int rc;

    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "key"))
            ok = once(&seen, TL_KEY, &k, error) &&
                 read_interned(r, "key", KB_MAX_LABEL_KEY_LEN, TRUE, &t->key, error);
        else if (KB_JSON_STR_IS(k, "value"))
            ok = once(&seen, TL_VALUE, &k, error) &&
                 read_interned(r, "value", KB_MAX_NAME_LEN, TRUE, &t->value, error);
        else if (KB_JSON_STR_IS(k, "operator"))
            ok = once(&seen, TL_OP, &k, error) &&
                 read_small(r, "operator", KB_MAX_NAME_LEN, op, sizeof(op), &has_op, error);
        else if (KB_JSON_STR_IS(k, "effect"))
            ok = once(&seen, TL_EFFECT, &k, error) &&
                 read_small(r, "effect", KB_MAX_NAME_LEN, effect, sizeof(effect), &has_effect,
                            error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 &&
           kb_decode_toleration_tail(has_op ? op : NULL, has_effect ? effect : NULL, t, error);
}

static gboolean decode_tolerations(KbJsonReader *r, KbPod *pod, GError **error)
{
    /* Counted once decoded: a failed toleration holds nothing to free (its strings are interned).
     */
    gpointer items = pod->tolerations;
    gboolean ok = decode_array(r, "tolerations", KB_MAX_LIST_ITEMS, sizeof(KbToleration), FALSE,
                               decode_toleration, &items, &pod->n_tolerations, error);
    pod->tolerations = items;
    return ok;
}

/* ---- volumes and scheduling gates ----------------------------------------------------------- */

/*
 * Member @object, an object whose one string member @member the scheduler reads (others are
 * skipped): interned into *@interned (empty: NULL) or copied into *@owned, whichever is given.
 * Errors name "@object.@member", relative to the enclosing object.
 */
static gboolean decode_lone_string(KbJsonReader *r, const char *object, const char *member,
                                   const char **interned, char **owned, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc = member_of(r, KB_JSON_OBJECT, object, "an object", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok = TRUE;
        if (k.len != strlen(member) || memcmp(k.p, member, k.len) != 0)
            ok = kb_json_skip(r, error);
        else if (!once(&seen, 1, &k, error))
            ok = FALSE;
        else if (interned != NULL)
            ok = read_interned(r, member, KB_MAX_NAME_LEN, TRUE, interned, error);
        else
            ok = read_owned(r, member, KB_MAX_NAME_LEN, owned, error);
        if (!ok) {
            g_prefix_error(error, "%s.", object);
            return FALSE;
        }
    }
    return rc == 0;
}

enum { VO_NAME = 1, VO_PVC = 2, VO_EPHEMERAL = 4 };

/* One volume into a KbPodClaim; volume NULL and claim NULL (not kept) unless it uses a claim. */
static gboolean decode_volume(KbJsonReader *r, gpointer elem, GError **error)
{
    KbPodClaim *c = elem;
    KbJsonStr k;
    guint32 seen = 0;
    gboolean ephemeral = FALSE, has_name = FALSE;
    char name[KB_MAX_NAME_LEN + 1];
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "name")) {
            /* Interned only when the volume is a claim (see kb-pod.c). */
            ok = once(&seen, VO_NAME, &k, error) &&
                 read_small(r, "name", KB_MAX_NAME_LEN, name, sizeof(name), &has_name, error);
        } else if (KB_JSON_STR_IS(k, "persistentVolumeClaim")) {
            ok = once(&seen, VO_PVC, &k, error) &&
                 decode_lone_string(r, "persistentVolumeClaim", "claimName", &c->claim, NULL,
                                    error);
        } else if (KB_JSON_STR_IS(k, "ephemeral")) {
            ephemeral = kb_json_peek(r) == KB_JSON_OBJECT;
            ok = once(&seen, VO_EPHEMERAL, &k, error) && kb_json_skip(r, error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    /* Not a claim: volume and claim stay NULL, dropped by decode_volumes. */
    if ((c->claim != NULL || ephemeral) && has_name && name[0] != '\0')
        c->volume = g_intern_string(name);
    return rc == 0;
}

static gboolean decode_volumes(KbJsonReader *r, KbPod *pod, GError **error)
{
    gpointer items = NULL;
    guint n = 0;
    gboolean ok = decode_array(r, "volumes", KB_MAX_LIST_ITEMS, sizeof(KbPodClaim), FALSE,
                               decode_volume, &items, &n, error);
    /* Keep the claims only, in order (a claim volume always has its name or a claim). */
    KbPodClaim *all = items;
    for (guint i = 0; ok && i < n; i++) {
        if (all[i].volume == NULL && all[i].claim == NULL)
            continue;
        pod->claims = g_renew(KbPodClaim, pod->claims, pod->n_claims + 1);
        pod->claims[pod->n_claims++] = all[i];
    }
    g_free(items);
    return ok;
}

static gboolean decode_gate(KbJsonReader *r, gpointer elem, GError **error)
{
    const char **name = elem;
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok = KB_JSON_STR_IS(k, "name")
                              ? once(&seen, 1, &k, error) &&
                                        read_interned(r, "name", KB_MAX_NAME_LEN, TRUE, name, error)
                              : kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

static gboolean decode_gates(KbJsonReader *r, KbPod *pod, GError **error)
{
    gpointer items = NULL;
    guint n = 0;
    gboolean ok = decode_array(r, "schedulingGates", KB_MAX_LIST_ITEMS, sizeof(const char *), FALSE,
                               decode_gate, &items, &n, error);
    if (ok) {
        pod->n_scheduling_gates = n;
        pod->scheduling_gate = n > 0 ? ((const char **)items)[0] : NULL;
    }
    g_free(items);
    return ok;
}

enum { RC_NAME = 1, RC_CLAIM = 2, RC_TEMPLATE = 4 };

/* One spec.resourceClaims[] (@spec) or status.resourceClaimStatuses[] entry (kb-pod.c). */
static gboolean decode_resource_claim(KbJsonReader *r, KbPodResourceClaim *c, gboolean spec,
                                      GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "name"))
            ok = once(&seen, RC_NAME, &k, error) &&
                 read_interned(r, "name", KB_MAX_NAME_LEN, TRUE, &c->name, error);
        else if (KB_JSON_STR_IS(k, "resourceClaimName"))
            ok = once(&seen, RC_CLAIM, &k, error) &&
                 read_owned(r, "resourceClaimName", KB_MAX_NAME_LEN, &c->claim_name, error);
        else if (spec && KB_JSON_STR_IS(k, "resourceClaimTemplateName"))
            ok = once(&seen, RC_TEMPLATE, &k, error) &&
                 read_owned(r, "resourceClaimTemplateName", KB_MAX_NAME_LEN, &c->template_name,
                            error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    if (rc < 0)
        return FALSE;
    /* An empty name is no name, as kb-pod.c reads it. */
    if (c->claim_name != NULL && *c->claim_name == '\0')
        g_clear_pointer(&c->claim_name, g_free);
    if (c->template_name != NULL && *c->template_name == '\0')
        g_clear_pointer(&c->template_name, g_free);
    return kb_pod_resource_claim_check(c, spec, error);
}

static gboolean decode_spec_resource_claim(KbJsonReader *r, gpointer elem, GError **error)
{
    return decode_resource_claim(r, elem, TRUE, error);
}

static gboolean decode_status_resource_claim(KbJsonReader *r, gpointer elem, GError **error)
{
    return decode_resource_claim(r, elem, FALSE, error);
}

/* ---- spec ----------------------------------------------------------------------------------- */

enum {
    S_SCHEDULER = 1,
    S_NODE = 2,
    S_PC = 4,
    S_PRIORITY = 8,
    S_SELECTOR = 16,
    S_CONTAINERS = 32,
    S_INIT = 64,
    S_OVERHEAD = 128,
    S_AFFINITY = 256,
    S_TOLERATIONS = 512,
    S_VOLUMES = 1024,
    S_GATES = 2048,
    S_DEADLINE = 4096,
    S_RESOURCES = 8192,
    S_GROUP = 16384,
    S_RESOURCE_CLAIMS = 32768,
};

/* spec.resources (pod level): requests and limits into @fold. Errors relative to "spec.". */
static gboolean decode_pod_resources(KbJsonReader *r, KbPodRequestsFold *fold, GError **error)
{
    g_auto(NameSet) requested;
    g_auto(NameSet) limited;
    KbResources requests, limits;
    KbJsonStr key;
    guint32 seen = 0;
    /* before any return: the cleanup runs on every path */
    name_set_init(&requested);
    name_set_init(&limited);
    int rc = member_of(r, KB_JSON_OBJECT, "resources", "an object", error);
    if (rc != 1)
        return rc == 0;
    kb_resources_clear(&requests);
    kb_resources_clear(&limits);
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(key, "requests"))
            ok = once(&seen, RES_REQUESTS, &key, error) &&
                 read_resources(r, "requests", &requests, &requested, error);
        else if (KB_JSON_STR_IS(key, "limits"))
            ok = once(&seen, RES_LIMITS, &key, error) &&
                 read_resources(r, "limits", &limits, &limited, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok) {
            g_prefix_error(error, "resources.");
            return FALSE;
        }
    }
    if (rc < 0)
        return FALSE;
    kb_pod_requests_fold_pod_level(fold, &requests, requested_in, &requested, &limits, requested_in,
                                   &limited);
    return TRUE;
}

/* spec.schedulingGroup: its podGroupName (empty: no group). Errors relative to "spec.". */
static gboolean decode_scheduling_group(KbJsonReader *r, KbPod *pod, GError **error)
{
    if (!decode_lone_string(r, "schedulingGroup", "podGroupName", NULL, &pod->scheduling_group,
                            error))
        return FALSE;
    if (pod->scheduling_group != NULL && *pod->scheduling_group == '\0')
        g_clear_pointer(&pod->scheduling_group, g_free);
    return TRUE;
}

/* One member of spec; *handled is FALSE for members the scheduler does not read. */
static gboolean spec_member(KbJsonReader *r, const KbJsonStr *k, KbPod *pod, guint32 *seen,
                            KbPodRequestsFold *fold, KbResources *overhead, GError **error)
{
    gint64 priority;
    gboolean ok;

    if (KB_JSON_STR_IS(*k, "containers"))
        return once(seen, S_CONTAINERS, k, error) &&
               decode_containers(r, "containers", FALSE, fold, error);
    if (KB_JSON_STR_IS(*k, "initContainers"))
        return once(seen, S_INIT, k, error) &&
               decode_containers(r, "initContainers", TRUE, fold, error);
    if (KB_JSON_STR_IS(*k, "schedulerName"))
        return once(seen, S_SCHEDULER, k, error) &&
               read_interned(r, "schedulerName", KB_MAX_NAME_LEN, TRUE, &pod->scheduler_name,
                             error);
    if (KB_JSON_STR_IS(*k, "nodeName"))
        return once(seen, S_NODE, k, error) &&
               read_interned(r, "nodeName", KB_MAX_NAME_LEN, TRUE, &pod->node_name, error);
    if (KB_JSON_STR_IS(*k, "priorityClassName"))
        return once(seen, S_PC, k, error) && read_interned(r, "priorityClassName", KB_MAX_NAME_LEN,
                                                           TRUE, &pod->priority_class_name, error);
    if (KB_JSON_STR_IS(*k, "priority")) {
        ok = once(seen, S_PRIORITY, k, error) &&
             read_int(r, "priority", G_MININT32, G_MAXINT32, &priority, &pod->has_priority, error);
        if (ok && pod->has_priority)
            pod->priority = (gint32)priority;
        return ok;
    }
    if (KB_JSON_STR_IS(*k, "activeDeadlineSeconds")) {
        gint64 deadline = 0;
        ok = once(seen, S_DEADLINE, k, error) &&
             read_int(r, "activeDeadlineSeconds", G_MININT64, G_MAXINT64, &deadline, NULL, error);
        pod->active_deadline_seconds = MAX(deadline, 0);
        return ok;
    }
    if (KB_JSON_STR_IS(*k, "nodeSelector"))
        return once(seen, S_SELECTOR, k, error) &&
               read_map(r, "nodeSelector", KB_MAX_NAME_LEN, KB_STRING_MAP_INTERNED,
                        pod->node_selector, error);
    if (KB_JSON_STR_IS(*k, "overhead")) {
        g_auto(NameSet) names;
        name_set_init(&names);
        return once(seen, S_OVERHEAD, k, error) &&
               read_resources(r, "overhead", overhead, &names, error);
    }
    if (KB_JSON_STR_IS(*k, "affinity"))
        return once(seen, S_AFFINITY, k, error) && decode_affinity(r, 0, pod, error);
    if (KB_JSON_STR_IS(*k, "tolerations"))
        return once(seen, S_TOLERATIONS, k, error) && decode_tolerations(r, pod, error);
    if (KB_JSON_STR_IS(*k, "volumes"))
        return once(seen, S_VOLUMES, k, error) && decode_volumes(r, pod, error);
    if (KB_JSON_STR_IS(*k, "schedulingGates"))
        return once(seen, S_GATES, k, error) && decode_gates(r, pod, error);
    if (KB_JSON_STR_IS(*k, "resources"))
        return once(seen, S_RESOURCES, k, error) && decode_pod_resources(r, fold, error);
    if (KB_JSON_STR_IS(*k, "schedulingGroup"))
        return once(seen, S_GROUP, k, error) && decode_scheduling_group(r, pod, error);
    if (KB_JSON_STR_IS(*k, "resourceClaims")) {
        gpointer items = NULL;
        ok = once(seen, S_RESOURCE_CLAIMS, k, error) &&
             decode_array(r, "resourceClaims", KB_MAX_POD_RESOURCE_CLAIMS,
                          sizeof(KbPodResourceClaim), TRUE, decode_spec_resource_claim, &items,
                          &pod->n_resource_claims, error);
        pod->resource_claims = items;
        return ok;
    }
    return kb_json_skip(r, error);
}

/* Errors relative to "spec.". */
/* Requests into @fold, finished once the status is read (decode_pod). */
static gboolean decode_spec(KbJsonReader *r, KbPod *pod, KbPodRequestsFold *fold, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;

    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!spec_member(r, &k, pod, &seen, fold, &fold->overhead, error))
            return FALSE;
    }
    return rc == 0;
}

/* ---- status --------------------------------------------------------------------------------- */

enum { ST_RUNNING = 1, ST_WAITING = 2, ST_TERMINATED = 4 };

/* A state's "reason" (and with @exit_code, "exitCode"); other members skipped. */
static gboolean decode_state_detail(KbJsonReader *r, gint64 *exit_code, char **reason,
                                    GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (exit_code != NULL && KB_JSON_STR_IS(k, "exitCode"))
            ok = once(&seen, 1, &k, error) &&
                 read_int(r, "exitCode", G_MININT32, G_MAXINT32, exit_code, NULL, error);
        else if (KB_JSON_STR_IS(k, "reason"))
            ok = once(&seen, 2, &k, error) &&
                 read_owned(r, "reason", KB_MAX_NAME_LEN, reason, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

/* "state": which of running/waiting/terminated; the reason of terminated, else of waiting. */
static gboolean decode_state(KbJsonReader *r, KbContainerStatus *cs, GError **error)
{
    static const char *const names[] = {"running", "waiting", "terminated"};
    KbJsonStr k, waiting = {"null", 4};
    gint64 exit_code = 0;
    guint32 seen = 0;
    int rc;

    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        guint i = 0;
        while (i < G_N_ELEMENTS(names) &&
               !(k.len == strlen(names[i]) && memcmp(k.p, names[i], k.len) == 0))
            i++;
        gboolean ok = TRUE;
        if (i < G_N_ELEMENTS(names)) {
            ok = once(&seen, 1u << i, &k, error);
            rc = ok ? member_of(r, KB_JSON_OBJECT, names[i], "an object", error) : -1;
            ok = rc >= 0;
            if (rc == 1 && i == 1)
                ok = kb_json_skip_span(r, &waiting, error);
            else if (rc == 1 && i == 2 && !decode_state_detail(r, &exit_code, &cs->reason, error)) {
                g_prefix_error(error, "terminated.");
                ok = FALSE;
            } else if (rc == 1 && i == 0) {
                ok = kb_json_skip(r, error);
            }
            cs->running |= i == 0 && rc == 1;
            cs->waiting |= i == 1 && rc == 1;
            cs->terminated |= i == 2 && rc == 1;
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    if (rc < 0)
        return FALSE;
    cs->exit_code = (gint)exit_code;
    if (cs->terminated || !cs->waiting)
        return TRUE;
    KbJsonReader sub;
    span_reader(&sub, &waiting);
    gboolean ok = decode_state_detail(&sub, NULL, &cs->reason, error);
    kb_json_reader_clear(&sub);
    if (!ok)
        g_prefix_error(error, "waiting.");
    return ok;
}

enum { CS_NAME = 1, CS_RESTARTS = 2, CS_STATE = 4, CS_ALLOCATED = 8, CS_RESOURCES = 16 };

static guint32 name_mask(NameSet *names)
{
    guint32 mask = 0;
    for (int i = 0; i < KB_RES_MAX && i < 32; i++) {
        if (requested_in(i, names))
            mask |= 1u << i;
    }
    return mask;
}

/* A container status's "resources": its requests into @out (names into @names); errors relative
 * to "resources.". */
static gboolean decode_status_resources(KbJsonReader *r, KbResources *out, NameSet *names,
                                        GError **error)
{
    KbJsonStr key;
    guint32 seen = 0;
    int rc = member_of(r, KB_JSON_OBJECT, "resources", "an object", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &key, error)) == 1) {
        gboolean ok = KB_JSON_STR_IS(key, "requests")
                              ? once(&seen, RES_REQUESTS, &key, error) &&
                                        read_resources(r, "requests", out, names, error)
                              : kb_json_skip(r, error);
        if (!ok) {
            g_prefix_error(error, "resources.");
            return FALSE;
        }
    }
    return rc == 0;
}

static gboolean decode_container_status(KbJsonReader *r, gpointer elem, GError **error)
{
    KbContainerStatus *cs = elem;
    KbJsonStr k;
    guint32 seen = 0;
    gint64 restarts = 0;
    int rc;
    g_auto(NameSet) allocated;
    g_auto(NameSet) requested;
    KbResources alloc, req;
    name_set_init(&allocated);
    name_set_init(&requested);
    kb_resources_clear(&alloc);
    kb_resources_clear(&req);
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "name")) {
            ok = once(&seen, CS_NAME, &k, error) &&
                 read_owned(r, "name", KB_MAX_NAME_LEN, &cs->name, error);
        } else if (KB_JSON_STR_IS(k, "restartCount")) {
            ok = once(&seen, CS_RESTARTS, &k, error) &&
                 read_int(r, "restartCount", 0, G_MAXINT32, &restarts, NULL, error);
        } else if (KB_JSON_STR_IS(k, "state")) {
            ok = once(&seen, CS_STATE, &k, error);
            rc = ok ? member_of(r, KB_JSON_OBJECT, "state", "an object", error) : -1;
            ok = rc == 0 || (rc == 1 && decode_state(r, cs, error));
            if (!ok && rc == 1)
                g_prefix_error(error, "state.");
        } else if (KB_JSON_STR_IS(k, "allocatedResources")) {
            ok = once(&seen, CS_ALLOCATED, &k, error) &&
                 read_resources(r, "allocatedResources", &alloc, &allocated, error);
        } else if (KB_JSON_STR_IS(k, "resources")) {
            ok = once(&seen, CS_RESOURCES, &k, error) &&
                 decode_status_resources(r, &req, &requested, error);
        } else {
            ok = kb_json_skip(r, error);
        }
        if (!ok)
            return FALSE;
    }
    cs->restart_count = (gint)restarts;
    kb_resources_max(&alloc, &req);
    cs->held = alloc;
    cs->held_mask = name_mask(&allocated) | name_mask(&requested);
    return rc == 0;
}

static gboolean decode_container_statuses(KbJsonReader *r, KbPod *pod, GError **error)
{
    gpointer items = pod->container_statuses;
    gboolean ok =
            decode_array(r, "containerStatuses", KB_MAX_CONTAINERS, sizeof(KbContainerStatus), TRUE,
                         decode_container_status, &items, &pod->n_container_statuses, error);
    pod->container_statuses = items;
    return ok;
}

enum { P_PHASE = 1, P_STATUSES = 2, P_RESIZE = 4, P_CONDITIONS = 8, P_CLAIMS = 16 };
enum { PC_TYPE = 1, PC_REASON = 2, PC_STATUS = 4 };

/* One status condition: whether it is PodResizePending with reason Infeasible, or
 * KB_GANG_EVICTED_CONDITION True. */
static gboolean decode_condition(KbJsonReader *r, gboolean *infeasible, gboolean *gang_evicted,
                                 GError **error)
{
    char type[KB_MAX_NAME_LEN + 1], reason[KB_MAX_NAME_LEN + 1], status[KB_MAX_NAME_LEN + 1];
    gboolean has_type = FALSE, has_reason = FALSE, has_status = FALSE;
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "type"))
            ok = once(&seen, PC_TYPE, &k, error) &&
                 read_small(r, "type", KB_MAX_NAME_LEN, type, sizeof(type), &has_type, error);
        else if (KB_JSON_STR_IS(k, "reason"))
            ok = once(&seen, PC_REASON, &k, error) &&
                 read_small(r, "reason", KB_MAX_NAME_LEN, reason, sizeof(reason), &has_reason,
                            error);
        else if (KB_JSON_STR_IS(k, "status"))
            ok = once(&seen, PC_STATUS, &k, error) &&
                 read_small(r, "status", KB_MAX_NAME_LEN, status, sizeof(status), &has_status,
                            error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    if (has_type && has_reason && strcmp(type, "PodResizePending") == 0 &&
        strcmp(reason, "Infeasible") == 0)
        *infeasible = TRUE;
    if (has_type && has_status && strcmp(type, KB_GANG_EVICTED_CONDITION) == 0 &&
        strcmp(status, "True") == 0)
        *gang_evicted = TRUE;
    return rc == 0;
}

static gboolean decode_conditions(KbJsonReader *r, gboolean *infeasible, gboolean *gang_evicted,
                                  GError **error)
{
    int rc = array_member(r, "conditions", error);
    if (rc != 1)
        return rc == 0;
    for (gsize i = 0; (rc = next_object(r, "conditions", i, KB_MAX_LIST_ITEMS, error)) == 1; i++) {
        if (!decode_condition(r, infeasible, gang_evicted, error)) {
            g_prefix_error(error, "conditions[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return rc == 0;
}

/* Errors relative to "status.". */
static gboolean decode_claim_statuses(KbJsonReader *r, KbPod *pod, GError **error)
{
    gpointer items = NULL;
    gboolean ok = decode_array(r, "resourceClaimStatuses", KB_MAX_POD_RESOURCE_CLAIMS,
                               sizeof(KbPodResourceClaim), TRUE, decode_status_resource_claim,
                               &items, &pod->n_claim_statuses, error);
    pod->claim_statuses = items;
    return ok;
}

static gboolean decode_status(KbJsonReader *r, KbPod *pod, GError **error)
{
    char phase[KB_MAX_NAME_LEN + 1], resize[KB_MAX_NAME_LEN + 1];
    gboolean has_phase = FALSE, has_resize = FALSE, infeasible = FALSE;
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "phase"))
            ok = once(&seen, P_PHASE, &k, error) &&
                 read_small(r, "phase", KB_MAX_NAME_LEN, phase, sizeof(phase), &has_phase, error);
        else if (KB_JSON_STR_IS(k, "containerStatuses"))
            ok = once(&seen, P_STATUSES, &k, error) && decode_container_statuses(r, pod, error);
        else if (KB_JSON_STR_IS(k, "resize"))
            ok = once(&seen, P_RESIZE, &k, error) &&
                 read_small(r, "resize", KB_MAX_NAME_LEN, resize, sizeof(resize), &has_resize,
                            error);
        else if (KB_JSON_STR_IS(k, "conditions"))
            ok = once(&seen, P_CONDITIONS, &k, error) &&
                 decode_conditions(r, &infeasible, &pod->gang_evicted, error);
        else if (KB_JSON_STR_IS(k, "resourceClaimStatuses"))
            ok = once(&seen, P_CLAIMS, &k, error) && decode_claim_statuses(r, pod, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    pod->phase = kb_pod_phase_parse(has_phase ? phase : NULL);
    pod->resize_infeasible = infeasible || (has_resize && strcmp(resize, "Infeasible") == 0);
    return rc == 0;
}

/* ---- metadata ------------------------------------------------------------------------------- */

static gboolean read_time(KbJsonReader *r, const char *key, gint64 *out, GError **error)
{
    char buf[KB_MAX_TIME_LEN + 1];
    gboolean present;
    return read_small(r, key, KB_MAX_TIME_LEN, buf, sizeof(buf), &present, error) &&
           (!present || kb_decode_time_text(key, buf, out, error));
}

enum { O_API = 1, O_KIND = 2, O_NAME = 4, O_UID = 8, O_CONTROLLER = 16 };

static gboolean decode_owner(KbJsonReader *r, gpointer elem, GError **error)
{
    KbOwnerRef *ref = elem;
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "apiVersion"))
            ok = once(&seen, O_API, &k, error) &&
                 read_owned(r, "apiVersion", KB_MAX_NAME_LEN, &ref->api_version, error);
        else if (KB_JSON_STR_IS(k, "kind"))
            ok = once(&seen, O_KIND, &k, error) &&
                 read_owned(r, "kind", KB_MAX_NAME_LEN, &ref->kind, error);
        else if (KB_JSON_STR_IS(k, "name"))
            ok = once(&seen, O_NAME, &k, error) &&
                 read_owned(r, "name", KB_MAX_NAME_LEN, &ref->name, error);
        else if (KB_JSON_STR_IS(k, "uid"))
            ok = once(&seen, O_UID, &k, error) &&
                 read_owned(r, "uid", KB_MAX_NAME_LEN, &ref->uid, error);
        else if (KB_JSON_STR_IS(k, "controller"))
            ok = once(&seen, O_CONTROLLER, &k, error) &&
                 read_bool(r, "controller", &ref->controller, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0;
}

static gboolean decode_owners(KbJsonReader *r, KbObjectMeta *meta, GError **error)
{
    /* Counted before decoding so that kb_meta_clear() frees a partial entry. */
    gpointer items = meta->owners;
    gboolean ok = decode_array(r, "ownerReferences", KB_MAX_LIST_ITEMS, sizeof(KbOwnerRef), TRUE,
                               decode_owner, &items, &meta->n_owners, error);
    meta->owners = items;
    return ok;
}

enum {
    M_NAME = 1,
    M_NAMESPACE = 2,
    M_UID = 4,
    M_RV = 8,
    M_GENERATION = 16,
    M_CREATED = 32,
    M_DELETED = 64,
    M_LABELS = 128,
    M_ANNOTATIONS = 256,
    M_OWNERS = 512,
};

static gboolean meta_member(KbJsonReader *r, const KbJsonStr *k, KbObjectMeta *meta, guint32 *seen,
                            GError **error)
{
    KbJsonStr s;
    int rc;
    if (KB_JSON_STR_IS(*k, "name")) {
        if (!once(seen, M_NAME, k, error) ||
            (rc = read_str(r, "name", KB_MAX_NAME_LEN, &s, error)) < 0)
            return FALSE;
        if (rc == 1 && s.len > 0)
            meta->name = g_strndup(s.p, s.len);
        return TRUE;
    }
    if (KB_JSON_STR_IS(*k, "namespace"))
        return once(seen, M_NAMESPACE, k, error) &&
               read_interned(r, "namespace", KB_MAX_NAME_LEN, TRUE, &meta->namespace_, error);
    if (KB_JSON_STR_IS(*k, "uid"))
        return once(seen, M_UID, k, error) &&
               read_owned(r, "uid", KB_MAX_NAME_LEN, &meta->uid, error);
    if (KB_JSON_STR_IS(*k, "resourceVersion"))
        return once(seen, M_RV, k, error) &&
               read_owned(r, "resourceVersion", KB_MAX_NAME_LEN, &meta->resource_version, error);
    if (KB_JSON_STR_IS(*k, "generation"))
        return once(seen, M_GENERATION, k, error) &&
               read_int(r, "generation", 0, G_MAXINT64, &meta->generation, NULL, error);
    if (KB_JSON_STR_IS(*k, "creationTimestamp"))
        return once(seen, M_CREATED, k, error) &&
               read_time(r, "creationTimestamp", &meta->creation_timestamp, error);
    if (KB_JSON_STR_IS(*k, "deletionTimestamp"))
        return once(seen, M_DELETED, k, error) &&
               read_time(r, "deletionTimestamp", &meta->deletion_timestamp, error);
    if (KB_JSON_STR_IS(*k, "labels"))
        return once(seen, M_LABELS, k, error) &&
               read_map(r, "labels", KB_MAX_LABEL_VALUE_LEN, KB_STRING_MAP_INTERN_KEYS,
                        meta->labels, error);
    if (KB_JSON_STR_IS(*k, "annotations"))
        return once(seen, M_ANNOTATIONS, k, error) &&
               read_map(r, "annotations", KB_MAX_LABEL_VALUE_LEN, KB_STRING_MAP_OWNED,
                        meta->annotations, error);
    if (KB_JSON_STR_IS(*k, "ownerReferences"))
        return once(seen, M_OWNERS, k, error) && decode_owners(r, meta, error);
    return kb_json_skip(r, error);
}

/* Errors relative to "metadata.". */
static gboolean decode_metadata(KbJsonReader *r, KbObjectMeta *meta, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        if (!meta_member(r, &k, meta, &seen, error))
            return FALSE;
    }
    if (rc < 0)
        return FALSE;
    if (meta->name == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "name: missing");
        return FALSE;
    }
    return TRUE;
}

gboolean kb_fast_decode_metadata(KbJsonReader *r, KbObjectMeta *meta, GError **error)
{
    return decode_metadata(r, meta, error);
}

/* ---- pods ----------------------------------------------------------------------------------- */

/*
 * The pod's name and namespace for an error message, read again from the pod's text (@item) as
 * json-c's decoder would have them when it fails: both valid, else no name.
 */
static void prefix_pod(const KbJsonStr *item, GError **error)
{
    KbJsonReader sub;
    KbObjectMeta meta = {.name = NULL};
    KbJsonStr k;
    char *name = NULL;
    const char *ns = NULL;

    span_reader(&sub, item);
    if (kb_json_peek(&sub) == KB_JSON_OBJECT && kb_json_object_begin(&sub, NULL)) {
        while (kb_json_object_next(&sub, &k, NULL) == 1) {
            if (!KB_JSON_STR_IS(k, "metadata") || kb_json_peek(&sub) != KB_JSON_OBJECT) {
                if (!kb_json_skip(&sub, NULL))
                    break;
                continue;
            }
            kb_json_object_begin(&sub, NULL);
            while (kb_json_object_next(&sub, &k, NULL) == 1) {
                gboolean ok;
                if (KB_JSON_STR_IS(k, "name"))
                    ok = read_owned(&sub, "name", KB_MAX_NAME_LEN, &name, NULL);
                else if (KB_JSON_STR_IS(k, "namespace"))
                    ok = read_interned(&sub, "namespace", KB_MAX_NAME_LEN, TRUE, &ns, NULL);
                else
                    ok = kb_json_skip(&sub, NULL);
                if (!ok) {
                    g_clear_pointer(&name, g_free);
                    break;
                }
            }
            break;
        }
    }
    kb_json_reader_clear(&sub);
    if (name != NULL && *name != '\0') {
        meta.name = name;
        meta.namespace_ = ns;
    }
    kb_decode_prefix_object(error, "pod", &meta);
    g_free(name);
}

enum { POD_METADATA = 1, POD_SPEC = 2, POD_STATUS = 4 };

static gboolean pod_member(KbJsonReader *r, const KbJsonStr *k, KbPod *pod, guint32 *seen,
                           KbPodRequestsFold *fold, GError **error)
{
    static const char *const keys[] = {"metadata", "spec", "status"};
    guint i;
    if (KB_JSON_STR_IS(*k, "metadata"))
        i = 0;
    else if (KB_JSON_STR_IS(*k, "spec"))
        i = 1;
    else if (KB_JSON_STR_IS(*k, "status"))
        i = 2;
    else
        return kb_json_skip(r, error);
    if (!once(seen, 1u << i, k, error))
        return FALSE;
    int rc = member_of(r, KB_JSON_OBJECT, keys[i], "an object", error);
    if (rc <= 0) {
        *seen &= ~(1u << i); /* null reads as absent */
        return rc == 0;
    }
    gboolean ok = i == 0   ? decode_metadata(r, &pod->meta, error)
                  : i == 1 ? decode_spec(r, pod, fold, error)
                           : decode_status(r, pod, error);
    if (!ok)
        g_prefix_error(error, "%s.", keys[i]);
    return ok;
}

/* One pod object at the reader; on error the message is prefixed with the pod. */
static KbPod *decode_pod(KbJsonReader *r, GError **error)
{
    g_autoptr(KbPod) pod = kb_pod_new();
    KbJsonStr item = {r->buf + r->pos, 0}, k;
    guint32 seen = 0;
    int rc = -1;
    KbPodRequestsFold fold;

    kb_pod_requests_fold_init(&fold);

    if (kb_json_peek(r) != KB_JSON_OBJECT) {
        type_error(r, "object", "an object", error);
        g_prefix_error(error, "pod: ");
        return NULL;
    }
    item.p = r->buf + r->pos;
    if (kb_json_object_begin(r, error)) {
        while ((rc = kb_json_object_next(r, &k, error)) == 1) {
            if (!pod_member(r, &k, pod, &seen, &fold, error)) {
                rc = -1;
                break;
            }
        }
    }
    if (rc == 0 && (seen & POD_METADATA) == 0) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "metadata: missing");
        rc = -1;
    } else if (rc == 0 && (seen & POD_SPEC) == 0) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "spec: missing");
        rc = -1;
    }
    if (rc < 0) {
        item.len = r->len - (gsize)(item.p - r->buf);
        prefix_pod(&item, error);
        return NULL;
    }
    kb_pod_requests_fold_finish(&fold, pod);
    kb_pod_finish(pod);
    return g_steal_pointer(&pod);
}

KbPod *kb_pod_decode_bytes(const char *json, gsize len, GError **error)
{
    KbJsonReader r;
    kb_json_reader_init(&r, json, len);
    KbPod *pod = decode_pod(&r, error);
    if (pod != NULL && !kb_json_finish(&r, error))
        g_clear_pointer(&pod, kb_object_unref);
    kb_json_reader_clear(&r);
    return pod;
}

/* ---- lists ---------------------------------------------------------------------------------- */

static gboolean decode_items(KbJsonReader *r, KbFastItemDecoder item, GPtrArray *pods,
                             GError **error)
{
    int rc = member_of(r, KB_JSON_ARRAY, "items", "an array", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_array_begin(r, error))
        return FALSE;
    for (guint i = 0; (rc = kb_json_array_next(r, error)) == 1; i++) {
        KbObjectMeta *pod = item(r, error);
        if (pod == NULL) {
            g_prefix_error(error, "items[%u]: ", i);
            return FALSE;
        }
        g_ptr_array_add(pods, pod);
    }
    return rc == 0;
}

static gboolean decode_list_meta(KbJsonReader *r, char **rv, char **cont, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc = member_of(r, KB_JSON_OBJECT, "metadata", "an object", error);
    if (rc != 1)
        return rc == 0;
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "resourceVersion"))
            ok = once(&seen, 1, &k, error) &&
                 read_owned(r, "resourceVersion", LIST_TOKEN_MAX, rv, error);
        else if (KB_JSON_STR_IS(k, "continue"))
            ok = once(&seen, 2, &k, error) &&
                 read_owned(r, "continue", LIST_TOKEN_MAX, cont, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok) {
            g_prefix_error(error, "metadata.");
            return FALSE;
        }
    }
    return rc == 0;
}

static gboolean decode_list(KbJsonReader *r, KbFastItemDecoder item, GPtrArray *pods, char **rv,
                            char **cont, GError **error)
{
    KbJsonStr k;
    guint32 seen = 0;
    int rc;
    if (kb_json_peek(r) != KB_JSON_OBJECT)
        return type_error(r, "list", "an object", error);
    if (!kb_json_object_begin(r, error))
        return FALSE;
    while ((rc = kb_json_object_next(r, &k, error)) == 1) {
        gboolean ok;
        if (KB_JSON_STR_IS(k, "items"))
            ok = once(&seen, 1, &k, error) && decode_items(r, item, pods, error);
        else if (KB_JSON_STR_IS(k, "metadata"))
            ok = once(&seen, 2, &k, error) && decode_list_meta(r, rv, cont, error);
        else
            ok = kb_json_skip(r, error);
        if (!ok)
            return FALSE;
    }
    return rc == 0 && kb_json_finish(r, error);
}

static KbObjectMeta *pod_item(KbJsonReader *r, GError **error)
{
    return (KbObjectMeta *)decode_pod(r, error);
}

gboolean kb_pod_list_decode_bytes(const char *json, gsize len, GPtrArray *out_pods,
                                  char **resource_version, char **continue_token, GError **error)
{
    return kb_fast_list_decode(json, len, pod_item, out_pods, resource_version, continue_token,
                               error);
}

gboolean kb_fast_list_decode(const char *json, gsize len, KbFastItemDecoder item, GPtrArray *out,
                             char **resource_version, char **continue_token, GError **error)
{
    g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func(kb_object_unref);
    g_autofree char *rv = NULL;
    g_autofree char *cont = NULL;
    KbJsonReader r;

    kb_json_reader_init(&r, json, len);
    gboolean ok = decode_list(&r, item, pods, &rv, &cont, error);
    kb_json_reader_clear(&r);
    if (!ok)
        return FALSE;
    for (guint i = 0; i < pods->len; i++)
        g_ptr_array_add(out, g_steal_pointer(&pods->pdata[i]));
    g_ptr_array_set_size(pods, 0);
    if (resource_version != NULL)
        *resource_version = g_steal_pointer(&rv);
    if (continue_token != NULL)
        *continue_token = g_steal_pointer(&cont);
    return TRUE;
}
