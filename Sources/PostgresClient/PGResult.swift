internal import CLibPQ

/// Owns one `PGresult`; `PQclear` runs in `deinit`, nowhere else.
///
/// `@unchecked Sendable` because libpq documents a `PGresult` as read-only after creation, so it "can be
/// passed around freely between threads"; this module never calls the functions that modify one.
final class PGResult: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`: the caller must not clear it.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        PQclear(pointer)
    }
}
