#!/usr/bin/env python3
"""ops/test's closing table: where the time went.

usage: test_report.py STEPS_FILE RESULTS_DIR SOURCES_DIR

STEPS_FILE holds `EPOCH<TAB>NAME` lines, one per step start (an empty NAME ends the last step);
RESULTS_DIR the xunit files of the test phases (test_lanes.py's PHASE.SUITE.xml, unit.xml); SOURCES_DIR
the integration tests, whose `// waits: REASON` comments say what a test waits for beyond the work it
checks (a window the behaviour needs, a timeout it must outlast). Prints each step's time, the ten slowest
integration tests, and every integration test over 5 s with its reasons ("-" when it has none: its time is
its work).
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

SLOW_SECONDS = 5


def steps(path):
    marks = []
    with open(path) as f:
        for line in f:
            when, _, name = line.rstrip("\n").partition("\t")
            marks.append((float(when), name))
    rows = []
    for (start, name), (end, _) in zip(marks, marks[1:]):
        if name:
            rows.append((name, end - start))
    return rows


def tests(directory):
    """(seconds, phase, id) for every test case in the xunit files."""
    found = []
    for path in sorted(glob.glob(os.path.join(directory, "*.xml"))):
        phase = os.path.basename(path).split(".", 1)[0]
        try:
            root = ElementTree.parse(path).getroot()
        except ElementTree.ParseError:
            continue
        for case in root.iter("testcase"):
            found.append((float(case.get("time", "0")), phase, f"{case.get('classname')}/{case.get('name')}"))
    return found


def waits(directory):
    """Test function name -> the reasons its `// waits:` comments give."""
    reasons = {}
    for path in glob.glob(os.path.join(directory, "*.swift")):
        current, marked = None, False
        with open(path) as f:
            for line in f:
                marked = marked or "@Test" in line
                declared = re.search(r"\bfunc (\w+)\(", line)
                if declared:
                    # A test function, or a helper: a helper's waits are its callers' to name.
                    current, marked = (declared.group(1) if marked else None), False
                comment = re.search(r"// waits: (.+)$", line)
                if comment and current:
                    reasons.setdefault(current, []).append(comment.group(1).strip())
    return reasons


def main():
    steps_file, results, sources = sys.argv[1:4]
    print("\n==== where the time went")
    rows = steps(steps_file)
    width = max([len(name) for name, _ in rows] + [4])
    for name, seconds in rows:
        print(f"  {name:<{width}}  {seconds:7.1f} s")
    print(f"  {'total':<{width}}  {sum(s for _, s in rows):7.1f} s")
    # The unit tests run in one process, many at once, so their times include waiting for each other: only
    # the integration phases (one test at a time per lane) have times that are a test's own.
    found = [t for t in tests(results) if t[1] != "unit"]
    if not found:
        return
    print("\n  slowest tests:")
    for seconds, phase, test in sorted(found, reverse=True)[:10]:
        print(f"  {seconds:7.1f} s  {phase:<10} {test}")
    reasons = waits(sources)
    slow = sorted((t for t in found if t[0] > SLOW_SECONDS), reverse=True)
    print(f"\n  tests over {SLOW_SECONDS} s ({len(slow)}) and what they wait for beyond their work:")
    for seconds, phase, test in slow:
        name = re.sub(r"\(.*$", "", test.rsplit("/", 1)[-1])
        print(f"  {seconds:7.1f} s  {phase:<10} {test}: {'; '.join(reasons.get(name, ['-']))}")


if __name__ == "__main__":
    main()
