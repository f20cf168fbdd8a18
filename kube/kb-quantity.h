/*
 * Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), parsed and formatted as
 * the API server does.
 *
 *   <quantity> ::= <signedNumber><suffix>
 *   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei  |  n | u | m | "" | k | M | G | T | P | E
 *               |  e<signedNumber> | E<signedNumber>
 *
 * A parsed quantity is exact: value = unscaled * 10^scale (decimal) or unscaled * 1024^n after
 * conversion (binary suffixes are converted to a decimal representation when that is exact,
 * else kept in units with rounding up, as apimachinery does). The format (DecimalSI, BinarySI,
 * DecimalExponent) is the suffix's and is used when formatting canonically.
 */
#pragma once

#include <glib.h>

typedef enum {
    KB_QUANTITY_DECIMAL_SI,
    KB_QUANTITY_BINARY_SI,
    KB_QUANTITY_DECIMAL_EXPONENT,
} KbQuantityFormat;

typedef struct {
    gint64 unscaled;         /* value = unscaled * 10^scale */
    gint32 scale;            /* base-10 exponent, may be negative */
    KbQuantityFormat format; /* from the suffix; drives canonical formatting */
} KbQuantity;

/*
 * Parse @s. On error returns FALSE with KB_ERROR_DECODE and a message quoting @s
 * ("invalid quantity \"12Qi\": unknown suffix \"Qi\""); values beyond what apimachinery accepts
 * (more than 2^63-1 after scaling to the smallest unit used here) fail with "overflow".
 */
gboolean kb_quantity_parse(const char *s, KbQuantity *out, GError **error);

/* The value rounded up to milli-units (MilliValue()); saturates at G_MAXINT64. */
gint64 kb_quantity_milli_value(const KbQuantity *q);

/* The value rounded up to whole units (Value()); saturates at G_MAXINT64. */
gint64 kb_quantity_value(const KbQuantity *q);

/* Canonical string as apimachinery's Quantity.String(): "100m", "1500m", "2Gi", "1k", "1e3". */
char *kb_quantity_format(const KbQuantity *q);

/* Shortcuts: parse and round (up) to milli-units or to whole units. */
gboolean kb_quantity_parse_milli(const char *s, gint64 *out, GError **error);
gboolean kb_quantity_parse_value(const char *s, gint64 *out, GError **error);
