import AttestCore
import AttestTokens
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// `apps.custom_claims` through the apps statements: claims come back as registered, `app set` replaces
/// them, and claims that no longer validate (the table edited by hand) are loaded as none, so no token
/// carries claims the worker never checked.
@Suite struct AppClaimsStoreTests {
    typealias Database = AttestStoreTests.Database

    @Test func claimsRoundTripAndAreReplaced() throws {
        let db = try Database()
        var app = AppPolicy(teamId: "TEAM", bundleId: "claims", claims: try CustomClaims(text: #"{"tier":"gold","n":[1,{"a":true}]}"#))
        try db.store.upsert(app)
        #expect(try db.store.apps()[app.app]?.claims == app.claims)
        app.claims = try CustomClaims(text: #"{"plan":3}"#)
        try db.store.upsert(app)
        #expect(try db.store.apps()[app.app]?.claims.json == .object([("plan", .int(3))]))
        #expect(try db.store.apps()[app.app] == app)
        app.claims = CustomClaims()
        try db.store.upsert(app)
        #expect(try db.store.apps()[app.app]?.claims.members.isEmpty == true)
    }

    @Test(arguments: [#"{"sub":"attacker"}"#, #"["gold"]"#, #""gold""#, #"{"a":{"b":{"c":{"d":{}}}}}"#])
    func claimsEditedIntoTheTableThatDoNotValidateAreNone(_ stored: String) throws {
        let db = try Database()
        let app = AppPolicy(teamId: "TEAM", bundleId: "edited", claims: try CustomClaims(text: #"{"tier":"gold"}"#))
        try db.store.upsert(app)
        try db.connection.execute("UPDATE apps SET custom_claims = $1::jsonb WHERE bundle_id = 'edited'", [.text(stored)])
        let loaded = try #require(try db.store.apps()[app.app])
        #expect(loaded.claims.members.isEmpty)
    }
}
