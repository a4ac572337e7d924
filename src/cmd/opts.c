/*
 * opts.c - the command tables at work: parsing a command's arguments with
 * options matched whole (getopt_long takes any unambiguous prefix, so a
 * cron line's --al breaks the day an --alert option arrives), and writing
 * --help, man pages, bash completion and the tables as JSON from them.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/common.h"

static const struct rm_opt common_opts[] = {
    {"db", 'D', "PATH", RM_ARG_PATH, "the store: an SQLite file, or a postgresql:// URI; env RUNMON_DB",
     "~/.local/share/runmon/runmon.db", NULL, 0},
    {"help", 'h', NULL, RM_ARG_NONE, "show this help", NULL, NULL, 'h'},
    {"quiet", 'q', NULL, RM_ARG_NONE, "no progress lines on standard error (as before the command)", NULL, NULL, 0},
    {0},
};

/* The options every command has: --db for those with a store, --help,
 * --quiet (taken here: no command need know it). */
const struct rm_opt *rm_cmd_common_opts(const struct rm_cmd *cmd)
{
	return cmd->no_store ? common_opts + 1 : common_opts;
}

/* ---- parsing -------------------------------------------------------------- */

void rm_optparse_init(struct rm_optparse *p, const struct rm_cmd *cmd, int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	p->i = 1;
}

static const struct rm_opt *find_long(const struct rm_cmd *cmd, const char *name, size_t n)
{
	const struct rm_opt *tabs[2] = {cmd->opts, rm_cmd_common_opts(cmd)};
	for (int t = 0; t < 2; t++)
		for (const struct rm_opt *o = tabs[t]; o->name; o++)
			if (strlen(o->name) == n && !memcmp(o->name, name, n))
				return o;
	return NULL;
}

static const struct rm_opt *find_short(const struct rm_cmd *cmd, char c)
{
	const struct rm_opt *tabs[2] = {cmd->opts, rm_cmd_common_opts(cmd)};
	for (int t = 0; t < 2; t++)
		for (const struct rm_opt *o = tabs[t]; o->name; o++)
			if (o->short_name == c)
				return o;
	return NULL;
}

/* "unknown option --js; did you mean --json?" in one line. */
static void unknown(struct rm_optparse *p, const char *given, size_t n)
{
	const char *names[128];
	size_t k = 0;
	const struct rm_opt *tabs[2] = {p->cmd->opts, rm_cmd_common_opts(p->cmd)};
	for (int t = 0; t < 2; t++)
		for (const struct rm_opt *o = tabs[t]; o->name && k < 128; o++)
			names[k++] = o->name;
	char word[64];
	snprintf(word, sizeof(word), "%.*s", (int)(n < 63 ? n : 63), given);
	const char *near = rm_nearest(word, names, k);
	if (near)
		rm_error("unknown option --%s for %s; did you mean --%s?", word, p->cmd->name, near);
	else
		rm_error("unknown option --%s for %s (runmon %s --help lists them)", word, p->cmd->name, p->cmd->name);
}

/* The positionals read so far stand together just before argv[at]; the
 * option of n words at argv[at] moves before them, so they stay together
 * and in order (getopt's permutation, without its prefixes). */
static void move_before_positionals(struct rm_optparse *p, int at, int n)
{
	char *opt[2] = {p->argv[at], n > 1 ? p->argv[at + 1] : NULL};
	memmove(p->argv + at - p->npos + n, p->argv + at - p->npos, (size_t)p->npos * sizeof(char *));
	for (int k = 0; k < n; k++)
		p->argv[at - p->npos + k] = opt[k];
}

/* A choice's value must be one of its choices: "--strategy wants sorted,
 * chunked, ...; not 'strided'; did you mean 'stride'?" in one line. */
static int bad_choice(const struct rm_opt *o, const char *value)
{
	char words[256];
	const char *list[32];
	size_t n = 0;
	char *save = NULL;
	snprintf(words, sizeof(words), "%s", o->choices);
	for (char *w = strtok_r(words, " ", &save); w && n < 32; w = strtok_r(NULL, " ", &save))
		list[n++] = w;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], value))
			return 0;
	const char *near = rm_nearest(value, list, n);
	char shown[300] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "%s%s", i ? ", " : "", list[i]);
	if (near)
		rm_error("--%s wants one of %s, not '%s'; did you mean '%s'?", o->name, shown, rm_tx(value), near);
	else
		rm_error("--%s wants one of %s, not '%s'", o->name, shown, rm_tx(value));
	return 1;
}

