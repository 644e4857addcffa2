import AttestCore

/// Google's attestation certificate status list: the serial numbers of attestation certificates (batch
/// keys, intermediates, provisioned keys) Google revoked or suspended, in the JSON Google publishes:
/// `{"entries": {"<serial, lowercase hex, no leading zeros>": {"status": "REVOKED"|"SUSPENDED",
/// "reason": …, "expires": …, "comment": …}}}`.
///
/// Any listed serial is refused whatever its status says (a status this parser does not know included): a
/// listed key is not to be trusted.
public struct AndroidStatusList: Sendable, Equatable {
    /// Status by serial (lowercase hex without leading zeros, as Google writes it).
    public let entries: [String: String]

    /// Google's list is a few hundred kilobytes; a file many times that is no status list.
    public static let maxBytes = 16 << 20
    public static let maxEntries = 1_000_000

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Entries by hex serial, in either case, with or without leading zeros (a serial's bytes hex-encoded).
    public init(entries: [String: String]) {
        self.entries = Dictionary(entries.map { (Self.canonical($0.key.lowercased()), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// Parses the list Google serves; every entry must name its serial in hex and carry a status.
    public init(json bytes: [UInt8]) throws(ParseError) {
        guard bytes.count <= Self.maxBytes else { throw ParseError(description: "status list over \(Self.maxBytes) bytes") }
        guard let json = JSONValue.parse(bytes), case .object(let members)? = json["entries"] else {
            throw ParseError(description: "status list is not a JSON object with an entries object")
        }
        guard members.count <= Self.maxEntries else { throw ParseError(description: "status list over \(Self.maxEntries) entries") }
        var entries = [String: String](minimumCapacity: members.count)
        for (serial, entry) in members {
            let key = serial.lowercased()
            guard !key.isEmpty, key.utf8.count <= 64, key.utf8.allSatisfy(Self.isHexDigit) else {
                throw ParseError(description: "status list entry \"\(serial.prefix(64))\" is not a hex serial number")
            }
            guard case .string(let status)? = entry["status"] else {
                throw ParseError(description: "status list entry \(key) has no status")
            }
            entries[Self.canonical(key)] = status
        }
        self.entries = entries
    }

    /// The status of the certificate with this serial number (its INTEGER's content bytes), nil when unlisted.
    public func status(ofSerial serial: [UInt8]) -> String? {
        entries[Self.canonical(Hex.encode(serial))]
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
    }

    /// Hex without leading zeros ("0" for zero), the form Google's keys take.
    static func canonical(_ hex: String) -> String {
        let trimmed = hex.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }
}
