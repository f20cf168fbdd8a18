/* CEL's evaluator and cost bound; see kb-cel-internal.h. */
#include "kube/kb-cel-internal.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---- evaluator -------------------------------------------------------------------------- */

typedef struct {
    const KbCelDevice *dev;
    guint64 cost;
    Value vars[KB_CEL_MAX_DEPTH];
    GPtrArray *owned; /* strings and lists built while evaluating; NULL until one is */
    GError *error;
    gsize scratch_used;
    /* Strings and lists built while evaluating go here first, on the stack, then to the heap. */
    char scratch[512] __attribute__((aligned(16)));
} Ctx;

static gboolean eval(const Node *n, Ctx *x, Value *out);

static gboolean rt_fail(Ctx *x, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean rt_fail(Ctx *x, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (x->error == NULL)
        x->error = g_error_new_valist(KB_CEL_ERROR, code, fmt, ap);
    va_end(ap);
    return FALSE;
}

static gboolean rt_no_overload(Ctx *x, const char *fn, const Value *a, const Value *b)
{
    if (b == NULL)
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such overload: %s(%s)", fn,
                       cel_type_names[a->t]);
    return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such overload: %s(%s, %s)", fn,
                   cel_type_names[a->t], cel_type_names[b->t]);
}

static gboolean charge(Ctx *x, gsize bytes)
{
    x->cost += bytes / 10;
    if (x->cost > KB_CEL_MAX_COST)
        return rt_fail(x, KB_CEL_ERROR_LIMIT, "evaluation cost exceeds the limit of %d steps",
                       KB_CEL_MAX_COST);
    return TRUE;
}

static gpointer own(Ctx *x, gpointer p)
{
    if (x->owned == NULL)
        x->owned = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(x->owned, p);
    return p;
}

/* @size bytes (aligned for a Value) that live until the evaluation ends. */
static gpointer scratch(Ctx *x, gsize size)
{
    gsize at = (x->scratch_used + 15) & ~(gsize)15;
    if (size <= sizeof(x->scratch) && at <= sizeof(x->scratch) - size) {
        x->scratch_used = at + size;
        return x->scratch + at;
    }
    return own(x, g_malloc(size));
}

/* Whether C string @cstr is the @n bytes at @p (which may hold a NUL: then it is not). Stops at
 * the first difference: attribute names mostly differ early. */
static gboolean str_is(const char *cstr, const char *p, gsize n)
{
    if (cstr == NULL)
        return n == 0;
    for (gsize i = 0; i < n; i++)
        if (cstr[i] != p[i] || cstr[i] == '\0')
            return FALSE;
    return cstr[n] == '\0';
}

static const KbCelAttribute *find_attr(const KbCelDevice *d, const char *dom, gsize dn,
                                       const char *name, gsize nn)
{
    for (guint i = 0; i < d->n_attributes; i++)
        if (str_is(d->attributes[i].name, name, nn) && str_is(d->attributes[i].domain, dom, dn))
            return &d->attributes[i];
    return NULL;
}

static const KbCelCapacity *find_cap(const KbCelDevice *d, const char *dom, gsize dn,
                                     const char *name, gsize nn)
{
    for (guint i = 0; i < d->n_capacity; i++)
        if (str_is(d->capacity[i].name, name, nn) && str_is(d->capacity[i].domain, dom, dn))
            return &d->capacity[i];
    return NULL;
}

static void set_string(Value *out, const char *s)
{
    out->t = TY_STRING;
    out->s.p = s != NULL ? s : "";
    out->s.n = s != NULL ? strlen(s) : 0;
}

static gboolean attr_value(Ctx *x, const KbCelAttribute *a, Value *out)
{
    switch (a->type) {
    case KB_CEL_ATTR_INT:
        *out = (Value){.t = TY_INT, .i = a->int_value};
        return TRUE;
    case KB_CEL_ATTR_BOOL:
        *out = (Value){.t = TY_BOOL, .b = a->bool_value};
        return TRUE;
    case KB_CEL_ATTR_STRING:
        set_string(out, a->string_value);
        return TRUE;
    case KB_CEL_ATTR_VERSION:
        out->t = TY_SEMVER;
        if (a->string_value != NULL &&
            cel_semver_parse(a->string_value, strlen(a->string_value), &out->v))
            return TRUE;
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "attribute %s/%s: invalid semantic version \"%s\"",
                       a->domain, a->name, a->string_value != NULL ? a->string_value : "");
    }
    return rt_fail(x, KB_CEL_ERROR_RUNTIME, "attribute %s/%s: unsupported attribute value",
                   a->domain, a->name);
}

