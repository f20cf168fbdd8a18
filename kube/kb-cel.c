/*
 * CEL device selectors; see kb-cel.h.
 *
 * Three passes: a recursive-descent parser builds a tree (chains of && and || become one
 * n-ary node, so a long list of alternatives does not deepen it); a checker gives every node
 * its static type as CEL's checker does, refuses what we do not implement, resolves names and
 * folds what does not depend on the device (literal lists, quantity("40Gi"), regular
 * expressions, device.attributes["d"].name into one lookup); the evaluator walks the tree per
 * device with values on the C stack. It allocates only for strings it builds (+, lowerAscii),
 * list literals whose elements depend on the device, matches() and errors.
 *
 * Semantics follow cel-go as Kubernetes configures it for DRA: heterogeneous == is false, not
 * an error; int, uint and double compare across types; && and || absorb an error when the
 * other side decides (false && error is false); a domain missing from device.attributes or
 * device.capacity is an empty map, a missing name in it is "no such key".
 */
#include "kube/kb-cel.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK(kb - cel - error - quark, kb_cel_error)

/* ---- values and types ------------------------------------------------------------------- */

typedef enum {
    TY_DYN, /* static only: known at run time (attribute values) */
    TY_NULL,
    TY_BOOL,
    TY_INT,
    TY_UINT,
    TY_DOUBLE,
    TY_STRING,
    TY_LIST,
    TY_QUANTITY,
    TY_SEMVER,
    TY_DEVICE,
    TY_ATTRS,       /* device.attributes */
    TY_CAPS,        /* device.capacity */
    TY_ATTR_DOMAIN, /* device.attributes["d"] */
    TY_CAP_DOMAIN,  /* device.capacity["d"] */
} Type;

