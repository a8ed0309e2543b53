/*
 * review: the review item's state machine and the queue's pure policy.
 * Everything here takes its inputs as arguments (no I/O, no clock), so
 * tests/test_review.c drives every transition with literals.
 */
#include "review.h"

#include <errno.h>
#include <string.h>

#include "util.h"

static const char *const review_state_names[REVIEW_STATE__COUNT] = {
	[REVIEW_PENDING] = "pending",	[REVIEW_CLAIMED] = "claimed",
	[REVIEW_APPROVED] = "approved", [REVIEW_CORRECTED] = "corrected",
	[REVIEW_REJECTED] = "rejected",
};

static const char *const review_action_names[REVIEW_ACTION__COUNT] = {
	[REVIEW_CLAIM] = "claim",
	[REVIEW_APPROVE] = "approve",
	[REVIEW_CORRECT] = "correct",
	[REVIEW_REJECT] = "reject",
};

const char *
review_state_name(enum review_state s)
{
	if ((int)s < 0 || s >= REVIEW_STATE__COUNT)
		return NULL;
	return review_state_names[s];
}

int
review_state_parse(const char *name, enum review_state *out)
{
	int i;

	for (i = 0; name != NULL && i < REVIEW_STATE__COUNT; i++) {
		if (strcmp(name, review_state_names[i]) == 0) {
			*out = (enum review_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *
review_action_name(enum review_action a)
{
	if ((int)a < 0 || a >= REVIEW_ACTION__COUNT)
		return NULL;
	return review_action_names[a];
}

int
review_action_parse(const char *name, enum review_action *out)
{
	int i;

	for (i = 0; name != NULL && i < REVIEW_ACTION__COUNT; i++) {
		if (strcmp(name, review_action_names[i]) == 0) {
			*out = (enum review_action)i;
			return 0;
		}
	}
	return -EINVAL;
}

int
review_priority_parse(const char *name, enum priority *out)
{
	int i;

	for (i = 0; name != NULL && i < PRIORITY__COUNT; i++) {
		if (strcmp(name, priority_name((enum priority)i)) == 0) {
			*out = (enum priority)i;
			return 0;
		}
	}
	return -EINVAL;
}

int
review_state_decided(enum review_state s)
{
	return s == REVIEW_APPROVED || s == REVIEW_CORRECTED || s == REVIEW_REJECTED;
}

int
review_transition(enum review_state from, const char *holder, const char *actor,
		  enum review_action act, enum review_state *to)
{
	static const enum review_state verdict_state[REVIEW_ACTION__COUNT] = {
		[REVIEW_CLAIM] = REVIEW_CLAIMED,
		[REVIEW_APPROVE] = REVIEW_APPROVED,
		[REVIEW_CORRECT] = REVIEW_CORRECTED,
		[REVIEW_REJECT] = REVIEW_REJECTED,
	};
	int r = 0;

	if ((int)act < 0 || act >= REVIEW_ACTION__COUNT || (int)from < 0 ||
	    from >= REVIEW_STATE__COUNT) {
		r = -EINVAL;
		goto out;
	}
	if (review_state_decided(from)) {
		r = REVIEW_Q_E_DECIDED;
		goto out;
	}
	if (from == REVIEW_CLAIMED &&
	    (holder == NULL || actor == NULL || strcmp(holder, actor) != 0)) {
		r = REVIEW_Q_E_CLAIMED;
		goto out;
	}
	*to = verdict_state[act];
out:
	return r;
}

enum priority
review_priority_for(const struct review_cfg *rv, const char *reason)
{
	if (reason != NULL && strcmp(reason, "manual") == 0)
		return PRIORITY_HIGH;
	return rv->priority;
}

int64_t
review_due_at(const struct review_cfg *rv, enum priority prio, int64_t created_ms)
{
	if ((int)prio < 0 || prio >= PRIORITY__COUNT)
		prio = PRIORITY_MEDIUM;
	return created_ms + (int64_t)rv->sla_s[prio] * 1000;
}

int
review_is_overdue(enum review_state s, int64_t due_ms, int64_t now_ms)
{
	return (s == REVIEW_PENDING || s == REVIEW_CLAIMED) && due_ms <= now_ms;
}

void
review_counts_move(struct review_counts *c, enum priority p, enum review_state from,
		   enum review_state to)
{
	if ((int)p < 0 || p >= PRIORITY__COUNT || from == to)
		return;
	if (from == REVIEW_PENDING)
		c->pending[p]--;
	else if (from == REVIEW_CLAIMED)
		c->claimed[p]--;
	if (to == REVIEW_PENDING)
		c->pending[p]++;
	else if (to == REVIEW_CLAIMED)
		c->claimed[p]++;
	if ((from == REVIEW_PENDING || from == REVIEW_CLAIMED) && review_state_decided(to))
		c->open--;
	else if ((from == REVIEW_STATE__COUNT || review_state_decided(from)) &&
		 (to == REVIEW_PENDING || to == REVIEW_CLAIMED))
		c->open++;
}

void
review_overflow_plan(const struct review_overflow_in *in, struct review_overflow_plan *out)
{
	int over = in->open > in->capacity;

	out->act = REVIEW_OVERFLOW_NONE;
	out->accept = 0;
	if (in->forced_by_us) {
		/* released below capacity, or at once when the policy is no longer force_l2 */
		if (in->open < in->capacity || in->policy != OVERFLOW_FORCE_L2)
			out->act = REVIEW_OVERFLOW_RELEASE_L2;
		return;
	}
	if (!over)
		return;
	if (in->policy == OVERFLOW_AUTO_ACCEPT_LOW) {
		out->accept = MIN(in->open - in->capacity, in->low_pending);
		out->act = out->accept > 0 ? REVIEW_OVERFLOW_ACCEPT_LOW : REVIEW_OVERFLOW_KEEP;
		return;
	}
	out->act = in->forced_by_op ? REVIEW_OVERFLOW_KEEP : REVIEW_OVERFLOW_FORCE_L2;
}
