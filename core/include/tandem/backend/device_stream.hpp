#pragma once

// What every backend keeps per stream, whatever runs its work: its id, its open recording window
// (C14), and how far an injected delay holds it back. A backend's stream derives from it and adds
// what it needs to run work (a queue, a CUDA stream).

#include "tandem/backend/work.hpp"
#include "tandem/core/ids.hpp"

#include <cstdint>
#include <deque>
#include <memory>

namespace tandem {

/// The per-stream state every backend keeps.
struct DeviceStream {
    /// The stream's id on its device.
    StreamId id;
    /// The open recording window (C14), if any.
    std::shared_ptr<CaptureWindow> capture;
    /// Steps injected delays still hold the stream back, bounded (`FaultPlan::check_delay`).
    std::uint64_t delay_steps = 0;
    /// Destroyed (`Server::destroy_stream`): its id names no stream any more, and is not reused.
    bool destroyed = false;
};

}  // namespace tandem
