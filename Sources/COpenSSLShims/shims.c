#include "COpenSSLShims.h"
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

void copenssl_free(void *ptr) { OPENSSL_free(ptr); }

STACK_OF(X509) *copenssl_sk_X509_new(void) { return sk_X509_new_null(); }
int copenssl_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
void copenssl_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

int copenssl_drain_errors(char *buf, size_t len) {
    int count = 0;
    size_t used = 0;
    unsigned long code;
    if (len > 0) buf[0] = 0;
    while ((code = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(code, one, sizeof one);
        if (len > 0 && used + strlen(one) + 3 < len) {
            used += (size_t)snprintf(buf + used, len - used, "%s%s", count ? "; " : "", one);
        }
        count++;
    }
    return count;
}
