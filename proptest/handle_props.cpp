// Properties of handles and bindings, each checked against byte sets.
//
// Oracle: two views relate exactly as the sets of bytes they address do (`Overlap`); a claim key
// is equal exactly when the bytes are the same allocation and range; an offset either gives a
// handle whose bytes lie inside its allocation or is refused with `InvalidArgument`; a weak
// binding never upgrades to a later occupant of the same bytes.

#include "../core/tests/runtime_key_for_tests.hpp"
#include "tandem/backend/memory_manager.hpp"
#include "tandem/core/handle.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <set>

namespace tandem {
namespace {

constexpr ServiceId device0{1, 0};
constexpr StreamId stream0{1};

std::set<std::pair<std::uint64_t, std::uint64_t>> byte_set(const Handle& handle) {
    std::set<std::pair<std::uint64_t, std::uint64_t>> bytes;
    for (std::uint64_t at = handle.range().begin; at < handle.range().end; ++at) {
        bytes.emplace(handle.memory_id().value, at);
    }
    return bytes;
}

/// A slice of one of `parents`, with random (possibly empty) offsets.
Handle slice_of(const std::vector<Handle>& parents) {
    const Handle& parent = *rc::gen::elementOf(parents);
    const std::uint64_t begin = *rc::gen::inRange<std::uint64_t>(0, parent.size() + 1);
    const std::uint64_t length = *rc::gen::inRange<std::uint64_t>(0, parent.size() - begin + 1);
    Result<Handle> sliced = parent.slice(begin, length);
    RC_ASSERT(sliced.ok());
    return *sliced;
}

std::vector<Handle> fresh_parents() {
    std::vector<Handle> parents;
    const auto count = *rc::gen::inRange<std::size_t>(1, 3);
    for (std::size_t index = 0; index < count; ++index) {
        const auto size = *rc::gen::inRange<std::uint64_t>(0, 40);
        parents.emplace_back(
            detail::RuntimeKeyForTests::key(),
            ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(),
                                        AllocationInfo{.id = MemoryId::next()}, nullptr),
            device0, stream0, size);
    }
    return parents;
}

RC_GTEST_PROP(HandleProperties, overlap_equals_the_byte_set_relation, ()) {
    const std::vector<Handle> parents = fresh_parents();
    const Handle a = slice_of(parents);
    const Handle b = slice_of(parents);
    const auto bytes_a = byte_set(a);
    const auto bytes_b = byte_set(b);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> common;
    std::set_intersection(bytes_a.begin(), bytes_a.end(), bytes_b.begin(), bytes_b.end(),
                          std::back_inserter(common));
    Overlap expected = common.empty()       ? Overlap::Disjoint
                       : bytes_a == bytes_b ? Overlap::Same
                                            : Overlap::Partial;
    RC_ASSERT(a.overlap(b) == expected);
    RC_ASSERT(b.overlap(a) == expected);
}

RC_GTEST_PROP(HandleProperties, claim_keys_are_equal_exactly_for_the_same_allocation_and_range,
              ()) {
    const std::vector<Handle> parents = fresh_parents();
    const BufferBinding a = slice_of(parents).binding();
    const BufferBinding b = slice_of(parents).binding();
    const bool same_bytes = a.memory_id() == b.memory_id() && a.range() == b.range();
    RC_ASSERT((a.claim_key() == b.claim_key()) == same_bytes);
    const bool hashes_agree =
        std::hash<ClaimKey>{}(a.claim_key()) == std::hash<ClaimKey>{}(b.claim_key());
    RC_ASSERT(hashes_agree || !same_bytes);
}

RC_GTEST_PROP(HandleProperties, any_offsets_give_a_valid_handle_or_invalid_argument, ()) {
    const auto size = *rc::gen::arbitrary<std::uint64_t>();
    Handle handle(detail::RuntimeKeyForTests::key(),
                  ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(),
                                              AllocationInfo{.id = MemoryId::next()}, nullptr),
                  device0, stream0, size);
    // Offsets drawn from the whole 64-bit range, biased towards the edges where arithmetic wraps.
    const auto offset =
        rc::gen::oneOf(rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange<std::uint64_t>(0, 64),
                       rc::gen::just(UINT64_MAX), rc::gen::just(size));
    const auto steps = *rc::gen::inRange<int>(1, 6);
    for (int step = 0; step < steps; ++step) {
        const std::uint64_t bytes = *offset;
        const int which = *rc::gen::inRange(0, 3);
        Result<Handle> next = which == 0   ? handle.add_offset_start(bytes)
                              : which == 1 ? handle.add_offset_end(bytes)
                                           : handle.slice(bytes, *offset);
        if (next.ok()) {
            handle = *next;
        } else {
            RC_ASSERT(next.error().kind() == ErrorKind::InvalidArgument);
        }
        // Never a wrapped size: the bytes in use lie inside the allocation.
        RC_ASSERT(handle.offset_start() <= handle.size());
        RC_ASSERT(handle.offset_end() <= handle.size() - handle.offset_start());
        RC_ASSERT(handle.size_in_use() == handle.range().end - handle.range().begin);
        RC_ASSERT(handle.range().end <= handle.size());
    }
}

RC_GTEST_PROP(HandleProperties, a_weak_upgrade_never_resolves_to_a_later_occupant, ()) {
    HostStorage storage(std::uint64_t{64} << 20);
    ManualStreamOrder order;
    MemoryManager manager(storage, order);
    const auto sizes = *rc::gen::container<std::vector<std::uint64_t>>(
        *rc::gen::inRange<std::size_t>(1, 12), rc::gen::inRange<std::uint64_t>(1, 4096));
    std::vector<std::pair<WeakBufferBinding, std::uint64_t>> dead;
    std::vector<Handle> live;
    for (std::uint64_t size : sizes) {
        auto allocated = manager.allocate(size, stream0);
        RC_ASSERT(allocated.ok());
        const std::uint64_t address = allocated->allocation().address;
        Handle handle(detail::RuntimeKeyForTests::key(), std::move(*allocated), device0, stream0,
                      size);
        if (*rc::gen::arbitrary<bool>()) {
            // Drop it: its bytes go back to the pool and the next allocation may land on them.
            dead.emplace_back(handle.binding().downgrade(), address);
        } else {
            live.push_back(std::move(handle));
        }
        manager.sweep();
    }
    for (const auto& [weak, address] : dead) {
        RC_ASSERT(!weak.upgrade().has_value());
        for (const Handle& handle : live) {
            RC_ASSERT(handle.memory_id() != weak.claim_key().memory);
        }
    }
    for (const Handle& handle : live) {
        RC_ASSERT(handle.binding().downgrade().upgrade().has_value());
    }
}

}  // namespace
}  // namespace tandem
