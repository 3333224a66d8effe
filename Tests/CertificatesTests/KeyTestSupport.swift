import Foundation

/// Helpers shared by the key tests: hex, a minimal DER writer for PKCS#1 keys built from vector numbers, the
/// NIST `.rsp` and pyca `.txt` vector readers, and the `openssl` command runner.
enum KeyTestSupport {
    static func bytes(hex: String) -> [UInt8] {
        var text = hex.filter { $0.isHexDigit }
        if text.count % 2 == 1 { text = "0" + text }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            out.append(UInt8(text[index..<next], radix: 16)!)  // !: filtered to hex digits above
            index = next
        }
        return out
    }

    static func data(hex: String) -> Data { Data(bytes(hex: hex)) }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// Left-pads (or strips leading zeros from) a big-endian number to `width` bytes.
    static func fixed(_ value: [UInt8], width: Int) -> [UInt8] {
        var trimmed = Array(value.drop { $0 == 0 })
        if trimmed.count < width { trimmed = [UInt8](repeating: 0, count: width - trimmed.count) + trimmed }
        return trimmed
    }

    // MARK: DER

    static func derLength(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var value = count
        while value > 0 {
            bytes.insert(UInt8(value & 0xff), at: 0)
            value >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func derInteger(_ value: [UInt8]) -> [UInt8] {
        var body = Array(value.drop { $0 == 0 })
        if body.isEmpty || body[0] & 0x80 != 0 { body.insert(0, at: 0) }
        return [0x02] + derLength(body.count) + body
    }

    static func derSequence(_ parts: [[UInt8]]) -> [UInt8] {
        let body = parts.flatMap { $0 }
        return [0x30] + derLength(body.count) + body
    }

    /// PKCS#1 RSAPublicKey.
    static func rsaPublicKey(n: [UInt8], e: [UInt8]) -> Data { Data(derSequence([derInteger(n), derInteger(e)])) }

    /// PKCS#1 RSAPrivateKey (version 0).
    static func rsaPrivateKey(_ parts: [[UInt8]]) -> Data { Data(derSequence([derInteger([0])] + parts.map(derInteger))) }

    // MARK: Vectors

    static var vectorsRoot: URL? {
        ProcessInfo.processInfo.environment["SECURITYSERVICES_VECTORS"].map { URL(fileURLWithPath: $0).appendingPathComponent("asymmetric") }
    }

    /// A NIST response file as records: each record is the `key = value` lines up to a blank line, carrying the
    /// section (`[mod = 1024]`, `[P-256,SHA-256]`) and the values set before it in that section (n, e, SHAAlg).
    static func nistRecords(_ path: String) throws -> [(section: String, values: [String: String])] {
        guard let root = vectorsRoot else { return [] }
        let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        var records: [(String, [String: String])] = []
        var section = ""
        var sticky: [String: String] = [:]
        var current: [String: String] = [:]
        func flush() {
            if current["Result"] != nil { records.append((section, sticky.merging(current) { $1 })) }
            current = [:]
        }
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                flush()
                section = String(line.dropFirst().dropLast())
                sticky = [:]
                continue
            }
            if line.isEmpty {
                flush()
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if key == "n" { sticky["n"] = value } else { current[key] = value }
            if current["Result"] != nil { flush() }
        }
        flush()
        return records
    }

    /// The pyca OAEP file format: "# Label:" lines followed by hex lines.
    static func oaepExamples(_ path: String) throws -> [(key: Data, message: Data, ciphertext: Data)] {
        guard let root = vectorsRoot else { return [] }
        let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        var fields: [(String, String)] = []
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") {
                fields.append((line.dropFirst().trimmingCharacters(in: .whitespaces), ""))
            } else if !fields.isEmpty {
                fields[fields.count - 1].1 += line
            }
        }
        var examples: [(Data, Data, Data)] = []
        var key = Data()
        var privateParts: [String: [UInt8]] = [:]
        var inPrivate = false
        var message: Data?
        for (label, value) in fields {
            switch label {
            case "Private key": inPrivate = true
            case "Public key": inPrivate = false
            case "Modulus:" where inPrivate: privateParts["n"] = bytes(hex: value)
            case "Public exponent:" where inPrivate: privateParts["e"] = bytes(hex: value)
            case "Exponent:" where inPrivate: privateParts["d"] = bytes(hex: value)
            case "Prime 1:": privateParts["p"] = bytes(hex: value)
            case "Prime 2:": privateParts["q"] = bytes(hex: value)
            case "Prime exponent 1:": privateParts["dp"] = bytes(hex: value)
            case "Prime exponent 2:": privateParts["dq"] = bytes(hex: value)
            case "Coefficient:":
                privateParts["qinv"] = bytes(hex: value)
                key = rsaPrivateKey(["n", "e", "d", "p", "q", "dp", "dq", "qinv"].map { privateParts[$0] ?? [] })
                inPrivate = false
            case "Message:": message = data(hex: value)
            case "Encryption:":
                if let message { examples.append((key, message, data(hex: value))) }
                message = nil
            default: break
            }
        }
        return examples
    }

    // MARK: openssl

    struct CommandResult {
        let status: Int32
        let output: Data
        let error: String
    }

    /// Runs `openssl` with `arguments` in `directory`.
    @discardableResult
    static func openssl(_ arguments: [String], in directory: URL, input: Data? = nil) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let output = Pipe(), error = Pipe(), stdin = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(input) }
        try stdin.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, output: out, error: String(decoding: err, as: UTF8.self))
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}
