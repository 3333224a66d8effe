// An application of the keychain service tests (KeychainServiceTests): it asks securityd for the keychain calls
// and prints what it got, one line. Copies of this binary, modified or not, are the "different applications".
//
//   keychain-service-client SOCKET hello                      → the granted groups, comma-separated
//   keychain-service-client SOCKET add ACCOUNT SECRET [GROUP] → "added REF" (the persistent reference, hex)
//   keychain-service-client SOCKET add-acl ACCOUNT SECRET GROUP SHA256[,SHA256…]
//                                                             → "added": an access control list (ItemAccess.standard)
//                                                               trusting those executables, owned by this one
//   keychain-service-client SOCKET find ACCOUNT               → "found SECRET" or "notfound"
//   keychain-service-client SOCKET delete ACCOUNT             → "deleted" or "notfound"
//   keychain-service-client SOCKET lock-status | lock | unlock PASSWORD | set-password PASSWORD
//                           | change-password OLD NEW         → the keychain's state after: "no password",
//                                                               "locked" or "unlocked"
//   keychain-service-client SOCKET find-ref HEX               → "found SECRET" or "notfound"
//   keychain-service-client SOCKET sign HEXREF ALGORITHM HEX → "signed HEX" (a key operation in the service)
//                                                               or "notfound"
//   keychain-service-client SOCKET sleep MILLISECONDS         → "slept", having connected to nothing (a granted program
//                                                               for the attack tests to run)
//   keychain-service-client SOCKET find-loop ACCOUNT COUNT    → "N finds/s": COUNT finds of ACCOUNT on one connection
//   keychain-service-client SOCKET default-add ACCOUNT SECRET → through KeychainDefaults.store() (SOCKET unused:
//                                                               the environment decides): "service GROUPS"
//                                                               or "embedded PATH", then "added"
//
// A keychain error prints "error CODE" and exits 1.
import KeychainWire
import Foundation
import Keychain

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: keychain-service-client SOCKET COMMAND ...\n".utf8))
    exit(2)
}

func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

func bytes(_ hex: String) -> Data {
    var data = Data()
    var index = hex.startIndex
    while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
        let byte = UInt8(hex[index..<next], radix: 16)
    {
        data.append(byte)
        index = next
    }
    return data
}

func found(_ response: KeychainWire.Response) -> String {
    guard case .items(let items) = response, let data = items.first?.data else { return "notfound" }
    return "found " + String(decoding: data, as: UTF8.self)
}

if arguments[2] == "sleep", arguments.count == 4, let milliseconds = UInt32(arguments[3]) {
    usleep(milliseconds * 1000)
    print("slept")
    exit(0)
}

do {
    if arguments[2] == "default-add", arguments.count == 5 {
        // The default keychain, as the Security module gets it: the environment decides the mode.
        let store = try KeychainDefaults.store()
        print(store.remote != nil ? "service " + store.accessGroups.joined(separator: ",") : "embedded " + store.path)
        try store.add(.genericPassword, attributes: [.account: .string(arguments[3]), .service: .string("service-tests")], data: Data(arguments[4].utf8))
        print("added")
        exit(0)
    }
    let client = try KeychainServiceClient(socketPath: arguments[1])
    switch arguments[2] {
    case "hello":
        guard case .groups(let groups) = try client.call(.hello(requesting: [])) else { exit(3) }
        print(groups.joined(separator: ","))
    case "add" where arguments.count >= 5:
        var attributes: ItemAttributes = [.account: .string(arguments[3]), .service: .string("service-tests")]
        if arguments.count >= 6 { attributes[.accessGroup] = .string(arguments[5]) }
        let response = try client.call(
            .add(.genericPassword, attributes: attributes, data: Data(arguments[4].utf8), returning: .persistentReference))
        guard case .item(let item) = response, let reference = item.persistentReference else { exit(3) }
        print("added " + hex(reference))
    case "add-acl" where arguments.count == 7:
        let trusted = arguments[6].split(separator: ",").map { ItemAccess.Application(path: "", sha256: String($0)) }
        let access = ItemAccess.standard(description: "service-tests", trusted: trusted, owner: try ItemAccess.Application.current)
        let attributes: ItemAttributes = [
            .account: .string(arguments[3]), .service: .string("service-tests"), .accessGroup: .string(arguments[5]),
            .access: .data(try access.encoded()),
        ]
        guard case .item = try client.call(.add(.genericPassword, attributes: attributes, data: Data(arguments[4].utf8), returning: []))
        else { exit(3) }
        print("added")
    case "delete" where arguments.count == 4:
        let query = ItemQuery(.genericPassword, matching: [.account: .string(arguments[3]), .service: .string("service-tests")])
        guard case .count = try client.call(.delete(query)) else { exit(3) }
        print("deleted")
    case "lock-status", "lock", "unlock", "set-password", "change-password":
        let request: KeychainWire.LockRequest? =
            switch (arguments[2], arguments.count) {
            case ("lock-status", 3): .status
            case ("lock", 3): .lock
            case ("unlock", 4): .unlock(Data(arguments[3].utf8))
            case ("set-password", 4): .setPassword(Data(arguments[3].utf8))
            case ("change-password", 5): .changePassword(old: Data(arguments[3].utf8), new: Data(arguments[4].utf8))
            default: nil
            }
        guard let request, case .lockStatus(let passwordLocked, let locked) = try client.call(.keychainLock(request)) else { exit(3) }
        print(!passwordLocked ? "no password" : locked ? "locked" : "unlocked")
    case "find" where arguments.count == 4:
        let query = ItemQuery(
            .genericPassword, matching: [.account: .string(arguments[3]), .service: .string("service-tests")], returning: .data)
        print(found(try client.call(.find(query))))
    case "find-loop" where arguments.count == 5:
        let query = ItemQuery(
            .genericPassword, matching: [.account: .string(arguments[3]), .service: .string("service-tests")], returning: .data)
        let count = Int(arguments[4]) ?? 1
        let start = ContinuousClock.now
        for _ in 0..<count { _ = try client.call(.find(query)) }
        let elapsed = ContinuousClock.now - start
        print("\(Int(Double(count) / (Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds)))) finds/s")
    case "find-ref" where arguments.count == 4:
        print(found(try client.call(.find(ItemQuery(nil, persistentReference: bytes(arguments[3]), returning: .data)))))
    case "sign" where arguments.count == 6:
        let request = KeychainWire.Request.keyOperation(.sign, reference: bytes(arguments[3]), algorithm: arguments[4], input: bytes(arguments[5]))
        guard case .bytes(let signature) = try client.call(request) else { exit(3) }
        print("signed " + hex(signature))
    default:
        FileHandle.standardError.write(Data("unknown command\n".utf8))
        exit(2)
    }
} catch let error as KeychainError {
    if error.code == .itemNotFound {
        print("notfound")
    } else {
        print("error \(error.code)")
        exit(1)
    }
} catch {
    print("error \(error)")
    exit(1)
}
