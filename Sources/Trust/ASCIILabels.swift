/// DNS names as the trust code reads them: ASCII only, lower-cased in ASCII (no Unicode case mapping), labels of
/// 1 to 63 bytes, at most 253 bytes in all. One pass over the bytes, one string made: the hostname matcher and
/// the name constraints read every SAN of every evaluation this way.
enum ASCIILabels {
    /// The name lower-cased, when it is letters, digits, `-`, `*` (and `_` when `underscore`) in non-empty labels
    /// of at most 63 bytes separated by single dots, at most 253 bytes in all; nil otherwise.
    static func lowercased(_ name: some Collection<UInt8>, underscore: Bool) -> String? {
        let count = name.count
        guard count > 0, count <= 253 else { return nil }
        var labelLength = 0
        let lowered = String(unsafeUninitializedCapacity: count) { buffer -> Int in
            var written = 0
            for byte in name {
                var out = byte
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
                    UInt8(ascii: "*"):
                    labelLength += 1
                case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                    out = byte + 0x20
                    labelLength += 1
                case UInt8(ascii: "_") where underscore:
                    labelLength += 1
                case UInt8(ascii: "."):
                    guard labelLength > 0 else { return 0 }
                    labelLength = 0
                default:
                    return 0
                }
                guard labelLength <= 63 else { return 0 }
                buffer[written] = out
                written += 1
            }
            return labelLength > 0 ? written : 0
        }
        return lowered.isEmpty ? nil : lowered
    }

    /// The labels of a name ``lowercased(_:underscore:)`` returned, split at its dots by byte: `String.split` walks
    /// Characters (grapheme breaking), which was the larger part of matching a hostname. The name is ASCII, so
    /// every UTF-8 index is a Character boundary.
    static func labels(of lowered: String) -> [Substring] {
        var labels: [Substring] = []
        let utf8 = lowered.utf8
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: ".") {
                labels.append(lowered[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        labels.append(lowered[start...])
        return labels
    }
}
