#!/usr/bin/env python3
"""Self-test of Schemas/*.schema.json against hand-written examples and the real attest-worker binary.

usage: test_schemas.py PATH/TO/attest-worker

1. Every schema is a valid draft 2020-12 schema, and its own `examples` validate.
2. Hand-written positive and negative messages for each schema (the if/then rules, enums, formats).
3. The base64 patterns agree with a strict decoder written like the worker's (AttestCore Base64.decode)
   on a few thousand encodings and mutations.
4. The shared vectors, as job lines built by Tests/cli/verify_vectors.py's job(): every job
   line validates (except those the vectors make malformed on purpose), and every verdict line that
   `attest-worker verify` prints for them validates against verdict.schema.json and uses only members
   the schema declares (so the schema cannot fall behind Verdict.json).
5. Probes through `attest-worker verify`: variants of one field at a time (base64, keyId length,
   receivedAt forms, NUL characters, nulls, wrong types, kind). For each, the job schema accepts the
   field exactly when the worker accepts it (the only allowed difference: the worker also reads a space
   between date and time, the schema wants T), and every verdict printed validates.

Exits 0 when everything holds; prints each failure and exits 1 otherwise, 2 on usage errors.
Dead letters need a broker: they are covered by hand-written examples shaped like DeadLetter.swift's.
"""
import base64
import collections
import copy
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
VECTORS = os.path.join(REPO, "Tests", "Fixtures", "vectors")
sys.path.insert(0, HERE)
import validate  # noqa: E402  (exits 2 with a clear message when jsonschema is missing)

failures = []
counts = collections.Counter()


def check(condition, what):
    counts["checks"] += 1
    if not condition:
        failures.append(what)
    return condition


def expect(schema, value, valid, what):
    problem = validate.first_error(schema, value)
    return check((problem is None) == valid,
                 f"{schema}: {what}: expected {'valid' if valid else 'invalid'}, "
                 f"got {problem or 'valid'}: {json.dumps(value)[:300]}")


# ------------------------------------------------------------------------------------ strict base64
def strict_b64decode(text):
    """The worker's strict base64 (AttestCore Base64.decode), or None: standard or URL-safe alphabet,
    not mixed; padding optional but correct; leftover bits zero."""
    s, pad = text, 0
    while s.endswith("="):
        s, pad = s[:-1], pad + 1
    if pad > 2 or (pad > 0 and (len(s) + pad) % 4 != 0) or len(s) % 4 == 1:
        return None
    alphabet, acc, bits, out = None, 0, 0, bytearray()
    for c in s:
        if "A" <= c <= "Z":
            v = ord(c) - 65
        elif "a" <= c <= "z":
            v = ord(c) - 97 + 26
        elif "0" <= c <= "9":
            v = ord(c) - 48 + 52
        elif c in "+/":
            if alphabet == "url":
                return None
            alphabet, v = "std", 62 if c == "+" else 63
        elif c in "-_":
            if alphabet == "std":
                return None
            alphabet, v = "url", 62 if c == "-" else 63
        else:
            return None
        acc, bits = ((acc << 6) | v) & 0xFFFFFF, bits + 6
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
    if bits and acc & ((1 << bits) - 1):
        return None
    return bytes(out)


def encodings(raw):
    std = base64.b64encode(raw).decode()
    url = base64.urlsafe_b64encode(raw).decode()
    return [std, std.rstrip("="), url, url.rstrip("=")]


