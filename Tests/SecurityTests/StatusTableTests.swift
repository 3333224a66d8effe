import Foundation
import Security
import TestVectors
import Testing

/// SecBase.swift holds each status code's message twice: as the `///` comment above its constant (what a reader
/// and the documentation see) and in the table SecCopyErrorMessageString answers from. This ties the copies.
@Suite("Security status codes: every declared constant against SecCopyErrorMessageString", .hostOnly)
struct StatusTableTests {
    struct Declared {
        let name: String
        let value: OSStatus
        let comment: String
    }

    /// Each `public let errSec…: OSStatus = N` of SecBase.swift with the `///` comment above it.
    static func declared() throws -> [Declared] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: root.appendingPathComponent("Sources/Security/SecBase.swift"), encoding: .utf8)
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let declaration = try Regex(#"^public let (errSec\w+): OSStatus = (-?\d+)$"#)
        var result: [Declared] = []
        for (index, line) in lines.enumerated() {
            guard let match = try declaration.wholeMatch(in: line),
                let name = match.output[1].substring, let value = match.output[2].substring.flatMap({ OSStatus($0) })
            else { continue }
            var above = index - 1
            while above >= 0, lines[above].hasPrefix("@available") { above -= 1 }
            let comment = above >= 0 && lines[above].hasPrefix("/// ") ? String(lines[above].dropFirst(4)) : ""
            result.append(Declared(name: String(name), value: value, comment: comment))
        }
        return result
    }

    @Test("each code's message is the comment above its constant; codes declared without one answer \"OSStatus N\"")
    func messagesMatchComments() throws {
        let declared = try Self.declared()
        #expect(declared.count >= 380)
        for code in declared {
            #expect(!code.comment.isEmpty, "\(code.name) has no comment")
            let message = SecCopyErrorMessageString(code.value, nil) as String?
            if code.comment.hasPrefix("Declared in SecBase.h without a message") {
                #expect(message == "OSStatus \(code.value)", "\(code.name)")
                #expect(code.comment.contains("\"OSStatus \(code.value)\""), "\(code.name): the comment names another code")
            } else if code.comment.hasPrefix("The old spelling of ") {
                let current = String(code.comment.dropFirst("The old spelling of ".count).prefix { $0 != "," })
                #expect(declared.first { $0.name == current }?.value == code.value, "\(code.name) is not an alias of \(current)")
            } else {
                #expect(message == code.comment, "\(code.name)")
            }
        }
    }

    @Test("the table has no message for a code no constant declares, and no two constants share a value unless aliases")
    func tableCoversDeclaredOnly() throws {
        let declared = try Self.declared()
        let values = Set(declared.map(\.value))
        #expect(secErrorMessages.keys.allSatisfy(values.contains))
        #expect(secErrorMessages.count == declared.filter {
            !$0.comment.hasPrefix("Declared in SecBase.h without a message") && !$0.comment.hasPrefix("The old spelling of ")
        }.count)
        let byValue = Dictionary(grouping: declared, by: \.value).filter { $0.value.count > 1 }
        for (value, names) in byValue {
            #expect(names.filter { !$0.comment.hasPrefix("The old spelling of ") }.count == 1, "\(value): \(names.map(\.name))")
        }
    }
}
