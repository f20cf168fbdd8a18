/*
 * meta.k8s.io/v1 Table rendering (what `kubectl get` asks for with
 * Accept: application/json;as=Table;v=v1;g=meta.k8s.io): the columns kube-apiserver prints for
 * pods, nodes, namespaces, services, events, priority classes and leases, a CRD's
 * additionalPrinterColumns, and NAME/AGE (CRDs: NAME/CREATED AT) for everything else.
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-store.h"

typedef enum {
    KAS_TABLE_OBJECT_NONE,
    KAS_TABLE_OBJECT_METADATA, /* PartialObjectMetadata (the default) */
    KAS_TABLE_OBJECT_FULL,
} KasTableInclude;

/* The columnDefinitions array for @res served at @version (new reference). */
json_object *kas_table_columns(const KasRes *res, const char *version);

/* One row ({"cells": [...], "object": ...}) for @obj (borrowed) at time @now (unix seconds). */
json_object *kas_table_row(const KasRes *res, const char *version, json_object *obj,
                           KasTableInclude include, gint64 now);

/* A whole Table for @objs (KasObj*) with list metadata @rv and @continue_token (may be NULL);
 * newly allocated JSON text. */
char *kas_table_render(const KasRes *res, const char *version, GPtrArray *objs, guint64 rv,
                       const char *continue_token, KasTableInclude include);
