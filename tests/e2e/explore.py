#!/usr/bin/env python3
"""Browser test of the explorable report (issue 48): drives the system
Chromium through its DevTools protocol over --remote-debugging-pipe (a small
client, no npm) at 800 and 1280 px, with real mouse and wheel events.

On the demo's three runs, a 4-rank run with derived buckets,
`report --compare` and `report --overlay` of three runs: every chart of many points draws every bucket's colour,
a bucket keeps its colour across runs, hovering the loss chart reads out the
step under the pointer, the wheel changes the step range of every chart of
that run (and of no other) and draws the loss anew from the data of the steps
shown (checked against `runmon export`), a legend click hides that bucket's marks, the
compare report has one chart holding both runs (all three with --overlay); no console error, no CSP
violation, no request other than the file itself.

Usage: explore.py RUNMON [DIR]  (with DIR, the screenshots are kept there as
explore-CASE-WIDTH.png, as the README links them: tests/e2e/explore.py
build/runmon docs/img)
"""
import base64
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

runmon = os.path.abspath(sys.argv[1])
keep = sys.argv[2] if len(sys.argv) > 2 else None
tmp = tempfile.mkdtemp(prefix="runmon-explore.")
failures = []
colour_of = {}  # a bucket's colour, by its name, across every report the test opens


def fail(msg):
    print("explore: FAIL: " + msg, file=sys.stderr)
    failures.append(msg)


def run(*args):
    r = subprocess.run([runmon, "--db", os.path.join(tmp, "x.db")] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, SOURCE_DATE_EPOCH="1764396000"))
    if r.returncode not in (0, 1):
        sys.exit("explore: runmon %s failed: %s" % (" ".join(args), r.stderr))
    return r.stdout


class Browser:
    """Chromium with its protocol on fds 3 (commands) and 4 (replies and
    events), each message a JSON text ended by a NUL byte."""

    def __init__(self):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            sys.exit("explore: chromium is not installed (.ci/run installs it)")
        cmd_r, self.cmd_w = os.pipe()
        self.ev_r, ev_w = os.pipe()

        # above 4 first, so each dup2 below makes a new, inheritable fd
        cmd_r, ev_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_r, ev_w))

        def fds():
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             "--remote-debugging-pipe", "--user-data-dir=" + os.path.join(tmp, "profile"), "about:blank"],
            close_fds=False, preexec_fn=fds, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(tmp, "chromium.log"), "w"))
        os.close(cmd_r)
        os.close(ev_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def _read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.ev_r, 1 << 16)
            if not chunk:
                sys.exit("explore: chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    sys.exit("explore: %s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name):
        for i, m in enumerate(self.events):
            if m.get("method") == name:
                return self.events.pop(i)
        while True:
            m = self._read()
            if m.get("method") == name:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.call("Browser.close")
        except SystemExit:
            pass
        self.proc.wait(timeout=30)


class Page:
    def __init__(self, b, width):
        self.b = b
        target = b.call("Target.createTarget", url="about:blank")["targetId"]
        self.s = b.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=1000, deviceScaleFactor=1, mobile=False)

    def call(self, method, **params):
        return self.b.call(method, self.s, **params)

    def open(self, path):
        self.b.events.clear()
        self.call("Page.navigate", url="file://" + path)
        self.b.wait_event("Page.loadEventFired")

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            sys.exit("explore: script failed: %s\n%s" % (r["exceptionDetails"], expr))
        return r["result"].get("value")

    def mouse(self, kind, x, y, **extra):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def problems(self):
        """Console errors, exceptions, CSP reports and requests of anything
        but a file: URL or data: since the page was opened."""
        out = []
        for m in self.b.events:
            p, name = m.get("params", {}), m.get("method")
            if name == "Runtime.exceptionThrown":
                out.append("exception: %s" % p["exceptionDetails"].get("text"))
            elif name == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console error: %s" % p.get("args"))
            elif name == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append("log error: %s" % p["entry"].get("text"))
            elif name == "Network.requestWillBeSent" and not re.match(r"(file|data):", p["request"]["url"]):
                out.append("network request: %s" % p["request"]["url"])
        return out

    def shot(self, selector, path):
        r = self.js("(function(){var r=document.querySelector(%s).getBoundingClientRect();"
                    "return [r.left+scrollX,r.top+scrollY,r.width,Math.min(r.height,1500)]})()" % json.dumps(selector))
        img = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1})
        with open(path, "wb") as f:
            f.write(base64.b64decode(img["data"]))
        return os.path.getsize(path)


