import Keychain
import SecurityBase
import Testing

@Suite("The errors' one skeleton: code, reason, and where it was made")
struct ErrorSkeletonTests {
    @Test("an error records the file and line it was made at, shows them in its debug description only, and is equal by code whatever its place")
    func sourceLocation() {
        let line = #line + 1
        let error = KeychainError(.itemNotFound, "no item matches the query")
        #expect(error.location.fileID.hasSuffix("ErrorSkeletonTests.swift") && error.location.line == line)
        #expect(error.description == "KeychainError.itemNotFound: no item matches the query")
        #expect(error.debugDescription == "\(error.description) [\(error.location)]")
        #expect(error == KeychainError(.itemNotFound, "elsewhere"))
        #expect(error != KeychainError(.duplicateItem, "no item matches the query"))
    }
}
