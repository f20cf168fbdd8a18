/*
 * Run-time test certificates with gnutls (see the header).
 */
#include "tests/lib/kb-test-pki.h"

#include <glib/gstdio.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <string.h>
#include <time.h>

typedef struct {
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
} Pair;

struct KbTestPki {
    char *dir;
    Pair ca;
    Pair other_ca;
    GHashTable *paths; /* name -> path */
};

#define CHECK(expr) g_assert_cmpint((expr), >=, 0)

static void pair_clear(Pair *p)
{
    if (p->crt != NULL)
        gnutls_x509_crt_deinit(p->crt);
    if (p->key != NULL)
        gnutls_x509_privkey_deinit(p->key);
    p->crt = NULL;
    p->key = NULL;
}

static void write_datum(KbTestPki *pki, const char *name, gnutls_datum_t *d)
{
    char *path = g_build_filename(pki->dir, name, NULL);
    g_autoptr(GError) error = NULL;
    g_assert_true(g_file_set_contents(path, (const char *)d->data, d->size, &error));
    g_assert_no_error(error);
    gnutls_free(d->data);
    g_hash_table_replace(pki->paths, g_strdup(name), path);
}

static void write_pair(KbTestPki *pki, const char *name, const Pair *p)
{
    gnutls_datum_t d = {0};
    g_autofree char *crt = g_strdup_printf("%s.pem", name);
    g_autofree char *key = g_strdup_printf("%s-key.pem", name);
    CHECK(gnutls_x509_crt_export2(p->crt, GNUTLS_X509_FMT_PEM, &d));
    write_datum(pki, crt, &d);
    CHECK(gnutls_x509_privkey_export2_pkcs8(p->key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN,
                                            &d));
    write_datum(pki, key, &d);
}

typedef enum { ROLE_CA, ROLE_SERVER, ROLE_CLIENT } Role;

/* A new key and certificate for @cn signed by @issuer (NULL: by itself). */
static Pair make(const char *cn, Role role, const char *purpose, gboolean expired,
                 const Pair *issuer)
{
    Pair p = {0};
    CHECK(gnutls_x509_privkey_init(&p.key));
    CHECK(gnutls_x509_privkey_generate(p.key, GNUTLS_PK_ECDSA,
                                       GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0));
    CHECK(gnutls_x509_crt_init(&p.crt));
    CHECK(gnutls_x509_crt_set_version(p.crt, 3));
    guint64 serial = g_random_int() | ((guint64)g_random_int() << 31);
    CHECK(gnutls_x509_crt_set_serial(p.crt, &serial, sizeof(serial)));
    time_t now = time(NULL);
    CHECK(gnutls_x509_crt_set_activation_time(p.crt, expired ? now - 7200 : now - 600));
    CHECK(gnutls_x509_crt_set_expiration_time(p.crt, expired ? now - 3600 : now + 86400));
    CHECK(gnutls_x509_crt_set_dn_by_oid(p.crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn)));
    CHECK(gnutls_x509_crt_set_key(p.crt, p.key));
    unsigned char id[64];
    size_t id_size = sizeof(id);
    CHECK(gnutls_x509_crt_get_key_id(p.crt, 0, id, &id_size));
    CHECK(gnutls_x509_crt_set_subject_key_id(p.crt, id, id_size));
    if (role == ROLE_CA) {
        CHECK(gnutls_x509_crt_set_basic_constraints(p.crt, 1, -1));
        CHECK(gnutls_x509_crt_set_key_usage(p.crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN));
    } else {
        CHECK(gnutls_x509_crt_set_basic_constraints(p.crt, 0, -1));
        CHECK(gnutls_x509_crt_set_key_usage(p.crt, GNUTLS_KEY_DIGITAL_SIGNATURE));
        CHECK(gnutls_x509_crt_set_key_purpose_oid(p.crt, purpose, 0));
    }
    if (role == ROLE_SERVER) {
        const unsigned char ip[4] = {127, 0, 0, 1};
        CHECK(gnutls_x509_crt_set_subject_alt_name(p.crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
                                                   GNUTLS_FSAN_APPEND));
        /* the name kube-apiserver verifies for tf-operator's conversion webhook Service */
        static const char svc[] = "tf-operator-webhook.kube-batchd.svc";
        CHECK(gnutls_x509_crt_set_subject_alt_name(p.crt, GNUTLS_SAN_DNSNAME, svc, strlen(svc),
                                                   GNUTLS_FSAN_APPEND));
        CHECK(gnutls_x509_crt_set_subject_alt_name(p.crt, GNUTLS_SAN_IPADDRESS, ip, 4,
                                                   GNUTLS_FSAN_APPEND));
    }
    const Pair *by = issuer != NULL ? issuer : &p;
    if (issuer != NULL) {
        id_size = sizeof(id);
        CHECK(gnutls_x509_crt_get_subject_key_id(issuer->crt, id, &id_size, NULL));
        CHECK(gnutls_x509_crt_set_authority_key_id(p.crt, id, id_size));
    }
    CHECK(gnutls_x509_crt_sign2(p.crt, by->crt, by->key, GNUTLS_DIG_SHA256, 0));
    return p;
}

KbTestPki *kb_test_pki_new(void)
{
    g_autoptr(GError) error = NULL;
    KbTestPki *pki = g_new0(KbTestPki, 1);
    pki->dir = g_dir_make_tmp("kb-pki-XXXXXX", &error);
    g_assert_no_error(error);
    pki->paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    pki->ca = make("kube-batchd test CA", ROLE_CA, NULL, FALSE, NULL);
    pki->other_ca = make("unrelated CA", ROLE_CA, NULL, FALSE, NULL);
    gnutls_datum_t d = {0};
    CHECK(gnutls_x509_crt_export2(pki->ca.crt, GNUTLS_X509_FMT_PEM, &d));
    write_datum(pki, "ca.pem", &d);
    Pair server = make("kube-batchd", ROLE_SERVER, GNUTLS_KP_TLS_WWW_SERVER, FALSE, &pki->ca);
    write_pair(pki, "server", &server);
    pair_clear(&server);
    kb_test_pki_issue(pki, "client", "kube-scheduler", KB_TEST_CERT_CLIENT);
    return pki;
}

void kb_test_pki_issue(KbTestPki *pki, const char *name, const char *cn, KbTestCertKind kind)
{
    const char *purpose =
            kind == KB_TEST_CERT_SERVER_ONLY ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT;
    const Pair *issuer = &pki->ca;
    if (kind == KB_TEST_CERT_OTHER_CA)
        issuer = &pki->other_ca;
    else if (kind == KB_TEST_CERT_SELF_SIGNED)
        issuer = NULL;
    Pair p = make(cn, ROLE_CLIENT, purpose, kind == KB_TEST_CERT_EXPIRED, issuer);
    write_pair(pki, name, &p);
    pair_clear(&p);
}

const char *kb_test_pki_path(KbTestPki *pki, const char *name)
{
    const char *p = g_hash_table_lookup(pki->paths, name);
    g_assert_nonnull(p);
    return p;
}

const char *kb_test_pki_dir(KbTestPki *pki)
{
    return pki->dir;
}

void kb_test_pki_free(KbTestPki *pki)
{
    if (pki == NULL)
        return;
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, pki->paths);
    while (g_hash_table_iter_next(&it, NULL, &v))
        g_unlink(v);
    g_rmdir(pki->dir);
    g_hash_table_unref(pki->paths);
    pair_clear(&pki->ca);
    pair_clear(&pki->other_ca);
    g_free(pki->dir);
    g_free(pki);
}
