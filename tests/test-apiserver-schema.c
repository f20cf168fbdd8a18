/*
 * kas-schema: CRD checks (protected groups, structural schemas), pruning and validation of
 * custom resources, with kube-apiserver 1.19's messages, and the module's limits.
 */
#include <string.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-schema.h"

/* json-c directly: the depth tests go past kas_json_parse()'s own nesting limit, to show that
 * the schema code holds its limit whatever parsed the objects. */
static json_object *parse(const char *text)
{
    json_tokener *tok = json_tokener_new_ex(1024);
    json_object *j = json_tokener_parse_ex(tok, text, (int)strlen(text));
    g_assert_cmpint(json_tokener_get_error(tok), ==, json_tokener_success);
    json_tokener_free(tok);
    g_assert_nonnull(j);
    return j;
}

/* The Invalid message @errs gives for a PodGroup "pg", or NULL when there is no error. */
static char *message(KasFieldErrors *errs)
{
    g_autoptr(GError) error = NULL;
    if (kas_field_errors_check_kind(errs, "PodGroup", "example.io", "pg", &error))
        return NULL;
    gboolean has = FALSE;
    json_object *details = NULL;
    char *msg = kas_status_split(error->message, &has, &details);
    g_assert_true(has);
    json_object_put(details);
    return msg;
}

static char *validate(const char *schema, const char *obj)
{
    json_object *s = parse(schema), *o = parse(obj);
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    kas_schema_validate(s, o, errs);
    json_object_put(s);
    json_object_put(o);
    return message(errs);
}

static const char PG_SCHEMA[] =
        "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"required\":["
        "\"queue\"],"
        "\"properties\":{\"minMember\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10,"
        "\"exclusiveMaximum\":true},\"queue\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\","
        "\"maxLength\":5},\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
        "\"size\":{\"x-kubernetes-int-or-string\":true},\"note\":{\"type\":\"string\",\"nullable\":"
        "true},"
        "\"list\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"type\":\"integer\"}}}}}}";

static void test_validate_messages(void)
{
    static const struct {
        const char *obj, *want;
    } cases[] = {
            {"{\"spec\":{\"queue\":\"q\",\"minMember\":3}}", NULL},
            {"{\"spec\":{\"queue\":\"q\",\"minMember\":\"three\"}}",
             "PodGroup.example.io \"pg\" is invalid: spec.minMember: Invalid value: \"string\": "
             "spec.minMember in body must be of type integer: \"string\""},
            {"{\"spec\":{\"queue\":\"q\",\"minMember\":-1}}",
             "PodGroup.example.io \"pg\" is invalid: spec.minMember: Invalid value: 0: "
             "spec.minMember "
             "in body should be greater than or equal to 0"},
            {"{\"spec\":{\"queue\":\"q\",\"minMember\":10}}",
             "PodGroup.example.io \"pg\" is invalid: spec.minMember: Invalid value: 10: "
             "spec.minMember in body should be less than 10"},
            {"{\"spec\":{}}", "PodGroup.example.io \"pg\" is invalid: spec.queue: Required value"},
            {"{\"spec\":{\"queue\":\"Q1\"}}", "PodGroup.example.io \"pg\" is invalid: spec.queue: "
                                              "Invalid value: \"Q1\": spec.queue in "
                                              "body should match '^[a-z]+$'"},
            {"{\"spec\":{\"queue\":\"abcdef\"}}",
             "PodGroup.example.io \"pg\" is invalid: spec.queue: Invalid value: \"abcdef\": "
             "spec.queue in body should be at most 5 chars long"},
            {"{\"spec\":{\"queue\":\"q\",\"mode\":\"c\"}}",
             "PodGroup.example.io \"pg\" is invalid: spec.mode: Unsupported value: \"c\": "
             "supported "
             "values: \"a\", \"b\""},
            {"{\"spec\":{\"queue\":\"q\",\"size\":\"10Gi\"}}", NULL},
            {"{\"spec\":{\"queue\":\"q\",\"size\":3}}", NULL},
            {"{\"spec\":{\"queue\":\"q\",\"size\":true}}",
             "PodGroup.example.io \"pg\" is invalid: spec.size: Invalid value: \"boolean\": "
             "spec.size "
             "in body must be of type integer,string: \"boolean\""},
            {"{\"spec\":{\"queue\":\"q\",\"note\":null}}", NULL},
            {"{\"spec\":{\"queue\":\"q\",\"minMember\":null}}",
             "PodGroup.example.io \"pg\" is invalid: spec.minMember: Invalid value: \"null\": "
             "spec.minMember in body must be of type integer: \"null\""},
            {"{\"spec\":{\"queue\":\"q\",\"list\":[1,\"x\"]}}",
             "PodGroup.example.io \"pg\" is invalid: spec.list[1]: Invalid value: \"string\": "
             "spec.list[1] in body must be of type integer: \"string\""},
            {"{\"spec\":{\"queue\":\"q\",\"list\":[1,2,3]}}",
             "PodGroup.example.io \"pg\" is invalid: spec.list: Too many: 3: must have at most 2 "
             "items"},
            /* two errors: the list form */
            {"{\"spec\":{\"minMember\":-1}}",
             "PodGroup.example.io \"pg\" is invalid: [spec.queue: Required value, spec.minMember: "
             "Invalid value: 0: spec.minMember in body should be greater than or equal to 0]"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = validate(PG_SCHEMA, cases[i].obj);
        g_test_message("%s", cases[i].obj);
        g_assert_cmpstr(got, ==, cases[i].want);
    }
}

static void test_validate_error_cap(void)
{
    GString *obj = g_string_new("{\"spec\":{\"queue\":\"q\",\"list\":[");
    for (int i = 0; i < 1000; i++)
        g_string_append_printf(obj, "%s\"x\"", i > 0 ? "," : "");
    g_string_append(obj, "]}}");
    json_object *s = parse(
            "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
            "\"properties\":{\"list\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}}}");
    json_object *o = parse(obj->str);
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    kas_schema_validate(s, o, errs);
    /* one past the limit is never reported */
    g_assert_cmpuint(kas_field_errors_len(errs), ==, KAS_SCHEMA_MAX_ERRORS);
    json_object_put(s);
    json_object_put(o);
    g_string_free(obj, TRUE);
}

/* A schema (and object) nested @depth levels of "a". */
static char *nested(guint depth, gboolean schema)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < depth; i++)
        g_string_append(s, schema ? "{\"type\":\"object\",\"properties\":{\"a\":" : "{\"a\":");
    g_string_append(s, schema ? "{\"type\":\"integer\"}" : "\"deep\"");
    for (guint i = 0; i < depth; i++)
        g_string_append(s, schema ? "}}" : "}");
    return g_string_free(s, FALSE);
}

