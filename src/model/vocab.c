/*
 * vocab.c - the words runmon uses for what it finds: severities,
 * hypotheses and mixture shapes. Detectors, renderers, alerts and metrics
 * all take them from here, so one name never has two spellings.
 */
#include <string.h>

#include "runmon/model.h"

static const char *const sev_names[] = {"none", "info", "warn", "critical"};

const char *rm_severity_name(enum rm_severity s)
{
	return sev_names[s];
}

/* One word per state a reader sees (issue 66.3): below warn there is
 * nothing to act on, whether a finding was worth a note (info) or none
 * was made, and both read "ok". Machine outputs keep the level itself
 * (rm_severity_name), which --fail-on info can still select. */
const char *rm_verdict_word(enum rm_severity s)
{
	return s < RM_SEV_WARN ? "ok" : sev_names[s];
}

int rm_severity_parse(const char *name, enum rm_severity *out)
{
	for (int i = RM_SEV_INFO; i <= RM_SEV_CRITICAL; i++)
		if (!strcmp(name, sev_names[i])) {
			*out = (enum rm_severity)i;
			return 0;
		}
	return -1;
}

static const char *const hyp_names[RM_H_COUNT] = {
    [RM_H_HOMOGENEOUS] = "homogeneous batching",
    [RM_H_BUCKET_RESETS] = "resets specific to some buckets",
    [RM_H_CHECKPOINT] = "checkpoint interference",
    [RM_H_EPOCH] = "epoch boundaries",
    [RM_H_LR] = "learning-rate changes",
    [RM_H_INSTABILITY] = "genuine instability",
    [RM_H_PERIODIC] = "a periodic event",
    [RM_H_FIXED_ORDER] = "a fixed data order",
    [RM_H_DIVERGENCE] = "divergence",
};

const char *rm_hypothesis_name(enum rm_hypothesis h)
{
	return hyp_names[h];
}

const char *rm_hypothesis_id(enum rm_hypothesis h)
{
	static const char *const ids[RM_H_COUNT] = {
	    [RM_H_HOMOGENEOUS] = "homogeneous_batching",
	    [RM_H_BUCKET_RESETS] = "bucket_resets",
	    [RM_H_CHECKPOINT] = "checkpoint",
	    [RM_H_EPOCH] = "epoch",
	    [RM_H_LR] = "lr_changes",
	    [RM_H_INSTABILITY] = "instability",
	    [RM_H_PERIODIC] = "periodic",
	    [RM_H_FIXED_ORDER] = "fixed_order",
	    [RM_H_DIVERGENCE] = "divergence",
	};
	return ids[h];
}

static const char *const shape_names[] = {"none", "random", "lockstep", "rank_streaks", "drift"};

const char *rm_mix_shape_name(enum rm_mix_shape s)
{
	return shape_names[s];
}

const char *rm_hypothesis_alertname(enum rm_hypothesis h)
{
	static const char *const names[RM_H_COUNT] = {
	    [RM_H_HOMOGENEOUS] = "RunmonHomogeneousBatching",
	    [RM_H_BUCKET_RESETS] = "RunmonBucketResets",
	    [RM_H_CHECKPOINT] = "RunmonCheckpointResets",
	    [RM_H_EPOCH] = "RunmonEpochResets",
	    [RM_H_LR] = "RunmonScheduleResets",
	    [RM_H_INSTABILITY] = "RunmonInstability",
	    [RM_H_PERIODIC] = "RunmonPeriodicResets",
	    [RM_H_FIXED_ORDER] = "RunmonFixedDataOrder",
	    [RM_H_DIVERGENCE] = "RunmonDivergence",
	};
	return names[h];
}
