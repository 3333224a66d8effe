internal import COpenSSL
internal import COpenSSLShims
public import Foundation

/// An X.501 name (a certificate's subject or issuer): its DER, Apple's normalized form, and its attributes in
/// the order they are encoded.
public struct DistinguishedName: Hashable, Sendable, CustomStringConvertible {
    /// One attribute (type and value) of a relative distinguished name.
    public struct Attribute: Hashable, Sendable {
        /// The attribute type as a dotted OID ("2.5.4.3" for the common name).
        public let oid: String
        /// OpenSSL's short name for the type ("CN", "O", "emailAddress"), nil for a type it does not know.
        public let shortName: String?
        /// The value as UTF-8 text, or for a value that is not a string "#" and the hex of its DER (RFC 4514).
        public let value: String
        /// Which RDN (SET) of the name holds it, from 0; attributes of a multi-valued RDN share the index.
        public let rdnIndex: Int
    }

    /// The Name's DER (the SEQUENCE of RDNs), exactly as in the certificate.
    public let derEncoded: Data
    /// Apple's normalized name sequence (`SecCertificateCopyNormalizedSubjectSequence`), used to match an issuer
    /// to a subject and stored as the keychain's `subj`/`issr`. Our equivalent of Apple's (and of OpenSSL's
    /// `canon_enc`): a DER SEQUENCE of SETs of `{ type, UTF8String }` where every string value is converted to
    /// UTF-8, trimmed, its internal whitespace runs collapsed to one space and upper-cased; values that are not
    /// strings keep their DER; the attributes of a multi-valued RDN are sorted as DER sorts a SET OF.
    public let normalizedEncoded: Data
    /// The attributes in encoding order.
    public let attributes: [Attribute]

    /// The values of every attribute of the type `oid`, in order.
    public func values(of oid: String) -> [String] { attributes.filter { $0.oid == oid }.map(\.value) }

    /// All common names (2.5.4.3), in order.
    public var commonNames: [String] { values(of: X509ObjectIdentifiers.commonName) }

    /// One-line form, OpenSSL's short names: "CN=leaf, O=Example".
    public var description: String {
        attributes.map { "\($0.shortName ?? $0.oid)=\($0.value)" }.joined(separator: ", ")
    }

    /// Reads an `X509_NAME` (not retained: the certificate that owns it outlives this call).
    init(borrowing name: OpaquePointer) throws {
        guard let der = X509DER.encode({ i2d_X509_NAME(name, $0) }) else {
            throw CertificateError(.malformedDER, "a name cannot be encoded", openSSLErrors: X509OpenSSLErrors.drain())
        }
        derEncoded = der
        var attributes: [Attribute] = []
        var sets: [[Data]] = []
        let count = X509_NAME_entry_count(name)
        for index in 0..<max(count, 0) {
            guard let entry = X509_NAME_get_entry(name, index), let object = X509_NAME_ENTRY_get_object(entry),
                let data = X509_NAME_ENTRY_get_data(entry)
            else { continue }
            let rdn = Int(X509_NAME_ENTRY_set(entry))
            let oid = X509ObjectIdentifiers.dotted(object)
            let nid = OBJ_obj2nid(object)
            let shortName = nid == NID_undef ? nil : OBJ_nid2sn(nid).map { String(cString: $0) }
            let text = Self.utf8(data)
            let entryDER = X509DER.encode({ i2d_X509_NAME_ENTRY(entry, $0) }) ?? Data()
            attributes.append(
                Attribute(oid: oid, shortName: shortName, value: text ?? Self.hexValue(entryDER), rdnIndex: rdn))
            // The normalized attribute: { type, UTF8String(normalized) } for strings, the DER otherwise.
            let normalized: Data
            if let text, let oidDER = X509DER.encode({ i2d_ASN1_OBJECT(object, $0) }) {
                let folded = text.split(whereSeparator: \.isWhitespace).joined(separator: " ").uppercased()
                normalized = X509DER.tlv(0x30, oidDER + X509DER.tlv(0x0C, Data(folded.utf8)))
            } else {
                normalized = entryDER
            }
            if rdn < sets.count {
                sets[rdn].append(normalized)
            } else {
                while sets.count < rdn { sets.append([]) }
                sets.append([normalized])
            }
        }
        self.attributes = attributes
        normalizedEncoded = X509DER.tlv(
            0x30, sets.filter { !$0.isEmpty }.reduce(into: Data()) { $0 += X509DER.tlv(0x31, X509DER.sortedSet($1)) })
    }

