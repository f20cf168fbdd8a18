/* The scheduler's DRA state and device allocator; see dra.h. */
#include <string.h>

#include "scheduler/dra.h"

/* A class and its compiled selectors (error: the first selector kb-cel refused); idx is the
 * class name's slot in every device's verdicts and every node's free counts. */
typedef struct {
    KbDeviceClass *dc;
    GPtrArray *programs; /* KbCelProgram* */
    char *error;
    guint idx;
} ClassInfo;

/* A claim and its requests' compiled selectors, flat in (request, alternative, selector) order;
 * verdicts caches them per (device id, first program): 1 match, 2 no match. */
typedef struct {
    KbResourceClaim *claim;
    GPtrArray *programs;
    char *error;
    GHashTable *verdicts; /* guint64* -> verdict */
} ClaimInfo;

typedef struct NodeDevs NodeDevs;

/*
 * One device of a slice as the allocator sees it, built when the slice is set: its key, its
 * island, whether a claim holds it, and its class selectors' verdicts, evaluated once per class
 * and device (all dropped when any class changes: class_gen).
 */
typedef struct {
    const KbResourceSlice *slice;
    const KbDevice *dev;
    char *key;            /* "driver/pool/device" */
    char *island;         /* KB_DRA_ISLAND_ATTRIBUTE as attribute_text(), "" without */
    guint64 id;           /* unique over the allocator's life (request verdicts) */
    NodeDevs *node;       /* the index the device counts in */
    gboolean held;        /* allocated or assumed */
    guint64 taken;        /* == KbDra.epoch: chosen for the pod being planned */
    guint class_gen;      /* the verdicts are for this KbDra.class_gen */
    GByteArray *verdicts; /* per class idx: 0 unknown, 1 match, 2 no match */
} Dev;

typedef struct {
    KbResourceSlice *slice; /* ref */
    Dev *devs;              /* n_devices */
    NodeDevs *node;         /* NULL: a slice for a node selector (not used) */
} SliceDevs;

/* A node's free devices per class, counted when first asked and kept as holds change. */
typedef struct {
    guint gen; /* valid when == KbDra.class_gen */
    guint free;
} FreeCount;

/* The devices of one node's slices (or of the allNodes slices). */
struct NodeDevs {
    GPtrArray *slices; /* SliceDevs* (borrowed) */
    GArray *counts;    /* FreeCount per class idx */
};

/* Devices this scheduler chose for a claim not (yet) seen allocated. */
typedef struct {
    char *key; /* "ns/name" */
    const char *node;
    GArray *results; /* KbDeviceResult (owned strings) */
    guint refs;      /* pod holds naming it */
    gboolean written;
} ClaimAlloc;

/* What a pod holds: the claims it uses (keys), and whether each was allocated for it. */
typedef struct {
    const char *node;
    GPtrArray *claims; /* char* keys */
} PodHold;

struct KbDra {
    GHashTable *classes;    /* name -> ClassInfo* */
    GHashTable *claims;     /* "ns/name" -> ClaimInfo* */
    GHashTable *templates;  /* "ns/name" -> KbResourceClaimTemplate* (ref) */
    GHashTable *slices;     /* name -> SliceDevs* */
    GHashTable *by_node;    /* interned node -> NodeDevs* */
    NodeDevs *all_nodes;    /* slices with allNodes */
    GHashTable *dev_by_key; /* device key -> Dev* (borrowed) */
    GHashTable *class_idx;  /* class name -> idx + 1 (never removed) */
    guint class_gen;        /* bumped when a class changes: verdicts and counts are stale */
    guint64 epoch;          /* one per pod plan (Dev.taken) */
    guint64 next_dev_id;
    GPtrArray *cands;         /* scratch: the node's devices for one plan (Dev*) */
    GHashTable *allocated;    /* device key -> claim key (owned) */
    GHashTable *assumed;      /* device key -> claim key (owned) */
    GHashTable *claim_allocs; /* claim key -> ClaimAlloc* */
    GHashTable *holds;        /* pod uid -> PodHold* */
    /* Demand as resources (see "demand" below): bumped when a template changes (pods' demand)
     * and when a slice changes (nodes' capacity; class_gen covers classes). */
    guint demand_gen;
    guint slice_gen;
    /* A preemption plan: victims' consumption per claim key, and the devices of claims every
     * consumer of which is a victim (device key -> count), free in this plan. */
    GHashTable *plan_claims;
    GHashTable *plan_freed;
};

/* ---- records -------------------------------------------------------------------------------- */

static void programs_free(GPtrArray *p)
{
    if (p != NULL)
        g_ptr_array_unref(p);
}

static GPtrArray *programs_new(void)
{
    return g_ptr_array_new_with_free_func((GDestroyNotify)kb_cel_program_free);
}

/* Compile @expr into @programs; on failure the first error (quoting it) into *@error. */
static void compile_into(GPtrArray *programs, const char *expr, const char *what, char **error)
{
    g_autoptr(GError) e = NULL;
    KbCelProgram *p = kb_cel_compile(expr, &e);
    g_ptr_array_add(programs, p);
    if (p == NULL && *error == NULL)
        *error = g_strdup_printf("%s: selector \"%s\" refused: %s", what, expr, e->message);
}

static void class_info_free(gpointer p)
{
    ClassInfo *ci = p;
    kb_object_unref(ci->dc);
    programs_free(ci->programs);
    g_free(ci->error);
    g_free(ci);
}

static void claim_info_free(gpointer p)
{
    ClaimInfo *ci = p;
    kb_object_unref(ci->claim);
    programs_free(ci->programs);
    g_hash_table_unref(ci->verdicts);
    g_free(ci->error);
    g_free(ci);
}

static void result_clear(gpointer p)
{
    KbDeviceResult *r = p;
    g_free(r->request);
    g_free(r->device);
}

static void claim_alloc_free(gpointer p)
{
    ClaimAlloc *ca = p;
    g_free(ca->key);
    g_array_unref(ca->results);
    g_free(ca);
}

static void pod_hold_free(gpointer p)
{
    PodHold *h = p;
    g_ptr_array_unref(h->claims);
    g_free(h);
}

static NodeDevs *node_devs_new(void)
{
    NodeDevs *nd = g_new0(NodeDevs, 1);
    nd->slices = g_ptr_array_new();
    nd->counts = g_array_new(FALSE, TRUE, sizeof(FreeCount));
    return nd;
}

static void node_devs_free(gpointer p)
{
    NodeDevs *nd = p;
    g_ptr_array_unref(nd->slices);
    g_array_unref(nd->counts);
    g_free(nd);
}

static void slice_devs_free(gpointer p)
{
    SliceDevs *sd = p;
    for (guint i = 0; i < sd->slice->n_devices; i++) {
        g_free(sd->devs[i].key);
        g_free(sd->devs[i].island);
        g_byte_array_unref(sd->devs[i].verdicts);
    }
    g_free(sd->devs);
    kb_object_unref(sd->slice);
    g_free(sd);
}

