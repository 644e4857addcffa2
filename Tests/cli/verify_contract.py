#!/usr/bin/env python3
"""The `attest-worker verify` command contract (README, CONTRACT 6/7) checked on the built binary.

usage: verify_contract.py PATH/TO/attest-worker PATH/TO/attest-bench
A line that is not JSON gets a job_invalid verdict and the run continues; blank lines are skipped; only
verdicts reach stdout, in order; usage and I/O errors exit 2 with one line on stderr; --help exits 0. The
benchmarks are attest-bench's: its commands answer --help, and `attest-worker bench` points to it.
"""
import json, subprocess, sys, tempfile

def run(binary, args, stdin=''):
    return subprocess.run([binary] + args, input=stdin, capture_output=True, text=True, timeout=60)

def main():
    binary, bench = sys.argv[1], sys.argv[2]
    failures = []
    def check(cond, what):
        if not cond:
            failures.append(what)

    p = run(binary, ['verify', '--now', '2026-05-01T12:00:00Z'],
            'not json\n\n{"jobId":"j2","kind":"attestation"}\n{"jobId":"j3","receivedAt":"2026-05-01T12:00:00Z"}\n')
    lines = p.stdout.splitlines()
    check(p.returncode == 0, f'exit {p.returncode} for processed lines')
    check(len(lines) == 3, f'{len(lines)} verdict lines for 3 jobs and a blank line')
    verdicts = [json.loads(l) for l in lines]
    check(verdicts[0]['jobId'] is None and verdicts[0]['code'] == 'job_invalid', 'non-JSON line verdict')
    check(verdicts[1]['jobId'] == 'j2' and verdicts[1]['reason'] == 'missing_field', 'missing field verdict')
    check(verdicts[2]['jobId'] == 'j3' and verdicts[2]['ok'] is False, 'order kept')

    for args in (['verify', '--environment', 'bogus'], ['verify', '--now', 'yesterday'], ['verify', '/nonexistent/jobs'],
                 ['verify', '--trust-anchor', '/nonexistent.pem'], ['verify', '--bogus'], ['nosuchcommand']):
        p = run(binary, args)
        check(p.returncode == 2, f'{args}: exit {p.returncode}, want 2')
        check(p.stdout == '', f'{args}: wrote to stdout')
        check(len(p.stderr.strip().splitlines()) == 1, f'{args}: stderr is not one line: {p.stderr!r}')

    for args in (['verify', '--help'], ['help']):
        p = run(binary, args)
        check(p.returncode == 0 and 'usage' in p.stdout, f'{args}: no usage text')
    for args in (['core', '--help'], ['pipeline', '--help'], ['soak', '--help'], ['demo-jobs', '--help'], ['help']):
        p = run(bench, args)
        check(p.returncode == 0 and 'usage' in p.stdout, f'attest-bench {args}: no usage text')
    for program, args in ((binary, ['bench', '--help']), (binary, ['bench', 'core']), (bench, ['nosuchcommand']),
                          (bench, ['core', '--bogus'])):
        p = run(program, args)
        check(p.returncode == 2 and p.stdout == '' and len(p.stderr.strip().splitlines()) == 1,
              f'{program} {args}: exit {p.returncode}, want 2 with one line on stderr')
        if program == binary:
            check('attest-bench' in p.stderr, f'{args}: does not point to attest-bench: {p.stderr!r}')

    with tempfile.NamedTemporaryFile('w', suffix='.jsonl') as f:
        f.write('{"jobId":"from-file"}\n')
        f.flush()
        p = run(binary, ['verify', f.name])
        check(p.returncode == 0 and json.loads(p.stdout)['jobId'] == 'from-file', 'FILE argument')

    for failure in failures:
        print('verify contract:', failure)
    print(f'verify contract: {"ok" if not failures else f"{len(failures)} failures"}')
    sys.exit(1 if failures else 0)

if __name__ == '__main__':
    main()
