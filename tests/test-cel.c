/*
 * Tests for kube/kb-cel: CEL device selectors compiled once and evaluated per device.
 *
 * The devices are those NVIDIA's DRA driver (k8s-dra-driver-gpu) publishes: a full GPU, a MIG
 * device and a ComputeDomain channel, with the attributes and capacities the driver sets. The
 * expressions include every DeviceClass selector of the driver's Helm chart and every selector
 * of its demo specs and end-to-end tests; expected results follow cel-go as Kubernetes
 * configures it for DRA (k8s.io/dynamic-resource-allocation/cel).
 */
#include <glib.h>
#include <string.h>

#include "kube/kb-cel.h"

#define A_INT(d, n, v)                                                                             \
    {                                                                                              \
        .domain = d, .name = n, .type = KB_CEL_ATTR_INT, .int_value = v                            \
    }
#define A_BOOL(d, n, v)                                                                            \
    {                                                                                              \
        .domain = d, .name = n, .type = KB_CEL_ATTR_BOOL, .bool_value = v                          \
    }
#define A_STR(d, n, v)                                                                             \
    {                                                                                              \
        .domain = d, .name = n, .type = KB_CEL_ATTR_STRING, .string_value = v                      \
    }
#define A_VER(d, n, v)                                                                             \
    {                                                                                              \
        .domain = d, .name = n, .type = KB_CEL_ATTR_VERSION, .string_value = v                     \
    }
#define GPU "gpu.nvidia.com"

static const KbCelAttribute gpu_attrs[] = {
        A_STR(GPU, "type", "gpu"),
        A_STR(GPU, "uuid", "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"),
        A_INT(GPU, "index", 2),
        A_INT(GPU, "minor", 2),
        A_STR(GPU, "productName", "NVIDIA A100-SXM4-40GB"),
        A_STR(GPU, "brand", "Nvidia"),
        A_STR(GPU, "architecture", "Ampere"),
        A_VER(GPU, "cudaComputeCapability", "8.0.0"),
        A_VER(GPU, "driverVersion", "550.54.15"),
        A_VER(GPU, "cudaDriverVersion", "12.4.0"),
        A_BOOL(GPU, "migCapable", TRUE),
        A_STR("resource.kubernetes.io", "pcieRoot", "pci0000:00"),
        A_STR("kb.example.com", "nvlinkIsland", "island-1"),
};

static const KbCelAttribute mig_attrs[] = {
        A_STR(GPU, "type", "mig"),
        A_STR(GPU, "uuid", "MIG-2f9ea7f6-3b11-5c4c-a4e6-8d0c4f5a2b11"),
        A_STR(GPU, "parentUUID", "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"),
        A_STR(GPU, "profile", "1g.5gb"),
        A_INT(GPU, "index", 0),
        A_STR(GPU, "productName", "NVIDIA A100-SXM4-40GB"),
        A_VER(GPU, "driverVersion", "550.54.15"),
};

static const KbCelAttribute channel_attrs[] = {
        A_STR("compute-domain.nvidia.com", "type", "channel"),
        A_INT("compute-domain.nvidia.com", "id", 0),
};

static const KbCelAttribute bad_attrs[] = {
        A_VER(GPU, "driverVersion", "550.54"), /* not a semantic version */
        A_STR(GPU, "productName", "H100\xff"), /* not UTF-8 */
};

static KbCelCapacity gpu_caps[] = {{GPU, "memory", {0}}};
static KbCelCapacity mig_caps[] = {
        {GPU, "memory", {0}},     {GPU, "multiprocessors", {0}}, {GPU, "copyEngines", {0}},
        {GPU, "decoders", {0}},   {GPU, "encoders", {0}},        {GPU, "jpegEngines", {0}},
        {GPU, "ofaEngines", {0}},
};
static const char *const mig_cap_values[] = {"4864Mi", "14", "1", "0", "0", "0", "0"};

static KbCelDevice devices[] = {
        {.driver = GPU,
         .attributes = gpu_attrs,
         .n_attributes = G_N_ELEMENTS(gpu_attrs),
         .capacity = gpu_caps,
         .n_capacity = G_N_ELEMENTS(gpu_caps)},
        {.driver = GPU,
         .attributes = mig_attrs,
         .n_attributes = G_N_ELEMENTS(mig_attrs),
         .capacity = mig_caps,
         .n_capacity = G_N_ELEMENTS(mig_caps),
         .allow_multiple_allocations = TRUE},
        {.driver = "compute-domain.nvidia.com",
         .attributes = channel_attrs,
         .n_attributes = G_N_ELEMENTS(channel_attrs)},
        {.driver = GPU, .attributes = bad_attrs, .n_attributes = G_N_ELEMENTS(bad_attrs)},
};
enum { DEV_GPU, DEV_MIG, DEV_CHANNEL, DEV_BAD };

static void devices_init(void)
{
    g_assert_true(kb_quantity_parse("40Gi", &gpu_caps[0].value, NULL));
    for (guint i = 0; i < G_N_ELEMENTS(mig_caps); i++)
        g_assert_true(kb_quantity_parse(mig_cap_values[i], &mig_caps[i].value, NULL));
}

enum { NO, YES, FAILS };

typedef struct {
    const char *name;
    const char *expr;
    int dev;
    int want; /* NO, YES, or FAILS with code and a fragment of the message */
    int code;
    const char *msg;
} Case;

#define MATCH(name, expr, dev)                                                                     \
    {                                                                                              \
        name, expr, dev, YES, 0, NULL                                                              \
    }
#define NOMATCH(name, expr, dev)                                                                   \
    {                                                                                              \
        name, expr, dev, NO, 0, NULL                                                               \
    }
