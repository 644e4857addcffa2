#!/usr/bin/env python3
"""Send App Attest jobs to attest-worker and wait for their verdicts, as a Python backend would.

usage: round_trip.py [--brokers HOST:PORT] [--jobs-topic NAME] [--reply-topic NAME] [--timeout SECONDS]
                     [--traceparent TRACEPARENT] [FILE]

FILE (default: standard input) holds jobs as JSON lines (docs/CONTRACT.md section 2). A job without
`receivedAt` gets the current time, which is when this backend received it. Each job is published to the
jobs topic keyed by its keyId (so a device's jobs stay in order) with the headers `reply-to` (this
process's reply topic), a fresh `correlation-id` and a W3C `traceparent` (given, or a new trace). The
worker publishes each verdict to the verdicts topic and, when the reply topic is in its
ATTEST_REPLY_TOPICS, to the reply topic too, with the job's `correlation-id`, `traceparent` and `jobId`
headers. This reads the reply topic from its end, on every partition, without a consumer group (no
rebalance to wait for), starting before the first job is published, and matches replies by
correlation-id: replies of other processes sharing the topic are skipped.

Prints each verdict as one JSON line on stdout as it arrives and a line about it on stderr. Exit status 0
when every job was answered and accepted, 1 when every job was answered and some were rejected, 2 on a
usage error, a job that could not be published, or a deadline that passed first (the jobs still without
a verdict are named on stderr).
"""
import argparse
import json
import os
import secrets
import sys
import time
import uuid
from datetime import datetime, timezone

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def fail(message):
    print(f"round_trip: {message}", file=sys.stderr)
    sys.exit(2)


def read_jobs(stream):
    jobs = []
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            job = json.loads(line)
        except ValueError as error:
            fail(f"line {number} is not JSON: {error}")
        if not isinstance(job, dict) or not isinstance(job.get("jobId"), str) or not isinstance(job.get("keyId"), str):
            fail(f"line {number} is not a job with a jobId and a keyId")
        job.setdefault("receivedAt", datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        jobs.append(job)
    return jobs


def new_traceparent():
    """A new W3C trace context: version 00, random trace and span ids, sampled."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def ensure_topic(brokers, topic, timeout):
    """Creates the reply topic when it is missing (the worker only publishes to topics that exist)."""
    admin = AdminClient({"bootstrap.servers": brokers})
    if topic in admin.list_topics(timeout=timeout).topics:
        return
    future = admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1)])[topic]
    try:
        future.result(timeout=timeout)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def reply_consumer(brokers, topic, timeout):
    """A consumer assigned to the current end of every partition of `topic`: replies produced after this
    returns are read, older ones never. The group id is a throwaway: nothing is committed and no group is
    joined, since partitions are assigned, not subscribed to."""
    consumer = Consumer({
        "bootstrap.servers": brokers, "group.id": f"round-trip-{uuid.uuid4()}", "enable.auto.commit": False,
        "auto.offset.reset": "latest",
    })
    partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
    assignment = []
    for partition in partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        assignment.append(TopicPartition(topic, partition, high if high >= 0 else OFFSET_END))
    consumer.assign(assignment)
    return consumer


def header(message, name):
    for key, value in message.headers() or []:
        if key == name and value is not None:
            return value.decode("utf-8", "replace")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", help="jobs as JSON lines (default: standard input)")
    parser.add_argument("--brokers", default=os.environ.get("ATTEST_KAFKA_BROKERS", "127.0.0.1:9092"))
    parser.add_argument("--jobs-topic", default=os.environ.get("ATTEST_JOBS_TOPIC", "appattest.jobs"))
    parser.add_argument("--reply-topic", default="appattest.replies.python")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for all verdicts (default 30)")
    parser.add_argument("--traceparent", help="the caller's W3C traceparent (default: a new trace per job)")
    args = parser.parse_args()
    if args.timeout <= 0:
        fail("--timeout must be positive")
    deadline = time.monotonic() + args.timeout
    if args.file:
        with open(args.file) as stream:
            jobs = read_jobs(stream)
    else:
        jobs = read_jobs(sys.stdin)
    if not jobs:
        fail("no jobs")

    ensure_topic(args.brokers, args.reply_topic, args.timeout)
    consumer = reply_consumer(args.brokers, args.reply_topic, args.timeout)
    producer = Producer({"bootstrap.servers": args.brokers, "enable.idempotence": True})
    waiting = {}  # correlation-id -> (jobId, traceparent)
    failed = []

    def delivered(error, message):
        if error is not None:
            failed.append(f"{header(message, 'correlation-id')}: {error}")

    for job in jobs:
        correlation_id = str(uuid.uuid4())
        traceparent = args.traceparent or new_traceparent()
        waiting[correlation_id] = (job["jobId"], traceparent)
        producer.produce(
            args.jobs_topic, key=job["keyId"].encode(), value=json.dumps(job, separators=(",", ":")).encode(),
            headers=[("reply-to", args.reply_topic.encode()), ("correlation-id", correlation_id.encode()),
                     ("traceparent", traceparent.encode())],
            on_delivery=delivered)
        producer.poll(0)
    if producer.flush(max(deadline - time.monotonic(), 0.1)) > 0 or failed:
        fail(f"jobs not published: {'; '.join(failed) or 'no acknowledgement before the deadline'}")

    rejected = 0
    while waiting and time.monotonic() < deadline:
        message = consumer.poll(min(0.5, max(deadline - time.monotonic(), 0.01)))
        if message is None:
            continue
        if message.error():
            if message.error().code() != KafkaError._PARTITION_EOF:
                print(f"round_trip: {message.error()}", file=sys.stderr)
            continue
        correlation_id = header(message, "correlation-id")
        if correlation_id not in waiting:
            continue  # another caller's reply on the shared topic
        job_id, sent_traceparent = waiting.pop(correlation_id)
        verdict = json.loads(message.value())
        print(json.dumps(verdict, separators=(",", ":")), flush=True)
        outcome = "accepted" if verdict.get("ok") else f"rejected {verdict.get('code')}/{verdict.get('reason')}"
        print(f"round_trip: {job_id}: {outcome} (correlation-id {correlation_id}, traceparent "
              f"{header(message, 'traceparent')}{'' if header(message, 'traceparent') == sent_traceparent else ' CHANGED'})",
              file=sys.stderr)
        if not verdict.get("ok"):
            rejected += 1
    consumer.close()
    if waiting:
        fail(f"no verdict within {args.timeout:g} s for: {', '.join(job for job, _ in waiting.values())}")
    print(f"round_trip: {len(jobs)} answered, {len(jobs) - rejected} accepted, {rejected} rejected", file=sys.stderr)
    sys.exit(1 if rejected else 0)


if __name__ == "__main__":
    main()
