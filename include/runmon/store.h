/*
 * store.h - the store layer: one interface over two engines, SQLite and
 * PostgreSQL; copying runs between stores. The only layer that touches
 * sqlite3 or libpq.
 */
#ifndef RUNMON_STORE_H
#define RUNMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/model.h"

/* ==== store ================================================================= */
/*
 * the store: open and migrate, upsert rows, list runs, load what
 * the detectors read. One interface over two engines: a path is a SQLite
 * file, a postgresql:// URI a PostgreSQL database (src/store/db_*.c); the
 * callers never know which.
 *
 * Writes bind parameters and upsert on primary keys, so re-importing or
 * re-syncing the same data changes nothing. Callers group writes with
 * rm_store_begin / rm_store_commit; rm_store_rollback undoes everything
 * since begin.
 */
struct rm_store;

struct rm_import_log {
	int64_t run_id;
	const char *path, *format;
	int64_t lines, steps, batches, replaced, restarts, skipped;
	const char *composition;       /* NULL: none */
	int64_t first_step, last_step; /* the steps the file gave (-1: none) */
};

/* Opens (creating if needed) the database at path, or the PostgreSQL
 * database a postgresql:// URI names, and migrates it to the newest
 * schema. *out is owned by the caller; close with rm_store_close. */
int rm_store_open(struct rm_store **out, const char *path, struct rm_err *err);

/* As rm_store_open; with RM_STORE_MUST_EXIST a missing file is
 * RM_E_NOTFOUND instead of a new database (commands that only read). */
#define RM_STORE_MUST_EXIST 1u
int rm_store_open_flags(struct rm_store **out, const char *path, unsigned flags, struct rm_err *err);

/* Any open refuses a database that is not runmon's (schema version 0 with
 * tables) before writing to it, and an empty path. A database the process
 * cannot write is opened for reading when its schema is current. */
int rm_store_readonly(const struct rm_store *st);

/* As rm_store_open, but migrates no further than max_version (tests). */
int rm_store_open_version(struct rm_store **out, const char *path, int max_version, struct rm_err *err);

void rm_store_close(struct rm_store *st);

/* Schema version of the open database (PRAGMA user_version). */
int rm_store_schema_version(struct rm_store *st);
/* Newest schema version this binary knows. */
int rm_store_latest_version(void);

/* 1 on PostgreSQL; the database as messages name it (a URI redacted). */
int rm_store_is_postgres(const struct rm_store *st);
const char *rm_store_name(const struct rm_store *st);

int rm_store_begin(struct rm_store *st, struct rm_err *err);
int rm_store_commit(struct rm_store *st, struct rm_err *err);
void rm_store_rollback(struct rm_store *st);

/* Inside a transaction, makes the run's other writers wait for its end
 * (PostgreSQL: collectors on other machines; SQLite's write transaction
 * already excludes them). A writer that must wait first calls the
 * rm_store_on_wait function with who holds the run. */
int rm_store_lock_run(struct rm_store *st, int64_t run_id, struct rm_err *err);
void rm_store_on_wait(struct rm_store *st, void (*wait)(void *arg, const char *run, const char *holder), void *arg);

/* Finds or creates the run; sets *run_id. */
int rm_store_run_ensure(struct rm_store *st, const struct rm_run_key *key, int64_t *run_id, struct rm_err *err);

int rm_store_put_step(struct rm_store *st, int64_t run_id, const struct rm_step *s, struct rm_err *err);
int rm_store_put_batch(struct rm_store *st, int64_t run_id, const struct rm_batch *b, struct rm_err *err);
/* The loss one data-parallel rank printed for a step (NaN, inf: not
 * finite), and the step losses of [lo, hi] made the mean of their ranks'. */
int rm_store_put_rank_loss(struct rm_store *st, int64_t run_id, int64_t step, int64_t rank, double loss,
                           struct rm_err *err);
/* Moves eval key's values of steps [lo, hi] to the steps' loss (a step
 * that has a row keeps it), with the epoch eval epoch_key holds at each
 * step; *moved gets the step rows made. */