#define FAIL(name, expr, dev, c, m)                                                                \
    {                                                                                              \
        name, expr, dev, FAILS, KB_CEL_ERROR_##c, m                                                \
    }

static const Case cases[] = {
        /* NVIDIA's DeviceClasses (deployments/helm/.../templates/deviceclass-*.yaml). */
        MATCH("nvidia/class-gpu",
              "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
              "'gpu'",
              DEV_GPU),
        NOMATCH("nvidia/class-gpu-on-mig",
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
                "'gpu'",
                DEV_MIG),
        NOMATCH("nvidia/class-gpu-on-channel",
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
                "'gpu'",
                DEV_CHANNEL),
        MATCH("nvidia/class-mig",
              "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
              "'mig'",
              DEV_MIG),
        NOMATCH("nvidia/class-vfio",
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
                "'vfio'",
                DEV_GPU),
        MATCH("nvidia/class-cd-channel",
              "device.driver == 'compute-domain.nvidia.com' && "
              "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
              "device.attributes['compute-domain.nvidia.com'].id == 0",
              DEV_CHANNEL),
        NOMATCH("nvidia/class-cd-daemon",
                "device.driver == 'compute-domain.nvidia.com' && "
                "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
                DEV_CHANNEL),
        NOMATCH("nvidia/class-cd-daemon-on-gpu",
                "device.driver == 'compute-domain.nvidia.com' && "
                "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
                DEV_GPU),
        /* NVIDIA's demo specs and tests (demo/specs, tests/bats). */
        MATCH("nvidia/mig-1g-5gb", "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
              DEV_MIG),
        NOMATCH("nvidia/mig-2g-10gb", "device.attributes['gpu.nvidia.com'].profile == '2g.10gb'",
                DEV_MIG),
        FAIL("nvidia/profile-on-full-gpu",
             "device.attributes['gpu.nvidia.com'].profile == '3g.20gb'", DEV_GPU, RUNTIME,
             "no such key: profile"),
        MATCH("nvidia/mig-1g-12gb-class",
              "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
              "'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
              DEV_MIG),
        MATCH("nvidia/gpu-test6-a100",
              "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')\n"
              "&&\n"
              "(device.attributes['gpu.nvidia.com'].index == 0 ||\n"
              " device.attributes['gpu.nvidia.com'].index == 2 ||\n"
              " device.attributes['gpu.nvidia.com'].index == 4 ||\n"
              " device.attributes['gpu.nvidia.com'].index == 6)\n",
              DEV_GPU),
        NOMATCH("nvidia/gpu-test6-h300",
                "device.attributes[\"gpu.nvidia.com\"].productName.lowerAscii().matches("
                "\"^.*h300.*$\")",
                DEV_GPU),
        NOMATCH("nvidia/cel-nomatch",
                "device.attributes[\"gpu.nvidia.com\"].productName == \"NONEXISTENT-GPU-XYZ\"",
                DEV_GPU),
        MATCH("nvidia/architecture",
              "device.attributes[\"gpu.nvidia.com\"].architecture == \"Ampere\"", DEV_GPU),
        MATCH("nvidia/driver-version",
              "device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"550.0.0\")) "
              ">= 0",
              DEV_GPU),
        NOMATCH("nvidia/driver-version-newer",
                "device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"570.86."
                "10\")) >= 0",
                DEV_GPU),
        MATCH("nvidia/memory-40gi",
              "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0",
              DEV_GPU),
        NOMATCH("nvidia/memory-80gi",
                "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0",
                DEV_GPU),
        MATCH("nvidia/memory-isGreaterThan-10Gi",
              "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity(\"10Gi\"))",
              DEV_GPU),
        MATCH("nvidia/mig-sm-less-than-30",
              "device.capacity['gpu.nvidia.com'].multiprocessors.isLessThan(quantity(\"30\"))",
              DEV_MIG),
        NOMATCH("nvidia/mig-sm-greater-than-50",
                "device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"50\"))",
                DEV_MIG),
        MATCH("nvidia/simple-mig",
              "device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"10\"))\n"
              "&&\n"
              "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity(\"4Gi\"))",
              DEV_MIG),
        NOMATCH("nvidia/simple-mig-10gi",
                "device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"10\"))"
                " && device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity(\"10Gi\"))",
                DEV_MIG),
        FAIL("nvidia/mig-sm-on-full-gpu",
             "device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"10\"))",
             DEV_GPU, RUNTIME, "no such key: multiprocessors"),

        /* The environment. */
        MATCH("env/driver-field", "device.driver.startsWith('gpu.')", DEV_GPU),
        MATCH("env/allow-multiple", "device.allowMultipleAllocations", DEV_MIG),
        NOMATCH("env/allow-multiple-false", "device.allowMultipleAllocations", DEV_GPU),
        MATCH("env/select-form", "device.attributes['gpu.nvidia.com']['architecture'] == 'Ampere'",
              DEV_GPU),
        MATCH("env/other-domain", "device.attributes['kb.example.com'].nvlinkIsland == 'island-1'",
              DEV_GPU),
        MATCH("env/index-with-computed-key",
              "device.attributes['gpu.' + 'nvidia.com']['arch' + 'itecture'] == 'Ampere'", DEV_GPU),
        FAIL("env/missing-domain-is-empty-map", "device.attributes['dra.example.com'].model == 'x'",
             DEV_GPU, RUNTIME, "no such key: model"),
        MATCH("env/missing-domain-size", "size(device.attributes['dra.example.com']) == 0",
              DEV_GPU),
        MATCH("env/domain-size", "device.attributes['compute-domain.nvidia.com'].size() == 2",
              DEV_CHANNEL),
        MATCH("env/domains-size", "size(device.attributes) == 3 && size(device.capacity) == 1",
              DEV_GPU),
        MATCH("env/has-attr", "has(device.attributes['gpu.nvidia.com'].profile)", DEV_MIG),
        NOMATCH("env/has-attr-missing", "has(device.attributes['gpu.nvidia.com'].profile)",
                DEV_GPU),
        MATCH("env/has-guard",
              "!has(device.attributes['gpu.nvidia.com'].profile) || "
              "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
              DEV_GPU),
        MATCH("env/has-cap", "has(device.capacity['gpu.nvidia.com'].memory)", DEV_GPU),
        MATCH("env/in-domain", "'productName' in device.attributes['gpu.nvidia.com']", DEV_GPU),
        NOMATCH("env/in-domain-missing", "'profile' in device.attributes['gpu.nvidia.com']",
                DEV_GPU),
        MATCH("env/in-domains", "'gpu.nvidia.com' in device.attributes", DEV_GPU),
        NOMATCH("env/in-domains-missing", "'dra.example.com' in device.capacity", DEV_GPU),
        MATCH("env/version-attr-semver",
              "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('7."
              "5.0'))",
              DEV_GPU),
        MATCH("env/version-attr-major",
              "device.attributes['gpu.nvidia.com'].cudaDriverVersion.major() == 12 && "
              "device.attributes['gpu.nvidia.com'].cudaDriverVersion.minor() == 4 && "
              "device.attributes['gpu.nvidia.com'].cudaDriverVersion.patch() == 0",
              DEV_GPU),
        MATCH("env/version-attr-equals",
              "device.attributes['gpu.nvidia.com'].driverVersion == semver('550.54.15')", DEV_GPU),
        MATCH("env/bool-attr", "device.attributes['gpu.nvidia.com'].migCapable", DEV_GPU),
        FAIL("env/bad-version-attr",
             "device.attributes['gpu.nvidia.com'].driverVersion.major() > 500", DEV_BAD, RUNTIME,
             "invalid semantic version \"550.54\""),
        FAIL("env/result-not-bool", "device.attributes['gpu.nvidia.com'].index", DEV_GPU, RUNTIME,
             "CEL result of type int could not be converted to bool"),
        MATCH("env/cel-bind",
              "cel.bind(g, device.attributes['gpu.nvidia.com'], g.type == 'gpu' && g.index == 2 "
              "&& has(g.uuid) && 'brand' in g)",
              DEV_GPU),
        FAIL("env/cel-bind-missing",
             "cel.bind(g, device.attributes['gpu.nvidia.com'], g.profile "
             "== 'x')",
             DEV_GPU, RUNTIME, "no such key: profile"),
        MATCH("env/cel-bind-capacity",
              "cel.bind(c, device.capacity['gpu.nvidia.com'], c.memory.asInteger() == "
              "42949672960)",
              DEV_GPU),

        /* Literals. */
        MATCH("lit/int", "1 == 1 && 0x10 == 16 && -5 < 0", DEV_GPU),
        MATCH("lit/int-min", "-9223372036854775808 < 0", DEV_GPU),
        FAIL("lit/int-too-big", "9223372036854775808 > 0", DEV_GPU, SYNTAX, "out of range"),
        MATCH("lit/uint", "18446744073709551615u > 0u && 0x1Fu == 31u", DEV_GPU),
        MATCH("lit/double", "1.5 > 1.25 && 1e3 == 1000.0 && .5 == 0.5 && 2.5e-1 == 0.25", DEV_GPU),
        MATCH("lit/string-escapes",
              "'a\\tb' == \"a\\x09b\" && '\\u00e9' == '\\xe9' && '\\351' == '\\xe9' && "
              "'\\U0001F600'.size() == 1 && "
              "'\\'' == \"'\"",
              DEV_GPU),
        MATCH("lit/raw-string", "r'a\\tb'.size() == 4 && R\"\\d\" == '\\\\d'", DEV_GPU),
        MATCH("lit/triple-quoted", "'''a\nb''' == \"a\\nb\" && \"\"\"x\"y\"\"\" == 'x\"y'",
              DEV_GPU),
        MATCH("lit/bool-null", "true != false && null == null", DEV_GPU),
        MATCH("lit/comment", "true // and a comment", DEV_GPU),
        FAIL("lit/bad-escape", "'\\q' == 'q'", DEV_GPU, SYNTAX, "invalid escape sequence"),
        FAIL("lit/surrogate", "'\\ud800' == 'q'", DEV_GPU, SYNTAX, "code point"),
        FAIL("lit/unterminated", "'abc", DEV_GPU, SYNTAX, "unterminated string"),
        FAIL("lit/newline-in-string", "'a\nb' == 'ab'", DEV_GPU, SYNTAX, "newline"),
        FAIL("lit/bytes", "b'abc' == b'abc'", DEV_GPU, UNSUPPORTED, "bytes literal"),

        /* Lists, in, exists and all. */
        MATCH("list/in", "device.attributes['gpu.nvidia.com'].index in [0, 2, 4, 6]", DEV_GPU),
        NOMATCH("list/not-in", "device.attributes['gpu.nvidia.com'].index in [1, 3]", DEV_GPU),
        MATCH("list/in-strings",
              "device.attributes['gpu.nvidia.com'].productName in ['NVIDIA A100-SXM4-40GB', "
              "'NVIDIA H100 80GB HBM3']",
              DEV_GPU),
        MATCH("list/in-dynamic", "'gpu' in [device.attributes['gpu.nvidia.com'].type]", DEV_GPU),
        MATCH("list/size-index", "[1, 2, 3].size() == 3 && [1, 2, 3][1] == 2", DEV_GPU),
        FAIL("list/index-out-of-range", "[1, 2][2] == 0", DEV_GPU, RUNTIME, "index out of range"),
        MATCH("list/equal", "[1, 2] == [1, 2] && ['a'] != ['b'] && [1] != [1, 1]", DEV_GPU),
        FAIL("list/heterogeneous", "[1, 'a'].size() == 2", DEV_GPU, TYPE,
             "type mismatch in a list literal: expected 'int' but found 'string'"),
        FAIL("list/heterogeneous-numbers", "2 in [1, 2.0]", DEV_GPU, TYPE, "type mismatch"),
        MATCH("list/dyn-elements", "[device.attributes['gpu.nvidia.com'].index, 7].size() == 2",
              DEV_GPU),
        MATCH("list/exists",
              "['a100', 'h100'].exists(p, "
              "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains(p))",
              DEV_GPU),
        NOMATCH("list/all", "[0, 2].all(i, device.attributes['gpu.nvidia.com'].index == i)",
                DEV_GPU),
        MATCH("list/exists-absorbs-error",
              "['profile', 'type'].exists(k, device.attributes['gpu.nvidia.com'][k] == 'gpu')",
              DEV_GPU),
        FAIL("list/all-keeps-error",
             "['type', 'profile'].all(k, device.attributes['gpu.nvidia.com'][k] != '')", DEV_GPU,
             RUNTIME, "no such key: profile"),
        FAIL("list/concat", "[1] + [2] == [1, 2]", DEV_GPU, UNSUPPORTED, "list concatenation"),
        FAIL("list/map-literal", "{'a': 1}['a'] == 1", DEV_GPU, UNSUPPORTED, "map literal"),
        FAIL("list/in-wrong-type", "1 in ['a']", DEV_GPU, TYPE, "no matching overload"),

        /* Comparisons across numeric types, strings, bools; heterogeneous equality. */
        MATCH("cmp/int-uint", "2 > 1u && -1 < 0u && 1u <= 1", DEV_GPU),
        MATCH("cmp/int-double", "2 > 1.5 && 3u >= 2.9 && 1 >= 1.0", DEV_GPU),
        MATCH("cmp/runtime-numeric-equality",
              "device.attributes['gpu.nvidia.com'].index == 2u && "
              "device.attributes['gpu.nvidia.com'].index == 2.0 && "
              "device.attributes['gpu.nvidia.com'].index != 2.5",
              DEV_GPU),
        FAIL("cmp/static-int-uint-equality", "1 == 1u", DEV_GPU, TYPE,
             "no matching overload for '_==_' applied to '(int, uint)'"),
        MATCH("cmp/double-int", "1.5 < 2 && 2.5 > 2 && 0.5 < 1u && -1.0 < 0u && 2.0 <= 2u",
              DEV_GPU),
        MATCH("cmp/double-out-of-int-range",
              "1e19 > 9223372036854775807 && -1e19 < -5 && "
              "1e20 > 18446744073709551615u",
              DEV_GPU),
        MATCH("cmp/strings", "'abc' < 'abd' && 'ab' < 'abc' && 'b' > 'abc' && 'x' <= 'x'", DEV_GPU),
        MATCH("cmp/bools", "false < true && true >= true", DEV_GPU),
        NOMATCH("cmp/heterogeneous-equality", "device.attributes['gpu.nvidia.com'].index == 'two'",
                DEV_GPU),
        MATCH("cmp/heterogeneous-inequality", "device.attributes['gpu.nvidia.com'].type != 1",
              DEV_GPU),
        FAIL("cmp/heterogeneous-order", "device.attributes['gpu.nvidia.com'].type < 1", DEV_GPU,
             RUNTIME, "no such overload"),
        FAIL("cmp/static-type-error", "1 == 'a'", DEV_GPU, TYPE,
             "no matching overload for '_==_' applied to '(int, string)'"),
        FAIL("cmp/static-order-error", "'a' < 1", DEV_GPU, TYPE, "_<_"),
        NOMATCH("cmp/nan", "0.0 / 0.0 == 0.0 / 0.0", DEV_GPU),
        MATCH("cmp/quantity-equal", "quantity('1') == quantity('1000m')", DEV_GPU),
        FAIL("cmp/quantity-order", "quantity('1') < quantity('2')", DEV_GPU, TYPE, "_<_"),

        /* Logic: CEL's commutative error handling. */
        NOMATCH("logic/false-and-error",
                "device.attributes['gpu.nvidia.com'].profile == 'x' && false", DEV_GPU),
        NOMATCH("logic/error-and-false-first",
                "false && device.attributes['gpu.nvidia.com'].profile == 'x'", DEV_GPU),
        MATCH("logic/error-or-true", "device.attributes['gpu.nvidia.com'].profile == 'x' || true",
              DEV_GPU),
        FAIL("logic/error-and-true", "device.attributes['gpu.nvidia.com'].profile == 'x' && true",
             DEV_GPU, RUNTIME, "no such key: profile"),
        FAIL("logic/error-or-false", "false || device.attributes['gpu.nvidia.com'].profile == 'x'",
             DEV_GPU, RUNTIME, "no such key"),
        MATCH("logic/not", "!(device.driver == 'x') && !!true", DEV_GPU),
        MATCH("logic/ternary",
              "(device.attributes['gpu.nvidia.com'].type == 'mig' ? "
              "device.attributes['gpu.nvidia.com'].profile : 'full') == 'full'",
              DEV_GPU),
        MATCH("logic/ternary-mig",
              "(device.attributes['gpu.nvidia.com'].type == 'mig' ? "
              "device.attributes['gpu.nvidia.com'].profile : 'full') == '1g.5gb'",
              DEV_MIG),
        MATCH("logic/ternary-dyn-branch",
              "(device.attributes['gpu.nvidia.com'].migCapable ? "
              "device.attributes['gpu.nvidia.com'].brand : 0) == 'Nvidia'",
              DEV_GPU),
        FAIL("logic/ternary-mixed-branches", "(true ? 1 : 'a') == 1", DEV_GPU, TYPE, "_?_:_"),
        FAIL("logic/non-bool-operand", "device.attributes['gpu.nvidia.com'].index && true", DEV_GPU,
             RUNTIME, "no such overload"),
        FAIL("logic/static-non-bool", "1 && true", DEV_GPU, TYPE, "_&&_"),

        /* Arithmetic and strings. */
        MATCH("arith/int",
              "2 + 3 * 4 == 14 && (2 + 3) * 4 == 20 && 7 / 2 == 3 && 7 % 3 == 1 && "
              "-7 / 2 == -3 && -7 % 3 == -1",
              DEV_GPU),
        MATCH("arith/attr", "device.attributes['gpu.nvidia.com'].index * 2 + 1 == 5", DEV_GPU),
        MATCH("arith/uint-double", "3u - 1u == 2u && 1.5 * 2.0 == 3.0", DEV_GPU),
        FAIL("arith/overflow", "9223372036854775807 + 1 > 0", DEV_GPU, RUNTIME, "integer overflow"),
        FAIL("arith/overflow-mul", "4611686018427387904 * 2 > 0", DEV_GPU, RUNTIME,
             "integer overflow"),
        FAIL("arith/overflow-neg", "-(-9223372036854775808) > 0", DEV_GPU, RUNTIME,
             "integer overflow"),
        FAIL("arith/overflow-div", "-9223372036854775808 / -1 > 0", DEV_GPU, RUNTIME,
             "integer overflow"),
        FAIL("arith/uint-underflow", "0u - 1u > 0u", DEV_GPU, RUNTIME, "unsigned integer overflow"),
        FAIL("arith/division-by-zero", "1 / (device.attributes['gpu.nvidia.com'].index - 2) == 0",
             DEV_GPU, RUNTIME, "division by zero"),
        FAIL("arith/modulus-by-zero", "1 % 0 == 0", DEV_GPU, RUNTIME, "modulus by zero"),
        FAIL("arith/mixed-types", "1 + 1u == 2", DEV_GPU, TYPE, "_+_"),
        MATCH("str/concat", "device.driver + '/x' == 'gpu.nvidia.com/x'", DEV_GPU),
        MATCH("str/functions",
              "device.driver.endsWith('.com') && device.driver.contains('nvidia') && "
              "!device.driver.startsWith('nvidia') && 'AbC'.lowerAscii() == 'abc' && "
              "'AbC'.upperAscii() == 'ABC' && size('h\\u00e9') == 2",
              DEV_GPU),
        FAIL("str/wrong-receiver", "1.startsWith('a')", DEV_GPU, TYPE, "startsWith"),

        /* Regular expressions (RE2 semantics, the subset PCRE reads the same way). */
        MATCH("re/anchors-classes",
              "device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA [A-H][0-9]{3}-"
              "\\\\w+-\\\\d+GB$')",
              DEV_GPU),
        MATCH("re/global-form", "matches(device.driver, 'nvidia\\\\.com$')", DEV_GPU),
        MATCH("re/alternation",
              "device.attributes['gpu.nvidia.com'].architecture.matches("
              "'^(Ampere|Hopper)$')",
              DEV_GPU),
        NOMATCH("re/dollar-end-only", "'abc\\n'.matches('abc$')", DEV_GPU),
        MATCH("re/unanchored", "'xxabcxx'.matches('abc')", DEV_GPU),
        MATCH("re/s-is-ascii-space", "'a\\tb'.matches('a\\\\sb') && !'a\\vb'.matches('a\\\\sb')",
              DEV_GPU),
        FAIL("re/backreference", "'aa'.matches('(a)\\\\1')", DEV_GPU, UNSUPPORTED,
             "unsupported regular expression"),
        FAIL("re/lookahead", "'ab'.matches('a(?=b)')", DEV_GPU, UNSUPPORTED, "(?"),
        FAIL("re/flags", "'AB'.matches('(?i)ab')", DEV_GPU, UNSUPPORTED, "(?"),
        FAIL("re/possessive", "'aa'.matches('a*+')", DEV_GPU, UNSUPPORTED, "possessive"),
        FAIL("re/nested-quantifier", "'aaaa'.matches('(a+)+b')", DEV_GPU, UNSUPPORTED,
             "quantifier on a group"),
        FAIL("re/literal-brace", "'a{'.matches('a{')", DEV_GPU, UNSUPPORTED, "{"),
        FAIL("re/vertical-tab-escape", "'a'.matches('\\\\v')", DEV_GPU, UNSUPPORTED, "escape"),
        FAIL("re/posix-class", "'a'.matches('[[:alpha:]]')", DEV_GPU, UNSUPPORTED, "[:class:]"),
        FAIL("re/non-literal", "'a'.matches(device.driver)", DEV_GPU, UNSUPPORTED,
             "not a string literal"),
        FAIL("re/invalid", "'a'.matches('[z-a]')", DEV_GPU, SYNTAX,
             "invalid regular expression \"[z-a]\""),
        FAIL("re/subject-not-utf8", "device.attributes['gpu.nvidia.com'].productName.matches('H')",
             DEV_BAD, RUNTIME, "UTF-8"),

        /* Quantities and versions. */
        MATCH("quantity/as-integer",
              "device.capacity['gpu.nvidia.com'].memory.asInteger() == 42949672960 && "
              "device.capacity['gpu.nvidia.com'].memory.isInteger() && "
              "quantity('1.5').isInteger() == false && sign(quantity('-2')) == -1",
              DEV_GPU),
        FAIL("quantity/sign-is-global", "quantity('1').sign() == 1", DEV_GPU, TYPE,
             "no matching overload for 'sign'"),
        FAIL("quantity/as-integer-fraction", "quantity('1500m').asInteger() == 1", DEV_GPU, RUNTIME,
             "cannot convert value to integer"),
        MATCH("quantity/compare-units",
              "quantity('1Gi').compareTo(quantity('1G')) == 1 && "
              "quantity('1000Mi').isLessThan(quantity('1Gi')) && "
              "quantity('0.5').compareTo(quantity('500m')) == 0 && "
              "quantity('-1k').isLessThan(quantity('-1'))",
              DEV_GPU),
        MATCH("quantity/is-quantity", "isQuantity('40Gi') && !isQuantity('40Qi')", DEV_GPU),
        FAIL("quantity/invalid-literal", "quantity('40Qi').isInteger()", DEV_GPU, RUNTIME, "40Qi"),
        MATCH("quantity/dynamic",
              "quantity('4' + '0Gi') == device.capacity['gpu.nvidia.com'].memory && "
              "isQuantity(device.driver) == false",
              DEV_GPU),
        FAIL("quantity/dynamic-invalid", "quantity(device.driver).isInteger()", DEV_GPU, RUNTIME,
             "invalid quantity"),
        MATCH("semver/dynamic",
              "semver('1.' + '2.3').minor() == 2 && semver('v1' + '.2', true).patch() == 0 && "
              "!isSemver(device.driver)",
              DEV_GPU),
        FAIL("semver/dynamic-invalid",
             "semver(device.attributes['gpu.nvidia.com'].productName).major() == 1", DEV_GPU,
             RUNTIME, "invalid semantic version \"NVIDIA A100-SXM4-40GB\""),
        MATCH("semver/compare",
              "semver('1.2.3').isLessThan(semver('1.10.0')) && "
              "semver('1.0.0-alpha').isLessThan(semver('1.0.0')) && "
              "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta')) && "
              "semver('1.0.0-2').isLessThan(semver('1.0.0-10')) && "
              "semver('1.0.0+build').compareTo(semver('1.0.0')) == 0",
              DEV_GPU),
        MATCH("semver/is-semver",
              "isSemver('1.2.3') && !isSemver('v1.2.3') && !isSemver('1.2') && "
              "!isSemver('01.2.3') && isSemver('v1.2', true) && "
              "semver('v01.2', true) == semver('1.2.0')",
              DEV_GPU),
        FAIL("semver/invalid-literal", "semver('1.2').major() == 1", DEV_GPU, RUNTIME,
             "invalid semantic version"),
        FAIL("semver/mixed-compare", "semver('1.2.3').compareTo(quantity('1')) == 0", DEV_GPU, TYPE,
             "compareTo"),

        /* Refused constructs and static errors. */
        FAIL("refuse/function", "device.driver.lastIndexOf('.') > 0", DEV_GPU, UNSUPPORTED,
             "unsupported function \"lastIndexOf\""),
        FAIL("refuse/conversion", "int(device.attributes['gpu.nvidia.com'].index) == 2", DEV_GPU,
             UNSUPPORTED, "unsupported function \"int\""),
        FAIL("refuse/macro-map", "[1].map(x, x * 2) == [2]", DEV_GPU, UNSUPPORTED,
             "unsupported function \"map\""),
        FAIL("refuse/optional", "device.attributes['gpu.nvidia.com'].?profile.orValue('') == ''",
             DEV_GPU, UNSUPPORTED, "optional"),
        FAIL("refuse/has-on-device", "has(device.driver)", DEV_GPU, UNSUPPORTED, "has()"),
        FAIL("refuse/type-ident", "type(1) == int", DEV_GPU, UNSUPPORTED, "\"type\""),
        FAIL("static/undeclared", "gpu.type == 'gpu'", DEV_GPU, TYPE,
             "undeclared reference to 'gpu'"),
        FAIL("static/undefined-field", "device.name == 'gpu-0'", DEV_GPU, TYPE,
             "undefined field 'name'"),
        FAIL("static/result-type", "device.driver", DEV_GPU, TYPE,
             "must evaluate to bool or the unknown type, not string"),
        FAIL("static/result-int", "1 + 2", DEV_GPU, TYPE, "not int"),
        FAIL("static/capacity-compare-int", "device.capacity['gpu.nvidia.com'].memory > 1", DEV_GPU,
             TYPE, "_>_"),
        FAIL("syntax/trailing", "true true", DEV_GPU, SYNTAX, "after the expression"),
        FAIL("syntax/empty", "", DEV_GPU, SYNTAX, "unexpected end"),
        FAIL("syntax/single-equals", "device.driver = 'x'", DEV_GPU, SYNTAX, "'='"),
        FAIL("syntax/reserved", "device.driver == while", DEV_GPU, SYNTAX, "reserved"),
        FAIL("syntax/unbalanced", "(device.driver == 'x'", DEV_GPU, SYNTAX, "expected \")\""),
        FAIL("refuse/quoted-identifier", "device.attributes['gpu.nvidia.com'].`type` == 'gpu'",
             DEV_GPU, UNSUPPORTED, "quoted identifier"),
        FAIL("syntax/has-needs-select", "has(device)", DEV_GPU, SYNTAX, "has()"),
};

