/* Table rendering for kubectl get (see kas-table.h). */
#include "testbed/apiserver/kas-table.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"

typedef struct {
    const char *name;
    const char *type;
    const char *format;
    int priority;
    const char *description;
} Col;

static const Col col_name = { "Name", "string", "name", 0,
                              "Name must be unique within a namespace." };
static const Col col_age = { "Age", "string", "", 0,
                             "CreationTimestamp is a timestamp representing the server time when "
                             "this object was created." };

static const Col pod_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Ready", "string", "", 0, "The aggregate readiness state of this pod for accepting traffic." },
    { "Status", "string", "", 0, "The aggregate status of the containers in this pod." },
    { "Restarts", "string", "", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted." },
    { "Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
    { "IP", "string", "", 1, "IP address allocated to the pod. Routable at least within the cluster." },
    { "Node", "string", "", 1, "NodeName is a request to schedule this pod onto a specific node." },
    { "Nominated Node", "string", "", 1, "nominatedNodeName is set only when this pod preempts other pods on the node." },
    { "Readiness Gates", "string", "", 1, "If specified, all readiness gates will be evaluated for pod readiness." },
};

static const Col node_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Status", "string", "", 0, "The status of the node" },
    { "Roles", "string", "", 0, "The roles of the node" },
    { "Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
    { "Version", "string", "", 0, "Kubelet Version reported by the node." },
    { "Internal-IP", "string", "", 1, "List of addresses reachable to the node. Queried from cloud provider, if available." },
    { "External-IP", "string", "", 1, "List of addresses reachable to the node. Queried from cloud provider, if available." },
    { "OS-Image", "string", "", 1, "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))." },
    { "Kernel-Version", "string", "", 1, "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)." },
    { "Container-Runtime", "string", "", 1, "Container runtime version reported by the node through runtime remote API (e.g. containerd://1.4.2)." },
};

static const Col ns_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Status", "string", "", 0, "The status of the namespace" },
    { "Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
};

static const Col svc_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Type", "string", "", 0, "type determines how the Service is exposed." },
    { "Cluster-IP", "string", "", 0, "clusterIP is the IP address of the service." },
    { "External-IP", "string", "", 0, "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service." },
    { "Port(s)", "string", "", 0, "The list of ports that are exposed by this service." },
    { "Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
    { "Selector", "string", "", 1, "Route service traffic to pods with label keys and values matching this selector." },
};

static const Col event_cols[] = {
    { "Last Seen", "string", "", 0, "Time when last event occurred" },
    { "Type", "string", "", 0, "Type of this event (Normal, Warning)" },
    { "Reason", "string", "", 0, "Why the action was taken." },
    { "Object", "string", "", 0, "The object this Event is about" },
    { "Message", "string", "", 0, "A human-readable description of the status of this operation." },
};

static const Col pc_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Value", "integer", "", 0, "The integer value of this priority class." },
    { "Global-Default", "boolean", "", 0, "globalDefault specifies whether this PriorityClass should be considered as the default priority." },
    { "Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
};

static const Col lease_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Holder", "string", "", 0, "The holder of the lease" },
    { "Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
};

static const Col crd_cols[] = {
    { "Name", "string", "name", 0, "Name must be unique within a namespace." },
    { "Created At", "date", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created." },
};

static json_object *col_json(const Col *c)
{
    json_object *o = json_object_new_object();
    kas_json_set_string(o, "name", c->name);
    kas_json_set_string(o, "type", c->type);
    kas_json_set_string(o, "format", c->format);
    kas_json_set_string(o, "description", c->description);
    json_object_object_add(o, "priority", json_object_new_int(c->priority));
    return o;
}

static const Col *builtin_cols(const KasRes *res, gsize *n)
{
#define RET(a) (*n = G_N_ELEMENTS(a), a)
    switch (res->kind) {
    case KAS_KIND_POD:
        return RET(pod_cols);
    case KAS_KIND_NODE:
        return RET(node_cols);
    case KAS_KIND_NAMESPACE:
        return RET(ns_cols);
    case KAS_KIND_SERVICE:
        return RET(svc_cols);
    case KAS_KIND_EVENT:
        return RET(event_cols);
    case KAS_KIND_CRD:
        return RET(crd_cols);
    default:
        break;
    }
    if (strcmp(res->plural, "priorityclasses") == 0)
        return RET(pc_cols);
    if (strcmp(res->plural, "leases") == 0)
        return RET(lease_cols);
#undef RET
    *n = 0;
    return NULL;
}

json_object *kas_table_columns(const KasRes *res, const char *version)
{
    json_object *arr = json_object_new_array();
    gsize n = 0;
    const Col *cols = builtin_cols(res, &n);
    if (cols != NULL) {
        for (gsize i = 0; i < n; i++)
            json_object_array_add(arr, col_json(&cols[i]));
        return arr;
    }
    json_object *pcs = res->kind == KAS_KIND_CUSTOM ? kas_res_printer_columns(res, version) : NULL;
    json_object_array_add(arr, col_json(&col_name));
    if (!json_object_is_type(pcs, json_type_array) || json_object_array_length(pcs) == 0) {
        json_object_array_add(arr, col_json(&col_age));
        return arr;
    }
    for (gsize i = 0; i < json_object_array_length(pcs); i++) {
        json_object *pc = json_object_array_get_idx(pcs, i);
        json_object *p = kas_json_get(pc, "priority");
        const char *type = kas_json_get_string(pc, "type");
        Col c = { kas_json_get_string(pc, "name"), type != NULL ? type : "string",
                  kas_json_get_string(pc, "format"), p != NULL ? json_object_get_int(p) : 0,
                  kas_json_get_string(pc, "description") };
        if (c.name == NULL)
            continue;
        if (c.format == NULL)
            c.format = "";
        if (c.description == NULL)
            c.description = "Custom resource definition column (in JSONPath format): ";
        json_object_array_add(arr, col_json(&c));
    }
    return arr;
}

/* ---- cells ------------------------------------------------------------------------------------- */

static json_object *str(const char *s)
{
    return json_object_new_string(s != NULL && s[0] != '\0' ? s : "<none>");
}

static json_object *age_cell(json_object *obj, const char *path, gint64 now)
{
    gint64 t = kas_time_parse(kas_json_get_string(obj, path));
    if (t < 0)
        return json_object_new_string("<unknown>");
    g_autofree char *d = kas_human_duration(now - t);
    return json_object_new_string(d);
}

static char *pod_status(json_object *pod)
{
    const char *reason = kas_json_get_string(pod, "status.reason");
    g_autofree char *r = g_strdup(reason != NULL ? reason : kas_json_get_string(pod, "status.phase"));
    json_object *cs = kas_json_get(pod, "status.containerStatuses");
    for (gsize i = 0; reason == NULL && json_object_is_type(cs, json_type_array) &&
                      i < json_object_array_length(cs);
         i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        const char *w = kas_json_get_string(c, "state.waiting.reason");
        json_object *t = kas_json_get(c, "state.terminated");
        if (w != NULL && w[0] != '\0') {
            g_free(r);
            r = g_strdup(w);
        } else if (t != NULL) {
            const char *tr = kas_json_get_string(t, "reason");
            g_free(r);
            if (tr != NULL && tr[0] != '\0')
                r = g_strdup(tr);
            else if (json_object_get_int(kas_json_get(t, "signal")) != 0)
                r = g_strdup_printf("Signal:%d", json_object_get_int(kas_json_get(t, "signal")));
            else
                r = g_strdup_printf("ExitCode:%d", json_object_get_int(kas_json_get(t, "exitCode")));
        }
    }
    if (kas_json_get_string(pod, "metadata.deletionTimestamp") != NULL) {
        g_free(r);
        r = g_strdup("Terminating");
    }
    return g_steal_pointer(&r);
}

static void pod_cells(json_object *cells, json_object *pod, gint64 now)
{
    json_object *cs = kas_json_get(pod, "status.containerStatuses");
    json_object *containers = kas_json_get(pod, "spec.containers");
    gsize total = json_object_is_type(containers, json_type_array) ? json_object_array_length(containers) : 0;
    gsize ready = 0;
    gint64 restarts = 0, last_restart = -1;
    for (gsize i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        if (json_object_get_boolean(kas_json_get(c, "ready")))
            ready++;
        restarts += json_object_get_int64(kas_json_get(c, "restartCount"));
        gint64 fin = kas_time_parse(kas_json_get_string(c, "lastState.terminated.finishedAt"));
        last_restart = MAX(last_restart, fin);
    }
    g_autofree char *rd = g_strdup_printf("%zu/%zu", ready, total);
    g_autofree char *status = pod_status(pod);
    g_autofree char *rs = NULL;
    if (restarts > 0 && last_restart >= 0) {
        g_autofree char *ago = kas_human_duration(now - last_restart);
        rs = g_strdup_printf("%" G_GINT64_FORMAT " (%s ago)", restarts, ago);
    } else {
        rs = g_strdup_printf("%" G_GINT64_FORMAT, restarts);
    }
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(pod, "metadata.name")));
    json_object_array_add(cells, json_object_new_string(rd));
    json_object_array_add(cells, json_object_new_string(status != NULL ? status : ""));
    json_object_array_add(cells, json_object_new_string(rs));
    json_object_array_add(cells, age_cell(pod, "metadata.creationTimestamp", now));
    json_object_array_add(cells, str(kas_json_get_string(pod, "status.podIP")));
    json_object_array_add(cells, str(kas_json_get_string(pod, "spec.nodeName")));
    json_object_array_add(cells, str(kas_json_get_string(pod, "status.nominatedNodeName")));
    json_object_array_add(cells, str(NULL));
}

