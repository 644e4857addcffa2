#!/usr/bin/env python3
"""Validate JSON lines against the message schemas in Schemas/ (JSON Schema draft 2020-12).

usage: validate.py SCHEMA [--schemas DIR] < lines.jsonl

SCHEMA is attestation-job, assertion-job, android-attestation-job, android-assertion-job, verdict,
deadletter, or a path to a *.schema.json file; `job` picks the job schema per line the way the worker does
(kind, else attestationObject, else assertion). Blank lines are skipped. Exit status 0 when every line is valid, 1 naming the first
line that is not (JSON error or schema violation, with the JSON pointer of the failing member), 2 on
usage errors or when python3-jsonschema is missing.

Format checking is on. `date-time` is checked by our own RFC 3339 checker (below), not by jsonschema's,
which needs the rfc3339-validator package that Debian 12 lacks and otherwise skips the check silently.
It accepts what the worker reads (Timestamp(rfc3339:)): T/t separator, seconds 00-59 (no leap second),
any fraction, Z/z or +hh:mm/-hh:mm, and a real calendar day.

`pattern` is evaluated with ECMA-262 semantics for `$`: Python's re lets `$` match before a final
newline, so "QUJD\\n" would pass `^...$`; here `$` means end of string, as in every JSON Schema validator
that follows the specification.

Importable: validator(name) returns a jsonschema validator; first_error(name, value) a message or None.
"""
import functools
import json
import os
import re
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
    from jsonschema.exceptions import best_match
except ImportError:  # pragma: no cover - environment problem
    print("validate.py: the Python module jsonschema is missing (Debian: apt-get install python3-jsonschema)",
          file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "Schemas"))
NAMES = ("attestation-job", "assertion-job", "android-attestation-job", "android-assertion-job", "verdict", "deadletter",
         "usage-response", "event", "token-consume-request", "token-consume-response",
         "challenge-response")

# ------------------------------------------------------------------------------------------- formats
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))")


def is_rfc3339(text):
    """RFC 3339 date-time as the worker reads it (see the module comment)."""
    if not isinstance(text, str):
        return True  # format applies to strings only
    m = _RFC3339.fullmatch(text)
    if not m:
        return False
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if not (1 <= month <= 12 and 0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= second <= 59):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not 1 <= day <= days:
        return False
    if m.group(7) is not None and not (int(m.group(7)) <= 23 and int(m.group(8)) <= 59):
        return False
    return True


def format_checker():
    checker = FormatChecker()  # every format jsonschema can check here ...
    checker.checks("date-time")(is_rfc3339)  # ... with our date-time in place of the optional one
    return checker


# ------------------------------------------------------------------------------------------- pattern
@functools.lru_cache(maxsize=None)
def ecma_regex(pattern):
    """Compiles a JSON Schema (ECMA-262) pattern for Python: unescaped `$` outside a class becomes \\Z."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return re.compile("".join(out))


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = validators.extend(Draft202012Validator, {"pattern": _pattern})


# ------------------------------------------------------------------------------------------- schemas
def schema_path(name, schemas_dir=SCHEMAS_DIR):
    if name.endswith(".json") or os.sep in name:
        return name
    return os.path.join(schemas_dir, f"{name}.schema.json")


@functools.lru_cache(maxsize=None)
def load(name, schemas_dir=SCHEMAS_DIR):
    with open(schema_path(name, schemas_dir), encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def validator(name, schemas_dir=SCHEMAS_DIR):
    schema = load(name, schemas_dir)
    Draft202012Validator.check_schema(schema)
    return Validator(schema, format_checker=format_checker())


def job_schema_name(value):
    """The schema for a message on the jobs topic, chosen as Job.parse chooses the kind."""
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind in ("android_attestation", "android_assertion"):
            return kind.replace("_", "-") + "-job"
        if kind == "assertion":
            return "assertion-job"
        if kind is None and "attestationObject" not in value and "assertion" in value:
            return "assertion-job"
    return "attestation-job"


def first_error(name, value, schemas_dir=SCHEMAS_DIR):
    """The most relevant violation as 'SCHEMA at /pointer: message', or None when `value` is valid."""
    if name == "job":
        name = job_schema_name(value)
    error = best_match(validator(name, schemas_dir).iter_errors(value))
    if error is None:
        return None
    pointer = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"{os.path.basename(name).replace('.schema.json', '')} at {pointer}: {error.message}"


def main(argv):
    args, schemas_dir = [], SCHEMAS_DIR
    it = iter(argv)
    for a in it:
        if a == "--schemas":
            schemas_dir = next(it, None)
            if schemas_dir is None:
                return usage("--schemas needs a directory")
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            args.append(a)
    if len(args) != 1:
        return usage("expected one SCHEMA")
    name = args[0]
    if name != "job" and name not in NAMES and not os.path.isfile(schema_path(name, schemas_dir)):
        return usage(f"unknown schema {name!r} (one of job, {', '.join(NAMES)}, or a file)")
    try:
        for n in ([job_schema_name({}), "assertion-job"] if name == "job" else [name]):
            validator(n, schemas_dir)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"validate.py: cannot use schema {name}: {e}", file=sys.stderr)
        return 2
    count = 0
    for number, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as e:
            print(f"validate.py: line {number}: not JSON: {e}", file=sys.stderr)
            return 1
        problem = first_error(name, value, schemas_dir)
        if problem:
            print(f"validate.py: line {number}: {problem}", file=sys.stderr)
            return 1
        count += 1
    print(f"validate.py: {count} line(s) valid against {name}", file=sys.stderr)
    return 0


def usage(problem):
    print(f"validate.py: {problem}\nusage: validate.py SCHEMA [--schemas DIR] < lines.jsonl", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
