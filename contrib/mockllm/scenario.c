/*
 * The scenario: load and validate the timeline, apply its due steps; and
 * the timer thread that resumes suspended connections.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "mockllm.h"

/* Apply due scenario steps; caller holds mock.lock (dropped inside). */
void
scenario_step(int64_t now)
{
	const cJSON *entry, *bes, *b;
	char *cause = NULL;
	int64_t at;

	while (mock.scen_idx < mock.scen_n) {
		entry = cJSON_GetArrayItem(mock.timeline, mock.scen_idx);
		at = (int64_t)(cJSON_GetObjectItemCaseSensitive(entry, "at_s")->valuedouble *
			       1000.0);
		if (mock.scen_base_ms + at > now)
			break;
		mock.scen_idx++;
		bes = cJSON_GetObjectItemCaseSensitive(entry, "backends");
		pthread_mutex_unlock(&mock.lock);
		cJSON_ArrayForEach(b, bes)
		{
			if (backend_set(b->string, b, &cause) != 0) {
				fprintf(stderr,
					"fusebox-mockllm: scenario: "
					"%s: %s\n",
					b->string, cause);
				free(cause);
				cause = NULL;
			}
		}
		log_line("scenario: step %d (at %.1f s)", mock.scen_idx - 1, (double)at / 1000.0);
		pthread_mutex_lock(&mock.lock);
		if (mock.scen_idx == mock.scen_n && mock.scen_loop) {
			mock.scen_idx = 0;
			mock.scen_base_ms += mock.scen_period_ms;
		}
	}
}

static int64_t
scenario_next_ms(void)
{
	const cJSON *entry, *at;
	int64_t next = WAIT_FOREVER;

	if (mock.scen_idx < mock.scen_n) {
		entry = cJSON_GetArrayItem(mock.timeline, mock.scen_idx);
		at = cJSON_GetObjectItemCaseSensitive(entry, "at_s");
		next = mock.scen_base_ms + (int64_t)(at->valuedouble * 1000.0);
	}
	return next;
}

static void
resume_add(struct MHD_Connection ***v, size_t *n, size_t *cap, struct MHD_Connection *c)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*n)++] = c;
}

/*
 * The timer thread: resume due connections and the ones whose client went
 * away, apply scenario steps, sleep in epoll until the next of those.
 */
void *
timer_main(void *arg)
{
	struct MHD_Connection **resume = NULL;
	struct epoll_event evs[256];
	size_t nresume = 0, cresume = 0, i;
	int64_t now, wake;
	struct req *r;
	uint64_t junk;
	int nev = 0, k, timeout;

	pthread_mutex_lock(&mock.lock);
	while (!mock.stopping) {
		nresume = 0;
		for (k = 0; k < nev; k++) {
			r = evs[k].data.ptr;
			if (r == NULL) {
				if (read(mock.wakefd, &junk, sizeof junk) < 0 && errno != EAGAIN)
					break;
				continue;
			}
			if (!r->suspended)
				continue;
			r->gone = 1;
			resume_add(&resume, &nresume, &cresume, req_unsuspend(r));
		}
		nev = 0;
		now = mono_ms();
		while (mock.heap_len > 0 && mock.heap[0]->due_ms <= now) {
			resume_add(&resume, &nresume, &cresume, req_unsuspend(mock.heap[0]));
		}
		if (nresume > 0) {
			pthread_mutex_unlock(&mock.lock);
			for (i = 0; i < nresume; i++)
				MHD_resume_connection(resume[i]);
			pthread_mutex_lock(&mock.lock);
		}
		scenario_step(now);
		if (mock.stopping)
			break;
		wake = scenario_next_ms();
		if (mock.heap_len > 0 && mock.heap[0]->due_ms < wake)
			wake = mock.heap[0]->due_ms;
		if (wake == WAIT_FOREVER)
			timeout = -1;
		else if (wake - now > INT_MAX)
			timeout = INT_MAX;
		else
			timeout = wake > now ? (int)(wake - now) : 0;
		pthread_mutex_unlock(&mock.lock);
		nev = epoll_wait(mock.epfd, evs, (int)(sizeof evs / sizeof evs[0]), timeout);
		if (nev < 0)
			nev = 0;
		pthread_mutex_lock(&mock.lock);
	}
	pthread_mutex_unlock(&mock.lock);
	free(resume);
	return NULL;
}

/* Load and validate the scenario; every behaviour is parsed once here. */
int
scenario_load(const char *path)
{
	const cJSON *tl, *entry, *at, *bes, *b, *loop;
	struct behave tmp, *script;
	cJSON *root = NULL;
	char *text = NULL, *cause = NULL;
	FILE *f = NULL;
	size_t n, nscript;
	double prev = 0;
	int rc = -1;

	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "fusebox-mockllm: %s: %s\n", path, strerror(errno));
		goto out;
	}
	text = xmalloc(SCENARIO_MAX + 1);
	n = fread(text, 1, SCENARIO_MAX + 1, f);
	if (n > SCENARIO_MAX) {
		fprintf(stderr, "fusebox-mockllm: %s: over %d bytes\n", path, SCENARIO_MAX);
		goto out;
	}
	root = cJSON_ParseWithLength(text, n);
	tl = cJSON_GetObjectItemCaseSensitive(root, "timeline");
	if (!cJSON_IsArray(tl) || cJSON_GetArraySize(tl) == 0) {
		fprintf(stderr,
			"fusebox-mockllm: %s: need a non-empty "
			"\"timeline\" array\n",
			path);
		goto out;
	}
	cJSON_ArrayForEach(entry, tl)
	{
		at = cJSON_GetObjectItemCaseSensitive(entry, "at_s");
		bes = cJSON_GetObjectItemCaseSensitive(entry, "backends");
		if (!cJSON_IsNumber(at) || at->valuedouble < prev || at->valuedouble > 86400.0 ||
		    !cJSON_IsObject(bes)) {
			fprintf(stderr,
				"fusebox-mockllm: %s: each timeline "
				"entry needs a non-decreasing \"at_s\" and a "
				"\"backends\" object\n",
				path);
			goto out;
		}
		prev = at->valuedouble;
		cJSON_ArrayForEach(b, bes)
		{
			if (!backend_name_valid(b->string, strlen(b->string)) ||
			    behave_parse(b, &tmp, &script, &nscript, &cause) != 0) {
				fprintf(stderr,
					"fusebox-mockllm: %s: at_s %g: "
					"%s: %s\n",
					path, prev, b->string, cause != NULL ? cause : "bad name");
				goto out;
			}
			behave_free(&tmp);
			script_free(script, nscript);
		}
	}
	loop = cJSON_GetObjectItemCaseSensitive(root, "loop");
	mock.scen_loop = cJSON_IsTrue(loop);
	mock.scen_n = cJSON_GetArraySize(tl);
	mock.scen_idx = 0;
	mock.scen_period_ms = (int64_t)(prev * 1000.0) + LOOP_PAUSE_MS;
	mock.timeline = tl;
	mock.scenario = root;
	root = NULL;
	rc = 0;
out:
	cJSON_Delete(root);
	free(cause);
	free(text);
	if (f != NULL)
		fclose(f);
	return rc;
}
