/// A rejection: a coarse, stable `code` for clients, a fine `reason` for analytics, and a message for
/// support. The message never holds attestation bytes, receipts or keys.
public struct VerificationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: FailureCode
    public var reason: FailureReason
    public var message: String

    public init(_ code: FailureCode, _ reason: FailureReason, _ message: String) {
        self.code = code
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(code.rawValue)/\(reason.rawValue): \(message)" }

    /// Equality by code and reason only: messages are free text.
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code && a.reason == b.reason }
}

/// CONTRACT 3 codes.
public enum FailureCode: String, Sendable, CaseIterable {
    case attestationObjectInvalid = "attestation_object_invalid"
    case assertionInvalid = "assertion_invalid"
    case keyIdInvalid = "key_id_invalid"
    case clientDataHashInvalid = "client_data_hash_invalid"
    case challengeInvalid = "challenge_invalid"
    case challengeExpired = "challenge_expired"
    case challengeAlreadyUsed = "challenge_already_used"
    case appleValidationFailed = "apple_validation_failed"
    /// An Android attestation or assertion failed a check of its own (docs/CHECK_ORDER.md, Android).
    case androidValidationFailed = "android_validation_failed"
    case reattestRequired = "reattest_required"
    case quotaExceeded = "quota_exceeded"
    case jobInvalid = "job_invalid"
}

/// CONTRACT 3 reasons: a bounded set, used as a metric label and stored with verdicts.
public enum FailureReason: String, Sendable, CaseIterable {
    case malformedBase64 = "malformed_base64"
    case malformedCBOR = "malformed_cbor"
    case trailingData = "trailing_data"
    case unsupportedFormat = "unsupported_format"
    case missingCertificates = "missing_certificates"
    case certificateChainInvalid = "certificate_chain_invalid"
    case certificateExpired = "certificate_expired"
    case nonceMismatch = "nonce_mismatch"
    case keyIdMismatch = "key_id_mismatch"
    case publicKeyMismatch = "public_key_mismatch"
    case rpIdMismatch = "rp_id_mismatch"
    case counterNotZero = "counter_not_zero"
    case aaguidInvalid = "aaguid_invalid"
    case environmentNotAllowed = "environment_not_allowed"
    case credentialIdMismatch = "credential_id_mismatch"
    case receiptInvalid = "receipt_invalid"
    case signatureInvalid = "signature_invalid"
    case counterNotIncreasing = "counter_not_increasing"
    case unknownKey = "unknown_key"
    case challengeMismatch = "challenge_mismatch"
    case challengeUnknown = "challenge_unknown"
    case challengeExpired = "challenge_expired"
    case challengeNotYetIssued = "challenge_not_yet_issued"
    case challengeAlreadyUsed = "challenge_already_used"
    case receivedAtOutOfRange = "received_at_out_of_range"
    /// receivedAt is outside what the message's broker timestamp allows (ATTEST_MAX_RECEIVED_BEFORE_BROKER).
    case receivedAtBrokerMismatch = "received_at_broker_mismatch"
    case tooLarge = "too_large"
    case missingField = "missing_field"
    case invalidField = "invalid_field"
    case unknownApp = "unknown_app"
    /// The jobId was already decided for other content in the job's app.
    case jobIdReused = "job_id_reused"
    case quotaExceeded = "quota_exceeded"
    /// PostgreSQL refuses a value of the job (deterministically, unlike an outage): answered, not stored.
    case unstorable = "unstorable"
    /// The message is over ATTEST_MAX_MESSAGE_BYTES, but its jobId could be read (``JobFieldScan``): answered
    /// besides its dead letter, not stored.
    case messageTooLarge = "message_too_large"
    /// The message is not valid JSON, but its jobId could be read: answered besides its dead letter, not stored.
    case malformedJSON = "malformed_json"
    /// The key was revoked by an operator (`attest-worker device revoke`): its assertions, and its attestation
    /// sent again, are refused until the device attests a new key.
    case keyRevoked = "key_revoked"
    /// Android: a certificate of the chain is not DER X.509 v3 as the project reads it.
    case malformedCertificate = "malformed_certificate"
    /// Android: the chain does not end in a pinned root key (a software attestation, an emulator, a test root).
    case untrustedRoot = "untrusted_root"
    /// Android: a certificate of the chain is on Google's status list (revoked or suspended).
    case certificateRevoked = "certificate_revoked"
    /// Android: the leaf has no KeyDescription extension, or it is not one Android writes.
    case keyDescriptionInvalid = "key_description_invalid"
    /// Android: the attestation or the key is not in a TEE or StrongBox, or not in StrongBox where required.
    case securityLevelInsufficient = "security_level_insufficient"
    /// Android: the key was imported or derived, not generated in the secure hardware.
    case keyNotHardwareGenerated = "key_not_hardware_generated"
    /// Android: the attestation names another package.
    case packageNameMismatch = "package_name_mismatch"
    /// Android: the attestation lists a signing certificate the app's registration does not.
    case signingCertificateMismatch = "signing_certificate_mismatch"
    /// Android, where the app requires verified boot: the boot state is not VERIFIED.
    case bootStateUnverified = "boot_state_unverified"
    /// Android, where the app requires verified boot: the bootloader is unlocked.
    case deviceUnlocked = "device_unlocked"
    /// Android: the OS version or patch level is older than the app's minimum.
    case osOutdated = "os_outdated"
    /// Android attestations: the worker's status list is older than ATTEST_ANDROID_STATUS_LIST_MAX_AGE and
    /// ATTEST_ANDROID_STATUS_LIST_STALE refuses (a revoked chain could not be told apart); worth a retry later.
    case statusListStale = "status_list_stale"
    /// Android assertions: the attested key is of an algorithm this build cannot verify (ML-DSA on OpenSSL 3.0).
    case unsupportedKeyAlgorithm = "unsupported_key_algorithm"
}
