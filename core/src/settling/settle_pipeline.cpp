#include "tandem/backend/settle_pipeline.hpp"

#include "tandem/core/host_kernels.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tandem {

bool CaptureWindow::room_for(std::size_t count) {
    if (count <= max_launches && launches.size() <= max_launches - count) {
        return true;
    }
    if (!doomed) {
        doomed = Error::invalid_argument("a recording window holds at most " +
                                         std::to_string(max_launches) + " launches");
    }
    return false;
}

void CaptureWindow::close() {
    std::sort(write_set.begin(), write_set.end());
    write_set.erase(std::unique(write_set.begin(), write_set.end()), write_set.end());
}

void Work::reset_work() {
    label.clear();
    device = 0;
    stream = StreamId{};
    inputs.clear();
    outputs.clear();
    checks_inputs = true;
    refused_.reset();
    report_ = Report::Pending;
    failure_.reset();
    after_failed_wait_.reset();
    provisional_ = false;
    window.reset();
    replayed = true;
    read_back.reset();
    sequence_ = 0;
    settled_ = false;
    failed_ = false;
    writes_other_devices_ = false;
}

std::optional<Error> SettlePipeline::refusal_slow(const Work& work, const LaunchRequest& request,
                                                  bool registered) const {
    if (!registered && request.external) {
        return Error::launch_refused(
            request.kernel, "the external work has no implementation for this backend (give "
                            "ExternalCallables::host for the simulator and the reference backend, "
                            "::cuda for CUDA)");
    }
    if (!registered && request.entry == nullptr) {
        return unknown_kernel(request.kernel);
    }
    if (!registered) {
        return Error::launch_refused(
            request.kernel, "it has no build for this backend (on CUDA: link the kernel's "
                            "registration unit, TANDEM_REGISTER_CUDA_KERNEL, built with "
                            "tandem_add_kernels)");
    }
    if (!launchable(request.config)) {
        return config_refusal(request.kernel, request.config);
    }
    const ServiceId runner = devices_.service_of(work.device);
    for (const std::vector<Target>* targets : {&work.inputs, &work.outputs}) {
        for (const Target& target : *targets) {
            if (target.owner != runner && !devices_.peer_access_granted(target.owner, runner)) {
                return Error::launch_refused(
                    request.kernel, "it binds shared memory of " + to_string(target.owner) +
                                        ", which " +
                                        "never granted " + to_string(runner) +
                                        " access (grant_peer_access on the owner's client)");
            }
        }
    }
    return std::nullopt;
}

bool SettlePipeline::writes_lost_memory(const Work& work) const {
    return first_lost_output(devices_, devices_.service_of(work.device), work.outputs).has_value();
}

Status SettlePipeline::add_targets(const LaunchRequest& request, Work& work) const {
    const ServiceId runner = devices_.service_of(work.device);
    for (const KernelResource& resource : request.resources) {
        const BufferBinding& binding = resource.buffer_binding();
        const PeerBinding* peer = resource.peer_binding();
        ServiceId owner = runner;
        if (peer != nullptr) {
            owner = peer->memory().owner_service();
            if (!devices_.reaches(owner)) {
                return Error::peer_unreachable(runner, owner,
                                               "the owner is not a device of this runtime");
            }
        } else if (binding.service() != runner) {
            return Error::wrong_service(runner, binding.service());  // P1
        }
        // Built where they are stored: a copy of a just-built target stalls on its stores.
        const auto add = [&](std::vector<Target>& targets) {
            Target& target = targets.emplace_back();
            target.owner = owner;
            target.key.memory = binding.memory_id();
            target.key.range = binding.range();
        };
        if (reads(resource.access())) {
            add(work.inputs);
        }
        if (writes(resource.access())) {
            add(work.outputs);
            work.writes_other_devices_ = work.writes_other_devices_ || owner != runner;
        }
    }
    return {};
}

Status SettlePipeline::add_copy_targets(const KernelResource& source, const BufferBinding& target,
                                        Work& work,
                                        const std::shared_ptr<CaptureWindow>& window) const {
    const BufferBinding& from = source.buffer_binding();
    const ServiceId runner = devices_.service_of(work.device);
    if (const PeerBinding* peer = source.peer_binding()) {
        const ServiceId owner = peer->memory().owner_service();
        if (!devices_.reaches(owner)) {
            return Error::peer_unreachable(runner, owner,
                                           "the owner is not a device of this runtime");
        }
        work.label = "peer copy from device " + std::to_string(owner.device_index);
        work.inputs.push_back(Target{owner, from.claim_key()});
    } else {
        work.label = "copy";
        work.inputs.push_back(Target{runner, from.claim_key()});
    }
    work.outputs.push_back(Target{runner, target.claim_key()});
    place_copy(work, window);
    return {};
}

