#!/usr/bin/env python3
"""Checks dashboards/runmon-postgres.json against the facts of Grafana's
built-in PostgreSQL datasource (shared/integrations.md section 5), runs
every panel's SQL on a real server with Grafana's macros substituted, and
compares each panel's rows with the SQLite dashboard's panel of the same
title on the same runs (copied there by `runmon copy`).

usage: dashboards_pg.py PG_DASHBOARD.json SQLITE_DASHBOARD.json DB URI RUN_NAME...
"""
import csv
import io
import json
import re
import sqlite3
import subprocess
import sys

DS = {"type": "postgres", "uid": "runmon-pg"}
FROM, TO = 0, 4102444800  # the time range, unix seconds


def fail(msg):
    sys.exit("FAIL: " + msg)


def psql(uri, sql):
    out = subprocess.run(["psql", "-X", "-q", "--csv", "-v", "ON_ERROR_STOP=1", uri, "-c", sql],
                         capture_output=True, text=True)
    if out.returncode:
        fail("psql: %s\n%s" % (out.stderr.strip(), sql))
    rows = list(csv.reader(io.StringIO(out.stdout)))
    return rows[0], [[None if v == "" else v for v in r] for r in rows[1:]]


def norm(v):
    """A value as both engines print it: numbers at 9 significant digits."""
    if v is None:
        return None
    try:
        return "%.9g" % float(v)
    except ValueError:
        return str(v)


def main():
    dash, lite = (json.load(open(p)) for p in sys.argv[1:3])
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[3], uri=True)
    uri, runs = sys.argv[4], sys.argv[5:]
    if dash["schemaVersion"] != 39 or not dash["uid"] or dash["uid"] == lite["uid"]:
        fail("schemaVersion 39 and a uid of its own")
    var = dash["templating"]["list"][0]
    if var["datasource"] != DS or var["name"] != "run":
        fail("the run variable's datasource ref")
    names = [r[0] for r in psql(uri, var["query"])[1]]
    if not set(runs) <= set(names):
        fail("the run variable lists %s, not %s" % (names, runs))
    sqlstring = ",".join("'" + r.replace("'", "''") + "'" for r in runs)  # ${run:sqlstring}
    lite_sql = {p["title"]: p["targets"][0]["rawQueryText"] for p in lite["panels"]}
    if {p["title"] for p in dash["panels"]} != set(lite_sql):
        fail("the panels differ from the SQLite dashboard's")
    for p in dash["panels"]:
        if p["datasource"] != DS:
            fail("panel %s: datasource ref" % p["title"])
        for t in p["targets"]:
            if t["datasource"] != DS or not t.get("rawQuery") or t.get("editorMode") != "code":
                fail("panel %s: a raw SQL target of the datasource" % p["title"])
            if t["format"] not in ("time_series", "table"):
                fail("panel %s: format %r" % (p["title"], t["format"]))
            sql = (t["rawSql"].replace("${run:sqlstring}", sqlstring))
            sql = re.sub(r"\$__unixEpochFilter\((\w+)\)", r"\1 >= %d AND \1 <= %d" % (FROM, TO), sql)
            if "$" in sql or " AS REAL" in sql:
                fail("panel %s: a macro or SQLite cast left in %s" % (p["title"], sql))
            cols, rows = psql(uri, sql)
            if not rows:
                fail("panel %s: no rows" % p["title"])
            if t["format"] == "time_series":
                times = [float(r[cols.index("time")]) for r in rows]
                if times != sorted(times) or not all(1e9 < x < 1e11 for x in times):
                    fail("panel %s: time must be ascending unix seconds" % p["title"])
            ref = (lite_sql[p["title"]].replace("${run:sqlstring}", sqlstring)
                   .replace("$__from", str(FROM * 1000)).replace("$__to", str(TO * 1000)))
            cur = db.execute(ref)
            lcols = [d[0] for d in cur.description]
            lrows = [[norm(v) for v in r] for r in cur.fetchall()]
            prows = [[norm(v) for v in r] for r in rows]
            if lcols != cols:
                fail("panel %s: columns %s on PostgreSQL, %s on SQLite" % (p["title"], cols, lcols))
            if sorted(map(repr, lrows)) != sorted(map(repr, prows)):
                fail("panel %s: %d rows on PostgreSQL and %d on SQLite differ, e.g. %s" % (
                    p["title"], len(prows), len(lrows), sorted(set(map(repr, prows)) ^ set(map(repr, lrows)))[:2]))
    print("dashboards_pg: %d panels ran on PostgreSQL, each giving the SQLite panel's rows" % len(dash["panels"]))


if __name__ == "__main__":
    main()
