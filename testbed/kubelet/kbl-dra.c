/* kb-kubelet --dra: GPUs as ResourceSlices, pods gated on their claims (see kbl-dra.h). */
#include "testbed/kubelet/kbl-dra.h"

#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-quantity.h"
#include "testbed/apiserver/kas-json.h"

#define GPU_RESOURCE   "nvidia.com/gpu"
#define TOPOLOGY_ANN   "kube-batchd.io/gpu-topology"
#define PRODUCT_LABEL  "nvidia.com/gpu.product"
#define MEMORY_LABEL   "nvidia.com/gpu.memory"
#define DRIVER_VERSION "550.54.15"
#define CUDA_VERSION   "12.4.0"

const KbResourceType kbl_type_resource_slices = {"resource.k8s.io", "v1", "resourceslices", FALSE};
const KbResourceType kbl_type_resource_claims = {"resource.k8s.io", "v1", "resourceclaims", TRUE};

/* Architecture and compute capability by product family; the first match wins. */
static const struct {
    const char *match, *architecture, *capability;
} families[] = {
        {"B200", "Blackwell", "10.0.0"},  {"H200", "Hopper", "9.0.0"}, {"H100", "Hopper", "9.0.0"},
        {"L40", "Ada Lovelace", "8.9.0"}, {"A100", "Ampere", "8.0.0"}, {"V100", "Volta", "7.0.0"},
};

static const char *map_string(json_object *map, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(map, json_type_object) || !json_object_object_get_ex(map, key, &v))
        return NULL;
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* How many GPUs @node declares: allocatable, else capacity. -1 with @error when malformed. */
static gint64 gpu_count(json_object *node, GError **error)
{
    json_object *v = NULL;
    const char *field = "status.allocatable";
    if (!json_object_object_get_ex(kas_json_get(node, field), GPU_RESOURCE, &v)) {
        field = "status.capacity";
        if (!json_object_object_get_ex(kas_json_get(node, field), GPU_RESOURCE, &v))
            return 0;
    }
    KbQuantity q;
    const char *s = json_object_get_string(v);
    if (!kb_quantity_parse(s, &q, NULL) || kb_quantity_milli_value(&q) % 1000 != 0 ||
        kb_quantity_value(&q) < 0 || kb_quantity_value(&q) > KBL_DRA_MAX_GPUS) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "node %s: %s[%s] \"%s\": --dra needs a whole number of GPUs from 0 to %d",
                    kas_json_get_string(node, "metadata.name"), field, GPU_RESOURCE, s,
                    KBL_DRA_MAX_GPUS);
        return -1;
    }
    return kb_quantity_value(&q);
}

/* The NVLink island of each of @n GPUs from the topology annotation (see kbl-dra.h). */
static void islands(json_object *node, gint64 n, gint64 *out)
{
    for (gint64 i = 0; i < n; i++)
        out[i] = -1;
    const char *ann = map_string(kas_json_get(node, "metadata.annotations"), TOPOLOGY_ANN);
    json_object *topo = ann != NULL ? json_tokener_parse(ann) : NULL;
    json_object *groups = kas_json_get(topo, "nvlink");
    gsize ng = json_object_is_type(groups, json_type_array) ? json_object_array_length(groups) : 0;
    for (gsize g = 0; g < ng; g++) {
        json_object *grp = json_object_array_get_idx(groups, g);
        for (gsize j = 0;
             json_object_is_type(grp, json_type_array) && j < json_object_array_length(grp); j++) {
            gint64 idx = json_object_get_int64(json_object_array_get_idx(grp, j));
            if (idx >= 0 && idx < n && out[idx] < 0)
                out[idx] = (gint64)g;
        }
    }
    for (gint64 i = 0; i < n; i++)
        if (out[i] < 0)
            out[i] = topo == NULL ? 0 : (gint64)ng + i;
    json_object_put(topo);
}

static void attr(json_object *attrs, const char *name, const char *kind, json_object *value)
{
    json_object *a = json_object_new_object();
    json_object_object_add(a, kind, value);
    json_object_object_add(attrs, name, a);
}

