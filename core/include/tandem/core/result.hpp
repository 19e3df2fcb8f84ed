#pragma once

// `Result<T>`: a value or an `Error`. tandem reports runtime conditions as values, never by
// throwing, so a caller sees at the call site which operations can fail.

#include "tandem/core/error.hpp"

#include <cassert>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

namespace tandem {

/// Thrown where a program asks a failed result for its value, or a successful one for its error:
/// a programming error (debug builds assert first). Its message carries the error's report, where
/// the variant underneath would only say that its index was wrong.
class BadResultAccess : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

namespace detail {
/// Throws `BadResultAccess` for the value of a result that holds `error`.
[[noreturn]] void throw_value_of_error(const Error& error);
/// Throws `BadResultAccess` for the error of a successful result.
[[noreturn]] void throw_error_of_success();
}  // namespace detail

template <typename T>
/// A value of type `T` or an `Error`: what every call that can fail returns. tandem never throws
/// for a runtime condition, so a caller sees at the call site which calls can fail.
class [[nodiscard]] Result {
public:
    /// A successful result holding `value`.
    Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
    /// A failed result holding `error`.
    Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit
    /// The value built in place from `args`, without a temporary to move from: on hot paths
    /// the move of a just-built temporary stalls on its own stores.
    template <typename... Args>
    explicit Result(std::in_place_t, Args&&... args)
        : state_(std::in_place_index<0>, std::forward<Args>(args)...) {}

    /// Whether the result holds a value.
    [[nodiscard]] bool ok() const { return state_.index() == 0; }
    /// Whether the result holds a value.
    explicit operator bool() const { return ok(); }

    /// The value. Asking a failed result for its value is a programming error
    /// (`BadResultAccess`).
    T& value() & {
        check_value();
        return *std::get_if<0>(&state_);
    }
    /// The value, read only. Asking a failed result for its value is a programming error
    /// (`BadResultAccess`).
    const T& value() const& {
        check_value();
        return *std::get_if<0>(&state_);
    }
    /// The value, moved out of a temporary result. Asking a failed result for it is a programming
    /// error (`BadResultAccess`).
    T&& value() && {
        check_value();
        return std::move(*std::get_if<0>(&state_));
    }
    ///@{
    /// The value, as `value()` gives it; only for a successful result.
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    ///@}

    /// The error. Asking a successful result for its error is a programming error
    /// (`BadResultAccess`).
    [[nodiscard]] const Error& error() const {
        assert(!ok() && "Result::error() on a value");
        if (ok()) [[unlikely]] {
            detail::throw_error_of_success();
        }
        return *std::get_if<1>(&state_);
    }

private:
    void check_value() const {
        assert(ok() && "Result::value() on an error");
        if (!ok()) [[unlikely]] {
            detail::throw_value_of_error(*std::get_if<1>(&state_));
        }
    }

    std::variant<T, Error> state_;
};

/// Success without a value, or an `Error`.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    /// A failed result holding `error`.
    Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit

    /// Whether the call succeeded.
    [[nodiscard]] bool ok() const { return !error_.has_value(); }
    /// Whether the call succeeded.
    explicit operator bool() const { return ok(); }
    /// The error. Asking a successful result for its error is a programming error
    /// (`BadResultAccess`).
    [[nodiscard]] const Error& error() const {
        assert(!ok() && "Result::error() on success");
        if (!error_) [[unlikely]] {
            detail::throw_error_of_success();
        }
        return *error_;
    }

private:
    std::optional<Error> error_;
};

/// What a call that returns no value gives: success, or an `Error`.
using Status = Result<void>;

}  // namespace tandem
