/*
 * Fairness over time, for bench-trace --fairness (issue 26): per window of the replay (a day by
 * default) and per queue, the GPU-hours the queue received against what its weight and its
 * demand entitled it to in that window, and Jain's index of those ratios per window.
 *
 * After every cycle (KbSimOptions.on_cycle) each queue's GPUs held (allocated) and asked for
 * (request: held + what its jobs still ask) are sampled; between cycles they are constant. Per
 * window: received = the integral of held, demand = the integral of request; the window's GPU
 * capacity (GPUs x its length) is water-filled over the queues that asked by weight, each capped
 * at its demand: that is the entitlement. A queue entitled to less than one GPU-hour in a window
 * is left out of it. Ratio = received / entitled (above 1: it borrowed what others left).
 */
#pragma once

#include <glib.h>
#include <stdio.h>

#include "scheduler/cycle.h"

typedef struct KbFairness KbFairness;

/* @total_gpus: the cluster's GPUs; @window: seconds (> 0). */
KbFairness *kb_fairness_new(gint64 total_gpus, gint64 window);
void kb_fairness_free(KbFairness *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbFairness, kb_fairness_free)
/* A KbSimOptions.on_cycle callback: @data is the KbFairness. */
void kb_fairness_on_cycle(const KbCycleResult *res, gpointer data);

typedef struct {
    guint n_windows;         /* windows with at least two queues entitled */
    double worst_mean;       /* mean over those windows of the smallest ratio */
    double worst_min;        /* the smallest ratio of any queue in any of them */
    guint worst_min_window;  /* its window (0: the first cycle's) */
    const char *worst_queue; /* its queue (interned), NULL when none */
    double jain_mean, jain_min;
} KbFairnessSummary;

/* Close the last window at @end (seconds) and sum up. */
void kb_fairness_summary(KbFairness *f, gint64 end, KbFairnessSummary *out);
/* Print the summary and, per queue, its mean ratio over the windows it was entitled in. */
void kb_fairness_print(KbFairness *f, gint64 end, FILE *out);
