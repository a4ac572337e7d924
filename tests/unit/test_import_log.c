/*
 * test_import_log.c - the console-log reader on fixtures in tests/data/logs
 * (one per trainer, with their banners, config dumps, validation lines,
 * progress bars and restarts), and its rules: numbers as logs write them,
 * eval lines, lines without a step, broken objects, detection, following.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/import.h"
#include "testutil.h"

struct want {
	const char *file;
	uint64_t steps, evals, batches;
	int64_t first, last;
	const char *loss_key;
	const char *composition; /* substring, or NULL for none */
};

static int imp(const char *db, const struct rm_import_opts *o, const char *path, struct rm_import_report *rep,
               struct rm_err *err)
{
	struct rm_store *st;
	char *files[1] = {(char *)path};
	assert_int_equal(rm_store_open(&st, db, err), 0);
	int rc = rm_import(st, o, files, 1, rep, err);
	rm_store_close(st);
	return rc;
}

static const char *log_path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/logs/%s", RUNMON_TEST_DATA, name);
	return buf;
}

/* Every fixture is detected as a log and gives the records a reader of the
 * log would count by hand. */
static void dialects(void **state)
{
	static const struct want w[] = {
	    {"fairseq-hydra.log", 4, 1, 4, 100, 400, "loss", "bsz (n), wpb (tokens)"},
	    {"fairseq-resumed.log", 8, 1, 8, 100, 600, "loss", "bsz (n), wpb (tokens)"},
	    {"marian.log", 5, 3, 3, 1000, 5000, "cost", "sen (cumulative sequences"},
	    /* Marian 1.7: no "* N", no "after": words/s x Time gives the tokens */
	    {"marian17.log", 4, 0, 3, 500, 2000, "cost", "words/s (tokens per second x the interval's seconds)"},
	    {"megatron.log", 4, 1, 3, 10, 40, "lm_loss", "consumed_samples"},
	    {"nanogpt.log", 6, 2, 0, 0, 260, "loss", NULL},
	    {"modded-nanogpt.log", 4, 2, 0, 2, 126, "train_loss", NULL},
	    /* no step on the dicts: the tqdm frame before each says it */
	    {"hf-console.log", 3, 1, 0, 50, 150, "loss", NULL},
	    {"logfmt.log", 3, 1, 3, 100, 300, "loss", "tokens"},
	    /* a record over indented lines, a settings repr with epoch=None */
	    {"olmo.log", 3, 0, 2, 1, 3, "train/crossentropyloss", "throughput/total_tokens"},
	    /* colour codes and indentation around "Step N/M; ... xent: X" */
	    {"opennmt.log", 3, 2, 2, 100, 300, "xent", "tok/s (tokens per second x the interval's seconds)"},
	    /* the leading space before "iteration", DeepSpeed's "steps: N" */
	    {"megatron-ds.log", 3, 0, 3, 1, 3, "loss", "consumed_tokens"},
	    /* a config dict with bare words that mentions loss: no record */
	    {"fairseq-hydra-config.log", 2, 0, 2, 100, 200, "loss", "bsz (n)"},
	    /* a line per rank, "(r/N) Epoch E, batch B, loss[...]", batch counted per epoch */
	    {"icefall.log", 3, 0, 6, 0, 100, "loss", "frames (tokens)"},
	    /* "epoch 2, step 10, training loss = 4.50": an in-epoch counter */
	    {"plainloop.log", 5, 1, 0, 10, 50, "training_loss", NULL},
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "dialect%zu.db", i);
		const char *db = tu_tmp_path(name);
		struct rm_import_opts o = {0};
		struct rm_import_report rep;
		struct rm_err err;
		int rc = imp(db, &o, log_path(w[i].file), &rep, &err);
		if (rc)
			fail_msg("%s: %s", w[i].file, err.msg);
		const struct rm_import_result *r = &rep.r[0];
		assert_string_equal(rm_format_name(r->format), "log");
		if (r->steps != w[i].steps || r->evals != w[i].evals || r->batches != w[i].batches ||
		    r->first_step != w[i].first || r->last_step != w[i].last)
			fail_msg("%s: %llu steps %llu evals %llu batches %lld..%lld", w[i].file,
			         (unsigned long long)r->steps, (unsigned long long)r->evals,
			         (unsigned long long)r->batches, (long long)r->first_step, (long long)r->last_step);
		assert_string_equal(r->loss_key, w[i].loss_key);
		if (w[i].composition) {
			assert_non_null(r->composition);
			assert_non_null(strstr(r->composition, w[i].composition));
		} else {
			assert_null(r->composition);
		}
		assert_true(r->not_records > 0); /* every fixture has banners */
		assert_int_equal(r->skipped, 0);
		rm_import_report_release(&rep);
	}
}