# What the page holds per run section: the colours of each chart and
# legend, by bucket name, and the step range each step chart shows.
STATE = r"""(function(){
function range(svg){var z=svg.querySelector('.zoom'),x0=+svg.dataset.x0,x1=+svg.dataset.x1,p=+svg.dataset.pad,
 w=+svg.dataset.w,m=(z&&z.getAttribute('transform')||'matrix(1 0 0 1 0 0)').match(/[-\d.e]+/g).map(Number),
 a=m[0],b=m[4],s=function(x){return x0+((x-b)/a-p)*(x1-x0)/w};return [s(p),s(p+w)]}
return [].map.call(document.querySelectorAll('section.run'),function(sec){
 var legend={},charts={};
 [].forEach.call(sec.querySelectorAll('button[data-b]'),function(b){
  legend[b.dataset.name]=b.querySelector('circle').getAttribute('fill')});
 [].forEach.call(sec.querySelectorAll('svg.chart'),function(svg){
  var cls=svg.getAttribute('class').split(' ')[1],cols={};
  [].forEach.call(svg.querySelectorAll('[data-b]'),function(m){
   if(+m.dataset.b<0)return;
   var c=m.getAttribute('stroke')&&m.tagName=='path'?m.getAttribute('stroke'):m.getAttribute('fill');
   if(!c){var r=m.querySelector('rect');c=r&&r.getAttribute('fill')}
   cols[c]=1});
  charts[cls]={colours:Object.keys(cols),range:svg.dataset.x0?range(svg):null,
   x0:+svg.dataset.x0,x1:+svg.dataset.x1}});
 return {id:sec.id,name:sec.querySelector('h2').textContent,legend:legend,charts:charts}})})()"""


def centre_of(page, selector, fx=0.5, fy=0.5):
    """The client point at a fraction of a chart's plot area."""
    return page.js("""(function(){var s=document.querySelector(%s);s.scrollIntoView({block:'center'});
var r=s.getBoundingClientRect(),k=r.width/s.viewBox.baseVal.width,p=+s.dataset.pad,w=+s.dataset.w;
return [r.left+(p+%f*w)*k, r.top+r.height*%f]})()""" % (json.dumps(selector), fx, fy))


