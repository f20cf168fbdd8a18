/*
 * The shipped TFJob CRD (deploy/base/crds/tfjob.yaml: conversion strategy Webhook, Service
 * kube-batchd/tf-operator-webhook port 443, storage version v1) made to work on a test's API
 * server, as deploy/tfjob-webhook-certs.sh and deploy/base/tf-operator.yaml make it work on a cluster:
 * tf-operator serves the webhook with the certificate of a CA of this run (kb-test-pki: its
 * names include tf-operator-webhook.kube-batchd.svc), the Service's Endpoints lead to it, and
 * the CRD's caBundle is that CA.
 *
 *   g_autoptr(KbTestTfWebhook) wh = kb_test_tfwebhook_new();
 *   ... apply deploy/base/crds ...
 *   op = kb_test_apiserver_spawn(api, "tf-operator", TRUE, kb_test_tfwebhook_args(wh), dir);
 *   kb_test_tfwebhook_connect(wh, op, kb_test_tfwebhook_kubectl_api, api);
 */
#pragma once

#include <glib.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-daemon.h"

typedef struct KbTestTfWebhook KbTestTfWebhook;

KbTestTfWebhook *kb_test_tfwebhook_new(void);
void kb_test_tfwebhook_free(KbTestTfWebhook *wh);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestTfWebhook, kb_test_tfwebhook_free)

/* tf-operator's arguments serving the webhook on a free port of 127.0.0.1 with the run's
 * certificate, then @extra (NULL-terminated, may be NULL). Borrowed, valid while @wh lives. */
const char *const *kb_test_tfwebhook_args(KbTestTfWebhook *wh, const char *const *extra);

/* Runs kubectl with @args (NULL-terminated) and @stdin_text (may be NULL) against the test's
 * server; fails the test when kubectl cannot run or exits non-zero. */
typedef void (*KbTestKubectlFn)(gpointer data, const char *stdin_text, const char *const *args);

/* kubectl through kb_test_kubectl() on the KbTestApiserver @data. */
void kb_test_tfwebhook_kubectl_api(gpointer data, const char *stdin_text, const char *const *args);

/* Once tf-operator @op (started with kb_test_tfwebhook_args()) serves the webhook and the CRD
 * is applied: the Namespace kube-batchd, Service and Endpoints tf-operator-webhook (leading to
 * @op's port) and the CRD's caBundle, through @kubectl. Waits at most 20 s for @op's port. */
void kb_test_tfwebhook_connect(KbTestTfWebhook *wh, KbTestDaemon *op, KbTestKubectlFn kubectl,
                               gpointer data);