/* The values, not only the counts. */
static void dialect_values(void **state)
{
	const char *db = tu_tmp_path("values.db");
	static const char *const files[] = {"fairseq-hydra.log", "marian.log", "megatron.log", "nanogpt.log",
	                                    "hf-console.log"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct rm_import_opts o = {0};
		struct rm_import_report rep;
		struct rm_err err;
		assert_int_equal(imp(db, &o, log_path(files[i]), &rep, &err), 0);
		rm_import_report_release(&rep);
	}
#define RUN(name) "(SELECT id FROM runs WHERE name = '" name "')"
	/* Marian 1.7: the interval's tokens are words/s x Time over its 500
	 * steps, its sentences the growth of Sen.; OpenNMT-py: the target
	 * side of "298/315 tok/s" times the growth of the elapsed "sec". */
	{
		struct rm_import_opts o = {0};
		struct rm_import_report rep;
		struct rm_err err;
		assert_int_equal(imp(db, &o, log_path("marian17.log"), &rep, &err), 0);
		rm_import_report_release(&rep);
		assert_int_equal(imp(db, &o, log_path("opennmt.log"), &rep, &err), 0);
		rm_import_report_release(&rep);
	}
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || ':' || tokens || '/' || n, ',') FROM batches"
	                                  " WHERE run_id = " RUN("marian17")),
	                    "1000:1085/128,1500:1353/128,2000:810/128");
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || ':' || tokens, ',') FROM batches"
	                                  " WHERE run_id = " RUN("opennmt")),
	                    "200:543,300:572");
	/* fairseq: numeric strings; wpb / bsz per batch; the valid line's step
	 * is valid_num_updates; the end-of-epoch [train] summary is no step. */
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 200 AND run_id = " RUN("fairseq-hydra")) ==
	            11.02);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 200 AND run_id = " RUN("fairseq-hydra")),
	                 12113);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'valid_loss' AND step = 350 AND run_id = " RUN(
	                             "fairseq-hydra")) == 9.88);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps WHERE step = 350"), 0);
	/* Marian: thousands separators; Sen. and the labels "after" T are
	 * cumulative (Sen. restarts each epoch, so step 4000 has no batch). */
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 2000 AND run_id = " RUN("marian")) == 5.9102211);
	assert_int_equal(tu_q_int(db, "SELECT n FROM batches WHERE step = 2000 AND run_id = " RUN("marian")), 396);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 2000 AND run_id = " RUN("marian")),
	                 11498);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches WHERE step = 4000 AND run_id = " RUN("marian")), 0);
	assert_true(tu_q_dbl(db, "SELECT lr FROM steps WHERE step = 4000 AND run_id = " RUN("marian")) == 1e-4);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'eval_bleu' AND run_id = " RUN("marian")) ==
	            18.4102);
	/* Megatron: E exponents, "iteration 10/ 500000", consumed samples. */
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 20 AND run_id = " RUN("megatron")) == 9.87452);
	assert_int_equal(tu_q_int(db, "SELECT n FROM batches WHERE step = 20 AND run_id = " RUN("megatron")), 128);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'eval_lm_loss_value' AND step = 30") == 8.701224);
	/* nanoGPT: "step N: train loss" is an evaluation, not step N's loss. */
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 250 AND run_id = " RUN("nanogpt")) == 2.0405);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'val_loss' AND step = 250") == 2.0705);
	/* HF: the dict after a progress bar's last frame; the final summary
	 * row is no step. */
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps WHERE run_id = " RUN("hf-console")), 3);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 100 AND run_id = " RUN("hf-console")) == 0.5521);
#undef RUN
}

