public import SecurityBase

/// How reading a secret whose access control asks for the user is authenticated (Apple's
/// `kSecUseAuthenticationContext` and `kSecUseAuthenticationUI`).
///
/// There is no user interface here. As on a Mac without biometry, where user presence falls back to the user's
/// password, the proof is the password of the item's keychain: given with the request (Apple's
/// `LAContext.setCredential(_:type: .applicationPassword)`), or the keychain unlocked with it within ``reuse``
/// (Apple's `touchIDAuthenticationAllowableReuseDuration`). Without either the read is refused, or the item
/// skipped, as ``interaction`` says.
public struct ItemAuthentication: Sendable, Hashable, CustomStringConvertible {
    /// What happens to an item that needs a proof the request does not carry.
    public enum Interaction: Sendable, Hashable {
        /// Apple would ask the user; no one can be asked here: `interactionNotAllowed`, saying how to give the proof.
        case allow
        /// `kSecUseAuthenticationUIFail`: `interactionNotAllowed`.
        case fail
        /// `kSecUseAuthenticationUISkip`: the item is left out of the answer, as if it did not match.
        case skip
    }

    /// The keychain's password, as the user would type it (nil: none given).
    public var password: SecretBytes?
    /// An unlock of the keychain with its password at most this long ago counts as the proof (zero: it does not).
    public var reuse: Duration
    public var interaction: Interaction

    public init(password: SecretBytes? = nil, reuse: Duration = .zero, interaction: Interaction = .allow) {
        self.password = password
        self.reuse = reuse
        self.interaction = interaction
    }

    /// The most reuse Apple allows (`LATouchIDAuthenticationMaximumAllowableReuseDuration`, five minutes).
    public static let maximumReuse = Duration.seconds(300)

    public static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.reuse == rhs.reuse, lhs.interaction == rhs.interaction else { return false }
        switch (lhs.password, rhs.password) {
        case (nil, nil): return true
        case (let left?, let right?): return right.withUnsafeBytes { left.constantTimeEquals($0) }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(reuse)
        hasher.combine(interaction)
        hasher.combine(password != nil)
    }

    /// Says whether a password is given, never the password.
    public var description: String {
        "ItemAuthentication(password: \(password == nil ? "none" : "given"), reuse: \(reuse), interaction: \(interaction))"
    }
}

/// An object that carries an ``ItemAuthentication`` in a query (LocalAuthentication's `LAContext`), so that the
/// Security API takes it as `kSecUseAuthenticationContext` without depending on the module that defines it.
public protocol ItemAuthenticationContext: AnyObject, Sendable {
    /// The authentication a request made with this context carries now.
    var itemAuthentication: ItemAuthentication { get }
}
