#ifndef GRAPHSHARD_CLIENT_TENSORBOARD_H_
#define GRAPHSHARD_CLIENT_TENSORBOARD_H_

// TensorBoard event files (--tensorboard DIR), written without TensorFlow: a file is TFRecord
// framing (uint64 length, masked CRC-32C of the length, payload, masked CRC-32C of the payload)
// around `Event` protobufs, and the trainer needs only five of their fields (wall_time, step,
// file_version, summary.value.tag, summary.value.simple_value), so they are hand-encoded here
// rather than pulling in TensorFlow's .proto files (trainer/README.md, "TensorBoard"). No Torch.
// Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/file_util.h"

namespace graphshard::client {

// CRC-32C (Castagnoli), and TFRecord's mask of it.
uint32_t Crc32c(absl::string_view data);
uint32_t MaskedCrc32c(absl::string_view data);

// One TFRecord: the framing around `payload`.
std::string TfRecord(absl::string_view payload);

// The Event protobuf of a Summary with one simple_value per (tag, value).
std::string ScalarEvent(double wall_time, int64_t step,
                        const std::vector<std::pair<std::string, float>>& scalars);

class EventFileWriter {
 public:
  // Creates `dir` (and parents) and DIR/events.out.tfevents.<unix seconds>.<hostname>.<pid>,
  // starting with the file_version event TensorBoard expects. Internal naming the path.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& dir);
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One event of scalars at `step` (the epoch), written through or not at all (a full disk
  // leaves no partial record). Internal naming the path and the reason.
  absl::Status WriteScalars(int64_t step,
                            const std::vector<std::pair<std::string, float>>& scalars);
  const std::string& path() const { return file_->path(); }

 private:
  explicit EventFileWriter(std::unique_ptr<common::AppendFile> file) : file_(std::move(file)) {}
  absl::Status Append(absl::string_view payload);
  std::unique_ptr<common::AppendFile> file_;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_TENSORBOARD_H_
