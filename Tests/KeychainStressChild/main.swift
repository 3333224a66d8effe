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
//   keychain-stress-child --churn KEYCHAIN GROUP
//
// A deterministic stream of operations on keys k-0 … k-49 (step s: s % 4 == 0 adds k-(s/4 % 50) as "v-s" unless it
// exists, 1 updates k-(s % 50) to "v-s" if it exists, 2 deletes k-((s * 7) % 50) if it exists, 3 backs up to
// KEYCHAIN.backup every 40th step); after each returns it prints "ok s" (flushed). ChurnModel in the tests replays
// the same stream, so the test knows the state after each acknowledged step, and after the one in flight.
if arguments.count == 4, arguments[1] == "--churn" {
    do {
        let store = try KeychainStore(path: arguments[2], accessGroups: [arguments[3]])
        var step = 0
        while true {
            switch ChurnStep(step) {
            case .add(let key, let value):
                if try store.password(account: key, service: "churn") == nil {
                    try store.add(.genericPassword, attributes: [.account: .string(key), .service: .string("churn")], data: Data(value.utf8))
                }
            case .update(let key, let value):
                if try store.password(account: key, service: "churn") != nil {
                    try store.update(
                        ItemQuery(.genericPassword, matching: [.account: .string(key), .service: .string("churn")]), attributes: [:],
                        data: Data(value.utf8))
                }
            case .delete(let key):
                if try store.password(account: key, service: "churn") != nil {
                    try store.delete(ItemQuery(.genericPassword, matching: [.account: .string(key), .service: .string("churn")]))
                }
            case .backup:
                _ = try store.backup(to: URL(fileURLWithPath: arguments[2] + ".backup"))
            case .none:
                break
            }
            FileHandle.standardOutput.write(Data("ok \(step)\n".utf8))
            step += 1
        }
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
}

/// One step of the churn stream (see the usage above); the tests' ChurnModel has the same rules.
enum ChurnStep {
    case add(String, String), update(String, String), delete(String), backup, none

    init(_ step: Int) {
        switch step % 4 {
        case 0: self = .add("k-\(step / 4 % 50)", "v-\(step)")
        case 1: self = .update("k-\(step % 50)", "v-\(step)")
        case 2: self = .delete("k-\(step * 7 % 50)")
        default: self = step % 40 == 3 ? .backup : .none
        }
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
