/*
 * Kubernetes resource quantities; see kb-quantity.h.
 *
 * Parsing follows apimachinery's ParseQuantity: the same scanner (sign, digits, optional
 * fraction, suffix), the same suffix table, values rounded up (away from zero) to nano-units,
 * binary values capped at 2^63-1 and binary values between 0 and 1 turned DecimalSI. The value is
 * computed exactly on a little-endian array of decimal digits (a binary suffix multiplies it by
 * 2^10n by repeated doubling), so no input, however long, loses precision before the final
 * rounding. Formatting follows Quantity.String() (CanonicalizeBytes).
 */
#include "kube/kb-quantity.h"

#include <string.h>

#include "kube/kb-error.h"

/* The smallest unit a parsed quantity keeps: nano (10^-9), as apimachinery. */
#define NANO_SCALE (-9)
/* Inputs up to this many digits are handled on the stack. */
#define STACK_DIGITS 96

typedef struct {
    gboolean negative;
    const char *num; /* integer digits, leading zeros stripped; may be empty */
    gsize num_len;
    const char *denom; /* fraction digits; may be empty */
    gsize denom_len;
    const char *suffix;
    gsize suffix_len;
} Lexed;

/* An exact non-negative decimal: digits little-endian (d[0] is the 10^scale digit). */
typedef struct {
    guint8 *d;
    gsize n;
    gsize cap;
    gint64 scale;
} Digits;

static gboolean is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static gboolean is_suffix_char(char c)
{
    return c != '\0' && strchr("eEinumkKMGTP", c) != NULL;
}

static gboolean fail(GError **error, const char *s, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean fail(GError **error, const char *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "invalid quantity \"%s\": %s", s, why);
    return FALSE;
}

/*
 * apimachinery's parseQuantityString, except that a number must have at least one digit:
 * apimachinery's scanner lets ".", "+", "m" and "Ki" through as zero, which its documented
 * grammar (<digits> | <digits>.<digits> | <digits>. | .<digits>) does not allow.
 */
static gboolean lex(const char *s, Lexed *lx, GError **error)
{
    const char *p = s;

    memset(lx, 0, sizeof(*lx));
    if (*p == '-' || *p == '+') {
        lx->negative = *p == '-';
        p++;
    }
    const char *digits_start = p;
    while (*p == '0')
        p++;
    lx->num = p;
    while (is_digit(*p))
        p++;
    lx->num_len = (gsize)(p - lx->num);
    gboolean any_digit = p > digits_start;
    if (*p == '.') {
        p++;
        lx->denom = p;
        while (is_digit(*p))
            p++;
        lx->denom_len = (gsize)(p - lx->denom);
        any_digit = any_digit || lx->denom_len > 0;
    }
    if (!any_digit) {
        if (*p == '-' || *p == '+')
            return fail(error, s, "misplaced sign");
        return fail(error, s, "no digits");
    }
    lx->suffix = p;
    while (is_suffix_char(*p))
        p++;
    if (*p == '-' || *p == '+')
        p++;
    while (is_digit(*p))
        p++;
    lx->suffix_len = (gsize)(p - lx->suffix);
    if (*p != '\0') {
        if (*lx->suffix == '-' || *lx->suffix == '+' || *p == '-' || *p == '+')
            return fail(error, s, "misplaced sign");
        if (*p == '.')
            return fail(error, s, "more than one decimal point");
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            return fail(error, s, "contains white space");
        return fail(error, s, "unknown suffix \"%s\"", lx->suffix);
    }
    return TRUE;
}

/* apimachinery's suffixHandler.interpret(): base 10 or 2, the exponent and the format. */
static gboolean interpret_suffix(const char *sfx, gsize len, int *base, gint64 *exponent,
                                 KbQuantityFormat *format)
{
    static const struct {
        const char *s;
        int base;
        int exponent;
    } table[] = {
        {"", 10, 0},   {"n", 10, -9},  {"u", 10, -6},  {"m", 10, -3},  {"k", 10, 3},
        {"M", 10, 6},  {"G", 10, 9},   {"T", 10, 12},  {"P", 10, 15},  {"E", 10, 18},
        {"Ki", 2, 10}, {"Mi", 2, 20},  {"Gi", 2, 30},  {"Ti", 2, 40},  {"Pi", 2, 50},
        {"Ei", 2, 60},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
        if (strlen(table[i].s) == len && strncmp(table[i].s, sfx, len) == 0) {
            *base = table[i].base;
            *exponent = table[i].exponent;
            *format = table[i].base == 2 ? KB_QUANTITY_BINARY_SI : KB_QUANTITY_DECIMAL_SI;
            return TRUE;
        }
    }
    if (len < 2 || (sfx[0] != 'e' && sfx[0] != 'E'))
        return FALSE;
    /* e<signedNumber>; apimachinery rejects exponents outside [-MaxInt32, MaxInt32]. */
    gsize i = 1;
    gboolean neg = FALSE;
    if (sfx[i] == '-' || sfx[i] == '+')
        neg = sfx[i++] == '-';
    if (i == len)
        return FALSE;
    gint64 e = 0;
    for (; i < len; i++) {
        if (!is_digit(sfx[i]))
            return FALSE;
        e = e * 10 + (sfx[i] - '0');
        if (e > G_MAXINT32)
            return FALSE;
    }
    *base = 10;
    *exponent = neg ? -e : e;
    *format = KB_QUANTITY_DECIMAL_EXPONENT;
    return TRUE;
}

