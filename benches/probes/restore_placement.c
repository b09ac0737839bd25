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
 *      never zeroed first;
 *   a  A on two threads, as an eager restore shares the prefaulting today: a second
 *      thread populates up to 8 chunks ahead, this one reads each once it is populated;
 *   b  B on two threads: this one reads chunk k into one of two staging buffers while
 *      a second places chunk k-1 from the other.
 *
 * Each cold (the file dropped from the page cache first) and warm (read through first),
 * five rounds, modes in turn. Build and run as root on the machine to measure, with
 * nothing else running:
 *
 *   gcc -O2 -o /tmp/restore_placement benches/probes/restore_placement.c
 *   flock /run/marvin-machine.lock /tmp/restore_placement [MODES] [FILE]
 *
 * MODES defaults to DEABab; FILE to /var/tmp/restore_placement.bin (500 MiB of
 * pseudo-random bytes, written once if missing; remove it afterwards).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
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

#define CHUNKS (SIZE / CHUNK)
#define AHEAD 8

static const char *path = "/var/tmp/restore_placement.bin";
static int uffd = -1;
static char *staging;
static char *staging2[2];

/* The two-thread modes' shared state: the destination, the chunks done by the second
 * thread, and (b) the chunks read by the first. */
static char *two_dst;
static atomic_long helper_done, reader_done;
static char two_mode;

static void *helper(void *arg) {
    (void)arg;
    for (long k = 0; k < (long)CHUNKS; k++) {
        if (two_mode == 'a') {
            while (k >= atomic_load(&reader_done) + AHEAD) {
            }
            madvise(two_dst + k * CHUNK, CHUNK, MADV_POPULATE_WRITE);
        } else {
            while (atomic_load(&reader_done) <= k) {
            }
            struct uffdio_copy c = {.dst = (unsigned long)(two_dst + k * CHUNK),
                                    .src = (unsigned long)staging2[k % 2],
                                    .len = CHUNK};
            if (ioctl(uffd, UFFDIO_COPY, &c)) {
                perror("UFFDIO_COPY");
                exit(1);
            }
        }
        atomic_store(&helper_done, k + 1);
    }
    return NULL;
}

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
    if (mode == 'B' || mode == 'b') {
        struct uffdio_register reg = {
            .range = {(unsigned long)dst, SIZE}, .mode = UFFDIO_REGISTER_MODE_MISSING};
        if (ioctl(uffd, UFFDIO_REGISTER, &reg)) die("UFFDIO_REGISTER");
    }
    if (mode == 'a' || mode == 'b') {
        pthread_t t2;
        two_dst = dst, two_mode = mode;
        atomic_store(&helper_done, 0);
        atomic_store(&reader_done, 0);
        pthread_create(&t2, NULL, helper, NULL);
        for (long k = 0; k < (long)CHUNKS; k++) {
            if (mode == 'a') {
                while (atomic_load(&helper_done) <= k) {
                }
                read_exact(fd, dst + k * CHUNK, CHUNK, k * CHUNK);
            } else {
                /* Staging buffer k % 2 is free once chunk k - 2 is placed. */
                while (atomic_load(&helper_done) < k - 1) {
                }
                read_exact(fd, staging2[k % 2], CHUNK, k * CHUNK);
            }
            atomic_store(&reader_done, k + 1);
        }
        pthread_join(t2, NULL);
    }
    for (size_t off = 0; mode != 'a' && mode != 'b' && off < SIZE; off += CHUNK) {
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
            fprintf(stderr, "unknown mode %c (modes: D E A B a b)\n", mode);
            exit(2);
        }
    }
    t = now_ms() - t;
    munmap(dst, SIZE);
    close(fd);
    return t;
}

int main(int argc, char **argv) {
    const char *modes = argc > 1 ? argv[1] : "DEABab";
    if (argc > 2) path = argv[2];
    staging = aligned_alloc(4096, CHUNK);
    staging2[0] = aligned_alloc(4096, CHUNK);
    staging2[1] = aligned_alloc(4096, CHUNK);
    if (!staging || !staging2[0] || !staging2[1]) die("aligned_alloc");
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
