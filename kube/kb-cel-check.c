/* CEL's checker; see kb-cel-internal.h. */
#include "kube/kb-cel-internal.h"

#include <stdarg.h>
#include <string.h>

/* ---- checker ---------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    Type type, elem;
} VarDecl;

typedef struct {
    GError **error;
    VarDecl vars[KB_CEL_MAX_DEPTH];
    guint n_vars;
} Checker;

static gboolean check(Checker *c, Node *n);

static gboolean check_fail(Checker *c, int code, const Node *n, const char *fmt, ...)
        G_GNUC_PRINTF(4, 5);

static gboolean check_fail(Checker *c, int code, const Node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (c->error != NULL && *c->error == NULL)
        g_set_error(c->error, KB_CEL_ERROR, code, "%s (at offset %u)", msg, n->pos);
    return FALSE;
}

static gboolean is_map(Type t)
{
    return t == TY_ATTRS || t == TY_CAPS || t == TY_ATTR_DOMAIN || t == TY_CAP_DOMAIN ||
           t == TY_DEVICE;
}

/* "(int, string)": the argument types of @n's operands, for overload errors. */
static char *arg_types(const Node *n)
{
    GString *s = g_string_new("(");
    for (guint i = 0; i < n->n_kids; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? ", " : "", cel_type_names[n->kids[i]->type]);
    g_string_append_c(s, ')');
    return g_string_free(s, FALSE);
}

static gboolean no_overload(Checker *c, const Node *n, const char *fn)
{
    g_autofree char *args = arg_types(n);
    return check_fail(c, KB_CEL_ERROR_TYPE, n,
                      "found no matching overload for '%s' applied to '%s'", fn, args);
}

/* Whether values of @a and @b may be compared with == (and be elements of one list): CEL's
 * checker wants one type, dyn matching anything. Numbers of different types compare equal
 * only at run time (an int attribute == 2u), the checker refuses 1 == 1u. */
static gboolean equatable(Type a, Type ae, Type b, Type be)
{
    if (a == TY_DYN || b == TY_DYN)
        return TRUE;
    if (a == TY_LIST && b == TY_LIST)
        return equatable(ae, TY_DYN, be, TY_DYN);
    return a == b;
}

static gboolean orderable(Type a, Type b)
{
    if (a == TY_DYN && (b == TY_DYN || is_numeric(b) || b == TY_STRING || b == TY_BOOL))
        return TRUE;
    if (b == TY_DYN)
        return orderable(b, a);
    return (is_numeric(a) && is_numeric(b)) || (a == b && (a == TY_STRING || a == TY_BOOL));
}

/* Replaces @n's operands by nothing (they were folded into @n). */
static void drop_kids(Node *n)
{
    for (guint i = 0; i < n->n_kids; i++)
        cel_node_free(n->kids[i]);
    g_clear_pointer(&n->kids, g_free);
    n->n_kids = 0;
}

static gboolean check_ident(Checker *c, Node *n)
{
    for (guint i = c->n_vars; i-- > 0;) {
        if (strcmp(c->vars[i].name, n->str) == 0) {
            n->kind = N_VAR;
            n->slot = i;
            n->type = c->vars[i].type;
            n->elem = c->vars[i].elem;
            return TRUE;
        }
    }
    if (strcmp(n->str, "device") == 0) {
        n->kind = N_DEVICE;
        n->type = TY_DEVICE;
        return TRUE;
    }
    static const char *const type_idents[] = {"int",       "uint",  "double", "bool",
                                              "string",    "bytes", "list",   "map",
                                              "null_type", "type",  "dyn",    NULL};
    if (g_strv_contains(type_idents, n->str))
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n, "unsupported type identifier \"%s\"",
                          n->str);
    return check_fail(c, KB_CEL_ERROR_TYPE, n, "undeclared reference to '%s'", n->str);
}

