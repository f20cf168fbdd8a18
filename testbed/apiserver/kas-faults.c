/*
 * Fault injection.
 *
 * SPEC := RULE { ";" RULE }            (whitespace around items is ignored; "" clears)
 * RULE := ACTION { "," KEY "=" VALUE }
 *
 * ACTION (the first item of a rule):
 *   error=CODE          answer CODE (e.g. 409, 429, 500, 503) with a metav1.Status instead of
 *                       handling the request; 429 and 503 carry Retry-After (see retry=)
 *   latency=MS          wait MS milliseconds before handling the request
 *   cut-watch           close matching watch streams after `after` events (default 0: before
 *                       the first one); with `mid=1` the cut falls in the middle of the next
 *                       event, leaving half a JSON line on the wire
 *   stall-watch=MS      stop sending on matching watch streams for MS milliseconds once `after`
 *                       events have been sent (the watcher may then overflow and be closed)
 *   expire-history      one-shot: drop the watch history now (resuming from any earlier
 *                       resourceVersion gets 410 Expired)
 *   restart             one-shot: simulate an API server restart (every watch is closed, the
 *                       history is dropped, the data is kept)
 *
 * KEYS (filters and modifiers, for error/latency/cut-watch/stall-watch):
 *   method=M            GET, POST, PUT, PATCH, DELETE or * (default *); watches are GET
 *   path=GLOB           shell pattern on the URL path, e.g. "*binding" or
 *                       "/api/v1/namespaces/default/pods"
 *                       (default *)
 *   fraction=F          apply to this fraction of matching requests, 0..1 (default 1)
 *   count=N             fire at most N times (default unlimited)
 *   retry=S             Retry-After seconds for error=429/503 (default 1)
 *   after=N, mid=0|1    see cut-watch and stall-watch
 *
 * Examples:
 *   error=503,method=POST,path=*binding,fraction=0.1
 *   error=429,retry=2,count=5;latency=20,method=GET
 *   cut-watch,after=3,mid=1,path=/api/v1/pods
 */
#include "testbed/apiserver/kas-faults.h"

#include <fnmatch.h>
#include <string.h>

#include "kube/kb-error.h"

typedef enum { RULE_ERROR, RULE_LATENCY, RULE_CUT, RULE_STALL } RuleKind;

typedef struct {
    RuleKind kind;
    char *text;
    char *method;
    char *path;
    double fraction;
    gint64 count; /* -1: unlimited */
    guint value;  /* status, ms */
    guint retry;
    gint64 after;
    gboolean mid;
    guint64 fired;
} Rule;

struct KasFaults {
    GMutex lock;
    GPtrArray *rules; /* Rule* */
    GRand *rand;
};

static void rule_free(gpointer p)
{
    Rule *r = p;
    g_free(r->text);
    g_free(r->method);
    g_free(r->path);
    g_free(r);
}

KasFaults *kas_faults_new(guint64 seed)
{
    KasFaults *f = g_new0(KasFaults, 1);
    g_mutex_init(&f->lock);
    f->rules = g_ptr_array_new_with_free_func(rule_free);
    f->rand = g_rand_new_with_seed((guint32)(seed != 0 ? seed : 1));
    return f;
}

void kas_faults_free(KasFaults *f)
{
    if (f == NULL)
        return;
    g_ptr_array_unref(f->rules);
    g_rand_free(f->rand);
    g_mutex_clear(&f->lock);
    g_free(f);
}

static gboolean parse_uint(const char *v, guint64 max, guint64 *out)
{
    char *end = NULL;
    if (v == NULL || !g_ascii_isdigit(v[0]))
        return FALSE;
    *out = g_ascii_strtoull(v, &end, 10);
    return *end == '\0' && *out <= max;
}

static gboolean parse_key(Rule *r, const char *key, const char *val, GError **error)
{
    guint64 u = 0;
    if (strcmp(key, "method") == 0 && val != NULL) {
        g_free(r->method);
        r->method = g_ascii_strup(val, -1);
    } else if (strcmp(key, "path") == 0 && val != NULL) {
        g_free(r->path);
        r->path = g_strdup(val);
    } else if (strcmp(key, "fraction") == 0 && val != NULL) {
        char *end = NULL;
        r->fraction = g_ascii_strtod(val, &end);
        if (*end != '\0' || r->fraction < 0 || r->fraction > 1)
            goto bad;
    } else if (strcmp(key, "count") == 0 && parse_uint(val, G_MAXINT64, &u)) {
        r->count = (gint64)u;
    } else if (strcmp(key, "retry") == 0 && parse_uint(val, 3600, &u)) {
        r->retry = (guint)u;
    } else if (strcmp(key, "after") == 0 && parse_uint(val, G_MAXINT64, &u)) {
        r->after = (gint64)u;
    } else if (strcmp(key, "mid") == 0 && parse_uint(val != NULL ? val : "1", 1, &u)) {
        r->mid = u == 1;
    } else {
        goto bad;
    }
    return TRUE;
bad:
    g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "invalid key \"%s\" (value \"%s\")", key,
                val != NULL ? val : "");
    return FALSE;
}

