/*
 * Extender mode: kube-batchd's decisions for kube-scheduler's extender calls (filter, prioritize,
 * bind, preempt), taken from the same gang plan as the secondary scheduler. No I/O here: the
 * HTTP side is scheduler/extender-server.c, the wire format kube/kb-extender-codec.h.
 *
 * Which pods: those of schedulerNames kube-batchd does not serve that ask for nvidia.com/gpu or
 * name a group ("managed"; kb_cache_extender_manages). Every other pod passes through: all nodes
 * pass, every score is 0, and bind is refused (kube-scheduler's managedResources keeps them from
 * calling it).
 *
 * The plan: the cache holds managed pods as tasks (kb_cache_set_extender), so the ordinary cycle
 * (kb_cycle_run with the configured actions and plugins: queues, priorities, predicates,
 * gpu-topology, gang) places them together with the secondary scheduler's pods. After every cycle
 * the caller hands the result to kb_extender_take_placements(), which keeps the placements of
 * managed pods as reservations (the tasks stay ALLOCATED, holding their node resources and GPU
 * indices) instead of binding them. A gang is only ever placed whole (the statement commits at
 * minMember), so a reservation exists only for a gang that fits.
 *
 *   filter      a managed pod passes only onto its reserved node. Without a reservation the
 *               extender runs a plan now (the plan function, unless a cycle looked at the job less
 *               than KB_EXTENDER_REPLAN_MS ago); still none: every node fails with the gang's
 *               reason, the message of its PodGroup condition.
 *   prioritize  the reserved node scores 10, others 0..10 by GPU topology (the pod's GPUs fit in
 *               one NVLink island) and packing (the node's fill after the pod).
 *   bind        for a pod with ResourceClaims first the claim writes kube-scheduler's DRA plugin
 *               did not make (see "DRA" below), then
 *               a Binding carrying kube-batchd.io/gpu-ids in metadata.annotations (one write),
 *               only for a managed pending pod onto its reserved node or one that admits it now
 *               (kb_extender_bind_begin): the port may be reached by more than kube-scheduler.
 *               kube-scheduler's choice wins: bound elsewhere than reserved (a node that admits
 *               the pod), the reservation moves to that node. A failed bind releases the pod
 * (kube-scheduler forgets it too); the gang's other reservations stay (kube-scheduler may hold them
 * assumed). preempt     per candidate node, the proposed victims widened to whole gangs; a node is
 * kept only when every victim gang lies wholly on it, is of lower priority, and the preemptor's
 * whole gang then fits (resources on Ready, schedulable nodes); else the answer names no node.
 *
 * Reservations expire: a gang whose reservations are not all bound within the reservation TTL
 * has the rest released (the next cycle plans it again). Members already bound stay where they
 * are (a binding cannot be undone); the next plan counts them and reserves the rest again.
 *
 * Requeue: kube-scheduler parks a pod that filter failed on every node as unschedulable and does
 * not ask again on its own until its periodic flush (60 s in 1.20, 5 min in later ones): a gang
 * created pod by pod would wait that long after its last member. What moves a parked pod back
 * (kubernetes pkg/scheduler/internal/queue/scheduling_queue.go, PriorityQueue.Update):
 *   1.20-1.27, and later with the SchedulerQueueingHints gate off: an update of the pod that
 *     isPodUpdated() sees (anything but status, resourceVersion, generation) moves it from the
 *     unschedulable queue (or the backoff queue) straight to the active queue; an update while
 *     it is being scheduled puts it in the active queue too.
 *   1.28+ with queueing hints (on by default since 1.32): the update is the event
 *     UnscheduledPodUpdate (PodSchedulingPropertiesChange finds no label, toleration, gate or
 *     scale-down change in an annotation, so the general Pod/Update); isPodWorthRequeuing
 *     requeues (after the pod's backoff, 1 s for a first failure) when no in-tree plugin took
 *     part in the rejection, which is the case when only the extender failed the nodes; an
 *     update that arrives while the pod is in flight is kept and replayed when it is rejected.
 *     (If an in-tree plugin also rejected some nodes, only that plugin's hints decide, and most
 *     ignore a general pod update: such a pod waits for the node or pod events of that plugin.)
 * So the least that works is one metadata write per parked member once its gang has a plan:
 * kb_extender_take_requeues() lists them, the caller PATCHes KB_EXTENDER_REQUEUE_ANNOTATION.
 * A member is listed at most once per plan of its gang, and only when kube-scheduler asked about
 * it and got no node it could take (filter failed, or a plan it saw expired, or its bind failed);
 * a member whose first filter call already finds the plan costs no write.
 */