static const char *node_address(json_object *node, const char *type)
{
    json_object *as = kas_json_get(node, "status.addresses");
    for (gsize i = 0; json_object_is_type(as, json_type_array) && i < json_object_array_length(as); i++) {
        json_object *a = json_object_array_get_idx(as, i);
        if (g_strcmp0(kas_json_get_string(a, "type"), type) == 0)
            return kas_json_get_string(a, "address");
    }
    return NULL;
}

static void node_cells(json_object *cells, json_object *node, gint64 now)
{
    const char *ready = NULL;
    json_object *conds = kas_json_get(node, "status.conditions");
    for (gsize i = 0; json_object_is_type(conds, json_type_array) && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), "Ready") == 0)
            ready = kas_json_get_string(c, "status");
    }
    GString *st = g_string_new(ready == NULL ? "Unknown"
                               : strcmp(ready, "True") == 0 ? "Ready"
                               : strcmp(ready, "False") == 0 ? "NotReady" : "Unknown");
    if (json_object_get_boolean(kas_json_get(node, "spec.unschedulable")))
        g_string_append(st, ",SchedulingDisabled");
    GString *roles = g_string_new(NULL);
    json_object *labels = kas_json_get(node, "metadata.labels");
    if (json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, k, v)
        {
            (void)v;
            if (g_str_has_prefix(k, "node-role.kubernetes.io/") && k[24] != '\0')
                g_string_append_printf(roles, "%s%s", roles->len > 0 ? "," : "", k + 24);
        }
    }
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(node, "metadata.name")));
    json_object_array_add(cells, json_object_new_string(st->str));
    json_object_array_add(cells, str(roles->str));
    json_object_array_add(cells, age_cell(node, "metadata.creationTimestamp", now));
    json_object_array_add(cells, json_object_new_string(
                                     kas_json_get_string(node, "status.nodeInfo.kubeletVersion") ?: ""));
    json_object_array_add(cells, str(node_address(node, "InternalIP")));
    json_object_array_add(cells, str(node_address(node, "ExternalIP")));
    json_object_array_add(cells, str(kas_json_get_string(node, "status.nodeInfo.osImage")));
    json_object_array_add(cells, str(kas_json_get_string(node, "status.nodeInfo.kernelVersion")));
    json_object_array_add(cells, str(kas_json_get_string(node, "status.nodeInfo.containerRuntimeVersion")));
    g_string_free(st, TRUE);
    g_string_free(roles, TRUE);
}