static json_object *device(const char *node, gint64 i, gint64 island, const char *product,
                           const char *memory)
{
    const char *arch = "Ampere", *cap = "8.0.0";
    for (guint f = 0; f < G_N_ELEMENTS(families); f++)
        if (strstr(product, families[f].match) != NULL) {
            arch = families[f].architecture;
            cap = families[f].capability;
            break;
        }
    /* a stable uuid per node and index, shaped as nvidia-smi prints them */
    g_autofree char *seed = g_strdup_printf("%s/%" G_GINT64_FORMAT, node, i);
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, seed, -1);
    g_autofree char *uuid = g_strdup_printf("GPU-%.8s-%.4s-%.4s-%.4s-%.12s", sum, sum + 8, sum + 12,
                                            sum + 16, sum + 20);
    g_autofree char *name = g_strdup_printf("gpu-%" G_GINT64_FORMAT, i);
    json_object *d = json_object_new_object();
    kas_json_set_string(d, "name", name);
    json_object *attrs = json_object_new_object();
    attr(attrs, "type", "string", json_object_new_string("gpu"));
    attr(attrs, "uuid", "string", json_object_new_string(uuid));
    attr(attrs, "index", "int", json_object_new_int64(i));
    attr(attrs, "minor", "int", json_object_new_int64(i));
    attr(attrs, "productName", "string", json_object_new_string(product));
    attr(attrs, "brand", "string", json_object_new_string("Nvidia"));
    attr(attrs, "architecture", "string", json_object_new_string(arch));
    attr(attrs, "cudaComputeCapability", "version", json_object_new_string(cap));
    attr(attrs, "driverVersion", "version", json_object_new_string(DRIVER_VERSION));
    attr(attrs, "cudaDriverVersion", "version", json_object_new_string(CUDA_VERSION));
    attr(attrs, KBL_DRA_ISLAND_ATTR, "int", json_object_new_int64(island));
    json_object_object_add(d, "attributes", attrs);
    json_object *mem = json_object_new_object();
    kas_json_set_string(mem, "value", memory);
    json_object *capacity = json_object_new_object();
    json_object_object_add(capacity, "memory", mem);
    json_object_object_add(d, "capacity", capacity);
    return d;
}

/* ---- --mig and shared GPUs ------------------------------------------------------------------ */

/* A MIG profile of an 80 GB A100 or H100 as nvidia-smi mig -lgip lists it: NVML's GPU instance
 * profile id, the memory slices it spans (of 8), its multiprocessors on each, its memory on
 * each (MiB), and the first memory slice of each placement. */
typedef struct {
    const char *name;
    int id, slices, sms_a100, sms_h100, mib_a100, mib_h100;
    int starts[8];
    int n_starts;
} MigProfile;

static const MigProfile mig_profiles[] = {
        {"1g.10gb", 19, 1, 14, 16, 9728, 9984, {0, 1, 2, 3, 4, 5, 6}, 7},
        {"2g.20gb", 14, 2, 28, 32, 19968, 20224, {0, 2, 4}, 3},
        {"3g.40gb", 9, 4, 42, 60, 40192, 40704, {0, 4}, 2},
        {"4g.40gb", 5, 4, 56, 64, 40192, 40704, {0}, 1},
        {"7g.80gb", 0, 8, 98, 132, 81152, 81664, {0}, 1},
};
#define MIG_WHOLE (G_N_ELEMENTS(mig_profiles) - 1) /* 7g: the whole GPU's counters */

static int profile_sms(const MigProfile *p, gboolean hopper)
{
    return hopper ? p->sms_h100 : p->sms_a100;
}

static int profile_mib(const MigProfile *p, gboolean hopper)
{
    return hopper ? p->mib_h100 : p->mib_a100;
}

static void counter(json_object *counters, const char *name, const char *value)
{
    json_object *c = json_object_new_object();
    kas_json_set_string(c, "value", value);
    json_object_object_add(counters, name, c);
}

/* The counters a profile placed at memory slice @start consumes (@p NULL: the whole GPU's). */
static json_object *mig_counters(const MigProfile *p, int start, gboolean hopper)
{
    const MigProfile *w = &mig_profiles[MIG_WHOLE];
    if (p == NULL) {
        p = w;
        start = 0;
    }
    json_object *c = json_object_new_object();
    g_autofree char *mem = g_strdup_printf("%dMi", profile_mib(p, hopper));
    g_autofree char *sms = g_strdup_printf("%d", profile_sms(p, hopper));
    counter(c, "memory", mem);
    counter(c, "multiprocessors", sms);
    for (int s = start; s < start + p->slices; s++) {
        g_autofree char *n = g_strdup_printf("memory-slice-%d", s);
        counter(c, n, "1");
    }
    return c;
}

