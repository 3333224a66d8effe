import Foundation

/// The common case in one line each: a password per (service, account).
extension KeychainStore {
    /// Stores `password` for `account` at `service`, replacing the one already there.
    public func setPassword(_ password: String, account: String, service: String) throws {
        let match: ItemAttributes = [.account: .string(account), .service: .string(service)]
        do {
            try add(.genericPassword, attributes: match, data: Data(password.utf8))
        } catch let error as KeychainError where error.code == .duplicateItem {
            try update(ItemQuery(.genericPassword, matching: match), attributes: [:], data: Data(password.utf8))
        }
    }

    /// The password for `account` at `service`, or `nil` when there is none.
    /// - Parameter authentication: the proof of the user, for an item whose access control asks for it.
    /// - Throws: ``KeychainError`` `.decode` when the stored secret does not authenticate; `.interactionNotAllowed`
    ///   or `.authFailed` for an access-controlled item without the right proof.
    public func password(account: String, service: String, authentication: ItemAuthentication? = nil) throws -> String? {
        let query = ItemQuery(
            .genericPassword, matching: [.account: .string(account), .service: .string(service)], returning: .data,
            authentication: authentication)
        do {
            guard let data = try find(query).first?.data else { return nil }
            return String(decoding: data, as: UTF8.self)
        } catch let error as KeychainError where error.code == .itemNotFound {
            return nil
        }
    }

    /// Deletes the password for `account` at `service`.
    /// - Returns: whether there was one.
    @discardableResult
    public func deletePassword(account: String, service: String) throws -> Bool {
        do {
            try delete(ItemQuery(.genericPassword, matching: [.account: .string(account), .service: .string(service)]))
            return true
        } catch let error as KeychainError where error.code == .itemNotFound {
            return false
        }
    }
}
