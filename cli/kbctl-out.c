/* kbctl output: tables, colours, durations, JSON and YAML (see kbctl-out.h). */
#include "cli/kbctl-out.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kb-objects.h"

/* ---- tables -------------------------------------------------------------------------------- */

struct KbctlTable {
    guint n_columns;
    GPtrArray *rows; /* GStrv, the header first */
    GArray *colours; /* KbctlColour per cell, row-major */
};

KbctlTable *kbctl_table_new(guint n_columns, const char *const *headers)
{
    KbctlTable *t = g_new0(KbctlTable, 1);
    t->n_columns = n_columns;
    t->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    t->colours = g_array_new(FALSE, TRUE, sizeof(KbctlColour));
    kbctl_table_add(t, headers);
    return t;
}

void kbctl_table_free(KbctlTable *t)
{
    if (t == NULL)
        return;
    g_ptr_array_unref(t->rows);
    g_array_unref(t->colours);
    g_free(t);
}

void kbctl_table_add(KbctlTable *t, const char *const *cells)
{
    char **row = g_new0(char *, t->n_columns + 1);
    for (guint i = 0; i < t->n_columns; i++)
        row[i] = g_strdup(cells[i] != NULL ? cells[i] : "<none>");
    g_ptr_array_add(t->rows, row);
    g_array_set_size(t->colours, t->rows->len * t->n_columns);
}

void kbctl_table_colour(KbctlTable *t, guint col, KbctlColour colour)
{
    if (col < t->n_columns && t->rows->len > 1)
        g_array_index(t->colours, KbctlColour, (t->rows->len - 1) * t->n_columns + col) = colour;
}

void kbctl_table_print(const KbctlTable *t, FILE *out, gboolean colour, gboolean headers,
                       guint indent)
{
    g_autofree glong *width = g_new0(glong, t->n_columns);
    for (guint r = headers ? 0 : 1; r < t->rows->len; r++) {
        char **row = g_ptr_array_index(t->rows, r);
        for (guint c = 0; c < t->n_columns; c++)
            width[c] = MAX(width[c], g_utf8_strlen(row[c], -1));
    }
    for (guint r = headers ? 0 : 1; r < t->rows->len; r++) {
        char **row = g_ptr_array_index(t->rows, r);
        g_autoptr(GString) line = g_string_new(NULL);
        g_string_append_printf(line, "%*s", (int)indent, "");
        for (guint c = 0; c < t->n_columns; c++) {
            KbctlColour col = r == 0 ? KBCTL_COLOUR_BOLD
                                     : g_array_index(t->colours, KbctlColour, r * t->n_columns + c);
            g_autofree char *cell = kbctl_colourize(row[c], col, colour);
            g_string_append(line, cell);
            if (c + 1 < t->n_columns) {
                glong pad = width[c] - g_utf8_strlen(row[c], -1) + 3;
                g_string_append_printf(line, "%*s", (int)pad, "");
            }
        }
        while (line->len > 0 && line->str[line->len - 1] == ' ')
            g_string_truncate(line, line->len - 1);
        fprintf(out, "%s\n", line->str);
    }
}

/* ---- colours ------------------------------------------------------------------------------- */

char *kbctl_colourize(const char *text, KbctlColour colour, gboolean on)
{
    static const char *const codes[] = {
            [KBCTL_COLOUR_GREEN] = "32", [KBCTL_COLOUR_YELLOW] = "33", [KBCTL_COLOUR_RED] = "31",
            [KBCTL_COLOUR_CYAN] = "36",  [KBCTL_COLOUR_DIM] = "2",     [KBCTL_COLOUR_BOLD] = "1",
    };
    if (!on || colour == KBCTL_COLOUR_NONE || *text == '\0')
        return g_strdup(text);
    return g_strdup_printf("\033[%sm%s\033[0m", codes[colour], text);
}

KbctlColour kbctl_status_colour(const char *status)
{
    if (status == NULL)
        return KBCTL_COLOUR_NONE;
    if (strcmp(status, "Running") == 0 || strcmp(status, "Ready") == 0 ||
        strcmp(status, "Open") == 0)
        return KBCTL_COLOUR_GREEN;
    if (strcmp(status, "Waiting") == 0 || strcmp(status, "Pending") == 0 ||
        strcmp(status, "Restarting") == 0 || strcmp(status, "Starting") == 0)
        return KBCTL_COLOUR_YELLOW;
    if (strcmp(status, "Failed") == 0 || strcmp(status, "NotReady") == 0 ||
        strcmp(status, "Closed") == 0 || strcmp(status, "Warning") == 0)
        return KBCTL_COLOUR_RED;
    if (strcmp(status, "Succeeded") == 0)
        return KBCTL_COLOUR_CYAN;
    return KBCTL_COLOUR_NONE;
}

