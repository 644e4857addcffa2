/// Orders bundle versions the way people read them: dot-separated parts compared as numbers when both are
/// numeric ("1.10" after "1.9"), as text otherwise; missing parts count as zero ("1" equals "1.0").
public enum BundleVersion {
    public static func isBelow(_ version: String, _ minimum: String) -> Bool {
        let a = version.split(separator: ".", omittingEmptySubsequences: false)
        let b = minimum.split(separator: ".", omittingEmptySubsequences: false)
        for i in 0..<max(a.count, b.count) {
            let x = i < a.count ? String(a[i]) : "0"
            let y = i < b.count ? String(b[i]) : "0"
            if x == y { continue }
            if let m = UInt64(x), let n = UInt64(y) {
                if m != n { return m < n }
                continue
            }
            return x < y
        }
        return false
    }
}
