/*
 * deliver.c - alerts on their way out: the channels (stdout, Alertmanager
 * webhooks, Slack, W&B), dedup against the alert log (a channel gets an
 * alert again only at a higher severity), a flood guard per channel, and
 * delivery with the HTTP client's bounded retries. What it has to say
 * goes through the voice the command set.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/alert.h"

static void url_hash(const char *kind, const char *url, char *out, size_t n)
{
	const char *names[] = {"url"}, *values[] = {url};
	char fp[17];
	rm_alert_fingerprint(names, values, 1, fp);
	snprintf(out, n, "%s:%s", kind, fp);
}

/* "webhook https://hooks.example.com/…": where a channel goes, for
 * messages. A webhook's path and query often are its secret (Slack's
 * are), and userinfo is a password: only the scheme, host and port show. */
static void url_shown(const char *kind, const char *url, char *out, size_t n)
{
	const char *host = strstr(url, "://");
	host = host ? host + 3 : url;
	int scheme = (int)(host - url);
	/* userinfo ends at the last '@'; a '/', '?' or '#' before it is a
	 * password its writer did not escape (or an '@' in the path): then
	 * where the host begins is not sure, and none of it shows */
	const char *at = strrchr(host, '@');
	if (at && strcspn(host, "/?#") < (size_t)(at - host)) {
		snprintf(out, n, "%s %.*s\xe2\x80\xa6", kind, scheme, url);
		return;
	}
	if (at)
		host = at + 1;
	size_t end = strcspn(host, "/?#");
	snprintf(out, n, "%s %.*s%.*s%s", kind, scheme, url, (int)end, host, host[end] ? "/\xe2\x80\xa6" : "");
}

/* A flood guard: has the channel had max messages in the last hour? */
static int flooded(const struct rm_channel *ch, int max)
{
	if (ch->nsent < max)
		return 0;
	return rm_monotonic() - ch->sent_at[(ch->nsent - max) % RM_ALERT_RATE_MAX] < 3600;
}

/* Logs what a channel's outbox did, on the tick's thread (the store is
 * this thread's). */
static void log_done(struct rm_alerter *wt, struct rm_channel *ch, struct rm_outbox_msg *done)
{
	struct rm_err err;
	for (struct rm_outbox_msg *m = done; m; m = m->next) {
		if (!m->ok) {
			rm_say(&wt->voice, RM_SAY_WARNING, "alert delivery to %s failed, will retry next tick: %s",
			       ch->shown, m->why);
			wt->failed = 1;
		}
		for (int i = 0; i < m->n; i++)
			if (rm_store_log_alert(wt->st, m->fp[i], ch->name, rm_severity_name(m->sev[i]),
			                       m->ok ? "sent" : "failed", &err))
				rm_say(&wt->voice, RM_SAY_WARNING, "%s", err.msg);
	}
	rm_outbox_msg_free(done);
}

/* Queues a webhook's or Slack's message; 0, or -1 (said) when it must wait. */
static int queue(struct rm_alerter *wt, struct rm_channel *ch, const struct rm_alert *fresh, int nf)
{
	struct rm_outbox_msg *m = rm_xcalloc(1, sizeof(*m));
	m->body = ch->kind == RM_CHANNEL_WEBHOOK ? rm_alert_webhook_body(fresh, nf, "runmon")
	                                         : rm_alert_slack_body(fresh, nf);
	m->n = nf;
	for (int i = 0; i < nf; i++) {
		memcpy(m->fp[i], fresh[i].fingerprint, sizeof(m->fp[i]));
		m->sev[i] = fresh[i].severity;
	}
	if (!rm_outbox_put(ch->box, m)) {
		ch->full = 0;
		return 0;
	}
	rm_outbox_msg_free(m);
	if (!ch->full)
		rm_say(&wt->voice, RM_SAY_WARNING,
		       "%d alert messages to %s are waiting on it; the rest wait their turn", RM_OUTBOX_MAX, ch->shown);
	ch->full = 1;
	return -1;
}

