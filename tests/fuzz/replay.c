/*
 * Replay main for fuzz targets built without libFuzzer: runs LLVMFuzzerTestOneInput once on every
 * file of tests/fuzz/corpus/<target>/ and prints TAP, so that `make check` (gcc, ASan/UBSan,
 * valgrind) exercises every corpus entry. The target name is the binary's name minus "fuzz-".
 */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int compare_paths(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
    g_autofree char *base = g_path_get_basename(argv[0]);
    const char *name = g_str_has_prefix(base, "fuzz-") ? base + 5 : base;
    const char *srcdir = g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
    g_autofree char *dir = g_build_filename(srcdir, "tests", "fuzz", "corpus", name, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(GDir) d = g_dir_open(dir, 0, &error);
    if (d == NULL) {
        printf("not ok 1 - corpus %s: %s\n", dir, error->message);
        return 1;
    }
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    const char *entry;
    while ((entry = g_dir_read_name(d)) != NULL)
        g_ptr_array_add(files, g_build_filename(dir, entry, NULL));
    g_ptr_array_sort(files, compare_paths);
    printf("1..%u\n", files->len);
    for (guint i = 0; i < files->len; i++) {
        g_autofree char *data = NULL;
        gsize len = 0;
        const char *path = g_ptr_array_index(files, i);
        if (!g_file_get_contents(path, &data, &len, &error)) {
            printf("not ok %u - %s: %s\n", i + 1, path, error->message);
            return 1;
        }
        LLVMFuzzerTestOneInput((const uint8_t *)data, len);
        printf("ok %u - %s\n", i + 1, path);
    }
    return 0;
}
