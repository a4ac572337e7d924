/*
 * common.h - the common layer, used by every other: errors and exit codes,
 * aborting allocators, time, paths, text sanitising for terminals and the
 * atomic output file.
 *
 * Core functions never print: they return an rm_status and fill a
 * caller-provided struct rm_err. Only the command layer prints and picks the
 * process exit code.
 */
#ifndef RUNMON_COMMON_H
#define RUNMON_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ==== common ================================================================ */
/*
 * error reporting, exit codes and aborting allocators shared by
 * every runmon module.
 *
 * Core functions never print: they return an rm_status and fill a
 * caller-provided struct rm_err. Only the command layer prints and picks the
 * process exit code.
 */
#define RM_VERSION "0.1.0"

#if defined(__GNUC__)
#define RM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define RM_PRINTF(fmt, args)
#endif

#define RM_MAX_BUCKETS      32   /* dense buckets the detectors count (more labels are grouped) */
#define RM_MAX_RANKS        1024 /* data-parallel ranks told apart; higher ones share the last */
#define RM_BUCKET_LABEL_LEN 604  /* a bucket label whole (200 bytes, each a U+FFFD at worst) with its NUL */

/* Status of a core call. RM_OK is zero so `if (rc)` reads naturally. */
enum rm_status {
	RM_OK = 0,
	RM_E_USAGE,   /* bad option or argument */
	RM_E_INPUT,   /* malformed input file or row */
	RM_E_IO,      /* file system error */
	RM_E_STORE,   /* database error (SQLite or PostgreSQL) */
	RM_E_NET,     /* network or server error */
	RM_E_NOTFOUND /* the named run or object does not exist */
};

/* Process exit codes, documented in the README and in `runmon --help`. */
enum rm_exit {
	RM_EXIT_OK = 0,       /* healthy / done */
	RM_EXIT_FINDINGS = 1, /* findings at or above the failing severity */
	RM_EXIT_USAGE = 2,    /* usage or input error */
	RM_EXIT_NET = 3,      /* network or server error */
	RM_EXIT_STORE = 4,    /* database or file system error */
	RM_EXIT_PRICE = 5     /* compare: no worse in loss, but costlier beyond --max-cost */
};

/* What import accepts as one batch (a larger value is a bad line): 2^20
 * sequences, each up to 2^30 tokens. Products of the two stay exact in a
 * double and an int64. A length read anywhere (buckets, --lengths-from)
 * follows the same rule. */
#define RM_BATCH_MAX_N   1048576
#define RM_BATCH_MAX_LEN 1073741824

struct rm_err {
	enum rm_status code;
	uint64_t bad_line; /* a malformed input line (1-based), which --skip-bad would skip; 0: none */
	char msg[512];
};

