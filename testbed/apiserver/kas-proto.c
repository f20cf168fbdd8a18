/* Protobuf request bodies (see kas-proto.h). */
#include "testbed/apiserver/kas-proto.h"

#include <string.h>

#include "testbed/apiserver/kas-store.h"

static gboolean pb_varint(KasPb *b, guint64 *v)
{
    *v = 0;
    for (guint shift = 0; b->p < b->end && shift < 64; shift += 7) {
        guchar c = *b->p++;
        *v |= (guint64)(c & 0x7f) << shift;
        if ((c & 0x80) == 0)
            return TRUE;
    }
    return FALSE;
}

gboolean kas_pb_next(KasPb *b, guint *num, KasPb *sub, gboolean *bad)
{
    guint64 key, len;
    if (b->p >= b->end)
        return FALSE;
    if (!pb_varint(b, &key))
        return !(*bad = TRUE);
    *num = (guint)(key >> 3);
    sub->p = sub->end = b->p;
    switch (key & 7) {
    case 0:
        return pb_varint(b, &len) || !(*bad = TRUE);
    case 1:
    case 5:
        len = (key & 7) == 1 ? 8 : 4;
        break;
    case 2:
        if (!pb_varint(b, &len))
            return !(*bad = TRUE);
        break;
    default:
        return !(*bad = TRUE);
    }
    if (len > (guint64)(b->end - b->p))
        return !(*bad = TRUE);
    if ((key & 7) == 2) {
        sub->p = b->p;
        sub->end = b->p + len;
    }
    b->p += len;
    return TRUE;
}

gboolean kas_pb_unwrap(const guchar *data, gsize len, KasPb *object, KasPb *kind)
{
    gboolean bad = FALSE, found = FALSE;
    if (len < 4 || memcmp(data, "k8s", 4) != 0)
        return FALSE;
    KasPb unknown = {data + 4, data + len}, sub;
    guint num;
    *kind = (KasPb){NULL, NULL};
    while (kas_pb_next(&unknown, &num, &sub, &bad)) {
        if (num == 1) {
            KasPb type_meta = sub, f;
            while (kas_pb_next(&type_meta, &num, &f, &bad))
                if (num == 2)
                    *kind = f;
        } else if (num == 2) {
            *object = sub;
            found = TRUE;
        }
    }
    return found && !bad;
}

static void add_string(json_object *obj, const char *key, KasPb s)
{
    json_object_object_add(obj, key,
                           json_object_new_string_len((const char *)s.p, (int)(s.end - s.p)));
}

/* Message @b's string fields named by @keys (field number -> key; NULL: not read). */
static json_object *string_fields(KasPb b, const char *const *keys, guint n_keys, gboolean *bad)
{
    json_object *o = json_object_new_object();
    guint num;
    KasPb sub;
    while (kas_pb_next(&b, &num, &sub, bad))
        if (num < n_keys && keys[num] != NULL)
            add_string(o, keys[num], sub);
    return o;
}

/* ObjectMeta {1: name, 3: namespace, 5: uid, 6: resourceVersion, 12: annotations}. */
static json_object *object_meta(KasPb b, gboolean *bad)
{
    static const char *const keys[] = {
            [1] = "name", [3] = "namespace", [5] = "uid", [6] = "resourceVersion"};
    json_object *meta = string_fields(b, keys, G_N_ELEMENTS(keys), bad);
    json_object *annotations = NULL;
    guint num;
    KasPb sub;
    while (kas_pb_next(&b, &num, &sub, bad)) {
        if (num != 12)
            continue;
        KasPb entry = sub, f, key = {NULL, NULL}, value = {NULL, NULL};
        while (kas_pb_next(&entry, &num, &f, bad))
            if (num == 1)
                key = f;
            else if (num == 2)
                value = f;
        if (key.p == NULL)
            continue;
        if (annotations == NULL)
            annotations = json_object_new_object();
        g_autofree char *k = g_strndup((const char *)key.p, (gsize)(key.end - key.p));
        json_object_object_add(
                annotations, k,
                json_object_new_string_len(value.p != NULL ? (const char *)value.p : "",
                                           (int)(value.end - value.p)));
    }
    if (annotations != NULL)
        json_object_object_add(meta, "annotations", annotations);
    return meta;
}

json_object *kas_proto_binding(const guchar *data, gsize len, GError **error)
{
    /* ObjectReference {1: kind, 2: namespace, 3: name, 4: uid, 5: apiVersion,
     * 6: resourceVersion, 7: fieldPath} */
    static const char *const target_keys[] = {
            [1] = "kind",       [2] = "namespace",       [3] = "name",     [4] = "uid",
            [5] = "apiVersion", [6] = "resourceVersion", [7] = "fieldPath"};
    KasPb object, kind;
    if (!kas_pb_unwrap(data, len, &object, &kind)) {
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "couldn't decode the request body: not a protobuf object (\"k8s\\0\" and a "
                    "runtime.Unknown)");
        return NULL;
    }
    if (kind.p == NULL || (gsize)(kind.end - kind.p) != strlen("Binding") ||
        memcmp(kind.p, "Binding", strlen("Binding")) != 0) {
        g_autofree char *k = kind.p != NULL
                                     ? g_strndup((const char *)kind.p, (gsize)(kind.end - kind.p))
                                     : g_strdup("");
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "couldn't decode the request body: kind \"%s\" where a Binding was expected",
                    k);
        return NULL;
    }
    gboolean bad = FALSE;
    json_object *binding = json_object_new_object();
    json_object_object_add(binding, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(binding, "kind", json_object_new_string("Binding"));
    guint num;
    KasPb sub;
    while (kas_pb_next(&object, &num, &sub, &bad)) {
        if (num == 1)
            json_object_object_add(binding, "metadata", object_meta(sub, &bad));
        else if (num == 2)
            json_object_object_add(
                    binding, "target",
                    string_fields(sub, target_keys, G_N_ELEMENTS(target_keys), &bad));
    }
    if (bad) {
        json_object_put(binding);
        g_set_error(error, KAS_ERROR, KAS_ERR_BAD_REQUEST,
                    "couldn't decode the request body: malformed protobuf Binding");
        return NULL;
    }
    return binding;
}
