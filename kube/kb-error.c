/* The kube/ error domain; see kb-error.h. */
#include "kube/kb-error.h"

#include <string.h>

G_DEFINE_QUARK(kb-error-quark, kb_error)

KbErrorCode kb_error_code_from_http(int http_status, const char *reason)
{
    switch (http_status) {
    case 400:
        return KB_ERROR_BAD_REQUEST;
    case 401:
        return KB_ERROR_UNAUTHORIZED;
    case 403:
        return KB_ERROR_FORBIDDEN;
    case 404:
        return KB_ERROR_NOT_FOUND;
    case 405:
        return KB_ERROR_METHOD_NOT_ALLOWED;
    case 409:
        return reason != NULL && strcmp(reason, "AlreadyExists") == 0 ? KB_ERROR_ALREADY_EXISTS
                                                                       : KB_ERROR_CONFLICT;
    case 410:
        return KB_ERROR_GONE;
    case 413:
        return KB_ERROR_TOO_LARGE;
    case 422:
        return KB_ERROR_INVALID;
    case 429:
        return KB_ERROR_TOO_MANY_REQUESTS;
    case 504:
        return KB_ERROR_TIMEOUT;
    default:
        return http_status >= 500 && http_status < 600 ? KB_ERROR_SERVER : KB_ERROR_UNKNOWN;
    }
}

gboolean kb_error_is_retryable(const GError *error)
{
    if (error == NULL || error->domain != KB_ERROR)
        return FALSE;
    switch (error->code) {
    case KB_ERROR_TOO_MANY_REQUESTS:
    case KB_ERROR_SERVER:
    case KB_ERROR_TIMEOUT:
    case KB_ERROR_TRANSPORT:
        return TRUE;
    default:
        return FALSE;
    }
}
