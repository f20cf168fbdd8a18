/*
 * Fuzz target for kb_cel_compile() and kb_cel_program_eval(): whatever the bytes, compiling
 * must not crash and must either give a program or a KB_CEL_ERROR with a message; a program
 * must evaluate on every test device to a bool or a runtime or limit error, never anything
 * else, and give the same answer twice (a program is immutable once compiled).
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const KbCelAttribute attrs[] = {
        {.domain = "gpu.nvidia.com",
         .name = "type",
         .type = KB_CEL_ATTR_STRING,
         .string_value = "gpu"},
        {.domain = "gpu.nvidia.com", .name = "index", .type = KB_CEL_ATTR_INT, .int_value = 3},
        {.domain = "gpu.nvidia.com",
         .name = "productName",
         .type = KB_CEL_ATTR_STRING,
         .string_value = "NVIDIA H100 80GB HBM3"},
        {.domain = "gpu.nvidia.com",
         .name = "driverVersion",
         .type = KB_CEL_ATTR_VERSION,
         .string_value = "550.54.15"},
        {.domain = "gpu.nvidia.com",
         .name = "cudaComputeCapability",
         .type = KB_CEL_ATTR_VERSION,
         .string_value = "9.0"},
        {.domain = "gpu.nvidia.com",
         .name = "migCapable",
         .type = KB_CEL_ATTR_BOOL,
         .bool_value = TRUE},
};

static void check_eval(const KbCelProgram *prog, const KbCelDevice *dev)
{
    GError *error = NULL;
    gboolean matched = 2;
    gboolean ok = kb_cel_program_eval(prog, dev, &matched, &error);
    if (ok != (error == NULL) || (ok && matched != TRUE && matched != FALSE))
        __builtin_trap();
    if (!ok && (error->domain != KB_CEL_ERROR ||
                (error->code != KB_CEL_ERROR_RUNTIME && error->code != KB_CEL_ERROR_LIMIT) ||
                error->message[0] == '\0'))
        __builtin_trap();
    GError *again_error = NULL;
    gboolean again = 2;
    gboolean ok2 = kb_cel_program_eval(prog, dev, &again, &again_error);
    if (ok2 != ok || (ok && again != matched) ||
        (!ok &&
         (again_error->code != error->code || strcmp(again_error->message, error->message) != 0)))
        __builtin_trap();
    g_clear_error(&error);
    g_clear_error(&again_error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Expressions are C strings: cut at the first NUL, as a JSON string could not hold one. */
    g_autofree char *expr = g_strndup((const char *)data, size);
    GError *error = NULL;
    g_autoptr(KbCelProgram) prog = kb_cel_compile(expr, &error);
    if (prog == NULL) {
        if (error == NULL || error->domain != KB_CEL_ERROR || error->message[0] == '\0' ||
            error->code < KB_CEL_ERROR_SYNTAX || error->code > KB_CEL_ERROR_TYPE)
            __builtin_trap();
        g_error_free(error);
        return 0;
    }
    if (error != NULL || strcmp(kb_cel_program_expression(prog), expr) != 0)
        __builtin_trap();
    static KbCelCapacity caps[2];
    static gboolean init;
    if (!init) {
        caps[0] = (KbCelCapacity){.domain = "gpu.nvidia.com", .name = "memory"};
        caps[1] = (KbCelCapacity){.domain = "gpu.nvidia.com", .name = "multiprocessors"};
        if (!kb_quantity_parse("80Gi", &caps[0].value, NULL) ||
            !kb_quantity_parse("132", &caps[1].value, NULL))
            __builtin_trap();
        init = TRUE;
    }
    const KbCelDevice gpu = {.driver = "gpu.nvidia.com",
                             .attributes = attrs,
                             .n_attributes = G_N_ELEMENTS(attrs),
                             .capacity = caps,
                             .n_capacity = G_N_ELEMENTS(caps)};
    const KbCelDevice empty = {.driver = NULL, .allow_multiple_allocations = TRUE};
    check_eval(prog, &gpu);
    check_eval(prog, &empty);
    return 0;
}
