#pragma once

// What a backend's runtime does for the job it serves a rank of (phase 2 of docs/DESIGN.md): it
// lets its work reach the devices of the other ranks through the job's directory, exports the
// memory of its devices so that another process of the host maps it, and maps theirs. A backend
// offers it through its registry entry (`BackendEntry::job_member`); one that offers none runs a
// rank of a job whose memory no other rank binds.

#include "tandem/backend/device_directory.hpp"
#include "tandem/core/event.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tandem {

class Server;

/// Where an allocation's memory is, as another process of the host maps it: a descriptor of the
/// region holding it, where that region sits among its owner's device addresses, and the owner.
struct ExportedRegion {
    /// An open descriptor of the region's memory.
    int descriptor = -1;
    /// The device address of the region's first byte, as its owner addresses it.
    std::uint64_t base_address = 0;
    /// The region's size.
    std::uint64_t size_bytes = 0;
    /// The device the region belongs to: set by the job for `JobMember::import_region`. Device
    /// addresses of two processes may coincide (two processes on one GPU each address their own
    /// memory from the same place), so a region is known by its owner and its base together.
    ServiceId owner{};
};

/// A stream whose events other processes wait on, as the job keeps it: what its device tells it
/// as the work before each published event settles (`JobMember::export_event`). The job decides
/// what other processes read of it (on the simulator: words on the owner's board, and the error
/// itself on request), so every backend passes on the same outcomes.
class ExportedStream {
public:
    virtual ~ExportedStream() = default;
    /// Event `sequence` of the stream is reached: the work enqueued before it has run and is
    /// settled. `failed_wait` is why a wait that work was ordered after failed, when one did: the
    /// stream skipped its work since (`Work::follow_failed_wait`), and a wait of another process
    /// on the event then skips its own later work with that error, as a wait on a local event
    /// recorded after a failed wait does. Reaching an event again, or an older one, changes
    /// nothing the others read.
    virtual void reach(std::uint64_t sequence, const std::optional<Error>& failed_wait) = 0;
};

/// A runtime as its job reaches it.
class JobMember {
public:
    virtual ~JobMember() = default;
    /// The directory the runtime's work reaches devices through (`LocalDirectory::reach_remote`).
    virtual LocalDirectory& directory() = 0;
    /// The runtime's device `index` (below its device count).
    virtual Server& server(std::size_t index) = 0;
    /// The region that holds `handle`'s memory, a device's of this runtime; its descriptor is
    /// borrowed, open while the runtime lives. `InvalidArgument` for memory the backend cannot
    /// export (memory adopted from the host, say).
    virtual Result<ExportedRegion> export_region(const Handle& handle) = 0;
    /// Maps a region another process exported; `region.descriptor` is taken (closed by this
    /// call or with the runtime). A region mapped already is kept.
    virtual Status import_region(const ExportedRegion& region) = 0;
    /// Tells `stream` that `event` (an event of one of the runtime's devices) is reached
    /// (`ExportedStream::reach`, with the failed wait it was recorded after, if any) once the
    /// work enqueued before it on its stream has run and is settled, at once when it is: a wait
    /// of another process on the event then finds the owner's claims saying what that work did
    /// (P5 across processes). Every event of one stream tells the same `stream`, which must
    /// outlive the runtime's work. `InvalidArgument` for an event no device of the runtime
    /// recorded.
    virtual Status export_event(const Event& event, ExportedStream& stream) = 0;
};

}  // namespace tandem
