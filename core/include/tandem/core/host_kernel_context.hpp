#pragma once

// What a kernel sees when it runs on the host (the simulator, the reference backend): thread
// indices, arguments and checked views. The same functor a GPU runs with raw pointers runs here
// with every access checked.
//
// Every access goes through a view that knows the bound bytes: an index past them, a store into
// a resource declared read-only, or any access to peer memory the device was not granted is a
// sticky fault of the device (rule D1), thrown as `HostFault` with a report naming the address,
// the allocation and what happened to it. The check is one compare and branch per access; the
// bytes are moved with memcpy, so unaligned views are fine.

#include "tandem/core/copy_descriptor.hpp"
#include "tandem/core/kernel.hpp"
#include "tandem/core/kernel_resource.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// A sticky fault raised inside a kernel.
struct HostFault {
    /// What a person needs to know: the kernel, the access, the address and its allocation.
    std::string report;
};

/// One resource of a launch, resolved to host memory.
struct BoundResource {
    /// The resource's first byte in this process.
    std::byte* host = nullptr;
    /// The device address of the same byte.
    std::uint64_t address = 0;
    /// The bytes bound.
    std::uint64_t size_bytes = 0;
    /// How the kernel may access them.
    AccessMode access = AccessMode::ReadWrite;
    /// Whether the launching device may access them: false for peer memory whose owner did not
    /// grant it (every access then faults).
    bool granted = true;
    /// The device that owns the memory (of another process, for memory a peer rank shared).
    ServiceId owner{};
    /// The tiled view, when the resource is bound as a tensor map.
    std::optional<TensorMapDescriptor> tensor_map;
};

/// The backend's side of a running kernel: its scheduler, race detector and address book.
class KernelHost {
public:
    virtual ~KernelHost() = default;
    /// A point where other work may run (deterministic mode) or nothing happens (threads).
    virtual void yield() = 0;
    /// Returns once `ready()` holds; reports a deadlock rather than hang.
    virtual void block_until(const std::function<bool()>& ready, const std::string& what) = 0;
    /// A system-scope release at `address`, for the race detector: it orders this kernel's earlier
    /// accesses before whoever acquires the same address.
    virtual void on_release(std::uint64_t address) = 0;
    /// A system-scope acquire at `address`, for the race detector: it orders the accesses of
    /// whoever released the same address before this kernel's later ones.
    virtual void on_acquire(std::uint64_t address) = 0;
    /// What a person needs to know about `address`: its allocation and what happened to it.
    [[nodiscard]] virtual std::string describe_address(std::uint64_t address) const = 0;
    /// Whether kernels run on threads of their own, where atomics must be real atomics.
    [[nodiscard]] virtual bool threaded() const = 0;
};

class HostKernelContext;

template <typename T>
/// A checked view of a buffer resource as elements of `T`: every access is checked against the
/// bound bytes, the declared access and the grant, and one that breaks them raises the device's
/// sticky fault (`HostFault`, D1) with a report naming the address and its allocation.
class HostView {
public:
    /// The view of resource number `resource` of `context`, bound as `bound`.
    HostView(const HostKernelContext* context, std::size_t resource, const BoundResource& bound)
        : context_(context),
          resource_(resource),
          base_(bound.host),
          count_(bound.size_bytes / sizeof(T)),
          writable_(writes(bound.access)),
          granted_(bound.granted) {}

    /// How many whole elements of `T` the resource holds.
    [[nodiscard]] std::uint64_t size() const { return count_; }

    /// Element `index`; faults past the end or on memory never granted.
    T load(std::uint64_t index) const {
        check(index, false);
        T value;
        std::memcpy(&value, base_ + index * sizeof(T), sizeof(T));
        return value;
    }
    /// Writes element `index`; faults past the end, on a read-only resource or on memory never
    /// granted.
    void store(std::uint64_t index, T value) const {
        check(index, true);
        std::memcpy(base_ + index * sizeof(T), &value, sizeof(T));
    }
    /// Element `index`, read with acquire order at system scope (another device's release is seen).
    T atomic_load_acquire(std::uint64_t index) const;
    /// Writes element `index` with release order at system scope.
    void atomic_store_release(std::uint64_t index, T value) const;
    /// Adds `value` to element `index` atomically at system scope; returns the element before.
    T atomic_fetch_add(std::uint64_t index, T value) const;

private:
    friend class HostKernelContext;
    void check(std::uint64_t index, bool write) const;
    std::byte* element(std::uint64_t index) const { return base_ + index * sizeof(T); }

