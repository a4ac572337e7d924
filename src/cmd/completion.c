/*
 * completion.c - shell completion for bash, zsh and fish, written from
 * the command tables so that it offers what the parser takes: commands,
 * each command's options, the values of a choice, files where a path goes
 * and the stored runs where a run goes (`runmon runs --names`, asked as
 * the user types, from the --db on the line if there is one).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"

typedef void (*opt_fn)(FILE *fp, const struct rm_cmd *c, const struct rm_opt *o);

static void each_opt(FILE *fp, const struct rm_cmd *c, opt_fn fn)
{
	const struct rm_opt *tabs[2] = {c->opts, rm_cmd_common_opts(c)};
	for (int t = 0; t < 2; t++)
		for (const struct rm_opt *o = tabs[t]; o->name; o++)
			fn(fp, c, o);
}

static void opt_word(FILE *fp, const struct rm_cmd *c, const struct rm_opt *o)
{
	(void)c;
	fprintf(fp, " --%s", o->name);
}

static void command_words(FILE *fp, const struct rm_cmd_list *all)
{
	for (size_t i = 0; i < all->n; i++)
		fprintf(fp, "%s%s", i ? " " : "", all->cmd[i]->name);
}

/* ---- bash ------------------------------------------------------------------ */

static void bash_opt_value(FILE *fp, const struct rm_cmd *c, const struct rm_opt *o)
{
	if (o->kind == RM_ARG_PATH)
		fprintf(fp, "\t%s:--%s) _runmon_add_files; return ;;\n", c->name, o->name);
	else if (o->kind == RM_ARG_CHOICE && o->choices)
		fprintf(fp, "\t%s:--%s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", c->name, o->name,
		        o->choices);
	else if (o->arg)
		fprintf(fp, "\t%s:--%s) return ;;\n", c->name, o->name);
}

static void bash(FILE *fp, const struct rm_cmd_list *all)
{
	fputs("# bash completion for runmon, written by `runmon help --completion bash`\n"
	      "_runmon_runs() { if [ -n \"$1\" ]; then runmon --db \"$1\" runs --names; else runmon runs --names; fi "
	      "2>/dev/null; }\n"
	      /* Stored names and file names are data: never a word list for
	       * `compgen -W` (which expands $(...) and backticks in it) and
	       * never an unquoted $(...) (which globs). Each is matched
	       * against the typed prefix as a literal and added as it is. */
	      "_runmon_add_runs() { local n; while IFS= read -r n; do [[ $n == \"$cur\"* ]] && COMPREPLY+=(\"$n\"); "
	      "done < <(_runmon_runs \"$db\"); }\n"
	      "_runmon_add_files() { local f; while IFS= read -r f; do COMPREPLY+=(\"$f\"); "
	      "done < <(compgen -f -- \"$cur\"); }\n"
	      "_runmon() {\n"
	      "\tlocal cur prev cmd db i\n"
	      "\tcur=${COMP_WORDS[COMP_CWORD]}\n"
	      "\tprev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tcase ${COMP_WORDS[i]} in\n"
	      "\t\t--db) db=${COMP_WORDS[i+1]}; ((i++)) ;;\n"
	      "\t\t-*) ;;\n"
	      "\t\t*) [ -n \"$cmd\" ] || cmd=${COMP_WORDS[i]} ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tif [ -z \"$cmd\" ]; then\n"
	      "\t\tif [ \"$prev\" = --db ]; then _runmon_add_files; return; fi\n"
	      "\t\tCOMPREPLY=($(compgen -W \"--db --quiet --version --help help version ",
	      fp);
	command_words(fp, all);
	fputs("\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tcase $cmd:$prev in\n", fp);
	for (size_t i = 0; i < all->n; i++)
		each_opt(fp, all->cmd[i], bash_opt_value);
	fputs("\thelp:*) COMPREPLY=($(compgen -W \"", fp);
	command_words(fp, all);
	fputs("\" -- \"$cur\")); return ;;\n\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n\t\tcase $cmd in\n",
	      fp);
	for (size_t i = 0; i < all->n; i++) {
		fprintf(fp, "\t\t%s) COMPREPLY=($(compgen -W \"", all->cmd[i]->name);
		each_opt(fp, all->cmd[i], opt_word);
		fputs("\" -- \"$cur\")) ;;\n", fp);
	}
	fputs("\t\tesac\n\t\treturn\n\tfi\n\tcase $cmd in\n", fp);
	for (size_t i = 0; i < all->n; i++) {
		const struct rm_cmd *c = all->cmd[i];
		switch (c->operands) {
		case RM_OPERANDS_NONE: break;
		case RM_OPERANDS_FILES: fprintf(fp, "\t%s) _runmon_add_files ;;\n", c->name); break;
		case RM_OPERANDS_RUNS: fprintf(fp, "\t%s) _runmon_add_runs ;;\n", c->name); break;
		case RM_OPERANDS_RUNS_FILES:
			fprintf(fp, "\t%s) _runmon_add_runs; _runmon_add_files ;;\n", c->name);
			break;
		}
	}
	fputs("\tesac\n}\ncomplete -o filenames -F _runmon runmon\n", fp);
}

