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
    guint64 stamp;        /* KbDra.claim_clock when the claim was last set (kb_dra_demand_stamp) */
} ClaimInfo;

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
    KbDraNode *node;      /* the index the device counts in */
    gboolean held;        /* allocated or assumed */
    guint64 taken;        /* == KbDra.epoch: chosen for the pod being planned */
    guint class_gen;      /* the verdicts are for this KbDra.class_gen */
    GByteArray *verdicts; /* per class idx: 0 unknown, 1 match, 2 no match */
} Dev;

typedef struct {
    KbResourceSlice *slice; /* ref */
    Dev *devs;              /* n_devices */
    KbDraNode *node;        /* NULL: a slice for a node selector (not used) */
} SliceDevs;

/* A node's free devices per class, counted when first asked and kept as holds change. */
typedef struct {
    guint gen; /* valid when == KbDra.class_gen */
    guint free;
} FreeCount;

/* The devices of one node's slices (or of the allNodes slices). */
#define COUNTS_INLINE 4
struct KbDraNode {
    /* FreeCount per class idx, the first ones here: the candidate search reads a node's count
     * for each of ~100 nodes per gang, one cache line each instead of three (list, array) */
    FreeCount counts[COUNTS_INLINE];
    GArray *more;      /* FreeCount per class idx from COUNTS_INLINE on, NULL until needed */
    GPtrArray *slices; /* SliceDevs* (borrowed) */
    /* a device consumes counters or allows multiple allocations: a free count is then only an
     * upper bound (counters or capacity may be spent), never the answer */
    gboolean shares;
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
    GPtrArray *claims;    /* char* keys */
    GPtrArray *gang_alts; /* char* keys of KbDra.gang_alts this hold counts in */
} PodHold;

/*
 * firstAvailable in a gang, per (gang, request name): the alternative its members hold (alt,
 * idx; refs holds), whether that alternative failed a member while others held it (fell), and
 * the floor: the alternative the gang's next plan starts from (those before it failed a member
 * in an earlier plan; past the last, members mix).
 */
typedef struct {
    char *alt;
    guint idx;
    guint refs;
    gboolean fell;
    guint floor;
} GangAlt;
#define GANG_FLOORS_KEPT 4096

struct KbDra {
    GHashTable *classes;    /* name -> ClassInfo* */
    GHashTable *claims;     /* "ns/name" -> ClaimInfo* */
    GHashTable *templates;  /* "ns/name" -> KbResourceClaimTemplate* (ref) */
    GHashTable *slices;     /* name -> SliceDevs* */
    GHashTable *by_node;    /* interned node -> KbDraNode* */
    KbDraNode *all_nodes;   /* slices with allNodes */
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
    /* Partitionable devices: the pool's counter sets ("driver/pool/set" -> KbCounterSet*,
     * borrowed from a slice), what held devices consume ("driver/pool/set/counter" -> gint64*
     * milli) and what the plan being made takes (same keys, emptied per plan). */
    GHashTable *counter_sets;
    GHashTable *counter_used;
    GHashTable *counter_plan;
    /* Shared devices (allowMultipleAllocations): capacity taken by allocated and assumed shares
     * ("driver/pool/device|domain/capacity" -> gint64* milli; "driver/pool/device|" -> the
     * number of shares) and by the plan being made. */
    GHashTable *share_used;
    GHashTable *share_plan;
    GHashTable *gang_alts; /* "ns/group|request" -> GangAlt* */
    /* Demand as resources (see "demand" below): bumped when a template changes (pods' demand)
     * and when a slice changes (nodes' capacity; class_gen covers classes). */
    guint demand_gen;
    guint slice_gen;
    /* A preemption plan: victims' consumption per claim key, and the devices of claims every
     * consumer of which is a victim (device key -> count), free in this plan (a partitionable
     * device's counters with it: dev_set_held); the shares of such claims give back their
     * capacity (share_used's keys, subtracted from it). */
    GHashTable *plan_claims;
    GHashTable *plan_freed;
    GHashTable *plan_shares;
    /* GPU consumption (see "demand"): each template's demand ("ns/name" -> KbResources*),
     * computed for fraction_gen (class_gen + slice_gen: it depends on the devices published);
     * the pods ("ns/name") whose claims were seen allocated or deallocated since the cache last
     * took them (kb_dra_take_recount). */
    GHashTable *template_demand;
    guint fraction_gen;
    GHashTable *recount; /* NULL until kb_dra_take_recount is first called */
    /* Ticks on each claim set or deleted (ClaimInfo.stamp); deleted_at: the last deletion's
     * tick. A pod's demand stamped before neither is still what kb_dra_pod_demand says. */
    guint64 claim_clock;
    guint64 deleted_at;
    /* Ticks when claim_allocs gains or loses a claim (KbDraPodFit.gen with the others). */
    guint64 alloc_clock;
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
    g_free(r->consumed);
    g_free(r->share_id);
}

static void gang_alt_free(gpointer p)
{
    GangAlt *g = p;
    g_free(g->alt);
    g_free(g);
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
    g_ptr_array_unref(h->gang_alts);
    g_free(h);
}

static KbDraNode *node_devs_new(void)
{
    KbDraNode *nd = g_new0(KbDraNode, 1);
    nd->slices = g_ptr_array_new();
    return nd;
}

static void node_devs_free(gpointer p)
{
    KbDraNode *nd = p;
    g_ptr_array_unref(nd->slices);
    g_clear_pointer(&nd->more, g_array_unref);
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
    dra->counter_sets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    dra->counter_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->counter_plan = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->share_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->share_plan = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->gang_alts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, gang_alt_free);
    dra->demand_gen = dra->slice_gen = 1;
    dra->plan_claims = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    dra->plan_freed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    dra->plan_shares = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dra->template_demand = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return dra;
}

void kb_dra_free(KbDra *dra)
{
    if (dra == NULL)
        return;
    g_clear_pointer(&dra->recount, g_hash_table_unref);
    g_hash_table_unref(dra->template_demand);
    g_hash_table_unref(dra->gang_alts);
    g_hash_table_unref(dra->share_plan);
    g_hash_table_unref(dra->share_used);
    g_hash_table_unref(dra->counter_plan);
    g_hash_table_unref(dra->counter_used);
    g_hash_table_unref(dra->counter_sets);
    g_hash_table_unref(dra->plan_shares);
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
    /* g_strconcat: a key per device of every slice set and per device assumed; "(null)" as
     * printf wrote a missing name */
    return g_strconcat(driver != NULL ? driver : "", "/", pool != NULL ? pool : "", "/",
                       device != NULL ? device : "(null)", NULL);
}

/* ---- devices, verdicts and free counts ------------------------------------------------------ */