/* device.<field>, or a field of a map (turned into an index with a literal key). */
static gboolean check_select(Checker *c, Node *n)
{
    if (!check(c, n->kids[0]))
        return FALSE;
    Type t = n->kids[0]->type;
    if (t == TY_DEVICE) {
        static const char *const fields[] = {"driver", "attributes", "capacity",
                                             "allowMultipleAllocations", NULL};
        static const Type types[] = {TY_STRING, TY_ATTRS, TY_CAPS, TY_BOOL};
        for (guint i = 0; fields[i] != NULL; i++) {
            if (strcmp(n->str, fields[i]) == 0) {
                n->kind = N_DEVICE_FIELD;
                n->slot = i;
                n->type = types[i];
                return TRUE;
            }
        }
        return check_fail(c, KB_CEL_ERROR_TYPE, n, "undefined field '%s'", n->str);
    }
    if (t == TY_ATTRS || t == TY_CAPS || t == TY_ATTR_DOMAIN || t == TY_CAP_DOMAIN) {
        Node *key = cel_node_new(N_LIT, n->pos);
        key->str = g_steal_pointer(&n->str);
        key->len = strlen(key->str);
        key->lit.t = TY_STRING;
        key->lit.s.p = key->str;
        key->lit.s.n = key->len;
        key->type = TY_STRING;
        cel_node_add(n, key);
        n->kind = N_INDEX;
        return check(c, n);
    }
    if (t == TY_DYN) {
        n->type = TY_DYN;
        return TRUE;
    }
    return check_fail(c, KB_CEL_ERROR_TYPE, n, "type '%s' does not support field selection",
                      cel_type_names[t]);
}

/* The literal domain of device.attributes["d"] (or capacity), if @n is one. */
static const Node *const_domain(const Node *n, DeviceField field)
{
    if (n->kind != N_INDEX || n->kids[0]->kind != N_DEVICE_FIELD || n->kids[0]->slot != field ||
        n->kids[1]->kind != N_LIT || n->kids[1]->lit.t != TY_STRING)
        return NULL;
    return n->kids[1];
}

/* Folds device.attributes["d"].name (kind N_ATTR) and the like into one lookup. */
static void fold_lookup(Node *n, NodeKind kind, const Node *domain, const Node *name)
{
    if (memchr(domain->lit.s.p, '\0', domain->lit.s.n) != NULL ||
        memchr(name->lit.s.p, '\0', name->lit.s.n) != NULL)
        return; /* no device string holds a NUL: the generic path answers */
    /* Copied first: both may be operands of @n, which go now. */
    gsize dlen = domain->lit.s.n, nlen = name->lit.s.n;
    char *d = g_strndup(domain->lit.s.p, dlen);
    char *nm = g_strndup(name->lit.s.p, nlen);
    if (n->kind == N_HAS) {
        g_free(n->str);
        n->str = NULL;
    }
    drop_kids(n);
    n->kind = kind;
    n->str = d;
    n->len = dlen;
    n->name = nm;
    n->name_len = nlen;
    n->height = 1;
}

static gboolean check_index(Checker *c, Node *n)
{
    if (!check(c, n->kids[0]) || !check(c, n->kids[1]))
        return FALSE;
    Type t = n->kids[0]->type, k = n->kids[1]->type;
    if (is_map(t) && t != TY_DEVICE) {
        if (k != TY_STRING && k != TY_DYN)
            return no_overload(c, n, "_[_]");
        n->type = t == TY_ATTRS         ? TY_ATTR_DOMAIN
                  : t == TY_CAPS        ? TY_CAP_DOMAIN
                  : t == TY_ATTR_DOMAIN ? TY_DYN
                                        : TY_QUANTITY;
        const Node *key = n->kids[1];
        if (key->kind != N_LIT || (t != TY_ATTR_DOMAIN && t != TY_CAP_DOMAIN))
            return TRUE;
        const Node *domain =
                const_domain(n->kids[0], t == TY_ATTR_DOMAIN ? FIELD_ATTRIBUTES : FIELD_CAPACITY);
        if (domain != NULL)
            fold_lookup(n, t == TY_ATTR_DOMAIN ? N_ATTR : N_CAP, domain, key);
        return TRUE;
    }
    if (t == TY_LIST && (k == TY_INT || k == TY_UINT || k == TY_DYN)) {
        n->type = n->kids[0]->elem;
        return TRUE;
    }
    if (t == TY_DYN && (k == TY_INT || k == TY_UINT || k == TY_STRING || k == TY_DYN)) {
        n->type = TY_DYN;
        return TRUE;
    }
    return no_overload(c, n, "_[_]");
}

