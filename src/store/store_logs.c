/*
 * store_logs.c - the logs beside the rows: imports, the sync cursor,
 * alerts delivered, and the positions of followed files.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "runmon/model.h"
#include "runmon/store.h"
#include "store_internal.h"

int rm_store_log_import(struct rm_store *st, const struct rm_import_log *log, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st,
	                                 "INSERT INTO imports(run_id, path, format, lines, steps, batches, replaced,"
	                                 " restarts, skipped, imported_at, composition, first_step, last_step)"
	                                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
	                                 err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, log->run_id);
	rm_dbq_text(s, 2, log->path, -1);
	rm_dbq_text(s, 3, log->format, -1);
	rm_dbq_int(s, 4, log->lines);
	rm_dbq_int(s, 5, log->steps);
	rm_dbq_int(s, 6, log->batches);
	rm_dbq_int(s, 7, log->replaced);
	rm_dbq_int(s, 8, log->restarts);
	rm_dbq_int(s, 9, log->skipped);
	rm_dbq_double(s, 10, (double)time(NULL));
	if (log->composition)
		rm_dbq_text(s, 11, log->composition, -1);
	if (log->steps && log->first_step >= 0) {
		rm_dbq_int(s, 12, log->first_step);
		rm_dbq_int(s, 13, log->last_step);
	} else {
		rm_dbq_null(s, 12);
		rm_dbq_null(s, 13);
	}
	return rm_st_run_once(st, s, err, "cannot log import");
}

int rm_store_sync_cursor(struct rm_store *st, int64_t run_id, int64_t *cursor, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st, "SELECT COALESCE(sync_cursor, 0) FROM runs WHERE id = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	*cursor = rm_dbq_step(s, err) == RM_DB_ROW ? rm_dbq_col_int(s, 0) : 0;
	return rm_st_run_once(st, s, err, "cannot read sync cursor");
}

int rm_store_set_sync_cursor(struct rm_store *st, int64_t run_id, int64_t cursor, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st, "UPDATE runs SET sync_cursor = CASE WHEN sync_cursor > ?2 THEN sync_cursor ELSE ?2 END WHERE id = ?1",
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, cursor);
	return rm_st_run_once(st, s, err, "cannot set sync cursor");
}

int rm_store_alert_sent(struct rm_store *st, const char *fingerprint, const char *channel, int *severity,
                        struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st,
	                                 "SELECT COALESCE(MAX(CASE severity WHEN 'info' THEN 1 WHEN 'warn' THEN 2"
	                                 " WHEN 'critical' THEN 3 END), 0) FROM alerts"
	                                 " WHERE fingerprint = ?1 AND channel = ?2 AND status = 'sent'",
	                                 err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, fingerprint, -1);
	rm_dbq_text(s, 2, channel, -1);
	*severity = rm_dbq_step(s, err) == RM_DB_ROW ? (int)rm_dbq_col_int(s, 0) : 0;
	return rm_st_run_once(st, s, err, "cannot read the alert log");
}

int rm_store_log_alert(struct rm_store *st, const char *fingerprint, const char *channel, const char *severity,
                       const char *status, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st,
	                                 "INSERT INTO alerts(fingerprint, channel, severity, sent_at, status)"
	                                 " VALUES (?1, ?2, ?3, ?4, ?5)",
	                                 err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, fingerprint, -1);
	rm_dbq_text(s, 2, channel, -1);
	rm_dbq_text(s, 3, severity, -1);
	rm_dbq_double(s, 4, (double)time(NULL));
	rm_dbq_text(s, 5, status, -1);
	return rm_st_run_once(st, s, err, "cannot log alert");
}

int rm_store_tail_get(struct rm_store *st, const char *path, struct rm_tail_pos *pos, int *found, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st, "SELECT dev, ino, \"offset\", lineno, run_id, head_len, head_hash FROM tails WHERE path = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, path, -1);
	memset(pos, 0, sizeof(*pos));
	*found = rm_dbq_step(s, err) == RM_DB_ROW;
	if (*found) {
		pos->dev = (uint64_t)rm_dbq_col_int(s, 0);
		pos->ino = (uint64_t)rm_dbq_col_int(s, 1);
		pos->offset = (uint64_t)rm_dbq_col_int(s, 2);
		pos->lineno = (uint64_t)rm_dbq_col_int(s, 3);
		pos->run_id = rm_dbq_col_int(s, 4);
		pos->head_len = (uint32_t)rm_dbq_col_int(s, 5);
		pos->head_hash = (uint64_t)rm_dbq_col_int(s, 6);
	}
	return rm_st_run_once(st, s, err, "cannot read the sidecar position");
}

int rm_store_tail_put(struct rm_store *st, const char *path, int64_t run_id, const struct rm_tail_pos *pos,
                      struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st,
	    "INSERT INTO tails(path, run_id, dev, ino, \"offset\", lineno, updated_at, head_len, head_hash)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(path) DO UPDATE SET"
	    " run_id = excluded.run_id, dev = excluded.dev, ino = excluded.ino,"
	    " \"offset\" = excluded.\"offset\", lineno = excluded.lineno, updated_at = excluded.updated_at,"
	    " head_len = excluded.head_len, head_hash = excluded.head_hash",
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, path, -1);
	rm_dbq_int(s, 2, run_id);
	rm_dbq_int(s, 3, (int64_t)pos->dev);
	rm_dbq_int(s, 4, (int64_t)pos->ino);
	rm_dbq_int(s, 5, (int64_t)pos->offset);
	rm_dbq_int(s, 6, (int64_t)pos->lineno);
	rm_dbq_double(s, 7, (double)time(NULL));
	rm_dbq_int(s, 8, (int64_t)pos->head_len);
	rm_dbq_int(s, 9, (int64_t)pos->head_hash);
	return rm_st_run_once(st, s, err, "cannot save the sidecar position");
}
