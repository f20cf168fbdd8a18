/*
 * Scheduler actions, run in the configured order by the cycle:
 *
 *   enqueue   Pending jobs enter Inqueue when their minimum resources fit their queue's remaining
 *             share and the cluster's idle capacity (nothing hoards); kept for later otherwise.
 *   allocate  queue order, then job order, then task order; predicates and node order; a
 *             statement per job that commits only when the gang reaches minMember.
 *   preempt   a waiting gang evicts lower-priority jobs of its queue when that makes it fit
 *             (whole gangs, never below minMember; statement; see preempt.c).
 *   reclaim   a gang of a queue below its deserved share evicts jobs of reclaimable queues above
 *             theirs, never below their share (preempt.c).
 *
 * Registry in actions.c; each action in its own file.
 */
#pragma once

#include "scheduler/session.h"

struct kb_action_ops {
    const char *name;
    void (*execute)(KbSession *ssn);
};

extern const struct kb_action_ops kb_action_enqueue;
extern const struct kb_action_ops kb_action_allocate;
extern const struct kb_action_ops kb_action_preempt;
extern const struct kb_action_ops kb_action_reclaim;
extern const struct kb_action_ops kb_action_reserve; /* scheduler/reserve.h */
/* kube-batch's backfill: pods that request nothing (BestEffort) go to the first node that passes
 * the predicates; a gang still commits only at minMember. */
extern const struct kb_action_ops kb_action_backfill;

/* preempt and reclaim keep each node's victim choice while nothing it read changes (preempt.c,
 * NodeMemo). Off: every node is weighed again for every task, as before; tests and
 * bench-schedule compare the two. Not thread-safe: set it before cycles run. */
void kb_preempt_set_memo(gboolean on);
/* Victim choices the memo answered, over every action run so far. */
guint64 kb_preempt_memo_hits(void);

/* The action called @name, or NULL. */
const struct kb_action_ops *kb_action_lookup(const char *name);
/* "enqueue, allocate, preempt, reclaim" for error messages. Static. */
const char *kb_action_names(void);
