import SecurityBase
import ArgumentParser
import Foundation
import Keychain
import Security
import Synchronization

/// `security`: the keychain, certificate and identity subcommands of macOS security(1), written over the Security API as Apple's tool is
/// written over Keychain Services.
///
/// Output, messages and exit statuses are macOS's: a failure prints `security: <call>: <message>` on stderr and
/// exits with the low byte of the `OSStatus` (44 for `errSecItemNotFound`, 45 for `errSecDuplicateItem`), as
/// Apple's `main` returns the status. Usage errors are ArgumentParser's (exit 64).
@main
struct SecurityTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "security",
        abstract: "Command-line interface to the keychain (macOS security(1)'s keychain commands).",
        discussion: """
            Every command takes --keychain PATH (or the keychain as its last argument) and --access-group GROUP \
            (repeatable; adds go to the first). Without them the defaults apply: $SECURITYSERVICES_KEYCHAIN, else \
            $XDG_DATA_HOME/securityservices/keychain.db; $SECURITYSERVICES_ACCESS_GROUPS, else the group "security".
            """,
        subcommands: [
            AddGenericPassword.self, FindGenericPassword.self, DeleteGenericPassword.self,
            AddInternetPassword.self, FindInternetPassword.self, DeleteInternetPassword.self,
            DumpKeychain.self,
            ImportItems.self, ExportItems.self, FindCertificate.self, DeleteCertificate.self, FindIdentity.self,
            DeleteIdentity.self, CreateKeypair.self, CreateCSR.self, ListSmartcards.self, VerifyCert.self,
            AddTrustedCert.self, RemoveTrustedCert.self, DumpTrustSettings.self,
            TrustStoreCommand.self, ClientIdentityCommand.self, Enroll.self,
            CreateKeychain.self, DeleteKeychain.self, LockKeychain.self, UnlockKeychain.self, ShowKeychainInfo.self,
            SetKeychainSettings.self, SetKeychainPassword.self, ListKeychains.self, DefaultKeychain.self, LoginKeychain.self,
        ])

    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        PasswordPrompt.markTrailingPasswordFlag(in: &arguments)
        do {
            var command = try parseAsRoot(arguments)
            // The default keychain is closed before the process exits, also when the command fails: a deleted item's
            // sealed copy leaves the database and its WAL then (``KeychainDefaults/close()``).
            defer { KeychainDefaults.close() }
            try command.run()
        } catch let failure as Failure {
            failure.report()
            Foundation.exit(failure.exitStatus)
        } catch {
            exit(withError: error)
        }
    }
}

/// A failure, reported the way security(1) reports one: `security: <what failed>: <why>` on stderr.
struct Failure: CodedError {
    /// The text after `security: `.
    let text: String
    /// The process's exit status.
    let exitStatus: Int32
    let location: ErrorLocation

    /// Failures with the same exit status are alike to a script.
    var code: Int32 { exitStatus }
    var reason: String { text }

    /// A failed call: its name as macOS prints it (`SecKeychainSearchCopyNext`,
    /// `SecKeychainItemCreateFromContent (path)`) and the status's message from the Security API, so a password
    /// is never echoed. The exit status is the status's low byte, as Apple's `main` returns the OSStatus, unless
    /// `exitStatus` says otherwise.
    init(_ operation: String, _ status: OSStatus, exitStatus: Int32? = nil, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        var message = SecCopyErrorMessageString(status, nil).map { $0 as String } ?? "OSStatus \(status)"
        // Apple's text for this status suggests a restart; the keychain says what is missing and where.
        if status == errSecNotAvailable, let reason = KeychainUnavailability.lastReason { message = reason }
        text = "\(operation): \(message)"
        // A status whose low byte is zero must still fail.
        let lowByte = Int32(UInt8(truncatingIfNeeded: status))
        self.exitStatus = exitStatus ?? (lowByte == 0 ? 1 : lowByte)
    }

    /// A failure that is not a Security call's, such as a password prompt that got no password.
    init(reason: String, exitStatus: Int32 = 1, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        text = reason
        self.exitStatus = exitStatus
    }

    func report() {
        Console.error("security: \(text)\n")
    }
}

/// Unbuffered writes to the standard streams, so stdout and stderr interleave in the order written.
enum Console {
    static func output(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
    static func output(bytes: [UInt8]) { FileHandle.standardOutput.write(Data(bytes)) }
    static func error(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}

/// Runs `work` as a task and waits for it. The commands are synchronous (ArgumentParser's root is); the main thread,
/// which is not one of the tasks' threads, waits on a semaphore.
func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result: Result<T, any Error>
        do {
            result = .success(try await work())
        } catch {
            result = .failure(error)
        }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    // !: the task sets the outcome before it signals.
    return try outcome.withLock { $0 }!.get()
}
