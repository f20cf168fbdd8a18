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
 *
 * As apimachinery: values are rounded up (away from zero) to nano-units ("0.5n" -> "1n"); binary
 * values above 2^63-1 are capped there ("9Ei"); a binary value between 0 and 1 becomes DecimalSI;
 * "1." and "1.G" are accepted (apimachinery's tests do), exponents beyond +-(2^31-1) are not.
 * Stricter than apimachinery's scanner: a number needs a digit (".", "-", "m", "Ki" fail where
 * apimachinery reads them as zero), and a decimal value needing more than 19 significant digits
 * fails with "overflow" (apimachinery falls back to big decimals), as does one whose normalized
 * exponent passes 2^31-1 ("10e2147483647": its canonical string could not be parsed back).
 * Not reproduced: String() of a canonical input echoing it verbatim ("+1Ki", "01Ki").
 * A parsed quantity is normalized: unscaled has no trailing decimal zeros, so equal values
 * parsed from equivalent strings compare equal field by field (format aside).
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

/* The value rounded up (away from zero) to milli-units (MilliValue()); saturates at
 * G_MAXINT64 (-G_MAXINT64 for negative values). */
gint64 kb_quantity_milli_value(const KbQuantity *q);

/* The value rounded up (away from zero) to whole units (Value()); saturates as above. */
gint64 kb_quantity_value(const KbQuantity *q);

/* Canonical string as apimachinery's Quantity.String(): "100m", "1500m", "2Gi", "1k", "1e3".
 * Newly allocated. */
char *kb_quantity_format(const KbQuantity *q);

/* Shortcuts: parse and round (up) to milli-units or to whole units. */
gboolean kb_quantity_parse_milli(const char *s, gint64 *out, GError **error);
gboolean kb_quantity_parse_value(const char *s, gint64 *out, GError **error);