/* Fills err (if not NULL) and returns code, so `return rm_err_set(...)`. */
int rm_err_set(struct rm_err *err, enum rm_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Maps a status to the exit code a command should return. */
int rm_exit_code(enum rm_status code);

/* Allocators that abort on out-of-memory: a CLI has no recovery path. */
/* A double held in 4 bytes (what a long run's per-step learning rates
 * and epochs need): NaN stays NaN, beyond float's range is infinite. */
float rm_float_of(double v);
/* An epoch in 4 bytes that keeps what is read of it: its whole part and
 * whether it is whole (a value just below an integer is not rounded up
 * to it), exactly for epochs below 2^24. */
float rm_epoch_float(double v);

void *rm_xmalloc(size_t n);
void *rm_xcalloc(size_t n, size_t size);
void *rm_xrealloc(void *p, size_t n);
char *rm_xstrdup(const char *s);

/* A UTC time as runmon writes it (2026-12-01T06:00:00Z) or a date
 * (2026-12-01, its midnight) into unix seconds; -1 when it is neither. */
int rm_parse_utc(const char *s, double *t);

/* Seconds on the monotonic clock, for intervals and deadlines. */
double rm_monotonic(void);

/* ==== progress ============================================================= */
/*
 * Long work tells how far it is (progress.c): one line on stderr redrawn
 * in place at most five times a second, only on a terminal and without
 * --quiet. One task at a time: start, report, end.
 */
void rm_progress_set_quiet(int quiet);
/* Begins a task: "import train.log", counted in unit ("bytes", "runs"),
 * total 0 when unknown. */
void rm_progress_start(const char *what, const char *unit, double total);
/* How far the task is; cheap when no task runs or no draw is due. */
void rm_progress_at(double done);
/* Whether a line is drawn at all (a terminal, no --quiet). */
int rm_progress_enabled(void);
/* Draws text as the task's line now (the caller paces it). */
void rm_progress_text(const char *text);
/* A passing word on the same line ("retrying 3/8 in 16 s: ..."). */
void rm_progress_note(const char *fmt, ...) RM_PRINTF(1, 2);
/* Erases the line before other output (warnings call it); the task goes on. */
void rm_progress_clear(void);
/* Ends the task and erases its line. */
void rm_progress_end(void);

/* path made absolute and, when it exists, free of symlinks: the key of a
 * position kept in the database, so a restart from elsewhere (or through
 * wandb/latest-run) finds it. Caller frees. */
char *rm_path_absolute(const char *path);
char *rm_xstrndup(const char *s, size_t n);
/* printf into a new string owned by the caller. */
char *rm_xasprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Where a layer below the commands says something (a warning, progress,
 * an alert line for stdout): the command sets the function and decides
 * how it shows; a voice without one says nothing. */
enum rm_say_kind { RM_SAY_INFO, RM_SAY_WARNING, RM_SAY_LINE };
struct rm_voice {
	void (*say)(void *arg, enum rm_say_kind kind, const char *msg);
	void *arg;
};
void rm_say(const struct rm_voice *v, enum rm_say_kind kind, const char *fmt, ...) RM_PRINTF(3, 4);

/* ==== text ================================================================== */
/*
 * untrusted text made safe to show: run names, keys and paths
 * come from file contents and file names, so they may hold terminal escape
 * sequences or bytes that are not UTF-8.
 */
/* Length of the well-formed UTF-8 sequence at p (1..4; RFC 3629: no
 * overlongs, surrogates or code points above U+10FFFF), 0 if none. */
size_t rm_utf8_len(const unsigned char *p, size_t left);

/* A copy of s with each byte that starts no well-formed sequence replaced
 * by U+FFFD, as JSON and the store's readers need. Caller frees. */
char *rm_utf8_fix(const char *s);

/* Copies src into dst (n bytes with the NUL), cut at a character boundary
 * with "~" at the end when it does not fit, so the copy stays UTF-8. */
void rm_utf8_copy(char *dst, size_t n, const char *src);

/* s as a terminal may show it: C0 and C1 controls, DEL and malformed bytes
 * become \xHH (\u00HH for C1), so no escape sequence reaches the screen and
 * no line can be forged. Returns s itself when nothing needs escaping, else
 * one of a few rotating buffers: valid until 8 later calls, main thread only. */
const char *rm_tx(const char *s);

/* label as a table or a sentence shows it: whole when it has at most width
 * bytes, else its first whole characters, "~" and six hex digits of a
 * hash of the whole label, so labels that share a long start stay apart
 * (JSON, Prometheus and the store keep labels whole). Returns buf. */
const char *rm_label_short(const char *label, size_t width, char *buf, size_t n);
/* Writes text to out with each line longer than width columns (UTF-8
 * characters; colour escapes take none) broken at blanks, the rest of a
 * line under its text ("  3. ", "VERDICT  " hang); a word wider than the
 * line stays whole. width < 40 leaves lines as they are. */
void rm_wrap(FILE *out, const char *text, size_t len, size_t width);
/* The candidate a mistyped word most likely meant: the one it begins
 * (when only one does), else the nearest by edit distance (insertions,
 * deletions, substitutions and swaps of neighbours) within a third of
 * its length, at least 1 and at most 3; NULL when none is that near or
 * two tie. */
const char *rm_nearest(const char *word, const char *const *cands, size_t n);

/* v for a message, into buf: a whole number as all its digits (2^60 is
 * 1152921504606846976, not 1.15292150460685e+18), else %.15g. Returns buf. */
const char *rm_num(double v, char *buf, size_t n);

/* ==== outfile =============================================================== */
/*
 * an output file written whole or not at all, safe to aim at
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

/* ==== sha256 ================================================================ */
/* SHA-256 of n bytes (FIPS 180-4), and the base64 of n bytes (RFC 4648,
 * padded) into out, NUL-terminated: returns its length, 0 when cap is too
 * small. A report's Content-Security-Policy names its inline parts so. */
void rm_sha256(const void *data, size_t n, uint8_t out[32]);
size_t rm_base64(const uint8_t *in, size_t n, char *out, size_t cap);

/* ==== banned functions ======================================================
 * As git's banned.h: calls that overflow, keep hidden state or lose errors
 * are compile errors in runmon's own code (sprintf: snprintf or
 * rm_xasprintf; strtok: strtok_r; ato*: strto*). The headers that declare
 * them come first, so only calls are caught. Test code may define
 * RM_ALLOW_BANNED. */
#ifndef RM_ALLOW_BANNED
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define RM_BANNED(func) sorry_##func##_is_banned_in_runmon
#undef sprintf
#define sprintf(...) RM_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) RM_BANNED(vsprintf)
#undef strcpy
#define strcpy(...) RM_BANNED(strcpy)
#undef strcat
#define strcat(...) RM_BANNED(strcat)
#undef strncpy
#define strncpy(...) RM_BANNED(strncpy)
#undef strtok
#define strtok(...) RM_BANNED(strtok)
#undef atof
#define atof(...) RM_BANNED(atof)
#undef atoi
#define atoi(...) RM_BANNED(atoi)
#undef atol
#define atol(...) RM_BANNED(atol)
#undef gets
#define gets(...) RM_BANNED(gets)
#undef gmtime
#define gmtime(...) RM_BANNED(gmtime)
#undef localtime
#define localtime(...) RM_BANNED(localtime)
#endif

#endif
