#!/usr/bin/env python3
"""Write seed corpora for the fuzz targets from the shared vectors.

usage: seeds.py VECTORS_DIR CORPUS_DIR
Writes CORPUS_DIR/<target>/seed-<name> for every target of ops/fuzz: the decoded attestation objects and
assertions of Tests/Fixtures/vectors/*.jsonl, the authenticator data, certificates and receipts inside
them, the receipts' certificates and payloads, the trust anchors' DER, and each case as a job line; for
the token target, a verdict token signed with Fuzz/Token.swift's fixed key and that key's JWKS.
Cases whose fields are deliberately malformed contribute what can be decoded. Identical inputs are
written once; existing seed files are overwritten, and whatever libFuzzer added to a corpus stays.
"""
import base64, binascii, glob, json, os, re, sys


def b64(text):
    """Strict base64 in either alphabet, or None (some cases carry malformed base64 on purpose)."""
    if not isinstance(text, str):
        return None
    try:
        alt = b'-_' if ('-' in text or '_' in text) else None
        return base64.b64decode(text + '=' * (-len(text) % 4), altchars=alt, validate=True)
    except (binascii.Error, ValueError):
        return None


def cbor(b, i=0):
    """One definite-length CBOR item at b[i:], as (value, end); enough for the vectors' objects."""
    major, info = b[i] >> 5, b[i] & 31
    i += 1
    if info < 24:
        n = info
    elif info <= 27:
        width = 1 << (info - 24)
        n, i = int.from_bytes(b[i:i + width], 'big'), i + width
    else:
        raise ValueError('indefinite length or reserved value')
    if major == 0:
        return n, i
    if major == 1:
        return -1 - n, i
    if major in (2, 3):
        if i + n > len(b):
            raise ValueError('truncated')
        return (b[i:i + n] if major == 2 else b[i:i + n].decode()), i + n
    if major == 4:
        items = []
        for _ in range(n):
            item, i = cbor(b, i)
            items.append(item)
        return items, i
    if major == 5:
        entries = {}
        for _ in range(n):
            key, i = cbor(b, i)
            entries[key], i = cbor(b, i)
        return entries, i
    if major == 6:
        return cbor(b, i)
    return None, i  # simple values and floats (their bytes were read as the argument)


def ber(b, i):
    """One BER element at b[i:] (low tag numbers), as (identifier, start, content start, content end, end)."""
    tag, length, start = b[i], b[i + 1], i
    i += 2
    if length == 0x80:  # indefinite: walk the elements inside to the end-of-contents octets
        j = i
        while b[j:j + 2] != b'\0\0':
            j = ber(b, j)[4]
        return tag, start, i, j, j + 2
    if length & 0x80:
        count = length & 0x7f
        length, i = int.from_bytes(b[i:i + count], 'big'), i + count
    return tag, start, i, i + length, i + length


def children(b, element):
    """The elements inside a constructed element."""
    out, i = [], element[2]
    while i < element[3]:
        child = ber(b, i)
        out.append(child)
        i = child[4]
    return out


def octets(b, element):
    """An OCTET STRING's contents, joining the segments of the constructed form."""
    if element[0] == 0x04:
        return b[element[2]:element[3]]
    return b''.join(octets(b, segment) for segment in children(b, element))


def receipt_parts(receipt):
    """A CMS receipt's certificates, its payload, and the attested key's certificate inside the payload."""
    content_info = children(receipt, ber(receipt, 0))
    signed_data = children(receipt, children(receipt, content_info[1])[0])
    encapsulated = children(receipt, signed_data[2])
    payload = octets(receipt, children(receipt, encapsulated[1])[0])
    certificates = []
    if signed_data[3][0] == 0xa0:
        certificates = [receipt[c[1]:c[4]] for c in children(receipt, signed_data[3])]
    fields = {}
    for item in children(payload, ber(payload, 0)):
        kind, _, value = children(payload, item)
        fields[int.from_bytes(payload[kind[2]:kind[3]], 'big')] = octets(payload, value)
    return certificates, payload, fields.get(3)