KbDra *kb_dra_new(void)
{
    KbDra *dra = g_new0(KbDra, 1);
    dra->classes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, class_info_free);
    dra->claims = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, claim_info_free);
    dra->templates = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kb_object_unref);
    dra->slices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, slice_devs_free);
    dra->by_node = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, node_devs_free);
    dra->all_nodes = node_devs_new();
    dra->dev_by_key = g_hash_table_new(g_str_hash, g_str_equal);
    dra->class_idx = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    dra->class_gen = 1;
    dra->cands = g_ptr_array_new();
    dra->allocated = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->assumed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->claim_allocs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, claim_alloc_free);
    dra->holds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, pod_hold_free);
    dra->demand_gen = dra->slice_gen = 1;
    dra->plan_claims = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    dra->plan_freed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return dra;
}

void kb_dra_free(KbDra *dra)
{
    if (dra == NULL)
        return;
    g_hash_table_unref(dra->plan_freed);
    g_hash_table_unref(dra->plan_claims);
    g_hash_table_unref(dra->holds);
    g_hash_table_unref(dra->claim_allocs);
    g_hash_table_unref(dra->assumed);
    g_hash_table_unref(dra->allocated);
    g_ptr_array_unref(dra->cands);
    g_hash_table_unref(dra->class_idx);
    g_hash_table_unref(dra->dev_by_key);
    g_hash_table_unref(dra->slices);
    node_devs_free(dra->all_nodes);
    g_hash_table_unref(dra->by_node);
    g_hash_table_unref(dra->templates);
    g_hash_table_unref(dra->claims);
    g_hash_table_unref(dra->classes);
    g_free(dra);
}

static char *attribute_text(const KbDevice *d, const char *qualified);

static char *device_key(const char *driver, const char *pool, const char *device)
{
    return g_strdup_printf("%s/%s/%s", driver != NULL ? driver : "", pool != NULL ? pool : "",
                           device);
}

/* ---- devices, verdicts and free counts ------------------------------------------------------ */

static gboolean programs_match(const GPtrArray *programs, guint from, guint n, const Dev *d)
{
    KbCelDevice dev = {d->slice->driver, d->dev->attributes, d->dev->n_attributes,
                       d->dev->capacity, d->dev->n_capacity, FALSE};
    for (guint i = from; i < from + n; i++) {
        gboolean ok = FALSE;
        /* A runtime error (a missing attribute) is no match, as for a device of another driver. */
        if (!kb_cel_program_eval(programs->pdata[i], &dev, &ok, NULL) || !ok)
            return FALSE;
    }
    return TRUE;
}

/* Does @d match class @cl's selectors: evaluated once per (class, device) until a class or the
 * device's slice changes. */
static gboolean class_matches(KbDra *dra, const ClassInfo *cl, Dev *d)
{
    if (d->class_gen != dra->class_gen) {
        g_byte_array_set_size(d->verdicts, 0);
        d->class_gen = dra->class_gen;
    }
    if (d->verdicts->len <= cl->idx) {
        guint old = d->verdicts->len;
        g_byte_array_set_size(d->verdicts, cl->idx + 1);
        memset(d->verdicts->data + old, 0, cl->idx + 1 - old);
    }
    guint8 *v = &d->verdicts->data[cl->idx];
    /* A partitionable or shared device matches no class until counters and consumed capacity
     * are accounted (KbDevice.shared). */
    if (*v == 0)
        *v = !d->dev->shared && programs_match(cl->programs, 0, cl->programs->len, d) ? 1 : 2;
    return *v == 1;
}

/* Do @d match @n request selectors from @prog of @ci: once per (request, device). */
static gboolean request_matches(const ClaimInfo *ci, guint prog, guint n, const Dev *d)
{
    if (n == 0)
        return TRUE;
    guint64 key = (d->id << 16) | prog;
    gpointer v = g_hash_table_lookup(ci->verdicts, &key);
    if (v == NULL) {
        v = GUINT_TO_POINTER(programs_match(ci->programs, prog, n, d) ? 1 : 2);
        g_hash_table_insert(ci->verdicts, g_memdup2(&key, sizeof(key)), v);
    }
    return GPOINTER_TO_UINT(v) == 1;
}

/* The free devices of class @cl in @nd (counted once, then kept by dev_set_held). */
static guint node_free(KbDra *dra, NodeDevs *nd, const ClassInfo *cl)
{
    if (nd->counts->len <= cl->idx)
        g_array_set_size(nd->counts, cl->idx + 1);
    FreeCount *fc = &g_array_index(nd->counts, FreeCount, cl->idx);
    if (fc->gen != dra->class_gen) {
        fc->free = 0;
        for (guint s = 0; s < nd->slices->len; s++) {
            const SliceDevs *sd = nd->slices->pdata[s];
            for (guint i = 0; i < sd->slice->n_devices; i++)
                /* every verdict is taken (held or not): dev_set_held relies on it */
                fc->free += class_matches(dra, cl, &sd->devs[i]) && !sd->devs[i].held;
        }
        fc->gen = dra->class_gen;
    }
    return fc->free;
}

static void dev_set_held(KbDra *dra, Dev *d, gboolean held)
{
    if (d->held == held)
        return;
    d->held = held;
    if (d->node == NULL || d->class_gen != dra->class_gen)
        return;
    /* a valid count has every device's verdict of its class */
    for (guint c = 0; c < d->node->counts->len && c < d->verdicts->len; c++) {
        FreeCount *fc = &g_array_index(d->node->counts, FreeCount, c);
        if (fc->gen == dra->class_gen && d->verdicts->data[c] == 1)
            fc->free = held ? fc->free - 1 : fc->free + 1;
    }
}

/* The holds of device @dk changed: its Dev (if a slice has it) follows. */
static void dev_refresh(KbDra *dra, const char *dk)
{
    Dev *d = g_hash_table_lookup(dra->dev_by_key, dk);
    if (d != NULL)
        dev_set_held(dra, d,
                     (g_hash_table_contains(dra->allocated, dk) &&
                      !g_hash_table_contains(dra->plan_freed, dk)) ||
                             g_hash_table_contains(dra->assumed, dk));
}

/* ---- ingest --------------------------------------------------------------------------------- */

void kb_dra_set_class(KbDra *dra, KbDeviceClass *dc)
{
    ClassInfo *ci = g_new0(ClassInfo, 1);
    ci->dc = kb_object_ref(dc);
    ci->programs = programs_new();
    g_autofree char *what = g_strdup_printf("device class %s", dc->meta.name);
    for (guint i = 0; i < dc->n_selectors; i++)
        compile_into(ci->programs, dc->selectors[i], what, &ci->error);
    guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(dra->class_idx, dc->meta.name));
    if (idx == 0) {
        idx = g_hash_table_size(dra->class_idx) + 1;
        g_hash_table_insert(dra->class_idx, g_strdup(dc->meta.name), GUINT_TO_POINTER(idx));
    }
    ci->idx = idx - 1;
    g_hash_table_replace(dra->classes, g_strdup(dc->meta.name), ci);
    dra->class_gen++;
}

