/*
 * The CEL module's insides, shared by its files only (kb-cel.h is its interface): values and
 * their static types, the tree the parser builds, the checker annotates and folds, and the
 * evaluator walks, and the functions one pass lends another.
 *
 *   kb-cel-parse.c   lexer, parser and the tree's constructors
 *   kb-cel-check.c   static types, name resolution, folding
 *   kb-cel-eval.c    evaluation per device, and the cost bound
 *   kb-cel-values.c  semantic versions and quantities as CEL compares them
 *   kb-cel-regex.c   RE2 patterns translated to GRegex, or refused by name
 *   kb-cel.c         the API
 */
#pragma once

#include "kube/kb-cel.h"

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

/* The names CEL gives these types in its messages. */
extern const char *const cel_type_names[];

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

extern const char *const cel_op_names[];

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

Node *cel_node_new(NodeKind kind, guint pos);
/* Adds @kid (taken) to @n's children. */
void cel_node_add(Node *n, Node *kid);
void cel_node_free(Node *n);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Node, cel_node_free)

static inline gboolean is_numeric(Type t)
{
    return t == TY_INT || t == TY_UINT || t == TY_DOUBLE;
}

/* ---- passes ---- */

/* Parses @len bytes of @src (valid UTF-8); NULL with @error set (KB_CEL_ERROR_SYNTAX or
 * _LIMIT, naming the offset) when it is not one whole expression. */
Node *cel_parse(const char *src, gsize len, GError **error);
/* Types, resolves and folds @root in place; FALSE with @error set naming what is refused. */
gboolean cel_check(Node *root, GError **error);
/* Evaluates checked @root against @device into @matches (a bool result). */
gboolean cel_eval(const Node *root, const KbCelDevice *device, gboolean *matches, GError **error);
/* The most evaluating checked @root can cost, saturated at G_MAXUINT64. */
guint64 cel_max_cost(const Node *root);
/* For a matches() whose pattern the checker found to be a plain string: the answer for @s. */
gboolean cel_literal_match(const Node *n, const char *s, gsize len);

/* ---- values ---- */

int cel_cmp_u64(guint64 a, guint64 b);
gboolean cel_semver_parse(const char *s, gsize n, Semver *out);
char *cel_semver_normalize(const char *s, gsize n);
int cel_semver_compare(const Semver *a, const Semver *b);
int cel_quantity_compare(const KbQuantity *a, const KbQuantity *b);
gboolean cel_quantity_as_int64(const KbQuantity *q, gint64 *out);
/* Compiles RE2 pattern @re (@n bytes) for GRegex, or NULL with @code and @why (newly
 * allocated) saying what is refused. */
GRegex *cel_regex_compile(const char *re, gsize n, int *code, char **why);
