/*
 * log_internal.h - the console-log reader's text helpers (log_text.c),
 * shared by its files.
 */
#ifndef RUNMON_LOG_INTERNAL_H
#define RUNMON_LOG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/parse.h"

/* Character classes of the reader's scans, one table lookup each (the
 * reader looks at every byte of every line several times; the C locale's
 * classes, which <ctype.h> gives through a call and a pointer). */
enum { RM_LOG_SPACE = 1, RM_LOG_KEY = 2, RM_LOG_SEP = 4, RM_LOG_DIGIT = 8, RM_LOG_NUM0 = 16 };
extern const unsigned char rm_log_class[256];

static inline int rm_log_space(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_SPACE;
}

/* Can c start a key ("lr", "_step", "(embed)")? */
static inline int rm_log_key_start(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_KEY;
}

/* Could c begin a number as logs write it ("-1.5", "[0.1]", "nan")? */
static inline int rm_log_num_start(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_NUM0;
}

/* Could c begin a field separator (" | ", ", ", " : ")? */
static inline int rm_log_sep_char(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_SEP;
}
/* Parses a number as logs write it: "1,702,559", "221.07s", "410ms",
 * "12.34%", "100/500000" (the first), "7.45E+00", "[0.0001]", "001",
 * "nan", "inf". Returns 1 and *out, or 0. */
int rm_log_number(const char *s, size_t n, double *out);
/* The index of the next '|', ',' or ':' in s[i..n), or n. */
size_t rm_log_next_sep(const char *s, size_t i, size_t n);
/* Is t a log level ("INFO", "WARNING")? */
int rm_log_is_level(const char *t, size_t n);
/* Reads "a/b/c", three numbers (OpenNMT-py's bsz); returns 1 and v, or 0. */
int rm_log_triple(const char *s, size_t n, double v[3]);
/* Does w (lower case) occur in s[0..n), ignoring case? */
int rm_log_has_word(const char *s, size_t n, const char *w);
/* Is name a key of the object text ('name': or "name":)? */
int rm_log_has_key(const char *obj, size_t n, const char *name);
/* Could an object that does not parse have been a training record? */
int rm_log_record_like(const char *obj, size_t n);
/* Removes escape sequences in place; returns the new length. */
size_t rm_log_strip_escapes(char *s, size_t n);
/* Is the line an indented name=value pair continuing the record above? */
int rm_log_continuation(const char *s, size_t n);
/* Does the word say what the number before it counts ("frames")? */
int rm_log_count_unit(const char *t, size_t n);
/* Opens icefall's "loss[...]" groups, drops "tot_...[...]" ones and blanks
 * a rank prefix ("(3/4)", "[rank3]:") in place; returns the rank or -1. */
int64_t rm_log_open_groups(char *s, size_t n);

/* The longest key the reader makes (a pattern's field name leaves room for
 * an "eval_" prefix). */
#define RM_LOG_MAX_KEY 96

/* ---- a line's pairs (log_pairs.c) ---- */

/* One line's pairs: keys are built in keys[], values parsed. */
struct log_line {
	struct rm_row row;
	char keys[4096];
	size_t klen;
	int eval;    /* an evaluation line */
	int summary; /* an end-of-epoch summary (fairseq's [train]) */
	int bar;     /* read from a progress bar's frame */
	/* Only a key says evaluation (val_loss) beside a training loss: keyed
	 * is set when the line is one; keyed_train when the file's head found
	 * such lines to be its training record (rm_guess.keyed_train). */
	int keyed, keyed_train;
	char *py; /* a Python dict converted to JSON */
	size_t pycap;
	char *norm; /* the line with its bracketed counters made plain */
	size_t normcap;
	char numbuf[4][24]; /* the text of numbers the reader adds (rank, tag, progress) */
	int nnum;
	uint8_t *target; /* each field's enum rm_target, and its priority */
	uint8_t *prio;
	size_t tcap;
};