static gboolean programs_match(const GPtrArray *programs, guint from, guint n, const Dev *d)
{
    KbCelDevice dev = {d->slice->driver, d->dev->attributes, d->dev->n_attributes,
                       d->dev->capacity, d->dev->n_capacity, d->dev->multiple};
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
    /* A shared device that also consumes counters is not counted here (its counters would be
     * spent once for all its shares): it matches no class. */
    if (*v == 0)
        *v = !(d->dev->multiple && d->dev->n_consumes > 0) &&
                             programs_match(cl->programs, 0, cl->programs->len, d)
                     ? 1
                     : 2;
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
/* @nd's count of class @idx; NULL when never asked and not @grow. */
static FreeCount *free_count(KbDraNode *nd, guint idx, gboolean grow)
{
    if (idx < COUNTS_INLINE)
        return &nd->counts[idx];
    idx -= COUNTS_INLINE;
    if (grow && nd->more == NULL)
        nd->more = g_array_new(FALSE, TRUE, sizeof(FreeCount));
    if (grow && nd->more->len <= idx)
        g_array_set_size(nd->more, idx + 1);
    return nd->more != NULL && idx < nd->more->len ? &g_array_index(nd->more, FreeCount, idx)
                                                   : NULL;
}

/* Every count of @nd to be counted again when next asked. */
static void counts_forget(KbDraNode *nd)
{
    for (guint i = 0; i < COUNTS_INLINE; i++)
        nd->counts[i].gen = 0;
    if (nd->more != NULL)
        g_array_set_size(nd->more, 0);
}

static guint node_free(KbDra *dra, KbDraNode *nd, const ClassInfo *cl)
{
    FreeCount *fc = free_count(nd, cl->idx, TRUE);
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

static void counters_add(KbDra *dra, GHashTable *table, const Dev *d, gint sign);

static void dev_set_held(KbDra *dra, Dev *d, gboolean held)
{
    if (d->held == held)
        return;
    d->held = held;
    if (d->node != NULL && d->dev->n_consumes > 0)
        counters_add(dra, dra->counter_used, d, held ? 1 : -1);
    if (d->node == NULL || d->class_gen != dra->class_gen)
        return;
    /* a valid count has every device's verdict of its class */
    for (guint c = 0; c < d->verdicts->len; c++) {
        FreeCount *fc = free_count(d->node, c, FALSE);
        if (fc != NULL && fc->gen == dra->class_gen && d->verdicts->data[c] == 1)
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

/* ---- counters and shares -------------------------------------------------------------------- */

static gint64 amount_get(GHashTable *t, const char *key)
{
    const gint64 *v = g_hash_table_lookup(t, key);
    return v != NULL ? *v : 0;
}

/* Add @delta to @t[@key] (@key owned; an entry back at 0 is removed). */
static void amount_add(GHashTable *t, char *key, gint64 delta)
{
    gpointer stored = NULL, v = NULL;
    if (g_hash_table_lookup_extended(t, key, &stored, &v)) {
        g_free(key);
    } else {
        v = g_new0(gint64, 1);
        g_hash_table_insert(t, key, v);
        stored = key;
    }
    *(gint64 *)v += delta;
    if (*(gint64 *)v == 0)
        g_hash_table_remove(t, stored);
}

static char *counter_key(const Dev *d, const char *set, const char *counter)
{
    return g_strdup_printf("%s/%s/%s/%s", d->slice->driver,
                           d->slice->pool != NULL ? d->slice->pool : "", set,
                           counter != NULL ? counter : "");
}

/* Add (@sign 1) or take back (-1) what @d consumes of its sets' counters in @table. */
static void counters_add(KbDra *dra, GHashTable *table, const Dev *d, gint sign)
{
    for (guint c = 0; c < d->dev->n_consumes; c++) {
        const KbCounterSet *cs = &d->dev->consumes[c];
        for (guint k = 0; k < cs->n_counters; k++)
            amount_add(table, counter_key(d, cs->name, cs->counters[k].name),
                       sign * cs->counters[k].milli);
    }
}

/* The value of counter @name in the pool's set @set of @d (-1 when the set or counter is not
 * published). */
static gint64 counter_value(KbDra *dra, const Dev *d, const char *set, const char *name)
{
    g_autofree char *sk = counter_key(d, set, NULL);
    sk[strlen(sk) - 1] = '\0';
    const KbCounterSet *cs = g_hash_table_lookup(dra->counter_sets, sk);
    for (guint k = 0; cs != NULL && k < cs->n_counters; k++) {
        if (cs->counters[k].name == name || strcmp(cs->counters[k].name, name) == 0)
            return cs->counters[k].milli;
    }
    return -1;
}

/* A quantity in milli-units as text for messages ("40192Mi", "14"). */
static char *milli_text(gint64 milli)
{
    gint64 v = milli / 1000;
    if (milli % 1000 != 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "m", milli);
    if (v != 0 && v % (G_GINT64_CONSTANT(1) << 30) == 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "Gi", v >> 30);
    if (v != 0 && v % (G_GINT64_CONSTANT(1) << 20) == 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "Mi", v >> 20);
    return g_strdup_printf("%" G_GINT64_FORMAT, v);
}

/* May @d be taken beside the held devices and the plan's: every counter it consumes stays within
 * its set's value. FALSE with the first counter that would not (@why may be NULL). */
static gboolean counters_fit(KbDra *dra, const Dev *d, GString *why)
{
    for (guint c = 0; c < d->dev->n_consumes; c++) {
        const KbCounterSet *cs = &d->dev->consumes[c];
        for (guint k = 0; k < cs->n_counters; k++) {
            const KbCounter *ct = &cs->counters[k];
            gint64 value = counter_value(dra, d, cs->name, ct->name);
            g_autofree char *ck = counter_key(d, cs->name, ct->name);
            gint64 used = amount_get(dra->counter_used, ck) + amount_get(dra->counter_plan, ck);
            if (value >= 0 && used + ct->milli <= value)
                continue;
            if (why != NULL && why->len == 0 && value < 0)
                g_string_printf(why, "device %s: counter %s of set %s is not published", d->key,
                                ct->name, cs->name);
            else if (why != NULL && why->len == 0) {
                g_autofree char *w = milli_text(ct->milli), *l = milli_text(value - used);
                g_string_printf(why, "counter %s of %s exhausted: %s wanted, %s left", ct->name,
                                cs->name, w, l);
            }
            return FALSE;
        }
    }
    return TRUE;
}

/* "driver/pool/device|domain/capacity" (@written: "name" in the driver's domain or
 * "domain/name"; "" for the count of shares). */
static char *share_key(const char *driver, const char *pool, const char *device,
                       const char *written)
{
    gboolean q = *written == '\0' || strchr(written, '/') != NULL;
    return g_strdup_printf("%s/%s/%s|%s%s%s", driver, pool != NULL ? pool : "", device,
                           q ? "" : driver, q ? "" : "/", written);
}

static gboolean result_shared(const KbDeviceResult *r)
{
    return r->share_id != NULL || r->n_consumed > 0;
}

/* Add (@sign 1) or take back (-1) share @r of a device in @t. */
static void share_add(GHashTable *t, const KbDeviceResult *r, gint sign)
{
    if (!result_shared(r))
        return;
    amount_add(t, share_key(r->driver, r->pool, r->device, ""), sign);
    for (guint i = 0; i < r->n_consumed; i++)
        amount_add(t, share_key(r->driver, r->pool, r->device, r->consumed[i].name),
                   sign * r->consumed[i].milli);
}

/* Capacity @c of @d taken by the shares held (less the victims' in a preemption plan) and by
 * the plan being made. */
static gint64 share_taken(KbDra *dra, const Dev *d, const KbCelCapacity *c)
{
    g_autofree char *q = g_strdup_printf("%s/%s", c->domain, c->name);
    g_autofree char *k = share_key(d->slice->driver, d->slice->pool, d->dev->name, q);
    gint64 held = amount_get(dra->share_used, k) - amount_get(dra->plan_shares, k);
    return MAX(held, 0) + amount_get(dra->share_plan, k);
}

/* What request @sub asks of capacity @c of @d: its capacity.requests entry, or -1. */
static gint64 requested(const Dev *d, const KbCelCapacity *c, const KbDeviceSubRequest *sub)
{
    for (guint i = 0; i < sub->n_capacity; i++) {
        if (kb_capacity_name_is(sub->capacity[i].name, d->slice->driver, c->domain, c->name))
            return sub->capacity[i].milli;
    }
    return -1;
}

/* Does @d have every capacity @sub requests (at least as much, for a device not shared)? */
static gboolean capacity_satisfies(const Dev *d, const KbDeviceSubRequest *sub)
{
    for (guint i = 0; i < sub->n_capacity; i++) {
        gboolean found = FALSE;
        for (guint c = 0; c < d->dev->n_capacity && !found; c++) {
            const KbCelCapacity *cap = &d->dev->capacity[c];
            found = kb_capacity_name_is(sub->capacity[i].name, d->slice->driver, cap->domain,
                                        cap->name) &&
                    (d->dev->multiple ||
                     kb_quantity_milli_value(&cap->value) >= sub->capacity[i].milli);
        }
        if (!found)
            return FALSE;
    }
    return TRUE;
}

/* What one share of @d for @sub takes of capacity @c: the request (without one the policy's
 * default, else all of it) rounded up as the policy says: the smallest valid value at least the
 * request, or min + k * step within the range. -1 when the policy allows no such value. */
static gint64 share_amount(const Dev *d, guint c, const KbDeviceSubRequest *sub)
{
    const KbCelCapacity *cap = &d->dev->capacity[c];
    const KbCapacityPolicy *p = d->dev->policies != NULL ? &d->dev->policies[c] : NULL;
    gint64 whole = kb_quantity_milli_value(&cap->value), want = requested(d, cap, sub);
    if (want < 0)
        return p != NULL && p->has_default ? p->default_milli : whole;
    if (p == NULL)
        return want;
    if (p->n_valid_values > 0) {
        for (guint i = 0; i < p->n_valid_values; i++) {
            if (p->valid_values[i] >= want)
                return p->valid_values[i];
        }
        return -1;
    }
    if (p->has_range) {
        gint64 v = MAX(want, p->min);
        if (p->step > 0)
            v = p->min + (v - p->min + p->step - 1) / p->step * p->step;
        return p->max > 0 && v > p->max ? -1 : v;
    }
    return want;
}

/* May @d give @sub a share now: each capacity's share (into @out when not NULL, one entry per
 * capacity, names as results write them) fits beside the shares held and planned. FALSE with
 * the first capacity that does not (@why may be NULL). */
static gboolean share_fits(KbDra *dra, const Dev *d, const KbDeviceSubRequest *sub,
                           KbCapacityAmount *out, GString *why)
{
    for (guint c = 0; c < d->dev->n_capacity; c++) {
        const KbCelCapacity *cap = &d->dev->capacity[c];
        gint64 whole = kb_quantity_milli_value(&cap->value), amount = share_amount(d, c, sub);
        gint64 left = whole - share_taken(dra, d, cap);
        if (amount < 0 || amount > left) {
            if (why != NULL && why->len == 0) {
                g_autofree char *w = milli_text(requested(d, cap, sub)), *l = milli_text(left);
                if (amount < 0)
                    g_string_printf(why,
                                    "device %s: capacity %s: no share of %s allowed by its "
                                    "requestPolicy",
                                    d->key, cap->name, w);
                else {
                    g_autofree char *a = milli_text(amount);
                    g_string_printf(why, "capacity %s of device %s exhausted: %s wanted, %s left",
                                    cap->name, d->key, a, l);
                }
            }
            return FALSE;
        }
        if (out != NULL) {
            g_autofree char *q = g_strdup_printf("%s/%s", cap->domain, cap->name);
            out[c].name = cap->domain == d->slice->driver ? cap->name : g_intern_string(q);
            out[c].milli = amount;
        }
    }
    return TRUE;
}

/* How used @d's GPU is now, 0 to 1: for a partitionable device the mean share consumed of its
 * first counter set, for a shared one of its capacity. Packing prefers the most used. */
static double dev_used(KbDra *dra, const Dev *d)
{
    double sum = 0;
    guint n = 0;
    if (d->dev->n_consumes > 0) {
        const KbCounterSet *cs = &d->dev->consumes[0];
        g_autofree char *sk = counter_key(d, cs->name, NULL);
        sk[strlen(sk) - 1] = '\0';
        const KbCounterSet *set = g_hash_table_lookup(dra->counter_sets, sk);
        for (guint k = 0; set != NULL && k < set->n_counters; k++) {
            g_autofree char *ck = counter_key(d, cs->name, set->counters[k].name);
            gint64 used = amount_get(dra->counter_used, ck) + amount_get(dra->counter_plan, ck);
            if (set->counters[k].milli > 0) {
                sum += (double)used / (double)set->counters[k].milli;
                n++;
            }
        }
    } else if (d->dev->multiple) {
        for (guint c = 0; c < d->dev->n_capacity; c++) {
            gint64 whole = kb_quantity_milli_value(&d->dev->capacity[c].value);
            if (whole > 0) {
                sum += (double)share_taken(dra, d, &d->dev->capacity[c]) / (double)whole;
                n++;
            }
        }
    }
    return n > 0 ? sum / n : 0;
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
        if (result_shared(r)) {
            share_add(dra->share_used, r, -1);
            continue;
        }
        g_autofree char *dk = device_key(r->driver, r->pool, r->device);
        const char *holder = g_hash_table_lookup(dra->assumed, dk);
        if (g_strcmp0(holder, key) == 0) {
            g_hash_table_remove(dra->assumed, dk);
            dev_refresh(dra, dk);
        }
    }
    g_hash_table_remove(dra->claim_allocs, key);
    dra->alloc_clock++;
}

/* Add (or with @add FALSE remove) the devices @claim's allocation holds. */
static void claim_devices(KbDra *dra, const KbResourceClaim *claim, const char *key, gboolean add)
{
    for (guint i = 0; i < claim->n_results; i++) {
        const KbDeviceResult *r = &claim->results[i];
        /* a share of a device several claims may hold: its capacity is counted, not the device */
        if (result_shared(r)) {
            share_add(dra->share_used, r, add ? 1 : -1);
            continue;
        }
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

/* The pods @claim is reserved for count its results (kb_dra_pod_demand): recount them. */
static void claim_recount(KbDra *dra, const KbResourceClaim *claim)
{
    /* nobody counts pods (the allocator alone, as bench-gpushare drives it) */
    if (dra->recount == NULL)
        return;
    for (guint r = 0; r < claim->n_reserved_for; r++) {
        if (claim->reserved_for[r].name != NULL)
            g_hash_table_add(dra->recount, g_strconcat(claim->meta.namespace_, "/",
                                                       claim->reserved_for[r].name, NULL));
    }
}

void kb_dra_set_claim(KbDra *dra, KbResourceClaim *claim)
{
    char *key = kb_object_key(&claim->meta);
    ClaimInfo *old = g_hash_table_lookup(dra->claims, key);
    if (old != NULL)
        claim_devices(dra, old->claim, key, FALSE);
    /* what its pods count changes with its allocation (results, not only the flag: a claim
     * deallocated and allocated again between two events) */
    if (old == NULL || old->claim->allocated != claim->allocated ||
        old->claim->n_results != claim->n_results ||
        old->claim->n_reserved_for != claim->n_reserved_for) {
        if (old != NULL)
            claim_recount(dra, old->claim);
        claim_recount(dra, claim);
    }
    if (old != NULL && g_strcmp0(old->claim->meta.uid, claim->meta.uid) == 0 &&
        kb_claim_spec_equal(&old->claim->spec, &claim->spec)) {
        /* A status update (the spec is immutable): the compiled selectors and their verdicts
         * stay; a claim write's echo rebuilt them per pod. */
        kb_object_unref(old->claim);
        old->claim = kb_object_ref(claim);
        old->stamp = ++dra->claim_clock;
        claim_devices(dra, claim, key, TRUE);
        if (claim->allocated)
            claim_alloc_drop(dra, key);
        g_free(key);
        return;
    }
    ClaimInfo *ci = g_new0(ClaimInfo, 1);
    ci->claim = kb_object_ref(claim);
    ci->stamp = ++dra->claim_clock;
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
    if (old != NULL) {
        claim_devices(dra, old->claim, key, FALSE);
        claim_recount(dra, old->claim);
    }
    claim_alloc_drop(dra, key);
    if (g_hash_table_remove(dra->claims, key))
        dra->deleted_at = ++dra->claim_clock;
}

void kb_dra_set_template(KbDra *dra, KbResourceClaimTemplate *t)
{
    g_hash_table_replace(dra->templates, kb_object_key(&t->meta), kb_object_ref(t));
    g_autofree char *key = kb_object_key(&t->meta);
    g_hash_table_remove(dra->template_demand, key);
    dra->demand_gen++;
}

void kb_dra_delete_template(KbDra *dra, const KbResourceClaimTemplate *t)
{
    g_autofree char *key = kb_object_key(&t->meta);
    g_hash_table_remove(dra->template_demand, key);
    if (g_hash_table_remove(dra->templates, key))
        dra->demand_gen++;
}

/* "driver/pool/set" of a slice's counter set. */
static char *counter_set_key(const KbResourceSlice *slice, const KbCounterSet *cs)
{
    return g_strdup_printf("%s/%s/%s", slice->driver, slice->pool != NULL ? slice->pool : "",
                           cs->name);
}

/* Take @sd out of its node's index; its node's counts are recounted when next asked. */
static void slice_unindex(KbDra *dra, SliceDevs *sd)
{
    for (guint i = 0; i < sd->slice->n_devices; i++) {
        if (g_hash_table_lookup(dra->dev_by_key, sd->devs[i].key) == &sd->devs[i]) {
            g_hash_table_remove(dra->dev_by_key, sd->devs[i].key);
            if (sd->devs[i].held && sd->devs[i].dev->n_consumes > 0)
                counters_add(dra, dra->counter_used, &sd->devs[i], -1);
        }
    }
    for (guint i = 0; i < sd->slice->n_counter_sets; i++) {
        g_autofree char *k = counter_set_key(sd->slice, &sd->slice->counter_sets[i]);
        if (g_hash_table_lookup(dra->counter_sets, k) == &sd->slice->counter_sets[i])
            g_hash_table_remove(dra->counter_sets, k);
    }
    if (sd->node != NULL) {
        g_ptr_array_remove(sd->node->slices, sd);
        counts_forget(sd->node);
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
        if (sd->node != NULL) {
            g_hash_table_replace(dra->dev_by_key, d->key, d);
            if (d->held && d->dev->n_consumes > 0)
                counters_add(dra, dra->counter_used, d, 1);
            sd->node->shares |= d->dev->n_consumes > 0 || d->dev->multiple;
        }
    }
    for (guint i = 0; i < slice->n_counter_sets; i++)
        g_hash_table_replace(dra->counter_sets, counter_set_key(slice, &slice->counter_sets[i]),
                             &slice->counter_sets[i]);
    if (sd->node != NULL) {
        g_ptr_array_add(sd->node->slices, sd);
        counts_forget(sd->node);
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
static void node_cands(KbDra *dra, KbDraNode *nd)
{
    g_ptr_array_set_size(dra->cands, 0);
    KbDraNode *lists[2] = {nd, dra->all_nodes};
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
    gboolean choose;  /* the devices are kept (assume): prefer islands; else only feasibility */
    const KbPod *pod; /* the pod planned (its gang: firstAvailable) */
    GString *limit;   /* the first counter or capacity found spent (for why) */
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

typedef struct {
    const char *name;
    guint n;
} IslandSize;

/*
 * Order @idx (indices into cands) so that taking the first @want keeps to one NVLink island when
 * one holds them: the devices of the island with the fewest that still holds @want first (ties
 * by name), then the others in their order.
 */
static void order_by_island(GPtrArray *idx, guint want)
{
    /* a node has few islands (NVIDIA's nodes one or two): sizes in a list scanned with strcmp */
    IslandSize stack_sizes[64];
    gpointer stack_out[G_N_ELEMENTS(stack_sizes)];
    gboolean big = idx->len > G_N_ELEMENTS(stack_sizes);
    g_autofree IslandSize *heap_sizes = big ? g_new(IslandSize, idx->len) : NULL;
    g_autofree gpointer *heap_out = big ? g_new(gpointer, idx->len) : NULL;
    IslandSize *sizes = big ? heap_sizes : stack_sizes;
    gpointer *out = big ? heap_out : stack_out;
    guint n_sizes = 0;
    for (guint i = 0; i < idx->len; i++) {
        const char *t = ((const Dev *)idx->pdata[i])->island;
        guint j = 0;
        while (j < n_sizes && strcmp(sizes[j].name, t) != 0)
            j++;
        if (j == n_sizes)
            sizes[n_sizes++] = (IslandSize){t, 0};
        sizes[j].n++;
    }
    const char *best = NULL;
    guint best_n = G_MAXUINT;
    for (guint j = 0; j < n_sizes; j++) {
        guint n = sizes[j].n;
        if (n >= want && (n < best_n || (n == best_n && strcmp(sizes[j].name, best) < 0))) {
            best = sizes[j].name;
            best_n = n;
        }
    }
    /* stable selection: the best island's devices first, then the others (document order) */
    guint n_out = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (guint i = 0; i < idx->len; i++) {
            gboolean in_best =
                    best != NULL && strcmp(((const Dev *)idx->pdata[i])->island, best) == 0;
            if ((pass == 0) == in_best)
                out[n_out++] = idx->pdata[i];
        }
    }
    memcpy(idx->pdata, out, idx->len * sizeof(gpointer));
}

/*
 * Order @idx (free partitionable or shared devices) for packing: the most used GPU first (a
 * MIG profile onto a GPU whose counters are partly consumed, a share onto a partly shared GPU),
 * so that whole GPUs stay free; on one GPU the placement that leaves the most other placements
 * of its set possible first (a 1g slice where it blocks no 3g placement).
 */
static void order_by_packing(Search *s, GPtrArray *idx)
{
    guint n = idx->len;
    g_autofree double *used = g_new0(double, MAX(n, 1));
    g_autofree guint *lost = g_new0(guint, MAX(n, 1));
    for (guint i = 0; i < n; i++) {
        Dev *d = idx->pdata[i];
        used[i] = dev_used(s->dra, d);
        if (d->dev->n_consumes == 0)
            continue;
        /* the placements of the same set that fit now and would not beside @d */
        g_autoptr(GPtrArray) same = g_ptr_array_new();
        for (guint c = 0; c < s->cands->len; c++) {
            Dev *o = s->cands->pdata[c];
            if (o != d && o->dev->n_consumes > 0 && o->slice->driver == d->slice->driver &&
                o->slice->pool == d->slice->pool &&
                strcmp(o->dev->consumes[0].name, d->dev->consumes[0].name) == 0 &&
                dev_free(s->dra, o) && counters_fit(s->dra, o, NULL))
                g_ptr_array_add(same, o);
        }
        counters_add(s->dra, s->dra->counter_plan, d, 1);
        for (guint c = 0; c < same->len; c++)
            lost[i] += !counters_fit(s->dra, same->pdata[c], NULL);
        counters_add(s->dra, s->dra->counter_plan, d, -1);
    }
    /* stable insertion sort: used descending, then lost ascending */
    g_autofree guint *order = g_new(guint, MAX(n, 1));
    for (guint i = 0; i < n; i++) {
        guint j = i;
        for (; j > 0; j--) {
            guint o = order[j - 1];
            if (used[o] > used[i] + 1e-9 || (used[o] >= used[i] - 1e-9 && lost[o] <= lost[i]))
                break;
            order[j] = o;
        }
        order[j] = i;
    }
    g_autofree gpointer *sorted = g_new(gpointer, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        sorted[i] = idx->pdata[order[i]];
    memcpy(idx->pdata, sorted, n * sizeof(gpointer));
}

/* Is @c, free and matching, usable for @sub now: a partitionable device's counters and a shared
 * device's capacity allow it (the first shortfall into s->limit). */
static gboolean dev_usable(Search *s, const Dev *c, const KbDeviceSubRequest *sub)
{
    if (c->dev->n_consumes > 0 && !counters_fit(s->dra, c, s->limit))
        return FALSE;
    return !c->dev->multiple || share_fits(s->dra, c, sub, NULL, s->limit);
}

/* Take @c for request @rn (owned): marked for the plan, its result (a share's consumedCapacity
 * and shareID) appended, its counters and capacity counted in the plan. */
static void take(Search *s, Dev *c, const KbDeviceSubRequest *sub, char *rn)
{
    c->taken = s->dra->epoch;
    g_ptr_array_add(s->picked, c);
    KbDeviceResult r = {rn,  c->slice->driver, c->slice->pool, g_strdup(c->dev->name), NULL, 0,
                        NULL};
    if (c->dev->multiple) {
        KbCapacityAmount am[KB_DRA_MAX_DEVICE_FIELDS];
        share_fits(s->dra, c, sub, am, NULL);
        r.consumed =
                c->dev->n_capacity > 0 ? g_memdup2(am, c->dev->n_capacity * sizeof(*am)) : NULL;
        r.n_consumed = c->dev->n_capacity;
        r.share_id = g_uuid_string_random();
        share_add(s->dra->share_plan, &r, 1);
    }
    if (c->dev->n_consumes > 0)
        counters_add(s->dra, s->dra->counter_plan, c, 1);
    g_array_append_val(s->results, r);
}

/* Untake the devices of results[@from..], and what they counted in the plan. */
static void untake(Search *s, guint from)
{
    for (guint i = from; i < s->picked->len; i++) {
        Dev *d = s->picked->pdata[i];
        d->taken = 0;
        if (d->dev->n_consumes > 0)
            counters_add(s->dra, s->dra->counter_plan, d, -1);
        share_add(s->dra->share_plan, &g_array_index(s->results, KbDeviceResult, i), -1);
    }
    g_ptr_array_set_size(s->picked, from);
    g_array_set_size(s->results, from);
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
    gboolean packing = FALSE;
    for (guint i = 0; i < s->cands->len; i++) {
        Dev *c = s->cands->pdata[i];
        if (!class_matches(s->dra, cl, c) || !request_matches(s->ci, prog, sub->n_selectors, c) ||
            !capacity_satisfies(c, sub))
            continue;
        if (constrain && s->match_value != NULL) {
            g_autofree char *t = attribute_text(c->dev, s->match_attr);
            if (g_strcmp0(t, s->match_value) != 0)
                continue;
        }
        if (!dev_free(s->dra, c) || !dev_usable(s, c, sub)) {
            busy++;
            continue;
        }
        packing |= c->dev->n_consumes > 0 || c->dev->multiple;
        g_ptr_array_add(idx, c);
    }
    guint want = sub->all ? idx->len + busy : (guint)sub->count;
    guint from = s->picked->len;
    gboolean ok = !(sub->all && (busy > 0 || idx->len == 0)) && idx->len >= want;
    if (ok) {
        if (packing && s->choose)
            order_by_packing(s, idx);
        else if (!sub->all && s->choose)
            order_by_island(idx, want);
        /* taking one partitionable or shared device may spend what the next needs: each is
         * checked again against the plan */
        for (guint i = 0; i < idx->len && s->picked->len - from < want; i++) {
            Dev *c = idx->pdata[i];
            if (packing && !dev_usable(s, c, sub))
                continue;
            take(s, c, sub,
                 alt != NULL ? g_strdup_printf("%s/%s", req_name, alt) : g_strdup(req_name));
        }
        ok = s->picked->len - from == want;
        if (!ok)
            untake(s, from);
    }
    if (!ok && s->why != NULL && s->why->len == 0) {
        /* devices that overlap each other are not all free together */
        guint n_free = packing ? MIN(idx->len, want > 0 ? want - 1 : 0) : idx->len;
        g_string_printf(s->why, "claim %s request %s: ", s->key, req_name);
        if (sub->all)
            g_string_append_printf(s->why, "all %u devices of class %s wanted, ", idx->len + busy,
                                   sub->device_class);
        else
            g_string_append_printf(s->why, "%u device%s of class %s wanted, ", want,
                                   want == 1 ? "" : "s", sub->device_class);
        g_string_append_printf(s->why, "%u free on node %s", n_free, s->node);
        if (constrain && s->match_value != NULL)
            g_string_append_printf(s->why, " with the same %s", s->match_attr);
        if (s->limit != NULL && s->limit->len > 0)
            g_string_append_printf(s->why, " (%s)", s->limit->str);
        /* a node with no such device at all tells less than one whose devices are spent */
        s->why_free = idx->len == 0 && busy == 0 ? -1 : (gint)n_free;
    }
    return ok;
}

/*
 * The order @req's alternatives are tried in for a member of a gang (s->gang), into @order; the
 * count. The plan prefers for the whole gang the first alternative that fits every member:
 * while other members hold alternative k, a member gets k or nothing (the gang's plan then
 * fails and is discarded; kb_dra_release moves the gang's floor past k, so its next plan starts
 * at k + 1 for every member). When every alternative has failed some member in turn (floor past
 * the last), members mix: each takes the first alternative that fits it. A pod of no gang tries
 * them in order. *@strict receives the GangAlt whose alternative is imposed, or NULL.
 */
static guint alt_order(Search *s, const KbDeviceRequest *req, guint *order, GangAlt **strict)
{
    guint n = req->n_first_available, floor = 0;
    *strict = NULL;
    GangAlt *g = NULL;
    if (s->pod->group_name != NULL && g_hash_table_size(s->dra->gang_alts) > 0) {
        g_autofree char *k = g_strdup_printf("%s/%s|%s", s->pod->meta.namespace_,
                                             s->pod->group_name, req->exactly.name);
        g = g_hash_table_lookup(s->dra->gang_alts, k);
    }
    if (g != NULL && g->refs > 0 && g->floor < n && g->idx < n) {
        order[0] = g->idx;
        *strict = g;
        return 1;
    }
    if (g != NULL && g->floor < n)
        floor = g->floor;
    for (guint i = 0; i < n; i++)
        order[i] = (floor + i) % n;
    return n;
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
            guint progs[KB_DRA_MAX_SUBREQUESTS], order[KB_DRA_MAX_SUBREQUESTS];
            for (guint a = 0; a < req->n_first_available; a++) {
                progs[a] = prog;
                prog += req->first_available[a].n_selectors;
            }
            GangAlt *strict = NULL;
            guint n = alt_order(s, req, order, &strict);
            for (guint i = 0; i < n && !done; i++) {
                const KbDeviceSubRequest *sub = &req->first_available[order[i]];
                done = try_sub(s, name, sub, sub->name, progs[order[i]], constrain);
            }
            if (!done && strict != NULL)
                strict->fell = TRUE;
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
static gboolean claim_may_fit(KbDra *dra, const ClaimInfo *ci, const char *key, KbDraNode *nd,
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
 * selectors, capacity requests or constraints, on a node without partitionable or shared
 * devices. */
static gboolean claim_counted(KbDra *dra, const ClaimInfo *ci, const KbDraNode *nd)
{
    const KbClaimSpec *spec = &ci->claim->spec;
    if ((nd != NULL && nd->shares) || dra->all_nodes->shares)
        return FALSE;
    return spec->n_constraints == 0 && spec->n_requests == 1 &&
           spec->requests[0].exactly.n_capacity == 0 && spec->requests[0].n_first_available == 0 &&
           !spec->requests[0].exactly.all && spec->requests[0].exactly.n_selectors == 0;
}

/* @pod's claims on @node into @plan (PlanClaim); FALSE with @why/@free at the first that fails. */
static gboolean plan_pod(KbDra *dra, const KbPod *pod, const char *node, KbDraNode *nd,
                         GArray *plan, gboolean choose, GString *why, gint *free)
{
    gboolean have_cands = FALSE;
    guint n_taken = 0;
    dra->epoch++;
    if (g_hash_table_size(dra->counter_plan) > 0)
        g_hash_table_remove_all(dra->counter_plan);
    if (g_hash_table_size(dra->share_plan) > 0)
        g_hash_table_remove_all(dra->share_plan);
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
        if (!choose && n_taken == 0 && i + 1 == pod->n_resource_claims &&
            claim_counted(dra, ci, nd))
            continue;
        if (!have_cands) {
            node_cands(dra, nd);
            have_cands = TRUE;
        }
        g_autoptr(GString) w = why != NULL ? g_string_new(NULL) : NULL;
        g_autoptr(GString) limit = why != NULL ? g_string_new(NULL) : NULL;
        g_autoptr(GPtrArray) picked = g_ptr_array_new();
        Search s = {dra,  ci,   k, node, dra->cands, picked, results_new(),
                    NULL, NULL, w, 0,    choose,     pod,    limit};
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
    return plan_pod(dra, pod, node, g_hash_table_lookup(dra->by_node, node), plan, FALSE, why,
                    free);
}

KbDraNode *kb_dra_node(KbDra *dra, const char *node)
{
    return g_hash_table_lookup(dra->by_node, node);
}

guint kb_dra_nodes_gen(const KbDra *dra)
{
    /* by_node only grows, and only when a slice is set: slice_gen covers it */
    return dra->slice_gen;
}

/* What KbDraPodFit.shape says of its pod's one claim: plan_pod decides (FIT_PLAN); the claim
 * is missing or refused (FIT_NONE); it is allocated or assumed, on node pinned or any node
 * (FIT_PINNED); one ExactCount request of count devices of class cl without selectors or
 * constraints (FIT_COUNTED: the node's free count decides, unless devices there are shared). */
enum { FIT_PLAN = 1, FIT_NONE, FIT_PINNED, FIT_COUNTED };

/* Every change plan_pod's answer for a given pod and node could follow, as one number: each term
 * only grows. */
static guint64 fit_gen(const KbDra *dra)
{
    return dra->claim_clock + dra->alloc_clock + dra->class_gen + dra->slice_gen;
}

/* plan_pod's first steps for @pod, alone of its kind with one claim, into @fit. */
static void fit_learn(KbDra *dra, const KbPod *pod, KbDraPodFit *fit)
{
    *fit = (KbDraPodFit){pod, fit_gen(dra), FIT_PLAN, NULL, NULL, 0};
    if (pod->n_resource_claims != 1)
        return;
    char buf[320];
    g_autofree char *key = NULL;
    const ClaimInfo *ci = pod_claim_in(dra, pod, 0, buf, sizeof(buf), &key);
    if (ci == NULL || ci->error != NULL) {
        fit->shape = FIT_NONE;
        return;
    }
    const KbResourceClaim *claim = ci->claim;
    const ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, key != NULL ? key : buf);
    if (claim->allocated || ca != NULL) {
        fit->shape = FIT_PINNED;
        fit->pinned = claim->allocated ? claim->node : ca->node;
        return;
    }
    const KbClaimSpec *spec = &ci->claim->spec;
    const KbDeviceSubRequest *sub = spec->n_requests == 1 ? &spec->requests[0].exactly : NULL;
    if (sub == NULL || spec->n_constraints > 0 || spec->requests[0].n_first_available > 0 ||
        sub->all || sub->n_selectors > 0 || sub->n_capacity > 0)
        return;
    fit->cl = g_hash_table_lookup(dra->classes, sub->device_class);
    if (fit->cl == NULL)
        return;
    fit->shape = FIT_COUNTED;
    fit->count = (guint)sub->count;
}

gboolean kb_dra_fits_on(KbDra *dra, const KbPod *pod, const char *node, KbDraNode *nd,
                        KbDraPodFit *fit)
{
    if (pod->n_resource_claims == 0)
        return TRUE;
    if (fit->pod != pod || fit->gen != fit_gen(dra))
        fit_learn(dra, pod, fit);
    switch (fit->shape) {
    case FIT_NONE:
        return FALSE;
    case FIT_PINNED:
        return fit->pinned == NULL || strcmp(fit->pinned, node) == 0;
    case FIT_COUNTED: {
        /* as claim_may_fit, then claim_counted: the count says no, or yes when no device there
         * is shared or partitionable */
        guint n = (nd != NULL ? node_free(dra, nd, fit->cl) : 0) +
                  node_free(dra, dra->all_nodes, fit->cl);
        if (n < fit->count)
            return FALSE;
        if ((nd == NULL || !nd->shares) && !dra->all_nodes->shares)
            return TRUE;
        break;
    }
    default:
        break;
    }
    g_autoptr(GArray) plan = plan_new();
    return plan_pod(dra, pod, node, nd, plan, FALSE, NULL, NULL);
}

/* Why a pod's hold ends: it is planned again, given back (statement discarded, binding failed,
 * pod deleted) or bound. */
typedef enum { HOLD_REPLAN, HOLD_RELEASED, HOLD_BOUND } HoldEnd;

static void hold_end(KbDra *dra, const char *uid, HoldEnd how);

/* @res ("request/alternative") of claim @key was chosen for @pod, a member of a gang: the gang
 * holds that alternative while any member does (counted in @h). */
static void hold_gang_alt(KbDra *dra, const KbPod *pod, const char *key, const KbDeviceResult *res,
                          PodHold *h)
{
    const char *slash = strchr(res->request, '/');
    const ClaimInfo *ci = g_hash_table_lookup(dra->claims, key);
    if (pod->group_name == NULL || slash == NULL || ci == NULL)
        return;
    g_autofree char *req = g_strndup(res->request, slash - res->request);
    g_autofree char *gk = g_strdup_printf("%s/%s|%s", pod->meta.namespace_, pod->group_name, req);
    for (guint i = 0; i < h->gang_alts->len; i++) {
        if (strcmp(h->gang_alts->pdata[i], gk) == 0)
            return;
    }
    const KbClaimSpec *spec = &ci->claim->spec;
    for (guint r = 0; r < spec->n_requests; r++) {
        const KbDeviceRequest *q = &spec->requests[r];
        for (guint a = 0; strcmp(q->exactly.name, req) == 0 && a < q->n_first_available; a++) {
            if (strcmp(q->first_available[a].name, slash + 1) != 0)
                continue;
            GangAlt *g = g_hash_table_lookup(dra->gang_alts, gk);
            if (g == NULL) {
                g = g_new0(GangAlt, 1);
                g_hash_table_insert(dra->gang_alts, g_strdup(gk), g);
            }
            if (g->refs == 0) {
                g_free(g->alt);
                g->alt = g_strdup(slash + 1);
                g->idx = a;
                g->fell = FALSE;
            }
            g->refs++;
            g_ptr_array_add(h->gang_alts, g_steal_pointer(&gk));
            return;
        }
    }
}

gboolean kb_dra_assume(KbDra *dra, const KbPod *pod, const char *node)
{
    if (pod->n_resource_claims == 0 || pod->meta.uid == NULL)
        return pod->n_resource_claims == 0;
    hold_end(dra, pod->meta.uid, HOLD_REPLAN);
    g_autoptr(GArray) plan = plan_new();
    if (!plan_pod(dra, pod, node, g_hash_table_lookup(dra->by_node, node), plan, TRUE, NULL, NULL))
        return FALSE;
    PodHold *h = g_new0(PodHold, 1);
    h->node = g_intern_string(node);
    h->claims = g_ptr_array_new_with_free_func(g_free);
    h->gang_alts = g_ptr_array_new_with_free_func(g_free);
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
                hold_gang_alt(dra, pod, pc->key, res, h);
                if (result_shared(res)) {
                    share_add(dra->share_used, res, 1);
                    continue;
                }
                char *dk = device_key(res->driver, res->pool, res->device);
                g_hash_table_replace(dra->assumed, dk, g_strdup(ca->key));
                /* dev_refresh's answer, assumed now: held */
                Dev *d = g_hash_table_lookup(dra->dev_by_key, dk);
                if (d != NULL)
                    dev_set_held(dra, d, TRUE);
            }
            g_hash_table_replace(dra->claim_allocs, ca->key, ca);
            dra->alloc_clock++;
        }
        if (ca != NULL)
            ca->refs++;
        g_ptr_array_add(h->claims, g_strdup(pc->key));
    }
    g_hash_table_replace(dra->holds, g_strdup(pod->meta.uid), h);
    return TRUE;
}

/* The last member holding gang alternative @g stopped (@how): a gang bound forgets it; a gang
 * whose plan was given back after the alternative failed a member starts past it next time. */
static void gang_alt_end(KbDra *dra, const char *key, GangAlt *g, HoldEnd how)
{
    if (how == HOLD_RELEASED && g->fell)
        g->floor = g->idx + 1;
    g->fell = FALSE;
    if (how == HOLD_BOUND || g->floor == 0) {
        g_hash_table_remove(dra->gang_alts, key);
        return;
    }
    /* a gang deleted before it was bound leaves its floor: past a bound, floors nobody holds
     * are forgotten (their gangs start from the first alternative again) */
    if (g_hash_table_size(dra->gang_alts) > GANG_FLOORS_KEPT) {
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, dra->gang_alts);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            if (((GangAlt *)v)->refs == 0)
                g_hash_table_iter_remove(&it);
        }
    }
}

/* End the hold of @uid; the claims it allocated are given back unless written. */
static void hold_end(KbDra *dra, const char *uid, HoldEnd how)
{
    PodHold *h = uid != NULL ? g_hash_table_lookup(dra->holds, uid) : NULL;
    if (h == NULL)
        return;
    for (guint i = 0; i < h->gang_alts->len; i++) {
        GangAlt *g = g_hash_table_lookup(dra->gang_alts, h->gang_alts->pdata[i]);
        if (g != NULL && g->refs > 0 && --g->refs == 0)
            gang_alt_end(dra, h->gang_alts->pdata[i], g, how);
    }
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
    hold_end(dra, uid, HOLD_RELEASED);
}

void kb_dra_pod_bound(KbDra *dra, const char *uid)
{
    hold_end(dra, uid, HOLD_BOUND);
}

void kb_dra_claim_written(KbDra *dra, const char *namespace_, const char *name, gboolean written)
{
    /* once per claim write: the key on the stack when it fits */
    char buf[320];
    g_autofree char *heap = NULL;
    gsize nl = strlen(namespace_), ml = strlen(name);
    char *key = buf;
    if (nl + ml + 2 > sizeof buf)
        key = heap = g_malloc(nl + ml + 2);
    memcpy(key, namespace_, nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml + 1);
    ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, key);
    if (ca == NULL)
        return;
    ca->written = written;
    if (!written && ca->refs == 0)
        claim_alloc_drop(dra, key);
}

static gboolean reservations_kept(const KbResourceClaim *old, const KbResourceClaim *claim)
{
    for (guint i = 0; i < old->n_reserved_for; i++) {
        if (old->reserved_for[i].uid == NULL ||
            !kb_resource_claim_reserved_for(claim, old->reserved_for[i].uid))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_dra_claim_confirms_assumed(KbDra *dra, const KbResourceClaim *old,
                                       const KbResourceClaim *claim)
{
    if (old == NULL || old->allocated || !claim->allocated ||
        g_strcmp0(old->meta.uid, claim->meta.uid) != 0 ||
        old->meta.generation != claim->meta.generation || !reservations_kept(old, claim))
        return FALSE;
    g_autofree char *key = kb_object_key(&claim->meta);
    const ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, key);
    if (ca == NULL || ca->results->len != claim->n_results)
        return FALSE;
    for (guint i = 0; i < claim->n_results; i++) {
        const KbDeviceResult *a = &g_array_index(ca->results, KbDeviceResult, i);
        const KbDeviceResult *r = &claim->results[i];
        if (result_shared(a) || result_shared(r) || g_strcmp0(a->driver, r->driver) != 0 ||
            g_strcmp0(a->pool, r->pool) != 0 || g_strcmp0(a->device, r->device) != 0 ||
            g_strcmp0(a->request, r->request) != 0)
            return FALSE;
    }
    return TRUE;
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

/* A class whose devices are GPUs or parts of one: what they consume counts in nvidia.com/gpu,
 * in milli-GPUs (mig.nvidia.com also counts its devices in a slot of its own). */
static gboolean gpu_class(const char *name)
{
    return name != NULL &&
           (strcmp(name, KB_RESOURCE_GPU_CLASS) == 0 || strcmp(name, KB_DRA_MIG_CLASS) == 0);
}

/* @part of @whole in milli, rounded down (never more than consumed), at most 1000; -1 when
 * @whole is not positive. */
static gint64 milli_of(gint64 part, gint64 whole)
{
    if (whole <= 0)
        return -1;
    if (part >= whole)
        return KB_GPU_MILLI;
    if (part <= 0)
        return 0;
    return (gint64)(((__int128)part * KB_GPU_MILLI) / whole);
}

/* The part of its GPU partitionable device @d consumes: of its first counter set, the
 * multiprocessors' share (what the "g" of a MIG profile counts: a 1g.10gb is 1/7 of an A100,
 * a 3g.40gb and a 4g.40gb make a whole one), else memory's, else the largest share among the
 * counters worth more than 1 (a counter of 1, a memory slice, says where a placement lies, not
 * how much of the GPU it takes). Milli-GPUs; 1000 when no counter says. */
static gint64 counters_milli(KbDra *dra, const Dev *d)
{
    const KbCounterSet *cs = &d->dev->consumes[0];
    gint64 sms = -1, mem = -1, most = -1;
    for (guint k = 0; k < cs->n_counters; k++) {
        gint64 whole = counter_value(dra, d, cs->name, cs->counters[k].name);
        gint64 m = milli_of(cs->counters[k].milli, whole);
        if (m < 0)
            continue;
        if (strcmp(cs->counters[k].name, "multiprocessors") == 0)
            sms = m;
        else if (strcmp(cs->counters[k].name, "memory") == 0)
            mem = m;
        if (whole > 1000)
            most = MAX(most, m);
    }
    return sms >= 0 ? sms : mem >= 0 ? mem : most >= 0 ? most : KB_GPU_MILLI;
}

/* The part of shared device @d that @amount (one per capacity of @d, milli; -1 unknown) takes:
 * memory's share, else the largest. */
static gint64 share_milli(const Dev *d, const gint64 *amount)
{
    gint64 mem = -1, most = -1;
    for (guint c = 0; c < d->dev->n_capacity && c < KB_DRA_MAX_DEVICE_FIELDS; c++) {
        gint64 m = amount[c] < 0 ? -1
                                 : milli_of(amount[c],
                                            kb_quantity_milli_value(&d->dev->capacity[c].value));
        if (m < 0)
            continue;
        if (strcmp(d->dev->capacity[c].name, "memory") == 0)
            mem = m;
        most = MAX(most, m);
    }
    return mem >= 0 ? mem : most >= 0 ? most : KB_GPU_MILLI;
}

/* Milli-GPUs device @d gives result @r (a share: what its consumedCapacity says). */
static gint64 result_milli(KbDra *dra, const Dev *d, const KbDeviceResult *r)
{
    if (d->dev->n_consumes > 0)
        return counters_milli(dra, d);
    if (!d->dev->multiple || !result_shared(r))
        return KB_GPU_MILLI;
    gint64 amount[KB_DRA_MAX_DEVICE_FIELDS];
    for (guint c = 0; c < d->dev->n_capacity && c < KB_DRA_MAX_DEVICE_FIELDS; c++) {
        const KbCelCapacity *cap = &d->dev->capacity[c];
        amount[c] = -1;
        for (guint i = 0; i < r->n_consumed; i++) {
            if (kb_capacity_name_is(r->consumed[i].name, d->slice->driver, cap->domain, cap->name))
                amount[c] = r->consumed[i].milli;
        }
    }
    return share_milli(d, amount);
}

/* Milli-GPUs device @d would give @sub (a share: its request rounded by the policy); -1 when @d
 * cannot serve it. */
static gint64 sub_milli(KbDra *dra, const Dev *d, const KbDeviceSubRequest *sub)
{
    if (!capacity_satisfies(d, sub))
        return -1;
    if (d->dev->n_consumes > 0)
        return counters_milli(dra, d);
    if (!d->dev->multiple)
        return KB_GPU_MILLI;
    gint64 amount[KB_DRA_MAX_DEVICE_FIELDS];
    for (guint c = 0; c < d->dev->n_capacity && c < KB_DRA_MAX_DEVICE_FIELDS; c++) {
        amount[c] = share_amount(d, c, sub);
        if (amount[c] < 0)
            return -1;
    }
    return share_milli(d, amount);
}

/* The least part of a GPU any published device of @sub's class and selectors could give it,
 * in milli-GPUs (selectors kb-cel refuses are not read: a smaller least keeps the demand a
 * necessary condition). While no such device is published: a whole GPU for a device of
 * KB_RESOURCE_GPU_CLASS without capacity.requests (as the device plugin's GPUs count), else 0.
 * One pass over the devices, once per template and class or slice change. */
static gint64 least_milli(KbDra *dra, const KbDeviceSubRequest *sub)
{
    const ClassInfo *cl = g_hash_table_lookup(dra->classes, sub->device_class);
    gint64 least = -1;
    if (cl == NULL || cl->error != NULL)
        return 0;
    g_autoptr(GPtrArray) progs = NULL;
    if (sub->n_selectors > 0) {
        g_autofree char *err = NULL;
        progs = programs_new();
        for (guint i = 0; i < sub->n_selectors; i++)
            compile_into(progs, sub->selectors[i], "template", &err);
        if (err != NULL)
            g_clear_pointer(&progs, g_ptr_array_unref);
    }
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, dra->dev_by_key);
    while (least != 0 && g_hash_table_iter_next(&it, NULL, &v)) {
        Dev *d = v;
        if (!class_matches(dra, cl, d) ||
            (progs != NULL && !programs_match(progs, 0, progs->len, d)))
            continue;
        gint64 m = sub_milli(dra, d, sub);
        if (m >= 0 && (least < 0 || m < least))
            least = m;
    }
    if (least < 0)
        return strcmp(sub->device_class, KB_RESOURCE_GPU_CLASS) == 0 && sub->n_capacity == 0
                       ? KB_GPU_MILLI
                       : 0;
    return least;
}

/* What one request surely takes (see dra.h), added to @out: in nvidia.com/gpu the least part of
 * a GPU its devices could consume, when every alternative names a GPU class; in its class's slot
 * (other than nvidia.com/gpu's) its device count, when every alternative names that class and no
 * capacity. */
static void request_demand(KbDra *dra, const KbDeviceRequest *req, KbResources *out)
{
    const KbDeviceSubRequest *one = req->n_first_available == 0 ? &req->exactly : NULL;
    const char *klass = NULL;
    gint64 least = G_MAXINT64, gpu_least = G_MAXINT64;
    gboolean counted = TRUE, gpus = TRUE;
    for (guint a = 0; a < MAX(req->n_first_available, 1); a++) {
        const KbDeviceSubRequest *s = one != NULL ? one : &req->first_available[a];
        /* adminAccess takes devices in use without holding them */
        if (s->admin_access || s->device_class == NULL)
            return;
        gint64 n = s->all ? 1 : s->count;
        if (gpu_class(s->device_class) && gpus)
            gpu_least = MIN(gpu_least, n * least_milli(dra, s));
        else
            gpus = FALSE;
        /* a request naming capacity.requests may be a share of a device beside other claims;
         * alternatives of different classes take nothing certain of any one class */
        if (s->n_capacity > 0 || (klass != NULL && strcmp(klass, s->device_class) != 0))
            counted = FALSE;
        klass = s->device_class;
        least = MIN(least, n);
    }
    if (gpus && gpu_least != G_MAXINT64)
        out->v[KB_RES_GPU] += gpu_least;
    int slot = counted ? class_slot(klass) : -1;
    if (slot > KB_RES_GPU)
        out->v[slot] += least;
}

/* @t's demand, computed once per template and devices' change. */
/* Template @key's demand (the sum, then each request's: n_requests + 1 vectors), computed once
 * per template and devices' change; NULL for a template not known. */
static const KbResources *template_demand(KbDra *dra, const char *key)
{
    KbResources *r = g_hash_table_lookup(dra->template_demand, key);
    if (r != NULL)
        return r;
    const KbResourceClaimTemplate *t = g_hash_table_lookup(dra->templates, key);
    if (t == NULL)
        return NULL;
    r = g_new0(KbResources, t->spec.n_requests + 1);
    for (guint q = 0; q < t->spec.n_requests; q++) {
        request_demand(dra, &t->spec.requests[q], &r[q + 1]);
        kb_resources_add(&r[0], &r[q + 1]);
    }
    g_hash_table_insert(dra->template_demand, g_strdup(key), r);
    return r;
}

/* What allocated claim @claim's results consume of GPUs: milli-GPUs in nvidia.com/gpu, one
 * mig.nvidia.com per MIG device (when that class has a slot). */
static void claim_consumption(KbDra *dra, const KbResourceClaim *claim, KbResources *out)
{
    const ClassInfo *gpu = g_hash_table_lookup(dra->classes, KB_RESOURCE_GPU_CLASS);
    const ClassInfo *mig = g_hash_table_lookup(dra->classes, KB_DRA_MIG_CLASS);
    int mig_slot = class_slot_known(KB_DRA_MIG_CLASS);
    for (guint i = 0; i < claim->n_results; i++) {
        const KbDeviceResult *r = &claim->results[i];
        g_autofree char *dk = device_key(r->driver, r->pool, r->device);
        Dev *d = g_hash_table_lookup(dra->dev_by_key, dk);
        if (d == NULL)
            continue;
        gboolean is_mig = mig != NULL && mig->error == NULL && class_matches(dra, mig, d);
        if (is_mig || (gpu != NULL && gpu->error == NULL && class_matches(dra, gpu, d)))
            out->v[KB_RES_GPU] += result_milli(dra, d, r);
        if (is_mig && mig_slot >= 0)
            out->v[mig_slot]++;
    }
}

/* The least part of a GPU a template's request takes depends on the devices published: when
 * they changed, the templates' demand is computed again, and demand_gen moves (pods are
 * recounted) only when some template's changed (nodes registering more of the same GPUs change
 * none). Called before any pod is counted, so that none is counted with a stale figure under
 * the new generation. */
static void demand_refresh(KbDra *dra)
{
    guint fg = dra->class_gen + dra->slice_gen;
    if (fg == dra->fraction_gen)
        return;
    dra->fraction_gen = fg;
    g_autoptr(GHashTable) old = g_steal_pointer(&dra->template_demand);
    dra->template_demand = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, old);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const KbResources *now = template_demand(dra, k);
        if (now == NULL || !kb_resources_equal(now, v)) {
            dra->demand_gen++;
            break;
        }
    }
}

void kb_dra_pod_demand(KbDra *dra, const KbPod *pod, KbResources *out)
{
    demand_refresh(dra);
    int mig_slot = class_slot_known(KB_DRA_MIG_CLASS);
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        const char *tn = pod->resource_claims[i].template_name;
        if (tn == NULL)
            continue;
        /* keys on the stack when they fit: this runs for each pod whose claims changed */
        char key[256], cbuf[256];
        g_autofree char *heap = NULL;
        const char *k = key;
        if ((gsize)g_snprintf(key, sizeof(key), "%s/%s", pod->meta.namespace_, tn) >= sizeof(key))
            k = heap = g_strdup_printf("%s/%s", pod->meta.namespace_, tn);
        const KbResources *t = template_demand(dra, k);
        g_autofree char *ck = NULL;
        const ClaimInfo *ci = pod_claim_in(dra, pod, i, cbuf, sizeof(cbuf), &ck);
        if (ci == NULL || !ci->claim->allocated || ci->claim->n_results == 0) {
            if (t != NULL)
                kb_resources_add(out, t);
            continue;
        }
        /* allocated: its GPUs count as consumed, the rest as the template says */
        KbResources rest = {0};
        if (t != NULL)
            rest = *t;
        rest.v[KB_RES_GPU] = 0;
        if (mig_slot >= 0)
            rest.v[mig_slot] = 0;
        claim_consumption(dra, ci->claim, &rest);
        kb_resources_add(out, &rest);
    }
}

void kb_dra_pod_demand_stamped(KbDra *dra, const KbPod *pod, KbResources *out,
                               KbDraDemandStamp *stamp)
{
    kb_dra_pod_demand(dra, pod, out); /* refreshes the templates' demand first */
    stamp->claims = dra->claim_clock;
    stamp->demand_gen = dra->demand_gen;
    stamp->fraction_gen = dra->fraction_gen;
    stamp->slots = kb_resource_count();
}

gboolean kb_dra_pod_demand_current(KbDra *dra, const KbPod *pod, const KbDraDemandStamp *stamp)
{
    demand_refresh(dra);
    if (stamp->demand_gen != dra->demand_gen || stamp->fraction_gen != dra->fraction_gen ||
        stamp->slots != kb_resource_count() || dra->deleted_at > stamp->claims)
        return FALSE;
    if (dra->claim_clock == stamp->claims)
        return TRUE;
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        if (pod->resource_claims[i].template_name == NULL)
            continue;
        char buf[256];
        g_autofree char *heap = NULL;
        const ClaimInfo *ci = pod_claim_in(dra, pod, i, buf, sizeof(buf), &heap);
        /* created or set since (a claim not there then and still not there counts nothing) */
        if (ci != NULL && ci->stamp > stamp->claims)
            return FALSE;
    }
    return TRUE;
}

