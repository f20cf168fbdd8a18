/*
 * Tests for kube/kb-quantity: parsing, rounding and canonical formatting as apimachinery's
 * resource.Quantity does them. Most expectations come from apimachinery's quantity_test.go
 * (TestQuantityParse, TestQuantityString, TestQuantityParseEmit) and from the Kubernetes
 * documentation ("Resource Management for Pods and Containers").
 */
#include <glib.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-quantity.h"

#define DSI KB_QUANTITY_DECIMAL_SI
#define BSI KB_QUANTITY_BINARY_SI
#define DEX KB_QUANTITY_DECIMAL_EXPONENT

typedef struct {
    const char *in;
    gint64 unscaled;
    gint32 scale;
    KbQuantityFormat format;
} ParseCase;

/* Values are normalized (no trailing zeros in unscaled), so each has a single representation. */
static const ParseCase parse_cases[] = {
    /* zero in every format */
    {"0", 0, 0, DSI},
    {"0n", 0, 0, DSI},
    {"0u", 0, 0, DSI},
    {"0m", 0, 0, DSI},
    {"0Ki", 0, 0, BSI},
    {"0k", 0, 0, DSI},
    {"0Mi", 0, 0, BSI},
    {"0e3", 0, 0, DEX},
    {"000", 0, 0, DSI},
    /* plain numbers and decimal SI */
    {"1", 1, 0, DSI},
    {"9", 9, 0, DSI},
    {"5n", 5, -9, DSI},
    {"4u", 4, -6, DSI},
    {"3m", 3, -3, DSI},
    {"100m", 1, -1, DSI},
    {"8k", 8, 3, DSI},
    {"50k", 5, 4, DSI},
    {"7M", 7, 6, DSI},
    {"6G", 6, 9, DSI},
    {"5T", 5, 12, DSI},
    {"300T", 3, 14, DSI},
    {"2P", 2, 15, DSI},
    {"1E", 1, 18, DSI},
    {"12E", 12, 18, DSI},
    /* binary SI */
    {"1Ki", 1024, 0, BSI},
    {"8Ki", 8192, 0, BSI},
    {"7Mi", 7340032, 0, BSI},
    {"6Gi", 6442450944, 0, BSI},
    {"5Ti", 549755813888, 1, BSI},
    {"4Pi", 4503599627370496, 0, BSI},
    {"3Ei", 3458764513820540928, 0, BSI},
    /* decimal exponents */
    {"1E-3", 1, -3, DEX},
    {"1e3", 1, 3, DEX},
    {"1E6", 1, 6, DEX},
    {"1e9", 1, 9, DEX},
    {"1E18", 1, 18, DEX},
    {"1e14", 1, 14, DEX},
    {"1.2e3", 12, 2, DEX},
    {"1.3E+6", 13, 5, DEX},
    {"1.40e9", 14, 8, DEX},
    {"1.53E12", 153, 10, DEX},
    {"1.7E18", 17, 17, DEX},
    {"0.5e0", 5, -1, DEX},
    {"0.5e-1", 5, -2, DEX},
    {"0.5e-2", 5, -3, DEX},
    /* fractions */
    {"100.035k", 100035, 0, DSI},
    {"0.001", 1, -3, DSI},
    {"0.0005k", 5, -1, DSI},
    {"0.005", 5, -3, DSI},
    {"0.5", 5, -1, DSI},
    {"0.00050k", 5, -1, DSI},
    {"0.50000", 5, -1, DSI},
    {"10.035M", 10035, 3, DSI},
    {"9.01", 901, -2, DSI},
    {"8.1k", 81, 2, DSI},
    {"7.123456M", 7123456, 0, DSI},
    {"6.987654321G", 6987654321, 0, DSI},
    {"5.444T", 5444, 9, DSI},
    {"2.5P", 25, 14, DSI},
    {"1.01E", 101, 16, DSI},
    /* rounding up to nano-units and the binary cap */
    {"3.001n", 4, -9, DSI},
    {"1.1E-9", 2, -9, DEX},
    {"0.0000000001", 1, -9, DSI},
    {"0.0000000005", 1, -9, DSI},
    {"0.00000000050", 1, -9, DSI},
    {"0.5e-9", 1, -9, DEX},
    {"0.9n", 1, -9, DSI},
    {"0.00000012345", 124, -9, DSI},
    {"0.00000012354", 124, -9, DSI},
    {"0.999999999999", 1, 0, DSI},
    {"1e-2147483647", 1, -9, DEX},
    {"9Ei", G_MAXINT64, 0, BSI},
    {"8Ei", G_MAXINT64, 0, BSI},
    {"9223372036854775807Ki", G_MAXINT64, 0, BSI},
    {"123456789012345678901234567890Mi", G_MAXINT64, 0, BSI},
    {"7.999999999Ei", 9223372035701854304, 0, BSI},
    {"7.999994999Ei", 922336627109433127, 1, BSI}, /* found by fuzzing: normalized too */
    /* fractional binary */
    {"100.035Ki", 10243584, -2, BSI},
    {"0.5Mi", 524288, 0, BSI},
    {"0.5Ki", 512, 0, BSI},
    {"0.05Gi", 536870912, -1, BSI},
    {"0.025Ti", 274877906944, -1, BSI},
    /* "things written by trolls" in apimachinery's table */
    {"0.000000000001Ki", 2, -9, DSI},
    {".001", 1, -3, DSI},
    {".0001k", 1, -1, DSI},
    {"1.", 1, 0, DSI},
    {"1.G", 1, 9, DSI},
    {"00012", 12, 0, DSI},
    /* signs */
    {"-1.5", -15, -1, DSI},
    {"+2Gi", 2147483648, 0, BSI},
    {"-3.001n", -4, -9, DSI},
    {"-0", 0, 0, DSI},
    /* the documentation's "about the same" memory values */
    {"128974848", 128974848, 0, DSI},
    {"129e6", 129, 6, DEX},
    {"129M", 129, 6, DSI},
    {"128974848000m", 128974848, 0, DSI},
    {"123Mi", 128974848, 0, BSI},
    /* large values that still fit the mantissa */
    {"9223372036854775807", G_MAXINT64, 0, DSI},
    {"100000000000000000000", 1, 20, DSI},
    {"1e2147483647", 1, 2147483647, DEX},
    {"10e2147483646", 1, 2147483647, DEX},
    {"0.0000000000000000000000000000001e40", 1, 9, DEX},
};

