/*
 * copy.h - moves runs between stores (`runmon copy`): SQLite files and
 * PostgreSQL databases, either way. A run's rows replace the destination's
 * rows of the same run (entity, project and name), one transaction per
 * run, so a second copy changes nothing.
 */
#ifndef RUNMON_COPY_H
#define RUNMON_COPY_H

#include <stddef.h>

#include "runmon/common.h"

/* The tables copied with each run, in order (rm_copy_table_name). */
#define RM_COPY_TABLES 11

struct rm_copy_counts {
	size_t runs;
	size_t rows[RM_COPY_TABLES];
	size_t reports, alerts; /* with every run: reports copied, alerts added */
};

const char *rm_copy_table_name(int i);

/* Called after each run with its key and what it moved. */
typedef void (*rm_copy_progress)(void *arg, const char *run, const struct rm_copy_counts *one);

/* Copies the runs named (entity/project/name, or the local name) or, with
 * nnames 0, all of them with the store's history (the reports, matched by
 * generation time, and the alert log's rows DST lacks), from `from` (a path
 * or postgresql:// URI that exists) to `to` (created when a path). Totals
 * go to *c. */
int rm_copy(const char *from, const char *to, char *const *names, size_t nnames, rm_copy_progress progress, void *arg,
            struct rm_copy_counts *c, struct rm_err *err);

#endif