    /// A string value as UTF-8, or nil when the value is not a string type.
    private static func utf8(_ string: UnsafeMutablePointer<ASN1_STRING>) -> String? {
        switch ASN1_STRING_type(string) {
        case V_ASN1_UTF8STRING, V_ASN1_NUMERICSTRING, V_ASN1_PRINTABLESTRING, V_ASN1_T61STRING, V_ASN1_VIDEOTEXSTRING,
            V_ASN1_IA5STRING, V_ASN1_GRAPHICSTRING, V_ASN1_VISIBLESTRING, V_ASN1_GENERALSTRING,
            V_ASN1_UNIVERSALSTRING, V_ASN1_BMPSTRING:
            break
        default:
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        // ASN1_STRING_to_UTF8: "returns the length of the output or a negative value on error"; *out is
        // allocated with OPENSSL_malloc and must be freed with OPENSSL_free.
        let length = ASN1_STRING_to_UTF8(&out, string)
        defer { if let out { copenssl_x509_free_buffer(out) } }
        guard length >= 0, let out else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }

    /// RFC 4514's form of a value that is not a string: "#" and the hex of the value's DER (the AttributeValue
    /// is the second element of the entry's SEQUENCE; the whole entry's hex is used when it cannot be split).
    private static func hexValue(_ entryDER: Data) -> String {
        let value = X509DER.elements(ofConstructed: entryDER).flatMap { $0.count == 2 ? $0[1] : nil } ?? entryDER
        return "#" + value.map { String(format: "%02x", $0) }.joined()
    }
}

/// Dotted OIDs this module names.
enum X509ObjectIdentifiers {
    static let commonName = "2.5.4.3"
    static let organizationalUnitName = "2.5.4.11"
    static let organizationName = "2.5.4.10"
    static let description = "2.5.4.13"
    static let emailAddress = "1.2.840.113549.1.9.1"

    /// An `ASN1_OBJECT` as a dotted OID.
    static func dotted(_ object: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        // OBJ_obj2txt: "returns the total string length of the text, excluding the NUL"; it truncates to the
        // buffer, so a longer OID is read again into a buffer of the right size.
        let needed = Int(OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1))
        guard needed > 0 else { return "" }
        if needed >= buffer.count {
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        }
        return String(decoding: buffer.prefix(needed).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The little DER this module writes and splits itself.
enum X509DER {
    /// Runs an OpenSSL `i2d_*` function twice (length, then bytes) and returns the encoding.
    static func encode(_ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> Data? {
        let length = i2d(nil)
        guard length > 0 else { return nil }
        var out = Data(count: Int(length))
        let written = out.withUnsafeMutableBytes { raw -> Int32 in
            var cursor = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return i2d(&cursor)
        }
        return written == length ? out : nil
    }

    static func tlv(_ tag: UInt8, _ content: Data) -> Data {
        var out = Data([tag])
        let count = content.count
        if count < 0x80 {
            out.append(UInt8(count))
        } else {
            var bytes: [UInt8] = []
            var rest = count
            while rest > 0 {
                bytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            out.append(0x80 | UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
        return out + content
    }

    /// The elements of a SET OF in DER order (ascending by their encodings).
    static func sortedSet(_ elements: [Data]) -> Data {
        elements.sorted { $0.lexicographicallyPrecedes($1) }.reduce(into: Data()) { $0 += $1 }
    }

    /// The header length and content length of the DER element at the start of `bytes`, or nil.
    static func header(_ bytes: Data) -> (headerLength: Int, contentLength: Int)? {
        let start = bytes.startIndex
        guard bytes.count >= 2, bytes[start] & 0x1F != 0x1F else { return nil }
        let first = bytes[start + 1]
        if first < 0x80 { return (2, Int(first)) }
        let octets = Int(first & 0x7F)
        guard octets >= 1, octets <= 4, bytes.count >= 2 + octets else { return nil }
        var length = 0
        for index in 0..<octets { length = length << 8 | Int(bytes[start + 2 + index]) }
        return (2 + octets, length)
    }

    /// The content bytes of the one DER element `bytes` holds.
    static func contents(_ bytes: Data) -> Data? {
        guard let (headerLength, contentLength) = header(bytes), headerLength + contentLength == bytes.count else {
            return nil
        }
        return Data(bytes.dropFirst(headerLength))
    }

    /// The whole encodings of the elements inside a constructed element.
    static func elements(ofConstructed bytes: Data) -> [Data]? {
        guard var rest = contents(bytes) else { return nil }
        var elements: [Data] = []
        while !rest.isEmpty {
            guard let (headerLength, contentLength) = header(rest), headerLength + contentLength <= rest.count else {
                return nil
            }
            elements.append(Data(rest.prefix(headerLength + contentLength)))
            rest = Data(rest.dropFirst(headerLength + contentLength))
        }
        return elements
    }
}

/// The OpenSSL error queue.
enum X509OpenSSLErrors {
    /// Empties the calling thread's queue, returning its entries oldest first.
    static func drain() -> [String] {
        var entries: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            entries.append(ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)")
        }
        return entries
    }
}
