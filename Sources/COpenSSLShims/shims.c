#include "COpenSSLShims.h"
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

/* OpenSSL frees its global and per-thread state at exit (an atexit handler) unless the first call that
   initialises it says not to. At exit other threads may still be using OpenSSL or be ending: the cleanup
   deletes the thread keys under them, so a thread ending after it leaks its error queue and random
   generators (LeakSanitizer reported one such thread in about one test run in seven), and one still working
   uses freed state. A process's memory goes back whole when it exits, so nothing is cleaned up; this runs
   when the binary loads, before any other OpenSSL call. */
__attribute__((constructor)) static void copenssl_no_cleanup_at_exit(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

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

EVP_PKEY *copenssl_ec_parameters(const char *group) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL) return NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_PKEY *key = NULL;
    if (EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_KEY_PARAMETERS, params) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}

EVP_PKEY *copenssl_ec_public_key(EVP_PKEY *parameters, const unsigned char *point, size_t length) {
    EVP_PKEY *key = EVP_PKEY_dup(parameters);
    if (key == NULL) return NULL;
    if (EVP_PKEY_set1_encoded_public_key(key, point, length) != 1) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}

EC_GROUP *copenssl_ec_group(const char *group) {
    int nid = OBJ_sn2nid(group);
    return nid == NID_undef ? NULL : EC_GROUP_new_by_curve_name(nid);
}

int copenssl_ec_point_is_on_curve(const EC_GROUP *group, const unsigned char *point, size_t length) {
    EC_POINT *decoded = EC_POINT_new(group);
    if (decoded == NULL) return 0;
    int ok = EC_POINT_oct2point(group, decoded, point, length, NULL);
    EC_POINT_free(decoded);
    return ok == 1;
}
