// What a program written against the user API cannot do, checked at compile time. It includes
// every user header and nothing under `tandem/backend/`, then asks, with requires-expressions,
// for each construction that once let a program reach past the contract: each must not compile.
// The oracle: nothing a program can name reads or changes claims, or makes a backend touch
// memory it did not allocate, except through a client's checked calls.

#include <tandem/core/capture_graph.hpp>
#include <tandem/core/client.hpp>
#include <tandem/core/closest_name.hpp>
#include <tandem/core/copy_descriptor.hpp>
#include <tandem/core/dlpack.hpp>
#include <tandem/core/error.hpp>
#include <tandem/core/event.hpp>
#include <tandem/core/extent.hpp>
#include <tandem/core/external_work.hpp>
#include <tandem/core/fault.hpp>
#include <tandem/core/foreign_memory.hpp>
#include <tandem/core/handle.hpp>
#include <tandem/core/host_kernel_context.hpp>
#include <tandem/core/host_kernels.hpp>
#include <tandem/core/ids.hpp>
#include <tandem/core/kernel.hpp>
#include <tandem/core/kernel_entry.hpp>
#include <tandem/core/kernel_resource.hpp>
#include <tandem/core/kernels/catalog.hpp>
#include <tandem/core/memory_reference.hpp>
#include <tandem/core/memory_usage.hpp>
#include <tandem/core/peer_binding.hpp>
#include <tandem/core/peer_memory.hpp>
#include <tandem/core/pool_options.hpp>
#include <tandem/core/reference_runtime.hpp>
#include <tandem/core/result.hpp>
#include <tandem/core/runtime.hpp>
#include <tandem/core/runtime_key.hpp>
#include <tandem/core/version.hpp>
#include <tandem/sim/kernel_registry.hpp>
#include <tandem/sim/runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>

// The backend's classes, as a program would name them to reach them. Declaring them is all a
// program can do: no user header defines them.
namespace tandem {
class Server;
class ClaimStore;
class SettlePipeline;
class HeldRanges;
class MemoryManager;
class Work;
struct LaunchRequest;
struct ReadBack;
struct CapturedWork;
}  // namespace tandem

namespace {

using namespace tandem;

template <typename T>
concept complete = requires {
    sizeof(T);
};

// No user header brings in the backend contract.
static_assert(!complete<Server>, "a user header defines Server");
static_assert(!complete<ClaimStore>, "a user header defines ClaimStore");
static_assert(!complete<SettlePipeline>, "a user header defines SettlePipeline");
static_assert(!complete<HeldRanges>, "a user header defines HeldRanges");
static_assert(!complete<MemoryManager>, "a user header defines MemoryManager");
static_assert(!complete<Work>, "a user header defines Work");
static_assert(!complete<LaunchRequest>, "a user header defines LaunchRequest");
static_assert(!complete<ReadBack>, "a user header defines ReadBack");
static_assert(!complete<CapturedWork>, "a user header defines CapturedWork");

// No key: every constructor that takes one is out of reach.
static_assert(!std::is_default_constructible_v<RuntimeKey>, "a program can make a RuntimeKey");
template <typename K>
concept brace_made = requires {
    K{};
};
static_assert(!brace_made<RuntimeKey>, "a program can brace-initialise a RuntimeKey");

// A client hands out no server.
template <typename C>
concept hands_out_server = requires(const C& client) {
    client.server();
};
static_assert(!hands_out_server<Client>, "Client::server() is reachable");

// No reference to memory over an allocation a program describes.
template <typename M>
concept creates_from_info = requires(const AllocationInfo& info) {
    M::create(info, nullptr);
};
static_assert(!creates_from_info<ManagedMemoryHandle>,
              "ManagedMemoryHandle::create takes an allocation without a key");
template <typename M>
concept adopts_control = requires(detail::MemoryControl& control) {
    M::adopt(control);
};
static_assert(!adopts_control<ManagedMemoryHandle>,
              "ManagedMemoryHandle::adopt takes a control block without a key");

// No binding of an extent a program chooses.
static_assert(!std::is_constructible_v<BufferBinding, ManagedMemoryBinding, ServiceId, StreamId,
                                       Extent, std::optional<PeerMemory>>,
              "BufferBinding is constructible from any extent and service");

// A capture graph's replay is the backend's.
template <typename G>
concept sets_native = requires(G& graph) {
    graph.set_native(std::shared_ptr<void>());
};
static_assert(!sets_native<CaptureGraph>, "CaptureGraph::set_native is reachable");
template <typename G>
concept lists_launches = requires(const G& graph) {
    graph.launches();
};
static_assert(!lists_launches<CaptureGraph>, "a capture graph's launches are reachable");

// An event is issued by a runtime, never made up or edited.
static_assert(!std::is_constructible_v<Event, ServiceId, StreamId, std::uint64_t>,
              "an Event can be built from its fields");
template <typename E>
concept aggregate_event = requires {
    E{ServiceId{}, StreamId{}, std::uint64_t{1}};
};
static_assert(!aggregate_event<Event>, "an Event can be brace-built from its fields");
template <typename E>
concept edits_sequence = requires(E& event) {
    event.sequence = std::uint64_t{1};
};
static_assert(!edits_sequence<Event>, "an Event's sequence can be written");

// A pending read's buffer and state are the backend's.
static_assert(
    !std::is_constructible_v<PendingRead, Event, std::span<std::byte>, std::shared_ptr<ReadBack>>,
    "a PendingRead can be built from its fields");
template <typename R>
concept edits_buffer = requires(R& read, std::span<std::byte> other) {
    read.into = other;
};
static_assert(!edits_buffer<PendingRead>, "a PendingRead's buffer can be replaced");

// Shared memory's failure slot is the settle pipeline's.
template <typename P>
concept repairs = requires(const P& memory) {
    memory.repair();
};
static_assert(!repairs<PeerMemory>, "PeerMemory::repair is reachable");
template <typename P>
concept fails = requires(const P& memory, Error error) {
    memory.fail(error);
};
static_assert(!fails<PeerMemory>, "PeerMemory::fail is reachable");

}  // namespace

int main() { return 0; }
