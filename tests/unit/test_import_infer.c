/*
 * test_import_infer.c - files of trainers runmon has no rules for, read
 * with no flag (tests/data/logs/quirks: one small project-written file per
 * structural quirk): the loss, the step, ranks, epochs and runs come from
 * what the file holds. Each case states the points a reader of the file
 * would count by hand, per run, and what must never become a point.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/import.h"
#include "testutil.h"

struct quirk {
	const char *file;
	const char *format;
	int runs;
	const char *steps;    /* each run's "first..last:count", ';' between runs */
	const char *loss_key; /* of the first run */
	const char *inferred; /* substring of what was inferred, or NULL */
	int ranks;            /* 0: no rank losses */
	const char *epochs;   /* group_concat of the first run's distinct epochs, or NULL */
	const char *no_point; /* SQL that must count 0 (a misread), or NULL */
	const char *other;    /* the other losses kept of the first run ("a, b"), or NULL: none */
};

/* A counter that shows its epoch's length ("[ 10/500]") composes with
 * the epoch as epoch x length + counter (issue 63): epoch 1's "[10/500]"
 * is step 510, not one logging interval after epoch 0's last row. */
static const struct quirk quirks[] = {
    /* "loss: 0.5217 (0.6103)": the window's value, not the mean in brackets;
     * "Epoch: [0]  [ 10/500]" composes; the Test and summary lines are not
     * training points */
    {"window-means.log", "log", 1, "10..520:5", "loss", NULL, 0, "0.0,1.0",
     "SELECT COUNT(*) FROM steps WHERE loss > 0.53 OR loss < 0.44", "loss_cls"},
    /* "Loss/tok 4.2 (4.9)", value-before-unit rates, "[100/2000]" after the
     * epoch's number; the Validation line is an eval */
    {"loss-per-token.log", "log", 1, "100..2200:5", "loss/tok", "loss 'loss/tok'", 0, NULL,
     "SELECT COUNT(*) FROM steps WHERE loss > 4.2 OR loss < 3.8", NULL},
    /* "Epoch[0] Batch [50]" and ppl: a perplexity stands for the loss */
    {"epoch-batch-brackets.log", "log", 1, "50..200:4", "ppl", "loss 'ppl'", 0, "0.0,1.0",
     "SELECT COUNT(*) FROM steps WHERE loss IN (34, 40)", NULL},
    /* "E=1 B=50 ppl=37.2": B counts within E (the file says so, no name) */
    {"letters.log", "log", 1, "25..300:12", "ppl", "epoch 'e'", 0, "1.0,2.0,3.0",
     "SELECT COUNT(*) FROM steps WHERE loss > 38", NULL},
    /* the step on one line, the loss on the next */
    {"step-then-loss.log", "log", 1, "10..30:3", "loss", NULL, 0, NULL, NULL, NULL},
    /* a record of four lines under a header */
    {"record-block.log", "log", 1, "100..300:3", "train/loss", NULL, 0, NULL, NULL, NULL},
    /* "0: ... 1: ..." (srun --label) glued on one line */
    {"labels-glued.log", "log", 1, "10..30:3", "loss", "rank 'tag'", 2, NULL, NULL, NULL},
    /* "[0] ... [1] ..." glued, a dangling "[0] " at the end */
    {"rank-tags-glued.log", "log", 1, "10..30:3", "loss", "rank 'tag'", 2, NULL, NULL, NULL},
    /* "[Epoch 1/10][Batch 0/300] [D loss: 0.69] [G loss: 0.71]" */
    {"gan-brackets.log", "log", 1, "0..300:4", "d_loss", "loss 'd_loss'", 0, "1.0,2.0", NULL, "g_loss"},
    /* two losses and no total: the first named like a loss, said so */
    {"act-crit.log", "log", 1, "10..30:3", "act_loss", "the first of 2", 0, NULL, NULL, "crit_loss"},
    /* a failed start-up with two points, then another, then a third */
    {"appended-runs.log", "log", 3, "0..10:2;0..50:6;0..20:3", "loss", NULL, 0, NULL, NULL, NULL},
    /* tqdm frames over one line, ANSI colours, a table header above; a
     * settings line naming loss_ota does not stop the bars counting. Each
     * value is drawn twice, first at the counter before its batch's: a
     * point per batch, at the counter it was first drawn at */
    {"tqdm-table.log", "log", 1, "0..7:8", "total", "loss 'total'", 0, "0.0,1.0",
     "SELECT COUNT(*) FROM steps WHERE loss > 0.099", NULL},
    /* timm: "Train: 0 [  50/1251 (  4%)]  Loss: 6.911 (6.92)": the share
     * done inside the counter's bracket, a mean padded "( 0.1)"; the Test
     * line is an eval, "Train: E" the epoch the counter starts over in */
    {"timm-share-done.log", "log", 1, "0..1301:5", "loss", "epoch 'train'", 0, "0.0,1.0",
     "SELECT COUNT(*) FROM steps WHERE loss < 6.8", NULL},
    /* MMEngine's "Epoch(train) [1][ 50/469]" and "Epoch(val)" lines */
    {"mmengine-epoch-train.log", "log", 1, "50..519:3", "loss", NULL, 0, "1.0,2.0",
     "SELECT COUNT(*) FROM steps WHERE loss > 2.1", "loss_cls"},
    /* Keras: "Epoch 1/2" on its own line, then the bar's frames "3/5
     * [=====>....] - ETA: .. - loss: X"; the epoch's last frame, with the
     * val_ metrics, holds its last batch's loss beside the validation's
     * val_loss (a twin): a training point like the others (issue 63) */
    {"keras-bars.log", "log", 1, "1..10:10", "loss", NULL, 0, "1.0,2.0",
     "SELECT COUNT(*) FROM steps WHERE loss > 2.08 OR loss < 1.69", NULL},
    /* Keras's loss is the mean of the epoch so far: said so; the same
     * draws printed per batch are not */
    {"running-mean-bars.log", "log", 1, "1..75:75", "loss", NULL, 0, "1.0,2.0,3.0", NULL, NULL},
    {"per-batch-bars.log", "log", 1, "1..75:75", "loss", NULL, 0, "1.0,2.0,3.0", NULL, NULL},
    /* Chainer's LogReport: a JSON array of records over many lines */
    {"chainer-log.json", "json-array", 1, "100..600:6", "main/loss", "loss 'main/loss'", 0, NULL,
     "SELECT COUNT(*) FROM steps WHERE loss > 95.1", "main/loss_ctc, main/loss_att"},
    /* YOLOv5's results.csv: space-padded, three loss columns, no total */
    {"padded-columns.csv", "csv", 1, "0..4:5", "train/box_loss", "the first of 3", 0, NULL,
     "SELECT COUNT(*) FROM steps WHERE loss > 0.051", "train/obj_loss, train/cls_loss"},
    /* two runs appended under one CSV header */
    {"appended-runs.csv", "csv", 2, "2048..6144:3;512..3072:6", "total_loss", "step 'total timesteps'", 0, NULL, NULL,
     "policy_loss, value_loss"},
    /* detectron2's metrics.json: total_loss, iteration in the middle; the
     * evaluation row holds no loss */
    {"metrics.jsonl", "jsonl", 1, "19..199:10", "total_loss", "loss 'total_loss'", 0, NULL, NULL,
     "loss_box_reg, loss_cls"},
    /* YAML, Python source, argparse, a shell trace, an eval line and a
     * summary around three records; CRLF and bytes that are not UTF-8 */
    {"dumps-crlf-latin1.log", "log", 1, "100..300:3", "loss", NULL, 0, NULL,
     "SELECT COUNT(*) FROM steps WHERE loss > 2.5 OR loss < 2.3", NULL},
};