GHashTable *kb_dra_take_recount(KbDra *dra)
{
    GHashTable *out = NULL;
    if (dra->recount != NULL && g_hash_table_size(dra->recount) > 0)
        out = g_steal_pointer(&dra->recount);
    if (dra->recount == NULL)
        dra->recount = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return out;
}

void kb_dra_node_capacity(KbDra *dra, const char *node, KbResources *out)
{
    KbDraNode *lists[2] = {g_hash_table_lookup(dra->by_node, node), dra->all_nodes};
    if (lists[0] == NULL && dra->all_nodes->slices->len == 0)
        return;
    const ClassInfo *gpu = g_hash_table_lookup(dra->classes, KB_RESOURCE_GPU_CLASS);
    const ClassInfo *mig = g_hash_table_lookup(dra->classes, KB_DRA_MIG_CLASS);
    /* a GPU is one whatever devices it is published as: a whole device, or partitions of one
     * counter set (counted once per set) */
    g_autoptr(GHashTable) sets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, dra->classes);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        const ClassInfo *cl = v;
        int slot = cl->error == NULL ? class_slot_known(cl->dc->meta.name) : -1;
        if (slot < 0 && !gpu_class(cl->dc->meta.name))
            continue;
        gint64 n = 0;
        for (guint l = 0; l < 2; l++) {
            for (guint i = 0; lists[l] != NULL && i < lists[l]->slices->len; i++) {
                SliceDevs *sd = lists[l]->slices->pdata[i];
                for (guint d = 0; d < sd->slice->n_devices; d++) {
                    Dev *dev = &sd->devs[d];
                    if (cl->error != NULL || !class_matches(dra, cl, dev))
                        continue;
                    n++;
                    if ((cl == gpu || cl == mig) && dev->dev->n_consumes > 0)
                        g_hash_table_add(sets, counter_key(dev, dev->dev->consumes[0].name, NULL));
                    else if (cl == gpu)
                        out->v[KB_RES_GPU] += KB_GPU_MILLI;
                }
            }
        }
        if (slot > KB_RES_GPU)
            out->v[slot] += n;
    }
    out->v[KB_RES_GPU] += (gint64)g_hash_table_size(sets) * KB_GPU_MILLI;
}

