public import Foundation

// The dictionary keys and values of Apple's SecItem API (<Security/SecItem.h>, plus the two key-generation
// keys of <Security/SecKey.h>), in the header's order. Each string is the one Apple's SecItemConstants.c
// gives the constant (`SEC_CONST_DECL (kSecClass, "class")`), so dictionaries built here read the same
// as on Apple platforms; the macOS-only constants take theirs from the macOS file of the same name.
//
// The constants are immutable NSStrings (CFString is NSString here). NSString is not Sendable in Swift 6, so
// each global is declared `nonisolated(unsafe)`; that is sound because none of them is ever mutated: each is a
// `let` holding an immutable string created from a literal.

// MARK: - Class key

/// Key whose value is the item's class (one of the kSecClass… values below).
nonisolated(unsafe) public let kSecClass: CFString = "class"

// MARK: - Class values

/// Internet password items.
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"
/// Generic password items.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// Certificate items.
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// Cryptographic key items.
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// Identity items: a certificate together with its private key.
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"

// MARK: - Attribute keys

/// When the item's data may be read (one of the kSecAttrAccessible… values).
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
/// macOS only: a SecAccess with the item's access-control settings.
nonisolated(unsafe) public let kSecAttrAccess: CFString = "acls"
/// A SecAccessControl with the item's access conditions.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// The access group the item belongs to.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
/// Whether the item may sync to the user's other devices (CFBoolean).
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
/// Value for kSecAttrSynchronizable in queries: match synchronizable and non-synchronizable items.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
/// Read-only: the item's creation date.
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"
/// Read-only: the item's last modification date.
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"
/// User-visible description of the kind of item.
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"
/// User-editable comment.
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"
/// The item's creator, a four-character code as a number.
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"
/// The item's type, a four-character code as a number.
nonisolated(unsafe) public let kSecAttrType: CFString = "type"
/// User-visible label.
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
/// Whether the item is hidden from display (CFBoolean).
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"
/// Whether the item deliberately holds no valid password (CFBoolean).
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"
/// Account name of a password item.
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
/// Service of a generic password item.
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
/// User-defined data of a generic password item.
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"
/// Internet security domain of an internet password item.
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"
/// Server domain name or IP address of an internet password item.
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"
/// Protocol of an internet password item (one of the kSecAttrProtocol… values).
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"
/// Authentication scheme of an internet password item (one of the kSecAttrAuthenticationType… values).
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"
/// Internet port number of an internet password item.
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"
/// Path component of the URL of an internet password item.
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"
/// Read-only: X.500 subject name of a certificate (DER).
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"
/// Read-only: X.500 issuer name of a certificate (DER).
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"
/// Read-only: serial number of a certificate.
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"
/// Read-only: subject key identifier of a certificate.
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"
/// Read-only: hash of a certificate's public key.
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// Read-only: certificate type (the X.509 version on iOS).
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"
/// Read-only: certificate encoding (3, DER, on iOS).
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"
/// Key class: kSecAttrKeyClassPublic, kSecAttrKeyClassPrivate or kSecAttrKeyClassSymmetric.
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"
/// Programmatic key label; for asymmetric keys, the hash of the public key.
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"
/// Whether a generated key is stored in the keychain (CFBoolean).
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
/// Whether the key may only be exported wrapped (CFBoolean).
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"
/// Whether the key may be exported from its container (CFBoolean).
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"
/// Private tag data of a key.
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
/// Key algorithm (one of the kSecAttrKeyType… values).
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
/// macOS only: pseudo-random function for key derivation (one of the kSecAttrPRF… values).
nonisolated(unsafe) public let kSecAttrPRF: CFString = "prf"
/// macOS only: salt for key derivation.
nonisolated(unsafe) public let kSecAttrSalt: CFString = "salt"
/// macOS only: number of rounds of the pseudo-random function.
nonisolated(unsafe) public let kSecAttrRounds: CFString = "rounds"
/// Key size in bits.
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// Effective key size in bits.
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// Whether the key can encrypt (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"
/// Whether the key can decrypt (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"
/// Whether the key can derive another key (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"
/// Whether the key can sign (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"
/// Whether the key can verify signatures (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"
/// Whether the key can wrap another key (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"
/// Whether the key can unwrap another key (CFBoolean).
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"
/// Sync view hint; part of each item's primary key.
nonisolated(unsafe) public let kSecAttrSyncViewHint: CFString = "vwht"
/// Identifier of the token backing the item; absent for items in the keychain database.
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"
/// The item's persistent reference (the header's original misspelling).
nonisolated(unsafe) public let kSecAttrPersistantReference: CFString = "persistref"
/// The item's persistent reference.
nonisolated(unsafe) public let kSecAttrPersistentReference: CFString = "persistref"

