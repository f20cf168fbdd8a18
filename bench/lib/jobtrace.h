/*
 * Why jobs wait, over a trace replay (bench-trace --trace-job, --wait-reasons).
 *
 * After every cycle (KbSimOptions.on_cycle) each job that is not yet running (fewer than
 * minMember tasks placed or running) holds the condition message the cycle reported for it until
 * the next cycle. --wait-reasons adds the time between two cycles to the message each waiting job
 * held, with digits and quoted names folded ("queue \"Q\" is at its deserved share for
 * nvidia.com/gpu (N/N)") and whether GPUs were idle then (fewer than @total_gpus held), and prints
 * the job-hours per reason, most first. --trace-job prints every change of the named jobs' phase,
 * reason or message with the time, and the GPUs its queue held and deserved then.
 */
#pragma once

#include <glib.h>
#include <stdio.h>

#include "scheduler/cycle.h"

typedef struct KbJobTrace KbJobTrace;

/* @jobs: "ns/name" keys to trace (NULL-terminated, may be NULL; copied); @reasons: keep the
 * job-hours per folded reason. Printing goes to @out (borrowed). */
KbJobTrace *kb_jobtrace_new(const char *const *jobs, gboolean reasons, gint64 total_gpus,
                            FILE *out);
void kb_jobtrace_free(KbJobTrace *jt);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbJobTrace, kb_jobtrace_free)
/* A KbSimOptions.on_cycle callback: @data is the KbJobTrace. */
void kb_jobtrace_on_cycle(const KbCycleResult *res, gpointer data);
/* The job-seconds spent waiting with a folded reason containing @part (NULL: any). */
double kb_jobtrace_seconds(const KbJobTrace *jt, const char *part);
/* Print the job-hours per reason (the @top largest) to the output. */
void kb_jobtrace_print(const KbJobTrace *jt, guint top);
/* @msg with runs of digits (and a '.' between digits) as "N" and quoted strings as "\"Q\"";
 * newly allocated. */
char *kb_jobtrace_fold(const char *msg);
