import Foundation
import Entropy

/// Apple's random-number generator reference; only the default exists.
public typealias SecRandomRef = OpaquePointer

/// The default generator (`nil`, as on Apple platforms).
// nonisolated(unsafe): an immutable nil pointer.
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef? = nil

/// Fills `bytes` with `count` cryptographically secure random bytes (`getrandom(2)`).
/// - Returns: `errSecSuccess`, or `errSecParam` for a generator other than the default or a NULL buffer with a
///   non-zero count, or `errSecInternalComponent` when the kernel's generator fails.
@discardableResult
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer?) -> Int32 {
    guard rnd == nil, count >= 0 else { return errSecParam }
    guard count > 0 else { return errSecSuccess }
    guard let bytes else { return errSecParam }
    do {
        try EntropySource.fill(UnsafeMutableRawBufferPointer(start: bytes, count: count))
        return errSecSuccess
    } catch {
        return errSecInternalComponent
    }
}