def mutations(rng, text):
    """Near misses of a valid encoding: the kinds of mistakes producers make."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"
    out = []
    core = text.rstrip("=")
    if core:
        out.append(core[:-1] + rng.choice(alphabet) + text[len(core):])  # leftover bits, alphabet mix
        i = rng.randrange(len(core))
        out.append(core[:i] + rng.choice(" \n\t.*=é%") + core[i + 1:] + text[len(core):])
        out.append(core[:i] + rng.choice("+/") + core[i + 1:])
        out.append(core[:i] + rng.choice("-_") + core[i + 1:])
    out += [text + "=", text + "==", "=" + text, text + "\n", text + " ", core + "===", core[:-1] if core else "A"]
    return out


def base64_samples(seed, lengths):
    rng = random.Random(seed)
    samples = []
    for n in lengths:
        for _ in range(3):
            raw = bytes(rng.randrange(256) for _ in range(n))
            for e in encodings(raw):
                samples.append(e)
                samples += mutations(rng, e)
    return list(dict.fromkeys(samples))


def test_base64_patterns():
    """Section 3: the schema patterns against the strict decoder."""
    att = validate.load("attestation-job")["$defs"]
    general = validate.ecma_regex(att["base64"]["pattern"])
    key = validate.ecma_regex(att["base64Of32Bytes"]["pattern"])
    canonical = validate.ecma_regex(validate.load("deadletter")["$defs"]["base64"]["pattern"])
    verdict = validate.load("verdict")
    any_key = validate.ecma_regex(verdict["properties"]["publicKey"]["pattern"])
    apple_rule = next(r for r in verdict["allOf"] if r["if"]["properties"].get("kind") == {"const": "attestation"})
    public_key = validate.ecma_regex(apple_rule["then"]["properties"]["publicKey"]["pattern"])
    offline_key = validate.ecma_regex(validate.load("assertion-job")["properties"]["publicKey"]["pattern"])
    samples = base64_samples(1, list(range(0, 40)) + [64, 65, 66, 100])
    samples += encodings(b"\x04" + bytes(range(64)))
    for s in samples:
        decoded = strict_b64decode(s)
        ok = decoded is not None
        check(bool(general.search(s)) == ok,  # "" decodes and matches: minLength excludes it, not the pattern
              f"base64 pattern disagrees with the strict decoder on {s!r} (decoder: {ok})")
        check(bool(key.search(s)) == (ok and len(decoded) == 32),
              f"32-byte keyId pattern disagrees on {s!r}")
        check(bool(canonical.search(s)) == (ok and s == base64.b64encode(decoded).decode()),
              f"canonical base64 pattern disagrees on {s!r}")
        check(bool(public_key.search(s)) == (ok and len(decoded) == 65 and decoded[0] == 4
                                             and s == base64.b64encode(decoded).decode()),
              f"verdict publicKey pattern (Apple attestations) disagrees on {s!r}")
        check(bool(any_key.search(s)) == (ok and s == base64.b64encode(decoded).decode()),
              f"verdict publicKey pattern (canonical base64, Android's SubjectPublicKeyInfo too) disagrees on {s!r}")
        check(bool(offline_key.search(s)) == (ok and len(decoded) == 65 and decoded[0] == 4),
              f"offline publicKey pattern disagrees on {s!r}")
    counts["base64 samples"] = len(samples)


# ------------------------------------------------------------------------------------- hand-written
KEY = "HXuyCE8REKn8prt0WZeySyrtcaQ0AY20K4tx+IbYtS8="
PUBLIC_KEY = "BPYIApHHw6coWA4K01xkkLjaOMoOnz84041h7CmCfNn7YMXCjEZWN3hZ5ixXOK/RR09YJcApQRwcl91VFYY71ZY="
NOW = "2026-05-01T12:00:00Z"
ATTESTATION = {"jobId": "probe", "kind": "attestation", "teamId": "A1B2C3D4E5", "bundleId": "com.example.app",
               "keyId": KEY, "attestationObject": "oA==", "clientDataHash": "AAAA", "receivedAt": NOW}
ASSERTION = {"jobId": "probe", "kind": "assertion", "teamId": "A1B2C3D4E5", "bundleId": "com.example.app",
             "keyId": KEY, "assertion": "oA==", "clientDataHash": "AAAA", "receivedAt": NOW,
             "publicKey": PUBLIC_KEY, "previousCounter": 0}
VERDICT_OK = {"jobId": "j", "kind": "attestation", "keyId": KEY, "teamId": "A1B2C3D4E5", "bundleId": "b", "ok": True,
              "environment": "production", "counter": 0, "verifiedAt": NOW, "verificationTime": NOW,
              "publicKey": PUBLIC_KEY,
              "receipt": {"type": "ATTEST", "creationTime": "2026-05-01T11:59:00.000Z",
                          "expirationTime": "2026-07-30T11:59:00.000Z"},
              "extensions": None}
VERDICT_REJECTED = {"jobId": "j", "kind": "assertion", "keyId": KEY, "teamId": "A1B2C3D4E5", "bundleId": "b",
                    "ok": False, "code": "assertion_invalid", "reason": "signature_invalid", "message": "m",
                    "verifiedAt": "2026-05-01T12:00:00.123Z", "verificationTime": NOW}
INTELLIGENCE = {"deviceId": "3c1d1f0e-7e0a-4a44-9d2c-5b1a6f0c8e21", "riskScore": 12, "riskCategory": "trusted",
                "deviceIntegrity": "high", "jailbreakDetected": False, "attestationCount": 1,
                "lastAttestationDate": NOW, "factors": []}
DEADLETTER = {"reason": "job_invalid", "message": "not a JSON object",
              "source": {"topic": "appattest.jobs", "partition": 3, "offset": 17, "timestamp": "2026-05-01T12:00:00.125Z"},
              "keyBase64": "a2V5", "valueBase64": "bm90IGpzb24=", "deadLetteredAt": "2026-05-01T12:00:00.131Z"}


DROP = object()  # variant(..., field=DROP) removes the field


def variant(base, **changes):
    value = copy.deepcopy(base)
    for k, v in changes.items():
        if v is DROP:
            value.pop(k, None)
        else:
            value[k] = v
    return value


def test_examples_and_cases():
    """Sections 1 and 2."""
    for name in validate.NAMES:
        schema = validate.load(name)
        check(schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema", f"{name}: $schema is not 2020-12")
        try:
            validate.validator(name)
        except Exception as e:  # SchemaError
            check(False, f"{name}: not a valid schema: {e}")
            continue
        check(schema.get("examples"), f"{name}: has no examples")
        for i, example in enumerate(schema.get("examples", [])):
            expect(name, example, True, f"its own example {i}")

    a, s = "attestation-job", "assertion-job"
    expect(a, ATTESTATION, True, "minimal attestation job")
    expect(a, variant(ATTESTATION, kind=DROP), True, "kind is optional")
    expect(a, variant(ATTESTATION, kind=None, deviceId=None, challenge=None), True, "null optional fields")
    expect(a, variant(ATTESTATION, extraField={"x": 1}, schemaVersion=2), True, "additional properties")
    expect(a, variant(ATTESTATION, receivedAt="2026-05-01T14:00:00.123456789+02:00"), True, "offset and long fraction")
    expect(a, variant(ATTESTATION, clientDataHash=base64.b64encode(b"raw challenge bytes").decode()), True,
           "clientDataHash of any length")
    for field in ATTESTATION:
        if field != "kind":
            expect(a, variant(ATTESTATION, **{field: DROP}), False, f"without {field}")
            expect(a, variant(ATTESTATION, **{field: None}), False, f"{field} null")
    expect(a, variant(ATTESTATION, kind="assertion"), False, "kind assertion")
    expect(a, variant(ATTESTATION, receivedAt="2026-05-01 12:00:00Z"), False, "space separator")
    expect(a, variant(ATTESTATION, receivedAt="2026-02-29T12:00:00Z"), False, "February 29 of 2026")
    expect(a, variant(ATTESTATION, receivedAt="2026-05-01T12:00:60Z"), False, "leap second")
    expect(a, variant(ATTESTATION, receivedAt="2026-05-01T12:00Z"), False, "no seconds")
    expect(a, variant(ATTESTATION, receivedAt="2026-05-01T12:00:00"), False, "no offset")
    expect(a, variant(ATTESTATION, keyId=base64.b64encode(base64.b64decode(KEY)[:31]).decode()), False, "31-byte keyId")
    expect(a, variant(ATTESTATION, keyId=base64.b64encode(base64.b64decode(KEY) + b"x").decode()), False, "33-byte keyId")
    expect(a, variant(ATTESTATION, keyId="1d7bb2084f1110a9fca6bb74599bb24b2aed71a434018db42b8b71f886d8b52f"), False, "hex keyId")
    expect(a, variant(ATTESTATION, teamId="A1B2\u0000C3"), False, "NUL in teamId")
    for team in ["A1B2C3D4E5.com", "a1b2c3d4e5", "A1B2C3D4E", "A1B2C3D4E5F", "A1B2C3D4E ", "A1B2C3D4\u0130"]:
        expect(a, variant(ATTESTATION, teamId=team), False, f"teamId {team!r}")
        expect(s, variant(ASSERTION, teamId=team), False, f"teamId {team!r}")
    for bundle in ["com.", ".com", "com..example", "com example", "com.ex\u0430mple", "com+example", "com.\u00e9", "a" * 256]:
        expect(a, variant(ATTESTATION, bundleId=bundle), False, f"bundleId {bundle!r}")
        expect(s, variant(ASSERTION, bundleId=bundle), False, f"bundleId {bundle!r}")
    # Underscores, as Apple signs them (its App Attest sample is com.apple.example_app_attest).
    for bundle in ["app", "com.example.my-app", "com.apple.example_app_attest", "_", "a" * 255]:
        expect(a, variant(ATTESTATION, bundleId=bundle), True, f"bundleId {bundle!r}")
        expect(s, variant(ASSERTION, bundleId=bundle), True, f"bundleId {bundle!r}")
    expect(a, variant(ATTESTATION, subjectId=""), True, "empty optional metadata")
    expect(a, variant(ATTESTATION, subjectId=5), False, "number as metadata")
    expect(a, variant(ATTESTATION, jobId="x" * 257), False, "jobId over 256")
    expect(a, [ATTESTATION], False, "an array")

    expect(s, ASSERTION, True, "assertion job with the offline fields")
    expect(s, variant(ASSERTION, kind=DROP, publicKey=DROP, previousCounter=DROP), True, "minimal, kind inferred")
    expect(s, variant(ASSERTION, clientDataHash=DROP, clientData="eyJhIjoxfQ"), True, "clientData instead")
    expect(s, variant(ASSERTION, clientData="eyJhIjoxfQ"), True, "both clientDataHash and clientData")
    expect(s, variant(ASSERTION, clientDataHash=DROP), False, "neither clientDataHash nor clientData")
    expect(s, variant(ASSERTION, clientDataHash=None, clientData="eyJhIjoxfQ"), False, "clientDataHash null")
    expect(s, variant(ASSERTION, kind=DROP, attestationObject="oA=="), False, "no kind and an attestationObject")
    expect(s, variant(ASSERTION, kind=None, attestationObject=None), False, "null kind and a null attestationObject")
    expect(s, variant(ASSERTION, attestationObject="oA=="), True, "kind assertion and an ignored attestationObject")
    expect(s, variant(ASSERTION, previousCounter=4294967296), False, "counter over 2^32-1")
    expect(s, variant(ASSERTION, previousCounter=-1), False, "negative counter")
    expect(s, variant(ASSERTION, publicKey=PUBLIC_KEY[:-4]), False, "short publicKey")
    expect(s, variant(ASSERTION, challenge=7), False, "challenge not a string")

    v = "verdict"
    expect(v, VERDICT_OK, True, "accepted attestation")
    expect(v, VERDICT_REJECTED, True, "rejected assertion")
    expect(v, variant(VERDICT_OK, deviceIntelligence=INTELLIGENCE, token="eyJh.eyJi.c2ln", expiresAt=NOW), True,
           "with deviceIntelligence and token")
    expect(v, variant(VERDICT_OK, deviceIntelligence=variant(INTELLIGENCE, riskScore=50, riskCategory="suspicious",
                                                             lastAttestationDate=None,
                                                             factors=["development_environment", {"name": "new_device", "points": 10}])),
           True, "suspicious device, factors as names and objects")
    expect(v, variant(VERDICT_OK, deviceIntelligence=variant(INTELLIGENCE, riskScore=80, riskCategory="trusted")),
           False, "category not matching the score")
    expect(v, variant(VERDICT_OK, deviceIntelligence=variant(INTELLIGENCE, riskScore=101, riskCategory="blocked")),
           False, "score over 100")
    expect(v, variant(VERDICT_OK, deviceIntelligence=variant(INTELLIGENCE, deviceId=DROP)), False, "intelligence without deviceId")
    echoed = {"schemaVersion": 4, "subjectId": "user-42", "receivedAt": NOW, "deviceModel": "iPhone16,2",
              "osVersion": "17.4", "appVersion": "2.1.0", "appBuildNumber": "210", "platform": "iOS"}
    expect(v, variant(VERDICT_OK, **echoed, deviceIntelligence=variant(INTELLIGENCE, subjectId="user-42")), True,
           "subject, receivedAt, analytics metadata and the schema version")
    expect(v, variant(VERDICT_REJECTED, **echoed), True, "echoed fields on a rejection")
    expect(v, variant(VERDICT_OK, subjectId=""), True, "empty subjectId, as the job allows")
    for field in ["subjectId", "deviceModel", "osVersion", "appVersion", "appBuildNumber", "platform"]:
        expect(v, variant(VERDICT_OK, **{field: 5}), False, f"{field} a number")
        expect(v, variant(VERDICT_OK, **{field: None}), False, f"{field} null (absent instead)")
        expect(v, variant(VERDICT_OK, **{field: "a" * 257}), False, f"{field} over 256 characters")
    expect(v, variant(VERDICT_OK, receivedAt="2026-05-01T14:00:00+02:00"), False, "receivedAt not in UTC")
    expect(v, variant(VERDICT_OK, schemaVersion=1), False, "schemaVersion before 2")
    expect(v, variant(VERDICT_OK, schemaVersion="2"), False, "schemaVersion a string")
    expect(v, variant(VERDICT_OK, deviceIntelligence=variant(INTELLIGENCE, subjectId=7)), False, "intelligence subjectId a number")
    expect(v, variant(VERDICT_OK, token="eyJh.eyJi.c2ln"), False, "token without expiresAt")
    expect(v, variant(VERDICT_OK, token="not a jwt", expiresAt=NOW), False, "token not a JWT")
    expect(v, variant(VERDICT_REJECTED, token="eyJh.eyJi.c2ln", expiresAt=NOW), False, "token on a rejection")
    expect(v, variant(VERDICT_OK, code="job_invalid"), False, "accepted with a code")
    expect(v, variant(VERDICT_OK, reason="x"), False, "accepted with a reason")
    for field in ("code", "reason", "message"):
        expect(v, variant(VERDICT_REJECTED, **{field: DROP}), False, f"rejected without {field}")
    expect(v, variant(VERDICT_REJECTED, code="quota_exceeded", reason="quota_exceeded", limit=100, current=100), True, "quota_exceeded")
    expect(v, variant(VERDICT_REJECTED, code="not_a_code"), False, "unknown code")
    expect(v, variant(VERDICT_REJECTED, reason="a_reason_added_later"), True, "unknown reason (open set)")
    expect(v, variant(VERDICT_REJECTED, reason="Bad Reason"), False, "reason not snake_case")
    expect(v, variant(VERDICT_REJECTED, jobId=None, kind=None, keyId=None, teamId=None, bundleId=None,
                      code="job_invalid", reason="invalid_field", verificationTime=DROP), True, "unreadable job")
    expect(v, variant(VERDICT_OK, jobId=None), False, "accepted without a jobId")
    for field in ("environment", "counter", "verificationTime", "publicKey", "receipt", "extensions"):
        expect(v, variant(VERDICT_OK, **{field: DROP}), False, f"accepted attestation without {field}")
    for field in ("jobId", "kind", "keyId", "teamId", "bundleId", "ok", "verifiedAt"):
        expect(v, variant(VERDICT_REJECTED, **{field: DROP}), False, f"without {field}")
    expect(v, variant(VERDICT_OK, kind="assertion", environment=DROP, publicKey=DROP, receipt=DROP, extensions=DROP),
           True, "accepted assertion")
    expect(v, variant(VERDICT_OK, counter=-1), False, "negative counter")
    expect(v, variant(VERDICT_OK, counter=4294967296), False, "counter over 2^32-1")
    expect(v, variant(VERDICT_OK, environment="staging"), False, "unknown environment")
    expect(v, variant(VERDICT_OK, publicKey=PUBLIC_KEY.replace("+", "-").replace("/", "_")), False, "URL-safe publicKey")
    expect(v, variant(VERDICT_OK, verifiedAt="2026-05-01T14:00:00+02:00"), False, "verifiedAt not in UTC")
    expect(v, variant(VERDICT_OK, extensions={"otherKeys": []}), False, "empty otherKeys")
    expect(v, variant(VERDICT_OK, extensions={"apple_bundle_version_01": "aGk=", "apple_validation_category_01": "AQAAAA==",
                                              "otherKeys": ["apple_future_field_02"]}), True, "known keys of other types")
    expect(v, variant(VERDICT_OK, receipt={"type": "ATTEST", "creationTime": None, "expirationTime": None, "riskMetric": 3}),
           True, "receipt with riskMetric and missing times")

    d = "deadletter"
    expect(d, DEADLETTER, True, "dead letter")
    expect(d, variant(DEADLETTER, keyBase64=None, valueBase64="", source={"topic": "t", "partition": 0, "offset": 0}),
           True, "no key, empty value, no timestamp")
    expect(d, variant(DEADLETTER, reason="too_large", valueBase64=base64.b64encode(os.urandom(300)).decode()), True, "too_large")
    expect(d, variant(DEADLETTER, reason="malformed"), False, "unknown reason")
    for field in DEADLETTER:
        expect(d, variant(DEADLETTER, **{field: DROP}), False, f"without {field}")
    expect(d, variant(DEADLETTER, source={"topic": "t", "partition": -1, "offset": 0}), False, "negative partition")
    expect(d, variant(DEADLETTER, source={"topic": "t", "partition": 0}), False, "source without offset")
    expect(d, variant(DEADLETTER, valueBase64="bm90IGpzb24"), False, "unpadded value")
    expect(d, variant(DEADLETTER, keyBase64="-_8="), False, "URL-safe key")
    expect(d, variant(DEADLETTER, deadLetteredAt="2026-05-01T12:00:00"), False, "time without zone")
    sha = "ab" * 32
    expect(d, variant(DEADLETTER, keyTruncated=True, originalKeyBytes=440000, originalKeySha256=sha), True, "key cut")
    expect(d, variant(DEADLETTER, keyTruncated=True, originalKeyBytes=440000), False, "key cut without its digest")
    expect(d, variant(DEADLETTER, truncated=True, originalBytes=9, originalSha256=sha, headerCount=500), True, "value cut, headers")
    expect(d, variant(DEADLETTER, source={"topic": "t", "partition": 0, "offset": 0, "timestampMs": 2**63 - 1}), True,
           "a timestamp no date names")

    e = "event"
    warning = {"eventId": "0f" * 32, "kind": "mad.quota_warning", "teamId": "ABCDE12345", "bundleId": "com.example.app",
               "occurredAt": "2026-05-01T12:00:00Z", "month": "2026-05", "threshold": 80, "devices": 8, "limit": 10}
    expect(e, warning, True, "quota warning")
    expect(e, variant(warning, kind="mad.quota_reached", threshold=100), True, "quota reached")
    expect(e, variant(warning, kind="mad.quota_reached"), False, "quota reached at 80")
    expect(e, variant(warning, threshold=100), False, "quota warning at 100")
    expect(e, variant(warning, kind="mad.grace_ended", threshold=DROP, devices=DROP, limit=DROP), True, "grace ended")
    expect(e, variant(warning, kind="mad.grace_started"), False, "grace started without its end")
    expect(e, variant(warning, kind="mad.grace_started", graceDays=7, graceEndsAt="2026-05-08T12:00:00.000000Z"), True,
           "grace started")
    expect(e, variant(warning, kind="mad.grace_expired"), False, "unknown kind")
    expect(e, variant(warning, eventId="0F" * 32), False, "upper-case eventId")
    expect(e, variant(warning, eventId="0f" * 31), False, "short eventId")
    expect(e, variant(warning, month="2026-13"), False, "month 13")
    expect(e, variant(warning, occurredAt="2026-05-01T12:00:00"), False, "time without zone")
    for field in ["eventId", "kind", "teamId", "bundleId", "occurredAt", "month", "threshold", "devices", "limit"]:
        expect(e, variant(warning, **{field: DROP}), False, f"quota warning without {field}")
    risk = {"eventId": "1e" * 32, "kind": "device.risk_category_changed", "teamId": "ABCDE12345",
            "bundleId": "com.example.app", "occurredAt": "2026-05-01T12:00:00.5Z", "identity": "key:00", "deviceId": "d",
            "jobId": "j", "from": "trusted", "to": "blocked", "score": 90}
    expect(e, risk, True, "risk category change")
    expect(e, variant(risk, to="risky"), False, "unknown category")
    expect(e, variant(risk, score=101), False, "score over 100")
    for field in ["identity", "jobId", "from", "to", "score"]:
        expect(e, variant(risk, **{field: DROP}), False, f"risk category change without {field}")
    expect(e, variant(risk, kind="device.revoked", jobId=DROP, score=DROP, extra=True), True, "revoked, added member")

    # POST /v1/challenges, shaped as IssuedChallenge.json and HTTPResponse.jsonError write them (the
    # integration test ChallengeIntegrationTests validates real answers of a running worker too).
    c = "challenge-response"
    issued = {"challenge": base64.b64encode(bytes(range(32))).decode(), "expiresAt": "2026-12-06T05:12:31.123456Z",
              "teamId": "A1B2C3D4E5", "bundleId": "com.example.app"}
    expect(c, issued, True, "issued")
    expect(c, variant(issued, expiresAt="2026-12-06T05:12:31Z"), True, "whole-second expiry")
    expect(c, variant(issued, expiresAt="2026-12-06T05:12:31.5Z"), False, "one fraction digit (the worker writes 3 or 6)")
    expect(c, variant(issued, expiresAt="2026-12-06T06:12:31+01:00"), False, "expiry not in UTC")
    expect(c, variant(issued, challenge=issued["challenge"].rstrip("=")), False, "unpadded challenge")
    expect(c, variant(issued, challenge=base64.urlsafe_b64encode(b"\xff" * 32).decode()), False, "URL-safe challenge")
    expect(c, variant(issued, challenge=base64.b64encode(bytes(31)).decode()), False, "31-byte challenge")
    expect(c, variant(issued, teamId="a1b2c3d4e5"), False, "lower-case teamId")
    for field in issued:
        expect(c, variant(issued, **{field: DROP}), False, f"issued without {field}")
    expect(c, variant(issued, issuedAt="2026-12-06T05:07:31Z"), True, "issued, added member")
    for code, message in [("invalid_request", "teamId must be exactly 10 characters A-Z or 0-9 (the App ID prefix)"),
                          ("unauthorized", "an API key of this app is required: Authorization: Bearer KEY"),
                          ("unknown_app", "app A1B2C3D4E5.com.example.app is not registered"),
                          ("too_large", "the body must be at most 4096 bytes"),
                          ("rate_limited", "too many refused requests; retry in 2 s"),
                          ("unavailable", "challenges cannot be issued right now")]:
        expect(c, {"error": code, "message": message}, True, f"refused {code}")
    expect(c, {"error": "forbidden", "message": "x"}, False, "a code the endpoint never answers")
    expect(c, {"error": "unauthorized"}, False, "error without message")
    expect(c, {"error": "unavailable", "message": "x", "challenge": issued["challenge"]}, False, "error and challenge")

# ------------------------------------------------------------------------------------- the binary
def run_verify(binary, lines, *flags):
    p = subprocess.run([binary, "verify", *flags], input="".join(json.dumps(l) + "\n" if not isinstance(l, str) else l + "\n"
                                                               for l in lines),
                       capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, f"verify {' '.join(flags)} exited {p.returncode}: {p.stderr.strip()[:300]}"):
        return []
    verdicts = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    check(len(verdicts) == len(lines), f"verify printed {len(verdicts)} verdicts for {len(lines)} lines")
    return verdicts


def check_verdict(verdict, origin):
    counts["verdicts validated"] += 1
    expect("verdict", verdict, True, f"verdict for {origin}")
    schema = validate.load("verdict")
    props = schema["properties"]
    for k in verdict:
        check(k in props, f"verdict for {origin}: member {k!r} is not declared in verdict.schema.json")
    if isinstance(verdict.get("receipt"), dict):
        for k in verdict["receipt"]:
            check(k in props["receipt"]["properties"], f"verdict for {origin}: receipt member {k!r} is not declared")
    if isinstance(verdict.get("extensions"), dict):
        declared = props["extensions"]["oneOf"][1]["properties"]
        for k in verdict["extensions"]:
            check(k in declared, f"verdict for {origin}: extensions member {k!r} is not declared")


def load_run_vectors():
    spec = importlib.util.spec_from_file_location("verify_vectors", os.path.join(REPO, "Tests", "cli", "verify_vectors.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vectors(binary):
    """Section 4."""
    rv = load_run_vectors()
    cases = rv.load([VECTORS])
    groups = collections.defaultdict(list)
    for c in cases:
        groups[(c["verifyAt"], c["environment"], c["trust"])].append(c)
    kinds = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="schemas-") as tmp:
        for (at, env, trust), cs in groups.items():
            anchors = cs[0]["_anchors"]
            att, rec = os.path.join(tmp, trust + "-att.pem"), os.path.join(tmp, trust + "-rec.pem")
            with open(att, "w") as f:
                f.write(anchors["attestationRoot"])
            with open(rec, "w") as f:
                f.write(anchors["receiptRoot"])
            jobs = [rv.job(c) for c in cs]
            for c, job in zip(cs, jobs):
                # The vectors break base64 and the keyId length on purpose; everything else is a valid job.
                fields = ["keyId", "clientDataHash", "attestationObject" if c["kind"] == "attestation" else "assertion"]
                decoded = {f: strict_b64decode(job[f]) for f in fields}
                well_formed = all(v for v in decoded.values()) and len(decoded["keyId"]) == 32
                expect("job", job, well_formed, f"vector {c['name']} as a job line")
                counts["vector job lines"] += 1
            verdicts = run_verify(binary, jobs, "--now", at, "--environment", env,
                                  "--trust-anchor", att, "--receipt-trust-anchor", rec)
            for c, verdict in zip(cs, verdicts):
                check(verdict.get("jobId") == c["name"], f"vector {c['name']}: verdict out of order")
                check(bool(verdict.get("ok")) == bool(c["expect"]["ok"]),
                      f"vector {c['name']}: ok={verdict.get('ok')}, the vector expects {c['expect']['ok']}")
                check_verdict(verdict, f"vector {c['name']}")
                kinds[(verdict.get("kind"), verdict.get("ok"))] += 1
    for kind in ("attestation", "assertion"):
        for ok in (True, False):
            check(kinds[(kind, ok)] > 0, f"the vectors gave no {'accepted' if ok else 'rejected'} {kind} verdict")


def accepted_by_worker(field, verdict, baseline):
    """Whether the worker read `field` of a probe as valid, judged from the verdict."""
    code, reason = verdict.get("code"), verdict.get("reason")
    if code == "job_invalid" and reason in ("missing_field", "invalid_field"):
        return False
    if field == "keyId":
        return code != "key_id_invalid"
    if field in ("attestationObject", "assertion"):
        return reason not in ("malformed_base64", "too_large")
    if field in ("clientDataHash", "clientData"):
        return (code, reason) == (baseline.get("code"), baseline.get("reason"))
    return True


def probes():
    """(description, field, job line) triples that vary one field of a job that otherwise fails late."""
    out = []
    text_values = ["x", "", None, 5, True, [], {}, "a\u0000b", "ünïcødé"]
    for base in (ATTESTATION, ASSERTION):
        for field in ("jobId", "teamId", "bundleId"):
            for value in text_values:
                out.append((f"{base['kind']} {field}={value!r}", field, variant(base, **{field: value})))
            out.append((f"{base['kind']} without {field}", field, variant(base, **{field: DROP})))
        for field in ("challenge", "deviceId", "deviceFingerprint", "subjectId", "deviceModel", "osVersion",
                      "appVersion", "appBuildNumber", "platform"):
            for value in text_values:
                job = variant(base, **{field: value})
                if field == "challenge" and isinstance(value, str) and "\u0000" not in value:
                    continue  # a readable challenge is then checked against clientDataHash (a later failure)
                out.append((f"{base['kind']} {field}={value!r}", field, job))
        for value in ["2026-05-01T12:00:00Z", "2026-05-01t12:00:00z", "2026-05-01T12:00:00.5Z",
                      "2026-05-01T12:00:00.123456789Z", "2026-05-01T13:00:00+01:00", "2026-05-01T11:00:00-01:00",
                      "2026-05-01T12:00:00+00:00", "2026-04-30T12:00:01Z", "2026-05-01 12:00:00Z",
                      "2026-05-01T12:00:00", "2026-05-01T12:00Z", "2026-05-01", "2026-5-01T12:00:00Z",
                      "2026-05-01T12:00:60Z", "2026-05-01T24:00:00Z", "2026-02-29T12:00:00Z", "2024-02-29T12:00:00Z",
                      "2026-04-31T12:00:00Z", "2026-13-01T12:00:00Z", "2026-05-01T12:00:00.Z",
                      "2026-05-01T12:00:00+0100", "2026-05-01T12:00:00+24:00", "2026-05-01T12:00:00+01:60",
                      "1777636800", 1777636800, None, "", " 2026-05-01T12:00:00Z", "2026-05-01T12:00:00Z\n",
                      "２026-05-01T12:00:00Z", "2026-05-01T12:00:00Z+01:00", "+2026-05-01T12:00:00Z"]:
            out.append((f"{base['kind']} receivedAt={value!r}", "receivedAt", variant(base, receivedAt=value)))
        for value in ["attestation", "assertion", None, "bogus", "Attestation", 5]:
            out.append((f"{base['kind']} fields with kind={value!r}", "kind", variant(base, kind=value)))
        out.append((f"{base['kind']} fields without kind", "kind", variant(base, kind=DROP)))
    rng = random.Random(7)
    raw_key = base64.b64decode(KEY)
    key_samples = encodings(raw_key) + [m for e in encodings(raw_key) for m in mutations(rng, e)]
    key_samples += [e for n in (16, 31, 33, 48, 64) for e in encodings(bytes(rng.randrange(256) for _ in range(n)))]
    key_samples += [raw_key.hex(), None, 5, ""]
    for value in dict.fromkeys(key_samples):
        for base in (ATTESTATION, ASSERTION):
            out.append((f"{base['kind']} keyId={value!r}", "keyId", variant(base, keyId=value)))
    for value in base64_samples(3, [0, 1, 2, 3, 4, 5, 31, 32, 33]) + [None, 5]:
        out.append((f"attestation clientDataHash={value!r}", "clientDataHash", variant(ATTESTATION, clientDataHash=value)))
        out.append((f"assertion clientDataHash={value!r}", "clientDataHash", variant(ASSERTION, clientDataHash=value)))
    for value in base64_samples(4, [1, 2, 3, 10]) + [None, 5]:
        out.append((f"assertion clientData={value!r}", "clientData", variant(ASSERTION, clientDataHash=DROP, clientData=value)))
    for value in [e for e in encodings(bytes([0xA0]))] + ["oA=!", "o A==", "oA===", "", None, 5, "-_8=", "+/8="]:
        out.append((f"attestationObject={value!r}", "attestationObject", variant(ATTESTATION, attestationObject=value)))
        out.append((f"assertion={value!r}", "assertion", variant(ASSERTION, assertion=value)))
    for desc, changes in [("hash only", {}), ("data only", {"clientDataHash": DROP, "clientData": "eyJhIjoxfQ"}),
                          ("both", {"clientData": "eyJhIjoxfQ"}), ("neither", {"clientDataHash": DROP}),
                          ("hash null, data", {"clientDataHash": None, "clientData": "eyJhIjoxfQ"}),
                          ("data null only", {"clientDataHash": DROP, "clientData": None})]:
        out.append((f"assertion client data: {desc}", "clientData", variant(ASSERTION, **changes)))
    for value in [0, 7, 4294967295, 4294967296, -1, "3", None, True]:
        out.append((f"assertion previousCounter={value!r}", "previousCounter", variant(ASSERTION, previousCounter=value)))
    for value in encodings(base64.b64decode(PUBLIC_KEY)) + [PUBLIC_KEY[:-8] + "=", "BA==", "", None, 5]:
        out.append((f"assertion publicKey={value!r}", "publicKey", variant(ASSERTION, publicKey=value)))
    return out


def test_probes(binary):
    """Section 5."""
    items = probes()
    baselines = run_verify(binary, [ATTESTATION, ASSERTION], "--now", NOW, "--environment", "any")
    if len(baselines) != 2:
        return
    for b in baselines:
        # The probes vary one input; the rest must pass the input checks and fail later, on the object.
        check(b.get("code") in ("attestation_object_invalid", "assertion_invalid", "apple_validation_failed")
              and b.get("reason") != "malformed_base64",
              f"probe baseline should fail in the object checks, got {b.get('code')}/{b.get('reason')}")
    baseline = {"attestation": baselines[0], "assertion": baselines[1]}
    verdicts = run_verify(binary, [job for _, _, job in items], "--now", NOW, "--environment", "any")
    extra = [
        "not json", "[1,2]", "\"text\"", "{}", json.dumps({"jobId": "only"}),
        json.dumps({"kind": "attestation"}), json.dumps(variant(ATTESTATION, jobId=DROP, keyId=DROP)),
        json.dumps(variant(ATTESTATION, jobId="j" * 300, teamId=None)),  # verify reads any jobId length
    ]
    for line, verdict in zip(extra, run_verify(binary, extra, "--now", NOW)):
        check(verdict.get("ok") is False and verdict.get("code") == "job_invalid", f"{line!r}: not job_invalid")
        check_verdict(verdict, f"line {line!r}")
    mismatches = []
    for (desc, field, job), verdict in zip(items, verdicts):
        check_verdict(verdict, desc)
        schema_ok = validate.first_error("job", job) is None
        base = baseline["assertion" if validate.job_schema_name(job) == "assertion-job" else "attestation"]
        worker_ok = accepted_by_worker(field, verdict, base)
        counts["field probes"] += 1
        counts["probes the schema rejects"] += not schema_ok
        if schema_ok != worker_ok:
            mismatches.append((desc, field, job, schema_ok, verdict))
    for desc, field, job, schema_ok, verdict in mismatches:
        value = job.get(field)
        # Allowed: the worker also reads a space between date and time; the schema asks for T.
        allowed = (field == "receivedAt" and not schema_ok and isinstance(value, str) and value[10:11] == " ")
        counts["allowed differences (space in receivedAt)"] += allowed
        check(allowed, f"probe {desc}: the schema says {'valid' if schema_ok else 'invalid'} "
                       f"({validate.first_error('job', job)}), the worker said {verdict.get('code')}/{verdict.get('reason')}")


def main(argv):
    if len(argv) != 1 or not os.access(argv[0], os.X_OK):
        print("usage: test_schemas.py PATH/TO/attest-worker", file=sys.stderr)
        return 2
    binary = argv[0]
    print(f"jsonschema {_version()}, schemas in {validate.SCHEMAS_DIR}")
    for name, step in [("schemas and hand-written cases", test_examples_and_cases),
                       ("base64 patterns", test_base64_patterns),
                       ("shared vectors through verify", lambda: test_vectors(binary)),
                       ("field probes through verify", lambda: test_probes(binary))]:
        before = len(failures)
        step()
        print(f"{'ok  ' if len(failures) == before else 'FAIL'} {name}")
    for f in failures[:60]:
        print("  " + f)
    if len(failures) > 60:
        print(f"  ... and {len(failures) - 60} more")
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"schemas: {'FAILED, ' + str(len(failures)) + ' failure(s)' if failures else 'all good'} ({summary})")
    return 1 if failures else 0


def _version():
    try:
        from importlib.metadata import version
        return version("jsonschema")
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
