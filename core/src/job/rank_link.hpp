#pragma once

// What travels between two ranks, and the sockets it travels on.
//
// A frame is a fixed header (a magic number, the kind, the protocol version, the payload's
// length) and at most `frame_payload_max` bytes: a peer that sends anything else is not a rank of
// this protocol, and its connection is refused or counted as ended. The sockets are Unix-domain
// stream sockets in the job folder: created 0600, and every connection's peer checked to run as
// this user (SO_PEERCRED) before a byte of it is trusted.

#include "tandem/core/result.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::job_detail {

using Clock = std::chrono::steady_clock;

/// The largest payload a frame carries; a longer one ends the connection. A failure report
/// with its chain fits many times over.
constexpr std::uint32_t frame_payload_max = std::uint32_t{1} << 20;
/// The protocol version every frame carries; a rank of another version is refused.
constexpr std::uint16_t protocol_version = 5;

/// What a frame says.
enum class FrameKind : std::uint16_t {
    /// Connector to acceptor: rank, world size, job id.
    hello = 1,
    /// Acceptor to connector: the hello was accepted; the acceptor's rank, world size, job id.
    welcome = 2,
    /// Acceptor to connector: the hello was refused; the payload says why.
    refusal = 3,
    /// Either way, after the join: this rank leaves the job.
    bye = 4,
    /// After the join: this rank's runtime (its id, backend and device count), or none.
    runtime = 5,
    /// The owner of shared memory to every other rank: a name now names it. Carries the
    /// descriptor of the memory's region the first time a region goes to a rank.
    publish = 6,
    /// A question to the owner of shared memory, or an effect on its claims; numbered.
    request = 7,
    /// The owner's answer to a request, by its number.
    reply = 8,
    /// A rank reached the barrier of the given generation.
    barrier = 9,
    /// The recorder of an event to every other rank: a name now names it, and the board's
    /// counter of its stream says when it is reached.
    publish_event = 10,
    /// A rank reached the meeting of the given generation with this rank alone (a send or a
    /// receive between the two).
    meeting = 11,
    /// A rank reached the exchange of the given generation, with the value it gives.
    exchange = 12,
};

/// One frame as received.
struct Frame {
    FrameKind kind = FrameKind::bye;
    std::string payload;
};

/// Who a rank says it is: in a hello and in a welcome.
struct RankIntroduction {
    std::uint32_t rank = 0;
    std::uint32_t world_size = 0;
    std::string job_id;
};

/// The payload of a hello or a welcome.
std::string encode(const RankIntroduction& introduction);
/// A hello's or welcome's payload read back; nullopt when it is malformed.
std::optional<RankIntroduction> decode_introduction(std::string_view payload);

/// Sends one frame, whole. `PeerUnreachable` when the connection is gone.
Status send_frame(int descriptor, FrameKind kind, std::string_view payload);
/// Sends one frame with `passed` (an open descriptor, or -1 for none) attached to its first
/// byte (SCM_RIGHTS): the receiver gets its own descriptor of the same open file.
Status send_frame(int descriptor, FrameKind kind, std::string_view payload, int passed);
/// Reads what `descriptor` holds now, without waiting, appending bytes to `buffer` and the
/// descriptors passed with them to `passed`, in order. False when the connection ended (or
/// failed); true otherwise, with nothing read when nothing was there.
bool receive_available(int descriptor, std::string& buffer, std::vector<int>& passed);
/// Receives one frame, waiting until `deadline`. `PeerUnreachable` on a timeout, an end of the
/// connection or a malformed frame, saying which.
Result<Frame> receive_frame(int descriptor, Clock::time_point deadline);
/// Takes one whole frame off the front of `buffer` (bytes read so far from a connection):
/// nullopt when the buffer holds less than a frame; `PeerUnreachable` when it is malformed.
Result<std::optional<Frame>> take_frame(std::string& buffer);

/// The path of rank `rank`'s socket in `folder`.
std::string socket_path(const std::string& folder, std::uint32_t rank);
/// Listens on a new socket at `path` (0600), replacing a socket file left there.
Result<int> listen_at(const std::string& path, int backlog);
/// Connects to the socket at `path`; nullopt while nobody listens there yet.
Result<std::optional<int>> connect_to(const std::string& path);

/// The peer of a connection as the system saw it when it connected.
struct PeerCredentials {
    pid_t pid = 0;
    uid_t uid = 0;
};
/// The credentials of `descriptor`'s peer (SO_PEERCRED).
Result<PeerCredentials> peer_credentials(int descriptor);
/// `InvalidArgument` naming both users when the peer of `descriptor` runs as another user than
/// `expected_uid`; the peer's credentials otherwise.
Result<PeerCredentials> check_peer_user(int descriptor, uid_t expected_uid);

}  // namespace tandem::job_detail
