/* kb-kubelet --dra: GPUs as ResourceSlices, pods gated on their claims (see kbl-dra.h). */
#include "tests/kubelet/kbl-dra.h"

#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-quantity.h"
#include "tests/apiserver/kas-json.h"

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

json_object *kbl_dra_slice(json_object *node, GError **error)
{
    gint64 n = gpu_count(node, error);
    if (n <= 0)
        return NULL;
    const char *name = kas_json_get_string(node, "metadata.name");
    json_object *labels = kas_json_get(node, "metadata.labels");
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
    json_object *s = json_object_new_object();
    kas_json_set_string(s, "apiVersion", "resource.k8s.io/v1");
    kas_json_set_string(s, "kind", "ResourceSlice");
    g_autofree char *sname = g_strdup_printf("%s-%s", name, KBL_DRA_DRIVER);
    kas_json_set_string(kas_json_ensure_object(s, "metadata"), "name", sname);
    json_object *spec = kas_json_ensure_object(s, "spec");
    kas_json_set_string(spec, "driver", KBL_DRA_DRIVER);
    kas_json_set_string(spec, "nodeName", name);
    json_object *pool = kas_json_ensure_object(spec, "pool");
    kas_json_set_string(pool, "name", name);
    json_object_object_add(pool, "generation", json_object_new_int64(0));
    json_object_object_add(pool, "resourceSliceCount", json_object_new_int64(1));
    json_object *devs = json_object_new_array();
    for (gint64 i = 0; i < n; i++)
        json_object_array_add(devs, device(name, i, isl[i], product, memory));
    json_object_object_add(spec, "devices", devs);
    return s;
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
