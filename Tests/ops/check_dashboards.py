#!/usr/bin/env python3
"""Checks ops/grafana/*.json and ops/prometheus/alerts.yml against the code and the runbook.

- the dashboard JSON and the rules YAML parse, every panel has a query, panel ids are unique;
- every attest_* series a query or rule names is one the worker registers (Sources/**/*.swift:
  registry.counter/gauge/histogram("name", ...); histograms as name_bucket, name_sum, name_count);
- every alert has severity, summary and runbook annotations, and ops/RUNBOOK.md has a section for it;
- every alert has a promtool unit test in ops/prometheus/alerts_test.yml where it fires and one where it
  does not (promtool runs them in ops/test).

Usage: python3 Tests/ops/check_dashboards.py [REPOSITORY]   (exit 1 with one line per problem)
"""
import json
import pathlib
import re
import sys

import yaml

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
problems = []

# Metric families the code registers.
registration = re.compile(r'\.(counter|gauge|histogram)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"')
series = set()
for source in (root / "Sources").rglob("*.swift"):
    for kind, name in registration.findall(source.read_text(encoding="utf-8")):
        series.update([name + suffix for suffix in ("_bucket", "_sum", "_count")] if kind == "histogram" else [name])
if not series:
    problems.append("no metric registrations found under Sources/")

metric = re.compile(r'\battest_[a-z0-9_]+')


def check_expr(where, expr):
    if not isinstance(expr, str) or not expr.strip():
        problems.append(f"{where}: empty query")
        return
    # Label values ("attest-worker") are not metric names; the pattern only matches attest_ identifiers.
    for name in sorted(set(metric.findall(re.sub(r'"[^"]*"', '""', expr)))):
        if name not in series:
            problems.append(f"{where}: {name} is not a metric the worker exports")


# Dashboards.
for path in sorted((root / "ops/grafana").glob("*.json")):
    try:
        dashboard = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        problems.append(f"{path.relative_to(root)}: not JSON: {error}")
        continue
    panels = []
    for panel in dashboard.get("panels", []):
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    ids = [p.get("id") for p in panels]
    if len(ids) != len(set(ids)):
        problems.append(f"{path.relative_to(root)}: duplicate panel ids")
    for panel in panels:
        if panel.get("type") == "row":
            continue
        where = f"{path.relative_to(root)}: panel {panel.get('title')!r}"
        targets = panel.get("targets") or []
        if not targets:
            problems.append(f"{where}: no queries")
        for target in targets:
            check_expr(where, target.get("expr"))

# Alert rules and the runbook.
rules_path = root / "ops/prometheus/alerts.yml"
runbook_path = root / "ops/RUNBOOK.md"
runbook = runbook_path.read_text(encoding="utf-8") if runbook_path.exists() else ""
sections = set(re.findall(r'^## (\S+)\s*$', runbook, flags=re.M))
try:
    rules = yaml.safe_load(rules_path.read_text(encoding="utf-8"))
except (OSError, yaml.YAMLError) as error:
    problems.append(f"{rules_path.relative_to(root)}: {error}")
    rules = {"groups": []}
alerts = []
for group in rules.get("groups", []):
    for rule in group.get("rules", []):
        name = rule.get("alert") or rule.get("record")
        where = f"{rules_path.relative_to(root)}: {name}"
        check_expr(where, rule.get("expr"))
        if "alert" not in rule:
            continue
        alerts.append(name)
        if rule.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
            problems.append(f"{where}: severity must be critical, warning or info")
        annotations = rule.get("annotations", {})
        if not annotations.get("summary"):
            problems.append(f"{where}: no summary annotation")
        if annotations.get("runbook") != f"ops/RUNBOOK.md#{name.lower()}":
            problems.append(f"{where}: runbook annotation must be ops/RUNBOOK.md#{name.lower()}")
        if name not in sections:
            problems.append(f"{where}: ops/RUNBOOK.md has no '## {name}' section")
if len(alerts) != len(set(alerts)):
    problems.append(f"{rules_path.relative_to(root)}: duplicate alert names")
# Sections named like alerts must belong to one (a renamed or removed alert); others (Housekeeping) may stay.
for section in sorted(s for s in sections - set(alerts) if s.startswith("Attest")):
    problems.append(f"ops/RUNBOOK.md: section {section} has no alert")

# Unit tests: each alert both fired and held back by some evaluation.
tests_path = root / "ops/prometheus/alerts_test.yml"
try:
    unit_tests = yaml.safe_load(tests_path.read_text(encoding="utf-8")) or {}
except (OSError, yaml.YAMLError) as error:
    problems.append(f"{tests_path.relative_to(root)}: {error}")
    unit_tests = {}
fired, quiet = set(), set()
for test in unit_tests.get("tests") or []:
    for case in test.get("alert_rule_test") or []:
        (fired if case.get("exp_alerts") else quiet).add(case.get("alertname"))
for name in alerts:
    if name not in fired:
        problems.append(f"{tests_path.relative_to(root)}: no test where {name} fires")
    if name not in quiet:
        problems.append(f"{tests_path.relative_to(root)}: no test where {name} does not fire")
for name in sorted((fired | quiet) - set(alerts), key=str):
    problems.append(f"{tests_path.relative_to(root)}: tests {name}, which is no alert")

for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"dashboards and {len(alerts)} alerts use only exported metrics ({len(series)} series names); runbook complete")