static void import_text(const char *name, const char *text, const struct rm_import_opts *o, int want_rc,
                        struct rm_import_report *rep, struct rm_err *err, const char **db_out)
{
	char dbname[80];
	snprintf(dbname, sizeof(dbname), "%s.db", name);
	const char *db = tu_tmp_path(dbname);
	const char *f = tu_write_file(name, text, strlen(text));
	*db_out = db;
	int rc = imp(db, o, f, rep, err);
	if (rc != want_rc)
		fail_msg("%s: rc %d: %s", name, rc, rc ? err->msg : "");
}

/* Numbers as logs write them; dates and times are no values. */
static void numbers(void **state)
{
	static const char text[] =
	    "2025-03-02 09:12:40 step 1 | loss 2.5e-01 | tokens 1,024 | time 221.07s | mem 12.5GB\n"
	    "[2025-03-02 09:12:41] step 2: loss 0.25, tokens 2,048, pct 12.5%\n"
	    "step:3/1770 loss:7.45E+00 tokens:4096\n"
	    "step=004 loss=\"0.5\" tokens=[512]\n";
	struct rm_import_opts o = {.format = RM_FMT_LOG};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("numbers.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 4);
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 1") == 0.25);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 1"), 1024);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 2"), 2048);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") == 7.45);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 3"), 4096);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 4") == 0.5);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 4"), 512);
}

/* An object after a prefix that mentions a loss and does not parse is a
 * bad line (file:line, nothing kept), skipped with --skip-bad; a config
 * dump that does not parse is no record. */
static void broken_object(void **state)
{
	static const char text[] =
	    "[2025-01-10 14:01:02][fairseq_cli.train][INFO] - {'optimizer': ('adam', (0.9, 0.98)), 'lr': 5e-4}\n"
	    "[2025-01-10 14:02:05][train_inner][INFO] - {\"epoch\": 1, \"loss\": \"12.8\", \"num_updates\": \"100\"}\n"
	    "[2025-01-10 14:03:01][train_inner][INFO] - {\"epoch\": 1, \"loss\": \"11.0\", \"num_updates\": }\n"
	    "[2025-01-10 14:03:58][train_inner][INFO] - {\"epoch\": 1, \"loss\": \"10.1\", \"num_updates\": \"300\"}\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("broken.log", text, &o, RM_E_INPUT, &rep, &err, &db);
	assert_non_null(strstr(err.msg, "broken.log:3: the object after the prefix does not parse"));
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 0);
	o.skip_bad = 1;
	import_text("broken.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 2);
	assert_int_equal(rep.r[0].skipped, 1);
	assert_int_equal(rep.r[0].bad_line[0], 3);
	assert_int_equal(rep.r[0].not_records, 1);
	rm_import_report_release(&rep);
}

/* A diverged loss is written nan or inf: kept as such (the store tells NaN
 * from missing), not dropped and not a bad line. */
static void diverged_losses_are_kept(void **state)
{
	static const char text[] = "step 1 loss 2.5\nstep 2 loss nan\nstep 3 loss inf\nstep 4 loss -Infinity, lr 0.1\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("nan.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 4);
	rm_import_report_release(&rep);
	assert_int_equal(tu_q_int(db, "SELECT nan_mask FROM steps WHERE step = 2"), 1); /* NaN, not missing */
	assert_int_equal(tu_q_int(db, "SELECT loss IS NULL FROM steps WHERE step = 2"), 1);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") > 1e308);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 4") < -1e308);
	assert_true(tu_q_dbl(db, "SELECT lr FROM steps WHERE step = 4") == 0.1);
}

/* The line driver reads records spread over lines: a header, then
 * indented name=value lines; a repr's indented lines are not taken. */
static void continuation_lines(void **state)
{
	static const char text[] = "12:00:01 INFO [step=5/100,epoch=1]\n"
	                           "    train/CrossEntropyLoss=3.5\n"
	                           "    throughput/total_tokens=1,000\n"
	                           "12:00:02 INFO Model(\n"
	                           "    (embed): Embedding(8, 4, padding_idx=1)\n"
	                           ")\n"
	                           "12:00:03 INFO [step=6/100,epoch=1]\n"
	                           "    train/CrossEntropyLoss=3.25\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("multi.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 2);
	assert_int_equal(rep.r[0].lines, 8);
	assert_int_equal(rep.r[0].not_records, 3); /* the repr's three lines */
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || '=' || loss || '@' || epoch, ',') FROM steps"),
	                    "5=3.5@1.0,6=3.25@1.0");
}

