/* Resource vectors; see kb-resource.h. */
#include "kube/kb-resource.h"

#include <string.h>

static char *slot_names[KB_RES_MAX] = {
        [KB_RES_CPU] = "cpu",
        [KB_RES_MEMORY] = "memory",
        [KB_RES_PODS] = "pods",
        [KB_RES_GPU] = KB_RESOURCE_GPU_NAME,
        [KB_RES_EPHEMERAL_STORAGE] = "ephemeral-storage",
};
static int slots_used = KB_RES_FIRST_EXTENDED;

int kb_resource_slot(const char *name)
{
    if (strcmp(name, KB_RESOURCE_GPU_CLASS) == 0)
        return KB_RES_GPU;
    for (int i = 0; i < slots_used; i++) {
        if (strcmp(slot_names[i], name) == 0)
            return i;
    }
    if (slots_used == KB_RES_MAX)
        return -1;
    /* Interned: the slot table lives as long as the process and names are few. */
    slot_names[slots_used] = (char *)g_intern_string(name);
    return slots_used++;
}

const char *kb_resource_name(int slot)
{
    if (slot < 0 || slot >= slots_used)
        return NULL;
    return slot_names[slot];
}

int kb_resource_count(void)
{
    return slots_used;
}

gboolean kb_resource_is_milli(int slot)
{
    return slot == KB_RES_CPU || slot == KB_RES_GPU;
}

gint64 kb_resource_whole_gpus(gint64 milli)
{
    if (milli <= 0 || milli == KB_RESOURCE_UNLIMITED)
        return milli;
    return milli / KB_GPU_MILLI + (milli % KB_GPU_MILLI != 0);
}

void kb_resources_clear(KbResources *r)
{
    memset(r, 0, sizeof(*r));
}

void kb_resources_set_unlimited(KbResources *r)
{
    for (int i = 0; i < KB_RES_MAX; i++)
        r->v[i] = KB_RESOURCE_UNLIMITED;
}

/* Saturating so that unlimited + x stays unlimited and no sum overflows into UB. */
static gint64 sat_add(gint64 a, gint64 b)
{
    gint64 out;
    if (a == KB_RESOURCE_UNLIMITED || b == KB_RESOURCE_UNLIMITED)
        return KB_RESOURCE_UNLIMITED;
    if (__builtin_add_overflow(a, b, &out))
        return b > 0 ? KB_RESOURCE_UNLIMITED : G_MININT64;
    return out;
}

void kb_resources_add(KbResources *dst, const KbResources *src)
{
    for (int i = 0; i < KB_RES_MAX; i++)
        dst->v[i] = sat_add(dst->v[i], src->v[i]);
}

void kb_resources_sub(KbResources *dst, const KbResources *src)
{
    for (int i = 0; i < KB_RES_MAX; i++) {
        if (dst->v[i] == KB_RESOURCE_UNLIMITED)
            continue;
        dst->v[i] = sat_add(dst->v[i], src->v[i] == G_MININT64 ? G_MAXINT64 : -src->v[i]);
    }
}

void kb_resources_max(KbResources *dst, const KbResources *src)
{
    for (int i = 0; i < KB_RES_MAX; i++) {
        if (src->v[i] > dst->v[i])
            dst->v[i] = src->v[i];
    }
}

int kb_resources_first_short(const KbResources *need, const KbResources *avail)
{
    for (int i = 0; i < KB_RES_MAX; i++) {
        if (need->v[i] > avail->v[i])
            return i;
    }
    return -1;
}

gboolean kb_resources_fit(const KbResources *need, const KbResources *avail)
{
    return kb_resources_first_short(need, avail) == -1;
}

gboolean kb_resources_is_zero(const KbResources *r)
{
    for (int i = 0; i < KB_RES_MAX; i++) {
        if (r->v[i] != 0)
            return FALSE;
    }
    return TRUE;
}

gboolean kb_resources_equal(const KbResources *a, const KbResources *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

char *kb_resource_format_value(int slot, gint64 value)
{
    static const char *const binary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

    if (value == KB_RESOURCE_UNLIMITED)
        return g_strdup("unlimited");
    if (kb_resource_is_milli(slot)) {
        if (value % 1000 == 0)
            return g_strdup_printf("%" G_GINT64_FORMAT, value / 1000);
        /* GPUs read as GPUs: a 1g.10gb slice is 0.142 of one, not 142m */
        if (slot == KB_RES_GPU && value > 0) {
            g_autofree char *frac = g_strdup_printf("%03" G_GINT64_FORMAT, value % 1000);
            for (int i = 2; i > 0 && frac[i] == '0'; i--)
                frac[i] = '\0';
            return g_strdup_printf("%" G_GINT64_FORMAT ".%s", value / 1000, frac);
        }
        return g_strdup_printf("%" G_GINT64_FORMAT "m", value);
    }
    if ((slot == KB_RES_MEMORY || slot == KB_RES_EPHEMERAL_STORAGE) && value != 0) {
        int unit = -1;
        gint64 v = value;
        while (unit < 5 && v % 1024 == 0) {
            v /= 1024;
            unit++;
        }
        if (unit >= 0)
            return g_strdup_printf("%" G_GINT64_FORMAT "%s", v, binary[unit]);
    }
    return g_strdup_printf("%" G_GINT64_FORMAT, value);
}

char *kb_resources_to_string(const KbResources *r)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < slots_used; i++) {
        if (r->v[i] == 0)
            continue;
        g_autofree char *v = kb_resource_format_value(i, r->v[i]);
        g_string_append_printf(s, "%s%s=%s", s->len > 0 ? ", " : "", slot_names[i], v);
    }
    return g_string_free(s, FALSE);
}