# `attest-worker verify --now 2026-05-01T12:00:00Z --token-key KEY` on att_valid_production (with a
# deviceId), KEY being Fuzz/Token.swift's fixed test key, and `attest-worker token jwks --key KEY`.
SEED_TOKEN = (
    'eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6Ii1INWFwRko3V2RFc0EzWnljYkpsNlNfcGYzZjJhUE41b2NPYWFGQTRHWEUifQ.'
    'eyJpc3MiOiJhdHRlc3Qtd29ya2VyIiwic3ViIjoiSFh1eUNFOFJFS244cHJ0MFdaZXlTeXJ0Y2FRMEFZMjBLNHR4K0liWXRTOD0iLCJhdWQiOiJB'
    'MUIyQzNENEU1LmNvbS5leGFtcGxlLnJlZmFwcCIsImlhdCI6MTc3NzYzNjgwMCwiZXhwIjoxNzc3NjQwNDAwLCJqdGkiOiJhdHRfdmFsaWRfcHJv'
    'ZHVjdGlvbiIsImtpbmQiOiJhdHRlc3RhdGlvbiIsImRldmljZUlkIjoiZGV2LTEiLCJlbnZpcm9ubWVudCI6InByb2R1Y3Rpb24ifQ.'
    'vVb-GWHlhXBUc_l3byN0OCX7QtYXEiV4nlqT5DTjGsIPpuvoQ9caR9OvBlObHQByef4Rhd7RHGJxHWcL0oiqQA')
SEED_JWKS = (
    '{"keys":[{"kty":"EC","crv":"P-256","x":"9jVEEa263v9sxkb8cWHQapcslv3dFIEAKHLMCOd-ywo",'
    '"y":"EDfmjWMWklv4ocGXcPKqa6H0s3_K9TXLvsNVG5s0BYI","kid":"-H5apFJ7WdEsA3ZycbJl6S_pf3f2aPN5ocOaaFA4GXE",'
    '"use":"sig","alg":"ES256"}]}')