def check_report(page, path, case, width, sections_min, shot):
    page.open(path)
    runs = page.js(STATE)
    if len(runs) < sections_min:
        fail("%s: %d run sections, expected %d" % (case, len(runs), sections_min))
        return
    for r in runs:
        legend = set(r["legend"].values())
        for name, col in r["legend"].items():
            if colour_of.setdefault(name, col) != col:
                fail("%s: bucket %s is %s in %s but %s in an earlier run or report" %
                     (case, name, col, r["name"], colour_of[name]))
        for cls in ("loss", "strip", "buckets"):
            drawn = set(r["charts"].get(cls, {}).get("colours", []))
            # the box plot holds the buckets that lead a step, at most all
            if cls in r["charts"] and (drawn > legend if cls == "buckets" else drawn != legend):
                fail("%s at %d px, %s: the %s chart draws %s, the legend has %s" %
                     (case, width, r["name"], cls, sorted(drawn), sorted(legend)))
    first = "#" + runs[0]["id"]
    check_layout(page, case, width, first)
    loss = first + " svg.chart.loss"
    c = runs[0]["charts"]["loss"]
    # hover a quarter of the way along the plot: the readout names that step
    x, y = centre_of(page, loss, 0.25)
    page.mouse("mouseMoved", x, y)
    text = page.js("document.querySelector('%s .readout').textContent" % first)
    m = re.match(r"step ([\d,]+)", text or "")
    want = c["x0"] + 0.25 * (c["x1"] - c["x0"])
    tol = (c["x1"] - c["x0"]) * 3 / 834 + 1  # three drawn pixels
    if not m or abs(int(m.group(1).replace(",", "")) - want) > tol:
        fail("%s at %d px: hovering step %.0f reads %r" % (case, width, want, text))
    elif not re.search(r"· adjusted loss [\d.]+ .*· bucket .+ loss [\d.]+", text):
        fail("%s at %d px: the readout has no losses: %r" % (case, width, text))
    # the wheel over the loss chart narrows every step chart of this run alike
    page.mouse("mouseWheel", x, y, deltaX=0, deltaY=-400)
    page.mouse("mouseWheel", x, y, deltaX=0, deltaY=-400)
    after = page.js(STATE)
    full = c["x1"] - c["x0"]
    ranges = {k: v["range"] for k, v in after[0]["charts"].items() if v["range"]}
    span = ranges["loss"][1] - ranges["loss"][0]
    if not span < 0.9 * full:
        fail("%s: the wheel did not zoom the loss chart: %s of %s steps" % (case, span, full))
    for k, rg in ranges.items():
        if abs(rg[0] - ranges["loss"][0]) > full * 0.01 or abs(rg[1] - ranges["loss"][1]) > full * 0.01:
            fail("%s: the %s chart shows steps %s, the loss chart %s" % (case, k, rg, ranges["loss"]))
    for other in after[1:]:
        for k, v in other["charts"].items():
            if v["range"] and abs((v["range"][1] - v["range"][0]) - (v["x1"] - v["x0"])) > 1e-6 * (v["x1"] - v["x0"] + 1):
                fail("%s: zooming %s also zoomed %s" % (case, runs[0]["name"], other["name"]))
    ticks = page.js("[].map.call(document.querySelectorAll('%s .xticks text'),function(t){return t.textContent})" % loss)
    if len(ticks) < 3:
        fail("%s: the zoomed axis has ticks %s" % (case, ticks))
    # the screenshot shows the run zoomed, with the readout of a step
    x2, y2 = centre_of(page, loss, 0.6)
    page.mouse("mouseMoved", x2, y2)
    if case not in ("compare", "overlay"):
        take(page, "#" + runs[0]["id"], shot, case, width)
    # a double-click shows the whole run again
    page.mouse("mousePressed", x, y, button="left", clickCount=2)
    page.mouse("mouseReleased", x, y, button="left", clickCount=2)
    back = page.js(STATE)[0]["charts"]["loss"]["range"]
    if abs(back[0] - c["x0"]) > full * 0.001 or abs(back[1] - c["x1"]) > full * 0.001:
        fail("%s: double-click did not reset the zoom: %s" % (case, back))
    # clicking the first bucket's legend entry hides its marks in this run only
    bx, by, b = page.js("""(function(){var k=document.querySelector('%s button[data-b]');k.scrollIntoView({block:'center'});
var r=k.getBoundingClientRect();return [r.left+r.width/2,r.top+r.height/2,k.dataset.b]})()""" % first)
    page.mouse("mousePressed", bx, by, button="left", clickCount=1)
    page.mouse("mouseReleased", bx, by, button="left", clickCount=1)
    shown = page.js("""[].filter.call(document.querySelectorAll('%s svg [data-b="%s"]'),function(m){
return getComputedStyle(m).display!='none'}).length""" % (first, b))
    pressed = page.js("document.querySelector('%s button[data-b=\"%s\"]').getAttribute('aria-pressed')" % (first, b))
    if shown or pressed != "false":
        fail("%s: after a legend click %d marks of bucket %s still show (aria-pressed %s)" % (case, shown, b, pressed))
    if len(runs) > 1:
        elsewhere = page.js("""[].filter.call(document.querySelectorAll('section.run:not(%s) svg [data-b]'),function(m){
return getComputedStyle(m).display=='none'}).length""" % first)
        if elsewhere:
            fail("%s: a legend click hid %d marks of other runs" % (case, elsewhere))
    page.mouse("mousePressed", bx, by, button="left", clickCount=1)
    page.mouse("mouseReleased", bx, by, button="left", clickCount=1)
    # keyboard: a focused chart zooms with + and resets with 0
    page.js("document.querySelector('%s').focus()" % loss)
    page.call("Input.dispatchKeyEvent", type="keyDown", key="+", text="+")
    keyed = page.js(STATE)[0]["charts"]["loss"]["range"]
    if not keyed[1] - keyed[0] < 0.9 * full:
        fail("%s: + on the focused chart did not zoom: %s" % (case, keyed))
    page.call("Input.dispatchKeyEvent", type="keyDown", key="0", text="0")
    for p in page.problems():
        fail("%s at %d px: %s" % (case, width, p))
    return runs


