// Frames and Unix-domain sockets between ranks.

#include "rank_link.hpp"

#include <poll.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace tandem::job_detail {
namespace {

constexpr std::uint32_t frame_magic = 0x4a444e54;  // "TNDJ" in little-endian bytes
constexpr std::size_t header_bytes = 12;

Error unreachable(const std::string& message) { return Error(ErrorKind::PeerUnreachable, message); }

void put_u32(std::string& out, std::uint32_t value) {
    for (int shift = 0; shift < 32; shift += 8) {
        out.push_back(static_cast<char>((value >> shift) & 0xff));
    }
}

std::uint32_t get_u32(std::string_view in, std::size_t at) {
    std::uint32_t value = 0;
    for (int index = 3; index >= 0; --index) {
        value = (value << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(index)]);
    }
    return value;
}

Result<sockaddr_un> address_of(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) {
        return Error::invalid_argument("socket path " + path + " is longer than the " +
                                       std::to_string(sizeof address.sun_path - 1) +
                                       " bytes a Unix-domain socket allows");
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

/// A new Unix-domain stream socket, closed on exec.
Result<int> new_socket() {
    const int descriptor = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (descriptor < 0) {
        return unreachable(std::string("cannot create a socket: ") + std::strerror(errno));
    }
    return descriptor;
}

}  // namespace

std::string encode(const RankIntroduction& introduction) {
    std::string payload;
    put_u32(payload, introduction.rank);
    put_u32(payload, introduction.world_size);
    payload += introduction.job_id;
    return payload;
}

std::optional<RankIntroduction> decode_introduction(std::string_view payload) {
    if (payload.size() < 8) {
        return std::nullopt;
    }
    return RankIntroduction{get_u32(payload, 0), get_u32(payload, 4),
                            std::string(payload.substr(8))};
}

Status send_frame(int descriptor, FrameKind kind, std::string_view payload) {
    return send_frame(descriptor, kind, payload, -1);
}

Status send_frame(int descriptor, FrameKind kind, std::string_view payload, int passed) {
    std::string bytes;
    put_u32(bytes, frame_magic);
    put_u32(bytes, static_cast<std::uint32_t>(kind) |
                       (static_cast<std::uint32_t>(protocol_version) << 16));
    put_u32(bytes, static_cast<std::uint32_t>(payload.size()));
    bytes += payload;
    std::size_t sent = 0;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    while (sent < bytes.size()) {
        iovec piece{bytes.data() + sent, bytes.size() - sent};
        msghdr message{};
        message.msg_iov = &piece;
        message.msg_iovlen = 1;
        if (sent == 0 && passed >= 0) {  // With the first byte, so it arrives with the frame.
            message.msg_control = control;
            message.msg_controllen = sizeof control;
            cmsghdr* header = CMSG_FIRSTHDR(&message);
            header->cmsg_level = SOL_SOCKET;
            header->cmsg_type = SCM_RIGHTS;
            header->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(header), &passed, sizeof(int));
        }
        const ssize_t wrote = ::sendmsg(descriptor, &message, MSG_NOSIGNAL);
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote <= 0) {
            return unreachable(std::string("sending to a rank failed: ") + std::strerror(errno));
        }
        sent += static_cast<std::size_t>(wrote);
    }
    return {};
}

bool receive_available(int descriptor, std::string& buffer, std::vector<int>& passed) {
    char bytes[16384];
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    iovec piece{bytes, sizeof bytes};
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(descriptor, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0) {
        return errno == EINTR || errno == EAGAIN;
    }
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
            const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t index = 0; index < count; ++index) {
                int received = -1;
                std::memcpy(&received, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
                passed.push_back(received);
            }
        }
    }
    if (got == 0) {
        return false;
    }
    buffer.append(bytes, static_cast<std::size_t>(got));
    return true;
}

Result<std::optional<Frame>> take_frame(std::string& buffer) {
    if (buffer.size() < header_bytes) {
        return std::optional<Frame>{};
    }
    const std::uint32_t kind_and_version = get_u32(buffer, 4);
    const std::uint32_t length = get_u32(buffer, 8);
    if (get_u32(buffer, 0) != frame_magic || length > frame_payload_max) {
        return unreachable("a rank sent bytes that are not a frame of this protocol");
    }
    if ((kind_and_version >> 16) != protocol_version) {
        return unreachable("a rank speaks protocol version " +
                           std::to_string(kind_and_version >> 16) + ", this one " +
                           std::to_string(protocol_version));
    }
    if (buffer.size() < header_bytes + length) {
        return std::optional<Frame>{};
    }
    Frame frame{static_cast<FrameKind>(kind_and_version & 0xffff),
                buffer.substr(header_bytes, length)};
    buffer.erase(0, header_bytes + length);
    return std::optional<Frame>(std::move(frame));
}

