// The unwindd.v1 messages (proto/unwinder.proto): protobuf's full runtime,
// or, where UNWINDD_PROTO_LITE is defined (//service/common:
// unwinder_messages_lite and what depends on it, the socket client in
// `unwind`), its lite runtime (//proto:unwinder_cc_lite). The classes
// and their accessors are the same in both; the lite ones have no
// descriptors or reflection. A program links one or the other, never both.
#ifndef UNWINDD_SERVICE_COMMON_UNWINDER_MESSAGES_H_
#define UNWINDD_SERVICE_COMMON_UNWINDER_MESSAGES_H_

#ifdef UNWINDD_PROTO_LITE
#include "proto/lite/unwinder.pb.h"
#else
#include "proto/unwinder.pb.h"
#endif

#endif  // UNWINDD_SERVICE_COMMON_UNWINDER_MESSAGES_H_
