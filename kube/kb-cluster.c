/* PriorityClass and Lease decoding; see kb-objects.h. */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"

static gboolean priority_class_body(json_object *obj, KbPriorityClass *pc, GError **error)
{
    gint64 value = 0;
    const char *policy;
    /* value, globalDefault and preemptionPolicy are top-level fields, not under spec. */
    if (!kb_decode_int(obj, "value", G_MININT32, G_MAXINT32, &value, NULL, error) ||
        !kb_decode_bool(obj, "globalDefault", &pc->global_default, error) ||
        !kb_decode_string(obj, "preemptionPolicy", KB_MAX_NAME_LEN, &policy, error))
        return FALSE;
    pc->value = (gint32)value;
    pc->preempt_never = policy != NULL && strcmp(policy, "Never") == 0;
    return TRUE;
}

KbPriorityClass *kb_priority_class_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbPriorityClass) pc = g_new0(KbPriorityClass, 1);
    if (!kb_meta_decode(obj, KB_KIND_PRIORITY_CLASS, keep_raw, &pc->meta, error) ||
        !priority_class_body(obj, pc, error)) {
        kb_decode_prefix_object(error, "priorityclass", &pc->meta);
        return NULL;
    }
    return g_steal_pointer(&pc);
}

static gboolean decode_micro_time(json_object *spec, const char *key, gint64 *out, GError **error)
{
    const char *s;
    if (!kb_decode_string(spec, key, 64, &s, error))
        return FALSE;
    if (s != NULL && !kb_micro_time_parse(s, out)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: invalid time \"%s\"", key, s);
        return FALSE;
    }
    return TRUE;
}

static gboolean lease_spec(json_object *spec, KbLease *lease, GError **error)
{
    const char *holder;
    gint64 duration = 0, transitions = 0;
    if (!kb_decode_string(spec, "holderIdentity", KB_MAX_NAME_LEN, &holder, error) ||
        !kb_decode_int(spec, "leaseDurationSeconds", 0, G_MAXINT32, &duration, NULL, error) ||
        !kb_decode_int(spec, "leaseTransitions", 0, G_MAXINT32, &transitions, NULL, error) ||
        !decode_micro_time(spec, "acquireTime", &lease->acquire_time_us, error) ||
        !decode_micro_time(spec, "renewTime", &lease->renew_time_us, error))
        return FALSE;
    lease->holder_identity = g_strdup(holder);
    lease->lease_duration_seconds = (gint32)duration;
    lease->lease_transitions = (gint32)transitions;
    return TRUE;
}

static gboolean lease_body(json_object *obj, KbLease *lease, GError **error)
{
    json_object *spec;
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error))
        return FALSE;
    if (spec != NULL && !lease_spec(spec, lease, error)) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    return TRUE;
}

KbLease *kb_lease_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbLease) lease = g_new0(KbLease, 1);
    if (!kb_meta_decode(obj, KB_KIND_LEASE, keep_raw, &lease->meta, error) ||
        !lease_body(obj, lease, error)) {
        kb_decode_prefix_object(error, "lease", &lease->meta);
        return NULL;
    }
    return g_steal_pointer(&lease);
}

/* ---- PersistentVolumeClaim ------------------------------------------------------------------ */

static gboolean pvc_body(json_object *obj, KbPvc *pvc, GError **error)
{
    json_object *spec = NULL, *status = NULL;
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        !kb_decode_member(obj, "status", json_type_object, &status, error))
        return FALSE;
    if (spec != NULL &&
        !kb_decode_interned(spec, "volumeName", KB_MAX_NAME_LEN, TRUE, &pvc->volume_name, error)) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    if (status != NULL &&
        !kb_decode_interned(status, "phase", KB_MAX_NAME_LEN, TRUE, &pvc->phase, error)) {
        g_prefix_error(error, "status.");
        return FALSE;
    }
    return TRUE;
}

KbPvc *kb_pvc_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbPvc) pvc = g_new0(KbPvc, 1);
    if (!kb_meta_decode(obj, KB_KIND_PVC, keep_raw, &pvc->meta, error) ||
        !pvc_body(obj, pvc, error)) {
        kb_decode_prefix_object(error, "persistentvolumeclaim", &pvc->meta);
        return NULL;
    }
    return g_steal_pointer(&pvc);
}
