/* The protobuf writer for kube-apiserver request bodies (see kb-proto.h). */
#include "kube/kb-proto.h"

#include <string.h>

static void put_varint(GByteArray *out, guint64 v)
{
    guint8 buf[10];
    guint n = 0;
    do {
        buf[n] = (guint8)(v & 0x7f);
        v >>= 7;
        if (v != 0)
            buf[n] |= 0x80;
        n++;
    } while (v != 0);
    g_byte_array_append(out, buf, n);
}

void kb_proto_put_message(GByteArray *out, guint field, const guint8 *msg, gsize len)
{
    put_varint(out, ((guint64)field << 3) | 2); /* wire type 2: length-delimited */
    put_varint(out, len);
    if (len > 0)
        g_byte_array_append(out, msg, (guint)len);
}

void kb_proto_put_string(GByteArray *out, guint field, const char *s)
{
    if (s != NULL)
        kb_proto_put_message(out, field, (const guint8 *)s, strlen(s));
}

void kb_proto_put_map_entry(GByteArray *out, guint field, const char *key, const char *value)
{
    g_autoptr(GByteArray) entry = g_byte_array_new();
    kb_proto_put_string(entry, 1, key);
    kb_proto_put_string(entry, 2, value);
    kb_proto_put_message(out, field, entry->data, entry->len);
}

GByteArray *kb_proto_envelope(const char *api_version, const char *kind, const GByteArray *msg)
{
    g_autoptr(GByteArray) type_meta = g_byte_array_new();
    kb_proto_put_string(type_meta, 1, api_version);
    kb_proto_put_string(type_meta, 2, kind);
    GByteArray *out = g_byte_array_new();
    g_byte_array_append(out, (const guint8 *)"k8s", 4); /* with its NUL: the magic is 4 bytes */
    kb_proto_put_message(out, 1, type_meta->data, type_meta->len);
    kb_proto_put_message(out, 2, msg->data, msg->len);
    return out;
}
