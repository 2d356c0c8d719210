/* SPDX-License-Identifier: Zlib */
/* Builds against an installed or vendored spawnpool (CMake package, pkg-config, add_subdirectory)
   and makes one round trip. It also tells which variant it was linked with: the debug library
   (SP_DEBUG=1) names the acquisition site of a leased member in the leak report, the other one
   says the sites were not recorded. Compiled with -DSP_EXPECT_DEBUG_LIB=0 or 1, it fails on the wrong one. */
#include <spawnpool.h>

#include <stdio.h>
#include <string.h>

static char leak_line[256];

static void keep_line(sp_log_level level, const char *pool_name, const char *message, void *user) {
    (void)level, (void)pool_name, (void)user;
    if (strstr(message, "leased")) snprintf(leak_line, sizeof leak_line, "%s", message);
}

int main(void) {
    sp_desc desc = {0};
    desc.name = "installed";
    desc.item_size = 24;
    desc.logger.log = keep_line;
    sp_pool *pool = sp_pool_create(&desc);
    void *item = sp_acquire(pool);
    sp_leak_report(pool, SP_LOG_WARN);
    int debug_lib = strstr(leak_line, "consumer.c") != NULL;
    int ok = item && sp_release(pool, item) == SP_OK && leak_line[0] &&
             strcmp(sp_version(), SP_VERSION) == 0;
#ifdef SP_EXPECT_DEBUG_LIB
    if (debug_lib != SP_EXPECT_DEBUG_LIB) {
        fprintf(stderr, "consumer: linked the %s library, expected the other one (\"%s\")\n",
                debug_lib ? "debug" : "release", leak_line);
        ok = 0;
    }
#endif
    sp_pool_destroy(pool);
    printf("consumer: %s (spawnpool %s, %s library)\n", ok ? "ok" : "FAILED", sp_version(),
           debug_lib ? "debug" : "release");
    return ok ? 0 : 1;
}