void SettlePipeline::add_replay_targets(const CaptureGraph& graph, Work& work,
                                        const std::shared_ptr<CaptureWindow>& window) const {
    const ServiceId runner = devices_.service_of(work.device);
    work.label = "replay of " + std::to_string(graph.work().launches.size()) + " launches";
    work.checks_inputs = false;
    for (const ClaimKey& written : graph.write_set()) {
        work.outputs.push_back(Target{runner, written});
    }
    work.window = window;
    if (!window) {
        return;
    }
    if (window->room_for(graph.work().launches.size())) {
        window->launches.insert(window->launches.end(), graph.work().launches.begin(),
                                graph.work().launches.end());
    } else {
        work.replayed = false;  // Not recorded: it writes nothing a replay of the window writes.
    }
}

void SettlePipeline::enqueue(std::shared_ptr<Work> work) {
    devices_.count_work(work->device);  // Before it is placed: a loss due now fails it too.
    place(std::move(work));
}

void SettlePipeline::place(std::shared_ptr<Work> work) {
    work->sequence_ = next_sequence_++;
    for (const Target& output : work->outputs) {
        Writers& list = writers_.find_or_insert(output.key.memory.value);
        if (list.works.empty() && list.works.capacity() == 0 && !spare_lists_.empty()) {
            list.works = std::move(spare_lists_.back());
            spare_lists_.pop_back();
        }
        if (list.works.empty() || list.works.back() != work.get()) {
            list.works.push_back(work.get());
        }
    }
    if (unsettled_per_device_.size() <= work->device) {
        unsettled_per_device_.resize(work->device + 1, 0);
    }
    ++unsettled_per_device_[work->device];
    if (work->window) {
        ++work->window->unsettled;
    }
    if (count_ == ring_.size()) {
        grow();
    }
    ring_[(head_ + count_) & (ring_.size() - 1)] = std::move(work);
    ++count_;
    ++unsettled_;
}

std::vector<std::shared_ptr<Work>> SettlePipeline::release_unsettled() {
    std::vector<std::shared_ptr<Work>> released;
    released.reserve(unsettled_);
    for (std::size_t index = 0; index < count_; ++index) {
        std::shared_ptr<Work>& slot = ring_[(head_ + index) & (ring_.size() - 1)];
        if (!slot) {
            continue;  // Settled past older work.
        }
        for (const Target& output : slot->outputs) {
            if (Writers* list = writers_.find(output.key.memory.value)) {
                if (spare_lists_.size() < spare_lists_max) {
                    list->works.clear();
                    spare_lists_.push_back(std::move(list->works));
                }
                writers_.erase(output.key.memory.value);
            }
        }
        if (slot->window) {
            --slot->window->unsettled;  // Counted again where it is enqueued next.
        }
        released.push_back(std::move(slot));
    }
    head_ = 0;
    count_ = 0;
    unsettled_ = 0;
    std::fill(unsettled_per_device_.begin(), unsettled_per_device_.end(), 0);
    return released;
}

MovedSequences SettlePipeline::absorb(SettlePipeline& other) {
    MovedSequences moved;
    for (std::shared_ptr<Work>& work : other.release_unsettled()) {
        const std::uint64_t before = work->sequence_;
        place(std::move(work));  // Counted where it was first enqueued.
        moved.sequences.emplace_back(before, next_sequence_ - 1);
    }
    moved.next = next_sequence_;
    return moved;
}

void SettlePipeline::grow() {
    std::vector<std::shared_ptr<Work>> larger(ring_.empty() ? 64 : ring_.size() * 2);
    for (std::size_t index = 0; index < count_; ++index) {
        larger[index] = std::move(ring_[(head_ + index) & (ring_.size() - 1)]);
    }
    ring_ = std::move(larger);
    head_ = 0;
}