LAYOUT = """(function(sec){
var out = {tick: 1e9, overlap: [], outside: [], order: true};
var loss = sec.querySelector('svg.chart.loss');
[].forEach.call(sec.querySelectorAll('svg.chart .yticks text, svg.chart .xticks text'), function (t) {
  out.tick = Math.min(out.tick, t.getBoundingClientRect().height); });
if (loss) {
  var line = loss.querySelector('polyline.adjusted'), band = loss.querySelector('path.band');
  out.order = !line || !band || !!(line.compareDocumentPosition(band) & Node.DOCUMENT_POSITION_FOLLOWING);
}
var box = sec.querySelector('svg.chart.buckets');
if (box) {
  var frame = box.querySelector('rect').getBoundingClientRect();
  var marks = [].slice.call(box.querySelectorAll('g[data-b] rect, g[data-b] line'));
  marks.forEach(function (m) { var r = m.getBoundingClientRect();
    if (r.top < frame.top - 0.5 || r.bottom > frame.bottom + 0.5) out.outside.push(m.outerHTML.slice(0, 80)); });
  [].forEach.call(box.querySelectorAll('text.blabel'), function (t) { var a = t.getBoundingClientRect();
    marks.forEach(function (m) { var b = m.getBoundingClientRect();
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) out.overlap.push(t.textContent); }); });
}
return out; })(document.querySelector(%s))"""


def check_layout(page, case, width, selector):
    """Issue 66.4: ticks readable, the reference lines beneath the bucket
    marks, whiskers inside the frame, bucket labels clear of the boxes."""
    got = page.js(LAYOUT % json.dumps(selector))
    if got["tick"] < 10:
        fail("%s at %d px: tick labels %.1f px high, under 10" % (case, width, got["tick"]))
    if not got["order"]:
        fail("%s at %d px: the adjusted line is drawn over the bucket marks" % (case, width))
    if got["outside"]:
        fail("%s at %d px: box-plot marks outside the frame: %s" % (case, width, got["outside"][:2]))
    if got["overlap"]:
        fail("%s at %d px: bucket labels on the boxes: %s" % (case, width, got["overlap"][:3]))


# The loss chart's bands as drawn now: per bucket name, the least and
# greatest loss of the strokes inside the plot, and how many distinct pixel
# columns hold a stroke.
BANDS = r"""(function(sec){
var svg=sec.querySelector('svg.chart.loss'),lo=+svg.dataset.lo,hi=+svg.dataset.hi,lg=+svg.dataset.log,
 ph=+svg.dataset.ph,p=+svg.dataset.pad,w=+svg.dataset.w,
 m=svg.querySelector('.zoom').getAttribute('transform').match(/[-\d.e]+/g).map(Number),a=m[0],b=m[4],xs={},out={};
function val(y){var u=lo+(1-(y-10)/ph)*(hi-lo);return lg?Math.pow(10,u):u}
[].forEach.call(svg.querySelectorAll('path.band[data-b]'),function(path){
 var k=sec.querySelector('button[data-b="'+path.dataset.b+'"]'),name=k?k.dataset.name:'mixed',re=/M([-\d.]+) ([-\d.]+)V([-\d.]+)/g,mm;
 while((mm=re.exec(path.getAttribute('d')))){var x=a*parseFloat(mm[1])+b;if(x<p-0.5||x>p+w+0.5)continue;
  xs[Math.round(x*4)]=1;var o=out[name]||(out[name]=[Infinity,-Infinity]);
  o[0]=Math.min(o[0],val(+mm[3]));o[1]=Math.max(o[1],val(+mm[2]))}});
return {bands:out,cols:Object.keys(xs).length}})(document.querySelector(%s))"""


