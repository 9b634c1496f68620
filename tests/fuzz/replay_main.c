/* replay_main.c: runs a fuzz target without libFuzzer. Feeds each file of the corpus
 * directories given on the command line, then, for each file, every prefix length up to
 * 4 KiB and 64 deterministic single-byte mutations (files in subdirectories, the inputs
 * libFuzzer found, once each), so that CI exercises the decoders'
 * error paths under ASan/UBSan even without clang. Exit 0 when nothing crashed. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void run_one(const uint8_t *data, size_t n)
{
    /* Copy into an exact-size buffer so ASan sees reads past the end. */
    uint8_t *copy = malloc(n ? n : 1);
    if (copy == NULL)
        abort();
    memcpy(copy, data, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
}

static int run_file(const char *path, int mutate)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len < 0) {
        fclose(f);
        return 0;
    }
    uint8_t *buf = malloc((size_t)len + 1);
    if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        free(buf);
        return 0;
    }
    fclose(f);
    size_t n = (size_t)len;
    run_one(buf, n);
    if (!mutate) {
        free(buf);
        return 1;
    }
    size_t lim = n < 4096 ? n : 4096;
    for (size_t i = 0; i < lim; i++)
        run_one(buf, i);
    for (int m = 0; m < 64 && n > 0; m++) {
        size_t pos = (size_t)(next_rand() % n);
        uint8_t old = buf[pos];
        buf[pos] = (uint8_t)next_rand();
        run_one(buf, n);
        buf[pos] = old;
    }
    free(buf);
    return 1;
}

/* Every file of `path` (or `path` itself): with truncations and mutations (`mutate`), or once
 * each. A subdirectory's files run once each: corpus/<name>/grown/ holds what libFuzzer found
 * (hundreds of inputs; libFuzzer replays them all, recursively, under the clang build). */
static int run_path(const char *path, int mutate)
{
    DIR *dir = opendir(path);
    if (dir == NULL)
        return run_file(path, mutate);
    int files = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        DIR *inner = opendir(sub);
        if (inner != NULL) {
            closedir(inner);
            files += run_path(sub, 0);
        } else {
            files += run_file(sub, mutate);
        }
    }
    closedir(dir);
    return files;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int a = 1; a < argc; a++)
        files += run_path(argv[a], 1);
    if (files == 0) {
        fprintf(stderr, "fuzz replay: no corpus files found\n");
        return 1;
    }
    printf("fuzz replay: %d corpus files, all inputs ran without a crash\n", files);
    return 0;
}
