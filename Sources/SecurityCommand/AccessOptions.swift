import ArgumentParser
import Foundation
import Security

/// macOS's `-T` and `-A` of the add commands: the applications the new item's access control list trusts.
struct AccessOptions: ParsableArguments {
    @Option(
        name: .customShort("T"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "An application that may use the item without being refused (repeatable; an empty path: none). The item's access control list then trusts these alone; security itself may change the list.",
            valueName: "appPath"))
    var trustedApplications: [String] = []

    @Flag(name: .customShort("A"), help: "Allow any application to use the item: no access control list (also what an add without -T makes here).")
    var anyApplication = false

    func validate() throws {
        if anyApplication, !trustedApplications.isEmpty { throw ValidationError("-A and -T exclude each other.") }
    }

    /// Apple's standard list trusting the -T applications (nil without -T).
    func access(description: String) throws -> SecAccess? {
        guard !trustedApplications.isEmpty else { return nil }
        var applications: [SecTrustedApplication] = []
        for path in trustedApplications where !path.isEmpty {
            var application: SecTrustedApplication?
            let status = path.withCString { SecTrustedApplicationCreateFromPath($0, &application) }
            guard status == errSecSuccess, let application else { throw Failure("SecTrustedApplicationCreateFromPath (\(path))", status) }
            applications.append(application)
        }
        var access: SecAccess?
        let status = SecAccessCreate(description as CFString, applications as CFArray, &access)
        guard status == errSecSuccess, let access else { throw Failure("SecAccessCreate", status) }
        return access
    }
}