/* Compiles and evaluates one case; compile errors are checked as the case's error too. */
static void test_case(gconstpointer data)
{
    const Case *tc = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbCelProgram) prog = kb_cel_compile(tc->expr, &error);
    gboolean matched = FALSE;
    if (prog != NULL) {
        g_assert_cmpstr(kb_cel_program_expression(prog), ==, tc->expr);
        kb_cel_program_eval(prog, &devices[tc->dev], &matched, &error);
    }
    if (tc->want == FAILS) {
        g_assert_nonnull(error);
        if (error->code != tc->code || strstr(error->message, tc->msg) == NULL)
            g_error("%s: got code %d \"%s\", want code %d with \"%s\"", tc->expr, error->code,
                    error->message, tc->code, tc->msg);
        return;
    }
    if (error != NULL)
        g_error("%s: %s", tc->expr, error->message);
    if (!matched != (tc->want != YES))
        g_error("%s: got %s, want %s", tc->expr, matched ? "a match" : "no match",
                tc->want == YES ? "a match" : "no match");
}

/* A program is compiled once and evaluated for many devices: the class selectors of the
 * driver's chart sort the three kinds of devices apart. */
static void test_one_program_many_devices(void)
{
    const char *exprs[] = {
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
            "'gpu'",
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
            "'mig'",
            "device.driver == 'compute-domain.nvidia.com' && "
            "device.attributes['compute-domain.nvidia.com'].type == 'channel'",
    };
    for (guint e = 0; e < G_N_ELEMENTS(exprs); e++) {
        g_autoptr(KbCelProgram) prog = kb_cel_compile(exprs[e], NULL);
        g_assert_nonnull(prog);
        for (guint d = DEV_GPU; d <= DEV_CHANNEL; d++) {
            gboolean matched = FALSE;
            g_assert_true(kb_cel_program_eval(prog, &devices[d], &matched, NULL));
            g_assert_cmpint(matched, ==, d == e);
        }
    }
}

