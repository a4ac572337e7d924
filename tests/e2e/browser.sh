#!/bin/sh
# Browser test: Debian's chromium renders a report headless. Asserts the
# rendered DOM lists every run with its three charts, no console errors,
# and a screenshot. Usage: browser.sh RUNMON
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
browser=$(command -v chromium || command -v chromium-browser) || fail "chromium is not installed (.ci/run installs it)"
"$runmon" --db "$tmp/b.db" demo --steps 4000 >/dev/null
"$runmon" --db "$tmp/b.db" simulate --strategy hf-megabatch --steps 4000 --run megabatch >/dev/null
"$runmon" --db "$tmp/b.db" report --all -o "$tmp/r.html" || [ $? = 1 ]
flags="--headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --user-data-dir=$tmp/profile"
timeout 120 "$browser" $flags --enable-logging=stderr --v=0 --dump-dom "file://$tmp/r.html" >"$tmp/dom.html" 2>"$tmp/log" \
	|| fail "chromium failed: $(tail -5 "$tmp/log")"
if grep -i "CONSOLE" "$tmp/log" | grep -qi "error"; then fail "console errors: $(grep -i CONSOLE "$tmp/log")"; fi
python3 - "$tmp/dom.html" <<'PY' || fail "rendered DOM"
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.cur, self.svgs, self.runs, self.inh2, self.h2 = None, {}, [], False, ""
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.cur = a["id"]
            self.svgs[self.cur] = 0
        if tag == "svg" and self.cur and (dict(attrs).get("class") or "").startswith("chart"):
            self.svgs[self.cur] += 1
        if tag == "h2":
            self.inh2, self.h2 = True, ""
    def handle_endtag(self, tag):
        if tag == "h2":
            self.inh2 = False
            self.runs.append(self.h2.strip())
    def handle_data(self, data):
        if self.inh2:
            self.h2 += data
p = P()
p.feed(open(sys.argv[1]).read())
assert sorted(p.runs) == ["demo-homogeneous", "demo-interleaved", "megabatch"], p.runs
assert all(n == 3 for n in p.svgs.values()), p.svgs
PY
timeout 120 "$browser" $flags --window-size=1000,1600 --screenshot="$tmp/shot.png" "file://$tmp/r.html" >/dev/null 2>&1 \
	|| fail "screenshot failed"
[ "$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "no PNG"
[ "$(wc -c <"$tmp/shot.png")" -gt 20000 ] || fail "screenshot too small to hold the charts"
echo "browser: report rendered, 3 runs with 3 charts each, no console errors"
