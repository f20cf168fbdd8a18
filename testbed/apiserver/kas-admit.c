/* Defaults and validation of nodes, events, priority classes and budgets (see kas-admit.h). */
#include "testbed/apiserver/kas-admit.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"

static json_object *taints_of(json_object *node)
{
    return kas_json_get(node, "spec.taints");
}

void kas_admit_node_create(json_object *node)
{
    json_object *spec = kas_json_ensure_object(node, "spec");
    json_object *taints = taints_of(node);
    for (gsize i = 0;
         json_object_is_type(taints, json_type_array) && i < json_object_array_length(taints); i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(taints, i), "key"),
                      KAS_TAINT_NOT_READY) == 0)
            goto status;
    if (!json_object_is_type(taints, json_type_array)) {
        taints = json_object_new_array();
        json_object_object_add(spec, "taints", taints);
    }
    json_object *t = json_object_new_object();
    kas_json_set_string(t, "key", KAS_TAINT_NOT_READY);
    kas_json_set_string(t, "effect", "NoSchedule");
    json_object_array_add(taints, t);
status:
    kas_admit_node_status_defaults(node);
}

void kas_admit_node_status_defaults(json_object *node)
{
    /* the fields of NodeStatus that are not omitempty */
    json_object *status = kas_json_ensure_object(node, "status");
    json_object *ep = kas_json_ensure_object(kas_json_ensure_object(status, "daemonEndpoints"),
                                             "kubeletEndpoint");
    if (kas_json_get(ep, "Port") == NULL)
        json_object_object_add(ep, "Port", json_object_new_int(0));
    json_object *info = kas_json_ensure_object(status, "nodeInfo");
    static const char *const keys[] = {"machineID",       "systemUUID",
                                       "bootID",          "kernelVersion",
                                       "osImage",         "containerRuntimeVersion",
                                       "kubeletVersion",  "kubeProxyVersion",
                                       "operatingSystem", "architecture"};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
        if (kas_json_get(info, keys[i]) == NULL)
            kas_json_set_string(info, keys[i], "");
}

gboolean kas_admit_node_needs_untaint(json_object *node)
{
    gboolean ready = FALSE, tainted = FALSE;
    json_object *conds = kas_json_get(node, "status.conditions");
    for (gsize i = 0;
         json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), "Ready") == 0)
            ready = g_strcmp0(kas_json_get_string(c, "status"), "True") == 0;
    }
    json_object *taints = taints_of(node);
    for (gsize i = 0;
         json_object_is_type(taints, json_type_array) && i < json_object_array_length(taints); i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(taints, i), "key"),
                      KAS_TAINT_NOT_READY) == 0)
            tainted = TRUE;
    return ready && tainted;
}

gboolean kas_admit_node_untaint(json_object *node, gpointer unused)
{
    json_object *taints = taints_of(node);
    gboolean removed = FALSE;
    if (!json_object_is_type(taints, json_type_array))
        return FALSE;
    json_object *kept = json_object_new_array();
    for (gsize i = 0; i < json_object_array_length(taints); i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        if (g_strcmp0(kas_json_get_string(t, "key"), KAS_TAINT_NOT_READY) == 0)
            removed = TRUE;
        else
            json_object_array_add(kept, json_object_get(t));
    }
    if (json_object_array_length(kept) > 0)
        json_object_object_add(kas_json_get(node, "spec"), "taints", kept);
    else {
        json_object_put(kept);
        json_object_object_del(kas_json_get(node, "spec"), "taints");
    }
    return removed;
}

static gboolean has_string(json_object *obj, const char *key)
{
    const char *s = kas_json_get_string(obj, key);
    return s != NULL && s[0] != '\0';
}

/* core/v1 Events (legacyValidateEvent of 1.19). */
static gboolean core_event(const KasRes *res, json_object *ev, GError **error)
{
    const char *ns = kas_json_get_string(ev, "metadata.namespace");
    const char *ions = kas_json_get_string(ev, "involvedObject.namespace");
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    gboolean new_style = has_string(ev, "eventTime");
    gboolean mismatch;
    if (!new_style)
        mismatch = ions == NULL || ions[0] == '\0'
                           ? ns != NULL && ns[0] != '\0' && strcmp(ns, "default") != 0
                           : g_strcmp0(ns, ions) != 0;
    else
        mismatch = (ions == NULL || ions[0] == '\0') && g_strcmp0(ns, "kube-system") != 0;
    if (mismatch)
        kas_field_errors_addf(errs, "involvedObject.namespace",
                              "Invalid value: \"%s\": does not match event.namespace",
                              ions != NULL ? ions : "");
    if (new_style && !has_string(ev, "reportingComponent"))
        kas_field_errors_add(errs, "reportingController", "Required value");
    if (!kas_field_errors_check(errs, res, kas_json_get_string(ev, "metadata.name"), error))
        return FALSE;
    static const char *const empty[] = {"reportingComponent", "reportingInstance"};
    for (guint i = 0; i < G_N_ELEMENTS(empty); i++)
        if (kas_json_get(ev, empty[i]) == NULL)
            kas_json_set_string(ev, empty[i], "");
    return TRUE;
}

/* events.k8s.io Events (ValidateEventCreate of 1.19 for the new API). */
static gboolean new_event(const KasRes *res, json_object *ev, GError **error)
{
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    static const char *const required[] = {"eventTime", "reportingController", "reportingInstance",
                                           "action", "reason"};
    for (guint i = 0; i < G_N_ELEMENTS(required); i++)
        if (!has_string(ev, required[i]))
            kas_field_errors_add(errs, required[i], "Required value");
    const char *type = kas_json_get_string(ev, "type");
    if (g_strcmp0(type, "Normal") != 0 && g_strcmp0(type, "Warning") != 0)
        kas_field_errors_addf(errs, "type", "Invalid value: \"\": has invalid value: %s",
                              type != NULL ? type : "");
    const char *note = kas_json_get_string(ev, "note");
    if (note != NULL && strlen(note) > 1024)
        kas_field_errors_add(errs, "note", "Too long: must have at most 1024 bytes");
    if (!kas_field_errors_check(errs, res, kas_json_get_string(ev, "metadata.name"), error))
        return FALSE;
    kas_json_ensure_object(ev, "deprecatedSource");
    return TRUE;
}

gboolean kas_admit_create(const KasRes *res, json_object *obj, GError **error)
{
    if (res->kind == KAS_KIND_EVENT)
        return core_event(res, obj, error);
    if (strcmp(res->group, "events.k8s.io") == 0)
        return new_event(res, obj, error);
    if (strcmp(res->plural, "priorityclasses") == 0) {
        if (!json_object_is_type(kas_json_get(obj, "value"), json_type_int))
            return kas_status_invalid(error, res, kas_json_get_string(obj, "metadata.name"),
                                      "value", "Required value");
        if (kas_json_get(obj, "preemptionPolicy") == NULL)
            kas_json_set_string(obj, "preemptionPolicy", "PreemptLowerPriority");
        return TRUE;
    }
    if (strcmp(res->plural, "poddisruptionbudgets") == 0) {
        /* no disruption controller runs: the budget allows nothing until one would count */
        json_object *st = json_object_new_object();
        static const char *const zero[] = {"disruptionsAllowed", "currentHealthy", "desiredHealthy",
                                           "expectedPods"};
        for (guint i = 0; i < G_N_ELEMENTS(zero); i++)
            json_object_object_add(st, zero[i], json_object_new_int(0));
        json_object_object_add(obj, "status", st);
        return TRUE;
    }
    return TRUE;
}
