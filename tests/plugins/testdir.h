/* SPDX-License-Identifier: MIT */
/* Plugin folders for loader tests.  Each test builds a temporary folder
 * holding exactly the plugins it wants (symlinks to the built test
 * plugins, real copies, or junk files) and points DEVQ_PLUGIN_PATH at it
 * before its first devq call.  Check runs each test in a fresh forked
 * process, so every test gets its own loader state. */
#ifndef DEVQ_TEST_TESTDIR_H
#define DEVQ_TEST_TESTDIR_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#ifndef TEST_PLUGIN_BUILD_DIR
#error "TEST_PLUGIN_BUILD_DIR must name tests/plugins/.libs of the build tree"
#endif

#define TESTDIR_MAX 8
static char *testdirs[TESTDIR_MAX];
static int ntestdirs;

static void testdir_cleanup(void);

__attribute__((unused)) static char *testdir_new(void)
{
    static int registered;
    if (!registered++)
        atexit(testdir_cleanup); /* a failed assertion exits the test process */
    ck_assert_int_lt(ntestdirs, TESTDIR_MAX);
    const char *tmp = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/devq-loader-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char *d = mkdtemp(tmpl);
    ck_assert_msg(d != NULL, "mkdtemp %s failed", tmpl);
    testdirs[ntestdirs] = strdup(d);
    return testdirs[ntestdirs++];
}

/* Path of a built test plugin, e.g. "fake" -> .../devq-fake.so. */
__attribute__((unused)) static void testdir_built(const char *kind, char *buf, size_t len)
{
    snprintf(buf, len, "%s/devq-%s.so", TEST_PLUGIN_BUILD_DIR, kind);
    ck_assert_msg(access(buf, R_OK) == 0, "test plugin %s is not built", buf);
}

__attribute__((unused)) static void testdir_link(const char *dir, const char *kind)
{
    char src[1024], dst[1024];
    testdir_built(kind, src, sizeof src);
    snprintf(dst, sizeof dst, "%s/devq-%s.so", dir, kind);
    ck_assert_msg(symlink(src, dst) == 0, "symlink %s failed", dst);
}

/* A real copy (another inode), so dlopen loads a second instance. */
__attribute__((unused)) static void testdir_copy(const char *dir, const char *kind)
{
    char src[1024], dst[1024], buf[65536];
    testdir_built(kind, src, sizeof src);
    snprintf(dst, sizeof dst, "%s/devq-%s.so", dir, kind);
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ck_assert(in >= 0 && out >= 0);
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert(write(out, buf, (size_t)n) == n);
    close(in);
    close(out);
}

__attribute__((unused)) static void testdir_write(const char *dir, const char *file, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Checked-fixture teardown: runs in the test's own process. */
__attribute__((unused)) static void testdir_cleanup(void)
{
    for (int i = 0; i < ntestdirs; i++) {
        DIR *d = opendir(testdirs[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", testdirs[i], e->d_name);
            unlink(path);
        }
        if (d)
            closedir(d);
        rmdir(testdirs[i]);
        free(testdirs[i]);
    }
    ntestdirs = 0;
}

#endif