gboolean kbctl_colour_wanted(FILE *out)
{
    const char *no = g_getenv("NO_COLOR");
    const char *term = g_getenv("TERM");
    if (no != NULL && *no != '\0')
        return FALSE;
    if (term != NULL && strcmp(term, "dumb") == 0)
        return FALSE;
    return isatty(fileno(out)) == 1;
}

/* ---- durations ----------------------------------------------------------------------------- */

char *kbctl_duration(gint64 s)
{
    if (s < -1)
        return g_strdup("<invalid>");
    if (s < 0)
        return g_strdup("0s");
    if (s < 120)
        return g_strdup_printf("%" G_GINT64_FORMAT "s", s);
    gint64 m = s / 60, h = s / 3600, d = h / 24;
    if (m < 10)
        return s % 60 == 0
                       ? g_strdup_printf("%" G_GINT64_FORMAT "m", m)
                       : g_strdup_printf("%" G_GINT64_FORMAT "m%" G_GINT64_FORMAT "s", m, s % 60);
    if (m < 180)
        return g_strdup_printf("%" G_GINT64_FORMAT "m", m);
    if (h < 8)
        return m % 60 == 0
                       ? g_strdup_printf("%" G_GINT64_FORMAT "h", h)
                       : g_strdup_printf("%" G_GINT64_FORMAT "h%" G_GINT64_FORMAT "m", h, m % 60);
    if (h < 48)
        return g_strdup_printf("%" G_GINT64_FORMAT "h", h);
    if (h < 24 * 8)
        return h % 24 == 0
                       ? g_strdup_printf("%" G_GINT64_FORMAT "d", d)
                       : g_strdup_printf("%" G_GINT64_FORMAT "d%" G_GINT64_FORMAT "h", d, h % 24);
    if (h < 24 * 365 * 2)
        return g_strdup_printf("%" G_GINT64_FORMAT "d", d);
    if (h < 24 * 365 * 8 && d % 365 != 0)
        return g_strdup_printf("%" G_GINT64_FORMAT "y%" G_GINT64_FORMAT "d", d / 365, d % 365);
    return g_strdup_printf("%" G_GINT64_FORMAT "y", d / 365);
}

char *kbctl_age(const char *timestamp, gint64 now)
{
    gint64 t;
    if (timestamp == NULL || !kb_time_parse(timestamp, &t))
        return g_strdup("<unknown>");
    return kbctl_duration(now - t);
}

