/* Semantic versions and quantities as CEL's Kubernetes libraries compare them. */
#include "kube/kb-cel-internal.h"

#include <string.h>

const char *const cel_type_names[] = {
        [TY_DYN] = "dyn",
        [TY_NULL] = "null_type",
        [TY_BOOL] = "bool",
        [TY_INT] = "int",
        [TY_UINT] = "uint",
        [TY_DOUBLE] = "double",
        [TY_STRING] = "string",
        [TY_LIST] = "list",
        [TY_QUANTITY] = "kubernetes.Quantity",
        [TY_SEMVER] = "kubernetes.Semver",
        [TY_DEVICE] = "kubernetes.DRADevice",
        [TY_ATTRS] = "map(string, map(string, dyn))",
        [TY_CAPS] = "map(string, map(string, kubernetes.Quantity))",
        [TY_ATTR_DOMAIN] = "map(string, dyn)",
        [TY_CAP_DOMAIN] = "map(string, kubernetes.Quantity)",
};

/* ---- semantic versions (blang/semver's strict Parse, as Kubernetes' semver library) ------ */

static gboolean is_alnum_hyphen(const char *s, gsize n)
{
    if (n == 0)
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!g_ascii_isalnum(s[i]) && s[i] != '-')
            return FALSE;
    return TRUE;
}

static gboolean is_digits(const char *s, gsize n)
{
    if (n == 0)
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!g_ascii_isdigit(s[i]))
            return FALSE;
    return TRUE;
}

/* A version number: digits, no leading zero, within 64 bits. */
static gboolean semver_number(const char *s, gsize n, guint64 *out)
{
    if (!is_digits(s, n) || (n > 1 && s[0] == '0'))
        return FALSE;
    guint64 v = 0;
    for (gsize i = 0; i < n; i++) {
        guint d = (guint)(s[i] - '0');
        if (v > (G_MAXUINT64 - d) / 10)
            return FALSE;
        v = v * 10 + d;
    }
    *out = v;
    return TRUE;
}

/* Each dot-separated identifier of a pre-release (@pre) or build (!@pre) part. */
static gboolean semver_idents(const char *s, gsize n, gboolean pre)
{
    gsize start = 0;
    for (gsize i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        const char *id = s + start;
        gsize len = i - start;
        if (!is_alnum_hyphen(id, len))
            return FALSE;
        if (pre && is_digits(id, len) && len > 1 && id[0] == '0')
            return FALSE;
        start = i + 1;
    }
    return TRUE;
}

/* Parses "MAJOR.MINOR.PATCH[-PRE][+BUILD]"; out->pre borrows from @s. */
gboolean cel_semver_parse(const char *s, gsize n, Semver *out)
{
    const char *dot1 = memchr(s, '.', n);
    if (dot1 == NULL)
        return FALSE;
    const char *dot2 = memchr(dot1 + 1, '.', n - (gsize)(dot1 + 1 - s));
    if (dot2 == NULL)
        return FALSE;
    const char *rest = dot2 + 1;
    gsize rest_n = n - (gsize)(rest - s);
    const char *plus = memchr(rest, '+', rest_n);
    gsize patch_pre_n = plus != NULL ? (gsize)(plus - rest) : rest_n;
    if (plus != NULL && !semver_idents(plus + 1, rest_n - patch_pre_n - 1, FALSE))
        return FALSE;
    const char *minus = memchr(rest, '-', patch_pre_n);
    gsize patch_n = minus != NULL ? (gsize)(minus - rest) : patch_pre_n;
    out->pre = NULL;
    out->pre_len = 0;
    if (minus != NULL) {
        gsize pre_n = patch_pre_n - patch_n - 1;
        if (pre_n > G_MAXUINT32 || !semver_idents(minus + 1, pre_n, TRUE))
            return FALSE;
        out->pre = minus + 1;
        out->pre_len = (guint32)pre_n;
    }
    return semver_number(s, (gsize)(dot1 - s), &out->major) &&
           semver_number(dot1 + 1, (gsize)(dot2 - dot1 - 1), &out->minor) &&
           semver_number(rest, patch_n, &out->patch);
}

/* The normalization semver(s, true) applies: no "v" prefix, missing minor and patch filled
 * with 0, leading zeros dropped. Returns a new string, or NULL when a short version carries
 * pre-release or build data. */
