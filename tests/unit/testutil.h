/*
 * testutil.h - helpers shared by the cmocka tests: temporary paths and
 * reading a database back through SQLite directly.
 */
#ifndef RUNMON_TESTUTIL_H
#define RUNMON_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* A fresh path in a private temporary directory (removed at exit). */
const char *tu_tmp_path(const char *name);
/* Writes text to a new temporary file and returns its path. */
const char *tu_write_file(const char *name, const char *text, size_t len);
/* Path of a fixture in tests/data. */
const char *tu_data(const char *name);

/* First column of the first row of sql on the database at path. */
int64_t tu_q_int(const char *db, const char *sql);
double tu_q_dbl(const char *db, const char *sql);
/* NULL-safe text result; static buffer. */
const char *tu_q_text(const char *db, const char *sql);
void tu_exec(const char *db, const char *sql);

#endif
