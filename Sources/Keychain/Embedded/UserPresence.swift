import CryptoContract
import Foundation

extension EmbeddedKeychain {
    /// The proof of the user that one request carries, for the items whose access control asks for the user: taken
    /// from the request's ``ItemAuthentication`` and checked at most once per request.
    final class UserProof {
        let authentication: ItemAuthentication
        /// The keychain's lock state in this process (its password's record is read, inside the request's
        /// transaction, only when a password is to be checked).
        private let lock: SecretsLock
        private var proven = false

        fileprivate init(_ authentication: ItemAuthentication?, lock: SecretsLock) {
            self.authentication = authentication ?? ItemAuthentication()
            self.lock = lock
        }

        /// Whether `item`'s secret may be returned: true when its access control asks for no one, or the request
        /// proves the user; false when the request asked to skip such items. `item` must have been read with its
        /// attributes, in the request's transaction on `database`.
        /// - Throws: ``KeychainError`` `.authFailed` for a wrong password (a wrong one waits as a wrong unlock does,
        ///   unless the keychain service answers, which delays its answer itself), `.interactionNotAllowed` without
        ///   a proof.
        func admits(_ item: StoredItem, in database: Database) throws -> Bool {
            guard ItemAccessControl.asksForUser(in: item.attributes) else { return true }
            if proven { return true }
            if let password = authentication.password {
                guard let record = try PasswordLockRecord.read(database) else {
                    throw KeychainError(.interactionNotAllowed, "the item's access control asks for the user, and its keychain has no password to prove it")
                }
                _ = try lock.verify(password, derivation: record.derivation, wrapped: record.wrapped, waiting: ItemAccess.accessor == nil)
                proven = true
                return true
            }
            if lock.unlocked(within: min(authentication.reuse, ItemAuthentication.maximumReuse)) {
                proven = true
                return true
            }
            switch authentication.interaction {
            case .skip: return false
            case .fail:
                throw KeychainError(.interactionNotAllowed, "the item's access control asks for the user, and the request allows no interaction")
            case .allow:
                throw KeychainError(
                    .interactionNotAllowed,
                    "the item's access control asks for the user, and no one can be asked here: give the keychain's password in the authentication context")
            }
        }
    }

    /// The proof `query` carries, or nil when no item it reaches needs one: `needed` false (no secret read, no item
    /// changed), or a keychain without a password in this process (which holds no item that asks for the user; one
    /// whose password another process set since is noticed when a secret is opened, and gives none to this store).
    func userProof(for query: ItemQuery, needSecret needed: Bool) -> UserProof? {
        guard needed, let secrets else { return nil }
        return UserProof(query.authentication, lock: secrets)
    }
}
