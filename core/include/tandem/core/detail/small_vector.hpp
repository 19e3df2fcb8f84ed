#pragma once

// A vector that keeps its first `N` elements inline and spills to the heap past them. The claim
// store uses it where a common case must not touch the heap (rule C12) but a rare one may be large.

#include <array>
#include <cstddef>
#include <vector>

namespace tandem::detail {

template <typename T, std::size_t N>
class SmallVector {
public:
    void push_back(const T& value) {
        if (size_ < N) {
            inline_[size_] = value;
        } else {
            spill_.push_back(value);
        }
        ++size_;
    }
    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] bool empty() const { return size_ == 0; }
    const T& operator[](std::size_t index) const {
        return index < N ? inline_[index] : spill_[index - N];
    }
    [[nodiscard]] bool contains(const T& value) const {
        for (std::size_t index = 0; index < size_; ++index) {
            if ((*this)[index] == value) {
                return true;
            }
        }
        return false;
    }
    void push_back_unique(const T& value) {
        if (!contains(value)) {
            push_back(value);
        }
    }

private:
    std::array<T, N> inline_{};
    std::vector<T> spill_;
    std::size_t size_ = 0;
};

}  // namespace tandem::detail
