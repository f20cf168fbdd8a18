#include "kube/kb-cel-internal.h"

#include <string.h>

/* ---- regular expressions ---------------------------------------------------------------- */

/*
 * CEL's matches() is RE2. GRegex is PCRE, which agrees with RE2 on a core and differs around
 * it, so a pattern is accepted only when built from that core, and translated where the two
 * spell the same thing differently:
 *   literals (any UTF-8), ".", "^", "$" (PCRE's $ also before a final newline: we compile
 *   with DOLLAR_ENDONLY), groups "(...)" and "(?:...)", "|", quantifiers * + ? {n} {n,}
 *   {n,m} (n, m <= 1000) with an optional lazy "?", classes [...] and [^...] of literals and
 *   ranges, escapes \d \w \s \D \W \S (written out as ASCII classes, as RE2 reads them),
 *   \t \n \r \f and an escaped punctuation character.
 * Refused by name: other escapes (\b \v \pL \Q \1 \A \z ...), "(?" flags and lookarounds,
 * [:classes:], possessive quantifiers, a quantifier with nothing to repeat, and a quantifier
 * on a group that holds a quantifier or an alternation (PCRE backtracks on those where RE2
 * runs in linear time).
 */
typedef struct {
    const char *re;
    gsize n, i;
    GString *out;
    const char *why; /* set when refused */
} Rx;

static gboolean rx_refuse(Rx *rx, const char *why)
{
    rx->why = why;
    return FALSE;
}

/* An escape at rx->re[rx->i] (after the backslash); @in_class: inside [...]. */
static gboolean rx_escape(Rx *rx, gboolean in_class)
{
    if (rx->i >= rx->n)
        return rx_refuse(rx, "trailing backslash");
    char e = rx->re[rx->i++];
    const char *cls = e == 'd'   ? "0-9"
                      : e == 'w' ? "0-9A-Za-z_"
                      : e == 's' ? "\\t\\n\\f\\r "
                                 : NULL;
    if (cls != NULL) {
        g_string_append_printf(rx->out, in_class ? "%s" : "[%s]", cls);
        return TRUE;
    }
    const char *neg = e == 'D'   ? "0-9"
                      : e == 'W' ? "0-9A-Za-z_"
                      : e == 'S' ? "\\t\\n\\f\\r "
                                 : NULL;
    if (neg != NULL) {
        if (in_class)
            return rx_refuse(rx, "negated escape (\\D, \\W, \\S) inside a class");
        g_string_append_printf(rx->out, "[^%s]", neg);
        return TRUE;
    }
    if (strchr("tnrf", e) != NULL || (g_ascii_ispunct(e) && e != '\0')) {
        g_string_append_c(rx->out, '\\');
        g_string_append_c(rx->out, e);
        return TRUE;
    }
    return rx_refuse(rx, "escape other than \\d \\w \\s \\D \\W \\S \\t \\n \\r \\f or "
                         "escaped punctuation");
}

/* One literal item of a class (a character, possibly escaped); *@single: it was one char. */
static gboolean rx_class_item(Rx *rx, gboolean *single)
{
    char c = rx->re[rx->i];
    *single = FALSE;
    if (c == '\\') {
        rx->i++;
        char e = rx->i < rx->n ? rx->re[rx->i] : '\0';
        *single = strchr("dwsDWS", e) == NULL;
        return rx_escape(rx, TRUE);
    }
    if (c == '[') {
        if (rx->i + 1 < rx->n && strchr(":.=", rx->re[rx->i + 1]) != NULL)
            return rx_refuse(rx, "[:class:] inside a class");
        g_string_append(rx->out, "\\[");
        rx->i++;
        *single = TRUE;
        return TRUE;
    }
    gsize len = 1;
    while (rx->i + len < rx->n && ((guchar)rx->re[rx->i + len] & 0xC0) == 0x80)
        len++;
    g_string_append_len(rx->out, rx->re + rx->i, (gssize)len);
    rx->i += len;
    *single = TRUE;
    return TRUE;
}