/* Sends the alerts that a channel has not had yet (at this severity). */
void rm_alerter_send(struct rm_alerter *wt, const struct rm_alert *al, int n)
{
	for (int c = 0; c < wt->nch; c++) {
		struct rm_channel *ch = &wt->ch[c];
		struct rm_alert fresh[8];
		int nf = 0;
		struct rm_err err;
		if (ch->box)
			log_done(wt, ch, rm_outbox_done(ch->box));
		for (int i = 0; i < n && nf < 8; i++) {
			int sent;
			if (ch->box && rm_outbox_holds(ch->box, al[i].fingerprint, al[i].severity))
				continue; /* on its way: never twice */
			if (rm_store_alert_sent(wt->st, al[i].fingerprint, ch->name, &sent, &err)) {
				rm_say(&wt->voice, RM_SAY_WARNING, "%s", err.msg);
				continue;
			}
			if ((int)al[i].severity > sent)
				fresh[nf++] = al[i];
		}
		if (!nf)
			continue;
		if (ch->kind != RM_CHANNEL_STDOUT && flooded(ch, wt->max_per_hour)) {
			/* Not logged as sent: they go out when the hour allows. */
			if (!ch->held)
				rm_say(&wt->voice, RM_SAY_WARNING,
				       "more than %d alert messages in an hour to %s; holding the rest",
				       wt->max_per_hour, ch->shown);
			ch->held = 1;
			continue;
		}
		ch->held = 0;
		if (ch->box) {
			if (!queue(wt, ch, fresh, nf))
				ch->sent_at[ch->nsent++ % RM_ALERT_RATE_MAX] = rm_monotonic();
			continue;
		}
		ch->sent_at[ch->nsent++ % RM_ALERT_RATE_MAX] = rm_monotonic();
		int ok = 1;
		char why[512] = "";
		if (ch->kind == RM_CHANNEL_STDOUT) {
			for (int i = 0; i < nf; i++) {
				char line[1200];
				rm_alert_line(&fresh[i], line, sizeof(line));
				rm_say(&wt->voice, RM_SAY_LINE, "%s", line);
			}
		} else if (ch->kind == RM_CHANNEL_WANDB) {
			for (int i = 0; i < nf && ok; i++) {
				if (!fresh[i].entity[0])
					continue; /* a local run has no W&B page to alert on */
				char *body = rm_alert_wandb_body(&fresh[i]);
				ok = rm_alert_post(ch->http, body, 1, why, sizeof(why)) == 0;
				free(body);
			}
		} else {
			char *body = ch->kind == RM_CHANNEL_WEBHOOK ? rm_alert_webhook_body(fresh, nf, "runmon")
			                                            : rm_alert_slack_body(fresh, nf);
			ok = rm_alert_post(ch->http, body, 0, why, sizeof(why)) == 0;
			free(body);
		}
		if (!ok) {
			rm_say(&wt->voice, RM_SAY_WARNING, "alert delivery to %s failed, will retry next tick: %s",
			       ch->shown, why);
			wt->failed = 1;
		}
		for (int i = 0; i < nf; i++)
			if (rm_store_log_alert(wt->st, fresh[i].fingerprint, ch->name,
			                       rm_severity_name(fresh[i].severity), ok ? "sent" : "failed", &err))
				rm_say(&wt->voice, RM_SAY_WARNING, "%s", err.msg);
	}
}

void rm_alerter_init(struct rm_alerter *a, struct rm_store *st, int max_per_hour, const struct rm_voice *voice)
{
	memset(a, 0, sizeof(*a));
	a->st = st;
	a->max_per_hour = max_per_hour;
	if (voice)
		a->voice = *voice;
}

void rm_alerter_add(struct rm_alerter *a, enum rm_channel_kind kind, const char *url, const struct rm_http_opts *ho,
                    struct rm_http *borrowed)
{
	struct rm_channel *ch = &a->ch[a->nch++];
	memset(ch, 0, sizeof(*ch));
	ch->kind = kind;
	switch (kind) {
	case RM_CHANNEL_STDOUT:
		snprintf(ch->name, sizeof(ch->name), "stdout");
		snprintf(ch->shown, sizeof(ch->shown), "stdout");
		break;
	case RM_CHANNEL_WANDB:
		snprintf(ch->name, sizeof(ch->name), "wandb");
		snprintf(ch->shown, sizeof(ch->shown), "W&B alerts");
		ch->http = borrowed;
		break;
	case RM_CHANNEL_WEBHOOK:
	case RM_CHANNEL_SLACK: {
		struct rm_http_opts o = *ho;
		url_hash(kind == RM_CHANNEL_WEBHOOK ? "webhook" : "slack", url, ch->name, sizeof(ch->name));
		url_shown(kind == RM_CHANNEL_WEBHOOK ? "webhook" : "Slack webhook", url, ch->shown, sizeof(ch->shown));
		o.url = url;
		ch->http = rm_http_new(&o);
		ch->own_http = 1;
		rm_http_set_cancel(ch->http, a->cancel);
		ch->box = rm_outbox_start(ch->http); /* NULL: delivered on the tick, as before */
		break;
	}
	}
}

void rm_alerter_set_cancel(struct rm_alerter *a, volatile sig_atomic_t *flag)
{
	a->cancel = flag;
	for (int i = 0; i < a->nch; i++)
		if (a->ch[i].own_http)
			rm_http_set_cancel(a->ch[i].http, flag);
}

void rm_alerter_release(struct rm_alerter *a)
{
	for (int i = 0; i < a->nch; i++) {
		struct rm_channel *ch = &a->ch[i];
		if (ch->box)
			log_done(a, ch, rm_outbox_stop(ch->box));
		if (ch->own_http)
			rm_http_free(ch->http);
	}
	a->nch = 0;
}