int rm_store_promote_eval(struct rm_store *st, int64_t run_id, const char *key, const char *epoch_key, int64_t lo,
                          int64_t hi, int64_t *moved, struct rm_err *err);
/* Deletes eval key's rows of steps [lo, hi]. */
int rm_store_drop_evals(struct rm_store *st, int64_t run_id, const char *key, int64_t lo, int64_t hi,
                        struct rm_err *err);
int rm_store_mean_rank_losses(struct rm_store *st, int64_t run_id, int64_t lo, int64_t hi, struct rm_err *err);
/* A loss-named series of a training record other than the one diagnosed
 * (other_losses). */
int rm_store_put_other_loss(struct rm_store *st, int64_t run_id, int64_t step, const char *key, double loss,
                            struct rm_err *err);
int rm_store_put_eval(struct rm_store *st, int64_t run_id, int64_t step, const char *key, double value,
                      struct rm_err *err);
/* Replaces the run's bucket boundaries: bucket i is (bounds[i], bounds[i+1]]. */
int rm_store_put_buckets(struct rm_store *st, int64_t run_id, const int64_t *bounds, int nbounds, struct rm_err *err);

/* Refreshes last_step and synced_at; sets loss_key when not NULL. */
int rm_store_run_touch(struct rm_store *st, int64_t run_id, const char *loss_key, struct rm_err *err);

/* Changes when another connection commits (SQLite's data_version; on
 * PostgreSQL a digest of the runs table and the import log). */
int rm_store_data_version(struct rm_store *st, int64_t *v, struct rm_err *err);

/* Steps of the run in [lo, hi): a range, so that counting what an import
 * added costs what the import touched, not the run's length. */
int rm_store_count_steps(struct rm_store *st, int64_t run_id, int64_t lo, int64_t hi, int64_t *n, struct rm_err *err);
int rm_store_log_import(struct rm_store *st, const struct rm_import_log *log, struct rm_err *err);

/* All runs, ordered by id. The array and its strings belong to the caller:
 * free with rm_run_info_free. */
int rm_store_list_runs(struct rm_store *st, struct rm_run_info **out, size_t *n, struct rm_err *err);
void rm_run_info_free(struct rm_run_info *runs, size_t n);
/* One run's info into *out; release its strings with rm_run_info_release. */
int rm_store_get_run(struct rm_store *st, int64_t run_id, struct rm_run_info *out, struct rm_err *err);
/* As rm_store_get_run without the counts (steps, batch_steps are 0), in
 * time that does not grow with the run: first_step and last_step are set. */
int rm_store_get_run_brief(struct rm_store *st, int64_t run_id, struct rm_run_info *out, struct rm_err *err);
void rm_run_info_release(struct rm_run_info *r);
/* Deletes the run's steps, batches, evals, buckets and findings (a
 * re-simulation or a forced re-import starts clean). */
int rm_store_clear_run(struct rm_store *st, int64_t run_id, struct rm_err *err);
/* Takes run_id for a writer of source: simulated and real data never mix
 * unasked. When the run holds steps of the other kind (a simulated run
 * under an import, a real one under simulate) this fails (RM_E_INPUT)
 * unless replace, which clears the run and gives it to source. */
int rm_store_claim_run(struct rm_store *st, int64_t run_id, const char *source, int replace, struct rm_err *err);
/* Deletes the run and every row of it (steps, batches, evals, buckets,
 * findings, levels, imports, file positions). The report history and the
 * alert log stay: they are records of what was said. */
int rm_store_delete_run(struct rm_store *st, int64_t run_id, struct rm_err *err);
/* Renames the run to new_path (NAME for a local run, ENTITY/PROJECT/ID),
 * its report history with it; RM_E_INPUT when the name is taken. */
