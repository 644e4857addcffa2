import AttestCrypto
import AttestJobs
import KafkaClient

extension KafkaMessage.Limits {
    /// What the worker copies of a consumed record: values up to ATTEST_MAX_MESSAGE_BYTES whole (anything
    /// longer is not a job, and its dead letter inlines at most the first 512 KiB), keys up to the outbound
    /// key bound, and the first headers up to 64 and 16 KiB (no job needs any).
    public static func worker(maxMessageBytes: Int) -> KafkaMessage.Limits {
        KafkaMessage.Limits(
            maxValueBytes: maxMessageBytes, valuePrefixBytes: 512 * 1024, maxKeyBytes: OutboundBudget.maxKeyBytes,
            maxHeaders: 64, maxHeaderBytes: 16 * 1024, sha256: { Digest.sha256.hash($0) })
    }
}