bool SettlePipeline::cover(ByteRange range) const {
    bool covered = false;
    for (std::size_t index = 0; index < uncovered_.size();) {
        const ByteRange piece = uncovered_[index];
        if (range.empty() || piece.end <= range.begin || range.end <= piece.begin) {
            ++index;
            continue;
        }
        covered = true;
        const ByteRange before{piece.begin, std::max(piece.begin, range.begin)};
        const ByteRange after{std::min(piece.end, range.end), piece.end};
        uncovered_.erase(uncovered_.begin() + static_cast<std::ptrdiff_t>(index));
        for (const ByteRange& rest : {before, after}) {
            if (!rest.empty()) {
                uncovered_.insert(uncovered_.begin() + static_cast<std::ptrdiff_t>(index), rest);
                ++index;
            }
        }
    }
    return covered;
}

bool SettlePipeline::uncovered_claimed(const Target& input) const {
    if (devices_.nothing_claimed(input.owner)) {
        return false;
    }
    uncovered_keys_.clear();
    for (const ByteRange& range : uncovered_) {
        uncovered_keys_.push_back(ClaimKey{input.key.memory, range});
    }
    return devices_.first_claimed(input.owner, uncovered_keys_).has_value();
}

void SettlePipeline::settle(Work& work) {
    const ServiceId runner = devices_.service_of(work.device);
    std::optional<Cause> cause;
    const bool lost = work.report_ == Work::Report::Failed && work.failure_ &&
                      work.failure_->kind() == ErrorKind::DeviceLost;
    if (!work.refused_ && !lost && work.after_failed_wait_) [[unlikely]] {
        // What it was ordered after never happened: skipped with why, whatever its inputs say.
        cause = Cause{runner, std::nullopt, *work.after_failed_wait_, ClaimKey{}};
    } else if (!work.refused_ && !lost && work.checks_inputs) {
        // In enqueue order, the claims on the inputs now are the claims the work met in program
        // order: a claimed input means it was skipped (C9), or consumed bytes of failed work
        // before anyone knew (C13), whatever it reported itself.
        cause = first_claimed_input(devices_, work.inputs);
        if (!cause && work.writes_other_devices_) [[unlikely]] {
            // D1, as `examine` held it back.
            cause = first_lost_output(devices_, runner, work.outputs);
        }
    }
    work.failed_ = true;
    if (work.refused_) {
        claim_failed(devices_, work.outputs, *work.refused_);  // C10, or it never reached a queue.
    } else if (cause) {
        claim_skipped(devices_, runner, work.label, work.outputs, *cause);
    } else if (work.report_ == Work::Report::Failed) {
        claim_failed(devices_, work.outputs, *work.failure_);  // C8, P4, D1.
    } else if (work.report_ == Work::Report::NotRun) {
        // Only work whose input will be claimed is held back; should that ever not hold, its
        // outputs still must not read as written.
        claim_failed(devices_, work.outputs,
                     Error::torn_down("'" + work.label +
                                      "' did not run, and no input of it was found claimed"));
    } else {
        work.failed_ = false;
        release_outputs(devices_, work.outputs);  // C3.
    }
    if (ReadBack* read = work.read_back.get()) {
        // In enqueue order, the claims on its bytes now are those a read met in program order.
        if (std::optional<Error> gone = devices_.lost(read->owner)) {
            read->outcome = Status(*gone);  // D1.
        } else if (work.after_failed_wait_) {
            read->outcome = Status(*work.after_failed_wait_);  // It copied nothing.
        } else if (work.report_ == Work::Report::Failed && work.failure_) {
            read->outcome = Status(*work.failure_);  // The copy itself failed.
        } else {
            const ClaimKey keys[] = {read->key};
            read->outcome = devices_.check(read->owner, keys);
        }
    }
    if (CaptureWindow* window = work.window.get()) {
        --window->unsettled;
        if (work.failed_ && !window->doomed) {
            // C14: a failed or skipped scope dooms the window.
            window->doomed = Error::torn_down("'" + work.label + "' failed or was skipped");
        } else if (!work.failed_ && work.replayed) {
            for (const Target& output : work.outputs) {
                window->write_set.push_back(output.key);  // Deduplicated when it ends (`close`).
            }
        }
    }
    --unsettled_per_device_[work.device];
    work.settled_ = true;
    work.on_settled();
}

