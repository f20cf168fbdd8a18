/* Label and field selectors (see kas-select.h). */
#include "testbed/apiserver/kas-select.h"

#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

typedef enum { OP_EXISTS, OP_NOT_EXISTS, OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_GT, OP_LT } SelOp;

typedef struct {
    char *key;
    SelOp op;
    GPtrArray *values; /* char*, owned */
} SelReq;

struct KasSelector {
    GArray *reqs; /* SelReq */
    GPtrArray *keys;
};

static void req_clear(gpointer p)
{
    SelReq *r = p;
    g_free(r->key);
    g_clear_pointer(&r->values, g_ptr_array_unref);
}

static KasSelector *selector_new(void)
{
    KasSelector *sel = g_new0(KasSelector, 1);
    sel->reqs = g_array_new(FALSE, TRUE, sizeof(SelReq));
    g_array_set_clear_func(sel->reqs, req_clear);
    sel->keys = g_ptr_array_new();
    return sel;
}

void kas_selector_free(KasSelector *sel)
{
    if (sel == NULL)
        return;
    g_array_unref(sel->reqs);
    g_ptr_array_unref(sel->keys);
    g_free(sel);
}

gboolean kas_selector_empty(const KasSelector *sel)
{
    return sel == NULL || sel->reqs->len == 0;
}

const char *const *kas_selector_keys(const KasSelector *sel)
{
    return (const char *const *)sel->keys->pdata;
}

static void add_req(KasSelector *sel, char *key, SelOp op, GPtrArray *values)
{
    SelReq r = {key, op, values};
    g_array_append_val(sel->reqs, r);
    g_ptr_array_remove_index(sel->keys, sel->keys->len - 1); /* drop the terminator */
    g_ptr_array_add(sel->keys, key);
    g_ptr_array_add(sel->keys, NULL);
}

static gboolean check_len(const char *text, GError **error)
{
    if (strlen(text) > KAS_SELECTOR_MAX_LEN) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "selector longer than %d characters",
                    KAS_SELECTOR_MAX_LEN);
        return FALSE;
    }
    return TRUE;
}

static gboolean label_key_char(char c)
{
    return g_ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/';
}

static void skip_ws(const char **p)
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
}

static char *read_token(const char **p)
{
    const char *s = *p;
    while (label_key_char(**p))
        (*p)++;
    return g_strndup(s, (gsize)(*p - s));
}

/* "(a, b, c)" */
static GPtrArray *read_set(const char **p, GError **error)
{
    skip_ws(p);
    if (**p != '(') {
        /* At the end of the selector there is no character to show: say so. */
        g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST, "found '%s', expected: '('",
                    **p != '\0' ? *p : "end of selector");
        return NULL;
    }
    (*p)++;
    GPtrArray *values = g_ptr_array_new_with_free_func(g_free);
    for (;;) {
        skip_ws(p);
        char *v = read_token(p);
        g_ptr_array_add(values, v);
        skip_ws(p);
        if (**p == ',') {
            (*p)++;
        } else if (**p == ')') {
            (*p)++;
            return values;
        } else {
            g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                        "found '%s', expected: ',', ')' or identifier", *p);
            g_ptr_array_unref(values);
            return NULL;
        }
    }
}

/* The operator at *@p (=, ==, !=, >, <, in, notin), advancing *@p past it into @op. "in" and
 * "notin" must end at a non-key character, so that "inx" is not read as "in" "x". */
static gboolean read_op(const char **p, SelOp *op, GError **error)
{
    if (g_str_has_prefix(*p, "==")) {
        *op = OP_EQ, *p += 2;
    } else if (g_str_has_prefix(*p, "!=")) {
        *op = OP_NE, *p += 2;
    } else if (**p == '=') {
        *op = OP_EQ, *p += 1;
    } else if (**p == '>' || **p == '<') {
        *op = **p == '>' ? OP_GT : OP_LT, *p += 1;
    } else if (g_str_has_prefix(*p, "notin") && !label_key_char((*p)[5])) {
        *op = OP_NOTIN, *p += 5;
    } else if (g_str_has_prefix(*p, "in") && !label_key_char((*p)[2])) {
        *op = OP_IN, *p += 2;
    } else {
        g_set_error(
                error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                "unable to parse requirement: found '%s', expected: in, notin, =, ==, !=, gt, lt",
                *p);
        return FALSE;
    }
    return TRUE;
}

