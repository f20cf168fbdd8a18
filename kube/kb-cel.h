/*
 * CEL device selectors (resource.k8s.io/v1 DeviceClass.spec.selectors[].cel.expression and
 * DeviceRequest ... selectors[].cel.expression): the subset of the Common Expression Language
 * that device classes and claims use in practice, compiled once and evaluated per device.
 *
 * The environment is the one Kubernetes' structured allocator gives an expression:
 *   device.driver                          string
 *   device.attributes["<domain>"].<name>   int, bool, string or semver of the named attribute
 *   device.capacity["<domain>"].<name>     quantity (compareTo(quantity("40Gi")) etc.)
 *   device.allowMultipleAllocations        bool
 * An attribute or capacity name given without a domain in a ResourceSlice belongs to the
 * slice's driver; KbCelDevice carries them fully qualified.
 *
 * What the evaluator does not support is refused at compile time with KB_CEL_ERROR_UNSUPPORTED
 * and a message that quotes the construct, never guessed at. Syntax errors are
 * KB_CEL_ERROR_SYNTAX; a type error found while evaluating (a missing attribute, comparing a
 * string with an int) is KB_CEL_ERROR_RUNTIME, as the allocator reports "CEL runtime error".
 */
#pragma once

#include <glib.h>

#include "kb-quantity.h"

#define KB_CEL_ERROR (kb_cel_error_quark())
GQuark kb_cel_error_quark(void);

typedef enum {
    KB_CEL_ERROR_SYNTAX,      /* not a CEL expression */
    KB_CEL_ERROR_UNSUPPORTED, /* valid CEL this evaluator does not implement */
    KB_CEL_ERROR_LIMIT,       /* longer or deeper than the limits below */
    KB_CEL_ERROR_TYPE,        /* statically ill-typed (e.g. the result is not a bool) */
    KB_CEL_ERROR_RUNTIME,     /* failed on this device (missing key, type mismatch) */
} KbCelErrorCode;

typedef enum {
    KB_CEL_ATTR_INT,
    KB_CEL_ATTR_BOOL,
    KB_CEL_ATTR_STRING,
    KB_CEL_ATTR_VERSION, /* semantic version, compared as semver */
} KbCelAttrType;

/* One device attribute, fully qualified: domain "gpu.nvidia.com", name "productName". */
typedef struct {
    const char *domain;
    const char *name;
    KbCelAttrType type;
    gint64 int_value;
    gboolean bool_value;
    const char *string_value; /* KB_CEL_ATTR_STRING and KB_CEL_ATTR_VERSION */
} KbCelAttribute;

/* One device capacity, fully qualified: domain "gpu.nvidia.com", name "memory". */
typedef struct {
    const char *domain;
    const char *name;
    KbQuantity value;
} KbCelCapacity;

/* A device as an expression sees it. Borrowed pointers: the caller keeps them alive for the
 * duration of kb_cel_program_eval(). */
typedef struct {
    const char *driver;
    const KbCelAttribute *attributes;
    guint n_attributes;
    const KbCelCapacity *capacity;
    guint n_capacity;
    gboolean allow_multiple_allocations;
} KbCelDevice;

/*
 * Limits. The length is resource.k8s.io/v1's CELSelectorExpressionMaxLength (bytes). The depth
 * bounds both the parser's nesting (parentheses, calls, lists, indexes) and the height of the
 * compiled tree; chains of && and || count once however long they are. The cost is a count of
 * evaluation steps (one per node visited, plus one per 10 bytes a string function reads); its
 * budget has the value of CELSelectorExpressionMaxCost (1,000,000 CEL cost units), which our
 * steps approximate: CEL charges about one unit per operation too.
 */
#define KB_CEL_MAX_EXPRESSION_LENGTH (10 * 1024)
#define KB_CEL_MAX_DEPTH             32
#define KB_CEL_MAX_COST              1000000

typedef struct KbCelProgram KbCelProgram;

/*
 * Compile @expression. Returns a new program (free with kb_cel_program_free) or NULL with
 * @error set (KB_CEL_ERROR_*), the message quoting the expression or the unsupported part.
 */
KbCelProgram *kb_cel_compile(const char *expression, GError **error);

void kb_cel_program_free(KbCelProgram *program);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbCelProgram, kb_cel_program_free)

/* The expression the program was compiled from (owned by the program). */
const char *kb_cel_program_expression(const KbCelProgram *program);

/*
 * Evaluate @program for @device. Returns TRUE and sets *@matches, or FALSE with @error
 * (KB_CEL_ERROR_RUNTIME, or KB_CEL_ERROR_LIMIT when the evaluation cost limit is crossed).
 * Thread-safe: a program is immutable once compiled.
 */
gboolean kb_cel_program_eval(const KbCelProgram *program, const KbCelDevice *device,
                             gboolean *matches, GError **error);
