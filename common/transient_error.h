#ifndef GRAPHSHARD_COMMON_TRANSIENT_ERROR_H_
#define GRAPHSHARD_COMMON_TRANSIENT_ERROR_H_

// The one decision "may asking again (later, or another replica) cure this failure?", used where
// a failed call to another process is retried or re-routed: a server forgetting a peer it asks
// over gRPC (server/grpc_peers.cc) or the bulk transport (server/bulk_peers.cc) so that the part
// is looked up again, a trainer resuming a broken batch stream (client/resuming_stream.cc),
// and polls until a deadline (common/poll.h). Thread-safe: a pure function.
//
// Transient (true): the other side or the path to it failed, not the request.
//   kUnavailable        connection refused or lost, a server shutting down, a batch whose
//                       shared-memory segment is gone: the usual sign of a dead or restarted
//                       server.
//   kDeadlineExceeded   the other side stalled (or one of its peers did); a replica or a
//                       restarted server may answer.
//   kCancelled          the other side cancelled the call (a server or bulk transport shutting
//                       down). A caller that cancelled its own call checks that first.
//   kAborted            gRPC's code for a call aborted by the transport; asking again is the
//                       documented remedy.
//   kUnknown            gRPC's code for a stream reset (RST_STREAM) or a handler that died.
//   kResourceExhausted  a server (just restarted, or busy) without free stream slots or memory
//                       for the request now; another replica, or the same one later, may have.
// Not transient (false): the request or the data are wrong, so the same request fails the same
// way anywhere, and retrying only hides the cause until a deadline: kInvalidArgument,
// kOutOfRange, kNotFound, kAlreadyExists, kFailedPrecondition (e.g. another graph), kUnimplemented,
// kInternal, kPermissionDenied, kUnauthenticated (a wrong job token stays wrong), and kDataLoss:
// an answer that fails its checks on arrival, or a bulk frame that breaks the protocol, is a bug
// or corruption that the same deterministic request reproduces (a bulk connection closed for
// it is opened again by the next request; the peer's address, from its own metadata, stays
// valid). kOk is not a failure (false).

#include "absl/status/status.h"

namespace graphshard::common {

bool IsTransientError(const absl::Status& status);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_TRANSIENT_ERROR_H_
