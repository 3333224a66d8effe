import Foundation
import Testing

/// The README and the reference pages link to each other and to the code: every relative link must resolve, to a
/// file that exists and, with a `#fragment`, to a heading of that file.
@Suite(
    "Documentation: every relative link resolves",
    .disabled(
        if: ProcessInfo.processInfo.environment["SECURITYSERVICES_REQUIRE_AFALG"] == "1",
        "host only: it reads the source tree, which the AF_ALG VM does not have"))
struct DocumentationTests {
    static let root = LayeringTests.root

    /// README.md, every page under docs/ and the benchmarks' results pages (whose pictures must be in the tree).
    static func documents() throws -> [URL] {
        let pages = try ["docs", "Benchmarks/results"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "md" }
        }
        return [root.appendingPathComponent("README.md")] + pages.sorted { $0.path < $1.path }
    }

    /// GitHub's anchor of a heading: lower-cased, punctuation other than `-` and `_` dropped, spaces as `-`.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().compactMap { character -> Character? in
                if character == " " { return "-" }
                return character.isLetter || character.isNumber || character == "-" || character == "_" ? character : nil
            })
    }

    static func anchors(in file: URL) throws -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        var fenced = false
        for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, line.hasPrefix("#") else { continue }
            let base = anchor(line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces))
            let count = seen[base, default: 0]
            seen[base] = count + 1
            anchors.insert(count == 0 ? base : "\(base)-\(count)")
        }
        return anchors
    }

    @Test("links in README.md, docs/*.md and the results pages point to files that exist and headings they have")
    func linksResolve() throws {
        let link = try Regex(#"\]\(([^)\s]+)\)"#)
        var checked = 0
        for document in try Self.documents() {
            var fenced = false
            for line in try String(contentsOf: document, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("```") { fenced.toggle() }
                guard !fenced else { continue }
                for match in line.matches(of: link) {
                    guard let target = match.output[1].substring.map(String.init), !target.contains("://"), !target.hasPrefix("mailto:")
                    else { continue }
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                    let file = parts[0].isEmpty ? document : document.deletingLastPathComponent().appendingPathComponent(parts[0]).standardized
                    checked += 1
                    guard FileManager.default.fileExists(atPath: file.path) else {
                        Issue.record("\(document.lastPathComponent): \(target): no such file")
                        continue
                    }
                    if parts.count == 2, file.pathExtension == "md" {
                        #expect(try Self.anchors(in: file).contains(parts[1]), "\(document.lastPathComponent): \(target): no such heading")
                    }
                }
            }
        }
        #expect(checked > 10, "only \(checked) relative links")
    }
}

/// Documents and comments say what and why: no measurement diary. Its marks are the words for repeated passes of a
/// measurement ("round", "sweep") and issue numbers; a round trip, a rounding and AES's rounds are not diary.
@Suite(
    "Documentation: no measurement diary in documents or comments",
    .disabled(
        if: ProcessInfo.processInfo.environment["SECURITYSERVICES_REQUIRE_AFALG"] == "1",
        "host only: it reads the source tree, which the AF_ALG VM does not have"))
struct DiaryTests {
    /// The marks, each with the context that makes the word technical rather than diary, where there is one: the
    /// rounds of a cipher or of a key derivation (PBKDF2's iteration count, `kSecAttrRounds`), an argument named so.
    static func diary() throws -> [(mark: Regex<AnyRegexOutput>, unless: Regex<AnyRegexOutput>?)] {
        [
            (
                try Regex(#"(?i)\brounds?\b(?![- ]trip)(?! (?:up|down|to)\b)"#),
                try Regex(#"(?i)pbkdf|\bprf\b|pseudo-random|number of rounds|\baes\b|key-wrap|iteration|`rounds`|\brounds:"#)
            ),
            (try Regex(#"(?i)\b(?:sweep(?:s|ing)?|swept)\b"#), nil),
            (try Regex(#"(?i)\bissues? #?\d+"#), nil),
        ]
    }

    /// The comment of a source line, by the file's kind; a document's whole line.
    static func commentary(_ line: Substring, kind: String, inBlock: inout Bool) -> Substring? {
        switch kind {
        case "md": return line
        case "sh", "py", "mk":
            return line.firstRange(of: "#").map { line[$0.lowerBound...] }
        default:
            if inBlock {
                if let end = line.firstRange(of: "*/") { inBlock = false; return line[..<end.upperBound] }
                return line
            }
            if let start = line.firstRange(of: "/*") {
                inBlock = line[start.upperBound...].firstRange(of: "*/") == nil
                return line[start.lowerBound...]
            }
            return line.firstRange(of: "//").map { line[$0.lowerBound...] }
        }
    }

    @Test("README, docs and the comments of Sources, Backends, Benchmarks, Tests, Deployment and the Makefile")
    func noDiary() throws {
        let root = LayeringTests.root
        // The results pages are the benchmarks' output, measurements and all: generated, not written.
        let files = try DocumentationTests.documents().filter { !$0.path.contains("/Benchmarks/results/") }
            + LayeringTests.files(under: ["Sources", "Backends", "Benchmarks", "Tests", "Deployment"], extensions: ["swift", "c", "h", "sh", "py"])
            + [root.appendingPathComponent("Makefile")]
        let diary = try Self.diary()
        var found: [String] = []
        for file in files where file.lastPathComponent != "DocumentationTests.swift" {
            let kind = file.lastPathComponent == "Makefile" ? "mk" : file.pathExtension
            var inBlock = false
            for (number, line) in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard let text = Self.commentary(line, kind: kind, inBlock: &inBlock) else { continue }
                if diary.contains(where: { text.contains($0.mark) && !($0.unless.map { text.contains($0) } ?? false) }) {
                    found.append("\(file.path.dropFirst(root.path.count + 1)):\(number + 1): \(line.trimmingCharacters(in: .whitespaces).prefix(120))")
                }
            }
        }
        #expect(found.isEmpty, "\(found.count) lines:\n\(found.joined(separator: "\n"))")
    }
}

/// A file holds one thing: no Swift file of the package runs past ``limit`` lines, except Apple's tables, which follow
/// Apple's headers entry by entry.
@Suite(
    "Files hold one thing",
    .disabled(
        if: ProcessInfo.processInfo.environment["SECURITYSERVICES_REQUIRE_AFALG"] == "1",
        "host only: it reads the source tree, which the AF_ALG VM does not have"))
struct FileSizeTests {
    static let limit = 600
    /// Apple's constant tables: the result codes of SecBase.h, and the symbol checks generated from Apple's headers.
    static let tables: Set<String> = ["Sources/Security/SecBase.swift", "Tests/SecurityHeaderTests/SymbolChecks.swift"]

    @Test("no Swift file over 600 lines outside Apple's constant tables")
    func short() throws {
        let root = LayeringTests.root
        var long: [String] = []
        for file in LayeringTests.files(under: ["Sources", "Backends", "Benchmarks", "Tests"], extensions: ["swift"]) {
            let path = String(file.path.dropFirst(root.path.count + 1))
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            if lines > Self.limit && !Self.tables.contains(path) { long.append("\(path): \(lines) lines") }
        }
        #expect(long.isEmpty, "\(long.sorted().joined(separator: "\n"))")
    }
}
