// Memory ranks share by name: published by its owner, looked up by the others, pinned while any
// rank holds it (P2).

#include "job_peers.hpp"

#include "error_codec.hpp"
#include "wire.hpp"

#include "api/label_table.hpp"
#include "tandem/core/labels.hpp"

#include "tandem/backend/server.hpp"

#include <unistd.h>

namespace tandem::job_detail {

/// The owner of memory another rank published, as `PeerMemory::failure()` asks it.
class JobPeers::RemoteOwner final : public PeerOwner {
public:
    RemoteOwner(const JobPeers& peers, ServiceId service) : peers_(peers), service_(service) {}
    [[nodiscard]] ServiceId service() const override { return service_; }
    [[nodiscard]] std::optional<Error> claim_on(const ClaimKey& key) const override {
        if (std::optional<Error> gone = peers_.lost(service_)) {
            return gone;
        }
        const ClaimKey keys[] = {key};
        std::optional<FoundClaim> found = peers_.first_claimed(service_, keys);
        return found ? std::optional<Error>(std::move(found->report)) : std::nullopt;
    }

private:
    const JobPeers& peers_;
    ServiceId service_;
};

Status JobPeers::check_name(std::string_view name) {
    if (name.empty() || name.size() > name_bytes_max) {
        return Error::invalid_argument("a shared name has 1 to " + std::to_string(name_bytes_max) +
                                       " bytes, not " + std::to_string(name.size()));
    }
    return {};
}

Result<ServiceId> JobPeers::service(std::uint32_t rank, std::uint32_t device) const {
    std::lock_guard lock(mutex_);
    if (rank >= world_size_) {
        return Error::invalid_argument("rank " + std::to_string(rank) + " is not in a job of " +
                                       std::to_string(world_size_) + " ranks");
    }
    const std::uint64_t runtime_id = rank == rank_ ? runtime_id_ : runtimes_[rank].runtime_id;
    const std::uint32_t devices = rank == rank_ ? device_count_ : runtimes_[rank].device_count;
    if (device >= devices) {
        return Error::invalid_argument("rank " + std::to_string(rank) + " has " +
                                       std::to_string(devices) + " devices; there is no device " +
                                       std::to_string(device));
    }
    return ServiceId{runtime_id, device, 0, rank};
}

Status JobPeers::publish(std::string_view name, const Handle& handle) {
    if (std::optional<Error> refused = refusal("publish")) {
        return *refused;
    }
    if (Status valid = check_name(name); !valid) {
        return valid;
    }
    if (!member_) {
        return Error::invalid_argument("this rank's runtime (" + backend_ +
                                       ") shares no memory with other processes");
    }
    if (handle.empty() || handle.service().runtime_id != runtime_id_) {
        return Error::invalid_argument("only memory of this rank's own devices is published; " +
                                       handle.describe() + " is not");
    }
    Server& owner = member_->server(handle.service().device_index);
    // Published as written so far: the writers of its bytes enqueued before run and settle now,
    // so a peer reads what they wrote or their failure (later writes are ordered by a barrier).
    const ClaimKey keys[] = {handle.claim_key()};
    if (Status settled = owner.sync(keys); !settled &&
                                           settled.error().kind() != ErrorKind::Unwritten &&
                                           settled.error().kind() != ErrorKind::Several) {
        return settled;
    }
    Result<ExportedRegion> region = member_->export_region(handle);
    if (!region) {
        return region.error();
    }
    Result<PeerMemory> pin = owner.share(handle.binding());
    if (!pin) {
        return pin.error();
    }
    std::unique_lock lock(mutex_);
    if (Status free = name_free(name, handle.memory_id()); !free) {
        return free;
    }
    const std::optional<std::size_t> slot = board_->take_slot();
    if (!slot || !owner.claims().publish(handle.memory_id(), board_->claim_word(*slot))) {
        if (slot) {
            board_->give_slot(*slot);
        }
        return Error::invalid_argument("this rank shares " + std::to_string(JobBoard::slots) +
                                       " allocations already, the most it may at once");
    }
    published_.emplace(
        std::string(name),
        Publication{.pin = std::move(*pin), .owner = handle.service(), .slot = *slot});
    std::vector<Announcement> announcements = announce(name, handle, *slot, *region);
    lock.unlock();  // A send may wait for a rank to read; the watcher needs the lock meanwhile.
    for (const Announcement& announcement : announcements) {
        (void)send(announcement.rank, FrameKind::publish, announcement.payload,
                   announcement.descriptor);  // A rank lost meanwhile needs it no more.
    }
    return {};
}

Status JobPeers::name_free(std::string_view name, MemoryId memory) const {
    if (published_.contains(name)) {
        return Error::invalid_argument("'" + std::string(name) + "' is published already");
    }
    if (auto other = received_.find(name); other != received_.end()) {
        return Error::invalid_argument("'" + std::string(name) +
                                       "' is published already, by rank " +
                                       std::to_string(other->second.rank));
    }
    if (published_events_.contains(name)) {
        return Error::invalid_argument("'" + std::string(name) +
                                       "' is published already, as an event");
    }
    if (auto other = received_events_.find(name); other != received_events_.end()) {
        return Error::invalid_argument("'" + std::string(name) +
                                       "' is published already, as an event, by rank " +
                                       std::to_string(other->second.rank));
    }
    for (const auto& [published_name, publication] : published_) {
        if (publication.pin.memory_id() == memory) {
            // One word per allocation on the board: a second name would share it.
            return Error::invalid_argument(to_string(memory) + " is published already, as '" +
                                           published_name + "'");
        }
    }
    return {};
}

std::vector<JobPeers::Announcement> JobPeers::announce(std::string_view name, const Handle& handle,
                                                       std::size_t slot,
                                                       const ExportedRegion& region) {
    const AllocationInfo& allocation = handle.memory().allocation();
    WireWriter out;
    out.text(name);
    out.service(handle.service());
    out.u64(allocation.id.value);
    out.u64(allocation.address);
    out.u64(allocation.size_bytes);
    out.u64(allocation.stream.value);
    out.u64(handle.offset_start());
    out.u64(handle.offset_end());
    out.u64(slot);
    out.text(handle.label());  // Empty when it has none; reports on the other ranks use it.
    out.u64(region.base_address);
    out.u64(region.size_bytes);
    const std::string payload = out.take();
    std::vector<Announcement> announcements;
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank == rank_ || !runtimes_[rank].loss.empty()) {
            continue;
        }
        const bool first = regions_sent_.insert({rank, region.base_address}).second;
        std::string with_flag = payload;
        with_flag.push_back(first ? 1 : 0);
        announcements.push_back({rank, std::move(with_flag), first ? region.descriptor : -1});
    }
    return announcements;
}

