/*
 * kbctl submit tf: flags in, a kubeflow.org/v1 TFJob out (see kbctl-submit.c for the choices).
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "cli/kbctl.h"

typedef struct {
    const char *name, *image, *queue, *priority, *cpu, *memory, *sync_dir, *scheduler;
    gint64 workers, ps, gpus;
    gint64 min_workers, max_workers; /* -1 when the job is not elastic */
    gboolean chief;
    json_object *env;           /* name -> value, in flag order (owned) */
    json_object *annotations;   /* pod annotations (owned) */
    const char *const *command; /* what followed "--" (borrowed from the args) */
} KbctlSubmit;

/* Read and check the flags; KBCTL_ERROR_USAGE names the flag and the value. Borrows from @args;
 * clear with kbctl_submit_clear() (also after a failure). */
gboolean kbctl_submit_parse(const KbctlArgs *args, KbctlSubmit *s, GError **error);
void kbctl_submit_clear(KbctlSubmit *s);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(KbctlSubmit, kbctl_submit_clear)

/* The TFJob for @s in @namespace_ (a new object). */
json_object *kbctl_submit_tfjob(const KbctlSubmit *s, const char *namespace_);
