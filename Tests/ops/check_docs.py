#!/usr/bin/env python3
"""Checks that the docs say only what the code does, against the built binary and the tree.

- versions: `attest-worker --version` and `attest-worker version` print `attest-worker X.Y.Z`, and X.Y.Z is
  CHANGELOG.md's top entry (`## X.Y.Z — date`); the changelog names every migration under
  Sources/Store/Migrations (as NNNN or a range NNNN–MMMM) and no other, and every verdict schemaVersion
  from 2 to the one the code writes (Sources/AttestJobs/Verdict.swift); docs/UPGRADING.md has a
  `## To X.Y.Z` section for every release but the first;
- the configuration reference: docs/CONFIGURATION.md is exactly what `attest-worker run --help-markdown`
  prints, and its table names exactly the settings `attest-worker run --help` lists (each missing or
  extra name reported by name);
- what README.md, docs/*.md and Schemas/README.md name (docs/design/ holds designs of what is not built,
  and CHANGELOG.md history, so neither is read):
  - every `ATTEST_*` name is a setting of `run --help`, `ATTEST_CONFIG`, or a name the ops/ scripts read
    (the local stack's); `ATTEST_X_*` must be the prefix of some setting;
  - every `attest-worker COMMAND` (in code spans and code blocks, also a span starting with a command's
    name, such as `verify --now`) is a command the binary knows, and every `--flag` after it appears in
    that command's `--help` (or its subcommand's); a flag alone in a span appears in some command's help;
    with --bench, `attest-bench` the same way;
  - every repository path (Sources/…, Tests/…, docs/…, ops/…, Schemas/…, examples/…, Fuzz/…, .ci/…,
    README.md, CHANGELOG.md, Package.swift, docker-compose.yml; globs allowed) exists;
  - every HTTP route (`/v1/…`, `/healthz`, `/.well-known/…`, with its method when one precedes it) is one
    the worker registers (`routes.add(...)` under Sources/, attest-bench's stand-in excluded), a path
    under a prefix route counting as that route;
- in docs/ARCHITECTURE.md, docs/THREAT_MODEL.md and docs/CHECK_ORDER.md, which walk through the code by its
  names: every Swift name in a code span (`Type`, `Type.member`, `Module.name`, `member(label:)`, a test
  suite or test) is declared under Sources/, Tests/ or Fuzz/; a lone lowerCamel member may instead be a JSON
  field the code spells in a string.

Usage: python3 Tests/ops/check_docs.py PATH/TO/attest-worker [--bench PATH/TO/attest-bench] [--root DIR]
(one line per problem and exit 1; exit 0 with a summary; exit 2 on a usage error)
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[2]


def usage(message):
    print(f"check_docs.py: {message}\n"
          "usage: python3 Tests/ops/check_docs.py PATH/TO/attest-worker [--bench PATH/TO/attest-bench] [--root DIR]",
          file=sys.stderr)
    sys.exit(2)


args = sys.argv[1:]
binary = bench = None
while args:
    arg = args.pop(0)
    if arg in ("--bench", "--root"):
        if not args:
            usage(f"{arg} needs a value")
        value = args.pop(0)
        if arg == "--bench":
            bench = value
        else:
            root = pathlib.Path(value).resolve()
    elif arg.startswith("-"):
        usage(f"unknown option {arg}")
    elif binary is None:
        binary = arg
    else:
        usage("more than one binary")
if binary is None:
    usage("give the attest-worker binary")

problems = []
counts = {}


def run(program, *arguments):
    """(status, stdout, stderr) of the program; sanitizer noise does not matter here."""
    try:
        done = subprocess.run([program, *arguments], capture_output=True, text=True, timeout=120)
    except OSError as error:
        usage(f"cannot run {program}: {error}")
    return done.returncode, done.stdout, done.stderr


def read(relative):
    path = root / relative
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        problems.append(f"{relative}: cannot read: {error.strerror}")
        return ""


# --- Versions, the changelog and the upgrade notes. ---

changelog = read("CHANGELOG.md")
releases = re.findall(r"^## (\d+\.\d+\.\d+)\b", changelog, flags=re.M)
for arguments in (["--version"], ["version"]):
    status, out, err = run(binary, *arguments)
    match = re.fullmatch(r"attest-worker (\d+\.\d+\.\d+)\n", out)
    if status != 0 or not match:
        problems.append(f"attest-worker {' '.join(arguments)}: expected `attest-worker X.Y.Z`, got {out.strip()!r} "
                        f"(exit {status}) {err.strip()}")
    elif not releases:
        problems.append("CHANGELOG.md: no `## X.Y.Z` release heading")
    elif match[1] != releases[0]:
        problems.append(f"attest-worker {' '.join(arguments)} prints {match[1]}, CHANGELOG.md's top entry is {releases[0]}")
if releases and releases != sorted(releases, key=lambda v: tuple(map(int, v.split("."))), reverse=True):
    problems.append(f"CHANGELOG.md: releases are not newest first: {', '.join(releases)}")
counts["releases"] = len(releases)

migrations = sorted(int(p.name[:4]) for p in (root / "Sources/Store/Migrations").glob("[0-9][0-9][0-9][0-9]_*.sql"))
named = set()
for first, last in re.findall(r"(?<![\w.:,])(\d{4})(?:\s*[–-]\s*(\d{4}))?(?![\w.:,])", changelog):
    if first.startswith("20"):  # a year (2026-12-01), not a migration
        continue
    named.update(range(int(first), int(last or first) + 1))
for number in migrations:
    if number not in named:
        problems.append(f"CHANGELOG.md: migration {number:04d} (Sources/Store/Migrations) is not named")
for number in sorted(named - set(migrations)):
    problems.append(f"CHANGELOG.md: names migration {number:04d}, which Sources/Store/Migrations lacks")
counts["migrations"] = len(migrations)

version_source = read("Sources/AttestJobs/Verdict.swift")
current = re.search(r"static let schemaVersion: Int64 = (\d+)", version_source)
if not current:
    problems.append("Sources/AttestJobs/Verdict.swift: no `static let schemaVersion`")
else:
    for version in range(2, int(current[1]) + 1):
        if not re.search(rf"`schemaVersion`\**\s+{version}\b", changelog):
            problems.append(f"CHANGELOG.md: does not say which release brought verdict `schemaVersion` {version}")

upgrading = read("docs/UPGRADING.md")
for release in releases[:-1]:
    if not re.search(rf"^## To {re.escape(release)}\b", upgrading, flags=re.M):
        problems.append(f"docs/UPGRADING.md: no `## To {release}` section")

# --- The configuration reference. ---

status, help_text, err = run(binary, "run", "--help")
if status != 0:
    usage(f"{binary} run --help exited {status}: {err.strip()}")
settings = [m[1] for m in re.finditer(r"^\s+(ATTEST_[A-Z0-9_]+)(?: \((?:default .*|required)\))?\s*$", help_text, flags=re.M)]
if not settings:
    problems.append("attest-worker run --help lists no settings")
counts["settings"] = len(settings)
status, generated, err = run(binary, "run", "--help-markdown")
reference = read("docs/CONFIGURATION.md")
if status != 0:
    problems.append(f"attest-worker run --help-markdown exited {status}: {err.strip()}")
elif generated != reference:
    problems.append("docs/CONFIGURATION.md differs from `attest-worker run --help-markdown` "
                    "(regenerate: attest-worker run --help-markdown > docs/CONFIGURATION.md)")
table = re.findall(r"^\| `(ATTEST_[A-Z0-9_]+)` \|", reference, flags=re.M)
for name in settings:
    if name not in table:
        problems.append(f"docs/CONFIGURATION.md: the setting {name} is not in the table")
for name in table:
    if name not in settings:
        problems.append(f"docs/CONFIGURATION.md: the table names {name}, which is not a setting")
if len(table) != len(set(table)):
    problems.append("docs/CONFIGURATION.md: a setting is in the table twice")

# --- Names the docs use. ---

documents = ["README.md", "Schemas/README.md"] + sorted(
    str(p.relative_to(root)) for p in (root / "docs").glob("*.md"))
texts = {name: read(name) for name in documents}


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# ATTEST_* names.
ops_names = set()
for path in (root / "ops").rglob("*"):
    if path.is_file() and path.suffix in ("", ".sh", ".py"):
        try:
            ops_names.update(re.findall(r"\bATTEST_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            pass
known_names = set(settings) | {"ATTEST_CONFIG"}
names_seen = 0
for document, text in texts.items():
    for match in re.finditer(r"\bATTEST_[A-Z0-9_]*[A-Z0-9](_\*)?", text):
        name = match[0]
        names_seen += 1
        where = f"{document}:{line_of(text, match.start())}"
        if name.endswith("_*"):
            if not any(s.startswith(name[:-1]) for s in settings):
                problems.append(f"{where}: {name} matches no setting")
        elif name not in known_names and name not in ops_names:
            problems.append(f"{where}: {name} is not a setting of attest-worker run (nor a name the ops/ scripts read)")
counts["ATTEST_* names"] = names_seen


# Commands and flags.
class Program:
    def __init__(self, name, path):
        self.name, self.path = name, path
        status, out, _ = run(path, "help")
        self.usage = out
        self.commands = {}  # command -> its subcommand words
        for line in out.splitlines():
            match = re.match(r"^ {2}([a-z][a-z-]*)(?:\s+([a-z|]+(?:\s+[a-z|]+)?))?(?:\s|$)", line)
            if match:
                words = (match[2] or "").split()
                subs = set(words[0].split("|")) if words else set()
                self.commands.setdefault(match[1], set()).update(subs)
        self.helps = {}

    def help(self, *words):
        if words not in self.helps:
            status, out, err = run(self.path, *words, "--help")
            self.helps[words] = (status, out + err)
        return self.helps[words]

    def known(self, command):
        status, text = self.help(command)
        return command in self.commands or (status in (0, 2) and "unknown command" not in text)

    def all_help(self):
        text = self.usage
        for command, subs in self.commands.items():
            text += self.help(command)[1]
            for sub in subs:
                text += self.help(command, sub)[1]
        return text


programs = {"attest-worker": Program("attest-worker", binary)}
if bench:
    programs["attest-bench"] = Program("attest-bench", bench)
every_flag_help = "".join(p.all_help() for p in programs.values())
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def has_flag(text, flag):
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def code_segments(text):
    """(offset, code) of inline code spans, fenced blocks and indented blocks (lines joined while a command
    continues on the next line)."""
    segments = []
    for match in re.finditer(r"```.*?\n(.*?)```", text, flags=re.S):
        segments.append((match.start(1), match[1]))
    outside = re.sub(r"```.*?```", lambda m: " " * len(m[0]), text, flags=re.S)
    for match in re.finditer(r"(?<!`)`([^`\n]+(?:\n[^`\n]+){0,2})`(?!`)", outside):
        segments.append((match.start(1), match[1]))
    # Indented code blocks: 4+ spaces after a blank line (or after another such line).
    offset, previous_blank, block = 0, True, None
    for line in outside.split("\n"):
        if line.startswith("    ") and (previous_blank or block is not None) and line.strip():
            if block is None:
                block = [offset, ""]
            block[1] += line + "\n"
        elif block is not None and not line.strip():
            block[1] += "\n"
        else:
            if block is not None:
                segments.append(tuple(block))
            block = None
        previous_blank = not line.strip()
        offset += len(line) + 1
    if block is not None:
        segments.append(tuple(block))
    return segments


commands_seen = flags_seen = 0
for document, text in texts.items():
    for offset, code in code_segments(text):
        # Split the segment into commands: each starts at a program name (or, in a span, at a command's
        # name: `verify --now`); a line of options (starting with `[`, `--` or `|`) continues the command
        # before it, any other line ends it.
        current = None  # (program, the words after its name)
        lines = code.split("\n")
        position = 0
        for line in lines:
            stripped = line.strip()
            tokens = list(re.finditer(r"\S+", line))
            scan_from = None  # where this line's flags begin, when they belong to `current`
            for index, token in enumerate(tokens):
                word = token[0].strip("`()[],;:")
                if word in programs:
                    program = programs[word]
                    following = [t[0] for t in tokens[index + 1:]]
                    current, scan_from = (program, following), token.end()
                    commands_seen += 1
                    first = following[0] if following else ""
                    where = f"{document}:{line_of(text, offset + position + token.start())}"
                    if first.startswith("--"):
                        if not has_flag(program.usage, first.split("=")[0]):
                            problems.append(f"{where}: `{word} {first}`: {word} has no such option")
                    elif re.fullmatch(r"[a-z][a-z-]*", first) and not program.known(first):
                        problems.append(f"{where}: `{word} {first}`: {word} has no command {first}")
                    break
            if scan_from is None:
                words = stripped.split()
                if current is not None and stripped.startswith(("[", "--", "|")):
                    scan_from = 0
                elif words and words[0] in programs["attest-worker"].commands and words[0] != "help" and FLAG.search(stripped):
                    current, scan_from = (programs["attest-worker"], words), 0
                else:
                    current = None
            if current is not None and scan_from is not None:
                program, words = current
                command = words[0] if words and re.fullmatch(r"[a-z][a-z-]*", words[0]) else None
                sub = words[1] if command and len(words) > 1 and re.fullmatch(r"[a-z][a-z-]*", words[1]) else None
                helps = program.usage
                if command:
                    helps += program.help(command)[1]
                    if sub:
                        helps += program.help(command, sub)[1]
                for flag in FLAG.findall(line[scan_from:]):
                    flags_seen += 1
                    if not has_flag(helps, flag):
                        where = f"{document}:{line_of(text, offset + position)}"
                        problems.append(f"{where}: `{program.name} {command or ''}` has no option {flag} in its --help")
            elif len(lines) == 1 and re.fullmatch(r"--[a-z][a-z0-9-]*(?:[ =]\S+)?", stripped):
                # A flag alone in a span (`--config`): some command must have it.
                flag = FLAG.match(stripped)[0]
                flags_seen += 1
                if not has_flag(every_flag_help, flag):
                    problems.append(f"{document}:{line_of(text, offset + position)}: {flag} is no option of "
                                    f"{' or '.join(programs)}")
            position += len(line) + 1
counts["commands"], counts["flags"] = commands_seen, flags_seen

# Repository paths.
ROOTS = ("Sources", "Tests", "docs", "ops", "Schemas", "examples", "Fuzz", r"\.ci")
FILES = ("README.md", "CHANGELOG.md", "Package.swift", "docker-compose.yml")
path_pattern = re.compile(
    rf"(?<![\w/.…-])((?:{'|'.join(ROOTS)})/[\w./*{{}}+-]*|(?:{'|'.join(re.escape(f) for f in FILES)})(?![\w.-]))")
paths_seen = 0
for document, text in texts.items():
    for match in path_pattern.finditer(text):
        path = match[1].split("#")[0].rstrip(".,;:)")
        if path.endswith("/") and path.count("/") == 1 and path[:-1] in ROOTS:
            continue
        paths_seen += 1
        if "{" in path:
            candidates = [path.split("{")[0]]
        else:
            candidates = [path]
        exists = any(list(root.glob(c.rstrip("/"))) if "*" in c else (root / c).exists() for c in candidates)
        if not exists:
            problems.append(f"{document}:{line_of(text, match.start())}: {path} does not exist")
counts["paths"] = paths_seen

# HTTP routes: the worker's table, from the code.
SWIFT_STRING = r'"((?:[^"\\]|\\.)*)"'


def resolve(expression, path):
    """A route's path expression: a literal, or `name`, `Self.name`, `Type.name` defined by a `static let`."""
    literal = re.fullmatch(SWIFT_STRING, expression)
    if literal:
        return literal[1]
    parts = expression.split(".")
    member, owner = parts[-1], parts[0] if len(parts) > 1 and parts[0] != "Self" else None
    files = [path]
    if owner:
        files = [p for p in (root / "Sources").rglob("*.swift")
                 if re.search(rf"\b(?:struct|enum|class|extension) {owner}\b", p.read_text(encoding="utf-8"))]
    values = set()
    for file in files:
        values.update(re.findall(rf"static let {re.escape(member)}(?:\s*:\s*String)?\s*=\s*{SWIFT_STRING}",
                                 file.read_text(encoding="utf-8")))
    return values.pop() if len(values) == 1 else None