static int with_value(struct rm_optparse *p, const struct rm_opt *o, const char *inline_value)
{
	p->name = o->name;
	p->arg = NULL;
	if (!o->arg) {
		if (inline_value) {
			rm_error("--%s takes no value (got '%s')", o->name, inline_value);
			return RM_OPT_ERROR;
		}
		return o->key;
	}
	if (inline_value) {
		p->arg = inline_value;
	} else if (p->i < p->argc) {
		p->arg = p->argv[p->i++];
	} else {
		rm_error("--%s needs a value: %s", o->name, o->arg);
		return RM_OPT_ERROR;
	}
	if (o->kind == RM_ARG_CHOICE && o->choices && bad_choice(o, p->arg))
		return RM_OPT_ERROR;
	return o->key;
}

int rm_opt_next(struct rm_optparse *p)
{
	while (p->i < p->argc) {
		int at = p->i;
		char *a = p->argv[p->i++];
		if (!strcmp(a, "--")) { /* the rest are positionals */
			move_before_positionals(p, at, 1);
			p->npos += p->argc - p->i;
			p->i = p->argc;
			break;
		}
		if (a[0] != '-' || !a[1]) { /* "-" is standard input, a positional */
			p->npos++;
			continue;
		}
		const struct rm_opt *o;
		const char *value = NULL;
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t n = eq ? (size_t)(eq - name) : strlen(name);
			if (!(o = find_long(p->cmd, name, n))) {
				unknown(p, name, n);
				return RM_OPT_ERROR;
			}
			value = eq ? eq + 1 : NULL;
		} else {
			o = find_short(p->cmd, a[1]);
			if (!o || (a[2] && !o->arg)) {
				rm_error("unknown option %s for %s (runmon %s --help lists them)", a, p->cmd->name,
				         p->cmd->name);
				return RM_OPT_ERROR;
			}
			value = a[2] ? a + 2 : NULL;
		}
		int key = with_value(p, o, value);
		if (key != RM_OPT_ERROR)
			move_before_positionals(p, at, p->i - at);
		if (key == 'q' && o == &common_opts[2]) {
			rm_progress_set_quiet(1);
			continue;
		}
		return key;
	}
	p->ind = p->argc - p->npos;
	return -1;
}

/* ---- help ----------------------------------------------------------------- */

/* Words of text from column col on, broken before width, later lines at
 * indent. */
static void wrap_words(FILE *fp, const char *text, size_t col, size_t indent, size_t width)
{
	const char *s = text;
	int first = 1;
	while (*s) {
		while (*s == ' ')
			s++;
		size_t w = strcspn(s, " ");
		if (!w)
			break;
		if (!first && col + 1 + w > width) {
			fprintf(fp, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', fp);
			col++;
		}
		fprintf(fp, "%.*s", (int)w, s);
		col += w;
		s += w;
		first = 0;
	}
	fputc('\n', fp);
}

static void option_head(const struct rm_opt *o, char *buf, size_t n)
{
	const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
	if (o->short_name)
		snprintf(buf, n, "-%c, --%s%s%s", o->short_name, o->name, sp, arg);
	else
		snprintf(buf, n, "--%s%s%s", o->name, sp, arg);
}

static void option_help(FILE *fp, const struct rm_opt *o, size_t col)
{
	char head[96], text[1024];
	option_head(o, head, sizeof(head));
	fprintf(fp, "  %s", head);
	size_t at = 2 + strlen(head);
	if (at + 2 > col) {
		fprintf(fp, "\n%*s", (int)col, "");
	} else {
		fprintf(fp, "%*s", (int)(col - at), "");
	}
	snprintf(text, sizeof(text), "%s%s%s%s", o->help, o->dflt ? " (default: " : "", o->dflt ? o->dflt : "",
	         o->dflt ? ")" : "");
	wrap_words(fp, text, col, col, 80);
}

void rm_cmd_help_write(FILE *fp, const struct rm_cmd *cmd)
{
	const char *syn = cmd->synopsis;
	fprintf(fp, "usage: runmon %s ", cmd->name);
	for (; *syn; syn++) {
		fputc(*syn, fp);
		if (*syn == '\n')
			fprintf(fp, "       runmon %s ", cmd->name);
	}
	fprintf(fp, "\n\n%s\n\nOptions:\n", cmd->about);
	const size_t col = 24;
	for (const struct rm_opt *o = cmd->opts; o->name; o++)
		option_help(fp, o, col);
	for (const struct rm_opt *o = rm_cmd_common_opts(cmd); o->name; o++)
		option_help(fp, o, col);
	if (cmd->notes)
		fprintf(fp, "\n%s\n", cmd->notes);
	fputs("\nExamples:\n", fp);
	for (const char *const *e = cmd->examples; *e; e++)
		fprintf(fp, "  %s\n", *e);
	fputs("\nExit status: ", fp);
	wrap_words(fp, cmd->exit_status, 13, 0, 80);
}

int rm_cmd_help(const struct rm_cmd *cmd)
{
	rm_cmd_help_write(stdout, cmd);
	return RM_EXIT_OK;
}

/* ---- man pages -------------------------------------------------------------- */

/* Text for roff: a backslash doubled, a line's leading '.' or '\'' kept
 * from being read as a request. */
static void roff(FILE *fp, const char *s)
{
	int bol = 1;
	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", fp);
		if (*s == '\\')
			fputs("\\e", fp);
		else if (*s == '-')
			fputs("\\-", fp);
		else
			fputc(*s, fp);
		bol = *s == '\n';
	}
}

