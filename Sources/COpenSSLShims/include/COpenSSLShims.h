#ifndef COPENSSL_SHIMS_H
#define COPENSSL_SHIMS_H
#include <stddef.h>
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
#endif
