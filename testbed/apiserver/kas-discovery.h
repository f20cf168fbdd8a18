/*
 * Discovery documents: /version, /api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION (legacy,
 * unaggregated discovery: clients asking for the aggregated form fall back to it because the
 * reply's Content-Type is plain application/json), and a minimal /openapi/v3 that tells kubectl
 * the server validates fields itself (fieldValidation), so `kubectl create/apply` work without
 * --validate=false. /openapi/v2 is not served (404): kubectl then computes strategic merge
 * patches from its built-in types.
 */
#pragma once

#include "testbed/apiserver/kas-rest.h"

/* Serve @req when its path is a discovery path; FALSE otherwise (reply untouched). */
gboolean kas_discovery_handle(const KasRestContext *ctx, const KasRequest *req, KasReply *reply);
