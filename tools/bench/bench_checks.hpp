#pragma once

// What every benchmark binary shares, whatever backend it measures: turning a tandem error into
// a skipped benchmark, and the median of a run's figures.
//
// A benchmark that meets an error stops at once and reports it: figures measured on a runtime
// that refused work would measure the refusal, not the work.

#include "tandem/core/result.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tandem::bench {

/// Whether `result` succeeded; skips `state` with the error's report when it did not.
template <typename T>
bool succeeded(benchmark::State& state, const Result<T>& result) {
    if (!result) {
        state.SkipWithError(result.error().report().c_str());
        return false;
    }
    return true;
}

/// The median of `values` (which it reorders); zero when empty.
inline double median(std::vector<double>& values) {
    if (values.empty()) {
        return 0;
    }
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    if (values.size() % 2 == 1) {
        return *middle;
    }
    return (*middle + *std::max_element(values.begin(), middle)) / 2;
}

}  // namespace tandem::bench
