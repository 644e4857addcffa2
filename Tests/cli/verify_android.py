#!/usr/bin/env python3
"""Android jobs through the built `attest-worker verify` (CONTRACT 9), as outside checks send them.

usage: verify_android.py PATH/TO/attest-worker
Every real device chain in Tests/Fixtures/android (Google's android/keyattestation test data, see its
PROVENANCE.md) is sent as an android_attestation job at a receivedAt inside its certificates' validity:
hardware-rooted chains are accepted with Google's expected facts, the software roots refused; then one
thing at a time is broken (challenge, package, signer, policy flags, status list, the clock). Android
assertions are signed by keys made here with the openssl command (EC P-256, RSA PKCS #1 v1.5 and PSS)
and refused when tampered, unknown or of a key kind this build cannot verify. Every job line and verdict
validates against Schemas/. Prints one line per failure and a closing count; exits 1 on any failure.
"""
import base64, glob, hashlib, http.server, json, os, re, subprocess, sys, tempfile, threading
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, '..', 'Fixtures', 'android')
sys.path.insert(0, os.path.join(HERE, '..', 'schemas'))
from validate import first_error  # noqa: E402


def certificates(path):
    blocks = re.findall(r'-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----', open(path).read(), re.S)
    return [''.join(b.split()) for b in blocks]


def not_before(b64):
    pem = '-----BEGIN CERTIFICATE-----\n' + b64 + '\n-----END CERTIFICATE-----\n'
    out = subprocess.run(['openssl', 'x509', '-noout', '-startdate', '-dateopt', 'iso_8601'], input=pem,
                         capture_output=True, text=True, check=True).stdout.strip()
    return datetime.strptime(out.split('=', 1)[1], '%Y-%m-%d %H:%M:%SZ').replace(tzinfo=timezone.utc)


def expected(name):
    path = os.path.join(FIXTURES, name + '.json')
    if not os.path.exists(path):
        return None
    return json.loads('\n'.join(l for l in open(path) if not l.strip().startswith('//')))


def rfc3339(t):
    return t.strftime('%Y-%m-%dT%H:%M:%SZ')


class Run:
    def __init__(self, binary):
        self.binary, self.failures, self.checks = binary, [], 0

    def check(self, condition, what):
        self.checks += 1
        if not condition:
            self.failures.append(what)

    def verify(self, jobs, now, *flags, schema_valid=True):
        for job in jobs if schema_valid else []:
            schema = 'android-attestation-job' if job['kind'] == 'android_attestation' else 'android-assertion-job'
            problem = first_error(schema, job)
            self.check(problem is None, f"job {job['jobId']}: {problem}")
        p = subprocess.run([self.binary, 'verify', '--now', rfc3339(now), '--max-job-age', '999999999', *flags],
                           input=''.join(json.dumps(j) + '\n' for j in jobs), capture_output=True, text=True, timeout=120)
        self.check(p.returncode == 0, f'verify {flags}: exit {p.returncode}: {p.stderr.strip()[:200]}')
        verdicts = {}
        for line in p.stdout.splitlines():
            v = json.loads(line)
            problem = first_error('verdict', v)
            self.check(problem is None, f"verdict {v.get('jobId')}: {problem}")
            verdicts[v['jobId']] = v
        return verdicts

    def expect(self, verdict, ok=True, reason=None, code='android_validation_failed'):
        if verdict is None:
            self.check(False, 'no verdict')
            return
        what = f"{verdict['jobId']}: {verdict.get('code')}/{verdict.get('reason')}"
        if ok:
            self.check(verdict['ok'] is True, what + ' want accepted')
        else:
            self.check(not verdict['ok'] and verdict.get('code') == code and verdict.get('reason') == reason,
                       f'{what} want {code}/{reason}')


