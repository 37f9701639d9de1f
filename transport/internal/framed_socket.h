#ifndef GRAPHSHARD_TRANSPORT_INTERNAL_FRAMED_SOCKET_H_
#define GRAPHSHARD_TRANSPORT_INTERNAL_FRAMED_SOCKET_H_

// One TCP connection carrying frames (transport/frame.h) both ways, for AsioClient and
// AsioServer. All of its state lives on the socket's strand; the public methods are
// thread-safe. Reads go header -> message and array table -> arrays, each array straight into
// its own buffer (one scatter read); writes are one gather write per frame, straight from the
// body's spans. Every wait inside a frame has a timer: once a frame's first byte has arrived,
// the rest of the frame must follow within frame_timeout, or the connection is closed; a server's
// connection must complete its first frame within first_frame_timeout of being accepted.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "transport/frame.h"
#include "transport/transport.h"

namespace graphshard::transport::internal {

struct SocketOptions {
  uint64_t max_frame_bytes = uint64_t{1} << 30;
  absl::Duration frame_timeout = absl::Seconds(60);
  int socket_buffer_bytes = 0;  // SO_SNDBUF / SO_RCVBUF; 0 = the kernel's autotuning
  // The first incoming frame's limit (0 = max_frame_bytes): a server that wants a hello first
  // reads no more than that from a peer not yet authenticated.
  uint64_t max_first_frame_bytes = 0;
  // Server: a connection must complete its first frame (the hello, with a token) within this
  // of being accepted, or it is closed (0 = no limit).
  absl::Duration first_frame_timeout = absl::ZeroDuration();
};

struct Frame {
  FrameHeader header;
  std::string message;
  Received body;
};

class FramedSocket : public std::enable_shared_from_this<FramedSocket> {
 public:
  using OnFrame = std::function<void(Frame)>;             // on the strand, in arrival order
  using OnClose = std::function<void(absl::Status why)>;  // once, on the strand
  // kServer: a malformed incoming frame is answered with an InvalidArgument frame naming the
  // problem, then the connection is closed. kClient: closed with DataLoss.
  enum class Role { kClient, kServer };

  // `socket` must have a strand as its executor. `peer` names the other side in messages.
  FramedSocket(boost::asio::ip::tcp::socket socket, Role role, std::string peer,
               SocketOptions options);

  // Client: resolves and connects `host`:`port` (closing with Unavailable, naming the peer, if
  // that fails or `deadline` passes first), then reads. Frames sent meanwhile wait.
  void Connect(std::string host, std::string port, absl::Time deadline, OnFrame on_frame,
               OnClose on_close);
  // Server: the socket is connected; reads.
  void Start(OnFrame on_frame, OnClose on_close);
  // Queues a frame (header's payload size and array count are filled in here). `wanted`, if
  // set, is asked on the strand just before the write starts: false drops the frame.
  void Send(FrameHeader header, std::string message, std::unique_ptr<Body> body,
            std::function<bool()> wanted = {});
  // Closes now; OnClose(why) unless already closed.
  void Close(absl::Status why);
  // As a malformed frame: answers request `request_id` with why's code and message (server
  // role; the client role closes with DataLoss), then closes.
  void RefuseAndClose(absl::Status why, uint64_t request_id, uint16_t kind);

  const std::string& peer() const { return peer_; }
  int64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }
  // Complete frames read so far (thread-safe): 0 for a connection that has proved nothing yet.
  uint64_t frames_read() const { return frames_read_.load(std::memory_order_relaxed); }
  int64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }

 private:
  struct Outgoing {
    HeaderBytes header;
    std::string message;
    std::vector<uint64_t> table;
    std::unique_ptr<Body> body;
    std::vector<absl::Span<const char>> arrays;
    std::function<bool()> wanted;
    bool close_after = false;
  };
  void Connected();
  void ReadHeader();
  void ReadTable();
  void ReadArrays();
  void Refuse(absl::Status why, uint64_t request_id, uint16_t kind);
  void Enqueue(std::unique_ptr<Outgoing> out);
  void WriteNext();
  void DoClose(absl::Status why);
  void DropQueued();
  void ReadHeaderRest();
  void ArmFrameTimer();
  void ArmFirstFrameTimer();  // server: the first frame's deadline (first_frame_timeout)
  absl::Status Lost(const char* when, const boost::system::error_code& ec) const;

  boost::asio::ip::tcp::socket socket_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer first_frame_timer_;
  const Role role_;
  const std::string peer_;
  const SocketOptions options_;
  OnFrame on_frame_;
  OnClose on_close_;
  bool connected_ = false;
  bool closed_ = false;
  bool writing_ = false;
  bool in_frame_ = false;     // a frame's first byte has arrived, the rest of it has not
  uint64_t frame_seq_ = 0;    // which frame the frame timer is for
  std::atomic<uint64_t> frames_read_{0};  // complete frames handed to on_frame_
  std::deque<std::unique_ptr<Outgoing>> queue_;
  // The frame being read.
  HeaderBytes header_bytes_{};
  Frame frame_;
  std::vector<uint64_t> table_;
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> bytes_received_{0};
};

// "host:port" (host may be [v6]) split in two; InvalidArgument naming the address otherwise.
absl::Status SplitAddress(const std::string& address, std::string* host, std::string* port);

}  // namespace graphshard::transport::internal

#endif  // GRAPHSHARD_TRANSPORT_INTERNAL_FRAMED_SOCKET_H_