def check_zoom_data(page, case, width, first, series):
    """Issue 66.4: a zoom re-aggregates the data (M4 per pixel column of
    the steps shown), so the bands of a zoomed view hold exactly the losses
    of those steps, as `runmon export` reads them, and a deep zoom leaves no
    column empty; spreading the full view's columns would fail both."""
    loss = first + " svg.chart.loss"
    xa, y = centre_of(page, loss, 0.40)
    xb, _ = centre_of(page, loss, 0.50)
    page.mouse("mousePressed", xa, y, button="left", clickCount=1)
    page.mouse("mouseMoved", (xa + xb) / 2, y)
    page.mouse("mouseMoved", xb, y)
    page.mouse("mouseReleased", xb, y, button="left", clickCount=1)
    v0, v1 = page.js(STATE)[0]["charts"]["loss"]["range"]
    got = page.js(BANDS % json.dumps(first))["bands"]
    allv = [l for _, l, _ in series]
    tol = 0.003 * (max(allv) - min(allv))
    edge = 3  # a column of the zoom's grid holds at most 20000/8192 steps
    for name, (lo, hi) in got.items():
        wide = [l for s, l, b in series if b == name and v0 - edge <= s <= v1 + edge]
        narrow = [l for s, l, b in series if b == name and v0 + edge <= s <= v1 - edge]
        if not narrow:
            continue
        if not (min(wide) - tol <= lo <= min(narrow) + tol and max(narrow) - tol <= hi <= max(wide) + tol):
            fail("%s at %d px: zoomed to steps %.0f-%.0f, bucket %s draws %.4f-%.4f, its losses there are %.4f-%.4f"
                 % (case, width, v0, v1, name, lo, hi, min(narrow), max(narrow)))
    for _ in range(4):  # about 125 steps: fewer steps than pixel columns
        page.call("Input.dispatchKeyEvent", type="keyDown", key="+", text="+")
    cols = page.js(BANDS % json.dumps(first))["cols"]
    if cols < 0.95 * 420:
        fail("%s at %d px: zoomed deep, %d of 420 pixel columns hold a stroke: gaps that are not in the data"
             % (case, width, cols))
    page.call("Input.dispatchKeyEvent", type="keyDown", key="0", text="0")


def take(page, selector, path, case, width):
    size = page.shot(selector, path)
    if size < 10000:
        fail("%s at %d px: a screenshot of %d bytes holds no chart" % (case, width, size))
    if keep:
        shutil.copy(path, keep)


