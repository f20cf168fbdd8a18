/*
 * tf-operator's CRD conversion webhook: POST /convert takes a ConversionReview
 * (apiextensions.k8s.io/v1 or v1beta1) for TFJobs and answers it with kube/kb-tfconv, over HTTPS
 * only (an API server calls conversion webhooks over TLS, verifying the CRD's caBundle).
 *
 *   200  the ConversionReview response (result Success, or Failure naming the job and field)
 *   400  a body that is not a ConversionReview request (the message says why)
 *   404  any other path; 405  any other method; 413  a body over KB_TFCONV_MAX_BODY
 *
 * It runs on a thread (and main context) of its own, so that it answers while the controller waits
 * on a synchronous call that needs a conversion (tf-operator writes a v1alpha1 job through
 * v1alpha1 when the CRD stores v1), and whether or not this replica leads: conversion is pure and
 * every replica gives the same answer. The metric is brought up to date when metrics are rendered;
 * free the webhook before @metrics.
 * Metrics: tf_operator_conversions_total{result="success|failure|bad_request"}.
 */
#pragma once

#include <glib.h>

#include "kube/kb-metrics.h"

typedef struct TfWebhook TfWebhook;

/* Listen on @address ("HOST:PORT", kb_httpd_parse_address's forms) with the PEM @cert_file and
 * @key_file. NULL with KB_ERROR_CONFIG (bad address, no certificate) or KB_ERROR_TRANSPORT. */
TfWebhook *tf_webhook_new(const char *address, const char *cert_file, const char *key_file,
                          KbMetrics *metrics, GError **error);
guint16 tf_webhook_port(const TfWebhook *webhook);
void tf_webhook_free(TfWebhook *webhook);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TfWebhook, tf_webhook_free)
