@testable import AttestCore
import Testing

@Suite struct TimestampTests {
    @Test func parsesRFC3339WithAndWithoutFractions() {
        let base = Timestamp(rfc3339: "2026-04-21T18:13:12Z")!
        #expect(base.seconds == 1_776_795_192)
        #expect(Timestamp(rfc3339: "2026-04-21T18:13:12.153Z")!.microseconds == base.microseconds + 153_000)
        #expect(Timestamp(rfc3339: "2026-04-21T20:13:12+02:00") == base)
        #expect(Timestamp(rfc3339: "2026-04-21t18:13:12z") == base)
    }

    @Test func rejectsMalformedTimes() {
        for text in ["2026-04-21", "2026-02-30T00:00:00Z", "2026-04-21T24:00:00Z", "2026-04-21T18:13:12",
                     "2026-04-21T18:13:12.Z", "2026-04-21T18:13:12Z ", "26-04-21T18:13:12Z"] {
            #expect(Timestamp(rfc3339: text) == nil, "\(text)")
        }
    }

    @Test func formatsRFC3339() {
        #expect(Timestamp(rfc3339: "2026-04-21T18:13:12.153Z")!.rfc3339 == "2026-04-21T18:13:12.153Z")
        #expect(Timestamp(rfc3339: "1969-12-31T23:59:59Z")!.rfc3339 == "1969-12-31T23:59:59Z")
        #expect(Timestamp(rfc3339: "2000-02-29T00:00:00Z")!.rfc3339 == "2000-02-29T00:00:00Z")
        #expect(Timestamp(rfc3339: "0001-01-01T00:00:00.000001Z")!.rfc3339 == "0001-01-01T00:00:00.000001Z")
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59.5Z")!.rfc3339 == "9999-12-31T23:59:59.500Z")
        #expect(Timestamp(rfc3339: "2026-04-21T18:13:12.153999Z")!.rfc3339Milliseconds == "2026-04-21T18:13:12.153Z")
        #expect(Timestamp(rfc3339: "2026-04-21T18:13:12Z")!.rfc3339Milliseconds == "2026-04-21T18:13:12.000Z")
    }

    /// The buffer writer pads as `pad` does, for every width and sign.
    @Test func paddedDigitsAreWrittenAsPadFormatsThem() {
        for value: Int64 in [0, 7, 42, 999, 1000, 123_456, 9_999_999, -5, -12_345, .max, .min] {
            for width in [0, 1, 2, 4, 6] {
                var out: [UInt8] = [0x41]
                Timestamp.appendPadded(value, width, to: &out)
                #expect(String(decoding: out, as: UTF8.self) == "A" + Timestamp.pad(value, width), "\(value), \(width)")
            }
        }
    }

    @Test func utcMonthIsTheMonthAtUTC() {
        #expect(Timestamp(rfc3339: "2026-04-30T23:59:59.999999Z")!.utcMonth == "2026-04")
        #expect(Timestamp(rfc3339: "2026-05-01T00:30:00+02:00")!.utcMonth == "2026-04")
        #expect(Timestamp(rfc3339: "1969-12-31T23:59:59Z")!.utcMonth == "1969-12")
    }
}