/* m[key] on the device's maps (the domain is in m->s) and lists. */
static gboolean index_value(Ctx *x, const Value *m, const Value *k, Value *out)
{
    if (m->t == TY_LIST) {
        gint64 i = k->t == TY_INT                          ? k->i
                   : k->t == TY_UINT && k->u <= G_MAXINT64 ? (gint64)k->u
                                                           : -1;
        if (k->t != TY_INT && k->t != TY_UINT)
            return rt_no_overload(x, "_[_]", m, k);
        if (i < 0 || i >= (gint64)m->l.n)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "index out of range: %" G_GINT64_FORMAT,
                           k->t == TY_INT ? k->i : (gint64)k->u);
        *out = m->l.items[i];
        return TRUE;
    }
    if (k->t != TY_STRING ||
        (m->t != TY_ATTRS && m->t != TY_CAPS && m->t != TY_ATTR_DOMAIN && m->t != TY_CAP_DOMAIN))
        return rt_no_overload(x, "_[_]", m, k);
    if (m->t == TY_ATTRS || m->t == TY_CAPS) {
        /* A domain the device does not have is an empty map, as in Kubernetes. */
        out->t = m->t == TY_ATTRS ? TY_ATTR_DOMAIN : TY_CAP_DOMAIN;
        out->s = k->s;
        return TRUE;
    }
    if (m->t == TY_ATTR_DOMAIN) {
        const KbCelAttribute *a = find_attr(x->dev, m->s.p, m->s.n, k->s.p, k->s.n);
        if (a == NULL)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such key: %.*s", (int)k->s.n, k->s.p);
        return attr_value(x, a, out);
    }
    const KbCelCapacity *cap = find_cap(x->dev, m->s.p, m->s.n, k->s.p, k->s.n);
    if (cap == NULL)
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such key: %.*s", (int)k->s.n, k->s.p);
    *out = (Value){.t = TY_QUANTITY, .q = cap->value};
    return TRUE;
}

/* Whether map @m (a device map) has key @k. */
static gboolean map_has(const Ctx *x, const Value *m, const Value *k)
{
    const KbCelDevice *d = x->dev;
    if (k->t != TY_STRING)
        return FALSE;
    switch (m->t) {
    case TY_ATTRS:
        for (guint i = 0; i < d->n_attributes; i++)
            if (str_is(d->attributes[i].domain, k->s.p, k->s.n))
                return TRUE;
        return FALSE;
    case TY_CAPS:
        for (guint i = 0; i < d->n_capacity; i++)
            if (str_is(d->capacity[i].domain, k->s.p, k->s.n))
                return TRUE;
        return FALSE;
    case TY_ATTR_DOMAIN:
        return find_attr(d, m->s.p, m->s.n, k->s.p, k->s.n) != NULL;
    case TY_CAP_DOMAIN:
        return find_cap(d, m->s.p, m->s.n, k->s.p, k->s.n) != NULL;
    default:
        return FALSE;
    }
}

/* -1, 0, 1, or 2 when unordered (NaN); numbers of any of the three types, as cel-go. */
static int num_cmp(const Value *a, const Value *b)
{
    if (a->t == TY_DOUBLE || b->t == TY_DOUBLE) {
        if (a->t == TY_DOUBLE && b->t == TY_DOUBLE) {
            if (isnan(a->d) || isnan(b->d))
                return 2;
            return a->d < b->d ? -1 : a->d > b->d ? 1 : 0;
        }
        if (a->t == TY_DOUBLE) {
            int c = num_cmp(b, a);
            return c == 2 ? 2 : -c;
        }
        /* a is int or uint, b double: out-of-range doubles first, then as doubles. */
        if (isnan(b->d))
            return 2;
        double lo = a->t == TY_INT ? -9223372036854775808.0 : 0.0;
        double hi = a->t == TY_INT ? 9223372036854775807.0 : 18446744073709551615.0;
        if (b->d < lo)
            return 1;
        if (b->d > hi)
            return -1;
        Value ad = {.t = TY_DOUBLE, .d = a->t == TY_INT ? (double)a->i : (double)a->u};
        return num_cmp(&ad, b);
    }
    if (a->t == TY_INT && b->t == TY_INT)
        return a->i < b->i ? -1 : a->i > b->i ? 1 : 0;
    if (a->t == TY_UINT && b->t == TY_UINT)
        return cel_cmp_u64(a->u, b->u);
    if (a->t == TY_INT) /* b uint */
        return a->i < 0 ? -1 : cel_cmp_u64((guint64)a->i, b->u);
    return b->i < 0 ? 1 : cel_cmp_u64(a->u, (guint64)b->i);
}

static gboolean values_equal(const Value *a, const Value *b)
{
    if (is_numeric(a->t) && is_numeric(b->t))
        return num_cmp(a, b) == 0;
    if (a->t != b->t)
        return FALSE;
    switch (a->t) {
    case TY_NULL:
        return TRUE;
    case TY_BOOL:
        return !a->b == !b->b;
    case TY_STRING:
        return a->s.n == b->s.n && memcmp(a->s.p, b->s.p, a->s.n) == 0;
    case TY_QUANTITY:
        return cel_quantity_compare(&a->q, &b->q) == 0;
    case TY_SEMVER:
        return cel_semver_compare(&a->v, &b->v) == 0;
    case TY_LIST:
        if (a->l.n != b->l.n)
            return FALSE;
        for (guint i = 0; i < a->l.n; i++)
            if (!values_equal(&a->l.items[i], &b->l.items[i]))
                return FALSE;
        return TRUE;
    default:
        return FALSE;
    }
}

