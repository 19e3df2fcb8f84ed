// An NCCL communicator's life: a unique id, joining the ranks (directly or through a job), the
// moves, the abort and the end. The collectives are in nccl_collectives.cpp, the steps they
// take in nccl_steps.cpp.

#include "device_guard.hpp"
#include "nccl_state.hpp"

#include <cstring>
#include <string>
#include <utility>

namespace tandem::cuda {
namespace {

/// NCCL as this process loaded it, or why it cannot be used.
Result<const NcclEntryPoints*> usable_nccl() {
    const NcclLoad& load = nccl_library();
    if (!load.usable) {
        return Error::invalid_argument("NCCL cannot be used: " + load.problem + " (library " +
                                       load.library +
                                       "; set TANDEM_NCCL_LIBRARY to its path, and see what "
                                       "`tandem doctor` says)");
    }
    return &load.entry_points;
}

/// The CUDA ordinal of `device`, or why it is no device NCCL can work on.
Result<int> gpu_of(Client& device) {
    Result<NativeView> native = device.native(device.default_stream());
    if (!native) {
        return native.error();
    }
    if (!native->on_gpu) {
        return Error::invalid_argument(
            "an NCCL communicator takes a device of the cuda backend, and " +
            to_string(device.service()) +
            " keeps its memory on the host (on host backends use Job's collectives or "
            "tandem::mpi::Communicator)");
    }
    return native->ordinal;
}

}  // namespace

Result<NcclUniqueId> NcclCommunicator::unique_id() {
    Result<const NcclEntryPoints*> nccl = usable_nccl();
    if (!nccl) {
        return nccl.error();
    }
    nccl::UniqueId id{};
    if (nccl::Result made = (*nccl)->get_unique_id(&id); made != nccl::Result::success) {
        return nccl_error(**nccl, made, "ncclGetUniqueId");
    }
    NcclUniqueId bytes;
    static_assert(sizeof(bytes.bytes) == sizeof(id.internal));
    std::memcpy(bytes.bytes.data(), id.internal, sizeof(id.internal));
    return bytes;
}

Result<NcclCommunicator> NcclCommunicator::create(Client device, int rank, int size,
                                                  const NcclUniqueId& id, NcclOptions options) {
    Result<const NcclEntryPoints*> nccl = usable_nccl();
    if (!nccl) {
        return nccl.error();
    }
    if (size < 1 || rank < 0 || rank >= size) {
        return Error::invalid_argument("rank " + std::to_string(rank) +
                                       " is no rank of a communicator of " + std::to_string(size));
    }
    Result<int> ordinal = gpu_of(device);
    if (!ordinal) {
        return ordinal.error();
    }
    // The agreement's words first: a device that cannot give 80 bytes fails before NCCL starts.
    Result<Handle> agreement =
        device.allocate(10 * sizeof(std::uint64_t), {.label = "nccl agreement"});
    if (!agreement) {
        return agreement.error();
    }
    auto state = std::make_shared<State>(device, std::move(*agreement));
    state->nccl = *nccl;
    state->rank = rank;
    state->size = size;
    state->options = options;
    nccl::UniqueId raw{};
    std::memcpy(raw.internal, id.bytes.data(), sizeof(raw.internal));
    DeviceGuard current(*ordinal);  // NCCL works on the calling thread's current device.
    if (nccl::Result joined = (*nccl)->comm_init_rank(&state->communicator, size, raw, rank);
        joined != nccl::Result::success) {
        state->communicator = nullptr;
        return Error::invalid_argument(
            nccl_error(
                **nccl, joined,
                "ncclCommInitRank of rank " + std::to_string(rank) + " of " + std::to_string(size))
                .message());
    }
    return NcclCommunicator(std::move(state));
}

Result<NcclCommunicator> NcclCommunicator::create(Job& job, Client device, NcclOptions options) {
    // Rank 0 gives its id, or nothing when it could not make one; every rank takes part in the
    // exchange either way, so none waits for a rank that gave up.
    std::string mine;
    std::optional<Error> unmade;
    if (job.rank() == 0) {
        Result<NcclUniqueId> id = unique_id();
        if (id) {
            mine.assign(reinterpret_cast<const char*>(id->bytes.data()), id->bytes.size());
        } else {
            unmade = id.error();
        }
    }
    Result<std::vector<std::string>> given = job.exchange(mine, options.timeout);
    if (!given) {
        return given.error();
    }
    if (unmade) {
        return *unmade;
    }
    NcclUniqueId id;
    if ((*given)[0].size() != id.bytes.size()) {
        return Error::invalid_argument(
            "rank 0 could not make an NCCL unique id, so no rank "
            "makes the communicator");
    }
    std::memcpy(id.bytes.data(), (*given)[0].data(), id.bytes.size());
    Result<NcclCommunicator> made = create(std::move(device), static_cast<int>(job.rank()),
                                           static_cast<int>(job.world_size()), id, options);
    if (!made) {
        return made;
    }
    std::weak_ptr<State> watched = made->state_;
    Status watching = job.on_rank_lost([watched](const RankLoss& loss) {
        if (std::shared_ptr<State> state = watched.lock()) {
            state->request_abort(Error(ErrorKind::DeviceLost, loss.describe()));
        }
    });
    return watching ? std::move(made) : Result<NcclCommunicator>(watching.error());
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<State> state) : state_(std::move(state)) {}

NcclCommunicator::~NcclCommunicator() {
    if (state_ && state_->communicator != nullptr) {
        // Every call waited for its work: nothing of this communicator is left on the stream.
        (void)state_->nccl->comm_destroy(std::exchange(state_->communicator, nullptr));
    }
}

NcclCommunicator::NcclCommunicator(NcclCommunicator&& other) noexcept = default;

NcclCommunicator& NcclCommunicator::operator=(NcclCommunicator&& other) noexcept {
    if (this != &other) {
        NcclCommunicator ending(std::move(*this));
        state_ = std::move(other.state_);
    }
    return *this;
}

int NcclCommunicator::rank() const { return state_->rank; }
int NcclCommunicator::size() const { return state_->size; }
const Client& NcclCommunicator::device() const { return state_->device; }

void NcclCommunicator::abort(const Error& why) { state_->request_abort(why); }

std::optional<Error> NcclCommunicator::aborted() const { return state_->abort_reason(); }

}  // namespace tandem::cuda
