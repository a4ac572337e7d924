#!/usr/bin/env python3
"""Reference for the sync benchmark: W&B's SDK-style history scan
(HistoryScan in wandb/apis/public/history.py), sequential, stdlib only.
Fetches HistoryPage windows [lo, lo+1000) one after another up to
lastStep+1 and json-decodes every row, as the SDK does; stores nothing.

usage: sdk_scan.py ENTITY/PROJECT/RUN   (WANDB_BASE_URL, WANDB_API_KEY)
"""
import base64
import json
import os
import sys
import urllib.request

RUN_Q = ("query Run($project: String!, $entity: String!, $name: String!) { project(name: $project, "
         "entityName: $entity) { run(name: $name) { historyKeys } } }")
PAGE_Q = ("query HistoryPage($entity: String!, $project: String!, $run: String!, $minStep: Int64!, "
          "$maxStep: Int64!, $pageSize: Int!) { project(name: $project, entityName: $entity) { "
          "run(name: $run) { history(minStep: $minStep, maxStep: $maxStep, samples: $pageSize) } } }")


def post(url, auth, query, variables):
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json", "Authorization": auth})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def main():
    entity, project, run = sys.argv[1].split("/")
    url = os.environ["WANDB_BASE_URL"].rstrip("/") + "/graphql"
    auth = "Basic " + base64.b64encode(("api:" + os.environ["WANDB_API_KEY"]).encode()).decode()
    keys = post(url, auth, RUN_Q, {"project": project, "entity": entity, "name": run})
    stop = keys["data"]["project"]["run"]["historyKeys"]["lastStep"] + 1
    rows, lo, page = 0, 0, 1000
    while lo < stop:
        hi = min(lo + page, stop)
        res = post(url, auth, PAGE_Q, {"entity": entity, "project": project, "run": run,
                                       "minStep": lo, "maxStep": hi, "pageSize": hi - lo})
        rows += len([json.loads(r) for r in res["data"]["project"]["run"]["history"]])
        lo += page
    print(rows, file=sys.stderr)


if __name__ == "__main__":
    main()
