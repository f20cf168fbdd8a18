/* kbctl's join of ResourceSlices and ResourceClaims: which device serves which pod (see
 * kbctl-dra.h). */
#include "cli/kbctl-dra.h"

#include <string.h>

#include "cli/kbctl-out.h"
#include "kube/kb-quantity.h"

static void share_free(gpointer p)
{
    KbctlDraShare *s = p;
    g_free(s->claim);
    g_ptr_array_unref(s->pods);
    g_free(s);
}

static void device_free(gpointer p)
{
    KbctlDraDevice *d = p;
    g_free(d->key);
    g_free(d->island);
    g_ptr_array_unref(d->shares);
    g_free(d);
}

static void set_free(gpointer p)
{
    KbctlDraSet *s = p;
    g_free(s->key);
    g_ptr_array_unref(s->devices);
    g_free(s);
}

void kbctl_dra_free(KbctlDra *dra)
{
    if (dra == NULL)
        return;
    g_hash_table_unref(dra->by_pod);
    g_hash_table_unref(dra->by_key);
    g_ptr_array_unref(dra->devices);
    g_ptr_array_unref(dra->sets);
    g_ptr_array_unref(dra->unknown);
    json_object_put(dra->slices);
    json_object_put(dra->claims);
    g_free(dra);
}

