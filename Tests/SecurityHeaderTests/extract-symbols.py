#!/usr/bin/env python3
"""Writes symbols.tsv, the names Apple's public Security headers declare that this package must provide, with the
type Swift gives them on Apple platforms and, where Apple's sources define one, the value.

Usage: extract-symbols.py APPLE_SECURITY_CHECKOUT > symbols.tsv
  APPLE_SECURITY_CHECKOUT: a checkout of https://github.com/apple-oss-distributions/Security (the rows in the
  repository come from Security-61901.0.87.0.1).

Covered (issue 19): every `extern const` constant of the headers issue 19 names (CFString keys and values;
SecKeyAlgorithm and SecKeyKeyExchangeParameter constants, which Swift imports as static members), every OSStatus code
of SecBase.h, and every function prototype, with the function type Swift gives it on Apple platforms (the importer's
rules for these audited headers: CF_ASSUME_NONNULL, so an unannotated pointer is non-optional, but a pointer to a
pointer is not covered by it; CF_IMPLICIT_BRIDGING, so returned objects are managed; an out-parameter of an object
type is managed when CF_RETURNS_RETAINED says who owns it, else Unmanaged; CFErrorRef * is nullable with a nullable
pointee; CSSM_DATA, CSSM_OID and CSSM_X509_ALGORITHM_IDENTIFIER are the SecAsn1Types.h structures cssmtype.h
defines them to); every CF_ENUM and CF_OPTIONS member, named as the importer names it, with its value; and every
typedef under its Swift name.
Columns: header, Swift name, Swift type ("type" for a typedef), value ("" when unknown).
"""
import os
import re
import subprocess
import sys

HEADERS = {
    "SecBase.h": "base/SecBase.h", "SecRandom.h": "base/SecRandom.h",
    "SecAccessControl.h": "keychain/headers/SecAccessControl.h", "SecIdentity.h": "keychain/headers/SecIdentity.h",
    "SecImportExport.h": "keychain/headers/SecImportExport.h", "SecItem.h": "keychain/headers/SecItem.h",
    "SecKey.h": "keychain/headers/SecKey.h", "SecSharedCredential.h": "keychain/headers/SecSharedCredential.h",
    "SecCertificate.h": "trust/headers/SecCertificate.h", "SecPolicy.h": "trust/headers/SecPolicy.h",
    "SecTrust.h": "trust/headers/SecTrust.h", "SecureTransport.h": "OSX/libsecurity_ssl/lib/SecureTransport.h",
}
# Constants whose type is a CF_STRING_ENUM: Swift imports them as static members, named without the prefix.
STATIC_MEMBERS = {"SecKeyAlgorithm": "kSecKeyAlgorithm", "SecKeyKeyExchangeParameter": "kSecKeyKeyExchangeParameter"}


def swift_member(rest):
    """Swift's lower-casing of a leading initialism: RSASignatureRaw -> rsaSignatureRaw, RequestedSize -> requestedSize."""
    run = re.match(r"[A-Z]+", rest).group(0)
    if len(run) == len(rest):
        return rest.lower()
    if rest[len(run)].islower() and len(run) > 1:
        return run[:-1].lower() + rest[len(run) - 1:]
    return run.lower() + rest[len(run):]


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def values(checkout):
    """CFString values of constants, as Apple's sources define them."""
    found = {}
    output = subprocess.run(
        ["git", "-C", checkout, "grep", "-h", "-E", r"(SEC_CONST_DECL *\(|CFStringRef[^=]*= *CFSTR|SecKey[A-Za-z]* k\w+ *= *CFSTR)", "HEAD", "--", "*.c", "*.m", "*.cpp"],
        capture_output=True, text=True).stdout
    for line in output.splitlines():
        match = re.search(r"SEC_CONST_DECL *\( *(k\w+) *, *\"([^\"]*)\"", line) or re.search(r"(k\w+) *= *CFSTR\(\"([^\"]*)\"\)", line)
        if match:
            found.setdefault(match.group(1), match.group(2))
    for line in subprocess.run(["git", "-C", checkout, "show", "HEAD:OSX/sec/Security/SecPolicy.list"], capture_output=True, text=True).stdout.splitlines():
        match = re.match(r"POLICYMACRO\((\w+),\s*(\d+)", line)
        if match:
            found.setdefault("kSecPolicyApple" + match.group(1), "1.2.840.113635.100.1." + match.group(2))
    return found