/* Ranks and epochs: each rank's line keeps its composition on its own
 * batch row; a counter that starts over each epoch is counted on; a
 * running average (tot_loss[...]) is not the batch's; torchrun's
 * "[rank3]:" names the rank too; an eval setting is no eval. */
static void ranks_and_epochs(void **state)
{
	const char *db;
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	char path[4096];
	snprintf(path, sizeof(path), "%s/logs/icefall.log", RUNMON_TEST_DATA);
	db = tu_tmp_path("ice.db");
	assert_int_equal(imp(db, &o, path, &rep, &err), 0);
	assert_int_equal(rep.r[0].epoch_restarts, 1);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || '/' || rank || ':' || n || ',' || tokens || ','"
	                                  " || mean_len, ';') FROM batches"),
	                    "0/0:52,20766,1599.0;0/1:119,20813,701.5;50/0:56,20751,1484.0;50/1:169,20605,489.5;"
	                    "100/0:60,20000,1200.0;100/1:110,20100,700.0");
	/* each rank's loss kept; the step's is their mean, as DDP reports it
	 * (the batch's, never tot_loss's 1.1 or 1.2); no rank replaced another */
	assert_string_equal(
	    tu_q_text(db, "SELECT group_concat(step || '/' || rank || ':' || loss, ';') FROM rank_losses"),
	    "0/0:3.591;0/1:3.543;50/0:0.6012;50/1:0.5993;100/0:0.41;100/1:0.39");
	assert_true(fabs(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 50") - 0.60025) < 1e-12);
	assert_true(fabs(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 100") - 0.4) < 1e-12);
	assert_true(tu_q_dbl(db, "SELECT epoch FROM steps WHERE step = 100") == 2);
	assert_int_equal(rep.r[0].replaced, 0);
	assert_int_equal(rep.r[0].rank_losses, 6);
	assert_int_equal(rep.r[0].ranks, 2);
	rm_import_report_release(&rep);
	/* again: the same rows, the same means */
	assert_int_equal(imp(db, &o, path, &rep, &err), 0);
	assert_int_equal(rep.r[0].new_steps, 0);
	rm_import_report_release(&rep);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM rank_losses"), 6);
	assert_true(fabs(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 50") - 0.60025) < 1e-12);

	static const char torchrun[] = "[rank1]: step=5 loss=2.0 tokens=100 n=4\n"
	                               "[rank0]: step=5 loss=2.2 tokens=120 n=5\n"
	                               "[rank1]: step=6 loss=nan tokens=100 n=4\n"
	                               "[rank0]: step=6 loss=2.1 tokens=120 n=5\n"
	                               "[rank0]: step=7 loss=1.9\n"
	                               "eval_interval = 250\n";
	import_text("torchrun.log", torchrun, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].evals, 0);
	assert_int_equal(rep.r[0].steps, 3);
	assert_int_equal(rep.r[0].ranks, 2);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(rank || ':' || tokens, ',') FROM batches"),
	                    "0:120,1:100,0:120,1:100");
	assert_true(fabs(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 5") - 2.1) < 1e-12);
	/* a rank whose loss is not finite makes the step's NaN */
	assert_int_equal(tu_q_int(db, "SELECT loss IS NULL AND nan_mask & 1 FROM steps WHERE step = 6"), 1);
	assert_int_equal(tu_q_int(db, "SELECT loss IS NULL FROM rank_losses WHERE step = 6 AND rank = 1"), 1);
	/* one rank alone: its loss is the step's */
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 7") == 1.9);
}

/* Many rank losses: the steps' means are taken in windows as the import
 * goes (memory flat), and every step gets the mean of all its ranks, also
 * when one rank's lines run a few steps behind the other's across a window. */
static void rank_means_in_windows(void **state)
{
	enum { STEPS = 34000, LAG = 3 };
	size_t cap = (size_t)STEPS * 2 * 48, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	for (int t = 0; t < STEPS + LAG; t++) {
		if (t < STEPS)
			len += (size_t)snprintf(text + len, cap - len, "[rank0]: step=%d loss=%d.5 tokens=100\n", t,
			                        t % 7);
		if (t >= LAG)
			len += (size_t)snprintf(text + len, cap - len, "[rank1]: step=%d loss=%d.25 tokens=90\n",
			                        t - LAG, (t - LAG) % 5);
	}
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("manyranks.log", text, &o, 0, &rep, &err, &db);
	free(text);
	assert_int_equal(rep.r[0].steps, STEPS);
	assert_int_equal(rep.r[0].rank_losses, 2 * STEPS);
	rm_import_report_release(&rep);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps s WHERE s.loss IS NULL OR abs(s.loss - (SELECT"
	                              " avg(loss) FROM rank_losses r WHERE r.run_id = s.run_id AND r.step = s.step))"
	                              " > 1e-12"),
	                 0);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 33000") ==
	            ((33000 % 7 + 0.5) + (33000 % 5 + 0.25)) / 2);
}

/* Training and validation loss on one line: the training loss is the
 * step's, the validation loss an eval of the same step, whether some lines
 * carry the training loss alone or every line carries both; nanoGPT's
 * eval-line "train loss" (an estimate) stays an eval beside its "loss". */
static void train_and_val_on_one_line(void **state)
{
	static const char some[] = "epoch 1, step 10, training loss = 4.90\n"
	                           "epoch 1, step 20, training loss = 4.70, validation loss = 4.95\n"
	                           "epoch 1, step 30, training loss = 4.60\n";
	static const char every[] = "epoch 1, step 100: train loss 3.90, val loss 4.10\n"
	                            "epoch 2, step 200: train loss 3.70, val loss 4.00\n";
	static const char nanogpt[] = "epoch 1, step 0: train loss 10.90, val loss 10.95\n"
	                              "iter 0: loss 10.88, time 20ms\n"
	                              "iter 1: loss 10.50, time 20ms\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("some.log", some, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 3);
	assert_int_equal(rep.r[0].new_steps, 3);
	assert_string_equal(rep.r[0].loss_key, "training_loss");
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 20") == 4.7);
	assert_true(tu_q_dbl(db, "SELECT epoch FROM steps WHERE step = 20") == 1); /* the line's epoch kept */
	assert_string_equal(tu_q_text(db, "SELECT group_concat(key || '@' || step || '=' || value) FROM evals"),
	                    "validation_loss@20=4.95");
	import_text("every.log", every, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 2);
	assert_int_equal(rep.r[0].first_step, 100);
	assert_int_equal(rep.r[0].last_step, 200);
	assert_string_equal(rep.r[0].loss_key, "train_loss");
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 200") == 3.7);
	/* the epoch goes with the promoted loss (the fixed-order test reads it) */
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || ':' || epoch) FROM steps"), "100:1.0,200:2.0");
	assert_string_equal(tu_q_text(db, "SELECT group_concat(DISTINCT key) FROM evals"), "val_loss");
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM evals WHERE key = 'val_loss'"), 2);
	import_text("nanogpt-order.log", nanogpt, &o, 0, &rep, &err, &db);
	assert_string_equal(rep.r[0].loss_key, "loss");
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 0") == 10.88);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'eval_train_loss' AND step = 0") == 10.9);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(DISTINCT key) FROM evals"), "eval_train_loss,val_loss");
}

/* OpenNMT-py 3.x's "bsz: src/tgt/sents" is a batch's means: the sentences
 * are its size, the target tokens its tokens; "bsz: 12/30" stays N of M,
 * and four parts are no triple. */
static void opennmt_bsz_triple(void **state)
{
	static const char text[] = "Step 100/1000; xent: 7.07; bsz: 1772/1813/63; 9331/9162 tok/s; 47 sec;\n"
	                           "Step 200/1000; xent: 6.42; bsz: 1790/1820/64.4; 9412/9203 tok/s; 94 sec;\n"
	                           "Step 300/1000; xent: 6.02; bsz: 12/30; 9412/9203 tok/s; 141 sec;\n"
	                           "Step 400/1000; xent: 6.01; bsz: 1/2/3/4; 9412/9203 tok/s; 188 sec;\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	(void)state;
	import_text("onmt3.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].batches, 4);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || ':' || n || ':' || ifnull(tokens, '-'), ' ')"
	                                  " FROM batches"),
	                    "100:63:1813 200:64:1820 300:12:4325 400:1:4325");
}

