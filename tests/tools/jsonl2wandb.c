/*
 * jsonl2wandb - writes a W&B history JSONL file (one row per line, bare NaN
 * allowed) as the run-<id>.wandb log the SDK would have written: a run
 * record, one history record per row with one item per leaf (nested_key,
 * as wandb-core does; --legacy: key and a whole value, as older SDKs did),
 * and an exit record. Fixtures for the tests, input for the benchmark.
 *
 * usage: jsonl2wandb [--run ID --entity E --project P --name N]
 *                    [--config KEY=JSON]... [--lines A-B] [--append]
 *                    [--legacy] [--noise K] [--exit CODE] IN.jsonl OUT.wandb
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runmon/import.h"
#include "wandb_writer.h"

struct leaves {
	struct ww_item *it;
	char **owned;
	size_t n, cap, nowned;
};

static const char *keep(struct leaves *l, char *s)
{
	l->owned = realloc(l->owned, (l->nowned + 1) * sizeof(char *));
	l->owned[l->nowned++] = s;
	return s;
}

/* The value as the SDK writes value_json: bare NaN and Infinity tokens. */
static char *value_json(json_t *v)
{
	const char *s = json_string_value(v);
	if (s && (!strcmp(s, "NaN") || !strcmp(s, "Infinity") || !strcmp(s, "-Infinity")))
		return strdup(s);
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
}

static void flatten(struct leaves *l, json_t *obj, const char **path, int depth, int legacy)
{
	const char *k;
	json_t *v;
	json_object_foreach (obj, k, v) {
		path[depth] = k;
		if (json_is_object(v) && !legacy && depth < 3) {
			flatten(l, v, path, depth + 1, legacy);
			continue;
		}
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 16;
			l->it = realloc(l->it, l->cap * sizeof(*l->it));
		}
		struct ww_item *it = &l->it[l->n++];
		memset(it, 0, sizeof(*it));
		if (legacy)
			it->key = k;
		else
			for (int i = 0; i <= depth; i++)
				it->nested[i] = path[i];
		it->value_json = keep(l, value_json(v));
	}
}

static int write_rows(struct ww *w, FILE *in, long from, long to, int legacy, long noise)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	while ((n = getline(&line, &cap, in)) > 0) {
		if (++lineno < from || (to && lineno > to))
			continue;
		size_t clen;
		char *clean = rm_json_quote_nonfinite(line, (size_t)n, &clen);
		json_error_t je;
		json_t *row = json_loadb(clean, clen, 0, &je);
		free(clean);
		if (!json_is_object(row)) {
			fprintf(stderr, "jsonl2wandb: line %ld: %s\n", lineno, je.text);
			return 1;
		}
		struct leaves l = {0};
		const char *path[4];
		flatten(&l, row, path, 0, legacy);
		json_t *st = json_object_get(row, "_step");
		struct pbuf rec = {0};
		ww_history(&rec, json_is_integer(st) ? json_integer_value(st) : -1, l.it, l.n);
		ww_record(w, rec.p, rec.n);
		pb_free(&rec);
		if (noise && lineno % noise == 0) {
			ww_output(&rec, "step done: a line the reader must skip");
			ww_record(w, rec.p, rec.n);
			pb_free(&rec);
		}
		for (size_t i = 0; i < l.nowned; i++)
			free(l.owned[i]);
		free(l.owned);
		free(l.it);
		json_decref(row);
	}
	free(line);
	return 0;
}

int main(int argc, char **argv)
{
	const char *id = "run", *entity = "", *project = "", *name = "";
	struct ww_item config[16];
	size_t nconfig = 0;
	long from = 1, to = 0, noise = 0;
	int append = 0, legacy = 0, has_exit = 0, i;
	int32_t exit_code = 0;
	for (i = 1; i + 2 < argc && argv[i][0] == '-'; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--append") || !strcmp(o, "--legacy")) {
			*(o[2] == 'a' ? &append : &legacy) = 1;
			continue;
		}
		const char *v = argv[++i];
		if (!strcmp(o, "--run"))
			id = v;
		else if (!strcmp(o, "--entity"))
			entity = v;
		else if (!strcmp(o, "--project"))
			project = v;
		else if (!strcmp(o, "--name"))
			name = v;
		else if (!strcmp(o, "--noise"))
			noise = atol(v);
		else if (!strcmp(o, "--lines"))
			sscanf(v, "%ld-%ld", &from, &to);
		else if (!strcmp(o, "--exit")) {
			has_exit = 1;
			exit_code = atoi(v);
		} else if (!strcmp(o, "--config") && strchr(v, '=') && nconfig < 16) {
			char *kv = strdup(v), *eq = strchr(kv, '=');
			*eq = '\0';
			config[nconfig++] = (struct ww_item){.key = kv, .value_json = eq + 1};
		} else {
			fprintf(stderr, "jsonl2wandb: bad option %s\n", o);
			return 2;
		}
	}
	if (i + 2 != argc) {
		fprintf(stderr, "usage: jsonl2wandb [options] IN.jsonl OUT.wandb\n");
		return 2;
	}
	FILE *in = fopen(argv[i], "r");
	struct stat sb;
	if (!in) {
		perror(argv[i]);
		return 1;
	}
	struct ww w;
	ww_init(&w, append && !stat(argv[i + 1], &sb) ? (uint64_t)sb.st_size : 0);
	struct pbuf rec = {0};
	if (!w.base) {
		ww_run(&rec, id, entity, project, name, config, nconfig);
		ww_record(&w, rec.p, rec.n);
		pb_free(&rec);
	}
	int rc = write_rows(&w, in, from, to, legacy, noise);
	fclose(in);
	if (!rc && has_exit) {
		ww_exit(&rec, exit_code);
		ww_record(&w, rec.p, rec.n);
		pb_free(&rec);
	}
	if (!rc && ww_save(&w, argv[i + 1])) {
		perror(argv[i + 1]);
		rc = 1;
	}
	ww_free(&w);
	for (size_t c = 0; c < nconfig; c++)
		free((char *)config[c].key);
	return rc;
}