def attestation_job(name):
    chain = certificates(os.path.join(FIXTURES, name + '.pem'))
    facts = expected(name)
    application = facts['softwareEnforced']['attestationApplicationId']
    job = {'jobId': name, 'kind': 'android_attestation', 'packageName': application['packages'][0]['name'],
           'certificateChain': chain, 'challenge': facts['attestationChallenge']}
    digests = [base64.b64decode(s).hex() for s in application.get('signatures', [])]
    if digests:
        job['signingCertificateDigests'] = digests
    # The latest notBefore between the leaf and the root (the leaf's validity is the device's and is not
    # checked): remote-provisioned intermediates last about a month.
    at = max(not_before(c) for c in chain[1:-1])
    job['receivedAt'] = rfc3339(at)
    return job, at, facts


def real_chains(run):
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(FIXTURES, '*.json')))
    devices = set()
    for name in names:
        job, at, facts = attestation_job(name)
        v = run.verify([job], at).get(name)
        if name.startswith('marlin'):
            run.expect(v, False, 'untrusted_root')
            continue
        run.expect(v)
        if not v or not v['ok']:
            continue
        devices.add(name.split('_')[0])
        android = v['android']
        run.check(v['keyId'] == base64.b64encode(hashlib.sha256(base64.b64decode(v['publicKey'])).digest()).decode(),
                  f'{name}: keyId is not the SHA-256 of publicKey')
        run.check(android['attestationSecurityLevel'].replace('_', '') == facts['attestationSecurityLevel'].replace('_', ''),
                  f'{name}: security level')
        run.check(str(android['attestationVersion']) == facts['attestationVersion'], f'{name}: attestationVersion')
        hardware = facts['hardwareEnforced']
        for key in ('osVersion', 'osPatchLevel', 'vendorPatchLevel', 'bootPatchLevel'):
            want = hardware.get(key)
            run.check((str(android[key]) if android[key] is not None else None) == want, f'{name}: {key}')
        root = hardware['rootOfTrust']
        run.check(android['deviceLocked'] == root['deviceLocked'], f'{name}: deviceLocked')
        run.check(android['verifiedBootState'] == root['verifiedBootState'], f'{name}: verifiedBootState')
        # One second before the youngest certificate between the leaf and the root was issued: not yet valid.
        job['jobId'], job['receivedAt'] = name + '-early', rfc3339(at - timedelta(seconds=1))
        run.expect(run.verify([job], at - timedelta(seconds=1)).get(job['jobId']), False, 'certificate_expired')
    run.check(len(devices) >= 3, f'accepted chains from {sorted(devices)}: want at least three devices')


