#!/usr/bin/env python3
"""Checks dashboards/runmon.json against the facts of the Grafana SQLite
datasource (shared/integrations.md) and runs every panel's SQL, with
Grafana's variables substituted, on a database runmon filled.

usage: dashboards.py DASHBOARD.json DB RUN_NAME...
"""
import json
import sqlite3
import sys

DS = {"type": "frser-sqlite-datasource", "uid": "runmon"}
NEEDS = {  # columns each panel must return
    "Loss by bucket": {"time", "bucket", "loss"},
    "Bucket-adjusted loss (the curve to watch)": {"time", "adjusted"},
    "Length-adjusted loss (the curve to watch without bucket ids)": {"time", "adjusted"},
    "Same-bucket streaks": {"bucket", "runs", "mean_run", "longest"},
    "Padding efficiency by bucket": {"bucket", "padding_efficiency"},
    "Findings over time": {"time", "run", "detector", "severity"},
}


def fail(msg):
    sys.exit("FAIL: " + msg)


def main():
    dash = json.load(open(sys.argv[1]))
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[2], uri=True)
    runs = sys.argv[3:]
    if dash["schemaVersion"] != 39 or not dash["uid"]:
        fail("schemaVersion 39 and a uid")
    var = dash["templating"]["list"][0]
    if var["datasource"] != DS or var["name"] != "run":
        fail("the run variable's datasource ref")
    names = [r[0] for r in db.execute(var["query"])]
    if not set(runs) <= set(names):
        fail("the run variable lists %s, not %s" % (names, runs))
    sqlstring = ",".join("'" + r.replace("'", "''") + "'" for r in runs)  # ${run:sqlstring}
    seen = set()
    for p in dash["panels"]:
        if p["datasource"] != DS:
            fail("panel %s: datasource ref" % p["title"])
        for t in p["targets"]:
            if t["datasource"] != DS or t["queryText"] != t["rawQueryText"]:
                fail("panel %s: target ref, or queryText != rawQueryText" % p["title"])
            if t["queryType"] not in ("table", "time series"):
                fail("panel %s: queryType %r" % (p["title"], t["queryType"]))
            sql = (t["rawQueryText"].replace("${run:sqlstring}", sqlstring)
                   .replace("$__from", "0").replace("$__to", "4102444800000"))
            if "$" in sql:
                fail("panel %s: unsupported macro left in %s" % (p["title"], sql))
            cur = db.execute(sql)
            cols = {d[0] for d in cur.description}
            rows = cur.fetchall()
            if not NEEDS[p["title"]] <= cols:
                fail("panel %s: columns %s, needs %s" % (p["title"], cols, NEEDS[p["title"]]))
            if not rows:
                fail("panel %s: no rows" % p["title"])
            if t["queryType"] == "time series":
                if t["timeColumns"] != ["time"]:
                    fail("panel %s: timeColumns" % p["title"])
                times = [r[[d[0] for d in cur.description].index("time")] for r in rows]
                if times != sorted(times) or any(x is None for x in times):
                    fail("panel %s: time must be ascending and never NULL" % p["title"])
                if not all(1e9 < x < 1e11 for x in times):
                    fail("panel %s: time is not in unix seconds" % p["title"])
            seen.add(p["title"])
    if seen != set(NEEDS):
        fail("panels %s" % seen)
    print("dashboards: %d panels ran with rows and the columns they need" % len(seen))


if __name__ == "__main__":
    main()
