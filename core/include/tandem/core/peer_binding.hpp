#pragma once

// A buffer of another device, as a kernel binds it.

#include "tandem/core/handle.hpp"

#include <cstdint>
#include <optional>

namespace tandem {

/// A buffer of another device as a kernel binds it: the binding, and the device address its owner
/// shared it at. Only `make` builds one, so every peer binding names memory that was shared.
class PeerBinding {
public:
    /// `binding` at the address its owner shared; empty when it was never shared or when the
    /// shared memory is not the allocation the binding names.
    static std::optional<PeerBinding> make(BufferBinding binding);

    /// The buffer on its own device. Holding it keeps the memory in place.
    [[nodiscard]] const BufferBinding& binding() const { return binding_; }
    /// The memory shared with peers that the buffer lives in.
    [[nodiscard]] const PeerMemory& memory() const { return *binding_.peer(); }
    /// The device address of the bound bytes: the shared address plus `offset_start`.
    [[nodiscard]] std::uint64_t address() const { return address_; }
    /// The bytes bound: what the offsets leave.
    [[nodiscard]] std::uint64_t size() const { return binding_.size_in_use(); }

private:
    PeerBinding(BufferBinding binding, std::uint64_t address);
    BufferBinding binding_;
    std::uint64_t address_;
};

}  // namespace tandem
