import AttestCore

extension KeyDescription {
    /// The verdict's `android` member (CONTRACT 9): the facts a backend or an analytics job decides on,
    /// lifted to the top (security levels, boot state, OS and patch levels, the app), then both
    /// authorization lists whole under Google's tag names, so nothing the device stated is lost.
    public var verdictJSON: JSONValue {
        let hardware = hardwareEnforced
        let root = hardware.rootOfTrust
        let application = (softwareEnforced.attestationApplicationId ?? hardware.attestationApplicationId)?.json
        func integer(_ tag: AuthorizationList.Tag) -> JSONValue {
            (hardware.integer(tag) ?? softwareEnforced.integer(tag)).map { .int(Int64($0)) } ?? .null
        }
        return .object([
            ("attestationVersion", .int(Int64(attestationVersion))),
            ("attestationSecurityLevel", .string(attestationSecurityLevel.name)),
            ("keyMintVersion", .int(Int64(keyMintVersion))),
            ("keyMintSecurityLevel", .string(keyMintSecurityLevel.name)),
            ("verifiedBootState", root.map { .string($0.verifiedBootState.name) } ?? .null),
            ("deviceLocked", root.map { .bool($0.deviceLocked) } ?? .null),
            ("osVersion", integer(.osVersion)),
            ("osPatchLevel", integer(.osPatchLevel)),
            ("vendorPatchLevel", integer(.vendorPatchLevel)),
            ("bootPatchLevel", integer(.bootPatchLevel)),
            ("packages", application?["packages"] ?? .array([])),
            ("signingCertificateDigests", application?["signingCertificateDigests"] ?? .array([])),
            ("hardwareEnforced", hardware.json),
            ("softwareEnforced", softwareEnforced.json),
        ])
    }
}

extension AuthorizationList {
    /// Each tag under its name in Google's rendering: integers as numbers, sets as arrays, flags as true,
    /// bytes as base64; tags this build does not know as `unknownTags`.
    public var json: JSONValue {
        var members = entries.map { entry -> (String, JSONValue) in
            let value: JSONValue
            switch entry.value {
            case .integer(let n): value = .int(Int64(n))
            case .unsigned(let n): value = .string(String(n))  // beyond a JSON reader's exact integers: as Google's tools print it
            case .integers(let values): value = .array(values.map { .int(Int64($0)) })
            case .flag: value = .bool(true)
            case .bytes(let bytes): value = .string(Base64.encode(bytes))
            case .rootOfTrust(let root): value = root.json
            case .applicationId(let application): value = application.json
            }
            return (entry.tag.name, value)
        }
        if !unknownTags.isEmpty { members.append(("unknownTags", .array(unknownTags.map { .int(Int64($0)) }))) }
        return .object(members)
    }
}

extension RootOfTrust {
    public var json: JSONValue {
        .object([
            ("verifiedBootKey", .string(Base64.encode(verifiedBootKey))), ("deviceLocked", .bool(deviceLocked)),
            ("verifiedBootState", .string(verifiedBootState.name)),
            ("verifiedBootHash", verifiedBootHash.map { .string(Base64.encode($0)) } ?? .null),
        ])
    }
}

extension AttestationApplicationId {
    /// Packages with their versions, and the signing certificate digests in hex, as registrations name them.
    public var json: JSONValue {
        .object([
            ("packages", .array(packages.map { .object([("name", .string($0.name)), ("version", .int($0.version))]) })),
            ("signingCertificateDigests", .array(signatureDigests.map { .string(Hex.encode($0)) })),
        ])
    }
}
