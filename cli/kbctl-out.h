/*
 * kbctl output: aligned tables with optional colour, JSON, YAML, durations as kubectl prints
 * them.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>
#include <stdio.h>

#include "cli/kbctl.h"

typedef enum {
    KBCTL_COLOUR_NONE,
    KBCTL_COLOUR_GREEN,
    KBCTL_COLOUR_YELLOW,
    KBCTL_COLOUR_RED,
    KBCTL_COLOUR_CYAN,
    KBCTL_COLOUR_DIM,
    KBCTL_COLOUR_BOLD,
} KbctlColour;

typedef struct KbctlTable KbctlTable;

/* A table with @n_columns headers (upper case, as given). */
KbctlTable *kbctl_table_new(guint n_columns, const char *const *headers);
void kbctl_table_free(KbctlTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbctlTable, kbctl_table_free)
/* Append a row; the cells are copied (NULL prints as "<none>"). */
void kbctl_table_add(KbctlTable *t, const char *const *cells);
/* Colour cell @col of the last row added. */
void kbctl_table_colour(KbctlTable *t, guint col, KbctlColour colour);
/* Print with columns three spaces apart, as kubectl does; @headers FALSE prints rows only;
 * @indent spaces before every line. */
void kbctl_table_print(const KbctlTable *t, FILE *out, gboolean colour, gboolean headers,
                       guint indent);

/* @text in @colour when @on (newly allocated). */
char *kbctl_colourize(const char *text, KbctlColour colour, gboolean on);
/* The colour of a job or pod status word ("Running" green, "Waiting"/"Pending" yellow, "Failed"
 * red, "Succeeded" cyan). */
KbctlColour kbctl_status_colour(const char *status);
/* Should output to @out be coloured: a terminal, NO_COLOR unset or empty, TERM not "dumb". */
gboolean kbctl_colour_wanted(FILE *out);

/* kubectl's HumanDuration: "42s", "3m12s", "25m", "5h3m", "3d4h", "2y45d". Newly allocated;
 * "<unknown>" for a negative duration. */
char *kbctl_duration(gint64 seconds);
/* The age of RFC 3339 @timestamp at @now, "<unknown>" when it does not parse. */
char *kbctl_age(const char *timestamp, gint64 now);

/* YAML for a JSON value, in kubectl's layout (two-space indentation, sequences not indented
 * under their key); strings that would read back as another type are double-quoted. Newly
 * allocated. */
char *kbctl_yaml(json_object *value);
/* Print @value as JSON (pretty, 4-space as kubectl) or YAML to @out, per @format. */
void kbctl_print_object(FILE *out, KbctlOutput format, json_object *value);

/* The server's own words in a REST error ("GET /api/...: HTTP 400 BadRequest: pod p does not
 * have a host assigned" -> "pod p does not have a host assigned"); the whole message otherwise.
 * Borrowed from @error. */
const char *kbctl_error_message(const GError *error);

/* JSON helpers over json-c that tolerate missing members and wrong types. */
json_object *kbctl_json_get(json_object *obj, const char *dotted_path);
const char *kbctl_json_str(json_object *obj, const char *dotted_path);
gint64 kbctl_json_int(json_object *obj, const char *dotted_path, gint64 def);
/* A member whose key contains dots (annotation keys): @obj[@key] as a string, or NULL. */
const char *kbctl_json_member_str(json_object *obj, const char *key);
/* New string / int64 members. */
void kbctl_json_set_str(json_object *obj, const char *key, const char *value);
void kbctl_json_set_int(json_object *obj, const char *key, gint64 value);