/* "gpu-10" after "gpu-9": runs of digits compare by value. */
static int natural_cmp(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b ? 0 : a == NULL ? -1 : 1;
    while (*a != '\0' && *b != '\0') {
        if (g_ascii_isdigit(*a) && g_ascii_isdigit(*b)) {
            const char *ea = a, *eb = b;
            while (*a == '0' && g_ascii_isdigit(a[1]))
                a++;
            while (*b == '0' && g_ascii_isdigit(b[1]))
                b++;
            for (ea = a; g_ascii_isdigit(*ea); ea++)
                ;
            for (eb = b; g_ascii_isdigit(*eb); eb++)
                ;
            if (ea - a != eb - b)
                return ea - a < eb - b ? -1 : 1;
            int r = strncmp(a, b, ea - a);
            if (r != 0)
                return r;
            a = ea;
            b = eb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a == *b ? 0 : *a == '\0' ? -1 : 1;
}

static int cmp_place(const char *na, const char *da, const char *pa, const char *a, const char *nb,
                     const char *db, const char *pb, const char *b)
{
    int r = natural_cmp(na, nb);
    if (r == 0)
        r = g_strcmp0(da, db);
    if (r == 0)
        r = natural_cmp(pa, pb);
    return r != 0 ? r : natural_cmp(a, b);
}

static int cmp_devices(gconstpointer a, gconstpointer b)
{
    const KbctlDraDevice *x = *(KbctlDraDevice *const *)a, *y = *(KbctlDraDevice *const *)b;
    return cmp_place(x->node, x->driver, x->pool, x->name, y->node, y->driver, y->pool, y->name);
}

static int cmp_sets(gconstpointer a, gconstpointer b)
{
    const KbctlDraSet *x = *(KbctlDraSet *const *)a, *y = *(KbctlDraSet *const *)b;
    return cmp_place(x->node, NULL, NULL, x->key, y->node, NULL, NULL, y->key);
}

/* An attribute's value as text ({"int": 1} -> "1"); @short_name matches "name" or "dom/name". */
static char *attribute_text(json_object *attrs, const char *short_name)
{
    if (!json_object_is_type(attrs, json_type_object))
        return NULL;
    json_object_object_foreach(attrs, name, val)
    {
        const char *slash = strrchr(name, '/');
        if (strcmp(slash != NULL ? slash + 1 : name, short_name) != 0 ||
            !json_object_is_type(val, json_type_object))
            continue;
        json_object_object_foreach(val, type, v)
        {
            if (type != NULL && !json_object_is_type(v, json_type_object) &&
                !json_object_is_type(v, json_type_array))
                return g_strdup(json_object_get_string(v));
        }
    }
    return NULL;
}

static void add_set(KbctlDra *dra, GHashTable *sets, json_object *slice, json_object *set)
{
    const char *name = kbctl_json_str(set, "name");
    if (name == NULL)
        return;
    KbctlDraSet *s = g_new0(KbctlDraSet, 1);
    s->key = g_strdup_printf("%s/%s/%s", kbctl_json_str(slice, "spec.driver"),
                             kbctl_json_str(slice, "spec.pool.name"), name);
    s->node = kbctl_json_str(slice, "spec.nodeName");
    s->name = name;
    s->counters = kbctl_json_get(set, "counters");
    s->devices = g_ptr_array_new();
    if (g_hash_table_contains(sets, s->key)) {
        set_free(s); /* declared twice: the first wins, as a pool has one set by name */
        return;
    }
    g_hash_table_insert(sets, s->key, s);
    g_ptr_array_add(dra->sets, s);
}

static void add_device(KbctlDra *dra, json_object *slice, json_object *dev)
{
    const char *name = kbctl_json_str(dev, "name");
    const char *driver = kbctl_json_str(slice, "spec.driver");
    const char *pool = kbctl_json_str(slice, "spec.pool.name");
    if (name == NULL || driver == NULL || pool == NULL)
        return;
    KbctlDraDevice *d = g_new0(KbctlDraDevice, 1);
    d->key = g_strdup_printf("%s/%s/%s", driver, pool, name);
    if (g_hash_table_contains(dra->by_key, d->key)) {
        device_free(d); /* an older generation's slice still listed: the first one seen stays */
        return;
    }
    d->node = kbctl_json_str(slice, "spec.nodeName");
    d->driver = driver;
    d->pool = pool;
    d->name = name;
    d->raw = dev;
    json_object *attrs = kbctl_json_get(dev, "attributes");
    if (json_object_is_type(attrs, json_type_object)) {
        json_object_object_foreach(attrs, an, av)
        {
            json_object *pv = NULL;
            const char *slash = strrchr(an, '/');
            if (strcmp(slash != NULL ? slash + 1 : an, "productName") == 0 &&
                json_object_object_get_ex(av, "string", &pv))
                d->product = json_object_get_string(pv);
        }
    }
    d->island = attribute_text(attrs, "nvlinkIsland");
    d->multiple = json_object_get_boolean(kbctl_json_get(dev, "allowMultipleAllocations"));
    d->shares = g_ptr_array_new_with_free_func(share_free);
    g_hash_table_insert(dra->by_key, d->key, d);
    g_ptr_array_add(dra->devices, d);
}

/* Each device that consumes counters joins the set it names in its own driver and pool. */
static void link_sets(KbctlDra *dra, GHashTable *sets)
{
    for (guint i = 0; i < dra->devices->len; i++) {
        KbctlDraDevice *d = g_ptr_array_index(dra->devices, i);
        json_object *cc = kbctl_json_get(d->raw, "consumesCounters");
        if (!json_object_is_type(cc, json_type_array) || json_object_array_length(cc) == 0)
            continue;
        /* NVIDIA's layout consumes from one set a device; a second is not shown */
        json_object *first = json_object_array_get_idx(cc, 0);
        g_autofree char *key = g_strdup_printf("%s/%s/%s", d->driver, d->pool,
                                               kbctl_json_str(first, "counterSet"));
        KbctlDraSet *s = g_hash_table_lookup(sets, key);
        if (s == NULL)
            continue;
        d->set = s;
        d->consumes = kbctl_json_get(first, "counters");
        g_ptr_array_add(s->devices, d);
    }
}

static void add_pod_device(KbctlDra *dra, const char *pod, KbctlDraDevice *d)
{
    GPtrArray *list = g_hash_table_lookup(dra->by_pod, pod);
    if (list == NULL) {
        list = g_ptr_array_new();
        g_hash_table_insert(dra->by_pod, g_strdup(pod), list);
    }
    for (guint i = 0; i < list->len; i++)
        if (g_ptr_array_index(list, i) == d)
            return;
    g_ptr_array_add(list, d);
}

static void add_claim(KbctlDra *dra, json_object *claim)
{
    const char *ns = kbctl_json_str(claim, "metadata.namespace");
    const char *cname = kbctl_json_str(claim, "metadata.name");
    json_object *results = kbctl_json_get(claim, "status.allocation.devices.results");
    if (cname == NULL || !json_object_is_type(results, json_type_array))
        return;
    json_object *reserved = kbctl_json_get(claim, "status.reservedFor");
    for (size_t r = 0; r < json_object_array_length(results); r++) {
        json_object *res = json_object_array_get_idx(results, r);
        g_autofree char *key =
                g_strdup_printf("%s/%s/%s", kbctl_json_str(res, "driver"),
                                kbctl_json_str(res, "pool"), kbctl_json_str(res, "device"));
        KbctlDraDevice *d = g_hash_table_lookup(dra->by_key, key);
        if (d == NULL) {
            g_ptr_array_add(dra->unknown,
                            g_strdup_printf("claim %s/%s: device %s is in no ResourceSlice", ns,
                                            cname, key));
            continue;
        }
        KbctlDraShare *s = g_new0(KbctlDraShare, 1);
        s->claim = g_strdup_printf("%s/%s", ns, cname);
        s->request = kbctl_json_str(res, "request");
        s->consumed = kbctl_json_get(res, "consumedCapacity");
        s->share_id = kbctl_json_str(res, "shareID");
        s->pods = g_ptr_array_new_with_free_func(g_free);
        for (size_t i = 0; json_object_is_type(reserved, json_type_array) &&
                           i < json_object_array_length(reserved);
             i++) {
            json_object *c = json_object_array_get_idx(reserved, i);
            const char *pod = kbctl_json_str(c, "name");
            if (pod == NULL || g_strcmp0(kbctl_json_str(c, "resource"), "pods") != 0)
                continue;
            char *pkey = g_strdup_printf("%s/%s", ns, pod);
            add_pod_device(dra, pkey, d);
            g_ptr_array_add(s->pods, pkey);
        }
        g_ptr_array_add(d->shares, s);
    }
}

KbctlDra *kbctl_dra_new(json_object *slices, json_object *claims)
{
    KbctlDra *dra = g_new0(KbctlDra, 1);
    dra->slices = slices != NULL ? json_object_get(slices) : json_object_new_array();
    dra->claims = claims != NULL ? json_object_get(claims) : json_object_new_array();
    dra->devices = g_ptr_array_new_with_free_func(device_free);
    dra->sets = g_ptr_array_new_with_free_func(set_free);
    dra->by_key = g_hash_table_new(g_str_hash, g_str_equal);
    dra->by_pod = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)g_ptr_array_unref);
    dra->unknown = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) sets = g_hash_table_new(g_str_hash, g_str_equal);
    for (size_t i = 0; i < json_object_array_length(dra->slices); i++) {
        json_object *slice = json_object_array_get_idx(dra->slices, i);
        json_object *devs = kbctl_json_get(slice, "spec.devices");
        for (size_t j = 0;
             json_object_is_type(devs, json_type_array) && j < json_object_array_length(devs); j++)
            add_device(dra, slice, json_object_array_get_idx(devs, j));
        json_object *shared = kbctl_json_get(slice, "spec.sharedCounters");
        for (size_t j = 0;
             json_object_is_type(shared, json_type_array) && j < json_object_array_length(shared);
             j++)
            add_set(dra, sets, slice, json_object_array_get_idx(shared, j));
    }
    g_ptr_array_sort(dra->devices, cmp_devices);
    g_ptr_array_sort(dra->sets, cmp_sets);
    link_sets(dra, sets);
    for (size_t i = 0; i < json_object_array_length(dra->claims); i++)
        add_claim(dra, json_object_array_get_idx(dra->claims, i));
    return dra;
}

