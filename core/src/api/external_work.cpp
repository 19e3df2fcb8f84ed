#include "tandem/core/external_work.hpp"

#include <utility>

namespace tandem {

void ExternalRef::take_shared(const ExternalRef& other) {
    if (other.owned_ != nullptr || other.callables_ == nullptr) {
        owned_ = other.owned_;
    } else {
        owned_ = std::make_shared<const ExternalCallables>(*other.callables_);
    }
    callables_ = owned_.get();
}

ExternalRef::ExternalRef(const ExternalRef& other) { take_shared(other); }

// A move of a view copies too: the view's callables belong to a call that is ending.
ExternalRef::ExternalRef(ExternalRef&& other) {
    if (other.owned_ != nullptr) {
        owned_ = std::move(other.owned_);
        callables_ = owned_.get();
    } else {
        take_shared(other);  // A view, or nothing.
    }
    other.reset();
}

ExternalRef& ExternalRef::operator=(const ExternalRef& other) {
    if (this != &other) {
        take_shared(other);
    }
    return *this;
}

ExternalRef& ExternalRef::operator=(ExternalRef&& other) {
    if (this != &other) {
        ExternalRef moved(std::move(other));
        callables_ = moved.callables_;
        owned_ = std::move(moved.owned_);
    }
    return *this;
}

}  // namespace tandem
