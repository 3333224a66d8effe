internal import COpenSSL
import Certificates

/// RFC 5280 4.2.1.10 name constraints, checked by us on every certificate of a candidate path (OpenSSL's own check
/// skips names it cannot parse, a CN with `*` or a trailing dot, and wildcards against excluded subtrees):
/// - every CA of the path (the anchor included, as browsers do) constrains every certificate below it, except
///   self-issued intermediates (RFC 5280 6.1.3 (b)); an extension not marked critical is refused on the CA that
///   carries it (4.2.1.10: conforming CAs MUST mark it critical; ``PathValidator``) and still applied below;
/// - a name of one form must lie inside at least one permitted subtree of that form, when there is any, and
///   inside no excluded subtree;
/// - dNSName: case-insensitive ASCII, whole labels (`example.com` holds itself and its subdomains, an empty name
///   everything; `.example.com`, the URI form, is no DNS name: the constraint cannot be read); a wildcard name is permitted only when every name it stands
///   for is, and excluded when any is (CVE-2025-61727); a DNS name that is not ASCII LDH (an underscore, an empty
///   label, a trailing dot, non-ASCII text; A-labels are LDH) matches no subtree and is refused under any dNSName
///   constraint;
/// - the subject CN of a leaf without a subjectAltName extension counts as a dNSName when it looks like a
///   hostname (BetterTLS; exactly the case where a client falling back to the CN would match it);
/// - iPAddress: address and mask of the same family, the mask contiguous; rfc822Name: a mailbox, a host or
///   `.domain`; URI: the host of the URI, exactly or `.domain`; directoryName: an RDN prefix of the subject or of
///   a SAN directoryName; the subject's emailAddress attributes count as rfc822Names;
/// - a constraint that cannot be read (an empty subtree list, a minimum or maximum, a malformed name, an
///   impossible mask) fails every certificate below it; a name of a form we cannot compare (otherName, x400,
///   ediParty, registeredID) under a constraint of that form fails.
enum NameConstraints {
    /// A general name as the constraints compare it.
    enum Name: Equatable, CustomStringConvertible {
        case dns(String)
        case email(String)
        case uri(String)
        case ipAddress([UInt8])
        case directory([ArraySlice<UInt8>])
        /// A form we do not compare (the context tag number).
        case other(UInt8)
        /// A name whose encoding is wrong for its form (a non-ASCII IA5String, an unreadable directory name).
        case invalid(UInt8)

        var description: String {
            switch self {
            case .dns(let name):
                // Non-ASCII scalars escaped, so a U+212A stays visible in the rule.
                "DNS:"
                    + name.unicodeScalars.map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
            case .email(let name): "email:\(name)"
            case .uri(let name): "URI:\(name)"
            case .ipAddress(let bytes): "IP:\(bytes.map { String($0) }.joined(separator: "."))"
            case .directory: "dirName"
            case .other(let form): "form \(form)"
            case .invalid(let form): "unreadable name of form \(form)"
            }
        }

        var form: UInt8 {
            switch self {
            case .email: 1
            case .dns: 2
            case .directory: 4
            case .uri: 6
            case .ipAddress: 7
            case .other(let form), .invalid(let form): form
            }
        }
    }

    /// One certificate's nameConstraints extension.
    struct Constraints {
        let permitted: [Name]
        let excluded: [Name]
        /// Whether the permitted subtrees are present (a form absent from them is unconstrained).
        let hasPermitted: Bool
        /// The dNSName subtrees parsed once: nil labels for one that cannot be read.
        let permittedDNS: [DNSBase]
        let excludedDNS: [DNSBase]

        init(permitted: [Name], excluded: [Name], hasPermitted: Bool) {
            self.permitted = permitted
            self.excluded = excluded
            self.hasPermitted = hasPermitted
            permittedDNS = permitted.compactMap(DNSBase.init)
            excludedDNS = excluded.compactMap(DNSBase.init)
        }

