/*
 * smallfiles.c - the bonnie++ small-file phases as a plain C syscall loop, the baseline that
 * bench/bonnie_smallfiles.sh compares fsbench's `bonnie` workload against.
 *
 * Same work, same syscalls, same order as fsbench's phases (crates/engine/src/workloads/bonnie.rs):
 *   seq_create   openat(O_CREAT|O_EXCL|O_WRONLY|O_CLOEXEC, 0600) + write(size, 8 KiB pieces)
 *                + close, names "%010x" + 0..12 random alphanumerics (sorted order)
 *   seq_stat     opendir, readdir, fstatat each entry (+ open/read/close when size > 0)
 *   seq_delete   opendir, readdir, unlinkat each entry, rmdir of the test directory
 *   rand_create  as seq_create with the random characters first
 *   rand_stat    fstatat (+ read) by name in a shuffled order
 *   rand_delete  unlinkat by name in another shuffled order, rmdir
 * No sync and no cache drop (the example runs fsbench with fsync = false too). Only each
 * phase as a whole is timed (CLOCK_MONOTONIC); names, sizes and orders are prepared before.
 * The third column divides by the process's CPU time of the phase instead
 * (CLOCK_PROCESS_CPUTIME_ID: user + system, without the time the CPU was stolen by the
 * hypervisor or given to other processes), the figure that stays steady on a shared machine.
 *
 * Usage: smallfiles DIR FILES MIN_SIZE MAX_SIZE SEED
 *        -> "phase rate cpu_rate" lines (files per second of wall time, files per CPU-second)
 * Build: gcc -O2 -o smallfiles smallfiles.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 8192
#define EXTRA 12
static const char CHARS[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
static char buf[CHUNK];
static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static double cpu_start; /* CPU time at the start of the phase being timed */

/* Starts timing a phase: returns the wall clock, remembers the CPU clock. */
static double start(void)
{
    cpu_start = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    return now();
}

static void die(const char *what, const char *name)
{
    fprintf(stderr, "smallfiles: %s %s: %s\n", what, name ? name : "", strerror(errno));
    exit(1);
}

/* One buffer of NUL-terminated names, like fsbench's NameTable. */
static char **make_names(long n, int random_first, char **store)
{
    char *p = *store = malloc((size_t)n * (10 + EXTRA + 1));
    char **names = malloc(sizeof(char *) * (size_t)n);
    if (!p || !names)
        die("malloc", NULL);
    for (long i = 0; i < n; i++) {
        char extra[EXTRA + 1];
        int len = (int)(rnd() % (EXTRA + 1));
        for (int j = 0; j < len; j++)
            extra[j] = CHARS[rnd() % (sizeof(CHARS) - 1)];
        extra[len] = 0;
        names[i] = p;
        p += (random_first ? sprintf(p, "%s%010lx", extra, i) : sprintf(p, "%010lx%s", i, extra)) + 1;
    }
    return names;
}

static void shuffle(long *order, long n)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(rnd() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void stat_and_read(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, 0))
        die("stat", name);
    if (st.st_size > 0) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die("open", name);
        for (off_t left = st.st_size; left > 0;) {
            ssize_t r = read(fd, buf, left < CHUNK ? (size_t)left : CHUNK);
            if (r <= 0)
                die("read", name);
            left -= r;
        }
        close(fd);
    }
}

static void report(const char *phase, long n, double t0)
{
    double wall = now() - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    printf("%s %.1f %.1f\n", phase, n / wall, n / cpu);
}

static void create(int top, char **names, const long *sizes, long n)
{
    for (long i = 0; i < n; i++) {
        int fd = openat(top, names[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
            die("create", names[i]);
        for (long left = sizes[i]; left > 0;) {
            long w = left < CHUNK ? left : CHUNK;
            if (write(fd, buf, (size_t)w) != w)
                die("write", names[i]);
            left -= w;
        }
        close(fd);
    }
}

/* readdir walk; unlink or stat each entry. Returns the number of entries handled. */
static long walk(int top, int delete)
{
    int fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d)
        die("opendir", ".");
    long count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (delete) {
            if (unlinkat(dirfd(d), e->d_name, 0))
                die("unlink", e->d_name);
        } else {
            stat_and_read(dirfd(d), e->d_name);
        }
        count++;
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: smallfiles DIR FILES MIN_SIZE MAX_SIZE SEED\n");
        return 2;
    }
    long n = atol(argv[2]), min = atol(argv[3]), max = atol(argv[4]);
    rng_state = strtoull(argv[5], NULL, 10);
    int parent = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0 || n <= 0 || min > max)
        die("bad arguments or directory", argv[1]);
    long *sizes = malloc(sizeof(long) * (size_t)n), *order = malloc(sizeof(long) * (size_t)n);
    if (!sizes || !order)
        die("malloc", NULL);

    for (int random_first = 0; random_first < 2; random_first++) {
        char *store;
        char **names = make_names(n, random_first, &store);
        for (long i = 0; i < n; i++) {
            sizes[i] = min == max ? max : min + (long)(rnd() % (uint64_t)(max - min + 1));
            order[i] = i;
        }
        if (mkdirat(parent, "bonnie.files", 0700))
            die("mkdir", "bonnie.files");
        int top = openat(parent, "bonnie.files", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
            die("open", "bonnie.files");

        double t0 = start();
        create(top, names, sizes, n);
        report(random_first ? "rand_create" : "seq_create", n, t0);

        if (!random_first) {
            t0 = start();
            if (walk(top, 0) != n)
                die("seq_stat count", NULL);
            report("seq_stat", n, t0);
            t0 = start();
            if (walk(top, 1) != n)
                die("seq_delete count", NULL);
            if (unlinkat(parent, "bonnie.files", AT_REMOVEDIR))
                die("rmdir", "bonnie.files");
            report("seq_delete", n, t0);
        } else {
            shuffle(order, n);
            t0 = start();
            for (long i = 0; i < n; i++)
                stat_and_read(top, names[order[i]]);
            report("rand_stat", n, t0);
            shuffle(order, n);
            t0 = start();
            for (long i = 0; i < n; i++)
                if (unlinkat(top, names[order[i]], 0))
                    die("unlink", names[order[i]]);
            if (unlinkat(parent, "bonnie.files", AT_REMOVEDIR))
                die("rmdir", "bonnie.files");
            report("rand_delete", n, t0);
        }
        close(top);
        free(names);
        free(store);
    }
    return 0;
}