Result<Frame> receive_frame(int descriptor, Clock::time_point deadline) {
    std::string buffer;
    while (true) {
        Result<std::optional<Frame>> frame = take_frame(buffer);
        if (!frame) {
            return frame.error();
        }
        if (*frame) {
            return std::move(**frame);
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd waiting{descriptor, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&waiting, 1, static_cast<int>(left.count())) == 0) {
            return unreachable("a rank sent no whole frame before the deadline");
        }
        // Never past the frame: what follows it (the first frames after the join) is the
        // watcher's to read.
        const std::size_t wanted = buffer.size() < header_bytes
                                       ? header_bytes - buffer.size()
                                       : header_bytes + get_u32(buffer, 8) - buffer.size();
        char bytes[4096];
        const ssize_t got = ::recv(descriptor, bytes, std::min(wanted, sizeof bytes), 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return unreachable(got == 0 ? "a rank closed its connection while joining"
                                        : std::string("reading from a rank failed: ") +
                                              std::strerror(errno));
        }
        buffer.append(bytes, static_cast<std::size_t>(got));
    }
}

std::string socket_path(const std::string& folder, std::uint32_t rank) {
    return folder + "/rank-" + std::to_string(rank) + ".sock";
}

namespace {

/// The address of `path` and a new socket to bind or connect there.
Result<std::pair<sockaddr_un, int>> socket_for(const std::string& path) {
    Result<sockaddr_un> address = address_of(path);
    if (!address) {
        return address.error();
    }
    Result<int> created = new_socket();
    if (!created) {
        return created.error();
    }
    return std::pair<sockaddr_un, int>{*address, *created};
}

}  // namespace

Result<int> listen_at(const std::string& path, int backlog) {
    Result<std::pair<sockaddr_un, int>> socket = socket_for(path);
    if (!socket) {
        return socket.error();
    }
    const auto [address, descriptor] = *socket;
    ::unlink(path.c_str());
    // The folder is 0700, so nobody else reaches the socket between bind and chmod.
    if (::bind(descriptor, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::chmod(path.c_str(), 0600) != 0 || ::listen(descriptor, backlog) != 0) {
        const int error = errno;
        ::close(descriptor);
        ::unlink(path.c_str());
        return unreachable("cannot listen at " + path + ": " + std::strerror(error));
    }
    return descriptor;
}

Result<std::optional<int>> connect_to(const std::string& path) {
    Result<std::pair<sockaddr_un, int>> socket = socket_for(path);
    if (!socket) {
        return socket.error();
    }
    const auto [address, descriptor] = *socket;
    if (::connect(descriptor, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
        return std::optional<int>(descriptor);
    }
    const int error = errno;
    ::close(descriptor);
    // Not there yet, or there and not listening yet: the rank is still on its way.
    if (error == ENOENT || error == ECONNREFUSED || error == EAGAIN || error == EINTR) {
        return std::optional<int>{};
    }
    return unreachable("cannot connect to " + path + ": " + std::strerror(error));
}

Result<PeerCredentials> peer_credentials(int descriptor) {
    ucred credentials{};
    socklen_t size = sizeof credentials;
    if (::getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
        return unreachable(std::string("cannot read a connection's peer: ") + std::strerror(errno));
    }
    return PeerCredentials{credentials.pid, credentials.uid};
}

Result<PeerCredentials> check_peer_user(int descriptor, uid_t expected_uid) {
    Result<PeerCredentials> peer = peer_credentials(descriptor);
    if (peer && peer->uid != expected_uid) {
        return Error::invalid_argument("a connection to the job came from process " +
                                       std::to_string(peer->pid) + " of uid " +
                                       std::to_string(peer->uid) + ", not of this user (uid " +
                                       std::to_string(expected_uid) + "): refused");
    }
    return peer;
}

}  // namespace tandem::job_detail