static void digits_double(Digits *dg)
{
    guint carry = 0;
    for (gsize i = 0; i < dg->n; i++) {
        guint v = dg->d[i] * 2u + carry;
        dg->d[i] = (guint8)(v % 10);
        carry = v / 10;
    }
    if (carry != 0)
        dg->d[dg->n++] = (guint8)carry;
}

static void digits_trim_high(Digits *dg)
{
    while (dg->n > 0 && dg->d[dg->n - 1] == 0)
        dg->n--;
}

/* Add one unit in the lowest place (used for rounding up). */
static void digits_increment(Digits *dg)
{
    for (gsize i = 0; i < dg->n; i++) {
        if (dg->d[i] < 9) {
            dg->d[i]++;
            return;
        }
        dg->d[i] = 0;
    }
    dg->d[dg->n++] = 1;
}

/* Drop the @k lowest digits, rounding the magnitude up when any of them is non-zero. */
static void digits_drop_round_up(Digits *dg, gsize k)
{
    if (k >= dg->n) {
        /* Every digit is dropped from a non-zero value: the result is one unit. */
        dg->d[0] = 1;
        dg->n = 1;
        dg->scale += (gint64)k;
        return;
    }
    gboolean inexact = FALSE;
    for (gsize i = 0; i < k; i++)
        inexact = inexact || dg->d[i] != 0;
    memmove(dg->d, dg->d + k, dg->n - k);
    dg->n -= k;
    dg->scale += (gint64)k;
    if (inexact)
        digits_increment(dg);
}

/* The digits as an integer, or FALSE when it does not fit in 0..G_MAXINT64. */
static gboolean digits_to_int64(const Digits *dg, gint64 *out)
{
    guint64 v = 0;
    if (dg->n > 19)
        return FALSE;
    for (gsize i = dg->n; i > 0; i--)
        v = v * 10 + dg->d[i - 1];
    if (v > (guint64)G_MAXINT64)
        return FALSE;
    *out = (gint64)v;
    return TRUE;
}

/* Compare the whole-unit part of @dg (scale <= 0) with G_MAXINT64: TRUE when it is larger. */
static gboolean digits_exceed_max(const Digits *dg)
{
    static const char max[] = "9223372036854775807";
    gsize frac = (gsize)(-dg->scale);
    gsize int_len = dg->n > frac ? dg->n - frac : 0;
    if (int_len != sizeof(max) - 1)
        return int_len > sizeof(max) - 1;
    for (gsize i = 0; i < int_len; i++) {
        int c = dg->d[dg->n - 1 - i] - (max[i] - '0');
        if (c != 0)
            return c > 0;
    }
    /* Equal whole part: larger when any fractional digit is non-zero. */
    for (gsize i = 0; i < frac && i < dg->n; i++) {
        if (dg->d[i] != 0)
            return TRUE;
    }
    return FALSE;
}

/* Load num and denom digits (little-endian) and apply the suffix. */
static void digits_load(Digits *dg, const Lexed *lx, int base, gint64 exponent)
{
    gsize n = 0;
    for (gsize i = lx->denom_len; i > 0; i--)
        dg->d[n++] = (guint8)(lx->denom[i - 1] - '0');
    for (gsize i = lx->num_len; i > 0; i--)
        dg->d[n++] = (guint8)(lx->num[i - 1] - '0');
    dg->n = n;
    dg->scale = -(gint64)lx->denom_len;
    digits_trim_high(dg);
    if (base == 10) {
        dg->scale += exponent;
    } else {
        for (gint64 i = 0; i < exponent && dg->n > 0; i++)
            digits_double(dg);
    }
}

/* Move low zero digits into the scale (normal form). */
static void digits_strip_zeros(Digits *dg)
{
    gsize zeros = 0;
    while (zeros < dg->n && dg->d[zeros] == 0)
        zeros++;
    if (zeros > 0) {
        memmove(dg->d, dg->d + zeros, dg->n - zeros);
        dg->n -= zeros;
        dg->scale += (gint64)zeros;
    }
}

