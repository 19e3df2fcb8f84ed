#pragma once

// Settled work records kept for reuse, as a backend's engine keeps them: a record whose last
// holder is the engine is emptied (its `reset()`, which keeps the storage of its vectors) and
// handed out again for the next work, so that a busy runtime grows no vector per enqueue.

#include "tandem/backend/work.hpp"

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace tandem::detail {

/// Spare records of type `Op` (a `Work` with `reset()`), at most `max` of them.
template <typename Op>
class SpareWorks {
public:
    explicit SpareWorks(std::size_t max) : max_(max) {}

    /// A spare record, or `make()`'s new one when none is kept.
    template <typename Make>
    std::shared_ptr<Op> take(Make&& make) {
        if (spares_.empty()) {
            return make();
        }
        std::shared_ptr<Op> op = std::move(spares_.back());
        spares_.pop_back();
        return op;
    }
    /// Keeps `op`, emptied, when no one else holds it and there is room; drops it otherwise.
    void give_back(std::shared_ptr<Op>&& op) {
        if (op.use_count() == 1 && spares_.size() < max_) {
            op->reset();
            spares_.push_back(std::move(op));
        }
        op.reset();
    }
    /// `give_back` for a record the settle pipeline hands back, which is an `Op`.
    void give_back(std::shared_ptr<Work>&& work) {
        give_back(std::static_pointer_cast<Op>(std::move(work)));
    }

private:
    std::size_t max_;
    std::vector<std::shared_ptr<Op>> spares_;
};

}  // namespace tandem::detail
