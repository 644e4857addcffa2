#!/usr/bin/env python3
"""Verdict tokens (CONTRACT 2, 6, 7) checked on the built binary with a standard JWT library (PyJWT).

usage: test_tokens.py PATH/TO/attest-worker

Keys come from `openssl` (PKCS#8 and SEC1); accepted vector lines go through `attest-worker verify
--token-key` exactly as Tests/cli/verify_vectors.py builds them. Each token must verify with PyJWT
against the PEM public key and against the JWKS from `attest-worker token jwks` (kids are RFC 7638
thumbprints), carry the documented claims (subjectId from the job), and `attest-worker token verify` must answer 0 for a good
token and 1 with the reason for a changed signature byte, a high-S signature (every issued one is low-S),
a wrong audience or issuer, an expired token (0 with --ignore-expiry), an unknown key and `alg: none`;
usage errors exit 2 with one line on stderr. Limited-use tokens (a job with "limitedUse": true) verify with
PyJWT too and carry the claim and a jti of their own, the rest as the ordinary token.
Verdicts carrying tokens must match Schemas/verdict.schema.json.
Exits 0 when everything holds, 1 otherwise, 2 when PyJWT, python3-jsonschema or openssl is missing.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

try:
    import jwt
except ImportError:
    print("test_tokens: PyJWT is missing (Debian: apt-get install python3-jwt)", file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.normpath(os.path.join(HERE, "..", "Fixtures", "vectors"))
# P-256's group order: s and n - s both verify, so the worker issues s <= n/2 only.
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "schemas"))
import verify_vectors  # noqa: E402  (job lines exactly as the vector runner builds them)
import validate  # noqa: E402  (verdict.schema.json stays the source of truth for token and expiresAt)

failures = []
checks = [0]


def check(condition, what):
    checks[0] += 1
    if not condition:
        failures.append(what)
    return condition


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def run(binary, args, stdin=""):
    return subprocess.run([binary] + args, input=stdin, capture_output=True, text=True, timeout=120)


def openssl(*args, stdin=None):
    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, check=True).stdout


def make_keys(tmp):
    """current: PKCS#8 (the pipeline in the README); retired: SEC1, as `ecparam -genkey` writes it."""
    sec1 = openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout")
    current = openssl("pkcs8", "-topk8", "-nocrypt", stdin=openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout"))
    p384 = openssl("ecparam", "-name", "secp384r1", "-genkey", "-noout")
    paths = {}
    for name, pem in (("current", current), ("retired", sec1), ("p384", p384)):
        paths[name] = os.path.join(tmp, name + ".pem")
        open(paths[name], "wb").write(pem)
        if name != "p384":
            paths[name + ".pub"] = os.path.join(tmp, name + ".pub.pem")
            open(paths[name + ".pub"], "wb").write(openssl("pkey", "-pubout", "-in", paths[name]))
    return paths


def accepted_cases():
    """The valid production attestation and the first accepted assertion of the synthetic vectors."""
    cases = verify_vectors.load([VECTORS])
    picked = [c for c in cases if c["name"] == "att_valid_production"]
    picked += [c for c in cases if c["kind"] == "assertion" and c["expect"]["ok"]][:1]
    check(len(picked) == 2, f"expected an accepted attestation and assertion vector, found {len(picked)}")
    return picked


def verify_lines(binary, tmp, cases, *flags, extra=None):
    """Runs `verify` on the cases (one process per trust/environment), returning verdicts by jobId; `extra`
    members are added to every job."""
    verdicts = {}
    for c in cases:
        anchors = c["_anchors"]
        att, rec = os.path.join(tmp, "att.pem"), os.path.join(tmp, "rec.pem")
        open(att, "w").write(anchors["attestationRoot"])
        open(rec, "w").write(anchors["receiptRoot"])
        job = verify_vectors.job(c)
        if c["kind"] == "attestation":
            job["deviceId"] = "device-" + c["name"]
        job["subjectId"] = "subject-" + c["name"]
        job.update(extra or {})
        p = run(binary, ["verify", "--environment", c["environment"], "--trust-anchor", att,
                         "--receipt-trust-anchor", rec, *flags], json.dumps(job) + "\n")
        check(p.returncode == 0, f"verify {flags}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
        for line in p.stdout.splitlines():
            v = json.loads(line)
            verdicts[v["jobId"]] = v
    return verdicts


def rfc3339(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def thumbprint(jwk):
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def token_verify(binary, jwks_path, token, *flags):
    return run(binary, ["token", "verify", "--jwks", jwks_path, *flags, token])


def test_tokens(binary, tmp):
    keys = make_keys(tmp)
    cases = accepted_cases()
    # No --now: tokens are issued at the real time so PyJWT checks exp against its own clock; the job
    # bounds are opened wide because the vectors' receivedAt is fixed.
    live = ["--max-job-age", "3153600000", "--max-future-skew", "3153600000"]
    verdicts = verify_lines(binary, tmp, cases, *live, "--token-key", keys["current"], "--token-key", keys["retired"],
                            "--token-lifetime", "900")

    p = run(binary, ["token", "jwks", "--key", keys["current"], "--key", keys["retired"]])
    check(p.returncode == 0, f"token jwks: exit {p.returncode}: {p.stderr.strip()}")
    jwks = json.loads(p.stdout)
    jwks_path = os.path.join(tmp, "jwks.json")
    open(jwks_path, "w").write(p.stdout)
    check([k["kid"] for k in jwks["keys"]] == [thumbprint(k) for k in jwks["keys"]], "kid is not the RFC 7638 thumbprint")
    check(all(k["kty"] == "EC" and k["crv"] == "P-256" and k["alg"] == "ES256" and "d" not in k for k in jwks["keys"]),
          f"JWKS members: {jwks}")
    check(len(jwks["keys"]) == 2, "the retired key is not in the JWKS")
    by_kid = {k["kid"]: jwt.PyJWK(k) for k in jwks["keys"]}
    public_pem = open(keys["current.pub"], "rb").read()

    for c in cases:
        v = verdicts.get(c["name"])
        if not check(v is not None and v["ok"] and "token" in v, f"{c['name']}: no accepted verdict with a token: {v}"):
            continue
        token, app_id = v["token"], f"{c['teamId']}.{c['bundleId']}"
        header = jwt.get_unverified_header(token)
        check(header.get("alg") == "ES256" and header.get("kid") == jwks["keys"][0]["kid"], f"header {header}")
        claims = jwt.decode(token, public_pem, algorithms=["ES256"], audience=app_id, issuer="attest-worker")
        via_jwks = jwt.decode(token, by_kid[header["kid"]].key, algorithms=["ES256"], audience=app_id)
        check(claims == via_jwks, "PEM and JWKS verification disagree")
        check(claims["sub"] == c["keyId"] and claims["jti"] == c["name"] and claims["kind"] == c["kind"],
              f"{c['name']}: sub/jti/kind {claims}")
        check(claims["exp"] - claims["iat"] == 900 and abs(claims["iat"] - time.time()) < 300, f"iat/exp {claims}")
        check(v["expiresAt"] == rfc3339(claims["exp"]), f"expiresAt {v['expiresAt']} vs exp {claims['exp']}")
        problem = validate.first_error("verdict", v)
        check(problem is None, f"{c['name']}: verdict with a token does not match verdict.schema.json: {problem}")
        subject = "subject-" + c["name"]
        check(claims.get("subjectId") == subject and v.get("subjectId") == subject
              and v.get("deviceIntelligence", {}).get("subjectId") == subject, f"{c['name']}: subjectId {claims} {v}")
        check(v.get("schemaVersion") == 4 and v.get("receivedAt") is not None, f"{c['name']}: schemaVersion/receivedAt {v}")
        if c["kind"] == "attestation":
            check(claims.get("deviceId") == "device-" + c["name"], f"deviceId {claims}")
            check(claims.get("environment") == c["expect"].get("environment", "production"), f"environment {claims}")

        p = token_verify(binary, jwks_path, token, "--audience", app_id)
        check(p.returncode == 0 and json.loads(p.stdout) == claims, f"token verify good: {p.returncode} {p.stdout}{p.stderr}")
        head, payload, sig = token.split(".")
        raw = bytearray(unb64url(sig))
        raw[10] ^= 0x01
        raw_good = unb64url(sig)
        p = token_verify(binary, jwks_path, f"{head}.{payload}.{b64url(bytes(raw))}")
        check(p.returncode == 1 and "signature_invalid" in p.stdout, f"changed signature byte: {p.returncode} {p.stdout}")
        # Low-S only: the worker's s is at most n/2, and the same signature with n - s (which PyJWT accepts,
        # as ECDSA allows) is refused, so a token has one valid string.
        s_value = int.from_bytes(raw_good[32:], "big")
        check(s_value <= P256_N // 2, f"{c['name']}: high-S signature issued")
        high = raw_good[:32] + (P256_N - s_value).to_bytes(32, "big")
        jwt.decode(f"{head}.{payload}.{b64url(high)}", public_pem, algorithms=["ES256"], audience=app_id)
        p = token_verify(binary, jwks_path, f"{head}.{payload}.{b64url(high)}")
        check(p.returncode == 1 and "signature_invalid" in p.stdout, f"high-S signature: {p.returncode} {p.stdout}")
        p = token_verify(binary, jwks_path, token, "--issuer", "attest-worker")
        check(p.returncode == 0, f"right issuer: {p.returncode} {p.stdout}")
        p = token_verify(binary, jwks_path, token, "--issuer", "attest-worker-other")
        check(p.returncode == 1 and "issuer_mismatch" in p.stdout, f"wrong issuer: {p.returncode} {p.stdout}")
        p = token_verify(binary, jwks_path, token, "--audience", app_id + "x")
        check(p.returncode == 1 and "audience_mismatch" in p.stdout, f"wrong audience: {p.returncode} {p.stdout}")
        none = b64url(json.dumps({"alg": "none", "kid": header["kid"]}).encode()) + "." + payload + "."
        p = token_verify(binary, jwks_path, none)
        check(p.returncode == 1 and "alg_not_allowed" in p.stdout, f"alg none: {p.returncode} {p.stdout}")
        p = run(binary, ["token", "verify", "--jwks", jwks_path, "-"], token + "\n")
        check(p.returncode == 0, f"token from stdin: {p.returncode} {p.stdout}")

    # Limited-use tokens (a job with "limitedUse": true): PyJWT verifies them as any other; they carry the
    # claim and a jti of their own (SHA-256 of the app, jobId and iat, 128 bits, base64url), the rest as the
    # ordinary token of the same job.
    limited = verify_lines(binary, tmp, cases, *live, "--token-key", keys["current"], "--token-lifetime", "900",
                           extra={"limitedUse": True})
    for c in cases:
        v = limited.get(c["name"])
        if not check(v is not None and v["ok"] and "token" in v, f"{c['name']}: no limited-use token: {v}"):
            continue
        app_id = f"{c['teamId']}.{c['bundleId']}"
        claims = jwt.decode(v["token"], public_pem, algorithms=["ES256"], audience=app_id, issuer="attest-worker")
        expected_jti = b64url(hashlib.sha256("\0".join(
            ["limited-use jti v1", c["teamId"], c["bundleId"], c["name"], str(claims["iat"])]).encode()).digest()[:16])
        check(claims.get("limitedUse") is True and claims["jti"] == expected_jti and claims["jti"] != c["name"],
              f"{c['name']}: limited-use claims {claims}")
        ordinary = jwt.decode(verdicts[c["name"]]["token"], public_pem, algorithms=["ES256"], audience=app_id)
        check({k: x for k, x in claims.items() if k not in ("jti", "limitedUse", "iat", "exp")}
              == {k: x for k, x in ordinary.items() if k not in ("jti", "iat", "exp")}, f"{c['name']}: limited vs ordinary claims")
        check(validate.first_error("verdict", v) is None, f"{c['name']}: limited-use verdict does not match the schema")
        p = token_verify(binary, jwks_path, v["token"], "--audience", app_id)
        check(p.returncode == 0 and json.loads(p.stdout) == claims, f"token verify limited: {p.returncode} {p.stdout}")

    # Expired: issued at the vectors' fixed time with a one-minute lifetime.
    attestation = [c for c in cases if c["kind"] == "attestation"]
    old = verify_lines(binary, tmp, attestation, "--now", attestation[0]["verifyAt"], "--token-key", keys["current"],
                       "--token-lifetime", "60")
    token = old[attestation[0]["name"]]["token"]
    p = token_verify(binary, jwks_path, token)
    check(p.returncode == 1 and "expired" in p.stdout, f"expired: {p.returncode} {p.stdout}")
    p = token_verify(binary, jwks_path, token, "--ignore-expiry")
    check(p.returncode == 0, f"--ignore-expiry: {p.returncode} {p.stdout}")
    p = token_verify(binary, jwks_path, token, "--now", attestation[0]["verifyAt"])
    check(p.returncode == 0, f"--now within the lifetime: {p.returncode} {p.stdout}")
    try:
        jwt.decode(token, public_pem, algorithms=["ES256"], audience=f"{attestation[0]['teamId']}.{attestation[0]['bundleId']}")
        check(False, "PyJWT accepted an expired token")
    except jwt.ExpiredSignatureError:
        pass

    # Rotation: a token from the retired key still verifies against the published set; once the retired
    # key is dropped from the set, its tokens name an unknown kid.
    retired = verify_lines(binary, tmp, attestation, *live, "--token-key", keys["retired"])[attestation[0]["name"]]["token"]
    check(jwt.get_unverified_header(retired)["kid"] == jwks["keys"][1]["kid"], "retired token kid")
    p = token_verify(binary, jwks_path, retired)
    check(p.returncode == 0, f"retired key token: {p.returncode} {p.stdout}")
    only_current = os.path.join(tmp, "jwks-current.json")
    open(only_current, "w").write(run(binary, ["token", "jwks", "--key", keys["current"]]).stdout)
    p = token_verify(binary, only_current, retired)
    check(p.returncode == 1 and "unknown_kid" in p.stdout, f"unknown kid: {p.returncode} {p.stdout}")

    # Rejected verdicts never carry a token.
    bad = dict(attestation[0], name="rejected", clientDataHash=b64url(bytes(32)))
    rejected = verify_lines(binary, tmp, [bad], *live, "--token-key", keys["current"])["rejected"]
    check(not rejected["ok"] and "token" not in rejected and "expiresAt" not in rejected, f"rejected verdict {rejected}")
    check(validate.first_error("verdict", dict(rejected, token=token, expiresAt=rfc3339(0))) is not None,
          "verdict.schema.json allows a token on a rejected verdict")

    for args in (["token", "verify", "x"], ["token", "verify", "--jwks", "/nonexistent.json", "x"],
                 ["token", "jwks"], ["token", "jwks", "--key", keys["p384"]], ["token", "jwks", "--key", "/nonexistent.pem"],
                 ["token", "bogus"], ["token"], ["verify", "--token-key", keys["p384"]],
                 ["token", "consume", "x"], ["token", "consume", "--jwks", jwks_path],
                 ["token", "consume", "--jwks", jwks_path, "--audience", "nodot", "x"],
                 ["verify", "--token-key", keys["current"], "--token-lifetime", "0"], ["verify", "--token-lifetime", "60"]):
        p = run(binary, args)
        check(p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1,
              f"{args}: exit {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr!r}")
    for args in (["token", "--help"], ["token", "verify", "--help"], ["token", "jwks", "--help"], ["token", "consume", "--help"]):
        p = run(binary, args)
        check(p.returncode == 0 and "usage" in p.stdout, f"{args}: no usage text")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        openssl("version")
    except (OSError, subprocess.CalledProcessError):
        print("test_tokens: openssl is missing", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tokens-") as tmp:
        test_tokens(argv[1], tmp)
    for failure in failures:
        print("tokens:", failure)
    print(f"tokens: {checks[0]} checks, {'ok' if not failures else f'{len(failures)} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
