/*
 * Fuzz target for the byte-buffer slice decoders (kb_resource_slice_decode_bytes,
 * kb_resource_slice_list_decode_bytes), with the differential check against json-c of
 * dra-fast-check.h.
 */
#include <stdint.h>

#include "tests/fuzz/dra-fast-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

/* GLib leaks its old quark array when the intern table grows: see fuzz-objects.c. Slices
 * intern many names (every attribute's), and the first array to go is the one GLib's own
 * constructor allocated, whose stack names no g_intern_string: leaks from library
 * constructors (_dl_init) are suppressed too. */
const char *__lsan_default_suppressions(void)
{
    return "leak:g_intern_string\nleak:_dl_init\n";
}

const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_dra_fast(KIND_SLICE, data, size);
    return 0;
}
