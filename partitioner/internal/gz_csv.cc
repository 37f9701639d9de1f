#include "partitioner/internal/gz_csv.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace graphshard::partitioner::internal {
namespace {
constexpr size_t kChunk = 1 << 20;
}  // namespace

absl::StatusOr<std::unique_ptr<GzLineReader>> GzLineReader::Open(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::InternalError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  gzbuffer(f, kChunk);
  return std::unique_ptr<GzLineReader>(new GzLineReader(path, f));
}

GzLineReader::~GzLineReader() { gzclose(file_); }

absl::StatusOr<bool> GzLineReader::Next(absl::string_view* line) {
  while (true) {
    size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos || (eof_ && pos_ < buf_.size())) {
      size_t end = nl == std::string::npos ? buf_.size() : nl;
      *line = absl::string_view(buf_).substr(pos_, end - pos_);
      if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
      pos_ = nl == std::string::npos ? buf_.size() : nl + 1;
      ++line_number_;
      return true;
    }
    if (eof_) return false;
    buf_.erase(0, pos_);
    pos_ = 0;
    size_t old = buf_.size();
    buf_.resize(old + kChunk);
    int n = gzread(file_, buf_.data() + old, static_cast<unsigned>(kChunk));
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(file_, &err);
      return absl::DataLossError(
          absl::StrCat(path_, ": corrupt gzip stream after line ", line_number_, ": ", msg));
    }
    buf_.resize(old + static_cast<size_t>(n));
    if (n == 0) eof_ = true;
  }
}

absl::Status GzLineReader::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(path_, ":", line_number_, ": ", what));
}

absl::StatusOr<std::unique_ptr<GzWriter>> GzWriter::Create(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "wb6");
  if (f == nullptr) {
    return absl::InternalError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  return std::unique_ptr<GzWriter>(new GzWriter(path, f));
}

GzWriter::~GzWriter() {
  if (file_ != nullptr) gzclose(file_);
}

absl::Status GzWriter::Flush() {
  if (buf_.empty()) return absl::OkStatus();
  errno = 0;
  int n = gzwrite(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
  if (n != static_cast<int>(buf_.size())) {
    // zlib's own message, or (Z_ERRNO) the system's: "No space left on device".
    int code = Z_OK;
    const char* why = gzerror(file_, &code);
    return absl::InternalError(
        absl::StrCat(path_, ": write failed: ", code == Z_ERRNO ? std::strerror(errno) : why));
  }
  buf_.clear();
  return absl::OkStatus();
}

absl::Status GzWriter::Write(absl::string_view data) {
  buf_.append(data.data(), data.size());
  if (buf_.size() >= kChunk) return Flush();
  return absl::OkStatus();
}

absl::Status GzWriter::Close() {
  absl::Status s = Flush();
  errno = 0;
  int rc = gzclose(file_);  // writes what zlib still holds
  file_ = nullptr;
  if (!s.ok()) return s;
  if (rc != Z_OK) {
    return absl::InternalError(absl::StrCat(
        path_, ": close failed: ", rc == Z_ERRNO ? std::strerror(errno) : "zlib error"));
  }
  return absl::OkStatus();
}

bool ParseInt64(absl::string_view field, int64_t* out) {
  field = absl::StripAsciiWhitespace(field);
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty()) return false;
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), *out);
  return ec == std::errc() && p == field.data() + field.size();
}

bool ParseFloat(absl::string_view field, float* out) {
  field = absl::StripAsciiWhitespace(field);
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty()) return false;
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), *out);
  return ec == std::errc() && p == field.data() + field.size();
}

void AppendFloat(float value, std::string* out) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, ec == std::errc() ? static_cast<size_t>(p - buf) : 0);
}

absl::StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path) {
  auto reader = GzLineReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::vector<int64_t> out;
  absl::string_view line;
  while (true) {
    auto more = (*reader)->Next(&line);
    if (!more.ok()) return more.status();
    if (!*more) break;
    int64_t v = 0;
    if (!ParseInt64(line, &v)) {
      return (*reader)->Error(
          absl::StrCat("expected an integer, got \"", line.substr(0, 40), "\""));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace graphshard::partitioner::internal
