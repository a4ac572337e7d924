/*
 * epoch_series.h - a simulated run over epochs for the fixed-data-order
 * tests and rates (test_detect.c, bench/detect_rates.c).
 */
#ifndef RUNMON_TEST_EPOCH_SERIES_H
#define RUNMON_TEST_EPOCH_SERIES_H

#include <stdint.h>

#include "runmon/detect.h"

/* Five epochs of 2000 batches, every 10th batch's loss logged: each
 * batch's own difficulty (sd `hard`; the batches at in-epoch steps 760 and
 * 1300 much harder), the same order every epoch when fixed, else shuffled;
 * with wave, a schedule that restarts every epoch (the same smooth shape
 * each epoch, no order in it). Diagnosed into d. */
void epoch_series_diagnose(int fixed, double hard, int wave, uint64_t seed, struct rm_diagnosis *d);

#endif