static gboolean rx_class(Rx *rx)
{
    g_string_append_c(rx->out, '[');
    rx->i++;
    if (rx->i < rx->n && rx->re[rx->i] == '^') {
        g_string_append_c(rx->out, '^');
        rx->i++;
    }
    if (rx->i < rx->n && rx->re[rx->i] == ']')
        return rx_refuse(rx, "\"]\" first in a class");
    gboolean prev_single = FALSE, empty = TRUE;
    while (rx->i < rx->n && rx->re[rx->i] != ']') {
        if (rx->re[rx->i] == '-') {
            gboolean last = rx->i + 1 < rx->n && rx->re[rx->i + 1] == ']';
            rx->i++;
            if (empty || last) {
                g_string_append(rx->out, "\\-");
                prev_single = FALSE;
                empty = FALSE;
                continue;
            }
            if (!prev_single || rx->i >= rx->n || rx->re[rx->i] == '[')
                return rx_refuse(rx, "\"-\" that is neither a range nor first or last in a class");
            g_string_append_c(rx->out, '-');
            gboolean single;
            if (!rx_class_item(rx, &single))
                return FALSE;
            if (!single)
                return rx_refuse(rx, "a range ending in a class escape");
            prev_single = FALSE;
            continue;
        }
        if (!rx_class_item(rx, &prev_single))
            return FALSE;
        empty = FALSE;
    }
    if (rx->i >= rx->n)
        return rx_refuse(rx, "unterminated class");
    g_string_append_c(rx->out, ']');
    rx->i++;
    return TRUE;
}

/* "{n}", "{n,}" or "{n,m}" at rx->i; anything else after "{" is refused (RE2 reads it as a
 * literal, recent PCRE as a quantifier). */
static gboolean rx_braces(Rx *rx)
{
    gsize i = rx->i + 1;
    guint lo = 0, hi = 0;
    gsize start = i;
    for (; i < rx->n && g_ascii_isdigit(rx->re[i]) && i - start < 5; i++)
        lo = lo * 10 + (guint)(rx->re[i] - '0');
    if (i == start)
        return rx_refuse(rx, "\"{\" that does not start a repetition {n}, {n,} or {n,m}");
    hi = lo;
    if (i < rx->n && rx->re[i] == ',') {
        i++;
        gsize hstart = i;
        hi = G_MAXUINT;
        if (i < rx->n && g_ascii_isdigit(rx->re[i])) {
            for (hi = 0; i < rx->n && g_ascii_isdigit(rx->re[i]) && i - hstart < 5; i++)
                hi = hi * 10 + (guint)(rx->re[i] - '0');
        }
    }
    if (i >= rx->n || rx->re[i] != '}')
        return rx_refuse(rx, "\"{\" that does not start a repetition {n}, {n,} or {n,m}");
    if (lo > 1000 || (hi != G_MAXUINT && (hi > 1000 || hi < lo)))
        return rx_refuse(rx, "repetition count above 1000 or out of order");
    g_string_append_len(rx->out, rx->re + rx->i, (gssize)(i + 1 - rx->i));
    rx->i = i + 1;
    return TRUE;
}

typedef enum { RX_NONE, RX_ATOM, RX_GROUP, RX_ANCHOR, RX_QUANT } RxLast;

/* A quantifier at rx->i, after an item of kind @last (@group_complex: a group holding a
 * quantifier or an alternation). */
static gboolean rx_quantifier(Rx *rx, RxLast last, gboolean group_complex)
{
    if (last != RX_ATOM && last != RX_GROUP)
        return rx_refuse(rx, last == RX_QUANT ? "repeated or possessive quantifier"
                                              : "quantifier with nothing to repeat");
    if (last == RX_GROUP && group_complex)
        return rx_refuse(rx, "quantifier on a group that holds a quantifier or \"|\"");
    if (rx->re[rx->i] == '{') {
        if (!rx_braces(rx))
            return FALSE;
    } else {
        g_string_append_c(rx->out, rx->re[rx->i++]);
    }
    if (rx->i < rx->n && rx->re[rx->i] == '?') {
        g_string_append_c(rx->out, '?');
        rx->i++;
    }
    return TRUE;
}

