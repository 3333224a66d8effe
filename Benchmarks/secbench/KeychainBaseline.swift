import SecurityBase
import CryptoContract
import CryptoDispatcher
import Foundation
import Keychain

/// The keychain benchmark's cost floor: the same SQLite wrapper and pragmas as the keychain (WAL,
/// `synchronous=FULL`, `secure_delete=ON`), one table keyed by (service, account), each call one transaction,
/// and one AES-256-GCM operation per item under one fixed key with a random nonce — no envelope, no keyed
/// index, no encrypted attributes.
///
/// Stored secret: `nonce(12) | tag(16) | ciphertext`.
final class KeychainBaseline {
    private static let nonceSize = 12
    private static let tagSize = 16

    private let database: Database
    private var key: [UInt8]

    /// Creates the table in a new database at `path`.
    init(path: String) throws {
        database = try Database(path: path)
        try database.execute(
            """
            CREATE TABLE secret(
                id INTEGER PRIMARY KEY,
                service TEXT NOT NULL,
                account TEXT NOT NULL,
                secret BLOB NOT NULL,
                UNIQUE(service, account)
            )
            """)
        key = try randomBytes(32)
    }

    deinit { key.withUnsafeMutableBytes { secureWipe($0) } }

    func add(service: String, account: String, password: [UInt8]) throws {
        let sealed = try seal(password)
        try database.transaction(writing: true) {
            try database.query(
                "INSERT INTO secret(service, account, secret) VALUES (?1, ?2, ?3)",
                [.text(service), .text(account), .blob(sealed)])
        }
    }

    /// The password stored for (service, account), `nil` when there is none.
    func find(service: String, account: String) throws -> [UInt8]? {
        let rows = try database.transaction(writing: false) {
            try database.query(
                "SELECT secret FROM secret WHERE service = ?1 AND account = ?2", [.text(service), .text(account)])
        }
        guard case .blob(let blob) = rows.first?.first else { return nil }
        return try open(blob)
    }

    /// - Returns: whether an item changed.
    func update(service: String, account: String, password: [UInt8]) throws -> Bool {
        let sealed = try seal(password)
        return try database.transaction(writing: true) {
            try database.query(
                "UPDATE secret SET secret = ?3 WHERE service = ?1 AND account = ?2",
                [.text(service), .text(account), .blob(sealed)])
            return database.changes == 1
        }
    }

    /// - Returns: whether an item was deleted.
    func delete(service: String, account: String) throws -> Bool {
        try database.transaction(writing: true) {
            try database.query(
                "DELETE FROM secret WHERE service = ?1 AND account = ?2", [.text(service), .text(account)])
            return database.changes == 1
        }
    }

    private func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        let nonce = try randomBytes(Self.nonceSize)
        let sealed = try Dispatcher.shared.seal(.aesGCM, key: key, nonce: nonce, plaintext)
        return nonce + sealed.tag + sealed.ciphertext
    }

    private func open(_ blob: [UInt8]) throws -> [UInt8] {
        guard blob.count >= Self.nonceSize + Self.tagSize else {
            throw CryptoError(.decode, "a baseline secret is shorter than its header")
        }
        let nonce = Array(blob[..<Self.nonceSize])
        let tag = Array(blob[Self.nonceSize..<(Self.nonceSize + Self.tagSize)])
        let ciphertext = Array(blob[(Self.nonceSize + Self.tagSize)...])
        return try Dispatcher.shared.open(.aesGCM, key: key, nonce: nonce, ciphertext, tag: tag)
    }
}

/// `count` (at most 256) bytes from getentropy(3): one getrandom(2) call, as the keychain draws its nonces.
func randomBytes(_ count: Int) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    // getentropy: "returns 0 on success, -1 on error with errno set"; glibc retries EINTR itself.
    guard bytes.withUnsafeMutableBytes({ getentropy($0.baseAddress, $0.count) }) == 0 else {
        throw CryptoError(.entropyFailure, "getentropy failed", nativeCode: Int(errno))
    }
    return bytes
}