static const char *const type_names[] = {
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

typedef struct {
    guint64 major, minor, patch;
    const char *pre; /* pre-release identifiers, dot-separated; borrowed */
    guint32 pre_len;
} Semver;

typedef struct Value Value;
struct Value {
    Type t;
    union {
        gboolean b;
        gint64 i;
        guint64 u;
        double d;
        struct {
            const char *p; /* not NUL-terminated; borrowed */
            gsize n;
        } s; /* TY_STRING, and the domain of TY_ATTR_DOMAIN and TY_CAP_DOMAIN */
        struct {
            const Value *items;
            guint n;
        } l;
        KbQuantity q;
        Semver v;
    };
};

/* ---- tree ------------------------------------------------------------------------------- */

typedef enum {
    N_LIT,
    N_ERROR, /* a constant that fails when evaluated (quantity("bad")), as CEL fails then */
    N_LIST,
    N_IDENT,
    N_DEVICE,
    N_DEVICE_FIELD, /* device.<field>: slot is a DeviceField */
    N_VAR,
    N_SELECT,
    N_INDEX,
    N_HAS,
    N_ATTR,     /* device.attributes["<str>"].<name> */
    N_CAP,      /* device.capacity["<str>"].<name> */
    N_HAS_ATTR, /* has(device.attributes["<str>"].<name>) */
    N_HAS_CAP,
    N_CALL,
    N_AND,
    N_OR,
    N_NOT,
    N_NEG,
    N_COND,
    N_EQ,
    N_NE,
    N_LT,
    N_LE,
    N_GT,
    N_GE,
    N_IN,
    N_ADD,
    N_SUB,
    N_MUL,
    N_DIV,
    N_MOD,
    N_EXISTS,
    N_ALL,
    N_BIND,
} NodeKind;

static const char *const op_names[] = {
        [N_EQ] = "_==_", [N_NE] = "_!=_", [N_LT] = "_<_",  [N_LE] = "_<=_", [N_GT] = "_>_",
        [N_GE] = "_>=_", [N_IN] = "@in",  [N_ADD] = "_+_", [N_SUB] = "_-_", [N_MUL] = "_*_",
        [N_DIV] = "_/_", [N_MOD] = "_%_", [N_NOT] = "!_",  [N_NEG] = "-_",
};

typedef enum {
    FIELD_DRIVER,
    FIELD_ATTRIBUTES,
    FIELD_CAPACITY,
    FIELD_ALLOW_MULTIPLE_ALLOCATIONS,
} DeviceField;

typedef enum {
    F_NONE,
    F_SIZE,
    F_STARTS_WITH,
    F_ENDS_WITH,
    F_CONTAINS,
    F_MATCHES,
    F_LOWER_ASCII,
    F_UPPER_ASCII,
    F_QUANTITY,
    F_IS_QUANTITY,
    F_SEMVER,
    F_IS_SEMVER,
    F_COMPARE_TO,
    F_IS_GREATER_THAN,
    F_IS_LESS_THAN,
    F_AS_INTEGER,
    F_IS_INTEGER,
    F_SIGN,
    F_MAJOR,
    F_MINOR,
    F_PATCH,
} Func;

/* Patterns that are a plain string X, answered without the regex engine. */
typedef enum {
    LIT_NONE,
    LIT_CONTAINS, /* "X" and ".*X.*" */
    LIT_PREFIX,   /* "^X" */
    LIT_SUFFIX,   /* "X$" */
    LIT_EQUAL,    /* "^X$" */
    LIT_ONE_LINE, /* "^.*X.*$": contains X and no newline ("." does not match one) */
} LitMatch;

typedef struct Node Node;
struct Node {
    NodeKind kind;
    Type type; /* static type, set by the checker */
    Type elem; /* element type of a TY_LIST */
    Func fn;
    gboolean member;   /* N_CALL: receiver.fn(args), the receiver is kids[0] */
    gboolean is_const; /* N_LIST: every element is a literal, items holds them */
    gboolean checked;
    guint pos; /* byte offset in the expression */
    guint height;
    guint slot; /* N_VAR, N_EXISTS, N_ALL, N_BIND */
    Value lit;  /* N_LIT */
    char *str;  /* identifier, field, function, string literal bytes, domain, error message */
    gsize len;
    char *name; /* N_ATTR, N_CAP, N_HAS_*: the attribute name (str is the domain) */
    gsize name_len;
    Node **kids;
    guint n_kids;
    Value *items;           /* N_LIST with is_const */
    GRegex *regex;          /* F_MATCHES with a literal pattern */
    LitMatch lit_match;     /* F_MATCHES: the pattern is a plain string in one of these forms */
    guint lit_off, lit_len; /* ... that string, in kids[1]'s literal */
};

static void node_free(Node *n)
{
    if (n == NULL)
        return;
    for (guint i = 0; i < n->n_kids; i++)
        node_free(n->kids[i]);
    g_free(n->kids);
    g_free(n->str);
    g_free(n->name);
    g_free(n->items);
    if (n->regex != NULL)
        g_regex_unref(n->regex);
    g_free(n);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Node, node_free)

static Node *node_new(NodeKind kind, guint pos)
{
    Node *n = g_new0(Node, 1);
    n->kind = kind;
    n->pos = pos;
    n->height = 1;
    return n;
}

static void node_add(Node *n, Node *kid)
{
    n->kids = g_renew(Node *, n->kids, n->n_kids + 1);
    n->kids[n->n_kids++] = kid;
    if (kid->height + 1 > n->height)
        n->height = kid->height + 1;
}

struct KbCelProgram {
    char *expression;
    Node *root;
};

/* ---- lexer ------------------------------------------------------------------------------ */

typedef enum {
    T_EOF,
    T_INT,
    T_UINT,
    T_DOUBLE,
    T_STRING,
    T_BYTES,
    T_IDENT,
    T_TRUE,
    T_FALSE,
    T_NULL,
    T_IN,
    T_LPAREN,
    T_RPAREN,
    T_LBRACKET,
    T_RBRACKET,
    T_LBRACE,
    T_RBRACE,
    T_DOT,
    T_COMMA,
    T_QUESTION,
    T_COLON,
    T_AND,
    T_OR,
    T_NOT,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PERCENT,
} TokKind;

typedef struct {
    TokKind kind;
    guint start, end;
    guint64 u; /* T_INT (magnitude: a negative literal is "-" then T_INT), T_UINT */
    double d;
    GString *s; /* T_STRING, T_BYTES, T_IDENT */
} Token;

typedef struct {
    const char *src;
    gsize len;
    gsize pos;
    Token tok;
    guint depth;
    GError **error;
} Parser;

static gboolean fail(Parser *p, int code, guint pos, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean fail(Parser *p, int code, guint pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (p->error != NULL && *p->error == NULL)
        g_set_error(p->error, KB_CEL_ERROR, code, "%s (at offset %u)", msg, pos);
    return FALSE;
}

static const char *const reserved_words[] = {
        "as",  "break", "const",   "continue",  "else",   "for", "function", "if",    "import",
        "let", "loop",  "package", "namespace", "return", "var", "void",     "while", NULL,
};

static void token_clear(Token *t)
{
    if (t->s != NULL)
        g_string_free(t->s, TRUE);
    memset(t, 0, sizeof(*t));
}

static void append_code_point(GString *s, gunichar c)
{
    g_string_append_unichar(s, c);
}

static int hex_value(char c)
{
    return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* One escape sequence after a backslash at p->src[p->pos]; appends what it stands for. */
static gboolean lex_escape(Parser *p, GString *out, gboolean bytes)
{
    guint at = p->pos - 1;
    if (p->pos >= p->len)
        return fail(p, KB_CEL_ERROR_SYNTAX, at, "unterminated escape sequence");
    char c = p->src[p->pos++];
    static const char simple_in[] = "abfnrtv\\'\"`?";
    static const char simple_out[] = "\a\b\f\n\r\t\v\\'\"`?";
    const char *hit = strchr(simple_in, c);
    if (hit != NULL && c != '\0') {
        g_string_append_c(out, simple_out[hit - simple_in]);
        return TRUE;
    }
    guint digits = c == 'x' || c == 'X' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    guint32 v = 0;
    if (digits > 0) {
        for (guint i = 0; i < digits; i++) {
            int h = p->pos < p->len ? hex_value(p->src[p->pos]) : -1;
            if (h < 0)
                return fail(p, KB_CEL_ERROR_SYNTAX, at, "invalid \\%c escape sequence", c);
            v = v * 16 + (guint32)h;
            p->pos++;
        }
    } else if (c >= '0' && c <= '3') {
        v = (guint32)(c - '0');
        for (guint i = 0; i < 2; i++) {
            if (p->pos >= p->len || p->src[p->pos] < '0' || p->src[p->pos] > '7')
                return fail(p, KB_CEL_ERROR_SYNTAX, at, "invalid octal escape sequence");
            v = v * 8 + (guint32)(p->src[p->pos++] - '0');
        }
    } else {
        return fail(p, KB_CEL_ERROR_SYNTAX, at, "invalid escape sequence \"\\%c\"", c);
    }
    if (bytes && digits <= 2) {
        g_string_append_c(out, (char)v);
        return TRUE;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return fail(p, KB_CEL_ERROR_SYNTAX, at, "invalid unicode code point in escape sequence");
    append_code_point(out, v);
    return TRUE;
}

/* A quoted literal starting at p->pos (the quote), after an optional r/b prefix. */
static gboolean lex_string(Parser *p, gboolean raw, gboolean bytes)
{
    guint start = p->tok.start;
    char q = p->src[p->pos];
    gboolean triple = p->pos + 2 < p->len && p->src[p->pos + 1] == q && p->src[p->pos + 2] == q;
    p->pos += triple ? 3 : 1;
    GString *out = g_string_new(NULL);
    p->tok.s = out;
    p->tok.kind = bytes ? T_BYTES : T_STRING;
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, KB_CEL_ERROR_SYNTAX, start, "unterminated string literal");
        char c = p->src[p->pos];
        if (c == q && (!triple || (p->pos + 2 < p->len && p->src[p->pos + 1] == q &&
                                   p->src[p->pos + 2] == q))) {
            p->pos += triple ? 3 : 1;
            return TRUE;
        }
        if (!triple && (c == '\n' || c == '\r'))
            return fail(p, KB_CEL_ERROR_SYNTAX, start, "newline in string literal");
        p->pos++;
        if (c == '\\' && !raw) {
            if (!lex_escape(p, out, bytes))
                return FALSE;
        } else {
            g_string_append_c(out, c);
        }
    }
}

static gboolean lex_number(Parser *p)
{
    const char *s = p->src;
    gsize i = p->pos;
    guint start = p->tok.start;
    if (s[i] == '0' && i + 1 < p->len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        guint64 v = 0;
        gsize first = i;
        for (; i < p->len && g_ascii_isxdigit(s[i]); i++) {
            if (v > G_MAXUINT64 / 16)
                return fail(p, KB_CEL_ERROR_SYNTAX, start, "integer literal out of range");
            v = v * 16 + (guint64)g_ascii_xdigit_value(s[i]);
        }
        if (i == first)
            return fail(p, KB_CEL_ERROR_SYNTAX, start, "invalid hexadecimal literal");
        p->tok.u = v;
    } else {
        gsize digits_end = i;
        while (digits_end < p->len && g_ascii_isdigit(s[digits_end]))
            digits_end++;
        gsize j = digits_end;
        gboolean is_double = FALSE;
        if (j + 1 < p->len && s[j] == '.' && g_ascii_isdigit(s[j + 1])) {
            is_double = TRUE;
            for (j++; j < p->len && g_ascii_isdigit(s[j]); j++)
                ;
        }
        if (j < p->len && (s[j] == 'e' || s[j] == 'E')) {
            gsize k = j + 1;
            if (k < p->len && (s[k] == '+' || s[k] == '-'))
                k++;
            if (k < p->len && g_ascii_isdigit(s[k])) {
                is_double = TRUE;
                for (j = k; j < p->len && g_ascii_isdigit(s[j]); j++)
                    ;
            }
        }
        if (is_double) {
            g_autofree char *text = g_strndup(s + i, j - i);
            p->tok.kind = T_DOUBLE;
            p->tok.d = g_ascii_strtod(text, NULL);
            p->pos = j;
            return TRUE;
        }
        guint64 v = 0;
        for (; i < digits_end; i++) {
            guint d = (guint)(s[i] - '0');
            if (v > (G_MAXUINT64 - d) / 10)
                return fail(p, KB_CEL_ERROR_SYNTAX, start, "integer literal out of range");
            v = v * 10 + d;
        }
        p->tok.u = v;
    }
    if (i < p->len && (s[i] == 'u' || s[i] == 'U')) {
        p->tok.kind = T_UINT;
        i++;
    } else {
        p->tok.kind = T_INT;
        if (p->tok.u > (guint64)G_MAXINT64 + 1)
            return fail(p, KB_CEL_ERROR_SYNTAX, start, "integer literal out of range");
    }
    p->pos = i;
    return TRUE;
}

static gboolean lex_ident(Parser *p)
{
    gsize i = p->pos;
    while (i < p->len && (g_ascii_isalnum(p->src[i]) || p->src[i] == '_'))
        i++;
    gsize n = i - p->pos;
    const char *w = p->src + p->pos;
    /* String prefixes: r, b and both, in either order and case. */
    if (n <= 2 && i < p->len && (p->src[i] == '\'' || p->src[i] == '"')) {
        gboolean raw = FALSE, bytes = FALSE, ok = TRUE;
        for (gsize k = 0; k < n; k++) {
            char c = g_ascii_tolower(w[k]);
            if (c == 'r' && !raw)
                raw = TRUE;
            else if (c == 'b' && !bytes)
                bytes = TRUE;
            else
                ok = FALSE;
        }
        if (ok) {
            p->pos = i;
            return lex_string(p, raw, bytes);
        }
    }
    p->pos = i;
    if (n == 4 && memcmp(w, "true", 4) == 0)
        p->tok.kind = T_TRUE;
    else if (n == 5 && memcmp(w, "false", 5) == 0)
        p->tok.kind = T_FALSE;
    else if (n == 4 && memcmp(w, "null", 4) == 0)
        p->tok.kind = T_NULL;
    else if (n == 2 && memcmp(w, "in", 2) == 0)
        p->tok.kind = T_IN;
    else {
        for (guint k = 0; reserved_words[k] != NULL; k++)
            if (strlen(reserved_words[k]) == n && memcmp(w, reserved_words[k], n) == 0)
                return fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "reserved identifier \"%.*s\"",
                            (int)n, w);
        p->tok.kind = T_IDENT;
        p->tok.s = g_string_new_len(w, (gssize)n);
    }
    return TRUE;
}

static gboolean lex_punct(Parser *p)
{
    static const struct {
        const char *text;
        TokKind kind;
    } puncts[] = {
            {"&&", T_AND},   {"||", T_OR},    {"==", T_EQ},    {"!=", T_NE},      {"<=", T_LE},
            {">=", T_GE},    {"(", T_LPAREN}, {")", T_RPAREN}, {"[", T_LBRACKET}, {"]", T_RBRACKET},
            {"{", T_LBRACE}, {"}", T_RBRACE}, {".", T_DOT},    {",", T_COMMA},    {"?", T_QUESTION},
            {":", T_COLON},  {"!", T_NOT},    {"<", T_LT},     {">", T_GT},       {"+", T_PLUS},
            {"-", T_MINUS},  {"*", T_STAR},   {"/", T_SLASH},  {"%", T_PERCENT},
    };
    for (guint k = 0; k < G_N_ELEMENTS(puncts); k++) {
        gsize n = strlen(puncts[k].text);
        if (p->pos + n <= p->len && memcmp(p->src + p->pos, puncts[k].text, n) == 0) {
            p->tok.kind = puncts[k].kind;
            p->pos += n;
            return TRUE;
        }
    }
    char c = p->src[p->pos];
    if (c == '`')
        return fail(p, KB_CEL_ERROR_UNSUPPORTED, p->tok.start,
                    "unsupported quoted identifier (`...`)");
    if (g_ascii_isprint(c))
        return fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "unexpected character '%c'", c);
    return fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "unexpected byte 0x%02x", (guchar)c);
}

