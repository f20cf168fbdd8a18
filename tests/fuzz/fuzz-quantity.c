/*
 * Fuzz target for kb_quantity_parse() and kb_quantity_format(): whatever the bytes, parsing must
 * not crash, must leave a parsed value normalized, and the canonical string of a parsed value
 * must parse back to the same value (format aside) and format to itself.
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The parser takes C strings: cut at the first NUL, as a JSON string could not hold one. */
    g_autofree char *s = g_strndup((const char *)data, size);
    KbQuantity q;
    GError *error = NULL;

    if (!kb_quantity_parse(s, &q, &error)) {
        if (error == NULL || !g_str_has_prefix(error->message, "invalid quantity \""))
            __builtin_trap();
        g_error_free(error);
        return 0;
    }
    if (error != NULL || q.scale < -9 || (q.unscaled == 0 && q.scale != 0))
        __builtin_trap();
    (void)kb_quantity_milli_value(&q);
    (void)kb_quantity_value(&q);

    g_autofree char *canon = kb_quantity_format(&q);
    KbQuantity back;
    if (!kb_quantity_parse(canon, &back, NULL))
        __builtin_trap();
    if (back.unscaled != q.unscaled || back.scale != q.scale)
        __builtin_trap();
    if (kb_quantity_milli_value(&back) != kb_quantity_milli_value(&q))
        __builtin_trap();
    g_autofree char *again = kb_quantity_format(&back);
    /*
     * Canonical strings are fixed points when the format survives the round trip; a BinarySI
     * value that is not a multiple of 1024 prints plainly and reads back as DecimalSI (which may
     * then print as "3450694063288293k", as apimachinery does); that form is a fixed point.
     */
    if (back.format == q.format && strcmp(again, canon) != 0)
        __builtin_trap();
    KbQuantity third;
    if (!kb_quantity_parse(again, &third, NULL))
        __builtin_trap();
    g_autofree char *last = kb_quantity_format(&third);
    if (strcmp(last, again) != 0)
        __builtin_trap();
    return 0;
}