static gboolean eval_order(const Node *n, Ctx *x, const Value *a, const Value *b, Value *out)
{
    int c;
    if (is_numeric(a->t) && is_numeric(b->t)) {
        c = num_cmp(a, b);
    } else if (a->t == TY_STRING && b->t == TY_STRING) {
        c = memcmp(a->s.p, b->s.p, MIN(a->s.n, b->s.n));
        c = c != 0 ? (c < 0 ? -1 : 1) : cel_cmp_u64(a->s.n, b->s.n);
    } else if (a->t == TY_BOOL && b->t == TY_BOOL) {
        c = (a->b ? 1 : 0) - (b->b ? 1 : 0);
    } else {
        return rt_no_overload(x, cel_op_names[n->kind], a, b);
    }
    out->t = TY_BOOL;
    switch (n->kind) {
    case N_LT:
        out->b = c == -1;
        break;
    case N_LE:
        out->b = c == -1 || c == 0;
        break;
    case N_GT:
        out->b = c == 1;
        break;
    default:
        out->b = c == 1 || c == 0;
        break;
    }
    return TRUE;
}

static gboolean eval_int_arith(const Node *n, Ctx *x, gint64 a, gint64 b, Value *out)
{
    gint64 r = 0;
    gboolean overflow = FALSE;
    switch (n->kind) {
    case N_ADD:
        overflow = __builtin_add_overflow(a, b, &r);
        break;
    case N_SUB:
        overflow = __builtin_sub_overflow(a, b, &r);
        break;
    case N_MUL:
        overflow = __builtin_mul_overflow(a, b, &r);
        break;
    case N_DIV:
    case N_MOD:
        if (b == 0)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME,
                           n->kind == N_DIV ? "division by zero" : "modulus by zero");
        overflow = a == G_MININT64 && b == -1;
        if (!overflow)
            r = n->kind == N_DIV ? a / b : a % b;
        break;
    default:
        break;
    }
    if (overflow)
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "integer overflow");
    *out = (Value){.t = TY_INT, .i = r};
    return TRUE;
}

static gboolean eval_uint_arith(const Node *n, Ctx *x, guint64 a, guint64 b, Value *out)
{
    guint64 r = 0;
    gboolean overflow = FALSE;
    switch (n->kind) {
    case N_ADD:
        overflow = __builtin_add_overflow(a, b, &r);
        break;
    case N_SUB:
        overflow = __builtin_sub_overflow(a, b, &r);
        break;
    case N_MUL:
        overflow = __builtin_mul_overflow(a, b, &r);
        break;
    case N_DIV:
    case N_MOD:
        if (b == 0)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME,
                           n->kind == N_DIV ? "division by zero" : "modulus by zero");
        r = n->kind == N_DIV ? a / b : a % b;
        break;
    default:
        break;
    }
    if (overflow)
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "unsigned integer overflow");
    *out = (Value){.t = TY_UINT, .u = r};
    return TRUE;
}

static gboolean eval_arith(const Node *n, Ctx *x, const Value *a, const Value *b, Value *out)
{
    if (a->t != b->t)
        return rt_no_overload(x, cel_op_names[n->kind], a, b);
    switch (a->t) {
    case TY_INT:
        return eval_int_arith(n, x, a->i, b->i, out);
    case TY_UINT:
        return eval_uint_arith(n, x, a->u, b->u, out);
    case TY_DOUBLE: {
        double r = n->kind == N_ADD   ? a->d + b->d
                   : n->kind == N_SUB ? a->d - b->d
                   : n->kind == N_MUL ? a->d * b->d
                                      : a->d / b->d;
        if (n->kind == N_MOD)
            return rt_no_overload(x, cel_op_names[n->kind], a, b);
        *out = (Value){.t = TY_DOUBLE, .d = r};
        return TRUE;
    }
    case TY_STRING: {
        if (n->kind != N_ADD)
            return rt_no_overload(x, cel_op_names[n->kind], a, b);
        if (!charge(x, a->s.n + b->s.n))
            return FALSE;
        char *s = scratch(x, a->s.n + b->s.n + 1);
        memcpy(s, a->s.p, a->s.n);
        memcpy(s + a->s.n, b->s.p, b->s.n);
        s[a->s.n + b->s.n] = '\0';
        *out = (Value){.t = TY_STRING, .s = {s, a->s.n + b->s.n}};
        return TRUE;
    }
    default:
        return rt_no_overload(x, cel_op_names[n->kind], a, b);
    }
}

