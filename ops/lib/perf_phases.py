#!/usr/bin/env python3
"""Splits a `perf script` of the worker, or of `attest-bench lane`, by phase of the batch path.

Reads `perf script -F comm,tid,period,ip,sym` output: samples whose call chains perf unwound from DWARF
(`perf record --call-graph dwarf`). A sample belongs to the first phase of PHASES whose symbol appears
anywhere in its chain, else to "other". The CPU of each phase is the sum of its samples' periods, so the
figures are CPU time, whatever the sampling frequency.

Two sides, for `attest-bench lane`: a sample is the lane's when its chain runs through the batch
processor's `process` or `decide` (on the threads a large batch is decided on with --threads above 1),
the in-process verification's when through `verifyInProcess`; the rest of that
process (minting jobs, setting up) is left out. With --lane-jobs and --in-process-jobs, each side's
phases are given in ms per job, and the lane's excess over the in-process side phase by phase. A
profile of the worker has one side: every sample is the worker's, given as a share of its CPU, and in ms
per job with --cpu-ms-per-job (the benchmark's figure for the worker over the same phase).

Usage: perf_phases.py SCRIPT [--lane-jobs N --in-process-jobs M] [--cpu-ms-per-job X] [--json]
       perf_phases.py --check-symbols BINARY...
The second form checks that every phase's symbol is defined in one of the binaries (exit 1 naming the
ones that are not): a renamed function would otherwise move its phase into "other" unnoticed.
"""
import json
import re
import subprocess
import sys

# (phase, substrings of the mangled names of the functions that mark it, what it is). The first match in
# a chain wins, so the checks come before the stage that calls them.
PHASES = [
    ("checks", ("10AttestJobs11JobVerifierV5check",), "the verification's check list (JobVerifier.check)"),
    ("record", ("10AttestJobs16RecordClassifierV8classify",), "reading the record (RecordClassifier)"),
    ("message", ("6Worker14BatchProcessorC8classify",), "the message's digest and its job entry"),
    ("token and JSON", ("6Worker14BatchProcessorC6finish", "10AttestJobs7VerdictV4json", "10AttestCore9JSONValueO10serialized"),
     "decide step 3: the token and the verdict's JSON"),
    ("quota, risk, counts", ("6Worker14BatchProcessorC6settle",), "decide step 2, in batch order"),
    ("ledger reads", ("6Worker14BatchProcessorC18intelligenceLedger",), "what the ledger reads after the gather"),
    ("intelligence query", ("6Worker14BatchProcessorC17intelligenceQuery",), "what the gather asks for"),
    ("gather", ("5Store0A11TransactionC6gather",), "the gather's statements, sent and decoded"),
    ("settle", ("5Store0A11TransactionC6settle",), "the settle's statements, sent and decoded"),
    ("rest of the batch", ("6Worker14BatchProcessorC7process",), "the batch's own bookkeeping and answers"),
    ("Kafka client", ("rd_kafka_",), "librdkafka's threads and calls"),
]
# The lane's samples run through `process` on its own thread, and through `decide` (its closures) on the
# threads it shares a large batch with.
LANE_SIDE = ("6Worker14BatchProcessorC7process", "6Worker14BatchProcessorC6decide")
IN_PROCESS_SIDE = "16PipelineWorkloadV15verifyInProcess"
HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<tid>\d+)\s+(?P<period>\d+)\s*$")


def samples(text):
    """(period in ns, chain as one string) for each sample of a `perf script` output."""
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        header = HEADER.match(lines[0])
        if not header:
            continue
        yield int(header["period"]), "\n".join(lines[1:])


def phase_of(chain):
    for name, symbols, _ in PHASES:
        if any(symbol in chain for symbol in symbols):
            return name
    return "other"


def split(text, two_sides):
    """{side: {phase: ns}}; sides "lane" and "in-process" when `two_sides`, else "worker"."""
    result = {}
    for period, chain in samples(text):
        if two_sides:
            if any(symbol in chain for symbol in LANE_SIDE):
                side = "lane"
            elif IN_PROCESS_SIDE in chain:
                side = "in-process"
            else:
                continue
        else:
            side = "worker"
        phases = result.setdefault(side, {})
        name = phase_of(chain)
        phases[name] = phases.get(name, 0) + period
    return result


