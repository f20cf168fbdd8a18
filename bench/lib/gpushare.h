/*
 * A model of GPU-sharing placement, for bench-gpushare: a cluster of nodes (CPU, memory, GPUs of
 * 1000 milli-GPU each) and pods asking for CPU, memory and either whole GPUs or a fraction of one
 * GPU (gpu_milli < 1000), placed one after another by one of two policies:
 *   - first-fit: the first node (in trace order) where the pod fits; on it the first GPU with room
 *     (a fraction) or the first free GPUs (whole GPUs);
 *   - packing: a fraction goes to the GPU already partly used that it fills most tightly (best
 *     fit), else to a free GPU of the node with the fewest free GPUs; whole GPUs go to the node
 *     with the fewest free GPUs that holds them; CPU-only pods to the node with the least unused
 *     GPU. Small slices thus land on GPUs already partly used and whole GPUs (and nodes) stay free
 *     for gangs.
 *   - kube-batchd (KB_GPUSHARE_DRA): the nodes in first-fit's order, the GPU on the node chosen
 *     by kube-batchd's own allocator (scheduler/dra.c through kb_dra_fits / kb_dra_assume) among
 *     the ResourceSlices kb-kubelet --dra publishes for GPUs shared by memory (gpushare.c says
 *     how milli-GPUs map onto memory). Its packing is the allocator's: a share onto the GPU most
 *     used already;
 *   - kube-batchd MIG (KB_GPUSHARE_DRA_MIG): the same on the slices kb-kubelet --dra --mig
 *     publishes, a fraction taking the smallest MIG profile that holds it;
 *   - FGD (KB_GPUSHARE_FGD): node and GPU by the fragmentation gradient (scheduler/fragment.h) of
 *     the shapes seen so far, over every node where the pod fits, as FGD's authors run it;
 *   - kube-batchd FGD (KB_GPUSHARE_DRA_FGD): kube-batchd's allocator on shared GPUs as
 *     KB_GPUSHARE_DRA, the node chosen by the same gradient (scored for the GPU the allocator
 *     takes on it: the most used that fits), the fgd plugin's node order: pods asking for GPUs
 *     by the gradient, CPU-only pods in first-fit's order (the plugin does not score them);
 *     KB_GPUSHARE_DRA_FGD_FRACTIONS the same with fgd.wholeGpus 0 (only fractions by the
 *     gradient); KB_GPUSHARE_DRA_FGD_CPU CPU-only pods by the gradient too (as FGD does);
 *     KB_GPUSHARE_DRA_FGD_WINDOW the gradient among KB_GPUSHARE_WINDOW nodes where the pod fits
 *     only, taken from where the previous pod's window ended, as the allocate action collects
 *     candidates for pods the plugin does not ask to score on every node;
 *     KB_GPUSHARE_DRA_MIG_FGD: KB_GPUSHARE_DRA_MIG with nodes by the gradient, each node's GPUs
 *     and a pod's shape read from the allocator as the fgd plugin reads them (kb_dra_node_gpus,
 *     kb_dra_pod_gpus: a MIG profile is the fraction of the GPU's counters it consumes).
 * The model policies (first-fit, packing, FGD) are apart from the scheduler's allocator; the
 * kube-batchd ones drive its code.
 *
 * The input is a shape histogram (bench/data/alibaba-openb-v2023.csv, made by
 * bench/alibaba-openb.sh): lines "node,COUNT,CPU_MILLI,MEMORY_MIB,GPUS,,MODEL" and
 * "pod,COUNT,CPU_MILLI,MEMORY_MIB,NUM_GPU,GPU_MILLI,", '#' comments and one header line
 * "kind,count,...". The replay follows FGD's workload inflation (Weng et al., ATC'23): pods are
 * drawn at random (weighted by count) and submitted until the GPUs they asked for reach a given
 * share of the cluster's; a pod that fits nowhere is dropped.
 */
#pragma once

#include <glib.h>

#define KB_GPUSHARE_MAX_SHAPES   4096  /* node or pod shapes in one file */
#define KB_GPUSHARE_MAX_NODES    65536 /* nodes once counts are expanded */
#define KB_GPUSHARE_MAX_NODE_GPU 16    /* GPUs on one node */

typedef enum {
    KB_GPUSHARE_FIRST_FIT,
    KB_GPUSHARE_PACKING,
    KB_GPUSHARE_DRA,
    KB_GPUSHARE_DRA_MIG,
    KB_GPUSHARE_FGD,
    KB_GPUSHARE_DRA_FGD,
    KB_GPUSHARE_DRA_FGD_FRACTIONS,
    KB_GPUSHARE_DRA_FGD_WINDOW,
    KB_GPUSHARE_DRA_FGD_CPU,
    KB_GPUSHARE_DRA_MIG_FGD,
} KbGpusharePolicy;

/* Observations over which the FGD policies' shape histogram halves its weights, and how many
 * pods go by between two snapshots of it (a scheduling cycle's view). */
#define KB_GPUSHARE_FGD_HALF_LIFE 2000
#define KB_GPUSHARE_FGD_SNAPSHOT  64
#define KB_GPUSHARE_WINDOW        100 /* allocate.c's N_CANDIDATES */

/* Times, over all KB_GPUSHARE_DRA replays, that the allocator refused a node its mirror said had
 * room (0 when the two agree; printed by bench-gpushare). */
guint kb_gpushare_dra_disagreements(void);

typedef struct KbGpushareTrace KbGpushareTrace;

/* Parse @text (named @name in errors). NULL with @error naming the line, field and value. */
KbGpushareTrace *kb_gpushare_trace_parse(const char *text, const char *name, GError **error);
KbGpushareTrace *kb_gpushare_trace_load(const char *path, GError **error);
void kb_gpushare_trace_free(KbGpushareTrace *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbGpushareTrace, kb_gpushare_trace_free)

guint kb_gpushare_trace_nodes(const KbGpushareTrace *t);
guint kb_gpushare_trace_gpus(const KbGpushareTrace *t);
/* Pods in the histogram, and those asking for a fraction of a GPU. */
guint kb_gpushare_trace_pods(const KbGpushareTrace *t, guint *fractional);

/* Replay with @policy and @seed until the arrived GPU request reaches the last of @loads
 * (ascending fractions of the cluster's GPUs, e.g. 1.0); @unallocated[i] receives the share of
 * GPU capacity not allocated when the arrived request reached @loads[i], @dropped (optional) the
 * pods that fitted nowhere by the end. */
void kb_gpushare_replay(const KbGpushareTrace *t, KbGpusharePolicy policy, guint64 seed,
                        const double *loads, guint n_loads, double *unallocated, guint *dropped);

/* Place the pod shapes @pods (indices of the file's pod lines) in this order with @policy, on an
 * empty cluster: the share of GPU capacity left unallocated; @placed (optional) the pods that
 * fitted. */
double kb_gpushare_place_seq(const KbGpushareTrace *t, KbGpusharePolicy policy, const guint *pods,
                             guint n, guint *placed);

const char *kb_gpushare_policy_name(KbGpusharePolicy p);