/* The items of a list (new reference); an empty array when the API is not served (404) or the
 * user may not list it (403, with a warning). */
static json_object *items_of(KbClient *c, const KbResourceType *type, const char *ns,
                             GError **error)
{
    GError *local = NULL;
    g_autoptr(KbctlJson) list = kb_client_list(c, type, ns, NULL, &local);
    if (list == NULL) {
        if (g_error_matches(local, KB_ERROR, KB_ERROR_NOT_FOUND)) {
            g_error_free(local);
            return json_object_new_array();
        }
        /* A user allowed to see jobs but not DRA objects still gets the rest of the view. */
        if (g_error_matches(local, KB_ERROR, KB_ERROR_FORBIDDEN)) {
            g_printerr("kbctl: warning: DRA devices not shown: %s\n", local->message);
            g_error_free(local);
            return json_object_new_array();
        }
        g_propagate_error(error, local);
        return NULL;
    }
    json_object *items = kbctl_json_get(list, "items");
    return json_object_is_type(items, json_type_array) ? json_object_get(items)
                                                       : json_object_new_array();
}

KbctlDra *kbctl_dra_load(KbClient *client, const char *namespace_, GError **error)
{
    GError *local = NULL;
    g_autoptr(KbctlJson) slices = items_of(client, &kb_type_resource_slices, NULL, &local);
    if (slices == NULL) {
        g_propagate_prefixed_error(error, local, "listing resourceslices: ");
        return NULL;
    }
    g_autoptr(KbctlJson) claims = items_of(client, &kb_type_resource_claims, namespace_, &local);
    if (claims == NULL) {
        g_propagate_prefixed_error(error, local, "listing resourceclaims: ");
        return NULL;
    }
    return kbctl_dra_new(slices, claims);
}