#pragma once

#include <glib.h>

#include "kube/kb-extender-codec.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/dra.h"

#define KB_EXTENDER_DEFAULT_RESERVATION_TTL_S 60
/* Written on a parked pod when its gang's plan is made: the time of the plan (RFC 3339). */
#define KB_EXTENDER_REQUEUE_ANNOTATION "kube-batchd.io/gang-planned"
/* A job a cycle looked at less than this ago is not planned again by a filter call. */
#define KB_EXTENDER_REPLAN_MS 500

typedef struct KbExtender KbExtender;

/* Run a scheduling cycle now and pass its result to kb_extender_take_placements(); FALSE when
 * no cycle may run (not leading, caches not synced). */
typedef gboolean (*KbExtenderPlanFunc)(gpointer user_data);

/*
 * An extender over @cache (borrowed; kb_cache_set_extender is called here) planning with @conf
 * (borrowed). Without a plan function it runs kb_cycle_run itself at the time given to the call
 * (tests and benchmarks: the cycle's placements of served pods are then dropped).
 */
KbExtender *kb_extender_new(KbCache *cache, const KbConf *conf, guint reservation_ttl_s);
void kb_extender_free(KbExtender *ext);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbExtender, kb_extender_free)
void kb_extender_set_plan_func(KbExtender *ext, KbExtenderPlanFunc func, gpointer user_data);

/* After every cycle: move the placements of managed pods out of @result->placements (they become
 * reservations held at @result->now) and remember the reasons of managed jobs left unplaced. */
void kb_extender_take_placements(KbExtender *ext, KbCycleResult *result);

/* Filter verdicts for the candidates of @args (all owned by the struct). */
typedef struct {
    const char **why;       /* per candidate: NULL passes, else the message */
    gboolean *unresolvable; /* per candidate: preemption cannot help there */
    char *error;            /* non-NULL: the whole call failed (e.g. not leading) */
    GPtrArray *strings;     /* owns the messages */
    gboolean managed;       /* the pod is kube-batchd's (else it passed through) */
} KbExtenderFilter;

void kb_extender_filter(KbExtender *ext, const KbExtenderArgs *args, gint64 now,
                        KbExtenderFilter *out);
void kb_extender_filter_clear(KbExtenderFilter *out);
/* Scores 0..10 for the candidates of @args into @scores (n_nodes entries). */
void kb_extender_prioritize(KbExtender *ext, const KbExtenderArgs *args, gint64 *scores);

/*
 * bind, first half: the Binding to post (new reference), or NULL when the bind is refused, with
 * *@reason (static, one of kb_extender_bind_refusals) and *@error_message (newly allocated,
 * naming the pod, node and what is wrong). Refused unless the pod is a pending, managed pod the
 * watch brought under args->PodUID, with no binding on the wire, and the node is the one the
 * gang's plan reserved for it or one that passes the predicates (Ready, schedulable, taints,
 * nodeSelector, required affinity) with the free capacity for it now. On success the cache moves
 * to kube-scheduler's choice. Second half, with the outcome of the write.
 */
json_object *kb_extender_bind_begin(KbExtender *ext, const KbExtenderBindingArgs *args,
                                    const char **reason, char **error_message);
/* The reason labels of refused binds (NULL-terminated). */
extern const char *const kb_extender_bind_refusals[];
void kb_extender_bind_end(KbExtender *ext, const KbExtenderBindingArgs *args, gboolean ok,
                          gint64 now);