        var count: Int { permitted.count + excluded.count }
    }

    /// A dNSName subtree: everything (empty), or the name and its subdomains.
    struct DNSBase {
        /// Nil when the subtree is not a DNS name; empty for the empty subtree.
        let labels: [Substring]?

        init?(_ name: Name) {
            guard case .dns(let base) = name else { return nil }
            labels = base.isEmpty ? [] : NameConstraints.dnsLabels(base, wildcard: false)
        }
    }

    /// The most name × subtree comparisons one pair of certificates may cost (OpenSSL's bound): beyond it the
    /// certificate is refused as too complex, so hostile input stays cheap.
    static let maximumComparisons = 1 << 20

    /// The certificates of `path` (leaf first) whose names violate a constraint of a CA above them: index, and the
    /// rule with the first name refused (`nameConstraints DNS:www.bank.com`).
    static func violations(in path: [Certificate]) -> [Int: String] {
        var failed: [Int: String] = [:]
        guard path.count > 1 else { return failed }
        var namesCache: [Int: [Name]] = [:]
        for index in 1..<path.count {
            guard let extensionBytes = extensionData(path[index], nid: NID_name_constraints) else { continue }
            guard let constraints = parseConstraints(extensionBytes) else {
                for below in 0..<index where failed[below] == nil { failed[below] = "nameConstraints.unreadable" }
                continue
            }
            for below in 0..<index where failed[below] == nil {
                if below > 0 && path[below].isSelfIssued { continue }
                let names: [Name]
                if let cached = namesCache[below] {
                    names = cached
                } else {
                    names = Self.names(of: path[below], isLeaf: below == 0)
                    namesCache[below] = names
                }
                if names.count * constraints.count > maximumComparisons {
                    failed[below] = "nameConstraints.tooComplex"
                } else if let refused = names.first(where: { !isAllowed($0, by: constraints) }) {
                    failed[below] = "nameConstraints \(refused)"
                }
            }
        }
        return failed
    }

    /// Why the leaf of `path` may not be known by any of `names` (names it is known by besides its own, such as a
    /// common name standing in for a missing SAN): the rule refusing the first name; nil when one of them passes
    /// the constraints of every CA above the leaf.
    static func refusal(of names: [Name], in path: [Certificate]) -> String? {
        guard path.count > 1, let first = names.first else { return nil }
        var constraints: [Constraints] = []
        for certificate in path.dropFirst() {
            guard let extensionBytes = extensionData(certificate, nid: NID_name_constraints) else { continue }
            guard let parsed = parseConstraints(extensionBytes) else { return "nameConstraints.unreadable" }
            constraints.append(parsed)
        }
        let passes = names.contains { name in constraints.allSatisfy { isAllowed(name, by: $0) } }
        return passes ? nil : "nameConstraints \(first)"
    }

    // MARK: - The names of a certificate

    /// Every name of `certificate` the constraints apply to: its SANs, its subject (when not empty), the
    /// subject's emailAddress attributes, and for a leaf without SAN its hostname-like common names.
    static func names(of certificate: Certificate, isLeaf: Bool) -> [Name] {
        var names: [Name] = []
        let san = extensionData(certificate, nid: NID_subject_alt_name)
        let hasAlternativeNames = san != nil
        if let san {
            if let sequence = DERReader.elements(san[...]), sequence.count == 1, sequence[0].tag == 0x30,
                let elements = DERReader.elements(sequence[0].contents)
            {
                names += elements.map(generalName)
            } else {
                names.append(.invalid(0))
            }
        }
        let subject = subjectDER(certificate)
        if let subject, let rdns = distinguishedName(subject[...]) {
            if !rdns.isEmpty { names.append(.directory(rdns)) }
            for rdn in rdns {
                for value in attributeValues(rdn, oid: emailAddressOID) {
                    names.append(ascii(value).map(Name.email) ?? .invalid(1))
                }
            }
        } else {
            names.append(.invalid(4))
        }
        if isLeaf, !hasAlternativeNames {
            for commonName in certificate.commonNames where looksLikeHostname(commonName) {
                names.append(.dns(commonName))
            }
        }
        return names
    }