static gboolean rx_translate(Rx *rx)
{
    /* Per open group: whether it holds a quantifier or an alternation. */
    gboolean complex[KB_CEL_MAX_DEPTH + 1] = {FALSE};
    guint depth = 0;
    RxLast last = RX_NONE;
    gboolean last_group_complex = FALSE;
    while (rx->i < rx->n) {
        char c = rx->re[rx->i];
        if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (!rx_quantifier(rx, last, last_group_complex))
                return FALSE;
            complex[depth] = TRUE;
            last = RX_QUANT;
            continue;
        }
        switch (c) {
        case '\\':
            rx->i++;
            if (!rx_escape(rx, FALSE))
                return FALSE;
            last = RX_ATOM;
            break;
        case '[':
            if (!rx_class(rx))
                return FALSE;
            last = RX_ATOM;
            break;
        case '(':
            if (rx->i + 1 < rx->n && rx->re[rx->i + 1] == '?') {
                if (rx->i + 2 >= rx->n || rx->re[rx->i + 2] != ':')
                    return rx_refuse(rx, "\"(?\" other than \"(?:\" (flags, lookaround, names)");
                g_string_append(rx->out, "(?:");
                rx->i += 3;
            } else {
                g_string_append_c(rx->out, '(');
                rx->i++;
            }
            if (++depth > KB_CEL_MAX_DEPTH)
                return rx_refuse(rx, "groups nested too deeply");
            complex[depth] = FALSE;
            last = RX_NONE;
            break;
        case ')':
            if (depth == 0)
                return rx_refuse(rx, "unbalanced \")\"");
            last_group_complex = complex[depth];
            depth--;
            complex[depth] = complex[depth] || last_group_complex;
            g_string_append_c(rx->out, ')');
            rx->i++;
            last = RX_GROUP;
            break;
        case '|':
            complex[depth] = TRUE;
            g_string_append_c(rx->out, '|');
            rx->i++;
            last = RX_NONE;
            break;
        case '^':
        case '$':
            g_string_append_c(rx->out, c);
            rx->i++;
            last = RX_ANCHOR;
            break;
        case '}':
            g_string_append(rx->out, "\\}");
            rx->i++;
            last = RX_ATOM;
            break;
        default: {
            gsize len = 1;
            while (rx->i + len < rx->n && ((guchar)rx->re[rx->i + len] & 0xC0) == 0x80)
                len++;
            g_string_append_len(rx->out, rx->re + rx->i, (gssize)len);
            rx->i += len;
            last = RX_ATOM;
        }
        }
    }
    if (depth != 0)
        return rx_refuse(rx, "missing \")\"");
    return TRUE;
}

/* Compiles an RE2 pattern from the subset above. NULL with a KB_CEL_ERROR_UNSUPPORTED error
 * when outside it, KB_CEL_ERROR_SYNTAX when invalid. */
GRegex *cel_regex_compile(const char *re, gsize n, int *code, char **why)
{
    g_autoptr(GString) out = g_string_new(NULL);
    Rx rx = {.re = re, .n = n, .out = out};
    if (memchr(re, '\0', n) != NULL) {
        *code = KB_CEL_ERROR_UNSUPPORTED;
        *why = g_strdup("NUL in a pattern");
        return NULL;
    }
    if (!rx_translate(&rx)) {
        *code = KB_CEL_ERROR_UNSUPPORTED;
        *why = g_strdup(rx.why);
        return NULL;
    }
    g_autoptr(GError) error = NULL;
    GRegex *regex = g_regex_new(out->str, G_REGEX_DOLLAR_ENDONLY | G_REGEX_NEWLINE_LF, 0, &error);
    if (regex == NULL) {
        *code = KB_CEL_ERROR_SYNTAX;
        *why = g_strdup(error->message);
    }
    return regex;
}
