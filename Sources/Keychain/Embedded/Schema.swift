/// The database schema, versioned through `PRAGMA user_version`: migration N brings a version N-1 database to
/// version N, inside the transaction that opens it, so two processes opening a new keychain at once create it
/// once.
enum Schema {
    static let migrations: [String] = [
        // Version 1: one row per item. Searchable attributes that could reveal something (account, service,
        // server, label, application tag) are stored only as keyed HMACs (exact, and case-folded for
        // kSecMatchCaseInsensitive); every attribute is in `attributes`, and the secret in `secret`, both
        // encrypted (SecretEnvelope). `uniq` is the keyed HMAC of the class's uniqueness attributes with the
        // access group: Apple's uniqueness rule as one UNIQUE constraint. `link` is the public-key hash that
        // pairs a certificate (pkhh) with its private key (klbl) into an identity.
        // Every index costs a B-tree write per add, update and delete (measured: about 8 µs per WAL page on
        // ext4), so the indexes of attributes most items lack are partial, and the case-folded columns have
        // none: a case-insensitive search (rare) reads the class's rows of the caller's groups.
        """
        CREATE TABLE item(
            id INTEGER PRIMARY KEY,
            uuid BLOB NOT NULL UNIQUE,
            class TEXT NOT NULL,
            agrp TEXT NOT NULL,
            sync INTEGER NOT NULL,
            uniq BLOB NOT NULL,
            acct BLOB, acct_ci BLOB, svce BLOB, svce_ci BLOB, srvr BLOB, srvr_ci BLOB,
            labl BLOB, labl_ci BLOB, atag BLOB,
            link BLOB, kcls INTEGER,
            attributes BLOB NOT NULL,
            secret BLOB,
            UNIQUE(class, uniq)
        );
        CREATE INDEX item_service_account ON item(class, svce, acct);
        CREATE INDEX item_server_account ON item(class, srvr, acct) WHERE srvr IS NOT NULL;
        CREATE INDEX item_label ON item(class, labl) WHERE labl IS NOT NULL;
        CREATE INDEX item_tag ON item(class, atag) WHERE atag IS NOT NULL;
        CREATE INDEX item_link ON item(class, link) WHERE link IS NOT NULL;
        """,
        // Version 2: the master key's check value (an HMAC of a fixed text under the key), written by the first
        // store to open the database: a store opened with another key is refused instead of finding every item
        // unreadable, and a lost key file is not silently replaced while the database is in use.
        """
        CREATE TABLE keycheck(id INTEGER PRIMARY KEY CHECK (id = 1), value BLOB NOT NULL);
        """,
        // Version 3: a password-locked keychain's secrets key, wrapped under the key its password derives
        // (`derivation`: the function, its parameters and salt), the keychain's identity for this process's shared
        // lock state (`keychain`, 16 random bytes), and its lock settings (seconds idle before it locks, NULL for
        // never; lock on sleep). No row: the secrets are under the master key alone.
        """
        CREATE TABLE passwordlock(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            keychain BLOB NOT NULL,
            derivation BLOB NOT NULL,
            wrapped BLOB NOT NULL,
            lock_interval INTEGER,
            lock_on_sleep INTEGER NOT NULL
        );
        """,
        // Version 4: an item's access control list (``ItemAccess``), sealed under the master key and bound to its
        // row like the attributes; NULL for an item without one (open to every application of its groups). Apart
        // from the attributes so that the commonest search, which reads no attributes, learns it from the row.
        """
        ALTER TABLE item ADD COLUMN acl BLOB;
        """,
        // Version 5: whether the item's access control asks for the user, bound into its secret's identity from
        // envelope version 5 on (``SecretBinding``), so that the commonest search learns it from the row instead of
        // decrypting the attributes. Rows sealed before say 0, which their older secrets do not bind: a search
        // that must know reads their attributes.
        """
        ALTER TABLE item ADD COLUMN user INTEGER NOT NULL DEFAULT 0;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Brings `database` to ``currentVersion``.
    /// - Throws: ``KeychainError`` `.database` for a database made by a newer release.
    static func migrate(_ database: Database) throws {
        try database.transaction {
            let version = try database.userVersion
            guard version <= currentVersion else {
                throw KeychainError(.database, "the keychain was written by a newer release (schema \(version))")
            }
            for migration in migrations[version...] { try database.execute(migration) }
            if version < currentVersion { try database.setUserVersion(currentVersion) }
        }
    }
}