int rm_store_rename_run(struct rm_store *st, int64_t run_id, const char *new_path, struct rm_err *err);
/* The loss steps run_id holds from elsewhere than the file path: *from
 * is another file's path that gave it steps (or "W&B" for a synced run),
 * NULL when none (the caller frees it); each(arg, step) is called, in
 * order, for each stored step within the step ranges the other files gave
 * (all the run's steps where a range is not known: an import logged before
 * ranges were, or a sync). */
int rm_store_foreign_steps(struct rm_store *st, int64_t run_id, const char *path, char **from,
                           void (*each)(void *arg, int64_t step), void *arg, struct rm_err *err);
/* Deletes the run if it holds no step, batch or eval row (a run an import
 * opened but gave nothing). */
int rm_store_drop_run_if_empty(struct rm_store *st, int64_t run_id, struct rm_err *err);

/* A run's data as the detectors read it: loss points and, separately,
 * batch composition per step (aggregated over ranks). Arrays are owned;
 * free with rm_store_series_release. */
struct rm_store_series {
	size_t n; /* steps with a loss row */
	int64_t *step;
	double *loss;       /* NaN unless finite (see nonfinite) */
	uint8_t *nonfinite; /* 1 NaN, 2 +/-Inf, 3 not logged; 0 finite; NULL when all are finite */
	float *lr;          /* NaN when not logged (rm_float_of) */
	float *epoch;       /* NaN when not logged (rm_epoch_float) */

	size_t nb;                /* batch rows: one per step, rank and micro-batch, in that order */
	int64_t *bstep;           /* a step repeats once per rank and micro-batch; step itself when equal */
	int *brank;               /* data-parallel rank of each (ranks from RM_MAX_RANKS - 1 up share it); NULL: one */
	int nranks;               /* 1 + the highest rank */
	int multi;                /* some step has more than one batch row */
	int *bucket;              /* dense bucket (see map), -1 when unknown */
	struct rm_bucket_map map; /* stored ids and labels of the dense buckets */
	double *max_len;          /* tokens; NaN when unknown (mean_len when only that is known) */
	size_t tokens_only;       /* batch rows with a token count but no length, sequence count or bucket */
	struct rm_mix mix;        /* rows whose recorded lengths span the map's buckets */

	size_t nrl; /* losses of named ranks (rank_losses), by step then rank; 0 when none */
	int64_t *rl_step;
	int *rl_rank;    /* ranks from RM_MAX_RANKS - 1 up share it, as brank */
	double *rl_loss; /* NaN unless finite */

	int64_t *bounds; /* bucket boundaries, nbounds of them (0 if unknown) */
	int nbounds;
	char *config_json; /* the run's config, or NULL */
};

/* Finds a run by "ENTITY/PROJECT/ID", by local name, or by a unique
 * display name. RM_E_NOTFOUND names the database when there is none. */
int rm_store_find_run(struct rm_store *st, const char *spec, int64_t *run_id, struct rm_err *err);
/* The run's first step logged at unix time t or later (its steps' ts);
 * RM_E_INPUT when the run logs no times or none that late. */
int rm_store_step_at(struct rm_store *st, int64_t run_id, double t, int64_t *step, struct rm_err *err);

/* Loads steps >= since of the run. A run whose batches carry no bucket id
 * gets its buckets from derive (NULL: none), on the loading thread. */
int rm_store_load_series(struct rm_store *st, int64_t run_id, int64_t since, const struct rm_derive *derive,
                         struct rm_store_series *out, struct rm_err *err);
/* The [min_len, max_len] of the run's batches in steps [since, until)
 * (until 0: to the end) that record no bucket id (NaN unknown; max_len is
 * mean_len when only that is known), into *lo and *hi (malloc'd, *n of
 * them): what buckets are derived from. */
int rm_store_unbucketed_lengths(struct rm_store *st, int64_t run_id, int64_t since, int64_t until, double **lo,
                                double **hi, size_t *n, struct rm_err *err);
void rm_store_series_release(struct rm_store_series *s);

/* Replaces the run's findings with rows[0..n) in one transaction. */
int rm_store_replace_findings(struct rm_store *st, int64_t run_id, const struct rm_finding_row *rows, size_t n,
                              struct rm_err *err);