/* Prose: paragraphs at blank lines, an indented line kept as it is. */
static void roff_prose(FILE *fp, const char *s)
{
	fputs(".PP\n", fp);
	while (*s) {
		size_t n = strcspn(s, "\n");
		if (n == 0) {
			fputs(".PP\n", fp);
		} else {
			if (s[0] == ' ')
				fputs(".br\n", fp);
			char *line = rm_xstrndup(s, n);
			roff(fp, line);
			free(line);
			/* a word hyphenated at the line's end ("length-" then
			 * "adjusted") joins the next line without a space */
			if (s[n - 1] == '-' && s[n] == '\n' && s[n + 1] && s[n + 1] != '\n' && s[n + 1] != ' ')
				fputs("\\c", fp);
			fputc('\n', fp);
		}
		s += n + (s[n] == '\n');
	}
}

static void man_option(FILE *fp, const struct rm_opt *o)
{
	fputs(".TP\n\\fB", fp);
	if (o->short_name)
		fprintf(fp, "\\-%c\\fR, \\fB", o->short_name);
	fputs("\\-\\-", fp);
	roff(fp, o->name);
	fputs("\\fR", fp);
	if (o->arg) {
		fputs(" \\fI", fp);
		roff(fp, o->arg);
		fputs("\\fR", fp);
	}
	fputc('\n', fp);
	roff(fp, o->help);
	if (o->dflt) {
		fputs(" (default: ", fp);
		roff(fp, o->dflt);
		fputc(')', fp);
	}
	fputc('\n', fp);
}

