public import Foundation
import SecurityBase
public import Keychain
import Synchronization

/// Apple's `LAContext`: the proof of the user for keychain items whose access control asks for it
/// (`kSecUseAuthenticationContext`), and policy evaluation.
///
/// There is no user interface, passcode or biometry here. As on a Mac without biometry, where user presence falls
/// back to the login password, the proof is a keychain's password: given with `setCredential(_:type:)` as an
/// `.applicationPassword` (Apple's way to hand a password to the keychain without a prompt), or an unlock of the
/// item's keychain within ``touchIDAuthenticationAllowableReuseDuration``. A policy is evaluated against the default
/// keychain's password; biometry and a companion device are never available.
///
/// ```swift
/// let context = LAContext()
/// context.setCredential(password, type: .applicationPassword)
/// let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "api",
///                             kSecReturnData as String: true, kSecUseAuthenticationContext as String: context]
/// ```
open class LAContext: NSObject, ItemAuthenticationContext, @unchecked Sendable {
    // @unchecked: every mutable value is in `state`.
    private struct State {
        var credential: SecretBytes?
        var reuse: TimeInterval = 0
        var interactionNotAllowed = false
        var invalidated = false
        var localizedReason = ""
        var localizedFallbackTitle: String?
        var localizedCancelTitle: String?
    }

    private let state = Mutex(State())

    public override init() { super.init() }

    /// Sets (or, with nil, clears and wipes) the credential of `type`.
    /// - Returns: true for an `.applicationPassword`; false for a type this platform has no use for yet, or after
    ///   ``invalidate()``.
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        guard type == .applicationPassword else { return false }
        return state.withLock { state in
            guard !state.invalidated else { return false }
            state.credential = credential.map { SecretBytes($0) }
            return true
        }
    }

    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        type == .applicationPassword && state.withLock { $0.credential != nil }
    }

    /// How long an unlock of an item's keychain with its password counts as the proof for this context's reads (0:
    /// not at all; at most ``LATouchIDAuthenticationMaximumAllowableReuseDuration``).
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { state.withLock { $0.reuse } }
        set { state.withLock { $0.reuse = min(max(newValue, 0), LATouchIDAuthenticationMaximumAllowableReuseDuration) } }
    }

    /// Whether a read that needs a proof this context does not carry fails (`errSecInteractionNotAllowed`) rather
    /// than asking; here no one can be asked either way, so both refuse, and this only says so explicitly.
    open var interactionNotAllowed: Bool {
        get { state.withLock { $0.interactionNotAllowed } }
        set { state.withLock { $0.interactionNotAllowed = newValue } }
    }

    open var localizedReason: String {
        get { state.withLock { $0.localizedReason } }
        set { state.withLock { $0.localizedReason = newValue } }
    }

    open var localizedFallbackTitle: String? {
        get { state.withLock { $0.localizedFallbackTitle } }
        set { state.withLock { $0.localizedFallbackTitle = newValue } }
    }

    open var localizedCancelTitle: String? {
        get { state.withLock { $0.localizedCancelTitle } }
        set { state.withLock { $0.localizedCancelTitle = newValue } }
    }

    /// No biometry here.
    open var biometryType: LABiometryType { .none }

    /// Ends the context: its credential is wiped, and any later evaluation fails with `.invalidContext`.
    open func invalidate() {
        state.withLock { state in
            state.invalidated = true
            state.credential = nil
        }
    }

    /// Whether `policy` can be evaluated: `.deviceOwnerAuthentication` when the default keychain has a password
    /// (else `.passcodeNotSet`); the biometry and companion policies never (`.biometryNotAvailable`,
    /// `.companionNotAvailable`).
    /// - Parameter error: on failure, the ``LAError`` as an `NSError` (Apple's `NSErrorPointer`; `&error` with a
    ///   `var error: NSError?` passes it, as on Apple platforms).
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        do {
            try check(policy)
            return true
        } catch let failure {
            error?.pointee = failure as NSError
            return false
        }
    }

    /// Evaluates `policy`: for `.deviceOwnerAuthentication`, the credential checked against the default keychain's
    /// password. No one can be asked here: without a credential the answer is `.notInteractive`.
    /// - Parameter reply: called once, on another thread, with the result and an ``LAError`` on failure.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, (any Error)?) -> Void) {
        // A task (not detached): the caller's task-local default keychain is the one asked.
        Task { [self] in
            do {
                reply(try evaluate(policy), nil)
            } catch {
                reply(false, error)
            }
        }
    }

    /// The async form of ``evaluatePolicy(_:localizedReason:reply:)``.
    /// - Throws: ``LAError``.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try evaluate(policy)
    }

    private func check(_ policy: LAPolicy) throws(LAError) {
        switch policy {
        case .deviceOwnerAuthentication:
            guard state.withLock({ !$0.invalidated }) else { throw LAError(.invalidContext) }
            guard (try? KeychainDefaults.store().lockStatus().passwordLocked) == true else { throw LAError(.passcodeNotSet) }
        case .deviceOwnerAuthenticationWithBiometrics: throw LAError(.biometryNotAvailable)
        case .deviceOwnerAuthenticationWithWatch, .deviceOwnerAuthenticationWithBiometricsOrWatch,
            .deviceOwnerAuthenticationWithWristDetection:
            throw LAError(.companionNotAvailable)
        }
    }

    private func evaluate(_ policy: LAPolicy) throws(LAError) -> Bool {
        try check(policy)
        guard let credential = state.withLock({ $0.credential }) else { throw LAError(.notInteractive) }
        do {
            try credential.withUnsafeBytes { try KeychainDefaults.store().verifyPassword($0) }
            return true
        } catch let error as KeychainError where error.code == .authFailed {
            throw LAError(.authenticationFailed)
        } catch {
            throw LAError(.passcodeNotSet)
        }
    }

    // MARK: ItemAuthenticationContext

    public var itemAuthentication: ItemAuthentication {
        state.withLock { state in
            ItemAuthentication(
                password: state.invalidated ? nil : state.credential,
                reuse: state.invalidated ? .zero : .milliseconds(Int64((state.reuse * 1000).rounded())),
                interaction: state.interactionNotAllowed || state.invalidated ? .fail : .allow)
        }
    }
}

/// The longest reuse Apple allows (`touchIDAuthenticationAllowableReuseDuration`), in seconds.
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: TimeInterval = 300
