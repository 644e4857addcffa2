// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "attest-worker",
    products: [
        .executable(name: "attest-worker", targets: ["attest-worker"]),
        .executable(name: "attest-bench", targets: ["attest-bench"]),
        .library(name: "AttestVerifier", targets: ["AttestVerifier"]),
        .library(name: "AttestMint", targets: ["AttestMint"]),
        .library(name: "AttestClient", targets: ["AttestClient"]),
    ],
    targets: [
        // C libraries, imported only by the thin wrapper modules that own their objects.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "COpenSSLShims", dependencies: ["COpenSSL"]),
        // librdkafka >= 2.2, built by `ops/stack deps` as a static library under a name of its own.
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka-local"),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // Duration in nanoseconds, milliseconds and seconds, for every module that hands one to an API.
        .target(name: "Durations"),
        // One helper fanning work out over a fixed number of threads, for the batch's decide and the benchmarks.
        .target(name: "ConcurrentMap"),
        // The start/stop protocol every long-running component implements, the runner that starts them in
        // order and stops them in reverse, and the joinable thread they run on.
        .target(name: "Lifecycle", dependencies: ["Durations"]),
        // Pure Swift parsing and encoding: CBOR, DER/BER, authenticator data, certificates, CMS, receipts, JSON;
        // times and the one injected clock.
        .target(name: "AttestCore"),
        // The only module that calls libcrypto for verification: digests and ECDSA.
        .target(name: "AttestCrypto", dependencies: ["AttestCore", "COpenSSL", "COpenSSLShims"]),
        // Ordered checks with reason codes, trust anchors, caches.
        .target(name: "AttestVerifier", dependencies: ["AttestCore", "AttestCrypto"]),
        // Creates valid and deliberately broken attestations/assertions under a generated test PKI.
        .target(name: "AttestMint", dependencies: ["AttestCore", "AttestCrypto", "COpenSSL", "COpenSSLShims"]),
        // The device model, pure: what a verdict adds to a device's history, which failures count against it,
        // the risk score and its policy, the monthly quota rule. The worker stores it, the offline verifier
        // scores a job alone with it.
        .target(name: "DeviceIntelligence", dependencies: ["AttestCore", "AttestVerifier"]),
        // Apple's fraud-risk receipts: the exchange of a device's receipt for a refreshed one, classified.
        .target(
            name: "AppleReceipts",
            dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "Durations", "HTTPClient"]
        ),
        // Job and verdict JSON shared by the offline verifier and the worker (the verdict carries the device's
        // intelligence); classification of consumed records and their dead letters.
        .target(
            name: "AttestJobs",
            dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "DeviceIntelligence", "KafkaRecords"]
        ),
        // Verdict tokens: ES256 JWTs on accepted verdicts, the signing key ring, the JWKS, and their verifier.
        .target(name: "AttestTokens", dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs"]),
        // Consumed Kafka records as plain values (no librdkafka), what classification and its fuzz target read.
        .target(name: "KafkaRecords"),
        // Thin owners of librdkafka and libpq objects.
        .target(name: "KafkaClient", dependencies: ["AttestCore", "CRdKafka", "KafkaRecords", "Durations", "Lifecycle"]),
        .target(name: "PostgresClient", dependencies: ["CLibPQ", "Durations"]),
        // The thin owner of libcurl easy handles: blocking POSTs to outside services, TLS verified, bounded.
        .target(name: "HTTPClient", dependencies: ["CCurl", "Durations"]),
        // The HTTP surface (owner of the libmicrohttpd daemon), the Prometheus registry, health endpoints, the
        // structured logger.
        .target(name: "Observability", dependencies: ["AttestCore", "CMicroHTTPD", "Durations", "Lifecycle"]),
        // The worker's PostgreSQL storage: the schema's migrations and their migrator, the typed statements by
        // table, the stores over them (verdicts, devices, intelligence, challenges, keys, tokens, events
        // outbox, receipt refresh), partition retention, and the values they read and write.
        .target(
            name: "Store",
            dependencies: ["AppleReceipts", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens", "DeviceIntelligence",
                "PostgresClient", "Observability", "Lifecycle", "Durations"],
            resources: [.copy("Migrations")]
        ),
        // The service: configuration, the consume → verify → store → publish pipeline, its HTTP endpoints and
        // background tasks.
        .target(
            name: "Worker",
            dependencies: ["AppleReceipts", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens", "DeviceIntelligence",
                "HTTPClient", "KafkaClient", "PostgresClient", "Observability", "Durations", "ConcurrentMap", "Lifecycle", "Store"]
        ),
        // A backend's client: publish a job with a reply topic of its own, await its verdict (attest-worker submit),
        // and spend a limited-use verdict token at the worker (POST /v1/tokens/consume).
        .target(name: "AttestClient", dependencies: ["AttestCore", "AttestJobs", "AttestVerifier", "KafkaClient", "Durations", "HTTPClient"]),
        // What both executables share: argument parsing, the subcommand protocol and main, the database option.
        .target(name: "AttestCLI", dependencies: ["AttestJobs", "PostgresClient", "Worker"]),
        // The production binary: the worker and its tools. It links no minting code (AttestMint).
        .executableTarget(
            name: "attest-worker",
            dependencies: ["AttestCLI", "AttestClient", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens",
                "Worker", "Store", "DeviceIntelligence", "Durations", "HTTPClient", "KafkaClient", "Lifecycle", "Observability", "PostgresClient"]
        ),
        // Benchmarks and load harnesses: minted workloads driving the attest-worker built beside it.
        .executableTarget(
            name: "attest-bench",
            dependencies: ["AttestCLI", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestMint", "Worker", "Store",
                "KafkaClient", "PostgresClient", "ConcurrentMap", "Observability"]
        ),

        .testTarget(name: "DurationsTests", dependencies: ["Durations"]),
        // The benchmark's own arithmetic (/proc parsing, latency stages), against the executable's internals.
        .testTarget(name: "AttestBenchTests", dependencies: ["attest-bench", "AttestCLI", "AttestCore", "AttestCrypto", "KafkaClient"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle"]),
        // The libcurl client against a local libmicrohttpd server.
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "Observability"]),
        .testTarget(
            name: "AppleReceiptsTests",
            dependencies: ["AppleReceipts", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestMint", "HTTPClient", "Observability"]
        ),
        .testTarget(name: "AttestCoreTests", dependencies: ["AttestCore"]),
        .testTarget(name: "KafkaClientTests", dependencies: ["KafkaClient"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient"]),
        .testTarget(name: "ObservabilityTests", dependencies: ["AttestCore", "Durations", "Lifecycle", "Observability"]),
        .testTarget(name: "DeviceIntelligenceTests", dependencies: ["AttestCore", "AttestVerifier", "AttestJobs", "DeviceIntelligence"]),
        .testTarget(name: "AttestTokensTests", dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens"]),
        // End to end against the ops/stack broker and PostgreSQL, driving the built attest-worker binary.
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["AppleReceipts", "AttestClient", "AttestCore", "AttestCrypto", "AttestJobs", "AttestMint", "AttestTokens", "AttestVerifier",
                "DeviceIntelligence", "Durations", "KafkaClient", "PostgresClient"]
        ),
        .testTarget(
            name: "WorkerTests",
            dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestMint", "AttestTokens", "DeviceIntelligence",
                "Worker", "Store", "KafkaClient", "Lifecycle", "PostgresClient", "Observability", "ConcurrentMap"]
        ),
        .testTarget(
            name: "AttestVerifierTests",
            dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestMint"]
        ),
    ]
)

// STANDARD SETTINGS: strict concurrency and explicit member imports on every Swift target.
for target in package.targets where target.type != .system && target.name != "COpenSSLShims" {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
