public import Foundation
import Entropy

// Apple's SecSharedCredential.h: passwords shared between an app and its websites (Safari's saved passwords). They
// need Apple's associated-domains entitlement and the password store Safari keeps, which do not exist here: the
// add and request calls answer errSecUnimplemented through their completion handlers. The password generator works.

/// The password in a shared web credential's dictionary (Apple's value).
nonisolated(unsafe) public let kSecSharedPassword: CFString = "spwd"

/// Would save `password` (nil: delete) for `account` on `fqdn` in the user's shared web credentials; here the
/// completion handler gets a CFError with `errSecUnimplemented`, on a Dispatch queue (as Apple calls it off the
/// caller's thread).
public func SecAddSharedWebCredential(
    _ fqdn: CFString, _ account: CFString, _ password: CFString?, _ completionHandler: @escaping (CFError?) -> Void
) {
    let error = sharedCredentialsUnavailable()
    let call = CompletionCall { completionHandler(error) }
    DispatchQueue.global().async { call.run() }
}

/// Would ask for the shared web credentials of `fqdn` and `account`; here the completion handler gets no array and
/// a CFError with `errSecUnimplemented`.
public func SecRequestSharedWebCredential(
    _ fqdn: CFString?, _ account: CFString?, _ completionHandler: @escaping (CFArray?, CFError?) -> Void
) {
    let error = sharedCredentialsUnavailable()
    let call = CompletionCall { completionHandler(nil, error) }
    DispatchQueue.global().async { call.run() }
}

/// A completion handler as Apple's headers type it (not `@Sendable`), called once on another thread, as Apple
/// calls it.
private final class CompletionCall: @unchecked Sendable {
    // @unchecked: the closure is the caller's, called exactly once, after this function has returned; making what
    // it captures safe on another thread is the caller's part, as on Apple platforms.
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    func run() { body() }
}

private func sharedCredentialsUnavailable() -> CFError {
    NSError(
        domain: NSOSStatusErrorDomain, code: Int(errSecUnimplemented),
        userInfo: [NSLocalizedDescriptionKey: "shared web credentials need Apple's associated domains, which Linux does not have"])
}

/// A new random password as Apple generates them for shared web credentials: four groups of three characters
/// joined by "-" (`xxx-xxx-xxx-xxx`), from letters and digits that cannot be mistaken for one another (no i, j, l,
/// I, O, 0, 1), with at least one lower-case letter, one capital and one digit; nil only when no random bytes can
/// be had.
@discardableResult
public func SecCreateSharedWebCredentialPassword() -> CFString? {
    let lower = Array("abcdefghkmnopqrstuvwxyz"), upper = Array("ABCDEFGHJKLMNPQRSTUVWXYZ"), digits = Array("3456789")
    let alphabet = lower + upper + digits
    for _ in 0..<64 {
        var characters: [Character] = []
        while characters.count < 12 {
            guard let bytes = try? EntropySource.bytes(count: 32) else { return nil }
            // Rejection sampling: only bytes below the largest multiple of the alphabet's size, so each character
            // is equally likely.
            let limit = 256 - 256 % alphabet.count
            for byte in bytes where Int(byte) < limit && characters.count < 12 { characters.append(alphabet[Int(byte) % alphabet.count]) }
        }
        guard characters.contains(where: lower.contains), characters.contains(where: upper.contains),
            characters.contains(where: digits.contains)
        else { continue }
        let groups = stride(from: 0, to: 12, by: 3).map { String(characters[$0..<$0 + 3]) }
        return groups.joined(separator: "-") as NSString
    }
    return nil
}
