/* DRA claim status writes and their undo; see claim-write.h. */
#include "scheduler/claim-write.h"

/* PATCH @w's claim status with @body (a tree) or else @text. Urgent (kb-client.h), as the
 * binding it comes before: queued behind PodGroup status writes and events, a DRA pod's binding
 * waited for them, which a pod without claims does not. */
static void patch_status(KbClient *client, const KbClaimWrite *w, json_object *body,
                         const char *text, gboolean version_only, KbResponseFunc done,
                         gpointer data)
{
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_resource_claims,
                     .namespace_ = w->namespace_,
                     .name = w->name,
                     .subresource = "status",
                     .body = body,
                     .body_text = text,
                     .content_type = "application/merge-patch+json",
                     .version_only = version_only,
                     .urgent = TRUE};
    kb_client_call_async(client, &req, done, data);
}

void kb_claim_write_send(KbClient *client, const KbClaimWrite *w, gboolean version_only,
                         KbResponseFunc done, gpointer data)
{
    patch_status(client, w, NULL, w->body, version_only, done, data);
}

static void on_undone(const KbResponse *resp, gpointer data)
{
    char *what = data;
    if (resp->error != NULL)
        g_warning("%s: undoing its status write failed (%s): left as it is", what,
                  resp->error->message);
    g_free(what);
}

void kb_claim_write_undo(KbClient *client, const KbClaimWrite *w, const char *rv, const char *who)
{
    json_object *body = NULL;
    json_object_deep_copy(w->undo, &body, NULL);
    json_object *meta = json_object_new_object();
    if (rv != NULL)
        json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(body, "metadata", meta);
    patch_status(client, w, body, NULL, FALSE, on_undone,
                 g_strdup_printf("%sclaim %s/%s", who, w->namespace_, w->name));
    json_object_put(body);
}
