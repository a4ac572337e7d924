/*
 * test_truth.c - the truth matrix (tests/tools/truth.h): every cell of
 * orders x ranks x logging interval x composition recorded x events,
 * simulated with independent shapes (resets that jump and decay, interval
 * means, ranks, micro-batches, loss-only runs, NaN tails), diagnosed and
 * held to the truth each run was made with: the causes it must name, none
 * it was not made with, resets told to the bucket they begin in. Seeds
 * 1..2 here; tests/bench/detect_rates SEEDS truth gives the rates over
 * many (docs/decisions.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"
#include "truth.h"

#define SEEDS 2

static void every_cell_is_right(void **state)
{
	(void)state;
	struct truth_cell *cells;
	size_t n = truth_cells(&cells), wrong = 0, runs = 0;
	for (size_t i = 0; i < n; i++)
		for (uint64_t seed = 1; seed <= SEEDS; seed++) {
			struct truth_outcome out;
			truth_run(&cells[i], seed, &out);
			runs++;
			if (out.missed || out.false_alarm || out.wrong_bucket) {
				char name[96];
				truth_cell_name(&cells[i], name, sizeof(name));
				print_error("%s seed %llu: %s\n", name, (unsigned long long)seed, out.why);
				wrong++;
			}
		}
	free(cells);
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
	for (size_t i = 0; i < n; i++) {
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
