import Foundation
import Security

/// security(1)'s text layout for items and raw values.
///
/// An item is printed as
///
///     keychain: "/home/bob/.local/share/securityservices/keychain.db"
///     class: "genp"
///     attributes:
///         0x00000007 <blob>="mail"
///         "acct"<blob>="bob"
///         "cdat"<timedate>=0x32303234303130323033303430355A00  "20240102030405Z\000"
///         ...
///
/// one line per attribute, sorted by tag as macOS sorts them (the label is tag 7, the others are four-character
/// codes), each with macOS's type tag and `<NULL>` for an attribute the item does not have. The password classes
/// list macOS's attributes (those this keychain has) plus the access group; certificates and keys list what
/// they have. A value is printed as macOS's `print_buffer` prints bytes: quoted ASCII when every byte is
/// printable, `0x`-prefixed hex when none is, both when mixed, with `\ooo` escapes inside the quotes.
enum ItemPrinter {
    enum Format: String {
        case blob, uint32, sint32, timedate
    }

    /// The attribute rows of the password classes, as macOS lists them (less those this keychain lacks).
    static let layouts: [String: [String]] = [
        "genp": [
            "labl", "acct", "agrp", "cdat", "crtr", "desc", "gena", "icmt", "invi", "mdat", "nega", "svce", "type",
        ],
        "inet": [
            "labl", "acct", "agrp", "atyp", "cdat", "crtr", "desc", "icmt", "invi", "mdat", "nega", "path", "port",
            "ptcl", "sdmn", "srvr", "type",
        ],
    ]

    /// macOS's format of each attribute (`CSSM_DB_ATTRIBUTE_FORMAT_…`); unknown attributes take their value's.
    static let formats: [String: Format] = {
        var formats: [String: Format] = [
            "labl": .blob, "acct": .blob, "agrp": .blob, "cdat": .timedate, "mdat": .timedate, "crtr": .uint32,
            "type": .uint32, "desc": .blob, "gena": .blob, "icmt": .blob, "invi": .sint32, "nega": .sint32,
            "svce": .blob, "atyp": .blob, "path": .blob, "port": .uint32, "ptcl": .uint32, "sdmn": .blob,
            "srvr": .blob, "ctyp": .uint32, "cenc": .uint32, "subj": .blob, "issr": .blob, "slnr": .blob,
            "skid": .blob, "pkhh": .blob, "kcls": .uint32, "klbl": .blob, "atag": .blob, "bsiz": .uint32,
            "esiz": .uint32, "sdat": .timedate, "edat": .timedate,
        ]
        for flag in [
            "perm", "priv", "modi", "sens", "asen", "extr", "next", "encr", "decr", "drve", "sign", "vrfy", "snrc",
            "vyrc", "wrap", "unwp",
        ] {
            formats[flag] = .sint32
        }
        return formats
    }()

    /// Attributes the keychain keeps that security(1) does not show: the accessibility class and the
    /// synchronizable flag.
    static let hidden: Set<String> = ["pdmn", "sync"]

    /// The label's tag: macOS's `kSecLabelItemAttr` is the number 7, not a four-character code.
    static let labelTag = "labl"

    /// An item's header and attribute lines.
    static func attributes(of item: ItemRecord, keychain: String) -> String {
        var text = "keychain: \(buffer(Array(keychain.utf8)))\n"
        text += "class: \(buffer(Array(item.itemClass.utf8)))\n"
        text += "attributes:\n"
        var tags = Set(layouts[item.itemClass] ?? [])
        tags.formUnion(item.attributes.keys.filter { !hidden.contains($0) })
        for tag in tags.sorted(by: tagOrder) {
            let format = formats[tag] ?? item.attributes[tag].map(format(of:)) ?? .blob
            text += "    \(tagText(tag))<\(format.rawValue)>=\(value(item.attributes[tag]))\n"
        }
        return text
    }

    /// macOS's order: by tag as a big-endian number, so the label (7) comes first and four-character codes
    /// follow in byte order.
    static func tagOrder(_ left: String, _ right: String) -> Bool {
        if left == right { return false }
        if left == labelTag { return true }
        if right == labelTag { return false }
        return Array(left.utf8).lexicographicallyPrecedes(Array(right.utf8))
    }

    static func tagText(_ tag: String) -> String {
        tag == labelTag ? uint32(7) : buffer(Array(tag.utf8))
    }

    static func format(of value: ItemValue) -> Format {
        switch value {
        case .text, .bytes: .blob
        case .number: .uint32
        case .date: .timedate
        }
    }

    /// One value as macOS prints it: a number as four big-endian bytes, a date as its NUL-terminated CSSM time,
    /// text as its UTF-8; `<NULL>` when absent or empty (an empty attribute is a null one on macOS).
    static func value(_ value: ItemValue?) -> String {
        let bytes: [UInt8]
        switch value {
        case nil: return "<NULL>"
        case .number(let number): return uint32(UInt32(truncatingIfNeeded: number))
        case .date(let date): bytes = Array(timedate(date).utf8) + [0]
        case .text(let text): bytes = Array(text.utf8)
        case .bytes(let data): bytes = Array(data)
        }
        return bytes.isEmpty ? "<NULL>" : buffer(bytes)
    }

    /// A date as a CSSM time: `YYYYMMDDhhmmssZ` in UTC.
    static func timedate(_ date: Date) -> String { CSSMTime.string(date) }

    /// A number as macOS's `print_uint32`: its four big-endian bytes through ``buffer(_:)``.
    static func uint32(_ number: UInt32) -> String {
        buffer(withUnsafeBytes(of: number.bigEndian, Array.init))
    }

    /// Two hex digits per byte.
    static func hex(_ bytes: [UInt8], uppercase: Bool) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16, uppercase: uppercase)
            return byte < 0x10 ? "0" + digits : digits
        }.joined()
    }

    /// Bytes as macOS's `print_buffer`: `0x` and uppercase hex (then a space) when any byte is not printable,
    /// the bytes in quotes (non-printable ones and `\` as `\ooo`) when any is.
    static func buffer(_ bytes: [UInt8]) -> String {
        let printable = bytes.map(isPrintable)
        let showsHex = printable.contains(false)
        let showsText = printable.contains(true)
        var text = ""
        if showsHex {
            text += "0x" + hex(bytes, uppercase: true) + (showsText ? "  " : " ")
        }
        if showsText {
            text += "\""
            for byte in bytes {
                if isPrintable(byte) {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    text += "\\" + String(byte >> 6 & 7) + String(byte >> 3 & 7) + String(byte & 7)
                }
            }
            text += "\""
        }
        return text
    }

    /// Printable as `print_buffer` judges it: ASCII space to tilde, except the backslash it escapes.
    static func isPrintable(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte <= 0x7E && byte != UInt8(ascii: "\\")
    }

    /// The password as `find-… -w` prints it: the bytes themselves when all are printable in the C locale
    /// (`isprint`: space to tilde), else lowercase hex of all of them; then a newline.
    static func passwordOnly(_ data: Data) -> [UInt8] {
        let bytes = Array(data)
        if bytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) { return bytes + [UInt8(ascii: "\n")] }
        return Array((hex(bytes, uppercase: false) + "\n").utf8)
    }
}
