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