static void assert_compile_error(const char *expr, int code, const char *fragment)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbCelProgram) prog = kb_cel_compile(expr, &error);
    g_assert_null(prog);
    g_assert_error(error, KB_CEL_ERROR, code);
    if (strstr(error->message, fragment) == NULL)
        g_error("\"%s\" has no \"%s\"", error->message, fragment);
}

static gboolean eval_gpu(const char *expr)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbCelProgram) prog = kb_cel_compile(expr, &error);
    g_assert_no_error(error);
    gboolean matched = FALSE;
    g_assert_true(kb_cel_program_eval(prog, &devices[DEV_GPU], &matched, &error));
    g_assert_no_error(error);
    return matched;
}

/* "true && true && ... " padded with spaces to exactly @len bytes. */
static char *expression_of_length(gsize len)
{
    GString *s = g_string_new("true");
    while (s->len + 8 <= len)
        g_string_append(s, " && true");
    while (s->len < len)
        g_string_append_c(s, ' ');
    return g_string_free(s, FALSE);
}

static void test_limit_length(void)
{
    g_autofree char *at = expression_of_length(KB_CEL_MAX_EXPRESSION_LENGTH);
    g_assert_cmpuint(strlen(at), ==, 10240);
    g_assert_true(eval_gpu(at));
    g_autofree char *over = expression_of_length(KB_CEL_MAX_EXPRESSION_LENGTH + 1);
    assert_compile_error(over, KB_CEL_ERROR_LIMIT,
                         "10241 bytes long, more than the limit of 10240");
}

