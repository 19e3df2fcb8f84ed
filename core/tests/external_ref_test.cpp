// A request's view of external work's callables never outlives the call that made it: a copy or a
// move of a view shares a copy of its own, which outlives the callables it was taken from.

#include "tandem/core/external_work.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

namespace tandem {
namespace {

/// Callables whose CUDA callable returns failure `code`, so each copy can be told apart.
std::unique_ptr<ExternalCallables> callables_failing_with(std::uint32_t code) {
    auto callables = std::make_unique<ExternalCallables>();
    callables->cuda = [code](const DeviceWorkContext&) -> Status {
        return Error::invalid_argument("code " + std::to_string(code));
    };
    return callables;
}

std::string what_it_returns(const ExternalRef& ref) {
    return ref->cuda(DeviceWorkContext{}).error().message();
}

TEST(ExternalRef, a_view_points_at_the_callers_callables_without_copying) {
    const auto callables = callables_failing_with(1);
    ExternalRef ref;
    EXPECT_FALSE(ref);
    ref.view(*callables);
    ASSERT_TRUE(ref);
    EXPECT_EQ(&*ref, callables.get());
}

TEST(ExternalRef, a_copy_of_a_view_outlives_the_callables_it_viewed) {
    auto callables = callables_failing_with(2);
    ExternalRef view;
    view.view(*callables);
    const ExternalRef copy = view;  // NOLINT: the copy is what is tested.
    EXPECT_NE(&*copy, callables.get());
    callables.reset();
    EXPECT_EQ(what_it_returns(copy), "code 2");
}

TEST(ExternalRef, a_move_of_a_view_outlives_the_callables_it_viewed_and_empties_the_source) {
    auto callables = callables_failing_with(3);
    ExternalRef view;
    view.view(*callables);
    ExternalRef moved(std::move(view));
    EXPECT_FALSE(view);  // NOLINT: a moved-from reference is empty.
    callables.reset();
    EXPECT_EQ(what_it_returns(moved), "code 3");
    ExternalRef assigned;
    auto more = callables_failing_with(4);
    ExternalRef second;
    second.view(*more);
    assigned = std::move(second);
    more.reset();
    EXPECT_EQ(what_it_returns(assigned), "code 4");
}

TEST(ExternalRef, copies_of_a_shared_copy_share_it) {
    auto callables = callables_failing_with(5);
    ExternalRef view;
    view.view(*callables);
    const ExternalRef first = view;
    const ExternalRef second = first;  // NOLINT
    EXPECT_EQ(&*first, &*second);
    ExternalRef third;
    third = second;
    EXPECT_EQ(&*third, &*first);
    third.reset();
    EXPECT_FALSE(third);
    EXPECT_EQ(what_it_returns(second), "code 5");
}

}  // namespace
}  // namespace tandem