void kb_dra_delete_class(KbDra *dra, const KbDeviceClass *dc)
{
    if (g_hash_table_remove(dra->classes, dc->meta.name))
        dra->class_gen++;
}

static void claim_alloc_drop(KbDra *dra, const char *key)
{
    ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, key);
    if (ca == NULL)
        return;
    for (guint i = 0; i < ca->results->len; i++) {
        const KbDeviceResult *r = &g_array_index(ca->results, KbDeviceResult, i);
        g_autofree char *dk = device_key(r->driver, r->pool, r->device);
        const char *holder = g_hash_table_lookup(dra->assumed, dk);
        if (g_strcmp0(holder, key) == 0) {
            g_hash_table_remove(dra->assumed, dk);
            dev_refresh(dra, dk);
        }
    }
    g_hash_table_remove(dra->claim_allocs, key);
}

/* Add (or with @add FALSE remove) the devices @claim's allocation holds. */
static void claim_devices(KbDra *dra, const KbResourceClaim *claim, const char *key, gboolean add)
{
    for (guint i = 0; i < claim->n_results; i++) {
        const KbDeviceResult *r = &claim->results[i];
        char *dk = device_key(r->driver, r->pool, r->device);
        if (add) {
            g_hash_table_replace(dra->allocated, dk, g_strdup(key));
            dev_refresh(dra, dk);
            continue;
        }
        if (g_strcmp0(g_hash_table_lookup(dra->allocated, dk), key) == 0) {
            g_hash_table_remove(dra->allocated, dk);
            dev_refresh(dra, dk);
        }
        g_free(dk);
    }
}

void kb_dra_set_claim(KbDra *dra, KbResourceClaim *claim)
{
    char *key = kb_object_key(&claim->meta);
    ClaimInfo *old = g_hash_table_lookup(dra->claims, key);
    if (old != NULL)
        claim_devices(dra, old->claim, key, FALSE);
    ClaimInfo *ci = g_new0(ClaimInfo, 1);
    ci->claim = kb_object_ref(claim);
    ci->programs = programs_new();
    ci->verdicts = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g_autofree char *what = g_strdup_printf("claim %s", key);
    for (guint r = 0; r < claim->spec.n_requests; r++) {
        const KbDeviceRequest *req = &claim->spec.requests[r];
        guint n_alt = req->n_first_available > 0 ? req->n_first_available : 1;
        for (guint a = 0; a < n_alt; a++) {
            const KbDeviceSubRequest *s =
                    req->n_first_available > 0 ? &req->first_available[a] : &req->exactly;
            for (guint i = 0; i < s->n_selectors; i++)
                compile_into(ci->programs, s->selectors[i], what, &ci->error);
        }
    }
    claim_devices(dra, claim, key, TRUE);
    /* Seen allocated: what this scheduler assumed for it is now counted from the claim. */
    if (claim->allocated)
        claim_alloc_drop(dra, key);
    g_hash_table_replace(dra->claims, key, ci);
}

void kb_dra_delete_claim(KbDra *dra, const KbResourceClaim *claim)
{
    g_autofree char *key = kb_object_key(&claim->meta);
    ClaimInfo *old = g_hash_table_lookup(dra->claims, key);
    if (old != NULL)
        claim_devices(dra, old->claim, key, FALSE);
    claim_alloc_drop(dra, key);
    g_hash_table_remove(dra->claims, key);
}

void kb_dra_set_template(KbDra *dra, KbResourceClaimTemplate *t)
{
    g_hash_table_replace(dra->templates, kb_object_key(&t->meta), kb_object_ref(t));
    dra->demand_gen++;
}

void kb_dra_delete_template(KbDra *dra, const KbResourceClaimTemplate *t)
{
    g_autofree char *key = kb_object_key(&t->meta);
    if (g_hash_table_remove(dra->templates, key))
        dra->demand_gen++;
}

/* Take @sd out of its node's index; its node's counts are recounted when next asked. */
static void slice_unindex(KbDra *dra, SliceDevs *sd)
{
    for (guint i = 0; i < sd->slice->n_devices; i++) {
        if (g_hash_table_lookup(dra->dev_by_key, sd->devs[i].key) == &sd->devs[i])
            g_hash_table_remove(dra->dev_by_key, sd->devs[i].key);
    }
    if (sd->node != NULL) {
        g_ptr_array_remove(sd->node->slices, sd);
        g_array_set_size(sd->node->counts, 0);
    }
}

void kb_dra_set_slice(KbDra *dra, KbResourceSlice *slice)
{
    SliceDevs *old = g_hash_table_lookup(dra->slices, slice->meta.name);
    if (old != NULL)
        slice_unindex(dra, old);
    SliceDevs *sd = g_new0(SliceDevs, 1);
    sd->slice = kb_object_ref(slice);
    sd->devs = g_new0(Dev, MAX(slice->n_devices, 1));
    if (slice->all_nodes) {
        sd->node = dra->all_nodes;
    } else if (slice->node != NULL) {
        sd->node = g_hash_table_lookup(dra->by_node, slice->node);
        if (sd->node == NULL) {
            sd->node = node_devs_new();
            g_hash_table_insert(dra->by_node, (gpointer)slice->node, sd->node);
        }
    }
    for (guint i = 0; i < slice->n_devices; i++) {
        Dev *d = &sd->devs[i];
        d->slice = slice;
        d->dev = &slice->devices[i];
        d->key = device_key(slice->driver, slice->pool, d->dev->name);
        d->island = attribute_text(d->dev, KB_DRA_ISLAND_ATTRIBUTE);
        if (d->island == NULL)
            d->island = g_strdup("");
        d->id = ++dra->next_dev_id;
        d->node = sd->node;
        d->held = g_hash_table_contains(dra->allocated, d->key) ||
                  g_hash_table_contains(dra->assumed, d->key);
        d->verdicts = g_byte_array_new();
        if (sd->node != NULL)
            g_hash_table_replace(dra->dev_by_key, d->key, d);
    }
    if (sd->node != NULL) {
        g_ptr_array_add(sd->node->slices, sd);
        g_array_set_size(sd->node->counts, 0);
    }
    g_hash_table_replace(dra->slices, g_strdup(slice->meta.name), sd);
    dra->slice_gen++;
}

void kb_dra_delete_slice(KbDra *dra, const KbResourceSlice *slice)
{
    SliceDevs *old = g_hash_table_lookup(dra->slices, slice->meta.name);
    if (old == NULL)
        return;
    slice_unindex(dra, old);
    g_hash_table_remove(dra->slices, slice->meta.name);
    dra->slice_gen++;
}

guint kb_dra_devices_held(const KbDra *dra)
{
    guint n = g_hash_table_size(dra->allocated);
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, dra->assumed);
    while (g_hash_table_iter_next(&it, &k, NULL))
        n += !g_hash_table_contains(dra->allocated, k);
    return n;
}

/* ---- readiness ------------------------------------------------------------------------------ */

static ClaimInfo *pod_claim(KbDra *dra, const KbPod *pod, guint i, char **key)
{
    const char *name = kb_pod_resource_claim_name(pod, i);
    if (name == NULL) {
        *key = NULL;
        return NULL;
    }
    *key = g_strdup_printf("%s/%s", pod->meta.namespace_, name);
    return g_hash_table_lookup(dra->claims, *key);
}