typedef struct {
    const char *in;
    const char *out;
} FormatCase;

static const FormatCase format_cases[] = {
    /* from the task and apimachinery's TestQuantityString / TestQuantityParseEmit */
    {"1.5", "1500m"},
    {"0.5Ki", "512"},
    {"1000m", "1"},
    {"1e3", "1e3"},
    {"1024Mi", "1Gi"},
    {"1Ki", "1Ki"},
    {"1Mi", "1Mi"},
    {"1Gi", "1Gi"},
    {"300Mi", "300Mi"},
    {"307200Ki", "300Mi"},
    {"6Ki", "6Ki"},
    {"1001Gi", "1001Gi"},
    {"1025024Mi", "1001Gi"},
    {"1024Gi", "1Ti"},
    {"1.5Gi", "1536Mi"},
    {"1.5Ki", "1536"},
    {"2Ki", "2Ki"},
    {"1025Ki", "1025Ki"},
    {"1000M", "1G"},
    {"0.001T", "1G"},
    {"1000000k", "1G"},
    {"1000000000", "1G"},
    {"1000u", "1m"},
    {"80m", "80m"},
    {"1.08", "1080m"},
    {"1080000000n", "1080m"},
    {"300M", "300M"},
    {"1T", "1T"},
    {"1E", "1E"},
    {"12E", "12E"},
    {"1000E", "1e21"},
    {"5000E", "5e21"},
    {"1000000E", "1e24"},
    {"1234567M", "1234567M"},
    {"3k", "3k"},
    {"1025", "1025"},
    {"2048", "2048"},
    {"1500", "1500"},
    {"0", "0"},
    {"0Ki", "0"},
    {"0e9", "0"},
    {"00", "0"},
    {"1e9", "1e9"},
    {".001e12", "1e9"},
    {"1e-3", "1e-3"},
    {"0.001e0", "1e-3"},
    {"1000e-12", "1e-9"},
    {"80e-3", "80e-3"},
    {"300e6", "300e6"},
    {"1e12", "1e12"},
    {"3e3", "3e3"},
    {"1e1", "10"},
    {"1.2e3", "1200"},
    {"1.5e3", "1500"},
    {"1n", "1n"},
    {"80n", "80n"},
    {"1080n", "1080n"},
    {"1u", "1u"},
    {"80u", "80u"},
    {"1080u", "1080u"},
    {".001Ki", "1024m"},
    {".000001Ki", "1024u"},
    {".000000001Ki", "1024n"},
    {".000000000001Ki", "2n"},
    {"0.1", "100m"},
    {"100m", "100m"},
    {"100.035k", "100035"},
    {"1.1E-9", "2e-9"},
    {"129e6", "129e6"},
    {"129M", "129M"},
    {"128974848000m", "128974848"},
    {"123Mi", "123Mi"},
    {"9Ei", "9223372036854775807"},
    {"-1.5", "-1500m"},
    {"-1Gi", "-1Gi"},
    {"-1024Mi", "-1Gi"},
    {"-0.5Ki", "-512"},
    {"-1e3", "-1e3"},
    {"+100m", "100m"},
    {"1.G", "1G"},
};