static void service_cells(json_object *cells, json_object *svc, gint64 now)
{
    GString *ports = g_string_new(NULL);
    json_object *ps = kas_json_get(svc, "spec.ports");
    for (gsize i = 0; json_object_is_type(ps, json_type_array) && i < json_object_array_length(ps); i++) {
        json_object *p = json_object_array_get_idx(ps, i);
        const char *proto = kas_json_get_string(p, "protocol");
        g_string_append_printf(ports, "%s%d/%s", i > 0 ? "," : "",
                               json_object_get_int(kas_json_get(p, "port")), proto != NULL ? proto : "TCP");
    }
    GString *sel = g_string_new(NULL);
    json_object *s = kas_json_get(svc, "spec.selector");
    if (json_object_is_type(s, json_type_object)) {
        json_object_object_foreach(s, k, v)
        {
            g_string_append_printf(sel, "%s%s=%s", sel->len > 0 ? "," : "", k, json_object_get_string(v));
        }
    }
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(svc, "metadata.name")));
    json_object_array_add(cells, str(kas_json_get_string(svc, "spec.type")));
    json_object_array_add(cells, str(kas_json_get_string(svc, "spec.clusterIP")));
    json_object_array_add(cells, str(NULL));
    json_object_array_add(cells, str(ports->str));
    json_object_array_add(cells, age_cell(svc, "metadata.creationTimestamp", now));
    json_object_array_add(cells, str(sel->str));
    g_string_free(ports, TRUE);
    g_string_free(sel, TRUE);
}

