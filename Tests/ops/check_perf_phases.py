#!/usr/bin/env python3
"""Checks ops/lib/perf_phases.py, which ops/profile splits its samples with.

- A made-up `perf script` output, one sample per case: the first phase whose symbol is in a chain wins
  (a check inside step 3 is a check); a sample outside both sides of a lane profile is left out; periods,
  not sample counts, are summed; ms per job divides by each side's jobs; a worker profile gives shares
  and ms per job from the CPU per job it is given.
- Every phase's symbol is defined in the built binaries, so a renamed function cannot move its phase
  into "other" unnoticed.

Usage: python3 Tests/ops/check_perf_phases.py PATH/TO/attest-worker PATH/TO/attest-bench
(exit 1 naming what failed)
"""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[2]
script = root / "ops/lib/perf_phases.py"
spec = importlib.util.spec_from_file_location("perf_phases", script)
perf_phases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(perf_phases)

LANE = "$s6Worker14BatchProcessorC7process_7timingsSayAA8OutboundVGSay12KafkaRecords0G7MessageVG_AA0B7TimingsVzt"
FINISH = "$s6Worker14BatchProcessorC6finish33_01AD4B4D5971F7170D84F76B1A08E6EDLL_3now"
CHECK = "$s10AttestJobs11JobVerifierV5checkyAC7CheckedVAA0C0V_AA0C11CheckInputsVtF"
GATHER = "$s5Store0A11TransactionC6gatheryAA8GatheredVAA13GatherRequestV14PostgresClient7PGErrorVYKF"
DECIDE_CLOSURE = "$s6Worker14BatchProcessorC6decide_3now10challenges_SayAC7DecidedVGSayAC8JobEntryVG_yXEfU_"
IN_PROCESS = "$s12attest_bench16PipelineWorkloadV15verifyInProcess_8verifier3app7threadsSi4jobs"
MINT = "$s12attest_bench16PipelineWorkloadV10mintDevice"


def sample(comm, period, *frames):
    return f"{comm} 8240 {period}\n" + "".join(f"\t{0x1000 + i:x} {f}+0x10\n" for i, f in enumerate(frames))


LANE_SCRIPT = "\n".join([
    sample("attest-bench", 400000, "EC_POINT_mul", CHECK, FINISH, LANE),     # a check in step 3: checks
    sample("attest-bench", 400000, "memcpy", FINISH, LANE),                  # token and JSON
    sample("attest-bench", 200000, "swift_retain", GATHER, LANE),            # gather
    sample("attest-bench", 200000, "swift_release", LANE),                   # rest of the batch
    sample("oot.default-qos", 100000, "EC_POINT_mul", CHECK, DECIDE_CLOSURE, "_dispatch_worker_thread"),  # the lane's, on another thread
    sample("attest-bench", 300000, "EC_POINT_mul", CHECK, IN_PROCESS),       # in-process checks
    sample("attest-bench", 100000, "malloc", IN_PROCESS),                    # in-process other
    sample("attest-bench", 900000, "EC_POINT_mul", MINT),                    # neither side: left out
    "garbage line without a header",
])

WORKER_SCRIPT = "\n".join([
    sample("batch-0", 300000, "EC_POINT_mul", CHECK, LANE),
    sample("rdk:broker1", 100000, "rd_kafka_transport_socket_recvmsg"),
    sample("kafka-poll", 100000, "poll"),
])

failures = []


def expect(what, got, want):
    if isinstance(want, float):
        ok = abs(got - want) < 1e-9
    else:
        ok = got == want
    if not ok:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def run(*args):
    out = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)
    return out.returncode, out.stdout, out.stderr


split = perf_phases.split(LANE_SCRIPT, two_sides=True)
expect("lane phases", split.get("lane"), {"checks": 500000, "token and JSON": 400000, "gather": 200000, "rest of the batch": 200000})
expect("in-process phases", split.get("in-process"), {"checks": 300000, "other": 100000})
expect("worker phases", perf_phases.split(WORKER_SCRIPT, two_sides=False).get("worker"),
       {"checks": 300000, "Kafka client": 100000, "other": 100000})

with tempfile.TemporaryDirectory() as tmp:
    lane = pathlib.Path(tmp, "lane.script")
    lane.write_text(LANE_SCRIPT)
    code, out, err = run(str(lane), "--lane-jobs", "2", "--in-process-jobs", "4", "--json")
    expect("lane exit status", code, 0)
    if code == 0:
        report = json.loads(out)
        rows = {row["phase"]: row for row in report["phases"]}
        expect("lane ms per job", report["lane"], 0.65)              # 1.3 ms over 2 jobs
        expect("in-process ms per job", report["inProcess"], 0.1)    # 0.4 ms over 4 jobs
        expect("checks' excess", rows["checks"]["excess"], 0.25 - 0.075)
        expect("phases in order", [row["phase"] for row in report["phases"]][:3], ["checks", "record", "message"])
    worker = pathlib.Path(tmp, "worker.script")
    worker.write_text(WORKER_SCRIPT)
    code, out, err = run(str(worker), "--cpu-ms-per-job", "0.2", "--json")
    expect("worker exit status", code, 0)
    if code == 0:
        rows = {row["phase"]: row for row in json.loads(out)["phases"]}
        expect("checks' share", rows["checks"]["share"], 0.6)
        expect("checks' ms per job", rows["checks"]["msPerJob"], 0.12)
    expect("one side's jobs alone is a usage error", run(str(lane), "--lane-jobs", "2")[0], 2)
    expect("a job count of 0 is a usage error", run(str(lane), "--lane-jobs", "0", "--in-process-jobs", "1")[0], 2)
    empty = pathlib.Path(tmp, "empty.script")
    empty.write_text("")
    expect("a worker profile with no samples fails", run(str(empty))[0], 1)

if len(sys.argv) != 3:
    print("usage: python3 Tests/ops/check_perf_phases.py PATH/TO/attest-worker PATH/TO/attest-bench", file=sys.stderr)
    sys.exit(2)
code, out, err = run("--check-symbols", sys.argv[1], sys.argv[2])
if code != 0:
    failures.append(f"phase symbols: {out.strip()} {err.strip()}")

for failure in failures:
    print(f"check_perf_phases.py: {failure}")
if failures:
    sys.exit(1)
print("check_perf_phases.py: the split and every phase symbol check out")
