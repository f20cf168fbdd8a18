/*
 * Fuzz target for the watch-stream decoder: the first byte of the input picks a chunk-size seed,
 * the rest is fed in pseudo-random splits (derived from the input, so runs are reproducible) and
 * every event is taken and inspected. The decoder must never crash, leak or return an event
 * without an object, whatever the bytes and wherever they are cut.
 */
#include <stdint.h>

#include "kube/kb-informer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drain(KbWatchDecoder *dec)
{
    for (;;) {
        KbWatchEvent ev;
        GError *error = NULL;
        if (kb_watch_decoder_next(dec, &ev, &error)) {
            if (ev.object == NULL || error != NULL)
                __builtin_trap();
            (void)kb_watch_event_status_code(&ev);
            (void)kb_watch_event_type_to_string(ev.type);
            kb_watch_event_clear(&ev);
        } else if (error != NULL) {
            if (ev.object != NULL)
                __builtin_trap();
            g_error_free(error);
        } else {
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    guint32 state = data[0] * 2654435761u + 1;
    const char *p = (const char *)data + 1;
    size_t left = size - 1;
    KbWatchDecoder *dec = kb_watch_decoder_new();
    while (left > 0) {
        state = state * 1103515245u + 12345u;
        size_t n = 1 + (state >> 16) % 97;
        if (n > left)
            n = left;
        GError *error = NULL;
        if (!kb_watch_decoder_feed(dec, p, n, &error)) {
            g_error_free(error);
            drain(dec);
            kb_watch_decoder_reset(dec);
        }
        if ((state & 3) != 0)
            drain(dec);
        p += n;
        left -= n;
    }
    drain(dec);
    kb_watch_decoder_free(dec);
    return 0;
}
