/// The release this build is: the one source of the version `attest-worker --version` prints, the worker's
/// start log line carries and `/metrics` exports (`attest_build_info{version}`). It names the top entry of
/// CHANGELOG.md (Tests/ops/check_docs.py fails when they differ): bump both together.
public enum ReleaseVersion {
    public static let current = "0.9.15"
}
