/*
 * CEL device selectors; see kb-cel.h.
 *
 * Three passes: a recursive-descent parser builds a tree (chains of && and || become one
 * n-ary node, so a long list of alternatives does not deepen it); a checker gives every node
 * its static type as CEL's checker does, refuses what we do not implement, resolves names and
 * folds what does not depend on the device (literal lists, quantity("40Gi"), regular
 * expressions, device.attributes["d"].name into one lookup); the evaluator walks the tree per
 * device with values on the C stack. Strings it builds (+, lowerAscii) and list literals whose
 * elements depend on the device go to a 512-byte buffer on the stack, then to the heap; it
 * also allocates for errors and when GRegex runs a pattern (plain-string patterns skip it).
 *
 * Semantics follow cel-go as Kubernetes configures it for DRA: heterogeneous == is false at run
 * time, not an error; int, uint and double order across types; && and || absorb an error when the
 * other side decides (false && error is false); a domain missing from device.attributes or
 * device.capacity is an empty map, a missing name in it is "no such key".
 */
#include "kube/kb-cel-internal.h"

#include <string.h>

G_DEFINE_QUARK(kb - cel - error - quark, kb_cel_error)

struct KbCelProgram {
    char *expression;
    Node *root;
};

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
    g_autoptr(Node) root = cel_parse(expression, len, error);
    if (root == NULL)
        return NULL;
    if (!cel_check(root, error))
        return NULL;
    if (root->type != TY_BOOL && root->type != TY_DYN) {
        g_set_error(error, KB_CEL_ERROR, KB_CEL_ERROR_TYPE,
                    "must evaluate to bool or the unknown type, not %s",
                    cel_type_names[root->type]);
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
    cel_node_free(program->root);
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
    return cel_eval(program->root, device, matches, error);
}

guint64 kb_cel_program_max_cost(const KbCelProgram *program)
{
    g_return_val_if_fail(program != NULL, G_MAXUINT64);
    return cel_max_cost(program->root);
}
