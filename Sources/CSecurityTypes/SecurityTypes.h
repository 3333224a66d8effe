#ifndef SECURITYSERVICES_CSECURITYTYPES_H
#define SECURITYSERVICES_CSECURITYTYPES_H
/* The types of Apple's Security headers that must come from C: enums used in the parameters of C function types
   (a Swift enum cannot be a parameter of a @convention(c) function), declared as CF_ENUM and CF_OPTIONS declare
   them, so Swift imports them with Apple's names (SecKeychainEvent.lockEvent, SecKeychainEventMask.lockEventMask).
   The Security module re-exports them. */
#include <stdint.h>
#include <sys/types.h>

#define SECURITYSERVICES_ENUM(_type, _name) \
    enum __attribute__((enum_extensibility(open))) _name : _type _name; \
    enum __attribute__((enum_extensibility(open))) _name : _type
#define SECURITYSERVICES_OPTIONS(_type, _name) \
    enum __attribute__((flag_enum, enum_extensibility(open))) _name : _type _name; \
    enum __attribute__((flag_enum, enum_extensibility(open))) _name : _type

/* SecKeychain.h: what happened to a keychain, for SecKeychainAddCallback. */
typedef SECURITYSERVICES_ENUM(uint32_t, SecKeychainEvent) {
    kSecLockEvent = 1,
    kSecUnlockEvent = 2,
    kSecAddEvent = 3,
    kSecDeleteEvent = 4,
    kSecUpdateEvent = 5,
    kSecPasswordChangedEvent = 6,
    kSecDefaultChangedEvent = 9,
    kSecDataAccessEvent = 10,
    kSecKeychainListChangedEvent = 11,
    kSecTrustSettingsChangedEvent = 12
};

typedef SECURITYSERVICES_OPTIONS(uint32_t, SecKeychainEventMask) {
    kSecLockEventMask = 1 << kSecLockEvent,
    kSecUnlockEventMask = 1 << kSecUnlockEvent,
    kSecAddEventMask = 1 << kSecAddEvent,
    kSecDeleteEventMask = 1 << kSecDeleteEvent,
    kSecUpdateEventMask = 1 << kSecUpdateEvent,
    kSecPasswordChangedEventMask = 1 << kSecPasswordChangedEvent,
    kSecDefaultChangedEventMask = 1 << kSecDefaultChangedEvent,
    kSecDataAccessEventMask = 1 << kSecDataAccessEvent,
    kSecKeychainListChangedMask = 1 << kSecKeychainListChangedEvent,
    kSecTrustSettingsChangedEventMask = 1 << kSecTrustSettingsChangedEvent,
    kSecEveryEventMask = 0xffffffff
};

/* What a keychain callback is told (Apple's SecKeychainCallbackInfo). The item and keychain are Swift objects
   (SecKeychainItem, SecKeychain), which C cannot name: the Security module gives the struct Apple's `item` and
   `keychain` properties (Unmanaged references) over these two pointers. */
typedef struct SecKeychainCallbackInfo {
    uint32_t version;
    void *_Nonnull opaqueItem;
    void *_Nonnull opaqueKeychain;
    pid_t pid;
} SecKeychainCallbackInfo;
#endif