routes = []  # (method, path, is_prefix)
for source in (root / "Sources").rglob("*.swift"):
    if "attest-bench" in source.parts:
        continue
    for match in re.finditer(r'routes\.add\(\s*"([A-Z]+)"\s*,\s*(prefix:\s*)?([^,)\s]+)', source.read_text(encoding="utf-8")):
        path = resolve(match[3], source)
        if path is None:
            problems.append(f"{source.relative_to(root)}: cannot resolve the route path {match[3]}")
        else:
            routes.append((match[1], path, bool(match[2])))
if not routes:
    problems.append("no routes.add(...) registrations found under Sources/")

FILESYSTEM = {"tmp", "proc", "etc", "usr", "var", "dev", "root", "home", "path", "work", "opt", "bin", "sys", "run"}
routes_seen = 0
for document, text in texts.items():
    for match in re.finditer(r"(?:\b(GET|POST|PUT|DELETE|HEAD|PATCH) )?(?<![\w.:/…~-])(/[A-Za-z0-9._{}~-]+(?:/[A-Za-z0-9._{}~-]*)*)", text):
        method, path = match[1], match[2].rstrip(".,;:")
        first = path.split("/")[1]
        if first in FILESYSTEM or first.isdigit() or not first:
            continue
        routes_seen += 1
        served = [(m, p) for m, p, prefix in routes
                  if (path == p or (prefix and path.startswith(p)))]
        where = f"{document}:{line_of(text, match.start())}"
        if not served:
            problems.append(f"{where}: {path} is not a route the worker serves")
        elif method and not any(m == method or (method == "HEAD" and m == "GET") for m, _ in served):
            problems.append(f"{where}: {method} {path}: the worker serves it for {', '.join(sorted({m for m, _ in served}))}")