/*
 * As pod_claim, without building a string when "ns/name" fits @buf (@size): the key is then in
 * @buf and *@heap NULL, else in *@heap (owned); @buf is "" when the claim has no name yet.
 */
static ClaimInfo *pod_claim_in(KbDra *dra, const KbPod *pod, guint i, char *buf, gsize size,
                               char **heap)
{
    const char *name = kb_pod_resource_claim_name(pod, i);
    *heap = NULL;
    buf[0] = '\0';
    if (name == NULL)
        return NULL;
    gsize ns = strlen(pod->meta.namespace_), n = strlen(name);
    if (ns + n + 2 > size) {
        *heap = g_strdup_printf("%s/%s", pod->meta.namespace_, name);
        return g_hash_table_lookup(dra->claims, *heap);
    }
    memcpy(buf, pod->meta.namespace_, ns);
    buf[ns] = '/';
    memcpy(buf + ns + 1, name, n + 1);
    return g_hash_table_lookup(dra->claims, buf);
}

/* The class of every request alternative of @ci exists and compiled; FALSE with why. */
static gboolean claim_classes_ready(KbDra *dra, const ClaimInfo *ci, const char *key,
                                    const char **reason, char **why)
{
    const KbClaimSpec *spec = &ci->claim->spec;
    for (guint r = 0; r < spec->n_requests; r++) {
        const KbDeviceRequest *req = &spec->requests[r];
        guint n_alt = req->n_first_available > 0 ? req->n_first_available : 1;
        for (guint a = 0; a < n_alt; a++) {
            const KbDeviceSubRequest *s =
                    req->n_first_available > 0 ? &req->first_available[a] : &req->exactly;
            const ClassInfo *cl = g_hash_table_lookup(dra->classes, s->device_class);
            if (cl == NULL) {
                *reason = "DeviceClassNotFound";
                *why = g_strdup_printf("claim %s request %s: device class %s not found", key,
                                       s->name, s->device_class);
                return FALSE;
            }
            if (cl->error != NULL) {
                *reason = "DeviceSelectorUnsupported";
                *why = g_strdup_printf("claim %s request %s: %s", key, s->name, cl->error);
                return FALSE;
            }
        }
    }
    for (guint c = 0; c < spec->n_constraints; c++) {
        if (spec->constraints[c].match_attribute == NULL) {
            *reason = "DeviceConstraintUnsupported";
            *why = g_strdup_printf("claim %s constraints[%u]: only matchAttribute is supported",
                                   key, c);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean kb_dra_pod_ready(KbDra *dra, const KbPod *pod, const char **reason, char **why)
{
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        const KbPodResourceClaim *rc = &pod->resource_claims[i];
        g_autofree char *key = NULL;
        ClaimInfo *ci = pod_claim(dra, pod, i, &key);
        if (ci == NULL) {
            *reason = "ResourceClaimNotFound";
            if (key == NULL)
                *why = g_strdup_printf("pod %s/%s: the claim of resourceClaims %s (template %s) "
                                       "is not created yet",
                                       pod->meta.namespace_, pod->meta.name, rc->name,
                                       rc->template_name);
            else
                *why = g_strdup_printf("pod %s/%s: resourceclaim %s not found",
                                       pod->meta.namespace_, pod->meta.name, key);
            return FALSE;
        }
        if (ci->error != NULL) {
            *reason = "DeviceSelectorUnsupported";
            *why = g_strdup_printf("pod %s/%s: %s", pod->meta.namespace_, pod->meta.name,
                                   ci->error);
            return FALSE;
        }
        if (!ci->claim->allocated && !claim_classes_ready(dra, ci, key, reason, why))
            return FALSE;
    }
    return TRUE;
}

/* ---- the device search ---------------------------------------------------------------------- */

/* The node's devices (its slices' and the allNodes slices') into dra->cands. */
static void node_cands(KbDra *dra, NodeDevs *nd)
{
    g_ptr_array_set_size(dra->cands, 0);
    NodeDevs *lists[2] = {nd, dra->all_nodes};
    for (guint l = 0; l < 2; l++) {
        for (guint i = 0; lists[l] != NULL && i < lists[l]->slices->len; i++) {
            SliceDevs *sd = lists[l]->slices->pdata[i];
            for (guint d = 0; d < sd->slice->n_devices; d++)
                g_ptr_array_add(dra->cands, &sd->devs[d]);
        }
    }
}

static gboolean dev_free(KbDra *dra, const Dev *d)
{
    return !d->held && d->taken != dra->epoch;
}

/* The value of attribute @qualified ("domain/name", or "name" in any domain) as text, or NULL. */
static char *attribute_text(const KbDevice *d, const char *qualified)
{
    const char *slash = strchr(qualified, '/');
    for (guint i = 0; i < d->n_attributes; i++) {
        const KbCelAttribute *a = &d->attributes[i];
        gboolean same = slash != NULL ? strncmp(a->domain, qualified, slash - qualified) == 0 &&
                                                a->domain[slash - qualified] == '\0' &&
                                                strcmp(a->name, slash + 1) == 0
                                      : strcmp(a->name, qualified) == 0;
        if (!same)
            continue;
        switch (a->type) {
        case KB_CEL_ATTR_INT:
            return g_strdup_printf("i%" G_GINT64_FORMAT, a->int_value);
        case KB_CEL_ATTR_BOOL:
            return g_strdup(a->bool_value ? "btrue" : "bfalse");
        default:
            return g_strconcat("s", a->string_value, NULL);
        }
    }
    return NULL;
}

/* One claim's search on one node. */
typedef struct {
    KbDra *dra;
    const ClaimInfo *ci;
    const char *key;
    const char *node;
    GPtrArray *cands;        /* Dev* of the node */
    GPtrArray *picked;       /* Dev* of results, same order */
    GArray *results;         /* KbDeviceResult for this claim */
    const char *match_attr;  /* the constraint being applied, or NULL */
    const char *match_value; /* its value (attribute_text form) */
    GString *why;            /* the first shortfall */
    gint why_free;
    gboolean choose; /* the devices are kept (assume): prefer islands; else only feasibility */
} Search;

static gboolean constrained(const KbClaimSpec *spec, const char *request, const char *attr)
{
    for (guint c = 0; c < spec->n_constraints; c++) {
        const KbDeviceConstraint *k = &spec->constraints[c];
        if (g_strcmp0(k->match_attribute, attr) != 0)
            continue;
        if (k->n_requests == 0)
            return TRUE;
        for (guint i = 0; i < k->n_requests; i++) {
            if (strcmp(k->requests[i], request) == 0)
                return TRUE;
        }
    }
    return FALSE;
}

/*
 * Order @idx (indices into cands) so that taking the first @want keeps to one NVLink island when
 * one holds them: the island with the fewest devices that still holds @want first, then the rest
 * by island size, largest first.
 */
static void order_by_island(GPtrArray *idx, guint want)
{
    g_autoptr(GHashTable) sizes = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < idx->len; i++) {
        const char *t = ((const Dev *)idx->pdata[i])->island;
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(sizes, t));
        g_hash_table_replace(sizes, (gpointer)t, GUINT_TO_POINTER(n + 1));
    }
    /* best island: the smallest that holds @want */
    const char *best = NULL;
    guint best_n = G_MAXUINT;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, sizes);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        guint n = GPOINTER_TO_UINT(v);
        if (n >= want && (n < best_n || (n == best_n && strcmp(k, best) < 0))) {
            best = k;
            best_n = n;
        }
    }
    /* stable selection: the best island's devices first, then the others (document order) */
    g_autoptr(GPtrArray) out = g_ptr_array_sized_new(idx->len);
    for (int pass = 0; pass < 2; pass++) {
        for (guint i = 0; i < idx->len; i++) {
            gboolean in_best =
                    best != NULL && strcmp(((const Dev *)idx->pdata[i])->island, best) == 0;
            if ((pass == 0) == in_best)
                g_ptr_array_add(out, idx->pdata[i]);
        }
    }
    memcpy(idx->pdata, out->pdata, idx->len * sizeof(gpointer));
}

