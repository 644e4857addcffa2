#ifndef CRDKAFKA_SHIM_H
#define CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
/* Debian 12's librdkafka 2.0.2 cannot talk to current brokers (flexible ApiVersions replies): refuse it. */
#if RD_KAFKA_VERSION < 0x020200ff
#error "librdkafka >= 2.2 is required: run ops/stack deps and put its pkgconfig folder on PKG_CONFIG_PATH"
#endif
#endif
