#pragma once

// A recorded sequence of work that can be replayed (rule C14). A program holds it and replays it
// on the device that recorded it; what a replay runs is the backend's (`CapturedWork`), out of a
// program's reach.

#include "tandem/core/ids.hpp"
#include "tandem/core/runtime_key.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace tandem {

struct CapturedWork;

/// Launches one recording window holds at most (`Client::begin_capture`): a window given more is
/// refused when it ends, as a doomed window is, and its launches past the bound run without
/// being recorded.
inline constexpr std::size_t capture_launches_max = std::size_t{1} << 16;

/// A recorded window of launches that can be replayed (rule C14). Copies share what was
/// recorded.
class CaptureGraph {
public:
    /// Only a backend builds one, from a window it recorded (`RuntimeKey`).
    CaptureGraph(RuntimeKey, ServiceId device, std::vector<ClaimKey> write_set,
                 std::shared_ptr<const CapturedWork> work)
        : device_(device), write_set_(std::move(write_set)), work_(std::move(work)) {}

    /// The device that recorded the window; only it replays the graph.
    [[nodiscard]] ServiceId device() const { return device_; }
    /// The bytes a replay writes, deduplicated by claim key.
    [[nodiscard]] const std::vector<ClaimKey>& write_set() const { return write_set_; }
    /// What a replay runs, as the backend recorded it (backend/server.hpp defines it).
    [[nodiscard]] const CapturedWork& work() const { return *work_; }

private:
    ServiceId device_;
    std::vector<ClaimKey> write_set_;
    std::shared_ptr<const CapturedWork> work_;
};

}  // namespace tandem
