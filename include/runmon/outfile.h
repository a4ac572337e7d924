/*
 * outfile.h - an output file written whole or not at all, safe to aim at
 * a shared directory from a root cron job.
 *
 * A regular file (or a path that does not exist yet) is written to a new
 * temporary file beside it, created with O_CREAT|O_EXCL under an
 * unpredictable name (so a planted symlink is never followed), and renamed
 * over the path on commit: readers see the old file or the new one, and
 * concurrent writers to one path all succeed (the last rename wins). A
 * symlink to a regular file is replaced, not followed. Anything else that
 * exists (a character device such as /dev/null, a FIFO, /dev/stdout) is
 * written in place.
 * "-" is standard output.
 */
#ifndef RUNMON_OUTFILE_H
#define RUNMON_OUTFILE_H

#include <stdio.h>

#include "runmon/common.h"

struct rm_outfile {
	FILE *fp;   /* write here */
	char *path; /* NULL for standard output */
	char *tmp;  /* the temporary file, NULL when writing in place */
};

int rm_outfile_open(struct rm_outfile *o, const char *path, struct rm_err *err);
/* Flushes, syncs and closes; renames the temporary file over the path. */
int rm_outfile_commit(struct rm_outfile *o, struct rm_err *err);
/* Closes and removes the temporary file; the path keeps what it had. */
void rm_outfile_abort(struct rm_outfile *o);

#endif