gboolean kbctl_dra_node_has_devices(const KbctlDra *dra, const char *node)
{
    for (guint i = 0; dra != NULL && i < dra->devices->len; i++)
        if (g_strcmp0(((KbctlDraDevice *)g_ptr_array_index(dra->devices, i))->node, node) == 0)
            return TRUE;
    return FALSE;
}

GPtrArray *kbctl_dra_pod_devices(const KbctlDra *dra, const char *namespace_, const char *name)
{
    if (dra == NULL)
        return NULL;
    g_autofree char *key = g_strdup_printf("%s/%s", namespace_, name);
    return g_hash_table_lookup(dra->by_pod, key);
}

char *kbctl_dra_pod_devices_string(const KbctlDra *dra, const char *namespace_, const char *name)
{
    GPtrArray *list = kbctl_dra_pod_devices(dra, namespace_, name);
    if (list == NULL || list->len == 0)
        return NULL;
    g_autoptr(GString) s = g_string_new(NULL);
    for (guint i = 0; i < list->len; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? "," : "",
                               ((KbctlDraDevice *)g_ptr_array_index(list, i))->key);
    return g_strdup(s->str);
}

/* ---- quantities ----------------------------------------------------------------------------- */

/* A quantity member ({"value": "80Gi"} or "80Gi") as whole units; FALSE when it is neither. */
static gboolean quantity_of(json_object *v, gint64 *out, KbQuantityFormat *format)
{
    json_object *inner = NULL;
    if (json_object_is_type(v, json_type_object) && json_object_object_get_ex(v, "value", &inner))
        v = inner;
    KbQuantity q;
    if (!json_object_is_type(v, json_type_string) ||
        !kb_quantity_parse(json_object_get_string(v), &q, NULL))
        return FALSE;
    *out = kb_quantity_value(&q);
    if (format != NULL)
        *format = q.format;
    return TRUE;
}

/* @v whole units written in @format ("62720Mi" stays binary). Newly allocated. */
static char *quantity_text(gint64 v, KbQuantityFormat format)
{
    g_autofree char *plain = g_strdup_printf("%" G_GINT64_FORMAT, v);
    KbQuantity q;
    if (!kb_quantity_parse(plain, &q, NULL))
        return g_steal_pointer(&plain);
    q.format = format;
    return kb_quantity_format(&q);
}

/* The sum of member @name over @list's objects (name -> quantity). */
static gint64 sum_member(GPtrArray *objs, const char *name)
{
    gint64 n = 0;
    for (guint i = 0; i < objs->len; i++) {
        json_object *o = g_ptr_array_index(objs, i), *v = NULL;
        gint64 x = 0;
        if (json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, name, &v) &&
            quantity_of(v, &x, NULL))
            n += x;
    }
    return n;
}

json_object *kbctl_dra_set_counters(const KbctlDraSet *set, guint *fitting)
{
    g_autoptr(GPtrArray) used = g_ptr_array_new();
    for (guint i = 0; i < set->devices->len; i++) {
        KbctlDraDevice *d = g_ptr_array_index(set->devices, i);
        if (d->shares->len > 0)
            g_ptr_array_add(used, d->consumes);
    }
    json_object *out = json_object_new_object();
    if (json_object_is_type(set->counters, json_type_object)) {
        json_object_object_foreach(set->counters, name, val)
        {
            gint64 total = 0;
            KbQuantityFormat f = KB_QUANTITY_DECIMAL_SI;
            if (!quantity_of(val, &total, &f))
                continue;
            gint64 consumed = sum_member(used, name);
            json_object *c = json_object_new_object();
            g_autofree char *t = quantity_text(total, f);
            g_autofree char *u = quantity_text(consumed, f);
            g_autofree char *l = quantity_text(total - consumed, f);
            kbctl_json_set_str(c, "total", t);
            kbctl_json_set_str(c, "consumed", u);
            kbctl_json_set_str(c, "left", l);
            json_object_object_add(out, name, c);
        }
    }
    guint fit = 0;
    for (guint i = 0; i < set->devices->len; i++) {
        KbctlDraDevice *d = g_ptr_array_index(set->devices, i);
        if (d->shares->len > 0 || !json_object_is_type(d->consumes, json_type_object))
            continue;
        gboolean ok = TRUE;
        json_object_object_foreach(d->consumes, name, val)
        {
            gint64 want = 0, left = 0;
            json_object *c = NULL;
            KbQuantity q;
            if (!quantity_of(val, &want, NULL) || !json_object_object_get_ex(out, name, &c) ||
                !kb_quantity_parse(kbctl_json_str(c, "left"), &q, NULL))
                ok = FALSE;
            else if ((left = kb_quantity_value(&q)) < want)
                ok = FALSE;
        }
        fit += ok;
    }
    if (fitting != NULL)
        *fitting = fit;
    return out;
}