static void event_cells(json_object *cells, json_object *ev, gint64 now)
{
    const char *last = kas_json_get_string(ev, "lastTimestamp");
    if (last == NULL)
        last = kas_json_get_string(ev, "eventTime");
    gint64 t = kas_time_parse(last);
    g_autofree char *ago = t >= 0 ? kas_human_duration(now - t) : g_strdup("<unknown>");
    g_autofree char *kind = g_ascii_strdown(kas_json_get_string(ev, "involvedObject.kind") ?: "", -1);
    g_autofree char *obj = g_strdup_printf("%s/%s", kind,
                                           kas_json_get_string(ev, "involvedObject.name") ?: "");
    json_object_array_add(cells, json_object_new_string(ago));
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(ev, "type") ?: ""));
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(ev, "reason") ?: ""));
    json_object_array_add(cells, json_object_new_string(obj));
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(ev, "message") ?: ""));
}

static json_object *path_cell(json_object *obj, const char *path, const char *type, gint64 now)
{
    g_autoptr(GPtrArray) vals = kas_jsonpath_eval(obj, path);
    if (vals->len == 0)
        return NULL;
    json_object *v = g_ptr_array_index(vals, 0);
    if (type != NULL && strcmp(type, "date") == 0 && json_object_is_type(v, json_type_string)) {
        gint64 t = kas_time_parse(json_object_get_string(v));
        if (t >= 0) {
            g_autofree char *d = kas_human_duration(now - t);
            return json_object_new_string(d);
        }
    }
    if (vals->len == 1 || json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array))
        return json_object_get(v);
    GString *joined = g_string_new(NULL);
    for (guint i = 0; i < vals->len; i++)
        g_string_append_printf(joined, "%s%s", i > 0 ? "," : "",
                               json_object_get_string(g_ptr_array_index(vals, i)));
    json_object *out = json_object_new_string_len(joined->str, (int)joined->len);
    g_string_free(joined, TRUE);
    return out;
}

static void custom_cells(json_object *cells, const KasRes *res, const char *version, json_object *obj,
                         gint64 now)
{
    json_object_array_add(cells, json_object_new_string(kas_json_get_string(obj, "metadata.name")));
    json_object *pcs = res->kind == KAS_KIND_CUSTOM ? kas_res_printer_columns(res, version) : NULL;
    if (!json_object_is_type(pcs, json_type_array) || json_object_array_length(pcs) == 0) {
        json_object_array_add(cells, age_cell(obj, "metadata.creationTimestamp", now));
        return;
    }
    for (gsize i = 0; i < json_object_array_length(pcs); i++) {
        json_object *pc = json_object_array_get_idx(pcs, i);
        const char *path = kas_json_get_string(pc, "jsonPath");
        if (kas_json_get_string(pc, "name") == NULL)
            continue;
        json_object_array_add(cells, path != NULL ? path_cell(obj, path, kas_json_get_string(pc, "type"), now)
                                                  : NULL);
    }
}

