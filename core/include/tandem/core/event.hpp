#pragma once

// Events: points in a stream's work that other streams and the host wait for, and the
// asynchronous reads that end at one. Both are values a runtime issues and checks: a program
// copies and passes them, but cannot make one up. An event no device issued (a default-built one,
// or one of a runtime that no longer exists) is refused with `InvalidArgument`, never taken as
// complete.

#include "tandem/core/ids.hpp"
#include "tandem/core/runtime_key.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace tandem {

/// A point in one stream's work. Waiting on it orders later work after everything before it.
class Event {
public:
    /// An event that names no work: every call that takes an event refuses it with
    /// `InvalidArgument`.
    Event() = default;
    /// Only a backend issues one (`RuntimeKey`), for a point in work it enqueued.
    Event(RuntimeKey, ServiceId device, StreamId stream, std::uint64_t sequence)
        : device_(device), stream_(stream), sequence_(sequence) {}

    /// The device whose stream it belongs to.
    [[nodiscard]] ServiceId device() const { return device_; }
    /// The stream.
    [[nodiscard]] StreamId stream() const { return stream_; }
    /// The position in that stream's work, from 1: the event completes when the work before it
    /// has. 0 for an event that names no work.
    [[nodiscard]] std::uint64_t sequence() const { return sequence_; }
    /// Whether it names no work (built by default).
    [[nodiscard]] bool empty() const { return sequence_ == 0; }

    /// The same point of the same stream.
    friend bool operator==(const Event&, const Event&) = default;

private:
    ServiceId device_;
    StreamId stream_;
    std::uint64_t sequence_ = 0;
};

struct ReadBack;

/// An asynchronous read in flight (`Client::read_async`): the event after it on its stream, the
/// caller's buffer it copies into, and what it learns when it settles. Waiting for it
/// (`Client::wait`) says whether the bytes may be used.
class PendingRead {
public:
    /// Only a backend builds one (`RuntimeKey`), for a read it enqueued.
    PendingRead(RuntimeKey, Event done, std::span<std::byte> into, std::shared_ptr<ReadBack> state)
        : done_(done), into_(into), state_(std::move(state)) {}

    /// Completes once the bytes are in `into()`.
    [[nodiscard]] const Event& done() const { return done_; }
    /// The caller's buffer; it must stay alive until the read is waited for.
    [[nodiscard]] std::span<std::byte> into() const { return into_; }
    /// What the read learns when it settles (C6 at its place in program order); the backend
    /// reads it.
    [[nodiscard]] const std::shared_ptr<ReadBack>& state() const { return state_; }

private:
    Event done_;
    std::span<std::byte> into_;
    std::shared_ptr<ReadBack> state_;
};

}  // namespace tandem