gboolean kb_dra_describe_demand(KbDra *dra, const KbPod *pod, int slot, GString *out)
{
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        const char *tn = pod->resource_claims[i].template_name;
        if (tn == NULL)
            continue;
        g_autofree char *key = g_strdup_printf("%s/%s", pod->meta.namespace_, tn);
        const KbResourceClaimTemplate *t = g_hash_table_lookup(dra->templates, key);
        const KbResources *per = template_demand(dra, key);
        for (guint r = 0; t != NULL && per != NULL && r < t->spec.n_requests; r++) {
            const KbDeviceRequest *req = &t->spec.requests[r];
            KbResources one = per[r + 1];
            if (one.v[slot] <= 0)
                continue;
            const char *claim = kb_pod_resource_claim_name(pod, i);
            const KbDeviceSubRequest *s =
                    req->n_first_available > 0 ? &req->first_available[0] : &req->exactly;
            gint64 n = slot == KB_RES_GPU ? (s->all ? 1 : s->count) : one.v[slot];
            g_string_append_printf(out, "claim %s/%s request %s: ", pod->meta.namespace_,
                                   claim != NULL ? claim : tn, req->exactly.name);
            /* a part of a GPU says how much of one it counts as */
            if (slot == KB_RES_GPU && one.v[slot] != n * KB_GPU_MILLI) {
                g_autofree char *f = kb_resource_format_value(slot, one.v[slot]);
                g_string_append_printf(out, "%s nvidia.com/gpu (", f);
            }
            g_string_append_printf(out, "%" G_GINT64_FORMAT " device%s of class %s", n,
                                   n == 1 ? "" : "s", s->device_class);
            if (slot == KB_RES_GPU && one.v[slot] != n * KB_GPU_MILLI)
                g_string_append(out, ")");
            if (claim == NULL)
                g_string_append(out, " (template)");
            return TRUE;
        }
    }
    return FALSE;
}