static void test_validate_depth(void)
{
    /* at the limit: the type error deep down is found */
    g_autofree char *s1 = nested(KAS_SCHEMA_MAX_DEPTH, TRUE),
                    *o1 = nested(KAS_SCHEMA_MAX_DEPTH, FALSE);
    g_autofree char *m1 = validate(s1, o1);
    g_assert_nonnull(m1);
    g_assert_nonnull(strstr(m1, "must be of type integer"));
    /* past it: one error naming the place, no recursion further down */
    g_autofree char *s2 = nested(KAS_SCHEMA_MAX_DEPTH + 1, TRUE);
    g_autofree char *o2 = nested(KAS_SCHEMA_MAX_DEPTH + 1, FALSE);
    g_autofree char *m2 = validate(s2, o2);
    g_assert_nonnull(m2);
    g_assert_nonnull(strstr(m2, "must not be nested deeper than 64"));
    g_assert_null(strstr(m2, "must be of type integer"));
}

static void test_prune(void)
{
    json_object *s = parse(
            "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{"
            "\"a\":{\"type\":\"integer\"},\"m\":{\"type\":\"object\",\"additionalProperties\":"
            "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}}}},"
            "\"l\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"y\":{"
            "\"type\":\"string\"}}}},"
            "\"free\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
            "\"tmpl\":{\"type\":\"object\",\"x-kubernetes-embedded-resource\":true,\"properties\":{"
            "}}}},"
            "\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"}}}}}");
    json_object *o =
            parse("{\"apiVersion\":\"example.io/"
                  "v1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"pg\"},"
                  "\"extra\":1,\"spec\":{\"a\":1,\"b\":2,\"m\":{\"k\":{\"x\":\"1\",\"z\":2}},"
                  "\"l\":[{\"y\":\"1\",\"w\":2}],\"free\":{\"anything\":{\"deep\":true}},"
                  "\"tmpl\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                  "\"spec\":{}}},"
                  "\"status\":{\"phase\":\"Running\",\"restartCount\":2}}");
    kas_schema_prune(s, o);
    g_autofree char *got = kas_json_dump(o);
    g_assert_cmpstr(
            got, ==,
            "{\"apiVersion\":\"example.io/"
            "v1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"pg\"},"
            "\"spec\":{\"a\":1,\"m\":{\"k\":{\"x\":\"1\"}},\"l\":[{\"y\":\"1\"}],"
            "\"free\":{\"anything\":{\"deep\":true}},"
            "\"tmpl\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}},"
            "\"status\":{\"phase\":\"Running\"}}");
    json_object_put(s);
    json_object_put(o);
}

static char *check_crd(const char *crd)
{
    json_object *c = parse(crd);
    g_autoptr(KasFieldErrors) errs = kas_field_errors_new();
    kas_schema_check_crd(c, errs);
    json_object_put(c);
    g_autoptr(GError) error = NULL;
    if (kas_field_errors_check_kind(errs, "CustomResourceDefinition", "apiextensions.k8s.io", "x",
                                    &error))
        return NULL;
    gboolean has;
    json_object *d = NULL;
    char *msg = kas_status_split(error->message, &has, &d);
    json_object_put(d);
    return msg;
}

#define CRD(ANN, GROUP, SCHEMA)                                                                    \
    "{\"metadata\":{\"name\":\"x\"" ANN "},\"spec\":{\"group\":\"" GROUP "\",\"versions\":[{"      \
    "\"name\":\"v1\",\"served\":true,\"storage\":true" SCHEMA "}]}}"
