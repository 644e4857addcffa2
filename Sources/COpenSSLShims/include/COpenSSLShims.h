#ifndef COPENSSL_SHIMS_H
#define COPENSSL_SHIMS_H
#include <stddef.h>
#include <openssl/ec.h>
#include <openssl/x509.h>

/// Function-like OpenSSL macros and type-generic stack calls do not import into Swift; these wrap them.

/// OPENSSL_free is a macro.
void copenssl_free(void *ptr);

/// STACK_OF(X509) helpers (sk_X509_* are macros).
STACK_OF(X509) *copenssl_sk_X509_new(void);
int copenssl_sk_X509_push(STACK_OF(X509) *stack, X509 *cert);
void copenssl_sk_X509_free(STACK_OF(X509) *stack);

/// Pops every queued OpenSSL error into `buf` as "lib:reason; ..." and clears the queue. Returns the count.
int copenssl_drain_errors(char *buf, size_t len);

/// A parameters-only EC key for a named group ("prime256v1", "secp384r1"), imported with EVP_PKEY_fromdata
/// (whose parameter list and selection are macros): the template `copenssl_ec_public_key` copies.
EVP_PKEY *copenssl_ec_parameters(const char *group);

/// An EC public key: a copy of `parameters` (from `copenssl_ec_parameters`) given the X9.62 point. NULL when
/// the point is not on the curve. Copying the group costs a fraction of building it from its name again, and
/// d2i_PUBKEY goes through OpenSSL 3's decoder chain, which costs more than a verification.
EVP_PKEY *copenssl_ec_public_key(EVP_PKEY *parameters, const unsigned char *point, size_t length);
/// A named curve's group ("prime256v1", "secp384r1"); NULL for an unknown name.
EC_GROUP *copenssl_ec_group(const char *group);

/// 1 when `point` is an X9.62 encoding of a point on `group`'s curve (EC_POINT_oct2point: the check an
/// EVP_PKEY import of the point makes), else 0. Only reads `group`, so one group serves every thread.
int copenssl_ec_point_is_on_curve(const EC_GROUP *group, const unsigned char *point, size_t length);
#endif
