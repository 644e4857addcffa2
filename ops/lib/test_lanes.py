#!/usr/bin/env python3
"""Runs test suites of the package's test binary in parallel lanes (ops/test).

usage: test_lanes.py --binary XCTEST --phase NAME --lanes N --results DIR [--filter REGEX]... [--skip REGEX]

The tests are those the binary lists (Swift Testing) whose id matches every --filter and not --skip
(Python regular expressions, searched). They are grouped by suite (the id up to its last `/`) and handed out one
suite at a time, the suites with most tests first, to N lanes: each lane runs one suite after another
as its own process of the binary, so a lane never waits for a slower one to finish a share fixed in
advance. Each lane has a PostgreSQL schema of its own (ATTEST_DATABASE_URL with that search_path,
created empty and migrated), and the tests make their own topics, groups and apps: lanes see nothing of each other.
Suites run through the binary itself, not `swift test`, which locks the build folder per invocation.

Each suite writes DIR/PHASE.SUITE.xml (xunit, per-test times, read by test_report.py) and its output to
DIR/PHASE.SUITE.log; a failing suite's failures and the end of its output are printed. Exit status 1
when any suite failed or no test matched.
"""
import argparse
import os
import queue
import re
import subprocess
import sys
import threading
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--phase", required=True)
    parser.add_argument("--lanes", type=int, required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--filter", action="append", default=[])
    parser.add_argument("--skip")
    args = parser.parse_args()

    listed = subprocess.run([args.binary, "--testing-library", "swift-testing", "--list-tests"],
                            capture_output=True, text=True, check=True).stdout.split()
    tests = [t for t in listed
             if all(re.search(f, t) for f in args.filter) and not (args.skip and re.search(args.skip, t))]
    if not tests:
        print(f"[lanes] {args.phase}: no test matches", file=sys.stderr)
        return 1
    suites = {}
    for test in tests:
        suites.setdefault(test.rsplit("/", 1)[0], []).append(test)
    work = queue.Queue()
    for suite in sorted(suites, key=lambda s: (-len(suites[s]), s)):
        work.put(suite)
    lanes = max(1, min(args.lanes, len(suites)))
    os.makedirs(args.results, exist_ok=True)
    base = os.environ["ATTEST_DATABASE_URL"]
    failed, lock = [], threading.Lock()
    started = time.monotonic()

    def lane(index):
        schema = f"itest_{re.sub(r'[^a-z0-9]', '_', args.phase.lower())}_{index}"
        subprocess.run(["psql", base, "-qAtc", f"SET client_min_messages = warning; DROP SCHEMA IF EXISTS {schema} CASCADE; "
                        f"CREATE SCHEMA {schema}"], check=True, stdout=subprocess.DEVNULL)
        env = dict(os.environ)
        env["ATTEST_DATABASE_URL"] = base + ("&" if "?" in base else "?") + f"options=-c%20search_path%3D{schema}"
        # Migrated, as the shared schema is by the time tests reach it: a test may read a table first.
        worker = os.path.join(os.environ.get("ITEST_BIN_DIR") or os.path.dirname(args.binary), "attest-worker")
        subprocess.run([worker, "migrate"], check=True, env=env, stdout=subprocess.DEVNULL)
        while True:
            try:
                suite = work.get_nowait()
            except queue.Empty:
                return
            name = f"{args.phase}.{suite.split('.', 1)[-1].replace('/', '.')}"
            # Exactly this suite's tests: an alternation of their ids, escaped, from the start (each ends in its
            # parameter list, so none is a prefix of another's).
            pattern = "^(?:" + "|".join(re.escape(t) for t in suites[suite]) + ")"
            begun = time.monotonic()
            with open(os.path.join(args.results, name + ".log"), "w") as log:
                status = subprocess.run(
                    [args.binary, "--testing-library", "swift-testing", "--filter", pattern,
                     "--xunit-output", os.path.join(args.results, name + ".xml")],
                    stdout=log, stderr=subprocess.STDOUT, env=env).returncode
            took = time.monotonic() - begun
            with lock:
                print(f"[lanes] {args.phase} lane {index}: {suite} ({len(suites[suite])} tests) "
                      f"{'passed' if status == 0 else 'FAILED'} in {took:.0f} s", flush=True)
                if status != 0:
                    failed.append(name)

    threads = [threading.Thread(target=lane, args=(i,)) for i in range(1, lanes + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"[lanes] {args.phase}: {len(tests)} tests in {len(suites)} suites, {lanes} lanes, "
          f"{time.monotonic() - started:.0f} s", flush=True)
    for name in failed:
        with open(os.path.join(args.results, name + ".log"), errors="replace") as log:
            lines = log.read().splitlines()
        issues = [line for line in lines if "✘" in line]
        print(f"---- {name}: {len(issues)} failure lines, then the last 60 lines of its output", file=sys.stderr)
        print("\n".join(issues[:80] + ["...."] + lines[-60:]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
