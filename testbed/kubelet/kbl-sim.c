/* The simulated kubelet's rules (see kbl-sim.h). */
#include "testbed/kubelet/kbl-sim.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"

static void set_condition(json_object *status, const char *type, const char *value,
                          const char *reason, const char *now)
{
    json_object *conds = kas_json_get(status, "conditions");
    if (!json_object_is_type(conds, json_type_array)) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    json_object *c = NULL;
    for (gsize i = 0; i < json_object_array_length(conds) && c == NULL; i++)
        if (g_strcmp0(kas_json_get_string(json_object_array_get_idx(conds, i), "type"), type) == 0)
            c = json_object_array_get_idx(conds, i);
    if (c == NULL) {
        c = json_object_new_object();
        kas_json_set_string(c, "type", type);
        json_object_array_add(conds, c);
    }
    if (g_strcmp0(kas_json_get_string(c, "status"), value) != 0)
        kas_json_set_string(c, "lastTransitionTime", now);
    kas_json_set_string(c, "status", value);
    json_object_object_add(c, "lastProbeTime", NULL);
    if (reason != NULL)
        kas_json_set_string(c, "reason", reason);
    else
        json_object_object_del(c, "reason");
}

void kbl_sim_read_run(json_object *pod, KblSimRun *out)
{
    const char *run = NULL, *code = NULL;
    json_object *ann = kas_json_get(pod, "metadata.annotations"), *v;
    /* The keys contain dots: look them up directly rather than by dotted path. */
    if (json_object_is_type(ann, json_type_object)) {
        if (json_object_object_get_ex(ann, KBL_SIM_RUN_SECONDS, &v))
            run = json_object_get_string(v);
        if (json_object_object_get_ex(ann, KBL_SIM_EXIT_CODE, &v))
            code = json_object_get_string(v);
    }
    out->run_ms = -1;
    out->exit_code = code != NULL ? (int)g_ascii_strtoll(code, NULL, 10) : 0;
    if (run != NULL)
        out->run_ms = (gint64)(g_ascii_strtod(run, NULL) * 1000);
    else if (code != NULL)
        out->run_ms = 0;
    if (out->run_ms < -1)
        out->run_ms = 0;
}

static json_object *container_status(json_object *c, const char *uid, const char *now)
{
    json_object *cs = json_object_new_object();
    const char *name = kas_json_get_string(c, "name");
    const char *image = kas_json_get_string(c, "image");
    kas_json_set_string(cs, "name", name != NULL ? name : "");
    kas_json_set_string(cs, "image", image != NULL ? image : "");
    g_autofree char *image_id = g_strdup_printf("sim://%s", image != NULL ? image : "");
    kas_json_set_string(cs, "imageID", image_id);
    g_autofree char *cid =
            g_strdup_printf("sim://%s-%s", uid != NULL ? uid : "", name != NULL ? name : "");
    kas_json_set_string(cs, "containerID", cid);
    json_object_object_add(cs, "ready", json_object_new_boolean(TRUE));
    json_object_object_add(cs, "started", json_object_new_boolean(TRUE));
    json_object_object_add(cs, "restartCount", json_object_new_int(0));
    json_object *state = json_object_new_object();
    json_object *running = json_object_new_object();
    kas_json_set_string(running, "startedAt", now);
    json_object_object_add(state, "running", running);
    json_object_object_add(cs, "state", state);
    json_object_object_add(cs, "lastState", json_object_new_object());
    return cs;
}

gboolean kbl_sim_pod_start(json_object *pod, const char *host_ip, const char *pod_ip, gint64 now)
{
    const char *node = kas_json_get_string(pod, "spec.nodeName");
    const char *phase = kas_json_get_string(pod, "status.phase");
    if (kas_json_get_string(pod, "metadata.deletionTimestamp") != NULL || node == NULL ||
        node[0] == '\0' || (phase != NULL && strcmp(phase, "Pending") != 0))
        return FALSE;
    g_autofree char *t = kas_time_format(now);
    json_object *status = kas_json_ensure_object(pod, "status");
    kas_json_set_string(status, "phase", "Running");
    kas_json_set_string(status, "hostIP", host_ip);
    kas_json_set_string(status, "podIP", pod_ip);
    json_object *ips = json_object_new_array(), *ipo = json_object_new_object();
    kas_json_set_string(ipo, "ip", pod_ip);
    json_object_array_add(ips, ipo);
    json_object_object_add(status, "podIPs", ips);
    kas_json_set_string(status, "startTime", t);
    static const char *const conds[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                        "ContainersReady", "PodScheduled"};
    for (guint i = 0; i < G_N_ELEMENTS(conds); i++)
        set_condition(status, conds[i], "True", NULL, t);
    json_object *statuses = json_object_new_array();
    json_object *cs = kas_json_get(pod, "spec.containers");
    const char *uid = kas_json_get_string(pod, "metadata.uid");
    for (gsize i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs);
         i++)
        json_object_array_add(statuses, container_status(json_object_array_get_idx(cs, i), uid, t));
    json_object_object_add(status, "containerStatuses", statuses);
    return TRUE;
}

