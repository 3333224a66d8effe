// The keychain's vocabulary (items, queries, attributes, errors) comes with the store that takes it.
@_exported public import KeychainModel
