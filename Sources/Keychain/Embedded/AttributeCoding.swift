import Foundation

/// The canonical byte encoding of an attribute dictionary: sorted by key, each entry
/// `keyLength(1) key tag(1) valueLength(4, big-endian) value`. Used for the encrypted attribute blob and as the
/// input of the uniqueness HMAC, so equal dictionaries always give equal bytes.
enum AttributeCoding {
    private enum Tag: UInt8 { case string = 1, data, number, bool, date }

    static func encode(_ attributes: ItemAttributes) -> [UInt8] {
        var bytes: [UInt8] = []
        for key in attributes.keys.sorted() {
            append(key, attributes[key]!, to: &bytes)  // the key comes from the dictionary itself
        }
        return bytes
    }

    static func append(_ key: AttributeKey, _ value: AttributeValue, to bytes: inout [UInt8]) {
        // Appended in place (no temporary arrays): this runs for every HMAC of a query.
        bytes.append(UInt8(truncatingIfNeeded: key.rawValue.utf8.count))
        bytes.appendUTF8(key.rawValue)
        func header(_ tag: Tag, _ count: Int) {
            bytes.append(tag.rawValue)
            withUnsafeBytes(of: UInt32(count).bigEndian) { bytes.append(contentsOf: $0) }
        }
        switch value {
        case .string(let text):
            header(.string, text.utf8.count)
            bytes.appendUTF8(text)
        case .data(let data):
            header(.data, data.count)
            bytes.append(contentsOf: data)
        case .number(let number):
            header(.number, 8)
            withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) }
        case .bool(let flag):
            header(.bool, 1)
            bytes.append(flag ? 1 : 0)
        case .date(let date):
            header(.date, 8)
            withUnsafeBytes(of: date.timeIntervalSinceReferenceDate.bitPattern.bigEndian) { bytes.append(contentsOf: $0) }
        }
    }

    /// - Throws: ``KeychainError`` `.decode` for bytes this encoder did not produce.
    static func decode(_ bytes: [UInt8]) throws -> ItemAttributes {
        var attributes: ItemAttributes = [:]
        var offset = 0
        func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, bytes.count - offset >= count else {
                throw KeychainError(.decode, "the stored attributes are malformed")
            }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        while offset < bytes.count {
            let nameLength = Int(try take(1).first!)  // take(1) returned one byte
            guard let name = String(bytes: try take(nameLength), encoding: .utf8),
                let tag = Tag(rawValue: try take(1).first!)  // as above
            else { throw KeychainError(.decode, "the stored attributes are malformed") }
            let length = try take(4).reduce(0) { $0 << 8 | Int($1) }
            let payload = try take(length)
            let value: AttributeValue
            switch tag {
            case .string:
                guard let text = String(bytes: payload, encoding: .utf8) else {
                    throw KeychainError(.decode, "the stored attributes are malformed")
                }
                value = .string(text)
            case .data: value = .data(Data(payload))
            case .number, .date:
                guard payload.count == 8 else { throw KeychainError(.decode, "the stored attributes are malformed") }
                let raw = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                value = tag == .number ? .number(Int64(bitPattern: raw)) : .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: raw)))
            case .bool:
                guard payload.count == 1 else { throw KeychainError(.decode, "the stored attributes are malformed") }
                value = .bool(payload.first! != 0)  // count checked
            }
            attributes[AttributeKey(name)] = value
        }
        return attributes
    }
}

extension [UInt8] {
    /// Appends `text`'s UTF-8 as one copy of its bytes: `append(contentsOf: text.utf8)` goes byte by byte
    /// through the view's iterator here (measured: 47 retains per keychain find).
    mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
