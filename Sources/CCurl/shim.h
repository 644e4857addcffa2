#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

/// libcurl's process-wide setup (TLS backend, sockets), once before any handle; CURL_GLOBAL_DEFAULT is a macro
/// expression Swift does not import.
static inline CURLcode CCurl_globalInit(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

/// `curl_easy_setopt` and `curl_easy_getinfo` are variadic and do not import into Swift: one typed wrapper
/// per argument type the HTTP client passes.
static inline CURLcode CCurl_setLong(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode CCurl_setString(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode CCurl_setPointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode CCurl_setOffset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode CCurl_setHeaderList(CURL *handle, struct curl_slist *list) {
    return curl_easy_setopt(handle, CURLOPT_HTTPHEADER, list);
}

typedef size_t (*CCurl_DataCallback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode CCurl_setWriteCallback(CURL *handle, CCurl_DataCallback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode CCurl_setHeaderCallback(CURL *handle, CCurl_DataCallback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode CCurl_responseCode(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}

#endif