def one_thing_broken(run):
    base, at, _ = attestation_job('caiman_sdk36_TEE_EC_RKP')  # a locked, VERIFIED Pixel 9 Pro under RKP

    def variant(suffix, **changes):
        job = dict(base, jobId='caiman-' + suffix)
        job.update(changes)
        return job

    chain = base['certificateChain']
    jobs = [
        variant('ok'),
        variant('challenge', challenge=base64.b64encode(b'another challenge').decode()),
        variant('package', packageName='com.example.other'),
        variant('signer', signingCertificateDigests=['00' * 32]),
        variant('signer-colons', signingCertificateDigests=[':'.join(re.findall('..', base['signingCertificateDigests'][0].upper()))]),
        variant('root-dropped', certificateChain=chain[:-1]),
        variant('reversed', certificateChain=list(reversed(chain))),
        variant('one', certificateChain=chain[:1]),
        variant('garbage', certificateChain=[chain[0], base64.b64encode(b'\x30\x03\x02\x01\x01').decode()] + chain[2:]),
        variant('not-base64', certificateChain=['***'] + chain[1:]),
        variant('challenge-not-base64', challenge='not base64!'),
    ]
    v = run.verify(jobs[:7], at)
    v.update(run.verify(jobs[7:], at, schema_valid=False))  # jobs the schema itself refuses
    run.expect(v.get('caiman-ok'))
    run.expect(v.get('caiman-challenge'), False, 'challenge_mismatch')
    run.expect(v.get('caiman-package'), False, 'package_name_mismatch')
    run.expect(v.get('caiman-signer'), False, 'signing_certificate_mismatch')
    run.expect(v.get('caiman-signer-colons'))
    run.expect(v.get('caiman-root-dropped'), False, 'untrusted_root')
    run.expect(v.get('caiman-reversed'), False, 'certificate_chain_invalid')
    run.expect(v.get('caiman-one'), False, 'missing_certificates', 'attestation_object_invalid')
    run.expect(v.get('caiman-garbage'), False, 'malformed_certificate', 'attestation_object_invalid')
    run.expect(v.get('caiman-not-base64'), False, 'malformed_base64', 'attestation_object_invalid')
    run.expect(v.get('caiman-challenge-not-base64'), False, 'malformed_base64', 'challenge_invalid')

    # Policy flags: the locked, VERIFIED TEE device passes verified boot and the patch minimum it meets,
    # fails StrongBox and a later patch minimum; an unlocked device fails verified boot.
    ok = [variant('policy')]
    run.expect(run.verify(ok, at, '--android-require-verified-boot', '--android-min-patch-level', '202511').get('caiman-policy'))
    run.expect(run.verify(ok, at, '--android-require-strongbox').get('caiman-policy'), False, 'security_level_insufficient')
    run.expect(run.verify(ok, at, '--android-min-patch-level', '202512').get('caiman-policy'), False, 'os_outdated')
    run.expect(run.verify(ok, at, '--android-min-os-version', '170000').get('caiman-policy'), False, 'os_outdated')
    unlocked, unlocked_at, _ = attestation_job('akita_sdk34_TEE_EC_NONE')
    run.expect(run.verify([unlocked], unlocked_at, '--android-require-verified-boot').get(unlocked['jobId']), False,
               'boot_state_unverified')
    accepted = run.verify([unlocked], unlocked_at).get(unlocked['jobId'])
    run.expect(accepted)
    factors = {f['name'] for f in (accepted or {}).get('deviceIntelligence', {}).get('factors', [])}
    run.check({'bootloader_unlocked', 'boot_unverified'} <= factors, f'unlocked device factors: {factors}')

    # The status list: the remote-provisioned intermediate's serial, as Google writes serials.
    pem = '-----BEGIN CERTIFICATE-----\n' + chain[1] + '\n-----END CERTIFICATE-----\n'
    serial = subprocess.run(['openssl', 'x509', '-noout', '-serial'], input=pem, capture_output=True, text=True,
                            check=True).stdout.strip().split('=', 1)[1]
    listed = json.dumps({'entries': {format(int(serial, 16), 'x'): {'status': 'REVOKED', 'reason': 'KEY_COMPROMISE'}}}).encode()
    with tempfile.NamedTemporaryFile('wb', suffix='.json') as f:
        f.write(listed)
        f.flush()
        run.expect(run.verify(ok, at, '--android-status-list', f.name).get('caiman-policy'), False, 'certificate_revoked')

    # The same list fetched with `status-list fetch` from a local stand-in of Google's endpoint; what is
    # not a status list, or not a 200, leaves the file as it was.
    bodies = {'/status': (200, listed), '/garbage': (200, b'{"entries": {"not hex": {}}}'), '/gone': (404, b'')}

    class StandIn(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, body = bodies.get(self.path, (404, b''))
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f'http://127.0.0.1:{server.server_address[1]}'
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'status.json')
            p = subprocess.run([run.binary, 'status-list', 'fetch', '--url', base + '/status', '--out', out],
                               capture_output=True, text=True, timeout=60)
            run.check(p.returncode == 0 and 'with 1 entries' in p.stderr, f'status-list fetch: {p.returncode} {p.stderr.strip()}')
            run.check(open(out, 'rb').read() == listed, 'status-list fetch: the file is not the list served')
            run.expect(run.verify(ok, at, '--android-status-list', out).get('caiman-policy'), False, 'certificate_revoked')
            for path in ('/garbage', '/gone', '/missing'):
                p = subprocess.run([run.binary, 'status-list', 'fetch', '--url', base + path, '--out', out],
                                   capture_output=True, text=True, timeout=60)
                run.check(p.returncode == 2 and p.stdout == '' and len(p.stderr.strip().splitlines()) == 1,
                          f'status-list fetch {path}: exit {p.returncode}, {p.stderr.strip()!r}')
                run.check(open(out, 'rb').read() == listed, f'status-list fetch {path}: the file changed')
    finally:
        server.shutdown()