static json_object *partial_metadata(json_object *obj)
{
    json_object *o = json_object_new_object();
    kas_json_set_string(o, "kind", "PartialObjectMetadata");
    kas_json_set_string(o, "apiVersion", "meta.k8s.io/v1");
    json_object *meta = kas_json_get(obj, "metadata");
    json_object_object_add(o, "metadata", meta != NULL ? json_object_get(meta) : json_object_new_object());
    return o;
}

json_object *kas_table_row(const KasRes *res, const char *version, json_object *obj,
                           KasTableInclude include, gint64 now)
{
    json_object *row = json_object_new_object();
    json_object *cells = json_object_new_array();
    switch (res->kind) {
    case KAS_KIND_POD:
        pod_cells(cells, obj, now);
        break;
    case KAS_KIND_NODE:
        node_cells(cells, obj, now);
        break;
    case KAS_KIND_SERVICE:
        service_cells(cells, obj, now);
        break;
    case KAS_KIND_EVENT:
        event_cells(cells, obj, now);
        break;
    case KAS_KIND_NAMESPACE:
        json_object_array_add(cells, json_object_new_string(kas_json_get_string(obj, "metadata.name")));
        json_object_array_add(cells, json_object_new_string(kas_json_get_string(obj, "status.phase") ?: ""));
        json_object_array_add(cells, age_cell(obj, "metadata.creationTimestamp", now));
        break;
    case KAS_KIND_CRD:
        json_object_array_add(cells, json_object_new_string(kas_json_get_string(obj, "metadata.name")));
        json_object_array_add(cells, json_object_new_string(
                                         kas_json_get_string(obj, "metadata.creationTimestamp") ?: ""));
        break;
    default:
        if (strcmp(res->plural, "priorityclasses") == 0) {
            json_object_array_add(cells, json_object_new_string(kas_json_get_string(obj, "metadata.name")));
            json_object_array_add(cells, json_object_get(kas_json_get(obj, "value")));
            json_object_array_add(cells, json_object_new_boolean(
                                             json_object_get_boolean(kas_json_get(obj, "globalDefault"))));
            json_object_array_add(cells, age_cell(obj, "metadata.creationTimestamp", now));
        } else if (strcmp(res->plural, "leases") == 0) {
            json_object_array_add(cells, json_object_new_string(kas_json_get_string(obj, "metadata.name")));
            json_object_array_add(cells, json_object_new_string(
                                             kas_json_get_string(obj, "spec.holderIdentity") ?: ""));
            json_object_array_add(cells, age_cell(obj, "metadata.creationTimestamp", now));
        } else {
            custom_cells(cells, res, version, obj, now);
        }
        break;
    }
    json_object_object_add(row, "cells", cells);
    if (include == KAS_TABLE_OBJECT_METADATA)
        json_object_object_add(row, "object", partial_metadata(obj));
    else if (include == KAS_TABLE_OBJECT_FULL)
        json_object_object_add(row, "object", json_object_get(obj));
    return row;
}

char *kas_table_render(const KasRes *res, const char *version, GPtrArray *objs, guint64 rv,
                       const char *continue_token, KasTableInclude include)
{
    json_object *t = json_object_new_object();
    kas_json_set_string(t, "kind", "Table");
    kas_json_set_string(t, "apiVersion", "meta.k8s.io/v1");
    json_object *meta = json_object_new_object();
    char rvbuf[32];
    g_snprintf(rvbuf, sizeof rvbuf, "%" G_GUINT64_FORMAT, rv);
    kas_json_set_string(meta, "resourceVersion", rvbuf);
    if (continue_token != NULL)
        kas_json_set_string(meta, "continue", continue_token);
    json_object_object_add(t, "metadata", meta);
    json_object_object_add(t, "columnDefinitions", kas_table_columns(res, version));
    json_object *rows = json_object_new_array();
    gint64 now = g_get_real_time() / G_USEC_PER_SEC;
    g_autofree char *av = kas_res_api_version(res, version);
    for (guint i = 0; i < objs->len; i++) {
        KasObj *o = g_ptr_array_index(objs, i);
        json_object *j = kas_obj_parse(o);
        kas_json_set_string(j, "apiVersion", av);
        json_object_array_add(rows, kas_table_row(res, version, j, include, now));
        json_object_put(j);
    }
    json_object_object_add(t, "rows", rows);
    char *out = kas_json_dump(t);
    json_object_put(t);
    return out;
}