/* @n levels of @open ... @close around "true". */
static char *nested(guint n, const char *open, const char *close)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append(s, open);
    g_string_append(s, "true");
    for (guint i = 0; i < n; i++)
        g_string_append(s, close);
    return g_string_free(s, FALSE);
}

static void test_limit_depth(void)
{
    /* Parentheses: the parser's nesting. */
    g_autofree char *parens_ok = nested(KB_CEL_MAX_DEPTH - 1, "(", ")");
    g_assert_true(eval_gpu(parens_ok));
    g_autofree char *parens_deep = nested(KB_CEL_MAX_DEPTH, "(", ")");
    assert_compile_error(parens_deep, KB_CEL_ERROR_LIMIT, "nested deeper than 32 levels");
    g_autofree char *parens_huge = nested(5000, "(", ")");
    assert_compile_error(parens_huge, KB_CEL_ERROR_LIMIT, "nested deeper than 32 levels");
    /* Operators: the height of the tree. */
    g_autofree char *nots_ok = nested(KB_CEL_MAX_DEPTH - 1, "!", "");
    g_assert_false(eval_gpu(nots_ok));
    g_autofree char *nots_deep = nested(KB_CEL_MAX_DEPTH, "!", "");
    assert_compile_error(nots_deep, KB_CEL_ERROR_LIMIT, "nested deeper than 32 levels");
    g_autofree char *lists_deep = nested(KB_CEL_MAX_DEPTH, "[", "]");
    assert_compile_error(lists_deep, KB_CEL_ERROR_LIMIT, "nested deeper than 32 levels");
    g_autoptr(GString) sum = g_string_new("0");
    for (guint i = 0; i < KB_CEL_MAX_DEPTH; i++)
        g_string_append(sum, " + 1");
    g_string_append(sum, " > 0");
    assert_compile_error(sum->str, KB_CEL_ERROR_LIMIT, "nested deeper than 32 levels");
    /* A long chain of alternatives is one level, as NVIDIA's index lists are. */
    g_autoptr(GString) alts = g_string_new("device.attributes['gpu.nvidia.com'].index == 0");
    for (guint i = 1; i < 150; i++)
        g_string_append_printf(alts, " || device.attributes['gpu.nvidia.com'].index == %u", i);
    g_assert_true(eval_gpu(alts->str));
}