static gboolean eval_in(const Node *n, Ctx *x, const Value *a, const Value *b, Value *out)
{
    out->t = TY_BOOL;
    out->b = FALSE;
    if (b->t == TY_LIST) {
        for (guint i = 0; i < b->l.n && !out->b; i++)
            out->b = values_equal(a, &b->l.items[i]);
        return charge(x, b->l.n * 10);
    }
    if (b->t == TY_ATTRS || b->t == TY_CAPS || b->t == TY_ATTR_DOMAIN || b->t == TY_CAP_DOMAIN) {
        out->b = map_has(x, b, a);
        return TRUE;
    }
    return rt_no_overload(x, cel_op_names[n->kind], a, b);
}

static gboolean eval_binary(const Node *n, Ctx *x, Value *out)
{
    Value a, b;
    if (!eval(n->kids[0], x, &a) || !eval(n->kids[1], x, &b))
        return FALSE;
    switch (n->kind) {
    case N_EQ:
    case N_NE:
        *out = (Value){.t = TY_BOOL, .b = values_equal(&a, &b) == (n->kind == N_EQ)};
        return TRUE;
    case N_LT:
    case N_LE:
    case N_GT:
    case N_GE:
        return eval_order(n, x, &a, &b, out);
    case N_IN:
        return eval_in(n, x, &a, &b, out);
    default:
        return eval_arith(n, x, &a, &b, out);
    }
}

/* Whether evaluating @kid gives @decisive (FALSE for &&, TRUE for ||): *@decided, else an
 * error kept in *@first (the first one); a cost error is never absorbed. */
static gboolean eval_logic_operand(const Node *kid, Ctx *x, gboolean decisive, gboolean *decided,
                                   GError **first)
{
    Value v;
    gboolean ok = eval(kid, x, &v);
    if (ok && v.t != TY_BOOL)
        ok = rt_no_overload(x, decisive ? "_||_" : "_&&_", &v, NULL);
    if (!ok) {
        if (g_error_matches(x->error, KB_CEL_ERROR, KB_CEL_ERROR_LIMIT))
            return FALSE;
        if (*first == NULL)
            *first = g_steal_pointer(&x->error);
        else
            g_clear_error(&x->error);
        *decided = FALSE;
        return TRUE;
    }
    *decided = !v.b == !decisive;
    return TRUE;
}

/* && and || with CEL's commutative error handling: a decisive operand wins over an error. */
static gboolean eval_logic(const Node *n, Ctx *x, Value *out)
{
    gboolean decisive = n->kind == N_OR;
    g_autoptr(GError) first = NULL;
    for (guint i = 0; i < n->n_kids; i++) {
        gboolean decided;
        if (!eval_logic_operand(n->kids[i], x, decisive, &decided, &first))
            return FALSE;
        if (decided) {
            *out = (Value){.t = TY_BOOL, .b = decisive};
            return TRUE;
        }
    }
    if (first != NULL) {
        x->error = g_steal_pointer(&first);
        return FALSE;
    }
    *out = (Value){.t = TY_BOOL, .b = !decisive};
    return TRUE;
}

/* exists() and all(): a fold with the error handling of || and && over the list's items. */
static gboolean eval_comprehension(const Node *n, Ctx *x, Value *out)
{
    Value range;
    if (!eval(n->kids[0], x, &range))
        return FALSE;
    if (range.t != TY_LIST)
        return rt_no_overload(x, n->kind == N_EXISTS ? "exists" : "all", &range, NULL);
    gboolean decisive = n->kind == N_EXISTS;
    g_autoptr(GError) first = NULL;
    for (guint i = 0; i < range.l.n; i++) {
        gboolean decided;
        x->vars[n->slot] = range.l.items[i];
        if (!eval_logic_operand(n->kids[1], x, decisive, &decided, &first))
            return FALSE;
        if (decided) {
            *out = (Value){.t = TY_BOOL, .b = decisive};
            return TRUE;
        }
    }
    if (first != NULL) {
        x->error = g_steal_pointer(&first);
        return FALSE;
    }
    *out = (Value){.t = TY_BOOL, .b = !decisive};
    return TRUE;
}

