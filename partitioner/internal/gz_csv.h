#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_GZ_CSV_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_GZ_CSV_H_

// Line-by-line reading and writing of gzip-compressed CSV files (zlib's gz* API; plain files
// are read transparently too), and strict number parsing. Not thread-safe.

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::partitioner::internal {

class GzLineReader {
 public:
  // NotFound if `path` does not exist, Internal if it cannot be opened.
  static absl::StatusOr<std::unique_ptr<GzLineReader>> Open(const std::string& path);
  ~GzLineReader();
  GzLineReader(const GzLineReader&) = delete;
  GzLineReader& operator=(const GzLineReader&) = delete;

  // Next line without its "\n" / "\r\n"; false at the end; DataLoss on a corrupt stream.
  // The view stays valid until the next call.
  absl::StatusOr<bool> Next(absl::string_view* line);
  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // InvalidArgument "<path>:<line>: <what>".
  absl::Status Error(absl::string_view what) const;

 private:
  GzLineReader(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  gzFile file_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

class GzWriter {
 public:
  // Internal naming the path on failure.
  static absl::StatusOr<std::unique_ptr<GzWriter>> Create(const std::string& path);
  ~GzWriter();
  GzWriter(const GzWriter&) = delete;
  GzWriter& operator=(const GzWriter&) = delete;
  // Buffered; errors may surface only at Close().
  absl::Status Write(absl::string_view data);
  absl::Status Close();

 private:
  GzWriter(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}
  absl::Status Flush();
  std::string path_;
  gzFile file_;
  std::string buf_;
};

// Strict: the whole field (surrounding spaces allowed) must be the number.
bool ParseInt64(absl::string_view field, int64_t* out);
bool ParseFloat(absl::string_view field, float* out);
// Shortest text that reads back as the same float.
void AppendFloat(float value, std::string* out);

// Reads a file of one integer per line (OGB split files, counts).
absl::StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path);

// Writes `rows` lines to a new gzip file: row(r, &line) fills line r (without the newline).
template <typename Fn>
absl::Status WriteGzLines(const std::string& path, int64_t rows, Fn&& row) {
  absl::StatusOr<std::unique_ptr<GzWriter>> writer = GzWriter::Create(path);
  if (!writer.ok()) return writer.status();
  std::string line;
  for (int64_t r = 0; r < rows; ++r) {
    line.clear();
    row(r, &line);
    line.push_back('\n');
    absl::Status s = (*writer)->Write(line);
    if (!s.ok()) return s;
  }
  return (*writer)->Close();
}

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_GZ_CSV_H_