/* Try alternative @sub (programs from @prog) of request @req (@alt: the alternative's name with
 * firstAvailable, else NULL); TRUE with its devices taken. */
static gboolean try_sub(Search *s, const char *req_name, const KbDeviceSubRequest *sub,
                        const char *alt, guint prog, gboolean constrain)
{
    const ClassInfo *cl = g_hash_table_lookup(s->dra->classes, sub->device_class);
    if (cl == NULL)
        return FALSE;
    g_autoptr(GPtrArray) idx = g_ptr_array_new();
    guint busy = 0;
    for (guint i = 0; i < s->cands->len; i++) {
        Dev *c = s->cands->pdata[i];
        if (!class_matches(s->dra, cl, c) || !request_matches(s->ci, prog, sub->n_selectors, c))
            continue;
        if (constrain && s->match_value != NULL) {
            g_autofree char *t = attribute_text(c->dev, s->match_attr);
            if (g_strcmp0(t, s->match_value) != 0)
                continue;
        }
        if (!dev_free(s->dra, c)) {
            busy++;
            continue;
        }
        g_ptr_array_add(idx, c);
    }
    guint want = sub->all ? idx->len + busy : (guint)sub->count;
    if ((sub->all && (busy > 0 || idx->len == 0)) || idx->len < want) {
        if (s->why != NULL && s->why->len == 0) {
            g_string_printf(s->why, "claim %s request %s: ", s->key, req_name);
            if (sub->all)
                g_string_append_printf(s->why, "all %u devices of class %s wanted, ",
                                       idx->len + busy, sub->device_class);
            else
                g_string_append_printf(s->why, "%u device%s of class %s wanted, ", want,
                                       want == 1 ? "" : "s", sub->device_class);
            g_string_append_printf(s->why, "%u free on node %s", idx->len, s->node);
            if (constrain && s->match_value != NULL)
                g_string_append_printf(s->why, " with the same %s", s->match_attr);
            s->why_free = (gint)idx->len;
        }
        return FALSE;
    }
    if (!sub->all && s->choose)
        order_by_island(idx, want);
    for (guint i = 0; i < want; i++) {
        Dev *c = idx->pdata[i];
        c->taken = s->dra->epoch;
        g_ptr_array_add(s->picked, c);
        char *rn = alt != NULL ? g_strdup_printf("%s/%s", req_name, alt) : g_strdup(req_name);
        KbDeviceResult r = {rn, c->slice->driver, c->slice->pool, g_strdup(c->dev->name)};
        g_array_append_val(s->results, r);
    }
    return TRUE;
}

/* Untake the devices of results[@from..]. */
static void untake(Search *s, guint from)
{
    for (guint i = from; i < s->picked->len; i++)
        ((Dev *)s->picked->pdata[i])->taken = 0;
    g_ptr_array_set_size(s->picked, from);
    g_array_set_size(s->results, from);
}

/* Every request in order (with the current constraint value); TRUE when all got devices. */
static gboolean try_requests(Search *s)
{
    const KbClaimSpec *spec = &s->ci->claim->spec;
    guint prog = 0;
    for (guint r = 0; r < spec->n_requests; r++) {
        const KbDeviceRequest *req = &spec->requests[r];
        const char *name = req->exactly.name;
        gboolean constrain = s->match_attr != NULL && constrained(spec, name, s->match_attr);
        gboolean done = FALSE;
        if (req->n_first_available == 0) {
            done = try_sub(s, name, &req->exactly, NULL, prog, constrain);
            prog += req->exactly.n_selectors;
        } else {
            for (guint a = 0; a < req->n_first_available; a++) {
                const KbDeviceSubRequest *sub = &req->first_available[a];
                if (!done)
                    done = try_sub(s, name, sub, sub->name, prog, constrain);
                prog += sub->n_selectors;
            }
        }
        if (!done)
            return FALSE;
    }
    return TRUE;
}

/* The claim's devices on the node: with a matchAttribute constraint each value present on the
 * node is tried, the value with fewest devices first. */
static gboolean search_claim(Search *s)
{
    const KbClaimSpec *spec = &s->ci->claim->spec;
    const char *attr = NULL;
    for (guint c = 0; c < spec->n_constraints && attr == NULL; c++)
        attr = spec->constraints[c].match_attribute;
    if (attr == NULL)
        return try_requests(s);
    g_autoptr(GHashTable) counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < s->cands->len; i++) {
        const Dev *c = s->cands->pdata[i];
        char *t = attribute_text(c->dev, attr);
        if (t == NULL)
            continue;
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(counts, t));
        g_hash_table_replace(counts, t, GUINT_TO_POINTER(n + 1));
    }
    g_autoptr(GPtrArray) values = g_ptr_array_new();
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, counts);
    while (g_hash_table_iter_next(&it, &k, NULL))
        g_ptr_array_add(values, k);
    /* fewest devices first (tightest island), then by value for a stable order */
    for (guint i = 1; i < values->len; i++) {
        for (guint j = i; j > 0; j--) {
            guint a = GPOINTER_TO_UINT(g_hash_table_lookup(counts, values->pdata[j - 1]));
            guint b = GPOINTER_TO_UINT(g_hash_table_lookup(counts, values->pdata[j]));
            if (a < b || (a == b && strcmp(values->pdata[j - 1], values->pdata[j]) <= 0))
                break;
            gpointer t = values->pdata[j];
            values->pdata[j] = values->pdata[j - 1];
            values->pdata[j - 1] = t;
        }
    }
    s->match_attr = attr;
    for (guint v = 0; v < values->len; v++) {
        s->match_value = values->pdata[v];
        if (try_requests(s))
            return TRUE;
        untake(s, 0);
    }
    if (s->why != NULL && s->why->len == 0) {
        g_string_printf(s->why, "claim %s: no devices on node %s share %s for every request",
                        s->key, s->node, attr);
        s->why_free = 0;
    }
    s->match_value = NULL;
    return FALSE;
}

