#include "common/npy.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/checksum.h"

namespace graphshard::common {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kPreludeLen = 10;  // magic, version (2 bytes), header length (uint16)

absl::string_view DescrOf(DType dtype) { return dtype == DType::kFloat32 ? "<f4" : "<i8"; }

// Returns the value text of `'key': value` inside a Python dict literal.
absl::StatusOr<absl::string_view> DictValue(absl::string_view dict, absl::string_view key,
                                           const std::string& path) {
  std::string quoted = absl::StrCat("'", key, "'");
  size_t pos = dict.find(quoted);
  if (pos == absl::string_view::npos) {
    return absl::DataLossError(absl::StrCat(path, ": npy header has no '", key, "'"));
  }
  absl::string_view rest = dict.substr(pos + quoted.size());
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, ":")) {
    return absl::DataLossError(absl::StrCat(path, ": npy header: bad entry '", key, "'"));
  }
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!rest.empty() && rest[0] == '(') {
    size_t close = rest.find(')');
    if (close == absl::string_view::npos) {
      return absl::DataLossError(absl::StrCat(path, ": npy header: unterminated shape"));
    }
    return rest.substr(0, close + 1);
  }
  size_t end = rest.find_first_of(",}");
  return absl::StripTrailingAsciiWhitespace(rest.substr(0, end));
}

}  // namespace

absl::string_view DTypeName(DType dtype) {
  return dtype == DType::kFloat32 ? "float32" : "int64";
}

absl::StatusOr<DType> ParseDTypeName(absl::string_view name) {
  if (name == "float32") return DType::kFloat32;
  if (name == "int64") return DType::kInt64;
  return absl::InvalidArgumentError(absl::StrCat("unsupported dtype '", name, "'"));
}

size_t DTypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 8; }

bool ShapeFits(absl::Span<const int64_t> shape, size_t elem_size) {
  int64_t bytes = static_cast<int64_t>(elem_size);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) return false;
  }
  return true;
}

int64_t NpyHeader::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::Span<const char> file, const std::string& path) {
  if (file.size() < kPreludeLen || std::memcmp(file.data(), kMagic, kMagicLen) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not an .npy file (bad magic)"));
  }
  if (file[6] != 1 || file[7] != 0) {
    return absl::DataLossError(absl::StrCat(path, ": unsupported .npy version ",
                                            static_cast<int>(file[6]), ".",
                                            static_cast<int>(file[7]), " (want 1.0)"));
  }
  size_t header_len = static_cast<unsigned char>(file[8]) |
                      (static_cast<size_t>(static_cast<unsigned char>(file[9])) << 8);
  if (file.size() < kPreludeLen + header_len) {
    return absl::DataLossError(absl::StrCat(path, ": truncated .npy header"));
  }
  absl::string_view dict(file.data() + kPreludeLen, header_len);
  NpyHeader header;
  header.data_offset = kPreludeLen + header_len;

  auto descr = DictValue(dict, "descr", path);
  if (!descr.ok()) return descr.status();
  if (*descr == "'<f4'") {
    header.dtype = DType::kFloat32;
  } else if (*descr == "'<i8'") {
    header.dtype = DType::kInt64;
  } else {
    return absl::DataLossError(
        absl::StrCat(path, ": unsupported dtype ", *descr, " (want '<f4' or '<i8')"));
  }
  auto fortran = DictValue(dict, "fortran_order", path);
  if (!fortran.ok()) return fortran.status();
  if (*fortran != "False") {
    return absl::DataLossError(absl::StrCat(path, ": Fortran order is not supported"));
  }
  auto shape = DictValue(dict, "shape", path);
  if (!shape.ok()) return shape.status();
  absl::string_view inner = *shape;
  if (!absl::ConsumePrefix(&inner, "(") || !absl::ConsumeSuffix(&inner, ")")) {
    return absl::DataLossError(absl::StrCat(path, ": bad shape ", *shape));
  }
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return absl::DataLossError(absl::StrCat(path, ": bad shape ", *shape));
    }
    header.shape.push_back(dim);
  }
  if (!ShapeFits(header.shape, DTypeSize(header.dtype))) {
    return absl::DataLossError(absl::StrCat(path, ": shape ", *shape, " is too large"));
  }
  return header;
}

std::string EncodeNpyHeader(DType dtype, absl::Span<const int64_t> shape) {
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string dict = absl::StrCat("{'descr': '", DescrOf(dtype),
                                  "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Pad with spaces so that prelude + dict + '\n' is a multiple of 64 (aligned data).
  size_t total = kPreludeLen + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  out += dict;
  return out;
}

absl::StatusOr<NpyFile> NpyFile::Open(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  auto header = ParseNpyHeader((*file)->bytes(), path);
  if (!header.ok()) return header.status();
  uint64_t want = static_cast<uint64_t>(header->NumElements()) * DTypeSize(header->dtype);
  uint64_t have = (*file)->bytes().size() - header->data_offset;
  if (have != want) {
    return absl::DataLossError(absl::StrCat(path, ": ", have < want ? "truncated" : "trailing bytes",
                                            ": shape needs ", want, " data bytes, file has ",
                                            have));
  }
  return NpyFile(*std::move(file), *std::move(header));
}

absl::Status NpyFile::CheckDType(DType want) const {
  if (header_.dtype == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path(), ": dtype is ", DTypeName(header_.dtype),
                                                 ", expected ", DTypeName(want)));
}

absl::StatusOr<std::unique_ptr<NpyWriter>> NpyWriter::Create(const std::string& path, DType dtype,
                                                             std::vector<int64_t> shape) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::InternalError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  std::string header = EncodeNpyHeader(dtype, shape);
  if (std::fwrite(header.data(), 1, header.size(), f) != header.size()) {
    const int err = errno;
    std::fclose(f);
    return absl::InternalError(absl::StrCat(path, ": write failed: ", std::strerror(err)));
  }
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return std::unique_ptr<NpyWriter>(
      new NpyWriter(path, f, n * DTypeSize(dtype), Crc32(header)));
}

NpyWriter::~NpyWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status NpyWriter::Append(absl::Span<const char> bytes) {
  if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": finished"));
  if (written_bytes_ + bytes.size() > expected_bytes_) {
    return absl::InternalError(absl::StrCat(path_, ": more data than the shape holds"));
  }
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return absl::InternalError(absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  crc_ = Crc32(bytes, crc_);
  written_bytes_ += bytes.size();
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> NpyWriter::Finish() {
  if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": finished"));
  std::FILE* f = file_;
  file_ = nullptr;
  bool ok = std::fflush(f) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::InternalError(absl::StrCat(path_, ": close failed"));
  if (written_bytes_ != expected_bytes_) {
    return absl::InternalError(absl::StrCat(path_, ": wrote ", written_bytes_,
                                            " data bytes, shape needs ", expected_bytes_));
  }
  return crc_;
}

}  // namespace graphshard::common
