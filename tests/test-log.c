/* --log-level parsing, the klog-like line format and level filtering through GLib's writer. */
#include <string.h>
#include <unistd.h>

#include "kube/kb-log.h"

static void test_level_parse(void)
{
    static const struct {
        const char *in;
        KbLogLevel want;
    } ok[] = {
            {"error", KB_LOG_ERROR}, {"warning", KB_LOG_WARNING}, {"warn", KB_LOG_WARNING},
            {"info", KB_LOG_INFO},   {"debug", KB_LOG_DEBUG},     {"DEBUG", KB_LOG_DEBUG},
            {"Info", KB_LOG_INFO},
    };
    static const char *const bad[] = {"", "verbose", "infox", "4", "warnings", NULL};

    for (guint i = 0; i < G_N_ELEMENTS(ok); i++) {
        g_autoptr(GError) error = NULL;
        KbLogLevel level = (KbLogLevel)-1;

        g_assert_true(kb_log_level_parse(ok[i].in, &level, &error));
        g_assert_no_error(error);
        g_assert_cmpint(level, ==, ok[i].want);
    }
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        KbLogLevel level = KB_LOG_INFO;

        g_assert_false(kb_log_level_parse(bad[i], &level, &error));
        g_assert_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
        g_assert_nonnull(strstr(error->message, "invalid log level"));
        g_assert_cmpint(level, ==, KB_LOG_INFO);
    }
    g_assert_cmpstr(kb_log_level_to_string(KB_LOG_WARNING), ==, "warning");
}

static void test_option_arg(void)
{
    const GOptionEntry entries[] = {
            {"log-level", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)kb_log_option_arg,
             "error, warning, info or debug", "LEVEL"},
            {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_autoptr(GError) error = NULL;
    char *argv_ok[] = {"prog", "--log-level=debug", NULL};
    char *argv_bad[] = {"prog", "--log-level", "loud", NULL};
    char **argv = argv_ok;
    int argc = 2;

    g_option_context_add_main_entries(ctx, entries, NULL);
    kb_log_set_level(KB_LOG_INFO);
    g_assert_true(g_option_context_parse(ctx, &argc, &argv, &error));
    g_assert_no_error(error);
    g_assert_cmpint(kb_log_get_level(), ==, KB_LOG_DEBUG);

    argv = argv_bad;
    argc = 3;
    g_assert_false(g_option_context_parse(ctx, &argc, &argv, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "--log-level"));
    g_assert_nonnull(strstr(error->message, "\"loud\""));
    g_assert_cmpint(kb_log_get_level(), ==, KB_LOG_DEBUG);
    kb_log_set_level(KB_LOG_INFO);
}

static void test_format_line(void)
{
    /* 2026-11-22T05:05:48.123456Z */
    const gint64 t = G_GINT64_CONSTANT(1795323948123456);
    g_autofree char *want = g_strdup_printf(
            "W1122 05:05:48.123456 %7d kb-leader.c:210] lease renew failed\n", (int)getpid());
    g_autofree char *got =
            kb_log_format_line(G_LOG_LEVEL_WARNING, t, "kb-leader.c:210", "lease renew failed");
    g_autofree char *multi = kb_log_format_line(G_LOG_LEVEL_DEBUG, t, NULL, "a\nb\r\n");
    g_autofree char *want_multi =
            g_strdup_printf("D1122 05:05:48.123456 %7d -] a\\nb\\n\n", (int)getpid());

    g_assert_cmpstr(got, ==, want);
    g_assert_cmpstr(multi, ==, want_multi);
}

static void test_severity_letters(void)
{
    static const struct {
        GLogLevelFlags level;
        char letter;
    } cases[] = {
            {G_LOG_LEVEL_ERROR, 'E'},   {G_LOG_LEVEL_CRITICAL, 'E'}, {G_LOG_LEVEL_WARNING, 'W'},
            {G_LOG_LEVEL_MESSAGE, 'I'}, {G_LOG_LEVEL_INFO, 'I'},     {G_LOG_LEVEL_DEBUG, 'D'},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *line = kb_log_format_line(cases[i].level, 0, "x", "m");
        g_assert_cmpint(line[0], ==, cases[i].letter);
        g_assert_true(g_str_has_prefix(line + 1, "0101 00:00:00.000000"));
    }
}

static void test_enabled(void)
{
    kb_log_set_level(KB_LOG_WARNING);
    g_assert_true(kb_log_enabled(G_LOG_LEVEL_CRITICAL));
    g_assert_true(kb_log_enabled(G_LOG_LEVEL_WARNING));
    g_assert_false(kb_log_enabled(G_LOG_LEVEL_INFO));
    g_assert_false(kb_log_enabled(G_LOG_LEVEL_DEBUG));
    kb_log_set_level(KB_LOG_ERROR);
    g_assert_false(kb_log_enabled(G_LOG_LEVEL_WARNING));
    g_assert_true(kb_log_enabled(G_LOG_LEVEL_ERROR));
    kb_log_set_level(KB_LOG_DEBUG);
    g_assert_true(kb_log_enabled(G_LOG_LEVEL_DEBUG));
    kb_log_set_level(KB_LOG_INFO);
}

/* Everything the writer wrote to a temporary file while @fn ran. */
static char *capture(void (*fn)(void))
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    char *contents = NULL;
    int fd = g_file_open_tmp("kb-log-XXXXXX", &path, &error);

    g_assert_no_error(error);
    kb_log_set_output_fd(fd);
    fn();
    kb_log_set_output_fd(-1);
    close(fd);
    g_assert_true(g_file_get_contents(path, &contents, NULL, &error));
    unlink(path);
    return contents;
}

