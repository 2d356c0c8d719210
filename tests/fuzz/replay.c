/* SPDX-License-Identifier: Zlib */
/* Replays fuzz inputs through fuzz_pool.c's LLVMFuzzerTestOneInput without libFuzzer, so every
   build (gcc optimised, valgrind, any SP_DEBUG level) checks the model against the committed
   corpus. Arguments: files or directories of inputs; none means the committed corpus
   (SP_FUZZ_CORPUS_DIR). A mismatch traps, so the test fails on the input it names first. */
#define _POSIX_C_SOURCE 200809L /* opendir / readdir */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

static int replay_path(const char *path, int *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such input %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (!d) return 1;
    int failed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        failed |= replay_path(full, count);
    }
    closedir(d);
    return failed;
}

int main(int argc, char **argv) {
    int failed = 0, count = 0;
    if (argc < 2) {
        failed = replay_path(SP_FUZZ_CORPUS_DIR, &count);
    } else {
        for (int i = 1; i < argc; i++) failed |= replay_path(argv[i], &count);
    }
    printf("replay: %d inputs, %s\n", count, failed ? "errors" : "all agree with the model");
    return failed || count == 0;
}
