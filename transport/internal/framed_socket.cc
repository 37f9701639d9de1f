#include "transport/internal/framed_socket.h"

#include <cstdio>
#include <cstring>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "absl/strings/str_cat.h"

namespace graphshard::transport::internal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Completion condition "all of it", without asio::transfer_all's cap of 64 KiB per system call:
// a 64 MiB array is then read (written) in a few large recv (writev) calls, not 1,024 small
// ones, each a trip through the reactor.
struct TransferAll {
  size_t total;
  size_t operator()(const error_code& ec, size_t done) const {
    return ec ? 0 : total - done;
  }
};

template <typename Buffers>
size_t TotalSize(const Buffers& buffers) {
  return asio::buffer_size(buffers);
}

}  // namespace

FramedSocket::FramedSocket(tcp::socket socket, Role role, std::string peer, SocketOptions options)
    : socket_(std::move(socket)),
      resolver_(socket_.get_executor()),
      timer_(socket_.get_executor()),
      first_frame_timer_(socket_.get_executor()),
      role_(role),
      peer_(std::move(peer)),
      options_(options) {}

void FramedSocket::Connect(std::string host, std::string port, absl::Time deadline,
                           OnFrame on_frame, OnClose on_close) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), host = std::move(host),
                                      port = std::move(port), deadline,
                                      on_frame = std::move(on_frame),
                                      on_close = std::move(on_close)]() mutable {
    self->on_frame_ = std::move(on_frame);
    self->on_close_ = std::move(on_close);
    if (self->closed_) return;
    self->timer_.expires_after(absl::ToChronoNanoseconds(
        std::max(absl::ZeroDuration(), deadline - absl::Now())));
    self->timer_.async_wait([self](const error_code& ec) {
      if (ec || self->connected_) return;
      self->DoClose(absl::UnavailableError(
          absl::StrCat("bulk connection to ", self->peer_, ": connect timed out")));
    });
    self->resolver_.async_resolve(
        host, port, [self](const error_code& ec, const tcp::resolver::results_type& results) {
          if (self->closed_) return;
          if (ec) {
            self->DoClose(absl::UnavailableError(
                absl::StrCat("bulk connection to ", self->peer_, ": cannot resolve: ",
                             ec.message())));
            return;
          }
          asio::async_connect(self->socket_, results,
                              [self](const error_code& ec2, const tcp::endpoint&) {
                                if (self->closed_) return;
                                if (ec2) {
                                  self->DoClose(absl::UnavailableError(
                                      absl::StrCat("bulk connection to ", self->peer_,
                                                   ": cannot connect: ", ec2.message())));
                                  return;
                                }
                                self->timer_.cancel();
                                self->Connected();
                              });
        });
  });
}

void FramedSocket::Start(OnFrame on_frame, OnClose on_close) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), on_frame = std::move(on_frame),
                                      on_close = std::move(on_close)]() mutable {
    self->on_frame_ = std::move(on_frame);
    self->on_close_ = std::move(on_close);
    if (self->closed_) return;
    self->ArmFirstFrameTimer();
    self->Connected();
  });
}

void FramedSocket::Connected() {
  connected_ = true;
  error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  if (options_.socket_buffer_bytes > 0) {
    socket_.set_option(asio::socket_base::send_buffer_size(options_.socket_buffer_bytes), ignored);
    socket_.set_option(asio::socket_base::receive_buffer_size(options_.socket_buffer_bytes),
                       ignored);
  }
  ReadHeader();
  WriteNext();
}

absl::Status FramedSocket::Lost(const char* when, const error_code& ec) const {
  const bool eof = ec == asio::error::eof || ec == asio::error::connection_reset;
  return absl::UnavailableError(absl::StrCat("bulk connection to ", peer_, " ",
                                             eof ? "closed by the peer" : "failed", " ", when,
                                             " (", ec.message(), ")"));
}

void FramedSocket::ReadHeader() {
  // The first byte may take as long as the peer likes (a connection idle between frames); from
  // it on, the frame timer runs: a header sent in part and then held is closed like any frame.
  asio::async_read(socket_, asio::buffer(header_bytes_.data(), 1), TransferAll{1},
                   [self = shared_from_this()](const error_code& ec, size_t n) {
                     if (self->closed_) return;
                     self->bytes_received_ += static_cast<int64_t>(n);
                     if (ec) {
                       self->DoClose(self->Lost("between frames", ec));
                       return;
                     }
                     self->in_frame_ = true;
                     self->ArmFrameTimer();
                     self->ReadHeaderRest();
                   });
}