static gboolean check_has(Checker *c, Node *n)
{
    if (!check(c, n->kids[0]))
        return FALSE;
    Type t = n->kids[0]->type;
    if (t != TY_ATTR_DOMAIN && t != TY_CAP_DOMAIN)
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n,
                          "unsupported has() on a %s (only device.attributes[\"<domain>\"].<name> "
                          "and device.capacity[\"<domain>\"].<name>)",
                          cel_type_names[t]);
    n->type = TY_BOOL;
    const Node *domain =
            const_domain(n->kids[0], t == TY_ATTR_DOMAIN ? FIELD_ATTRIBUTES : FIELD_CAPACITY);
    if (domain != NULL) {
        /* fold_lookup copies the name before it frees n->str */
        Node name = {.lit = {.t = TY_STRING, .s = {n->str, strlen(n->str)}}};
        fold_lookup(n, t == TY_ATTR_DOMAIN ? N_HAS_ATTR : N_HAS_CAP, domain, &name);
    }
    return TRUE;
}

static gboolean check_list(Checker *c, Node *n)
{
    gboolean all_lit = TRUE;
    const Node *first = NULL; /* the first element of a known type */
    n->type = TY_LIST;
    n->elem = TY_DYN;
    for (guint i = 0; i < n->n_kids; i++) {
        const Node *k = n->kids[i];
        if (!check(c, n->kids[i]))
            return FALSE;
        /* Kubernetes enables HomogeneousAggregateLiterals: one element type per list. */
        if (first != NULL && !equatable(first->type, first->elem, k->type, k->elem))
            return check_fail(c, KB_CEL_ERROR_TYPE, k,
                              "type mismatch in a list literal: expected '%s' but found '%s'",
                              cel_type_names[first->type], cel_type_names[k->type]);
        if (first == NULL && k->type != TY_DYN)
            first = k;
        n->elem = i == 0 ? k->type : n->elem == k->type ? k->type : TY_DYN;
        all_lit = all_lit && k->kind == N_LIT;
    }
    if (all_lit && n->n_kids > 0) {
        n->is_const = TRUE;
        n->items = g_new(Value, n->n_kids);
        for (guint i = 0; i < n->n_kids; i++)
            n->items[i] = n->kids[i]->lit;
    }
    return TRUE;
}

static gboolean check_logic(Checker *c, Node *n)
{
    for (guint i = 0; i < n->n_kids; i++)
        if (!check(c, n->kids[i]))
            return FALSE;
    for (guint i = 0; i < n->n_kids; i++) {
        Type t = n->kids[i]->type;
        if (t != TY_BOOL && t != TY_DYN)
            return no_overload(c, n, n->kind == N_AND ? "_&&_" : n->kind == N_OR ? "_||_" : "!_");
    }
    n->type = TY_BOOL;
    return TRUE;
}

static gboolean check_cond(Checker *c, Node *n)
{
    for (guint i = 0; i < 3; i++)
        if (!check(c, n->kids[i]))
            return FALSE;
    const Node *yes = n->kids[1], *no = n->kids[2];
    if ((n->kids[0]->type != TY_BOOL && n->kids[0]->type != TY_DYN) ||
        !equatable(yes->type, yes->elem, no->type, no->elem) ||
        (is_numeric(yes->type) && is_numeric(no->type) && yes->type != no->type))
        return no_overload(c, n, "_?_:_");
    /* As CEL's checker joins the branches: dyn if either is. */
    n->type = yes->type == TY_DYN ? TY_DYN : no->type;
    n->elem = yes->elem == no->elem ? yes->elem : TY_DYN;
    return TRUE;
}

static gboolean check_in(Checker *c, Node *n)
{
    Type a = n->kids[0]->type, b = n->kids[1]->type;
    n->type = TY_BOOL;
    if (b == TY_LIST && equatable(a, n->kids[0]->elem, n->kids[1]->elem, TY_DYN))
        return TRUE;
    if (is_map(b) && b != TY_DEVICE && (a == TY_STRING || a == TY_DYN))
        return TRUE;
    if (b == TY_DYN)
        return TRUE;
    return no_overload(c, n, "@in");
}

