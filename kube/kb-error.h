/*
 * The kube/ error domain. REST calls map a metav1.Status (or a transport failure) onto these
 * codes; decoders use KB_ERROR_DECODE and KB_ERROR_LIMIT. Messages name the object, the field
 * and the offending value: "pod default/p1: invalid quantity \"12Qi\" for nvidia.com/gpu".
 */
#pragma once

#include <glib.h>

#define KB_ERROR (kb_error_quark())
GQuark kb_error_quark(void);

typedef enum {
    KB_ERROR_NOT_FOUND,         /* 404 NotFound */
    KB_ERROR_ALREADY_EXISTS,    /* 409 AlreadyExists */
    KB_ERROR_CONFLICT,          /* 409 Conflict (stale resourceVersion, already bound) */
    KB_ERROR_GONE,              /* 410 Gone / Expired: the watch must relist */
    KB_ERROR_INVALID,           /* 422 Invalid */
    KB_ERROR_BAD_REQUEST,       /* 400 BadRequest */
    KB_ERROR_UNAUTHORIZED,      /* 401 */
    KB_ERROR_FORBIDDEN,         /* 403 */
    KB_ERROR_METHOD_NOT_ALLOWED, /* 405 */
    KB_ERROR_TOO_LARGE,         /* 413 RequestEntityTooLarge */
    KB_ERROR_TOO_MANY_REQUESTS, /* 429, see KbResponse.retry_after_seconds */
    KB_ERROR_SERVER,            /* 5xx */
    KB_ERROR_TIMEOUT,           /* request or low-speed timeout */
    KB_ERROR_TRANSPORT,         /* connection refused, TLS failure, ... */
    KB_ERROR_DECODE,            /* malformed JSON or object */
    KB_ERROR_LIMIT,             /* a decoder limit crossed (size, depth, count, length) */
    KB_ERROR_CONFIG,            /* kubeconfig / in-cluster configuration problem */
    KB_ERROR_UNKNOWN,           /* any other HTTP status */
} KbErrorCode;

/* The error code for an HTTP status and a metav1.Status reason (may be NULL). */
KbErrorCode kb_error_code_from_http(int http_status, const char *reason);

/* TRUE for errors worth retrying with backoff: 429, 5xx, timeouts, transport errors. */
gboolean kb_error_is_retryable(const GError *error);