    const HostKernelContext* context_;
    std::size_t resource_;
    std::byte* base_;
    std::uint64_t count_;
    bool writable_;
    bool granted_;
};

/// A tensor-map resource: tiles of `box` elements of a tensor of `dims` elements.
template <typename T>
class HostTiledView {
public:
    /// The tiled view of resource number `resource` of `context`, bound as `bound` (with a tensor
    /// map).
    HostTiledView(const HostKernelContext* context, std::size_t resource,
                  const BoundResource& bound)
        : bytes_(context, resource, bound), map_(*bound.tensor_map) {}

    /// How many tiles cover the tensor, counting the partial tiles at its edges.
    [[nodiscard]] std::uint64_t tile_count() const {
        std::uint64_t tiles = 1;
        for (std::size_t dim = 0; dim < map_.dims.size(); ++dim) {
            tiles *= (map_.dims[dim] + map_.box[dim] - 1) / map_.box[dim];
        }
        return tiles;
    }
    /// Copies tile `tile` (row-major over tiles, innermost dimension fastest) into the same tile
    /// of `target`. Elements past the tensor's edge are skipped, as the hardware does.
    void copy_tile_to(std::uint64_t tile, const HostTiledView& target) const;

private:
    [[nodiscard]] std::uint64_t byte_offset(const std::vector<std::uint64_t>& coords) const {
        std::uint64_t offset = coords[0] * map_.elem_size_bytes;
        for (std::size_t dim = 1; dim < coords.size(); ++dim) {
            offset += coords[dim] * map_.strides_bytes[dim - 1];
        }
        return offset;
    }
    HostView<std::uint8_t> bytes_;
    TensorMapDescriptor map_;
};

/// What a kernel sees when it runs on the host (the simulator, the reference backend): its thread's
/// index, the launch's scalar arguments and checked views of its resources. The same kernel functor
/// a GPU runs with raw pointers runs here with every access checked.
class HostKernelContext {
public:
    /// The context of a launch of `kernel` over `resources` with `args`, of `thread_count` threads,
    /// run by `host`. The name and the resources are the caller's (the launch's name, the
    /// backend's bound resources, which it keeps from launch to launch) and outlive the context.
    HostKernelContext(std::string_view kernel, std::span<const BoundResource> resources,
                      KernelArgs args, std::uint64_t thread_count, KernelHost& host)
        : kernel_(kernel),
          resources_(resources),
          args_(args),
          thread_count_(thread_count),
          host_(host) {}

    /// The running thread's index, from 0 to `thread_count() - 1`.
    [[nodiscard]] std::uint64_t thread_index() const { return thread_index_; }
    /// How many threads the launch runs.
    [[nodiscard]] std::uint64_t thread_count() const { return thread_count_; }
    /// Makes the context that of thread `index`; the backend calls it between threads.
    void set_thread(std::uint64_t index) { thread_index_ = index; }
    /// How many threads a block of the launch has (0 when it has no blocks, as external work):
    /// a fault then names the block and the thread in it. The backend sets it before it runs.
    void set_block_threads(std::uint64_t threads) { block_threads_ = threads; }

