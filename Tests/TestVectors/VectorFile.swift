public import Foundation

/// Where the published test vectors live: the PyPI package `cryptography-vectors` (pinned in the Makefile),
/// found through `SECURITYSERVICES_VECTORS` or, failing that, by asking `python3` where it is installed.
public enum VectorDirectory {
    public static let root: URL? = {
        if let path = ProcessInfo.processInfo.environment["SECURITYSERVICES_VECTORS"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", "import cryptography_vectors, os; print(os.path.dirname(cryptography_vectors.__file__))"]
        let pipe = Pipe()
        python.standardOutput = pipe
        python.standardError = FileHandle.nullDevice
        guard (try? python.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        python.waitUntilExit()
        guard python.terminationStatus == 0 else { return nil }
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return path.isEmpty ? nil : URL(fileURLWithPath: path, isDirectory: true)
    }()

    /// Why vectors are missing, for a test's failure message.
    public static let missingReason =
        "NIST/RFC vectors not found: install the pinned PyPI package (make test does) or set SECURITYSERVICES_VECTORS"
}

/// One record of a NIST CAVP `.rsp` file or of cryptography's reformatted RFC files: `KEY = value` lines
/// (keys upper-cased), the `[SECTION]` it stands under, separated by blank lines.
public struct VectorRecord: Sendable {
    public let section: String
    public let fields: [String: String]
    /// Where it comes from, for failure messages: `file#index`.
    public let origin: String

    public subscript(_ key: String) -> String? { fields[key] }

    /// A hex field as bytes; `nil` when absent.
    public func bytes(_ key: String) -> [UInt8]? { fields[key].map(hexBytes) }
}

public enum VectorError: Error, CustomStringConvertible {
    case missingDirectory
    case unreadable(String)
    public var description: String {
        switch self {
        case .missingDirectory: VectorDirectory.missingReason
        case .unreadable(let path): "cannot read vector file \(path)"
        }
    }
}

/// Reads every record of `relativePath` under the vectors directory.
public func loadVectors(_ relativePath: String) throws -> [VectorRecord] {
    guard let root = VectorDirectory.root else { throw VectorError.missingDirectory }
    let url = root.appendingPathComponent(relativePath)
    guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw VectorError.unreadable(url.path) }
    var records: [VectorRecord] = []
    var section = ""
    var fields: [String: String] = [:]
    func flush() {
        if !fields.isEmpty {
            records.append(VectorRecord(section: section, fields: fields, origin: "\(relativePath)#\(records.count)"))
            fields = [:]
        }
    }
    // CAVP files use CRLF, which Swift reads as one Character: split on any newline.
    for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
        let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
        if line.isEmpty {
            flush()
            continue
        }
        if line.hasPrefix("#") { continue }
        if line.hasPrefix("[") && line.hasSuffix("]") {
            flush()
            let name = String(line.dropFirst().dropLast())
            // `[L = 20]` and friends are parameters, not sections.
            if !name.contains("=") { section = name.uppercased() }
            continue
        }
        guard let equals = line.firstIndex(of: "=") else {
            // A bare word is a flag (SP 800-38F's "FAIL").
            if line.allSatisfy({ $0.isLetter }) { fields[line.uppercased()] = "" }
            continue
        }
        let key = line[..<equals].trimmingCharacters(in: .whitespaces).uppercased()
        let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        // A new COUNT starts a new record even without a blank line before it.
        if key == "COUNT" { flush() }
        fields[key] = value
    }
    flush()
    return records
}

/// Lower- or upper-case hex to bytes (an odd trailing nibble is ignored).
public func hexBytes(_ hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(hex.utf8.count / 2)
    var high: UInt8?
    for character in hex.utf8 {
        let nibble: UInt8
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
        default: continue
        }
        if let value = high {
            bytes.append(value << 4 | nibble)
            high = nil
        } else {
            high = nibble
        }
    }
    return bytes
}

extension Array where Element == UInt8 {
    public var hex: String { map { String(format: "%02x", $0) }.joined() }
}
