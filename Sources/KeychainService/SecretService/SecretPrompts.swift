import Foundation
import Keychain
import SecurityBase
import Synchronization

/// Prompts: what the specification asks of a service whose collection is locked. `Unlock` answers with a prompt
/// object; the client calls its `Prompt`, and the service asks the user (the prompter, a program that prints the
/// password on its standard output: `ssh-askpass`, a script around `zenity --password`), unlocks the keychain
/// with what it gets, and signals `Completed` to that client. A wrong password is asked again, three times in all; a
/// prompter that fails, or a client's `Dismiss`, completes it dismissed. The prompter runs on a thread of its own: the
/// service goes on answering others meanwhile.
extension SecretServiceFront {
    struct PendingPrompt: Sendable {
        /// The client whose Unlock made it: no other may prompt or dismiss it, and only it is told the outcome.
        let owner: String
        let identity: PeerIdentity
        let groups: [String]
        /// The locked objects asked for, and the collection of each.
        let objects: [(object: String, collection: String)]
        let asking = PromptProcess()
        var started = false
    }

    /// The prompter program while it runs, so that a dismissal ends it.
    final class PromptProcess: @unchecked Sendable {
        // @unchecked: both fields are only touched under `lock`.
        private let lock = NSLock()
        private var process: Process?
        private var dismissed = false

        var isDismissed: Bool { lock.withLock { dismissed } }

        func dismiss() {
            lock.withLock {
                dismissed = true
                process?.terminate()
            }
        }

        /// Runs `program` with `message` as its one argument: the first line it prints, nil when it fails or the
        /// prompt was dismissed.
        func ask(_ program: String, _ message: String) -> [UInt8]? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = [message]
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = FileHandle.nullDevice
            let started: Bool = lock.withLock {
                guard !dismissed, (try? process.run()) != nil else { return false }
                self.process = process
                return true
            }
            guard started else { return nil }
            var answer = [UInt8](output.fileHandleForReading.readDataToEndOfFile())
            process.waitUntilExit()
            lock.withLock { self.process = nil }
            defer { answer.withUnsafeMutableBytes { secureWipe($0) } }
            guard process.terminationStatus == 0, !isDismissed else { return nil }
            return Array(answer.prefix { $0 != UInt8(ascii: "\n") })
        }
    }

    /// `Unlock` of objects some of which are locked: the prompt that will unlock them, when the service has a
    /// prompter.
    func makePrompt(_ objects: [(object: String, collection: String)], for identity: PeerIdentity, groups: [String], owner: String) throws -> String {
        guard prompts.values.count(where: { $0.owner == owner }) < Self.promptsPerClient else {
            throw BusError(.failed, "the caller has \(Self.promptsPerClient) prompts pending: complete or dismiss one first")
        }
        promptCount += 1
        let path = SecretPaths.prompts + "p\(promptCount)"
        prompts[path] = PendingPrompt(owner: owner, identity: identity, groups: groups, objects: objects)
        return path
    }

    /// `Prompt` and `Dismiss` on a prompt object.
    func promptCall(_ call: Call) throws -> Answer {
        guard var prompt = prompts[call.path], prompt.owner == call.sender else {
            throw BusError(.noSuchObject, "\(call.path) is not a prompt of the caller")
        }
        switch call.member {
        case "Prompt":
            _ = try call.arguments.string()  // the window to be modal for: a prompter program has none
            guard !prompt.started, let prompter, let bus else { throw BusError(.failed, "\(call.path) has already prompted") }
            prompt.started = true
            prompts[call.path] = prompt
            let keychains = self.keychains
            let path = call.path
            let pending = prompt
            Thread.detachNewThread { [self] in
                let unlocked = Self.unlock(pending, keychains: keychains, prompter: prompter)
                bus.post { [self] in complete(path, dismissed: unlocked == nil, unlocked: unlocked ?? []) }
            }
            return { _ in }
        case "Dismiss":
            prompt.asking.dismiss()
            complete(call.path, dismissed: true, unlocked: [])
            return { _ in }
        default:
            throw BusError(.unknownMethod, "\(call.member) is not a method of a prompt")
        }
    }

    /// Asks for each locked collection's password and unlocks it: the objects unlocked, nil when the user (or the
    /// client) gave up.
    private static func unlock(_ prompt: PendingPrompt, keychains: KeychainService, prompter: String) -> [String]? {
        var unlocked: [String] = []
        for (object, collection) in prompt.objects {
            guard case .some(let keychain) = SecretPaths.keychain(ofCollection: collection) else { return nil }
            var opened = false
            for attempt in 0..<3 where !opened {
                let message =
                    (attempt > 0 ? "Wrong password. " : "")
                    + "Unlock the keychain \(keychain ?? "login") for \(prompt.identity.executablePath)"
                guard var password = prompt.asking.ask(prompter, message) else { return nil }
                defer { password.withUnsafeMutableBytes { secureWipe($0) } }
                do {
                    try keychains.withStore(for: prompt.identity, keychain: keychain, groups: prompt.groups) { store -> Void in
                        if store.isLocked { try store.unlock(password: password) }
                    }
                    opened = true
                } catch {
                    continue  // a wrong password: asked again
                }
            }
            guard opened else { return nil }
            unlocked.append(object)
        }
        return unlocked
    }

    /// Tells the prompt's client the outcome (`Completed`: dismissed, and the objects unlocked) and forgets it.
    private func complete(_ path: String, dismissed: Bool, unlocked: [String]) {
        guard let prompt = prompts.removeValue(forKey: path) else { return }
        bus?.signal(path, Self.promptInterface, "Completed", to: prompt.owner) { writer in
            try writer.bool(dismissed)
            try writer.variant(.objectPaths(unlocked))
        }
    }
}