counts["routes"] = routes_seen

# Swift names in the docs that walk through the code: every type, `Type.member`, module or member a code span
# gives is declared under Sources/, Tests/ or Fuzz/ (a member may also be a JSON field the code spells in a
# string), so a rename or a removed test breaks the check, not the walk.
NAMED_DOCUMENTS = ("docs/ARCHITECTURE.md", "docs/THREAT_MODEL.md", "docs/CHECK_ORDER.md")
sources = {path: path.read_text(encoding="utf-8") for folder in ("Sources", "Tests", "Fuzz")
           for path in (root / folder).rglob("*.swift")}
DECLARATION = r"\b(?:class|struct|enum|protocol|actor|typealias|extension)\s+"
files_of = {}  # type -> the text of the files that declare or extend it
for path, source in sources.items():
    for declared in set(re.findall(DECLARATION + r"(?:\w+\.)*([A-Z]\w*)", source)):
        files_of[declared] = files_of.get(declared, "") + source
modules = {path.name for folder in ("Sources", "Tests", "Fuzz") if (root / folder).is_dir()
           for path in (root / folder).iterdir() if path.is_dir()}


def declares(text, name):
    """Whether `text` declares `name`: a type, or a func, var, let, init label or enum case."""
    if name[0].isupper():
        return re.search(DECLARATION + rf"(?:\w+\.)*{name}\b", text) is not None
    if re.search(rf"\b(?:func|var|let)\s+`?{name}\b", text):
        return True
    return any(re.search(rf"(?:^|,)\s*`?{name}\b", cases) for cases in re.findall(r"\bcase\s+([^\n=:{]+)", text))


