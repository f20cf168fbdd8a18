/*
 * What a process has used, read from /proc: for the benchmarks' figures of the daemons, the
 * server and themselves.
 */
#pragma once

#include <glib.h>

/* CPU seconds (user + system) used so far by process @pid ("self" for the caller), or -1 when it
 * cannot be read (@pid NULL, gone). */
double kb_bench_cpu_seconds(const char *pid);
/* Peak resident set of process @pid in MiB (VmHWM), or -1. */
double kb_bench_peak_rss_mib(const char *pid);