// MARK: - kSecAttrAccessible values

/// Readable only while the device is unlocked; migrates with encrypted backups.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// Readable after the first unlock following a restart; migrates with encrypted backups.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// Always readable, whatever the lock state; not recommended.
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// Readable only while unlocked, and only while a passcode is set; never migrates.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
/// Readable only while the device is unlocked; never migrates.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// Readable after the first unlock following a restart; never migrates.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// Always readable, whatever the lock state; never migrates; not recommended.
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"

// MARK: - kSecAttrProtocol values

/// FTP.
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
/// FTP account.
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// HTTP.
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
/// IRC.
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
/// NNTP.
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
/// POP3.
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
/// SMTP.
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
/// SOCKS.
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
/// IMAP.
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
/// LDAP.
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
/// AppleTalk.
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// AFP.
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
/// Telnet.
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
/// SSH.
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
/// FTP over TLS.
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
/// HTTP over TLS.
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
/// HTTP proxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// HTTPS proxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// FTP proxy.
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// SMB.
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
/// RTSP.
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// RTSP proxy.
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// DAAP.
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
/// Remote Apple Events (EPPC).
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
/// IPP.
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
/// NNTP over TLS.
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// LDAP over TLS.
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// Telnet over TLS.
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
/// IMAP over TLS.
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
/// IRC over TLS.
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
/// POP3 over TLS.
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: - kSecAttrAuthenticationType values

/// Windows NT LAN Manager authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// Microsoft Network default authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// Distributed Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// Remote Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// HTTP Basic authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// HTTP Digest Access authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// HTML form based authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// The default authentication type.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: - kSecAttrKeyClass values

/// A public key.
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// A private key.
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// A symmetric (session) key.
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"

// MARK: - kSecAttrKeyType values

/// RSA.
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// macOS only: DSA.
nonisolated(unsafe) public let kSecAttrKeyTypeDSA: CFString = "43"
/// macOS only: AES.
nonisolated(unsafe) public let kSecAttrKeyTypeAES: CFString = "2147483649"
/// macOS only: DES.
nonisolated(unsafe) public let kSecAttrKeyTypeDES: CFString = "14"
/// macOS only: triple DES.
nonisolated(unsafe) public let kSecAttrKeyType3DES: CFString = "17"
/// macOS only: RC4.
nonisolated(unsafe) public let kSecAttrKeyTypeRC4: CFString = "25"
/// macOS only: RC2.
nonisolated(unsafe) public let kSecAttrKeyTypeRC2: CFString = "23"
/// macOS only: CAST.
nonisolated(unsafe) public let kSecAttrKeyTypeCAST: CFString = "56"
/// macOS only, deprecated: elliptic curve; use kSecAttrKeyTypeECSECPrimeRandom.
nonisolated(unsafe) public let kSecAttrKeyTypeECDSA: CFString = "73"
/// Legacy name of kSecAttrKeyTypeECSECPrimeRandom.
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
/// Elliptic curve keys on the NIST prime curves.
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"

// MARK: - kSecAttrPRF values

/// macOS only: HMAC-SHA1.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA1: CFString = "hsha1"
/// macOS only: HMAC-SHA224.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA224: CFString = "hsha224"
/// macOS only: HMAC-SHA256.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA256: CFString = "hsha256"
/// macOS only: HMAC-SHA384.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA384: CFString = "hsha384"
/// macOS only: HMAC-SHA512.
nonisolated(unsafe) public let kSecAttrPRFHmacAlgSHA512: CFString = "hsha512"

