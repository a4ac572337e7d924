/*
 * wandb.h - the W&B layer: the GraphQL client (runs, history windows,
 * alerts) and sync, which writes runs through the sink.
 */
#ifndef RUNMON_WANDB_H
#define RUNMON_WANDB_H

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/net.h"
#include "runmon/store.h"

/* ==== wandb ================================================================= */
/*
 * the W&B public GraphQL API (wandb-api.md): authentication,
 * run metadata, run listing and history pages.
 *
 * The API key comes from WANDB_API_KEY, else from the netrc entry whose
 * machine is the host of the base URL (as W&B's own tools do). It is never
 * accepted on the command line and never appears in a message.
 */

struct rm_wandb_opts {
	const char *base_url;            /* NULL: WANDB_BASE_URL, else RM_WANDB_DEFAULT_URL */
	long timeout_ms;                 /* 0: WANDB_HTTP_TIMEOUT seconds, else 30 s */
	int retry_max;                   /* -1: default */
	double backoff_min, backoff_max; /* seconds; 0: defaults */
	int max_connections;
	int jobs, max_jobs; /* requests in flight: fixed, or 0 adaptive up to max_jobs (0: 16) */
};

struct rm_wandb;

/* Finds the API key and prepares the client. RM_E_USAGE when there is no
 * key (the message says where runmon looked). */
int rm_wandb_open(struct rm_wandb **out, const struct rm_wandb_opts *o, struct rm_err *err);
void rm_wandb_close(struct rm_wandb *w);
const char *rm_wandb_base_url(const struct rm_wandb *w);
struct rm_http *rm_wandb_http(struct rm_wandb *w);

/* The API key: WANDB_API_KEY, else the netrc password for the base URL's
 * host[:port]. Returns a new string or NULL. */
char *rm_wandb_find_key(const char *base_url);

/* A run path "ENTITY/PROJECT/ID": three non-empty parts. */
struct rm_run_path {
	char *buf; /* owns the parts */
	const char *entity, *project, *id;
};
/* Returns 1 and fills p (release it) when spec is a run path, else 0. */
int rm_run_path_parse(const char *spec, struct rm_run_path *p);
void rm_run_path_release(struct rm_run_path *p);

struct rm_wandb_run {
	char *name; /* the run id */
	char *display_name;
	char *state;                     /* lowercase as sent */
	char *config_json;               /* as sent (a JSON string) */
	double created_at, heartbeat_at; /* unix seconds, 0 unknown */
	int64_t last_step;               /* historyKeys.lastStep, -1 none */
	int64_t history_lines;
};
void rm_wandb_run_release(struct rm_wandb_run *r);

/* Run metadata. RM_E_NOTFOUND when the project or run is null in data. */
int rm_wandb_get_run(struct rm_wandb *w, const char *entity, const char *project, const char *name,
                     struct rm_wandb_run *out, struct rm_err *err);

/* Ids of a project's runs, oldest first; filters_json is W&B's MongoDB-style
 * filter ("{}" for all). *ids is owned by the caller (free each, then it). */
int rm_wandb_list_runs(struct rm_wandb *w, const char *entity, const char *project, const char *filters_json,
                       char ***ids, size_t *n, struct rm_err *err);

/* The HistoryPage request body for steps [lo, hi). Caller frees. */
char *rm_wandb_history_body(const char *entity, const char *project, const char *name, int64_t lo, int64_t hi);
/* The same with samples (pageSize) given: a window wider than samples whose
 * answer holds samples rows may have been sampled down by the server. */
char *rm_wandb_history_body_n(const char *entity, const char *project, const char *name, int64_t lo, int64_t hi,
                              int64_t samples);

/* Parses a completed HistoryPage response (NUL-terminated) into outer:
 * on RM_OK *history is its array of row strings (spans into body, still
 * escaped). RM_E_NET for a body to retry (truncated, not JSON); RM_E_INPUT
 * for a GraphQL errors array; RM_E_NOTFOUND when the run is null. why
 * names the problem. Large pages are scanned without building a tree. */
struct rm_row;
struct rm_field;
int rm_wandb_parse_history(const char *body, size_t len, struct rm_row *outer, const struct rm_field **history,
                           char *why, size_t n);

/* Describes a failed request for the user: the status and W&B's own
 * message, with a hint for 401/403. */
void rm_wandb_describe_failure(const struct rm_wandb *w, const struct rm_http_req *r, char *buf, size_t n);

/* "2024-05-01T10:00:00[.fff][Z]" (a missing zone is UTC) to unix seconds;
 * 0 if unparsable. */
double rm_wandb_parse_time(const char *s);

/* ==== sync ================================================================== */
/*
 * incremental, concurrent, resumable pull of W&B runs into the
 * store.
 *
 * History comes in HistoryPage step windows [lo, hi) up to lastStep + 1
 * (an empty window does not end the scan). Several windows are in flight
 * at once; they are committed in step order, each in one transaction with
 * the run's sync cursor, so a sync killed at any moment resumes with no gap
 * and no duplicate.
 */
struct rm_sync_progress {
	const char *run; /* entity/project/id */
	int64_t rows;    /* history rows stored so far in this sync */
	int64_t total;   /* historyLineCount, 0 unknown */
	int64_t cursor;  /* steps below are stored */
	int64_t stop;    /* lastStep + 1 */
	double elapsed;  /* seconds */
};

struct rm_sync_opts {
	int jobs;                 /* windows in flight; 0 (default): the client's limit (flow.h) */
	int page_size;            /* steps per window (default 1000) */
	const char *loss_key;     /* NULL: detect */
	const char *batch_prefix; /* NULL: "batch/" */
	const int64_t *bounds;
	int nbounds;
	int full;       /* start from step 0, ignoring the cursor */
	int skip_bad;   /* a row that does not parse or map is skipped and counted, the rest kept */
	int max_rounds; /* re-check lastStep of a growing run (default 3) */
	void (*progress)(void *arg, const struct rm_sync_progress *p);
	void *progress_arg;
	/* When *cancel becomes nonzero (a signal handler), no new window is
	 * fetched; the windows already queued are committed, and the sync
	 * returns RM_OK with res->cancelled set. It resumes from there. */
	volatile sig_atomic_t *cancel;
};
void rm_sync_opts_default(struct rm_sync_opts *o);

struct rm_sync_result {
	int64_t run_id;
	int64_t from, to; /* cursor before and after */
	int64_t windows, rows, steps, batches, new_steps;
	char loss_key[128];
	char state[32];
	double seconds;
	int cancelled;
	int64_t skipped;     /* bad rows skipped (skip_bad) */
	char first_bad[320]; /* the first of them: its step and why */
};

/* Syncs one run. On failure the windows committed before the error stay
 * (the cursor says how far), and err says what failed. */
int rm_sync_run(struct rm_store *st, struct rm_wandb *w, const char *entity, const char *project, const char *name,
                const struct rm_sync_opts *o, struct rm_sync_result *res, struct rm_err *err);

#endif