static gboolean check_arith(Checker *c, Node *n)
{
    Type a = n->kids[0]->type, b = n->kids[1]->type;
    Type t = a == TY_DYN ? b : a;
    if (a == TY_LIST && b == TY_LIST && n->kind == N_ADD)
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n, "unsupported list concatenation");
    gboolean ok = (a == b || a == TY_DYN || b == TY_DYN) &&
                  (t == TY_DYN || t == TY_INT || t == TY_UINT ||
                   (t == TY_DOUBLE && n->kind != N_MOD) || (t == TY_STRING && n->kind == N_ADD));
    if (!ok)
        return no_overload(c, n, cel_op_names[n->kind]);
    n->type = t;
    return TRUE;
}

static gboolean check_binary(Checker *c, Node *n)
{
    if (!check(c, n->kids[0]) || !check(c, n->kids[1]))
        return FALSE;
    const Node *a = n->kids[0], *b = n->kids[1];
    switch (n->kind) {
    case N_EQ:
    case N_NE:
        if (is_map(a->type) || is_map(b->type))
            return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n, "unsupported equality of maps");
        if (!equatable(a->type, a->elem, b->type, b->elem))
            return no_overload(c, n, cel_op_names[n->kind]);
        n->type = TY_BOOL;
        return TRUE;
    case N_LT:
    case N_LE:
    case N_GT:
    case N_GE:
        if (!orderable(a->type, b->type))
            return no_overload(c, n, cel_op_names[n->kind]);
        n->type = TY_BOOL;
        return TRUE;
    case N_IN:
        return check_in(c, n);
    default:
        return check_arith(c, n);
    }
}

static gboolean check_unary(Checker *c, Node *n)
{
    if (!check(c, n->kids[0]))
        return FALSE;
    Type t = n->kids[0]->type;
    if (n->kind == N_NOT) {
        if (t != TY_BOOL && t != TY_DYN)
            return no_overload(c, n, "!_");
        n->type = TY_BOOL;
        return TRUE;
    }
    if (t != TY_INT && t != TY_DOUBLE && t != TY_DYN)
        return no_overload(c, n, "-_");
    n->type = t;
    return TRUE;
}

static const struct {
    const char *name;
    Func fn;
} functions[] = {
        {"size", F_SIZE},
        {"startsWith", F_STARTS_WITH},
        {"endsWith", F_ENDS_WITH},
        {"contains", F_CONTAINS},
        {"matches", F_MATCHES},
        {"lowerAscii", F_LOWER_ASCII},
        {"upperAscii", F_UPPER_ASCII},
        {"quantity", F_QUANTITY},
        {"isQuantity", F_IS_QUANTITY},
        {"semver", F_SEMVER},
        {"isSemver", F_IS_SEMVER},
        {"compareTo", F_COMPARE_TO},
        {"isGreaterThan", F_IS_GREATER_THAN},
        {"isLessThan", F_IS_LESS_THAN},
        {"asInteger", F_AS_INTEGER},
        {"isInteger", F_IS_INTEGER},
        {"sign", F_SIGN},
        {"major", F_MAJOR},
        {"minor", F_MINOR},
        {"patch", F_PATCH},
};

/* Folds quantity("..."), isQuantity("..."), semver("..."[, b]) and isSemver("..."[, b]) with
 * literal arguments. A literal that does not parse stays an error raised when evaluated, as
 * CEL raises it (the API server accepts such an expression). */
static void fold_conversion(Node *n)
{
    for (guint i = n->member; i < n->n_kids; i++)
        if (n->kids[i]->kind != N_LIT)
            return;
    const Value *arg = &n->kids[n->member]->lit;
    gboolean normalize = n->n_kids == 2 && n->kids[1]->lit.b;
    g_autofree char *text = g_strndup(arg->s.p, arg->s.n);
    gboolean has_nul = strlen(text) != arg->s.n;
    Value v = {0};
    g_autofree char *error = NULL;
    if (n->fn == F_QUANTITY || n->fn == F_IS_QUANTITY) {
        g_autoptr(GError) local = NULL;
        gboolean ok = !has_nul && kb_quantity_parse(text, &v.q, &local);
        if (n->fn == F_IS_QUANTITY)
            v = (Value){.t = TY_BOOL, .b = ok};
        else if (ok)
            v.t = TY_QUANTITY;
        else
            error = g_strdup(local != NULL ? local->message : "invalid quantity");
    } else {
        if (normalize) {
            char *norm = cel_semver_normalize(text, arg->s.n);
            g_free(text);
            text = norm;
        }
        gboolean ok = !has_nul && text != NULL && cel_semver_parse(text, strlen(text), &v.v);
        if (n->fn == F_IS_SEMVER)
            v = (Value){.t = TY_BOOL, .b = ok};
        else if (ok)
            v.t = TY_SEMVER;
        else
            error = g_strdup_printf("invalid semantic version \"%.*s\"", (int)arg->s.n, arg->s.p);
    }
    drop_kids(n);
    g_clear_pointer(&n->str, g_free);
    n->height = 1;
    if (error != NULL) {
        n->kind = N_ERROR;
        n->str = g_steal_pointer(&error);
        return;
    }
    n->kind = N_LIT;
    n->lit = v;
    n->str = g_steal_pointer(&text); /* a semver's pre-release points into it */
}