/* ---- zsh ------------------------------------------------------------------- */

static void zsh_opt_value(FILE *fp, const struct rm_cmd *c, const struct rm_opt *o)
{
	if (o->kind == RM_ARG_PATH)
		fprintf(fp, "\t%s:--%s) _files; return ;;\n", c->name, o->name);
	else if (o->kind == RM_ARG_CHOICE && o->choices)
		fprintf(fp, "\t%s:--%s) compadd -- %s; return ;;\n", c->name, o->name, o->choices);
	else if (o->arg)
		fprintf(fp, "\t%s:--%s) return ;;\n", c->name, o->name);
}

static void zsh(FILE *fp, const struct rm_cmd_list *all)
{
	fputs("#compdef runmon\n"
	      "# zsh completion for runmon, written by `runmon help --completion zsh`\n"
	      "_runmon() {\n"
	      "\tlocal cmd db i prev=${words[CURRENT-1]}\n"
	      "\tfor ((i = 2; i < CURRENT; i++)); do\n"
	      "\t\tcase ${words[i]} in\n"
	      "\t\t--db) db=${words[i+1]}; ((i++)) ;;\n"
	      "\t\t-*) ;;\n"
	      "\t\t*) [[ -n $cmd ]] || cmd=${words[i]} ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tif [[ -z $cmd ]]; then\n"
	      "\t\tif [[ $prev == --db ]]; then _files; return; fi\n"
	      "\t\tcompadd -- --db --quiet --version --help help version ",
	      fp);
	command_words(fp, all);
	fputs("\n\t\treturn\n\tfi\n\tcase $cmd:$prev in\n", fp);
	for (size_t i = 0; i < all->n; i++)
		each_opt(fp, all->cmd[i], zsh_opt_value);
	fputs("\thelp:*) compadd -- ", fp);
	command_words(fp, all);
	fputs("; return ;;\n\tesac\n\tif [[ $PREFIX == -* ]]; then\n\t\tcase $cmd in\n", fp);
	for (size_t i = 0; i < all->n; i++) {
		fprintf(fp, "\t\t%s) compadd --", all->cmd[i]->name);
		each_opt(fp, all->cmd[i], opt_word);
		fputs(" ;;\n", fp);
	}
	fputs("\t\tesac\n\t\treturn\n\tfi\n\tlocal -a runs\n\tcase $cmd in\n", fp);
	for (size_t i = 0; i < all->n; i++) {
		const struct rm_cmd *c = all->cmd[i];
		const char *runs =
		    "runs=(${(f)\"$(runmon ${db:+--db} $db runs --names 2>/dev/null)\"}); compadd -a runs";
		switch (c->operands) {
		case RM_OPERANDS_NONE: break;
		case RM_OPERANDS_FILES: fprintf(fp, "\t%s) _files ;;\n", c->name); break;
		case RM_OPERANDS_RUNS: fprintf(fp, "\t%s) %s ;;\n", c->name, runs); break;
		case RM_OPERANDS_RUNS_FILES: fprintf(fp, "\t%s) %s; _files ;;\n", c->name, runs); break;
		}
	}
	fputs("\tesac\n}\nif [[ $zsh_eval_context[-1] == loadautofunc ]]; then _runmon \"$@\"; else compdef _runmon "
	      "runmon; fi\n",
	      fp);
}