static json_object *terminated(json_object *cs, int code, const char *now)
{
    json_object *t = json_object_new_object();
    json_object_object_add(t, "exitCode", json_object_new_int(code));
    kas_json_set_string(t, "reason", code == 0 ? "Completed" : "Error");
    const char *started = kas_json_get_string(cs, "state.running.startedAt");
    kas_json_set_string(t, "startedAt", started != NULL ? started : now);
    kas_json_set_string(t, "finishedAt", now);
    const char *cid = kas_json_get_string(cs, "containerID");
    if (cid != NULL)
        kas_json_set_string(t, "containerID", cid);
    return t;
}

gboolean kbl_sim_pod_finish(json_object *pod, int code, gint64 now, gboolean *restarted)
{
    *restarted = FALSE;
    if (kas_json_get_string(pod, "metadata.deletionTimestamp") != NULL ||
        g_strcmp0(kas_json_get_string(pod, "status.phase"), "Running") != 0)
        return FALSE;
    const char *rp = kas_json_get_string(pod, "spec.restartPolicy");
    gboolean restart =
            rp == NULL || strcmp(rp, "Always") == 0 || (strcmp(rp, "OnFailure") == 0 && code != 0);
    g_autofree char *t = kas_time_format(now);
    json_object *status = kas_json_ensure_object(pod, "status");
    json_object *statuses = kas_json_get(status, "containerStatuses");
    for (gsize i = 0;
         json_object_is_type(statuses, json_type_array) && i < json_object_array_length(statuses);
         i++) {
        json_object *cs = json_object_array_get_idx(statuses, i);
        json_object *term = terminated(cs, code, t);
        json_object *state = json_object_new_object();
        if (restart) {
            json_object *last = json_object_new_object();
            json_object_object_add(last, "terminated", term);
            json_object_object_add(cs, "lastState", last);
            json_object *running = json_object_new_object();
            kas_json_set_string(running, "startedAt", t);
            json_object_object_add(state, "running", running);
            json_object_object_add(
                    cs, "restartCount",
                    json_object_new_int(json_object_get_int(kas_json_get(cs, "restartCount")) + 1));
        } else {
            json_object_object_add(state, "terminated", term);
            json_object_object_add(cs, "ready", json_object_new_boolean(FALSE));
            json_object_object_add(cs, "started", json_object_new_boolean(FALSE));
        }
        json_object_object_add(cs, "state", state);
    }
    *restarted = restart;
    if (!restart) {
        kas_json_set_string(status, "phase", code == 0 ? "Succeeded" : "Failed");
        const char *why = code == 0 ? "PodCompleted" : "PodFailed";
        set_condition(status, "Ready", "False", why, t);
        set_condition(status, "ContainersReady", "False", why, t);
        set_condition(status, "PodReadyToStartContainers", "False", NULL, t);
    }
    return TRUE;
}

