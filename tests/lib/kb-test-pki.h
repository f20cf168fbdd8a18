/*
 * Certificates made at run time for the tests that need client certificates (the extender): a
 * CA of this run only, so no private key a deployment could reuse is ever committed. Files are
 * PEM (EC P-256 keys, PKCS#8) in a temporary directory removed by kb_test_pki_free():
 *
 *   ca.pem                        the run's CA (kube-batchd's --extender-client-ca-file)
 *   server.pem / server-key.pem   for 127.0.0.1, localhost and
 *                                 tf-operator-webhook.kube-batchd.svc, signed by ca.pem
 *   client.pem / client-key.pem   CN=kube-scheduler, client authentication, signed by ca.pem
 *
 * and the hostile variants a test asks for with kb_test_pki_issue().
 */
#pragma once

#include <glib.h>

typedef struct KbTestPki KbTestPki;

typedef enum {
    KB_TEST_CERT_CLIENT,      /* CA-signed, valid, client authentication */
    KB_TEST_CERT_EXPIRED,     /* CA-signed, client authentication, expired an hour ago */
    KB_TEST_CERT_OTHER_CA,    /* valid, signed by an unrelated CA */
    KB_TEST_CERT_SELF_SIGNED, /* valid, signed by itself */
    KB_TEST_CERT_SERVER_ONLY, /* CA-signed, valid, but for TLS server authentication only */
} KbTestCertKind;

KbTestPki *kb_test_pki_new(void);
void kb_test_pki_free(KbTestPki *pki);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestPki, kb_test_pki_free)
/* The path of file @name ("ca.pem", "client-key.pem", ...; borrowed). */
const char *kb_test_pki_path(KbTestPki *pki, const char *name);
/* The directory holding the files (borrowed). */
const char *kb_test_pki_dir(KbTestPki *pki);
/* Write @name.pem and @name-key.pem of @kind with common name @cn. */
void kb_test_pki_issue(KbTestPki *pki, const char *name, const char *cn, KbTestCertKind kind);