void FramedSocket::ReadHeaderRest() {
  asio::async_read(socket_, asio::buffer(header_bytes_.data() + 1, kHeaderBytes - 1),
                   TransferAll{kHeaderBytes - 1},
                   [self = shared_from_this()](const error_code& ec, size_t n) {
                     if (self->closed_) return;
                     self->bytes_received_ += static_cast<int64_t>(n);
                     if (ec) {
                       self->DoClose(self->Lost("mid-frame", ec));
                       return;
                     }
                     absl::StatusOr<FrameHeader> header =
                         DecodeHeader(self->header_bytes_,
                                      self->frames_read_ == 0 &&
                                              self->options_.max_first_frame_bytes > 0
                                          ? self->options_.max_first_frame_bytes
                                          : self->options_.max_frame_bytes);
                     if (!header.ok()) {
                       // The id (bytes 8..15) lets the client fail that very request.
                       uint64_t id = 0;
                       std::memcpy(&id, self->header_bytes_.data() + 8, sizeof(id));
                       self->Refuse(header.status(), id, 1);
                       return;
                     }
                     self->frame_ = Frame{};
                     self->frame_.header = *header;
                     self->ReadTable();
                   });
}

void FramedSocket::ArmFirstFrameTimer() {
  if (role_ != Role::kServer || options_.first_frame_timeout <= absl::ZeroDuration()) return;
  first_frame_timer_.expires_after(absl::ToChronoNanoseconds(options_.first_frame_timeout));
  first_frame_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->closed_ || self->frames_read_ > 0) return;
    self->DoClose(absl::UnavailableError(
        absl::StrCat("bulk connection from ", self->peer_, ": no complete frame within ",
                     absl::FormatDuration(self->options_.first_frame_timeout),
                     " of connecting")));
  });
}

void FramedSocket::ArmFrameTimer() {
  timer_.expires_after(absl::ToChronoNanoseconds(options_.frame_timeout));
  timer_.async_wait([self = shared_from_this(), seq = ++frame_seq_](const error_code& ec) {
    // A timer that fired just as its frame completed finds another frame (or none) in reading.
    if (ec || self->closed_ || !self->in_frame_ || seq != self->frame_seq_) return;
    self->DoClose(absl::UnavailableError(
        absl::StrCat("bulk connection to ", self->peer_, ": a frame began, the rest ",
                     "did not within ", absl::FormatDuration(self->options_.frame_timeout))));
  });
}

void FramedSocket::ReadTable() {
  const FrameHeader& h = frame_.header;
  frame_.message.resize(h.message_bytes);
  table_.resize(h.num_arrays);
  std::vector<asio::mutable_buffer> buffers = {
      asio::buffer(frame_.message.data(), frame_.message.size()),
      asio::buffer(table_.data(), table_.size() * sizeof(uint64_t))};
  asio::async_read(socket_, buffers, TransferAll{TotalSize(buffers)},
                   [self = shared_from_this()](const error_code& ec, size_t n) {
    if (self->closed_) return;
    self->bytes_received_ += static_cast<int64_t>(n);
    if (ec) {
      self->DoClose(self->Lost("mid-frame", ec));
      return;
    }
    const FrameHeader& header = self->frame_.header;
    absl::Status table = CheckArrayTable(header, self->table_);
    if (!table.ok()) {
      self->Refuse(table, header.request_id, header.kind);
      return;
    }
    self->ReadArrays();
  });
}

void FramedSocket::ReadArrays() {
  std::vector<std::vector<char>>& arrays = frame_.body.arrays;
  arrays.resize(table_.size());
  std::vector<asio::mutable_buffer> buffers;
  buffers.reserve(table_.size());
  for (size_t i = 0; i < table_.size(); ++i) {
    arrays[i].resize(table_[i]);
    if (table_[i] > 0) buffers.push_back(asio::buffer(arrays[i].data(), arrays[i].size()));
  }
  asio::async_read(socket_, buffers, TransferAll{TotalSize(buffers)},
                   [self = shared_from_this()](const error_code& ec, size_t n) {
                     if (self->closed_) return;
                     self->bytes_received_ += static_cast<int64_t>(n);
                     if (ec) {
                       self->DoClose(self->Lost("mid-frame", ec));
                       return;
                     }
                     self->timer_.cancel();
                     self->in_frame_ = false;
                     Frame frame = std::move(self->frame_);
                     self->frame_ = Frame{};
                     if (++self->frames_read_ == 1) self->first_frame_timer_.cancel();
                     self->on_frame_(std::move(frame));
                     if (!self->closed_) self->ReadHeader();
                   });
}

