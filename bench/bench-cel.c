/*
 * CEL selector evaluation speed: how many (device, selector) evaluations per second one core
 * runs, for the selectors of NVIDIA's DRA driver, on 8,000 GPUs (1,000 nodes x 8, the issue's
 * bench-e2e cluster) as kb-kubelet --dra would publish them. The allocator evaluates a class's
 * and a request's selectors for every candidate device of every request, so this bounds what
 * selectors cost a scheduling cycle. Compile time is printed too (once per claim or class).
 *
 * Prints figures only: no pass/fail on timing.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-cel.h"

#define N_DEVICES 8000
#define REPEATS   3

static const char *const selectors[] = {
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$') && "
        "(device.attributes['gpu.nvidia.com'].index == 0 || "
        "device.attributes['gpu.nvidia.com'].index == 2 || "
        "device.attributes['gpu.nvidia.com'].index == 4 || "
        "device.attributes['gpu.nvidia.com'].index == 6)",
        "device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA (A|H)100[- ]')",
        "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('550.0.0')) >= 0",
        "device.attributes['gpu.nvidia.com'].productName in ['NVIDIA A100-SXM4-40GB', "
        "'NVIDIA H100 80GB HBM3'] && device.attributes['gpu.nvidia.com'].index in [0, 1, 2, 3]",
};

typedef struct {
    KbCelAttribute attrs[9];
    KbCelCapacity caps[1];
    char uuid[48];
    char island[16];
} GpuStore;

static void make_devices(KbCelDevice *devices, GpuStore *store)
{
    static const char *const products[] = {"NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"};
    for (guint i = 0; i < N_DEVICES; i++) {
        GpuStore *s = &store[i];
        guint node = i / 8, idx = i % 8;
        g_snprintf(s->uuid, sizeof(s->uuid), "GPU-%08x-0000-0000-0000-%012x", node, idx);
        g_snprintf(s->island, sizeof(s->island), "island-%u", idx / 4);
        const char *d = "gpu.nvidia.com";
        KbCelAttribute a[] = {
                {d, "type", KB_CEL_ATTR_STRING, 0, FALSE, "gpu"},
                {d, "uuid", KB_CEL_ATTR_STRING, 0, FALSE, s->uuid},
                {d, "index", KB_CEL_ATTR_INT, idx, FALSE, NULL},
                {d, "minor", KB_CEL_ATTR_INT, idx, FALSE, NULL},
                {d, "productName", KB_CEL_ATTR_STRING, 0, FALSE, products[node % 2]},
                {d, "architecture", KB_CEL_ATTR_STRING, 0, FALSE, node % 2 ? "Hopper" : "Ampere"},
                {d, "cudaComputeCapability", KB_CEL_ATTR_VERSION, 0, FALSE, "8.0.0"},
                {d, "driverVersion", KB_CEL_ATTR_VERSION, 0, FALSE, "550.54.15"},
                {"kb.example.com", "nvlinkIsland", KB_CEL_ATTR_STRING, 0, FALSE, s->island},
        };
        memcpy(s->attrs, a, sizeof(a));
        s->caps[0] = (KbCelCapacity){d, "memory", {0}};
        if (!kb_quantity_parse(node % 2 ? "80Gi" : "40Gi", &s->caps[0].value, NULL))
            exit(1);
        devices[i] = (KbCelDevice){.driver = d,
                                   .attributes = s->attrs,
                                   .n_attributes = G_N_ELEMENTS(s->attrs),
                                   .capacity = s->caps,
                                   .n_capacity = 1};
    }
}

int main(int argc, char **argv)
{
    KbCelDevice *devices = g_new0(KbCelDevice, N_DEVICES);
    GpuStore *store = g_new0(GpuStore, N_DEVICES);
    make_devices(devices, store);
    printf("bench-cel: %d GPUs, best of %d passes per selector\n", N_DEVICES, REPEATS);
    for (guint s = 0; s < G_N_ELEMENTS(selectors); s++) {
        g_autoptr(GError) error = NULL;
        gint64 t0 = g_get_monotonic_time();
        KbCelProgram *prog = NULL;
        for (guint k = 0; k < 1000; k++) {
            g_clear_pointer(&prog, kb_cel_program_free);
            prog = kb_cel_compile(selectors[s], &error);
            if (prog == NULL) {
                g_printerr("%s\n", error->message);
                return 1;
            }
        }
        double compile_us = (double)(g_get_monotonic_time() - t0) / 1000.0;
        double best = 1e9;
        guint matched = 0;
        for (guint r = 0; r < REPEATS; r++) {
            matched = 0;
            gint64 start = g_get_monotonic_time();
            for (guint i = 0; i < N_DEVICES; i++) {
                gboolean m = FALSE;
                if (!kb_cel_program_eval(prog, &devices[i], &m, &error)) {
                    g_printerr("%s\n", error->message);
                    return 1;
                }
                matched += m;
            }
            double secs = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
            best = MIN(best, secs);
        }
        printf("  selector %u: %6.0f ns/eval  %10.0f evals/s  compile %5.1f us  (%u of %d match)\n",
               s + 1, best * 1e9 / N_DEVICES, N_DEVICES / best, compile_us, matched, N_DEVICES);
        printf("    %s\n", selectors[s]);
        kb_cel_program_free(prog);
    }
    g_free(store);
    g_free(devices);
    return 0;
}