void kbl_sim_node_ready(json_object *node, const char *ip, gint64 now)
{
    json_object *status = kas_json_ensure_object(node, "status");
    json_object *alloc = kas_json_get(status, "allocatable");
    json_object *cap = kas_json_get(status, "capacity");
    if (alloc == NULL && cap != NULL) {
        json_object_object_add(status, "allocatable", json_object_get(cap));
    } else if (alloc == NULL) {
        alloc = json_object_new_object();
        kas_json_set_string(alloc, "cpu", "8");
        kas_json_set_string(alloc, "memory", "32Gi");
        kas_json_set_string(alloc, "pods", "110");
        json_object_object_add(status, "allocatable", alloc);
    }
    if (kas_json_get(status, "capacity") == NULL)
        json_object_object_add(status, "capacity",
                               json_object_get(kas_json_get(status, "allocatable")));
    g_autofree char *t = kas_time_format(now);
    static const char *const conds[][4] = {
            {"MemoryPressure", "False", "KubeletHasSufficientMemory",
             "kubelet has sufficient memory available"},
            {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
            {"PIDPressure", "False", "KubeletHasSufficientPID",
             "kubelet has sufficient PID available"},
            {"Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated)"},
    };
    json_object *arr = json_object_new_array();
    for (guint i = 0; i < G_N_ELEMENTS(conds); i++) {
        json_object *c = json_object_new_object();
        kas_json_set_string(c, "type", conds[i][0]);
        kas_json_set_string(c, "status", conds[i][1]);
        kas_json_set_string(c, "lastHeartbeatTime", t);
        kas_json_set_string(c, "lastTransitionTime", t);
        kas_json_set_string(c, "reason", conds[i][2]);
        kas_json_set_string(c, "message", conds[i][3]);
        json_object_array_add(arr, c);
    }
    json_object_object_add(status, "conditions", arr);
    if (kas_json_get(status, "addresses") == NULL) {
        json_object *as = json_object_new_array(), *a = json_object_new_object();
        kas_json_set_string(a, "type", "InternalIP");
        kas_json_set_string(a, "address", ip);
        json_object_array_add(as, a);
        a = json_object_new_object();
        kas_json_set_string(a, "type", "Hostname");
        kas_json_set_string(a, "address", kas_json_get_string(node, "metadata.name"));
        json_object_array_add(as, a);
        json_object_object_add(status, "addresses", as);
    }
    json_object *info = kas_json_ensure_object(status, "nodeInfo");
    kas_json_set_string(info, "kubeletVersion", "v1.32.0-sim");
    kas_json_set_string(info, "kubeProxyVersion", "v1.32.0-sim");
    kas_json_set_string(info, "containerRuntimeVersion", "sim://1.0");
    kas_json_set_string(info, "osImage", "kube-batchd simulated node");
    kas_json_set_string(info, "kernelVersion", "0.0.0-sim");
    kas_json_set_string(info, "operatingSystem", "linux");
    kas_json_set_string(info, "architecture", "amd64");
}

const char *kbl_sim_node_ip(json_object *node)
{
    json_object *as = kas_json_get(node, "status.addresses");
    for (gsize i = 0; json_object_is_type(as, json_type_array) && i < json_object_array_length(as);
         i++) {
        json_object *a = json_object_array_get_idx(as, i);
        if (g_strcmp0(kas_json_get_string(a, "type"), "InternalIP") == 0)
            return kas_json_get_string(a, "address");
    }
    return NULL;
}

gboolean kbl_sim_node_not_ready_taint(json_object *node, json_object **rest)
{
    json_object *taints = kas_json_get(node, "spec.taints");
    gboolean found = FALSE;
    if (!json_object_is_type(taints, json_type_array))
        return FALSE;
    json_object *keep = json_object_new_array();
    for (gsize i = 0; i < json_object_array_length(taints); i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        if (g_strcmp0(kas_json_get_string(t, "key"), KBL_SIM_NOT_READY_TAINT) == 0)
            found = TRUE;
        else
            json_object_array_add(keep, json_object_get(t));
    }
    if (found)
        *rest = keep;
    else
        json_object_put(keep);
    return found;
}

char *kbl_sim_micro_time(gint64 now_us)
{
    GDateTime *dt = g_date_time_new_from_unix_utc(now_us / G_USEC_PER_SEC);
    g_autofree char *base = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S");
    g_date_time_unref(dt);
    return g_strdup_printf("%s.%06dZ", base, (int)(now_us % G_USEC_PER_SEC));
}

void kbl_sim_lease_renew(json_object *lease, gint64 now_us)
{
    g_autofree char *when = kbl_sim_micro_time(now_us);
    kas_json_set_string(kas_json_ensure_object(lease, "spec"), "renewTime", when);
}

json_object *kbl_sim_lease_new(const char *node, const char *node_uid, gint64 now_us)
{
    json_object *l = json_object_new_object();
    kas_json_set_string(l, "apiVersion", "coordination.k8s.io/v1");
    kas_json_set_string(l, "kind", "Lease");
    json_object *meta = kas_json_ensure_object(l, "metadata");
    kas_json_set_string(meta, "name", node);
    kas_json_set_string(meta, "namespace", "kube-node-lease");
    if (node_uid != NULL) {
        json_object *refs = json_object_new_array(), *ref = json_object_new_object();
        kas_json_set_string(ref, "apiVersion", "v1");
        kas_json_set_string(ref, "kind", "Node");
        kas_json_set_string(ref, "name", node);
        kas_json_set_string(ref, "uid", node_uid);
        json_object_array_add(refs, ref);
        json_object_object_add(meta, "ownerReferences", refs);
    }
    json_object *spec = kas_json_ensure_object(l, "spec");
    kas_json_set_string(spec, "holderIdentity", node);
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(40));
    kbl_sim_lease_renew(l, now_us);
    return l;
}