static const char *quirk_path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/logs/quirks/%s", RUNMON_TEST_DATA, name);
	return buf;
}

/* Says what differs and counts it: every case is told, not the first. */
#define FAIL(...) (print_error(__VA_ARGS__), print_error("\n"), bad++)

static int one_quirk(const struct quirk *q)
{
	char dbname[128], want[256] = "", sql[256];
	int bad = 0;
	snprintf(dbname, sizeof(dbname), "quirk-%s.db", q->file);
	const char *db = tu_tmp_path(dbname);
	struct rm_store *st;
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	char *files[1] = {(char *)quirk_path(q->file)};
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	int rc = rm_import(st, &o, files, 1, &rep, &err);
	rm_store_close(st);
	if (rc) {
		FAIL("%s: %s", q->file, err.msg);
		return bad;
	}
	if ((int)rep.n != q->runs)
		FAIL("%s: %zu runs, want %d", q->file, rep.n, q->runs);
	for (size_t i = 0; i < rep.n; i++) {
		const struct rm_import_result *r = &rep.r[i];
		char one[64];
		snprintf(one, sizeof(one), "%s%lld..%lld:%llu", i ? ";" : "", (long long)r->first_step,
		         (long long)r->last_step, (unsigned long long)r->steps);
		strncat(want, one, sizeof(want) - strlen(want) - 1);
		if (strcmp(rm_format_name(r->format), q->format))
			FAIL("%s: read as %s, want %s", q->file, rm_format_name(r->format), q->format);
	}
	if (strcmp(want, q->steps))
		FAIL("%s: steps %s, want %s", q->file, want, q->steps);
	if (!rep.r[0].loss_key || strcmp(rep.r[0].loss_key, q->loss_key))
		FAIL("%s: loss key %s, want %s", q->file, rep.r[0].loss_key ? rep.r[0].loss_key : "(none)",
		     q->loss_key);
	if (q->inferred && (!rep.r[0].inferred || !strstr(rep.r[0].inferred, q->inferred)))
		FAIL("%s: inferred \"%s\", want \"%s\"", q->file, rep.r[0].inferred ? rep.r[0].inferred : "",
		     q->inferred);
	if (rep.r[0].ranks != q->ranks && (q->ranks || rep.r[0].rank_losses))
		FAIL("%s: %d ranks, want %d", q->file, rep.r[0].ranks, q->ranks);
	if (q->epochs) {
		snprintf(sql, sizeof(sql),
		         "SELECT group_concat(e) FROM (SELECT DISTINCT epoch AS e FROM steps WHERE run_id = %lld"
		         " ORDER BY e)",
		         (long long)rep.r[0].run_id);
		const char *got = tu_q_text(db, sql);
		if (!got || strcmp(got, q->epochs))
			FAIL("%s: epochs %s, want %s", q->file, got ? got : "(none)", q->epochs);
	}
	if (q->no_point && tu_q_int(db, q->no_point) != 0)
		FAIL("%s: a misread became a point: %s", q->file, q->no_point);
	if ((rep.r[0].running_mean < 0) != !strcmp(q->file, "running-mean-bars.log"))
		FAIL("%s: running mean %.2f", q->file, rep.r[0].running_mean);
	/* the other losses, each kept at every step the loss was */
	const char *other = rep.r[0].other_keys;
	if (q->other ? !other || strcmp(other, q->other) : other != NULL)
		FAIL("%s: other losses %s, want %s", q->file, other ? other : "(none)", q->other ? q->other : "(none)");
	snprintf(sql, sizeof(sql),
	         "SELECT COUNT(*) FROM other_losses o WHERE run_id = %lld AND NOT EXISTS (SELECT 1 FROM steps s"
	         " WHERE s.run_id = o.run_id AND s.step = o.step)",
	         (long long)rep.r[0].run_id);
	if (tu_q_int(db, sql) != 0)
		FAIL("%s: another loss at a step with no loss", q->file);
	rm_import_report_release(&rep);
	return bad;
}