const char *kbctl_error_message(const GError *error)
{
    const char *http = strstr(error->message, ": HTTP ");
    const char *words = http != NULL ? strstr(http + 7, ": ") : NULL;
    return words != NULL && words[2] != '\0' ? words + 2 : error->message;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

json_object *kbctl_json_get(json_object *obj, const char *dotted_path)
{
    g_auto(GStrv) parts = g_strsplit(dotted_path, ".", -1);
    for (guint i = 0; parts[i] != NULL && obj != NULL; i++) {
        json_object *next = NULL;
        if (!json_object_is_type(obj, json_type_object) ||
            !json_object_object_get_ex(obj, parts[i], &next))
            return NULL;
        obj = next;
    }
    return obj;
}

const char *kbctl_json_str(json_object *obj, const char *dotted_path)
{
    json_object *v = kbctl_json_get(obj, dotted_path);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

gint64 kbctl_json_int(json_object *obj, const char *dotted_path, gint64 def)
{
    json_object *v = kbctl_json_get(obj, dotted_path);
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    if (json_object_is_type(v, json_type_double))
        return (gint64)json_object_get_double(v);
    return def;
}

const char *kbctl_json_member_str(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

void kbctl_json_set_str(json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, value != NULL ? json_object_new_string(value) : NULL);
}

void kbctl_json_set_int(json_object *obj, const char *key, gint64 value)
{
    json_object_object_add(obj, key, json_object_new_int64(value));
}

/* ---- YAML ---------------------------------------------------------------------------------- */

/* Would @s read back from YAML (1.1 or 1.2, as go-yaml and libyaml resolve) as a plain string? */
static gboolean plain_safe(const char *s)
{
    static const char *const reserved[] = {"true", "false", "yes",  "no", "on", "off",
                                           "y",    "n",     "null", "~",  NULL};
    if (*s == '\0' || g_ascii_isspace(*s) || g_ascii_isspace(s[strlen(s) - 1]))
        return FALSE;
    if (strchr("-?:,[]{}#&*!|>'\"%@`.+", *s) != NULL || g_ascii_isdigit(*s))
        return FALSE;
    for (const char *p = s; *p != '\0'; p++) {
        if ((guchar)*p < 0x20 || *p == 0x7f || strchr(":#{}[],\"'\\", *p) != NULL)
            return FALSE;
    }
    for (guint i = 0; reserved[i] != NULL; i++)
        if (g_ascii_strcasecmp(s, reserved[i]) == 0)
            return FALSE;
    return TRUE;
}

static void yaml_scalar(GString *out, json_object *v)
{
    if (v == NULL) {
        g_string_append(out, "null");
    } else if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        if (plain_safe(s))
            g_string_append(out, s);
        else
            g_string_append(out,
                            json_object_to_json_string_ext(
                                    v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    } else {
        g_string_append(out, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    }
}

static gboolean is_container(json_object *v)
{
    return (json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0) ||
           (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0);
}

static void yaml_value(GString *out, json_object *v, guint indent);

static void yaml_key(GString *out, const char *key)
{
    if (plain_safe(key)) {
        g_string_append(out, key);
    } else {
        json_object *k = json_object_new_string(key);
        yaml_scalar(out, k);
        json_object_put(k);
    }
}

/* The members of object @v, the first one without indentation (it follows "- " or starts the
 * document), the others at @indent. */
static void yaml_members(GString *out, json_object *v, guint indent)
{
    gboolean first = TRUE;
    json_object_object_foreach(v, key, val)
    {
        if (!first)
            g_string_append_printf(out, "%*s", (int)indent, "");
        first = FALSE;
        yaml_key(out, key);
        if (json_object_is_type(val, json_type_object) && is_container(val)) {
            g_string_append(out, ":\n");
            g_string_append_printf(out, "%*s", (int)indent + 2, "");
            yaml_members(out, val, indent + 2);
        } else if (json_object_is_type(val, json_type_array) && is_container(val)) {
            g_string_append(out, ":\n");
            yaml_value(out, val, indent);
        } else {
            g_string_append(out, ": ");
            yaml_value(out, val, indent);
        }
    }
}

/* A value; scalars and empty containers end the line, arrays start on a fresh line at @indent. */
static void yaml_value(GString *out, json_object *v, guint indent)
{
    if (json_object_is_type(v, json_type_object) && is_container(v)) {
        yaml_members(out, v, indent);
        return;
    }
    if (json_object_is_type(v, json_type_array) && is_container(v)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *item = json_object_array_get_idx(v, i);
            g_string_append_printf(out, "%*s- ", (int)indent, "");
            if (json_object_is_type(item, json_type_array) && is_container(item)) {
                g_string_append_c(out, '\n');
                yaml_value(out, item, indent + 2);
            } else {
                yaml_value(out, item, indent + 2);
            }
        }
        return;
    }
    if (json_object_is_type(v, json_type_object))
        g_string_append(out, "{}");
    else if (json_object_is_type(v, json_type_array))
        g_string_append(out, "[]");
    else
        yaml_scalar(out, v);
    g_string_append_c(out, '\n');
}

char *kbctl_yaml(json_object *value)
{
    GString *out = g_string_new(NULL);
    yaml_value(out, value, 0);
    return g_string_free(out, FALSE);
}

void kbctl_print_object(FILE *out, KbctlOutput format, json_object *value)
{
    if (format == KBCTL_OUT_YAML) {
        g_autofree char *y = kbctl_yaml(value);
        fputs(y, out);
        return;
    }
    const char *s = json_object_to_json_string_ext(value, JSON_C_TO_STRING_PRETTY |
                                                                  JSON_C_TO_STRING_SPACED |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE);
    fprintf(out, "%s\n", s);
}