/* Reads the next token into p->tok. */
static gboolean lex(Parser *p)
{
    token_clear(&p->tok);
    for (;;) {
        while (p->pos < p->len && strchr(" \t\n\r\f", p->src[p->pos]) != NULL)
            p->pos++;
        if (p->pos + 1 < p->len && p->src[p->pos] == '/' && p->src[p->pos + 1] == '/') {
            while (p->pos < p->len && p->src[p->pos] != '\n')
                p->pos++;
            continue;
        }
        break;
    }
    p->tok.start = (guint)p->pos;
    if (p->pos >= p->len) {
        p->tok.kind = T_EOF;
        p->tok.end = p->tok.start;
        return TRUE;
    }
    char c = p->src[p->pos];
    gboolean ok;
    if (g_ascii_isdigit(c) ||
        (c == '.' && p->pos + 1 < p->len && g_ascii_isdigit(p->src[p->pos + 1])))
        ok = lex_number(p);
    else if (g_ascii_isalpha(c) || c == '_')
        ok = lex_ident(p);
    else if (c == '\'' || c == '"')
        ok = lex_string(p, FALSE, FALSE);
    else
        ok = lex_punct(p);
    p->tok.end = (guint)p->pos;
    return ok;
}

/* The kind of the token after the current one, without consuming anything. */
static TokKind peek_kind(Parser *p)
{
    Parser copy = *p;
    copy.tok = (Token){0};
    copy.error = NULL;
    TokKind kind = lex(&copy) ? copy.tok.kind : T_EOF;
    token_clear(&copy.tok);
    return kind;
}