/* Parse one rule; *@once collects one-shot actions (which make no Rule: returns NULL, no error). */
static Rule *parse_rule(const char *text, KasFaultOnce *once, GError **error)
{
    g_auto(GStrv) items = g_strsplit(text, ",", -1);
    g_autofree char *action = g_strstrip(g_strdup(items[0]));
    char *eq = strchr(action, '=');
    const char *val = NULL;
    if (eq != NULL) {
        *eq = '\0';
        val = eq + 1;
    }
    guint64 u = 0;
    if (strcmp(action, "expire-history") == 0 || strcmp(action, "restart") == 0) {
        *once |= action[0] == 'e' ? KAS_FAULT_ONCE_EXPIRE_HISTORY : KAS_FAULT_ONCE_RESTART;
        return NULL;
    }
    Rule *r = g_new0(Rule, 1);
    r->text = g_strdup(text);
    r->method = g_strdup("*");
    r->path = g_strdup("*");
    r->fraction = 1;
    r->count = -1;
    r->retry = 1;
    if (strcmp(action, "error") == 0 && parse_uint(val, 599, &u) && u >= 400) {
        r->kind = RULE_ERROR;
    } else if (strcmp(action, "latency") == 0 && parse_uint(val, 600000, &u)) {
        r->kind = RULE_LATENCY;
    } else if (strcmp(action, "cut-watch") == 0 && val == NULL) {
        r->kind = RULE_CUT;
    } else if (strcmp(action, "stall-watch") == 0 && parse_uint(val, 600000, &u)) {
        r->kind = RULE_STALL;
    } else {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "unknown action \"%s%s%s\"", action,
                    val != NULL ? "=" : "", val != NULL ? val : "");
        rule_free(r);
        return NULL;
    }
    r->value = (guint)u;
    for (guint i = 1; items[i] != NULL; i++) {
        g_autofree char *item = g_strstrip(g_strdup(items[i]));
        char *e = strchr(item, '=');
        if (e != NULL)
            *e = '\0';
        if (!parse_key(r, item, e != NULL ? e + 1 : NULL, error)) {
            rule_free(r);
            return NULL;
        }
    }
    return r;
}

gboolean kas_faults_set(KasFaults *f, const char *spec, KasFaultOnce *once, GError **error)
{
    *once = KAS_FAULT_ONCE_NONE;
    GPtrArray *rules = g_ptr_array_new_with_free_func(rule_free);
    g_auto(GStrv) parts = g_strsplit(spec != NULL ? spec : "", ";", -1);
    for (guint i = 0; parts[i] != NULL; i++) {
        g_autofree char *t = g_strstrip(g_strdup(parts[i]));
        if (t[0] == '\0')
            continue;
        g_autoptr(GError) e = NULL;
        Rule *r = parse_rule(t, once, &e);
        if (e != NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "fault rule \"%s\": %s", t, e->message);
            g_ptr_array_unref(rules);
            *once = KAS_FAULT_ONCE_NONE;
            return FALSE;
        }
        if (r != NULL)
            g_ptr_array_add(rules, r);
    }
    g_mutex_lock(&f->lock);
    g_ptr_array_unref(f->rules);
    f->rules = rules;
    g_mutex_unlock(&f->lock);
    return TRUE;
}

char *kas_faults_describe(KasFaults *f)
{
    GString *s = g_string_new("{\"rules\":[");
    g_mutex_lock(&f->lock);
    for (guint i = 0; i < f->rules->len; i++) {
        Rule *r = g_ptr_array_index(f->rules, i);
        g_autofree char *esc = g_strescape(r->text, NULL);
        g_string_append_printf(s, "%s{\"rule\":\"%s\",\"fired\":%" G_GUINT64_FORMAT "}",
                               i > 0 ? "," : "", esc, r->fired);
    }
    g_mutex_unlock(&f->lock);
    g_string_append(s, "]}");
    return g_string_free(s, FALSE);
}

/* Does @r apply now? Counts the firing. Called with the lock held. */
static gboolean fires(KasFaults *f, Rule *r, const char *method, const char *path)
{
    if (r->count == 0)
        return FALSE;
    if (strcmp(r->method, "*") != 0 && (method == NULL || strcmp(r->method, method) != 0))
        return FALSE;
    if (fnmatch(r->path, path, 0) != 0)
        return FALSE;
    if (r->fraction < 1 && g_rand_double(f->rand) >= r->fraction)
        return FALSE;
    if (r->count > 0)
        r->count--;
    r->fired++;
    return TRUE;
}

void kas_faults_request(KasFaults *f, const char *method, const char *path, KasFaultAction *out)
{
    memset(out, 0, sizeof *out);
    g_mutex_lock(&f->lock);
    for (guint i = 0; i < f->rules->len; i++) {
        Rule *r = g_ptr_array_index(f->rules, i);
        if (r->kind == RULE_ERROR && out->status == 0 && fires(f, r, method, path)) {
            out->status = r->value;
            out->retry_after = r->retry;
        } else if (r->kind == RULE_LATENCY && fires(f, r, method, path)) {
            out->latency_ms += r->value;
        }
    }
    g_mutex_unlock(&f->lock);
}

void kas_faults_watch(KasFaults *f, const char *path, KasWatchFault *out)
{
    out->cut_after = -1;
    out->cut_mid = FALSE;
    out->stall_after = -1;
    out->stall_ms = 0;
    g_mutex_lock(&f->lock);
    for (guint i = 0; i < f->rules->len; i++) {
        Rule *r = g_ptr_array_index(f->rules, i);
        if (r->kind == RULE_CUT && out->cut_after < 0 && fires(f, r, "GET", path)) {
            out->cut_after = r->after;
            out->cut_mid = r->mid;
        } else if (r->kind == RULE_STALL && out->stall_after < 0 && fires(f, r, "GET", path)) {
            out->stall_after = r->after;
            out->stall_ms = r->value;
        }
    }
    g_mutex_unlock(&f->lock);
}