json_object *kbctl_dra_capacity_left(const KbctlDraDevice *d)
{
    json_object *out = json_object_new_object();
    json_object *cap = kbctl_json_get(d->raw, "capacity");
    if (!json_object_is_type(cap, json_type_object))
        return out;
    g_autoptr(GPtrArray) consumed = g_ptr_array_new();
    for (guint i = 0; i < d->shares->len; i++)
        g_ptr_array_add(consumed, ((KbctlDraShare *)g_ptr_array_index(d->shares, i))->consumed);
    json_object_object_foreach(cap, name, val)
    {
        gint64 total = 0;
        KbQuantityFormat f = KB_QUANTITY_DECIMAL_SI;
        if (!quantity_of(val, &total, &f))
            continue;
        g_autofree char *l = quantity_text(total - sum_member(consumed, name), f);
        kbctl_json_set_str(out, name, l);
    }
    return out;
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static json_object *share_json(const KbctlDraShare *s)
{
    json_object *o = json_object_new_object();
    kbctl_json_set_str(o, "claim", s->claim);
    kbctl_json_set_str(o, "request", s->request);
    json_object *pods = json_object_new_array();
    for (guint i = 0; i < s->pods->len; i++)
        json_object_array_add(pods, json_object_new_string(g_ptr_array_index(s->pods, i)));
    json_object_object_add(o, "pods", pods);
    if (s->consumed != NULL)
        json_object_object_add(o, "consumedCapacity", json_object_get(s->consumed));
    if (s->share_id != NULL)
        kbctl_json_set_str(o, "shareID", s->share_id);
    return o;
}

static json_object *device_json(const KbctlDraDevice *d)
{
    json_object *o = json_object_new_object();
    kbctl_json_set_str(o, "driver", d->driver);
    kbctl_json_set_str(o, "pool", d->pool);
    kbctl_json_set_str(o, "device", d->name);
    kbctl_json_set_str(o, "productName", d->product);
    kbctl_json_set_str(o, "nvlinkIsland", d->island);
    if (d->set != NULL)
        kbctl_json_set_str(o, "counterSet", d->set->name);
    json_object_object_add(o, "allowMultipleAllocations", json_object_new_boolean(d->multiple));
    json_object *alloc = json_object_new_array();
    for (guint i = 0; i < d->shares->len; i++)
        json_object_array_add(alloc, share_json(g_ptr_array_index(d->shares, i)));
    json_object_object_add(o, "allocations", alloc);
    if (d->multiple)
        json_object_object_add(o, "capacityLeft", kbctl_dra_capacity_left(d));
    return o;
}

void kbctl_dra_node_json(const KbctlDra *dra, const char *node, json_object *o)
{
    json_object *devs = json_object_new_array();
    json_object *sets = json_object_new_array();
    for (guint i = 0; dra != NULL && i < dra->devices->len; i++) {
        const KbctlDraDevice *d = g_ptr_array_index(dra->devices, i);
        if (g_strcmp0(d->node, node) == 0)
            json_object_array_add(devs, device_json(d));
    }
    for (guint i = 0; dra != NULL && i < dra->sets->len; i++) {
        const KbctlDraSet *s = g_ptr_array_index(dra->sets, i);
        if (g_strcmp0(s->node, node) != 0)
            continue;
        guint fit = 0;
        json_object *so = json_object_new_object();
        const KbctlDraDevice *first = s->devices->len > 0 ? g_ptr_array_index(s->devices, 0) : NULL;
        kbctl_json_set_str(so, "name", s->name);
        kbctl_json_set_str(so, "driver", first != NULL ? first->driver : NULL);
        kbctl_json_set_str(so, "pool", first != NULL ? first->pool : NULL);
        json_object_object_add(so, "counters", kbctl_dra_set_counters(s, &fit));
        json_object *allocated = json_object_new_array();
        for (guint j = 0; j < s->devices->len; j++) {
            const KbctlDraDevice *d = g_ptr_array_index(s->devices, j);
            if (d->shares->len > 0)
                json_object_array_add(allocated, json_object_new_string(d->name));
        }
        json_object_object_add(so, "allocatedDevices", allocated);
        kbctl_json_set_int(so, "devices", s->devices->len);
        kbctl_json_set_int(so, "freeDevicesThatFit", fit);
        json_object_array_add(sets, so);
    }
    json_object_object_add(o, "draDevices", devs);
    json_object_object_add(o, "counterSets", sets);
}
