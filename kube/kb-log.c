/*
 * klog-like log writer with level filtering.
 *
 * The level lives in a static: there is one logging configuration per process, as there is one
 * GLib writer. Each line goes out in a single write(2) so that lines from several threads (libcurl
 * or libmicrohttpd callbacks) never interleave within a line.
 */
#include "kube/kb-log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static KbLogLevel current_level = KB_LOG_INFO;
static int output_fd = -1;
static gsize writer_installed;

static const char *const level_names[] = {
        [KB_LOG_ERROR] = "error",
        [KB_LOG_WARNING] = "warning",
        [KB_LOG_INFO] = "info",
        [KB_LOG_DEBUG] = "debug",
};

gboolean kb_log_level_parse(const char *s, KbLogLevel *level, GError **error)
{
    g_return_val_if_fail(level != NULL, FALSE);
    for (guint i = 0; s != NULL && i < G_N_ELEMENTS(level_names); i++) {
        if (g_ascii_strcasecmp(s, level_names[i]) == 0) {
            *level = (KbLogLevel)i;
            return TRUE;
        }
    }
    if (s != NULL && g_ascii_strcasecmp(s, "warn") == 0) {
        *level = KB_LOG_WARNING;
        return TRUE;
    }
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "invalid log level \"%s\" (expected error, warning, info or debug)",
                s != NULL ? s : "");
    return FALSE;
}

const char *kb_log_level_to_string(KbLogLevel level)
{
    return (guint)level < G_N_ELEMENTS(level_names) ? level_names[level] : "unknown";
}

gboolean kb_log_option_arg(const char *option_name, const char *value, gpointer data,
                           GError **error)
{
    KbLogLevel level;

    if (!kb_log_level_parse(value, &level, error)) {
        g_prefix_error(error, "%s: ", option_name);
        return FALSE;
    }
    kb_log_set_level(level);
    return TRUE;
}

void kb_log_set_level(KbLogLevel level)
{
    current_level = level;
}

KbLogLevel kb_log_get_level(void)
{
    return current_level;
}

void kb_log_set_output_fd(int fd)
{
    output_fd = fd;
}

void kb_log_init(KbLogLevel level)
{
    kb_log_set_level(level);
    /* GLib allows one writer per process and aborts on a second call. */
    if (g_once_init_enter(&writer_installed)) {
        g_log_set_writer_func(kb_log_writer, NULL, NULL);
        g_once_init_leave(&writer_installed, 1);
    }
}

gboolean kb_log_enabled(GLogLevelFlags level)
{
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
        return TRUE;
    if (level & G_LOG_LEVEL_WARNING)
        return current_level >= KB_LOG_WARNING;
    if (level & (G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO))
        return current_level >= KB_LOG_INFO;
    return current_level >= KB_LOG_DEBUG;
}

static char severity_letter(GLogLevelFlags level)
{
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
        return 'E';
    if (level & G_LOG_LEVEL_WARNING)
        return 'W';
    if (level & (G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO))
        return 'I';
    return 'D';
}

char *kb_log_format_line(GLogLevelFlags log_level, gint64 unix_us, const char *location,
                         const char *message)
{
    g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(unix_us / G_USEC_PER_SEC);
    GString *line = g_string_sized_new(128);

    if (t == NULL)
        t = g_date_time_new_from_unix_utc(0);
    g_string_append_printf(
            line, "%c%02d%02d %02d:%02d:%02d.%06d %7d %s] ", severity_letter(log_level),
            g_date_time_get_month(t), g_date_time_get_day_of_month(t), g_date_time_get_hour(t),
            g_date_time_get_minute(t), g_date_time_get_second(t), (int)(unix_us % G_USEC_PER_SEC),
            (int)getpid(), location != NULL && location[0] != '\0' ? location : "-");
    for (const char *p = message != NULL ? message : ""; *p != '\0'; p++) {
        if (*p == '\n')
            g_string_append(line, "\\n");
        else if (*p != '\r')
            g_string_append_c(line, *p);
    }
    g_string_append_c(line, '\n');
    return g_string_free(line, FALSE);
}

static void write_all(int fd, const char *s, gsize len)
{
    while (len > 0) {
        ssize_t n = write(fd, s, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere left to report it */
        s += n;
        len -= (gsize)n;
    }
}

/* The value of a string field (GLib passes length -1 for NUL-terminated ones). */
static char *field_value(const GLogField *f)
{
    if (f->length < 0)
        return g_strdup(f->value);
    return g_strndup(f->value, (gsize)f->length);
}

GLogWriterOutput kb_log_writer(GLogLevelFlags log_level, const GLogField *fields, gsize n_fields,
                               gpointer user_data)
{
    g_autofree char *message = NULL;
    g_autofree char *file = NULL;
    g_autofree char *code_line = NULL;
    g_autofree char *domain = NULL;
    g_autofree char *location = NULL;
    g_autofree char *line = NULL;

    if (!kb_log_enabled(log_level))
        return G_LOG_WRITER_HANDLED;
    for (gsize i = 0; i < n_fields; i++) {
        const GLogField *f = &fields[i];
        if (strcmp(f->key, "MESSAGE") == 0 && message == NULL)
            message = field_value(f);
        else if (strcmp(f->key, "CODE_FILE") == 0 && file == NULL)
            file = field_value(f);
        else if (strcmp(f->key, "CODE_LINE") == 0 && code_line == NULL)
            code_line = field_value(f);
        else if (strcmp(f->key, "GLIB_DOMAIN") == 0 && domain == NULL)
            domain = field_value(f);
    }
    if (file != NULL) {
        g_autofree char *base = g_path_get_basename(file);
        location = g_strdup_printf("%s:%s", base, code_line != NULL ? code_line : "0");
    } else {
        location = g_steal_pointer(&domain);
    }
    line = kb_log_format_line(log_level, g_get_real_time(), location, message);
    write_all(output_fd >= 0 ? output_fd : STDERR_FILENO, line, strlen(line));
    return G_LOG_WRITER_HANDLED;
}