/* ---- a pod's plan --------------------------------------------------------------------------- */

typedef struct {
    char *key;
    GArray *results; /* NULL: the claim is only reserved (allocated already, or by another pod) */
} PlanClaim;

static void plan_claim_clear(gpointer p)
{
    PlanClaim *pc = p;
    g_free(pc->key);
    if (pc->results != NULL)
        g_array_unref(pc->results);
}

static GArray *results_new(void)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(KbDeviceResult));
    g_array_set_clear_func(a, result_clear);
    return a;
}

/*
 * O(1) per request: FALSE (with @why/@free as the search would say it) when an ExactCount request
 * of @ci without selectors wants more devices of its class than @nd and the allNodes slices have
 * free. Requests are taken in order up to the first the counts cannot judge; a claim with
 * constraints is left to the search (its message differs).
 */
static gboolean claim_may_fit(KbDra *dra, const ClaimInfo *ci, const char *key, NodeDevs *nd,
                              const char *node, GString *why, gint *free)
{
    const KbClaimSpec *spec = &ci->claim->spec;
    if (spec->n_constraints > 0)
        return TRUE;
    for (guint r = 0; r < spec->n_requests; r++) {
        const KbDeviceSubRequest *sub = &spec->requests[r].exactly;
        if (spec->requests[r].n_first_available > 0 || sub->all || sub->n_selectors > 0)
            return TRUE;
        const ClassInfo *cl = g_hash_table_lookup(dra->classes, sub->device_class);
        if (cl == NULL)
            return TRUE;
        guint n = (nd != NULL ? node_free(dra, nd, cl) : 0) + node_free(dra, dra->all_nodes, cl);
        if (n >= (guint)sub->count)
            continue;
        if (why != NULL)
            g_string_append_printf(why,
                                   "claim %s request %s: %u device%s of class %s wanted, %u "
                                   "free on node %s",
                                   key, sub->name, (guint)sub->count, sub->count == 1 ? "" : "s",
                                   sub->device_class, n, node);
        if (free != NULL)
            *free = (gint)n;
        return FALSE;
    }
    return TRUE;
}

/* A claim whose feasibility the free counts decide alone: one ExactCount request without
 * selectors or constraints. */
static gboolean claim_counted(const ClaimInfo *ci)
{
    const KbClaimSpec *spec = &ci->claim->spec;
    return spec->n_constraints == 0 && spec->n_requests == 1 &&
           spec->requests[0].n_first_available == 0 && !spec->requests[0].exactly.all &&
           spec->requests[0].exactly.n_selectors == 0;
}

/* @pod's claims on @node into @plan (PlanClaim); FALSE with @why/@free at the first that fails. */
static gboolean plan_pod(KbDra *dra, const KbPod *pod, const char *node, GArray *plan,
                         gboolean choose, GString *why, gint *free)
{
    NodeDevs *nd = g_hash_table_lookup(dra->by_node, node);
    gboolean have_cands = FALSE;
    guint n_taken = 0;
    dra->epoch++;
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        char buf[320];
        g_autofree char *key = NULL;
        ClaimInfo *ci = pod_claim_in(dra, pod, i, buf, sizeof(buf), &key);
        const char *k = key != NULL ? key : buf;
        if (ci == NULL || ci->error != NULL) {
            if (why != NULL)
                g_string_append_printf(why, "claim of resourceClaims %s not usable",
                                       pod->resource_claims[i].name);
            return FALSE;
        }
        gboolean dup = FALSE;
        for (guint p = 0; p < plan->len && !dup; p++)
            dup = strcmp(g_array_index(plan, PlanClaim, p).key, k) == 0;
        if (dup)
            continue;
        const KbResourceClaim *claim = ci->claim;
        const ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, k);
        const char *pinned = claim->allocated ? claim->node : ca != NULL ? ca->node : NULL;
        if (claim->allocated || ca != NULL) {
            if (pinned != NULL && strcmp(pinned, node) != 0) {
                if (why != NULL)
                    g_string_append_printf(why, "claim %s is allocated on node %s", k, pinned);
                if (free != NULL)
                    *free = -1;
                return FALSE;
            }
            PlanClaim pc = {key != NULL ? g_steal_pointer(&key) : g_strdup(buf), NULL};
            g_array_append_val(plan, pc);
            continue;
        }
        /* devices taken by an earlier claim of the pod are not in the counts: search then */
        if (n_taken == 0 && !claim_may_fit(dra, ci, k, nd, node, why, free))
            return FALSE;
        /* feasibility of the pod's last claim, nothing taken before it: the counts said yes
         * (nothing after it reads the plan) */
        if (!choose && n_taken == 0 && i + 1 == pod->n_resource_claims && claim_counted(ci))
            continue;
        if (!have_cands) {
            node_cands(dra, nd);
            have_cands = TRUE;
        }
        g_autoptr(GString) w = why != NULL ? g_string_new(NULL) : NULL;
        g_autoptr(GPtrArray) picked = g_ptr_array_new();
        Search s = {dra, ci, k, node, dra->cands, picked, results_new(), NULL, NULL, w, 0, choose};
        if (!search_claim(&s)) {
            g_array_unref(s.results);
            if (why != NULL)
                g_string_append(why, w->str);
            if (free != NULL)
                *free = s.why_free;
            return FALSE;
        }
        n_taken += picked->len;
        PlanClaim pc = {key != NULL ? g_steal_pointer(&key) : g_strdup(buf), s.results};
        g_array_append_val(plan, pc);
    }
    return TRUE;
}

static GArray *plan_new(void)
{
    GArray *plan = g_array_new(FALSE, TRUE, sizeof(PlanClaim));
    g_array_set_clear_func(plan, plan_claim_clear);
    return plan;
}

gboolean kb_dra_fits(KbDra *dra, const KbPod *pod, const char *node, GString *why, gint *free)
{
    if (pod->n_resource_claims == 0)
        return TRUE;
    g_autoptr(GArray) plan = plan_new();
    return plan_pod(dra, pod, node, plan, FALSE, why, free);
}

gboolean kb_dra_assume(KbDra *dra, const KbPod *pod, const char *node)
{
    if (pod->n_resource_claims == 0 || pod->meta.uid == NULL)
        return pod->n_resource_claims == 0;
    kb_dra_release(dra, pod->meta.uid);
    g_autoptr(GArray) plan = plan_new();
    if (!plan_pod(dra, pod, node, plan, TRUE, NULL, NULL))
        return FALSE;
    PodHold *h = g_new0(PodHold, 1);
    h->node = g_intern_string(node);
    h->claims = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < plan->len; i++) {
        PlanClaim *pc = &g_array_index(plan, PlanClaim, i);
        ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, pc->key);
        if (pc->results != NULL) {
            ca = g_new0(ClaimAlloc, 1);
            ca->key = g_strdup(pc->key);
            ca->node = h->node;
            ca->results = g_steal_pointer(&pc->results);
            for (guint r = 0; r < ca->results->len; r++) {
                const KbDeviceResult *res = &g_array_index(ca->results, KbDeviceResult, r);
                char *dk = device_key(res->driver, res->pool, res->device);
                g_hash_table_replace(dra->assumed, dk, g_strdup(ca->key));
                dev_refresh(dra, dk);
            }
            g_hash_table_replace(dra->claim_allocs, ca->key, ca);
        }
        if (ca != NULL)
            ca->refs++;
        g_ptr_array_add(h->claims, g_strdup(pc->key));
    }
    g_hash_table_replace(dra->holds, g_strdup(pod->meta.uid), h);
    return TRUE;
}