/* ---- fish ------------------------------------------------------------------ */

/* A help text as a fish single-quoted word: ' and \ escaped, its first
 * sentence only, as fish shows one line. */
static void fish_quoted(FILE *fp, const char *s)
{
	fputc('\'', fp);
	for (; *s && *s != ';' && strncmp(s, " (", 2); s++) {
		if (*s == '\'' || *s == '\\')
			fputc('\\', fp);
		fputc(*s == '\n' ? ' ' : *s, fp);
	}
	fputc('\'', fp);
}

static void fish_opt(FILE *fp, const struct rm_cmd *c, const struct rm_opt *o)
{
	fprintf(fp, "complete -c runmon -n '__fish_seen_subcommand_from %s' -l %s", c->name, o->name);
	if (o->kind == RM_ARG_PATH)
		fputs(" -r -F", fp);
	else if (o->kind == RM_ARG_CHOICE && o->choices)
		fprintf(fp, " -x -a '%s'", o->choices);
	else if (o->arg)
		fputs(" -x", fp);
	fputs(" -d ", fp);
	fish_quoted(fp, o->help);
	fputc('\n', fp);
}

static void fish(FILE *fp, const struct rm_cmd_list *all)
{
	fputs("# fish completion for runmon, written by `runmon help --completion fish`\n"
	      "function __runmon_runs\n"
	      "\tset -l words (commandline -opc)\n"
	      "\tset -l db\n"
	      "\tfor i in (seq (count $words))\n"
	      "\t\tif test \"$words[$i]\" = --db; and test $i -lt (count $words)\n"
	      "\t\t\tset db --db $words[(math $i + 1)]\n"
	      "\t\tend\n"
	      "\tend\n"
	      "\trunmon $db runs --names 2>/dev/null\n"
	      "end\n"
	      "complete -c runmon -f\n"
	      "complete -c runmon -n __fish_use_subcommand -l db -r -F -d 'database file or PostgreSQL URI'\n"
	      "complete -c runmon -n __fish_use_subcommand -l quiet -d 'no progress line'\n"
	      "complete -c runmon -n __fish_use_subcommand -l version -d 'print the version'\n"
	      "complete -c runmon -n __fish_use_subcommand -a help -d 'help on a command'\n"
	      "complete -c runmon -n __fish_use_subcommand -a version -d 'print the version'\n",
	      fp);
	for (size_t i = 0; i < all->n; i++) {
		const struct rm_cmd *c = all->cmd[i];
		fprintf(fp, "complete -c runmon -n __fish_use_subcommand -a %s -d ", c->name);
		fish_quoted(fp, c->summary);
		fputc('\n', fp);
	}
	fputs("complete -c runmon -n '__fish_seen_subcommand_from help' -a '", fp);
	command_words(fp, all);
	fputs("'\n", fp);
	for (size_t i = 0; i < all->n; i++) {
		const struct rm_cmd *c = all->cmd[i];
		each_opt(fp, c, fish_opt);
		if (c->operands == RM_OPERANDS_RUNS || c->operands == RM_OPERANDS_RUNS_FILES)
			fprintf(fp,
			        "complete -c runmon -n '__fish_seen_subcommand_from %s' -a '(__runmon_runs)' -d run\n",
			        c->name);
		if (c->operands == RM_OPERANDS_FILES || c->operands == RM_OPERANDS_RUNS_FILES)
			fprintf(fp, "complete -c runmon -n '__fish_seen_subcommand_from %s' -F\n", c->name);
	}
}

int rm_completion_write(FILE *fp, const char *shell, const struct rm_cmd_list *all)
{
	if (!strcmp(shell, "bash"))
		bash(fp, all);
	else if (!strcmp(shell, "zsh"))
		zsh(fp, all);
	else if (!strcmp(shell, "fish"))
		fish(fp, all);
	else
		return -1;
	return 0;
}