void FramedSocket::Refuse(absl::Status why, uint64_t request_id, uint16_t kind) {
  timer_.cancel();
  if (role_ == Role::kClient) {
    DoClose(absl::DataLossError(
        absl::StrCat("bulk answer from ", peer_, " refused: ", why.message())));
    return;
  }
  // Tell the client why, then close: after a bad frame the byte stream cannot be trusted.
  std::fprintf(stderr, "graphshard bulk transport: refused a frame from %s: %s\n", peer_.c_str(),
               std::string(why.message()).c_str());
  auto out = std::make_unique<Outgoing>();
  FrameHeader h;
  h.kind = kind == 0 ? 1 : kind;
  h.request_id = request_id;
  h.status = why.ok() ? absl::StatusCode::kInvalidArgument : why.code();
  h.flags = kFlagAnswer;
  out->message = std::string(why.message()).substr(0, kMaxMessageBytes);
  h.message_bytes = static_cast<uint32_t>(out->message.size());
  h.payload_bytes = h.message_bytes;
  out->header = EncodeHeader(h);
  out->close_after = true;
  // Everything queued before it is dropped: only the refusal goes out.
  DropQueued();
  Enqueue(std::move(out));
}

void FramedSocket::Send(FrameHeader header, std::string message, std::unique_ptr<Body> body,
                        std::function<bool()> wanted) {
  auto out = std::make_unique<Outgoing>();
  if (body != nullptr) out->arrays = body->Arrays();
  out->table.reserve(out->arrays.size());
  for (const absl::Span<const char>& a : out->arrays) out->table.push_back(a.size());
  out->message = std::move(message);
  if (out->message.size() > kMaxMessageBytes) out->message.resize(kMaxMessageBytes);
  header.message_bytes = static_cast<uint32_t>(out->message.size());
  header.num_arrays = static_cast<uint32_t>(out->arrays.size());
  header.payload_bytes = PayloadBytes(out->message.size(), out->table);
  out->header = EncodeHeader(header);
  out->body = std::move(body);
  out->wanted = std::move(wanted);
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), out = std::move(out)]() mutable {
               self->Enqueue(std::move(out));
             });
}

void FramedSocket::Enqueue(std::unique_ptr<Outgoing> out) {
  if (closed_) return;
  queue_.push_back(std::move(out));
  WriteNext();
}

void FramedSocket::WriteNext() {
  if (writing_ || !connected_ || closed_) return;
  while (!queue_.empty() && queue_.front()->wanted && !queue_.front()->wanted()) {
    queue_.pop_front();
  }
  if (queue_.empty()) return;
  Outgoing& out = *queue_.front();
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(3 + out.arrays.size());
  buffers.push_back(asio::buffer(out.header));
  if (!out.message.empty()) buffers.push_back(asio::buffer(out.message));
  if (!out.table.empty()) {
    buffers.push_back(asio::buffer(out.table.data(), out.table.size() * sizeof(uint64_t)));
  }
  for (const absl::Span<const char>& a : out.arrays) {
    if (!a.empty()) buffers.push_back(asio::buffer(a.data(), a.size()));
  }
  writing_ = true;
  asio::async_write(socket_, buffers, TransferAll{TotalSize(buffers)},
                    [self = shared_from_this()](const error_code& ec, size_t n) {
    self->writing_ = false;
    self->bytes_sent_ += static_cast<int64_t>(n);
    if (self->closed_) {
      self->queue_.clear();  // the frame written (or aborted) was kept alive until now
      return;
    }
    if (ec) {
      self->DoClose(self->Lost("while writing", ec));
      return;
    }
    const bool close_after = self->queue_.front()->close_after;
    self->queue_.pop_front();
    if (close_after) {
      self->DoClose(absl::InvalidArgumentError(
          absl::StrCat("bulk connection from ", self->peer_, " closed after a refused frame")));
      return;
    }
    self->WriteNext();
  });
}

void FramedSocket::RefuseAndClose(absl::Status why, uint64_t request_id, uint16_t kind) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), why = std::move(why), request_id,
                                      kind] {
    if (!self->closed_) self->Refuse(why, request_id, kind);
  });
}

void FramedSocket::DropQueued() {
  // A frame being written stays until its handler runs: the write may still read its buffers.
  while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
}

void FramedSocket::Close(absl::Status why) {
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), why = std::move(why)] { self->DoClose(why); });
}

void FramedSocket::DoClose(absl::Status why) {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  timer_.cancel();
  first_frame_timer_.cancel();
  resolver_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  DropQueued();
  if (on_close_) {
    OnClose on_close = std::move(on_close_);
    on_close_ = nullptr;
    on_close(std::move(why));
  }
  on_frame_ = nullptr;
}

absl::Status SplitAddress(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bulk address '", address, "' is not host:port"));
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = address.substr(colon + 1);
  return absl::OkStatus();
}

}  // namespace graphshard::transport::internal