def option(args, name, convert):
    if name not in args:
        return None
    i = args.index(name)
    if i + 1 >= len(args):
        usage(f"{name} needs a value")
    try:
        value = convert(args[i + 1])
    except ValueError:
        usage(f"{name}: not a number: {args[i + 1]}")
    if value <= 0:
        usage(f"{name} must be above 0")
    del args[i:i + 2]
    return value


def usage(message):
    print(f"perf_phases.py: {message}\n"
          "usage: perf_phases.py SCRIPT [--lane-jobs N --in-process-jobs M] [--cpu-ms-per-job X] [--json]\n"
          "       perf_phases.py --check-symbols BINARY...", file=sys.stderr)
    sys.exit(2)


def check_symbols(binaries):
    defined = set()
    for binary in binaries:
        out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True)
        if out.returncode != 0:
            usage(f"nm {binary} failed: {out.stderr.strip()}")
        defined.update(line.split()[-1] for line in out.stdout.splitlines() if line.strip())
    wanted = [(name, symbol) for name, symbols, _ in PHASES for symbol in symbols]
    wanted += [("lane side", symbol) for symbol in LANE_SIDE] + [("in-process side", IN_PROCESS_SIDE)]
    missing = [(name, symbol) for name, symbol in wanted if not any(symbol in s for s in defined)]
    for name, symbol in missing:
        print(f"perf_phases.py: no symbol holds {symbol!r} ({name}): rename it in ops/lib/perf_phases.py")
    if missing:
        sys.exit(1)
    print(f"perf_phases.py: all {len(wanted)} phase symbols found")


def main(args):
    if args[:1] == ["--check-symbols"]:
        if len(args) < 2:
            usage("--check-symbols needs at least one binary")
        check_symbols(args[1:])
        return
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    lane_jobs = option(args, "--lane-jobs", int)
    in_process_jobs = option(args, "--in-process-jobs", int)
    cpu_ms_per_job = option(args, "--cpu-ms-per-job", float)
    if len(args) != 1:
        usage("one perf script file, please")
    if (lane_jobs is None) != (in_process_jobs is None):
        usage("--lane-jobs and --in-process-jobs go together")
    with open(args[0], encoding="utf-8", errors="replace") as f:
        text = f.read()
    two_sides = lane_jobs is not None
    result = split(text, two_sides)
    names = list(dict.fromkeys(name for name, _, _ in PHASES)) + ["other"]
    if two_sides:
        jobs = {"lane": lane_jobs, "in-process": in_process_jobs}
        per_job = {side: {n: result.get(side, {}).get(n, 0) / 1e6 / jobs[side] for n in names} for side in jobs}
        report = {"unit": "ms per job", "phases": [
            {"phase": n, "lane": per_job["lane"][n], "inProcess": per_job["in-process"][n],
             "excess": per_job["lane"][n] - per_job["in-process"][n]} for n in names],
            "lane": sum(per_job["lane"].values()), "inProcess": sum(per_job["in-process"].values())}
        if as_json:
            print(json.dumps(report))
            return
        print(f"{'phase':<22}{'lane':>10}{'in-process':>12}{'excess':>10}   (ms of CPU per job)")
        for row in report["phases"]:
            print(f"{row['phase']:<22}{row['lane']:>10.4f}{row['inProcess']:>12.4f}{row['excess']:>10.4f}")
        print(f"{'all':<22}{report['lane']:>10.4f}{report['inProcess']:>12.4f}{report['lane'] - report['inProcess']:>10.4f}")
        return
    worker = result.get("worker", {})
    total = sum(worker.values())
    if total == 0:
        print("perf_phases.py: no samples", file=sys.stderr)
        sys.exit(1)
    rows = [{"phase": n, "share": worker.get(n, 0) / total,
             "msPerJob": worker.get(n, 0) / total * cpu_ms_per_job if cpu_ms_per_job else None} for n in names]
    if as_json:
        print(json.dumps({"samplesCpuSeconds": total / 1e9, "phases": rows}))
        return
    print(f"{'phase':<22}{'share':>8}{'ms/job':>10}   (of the worker's CPU; {total / 1e9:.2f} s sampled)")
    for row in rows:
        ms = f"{row['msPerJob']:>10.4f}" if row["msPerJob"] is not None else f"{'':>10}"
        print(f"{row['phase']:<22}{100 * row['share']:>7.1f}%{ms}")


if __name__ == "__main__":
    main(sys.argv[1:])
