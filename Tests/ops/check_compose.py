#!/usr/bin/env python3
"""Checks docker-compose.yml against the worker's own settings: every topic the compose workers use exists.

- the worker's settings and defaults come from `attest-worker run --help` (the binary CI builds), or with
  --source from the list in Sources/Worker/Configuration/WorkerConfiguration.swift (and the lists it
  appends, such as ReceiptRefreshSettings.settings);
- each attest-worker service's environment is resolved as the worker resolves it: the image's ENV, then
  the service's environment (interpolated as compose does, `${VAR:-default}` and the rest, from this
  check's environment and an .env file beside the compose file), then the defaults for what is unset;
- the topics it uses are every *_TOPIC setting that is not empty (jobs, assertion jobs, verdicts, dead
  letters, events, and any added later) and every exact name in ATTEST_REPLY_TOPICS (prefix entries, `x*`,
  are the backends' topics to create and are only listed); the worker creates no topic at start
  (`run` never calls KafkaAdmin) and the broker's auto-creation is off, so each must be created by the
  service running `kafka-topics.sh --create` (kafka-init), which the workers wait for
  (service_completed_successfully), with --if-not-exists (its comment promises it is idempotent) and a
  partition count of at least 1 (docs/CONTRACT.md states no count);
- what docs/CONTRACT.md states about topics: a jobs topic's retention (its retention.ms, else the broker's
  log.retention.*, else Kafka's 7 days; unbounded under -1 or cleanup.policy=compact alone) plus
  ATTEST_MAX_JOB_AGE is at most ATTEST_VERDICT_RETENTION (section 5), and a jobs topic accepts messages of
  ATTEST_MAX_MESSAGE_BYTES (section 7, "Sizes": max.message.bytes, else the broker's message.max.bytes,
  else Kafka's 1048588);
- every ATTEST_* name the compose file gives a worker is a setting it knows (it refuses to start otherwise).

Usage: python3 Tests/ops/check_compose.py PATH/TO/attest-worker [--compose FILE]
       python3 Tests/ops/check_compose.py --source [--compose FILE]
(one line per problem and exit 1; exit 0 with a summary; exit 2 on a usage error)
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys

import yaml

root = pathlib.Path(__file__).resolve().parents[2]


def usage(message):
    print(f"check_compose.py: {message}\n"
          "usage: python3 Tests/ops/check_compose.py PATH/TO/attest-worker [--compose FILE]\n"
          "       python3 Tests/ops/check_compose.py --source [--compose FILE]", file=sys.stderr)
    sys.exit(2)


args = sys.argv[1:]
compose_path = root / "docker-compose.yml"
binary, source = None, False
while args:
    arg = args.pop(0)
    if arg == "--source":
        source = True
    elif arg == "--compose":
        if not args:
            usage("--compose needs a file")
        compose_path = pathlib.Path(args.pop(0))
    elif arg.startswith("-"):
        usage(f"unknown option {arg}")
    elif binary is None:
        binary = arg
    else:
        usage("more than one binary")
if source == (binary is not None):
    usage("give the attest-worker binary or --source (one of them)")

problems = []
notes = []
where = compose_path.name


# --- The worker's settings: name -> default ("" for none, None for required). ---

def settings_from_help(path):
    try:
        done = subprocess.run([path, "run", "--help"], capture_output=True, text=True, timeout=60)
    except OSError as error:
        usage(f"cannot run {path}: {error}")
    if done.returncode != 0:
        usage(f"{path} run --help exited {done.returncode}: {done.stderr.strip()}")
    # RunCommand.help: "  NAME (default VALUE)", "  NAME (required)" or "  NAME" (empty default).
    found = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"\s+(ATTEST_[A-Z0-9_]+)(?: \((?:default (.*)|(required))\))?\s*", line)
        if match:
            found[match[1]] = None if match[3] else (match[2] or "")
    return found


SWIFT_STRING = r'"(?:[^"\\]|\\.)*"'


def swift_constant(expression):
    """The value of `Type.name` or `name` when some `static let name = "..."` under Sources defines it."""
    member = expression.split(".")[-1]
    values = set()
    for path in (root / "Sources").rglob("*.swift"):
        for literal in re.findall(rf'static let {re.escape(member)}(?:\s*:\s*String)?\s*=\s*({SWIFT_STRING})',
                                  path.read_text(encoding="utf-8")):
            values.add(literal[1:-1])
    return values.pop() if len(values) == 1 else f"<unresolved {expression}>"


def settings_from_source():
    found = {}

    def read_list(path):
        text = path.read_text(encoding="utf-8")
        start = re.search(r"static let settings: \[ConfigurationSetting\] = \[", text)
        if not start:
            problems.append(f"{path.relative_to(root)}: no `static let settings: [ConfigurationSetting]` list")
            return
        depth, index = 1, start.end()
        while depth and index < len(text):
            depth += {"[": 1, "]": -1}.get(text[index], 0)
            index += 1
        body = text[start.end():index - 1]
        value_pattern = rf"nil|{SWIFT_STRING}|[A-Za-z_][A-Za-z0-9_.]*"
        for name, value in re.findall(rf'\.init\(\s*"(ATTEST_[A-Z0-9_]+)"\s*,\s*({value_pattern})\s*,', body):
            found[name] = None if value == "nil" else value[1:-1] if value.startswith('"') else swift_constant(value)
        # `] + OtherType.settings`: that type's list joins this one.
        for other in re.findall(r"\A\s*\+\s*([A-Za-z_][A-Za-z0-9_]*)\.settings", text[index:]):
            files = [p for p in (root / "Sources").rglob("*.swift")
                     if re.search(rf"\b(?:struct|enum|class|extension) {other}\b", p.read_text(encoding="utf-8"))
                     and "static let settings:" in p.read_text(encoding="utf-8")]
            if len(files) != 1:
                problems.append(f"{path.relative_to(root)}: cannot find the settings of {other}")
            else:
                read_list(files[0])

    read_list(root / "Sources/Worker/Configuration/WorkerConfiguration.swift")
    return found


defaults = settings_from_help(binary) if binary else settings_from_source()
origin = f"{binary} run --help" if binary else "Sources/Worker/Configuration/WorkerConfiguration.swift"
for name in ("ATTEST_JOBS_TOPIC", "ATTEST_VERDICTS_TOPIC", "ATTEST_DEADLETTER_TOPIC", "ATTEST_EVENTS_TOPIC",
             "ATTEST_REPLY_TOPICS", "ATTEST_MAX_JOB_AGE", "ATTEST_VERDICT_RETENTION", "ATTEST_MAX_MESSAGE_BYTES"):
    if name not in defaults:
        problems.append(f"{origin}: no setting {name} (renamed? this check must follow)")


# --- Compose interpolation (the compose specification's: $$, $NAME, ${NAME}, ${NAME:-x}, -, :+, +, :?, ?). ---

def env_file(path):
    values = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                name, value = line.split("=", 1)
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
                values[name.strip().removeprefix("export ").strip()] = value
    return values


variables = {**env_file(compose_path.parent / ".env"), **os.environ}


def interpolate(text, context):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "$":
            out.append(c)
            i += 1
        elif text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            if depth:
                problems.append(f"{where}: {context}: unterminated ${{ in {text!r}")
                return text
            body = text[i + 2:j - 1]
            match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(:?[-+?])?(.*)\Z", body, re.S)
            if not match:
                problems.append(f"{where}: {context}: cannot interpolate ${{{body}}}")
                return text
            name, operator, word = match[1], match[2] or "", match[3]
            value = variables.get(name)
            unset_or_empty = value is None or (operator.startswith(":") and value == "")
            if operator in ("-", ":-"):
                out.append(interpolate(word, context) if unset_or_empty else value)
            elif operator in ("+", ":+"):
                out.append("" if unset_or_empty else interpolate(word, context))
            elif operator in ("?", ":?"):
                if unset_or_empty:
                    problems.append(f"{where}: {context}: {name} is required ({interpolate(word, context)})")
                out.append(value or "")
            else:
                out.append(value or "")
            i = j
        else:
            match = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)", text[i:])
            if match:
                out.append(variables.get(match[1], ""))
                i += match.end()
            else:
                out.append("$")
                i += 1
    return "".join(out)


def environment_of(service_name, service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(entry.split("=", 1) if "=" in entry else (entry, variables.get(entry)) for entry in env)
    resolved = {}
    for path in ([service["env_file"]] if isinstance(service.get("env_file"), str) else service.get("env_file") or []):
        path = path["path"] if isinstance(path, dict) else path
        resolved.update(env_file(compose_path.parent / path))
    for name, value in env.items():
        # A name without a value takes this environment's; `NAME:` (null) passes nothing.
        if value is None:
            value = variables.get(name)
            if value is None:
                continue
        resolved[str(name)] = interpolate(str(value).lower() if isinstance(value, bool) else str(value),
                                          f"{service_name}: {name}")
    return resolved


def image_environment(service):
    """ATTEST_* ENV of the last stage of the service's Dockerfile (the image under compose's environment)."""
    build = service.get("build")
    if not build:
        return {}
    context = compose_path.parent / (build if isinstance(build, str) else build.get("context", "."))
    dockerfile = context / ("Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile"))
    if not dockerfile.exists():
        return {}
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    last_stage = re.split(r"(?im)^\s*FROM\s", text)[-1]
    env = {}
    for line in re.findall(r"(?im)^\s*ENV\s+(.*)$", last_stage):
        words = shlex.split(line)
        if words and "=" not in words[0]:
            env[words[0]] = " ".join(words[1:])
        else:
            env.update(word.split("=", 1) for word in words if "=" in word)
    return {k: v for k, v in env.items() if k.startswith("ATTEST_")}


try:
    compose = yaml.safe_load(compose_path.read_text(encoding="utf-8")) or {}
except (OSError, yaml.YAMLError) as error:
    usage(f"{compose_path}: {error}")
services = compose.get("services") or {}


def words(value):
    return [] if value is None else shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


# --- The topics kafka-init creates. ---

def shell_commands(script):
    """Simple commands of a shell script: lines joined at backslash-newline, split at ; && || | and newlines."""
    commands = []
    for line in re.sub(r"\\\n", " ", script).splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current = []
        for token in lexer:
            if token and set(token) <= set(";&|"):
                commands.append(current)
                current = []
            else:
                current.append(token)
        commands.append(current)
    return [c for c in commands if c]


created = {}         # topic -> {"partitions", "configs", "if_not_exists", "service"}
creators = set()
brokers = set()
for name, service in services.items():
    argv = [interpolate(w, f"{name}: command")
            for w in words(service.get("entrypoint")) + words(service.get("command"))]
    scripts = [w for w in argv if "kafka-topics" in w and ("\n" in w or " " in w)]
    commands = [c for s in scripts for c in shell_commands(s)]
    if any(w.endswith("kafka-topics.sh") for w in argv[:1]):
        commands.append(argv)
    for command in commands:
        if not command[0].endswith("kafka-topics.sh") or "--create" not in command:
            continue
        creators.add(name)
        line = " ".join(command)
        if any("$" in w for w in command):
            problems.append(f"{where}: {name}: cannot resolve the shell variable in: {line}")
            continue
        options, configs, k = {}, {}, 1
        while k < len(command):
            word = command[k]
            if word.startswith("--") and "=" in word:
                word, value = word.split("=", 1)
                command[k + 1:k + 1] = [value]
            if word in ("--create", "--if-not-exists"):
                options[word] = True
                k += 1
            elif k + 1 < len(command):
                if word == "--config":
                    key, _, value = command[k + 1].partition("=")
                    configs[key] = value
                else:
                    options[word] = command[k + 1]
                k += 2
            else:
                problems.append(f"{where}: {name}: {word} without a value in: {line}")
                k += 1
        topic = options.get("--topic")
        if not topic:
            problems.append(f"{where}: {name}: kafka-topics.sh --create without --topic: {line}")
            continue
        if "--bootstrap-server" in options:
            brokers.add(options["--bootstrap-server"].split(",")[0].rsplit(":", 1)[0])
        partitions = options.get("--partitions")
        if partitions is None or not partitions.isdigit() or int(partitions) < 1:
            problems.append(f"{where}: {name}: topic {topic} needs --partitions of at least 1 (got {partitions})")
            partitions = None
        partitions = int(partitions) if partitions else None
        entry = {"partitions": partitions, "configs": configs,
                 "if_not_exists": "--if-not-exists" in options, "service": name}
        if topic in created and (created[topic]["partitions"], created[topic]["configs"]) != (partitions, configs):
            problems.append(f"{where}: topic {topic} is created twice with different settings")
        created.setdefault(topic, entry)

# The broker's topic defaults (apache/kafka maps KAFKA_LOG_RETENTION_MS to log.retention.ms, and so on).
broker_env = {}
for name, service in services.items():
    if name in brokers or service.get("hostname") in brokers:
        broker_env.update(environment_of(name, service))
if brokers and not broker_env:
    notes.append(f"no service for the broker {', '.join(sorted(brokers))}: Kafka's own topic defaults assumed")
auto_create = ", and the broker's auto-creation is off"
if str(broker_env.get("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true")).lower() != "false":
    auto_create = ", and what the broker auto-creates gets its default partition count"
    notes.append("the broker may auto-create topics (KAFKA_AUTO_CREATE_TOPICS_ENABLE is not false): with "
                 "Kafka's default partition count, never the one intended")


def integer(text, what):
    try:
        return int(text)
    except (TypeError, ValueError):
        problems.append(f"{where}: {what}={text!r} is not a whole number")
        return None


def broker_retention_ms():
    for suffix, factor in (("MS", 1), ("MINUTES", 60_000), ("HOURS", 3_600_000)):
        name = f"KAFKA_LOG_RETENTION_{suffix}"
        if name in broker_env:
            value = integer(broker_env[name], name)
            return (None if value is None else value * factor if value >= 0 else -1), name
    return 168 * 3_600_000, "Kafka's default log.retention.hours=168"


def show(seconds):
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def worker_duration(text):
    """The worker's duration syntax (WorkerConfiguration.Reader.duration): 90, 90s, 15m, 12h, 8d."""
    match = re.fullmatch(r"([0-9]+)([smhd]?)", text or "")
    return int(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}[match[2]] if match else None