/* A log whose loss is under a name runmon does not know is no success:
 * exit 2 naming the keys it read, and nothing kept. */
static void no_loss_key_names_the_keys(void **state)
{
	static const char text[] = "banner: training starts\n"
	                           "step=10 acc=0.51 wer=12.1 tokens=100\n"
	                           "step=20 acc=0.55 wer=10.4 tokens=120\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("noloss.log", text, &o, RM_E_INPUT, &rep, &err, &db);
	rm_import_report_release(&rep);
	assert_non_null(strstr(err.msg, "noloss.log: no loss key found among the keys read (acc, wer)"));
	assert_non_null(strstr(err.msg, "--loss-key"));
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 0);
	/* named, it imports */
	o.loss_key = "wer";
	import_text("noloss.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 2);
	assert_null(rep.r[0].inferred);
	rm_import_report_release(&rep);
	/* a perplexity is the loss where nothing else is, and the report says
	 * it was inferred */
	o.loss_key = NULL;
	import_text("ppl.log", "step=10 acc=0.51 ppl=12.1\nstep=20 acc=0.55 ppl=10.4\n", &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 2);
	assert_string_equal(rep.r[0].loss_key, "ppl");
	assert_non_null(strstr(rep.r[0].inferred, "loss 'ppl'"));
	rm_import_report_release(&rep);
}

