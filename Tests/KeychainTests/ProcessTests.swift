import Foundation
import Keychain
import TestVectors
import Testing

/// Several processes on one keychain, and a process killed in the middle of a stream of adds.
@Suite("Keychain: processes", .serialized)
struct ProcessTests {
    /// The child executable, built next to the test bundle (and copied beside it into the AF_ALG VM).
    static var child: URL {
        get throws { try BuiltExecutable.named("keychain-stress-child") }
    }

    static func launch(_ keychain: String, prefix: String, count: Int) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = try child
        process.arguments = [keychain, "stress", prefix, String(count)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        return (process, output)
    }

    @Test("four processes adding and reading at once: every item present, the database intact")
    func concurrentProcesses() throws {
        let temporary = try TemporaryKeychain()
        let children = try (0..<4).map { try Self.launch(temporary.path, prefix: "p\($0)", count: 60) }
        for (process, output) in children {
            let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            #expect(lines.count == 60)
        }
        let store = try KeychainStore(path: temporary.path, accessGroups: ["stress"])
        for child in 0..<4 {
            for index in 0..<60 {
                #expect(try store.password(account: "p\(child)-\(index)", service: "stress") == "secret-p\(child)-\(index)")
            }
        }
        #expect(try Database(path: temporary.path).query("PRAGMA integrity_check") == [[.text("ok")]])
    }

    /// Reads the child's "ok" lines until `count` have come, kills it (SIGKILL), and returns how many steps it had
    /// acknowledged: the lines read, and those written before the kill but not yet read.
    static func killAfter(_ count: Int, _ process: Process, _ output: Pipe) -> Int {
        var acknowledged = 0
        var pending = Data()
        let reader = output.fileHandleForReading
        while acknowledged < count {
            let chunk = reader.availableData
            guard !chunk.isEmpty else { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                if pending[pending.startIndex..<newline].starts(with: Data("ok ".utf8)) { acknowledged += 1 }
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let rest = String(decoding: pending + reader.readDataToEndOfFile(), as: UTF8.self)
        return acknowledged + rest.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count
    }

    /// The churn child's stream (keychain-stress-child --churn), replayed: the items after `steps` steps.
    static func churnModel(after steps: Int) -> [String: String] {
        var values: [String: String] = [:]
        for step in 0..<steps {
            switch step % 4 {
            case 0: if values["k-\(step / 4 % 50)"] == nil { values["k-\(step / 4 % 50)"] = "v-\(step)" }
            case 1: if values["k-\(step % 50)"] != nil { values["k-\(step % 50)"] = "v-\(step)" }
            case 2: values["k-\(step * 7 % 50)"] = nil
            default: break
            }
        }
        return values
    }

    @Test("kill -9 at a random point of a stream of adds, updates, deletes and backups: the keychain is the state after the last acknowledged step or the one in flight, intact; the backup restores")
    func churnCrash() throws {
        let temporary = try TemporaryKeychain()
        let process = Process()
        process.executableURL = try Self.child
        process.arguments = ["--churn", temporary.path, "stress"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let target = Int.random(in: 200...600)
        let acknowledged = Self.killAfter(target, process, output)
        #expect(acknowledged >= target)
        #expect(try Database(path: temporary.path).query("PRAGMA integrity_check") == [[.text("ok")]])
        let store = try KeychainStore(path: temporary.path, accessGroups: ["stress"])
        var found: [String: String] = [:]
        for index in 0..<50 {
            if let value = try store.password(account: "k-\(index)", service: "churn") { found["k-\(index)"] = value }
        }
        let candidates = [Self.churnModel(after: acknowledged), Self.churnModel(after: acknowledged + 1)]
        #expect(candidates.contains(found), "after \(acknowledged) acknowledged steps: \(found.count) items")
        // The backup written last (whole, or the one before it: it is replaced atomically) restores.
        let backup = URL(fileURLWithPath: temporary.path + ".backup")
        if acknowledged > 3 {
            let restored = try TemporaryKeychain().open(groups: ["stress"]).restore(from: backup)
            #expect(restored.restored > 0)
        }
    }

    @Test("kill -9 in the middle of a stream of adds: every acknowledged item survives, integrity_check passes")
    func crash() throws {
        let temporary = try TemporaryKeychain()
        let (process, output) = try Self.launch(temporary.path, prefix: "c", count: 1_000_000)
        let acknowledged = Self.killAfter(150, process, output)
        #expect(acknowledged >= 150)
        #expect(try Database(path: temporary.path).query("PRAGMA integrity_check") == [[.text("ok")]])
        let store = try KeychainStore(path: temporary.path, accessGroups: ["stress"])
        for index in 0..<acknowledged {
            #expect(try store.password(account: "c-\(index)", service: "stress") == "secret-c-\(index)", "item \(index)")
        }
    }

    @Test("kill -9 in the middle of password changes: the last acknowledged password or the next one unlocks, never neither, and the secrets read")
    func crashDuringPasswordChange() async throws {
        let temporary = try TemporaryKeychain()
        let created = try KeychainStore.createPasswordLocked(
            path: temporary.path, password: Data("pw-0".utf8), accessGroups: ["stress"], derivation: .pbkdf2SHA256(rounds: 10_000))
        try created.setPassword("kept", account: "a", service: "stress")
        let child = try Self.child
        // The child's output is read blocking: on a thread of its own, not the test pool's.
        let (acknowledged, killedBySignal) = try await onOwnThread { () throws -> (Int, Bool) in
            let process = Process()
            process.executableURL = child
            process.arguments = ["--change-password", temporary.path, "stress", "1000000"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let reader = output.fileHandleForReading
            var text = ""
            // A random point after at least 20 changes.
            let target = Int.random(in: 20...60)
            while text.split(separator: "\n").count < target {
                let chunk = reader.availableData
                guard !chunk.isEmpty else { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
            let acknowledged = text.split(separator: "\n").compactMap { $0.hasPrefix("ok ") ? Int($0.dropFirst(3)) : nil }.max() ?? 0
            return (acknowledged, process.terminationReason == .uncaughtSignal)
        }
        #expect(killedBySignal)
        #expect(acknowledged >= 20)
        // A fresh process would start locked: lock this one's state, then try the two passwords that may be in force.
        let store = try KeychainStore(path: temporary.path, accessGroups: ["stress"])
        try store.lock()
        let candidates = [acknowledged, acknowledged + 1].filter { (try? store.unlock(password: Data("pw-\($0)".utf8))) != nil }
        #expect(candidates.count == 1, "exactly one of pw-\(acknowledged) and pw-\(acknowledged + 1) unlocks (\(candidates))")
        #expect(try store.password(account: "a", service: "stress") == "kept")
        #expect(try Database(path: temporary.path).query("PRAGMA integrity_check") == [[.text("ok")]])
    }
}
