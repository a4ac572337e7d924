/*
 * runurl.c - a run's page in the W&B UI, the one place its address is
 * made (reports, alerts and diagnose link to it).
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/model.h"

char *rm_url_without_userinfo(const char *url)
{
	/* userinfo ends at the authority's last '@'; the authority ends at the
	 * first '/', '?' or '#' (RFC 3986 3.2): an '@' in the path or the query
	 * ("https://host/u/a@b") is no userinfo's */
	const char *auth = strstr(url, "://"), *at = NULL;
	if (auth) {
		size_t end = strcspn(auth + 3, "/?#");
		for (const char *p = auth + 3; p < auth + 3 + end; p++)
			if (*p == '@')
				at = p;
	}
	if (!at)
		return rm_xstrdup(url);
	return rm_xasprintf("%.*s%s", (int)(auth + 3 - url), url, at + 1);
}

char *rm_run_page_url(const char *base, const char *entity, const char *project, const char *run)
{
	const char *app = getenv("WANDB_APP_URL");
	char *ui, *base_url = rm_url_without_userinfo(base); /* a link never carries a password */
	if (app && *app) {
		ui = rm_url_without_userinfo(app);
	} else {
		const char *p = strstr(base_url, "://api.wandb.");
		const char *q = strstr(base_url, "://api.");
		if (p)
			ui = rm_xasprintf("%.*s://%s", (int)(p - base_url), base_url, p + 7);
		else if (q)
			ui = rm_xasprintf("%.*s://app.%s", (int)(q - base_url), base_url, q + 7);
		else
			ui = rm_xstrdup(base_url);
	}
	size_t n = strlen(ui);
	while (n && ui[n - 1] == '/')
		ui[--n] = '\0';
	char *url = rm_xasprintf("%s/%s/%s/runs/%s", ui, entity, project, run);
	free(ui);
	free(base_url);
	return url;
}

char *rm_run_page(const struct rm_run_info *info)
{
	if (!info->entity || !*info->entity)
		return NULL;
	const char *base = getenv("WANDB_BASE_URL");
	return rm_run_page_url(base && *base ? base : RM_WANDB_DEFAULT_URL, info->entity, info->project, info->name);
}