static gboolean eval_size(Ctx *x, const Value *v, Value *out)
{
    gint64 n = 0;
    const KbCelDevice *d = x->dev;
    switch (v->t) {
    case TY_STRING:
        for (gsize i = 0; i < v->s.n; i++)
            n += ((guchar)v->s.p[i] & 0xC0) != 0x80;
        break;
    case TY_LIST:
        n = v->l.n;
        break;
    case TY_ATTR_DOMAIN:
        for (guint i = 0; i < d->n_attributes; i++)
            n += str_is(d->attributes[i].domain, v->s.p, v->s.n);
        break;
    case TY_CAP_DOMAIN:
        for (guint i = 0; i < d->n_capacity; i++)
            n += str_is(d->capacity[i].domain, v->s.p, v->s.n);
        break;
    case TY_ATTRS:
        for (guint i = 0; i < d->n_attributes; i++) {
            guint j = 0;
            while (j < i && g_strcmp0(d->attributes[j].domain, d->attributes[i].domain) != 0)
                j++;
            n += j == i;
        }
        break;
    case TY_CAPS:
        for (guint i = 0; i < d->n_capacity; i++) {
            guint j = 0;
            while (j < i && g_strcmp0(d->capacity[j].domain, d->capacity[i].domain) != 0)
                j++;
            n += j == i;
        }
        break;
    default:
        return rt_no_overload(x, "size", v, NULL);
    }
    *out = (Value){.t = TY_INT, .i = n};
    return charge(x, v->t == TY_STRING ? v->s.n : 0);
}

static gboolean eval_string_fn(const Node *n, Ctx *x, const Value *a, const Value *b, Value *out)
{
    if (a->t != TY_STRING || (b != NULL && b->t != TY_STRING))
        return rt_no_overload(x, n->str, a, b);
    if (!charge(x, a->s.n + (b != NULL ? b->s.n : 0)))
        return FALSE;
    out->t = TY_BOOL;
    switch (n->fn) {
    case F_STARTS_WITH:
        out->b = b->s.n <= a->s.n && memcmp(a->s.p, b->s.p, b->s.n) == 0;
        return TRUE;
    case F_ENDS_WITH:
        out->b = b->s.n <= a->s.n && memcmp(a->s.p + a->s.n - b->s.n, b->s.p, b->s.n) == 0;
        return TRUE;
    case F_CONTAINS:
        out->b = b->s.n == 0 || memmem(a->s.p, a->s.n, b->s.p, b->s.n) != NULL;
        return TRUE;
    case F_MATCHES: {
        if (!g_utf8_validate_len(a->s.p, a->s.n, NULL))
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "matches(): the string is not valid UTF-8");
        /* As CEL's estimate: the string's length times the pattern's. */
        if (!charge(x, a->s.n * n->kids[1]->lit.s.n))
            return FALSE;
        if (n->lit_match != LIT_NONE) {
            out->b = cel_literal_match(n, a->s.p, a->s.n);
            return TRUE;
        }
        g_autoptr(GError) error = NULL;
        out->b = g_regex_match_full(n->regex, a->s.p, (gssize)a->s.n, 0, 0, NULL, &error);
        if (error != NULL)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "matches(): %s", error->message);
        return TRUE;
    }
    default: {
        char *s = scratch(x, a->s.n + 1);
        for (gsize i = 0; i < a->s.n; i++)
            s[i] = n->fn == F_LOWER_ASCII ? g_ascii_tolower(a->s.p[i]) : g_ascii_toupper(a->s.p[i]);
        s[a->s.n] = '\0';
        *out = (Value){.t = TY_STRING, .s = {s, a->s.n}};
        return TRUE;
    }
    }
}

/* quantity(s), isQuantity(s), semver(s[, normalize]), isSemver(s[, normalize]) on strings
 * known only when evaluating (literal ones were folded by the checker). */
static gboolean eval_conversion(const Node *n, Ctx *x, const Value *a, const Value *b, Value *out)
{
    if (a->t != TY_STRING || (b != NULL && b->t != TY_BOOL))
        return rt_no_overload(x, n->str, a, b);
    char *text = scratch(x, a->s.n + 1);
    memcpy(text, a->s.p, a->s.n);
    text[a->s.n] = '\0';
    gboolean has_nul = strlen(text) != a->s.n;
    gboolean ok;
    if (n->fn == F_QUANTITY || n->fn == F_IS_QUANTITY) {
        g_autoptr(GError) error = NULL;
        ok = !has_nul && kb_quantity_parse(text, &out->q, &error);
        if (n->fn == F_QUANTITY && !ok)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "%s",
                           error != NULL ? error->message : "invalid quantity");
        out->t = TY_QUANTITY;
    } else {
        if (b != NULL && b->b) {
            char *norm = cel_semver_normalize(text, a->s.n);
            text = norm != NULL ? own(x, norm) : NULL;
        }
        ok = !has_nul && text != NULL && cel_semver_parse(text, strlen(text), &out->v);
        if (n->fn == F_SEMVER && !ok)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "invalid semantic version \"%.*s\"",
                           (int)a->s.n, a->s.p);
        out->t = TY_SEMVER;
    }
    if (n->fn == F_IS_QUANTITY || n->fn == F_IS_SEMVER)
        *out = (Value){.t = TY_BOOL, .b = ok};
    return TRUE;
}