/* HF Trainer dicts carry no step: records are numbered, times
 * --log-every; an eval dict takes the step of the record before it. */
static void steps_from_log_every(void **state)
{
	static const char text[] = "{'loss': 0.70, 'learning_rate': 5e-05, 'epoch': 0.01}\n"
	                           "{'loss': 0.61, 'learning_rate': 4.9e-05, 'epoch': 0.02}\n"
	                           "{'eval_loss': 0.55, 'eval_runtime': 3.2, 'epoch': 0.02}\n"
	                           "{'loss': 0.52, 'learning_rate': 4.8e-05, 'epoch': 0.03, 'grad_norm': nan}\n"
	                           "{'train_runtime': 100.1, 'train_loss': 0.6, 'epoch': 0.03}\n";
	struct rm_import_opts o = {.log_every = 50};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("hf-every.log", text, &o, 0, &rep, &err, &db);
	assert_string_equal(rm_format_name(rep.r[0].format), "log");
	assert_int_equal(rep.r[0].synthetic_steps, 4); /* numbered by --log-every, as asked */
	assert_int_equal(rep.r[0].first_step, 50);
	assert_int_equal(rep.r[0].last_step, 150);
	rm_import_report_release(&rep);
	assert_int_equal(tu_q_int(db, "SELECT step FROM evals WHERE key = 'eval_loss'"), 100);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 3);
	/* without it, nor a bar, nor a config: the record count, the last
	 * resort, said as such (issue 64.1) */
	struct rm_import_opts none = {0};
	import_text("hf-none.log", text, &none, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].synthetic_steps, 1);
	assert_int_equal(rep.r[0].last_step, 3);
	rm_import_report_release(&rep);
}

/* Issue 63: a line of a counter and one number ("12:\t0.583", WaveGlow's
 * print) is a step and an unnamed number, the loss only where nothing in
 * the file is named one; two numbers with no counter, or a counter and a
 * whole number, are no such line; and a table's time column ("00:41") is
 * a number of its row. */