def record(flags, timestamp, key_part, key_repeats, headers, value):
    """A record in Fuzz/Record.swift's input layout."""
    out = bytes([flags]) + (timestamp % 2**64).to_bytes(8, 'little') + (0).to_bytes(8, 'little') + (5).to_bytes(8, 'little')
    out += len(key_part).to_bytes(2, 'little') + key_part + bytes([key_repeats, len(headers)])
    for name, data in headers:
        out += bytes([len(name)]) + len(data).to_bytes(2, 'little') + name + data
    return out + value


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: seeds.py VECTORS_DIR CORPUS_DIR')
    vectors, corpus = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'cli'))
    from verify_vectors import job  # the job line the acceptance check builds for a case
    seeds = {t: {} for t in ('cbor', 'authdata', 'asn1', 'certificate', 'receipt', 'attestation', 'assertion', 'job',
                             'token', 'record', 'android')}
    seeds['token']['token'] = SEED_TOKEN.encode()
    seeds['token']['jwks'] = SEED_JWKS.encode()

    anchors = json.load(open(os.path.join(vectors, 'trust_anchors.json')))
    for set_name, roots in anchors.items():
        for role in ('attestationRoot', 'receiptRoot'):
            body = re.sub(r'-----[^-]+-----|\s', '', roots[role])
            for target in ('certificate', 'asn1'):
                seeds[target][f'{set_name}-{role}'] = base64.b64decode(body)

    for path in sorted(glob.glob(os.path.join(vectors, '*.jsonl'))):
        for line in open(path):
            case = json.loads(line)
            name = case['name']
            seeds['job'][name] = json.dumps(job(case)).encode()
            seeds['record'][name] = record(1 | 2, 1_777_000_000_000, case.get('keyId', '').encode()[:255], 0, [],
                                           seeds['job'][name])
            field = 'attestationObject' if case['kind'] == 'attestation' else 'assertion'
            obj = b64(case.get(field))
            if obj is None:
                continue
            seeds[case['kind']][name] = obj
            seeds['cbor'][name] = obj
            try:
                top, _ = cbor(obj)
                auth = top['authData'] if case['kind'] == 'attestation' else top['authenticatorData']
                seeds['authdata'][name] = auth
                if case['kind'] == 'attestation':
                    # The COSE key and the extension map after it, read by decodePrefix one after the other.
                    seeds['cbor'][name + '-cose'] = auth[55 + int.from_bytes(auth[53:55], 'big'):]
                    for n, der in enumerate(top['attStmt'].get('x5c', [])):
                        seeds['certificate'][f'{name}-x5c{n}'] = der
                        seeds['asn1'][f'{name}-x5c{n}'] = der
                    receipt = top['attStmt'].get('receipt')
                    seeds['receipt'][name] = seeds['asn1'][name + '-receipt'] = receipt
                    certificates, payload, attested = receipt_parts(receipt)
                    seeds['receipt'][name + '-payload'] = payload
                    seeds['certificate'][name + '-attested'] = attested
                    for n, der in enumerate(certificates):
                        seeds['certificate'][f'{name}-cms{n}'] = der
            except (ValueError, KeyError, IndexError, TypeError, AttributeError, UnicodeDecodeError):
                pass  # a deliberately broken case: keep what was decoded before the break

    # The reproduced attacks and their neighbours: a 440,000-byte key (55,000 bytes 8 times) with a value
    # that is not JSON, absurd timestamps, many and large headers, an empty record.
    seeds['record']['oversize-key'] = record(2, 0, b'k' * 55_000, 7, [], b'not json')
    for n, ms in enumerate([9_300_000_000_000_000, -9_300_000_000_000_000, 2**63 - 1, -2**63, -1]):
        seeds['record'][f'timestamp-{n}'] = record(1, ms, b'', 0, [], b'\xff\xfe')
    seeds['record']['headers'] = record(0, 0, b'', 0, [(b'h' * 200, b'v' * 3000)] * 20, b'{"jobId":"h"}')
    seeds['record']['empty'] = b'\0'

    # Real Android chains (Tests/Fixtures/android): each leaf whole and its KeyDescription's value.
    android = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'Fixtures', 'android')
    for path in sorted(glob.glob(os.path.join(android, '*.pem'))):
        blocks = re.findall(r'-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----', open(path).read(), re.S)
        name = os.path.basename(path)[:-4]
        if blocks:
            chain = [re.sub(r'\s', '', b) for b in blocks]
            android_job = json.dumps({'jobId': name, 'kind': 'android_attestation', 'packageName': 'com.example.app',
                                      'certificateChain': chain, 'challenge': 'Y2hhbGxlbmdl',
                                      'receivedAt': '2026-05-01T12:00:00Z'}).encode()
            seeds['job'][name + '-android'] = android_job
            seeds['record'][name + '-android'] = record(1 | 2, 1_777_000_000_000, name.encode(), 0, [], android_job)
            leaf = base64.b64decode(chain[0])
            seeds['android'][name] = leaf
            marker = bytes.fromhex('060a2b06010401d679020111')  # OID 1.3.6.1.4.1.11129.2.1.17
            at = leaf.find(marker)
            if at >= 0:
                i = at + len(marker)
                if leaf[i] == 0x01:  # a critical BOOLEAN before the OCTET STRING
                    i += 3
                length, start = leaf[i + 1], i + 2
                if length & 0x80:
                    n = length & 0x7f
                    length, start = int.from_bytes(leaf[i + 2:i + 2 + n], 'big'), i + 2 + n
                seeds['android'][name + '-keydescription'] = leaf[start:start + length]
    seeds['job']['android-assertion'] = json.dumps({
        'jobId': 'android-assertion', 'kind': 'android_assertion', 'packageName': 'com.example.app',
        'keyId': 'MWGN43m6uI0ms8ps5Jw8hXpbm8rXoWxfn2hJXKQhCjY=', 'signature': 'MEUCIQDc3cfAsVxs1YY9RwT3',
        'clientData': 'eyJjaGFsbGVuZ2UiOiJhYmMifQ==', 'challenge': 'abc', 'receivedAt': '2026-05-01T12:00:00Z',
        'publicKey': 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE'}).encode()
    seeds['android']['status-list'] = b'{"entries":{"1":{"status":"REVOKED","reason":"KEY_COMPROMISE"},"ff":{"status":"SUSPENDED"}}}'

    for target, files in seeds.items():
        directory = os.path.join(corpus, target)
        os.makedirs(directory, exist_ok=True)
        written = set()  # many cases share their certificates and receipts: one file per distinct input
        for name, data in files.items():
            if isinstance(data, bytes) and data and data not in written:
                written.add(data)
                with open(os.path.join(directory, 'seed-' + name), 'wb') as f:
                    f.write(data)
        print(f'{target}: {len(written)} seeds')


if __name__ == '__main__':
    main()
