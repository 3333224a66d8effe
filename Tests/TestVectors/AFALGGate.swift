import Foundation
import KernelBackend

/// Decides whether tests that need AF_ALG run. On a machine without it they are skipped with the reason;
/// in the VM (`SECURITYSERVICES_REQUIRE_AFALG=1`) they always run, so a missing AF_ALG fails them instead
/// of silently skipping.
public enum AFALGGate {
    public static let required = ProcessInfo.processInfo.environment["SECURITYSERVICES_REQUIRE_AFALG"] == "1"
    public static let available = KernelBackend.isAvailable
    public static let shouldRun = available || required
    public static var skipReason: String {
        "skipped: \(KernelBackend.unavailableReason ?? "AF_ALG unavailable"); the AF_ALG suite runs in the VM (make test)"
    }
}
