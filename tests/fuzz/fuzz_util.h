/*
 * fuzz_util.h - what the fuzz targets share: one in-memory store for the
 * process, and an import of a byte buffer through a temporary file (the
 * importers read paths, as runmon does).
 */
#ifndef RUNMON_FUZZ_UTIL_H
#define RUNMON_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of data[0..n) (the parsers read C strings). */
char *fuzz_cstring(const uint8_t *data, size_t n);

/* Imports data[0..n) as one file with opts into the process's store. */
void fuzz_import_bytes(const uint8_t *data, size_t n, const struct rm_import_opts *opts);

#endif
