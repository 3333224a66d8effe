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
//   keychain-stress-child --change-password KEYCHAIN GROUP COUNT
//
// On a password-locked keychain whose password is "pw-0", changes it to "pw-1", "pw-2", … (PBKDF2, 10,000 rounds)
// and prints "ok i" (flushed) once the change to "pw-i" has returned: the password then in force.
if arguments.count == 5, arguments[1] == "--change-password", let count = Int(arguments[4]) {
    do {
        let store = try KeychainStore(path: arguments[2], accessGroups: [arguments[3]])
        for index in 1...max(count, 1) {
            try store.changePassword(old: Data("pw-\(index - 1)".utf8), new: Data("pw-\(index)".utf8), derivation: .pbkdf2SHA256(rounds: 10_000))
            FileHandle.standardOutput.write(Data("ok \(index)\n".utf8))
        }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
}
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
