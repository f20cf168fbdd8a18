/*
 * Resource vectors: a fixed-size array of integers, one slot per resource.
 *
 * Slot units: cpu in milli-cores, nvidia.com/gpu in milli-GPUs (a MIG slice or a share of a GPU
 * counts as the part of the GPU it consumes, docs/dra.md), memory and ephemeral-storage in
 * bytes, pods and every other extended resource in whole units. The first slots are fixed; extended
 * resources other than nvidia.com/gpu get the remaining slots in the order they are first seen
 * (kb_resource_slot()). Vectors are plain values: copy them with `=`.
 *
 * "Unlimited" (a queue capability with no entry for a resource) is KB_RESOURCE_UNLIMITED.
 */
#pragma once

#include <glib.h>

typedef enum {
    KB_RES_CPU = 0,
    KB_RES_MEMORY,
    KB_RES_PODS,
    KB_RES_GPU,
    KB_RES_EPHEMERAL_STORAGE,
    KB_RES_FIRST_EXTENDED,
    KB_RES_MAX = 10
} KbResourceSlot;

#define KB_RESOURCE_UNLIMITED G_MAXINT64
#define KB_RESOURCE_GPU_NAME  "nvidia.com/gpu"
/* NVIDIA's DRA DeviceClass of whole GPUs: its devices count as nvidia.com/gpu, so that a queue's
 * GPU quota, guarantee and share cover GPUs whichever way pods ask for them (docs/dra.md). */
#define KB_RESOURCE_GPU_CLASS "gpu.nvidia.com"

typedef struct {
    gint64 v[KB_RES_MAX];
} KbResources;

/*
 * The slot for resource @name: the fixed slots for "cpu", "memory", "pods", "nvidia.com/gpu" (and
 * KB_RESOURCE_GPU_CLASS, the same), "ephemeral-storage"; for any other name a free extended slot is
 * assigned on first use. Returns -1 when every slot is taken (the caller reports the resource as
 * unsupported). Names are not validated here. Not thread-safe: call from the owning thread.
 */
int kb_resource_slot(const char *name);

/* The name of @slot, or NULL for an unassigned extended slot. Static storage. */
const char *kb_resource_name(int slot);

/* Number of slots assigned so far (fixed slots included): iterate 0..kb_resource_count()-1. */
int kb_resource_count(void);

/* TRUE for cpu and nvidia.com/gpu, whose quantities are kept in milli-units; every other slot
 * holds whole units. */
gboolean kb_resource_is_milli(int slot);

/* Milli-GPUs per GPU in the nvidia.com/gpu slot. */
#define KB_GPU_MILLI 1000
/* Whole GPUs of a nvidia.com/gpu value (@milli milli-GPUs), a part of a GPU counted as one:
 * device-plugin indices, GPU counts of jobs and nodes. */
gint64 kb_resource_whole_gpus(gint64 milli);

void kb_resources_clear(KbResources *r);
/* A vector with every slot KB_RESOURCE_UNLIMITED. */
void kb_resources_set_unlimited(KbResources *r);
void kb_resources_add(KbResources *dst, const KbResources *src);
/* dst -= src; may go negative (callers that over-release see it in tests). */
void kb_resources_sub(KbResources *dst, const KbResources *src);
/* dst = max(dst, src) slot by slot. */
void kb_resources_max(KbResources *dst, const KbResources *src);
/* TRUE when every slot of @need is <= the same slot of @avail. Unlimited slots always fit. */
gboolean kb_resources_fit(const KbResources *need, const KbResources *avail);
/* The first slot where @need exceeds @avail, or -1 when it fits. */
int kb_resources_first_short(const KbResources *need, const KbResources *avail);
gboolean kb_resources_is_zero(const KbResources *r);
gboolean kb_resources_equal(const KbResources *a, const KbResources *b);

/*
 * Format a single value of @slot the way Kubernetes prints it ("500m", "2", "16Gi" for
 * memory that is a whole multiple of a binary unit, else plain bytes). Returns a newly
 * allocated string.
 */
char *kb_resource_format_value(int slot, gint64 value);

/* "cpu=2, memory=4Gi, nvidia.com/gpu=8" listing the non-zero slots; newly allocated. */
char *kb_resources_to_string(const KbResources *r);
