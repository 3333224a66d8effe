import Foundation
import KernelBackend
public import Testing

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

extension Trait where Self == ConditionTrait {
    /// Runs on the host only, not in the AF_ALG VM: for suites that never reach the dispatcher (they call OpenSSL
    /// directly) and are heavy under the VM's emulated CPU — passes over whole vector folders, hundreds of
    /// `openssl` processes. The host suite runs them on every `make test`; the VM is for the kernel backend.
    public static var hostOnly: Self {
        .disabled(
            if: AFALGGate.required,
            "host only: a software-only sweep, run by the host suite; the AF_ALG VM tests the kernel backend")
    }
}
