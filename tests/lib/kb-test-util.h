/*
 * Small helpers shared by the integration tests (tests/test-*.c): where the source tree and the
 * built programs are, a free TCP port, JSON built with printf, objects created through KbClient.
 * Every helper fails the running test (g_assert/g_error) instead of returning an error.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-client.h"
#include "tests/lib/kb-test-daemon.h"

/* $KB_SRCDIR, default "." (borrowed; tests run from the top of the source tree). */
const char *kb_test_src_dir(void);

/* $KB_BIN_DIR, default "build/default/bin" (borrowed). */
const char *kb_test_bin_dir(void);

/* Whether kube-scheduler tried @pod (may be NULL) and found no node: its PodScheduled
 * condition is False. */
gboolean kb_test_pod_parked(json_object *pod);

/* A TCP port free on 127.0.0.1 at the time of the call (bound, read back, closed). */
guint kb_test_free_port(void);

/* The JSON text printf(@fmt, ...) parsed; a new reference owned by the caller. Bad JSON is a bug
 * in the test: g_error(). */
json_object *kb_test_json_printf(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* @len bytes of @text as one JSON value, all of them read (nesting up to 128 deep); NULL with
 * @error "not JSON" otherwise. The reference the byte decoders' tests compare against. */
json_object *kb_test_json_parse_whole(const char *text, gsize len, GError **error);

/* Create @body (its reference is taken: put whatever happens) of @type in namespace @ns (NULL:
 * cluster-scoped) through @client; an error fails the test. */
void kb_test_create(KbClient *client, const KbResourceType *type, const char *ns,
                    json_object *body);

/* Create the Node @node (its reference is taken; metadata and spec, no status) with a Ready
 * status of 64 CPUs, 256Gi, 110 pods and @gpus nvidia.com/gpu, then write that status through
 * nodes/status too (not every server takes status on create). An error fails the test. */
void kb_test_create_node(KbClient *client, json_object *node, int gpus);

/* Create the Volcano PodGroup @name in namespace "default" with minMember @min_member. */
void kb_test_create_pod_group(KbClient *client, const char *name, int min_member);

/* Create the object of the YAML file @rel of the source tree (relative to kb_test_src_dir())
 * through @client. Only kinds CustomResourceDefinition and (volcano) Queue are accepted; any
 * other kind fails the test. */
void kb_test_create_from_file(KbClient *client, const char *rel);

/* Create the CRD files @files (NULL-terminated, relative to kb_test_src_dir()) with
 * kb_test_create_from_file(), wait until the server lists Volcano queues (the test fails when it
 * does not within @wait_ms), then create deploy/base/default-queue.yaml. */
void kb_test_install_crds(KbClient *client, const char *const *files, guint wait_ms);

/* Start bin/kube-batchd with "--master @master --schedule-period 200ms --listen-address
 * 127.0.0.1:@http_port" and then @extra (NULL-terminated, may be NULL), its output in a temporary
 * log file (kb_test_daemon_log()). Failing to start fails the test. Returns the daemon, owned by
 * the caller (kb_test_daemon_free()). */
KbTestDaemon *kb_test_batchd_start(const char *master, guint http_port, const char *const *extra);

/* The same with the extra arguments taken from @ap (NULL-terminated), for variadic wrappers. */
KbTestDaemon *kb_test_batchd_startv(const char *master, guint http_port, va_list ap);