typedef struct {
    const char *in;
    gint64 milli;
    gint64 value;
} ValueCase;

static const ValueCase value_cases[] = {
    {"100m", 100, 1},
    {"0.1", 100, 1},
    {"1", 1000, 1},
    {"1.5", 1500, 2},
    {"2", 2000, 2},
    {"250m", 250, 1},
    {"2Gi", 2147483648000, 2147483648},
    {"1n", 1, 1},
    {"1u", 1, 1},
    {"1001u", 2, 1},
    {"1000u", 1, 1},
    {"0.0001", 1, 1},
    {"-1.5", -1500, -2},
    {"-9.01", -9010, -10},
    {"-1n", -1, -1},
    {"0", 0, 0},
    {"0Ki", 0, 0},
    {"129M", 129000000000, 129000000},
    {"9e18", G_MAXINT64, 9000000000000000000},
    {"9223372036854775807", G_MAXINT64, G_MAXINT64},
    {"9Ei", G_MAXINT64, G_MAXINT64},
    {"12E", G_MAXINT64, G_MAXINT64},
    {"1e30", G_MAXINT64, G_MAXINT64},
    {"-1e30", -G_MAXINT64, -G_MAXINT64},
    {"1e2147483647", G_MAXINT64, G_MAXINT64},
    {"9223372036854775.807k", G_MAXINT64, G_MAXINT64},
    {"9223372036854775.807", 9223372036854775807, 9223372036854776},
};

typedef struct {
    const char *in;
    const char *why; /* a substring of the message, after the quoted input */
} ErrorCase;

static const ErrorCase error_cases[] = {
    {"", "empty"},
    {"12Qi", "unknown suffix \"Qi\""},
    {"1.2.3", "more than one decimal point"},
    {"1.1.M", "more than one decimal point"},
    {".", "no digits"},
    {"-.", "no digits"},
    {"-", "no digits"},
    {"+", "no digits"},
    {"m", "no digits"},
    {"Ki", "no digits"},
    {"e3", "no digits"},
    {"aoeu", "no digits"},
    {"--1", "misplaced sign"},
    {"1+1.0M", "misplaced sign"},
    {"1 Gi", "white space"},
    {" 1", "no digits"},
    {"1 ", "white space"},
    {"1\n", "white space"},
    {"0.1mi", "unknown suffix \"mi\""},
    {"0.1am", "unknown suffix \"am\""},
    {".5i", "unknown suffix \"i\""},
    {"1i", "unknown suffix \"i\""},
    {"-3.01i", "unknown suffix \"i\""},
    {"-3.01e-", "unknown suffix \"e-\""},
    {"1e", "unknown suffix \"e\""},
    {"1e+", "unknown suffix \"e+\""},
    {"1EE", "unknown suffix \"EE\""},
    {"1k3", "unknown suffix \"k3\""},
    {"1Ki3", "unknown suffix \"Ki3\""},
    {"1KI", "unknown suffix"},
    {"1Gb", "unknown suffix"},
    {"1,5", "unknown suffix"},
    {"0x10", "unknown suffix"},
    {"1e4294967297", "unknown suffix"},
    {"1E2147483648", "unknown suffix"},
    {"1e-2147483648", "unknown suffix"},
    {"99999999999999999999", "overflow"},
    {"9223372036854775808", "overflow"},
    {"-9223372036854775808", "overflow"},
    {"12345678901.234567891", "overflow"},
    {"10e2147483647", "overflow (exponent too large)"},
    {"10000e2147483647", "overflow (exponent too large)"},
};