# Function prototypes.

# Availability and audit macros, dropped with their arguments before the prototypes are read.
MACROS = re.compile(
    r"\b(API_DEPRECATED_WITH_REPLACEMENT|API_AVAILABLE|API_UNAVAILABLE|API_DEPRECATED|__\w*AVAILABLE\w*|__\w*DEPRECATED\w*"
    r"|__\w*PROHIBITED\w*|__\w*UNAVAILABLE\w*|SPI_AVAILABLE|CF_REFINED_FOR_SWIFT|CF_SWIFT_NAME|NS_SWIFT_NAME"
    r"|CF_SWIFT_UNAVAILABLE|__attribute__|DEPRECATED_IN_MAC_OS_X_VERSION_\w+|AVAILABLE_MAC_OS_X_VERSION_\w+"
    r"|CF_IMPLICIT_BRIDGING_\w+|CF_ASSUME_NONNULL_\w+|__BEGIN_DECLS|__END_DECLS|CF_CONSUMED|CF_WARN_UNUSED_RESULT|SEC_\w+)\b"
    r"\s*(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))?")
NULLABILITY = ("_Nullable", "_Nonnull", "_Null_unspecified")


def prototypes(text):
    """(name, C return type, C parameter list, the whole declaration) of each Sec… and SSL… function."""
    text = MACROS.sub("", re.sub(r"^\s*#.*$", "", strip_comments(text), flags=re.M))
    text = text.replace("__nullable", "_Nullable").replace("__nonnull", "_Nonnull")
    text = text.replace("CF_RETURNS_RETAINED", "_Retained").replace("CF_RETURNS_NOT_RETAINED", "_NotRetained")
    for chunk in re.split(r"[;{}]", text):
        declaration = " ".join(chunk.split())
        match = re.match(r"^(?:extern\s+)?([A-Za-z_][\w\s*]*?)\b((?:Sec|SSL)\w+)\s*\((.*)\)$", declaration)
        if match and "typedef" not in declaration and "=" not in declaration:
            yield match.group(2), match.group(1).strip(), match.group(3).strip(), declaration


SCALARS = {
    "OSStatus": "OSStatus", "Boolean": "Bool", "bool": "Bool", "CFTypeID": "CFTypeID", "size_t": "Int", "int": "Int32",
    "CFIndex": "CFIndex", "CFAbsoluteTime": "CFAbsoluteTime", "void": "Void", "uint32_t": "UInt32", "uint32": "UInt32",
    "UInt32": "UInt32", "unsigned int": "UInt32", "uint8_t": "UInt8", "uint16_t": "UInt16", "CFOptionFlags": "CFOptionFlags", "char": "CChar",
    "dispatch_queue_t": "DispatchQueue",
}
# Through a pointer, Apple's `Boolean` is DarwinBoolean (a value, it is Bool).
POINTEE_SCALARS = dict(SCALARS, Boolean="DarwinBoolean")
OBJECTS = {
    "CFStringRef": "CFString", "CFDataRef": "CFData", "CFArrayRef": "CFArray", "CFDictionaryRef": "CFDictionary",
    "CFTypeRef": "CFTypeRef", "CFDateRef": "CFDate", "CFErrorRef": "CFError", "CFAllocatorRef": "CFAllocator",
    "SecRandomRef": "SecRandomRef",
}
BLOCKS = {"SecTrustCallback", "SecTrustWithErrorCallback", "SecKeyGeneratePairBlock"}
# cssmtype.h and x509defs.h #define these to SecAsn1Types.h's structures, which is what Swift sees.
MACRO_TYPES = {"CSSM_DATA": "SecAsn1Item", "CSSM_OID": "SecAsn1Oid", "CSSM_X509_ALGORITHM_IDENTIFIER": "SecAsn1AlgId"}