static void log_everything(void)
{
    g_debug("debug message %d", 1);
    g_info("info message %d", 2);
    g_message("plain message %d", 3);
    g_warning("warning message %d", 4);
}

static void log_structured(void)
{
    g_log_structured("kube", G_LOG_LEVEL_WARNING, "CODE_FILE", "/src/kube/kb-leader.c", "CODE_LINE",
                     "77", "MESSAGE", "lease %s lost", "ns/x");
    g_log("kube", G_LOG_LEVEL_MESSAGE, "from a domain");
}

static void test_writer_filters(void)
{
    g_autofree char *at_warning = NULL;
    g_autofree char *at_debug = NULL;
    g_autofree char *at_info = NULL;

    kb_log_init(KB_LOG_WARNING);
    at_warning = capture(log_everything);
    kb_log_set_level(KB_LOG_DEBUG);
    at_debug = capture(log_everything);
    kb_log_set_level(KB_LOG_INFO);
    at_info = capture(log_everything);

    g_assert_null(strstr(at_warning, "info message"));
    g_assert_null(strstr(at_warning, "debug message"));
    g_assert_nonnull(strstr(at_warning, "warning message 4\n"));
    g_assert_true(at_warning[0] == 'W');

    g_assert_nonnull(strstr(at_debug, "] debug message 1\n"));
    g_assert_nonnull(strstr(at_debug, "] info message 2\n"));
    g_assert_nonnull(strstr(at_debug, "] plain message 3\n"));
    g_assert_true(at_debug[0] == 'D');

    g_assert_null(strstr(at_info, "debug message"));
    g_assert_nonnull(strstr(at_info, "] info message 2\n"));
    g_assert_true(at_info[0] == 'I');
}

static void test_writer_location(void)
{
    g_autofree char *out = NULL;

    kb_log_init(KB_LOG_INFO);
    out = capture(log_structured);
    g_assert_nonnull(strstr(out, " kb-leader.c:77] lease ns/x lost\n"));
    g_assert_nonnull(strstr(out, " kube] from a domain\n"));
    g_assert_true(out[0] == 'W');
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/kube/log/level/parse", test_level_parse);
    g_test_add_func("/kube/log/level/option", test_option_arg);
    g_test_add_func("/kube/log/level/enabled", test_enabled);
    g_test_add_func("/kube/log/format/line", test_format_line);
    g_test_add_func("/kube/log/format/severity", test_severity_letters);
    g_test_add_func("/kube/log/writer/filters", test_writer_filters);
    g_test_add_func("/kube/log/writer/location", test_writer_location);
    return g_test_run();
}
