/*
 * Fuzz target for the byte-buffer claim decoders (kb_resource_claim_decode_bytes,
 * kb_resource_claim_list_decode_bytes), with the differential check against json-c of
 * dra-fast-check.h.
 */
#include <stdint.h>

#include "tests/fuzz/dra-fast-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

/* GLib leaks its old quark array when the intern table grows: see fuzz-objects.c. */
const char *__lsan_default_suppressions(void)
{
    return "leak:g_intern_string\n";
}

const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_dra_fast(KIND_CLAIM, data, size);
    return 0;
}