// MARK: - Search keys

/// A SecPolicy that returned certificates or identities must verify against.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = "m_Policy"
/// An array of items (or persistent references) the results are limited to.
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// An array of keychains the search is limited to.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = "m_SearchList"
/// An array of X.500 names; results' chains must contain one of these issuers.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = "m_Issuers"
/// An RFC 822 address; results contain it or no address at all.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
/// A string the certificate subject must contain.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// macOS only: a string the certificate subject must start with.
nonisolated(unsafe) public let kSecMatchSubjectStartsWith: CFString = "m_SubjectStartsWith"
/// macOS only: a string the certificate subject must end with.
nonisolated(unsafe) public let kSecMatchSubjectEndsWith: CFString = "m_SubjectEndsWith"
/// macOS only: a string the certificate subject must equal.
nonisolated(unsafe) public let kSecMatchSubjectWholeString: CFString = "m_SubjectWholeString"
/// Whether string matching ignores case (CFBoolean).
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// macOS only: whether string matching ignores diacritics (CFBoolean).
nonisolated(unsafe) public let kSecMatchDiacriticInsensitive: CFString = "m_DiacriticInsensitive"
/// macOS only: whether string matching ignores character width (CFBoolean).
nonisolated(unsafe) public let kSecMatchWidthInsensitive: CFString = "m_WidthInsensitive"
/// Whether only certificates that chain to a trusted anchor are returned (CFBoolean).
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
/// A date the results must be valid on (kCFNull for now).
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"
/// Match internet passwords whose server is the host or a subdomain of it (not supported here: errSecUnimplemented).
nonisolated(unsafe) public let kSecMatchHostOrSubdomainOfHost: CFString = "m_HostOrSubdomainOfHost"
/// macOS, deprecated: the user-independent keychain (not supported here: errSecUnimplemented).
nonisolated(unsafe) public let kSecUseUserIndependentKeychain: CFString = "u_UserIndependentKeychain"
/// Maximum number of results (a number, kSecMatchLimitOne or kSecMatchLimitAll).
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// Value for kSecMatchLimit: the first match only.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Value for kSecMatchLimit: every match.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"

// MARK: - Return type keys

/// Return the item's data (CFBoolean).
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// Return the item's attributes as a dictionary (CFBoolean).
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return a reference to the item (CFBoolean).
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// Return a persistent reference to the item (CFBoolean).
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: - Value type keys

/// The item's data.
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// A reference to the item (key, certificate, identity or keychain item).
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// A persistent reference to the item.
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"

// MARK: - Other keys

/// macOS only: an array of items to search, or to add, instead of the keychains.
nonisolated(unsafe) public let kSecUseItemList: CFString = "u_ItemList"
/// macOS only: the keychain SecItemAdd adds to.
nonisolated(unsafe) public let kSecUseKeychain: CFString = "u_Keychain"
/// Text shown to the user when the item needs authentication.
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Deprecated: fail with errSecInteractionNotAllowed instead of showing authentication UI; use kSecUseAuthenticationUI.
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
/// How to handle items that need authentication UI (one of the kSecUseAuthenticationUI… values).
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// An LAContext to authenticate the item with.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// Use the data protection (iOS-style) keychain on macOS (CFBoolean).
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"

// MARK: - kSecUseAuthenticationUI values

/// Authentication UI may appear (the default).
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// Fail with errSecInteractionNotAllowed where authentication UI would be needed.
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// Silently skip items that need authentication UI (SecItemCopyMatching only).
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"

// MARK: - kSecAttrTokenID values

/// The token implemented by the device's Secure Enclave.
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"

// MARK: - kSecAttrAccessGroup values

/// The access group holding items provided by external tokens (smart cards).
nonisolated(unsafe) public let kSecAttrAccessGroupToken: CFString = "com.apple.token"

// MARK: - Key generation dictionary keys (SecKey.h)

/// SecKeyGeneratePair/SecKeyCreateRandomKey: dictionary of attributes for the private key.
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
/// SecKeyGeneratePair/SecKeyCreateRandomKey: dictionary of attributes for the public key.
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"