static void test_parse(gconstpointer data)
{
    const ParseCase *c = data;
    g_autoptr(GError) error = NULL;
    KbQuantity q;

    g_assert_true(kb_quantity_parse(c->in, &q, &error));
    g_assert_no_error(error);
    g_assert_cmpint(q.unscaled, ==, c->unscaled);
    g_assert_cmpint(q.scale, ==, c->scale);
    g_assert_cmpint(q.format, ==, c->format);

    /* apimachinery's table is also run negated and with an explicit '+'. */
    if (c->in[0] != '-' && c->in[0] != '+') {
        g_autofree char *neg = g_strconcat("-", c->in, NULL);
        g_autofree char *pos = g_strconcat("+", c->in, NULL);
        KbQuantity n, p;
        g_assert_true(kb_quantity_parse(neg, &n, &error));
        g_assert_cmpint(n.unscaled, ==, -c->unscaled);
        g_assert_cmpint(n.scale, ==, c->scale);
        g_assert_cmpint(n.format, ==, c->format);
        g_assert_true(kb_quantity_parse(pos, &p, &error));
        g_assert_true(memcmp(&p, &q, sizeof(p)) == 0);
    }

    /* The canonical string parses back to the same value. */
    g_autofree char *s = kb_quantity_format(&q);
    KbQuantity back;
    g_assert_true(kb_quantity_parse(s, &back, &error));
    g_assert_cmpint(back.unscaled, ==, q.unscaled);
    g_assert_cmpint(back.scale, ==, q.scale);
}

static void test_format(gconstpointer data)
{
    const FormatCase *c = data;
    g_autoptr(GError) error = NULL;
    KbQuantity q;

    g_assert_true(kb_quantity_parse(c->in, &q, &error));
    g_assert_no_error(error);
    g_autofree char *s = kb_quantity_format(&q);
    g_assert_cmpstr(s, ==, c->out);

    /* Canonical strings are fixed points. */
    KbQuantity again;
    g_assert_true(kb_quantity_parse(s, &again, &error));
    g_autofree char *s2 = kb_quantity_format(&again);
    g_assert_cmpstr(s2, ==, c->out);
}

static void test_value(gconstpointer data)
{
    const ValueCase *c = data;
    g_autoptr(GError) error = NULL;
    KbQuantity q;
    gint64 v = -1;

    g_assert_true(kb_quantity_parse(c->in, &q, &error));
    g_assert_cmpint(kb_quantity_milli_value(&q), ==, c->milli);
    g_assert_cmpint(kb_quantity_value(&q), ==, c->value);
    g_assert_true(kb_quantity_parse_milli(c->in, &v, &error));
    g_assert_cmpint(v, ==, c->milli);
    g_assert_true(kb_quantity_parse_value(c->in, &v, &error));
    g_assert_cmpint(v, ==, c->value);
}