def object_type(name):
    """The Swift class of a CF object type (SecKeyRef -> SecKey), or None. SSLConnectionRef is a plain pointer."""
    if name in OBJECTS:
        return OBJECTS[name]
    if name.endswith("Ref") and name.startswith(("Sec", "SSL")) and name != "SSLConnectionRef":
        return name[:-3]
    return None


def swift_type(ctype, parameter):
    """Swift's import of one C type (markers _Nullable, _Nonnull, _Retained as left by prototypes())."""
    retained = "_Retained" in ctype
    const = re.search(r"\bconst\b", ctype) is not None
    tokens = re.findall(r"\*|_Nullable|_Nonnull|_Null_unspecified|[A-Za-z_]\w*",
                        re.sub(r"\b(const|_Retained|_NotRetained|struct|enum|signed)\b", "", ctype))
    base = " ".join(token for token in tokens if token != "*" and token not in NULLABILITY)
    # Each `*` is a pointer level; an annotation belongs to the level before it (or, before any `*`, to the
    # typedef itself, which for an object type is a pointer).
    levels, own = [], None
    for token in tokens:
        if token == "*":
            levels.append(None)
        elif token in NULLABILITY:
            if levels:
                levels[-1] = token
            else:
                own = token

    def optional(annotation, assumed_nonnull):
        if annotation == "_Nullable":
            return "?"
        if annotation == "_Nonnull":
            return ""
        return "" if assumed_nonnull else "?"  # unspecified: Optional (Swift's `!` is one)

    if base in BLOCKS:
        annotation = own or "_Nonnull"
        return ("@escaping " if parameter and annotation == "_Nonnull" else "") + base + ("?" if annotation == "_Nullable" else "")
    pointer = "UnsafePointer<%s>" if const else "UnsafeMutablePointer<%s>"
    swift_object = object_type(base)
    if swift_object:
        if not levels:
            return swift_object + optional(own, True)
        pointee = swift_object + "?" if retained else "Unmanaged<%s>?" % swift_object
        if base == "CFErrorRef":  # the error out-parameter: nullable, with a nullable pointee
            return pointer % pointee + optional(levels[0] or "_Nullable", False)
        return pointer % pointee + optional(levels[0], False)
    if base == "SSLConnectionRef":
        return "SSLConnectionRef" + optional(own, True) if not levels else pointer % "SSLConnectionRef?" + optional(levels[0], True)
    if base == "void" and levels:
        if len(levels) == 1:
            return ("UnsafeRawPointer" if const else "UnsafeMutableRawPointer") + optional(levels[0], True)
        return "UnsafeMutablePointer<UnsafeMutableRawPointer?>" + optional(levels[-1], False)
    base = MACRO_TYPES.get(base, base)
    if not levels:
        return SCALARS.get(base, base)
    pointee = POINTEE_SCALARS.get(base, base) + ("?" if own == "_Nullable" else "")  # a pointer typedef (…_PTR)
    if len(levels) == 1:
        return pointer % pointee + optional(levels[0], True)
    # T * _Nullable * _Nonnull: a pointer to a (const) pointer to T.
    inner = ("UnsafePointer<%s>" if const else "UnsafeMutablePointer<%s>") % pointee + optional(levels[0], False)
    return "UnsafeMutablePointer<%s>" % inner + optional(levels[1], False)


def parameters(text):
    """A C parameter list split at its top-level commas, each without its name."""
    pieces, depth, current = [], 0, ""
    for character in text:
        if character == "," and depth == 0:
            pieces.append(current)
            current = ""
            continue
        depth += (character == "(") - (character == ")")
        current += character
    pieces.append(current)
    types = []
    for piece in (piece.strip() for piece in pieces):
        if piece in ("", "void"):
            continue
        named = re.match(r"^(.*[\s*])(\w+)$", piece)
        if named and named.group(2) not in NULLABILITY + ("_Retained", "void") and not object_type(named.group(2)) \
                and named.group(2) not in SCALARS:
            piece = named.group(1)
        types.append(piece)
    return types


