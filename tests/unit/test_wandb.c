/*
 * test_wandb.c - the HTTP retry arithmetic and the W&B client's pure parts:
 * Retry-After, backoff, key lookup (env and netrc by host:port), UI URLs,
 * timestamps and history responses.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/net.h"
#include "runmon/parse.h"
#include "runmon/wandb.h"
#include "testutil.h"

static void backoff_schedule(void **state)
{
	struct rm_http_opts o;
	rm_http_opts_default(&o);
	o.backoff_min = 2;
	o.backoff_max = 60;
	assert_float_equal(rm_http_backoff(&o, 1, -1, 0), 2, 1e-12);
	assert_float_equal(rm_http_backoff(&o, 2, -1, 0), 4, 1e-12);
	assert_float_equal(rm_http_backoff(&o, 3, -1, 0.999), 8 * 1.24975, 1e-9);
	assert_float_equal(rm_http_backoff(&o, 10, -1, 0), 60, 1e-12);    /* capped */
	assert_float_equal(rm_http_backoff(&o, 1, 7.5, 0.5), 7.5, 1e-12); /* the server's word wins */
	assert_float_equal(rm_http_backoff(&o, 1, 1e9, 0), 600, 1e-12);   /* but not forever */
}

static void retry_after_forms(void **state)
{
	assert_float_equal(rm_http_parse_retry_after(" 3", 0), 3, 1e-12);
	assert_float_equal(rm_http_parse_retry_after("0.25\r", 0), 0.25, 1e-12);
	/* RFC 1123 date, 90 s after "now". */
	assert_float_equal(rm_http_parse_retry_after("Wed, 01 May 2024 10:01:30 GMT", 1714557600.0), 90, 1e-9);
	assert_true(rm_http_parse_retry_after("soon", 0) < 0);
}

static void key_from_env_then_netrc(void **state)
{
	const char text[] = "machine api.wandb.ai\n  login user\n  password aaaa\n"
	                    "machine 127.0.0.1:8080 login user password bbbb\n"
	                    "default login x password cccc\n";
	const char *netrc = tu_write_file("netrc", text, strlen(text));
	setenv("NETRC", netrc, 1);
	setenv("WANDB_API_KEY", "envkey", 1);
	char *k = rm_wandb_find_key("https://api.wandb.ai");
	assert_string_equal(k, "envkey");
	free(k);
	unsetenv("WANDB_API_KEY");
	k = rm_wandb_find_key("https://api.wandb.ai/");
	assert_string_equal(k, "aaaa");
	free(k);
	k = rm_wandb_find_key("http://127.0.0.1:8080");
	assert_string_equal(k, "bbbb");
	free(k);
	k = rm_wandb_find_key("http://other.example:9");
	assert_string_equal(k, "cccc"); /* the default entry */
	free(k);
	/* a login spelled "password" is the login's value, not the keyword
	 * (issue 67): the key is the token after the real keyword */
	const char odd[] = "machine api.wandb.ai login password password realkey\n";
	setenv("NETRC", tu_write_file("netrc2", odd, strlen(odd)), 1);
	k = rm_wandb_find_key("https://api.wandb.ai");
	assert_string_equal(k, "realkey");
	free(k);
	setenv("NETRC", "/nonexistent/netrc", 1);
	assert_null(rm_wandb_find_key("https://api.wandb.ai"));
	unsetenv("NETRC");
}

static void run_urls(void **state)
{
	char *u = rm_run_page_url("https://api.wandb.ai", "acme", "llm", "ab12cd34");
	assert_string_equal(u, "https://wandb.ai/acme/llm/runs/ab12cd34");
	free(u);
	u = rm_run_page_url("https://api.corp.example/", "e", "p", "r");
	assert_string_equal(u, "https://app.corp.example/e/p/runs/r");
	free(u);
	u = rm_run_page_url("http://10.0.0.5:8080", "e", "p", "r");
	assert_string_equal(u, "http://10.0.0.5:8080/e/p/runs/r");
	free(u);
	/* userinfo goes; an '@' in the path or the query is no userinfo (issue 67) */
	u = rm_url_without_userinfo("https://me:s3cr3t@host.example:8443/x");
	assert_string_equal(u, "https://host.example:8443/x");
	free(u);
	u = rm_url_without_userinfo("https://host.example/u/a@b?to=c@d");
	assert_string_equal(u, "https://host.example/u/a@b?to=c@d");
	free(u);
	u = rm_url_without_userinfo("https://me@host.example?q=a@b");
	assert_string_equal(u, "https://host.example?q=a@b");
	free(u);
}