# --- Each worker service against the topics. ---

def is_worker(service):
    image = str(service.get("image") or "")
    dockerfile = service.get("build", {}).get("dockerfile", "") if isinstance(service.get("build"), dict) else ""
    return image.split(":")[0].endswith("attest-worker") or dockerfile.endswith("ops/Dockerfile")


checked = []
windows = set()  # the jobs topics' CONTRACT 5 sums, for the summary
workers = [n for n, s in services.items() if is_worker(s) and (words(s.get("command")) or ["run"])[0] == "run"]
if not workers:
    problems.append(f"{where}: no service runs `attest-worker run`")
for name in workers:
    service = services[name]
    env = {**image_environment(service), **environment_of(name, service)}
    for unknown in sorted(n for n in env if n.startswith("ATTEST_") and n not in defaults and n != "ATTEST_CONFIG"):
        problems.append(f"{where}: {name}: {unknown} is not a setting of the worker ({origin}): it refuses to start")
    if "ATTEST_CONFIG" in env or "--config" in words(service.get("command")):
        problems.append(f"{where}: {name}: a --config/ATTEST_CONFIG file is read: this check cannot see its settings")
    # The worker's resolution: a name that is set wins even when empty; the default otherwise.
    resolved = {setting: env.get(setting, default) for setting, default in defaults.items()}

    depends = service.get("depends_on") or {}
    for creator in sorted(creators):
        condition = depends.get(creator, {}).get("condition") if isinstance(depends, dict) else None
        if condition != "service_completed_successfully":
            problems.append(f"{where}: {name} does not wait for {creator} (depends_on condition "
                            "service_completed_successfully): it may start before its topics exist")

    needed = []  # (setting, topic)
    for setting in sorted(s for s in defaults if s.endswith("_TOPIC")):
        topic = resolved[setting]
        if topic is None or topic == "":
            if defaults[setting] != "":  # required or with a default: read as required
                problems.append(f"{where}: {name}: {setting} is empty: the worker refuses to start")
            continue
        needed.append((setting, topic))
    for entry in (e.strip(" \t") for e in (resolved.get("ATTEST_REPLY_TOPICS") or "").split(",")):
        if entry.endswith("*"):
            notes.append(f"ATTEST_REPLY_TOPICS entry {entry!r} is a prefix: its topics are the backends' to create")
        elif entry:
            needed.append(("ATTEST_REPLY_TOPICS", entry))

    # ATTEST_MAX_JOB_AGE and ATTEST_MAX_MESSAGE_BYTES are whole numbers (seconds, bytes), the retention a duration.
    whole = {s: int(resolved[s]) if (resolved.get(s) or "").isdigit() else None
             for s in ("ATTEST_MAX_JOB_AGE", "ATTEST_MAX_MESSAGE_BYTES")}
    max_job_age, max_message = whole["ATTEST_MAX_JOB_AGE"], whole["ATTEST_MAX_MESSAGE_BYTES"]
    verdict_retention = worker_duration(resolved.get("ATTEST_VERDICT_RETENTION"))
    for setting, value in (*whole.items(), ("ATTEST_VERDICT_RETENTION", verdict_retention)):
        if value is None:
            problems.append(f"{where}: {name}: {setting}={resolved.get(setting)!r} is not a value the worker takes")
    for setting, topic in needed:
        entry = created.get(topic)
        if entry is None:
            problems.append(f"{where}: {name}: {setting}={topic} is never created (no kafka-topics.sh --create "
                            f"--topic {topic}; the worker creates no topic{auto_create})")
            continue
        if not entry["if_not_exists"]:
            problems.append(f"{where}: {entry['service']}: topic {topic} is created without --if-not-exists: "
                            "a second `docker compose up` fails")
        configs = entry["configs"]
        if "retention.ms" in configs:
            retention_ms, source_of = integer(configs["retention.ms"], f"{topic} retention.ms"), "retention.ms"
        else:
            retention_ms, source_of = broker_retention_ms()
        if retention_ms is None:
            continue
        policy = configs.get("cleanup.policy", broker_env.get("KAFKA_LOG_CLEANUP_POLICY", "delete"))
        description = (f"{topic} ({entry['partitions']} partitions, "
                       f"{'retention ' + show(retention_ms // 1000) if retention_ms >= 0 else 'kept for good'}"
                       f"{'' if policy == 'delete' else ', cleanup.policy=' + policy}"
                       f"{', ' + configs['message.timestamp.type'] if 'message.timestamp.type' in configs else ''})")
        if setting.endswith("JOBS_TOPIC"):
            # CONTRACT 5: ATTEST_VERDICT_RETENTION covers the jobs topic's retention plus the maximum job age.
            if "delete" not in policy.split(","):
                problems.append(f"{where}: {name}: {setting}={topic} has cleanup.policy={policy}: jobs are kept "
                                "for good, longer than ATTEST_VERDICT_RETENTION covers (CONTRACT 5)")
            elif retention_ms < 0:
                problems.append(f"{where}: {name}: {setting}={topic} keeps jobs for good ({source_of}=-1), longer "
                                "than ATTEST_VERDICT_RETENTION covers (CONTRACT 5)")
            elif None not in (verdict_retention, max_job_age):
                retention = -(-retention_ms // 1000)
                if retention + max_job_age > verdict_retention:
                    problems.append(
                        f"{where}: {name}: {setting}={topic} retention {show(retention)} ({source_of}) plus "
                        f"ATTEST_MAX_JOB_AGE {show(max_job_age)} exceeds ATTEST_VERDICT_RETENTION "
                        f"{show(verdict_retention)}: a redelivered job may no longer find its verdict (CONTRACT 5)")
                else:
                    windows.add(f"{topic} {show(retention)} + ATTEST_MAX_JOB_AGE {show(max_job_age)} <= "
                                f"ATTEST_VERDICT_RETENTION {show(verdict_retention)}")
            # CONTRACT 7, Sizes: a job of up to ATTEST_MAX_MESSAGE_BYTES must be accepted by the topic.
            limit = integer(configs.get("max.message.bytes", broker_env.get("KAFKA_MESSAGE_MAX_BYTES", 1048588)),
                            f"{topic} max.message.bytes")
            if None not in (limit, max_message) and limit < max_message:
                problems.append(f"{where}: {name}: {setting}={topic} takes messages up to {limit} bytes, less than "
                                f"ATTEST_MAX_MESSAGE_BYTES {max_message} (CONTRACT 7)")
        checked.append((name, setting, description))

for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
topics = sorted({d for _, _, d in checked})
print(f"{where}: {', '.join(sorted(creators))} creates all {len(topics)} topics the workers use "
      f"(defaults from {origin}): {'; '.join(topics)}; {'; '.join(sorted(windows))}")
for note in sorted(set(notes)):
    print(f"note: {note}")
