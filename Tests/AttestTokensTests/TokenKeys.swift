/// Fixed test keys, written by `openssl ecparam -name … -genkey -noout [| openssl pkcs8 -topk8 -nocrypt]`.
enum TokenKeys {
    static let current = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOiT/r52+g8arqh1P
        rAWZ/csuRc++VB2+13bUTDDtWH6hRANCAAT2NUQRrbre/2zGRvxxYdBqlyyW/d0U
        gQAocswI537LChA35o1jFpJb+KHBl3Dyqmuh9LN/yvU1y77DVRubNAWC
        -----END PRIVATE KEY-----
        """
    static let retired = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgBIOtbDVWhREZ0Z9Q
        Uu8f/EQmOPsXM9hK8HqV2TZsSx+hRANCAAT8Pw+iLpRFQ5UksPclbMoc3XxxwOhR
        g8oBKzp8UpU39cRaGAxHNYRwTWDjxQogJDvMNT1+ZSAVeQZxd0Q+Saqe
        -----END PRIVATE KEY-----
        """
    /// SEC1, as `openssl ecparam -genkey` writes it without pkcs8.
    static let sec1 = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIIzsBO+Q5Y6RPHLDc2xVIuxjhWSWmRpVf8QqcpKX8hJuoAoGCCqGSM49
        AwEHoUQDQgAEGAnqV1wWomyOepEadYwj1xISDbNB/FzT+cHv9EhyslqohVK/BLBh
        oRjC9NKGP6NX4SO+EgNm+JgQEul+Ztwc3w==
        -----END EC PRIVATE KEY-----
        """
    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDC7Gn+uU7HR13exhdBF
        ovHvxqEIuO13OynhzHgI8QmTRAL1Sj68TNBxDvu961H+GC+hZANiAAR7cgKSAaoO
        XVAzA5iZfAq4De+j63HAvafk3eA7/sFf2GbKQEwsvAIemN1qc2oJzI9kJHsi8wEh
        Zc6/7SNYchIm2pcWZnXbR8v5LfglTWb9CbnfhXVgoVU3lLE+3rIK8MQ=
        -----END PRIVATE KEY-----
        """
}