def check_overlay(page, shot, width, case, k):
    """report --compare and --overlay: one chart holds the k runs, one
    polyline each, and zooms and reads out as a run's charts do."""
    sel = "section.overlay svg.chart[data-x0]"
    lines = page.js("""(function(){var s=document.querySelector('%s');
return s ? [].map.call(s.querySelectorAll('polyline[data-name]'), function (p) {
 return [p.getAttribute('class'), p.getAttribute('points').split(' ').length]}) : null})()""" % sel)
    want = ["adjusted run-" + "abcd"[j] for j in range(k)]
    if not lines or [c for c, _ in lines] != want or min(n for _, n in lines) < 100:
        fail("%s: no chart holds the %d runs: %s" % (case, k, lines))
        return
    x, y = centre_of(page, sel, 0.5)
    page.mouse("mouseWheel", x, y, deltaX=0, deltaY=-400)
    page.mouse("mouseMoved", x, y)
    text = page.js("document.querySelector('section.overlay .readout').textContent")
    if not re.match(r"step [\d,]+( · demo-\w+ [\d.]+){%d}$" % k, text or ""):
        fail("%s at %d px: the overlay's readout is %r" % (case, width, text))
    m = page.js("document.querySelector('%s .zoom').getAttribute('transform')" % sel) or ""
    if not m.startswith("matrix(") or not float(m[7:].split()[0]) > 1.1:
        fail("%s at %d px: the wheel did not zoom the overlay: %r" % (case, width, m))
    levels = page.js("document.querySelectorAll('section.overlay svg.chart.levels g[data-b]').length")
    if levels < 3 * k:
        fail("%s: %d bucket levels drawn for %d runs" % (case, levels, k))
    if case == "compare":  # the chart draws the table's levels (issue 66.4)
        drawn = page.js("""[].map.call(document.querySelectorAll('section.overlay svg.chart.levels g[data-level]'),
function (g) { return +g.dataset.level })""")
        table = page.js("""[].concat.apply([], [].map.call(document.querySelectorAll('#compare tr'), function (tr) {
var c = tr.querySelectorAll('td'); if (c.length < 3 || c[0].textContent.indexOf('level, bucket') < 0) return [];
return [c[1].textContent, c[2].textContent].filter(function (t) { return t != '-' })
 .map(function (t) { return parseFloat(t.replace('x', '')) }) }))""")
        if not table or sorted(round(v, 3) for v in drawn) != sorted(round(v, 3) for v in table):
            fail("compare at %d px: the levels chart draws %s, the table says %s" % (width, sorted(drawn), sorted(table)))
    take(page, "section.overlay", shot, case, width)


def main():
    run("demo", "--steps", "20000")
    run("simulate", "--strategy", "hf-megabatch", "--steps", "6000", "--ranks", "4", "--no-bucket", "--seed", "7",
        "--run", "ranks4")
    names = [l.split()[0] for l in run("runs", "--names").split("\n") if l.strip()]
    demo = [n for n in names if n.startswith("demo")]
    if len(demo) != 3:
        sys.exit("explore: the demo made runs %s" % names)
    series = {}  # each demo run's (step, loss, bucket), as exported
    for name in demo:
        rows = run("export", name).strip().split("\n")
        head = rows[0].split(",")
        at = {k: head.index(k) for k in ("step", "loss", "bucket")}
        series[name] = [(int(r[at["step"]]), float(r[at["loss"]]), r[at["bucket"]])
                        for r in (row.split(",") for row in rows[1:]) if r[at["loss"]] not in ("", "nan")]
    reports = {}
    for case, args, n in (("demo", demo, 3), ("ranks4", ["ranks4"], 1), ("compare", ["--compare"] + demo[:2], 2),
                          ("overlay", ["--overlay"] + demo, 3)):
        path = os.path.join(tmp, case + ".html")
        run("report", *args, "-o", path)
        reports[case] = (path, n)
    b = Browser()
    try:
        for width in (800, 1280):
            page = Page(b, width)
            for case, (path, n) in reports.items():
                shot = os.path.join(tmp, "explore-%s-%d.png" % (case, width))
                runs = check_report(page, path, case, width, n, shot)
                if case == "demo" and runs:
                    check_zoom_data(page, case, width, "#" + runs[0]["id"], series[runs[0]["name"]])
                if case in ("compare", "overlay"):
                    check_overlay(page, shot, width, case, 2 if case == "compare" else 3)
    finally:
        b.close()
    if failures:
        sys.exit("explore: %d failure%s" % (len(failures), "" if len(failures) == 1 else "s"))
    shutil.rmtree(tmp)
    print("explore: ok (%d reports at 800 and 1280 px)" % len(reports))


main()