/* End the hold of @uid; with @failed the claims it allocated are given back unless written. */
static void hold_end(KbDra *dra, const char *uid)
{
    PodHold *h = uid != NULL ? g_hash_table_lookup(dra->holds, uid) : NULL;
    if (h == NULL)
        return;
    for (guint i = 0; i < h->claims->len; i++) {
        ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, h->claims->pdata[i]);
        if (ca == NULL)
            continue;
        if (ca->refs > 0)
            ca->refs--;
        if (ca->refs == 0 && !ca->written)
            claim_alloc_drop(dra, h->claims->pdata[i]);
    }
    g_hash_table_remove(dra->holds, uid);
}

void kb_dra_release(KbDra *dra, const char *uid)
{
    hold_end(dra, uid);
}

void kb_dra_pod_bound(KbDra *dra, const char *uid)
{
    hold_end(dra, uid);
}

void kb_dra_claim_written(KbDra *dra, const char *namespace_, const char *name, gboolean written)
{
    g_autofree char *key = g_strdup_printf("%s/%s", namespace_, name);
    ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, key);
    if (ca == NULL)
        return;
    ca->written = written;
    if (!written && ca->refs == 0)
        claim_alloc_drop(dra, key);
}

/* ---- demand as resources and the preemption plan ------------------------------------------- */

/* The slot counting class @name (KB_RESOURCE_GPU_CLASS: nvidia.com/gpu), -1 when none is free
 * or the name is one of the fixed resources' ("cpu" is a valid class name). */
static int class_slot(const char *name)
{
    int slot = kb_resource_slot(name);
    return slot == KB_RES_GPU || slot >= KB_RES_FIRST_EXTENDED ? slot : -1;
}

/* As class_slot, without taking a slot for a class no pod asks for and no queue names: slots
 * are few, and extended resources need theirs. */
static int class_slot_known(const char *name)
{
    if (strcmp(name, KB_RESOURCE_GPU_CLASS) == 0)
        return KB_RES_GPU;
    for (int s = KB_RES_FIRST_EXTENDED; s < kb_resource_count(); s++) {
        if (strcmp(kb_resource_name(s), name) == 0)
            return s;
    }
    return -1;
}

/* What one request surely takes, counted in its class's slot of @out (see dra.h). */
static void request_demand(const KbDeviceRequest *req, KbResources *out)
{
    const KbDeviceSubRequest *one = req->n_first_available == 0 ? &req->exactly : NULL;
    const char *klass = NULL;
    gint64 least = G_MAXINT64;
    for (guint a = 0; a < MAX(req->n_first_available, 1); a++) {
        const KbDeviceSubRequest *s = one != NULL ? one : &req->first_available[a];
        /* adminAccess takes devices in use without holding them; alternatives of different
         * classes take nothing certain of any one class */
        if (s->admin_access || s->device_class == NULL ||
            (klass != NULL && strcmp(klass, s->device_class) != 0))
            return;
        klass = s->device_class;
        least = MIN(least, s->all ? 1 : s->count);
    }
    int slot = class_slot(klass);
    if (slot >= 0)
        out->v[slot] += least;
}

void kb_dra_pod_demand(KbDra *dra, const KbPod *pod, KbResources *out)
{
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        const char *tn = pod->resource_claims[i].template_name;
        if (tn == NULL)
            continue;
        g_autofree char *key = g_strdup_printf("%s/%s", pod->meta.namespace_, tn);
        const KbResourceClaimTemplate *t = g_hash_table_lookup(dra->templates, key);
        for (guint r = 0; t != NULL && r < t->spec.n_requests; r++)
            request_demand(&t->spec.requests[r], out);
    }
}

void kb_dra_node_capacity(KbDra *dra, const char *node, KbResources *out)
{
    NodeDevs *lists[2] = {g_hash_table_lookup(dra->by_node, node), dra->all_nodes};
    if (lists[0] == NULL && dra->all_nodes->slices->len == 0)
        return;
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, dra->classes);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        const ClassInfo *cl = v;
        int slot = cl->error == NULL ? class_slot_known(cl->dc->meta.name) : -1;
        if (slot < 0)
            continue;
        gint64 n = 0;
        for (guint l = 0; l < 2; l++) {
            for (guint i = 0; lists[l] != NULL && i < lists[l]->slices->len; i++) {
                SliceDevs *sd = lists[l]->slices->pdata[i];
                for (guint d = 0; d < sd->slice->n_devices; d++)
                    n += class_matches(dra, cl, &sd->devs[d]);
            }
        }
        out->v[slot] += n;
    }
}

gboolean kb_dra_describe_demand(KbDra *dra, const KbPod *pod, int slot, GString *out)
{
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        const char *tn = pod->resource_claims[i].template_name;
        if (tn == NULL)
            continue;
        g_autofree char *key = g_strdup_printf("%s/%s", pod->meta.namespace_, tn);
        const KbResourceClaimTemplate *t = g_hash_table_lookup(dra->templates, key);
        for (guint r = 0; t != NULL && r < t->spec.n_requests; r++) {
            const KbDeviceRequest *req = &t->spec.requests[r];
            KbResources one;
            kb_resources_clear(&one);
            request_demand(req, &one);
            if (one.v[slot] <= 0)
                continue;
            const char *claim = kb_pod_resource_claim_name(pod, i);
            const char *klass = req->n_first_available > 0 ? req->first_available[0].device_class
                                                           : req->exactly.device_class;
            g_string_append_printf(
                    out, "claim %s/%s request %s: %" G_GINT64_FORMAT " device%s of class %s",
                    pod->meta.namespace_, claim != NULL ? claim : tn, req->exactly.name,
                    one.v[slot], one.v[slot] == 1 ? "" : "s", klass);
            if (claim == NULL)
                g_string_append(out, " (template)");
            return TRUE;
        }
    }
    return FALSE;
}

guint kb_dra_demand_gen(const KbDra *dra)
{
    return dra->demand_gen;
}

guint kb_dra_capacity_gen(const KbDra *dra)
{
    /* a class gains a slot when a pod's demand or a queue first names it */
    return dra->class_gen + dra->slice_gen + (guint)kb_resource_count();
}

/* The allocated claim of @pod's entry @i when @pod is among its consumers, else NULL; its key
 * into *@key (owned). */
static const KbResourceClaim *victim_claim(KbDra *dra, const KbPod *pod, guint i, char **key)
{
    ClaimInfo *ci = pod_claim(dra, pod, i, key);
    if (ci == NULL || !ci->claim->allocated || pod->meta.uid == NULL)
        return NULL;
    for (guint r = 0; r < ci->claim->n_reserved_for; r++) {
        if (g_strcmp0(ci->claim->reserved_for[r].uid, pod->meta.uid) == 0)
            return ci->claim;
    }
    return NULL;
}