static gboolean eval_compare(const Node *n, Ctx *x, const Value *a, const Value *b, Value *out)
{
    int c;
    if (a->t == TY_QUANTITY && b->t == TY_QUANTITY)
        c = cel_quantity_compare(&a->q, &b->q);
    else if (a->t == TY_SEMVER && b->t == TY_SEMVER)
        c = cel_semver_compare(&a->v, &b->v);
    else
        return rt_no_overload(x, n->str, a, b);
    if (n->fn == F_COMPARE_TO)
        *out = (Value){.t = TY_INT, .i = c};
    else
        *out = (Value){.t = TY_BOOL, .b = c == (n->fn == F_IS_GREATER_THAN ? 1 : -1)};
    return TRUE;
}

static gboolean eval_accessor(const Node *n, Ctx *x, const Value *a, Value *out)
{
    gint64 v = 0;
    if (n->fn == F_MAJOR || n->fn == F_MINOR || n->fn == F_PATCH) {
        if (a->t != TY_SEMVER)
            return rt_no_overload(x, n->str, a, NULL);
        guint64 u = n->fn == F_MAJOR ? a->v.major : n->fn == F_MINOR ? a->v.minor : a->v.patch;
        *out = (Value){.t = TY_INT, .i = (gint64)u};
        return TRUE;
    }
    if (a->t != TY_QUANTITY)
        return rt_no_overload(x, n->str, a, NULL);
    switch (n->fn) {
    case F_AS_INTEGER:
        if (!cel_quantity_as_int64(&a->q, &v))
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "cannot convert value to integer");
        *out = (Value){.t = TY_INT, .i = v};
        return TRUE;
    case F_IS_INTEGER:
        *out = (Value){.t = TY_BOOL, .b = cel_quantity_as_int64(&a->q, &v)};
        return TRUE;
    default: /* F_SIGN */
        *out = (Value){.t = TY_INT, .i = a->q.unscaled > 0 ? 1 : a->q.unscaled < 0 ? -1 : 0};
        return TRUE;
    }
}

static gboolean eval_call(const Node *n, Ctx *x, Value *out)
{
    Value args[3];
    for (guint i = 0; i < n->n_kids && i < G_N_ELEMENTS(args); i++)
        if (!eval(n->kids[i], x, &args[i]))
            return FALSE;
    const Value *b = n->n_kids > 1 ? &args[1] : NULL;
    switch (n->fn) {
    case F_SIZE:
        return eval_size(x, &args[0], out);
    case F_STARTS_WITH:
    case F_ENDS_WITH:
    case F_CONTAINS:
    case F_MATCHES:
    case F_LOWER_ASCII:
    case F_UPPER_ASCII:
        return eval_string_fn(n, x, &args[0], b, out);
    case F_QUANTITY:
    case F_IS_QUANTITY:
    case F_SEMVER:
    case F_IS_SEMVER:
        return eval_conversion(n, x, &args[0], b, out);
    case F_COMPARE_TO:
    case F_IS_GREATER_THAN:
    case F_IS_LESS_THAN:
        return eval_compare(n, x, &args[0], b, out);
    default:
        return eval_accessor(n, x, &args[0], out);
    }
}

static gboolean eval_list(const Node *n, Ctx *x, Value *out)
{
    out->t = TY_LIST;
    out->l.n = n->n_kids;
    if (n->is_const || n->n_kids == 0) {
        out->l.items = n->items;
        return TRUE;
    }
    Value *items = scratch(x, sizeof(Value) * n->n_kids);
    for (guint i = 0; i < n->n_kids; i++)
        if (!eval(n->kids[i], x, &items[i]))
            return FALSE;
    out->l.items = items;
    return TRUE;
}

static gboolean eval_lookup(const Node *n, Ctx *x, Value *out)
{
    gsize dn = n->len, nn = n->name_len;
    switch (n->kind) {
    case N_ATTR: {
        const KbCelAttribute *a = find_attr(x->dev, n->str, dn, n->name, nn);
        if (a == NULL)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such key: %s", n->name);
        return attr_value(x, a, out);
    }
    case N_CAP: {
        const KbCelCapacity *c = find_cap(x->dev, n->str, dn, n->name, nn);
        if (c == NULL)
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such key: %s", n->name);
        *out = (Value){.t = TY_QUANTITY, .q = c->value};
        return TRUE;
    }
    case N_HAS_ATTR:
        *out = (Value){.t = TY_BOOL, .b = find_attr(x->dev, n->str, dn, n->name, nn) != NULL};
        return TRUE;
    default: /* N_HAS_CAP */
        *out = (Value){.t = TY_BOOL, .b = find_cap(x->dev, n->str, dn, n->name, nn) != NULL};
        return TRUE;
    }
}

static gboolean eval_device_field(const Node *n, Ctx *x, Value *out)
{
    switch ((DeviceField)n->slot) {
    case FIELD_DRIVER:
        set_string(out, x->dev->driver);
        return TRUE;
    case FIELD_ATTRIBUTES:
        out->t = TY_ATTRS;
        return TRUE;
    case FIELD_CAPACITY:
        out->t = TY_CAPS;
        return TRUE;
    default:
        *out = (Value){.t = TY_BOOL, .b = x->dev->allow_multiple_allocations};
        return TRUE;
    }
}