guint kb_dra_demand_gen(KbDra *dra)
{
    demand_refresh(dra);
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

/* Count the devices of @claim free in the plan (@delta 1) or no longer (-1): a device's
 * counters follow it (dev_set_held), a share gives back what it consumes. Called once per claim
 * and direction (kb_dra_plan_evict counts its consumers), so nothing is given back twice. */
static void plan_devices(KbDra *dra, const KbResourceClaim *claim, int delta)
{
    for (guint r = 0; r < claim->n_results; r++) {
        const KbDeviceResult *res = &claim->results[r];
        if (result_shared(res)) {
            share_add(dra->plan_shares, res, delta);
            continue;
        }
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

void kb_dra_plan_orphans(KbDra *dra, KbDraPodExists exists, gpointer data)
{
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, dra->claims);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const KbResourceClaim *claim = ((ClaimInfo *)v)->claim;
        if (!claim->allocated || claim->n_reserved_for == 0 ||
            g_hash_table_contains(dra->plan_claims, k))
            continue;
        gboolean gone = TRUE;
        for (guint r = 0; r < claim->n_reserved_for && gone; r++) {
            const KbClaimConsumer *c = &claim->reserved_for[r];
            gone = g_strcmp0(c->resource, "pods") == 0 &&
                   !exists(claim->meta.namespace_, c->name, data);
        }
        if (!gone)
            continue;
        /* every consumer counted: a victim's kb_dra_plan_evict cannot free it again */
        g_hash_table_insert(dra->plan_claims, g_strdup(k), GUINT_TO_POINTER(claim->n_reserved_for));
        plan_devices(dra, claim, 1);
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
    g_hash_table_remove_all(dra->plan_shares);
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
    g_free(w->body);
    json_object_put(w->undo);
    if (w->after != NULL)
        kb_object_unref(w->after);
    g_free(w->from_rv);
    g_free(w);
}

KbResourceClaim *kb_claim_write_take_echo(KbClaimWrite *w)
{
    return w->from_rv != NULL ? g_steal_pointer(&w->after) : NULL;
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
    g_autofree KbClaimConsumer *pods = g_new0(KbClaimConsumer, users->len);
    for (guint i = 0; i < users->len; i++) {
        const KbPod *p = users->pdata[i];
        pods[i].name = p->meta.name;
        pods[i].uid = p->meta.uid;
    }
    KbClaimWrite *w = g_new0(KbClaimWrite, 1);
    w->namespace_ = g_strdup(claim->meta.namespace_);
    w->name = g_strdup(claim->meta.name);
    w->body = kb_resource_claim_status_text(
            claim, ca != NULL ? (const KbDeviceResult *)ca->results->data : NULL,
            ca != NULL ? ca->results->len : 0, ca != NULL ? ca->node : NULL, pods, users->len);
    w->allocates = ca != NULL;
    w->undo = undo_new(claim, w->allocates);
    w->after = kb_resource_claim_after_status(
            claim, ca != NULL ? (const KbDeviceResult *)ca->results->data : NULL,
            ca != NULL ? ca->results->len : 0, ca != NULL ? ca->node : NULL, pods, users->len);
    w->from_rv = g_strdup(claim->meta.resource_version);
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

/* ---- lookups -------------------------------------------------------------------------------- */

const KbResourceClaim *kb_dra_lookup_claim(KbDra *dra, const char *namespace_, const char *name)
{
    g_autofree char *key = g_strdup_printf("%s/%s", namespace_, name);
    const ClaimInfo *ci = g_hash_table_lookup(dra->claims, key);
    return ci != NULL ? ci->claim : NULL;
}

/* ---- consumption ---------------------------------------------------------------------------- */

double kb_dra_gpu_fraction(KbDra *dra, const KbDeviceResult *r)
{
    g_autofree char *dk = device_key(r->driver, r->pool, r->device);
    const Dev *d = g_hash_table_lookup(dra->dev_by_key, dk);
    if (d == NULL)
        return -1;
    return (double)result_milli(dra, d, r) / KB_GPU_MILLI;
}

/* ---- GPUs for node scoring (the fgd plugin) -------------------------------------------------- */

/* Does @nd publish a device allowing multiple allocations (@partitionable FALSE) or consuming
 * counters (TRUE)? */
static gboolean node_has(const KbDraNode *nd, gboolean partitionable)
{
    if (nd == NULL || !nd->shares)
        return FALSE;
    for (guint i = 0; i < nd->slices->len; i++) {
        const SliceDevs *sd = nd->slices->pdata[i];
        for (guint k = 0; k < sd->slice->n_devices; k++) {
            const KbDevice *d = sd->devs[k].dev;
            if (partitionable ? d->n_consumes > 0 : d->multiple)
                return TRUE;
        }
    }
    return FALSE;
}

gboolean kb_dra_any_shares(KbDra *dra, gboolean partitionable)
{
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, dra->by_node);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (node_has(v, partitionable))
            return TRUE;
    return node_has(dra->all_nodes, partitionable);
}

/* The GPU @d is part of: its counter set for a partitionable device (a MIG placement and the
 * whole GPU consume the same set), else the device itself. Newly allocated. */
static char *gpu_key(const Dev *d)
{
    if (d->dev->n_consumes > 0)
        return g_strdup_printf("%s/%s/%s", d->slice->driver, d->slice->pool,
                               d->dev->consumes[0].name);
    return g_strdup(d->key);
}

/* Node @nd's GPUs, in its slices' order, into @keys (owned strings) and @free (milli-GPU free,
 * up to @max). Counters and shares held count; a plan's do not (its tables are emptied, as the
 * next plan would). */
static guint node_gpus(KbDra *dra, KbDraNode *nd, GPtrArray *keys, guint *free, guint max)
{
    if (g_hash_table_size(dra->counter_plan) > 0)
        g_hash_table_remove_all(dra->counter_plan);
    if (g_hash_table_size(dra->share_plan) > 0)
        g_hash_table_remove_all(dra->share_plan);
    for (guint i = 0; nd != NULL && i < nd->slices->len; i++) {
        SliceDevs *sd = nd->slices->pdata[i];
        for (guint k = 0; k < sd->slice->n_devices && keys->len < max; k++) {
            Dev *d = &sd->devs[k];
            g_autofree char *gk = gpu_key(d);
            gboolean seen = FALSE;
            for (guint j = 0; j < keys->len && !seen; j++)
                seen = strcmp(keys->pdata[j], gk) == 0;
            if (seen)
                continue;
            double used = d->dev->n_consumes > 0 || d->dev->multiple ? dev_used(dra, d)
                          : d->held                                  ? 1
                                                                     : 0;
            free[keys->len] = (guint)(1000 * (1 - MIN(MAX(used, 0), 1)) + 0.5);
            g_ptr_array_add(keys, g_steal_pointer(&gk));
        }
    }
    return keys->len;
}

guint kb_dra_node_gpus(KbDra *dra, const char *node, guint *free, guint max)
{
    KbDraNode *nd = g_hash_table_lookup(dra->by_node, node);
    if (nd == NULL || nd->slices->len == 0)
        return 0;
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    return node_gpus(dra, nd, keys, free, max);
}

/* The results of plan claim @pc: those chosen in the plan, or with @held those the claim holds
 * already (assumed by this scheduler or allocated), else none. */
static const KbDeviceResult *plan_claim_results(KbDra *dra, const PlanClaim *pc, gboolean held,
                                                guint *n)
{
    *n = 0;
    if (pc->results != NULL) {
        *n = pc->results->len;
        return (const KbDeviceResult *)(gpointer)pc->results->data;
    }
    if (!held)
        return NULL;
    const ClaimAlloc *ca = g_hash_table_lookup(dra->claim_allocs, pc->key);
    if (ca != NULL) {
        *n = ca->results->len;
        return (const KbDeviceResult *)(gpointer)ca->results->data;
    }
    const ClaimInfo *ci = g_hash_table_lookup(dra->claims, pc->key);
    if (ci != NULL && ci->claim->allocated) {
        *n = ci->claim->n_results;
        return ci->claim->results;
    }
    return NULL;
}

gboolean kb_dra_pod_gpus(KbDra *dra, const KbPod *pod, const char *node, gboolean held, guint *gpus,
                         guint *milli, gint *gpu, gboolean *partitionable)
{
    *gpus = 0;
    *milli = 0;
    *gpu = -1;
    if (partitionable != NULL)
        *partitionable = FALSE;
    g_autoptr(GArray) plan = plan_new();
    if (pod->n_resource_claims == 0 ||
        !plan_pod(dra, pod, node, g_hash_table_lookup(dra->by_node, node), plan, TRUE, NULL, NULL))
        return FALSE;
    g_autofree char *part_key = NULL;
    for (guint p = 0; p < plan->len; p++) {
        guint n = 0;
        const KbDeviceResult *r =
                plan_claim_results(dra, &g_array_index(plan, PlanClaim, p), held, &n);
        for (guint i = 0; i < n; i++) {
            double f = kb_dra_gpu_fraction(dra, &r[i]);
            if (f < 0)
                continue;
            if (f >= 1 - 1e-9) {
                (*gpus)++;
                continue;
            }
            g_autofree char *dk = device_key(r[i].driver, r[i].pool, r[i].device);
            const Dev *d = g_hash_table_lookup(dra->dev_by_key, dk);
            guint m = (guint)(f * 1000 + 0.5);
            if (d != NULL && m > *milli) {
                *milli = MAX(m, 1);
                g_free(part_key);
                part_key = gpu_key(d);
                if (partitionable != NULL)
                    *partitionable = d->dev->n_consumes > 0;
            }
        }
    }
    if (*milli > 0) {
        /* a fraction beside whole devices counts as one more whole GPU */
        if (*gpus > 0) {
            (*gpus)++;
            *milli = 1000;
            return TRUE;
        }
        *gpus = 1;
        g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
        guint free[64];
        node_gpus(dra, g_hash_table_lookup(dra->by_node, node), keys, free, G_N_ELEMENTS(free));
        for (guint k = 0; k < keys->len && *gpu < 0; k++)
            if (strcmp(keys->pdata[k], part_key) == 0)
                *gpu = (gint)k;
    } else if (*gpus > 0) {
        *milli = 1000;
    }
    return TRUE;
}