def openssl(*args, data=None):
    return subprocess.run(['openssl', *args], input=data, capture_output=True, check=True).stdout


def assertions(run):
    now = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        keys = {}
        for kind, generate in (('ec', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']),
                               ('rsa', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']),
                               ('ed25519', ['genpkey', '-algorithm', 'ED25519'])):
            path = os.path.join(tmp, kind + '.pem')
            open(path, 'wb').write(openssl(*generate))
            keys[kind] = (path, openssl('pkey', '-in', path, '-pubout', '-outform', 'DER'))
        challenge = 'c-7f3a9b2e'
        client_data = json.dumps({'path': '/v1/orders', 'challenge': challenge}).encode()
        data_path = os.path.join(tmp, 'data')
        open(data_path, 'wb').write(client_data)

        def job(name, kind, signature, data=client_data, key=True, **changes):
            spki = keys[kind][1]
            j = {'jobId': name, 'kind': 'android_assertion', 'packageName': 'com.example.app',
                 'keyId': base64.b64encode(hashlib.sha256(spki).digest()).decode(),
                 'signature': base64.b64encode(signature).decode(), 'clientData': base64.b64encode(data).decode(),
                 'challenge': challenge, 'receivedAt': rfc3339(now)}
            if key:
                j['publicKey'] = base64.b64encode(spki).decode()
            j.update(changes)
            return j

        ec = openssl('dgst', '-sha256', '-sign', keys['ec'][0], data_path)
        pkcs1 = openssl('dgst', '-sha256', '-sign', keys['rsa'][0], data_path)
        pss = openssl('dgst', '-sha256', '-sign', keys['rsa'][0], '-sigopt', 'rsa_padding_mode:pss', data_path)
        tampered = bytearray(client_data)
        tampered[0] ^= 1
        jobs = [
            job('ec', 'ec', ec), job('rsa-pkcs1', 'rsa', pkcs1), job('rsa-pss', 'rsa', pss),
            job('ec-tampered', 'ec', ec, data=bytes(tampered)),
            job('ec-other-key', 'ec', pkcs1),
            job('ec-unknown', 'ec', ec, key=False),
            job('ec-challenge', 'ec', ec, challenge='c-another'),
            job('ec-keyid', 'ec', ec, keyId=base64.b64encode(b'\1' * 32).decode()),
            job('ed25519', 'ed25519', b'\0' * 64),
        ]
        v = run.verify(jobs, now)
        for name in ('ec', 'rsa-pkcs1', 'rsa-pss'):
            run.expect(v.get(name))
        run.expect(v.get('ec-tampered'), False, 'signature_invalid', 'assertion_invalid')
        run.expect(v.get('ec-other-key'), False, 'signature_invalid', 'assertion_invalid')
        run.expect(v.get('ec-unknown'), False, 'unknown_key', 'reattest_required')
        run.expect(v.get('ec-challenge'), False, 'challenge_mismatch', 'client_data_hash_invalid')
        run.expect(v.get('ec-keyid'), False, 'key_id_mismatch', 'key_id_invalid')
        run.expect(v.get('ed25519'), False, 'unsupported_key_algorithm')


def main():
    run = Run(sys.argv[1])
    real_chains(run)
    one_thing_broken(run)
    assertions(run)
    for failure in run.failures:
        print('verify android:', failure)
    print(f'verify android: {run.checks - len(run.failures)} passed, {len(run.failures)} failed')
    sys.exit(1 if run.failures else 0)


if __name__ == '__main__':
    main()
