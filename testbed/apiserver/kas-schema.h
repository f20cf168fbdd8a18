/*
 * CustomResourceDefinition schemas as kube-apiserver 1.19's apiextensions (v1) applies them:
 *
 *  - kas_schema_check_crd(): a CRD in a protected group (k8s.io, kubernetes.io and their
 *    subdomains) needs the api-approved.kubernetes.io annotation (a URL, or a reason starting
 *    with "unapproved"); every version needs a schema, and it must be structural (a type on
 *    every node but where x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields
 *    says otherwise, "object" at the root, no properties next to additionalProperties).
 *  - kas_schema_prune(): fields the schema does not name are dropped, unless
 *    x-kubernetes-preserve-unknown-fields: true (apiVersion, kind and metadata at the root and
 *    in x-kubernetes-embedded-resource objects are kept).
 *  - kas_schema_validate(): type (integer, number, string, boolean, array, object; nullable,
 *    x-kubernetes-int-or-string), required, minimum/maximum (exclusive too), enum, pattern
 *    (POSIX extended syntax through GRegex), minLength/maxLength, minItems/maxItems, items,
 *    properties and additionalProperties, with the real field paths and messages
 *    ("spec.minMember in body must be of type integer: \"string\"").
 *
 * Limits: schemas and objects deeper than KAS_SCHEMA_MAX_DEPTH are refused (a schema) or not
 * looked into further (an object: one error names the place); at most KAS_SCHEMA_MAX_ERRORS
 * errors are reported for one object.
 */
#pragma once

#include <json-c/json.h>

#include "testbed/apiserver/kas-status.h"

#define KAS_SCHEMA_MAX_DEPTH  64
#define KAS_SCHEMA_MAX_ERRORS 100

/* Check the CRD @crd (after defaults) into @errs. */
void kas_schema_check_crd(json_object *crd, KasFieldErrors *errs);

/* The defaults of a CRD: spec.names.listKind, spec.conversion.strategy None. */
void kas_schema_crd_defaults(json_object *crd);

/* The openAPIV3Schema of version @version of @crd (borrowed), or NULL. */
json_object *kas_schema_of_version(json_object *crd, const char *version);

/* Drop from @obj (a custom resource, changed in place) what @schema does not describe. */
void kas_schema_prune(json_object *schema, json_object *obj);

/* Validate @obj against @schema into @errs. */
void kas_schema_validate(json_object *schema, json_object *obj, KasFieldErrors *errs);