    /// A common name a client could take for a hostname: no space, a dot inside, not an IP address.
    static func looksLikeHostname(_ name: String) -> Bool {
        !name.isEmpty && !name.utf8.contains(UInt8(ascii: " ")) && name.utf8.contains(UInt8(ascii: "."))
            && Hostname.ipAddress(name) == nil
    }

    private static let emailAddressOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x01]

    private static func generalName(_ element: DERReader.Element) -> Name {
        switch element.tag {
        case 0x81: return ascii(element.contents).map(Name.email) ?? .invalid(1)
        case 0x82: return ascii(element.contents).map(Name.dns) ?? .invalid(2)
        case 0x86: return ascii(element.contents).map(Name.uri) ?? .invalid(6)
        case 0x87: return .ipAddress(Array(element.contents))
        case 0xA4:
            guard let inner = DERReader.elements(element.contents), inner.count == 1,
                let rdns = distinguishedName(inner[0].encoded)
            else { return .invalid(4) }
            return .directory(rdns)
        default: return .other(element.tag & 0x1F)
        }
    }

    private static func ascii(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The RDN SETs (as encoded) of a DER Name; nil when malformed.
    private static func distinguishedName(_ der: ArraySlice<UInt8>) -> [ArraySlice<UInt8>]? {
        guard let outer = DERReader.elements(der), outer.count == 1, outer[0].tag == 0x30,
            let rdns = DERReader.elements(outer[0].contents), rdns.allSatisfy({ $0.tag == 0x31 })
        else { return nil }
        return rdns.map(\.encoded)
    }

    /// The values (contents) of the attributes of type `oid` (encoded, tag included) in one RDN SET.
    private static func attributeValues(_ rdn: ArraySlice<UInt8>, oid: [UInt8]) -> [ArraySlice<UInt8>] {
        guard let set = DERReader.elements(rdn), set.count == 1, let attributes = DERReader.elements(set[0].contents)
        else { return [] }
        return attributes.compactMap { attribute in
            guard attribute.tag == 0x30, let parts = DERReader.elements(attribute.contents), parts.count == 2,
                parts[0].encoded.elementsEqual(oid)
            else { return nil }
            return parts[1].contents
        }
    }

    // MARK: - Reading the extension

    /// The contents of the extension `nid`, nil when the certificate has none.
    static func extensionData(_ certificate: Certificate, nid: Int32) -> [UInt8]? {
        certificate.withUnsafeX509 { x509 -> [UInt8]? in
            // X509_get_ext_by_NID: the index of the first such extension, -1 when there is none; X509_get_ext and
            // X509_EXTENSION_get_data return internal pointers (not owned) valid while the certificate lives.
            let index = X509_get_ext_by_NID(x509, nid, -1)
            guard index >= 0, let ext = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(ext),
                let bytes = ASN1_STRING_get0_data(data)
            else { return nil }
            return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
        }
    }

    /// The subject name, DER-encoded.
    private static func subjectDER(_ certificate: Certificate) -> [UInt8]? {
        certificate.withUnsafeX509 { x509 -> [UInt8]? in
            // i2d_X509_NAME with a NULL output returns the length; with a buffer it writes there and advances it.
            guard let name = X509_get_subject_name(x509) else { return nil }
            let length = i2d_X509_NAME(name, nil)
            guard length > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: Int(length))
            let written = buffer.withUnsafeMutableBufferPointer { pointer -> Int32 in
                var cursor = pointer.baseAddress
                return i2d_X509_NAME(name, &cursor)
            }
            return written == length ? buffer : nil
        }
    }

    /// NameConstraints ::= SEQUENCE { permittedSubtrees [0] GeneralSubtrees OPTIONAL, excludedSubtrees [1] … },
    /// GeneralSubtrees ::= SEQUENCE SIZE (1..MAX) OF GeneralSubtree, GeneralSubtree ::= SEQUENCE { base
    /// GeneralName, minimum [0] DEFAULT 0, maximum [1] OPTIONAL } (5280: minimum 0, no maximum). Nil when any of it
    /// is malformed, empty, or uses a minimum or maximum.
    static func parseConstraints(_ der: [UInt8]) -> Constraints? {
        guard let outer = DERReader.elements(der[...]), outer.count == 1, outer[0].tag == 0x30,
            let parts = DERReader.elements(outer[0].contents), !parts.isEmpty, parts.count <= 2
        else { return nil }
        var permitted: [Name] = []
        var excluded: [Name] = []
        var hasPermitted = false
        var lastTag: UInt8 = 0
        for part in parts {
            guard part.tag == 0xA0 || part.tag == 0xA1, part.tag > lastTag else { return nil }
            lastTag = part.tag
            guard let subtrees = DERReader.elements(part.contents), !subtrees.isEmpty else { return nil }
            var bases: [Name] = []
            for subtree in subtrees {
                guard subtree.tag == 0x30, let fields = DERReader.elements(subtree.contents), !fields.isEmpty,
                    fields.count == 1
                        || (fields.count == 2 && fields[1].tag == 0x80 && fields[1].contents.allSatisfy { $0 == 0 })
                else { return nil }
                let base = generalName(fields[0])
                if case .invalid = base { return nil }
                // A dNSName is a DNS name; the leading period is the URI and rfc822Name form, not this one's.
                if case .dns(let name) = base, name.hasPrefix(".") { return nil }
                bases.append(base)
            }
            if part.tag == 0xA0 {
                permitted = bases
                hasPermitted = true
            } else {
                excluded = bases
            }
        }
        return Constraints(permitted: permitted, excluded: excluded, hasPermitted: hasPermitted)
    }

    // MARK: - Matching

    /// Whether `name` is inside the permitted subtrees of its form (when there are any) and no excluded one.
    static func isAllowed(_ name: Name, by constraints: Constraints) -> Bool {
        if case .dns(let dns) = name {
            if constraints.permittedDNS.isEmpty && constraints.excludedDNS.isEmpty { return true }
            // Not ASCII LDH: it matches no subtree, so it is refused, excluded-only constraints included (a
            // trailing dot or U+212A must not slip past `excluded;DNS:bank.com`).
            guard let labels = dnsLabels(dns, wildcard: true) else { return false }
            if !constraints.permittedDNS.isEmpty,
                !constraints.permittedDNS.contains(where: { dnsWithin(labels, $0, excluding: false) == true })
            {
                return false
            }
            return !constraints.excludedDNS.contains(where: { dnsWithin(labels, $0, excluding: true) != false })
        }
        let form = name.form
        let permitted = constraints.permitted.filter { $0.form == form }
        let excluded = constraints.excluded.filter { $0.form == form }
        if permitted.isEmpty && excluded.isEmpty { return true }
        switch name {
        case .invalid, .other:
            // Under a constraint of its form, a name we cannot compare is refused.
            return false
        default:
            break
        }
        if !permitted.isEmpty, !permitted.contains(where: { isWithin(name, $0, excluding: false) == true }) {
            return false
        }
        // An excluded subtree we cannot read (nil) excludes, failing safe.
        return !excluded.contains(where: { isWithin(name, $0, excluding: true) != false })
    }

    /// Whether `name` lies inside `subtree` (for a wildcard name: all of it when permitting, any of it when
    /// excluding); nil when the subtree itself cannot be used.
    private static func isWithin(_ name: Name, _ subtree: Name, excluding: Bool) -> Bool? {
        switch (name, subtree) {
        case (.ipAddress(let address), .ipAddress(let range)):
            return ipWithin(address, range)
        case (.email(let mailbox), .email(let base)):
            return emailWithin(mailbox, base)
        case (.uri(let uri), .uri(let base)):
            guard let host = uriHost(uri), let labels = dnsLabels(host, wildcard: false) else { return false }
            return hostWithin(labels, base)
        case (.directory(let rdns), .directory(let base)):
            return base.count <= rdns.count && zip(base, rdns).allSatisfy { $0.elementsEqual($1) }
        default:
            return false
        }
    }

    /// Lower-cased labels of an ASCII LDH name (A-labels included), the left-most label `*` allowed when
    /// `wildcard`; nil otherwise (an empty label, a trailing or leading dot, an underscore, any other character).
    static func dnsLabels(_ name: String, wildcard: Bool) -> [Substring]? {
        guard let lowered = ASCIILabels.lowercased(name.utf8, underscore: false) else { return nil }
        let labels = ASCIILabels.labels(of: lowered)
        for (index, label) in labels.enumerated() where label.utf8.contains(UInt8(ascii: "*")) {
            guard wildcard, index == 0, label == "*", labels.count > 1 else { return nil }
        }
        return labels
    }

    private static func dnsWithin(_ labels: [Substring], _ base: DNSBase, excluding: Bool) -> Bool? {
        guard let constraint = base.labels else { return nil }
        if constraint.isEmpty { return true }
        if labels.count >= constraint.count, labels.suffix(constraint.count).elementsEqual(constraint) { return true }
        // A wildcard stands for one label: excluded when one of the names it matches is inside the subtree, i.e.
        // the subtree is `label.rest` for the wildcard's `*.rest`.
        if excluding, labels[0] == "*", constraint.count == labels.count,
            constraint.dropFirst().elementsEqual(labels.dropFirst())
        {
            return true
        }
        return false
    }

    private static func hostWithin(_ host: [Substring], _ base: String) -> Bool? {
        let subdomainsOnly = base.hasPrefix(".")
        guard let constraint = dnsLabels(subdomainsOnly ? String(base.dropFirst()) : base, wildcard: false) else {
            return nil
        }
        if subdomainsOnly {
            return host.count > constraint.count && host.suffix(constraint.count).elementsEqual(constraint)
        }
        return host == constraint
    }

    private static func ipWithin(_ address: [UInt8], _ range: [UInt8]) -> Bool? {
        guard range.count == 8 || range.count == 32 else { return nil }
        let width = range.count / 2
        let mask = range[width...]
        // A contiguous mask: ones, then zeros.
        var seenZero = false
        for byte in mask {
            for bit in (0..<8).reversed() {
                let one = byte >> bit & 1 == 1
                if one && seenZero { return nil }
                if !one { seenZero = true }
            }
        }
        guard address.count == width else { return false }
        return (0..<width).allSatisfy { address[$0] & mask[width + $0] == range[$0] & mask[width + $0] }
    }

    private static func emailWithin(_ mailbox: String, _ base: String) -> Bool? {
        guard let at = mailbox.lastIndex(of: "@") else { return false }
        let local = mailbox[..<at]
        guard !local.isEmpty, let domain = dnsLabels(String(mailbox[mailbox.index(after: at)...]), wildcard: false)
        else { return false }
        if let baseAt = base.lastIndex(of: "@") {
            guard let baseDomain = dnsLabels(String(base[base.index(after: baseAt)...]), wildcard: false) else {
                return nil
            }
            return base[..<baseAt] == local && baseDomain == domain
        }
        return hostWithin(domain, base)
    }

    /// The host of a URI with an authority (`scheme://[userinfo@]host[:port]/…`), nil when it has none.
    private static func uriHost(_ uri: String) -> String? {
        guard let schemeEnd = uri.range(of: "://") else { return nil }
        var authority = uri[schemeEnd.upperBound...]
        if let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            authority = authority[..<end]
        }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") { return nil }
        if let colon = authority.lastIndex(of: ":") { authority = authority[..<colon] }
        return authority.isEmpty ? nil : String(authority)
    }
}
