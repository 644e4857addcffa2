import AttestVerifier

/// Which rejections count against the device whose keyId the job carries (docs/device-intelligence.md,
/// "What counts against a device"). A keyId is public and a device's old objects can be sent again, so a
/// rejection counts only when the failing object is vouched for by the device's own key (an assertion's
/// signature verified under the stored key) or by Apple (an attestation's authenticator data, bound to the
/// certified key by the chain, the nonce and the keyId): anything else anyone can send with a victim's keyId.
/// One exception, on purpose: a bad signature under the stored key counts although anyone can forge one;
/// its weight, the per-factor cap and the failure window bound what that buys (the residual risk, documented).
public enum FailureEvidence {
    /// One line per reason, in the order the checks run; exhaustive, so a new reason cannot go unclassified.
    public static func countsAgainstDevice(_ reason: FailureReason) -> Bool {
        switch reason {
        // The job's own fields and the app: whoever sends the job writes them.
        case .tooLarge: false  // a size any sender chooses
        case .missingField: false  // a job (or challenge) field left out by the sender
        case .invalidField: false  // a field the sender spelled wrong
        case .receivedAtOutOfRange: false  // the sender's timestamp
        case .receivedAtBrokerMismatch: false  // the sender's timestamp against the broker's
        case .unknownApp: false  // an app that is not registered: says nothing of any of its devices
        case .jobIdReused: false  // a jobId the sender chose again for other content
        case .unstorable: false  // a value the database refuses: the sender's bytes
        case .messageTooLarge, .malformedJSON: false  // the sender's bytes, never read as a job
        case .quotaExceeded: false  // the app's monthly limit, not the device
        // Challenges: the binding is checked before any signature or chain, so anyone can fail it.
        case .challengeUnknown: false  // a challenge the worker never issued
        case .challengeExpired: false  // an old challenge, typically from a captured job sent again
        case .challengeNotYetIssued: false  // a receivedAt backdated before the challenge existed
        case .challengeAlreadyUsed: false  // a captured job sent again: the replay stops here
        case .challengeMismatch: false  // clientData not binding the challenge: bytes anyone can write
        // Decoding: nothing is authenticated yet.
        case .malformedBase64: false  // not base64
        case .malformedCBOR: false  // not CBOR, or authenticator data of the wrong shape or length
        case .trailingData: false  // bytes appended to an object
        case .unsupportedFormat: false  // an attestation of another format
        case .missingCertificates: false  // no x5c
        // Attestation, Apple's step 1: until the chain verifies, the certificates are anyone's copies.
        case .certificateChainInvalid: false  // a chain that is not Apple's
        case .certificateExpired: false  // a genuine but expired chain: an old attestation sent again
        // Steps 2–5: until the nonce and the keyId hold, the authenticator data is not this key's.
        case .nonceMismatch: false  // a genuine chain with authenticator data it does not certify (swapped bytes)
        case .keyIdMismatch: false  // another key's genuine attestation, or a keyId of the wrong length
        // After the keyId check Apple has certified this authenticator data for this very key.
        case .publicKeyMismatch: true  // the certified key is not the credential's
        case .rpIdMismatch: true  // a genuine attestation, or a signed assertion, for another App ID
        case .counterNotZero: true  // a certified attestation whose counter is not zero
        case .aaguidInvalid: true  // a certified attestation with an aaguid that is not App Attest's
        case .environmentNotAllowed: true  // a certified key from an environment the app does not accept
        case .credentialIdMismatch: true  // certified authenticator data naming another credential
        // The receipt is not covered by the nonce: anyone can swap it in a copy of a genuine attestation.
        case .receiptInvalid: false
        // Assertions.
        case .unknownKey: false  // no key attested for the keyId: there is no device to hold it against
        case .signatureInvalid: true  // a bad signature under the stored key (forgeable: bounded, see above)
        case .counterNotIncreasing: true  // the stored key signed it, with a counter not above the stored one
        // After the object: the operator's revocation.
        case .keyRevoked: false  // the operator's decision, not the device's doing; its old objects replay freely
        case .statusListStale: false  // the worker's list, not the device
        // Android attestations: until the chain verifies to a pinned root and is not listed, nothing is
        // Google's; a well-formed KeyDescription and the challenge come next (a genuine chain sent again with
        // another challenge is anyone's replay).
        case .malformedCertificate, .untrustedRoot, .certificateRevoked, .keyDescriptionInvalid: false
        // After those the secure hardware has stated these facts of this very key.
        case .securityLevelInsufficient: true  // a key outside TEE and StrongBox, attested as such
        case .keyNotHardwareGenerated: true  // an imported key
        case .packageNameMismatch: true  // a key made for another package
        case .signingCertificateMismatch: true  // the app as installed is signed by someone else: repackaged
        case .bootStateUnverified, .deviceUnlocked: true  // a modified or unlocked device, where the app refuses it
        case .osOutdated: false  // the app's patch policy, not tampering
        // Android assertions: a key of an algorithm this build cannot use says nothing of the device.
        case .unsupportedKeyAlgorithm: false
        }
    }
}