static char *counter_set_name(gint64 gpu)
{
    return g_strdup_printf("gpu-%" G_GINT64_FORMAT "-counter-set", gpu);
}

/* consumesCounters: @counters from GPU @gpu's set. */
static void consumes(json_object *d, gint64 gpu, json_object *counters)
{
    g_autofree char *set = counter_set_name(gpu);
    json_object *c = json_object_new_object();
    kas_json_set_string(c, "counterSet", set);
    json_object_object_add(c, "counters", counters);
    json_object *list = json_object_new_array();
    json_object_array_add(list, c);
    json_object_object_add(d, "consumesCounters", list);
}

static void capacity(json_object *d, const char *name, const char *value)
{
    json_object *cap = kas_json_ensure_object(d, "capacity");
    json_object *v = json_object_new_object();
    kas_json_set_string(v, "value", value);
    json_object_object_add(cap, name, v);
}

/* MIG device @p at @start of GPU @whole (its full-GPU device, for the shared attributes), named
 * as the driver names them: gpu-<minor>-mig-<profile without dots>-<profile id>-<start>. */
static json_object *mig_device(json_object *whole, gint64 gpu, const MigProfile *p, int start,
                               gboolean hopper)
{
    g_autofree char *compact = g_strdup(p->name);
    char *w = compact;
    for (const char *r = p->name; *r != '\0'; r++)
        if (*r != '.')
            *w++ = *r;
    *w = '\0';
    g_autofree char *name =
            g_strdup_printf("gpu-%" G_GINT64_FORMAT "-mig-%s-%d-%d", gpu, compact, p->id, start);
    json_object *d = json_object_new_object();
    kas_json_set_string(d, "name", name);
    json_object *attrs = json_object_new_object();
    json_object *pa = kas_json_get(whole, "attributes");
    attr(attrs, "type", "string", json_object_new_string("mig"));
    attr(attrs, "profile", "string", json_object_new_string(p->name));
    attr(attrs, "parentUUID", "string",
         json_object_new_string(kas_json_get_string(pa, "uuid.string")));
    attr(attrs, "parentIndex", "int", json_object_new_int64(gpu));
    attr(attrs, "placementStart", "int", json_object_new_int64(start));
    attr(attrs, "placementSize", "int", json_object_new_int64(p->slices));
    static const char *const copied[] = {"productName",      "brand",
                                         "architecture",     "cudaComputeCapability",
                                         "driverVersion",    "cudaDriverVersion",
                                         KBL_DRA_ISLAND_ATTR};
    for (guint i = 0; i < G_N_ELEMENTS(copied); i++) {
        /* by member, not path: the island's name holds dots */
        json_object *src = NULL, *v = NULL;
        if (json_object_object_get_ex(pa, copied[i], &src) &&
            json_object_deep_copy(src, &v, NULL) == 0)
            json_object_object_add(attrs, copied[i], v);
    }
    json_object_object_add(d, "attributes", attrs);
    g_autofree char *mem = g_strdup_printf("%dMi", profile_mib(p, hopper));
    g_autofree char *sms = g_strdup_printf("%d", profile_sms(p, hopper));
    capacity(d, "memory", mem);
    capacity(d, "multiprocessors", sms);
    consumes(d, gpu, mig_counters(p, start, hopper));
    return d;
}

/* A GPU shared by memory: allocatable more than once, each allocation taking part of its memory
 * in whole GiB (at least 1 GiB; all of it when the claim does not say). */
static void make_shared(json_object *d)
{
    KbQuantity q;
    const char *mem = kas_json_get_string(d, "capacity.memory.value");
    gint64 gib = mem != NULL && kb_quantity_parse(mem, &q, NULL)
                         ? kb_quantity_value(&q) / (G_GINT64_CONSTANT(1) << 30)
                         : 0;
    g_autofree char *value = g_strdup_printf("%" G_GINT64_FORMAT "Gi", MAX(gib, 1));
    json_object *m = kas_json_get(d, "capacity.memory");
    kas_json_set_string(m, "value", value);
    json_object *pol = kas_json_ensure_object(m, "requestPolicy");
    kas_json_set_string(pol, "default", value);
    json_object *range = kas_json_ensure_object(pol, "validRange");
    kas_json_set_string(range, "min", "1Gi");
    kas_json_set_string(range, "step", "1Gi");
    json_object_object_add(d, "allowMultipleAllocations", json_object_new_boolean(TRUE));
}

