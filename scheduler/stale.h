/*
 * Gangs that recover instead of idling: a bound gang that lost a member is noticed, given a grace
 * to get it back, then evicted whole so that its controller restarts it and others use its GPUs.
 *
 * Each cycle, after the actions (so that allocate has tried to place the replacements first, in
 * the gang's own topology domain when it has one), for every gang (minMember > 1) that was whole
 * in its current incarnation (minMember members placed and healthy at once):
 *
 * - A member is healthy while it is placed (allocated, binding, bound or running), not being
 *   deleted or evicted, and its node is there and Ready; a node NotReady (Ready False or Unknown)
 *   for `nodeLostAfter` (scheduler configuration, default 40s) or deleted loses its pods at once.
 *   A member deleted, failed, or pending and not placed again is lost too.
 * - Short of minMember healthy members: the job's status says so at once (condition type
 *   GangIncomplete, status True, reason MemberLost, the message naming the first lost member),
 *   with a Warning event on the PodGroup.
 * - Still short after the grace (`staleGangGrace`, default 60s; the PodGroup annotation
 *   kube-batchd.io/stale-gang-grace: "10s" overrides it): every member still bound or running
 *   is evicted (KbEviction with reason KB_GANG_INCOMPLETE, the message naming the lost member)
 *   and the reason becomes GangEvicted. An eviction refused (a PodDisruptionBudget's 429) puts
 *   the pod back to running; the next round comes after 1 s, 2 s, 4 s, ... (30 s at most).
 * - A gang annotated kube-batchd.io/tolerate-partial: "true" is reported, never evicted.
 * - A gang with a member that succeeded is finishing: left alone.
 *
 * Malformed annotations are named in the condition's message; the configured grace then holds.
 */
#pragma once

#include "scheduler/session.h"

#define KB_STALE_GRACE_ANNOTATION      "kube-batchd.io/stale-gang-grace"
#define KB_TOLERATE_PARTIAL_ANNOTATION "kube-batchd.io/tolerate-partial"
#define KB_STALE_RETRY_MAX_S           30

/* Run the pass over every job of @ssn: sets job->stale_reason/stale_message and appends the
 * evictions and events to ssn->result. */
void kb_stale_run(KbSession *ssn);