/* What reports saw (changes.h): rm_store_put_report keeps what a report
 * generated at `generated` saw, in one transaction. rm_store_get_seen
 * appends to *out, for each of runs[0..n), what the latest report
 * generated at or before cutoff saw of it (runs none saw are left out);
 * *latest is that newest report's time, 0 when there is none. */
struct rm_seen;
int rm_store_put_report(struct rm_store *st, double generated, const struct rm_seen *seen, struct rm_err *err);
int rm_store_get_seen(struct rm_store *st, const char *const *runs, size_t n, double cutoff, struct rm_seen *out,
                      double *latest, struct rm_err *err);

/* Sets the run's config JSON (used by simulate and sync). */
int rm_store_set_config(struct rm_store *st, int64_t run_id, const char *config_json, struct rm_err *err);
/* Merges a JSON object into the run's config (RFC 7396: a null removes). */
int rm_store_merge_config(struct rm_store *st, int64_t run_id, const char *patch_json, struct rm_err *err);
/* Sets what is not NULL of a run's display name and state, whatever its source. */
int rm_store_set_run_state(struct rm_store *st, int64_t run_id, const char *display_name, const char *state,
                           struct rm_err *err);

/* Metadata of a W&B run, as sync stores it. */
struct rm_run_meta {
	const char *display_name, *state, *config_json; /* NULL: unchanged */
	double created_at, heartbeat_at;                /* unix seconds, 0: unchanged */
	int64_t remote_last_step, history_lines;        /* -1: unchanged */
};
int rm_store_set_run_meta(struct rm_store *st, int64_t run_id, const struct rm_run_meta *m, struct rm_err *err);

/* The run's sync cursor (0 when it was never synced). */
int rm_store_sync_cursor(struct rm_store *st, int64_t run_id, int64_t *cursor, struct rm_err *err);
/* Moves the cursor forward to `cursor` (never back: two collectors of one
 * run may commit windows out of order); call inside the transaction that
 * writes the window. */
int rm_store_set_sync_cursor(struct rm_store *st, int64_t run_id, int64_t cursor, struct rm_err *err);

/* A sample of a run's batches for the cost analysis: all of them, or ten
 * evenly spaced blocks of consecutive steps holding about max_batches
 * (stride: total / max_batches), ranks merged, with the
 * seconds each step took when the loss rows of step and step - 1 both
 * have a runtime (else a unix timestamp). Arrays owned; release with
 * rm_store_cost_release. */
struct rm_store_cost {
	size_t nb;
	int64_t stride;
	int64_t *step;
	int *bucket; /* dense, by the series' map; -1 none or unseen */
	double *n, *min_len, *max_len, *tokens, *padded;
	/* Seconds: each batch's own time (its step's, over the micro-batches
	 * its rank ran in the step), and the step's time on its first batch
	 * (NaN on the others and when unknown). One entry per batch: ranks
	 * and micro-batches are batches of their own, padded each alone. */
	double *dt, *step_dt;
	/* The lengths each batch recorded (batches.lens): lens_n[i] of them
	 * from lens[lens_at[i]]; 0 when not recorded or not n of them. */
	int64_t *lens;
	size_t nlens, *lens_at;
	uint32_t *lens_n;
};
int rm_store_load_cost(struct rm_store *st, int64_t run_id, int64_t since, size_t max_batches,
                       const struct rm_bucket_map *map, struct rm_store_cost *out, struct rm_err *err);
void rm_store_cost_release(struct rm_store_cost *c);

/* Replaces the run's fitted bucket levels (bucket_levels): the levels of
 * dense buckets bucket[0..k), written for each stored id the map has. */
int rm_store_replace_levels(struct rm_store *st, int64_t run_id, const struct rm_bucket_map *map, const int *bucket,
                            const double *shift, const double *level, int k, int log_scale, struct rm_err *err);

/* Replaces the run's fitted length effect (length_levels, and its table
 * length_factors over lengths min_len..max_len); removes it when !ok. */
