/*
 * runsplit.c - runs appended to one file. `python train.py >> train.log`
 * twice leaves two trainings in one log, each counting from its start; a
 * resume goes back only to its checkpoint. Merged, the second run would
 * overwrite the first step by step and the curve would be neither.
 */
#include <string.h>

#include "runmon/sink.h"

void rm_run_split_reset(struct rm_run_split *s)
{
	memset(s, 0, sizeof(*s));
}

/* The step of a training row starts another run when it falls back to
 * within one logging interval of the start (the least rise seen), after
 * the run went at least four intervals on (three, when it falls to the
 * very step the run began at), or at least one with lines that held no
 * record between (a traceback, the next start-up's banner);
 * or below the run's first step to within an interval of zero (a run
 * that logs from step 5120 every 5120 steps, then one that logs from
 * 1280). Two writers of one file lag each other by an interval or three,
 * with no line between: never four, never below the first step. Only the
 * first rank seen is followed: ranks print a step each. */
int rm_run_split_check(struct rm_run_split *s, const struct rm_record *rec, uint64_t line)
{
	if (!rec->has_step_row || rec->is_summary || rec->is_eval)
		return 0;
	int64_t rank = rec->has_rank ? rec->b.rank : -1, step = rec->step;
	struct rm_run_split first = {.first = step, .prev = step, .rank = rank, .rows = 1, .has = 1, .line = line};
	if (!s->has) {
		*s = first;
		return 0;
	}
	if (rank != s->rank)
		return 0;
	int apart = line > s->line + 1;
	/* back to the very step the run began at: three intervals on suffice */
	int64_t on = apart ? 1 : step == s->first ? 3 : 4;
	int begins =
	    s->rows >= 2 && s->gap > 0 &&
	    ((step < s->first && step <= s->gap) || (step <= s->first + s->gap && s->prev >= s->first + on * s->gap));
	/* a start-up between, and the counter at its origin again: a run that
	 * logged once (a crash after its first epoch), then the next */
	begins |= apart && step <= 1 && step <= s->first && s->rows == 1;
	if (begins) {
		*s = first;
		return 1;
	}
	if (step > s->prev && (!s->gap || step - s->prev < s->gap))
		s->gap = step - s->prev;
	s->prev = step;
	s->line = line;
	s->rows++;
	return 0;
}