def function_type(returned, parameter_list):
    return "(%s) -> %s" % (", ".join(swift_type(each, True) for each in parameters(parameter_list)), swift_type(returned, False))


# Prototypes whose parameters the simple rules above do not read (inline block types), as Swift shows them.
FUNCTION_TYPES = {
    "SecAddSharedWebCredential": "(CFString, CFString, CFString?, @escaping (CFError?) -> Void) -> Void",
    "SecRequestSharedWebCredential": "(CFString?, CFString?, @escaping (CFArray?, CFError?) -> Void) -> Void",
}


def function_rows(header, text):
    """(header, name, Swift function type or "excluded", value) for each prototype; variants (iOS and macOS forms of
    one name) are kept as separate rows when their Swift types differ."""
    rows = []
    for name, ret, params, declaration in prototypes(text):
        if "deprecated_msg" in declaration or "null_unspecified" in declaration:
            continue  # Apple's internal Swift-compatibility form, not in the published SDK
        rows.append((header, name, FUNCTION_TYPES.get(name) or function_type(ret, params), ""))
    return rows


# Enumerations: CF_ENUM (a Swift enum) and CF_OPTIONS (an OptionSet) with their members, as Swift names them.

def words(name):
    """camelCase words, an initialism or a number a word of its own: kSecKeyUsageCRLSign -> k Sec Key Usage CRL Sign."""
    return re.findall(r"[A-Z]+(?=[A-Z][a-z]|\d|$)|[A-Z]?[a-z]+|\d+[a-z]*\d*|[A-Z]+", name)


def swift_case(rest):
    """Swift's lowering of a member's first word: SigRaw -> sigRaw, CRLSign -> crlSign; an initialism followed by a
    digit, or making the whole name, stays (PKCS1, OAEP)."""
    run = re.match(r"[A-Z]+", rest)
    if not run:
        return rest
    run = run.group(0)
    after = rest[len(run):]
    if after == "" and len(run) > 1:
        return rest  # all capitals: OAEP
    if after[:1].isdigit():
        return rest  # PKCS1SHA1
    if len(run) == 1:
        return run.lower() + after
    return run[:-1].lower() + rest[len(run) - 1:]


def enumerations(text):
    """(type, kind, [(C name, value)]) of each CF_ENUM / CF_OPTIONS, values evaluated as C would."""
    text = strip_comments(text)
    for match in re.finditer(r"(CF_ENUM|CF_CLOSED_ENUM|CF_OPTIONS)\s*\(([^,)]*),\s*(\w+)\)\s*\{(.*?)\}", text, re.S):
        body = MACROS.sub("", re.sub(r"CF_ENUM_\w+\s*\([^)]*\)", "", match.group(4)))
        values, members, following = {}, [], 0
        for entry in (each.strip() for each in body.split(",")):
            named = re.match(r"^(k\w+)\s*(?:=\s*(.+))?$", entry)
            if not named:
                continue
            expression = named.group(2)
            if expression is not None:
                expression = re.sub(r"(?<=[0-9a-fA-F])[uUlL]+\b", "", expression)
                following = eval(re.sub(r"\b(k\w+)\b", lambda m: str(values[m.group(1)]), expression))
            values[named.group(1)] = following
            members.append((named.group(1), following))
            following += 1
        yield match.group(3), "options" if match.group(1) == "CF_OPTIONS" else "enum", members