static gboolean has_prefix(const char *s, gsize n, const char *prefix)
{
    gsize len = strlen(prefix);
    return n >= len && memcmp(s, prefix, len) == 0;
}

static gboolean has_suffix(const char *s, gsize n, const char *suffix)
{
    gsize len = strlen(suffix);
    return n >= len && memcmp(s + n - len, suffix, len) == 0;
}

/* Recognizes the plain-string forms of LitMatch in pattern @re; sets n->lit_off and lit_len. */
static void literal_pattern(Node *n, const char *re, gsize len)
{
    gsize off = 0;
    LitMatch kind = LIT_NONE;
    if (has_prefix(re, len, "^.*") && has_suffix(re, len, ".*$") && len >= 6) {
        kind = LIT_ONE_LINE;
        off = 3;
        len -= 6;
    } else if (has_prefix(re, len, ".*") && has_suffix(re, len, ".*") && len >= 4) {
        kind = LIT_CONTAINS;
        off = 2;
        len -= 4;
    } else {
        gboolean start = has_prefix(re, len, "^"),
                 end = has_suffix(re, len, "$") && len > (gsize)start;
        kind = start && end ? LIT_EQUAL : start ? LIT_PREFIX : end ? LIT_SUFFIX : LIT_CONTAINS;
        off = start ? 1 : 0;
        len -= (start ? 1 : 0) + (end ? 1 : 0);
    }
    for (gsize i = off; i < off + len; i++)
        if (strchr("\\.^$|?*+()[]{}", re[i]) != NULL || re[i] == '\0')
            return;
    n->lit_match = kind;
    n->lit_off = (guint)off;
    n->lit_len = (guint)len;
}

/* matches() through the plain-string forms of LitMatch. */
gboolean cel_literal_match(const Node *n, const char *s, gsize len)
{
    const char *lit = n->kids[1]->lit.s.p + n->lit_off;
    gsize ln = n->lit_len;
    switch (n->lit_match) {
    case LIT_PREFIX:
        return ln <= len && memcmp(s, lit, ln) == 0;
    case LIT_SUFFIX:
        return ln <= len && memcmp(s + len - ln, lit, ln) == 0;
    case LIT_EQUAL:
        return ln == len && memcmp(s, lit, ln) == 0;
    case LIT_ONE_LINE:
        if (memchr(s, '\n', len) != NULL)
            return FALSE;
        /* fall through */
    default:
        return ln == 0 || memmem(s, len, lit, ln) != NULL;
    }
}

static gboolean check_matches(Checker *c, Node *n)
{
    const Node *pattern = n->kids[1];
    if (pattern->kind != N_LIT)
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n,
                          "unsupported matches() with a pattern that is not a string literal");
    int code = 0;
    g_autofree char *why = NULL;
    n->regex = cel_regex_compile(pattern->lit.s.p, pattern->lit.s.n, &code, &why);
    if (n->regex == NULL && code == KB_CEL_ERROR_UNSUPPORTED)
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n,
                          "unsupported regular expression \"%.*s\" in matches(): %s",
                          (int)pattern->lit.s.n, pattern->lit.s.p, why);
    /* Kubernetes validates regular expression literals when compiling (ValidateRegexLiterals). */
    if (n->regex == NULL)
        return check_fail(c, KB_CEL_ERROR_SYNTAX, n, "invalid regular expression \"%.*s\": %s",
                          (int)pattern->lit.s.n, pattern->lit.s.p, why);
    literal_pattern(n, pattern->lit.s.p, pattern->lit.s.n);
    return TRUE;
}