/*
 * DRA: who allocates a managed pod's ResourceClaims when kube-scheduler calls us as its extender.
 *
 * kube-scheduler runs its own plugins around the extender (pkg/scheduler/schedule_one.go):
 * findNodesThatFitPod runs the Filter plugins, DynamicResources among them, and only then asks
 * the extender's filter about the nodes that passed; after a node is chosen, DynamicResources'
 * Reserve assumes the devices its Filter found there, and in the binding cycle its PreBind writes
 * each claim's status.allocation and status.reservedFor before bind calls the extender's bind.
 * So when the plugin is enabled (DRA is GA and on by default since 1.34) every claim of a pod is
 * allocated, by kube-scheduler and pod by pod, by the time our bind runs; when it is not (older
 * releases, the feature gate off, or the plugin disabled in the profile that calls the extender)
 * nothing allocates them and a bound pod never starts.
 *
 * kube-batchd therefore allocates only when kube-scheduler did not, and never against it:
 * - filter passes a member only onto the node its gang's plan reserved, and the plan exists only
 *   when the cycle found devices for every claim of every member (kb_dra_assume, held while the
 *   reservation lasts), so a gang is offered only where all of it fits;
 * - bind adopts what kube-scheduler wrote: a claim the cache shows allocated on the bind's node
 *   and reserved for the pod is not written (its devices replace the plan's once the pod is seen
 *   bound); a claim written since the plan was made (kube-scheduler's PreBind, our watch not there
 *   yet) fails our write's resourceVersion precondition, and is adopted when a fresh read shows
 *   it allocated there and reserved for the pod (kb_extender_claim_adoptable);
 * - otherwise bind writes the plan's own claim status writes for that pod (the ones the gang's
 *   commit made, kb_dra_gang_writes: devices the plan holds, on the planned node) before the
 *   Binding, one write per claim, each against the resourceVersion the plan saw, and undoes them
 *   when a later write or the Binding fails, as the binder does for kube-batchd's own pods.
 * Nothing else is ever written: a bind onto another node than the plan's, or of a claim the plan
 * has no write for, is refused ("claims") unless kube-scheduler allocated the claims there; so a
 * caller cannot make kube-batchd write a claim its plan would not. A device is never given twice
 * by kube-batchd: it writes only devices its plan holds, and only for a claim kube-scheduler has
 * not allocated (the precondition stops a write racing kube-scheduler's on the same claim).
 * With kube-scheduler allocating, its per-pod choice may differ from the plan's devices; the
 * plan's holds stay until each member is seen bound, so kube-batchd hands none of them to another
 * pod meanwhile. A cluster where two allocators (kube-scheduler's other profiles and kube-batchd)
 * hand out devices of the same nodes has the race every pair of schedulers has: each sees the
 * other's allocations only through its watch.
 */
/* The claim writes the accepted bind of @args makes before its Binding, in order (new reference,
 * NULL when none); each KbClaimWrite is kept by the array. Taken once: a second call gives NULL. */
GPtrArray *kb_extender_bind_claim_writes(KbExtender *ext, const KbExtenderBindingArgs *args);
/* A claim write of a bind onto @node went through (@written TRUE) or was undone: written claims
 * stay assumed in the cache until the watch shows them (kb_dra_claim_written), and until then a
 * gang mate the write reserved the claim for is bound without a write of its own. */
void kb_extender_claim_written(KbExtender *ext, const KbClaimWrite *w, const char *node,
                               gboolean written);
/* May @claim (as read from the API server after our write met a conflict) serve the pod of
 * @args as it is: allocated on args->node (or on no particular node) and reserved for the pod. */
gboolean kb_extender_claim_adoptable(const KbResourceClaim *claim,
                                     const KbExtenderBindingArgs *args);

/* preempt: per node of @args, *@keep[i] and the victims' UIDs (@victims[i] a new GPtrArray of
 * const char* borrowed from @args or the cache, NULL when not kept). */
void kb_extender_preempt(KbExtender *ext, const KbExtenderPreemptionArgs *args, gint64 now,
                         gboolean *keep, GPtrArray **victims);

/* Release reservations older than the TTL of gangs not fully bound; returns the pods released. */
guint kb_extender_expire(KbExtender *ext, gint64 now);
/* A pod to requeue (all owned). */
typedef struct {
    char *namespace_;
    char *name;
    char *uid;
} KbExtenderRequeue;

/* The pods kube-scheduler parked whose gang has a plan now (see the header comment), each once
 * per plan; a new array (free function set), empty when none. Called after
 * kb_extender_take_placements(). */
GPtrArray *kb_extender_take_requeues(KbExtender *ext);
/* Do not collect requeues (kb_extender_take_requeues() stays empty): --extender-no-requeue. */
void kb_extender_set_requeue(KbExtender *ext, gboolean on);

/* Gangs holding reservations now. */
guint kb_extender_reservations(const KbExtender *ext);
