#!/usr/bin/env python3
"""pq.py: the Prometheus / Alertmanager / fuseboxd reads of tests/prometheus/run.sh.

  pq.py vector URL EXPR            one line per series: "k=v,k=v VALUE TIMESTAMP"
                                   (labels sorted, __name__ left out), sorted
  pq.py scalar URL EXPR [TIME]     the value of a one-series answer, else "none"
                                   (evaluated at TIME, epoch seconds, else now)
  pq.py counters URL TOKEN         a fuseboxd's /metrics SLO counters:
                                   "route kind eligible good" lines
  pq.py slo URL TOKEN              its GET /v1/slo 1h window:
                                   "route total smart_total service_good smart_good"
  pq.py am URL FILTER...           Alertmanager GET /api/v2/alerts?filter=...: JSON list
Exit 0, or 1 with the reason on stderr (unreachable, an error answer).
Every request has a 5 s timeout.
"""

import json
import sys
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 5


def get(url, token=None):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return e.read().decode()


def query(base, expr, at=None):
    args = {"query": expr}
    if at is not None:
        args["time"] = at
    body = json.loads(get(base + "/api/v1/query?" + urllib.parse.urlencode(args)))
    if body.get("status") != "success":
        raise SystemExit("query %r: %s: %s" % (expr, body.get("errorType"), body.get("error")))
    return body["data"]


def main(argv):
    cmd = argv[1]
    if cmd == "vector":
        data = query(argv[2], argv[3])
        lines = []
        for s in data["result"]:
            labels = ",".join("%s=%s" % (k, v) for k, v in sorted(s["metric"].items())
                              if k != "__name__")
            lines.append("%s %s %s" % (labels or "-", s["value"][1], s["value"][0]))
        for line in sorted(lines):
            print(line)
    elif cmd == "scalar":
        data = query(argv[2], argv[3], argv[4] if len(argv) > 4 else None)
        res = data["result"]
        if data["resultType"] == "scalar":
            print(res[1])
        elif len(res) == 1:
            print(res[0]["value"][1])
        else:
            print("none")
    elif cmd == "counters":
        text = get(argv[2] + "/metrics", argv[3])
        vals = {}
        for line in text.splitlines():
            for name, key in (("fusebox_slo_eligible_calls_total{", "e"),
                              ("fusebox_slo_good_total{", "g")):
                if line.startswith(name):
                    labels, value = line[len(name):].rsplit("} ", 1)
                    lab = dict(kv.split("=", 1) for kv in labels.split(","))
                    rk = (lab["route"].strip('"'), lab["kind"].strip('"'))
                    vals.setdefault(rk, {})[key] = int(float(value))
        for (route, kind), v in sorted(vals.items()):
            print(route, kind, v["e"], v["g"])
    elif cmd == "slo":
        body = json.loads(get(argv[2] + "/v1/slo", argv[3]))
        for r in sorted(body["routes"], key=lambda r: r["route"]):
            w = r["windows"]["1h"]
            print(r["route"], w["total"], w["smart_total"], w["service_good"], w["smart_good"])
    elif cmd == "am":
        qs = urllib.parse.urlencode([("filter", f) for f in argv[3:]])
        print(get(argv[2] + "/api/v2/alerts?" + qs))
    else:
        raise SystemExit("pq.py: unknown command " + cmd)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("pq.py: %s" % e, file=sys.stderr)
        sys.exit(1)
