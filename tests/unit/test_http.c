/*
 * test_http.c - the HTTP client's retry policy (W&B's, wandb-api.md
 * section 4): the backoff's growth, cap and jitter, Retry-After parsing
 * and its cap, and against a scripted server on loopback which statuses
 * are retried (5xx but 501, 408, 429) and which fail at once (4xx, 501).
 */
#include <math.h>
#include <microhttpd.h>
#include <pthread.h>
#include <string.h>

#include "runmon/net.h"
#include "testutil.h"

static void backoff_doubles_to_its_cap(void **state)
{
	struct rm_http_opts o;
	rm_http_opts_default(&o);
	o.backoff_min = 2;
	o.backoff_max = 60;
	assert_float_equal(rm_http_backoff(&o, 1, -1, 0), 2, 1e-9);
	assert_float_equal(rm_http_backoff(&o, 2, -1, 0), 4, 1e-9);
	assert_float_equal(rm_http_backoff(&o, 4, -1, 0), 16, 1e-9);
	assert_float_equal(rm_http_backoff(&o, 10, -1, 0), 60, 1e-9);
	/* jitter: up to a quarter more, never less */
	double d = rm_http_backoff(&o, 2, -1, 0.999);
	assert_true(d > 4 && d <= 5);
}

static void retry_after_wins_and_is_capped(void **state)
{
	struct rm_http_opts o;
	rm_http_opts_default(&o);
	assert_float_equal(rm_http_backoff(&o, 1, 7, 0.5), 7, 1e-9);
	assert_float_equal(rm_http_backoff(&o, 1, 0, 0.5), 0, 1e-9);
	assert_float_equal(rm_http_backoff(&o, 1, 1e9, 0.5), 600, 1e-9);
}

static void retry_after_values_parse(void **state)
{
	double now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example */
	assert_float_equal(rm_http_parse_retry_after("120", now), 120, 1e-9);
	assert_float_equal(rm_http_parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now), 10, 1e-6);
	assert_true(rm_http_parse_retry_after("soon", now) < 0);
	assert_true(rm_http_parse_retry_after("", now) < 0);
}

/* ---- a scripted server ------------------------------------------------------ */

static struct {
	pthread_mutex_t mu;
	int script[16]; /* statuses to answer, in order; the last repeats */
	int n, served;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **ptr)
{
	static int first;
	if (*ptr == NULL) { /* the headers: wait for the body */
		*ptr = &first;
		return MHD_YES;
	}
	if (*size) { /* the body, taken whole */
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&srv.mu);
	int i = srv.served < srv.n ? srv.served : srv.n - 1, status = srv.script[i];
	srv.served++;
	pthread_mutex_unlock(&srv.mu);
	const char *body = status == 200 ? "{\"ok\": true}" : "{\"error\": \"no\"}";
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	if (status == 429)
		MHD_add_response_header(r, "Retry-After", "0");
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Daemon *daemon_;
static char url[64];

static int start(void **state)
{
	daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, answer, NULL,
	                           MHD_OPTION_END);
	assert_non_null(daemon_);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/graphql", (unsigned)info->port);
	return 0;
}

static int stop(void **state)
{
	MHD_stop_daemon(daemon_);
	return 0;
}

/* POSTs once through the client with the server answering script; returns
 * the finished request (its attempts, status, ok, code). */
static struct rm_http_req post(const int *script, int n, int retry_max)
{
	pthread_mutex_lock(&srv.mu);
	memcpy(srv.script, script, (size_t)n * sizeof(int));
	srv.n = n;
	srv.served = 0;
	pthread_mutex_unlock(&srv.mu);
	struct rm_http_opts o;
	rm_http_opts_default(&o);
	o.url = url;
	o.retry_max = retry_max;
	o.backoff_min = 0.001;
	o.backoff_max = 0.01;
	o.timeout_ms = 5000;
	struct rm_http *h = rm_http_new(&o);
	struct rm_http_req req = {.body = "{}", .body_len = 2};
	rm_http_start(h, &req);
	struct rm_http_req *done = rm_http_wait(h);
	assert_ptr_equal(done, &req);
	struct rm_http_req out = req;
	out.resp = NULL;
	rm_http_req_release(&req);
	rm_http_free(h);
	return out;
}

static void server_errors_are_retried(void **state)
{
	int script[] = {500, 502, 503, 504, 200};
	struct rm_http_req r = post(script, 5, 8);
	assert_true(r.ok);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.attempts, 5);
	assert_int_equal(srv.served, 5);
}

static void timeouts_and_quota_are_retried(void **state)
{
	int script[] = {408, 429, 200};
	struct rm_http_req r = post(script, 3, 8);
	assert_true(r.ok);
	assert_int_equal(r.attempts, 3);
}

/* A request the server will never accept fails at once: one attempt. */
static void client_errors_fail_at_once(void **state)
{
	static const int statuses[] = {400, 401, 403, 409, 410, 413, 422, 501};
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		int script[] = {statuses[i], 200};
		struct rm_http_req r = post(script, 2, 8);
		assert_false(r.ok);
		assert_int_equal(r.status, statuses[i]);
		assert_int_equal(r.attempts, 1);
		assert_int_equal(r.code, RM_E_NET);
	}
	int script[] = {404};
	struct rm_http_req r = post(script, 1, 8);
	assert_int_equal(r.attempts, 1);
	assert_int_equal(r.code, RM_E_NOTFOUND);
}

/* retry_max bounds the attempts: the first and retry_max more. */
static void retries_are_bounded(void **state)
{
	int script[] = {503};
	struct rm_http_req r = post(script, 1, 3);
	assert_false(r.ok);
	assert_int_equal(r.attempts, 4);
	assert_int_equal(srv.served, 4);
	assert_non_null(strstr(r.err, "503"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(backoff_doubles_to_its_cap),
	    cmocka_unit_test(retry_after_wins_and_is_capped),
	    cmocka_unit_test(retry_after_values_parse),
	    cmocka_unit_test_setup_teardown(server_errors_are_retried, start, stop),
	    cmocka_unit_test_setup_teardown(timeouts_and_quota_are_retried, start, stop),
	    cmocka_unit_test_setup_teardown(client_errors_fail_at_once, start, stop),
	    cmocka_unit_test_setup_teardown(retries_are_bounded, start, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
