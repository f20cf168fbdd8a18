/*
 * Sending a DRA claim's status write (scheduler/dra.h, KbClaimWrite) and its undo: the one way the
 * binder and the extender's bind write claims. The caller keeps the order (every claim of a pod
 * before its Binding; undone last first) and what the cache must be told.
 */
#pragma once

#include "kube/kb-client.h"
#include "scheduler/dra.h"

/* PATCH @w's status body (allocation and reservedFor), urgent as a binding is (KbRequest); @done
 * gets the answer, as kb_client_call_async. With @version_only the answer is read for its
 * resourceVersion only (KbResponse.resource_version). */
void kb_claim_write_send(KbClient *client, const KbClaimWrite *w, gboolean version_only,
                         KbResponseFunc done, gpointer data);

/* PATCH the write undoing @w, against @rv, the version @w produced (a claim someone changed since
 * is left alone; NULL: unconditionally). Fire and forget: a failure is logged, naming the claim
 * after @who ("extender: " or ""), and the claim is left as it is. */
void kb_claim_write_undo(KbClient *client, const KbClaimWrite *w, const char *rv, const char *who);