static void timestamps(void **state)
{
	assert_float_equal(rm_wandb_parse_time("2024-05-01T10:00:00"), 1714557600.0, 1e-6);
	assert_float_equal(rm_wandb_parse_time("2024-05-01T10:00:00Z"), 1714557600.0, 1e-6);
	assert_float_equal(rm_wandb_parse_time("2021-02-16T23:44:10.058524"), 1613519050.058524, 1e-5);
	assert_float_equal(rm_wandb_parse_time("yesterday"), 0, 0);
}

static void history_responses(void **state)
{
	char why[256], text[256];
	struct rm_row outer;
	const struct rm_field *h;
	rm_row_init(&outer);
	const char ok[] =
	    "{\"data\":{\"project\":{\"run\":{\"history\":[\"{\\\"_step\\\":0,\\\"loss\\\":NaN}\", \"{}\"]}}}}";
	assert_int_equal(rm_wandb_parse_history(ok, strlen(ok), &outer, &h, why, sizeof(why)), RM_OK);
	assert_non_null(h);
	assert_int_equal(h->arr_len, 2);
	const struct rm_span *sp = &outer.spans[h->arr_off];
	assert_true(sp->escaped);
	size_t n = rm_json_unescape(sp->p, sp->len, text);
	text[n] = '\0';
	assert_string_equal(text, "{\"_step\":0,\"loss\":NaN}");
	assert_false(outer.spans[h->arr_off + 1].escaped);
	const char empty[] = "{\"data\":{\"project\":{\"run\":{\"history\":[]}}}}";
	assert_int_equal(rm_wandb_parse_history(empty, strlen(empty), &outer, &h, why, sizeof(why)), RM_OK);
	assert_null(h);
	const char cut[] = "{\"data\":{\"project\":{\"run\":{\"history\":[\"{\\\"_st";
	assert_int_equal(rm_wandb_parse_history(cut, strlen(cut), &outer, &h, why, sizeof(why)), RM_E_NET);
	const char gql[] = "{\"errors\":[{\"message\":\"nope\"}],\"data\":null}";
	assert_int_equal(rm_wandb_parse_history(gql, strlen(gql), &outer, &h, why, sizeof(why)), RM_E_INPUT);
	assert_string_equal(why, "W&B API error: nope");
	const char none[] = "{\"data\":{\"project\":{\"run\":null}}}";
	assert_int_equal(rm_wandb_parse_history(none, strlen(none), &outer, &h, why, sizeof(why)), RM_E_NOTFOUND);
	rm_row_release(&outer);
	char *body = rm_wandb_history_body("acme", "llm", "ab12cd34", 1000, 2000);
	json_t *b = json_loads(body, 0, NULL);
	json_t *v = json_object_get(b, "variables");
	assert_int_equal(json_integer_value(json_object_get(v, "minStep")), 1000);
	assert_int_equal(json_integer_value(json_object_get(v, "maxStep")), 2000);
	assert_int_equal(json_integer_value(json_object_get(v, "pageSize")), 1000);
	assert_non_null(strstr(json_string_value(json_object_get(b, "query")), "query HistoryPage($entity: String!"));
	json_decref(b);
	free(body);
}

static void run_paths(void **state)
{
	struct rm_run_path p;
	assert_int_equal(rm_run_path_parse("acme/llm/ab12", &p), 1);
	assert_string_equal(p.entity, "acme");
	assert_string_equal(p.project, "llm");
	assert_string_equal(p.id, "ab12");
	rm_run_path_release(&p);
	const char *bad[] = {"local-run", "acme/llm", "acme/llm/", "/llm/ab", "acme//ab", "a/b/c/d"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(rm_run_path_parse(bad[i], &p), 0);
		assert_null(p.buf);
	}
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(run_paths),         cmocka_unit_test(backoff_schedule),
	    cmocka_unit_test(retry_after_forms), cmocka_unit_test(key_from_env_then_netrc),
	    cmocka_unit_test(run_urls),          cmocka_unit_test(timestamps),
	    cmocka_unit_test(history_responses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