/* A list of @n zeros. */
static char *zeros(guint n)
{
    GString *s = g_string_new("[0");
    for (guint i = 1; i < n; i++)
        g_string_append(s, ",0");
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

static void test_limit_cost(void)
{
    /* 60^3 = 216,000 innermost evaluations of two steps each: within the budget. */
    g_autofree char *l60 = zeros(60);
    g_autofree char *ok = g_strdup_printf("%s.all(a, %s.all(b, %s.all(c, a == c)))", l60, l60, l60);
    g_assert_true(eval_gpu(ok));
    /* 100^3 = 1,000,000 innermost evaluations: over it, at evaluation (the length and depth
     * are fine), and the error is not absorbed by ||. */
    g_autofree char *l100 = zeros(100);
    g_autofree char *over =
            g_strdup_printf("%s.all(a, %s.all(b, %s.all(c, a == c))) || true", l100, l100, l100);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbCelProgram) prog = kb_cel_compile(over, &error);
    g_assert_no_error(error);
    gboolean matched = TRUE;
    g_assert_false(kb_cel_program_eval(prog, &devices[DEV_GPU], &matched, &error));
    g_assert_error(error, KB_CEL_ERROR, KB_CEL_ERROR_LIMIT);
    g_assert_nonnull(strstr(error->message, "cost exceeds the limit of 1000000"));
    /* Long strings cost by length: 20 concatenations doubling a 100-byte string. */
    GString *s = g_string_new("cel.bind(s0, '");
    for (guint i = 0; i < 100; i++)
        g_string_append_c(s, 'x');
    g_string_append(s, "', ");
    for (guint i = 1; i <= 22; i++)
        g_string_append_printf(s, "cel.bind(s%u, s%u + s%u, ", i, i - 1, i - 1);
    g_string_append(s, "size(s22) > 0");
    for (guint i = 0; i <= 22; i++)
        g_string_append_c(s, ')');
    g_autofree char *strings = g_string_free(s, FALSE);
    g_clear_error(&error);
    g_autoptr(KbCelProgram) sprog = kb_cel_compile(strings, &error);
    g_assert_no_error(error);
    g_assert_false(kb_cel_program_eval(sprog, &devices[DEV_GPU], &matched, &error));
    g_assert_error(error, KB_CEL_ERROR, KB_CEL_ERROR_LIMIT);
}