void rm_man_write(FILE *fp, const struct rm_cmd *cmd, const struct rm_cmd_list *all, const char *version)
{
	if (!cmd) {
		fprintf(fp, ".TH RUNMON 1 \"\" \"runmon %s\" \"User Commands\"\n.SH NAME\n", version);
		fputs("runmon \\- find the loss signatures of homogeneous length\\-bucketed batching\n", fp);
		fputs(".SH SYNOPSIS\n\\fBrunmon\\fR [\\fB\\-\\-db\\fR \\fIPATH\\fR] [\\fB\\-\\-quiet\\fR] "
		      "\\fICOMMAND\\fR [\\fIARGS\\fR]\n.SH DESCRIPTION\n",
		      fp);
		roff_prose(fp, "runmon reads per-step losses (the W&B API, run files, console logs) and each "
		               "batch's bucket and lengths into one store, runs statistical detectors for the "
		               "signatures of homogeneous bucketed batching (a trimodal loss split, ladders, "
		               "same-bucket streaks, loss resets that cluster by bucket) and says what to do.");
		fputs(".SH COMMANDS\n", fp);
		for (size_t i = 0; i < all->n; i++) {
			fprintf(fp, ".TP\n\\fBrunmon\\-%s\\fR(1)\n", all->cmd[i]->name);
			roff(fp, all->cmd[i]->summary);
			fputc('\n', fp);
		}
		fputs(".SH OPTIONS\n", fp);
		man_option(fp, &common_opts[0]);
		man_option(fp, &(struct rm_opt){"quiet", 'q', NULL, RM_ARG_NONE,
		                                "no progress line on stderr (it is drawn only on a terminal)", NULL,
		                                NULL, 0});
		man_option(fp, &(struct rm_opt){"version", 'V', NULL, RM_ARG_NONE, "print the version", NULL, NULL, 0});
		fputs(".SH EXIT STATUS\n", fp);
		roff_prose(fp, "0 done or healthy, 1 findings at the failing severity, 2 usage or input error, 3 "
		               "network or server error, 4 database or file system error.");
		fputs(".SH ENVIRONMENT\n.TP\n\\fBRUNMON_DB\\fR\nthe database when \\fB\\-\\-db\\fR is not given\n"
		      ".TP\n\\fBWANDB_API_KEY\\fR, \\fBWANDB_BASE_URL\\fR\nthe W&B account and server\n"
		      ".TP\n\\fBNO_COLOR\\fR\nno colour on a terminal\n",
		      fp);
		return;
	}
	fputs(".TH RUNMON\\-", fp);
	for (const char *c = cmd->name; *c; c++)
		fputc(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c, fp);
	fprintf(fp, " 1 \"\" \"runmon %s\" \"User Commands\"\n.SH NAME\n", version);
	fprintf(fp, "runmon\\-%s \\- ", cmd->name);
	roff(fp, cmd->summary);
	fputs("\n.SH SYNOPSIS\n", fp);
	for (const char *s = cmd->synopsis; *s;) {
		size_t n = strcspn(s, "\n");
		char *line = rm_xstrndup(s, n);
		fprintf(fp, "\\fBrunmon %s\\fR ", cmd->name);
		roff(fp, line);
		fputs("\n.br\n", fp);
		free(line);
		s += n + (s[n] == '\n');
	}
	fputs(".SH DESCRIPTION\n", fp);
	roff_prose(fp, cmd->about);
	fputs(".SH OPTIONS\n", fp);
	for (const struct rm_opt *o = cmd->opts; o->name; o++)
		man_option(fp, o);
	for (const struct rm_opt *o = rm_cmd_common_opts(cmd); o->name; o++)
		man_option(fp, o);
	if (cmd->notes) {
		fputs(".SH NOTES\n", fp);
		roff_prose(fp, cmd->notes);
	}
	fputs(".SH EXAMPLES\n", fp);
	for (const char *const *e = cmd->examples; *e; e++) {
		fputs(".PP\n.nf\n", fp);
		roff(fp, *e);
		fputs("\n.fi\n", fp);
	}
	fputs(".SH EXIT STATUS\n", fp);
	roff_prose(fp, cmd->exit_status);
	fputs(".SH SEE ALSO\n\\fBrunmon\\fR(1)\n", fp);
}

/* ---- JSON ------------------------------------------------------------------- */

static const char *const kind_names[] = {"flag", "count", "step",   "duration", "when",  "date",
                                         "path", "uri",   "choice", "text",     "number"};

static json_t *opts_json(const struct rm_opt *opts)
{
	json_t *a = json_array();
	for (const struct rm_opt *o = opts; o->name; o++) {
		json_t *j = json_pack("{s:s, s:s*, s:s, s:s, s:s*}", "name", o->name, "arg", o->arg, "kind",
		                      kind_names[o->kind], "help", o->help, "default", o->dflt);
		if (o->choices)
			json_object_set_new(j, "choices", json_string(o->choices));
		if (o->short_name)
			json_object_set_new(j, "short", json_stringn(&o->short_name, 1));
		json_array_append_new(a, j);
	}
	return a;
}

int rm_tables_json(FILE *fp, const struct rm_cmd_list *all)
{
	json_t *cmds = json_array();
	for (size_t i = 0; i < all->n; i++) {
		const struct rm_cmd *c = all->cmd[i];
		json_t *ex = json_array();
		for (const char *const *e = c->examples; *e; e++)
			json_array_append_new(ex, json_string(*e));
		json_t *opts = opts_json(c->opts), *common = opts_json(rm_cmd_common_opts(c));
		json_array_extend(opts, common);
		json_decref(common);
		json_array_append_new(cmds, json_pack("{s:s, s:s, s:s, s:o, s:o, s:s}", "name", c->name, "summary",
		                                      c->summary, "synopsis", c->synopsis, "options", opts, "examples",
		                                      ex, "exit_status", c->exit_status));
	}
	int rc = json_dumpf(cmds, fp, JSON_INDENT(2));
	fputc('\n', fp);
	json_decref(cmds);
	return rc;
}
