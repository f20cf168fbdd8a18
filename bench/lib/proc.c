/* Process figures from /proc; see proc.h. */
#include "bench/lib/proc.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

double kb_bench_cpu_seconds(const char *pid)
{
    if (pid == NULL)
        return -1;
    g_autofree char *path = g_strdup_printf("/proc/%s/stat", pid);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return -1;
    const char *p = strrchr(text, ')');
    unsigned long utime = 0, stime = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double kb_bench_peak_rss_mib(const char *pid)
{
    if (pid == NULL)
        return -1;
    g_autofree char *path = g_strdup_printf("/proc/%s/status", pid);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return -1;
    const char *p = strstr(text, "VmHWM:");
    unsigned long kib = 0;
    if (p == NULL || sscanf(p + 6, "%lu", &kib) != 1)
        return -1;
    return kib / 1024.0;
}