char *cel_semver_normalize(const char *s, gsize n)
{
    if (n > 0 && s[0] == 'v') {
        s++;
        n--;
    }
    g_autoptr(GString) out = g_string_new(NULL);
    guint parts = 0;
    gsize start = 0;
    for (gsize i = 0; i <= n; i++) {
        if (i < n && (s[i] != '.' || parts == 2))
            continue;
        const char *part = s + start;
        gsize len = i - start;
        if (len > 1) {
            while (len > 0 && part[0] == '0') {
                part++;
                len--;
            }
            if (len == 0 || !g_ascii_isdigit(part[0]))
                g_string_append_c(out, '0');
        }
        if (parts > 0)
            g_string_append_c(out, '.');
        g_string_append_len(out, part, (gssize)len);
        parts++;
        start = i + 1;
        if (i < n && parts == 3)
            break;
    }
    if (parts < 3) {
        const char *last = strrchr(out->str, '.');
        last = last != NULL ? last + 1 : out->str;
        if (strpbrk(last, "+-") != NULL)
            return NULL;
        for (; parts < 3; parts++)
            g_string_append(out, ".0");
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

int cel_cmp_u64(guint64 a, guint64 b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

int cel_semver_compare(const Semver *a, const Semver *b)
{
    int c = cel_cmp_u64(a->major, b->major);
    if (c == 0)
        c = cel_cmp_u64(a->minor, b->minor);
    if (c == 0)
        c = cel_cmp_u64(a->patch, b->patch);
    if (c != 0)
        return c;
    if (a->pre_len == 0 || b->pre_len == 0)
        return a->pre_len == b->pre_len ? 0 : a->pre_len == 0 ? 1 : -1;
    gsize i = 0, j = 0;
    while (i < a->pre_len && j < b->pre_len) {
        gsize ie = i, je = j;
        while (ie < a->pre_len && a->pre[ie] != '.')
            ie++;
        while (je < b->pre_len && b->pre[je] != '.')
            je++;
        gboolean an = is_digits(a->pre + i, ie - i), bn = is_digits(b->pre + j, je - j);
        if (an && bn) {
            guint64 x = 0, y = 0;
            semver_number(a->pre + i, ie - i, &x);
            semver_number(b->pre + j, je - j, &y);
            c = cel_cmp_u64(x, y);
        } else if (an != bn) {
            c = an ? -1 : 1;
        } else {
            gsize la = ie - i, lb = je - j;
            c = memcmp(a->pre + i, b->pre + j, MIN(la, lb));
            c = c != 0 ? (c < 0 ? -1 : 1) : cel_cmp_u64(la, lb);
        }
        if (c != 0)
            return c;
        i = ie + 1;
        j = je + 1;
    }
    return i < a->pre_len ? 1 : j < b->pre_len ? -1 : 0;
}

/* ---- quantities ------------------------------------------------------------------------- */

static guint digits10(guint64 v)
{
    guint d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* Compares two quantities by value (unscaled * 10^scale), exactly. */
int cel_quantity_compare(const KbQuantity *a, const KbQuantity *b)
{
    int sa = a->unscaled > 0 ? 1 : a->unscaled < 0 ? -1 : 0;
    int sb = b->unscaled > 0 ? 1 : b->unscaled < 0 ? -1 : 0;
    if (sa != sb || sa == 0)
        return sa < sb ? -1 : sa > sb ? 1 : 0;
    guint64 ma = a->unscaled < 0 ? 0 - (guint64)a->unscaled : (guint64)a->unscaled;
    guint64 mb = b->unscaled < 0 ? 0 - (guint64)b->unscaled : (guint64)b->unscaled;
    guint da = digits10(ma), db = digits10(mb);
    /* Order of magnitude first: the position of the leading digit. */
    gint64 ea = (gint64)da + a->scale, eb = (gint64)db + b->scale;
    int c;
    if (ea != eb) {
        c = ea < eb ? -1 : 1;
    } else {
        /* Same magnitude: pad the shorter to the same number of digits (at most 19: fits). */
        for (; da < db; da++)
            ma *= 10;
        for (; db < da; db++)
            mb *= 10;
        c = cel_cmp_u64(ma, mb);
    }
    return sa > 0 ? c : -c;
}

/* The quantity as an int64 when it is a whole number in range (apimachinery's AsInt64). */
gboolean cel_quantity_as_int64(const KbQuantity *q, gint64 *out)
{
    gint64 v = q->unscaled;
    gint32 scale = q->scale;
    for (; scale < 0 && v % 10 == 0 && v != 0; scale++)
        v /= 10;
    if (scale < 0 && v != 0)
        return FALSE;
    for (gint32 i = 0; i < scale && v != 0; i++)
        if (__builtin_mul_overflow(v, 10, &v))
            return FALSE;
    *out = v;
    return TRUE;
}