static void test_error(gconstpointer data)
{
    const ErrorCase *c = data;
    g_autoptr(GError) error = NULL;
    KbQuantity q = {42, 7, DEX};
    gint64 v = 42;

    g_assert_false(kb_quantity_parse(c->in, &q, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_autofree char *quoted = g_strdup_printf("invalid quantity \"%s\": ", c->in);
    g_assert_true(g_str_has_prefix(error->message, quoted));
    g_assert_nonnull(strstr(error->message + strlen(quoted), c->why));
    /* Output untouched on failure. */
    g_assert_cmpint(q.unscaled, ==, 42);
    g_clear_error(&error);

    g_assert_false(kb_quantity_parse_milli(c->in, &v, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_clear_error(&error);
    g_assert_false(kb_quantity_parse_value(c->in, &v, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpint(v, ==, 42);
}

/* The documentation: 128974848, 129e6, 129M, 128974848000m and 123Mi are all about the same. */
static void test_docs_memory_about_the_same(void)
{
    static const char *const same[] = {"128974848", "129e6", "129M", "128974848000m", "123Mi"};
    for (gsize i = 0; i < G_N_ELEMENTS(same); i++) {
        gint64 v = 0;
        g_assert_true(kb_quantity_parse_value(same[i], &v, NULL));
        g_assert_cmpint(v, >=, 128974848);
        g_assert_cmpint(v, <=, 129000000);
    }
    gint64 a = 0, b = 0;
    g_assert_true(kb_quantity_parse_value("128974848000m", &a, NULL));
    g_assert_true(kb_quantity_parse_value("123Mi", &b, NULL));
    g_assert_cmpint(a, ==, b);
}

/* The documentation: 0.1 cpu is 100m; 1 cpu is 1000m; precision finer than 1m is rounded up. */
static void test_docs_cpu(void)
{
    gint64 a = 0, b = 0;
    g_assert_true(kb_quantity_parse_milli("0.1", &a, NULL));
    g_assert_true(kb_quantity_parse_milli("100m", &b, NULL));
    g_assert_cmpint(a, ==, 100);
    g_assert_cmpint(a, ==, b);
    g_assert_true(kb_quantity_parse_milli("0.0005", &a, NULL));
    g_assert_cmpint(a, ==, 1);
}

/* A very long input (fuzzers produce them) is exact, not truncated or slow. */
static void test_long_inputs(void)
{
    g_autoptr(GString) s = g_string_new("0.");
    for (int i = 0; i < 5000; i++)
        g_string_append_c(s, '0');
    g_string_append(s, "1Ei");
    KbQuantity q;
    g_assert_true(kb_quantity_parse(s->str, &q, NULL));
    /* 10^-5001 * 2^60 is far below a nano-unit: rounded up to 1n. */
    g_assert_cmpint(q.unscaled, ==, 1);
    g_assert_cmpint(q.scale, ==, -9);
    g_assert_cmpint(q.format, ==, DSI);

    g_autoptr(GString) big = g_string_new("1");
    for (int i = 0; i < 5000; i++)
        g_string_append_c(big, '0');
    g_string_append(big, "Ki");
    g_assert_true(kb_quantity_parse(big->str, &q, NULL));
    g_assert_cmpint(q.unscaled, ==, G_MAXINT64);

    g_autoptr(GString) dec = g_string_new("7");
    for (int i = 0; i < 3000; i++)
        g_string_append_c(dec, '0');
    g_assert_true(kb_quantity_parse(dec->str, &q, NULL));
    g_assert_cmpint(q.unscaled, ==, 7);
    g_assert_cmpint(q.scale, ==, 3000);
    g_autofree char *f = kb_quantity_format(&q);
    g_assert_cmpstr(f, ==, "7e3000");
}

/* Formatting quantities built by hand, outside what parsing produces. */
static void test_format_constructed(void)
{
    static const struct {
        KbQuantity q;
        const char *out;
    } cases[] = {
        {{1, -12, DSI}, "1e-12"},
        {{1, -10, DSI}, "100e-12"},
        {{2000, 0, BSI}, "2000"},
        {{-2000, 0, BSI}, "-2000"},
        {{5, 0, BSI}, "5"},
        {{500, -3, BSI}, "500m"},
        {{1080, -3, DSI}, "1080m"},
        {{10800, -4, DSI}, "1080m"},
        {{1000, 6, DSI}, "1G"},
        {{1234567, -3, BSI}, "1234567m"},
        {{G_MININT64, 0, DSI}, "-9223372036854775808"},
        {{G_MAXINT64, 1, DSI}, "92233720368547758070"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *s = kb_quantity_format(&cases[i].q);
        g_assert_cmpstr(s, ==, cases[i].out);
    }
}

static char *case_path(const char *group, const char *in)
{
    GString *p = g_string_new("/kube/quantity/");
    g_string_append(p, group);
    g_string_append_c(p, '/');
    if (*in == '\0')
        g_string_append(p, "(empty)");
    for (const char *c = in; *c != '\0' && c - in < 40; c++)
        if (g_ascii_isgraph(*c) && *c != '/' && *c != '%')
            g_string_append_c(p, *c);
        else
            g_string_append_printf(p, "%%%02X", (guchar)*c);
    return g_string_free(p, FALSE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    for (gsize i = 0; i < G_N_ELEMENTS(parse_cases); i++) {
        g_autofree char *p = case_path("parse", parse_cases[i].in);
        g_test_add_data_func(p, &parse_cases[i], test_parse);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(format_cases); i++) {
        g_autofree char *p = case_path("format", format_cases[i].in);
        g_test_add_data_func(p, &format_cases[i], test_format);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(value_cases); i++) {
        g_autofree char *p = case_path("value", value_cases[i].in);
        g_test_add_data_func(p, &value_cases[i], test_value);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(error_cases); i++) {
        g_autofree char *p = case_path("error", error_cases[i].in);
        g_test_add_data_func(p, &error_cases[i], test_error);
    }
    g_test_add_func("/kube/quantity/docs/memory-about-the-same", test_docs_memory_about_the_same);
    g_test_add_func("/kube/quantity/docs/cpu", test_docs_cpu);
    g_test_add_func("/kube/quantity/long-inputs", test_long_inputs);
    g_test_add_func("/kube/quantity/format/constructed", test_format_constructed);
    return g_test_run();
}
