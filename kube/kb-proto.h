/*
 * The protobuf encoding kube-apiserver reads for built-in types
 * (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): the 4 bytes "k8s\0", then a
 * runtime.Unknown message {1: TypeMeta {1: apiVersion, 2: kind}, 2: raw} whose raw bytes are the
 * object's own message (field numbers from k8s.io/api's generated.proto). Only writing, and only
 * the wire types objects such as a Binding need: strings and embedded messages (length-delimited,
 * wire type 2). client-go sends built-in objects this way; the server decodes them for a
 * fraction of what a JSON body costs it.
 */
#pragma once

#include <glib.h>

#define KB_PROTO_CONTENT_TYPE "application/vnd.kubernetes.protobuf"

/* Append field @field as the string @s (nothing when @s is NULL: absent, as an unset optional
 * field is). */
void kb_proto_put_string(GByteArray *out, guint field, const char *s);
/* Append field @field as the embedded message @msg (its bytes, @len long). */
void kb_proto_put_message(GByteArray *out, guint field, const guint8 *msg, gsize len);
/* A map<string, string> entry (field @field {1: key, 2: value}). */
void kb_proto_put_map_entry(GByteArray *out, guint field, const char *key, const char *value);
/* The request body for the object message @msg of @api_version/@kind: "k8s\0" + Unknown (new
 * array, the caller's). */
GByteArray *kb_proto_envelope(const char *api_version, const char *kind, const GByteArray *msg);
