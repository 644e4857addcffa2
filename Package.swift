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

        // Duration in nanoseconds, milliseconds and seconds, for every module that hands one to an API.
        .target(name: "Durations"),
        // Pure Swift parsing: CBOR, DER/BER, authenticator data, certificates, CMS, receipts.
        .target(name: "AttestCore"),
        // The only module that calls libcrypto for verification: digests and ECDSA.
        .target(name: "AttestCrypto", dependencies: ["AttestCore", "COpenSSL", "COpenSSLShims"]),
        // Ordered checks with reason codes, trust anchors, caches, the clock.
        .target(name: "AttestVerifier", dependencies: ["AttestCore", "AttestCrypto"]),
        // Creates valid and deliberately broken attestations/assertions under a generated test PKI.
        .target(name: "AttestMint", dependencies: ["AttestCore", "AttestCrypto", "COpenSSL", "COpenSSLShims"]),
        // Job and verdict JSON shared by the offline verifier and the worker; classification of consumed records
        // and their dead letters.
        .target(name: "AttestJobs", dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "KafkaRecords"]),
        // Verdict tokens: ES256 JWTs on accepted verdicts, the signing key ring, the JWKS, and their verifier.
        .target(name: "AttestTokens", dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs"]),
        // Consumed Kafka records as plain values (no librdkafka), what classification and its fuzz target read.
        .target(name: "KafkaRecords"),
        // Thin owners of librdkafka and libpq objects.
        .target(name: "KafkaClient", dependencies: ["CRdKafka", "KafkaRecords", "Durations"]),
        .target(name: "PostgresClient", dependencies: ["CLibPQ", "Durations"]),
        // The HTTP surface (owner of the libmicrohttpd daemon), the Prometheus registry, health endpoints.
        .target(name: "Observability", dependencies: ["CMicroHTTPD", "Durations"]),
        // The service: configuration, storage, the consume → verify → store → publish pipeline.
        .target(
            name: "Worker",
            dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens", "KafkaClient",
                "PostgresClient", "Observability", "Durations"],
            resources: [.copy("Migrations")]
        ),
        // A backend's client: publish a job with a reply topic of its own, await its verdict (attest-worker submit).
        .target(name: "AttestClient", dependencies: ["AttestJobs", "KafkaClient", "Durations"]),
        // What both executables share: argument parsing, the subcommand protocol and main, the database option.
        .target(name: "AttestCLI", dependencies: ["AttestJobs", "PostgresClient", "Worker"]),
        // The production binary: the worker and its tools. It links no minting code (AttestMint).
        .executableTarget(
            name: "attest-worker",
            dependencies: ["AttestCLI", "AttestClient", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens",
                "Worker", "KafkaClient", "Observability", "PostgresClient"]
        ),
        // Benchmarks and load harnesses: minted workloads driving the attest-worker built beside it.
        .executableTarget(
            name: "attest-bench",
            dependencies: ["AttestCLI", "AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestMint", "Worker",
                "KafkaClient", "PostgresClient"]
        ),

        .testTarget(name: "DurationsTests", dependencies: ["Durations"]),
        .testTarget(name: "AttestCoreTests", dependencies: ["AttestCore"]),
        .testTarget(name: "KafkaClientTests", dependencies: ["KafkaClient"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient"]),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability"]),
        .testTarget(name: "AttestTokensTests", dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestTokens"]),
        // End to end against the ops/stack broker and PostgreSQL, driving the built attest-worker binary.
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["AttestClient", "AttestCore", "AttestCrypto", "AttestJobs", "AttestMint", "AttestTokens", "KafkaClient",
                "PostgresClient"]
        ),
        .testTarget(
            name: "WorkerTests",
            dependencies: ["AttestCore", "AttestCrypto", "AttestVerifier", "AttestJobs", "AttestMint", "AttestTokens", "Worker", "KafkaClient",
                "PostgresClient", "Observability"]
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
