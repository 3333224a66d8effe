public import Foundation

// Core Foundation's names for the Foundation classes. On Apple platforms CF types and Foundation classes are
// toll-free bridged; on Linux there is no Core Foundation in the public SDK, so the Apple-compatible surface
// names the Foundation classes directly. Code written for Apple platforms (`query as CFDictionary`,
// `kSecClass as String`, `result as? Data`) then compiles unmodified.

public typealias CFTypeRef = AnyObject
public typealias CFDictionary = NSDictionary
public typealias CFMutableDictionary = NSMutableDictionary
public typealias CFArray = NSArray
public typealias CFString = NSString
public typealias CFData = NSData
public typealias CFNumber = NSNumber
public typealias CFBoolean = NSNumber
public typealias CFDate = NSDate
public typealias CFError = NSError
public typealias CFIndex = Int

/// Apple's `OSStatus`: 0 is success, negative values are the `errSec…` codes.
public typealias OSStatus = Int32

/// Implicitly unwrapped, as on Apple platforms (`kCFBooleanTrue!` and `kCFBooleanTrue as Any` both compile).
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

extension NSData {
    /// The bytes as a `Data`, in one copy. In swift-corelibs-foundation `nsData as Data` walks NSData's byte
    /// sequence one element at a time (15–20 µs for 256 bytes, measured here: a third of an RSA verification),
    /// so the Security module never converts a CFData that way.
    var copiedBytes: Data { length == 0 ? Data() : Data(bytes: bytes, count: length) }

    /// A new NSData of `data`'s bytes, in one copy: `NSData(data:)` goes through the bridge (a tenth of the Swift
    /// time of `SecKeyCreateSignature` in `perf`).
    static func copying(_ data: Data) -> NSData {
        data.withUnsafeBytes { NSData(bytes: $0.baseAddress, length: $0.count) }
    }
}

/// `value as? Data` for a dictionary value, without the slow bridge when the value is an NSData (a CFData an
/// Apple client put in its dictionary); a Swift `Data` is taken as it is.
func dataValue(_ value: Any) -> Data? {
    if type(of: value) is NSData.Type, let object = value as? NSData { return object.copiedBytes }
    return value as? Data
}

/// `value as? String` for a dictionary value or a CFString argument, an NSString or a Swift String alike.
func stringValue(_ value: Any?) -> String? {
    value as? String ?? (value as? NSString).map { String($0) }
}