/* ---- parser ----------------------------------------------------------------------------- */

static Node *parse_expr(Parser *p);

static gboolean expect(Parser *p, TokKind kind, const char *what)
{
    if (p->tok.kind != kind)
        return fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "expected %s", what);
    return lex(p);
}

/* Refuses a node whose subtree is deeper than the limit (checked as the tree grows, so that
 * no later pass ever recurses deeper than KB_CEL_MAX_DEPTH). */
static Node *bounded(Parser *p, Node *n)
{
    if (n != NULL && n->height > KB_CEL_MAX_DEPTH) {
        fail(p, KB_CEL_ERROR_LIMIT, n->pos, "expression nested deeper than %d levels",
             KB_CEL_MAX_DEPTH);
        node_free(n);
        return NULL;
    }
    return n;
}

/* Arguments of a call, after its "(": expressions up to ")". */
static gboolean parse_args(Parser *p, Node *call)
{
    if (!lex(p))
        return FALSE;
    if (p->tok.kind == T_RPAREN)
        return lex(p);
    for (;;) {
        Node *arg = parse_expr(p);
        if (arg == NULL)
            return FALSE;
        node_add(call, arg);
        if (p->tok.kind == T_COMMA) {
            if (!lex(p))
                return FALSE;
            continue;
        }
        return expect(p, T_RPAREN, "\",\" or \")\" in an argument list");
    }
}