struct rm_length_fit {
	int ok, log_scale;
	double slope, ref_len, r2, min_len, max_len;
};
int rm_store_replace_length(struct rm_store *st, int64_t run_id, const struct rm_length_fit *fit, struct rm_err *err);

/* The run-local id of a text bucket label, given on first sight (from
 * RM_BUCKET_TEXT_ID up). */
int rm_store_bucket_text_id(struct rm_store *st, int64_t run_id, const char *label, int64_t *id, struct rm_err *err);

/* Where a growing file was read up to: the file (dev, ino), the byte just
 * past the last complete line taken and that line's number. */
struct rm_tail_pos {
	uint64_t dev, ino, offset, lineno;
	int64_t run_id;     /* the run the file feeds (0: none yet) */
	int partial;        /* a last line without its newline was left for later */
	uint64_t head_hash; /* FNV-1a of the file's first head_len bytes */
	uint32_t head_len;  /* at most RM_TAIL_HEAD; 0 when none was taken */
};
#define RM_TAIL_HEAD 1024

/* The stored position for path; *found is 0 when there is none. */
int rm_store_tail_get(struct rm_store *st, const char *path, struct rm_tail_pos *pos, int *found, struct rm_err *err);
int rm_store_tail_put(struct rm_store *st, const char *path, int64_t run_id, const struct rm_tail_pos *pos,
                      struct rm_err *err);

/* The highest severity (0 none, 1 info, 2 warn, 3 critical) already
 * delivered for an alert fingerprint on a channel. */
int rm_store_alert_sent(struct rm_store *st, const char *fingerprint, const char *channel, int *severity,
                        struct rm_err *err);
/* Records a delivery attempt (status "sent" or "failed"). */
int rm_store_log_alert(struct rm_store *st, const char *fingerprint, const char *channel, const char *severity,
                       const char *status, struct rm_err *err);

/* ==== pg ==================================================================== */
/*
 * the PostgreSQL connection behind `--db postgresql://...`: opened
 * by libpq with its own conventions (PGPASSWORD, ~/.pgpass, PGSERVICE,
 * sslmode), migrated to the newest schema of sql/postgresql/, and a
 * password never shown: every message names the database redacted.
 */
/* 1 when spec names a PostgreSQL database (postgresql:// or postgres://)
 * rather than a SQLite file. */
int rm_db_is_postgres(const char *spec);

/* spec with any password replaced by "***": the userinfo of a URI
 * (user:secret@) and password=... in its query or in a key=value string. */
void rm_db_redact(const char *spec, char *buf, size_t n);

/* msg (a libpq message about connecting to spec) into buf with spec's
 * secrets replaced by "***": the URI itself, the password raw and
 * percent-decoded, and any quoted token sharing four bytes with one. */
void rm_db_scrub(const char *spec, const char *msg, char *buf, size_t n);

struct rm_pg;

/* Connects and migrates (one transaction, under an advisory lock, so
 * collectors starting together migrate once). A database holding tables
 * but no runmon schema, or a newer runmon's, is refused before anything is
 * written. *out is closed with rm_pg_close. */
int rm_pg_open(struct rm_pg **out, const char *uri, struct rm_err *err);
/* As rm_pg_open, migrating no further than max_version (tests). */
int rm_pg_open_version(struct rm_pg **out, const char *uri, int max_version, struct rm_err *err);
void rm_pg_close(struct rm_pg *pg);

/* The schema version of the open database, and the newest this binary knows. */
int rm_pg_schema_version(struct rm_pg *pg);
int rm_pg_latest_version(void);

/* The database as messages name it (redacted). */
const char *rm_pg_name(const struct rm_pg *pg);

/* ==== copy ================================================================== */
/*
 * moves runs between stores (`runmon copy`): SQLite files and
 * PostgreSQL databases, either way. A run's rows replace the destination's
 * rows of the same run (entity, project and name), one transaction per
 * run, so a second copy changes nothing.
 */
/* The tables copied with each run, in order (rm_copy_table_name). */
#define RM_COPY_TABLES 13

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