static void every_quirk(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < sizeof(quirks) / sizeof(quirks[0]); i++)
		bad += one_quirk(&quirks[i]);
	assert_int_equal(bad, 0);
}

/* Runs in one file: each its own, numbered after the first, and a second
 * import of the file changes nothing. */
static void appended_runs_are_kept_apart(void **state)
{
	(void)state;
	const char *db = tu_tmp_path("appended.db");
	struct rm_import_opts o = {.run_name = "job"};
	struct rm_import_report rep;
	struct rm_err err;
	struct rm_store *st;
	char *files[1] = {(char *)quirk_path("appended-runs.log")};
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(rm_store_open(&st, db, &err), 0);
		assert_int_equal(rm_import(st, &o, files, 1, &rep, &err), 0);
		rm_store_close(st);
		assert_int_equal(rep.n, 3);
		assert_string_equal(rep.r[1].run_name, "job-2");
		assert_int_equal(rep.r[1].file_part, 2);
		assert_int_equal(rep.r[1].prev_run_step, 10);
		assert_int_equal(rep.r[2].new_steps, pass ? 0 : 3);
		rm_import_report_release(&rep);
	}
	assert_string_equal(tu_q_text(db, "SELECT group_concat(name) FROM (SELECT name FROM runs ORDER BY name)"),
	                    "job,job-2,job-3");
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 50") == 4.1);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps s JOIN runs r ON r.id = s.run_id"
	                         " WHERE r.name = 'job' AND step = 0") == 9.0);
}

/* Two writers a step or three apart are no restart; a resume to a
 * checkpoint stays in its run. */
static void resumes_and_writers_stay_one_run(void **state)
{
	(void)state;
	static const char resume[] = "step 100 loss 2.0\nstep 200 loss 1.9\nstep 300 loss 1.8\nstep 400 loss 1.7\n"
	                             "resuming from checkpoint 200\nstep 300 loss 1.75\nstep 400 loss 1.65\n";
	const char *f = tu_write_file("resume.log", resume, sizeof(resume) - 1);
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	struct rm_store *st;
	char *files[1] = {(char *)f};
	assert_int_equal(rm_store_open(&st, tu_tmp_path("resume.db"), &err), 0);
	assert_int_equal(rm_import(st, &o, files, 1, &rep, &err), 0);
	rm_store_close(st);
	assert_int_equal(rep.n, 1);
	assert_int_equal(rep.r[0].restarts, 1);
	rm_import_report_release(&rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_quirk),
	    cmocka_unit_test(appended_runs_are_kept_apart),
	    cmocka_unit_test(resumes_and_writers_stay_one_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