void JobPeers::on_publish(std::uint32_t rank, std::string_view payload, std::vector<int>& passed) {
    WireReader in(payload);
    Received received;
    received.rank = rank;
    const std::string name = in.text();
    received.owner = in.service();
    received.allocation.id = MemoryId{in.u64()};
    received.allocation.address = in.u64();
    received.allocation.size_bytes = in.u64();
    received.allocation.stream = StreamId{in.u64()};
    received.offset_start = in.u64();
    received.offset_end = in.u64();
    received.slot = in.u64();
    received.label = in.text();
    if (!check_label(received.label)) {
        received.label.clear();  // A label this rank would refuse names nothing here.
    }
    ExportedRegion region;
    region.base_address = in.u64();
    region.size_bytes = in.u64();
    region.owner = received.owner;
    const bool carries = in.u8() != 0;
    if (carries && !passed.empty()) {
        region.descriptor = passed.front();
        passed.erase(passed.begin());
    }
    if (!in.done() || received.owner.rank != rank || received.slot >= JobBoard::slots) {
        if (region.descriptor >= 0) {
            ::close(region.descriptor);
        }
        return;  // Not a publication this rank can use; a lookup of it times out.
    }
    if (region.descriptor >= 0 && member_) {
        (void)member_->import_region(region);  // A region this runtime cannot map: unusable.
    } else if (region.descriptor >= 0) {
        ::close(region.descriptor);
    }
    {
        std::unique_lock slots(slots_mutex_);
        slots_[received.allocation.id] = {rank, received.slot};
    }
    std::lock_guard lock(mutex_);
    received_[name] = received;
    withdrawn_names_.erase(name);  // Published again: its order entry goes as it ages out.
    changed_.notify_all();
}