static json_object *new_slice(const char *node, const char *suffix, gint64 count)
{
    json_object *s = json_object_new_object();
    kas_json_set_string(s, "apiVersion", "resource.k8s.io/v1");
    kas_json_set_string(s, "kind", "ResourceSlice");
    g_autofree char *sname = suffix != NULL
                                     ? g_strdup_printf("%s-%s-%s", node, KBL_DRA_DRIVER, suffix)
                                     : g_strdup_printf("%s-%s", node, KBL_DRA_DRIVER);
    kas_json_set_string(kas_json_ensure_object(s, "metadata"), "name", sname);
    json_object *spec = kas_json_ensure_object(s, "spec");
    kas_json_set_string(spec, "driver", KBL_DRA_DRIVER);
    kas_json_set_string(spec, "nodeName", node);
    json_object *pool = kas_json_ensure_object(spec, "pool");
    kas_json_set_string(pool, "name", node);
    json_object_object_add(pool, "generation", json_object_new_int64(0));
    json_object_object_add(pool, "resourceSliceCount", json_object_new_int64(count));
    return s;
}

/* --mig: the split layout of NVIDIA's driver on Kubernetes 1.35+: the GPUs' counter sets (at
 * most KBL_DRA_COUNTER_SETS a slice), then one slice per GPU holding the whole GPU (consuming all
 * of its counters) and every placement of every profile. */
static json_object *mig_slices(const char *node, json_object *gpus, gboolean hopper)
{
    gint64 n = (gint64)json_object_array_length(gpus);
    gint64 nsets = (n + KBL_DRA_COUNTER_SETS - 1) / KBL_DRA_COUNTER_SETS;
    json_object *out = json_object_new_array();
    for (gint64 k = 0; k < nsets; k++) {
        g_autofree char *suffix =
                k == 0 ? g_strdup("counters") : g_strdup_printf("counters-%" G_GINT64_FORMAT, k);
        json_object *s = new_slice(node, suffix, n + nsets);
        json_object *sets = json_object_new_array();
        for (gint64 i = k * KBL_DRA_COUNTER_SETS; i < MIN(n, (k + 1) * KBL_DRA_COUNTER_SETS); i++) {
            g_autofree char *name = counter_set_name(i);
            json_object *set = json_object_new_object();
            kas_json_set_string(set, "name", name);
            json_object_object_add(set, "counters", mig_counters(NULL, 0, hopper));
            json_object_array_add(sets, set);
        }
        json_object_object_add(kas_json_get(s, "spec"), "sharedCounters", sets);
        json_object_array_add(out, s);
    }
    for (gint64 i = 0; i < n; i++) {
        g_autofree char *suffix = g_strdup_printf("gpu-%" G_GINT64_FORMAT, i);
        json_object *s = new_slice(node, suffix, n + nsets);
        json_object *devs = json_object_new_array();
        json_object *whole = json_object_get(json_object_array_get_idx(gpus, i));
        consumes(whole, i, mig_counters(NULL, 0, hopper));
        json_object_array_add(devs, whole);
        for (guint p = 0; p < G_N_ELEMENTS(mig_profiles); p++)
            for (int j = 0; j < mig_profiles[p].n_starts; j++)
                json_object_array_add(devs, mig_device(whole, i, &mig_profiles[p],
                                                       mig_profiles[p].starts[j], hopper));
        json_object_object_add(kas_json_get(s, "spec"), "devices", devs);
        json_object_array_add(out, s);
    }
    return out;
}