everything = "\n".join(sources.values())
names_seen = 0
for document in NAMED_DOCUMENTS:
    text = texts.get(document, "")
    for match in re.finditer(r"`([^`\n]+)`", text):
        span = match[1].strip()
        name = re.fullmatch(r"(\w+(?:\.\w+)*)(?:\((?:\w*:)*\))?", span)
        if not name:
            continue
        parts = name[1].split(".")
        first, where = parts[0], f"{document}:{line_of(text, match.start())}"
        if first[0].isupper() and re.search(r"[a-z]", first) and "_" not in first:
            names_seen += 1
            if first in modules and first not in files_of:
                scope, parts = everything, parts[1:]
            elif first in files_of:
                scope, parts = files_of[first], parts[1:]
            else:
                problems.append(f"{where}: `{span}`: no type or module {first} under Sources/, Tests/ or Fuzz/")
                continue
            for member in parts:
                if not declares(scope, member):
                    problems.append(f"{where}: `{span}`: {member} is not declared where {first} is")
                    break
                scope = files_of.get(member, scope) if member[0].isupper() else scope
        elif len(parts) == 1 and re.fullmatch(r"[a-z]+[A-Z]\w*", first):
            names_seen += 1
            if not declares(everything, first) and f'"{first}"' not in everything:
                problems.append(f"{where}: `{span}`: nothing declares {first}")
counts["Swift names"] = names_seen

summary = (", ".join(f"{n} {what}" for what, n in counts.items())
           + f" checked in {len(documents)} documents, CHANGELOG.md and docs/CONFIGURATION.md")
for problem in problems:
    print(problem)
if problems:
    print(f"check_docs.py: {len(problems)} problems ({summary})")
    sys.exit(1)
print("docs agree with the code: " + summary)
