# End-to-end: completion for bash, zsh and fish (issue 50.4), each shell
# driven for real: the scripts the build wrote are sourced and asked what
# they offer for a line. Commands, options, choices, files, and run names
# from the store (`runmon runs --names`, from the line's --db).
# Usage: completion.sh RUNMON BUILD_DIR
set -eu
runmon=$1
build=$2
. "$(dirname "$0")/common.sh"
for sh in bash zsh fish; do command -v $sh >/dev/null || fail "$sh is not installed (.ci/run installs it)"; done
mkdir "$tmp/bin" "$tmp/cwd" "$tmp/home"
export HOME="$tmp/home" # the default database, when no --db is on the line: none here
unset XDG_DATA_HOME RUNMON_DB
ln -s "$(readlink -f "$runmon")" "$tmp/bin/runmon"
PATH=$tmp/bin:$PATH
export PATH
db=$tmp/c.db
for r in alpha Beta w; do runmon --db "$db" simulate --steps 300 --run $r >/dev/null; done
runmon --db "$db" mv w acme/llm/ab12 >/dev/null
[ "$(runmon --db "$db" runs --names | tr '\n' ' ')" = "alpha Beta acme/llm/ab12 " ] || fail "runs --names: $(runmon --db "$db" runs --names)"
if runmon --db "$db" runs --names --json 2>/dev/null; then fail "runs --names --json accepted"; fi
cd "$tmp/cwd"
touch alpha.log notes.log

# got_lines SHELL LINE...: what SHELL offers for the last word of the
# line, one a line, as offered.
got_lines() {
	sh=$1
	shift
	case $sh in
	bash) bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _runmon
		printf "%s\n" "${COMPREPLY[@]}"' bash "$build/runmon.bash" "$@" ;;
	zsh) zsh -f -c '
		out=()
		compadd() { local w; while (( $# )); do case $1 in
			--) shift; for w in "$@"; do [[ $w == "$PREFIX"* ]] && out+=("$w"); done; return ;;
			-a) shift; for w in "${(@P)1}"; do [[ $w == "$PREFIX"* ]] && out+=("$w"); done; shift ;;
			*) shift ;; esac; done; }
		_files() { out+=(${PREFIX}*(N)); }
		compdef() { : }
		source "$1"; shift
		words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
		_runmon
		print -l -- $out' zsh "$build/_runmon" "$@" ;;
	fish) fish -c 'source $argv[1]; complete -C (string join " " -- $argv[2..-1]) | string replace -r "\t.*" ""' \
		"$build/runmon.fish" "$@" ;;
	esac
}
# got SHELL LINE...: the same, sorted and blank-separated.
got() { got_lines "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }
# check WANT LINE...: every shell offers WANT (sorted, blank-separated).
check() {
	want=$1
	shift
	for s in bash zsh fish; do
		g=$(got $s "$@")
		[ "$g" = "$want" ] || fail "$s completing '$*': got '$g', want '$want'"
	done
}
check "diagnose" runmon diag
check "report rm runs" runmon r
check "--json" runmon diagnose --js
check "critical info warn" runmon report --fail-on ""
check "html json md" runmon --db x.db report --format ""
check "--fail-on --fail-on-new" runmon report --fail
check "acme/llm/ab12 alpha alpha.log" runmon --db "$db" diagnose a
check "Beta acme/llm/ab12 alpha" runmon --db "$db" compare ""
check "alpha" runmon --db "$db" export al
check "acme/llm/ab12" runmon --db "$db" rm acme
check "alpha.log" runmon import alp
check "notes.log" runmon --db "$db" diagnose --lengths-from no
# without --db, the default database (here: none, so no run is offered)
check "" runmon compare al
# bash's own: the help subcommand takes commands; an option's value of text offers nothing
[ "$(got bash runmon help diag)" = diagnose ] || fail "bash: help diag"
[ "$(got bash runmon diagnose --since '')" = "" ] || fail "bash: diagnose --since"
# Stored names are data (issue 67.1): offered literally by every shell,
# never expanded. Names come from files, --run and shared stores.
hostile=$tmp/h.db
for n in '$(touch pwned1)' '`touch pwned2`' "it's \"q\"" 'sp ace' 'g*' '-dash' '$HOME'; do
	runmon --db "$hostile" simulate --steps 200 --run "$n" >/dev/null || fail "simulate --run '$n'"
done
want=$(runmon --db "$hostile" runs --names | sort)
[ "$(printf '%s\n' "$want" | wc -l)" = 7 ] || fail "hostile names stored: $want"
touch 'g-file.log'
for s in bash zsh fish; do
	for c in diagnose compare rm; do
		g=$(got_lines $s runmon --db "$hostile" $c "")
		for n in '$(touch pwned1)' '`touch pwned2`' "it's \"q\"" 'sp ace' 'g*' '$HOME'; do
			printf '%s\n' "$g" | grep -qxF -- "$n" || fail "$s $c: '$n' not offered literally: $g"
		done
	done
	g=$(got_lines $s runmon --db "$hostile" diagnose 'g')
	printf '%s\n' "$g" | grep -qxF 'g*' || fail "$s: prefix g: $g"
	printf '%s\n' "$g" | grep -qxF 'g-file.log' || fail "$s: prefix g, the file: $g"
	printf '%s\n' "$g" | grep -qxF 'sp ace' && fail "$s: prefix g offered 'sp ace'"
done
# a typed prefix is matched literally (fish reads an unquoted $( on the
# line as its own command substitution, so only bash and zsh here)
for s in bash zsh; do
	g=$(got_lines $s runmon --db "$hostile" rm '$(')
	[ "$g" = '$(touch pwned1)' ] || fail "$s: prefix \$(: $g"
done
[ ! -e pwned1 ] && [ ! -e pwned2 ] && [ ! -e "$tmp/pwned1" ] || fail "completion ran code from a stored run name"
# zsh offers nothing after an option that takes text
[ "$(got zsh runmon --db "$db" diagnose --since '')" = "" ] || fail "zsh: diagnose --since offers something"
# the scripts say how they were made, with a command that exists
for f in runmon.bash _runmon runmon.fish; do
	grep -q "runmon help --completion" "$build/$f" || fail "$f: no header naming how it was written"
done
if runmon help --completion tcsh 2>"$tmp/err"; then fail "help --completion tcsh accepted"; fi
grep -q "bash, zsh or fish" "$tmp/err" || fail "an unknown shell: $(cat "$tmp/err")"
echo "e2e completion: bash, zsh and fish offer commands, options, choices, files and stored runs"