#define OK_SCHEMA ",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}"

static void test_crd_protected_groups(void)
{
    static const struct {
        const char *crd, *want;
    } cases[] = {
            {CRD("", "scheduling.incubator.k8s.io", OK_SCHEMA),
             "CustomResourceDefinition.apiextensions.k8s.io \"x\" is invalid: "
             "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups "
             "must "
             "have approval annotation \"api-approved.kubernetes.io\", see "
             "https://github.com/kubernetes/enhancements/pull/1111"},
            {CRD("", "k8s.io", OK_SCHEMA), "*"},
            {CRD("", "x.kubernetes.io", OK_SCHEMA), "*"},
            {CRD("", "kubernetes.io.example.com", OK_SCHEMA), NULL},
            {CRD("", "notk8s.io", OK_SCHEMA), NULL},
            /* "-k8s.io" is not a subdomain of k8s.io: scheduler-plugins' group is not protected */
            {CRD("", "scheduling.x-k8s.io", OK_SCHEMA), NULL},
            {CRD(",\"annotations\":{\"api-approved.kubernetes.io\":\"unapproved, testing\"}",
                 "scheduling.incubator.k8s.io", OK_SCHEMA),
             NULL},
            {CRD(",\"annotations\":{\"api-approved.kubernetes.io\":\"https://github.com/x/y/pull/"
                 "1\"}",
                 "scheduling.incubator.k8s.io", OK_SCHEMA),
             NULL},
            {CRD(",\"annotations\":{\"api-approved.kubernetes.io\":\"yes please\"}",
                 "scheduling.incubator.k8s.io", OK_SCHEMA),
             "CustomResourceDefinition.apiextensions.k8s.io \"x\" is invalid: "
             "metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"yes please\": "
             "protected groups must have approval annotation \"api-approved.kubernetes.io\" with "
             "either a URL or a reason starting with \"unapproved\", see "
             "https://github.com/kubernetes/enhancements/pull/1111"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = check_crd(cases[i].crd);
        g_test_message("%s", cases[i].crd);
        if (cases[i].want != NULL && strcmp(cases[i].want, "*") == 0)
            g_assert_nonnull(got);
        else
            g_assert_cmpstr(got, ==, cases[i].want);
    }
}

static void test_crd_structural(void)
{
    static const struct {
        const char *schema, *want;
    } cases[] = {
            {",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{}}}}",
             "CustomResourceDefinition.apiextensions.k8s.io \"x\" is invalid: "
             "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be "
             "empty for specified object fields"},
            {",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":"
             "{\"x-kubernetes-preserve-unknown-fields\":true},\"n\":{\"x-kubernetes-int-or-"
             "string\":true}}}}",
             NULL},
            {",\"schema\":{\"openAPIV3Schema\":{\"type\":\"string\"}}",
             "CustomResourceDefinition.apiextensions.k8s.io \"x\" is invalid: "
             "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": must be object at "
             "the root"},
            {",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"l\":{"
             "\"type\":\"array\"}}}}",
             "CustomResourceDefinition.apiextensions.k8s.io \"x\" is invalid: "
             "spec.validation.openAPIV3Schema.properties[l].items: Required value: must be "
             "specified"},
            {"", "CustomResourceDefinition.apiextensions.k8s.io \"x\" is invalid: "
                 "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *crd = g_strdup_printf(
                "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"group\":\"example.io\",\"versions\":[{"
                "\"name\":\"v1\",\"served\":true,\"storage\":true%s}]}}",
                cases[i].schema);
        g_autofree char *got = check_crd(crd);
        g_test_message("%s", crd);
        g_assert_cmpstr(got, ==, cases[i].want);
    }
}

static void test_crd_depth(void)
{
    g_autofree char *deep = nested(KAS_SCHEMA_MAX_DEPTH + 1, TRUE);
    g_autofree char *crd = g_strdup_printf(
            "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"group\":\"example.io\",\"versions\":[{"
            "\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":%s}}]"
            "}}",
            deep);
    g_autofree char *got = check_crd(crd);
    g_assert_nonnull(got);
    g_assert_nonnull(strstr(got, "must not be nested deeper than 64"));
    g_autofree char *ok = nested(KAS_SCHEMA_MAX_DEPTH, TRUE);
    g_autofree char *crd2 = g_strdup_printf(
            "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"group\":\"example.io\",\"versions\":[{"
            "\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":%s}}]"
            "}}",
            ok);
    g_autofree char *got2 = check_crd(crd2);
    g_assert_null(got2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/apiserver/schema/validate/messages", test_validate_messages);
    g_test_add_func("/apiserver/schema/validate/error-cap", test_validate_error_cap);
    g_test_add_func("/apiserver/schema/validate/depth", test_validate_depth);
    g_test_add_func("/apiserver/schema/prune", test_prune);
    g_test_add_func("/apiserver/schema/crd/protected-groups", test_crd_protected_groups);
    g_test_add_func("/apiserver/schema/crd/structural", test_crd_structural);
    g_test_add_func("/apiserver/schema/crd/depth", test_crd_depth);
    return g_test_run();
}