/* The result type of a call of @fn on operands of the types in @n (receiver first), or
 * TY_NULL when no overload applies. */
static Type call_type(const Node *n)
{
    Type t[3] = {TY_NULL, TY_NULL, TY_NULL};
    for (guint i = 0; i < n->n_kids && i < 3; i++)
        t[i] = n->kids[i]->type;
    guint argc = n->n_kids;
#define IS(x, ty) ((x) == (ty) || (x) == TY_DYN)
    switch (n->fn) {
    case F_SIZE:
        return argc == 1 && (IS(t[0], TY_STRING) || t[0] == TY_LIST ||
                             (is_map(t[0]) && t[0] != TY_DEVICE))
                       ? TY_INT
                       : TY_NULL;
    case F_STARTS_WITH:
    case F_ENDS_WITH:
    case F_CONTAINS:
    case F_MATCHES:
        return n->member == (n->fn != F_MATCHES || n->member) && argc == 2 && IS(t[0], TY_STRING) &&
                               IS(t[1], TY_STRING)
                       ? TY_BOOL
                       : TY_NULL;
    case F_LOWER_ASCII:
    case F_UPPER_ASCII:
        return n->member && argc == 1 && IS(t[0], TY_STRING) ? TY_STRING : TY_NULL;
    case F_QUANTITY:
    case F_IS_QUANTITY:
        if (n->member || argc != 1 || !IS(t[0], TY_STRING))
            return TY_NULL;
        return n->fn == F_QUANTITY ? TY_QUANTITY : TY_BOOL;
    case F_SEMVER:
    case F_IS_SEMVER:
        if (n->member || argc < 1 || argc > 2 || !IS(t[0], TY_STRING) ||
            (argc == 2 && !IS(t[1], TY_BOOL)))
            return TY_NULL;
        return n->fn == F_SEMVER ? TY_SEMVER : TY_BOOL;
    case F_COMPARE_TO:
    case F_IS_GREATER_THAN:
    case F_IS_LESS_THAN:
        if (!n->member || argc != 2 || !(IS(t[0], TY_QUANTITY) || IS(t[0], TY_SEMVER)) ||
            !(IS(t[1], TY_QUANTITY) || IS(t[1], TY_SEMVER)) ||
            (t[0] != TY_DYN && t[1] != TY_DYN && t[0] != t[1]))
            return TY_NULL;
        return n->fn == F_COMPARE_TO ? TY_INT : TY_BOOL;
    case F_AS_INTEGER:
    case F_IS_INTEGER:
    case F_SIGN:
        /* Kubernetes declares sign(q) as a global function only, although its documentation
         * writes q.sign(); the checker refuses that form, so do we. */
        if (n->member != (n->fn != F_SIGN) || argc != 1 || !IS(t[0], TY_QUANTITY))
            return TY_NULL;
        return n->fn == F_IS_INTEGER ? TY_BOOL : TY_INT;
    case F_MAJOR:
    case F_MINOR:
    case F_PATCH:
        return n->member && argc == 1 && IS(t[0], TY_SEMVER) ? TY_INT : TY_NULL;
    default:
        return TY_NULL;
    }
#undef IS
}

/* exists(x, p), all(x, p) over a list, and cel.bind(x, init, body): @range is checked, then
 * the variable is declared for @body. */
