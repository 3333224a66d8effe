// A child process for the keychain's multi-process and crash tests (KeychainTests/ProcessTests.swift).
//
//   keychain-stress-child KEYCHAIN GROUP PREFIX COUNT
//
// Adds COUNT generic passwords (account PREFIX-i, service "stress", data "secret-PREFIX-i") and, after each add
// returns, reads the item back and prints "ok i" (flushed): a line on stdout is an acknowledged write. Exits 1
// on the first error, printing it to stderr.
import Foundation
import Keychain

let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: keychain-stress-child KEYCHAIN GROUP PREFIX COUNT\n".utf8))
    exit(2)
}
let prefix = arguments[3]
do {
    let store = try KeychainStore(path: arguments[1], accessGroups: [arguments[2]])
    for index in 0..<count {
        try store.add(
            .genericPassword, attributes: [.account: .string("\(prefix)-\(index)"), .service: .string("stress")],
            data: Data("secret-\(prefix)-\(index)".utf8))
        guard try store.password(account: "\(prefix)-\(index)", service: "stress") == "secret-\(prefix)-\(index)" else {
            FileHandle.standardError.write(Data("read back a different secret\n".utf8))
            exit(1)
        }
        FileHandle.standardOutput.write(Data("ok \(index)\n".utf8))  // unbuffered: one write(2) per line
    }
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