static Node *parse_list(Parser *p)
{
    g_autoptr(Node) list = node_new(N_LIST, p->tok.start);
    if (!lex(p))
        return NULL;
    while (p->tok.kind != T_RBRACKET) {
        if (p->tok.kind == T_QUESTION) {
            fail(p, KB_CEL_ERROR_UNSUPPORTED, p->tok.start, "unsupported optional list element");
            return NULL;
        }
        Node *e = parse_expr(p);
        if (e == NULL)
            return NULL;
        node_add(list, e);
        if (p->tok.kind == T_COMMA) {
            if (!lex(p))
                return NULL;
        } else if (p->tok.kind != T_RBRACKET) {
            fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "expected \",\" or \"]\" in a list");
            return NULL;
        }
    }
    if (!lex(p))
        return NULL;
    return bounded(p, g_steal_pointer(&list));
}

static Node *literal(Parser *p, Type t)
{
    Node *n = node_new(N_LIT, p->tok.start);
    n->lit.t = t;
    switch (t) {
    case TY_BOOL:
        n->lit.b = p->tok.kind == T_TRUE;
        break;
    case TY_INT:
        n->lit.i = (gint64)p->tok.u;
        break;
    case TY_UINT:
        n->lit.u = p->tok.u;
        break;
    case TY_DOUBLE:
        n->lit.d = p->tok.d;
        break;
    case TY_STRING:
        n->len = p->tok.s->len;
        n->str = g_string_free(g_steal_pointer(&p->tok.s), FALSE);
        n->lit.s.p = n->str;
        n->lit.s.n = n->len;
        break;
    default:
        break;
    }
    if (!lex(p)) {
        node_free(n);
        return NULL;
    }
    return n;
}

static Node *parse_ident_or_call(Parser *p)
{
    guint pos = p->tok.start;
    g_autofree char *name = g_string_free(g_steal_pointer(&p->tok.s), FALSE);
    if (!lex(p))
        return NULL;
    if (p->tok.kind == T_LBRACE) {
        fail(p, KB_CEL_ERROR_UNSUPPORTED, pos, "unsupported message construction \"%s{...}\"",
             name);
        return NULL;
    }
    g_autoptr(Node) n = node_new(p->tok.kind == T_LPAREN ? N_CALL : N_IDENT, pos);
    n->str = g_steal_pointer(&name);
    if (n->kind == N_CALL && !parse_args(p, n))
        return NULL;
    return bounded(p, g_steal_pointer(&n));
}

static Node *parse_primary(Parser *p)
{
    switch (p->tok.kind) {
    case T_INT:
        if (p->tok.u > G_MAXINT64) {
            fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "integer literal out of range");
            return NULL;
        }
        return literal(p, TY_INT);
    case T_UINT:
        return literal(p, TY_UINT);
    case T_DOUBLE:
        return literal(p, TY_DOUBLE);
    case T_STRING:
        return literal(p, TY_STRING);
    case T_TRUE:
    case T_FALSE:
        return literal(p, TY_BOOL);
    case T_NULL:
        return literal(p, TY_NULL);
    case T_BYTES:
        fail(p, KB_CEL_ERROR_UNSUPPORTED, p->tok.start, "unsupported bytes literal");
        return NULL;
    case T_IDENT:
        return parse_ident_or_call(p);
    case T_LPAREN: {
        if (!lex(p))
            return NULL;
        g_autoptr(Node) e = parse_expr(p);
        if (e == NULL || !expect(p, T_RPAREN, "\")\""))
            return NULL;
        return g_steal_pointer(&e);
    }
    case T_LBRACKET:
        return parse_list(p);
    case T_LBRACE:
        fail(p, KB_CEL_ERROR_UNSUPPORTED, p->tok.start, "unsupported map literal");
        return NULL;
    case T_DOT:
        fail(p, KB_CEL_ERROR_UNSUPPORTED, p->tok.start,
             "unsupported leading \".\" (root-scoped name)");
        return NULL;
    case T_EOF:
        fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "unexpected end of expression");
        return NULL;
    default:
        fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "unexpected \"%.*s\"",
             (int)(p->tok.end - p->tok.start), p->src + p->tok.start);
        return NULL;
    }
}

/* ".name", ".name(args)" or "[index]" after @operand, which it takes. */
static Node *parse_member_step(Parser *p, Node *operand)
{
    g_autoptr(Node) left = operand;
    guint pos = p->tok.start;
    if (p->tok.kind == T_LBRACKET) {
        if (!lex(p))
            return NULL;
        if (p->tok.kind == T_QUESTION) {
            fail(p, KB_CEL_ERROR_UNSUPPORTED, pos, "unsupported optional index \"[?\"");
            return NULL;
        }
        g_autoptr(Node) idx = node_new(N_INDEX, pos);
        node_add(idx, g_steal_pointer(&left));
        Node *key = parse_expr(p);
        if (key == NULL)
            return NULL;
        node_add(idx, key);
        if (!expect(p, T_RBRACKET, "\"]\""))
            return NULL;
        return bounded(p, g_steal_pointer(&idx));
    }
    if (!lex(p))
        return NULL;
    if (p->tok.kind == T_QUESTION) {
        fail(p, KB_CEL_ERROR_UNSUPPORTED, pos, "unsupported optional field selection \".?\"");
        return NULL;
    }
    if (p->tok.kind != T_IDENT) {
        fail(p, KB_CEL_ERROR_SYNTAX, p->tok.start, "expected a field name after \".\"");
        return NULL;
    }
    g_autofree char *name = g_string_free(g_steal_pointer(&p->tok.s), FALSE);
    if (!lex(p))
        return NULL;
    g_autoptr(Node) n = node_new(p->tok.kind == T_LPAREN ? N_CALL : N_SELECT, pos);
    n->str = g_steal_pointer(&name);
    n->member = n->kind == N_CALL;
    node_add(n, g_steal_pointer(&left));
    if (n->kind == N_CALL && !parse_args(p, n))
        return NULL;
    return bounded(p, g_steal_pointer(&n));
}

