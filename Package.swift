// swift-tools-version:6.1
//
// SecurityServices: Apple's iPhone-OS Security services rebuilt in Swift for Linux.
// The layout tells the architecture (see docs/architecture.md):
//   Backends/   one folder per crypto backend and per C library module
//   Sources/    the contract, the dispatcher, the services, the Apple-compatible modules
//   Tests/      one test target per module, plus the shared vector loader
//   Benchmarks/ the backend-comparison benchmark
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "SecurityServices",
    products: [
        .library(name: "SecurityBase", targets: ["SecurityBase"]),
        .library(name: "CryptoContract", targets: ["CryptoContract"]),
        .library(name: "CryptoDispatcher", targets: ["CryptoDispatcher"]),
        .library(name: "Entropy", targets: ["Entropy"]),
        .library(name: "Cryptography", targets: ["Cryptography"]),
        // Apple's C API: `import CommonCrypto` in Swift, `#include <CommonCrypto/…>` and -lCommonCrypto in C.
        .library(name: "CommonCrypto", type: .dynamic, targets: ["CommonCrypto", "CommonCryptoAdapter"]),
        // The idiomatic keychain, and Apple's `Security` API over it (`import Security`).
        .library(name: "Keychain", targets: ["Keychain"]),
        .library(name: "KeychainModel", targets: ["KeychainModel"]),
        .library(name: "KeychainWire", targets: ["KeychainWire"]),
        // Apple's LocalAuthentication: LAContext, the proof of the user for access-controlled keychain items.
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .library(name: "Security", targets: ["Security"]),
        .library(name: "Certificates", targets: ["Certificates"]),
        .library(name: "HardwareKeys", targets: ["HardwareKeys"]),
        .library(name: "Trust", targets: ["Trust"]),
        .library(name: "CertificateManager", targets: ["CertificateManager"]),
        .library(name: "TLS", targets: ["TLS"]),
        .executable(name: "secbench", targets: ["secbench"]),
        // macOS security(1) for the keychain, certificates and identities, over the Security API.
        .executable(name: "security", targets: ["SecurityCommand"]),
        // The keychain service: keychains owned by a daemon that knows who is calling.
        .executable(name: "securityd", targets: ["securityd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0")
    ],
    targets: [
        // C libraries, each a system-library module with its Debian provider.
        .systemLibrary(
            name: "COpenSSL", path: "Backends/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        // The C adapters over OpenSSL the Swift code calls (stacks, parameter builders, PKCS#7 and OCSP plumbing),
        // compiled once here instead of inlined into every module that imports OpenSSL.
        .target(name: "COpenSSLShims", dependencies: ["COpenSSL"], path: "Backends/COpenSSLShims"),
        .systemLibrary(
            name: "CKcapi", path: "Backends/CKcapi", pkgConfig: "libkcapi",
            providers: [.apt(["libkcapi-dev"])]),
        // MD2 (RFC 1319), which OpenSSL 3 lacks: shared by the software backend and CommonCrypto.
        .target(name: "CMD2", path: "Backends/CMD2"),
        .systemLibrary(
            name: "CSQLite", path: "Backends/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // The public suffix list (wildcard hostname rules).
        .systemLibrary(
            name: "CPSL", path: "Backends/CPSL", pkgConfig: "libpsl",
            providers: [.apt(["libpsl-dev"])]),
        // p11-kit (Debian libp11-kit-dev): the PKCS#11 modules the system has configured, and the PKCS#11 header.
        .systemLibrary(
            name: "CP11Kit", path: "Backends/CP11Kit", pkgConfig: "p11-kit-1",
            providers: [.apt(["libp11-kit-dev"])]),
        // PKCS#11 tokens: the calls that list them, log in, find objects, sign, decrypt, agree and make keys, in C.
        .target(name: "CPKCS11", dependencies: ["CP11Kit"], path: "Backends/CPKCS11"),
        // A TPM 2.0 through the TSS2 ESAPI (Debian libtss2-dev): the few calls that make, sign and agree with P-256
        // keys held in it, in C, where the TSS2 structures and unions are at home.
        .target(
            name: "CTPM", path: "Backends/CTPM",
            linkerSettings: [.linkedLibrary("tss2-esys"), .linkedLibrary("tss2-tctildr"), .linkedLibrary("tss2-mu"), .linkedLibrary("tss2-rc")]),

        // The contract every backend implements: algorithm kinds, the backend protocol, errors.
        // The base every layer may import: the errors' one skeleton (CodedError), SecretBytes, constant-time compare.
        .target(name: "SecurityBase", path: "Sources/SecurityBase", swiftSettings: strict),
        .target(name: "CryptoContract", dependencies: ["SecurityBase"], path: "Sources/CryptoContract", swiftSettings: strict),
        // Whole-file writes that survive a crash (temporary file, fsync, rename or link, directory fsync).
        .target(name: "DurableFiles", dependencies: ["SecurityBase"], path: "Sources/DurableFiles", swiftSettings: strict),

        // Backends.
        .target(
            name: "SoftwareBackend", dependencies: ["SecurityBase", "CryptoContract", "COpenSSL", "COpenSSLShims", "CMD2"],
            path: "Backends/SoftwareBackend", swiftSettings: strict),
        .target(
            name: "KernelBackend", dependencies: ["SecurityBase", "CryptoContract", "CKcapi"],
            path: "Backends/KernelBackend", swiftSettings: strict),

        // Routing between the backends.
        .target(name: "CDispatcherThreadState", path: "Sources/CDispatcherThreadState"),
        .target(
            name: "CryptoDispatcher",
            dependencies: ["SecurityBase", "CDispatcherThreadState", "CryptoContract", "DurableFiles", "SoftwareBackend", "KernelBackend"],
            path: "Sources/CryptoDispatcher", swiftSettings: strict),

        // Services.
        .systemLibrary(name: "CGetrandom", path: "Sources/CGetrandom"),
        .target(name: "Entropy", dependencies: ["SecurityBase", "CGetrandom"], path: "Sources/Entropy", swiftSettings: strict),

        // The idiomatic Swift crypto API over the dispatcher.
        .target(
            name: "Cryptography", dependencies: ["SecurityBase", "COpenSSL", "CryptoContract", "CryptoDispatcher", "Entropy"],
            path: "Sources/Cryptography", swiftSettings: strict),

        // Apple-compatible CommonCrypto: the C headers (and the state-in-caller-memory digest and HMAC
        // contexts, in C), and the Swift adapter that gives the other C symbols their implementation.
        .target(name: "CommonCrypto", dependencies: ["COpenSSL", "CMD2"], path: "Sources/CommonCrypto"),
        .target(
            name: "CommonCryptoAdapter",
            dependencies: ["SecurityBase", "CommonCrypto", "CryptoContract", "CryptoDispatcher", "Cryptography", "Entropy"],
            path: "Sources/CommonCryptoAdapter", swiftSettings: strict),

        // The keychain's vocabulary: item classes, attributes, queries, items, access control, errors.
        .target(name: "KeychainModel", dependencies: ["SecurityBase"], path: "Sources/KeychainModel", swiftSettings: strict),
        // The keychain service's wire, spoken by the remote keychain and by securityd.
        .target(name: "KeychainWire", dependencies: ["SecurityBase", "KeychainModel"], path: "Sources/KeychainWire", swiftSettings: strict),
        // The keychain store: embedded (SQLite through a small wrapper, secrets encrypted at rest) or remote (securityd).
        .target(
            name: "Keychain",
            dependencies: [
                "SecurityBase", "KeychainModel", "KeychainWire", "CSQLite", "Cryptography", "CryptoContract", "CryptoDispatcher", "DurableFiles",
                "Entropy",
            ],
            path: "Sources/Keychain", swiftSettings: strict),

        .systemLibrary(name: "CPeerCredentials", path: "Sources/CPeerCredentials"),
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        // sd-bus (libsystemd): the Secret Service on the session bus.
        .systemLibrary(name: "CSDBus", path: "Sources/CSDBus", pkgConfig: "libsystemd"),
        // The keychain service: securityd's keychains, callers identified from the kernel, access groups by policy.
        .target(
            name: "KeychainService",
            dependencies: [
                "SecurityBase", "CPeerCredentials", "CEpoll", "KeychainModel", "KeychainWire", "Keychain", "KeychainItems", "Certificates",
                "CryptoDispatcher", "HardwareKeys", "CSDBus", "COpenSSL",
            ],
            path: "Sources/KeychainService", swiftSettings: strict),
        .executableTarget(
            name: "securityd",
            dependencies: ["KeychainService", "Keychain", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/securityd", swiftSettings: strict),

        // Certificates and asymmetric keys (X.509, RSA, EC, PKCS#12) over OpenSSL: the idiomatic Swift API.
        .target(
            name: "Certificates", dependencies: ["SecurityBase", "COpenSSL", "COpenSSLShims"], path: "Sources/Certificates",
            swiftSettings: strict),

        // The PKI services' HTTP (OCSP, CRLs, caIssuers, SCEP): one injectable async protocol, a socket default.
        .target(name: "NetworkFetch", dependencies: ["SecurityBase", "CEpoll"], path: "Sources/NetworkFetch", swiftSettings: strict),

        // Trust evaluation: our own bounded path builder, each candidate path validated by OpenSSL, and hostnames.
        .target(
            name: "Trust",
            dependencies: ["SecurityBase", "Certificates", "COpenSSL", "COpenSSLShims", "CPSL", "DurableFiles", "NetworkFetch"],
            path: "Sources/Trust",
            swiftSettings: strict),

        // How certificates, keys and identities are stored as keychain items (the attributes Apple derives):
        // one mapping, used by the Apple adapter and the certificate manager alike.
        .target(
            name: "KeychainItems", dependencies: ["Keychain", "KeychainWire", "Certificates", "HardwareKeys"], path: "Sources/KeychainItems",
            swiftSettings: strict),

        // Apple's LocalAuthentication: LAContext carries the proof of the user (a keychain's password) into
        // queries for access-controlled items.
        .target(
            name: "LocalAuthentication", dependencies: ["SecurityBase", "Keychain"], path: "Sources/LocalAuthentication",
            swiftSettings: strict),

        // The application's one object for trust: a private trust store, a client identity, server validation.
        .target(
            name: "CertificateManager",
            dependencies: [
                "SecurityBase", "Certificates", "Trust", "Keychain", "KeychainItems", "NetworkFetch", "COpenSSL", "TLS",
                "HardwareKeys",
            ],
            path: "Sources/CertificateManager", swiftSettings: strict),

        // Keys held in hardware: the TPM standing in for Apple's Secure Enclave, PKCS#11 tokens for smart cards.
        .target(
            name: "HardwareKeys", dependencies: ["SecurityBase", "Certificates", "CTPM", "CPKCS11"], path: "Sources/HardwareKeys",
            swiftSettings: strict),

        // TLS clients over libssl with this package's trust evaluator judging the server.
        .target(
            name: "TLS", dependencies: ["SecurityBase", "COpenSSL", "COpenSSLShims", "Certificates", "NetworkFetch", "Trust"], path: "Sources/TLS",
            swiftSettings: strict),

        // The C enums of Apple's Security headers that C function types take (SecKeychainEvent): from C, so Swift
        // imports them with Apple's names; the Security module re-exports them.
        .systemLibrary(name: "CSecurityTypes", path: "Sources/CSecurityTypes"),
        // Apple-compatible Security: CF names, kSec* constants, OSStatus codes, SecItem*, SecRandom,
        // SecCertificate, SecKey, SecIdentity.
        .target(
            name: "Security",
            dependencies: [
                "SecurityBase", "CSecurityTypes", "Keychain", "KeychainItems", "Entropy", "Certificates", "HardwareKeys", "NetworkFetch", "Trust",
                "TLS",
            ],
            path: "Sources/Security",
            swiftSettings: strict),

        // The `security` command: macOS security(1)'s keychain subcommands, written over the Security API.
        .executableTarget(
            name: "SecurityCommand",
            dependencies: [
                "SecurityBase", "Security", "LocalAuthentication", "Keychain", "Certificates", "HardwareKeys", "Trust", "CertificateManager",
                "TLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/SecurityCommand", swiftSettings: strict),

        // The benchmark.
        .target(name: "CBaselines", dependencies: ["COpenSSL", "CKcapi"], path: "Benchmarks/CBaselines"),
        .executableTarget(
            name: "secbench",
            dependencies: [
                "SecurityBase", "CryptoContract", "SoftwareBackend", "KernelBackend", "CryptoDispatcher", "CBaselines", "Keychain",
                "KeychainService", "Security", "Certificates", "HardwareKeys", "Trust", "TLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/secbench", swiftSettings: strict),

        // Tests.
        .target(
            name: "TestVectors",
            dependencies: ["Certificates", "CryptoContract", "HardwareKeys", "KernelBackend", "Keychain", "KeychainService", "NetworkFetch", "Trust"],
            path: "Tests/TestVectors",
            swiftSettings: strict),
        .testTarget(
            name: "SoftwareBackendTests", dependencies: ["CryptoContract", "SoftwareBackend", "TestVectors"],
            path: "Tests/SoftwareBackendTests", swiftSettings: strict),
        .testTarget(
            name: "KernelBackendTests", dependencies: ["CryptoContract", "KernelBackend", "SoftwareBackend", "TestVectors"],
            path: "Tests/KernelBackendTests", swiftSettings: strict),
        .testTarget(
            name: "CryptoDispatcherTests",
            dependencies: ["CryptoContract", "CryptoDispatcher", "SoftwareBackend", "KernelBackend", "TestVectors"],
            path: "Tests/CryptoDispatcherTests", swiftSettings: strict),
        .testTarget(
            name: "NetworkFetchTests", dependencies: ["NetworkFetch", "TestVectors"], path: "Tests/NetworkFetchTests",
            swiftSettings: strict),
        .testTarget(
            name: "TLSTests", dependencies: ["TLS", "Certificates", "Trust", "Security", "HardwareKeys", "SecurityBase", "TestVectors"], path: "Tests/TLSTests",
            swiftSettings: strict),
        // Every module's imports against its declared dependencies and the layers (docs/architecture.md).
        .testTarget(name: "ArchitectureTests", path: "Tests/ArchitectureTests", swiftSettings: strict),
        .testTarget(name: "DurableFilesTests", dependencies: ["DurableFiles"], path: "Tests/DurableFilesTests", swiftSettings: strict),
        .testTarget(name: "EntropyTests", dependencies: ["Entropy"], path: "Tests/EntropyTests", swiftSettings: strict),
        .testTarget(
            name: "KeychainTests", dependencies: ["SecurityBase", "Keychain", "Cryptography", "CryptoContract", "TestVectors"], path: "Tests/KeychainTests",
            exclude: ["Faults"], swiftSettings: strict),
        .testTarget(
            name: "CertificatesTests", dependencies: ["Certificates", "Security", "Keychain", "TestVectors"],
            path: "Tests/CertificatesTests", swiftSettings: strict),
        .testTarget(
            name: "TrustTests", dependencies: ["Trust", "Certificates", "NetworkFetch", "TestVectors"], path: "Tests/TrustTests",
            swiftSettings: strict),
        .testTarget(
            name: "CertificateManagerTests",
            dependencies: [
                "CertificateManager", "Trust", "Certificates", "Keychain", "KeychainItems", "NetworkFetch", "Security",
                "TestVectors", "COpenSSL", "COpenSSLShims", "TLS", "HardwareKeys",
            ],
            path: "Tests/CertificateManagerTests", swiftSettings: strict),
        // The child process of the keychain's multi-process and SIGKILL tests.
        .executableTarget(
            name: "keychain-stress-child", dependencies: ["Keychain"], path: "Tests/KeychainStressChild",
            swiftSettings: strict),
        // The applications of the keychain service tests: copies of this binary are different applications.
        .executableTarget(
            name: "keychain-service-client", dependencies: ["Keychain", "KeychainWire"], path: "Tests/KeychainServiceClient",
            swiftSettings: strict),
        .testTarget(
            name: "KeychainServiceTests", dependencies: ["SecurityBase", "KeychainService", "Keychain", "KeychainWire", "KeychainItems", "Certificates", "CryptoContract", "TestVectors"],
            path: "Tests/KeychainServiceTests", swiftSettings: strict),
        // Written the way an Apple-platform client is: `import Security` and SecItem*.
        .testTarget(
            name: "SecurityTests", dependencies: ["Security", "Keychain", "LocalAuthentication", "HardwareKeys", "Certificates", "TestVectors"],
            path: "Tests/SecurityTests", swiftSettings: strict),
        .testTarget(
            name: "HardwareKeysTests", dependencies: ["HardwareKeys", "Certificates", "TestVectors"], path: "Tests/HardwareKeysTests",
            swiftSettings: strict),
        // Every name of Apple's public Security headers (symbols.tsv, extracted from Apple's sources),
        // compiled with its Swift type and compared with Apple's value.
        // Apple-platform code (importing only Foundation and Security) compiled unchanged.
        .testTarget(
            name: "AppleCompatibilityTests", dependencies: ["Security", "LocalAuthentication", "TestVectors"], path: "Tests/AppleCompatibilityTests",
            // Swift 6 as an Apple-platform package builds by default (imports public), not this package's house rules.
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Fuzzing: the targets, and the driver `make fuzz` builds with libFuzzer and AddressSanitizer
        // (built plainly it replays inputs: the regression check).
        .target(
            name: "FuzzTargets",
            dependencies: [
                "Security", "Certificates", "Trust", "Keychain", "KeychainWire", "CommonCrypto", "CommonCryptoAdapter", "CryptoDispatcher", "CertificateManager",
            ],
            path: "Tests/Fuzz/Targets", swiftSettings: strict),
        .executableTarget(name: "securityfuzz", dependencies: ["FuzzTargets"], path: "Tests/Fuzz/Driver", swiftSettings: strict),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets", "Security", "TestVectors"], path: "Tests/FuzzTests", swiftSettings: strict),
        .testTarget(
            name: "SecurityHeaderTests", dependencies: ["Security", "TestVectors"], path: "Tests/SecurityHeaderTests",
            exclude: ["symbols.tsv", "extract-symbols.py", "generate-checks.py"], swiftSettings: strict),
        // Runs the built `security` binary as a subprocess and checks its exact output and exit status.
        .testTarget(
            name: "SecurityCommandTests", dependencies: ["Keychain", "CertificateManager", "Certificates", "TestVectors"],
            path: "Tests/SecurityCommandTests", swiftSettings: strict),
        .testTarget(
            name: "CryptographyTests", dependencies: ["SecurityBase", "Cryptography", "CryptoContract", "TestVectors"],
            path: "Tests/CryptographyTests", swiftSettings: strict),
        // Written the way an Apple-platform client is: `import CommonCrypto` and the C API.
        .testTarget(
            name: "CommonCryptoTests",
            dependencies: ["CommonCrypto", "CommonCryptoAdapter", "CryptoDispatcher", "CryptoContract", "Entropy", "TestVectors"],
            path: "Tests/CommonCryptoTests", swiftSettings: strict),
    ]
)