/* Count the devices of @claim free in the plan (@delta 1) or no longer (-1). */
static void plan_devices(KbDra *dra, const KbResourceClaim *claim, int delta)
{
    for (guint r = 0; r < claim->n_results; r++) {
        const KbDeviceResult *res = &claim->results[r];
        char *dk = device_key(res->driver, res->pool, res->device);
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(dra->plan_freed, dk)) + delta;
        if (n > 0)
            g_hash_table_replace(dra->plan_freed, g_strdup(dk), GUINT_TO_POINTER(n));
        else
            g_hash_table_remove(dra->plan_freed, dk);
        dev_refresh(dra, dk);
        g_free(dk);
    }
}

void kb_dra_plan_evict(KbDra *dra, const KbPod *victim, gboolean evict)
{
    for (guint i = 0; i < victim->n_resource_claims; i++) {
        g_autofree char *key = NULL;
        const KbResourceClaim *claim = victim_claim(dra, victim, i, &key);
        if (claim == NULL)
            continue;
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(dra->plan_claims, key));
        if (!evict && n == 0)
            continue;
        if (!evict && n == claim->n_reserved_for)
            plan_devices(dra, claim, -1);
        n = evict ? n + 1 : n - 1;
        if (evict && n == claim->n_reserved_for)
            plan_devices(dra, claim, 1);
        if (n > 0)
            g_hash_table_replace(dra->plan_claims, g_steal_pointer(&key), GUINT_TO_POINTER(n));
        else
            g_hash_table_remove(dra->plan_claims, key);
    }
}

void kb_dra_plan_end(KbDra *dra)
{
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, dra->plan_freed);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        g_ptr_array_add(keys, k);
        g_hash_table_iter_steal(&it);
    }
    g_hash_table_remove_all(dra->plan_claims);
    for (guint i = 0; i < keys->len; i++)
        dev_refresh(dra, keys->pdata[i]);
}

/* ---- claim writes --------------------------------------------------------------------------- */

void kb_claim_write_free(gpointer write)
{
    KbClaimWrite *w = write;
    if (w == NULL)
        return;
    g_free(w->namespace_);
    g_free(w->name);
    json_object_put(w->body);
    json_object_put(w->undo);
    g_free(w);
}

/* The patch that puts back @claim's status as the cache saw it (allocation removed when
 * @allocates). */
static json_object *undo_new(const KbResourceClaim *claim, gboolean allocates)
{
    json_object *status = json_object_new_object();
    if (allocates)
        json_object_object_add(status, "allocation", NULL);
    json_object *reserved = NULL;
    if (claim->n_reserved_for > 0) {
        reserved = json_object_new_array();
        for (guint i = 0; i < claim->n_reserved_for; i++) {
            json_object *c = json_object_new_object();
            json_object_object_add(c, "resource", json_object_new_string("pods"));
            json_object_object_add(c, "name", json_object_new_string(claim->reserved_for[i].name));
            json_object_object_add(c, "uid", json_object_new_string(claim->reserved_for[i].uid));
            json_object_array_add(reserved, c);
        }
    }
    json_object_object_add(status, "reservedFor", reserved);
    json_object *body = json_object_new_object();
    json_object_object_add(body, "status", status);
    return body;
}

/* One write for claim @key, reserving it for @users (KbPod*, at least one). */
static KbClaimWrite *claim_write_new(KbDra *dra, const char *key, GPtrArray *users)
{
    const ClaimInfo *ci = g_hash_table_lookup(dra->claims, key);
    if (ci == NULL)
        return NULL;
    const KbResourceClaim *claim = ci->claim;
    const ClaimAlloc *ca = claim->allocated ? NULL : g_hash_table_lookup(dra->claim_allocs, key);
    guint missing = 0;
    for (guint i = 0; i < users->len; i++)
        missing += !kb_resource_claim_reserved_for(claim, ((KbPod *)users->pdata[i])->meta.uid);
    if (ca == NULL && missing == 0)
        return NULL;
    const KbPod *first = users->pdata[0];
    json_object *body = kb_resource_claim_status_new(
            claim, ca != NULL ? (const KbDeviceResult *)ca->results->data : NULL,
            ca != NULL ? ca->results->len : 0, ca != NULL ? ca->node : NULL, first->meta.name,
            first->meta.uid);
    json_object *status = json_object_object_get(body, "status");
    json_object *reserved = json_object_object_get(status, "reservedFor");
    for (guint i = 1; i < users->len; i++) {
        const KbPod *p = users->pdata[i];
        if (kb_resource_claim_reserved_for(claim, p->meta.uid))
            continue;
        json_object *c = json_object_new_object();
        json_object_object_add(c, "resource", json_object_new_string("pods"));
        json_object_object_add(c, "name", json_object_new_string(p->meta.name));
        json_object_object_add(c, "uid", json_object_new_string(p->meta.uid));
        json_object_array_add(reserved, c);
    }
    KbClaimWrite *w = g_new0(KbClaimWrite, 1);
    w->namespace_ = g_strdup(claim->meta.namespace_);
    w->name = g_strdup(claim->meta.name);
    w->body = body;
    w->allocates = ca != NULL;
    w->undo = undo_new(claim, w->allocates);
    return w;
}

GPtrArray **kb_dra_gang_writes(KbDra *dra, KbPod *const *pods, guint n_pods)
{
    GPtrArray **out = g_new0(GPtrArray *, MAX(n_pods, 1));
    /* claim key -> (first pod index, users) in first-use order */
    g_autoptr(GPtrArray) keys = g_ptr_array_new();
    g_autoptr(GHashTable) users =
            g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_ptr_array_unref);
    g_autoptr(GHashTable) first = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint p = 0; p < n_pods; p++) {
        const PodHold *h = pods[p]->meta.uid != NULL
                                   ? g_hash_table_lookup(dra->holds, pods[p]->meta.uid)
                                   : NULL;
        for (guint i = 0; h != NULL && i < h->claims->len; i++) {
            char *key = h->claims->pdata[i];
            GPtrArray *u = g_hash_table_lookup(users, key);
            if (u == NULL) {
                u = g_ptr_array_new();
                g_hash_table_insert(users, key, u);
                g_hash_table_insert(first, key, GUINT_TO_POINTER(p));
                g_ptr_array_add(keys, key);
            }
            g_ptr_array_add(u, pods[p]);
        }
    }
    for (guint k = 0; k < keys->len; k++) {
        KbClaimWrite *w =
                claim_write_new(dra, keys->pdata[k], g_hash_table_lookup(users, keys->pdata[k]));
        if (w == NULL)
            continue;
        guint p = GPOINTER_TO_UINT(g_hash_table_lookup(first, keys->pdata[k]));
        if (out[p] == NULL)
            out[p] = g_ptr_array_new_with_free_func(kb_claim_write_free);
        g_ptr_array_add(out[p], w);
    }
    return out;
}