/* Patterns that are a plain string skip the regex engine: they must answer as it does. The
 * second pattern of each pair adds an alternative that never matches ("$^a"), which makes it
 * go through GRegex. */
static void test_literal_patterns(void)
{
    const char *patterns[] = {"a100", "^NVIDIA", "GB$", "^a100$", "^.*a100.*$", ".*a100.*",
                              "",     "^",       "$",   "^$",     "^.*.*$",     "nvidia a"};
    const char *subjects[] = {"a100",
                              "NVIDIA A100",
                              "nvidia a100-sxm4-40gb",
                              "x\\na100",
                              "a100\\n",
                              "",
                              "NVIDIA H100 80GB",
                              "\\n",
                              "a10"};
    for (guint p = 0; p < G_N_ELEMENTS(patterns); p++) {
        for (guint s = 0; s < G_N_ELEMENTS(subjects); s++) {
            g_autofree char *expr =
                    g_strdup_printf("'%s'.matches('%s') == '%s'.matches('(?:%s)|$^a')", subjects[s],
                                    patterns[p], subjects[s], patterns[p]);
            if (!eval_gpu(expr))
                g_error("differs from the regex engine: %s", expr);
        }
    }
    /* And the test above is not vacuous: the pairs do differ in what they match. */
    g_assert_true(eval_gpu("'x\\na100'.matches('a100') && !'x\\na100'.matches('^.*a100.*$')"));
    g_assert_true(eval_gpu("'NVIDIA A100'.matches('^NVIDIA') && !'A NVIDIA'.matches('^NVIDIA')"));
}

