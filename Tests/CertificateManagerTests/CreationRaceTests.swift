import CertificateManager
import Certificates
import Foundation
import Keychain
import Synchronization
import TestVectors
import Testing

/// Each contender's result, kept by index.
private final class Outcomes: Sendable {
    private let results = Mutex<[Int: CertificateManagerError?]>([:])
    func record(_ index: Int, _ error: CertificateManagerError?) { results.withLock { $0[index] = error } }
    var all: [Int: CertificateManagerError?] { results.withLock { $0 } }
}

/// Runs `body(i)` for every contender on a thread of its own, all released at once; each result is the error
/// the call threw (`nil`: it succeeded).
private func race(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [CertificateManagerError?] {
    let outcomes = Outcomes()
    let gate = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            gate.wait()
            do {
                try body(index)
                outcomes.record(index, nil)
            } catch {
                outcomes.record(
                    index, error as? CertificateManagerError ?? CertificateManagerError(.keychain, "\(error)"))
            }
            done.leave()
        }.start()
    }
    for _ in 0..<count { gate.signal() }
    done.wait()
    let all = outcomes.all
    return (0..<count).map { all[$0] ?? CertificateManagerError(.keychain, "no result") }
}

@Suite("Managers racing to create the store and the identity")
struct CreationRaceTests {
    static let contenders = 8

    /// Contender i's two CAs: `root<i>` and `int<i>` under it.
    func authorities(_ world: ManagerWorld) throws -> [[Certificate]] {
        try (0..<Self.contenders).map { index in
            let root = try world.root("root\(index)", subject: "/CN=Race Root \(index)")
            try world.ca.issue(
                "int\(index)", subject: "/CN=Race Issuing CA \(index)", issuer: "root\(index)",
                extensions: OpenSSLCA.caExtensions(pathLength: 0))
            return [root, try world.certificate("int\(index)")]
        }
    }

    @Test("concurrent setCertificates, each on a connection of its own: one wins, the store is exactly its CAs")
    func storeRace() throws {
        let world = try ManagerWorld()
        let sets = try authorities(world)
        // Open the file first: the race is over the store, not over creating the keychain.
        let managers = try (0..<Self.contenders).map { _ in CertificateManager(keychain: try world.keychain()) }
        for round in 0..<3 {
            let results = race(Self.contenders) { index in try managers[index].setCertificates(sets[index]) }
            let winners = results.indices.filter { results[$0] == nil }
            #expect(winners.count == 1, "round \(round): \(results)")
            for case let error? in results {
                #expect(error == CertificateManagerError(.certificateStoreImmutable, ""), "round \(round): \(error)")
            }
            let stored = try managers[0].certificates
            #expect(stored.count == 2)
            if let winner = winners.first { #expect(Set(stored) == Set(sets[winner]), "round \(round)") }
            #expect(try managers[1].deleteCertStore())
        }
    }

    @Test("concurrent setCertificates through one shared keychain store")
    func sharedStoreRace() throws {
        let world = try ManagerWorld()
        let sets = try authorities(world)
        let keychain = try world.keychain()
        let results = race(Self.contenders) { index in
            try CertificateManager(keychain: keychain).setCertificates(sets[index])
        }
        let winners = results.indices.filter { results[$0] == nil }
        #expect(winners.count == 1, "\(results)")
        if let winner = winners.first {
            #expect(Set(try CertificateManager(keychain: keychain).certificates) == Set(sets[winner]))
        }
    }

    @Test("concurrent setClientIdentity: one identity, with its own key and chain")
    func identityRace() throws {
        let world = try ManagerWorld()
        let sets = try authorities(world)
        let identities = try (0..<Self.contenders).map { index in
            let leaf = try world.leaf("leaf\(index)", commonName: "client\(index).example", issuer: "int\(index)")
            let key = try AsymmetricKey(privateKeyFile: world.ca.directory.read("leaf\(index).key"))
            return ClientIdentity(certificate: leaf, privateKey: key)
        }
        let managers = try (0..<Self.contenders).map { _ in CertificateManager(keychain: try world.keychain()) }
        for round in 0..<3 {
            let results = race(Self.contenders) { index in
                try managers[index].setClientIdentity(identities[index], certificateChain: [sets[index][1]])
            }
            let winners = results.indices.filter { results[$0] == nil }
            #expect(winners.count == 1, "round \(round): \(results)")
            for case let error? in results {
                #expect(error == CertificateManagerError(.clientIdentityExists, ""), "round \(round): \(error)")
            }
            let keychain = try world.keychain()
            for itemClass in [ItemClass.certificate, .key] {
                let items = try keychain.find(
                    ItemQuery(
                        itemClass, matching: [.label: .string(CertificateManager.clientIdentityLabel)], limit: .all))
                #expect(items.count == 1, "round \(round): \(itemClass)")
            }
            if let winner = winners.first {
                let stored = try #require(try managers[0].clientIdentity)
                #expect(stored.certificate == identities[winner].certificate)
                #expect(try stored.privateKey.publicKeySHA1() == identities[winner].certificate.publicKeyHash)
                #expect(
                    try managers[0].clientIdentityCertificateChain == [identities[winner].certificate, sets[winner][1]])
            }
            #expect(try managers[1].deleteClientIdentity())
        }
    }
}
