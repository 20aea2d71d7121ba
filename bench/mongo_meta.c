/*
 * bench/mongo_meta.c - the mongo workload's phases as a plain C program: the same system
 * calls, on the same names, in the same order as fsbench's `mongo` workload
 * (crates/engine/src/workloads/mongo.rs) with one process and fsync = false, timed per phase with
 * one clock_gettime before and after. The baseline of bench/mongo_vs_c.sh.
 *
 * Usage: mongo_meta DIR FILES FILE_SIZE DIRS
 * Prints "<phase> <seconds>" for create, copy, symlink, read, stat, rename, delete.
 * Leaves DIR as it found it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static long nfiles, ndirs, size;
static char **files1, **files2, **renamed, **links, **targets, **dirs1, **dirs2;
static long *first; /* first file of each directory; first[ndirs] = nfiles */
static int top;
static char *data, *buf;

static void die(const char *op, const char *name)
{
    fprintf(stderr, "mongo_meta: %s %s: %s\n", op, name, strerror(errno));
    exit(1);
}

static char *fmt(const char *f, long a, long b)
{
    char *s;
    if (asprintf(&s, f, a, b) < 0)
        exit(1);
    return s;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void write_all(int fd, const char *p, size_t n, const char *name)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("write", name);
        }
        p += w;
        n -= (size_t)w;
    }
}

static void make_tree(int t)
{
    if (mkdirat(top, t ? "tree2-000" : "tree1-000", 0755))
        die("mkdir", "root");
    for (long d = 0; d < ndirs; d++) {
        if (mkdirat(top, t ? dirs2[d] : dirs1[d], 0755))
            die("mkdir", dirs1[d]);
        for (long i = first[d]; i < first[d + 1]; i++) {
            if (t == 0) {
                int fd = openat(top, files1[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
                if (fd < 0)
                    die("create", files1[i]);
                long left = size, off = (i * 61) % 4096;
                while (left > 0) {
                    long n = left < CHUNK ? left : CHUNK;
                    write_all(fd, data + off, (size_t)n, files1[i]);
                    left -= n;
                    off = 0;
                }
                if (close(fd))
                    die("close", files1[i]);
            } else {
                int from = openat(top, files1[i], O_RDONLY | O_CLOEXEC);
                if (from < 0)
                    die("open", files1[i]);
                int to = openat(top, files2[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
                if (to < 0)
                    die("create", files2[i]);
                for (;;) {
                    ssize_t n = read(from, buf, CHUNK);
                    if (n < 0)
                        die("read", files1[i]);
                    if (n == 0)
                        break;
                    write_all(to, buf, (size_t)n, files2[i]);
                }
                close(from);
                if (close(to))
                    die("close", files2[i]);
            }
        }
    }
}

static void read_file(const char *name)
{
    int fd = openat(top, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("open", name);
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0)
            die("read", name);
        if (n == 0)
            break;
    }
    close(fd);
}

static void lstat_name(const char *name)
{
    struct stat st;
    if (fstatat(top, name, &st, AT_SYMLINK_NOFOLLOW))
        die("stat", name);
}

static void unlink_name(const char *name, int flags)
{
    if (unlinkat(top, name, flags))
        die("unlink", name);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: mongo_meta DIR FILES FILE_SIZE DIRS\n");
        return 2;
    }
    nfiles = atol(argv[2]);
    size = atol(argv[3]);
    ndirs = atol(argv[4]);
    if (nfiles < 1 || ndirs < 1 || size < 0)
        return 2;

    /* Names and layout, all prepared before any timing: the cheapest a loop can be (fsbench
     * instead updates the digits of per-worker name templates in its loop, so its memory
     * does not grow with the number of files). */
    files1 = malloc(sizeof(char *) * nfiles);
    files2 = malloc(sizeof(char *) * nfiles);
    renamed = malloc(sizeof(char *) * nfiles);
    links = malloc(sizeof(char *) * nfiles);
    targets = malloc(sizeof(char *) * nfiles);
    dirs1 = malloc(sizeof(char *) * ndirs);
    dirs2 = malloc(sizeof(char *) * ndirs);
    first = malloc(sizeof(long) * (ndirs + 1));
    for (long d = 0; d <= ndirs; d++)
        first[d] = d * nfiles / ndirs;
    for (long d = 0; d < ndirs; d++) {
        dirs1[d] = fmt("tree1-000/d%05ld", d, 0);
        dirs2[d] = fmt("tree2-000/d%05ld", d, 0);
        for (long i = first[d]; i < first[d + 1]; i++) {
            files1[i] = fmt("tree1-000/d%05ld/f%08ld", d, i);
            files2[i] = fmt("tree2-000/d%05ld/f%08ld", d, i);
            renamed[i] = fmt("tree1-000/d%05ld/f%08ld.r", d, i);
            links[i] = fmt("tree1-000/d%05ld/f%08ld.lnk", d, i);
            targets[i] = fmt("f%08ld", i, 0);
        }
    }
    long dlen = (size < CHUNK ? size : CHUNK) + 4096;
    data = malloc((size_t)dlen);
    buf = malloc(CHUNK);
    srand(1);
    for (long k = 0; k < dlen; k++)
        data[k] = (char)rand();

    int parent = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0)
        die("open", argv[1]);
    if (mkdirat(parent, "mongo", 0755))
        die("mkdir", "mongo");
    top = openat(parent, "mongo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0)
        die("open", "mongo");

    double t0 = now();
    make_tree(0);
    printf("create %.6f\n", now() - t0);

    t0 = now();
    make_tree(1);
    printf("copy %.6f\n", now() - t0);

    t0 = now();
    for (long i = 0; i < nfiles; i++)
        if (symlinkat(targets[i], top, links[i]))
            die("symlink", links[i]);
    printf("symlink %.6f\n", now() - t0);

    t0 = now();
    for (long i = 0; i < nfiles; i++)
        read_file(files1[i]);
    for (long i = 0; i < nfiles; i++)
        read_file(files2[i]);
    printf("read %.6f\n", now() - t0);

    t0 = now();
    for (long i = 0; i < nfiles; i++) {
        lstat_name(files1[i]);
        lstat_name(links[i]);
    }
    for (long i = 0; i < nfiles; i++)
        lstat_name(files2[i]);
    printf("stat %.6f\n", now() - t0);

    t0 = now();
    for (long i = 0; i < nfiles; i++)
        if (renameat(top, files1[i], top, renamed[i]))
            die("rename", files1[i]);
    printf("rename %.6f\n", now() - t0);

    t0 = now();
    for (int t = 0; t < 2; t++) {
        for (long d = 0; d < ndirs; d++) {
            for (long i = first[d]; i < first[d + 1]; i++) {
                unlink_name(t ? files2[i] : renamed[i], 0);
                if (t == 0)
                    unlink_name(links[i], 0);
            }
            unlink_name(t ? dirs2[d] : dirs1[d], AT_REMOVEDIR);
        }
        unlink_name(t ? "tree2-000" : "tree1-000", AT_REMOVEDIR);
    }
    printf("delete %.6f\n", now() - t0);

    close(top);
    if (unlinkat(parent, "mongo", AT_REMOVEDIR))
        die("rmdir", "mongo");
    return 0;
}