static gboolean check_scoped(Checker *c, Node *n, NodeKind kind)
{
    Node *range = n->kids[kind == N_BIND ? 2 : 0];
    Node *var = n->kids[1];
    Node *body = n->kids[kind == N_BIND ? 3 : 2];
    if (var->kind != N_IDENT)
        return check_fail(c, KB_CEL_ERROR_SYNTAX, var, "%s() needs a variable name",
                          kind == N_BIND ? "cel.bind" : n->str);
    if (!check(c, range))
        return FALSE;
    if (kind != N_BIND && range->type != TY_LIST)
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n, "unsupported %s() over a %s", n->str,
                          cel_type_names[range->type]);
    if (c->n_vars >= G_N_ELEMENTS(c->vars))
        return check_fail(c, KB_CEL_ERROR_LIMIT, n, "too many nested variables");
    VarDecl *d = &c->vars[c->n_vars];
    d->name = var->str;
    d->type = kind == N_BIND ? range->type : range->elem;
    d->elem = kind == N_BIND ? range->elem : TY_DYN;
    n->slot = c->n_vars++;
    gboolean ok = check(c, body);
    c->n_vars--;
    if (!ok)
        return FALSE;
    if (kind != N_BIND && body->type != TY_BOOL && body->type != TY_DYN)
        return check_fail(c, KB_CEL_ERROR_TYPE, body, "%s() needs a bool predicate, not %s", n->str,
                          cel_type_names[body->type]);
    /* Keep range and body only. */
    Node *keep[2] = {range, body};
    for (guint i = 0; i < n->n_kids; i++)
        if (n->kids[i] != range && n->kids[i] != body)
            cel_node_free(n->kids[i]);
    n->kids[0] = keep[0];
    n->kids[1] = keep[1];
    n->n_kids = 2;
    n->kind = kind;
    n->type = kind == N_BIND ? body->type : TY_BOOL;
    n->elem = kind == N_BIND ? body->elem : TY_DYN;
    return TRUE;
}

static gboolean check_call(Checker *c, Node *n)
{
    guint argc = n->n_kids - (n->member ? 1 : 0);
    if (!n->member && strcmp(n->str, "has") == 0) {
        if (argc != 1 || n->kids[0]->kind != N_SELECT)
            return check_fail(c, KB_CEL_ERROR_SYNTAX, n, "invalid argument to has() macro");
        Node *sel = n->kids[0];
        n->kids[0] = sel->kids[0];
        sel->n_kids = 0;
        g_free(n->str);
        n->str = g_steal_pointer(&sel->str);
        cel_node_free(sel);
        n->kind = N_HAS;
        return check_has(c, n);
    }
    if (n->member && argc == 2 && (strcmp(n->str, "exists") == 0 || strcmp(n->str, "all") == 0))
        return check_scoped(c, n, strcmp(n->str, "exists") == 0 ? N_EXISTS : N_ALL);
    if (n->member && argc == 3 && strcmp(n->str, "bind") == 0 && n->kids[0]->kind == N_IDENT &&
        strcmp(n->kids[0]->str, "cel") == 0)
        return check_scoped(c, n, N_BIND);
    for (guint i = 0; i < G_N_ELEMENTS(functions); i++)
        if (strcmp(n->str, functions[i].name) == 0)
            n->fn = functions[i].fn;
    if (n->fn == F_NONE)
        return check_fail(c, KB_CEL_ERROR_UNSUPPORTED, n, "unsupported function \"%s\"", n->str);
    for (guint i = 0; i < n->n_kids; i++)
        if (!check(c, n->kids[i]))
            return FALSE;
    n->type = call_type(n);
    if (n->type == TY_NULL) {
        g_autofree char *args = arg_types(n);
        return check_fail(c, KB_CEL_ERROR_TYPE, n,
                          "found no matching overload for '%s' applied to '%s%s'", n->str,
                          n->member ? "receiver " : "", args);
    }
    if (n->fn == F_MATCHES)
        return check_matches(c, n);
    if (n->fn == F_QUANTITY || n->fn == F_IS_QUANTITY || n->fn == F_SEMVER || n->fn == F_IS_SEMVER)
        fold_conversion(n);
    return TRUE;
}

static gboolean check_node(Checker *c, Node *n)
{
    switch (n->kind) {
    case N_LIT:
        n->type = n->lit.t;
        return TRUE;
    case N_IDENT:
        return check_ident(c, n);
    case N_SELECT:
        return check_select(c, n);
    case N_INDEX:
        return check_index(c, n);
    case N_LIST:
        return check_list(c, n);
    case N_CALL:
        return check_call(c, n);
    case N_AND:
    case N_OR:
        return check_logic(c, n);
    case N_NOT:
    case N_NEG:
        return check_unary(c, n);
    case N_COND:
        return check_cond(c, n);
    default:
        return check_binary(c, n);
    }
}

static gboolean check(Checker *c, Node *n)
{
    if (n->checked)
        return TRUE;
    if (!check_node(c, n))
        return FALSE;
    n->checked = TRUE;
    return TRUE;
}

gboolean cel_check(Node *root, GError **error)
{
    Checker c = {.error = error};
    return check(&c, root);
}