/* The one value after =, ==, !=, > or < (possibly empty, as in "a="), which for > and < must be
 * an integer. Returns a new array of one string, owned by the caller, or NULL on error. */
static GPtrArray *read_single_value(const char **p, SelOp op, GError **error)
{
    skip_ws(p);
    g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(g_free);
    if (**p != '\0' && strchr("=!()<>", **p) != NULL) {
        /* the lexer's next token is an operator where a value belongs */
        int n = g_str_has_prefix(*p, "==") || g_str_has_prefix(*p, "!=") ? 2 : 1;
        g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                    "unable to parse requirement: found '%.*s', expected: identifier", n, *p);
        return NULL;
    }
    g_ptr_array_add(values, read_token(p));
    if (op == OP_GT || op == OP_LT) {
        char *end = NULL;
        const char *v = g_ptr_array_index(values, 0);
        g_ascii_strtoll(v, &end, 10);
        if (v[0] == '\0' || *end != '\0') {
            g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                        "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be "
                        "an integer");
            return NULL;
        }
    }
    return g_steal_pointer(&values);
}

/* The values of a requirement with operator @op: the "(a, b)" set of in and notin, else one
 * value. Returns a new array owned by the caller, or NULL on error. */
static GPtrArray *read_values(const char **p, SelOp op, GError **error)
{
    if (op != OP_IN && op != OP_NOTIN)
        return read_single_value(p, op, error);
    GPtrArray *values = read_set(p, error);
    if (values == NULL)
        g_prefix_error(error, "unable to parse requirement: ");
    return values;
}

/* One requirement at *@p: "key" or "!key" (exists), else "key <op> values"; added to @sel. */
static gboolean parse_label_req(KasSelector *sel, const char **p, GError **error)
{
    skip_ws(p);
    gboolean negate = FALSE;
    if (**p == '!') {
        negate = TRUE;
        (*p)++;
        skip_ws(p);
    }
    g_autofree char *key = read_token(p);
    if (key[0] == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                    "unable to parse requirement: found '%s', expected: identifier", *p);
        return FALSE;
    }
    skip_ws(p);
    if (negate || **p == ',' || **p == '\0') {
        add_req(sel, g_steal_pointer(&key), negate ? OP_NOT_EXISTS : OP_EXISTS, NULL);
        return TRUE;
    }
    SelOp op;
    if (!read_op(p, &op, error))
        return FALSE;
    GPtrArray *values = read_values(p, op, error);
    if (values == NULL)
        return FALSE;
    add_req(sel, g_steal_pointer(&key), op, values);
    return TRUE;
}

KasSelector *kas_label_selector_parse(const char *text, GError **error)
{
    g_autoptr(KasSelector) sel = selector_new();
    g_ptr_array_add(sel->keys, NULL);
    if (text == NULL)
        return g_steal_pointer(&sel);
    if (!check_len(text, error))
        return NULL;
    const char *p = text;
    skip_ws(&p);
    while (*p != '\0') {
        if (sel->reqs->len >= KAS_SELECTOR_MAX_REQS) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "selector has more than %d requirements",
                        KAS_SELECTOR_MAX_REQS);
            return NULL;
        }
        if (!parse_label_req(sel, &p, error))
            return NULL;
        skip_ws(&p);
        if (*p == ',') {
            p++;
            skip_ws(&p);
            if (*p == '\0') {
                g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                            "found '', expected: identifier after ','");
                return NULL;
            }
        } else if (*p != '\0') {
            g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                        "found '%s', expected: ',' or 'end of string'", p);
            return NULL;
        }
    }
    return g_steal_pointer(&sel);
}