    /// A checked view of buffer resource `index` as elements of `T`; faults when the launch binds
    /// fewer resources.
    template <typename T>
    HostView<T> buffer(std::size_t index) const {
        return HostView<T>(this, index, resource(index));
    }
    /// A tiled view of tensor-map resource `index`; faults when it was bound as a plain buffer.
    template <typename T>
    HostTiledView<T> tensor_map(std::size_t index) const {
        const BoundResource& bound = resource(index);
        if (!bound.tensor_map) {
            raise("resource " + std::to_string(index) + " of '" + std::string(kernel_) +
                  "' is used as a tensor map but was bound as a buffer");
        }
        return HostTiledView<T>(this, index, bound);
    }
    /// Scalar argument `index` as an integer; 0 past the arguments given.
    [[nodiscard]] std::uint64_t u64(std::size_t index) const { return args_.u64_at(index); }
    /// Scalar argument `index` as a double; 0 past the arguments given.
    [[nodiscard]] double f64(std::size_t index) const { return args_.f64_at(index); }

    /// Reports failure `code`; the first code a launch reports is kept.
    void fail(std::uint32_t code) {
        if (!failure_code_) {
            failure_code_ = code;
        }
    }
    /// The failure code the launch reported, if it reported one.
    [[nodiscard]] std::optional<std::uint32_t> failure_code() const { return failure_code_; }
    /// A trap: the sticky fault a GPU raises for `__trap()`, which loses the device (D1).
    [[noreturn]] void trap() const {
        raise("'" + std::string(kernel_) + "' trapped (a trap instruction)");
    }

    /// Waits until element `index` of `view` equals `value`, read with acquire order; the host
    /// reports a deadlock instead of hanging when no other work can make it so.
    template <typename T>
    void wait_until_equal(const HostView<T>& view, std::uint64_t index, T value) {
        if (view.atomic_load_acquire(index) == value) {
            return;
        }
        host_.block_until(
            [&view, index, value] { return view.atomic_load_acquire(index) == value; },
            "'" + std::string(kernel_) + "' waits for element " + std::to_string(index) +
            " of resource " +
                std::to_string(view.resource_) + " to equal " + std::to_string(value));
    }

    /// The backend's side of the running kernel.
    [[nodiscard]] KernelHost& host() const { return host_; }
    /// Resource `index` as the backend bound it.
    [[nodiscard]] const BoundResource& bound(std::size_t index) const { return resources_[index]; }

    /// Raises the sticky fault for an access of `view_bytes` at `byte_offset` of a resource.
    [[noreturn]] void fault(std::size_t resource, std::uint64_t byte_offset, bool write) const;
    /// Raises the device's sticky fault with `report` (D1).
    /// Faults the running thread with `report`, which then names that thread (and its block).
    [[noreturn]] void raise(std::string report) const {
        report += " (thread " + std::to_string(thread_index_);
        if (block_threads_ != 0) {
            report += ": block " + std::to_string(thread_index_ / block_threads_) + ", thread " +
                      std::to_string(thread_index_ % block_threads_) + " of the block";
        }
        report += ")";
        throw HostFault{std::move(report)};
    }

private:
    const BoundResource& resource(std::size_t index) const {
        if (index >= resources_.size()) [[unlikely]] {
            missing_resource(index);
        }
        return resources_[index];
    }
    /// Kept out of line so that building the report does not weigh on every view's creation.
    [[noreturn]] [[gnu::noinline]] void missing_resource(std::size_t index) const {
        raise("'" + std::string(kernel_) + "' uses resource " + std::to_string(index) +
              " but the launch binds " + std::to_string(resources_.size()));
    }

    std::string_view kernel_;
    std::span<const BoundResource> resources_;
    KernelArgs args_;
    std::uint64_t thread_index_ = 0;
    std::uint64_t block_threads_ = 0;
    std::uint64_t thread_count_;
    KernelHost& host_;
    std::optional<std::uint32_t> failure_code_;
};

// ---------------------------------------------------------------- HostView

template <typename T>
void HostView<T>::check(std::uint64_t index, bool write) const {
    if (index >= count_ || (write && !writable_) || !granted_) [[unlikely]] {
        context_->fault(resource_, index * sizeof(T), write);
    }
}