/* Appends a key made of words w[0..nw) to the line's key buffer, lower-
 * cased, words joined by '_', trailing ':' '.' '=' cut. Returns the key or
 * NULL. */
const char *rm_log_make_key(struct log_line *ll, const char *const *w, const size_t *wl, int nw, size_t *klen);
void rm_log_add_pair(struct log_line *ll, const char *key, size_t klen, const char *raw, size_t rlen, double v);
void rm_log_add_text(struct log_line *ll, const char *key, size_t klen, const char *raw, size_t rlen);
/* Adds the pair key = v, its text kept in the line. */
void rm_log_add_number(struct log_line *ll, const char *key, int64_t v);
/* A line of an integer counter and one number ("12:\t0.583"): the step
 * and the number, unnamed (RM_GUESS_UNNAMED); nothing for any other. */
void rm_log_bare_pair(struct log_line *ll, const char *s, size_t n);
/* Is w[0..n) one of list's words (NULL-terminated), case aside? */
int rm_log_word_in(const char *w, size_t n, const char *const *list);
/* The length of the evaluation prefix key opens with ("val_", "valid_",
 * "eval_", "validation_", "test_"; case aside), 0 when none. */
size_t rm_log_eval_prefix(const char *key, size_t klen);
/* "[15 | 6.02]" at s[i] (nshepperd's gpt-2: a counter and the seconds since
 * the start): into buf (48 bytes) as " counter 15 elapsed 6.02 ", *end past
 * the ']'. */
int rm_log_counter_time(const char *s, size_t i, size_t n, size_t *end, char *buf, size_t *bl);
/* Splits s into fields at " | ", "|", ", " and " : " and reads their pairs. */
void rm_log_pairs(struct log_line *ll, const char *s, size_t n);
/* s with counters in brackets made plain ("Epoch [1][50/300]" is "Epoch 1
 * iter 50/300", "[  7 Epoch" is "counter 7 Epoch") and a number's second
 * reading in parentheses blanked ("loss: 0.52 (0.61)"): ll->norm, or s
 * itself when nothing changed; *n is updated. */
/* A bracket of fields at s[i] ("[Epoch 1/10]"): 1 and *end past its ']'. */
int rm_log_word_group(const char *s, size_t i, size_t n, size_t *end);
const char *rm_log_normalize(struct log_line *ll, const char *s, size_t *n);
/* Rewrites a Python dict literal as JSON into ll->py: its length, or 0. */
size_t rm_log_python_json(struct log_line *ll, const char *s, size_t n);

/* ---- what a physical line holds (log_frames.c) ---- */

/* The records of one physical line: its frames (a progress bar redraws
 * over itself with '\r'), each split where ranks' records were glued. */
struct log_segs {
	struct {
		size_t at, len;
		int frame; /* one of several frames: a redraw may repeat the last */
	} * seg;
	size_t n, cap;
};
void rm_log_segments(const char *s, size_t n, struct log_segs *g);

/* A progress bar in a line ("Epoch 3:  45%|####  | 450/1000 [00:30<00:36,
 * 15.0it/s, loss=2.31]"): the text before it is s[0..at), its counter, and
 * the metrics after its rate (post, or NULL). */
struct log_bar {
	size_t at;
	int64_t count;
	int64_t total; /* "12/475": 475; 0 when the bar shows none */
	const char *post;
	size_t postlen;
};
int rm_log_bar(const char *s, size_t n, struct log_bar *b);

/* ---- tables (log_table.c) ---- */

#define RM_LOG_TABLE_MAX 24
/* A table's header: the names of its columns. */
struct log_table {
	char name[RM_LOG_TABLE_MAX][32];
	int n; /* 0: none */
};
/* Is s a header (3 or more names, no number, no pair)? Fills t. */
int rm_log_table_header(const char *s, size_t n, struct log_table *t);
/* Is s a row of t (a number under each name)? Adds its pairs to ll. */
int rm_log_table_row(const struct log_table *t, struct log_line *ll, const char *s, size_t n);

