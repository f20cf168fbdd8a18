/*
 * Synthetic job traces for bench-trace --synthetic: Poisson arrivals, a gang-size distribution,
 * a duration distribution and a seed, so a scheduler can be tried on loads no real trace has.
 *
 * SPEC is "key=value" pairs separated by commas; every key is optional:
 *   jobs=N          jobs to generate (1000; at most KB_TRACE_DEFAULT_MAX_JOBS)
 *   rate=R          arrivals per hour (60), exponential gaps
 *   sizes=G:W/...   GPUs per job and relative weights (1:70/2:10/4:8/8:6/16:3/32:2/64:1)
 *   duration=D      "exp:MEAN" (seconds, exponential) or "lognormal:MEDIAN:SIGMA"
 *                   (lognormal:1800:1.5); capped at one year
 *   queues=Q        tenants q0..q{Q-1}, chosen uniformly (4)
 *   seed=S          random seed (1): the same SPEC gives the same trace
 * Jobs carry no expected duration (the simulator's --estimate-factor applies).
 * Returns a new trace sorted by submit time (from 2017-10-01 00:00:00 UTC), or NULL with
 * KB_ERROR_INVALID naming the key and value.
 */
#pragma once

#include "bench/lib/trace.h"

KbTrace *kb_trace_synthetic(const char *spec, GError **error);