template <typename T>
T HostView<T>::atomic_load_acquire(std::uint64_t index) const {
    check(index, false);
    KernelHost& host = context_->host();
    host.yield();
    T value;
    if (host.threaded() && reinterpret_cast<std::uintptr_t>(element(index)) % alignof(T) == 0) {
        value = std::atomic_ref<T>(*reinterpret_cast<T*>(element(index)))
                    .load(std::memory_order_acquire);
    } else {
        std::memcpy(&value, element(index), sizeof(T));
    }
    host.on_acquire(context_->bound(resource_).address + index * sizeof(T));
    return value;
}

template <typename T>
void HostView<T>::atomic_store_release(std::uint64_t index, T value) const {
    check(index, true);
    KernelHost& host = context_->host();
    host.on_release(context_->bound(resource_).address + index * sizeof(T));
    if (host.threaded() && reinterpret_cast<std::uintptr_t>(element(index)) % alignof(T) == 0) {
        std::atomic_ref<T>(*reinterpret_cast<T*>(element(index)))
            .store(value, std::memory_order_release);
    } else {
        std::memcpy(element(index), &value, sizeof(T));
    }
    host.yield();
}

template <typename T>
T HostView<T>::atomic_fetch_add(std::uint64_t index, T value) const {
    check(index, true);
    KernelHost& host = context_->host();
    host.yield();
    T previous;
    if (host.threaded() && reinterpret_cast<std::uintptr_t>(element(index)) % alignof(T) == 0) {
        previous = std::atomic_ref<T>(*reinterpret_cast<T*>(element(index))).fetch_add(value);
    } else {
        std::memcpy(&previous, element(index), sizeof(T));
        T sum = static_cast<T>(previous + value);
        std::memcpy(element(index), &sum, sizeof(T));
    }
    const std::uint64_t address = context_->bound(resource_).address + index * sizeof(T);
    host.on_acquire(address);
    host.on_release(address);
    return previous;
}

template <typename T>
void HostTiledView<T>::copy_tile_to(std::uint64_t tile, const HostTiledView& target) const {
    const std::size_t rank = map_.dims.size();
    std::vector<std::uint64_t> origin(rank);
    for (std::size_t dim = 0; dim < rank; ++dim) {
        const std::uint64_t tiles = (map_.dims[dim] + map_.box[dim] - 1) / map_.box[dim];
        origin[dim] = (tile % tiles) * map_.box[dim];
        tile /= tiles;
    }
    std::vector<std::uint64_t> offset(rank, 0);
    std::vector<std::uint64_t> coords(rank);
    while (true) {
        bool inside = true;
        for (std::size_t dim = 0; dim < rank; ++dim) {
            coords[dim] = origin[dim] + offset[dim];
            inside = inside && coords[dim] < map_.dims[dim];
        }
        if (inside) {
            const std::uint64_t from = byte_offset(coords);
            const std::uint64_t to = target.byte_offset(coords);
            for (std::uint32_t byte = 0; byte < map_.elem_size_bytes; ++byte) {
                target.bytes_.store(to + byte, bytes_.load(from + byte));
            }
        }
        std::size_t dim = 0;
        while (dim < rank && ++offset[dim] == map_.box[dim]) {
            offset[dim++] = 0;
        }
        if (dim == rank) {
            return;
        }
    }
}

inline void HostKernelContext::fault(std::size_t resource, std::uint64_t byte_offset,
                                     bool write) const {
    const BoundResource& bound = resources_[resource];
    const std::uint64_t address = bound.address + byte_offset;
    std::string what = write ? "store" : "load";
    std::string why;
    if (!bound.granted) {
        why = to_string(bound.owner) + " never granted this device access to its memory";
    } else if (write && !writes(bound.access)) {
        why = "the resource was declared read-only";
    } else {
        why = "the access is past the " + std::to_string(bound.size_bytes) + " bytes bound";
    }
    raise("illegal " + what + " by '" + std::string(kernel_) + "' at address 0x" +
          [address] {
              char text[24];
              std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(address));
              return std::string(text);
          }() +
          " (resource " + std::to_string(resource) + ", byte " + std::to_string(byte_offset) +
          "): " + why + "; " + host_.describe_address(address));
}

}  // namespace tandem