typedef struct {
    const KbCelProgram *progs[2];
    guint wrong;
} ThreadRun;

static gpointer eval_many(gpointer data)
{
    ThreadRun *run = data;
    for (guint i = 0; i < 20000; i++) {
        const KbCelDevice *dev = &devices[i % 2 == 0 ? DEV_GPU : DEV_MIG];
        for (guint p = 0; p < 2; p++) {
            gboolean matched = FALSE;
            if (!kb_cel_program_eval(run->progs[p], dev, &matched, NULL) ||
                !matched != (dev != &devices[DEV_GPU]))
                run->wrong++;
        }
    }
    return NULL;
}

/* One program, evaluated from several threads at once (the allocator may): same answers. */
static void test_threads(void)
{
    g_autoptr(KbCelProgram) re = kb_cel_compile(
            "device.attributes['gpu.nvidia.com'].type.upperAscii().matches('^G(P)?U$')", NULL);
    g_autoptr(KbCelProgram) cap = kb_cel_compile(
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", NULL);
    ThreadRun runs[4] = {{{re, cap}, 0}, {{re, cap}, 0}, {{re, cap}, 0}, {{re, cap}, 0}};
    GThread *threads[G_N_ELEMENTS(runs)];
    for (guint t = 0; t < G_N_ELEMENTS(runs); t++)
        threads[t] = g_thread_new("cel", eval_many, &runs[t]);
    for (guint t = 0; t < G_N_ELEMENTS(runs); t++) {
        g_thread_join(threads[t]);
        g_assert_cmpuint(runs[t].wrong, ==, 0);
    }
}

static char *case_path(const char *name)
{
    return g_strdup_printf("/kube/cel/%s", name);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    devices_init();

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *p = case_path(cases[i].name);
        g_test_add_data_func(p, &cases[i], test_case);
    }
    g_test_add_func("/kube/cel/program/many-devices", test_one_program_many_devices);
    g_test_add_func("/kube/cel/re/literal-patterns", test_literal_patterns);
    g_test_add_func("/kube/cel/program/threads", test_threads);
    g_test_add_func("/kube/cel/limit/length", test_limit_length);
    g_test_add_func("/kube/cel/limit/depth", test_limit_depth);
    g_test_add_func("/kube/cel/limit/cost", test_limit_cost);
    return g_test_run();
}
