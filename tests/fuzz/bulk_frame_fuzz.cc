// libFuzzer target: what a server or client decodes from a bulk-transport peer (docs/
// TRANSPORT.md): the frame header (transport::DecodeHeader), its array table
// (transport::CheckArrayTable), and the arrays as the bulk codec reads them (server/
// bulk_codec.h): SampleOneHop and GatherFeatures requests, and their answers. The input is the
// frame as it comes off the socket: 40 header bytes, the table, the arrays. Invariant: a
// request that decodes encodes back to arrays that decode to the same request.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/bulk_codec.h"
#include "tests/fuzz/fuzz_util.h"
#include "transport/frame.h"

namespace graphshard::fuzz {
namespace {

constexpr uint64_t kMaxPayload = 1 << 20;

transport::Received FromBody(const transport::Body& body) {
  transport::Received r;
  for (absl::Span<const char> a : body.Arrays()) r.arrays.emplace_back(a.begin(), a.end());
  return r;
}

void RoundTripOneHop(const engine::OneHopRequest& request) {
  auto again = server::DecodeOneHopRequest(FromBody(*server::EncodeOneHopRequest(request)));
  if (!again.ok()) Fail("re-encoded SampleOneHop request does not decode");
  if (again->replace != request.replace || again->items.size() != request.items.size()) {
    Fail("SampleOneHop request round trip changed it");
  }
  for (size_t i = 0; i < request.items.size(); ++i) {
    const engine::HopItem& a = request.items[i];
    const engine::HopItem& b = again->items[i];
    if (a.edge_type != b.edge_type || a.seeds != b.seeds || a.fanout != b.fanout ||
        a.seed != b.seed) {
      Fail("SampleOneHop item round trip changed it");
    }
  }
}

void RoundTripGather(const server::GatherRequest& request) {
  auto again = server::DecodeGatherRequest(
      FromBody(*server::EncodeGatherRequest(request.items, request.dtype)));
  if (!again.ok()) Fail("re-encoded GatherFeatures request does not decode");
  if (again->dtype != request.dtype || again->items.size() != request.items.size()) {
    Fail("GatherFeatures request round trip changed it");
  }
  for (size_t i = 0; i < request.items.size(); ++i) {
    if (again->items[i].node_type != request.items[i].node_type ||
        again->items[i].ids != request.items[i].ids) {
      Fail("GatherFeatures item round trip changed it");
    }
  }
}

void Decode(const transport::FrameHeader& header, transport::Received arrays, uint8_t extra) {
  if (header.kind == server::kBulkSampleOneHop && !header.answer()) {
    auto request = server::DecodeOneHopRequest(std::move(arrays));
    CheckErrorNamesSomething(request.status(), "DecodeOneHopRequest");
    if (request.ok()) RoundTripOneHop(*request);
  } else if (header.kind == server::kBulkGatherFeatures && !header.answer()) {
    auto request = server::DecodeGatherRequest(std::move(arrays));
    CheckErrorNamesSomething(request.status(), "DecodeGatherRequest");
    if (request.ok()) RoundTripGather(*request);
  } else if (header.kind == server::kBulkSampleOneHop) {
    // The item count the client asked for is the low bits of the request id.
    auto results = server::DecodeHopResults(std::move(arrays), header.request_id % 64);
    CheckErrorNamesSomething(results.status(), "DecodeHopResults");
  } else {
    std::vector<size_t> ids_per_item;
    for (uint64_t id = header.request_id; id != 0 && ids_per_item.size() < 8; id >>= 8) {
      ids_per_item.push_back(static_cast<size_t>(id % 256));
    }
    const auto dtype = static_cast<engine::FeatureDtype>(extra % 3);
    auto blocks = server::DecodeFeatureBlocks(std::move(arrays), ids_per_item, dtype);
    CheckErrorNamesSomething(blocks.status(), "DecodeFeatureBlocks");
  }
}

}  // namespace
}  // namespace graphshard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using graphshard::transport::kHeaderBytes;
  namespace fuzz = graphshard::fuzz;
  namespace transport = graphshard::transport;
  if (size < kHeaderBytes + 1) return 0;
  const uint8_t extra = data[0];
  ++data;
  --size;
  transport::HeaderBytes header_bytes;
  std::memcpy(header_bytes.data(), data, kHeaderBytes);
  auto header = transport::DecodeHeader(header_bytes, fuzz::kMaxPayload);
  fuzz::CheckErrorNamesSomething(header.status(), "DecodeHeader");
  if (!header.ok()) return 0;
  if (header->payload_bytes > fuzz::kMaxPayload) fuzz::Fail("payload above the maximum accepted");
  // The socket reads exactly payload_bytes; a shorter input stands for a peer that hung up.
  const uint8_t* payload = data + kHeaderBytes;
  const size_t available = size - kHeaderBytes;
  if (available < header->payload_bytes) return 0;
  size_t at = header->message_bytes;
  std::vector<uint64_t> table(header->num_arrays);
  if (at + 8 * table.size() > header->payload_bytes) fuzz::Fail("table outside the payload");
  // (memcpy's pointers must not be null even for 0 bytes: an empty vector's data() may be.)
  if (!table.empty()) std::memcpy(table.data(), payload + at, 8 * table.size());
  at += 8 * table.size();
  absl::Status checked = transport::CheckArrayTable(*header, table);
  fuzz::CheckErrorNamesSomething(checked, "CheckArrayTable");
  if (!checked.ok()) return 0;
  transport::Received arrays;
  for (uint64_t length : table) {
    if (at + length > header->payload_bytes) fuzz::Fail("CheckArrayTable passed arrays past the payload");
    arrays.arrays.emplace_back(payload + at, payload + at + length);
    at += length;
  }
  fuzz::Decode(*header, std::move(arrays), extra);
  return 0;
}
