/* CEL's lexer and recursive-descent parser, and the tree they build; see kb-cel-internal.h. */
#include "kube/kb-cel-internal.h"

#include <stdarg.h>
#include <string.h>

const char *const cel_op_names[] = {
        [N_EQ] = "_==_", [N_NE] = "_!=_", [N_LT] = "_<_",  [N_LE] = "_<=_", [N_GT] = "_>_",
        [N_GE] = "_>=_", [N_IN] = "@in",  [N_ADD] = "_+_", [N_SUB] = "_-_", [N_MUL] = "_*_",
        [N_DIV] = "_/_", [N_MOD] = "_%_", [N_NOT] = "!_",  [N_NEG] = "-_",
};

void cel_node_free(Node *n)
{
    if (n == NULL)
        return;
    for (guint i = 0; i < n->n_kids; i++)
        cel_node_free(n->kids[i]);
    g_free(n->kids);
    g_free(n->str);
    g_free(n->name);
    g_free(n->items);
    if (n->regex != NULL)
        g_regex_unref(n->regex);
    g_free(n);
}

Node *cel_node_new(NodeKind kind, guint pos)
{
    Node *n = g_new0(Node, 1);
    n->kind = kind;
    n->pos = pos;
    n->height = 1;
    return n;
}

void cel_node_add(Node *n, Node *kid)
{
    n->kids = g_renew(Node *, n->kids, n->n_kids + 1);
    n->kids[n->n_kids++] = kid;
    if (kid->height + 1 > n->height)
        n->height = kid->height + 1;
}

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
        cel_node_free(n);
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
        cel_node_add(call, arg);
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
    g_autoptr(Node) list = cel_node_new(N_LIST, p->tok.start);
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
        cel_node_add(list, e);
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
    Node *n = cel_node_new(N_LIT, p->tok.start);
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
        cel_node_free(n);
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
    g_autoptr(Node) n = cel_node_new(p->tok.kind == T_LPAREN ? N_CALL : N_IDENT, pos);
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
        g_autoptr(Node) idx = cel_node_new(N_INDEX, pos);
        cel_node_add(idx, g_steal_pointer(&left));
        Node *key = parse_expr(p);
        if (key == NULL)
            return NULL;
        cel_node_add(idx, key);
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
    g_autoptr(Node) n = cel_node_new(p->tok.kind == T_LPAREN ? N_CALL : N_SELECT, pos);
    n->str = g_steal_pointer(&name);
    n->member = n->kind == N_CALL;
    cel_node_add(n, g_steal_pointer(&left));
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
        operand = cel_node_new(N_LIT, p->tok.start);
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
        g_autoptr(Node) n = cel_node_new(op == T_NOT ? N_NOT : N_NEG, pos);
        cel_node_add(n, g_steal_pointer(&operand));
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
        g_autoptr(Node) n = cel_node_new(op->kind, p->tok.start);
        if (!lex(p))
            return NULL;
        cel_node_add(n, g_steal_pointer(&left));
        Node *right = next(p);
        if (right == NULL)
            return NULL;
        cel_node_add(n, right);
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
    g_autoptr(Node) n = cel_node_new(kind, p->tok.start);
    Node *operand = g_steal_pointer(&first);
    for (;;) {
        if (operand->kind == kind) {
            for (guint i = 0; i < operand->n_kids; i++)
                cel_node_add(n, operand->kids[i]);
            operand->n_kids = 0;
            cel_node_free(operand);
        } else {
            cel_node_add(n, operand);
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
        g_autoptr(Node) n = cel_node_new(N_COND, p->tok.start);
        if (!lex(p))
            return NULL;
        cel_node_add(n, g_steal_pointer(&cond));
        Node *yes = parse_or(p);
        if (yes == NULL)
            return NULL;
        cel_node_add(n, yes);
        if (!expect(p, T_COLON, "\":\" in a conditional"))
            return NULL;
        Node *no = parse_expr(p);
        if (no == NULL)
            return NULL;
        cel_node_add(n, no);
        cond = bounded(p, g_steal_pointer(&n));
    }
    p->depth--;
    return g_steal_pointer(&cond);
}

Node *cel_parse(const char *src, gsize len, GError **error)
{
    Parser p = {.src = src, .len = len, .error = error};
    g_autoptr(Node) root = NULL;
    if (lex(&p))
        root = parse_expr(&p);
    if (root != NULL && p.tok.kind != T_EOF) {
        fail(&p, KB_CEL_ERROR_SYNTAX, p.tok.start, "unexpected \"%.*s\" after the expression",
             (int)(p.tok.end - p.tok.start), src + p.tok.start);
        g_clear_pointer(&root, cel_node_free);
    }
    token_clear(&p.tok);
    return g_steal_pointer(&root);
}