static Node *parse_member(Parser *p)
{
    Node *n = parse_primary(p);
    while (n != NULL && (p->tok.kind == T_DOT || p->tok.kind == T_LBRACKET))
        n = parse_member_step(p, n);
    return n;
}

static Node *parse_unary(Parser *p)
{
    TokKind op = p->tok.kind;
    if (op != T_NOT && op != T_MINUS)
        return parse_member(p);
    guint pos = p->tok.start;
    guint count = 0;
    while (p->tok.kind == op) {
        count++;
        if (!lex(p))
            return NULL;
    }
    g_autoptr(Node) operand = NULL;
    /* "-9223372036854775808" is a literal: the sign belongs to it, as in CEL's parser. */
    if (op == T_MINUS && p->tok.kind == T_INT && peek_kind(p) != T_DOT &&
        peek_kind(p) != T_LBRACKET) {
        operand = node_new(N_LIT, p->tok.start);
        operand->lit.t = TY_INT;
        operand->lit.i = (gint64)(0 - p->tok.u);
        count--;
        if (!lex(p))
            return NULL;
    } else {
        operand = parse_member(p);
        if (operand == NULL)
            return NULL;
    }
    while (count-- > 0) {
        g_autoptr(Node) n = node_new(op == T_NOT ? N_NOT : N_NEG, pos);
        node_add(n, g_steal_pointer(&operand));
        operand = bounded(p, g_steal_pointer(&n));
        if (operand == NULL)
            return NULL;
    }
    return g_steal_pointer(&operand);
}

typedef struct {
    TokKind tok;
    NodeKind kind;
} BinOp;

static const BinOp mul_ops[] = {{T_STAR, N_MUL}, {T_SLASH, N_DIV}, {T_PERCENT, N_MOD}, {0, 0}};
static const BinOp add_ops[] = {{T_PLUS, N_ADD}, {T_MINUS, N_SUB}, {0, 0}};
static const BinOp rel_ops[] = {{T_EQ, N_EQ}, {T_NE, N_NE}, {T_LT, N_LT}, {T_LE, N_LE},
                                {T_GT, N_GT}, {T_GE, N_GE}, {T_IN, N_IN}, {0, 0}};

/* A left-associative chain of the operators in @ops over operands read by @next. */
static Node *parse_binary(Parser *p, const BinOp *ops, Node *(*next)(Parser *))
{
    g_autoptr(Node) left = next(p);
    for (;;) {
        if (left == NULL)
            return NULL;
        const BinOp *op = ops;
        while (op->tok != 0 && op->tok != p->tok.kind)
            op++;
        if (op->tok == 0)
            return g_steal_pointer(&left);
        g_autoptr(Node) n = node_new(op->kind, p->tok.start);
        if (!lex(p))
            return NULL;
        node_add(n, g_steal_pointer(&left));
        Node *right = next(p);
        if (right == NULL)
            return NULL;
        node_add(n, right);
        left = bounded(p, g_steal_pointer(&n));
    }
}

static Node *parse_mul(Parser *p)
{
    return parse_binary(p, mul_ops, parse_unary);
}

static Node *parse_add(Parser *p)
{
    return parse_binary(p, add_ops, parse_mul);
}

static Node *parse_rel(Parser *p)
{
    return parse_binary(p, rel_ops, parse_add);
}

/* A chain of && (or ||) as one n-ary node; nested chains of the same operator merge into it. */
static Node *parse_logical(Parser *p, TokKind tok, NodeKind kind, Node *(*next)(Parser *))
{
    g_autoptr(Node) first = next(p);
    if (first == NULL || p->tok.kind != tok)
        return g_steal_pointer(&first);
    g_autoptr(Node) n = node_new(kind, p->tok.start);
    Node *operand = g_steal_pointer(&first);
    for (;;) {
        if (operand->kind == kind) {
            for (guint i = 0; i < operand->n_kids; i++)
                node_add(n, operand->kids[i]);
            operand->n_kids = 0;
            node_free(operand);
        } else {
            node_add(n, operand);
        }
        if (p->tok.kind != tok)
            break;
        if (!lex(p))
            return NULL;
        operand = next(p);
        if (operand == NULL)
            return NULL;
    }
    return bounded(p, g_steal_pointer(&n));
}

static Node *parse_and(Parser *p)
{
    return parse_logical(p, T_AND, N_AND, parse_rel);
}

static Node *parse_or(Parser *p)
{
    return parse_logical(p, T_OR, N_OR, parse_and);
}

