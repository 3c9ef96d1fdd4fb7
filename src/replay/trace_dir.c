/* trace_dir: listing the traces of a directory. */
#include "replay/trace_dir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool trace_dir_is(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void trace_list_free(trace_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    l->paths = NULL;
    l->n = 0;
}

static bool is_trace_name(const char *name)
{
    size_t len = strlen(name);
    return name[0] != '.' && len > 6 && strcmp(name + len - 6, ".trace") == 0;
}

/* The process id and image number of a name the shim gives, tlsan.PID.trace (image 1) or
 * tlsan.PID.N.trace; false for any other name. */
static bool shim_name(const char *name, unsigned long *pid, unsigned long *image)
{
    char *end;
    if (strncmp(name, "tlsan.", 6) != 0 || !isdigit((unsigned char)name[6]))
        return false;
    *pid = strtoul(name + 6, &end, 10);
    *image = 1;
    if (*end == '.' && isdigit((unsigned char)end[1]))
        *image = strtoul(end + 1, &end, 10);
    return strcmp(end, ".trace") == 0;
}

/* Orders the paths by their file names (they share the directory): the shim's names by
 * process id, then image; other names after them, in version order. */
static int by_name(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    const char *xs = strrchr(x, '/'), *ys = strrchr(y, '/');
    xs = xs ? xs + 1 : x;
    ys = ys ? ys + 1 : y;
    unsigned long xp, xi, yp, yi;
    bool xn = shim_name(xs, &xp, &xi), yn = shim_name(ys, &yp, &yi);
    if (xn != yn)
        return xn ? -1 : 1;
    if (xn && (xp != yp || xi != yi))
        return xp != yp ? (xp < yp ? -1 : 1) : (xi < yi ? -1 : 1);
    return strverscmp(xs, ys);
}

int trace_dir_list(const char *dir, trace_list *out)
{
    out->paths = NULL;
    out->n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t cap = 0;
    int err = 0;
    struct dirent *e;
    while (!err && (errno = 0, e = readdir(d))) {
        if (!is_trace_name(e->d_name))
            continue;
        size_t bytes = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(bytes);
        if (!path) {
            err = ENOMEM;
            break;
        }
        snprintf(path, bytes, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **grown = realloc(out->paths, ncap * sizeof *grown);
            if (!grown) {
                free(path);
                err = ENOMEM;
                break;
            }
            out->paths = grown;
            cap = ncap;
        }
        out->paths[out->n++] = path;
    }
    if (!err && errno)
        err = errno;
    closedir(d);
    if (err) {
        trace_list_free(out);
        errno = err;
        return -1;
    }
    if (out->n > 1)
        qsort(out->paths, out->n, sizeof *out->paths, by_name);
    return 0;
}