def enumeration_rows(header, text):
    rows = []
    for type_name, kind, members in enumerations(text):
        # The importer drops the words every member shares with each other and with the type's name (the leading
        # "k" aside): kSecFormatUnknown of SecExternalFormat -> formatUnknown, kSSLClientCertNone of
        # SSLClientCertificateState -> certNone.
        split = [words(name[1:]) for name, _ in members]
        type_words = words(type_name)
        common = 0
        while all(len(each) > common + 1 and each[common] == split[0][common] for each in split) \
                and len(type_words) > common and type_words[common] == split[0][common]:
            common += 1
        # A member left starting with a digit keeps one more word of the prefix (kSec3DES192 -> sec3DES192).
        while common > 0 and any(each[common][0].isdigit() for each in split):
            common -= 1
        for (name, value), each in zip(members, split):
            rest = "".join(each[common:])
            if kind == "options" and value == 0:
                continue  # a zero option is the empty set, [], in Swift
            rows.append((header, type_name + "." + swift_case(rest), type_name, str(value)))
    return rows


# Types: each typedef of the headers under its Swift name (an object type without its "Ref").

def type_rows(header, text):
    text = re.sub(r"^\s*#.*$", "", strip_comments(text), flags=re.M)
    rows = []
    for match in re.finditer(r"typedef\s+([^;{]*?(\{[^}]*\})?[^;{]*?)\s*;", text, re.S):
        declaration = re.sub(r"\{[^}]*\}", "{}", " ".join(match.group(1).split()))
        pointer_to_function = re.search(r"\(\s*[*^]\s*(\w+)\s*\)", declaration)
        if pointer_to_function:
            name = pointer_to_function.group(1)
        else:
            bare = re.sub(r"\b(API_\w+|__\w+|CF_\w+|SPI_\w+)\s*(\((?:[^()]|\([^()]*\))*\))?", "", declaration).strip()
            last = re.findall(r"(\w+)\s*$", bare)
            if not last or last[0].startswith("Opaque"):
                continue  # the struct tags behind object types are not names in Swift
            name = last[0]
        if name.endswith("Ref") and object_type(name):
            name = object_type(name)
        if re.search(r"CF_ENUM|CF_OPTIONS", declaration):
            continue  # enumerations have rows of their own
        rows.append((header, name, "type", ""))
    return rows


def main():
    checkout = sys.argv[1]
    known = values(checkout)
    rows = []
    for header, path in HEADERS.items():
        text = strip_comments(subprocess.run(["git", "-C", checkout, "show", "HEAD:" + path], capture_output=True, text=True).stdout)
        for match in re.finditer(r"extern\s+const\s+(\w+)\s+(?:_Nonnull\s+|__nonnull\s+|_Nullable\s+)?(k\w+)", text):
            ctype, name = match.groups()
            if ctype in STATIC_MEMBERS:
                rows.append((header, ctype + "." + swift_member(name[len(STATIC_MEMBERS[ctype]):]), ctype, known.get(name, "")))
            elif ctype == "CFStringRef":
                rows.append((header, name, "CFString", known.get(name, "")))
            elif ctype == "SecRandomRef":
                rows.append((header, name, "SecRandomRef?", ""))
        functions = function_rows(header, subprocess.run(["git", "-C", checkout, "show", "HEAD:" + path], capture_output=True, text=True).stdout)
        if header == "SecBase.h":
            for block in re.finditer(r"CF_ENUM\s*\(\s*OSStatus\s*\)\s*\{(.*?)\}", text, re.S):
                for member in re.finditer(r"^\s*(err\w+)\s*(?:API_\w+\((?:[^()]|\([^()]*\))*\)\s*)?=\s*(-?\d+)", block.group(1), re.M):
                    rows.append((header, member.group(1), "OSStatus", member.group(2)))
        rows.extend(functions)
        rows.extend(type_rows(header, subprocess.run(["git", "-C", checkout, "show", "HEAD:" + path], capture_output=True, text=True).stdout))
        rows.extend(enumeration_rows(header, subprocess.run(["git", "-C", checkout, "show", "HEAD:" + path], capture_output=True, text=True).stdout))
    seen = set()
    print("# header\tSwift name\tSwift type\tvalue (Apple's sources; empty: not checked)")
    for row in rows:
        # A name once, but a function's variants (another Swift type under the same name) each once.
        key = (row[1], row[2]) if "(" in row[2] else row[1]
        if key not in seen:
            seen.add(key)
            print("\t".join(row))


if __name__ == "__main__":
    main()
