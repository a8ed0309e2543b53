#!/usr/bin/env python3
"""check_grafana.py: every expression of a Grafana dashboard against the rules.

Usage: check_grafana.py DASHBOARD.json RULES.yml [PROMETHEUS_URL]

For every panel target's "expr" (rows' nested panels included) and every
query variable's label_values(METRIC, LABEL):
  names    every series it selects is a recording rule of RULES.yml or
           ALERTS (the dashboard is built only on the shipped rules);
  promtool the expressions, written as recording rules into a temporary
           rules file, pass `promtool check rules` (promtool 2.42 has no
           command that checks an expression by itself), when promtool is
           installed;
  query    with PROMETHEUS_URL: GET /api/v1/query?query=EXPR is not an
           error (a parse error is status "error", errorType "bad_data"),
           and answers at least one series (the fixture of run.sh has data
           for every panel).
Template variables ($route, ${route}) are replaced by their "All" value
(.+) first; any other variable is an error. Also: panel ids are unique,
every panel has a type, a title and a gridPos, and every target uses the
dashboard's datasource variable. Prints one line per target; exit 0 clean,
1 on any finding, 2 on bad usage.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
            "offset", "and", "or", "unless", "inf", "nan", "atan2", "start", "end"}
BUILTIN_SERIES = {"ALERTS"}


def rule_names(path):
    """The `record:` names of a rules file (a line-based read: no YAML module needed)."""
    names = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^\s*-?\s*record:\s*(\S+)\s*$", line)
        if m:
            names.add(m.group(1).strip("'\""))
    return names


def panels_of(items):
    for p in items:
        yield p
        yield from panels_of(p.get("panels", []))


def substitute(expr, variables):
    def repl(m):
        name = m.group(1) or m.group(2)
        if name not in variables:
            raise ValueError("unknown variable $%s" % name)
        return variables[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", repl, expr)


def selected_names(expr):
    """Metric names an expression selects (strings, label matchers, grouping
    lists, ranges, numbers and function names taken out first)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in KEYWORDS:
            continue
        if re.match(r"^[0-9]", word):
            continue
        names.add(word)
    return names


def query(base, expr):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return json.loads(e.read().decode())


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    dash = json.load(open(argv[1], encoding="utf-8"))
    records = rule_names(argv[2])
    base = argv[3].rstrip("/") if len(argv) == 4 else None
    bad = []
    checks = []  # (where, expr)

    variables = {}
    ds_var = None
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "datasource":
            ds_var = v["name"]
            continue
        variables[v["name"]] = v.get("allValue") or ".+"
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = re.match(r"^\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*\w+\s*\)\s*$", q)
        if not m:
            bad.append("variable %s: not label_values(METRIC, LABEL): %r" % (v["name"], q))
        elif m.group(1) not in records:
            bad.append("variable %s: %s is not a recording rule of %s" % (v["name"], m.group(1), argv[2]))
        else:
            checks.append(("variable %s" % v["name"], m.group(1)))
    if ds_var is not None:
        variables[ds_var] = "x"

    ids = set()
    for p in panels_of(dash.get("panels", [])):
        where = "panel %r" % p.get("title")
        for key in ("id", "type", "title", "gridPos"):
            if key not in p:
                bad.append("%s: no %s" % (where, key))
        if p.get("id") in ids:
            bad.append("%s: id %s used twice" % (where, p.get("id")))
        ids.add(p.get("id"))
        for t in p.get("targets", []):
            tw = "%s target %s" % (where, t.get("refId"))
            if ds_var is not None and t.get("datasource", p.get("datasource", {})).get("uid") != "${%s}" % ds_var:
                bad.append("%s: datasource is not ${%s}" % (tw, ds_var))
            if "expr" not in t:
                bad.append("%s: no expr" % tw)
                continue
            try:
                expr = substitute(t["expr"], variables)
            except ValueError as e:
                bad.append("%s: %s" % (tw, e))
                continue
            for name in sorted(selected_names(expr)):
                if name not in records and name not in BUILTIN_SERIES:
                    bad.append("%s: %s is not a recording rule of %s" % (tw, name, os.path.basename(argv[2])))
            checks.append((tw, expr))
    if not checks:
        bad.append("no expressions found in %s" % argv[1])

    promtool = shutil.which("promtool")
    if promtool:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "grafana-exprs.yml")
            with open(path, "w", encoding="utf-8") as f:
                f.write("groups:\n  - name: grafana\n    rules:\n")
                for i, (_, expr) in enumerate(checks):
                    f.write("      - record: grafana_check:expr%d\n        expr: %s\n" % (i, json.dumps(expr)))
            r = subprocess.run([promtool, "check", "rules", path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
            if r.returncode != 0:
                bad.append("promtool check rules on the dashboard's expressions:\n" + r.stdout)
            else:
                print("promtool check rules: %d expressions parse" % len(checks))
    else:
        print("promtool not installed: offline parse check skipped")

    for where, expr in checks:
        if base is None:
            print("%s: %s" % (where, expr))
            continue
        ans = query(base, expr)
        if ans.get("status") != "success":
            kind = "parse error" if ans.get("errorType") == "bad_data" else ans.get("errorType")
            bad.append("%s: %s: %s (%s)" % (where, kind, ans.get("error"), expr))
            continue
        n = len(ans["data"]["result"])
        if n == 0:
            bad.append("%s: no series (%s)" % (where, expr))
            continue
        print("%s: %d series: %s" % (where, n, expr))

    for b in bad:
        print("FAIL " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