/* Rounding, capping and the fit into an int64 mantissa, on a non-zero value. */
static gboolean digits_finish(Digits *dg, const char *s, KbQuantity *out, GError **error)
{
    if (dg->scale < NANO_SCALE)
        digits_drop_round_up(dg, (gsize)(NANO_SCALE - dg->scale));
    if (out->format == KB_QUANTITY_BINARY_SI) {
        if (digits_exceed_max(dg)) {
            /* apimachinery caps binary quantities at 2^63-1 rather than failing. */
            out->unscaled = G_MAXINT64;
            out->scale = 0;
            return TRUE;
        }
        if ((gint64)dg->n + dg->scale <= 0)
            out->format = KB_QUANTITY_DECIMAL_SI; /* 0 < value < 1: shown in m/u/n */
    }
    digits_strip_zeros(dg);
    if (!digits_to_int64(dg, &out->unscaled)) {
        if (out->format != KB_QUANTITY_BINARY_SI || dg->scale >= 0)
            return fail(error, s, "overflow (more than 19 significant digits)");
        /* A binary value below 2^63 whose fraction does not fit: whole units, rounded up. */
        digits_drop_round_up(dg, (gsize)(-dg->scale));
        digits_strip_zeros(dg);
        if (!digits_to_int64(dg, &out->unscaled))
            out->unscaled = G_MAXINT64;
    }
    /* Normalized, the exponent must fit an int32 so that the canonical string parses back. */
    if (dg->scale > G_MAXINT32)
        return fail(error, s, "overflow (exponent too large)");
    out->scale = (gint32)dg->scale;
    return TRUE;
}

/*
 * The common case without the digit array: at most 18 digits, a decimal value needing no rounding
 * or a whole binary value that fits. Same results as the general path (which the tests and the
 * fuzz target compare through normalization); FALSE when the general path must decide.
 */
static gboolean parse_fast(const Lexed *lx, int base, gint64 exponent, KbQuantity *q)
{
    gint64 m = 0, scale;
    if (lx->num_len + lx->denom_len > 18 || (base == 2 && lx->denom_len > 0))
        return FALSE;
    for (gsize i = 0; i < lx->num_len; i++)
        m = m * 10 + (lx->num[i] - '0');
    for (gsize i = 0; i < lx->denom_len; i++)
        m = m * 10 + (lx->denom[i] - '0');
    if (base == 2) {
        if (m != 0 && (m >> (62 - exponent)) != 0)
            return FALSE; /* past 2^62: let the general path cap it */
        m <<= exponent;
        scale = 0;
    } else {
        scale = exponent - (gint64)lx->denom_len;
        if (m != 0 && scale < NANO_SCALE)
            return FALSE;
    }
    if (m == 0) {
        q->unscaled = 0;
        q->scale = 0;
    } else {
        while (m % 10 == 0) {
            m /= 10;
            scale++;
        }
        if (scale > G_MAXINT32)
            return FALSE;
        q->unscaled = lx->negative ? -m : m;
        q->scale = (gint32)scale;
    }
    return TRUE;
}

gboolean kb_quantity_parse(const char *s, KbQuantity *out, GError **error)
{
    Lexed lx;
    int base = 10;
    gint64 exponent = 0;
    KbQuantity q = {0, 0, KB_QUANTITY_DECIMAL_SI};

    if (s == NULL || *s == '\0')
        return fail(error, s != NULL ? s : "", "empty");
    if (!lex(s, &lx, error))
        return FALSE;
    if (!interpret_suffix(lx.suffix, lx.suffix_len, &base, &exponent, &q.format))
        return fail(error, s, "unknown suffix \"%.*s\"", (int)lx.suffix_len, lx.suffix);

    if (parse_fast(&lx, base, exponent, &q)) {
        *out = q;
        return TRUE;
    }
    /* Room for the digits plus the growth of a binary multiplier (2^60 < 10^19). */
    guint8 stack[STACK_DIGITS];
    g_autofree guint8 *heap = NULL;
    Digits dg = {stack, 0, sizeof(stack), 0};
    gsize need = lx.num_len + lx.denom_len + 20;
    if (need > dg.cap) {
        heap = g_malloc(need);
        dg.d = heap;
        dg.cap = need;
    }
    digits_load(&dg, &lx, base, exponent);
    if (dg.n > 0 && !digits_finish(&dg, s, &q, error))
        return FALSE;
    if (lx.negative)
        q.unscaled = -q.unscaled;
    *out = q;
    return TRUE;
}

static const guint64 pow10_u64[] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
    10000000000000000000ull,
};

