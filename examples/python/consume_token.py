#!/usr/bin/env python3
"""Spend a limited-use verdict token at attest-worker before honouring the request that carried it.

usage: consume_token.py --url URL [--audience TEAMID.BUNDLEID] [--timeout SECONDS] TOKEN|-

A backend that received a limited-use token with a request (a verdict's `token`, for a job sent with
`"limitedUse": true` or an app requiring it for assertions) calls POST URL/v1/tokens/consume with it,
authenticated by the app's API key (ATTEST_API_KEY, or the shared secret). The worker verifies the token
(signature under its published keys, iss, exp, the app) and spends it in one statement shared by every
worker: the first call gets 200 and the token's claims, every later one 409. So verifying and consuming
are one call, and only a 200 lets the request through; everything else, a worker that cannot be reached
included, must refuse it.

Prints the claims (JSON) and exits 0 when this call spent the token; prints `refused: ERROR[: REASON]`
and exits 1 otherwise (token_already_consumed, token_invalid: expired, forbidden, token_not_limited_use,
unauthorized, ...); exits 2 on a usage error or when the worker did not answer. Standard library only.
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.request


def consume(url, credential, token, timeout=5.0):
    """POSTs the token; returns (status, body as a dict). Raises OSError when there is no answer."""
    request = urllib.request.Request(
        url.rstrip("/") + "/v1/tokens/consume", data=json.dumps({"token": token}).encode(), method="POST",
        headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:  # 4xx and 5xx still carry the worker's JSON answer
        try:
            return error.code, json.loads(error.read() or b"{}")
        except ValueError:
            return error.code, {}


def verify_and_consume(url, credential, token, audience=None, timeout=5.0):
    """The decision a backend makes: the claims when the token is valid and was spent by this call, else
    None with the reason. With the shared secret any app's token is spendable, so `audience` pins the app."""
    status, body = consume(url, credential, token, timeout)
    if status == 200 and isinstance(body.get("claims"), dict):
        claims = body["claims"]
        if audience is not None and claims.get("aud") != audience:
            return None, "audience_mismatch"
        if claims.get("limitedUse") is not True:
            return None, "token_not_limited_use"
        return claims, None
    error = body.get("error", f"http_{status}")
    return None, f"{error}: {body['reason']}" if body.get("reason") else error


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("token", help="the token, or - to read it from standard input")
    parser.add_argument("--url", required=True, help="the worker's product listener, e.g. http://127.0.0.1:8080")
    parser.add_argument("--audience", help="the app the token must be for (teamId.bundleId)")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    credential = os.environ.get("ATTEST_API_KEY")
    if not credential:
        print("consume_token: set ATTEST_API_KEY (an API key of the app, or the shared secret)", file=sys.stderr)
        return 2
    token = sys.stdin.readline().strip() if args.token == "-" else args.token
    try:
        claims, refusal = verify_and_consume(args.url, credential, token, args.audience, args.timeout)
    except OSError as error:
        print(f"consume_token: no answer from the worker ({error}): refuse the request", file=sys.stderr)
        return 2
    if claims is None:
        print(f"refused: {refusal}")
        return 1
    print(json.dumps(claims))
    return 0


if __name__ == "__main__":
    sys.exit(main())
