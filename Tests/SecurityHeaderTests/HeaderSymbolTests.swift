import Foundation
import Security
import TestVectors
import Testing

/// The names of Apple's public Security headers, as Apple-platform Swift sees them. `symbols.tsv` lists
/// them (extracted from Apple's published sources by `extract-symbols.py`); `SymbolChecks.swift`, generated from
/// it, binds each to a constant of its Swift type, so this target does not build when one is missing or typed
/// otherwise; these tests compare the values with Apple's and keep the two files in step.
@Suite("Security: Apple's header symbols")
struct HeaderSymbolTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    static func listed() throws -> [[String]] {
        try String(contentsOf: directory.appendingPathComponent("symbols.tsv"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    @Test("every listed constant has Apple's value (text constants, OSStatus codes, algorithm identifiers)")
    func values() {
        let rows = HeaderSymbols.all
        let compared = rows.filter { !$0.expected.isEmpty }
        #expect(compared.count >= 790, "\(compared.count) of \(rows.count) rows carry Apple's value")
        for row in compared {
            #expect(row.value == row.expected, "\(row.header): \(row.name) is \(row.value ?? "nil"), Apple's is \(row.expected)")
        }
    }

    @Test(
        "the generated checks are those of symbols.tsv, row for row (run generate-checks.py after changing the list)",
        .disabled(if: AFALGGate.required, "host only: it reads the source tree, which the AF_ALG VM does not have"))
    func inStep() throws {
        let listed = try Self.listed().filter { $0[2] != "excluded" }
        let rows = HeaderSymbols.all
        #expect(listed.map { $0[1] } == rows.map(\.name))
        #expect(listed.map { $0.count > 3 ? $0[3] : "" } == rows.map(\.expected))
        // The headers `symbols.tsv` covers, each with rows.
        let headers = Set(listed.map { $0[0] })
        for header in ["SecBase.h", "SecItem.h", "SecKey.h", "SecCertificate.h", "SecIdentity.h", "SecPolicy.h", "SecTrust.h",
                       "SecImportExport.h", "SecRandom.h", "SecSharedCredential.h", "SecureTransport.h",
                       "MacTypes.h", "CFBase.h", "CFError.h"] {
            #expect(headers.contains(header), "\(header) has no rows")
        }
    }

    @Test(
        "every function of the headers is in the list with Apple's Swift type, none left out (the CSSM-era ones included)",
        .disabled(if: AFALGGate.required, "host only: it reads the source tree, which the AF_ALG VM does not have"))
    func functions() throws {
        let listed = try Self.listed()
        #expect(listed.filter { $0[2].hasPrefix("(") }.count >= 206)
        #expect(listed.filter { $0[2] == "excluded" }.isEmpty)
    }

    @Test("SecCreateSharedWebCredentialPassword: Apple's form (xxx-xxx-xxx-xxx from its unambiguous alphabet, each kind of character present), and different each time")
    func sharedWebCredentialPassword() throws {
        let allowed = Set("abcdefghkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var seen = Set<String>()
        for _ in 0..<200 {
            let password = try #require(SecCreateSharedWebCredentialPassword()) as String
            let groups = password.split(separator: "-", omittingEmptySubsequences: false)
            #expect(groups.count == 4 && groups.allSatisfy { $0.count == 3 }, "\(password)")
            let characters = groups.joined()
            #expect(characters.allSatisfy(allowed.contains), "\(password)")
            #expect(characters.contains(where: \.isLowercase) && characters.contains(where: \.isUppercase) && characters.contains(where: \.isNumber))
            seen.insert(password)
        }
        #expect(seen.count == 200)
    }

    @Test("shared web credentials need Apple's associated domains: the add and the request answer errSecUnimplemented")
    func sharedWebCredentials() async {
        let status: Int? = await withCheckedContinuation { continuation in
            SecAddSharedWebCredential("example.com" as CFString, "alice" as CFString, "pw" as CFString) { error in
                continuation.resume(returning: error.map { CFErrorGetCode($0) })
            }
        }
        #expect(status == Int(errSecUnimplemented))
    }
}