static guint64 magnitude(gint64 v)
{
    return v < 0 ? (guint64)0 - (guint64)v : (guint64)v;
}

/* ceil(|q| / 10^target) with the sign of q, saturating at +-G_MAXINT64 (ScaledValue()). */
static gint64 scaled_value(const KbQuantity *q, gint64 target)
{
    guint64 mag = magnitude(q->unscaled);
    guint64 r;
    gint64 diff = (gint64)q->scale - target;

    if (mag == 0)
        return 0;
    if (diff >= 0) {
        if (diff >= (gint64)G_N_ELEMENTS(pow10_u64) ||
            __builtin_mul_overflow(mag, pow10_u64[diff], &r))
            r = G_MAXUINT64;
    } else if (-diff >= (gint64)G_N_ELEMENTS(pow10_u64)) {
        r = 1; /* |unscaled| < 10^19: a non-zero remainder only */
    } else {
        guint64 p = pow10_u64[-diff];
        r = mag / p + (mag % p != 0 ? 1 : 0);
    }
    if (r > (guint64)G_MAXINT64)
        r = G_MAXINT64;
    return q->unscaled < 0 ? -(gint64)r : (gint64)r;
}

gint64 kb_quantity_milli_value(const KbQuantity *q)
{
    return scaled_value(q, -3);
}

gint64 kb_quantity_value(const KbQuantity *q)
{
    return scaled_value(q, 0);
}

/* The value in whole units when it is an exact integer that fits, for BinarySI formatting. */
static gboolean exact_units(const KbQuantity *q, guint64 *units)
{
    guint64 mag = magnitude(q->unscaled);
    if (q->scale >= 0) {
        return q->scale < (gint32)G_N_ELEMENTS(pow10_u64) &&
               !__builtin_mul_overflow(mag, pow10_u64[q->scale], units) &&
               *units <= (guint64)G_MAXINT64;
    }
    if (-q->scale >= (gint32)G_N_ELEMENTS(pow10_u64))
        return FALSE;
    guint64 p = pow10_u64[-q->scale];
    if (mag % p != 0)
        return FALSE;
    *units = mag / p;
    return TRUE;
}

static const char *decimal_si_suffix(gint64 exponent)
{
    static const char *const sfx[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    if (exponent < -9 || exponent > 18 || exponent % 3 != 0)
        return NULL;
    return sfx[(exponent + 9) / 3];
}

static char *format_binary(gboolean negative, guint64 units)
{
    static const char *const sfx[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    guint i = 0;
    while (i + 1 < G_N_ELEMENTS(sfx) && units % 1024 == 0) {
        units /= 1024;
        i++;
    }
    return g_strdup_printf("%s%" G_GUINT64_FORMAT "%s", negative ? "-" : "", units, sfx[i]);
}

char *kb_quantity_format(const KbQuantity *q)
{
    gboolean negative = q->unscaled < 0;
    guint64 mag = magnitude(q->unscaled);
    gint64 exponent = q->scale;

    if (mag == 0)
        return g_strdup("0");
    if (q->format == KB_QUANTITY_BINARY_SI) {
        guint64 units;
        /* Below 1024 or not a whole number of units: shown as DecimalSI, as apimachinery. */
        if (exact_units(q, &units) && units >= 1024)
            return format_binary(negative, units);
    }
    while (mag % 10 == 0) {
        mag /= 10;
        exponent++;
    }
    /* Make the exponent a multiple of 3 by moving zeros into the mantissa. */
    int pad = (int)(((exponent % 3) + 3) % 3);
    exponent -= pad;
    const char *sfx = NULL;
    if (q->format != KB_QUANTITY_DECIMAL_EXPONENT)
        sfx = decimal_si_suffix(exponent);
    GString *s = g_string_sized_new(24);
    g_string_append_printf(s, "%s%" G_GUINT64_FORMAT "%.*s", negative ? "-" : "", mag, pad, "00");
    if (sfx != NULL)
        g_string_append(s, sfx);
    else if (exponent != 0)
        g_string_append_printf(s, "e%" G_GINT64_FORMAT, exponent);
    return g_string_free(s, FALSE);
}

gboolean kb_quantity_parse_milli(const char *s, gint64 *out, GError **error)
{
    KbQuantity q;
    if (!kb_quantity_parse(s, &q, error))
        return FALSE;
    *out = kb_quantity_milli_value(&q);
    return TRUE;
}

gboolean kb_quantity_parse_value(const char *s, gint64 *out, GError **error)
{
    KbQuantity q;
    if (!kb_quantity_parse(s, &q, error))
        return FALSE;
    *out = kb_quantity_value(&q);
    return TRUE;
}
