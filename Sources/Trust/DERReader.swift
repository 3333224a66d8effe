/// A minimal DER reader for the few structures the trust checks read themselves (name constraints, general
/// names, distinguished names): tag, length, contents. Definite lengths only, as DER requires; nil on any
/// malformation, never a trap. (Package-visible: the Security module reads a name's contents with it.)
package struct DERReader {
    package struct Element {
        /// The whole identifier octet (class, constructed bit, tag number; low tag numbers only).
        package let tag: UInt8
        package let contents: ArraySlice<UInt8>
        /// The element as encoded, identifier and length included.
        package let encoded: ArraySlice<UInt8>
    }

    private var bytes: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
    package init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    package var isAtEnd: Bool { bytes.isEmpty }

    /// The next element; nil when the input is malformed or exhausted.
    package mutating func next() -> Element? {
        guard let tag = bytes.first, tag & 0x1F != 0x1F else { return nil }
        let start = bytes.startIndex
        var index = start + 1
        guard index < bytes.endIndex else { return nil }
        let first = bytes[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, bytes.endIndex - index >= count else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
            // DER: the shortest length form.
            guard length >= 0x80, length >> (8 * (count - 1)) != 0 else { return nil }
        }
        guard bytes.endIndex - index >= length else { return nil }
        let element = Element(
            tag: tag, contents: bytes[index..<index + length], encoded: bytes[start..<index + length])
        bytes = bytes[(index + length)...]
        return element
    }

    /// Every element of `contents`; nil when any is malformed.
    static func elements(_ contents: ArraySlice<UInt8>) -> [Element]? {
        var reader = DERReader(contents)
        var elements: [Element] = []
        while !reader.isAtEnd {
            guard let element = reader.next() else { return nil }
            elements.append(element)
        }
        return elements
    }
}