static void counter_and_number(void **state)
{
	(void)state;
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("bare.log",
	            "output directory checkpoints\nEpoch: 0\n0:\t0.583\nGradient overflow. Skipping step\n1:\t-0.21\n"
	            "2 -0.5e-1\n0.5 0.6\n3:\t7\n",
	            &o, 0, &rep, &err, &db);
	assert_string_equal(rm_format_name(rep.r[0].format), "log");
	assert_string_equal(rep.r[0].loss_key, RM_GUESS_UNNAMED);
	assert_int_equal(rep.r[0].steps, 3);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 1") == -0.21);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 2") == -0.05);
	rm_import_report_release(&rep);
	/* a loss named anywhere is the loss; the bare lines' numbers are not */
	import_text("named.log", "step 1 loss 0.9\n7:\t0.25\nstep 2 loss 0.8\nstep 3 loss 0.7\n", &o, 0, &rep, &err,
	            &db);
	assert_string_equal(rep.r[0].loss_key, "loss");
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps WHERE loss = 0.25"), 0);
	rm_import_report_release(&rep);
	import_text(
	    "table.log",
	    "epoch     train_loss  valid_loss  accuracy  time\n0         1.183467    0.402818    0.871448  00:41\n"
	    "1         0.655180    0.317225    0.896482  01:02:03\n",
	    &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 2);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps ORDER BY step LIMIT 1") == 1.183467);
	rm_import_report_release(&rep);
}

/* Detection: a Python dict first line is a log, not trainer_state.json;
 * CSV and JSON lines stay what they were; a file of banners alone is
 * nothing to import. */
static void detection(void **state)
{
	static const struct {
		const char *name, *text, *format;
	} cases[] = {
	    {"dict.log", "{'loss': 0.7, 'epoch': 0.1}\n", "log"},
	    {"plain.csv", "step,loss\n1,0.5\n2,0.4\n", "csv"},
	    {"tabs.tsv", "step\tloss\n1\t0.5\n2\t0.4\n", "csv"},
	    {"rows.jsonl", "{\"step\": 1, \"loss\": 0.5}\n", "jsonl"},
	    {"pipe.log", "| epoch 001 | loss 7.060 | wpb 3966 | bsz 128 | num_updates 100\n", "log"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rm_import_opts o = {0};
		struct rm_import_report rep;
		struct rm_err err;
		const char *db;
		import_text(cases[i].name, cases[i].text, &o, 0, &rep, &err, &db);
		assert_string_equal(rm_format_name(rep.r[0].format), cases[i].format);
		rm_import_report_release(&rep);
	}
	struct rm_import_opts o = {.format = RM_FMT_LOG};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("banner.log", "Starting training\n==========\nusing fused AdamW: True\n", &o, RM_E_INPUT, &rep,
	            &err, &db);
	assert_non_null(strstr(err.msg, "nothing to import"));
	assert_non_null(strstr(err.msg, "--loss-key KEY, or spell a record's line with --pattern"));
}

/* Progress bars and tracebacks are no records, even when a frame's
 * postfix holds a loss. */
static void not_records(void **state)
{
	static const char text[] =
	    "Epoch 0:  45%|####5     | 450/1000 [00:30<00:36, 15.0it/s, v_num=0, train_loss=2.31]\n"
	    "Traceback (most recent call last):\n"
	    "  File \"train.py\", line 10, in <module>\n"
	    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
	    "step=10 loss=2.2\n";
	struct rm_import_opts o = {.format = RM_FMT_LOG};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("bars.log", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 1);
	assert_int_equal(rep.r[0].not_records, 4);
	assert_int_equal(rep.r[0].first_step, 10);
	rm_import_report_release(&rep);
}

/* A log being written is followed like a sidecar: a line without its
 * newline waits. */
static void follow(void **state)
{
	const char *db = tu_tmp_path("follow.db"), *path = tu_tmp_path("follow.log");
	struct rm_store *st;
	struct rm_import_report rep;
	struct rm_tail_pos pos;
	struct rm_err err;
	struct rm_import_opts o = {.run_name = "f", .format = RM_FMT_LOG};
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("banner\nstep=1 loss=2.0\nstep=2 loss=1.9\nstep=3 lo", fp);
	fclose(fp);
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_import_tail(st, &o, path, &rep, &pos, &err), 0);
	assert_int_equal(rep.r[0].steps, 2);
	rm_import_report_release(&rep);
	fp = fopen(path, "a");
	fputs("ss=1.8\n", fp);
	fclose(fp);
	assert_int_equal(rm_import_tail(st, &o, path, &rep, &pos, &err), 0);
	assert_int_equal(rep.r[0].steps, 1);
	rm_import_report_release(&rep);
	rm_store_close(st);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") == 1.8);
}

/* --pattern: named fields read anywhere in a line; other lines hold no
 * record; a field named val_ makes its line an evaluation. Bad patterns
 * are told apart. */
