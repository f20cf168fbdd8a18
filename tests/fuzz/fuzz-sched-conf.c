/*
 * Fuzz target for kb_conf_parse_flags() (the scheduler configuration: YAML, plugins, actions,
 * arguments) and kb_conf_parse_go_duration(): whatever the bytes, parsing must not crash, must
 * fail with a KB_ERROR, and must agree with itself: a file --strict-config accepts is accepted
 * without it, with the same plugins and no warning about anything ignored; warnings stay within
 * their cap.
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-error.h"
#include "scheduler/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static guint n_plugins(const KbConf *conf)
{
    guint n = 0;
    for (guint t = 0; t < conf->n_tiers; t++)
        n += conf->tiers[t].n_plugins;
    return n;
}

/* Warnings that are no refusal under --strict-config (the file's parts are all implemented). */
static guint combination_warnings(const KbConf *conf)
{
    guint n = 0;
    for (guint i = 0; i < conf->warnings->len; i++)
        n += strstr(conf->warnings->pdata[i], "without the reserve action") != NULL;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    KbConf *conf = kb_conf_parse_flags((const char *)data, size, 0, &error);
    if ((conf == NULL) == (error == NULL) || (error != NULL && error->domain != KB_ERROR))
        __builtin_trap();
    g_clear_error(&error);
    KbConf *strict = kb_conf_parse_flags((const char *)data, size, KB_CONF_STRICT, &error);
    if ((strict == NULL) == (error == NULL) || (error != NULL && error->domain != KB_ERROR))
        __builtin_trap();
    g_clear_error(&error);
    if (conf != NULL && conf->warnings->len > KB_CONF_MAX_WARNINGS + 1)
        __builtin_trap();
    if (strict != NULL) {
        if (conf == NULL || n_plugins(conf) != n_plugins(strict) ||
            conf->n_actions != strict->n_actions ||
            conf->warnings->len != combination_warnings(conf))
            __builtin_trap();
    }
    kb_conf_free(conf);
    kb_conf_free(strict);

    /* Durations are C strings: cut at the first NUL. */
    g_autofree char *s = g_strndup((const char *)data, MIN(size, 64));
    gint64 ns = 0;
    if (!kb_conf_parse_go_duration(s, &ns, &error)) {
        if (error == NULL || error->domain != KB_ERROR)
            __builtin_trap();
        g_clear_error(&error);
    }
    return 0;
}
