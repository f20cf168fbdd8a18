/*
 * Reading the protobuf bodies kube-apiserver takes for built-in types: "k8s\0", then a
 * runtime.Unknown {1: TypeMeta {1: apiVersion, 2: kind}, 2: raw} whose raw bytes are the object's
 * message (field numbers from k8s.io/api's generated.proto). Only what this server reads: the
 * wire format, and a Binding turned into its JSON form.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-proto.h" /* KB_PROTO_CONTENT_TYPE */

/* A span of protobuf bytes. */
typedef struct {
    const guchar *p, *end;
} KasPb;

/* The next field of @b: its number and, for length-delimited ones, its bytes in *@sub (others
 * are skipped: *@sub is empty). FALSE at the end or on malformed input (*@bad set then). */
gboolean kas_pb_next(KasPb *b, guint *num, KasPb *sub, gboolean *bad);

/* The object message inside the envelope @data (@len bytes), and its kind in *@kind (borrowed
 * span); FALSE when @data is no such envelope. */
gboolean kas_pb_unwrap(const guchar *data, gsize len, KasPb *object, KasPb *kind);

/* A core/v1 Binding body as the JSON the rest of the server reads (new reference), or NULL with
 * a BadRequest error naming what was wrong (not an envelope, another kind, malformed). */
json_object *kas_proto_binding(const guchar *data, gsize len, GError **error);
