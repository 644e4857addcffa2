#!/usr/bin/env python3
"""The vectors of Tests/Fixtures/vectors through the release binary's `attest-worker verify`.

usage: verify_vectors.py PATH/TO/attest-worker [VECTORS_DIR]

VectorTests runs the same cases through the library; this runs them through the command a user runs, so
the two paths cannot drift. Each case is turned into the job line a backend would send (docs/CONTRACT.md
section 2: `job(case)`, which the schema, token and fuzz-seed scripts import too); the cases that share a
clock, an environment policy and a trust anchor go through one `verify` process with those flags. A
verdict agrees when `ok` and `code` match and `reason` is the expected one (or one of its listed
alternatives); an accepted verdict must also report the expected environment, counter, public key and
extensions where the case names them. Prints each disagreement, then `vectors: N passed, M failed`;
exits 0 only when every case agrees, 2 on usage errors.
"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_VECTORS = os.path.normpath(os.path.join(HERE, "..", "Fixtures", "vectors"))
# Members of an accepted case's `expect` that the verdict must repeat.
ACCEPTED_MEMBERS = ("environment", "counter", "publicKey", "extensions")


def load(directories):
    """Every case of the *.jsonl files in `directories`, with `_anchors` (its trust anchors' PEMs)."""
    cases = []
    for directory in directories:
        with open(os.path.join(directory, "trust_anchors.json")) as f:
            anchors = json.load(f)
        for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
            with open(path) as f:
                for line in f:
                    case = json.loads(line)
                    case["_anchors"] = anchors[case["trust"]]
                    cases.append(case)
    return cases


def job(case):
    """The job line for a case: its verifyAt is the job's receivedAt; an assertion's stored device state
    travels as publicKey/previousCounter, which `verify` reads in place of the store."""
    line = {"jobId": case["name"], "kind": case["kind"], "teamId": case["teamId"], "bundleId": case["bundleId"],
            "keyId": case["keyId"], "clientDataHash": case["clientDataHash"], "receivedAt": case["verifyAt"]}
    if case["kind"] == "attestation":
        # Only a challenge the clientDataHash was built from is sent: the others are deliberately odd input.
        if case.get("challenge") is not None and case.get("clientDataHashMode") in ("sha256", "raw"):
            line["challenge"] = case["challenge"]
        line["attestationObject"] = case["attestationObject"]
    else:
        line["assertion"] = case["assertion"]
        if case.get("storedPublicKey"):
            line["publicKey"] = case["storedPublicKey"]
        line["previousCounter"] = case.get("storedCounter", 0)
    return line


def disagreement(case, verdict):
    """Why `verdict` is not what `case` expects, or None."""
    expect = case["expect"]
    if verdict is None:
        return "no verdict"
    if verdict.get("ok") is not expect["ok"]:
        return f"ok={verdict.get('ok')} ({verdict.get('code')}/{verdict.get('reason')}), expected ok={expect['ok']}"
    if not expect["ok"]:
        reasons = [expect["reason"], *expect.get("reasonAlternatives", [])]
        if verdict.get("code") != expect["code"] or verdict.get("reason") not in reasons:
            return f"{verdict.get('code')}/{verdict.get('reason')}, expected {expect['code']}/{'|'.join(reasons)}"
        return None
    for member in ACCEPTED_MEMBERS:
        if member in expect and verdict.get(member) != expect[member]:
            return f"{member} {verdict.get(member)!r}, expected {expect[member]!r}"
    return None


def run_group(binary, cases, folder):
    """One `verify` process for cases sharing verifyAt, environment and trust; verdicts by jobId."""
    first = cases[0]
    attestation_root = os.path.join(folder, first["trust"] + "-attestation.pem")
    receipt_root = os.path.join(folder, first["trust"] + "-receipt.pem")
    for path, pem in ((attestation_root, first["_anchors"]["attestationRoot"]),
                      (receipt_root, first["_anchors"]["receiptRoot"])):
        with open(path, "w") as f:
            f.write(pem)
    command = [binary, "verify", "--now", first["verifyAt"], "--environment", first["environment"],
               "--trust-anchor", attestation_root, "--receipt-trust-anchor", receipt_root]
    stdin = "".join(json.dumps(job(c)) + "\n" for c in cases)
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    return {v.get("jobId"): v for v in map(json.loads, done.stdout.splitlines())}


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    binary = sys.argv[1]
    cases = load([sys.argv[2] if len(sys.argv) == 3 else DEFAULT_VECTORS])
    groups = collections.defaultdict(list)
    for case in cases:
        groups[(case["verifyAt"], case["environment"], case["trust"])].append(case)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="vectors-") as folder:
        for group in groups.values():
            verdicts = run_group(binary, group, folder)
            for case in group:
                why = disagreement(case, verdicts.get(case["name"]))
                if why:
                    failed += 1
                    print(f"{case['name']}: {why}")
    print(f"vectors: {len(cases) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
