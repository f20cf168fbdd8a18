/*
 * Queue shares over a trace replay (bench-trace --queue-tree): the queue tree file, and per queue
 * and per tree level the GPUs a queue held against its deserved share over time.
 *
 * Queue tree file: one queue a line, `#` starts a comment, fields separated by blanks:
 *
 *     # name     parent   options (all optional)
 *     org-a      -        weight=1
 *     6214e9     org-a    weight=1 capability=64 guarantee=8
 *     b436b2     org-a
 *     org-b      -        weight=3 deserved=96 reclaimable=false
 *
 * `parent` is a queue of the file or `-` (under the implicit root). Options: weight=N (>= 1),
 * capability=G, guarantee=G, deserved=G (GPUs, nvidia.com/gpu), reclaimable=true|false. Trace
 * queues (the trace's clusters) that the file does not name hang under the root with their
 * --weight; queues of the file that are not in the trace are created as they are (typically the
 * parents). Errors name the file, line and field.
 *
 * Shares: after every cycle (KbSimOptions.on_cycle) each queue's allocated and deserved
 * nvidia.com/gpu (a parent's are its subtree's) are sampled; between cycles they are constant.
 * The shortfall is deserved - allocated while positive (the deserved share is already capped by
 * what the queue asks for). Reported per queue: time-averaged allocated and deserved, the largest
 * shortfall and how long that episode lasted, the longest episode, the GPU-hours short; per level
 * (depth below the root): the same over the level's queues.
 */
#pragma once

#include <glib.h>

#include "scheduler/cycle.h"

/* Name (char*) -> Queue spec JSON text, for KbSimOptions.queue_specs; NULL with an error. */
GHashTable *kb_qshare_load_tree(const char *path, GError **error);
/* The same from text (@what names it in errors). */
GHashTable *kb_qshare_parse_tree(const char *text, const char *what, GError **error);

typedef struct KbQshare KbQshare;

KbQshare *kb_qshare_new(void);
void kb_qshare_free(KbQshare *qs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbQshare, kb_qshare_free)
/* A KbSimOptions.on_cycle callback: @data is the KbQshare. */
void kb_qshare_on_cycle(const KbCycleResult *res, gpointer data);
/* Close the open episodes at @end (seconds) and print the tables on stdout. */
void kb_qshare_print(KbQshare *qs, gint64 end);

/* Figures of one queue (after kb_qshare_print, or kb_qshare_finish), for tests. */
typedef struct {
    guint depth;
    double alloc_mean, deserved_mean; /* GPUs, time-averaged from the first sample */
    gint64 max_short;                 /* GPUs */
    gint64 max_short_lasted;          /* seconds the episode with the largest shortfall lasted */
    gint64 longest_short;             /* seconds */
    double short_gpu_s;
} KbQshareQueue;
void kb_qshare_finish(KbQshare *qs, gint64 end);
gboolean kb_qshare_queue(KbQshare *qs, const char *name, KbQshareQueue *out);