static Node *parse_expr(Parser *p)
{
    if (++p->depth > KB_CEL_MAX_DEPTH) {
        fail(p, KB_CEL_ERROR_LIMIT, p->tok.start, "expression nested deeper than %d levels",
             KB_CEL_MAX_DEPTH);
        return NULL;
    }
    g_autoptr(Node) cond = parse_or(p);
    if (cond != NULL && p->tok.kind == T_QUESTION) {
        g_autoptr(Node) n = node_new(N_COND, p->tok.start);
        if (!lex(p))
            return NULL;
        node_add(n, g_steal_pointer(&cond));
        Node *yes = parse_or(p);
        if (yes == NULL)
            return NULL;
        node_add(n, yes);
        if (!expect(p, T_COLON, "\":\" in a conditional"))
            return NULL;
        Node *no = parse_expr(p);
        if (no == NULL)
            return NULL;
        node_add(n, no);
        cond = bounded(p, g_steal_pointer(&n));
    }
    p->depth--;
    return g_steal_pointer(&cond);
}

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
static gboolean semver_parse(const char *s, gsize n, Semver *out)
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
static char *semver_normalize(const char *s, gsize n)
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

static int cmp_u64(guint64 a, guint64 b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

static int semver_compare(const Semver *a, const Semver *b)
{
    int c = cmp_u64(a->major, b->major);
    if (c == 0)
        c = cmp_u64(a->minor, b->minor);
    if (c == 0)
        c = cmp_u64(a->patch, b->patch);
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
            c = cmp_u64(x, y);
        } else if (an != bn) {
            c = an ? -1 : 1;
        } else {
            gsize la = ie - i, lb = je - j;
            c = memcmp(a->pre + i, b->pre + j, MIN(la, lb));
            c = c != 0 ? (c < 0 ? -1 : 1) : cmp_u64(la, lb);
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
static int quantity_compare(const KbQuantity *a, const KbQuantity *b)
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
        c = cmp_u64(ma, mb);
    }
    return sa > 0 ? c : -c;
}

/* The quantity as an int64 when it is a whole number in range (apimachinery's AsInt64). */
static gboolean quantity_as_int64(const KbQuantity *q, gint64 *out)
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
            if (last != RX_ATOM && last != RX_GROUP)
                return rx_refuse(rx, last == RX_QUANT ? "repeated or possessive quantifier"
                                                      : "quantifier with nothing to repeat");
            if (last == RX_GROUP && last_group_complex)
                return rx_refuse(rx, "quantifier on a group that holds a quantifier or \"|\"");
            if (c == '{') {
                if (!rx_braces(rx))
                    return FALSE;
            } else {
                g_string_append_c(rx->out, c);
                rx->i++;
            }
            if (rx->i < rx->n && rx->re[rx->i] == '?') {
                g_string_append_c(rx->out, '?');
                rx->i++;
            }
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
static GRegex *regex_compile(const char *re, gsize n, int *code, char **why)
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

static gboolean is_numeric(Type t)
{
    return t == TY_INT || t == TY_UINT || t == TY_DOUBLE;
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
        g_string_append_printf(s, "%s%s", i > 0 ? ", " : "", type_names[n->kids[i]->type]);
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
        node_free(n->kids[i]);
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
        Node *key = node_new(N_LIT, n->pos);
        key->str = g_steal_pointer(&n->str);
        key->len = strlen(key->str);
        key->lit.t = TY_STRING;
        key->lit.s.p = key->str;
        key->lit.s.n = key->len;
        key->type = TY_STRING;
        node_add(n, key);
        n->kind = N_INDEX;
        return check(c, n);
    }
    if (t == TY_DYN) {
        n->type = TY_DYN;
        return TRUE;
    }
    return check_fail(c, KB_CEL_ERROR_TYPE, n, "type '%s' does not support field selection",
                      type_names[t]);
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
                          type_names[t]);
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
                              type_names[first->type], type_names[k->type]);
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
        return no_overload(c, n, op_names[n->kind]);
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
            return no_overload(c, n, op_names[n->kind]);
        n->type = TY_BOOL;
        return TRUE;
    case N_LT:
    case N_LE:
    case N_GT:
    case N_GE:
        if (!orderable(a->type, b->type))
            return no_overload(c, n, op_names[n->kind]);
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
            char *norm = semver_normalize(text, arg->s.n);
            g_free(text);
            text = norm;
        }
        gboolean ok = !has_nul && text != NULL && semver_parse(text, strlen(text), &v.v);
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
static gboolean literal_match(const Node *n, const char *s, gsize len)
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
    n->regex = regex_compile(pattern->lit.s.p, pattern->lit.s.n, &code, &why);
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
                          type_names[range->type]);
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
                          type_names[body->type]);
    /* Keep range and body only. */
    Node *keep[2] = {range, body};
    for (guint i = 0; i < n->n_kids; i++)
        if (n->kids[i] != range && n->kids[i] != body)
            node_free(n->kids[i]);
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
        node_free(sel);
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
        return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such overload: %s(%s)", fn, type_names[a->t]);
    return rt_fail(x, KB_CEL_ERROR_RUNTIME, "no such overload: %s(%s, %s)", fn, type_names[a->t],
                   type_names[b->t]);
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
            semver_parse(a->string_value, strlen(a->string_value), &out->v))
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
        return cmp_u64(a->u, b->u);
    if (a->t == TY_INT) /* b uint */
        return a->i < 0 ? -1 : cmp_u64((guint64)a->i, b->u);
    return b->i < 0 ? 1 : cmp_u64(a->u, (guint64)b->i);
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
        return quantity_compare(&a->q, &b->q) == 0;
    case TY_SEMVER:
        return semver_compare(&a->v, &b->v) == 0;
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
        c = c != 0 ? (c < 0 ? -1 : 1) : cmp_u64(a->s.n, b->s.n);
    } else if (a->t == TY_BOOL && b->t == TY_BOOL) {
        c = (a->b ? 1 : 0) - (b->b ? 1 : 0);
    } else {
        return rt_no_overload(x, op_names[n->kind], a, b);
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
        return rt_no_overload(x, op_names[n->kind], a, b);
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
            return rt_no_overload(x, op_names[n->kind], a, b);
        *out = (Value){.t = TY_DOUBLE, .d = r};
        return TRUE;
    }
    case TY_STRING: {
        if (n->kind != N_ADD)
            return rt_no_overload(x, op_names[n->kind], a, b);
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
        return rt_no_overload(x, op_names[n->kind], a, b);
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
    return rt_no_overload(x, op_names[n->kind], a, b);
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
            out->b = literal_match(n, a->s.p, a->s.n);
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
            char *norm = semver_normalize(text, a->s.n);
            text = norm != NULL ? own(x, norm) : NULL;
        }
        ok = !has_nul && text != NULL && semver_parse(text, strlen(text), &out->v);
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
        c = quantity_compare(&a->q, &b->q);
    else if (a->t == TY_SEMVER && b->t == TY_SEMVER)
        c = semver_compare(&a->v, &b->v);
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
        if (!quantity_as_int64(&a->q, &v))
            return rt_fail(x, KB_CEL_ERROR_RUNTIME, "cannot convert value to integer");
        *out = (Value){.t = TY_INT, .i = v};
        return TRUE;
    case F_IS_INTEGER:
        *out = (Value){.t = TY_BOOL, .b = quantity_as_int64(&a->q, &v)};
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
                       type_names[m.t]);
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

