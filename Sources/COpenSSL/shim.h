#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/opensslv.h>
#if OPENSSL_VERSION_MAJOR < 3
#error "OpenSSL 3 or later is required"
#endif
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#endif