/* m.f and has(m.f) where m is known only when evaluating (a variable or an attribute). */
static gboolean eval_field(const Node *n, Ctx *x, Value *out)
{
    Value m;
    if (!eval(n->kids[0], x, &m))
        return FALSE;
    Value key = {.t = TY_STRING, .s = {n->str, strlen(n->str)}};
    if (m.t != TY_ATTRS && m.t != TY_CAPS && m.t != TY_ATTR_DOMAIN && m.t != TY_CAP_DOMAIN)
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "type '%s' does not support field selection",
                       cel_type_names[m.t]);
    if (n->kind == N_HAS) {
        *out = (Value){.t = TY_BOOL, .b = map_has(x, &m, &key)};
        return TRUE;
    }
    return index_value(x, &m, &key, out);
}

static gboolean eval_unary(const Node *n, Ctx *x, Value *out)
{
    Value v;
    if (!eval(n->kids[0], x, &v))
        return FALSE;
    if (n->kind == N_NOT) {
        if (v.t != TY_BOOL)
            return rt_no_overload(x, "!_", &v, NULL);
        *out = (Value){.t = TY_BOOL, .b = !v.b};
        return TRUE;
    }
    if (v.t == TY_INT && v.i != G_MININT64) {
        *out = (Value){.t = TY_INT, .i = -v.i};
        return TRUE;
    }
    if (v.t == TY_INT)
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "integer overflow");
    if (v.t == TY_DOUBLE) {
        *out = (Value){.t = TY_DOUBLE, .d = -v.d};
        return TRUE;
    }
    return rt_no_overload(x, "-_", &v, NULL);
}

static gboolean eval(const Node *n, Ctx *x, Value *out)
{
    if (++x->cost > KB_CEL_MAX_COST)
        return rt_fail(x, KB_CEL_ERROR_LIMIT, "evaluation cost exceeds the limit of %d steps",
                       KB_CEL_MAX_COST);
    switch (n->kind) {
    case N_LIT:
        *out = n->lit;
        return TRUE;
    case N_ERROR:
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "%s", n->str);
    case N_LIST:
        return eval_list(n, x, out);
    case N_DEVICE:
        out->t = TY_DEVICE;
        return TRUE;
    case N_DEVICE_FIELD:
        return eval_device_field(n, x, out);
    case N_VAR:
        *out = x->vars[n->slot];
        return TRUE;
    case N_ATTR:
    case N_CAP:
    case N_HAS_ATTR:
    case N_HAS_CAP:
        return eval_lookup(n, x, out);
    case N_SELECT:
    case N_HAS:
        return eval_field(n, x, out);
    case N_INDEX: {
        Value m, k;
        return eval(n->kids[0], x, &m) && eval(n->kids[1], x, &k) && index_value(x, &m, &k, out);
    }
    case N_CALL:
        return eval_call(n, x, out);
    case N_AND:
    case N_OR:
        return eval_logic(n, x, out);
    case N_NOT:
    case N_NEG:
        return eval_unary(n, x, out);
    case N_COND: {
        Value c;
        if (!eval(n->kids[0], x, &c))
            return FALSE;
        if (c.t != TY_BOOL)
            return rt_no_overload(x, "_?_:_", &c, NULL);
        return eval(n->kids[c.b ? 1 : 2], x, out);
    }
    case N_EXISTS:
    case N_ALL:
        return eval_comprehension(n, x, out);
    case N_BIND:
        if (!eval(n->kids[0], x, &x->vars[n->slot]))
            return FALSE;
        return eval(n->kids[1], x, out);
    default:
        return eval_binary(n, x, out);
    }
}

/* ---- cost bound ------------------------------------------------------------------------- */

/* Longest strings a device can hold, as resource.k8s.io/v1 validates them. */
#define MAX_ATTRIBUTE_VALUE_LENGTH 64 /* DeviceAttributeMaxValueLength */
#define MAX_DRIVER_NAME_LENGTH     63 /* DriverNameMaxLength */

/* What evaluating a node can cost at most, and how large its value (or any string or list
 * inside it) can be. Saturating: an expression may bound at "more than anything". */
typedef struct {
    guint64 cost;
    guint64 str;  /* bytes of the longest string */
    guint64 list; /* elements of the longest list */
} Est;

static guint64 sat_add(guint64 a, guint64 b)
{
    return a > G_MAXUINT64 - b ? G_MAXUINT64 : a + b;
}

static guint64 sat_mul(guint64 a, guint64 b)
{
    return b != 0 && a > G_MAXUINT64 / b ? G_MAXUINT64 : a * b;
}

static Est estimate(const Node *n, Est *vars);

