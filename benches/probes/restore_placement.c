/*
 * How fast can 500 MiB come back from a file into fresh anonymous memory on one thread,
 * by way of four placements? A probe for the restore paths' design (the note
 * docs/notes/2026-12-03-restore-at-disk-speed.md, fifth pass), not a test or a bench:
 *
 *   D  the disk floor of `marvin bench reclaim`: 1 MiB reads into one reused buffer;
 *   E  2 MiB preads straight into a fresh mapping (its pages fault in inside the copy);
 *   A  as an eager restore places a batch today: MADV_POPULATE_WRITE of 2 MiB, then a
 *      pread into it;
 *   B  a pread of 2 MiB into a reused staging buffer, then UFFDIO_COPY into the fresh
 *      mapping (registered with a userfaultfd): pages allocated and filled in one step,
 *      never zeroed first.
 *
 * Each cold (the file dropped from the page cache first) and warm (read through first),
 * five rounds, modes in turn. Build and run as root on the machine to measure, with
 * nothing else running:
 *
 *   gcc -O2 -o /tmp/restore_placement benches/probes/restore_placement.c
 *   flock /run/marvin-machine.lock /tmp/restore_placement [MODES] [FILE]
 *
 * MODES defaults to DEAB; FILE to /var/tmp/restore_placement.bin (500 MiB of
 * pseudo-random bytes, written once if missing; remove it afterwards).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIZE (500ul << 20)
#define CHUNK (2ul << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static const char *path = "/var/tmp/restore_placement.bin";
static int uffd = -1;
static char *staging;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void drop_cache(void) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static void warm_cache(void) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    while (read(fd, staging, CHUNK) > 0) {
    }
    close(fd);
}

static void make_file(void) {
    if (access(path, F_OK) == 0) return;
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd < 0) die("create");
    unsigned long x = 88172645463325252ul;
    for (size_t off = 0; off < SIZE; off += CHUNK) {
        for (size_t i = 0; i < CHUNK; i += 8) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            memcpy(staging + i, &x, 8);
        }
        if (write(fd, staging, CHUNK) != (ssize_t)CHUNK) die("write");
    }
    fsync(fd);
    close(fd);
}

static void read_exact(int fd, char *to, size_t len, size_t off) {
    if (pread(fd, to, len, off) != (ssize_t)len) die("pread");
}

/* One restore of the whole file by `mode`; returns milliseconds. */
static double run(char mode, int cold) {
    if (cold)
        drop_cache();
    else
        warm_cache();
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    double t = now_ms();
    if (mode == 'D') {
        while (read(fd, staging, 1 << 20) > 0) {
        }
        t = now_ms() - t;
        close(fd);
        return t;
    }
    char *dst = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (dst == MAP_FAILED) die("mmap");
    if (mode == 'B') {
        struct uffdio_register reg = {
            .range = {(unsigned long)dst, SIZE}, .mode = UFFDIO_REGISTER_MODE_MISSING};
        if (ioctl(uffd, UFFDIO_REGISTER, &reg)) die("UFFDIO_REGISTER");
    }
    for (size_t off = 0; off < SIZE; off += CHUNK) {
        switch (mode) {
        case 'A':
            madvise(dst + off, CHUNK, MADV_POPULATE_WRITE);
            read_exact(fd, dst + off, CHUNK, off);
            break;
        case 'E':
            read_exact(fd, dst + off, CHUNK, off);
            break;
        case 'B': {
            read_exact(fd, staging, CHUNK, off);
            struct uffdio_copy c = {
                .dst = (unsigned long)(dst + off), .src = (unsigned long)staging, .len = CHUNK};
            if (ioctl(uffd, UFFDIO_COPY, &c)) die("UFFDIO_COPY");
            break;
        }
        default:
            fprintf(stderr, "unknown mode %c (modes: D E A B)\n", mode);
            exit(2);
        }
    }
    t = now_ms() - t;
    munmap(dst, SIZE);
    close(fd);
    return t;
}

int main(int argc, char **argv) {
    const char *modes = argc > 1 ? argv[1] : "DEAB";
    if (argc > 2) path = argv[2];
    staging = aligned_alloc(4096, CHUNK);
    if (!staging) die("aligned_alloc");
    uffd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (uffd < 0) die("userfaultfd");
    struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_SIGBUS};
    if (ioctl(uffd, UFFDIO_API, &api)) die("UFFDIO_API");
    make_file();
    for (int round = 0; round < 5; round++) {
        printf("cold:");
        for (const char *m = modes; *m; m++) printf("  %c %6.1f", *m, run(*m, 1));
        printf("   warm:");
        for (const char *m = modes; *m; m++)
            if (*m != 'D') printf("  %c %6.1f", *m, run(*m, 0));
        printf("  (ms)\n");
        fflush(stdout);
    }
    return 0;
}