/* ---- --pattern: "step:{step} loss:{loss}" ---- */
#define MAX_PATTERN_FIELDS 32

struct pattern {
	int n;                                   /* fields */
	const char *lit[MAX_PATTERN_FIELDS + 1]; /* the literal before field i; lit[n] after the last */
	size_t litlen[MAX_PATTERN_FIELDS + 1];
	const char *name[MAX_PATTERN_FIELDS];
	size_t namelen[MAX_PATTERN_FIELDS];
};

/* Compiles p into pt: 0, or -1 with why set. */
int rm_log_pattern_compile(const char *p, struct pattern *pt, char *why, size_t whylen);
/* Matches literal l at s[*pos..n), a run of blanks matching any (or none);
 * moves *pos past it and returns 1, or 0. */
int rm_log_literal_at(const char *l, size_t ll, const char *s, size_t n, size_t *pos);
/* Reads s into ll->row with the pattern: 1 when it matches, else 0. */
int rm_log_pattern_parse(const struct pattern *pt, struct log_line *ll, const char *s, size_t n);

/* ---- roles (log_roles.c) ---------------------------------------------------- */

struct rm_guess;

#define LOG_LOOPS      8  /* bar totals followed */
#define LOG_TEMPLATES  64 /* templates of training lines counted */
#define LOG_TPL_WORDS  32 /* words a template keeps */
#define LOG_TPL_FIELDS 3  /* a line of fewer pairs (a record's field under its header) has none */
/* What the file's lines are, counted over its head and followed as it is
 * read. */
struct log_roles {
	/* The loops whose bars carry a total: frames each, the last count,
	 * and the passes a bar ran to its end and began again. */
	struct {
		int64_t total, prev, passes;
		uint64_t frames;
	} loop[LOG_LOOPS];
	int nloops;
	int64_t bar_now; /* the training bar's counter at its last frame, its passes counted on */
	/* The head's loss lines beside a val_ key and no other sign of
	 * evaluation, and its other training lines, by template. */
	uint64_t keyed_lines, train_lines;
	uint64_t carried, last_eval; /* keyed lines whose val_ values repeat the last's, and its values' hash */
	struct {
		uint64_t hash, lines;
		uint32_t w[LOG_TPL_WORDS];
		int nw;
	} tpl[LOG_TEMPLATES];
	int ntpl;
	/* What a banner or a config dump said: the logging interval
	 * (logging_steps), the run's optimizer steps (the HF Trainer's
	 * "Total optimization steps") and its epochs ("Num Epochs"), 0
	 * unsaid. */
	int64_t logging_steps, total_steps, num_epochs;
	/* Training records without a step, and the fractional epoch the
	 * latest carried (the HF Trainer's dicts) with its count, 0 none. */
	int64_t stepless, rec_epoch_at;
	double rec_epoch;
};
/* The loop of a bar's frame: the passes it made before (an epoch no line
 * names), -1 for a bar without a total, -2 for another loop than the
 * training one g names (an evaluation's). */
int64_t rm_log_bar_loop(struct log_roles *r, const struct log_bar *b, const struct rm_guess *g);
/* The head's scan: a record ll of line's text. */
void rm_log_roles_count(struct log_roles *r, const struct log_line *ll, const char *line, size_t len);
/* After the head's scan: the training bar's total, whether keyed lines
 * train, the summaries' templates and, where the head is the whole file
 * (whole), the interval its banner's total steps give, into g. */
void rm_log_roles_decide(const struct log_roles *r, int whole, struct rm_guess *g);
/* The logging interval the banner's total steps over the stepless records
 * gives, checked against their epochs (log_roles.c); 0 when they do not
 * say one. For a head read whole. */
int64_t rm_log_roles_interval(const struct log_roles *r);
/* The head's scan: any line's text, for what a banner says. */
void rm_log_roles_banner(struct log_roles *r, const char *s, size_t n);
/* Is line of a template g holds for a summary? */
int rm_log_is_summary(const struct rm_guess *g, const char *line, size_t len);

#endif
