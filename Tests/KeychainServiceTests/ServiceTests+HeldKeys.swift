import KeychainWire
import SecurityBase
import CryptoContract
import Certificates
import Foundation
import Keychain
import KeychainItems
import TestVectors
import Testing

extension ServiceTests {
    @Suite("Keychain service: private keys held in the service, signing and decrypting there")
    struct HeldKeys {
        @Test("a held key under user presence signs only with the proof: the keychain's password sent with the operation, as the key found with it carries it")
        func heldKeyUnderUserPresence() throws {
            let world = try ServiceWorld()
            let store = try KeychainStore(service: world.socket)
            #expect(try world.run(try world.application("app-a"), ["set-password", "held password"]) == "unlocked")
            let ec = try AsymmetricKey.generateEC(curve: .p256)
            let item = try KeyItemAttributes(ec, label: "presence")
            var attributes = item.attributes
            attributes[.accessControl] = .data(try ItemAccessControl(protection: .whenUnlocked, flags: ItemAccessControl.Flag.userPresence).encoded())
            let reference = try #require(try store.add(.key, attributes: attributes, data: item.data, returning: .persistentReference).persistentReference)
            let message = Data("signed under presence".utf8)
            let algorithm = "algid:sign:ECDSA:message-X962:SHA256"
            #expect(throws: KeychainError(.interactionNotAllowed, "")) { _ = try store.keyOperation(.sign, reference: reference, algorithm: algorithm, input: message) }
            let wrong = ItemAuthentication(password: SecretBytes(Array("wrong".utf8)))
            #expect(throws: KeychainError(.authFailed, "")) {
                _ = try store.keyOperation(.sign, reference: reference, algorithm: algorithm, input: message, authentication: wrong)
            }
            let proof = ItemAuthentication(password: SecretBytes(Array("held password".utf8)))
            let signature = try store.keyOperation(.sign, reference: reference, algorithm: algorithm, input: message, authentication: proof)
            #expect(try ec.publicKey().isValidSignature(signature, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
            // The key found with the proof signs with it: the service's key keeps the query's authentication.
            let found = try #require(
                try store.find(ItemQuery(nil, persistentReference: reference, returning: [.reference, .attributes], authentication: proof)).first)
            let held = try #require(StoredKey(found, from: store, authentication: proof)?.key)
            let again = try held.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
            #expect(try ec.publicKey().isValidSignature(again, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
        }

        @Test("private keys sign and decrypt inside the service, for their own application only; bad requests are errSecParam")
        func privateKeyOperations() throws {
            let world = try ServiceWorld()
            let store = try KeychainStore(service: world.socket)
            func add(_ key: AsymmetricKey) throws -> Data {
                let item = try KeyItemAttributes(key, label: nil)
                return try #require(try store.add(.key, attributes: item.attributes, data: item.data, returning: .persistentReference).persistentReference)
            }
            let rsa = try AsymmetricKey.generateRSA(bits: 2048)
            let ec = try AsymmetricKey.generateEC(curve: .p256)
            let rsaReference = try add(rsa)
            let ecReference = try add(ec)
            let publicReference = try add(try rsa.publicKey())
            let message = Data("signed inside securityd".utf8)

            // Each signature verifies with the public half of the key stored under that reference.
            let pss = try store.keyOperation(.sign, reference: rsaReference, algorithm: "algid:sign:RSA:message-PSS:SHA256:SHA256:32", input: message)
            #expect(try rsa.publicKey().isValidSignature(pss, for: message, algorithm: .rsaPSS(.sha256, hashing: true)))
            let ecdsa = try store.keyOperation(.sign, reference: ecReference, algorithm: "algid:sign:ECDSA:message-X962:SHA256", input: message)
            #expect(try ec.publicKey().isValidSignature(ecdsa, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
            #expect(try !ec.publicKey().isValidSignature(ecdsa, for: message + [0], algorithm: .ecdsaX962(.sha256, hashing: true)))
            let ciphertext = try rsa.publicKey().encrypt(message, algorithm: .rsaOAEP(.sha256))
            #expect(try store.keyOperation(.decrypt, reference: rsaReference, algorithm: "algid:encrypt:RSA:OAEP:SHA256", input: ciphertext) == message)

            // Nothing the service answers holds a private key: a private key item's data is its public key's, with the
            // service's token ID; the StoredKey made from it signs through the service.
            for returning in [ReturnOptions.data, .reference, [.data, .attributes]] {
                let found = try #require(try store.find(ItemQuery(nil, persistentReference: rsaReference, returning: returning)).first)
                #expect(found.data == (try rsa.publicKey().externalRepresentation()))
                #expect(found.identityKeyData == nil)
                if returning.contains(.reference) {
                    #expect(found.attributes?[.tokenID] == .string(KeychainWire.heldKeyTokenID))
                    #expect(found.attributes?[.isExtractable] == .bool(false))
                    let held = try #require(StoredKey(found, from: store)?.key)
                    #expect(held.isHeldElsewhere && held.isPrivate)
                    #expect(throws: KeyError(.heldElsewhere, "")) { _ = try held.externalRepresentation() }
                    let signature = try held.signature(for: message, algorithm: .rsaPKCS1v15(.sha256, hashing: true))
                    #expect(try rsa.publicKey().isValidSignature(signature, for: message, algorithm: .rsaPKCS1v15(.sha256, hashing: true)))
                }
            }
            let publicFound = try #require(try store.find(ItemQuery(nil, persistentReference: publicReference, returning: .data)).first)
            #expect(publicFound.data == (try rsa.publicKey().externalRepresentation()) && publicFound.attributes == nil)

            // Bad requests: errSecParam, or not found for a reference that names nothing of the caller's.
            for (kind, reference, algorithm, input) in [
                (KeychainWire.KeyOperationKind.sign, publicReference, "algid:sign:RSA:message-PSS:SHA256:SHA256:32", message),
                (.sign, rsaReference, "algid:sign:RSA:no-such", message),
                (.sign, rsaReference, "algid:sign:ECDSA:message-X962:SHA256", message),
                (.sign, rsaReference, "algid:sign:RSA:digest-PKCS1v15:SHA256", message),  // not a digest's length
                (.decrypt, ecReference, "algid:encrypt:RSA:OAEP:SHA256", ciphertext),
                (.decrypt, rsaReference, "algid:encrypt:RSA:OAEP:SHA1", ciphertext),  // another padding: no plaintext
                (.decrypt, rsaReference, "algid:sign:RSA:message-PSS:SHA256:SHA256:32", ciphertext),
            ] {
                #expect(throws: KeychainError(.parameter, ""), "\(kind) \(algorithm)") {
                    _ = try store.keyOperation(kind, reference: reference, algorithm: algorithm, input: input)
                }
            }
            let password = try #require(
                try store.add(.genericPassword, attributes: [.account: .string("a")], data: Data("pw".utf8), returning: .persistentReference)
                    .persistentReference)
            #expect(throws: KeychainError(.parameter, "")) {
                _ = try store.keyOperation(.sign, reference: password, algorithm: "algid:sign:RSA:raw", input: Data(count: 256))
            }
            let deleted = try add(try AsymmetricKey.generateEC(curve: .p256))
            try store.delete(ItemQuery(nil, persistentReference: deleted))
            #expect(throws: KeychainError(.itemNotFound, "")) {
                _ = try store.keyOperation(.sign, reference: deleted, algorithm: "algid:sign:ECDSA:message-X962:SHA256", input: message)
            }

            // Another application, holding the reference, cannot use the key.
            func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
            let other = try world.application("other-app")
            #expect(try world.run(other, ["sign", hex(ecReference), "algid:sign:ECDSA:message-X962:SHA256", hex(message)]) == "notfound")
            // Granted the key's group by policy, the other application can.
            try world.writePolicy("shared.json", [.init(sha256: try ServiceWorld.sha256(other), accessGroups: store.accessGroups)])
            let answer = try world.run(other, ["sign", hex(ecReference), "algid:sign:ECDSA:message-X962:SHA256", hex(message)])
            #expect(answer.hasPrefix("signed "))

            // Keys generated in the service: the private key never comes out; it signs there.
            for (type, bits) in [(Int64(42), 2048), (73, 384)] {
                let generated = try store.generateKey(keyType: type, bits: bits, attributes: [.label: .string("made in securityd")], returning: .reference)
                #expect(generated.attributes?[.tokenID] == .string(KeychainWire.heldKeyTokenID))
                #expect(generated.attributes?[.label] == .string("made in securityd") && generated.attributes?[.keySizeInBits] == .number(Int64(bits)))
                let key = try #require(StoredKey(generated, from: store)?.key)
                #expect(key.isHeldElsewhere && key.sizeInBits == bits)
                let algorithm: SignatureAlgorithm = type == 42 ? .rsaPSS(.sha256, hashing: true) : .ecdsaX962(.sha384, hashing: true)
                #expect(try key.publicKey().isValidSignature(try key.signature(for: message, algorithm: algorithm), for: message, algorithm: algorithm))
            }
            for (type, bits) in [(Int64(42), 1000), (42, 8192), (73, 255), (17, 2048)] {
                #expect(throws: KeychainError(.parameter, ""), "\(type) \(bits)") {
                    _ = try store.generateKey(keyType: type, bits: bits, attributes: [:], returning: .reference)
                }
            }

            // An embedded keychain's caller holds its keys: no key operations there.
            let embedded = try KeychainStore(path: world.directory.path("embedded.db"), accessGroups: ["test"])
            #expect(throws: KeychainError(.unimplemented, "")) {
                _ = try embedded.keyOperation(.sign, reference: rsaReference, algorithm: "algid:sign:RSA:raw", input: message)
            }
            #expect(throws: KeychainError(.unimplemented, "")) { _ = try embedded.generateKey(keyType: 73, bits: 256, attributes: [:], returning: []) }
        }

        @Test("a held private key cannot be pulled out: its class, type and data cannot be updated (its label can); key data that decodes as a private key is withheld whatever its class says")
        func heldKeysStayHeld() throws {
            let world = try ServiceWorld()
            let store = try KeychainStore(service: world.socket)
            let key = try AsymmetricKey.generateEC(curve: .p256)
            let publicData = try key.publicKey().externalRepresentation()
            let item = try KeyItemAttributes(key, label: "held")
            #expect(item.data.count == 97)
            let reference = try #require(
                try store.add(.key, attributes: item.attributes, data: item.data, returning: .persistentReference).persistentReference)
            let query = ItemQuery(nil, persistentReference: reference)
            for (attributes, data) in [
                ([AttributeKey.keyClass: AttributeValue.number(0)], nil), ([.keyType: .number(42)], nil), ([:], Data(count: 97)),
                ([.keyClass: .string("0"), .label: .string("public now")], nil),
            ] as [(ItemAttributes, Data?)] {
                #expect(throws: KeychainError(.parameter, ""), "\(attributes)") { _ = try store.update(query, attributes: attributes, data: data) }
            }
            #expect(try store.update(query, attributes: [.label: .string("renamed")]) == 1)
            let found = try #require(try store.find(ItemQuery(nil, persistentReference: reference, returning: [.data, .attributes])).first)
            #expect(found.data == publicData && found.attributes?[.label] == .string("renamed"))

            // The same private key stored under a public key's class: its data is still the public key's.
            var disguised = item.attributes
            disguised[.keyClass] = .number(0)
            disguised[.label] = .string("disguised")
            let other = try #require(try store.add(.key, attributes: disguised, data: item.data, returning: .persistentReference).persistentReference)
            for returning in [ReturnOptions.data, [.data, .attributes]] {
                let back = try #require(try store.find(ItemQuery(nil, persistentReference: other, returning: returning)).first)
                #expect(back.data == publicData, "\(back.data?.count ?? 0) bytes came back")
            }
            let listed = try store.find(ItemQuery(.key, limit: .all, returning: .data))
            #expect(listed.count == 2 && listed.allSatisfy { $0.data == publicData })

            // Labelled as a key in the TPM (whose items pass unchanged: their data opens only in the TPM): a private
            // key's data is withheld all the same.
            var tpmLabelled = item.attributes
            tpmLabelled[.tokenID] = .string("com.apple.setoken")
            tpmLabelled[.label] = .string("tpm-labelled")
            let labelled = try #require(try store.add(.key, attributes: tpmLabelled, data: item.data, returning: .persistentReference).persistentReference)
            let back = try #require(try store.find(ItemQuery(nil, persistentReference: labelled, returning: [.data, .attributes])).first)
            #expect(back.data == publicData, "\(back.data?.count ?? 0) bytes came back")
        }

        @Test("an identity stored in the service comes back without its private key; its key signs through the service, also inside OpenSSL (a request openssl req -verify accepts)")
        func heldIdentity() throws {
            let world = try ServiceWorld()
            let store = try KeychainStore(service: world.socket)
            let ca = try OpenSSLCA()
            try ca.issue("root", subject: "/CN=Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
            try ca.issue("leaf", subject: "/CN=leaf.example", issuer: "root", extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:leaf.example"))
            let certificate = try Certificate(pemEncoded: String(decoding: try ca.directory.read("leaf.pem"), as: UTF8.self))
            let key = try AsymmetricKey(privateKeyFile: try ca.directory.read("leaf.key"))
            let keyItem = try KeyItemAttributes(key, label: nil)
            _ = try store.addIdentity(
                certificate: (certificate.keychainAttributes, certificate.derEncoded), privateKey: (keyItem.attributes, keyItem.data))

            let found = try #require(try store.find(ItemQuery(.identity, returning: .reference)).first)
            #expect(found.identityKeyData == nil && found.attributes?[.tokenID] == .string(KeychainWire.heldKeyTokenID))
            #expect(StoredIdentity(found) == nil, "without the service's store, a held key cannot be used")
            let identity = try #require(StoredIdentity(found, from: store))
            #expect(identity.privateKey.isHeldElsewhere)
            let message = Data("identity".utf8)
            let signature = try identity.privateKey.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
            #expect(try certificate.publicKey().isValidSignature(signature, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
            let request = try CertificateSigningRequest(subject: [.init("CN", "renewed.example")], privateKey: identity.privateKey)
            try ca.directory.write("renewed.pem", request.pemEncoded)
            let verify = try OpenSSLCLI.run(["req", "-in", "renewed.pem", "-verify", "-noout"], in: ca.directory.url)
            #expect(verify.status == 0 && verify.stderr.contains("verify OK"), "\(verify.stderr)")
        }
    }
}