json_object *kbl_dra_slices(json_object *node, gboolean mig, GError **error)
{
    gint64 n = gpu_count(node, error);
    if (n <= 0)
        return NULL;
    const char *name = kas_json_get_string(node, "metadata.name");
    json_object *labels = kas_json_get(node, "metadata.labels");
    const char *sharing = map_string(labels, KBL_DRA_SHARING_LABEL);
    if (sharing != NULL && strcmp(sharing, "memory") != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "node %s: label %s \"%s\": the only sharing is \"memory\"", name,
                    KBL_DRA_SHARING_LABEL, sharing);
        return NULL;
    }
    const char *product = map_string(labels, PRODUCT_LABEL);
    const char *mib = map_string(labels, MEMORY_LABEL);
    g_autofree char *memory =
            mib != NULL && g_ascii_strtoll(mib, NULL, 10) > 0
                    ? g_strdup_printf("%" G_GINT64_FORMAT "Mi", g_ascii_strtoll(mib, NULL, 10))
                    : g_strdup("80Gi");
    if (product == NULL)
        product = "NVIDIA A100-SXM4-80GB";
    g_autofree gint64 *isl = g_new(gint64, n);
    islands(node, n, isl);
    json_object *gpus = json_object_new_array();
    for (gint64 i = 0; i < n; i++) {
        json_object *d = device(name, i, isl[i], product, memory);
        if (sharing != NULL)
            make_shared(d);
        json_object_array_add(gpus, d);
    }
    json_object *out;
    if (mig && sharing == NULL) {
        out = mig_slices(name, gpus, strstr(product, "H100") != NULL);
    } else {
        json_object *s = new_slice(name, NULL, 1);
        json_object_object_add(kas_json_get(s, "spec"), "devices", json_object_get(gpus));
        out = json_object_new_array();
        json_object_array_add(out, s);
    }
    json_object_put(gpus);
    return out;
}

void kbl_dra_strip_gpus(json_object *node)
{
    static const char *const maps[] = {"status.allocatable", "status.capacity"};
    for (guint i = 0; i < G_N_ELEMENTS(maps); i++) {
        json_object *m = kas_json_get(node, maps[i]);
        if (json_object_is_type(m, json_type_object))
            json_object_object_del(m, GPU_RESOURCE);
    }
}

/* The claim name of pod entry @entry: its own, or the generated one the pod's status names. */
static const char *claim_of(json_object *pod, json_object *entry)
{
    const char *n = kas_json_get_string(entry, "resourceClaimName");
    if (n != NULL)
        return n;
    json_object *st = kas_json_get(pod, "status.resourceClaimStatuses");
    const char *ename = kas_json_get_string(entry, "name");
    for (gsize i = 0; json_object_is_type(st, json_type_array) && i < json_object_array_length(st);
         i++) {
        json_object *s = json_object_array_get_idx(st, i);
        if (g_strcmp0(kas_json_get_string(s, "name"), ename) == 0)
            return kas_json_get_string(s, "resourceClaimName");
    }
    return NULL;
}

static gboolean reserved_for(json_object *claim, const char *uid)
{
    json_object *rf = kas_json_get(claim, "status.reservedFor");
    for (gsize i = 0; json_object_is_type(rf, json_type_array) && i < json_object_array_length(rf);
         i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(rf, i), "uid"), uid) == 0)
            return TRUE;
    return FALSE;
}

char *kbl_dra_pod_blocked(KbClient *client, json_object *pod)
{
    const char *ns = kas_json_get_string(pod, "metadata.namespace");
    const char *uid = kas_json_get_string(pod, "metadata.uid");
    json_object *entries = kas_json_get(pod, "spec.resourceClaims");
    for (gsize i = 0;
         json_object_is_type(entries, json_type_array) && i < json_object_array_length(entries);
         i++) {
        json_object *e = json_object_array_get_idx(entries, i);
        const char *name = claim_of(pod, e);
        if (name == NULL)
            return g_strdup_printf("pod claim \"%s\": its ResourceClaim is not created yet",
                                   kas_json_get_string(e, "name"));
        g_autoptr(GError) error = NULL;
        json_object *claim = kb_client_get(client, &kbl_type_resource_claims, ns, name, &error);
        char *why = NULL;
        if (claim == NULL)
            why = g_strdup_printf("ResourceClaim %s/%s: %s", ns, name, error->message);
        else if (kas_json_get(claim, "status.allocation") == NULL)
            why = g_strdup_printf("ResourceClaim %s/%s: not allocated", ns, name);
        else if (!reserved_for(claim, uid))
            why = g_strdup_printf("ResourceClaim %s/%s: not reserved for the pod", ns, name);
        json_object_put(claim);
        if (why != NULL)
            return why;
    }
    return NULL;
}
