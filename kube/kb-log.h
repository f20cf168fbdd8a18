/*
 * Logging for the daemons: --log-level parsing and a GLib log writer that prints one klog-like
 * line per message on stderr:
 *
 *   W1122 05:05:48.123456   12345 kb-leader.c:210] lease kube-system/kube-batchd: renew failed
 *
 * (severity letter E/W/I/D, then month and day, UTC time with microseconds, process id, the
 * source location when the message carries one (structured logging) or else the log domain,
 * then the message with newlines escaped so that one record is one line).
 */
#pragma once

#include <glib.h>

typedef enum {
    KB_LOG_ERROR,   /* g_error, g_critical */
    KB_LOG_WARNING, /* + g_warning */
    KB_LOG_INFO,    /* + g_message, g_info */
    KB_LOG_DEBUG,   /* + g_debug */
} KbLogLevel;

/* "error", "warning" (or "warn"), "info", "debug", case-insensitive. FALSE with
 * G_OPTION_ERROR_BAD_VALUE naming the value otherwise. */
gboolean kb_log_level_parse(const char *s, KbLogLevel *level, GError **error);
const char *kb_log_level_to_string(KbLogLevel level);

/* A GOptionArgFunc for G_OPTION_ARG_CALLBACK: parses the value and calls kb_log_set_level(). */
gboolean kb_log_option_arg(const char *option_name, const char *value, gpointer data,
                           GError **error);

/*
 * Install the writer (g_log_set_writer_func; the first call only, later calls just set the
 * level) and set the level. Messages below the level are dropped, whatever G_MESSAGES_DEBUG says.
 */
void kb_log_init(KbLogLevel level);
void kb_log_set_level(KbLogLevel level);
KbLogLevel kb_log_get_level(void);
/* TRUE when a message of @level would be written: guard expensive debug formatting with it. */
gboolean kb_log_enabled(GLogLevelFlags level);
/* Write to @fd instead of stderr (tests); -1 restores stderr. The fd stays the caller's. */
void kb_log_set_output_fd(int fd);

/* The writer itself (usable with g_log_set_writer_func directly). */
GLogWriterOutput kb_log_writer(GLogLevelFlags log_level, const GLogField *fields, gsize n_fields,
                               gpointer user_data);

/*
 * One formatted line, newline-terminated, newly allocated. @unix_us is the time, @location
 * "file.c:12" or a domain or NULL, @message may be NULL.
 */
char *kb_log_format_line(GLogLevelFlags log_level, gint64 unix_us, const char *location,
                         const char *message);