Result<Handle> JobPeers::lookup(std::string_view name, std::chrono::milliseconds timeout) {
    if (std::optional<Error> refused = refusal("lookup")) {
        return *refused;
    }
    if (Status valid = check_name(name); !valid) {
        return valid.error();
    }
    if (!member_) {
        return Error::invalid_argument("this rank's runtime (" + backend_ +
                                       ") binds no memory of other processes");
    }
    std::unique_lock lock(mutex_);
    const bool found = changed_.wait_for(lock, timeout, [&] {
        return stopped_ || received_.find(name) != received_.end() ||
               published_.find(name) != published_.end() || withdrawn_names_.contains(name);
    });
    if (published_.find(name) != published_.end()) {
        return Error::invalid_argument("'" + std::string(name) +
                                       "' is this rank's own memory: use the handle it published");
    }
    if (auto withdrawn = withdrawn_names_.find(name);
        withdrawn != withdrawn_names_.end() && !received_.contains(name)) {
        return Error::invalid_argument("'" + std::string(name) + "' was withdrawn by rank " +
                                       std::to_string(withdrawn->second));
    }
    if (!found || stopped_) {
        return Error::invalid_argument("no rank published '" + std::string(name) + "' within " +
                                       std::to_string(timeout.count()) +
                                       " ms (a name is published by `Job::publish`)");
    }
    const Received received = received_.find(name)->second;
    std::shared_ptr<RemoteOwner>& owner = owners_[received.owner];
    if (!owner) {
        owner = std::make_shared<RemoteOwner>(*this, received.owner);
    }
    std::weak_ptr<PeerOwner> owner_view = owner;
    // Counted before the pin goes, under the lock the answer to a withdrawal takes: the owner
    // learns of every pin sent before that answer, and keeps the memory until each arrived. So
    // the pin needs no answer, and a lookup no round trip.
    ++pins_sent_[std::string(name)];
    lock.unlock();
    WireWriter body;
    body.text(name);
    tell(received.owner, Op::pin, body.take());
    // The job may be gone when the last handle goes: then there is no one left to tell.
    ImportedShare share{
        received.owner, received.allocation, owner_view,
        [peers = weak_from_this(), owner = received.owner, key = std::string(name)] {
            if (std::shared_ptr<JobPeers> alive = peers.lock()) {
                WireWriter unpin;
                unpin.text(key);
                alive->tell(owner, Op::unpin, unpin.take());
            }
        }};
    Result<Handle> imported = member_->server(0).import_shared(std::move(share));
    if (!imported) {
        return imported;
    }
    if (!received.label.empty()) {
        // Reports here name the owner's allocation by its label too; without a free slot in the
        // table, by its id alone.
        if (std::optional<detail::LabelTable::Slot> slot = detail::LabelTable::reserve()) {
            detail::LabelTable::name_shared(std::move(*slot), imported->memory(), received.label);
        }
    }
    // The bytes the owner published: its handle's offsets, checked when it was published.
    Result<Handle> trimmed = imported->add_offset_start(received.offset_start);
    return trimmed ? trimmed->add_offset_end(received.offset_end) : trimmed;
}

Status JobPeers::withdraw(std::string_view name) {
    if (std::optional<Error> refused = refusal("withdraw")) {
        return *refused;
    }
    std::unique_lock lock(mutex_);
    if (auto event = published_events_.find(name);
        event != published_events_.end() && !event->second.withdrawn) {
        event->second.withdrawn = true;  // Lookups ask the owner (`Op::event_published`).
        return {};
    }
    auto found = published_.find(name);
    if (found == published_.end() || found->second.withdrawn) {
        return Error::invalid_argument("'" + std::string(name) + "' is not published by this rank");
    }
    found->second.withdrawn = true;
    const std::string kept = found->first;
    lock.unlock();
    // Every rank forgets the name before this returns, and says how many pins of it it sent.
    std::map<std::uint32_t, std::uint64_t> sent;
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank == rank_) {
            continue;
        }
        WireWriter body;
        body.text(kept);
        ServiceId to;
        to.rank = rank;
        Result<std::string> answer = ask(to, Op::withdrawn, body.take());
        WireReader in(answer ? std::string_view(*answer) : std::string_view());
        const std::uint64_t count = in.u64();
        sent[rank] = answer && in.done() ? count : 0;  // A lost rank holds nothing.
    }
    lock.lock();
    if (auto still = published_.find(kept); still != published_.end()) {
        still->second.pins_sent = std::move(sent);
        still->second.withdrawals_answered = true;
        drop_if_unheld(kept);
    }
    return {};
}

std::string JobPeers::forget_withdrawn(std::uint32_t owner, const std::string& name) {
    received_.erase(name);
    if (withdrawn_names_.insert_or_assign(name, owner).second) {
        withdrawn_order_.push_back(name);
        if (withdrawn_order_.size() > withdrawn_names_max) {
            withdrawn_names_.erase(withdrawn_order_.front());
            withdrawn_order_.pop_front();
        }
    }
    WireWriter out;
    auto sent = pins_sent_.find(name);
    out.u64(sent != pins_sent_.end() ? sent->second : 0);
    if (sent != pins_sent_.end()) {
        pins_sent_.erase(sent);
    }
    return out.take();
}

void JobPeers::drop_if_unheld(const std::string& name) {
    auto found = published_.find(name);
    if (found == published_.end() || !found->second.withdrawals_answered ||
        !found->second.holders.empty()) {
        return;
    }
    for (const auto& [rank, sent] : found->second.pins_sent) {
        auto arrived = found->second.pins_arrived.find(rank);
        const std::uint64_t count =
            arrived != found->second.pins_arrived.end() ? arrived->second : 0;
        if (count < sent && runtimes_[rank].loss.empty()) {
            return;  // A pin on its way: it holds the memory when it comes.
        }
    }
    member_->server(found->second.owner.device_index)
        .claims()
        .unpublish(found->second.pin.memory_id());
    board_->give_slot(found->second.slot);
    published_.erase(found);
}

}  // namespace tandem::job_detail
