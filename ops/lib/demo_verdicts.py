#!/usr/bin/env python3
"""ops/run --demo's view of `attest-worker submit`: one short line per verdict as it arrives, then a summary.

usage: attest-worker submit … | demo_verdicts.py STARTED_MS
STARTED_MS is when ops/run started (Unix milliseconds): each line shows the seconds since then, and the
summary says how long the first verdict and the last one took. Jobs of either platform: Apple's attestation
and assertion, Android's android_attestation and android_assertion (their verdicts name the package).
"""
import collections
import json
import sys
import time


def main():
    started = int(sys.argv[1]) / 1000
    first = None
    counts = collections.Counter()
    reasons = collections.Counter()
    android = 0
    for line in sys.stdin:
        try:
            verdict = json.loads(line)
        except ValueError:
            continue
        now = time.time() - started
        first = now if first is None else first
        risk = (verdict.get("deviceIntelligence") or {}).get("riskCategory")
        kind = verdict.get("kind") or "-"
        if kind.startswith("android_"):
            android += 1
        if verdict.get("ok"):
            counts["accepted"] += 1
            outcome = "accepted" + (f" (risk {risk})" if risk else "")
        else:
            counts["rejected"] += 1
            reasons[verdict.get("reason")] += 1
            outcome = f"REJECTED {verdict.get('code')}/{verdict.get('reason')}"
        print(f"{now:7.1f} s  {kind:<19} {verdict.get('jobId')}  {outcome}", flush=True)
    total = sum(counts.values())
    if first is None:
        print("demo: no verdict arrived", flush=True)
        return
    why = ", ".join(f"{reason} {n}" for reason, n in reasons.most_common())
    print(f"demo: {total} verdicts ({android} Android), {counts['accepted']} accepted, {counts['rejected']} rejected"
          f"{f' ({why})' if why else ''}; first verdict {first:.1f} s, last {time.time() - started:.1f} s after ops/run started",
          flush=True)


if __name__ == "__main__":
    main()