/* Operands' costs added up (plus the node's own step); sizes the largest of them. */
static Est estimate_kids(const Node *n, Est *vars, Est *kids)
{
    Est e = {1, 0, 0};
    for (guint i = 0; i < n->n_kids; i++) {
        Est k = estimate(n->kids[i], vars);
        if (kids != NULL && i < 3)
            kids[i] = k;
        e.cost = sat_add(e.cost, k.cost);
        e.str = MAX(e.str, k.str);
        e.list = MAX(e.list, k.list);
    }
    return e;
}

static Est estimate_call(const Node *n, Est *vars)
{
    Est k[3] = {{0}};
    Est e = estimate_kids(n, vars, k);
    guint64 a = k[0].str, b = n->n_kids > 1 ? k[1].str : 0;
    switch (n->fn) {
    case F_SIZE:
        e.cost = sat_add(e.cost, a / 10);
        break;
    case F_MATCHES:
        e.cost = sat_add(e.cost, sat_mul(a, n->kids[1]->lit.s.n) / 10);
        /* fall through */
    case F_STARTS_WITH:
    case F_ENDS_WITH:
    case F_CONTAINS:
    case F_LOWER_ASCII:
    case F_UPPER_ASCII:
        e.cost = sat_add(e.cost, sat_add(a, b) / 10);
        break;
    default:
        break;
    }
    e.str = a; /* lowerAscii, upperAscii; quantity() and the others keep no string */
    return e;
}

static Est estimate_scoped(const Node *n, Est *vars)
{
    Est range = estimate(n->kids[0], vars);
    vars[n->slot] = range;
    Est body = estimate(n->kids[1], vars);
    Est e = {sat_add(1, range.cost), body.str, body.list};
    if (n->kind == N_BIND)
        e.cost = sat_add(e.cost, body.cost);
    else
        e.cost = sat_add(e.cost, sat_mul(range.list, body.cost));
    return e;
}

static Est estimate(const Node *n, Est *vars)
{
    Est k[3] = {{0}};
    Est e;
    switch (n->kind) {
    case N_LIT:
        return (Est){1, n->lit.t == TY_STRING ? n->lit.s.n : 0, 0};
    case N_DEVICE_FIELD:
        return (Est){1, n->slot == FIELD_DRIVER ? MAX_DRIVER_NAME_LENGTH : 0, 0};
    case N_ATTR:
    case N_SELECT:
        e = estimate_kids(n, vars, NULL);
        e.str = MAX_ATTRIBUTE_VALUE_LENGTH;
        return e;
    case N_VAR: {
        Est v = vars[n->slot];
        return (Est){1, v.str, v.list};
    }
    case N_INDEX:
        e = estimate_kids(n, vars, k);
        e.str = n->kids[0]->type == TY_LIST ? k[0].str : MAX_ATTRIBUTE_VALUE_LENGTH;
        return e;
    case N_LIST:
        e = estimate_kids(n, vars, NULL);
        e.list = MAX(e.list, n->n_kids);
        if (n->is_const)
            e.cost = 1; /* built when compiling */
        return e;
    case N_CALL:
        return estimate_call(n, vars);
    case N_COND:
        e = estimate_kids(n, vars, k);
        e.cost = sat_add(sat_add(1, k[0].cost), MAX(k[1].cost, k[2].cost));
        return e;
    case N_IN:
        e = estimate_kids(n, vars, k);
        e.cost = sat_add(e.cost, k[1].list);
        return e;
    case N_ADD:
        e = estimate_kids(n, vars, k);
        e.str = sat_add(k[0].str, k[1].str);
        e.cost = sat_add(e.cost, e.str / 10);
        e.list = 0;
        return e;
    case N_EXISTS:
    case N_ALL:
    case N_BIND:
        return estimate_scoped(n, vars);
    default:
        return estimate_kids(n, vars, NULL);
    }
}

gboolean cel_eval(const Node *root, const KbCelDevice *device, gboolean *matches, GError **error)
{
    /* Not zeroed whole: vars and scratch are written before they are read, and clearing
     * two kilobytes would cost as much as evaluating a class selector. */
    Ctx x;
    x.dev = device;
    x.cost = 0;
    x.owned = NULL;
    x.error = NULL;
    x.scratch_used = 0;
    Value v;
    gboolean ok = eval(root, &x, &v);
    if (ok && v.t != TY_BOOL)
        ok = rt_fail(&x, KB_CEL_ERROR_RUNTIME,
                     "CEL result of type %s could not be converted to bool", cel_type_names[v.t]);
    if (x.owned != NULL)
        g_ptr_array_unref(x.owned);
    if (!ok) {
        g_propagate_error(error, x.error);
        return FALSE;
    }
    *matches = v.b;
    return TRUE;
}

guint64 cel_max_cost(const Node *root)
{
    Est vars[KB_CEL_MAX_DEPTH] = {{0}};
    return estimate(root, vars).cost;
}
