/*
 * test_truth.c - the truth matrix (tests/tools/truth.h): every cell of
 * orders x ranks x logging interval x composition recorded x events,
 * simulated with independent shapes (resets that jump and decay, interval
 * means, ranks, micro-batches, loss-only runs, NaN tails), diagnosed and
 * held to the truth each run was made with: the causes it must name, none
 * it was not made with, resets told to the bucket they begin in; and the
 * second generator's runs (real samples re-batched, tests/tools/replay.h)
 * beside the simulator's. A run whose failures truth_known_gap() explains
 * is printed, not counted. Seeds 1..2 here; tests/bench/detect_rates SEEDS truth gives the rates over
 * many (docs/decisions.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"
#include "replay.h"
#include "truth.h"

#define SEEDS 2

static void every_cell_is_right(void **state)
{
	(void)state;
	struct truth_cell *cells;
	size_t n = truth_cells(&cells), wrong = 0, runs = 0, gaps = 0;
	for (size_t i = 0; i < n; i++)
		for (uint64_t seed = 1; seed <= SEEDS; seed++) {
			struct truth_outcome out;
			truth_run(&cells[i], seed, &out);
			runs++;
			char name[96];
			truth_cell_name(&cells[i], name, sizeof(name));
			const char *gap = out.missed || out.false_alarm ? truth_known_gap(&cells[i], &out) : NULL;
			if (gap) {
				print_message("known gap: %s seed %llu: %s (%s)\n", name, (unsigned long long)seed,
				              out.why, gap);
				gaps++;
			} else if (out.missed || out.false_alarm || out.wrong_bucket) {
				print_error("%s seed %llu: %s\n", name, (unsigned long long)seed, out.why);
				wrong++;
			}
		}
	free(cells);
	print_message("%zu runs, %zu wrong, %zu in known gaps\n", runs, wrong, gaps);
	assert_true(runs > 600);
	assert_int_equal(wrong, 0);
}

/* The matrix holds what the issue asks of it: each order, each rank shape,
 * both intervals, the three kinds of composition, every event. */
static void the_matrix_covers_the_shapes(void **state)
{
	(void)state;
	struct truth_cell *cells;
	size_t n = truth_cells(&cells);
	int order[RM_SIM_COUNT] = {0}, ranks[RK_COUNT] = {0}, comp[COMP_COUNT] = {0}, ev[EV_COUNT] = {0}, k10 = 0;
	int replayed[RP_COUNT][COMP_COUNT] = {{0}};
	for (size_t i = 0; i < n; i++) {
		if (cells[i].replay) { /* the second generator: every order, each composition */
			replayed[cells[i].replay - 1][cells[i].comp]++;
			continue;
		}
		order[cells[i].strategy]++;
		ranks[cells[i].ranks]++;
		comp[cells[i].comp]++;
		ev[cells[i].event]++;
		k10 += cells[i].interval == 10;
	}
	for (int i = 0; i < RM_SIM_COUNT; i++)
		assert_true(order[i] > 0);
	for (int i = 0; i < RK_COUNT; i++)
		assert_true(ranks[i] > 0);
	for (int i = 0; i < COMP_COUNT; i++)
		assert_true(comp[i] > 0);
	for (int i = 0; i < EV_COUNT; i++)
		assert_true(ev[i] > 0);
	assert_true(k10 > 0 && (size_t)k10 < n);
	for (int o = 0; o < RP_COUNT; o++)
		for (int k = 0; k < COMP_COUNT; k++)
			assert_int_equal(replayed[o][k], 2); /* logged every step and every 10 */
	free(cells);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_matrix_covers_the_shapes),
	    cmocka_unit_test(every_cell_is_right),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