void SettlePipeline::unindex(const Work& work) {
    for (const Target& output : work.outputs) {
        Writers* list = writers_.find(output.key.memory.value);
        if (list == nullptr || list->settled == list->works.size() ||
            list->works[list->settled] != &work) {
            continue;  // A second output on the same allocation: counted with the first.
        }
        if (++list->settled == list->works.size()) {
            if (spare_lists_.size() < spare_lists_max) {
                list->works.clear();
                spare_lists_.push_back(std::move(list->works));
            }
            writers_.erase(output.key.memory.value);
        }
    }
}

bool SettlePipeline::writes_unsettled(ServiceId owner, std::span<const ClaimKey> keys) const {
    for (const ClaimKey& key : keys) {
        const Writers* list = writers_.find(key.memory.value);
        if (list == nullptr) {
            continue;
        }
        for (std::size_t index = list->settled; index < list->works.size(); ++index) {
            for (const Target& output : list->works[index]->outputs) {
                if (output.owner == owner && overlap(output.key, key) != Overlap::Disjoint) {
                    return true;
                }
            }
        }
    }
    return false;
}

namespace {

/// Whether a book of `size` entries, last walked at pass `checked_at`, is due at pass `now`:
/// every pass while it is small, and once it is not, after as many passes as it holds (at least
/// `sparse_every`), so that a walk costs a pass about one entry's check.
bool book_due(std::size_t size, std::uint64_t now, std::uint64_t& checked_at) {
    static constexpr std::size_t checked_max = 64;
    static constexpr std::uint64_t sparse_every = 1024;
    if (size > checked_max && now - checked_at < std::max<std::uint64_t>(sparse_every, size)) {
        return false;
    }
    checked_at = now;
    return true;
}

}  // namespace

void SettlePipeline::note_settled(const Work& settled) {
    for (const Target& output : settled.outputs) {
        if (std::find(changed_owners_.begin(), changed_owners_.end(), output.owner) ==
            changed_owners_.end()) {
            changed_owners_.push_back(output.owner);
        }
    }
    last_settled_ = settled.label.empty() ? "unnamed work" : settled.label;
}

void SettlePipeline::check_books() {
    ++check_passes_;
    std::optional<std::string> broken;
    if (book_due(size(), check_passes_, pipeline_checked_at_)) {
        broken = check_invariants();
    }
    for (const ServiceId owner : changed_owners_) {
        if (broken || !devices_.reaches(owner)) {
            continue;
        }
        auto found = std::find_if(claims_checked_at_.begin(), claims_checked_at_.end(),
                                  [&](const auto& entry) { return entry.first == owner; });
        if (found == claims_checked_at_.end()) {
            found = claims_checked_at_.insert(claims_checked_at_.end(), {owner, 0});
        }
        if (book_due(devices_.claims_size(owner), check_passes_, found->second)) {
            broken = devices_.check_invariants(owner);
        }
    }
    changed_owners_.clear();
    if (broken) {
        std::fprintf(stderr, "tandem: invariant broken after settling '%s'%s%s: %s\n",
                     last_settled_.c_str(), check_context_.empty() ? "" : " ",
                     check_context_.c_str(), broken->c_str());
        std::abort();
    }
    last_settled_.clear();
}

std::optional<std::string> SettlePipeline::check_invariants() const {
    std::size_t per_device = 0;
    for (std::size_t count : unsettled_per_device_) {
        per_device += count;
    }
    std::size_t in_ring = 0;
    for_each_pending([&](const Work&) { ++in_ring; });
    if (per_device != unsettled_ || in_ring != unsettled_) {
        return "the per-device counts of unsettled work add up to " + std::to_string(per_device) +
               " and the ring holds " + std::to_string(in_ring) + ", not " +
               std::to_string(unsettled_);
    }
    if (count_ != 0 && !ring_[head_]) {
        return "the ring's front slot is empty";
    }
    std::optional<std::string> broken;
    writers_.for_each([&](std::uint64_t memory, const Writers& list) {
        for (std::size_t index = list.settled; index < list.works.size() && !broken; ++index) {
            const Work& work = *list.works[index];
            if (work.settled_) {
                broken = "settled work is still a writer of memory #" + std::to_string(memory);
            } else if (index > list.settled && list.works[index - 1]->sequence_ >= work.sequence_) {
                broken = "the writers of memory #" + std::to_string(memory) + " are out of order";
            }
        }
    });
    return broken;
}

bool SettlePipeline::unsettled_on(std::uint32_t device) const {
    return device < unsettled_per_device_.size() && unsettled_per_device_[device] != 0;
}

}  // namespace tandem