/* ---- API -------------------------------------------------------------------------------- */

KbCelProgram *kb_cel_compile(const char *expression, GError **error)
{
    g_return_val_if_fail(expression != NULL, NULL);
    gsize len = strlen(expression);
    if (len > KB_CEL_MAX_EXPRESSION_LENGTH) {
        g_set_error(error, KB_CEL_ERROR, KB_CEL_ERROR_LIMIT,
                    "expression is %zu bytes long, more than the limit of %d", len,
                    KB_CEL_MAX_EXPRESSION_LENGTH);
        return NULL;
    }
    if (!g_utf8_validate(expression, (gssize)len, NULL)) {
        g_set_error(error, KB_CEL_ERROR, KB_CEL_ERROR_SYNTAX, "expression is not valid UTF-8");
        return NULL;
    }
    Parser p = {.src = expression, .len = len, .error = error};
    g_autoptr(Node) root = NULL;
    if (lex(&p))
        root = parse_expr(&p);
    if (root != NULL && p.tok.kind != T_EOF) {
        fail(&p, KB_CEL_ERROR_SYNTAX, p.tok.start, "unexpected \"%.*s\" after the expression",
             (int)(p.tok.end - p.tok.start), expression + p.tok.start);
        g_clear_pointer(&root, node_free);
    }
    token_clear(&p.tok);
    if (root == NULL)
        return NULL;
    Checker c = {.error = error};
    if (!check(&c, root))
        return NULL;
    if (root->type != TY_BOOL && root->type != TY_DYN) {
        g_set_error(error, KB_CEL_ERROR, KB_CEL_ERROR_TYPE,
                    "must evaluate to bool or the unknown type, not %s", type_names[root->type]);
        return NULL;
    }
    KbCelProgram *program = g_new0(KbCelProgram, 1);
    program->expression = g_strdup(expression);
    program->root = g_steal_pointer(&root);
    return program;
}

void kb_cel_program_free(KbCelProgram *program)
{
    if (program == NULL)
        return;
    node_free(program->root);
    g_free(program->expression);
    g_free(program);
}

const char *kb_cel_program_expression(const KbCelProgram *program)
{
    g_return_val_if_fail(program != NULL, NULL);
    return program->expression;
}

gboolean kb_cel_program_eval(const KbCelProgram *program, const KbCelDevice *device,
                             gboolean *matches, GError **error)
{
    g_return_val_if_fail(program != NULL && device != NULL && matches != NULL, FALSE);
    /* Not zeroed whole: vars and scratch are written before they are read, and clearing
     * two kilobytes would cost as much as evaluating a class selector. */
    Ctx x;
    x.dev = device;
    x.cost = 0;
    x.owned = NULL;
    x.error = NULL;
    x.scratch_used = 0;
    Value v;
    gboolean ok = eval(program->root, &x, &v);
    if (ok && v.t != TY_BOOL)
        ok = rt_fail(&x, KB_CEL_ERROR_RUNTIME,
                     "CEL result of type %s could not be converted to bool", type_names[v.t]);
    if (x.owned != NULL)
        g_ptr_array_unref(x.owned);
    if (!ok) {
        g_propagate_error(error, x.error);
        return FALSE;
    }
    *matches = v.b;
    return TRUE;
}