/* Split on unescaped commas, unescaping "\," "\=" "\\" only after the operator. */
KasSelector *kas_field_selector_parse(const char *text, GError **error)
{
    g_autoptr(KasSelector) sel = selector_new();
    g_ptr_array_add(sel->keys, NULL);
    if (text == NULL || text[0] == '\0')
        return g_steal_pointer(&sel);
    if (!check_len(text, error))
        return NULL;
    const char *p = text;
    while (*p != '\0') {
        if (sel->reqs->len >= KAS_SELECTOR_MAX_REQS) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "selector has more than %d requirements",
                        KAS_SELECTOR_MAX_REQS);
            return NULL;
        }
        GString *term = g_string_new(NULL);
        for (; *p != '\0' && *p != ','; p++) {
            if (*p == '\\' && p[1] != '\0')
                g_string_append_c(term, *p++);
            g_string_append_c(term, *p);
        }
        if (*p == ',')
            p++;
        g_autofree char *t = g_string_free(term, FALSE);
        const char *opat = NULL;
        SelOp op = OP_EQ;
        gsize oplen = 1;
        for (const char *c = t; *c != '\0'; c++) {
            if (*c == '\\' && c[1] != '\0') {
                c++;
                continue;
            }
            if (c[0] == '!' && c[1] == '=') {
                opat = c, op = OP_NE, oplen = 2;
                break;
            }
            if (c[0] == '=') {
                opat = c, op = OP_EQ, oplen = c[1] == '=' ? 2 : 1;
                break;
            }
        }
        if (opat == NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_BAD_REQUEST,
                        "invalid selector: '%s'; can't understand '%s'", text, t);
            return NULL;
        }
        char *key = g_strstrip(g_strndup(t, (gsize)(opat - t)));
        GString *val = g_string_new(NULL);
        for (const char *c = opat + oplen; *c != '\0'; c++) {
            if (*c == '\\' && c[1] != '\0')
                c++;
            g_string_append_c(val, *c);
        }
        GPtrArray *values = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(values, g_string_free(val, FALSE));
        add_req(sel, key, op, values);
    }
    return g_steal_pointer(&sel);
}

static gboolean in_values(const SelReq *r, const char *v)
{
    for (guint i = 0; i < r->values->len; i++)
        if (strcmp(g_ptr_array_index(r->values, i), v) == 0)
            return TRUE;
    return FALSE;
}

gboolean kas_selector_matches(const KasSelector *sel, KasSelectorLookup lookup, gpointer data)
{
    if (sel == NULL)
        return TRUE;
    for (guint i = 0; i < sel->reqs->len; i++) {
        const SelReq *r = &g_array_index(sel->reqs, SelReq, i);
        const char *v = lookup(r->key, data);
        gboolean ok;
        switch (r->op) {
        case OP_EXISTS:
            ok = v != NULL;
            break;
        case OP_NOT_EXISTS:
            ok = v == NULL;
            break;
        case OP_EQ:
        case OP_IN:
            ok = v != NULL && in_values(r, v);
            break;
        case OP_NE:
        case OP_NOTIN:
            ok = v == NULL || !in_values(r, v);
            break;
        case OP_GT:
        case OP_LT: {
            char *end = NULL;
            gint64 have = v != NULL ? g_ascii_strtoll(v, &end, 10) : 0;
            gint64 want = g_ascii_strtoll(g_ptr_array_index(r->values, 0), NULL, 10);
            ok = v != NULL && *v != '\0' && *end == '\0' &&
                 (r->op == OP_GT ? have > want : have < want);
            break;
        }
        default:
            ok = FALSE;
        }
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

const char *kas_selector_lookup_pairs(const char *key, gpointer data)
{
    const char *const *pairs = data;
    for (; pairs != NULL && pairs[0] != NULL; pairs += 2)
        if (strcmp(pairs[0], key) == 0)
            return pairs[1];
    return NULL;
}