static void pattern(void **state)
{
	static const char text[] = "[12:00:01] epoch 1 | it 10 | L=2.50 | toks 16,384 | seqs 32\n"
	                           "some banner\n"
	                           "[12:00:02] epoch 1 | it 20 | L=2.40 | toks 15,000 | seqs 30\n"
	                           "[12:00:03] epoch 1 | it 30 | L=2.30| toks 15,500 | seqs 31\n";
	struct rm_import_opts o = {.format = RM_FMT_LOG, .pattern = "it {step} | L={loss} | toks {tokens} | seqs {n}"};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("pattern.txt", text, &o, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].steps, 3); /* "L=2.30|": blanks are optional */
	assert_int_equal(rep.r[0].batches, 3);
	assert_int_equal(rep.r[0].not_records, 1);
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 20") == 2.4);
	assert_int_equal(tu_q_int(db, "SELECT tokens FROM batches WHERE step = 10"), 16384);
	assert_int_equal(tu_q_int(db, "SELECT n FROM batches WHERE step = 30"), 31);

	static const char evals[] = "it 1 loss 2.0\nit 2 loss 1.9\nEVAL it 2 vl 2.2\n";
	struct rm_import_opts oe = {.format = RM_FMT_LOG, .pattern = "EVAL it {step} vl {val_loss}"};
	import_text("pattern-eval.txt", evals, &oe, 0, &rep, &err, &db);
	assert_int_equal(rep.r[0].evals, 1);
	assert_int_equal(rep.r[0].steps, 0);
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'val_loss' AND step = 2") == 2.2);

	static const struct {
		const char *pattern, *why;
	} bad[] = {
	    {"step {step", "a '{' without its '}'"},
	    {"step step} {loss}", "a '}' without its '{'"},
	    {"step loss", "no {field}"},
	    {"{step}{loss}", "need text between them"},
	    {"step {a b}", "is not a field name"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char why[128];
		assert_int_equal(rm_log_pattern_check(bad[i].pattern, why, sizeof(why)), -1);
		assert_non_null(strstr(why, bad[i].why));
	}
	char why[128];
	assert_int_equal(rm_log_pattern_check("step:{step}/{total} loss:{loss}", why, sizeof(why)), 0);
}

/* Python dicts as custom loops print them: a tensor's or numpy scalar's
 * repr is its number; inf and nan as Python spells them. */
static void python_dicts(void **state)
{
	static const char text[] =
	    "{'loss': tensor(2.3456, device='cuda:0', grad_fn=<NllLossBackward0>), 'step': 10}\n"
	    "{'loss': np.float64(1.5), 'step': 11, 'x': inf, 'y': -inf, 'z': [inf,inf,inf,inf,inf,inf,inf,inf,inf]}\n"
	    "{'loss': nan, 'step': 12, 'note': \"it's\", 'ok': True, 'none': None}\n";
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *db;
	import_text("dicts.log", text, &o, 0, &rep, &err, &db);
	assert_string_equal(rm_format_name(rep.r[0].format), "log");
	assert_int_equal(rep.r[0].steps, 3);
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 10") == 2.3456);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 11") == 1.5);
	assert_int_equal(tu_q_int(db, "SELECT loss IS NULL AND nan_mask != 0 FROM steps WHERE step = 12"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(dialects),
	    cmocka_unit_test(dialect_values),
	    cmocka_unit_test(numbers),
	    cmocka_unit_test(broken_object),
	    cmocka_unit_test(diverged_losses_are_kept),
	    cmocka_unit_test(continuation_lines),
	    cmocka_unit_test(ranks_and_epochs),
	    cmocka_unit_test(no_loss_key_names_the_keys),
	    cmocka_unit_test(train_and_val_on_one_line),
	    cmocka_unit_test(opennmt_bsz_triple),
	    cmocka_unit_test(rank_means_in_windows),
	    cmocka_unit_test(steps_from_log_every),
	    cmocka_unit_test(detection),
	    cmocka_unit_test(counter_and_number),
	    cmocka_unit_test(not_records),
	    cmocka_unit_test(follow),
	    cmocka_unit_test(pattern),
	    cmocka_unit_test(python_dicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
